//! LLLM config lowering: the `global` defaults as a node, each agent a node (its model, prompt
//! and skills as the summary), the configs of the `base` chain as nodes above `global`; `base`
//! inheritance and `global`'s defaults as `inherits` edges. The effective config the canvas'
//! inspector shows is in the document (`LllmDoc::effective`), not in the IR.
//!
//! Lowered for one agent (`graph --agent researcher`), the graph also holds that agent's call
//! loop, the nodes a run of it steps through ([`LOOP`], what `lllm::LllmMachine` names its
//! steps), below the agent: `invoke` and the states it routes to.

use super::{EdgeKind, GEdge, GNode, Graph};
use crate::doc::lllm::{EffectiveAgent, LllmDoc};
use crate::doc::{Dialect, Document};
use syntax::diag::Diagnostic;

/// The id of the `global` node.
pub const GLOBAL: &str = "global";

/// The states of an agent's call loop, as a run names its steps, with their IR kinds.
pub const LOOP: [(&str, &str); 6] = [
    ("invoke", "call_llm"),
    ("exception", "lllm_exception"),
    ("interrupt", "tool_node"),
    ("llm_recall", "lllm_recall"),
    ("success", "lllm_success"),
    ("failure", "lllm_failure"),
];

/// The loop's transitions: from, to, the condition.
const LOOP_EDGES: [(&str, &str, &str); 8] = [
    ("invoke", "interrupt", "tool calls"),
    ("invoke", "exception", "parse error"),
    ("invoke", "llm_recall", "API error"),
    ("invoke", "success", "final reply"),
    ("invoke", "failure", "budget spent"),
    ("exception", "invoke", "retry on a fork"),
    ("interrupt", "invoke", "results fed back"),
    ("llm_recall", "invoke", "after back-off"),
];

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

/// Whether `agent` asks for an agent's call loop (not the whole config by its name).
fn want_loop(graph: &str, agent: Option<&str>) -> bool {
    agent.is_some_and(|a| a != graph)
}

/// The call loop of the agent at `aix`: its states as derived nodes, the agent's edge into `invoke`.
fn add_loop(g: &mut Graph, aix: petgraph::stable_graph::NodeIndex, a: &EffectiveAgent, order: usize) {
    let mut ix = std::collections::HashMap::new();
    for (i, (id, kind)) in LOOP.iter().enumerate() {
        let summary = match *id {
            "invoke" => format!("LLM call · {}", a.str("model_name").unwrap_or("no model")),
            "exception" => format!("retry on a forked dialog · max_exception_retry {}", num(a, "max_exception_retry")),
            "interrupt" => format!("tools run, results fed back · max_interrupt_steps {}", num(a, "max_interrupt_steps")),
            "llm_recall" => format!("back-off, call again · max_llm_recall {}", num(a, "max_llm_recall")),
            "success" => "the reply is delivered".into(),
            _ => "the call failed".into(),
        };
        let n = g.add_node(GNode { id: id.to_string(), kind: kind.to_string(), derived: true, summary, span: None, order: order + i, dynamic_next: false });
        ix.insert(*id, n);
    }
    g.add_edge(aix, ix["invoke"], GEdge { kind: EdgeKind::Static, label: Some("runs".into()), derived: true, dynamic: false, fanout: false, order: 0, span: None });
    for (i, (from, to, why)) in LOOP_EDGES.iter().enumerate() {
        g.add_edge(ix[from], ix[to], GEdge { kind: EdgeKind::Branch, label: Some(why.to_string()), derived: true, dynamic: false, fanout: false, order: i, span: None });
    }
}

fn num(a: &EffectiveAgent, key: &str) -> String {
    a.get(key).map(|v| v.to_json().to_string()).unwrap_or_else(|| "?".into())
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
    let mut g = Graph::new(Dialect::Lllm, name.clone());
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
    let mut picked = None;
    for (i, a) in l.effective.agents.iter().enumerate() {
        let span = (a.from.file == own).then_some(a.from.span).flatten();
        let ix = g.add_node(GNode { id: agent_id(&a.name), kind: "agent".into(), derived: false, summary: agent_summary(a), span, order: first + i, dynamic_next: false });
        g.add_edge(gix, ix, edge("defaults", i));
        if agent == Some(a.name.as_str()) && want_loop(&name, agent) {
            picked = Some((ix, a));
        }
    }
    let mut diags = Vec::new();
    if let Some((aix, a)) = picked {
        let clash: Vec<&str> = LOOP.iter().map(|(n, _)| *n).filter(|n| l.effective.agents.iter().any(|x| agent_id(&x.name) == *n)).collect();
        if clash.is_empty() {
            add_loop(&mut g, aix, a, first + l.effective.agents.len());
        } else {
            let mut d = Diagnostic::warning("lllm-loop-names", format!("the call loop of `{}` is not drawn: agents named {} share its states' names", a.name, clash.join(", ")))
                .hint("rename those agents to see the loop a run steps through");
            if let Some(f) = &doc.file {
                d = d.at(f, syntax::source::Span::at(0));
            }
            diags.push(d);
        }
    }
    (Some(g), diags)
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
        // A view may be drawn for the config (its name) or for one of its agents.
        assert_eq!(graph::agent_names(&d), ["x"]);
        assert_eq!(graph::selectable_agents(&d), ["x", "a", "global"]);
        // The whole config by its name: no loop; one agent: its call loop below it.
        let (whole, _) = graph::lower(&d, Some("x"));
        assert_eq!(export::to_json(&whole.unwrap())["nodes"].as_array().unwrap().len(), 3);
        let (one, diags) = graph::lower(&d, Some("a"));
        assert!(diags.is_empty());
        let j = export::to_json(&one.unwrap());
        let ids: Vec<&str> = j["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["global", "a", "agent:global", "invoke", "exception", "interrupt", "llm_recall", "success", "failure"]);
        let runs = j["edges"].as_array().unwrap().iter().find(|e| e["to"] == "invoke" && e["from"] == "a");
        assert!(runs.is_some(), "{j}");
        assert_eq!(j["edges"].as_array().unwrap().len(), 2 + 1 + 8);
    }
}
