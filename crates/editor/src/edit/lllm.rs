//! Edit ops on LLLM configs (`base`, `global`, `agent_configs`), by the ids of the canvas'
//! nodes (`model::graph::lower_lllm`): `global`, an agent's name (`agent:global` for an agent
//! called `global`), `base:<config>` for a config of the `base` chain.
//!
//! | op | on an agent | on `global` | on a base |
//! | --- | --- | --- | --- |
//! | `add_node` (`kind: agent`) | a new entry `- name:` in the agent list (after `after`) | — | — |
//! | `delete_node` | its entry | the `global` key | the nearest: the `base` key |
//! | `rename_node` | its `name` (the key in the older shapes) | — | — |
//! | `set_field` | path inside its entry (`["model_args", "temperature"]`); removing the last key of a mapping inside the entry removes the mapping | path inside `global` (created before the agents when absent) | — |
//! | `set_doc_field` | path from the top (`["base"]`, created first in the file's keys) | | |
//! | `remove_edge` (`inherits`) | — | — | from the nearest base: the `base` key |
//!
//! Agents written in a base config (a file without an agent list of its own uses its base's)
//! are refused with the file to open: a list here would replace the base's whole list.

use super::text::{at, entry_index, err, key, ref_str, Res};
use super::{check_new_name, EditOp, PathSeg, Work};
use model::doc::Document;
use model::graph::lower_lllm::{agent_id, GLOBAL};
use serde_json::{json, Value as Json};
use syntax::yaml::{YKind, YNode};

/// The keys an agent list is written under, the current shape first.
const LIST_KEYS: [&str; 2] = ["agent_configs", "agent_group_configs"];

/// What a canvas node id names.
#[derive(Debug, PartialEq)]
enum Target<'a> {
    Global,
    Base(&'a str),
    Agent(&'a str),
}

fn target(id: &str) -> Target<'_> {
    if id == GLOBAL {
        Target::Global
    } else if let Some(b) = id.strip_prefix("base:") {
        Target::Base(b)
    } else if let Some(r) = id
        .strip_prefix("agent:")
        .filter(|r| *r == GLOBAL || r.starts_with("base:"))
    {
        Target::Agent(r)
    } else {
        Target::Agent(id)
    }
}

/// The agent list of this file: its key and value (a list, or a mapping in the older shapes;
/// null when written empty).
fn list(root: &YNode) -> Option<(&'static str, &YNode)> {
    LIST_KEYS.iter().find_map(|k| root.get(k).map(|v| (*k, v)))
}

/// The agents written in this file, in order.
fn names(root: &YNode) -> Vec<String> {
    match list(root).map(|(_, v)| &v.kind) {
        Some(YKind::Seq(items)) => items
            .iter()
            .filter_map(|it| it.get("name").and_then(ref_str))
            .map(str::to_string)
            .collect(),
        Some(YKind::Map(entries)) => entries
            .iter()
            .map(|e| e.key.key_text().to_string())
            .collect(),
        _ => Vec::new(),
    }
}

/// The path of an agent's entry (the last one of that name: it is the one LLLM keeps).
fn agent_path(root: &YNode, name: &str) -> Option<Vec<PathSeg>> {
    let (k, v) = list(root)?;
    match &v.kind {
        YKind::Seq(items) => items
            .iter()
            .rposition(|it| it.get("name").and_then(ref_str) == Some(name))
            .map(|i| vec![key(k), PathSeg::Index(i)]),
        YKind::Map(_) => entry_index(v, name).map(|_| vec![key(k), key(name)]),
        _ => None,
    }
}

/// The file's own path as origins name it.
fn own(doc: &Document) -> String {
    doc.file
        .as_ref()
        .map(|f| f.path().display().to_string())
        .unwrap_or_default()
}

/// The path of an agent written in this file, or why it cannot be edited here.
fn need_agent(doc: &Document, root: &YNode, name: &str) -> Res<Vec<PathSeg>> {
    if let Some(p) = agent_path(root, name) {
        return Ok(p);
    }
    if let Some(a) = doc
        .lllm()
        .and_then(|l| l.agent(name))
        .filter(|a| a.from.file != own(doc))
    {
        let file = std::path::Path::new(&a.from.file)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        return err(format!(
            "the agent `{name}` is written in the base config `{}` ({file}): open that config to edit it \
             (an `agent_configs` list in this file would replace the base's whole list)",
            a.from.config
        ));
    }
    let all = names(root);
    let hint = match syntax::diag::did_you_mean(name, all.iter().map(String::as_str)) {
        Some(s) => format!("did you mean `{s}`?"),
        None if all.is_empty() => "the config has no agents yet".to_string(),
        None => format!("its agents are: {}", all.join(", ")),
    };
    err(format!("there is no agent `{name}` in this config; {hint}"))
}

/// The configs of this file's package that take their agents from it (they name it in their
/// `base` chain and have no agent list of their own), by name.
fn heirs(doc: &Document) -> Vec<String> {
    let Some(pkg) = doc.lllm().and_then(|l| l.package()) else {
        return Vec::new();
    };
    let own = doc.path.canonicalize().unwrap_or_else(|_| doc.path.clone());
    let mut out = Vec::new();
    for name in pkg.config_names() {
        let Some(file) = pkg.config_file(&name) else {
            continue;
        };
        if file.canonicalize().unwrap_or_else(|_| file.clone()) == own {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let d = model::doc::load_str(&file, &text);
        let Some(l) = d.lllm() else { continue };
        let n = l.layers.len();
        let from_here = l.layers.iter().take(n.saturating_sub(1)).find(|b| {
            let p = b.file.path();
            p.canonicalize().unwrap_or_else(|_| p.to_path_buf()) == own
        });
        if from_here.is_some_and(|b| l.effective.agents_from.as_deref() == Some(b.name.as_str())) {
            out.push(name);
        }
    }
    out
}

/// The `base` this file names, if any.
fn base_of(root: &YNode) -> Option<&str> {
    root.get("base").and_then(ref_str)
}

fn refuse_base(root: &YNode, b: &str) -> Res<Option<String>> {
    match base_of(root) {
        Some(mine) if mine == b => err(format!(
            "`{b}` is the config this one inherits from: open it to edit it (“open sub-agent”), or change `base` in the inspector of `global`"
        )),
        _ => err(format!("`{b}` is a config further up the `base` chain: open it to edit it")),
    }
}

/// Remove the top-level `base`. Written on one line, only that line goes: the comments above it
/// are the file's header more often than `base`'s own.
fn remove_base(w: &mut Work) -> Res<()> {
    let root = w.root()?;
    let Some(e) = root.entry("base") else {
        return Ok(());
    };
    let (s, v) = (e.key.span.start as usize, e.value.span.end as usize);
    let one_line = e.value.as_scalar().is_some()
        && !w.text[s..v.max(s)].contains('\n')
        && super::text::col(&w.text, s) == 0;
    if !one_line || super::text::is_flow(&w.text, &root) {
        return w.set(&[key("base")], None);
    }
    let (start, end) = (
        super::text::line_start(&w.text, s),
        super::text::line_end_incl(&w.text, v),
    );
    w.text = format!("{}{}", &w.text[..start], &w.text[end..]);
    Ok(())
}

/// Set or remove `path` below the entry at `prefix`; removing the last key of a mapping inside
/// the entry removes that mapping too (no `model_args: {}` left behind).
fn set_below(w: &mut Work, prefix: &[PathSeg], path: &[PathSeg], value: Option<&Json>) -> Res<()> {
    let mut full: Vec<PathSeg> = prefix.iter().cloned().chain(path.iter().cloned()).collect();
    if value.is_none() {
        let root = w.root()?;
        if at(&root, &full).is_none() {
            return Ok(());
        }
        while full.len() > prefix.len() + 1 {
            let parent = at(&root, &full[..full.len() - 1]);
            if parent
                .and_then(|p| p.as_map())
                .is_some_and(|m| m.len() == 1)
            {
                full.pop();
            } else {
                break;
            }
        }
    }
    w.set(&full, value)
}

/// Where a new top-level key goes: before the first of `global` and the agent list (after the
/// other keys a config starts with, such as `tactic_type`), or at the end.
fn top_slot(root: &YNode, keys: &[&str]) -> Option<usize> {
    let m = root.as_map()?;
    m.iter().position(|e| keys.contains(&e.key.key_text()))
}

/// Set a top-level key, placing a new one at `before` (see [`top_slot`]).
fn set_top(w: &mut Work, path: &[PathSeg], value: Option<&Json>, before_keys: &[&str]) -> Res<()> {
    let root = w.root()?;
    let absent = matches!(path.first(), Some(PathSeg::Key(k)) if root.get(k).is_none());
    match (absent, value, path) {
        (true, Some(v), [PathSeg::Key(k), rest @ ..])
            if root.as_map().is_some_and(|m| !m.is_empty())
                && !super::text::is_flow(&w.text, &root) =>
        {
            let Some(nv) = super::text::nest_value(v, rest) else {
                return err(format!("`{k}` does not exist; a list index can only address an existing item"));
            };
            let before = top_slot(&root, before_keys);
            w.step(|ed| ed.insert_entry(ed.root, before, k, &nv))
        }
        _ => w.set(path, value),
    }
}

/// A new agent's entry: its name, and a system prompt when `global` gives none (an agent needs
/// one, and the validator says so).
fn new_agent(doc: &Document, name: &str, mapping: bool) -> Json {
    let has_prompt = doc.lllm().is_some_and(|l| {
        ["system_prompt", "system_prompt_path"]
            .iter()
            .any(|k| l.effective.global.contains_key(*k))
    });
    let mut v = serde_json::Map::new();
    if !mapping {
        v.insert("name".into(), json!(name));
    }
    if !has_prompt {
        v.insert("system_prompt".into(), json!(format!("You are {name}.")));
    }
    Json::Object(v)
}

fn rename(w: &mut Work, doc: &Document, from: &str, to: &str) -> Res<Option<String>> {
    let root = w.root()?;
    let path = need_agent(doc, &root, from)?;
    if from == to {
        return Ok(Some(agent_id(to)));
    }
    check_new_name(to)?;
    if agent_path(&root, to).is_some() {
        return err(format!(
            "an agent named `{to}` already exists; choose another name"
        ));
    }
    let text = w.text.clone();
    let ed = super::text::Ed {
        text: &text,
        root: &root,
        nl: w.nl,
    };
    let mut rn = super::text::Renamer::new(&ed, from, to);
    match path.last() {
        Some(PathSeg::Index(_)) => {
            // Every entry of that name: LLLM keeps the last, and a rename must not uncover an earlier one.
            for it in list(&root).and_then(|(_, v)| v.as_seq()).unwrap_or(&[]) {
                rn.push(it.get("name"))?;
            }
        }
        _ => {
            let entries = list(&root).and_then(|(_, v)| v.as_map()).unwrap_or(&[]);
            for e in entries {
                rn.push(Some(&e.key))?;
            }
        }
    }
    w.text = rn.finish();
    Ok(Some(agent_id(to)))
}

pub(crate) fn apply(w: &mut Work, doc: &Document, op: &EditOp) -> Res<Option<String>> {
    let root = w.root()?;
    if root.as_map().is_none() {
        return err(
            "this LLLM config is not a mapping at the top; fix it in the source view first",
        );
    }
    match op {
        EditOp::AddNode { name, kind, after } => {
            if kind != "agent" {
                return err(format!(
                    "an LLLM config's canvas adds agents (kind `agent`), not `{kind}`: `global` is written once, a base with `base`"
                ));
            }
            check_new_name(name)?;
            if agent_path(&root, name).is_some() {
                return err(format!("an agent named `{name}` already exists; choose another name"));
            }
            let own_list = list(&root);
            if own_list.is_none() {
                if let Some(from) = doc.lllm().and_then(|l| l.effective.agents_from.clone()) {
                    return err(format!(
                        "this config uses the agents of its base `{from}`; an `agent_configs` list here would replace all of them: \
                         add the agent in `{from}`, or write the whole list here in the source view"
                    ));
                }
            }
            let before = match after {
                // After an agent of this file; after `global` or a base (the palette's
                // selection), at the end.
                Some(a) => match target(a) {
                    Target::Agent(n) => {
                        let all = names(&root);
                        let i = all.iter().rposition(|x| x == n).ok_or_else(|| {
                            need_agent(doc, &root, n).err().unwrap_or_else(|| super::EditError::new("no such agent"))
                        })?;
                        (i + 1 < all.len()).then_some(i + 1)
                    }
                    Target::Global | Target::Base(_) => None,
                },
                None => None,
            };
            match own_list {
                Some((_, v)) if v.as_map().is_some() => {
                    let entry = new_agent(doc, name, true);
                    w.step(|ed| {
                        let v = list(ed.root).map(|(_, v)| v).expect("the list");
                        ed.insert_entry(v, before, name, &entry)
                    })?;
                }
                Some((k, v)) if v.as_seq().is_some() => {
                    let entry = new_agent(doc, name, false);
                    let empty_block = v.as_seq().is_some_and(|s| s.is_empty()) && !super::text::is_flow(&w.text, v);
                    if empty_block {
                        w.set(&[key(k)], Some(&json!([entry])))?;
                    } else {
                        w.step(|ed| {
                            let v = list(ed.root).map(|(_, v)| v).expect("the list");
                            ed.insert_item(v, before, &entry)
                        })?;
                    }
                }
                Some((k, v)) if v.is_null() => w.set(&[key(k)], Some(&json!([new_agent(doc, name, false)])))?,
                Some((k, v)) => {
                    return err(format!("`{k}` is {}, not a list of agents; fix it in the source view", v.describe()));
                }
                None => set_top(w, &[key("agent_configs")], Some(&json!([new_agent(doc, name, false)])), &[])?,
            }
            Ok(Some(agent_id(name)))
        }
        EditOp::DeleteNode { name } => match target(name) {
            Target::Global => {
                if root.get("global").is_none() {
                    return err("this config writes no `global`; there is nothing to delete");
                }
                w.set(&[key("global")], None)?;
                Ok(None)
            }
            Target::Base(b) => match base_of(&root) {
                Some(mine) if mine == b => {
                    remove_base(w)?;
                    Ok(None)
                }
                _ => refuse_base(&root, b),
            },
            Target::Agent(a) => {
                let p = need_agent(doc, &root, a)?;
                let heirs = heirs(doc);
                if !heirs.is_empty() {
                    return err(format!(
                        "{} inherit{} this config's agents (no agent list of {} own): deleting `{a}` here removes it from {} too; \
                         delete it in the source view if that is what you want",
                        heirs.iter().map(|h| format!("`{h}`")).collect::<Vec<_>>().join(", "),
                        if heirs.len() == 1 { "s" } else { "" },
                        if heirs.len() == 1 { "its" } else { "their" },
                        if heirs.len() == 1 { "it" } else { "them" },
                    ));
                }
                w.set(&p, None)?;
                Ok(None)
            }
        },
        EditOp::RenameNode { from, to } => match target(from) {
            Target::Agent(a) => rename(w, doc, a, to),
            Target::Global => err("`global` is a key of the config, not an agent; it cannot be renamed"),
            Target::Base(b) => refuse_base(&root, b),
        },
        EditOp::SetField { node, path, value } => {
            if path.is_empty() {
                return err("give the path of the field to set, e.g. [\"model_name\"]");
            }
            match target(node) {
                Target::Global => {
                    if root.get("global").is_none_or(|g| g.is_null()) {
                        if value.is_none() {
                            return Ok(Some(GLOBAL.into()));
                        }
                        if root.get("global").is_none() {
                            let full: Vec<PathSeg> = std::iter::once(key("global")).chain(path.iter().cloned()).collect();
                            set_top(w, &full, value.as_ref(), &LIST_KEYS)?;
                            return Ok(Some(GLOBAL.into()));
                        }
                    }
                    set_below(w, &[key("global")], path, value.as_ref())?;
                    Ok(Some(GLOBAL.into()))
                }
                Target::Base(b) => refuse_base(&root, b),
                Target::Agent(a) => {
                    let p = need_agent(doc, &root, a)?;
                    if matches!(path.as_slice(), [PathSeg::Key(k)] if k == "name") && p.last().is_some_and(|s| matches!(s, PathSeg::Index(_))) {
                        return match value {
                            Some(Json::String(to)) => rename(w, doc, a, to),
                            _ => err("an agent needs a name; type a new name to rename it"),
                        };
                    }
                    set_below(w, &p, path, value.as_ref())?;
                    Ok(Some(agent_id(a)))
                }
            }
        }
        EditOp::SetDocField { path, value } => {
            if path.is_empty() {
                return err("give the path of the field to set, e.g. [\"base\"]");
            }
            if matches!(path.as_slice(), [PathSeg::Key(k)] if k == "base") {
                match value {
                    None | Some(Json::Null) => {}
                    Some(Json::String(s)) if !s.trim().is_empty() => {}
                    _ => return err("`base` names a config: `name` or `package:name` (no `.yaml`)"),
                }
            }
            if matches!(path.as_slice(), [PathSeg::Key(k)] if k == "base") && value.is_none() {
                remove_base(w)?;
                return Ok(None);
            }
            let first = ["base", "global"].iter().chain(LIST_KEYS.iter()).copied().collect::<Vec<_>>();
            let before: &[&str] = if matches!(path.first(), Some(PathSeg::Key(k)) if k == "base") { &first } else { &[] };
            set_top(w, path, value.as_ref(), before)?;
            Ok(None)
        }
        EditOp::RemoveEdge { from, to, kind, .. } => match (kind.as_str(), target(from)) {
            ("inherits", Target::Base(b)) if base_of(&root) == Some(b) && (to == GLOBAL || to.starts_with("base:")) => {
                remove_base(w)?;
                Ok(None)
            }
            ("inherits", Target::Base(b)) => refuse_base(&root, b),
            ("inherits", Target::Global) => err(format!(
                "every agent takes `global`'s defaults; set the value in `{to}`'s entry to override one"
            )),
            _ => err(format!("an LLLM config has no `{kind}` edges; its edges are `inherits`")),
        },
        EditOp::AddEdge { .. } => err("an agent always inherits `global`, and a config another config with `base`: set `base` in the inspector of `global`"),
        EditOp::AddBranch { .. } | EditOp::SetBranch { .. } | EditOp::MoveBranch { .. } | EditOp::RemoveBranch { .. } | EditOp::SetDefault { .. } => {
            err("an LLLM config has no branches: its agents are called by the tactic's code")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{apply, Applied, EditOp, PathSeg};
    use serde_json::{json, Value as Json};
    use std::path::Path;

    const PRO: &str = "\
# Review service — production config.
base: default   # inherits default.yaml

tactic_type: code_review

global:
  model_name: gpt-4o   # the model of every agent
  model_args:
    temperature: 0.1
    max_tokens: 4096
  skills: [pdf, commit]

agent_configs:
  # reads the diff
  - name: analyzer
    system_prompt_path: system/analyzer
    model_args:
      temperature: 0.2        # thorough
      max_tokens: 2048

  # writes the verdict
  - name: synthesizer
    system_prompt_path: system/synthesizer
    temperature: 0.0          # moved to model args
    skills:
      - review
";

    fn op(v: Json) -> EditOp {
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    /// Apply `o` to `text`; the edit and its inverse are exact, and the result is still an LLLM
    /// config that parses.
    fn run(text: &str, o: Json) -> Applied {
        let path = Path::new("/nowhere/configs/pro.yaml");
        let a = apply(text, path, None, &op(o.clone())).unwrap_or_else(|e| panic!("{o}: {e}"));
        assert_eq!(a.edit.apply(text), a.text);
        assert_eq!(
            a.inverse.apply(&a.text),
            text,
            "{o}: the inverse restores the bytes"
        );
        let d = model::doc::load_str(path, &a.text);
        assert_eq!(d.dialect(), Some(model::doc::Dialect::Lllm), "{o}");
        assert!(
            d.diagnostics.iter().all(|x| x.code != "yaml-syntax"),
            "{o}:\n{}",
            a.text
        );
        a
    }

    fn refused(text: &str, o: Json) -> String {
        let e = apply(
            text,
            Path::new("/nowhere/configs/pro.yaml"),
            None,
            &op(o.clone()),
        )
        .expect_err(&o.to_string());
        assert!(!e.message.starts_with("internal"), "{e}");
        e.message
    }

    fn set(node: &str, path: &[&str], value: Json) -> Json {
        json!({"op": "set_field", "node": node, "path": path, "value": value})
    }

    /// `text` with the line containing `old` replaced by `new` lines (`""` removes it).
    fn with_line(text: &str, old: &str, new: &str) -> String {
        let mut out = String::new();
        let mut hit = 0;
        for l in text.split_inclusive('\n') {
            if l.contains(old) {
                hit += 1;
                out.push_str(new);
            } else {
                out.push_str(l);
            }
        }
        assert_eq!(hit, 1, "`{old}` once");
        out
    }

    #[test]
    fn an_agents_value_changes_in_place_with_its_comment() {
        let a = run(
            PRO,
            set("analyzer", &["model_args", "temperature"], json!(0.5)),
        );
        assert_eq!(
            a.text,
            PRO.replace(
                "temperature: 0.2        # thorough",
                "temperature: 0.5        # thorough"
            )
        );
        assert_eq!(a.select.as_deref(), Some("analyzer"));
        // A key outside model_args (as LLLM also reads it) is edited where it is written.
        let a = run(PRO, set("synthesizer", &["temperature"], json!(0.7)));
        assert_eq!(
            a.text,
            PRO.replace("temperature: 0.0  ", "temperature: 0.7  ")
        );
        let a = run(
            PRO,
            set("analyzer", &["system_prompt_path"], json!("system/deep")),
        );
        assert_eq!(a.text, PRO.replace("system/analyzer", "system/deep"));
    }

    #[test]
    fn new_keys_go_into_the_agents_entry() {
        let a = run(PRO, set("analyzer", &["model_name"], json!("gpt-4o-mini")));
        assert_eq!(
            a.text,
            PRO.replacen(
                "      max_tokens: 2048\n",
                "      max_tokens: 2048\n    model_name: gpt-4o-mini\n",
                1
            )
        );
        for (k, v) in [
            ("max_exception_retry", json!(1)),
            ("max_interrupt_steps", json!(8)),
            ("max_llm_recall", json!(2)),
        ] {
            let a = run(PRO, set("synthesizer", &[k], v.clone()));
            assert_eq!(a.text, format!("{PRO}    {k}: {v}\n"));
        }
        let a = run(
            PRO,
            set("synthesizer", &["model_args", "top_p"], json!(0.9)),
        );
        assert_eq!(a.text, format!("{PRO}    model_args:\n      top_p: 0.9\n"));
    }

    #[test]
    fn clearing_the_last_key_of_model_args_removes_model_args() {
        let a = run(
            PRO,
            set("analyzer", &["model_args", "temperature"], Json::Null),
        );
        assert_eq!(a.text, with_line(PRO, "temperature: 0.2", ""));
        let b = run(
            &a.text,
            set("analyzer", &["model_args", "max_tokens"], Json::Null),
        );
        assert_eq!(
            b.text,
            with_line(
                &with_line(PRO, "temperature: 0.2", ""),
                "max_tokens: 2048",
                ""
            )
            .replacen("    model_args:\n\n", "\n", 1)
        );
        assert!(!b.text.contains("{}"), "{}", b.text);
        // Clearing what is not written changes nothing.
        let c = run(PRO, set("analyzer", &["max_llm_recall"], Json::Null));
        assert_eq!(c.text, PRO);
    }

    #[test]
    fn global_fields_are_set_and_created() {
        let a = run(PRO, set("global", &["model_name"], json!("o4-mini")));
        assert_eq!(
            a.text,
            PRO.replace("model_name: gpt-4o   #", "model_name: o4-mini   #")
        );
        assert_eq!(a.select.as_deref(), Some("global"));
        let a = run(PRO, set("global", &["max_exception_retry"], json!(2)));
        assert_eq!(
            a.text,
            PRO.replace(
                "  skills: [pdf, commit]\n",
                "  skills: [pdf, commit]\n  max_exception_retry: 2\n"
            )
        );
        let a = run(
            PRO,
            set("global", &["model_args", "max_tokens"], Json::Null),
        );
        assert_eq!(a.text, with_line(PRO, "max_tokens: 4096", ""));
        // No `global` yet: it goes before the agents.
        let text = "base: default\n\nagent_configs:\n  - name: a\n    system_prompt: hi\n";
        let a = run(
            text,
            set("global", &["model_args", "temperature"], json!(0.3)),
        );
        assert_eq!(a.text, "base: default\n\nglobal:\n  model_args:\n    temperature: 0.3\n\nagent_configs:\n  - name: a\n    system_prompt: hi\n");
    }

    #[test]
    fn skills_lists_are_edited_item_by_item_or_whole() {
        let a = run(PRO, set("global", &["skills", "1"], json!("docx")));
        assert_eq!(a.text, PRO.replace("[pdf, commit]", "[pdf, docx]"));
        let a = run(
            PRO,
            json!({"op": "set_field", "node": "global", "path": ["skills", 2], "value": "xlsx"}),
        );
        assert_eq!(a.text, PRO.replace("[pdf, commit]", "[pdf, commit, xlsx]"));
        let a = run(
            PRO,
            json!({"op": "set_field", "node": "synthesizer", "path": ["skills", 1], "value": "https://x.test/SKILL.md"}),
        );
        assert_eq!(
            a.text,
            PRO.replace(
                "      - review\n",
                "      - review\n      - https://x.test/SKILL.md\n"
            )
        );
        let a = run(
            PRO,
            json!({"op": "set_field", "node": "synthesizer", "path": ["skills"], "value": "*"}),
        );
        assert_eq!(
            a.text,
            PRO.replace("    skills:\n      - review\n", "    skills: \"*\"\n")
        );
        let a = run(
            PRO,
            json!({"op": "set_field", "node": "analyzer", "path": ["skills"], "value": ["pdf", "skill_01abc"]}),
        );
        assert!(
            a.text.contains(
                "      max_tokens: 2048\n    skills:\n      - pdf\n      - skill_01abc\n"
            ),
            "{}",
            a.text
        );
        let a = run(
            PRO,
            json!({"op": "set_field", "node": "synthesizer", "path": ["skills", 0], "value": null}),
        );
        assert_eq!(
            a.text,
            PRO.replace("    skills:\n      - review\n", "    skills: []\n")
        );
    }

    #[test]
    fn agents_are_renamed_added_and_deleted() {
        let a = run(
            PRO,
            json!({"op": "rename_node", "from": "analyzer", "to": "reader"}),
        );
        assert_eq!(a.text, PRO.replace("name: analyzer", "name: reader"));
        assert_eq!(a.select.as_deref(), Some("reader"));
        // The inspector's name field sends a set_field on `name`: the same rename.
        let b = run(PRO, set("analyzer", &["name"], json!("reader")));
        assert_eq!(b.text, a.text);
        assert!(refused(
            PRO,
            json!({"op": "rename_node", "from": "analyzer", "to": "synthesizer"})
        )
        .contains("already exists"));

        let a = run(
            PRO,
            json!({"op": "add_node", "name": "critic", "kind": "agent", "after": "analyzer"}),
        );
        assert_eq!(
            a.text,
            PRO.replace(
                "\n  # writes the verdict",
                "\n  - name: critic\n    system_prompt: You are critic.\n\n  # writes the verdict"
            )
        );
        assert_eq!(a.select.as_deref(), Some("critic"));
        let a = run(
            PRO,
            json!({"op": "add_node", "name": "global", "kind": "agent"}),
        );
        assert!(
            a.text.ends_with(
                "      - review\n\n  - name: global\n    system_prompt: You are global.\n"
            ),
            "{}",
            a.text
        );
        assert_eq!(a.select.as_deref(), Some("agent:global"));
        assert!(
            refused(PRO, json!({"op": "add_node", "name": "x", "kind": "base"}))
                .contains("adds agents")
        );
        // After `global` or a base (what the palette sends with those selected): at the end.
        let a = run(
            PRO,
            json!({"op": "add_node", "name": "late", "kind": "agent", "after": "global"}),
        );
        assert!(
            a.text
                .ends_with("  - name: late\n    system_prompt: You are late.\n"),
            "{}",
            a.text
        );
        assert!(refused(
            PRO,
            json!({"op": "add_node", "name": "x", "kind": "agent", "after": "ghost"})
        )
        .contains("no agent `ghost`"));

        let a = run(PRO, json!({"op": "delete_node", "name": "synthesizer"}));
        assert_eq!(
            a.text,
            PRO[..PRO.find("\n\n  # writes the verdict").unwrap() + 1].to_string()
        );
        let a = run(PRO, json!({"op": "delete_node", "name": "analyzer"}));
        assert_eq!(a.text, PRO.replace("  # reads the diff\n  - name: analyzer\n    system_prompt_path: system/analyzer\n    model_args:\n      temperature: 0.2        # thorough\n      max_tokens: 2048\n\n", ""));
        let one = run(&a.text, json!({"op": "delete_node", "name": "synthesizer"}));
        assert!(one.text.ends_with("agent_configs: []\n"), "{}", one.text);
        // …and the first agent of an empty list.
        let again = run(
            &one.text,
            json!({"op": "add_node", "name": "solo", "kind": "agent"}),
        );
        assert!(
            again
                .text
                .ends_with("agent_configs: [{name: solo, system_prompt: You are solo.}]\n"),
            "{}",
            again.text
        );
    }

    #[test]
    fn base_is_changed_removed_and_added() {
        let a = run(
            PRO,
            json!({"op": "set_doc_field", "path": ["base"], "value": "pkg:shared"}),
        );
        assert_eq!(
            a.text,
            PRO.replace("base: default   #", "base: pkg:shared   #")
        );
        let a = run(
            PRO,
            json!({"op": "set_doc_field", "path": ["base"], "value": null}),
        );
        assert_eq!(a.text, with_line(PRO, "base: default", ""));
        // Deleting the base's node, or its edge, removes `base` the same way.
        assert_eq!(
            run(PRO, json!({"op": "delete_node", "name": "base:default"})).text,
            a.text
        );
        assert_eq!(run(PRO, json!({"op": "remove_edge", "from": "base:default", "to": "global", "kind": "inherits"})).text, a.text);
        let text = "tactic_type: x\nglobal:\n  model_name: m\nagent_configs: []\n";
        let a = run(
            text,
            json!({"op": "set_doc_field", "path": ["base"], "value": "default"}),
        );
        assert_eq!(
            a.text,
            "tactic_type: x\nbase: default\nglobal:\n  model_name: m\nagent_configs: []\n"
        );
        assert!(refused(
            PRO,
            json!({"op": "set_doc_field", "path": ["base"], "value": 3})
        )
        .contains("names a config"));
    }

    #[test]
    fn what_is_not_in_this_file_is_refused_with_where_it_is() {
        assert!(refused(PRO, set("base:default", &["x"], json!(1))).contains("open it to edit it"));
        assert!(refused(PRO, set("base:far", &["x"], json!(1))).contains("further up"));
        assert!(refused(
            PRO,
            json!({"op": "rename_node", "from": "global", "to": "g"})
        )
        .contains("cannot be renamed"));
        assert!(
            refused(PRO, set("nobody", &["model_name"], json!("m"))).contains("no agent `nobody`")
        );
        assert!(refused(PRO, set("analyzr", &["model_name"], json!("m")))
            .contains("did you mean `analyzer`"));
        assert!(refused(
            PRO,
            json!({"op": "add_branch", "from": "analyzer", "condition": "x", "to": "synthesizer"})
        )
        .contains("no branches"));
        // Agents of a base config (the file has no list of its own) are edited in that file.
        let dir = std::env::temp_dir().join(format!("sy-lllm-edit-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("configs")).unwrap();
        std::fs::write(
            dir.join("lllm.toml"),
            "[package]\nname = \"p\"\n\n[configs]\npaths = [\"configs\"]\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("configs/default.yaml"),
            "agent_configs:\n  - name: a\n    system_prompt: hi\n",
        )
        .unwrap();
        let path = dir.join("configs/dev.yaml");
        let text = "base: default\nglobal:\n  model_name: m\n";
        let d = model::doc::load_str(&path, text);
        assert_eq!(
            d.lllm().map(|l| l.effective.agents.len()),
            Some(1),
            "{:?}",
            d.diagnostics
        );
        let e = apply(
            text,
            &path,
            None,
            &op(set("a", &["model_name"], json!("x"))),
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("written in the base config `default` (default.yaml)"),
            "{e}"
        );
        let e = apply(
            text,
            &path,
            None,
            &op(json!({"op": "add_node", "name": "b", "kind": "agent"})),
        )
        .unwrap_err();
        assert!(
            e.message.contains("uses the agents of its base `default`"),
            "{e}"
        );
        // Deleting an agent of default.yaml would take it from dev.yaml too: refused with its name.
        std::fs::write(&path, text).unwrap();
        let base = dir.join("configs/default.yaml");
        let btext = std::fs::read_to_string(&base).unwrap();
        let e = apply(
            &btext,
            &base,
            None,
            &op(json!({"op": "delete_node", "name": "a"})),
        )
        .unwrap_err();
        assert!(
            e.message.contains("`dev` inherits this config's agents"),
            "{e}"
        );
        std::fs::write(
            dir.join("configs/dev.yaml"),
            "base: default\nagent_configs:\n  - name: b\n    system_prompt: hi\n",
        )
        .unwrap();
        let a = apply(
            &btext,
            &base,
            None,
            &op(json!({"op": "delete_node", "name": "a"})),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.text, "agent_configs: []\n");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_older_mapping_shapes_are_edited_by_key() {
        let text = "agent_configs:\n  researcher:   # finds sources\n    model_name: gpt-4o\n    temperature: 0.3\n  writer:\n    model_name: gpt-4o\n";
        let a = run(text, set("writer", &["model_name"], json!("o3")));
        assert_eq!(
            a.text,
            text.replace("gpt-4o\n", "o3\n").replacen(
                "model_name: o3\n    temperature",
                "model_name: gpt-4o\n    temperature",
                1
            )
        );
        let a = run(
            text,
            json!({"op": "rename_node", "from": "researcher", "to": "scout"}),
        );
        assert_eq!(a.text, text.replace("researcher:", "scout:"));
        let a = run(
            text,
            json!({"op": "add_node", "name": "editor", "kind": "agent", "after": "researcher"}),
        );
        assert_eq!(
            a.text,
            text.replace(
                "  writer:\n",
                "  editor:\n    system_prompt: You are editor.\n  writer:\n"
            )
        );
        let a = run(text, json!({"op": "delete_node", "name": "researcher"}));
        assert_eq!(
            a.text,
            "agent_configs:\n  writer:\n    model_name: gpt-4o\n"
        );
    }

    #[test]
    fn ids_name_what_the_canvas_draws() {
        use super::{target, Target};
        assert_eq!(target("global"), Target::Global);
        assert_eq!(target("base:pkg:default"), Target::Base("pkg:default"));
        assert_eq!(target("agent:global"), Target::Agent("global"));
        assert_eq!(target("agent:base:x"), Target::Agent("base:x"));
        assert_eq!(target("agent:x"), Target::Agent("agent:x"));
        assert_eq!(target("analyzer"), Target::Agent("analyzer"));
        let _ = PathSeg::Index(0);
    }
}
