//! LLLM config lowering: the `global` defaults as a node, each agent a node (its model, prompt
//! and skills as the summary), the configs of the `base` chain as nodes above `global`; `base`
//! inheritance and `global`'s defaults as `inherits` edges. The effective config the canvas'
//! inspector shows is in the document (`LllmDoc::effective`), not in the IR.

use super::{EdgeKind, GEdge, GNode, Graph};
use crate::doc::lllm::{EffectiveAgent, LllmDoc};
use crate::doc::{Dialect, Document};
use syntax::diag::Diagnostic;

/// The id of the `global` node.
pub const GLOBAL: &str = "global";

/// The graph's name: the config's file stem.
pub fn graph_name(doc: &Document) -> String {
    doc.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "config".into())
}

/// The id of an agent's node (`agent:global` when an agent is called `global`).
pub fn agent_id(name: &str) -> String {
    if name == GLOBAL || name.starts_with("base:") { format!("agent:{name}") } else { name.to_string() }
}

/// The id of a base config's node.
pub fn base_id(name: &str) -> String {
    format!("base:{name}")
}

/// `gpt-4o · system/analyzer · skills: pdf, commit`.
pub fn agent_summary(a: &EffectiveAgent) -> String {
    let mut parts = vec![a.str("model_name").unwrap_or("no model").to_string()];
    if let Some(p) = a.str("system_prompt_path") {
        parts.push(p.to_string());
    } else if a.str("system_prompt").is_some() {
        parts.push("inline prompt".into());
    }
    if let Some(s) = a.get("skills") {
        let j = s.to_json();
        let text = match &j {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(v) => v.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(", "),
            _ => String::new(),
        };
        if !text.is_empty() {
            parts.push(format!("skills: {text}"));
        }
    }
    parts.join(" · ")
}

fn edge(label: &str, order: usize) -> GEdge {
    GEdge { kind: EdgeKind::Inherits, label: Some(label.into()), derived: false, dynamic: false, fanout: false, order, span: None }
}

pub fn lower(doc: &Document, l: &LllmDoc, agent: Option<&str>) -> (Option<Graph>, Vec<Diagnostic>) {
    let name = graph_name(doc);
    if let Some(want) = agent {
        if want != name && l.agent(want).is_none() {
            let names: Vec<&str> = l.effective.agents.iter().map(|a| a.name.as_str()).collect();
            let mut d = Diagnostic::error("agent-not-found", format!("no agent named `{want}` in this config"))
                .hint(format!("an LLLM config is drawn whole; its agents: {}", if names.is_empty() { "none".into() } else { names.join(", ") }));
            if let Some(f) = &doc.file {
                d = d.at(f, syntax::source::Span::at(0));
            }
            return (None, vec![d]);
        }
    }
    let mut g = Graph::new(Dialect::Lllm, name);
    let own = doc.file.as_ref().map(|f| f.path().display().to_string()).unwrap_or_default();
    let global_model = l.effective.global.get("model_name").map(|v| v.to_json());
    let keys = l.effective.global.len();
    let gsum = match global_model.as_ref().and_then(|m| m.as_str()) {
        Some(m) => format!("{m} · {keys} default{}", if keys == 1 { "" } else { "s" }),
        None => format!("{keys} default{}", if keys == 1 { "" } else { "s" }),
    };
    let gix = g.add_node(GNode { id: GLOBAL.into(), kind: "global".into(), derived: l.global.is_none(), summary: gsum, span: l.global, order: 0, dynamic_next: false });
    // Bases, nearest first, each above the config naming it.
    let mut below = gix;
    let bases = &l.layers[..l.layers.len().saturating_sub(1)];
    for (i, b) in bases.iter().rev().enumerate() {
        let ix = g.add_node(GNode {
            id: base_id(&b.name),
            kind: "base".into(),
            derived: false,
            summary: b.file.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            span: None,
            order: 1 + i,
            dynamic_next: false,
        });
        g.add_edge(ix, below, edge("base", 0));
        below = ix;
    }
    g.entry = Some(below);
    let first = 1 + bases.len();
    for (i, a) in l.effective.agents.iter().enumerate() {
        let span = (a.from.file == own).then_some(a.from.span).flatten();
        let ix = g.add_node(GNode { id: agent_id(&a.name), kind: "agent".into(), derived: false, summary: agent_summary(a), span, order: first + i, dynamic_next: false });
        g.add_edge(gix, ix, edge("defaults", i));
    }
    (Some(g), Vec::new())
}

#[cfg(test)]
mod tests {
    use crate::doc;
    use crate::graph::{self, export};
    use std::path::Path;

    #[test]
    fn global_agents_and_defaults_edges() {
        let d = doc::load_str(
            Path::new("/nowhere/configs/x.yaml"),
            "global:\n  model_name: gpt-4o\nagent_configs:\n  - name: a\n    system_prompt: hi\n    skills: [pdf]\n  - name: global\n    system_prompt_path: sys/b\n",
        );
        let (g, diags) = graph::lower(&d, None);
        assert!(diags.is_empty());
        let j = export::to_json(&g.unwrap());
        assert_eq!(j["dialect"], "lllm");
        assert_eq!(j["entry"], "global");
        let ids: Vec<&str> = j["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["global", "a", "agent:global"]);
        assert_eq!(j["nodes"][1]["summary"], "gpt-4o · inline prompt · skills: pdf");
        let edges: Vec<(String, String, String)> = j["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["from"].as_str().unwrap().into(), e["to"].as_str().unwrap().into(), e["kind"].as_str().unwrap().into()))
            .collect();
        assert_eq!(edges, [("global".into(), "a".into(), "inherits".into()), ("global".into(), "agent:global".into(), "inherits".into())]);
        let (none, errs) = graph::lower(&d, Some("nope"));
        assert!(none.is_none());
        assert_eq!(errs[0].code, "agent-not-found");
    }
}
