//! The assistants a server offers: every agent file or agent folder under its `--agents`
//! folder, found once at start.
//!
//! - a folder holding `graph.yaml` is a Loki graph agent, named after the folder (a coyote
//!   bundle's `agents/<name>/graph.yaml` included: the walk goes on below it);
//! - any other `*.yaml` / `*.yml` file that loads as a sherma document gives one assistant per
//!   agent it defines, named after the file (after its folder when the file is `agent.yaml`),
//!   `<name>.<agent>` when the file defines several;
//! - scripted replies, cassettes, `config.yaml` (coyote normal agents run only as children of a
//!   graph), bundle manifests, hidden folders, `node_modules`, `target` and `__pycache__` are
//!   skipped; the walk stops 6 folders deep.
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
    /// The agent file: a sherma YAML file or a Loki `graph.yaml`.
    pub file: PathBuf,
    /// The agent of a multi-agent sherma file.
    pub agent: Option<String>,
    /// `sherma` or `loki`.
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
        || matches!(lower.as_str(), "config.yaml" | "config.yml" | "coyote-bundle.yaml" | "coyote-bundle.yml" | "mcp.yaml")
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
            let base = if stem == "agent" { dir_name(dir) } else { stem };
            out.extend(load(&path, base).into_iter().filter(|a| a.dialect == "sherma"));
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
        // LLLM agents cannot run yet, so a config is no assistant.
        Model::Lllm(_) | Model::Unknown => Vec::new(),
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
        assert_eq!(names, ["release-gate", "support-triage"], "{:#?}", a.list);
        for x in &a.list {
            assert!(x.errors.is_empty(), "{}: {:?}", x.graph_id, x.errors);
            assert_eq!(a.find(&x.assistant_id).unwrap().graph_id, x.graph_id);
            assert_eq!(a.find(&x.graph_id).unwrap().assistant_id, assistant_uuid(&x.graph_id));
        }
        assert_eq!(a.list[0].dialect, "loki");
        assert_eq!(a.list[1].dialect, "sherma");
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
}
