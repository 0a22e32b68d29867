//! Debugger events of a run, one JSON object per event (a JSONL trace is one event per line).
//!
//! Shape: `{"event":"<kind>","run":"<run id>","ts_ms":<ms since the Unix epoch>, ...fields}`,
//! e.g. `{"event":"node_enter","run":"r1","ts_ms":1700000000000,"step":3,"node":"x","kind":"set_state"}`.
//! The `event` key always comes first, then `run` and `ts_ms`, then the kind's own fields.

use crate::wire::{ErrorKind, TokenUsage, ToolCall};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};
use ts_rs::TS;

/// One event: the run it belongs to, when it happened, and what happened.
#[derive(Clone, Debug, PartialEq, Deserialize, TS)]
pub struct Event {
    pub run: String,
    /// Milliseconds since the Unix epoch.
    pub ts_ms: u64,
    #[serde(flatten)]
    pub body: EventBody,
}

/// What happened. Serialised with `"event"` naming the variant (snake_case).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventBody {
    RunStarted {
        /// The agent being run (sherma agent id or Loki agent name).
        #[serde(default)]
        agent: String,
        /// The run's input (initial state / user message), as given.
        #[serde(default)]
        input: Value,
        /// The whole state before the first step (declared defaults and the input applied), so
        /// a trace can be replayed into states without the agent file.
        #[serde(default, skip_serializing_if = "Value::is_null")]
        state: Value,
    },
    NodeEnter {
        /// 1-based step counter of the run.
        step: u64,
        node: String,
        /// The node's kind as in the IR (`call_llm`, `set_state`, `tool_node`, `script`, ...).
        kind: String,
    },
    NodeExit {
        step: u64,
        node: String,
        /// The state delta the node produced (JSON; `null` when it produced none).
        update: Value,
        duration_ms: u64,
    },
    Route {
        from: String,
        to: String,
        reason: RouteReason,
    },
    LlmRequest {
        node: String,
        messages: Value,
        tools: Value,
        /// The model the document names (`openai:gpt-4o-mini`); absent when it names none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Text of the answer as it streams in (coalesced: one event per ~40 ms of tokens).
    LlmDelta {
        node: String,
        text: String,
    },
    LlmResponse {
        node: String,
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
        #[serde(default)]
        usage: TokenUsage,
        /// Wall time of the call (latency), including streaming.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// The model that answered, as the provider reports it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// What the call cost, when the model's price is known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// A replayed run sent a request that differs from the recording (the first difference).
    ReplayDiverged {
        node: String,
        /// Which call of the node (1-based).
        call: usize,
        /// Where the requests differ (`messages[1].content`), or why there is no recorded call.
        path: String,
        #[serde(default)]
        recorded: Value,
        #[serde(default)]
        now: Value,
    },
    /// A model call failed (it may be retried; see the node's `error`/`node_exit` events).
    LlmError {
        node: String,
        kind: ErrorKind,
        message: String,
        duration_ms: u64,
    },
    ToolCall {
        node: String,
        call: ToolCall,
    },
    ToolResult {
        node: String,
        /// The id of the `tool_call` this answers.
        id: String,
        name: String,
        #[serde(default)]
        result: Value,
        /// Set when the tool failed; `result` is then usually `null`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    Interrupt {
        id: String,
        node: String,
        kind: InterruptKind,
        prompt: String,
        #[serde(default)]
        options: Vec<String>,
        /// The structured value behind `prompt` (a sherma interrupt's CEL value); `null` when
        /// the prompt is all there is.
        #[serde(default, skip_serializing_if = "Value::is_null")]
        value: Value,
        /// The answer an empty reply stands for (Loki input `default`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<String>,
        /// The rule an answer must pass (Loki input `validation`), shown as a hint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        validation: Option<String>,
    },
    /// The user changed a state value while the run was paused.
    StateEdited {
        key: String,
        value: Value,
    },
    /// The run went back to the checkpoint after `step` (a fork: later checkpoints are dropped).
    Rewound {
        step: u64,
    },
    Paused {
        reason: PauseReason,
    },
    /// The run paused before a step of a nested run (stepping into a sub-agent or a Loki agent
    /// node); the event's `run` is the nested run's id (`<run>/<node>...`).
    NestedPaused {
        /// The top-level node the nested run runs inside.
        node: String,
        reason: PauseReason,
        /// Steps the nested run has done.
        step: u64,
        /// The nested run's nodes about to run.
        due: Vec<String>,
        /// The nested agent and the file it comes from.
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
        /// The nested run's whole state.
        state: Value,
        /// 1 for a child of the top-level run, 2 for a grandchild, ...
        depth: u32,
    },
    /// The pause inside the nested run `run` ended.
    NestedResumed {},
    Error {
        /// The node that failed; `None` for run-level errors.
        #[serde(default)]
        node: Option<String>,
        message: String,
    },
    RunFinished {
        status: RunStatus,
        state: Value,
        output: Value,
    },
    /// Text a helper process wrote for humans, captured instead of reaching the terminal (an
    /// MCP server's stderr: `source` is `mcp:<server>`).
    Log {
        source: String,
        text: String,
    },
    /// A hook executor ran at a hook point (sherma `hooks:`); one event per executor that
    /// handles the point.
    Hook {
        /// The node it ran for; `None` for run-level points (`before_graph_invoke`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
        /// The hook point (`before_llm_call`, `node_exit`, ...).
        point: String,
        /// Which executor: `python:<import_path>`, `url:<url>` or `mcp:<server>`.
        executor: String,
        outcome: HookOutcome,
        duration_ms: u64,
        /// What changed (`system_prompt`, `result`, ...) or, for a failure, why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

/// What a hook executor did with its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// Nothing changed.
    Pass,
    /// The context came back changed (`detail` lists the fields).
    Modified,
    /// An error hook cleared the error: the failure is swallowed.
    Consumed,
    /// The executor failed and was skipped (remote hooks: a warning, the context passes on).
    Failed,
}

/// Why the run went from `from` to `to`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RouteReason {
    /// An unconditional edge.
    Static,
    /// The `index`-th (0-based) branch of a conditional edge matched; `condition` is its text.
    Branch { index: usize, condition: String },
    /// No branch matched; the edge's default was taken.
    Default,
    /// A Loki script chose the target through `_next`.
    #[serde(rename = "_next")]
    Next,
    /// The node failed and its `fallback` was taken.
    Fallback,
    /// A Loki approval/input answer matched no route; `on_other` was taken.
    OnOther,
    /// A Loki approval/input route option was chosen.
    RouteOption { option: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InterruptKind {
    Interrupt,
    Approval,
    Input,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PauseReason {
    /// A breakpoint on the node about to run.
    Breakpoint,
    /// Single-stepping: paused after one step.
    Step,
    /// The user asked the run to pause.
    Requested,
    /// A node failed and break-on-error is on: inspect, edit or rewind before it is final.
    Error,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    Failed,
    Stopped,
    Interrupted,
}

impl Event {
    pub fn new(run: impl Into<String>, ts_ms: u64, body: EventBody) -> Event {
        Event { run: run.into(), ts_ms, body }
    }
    /// An event stamped with the current wall-clock time.
    pub fn now(run: impl Into<String>, body: EventBody) -> Event {
        Event::new(run, now_ms(), body)
    }
    /// The event's kind as written in `"event"` (`"node_enter"`, ...).
    pub fn kind(&self) -> &'static str {
        match &self.body {
            EventBody::RunStarted { .. } => "run_started",
            EventBody::NodeEnter { .. } => "node_enter",
            EventBody::NodeExit { .. } => "node_exit",
            EventBody::Route { .. } => "route",
            EventBody::LlmRequest { .. } => "llm_request",
            EventBody::LlmDelta { .. } => "llm_delta",
            EventBody::LlmResponse { .. } => "llm_response",
            EventBody::LlmError { .. } => "llm_error",
            EventBody::ReplayDiverged { .. } => "replay_diverged",
            EventBody::ToolCall { .. } => "tool_call",
            EventBody::ToolResult { .. } => "tool_result",
            EventBody::Interrupt { .. } => "interrupt",
            EventBody::Paused { .. } => "paused",
            EventBody::NestedPaused { .. } => "nested_paused",
            EventBody::NestedResumed {} => "nested_resumed",
            EventBody::StateEdited { .. } => "state_edited",
            EventBody::Rewound { .. } => "rewound",
            EventBody::Error { .. } => "error",
            EventBody::RunFinished { .. } => "run_finished",
            EventBody::Log { .. } => "log",
            EventBody::Hook { .. } => "hook",
        }
    }
    /// The event as a JSON object (`event`, `run`, `ts_ms` first).
    pub fn to_value(&self) -> Value {
        let body = serde_json::to_value(&self.body).unwrap_or(Value::Null);
        let mut out = serde_json::Map::new();
        let Value::Object(fields) = body else { return Value::Object(out) };
        let mut fields = fields;
        out.insert("event".into(), fields.shift_remove("event").unwrap_or(Value::Null));
        out.insert("run".into(), Value::String(self.run.clone()));
        out.insert("ts_ms".into(), Value::from(self.ts_ms));
        out.extend(fields);
        Value::Object(out)
    }
    /// One line of a JSONL trace (no trailing newline).
    pub fn to_json_line(&self) -> String {
        self.to_value().to_string()
    }
    /// One line of a JSONL trace file: [`Event::to_json_line`] with secret-shaped strings
    /// (`AKIA…`, `sk-…`) replaced, as a cassette has them (known secrets are gone already).
    pub fn to_file_line(&self) -> String {
        crate::secrets::scrub_shapes(&self.to_json_line()).into_owned()
    }
    /// Parse one line of a JSONL trace.
    pub fn from_json_line(line: &str) -> Result<Event, serde_json::Error> {
        serde_json::from_str(line)
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(body: EventBody) -> Event {
        Event::new("r1", 1_700_000_000_000, body)
    }

    fn tc() -> ToolCall {
        ToolCall { id: "call_1".into(), name: "search".into(), args: json!({"q": "rust"}) }
    }

    /// Every kind, with the exact JSON it must produce.
    fn cases() -> Vec<(Event, Value)> {
        let head = |k: &str| json!({"event": k, "run": "r1", "ts_ms": 1_700_000_000_000u64});
        let with = |k: &str, extra: Value| {
            let mut v = head(k);
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            v
        };
        vec![
            (
                ev(EventBody::RunStarted { agent: "a".into(), input: json!({"x": 1}), state: json!({"x": 1, "y": null}) }),
                with("run_started", json!({"agent": "a", "input": {"x": 1}, "state": {"x": 1, "y": null}})),
            ),
            (
                ev(EventBody::NodeEnter { step: 3, node: "x".into(), kind: "set_state".into() }),
                with("node_enter", json!({"step": 3, "node": "x", "kind": "set_state"})),
            ),
            (
                ev(EventBody::NodeExit { step: 3, node: "x".into(), update: json!({"n": 2}), duration_ms: 12 }),
                with("node_exit", json!({"step": 3, "node": "x", "update": {"n": 2}, "duration_ms": 12})),
            ),
            (
                ev(EventBody::Route { from: "a".into(), to: "b".into(), reason: RouteReason::Static }),
                with("route", json!({"from": "a", "to": "b", "reason": {"type": "static"}})),
            ),
            (
                ev(EventBody::Route {
                    from: "a".into(),
                    to: "b".into(),
                    reason: RouteReason::Branch { index: 1, condition: "state.n > 2".into() },
                }),
                with(
                    "route",
                    json!({"from": "a", "to": "b", "reason": {"type": "branch", "index": 1, "condition": "state.n > 2"}}),
                ),
            ),
            (
                ev(EventBody::Route { from: "a".into(), to: "b".into(), reason: RouteReason::Default }),
                with("route", json!({"from": "a", "to": "b", "reason": {"type": "default"}})),
            ),
            (
                ev(EventBody::Route { from: "a".into(), to: "b".into(), reason: RouteReason::Next }),
                with("route", json!({"from": "a", "to": "b", "reason": {"type": "_next"}})),
            ),
            (
                ev(EventBody::Route { from: "a".into(), to: "b".into(), reason: RouteReason::Fallback }),
                with("route", json!({"from": "a", "to": "b", "reason": {"type": "fallback"}})),
            ),
            (
                ev(EventBody::Route { from: "a".into(), to: "b".into(), reason: RouteReason::OnOther }),
                with("route", json!({"from": "a", "to": "b", "reason": {"type": "on_other"}})),
            ),
            (
                ev(EventBody::Route {
                    from: "a".into(),
                    to: "b".into(),
                    reason: RouteReason::RouteOption { option: "approve".into() },
                }),
                with("route", json!({"from": "a", "to": "b", "reason": {"type": "route_option", "option": "approve"}})),
            ),
            (
                ev(EventBody::LlmRequest {
                    node: "llm".into(),
                    messages: json!([{"role": "user", "content": "hi"}]),
                    tools: json!([]),
                    model: None,
                }),
                with("llm_request", json!({"node": "llm", "messages": [{"role": "user", "content": "hi"}], "tools": []})),
            ),
            (
                ev(EventBody::ReplayDiverged {
                    node: "llm".into(),
                    call: 2,
                    path: "messages[0].content".into(),
                    recorded: json!("a"),
                    now: json!("b"),
                }),
                with(
                    "replay_diverged",
                    json!({"node": "llm", "call": 2, "path": "messages[0].content", "recorded": "a", "now": "b"}),
                ),
            ),
            (
                ev(EventBody::LlmDelta { node: "llm".into(), text: "hel".into() }),
                with("llm_delta", json!({"node": "llm", "text": "hel"})),
            ),
            (
                ev(EventBody::LlmError {
                    node: "llm".into(),
                    kind: ErrorKind::RateLimited,
                    message: "HTTP 429".into(),
                    duration_ms: 12,
                }),
                with("llm_error", json!({"node": "llm", "kind": "rate_limited", "message": "HTTP 429", "duration_ms": 12})),
            ),
            (
                ev(EventBody::LlmResponse {
                    node: "llm".into(),
                    content: Some("hello".into()),
                    tool_calls: vec![tc()],
                    usage: TokenUsage { input_tokens: 5, output_tokens: 2 },
                    duration_ms: None,
                    model: None,
                    cost_usd: None,
                }),
                with(
                    "llm_response",
                    json!({"node": "llm", "content": "hello",
                        "tool_calls": [{"id": "call_1", "name": "search", "args": {"q": "rust"}}],
                        "usage": {"input_tokens": 5, "output_tokens": 2}}),
                ),
            ),
            (
                ev(EventBody::ToolCall { node: "tools".into(), call: tc() }),
                with("tool_call", json!({"node": "tools", "call": {"id": "call_1", "name": "search", "args": {"q": "rust"}}})),
            ),
            (
                ev(EventBody::ToolResult {
                    node: "tools".into(),
                    id: "call_1".into(),
                    name: "search".into(),
                    result: json!("ok"),
                    error: None,
                }),
                with("tool_result", json!({"node": "tools", "id": "call_1", "name": "search", "result": "ok"})),
            ),
            (
                ev(EventBody::ToolResult {
                    node: "tools".into(),
                    id: "call_1".into(),
                    name: "search".into(),
                    result: Value::Null,
                    error: Some("boom".into()),
                }),
                with("tool_result", json!({"node": "tools", "id": "call_1", "name": "search", "result": null, "error": "boom"})),
            ),
            (
                ev(EventBody::Interrupt {
                    id: "i1".into(),
                    node: "ask".into(),
                    kind: InterruptKind::Approval,
                    prompt: "Deploy?".into(),
                    options: vec!["yes".into(), "no".into()],
                    value: Value::Null,
                    default: None,
                    validation: None,
                }),
                with(
                    "interrupt",
                    json!({"id": "i1", "node": "ask", "kind": "approval", "prompt": "Deploy?", "options": ["yes", "no"]}),
                ),
            ),
            (ev(EventBody::Paused { reason: PauseReason::Breakpoint }), with("paused", json!({"reason": "breakpoint"}))),
            (
                ev(EventBody::Error { node: Some("x".into()), message: "bad".into() }),
                with("error", json!({"node": "x", "message": "bad"})),
            ),
            (
                ev(EventBody::RunFinished { status: RunStatus::Completed, state: json!({"n": 1}), output: json!("done") }),
                with("run_finished", json!({"status": "completed", "state": {"n": 1}, "output": "done"})),
            ),
            (
                ev(EventBody::Log { source: "mcp:fs".into(), text: "listening\n".into() }),
                with("log", json!({"source": "mcp:fs", "text": "listening\n"})),
            ),
            (
                ev(EventBody::Hook {
                    node: Some("agent".into()),
                    point: "before_llm_call".into(),
                    executor: "url:http://127.0.0.1:9/hooks".into(),
                    outcome: HookOutcome::Modified,
                    duration_ms: 3,
                    detail: Some("system_prompt".into()),
                }),
                with(
                    "hook",
                    json!({"node": "agent", "point": "before_llm_call", "executor": "url:http://127.0.0.1:9/hooks",
                        "outcome": "modified", "duration_ms": 3, "detail": "system_prompt"}),
                ),
            ),
        ]
    }

    #[test]
    fn json_shape_of_every_kind() {
        let cases = cases();
        let kinds: std::collections::BTreeSet<&str> = cases.iter().map(|(e, _)| e.kind()).collect();
        assert_eq!(kinds.len(), 17, "every event kind is covered: {kinds:?}");
        for (e, want) in &cases {
            assert_eq!(&e.to_value(), want, "{}", e.kind());
            assert_eq!(serde_json::to_value(e).unwrap(), *want);
            // `event`, `run`, `ts_ms` lead, in that order.
            let line = e.to_json_line();
            assert!(line.starts_with(&format!("{{\"event\":\"{}\",\"run\":\"r1\",\"ts_ms\":", e.kind())), "{line}");
            assert!(!line.contains('\n'));
        }
    }

    #[test]
    fn node_enter_line_is_exact() {
        let e = ev(EventBody::NodeEnter { step: 3, node: "x".into(), kind: "set_state".into() });
        assert_eq!(
            e.to_json_line(),
            r#"{"event":"node_enter","run":"r1","ts_ms":1700000000000,"step":3,"node":"x","kind":"set_state"}"#
        );
    }

    #[test]
    fn round_trip_every_kind() {
        for (e, _) in cases() {
            let back = Event::from_json_line(&e.to_json_line()).unwrap();
            assert_eq!(back, e);
        }
        let statuses = [RunStatus::Completed, RunStatus::Failed, RunStatus::Stopped, RunStatus::Interrupted];
        for s in statuses {
            let e = ev(EventBody::RunFinished { status: s, state: json!({}), output: Value::Null });
            assert_eq!(Event::from_json_line(&e.to_json_line()).unwrap(), e);
        }
        for k in [InterruptKind::Interrupt, InterruptKind::Approval, InterruptKind::Input] {
            let e = ev(EventBody::Interrupt { id: "i".into(), node: "n".into(), kind: k, prompt: "?".into(), options: vec![], value: json!({"q": 1}), default: Some("d".into()), validation: None });
            assert_eq!(Event::from_json_line(&e.to_json_line()).unwrap(), e);
        }
    }

    #[test]
    fn unknown_event_kind_is_rejected() {
        assert!(Event::from_json_line(r#"{"event":"nope","run":"r","ts_ms":1}"#).is_err());
        assert!(Event::from_json_line(r#"{"event":"paused","run":"r"}"#).is_err());
    }

    #[test]
    fn now_is_stamped() {
        let e = Event::now("r", EventBody::Paused { reason: PauseReason::Step });
        assert!(e.ts_ms > 1_600_000_000_000);
    }
}
