//! Map nodes: per-item branch chains (upstream 19 `map_subgraphs`, coyote 0.10.3) and the
//! output key a chain never writes.

use super::V;
use crate::doc::loki::NodeBody;
use std::collections::VecDeque;
use syntax::source::Span;

impl V<'_> {
    /// A map's chain with, per node, the span of the reference that first reached it (the
    /// map's `branch` for the entry, else a `next` / `fallback` entry of a chain node).
    fn chain_with_spans(&self, entry: usize, entry_span: Span) -> Vec<(usize, Span)> {
        let l = self.l;
        let mut out: Vec<(usize, Span)> = vec![(entry, entry_span)];
        let mut q = VecDeque::from([entry]);
        while let Some(u) = q.pop_front() {
            let n = &l.nodes[u];
            for t in n.next.iter().chain(n.fallback()) {
                if let Some(j) = self.idx(&t.value)
                    && !out.iter().any(|(k, _)| *k == j)
                {
                    out.push((j, t.span));
                    q.push_back(j);
                }
            }
        }
        out
    }

    /// Nodes on the main flow: reachable from `start` over declared edges other than a map's
    /// `branch` (and not through a map chain).
    fn main_flow(&self) -> Vec<bool> {
        let mut seen = vec![false; self.l.nodes.len()];
        let Some(s) = self.start_index() else {
            return seen;
        };
        let mut q = VecDeque::from([s]);
        seen[s] = true;
        while let Some(u) = q.pop_front() {
            for e in &self.adj[u] {
                if !e.branch && !seen[e.to] {
                    seen[e.to] = true;
                    q.push_back(e.to);
                }
            }
        }
        seen
    }

    /// Upstream 19 (coyote 0.10.3 `map_subgraphs`): a map's branch is the entry of a per-item
    /// chain (every node reachable from it over `next` and `fallback`). Chain nodes are llm,
    /// agent, rag or script nodes, without fan-out; none is also on the main flow; `as`
    /// differs from `output_key`.
    pub(super) fn map_subgraphs(&mut self) {
        let l = self.l;
        let main = self.main_flow();
        for n in &l.nodes {
            let Some(m) = n.map() else { continue };
            if let Some(a) = &m.as_key
                && a.value == m.output_key()
            {
                let span = m.output_key.as_ref().map(|k| k.span).unwrap_or(a.span);
                let d = self
                    .err(
                        "loki-map-as",
                        format!("map node's `as` and `output_key` are both '{}': the item key is removed before the chain starts, so the chain could never read its item", a.value),
                        span,
                    )
                    .node(n.id.value.clone())
                    .hint("give `as` and `output_key` different names (e.g. `as: item`, `output_key: result`)");
                self.push(d);
            }
            let Some(bref) = &m.branch else { continue };
            let Some(entry) = self.idx(&bref.value) else {
                continue;
            };
            for (j, span) in self.chain_with_spans(entry, bref.span) {
                let c = &l.nodes[j];
                let kind = c.kind_str();
                if matches!(kind, "approval" | "input" | "end" | "map") {
                    let why = match kind {
                        "approval" | "input" => "it would ask the user once per item, concurrently",
                        "end" => "a chain ends at a node with no successor and the map collects its result; an end node would end the whole run",
                        _ => "nested map fan-outs are not supported",
                    };
                    let first = if j == entry {
                        format!("map branch '{}' is {} node", c.id.value, a_kind(kind))
                    } else {
                        format!("the branch chain of map '{}' reaches '{}', which is {} node", n.id.value, c.id.value, a_kind(kind))
                    };
                    let d = self
                        .err("loki-map-branch", format!("{first}; chain nodes must be llm, agent, rag or script nodes: {why}"), span)
                        .node(n.id.value.clone())
                        .hint("end the chain at the node that produces the item's result (no `next`); put interaction, end and map nodes after the map");
                    self.push(d);
                    continue;
                }
                if c.is_fanout() {
                    let d = self
                        .err(
                            "loki-map-branch",
                            format!("'{}' is in the branch chain of map '{}' and fans out: a chain runs one node at a time per item", c.id.value, n.id.value),
                            c.next_span.unwrap_or(c.id.span),
                        )
                        .node(c.id.value.clone())
                        .hint("give chain nodes a single `next`; fan out after the map");
                    self.push(d);
                }
                if main[j] {
                    let d = self
                        .err(
                            "loki-map-branch",
                            format!("'{}' is in the branch chain of map '{}' and also reachable from `start` on the main flow", c.id.value, n.id.value),
                            c.id.span,
                        )
                        .node(c.id.value.clone())
                        .hint("a chain node runs only per item inside its map: route the main flow elsewhere, or give the main flow its own node");
                    self.push(d);
                }
            }
        }
    }

    /// Beyond upstream: a chain that never visibly writes the map's `output_key` (it is removed
    /// from each item's state before the chain starts, and an item that ends without it fails).
    /// `output` in particular is removed again after each node's `state_updates`.
    pub(super) fn map_output_trap(&mut self) {
        let l = self.l;
        for n in &l.nodes {
            let Some(m) = n.map() else { continue };
            let Some(bref) = &m.branch else { continue };
            let chain = l.map_chain(&bref.value);
            if chain.is_empty() {
                continue;
            }
            let key = m.output_key();
            let mut opaque = false;
            let mut writes = false;
            for &j in &chain {
                let c = &l.nodes[j];
                match &c.body {
                    NodeBody::Script(_) | NodeBody::Unknown => opaque = true,
                    _ => {}
                }
                if c.write_set().iter().any(|k| k == key) {
                    writes = true;
                }
                // An output schema without properties: nothing can be told.
                if c.output_schema().is_some() && c.output_schema_properties().is_empty() {
                    opaque = true;
                }
            }
            if writes || opaque {
                continue;
            }
            let hint = if key == "output" {
                format!("set `output_key: result` on the map and `state_updates: {{result: \"{{{{output}}}}\"}}` on the chain's last node ('{}' when it is one node)", bref.value)
            } else {
                format!("write `{key}` in the `state_updates` of the chain's last node, e.g. `{key}: \"{{{{output}}}}\"`")
            };
            let d = self
                .warn(
                    "loki-map-output",
                    format!("no node of the branch chain of map '{}' writes its output_key '{key}': it is removed from each item's state before the chain starts, so every item fails", n.id.value),
                    bref.span,
                )
                .node(n.id.value.clone())
                .hint(hint);
            self.push(d);
        }
    }
}

/// "a script node", "an llm node".
fn a_kind(kind: &str) -> String {
    match kind {
        "agent" | "approval" | "input" | "llm" | "end" => format!("an {kind}"),
        _ => format!("a {kind}"),
    }
}
