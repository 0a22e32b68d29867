//! The HTTP API: the LangGraph Platform API subset that LangGraph's SDKs use (assistants,
//! threads, runs, streaming over SSE, interrupts resumed with `command: {resume: ...}`), and
//! Switchyard's own endpoints under `/switchyard/` for what that protocol has no place for (the
//! inbox's list of waiting runs, answers with their audit log, a run's debugger event stream
//! resumable with `Last-Event-ID`). `openapi.json` (served at `/openapi.json`) documents every
//! route; a test keeps the two in step.
//!
//! How our runs map onto LangGraph's words:
//!
//! - an assistant is an agent (see `assistants`); a thread is a sequence of runs; a new run on
//!   a thread whose last run completed starts from that run's final state (so a chat goes on);
//! - a thread's checkpoints are the states after each step of its runs; `checkpoint_id` is
//!   `<run_id>:<step>`;
//! - a run waiting for a person is `interrupted`, its question in `tasks[].interrupts` and in
//!   the stream as `__interrupt__`; `command: {resume: value}` answers it and the same run goes
//!   on (LangGraph would number the continuation as a new run: here the run id stays, so
//!   `join` and the debugger stream follow one run from start to end);
//! - run statuses: `running` (driven now or about to be), `interrupted` (waiting for an answer,
//!   or cancelled: `cancel_reason` says so), `success`, `error`.

use crate::assistants::{Assistant, Assistants};
use crate::engine::{ApiError, Drive, Engine, Notice, RunSummary, StartSpec};
use runtime::session::Breakpoint;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::Stream;
use launch::durable::RunRecord;
use runtime::events::EventBody;
use runtime::session::Pending;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc};

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub engine: Arc<dyn Engine>,
    pub assistants: Arc<Assistants>,
}

impl axum::extract::FromRef<AppState> for Arc<dyn Engine> {
    fn from_ref(st: &AppState) -> Arc<dyn Engine> {
        st.engine.clone()
    }
}

/// Who made a request: a token's name, or `local` on a server without tokens.
#[derive(Clone, Debug)]
pub struct Who(pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(json!({"detail": self.message}))).into_response()
    }
}

type ApiResult<T> = Result<T, ApiError>;

/// Run blocking engine work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> ApiResult<T> + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| ApiError::internal(format!("the request's worker failed: {e}")))?
}

/// The router of the whole API.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/ok", get(|| async { Json(json!({"ok": true})) }))
        .route("/info", get(info))
        .route("/openapi.json", get(openapi))
        .route("/assistants/search", post(assistants_search))
        .route("/assistants/{id}", get(assistant_get))
        .route("/assistants/{id}/graph", get(assistant_graph))
        .route("/assistants/{id}/schemas", get(assistant_schemas))
        .route("/threads", post(thread_create))
        .route("/threads/search", post(threads_search))
        .route("/threads/{tid}", get(thread_get).delete(thread_delete))
        .route("/threads/{tid}/state", get(thread_state))
        .route("/threads/{tid}/history", get(thread_history_get).post(thread_history_post))
        .route("/threads/{tid}/runs", post(thread_run_create).get(thread_runs_list))
        .route("/threads/{tid}/runs/wait", post(thread_run_wait))
        .route("/threads/{tid}/runs/stream", post(thread_run_stream))
        .route("/threads/{tid}/runs/{rid}", get(thread_run_get))
        .route("/threads/{tid}/runs/{rid}/cancel", post(thread_run_cancel))
        .route("/threads/{tid}/runs/{rid}/join", get(thread_run_join))
        .route("/threads/{tid}/runs/{rid}/stream", get(thread_run_join_stream))
        .route("/runs", post(stateless_create))
        .route("/runs/wait", post(stateless_wait))
        .route("/runs/stream", post(stateless_stream))
        .route("/switchyard/runs", get(sy_runs))
        .route("/switchyard/runs/{rid}", get(sy_run))
        .route("/switchyard/runs/{rid}/answer", post(sy_answer))
        .route("/switchyard/runs/{rid}/cancel", post(sy_cancel))
        .route("/switchyard/runs/{rid}/pause", post(sy_pause))
        .route("/switchyard/runs/{rid}/step", post(sy_step))
        .route("/switchyard/runs/{rid}/continue", post(sy_continue))
        .route("/switchyard/runs/{rid}/breakpoints", get(sy_breakpoints_get).put(sy_breakpoints_put))
        .route("/switchyard/runs/{rid}/events", get(sy_events))
        .route("/switchyard/answers", get(sy_answers))
        .route("/switchyard/assistants/{id}/source", get(sy_assistant_source))
        .route("/switchyard/inbox/events", get(crate::inbox::events))
        .route("/inbox", get(crate::inbox::redirect))
        .route("/inbox/", get(crate::inbox::index))
        .route("/inbox/{*path}", get(crate::inbox::asset))
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth))
        .with_state(state)
}

/// Every request needs a live token once the server has one (`Authorization: Bearer`, LangGraph
/// SDKs' `x-api-key`, or `?token=` for browsers' event streams); `/ok` and the inbox page's
/// own files never do.
async fn auth(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    if req.uri().path() == "/ok" || crate::inbox::is_page(req.uri().path()) {
        return next.run(req).await;
    }
    let token = bearer(req.headers()).or_else(|| {
        req.uri().query().and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=").map(str::to_string)))
    });
    let engine = st.engine.clone();
    let who = blocking(move || {
        let db = engine.db();
        if !db.has_live_tokens()? {
            return Ok(Some("local".to_string()));
        }
        match token {
            Some(t) => Ok(db.token_name(&t)?),
            None => Ok(None),
        }
    })
    .await;
    match who {
        Ok(Some(name)) => {
            req.extensions_mut().insert(Who(name));
            next.run(req).await
        }
        Ok(None) => ApiError::new(401, "this server needs a token: `Authorization: Bearer <token>` (or `x-api-key`); `switchyard token create NAME` makes one").into_response(),
        Err(e) => e.into_response(),
    }
}

fn bearer(h: &HeaderMap) -> Option<String> {
    if let Some(v) = h.get("authorization").and_then(|v| v.to_str().ok())
        && let Some(t) = v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))
    {
        return Some(t.trim().to_string());
    }
    h.get("x-api-key").and_then(|v| v.to_str().ok()).map(|s| s.trim().to_string())
}

fn who_of(req_ext: &axum::http::Extensions) -> String {
    req_ext.get::<Who>().map(|w| w.0.clone()).unwrap_or_else(|| "local".into())
}

/// RFC 3339 time of a Unix time in milliseconds.
pub fn iso(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

async fn info() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "server": "switchyard",
        "flags": {"assistants": true, "crons": false, "langsmith": false, "langsmith_tracing_replicas": false},
    }))
}

async fn openapi() -> Response {
    ([("content-type", "application/json")], crate::OPENAPI).into_response()
}

// Assistants.

fn assistant_json(a: &Assistant) -> Value {
    json!({
        "assistant_id": a.assistant_id,
        "graph_id": a.graph_id,
        "name": a.graph_id,
        "description": a.description,
        "config": {},
        "context": {},
        "metadata": {"dialect": a.dialect, "file": a.file.display().to_string(), "agent": a.agent, "errors": a.errors},
        "version": 1,
        "created_at": iso(0),
        "updated_at": iso(0),
    })
}

fn find<'a>(st: &'a AppState, id: &str) -> ApiResult<&'a Assistant> {
    st.assistants.find(id).ok_or_else(|| {
        let known: Vec<&str> = st.assistants.list.iter().map(|a| a.graph_id.as_str()).collect();
        ApiError::not_found(format!("no assistant {id} (this server has: {})", known.join(", ")))
    })
}

#[derive(Deserialize, Default)]
struct SearchBody {
    #[serde(default)]
    graph_id: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

async fn assistants_search(State(st): State<AppState>, body: Option<Json<SearchBody>>) -> Json<Value> {
    let b = body.map(|b| b.0).unwrap_or_default();
    let list: Vec<Value> = st
        .assistants
        .list
        .iter()
        .filter(|a| b.graph_id.as_ref().is_none_or(|g| &a.graph_id == g))
        .skip(b.offset.unwrap_or(0))
        .take(b.limit.unwrap_or(10))
        .map(assistant_json)
        .collect();
    Json(Value::Array(list))
}

async fn assistant_get(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(assistant_json(find(&st, &id)?)))
}

async fn assistant_graph(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let a = find(&st, &id)?.clone();
    blocking(move || {
        let doc = model::doc::load_path(&a.file);
        let (graph, _) = model::graph::lower(&doc, a.agent.as_deref());
        let Some(g) = graph else {
            return Err(ApiError::new(422, format!("{} has no graph to show: {}", a.graph_id, a.errors.join("; "))));
        };
        let ours = model::graph::export::to_json(&g);
        let nodes: Vec<Value> = ours["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| json!({"id": n["id"], "type": "runnable", "data": n}))
            .collect();
        let edges: Vec<Value> = ours["edges"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let conditional = e["kind"].as_str().is_some_and(|k| k != "static" && k != "next");
                json!({"source": e["from"], "target": e["to"], "conditional": conditional, "data": e})
            })
            .collect();
        Ok(Json(json!({"nodes": nodes, "edges": edges})))
    })
    .await
}

/// The assistant's agent file as it is on the server (the studio draws a remote run's graph
/// from it): its name, text, dialect and agent.
async fn sy_assistant_source(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let a = find(&st, &id)?.clone();
    blocking(move || {
        let text = syntax::source::read_bounded_text(&a.file, syntax::source::SIDE_FILE_CAP, None)
            .map_err(|e| ApiError::internal(format!("cannot read {}: {e}", a.file.display())))?;
        let name = a.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Json(json!({
            "assistant_id": a.assistant_id,
            "graph_id": a.graph_id,
            "file_name": name,
            "dialect": a.dialect,
            "agent": a.agent,
            "text": text,
        })))
    })
    .await
}

async fn assistant_schemas(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let a = find(&st, &id)?;
    let input_schema = match a.dialect {
        // The user message and the prompt arguments (`lllm_input`).
        "lllm" => json!({"type": "object", "properties": {"messages": {"type": "array"}, "message": {"type": "string"}, "args": {"type": "object"}}}),
        _ => json!({"type": "object", "properties": {"messages": {"type": "array"}, "input": {"type": "string"}}}),
    };
    Ok(Json(json!({
        "graph_id": a.graph_id,
        "input_schema": input_schema,
        "output_schema": {"type": "object"},
        "state_schema": {"type": "object"},
        "config_schema": {"type": "object"},
        "context_schema": {"type": "object"},
    })))
}

// Threads.

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// What a run's record says, in LangGraph's words.
fn run_status(rec: Option<&RunRecord>, active: bool) -> &'static str {
    match rec.map(|r| r.status.as_str()) {
        _ if active => "running",
        None => "pending",
        Some("ready" | "paused") => "running",
        Some("interrupted" | "stopped" | "abandoned") => "interrupted",
        Some("completed") => "success",
        Some(_) => "error",
    }
}

/// The value a question shows a LangGraph client.
fn interrupt_value(p: &Pending) -> Value {
    if !p.value.is_null() && matches!(p.kind, runtime::events::InterruptKind::Interrupt) {
        return p.value.clone();
    }
    let mut m = Map::new();
    m.insert("kind".into(), serde_json::to_value(p.kind).unwrap_or(Value::Null));
    m.insert("node".into(), json!(p.node));
    m.insert("question".into(), json!(p.prompt));
    if !p.options.is_empty() {
        m.insert("options".into(), json!(p.options));
    }
    if let Some(d) = &p.default {
        m.insert("default".into(), json!(d));
    }
    if let Some(v) = &p.validation {
        m.insert("validation".into(), json!(v));
    }
    if !p.value.is_null() {
        m.insert("value".into(), p.value.clone());
    }
    Value::Object(m)
}

fn interrupts_of(rec: &RunRecord) -> Vec<Value> {
    match (&rec.status[..], &rec.pending) {
        ("interrupted", Some(p)) => vec![json!({"value": interrupt_value(p), "id": p.id})],
        _ => Vec::new(),
    }
}

/// The thread's runs and the last one's record.
fn thread_runs(engine: &dyn Engine, tid: &str) -> ApiResult<Vec<(crate::db::RunRow, Option<RunRecord>)>> {
    let db = engine.db();
    if db.thread(tid)?.is_none() {
        return Err(ApiError::not_found(format!("no thread {tid}")));
    }
    let mut out = Vec::new();
    for r in db.runs_of(tid)? {
        let rec = engine.record(&r.run_id)?;
        out.push((r, rec));
    }
    Ok(out)
}

fn thread_json(engine: &dyn Engine, tid: &str) -> ApiResult<Value> {
    let t = engine.db().thread(tid)?.ok_or_else(|| ApiError::not_found(format!("no thread {tid}")))?;
    let runs = thread_runs(engine, tid)?;
    let (status, values, interrupts) = match runs.last() {
        None => ("idle", json!({}), json!({})),
        Some((row, rec)) => {
            let active = engine.is_active(&row.run_id);
            let values = engine.latest_history(&row.run_id)?.map(|h| h.state).unwrap_or(json!({}));
            let status = match rec.as_ref().map(|r| r.status.as_str()) {
                _ if active => "busy",
                Some("interrupted") => "interrupted",
                Some("failed") => "error",
                Some("ready" | "paused") => "busy",
                _ => "idle",
            };
            let mut ints = Map::new();
            if let Some(rec) = rec
                && let Some(p) = &rec.pending
                && rec.status == "interrupted"
            {
                ints.insert(p.id.clone(), Value::Array(interrupts_of(rec)));
            }
            (status, values, Value::Object(ints))
        }
    };
    Ok(json!({
        "thread_id": t.thread_id,
        "created_at": iso(t.created_ms),
        "updated_at": iso(t.updated_ms),
        "metadata": t.metadata,
        "status": status,
        "values": values,
        "interrupts": interrupts,
    }))
}

#[derive(Deserialize, Default)]
struct ThreadCreate {
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    if_exists: Option<String>,
}

async fn thread_create(State(st): State<AppState>, body: Option<Json<ThreadCreate>>) -> ApiResult<Json<Value>> {
    let b = body.map(|b| b.0).unwrap_or_default();
    blocking(move || {
        let engine = st.engine.as_ref();
        let id = b.thread_id.unwrap_or_else(new_id);
        if engine.db().thread(&id)?.is_some() {
            if b.if_exists.as_deref() == Some("do_nothing") {
                return thread_json(engine, &id).map(Json);
            }
            return Err(ApiError::conflict(format!("thread {id} exists")));
        }
        engine.db().create_thread(&id, &b.metadata.unwrap_or(json!({})))?;
        thread_json(engine, &id).map(Json)
    })
    .await
}

async fn threads_search(State(st): State<AppState>, body: Option<Json<SearchBody>>) -> ApiResult<Json<Value>> {
    let b = body.map(|b| b.0).unwrap_or_default();
    blocking(move || {
        let engine = st.engine.as_ref();
        let rows = engine.db().threads(b.limit.unwrap_or(10), b.offset.unwrap_or(0))?;
        let list: ApiResult<Vec<Value>> = rows.iter().map(|t| thread_json(engine, &t.thread_id)).collect();
        Ok(Json(Value::Array(list?)))
    })
    .await
}

async fn thread_get(State(st): State<AppState>, Path(tid): Path<String>) -> ApiResult<Json<Value>> {
    blocking(move || thread_json(st.engine.as_ref(), &tid).map(Json)).await
}

async fn thread_delete(State(st): State<AppState>, Path(tid): Path<String>) -> ApiResult<StatusCode> {
    blocking(move || {
        let engine = st.engine.as_ref();
        for (row, _) in thread_runs(engine, &tid)? {
            if engine.is_active(&row.run_id) {
                return Err(ApiError::conflict(format!("thread {tid} has a running run ({}); cancel it first", row.run_id)));
            }
        }
        engine.db().delete_thread(&tid)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

/// One checkpoint of a thread as LangGraph's `ThreadState`.
fn state_json(tid: &str, h: &crate::db::HistoryRow, parent: Option<&crate::db::HistoryRow>, rec: Option<&RunRecord>, latest: bool) -> Value {
    let checkpoint = |h: &crate::db::HistoryRow| {
        json!({"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": format!("{}:{}", h.run_id, h.step), "checkpoint_map": null})
    };
    let (mut next, mut tasks, mut interrupts) = (json!(h.next), json!([]), json!([]));
    if latest && let Some(rec) = rec {
        let ints = interrupts_of(rec);
        if let Some(p) = rec.pending.as_ref().filter(|_| !ints.is_empty()) {
            next = json!([p.node]);
            tasks = json!([{"id": p.id, "name": p.node, "error": null, "interrupts": ints, "checkpoint": null, "state": null, "result": null}]);
            interrupts = Value::Array(ints);
        } else if rec.status == "failed" {
            tasks = json!([{"id": format!("{}:{}", h.run_id, h.step), "name": h.next.first(), "error": rec.error, "interrupts": [], "checkpoint": null, "state": null, "result": null}]);
        } else if !rec.resumable() {
            next = json!([]);
        }
    }
    json!({
        "values": h.state,
        "next": next,
        "tasks": tasks,
        "interrupts": interrupts,
        "checkpoint": checkpoint(h),
        "parent_checkpoint": parent.map(checkpoint),
        "metadata": {"step": h.step, "run_id": h.run_id, "source": if h.step == 0 { "input" } else { "loop" }},
        "created_at": iso(h.created_ms),
    })
}

/// Every checkpoint of the thread, newest first.
fn thread_checkpoints(engine: &dyn Engine, tid: &str, limit: usize) -> ApiResult<Vec<Value>> {
    let runs = thread_runs(engine, tid)?;
    let mut all: Vec<(crate::db::HistoryRow, Option<RunRecord>)> = Vec::new();
    for (row, rec) in runs.iter().rev() {
        for h in engine.history(&row.run_id)? {
            all.push((h, rec.clone()));
        }
    }
    let mut out = Vec::new();
    for (i, (h, rec)) in all.iter().enumerate().take(limit) {
        out.push(state_json(tid, h, all.get(i + 1).map(|x| &x.0), rec.as_ref(), i == 0));
    }
    Ok(out)
}

async fn thread_state(State(st): State<AppState>, Path(tid): Path<String>) -> ApiResult<Json<Value>> {
    blocking(move || {
        let list = thread_checkpoints(st.engine.as_ref(), &tid, 1)?;
        Ok(Json(list.into_iter().next().unwrap_or_else(|| {
            json!({"values": {}, "next": [], "tasks": [], "interrupts": [], "checkpoint": {"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": null}, "parent_checkpoint": null, "metadata": {}, "created_at": null})
        })))
    })
    .await
}

#[derive(Deserialize, Default)]
struct HistoryQuery {
    #[serde(default)]
    limit: Option<usize>,
}

async fn thread_history_get(State(st): State<AppState>, Path(tid): Path<String>, Query(q): Query<HistoryQuery>) -> ApiResult<Json<Value>> {
    blocking(move || Ok(Json(Value::Array(thread_checkpoints(st.engine.as_ref(), &tid, q.limit.unwrap_or(10))?)))).await
}

async fn thread_history_post(State(st): State<AppState>, Path(tid): Path<String>, body: Option<Json<HistoryQuery>>) -> ApiResult<Json<Value>> {
    let limit = body.and_then(|b| b.0.limit).unwrap_or(10);
    blocking(move || Ok(Json(Value::Array(thread_checkpoints(st.engine.as_ref(), &tid, limit)?)))).await
}

// Runs.

#[derive(Deserialize, Default, Clone)]
struct RunCreate {
    assistant_id: String,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    command: Option<Value>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    stream_mode: Option<Value>,
    #[serde(default)]
    if_not_exists: Option<String>,
    /// Switchyard's: breakpoints the run starts with.
    #[serde(default)]
    breakpoints: Option<Vec<Breakpoint>>,
    /// Switchyard's: hold the run before its first step (step or continue it from there).
    #[serde(default)]
    paused: Option<bool>,
}

fn run_json(engine: &dyn Engine, row: &crate::db::RunRow) -> ApiResult<Value> {
    let rec = engine.record(&row.run_id)?;
    let active = engine.is_active(&row.run_id);
    let mut v = json!({
        "run_id": row.run_id,
        "thread_id": row.thread_id,
        "assistant_id": row.assistant_id,
        "created_at": iso(row.created_ms),
        "updated_at": iso(rec.as_ref().map(|r| r.updated_ms).unwrap_or(row.created_ms)),
        "status": run_status(rec.as_ref(), active),
        "metadata": row.metadata,
        "multitask_strategy": "reject",
        "kwargs": {},
    });
    if rec.as_ref().is_some_and(|r| r.status == "stopped") {
        v["cancel_reason"] = json!("cancelled");
    }
    Ok(v)
}

/// What a LangGraph input becomes: the user's text and initial state. `messages` give the
/// text of their last human message; `input`, `initial_prompt` or `prompt` (text) too; every
/// other key is state. Plain text is the input itself.
fn split_input(input: Option<&Value>) -> ApiResult<(Option<String>, Option<Map<String, Value>>)> {
    let text_of = |m: &Value| -> Option<String> {
        match &m["content"] {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => {
                Some(parts.iter().filter_map(|p| p["text"].as_str().or(p.as_str())).collect::<Vec<_>>().join(""))
            }
            _ => None,
        }
    };
    match input {
        None | Some(Value::Null) => Ok((None, None)),
        Some(Value::String(s)) => Ok((Some(s.clone()), None)),
        Some(Value::Object(o)) => {
            let mut state = o.clone();
            let mut text = None;
            if let Some(Value::Array(msgs)) = state.remove("messages") {
                text = msgs
                    .iter()
                    .rev()
                    .find(|m| matches!(m["role"].as_str().or(m["type"].as_str()), Some("user" | "human")))
                    .and_then(text_of);
                if text.is_none() && !msgs.is_empty() {
                    return Err(ApiError::new(422, "`messages` holds no user message to start the run with"));
                }
            }
            for k in ["input", "initial_prompt", "prompt"] {
                if text.is_none()
                    && let Some(Value::String(s)) = state.get(k)
                {
                    text = Some(s.clone());
                    state.remove(k);
                }
            }
            Ok((text, (!state.is_empty()).then_some(state)))
        }
        Some(other) => Err(ApiError::new(422, format!("`input` must be an object or text, not {other}"))),
    }
}

/// What a LangGraph input becomes for an LLLM agent: the user message and the prompt
/// arguments. The message as [`split_input`] finds it (the last user message of `messages`,
/// `input`, `initial_prompt`, `prompt`), else `message`; the arguments are the object under
/// `args` (or `prompt_args`) over every other key.
fn lllm_input(input: Option<&Value>) -> ApiResult<(Option<String>, Option<Map<String, Value>>)> {
    let (mut text, state) = split_input(input)?;
    let mut args = state.unwrap_or_default();
    if text.is_none()
        && let Some(Value::String(m)) = args.get("message")
    {
        text = Some(m.clone());
        args.remove("message");
    }
    let mut named = Map::new();
    for k in ["args", "prompt_args"] {
        match args.remove(k) {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => named.extend(o),
            Some(other) => return Err(ApiError::new(422, format!("`{k}` holds an LLLM agent's prompt arguments: an object, not {other}"))),
        }
    }
    args.extend(named);
    Ok((text, (!args.is_empty()).then_some(args)))
}

/// Start a run (or answer the thread's question): returns the run's row.
fn create_run(st: &AppState, tid: Option<String>, body: RunCreate, who: String, run_id: Option<String>) -> ApiResult<crate::db::RunRow> {
    let engine = st.engine.as_ref();
    let a = find(st, &body.assistant_id)?.clone();
    let tid = match tid {
        Some(t) => {
            if engine.db().thread(&t)?.is_none() {
                if body.if_not_exists.as_deref() == Some("create") {
                    engine.db().create_thread(&t, &json!({}))?;
                } else {
                    return Err(ApiError::not_found(format!("no thread {t}")));
                }
            }
            Some(t)
        }
        None => None,
    };
    let runs = match &tid {
        Some(t) => thread_runs(engine, t)?,
        None => Vec::new(),
    };
    let last = runs.last();
    if let Some(resume) = body.command.as_ref().and_then(|c| c.get("resume")) {
        let Some((row, Some(rec))) = last else {
            return Err(ApiError::conflict("there is no run on this thread to resume"));
        };
        if rec.status != "interrupted" {
            return Err(ApiError::conflict(format!("the thread's run {} is not waiting for an answer (it is {})", row.run_id, rec.status)));
        }
        // `{interrupt id: value}` answers that question; anything else is the answer.
        let (qid, value) = match (resume, &rec.pending) {
            (Value::Object(m), Some(p)) if m.len() == 1 && m.contains_key(&p.id) => (Some(p.id.clone()), m[&p.id].clone()),
            _ => (None, resume.clone()),
        };
        engine.answer(&row.run_id, qid.as_deref(), value, &who)?;
        return Ok(row.clone());
    }
    if let Some((row, rec)) = last {
        if engine.is_active(&row.run_id) || rec.as_ref().is_some_and(|r| matches!(r.status.as_str(), "ready" | "paused")) {
            return Err(ApiError::conflict(format!("thread {} is busy with run {} (multitask strategy: reject)", tid.as_deref().unwrap_or(""), row.run_id)));
        }
        if rec.as_ref().is_some_and(|r| r.status == "interrupted") {
            return Err(ApiError::conflict(format!(
                "run {} of this thread waits for an answer: resume it with `command: {{\"resume\": ...}}`",
                row.run_id
            )));
        }
    }
    let lllm = a.dialect == "lllm";
    let (input, state) = if lllm { lllm_input(body.input.as_ref())? } else { split_input(body.input.as_ref())? };
    // A thread goes on from its last completed run's state (an LLLM agent's call starts anew:
    // with the prompt arguments the last one had).
    let mut seed = match last {
        Some((row, Some(rec))) if rec.status == "completed" && row.assistant_id == a.assistant_id => {
            engine.latest_history(&row.run_id)?.and_then(|h| h.state.as_object().cloned())
        }
        _ => None,
    };
    if lllm {
        seed = seed.and_then(|s| s.get("prompt_args").and_then(Value::as_object).cloned());
    }
    if let Some(s) = state {
        seed.get_or_insert_with(Map::new).extend(s);
    }
    let spec = StartSpec {
        run_id: run_id.unwrap_or_else(new_id),
        assistant: a.clone(),
        thread_id: tid.clone(),
        input,
        state: seed.map(Value::Object),
        metadata: body.metadata.clone().unwrap_or(json!({})),
        who,
        breakpoints: body.breakpoints.clone().unwrap_or_default(),
        paused: body.paused.unwrap_or(false),
    };
    let run_id = spec.run_id.clone();
    engine.start(spec)?;
    if let Some(t) = &tid {
        engine.db().touch_thread(t)?;
    }
    engine.db().run(&run_id)?.ok_or_else(|| ApiError::internal("the run vanished"))
}

async fn thread_run_create(
    State(st): State<AppState>,
    Path(tid): Path<String>,
    ext: axum::http::Extensions,
    Json(body): Json<RunCreate>,
) -> ApiResult<Json<Value>> {
    let who = who_of(&ext);
    blocking(move || {
        let row = create_run(&st, Some(tid), body, who, None)?;
        run_json(st.engine.as_ref(), &row).map(Json)
    })
    .await
}

async fn stateless_create(State(st): State<AppState>, ext: axum::http::Extensions, Json(body): Json<RunCreate>) -> ApiResult<Json<Value>> {
    let who = who_of(&ext);
    blocking(move || {
        let row = create_run(&st, None, body, who, None)?;
        run_json(st.engine.as_ref(), &row).map(Json)
    })
    .await
}

async fn thread_runs_list(State(st): State<AppState>, Path(tid): Path<String>) -> ApiResult<Json<Value>> {
    blocking(move || {
        let engine = st.engine.as_ref();
        let runs = thread_runs(engine, &tid)?;
        let list: ApiResult<Vec<Value>> = runs.iter().rev().map(|(r, _)| run_json(engine, r)).collect();
        Ok(Json(Value::Array(list?)))
    })
    .await
}

fn run_row(engine: &dyn Engine, tid: Option<&str>, rid: &str) -> ApiResult<crate::db::RunRow> {
    let row = engine.db().run(rid)?.ok_or_else(|| ApiError::not_found(format!("no run {rid}")))?;
    if let Some(t) = tid
        && row.thread_id.as_deref() != Some(t)
    {
        return Err(ApiError::not_found(format!("no run {rid} on thread {t}")));
    }
    Ok(row)
}

async fn thread_run_get(State(st): State<AppState>, Path((tid, rid)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    blocking(move || {
        let row = run_row(st.engine.as_ref(), Some(&tid), &rid)?;
        run_json(st.engine.as_ref(), &row).map(Json)
    })
    .await
}

async fn thread_run_cancel(State(st): State<AppState>, Path((tid, rid)): Path<(String, String)>) -> ApiResult<StatusCode> {
    blocking(move || {
        run_row(st.engine.as_ref(), Some(&tid), &rid)?;
        st.engine.cancel(&rid)?;
        Ok(StatusCode::ACCEPTED)
    })
    .await
}

/// The values a finished (or waiting) run ends with: its last state, with `__interrupt__` when
/// it waits and `__error__` when it failed.
fn final_values(engine: &dyn Engine, run_id: &str) -> ApiResult<Value> {
    let rec = engine.record(run_id)?;
    let mut v = engine.latest_history(run_id)?.map(|h| h.state).unwrap_or(json!({}));
    if let Some(rec) = rec {
        let ints = interrupts_of(&rec);
        if !ints.is_empty()
            && let Some(o) = v.as_object_mut()
        {
            o.insert("__interrupt__".into(), Value::Array(ints));
        } else if rec.status == "failed"
            && let Some(o) = v.as_object_mut()
        {
            let msg = rec.error.clone().unwrap_or_default();
            o.insert("__error__".into(), json!({"error": "RunFailed", "message": msg}));
        }
    }
    Ok(v)
}

/// Wait until run `run_id` settles (`rx` subscribed before it could).
async fn settle(engine: Arc<dyn Engine>, run_id: String, mut rx: broadcast::Receiver<Notice>) -> ApiResult<()> {
    loop {
        let id = run_id.clone();
        let e = engine.clone();
        let settled = blocking(move || {
            let rec = e.record(&id)?;
            Ok(!e.is_active(&id) && rec.is_some_and(|r| !matches!(r.status.as_str(), "ready" | "paused")))
        })
        .await?;
        if settled {
            return Ok(());
        }
        loop {
            match tokio::time::timeout(std::time::Duration::from_secs(1), rx.recv()).await {
                Ok(Ok(Notice::Settled)) | Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => break,
                Ok(Err(broadcast::error::RecvError::Lagged(_))) | Ok(Ok(_)) => continue,
            }
        }
    }
}

async fn wait_common(st: AppState, tid: Option<String>, body: RunCreate, who: String) -> ApiResult<Json<Value>> {
    let engine = st.engine.clone();
    // Watch before starting: find the run id first when resuming, else after the start.
    let (row, rx) = start_watched(st, tid, body, who).await?;
    settle(engine.clone(), row.run_id.clone(), rx).await?;
    let id = row.run_id.clone();
    blocking(move || final_values(engine.as_ref(), &id).map(Json)).await
}

/// Start (or resume) a run with a watcher subscribed before anything of it can happen: a
/// resume continues the thread's last run (watched by its id), a new run gets its id here.
async fn start_watched(st: AppState, tid: Option<String>, body: RunCreate, who: String) -> ApiResult<(crate::db::RunRow, broadcast::Receiver<Notice>)> {
    let engine = st.engine.clone();
    let resumed = if body.command.as_ref().is_some_and(|c| c.get("resume").is_some()) {
        let (t, e) = (tid.clone(), engine.clone());
        blocking(move || Ok(match &t { Some(t) => e.db().runs_of(t)?.last().map(|r| r.run_id.clone()), None => None })).await?
    } else {
        None
    };
    let (watched, new) = match resumed {
        Some(id) => (id, None),
        None => {
            let id = new_id();
            (id.clone(), Some(id))
        }
    };
    let rx = engine.watch(&watched);
    let row = blocking(move || create_run(&st, tid, body, who, new)).await?;
    Ok((row, rx))
}

async fn thread_run_wait(
    State(st): State<AppState>,
    Path(tid): Path<String>,
    ext: axum::http::Extensions,
    Json(body): Json<RunCreate>,
) -> ApiResult<Json<Value>> {
    wait_common(st, Some(tid), body, who_of(&ext)).await
}

async fn stateless_wait(State(st): State<AppState>, ext: axum::http::Extensions, Json(body): Json<RunCreate>) -> ApiResult<Json<Value>> {
    wait_common(st, None, body, who_of(&ext)).await
}

async fn thread_run_join(State(st): State<AppState>, Path((tid, rid)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    let engine = st.engine.clone();
    let rx = engine.watch(&rid);
    {
        let e = engine.clone();
        let (t, r) = (tid.clone(), rid.clone());
        blocking(move || run_row(e.as_ref(), Some(&t), &r).map(|_| ())).await?;
    }
    settle(engine.clone(), rid.clone(), rx).await?;
    blocking(move || final_values(engine.as_ref(), &rid).map(Json)).await
}

/// The stream modes asked for (default `values`).
fn modes(v: Option<&Value>) -> Vec<String> {
    match v {
        None | Some(Value::Null) => vec!["values".into()],
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(|m| m.as_str().map(str::to_string)).collect(),
        Some(_) => vec!["values".into()],
    }
}

fn sse(name: &str, data: &Value) -> SseEvent {
    SseEvent::default().event(name).data(data.to_string())
}

/// A LangGraph `events`-mode item for one of our events (`None`: nothing to say).
fn lc_event(e: &runtime::events::Event) -> Option<Value> {
    let meta = |node: &str| json!({"langgraph_node": node, "switchyard_run": e.run});
    let (name, node, data, kind) = match &e.body {
        EventBody::NodeEnter { node, .. } => ("on_chain_start", node.clone(), json!({}), node.clone()),
        EventBody::NodeExit { node, update, .. } => ("on_chain_end", node.clone(), json!({"output": update}), node.clone()),
        EventBody::LlmRequest { node, messages, .. } => ("on_chat_model_start", node.clone(), json!({"input": {"messages": messages}}), node.clone()),
        EventBody::LlmResponse { node, .. } => {
            let v = serde_json::to_value(&e.body).unwrap_or(Value::Null);
            ("on_chat_model_end", node.clone(), json!({"output": v}), node.clone())
        }
        EventBody::ToolCall { node, call } => ("on_tool_start", node.clone(), json!({"input": call.args}), call.name.clone()),
        EventBody::ToolResult { node, name, .. } => {
            let v = serde_json::to_value(&e.body).unwrap_or(Value::Null);
            ("on_tool_end", node.clone(), json!({"output": v["result"].clone(), "error": v["error"].clone()}), name.clone())
        }
        _ => return None,
    };
    Some(json!({"event": name, "name": kind, "run_id": e.run, "data": data, "metadata": meta(&node), "tags": []}))
}

/// The SSE stream of one run in LangGraph's format, from `rx` (subscribed before the run
/// could move) until the run settles.
fn run_stream(engine: Arc<dyn Engine>, run_id: String, rx: broadcast::Receiver<Notice>, modes: Vec<String>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let (tx, out) = mpsc::channel::<SseEvent>(256);
    tokio::spawn(async move {
        let _ = pump(engine, run_id, rx, modes, tx).await;
    });
    let stream = futures_util::stream::unfold(out, |mut out| async move { out.recv().await.map(|e| (Ok(e), out)) });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn pump(engine: Arc<dyn Engine>, run_id: String, mut rx: broadcast::Receiver<Notice>, modes: Vec<String>, tx: mpsc::Sender<SseEvent>) -> Result<(), ()> {
    let has = |m: &str| modes.iter().any(|x| x == m);
    let send = |e: SseEvent| {
        let tx = tx.clone();
        async move { tx.send(e).await.map_err(|_| ()) }
    };
    send(sse("metadata", &json!({"run_id": run_id, "attempt": 1}))).await?;
    // Already settled (a join of a run that waits or ended): its last state, and done.
    let settled_now = {
        let (e, id) = (engine.clone(), run_id.clone());
        blocking(move || {
            let rec = e.record(&id)?;
            Ok(!e.is_active(&id) && rec.is_some_and(|r| !matches!(r.status.as_str(), "ready" | "paused")))
        })
        .await
        .unwrap_or(true)
    };
    if !settled_now {
        loop {
            match tokio::time::timeout(std::time::Duration::from_secs(1), rx.recv()).await {
                Ok(Ok(Notice::Values { state, .. })) => {
                    if has("values") {
                        send(sse("values", &state)).await?;
                    }
                }
                Ok(Ok(Notice::Event { event, .. })) => {
                    if has("updates")
                        && event.run == run_id
                        && let EventBody::NodeExit { node, update, .. } = &event.body
                    {
                        send(sse("updates", &json!({ node.clone(): update }))).await?;
                    }
                    if has("events")
                        && let Some(v) = lc_event(&event)
                    {
                        send(sse("events", &v)).await?;
                    }
                    if has("debug") {
                        send(sse("debug", &serde_json::to_value(&*event).unwrap_or(Value::Null))).await?;
                    }
                }
                Ok(Ok(Notice::Settled)) | Ok(Err(broadcast::error::RecvError::Closed)) => break,
                Ok(Err(broadcast::error::RecvError::Lagged(n))) => {
                    send(sse("error", &json!({"error": "Lagged", "message": format!("this stream fell {n} notices behind; the run goes on (read its state or join it)")}))).await?;
                }
                Err(_) => {
                    // No notice for a second: is it still running?
                    let (e, id) = (engine.clone(), run_id.clone());
                    let done = blocking(move || {
                        let rec = e.record(&id)?;
                        Ok(!e.is_active(&id) && rec.is_some_and(|r| !matches!(r.status.as_str(), "ready" | "paused")))
                    })
                    .await
                    .unwrap_or(true);
                    if done {
                        break;
                    }
                }
            }
        }
    }
    let (e, id) = (engine.clone(), run_id.clone());
    let (rec, values) = blocking(move || Ok((e.record(&id)?, final_values(e.as_ref(), &id)?))).await.map_err(|_| ())?;
    if let Some(rec) = rec {
        let ints = interrupts_of(&rec);
        if !ints.is_empty() {
            if has("updates") {
                send(sse("updates", &json!({"__interrupt__": ints}))).await?;
            }
            if has("values") {
                send(sse("values", &values)).await?;
            }
        } else if rec.status == "failed" {
            send(sse("error", &json!({"error": "RunFailed", "message": rec.error.unwrap_or_default()}))).await?;
        } else if settled_now && has("values") {
            send(sse("values", &values)).await?;
        }
    }
    Ok(())
}

async fn stream_common(st: AppState, tid: Option<String>, body: RunCreate, who: String) -> ApiResult<Response> {
    let modes = modes(body.stream_mode.as_ref());
    let engine = st.engine.clone();
    let (row, rx) = start_watched(st, tid, body, who).await?;
    Ok(run_stream(engine, row.run_id.clone(), rx, modes).into_response())
}

async fn thread_run_stream(
    State(st): State<AppState>,
    Path(tid): Path<String>,
    ext: axum::http::Extensions,
    Json(body): Json<RunCreate>,
) -> ApiResult<Response> {
    stream_common(st, Some(tid), body, who_of(&ext)).await
}

async fn stateless_stream(State(st): State<AppState>, ext: axum::http::Extensions, Json(body): Json<RunCreate>) -> ApiResult<Response> {
    stream_common(st, None, body, who_of(&ext)).await
}

#[derive(Deserialize, Default)]
struct JoinQuery {
    #[serde(default)]
    stream_mode: Option<String>,
}

async fn thread_run_join_stream(
    State(st): State<AppState>,
    Path((tid, rid)): Path<(String, String)>,
    Query(q): Query<JoinQuery>,
) -> ApiResult<Response> {
    let engine = st.engine.clone();
    let rx = engine.watch(&rid);
    {
        let (e, t, r) = (engine.clone(), tid.clone(), rid.clone());
        blocking(move || run_row(e.as_ref(), Some(&t), &r).map(|_| ())).await?;
    }
    let modes = q.stream_mode.map(|m| vec![m]).unwrap_or_else(|| vec!["values".into()]);
    Ok(run_stream(engine, rid, rx, modes).into_response())
}

// Switchyard's own endpoints.

/// A server run as the inbox and `switchyard runs --server` show it.
fn sy_run_json(engine: &dyn Engine, row: &crate::db::RunRow, assistants: &Assistants) -> ApiResult<Value> {
    let summary = engine.summaries(std::slice::from_ref(&row.run_id))?.remove(&row.run_id).unwrap_or_default();
    sy_run_summary_json(engine, row, summary, assistants)
}

/// [`sy_run_json`] of a run whose summary was read already (the run list reads them all at once).
fn sy_run_summary_json(engine: &dyn Engine, row: &crate::db::RunRow, summary: RunSummary, assistants: &Assistants) -> ApiResult<Value> {
    let RunSummary { record: rec, active, breakpoints } = summary;
    let held = engine.db().held(&row.run_id)?;
    let name = assistants.find(&row.assistant_id).map(|a| a.graph_id.clone()).unwrap_or_else(|| row.assistant_id.clone());
    let waiting = rec.as_ref().filter(|r| r.status == "interrupted" && !active).and_then(|r| r.pending.clone());
    let state = match &waiting {
        Some(_) => engine.latest_history(&row.run_id)?.map(|h| h.state),
        None => None,
    };
    Ok(json!({
        "run_id": row.run_id,
        "thread_id": row.thread_id,
        "assistant": name,
        "assistant_id": row.assistant_id,
        "status": match rec.as_ref().map(|r| r.status.as_str()) {
            _ if active => "running",
            // Held before a step (started paused, stepped, paused): paused, whatever the
            // store's word between steps is.
            Some("ready" | "paused") if held => "paused",
            Some(s) => s,
            None => "pending",
        },
        "created_at": iso(row.created_ms),
        "updated_at": iso(rec.as_ref().map(|r| r.updated_ms).unwrap_or(row.created_ms)),
        "waiting_since": waiting.as_ref().and(rec.as_ref()).map(|r| iso(r.updated_ms)),
        "step": rec.as_ref().map(|r| r.step),
        "question": waiting,
        "state": state,
        "output": rec.as_ref().map(|r| r.output.clone()),
        "error": rec.as_ref().and_then(|r| r.error.clone()),
        "started_by": row.started_by,
        "breakpoints": breakpoints,
        "active": active,
    }))
}

#[derive(Deserialize, Default)]
struct RunsQuery {
    #[serde(default)]
    status: Option<String>,
}

async fn sy_runs(State(st): State<AppState>, Query(q): Query<RunsQuery>) -> ApiResult<Json<Value>> {
    blocking(move || {
        let engine = st.engine.as_ref();
        let mut out = Vec::new();
        let rows = engine.db().all_runs()?;
        let ids: Vec<String> = rows.iter().map(|r| r.run_id.clone()).collect();
        let mut summaries = engine.summaries(&ids)?;
        for row in rows.iter().rev() {
            let summary = summaries.remove(&row.run_id).unwrap_or_default();
            let v = sy_run_summary_json(engine, row, summary, &st.assistants)?;
            if q.status.as_deref().is_none_or(|s| v["status"] == s) {
                out.push(v);
            }
        }
        Ok(Json(Value::Array(out)))
    })
    .await
}

async fn sy_run(State(st): State<AppState>, Path(rid): Path<String>) -> ApiResult<Json<Value>> {
    blocking(move || {
        let engine = st.engine.as_ref();
        let row = run_row(engine, None, &rid)?;
        let mut v = sy_run_json(engine, &row, &st.assistants)?;
        v["answers"] = serde_json::to_value(engine.db().answers(Some(&rid))?).unwrap_or(Value::Null);
        Ok(Json(v))
    })
    .await
}

#[derive(Deserialize)]
struct AnswerBody {
    answer: Value,
    #[serde(default)]
    interrupt_id: Option<String>,
    /// A person's name to record beside the token's (e.g. typed into the inbox).
    #[serde(default)]
    by: Option<String>,
}

async fn sy_answer(
    State(st): State<AppState>,
    Path(rid): Path<String>,
    ext: axum::http::Extensions,
    Json(b): Json<AnswerBody>,
) -> ApiResult<Json<Value>> {
    let token = who_of(&ext);
    let who = match b.by.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(by) => format!("{} (token {token})", by.chars().filter(|c| !c.is_control()).take(100).collect::<String>()),
        None => token,
    };
    blocking(move || {
        let engine = st.engine.as_ref();
        run_row(engine, None, &rid)?;
        engine.answer(&rid, b.interrupt_id.as_deref(), b.answer, &who)?;
        Ok(Json(json!({"ok": true, "run_id": rid, "by": who})))
    })
    .await
}

async fn sy_cancel(State(st): State<AppState>, Path(rid): Path<String>) -> ApiResult<StatusCode> {
    blocking(move || {
        run_row(st.engine.as_ref(), None, &rid)?;
        st.engine.cancel(&rid)?;
        Ok(StatusCode::ACCEPTED)
    })
    .await
}

async fn sy_pause(State(st): State<AppState>, Path(rid): Path<String>) -> ApiResult<StatusCode> {
    blocking(move || {
        run_row(st.engine.as_ref(), None, &rid)?;
        st.engine.pause(&rid)?;
        Ok(StatusCode::ACCEPTED)
    })
    .await
}

async fn sy_step(State(st): State<AppState>, Path(rid): Path<String>) -> ApiResult<StatusCode> {
    blocking(move || {
        run_row(st.engine.as_ref(), None, &rid)?;
        st.engine.resume(&rid, Drive::Step)?;
        Ok(StatusCode::ACCEPTED)
    })
    .await
}

async fn sy_continue(State(st): State<AppState>, Path(rid): Path<String>) -> ApiResult<StatusCode> {
    blocking(move || {
        run_row(st.engine.as_ref(), None, &rid)?;
        st.engine.resume(&rid, Drive::Continue)?;
        Ok(StatusCode::ACCEPTED)
    })
    .await
}

async fn sy_breakpoints_get(State(st): State<AppState>, Path(rid): Path<String>) -> ApiResult<Json<Value>> {
    blocking(move || {
        run_row(st.engine.as_ref(), None, &rid)?;
        Ok(Json(json!({"breakpoints": st.engine.breakpoints(&rid)?})))
    })
    .await
}

#[derive(Deserialize)]
struct BreakpointsBody {
    breakpoints: Vec<Breakpoint>,
}

async fn sy_breakpoints_put(State(st): State<AppState>, Path(rid): Path<String>, Json(b): Json<BreakpointsBody>) -> ApiResult<Json<Value>> {
    blocking(move || {
        run_row(st.engine.as_ref(), None, &rid)?;
        st.engine.set_breakpoints(&rid, b.breakpoints)?;
        Ok(Json(json!({"breakpoints": st.engine.breakpoints(&rid)?})))
    })
    .await
}

#[derive(Deserialize, Default)]
struct AnswersQuery {
    #[serde(default)]
    run_id: Option<String>,
}

async fn sy_answers(State(st): State<AppState>, Query(q): Query<AnswersQuery>) -> ApiResult<Json<Value>> {
    blocking(move || Ok(Json(serde_json::to_value(st.engine.db().answers(q.run_id.as_deref())?).unwrap_or(Value::Null)))).await
}

#[derive(Deserialize, Default)]
struct EventsQuery {
    #[serde(default)]
    after: Option<u64>,
}

/// A run's debugger events (the JSONL trace's lines), numbered: the log first, then live, until
/// the run ends. `Last-Event-ID` (or `?after=`) resumes after that number.
async fn sy_events(State(st): State<AppState>, Path(rid): Path<String>, headers: HeaderMap, Query(q): Query<EventsQuery>) -> ApiResult<Response> {
    let engine = st.engine.clone();
    let rx = engine.watch(&rid);
    {
        let (e, r) = (engine.clone(), rid.clone());
        blocking(move || run_row(e.as_ref(), None, &r).map(|_| ())).await?;
    }
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .or(q.after)
        .unwrap_or(0);
    let (tx, out) = mpsc::channel::<SseEvent>(256);
    tokio::spawn(async move {
        let _ = pump_events(engine, rid, rx, after, tx).await;
    });
    let stream = futures_util::stream::unfold(out, |mut out| async move { out.recv().await.map(|e| (Ok::<_, Infallible>(e), out)) });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

async fn pump_events(engine: Arc<dyn Engine>, rid: String, mut rx: broadcast::Receiver<Notice>, mut last: u64, tx: mpsc::Sender<SseEvent>) -> Result<(), ()> {
    let line_event = |seq: u64, line: &str| SseEvent::default().id(seq.to_string()).event("event").data(line);
    // Send what the log holds after `last`.
    async fn from_log(engine: &Arc<dyn Engine>, rid: &str, last: &mut u64, tx: &mpsc::Sender<SseEvent>) -> Result<(), ()> {
        loop {
            let (e, r, after) = (engine.clone(), rid.to_string(), *last);
            let page = blocking(move || e.events_after(&r, after, 500)).await.map_err(|_| ())?;
            if page.is_empty() {
                return Ok(());
            }
            for (seq, line) in page {
                tx.send(SseEvent::default().id(seq.to_string()).event("event").data(line)).await.map_err(|_| ())?;
                *last = seq;
            }
        }
    }
    from_log(&engine, &rid, &mut last, &tx).await?;
    let mut held: Vec<(u64, String)> = Vec::new();
    loop {
        let ended = {
            let (e, r) = (engine.clone(), rid.clone());
            blocking(move || Ok(!e.is_active(&r) && e.record(&r)?.is_some_and(|x| !x.resumable()))).await.unwrap_or(true)
        };
        if ended {
            from_log(&engine, &rid, &mut last, &tx).await?;
            tx.send(SseEvent::default().event("end").data("{}")).await.map_err(|_| ())?;
            return Ok(());
        }
        match tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv()).await {
            Ok(Ok(Notice::Event { seq, event })) => {
                if seq == last + 1 {
                    tx.send(line_event(seq, &event.to_file_line())).await.map_err(|_| ())?;
                    last = seq;
                } else if seq > last {
                    // Emitted before this stream listened and not yet in the log: it is
                    // there once its step is saved (the next `Values`).
                    held.push((seq, event.to_file_line()));
                }
            }
            Ok(Ok(Notice::Values { .. })) | Ok(Ok(Notice::Settled)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => {
                from_log(&engine, &rid, &mut last, &tx).await?;
                for (seq, line) in std::mem::take(&mut held) {
                    if seq == last + 1 {
                        tx.send(line_event(seq, &line)).await.map_err(|_| ())?;
                        last = seq;
                    }
                }
            }
            Ok(Err(broadcast::error::RecvError::Closed)) => rx = engine.watch(&rid),
            Err(_) => {
                from_log(&engine, &rid, &mut last, &tx).await?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every route of the router is in `openapi.json` with its methods, and nothing else is.
    #[test]
    fn the_openapi_document_lists_exactly_the_routes() {
        let src = include_str!("api.rs");
        let mut routes = std::collections::BTreeSet::new();
        for line in src.lines().map(str::trim).filter(|l| l.starts_with(".route(\"")) {
            let path = line.trim_start_matches(".route(\"").split('"').next().unwrap().to_string();
            let rest = &line[line.find("\",").unwrap()..];
            for m in ["get", "post", "delete", "put", "patch"] {
                if rest.contains(&format!("{m}(")) {
                    routes.insert(format!("{} {path}", m.to_uppercase()));
                }
            }
        }
        let doc: Value = serde_json::from_str(crate::OPENAPI).unwrap();
        let mut documented = std::collections::BTreeSet::new();
        for (path, ops) in doc["paths"].as_object().unwrap() {
            for (m, op) in ops.as_object().unwrap() {
                assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{m} {path} needs a summary");
                documented.insert(format!("{} {path}", m.to_uppercase()));
            }
        }
        assert!(routes.len() > 25, "{routes:?}");
        assert_eq!(routes, documented, "router vs openapi.json");
    }

    #[test]
    fn inputs_become_text_and_state() {
        let (t, s) = split_input(Some(&json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "n": 1}))).unwrap();
        assert_eq!((t.as_deref(), s), (Some("hi"), Some(json!({"n": 1}).as_object().unwrap().clone())));
        let (t, s) = split_input(Some(&json!({"messages": [{"type": "human", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}))).unwrap();
        assert_eq!((t.as_deref(), s), (Some("ab"), None));
        assert_eq!(split_input(Some(&json!("plain"))).unwrap().0.as_deref(), Some("plain"));
        assert_eq!(split_input(Some(&json!({"initial_prompt": "go"}))).unwrap().0.as_deref(), Some("go"));
        assert_eq!(split_input(None).unwrap(), (None, None));
        assert_eq!(split_input(Some(&json!([1]))).unwrap_err().status, 422);
        assert_eq!(split_input(Some(&json!({"messages": [{"role": "assistant", "content": "x"}]}))).unwrap_err().status, 422);
    }

    #[test]
    fn an_lllm_input_is_a_user_message_and_prompt_arguments() {
        let (t, a) = lllm_input(Some(&json!({"messages": [{"role": "user", "content": "hi"}], "audience": "hikers"}))).unwrap();
        assert_eq!((t.as_deref(), a), (Some("hi"), Some(json!({"audience": "hikers"}).as_object().unwrap().clone())));
        // `message` and `args` (named arguments win over loose keys); `prompt_args` too.
        let (t, a) = lllm_input(Some(&json!({"message": "go", "args": {"topic": "K2", "x": 2}, "x": 1}))).unwrap();
        assert_eq!((t.as_deref(), a), (Some("go"), Some(json!({"topic": "K2", "x": 2}).as_object().unwrap().clone())));
        let (t, a) = lllm_input(Some(&json!({"input": "q", "prompt_args": {"k": "v"}}))).unwrap();
        assert_eq!((t.as_deref(), a), (Some("q"), Some(json!({"k": "v"}).as_object().unwrap().clone())));
        assert_eq!(lllm_input(Some(&json!("plain"))).unwrap(), (Some("plain".into()), None));
        assert_eq!(lllm_input(None).unwrap(), (None, None));
        let e = lllm_input(Some(&json!({"message": "m", "args": [1]}))).unwrap_err();
        assert!(e.status == 422 && e.message.contains("`args`"), "{e:?}");
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_795_782_069_624), "2026-11-27T12:21:09.624Z");
    }
}
