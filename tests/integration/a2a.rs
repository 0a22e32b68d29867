//! Remote sub-agents over A2A: a loopback A2A server written here (axum on 127.0.0.1:0) that
//! speaks 1.0 or 0.3 with a scripted behaviour, the client (`switchyard::run::a2a`) against it,
//! then sherma runs whose sub-agent `url` points at it (`tests/fixtures/a2a/`, the URL filled in
//! at test time): `call_agent` and `use_sub_agents_as_tools`, `input-required` as an interrupt
//! answered through the session, failures as clear node errors.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use switchyard::run::a2a::{A2aOptions, ErrorKind, Protocol, RemoteAgent, TaskState};
use switchyard::run::events::{Event, EventBody, RunStatus};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{RunOptions, RunSession, Status};
use switchyard::run::sherma::ShermaOptions;
use test_support::TempDir;
use test_support::http::{closed_port_url, serve_at};
use test_support::run::{completed, dump, messages, pending};

// ---------------------------------------------------------------------------------------------
// The loopback A2A server
// ---------------------------------------------------------------------------------------------

/// The dialect the server speaks (methods, enums, result shapes, the version header).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Dialect {
    V1,
    V03,
}

/// What the card claims.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Card {
    /// 1.0: `supportedInterfaces`, at `agent-card.json`.
    V1,
    /// 0.3: top-level `url` + `protocolVersion`, at `agent-card.json`.
    V03,
    /// 0.2: top-level `url`, only at the old `agent.json`.
    Legacy,
}

/// How the agent behaves on a send.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Script {
    /// Completed at once, the answer in an artifact.
    Answer,
    /// A direct Message instead of a task.
    Message,
    /// `input-required` ("Which city?"), completed once the answer comes with the same ids.
    Ask,
    /// `failed` with a message.
    Fail,
    /// Answers after 5 s.
    Slow,
    /// `working`; `GetTask` completes it on the second poll.
    Working,
}

struct Srv {
    dialect: Dialect,
    card: Card,
    script: Script,
    base: String,
    /// Every JSON-RPC request: `{method, params, a2a_version}`.
    requests: Mutex<Vec<Value>>,
    /// Open tasks: id → (context id, first message, polls).
    tasks: Mutex<HashMap<String, (String, String, u32)>>,
    seq: AtomicU64,
}

impl Srv {
    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
    fn methods(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| r["method"].as_str().unwrap().to_string())
            .collect()
    }
    fn card_json(&self) -> Value {
        let rpc = format!("{}/rpc", self.base);
        match self.card {
            Card::V1 => json!({
                "name": "Booking agent", "description": "Books tables", "version": "1.0.0",
                "supportedInterfaces": [
                    {"url": format!("{}/grpc", self.base), "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                    {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
                ],
                "capabilities": {"streaming": false}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
            }),
            Card::V03 => json!({
                "name": "Booking agent", "description": "Books tables", "version": "1.0.0",
                "url": rpc, "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
                "capabilities": {"streaming": false}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
            }),
            Card::Legacy => {
                json!({"name": "Booking agent", "url": rpc, "version": "1.0.0", "capabilities": {}})
            }
        }
    }
}

fn serve(dialect: Dialect, card: Card, script: Script) -> Arc<Srv> {
    let (tx, rx) = std::sync::mpsc::channel();
    serve_at(move |addr| {
        let srv = Arc::new(Srv {
            dialect,
            card,
            script,
            base: format!("http://{addr}"),
            requests: Mutex::new(Vec::new()),
            tasks: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(0),
        });
        tx.send(srv.clone()).unwrap();
        Router::new()
            .route("/.well-known/agent-card.json", get(card_new))
            .route("/.well-known/agent.json", get(card_old))
            .route("/cards/booking.json", get(card_any))
            .route("/rpc", post(rpc))
            .with_state(srv)
    })
    .keep();
    rx.recv().unwrap()
}

async fn card_new(State(s): State<Arc<Srv>>) -> Response {
    if s.card == Card::Legacy {
        StatusCode::NOT_FOUND.into_response()
    } else {
        axum::Json(s.card_json()).into_response()
    }
}

async fn card_old(State(s): State<Arc<Srv>>) -> Response {
    if s.card == Card::Legacy {
        axum::Json(s.card_json()).into_response()
    } else {
        StatusCode::NOT_FOUND.into_response()
    }
}

async fn card_any(State(s): State<Arc<Srv>>) -> Response {
    axum::Json(s.card_json()).into_response()
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Response {
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
        .into_response()
}

/// A task in the server's dialect; `state` in the 0.3 spelling.
fn task(
    d: Dialect,
    id: &str,
    ctx: &str,
    state: &str,
    status_text: Option<&str>,
    artifact: Option<&str>,
) -> Value {
    match d {
        Dialect::V1 => {
            let mut t = json!({"id": id, "contextId": ctx,
                "status": {"state": format!("TASK_STATE_{}", state.to_uppercase().replace('-', "_"))}});
            if let Some(q) = status_text {
                t["status"]["message"] =
                    json!({"messageId": "s1", "role": "ROLE_AGENT", "parts": [{"text": q}]});
            }
            if let Some(a) = artifact {
                t["artifacts"] =
                    json!([{"artifactId": "a1", "name": "answer", "parts": [{"text": a}]}]);
            }
            json!({ "task": t })
        }
        Dialect::V03 => {
            let mut t =
                json!({"kind": "task", "id": id, "contextId": ctx, "status": {"state": state}});
            if let Some(q) = status_text {
                t["status"]["message"] = json!({"kind": "message", "messageId": "s1", "role": "agent", "parts": [{"kind": "text", "text": q}]});
            }
            if let Some(a) = artifact {
                t["artifacts"] = json!([{"artifactId": "a1", "name": "answer", "parts": [{"kind": "text", "text": a}]}]);
            }
            t
        }
    }
}

async fn rpc(
    State(s): State<Arc<Srv>>,
    headers: HeaderMap,
    axum::Json(req): axum::Json<Value>,
) -> Response {
    let id = req["id"].clone();
    let method = req["method"].as_str().unwrap_or("").to_string();
    let params = req["params"].clone();
    let version = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    s.requests
        .lock()
        .unwrap()
        .push(json!({"method": method, "params": params, "a2a_version": version}));
    let (send, get) = match s.dialect {
        Dialect::V1 => ("SendMessage", "GetTask"),
        Dialect::V03 => ("message/send", "tasks/get"),
    };
    if method != send && method != get {
        return rpc_error(&id, -32601, "Method not found");
    }
    if s.dialect == Dialect::V1 && version.as_deref() != Some("1.0") {
        return rpc_error(&id, -32009, "Version not supported");
    }
    let ok = |result: Value| {
        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
    };
    if method == get {
        let tid = params["id"].as_str().unwrap_or("").to_string();
        let mut tasks = s.tasks.lock().unwrap();
        let Some((ctx, first, polls)) = tasks.get_mut(&tid) else {
            return rpc_error(&id, -32001, "Task not found");
        };
        *polls += 1;
        let t = if *polls >= 2 {
            task(
                s.dialect,
                &tid,
                ctx,
                "completed",
                None,
                Some(&format!("Done: {first}")),
            )
        } else {
            task(s.dialect, &tid, ctx, "working", None, None)
        };
        let t = match s.dialect {
            Dialect::V1 => t["task"].clone(),
            Dialect::V03 => t,
        };
        return ok(t);
    }
    let msg = &params["message"];
    let role_ok = match s.dialect {
        Dialect::V1 => msg["role"] == "ROLE_USER" && msg["parts"][0].get("kind").is_none(),
        Dialect::V03 => {
            msg["role"] == "user" && msg["kind"] == "message" && msg["parts"][0]["kind"] == "text"
        }
    };
    if !role_ok || msg["messageId"].as_str().is_none_or(str::is_empty) {
        return rpc_error(
            &id,
            -32602,
            &format!("Invalid params: a {:?} user message expected", s.dialect),
        );
    }
    let text = msg["parts"][0]["text"].as_str().unwrap_or("").to_string();
    let n = s.seq.fetch_add(1, Ordering::Relaxed) + 1;
    let (tid, ctx) = (format!("task-{n}"), format!("ctx-{n}"));
    match s.script {
        Script::Answer => ok(task(
            s.dialect,
            &tid,
            &ctx,
            "completed",
            Some("done"),
            Some(&format!("Echo: {text}")),
        )),
        Script::Message => ok(match s.dialect {
            Dialect::V1 => {
                json!({"message": {"messageId": "m1", "role": "ROLE_AGENT", "contextId": ctx, "parts": [{"text": format!("Hello, {text}")}]}})
            }
            Dialect::V03 => {
                json!({"kind": "message", "messageId": "m1", "role": "agent", "contextId": ctx, "parts": [{"kind": "text", "text": format!("Hello, {text}")}]})
            }
        }),
        Script::Fail => ok(task(
            s.dialect,
            &tid,
            &ctx,
            "failed",
            Some("the reservations database is down"),
            None,
        )),
        Script::Slow => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            ok(task(s.dialect, &tid, &ctx, "completed", None, Some("late")))
        }
        Script::Working => {
            s.tasks
                .lock()
                .unwrap()
                .insert(tid.clone(), (ctx.clone(), text, 0));
            ok(task(s.dialect, &tid, &ctx, "working", None, None))
        }
        Script::Ask => match msg["taskId"].as_str() {
            None => {
                s.tasks
                    .lock()
                    .unwrap()
                    .insert(tid.clone(), (ctx.clone(), text, 0));
                ok(task(
                    s.dialect,
                    &tid,
                    &ctx,
                    "input-required",
                    Some("Which city?"),
                    None,
                ))
            }
            Some(t) => {
                let tasks = s.tasks.lock().unwrap();
                let Some((c, first, _)) = tasks.get(t) else {
                    return rpc_error(&id, -32001, "Task not found");
                };
                if msg["contextId"].as_str() != Some(c.as_str()) {
                    return rpc_error(&id, -32602, "contextId does not match the task");
                }
                ok(task(
                    s.dialect,
                    t,
                    c,
                    "completed",
                    None,
                    Some(&format!("Booked: {first}, in {text}")),
                ))
            }
        },
    }
}

fn fast() -> A2aOptions {
    A2aOptions {
        poll_interval: Duration::from_millis(20),
        timeout: Duration::from_secs(20),
        ..Default::default()
    }
}

fn agent(url: &str, opts: A2aOptions) -> RemoteAgent {
    RemoteAgent::new("booking", url, opts).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The client alone
// ---------------------------------------------------------------------------------------------

#[test]
fn client_v1_answers_at_once() {
    let s = serve(Dialect::V1, Card::V1, Script::Answer);
    let r = agent(&s.base, fast())
        .send_blocking("hi", None, None, None)
        .unwrap();
    assert_eq!(r.protocol, Protocol::V1);
    assert_eq!(r.state, Some(TaskState::Completed));
    assert_eq!(r.text, "Echo: hi");
    assert_eq!(
        (r.task_id.as_deref(), r.context_id.as_deref()),
        (Some("task-1"), Some("ctx-1"))
    );
    let req = &s.requests()[0];
    assert_eq!(req["method"], "SendMessage");
    assert_eq!(req["a2a_version"], "1.0");
    assert!(req["params"]["message"].get("taskId").is_none());
}

#[test]
fn client_v03_answers_at_once() {
    let s = serve(Dialect::V03, Card::V03, Script::Answer);
    let r = agent(&s.base, fast())
        .send_blocking("hi", None, None, None)
        .unwrap();
    assert_eq!(
        (r.protocol, r.state, r.text.as_str()),
        (Protocol::V03, Some(TaskState::Completed), "Echo: hi")
    );
    let req = &s.requests()[0];
    assert_eq!(req["method"], "message/send");
    assert_eq!(req["a2a_version"], Value::Null);
    assert_eq!(req["params"]["configuration"]["blocking"], true);
}

#[test]
fn client_direct_message_replies() {
    for (d, c) in [(Dialect::V1, Card::V1), (Dialect::V03, Card::V03)] {
        let s = serve(d, c, Script::Message);
        let r = agent(&s.base, fast())
            .send_blocking("Ana", None, None, None)
            .unwrap();
        assert_eq!((r.state, r.text.as_str()), (None, "Hello, Ana"), "{d:?}");
    }
}

#[test]
fn client_input_required_round_trip_both_dialects() {
    for (d, c) in [(Dialect::V1, Card::V1), (Dialect::V03, Card::V03)] {
        let s = serve(d, c, Script::Ask);
        let a = agent(&s.base, fast());
        let q = a
            .send_blocking("A table for two", None, None, None)
            .unwrap();
        assert!(q.needs_input(), "{d:?}: {q:?}");
        assert_eq!(q.state, Some(TaskState::InputRequired));
        assert_eq!(q.text, "Which city?");
        let (tid, ctx) = (q.task_id.clone().unwrap(), q.context_id.clone().unwrap());
        let r = a
            .send_blocking("Lisbon", Some(&tid), Some(&ctx), None)
            .unwrap();
        assert_eq!(
            (r.state, r.text.as_str()),
            (
                Some(TaskState::Completed),
                "Booked: A table for two, in Lisbon"
            ),
            "{d:?}"
        );
        let sent = &s.requests()[1]["params"]["message"];
        assert_eq!(
            (sent["taskId"].as_str(), sent["contextId"].as_str()),
            (Some(tid.as_str()), Some(ctx.as_str())),
            "{d:?}"
        );
        // A wrong context id is refused by the server and reported with its code.
        let e = a
            .send_blocking("Porto", Some(&tid), Some("ctx-other"), None)
            .unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Rpc { code: -32602, .. }), "{e}");
    }
}

#[test]
fn client_failed_task_is_an_error_with_the_agents_message() {
    for (d, c) in [(Dialect::V1, Card::V1), (Dialect::V03, Card::V03)] {
        let s = serve(d, c, Script::Fail);
        let e = agent(&s.base, fast())
            .send_blocking("hi", None, None, None)
            .unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::Task {
                state: TaskState::Failed,
                message: "the reservations database is down".into()
            }
        );
        assert_eq!(
            e.to_string(),
            format!(
                "remote agent `booking` ({}): the task failed: the reservations database is down",
                s.base
            )
        );
    }
}

#[test]
fn client_working_task_is_polled_until_done() {
    for (d, c) in [(Dialect::V1, Card::V1), (Dialect::V03, Card::V03)] {
        let s = serve(d, c, Script::Working);
        let r = agent(&s.base, fast())
            .send_blocking("job", None, None, None)
            .unwrap();
        assert_eq!(
            (r.state, r.text.as_str()),
            (Some(TaskState::Completed), "Done: job"),
            "{d:?}"
        );
        let want = match d {
            Dialect::V1 => ["SendMessage", "GetTask", "GetTask"],
            Dialect::V03 => ["message/send", "tasks/get", "tasks/get"],
        };
        assert_eq!(s.methods(), want);
        assert_eq!(s.requests()[1]["params"]["id"], "task-1");
    }
}

#[test]
fn client_slow_agent_times_out() {
    let s = serve(Dialect::V1, Card::V1, Script::Slow);
    let opts = A2aOptions {
        timeout: Duration::from_millis(300),
        ..fast()
    };
    let t0 = Instant::now();
    let e = agent(&s.base, opts)
        .send_blocking("hi", None, None, None)
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(e.kind, ErrorKind::Timeout(Duration::from_millis(300)));
    assert!(e.to_string().contains("no answer within 0.3 s"), "{e}");
}

#[test]
fn client_stop_drops_the_request() {
    let s = serve(Dialect::V03, Card::V03, Script::Slow);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        s2.store(true, Ordering::Relaxed);
    });
    let t0 = Instant::now();
    let e = agent(&s.base, fast())
        .send_blocking("hi", None, None, Some(&stop))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Stopped);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}

#[test]
fn client_retries_once_in_the_other_dialect() {
    // The card claims 1.0, the server speaks 0.3: SendMessage gets -32601, message/send works,
    // and the client keeps speaking 0.3.
    let s = serve(Dialect::V03, Card::V1, Script::Answer);
    let a = agent(&s.base, fast());
    let r = a.send_blocking("one", None, None, None).unwrap();
    assert_eq!((r.protocol, r.text.as_str()), (Protocol::V03, "Echo: one"));
    a.send_blocking("two", None, None, None).unwrap();
    assert_eq!(s.methods(), ["SendMessage", "message/send", "message/send"]);
    // The other way round.
    let s = serve(Dialect::V1, Card::V03, Script::Answer);
    let r = agent(&s.base, fast())
        .send_blocking("x", None, None, None)
        .unwrap();
    assert_eq!(r.protocol, Protocol::V1);
    assert_eq!(s.methods(), ["message/send", "SendMessage"]);
}

#[test]
fn client_reads_old_and_direct_card_urls() {
    // A 0.2 agent: the card only at /.well-known/agent.json.
    let s = serve(Dialect::V03, Card::Legacy, Script::Answer);
    let r = agent(&s.base, fast())
        .send_blocking("x", None, None, None)
        .unwrap();
    assert_eq!((r.protocol, r.text.as_str()), (Protocol::V03, "Echo: x"));
    // A url that names the card itself.
    let s = serve(Dialect::V1, Card::V1, Script::Answer);
    let r = agent(&format!("{}/cards/booking.json", s.base), fast())
        .send_blocking("y", None, None, None)
        .unwrap();
    assert_eq!((r.protocol, r.text.as_str()), (Protocol::V1, "Echo: y"));
}

#[test]
fn client_errors_are_clear() {
    // Connection refused.
    let url = closed_port_url();
    let e = agent(&url, fast())
        .send_blocking("x", None, None, None)
        .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Connect(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("remote agent `booking` ({url}): cannot connect")),
        "{msg}"
    );
    assert!(msg.to_lowercase().contains("refused"), "{msg}");
    // No card anywhere.
    let s = serve(Dialect::V1, Card::V1, Script::Answer);
    let e = agent(&format!("{}/nowhere", s.base), fast())
        .send_blocking("x", None, None, None)
        .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::BadCard(_)), "{e}");
    assert!(
        e.to_string().contains("no agent card found") && e.to_string().contains("HTTP 404"),
        "{e}"
    );
    // Over the size limit.
    let e = agent(
        &s.base,
        A2aOptions {
            max_response_bytes: 64,
            ..fast()
        },
    )
    .send_blocking("x", None, None, None)
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::TooLarge(64));
}

// ---------------------------------------------------------------------------------------------
// sherma runs
// ---------------------------------------------------------------------------------------------

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/a2a")
        .join(name)
}

/// `tests/fixtures/a2a/<name>` with its sub-agent URL set to `url`, written to a fresh temp dir
/// (kept: the run reads it after this returns).
fn agent_file(name: &str, url: &str) -> PathBuf {
    let dir = TempDir::new("a2a").keep();
    let text = std::fs::read_to_string(fixture(name))
        .unwrap()
        .replace("__A2A_URL__", url);
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn start(path: &Path, input: &str, script: Option<PathBuf>, a2a: A2aOptions) -> RunSession {
    let req = RunRequest {
        llm_script: script,
        ..Default::default()
    };
    start_req(path, input, req, a2a)
}

/// [`start`] with more of the request (a recording, a replay).
fn start_req(path: &Path, input: &str, mut req: RunRequest, a2a: A2aOptions) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(path));
    req.input = Some(input.to_string());
    // The remote agents are fakes on 127.0.0.1: these runs may use the network (scripted and
    // replayed runs are offline otherwise, see offline.rs).
    req.allow_network = true;
    let opts = ShermaOptions {
        a2a,
        ..Default::default()
    };
    let machine = launch::machine_for(doc.clone(), &req, opts).unwrap_or_else(|e| panic!("{e}"));
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.provider = launch::provider_for(&doc, &req).unwrap_or_else(|e| panic!("{e}"));
    RunSession::new(machine, json!(input), options)
}

/// The `a2a:<id>` exchanges: (arguments, result, error).
fn exchanges(events: &[Event]) -> Vec<(Value, Value, Option<String>)> {
    let mut out = Vec::new();
    let mut args: HashMap<String, Value> = HashMap::new();
    for e in events {
        match &e.body {
            EventBody::ToolCall { call, .. } if call.name.starts_with("a2a:") => {
                args.insert(call.id.clone(), call.args.clone());
            }
            EventBody::ToolResult {
                id,
                name,
                result,
                error,
                ..
            } if name.starts_with("a2a:") => {
                out.push((
                    args.remove(id).expect("a tool_call before its result"),
                    result.clone(),
                    error.clone(),
                ));
            }
            _ => {}
        }
    }
    out
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn call_agent_round_trip(dialect: Dialect, card: Card) {
    let s = serve(dialect, card, Script::Ask);
    let path = agent_file("call_agent.yaml", &s.base);
    let mut run = start(&path, "A table for two", None, fast());
    run.run();
    let p = pending(&run);
    assert_eq!(
        (p.node.as_str(), p.prompt.as_str()),
        ("book", "Which city?")
    );
    assert_eq!(p.value, json!("Which city?"));
    run.answer(&p.id, json!("Lisbon")).unwrap();
    run.run();
    assert_eq!(completed(&run), json!("Booked: A table for two, in Lisbon"));
    assert_eq!(
        messages(&run.state()),
        pairs(&[
            ("human", "A table for two"),
            ("ai", "Booked: A table for two, in Lisbon")
        ])
    );
    // The answer went to the same task, in the same context.
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    let first = &reqs[0]["params"]["message"];
    assert!(first.get("taskId").is_none() && first.get("contextId").is_none());
    assert_eq!(reqs[1]["params"]["message"]["taskId"], "task-1");
    assert_eq!(reqs[1]["params"]["message"]["contextId"], "ctx-1");
    // The debugger sees both exchanges and the interrupt.
    let ev = run.events();
    let x = exchanges(&ev);
    assert_eq!(x.len(), 2, "{}", dump(&run));
    let proto = if dialect == Dialect::V1 { "1.0" } else { "0.3" };
    assert_eq!(x[0].0["message"], "A table for two");
    assert_eq!(x[0].0["url"], s.base.as_str());
    assert_eq!(x[0].1["state"], "input-required");
    assert_eq!(x[0].1["protocol"], proto);
    assert_eq!(x[0].1["text"], "Which city?");
    assert_eq!(
        (x[1].0["task_id"].as_str(), x[1].0["context_id"].as_str()),
        (Some("task-1"), Some("ctx-1"))
    );
    assert_eq!(x[1].1["state"], "completed");
    assert!(ev.iter().any(|e| matches!(&e.body, EventBody::Interrupt { node, prompt, .. } if node == "book" && prompt == "Which city?")));
}

#[test]
fn sherma_call_agent_remote_v1_input_required_round_trip() {
    call_agent_round_trip(Dialect::V1, Card::V1);
}

#[test]
fn sherma_call_agent_remote_v03_input_required_round_trip() {
    call_agent_round_trip(Dialect::V03, Card::V03);
}

#[test]
fn sherma_call_agent_remote_answers_at_once() {
    let s = serve(Dialect::V03, Card::V03, Script::Answer);
    let path = agent_file("call_agent.yaml", &s.base);
    let mut run = start(&path, "hello", None, fast());
    run.run();
    assert_eq!(completed(&run), json!("Echo: hello"));
    assert_eq!(
        messages(&run.state()),
        pairs(&[("human", "hello"), ("ai", "Echo: hello")])
    );
}

/// Record a run whose remote agent asks a question, then replay it: the replay gives the same
/// exchanges, interrupt and answer without one request to the agent, even when it is gone.
#[test]
fn a2a_exchanges_are_recorded_and_replayed_without_the_agent() {
    let s = serve(Dialect::V1, Card::V1, Script::Ask);
    let path = agent_file("call_agent.yaml", &s.base);
    let cassette = path.with_file_name("run.cassette.json");
    let play = |req: RunRequest| {
        let mut run = start_req(&path, "A table for two", req, fast());
        run.run();
        let p = pending(&run);
        assert_eq!(p.prompt, "Which city?");
        run.answer(&p.id, json!("Lisbon")).unwrap();
        run.run();
        assert_eq!(completed(&run), json!("Booked: A table for two, in Lisbon"));
        exchanges(&run.events())
    };
    let recorded = play(RunRequest { record: Some(cassette.clone()), ..Default::default() });
    assert_eq!(s.requests().len(), 2);
    let text = std::fs::read_to_string(&cassette).unwrap();
    let c: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = c["exchanges"].as_array().unwrap().iter().filter_map(|x| x["name"].as_str()).collect();
    assert_eq!(names, ["a2a:booking", "a2a:booking"], "{text}");
    // Strict: any difference from the recording would fail the call.
    let strict = RunRequest { replay: Some(cassette.clone()), replay_strict: true, ..Default::default() };
    let replayed = play(strict);
    assert_eq!(replayed, recorded);
    assert_eq!(s.requests().len(), 2, "the replay sent requests to the agent");
    // With the agent gone (its URL now a closed port) the replay still answers.
    let gone = std::fs::read_to_string(&path).unwrap().replace(&s.base, &closed_port_url());
    std::fs::write(&path, gone).unwrap();
    let offline = play(RunRequest { replay: Some(cassette.clone()), ..Default::default() });
    assert_eq!(offline.iter().map(|x| x.1.clone()).collect::<Vec<_>>(), recorded.iter().map(|x| x.1.clone()).collect::<Vec<_>>());
    // A failed exchange is recorded and replayed as the same node error.
    let failing = agent_file("call_agent.yaml", &closed_port_url());
    let fail_cassette = failing.with_file_name("fail.cassette.json");
    let fail = |req: RunRequest| {
        let mut run = start_req(&failing, "x", req, fast());
        run.run();
        run.failure().map(|f| f.1.clone()).unwrap_or_else(|| panic!("did not fail:\n{}", dump(&run)))
    };
    let live = fail(RunRequest { record: Some(fail_cassette.clone()), ..Default::default() });
    assert!(live.contains("cannot connect"), "{live}");
    assert_eq!(fail(RunRequest { replay: Some(fail_cassette), replay_strict: true, ..Default::default() }), live);
}

#[test]
fn sherma_remote_wait_survives_a_checkpoint_and_rewind() {
    let s = serve(Dialect::V1, Card::V1, Script::Ask);
    let path = agent_file("call_agent.yaml", &s.base);
    let mut run = start(&path, "A table for two", None, fast());
    run.run();
    let p = pending(&run);
    // A state edit while waiting puts the waiting machine into the newest checkpoint; going
    // back to it asks the same question again without a new request.
    run.edit_state("note", json!("edited")).unwrap();
    run.rewind(0).unwrap();
    run.run();
    let p2 = pending(&run);
    assert_eq!(
        (p2.node.as_str(), p2.prompt.as_str()),
        (p.node.as_str(), "Which city?")
    );
    assert_eq!(s.requests().len(), 1);
    run.answer(&p2.id, json!({"content": "Porto"})).unwrap();
    run.run();
    assert_eq!(completed(&run), json!("Booked: A table for two, in Porto"));
    assert_eq!(run.state()["note"], "edited");
    assert_eq!(s.requests()[1]["params"]["message"]["taskId"], "task-1");
}

#[test]
fn sherma_remote_sub_agent_as_a_tool_with_input_required() {
    for (d, c) in [(Dialect::V1, Card::V1), (Dialect::V03, Card::V03)] {
        let s = serve(d, c, Script::Ask);
        let path = agent_file("as_tool.yaml", &s.base);
        let mut run = start(
            &path,
            "Book me a table",
            Some(fixture("as_tool.replies.yaml")),
            fast(),
        );
        run.run();
        let p = pending(&run);
        assert_eq!(
            (p.node.as_str(), p.prompt.as_str()),
            ("planner_tools", "Which city?"),
            "{d:?}"
        );
        run.answer(&p.id, json!("Lisbon")).unwrap();
        run.run();
        assert_eq!(completed(&run), json!("Your table is booked."));
        let st = run.state();
        let msgs = st["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 4, "{st}");
        assert_eq!(msgs[1]["tool_calls"][0]["name"], "booking");
        assert_eq!(msgs[2]["type"], "tool");
        assert_eq!(msgs[2]["name"], "booking");
        assert_eq!(msgs[2]["content"], "Booked: A table for two, in Lisbon");
        assert_eq!(msgs[3]["content"], "Your table is booked.");
        // The model's tool call is reported once, its result once (after the answer).
        let ev = run.events();
        let calls = ev
            .iter()
            .filter(
                |e| matches!(&e.body, EventBody::ToolCall { call, .. } if call.name == "booking"),
            )
            .count();
        let results: Vec<&Value> = ev
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::ToolResult { name, result, .. } if name == "booking" => Some(result),
                _ => None,
            })
            .collect();
        assert_eq!(
            (calls, results),
            (1, vec![&json!("Booked: A table for two, in Lisbon")])
        );
        assert_eq!(exchanges(&ev).len(), 2);
        assert_eq!(s.requests()[1]["params"]["message"]["taskId"], "task-1");
    }
}

#[test]
fn sherma_remote_failures_are_clear_node_errors() {
    // Connection refused.
    let url = closed_port_url();
    let path = agent_file("call_agent.yaml", &url);
    let mut run = start(&path, "hi", None, fast());
    run.run();
    let (node, message) = run
        .failure()
        .cloned()
        .unwrap_or_else(|| panic!("not failed: {:?}\n{}", run.status(), dump(&run)));
    assert_eq!(node.as_deref(), Some("book"));
    assert!(
        message.starts_with(&format!(
            "node `book`: remote agent `booking` ({url}): cannot connect"
        )),
        "{message}"
    );
    let x = exchanges(&run.events());
    assert_eq!(x.len(), 1);
    assert!(
        x[0].2
            .as_deref()
            .is_some_and(|e| e.contains("cannot connect"))
    );
    // A failed task: the agent's message.
    let s = serve(Dialect::V1, Card::V1, Script::Fail);
    let path = agent_file("call_agent.yaml", &s.base);
    let mut run = start(&path, "hi", None, fast());
    run.run();
    let (_, message) = run.failure().cloned().expect("failed");
    assert_eq!(
        message,
        format!(
            "node `book`: remote agent `booking` ({}): the task failed: the reservations database is down",
            s.base
        )
    );
    // A timeout, as configured.
    let s = serve(Dialect::V03, Card::V03, Script::Slow);
    let path = agent_file("call_agent.yaml", &s.base);
    let mut run = start(
        &path,
        "hi",
        None,
        A2aOptions {
            timeout: Duration::from_millis(200),
            ..fast()
        },
    );
    run.run();
    let (_, message) = run.failure().cloned().expect("failed");
    assert!(message.contains("no answer within 0.2 s"), "{message}");
}

#[test]
fn sherma_stop_during_a_remote_call() {
    let s = serve(Dialect::V1, Card::V1, Script::Slow);
    let path = agent_file("call_agent.yaml", &s.base);
    let mut run = start(&path, "hi", None, fast());
    let stop = run.stop_handle();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        stop.store(true, Ordering::Relaxed);
    });
    let t0 = Instant::now();
    run.run();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(
        matches!(
            run.status(),
            Status::Finished {
                status: RunStatus::Stopped,
                ..
            }
        ),
        "{:?}",
        run.status()
    );
}
