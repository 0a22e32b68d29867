//! `switchyard worker`: a Restate service deployment (the SDK's HTTP endpoint) whose workflow
//! `SwitchyardRun` executes one Switchyard run per workflow, keyed by the run id.
//!
//! - Every step is one journaled action (`ctx.run`) whose result is what the run needs to go
//!   on: the session's durable snapshot, its status and state, and the step's events
//!   ([`Stepped`]). A replay (the worker died, Restate restarted) takes completed steps from
//!   the journal; the action runs on whichever worker Restate invokes, which rebuilds the run
//!   from the last snapshot (`launch::durable::rebuild`). A step in flight when its worker died
//!   runs again, its scripts, tools and LLM calls too.
//! - A question (interrupt, approval, input) waits on the durable promise `answer/<id>`, which
//!   the shared handler `answer` resolves after checking the answer against the run (an input's
//!   validation); a waiting run holds no worker. `stop` resolves the promise `stop`; `pause`,
//!   `resume` and `set_breakpoints` resolve numbered promises (`pause/<k>`, `resume/<k>`,
//!   `bp/<j>`) that the workflow looks at between steps.
//! - The run's record, its checkpoints (state after each step) and its numbered events are
//!   the workflow's K/V state (`record`, `h/<step>` listed in `hist`, `ev/<k>` listed in
//!   `batches`, `breakpoints`, `last`): the server reads them there through Restate's SQL
//!   API (`engine`), not from a store of its own, and needs no worker for it.

use launch::durable::{self, RunRecord};
use launch::RunRequest;
use restate_sdk::prelude::*;
use runtime::provider::NoProvider;
use runtime::session::{Breakpoint, RunOptions, RunSession, Status};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What a run is started with (the input of `run`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StartReq {
    /// The agent file, relative to the worker's agents folder.
    pub file: String,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub state: Option<Value>,
    /// Live LLM calls (else the replies beside the agent).
    #[serde(default)]
    pub live: bool,
    #[serde(default)]
    pub breakpoints: Vec<Breakpoint>,
    /// Held before the first step.
    #[serde(default)]
    pub paused: bool,
}

/// The result of one journaled action: where the run stands after it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stepped {
    /// `RunSession::durable_snapshot`.
    pub snapshot: Value,
    pub status: Status,
    pub step: u64,
    pub state: Value,
    pub due: Vec<String>,
    /// The events of the action (JSONL lines), numbered by the workflow.
    pub events: Vec<String>,
    /// Why the run failed.
    pub failure: Option<String>,
    pub ms: i64,
    /// Names the session this action left in its worker's memory ([`WARM`]); empty when
    /// none was kept.
    #[serde(default)]
    pub warm: String,
}

/// An answer to the question `id`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnswerReq {
    pub id: String,
    pub value: Value,
}

/// One checkpoint (state after `step` steps).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hist {
    pub step: u64,
    pub state: Value,
    pub next: Vec<String>,
    pub created_ms: i64,
}

/// Events of one action: the first's number, the lines, the step they led to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Batch {
    pub first: u64,
    pub lines: Vec<String>,
    pub step: u64,
}

/// How a paused run goes on (`resume`'s input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Go {
    Step,
    Continue,
}

/// The workflow (see the module docs). The service is named `SwitchyardRun`.
pub struct SwitchyardRun {
    agents: Arc<PathBuf>,
}

impl SwitchyardRun {
    pub fn new(agents: PathBuf) -> SwitchyardRun {
        SwitchyardRun { agents: Arc::new(agents) }
    }
}

/// The name of the workflow service.
pub const SERVICE: &str = "SwitchyardRun";

/// A promise key. The SDK's `promise` / `peek_promise` want a key that lives as long as the
/// context, though they copy it at once; keys are a few bytes per question or pause.
fn key(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn terminal(code: u16, m: impl Into<String>) -> HandlerError {
    TerminalError::new_with_code(code, m.into()).into()
}

/// The workflow's own bookkeeping while it runs (rebuilt deterministically on replay).
struct Books {
    rec: RunRecord,
    seq: u64,
    batches: Vec<u64>,
    hist: Vec<u64>,
}

impl Books {
    /// Take an action's result into the workflow's state.
    fn apply(&mut self, ctx: &WorkflowContext<'_>, s: &Stepped) {
        if !s.events.is_empty() {
            let first = self.seq + 1;
            self.seq += s.events.len() as u64;
            ctx.set(&format!("ev/{}", self.batches.len()), Json(Batch { first, lines: s.events.clone(), step: s.step }));
            self.batches.push(self.seq);
            ctx.set("batches", Json(self.batches.clone()));
        }
        ctx.set(&format!("h/{}", s.step), Json(Hist { step: s.step, state: s.state.clone(), next: s.due.clone(), created_ms: s.ms }));
        if self.hist.last() != Some(&s.step) {
            self.hist.push(s.step);
            ctx.set("hist", Json(self.hist.clone()));
        }
        let r = &mut self.rec;
        r.status = durable::status_word(&s.status).to_string();
        r.step = s.step;
        r.updated_ms = s.ms;
        r.pending = match &s.status {
            Status::Interrupted { pending } => Some(pending.clone()),
            _ => None,
        };
        if let Status::Finished { output, .. } = &s.status {
            r.output = output.clone();
        }
        if r.status == "failed" {
            r.error = s.failure.clone().or_else(|| r.error.clone());
        }
        ctx.set("record", Json(r.clone()));
        let mut last = s.clone();
        last.events.clear();
        ctx.set("last", Json(last));
    }
}

/// One action, run on a blocking thread; its result (or error) is what the journal keeps.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(format!("the step panicked: {e}")),
    }
}

#[restate_sdk::workflow]
impl SwitchyardRun {
    /// Run the run to its end (see the module docs).
    #[handler]
    async fn run(&self, ctx: WorkflowContext<'_>, req: Json<StartReq>) -> HandlerResult<Json<RunRecord>> {
        let req = req.into_inner();
        let id = ctx.key().to_string();
        let agents = self.agents.clone();
        let (i2, r2) = (id.clone(), req.clone());
        let started: Result<(RunRecord, Stepped), String> = ctx
            .run(|| async move { Ok(Json(blocking(move || start(&agents, &i2, &r2)).await)) })
            .name("start")
            .await?
            .into_inner();
        let (rec, mut cur) = match started {
            Ok(x) => x,
            Err(e) => return Err(terminal(400, e)),
        };
        ctx.set("start", Json(req.clone()));
        ctx.set("breakpoints", Json(req.breakpoints.clone()));
        let mut b = Books { rec, seq: 0, batches: Vec::new(), hist: Vec::new() };
        b.apply(&ctx, &cur);
        let mut breakpoints = req.breakpoints.clone();
        let (mut hold, mut bpn) = (0u64, 0u64);
        // The first action after a rebuild that a person caused (answer, resume, stop of a
        // waiting run) re-emits `run_started` (and the question), as the embedded engine does.
        let mut loud = false;
        let mut answer: Option<AnswerReq> = None;
        let mut go = Go::Continue;
        if req.paused {
            cur.status = Status::Paused { reason: runtime::events::PauseReason::Requested };
            b.rec.status = "paused".into();
            ctx.set("record", Json(b.rec.clone()));
        }
        let mut n = 0u64;
        loop {
            match &cur.status {
                Status::Finished { .. } => break,
                Status::Interrupted { pending } => {
                    let ak = key(format!("answer/{}", pending.id));
                    let stop = restate_sdk::select! {
                        a = ctx.promise::<Json<Value>>(ak) => {
                            answer = Some(AnswerReq { id: pending.id.clone(), value: a?.into_inner() });
                            false
                        },
                        _ = ctx.promise::<bool>("stop") => true,
                    };
                    loud = true;
                    if stop {
                        cur = self.act(&ctx, &req, &b.rec, &cur, &mut n, Act::Stop { loud: true }).await?;
                        b.apply(&ctx, &cur);
                        continue;
                    }
                }
                Status::Paused { .. } => {
                    let rk = key(format!("resume/{hold}"));
                    let how = restate_sdk::select! {
                        g = ctx.promise::<Json<Go>>(rk) => Some(g?.into_inner()),
                        _ = ctx.promise::<bool>("stop") => None,
                    };
                    loud = true;
                    if how.is_some() {
                        // Running again from now on (the server's `resume` waits for `hold`).
                        b.rec.status = "ready".into();
                        ctx.set("record", Json(b.rec.clone()));
                    }
                    hold += 1;
                    ctx.set("hold", hold);
                    match how {
                        Some(g) => go = g,
                        None => {
                            cur = self.act(&ctx, &req, &b.rec, &cur, &mut n, Act::Stop { loud: true }).await?;
                            b.apply(&ctx, &cur);
                            continue;
                        }
                    }
                }
                Status::Ready => {
                    // The three looks go to Restate together (each command is sent when it is
                    // made): one round trip between steps, not three.
                    let (stop, bp, pause) = futures_util::join!(
                        ctx.peek_promise::<bool>("stop"),
                        ctx.peek_promise::<Json<Vec<Breakpoint>>>(key(format!("bp/{bpn}"))),
                        ctx.peek_promise::<bool>(key(format!("pause/{hold}"))),
                    );
                    if stop?.is_some() {
                        cur = self.act(&ctx, &req, &b.rec, &cur, &mut n, Act::Stop { loud }).await?;
                        b.apply(&ctx, &cur);
                        continue;
                    }
                    if let Some(list) = bp? {
                        breakpoints = list.into_inner();
                        bpn += 1;
                        ctx.set("bpn", bpn);
                        ctx.set("breakpoints", Json(breakpoints.clone()));
                    }
                    if !loud && pause?.is_some() {
                        cur = self.act(&ctx, &req, &b.rec, &cur, &mut n, Act::Pause).await?;
                        b.apply(&ctx, &cur);
                        continue;
                    }
                }
            }
            let a = Act::Step { loud, answer: answer.take(), go, breakpoints: breakpoints.clone() };
            loud = false;
            go = Go::Continue;
            cur = self.act(&ctx, &req, &b.rec, &cur, &mut n, a).await?;
            b.apply(&ctx, &cur);
        }
        Ok(Json(b.rec))
    }

    /// Answer the question `id` (409: the run does not wait for it; 422: the run refuses it).
    #[handler]
    async fn answer(&self, ctx: SharedWorkflowContext<'_>, req: Json<AnswerReq>) -> HandlerResult<()> {
        let req = req.into_inner();
        let Some(rec) = ctx.get::<Json<RunRecord>>("record").await?.map(Json::into_inner) else {
            return Err(terminal(404, "no such run"));
        };
        let Some(last) = ctx.get::<Json<Stepped>>("last").await?.map(Json::into_inner) else {
            return Err(terminal(409, "the run has no checkpoint yet"));
        };
        match &last.status {
            Status::Interrupted { pending } if pending.id == req.id => {}
            Status::Interrupted { pending } => {
                return Err(terminal(409, format!("run {} waits for question {}, not {}", rec.id, pending.id, req.id)));
            }
            _ => return Err(terminal(409, format!("run {} is not waiting for an answer (it is {})", rec.id, rec.status))),
        }
        let Some(start) = ctx.get::<Json<StartReq>>("start").await?.map(Json::into_inner) else {
            return Err(terminal(409, "the run has no start request"));
        };
        // Checked against the run itself (an input's validation), as the embedded engine does.
        let agents = self.agents.clone();
        let (r2, v2) = (req.clone(), req.value.clone());
        let checked = blocking(move || {
            let mut s = rebuilt(&agents, &start, &rec, &last, false)?.0;
            s.answer(&r2.id, v2).map_err(|e| format!("422:{e}"))
        })
        .await;
        if let Err(e) = checked {
            return Err(match e.strip_prefix("422:") {
                Some(m) => terminal(422, m),
                None => terminal(409, e),
            });
        }
        ctx.resolve_promise(&format!("answer/{}", req.id), Json(req.value));
        Ok(())
    }

    /// Stop the run (between steps, or while it waits).
    #[handler]
    async fn stop(&self, ctx: SharedWorkflowContext<'_>) -> HandlerResult<()> {
        ctx.resolve_promise("stop", true);
        Ok(())
    }

    /// Pause a running run before its next step.
    #[handler]
    async fn pause(&self, ctx: SharedWorkflowContext<'_>) -> HandlerResult<()> {
        let hold = ctx.get::<u64>("hold").await?.unwrap_or(0);
        ctx.resolve_promise(&format!("pause/{hold}"), true);
        Ok(())
    }

    /// Go on with a paused run.
    #[handler]
    async fn resume(&self, ctx: SharedWorkflowContext<'_>, go: Json<Go>) -> HandlerResult<()> {
        let hold = ctx.get::<u64>("hold").await?.unwrap_or(0);
        ctx.resolve_promise(&format!("resume/{hold}"), go);
        Ok(())
    }

    /// Replace the breakpoints (taken before the next step).
    #[handler]
    async fn set_breakpoints(&self, ctx: SharedWorkflowContext<'_>, list: Json<Vec<Breakpoint>>) -> HandlerResult<()> {
        let n = ctx.get::<u64>("bpn").await?.unwrap_or(0);
        ctx.resolve_promise(&format!("bp/{n}"), list);
        Ok(())
    }
}

/// What one action does.
enum Act {
    /// Steps: one (`go` = step: then paused), or until something other than a completed step
    /// (`continue` goes one step per action, so each is journaled).
    Step { loud: bool, answer: Option<AnswerReq>, go: Go, breakpoints: Vec<Breakpoint> },
    Pause,
    Stop { loud: bool },
}

impl SwitchyardRun {
    /// Run one action as a journaled `ctx.run` (named `step N`).
    async fn act(&self, ctx: &WorkflowContext<'_>, start: &StartReq, rec: &RunRecord, cur: &Stepped, n: &mut u64, a: Act) -> Result<Stepped, HandlerError> {
        *n += 1;
        let name = match &a {
            Act::Step { answer: Some(_), .. } => format!("answer {}", n),
            Act::Step { .. } => format!("step {}", n),
            Act::Pause => format!("pause {}", n),
            Act::Stop { .. } => format!("stop {}", n),
        };
        let agents = self.agents.clone();
        let (start, rec, cur) = (start.clone(), rec.clone(), cur.clone());
        let r: Result<Stepped, String> = ctx
            .run(|| async move { Ok(Json(blocking(move || advance(&agents, &start, &rec, &cur, a)).await)) })
            .name(&name)
            .await?
            .into_inner();
        r.map_err(|e| terminal(500, e))
    }
}

/// The agent file `rel` under `agents` (no absolute paths, no `..`).
fn agent_file(agents: &Path, rel: &str) -> Result<PathBuf, String> {
    let p = Path::new(rel);
    if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("{rel}: an agent file must be a path inside the worker's agents folder"));
    }
    Ok(agents.join(p))
}

fn load(agents: &Path, rel: &str) -> Result<Arc<model::doc::Document>, String> {
    let path = agent_file(agents, rel)?;
    let doc = model::doc::load_path(&path);
    if doc.io_error {
        let why = doc.diagnostics.first().map(|d| d.message.clone()).unwrap_or_default();
        return Err(format!("cannot read {}: {why}", path.display()));
    }
    Ok(Arc::new(doc))
}

/// Options whose listener keeps the events in `buf` while `on` is set.
fn options(id: &str, on: Arc<AtomicBool>, buf: Arc<Mutex<Vec<String>>>) -> RunOptions {
    let mut o = RunOptions::new(Box::new(NoProvider));
    o.run_id = Some(id.to_string());
    o.keep_events = false;
    o.checkpoints = false;
    o.listener = Some(Arc::new(move |e: &runtime::events::Event| {
        if on.load(Ordering::SeqCst) {
            buf.lock().unwrap_or_else(|p| p.into_inner()).push(e.to_file_line());
        }
    }));
    o
}

fn now_ms() -> i64 {
    runtime::events::now_ms() as i64
}

fn stepped(s: &RunSession, buf: &Mutex<Vec<String>>) -> Stepped {
    Stepped {
        warm: String::new(),
        snapshot: s.durable_snapshot(),
        status: s.status().clone(),
        step: s.steps(),
        state: s.state(),
        due: s.due(),
        events: std::mem::take(&mut *buf.lock().unwrap_or_else(|p| p.into_inner())),
        failure: s.failure().map(|(_, m)| m.clone()),
        ms: now_ms(),
    }
}

/// A new run: its record and where it stands before its first step.
pub fn start(agents: &Path, id: &str, req: &StartReq) -> Result<(RunRecord, Stepped), String> {
    let doc = load(agents, &req.file)?;
    let rr = RunRequest { agent: req.agent.clone(), input: req.input.clone(), state: req.state.clone(), live: req.live, ..Default::default() };
    let llm = launch::llm_choice(&doc, &rr);
    let provider = launch::provider_for(&doc, &rr)?;
    let (on, buf) = (Arc::new(AtomicBool::new(true)), Arc::new(Mutex::new(Vec::new())));
    let (mut s, rec) = durable::start_elsewhere(doc, &rr, llm, Some(provider), options(id, on, buf.clone()))?;
    s.set_breakpoints(req.breakpoints.clone())?;
    let mut out = stepped(&s, &buf);
    if matches!(out.status, Status::Ready) && !req.paused {
        out.warm = keep_warm(id, s, buf);
    }
    Ok((rec, out))
}

/// The session of a run rebuilt from `last`; the events of the rebuild itself are kept when
/// `loud`. Refused when the agent file changed since the run started.
fn rebuilt(agents: &Path, start: &StartReq, rec: &RunRecord, last: &Stepped, loud: bool) -> Result<(RunSession, Arc<Mutex<Vec<String>>>, Arc<AtomicBool>), String> {
    let doc = load(agents, &start.file)?;
    if durable::content_hash(&doc) != rec.doc_hash {
        return Err(format!(
            "run {}: {} changed since the run started; going on could put the saved state into a different graph. \
             Put the agent file back, or start a new run",
            rec.id, start.file
        ));
    }
    let provider = launch::provider_from_choice(&doc, &rec.llm)?;
    let (on, buf) = (Arc::new(AtomicBool::new(loud)), Arc::new(Mutex::new(Vec::new())));
    let o = options(&rec.id, on.clone(), buf.clone());
    let s = durable::rebuild(doc, &rec.request, rec.input.clone(), &last.snapshot, last.status.clone(), provider, o)?;
    on.store(true, Ordering::SeqCst);
    Ok((s, buf, on))
}

/// A session an action left in this worker's memory, to go on from without a rebuild.
struct Warm {
    token: String,
    session: RunSession,
    buf: Arc<Mutex<Vec<String>>>,
    at: std::time::Instant,
}

/// The sessions of running runs this worker stepped last, by run id (see [`advance`]).
static WARM: Mutex<Vec<(String, Warm)>> = Mutex::new(Vec::new());
/// At most this many warm sessions, each at most [`WARM_TTL`] old.
const WARM_MAX: usize = 256;
const WARM_TTL: std::time::Duration = std::time::Duration::from_secs(120);

/// The warm session of run `id` that produced the journaled result named `token` (taken out:
/// it serves one action at most).
fn take_warm(id: &str, token: &str) -> Option<(RunSession, Arc<Mutex<Vec<String>>>)> {
    if token.is_empty() {
        return None;
    }
    let mut w = WARM.lock().unwrap_or_else(|p| p.into_inner());
    let i = w.iter().position(|(run, _)| run == id)?;
    let (_, warm) = w.swap_remove(i);
    (warm.token == token && warm.at.elapsed() < WARM_TTL).then_some((warm.session, warm.buf))
}

fn keep_warm(id: &str, session: RunSession, buf: Arc<Mutex<Vec<String>>>) -> String {
    let token = uuid::Uuid::new_v4().simple().to_string();
    let mut w = WARM.lock().unwrap_or_else(|p| p.into_inner());
    w.retain(|(run, warm)| run != id && warm.at.elapsed() < WARM_TTL);
    if w.len() >= WARM_MAX {
        w.remove(0);
    }
    w.push((id.to_string(), Warm { token: token.clone(), session, buf, at: std::time::Instant::now() }));
    token
}

/// One action on the run as `cur` left it.
///
/// A quiet step of a running run goes on from the session the previous action left in this
/// worker's memory when the journal names it ([`Stepped::warm`]): that session is exactly
/// what rebuilding `cur` would give, without reading the agent file and replaying the
/// snapshot again (the embedded engine keeps its sessions the same way). Any other action —
/// on another worker, a retried action (its warm session was taken by the first attempt), one
/// after a person answered, resumed or stopped — rebuilds from the journaled snapshot.
fn advance(agents: &Path, start: &StartReq, rec: &RunRecord, cur: &Stepped, a: Act) -> Result<Stepped, String> {
    let loud = match &a {
        Act::Step { loud, .. } | Act::Stop { loud } => *loud,
        Act::Pause => false,
    };
    let warm = if loud { None } else { take_warm(&rec.id, &cur.warm) };
    let (mut s, buf) = match warm {
        Some(w) => w,
        None => {
            let (s, buf, _) = rebuilt(agents, start, rec, cur, loud)?;
            (s, buf)
        }
    };
    match a {
        Act::Stop { .. } => {
            s.stop();
        }
        Act::Pause => {
            s.pause_handle().store(true, Ordering::SeqCst);
            s.run_for(std::time::Duration::ZERO);
        }
        Act::Step { loud, answer, go, breakpoints } => {
            s.set_breakpoints(breakpoints)?;
            if let Some(a) = answer {
                s.answer(&a.id, a.value)?;
            }
            if !loud {
                s.break_before_next();
            }
            match go {
                Go::Step => {
                    s.step();
                }
                Go::Continue => {
                    s.run_for(std::time::Duration::ZERO);
                }
            }
        }
    }
    let mut out = stepped(&s, &buf);
    if matches!(out.status, Status::Ready) {
        out.warm = keep_warm(&rec.id, s, buf);
    }
    Ok(out)
}

/// Serve the workflow on `listener` until the process ends.
pub async fn serve(agents: PathBuf, listener: tokio::net::TcpListener) {
    use restate_sdk::endpoint::{HandlerOptions, ServiceOptions};
    let run = SwitchyardRun::new(agents).into_service_definition().options(
        ServiceOptions::default()
            // A step may call a slow model or script: Restate must not abort it early.
            .inactivity_timeout(std::time::Duration::from_secs(120))
            .abort_timeout(std::time::Duration::from_secs(3600))
            // A finished run's record, history and events stay readable this long.
            .handler("run", HandlerOptions::new().workflow_retention(std::time::Duration::from_secs(30 * 24 * 3600))),
    );
    let endpoint = restate_sdk::hyper::HyperEndpoint::new(Endpoint::builder().bind(run).build());
    // The SDK's own `HttpServer` leaves Nagle's algorithm on: each journal entry the worker
    // sends after a small write waits for Restate's delayed ACK, about 40 ms, once or twice per
    // step (measured: 80 ms per trivial step, 44 ms of it in such waits). So this loop accepts
    // with TCP_NODELAY, then serves HTTP/2 as the SDK does.
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("worker: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let endpoint = endpoint.clone();
        tokio::spawn(async move {
            let conn = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                .serve_connection(hyper_util::rt::TokioIo::new(stream), endpoint);
            if let Err(e) = conn.await {
                tracing::debug!("worker: connection from {remote} ended: {e}");
            }
        });
    }
}

/// A listener on `addr` that other workers on this machine may share (`SO_REUSEPORT`: the
/// kernel spreads Restate's connections over the workers; one deployment URL for all).
pub fn shared_listener(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let sock = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    sock.set_reuseaddr(true)?;
    sock.set_reuseport(true)?;
    sock.bind(addr)?;
    sock.listen(1024)
}

/// Register the deployment at `uri` with Restate's admin API at `admin` (`force`: replace a
/// deployment of the same URI, as a worker started again after an agent change needs).
pub async fn register(admin: &str, uri: &str) -> Result<Value, String> {
    let client = reqwest::Client::new();
    let url = format!("{}/deployments", admin.trim_end_matches('/'));
    let mut last = String::new();
    for _ in 0..50 {
        match client.post(&url).json(&serde_json::json!({"uri": uri, "force": true})).send().await {
            Ok(r) if r.status().is_success() => return r.json::<Value>().await.map_err(|e| e.to_string()),
            Ok(r) => {
                let code = r.status();
                last = format!("{code}: {}", r.text().await.unwrap_or_default());
                if code.is_client_error() && code.as_u16() != 404 {
                    break;
                }
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Err(format!("cannot register {uri} with Restate's admin API at {admin}: {last}"))
}
