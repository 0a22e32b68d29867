//! Upstream step 7: approval options and routes.

use super::V;
use crate::doc::loki::NodeBody;
use syntax::diag::did_you_mean;

impl V<'_> {
    /// Upstream 7: every approval option has a route, every route an option.
    pub(super) fn approvals(&mut self) {
        for n in &self.l.nodes {
            let NodeBody::Approval(a) = &n.body else {
                continue;
            };
            let mut done: Vec<&str> = Vec::new();
            for o in &a.options {
                if done.contains(&o.value.as_str()) {
                    continue;
                }
                done.push(&o.value);
                if a.route(&o.value).is_none() {
                    let d = self
                        .err(
                            "loki-approval-route",
                            format!("Approval option '{}' has no route defined", o.value),
                            o.span,
                        )
                        .node(n.id.value.clone())
                        .hint(format!("add `\"{}\": <node>` under `routes:`", o.value));
                    self.push(d);
                }
            }
            for (k, _) in &a.routes {
                if !a.options.iter().any(|o| o.value == k.value) {
                    let sugg = did_you_mean(&k.value, a.options.iter().map(|o| o.value.as_str()));
                    let hint = match sugg {
                        Some(s) => format!("did you mean the option `{s}`? A route key must equal an option exactly (case-sensitive)"),
                        None => "add it to `options`, or remove it: it is only taken when the user types it as free text".into(),
                    };
                    let d = self
                        .warn(
                            "loki-approval-route",
                            format!("Route '{}' has no corresponding option", k.value),
                            k.span,
                        )
                        .node(n.id.value.clone())
                        .hint(hint);
                    self.push(d);
                }
            }
        }
    }
}
