//! What the canvas' nodes of an LLLM config carry (`ViewNode::data`): for `global`, its entry
//! as written and its values after the `base` chain; for each agent, its entry as written, its
//! effective config (after `base` and `global`) with the origin of every value, its prompt as
//! resolved and its skills classified; for each base, its file. `file` (this config's path) lets
//! the inspector tell values written here from values of a base.

use super::view::Decl;
use model::doc::lllm::{EffectiveAgent, LllmDoc, PVal};
use model::doc::Document;
use model::graph::lower_lllm::{agent_id, base_id, GLOBAL};
use serde_json::{json, Value};
use std::collections::HashMap;
use syntax::yaml::YNode;

pub(super) fn declarations(doc: &Document, l: &LllmDoc) -> HashMap<String, Decl> {
    let mut out = HashMap::new();
    let own = doc
        .file
        .as_ref()
        .map(|f| f.path().display().to_string())
        .unwrap_or_default();
    let root = doc.root.as_ref();
    let global_entry = root.and_then(|r| r.entry("global"));
    out.insert(
        GLOBAL.to_string(),
        Decl {
            span: global_entry.map(|e| (e.key.span.start as usize, e.value.span.end as usize)),
            data: json!({
                "config": global_entry.map(|e| e.value.to_json()).unwrap_or(Value::Null),
                "effective": l.effective.global,
                "shape": l.shape,
                "file": own,
                "base": l.base.as_ref().map(|b| b.value.clone()),
                "agents_from": l.effective.agents_from,
            }),
            sub_agent: None,
        },
    );
    for a in &l.effective.agents {
        let here = a.from.file == own;
        let span = here.then_some(a.from.span).flatten();
        let raw = span
            .and_then(|_| root.and_then(|r| entry_of(r, &a.name)))
            .map(|n| n.to_json())
            .unwrap_or(Value::Null);
        out.insert(
            agent_id(&a.name),
            Decl {
                span: span.map(|s| (s.start as usize, s.end as usize)),
                data: agent_data(l, a, raw, &own),
                sub_agent: None,
            },
        );
    }
    let n = l.layers.len();
    for b in l.layers.iter().take(n.saturating_sub(1)) {
        out.insert(
            base_id(&b.name),
            Decl {
                span: None,
                data: json!({ "config": b.name, "file": b.file.path().display().to_string() }),
                sub_agent: Some(b.file.path().display().to_string()),
            },
        );
    }
    out
}

/// An agent's entry as written: the last item of the `agent_configs` list with its name (the one
/// LLLM keeps), or the value under its name in the older mapping shapes.
fn entry_of<'a>(root: &'a YNode, name: &str) -> Option<&'a YNode> {
    let list = ["agent_configs", "agent_group_configs"]
        .iter()
        .find_map(|k| root.get(k))?;
    match list.as_seq() {
        Some(items) => items
            .iter()
            .rev()
            .find(|it| it.get("name").and_then(|n| n.scalar_text()) == Some(name)),
        None => list.get(name),
    }
}

/// A skills entry's kind, as LLLM tells them apart.
fn skill_kind(s: &str) -> &'static str {
    if s == "*" {
        "all_local"
    } else if s.starts_with("skill_") {
        "anthropic_id"
    } else if s.starts_with("http://") || s.starts_with("https://") {
        "url"
    } else {
        "local"
    }
}

fn agent_data(l: &LllmDoc, a: &EffectiveAgent, raw: Value, own: &str) -> Value {
    let skills: Vec<Value> = match a.get("skills").map(PVal::to_json) {
        Some(Value::String(s)) => vec![json!({"entry": s, "kind": skill_kind(&s)})],
        Some(Value::Array(v)) => v
            .iter()
            .filter_map(|x| x.as_str())
            .map(|s| json!({"entry": s, "kind": skill_kind(s)}))
            .collect(),
        _ => Vec::new(),
    };
    let prompt = l
        .prompt_of(&a.name)
        .map(|p| json!({"path": p.path, "resolved": p.location()}));
    json!({
        "config": raw,
        "file": own,
        "from": a.from,
        "effective": { "config": a.config, "model_args": a.model_args },
        "moved_to_model_args": a.moved_to_model_args,
        "replaced_lists": a.replaced_lists,
        "prompt": prompt,
        "skills": skills,
    })
}

#[cfg(test)]
mod tests {
    use crate::edit::{EditOp, PathSeg};
    use crate::studio::Session;
    use serde_json::json;

    /// The corpus' pkg_alpha package copied to a temp dir: `production.yaml` inherits `default`.
    fn package() -> std::path::PathBuf {
        let src = model::testdata::conformance_dir()
            .join("lllm/main-6845bfa/tests/test_cases/packages/pkg_alpha");
        let dir = std::env::temp_dir()
            .join(format!("sy-lllm-view-{}", std::process::id()))
            .join("pkg_alpha");
        std::fs::create_dir_all(dir.join("configs")).unwrap();
        std::fs::copy(src.join("lllm.toml"), dir.join("lllm.toml")).unwrap();
        for f in ["default.yaml", "production.yaml"] {
            std::fs::copy(src.join("configs").join(f), dir.join("configs").join(f)).unwrap();
        }
        dir
    }

    #[test]
    fn the_inspector_data_tell_this_file_from_its_base_and_follow_edits() {
        let dir = package();
        let path = dir.join("configs/production.yaml");
        let mut s = Session::open(&path).unwrap_or_else(|d| panic!("{}", d.message));
        let v = s.view();
        assert_eq!(v.node_kinds, vec!["agent"], "the palette adds agents");
        let node = |v: &crate::studio::View, id: &str| {
            v.nodes
                .iter()
                .find(|n| n.id == id)
                .unwrap_or_else(|| panic!("no {id}"))
                .data
                .clone()
        };
        let g = node(&v, "global");
        assert_eq!(g["base"], json!("default"));
        let own = g["file"].as_str().unwrap().to_string();
        assert!(own.ends_with("production.yaml"), "{own}");
        let r = node(&v, "reviewer");
        assert_eq!(r["file"], json!(own));
        assert_eq!(
            r["config"]["name"],
            json!("reviewer"),
            "the entry as written"
        );
        let m = &r["effective"]["config"]["model_name"];
        assert_eq!(
            (
                m["value"].clone(),
                m["from"]["section"].clone(),
                m["from"]["file"].clone()
            ),
            (json!("gpt-4o"), json!("global"), json!(own))
        );
        let t = &r["effective"]["model_args"]["temperature"];
        assert_eq!(
            (
                t["value"].clone(),
                t["from"]["section"].clone(),
                t["from"]["line"].clone()
            ),
            (json!(0.0), json!("agent"), json!(19))
        );
        // A knob no config writes is LLLM's default.
        let d = node(&v, "assistant");
        assert_eq!(
            d["effective"]["config"]["max_llm_recall"]["from"]["section"],
            json!("default")
        );

        s.apply(&EditOp::SetField {
            node: "reviewer".into(),
            path: vec![
                PathSeg::Key("model_args".into()),
                PathSeg::Key("temperature".into()),
            ],
            value: Some(json!(0.4)),
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let v = s.view();
        assert_eq!(
            node(&v, "reviewer")["effective"]["model_args"]["temperature"]["value"],
            json!(0.4)
        );
        assert_eq!(
            node(&v, "assistant")["effective"]["model_args"]["temperature"]["value"],
            json!(0.05),
            "the other agent unchanged"
        );
        // The older mapping shape: an agent's entry is the value under its name.
        let old = dir.join("configs/old.yaml");
        std::fs::write(&old, "agent_configs:\n  writer:\n    model_name: gpt-4o\n").unwrap();
        let v = Session::open(&old)
            .unwrap_or_else(|d| panic!("{}", d.message))
            .view();
        assert_eq!(
            node(&v, "writer")["config"],
            json!({"model_name": "gpt-4o"})
        );
        std::fs::remove_dir_all(dir.parent().unwrap()).ok();
    }
}
