//! Lower a Loki graph into the IR.
//!
//! One IR node per declared node (no `__start__`/`__end__` markers; `entry` is the `start`
//! node). Edges: `next` (fan-out when the list has more than one entry), approval `routes`
//! (labelled by option, `options` order then the other route keys) and `on_other`, script/llm/
//! agent `fallback`, map `branch`, and script `_next` as dynamic edges. Each map's per-item
//! chain (coyote 0.10.3) is its lane (`Graph::lanes`). `_next` targets come from the
//! node's `x-next` list when written, else are inferred from the script source (node ids that
//! appear as string literals in a script that mentions `_next`). Edges to unknown nodes are left
//! out; the validator reports them.

use super::{EdgeKind, GEdge, GNode, Graph};
use crate::doc::loki::{LokiDoc, LokiNode, NodeBody, TargetKind};
use crate::doc::{Dialect, Document};
use syntax::source::Span;

/// Scripts larger than this are not scanned for `_next` targets.
const MAX_SCRIPT_SCAN_BYTES: u64 = 1024 * 1024;

/// A possible `_next` target: node id and, for `x-next`, the span of the entry.
pub type NextTarget = (String, Option<Span>);

/// Where a script's possible `_next` targets come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamicSource {
    /// The node's `x-next` list.
    Declared,
    /// Inferred from the script file.
    Inferred,
}

/// The possible `_next` targets of a script node (existing nodes only, declaration order of the
/// source: `x-next` order, or node order when inferred), with the span of the `x-next` entry.
pub fn script_next_targets(
    l: &LokiDoc,
    node: &LokiNode,
) -> Option<(DynamicSource, Vec<NextTarget>)> {
    let s = node.script()?;
    if let Some(xs) = &s.x_next {
        let mut out: Vec<NextTarget> = Vec::new();
        for x in xs {
            if l.has_node(&x.value) && !out.iter().any(|(t, _)| *t == x.value) {
                out.push((x.value.clone(), Some(x.span)));
            }
        }
        return Some((DynamicSource::Declared, out));
    }
    let path = s.script_path.as_ref()?;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SCRIPT_SCAN_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let source = String::from_utf8_lossy(&bytes);
    let ids: Vec<&str> = l.node_ids().collect();
    Some((
        DynamicSource::Inferred,
        infer_next_targets(&source, &ids)
            .into_iter()
            .map(|t| (t, None))
            .collect(),
    ))
}

/// Node ids that occur as string literals (`"id"`, `'id'`, `\"id\"`) in a script that mentions
/// `_next`, in the order of `ids`.
pub fn infer_next_targets(source: &str, ids: &[&str]) -> Vec<String> {
    if !source.contains("_next") {
        return Vec::new();
    }
    let b = source.as_bytes();
    let mut out = Vec::new();
    for id in ids {
        if id.is_empty() {
            continue;
        }
        let quoted = source.match_indices(id).any(|(pos, _)| {
            let before = pos.checked_sub(1).map(|i| b[i]);
            let after = b.get(pos + id.len()).copied();
            matches!(before, Some(b'"' | b'\'')) && matches!(after, Some(b'"' | b'\'' | b'\\'))
        });
        if quoted && !out.iter().any(|o: &String| o == id) {
            out.push(id.to_string());
        }
    }
    out
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() > 80 {
        line.chars().take(77).collect::<String>() + "..."
    } else {
        line.to_string()
    }
}

/// A one-line summary of a node for the canvas.
pub fn summary(l: &LokiDoc, n: &LokiNode) -> String {
    match &n.body {
        NodeBody::Llm(x) => x
            .model
            .as_ref()
            .or(l.model.as_ref())
            .map(|m| m.value.clone())
            .unwrap_or_else(|| {
                x.prompt
                    .as_ref()
                    .map(|p| first_line(&p.text))
                    .unwrap_or_default()
            }),
        NodeBody::Script(s) => s
            .script
            .as_ref()
            .map(|p| p.value.clone())
            .unwrap_or_default(),
        NodeBody::Approval(a) => a
            .question
            .as_ref()
            .map(|q| first_line(&q.text))
            .unwrap_or_default(),
        NodeBody::Input(i) => i
            .question
            .as_ref()
            .map(|q| first_line(&q.text))
            .unwrap_or_default(),
        NodeBody::Agent(a) => a
            .agent
            .as_ref()
            .map(|a| a.value.clone())
            .unwrap_or_default(),
        NodeBody::Rag(r) => first_line(
            &r.documents
                .iter()
                .map(|d| d.value.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        NodeBody::End(e) => e
            .output
            .as_ref()
            .map(|o| first_line(&o.text))
            .unwrap_or_default(),
        NodeBody::Map(m) => format!(
            "map over {} → {}",
            m.over.as_ref().map(|o| o.text.trim()).unwrap_or("?"),
            m.branch.as_ref().map(|b| b.value.as_str()).unwrap_or("?")
        ),
        NodeBody::Unknown => String::new(),
    }
}

/// An edge before its target is resolved: (kind, target, label, derived, dynamic, fanout, span).
type PendingEdge = (EdgeKind, String, Option<String>, bool, bool, bool, Span);

pub fn lower(_doc: &Document, l: &LokiDoc) -> Graph {
    let mut g = Graph::new(Dialect::Loki, l.name.clone().unwrap_or_default());
    for (order, n) in l.nodes.iter().enumerate() {
        let kind = if n.kind.value.is_empty() {
            "unknown".to_string()
        } else {
            n.kind.value.clone()
        };
        g.add_node(GNode {
            id: n.id.value.clone(),
            kind,
            derived: false,
            summary: summary(l, n),
            span: Some(n.id.span),
            order,
            dynamic_next: matches!(n.body, NodeBody::Script(_)),
        });
    }
    g.entry = l
        .start
        .as_ref()
        .and_then(|s| g.index.get(&s.value).copied());
    for (m, chain) in l.map_chains() {
        g.lanes.push(super::Lane {
            map: l.nodes[m].id.value.clone(),
            nodes: chain.iter().map(|&j| l.nodes[j].id.value.clone()).collect(),
        });
    }

    for n in &l.nodes {
        let Some(&from) = g.index.get(&n.id.value) else {
            continue;
        };
        let mut edges: Vec<PendingEdge> = Vec::new();
        let fanout = n.next.len() > 1;
        if let Some((src, targets)) = script_next_targets(l, n) {
            for (t, span) in targets {
                let span = span.unwrap_or(n.id.span);
                edges.push((
                    EdgeKind::Dynamic,
                    t,
                    Some("_next".into()),
                    src == DynamicSource::Inferred,
                    true,
                    false,
                    span,
                ));
            }
        }
        let mut branch = None;
        for t in n.targets() {
            let (kind, label, derived) = match &t.kind {
                TargetKind::Next => (EdgeKind::Next, None, false),
                TargetKind::Route(opt) => (EdgeKind::Route, Some(opt.clone()), true),
                TargetKind::OnOther => (EdgeKind::OnOther, Some("other".to_string()), true),
                TargetKind::ScriptFallback
                | TargetKind::LlmFallback
                | TargetKind::AgentFallback => {
                    (EdgeKind::Fallback, Some("fallback".to_string()), true)
                }
                TargetKind::MapBranch => {
                    branch = Some((
                        EdgeKind::MapBranch,
                        t.to.value.clone(),
                        Some("each".to_string()),
                        false,
                        false,
                        false,
                        t.to.span,
                    ));
                    continue;
                }
            };
            let is_fanout = kind == EdgeKind::Next && fanout;
            edges.push((
                kind,
                t.to.value.clone(),
                label,
                derived,
                false,
                is_fanout,
                t.to.span,
            ));
        }
        if let Some(b) = branch {
            // The map calls its branch before it continues with `next`.
            edges.insert(0, b);
        }
        let mut order = 0;
        let mut seen: Vec<(EdgeKind, String, Option<String>)> = Vec::new();
        for (kind, target, label, derived, dynamic, fanout, span) in edges {
            let Some(&to) = g.index.get(&target) else {
                continue;
            };
            let key = (kind, target, label.clone());
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            g.add_edge(
                from,
                to,
                GEdge {
                    kind,
                    label,
                    derived,
                    dynamic,
                    fanout,
                    order,
                    span: Some(span),
                },
            );
            order += 1;
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Model, load_path, load_str};
    use std::path::Path;

    fn fixture(rel: &str) -> std::path::PathBuf {
        crate::testdata::workspace_root()
            .join("tests/fixtures/loki")
            .join(rel)
    }

    /// (from, to, kind, label, derived, dynamic, fanout, order)
    type E = (
        String,
        String,
        &'static str,
        Option<String>,
        bool,
        bool,
        bool,
        usize,
    );

    fn edges(g: &Graph) -> Vec<E> {
        g.edges_ordered()
            .into_iter()
            .map(|(s, t, e)| {
                (
                    g.g[s].id.clone(),
                    g.g[t].id.clone(),
                    e.kind.as_str(),
                    e.label.clone(),
                    e.derived,
                    e.dynamic,
                    e.fanout,
                    e.order,
                )
            })
            .collect()
    }

    fn has(es: &[E], from: &str, to: &str, kind: &str) -> Option<E> {
        es.iter()
            .find(|e| e.0 == from && e.1 == to && e.2 == kind)
            .cloned()
    }

    #[test]
    fn fanout_approval_map_script_ir() {
        let doc = load_path(&fixture("agents/demo"));
        assert!(
            !doc.diagnostics.iter().any(|d| d.is_error()),
            "{:#?}",
            doc.diagnostics
        );
        let Model::Loki(l) = &doc.model else {
            panic!("not loki")
        };
        let g = lower(&doc, l);
        let ids: Vec<_> = g
            .nodes_ordered()
            .into_iter()
            .map(|ix| g.g[ix].id.clone())
            .collect();
        assert_eq!(
            ids,
            [
                "route", "split", "left", "right", "join", "ask", "each", "worker", "gate", "done",
                "rejected"
            ]
        );
        assert_eq!(g.entry.map(|ix| g.g[ix].id.as_str()), Some("route"));
        assert!(g.node("route").unwrap().dynamic_next && g.node("join").unwrap().dynamic_next);
        assert!(!g.node("left").unwrap().dynamic_next);
        assert_eq!(g.node("route").unwrap().summary, "scripts/route.sh");
        assert_eq!(
            g.node("each").unwrap().summary,
            "map over {{items}} → worker"
        );
        assert_eq!(g.node("left").unwrap().summary, "openai:gpt-4o-mini");
        assert_eq!(g.node("ask").unwrap().summary, "Continue?");
        let es = edges(&g);
        // Fan-out.
        let l1 = has(&es, "split", "left", "next").unwrap();
        let r1 = has(&es, "split", "right", "next").unwrap();
        assert!(l1.6 && r1.6 && l1.7 == 0 && r1.7 == 1);
        assert!(
            !has(&es, "left", "join", "next").unwrap().6,
            "a single next is not a fan-out"
        );
        // Approval routes in options order, then on_other.
        let yes = has(&es, "ask", "each", "route").unwrap();
        assert_eq!((yes.3.as_deref(), yes.4, yes.7), (Some("yes"), true, 0));
        let no = has(&es, "ask", "rejected", "route").unwrap();
        assert_eq!((no.3.as_deref(), no.7), (Some("no"), 1));
        let other = has(&es, "ask", "rejected", "on_other").unwrap();
        assert_eq!(
            (other.3.as_deref(), other.4, other.7),
            (Some("other"), true, 2)
        );
        // Map branch first, then next.
        let each = has(&es, "each", "worker", "map_branch").unwrap();
        assert_eq!((each.3.as_deref(), each.7), (Some("each"), 0));
        assert_eq!(has(&es, "each", "gate", "next").unwrap().7, 1);
        // Fallback.
        let fb = has(&es, "right", "rejected", "fallback").unwrap();
        assert_eq!((fb.3.as_deref(), fb.4), (Some("fallback"), true));
        // Inferred `_next` from scripts/route.sh: split and rejected are quoted in it.
        let dyns: Vec<_> = es
            .iter()
            .filter(|e| e.0 == "route" && e.2 == "dynamic")
            .collect();
        assert_eq!(
            dyns.iter().map(|e| e.1.as_str()).collect::<Vec<_>>(),
            ["split", "rejected"]
        );
        assert!(
            dyns.iter()
                .all(|e| e.3.as_deref() == Some("_next") && e.4 && e.5)
        );
        // Declared `x-next` on join: not derived, in x-next order.
        let jd: Vec<_> = es
            .iter()
            .filter(|e| e.0 == "join" && e.2 == "dynamic")
            .collect();
        assert_eq!(
            jd.iter().map(|e| e.1.as_str()).collect::<Vec<_>>(),
            ["ask", "done"]
        );
        assert!(jd.iter().all(|e| !e.4 && e.5));
        // gate has no x-next and its script does not exist: no dynamic edges.
        assert!(!es.iter().any(|e| e.0 == "gate" && e.2 == "dynamic"));
        // The export marks fan-out and dynamic edges.
        let j = crate::graph::export::to_json(&g);
        assert!(
            j["edges"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["fanout"] == true)
        );
        assert_eq!(j["entry"], "route");
    }

    #[test]
    fn unknown_targets_are_left_out() {
        let doc = load_str(
            Path::new("/tmp/x/graph.yaml"),
            "name: t\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: [nowhere, b]\n  b:\n    type: end\n",
        );
        let Model::Loki(l) = &doc.model else { panic!() };
        let g = lower(&doc, l);
        let es = edges(&g);
        assert_eq!(es.len(), 1);
        assert!(es[0].6, "still part of a declared fan-out");
    }

    #[test]
    fn inference_needs_quotes_and_next() {
        let ids = ["implement", "end_failure", "verify"];
        let src = "#!/bin/bash\nif ok; then echo '{\"_next\": \"implement\"}'; else echo \"{\\\"_next\\\": \\\"end_failure\\\"}\"; fi\n# verify later\n";
        assert_eq!(infer_next_targets(src, &ids), ["implement", "end_failure"]);
        assert!(
            infer_next_targets("print('implement')", &ids).is_empty(),
            "no _next, no routing"
        );
        let py = "import json\nprint(json.dumps({'_next': 'verify'}))\n";
        assert_eq!(infer_next_targets(py, &ids), ["verify"]);
    }
}
