//! coyote 0.10.3's retry and fallback checks (upstream 11 `max_attempts`, 12
//! `fallback_capture`).

use super::V;
use crate::doc::Sp;
use crate::doc::loki::NodeBody;

impl V<'_> {
    /// Upstream 11: `max_attempts` of llm and agent nodes is at least 1 (it counts attempts, the
    /// first included: `0` would never call the model or spawn the agent).
    pub(super) fn max_attempts(&mut self) {
        for n in &self.l.nodes {
            let attempts: Option<&Sp<u64>> = match &n.body {
                NodeBody::Llm(x) => x.max_attempts.as_ref(),
                NodeBody::Agent(a) => a.max_attempts.as_ref(),
                _ => None,
            };
            let Some(m) = attempts.filter(|m| m.value == 0) else {
                continue;
            };
            let d = self
                .err(
                    "loki-max-attempts",
                    format!(
                        "{} node's `max_attempts` must be >= 1 (got 0); it counts attempts, the first one included",
                        n.kind_str()
                    ),
                    m.span,
                )
                .node(n.id.value.clone())
                .hint("remove it for one attempt (the default), or give how many attempts transient errors may take");
            self.push(d);
        }
    }

    /// Upstream 12: when an llm or agent node fails and routes to its `fallback`, the failure
    /// text is bound to `{{output}}` for its `state_updates` — the fallback path can only see
    /// why the node failed when some `state_updates` value captures `{{output}}`.
    pub(super) fn fallback_capture(&mut self) {
        for n in &self.l.nodes {
            let fallback = match &n.body {
                NodeBody::Llm(x) => x.fallback.as_ref(),
                NodeBody::Agent(a) => a.fallback.as_ref(),
                _ => None,
            };
            let Some(f) = fallback else { continue };
            let captures = n.state_updates.iter().flatten().any(|(_, t)| {
                expr::template::root_keys(&t.text)
                    .iter()
                    .any(|k| k == "output")
            });
            if captures {
                continue;
            }
            let d = self
                .warn(
                    "loki-fallback-capture",
                    format!(
                        "{} node routes to fallback '{}' but no `state_updates` value captures `{{{{output}}}}`: the failure text is lost and '{}' cannot tell why the node failed",
                        n.kind_str(),
                        f.value,
                        f.value
                    ),
                    f.span,
                )
                .node(n.id.value.clone())
                .hint(format!(
                    "add `state_updates: {{{}_result: \"{{{{output}}}}\"}}`: on success it holds the reply, on failure the error text",
                    n.id.value
                ));
            self.push(d);
        }
    }
}
