//! The assistants a server offers: every agent file or agent folder under its `--agents`
//! folder, found once at start.
//!
//! - a folder holding `graph.yaml` is a Loki graph agent, named after the folder (a coyote
//!   bundle's `agents/<name>/graph.yaml` included: the walk goes on below it);
//! - any other `*.yaml` / `*.yml` file that loads as a sherma document gives one assistant per
//!   agent it defines, named after the file (after its folder when the file is `agent.yaml`),
//!   `<name>.<agent>` when the file defines several;
//! - any such file that loads as an LLLM config gives one assistant per agent of its
//!   `agent_configs`, named after the file (after the package's folder for the `default.yaml`
//!   of an LLLM package, i.e. a folder with `lllm.toml`), `<name>.<agent>` when it has several;
//!   a `config.yaml` counts only when it is an LLLM config (named after its folder);
//! - scripted replies, cassettes, other `config.yaml`s (coyote normal agents run only as
//!   children of a graph), bundle manifests, hidden folders, `node_modules`, `target` and
//!   `__pycache__` are skipped; the walk stops 6 folders deep.
//!
//! Each assistant is validated once: one with errors is listed (with the errors) but refuses
//! to run. Its `assistant_id` is a UUID made from its name (the same on every start, as
//! LangGraph's are stable), and requests may name it by either.

use model::doc::{Document, Model};
use serde::Serialize;
use std::path::{Path, PathBuf};
use syntax::diag::Diagnostic;

/// How deep the walk goes below the agents folder.
const MAX_DEPTH: usize = 6;

/// One runnable agent.
#[derive(Clone, Debug, Serialize)]
pub struct Assistant {
    pub assistant_id: String,
    /// Its name (LangGraph's graph id).
    pub graph_id: String,
    pub description: Option<String>,
    /// The agent file: a sherma YAML file, a Loki `graph.yaml` or an LLLM config.
    pub file: PathBuf,
    /// The agent of a multi-agent sherma file; for an LLLM config, always the agent it runs.
    pub agent: Option<String>,
    /// `sherma`, `loki` or `lllm`.
    pub dialect: &'static str,
    /// Validation errors (`file:line:column: message`); an assistant with any does not run.
    pub errors: Vec<String>,
}

/// The assistants of one agents folder.
#[derive(Debug, Default)]
pub struct Assistants {
    pub root: PathBuf,
    pub list: Vec<Assistant>,
}

impl Assistants {
    /// Find every assistant under `root` (see the module docs).
    pub fn discover(root: &Path) -> Result<Assistants, String> {
        let meta = std::fs::metadata(root).map_err(|e| format!("cannot read the agents folder {}: {e}", root.display()))?;
        if !meta.is_dir() {
            return Err(format!("{} is not a folder (`--agents` takes the folder holding the agents)", root.display()));
        }
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let mut found = Vec::new();
        walk(&root, 0, &mut found);
        found.sort_by(|a, b| a.file.cmp(&b.file).then(a.agent.cmp(&b.agent)));
        // Two agents of the same name: the later ones are named by their path instead.
        let mut seen = std::collections::BTreeSet::new();
        for a in &mut found {
            if !seen.insert(a.graph_id.clone()) {
                let rel = a.file.strip_prefix(&root).unwrap_or(&a.file).with_extension("");
                let mut name = rel.display().to_string();
                if let Some(agent) = &a.agent {
                    name = format!("{name}.{agent}");
                }
                a.graph_id = name;
                seen.insert(a.graph_id.clone());
            }
            a.assistant_id = assistant_uuid(&a.graph_id);
        }
        Ok(Assistants { root, list: found })
    }

    /// The assistant named `id` (its `assistant_id` or its `graph_id`).
    pub fn find(&self, id: &str) -> Option<&Assistant> {
        self.list.iter().find(|a| a.assistant_id == id || a.graph_id == id)
    }
}

/// The stable UUID of an assistant named `name`.
pub fn assistant_uuid(name: &str) -> String {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, format!("switchyard:assistant:{name}").as_bytes()).to_string()
}

fn skipped_dir(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "node_modules" | "target" | "__pycache__")
}

fn skipped_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    !(lower.ends_with(".yaml") || lower.ends_with(".yml"))
        || lower.starts_with("replies")
        || lower.contains(".replies.")
        || lower.contains("cassette")
        || matches!(lower.as_str(), "coyote-bundle.yaml" | "coyote-bundle.yml" | "mcp.yaml")
}

/// A coyote normal agent's name (kept only when the file is an LLLM config).
fn config_name(name: &str) -> bool {
    matches!(name.to_ascii_lowercase().as_str(), "config.yaml" | "config.yml")
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<Assistant>) {
    let Ok(read) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = read.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    let graph = dir.join("graph.yaml");
    if graph.is_file() {
        out.extend(load(&graph, dir_name(dir)));
    }
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(ft) = e.file_type() else { continue };
        let path = e.path();
        if ft.is_dir() {
            if depth < MAX_DEPTH && !skipped_dir(&name) {
                walk(&path, depth + 1, out);
            }
        } else if ft.is_file() && name != "graph.yaml" && !skipped_file(&name) {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let config = config_name(&name);
            let base = if stem == "agent" || config { dir_name(dir) } else { stem };
            out.extend(load(&path, base).into_iter().filter(|a| a.dialect == "lllm" || (a.dialect == "sherma" && !config)));
        }
    }
}

fn dir_name(dir: &Path) -> String {
    dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "agent".into())
}

/// The assistants of one file, named from `base`.
fn load(file: &Path, base: String) -> Vec<Assistant> {
    let doc = model::doc::load_path(file);
    let render = |doc: &Document, diags: &[Diagnostic]| -> Vec<String> {
        diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| {
                let f = if d.file.is_empty() { doc.path.display().to_string() } else { d.file.clone() };
                format!("{f}:{}:{}: {}", d.line, d.column, d.message)
            })
            .collect()
    };
    match &doc.model {
        Model::Loki(l) => {
            let diags = model::validate::validate(&doc, None);
            vec![Assistant {
                assistant_id: String::new(),
                graph_id: base,
                description: l.description.clone(),
                file: doc.path.clone(),
                agent: None,
                dialect: "loki",
                errors: render(&doc, &diags),
            }]
        }
        Model::Sherma(s) => {
            let several = s.agents.len() > 1;
            s.agents
                .iter()
                .map(|a| {
                    let agent = a.name.value.clone();
                    let diags = model::validate::validate(&doc, Some(&agent));
                    Assistant {
                        assistant_id: String::new(),
                        graph_id: if several { format!("{base}.{agent}") } else { base.clone() },
                        description: None,
                        file: doc.path.clone(),
                        agent: several.then_some(agent),
                        dialect: "sherma",
                        errors: render(&doc, &diags),
                    }
                })
                .collect()
        }
        Model::Lllm(l) => {
            // The `default.yaml` of a package is the package's config: named after its folder.
            let base = match l.package() {
                Some(p) if doc.path.file_stem().is_some_and(|s| s == "default") => dir_name(&p.root),
                _ => base,
            };
            let diags = model::validate::validate(&doc, None);
            if l.effective.agents.is_empty() {
                // No agent to run: listed only to say why when the config has errors (an older
                // shape's migration diagnostic); a base config without agents is no assistant.
                let errors = render(&doc, &diags);
                return match errors.is_empty() {
                    true => Vec::new(),
                    false => vec![Assistant {
                        assistant_id: String::new(),
                        graph_id: base,
                        description: None,
                        file: doc.path.clone(),
                        agent: None,
                        dialect: "lllm",
                        errors,
                    }],
                };
            }
            let several = l.effective.agents.len() > 1;
            l.effective
                .agents
                .iter()
                .map(|a| {
                    // The config's own errors, and this agent's (another agent's do not stop it).
                    let mine: Vec<Diagnostic> =
                        diags.iter().filter(|d| d.node.as_ref().is_none_or(|n| *n == a.name)).cloned().collect();
                    Assistant {
                        assistant_id: String::new(),
                        graph_id: if several { format!("{base}.{}", a.name) } else { base.clone() },
                        description: None,
                        file: doc.path.clone(),
                        agent: Some(a.name.clone()),
                        dialect: "lllm",
                        errors: render(&doc, &mine),
                    }
                })
                .collect()
        }
        Model::Unknown => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_agents_are_assistants_with_stable_ids() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../agents");
        let a = Assistants::discover(&root).unwrap();
        let names: Vec<&str> = a.list.iter().map(|x| x.graph_id.as_str()).collect();
        assert_eq!(names, ["release-gate", "research-desk.researcher", "research-desk.writer", "support-triage"], "{:#?}", a.list);
        for x in &a.list {
            assert!(x.errors.is_empty(), "{}: {:?}", x.graph_id, x.errors);
            assert_eq!(a.find(&x.assistant_id).unwrap().graph_id, x.graph_id);
            assert_eq!(a.find(&x.graph_id).unwrap().assistant_id, assistant_uuid(&x.graph_id));
        }
        let dialects: Vec<&str> = a.list.iter().map(|x| x.dialect).collect();
        assert_eq!(dialects, ["loki", "lllm", "lllm", "sherma"]);
        let researcher = a.find("research-desk.researcher").unwrap();
        assert_eq!(researcher.agent.as_deref(), Some("researcher"));
        assert!(researcher.file.ends_with("research-desk/configs/default.yaml"), "{}", researcher.file.display());
        assert!(a.find("nope").is_none());
    }

    #[test]
    fn multi_agent_files_duplicates_broken_files_and_skipped_names() {
        let t = std::env::temp_dir().join(format!("sy-assistants-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        let sherma = |agents: &[&str]| {
            let mut y = String::from("manifest_version: 1\nagents:\n");
            for a in agents {
                y.push_str(&format!(
                    "  {a}:\n    graph:\n      entry_point: s\n      nodes:\n        - name: s\n          type: set_state\n          args:\n            values:\n              x: '1'\n      edges:\n        - source: s\n          target: __end__\n"
                ));
            }
            y
        };
        std::fs::create_dir_all(t.join("one")).unwrap();
        std::fs::create_dir_all(t.join("two")).unwrap();
        std::fs::create_dir_all(t.join(".hidden")).unwrap();
        std::fs::write(t.join("one/agent.yaml"), sherma(&["a"])).unwrap();
        std::fs::write(t.join("two/one.yaml"), sherma(&["a"])).unwrap();
        std::fs::write(t.join("pair.yml"), sherma(&["left", "right"])).unwrap();
        std::fs::write(t.join("replies.yaml"), "- content: hi\n").unwrap();
        std::fs::write(t.join(".hidden/x.yaml"), sherma(&["a"])).unwrap();
        std::fs::write(t.join("broken.yaml"), "manifest_version: 1\nagents:\n  a:\n    graph:\n      entry_point: nowhere\n      nodes: []\n").unwrap();
        std::fs::write(t.join("notes.yaml"), "just: data\n").unwrap();
        let a = Assistants::discover(&t).unwrap();
        let mut names: Vec<&str> = a.list.iter().map(|x| x.graph_id.as_str()).collect();
        names.sort();
        assert_eq!(names, ["broken", "one", "pair.left", "pair.right", "two/one"], "{:#?}", a.list);
        let broken = a.find("broken").unwrap();
        assert!(!broken.errors.is_empty() && broken.errors[0].contains("broken.yaml:"), "{:?}", broken.errors);
        assert_eq!(a.find("pair.right").unwrap().agent.as_deref(), Some("right"));
        assert!(Assistants::discover(&t.join("pair.yml")).unwrap_err().contains("not a folder"));
        assert!(Assistants::discover(&t.join("missing")).unwrap_err().contains("cannot read"));
        let _ = std::fs::remove_dir_all(&t);
    }

    #[test]
    fn every_agent_of_an_lllm_config_is_an_assistant_stopped_only_by_its_own_errors() {
        let t = std::env::temp_dir().join(format!("sy-assistants-lllm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        let write = |rel: &str, text: &str| {
            let p = t.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        // A package: its `default.yaml` is named after the package's folder, another config after its file.
        write("desk/lllm.toml", "[package]\nname = \"desk\"\n\n[configs]\npaths = [\"configs\"]\n");
        let two = "global:\n  model_name: gpt-4o-mini\n  system_prompt: You help.\nagent_configs:\n  - name: a\n  - name: b\n";
        write("desk/configs/default.yaml", two);
        write("desk/configs/night.yaml", "global:\n  model_name: gpt-4o-mini\nagent_configs:\n  - name: owl\n    system_prompt: Hoot.\n");
        write("desk/configs/replies.yaml", "replies:\n  - content: hi\n");
        // A loose config with one agent with no prompt (an error of that agent) beside a good one.
        write("loose/pair.yaml", "global:\n  model_name: gpt-4o-mini\nagent_configs:\n  - name: fine\n    system_prompt: Hi.\n  - name: mute\n");
        // `config.yaml`: an LLLM config is one, a coyote normal agent is not.
        write("c1/config.yaml", "agent_configs:\n  - name: solo\n    model_name: gpt-4o-mini\n    system_prompt: Alone.\n");
        write("c2/config.yaml", "model: openai:gpt-4o-mini\ninstructions: hi\n");
        // The older shape: listed with its migration diagnostic, so the user sees why it does not run.
        write("old.yaml", "agent_configs:\n  vanilla:\n    model_name: gpt-4o-mini\n");
        // No agent at all: listed with the error; a base config with no agents and no error is not.
        write("bad.yaml", "global:\n  model_name: gpt-4o-mini\nagent_configs: 5\n");
        write("base-only.yaml", "global:\n  model_name: gpt-4o-mini\nagent_configs: []\n");
        let a = Assistants::discover(&t).unwrap();
        let mut names: Vec<&str> = a.list.iter().map(|x| x.graph_id.as_str()).collect();
        names.sort();
        assert_eq!(names, ["bad", "c1", "desk.a", "desk.b", "night", "old", "pair.fine", "pair.mute"], "{:#?}", a.list);
        assert!(a.list.iter().all(|x| x.dialect == "lllm"));
        for (id, agent) in [("desk.a", "a"), ("desk.b", "b"), ("night", "owl"), ("c1", "solo"), ("pair.fine", "fine")] {
            let x = a.find(id).unwrap();
            assert_eq!(x.agent.as_deref(), Some(agent), "{id}");
            assert!(x.errors.is_empty(), "{id}: {:?}", x.errors);
        }
        let mute = a.find("pair.mute").unwrap();
        assert!(mute.errors.len() == 1 && mute.errors[0].contains("pair.yaml:") && mute.errors[0].contains("agent `mute` has no system prompt"), "{:?}", mute.errors);
        let old = a.find("old").unwrap();
        assert_eq!(old.agent.as_deref(), Some("vanilla"));
        assert!(old.errors.iter().any(|e| e.contains("old.yaml:1:1:") && e.contains("older LLLM config shape")), "{:?}", old.errors);
        let bad = a.find("bad").unwrap();
        assert!(bad.agent.is_none() && bad.errors.iter().any(|e| e.contains("bad.yaml:3:")), "{:?}", bad.errors);
        let _ = std::fs::remove_dir_all(&t);
    }
}
