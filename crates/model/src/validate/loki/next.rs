//! `next` beyond upstream's validator: where it is ignored, empty or missing, repeated fan-out
//! entries, a map's `over`, input nodes with several entries.

use super::V;
use crate::doc::loki::NodeBody;
use std::collections::HashSet;

impl V<'_> {
    /// Beyond upstream: `next` where it is ignored, empty or missing, repeated fan-out entries, a
    /// map's `over`, input nodes with several `next` entries.
    pub(super) fn next_rules(&mut self) {
        let l = self.l;
        // coyote 0.10.3: a map chain ends at a node without `next`.
        let branches: HashSet<&str> = l
            .map_chains()
            .into_iter()
            .flat_map(|(_, c)| c)
            .map(|j| l.nodes[j].id.value.as_str())
            .collect();
        for (i, n) in l.nodes.iter().enumerate() {
            let kind = n.kind_str();
            match &n.body {
                NodeBody::Approval(_) | NodeBody::End(_) => {
                    if let Some(span) = n.next_span {
                        let msg = if kind == "end" {
                            "`next` on an end node is ignored: the run ends here"
                        } else {
                            "`next` on an approval node is never followed: the answer routes with `routes` / `on_other`"
                        };
                        let d = self
                            .warn("loki-next-ignored", msg, span)
                            .node(n.id.value.clone())
                            .hint("remove `next` (Loki's validator still counts it as an edge for cycles and fan-out checks)");
                        self.push(d);
                    }
                    continue;
                }
                NodeBody::Unknown => continue,
                _ => {}
            }
            if let (Some(span), true) = (n.next_span, n.next_is_list && n.next.is_empty()) {
                if matches!(n.body, NodeBody::Script(_)) && !self.dyn_adj[i].is_empty() {
                    continue;
                }
                let d = self
                    .err("loki-next-empty", "`next: []` continues nowhere: the run fails (\"frontier emptied without reaching an End node\")", span)
                    .node(n.id.value.clone())
                    .hint("name the node to continue with, or remove `next`");
                self.push(d);
                continue;
            }
            // A node listed twice in one fan-out runs once (the frontier is a set).
            let mut seen_next: HashSet<&str> = HashSet::new();
            for t in &n.next {
                if !seen_next.insert(t.value.as_str()) {
                    let d = self
                        .warn("loki-fanout-duplicate", format!("'{}' is listed more than once in `next`; it runs once", t.value), t.span)
                        .node(n.id.value.clone())
                        .hint("remove the repeated entry");
                    self.push(d);
                }
            }
            if let NodeBody::Map(m) = &n.body
                && let Some(over) = &m.over
            {
                let text = over.text.trim();
                let single = expr::template::parse(text).refs.first().is_some_and(|r| r.range == (0..text.len()));
                if !single && !text.is_empty() {
                    let d = self
                        .err(
                            "loki-map-over",
                            "`over` is not a single `{{key}}` reference: it renders to text, and the map fails (\"must resolve to an array, got string\")",
                            over.span(),
                        )
                        .node(n.id.value.clone())
                        .hint("write exactly one reference to a list in state, e.g. `over: \"{{items}}\"`");
                    self.push(d);
                }
            }
            if let NodeBody::Input(_) = &n.body
                && n.next.len() > 1
            {
                {
                    let span = n.next_span.unwrap_or(n.id.span);
                    let d = self
                        .warn(
                            "loki-next-ignored",
                            format!("an input node continues with its first `next` entry only ('{}'); the others never run", n.next[0].value),
                            span,
                        )
                        .node(n.id.value.clone())
                        .hint("give an input node a single `next`; fan out from the node after it");
                    self.push(d);
                }
            }
            let needs_next = matches!(
                n.body,
                NodeBody::Llm(_)
                    | NodeBody::Agent(_)
                    | NodeBody::Rag(_)
                    | NodeBody::Map(_)
                    | NodeBody::Input(_)
            );
            if needs_next && n.next_span.is_none() && !branches.contains(n.id.value.as_str()) {
                let d = self
                    .err(
                        "loki-no-next",
                        format!("{kind} node has no `next`: the run fails when it finishes (\"{kind} node '{}' has no `next` and is not an end node\")", n.id.value),
                        n.id.span,
                    )
                    .node(n.id.value.clone())
                    .hint("add `next: <node>`; only end nodes (and the last node of a map's branch chain) may have none");
                self.push(d);
            }
        }
    }
}
