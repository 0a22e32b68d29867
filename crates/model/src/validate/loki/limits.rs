//! Limits (upstream 14–17): `max_concurrency` of at least 1, a templated map
//! `max_concurrency`, orchestration limits, and caps that `0` disables (coyote 0.10.3).

use super::V;
use crate::doc::Sp;
use crate::doc::loki::{MaxConcurrency, NodeBody};

impl V<'_> {
    /// Upstream 14: `max_concurrency` is at least 1 (settings and map nodes).
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
            if let Some(mc) = m.max_concurrency.as_ref().filter(|m| matches!(m.value, MaxConcurrency::Fixed(0))) {
                let d = self
                    .err("loki-concurrency", "map node's `max_concurrency` must be >= 1 (got 0); no item could run", mc.span)
                    .node(n.id.value.clone())
                    .hint("remove it to use settings.max_concurrency, or give the number of items that may run at once");
                self.push(d);
            }
        }
    }

    /// Upstream 15: a templated map `max_concurrency` is exactly one `{{key}}` (coyote 0.10.3
    /// "validate the whole max_concurrency template string").
    pub(super) fn concurrency_template(&mut self) {
        for n in &self.l.nodes {
            let Some(m) = n.map() else { continue };
            let Some(mc) = &m.max_concurrency else { continue };
            let MaxConcurrency::Template(t) = &mc.value else {
                continue;
            };
            if MaxConcurrency::template_key(&t.text).is_some() {
                continue;
            }
            let digits = t.text.trim().parse::<u64>().ok();
            let hint = match digits {
                Some(v) => format!("write the number unquoted: `max_concurrency: {v}`"),
                None => "write an integer, or exactly one reference such as `max_concurrency: \"{{budget}}\"` (nothing else around it)".into(),
            };
            let d = self
                .err(
                    "loki-concurrency-template",
                    format!(
                        "map node's `max_concurrency` '{}' is a string but not exactly one `{{{{key}}}}` template",
                        t.text
                    ),
                    mc.span,
                )
                .node(n.id.value.clone())
                .hint(hint);
            self.push(d);
        }
    }

    /// Upstream 16: orchestration limits that forbid what the graph asks for.
    pub(super) fn orchestration_limits(&mut self) {
        let l = self.l;
        if let Some(v) = l.max_agent_depth.as_ref().filter(|v| v.value == 0) {
            let d = self
                .warn("loki-orchestration", "`max_agent_depth: 0` forbids spawning any sub-agent, so every `agent` node and dynamic spawn will fail", v.span)
                .hint("remove the key (default 3) or set it >= 1");
            self.push(d);
        }
        if let Some(v) = l.max_concurrent_agents.as_ref().filter(|v| v.value == 0) {
            let d = self
                .warn("loki-orchestration", "`max_concurrent_agents: 0` leaves no slot for any spawn to acquire, so agent spawning deadlocks", v.span)
                .hint("remove the key (default 4) or set it >= 1");
            self.push(d);
        }
    }

    /// Upstream 17 (coyote 0.10.3): `0` disables a cap — the run's and nodes' timeouts, the
    /// visit cap (`max_loop_iterations`) and an llm node's turn cap (`max_iterations`). Upstream
    /// warns, as an unbounded run is rarely what was meant.
    pub(super) fn timeouts(&mut self) {
        let st = &self.l.settings;
        if st.max_loop_iterations == 0
            && let Some(span) = st.span_of("max_loop_iterations")
        {
            let d = self
                .warn("loki-zero", "`max_loop_iterations: 0` disables the per-node visit cap: a loop through a script's `_next` can run forever", span)
                .hint("remove it for the default (100), or give how many times one node may run");
            self.push(d);
        }
        if st.timeout == Some(0)
            && let Some(span) = st.span_of("timeout")
        {
            let d = self
                .warn("loki-zero", "`timeout: 0` disables the run's wall-clock bound", span)
                .hint("remove it (no bound either) or give the limit in seconds; Ctrl-C or Stop still ends the run");
            self.push(d);
        }
        for n in &self.l.nodes {
            let mut zeros: Vec<(&Sp<u64>, &str)> = Vec::new();
            match &n.body {
                NodeBody::Script(s) => zeros.extend(s.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Agent(a) => zeros.extend(a.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Rag(r) => zeros.extend(r.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Llm(x) => {
                    zeros.extend(x.timeout.iter().map(|t| (t, "timeout")));
                    zeros.extend(x.max_iterations.iter().map(|t| (t, "max_iterations")));
                }
                _ => {}
            }
            for (v, key) in zeros {
                if v.value != 0 {
                    continue;
                }
                let (msg, hint) = match key {
                    "max_iterations" => (
                        "`max_iterations: 0` disables the llm node's turn cap: the tool-call loop runs until the model stops calling tools".to_string(),
                        "remove it for the default (10 turns), or give a positive number".to_string(),
                    ),
                    _ => (
                        format!("`timeout: 0` disables the {} node's wall-clock bound", n.kind_str()),
                        "remove it for the default, or give the limit in seconds".to_string(),
                    ),
                };
                let d = self.warn("loki-zero", msg, v.span).node(n.id.value.clone()).hint(hint);
                self.push(d);
            }
        }
    }
}
