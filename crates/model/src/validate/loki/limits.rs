//! Limits: `max_concurrency` of at least 1 (upstream step 11), and zero limits and timeouts
//! that do not mean "unlimited".

use super::V;
use crate::doc::Sp;
use crate::doc::loki::NodeBody;

impl V<'_> {
    /// Upstream 11: `max_concurrency` is at least 1 (settings and map nodes).
    pub(super) fn concurrency(&mut self) {
        if self.l.settings.max_concurrency == 0 {
            let span = self
                .l
                .settings
                .span_of("max_concurrency")
                .unwrap_or(self.l.nodes_span);
            let d = self
                .err("loki-concurrency", "settings.max_concurrency must be >= 1 (got 0); no parallel branch could run", span)
                .hint("remove it for the default (8), or give the number of branches that may run at once");
            self.push(d);
        }
        for n in &self.l.nodes {
            let Some(m) = n.map() else { continue };
            if let Some(mc) = m.max_concurrency.as_ref().filter(|m| matches!(m.value, crate::doc::loki::MaxConcurrency::Fixed(0))) {
                let d = self
                    .err("loki-concurrency", "map node's `max_concurrency` must be >= 1 (got 0); no item could run", mc.span)
                    .node(n.id.value.clone())
                    .hint("remove it to use settings.max_concurrency, or give the number of items that may run at once");
                self.push(d);
            }
        }
    }

    /// Beyond upstream: a zero limit or timeout does not mean "unlimited".
    pub(super) fn zero_limits(&mut self) {
        let st = &self.l.settings;
        if st.max_loop_iterations == 0
            && let Some(span) = st.span_of("max_loop_iterations")
        {
            {
                let d = self
                    .warn("loki-zero", "`max_loop_iterations: 0` fails the run at the first node visit; it does not mean \"unlimited\"", span)
                    .hint("remove it for the default (100), or give how many times one node may run");
                self.push(d);
            }
        }
        if st.timeout == Some(0)
            && let Some(span) = st.span_of("timeout")
        {
            {
                let d = self
                    .warn(
                        "loki-zero",
                        "`timeout: 0` fails the run immediately; it does not mean \"unlimited\"",
                        span,
                    )
                    .hint("remove it for no time limit, or give the limit in seconds");
                self.push(d);
            }
        }
        for n in &self.l.nodes {
            let mut zeros: Vec<(&Sp<u64>, &str)> = Vec::new();
            match &n.body {
                NodeBody::Script(s) => zeros.extend(s.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Agent(a) => zeros.extend(a.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Rag(r) => zeros.extend(r.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Llm(x) => {
                    zeros.extend(x.timeout.iter().map(|t| (t, "timeout")));
                    zeros.extend(x.max_attempts.iter().map(|t| (t, "max_attempts")));
                    zeros.extend(x.max_iterations.iter().map(|t| (t, "max_iterations")));
                }
                _ => {}
            }
            for (v, key) in zeros {
                if v.value != 0 {
                    continue;
                }
                let what = match key {
                    "max_attempts" => {
                        "the node fails without calling the model (\"llm node exhausted retries\")"
                    }
                    "max_iterations" => {
                        "the node fails (\"llm node ended without producing output\")"
                    }
                    _ => "the node times out at once",
                };
                let d = self
                    .warn(
                        "loki-zero",
                        format!("`{key}: 0` does not mean \"unlimited\": {what}"),
                        v.span,
                    )
                    .node(n.id.value.clone())
                    .hint(format!(
                        "remove `{key}` for the default, or give a positive number"
                    ));
                self.push(d);
            }
        }
    }
}
