//! A run you can pause at any step: the dialect-neutral session around a [`Machine`].
//!
//! A [`Machine`] is one dialect's interpreter (`sherma::ShermaMachine`, `loki::LokiMachine`).
//! It knows which nodes run next ([`Machine::due`]) and runs exactly one step at a time
//! ([`Machine::step`]: one node for sherma, one super-step for Loki). Everything a debugger
//! needs around that lives here, once for both dialects:
//!
//! - **control**: [`RunSession::run`] (continue until something stops it), [`RunSession::step`]
//!   (one step, then pause), [`RunSession::pause_handle`] / [`RunSession::stop_handle`] (atomic
//!   flags another thread may set while a step runs), [`RunSession::stop`];
//! - **breakpoints** on node ids, each with an optional condition in the dialect's expression
//!   language (CEL for sherma, a `{{template}}` for Loki), evaluated before the node runs;
//!   break-on-error;
//! - **interrupts**: a step that needs a human returns [`StepOutcome::Interrupt`]; answers
//!   queued in advance are used first, otherwise the session waits for [`RunSession::answer`];
//! - **state edits** while paused ([`RunSession::edit_state`]);
//! - **checkpoints**: one after every step. A checkpoint is a fork of the machine, and machines
//!   keep their state as `Arc`-shared values, so a checkpoint costs a few pointer copies, not a
//!   deep copy of the state. [`RunSession::rewind`] goes back to any of them (a fork: the later
//!   ones are dropped, the scripted provider rewinds too). All but the newest 64 are packed
//!   into the machine's snapshot, deflated in blocks (`packed`): a long run costs tens of
//!   bytes per step instead of a fork each.
//!
//! Every event goes to the session's log and, as it happens, to an optional listener (the
//! desktop shell forwards them to the UI; the CLI narrates and writes the JSONL trace).

pub mod nested;
mod packed;

use crate::events::{Event, EventBody, InterruptKind, PauseReason, RunStatus};
use self::nested::{GateDecision, NestedGate};
use crate::provider::{BoxProvider, CallCtl, LlmProvider, LlmRequest, LlmResponse, ProviderError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Called with every event as it happens (from the thread running the step).
pub type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// Events of a durable run not yet written: `(seq, JSON line)`, filled by the run's listener
/// and written by the store's `StorePersist` with the next step.
pub type EventBuffer = Arc<Mutex<Vec<(u64, String)>>>;

/// A human is needed before the step can finish.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct Pending {
    /// Unique within the run.
    pub id: String,
    pub node: String,
    pub kind: InterruptKind,
    /// What to show the user (text).
    pub prompt: String,
    /// Choices (approval options); empty for free answers.
    #[serde(default)]
    pub options: Vec<String>,
    /// The structured value behind the prompt (sherma interrupt values), `null` otherwise.
    #[serde(default)]
    pub value: Value,
    /// A default answer (Loki input `default`), used for an empty answer.
    #[serde(default)]
    pub default: Option<String>,
    /// The rule an answer must pass (Loki input `validation`).
    #[serde(default)]
    pub validation: Option<String>,
}

impl Pending {
    /// The `interrupt` event announcing this question.
    pub fn event(&self) -> EventBody {
        EventBody::Interrupt {
            id: self.id.clone(),
            node: self.node.clone(),
            kind: self.kind,
            prompt: self.prompt.clone(),
            options: self.options.clone(),
            value: self.value.clone(),
            default: self.default.clone(),
            validation: self.validation.clone(),
        }
    }
}

/// What one step did.
#[derive(Debug)]
pub enum StepOutcome {
    /// The step finished; [`Machine::due`] says what runs next.
    Continue,
    /// The step needs an answer; the machine stays before the node and re-runs it once
    /// [`Machine::answer`] was called.
    Interrupt(Pending),
    /// The run reached its end.
    Finished { output: Value },
    /// The run failed at `node` (or at the run level).
    Failed { node: Option<String>, message: String },
}

/// One dialect's interpreter. Implementations keep their state in `Arc`-shared values so that
/// [`Machine::fork`] is cheap: the session forks after every step to keep a checkpoint.
pub trait Machine: Send {
    /// The agent being run.
    fn agent(&self) -> &str;
    /// The nodes the next step will run (empty once the run is over).
    fn due(&self) -> Vec<String>;
    /// The IR kind of a node (`call_llm`, `script`, ...), for events.
    fn node_kind(&self, node: &str) -> String;
    /// Run one step: emit `node_enter`/`node_exit`/`route`/... through `cx`.
    fn step(&mut self, cx: &Cx<'_>) -> StepOutcome;
    /// Give the pending interrupt its answer; the next step resumes the node with it.
    fn answer(&mut self, pending: &Pending, answer: Value) -> Result<(), String>;
    /// The whole state as a JSON object.
    fn state(&self) -> Value;
    /// Replace one top-level state value (while paused).
    fn edit_state(&mut self, key: &str, value: Value) -> Result<(), String>;
    /// Evaluate a breakpoint condition against the current state (true = stop).
    fn condition(&self, node: &str, condition: &str) -> Result<bool, String>;
    /// Check a breakpoint condition's syntax without running it.
    fn check_condition(&self, condition: &str) -> Result<(), String>;
    /// The file the agent comes from (shown when a debugger steps into a nested run).
    fn file(&self) -> Option<String> {
        None
    }
    /// A copy for a checkpoint; later steps of either copy do not affect the other.
    fn fork(&self) -> Box<dyn Machine>;
    /// The run's final output once finished (`null` before).
    fn output(&self) -> Value {
        Value::Null
    }
    /// The dynamic part of the machine as JSON, for a durable run's checkpoint: what the run
    /// did so far (state, what runs next, visits, a pending answer, ...), with a `format`
    /// version and the `dialect`. The static part is rebuilt from the document. `null` when
    /// the machine cannot be saved.
    fn snapshot(&self) -> Value {
        Value::Null
    }
    /// Take over a [`Machine::snapshot`] of a machine built from the same document (a durable
    /// run resumed in a new process). An error says why it does not fit.
    fn restore(&mut self, _snapshot: &Value) -> Result<(), String> {
        Err("this kind of run cannot be restored from a saved checkpoint".into())
    }
}

/// Where a durable run writes its progress (the SQLite run store, `run::store`).
pub trait Persist: Send {
    /// Called after every step and at every status change, with everything needed to rebuild
    /// the run in another process. An error ends the run (`failed`, with the message).
    fn save(&mut self, point: &SavePoint<'_>) -> Result<(), String>;
}

/// One write of a durable run (see [`Persist`]).
pub struct SavePoint<'a> {
    /// Steps completed.
    pub step: u64,
    pub status: &'a Status,
    /// The session's part of the checkpoint: `{format, step, interrupt_seq, answers, provider,
    /// machine}` (see [`RunSession::resume`]).
    pub snapshot: Value,
    /// The message of the failure that ended (or paused) the run.
    pub failure: Option<&'a str>,
}

/// The format of a durable checkpoint ([`SavePoint::snapshot`]); a resume refuses others.
pub const SNAPSHOT_FORMAT: u64 = 1;

/// Where a resumed run stands (read back from a [`SavePoint::snapshot`]).
#[derive(Clone, Debug)]
pub struct ResumePoint {
    pub step: u64,
    pub status: Status,
    pub interrupt_seq: u64,
    /// Answers that were still queued.
    pub answers: Vec<Value>,
}

impl ResumePoint {
    /// Read the session's part of a checkpoint; the machine and provider parts are returned
    /// as they are (`machine`, `provider`) for the caller to restore.
    pub fn parse(snapshot: &Value, status: Status) -> Result<(ResumePoint, Value, Value), String> {
        let format = snapshot.get("format").and_then(Value::as_u64).unwrap_or(0);
        if format != SNAPSHOT_FORMAT {
            return Err(format!(
                "the checkpoint has format {format}; this Switchyard reads format {SNAPSHOT_FORMAT} (saved by another version?)"
            ));
        }
        let step = snapshot.get("step").and_then(Value::as_u64).ok_or("the checkpoint has no step")?;
        let interrupt_seq = snapshot.get("interrupt_seq").and_then(Value::as_u64).unwrap_or(0);
        let answers = match snapshot.get("answers") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let machine = snapshot.get("machine").cloned().unwrap_or(Value::Null);
        let provider = snapshot.get("provider").cloned().unwrap_or(Value::Null);
        Ok((ResumePoint { step, status, interrupt_seq, answers }, machine, provider))
    }
}

/// A breakpoint on a node, optionally conditional.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Breakpoint {
    pub node: String,
    /// CEL (sherma) or a `{{template}}` that renders truthy (Loki); `None` = always.
    #[serde(default)]
    pub condition: Option<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

impl Breakpoint {
    pub fn on(node: impl Into<String>) -> Breakpoint {
        Breakpoint { node: node.into(), condition: None, enabled: true }
    }
    pub fn when(node: impl Into<String>, condition: impl Into<String>) -> Breakpoint {
        Breakpoint { node: node.into(), condition: Some(condition.into()), enabled: true }
    }
}

/// Where a session stands between calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Status {
    /// Created or answered, not running: `run`/`step` go on.
    Ready,
    Paused { reason: PauseReason },
    /// Waiting for [`RunSession::answer`].
    Interrupted { pending: Pending },
    Finished { status: RunStatus, output: Value },
}

impl Status {
    pub fn is_finished(&self) -> bool {
        matches!(self, Status::Finished { .. })
    }
}

/// The run's event log and listener, shared with nested runs and parallel branches.
pub struct EventLog {
    events: Mutex<Vec<Event>>,
    listener: Option<Listener>,
    /// Keep events in memory (the debugger wants them; a long headless benchmark may not).
    keep: bool,
}

impl EventLog {
    pub fn new(listener: Option<Listener>, keep: bool) -> EventLog {
        EventLog { events: Mutex::new(Vec::new()), listener, keep }
    }
    pub fn emit(&self, run: &str, body: EventBody) {
        if !self.keep && self.listener.is_none() {
            return;
        }
        // Nothing that leaves the engine carries a secret's value (src/secrets.rs).
        let body = crate::secrets::global().serde(&body).unwrap_or(body);
        let ev = Event::now(run, body);
        if let Some(l) = &self.listener {
            l(&ev);
        }
        if self.keep {
            self.events.lock().unwrap_or_else(|p| p.into_inner()).push(ev);
        }
    }
    /// Whether anyone will see events (machines skip building costly payloads otherwise).
    pub fn wanted(&self) -> bool {
        self.keep || self.listener.is_some()
    }
    fn len(&self) -> usize {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
    fn snapshot(&self) -> Vec<Event> {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The provider shared by a run, its parallel branches and its nested runs.
pub type SharedProvider = Arc<dyn LlmProvider>;

/// What a step may use: the event log, the provider, the stop flag, the step number.
pub struct Cx<'a> {
    /// The run id events are stamped with (nested runs get `<parent>/<node>`).
    pub run: String,
    /// The session's step counter for this step (1-based).
    pub step: u64,
    pub log: &'a EventLog,
    pub provider: &'a SharedProvider,
    pub stop: &'a AtomicBool,
    /// Answers queued for nested runs (a child agent's interrupts take them in order).
    pub answers: &'a Mutex<VecDeque<Value>>,
    /// Nesting depth (0 for the top-level run).
    pub depth: u32,
    /// Where nested runs pause for a debugger's "step into" (see `run::nested`).
    pub gate: Option<&'a NestedGate>,
}

impl<'a> Cx<'a> {
    pub fn emit(&self, body: EventBody) {
        self.log.emit(&self.run, body);
    }
    /// `Ok` when the run may contact `target` for `what` (see
    /// [`crate::provider::LlmProvider::network_allowed`]); else the error saying why not and
    /// how to allow it.
    pub fn network(&self, what: &str, target: &str) -> Result<(), String> {
        if self.provider.network_allowed() {
            Ok(())
        } else {
            Err(crate::provider::offline_error(what, target))
        }
    }
    /// Whether events are observed at all (skip building expensive payloads otherwise).
    pub fn wanted(&self) -> bool {
        self.log.wanted()
    }
    /// True once the user asked the run to stop; long work should give up early.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    /// One LLM call, with its `llm_request` / `llm_response` events.
    pub fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, ProviderError> {
        let wanted = self.wanted();
        if wanted {
            self.emit(EventBody::LlmRequest {
                node: request.node.clone(),
                messages: request.messages.clone(),
                tools: request.tools.clone(),
                model: request.model.as_ref().map(|m| m.to_string()),
            });
        }
        let t0 = Instant::now();
        // Streamed text goes out as `llm_delta` events, coalesced to at most one every 40 ms
        // (a trace line per token would bloat traces without helping anyone read them).
        let pending = Mutex::new((String::new(), Instant::now()));
        let flush = |force: bool| {
            let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
            if !p.0.is_empty() && (force || p.1.elapsed() >= Duration::from_millis(40)) {
                let text = std::mem::take(&mut p.0);
                p.1 = Instant::now();
                drop(p);
                self.emit(EventBody::LlmDelta { node: request.node.clone(), text });
            }
        };
        let on_text = |t: &str| {
            if !wanted {
                return;
            }
            pending.lock().unwrap_or_else(|e| e.into_inner()).0.push_str(t);
            flush(false);
        };
        let emit = |b: EventBody| {
            if wanted {
                self.emit(b)
            }
        };
        let ctl = CallCtl { stop: self.stop, on_text: &on_text, emit: &emit };
        let result = self.provider.complete(request, &ctl);
        flush(true);
        let duration_ms = t0.elapsed().as_millis() as u64;
        if wanted {
            match &result {
                Ok(r) => self.emit(EventBody::LlmResponse {
                    node: request.node.clone(),
                    content: r.content.clone(),
                    tool_calls: r.tool_calls.clone(),
                    usage: r.usage,
                    duration_ms: Some(duration_ms),
                    model: r.model.clone(),
                    // Priced only when a real model answered (scripted replies have no model
                    // and their token counts are estimates).
                    cost_usd: r
                        .model
                        .as_ref()
                        .and(request.model.as_ref())
                        .and_then(|m| crate::price::cost_usd(m, r.usage)),
                }),
                Err(e) => self.emit(EventBody::LlmError {
                    node: request.node.clone(),
                    kind: e.kind,
                    message: e.message.clone(),
                    duration_ms,
                }),
            }
        }
        result
    }
    /// One tool call, through the provider: a replay answers it from the recording, a
    /// recording writes it down, otherwise `run` runs it.
    pub fn tool(&self, node: &str, name: &str, args: &Value, run: impl FnOnce() -> Result<Value, String>) -> Result<Value, String> {
        if let Some(r) = self.provider.replay_tool(node, name, args) {
            return r;
        }
        let out = run();
        self.provider.record_tool(node, name, args, &out);
        out
    }
    /// One side effect (a script, a hook, a Python import, a RAG retrieval), through the
    /// provider: a replay of a cassette with effects answers it from the recording, nothing
    /// runs, and the trace is the recorded one (the replay says so once, in its description);
    /// a recording writes it down; otherwise `run` runs it.
    ///
    /// The run's id differs from run to run (a hook's context carries it as `thread_id`), so
    /// the recording holds `{run}` in its place, and a replay puts the current id back.
    pub fn effect(&self, node: &str, name: &str, args: &Value, run: impl FnOnce() -> Result<Value, String>) -> Result<Value, String> {
        let mut key = args.clone();
        replace_strings(&mut key, &self.run, RUN_ID_PLACEHOLDER);
        if let Some(r) = self.provider.replay_effect(node, name, &key) {
            return r.map(|mut v| {
                replace_strings(&mut v, RUN_ID_PLACEHOLDER, &self.run);
                v
            });
        }
        let out = run();
        let mut kept = out.clone();
        if let Ok(v) = &mut kept {
            replace_strings(v, &self.run, RUN_ID_PLACEHOLDER);
        }
        self.provider.record_effect(node, name, &key, &kept);
        out
    }
    /// The context of a nested run (a child agent): its own run id, one level deeper.
    pub fn child(&self, node: &str) -> Cx<'a> {
        Cx {
            run: format!("{}/{}", self.run, node),
            step: self.step,
            log: self.log,
            provider: self.provider,
            stop: self.stop,
            answers: self.answers,
            depth: self.depth + 1,
            gate: self.gate,
        }
    }
}

/// What a recorded effect holds in place of the run's id (see [`Cx::effect`]).
const RUN_ID_PLACEHOLDER: &str = "{run}";

/// Replace `from` by `to` in every string (and object key) of `v`.
fn replace_strings(v: &mut Value, from: &str, to: &str) {
    if from.is_empty() {
        return;
    }
    match v {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Array(items) => items.iter_mut().for_each(|i| replace_strings(i, from, to)),
        Value::Object(map) if map.keys().any(|k| k.contains(from)) => {
            let old = std::mem::take(map);
            for (k, mut item) in old {
                replace_strings(&mut item, from, to);
                map.insert(k.replace(from, to), item);
            }
        }
        Value::Object(map) => map.values_mut().for_each(|i| replace_strings(i, from, to)),
        _ => {}
    }
}

/// How a nested run ended (see [`run_nested`]).
#[derive(Debug)]
pub enum NestedEnd {
    Completed(Value),
    /// The child asked a question and no queued answer was left.
    Unanswered(Pending),
    Failed { node: Option<String>, message: String },
    Stopped,
    TimedOut,
}

/// Run a child agent to its end inside one step of its parent (a sherma sub-agent, a Loki
/// agent node): its events carry the run id `<parent>/<node>`, its questions take queued
/// answers, and `deadline` bounds it. Emits the child's `run_started` … `run_finished`.
pub fn run_nested(child: &mut dyn Machine, cx: &Cx<'_>, node: &str, input: Value, deadline: Option<Instant>) -> NestedEnd {
    let ccx = cx.child(node);
    let state = if ccx.wanted() { child.state() } else { Value::Null };
    ccx.emit(EventBody::RunStarted { agent: child.agent().to_string(), input, state });
    let finish = |status: RunStatus, child: &dyn Machine, output: Value| {
        ccx.emit(EventBody::RunFinished { status, state: child.state(), output });
    };
    let (mut step, mut asked) = (0u64, 0u64);
    loop {
        if cx.stopped() {
            finish(RunStatus::Stopped, child, Value::Null);
            return NestedEnd::Stopped;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            finish(RunStatus::Failed, child, Value::Null);
            return NestedEnd::TimedOut;
        }
        if child.due().is_empty() {
            let output = child.output();
            finish(RunStatus::Completed, child, output.clone());
            return NestedEnd::Completed(output);
        }
        if let Some(gate) = cx.gate {
            let top = ccx.run.split('/').nth(1).unwrap_or(node).to_string();
            if gate.before_step(&ccx, child, &top, step) == GateDecision::Stop {
                finish(RunStatus::Stopped, child, Value::Null);
                return NestedEnd::Stopped;
            }
        }
        step += 1;
        let scx = Cx { step, ..cx.child(node) };
        match child.step(&scx) {
            StepOutcome::Continue => {}
            StepOutcome::Finished { output } => {
                finish(RunStatus::Completed, child, output.clone());
                return NestedEnd::Completed(output);
            }
            StepOutcome::Interrupt(mut p) => {
                asked += 1;
                p.id = format!("{}#{asked}", p.node);
                scx.emit(p.event());
                let queued = cx.answers.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                let answered = match queued {
                    Some(a) => child.answer(&p, a),
                    None => {
                        finish(RunStatus::Interrupted, child, Value::Null);
                        return NestedEnd::Unanswered(p);
                    }
                };
                if let Err(message) = answered {
                    scx.emit(EventBody::Error { node: Some(p.node.clone()), message: message.clone() });
                    finish(RunStatus::Failed, child, Value::Null);
                    return NestedEnd::Failed { node: Some(p.node), message };
                }
            }
            StepOutcome::Failed { node, message } => {
                scx.emit(EventBody::Error { node: node.clone(), message: message.clone() });
                finish(RunStatus::Failed, child, Value::Null);
                return NestedEnd::Failed { node, message };
            }
        }
    }
}

/// How a session is set up.
pub struct RunOptions {
    pub provider: BoxProvider,
    /// Answers used, in order, for interrupts/approvals/inputs before asking anyone.
    pub answers: Vec<Value>,
    pub breakpoints: Vec<Breakpoint>,
    /// Pause (instead of finishing) when a node fails, so the state can be inspected.
    pub break_on_error: bool,
    pub listener: Option<Listener>,
    /// Keep every event in memory ([`RunSession::events`]). On by default.
    pub keep_events: bool,
    /// Keep a checkpoint after every step (needed for [`RunSession::rewind`]). On by default.
    pub checkpoints: bool,
    /// The run id (default: a fresh one).
    pub run_id: Option<String>,
    /// A durable run: where every step and status change is written (default: none).
    pub persist: Option<Box<dyn Persist>>,
    /// Where nested runs pause when a debugger steps into them (default: never).
    pub gate: Option<Arc<NestedGate>>,
    /// A durable run started or resumed through `launch::durable` also writes its events to the
    /// store, with the step they belong to: the listener fills this buffer (default: none).
    pub event_log: Option<EventBuffer>,
}

impl RunOptions {
    pub fn new(provider: BoxProvider) -> RunOptions {
        RunOptions {
            provider,
            answers: Vec::new(),
            breakpoints: Vec::new(),
            break_on_error: false,
            listener: None,
            keep_events: true,
            checkpoints: true,
            run_id: None,
            persist: None,
            gate: None,
            event_log: None,
        }
    }
}

/// A fresh run id: time-based, unique within the process.
pub fn new_run_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("run-{:x}-{n}", crate::events::now_ms())
}

/// One checkpoint: the machine as it was after `step` steps.
struct Checkpoint {
    step: u64,
    provider_mark: usize,
    kept: Kept,
}

/// How a checkpoint is kept.
enum Kept {
    /// A fork of the machine, and the node(s) the step that produced it ran.
    Full { machine: Box<dyn Machine>, nodes: Vec<String> },
    /// `{"nodes", "machine": snapshot}` in the session's packed lines (see `packed`).
    Packed(packed::At),
}

/// A summary of a checkpoint for a debugger's timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    pub step: u64,
    /// The nodes run by that step (empty for the initial checkpoint).
    pub nodes: Vec<String>,
    /// The nodes due next from there.
    pub due: Vec<String>,
}

/// A run in progress (see the module docs).
pub struct RunSession {
    id: String,
    machine: Box<dyn Machine>,
    provider: SharedProvider,
    log: EventLog,
    stop: Arc<AtomicBool>,
    pause: Arc<AtomicBool>,
    answers: Mutex<VecDeque<Value>>,
    breakpoints: Vec<Breakpoint>,
    break_on_error: bool,
    checkpoints_on: bool,
    checkpoints: Vec<Checkpoint>,
    /// Older checkpoints' snapshots (see `packed`); checkpoints before `pack_from` were
    /// offered for packing; `pack_off` once this machine's snapshots proved unfit (none, or
    /// one that restores to another state or other next nodes).
    packed: packed::Packed,
    pack_from: usize,
    pack_off: bool,
    status: Status,
    step: u64,
    /// Set after pausing at a breakpoint so the next `run`/`step` does not stop there again.
    resume_past_break: bool,
    /// A failure held back by break-on-error.
    held_failure: Option<(Option<String>, String)>,
    /// The failure that ended the run, if it failed.
    failure: Option<(Option<String>, String)>,
    interrupt_seq: u64,
    /// A durable run's writer; writes stop once `persist_off` is set.
    persist: Option<Box<dyn Persist>>,
    persist_off: Arc<AtomicBool>,
    gate: Option<Arc<NestedGate>>,
}

/// What [`RunSession::run_until`] should do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Continue,
    Step,
    /// Like `Continue`, but hand control back (status `Ready`, no event) once the instant has
    /// passed, so a driver can serve queries and commands between steps.
    Until(Instant),
}

impl RunSession {
    /// Wrap a machine into a session and emit `run_started`.
    pub fn new(machine: Box<dyn Machine>, input: Value, options: RunOptions) -> RunSession {
        let mut s = RunSession::started(machine, input, options, VecDeque::new(), 0, 0);
        s.persist_now();
        s
    }

    /// Rebuild a durable run in a new process: `machine` already restored from the checkpoint
    /// (and the provider in `options` moved to its saved position). Emits `run_started` (with
    /// the restored state) and, for an interrupted run, its `interrupt` again. The first
    /// checkpoint kept is the resumed step: a rewind goes no further back.
    pub fn resume(machine: Box<dyn Machine>, input: Value, at: ResumePoint, options: RunOptions) -> RunSession {
        let mut s = RunSession::started(machine, input, options, at.answers.into(), at.step, at.interrupt_seq);
        // The run stopped before the node due next; do not stop there again at once.
        s.resume_past_break = true;
        match at.status {
            Status::Interrupted { pending } => {
                s.log.emit(&s.id, pending.event());
                s.status = Status::Interrupted { pending };
            }
            Status::Paused { reason } => s.pause(reason),
            _ => {}
        }
        s.persist_now();
        s
    }

    /// The session at `step`, `run_started` emitted and its first checkpoint taken; `answers`
    /// come before the options' queued ones.
    fn started(
        machine: Box<dyn Machine>,
        input: Value,
        options: RunOptions,
        mut answers: VecDeque<Value>,
        step: u64,
        interrupt_seq: u64,
    ) -> RunSession {
        let id = options.run_id.unwrap_or_else(new_run_id);
        let log = EventLog::new(options.listener, options.keep_events);
        answers.extend(options.answers);
        let mut s = RunSession {
            id,
            provider: Arc::from(options.provider),
            log,
            stop: Arc::new(AtomicBool::new(false)),
            pause: Arc::new(AtomicBool::new(false)),
            answers: Mutex::new(answers),
            breakpoints: options.breakpoints,
            break_on_error: options.break_on_error,
            checkpoints_on: options.checkpoints,
            checkpoints: Vec::new(),
            packed: packed::Packed::default(),
            pack_from: 0,
            pack_off: false,
            status: Status::Ready,
            step,
            resume_past_break: false,
            held_failure: None,
            failure: None,
            interrupt_seq,
            persist: options.persist,
            persist_off: Arc::new(AtomicBool::new(false)),
            gate: options.gate,
            machine,
        };
        let state = if s.log.wanted() { s.machine.state() } else { Value::Null };
        s.log.emit(&s.id, EventBody::RunStarted { agent: s.machine.agent().to_string(), input, state });
        s.push_checkpoint(Vec::new());
        s
    }

    /// Check breakpoints before the next step although the session was just rebuilt (an
    /// engine that rebuilds a run between two steps of one drive, e.g. on Restate; a rebuilt
    /// session otherwise goes past the node due next, where it stopped).
    pub fn break_before_next(&mut self) {
        self.resume_past_break = false;
    }

    /// Whether this run writes its progress (a durable run).
    pub fn is_durable(&self) -> bool {
        self.persist.is_some()
    }

    /// Set from any thread to stop writing a durable run's progress (a front end shutting
    /// down: the stop that follows must not be saved, so the run stays resumable).
    pub fn persist_off_handle(&self) -> Arc<AtomicBool> {
        self.persist_off.clone()
    }

    /// The session's part of a durable checkpoint (see [`SavePoint::snapshot`]).
    pub fn durable_snapshot(&self) -> Value {
        let answers: Vec<Value> = self.answers.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
        serde_json::json!({
            "format": SNAPSHOT_FORMAT,
            "step": self.step,
            "interrupt_seq": self.interrupt_seq,
            "answers": answers,
            "provider": self.provider.position(),
            "machine": self.machine.snapshot(),
        })
    }

    /// Write a durable run's progress now. A failed write ends the run (`failed`) with the
    /// store's message, unless it already ended.
    fn persist_now(&mut self) {
        if self.persist.is_none() || self.persist_off.load(Ordering::Relaxed) {
            return;
        }
        let snapshot = self.durable_snapshot();
        let failure = self.failure.as_ref().map(|(_, m)| m.as_str());
        let point = SavePoint { step: self.step, status: &self.status, snapshot, failure };
        let Some(p) = self.persist.as_mut() else { return };
        if let Err(e) = p.save(&point) {
            let message = format!("durable run: {e}");
            // The run cannot be kept any more: stop writing and end it.
            self.persist = None;
            if !self.status.is_finished() {
                self.finish_failed(None, message);
            } else {
                self.log.emit(&self.id, EventBody::Error { node: None, message });
            }
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn status(&self) -> &Status {
        &self.status
    }
    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.step
    }
    pub fn state(&self) -> Value {
        self.machine.state()
    }
    pub fn due(&self) -> Vec<String> {
        self.machine.due()
    }
    pub fn machine(&self) -> &dyn Machine {
        self.machine.as_ref()
    }
    /// Every event so far (empty when `keep_events` is off).
    pub fn events(&self) -> Vec<Event> {
        self.log.snapshot()
    }
    pub fn event_count(&self) -> usize {
        self.log.len()
    }
    /// Set from any thread to pause before the next step.
    pub fn pause_handle(&self) -> Arc<AtomicBool> {
        self.pause.clone()
    }
    /// Set from any thread to stop: the current step gives up where it can, the run ends
    /// with status `stopped`.
    pub fn stop_handle(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }
    pub fn breakpoints(&self) -> &[Breakpoint] {
        &self.breakpoints
    }
    /// Replace the breakpoints. Conditions are syntax-checked; a bad one is refused whole.
    pub fn set_breakpoints(&mut self, breakpoints: Vec<Breakpoint>) -> Result<(), String> {
        for b in &breakpoints {
            if let Some(c) = &b.condition {
                self.machine
                    .check_condition(c)
                    .map_err(|e| format!("breakpoint on `{}`: condition `{c}`: {e}", b.node))?;
            }
        }
        self.breakpoints = breakpoints;
        Ok(())
    }
    pub fn set_break_on_error(&mut self, on: bool) {
        self.break_on_error = on;
    }
    /// Queue answers for interrupts to come.
    pub fn queue_answers(&mut self, answers: impl IntoIterator<Item = Value>) {
        self.answers.lock().unwrap_or_else(|p| p.into_inner()).extend(answers);
    }
    pub fn queued_answers(&self) -> usize {
        self.answers.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Run until the end, a breakpoint, an interrupt without a queued answer, a pause or a stop.
    pub fn run(&mut self) -> &Status {
        self.run_until(Mode::Continue)
    }

    /// Run one step, then pause (or stop earlier for the same reasons as [`RunSession::run`]).
    pub fn step(&mut self) -> &Status {
        self.run_until(Mode::Step)
    }

    /// Like [`RunSession::run`], but return with status `Ready` (and no event) once `budget` has
    /// passed after a completed step. Calling it again goes on where it left off.
    pub fn run_for(&mut self, budget: std::time::Duration) -> &Status {
        self.run_until(Mode::Until(Instant::now() + budget))
    }

    /// Answer the pending interrupt `id`. The run stays put until `run`/`step`.
    pub fn answer(&mut self, id: &str, value: Value) -> Result<(), String> {
        let Status::Interrupted { pending } = &self.status else {
            return Err("the run is not waiting for an answer".into());
        };
        if pending.id != id {
            return Err(format!("the run is waiting for `{}`, not `{id}`", pending.id));
        }
        let pending = pending.clone();
        self.machine.answer(&pending, value)?;
        self.status = Status::Ready;
        self.persist_now();
        Ok(())
    }

    /// Change one top-level state value while the run is not running.
    pub fn edit_state(&mut self, key: &str, value: Value) -> Result<(), String> {
        if self.status.is_finished() {
            return Err("the run has finished; rewind to a step to change its state".into());
        }
        self.machine.edit_state(key, value.clone())?;
        self.log.emit(&self.id, EventBody::StateEdited { key: key.to_string(), value });
        // The newest checkpoint now shows the edited state, so a rewind to here keeps it.
        if self.checkpoints_on {
            if let Some(last) = self.checkpoints.last_mut() {
                if last.step == self.step {
                    // The newest checkpoint is always a fork (`rewind` makes it one).
                    if let Kept::Full { machine, .. } = &mut last.kept {
                        *machine = self.machine.fork();
                    }
                }
            }
        }
        self.persist_now();
        Ok(())
    }

    /// Checkpoints kept so far, oldest first.
    pub fn checkpoints(&self) -> Vec<CheckpointInfo> {
        self.checkpoints
            .iter()
            .filter_map(|c| {
                let (machine, nodes) = self.kept_at(c).ok()?;
                Some(CheckpointInfo { step: c.step, due: machine.due(), nodes })
            })
            .collect()
    }

    /// The state as it was after `step` steps.
    pub fn state_at(&self, step: u64) -> Option<Value> {
        let c = self.checkpoints.iter().find(|c| c.step == step)?;
        match &c.kept {
            Kept::Full { machine, .. } => Some(machine.state()),
            Kept::Packed(_) => self.kept_at(c).ok().map(|(m, _)| m.state()),
        }
    }

    /// A checkpoint's machine (a fork of it) and nodes; a packed one is restored into a fork of
    /// the running machine.
    fn kept_at(&self, c: &Checkpoint) -> Result<(Box<dyn Machine>, Vec<String>), String> {
        match &c.kept {
            Kept::Full { machine, nodes } => Ok((machine.fork(), nodes.clone())),
            Kept::Packed(at) => {
                let mut line: Value = serde_json::from_str(&self.packed.get(*at)?).map_err(|e| e.to_string())?;
                let nodes: Vec<String> = serde_json::from_value(line["nodes"].take()).map_err(|e| e.to_string())?;
                let mut machine = self.machine.fork();
                machine.restore(&line["machine"])?;
                Ok((machine, nodes))
            }
        }
    }

    /// Bytes held by packed checkpoints and how many checkpoints are packed (tests, benches).
    pub fn packed_checkpoints(&self) -> (usize, usize) {
        let n = self.checkpoints.iter().filter(|c| matches!(c.kept, Kept::Packed(_))).count();
        (n, self.packed.bytes())
    }

    /// Go back to the checkpoint after `step` steps and continue from there (a fork: later
    /// checkpoints are dropped, scripted replies taken since are given back).
    pub fn rewind(&mut self, step: u64) -> Result<(), String> {
        let Some(pos) = self.checkpoints.iter().position(|c| c.step == step) else {
            let have: Vec<String> = self.checkpoints.iter().map(|c| c.step.to_string()).collect();
            return Err(if self.checkpoints_on {
                format!("no checkpoint after step {step}; available: {}", have.join(", "))
            } else {
                "this run keeps no checkpoints (checkpoints were turned off)".into()
            });
        };
        let (machine, nodes) = self.kept_at(&self.checkpoints[pos])?;
        self.checkpoints.truncate(pos + 1);
        let cp = &mut self.checkpoints[pos];
        // The newest checkpoint is a fork again (state edits replace it).
        cp.kept = Kept::Full { machine: machine.fork(), nodes };
        let mark = cp.provider_mark;
        let last_packed = self.checkpoints.iter().rev().find_map(|c| match c.kept {
            Kept::Packed(at) => Some(at),
            Kept::Full { .. } => None,
        });
        self.packed.truncate(last_packed);
        self.pack_from = self.pack_from.min(self.checkpoints.len());
        self.machine = machine;
        self.provider.rewind_to(mark);
        self.step = step;
        self.stop.store(false, Ordering::Relaxed);
        self.held_failure = None;
        self.failure = None;
        self.resume_past_break = true;
        self.status = Status::Paused { reason: PauseReason::Requested };
        self.log.emit(&self.id, EventBody::Rewound { step });
        self.persist_now();
        Ok(())
    }

    /// End the run now with status `stopped`.
    pub fn stop(&mut self) -> &Status {
        if !self.status.is_finished() {
            self.finish(RunStatus::Stopped, Value::Null);
        }
        &self.status
    }

    /// End a run that waits for an answer nobody can give (no TTY, no `--answer` left):
    /// status `interrupted`.
    pub fn give_up_interrupted(&mut self) -> &Status {
        if matches!(self.status, Status::Interrupted { .. }) {
            self.finish(RunStatus::Interrupted, Value::Null);
        }
        &self.status
    }

    fn finish(&mut self, status: RunStatus, output: Value) {
        let state = self.machine.state();
        self.log.emit(&self.id, EventBody::RunFinished { status, state, output: output.clone() });
        self.status = Status::Finished { status, output };
        self.persist_now();
    }

    fn push_checkpoint(&mut self, nodes: Vec<String>) {
        if !self.checkpoints_on && !self.checkpoints.is_empty() {
            return;
        }
        let provider_mark = self.provider.mark();
        self.checkpoints.push(Checkpoint { step: self.step, provider_mark, kept: Kept::Full { machine: self.machine.fork(), nodes } });
        self.pack_old();
    }

    /// Pack the checkpoints older than the newest `KEEP_FULL`, a block's worth at a time. Each
    /// snapshot is restored and compared (state and next nodes) before its fork goes; a machine
    /// without snapshots, or with one that does not restore to the same, keeps forks from
    /// there on; so does a checkpoint whose snapshot is long (`MAX_LINE`).
    fn pack_old(&mut self) {
        let n = self.checkpoints.len();
        if self.pack_off || n < self.pack_from + packed::KEEP_FULL + packed::BLOCK {
            return;
        }
        let end = n - packed::KEEP_FULL;
        for i in self.pack_from..end {
            let Kept::Full { machine, nodes } = &self.checkpoints[i].kept else { continue };
            // Looked at through a fork: a machine may cache a whole-state JSON view when asked
            // for its snapshot or state, and a checkpoint kept as a fork must not pin one (a
            // 4 MiB state over 2,000 kept checkpoints would be 8 GiB).
            let machine = machine.fork();
            let snapshot = machine.snapshot();
            if snapshot.is_null() {
                self.pack_off = true;
                return;
            }
            let line = serde_json::json!({ "nodes": nodes, "machine": snapshot }).to_string();
            if line.len() > packed::MAX_LINE {
                continue;
            }
            let mut back = self.machine.fork();
            if back.restore(&snapshot).is_err() || back.state() != machine.state() || back.due() != machine.due() {
                self.pack_off = true;
                return;
            }
            let at = self.packed.push(line);
            self.checkpoints[i].kept = Kept::Packed(at);
        }
        self.pack_from = end;
    }

    fn pause(&mut self, reason: PauseReason) {
        self.log.emit(&self.id, EventBody::Paused { reason });
        self.status = Status::Paused { reason };
        self.persist_now();
    }

    /// The first enabled breakpoint that fires for the nodes due next.
    fn breakpoint_hit(&self) -> Option<Result<String, String>> {
        let due = self.machine.due();
        for b in self.breakpoints.iter().filter(|b| b.enabled) {
            if !due.contains(&b.node) {
                continue;
            }
            match &b.condition {
                None => return Some(Ok(b.node.clone())),
                Some(c) => match self.machine.condition(&b.node, c) {
                    Ok(true) => return Some(Ok(b.node.clone())),
                    Ok(false) => {}
                    Err(e) => {
                        return Some(Err(format!(
                            "breakpoint condition `{c}` on `{}` failed: {e}; paused here so you can fix it",
                            b.node
                        )));
                    }
                },
            }
        }
        None
    }

    fn run_until(&mut self, mode: Mode) -> &Status {
        if self.status.is_finished() {
            return &self.status;
        }
        if let Some((node, message)) = self.held_failure.take() {
            // Break-on-error held this failure back; going on makes it final.
            self.finish_failed(node, message);
            return &self.status;
        }
        loop {
            if let Status::Interrupted { pending } = &self.status {
                let queued = self.answers.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                match queued {
                    Some(a) => {
                        let pending = pending.clone();
                        if let Err(e) = self.machine.answer(&pending, a) {
                            self.finish_failed(Some(pending.node.clone()), e);
                            return &self.status;
                        }
                        self.status = Status::Ready;
                    }
                    None => return &self.status,
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                self.finish(RunStatus::Stopped, Value::Null);
                return &self.status;
            }
            if self.pause.swap(false, Ordering::Relaxed) {
                self.resume_past_break = true;
                self.pause(PauseReason::Requested);
                return &self.status;
            }
            if self.machine.due().is_empty() {
                let output = self.machine.output();
                self.finish(RunStatus::Completed, output);
                return &self.status;
            }
            if !std::mem::take(&mut self.resume_past_break) {
                match self.breakpoint_hit() {
                    Some(Ok(_)) => {
                        self.resume_past_break = true;
                        self.pause(PauseReason::Breakpoint);
                        return &self.status;
                    }
                    Some(Err(message)) => {
                        self.log.emit(&self.id, EventBody::Error { node: None, message });
                        self.resume_past_break = true;
                        self.pause(PauseReason::Breakpoint);
                        return &self.status;
                    }
                    None => {}
                }
            }
            self.status = Status::Ready;
            self.step += 1;
            let nodes = self.machine.due();
            let outcome = {
                let cx = Cx {
                    run: self.id.clone(),
                    step: self.step,
                    log: &self.log,
                    provider: &self.provider,
                    stop: &self.stop,
                    answers: &self.answers,
                    depth: 0,
                    gate: self.gate.as_deref(),
                };
                self.machine.step(&cx)
            };
            match outcome {
                StepOutcome::Continue => {
                    self.push_checkpoint(nodes);
                    self.persist_now();
                    if self.status.is_finished() {
                        return &self.status;
                    }
                    if mode == Mode::Step {
                        self.resume_past_break = true;
                        self.pause(PauseReason::Step);
                        return &self.status;
                    }
                    if let Mode::Until(deadline) = mode {
                        if Instant::now() >= deadline {
                            return &self.status;
                        }
                    }
                }
                StepOutcome::Interrupt(mut pending) => {
                    // The machine stays before the node; this step did not complete.
                    self.step -= 1;
                    self.interrupt_seq += 1;
                    if pending.id.is_empty() {
                        pending.id = format!("{}#{}", pending.node, self.interrupt_seq);
                    }
                    self.log.emit(&self.id, pending.event());
                    // Do not stop again at a breakpoint on the node being resumed.
                    self.resume_past_break = true;
                    self.status = Status::Interrupted { pending };
                    self.persist_now();
                    if self.status.is_finished() {
                        return &self.status;
                    }
                }
                StepOutcome::Finished { output } => {
                    self.push_checkpoint(nodes);
                    self.finish(RunStatus::Completed, output);
                    return &self.status;
                }
                StepOutcome::Failed { node, message } => {
                    if self.stop.load(Ordering::Relaxed) {
                        self.finish(RunStatus::Stopped, Value::Null);
                        return &self.status;
                    }
                    self.log.emit(&self.id, EventBody::Error { node: node.clone(), message: message.clone() });
                    self.failure = Some((node.clone(), message.clone()));
                    if self.break_on_error {
                        self.held_failure = Some((node, message));
                        self.pause(PauseReason::Error);
                        return &self.status;
                    }
                    self.finish_failed_quiet();
                    return &self.status;
                }
            }
        }
    }

    fn finish_failed(&mut self, node: Option<String>, message: String) {
        self.log.emit(&self.id, EventBody::Error { node: node.clone(), message: message.clone() });
        self.failure = Some((node, message));
        self.finish_failed_quiet();
    }

    fn finish_failed_quiet(&mut self) {
        self.finish(RunStatus::Failed, Value::Null);
    }

    /// The latest node failure: the one that ended the run, or the one break-on-error paused at.
    pub fn last_failure(&self) -> Option<&(Option<String>, String)> {
        self.failure.as_ref()
    }

    /// The failure that ended the run: (node, message).
    pub fn failure(&self) -> Option<&(Option<String>, String)> {
        match self.status {
            Status::Finished { status: RunStatus::Failed, .. } => self.failure.as_ref(),
            _ => None,
        }
    }
}
