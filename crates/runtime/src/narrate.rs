//! Narration of a run from its events, in Loki's style (reference/loki.md §8), for both
//! dialects: `▸ HH:MM:SS node (kind) start`, `... done in 3ms -> next`, `FAILED in ... -- why`,
//! and a per-node performance summary. Text only; the CLI decides where to print it.

use crate::events::{Event, EventBody, RouteReason, RunStatus};
use std::collections::BTreeMap;

/// Turns events into narration lines. Stateful: a node's `done` line waits for its routes.
#[derive(Default)]
pub struct Narrator {
    /// The `done` line of the last node, waiting for its `route` events.
    pending: Option<(String, Vec<String>)>,
    /// The run id of the top-level run (nested runs are not narrated, as upstream).
    top: Option<String>,
    /// Each node's kind, from its `node_enter`.
    kinds: BTreeMap<String, String>,
    started: Option<u64>,
}

fn clock(ts_ms: u64) -> String {
    // UTC wall clock: the engine has no time-zone database and must not guess.
    let s = (ts_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// `<n>ms` below one second, else `<s.ss>s`.
pub fn duration(ms: u64) -> String {
    if ms < 1000 { format!("{ms}ms") } else { format!("{:.2}s", ms as f64 / 1000.0) }
}

impl Narrator {
    pub fn new() -> Narrator {
        Narrator::default()
    }

    fn flush(&mut self) -> Option<String> {
        let (line, targets) = self.pending.take()?;
        Some(if targets.is_empty() { line } else { format!("{line} -> {}", targets.join(", ")) })
    }

    /// The lines this event adds (possibly none).
    pub fn feed(&mut self, ev: &Event) -> Vec<String> {
        let top = self.top.get_or_insert_with(|| ev.run.clone()).clone();
        if ev.run != top {
            return Vec::new();
        }
        let mut out = Vec::new();
        if let EventBody::Route { to, reason, .. } = &ev.body {
            if let Some((_, targets)) = &mut self.pending {
                let to = if to == model::graph::END { "END" } else { to.as_str() };
                let why = match reason {
                    RouteReason::Static => String::new(),
                    RouteReason::Next => " (_next)".into(),
                    RouteReason::Fallback => " (fallback)".into(),
                    RouteReason::OnOther => " (on_other)".into(),
                    RouteReason::RouteOption { option } => format!(" (answer '{option}')"),
                    RouteReason::Default => " (default)".into(),
                    RouteReason::Branch { index, .. } => format!(" (branch {})", index + 1),
                };
                targets.push(format!("{to}{why}"));
                return out;
            }
        }
        out.extend(self.flush());
        let t = clock(ev.ts_ms);
        match &ev.body {
            EventBody::RunStarted { agent, .. } => {
                self.started = Some(ev.ts_ms);
                out.push(format!("▸ run: {agent}"));
            }
            EventBody::NodeEnter { node, kind, .. } => {
                self.kinds.insert(node.clone(), kind.clone());
                out.push(format!("▸ {t} {node} ({kind}) start"));
            }
            EventBody::NodeExit { node, duration_ms, .. } => {
                let kind = self.kinds.get(node).map(String::as_str).unwrap_or("?");
                self.pending = Some((format!("▸ {t} {node} ({kind}) done in {}", duration(*duration_ms)), Vec::new()));
            }
            EventBody::Interrupt { node, kind, prompt, .. } => {
                let kind = serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
                out.push(format!("▸ {t} {node} waits for an answer ({kind}): {}", first_line(prompt, 120)));
            }
            EventBody::Error { node, message } => {
                let at = node.as_deref().map(|n| format!("{n} ")).unwrap_or_default();
                out.push(format!("▸ {t} {at}FAILED -- {}", first_line(message, 120)));
            }
            EventBody::LlmError { node, kind, message, .. } => {
                let kind = serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
                out.push(format!("▸ {t} {node} LLM call failed ({kind}): {}", first_line(message, 160)));
            }
            EventBody::ReplayDiverged { node, call, path, recorded, now } => {
                let short = |v: &serde_json::Value| first_line(&v.to_string(), 80);
                out.push(format!(
                    "▸ {t} replay diverged at call {call} of {node}: `{path}` was {} in the recording, now {}",
                    short(recorded),
                    short(now)
                ));
            }
            EventBody::Paused { reason } => {
                out.push(format!("▸ {t} paused ({})", serde_json::to_value(reason).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()));
            }
            EventBody::RunFinished { status, .. } => {
                let secs = self.started.map(|s| ev.ts_ms.saturating_sub(s) as f64 / 1000.0).unwrap_or(0.0);
                let word = match status {
                    RunStatus::Completed => "done",
                    RunStatus::Failed => "failed",
                    RunStatus::Stopped => "stopped",
                    RunStatus::Interrupted => "interrupted",
                };
                out.push(format!("▸ run {word} in {secs:.2}s"));
            }
            _ => {}
        }
        out
    }

    /// Lines still held back (call once the run is over).
    pub fn finish(&mut self) -> Vec<String> {
        self.flush().into_iter().collect()
    }
}

fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > max { format!("{}…", line.chars().take(max).collect::<String>()) } else { line.to_string() }
}

/// Per-node performance summary of the top-level run (slowest total first):
/// `<node>: <n> visit(s), total <ms>ms, avg <ms>ms, max <ms>ms`.
pub fn perf_summary(events: &[Event]) -> Vec<String> {
    let Some(top) = events.first().map(|e| e.run.as_str()) else { return Vec::new() };
    let mut order: Vec<String> = Vec::new();
    let mut stats: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for e in events.iter().filter(|e| e.run == top) {
        if let EventBody::NodeExit { node, duration_ms, .. } = &e.body {
            let s = stats.entry(node.clone()).or_insert_with(|| {
                order.push(node.clone());
                (0, 0, 0)
            });
            s.0 += 1;
            s.1 += duration_ms;
            s.2 = s.2.max(*duration_ms);
        }
    }
    // Stable sort keeps first-run order for ties.
    order.sort_by(|a, b| stats[b].1.cmp(&stats[a].1));
    order
        .iter()
        .map(|n| {
            let (count, total, max) = stats[n];
            format!("{n}: {count} visit(s), total {total}ms, avg {}ms, max {max}ms", total / count.max(1))
        })
        .collect()
}

/// A route's reason in a few words, for reports (`switchyard trace diff`, coverage's routes that
/// match no edge): `static`, `branch 1: <condition>` (0-based, as the event), `default`, `_next`,
/// `fallback`, `on_other`, `option <name>`.
pub fn reason_text(r: &RouteReason) -> String {
    match r {
        RouteReason::Static => "static".into(),
        RouteReason::Branch { index, condition } => format!("branch {index}: {condition}"),
        RouteReason::Default => "default".into(),
        RouteReason::Next => "_next".into(),
        RouteReason::Fallback => "fallback".into(),
        RouteReason::OnOther => "on_other".into(),
        RouteReason::RouteOption { option } => format!("option {option}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(run: &str, ts: u64, body: EventBody) -> Event {
        Event::new(run, ts, body)
    }

    #[test]
    fn done_lines_carry_their_targets_and_nested_runs_are_quiet() {
        let mut n = Narrator::new();
        let mut lines = Vec::new();
        let t = 3_600_000 + 61_000; // 01:01:01 UTC
        for e in [
            ev("r", t, EventBody::RunStarted { agent: "a".into(), input: json!(null), state: serde_json::Value::Null }),
            ev("r", t, EventBody::NodeEnter { step: 1, node: "s0".into(), kind: "script".into() }),
            ev("r/s0", t, EventBody::NodeEnter { step: 1, node: "child".into(), kind: "llm".into() }),
            ev("r", t, EventBody::NodeExit { step: 1, node: "s0".into(), update: json!({}), duration_ms: 1210 }),
            ev("r", t, EventBody::Route { from: "s0".into(), to: "a".into(), reason: RouteReason::Static }),
            ev("r", t, EventBody::Route { from: "s0".into(), to: "b".into(), reason: RouteReason::Fallback }),
            ev("r", t + 2000, EventBody::RunFinished { status: RunStatus::Completed, state: json!({}), output: json!("x") }),
        ] {
            lines.extend(n.feed(&e));
        }
        lines.extend(n.finish());
        assert_eq!(
            lines,
            vec![
                "▸ run: a",
                "▸ 01:01:01 s0 (script) start",
                "▸ 01:01:01 s0 (script) done in 1.21s -> a, b (fallback)",
                "▸ run done in 2.00s",
            ]
        );
    }

    #[test]
    fn summary_sorts_by_total_time() {
        let exit = |node: &str, ms: u64| ev("r", 0, EventBody::NodeExit { step: 1, node: node.into(), update: json!(null), duration_ms: ms });
        let evs = vec![
            ev("r", 0, EventBody::RunStarted { agent: "a".into(), input: json!(null), state: serde_json::Value::Null }),
            exit("a", 3),
            exit("b", 10),
            exit("a", 5),
            ev("r/x", 0, EventBody::NodeExit { step: 1, node: "nested".into(), update: json!(null), duration_ms: 99 }),
        ];
        assert_eq!(
            perf_summary(&evs),
            vec!["b: 1 visit(s), total 10ms, avg 10ms, max 10ms", "a: 2 visit(s), total 8ms, avg 4ms, max 5ms"]
        );
    }
}
