//! The debugger's commands (docs/app-contract.md §5): one run at a time, driven by the engine's
//! `run::driver::Driver` on its own thread; its event batches go to the webview as `run-events`.
//!
//! Commands that wait for the run's thread (answers, state requests, rewinds) are async and
//! wait on a blocking-task thread, never on the UI's main thread.

use crate::commands::CmdError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use switchyard::doc::{Dialect, Document, load_str};
use switchyard::run::driver::{Batch, Control, Driver, DriverOptions, Sink, read_trace};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::{BoxProvider, NoProvider};
use switchyard::run::launch::LlmChoice;
use switchyard::run::session::{Breakpoint, RunOptions, new_run_id};
use switchyard::run::launch::trace::Trace;
use switchyard::run::store::{self, Durable, RunRecord, RunStore};
use tauri::{AppHandle, Emitter, Manager};
use ts_rs::TS;

type Res<T> = Result<T, CmdError>;

/// How many runs of this window remember the document they started from.
const STARTED_MAX: usize = 32;

/// The run in progress (if any), and what reviewing recorded runs needs.
#[derive(Default)]
pub struct Debugger {
    driver: Mutex<Option<Arc<Driver>>>,
    /// The documents runs of this window started from, by the path of their trace (oldest
    /// first): a recorded run's states are rebuilt with its own graph's reducers.
    started: Mutex<Vec<(PathBuf, Arc<Document>)>>,
    /// The trace read last: reviewing a run asks for one step after another.
    trace: Mutex<Option<CachedTrace>>,
}

struct CachedTrace {
    path: PathBuf,
    len: u64,
    modified: Option<std::time::SystemTime>,
    trace: Arc<Trace>,
}

impl Debugger {
    fn current(&self) -> Option<Arc<Driver>> {
        self.driver.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    fn replace(&self, d: Option<Arc<Driver>>) -> Option<Arc<Driver>> {
        std::mem::replace(&mut *self.driver.lock().unwrap_or_else(|p| p.into_inner()), d)
    }
    fn remember(&self, trace: PathBuf, doc: Arc<Document>) {
        let mut started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        started.retain(|(t, _)| *t != trace);
        started.push((trace, doc));
        let over = started.len().saturating_sub(STARTED_MAX);
        started.drain(..over);
    }
    fn started_from(&self, trace: &Path) -> Option<Arc<Document>> {
        let started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        started.iter().rev().find(|(t, _)| t == trace).map(|(_, d)| d.clone())
    }
    /// The trace at `path`, read again only when the file changed since it was last read.
    fn read_trace(&self, path: &Path) -> Result<Arc<Trace>, String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read the trace {}: {e}", path.display()))?;
        let (len, modified) = (meta.len(), meta.modified().ok());
        let mut cache = self.trace.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.as_ref()
            && c.path == path
            && c.len == len
            && c.modified == modified
        {
            return Ok(c.trace.clone());
        }
        let trace = Arc::new(Trace::read(path)?);
        *cache = Some(CachedTrace { path: path.to_path_buf(), len, modified, trace: trace.clone() });
        Ok(trace)
    }
}

/// Where a run's LLM answers come from (`RunConfig.llm`, tagged by `mode`).
#[derive(Debug, Deserialize, TS)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum LlmMode {
    Scripted {
        /// A `replies:` file relative to the agent; empty = `replies.yaml` beside it.
        #[serde(default)]
        #[ts(optional = nullable)]
        script: Option<String>,
    },
    None,
    Replay {
        /// Relative to the agent; empty = `<agent stem>.cassette.json` (or `cassette.json`) beside it.
        #[serde(default)]
        #[ts(optional = nullable)]
        cassette: Option<String>,
        /// A request that differs from the recording fails the call.
        #[serde(default)]
        #[ts(optional = nullable)]
        strict: Option<bool>,
    },
    Live {
        /// The model for agents and nodes that name none (this run only); absent = the
        /// configured default.
        #[serde(default)]
        #[ts(optional = nullable)]
        model: Option<String>,
    },
}

/// `run_start`'s configuration.
#[derive(Debug, Deserialize, TS)]
pub struct RunConfig {
    #[serde(default)]
    #[ts(optional = nullable)]
    agent: Option<String>,
    #[serde(default)]
    #[ts(optional = nullable)]
    input: Option<String>,
    /// Initial state as a JSON object.
    #[serde(default)]
    #[ts(optional = nullable)]
    state: Option<Value>,
    llm: LlmMode,
    /// Answers for interrupts to come, in order.
    #[serde(default)]
    #[ts(optional = nullable)]
    answers: Vec<Value>,
    #[serde(default)]
    breakpoints: Vec<Breakpoint>,
    #[serde(default)]
    break_on_error: bool,
    /// `continue` runs to the first stop; `step` runs one step and pauses.
    #[serde(default)]
    #[ts(optional = nullable)]
    start: Option<Control>,
    /// Record every LLM and tool exchange into this cassette (relative to the agent).
    #[serde(default)]
    #[ts(optional = nullable)]
    record: Option<String>,
    /// A durable run: every step is written to the run store, so the run can be resumed after
    /// the app was closed (`runs_list`, `run_resume`).
    #[serde(default)]
    #[ts(optional = nullable)]
    durable: bool,
    /// Let a scripted or replayed run use the network (remote hooks, skill and RAG URLs,
    /// embeddings, A2A, MCP over HTTP); such runs are offline otherwise. Live runs are online.
    #[serde(default)]
    #[ts(optional = nullable)]
    allow_network: bool,
}

/// What `run_start` and `run_resume` answer.
#[derive(Debug, Serialize, TS)]
pub struct RunInfo {
    run: String,
    /// Where the JSONL trace is written (null when it could not be created).
    trace: Option<String>,
    agent: String,
    #[ts(type = r#""sherma" | "loki" | "lllm""#)]
    dialect: &'static str,
    /// What answers LLM calls, for the status line: "scripted: replies.yaml (3 replies)".
    llm: String,
    /// Set for a durable run: the run store it writes to.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    durable: Option<String>,
    /// Set when the run records to a cassette: where, and whether git would commit it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    record: Option<RecordCheck>,
}

impl RunInfo {
    /// A run on a server (`remote.rs`).
    pub(crate) fn remote(run: String, trace: Option<PathBuf>, agent: String, dialect: Option<Dialect>, url: &str) -> RunInfo {
        RunInfo {
            run,
            trace: trace.map(|p| p.display().to_string()),
            agent,
            dialect: if dialect == Some(Dialect::Loki) { "loki" } else { "sherma" },
            llm: format!("on the server {url}"),
            durable: None,
            record: None,
        }
    }
}

/// Remember the document a run's trace was written from (its states are rebuilt with it).
pub(crate) fn remember(app: &AppHandle, trace: PathBuf, doc: Arc<Document>) {
    app.state::<Debugger>().remember(trace, doc);
}

/// Where a recording goes and whether it is inside a git work tree that does not ignore it
/// (`launch::worktree`): what `record_check`, `record_gitignore` and `run_start` answer.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RecordCheck {
    /// The file the recording is written to.
    path: String,
    /// The git work tree it is in; null outside one.
    work_tree: Option<String>,
    /// Git ignores the file (always false outside a work tree).
    ignored: bool,
    /// The `.gitignore` line that would ignore it; null outside a work tree.
    pattern: Option<String>,
    /// In a work tree and not ignored: the recording (prompts, replies, tool results) could be committed.
    warn: bool,
}

fn record_check_of(path: &Path) -> RecordCheck {
    use switchyard::run::launch::worktree;
    match worktree::check(path) {
        Some(w) => RecordCheck {
            path: path.display().to_string(),
            work_tree: Some(w.root.display().to_string()),
            ignored: w.ignored,
            pattern: Some(worktree::pattern(&w.relative)),
            warn: !w.ignored,
        },
        None => RecordCheck { path: path.display().to_string(), work_tree: None, ignored: false, pattern: None, warn: false },
    }
}

/// The recording path `record` (relative to the open agent, as `RunConfig.record`) resolved and
/// judged by the path rule.
fn record_target(app: &AppHandle, record: &str) -> Res<PathBuf> {
    let record = record.trim();
    if record.is_empty() {
        return Err(CmdError::new("no recording path given"));
    }
    let (path, text) = crate::commands::with_session(app, "checking the recording path", |s| {
        Ok((s.path().to_path_buf(), s.text().to_string()))
    })?;
    let base = load_str(&path, &text).base_dir.clone();
    let target = resolve(&base, record);
    crate::paths::check(app, &target, "record the cassette")?;
    Ok(target)
}

/// Where a recording to `record` would go, and whether git would commit it.
#[tauri::command]
pub async fn record_check(app: AppHandle, record: String) -> Res<RecordCheck> {
    let target = record_target(&app, &record)?;
    blocking(move || Ok(record_check_of(&target))).await
}

/// Adds the line that ignores the recording `record` to the `.gitignore` at the top of its work
/// tree (atomically, once); answers the check after it.
#[tauri::command]
pub async fn record_gitignore(app: AppHandle, record: String) -> Res<RecordCheck> {
    use switchyard::run::launch::worktree;
    let target = record_target(&app, &record)?;
    blocking(move || {
        let w = worktree::check(&target)
            .ok_or_else(|| format!("{} is not inside a git work tree: there is no .gitignore to add it to", target.display()))?;
        worktree::add_to_gitignore(&w.root, &target)?;
        Ok(record_check_of(&target))
    })
    .await
}

/// What `open_trace` answers.
#[derive(Debug, Serialize, TS)]
pub struct TraceFile {
    path: String,
    /// Events as the trace holds them (the engine's `Event`s as JSON).
    #[ts(as = "Vec<switchyard::run::events::Event>")]
    events: Vec<Value>,
}

fn no_run() -> CmdError {
    CmdError::new("no run is in progress: press F5 to start one")
}

fn driver(app: &AppHandle) -> Res<Arc<Driver>> {
    app.state::<Debugger>().current().ok_or_else(no_run)
}

/// Run a blocking driver request off the async runtime's threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Res<T> {
    match tauri::async_runtime::spawn_blocking(f).await {
        Ok(r) => r.map_err(CmdError::new),
        Err(e) => Err(CmdError::new(format!("internal error in the run request: {e}"))),
    }
}

/// Where traces go: `$SWITCHYARD_RUNS_DIR`, else the app data folder's `runs/`.
pub(crate) fn runs_dir(app: &AppHandle) -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SWITCHYARD_RUNS_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(d));
    }
    app.path().app_data_dir().ok().map(|d| d.join("runs"))
}

pub(crate) fn safe_name(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

fn resolve(base: &Path, p: &str) -> PathBuf {
    let p = PathBuf::from(p);
    if p.is_absolute() { p } else { base.join(p) }
}

/// The provider of `choice`, decided where the CLI decides it (`launch::provider`: live runs get
/// the keyring's keys through the same resolver), with the app's hint on a missing key.
fn provider(choice: &LlmChoice, doc: &switchyard::doc::Document, record: Option<&Path>) -> Res<BoxProvider> {
    launch::provider(doc, choice, record).map_err(|e| {
        if matches!(choice, LlmChoice::Live { .. }) && e.starts_with("cannot run live") {
            CmdError::new(format!(
                "{e}\nAdd the key in Settings (⚙ in the toolbar), or set the variable before starting the app."
            ))
        } else {
            CmdError::new(e)
        }
    })
}

#[tauri::command]
pub async fn run_start(app: AppHandle, config: RunConfig) -> Res<RunInfo> {
    crate::remote::refuse_edit(&app, "running it on this computer")?;
    let (path, text, selected) = crate::commands::with_session(&app, "starting a run", |s| {
        Ok((s.path().to_path_buf(), s.text().to_string(), s.agent().map(str::to_string)))
    })?;
    crate::trust::require_trust(&path, &load_str(&path, &text))?;
    let doc = Arc::new(load_str(&path, &text));
    let dialect = match doc.dialect() {
        Some(Dialect::Sherma) => "sherma",
        Some(Dialect::Loki) => "loki",
        Some(Dialect::Lllm) => "lllm",
        None => {
            return Err(CmdError::new(format!(
                "{} is neither a sherma agent (`manifest_version: 1`) nor a Loki graph (`version: \"1.0\"`); see the Problems panel",
                path.display()
            )));
        }
    };
    // The agent shown: a sherma file's, or an LLLM config's agent drawn with its call loop.
    let shown = selected.filter(|a| dialect == "sherma" || doc.lllm().is_some_and(|l| l.agent(a).is_some()));
    let agent = config.agent.clone().or(shown);
    let req = RunRequest {
        agent: agent.clone(),
        input: config.input.clone(),
        state: config.state.clone(),
        allow_network: config.allow_network,
        ..RunRequest::default()
    };
    let base = doc.base_dir.clone();
    let choice = llm_choice(&config.llm, &base, &doc);
    let record = config.record.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(|r| resolve(&base, r));
    // The replies file, the cassette and the recording are paths the webview named.
    match &choice {
        LlmChoice::Scripted { script: Some(p) } => {
            crate::paths::check(&app, p, "read the replies file")?;
        }
        LlmChoice::Replay { cassette: Some(p), .. } => {
            crate::paths::check(&app, p, "replay the cassette")?;
        }
        _ => {}
    }
    if let Some(r) = &record {
        crate::paths::check(&app, r, "record the cassette")?;
    }
    let record_check = record.as_deref().map(record_check_of);
    // One run at a time: the earlier one is stopped (its drop joins its thread), once this one
    // passed its checks.
    stop_current(&app).await;
    let llm = launch::online_if(provider(&choice, &doc, record.as_deref())?, config.allow_network);
    let llm_text = llm.describe();
    let run = new_run_id();
    let agent_name = agent.clone().unwrap_or_else(|| {
        path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "agent".into())
    });
    let agent_name = if dialect == "loki" && agent_name == "graph" {
        path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or(agent_name)
    } else {
        agent_name
    };
    // A folder that cannot be made means no trace, not no run.
    let trace = runs_dir(&app)
        .filter(|d| match std::fs::create_dir_all(d) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("switchyard: cannot create the runs folder {}: {e}; running without a trace", d.display());
                false
            }
        })
        .map(|d| d.join(format!("{}-{run}.jsonl", safe_name(&agent_name))));
    let mut options = RunOptions::new(llm);
    options.run_id = Some(run.clone());
    options.answers = config.answers.clone();
    let sink = events_sink(&app);
    let start = config.start.unwrap_or(Control::Continue);
    let breakpoints = config.breakpoints.clone();
    let break_on_error = config.break_on_error;
    let trace2 = trace.clone();
    let started_from = doc.clone();
    let db = config.durable.then(store::default_db_path);
    let db2 = db.clone();
    let d = blocking(move || {
        let driver = DriverOptions { trace: trace2, start: None, window: Some(EVENTS_WINDOW), ..Default::default() };
        let build = move |mut opts: RunOptions| match &db2 {
            Some(db) => {
                let provider = std::mem::replace(&mut opts.provider, Box::new(NoProvider));
                store::start(db, doc, &req, choice, Some(provider), opts)
            }
            None => launch::session(doc, &req, opts),
        };
        let d = Driver::start(build, options, driver, sink)?;
        d.set_breakpoints(breakpoints, break_on_error)?;
        d.control(start);
        Ok(d)
    })
    .await?;
    let info = RunInfo {
        run: d.run_id().to_string(),
        trace: d.trace().map(|p| p.display().to_string()),
        agent: agent_name,
        dialect,
        llm: llm_text,
        durable: db.map(|p| p.display().to_string()),
        record: record_check,
    };
    if let Some(t) = trace {
        crate::suites::note_run(&t, agent, config.input.clone(), config.state.clone(), config.answers.clone(), record);
        app.state::<Debugger>().remember(t, started_from);
    }
    app.state::<Debugger>().replace(Some(Arc::new(d)));
    Ok(info)
}

/// Stop the run in progress, if any; a durable one is left resumable in its store; a run on a
/// server is only no longer shown (it goes on there).
pub(crate) async fn stop_current(app: &AppHandle) {
    app.state::<crate::remote::Remote>().detach();
    let old = app.state::<Debugger>().replace(None);
    if let Some(old) = old {
        old.keep_resumable();
        old.control(Control::Stop);
        let _ = tauri::async_runtime::spawn_blocking(move || drop(old)).await;
    }
}

/// The LLM choice a durable run saves, with the paths the provider was built from.
fn llm_choice(mode: &LlmMode, base: &Path, doc: &switchyard::doc::Document) -> LlmChoice {
    let given = |p: &Option<String>| p.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(|p| resolve(base, p));
    match mode {
        LlmMode::None => LlmChoice::None,
        LlmMode::Scripted { script } => LlmChoice::Scripted { script: given(script).or_else(|| launch::default_script(doc)) },
        LlmMode::Replay { cassette, strict } => {
            LlmChoice::Replay { cassette: given(cassette).or_else(|| launch::default_cassette(doc)), strict: *strict }
        }
        LlmMode::Live { model } => LlmChoice::Live { model: model.clone() },
    }
}

/// What `runs_list` answers.
#[derive(Debug, Serialize, TS)]
pub struct RunsList {
    /// The run store's file.
    db: String,
    runs: Vec<RunRecord>,
}

/// The durable runs in the run store (most recently updated first).
#[tauri::command]
pub async fn runs_list() -> Res<RunsList> {
    blocking(|| {
        let db = store::default_db_path();
        if !db.exists() {
            return Ok(RunsList { db: db.display().to_string(), runs: Vec::new() });
        }
        let runs = RunStore::open(&db)?.list()?;
        Ok(RunsList { db: db.display().to_string(), runs })
    })
    .await
}

/// Delete durable runs (and their checkpoints). The run in progress cannot be deleted.
#[tauri::command]
pub async fn runs_delete(app: AppHandle, ids: Vec<String>) -> Res<()> {
    if let Some(d) = app.state::<Debugger>().current() {
        if d.is_durable() && ids.iter().any(|i| i == d.run_id()) {
            return Err(CmdError::new(format!("run {} is in progress: stop it first", d.run_id())));
        }
    }
    blocking(move || {
        let db = store::default_db_path();
        let missing = RunStore::open(&db)?.delete(&ids)?;
        if missing.is_empty() { Ok(()) } else { Err(format!("no such run in {}: {}", db.display(), missing.join(", "))) }
    })
    .await
}

/// Resume a durable run from its last checkpoint: the agent file is read again from disk (a
/// changed file is refused unless `force`), the run comes back paused, interrupted (its
/// question asked again) or ready, and is driven like a started run.
#[tauri::command]
pub async fn run_resume(
    app: AppHandle,
    id: String,
    force: Option<bool>,
    breakpoints: Option<Vec<Breakpoint>>,
    break_on_error: Option<bool>,
) -> Res<RunInfo> {
    crate::trust::require_trust_of_run(&store::default_db_path(), &id)?;
    stop_current(&app).await;
    let db = store::default_db_path();
    let sink = events_sink(&app);
    let runs = runs_dir(&app).filter(|d| std::fs::create_dir_all(d).is_ok());
    let d = Durable { db: db.clone(), force: force.unwrap_or(false) };
    let id2 = id.clone();
    let (driver, rec, llm_text) = blocking(move || {
        // The record read while the driver builds the session.
        let info: Arc<Mutex<Option<RunRecord>>> = Arc::new(Mutex::new(None));
        let info2 = info.clone();
        let id3 = id2.clone();
        let build = move |opts: RunOptions| {
            let make = |doc: &switchyard::doc::Document, choice: &LlmChoice| {
                provider(choice, doc, None).map_err(|e| e.message)
            };
            let (session, rec) = store::resume(&d, &id3, Some(&make), opts)?;
            *info2.lock().unwrap_or_else(|p| p.into_inner()) = Some(rec);
            Ok(session)
        };
        let mut options = RunOptions::new(Box::new(NoProvider));
        options.run_id = Some(id2.clone());
        let trace = runs.map(|r| r.join(format!("resumed-{}-{}.jsonl", safe_name(&id2), switchyard::run::events::now_ms())));
        let driver = DriverOptions { trace, start: None, window: Some(EVENTS_WINDOW), ..Default::default() };
        let drv = Driver::start(build, options, driver, sink)?;
        drv.set_breakpoints(breakpoints.unwrap_or_default(), break_on_error.unwrap_or(false))?;
        let rec = info.lock().unwrap_or_else(|p| p.into_inner()).take().ok_or("the run did not start")?;
        let llm_text = match &rec.llm {
            LlmChoice::None => "no LLM provider".to_string(),
            LlmChoice::Scripted { script } => {
                format!("scripted replies from {}", script.as_ref().map(|p| p.display().to_string()).unwrap_or_default())
            }
            LlmChoice::Replay { cassette, .. } => {
                format!("replay of {}", cassette.as_ref().map(|p| p.display().to_string()).unwrap_or_default())
            }
            LlmChoice::Live { .. } => "live".to_string(),
        };
        Ok((drv, rec, llm_text))
    })
    .await?;
    let info = RunInfo {
        run: driver.run_id().to_string(),
        trace: driver.trace().map(|p| p.display().to_string()),
        agent: rec.agent.clone(),
        dialect: match rec.dialect.as_str() {
            "loki" => "loki",
            "lllm" => "lllm",
            _ => "sherma",
        },
        llm: llm_text,
        durable: Some(db.display().to_string()),
        record: None,
    };
    app.state::<Debugger>().replace(Some(Arc::new(driver)));
    Ok(info)
}

fn remote(app: &AppHandle) -> Option<Arc<crate::remote::RemoteRun>> {
    app.state::<crate::remote::Remote>().current()
}

/// Flow control of a local run's `run-events` (`DriverOptions::window`): the events the window may
/// have received and not yet folded (`run_events_ack`) before the run waits for it. About a
/// third of a second of a fast loop; the page folds that in a few frames.
const EVENTS_WINDOW: u64 = 10_000;

/// The window folded `events` more events of `run` (flow control; see `EVENTS_WINDOW`).
/// Acknowledgements of a run that is not the current one are ignored.
#[tauri::command]
pub fn run_events_ack(app: AppHandle, run: String, events: u64) {
    if let Some(d) = app.state::<Debugger>().current().filter(|d| d.run_id() == run) {
        d.ack(events);
    }
}

#[tauri::command]
pub async fn run_control(app: AppHandle, action: Control) -> Res<()> {
    if let Some(r) = remote(&app) {
        return r.control(action).await.map_err(CmdError::new);
    }
    driver(&app)?.control(action);
    Ok(())
}

#[tauri::command]
pub async fn run_breakpoints(app: AppHandle, breakpoints: Vec<Breakpoint>, break_on_error: bool) -> Res<()> {
    if let Some(r) = remote(&app) {
        return r.set_breakpoints(breakpoints).await.map_err(CmdError::new);
    }
    // Without a run the UI keeps them and sends them with the next start.
    let Some(d) = app.state::<Debugger>().current() else { return Ok(()) };
    blocking(move || d.set_breakpoints(breakpoints, break_on_error)).await
}

#[tauri::command]
pub async fn run_answer(app: AppHandle, id: String, value: Value) -> Res<()> {
    if let Some(r) = remote(&app) {
        return r.answer(&id, value).await.map_err(CmdError::new);
    }
    let d = driver(&app)?;
    let (given, trace, asked) = (value.clone(), d.trace().cloned(), id.clone());
    blocking(move || d.answer(&id, value)).await?;
    crate::suites::note_answer(trace.as_deref(), &asked, given);
    Ok(())
}

#[tauri::command]
pub async fn run_edit_state(app: AppHandle, key: String, value: Value) -> Res<()> {
    if remote(&app).is_some() {
        return Err(CmdError::new(crate::remote::not_on_server("editing the state")));
    }
    let d = driver(&app)?;
    blocking(move || d.edit_state(&key, value)).await
}

#[tauri::command]
pub async fn run_state_at(app: AppHandle, step: u64) -> Res<Value> {
    if let Some(r) = remote(&app) {
        return blocking(move || r.state_at(step)).await;
    }
    let d = driver(&app)?;
    blocking(move || d.state_at(step)).await
}

#[tauri::command]
pub async fn run_rewind(app: AppHandle, step: u64) -> Res<()> {
    if remote(&app).is_some() {
        return Err(CmdError::new(crate::remote::not_on_server("rewinding")));
    }
    let d = driver(&app)?;
    blocking(move || d.rewind(step)).await
}

#[tauri::command]
pub async fn open_trace(app: AppHandle, path: Option<String>) -> Res<Option<TraceFile>> {
    let path = match path {
        Some(p) => {
            let p = PathBuf::from(p);
            crate::paths::check(&app, &p, "read the trace")?;
            p
        }
        None => {
            let mut dialog = rfd::AsyncFileDialog::new()
                .set_title("Open a run trace")
                .add_filter("Run trace", &["jsonl"])
                .add_filter("All files", &["*"]);
            if let Some(dir) = runs_dir(&app).filter(|d| d.is_dir()) {
                dialog = dialog.set_directory(dir);
            }
            match dialog.pick_file().await {
                Some(f) => {
                    // Chosen in a native dialog: the webview may ask for its states from now on.
                    crate::paths::grant(&app, f.path());
                    f.path().to_path_buf()
                }
                None => return Ok(None),
            }
        }
    };
    let p2 = path.clone();
    let events = blocking(move || read_trace(&p2)).await?;
    Ok(Some(TraceFile { path: path.display().to_string(), events }))
}

/// What `trace_state_at` answers: a recorded run's state after a step and after the step
/// before, and why they may not be what the engine held.
#[derive(Debug, Serialize, TS)]
pub struct TraceStateAt {
    /// The state after the step (a JSON object).
    #[ts(type = "{ [key in string]?: JsonValue }")]
    state: Value,
    /// The state after the step before; null for step 0.
    #[ts(type = "{ [key in string]?: JsonValue } | null")]
    prev: Option<Value>,
    /// Why the states may differ from what the engine held; null when they are exact.
    warning: Option<String>,
}

/// The state of the recorded run in the trace at `path` after `step` steps (and after the step
/// before), rebuilt by the engine with the dialect's reducers (`launch::trace`). `events`: only
/// the trace's first `events` events count (an earlier fork of a run whose trace went on). A Loki
/// graph's reducers come from the document the run started from when this window started it,
/// else from the open document when it fits the trace; the answer's `warning` says when neither
/// does.
#[tauri::command]
pub async fn trace_state_at(app: AppHandle, path: String, step: u64, events: Option<usize>) -> Res<TraceStateAt> {
    let path = PathBuf::from(path);
    crate::paths::check(&app, &path, "read the trace")?;
    let doc = app.state::<Debugger>().started_from(&path).or_else(|| {
        let state = app.state::<crate::AppState>();
        let session = state.lock_session();
        session.as_ref().map(|s| s.document())
    });
    let app2 = app.clone();
    blocking(move || {
        let trace = app2.state::<Debugger>().read_trace(&path)?;
        let r = trace.state_at(events, step, doc.as_deref());
        // Traces are written redacted; what is shown passes the redactor once more all the same.
        let red = switchyard::secrets::global();
        let (mut state, mut prev) = (r.state, r.prev);
        red.value(&mut state);
        if let Some(p) = prev.as_mut() {
            red.value(p);
        }
        Ok(TraceStateAt { state, prev, warning: r.warning.map(|w| red.str(&w).into_owned()) })
    })
    .await
}

/// Stop the run when the app closes (its scripts must not outlive the window).
/// A durable run is left as it was in its store (paused, interrupted, or at its last step), to
/// be resumed from the Runs list.
pub fn shut_down(app: &AppHandle) {
    app.state::<crate::remote::Remote>().detach();
    if let Some(d) = app.state::<Debugger>().replace(None) {
        d.keep_resumable();
        d.control(Control::Stop);
    }
}

/// Run-event batches the window has not taken yet (`run_events_take`), each as its JSON text.
///
/// The window *takes* the batches rather than being sent them: Tauri delivers an event by
/// evaluating a script with the payload pasted in, and a 100,001-step run streams about 40 MB of
/// events. Pasted into scripts (even as one string literal each), that source text and its
/// parsing as code left the web process 163–165 MB bigger after the run (allocator pages it
/// keeps); taken as command answers, 90–99 MB (docs/performance.md). A command's
/// answer comes back through the IPC protocol as a response body, which the page reads with
/// `response.json()`; only the small `run-events-ready` notice is a script.
#[derive(Default)]
pub struct EventQueue {
    inner: Mutex<Queued>,
}

#[derive(Default)]
struct Queued {
    batches: std::collections::VecDeque<String>,
    /// `run-events-ready` was sent and the window has not taken everything since.
    notified: bool,
}

/// About how much JSON one `run_events_take` answers: the page parses an answer in one go on its
/// main thread, so a bounded answer keeps frames and clicks flowing while a fast run streams.
const TAKE_BYTES: usize = 1 << 20;

impl EventQueue {
    /// Appends `batch`; `true` when the window must be told there is something to take.
    fn push(&self, batch: String) -> bool {
        let mut q = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        q.batches.push_back(batch);
        !std::mem::replace(&mut q.notified, true)
    }

    /// The oldest batches, about `TAKE_BYTES` of them (at least one if any), as the JSON text of
    /// `{"batches": [...], "more": bool}`; `more` says batches are left for another take.
    fn take(&self) -> String {
        let mut q = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut json = String::from("{\"batches\":[");
        let mut n = 0;
        while let Some(b) = q.batches.front() {
            if n > 0 && json.len() + b.len() > TAKE_BYTES {
                break;
            }
            if n > 0 {
                json.push(',');
            }
            json.push_str(b);
            q.batches.pop_front();
            n += 1;
        }
        let more = !q.batches.is_empty();
        q.notified = more;
        json.push_str(if more { "],\"more\":true}" } else { "],\"more\":false}" });
        json
    }
}

/// The oldest run-event batches not taken yet (see `EventQueue`): `{batches, more}`. The window
/// calls it when told `run-events-ready`, and again while `more`.
#[tauri::command]
pub fn run_events_take(queue: tauri::State<'_, EventQueue>) -> tauri::ipc::Response {
    tauri::ipc::Response::new(tauri::ipc::InvokeResponseBody::Json(queue.take()))
}

/// The sink that queues a run's event batches for the window (`EventQueue`) and tells it with a
/// `run-events-ready` notice when there is something to take.
pub(crate) fn events_sink(app: &AppHandle) -> Sink {
    let app = app.clone();
    Arc::new(move |b: Batch| {
        // A nested run's agent file is named by the run, not the webview: the UI may draw it.
        for e in &b.events {
            if e.get("event").and_then(Value::as_str) == Some("nested_paused")
                && let Some(f) = e.get("file").and_then(Value::as_str)
            {
                crate::paths::grant(&app, Path::new(f));
            }
        }
        let sent = serde_json::to_string(&b).map_err(|e| e.to_string()).and_then(|json| {
            if app.state::<EventQueue>().push(json) { app.emit("run-events-ready", ()).map_err(|e| e.to_string()) } else { Ok(()) }
        });
        if let Err(e) = sent {
            eprintln!("switchyard: could not send run events to the window: {e}");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn queued_batches_are_taken_in_order_in_bounded_answers_and_the_window_is_told_once() {
        let q = EventQueue::default();
        let take = |q: &EventQueue| serde_json::from_str::<Value>(&q.take()).unwrap();
        assert_eq!(take(&q), serde_json::json!({"batches": [], "more": false}));
        assert!(q.push(r#"{"events":[1]}"#.into()), "the first batch tells the window");
        assert!(!q.push(r#"{"events":[2]}"#.into()), "more batches before it takes them do not");
        assert_eq!(take(&q), serde_json::json!({"batches": [{"events": [1]}, {"events": [2]}], "more": false}));
        assert_eq!(take(&q)["batches"], serde_json::json!([]), "taken batches are gone");
        assert!(q.push(r#"{"events":[3]}"#.into()), "after everything was taken, the next batch tells the window again");
        assert_eq!(take(&q)["batches"], serde_json::json!([{"events": [3]}]));
        // A long stream comes in answers of about TAKE_BYTES, in order, with `more` until the end;
        // no notice is sent while batches are left (the window takes again on `more`).
        let big = |i: usize| format!(r#"{{"i":{i},"pad":"{}"}}"#, "x".repeat(400 << 10));
        assert!(q.push(big(0)));
        for i in 1..10 {
            assert!(!q.push(big(i)));
        }
        let mut seen = Vec::new();
        let mut first = true;
        loop {
            let text = q.take();
            let v: Value = serde_json::from_str(&text).unwrap();
            let batches = v["batches"].as_array().unwrap();
            assert!(!batches.is_empty() && (batches.len() == 1 || text.len() <= TAKE_BYTES + 64), "{} batches, {} bytes", batches.len(), text.len());
            seen.extend(batches.iter().map(|b| b["i"].as_u64().unwrap()));
            if v["more"] == false {
                break;
            }
            if std::mem::take(&mut first) {
                assert!(!q.push(big(10)), "while batches are left, a new one tells no one");
            }
        }
        assert_eq!(seen, (0..11).collect::<Vec<u64>>());
        assert!(q.push(big(11)), "the queue emptied: the next batch tells the window");
    }

    #[test]
    fn a_trace_is_read_again_only_when_it_changed_and_runs_remember_their_document() {
        let dir = std::env::temp_dir().join(format!("sy-app-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("loop-r.jsonl");
        let line = |l: &str| format!("{l}\n");
        std::fs::write(&path, line(r#"{"event":"run_started","run":"r","ts_ms":1,"agent":"loop","input":null,"state":{"n":0}}"#)).unwrap();
        let d = Debugger::default();
        let first = d.read_trace(&path).unwrap();
        assert!(Arc::ptr_eq(&first, &d.read_trace(&path).unwrap()), "an unchanged trace is not read again");
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(line(r#"{"event":"node_enter","run":"r","ts_ms":2,"step":1,"node":"inc","kind":"set_state"}"#).as_bytes()).unwrap();
        f.write_all(line(r#"{"event":"node_exit","run":"r","ts_ms":3,"step":1,"node":"inc","update":{"n":1},"duration_ms":1}"#).as_bytes()).unwrap();
        drop(f);
        let grown = d.read_trace(&path).unwrap();
        assert_eq!(grown.len(), 3);
        let at1 = grown.state_at(None, 1, None);
        assert_eq!((at1.state, at1.prev, at1.warning), (serde_json::json!({"n": 1}), Some(serde_json::json!({"n": 0})), None));
        assert!(d.read_trace(&dir.join("gone.jsonl")).unwrap_err().contains("cannot read the trace"));
        // The documents runs started from: the latest ones, by trace.
        let doc = Arc::new(load_str(&dir.join("loop.yaml"), "manifest_version: 1\n"));
        for i in 0..STARTED_MAX + 3 {
            d.remember(dir.join(format!("{i}.jsonl")), doc.clone());
        }
        assert!(d.started_from(&dir.join("0.jsonl")).is_none());
        assert!(d.started_from(&dir.join(format!("{}.jsonl", STARTED_MAX + 2))).is_some());
        assert_eq!(d.started.lock().unwrap().len(), STARTED_MAX);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The shell's command types in TypeScript (`ui/src/contract/shell.ts`), generated with `ts-rs`
/// like the engine's (`switchyard::studio::contract`): the debugger's, the Settings page's, and the
/// editor commands' own (`CmdError`, `apply_edit`'s `EditedView`, `check_expr`'s `ExprIssue`,
/// `export_diagram`'s `ExportFormat`, the `document-changed` payload).
#[cfg(test)]
mod contract {
    use crate::settings::{
        DocModel, KeySource, KeyringInfo, ModelsInfo, ProbeResult, ProbeStatus, ProviderInfo, ProviderInput,
        SaveResult, Settings, SettingsChange,
    };
    use crate::commands::{CmdError, EditedView, ExportFormat, ExprIssue};
    use crate::{ChangeKind, DocumentChanged};
    use switchyard::studio::contract::{check_or_update, config, declaration, file, ui_contract_path};

    const COMMAND: &str = "cargo test --workspace --features switchyard-app/custom-protocol --bin switchyard-app contract";

    fn shell_ts() -> String {
        let c = &config();
        let decls = vec![
            declaration::<super::RunConfig>(c),
            declaration::<super::LlmMode>(c),
            declaration::<super::RunInfo>(c),
            declaration::<super::RecordCheck>(c),
            declaration::<super::RunsList>(c),
            declaration::<super::TraceFile>(c),
            declaration::<super::TraceStateAt>(c),
            declaration::<Settings>(c),
            declaration::<KeyringInfo>(c),
            declaration::<ProviderInfo>(c),
            declaration::<KeySource>(c),
            declaration::<SettingsChange>(c),
            declaration::<ProviderInput>(c),
            declaration::<SaveResult>(c),
            declaration::<ProbeResult>(c),
            declaration::<ProbeStatus>(c),
            declaration::<ModelsInfo>(c),
            declaration::<DocModel>(c),
            declaration::<CmdError>(c),
            declaration::<EditedView>(c),
            declaration::<ExprIssue>(c),
            declaration::<ExportFormat>(c),
            declaration::<DocumentChanged>(c),
            declaration::<ChangeKind>(c),
            declaration::<crate::bundle::BundleView>(c),
            declaration::<crate::bundle::BundleAgentView>(c),
            declaration::<crate::bundle::FolderOpened>(c),
            declaration::<crate::remote::RemoteStatus>(c),
            declaration::<crate::remote::RemoteRunInfo>(c),
            declaration::<crate::remote::RemoteAssistant>(c),
            declaration::<crate::remote::RemoteOpened>(c),
            declaration::<crate::remote::RemoteStart>(c),
        ];
        file(
            "src-tauri (commands, main, debug, settings, bundle, remote)",
            COMMAND,
            &[
                "import type { Diagnostic, Severity } from './syntax';",
                "import type { View } from './editor';",
                "import type { Breakpoint, Control, Event, JsonValue, Pending, RunRecord } from './runtime';",
            ],
            &decls,
        )
    }

    /// `CmdError.code`'s TypeScript union is exactly the codes the shell refuses with, and every
    /// coded error in src-tauri/src (`CmdError::coded`) names one of them.
    #[test]
    fn cmd_error_codes_are_the_ones_the_shell_sends() {
        let codes = [
            ("UNTRUSTED", crate::trust::UNTRUSTED),
            ("MANIFEST", crate::trust::MANIFEST),
            ("PATH_NOT_ALLOWED", crate::paths::PATH_NOT_ALLOWED),
            ("BUNDLE", crate::bundle::BUNDLE),
        ];
        let ts = declaration::<CmdError>(&config());
        let union = ts.split("code?: ").nth(1).and_then(|r| r.split([',', '}']).next()).expect("CmdError.code in the TS");
        let mut in_ts: Vec<&str> = union.split('|').map(|v| v.trim().trim_matches('"')).collect();
        let mut in_rust: Vec<&str> = codes.iter().map(|(_, v)| *v).collect();
        in_ts.sort();
        in_rust.sort();
        assert_eq!(in_ts, in_rust, "CmdError.code's #[ts(type)] and the codes differ");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        // Built here so that this file's own text is not a call.
        let call_of = format!("{}::{}(", "CmdError", "coded");
        let mut calls = 0;
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for call in text.split(call_of.as_str()).skip(1) {
                let arg = call.split(',').next().unwrap_or("").trim();
                assert!(
                    codes.iter().any(|(name, _)| *name == arg),
                    "{}: the code {arg} is not one CmdError's TypeScript lists (its #[ts(type)] and this test)",
                    path.display()
                );
                calls += 1;
            }
        }
        assert!(calls > 0, "no CmdError::coded call found under {}", src.display());
    }

    #[test]
    fn checked_in_shell_ts_is_what_the_command_types_generate() {
        let path = ui_contract_path(env!("CARGO_MANIFEST_DIR"), "shell.ts");
        if let Err(e) = check_or_update(&path, &shell_ts(), COMMAND) {
            panic!("{e}");
        }
    }
}
