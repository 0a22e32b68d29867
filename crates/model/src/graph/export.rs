//! Export the IR as JSON, Mermaid or Graphviz DOT.

use super::{EdgeKind, Graph};
use serde_json::{Value, json};

/// `{"nodes":[{"id","kind","derived",...,"lanes"?}],"edges":[{"from","to","kind","label","derived","dynamic",...}],"lanes"?:[{"map","nodes"}]}`
pub fn to_json(g: &Graph) -> Value {
    let nodes: Vec<Value> = g
        .nodes_ordered()
        .into_iter()
        .map(|ix| {
            let n = &g.g[ix];
            let mut v = json!({"id": n.id, "kind": n.kind, "derived": n.derived});
            if !n.summary.is_empty() {
                v["summary"] = json!(n.summary);
            }
            if n.dynamic_next {
                v["dynamic_next"] = json!(true);
            }
            let lanes = g.lanes_of(&n.id);
            if !lanes.is_empty() {
                v["lanes"] = json!(lanes);
            }
            v
        })
        .collect();
    let edges: Vec<Value> = g
        .edges_ordered()
        .into_iter()
        .map(|(s, t, e)| {
            let mut v = json!({
                "from": g.g[s].id,
                "to": g.g[t].id,
                "kind": e.kind.as_str(),
                "label": e.label,
                "derived": e.derived,
                "dynamic": e.dynamic,
            });
            if e.fanout {
                v["fanout"] = json!(true);
            }
            v
        })
        .collect();
    let mut out = json!({
        "dialect": g.dialect.as_str(),
        "agent": g.agent,
        "entry": g.entry.map(|ix| g.g[ix].id.clone()),
        "nodes": nodes,
        "edges": edges,
    });
    if !g.lanes.is_empty() {
        out["lanes"] = json!(g.lanes);
    }
    out
}

fn mermaid_id(id: &str) -> String {
    let mut s = String::from("n_");
    for ch in id.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            s.push(ch);
        } else {
            s.push_str(&format!("_{:x}_", ch as u32));
        }
    }
    s
}

fn mermaid_text(t: &str) -> String {
    let one_line: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
    let clipped: String = if one_line.chars().count() > 60 {
        one_line.chars().take(57).collect::<String>() + "..."
    } else {
        one_line
    };
    clipped.replace('"', "#quot;").replace('|', "#124;")
}

pub fn to_mermaid(g: &Graph) -> String {
    let mut out = String::from("flowchart TD\n");
    for ix in g.nodes_ordered() {
        let n = &g.g[ix];
        let id = mermaid_id(&n.id);
        let label = if n.id == super::START || n.id == super::END {
            n.id.clone()
        } else {
            format!("{}<br/><i>{}</i>", mermaid_text(&n.id), mermaid_text(&n.kind))
        };
        let shape = if n.id == super::START || n.id == super::END || n.kind == "end" {
            format!("{id}([\"{label}\"])")
        } else {
            format!("{id}[\"{label}\"]")
        };
        out.push_str("    ");
        out.push_str(&shape);
        out.push('\n');
        if n.derived {
            out.push_str(&format!("    class {id} derived\n"));
        }
    }
    for (s, t, e) in g.edges_ordered() {
        let arrow = if e.dynamic {
            "-.->"
        } else if matches!(e.kind, EdgeKind::Fallback) || e.derived {
            "-.->"
        } else {
            "-->"
        };
        let (a, b) = (mermaid_id(&g.g[s].id), mermaid_id(&g.g[t].id));
        match e.label.as_deref().filter(|l| !l.is_empty()) {
            Some(l) => out.push_str(&format!("    {a} {arrow}|\"{}\"| {b}\n", mermaid_text(l))),
            None => out.push_str(&format!("    {a} {arrow} {b}\n")),
        }
    }
    out.push_str("    classDef derived stroke-dasharray: 4 3\n");
    out
}

fn dot_str(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

pub fn to_dot(g: &Graph) -> String {
    let mut out = format!("digraph {} {{\n    rankdir=TB;\n    node [shape=box, style=rounded];\n", dot_str(&g.agent));
    for ix in g.nodes_ordered() {
        let n = &g.g[ix];
        let mut attrs = vec![format!("label={}", dot_str(&format!("{}\n{}", n.id, n.kind)))];
        if n.id == super::START || n.id == super::END || n.kind == "end" {
            attrs.push("shape=oval".into());
        }
        if n.derived {
            attrs.push("style=\"rounded,dashed\"".into());
        }
        out.push_str(&format!("    {} [{}];\n", dot_str(&n.id), attrs.join(", ")));
    }
    for (s, t, e) in g.edges_ordered() {
        let mut attrs = Vec::new();
        if let Some(l) = e.label.as_deref().filter(|l| !l.is_empty()) {
            attrs.push(format!("label={}", dot_str(l)));
        }
        if e.dynamic || e.derived || e.kind == EdgeKind::Fallback {
            attrs.push("style=dashed".into());
        }
        let attrs = if attrs.is_empty() { String::new() } else { format!(" [{}]", attrs.join(", ")) };
        out.push_str(&format!("    {} -> {}{};\n", dot_str(&g.g[s].id), dot_str(&g.g[t].id), attrs));
    }
    out.push_str("}\n");
    out
}
