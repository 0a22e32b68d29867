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
use switchyard::doc::{Dialect, load_str};
use switchyard::run::driver::{Batch, Control, Driver, DriverOptions, Sink, read_trace};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::{BoxProvider, NoProvider};
use switchyard::run::launch::LlmChoice;
use switchyard::run::session::{Breakpoint, RunOptions, new_run_id};
use switchyard::run::store::{self, Durable, RunRecord, RunStore};
use tauri::{AppHandle, Emitter, Manager};

type Res<T> = Result<T, CmdError>;

/// The run in progress (if any).
#[derive(Default)]
pub struct Debugger {
    driver: Mutex<Option<Arc<Driver>>>,
}

impl Debugger {
    fn current(&self) -> Option<Arc<Driver>> {
        self.driver.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    fn replace(&self, d: Option<Arc<Driver>>) -> Option<Arc<Driver>> {
        std::mem::replace(&mut *self.driver.lock().unwrap_or_else(|p| p.into_inner()), d)
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum LlmMode {
    Scripted {
        #[serde(default)]
        script: Option<String>,
    },
    None,
    Replay {
        #[serde(default)]
        cassette: Option<String>,
        #[serde(default)]
        strict: Option<bool>,
    },
    Live {
        /// The model for agents and nodes that name none (this run only); absent = the
        /// configured default.
        #[serde(default)]
        model: Option<String>,
    },
}

#[derive(Debug, Deserialize)]
pub struct RunConfig {
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    input: Option<String>,
    #[serde(default)]
    state: Option<Value>,
    llm: LlmMode,
    #[serde(default)]
    answers: Vec<Value>,
    #[serde(default)]
    breakpoints: Vec<Breakpoint>,
    #[serde(default)]
    break_on_error: bool,
    #[serde(default)]
    start: Option<Control>,
    /// Record every LLM and tool exchange into this cassette (relative to the agent).
    #[serde(default)]
    record: Option<String>,
    /// A durable run: every step is written to the run store, so the run can be resumed after
    /// the app was closed (`runs_list`, `run_resume`).
    #[serde(default)]
    durable: bool,
}

#[derive(Debug, Serialize)]
pub struct RunInfo {
    run: String,
    trace: Option<String>,
    agent: String,
    dialect: &'static str,
    llm: String,
    /// Set for a durable run: the run store it writes to.
    #[serde(skip_serializing_if = "Option::is_none")]
    durable: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TraceFile {
    path: String,
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
fn runs_dir(app: &AppHandle) -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SWITCHYARD_RUNS_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(d));
    }
    app.path().app_data_dir().ok().map(|d| d.join("runs"))
}

fn safe_name(s: &str) -> String {
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
    let (path, text, selected) = crate::commands::with_session(&app, "starting a run", |s| {
        Ok((s.path().to_path_buf(), s.text().to_string(), s.agent().map(str::to_string)))
    })?;
    // One run at a time: the earlier one is stopped (its drop joins its thread).
    stop_current(&app).await;
    let doc = Arc::new(load_str(&path, &text));
    let dialect = match doc.dialect() {
        Some(Dialect::Sherma) => "sherma",
        Some(Dialect::Loki) => "loki",
        None => {
            return Err(CmdError::new(format!(
                "{} is neither a sherma agent (`manifest_version: 1`) nor a Loki graph (`version: \"1.0\"`); see the Problems panel",
                path.display()
            )));
        }
    };
    let agent = config.agent.clone().or(if dialect == "sherma" { selected } else { None });
    let req = RunRequest { agent: agent.clone(), input: config.input.clone(), state: config.state.clone(), ..RunRequest::default() };
    let base = doc.base_dir.clone();
    let choice = llm_choice(&config.llm, &base, &doc);
    let record = config.record.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(|r| resolve(&base, r));
    let llm = provider(&choice, &doc, record.as_deref())?;
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
    let db = config.durable.then(store::default_db_path);
    let db2 = db.clone();
    let d = blocking(move || {
        let driver = DriverOptions { trace: trace2, start: None, ..Default::default() };
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
    };
    app.state::<Debugger>().replace(Some(Arc::new(d)));
    Ok(info)
}

/// Stop the run in progress, if any; a durable one is left resumable in its store.
async fn stop_current(app: &AppHandle) {
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

#[derive(Debug, Serialize)]
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
        let driver = DriverOptions { trace, start: None, ..Default::default() };
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
        dialect: if rec.dialect == "loki" { "loki" } else { "sherma" },
        llm: llm_text,
        durable: Some(db.display().to_string()),
    };
    app.state::<Debugger>().replace(Some(Arc::new(driver)));
    Ok(info)
}

#[tauri::command]
pub async fn run_control(app: AppHandle, action: Control) -> Res<()> {
    driver(&app)?.control(action);
    Ok(())
}

#[tauri::command]
pub async fn run_breakpoints(app: AppHandle, breakpoints: Vec<Breakpoint>, break_on_error: bool) -> Res<()> {
    // Without a run the UI keeps them and sends them with the next start.
    let Some(d) = app.state::<Debugger>().current() else { return Ok(()) };
    blocking(move || d.set_breakpoints(breakpoints, break_on_error)).await
}

#[tauri::command]
pub async fn run_answer(app: AppHandle, id: String, value: Value) -> Res<()> {
    let d = driver(&app)?;
    blocking(move || d.answer(&id, value)).await
}

#[tauri::command]
pub async fn run_edit_state(app: AppHandle, key: String, value: Value) -> Res<()> {
    let d = driver(&app)?;
    blocking(move || d.edit_state(&key, value)).await
}

#[tauri::command]
pub async fn run_state_at(app: AppHandle, step: u64) -> Res<Value> {
    let d = driver(&app)?;
    blocking(move || d.state_at(step)).await
}

#[tauri::command]
pub async fn run_rewind(app: AppHandle, step: u64) -> Res<()> {
    let d = driver(&app)?;
    blocking(move || d.rewind(step)).await
}

#[tauri::command]
pub async fn open_trace(app: AppHandle, path: Option<String>) -> Res<Option<TraceFile>> {
    let path = match path {
        Some(p) => PathBuf::from(p),
        None => {
            let mut dialog = rfd::AsyncFileDialog::new()
                .set_title("Open a run trace")
                .add_filter("Run trace", &["jsonl"])
                .add_filter("All files", &["*"]);
            if let Some(dir) = runs_dir(&app).filter(|d| d.is_dir()) {
                dialog = dialog.set_directory(dir);
            }
            match dialog.pick_file().await {
                Some(f) => f.path().to_path_buf(),
                None => return Ok(None),
            }
        }
    };
    let p2 = path.clone();
    let events = blocking(move || read_trace(&p2)).await?;
    Ok(Some(TraceFile { path: path.display().to_string(), events }))
}

/// Stop the run when the app closes (its scripts must not outlive the window).
/// A durable run is left as it was in its store (paused, interrupted, or at its last step), to
/// be resumed from the Runs list.
pub fn shut_down(app: &AppHandle) {
    if let Some(d) = app.state::<Debugger>().replace(None) {
        d.keep_resumable();
        d.control(Control::Stop);
    }
}

/// The sink that sends a run's event batches to the window as `run-events`.
///
/// The batch goes as one JSON *string*: Tauri delivers an event by evaluating a script with the
/// payload pasted in, and a big batch pasted as an object literal makes the webview parse and run
/// it as code (a 100,000-step run streams 40 MB of events: seconds of main-thread time, frames
/// dropped for a second at a time). A string literal is only scanned, and the page's
/// `JSON.parse` builds the objects several times faster.
fn events_sink(app: &AppHandle) -> Sink {
    let app = app.clone();
    Arc::new(move |b: Batch| {
        let sent = serde_json::to_string(&b).map_err(|e| e.to_string()).and_then(|json| app.emit("run-events", json).map_err(|e| e.to_string()));
        if let Err(e) = sent {
            eprintln!("switchyard: could not send run events to the window: {e}");
        }
    })
}
