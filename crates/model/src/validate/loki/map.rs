//! Map nodes: the branch contract (upstream step 12) and the `output` trap of reference §9.2.

use super::V;
use crate::doc::loki::NodeBody;

impl V<'_> {
    /// Upstream 12: the map branch contract (node type, no `next`, writes, output schema).
    pub(super) fn map_branches(&mut self) {
        let l = self.l;
        for n in &l.nodes {
            let Some(m) = n.map() else { continue };
            let Some(bref) = &m.branch else { continue };
            let Some(b) = self.node_by(&bref.value) else {
                continue;
            };
            let kind = b.kind_str();
            if matches!(kind, "approval" | "input" | "end" | "map") {
                let d = self
                    .err(
                        "loki-map-branch",
                        format!("map branch '{}' is {} node; a map branch must be an llm, agent, rag or script node", b.id.value, a_kind(kind)),
                        bref.span,
                    )
                    .node(n.id.value.clone())
                    .hint("point `branch` at the node that processes one item; interaction, end and nested map nodes cannot run per item");
                self.push(d);
                continue;
            }
            if matches!(b.body, NodeBody::Unknown) {
                continue;
            }
            if let Some(span) = b.next_span {
                let d = self
                    .err(
                        "loki-map-branch",
                        format!(
                            "node '{}' is the branch of map '{}' and must not declare `next`: a map branch is atomic (the map collects its output and continues with its own `next`)",
                            b.id.value, n.id.value
                        ),
                        span,
                    )
                    .node(b.id.value.clone())
                    .hint("remove `next` from the branch node; put the follow-up on the map node's `next`");
                self.push(d);
            }
            let ok = m.output_key();
            for (k, _) in b.state_updates.iter().flatten() {
                if k.value != ok {
                    let d = self
                        .err(
                            "loki-map-branch",
                            format!(
                                "map branch '{}' writes state key '{}' in `state_updates`; a map branch may only write the map's output_key '{ok}' (everything else it writes is discarded)",
                                b.id.value, k.value
                            ),
                            k.span,
                        )
                        .node(b.id.value.clone())
                        .hint(format!("results reach the graph only through the map's `collect_into`; write `{ok}` or remove this entry"));
                    self.push(d);
                }
            }
            if matches!(b.body, NodeBody::Llm(_) | NodeBody::Agent(_)) {
                let props = b.output_schema_properties();
                if !props.is_empty() {
                    let span = b.output_schema().map(|s| s.span).unwrap_or(b.id.span);
                    let d = self
                        .err(
                            "loki-map-branch",
                            format!(
                                "map branch '{}' has an `output_schema` with properties ({}) that would merge into state; a map branch must not declare them",
                                b.id.value,
                                props.join(", ")
                            ),
                            span,
                        )
                        .node(b.id.value.clone())
                        .hint("remove `output_schema` from the branch node; the map collects each item's result into `collect_into`");
                    self.push(d);
                }
            }
        }
    }

    /// Beyond upstream (reference §9.2): a map collecting `output` from an llm, agent or rag
    /// branch.
    pub(super) fn map_output_trap(&mut self) {
        let l = self.l;
        for n in &l.nodes {
            let Some(m) = n.map() else { continue };
            let Some(b) = m.branch.as_ref().and_then(|b| self.node_by(&b.value)) else {
                continue;
            };
            if !matches!(
                b.body,
                NodeBody::Llm(_) | NodeBody::Agent(_) | NodeBody::Rag(_)
            ) || m.output_key() != "output"
            {
                continue;
            }
            let span = m.branch.as_ref().map(|b| b.span).unwrap_or(n.id.span);
            let d = self
                .warn(
                    "loki-map-output",
                    format!(
                        "map branch '{}' is {} node and the map collects its `output`, but Loki binds `output` only inside the node's `state_updates`: every item collects null or a stale value, or fails",
                        b.id.value,
                        a_kind(b.kind_str())
                    ),
                    span,
                )
                .node(n.id.value.clone())
                .hint(format!(
                    "set `output_key: result` on the map and `state_updates: {{result: \"{{{{output}}}}\"}}` on '{}' (stored as a string)",
                    b.id.value
                ));
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
