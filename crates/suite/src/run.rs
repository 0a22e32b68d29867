//! Running one case: its runs through `launch` (the provider its LLM source names, its answers
//! queued), the events collected, and its expectations checked in the order they are written;
//! each failure points at the expectation in the suite file.

use crate::Options;
use crate::coverage::{self, Coverage};
use crate::file::{Case, Check, EdgePat, Llm, Pred, Suite};
use runtime::events::{Event, EventBody, RunStatus};
use runtime::provider::BoxProvider;
use runtime::request::{LlmChoice, RunRequest};
use runtime::session::{RunOptions, Status};
use serde::Serialize;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::Instant;
use syntax::diag::Diagnostic;
use syntax::source::Span;
use ts_rs::TS;

/// How a case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    /// An expectation did not hold (in more runs than `pass_rate` allows).
    Failed,
    /// The case could not run (its provider could not be built, the agent would not start).
    Error,
    /// Not run: a live case without `--live`.
    Skipped,
}

/// An expectation that did not hold, where it is written.
#[derive(Clone, Debug, Serialize, TS)]
pub struct Failure {
    /// The expectation's key (`status`, `nodes`, `state.verdict`, ...).
    pub expectation: String,
    pub message: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The step of the run where it went wrong, when there is one (the first node that
    /// differs from the expected sequence, the step past the budget).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(skip)]
    pub span: Span,
}

impl Failure {
    /// As a diagnostic, for the compiler-style report.
    pub fn diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::error(&format!("expect-{}", self.expectation.split('.').next().unwrap_or("")), self.message.clone())
            .maybe_hint(self.hint.clone());
        d.file = self.file.clone();
        d.line = self.line;
        d.column = self.column;
        d.end_line = self.end_line;
        d.end_column = self.end_column;
        d.span = Some(self.span);
        d
    }
}

/// One run of a case.
#[derive(Clone, Debug, Default, Serialize, TS)]
pub struct RunSummary {
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    pub steps: u64,
    /// Prompt and completion tokens of every LLM call (nested runs included).
    pub tokens: u64,
    pub cost_usd: f64,
    /// The nodes the run entered, in order (a Loki super-step's nodes in declaration order).
    pub nodes: Vec<String>,
    pub output: Value,
    /// The run's failure (or why it could not start).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
    /// The expectations that did not hold, in the order they are written.
    pub failures: Vec<Failure>,
    /// The run's JSONL trace, written when it failed and a trace folder was given.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// A case's result over its runs.
#[derive(Clone, Debug, Serialize, TS)]
pub struct CaseResult {
    pub name: String,
    /// Where the case's name is written.
    pub line: u32,
    pub column: u32,
    pub outcome: Outcome,
    pub runs: u32,
    pub passed_runs: u32,
    pub pass_rate: f64,
    /// Why it was skipped or could not run.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The first failing run (else the last run).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunSummary>,
    pub duration_ms: u64,
}

impl CaseResult {
    /// The first failing expectation, if any.
    pub fn first_failure(&self) -> Option<&Failure> {
        self.run.as_ref().and_then(|r| r.failures.first())
    }
}

/// Run `case` of `suite` (`repeat` times) and check it; with the routing coverage of its runs.
pub fn run_case(suite: &Suite, case: &Case, opts: &Options) -> (CaseResult, Option<Coverage>) {
    let lc = suite.file.line_col(case.span.start as usize);
    let mut res = CaseResult {
        name: case.name.clone(),
        line: lc.line,
        column: lc.column,
        outcome: Outcome::Passed,
        runs: 0,
        passed_runs: 0,
        pass_rate: case.pass_rate,
        message: None,
        run: None,
        duration_ms: 0,
    };
    if case.llm.is_live() && !opts.live {
        res.outcome = Outcome::Skipped;
        res.message = Some("calls a live model: run with --live to include it".into());
        return (res, None);
    }
    let started = Instant::now();
    let mut cov: Option<Coverage> = None;
    let mut first_fail: Option<RunSummary> = None;
    let mut last = None;
    for _ in 0..case.repeat {
        let (summary, c) = match run_once(suite, case, opts.trace_dir.as_deref()) {
            Ok(x) => x,
            Err(e) => {
                res.outcome = Outcome::Error;
                res.message = Some(e);
                res.duration_ms = started.elapsed().as_millis() as u64;
                return (res, cov);
            }
        };
        res.runs += 1;
        if let Some(c) = c {
            match &mut cov {
                Some(all) => all.merge(&c),
                None => cov = Some(c),
            }
        }
        if summary.failures.is_empty() {
            res.passed_runs += 1;
        } else if first_fail.is_none() {
            first_fail = Some(summary.clone());
        }
        last = Some(summary);
    }
    let rate = res.passed_runs as f64 / res.runs.max(1) as f64;
    res.outcome = if rate + 1e-9 >= case.pass_rate { Outcome::Passed } else { Outcome::Failed };
    if res.runs > 1 && res.outcome == Outcome::Failed {
        res.message = Some(format!(
            "{} of {} runs passed ({:.0} %), {:.0} % needed",
            res.passed_runs,
            res.runs,
            rate * 100.0,
            case.pass_rate * 100.0
        ));
    }
    res.run = first_fail.or(last);
    res.duration_ms = started.elapsed().as_millis() as u64;
    (res, cov)
}

/// The provider a case's LLM source names.
fn provider(suite: &Suite, case: &Case) -> Result<BoxProvider, String> {
    let doc = &suite.doc;
    match &case.llm {
        Llm::Default => launch::provider(doc, &launch::llm_choice(doc, &RunRequest::default()), None),
        Llm::Replies(node) => runtime::provider::ScriptedProvider::from_list(&suite.file, node)
            .map(|p| Box::new(p) as BoxProvider)
            .map_err(|ds| ds.iter().map(|d| format!("{}:{}:{}: {}", d.file, d.line, d.column, d.message)).collect::<Vec<_>>().join("\n")),
        Llm::File(p) => launch::scripted(p),
        Llm::Cassette { path, strict } => {
            launch::provider(doc, &LlmChoice::Replay { cassette: Some(path.clone()), strict: Some(*strict) }, None)
        }
        Llm::Live { model } => launch::provider(doc, &LlmChoice::Live { model: model.clone() }, None),
    }
}

/// One run of a case, checked.
fn run_once(suite: &Suite, case: &Case, trace_dir: Option<&std::path::Path>) -> Result<(RunSummary, Option<Coverage>), String> {
    let req = RunRequest { agent: suite.agent_id.clone(), input: case.input.clone(), state: case.state.clone(), ..RunRequest::default() };
    let mut options = RunOptions::new(provider(suite, case)?);
    options.answers = case.answers.clone();
    options.checkpoints = false;
    let started = Instant::now();
    let mut session = launch::session(suite.doc.clone(), &req, options)?;
    // The case's time limit: a watchdog stops the run (scripts and tools with it).
    let stop = session.stop_handle();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let timeout = case.timeout;
    let timed_out = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = timed_out.clone();
    let dog = std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(timeout) {
            flag.store(true, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
        }
    });
    loop {
        match session.run().clone() {
            Status::Interrupted { .. } => {
                // No answer left in the queue: the run ends `interrupted`.
                session.give_up_interrupted();
                break;
            }
            Status::Finished { .. } => break,
            Status::Paused { .. } | Status::Ready => {
                if timed_out.load(Ordering::SeqCst) {
                    session.stop();
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = dog.join();
    let events = session.events();
    let root = session.id().to_string();
    let (status, output) = match session.status() {
        Status::Finished { status, output } => (Some(*status), output.clone()),
        _ => (None, Value::Null),
    };
    let mut error = session.failure().map(|(node, m)| match node {
        Some(n) => format!("node `{n}`: {m}"),
        None => m.clone(),
    });
    if timed_out.load(Ordering::SeqCst) {
        error = Some(format!("the case took longer than its timeout ({:.0} s) and was stopped", timeout.as_secs_f64()));
    }
    let final_state = events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::RunFinished { state, .. } if e.run == root => Some(state.clone()),
            _ => None,
        })
        .unwrap_or_else(|| session.state());
    let mut tokens = 0;
    let mut cost = 0.0;
    for e in &events {
        if let EventBody::LlmResponse { usage, cost_usd, .. } = &e.body {
            tokens += usage.input_tokens + usage.output_tokens;
            cost += cost_usd.unwrap_or(0.0);
        }
    }
    let cov = suite.graph.as_ref().map(|g| coverage::of_run(g, &root, &events));
    let (nodes, node_steps) = sequence(suite, &root, &events);
    let mut summary = RunSummary {
        status,
        steps: session.steps(),
        tokens,
        cost_usd: cost,
        nodes,
        output,
        error,
        duration_ms: started.elapsed().as_millis() as u64,
        failures: Vec::new(),
        trace: None,
    };
    let got = Got { summary: &summary, state: &final_state, cov: cov.as_ref(), node_steps: &node_steps };
    let failures: Vec<Failure> = case.expects.iter().filter_map(|x| check(suite, &got, x.check.clone(), &x.key, x.span)).collect();
    summary.failures = failures;
    if let Some(dir) = trace_dir.filter(|_| !summary.failures.is_empty()) {
        summary.trace = Some(write_trace(dir, suite, case, &events)?);
    }
    Ok((summary, cov))
}

/// The top-level nodes entered, in order: by step, a Loki super-step's nodes in the graph's
/// declaration order (they run in parallel, so their events interleave at random).
pub(crate) fn sequence(suite: &Suite, root: &str, events: &[Event]) -> (Vec<String>, Vec<u64>) {
    let order = |n: &str| suite.graph.as_ref().and_then(|g| g.node(n)).map(|n| n.order).unwrap_or(usize::MAX);
    // A node that asked a question enters again, at the same step, when the answer comes:
    // one node of the sequence.
    let mut seen = std::collections::HashSet::new();
    let mut v: Vec<(u64, usize, usize, String)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.run == root)
        .filter_map(|(i, e)| match &e.body {
            EventBody::NodeEnter { step, node, .. } if seen.insert((*step, node.as_str())) => Some((*step, order(node), i, node.clone())),
            _ => None,
        })
        .collect();
    v.sort();
    let (mut nodes, mut steps): (Vec<String>, Vec<u64>) = (v.iter().map(|x| x.3.clone()).collect(), v.iter().map(|x| x.0).collect());
    // A run left waiting for an answer ends at the node that asked (a Loki approval or input
    // asks before it enters).
    let ended_waiting = events
        .iter()
        .rev()
        .find(|e| e.run == root)
        .is_some_and(|e| matches!(&e.body, EventBody::RunFinished { status: RunStatus::Interrupted, .. }));
    let asked = events.iter().rev().filter(|e| e.run == root).find_map(|e| match &e.body {
        EventBody::Interrupt { node, .. } => Some(node.clone()),
        _ => None,
    });
    if ended_waiting
        && let Some(n) = asked
        && nodes.last() != Some(&n)
    {
        steps.push(steps.last().map_or(1, |s| s + 1));
        nodes.push(n);
    }
    (nodes, steps)
}

struct Got<'a> {
    summary: &'a RunSummary,
    state: &'a Value,
    cov: Option<&'a Coverage>,
    node_steps: &'a [u64],
}

fn status_name(s: Option<RunStatus>) -> &'static str {
    match s {
        Some(RunStatus::Completed) => "completed",
        Some(RunStatus::Failed) => "failed",
        Some(RunStatus::Interrupted) => "interrupted",
        Some(RunStatus::Stopped) => "stopped",
        None => "unfinished",
    }
}

fn taken(cov: Option<&Coverage>, p: &EdgePat) -> u64 {
    let Some(cov) = cov else { return 0 };
    let edges: u64 = cov
        .edges
        .iter()
        .filter(|e| e.from == p.from && e.to == p.to && p.label.as_ref().is_none_or(|l| e.label.as_ref() == Some(l)))
        .map(|e| e.count)
        .sum();
    let others: u64 =
        if p.label.is_none() { cov.other_routes.iter().filter(|o| o.from == p.from && o.to == p.to).map(|o| o.count).sum() } else { 0 };
    edges + others
}

fn show(v: &Value) -> String {
    let s = match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    let s = runtime::secrets::redact(&s).to_string();
    if s.chars().count() > 200 { format!("{}…", s.chars().take(199).collect::<String>()) } else { s }
}

fn list(v: &[String]) -> String {
    format!("[{}]", v.join(", "))
}

/// Check one expectation; `None` when it holds.
fn check(suite: &Suite, got: &Got, chk: Check, key: &str, span: Span) -> Option<Failure> {
    let s = got.summary;
    let fail = |message: String, hint: Option<String>, step: Option<u64>, at: Span| {
        let a = suite.file.line_col(at.start as usize);
        let b = suite.file.line_col(at.end as usize);
        Some(Failure {
            expectation: key.to_string(),
            message,
            file: suite.name(),
            line: a.line,
            column: a.column,
            end_line: b.line,
            end_column: b.column,
            hint,
            step,
            span: at,
        })
    };
    let ran_hint = || Some(format!("the run entered {}", list(&s.nodes)));
    match chk {
        Check::Status(want) => {
            if s.status == Some(want) {
                return None;
            }
            let why = s.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
            fail(
                format!("expected the run to end `{}`, it ended `{}`{why}", status_name(Some(want)), status_name(s.status)),
                (s.status == Some(RunStatus::Interrupted))
                    .then(|| "add an answer to `answers:` for each question the run asks".to_string()),
                None,
                span,
            )
        }
        Check::Nodes(want) => {
            let names: Vec<String> = want.iter().map(|(n, _)| n.clone()).collect();
            if names == s.nodes {
                return None;
            }
            let i = names.iter().zip(&s.nodes).take_while(|(a, b)| a == b).count();
            let at = want.get(i).map(|(_, sp)| *sp).unwrap_or(span);
            let msg = match (names.get(i), s.nodes.get(i)) {
                (Some(w), Some(g)) => format!("node {} of the run is `{g}`, expected `{w}`", i + 1),
                (Some(w), None) => format!("the run ended after {} nodes; expected `{w}` next", s.nodes.len()),
                (None, Some(g)) => format!("the run went on to `{g}` after the {} expected nodes", names.len()),
                (None, None) => "the node sequence differs".into(),
            };
            fail(msg, ran_hint(), got.node_steps.get(i).copied(), at)
        }
        Check::NodesContain(want) => {
            // In this order, not necessarily next to each other.
            let mut pos = 0;
            for (n, sp) in &want {
                match s.nodes[pos..].iter().position(|x| x == n) {
                    Some(p) => pos += p + 1,
                    None => {
                        let msg = if s.nodes.contains(n) {
                            format!("node `{n}` ran, but not after the nodes listed before it")
                        } else {
                            format!("node `{n}` never ran")
                        };
                        return fail(msg, ran_hint(), None, *sp);
                    }
                }
            }
            None
        }
        Check::NodesNotContain(want) => {
            for (n, sp) in &want {
                if let Some(i) = s.nodes.iter().position(|x| x == n) {
                    return fail(format!("node `{n}` ran (node {} of the run)", i + 1), ran_hint(), got.node_steps.get(i).copied(), *sp);
                }
            }
            None
        }
        Check::Edges(want) => {
            for p in &want {
                if taken(got.cov, p) == 0 {
                    return fail(format!("the edge {p} was never taken"), ran_hint(), None, p.span);
                }
            }
            None
        }
        Check::EdgesNotTaken(want) => {
            for p in &want {
                let n = taken(got.cov, p);
                if n > 0 {
                    return fail(format!("the edge {p} was taken {n} time{}", if n == 1 { "" } else { "s" }), ran_hint(), None, p.span);
                }
            }
            None
        }
        Check::State { field, pred } => {
            let v = got.state.get(&field);
            match eval(&pred, v, got.state, &s.output) {
                Ok(()) => None,
                Err(why) => fail(format!("state field `{field}`: {why}"), None, None, span),
            }
        }
        Check::Output(pred) => {
            let v = (!s.output.is_null()).then_some(&s.output);
            match eval(&pred, v, got.state, &s.output) {
                Ok(()) => None,
                Err(why) => fail(format!("the output: {why}"), None, None, span),
            }
        }
        Check::Error(text) => match &s.error {
            Some(e) if e.contains(&text) => None,
            Some(e) => {
                fail(format!("the run failed with `{}`, which does not contain `{text}`", runtime::secrets::redact(e)), None, None, span)
            }
            None => fail(format!("expected a failure containing `{text}`; the run ended `{}`", status_name(s.status)), None, None, span),
        },
        Check::MaxSteps(max) => (s.steps > max)
            .then(|| ())
            .and_then(|_| fail(format!("the run took {} steps, more than the {max} allowed", s.steps), None, Some(max + 1), span)),
        Check::MaxTokens(max) => (s.tokens > max)
            .then(|| ())
            .and_then(|_| fail(format!("the run used {} tokens, more than the {max} allowed", s.tokens), None, None, span)),
        Check::MaxCost(max) => (s.cost_usd > max)
            .then(|| ())
            .and_then(|_| fail(format!("the run cost ${:.6}, more than the ${max} allowed", s.cost_usd), None, None, span)),
    }
}

/// Does `v` (absent: `None`) satisfy `pred`?
fn eval(pred: &Pred, v: Option<&Value>, state: &Value, output: &Value) -> Result<(), String> {
    match pred {
        Pred::Absent => match v {
            None | Some(Value::Null) => Ok(()),
            Some(x) => Err(format!("expected it absent, it is {}", show(x))),
        },
        Pred::Equals(want) => match v {
            Some(x) if equal(x, want) => Ok(()),
            Some(x) => Err(format!("expected {}, got {}", show(want), show(x))),
            None if want.is_null() => Ok(()),
            None => Err(format!("expected {}, it is absent", show(want))),
        },
        Pred::Contains(text) => {
            let hay = match v {
                Some(Value::String(s)) => s.clone(),
                Some(x) => x.to_string(),
                None => return Err(format!("expected it to contain {text:?}, it is absent")),
            };
            if hay.contains(text.as_str()) {
                Ok(())
            } else {
                Err(format!("expected it to contain {text:?}, got {}", show(v.unwrap_or(&Value::Null))))
            }
        }
        Pred::Cel(src) => {
            let eng = expr::CelEngine::shared();
            let prog = eng.compile(src).map_err(|e| format!("CEL: {}", e.message))?;
            let null = Value::Null;
            let b = expr::Bindings::with_state(state).with("value", v.unwrap_or(&null)).with("output", output);
            match eng.eval_bool(&prog, &b) {
                Ok(true) => Ok(()),
                Ok(false) => Err(format!("`{src}` is false (the value is {})", v.map(show).unwrap_or_else(|| "absent".into()))),
                Err(e) => Err(format!("`{src}` cannot be evaluated: {}", e.message)),
            }
        }
        Pred::Template(src, then) => {
            let text = expr::render_strict(src, state).map_err(|e| e.to_string())?;
            eval(then, Some(&Value::String(text)), state, output).map_err(|e| format!("`{src}` rendered: {e}"))
        }
    }
}

/// JSON equality where 3 == 3.0 (YAML writes numbers either way).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64().zip(y.as_f64()).is_some_and(|(p, q)| p == q),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| equal(p, q))),
        _ => a == b,
    }
}

/// A file-name-safe form of `s`.
fn safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).take(80).collect()
}

/// Write a run's events as a JSONL trace (secrets scrubbed, readable by the user only) into
/// `dir`; its path.
fn write_trace(dir: &std::path::Path, suite: &Suite, case: &Case, events: &[Event]) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the trace folder {}: {e}", dir.display()))?;
    let stem = suite.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = stem.rsplit_once(".tests.").map(|(s, _)| s).unwrap_or(&stem);
    let path = dir.join(format!("{}--{}.jsonl", safe(stem), safe(&case.name)));
    let mut text = String::new();
    for e in events {
        text.push_str(&e.to_file_line());
        text.push('\n');
    }
    runtime::cassette::write_private(&path, text.as_bytes())?;
    Ok(path.display().to_string())
}
