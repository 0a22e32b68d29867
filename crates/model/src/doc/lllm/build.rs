//! Building an [`LllmDoc`] from the YAML tree: the shape and its schema checks, the `base`
//! chain read from the package's config folders, the effective config, and each agent's
//! `system_prompt_path` resolved in the package's prompt folders.

use super::effective::{self, LayerRef, PVal};
use super::model::{AgentEntry, Layer, LllmDoc, PromptRef, Shape};
use super::package::{self, Package, PromptHit, PromptIndex};
use super::schema::{AGENT, AGENT_KEYS, GLOBAL, RENAMED, TOP};
use crate::doc::schema::{head_span, Checker};
use crate::doc::{Sp, MAX_FILE_BYTES};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use syntax::diag::{did_you_mean, Diagnostic, Severity};
use syntax::source::SourceFile;
use syntax::yaml::{self, YKind, YNode};

/// How long a `base` chain may be.
const MAX_CHAIN: usize = 32;

pub fn build(
    file: &SourceFile,
    root: Option<&YNode>,
    base_dir: &Path,
    diags: &mut Vec<Diagnostic>,
    extra_files: &mut Vec<SourceFile>,
) -> LllmDoc {
    let empty = YNode::default();
    let root = root.unwrap_or(&empty);
    let shape = shape_of(root);
    let mut doc = LllmDoc {
        shape,
        base: None,
        global: root.entry("global").map(|e| e.key.span),
        agents: Vec::new(),
        layers: Vec::new(),
        effective: Default::default(),
        prompts: Vec::new(),
    };
    placeholders(file, root, diags);
    legacy(file, root, shape, diags);
    let mut ck = Checker::new(file, diags);
    ck.check_obj_except(root, &TOP, "the LLLM config", &["agent_configs", "agent_group_configs", "global"]);
    if let Some(g) = root.get("global") {
        if ck.check_obj(g, &GLOBAL, "`global`") {
            model_arg_notes(file, g, "`global`", diags);
        }
    }
    if let Some(b) = root.get("base") {
        if let Some(s) = b.as_str() {
            doc.base = Some(Sp::new(s.to_string(), b.span));
        }
    }
    agents(file, root, &mut doc, diags);

    // The base chain, this file last.
    let package = package_of(base_dir, diags, extra_files);
    let mut layers = vec![Layer { name: stem(file.path()), file: file.clone(), root: root.clone(), package }];
    read_chain(&mut layers, diags, extra_files);
    layers.reverse();
    doc.effective = {
        let refs: Vec<LayerRef> = layers.iter().map(|l| LayerRef { name: &l.name, file: &l.file, root: &l.root }).collect();
        effective::effective(&refs)
    };
    doc.layers = layers;
    resolve_prompts(&mut doc, diags);
    doc
}

fn stem(p: &Path) -> String {
    p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Which shape a root mapping is written in.
pub fn shape_of(root: &YNode) -> Shape {
    if root.get("agent_group_configs").is_some() {
        Shape::AgentGroupConfigs
    } else if root.get("agent_configs").is_some_and(|a| a.as_map().is_some()) {
        Shape::AgentConfigsMapping
    } else {
        Shape::Current
    }
}

/// The older shapes: what they are and how to write them today.
fn legacy(file: &SourceFile, root: &YNode, shape: Shape, diags: &mut Vec<Diagnostic>) {
    let top_knobs: Vec<&str> = ["max_exception_retry", "max_interrupt_times", "max_interrupt_steps", "max_llm_recall", "max_query_retry"]
        .into_iter()
        .filter(|k| root.get(k).is_some())
        .collect();
    let knobs = if top_knobs.is_empty() {
        String::new()
    } else {
        format!(
            "; move the top-level retry knobs ({}) into `global:`{}",
            top_knobs.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
            if top_knobs.contains(&"max_interrupt_times") { ", renaming `max_interrupt_times` to `max_interrupt_steps`" } else { "" }
        )
    };
    let (key, msg, hint) = match shape {
        Shape::Current => return,
        Shape::AgentConfigsMapping => (
            "agent_configs",
            "this is the older LLLM config shape (2025-11 templates): `agent_configs` is a mapping keyed by agent name; LLLM now reads `agent_configs` as a list",
            format!("migrate: write each entry `vanilla: {{…}}` as a list item `- name: vanilla` followed by the same keys, and put shared settings in `global:`{knobs}"),
        ),
        Shape::AgentGroupConfigs => (
            "agent_group_configs",
            "this is the `agent_group_configs` shape of LLLM's older agent docs; LLLM reads `global` + `agent_configs` (a list) instead",
            format!("migrate: rename `agent_group_configs` to `agent_configs` and write each entry `researcher: {{…}}` as a list item `- name: researcher` with the same keys; settings every agent shares go in `global:`{knobs}"),
        ),
    };
    let span = root.entry(key).map(|e| e.key.span).unwrap_or_else(|| head_span(file, root));
    diags.push(Diagnostic::error("lllm-old-shape", msg).at(file, span).hint(hint));
}

/// `{{name}}` placeholders of an unrendered template read as a flow mapping inside a flow
/// mapping: say what they are.
fn placeholders(file: &SourceFile, node: &YNode, diags: &mut Vec<Diagnostic>) {
    match &node.kind {
        YKind::Map(entries) => {
            let text = file.slice(node.span);
            if text.starts_with("{{") {
                let name = text.trim_start_matches('{').split('}').next().unwrap_or("").trim();
                diags.push(
                    Diagnostic::error("template-placeholder", format!("`{{{{{name}}}}}` is an unrendered template placeholder, not a value"))
                        .at(file, node.span)
                        .hint("this file is a project template: render it (LLLM's project creation fills the placeholders) or write the value"),
                );
                return;
            }
            for e in entries {
                placeholders(file, &e.value, diags);
            }
        }
        YKind::Seq(items) => items.iter().for_each(|i| placeholders(file, i, diags)),
        _ => {}
    }
}

/// Notes on keys of an agent entry or `global` that are not agent keys: LLLM sends them to
/// the model as model arguments.
fn model_arg_notes(file: &SourceFile, node: &YNode, what: &str, diags: &mut Vec<Diagnostic>) {
    for e in node.as_map().unwrap_or_default() {
        let k = e.key.key_text();
        if AGENT_KEYS.contains(&k) || crate::doc::schema::is_merge_key(&e.key) {
            continue;
        }
        let hint = if let Some((_, new)) = RENAMED.iter().find(|(old, _)| *old == k) {
            format!("older LLLM called it `{k}`; today's name is `{new}` (as written, it is sent to the model)")
        } else if let Some(s) = did_you_mean(k, AGENT_KEYS.iter().copied()) {
            format!("did you mean `{s}`? As written, it is sent to the model")
        } else {
            "to say so, move it under `model_args:`; the agent keys are name, model_name, system_prompt, system_prompt_path, api_type, model_args, max_exception_retry, max_interrupt_steps, max_llm_recall, extra_settings, proxy, context_manager, skills, tools".into()
        };
        diags.push(
            Diagnostic::new(Severity::Info, "lllm-model-arg", format!("`{k}` in {what} is not an agent key: LLLM passes it to the model as a model argument"))
                .at(file, e.key.span)
                .hint(hint),
        );
    }
}

fn agents(file: &SourceFile, root: &YNode, doc: &mut LllmDoc, diags: &mut Vec<Diagnostic>) {
    let Some(e) = root.entry("agent_configs").or_else(|| root.entry("agent_group_configs")) else { return };
    let list_key = e.key.key_text().to_string();
    let mut seen: HashMap<String, ()> = HashMap::new();
    match &e.value.kind {
        YKind::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                let name = item.get("name").and_then(|n| n.scalar_text().map(|t| (t.to_string(), n.span)));
                let what = match &name {
                    Some((n, _)) => format!("agent `{n}`"),
                    None => format!("item {} of `{list_key}`", i + 1),
                };
                if !Checker::new(file, diags).check_obj(item, &AGENT, &what) {
                    continue;
                }
                model_arg_notes(file, item, &what, diags);
                let Some((n, span)) = name else { continue };
                if seen.insert(n.clone(), ()).is_some() {
                    diags.push(
                        Diagnostic::error("lllm-duplicate-agent", format!("agent `{n}` is declared twice"))
                            .at(file, span)
                            .hint("LLLM keys agents by name: the later entry replaces the earlier one; rename or remove one"),
                    );
                }
                doc.agents.push(AgentEntry { name: Sp::new(n, span), span: item.span });
            }
        }
        YKind::Map(named) => {
            for n in named {
                let name = n.key.key_text().to_string();
                let what = format!("agent `{name}`");
                if Checker::new(file, diags).check_obj_except(&n.value, &AGENT, &what, &["name"]) {
                    model_arg_notes(file, &n.value, &what, diags);
                }
                doc.agents.push(AgentEntry { name: Sp::new(name, n.key.span), span: n.key.span.cover(n.value.span) });
            }
        }
        YKind::Bad => {}
        _ if e.value.is_null() => {}
        _ => diags.push(
            Diagnostic::error("wrong-type", format!("`{list_key}` must be a list of agent entries, found {}", e.value.describe()))
                .at(file, e.value.span)
                .hint("write `agent_configs:` followed by items `- name: …`"),
        ),
    }
}

/// The package the config at `dir` belongs to; an unreadable `lllm.toml` is a warning.
fn package_of(dir: &Path, diags: &mut Vec<Diagnostic>, extra_files: &mut Vec<SourceFile>) -> Option<Package> {
    let m = package::find_manifest(dir)?;
    match package::read(&m) {
        Ok(p) => Some(p),
        Err(e) => {
            let text = std::fs::read_to_string(&m).unwrap_or_default();
            let f = SourceFile::new(&m, text);
            let start = f.line_start(e.line);
            let end = start + f.line_text(e.line).len();
            diags.push(
                Diagnostic::warning("lllm-manifest", format!("the package's lllm.toml cannot be read: {}", e.message))
                    .at(&f, syntax::source::Span::new(start, end))
                    .hint("fix lllm.toml; until then `base` and prompt paths are looked up beside the config"),
            );
            extra_files.push(f);
            None
        }
    }
}

/// `pkg:name` → (`Some(pkg)`, `name`).
fn qualified(s: &str) -> (Option<&str>, &str) {
    match s.split_once(':') {
        Some((p, n)) if !p.is_empty() && !p.contains('/') => (Some(p), n),
        _ => (None, s),
    }
}

/// Read the `base` chain above `layers[0]`: each base is pushed after the config naming it.
fn read_chain(layers: &mut Vec<Layer>, diags: &mut Vec<Diagnostic>, extra_files: &mut Vec<SourceFile>) {
    let mut seen: Vec<PathBuf> = vec![canon(layers[0].file.path())];
    loop {
        let cur = layers.last().expect("one layer at least");
        let Some(b) = cur.root.get("base") else { return };
        let Some(name) = b.as_str() else { return };
        let (file, span) = (cur.file.clone(), b.span);
        if layers.len() > MAX_CHAIN {
            diags.push(Diagnostic::error("lllm-base-chain", format!("the `base` chain is longer than {MAX_CHAIN} configs")).at(&file, span));
            return;
        }
        let (qual, cfg) = qualified(name);
        let dir = file.path().parent().map(Path::to_path_buf).unwrap_or_default();
        let pkg = match (&cur.package, qual) {
            (Some(p), q) => match p.resolve(q) {
                Some(p) => Some(p),
                None => {
                    diags.push(
                        Diagnostic::warning("lllm-package-missing", format!("package `{}` is not here: `base: {name}` cannot be read", q.unwrap_or("")))
                            .at(&file, span)
                            .hint("the package is not among this package's dependencies on disk (lllm.toml `[dependencies] packages`); the effective config leaves that base out"),
                    );
                    return;
                }
            },
            (None, Some(q)) => {
                diags.push(
                    Diagnostic::warning("lllm-package-missing", format!("package `{q}` is not here: `base: {name}` cannot be read"))
                        .at(&file, span)
                        .hint("there is no lllm.toml above this config, so no package or dependency to look in; the effective config leaves that base out"),
                );
                return;
            }
            (None, None) => None,
        };
        let found = match &pkg {
            Some(p) => p.config_file(cfg).or_else(|| package::config_in(std::iter::once((dir.as_path(), None)), cfg)),
            None => package::config_in(std::iter::once((dir.as_path(), None)), cfg),
        };
        let Some(path) = found else {
            let names = match &pkg {
                Some(p) => p.config_names(),
                None => Vec::new(),
            };
            let sugg = did_you_mean(cfg, names.iter().map(String::as_str));
            let hint = match sugg {
                Some(s) => format!("did you mean `{s}`?"),
                None if names.is_empty() => format!("`base` names a config without `.yaml`, looked up in the package's config folders and beside this file ({})", dir.display()),
                None => format!("configs here: {}", names.join(", ")),
            };
            diags.push(Diagnostic::error("lllm-base-unknown", format!("no config `{name}` to inherit from")).at(&file, span).hint(hint));
            return;
        };
        let c = canon(&path);
        if let Some(i) = seen.iter().position(|p| *p == c) {
            let mut names: Vec<String> = layers.iter().map(|l| l.name.clone()).collect();
            names.push(layers[i].name.clone());
            diags.push(
                Diagnostic::error("lllm-base-cycle", format!("`base` goes round in a circle: {}", names.join(" → ")))
                    .at(&file, span)
                    .hint("LLLM refuses circular inheritance; remove `base` from one of these configs"),
            );
            return;
        }
        seen.push(c);
        let text = match syntax::source::read_bounded_text(&path, MAX_FILE_BYTES, None) {
            Ok(t) => t,
            Err(e) => {
                diags.push(Diagnostic::error("lllm-base-unreadable", format!("`base: {name}` cannot be read: {e}")).at(&file, span));
                return;
            }
        };
        let f = SourceFile::new(&path, text);
        let parsed = yaml::parse(&f);
        diags.extend(parsed.diagnostics.into_iter().filter(|d| d.is_error()));
        let root = parsed.root.unwrap_or_default();
        let package = match &pkg {
            Some(p) if path.starts_with(&p.root) => Some(p.clone()),
            _ => package::find_manifest(path.parent().unwrap_or(Path::new("."))).and_then(|m| package::read(&m).ok()),
        };
        extra_files.push(f.clone());
        layers.push(Layer { name: name.to_string(), file: f, root, package });
    }
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Resolve each effective agent's `system_prompt_path` in the package of the config it was
/// written in.
fn resolve_prompts(doc: &mut LllmDoc, diags: &mut Vec<Diagnostic>) {
    let mut indexes: HashMap<PathBuf, PromptIndex> = HashMap::new();
    let mut out = Vec::new();
    for a in &doc.effective.agents {
        let Some(v @ PVal::Value { .. }) = a.get("system_prompt_path") else { continue };
        let Some(path) = v.to_json().as_str().map(str::to_string) else { continue };
        let from = v.from();
        let Some(layer) = doc.layers.iter().rev().find(|l| l.file.path().display().to_string() == from.file) else { continue };
        let Some(span) = from.span else { continue };
        let at = |d: Diagnostic| d.at(&layer.file, span).node(a.name.clone());
        let (qual, key) = qualified(&path);
        let Some(own) = &layer.package else {
            // Outside a package, a prompt file in `prompts/` beside the config (or beside its
            // folder) is what a run reads.
            if let Some(f) = layer.file.path().parent().and_then(|d| package::loose_prompt(d, key)) {
                out.push(PromptRef { agent: a.name.clone(), path, hit: Some(PromptHit::File(f)) });
                continue;
            }
            diags.push(at(Diagnostic::warning("lllm-prompt-unresolved", format!("prompt `{path}` of agent `{}` is not checked: no lllm.toml above this config", a.name))
                .hint("LLLM looks prompts up in the registry of the package the config belongs to; with no package here, the prompt is whatever the program registers at run time")));
            out.push(PromptRef { agent: a.name.clone(), path, hit: None });
            continue;
        };
        let Some(pkg) = own.resolve(qual) else {
            diags.push(at(Diagnostic::warning("lllm-package-missing", format!("package `{}` of prompt `{path}` is not here", qual.unwrap_or("")))
                .hint("the package is not among this package's dependencies on disk (lllm.toml `[dependencies] packages`), so its prompts cannot be checked")));
            out.push(PromptRef { agent: a.name.clone(), path, hit: None });
            continue;
        };
        let ix = indexes.entry(pkg.root.clone()).or_insert_with(|| PromptIndex::of(&pkg));
        let hit = package::find_prompt(&pkg, ix, key);
        if hit.is_none() {
            let folders = pkg.prompts.iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>().join(", ");
            if ix.modules > 0 {
                diags.push(at(Diagnostic::warning("lllm-prompt-unresolved", format!("prompt `{path}` of agent `{}` is neither a prompt file nor declared by name in a prompt module", a.name))
                    .hint(format!("the package's prompt modules ({folders}) may build it when Python runs them; validation reads them without running them, a trusted run imports them to find it"))));
            } else {
                let sugg = did_you_mean(key, ix.declared.iter().map(|(k, _, _)| k.as_str()));
                diags.push(at(Diagnostic::error("lllm-prompt-not-found", format!("prompt `{path}` of agent `{}` is not in the package's prompt folders", a.name))
                    .hint(match sugg {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!("add `{key}.md` to a prompt folder ({folders}), or give the text inline as `system_prompt`"),
                    })));
            }
        }
        out.push(PromptRef { agent: a.name.clone(), path, hit });
    }
    doc.prompts = out;
}

#[cfg(test)]
mod tests {
    use crate::doc;

    fn dir(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("sy-lllm-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (p, t) in files {
            let f = d.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        }
        d
    }

    #[test]
    fn base_cycles_and_unknown_bases_are_positioned_errors() {
        let d = dir(
            "chain",
            &[
                ("lllm.toml", "[package]\nname = \"p\"\n"),
                ("prompts/sys.md", "You help."),
                ("configs/a.yaml", "base: b\nagent_configs:\n  - name: x\n    system_prompt_path: sys\n"),
                ("configs/b.yaml", "global:\n  model_name: m\nbase: a\n"),
                ("configs/c.yaml", "base: dfault\nglobal: {model_name: m}\n"),
                ("configs/default.yaml", "global: {}\n"),
                ("configs/d.yaml", "base: other:thing\nagent_configs:\n  - name: y\n    system_prompt_path: nothere\n    model_name: m\n"),
            ],
        );
        let a = doc::load_path(&d.join("configs/a.yaml"));
        let cyc = a.diagnostics.iter().find(|x| x.code == "lllm-base-cycle").expect("a cycle");
        assert!(cyc.is_error() && cyc.file.ends_with("b.yaml") && (cyc.line, cyc.column) == (3, 7), "{cyc:?}");
        assert!(cyc.message.contains("a → b → a"), "{}", cyc.message);
        // The chain read up to the cycle still gives the effective config, the prompt resolved.
        let l = a.lllm().unwrap();
        assert_eq!(l.effective.agents[0].str("model_name"), Some("m"));
        assert!(l.prompts[0].location().is_some_and(|p| p.ends_with("prompts/sys.md")));

        let c = doc::load_path(&d.join("configs/c.yaml"));
        let unk = c.diagnostics.iter().find(|x| x.code == "lllm-base-unknown").expect("an unknown base");
        assert!(unk.is_error() && unk.file.ends_with("c.yaml") && (unk.line, unk.column) == (1, 7), "{unk:?}");
        assert_eq!(unk.hint.as_deref(), Some("did you mean `default`?"));

        // A base in a package that is not here, and a prompt the package does not have.
        let dd = doc::load_path(&d.join("configs/d.yaml"));
        let codes: Vec<(&str, bool)> = dd.diagnostics.iter().map(|x| (x.code.as_str(), x.is_error())).collect();
        assert!(codes.contains(&("lllm-package-missing", false)), "{codes:?}");
        assert!(codes.contains(&("lllm-prompt-not-found", true)), "{codes:?}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
