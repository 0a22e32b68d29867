//! The studio attached to a `switchyard serve` server (docs/app-contract.md §5.4): *Connect to
//! server…* (URL remembered in the app's config folder, token in the OS keyring), the server's
//! runs and assistants, and the remote driver: a run on the server shown in the debugger exactly
//! like a local one. Its debugger events come from `GET /switchyard/runs/{id}/events` (SSE, one
//! trace event per `data:` line, resumed with `Last-Event-ID` after a dropped connection) and go
//! to the window as the same `run-events` batches as `runtime::driver`'s, with a `StatusInfo`
//! built from the run's record (`GET /switchyard/runs/{id}`). While a remote run is the current
//! one, `run_control`, `run_answer`, `run_breakpoints` and `run_state_at` go to it
//! (`debug.rs`); what the server has no endpoint for (rewind, edit state, step into, restart)
//! is refused.
//!
//! The assistant's agent file is opened as a *remote document*: a session on its text at a
//! path under [`REMOTE_ROOT`] that is never written (save, edits and positions are refused,
//! `commands.rs`), not watched, not in the recent files.

use crate::commands::CmdError;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchyard::doc::Document;
use switchyard::run::driver::{Batch, Control, FailureInfo, Sink, StatusInfo};
use switchyard::run::events::{PauseReason, RunStatus};
use switchyard::run::session::{Breakpoint, Pending};
use switchyard::studio::{Session, View};
use tauri::{AppHandle, Manager};
use ts_rs::TS;

type Res<T> = Result<T, CmdError>;

/// Where remote documents live: a folder that does not exist (and that a user cannot create),
/// so that nothing of a remote document can reach the disk even by mistake.
pub const REMOTE_ROOT: &str = "/switchyard-remote";

/// The keyring entry of a server's token (beside the providers' keys, service `switchyard`).
fn keyring_account(url: &str) -> String {
    format!("server:{url}")
}

/// The connection, the remote document and the remote run of this window.
#[derive(Default)]
pub struct Remote {
    conn: Mutex<Option<Http>>,
    /// The open document is this server's assistant (its session's path is under REMOTE_ROOT).
    doc: Mutex<Option<RemoteDoc>>,
    run: Mutex<Option<Arc<RemoteRun>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Remote {
    pub fn current(&self) -> Option<Arc<RemoteRun>> {
        lock(&self.run).clone()
    }
    fn http(&self) -> Res<Http> {
        lock(&self.conn).clone().ok_or_else(|| CmdError::new("not connected to a server: Connect to server… first"))
    }
    /// Detach from the remote run (the run goes on on the server).
    pub fn detach(&self) {
        if let Some(r) = lock(&self.run).take() {
            r.detach();
        }
    }
}

/// The open document is a remote one: it is shown, never edited or saved.
pub fn refuse_edit(app: &AppHandle, what: &str) -> Res<()> {
    match lock(&app.state::<Remote>().doc).as_ref() {
        Some(d) => Err(CmdError::new(format!(
            "{} is the agent of assistant {} on {}, opened read-only: {what} is not possible here (edit the file on the server)",
            d.file_name, d.assistant, d.url
        ))),
        None => Ok(()),
    }
}

/// Whether the open document is a remote one.
pub fn is_remote_doc(app: &AppHandle) -> bool {
    lock(&app.state::<Remote>().doc).is_some()
}

/// A local document was opened: the remote one is closed.
pub fn forget_doc(app: &AppHandle) {
    *lock(&app.state::<Remote>().doc) = None;
}

// ------------------------------------------------------------------------------------------------
// HTTP

#[derive(Clone)]
struct Http {
    base: String,
    token: Option<String>,
    client: reqwest::Client,
}

impl Http {
    fn new(base: &str, token: Option<String>) -> Result<Http, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Http { base: base.to_string(), token: token.filter(|t| !t.is_empty()), client })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.client.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, String> {
        let mut r = self.request(method, path).timeout(Duration::from_secs(30));
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.map_err(|e| unreachable(&self.base, &e))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| format!("{}: {e}", self.base))?;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if status.is_success() {
            return Ok(v);
        }
        Err(http_error(&self.base, status.as_u16(), &v))
    }
    async fn get(&self, path: &str) -> Result<Value, String> {
        self.call(reqwest::Method::GET, path, None).await
    }
    async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
}

fn unreachable(base: &str, e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut why = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        why = s.to_string();
        src = s.source();
    }
    format!("cannot reach the server at {base}: {why} (is `switchyard serve` running there?)")
}

/// The message of a refused request: the server's `detail`, what a 401 means.
fn http_error(base: &str, status: u16, body: &Value) -> String {
    let detail = body["detail"].as_str().map(str::to_string).unwrap_or_else(|| match body {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    });
    match status {
        401 => format!("the server at {base} refused the token (401 {detail}): give a token made with `switchyard token create NAME` on the server"),
        403 => format!("the server at {base} refused (403 {detail})"),
        _ => format!("{status} {detail}"),
    }
}

/// `http://host:port` from what the user typed (`host:port` alone means http).
fn normalise_url(url: &str) -> Result<String, String> {
    let u = url.trim().trim_end_matches('/');
    if u.is_empty() {
        return Err("give the server's URL, such as http://127.0.0.1:8123".into());
    }
    let u = if u.contains("://") { u.to_string() } else { format!("http://{u}") };
    if !(u.starts_with("http://") || u.starts_with("https://")) {
        return Err(format!("the server's URL must start with http:// or https://, not `{url}`"));
    }
    let rest = u.split("://").nth(1).unwrap_or("");
    if rest.is_empty() || rest.contains(char::is_whitespace) {
        return Err(format!("`{url}` is not a URL"));
    }
    Ok(u)
}

// ------------------------------------------------------------------------------------------------
// The connection

/// What `remote_connect` and `remote_status` answer.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RemoteStatus {
    /// The server connected to, or the one remembered from last time (not connected yet).
    url: Option<String>,
    connected: bool,
    /// A token is used (from the keyring, or given this session).
    token: bool,
    /// Where the token went when it could not go to the keyring, and the like.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    note: Option<String>,
}

fn remembered_path(app: &AppHandle) -> Option<PathBuf> {
    app.path().app_config_dir().ok().map(|d| d.join("remote.json"))
}

fn remembered_url(app: &AppHandle) -> Option<String> {
    let text = std::fs::read_to_string(remembered_path(app)?).ok()?;
    serde_json::from_str::<Value>(&text).ok()?["url"].as_str().map(str::to_string)
}

fn remember_url(app: &AppHandle, url: &str) {
    let Some(p) = remembered_path(app) else { return };
    if let Some(d) = p.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    let text = serde_json::to_string_pretty(&json!({ "url": url })).unwrap_or_default();
    if let Err(e) = switchyard::studio::write_atomic(&p, text.as_bytes()) {
        eprintln!("switchyard: cannot remember the server's URL in {}: {e}", p.display());
    }
}

#[tauri::command]
pub async fn remote_status(app: AppHandle) -> Res<RemoteStatus> {
    let conn = lock(&app.state::<Remote>().conn).clone();
    Ok(match conn {
        Some(h) => RemoteStatus { url: Some(h.base.clone()), connected: true, token: h.token.is_some(), note: None },
        None => RemoteStatus { url: remembered_url(&app), connected: false, token: false, note: None },
    })
}

/// Connect to the server at `url`. A `token` given is checked, then kept in the OS keyring
/// (never in a file); without one the keyring's token for that URL is used, if any. The URL is
/// remembered. Errors say whether the server could not be reached or refused the token.
#[tauri::command]
pub async fn remote_connect(app: AppHandle, url: String, token: Option<String>) -> Res<RemoteStatus> {
    use switchyard::llm::keyring::{KeyStore, os_keyring};
    let url = normalise_url(&url)?;
    let given = token.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    let account = keyring_account(&url);
    let stored = match &given {
        Some(_) => None,
        None => {
            let a = account.clone();
            tauri::async_runtime::spawn_blocking(move || os_keyring().get(&a).ok().flatten()).await.ok().flatten()
        }
    };
    let http = Http::new(&url, given.clone().or(stored))?;
    http.get("/switchyard/runs").await?;
    let mut note = None;
    if let Some(t) = given {
        let a = account.clone();
        let saved = tauri::async_runtime::spawn_blocking(move || os_keyring().set(&a, &t)).await.map_err(|e| e.to_string()).and_then(|r| r);
        note = Some(match saved {
            Ok(()) => "The token was saved in the OS keyring.".to_string(),
            Err(why) => format!("The OS keyring is not available ({why}): the token is kept for this session only, in memory."),
        });
    }
    remember_url(&app, &url);
    let status = RemoteStatus { url: Some(url), connected: true, token: http.token.is_some(), note };
    *lock(&app.state::<Remote>().conn) = Some(http);
    Ok(status)
}

/// Forget the connection (`forget_token`: and the token in the keyring).
#[tauri::command]
pub async fn remote_disconnect(app: AppHandle, forget_token: Option<bool>) -> Res<RemoteStatus> {
    use switchyard::llm::keyring::{KeyStore, os_keyring};
    let old = lock(&app.state::<Remote>().conn).take();
    if let (Some(h), Some(true)) = (&old, forget_token) {
        let a = keyring_account(&h.base);
        let _ = tauri::async_runtime::spawn_blocking(move || os_keyring().delete(&a)).await;
    }
    remote_status(app).await
}

/// A run on the server as the Runs list shows it (`GET /switchyard/runs`).
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct RemoteRunInfo {
    run_id: String,
    assistant: String,
    assistant_id: String,
    /// `pending | running | ready | paused | interrupted | completed | failed | stopped`.
    status: String,
    #[serde(default)]
    step: Option<u64>,
    /// The question it waits for.
    #[serde(default)]
    question: Option<Pending>,
    #[serde(default)]
    waiting_since: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    active: bool,
}

/// An assistant of the server (`POST /assistants/search`).
#[derive(Debug, Clone, Serialize, TS)]
pub struct RemoteAssistant {
    assistant_id: String,
    /// Its name.
    graph_id: String,
    #[ts(type = r#""sherma" | "loki" | "lllm" | null"#)]
    dialect: Option<String>,
}

#[tauri::command]
pub async fn remote_runs(app: AppHandle) -> Res<Vec<RemoteRunInfo>> {
    let http = app.state::<Remote>().http()?;
    let v = http.get("/switchyard/runs").await?;
    serde_json::from_value(v).map_err(|e| CmdError::new(format!("unexpected answer from {}: {e}", http.base)))
}

#[tauri::command]
pub async fn remote_assistants(app: AppHandle) -> Res<Vec<RemoteAssistant>> {
    let http = app.state::<Remote>().http()?;
    let v = http.post("/assistants/search", json!({"limit": 1000})).await?;
    let list = v.as_array().cloned().unwrap_or_default();
    Ok(list
        .iter()
        .map(|a| RemoteAssistant {
            assistant_id: a["assistant_id"].as_str().unwrap_or_default().to_string(),
            graph_id: a["graph_id"].as_str().unwrap_or_default().to_string(),
            dialect: a["metadata"]["dialect"].as_str().map(str::to_string),
        })
        .collect())
}

// ------------------------------------------------------------------------------------------------
// Remote documents

#[derive(Clone, Debug)]
struct RemoteDoc {
    url: String,
    assistant: String,
    file_name: String,
}

/// What opening a remote assistant or run answers: the view of its agent file (read-only) and
/// where it is.
#[derive(Debug, Serialize, TS)]
pub struct RemoteOpened {
    view: View,
    url: String,
    assistant_id: String,
    /// The assistant's name.
    assistant: String,
    /// Set when a run was opened (or started): what `run_start` answers for a local one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    run: Option<crate::debug::RunInfo>,
}

/// Where a remote document's session says it is (never written; see REMOTE_ROOT).
fn remote_path(url: &str, assistant: &str, file_name: &str) -> PathBuf {
    let host = url.split("://").nth(1).unwrap_or(url);
    let safe = |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.:".contains(c) { c } else { '_' }).collect::<String>();
    Path::new(REMOTE_ROOT).join(safe(host)).join(safe(assistant)).join(safe(file_name))
}

/// Fetch the assistant's agent file and make it the open document (read-only).
async fn open_assistant(app: &AppHandle, http: &Http, assistant_id: &str) -> Res<(RemoteOpened, Arc<Document>)> {
    let src = http.get(&format!("/switchyard/assistants/{assistant_id}/source")).await?;
    let text = src["text"].as_str().ok_or_else(|| CmdError::new(format!("{} sent no agent text for {assistant_id}", http.base)))?.to_string();
    let graph = src["graph_id"].as_str().unwrap_or(assistant_id).to_string();
    let file_name = src["file_name"].as_str().filter(|s| !s.is_empty()).unwrap_or("agent.yaml").to_string();
    let path = remote_path(&http.base, &graph, &file_name);
    let mut session = Session::from_text(&path, text);
    if let Some(a) = src["agent"].as_str().filter(|a| !a.is_empty())
        && switchyard::graph::selectable_agents(&session.document()).iter().any(|n| n == a)
    {
        session.select_agent(a).map_err(CmdError::new)?;
    }
    let doc = session.document();
    let view = crate::commands::trusted_view(&session);
    {
        let state = app.state::<crate::AppState>();
        crate::unwatch(app);
        *lock(&app.state::<Remote>().doc) = Some(RemoteDoc { url: http.base.clone(), assistant: graph.clone(), file_name });
        *state.lock_session() = Some(session);
    }
    crate::refresh_title(app);
    let assistant_id = src["assistant_id"].as_str().unwrap_or(assistant_id).to_string();
    Ok((RemoteOpened { view, url: http.base.clone(), assistant_id, assistant: graph, run: None }, doc))
}

/// Open a server's assistant: its agent file becomes the open document, read-only (no file
/// is written), to set breakpoints on and start runs of on the server.
#[tauri::command]
pub async fn remote_open_assistant(app: AppHandle, assistant_id: String) -> Res<RemoteOpened> {
    let http = app.state::<Remote>().http()?;
    Ok(open_assistant(&app, &http, &assistant_id).await?.0)
}

/// Open a run of the server in the debugger: its assistant's agent file as the open document,
/// its events and status from the server, live (any run in progress here is stopped first,
/// another remote one only detached).
#[tauri::command]
pub async fn remote_open_run(app: AppHandle, run_id: String) -> Res<RemoteOpened> {
    let http = app.state::<Remote>().http()?;
    let rec = http.get(&format!("/switchyard/runs/{run_id}")).await?;
    attach(&app, http, rec).await
}

/// `remote_start`'s configuration: what a local run's configuration has that a server run takes.
#[derive(Debug, Deserialize, TS)]
pub struct RemoteStart {
    assistant_id: String,
    #[serde(default)]
    #[ts(optional = nullable)]
    input: Option<String>,
    /// Initial state as a JSON object.
    #[serde(default)]
    #[ts(optional = nullable)]
    state: Option<Value>,
    #[serde(default)]
    breakpoints: Vec<Breakpoint>,
    /// `continue` (default) runs to the first stop; `step` runs one step and pauses; `pause`
    /// starts held before the first step.
    #[serde(default)]
    #[ts(optional = nullable)]
    start: Option<Control>,
}

/// The body of `POST /runs` for a start.
fn start_body(s: &RemoteStart) -> Value {
    let mut input = match &s.state {
        Some(Value::Object(m)) => m.clone(),
        _ => serde_json::Map::new(),
    };
    if let Some(t) = s.input.as_deref().filter(|t| !t.is_empty()) {
        input.insert("input".into(), json!(t));
    }
    let held = matches!(s.start, Some(Control::Step | Control::Pause | Control::StepInto));
    json!({
        "assistant_id": s.assistant_id,
        "input": Value::Object(input),
        "breakpoints": s.breakpoints,
        "paused": held,
    })
}

/// Start a run of an assistant on the server (with the canvas's breakpoints) and open it.
#[tauri::command]
pub async fn remote_start(app: AppHandle, config: RemoteStart) -> Res<RemoteOpened> {
    let http = app.state::<Remote>().http()?;
    let created = http.post("/runs", start_body(&config)).await?;
    let rid = created["run_id"].as_str().ok_or_else(|| CmdError::new(format!("{} answered no run id: {created}", http.base)))?.to_string();
    if config.start == Some(Control::Step) {
        http.post(&format!("/switchyard/runs/{rid}/step"), json!({})).await?;
    }
    let rec = http.get(&format!("/switchyard/runs/{rid}")).await?;
    attach(&app, http, rec).await
}

async fn attach(app: &AppHandle, http: Http, rec: Value) -> Res<RemoteOpened> {
    let rid = rec["run_id"].as_str().unwrap_or_default().to_string();
    let aid = rec["assistant_id"].as_str().unwrap_or_default().to_string();
    crate::debug::stop_current(app).await;
    let (mut opened, doc) = open_assistant(app, &http, &aid).await?;
    let trace = crate::debug::runs_dir(app)
        .filter(|d| std::fs::create_dir_all(d).is_ok())
        .map(|d| d.join(format!("remote-{}-{}.jsonl", crate::debug::safe_name(&opened.assistant), crate::debug::safe_name(&rid))));
    if let Some(t) = &trace {
        crate::debug::remember(app, t.clone(), doc.clone());
    }
    let run = RemoteRun::start(http.clone(), rid.clone(), doc.clone(), trace.clone(), crate::debug::events_sink(app));
    *lock(&app.state::<Remote>().run) = Some(run);
    opened.run = Some(crate::debug::RunInfo::remote(rid, trace, opened.assistant.clone(), doc.dialect(), &http.base));
    Ok(opened)
}

// ------------------------------------------------------------------------------------------------
// The remote driver

/// A run on the server shown in the debugger: the SSE reader on the async runtime, the events
/// seen so far (for the states at a step), the last status sent.
pub struct RemoteRun {
    run: String,
    http: Http,
    doc: Arc<Document>,
    events: Arc<Mutex<Vec<Value>>>,
    detached: Arc<AtomicBool>,
    task: Mutex<Option<tauri::async_runtime::JoinHandle<()>>>,
}

impl RemoteRun {
    fn start(http: Http, run: String, doc: Arc<Document>, trace: Option<PathBuf>, sink: Sink) -> Arc<RemoteRun> {
        let r = Arc::new(RemoteRun {
            run,
            http,
            doc,
            events: Arc::default(),
            detached: Arc::default(),
            task: Mutex::new(None),
        });
        let reader = Reader {
            http: r.http.clone(),
            run: r.run.clone(),
            events: r.events.clone(),
            detached: r.detached.clone(),
            sink,
            trace: trace.and_then(|p| open_trace(&p)),
            last_id: 0,
            track: Track::default(),
            last_status: None,
        };
        *lock(&r.task) = Some(tauri::async_runtime::spawn(reader.run()));
        r
    }

    /// Stop showing it: the reader ends; the run goes on on the server.
    pub fn detach(&self) {
        self.detached.store(true, Ordering::Relaxed);
        if let Some(t) = lock(&self.task).take() {
            t.abort();
        }
    }

    pub async fn control(&self, c: Control) -> Result<(), String> {
        let what = match c {
            Control::Continue | Control::StepOut => "continue",
            Control::Step => "step",
            Control::Pause => "pause",
            Control::Stop => "cancel",
            Control::Restart => return Err(not_on_server("restarting")),
            Control::StepInto => return Err(not_on_server("stepping into a nested run")),
        };
        self.http.post(&format!("/switchyard/runs/{}/{what}", self.run), json!({})).await.map(|_| ())
    }

    pub async fn answer(&self, id: &str, value: Value) -> Result<(), String> {
        let body = json!({ "answer": value, "interrupt_id": id });
        self.http.post(&format!("/switchyard/runs/{}/answer", self.run), body).await.map(|_| ())
    }

    pub async fn set_breakpoints(&self, breakpoints: Vec<Breakpoint>) -> Result<(), String> {
        let body = json!({ "breakpoints": breakpoints });
        self.http.call(reqwest::Method::PUT, &format!("/switchyard/runs/{}/breakpoints", self.run), Some(body)).await.map(|_| ())
    }

    /// The state after `step` steps, rebuilt from the events received with the agent's reducers.
    pub fn state_at(&self, step: u64) -> Result<Value, String> {
        let events = lock(&self.events).clone();
        let trace = switchyard::run::launch::trace::Trace::from_values(events);
        Ok(trace.state_at(None, step, Some(&self.doc)).state)
    }
}

pub fn not_on_server(what: &str) -> String {
    format!("{what} is not available for a run on a server: the server has no endpoint for it")
}

fn open_trace(p: &Path) -> Option<std::io::BufWriter<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(p).ok().map(std::io::BufWriter::new)
}

/// What the events say that the run's record does not: why it paused, what is due; and how
/// far the events have come (a status is not shown before the events it counts).
#[derive(Default, Debug)]
struct Track {
    reason: Option<PauseReason>,
    due: Vec<String>,
    /// The run's own `run_finished` arrived.
    finished: bool,
    /// Questions whose `interrupt` event arrived.
    asked: Vec<String>,
    /// A `paused` event arrived since the last step began.
    paused: bool,
}

impl Track {
    fn see(&mut self, run: &str, e: &Value) {
        if e["run"].as_str() != Some(run) {
            return;
        }
        match e["event"].as_str() {
            Some("paused") => {
                self.reason = serde_json::from_value(e["reason"].clone()).ok();
                self.paused = true;
            }
            Some("node_enter") => {
                self.due.clear();
                self.reason = None;
                self.paused = false;
            }
            Some("run_finished") => self.finished = true,
            Some("interrupt") => {
                if let Some(id) = e["id"].as_str() {
                    self.asked.push(id.to_string());
                }
            }
            Some("route") => {
                if let Some(to) = e["to"].as_str()
                    && !self.due.iter().any(|d| d == to)
                    && !matches!(to, "__end__" | "END" | "end")
                {
                    self.due.push(to.to_string());
                }
            }
            _ => {}
        }
    }
}

/// Whether the events that `s` counts have arrived: a finished run's `run_finished`, a
/// question's `interrupt`, a pause's `paused` (a record read between a step's save and its
/// events reaching this stream would otherwise show the end before the steps leading to it).
fn caught_up(s: &StatusInfo, track: &Track) -> bool {
    match s.state.as_str() {
        "finished" => track.finished,
        "interrupted" => s.pending.as_ref().is_some_and(|p| track.asked.iter().any(|a| *a == p.id)),
        // Held before its first step: no event says so.
        "paused" => track.paused || s.step == 0,
        _ => true,
    }
}

/// The debugger's status of a run from its record (`GET /switchyard/runs/{id}`).
fn status_of(rec: &Value, track: &Track) -> StatusInfo {
    let mut info = StatusInfo {
        state: String::new(),
        step: rec["step"].as_u64().unwrap_or(0),
        due: Vec::new(),
        reason: None,
        pending: None,
        status: None,
        output: Value::Null,
        error: None,
    };
    let pending: Option<Pending> = serde_json::from_value(rec["question"].clone()).ok();
    match rec["status"].as_str().unwrap_or("pending") {
        "ready" => {
            info.state = "ready".into();
            info.due = track.due.clone();
        }
        "paused" => {
            info.state = "paused".into();
            info.reason = Some(track.reason.unwrap_or(PauseReason::Requested));
            info.due = track.due.clone();
        }
        "interrupted" if pending.is_some() => {
            info.state = "interrupted".into();
            info.pending = pending;
        }
        s @ ("completed" | "failed" | "stopped") => {
            info.state = "finished".into();
            info.status = Some(match s {
                "completed" => RunStatus::Completed,
                "failed" => RunStatus::Failed,
                _ => RunStatus::Stopped,
            });
            info.output = rec["output"].clone();
            if s == "failed" {
                info.error = Some(FailureInfo {
                    node: None,
                    message: rec["error"].as_str().unwrap_or("the run failed").to_string(),
                });
            }
        }
        _ => info.state = "running".into(),
    }
    info
}

/// One frame of a `text/event-stream`.
#[derive(Debug, Default, PartialEq)]
struct Frame {
    id: Option<String>,
    event: Option<String>,
    data: String,
}

/// An SSE parser fed with the body's chunks as they come (a frame may span chunks).
#[derive(Default)]
struct SseParser {
    buf: Vec<u8>,
    cur: Frame,
    has_data: bool,
}

impl SseParser {
    fn push(&mut self, chunk: &[u8]) -> Vec<Frame> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            if line.is_empty() {
                let f = std::mem::take(&mut self.cur);
                if self.has_data || f.event.is_some() {
                    out.push(f);
                }
                self.has_data = false;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_str(), ""),
            };
            match field {
                "id" => self.cur.id = Some(value.to_string()),
                "event" => self.cur.event = Some(value.to_string()),
                "data" => {
                    if self.has_data {
                        self.cur.data.push('\n');
                    }
                    self.cur.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        out
    }
}

struct Reader {
    http: Http,
    run: String,
    events: Arc<Mutex<Vec<Value>>>,
    detached: Arc<AtomicBool>,
    sink: Sink,
    trace: Option<std::io::BufWriter<std::fs::File>>,
    /// The number of the last event received (`Last-Event-ID` of a reconnection).
    last_id: u64,
    track: Track,
    last_status: Option<StatusInfo>,
}

enum Read {
    /// The server said the run ended.
    Ended,
    /// The connection dropped (or could not be made): reconnect after a pause.
    Dropped(String),
    /// The server does not know the run (any more): give up.
    Gone(String),
}

impl Reader {
    async fn run(mut self) {
        let mut backoff = Duration::from_millis(200);
        loop {
            if self.detached.load(Ordering::Relaxed) {
                return;
            }
            match self.read_stream().await {
                Read::Ended => {
                    self.publish(Vec::new(), true).await;
                    return;
                }
                Read::Gone(why) => {
                    eprintln!("switchyard: remote run {}: {why}", self.run);
                    self.publish(Vec::new(), true).await;
                    return;
                }
                Read::Dropped(why) => {
                    eprintln!("switchyard: the event stream of remote run {} dropped ({why}); reconnecting after event {}", self.run, self.last_id);
                    // The status goes on (a dropped stream is no reason to hide a paused run).
                    self.publish(Vec::new(), false).await;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    fn events_request(&self) -> reqwest::RequestBuilder {
        let mut r = self.http.request(reqwest::Method::GET, &format!("/switchyard/runs/{}/events", self.run));
        if self.last_id > 0 {
            r = r.header("Last-Event-ID", self.last_id.to_string());
        }
        r.header("Accept", "text/event-stream")
    }

    async fn read_stream(&mut self) -> Read {
        let resp = match self.events_request().send().await {
            Ok(r) => r,
            Err(e) => return Read::Dropped(unreachable(&self.http.base, &e)),
        };
        let status = resp.status().as_u16();
        if status == 404 {
            return Read::Gone(format!("the server has no run {}", self.run));
        }
        if !resp.status().is_success() {
            let body = resp.text().await.unwrap_or_default();
            let v = serde_json::from_str(&body).unwrap_or(Value::String(body));
            return Read::Dropped(http_error(&self.http.base, status, &v));
        }
        let mut resp = resp;
        let mut parser = SseParser::default();
        let mut tick = tokio::time::interval(Duration::from_millis(400));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is now: skipped, so that no status goes out ahead of the events the
        // stream is about to send (the window folds a status before the steps it counts).
        tick.tick().await;
        loop {
            tokio::select! {
                chunk = resp.chunk() => match chunk {
                    Ok(Some(bytes)) => {
                        let mut batch = Vec::new();
                        let mut ended = false;
                        for f in parser.push(&bytes) {
                            match f.event.as_deref() {
                                Some("end") => ended = true,
                                _ => {
                                    if let Some(v) = self.take(f) {
                                        batch.push(v);
                                    }
                                }
                            }
                        }
                        if !batch.is_empty() {
                            self.publish(batch, false).await;
                        }
                        if ended {
                            return Read::Ended;
                        }
                    }
                    Ok(None) => return Read::Dropped("the server closed the stream".into()),
                    Err(e) => return Read::Dropped(e.to_string()),
                },
                _ = tick.tick() => {
                    if self.detached.load(Ordering::Relaxed) {
                        return Read::Ended;
                    }
                    self.publish(Vec::new(), false).await;
                }
            }
        }
    }

    /// An event frame: numbered (a duplicate after a reconnection is dropped), one trace event.
    fn take(&mut self, f: Frame) -> Option<Value> {
        if let Some(n) = f.id.as_deref().and_then(|s| s.trim().parse::<u64>().ok()) {
            if n <= self.last_id {
                return None;
            }
            self.last_id = n;
        }
        let v: Value = serde_json::from_str(&f.data).ok()?;
        if let Some(t) = &mut self.trace {
            use std::io::Write;
            let _ = writeln!(t, "{}", f.data);
        }
        self.track.see(&self.run, &v);
        lock(&self.events).push(v.clone());
        Some(v)
    }

    /// Send `events` with the status when it changed (asked from the server now). `last`: the
    /// final batch (the reader ends).
    async fn publish(&mut self, events: Vec<Value>, last: bool) {
        if let Some(t) = &mut self.trace {
            use std::io::Write;
            let _ = t.flush();
        }
        let status = match self.http.get(&format!("/switchyard/runs/{}", self.run)).await {
            Ok(rec) => Some(status_of(&rec, &self.track)),
            Err(e) => {
                if last {
                    eprintln!("switchyard: remote run {}: {e}", self.run);
                }
                None
            }
        };
        // Held back until the events it counts are here (the last batch is complete anyway).
        let status = status.filter(|s| last || caught_up(s, &self.track));
        let changed = status.as_ref().filter(|s| self.last_status.as_ref() != Some(*s)).cloned();
        if events.is_empty() && changed.is_none() {
            return;
        }
        if self.detached.load(Ordering::Relaxed) {
            return;
        }
        if let Some(s) = &changed {
            self.last_status = Some(s.clone());
        }
        (self.sink)(Batch { run: self.run.clone(), events, status: changed });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_frames_are_parsed_across_chunks() {
        let mut p = SseParser::default();
        assert!(p.push(b": keep-alive\n\nid: 1\nevent: event\ndata: {\"event\":\"run_").is_empty());
        let f = p.push(b"started\"}\r\n\r\nid: 2\ndata: a\ndata: b\n\nevent: end\ndata: {}\n\n");
        assert_eq!(
            f,
            vec![
                Frame { id: Some("1".into()), event: Some("event".into()), data: r#"{"event":"run_started"}"#.into() },
                Frame { id: Some("2".into()), event: None, data: "a\nb".into() },
                Frame { id: None, event: Some("end".into()), data: "{}".into() },
            ]
        );
    }

    #[test]
    fn records_become_the_debuggers_status() {
        let mut t = Track::default();
        let run = "r1";
        t.see(run, &json!({"event": "node_enter", "run": run, "node": "plan"}));
        t.see(run, &json!({"event": "route", "run": run, "from": "plan", "to": "lint"}));
        t.see(run, &json!({"event": "route", "run": run, "from": "plan", "to": "tests"}));
        t.see(run, &json!({"event": "route", "run": "r1/x", "from": "a", "to": "b"}));
        t.see(run, &json!({"event": "paused", "run": run, "reason": "breakpoint"}));
        let s = status_of(&json!({"status": "paused", "step": 1}), &t);
        assert_eq!((s.state.as_str(), s.step, s.due.clone(), s.reason), ("paused", 1, vec!["lint".to_string(), "tests".to_string()], Some(PauseReason::Breakpoint)));
        let q = json!({"id": "i1", "node": "approve", "kind": "approval", "prompt": "Ship?", "options": ["yes", "no"]});
        let s = status_of(&json!({"status": "interrupted", "step": 4, "question": q}), &t);
        assert_eq!(s.state, "interrupted");
        assert_eq!(s.pending.as_ref().map(|p| (p.id.as_str(), p.options.len())), Some(("i1", 2)));
        // Interrupted without a question: the answer is being taken.
        assert_eq!(status_of(&json!({"status": "interrupted", "step": 4}), &t).state, "running");
        let s = status_of(&json!({"status": "completed", "step": 6, "output": {"ok": true}}), &t);
        assert_eq!((s.state.as_str(), s.status, s.output.clone()), ("finished", Some(RunStatus::Completed), json!({"ok": true})));
        let s = status_of(&json!({"status": "failed", "step": 2, "error": "boom"}), &t);
        assert_eq!((s.status, s.error.map(|e| e.message)), (Some(RunStatus::Failed), Some("boom".to_string())));
        assert_eq!(status_of(&json!({"status": "running", "active": true}), &t).state, "running");
        assert_eq!(status_of(&json!({"status": "stopped"}), &t).status, Some(RunStatus::Stopped));
    }

    #[test]
    fn a_status_waits_for_the_events_it_counts() {
        let mut t = Track::default();
        let run = "r1";
        let done = status_of(&json!({"status": "completed", "step": 5}), &t);
        assert!(!caught_up(&done, &t), "the end is not shown before run_finished");
        let q = json!({"id": "approve#1", "node": "approve", "kind": "approval", "prompt": "Ship?"});
        let asking = status_of(&json!({"status": "interrupted", "step": 3, "question": q}), &t);
        assert!(!caught_up(&asking, &t));
        t.see(run, &json!({"event": "interrupt", "run": run, "id": "approve#1"}));
        assert!(caught_up(&asking, &t));
        t.see(run, &json!({"event": "node_enter", "run": run, "node": "summarise"}));
        let paused = status_of(&json!({"status": "paused", "step": 2}), &t);
        assert!(!caught_up(&paused, &t), "a pause after step 2 waits for its event");
        assert!(caught_up(&status_of(&json!({"status": "paused", "step": 0}), &t), &t), "held before the first step");
        t.see(run, &json!({"event": "paused", "run": run, "reason": "breakpoint"}));
        assert!(caught_up(&status_of(&json!({"status": "paused", "step": 2}), &t), &t));
        t.see(run, &json!({"event": "run_finished", "run": "r1/child"}));
        assert!(!caught_up(&done, &t), "a nested run's end is not the run's");
        t.see(run, &json!({"event": "run_finished", "run": run}));
        assert!(caught_up(&done, &t));
        assert!(caught_up(&status_of(&json!({"status": "running", "active": true}), &t), &t));
    }

    #[test]
    fn urls_and_start_bodies() {
        assert_eq!(normalise_url(" 127.0.0.1:8123/ ").unwrap(), "http://127.0.0.1:8123");
        assert_eq!(normalise_url("https://x.example").unwrap(), "https://x.example");
        assert!(normalise_url("ftp://x").is_err() && normalise_url("").is_err());
        let s = RemoteStart {
            assistant_id: "release-gate".into(),
            input: Some("ship 1.2".into()),
            state: Some(json!({"n": 1})),
            breakpoints: vec![],
            start: Some(Control::Step),
        };
        assert_eq!(start_body(&s), json!({"assistant_id": "release-gate", "input": {"n": 1, "input": "ship 1.2"}, "breakpoints": [], "paused": true}));
        assert_eq!(
            remote_path("http://127.0.0.1:9/", "release gate", "graph.yaml"),
            PathBuf::from("/switchyard-remote/127.0.0.1:9_/release_gate/graph.yaml")
        );
        assert!(http_error("http://h", 401, &json!({"detail": "bad token"})).contains("refused the token"));
    }

    /// A stream that drops is taken up again after the last event received (`Last-Event-ID`),
    /// an event sent again is not shown twice, and the reader ends with the run's final status.
    #[test]
    fn a_dropped_stream_resumes_after_the_last_event() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let seen: Arc<Mutex<Vec<String>>> = Arc::default();
            let seen2 = seen.clone();
            tokio::spawn(async move {
                let mut streams = 0;
                loop {
                    let (mut sock, _) = l.accept().await.unwrap();
                    let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        let k = sock.read(&mut buf).await.unwrap();
                        if k == 0 {
                            break;
                        }
                        got.extend_from_slice(&buf[..k]);
                    }
                    let head = String::from_utf8_lossy(&got).to_ascii_lowercase();
                    let ev = |id: u64, e: &str| format!("id: {id}\nevent: event\ndata: {{\"event\":\"{e}\",\"run\":\"r1\",\"ts_ms\":{id}}}\n\n");
                    let (ctype, body) = if head.starts_with("get /switchyard/runs/r1/events") {
                        let last = head.lines().find_map(|l| l.strip_prefix("last-event-id:").map(|v| v.trim().to_string())).unwrap_or_default();
                        seen2.lock().unwrap().push(last);
                        streams += 1;
                        let body = if streams == 1 {
                            format!(": hello\n\n{}{}", ev(1, "run_started"), ev(2, "node_enter"))
                        } else {
                            format!("{}{}event: end\ndata: {{}}\n\n", ev(2, "node_enter"), ev(3, "run_finished"))
                        };
                        ("text/event-stream", body)
                    } else {
                        let status = if streams >= 2 { "completed" } else { "running" };
                        ("application/json", json!({"run_id": "r1", "status": status, "step": 1, "output": "done"}).to_string())
                    };
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\nconnection: close\r\n\r\n");
                    let _ = sock.write_all(head.as_bytes()).await;
                    let _ = sock.write_all(body.as_bytes()).await;
                    let _ = sock.shutdown().await;
                }
            });
            let batches: Arc<Mutex<Vec<Batch>>> = Arc::default();
            let b2 = batches.clone();
            let events: Arc<Mutex<Vec<Value>>> = Arc::default();
            let reader = Reader {
                http: Http::new(&format!("http://{addr}"), None).unwrap(),
                run: "r1".into(),
                events: events.clone(),
                detached: Arc::default(),
                sink: Arc::new(move |b| b2.lock().unwrap().push(b)),
                trace: None,
                last_id: 0,
                track: Track::default(),
                last_status: None,
            };
            tokio::time::timeout(Duration::from_secs(30), reader.run()).await.expect("the reader ends when the run ends");
            assert_eq!(*seen.lock().unwrap(), vec!["".to_string(), "2".to_string()], "the second request resumes after event 2");
            let kinds: Vec<String> = events.lock().unwrap().iter().map(|e| e["event"].as_str().unwrap().to_string()).collect();
            assert_eq!(kinds, ["run_started", "node_enter", "run_finished"]);
            let b = batches.lock().unwrap();
            let sent: Vec<&Value> = b.iter().flat_map(|b| b.events.iter()).collect();
            assert_eq!(sent.len(), 3, "every event is sent once");
            let last = b.iter().rev().find_map(|b| b.status.clone()).unwrap();
            assert_eq!((last.state.as_str(), last.status), ("finished", Some(RunStatus::Completed)));
        });
    }
}
