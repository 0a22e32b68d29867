//! A recorded run reviewed: the state of its top-level run after any step, rebuilt from its
//! trace (the JSONL events of `runtime::events`) with the dialect's own reducers, so a saved run
//! shows what the engine computed (ARCHITECTURE.md: "The debugger shows what the engine did").
//! The desktop shell answers `trace_state_at` with [`Trace::state_at`].
//!
//! How a state is rebuilt:
//!
//! - step 0 is the state `run_started` recorded (traces written before it carried one: the
//!   input laid over the agent's declared defaults / `initial_state`, or over nothing without
//!   the agent file);
//! - a sherma step applies its node's `node_exit` update with the machine's reducers
//!   ([`State::apply`]: `messages` appends, replacing a message with the same `id`; other
//!   fields overwrite), and a `has_error_fallback` route clears `__sherma__.error_fallback`,
//!   as routing does in the machine;
//! - a Loki super-step merges its nodes' diffs (their `node_exit` updates) in node-id order, an
//!   end node's last, through the graph's `reducers` with the machine's [`merge_diffs`]; a step
//!   in which a node entered and never exited (it failed or was stopped), or that reached two
//!   end nodes, failed and merged nothing, as in the machine;
//! - `state_edited` values apply where the session applied them: to the state after the step
//!   the run was at (a sherma `messages` edit replaces the list); `rewound {step}` drops
//!   everything after that step;
//! - from the step the run finished at on, the `run_finished` state, which is exact.
//!
//! Best effort, said in [`TraceState::warning`]: a Loki graph's reducers live in its agent file,
//! which the trace does not name. The caller passes the file it believes the run came from;
//! when there is none, or it does not fit the trace (a node the trace ran is missing from it or
//! has another kind), every update overwrites its keys. The state rebuilt for the run's last step
//! is compared with the recorded final state, so a changed agent file (other reducers), or a hook
//! that replaced the state (sherma `after_graph_invoke`), shows as a warning naming the keys
//! that differ.

use loki::machine::{LokiState, initial_state_of, merge_diffs, state_value};
use model::doc::loki::LokiDoc;
use model::doc::{Dialect, Document};
use model::graph::lower_sherma::HAS_ERROR_FALLBACK;
use runtime::events::{Event, EventBody, HookOutcome, PauseReason, RouteReason};
use serde_json::{Map, Value};
use sherma::machine::INTERNAL;
use sherma::state::{MESSAGES, State};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// The state of a recorded run at a step, and the one before (the UI shows the difference).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceState {
    /// The state after the step (step 0: the initial state).
    pub state: Value,
    /// The state after the step before; `None` for step 0.
    pub prev: Option<Value>,
    /// Why these states may differ from what the engine held (no agent file for a Loki graph's
    /// reducers, a file that does not fit, a final state the rebuilt one does not reach, ...);
    /// `None` when they are what the engine computed.
    pub warning: Option<String>,
}

/// A trace read for review: the event of each of its lines (`None`: a line this version does
/// not read, such as an event kind from a newer one).
#[derive(Clone, Debug, Default)]
pub struct Trace {
    lines: Vec<Option<Event>>,
}

impl Trace {
    /// Read a JSONL trace (`switchyard run --trace`, or the app's runs folder).
    pub fn read(path: &Path) -> Result<Trace, String> {
        Ok(Trace::from_values(runtime::driver::read_trace(path)?))
    }

    /// A trace from its lines as JSON values ([`runtime::driver::read_trace`]).
    pub fn from_values(values: Vec<Value>) -> Trace {
        Trace { lines: values.into_iter().map(|v| serde_json::from_value(v).ok()).collect() }
    }

    /// A trace from events (a run in memory).
    pub fn from_events(events: Vec<Event>) -> Trace {
        Trace { lines: events.into_iter().map(Some).collect() }
    }

    /// Lines (events) in the trace.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The top-level run's state after `step` steps (0 = initial) and after the step before,
    /// reading only the trace's first `upto` lines when given (an earlier fork of a run whose
    /// trace went on after a rewind: the lines the debugger had then). `doc` is the agent file
    /// the run is believed to come from (see the module docs).
    pub fn state_at(&self, upto: Option<usize>, step: u64, doc: Option<&Document>) -> TraceState {
        let n = upto.unwrap_or(self.lines.len()).min(self.lines.len());
        let lines = &self.lines[..n];
        let unread = lines.iter().filter(|l| l.is_none()).count();
        let note = (unread > 0).then(|| {
            format!(
                "{unread} line{} of the trace {} not an event this version reads and {} skipped",
                if unread == 1 { "" } else { "s" },
                if unread == 1 { "is" } else { "are" },
                if unread == 1 { "was" } else { "were" },
            )
        });
        rebuild(lines.iter().flatten(), step, doc, note)
    }
}

/// [`Trace::state_at`] over events in memory.
pub fn state_at(events: &[Event], step: u64, doc: Option<&Document>) -> TraceState {
    rebuild(events.iter(), step, doc, None)
}

// ---------------------------------------------------------------------------------------------
// What the trace says happened to the state, in order
// ---------------------------------------------------------------------------------------------

/// One top-level step's node events.
#[derive(Debug, Default)]
struct StepEvents<'a> {
    step: u64,
    /// Nodes that entered, with their kinds.
    entered: Vec<(&'a str, &'a str)>,
    /// Node updates, in the order the nodes exited.
    exits: Vec<(&'a str, &'a Value)>,
}

impl StepEvents<'_> {
    /// A node entered and never exited: it failed, asked a question (sherma) or was stopped.
    fn unfinished(&self) -> bool {
        self.entered.iter().any(|(n, _)| !self.exits.iter().any(|(e, _)| e == n))
    }
}

#[derive(Debug)]
enum Effect<'a> {
    Step(StepEvents<'a>),
    /// `state_edited` while the run was at `step`.
    Edit { step: u64, key: &'a str, value: &'a Value },
    /// A sherma `has_error_fallback` branch was taken after `step`.
    ClearFallback { step: u64 },
}

impl Effect<'_> {
    fn step(&self) -> u64 {
        match self {
            Effect::Step(s) => s.step,
            Effect::Edit { step, .. } | Effect::ClearFallback { step } => *step,
        }
    }
}

#[derive(Debug)]
struct Started<'a> {
    agent: &'a str,
    input: &'a Value,
    /// The whole state before the first step, when the trace records it.
    state: Option<&'a Value>,
}

/// The top-level run's history as far as its state goes.
#[derive(Debug, Default)]
struct Plan<'a> {
    started: Option<Started<'a>>,
    /// Effects in the order they happened, without those a rewind undid.
    effects: Vec<Effect<'a>>,
    /// The final state and the step the run was at when it finished.
    finished: Option<(&'a Value, u64)>,
    /// Every top-level node the trace entered, with its kind.
    nodes: BTreeMap<&'a str, &'a str>,
    /// A sherma `after_graph_invoke` hook replaced the state (not in any node update).
    replaced_by_hook: bool,
}

fn plan<'a>(events: impl Iterator<Item = &'a Event>) -> Plan<'a> {
    let mut p = Plan::default();
    let mut top: Option<&str> = None;
    // The session's step counter, and the effect holding that step's node events.
    let mut at: u64 = 0;
    let mut open: Option<usize> = None;
    for ev in events {
        let run = ev.run.as_str();
        let top = *top.get_or_insert_with(|| run.split('/').next().unwrap_or(run));
        if run != top {
            continue; // nested runs change the state only through their node's update
        }
        match &ev.body {
            EventBody::RunStarted { agent, input, state } => {
                if p.started.is_none() {
                    p.started = Some(Started { agent, input, state: state.is_object().then_some(state) });
                }
            }
            EventBody::NodeEnter { step, node, kind } => {
                at = *step;
                p.nodes.insert(node, kind);
                let i = step_effect(&mut p.effects, &mut open, *step);
                if let Effect::Step(s) = &mut p.effects[i] {
                    s.entered.push((node, kind));
                }
            }
            EventBody::NodeExit { step, node, update, .. } => {
                at = *step;
                let i = step_effect(&mut p.effects, &mut open, *step);
                if let Effect::Step(s) = &mut p.effects[i] {
                    s.exits.push((node, update));
                }
            }
            EventBody::Route { reason: RouteReason::Branch { condition, .. }, .. } if condition == HAS_ERROR_FALLBACK => {
                p.effects.push(Effect::ClearFallback { step: at });
            }
            EventBody::Interrupt { .. } => {
                // A sherma interrupt node entered, then asked: the session does not count the
                // step (it runs again with the answer). Loki asks before any node enters.
                if let Some(Effect::Step(s)) = open.map(|i| &p.effects[i])
                    && s.step == at
                    && s.unfinished()
                {
                    at = at.saturating_sub(1);
                    open = None;
                }
            }
            EventBody::Paused { reason: PauseReason::Error } => {
                // Break on error: the session counted the failed step. One that failed before
                // any of its nodes ran (a Loki loop limit) left no node event.
                let failed_here = matches!(open.map(|i| &p.effects[i]), Some(Effect::Step(s)) if s.step == at && s.unfinished());
                if !failed_here {
                    at += 1;
                    open = None;
                }
            }
            EventBody::StateEdited { key, value } => p.effects.push(Effect::Edit { step: at, key, value }),
            EventBody::Rewound { step } => {
                p.effects.retain(|e| e.step() <= *step);
                at = *step;
                open = None;
                p.finished = None;
            }
            EventBody::RunFinished { state, .. } => p.finished = Some((state, at)),
            EventBody::Hook { point, outcome: HookOutcome::Modified, .. } if point == "after_graph_invoke" => {
                p.replaced_by_hook = true;
            }
            _ => {}
        }
    }
    p
}

/// The index of the effect holding `step`'s node events (a new one when the step is new).
fn step_effect(effects: &mut Vec<Effect<'_>>, open: &mut Option<usize>, step: u64) -> usize {
    if let Some(i) = *open
        && matches!(&effects[i], Effect::Step(s) if s.step == step)
    {
        return i;
    }
    effects.push(Effect::Step(StepEvents { step, ..StepEvents::default() }));
    *open = Some(effects.len() - 1);
    effects.len() - 1
}

// ---------------------------------------------------------------------------------------------
// Which dialect, which agent file
// ---------------------------------------------------------------------------------------------

/// The dialect of the traced run: from the kinds of the nodes it ran, else from its initial
/// state (`initial_prompt` is Loki's), else from the agent file, else sherma.
fn dialect_of(p: &Plan<'_>, doc: Option<&Document>) -> Dialect {
    // An LLLM call loop: its own node kinds, or its state (the dialog tree).
    let lllm_state = matches!(p.started.as_ref().and_then(|s| s.state), Some(Value::Object(s)) if s.contains_key("active_dialog"));
    if lllm_state || p.nodes.values().any(|k| k.starts_with("lllm_")) {
        return Dialect::Lllm;
    }
    for kind in p.nodes.values() {
        if model::doc::sherma::NODE_TYPES.contains(kind) {
            return Dialect::Sherma;
        }
        if model::doc::loki::NODE_TYPES.contains(kind) {
            return Dialect::Loki;
        }
    }
    if let Some(Value::Object(s)) = p.started.as_ref().and_then(|s| s.state) {
        return if s.contains_key("initial_prompt") { Dialect::Loki } else { Dialect::Sherma };
    }
    // A trace without an LLLM state is not of an LLLM run, whatever file is beside it.
    doc.and_then(Document::dialect).filter(|d| *d != Dialect::Lllm).unwrap_or(Dialect::Sherma)
}

fn dialect_name(d: Dialect) -> &'static str {
    match d {
        Dialect::Sherma => "sherma",
        Dialect::Loki => "Loki",
        Dialect::Lllm => "LLLM",
    }
}

/// Whether `doc` can be the file the traced run came from: same dialect, every node the run
/// entered is in it with the same kind (Loki), its agent is in it (sherma).
fn fits(doc: &Document, dialect: Dialect, p: &Plan<'_>) -> Result<(), String> {
    let path = doc.path.display();
    match (doc.dialect(), dialect) {
        (None, _) => Err(format!("{path} is neither a sherma agent nor a Loki graph")),
        (Some(d), want) if d != want => {
            Err(format!("{path} is a {} file and the trace is of a {} run", dialect_name(d), dialect_name(want)))
        }
        (Some(Dialect::Loki), _) => {
            let l = doc.loki().expect("a Loki document");
            for (node, kind) in &p.nodes {
                match l.node(node) {
                    None => return Err(format!("node `{node}` of the trace is not in {path}")),
                    Some(n) if n.kind_str() != *kind => {
                        return Err(format!(
                            "node `{node}` ran as a `{kind}` node and is a `{}` node in {path}",
                            n.kind_str()
                        ));
                    }
                    Some(_) => {}
                }
            }
            Ok(())
        }
        (Some(Dialect::Lllm), _) => {
            let l = doc.lllm().expect("an LLLM document");
            match p.started.as_ref().map(|s| s.agent) {
                Some(agent) if l.agent(agent).is_none() => Err(format!("agent `{agent}` of the trace is not in {path}")),
                _ => Ok(()),
            }
        }
        (Some(Dialect::Sherma), _) => {
            let s = doc.sherma().expect("a sherma document");
            match p.started.as_ref().map(|s| s.agent) {
                Some(agent) if s.agent(agent).is_none() => Err(format!("agent `{agent}` of the trace is not in {path}")),
                _ => Ok(()),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The fold
// ---------------------------------------------------------------------------------------------

enum Fold {
    Sherma(State),
    Loki(LokiState),
}

impl Fold {
    fn json(&self) -> Value {
        match self {
            Fold::Sherma(s) => s.to_json(),
            Fold::Loki(s) => state_value(s),
        }
    }
}

/// What the fold goes by: the dialect, the Loki graph its reducers come from.
struct Rules<'d> {
    dialect: Dialect,
    /// The agent file, when it fits the trace.
    doc: Option<&'d Document>,
}

impl Rules<'_> {
    fn loki(&self) -> Option<&LokiDoc> {
        self.doc.and_then(Document::loki)
    }
}

/// What `launch::input_of` made of a run request, read back: (user message, initial state).
fn request_of(input: &Value) -> (Option<String>, Option<Value>) {
    match input {
        Value::Null => (None, None),
        Value::String(t) => (Some(t.clone()), None),
        Value::Object(m)
            if m.get("input").is_some_and(Value::is_string)
                && m.keys().all(|k| k == "input" || k == "state")
                && m.get("state").is_none_or(Value::is_object) =>
        {
            (m.get("input").and_then(Value::as_str).map(str::to_string), m.get("state").cloned())
        }
        other => (None, Some(other.clone())),
    }
}

/// The state before the first step, and a note when it is a guess.
fn initial(p: &Plan<'_>, rules: &Rules<'_>) -> (Fold, Option<String>) {
    let Some(started) = &p.started else {
        let note = "the trace has no `run_started` of its run, so the states start empty".to_string();
        return (empty(rules.dialect), Some(note));
    };
    if let Some(Value::Object(m)) = started.state {
        return (from_object(rules.dialect, m), None);
    }
    // A trace from before `run_started` carried the state: the run's input over the agent's
    // declared defaults (sherma) or its `initial_state` (Loki).
    let (text, state) = request_of(started.input);
    match rules.dialect {
        // LLLM runs record their state in `run_started`; this is the fallback of older traces.
        Dialect::Sherma | Dialect::Lllm => {
            let input = crate::sherma_input(text.as_deref(), state).unwrap_or(Value::Null);
            let agent = rules.doc.and_then(Document::sherma).and_then(|s| s.agent(started.agent));
            if let Some(agent) = agent
                && let Ok(st) = State::initial(agent, &input)
            {
                return (Fold::Sherma(st), None);
            }
            let mut st = State::new();
            if let Value::Object(m) = &input {
                let _ = st.apply(m);
            }
            let note = "the trace does not record the initial state and no agent file fits it, so the \
                        declared defaults are missing from the states";
            (Fold::Sherma(st), Some(note.into()))
        }
        Dialect::Loki => {
            if let Some(l) = rules.loki()
                && let Ok(st) = initial_state_of(l, text.as_deref().unwrap_or(""), state.clone())
            {
                return (Fold::Loki(st), None);
            }
            let mut st = LokiState::new();
            if let Some(Value::Object(m)) = state {
                st.extend(m.into_iter().map(|(k, v)| (k, Arc::new(v))));
            }
            st.insert("initial_prompt".into(), Arc::new(Value::String(text.unwrap_or_default())));
            let note = "the trace does not record the initial state and no agent file fits it, so the \
                        graph's `initial_state` is missing from the states";
            (Fold::Loki(st), Some(note.into()))
        }
    }
}

fn empty(d: Dialect) -> Fold {
    match d {
        Dialect::Sherma | Dialect::Lllm => Fold::Sherma(State::new()),
        Dialect::Loki => Fold::Loki(LokiState::new()),
    }
}

fn from_object(d: Dialect, m: &Map<String, Value>) -> Fold {
    match d {
        Dialect::Sherma | Dialect::Lllm => {
            let mut st = State::new();
            for (k, v) in m {
                st.replace(k, v.clone());
            }
            Fold::Sherma(st)
        }
        Dialect::Loki => Fold::Loki(m.iter().map(|(k, v)| (k.clone(), Arc::new(v.clone()))).collect()),
    }
}

/// The state after `step` steps.
fn fold_to(p: &Plan<'_>, rules: &Rules<'_>, start: &Fold, step: u64) -> Fold {
    let mut st = match start {
        Fold::Sherma(s) => Fold::Sherma(s.snapshot()),
        Fold::Loki(s) => Fold::Loki(s.clone()),
    };
    for e in p.effects.iter().filter(|e| e.step() <= step) {
        match (&mut st, e) {
            (Fold::Sherma(s), Effect::Step(ev)) => {
                // A node that exited had its update applied (a refused update fails the node
                // before its `node_exit`).
                for (_, update) in &ev.exits {
                    if let Value::Object(m) = update {
                        let _ = s.apply(m);
                    }
                }
            }
            (Fold::Sherma(s), Effect::Edit { key, value, .. }) => sherma_edit(s, key, value),
            (Fold::Sherma(s), Effect::ClearFallback { .. }) => clear_error_fallback(s),
            (Fold::Loki(s), Effect::Step(ev)) => loki_step(s, ev, rules.loki()),
            (Fold::Loki(s), Effect::Edit { key, value, .. }) => {
                s.insert(key.to_string(), Arc::new((*value).clone()));
            }
            (Fold::Loki(_), Effect::ClearFallback { .. }) => {}
        }
    }
    st
}

/// `ShermaMachine::edit_state`: a `messages` edit replaces the list, any other key is set.
fn sherma_edit(s: &mut State, key: &str, value: &Value) {
    if key == MESSAGES {
        if !value.is_array() {
            return; // refused by the machine (no `state_edited` is written then)
        }
        s.replace(MESSAGES, Value::Array(Vec::new()));
    }
    let mut up = Map::new();
    up.insert(key.to_string(), value.clone());
    let _ = s.apply(&up);
}

/// What the machine's routing does when a `has_error_fallback` branch fires.
fn clear_error_fallback(s: &mut State) {
    let Some(internal) = s.get(INTERNAL).and_then(Value::as_object) else { return };
    if !internal.contains_key("error_fallback") {
        return;
    }
    let mut m = internal.clone();
    m.shift_remove("error_fallback");
    let mut up = Map::new();
    up.insert(INTERNAL.into(), Value::Object(m));
    let _ = s.apply(&up);
}

/// One Loki super-step, as `LokiMachine` merges it: the diffs of the nodes that went on, in
/// node-id order, then an end node's; nothing when a node failed or two ended.
fn loki_step(s: &mut LokiState, ev: &StepEvents<'_>, l: Option<&LokiDoc>) {
    if ev.unfinished() {
        return;
    }
    let kind = |node: &str| ev.entered.iter().find(|(n, _)| *n == node).map(|(_, k)| *k).unwrap_or("");
    let diff = |update: &Value| -> LokiState {
        match update {
            Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), Arc::new(v.clone()))).collect(),
            _ => LokiState::new(),
        }
    };
    let mut go: Vec<(String, LokiState)> = Vec::new();
    let mut ends: Vec<(String, LokiState)> = Vec::new();
    for (node, update) in &ev.exits {
        let d = (node.to_string(), diff(update));
        if kind(node) == "end" { ends.push(d) } else { go.push(d) }
    }
    if ends.len() > 1 {
        return; // "super-step ended with multiple End targets": the step failed
    }
    go.sort_by(|a, b| a.0.cmp(&b.0));
    match l {
        Some(l) => {
            // As the machine: a failed merge leaves what it merged before the failing key.
            if merge_diffs(l, s, &go).is_ok()
                && let Some(end) = ends.pop()
            {
                let _ = merge_diffs(l, s, &[end]);
            }
        }
        None => {
            for (_, d) in go.into_iter().chain(ends) {
                s.extend(d);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The answer
// ---------------------------------------------------------------------------------------------

/// The answer, with `note` (about the trace itself) among its warnings.
fn rebuild<'a>(events: impl Iterator<Item = &'a Event>, step: u64, doc: Option<&Document>, note: Option<String>) -> TraceState {
    let p = plan(events);
    let dialect = dialect_of(&p, doc);
    let mut notes: Vec<String> = note.into_iter().collect();
    let fit = doc.map(|d| fits(d, dialect, &p));
    let rules = Rules { dialect, doc: doc.filter(|_| matches!(fit, Some(Ok(())))) };
    let (start, note) = initial(&p, &rules);
    notes.extend(note);
    let updates = p.effects.iter().any(|e| matches!(e, Effect::Step(s) if !s.exits.is_empty()));
    if dialect == Dialect::Loki && rules.doc.is_none() && updates {
        let why = match &fit {
            None => "no agent file was given for this trace".to_string(),
            Some(Err(e)) => format!("the agent file does not fit the trace: {e}"),
            Some(Ok(())) => String::new(),
        };
        notes.push(format!(
            "the graph's `reducers` are unknown ({why}), so every node update overwrote its keys here: \
             a key with a reducer (append, extend, concat, sum, max, min, merge) may show the wrong value"
        ));
    }
    let exact = |s: u64| p.finished.as_ref().filter(|(_, at)| s >= *at).map(|(state, _)| (*state).clone());
    let at = |s: u64| exact(s).unwrap_or_else(|| fold_to(&p, &rules, &start, s).json());
    let state = at(step);
    let prev = (step > 0).then(|| at(step - 1));
    // Rebuilt states (not the recorded final one) are checked against where the run ended.
    if let Some((fin, fin_at)) = &p.finished
        && (step < *fin_at || (step > 0 && step - 1 < *fin_at))
    {
        let rebuilt = fold_to(&p, &rules, &start, *fin_at).json();
        if rebuilt != **fin {
            let keys = differing_keys(&rebuilt, fin);
            let cause = if p.replaced_by_hook {
                "an `after_graph_invoke` hook replaced the state, which no node update shows".to_string()
            } else if dialect == Dialect::Loki {
                match rules.doc {
                    Some(d) => format!(
                        "the agent file {} may have changed since the run (its `reducers` merged the steps here)",
                        d.path.display()
                    ),
                    None => "the graph's reducers are unknown".to_string(),
                }
            } else {
                "the run changed its state in a way no node update shows".to_string()
            };
            notes.push(format!(
                "the states rebuilt from this trace do not end in the state the run finished with ({} differ{}): {cause}; \
                 the steps before the last may not show what the engine held",
                keys.join(", "),
                if keys.len() == 1 { "s" } else { "" },
            ));
        }
    }
    TraceState { state, prev, warning: (!notes.is_empty()).then(|| capitalise(&notes.join("; "))) }
}

/// The top-level keys whose values differ, quoted (at most five, then "…").
fn differing_keys(a: &Value, b: &Value) -> Vec<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return vec!["the whole state".into()] };
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut out: Vec<String> = keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).map(|k| format!("`{k}`")).collect();
    if out.len() > 5 {
        out.truncate(5);
        out.push("…".into());
    }
    out
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect::<String>() + ".",
        None => String::new(),
    }
}

pub mod diff;

#[cfg(test)]
mod tests;
