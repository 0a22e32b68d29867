//! Where server runs execute: the [`Engine`] boundary, and [`Embedded`], the engine inside the
//! server process, durable in the SQLite run store.
//!
//! The API layer (`api`) knows runs only through [`Engine`]: start one, answer its question,
//! cancel it, read its record, checkpoints and event log, watch it. Another engine (a
//! distributed one) implements the same trait; nothing above it changes.
//!
//! How [`Embedded`] runs them:
//!
//! - a run is a durable session (`launch::durable`): every step is one transaction in the run
//!   store (row, checkpoint, the step's events); the state after each step also goes to the
//!   server's history (`db`, a thread's checkpoints);
//! - a running run holds one blocking thread of the server's runtime, stepping until it ends,
//!   pauses, or asks a question; a run waiting for an answer holds **no thread and no memory**:
//!   it is a row in the store. An answer is written to the audit log first (which refuses a
//!   second answer to the same question), then the run is rebuilt from its checkpoint, given
//!   the answer (a refused answer, e.g. one failing an `input`'s validation, is taken back
//!   from the log) and driven on;
//! - a server started on a store that has unfinished runs goes on with them: runs that were
//!   running resume from their last committed step (a step in flight when the server died runs
//!   again), runs waiting for an answer keep waiting, and a run whose answer was logged but not
//!   yet taken gets it;
//! - a run can be debugged from afar: started with breakpoints, paused, stepped one step,
//!   continued; breakpoints changed while it runs take effect before its next step. A paused
//!   run (breakpoint, step, pause) holds no thread either, and stays paused across a restart;
//! - watchers get [`Notice`]s per run (events, states, status) and [`InboxChange`]s for the
//!   inbox; the event log in the store is the same events, numbered, for watchers that come
//!   late or reconnect.

use crate::assistants::Assistant;
use crate::db::{HistoryRow, RunRow, ServerDb};
use launch::durable::{self, Durable, RunRecord, RunStore};
use launch::RunRequest;
use runtime::events::Event;
use runtime::provider::NoProvider;
use runtime::session::{Breakpoint, RunOptions, RunSession, Status};
use runtime::store::EventBuffer;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::broadcast;

/// An error for the API: an HTTP status and a message.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into() }
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(404, message)
    }
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(409, message)
    }
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, message)
    }
}

impl From<String> for ApiError {
    fn from(m: String) -> ApiError {
        ApiError::internal(runtime::secrets::scrub_text(&m))
    }
}

/// What a run is started with.
#[derive(Clone, Debug)]
pub struct StartSpec {
    pub run_id: String,
    pub assistant: Assistant,
    pub thread_id: Option<String>,
    /// The user's input text.
    pub input: Option<String>,
    /// Initial state (a JSON object).
    pub state: Option<Value>,
    pub metadata: Value,
    /// Who started it (a token's name, or `local`).
    pub who: String,
    /// Breakpoints it starts with.
    pub breakpoints: Vec<Breakpoint>,
    /// Pause before the first step (to step it from the start).
    pub paused: bool,
}

/// How far a run is driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drive {
    /// Until it ends, asks, hits a breakpoint or is paused.
    Continue,
    /// One step, then paused.
    Step,
}

/// What watchers of one run are told, in the order it happened.
#[derive(Clone, Debug)]
pub enum Notice {
    /// A debugger event, numbered as in the run's event log.
    Event { seq: u64, event: Arc<Event> },
    /// The state after step `step`.
    Values { step: u64, state: Arc<Value> },
    /// The run stopped being driven: it ended, paused or waits for an answer (its record says
    /// which).
    Settled,
}

/// A run appeared in, left or changed in the inbox (its record says how).
#[derive(Clone, Debug)]
pub struct InboxChange {
    pub run_id: String,
}

/// What a run list shows of one run.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    pub record: Option<RunRecord>,
    /// Driven right now (`Engine::is_active`).
    pub active: bool,
    pub breakpoints: Vec<Breakpoint>,
}

/// Where runs execute (see the module docs).
pub trait Engine: Send + Sync {
    /// Start a run; it goes on in the background.
    fn start(&self, spec: StartSpec) -> Result<(), ApiError>;
    /// Answer the question run `run_id` waits for (`interrupt_id`: the question it must be).
    fn answer(&self, run_id: &str, interrupt_id: Option<&str>, value: Value, who: &str) -> Result<(), ApiError>;
    /// Stop a run that has not ended.
    fn cancel(&self, run_id: &str) -> Result<(), ApiError>;
    /// Pause a running run before its next step.
    fn pause(&self, run_id: &str) -> Result<(), ApiError>;
    /// Go on with a paused run: one step, or until it ends, asks or breaks.
    fn resume(&self, run_id: &str, how: Drive) -> Result<(), ApiError>;
    /// Replace a run's breakpoints (a running run gets them before its next step).
    fn set_breakpoints(&self, run_id: &str, breakpoints: Vec<Breakpoint>) -> Result<(), ApiError>;
    fn breakpoints(&self, run_id: &str) -> Result<Vec<Breakpoint>, ApiError>;
    /// The run's record (status, question, output, error).
    fn record(&self, run_id: &str) -> Result<Option<RunRecord>, ApiError>;
    /// Whether a run is being driven right now.
    fn is_active(&self, run_id: &str) -> bool;
    /// The run's checkpoints (state after each step), newest first.
    fn history(&self, run_id: &str) -> Result<Vec<HistoryRow>, ApiError>;
    /// The run's latest checkpoint.
    fn latest_history(&self, run_id: &str) -> Result<Option<HistoryRow>, ApiError> {
        Ok(self.db().latest_history(run_id)?)
    }
    /// The summaries of many runs at once (an engine that reads runs over the network
    /// answers in one request); runs it does not know are left out.
    fn summaries(&self, run_ids: &[String]) -> Result<HashMap<String, RunSummary>, ApiError> {
        let mut out = HashMap::new();
        for id in run_ids {
            let summary = RunSummary { record: self.record(id)?, active: self.is_active(id), breakpoints: self.breakpoints(id)? };
            out.insert(id.clone(), summary);
        }
        Ok(out)
    }
    /// Events numbered above `after`, at most `limit`.
    fn events_after(&self, run_id: &str, after: u64, limit: usize) -> Result<Vec<(u64, String)>, ApiError>;
    /// Watch one run (subscribe before starting or answering it to miss nothing).
    fn watch(&self, run_id: &str) -> broadcast::Receiver<Notice>;
    /// Watch the inbox.
    fn watch_inbox(&self) -> broadcast::Receiver<InboxChange>;
    /// The server's tables.
    fn db(&self) -> &ServerDb;
}

/// Where the LLM answers of server runs come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmMode {
    /// The replies file beside each agent (`replies.yaml`), as `switchyard run` does.
    Scripted,
    /// The models the agents name, over HTTP (keys from the environment / provider file).
    Live,
}

struct Active {
    stop: Arc<AtomicBool>,
    pause: Arc<AtomicBool>,
    /// New breakpoints for the driver to apply before the next step.
    breakpoints: Arc<Mutex<Option<Vec<Breakpoint>>>>,
}

/// The engine inside the server process (see the module docs).
pub struct Embedded {
    me: Weak<Embedded>,
    db_path: PathBuf,
    sdb: ServerDb,
    store: Mutex<RunStore>,
    llm: LlmMode,
    rt: tokio::runtime::Handle,
    active: Mutex<HashMap<String, Active>>,
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    channels: Mutex<HashMap<String, broadcast::Sender<Notice>>>,
    inbox: broadcast::Sender<InboxChange>,
}

/// How many notices a slow watcher of one run may fall behind before it misses some (it can
/// read the event log again).
const CHANNEL: usize = 512;

impl Embedded {
    /// An engine on the run store at `db` (created when missing). Runs are driven on `rt`'s
    /// blocking threads. Call [`Embedded::recover`] once the server is ready.
    pub fn open(db: PathBuf, llm: LlmMode, rt: tokio::runtime::Handle) -> Result<Arc<Embedded>, String> {
        let sdb = ServerDb::open(&db)?;
        let store = RunStore::open(&db)?;
        Ok(Arc::new_cyclic(|me| Embedded {
            me: me.clone(),
            db_path: db,
            sdb,
            store: Mutex::new(store),
            llm,
            rt,
            active: Mutex::new(HashMap::new()),
            locks: Mutex::new(HashMap::new()),
            channels: Mutex::new(HashMap::new()),
            inbox: broadcast::channel(1024).0,
        }))
    }

    fn lock_of(&self, run_id: &str) -> Arc<Mutex<()>> {
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).entry(run_id.to_string()).or_default().clone()
    }

    fn channel(&self, run_id: &str) -> broadcast::Sender<Notice> {
        self.channels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(run_id.to_string())
            .or_insert_with(|| broadcast::channel(CHANNEL).0)
            .clone()
    }

    fn store_get(&self, run_id: &str) -> Result<Option<RunRecord>, String> {
        self.store.lock().unwrap_or_else(|p| p.into_inner()).get(run_id)
    }

    /// Options for a session of `run_id`: its listener numbers events after `last_seq`, sends
    /// them to the run's watchers and buffers them for the store.
    fn options(&self, run_id: &str, last_seq: u64) -> RunOptions {
        let mut o = RunOptions::new(Box::new(NoProvider));
        o.run_id = Some(run_id.to_string());
        o.keep_events = false;
        o.checkpoints = false;
        let buffer: EventBuffer = Default::default();
        let seq = Arc::new(AtomicU64::new(last_seq));
        let tx = self.channel(run_id);
        let buf = buffer.clone();
        o.listener = Some(Arc::new(move |e: &Event| {
            let n = seq.fetch_add(1, Ordering::SeqCst) + 1;
            buf.lock().unwrap_or_else(|p| p.into_inner()).push((n, e.to_file_line()));
            let _ = tx.send(Notice::Event { seq: n, event: Arc::new(e.clone()) });
        }));
        o.event_log = Some(buffer);
        o
    }

    fn durable(&self) -> Durable {
        Durable { db: self.db_path.clone(), force: false }
    }

    /// Rebuild run `run_id` from its checkpoint.
    fn resume_session(&self, run_id: &str) -> Result<RunSession, String> {
        let last = self.store.lock().unwrap_or_else(|p| p.into_inner()).last_event_seq(run_id)?;
        let (s, _) = durable::resume(&self.durable(), run_id, None, self.options(run_id, last))?;
        Ok(s)
    }

    /// Drive `session` on a blocking thread until it settles. The caller holds the run's lock,
    /// so the run is marked active before anyone else can look.
    fn spawn_drive(self: &Arc<Self>, mut session: RunSession, how: Drive) {
        let id = session.id().to_string();
        if let Ok(b) = self.breakpoints(&id)
            && let Err(e) = session.set_breakpoints(b)
        {
            tracing::warn!("run {id}: its breakpoints are refused: {e}");
        }
        if self.sdb.held(&id).unwrap_or(false) {
            let _ = self.sdb.set_hold(&id, false);
        }
        let active = Active { stop: session.stop_handle(), pause: session.pause_handle(), breakpoints: Default::default() };
        let slot = active.breakpoints.clone();
        self.active.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), active);
        let me = self.clone();
        self.rt.spawn_blocking(move || me.drive(session, how, slot));
    }

    fn drive(self: Arc<Self>, mut session: RunSession, how: Drive, slot: Arc<Mutex<Option<Vec<Breakpoint>>>>) {
        let id = session.id().to_string();
        let tx = self.channel(&id);
        // The state the run starts (or goes on) from is a checkpoint too (already there when
        // the run goes on after an answer or a pause: its watchers still get it).
        if self.sdb.latest_history(&id).ok().flatten().is_some_and(|h| h.step == session.steps()) {
            let _ = tx.send(Notice::Values { step: session.steps(), state: Arc::new(session.state()) });
        } else {
            self.checkpoint(&session, &tx);
        }
        loop {
            if matches!(session.status(), Status::Interrupted { .. } | Status::Finished { .. }) {
                break;
            }
            if let Some(b) = slot.lock().unwrap_or_else(|p| p.into_inner()).take()
                && let Err(e) = session.set_breakpoints(b)
            {
                tracing::warn!("run {id}: {e}");
            }
            if how == Drive::Step {
                session.step();
                self.checkpoint(&session, &tx);
                break;
            }
            // One step at a time (no `paused` event between them), its state a checkpoint.
            let st = session.run_for(std::time::Duration::ZERO).clone();
            self.checkpoint(&session, &tx);
            match st {
                Status::Ready => continue,
                _ => break,
            }
        }
        if let Status::Paused { reason } = session.status() {
            // Paused by a breakpoint, a step, a pause or an error: it stays paused, here and
            // after a restart, until someone steps or continues it.
            let _ = self.sdb.set_hold(&id, true);
            tracing::debug!("run {id} paused ({reason:?})");
        }
        {
            // Settled: no longer active, and the watchers are told (under the run's lock, so an
            // answer that comes now sees the stored status).
            let lock = self.lock_of(&id);
            let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
            self.active.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            let _ = tx.send(Notice::Settled);
        }
        drop(session);
        self.forget_channel(&id);
        let _ = self.inbox.send(InboxChange { run_id: id });
    }

    /// A settled run's channel is dropped when nobody watches it.
    fn forget_channel(&self, run_id: &str) {
        let mut ch = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if ch.get(run_id).is_some_and(|t| t.receiver_count() == 0) && !self.is_active(run_id) {
            ch.remove(run_id);
        }
    }

    fn checkpoint(&self, session: &RunSession, tx: &broadcast::Sender<Notice>) {
        let state = session.state();
        if let Err(e) = self.sdb.put_history(session.id(), session.steps(), &state, &session.due()) {
            tracing::warn!("{e}");
        }
        let _ = tx.send(Notice::Values { step: session.steps(), state: Arc::new(state) });
    }

    /// Go on with the unfinished runs of this server (see the module docs); returns how many
    /// were taken up.
    pub fn recover(self: &Arc<Self>) -> Result<usize, String> {
        let mut n = 0;
        for row in self.sdb.all_runs()? {
            let Some(rec) = self.store_get(&row.run_id)? else { continue };
            let lock = self.lock_of(&rec.id);
            let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
            let logged = match (&rec.status[..], &rec.pending) {
                ("interrupted", Some(p)) => match self.sdb.answer(&rec.id, &p.id)? {
                    Some(a) => Some((p.id.clone(), a.answer)),
                    None => continue,
                },
                ("ready" | "paused", _) if !self.sdb.held(&rec.id)? => None,
                _ => continue,
            };
            let mut session = match self.resume_session(&rec.id) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("cannot go on with run {}: {e}", rec.id);
                    continue;
                }
            };
            if let Some((qid, answer)) = logged
                && let Err(e) = session.answer(&qid, answer)
            {
                tracing::warn!("run {}: the logged answer to {qid} is refused now ({e}); it waits again", rec.id);
                self.sdb.forget_answer(&rec.id, &qid)?;
                continue;
            }
            self.spawn_drive(session, Drive::Continue);
            n += 1;
        }
        Ok(n)
    }
}

impl Engine for Embedded {
    fn start(&self, spec: StartSpec) -> Result<(), ApiError> {
        let me = self.self_arc();
        let a = &spec.assistant;
        let StartParts { doc, req, llm, provider } = start_parts(&spec, self.llm)?;
        let lock = self.lock_of(&spec.run_id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        if !spec.breakpoints.is_empty() {
            // Checked against the graph (`start_parts`) and compiled before anything is stored.
            let mut probe = launch::start(doc.clone(), &req, RunOptions::new(Box::new(NoProvider)))
                .map_err(|e| ApiError::bad(runtime::secrets::scrub_text(&e)))?;
            probe.set_breakpoints(spec.breakpoints.clone()).map_err(|e| ApiError::new(422, e))?;
        }
        self.sdb.add_run(&RunRow {
            run_id: spec.run_id.clone(),
            thread_id: spec.thread_id.clone(),
            assistant_id: a.assistant_id.clone(),
            created_ms: runtime::events::now_ms() as i64,
            metadata: spec.metadata.clone(),
            started_by: spec.who.clone(),
        })?;
        let session = match durable::start(&self.db_path, doc, &req, llm, Some(provider), self.options(&spec.run_id, 0)) {
            Ok(s) => s,
            Err(e) => {
                // Refused: no run is left behind in the thread's or the server's lists.
                self.sdb.remove_run(&spec.run_id)?;
                return Err(ApiError::bad(runtime::secrets::scrub_text(&e)));
            }
        };
        self.sdb.set_breakpoints(&spec.run_id, &serde_json::to_value(&spec.breakpoints).unwrap_or_default())?;
        if spec.paused {
            // Held before its first step: a step or continue takes it from here.
            self.checkpoint(&session, &self.channel(&spec.run_id));
            self.sdb.set_hold(&spec.run_id, true)?;
            drop(session);
            let _ = self.inbox.send(InboxChange { run_id: spec.run_id.clone() });
            return Ok(());
        }
        me.spawn_drive(session, Drive::Continue);
        Ok(())
    }

    fn answer(&self, run_id: &str, interrupt_id: Option<&str>, value: Value, who: &str) -> Result<(), ApiError> {
        let me = self.self_arc();
        let lock = self.lock_of(run_id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        let Some(rec) = self.store_get(run_id)? else {
            return Err(ApiError::not_found(format!("no run {run_id}")));
        };
        let pending = log_answer(&self.sdb, &rec, self.is_active(run_id), interrupt_id, &value, who)?;
        let mut session = match self.resume_session(run_id) {
            Ok(s) => s,
            Err(e) => {
                self.sdb.forget_answer(run_id, &pending.id)?;
                return Err(ApiError::conflict(runtime::secrets::scrub_text(&e)));
            }
        };
        if let Err(e) = session.answer(&pending.id, value) {
            self.sdb.forget_answer(run_id, &pending.id)?;
            return Err(ApiError::new(422, e));
        }
        me.spawn_drive(session, Drive::Continue);
        let _ = self.inbox.send(InboxChange { run_id: run_id.to_string() });
        Ok(())
    }

    fn pause(&self, run_id: &str) -> Result<(), ApiError> {
        let lock = self.lock_of(run_id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        match self.active.lock().unwrap_or_else(|p| p.into_inner()).get(run_id) {
            Some(a) => {
                a.pause.store(true, Ordering::SeqCst);
                Ok(())
            }
            None => {
                let rec = self.store_get(run_id)?.ok_or_else(|| ApiError::not_found(format!("no run {run_id}")))?;
                Err(ApiError::conflict(format!("run {run_id} is not running (it is {})", rec.status)))
            }
        }
    }

    fn resume(&self, run_id: &str, how: Drive) -> Result<(), ApiError> {
        let me = self.self_arc();
        let lock = self.lock_of(run_id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_active(run_id) {
            return Err(ApiError::conflict(format!("run {run_id} is running; pause it first")));
        }
        let rec = self.store_get(run_id)?.ok_or_else(|| ApiError::not_found(format!("no run {run_id}")))?;
        match rec.status.as_str() {
            "paused" | "ready" => {}
            "interrupted" => return Err(ApiError::conflict(format!("run {run_id} waits for an answer; answer it to go on"))),
            other => return Err(ApiError::conflict(format!("run {run_id} has ended ({other})"))),
        }
        let session = self.resume_session(run_id).map_err(ApiError::conflict)?;
        me.spawn_drive(session, how);
        Ok(())
    }

    fn set_breakpoints(&self, run_id: &str, breakpoints: Vec<Breakpoint>) -> Result<(), ApiError> {
        let lock = self.lock_of(run_id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        let Some(row) = self.sdb.run(run_id)? else {
            return Err(ApiError::not_found(format!("no run {run_id}")));
        };
        let rec = self.store_get(run_id)?.ok_or_else(|| ApiError::not_found(format!("no run {run_id}")))?;
        let doc = model::doc::load_path(std::path::Path::new(&rec.file));
        check_nodes(&doc, rec.request.agent.as_deref(), &breakpoints).map_err(|e| ApiError::new(422, format!("run {run_id} ({}): {}", row.assistant_id, e.message)))?;
        self.sdb.set_breakpoints(run_id, &serde_json::to_value(&breakpoints).unwrap_or_default())?;
        if let Some(a) = self.active.lock().unwrap_or_else(|p| p.into_inner()).get(run_id) {
            *a.breakpoints.lock().unwrap_or_else(|p| p.into_inner()) = Some(breakpoints);
        }
        Ok(())
    }

    fn breakpoints(&self, run_id: &str) -> Result<Vec<Breakpoint>, ApiError> {
        Ok(serde_json::from_value(self.sdb.breakpoints(run_id)?).unwrap_or_default())
    }

    fn cancel(&self, run_id: &str) -> Result<(), ApiError> {
        let lock = self.lock_of(run_id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = self.active.lock().unwrap_or_else(|p| p.into_inner()).get(run_id) {
            a.stop.store(true, Ordering::SeqCst);
            return Ok(());
        }
        let Some(rec) = self.store_get(run_id)? else {
            return Err(ApiError::not_found(format!("no run {run_id}")));
        };
        if !rec.resumable() {
            return Err(ApiError::conflict(format!("run {run_id} has ended ({})", rec.status)));
        }
        let mut session = self.resume_session(run_id).map_err(ApiError::conflict)?;
        session.stop();
        drop(session);
        let _ = self.inbox.send(InboxChange { run_id: run_id.to_string() });
        Ok(())
    }

    fn record(&self, run_id: &str) -> Result<Option<RunRecord>, ApiError> {
        Ok(self.store_get(run_id)?)
    }

    fn is_active(&self, run_id: &str) -> bool {
        self.active.lock().unwrap_or_else(|p| p.into_inner()).contains_key(run_id)
    }

    fn history(&self, run_id: &str) -> Result<Vec<HistoryRow>, ApiError> {
        Ok(self.sdb.history(run_id)?)
    }

    fn events_after(&self, run_id: &str, after: u64, limit: usize) -> Result<Vec<(u64, String)>, ApiError> {
        Ok(self.store.lock().unwrap_or_else(|p| p.into_inner()).events_after(run_id, after, limit)?)
    }

    fn watch(&self, run_id: &str) -> broadcast::Receiver<Notice> {
        self.channel(run_id).subscribe()
    }

    fn watch_inbox(&self) -> broadcast::Receiver<InboxChange> {
        self.inbox.subscribe()
    }

    fn db(&self) -> &ServerDb {
        &self.sdb
    }
}

impl Embedded {
    /// The engine as an `Arc` (runs are driven by threads that share it).
    fn self_arc(&self) -> Arc<Embedded> {
        self.me.upgrade().expect("the engine is alive while it is called")
    }
}

/// Every breakpoint names a node of the agent's graph.
pub fn check_nodes(doc: &model::doc::Document, agent: Option<&str>, breakpoints: &[Breakpoint]) -> Result<(), ApiError> {
    let graph = model::graph::lower(doc, agent).0;
    let known = |n: &str| graph.as_ref().is_some_and(|g| g.index.contains_key(n));
    match breakpoints.iter().find(|b| !known(&b.node)) {
        Some(b) => Err(ApiError::new(422, format!("no node `{}` to break on in {}", b.node, doc.path.display()))),
        None => Ok(()),
    }
}

/// What every engine checks and builds before it starts a run of `spec`: the assistant has no
/// errors, its document, the request, where its LLM answers come from and the provider.
pub struct StartParts {
    pub doc: Arc<model::doc::Document>,
    pub req: RunRequest,
    pub llm: launch::LlmChoice,
    pub provider: runtime::provider::BoxProvider,
}

pub fn start_parts(spec: &StartSpec, llm: LlmMode) -> Result<StartParts, ApiError> {
    let a = &spec.assistant;
    if !a.errors.is_empty() {
        return Err(ApiError::new(422, format!("assistant {} has errors and does not run:\n{}", a.graph_id, a.errors.join("\n"))));
    }
    if a.dialect == "lllm" && spec.input.as_deref().is_none_or(|t| t.trim().is_empty()) {
        return Err(ApiError::new(
            422,
            format!(
                "assistant {} is an LLLM agent: its run needs a user message, e.g. `input: {{\"messages\": [{{\"role\": \"user\", \"content\": \"…\"}}]}}` or `{{\"message\": \"…\", \"args\": {{…}}}}`",
                a.graph_id
            ),
        ));
    }
    let doc = model::doc::load_path(&a.file);
    if doc.io_error {
        let why = doc.diagnostics.first().map(|d| d.message.clone()).unwrap_or_default();
        return Err(ApiError::internal(format!("cannot read {}: {why}", a.file.display())));
    }
    let doc = Arc::new(doc);
    let req = RunRequest {
        agent: a.agent.clone(),
        input: spec.input.clone(),
        state: spec.state.clone(),
        live: llm == LlmMode::Live,
        ..Default::default()
    };
    let choice = launch::llm_choice(&doc, &req);
    let provider = launch::provider_for(&doc, &req).map_err(ApiError::bad)?;
    if !spec.breakpoints.is_empty() {
        check_nodes(&doc, a.agent.as_deref(), &spec.breakpoints)?;
    }
    Ok(StartParts { doc, req, llm: choice, provider })
}

/// The answer to run `rec`'s question, written to the audit log (every engine's rule): the run
/// must be waiting (not `active`), for `interrupt_id` when one is named, and the question not
/// answered yet. Returns the question.
pub fn log_answer(
    sdb: &ServerDb,
    rec: &RunRecord,
    active: bool,
    interrupt_id: Option<&str>,
    value: &Value,
    who: &str,
) -> Result<runtime::session::Pending, ApiError> {
    let run_id = &rec.id;
    let pending = match (&rec.status[..], &rec.pending) {
        ("interrupted", Some(p)) if !active => p.clone(),
        _ => {
            return Err(ApiError::conflict(format!(
                "run {run_id} is not waiting for an answer (it is {}); it may have been answered already",
                rec.status
            )));
        }
    };
    if let Some(q) = interrupt_id
        && q != pending.id
    {
        return Err(ApiError::conflict(format!("run {run_id} waits for question {}, not {q}", pending.id)));
    }
    if !sdb.record_answer(run_id, &pending.id, value, who)? {
        return Err(ApiError::conflict(format!("question {} of run {run_id} was answered already", pending.id)));
    }
    Ok(pending)
}
