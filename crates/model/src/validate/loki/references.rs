//! Upstream step 1: references to nodes that do not exist.

use super::V;
use syntax::diag::did_you_mean;

impl V<'_> {
    fn suggest_node(&self, name: &str) -> String {
        // Suggestions compare against every id: skip them for huge graphs.
        let sugg = if self.l.nodes.len() <= MAX_SUGGEST_NODES {
            did_you_mean(name, self.l.node_ids())
        } else {
            None
        };
        match sugg {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!(
                "declare a node `{name}` under `nodes:`, or name one of: {}",
                crate::doc::loki::short_list(self.l.node_ids())
            ),
        }
    }

    /// Upstream 1: every declared target (and `x-next` entry) names a node.
    pub(super) fn references(&mut self) {
        let l = self.l;
        for n in &l.nodes {
            for t in n.targets() {
                if self.idx(&t.to.value).is_none() {
                    let d = self
                        .err(
                            "loki-ref",
                            format!(
                                "References non-existent node '{}' in {}",
                                t.to.value,
                                t.kind.label()
                            ),
                            t.to.span,
                        )
                        .node(n.id.value.clone())
                        .hint(self.suggest_node(&t.to.value));
                    self.push(d);
                }
            }
            if let Some(xs) = n.script().and_then(|s| s.x_next.as_ref()) {
                for x in xs {
                    if self.idx(&x.value).is_none() {
                        let d = self
                            .err(
                                "loki-ref",
                                format!("References non-existent node '{}' in 'x-next'", x.value),
                                x.span,
                            )
                            .node(n.id.value.clone())
                            .hint(self.suggest_node(&x.value));
                        self.push(d);
                    }
                }
            }
        }
    }
}

/// Above this many nodes, unknown references get no "did you mean" (it compares every id).
const MAX_SUGGEST_NODES: usize = 2000;
