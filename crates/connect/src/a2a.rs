//! A small A2A (Agent2Agent) client for remote sherma sub-agents, speaking both protocol 1.0
//! and the still-common 0.3 (reference/lllm-skills-a2a-mcp.md §3).
//!
//! - **Card**: `GET <url>/.well-known/agent-card.json`, falling back to
//!   `/.well-known/agent.json` (0.2); a `url` that already names a `.json` file is the card.
//! - **Dialect** from the card: `supportedInterfaces` → 1.0 (`SendMessage` / `GetTask`, header
//!   `A2A-Version: 1.0`, ProtoJSON enums, results wrapped as `{task}` / `{message}`); a top-level
//!   `url` / `protocolVersion` → 0.3 (`message/send` / `tasks/get`, kebab-case enums, results
//!   tagged with `kind`). A send answered with `-32601` (method not found) or `-32009` (version
//!   not supported) is retried once in the other dialect, which is then kept.
//! - **Send** is blocking (the server answers once the task is terminal or interrupted); a
//!   task still `submitted` / `working` is polled with `GetTask` / `tasks/get`.
//! - **Output**: the text and data parts of the task's artifacts, else its status message, else
//!   the last agent message of its history; a direct `Message` reply gives its parts. Parts of one
//!   message are joined with spaces (as sherma does), parts and artifacts of a task with newlines.
//! - `input-required` / `auth-required` come back as a [`Reply`] whose [`Reply::text`] is the
//!   agent's question; the answer goes out with the same `taskId` and `contextId`.
//!   `failed` / `canceled` / `rejected` are errors carrying the agent's message.
//! - Bounded: connect timeout, an overall deadline per exchange (card + send + polls), a
//!   response size limit. Every error names the sub-agent and its URL.
//!
//! The client is async (reqwest); the engine calls it through [`RemoteAgent::send_blocking`],
//! which runs it on the shared runtime (`crate::rt`) and drops the request when the run stops.

use serde_json::{Map, Value, json};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Limits of the A2A client.
#[derive(Clone, Debug)]
pub struct A2aOptions {
    /// Opening a TCP connection.
    pub connect_timeout: Duration,
    /// One whole exchange: card, send and any polling.
    pub timeout: Duration,
    /// The largest response body accepted.
    pub max_response_bytes: usize,
    /// Between two `GetTask` polls of a task still working.
    pub poll_interval: Duration,
}

impl Default for A2aOptions {
    fn default() -> Self {
        A2aOptions {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(120),
            max_response_bytes: 8 * 1024 * 1024,
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// The two JSON-RPC dialects of A2A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// A2A 1.0: `SendMessage`, `GetTask`, `A2A-Version: 1.0`.
    V1,
    /// A2A 0.3 (and 0.2): `message/send`, `tasks/get`.
    V03,
}

impl Protocol {
    pub fn label(self) -> &'static str {
        match self {
            Protocol::V1 => "1.0",
            Protocol::V03 => "0.3",
        }
    }
    fn other(self) -> Protocol {
        match self {
            Protocol::V1 => Protocol::V03,
            Protocol::V03 => Protocol::V1,
        }
    }
    fn send_method(self) -> &'static str {
        match self {
            Protocol::V1 => "SendMessage",
            Protocol::V03 => "message/send",
        }
    }
    fn get_method(self) -> &'static str {
        match self {
            Protocol::V1 => "GetTask",
            Protocol::V03 => "tasks/get",
        }
    }
}

/// Where and how to talk to a remote agent, read from its card.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    /// The card's URL.
    pub card_url: String,
    /// The JSON-RPC endpoint.
    pub url: String,
    pub protocol: Protocol,
    /// 1.0 interfaces may name a tenant, sent with every request.
    pub tenant: Option<String>,
    pub name: String,
    pub description: String,
}

/// A task's state, from either spelling (`input-required`, `TASK_STATE_INPUT_REQUIRED`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Failed,
    Canceled,
    Rejected,
    /// Anything else (`unspecified`, `unknown`, a typo), as sent.
    Other(String),
}

impl TaskState {
    pub fn parse(s: &str) -> TaskState {
        let norm = s
            .trim()
            .trim_start_matches("TASK_STATE_")
            .to_ascii_lowercase()
            .replace('_', "-");
        match norm.as_str() {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "input-required" => TaskState::InputRequired,
            "auth-required" => TaskState::AuthRequired,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "canceled" | "cancelled" => TaskState::Canceled,
            "rejected" => TaskState::Rejected,
            _ => TaskState::Other(s.to_string()),
        }
    }
    /// The 0.3 spelling (`input-required`), used in events and messages.
    pub fn as_str(&self) -> &str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::AuthRequired => "auth-required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
            TaskState::Rejected => "rejected",
            TaskState::Other(s) => s,
        }
    }
    /// The task waits for the client (`input-required`, `auth-required`).
    pub fn is_interrupted(&self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
    fn is_running(&self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }
}

/// A remote agent's answer that the run can use: a completed task, a direct message, or a task
/// waiting for input.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The dialect that was spoken.
    pub protocol: Protocol,
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    /// The task's state; `None` for a direct `Message` reply.
    pub state: Option<TaskState>,
    /// The output text, or the agent's question when [`Reply::needs_input`].
    pub text: String,
    /// The last `result` object received.
    pub raw: Value,
}

impl Reply {
    /// The task waits for an answer (`input-required` / `auth-required`).
    pub fn needs_input(&self) -> bool {
        self.state.as_ref().is_some_and(TaskState::is_interrupted)
    }
}

/// What went wrong, without the agent's name (see [`A2aError`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorKind {
    /// The connection could not be made (refused, DNS, TLS, reset).
    Connect(String),
    /// No answer within the overall timeout.
    Timeout(Duration),
    /// The run was stopped; the request was dropped.
    Stopped,
    /// A non-success HTTP status without a JSON-RPC error in the body.
    Http {
        url: String,
        status: u16,
        body: String,
    },
    /// A JSON-RPC error object.
    Rpc {
        method: String,
        code: i64,
        message: String,
    },
    /// The agent card could not be found or read.
    BadCard(String),
    /// A response that is not what A2A promises.
    BadResponse(String),
    /// A response body over the size limit.
    TooLarge(usize),
    /// The task ended failed / canceled / rejected; `message` is the agent's.
    Task { state: TaskState, message: String },
}

/// An A2A failure, naming the sub-agent and its URL.
#[derive(Clone, Debug, PartialEq)]
pub struct A2aError {
    pub agent: String,
    pub url: String,
    pub kind: ErrorKind,
}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "remote agent `{}` ({}): ", self.agent, self.url)?;
        match &self.kind {
            ErrorKind::Connect(e) => write!(
                f,
                "cannot connect: {e}; is the agent running at that address?"
            ),
            ErrorKind::Timeout(d) => write!(
                f,
                "no answer within {} s (the A2A timeout)",
                d.as_secs_f64()
            ),
            ErrorKind::Stopped => write!(f, "the run was stopped; the request was dropped"),
            ErrorKind::Http { url, status, body } => {
                write!(f, "HTTP {status} from {url}")?;
                if !body.trim().is_empty() {
                    write!(f, ": {}", snippet(body, 300))?;
                }
                Ok(())
            }
            ErrorKind::Rpc {
                method,
                code,
                message,
            } => {
                write!(f, "JSON-RPC error {code} for `{method}`: {message}")?;
                match code {
                    -32601 => write!(
                        f,
                        " (the server knows neither A2A 1.0 `SendMessage` nor 0.3 `message/send`?)"
                    ),
                    -32009 => write!(f, " (A2A version not supported)"),
                    -32001 => write!(f, " (task not found: it may have expired on the server)"),
                    _ => Ok(()),
                }
            }
            ErrorKind::BadCard(e) => write!(f, "bad agent card: {e}"),
            ErrorKind::BadResponse(e) => write!(f, "bad response: {e}"),
            ErrorKind::TooLarge(n) => write!(
                f,
                "the response is larger than {n} bytes (the A2A size limit)"
            ),
            ErrorKind::Task { state, message } => {
                let how = match state {
                    TaskState::Failed => "the task failed".to_string(),
                    TaskState::Canceled => "the task was canceled".to_string(),
                    TaskState::Rejected => "the agent rejected the task".to_string(),
                    other => format!("the task ended in state `{}`", other.as_str()),
                };
                if message.trim().is_empty() {
                    write!(f, "{how} (no message)")
                } else {
                    write!(f, "{how}: {message}")
                }
            }
        }
    }
}

impl std::error::Error for A2aError {}

fn snippet(s: &str, n: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

// ---------------------------------------------------------------------------------------------
// Cards
// ---------------------------------------------------------------------------------------------

/// The URLs to try for the card of an agent declared at `url`, in order.
pub fn card_urls(url: &str) -> Vec<String> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    if path.ends_with(".json") {
        return vec![url.to_string()];
    }
    let base = url.trim_end_matches('/');
    vec![
        format!("{base}/.well-known/agent-card.json"),
        format!("{base}/.well-known/agent.json"),
    ]
}

/// Read an agent card: its JSON-RPC endpoint and dialect (see the module docs). Relative
/// interface URLs resolve against `card_url`.
pub fn parse_card(card: &Value, card_url: &str) -> Result<Endpoint, String> {
    let Some(obj) = card.as_object() else {
        return Err(format!("the card at {card_url} is not a JSON object"));
    };
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let description = obj
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let resolve = |u: &str| -> Result<String, String> {
        let base =
            reqwest::Url::parse(card_url).map_err(|e| format!("bad card URL {card_url}: {e}"))?;
        base.join(u)
            .map(|u| u.to_string())
            .map_err(|e| format!("bad interface URL `{u}` in the card: {e}"))
    };
    let jsonrpc = |b: Option<&Value>| {
        b.and_then(Value::as_str)
            .is_none_or(|s| s.eq_ignore_ascii_case("JSONRPC"))
    };
    if let Some(list) = obj.get("supportedInterfaces") {
        let Some(list) = list.as_array() else {
            return Err("`supportedInterfaces` is not a list".into());
        };
        // The first JSON-RPC interface; a 1.0 one wins over a 0.3 one listed for compatibility.
        let rpc: Vec<&Map<String, Value>> = list
            .iter()
            .filter_map(Value::as_object)
            .filter(|i| jsonrpc(i.get("protocolBinding").or(i.get("transport"))))
            .filter(|i| {
                i.get("url")
                    .and_then(Value::as_str)
                    .is_some_and(|u| !u.is_empty())
            })
            .collect();
        let version = |i: &Map<String, Value>| {
            i.get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("1.0")
                .to_string()
        };
        let chosen = rpc
            .iter()
            .find(|i| !version(i).starts_with("0."))
            .or(rpc.first());
        let Some(i) = chosen else {
            let bindings: Vec<String> = list
                .iter()
                .filter_map(|i| {
                    i.get("protocolBinding")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect();
            return Err(if bindings.is_empty() {
                "`supportedInterfaces` lists no interface with a `url`".into()
            } else {
                format!(
                    "no JSONRPC interface (the card offers {}); only JSON-RPC is supported",
                    bindings.join(", ")
                )
            });
        };
        let protocol = if version(i).starts_with("0.") {
            Protocol::V03
        } else {
            Protocol::V1
        };
        let tenant = i
            .get("tenant")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        let url = resolve(i.get("url").and_then(Value::as_str).unwrap_or(""))?;
        return Ok(Endpoint {
            card_url: card_url.to_string(),
            url,
            protocol,
            tenant,
            name,
            description,
        });
    }
    if obj.contains_key("url") || obj.contains_key("protocolVersion") {
        let preferred = obj.get("preferredTransport");
        let url = if jsonrpc(preferred) {
            obj.get("url")
                .and_then(Value::as_str)
                .filter(|u| !u.is_empty())
                .map(str::to_string)
        } else {
            None
        };
        let url = url.or_else(|| {
            obj.get("additionalInterfaces")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|i| {
                    i.get("transport")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.eq_ignore_ascii_case("JSONRPC"))
                })
                .find_map(|i| i.get("url").and_then(Value::as_str).map(str::to_string))
        });
        let Some(url) = url else {
            return Err(match preferred.and_then(Value::as_str) {
                Some(t) if !t.eq_ignore_ascii_case("JSONRPC") => {
                    format!(
                        "the agent prefers transport `{t}` and lists no JSONRPC interface; only JSON-RPC is supported"
                    )
                }
                _ => "the card has no endpoint `url`".into(),
            });
        };
        let url = resolve(&url)?;
        return Ok(Endpoint {
            card_url: card_url.to_string(),
            url,
            protocol: Protocol::V03,
            tenant: None,
            name,
            description,
        });
    }
    Err("neither `supportedInterfaces` (A2A 1.0) nor `url` (A2A 0.3) is present".into())
}

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

/// The text of one part (either dialect): text as is, data as JSON, a file as its URL or name.
fn part_text(p: &Value) -> Option<String> {
    if let Some(t) = p.get("text").and_then(Value::as_str) {
        return Some(t.to_string());
    }
    if let Some(d) = p.get("data") {
        return Some(match d {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    // 1.0 url / raw parts, 0.3 file parts.
    if let Some(u) = p.get("url").and_then(Value::as_str) {
        return Some(u.to_string());
    }
    let file = p.get("file");
    if let Some(u) = file.and_then(|f| f.get("uri")).and_then(Value::as_str) {
        return Some(u.to_string());
    }
    if p.get("raw").is_some() || file.is_some() {
        let name = p
            .get("filename")
            .or_else(|| file.and_then(|f| f.get("name")))
            .and_then(Value::as_str)
            .unwrap_or("unnamed");
        return Some(format!("[file {name}]"));
    }
    None
}

fn parts_text(parts: Option<&Value>, sep: &str) -> String {
    parts
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(part_text)
                .collect::<Vec<_>>()
                .join(sep)
        })
        .unwrap_or_default()
}

fn message_text(m: &Value) -> String {
    parts_text(m.get("parts"), " ")
}

fn is_agent_role(r: Option<&Value>) -> bool {
    r.and_then(Value::as_str)
        .is_some_and(|r| matches!(r, "agent" | "ROLE_AGENT"))
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Parse a `SendMessage` / `message/send` / `GetTask` result (either dialect) into a reply of
/// any state, running ones included. `Err` says what is wrong with it.
pub fn parse_result(result: &Value, protocol: Protocol) -> Result<Reply, String> {
    let kind = result.get("kind").and_then(Value::as_str);
    let (task, message) = if let Some(t) = result.get("task").filter(|t| t.is_object()) {
        (Some(t), None)
    } else if let Some(m) = result.get("message").filter(|m| m.get("parts").is_some()) {
        (None, Some(m))
    } else if kind == Some("task") || (result.get("status").is_some() && result.get("id").is_some())
    {
        (Some(result), None)
    } else if kind == Some("message") || result.get("parts").is_some() {
        (None, Some(result))
    } else {
        return Err(format!(
            "expected a Task or a Message, got {}",
            snippet(&result.to_string(), 200)
        ));
    };
    if let Some(m) = message {
        return Ok(Reply {
            protocol,
            task_id: str_field(m, "taskId"),
            context_id: str_field(m, "contextId"),
            state: None,
            text: message_text(m),
            raw: result.clone(),
        });
    }
    let t = task.expect("a task when not a message");
    let status = t.get("status");
    let state = status
        .and_then(|s| s.get("state"))
        .and_then(Value::as_str)
        .map(TaskState::parse)
        .ok_or_else(|| "the task has no `status.state`".to_string())?;
    let status_text = status
        .and_then(|s| s.get("message"))
        .map(message_text)
        .unwrap_or_default();
    let text = if state == TaskState::Completed {
        let artifacts: Vec<String> = t
            .get("artifacts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| parts_text(a.get("parts"), "\n"))
            .filter(|s| !s.is_empty())
            .collect();
        if !artifacts.is_empty() {
            artifacts.join("\n")
        } else if !status_text.is_empty() {
            status_text
        } else {
            t.get("history")
                .and_then(Value::as_array)
                .and_then(|h| h.iter().rev().find(|m| is_agent_role(m.get("role"))))
                .map(message_text)
                .unwrap_or_default()
        }
    } else {
        status_text
    };
    Ok(Reply {
        protocol,
        task_id: str_field(t, "id"),
        context_id: str_field(t, "contextId"),
        state: Some(state),
        text,
        raw: result.clone(),
    })
}

/// The `params` of a send in `protocol`: one user text message, continuing `task_id` /
/// `context_id` when given.
pub fn send_params(
    protocol: Protocol,
    text: &str,
    message_id: &str,
    task_id: Option<&str>,
    context_id: Option<&str>,
    tenant: Option<&str>,
) -> Value {
    let accepted = json!(["text/plain", "application/json"]);
    let mut msg = Map::new();
    match protocol {
        Protocol::V1 => {
            msg.insert("messageId".into(), message_id.into());
            msg.insert("role".into(), "ROLE_USER".into());
            msg.insert("parts".into(), json!([{ "text": text }]));
        }
        Protocol::V03 => {
            msg.insert("kind".into(), "message".into());
            msg.insert("messageId".into(), message_id.into());
            msg.insert("role".into(), "user".into());
            msg.insert("parts".into(), json!([{ "kind": "text", "text": text }]));
        }
    }
    if let Some(c) = context_id {
        msg.insert("contextId".into(), c.into());
    }
    if let Some(t) = task_id {
        msg.insert("taskId".into(), t.into());
    }
    let mut params = Map::new();
    params.insert("message".into(), Value::Object(msg));
    match protocol {
        Protocol::V1 => {
            params.insert(
                "configuration".into(),
                json!({"acceptedOutputModes": accepted, "returnImmediately": false}),
            );
            if let Some(t) = tenant {
                params.insert("tenant".into(), t.into());
            }
        }
        Protocol::V03 => {
            params.insert(
                "configuration".into(),
                json!({"acceptedOutputModes": accepted, "blocking": true}),
            );
        }
    }
    Value::Object(params)
}

/// A fresh message id, shaped like a UUID v4.
fn new_message_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut x = (t as u64)
        ^ ((std::process::id() as u64) << 32)
        ^ SEQ
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        // splitmix64
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let (a, b) = (next(), next());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

/// One remote sub-agent. Cheap to clone; clones share the HTTP connection pool and the card.
#[derive(Clone)]
pub struct RemoteAgent {
    /// The sub-agent's id (for messages).
    pub id: String,
    /// The URL as declared.
    pub url: String,
    opts: A2aOptions,
    http: reqwest::Client,
    endpoint: Arc<Mutex<Option<Endpoint>>>,
}

impl fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteAgent")
            .field("id", &self.id)
            .field("url", &self.url)
            .finish()
    }
}

impl RemoteAgent {
    pub fn new(id: &str, url: &str, opts: A2aOptions) -> Result<RemoteAgent, A2aError> {
        let err = |kind| A2aError {
            agent: id.to_string(),
            url: url.to_string(),
            kind,
        };
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| err(ErrorKind::BadCard(format!("`{url}` is not a URL: {e}"))))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(err(ErrorKind::BadCard(format!(
                "`{url}` is not an http(s) URL"
            ))));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(opts.connect_timeout)
            .timeout(opts.timeout)
            .user_agent(concat!("switchyard/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| err(ErrorKind::Connect(crate::llm::http::error_chain(&e))))?;
        Ok(RemoteAgent {
            id: id.to_string(),
            url: url.to_string(),
            opts,
            http,
            endpoint: Arc::new(Mutex::new(None)),
        })
    }

    pub fn options(&self) -> &A2aOptions {
        &self.opts
    }

    fn err(&self, kind: ErrorKind) -> A2aError {
        A2aError {
            agent: self.id.clone(),
            url: self.url.clone(),
            kind,
        }
    }

    /// The endpoint, from the cached card or by fetching it.
    pub async fn endpoint(&self) -> Result<Endpoint, A2aError> {
        if let Some(e) = self
            .endpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Ok(e);
        }
        let mut misses = Vec::new();
        for card_url in card_urls(&self.url) {
            let resp = self
                .http
                .get(&card_url)
                .header("Accept", "application/json")
                .send()
                .await
                .map_err(|e| self.req_err(e))?;
            let status = resp.status();
            let body = self.read_body(resp).await?;
            if !status.is_success() {
                misses.push(format!("{card_url}: HTTP {}", status.as_u16()));
                continue;
            }
            let card: Value = match serde_json::from_slice(&body) {
                Ok(v) => v,
                Err(e) => {
                    misses.push(format!("{card_url}: not JSON ({e})"));
                    continue;
                }
            };
            let ep = parse_card(&card, &card_url)
                .map_err(|e| self.err(ErrorKind::BadCard(format!("{card_url}: {e}"))))?;
            *self.endpoint.lock().unwrap_or_else(|p| p.into_inner()) = Some(ep.clone());
            return Ok(ep);
        }
        Err(self.err(ErrorKind::BadCard(format!(
            "no agent card found ({})",
            misses.join("; ")
        ))))
    }

    fn req_err(&self, e: reqwest::Error) -> A2aError {
        if e.is_timeout() {
            self.err(ErrorKind::Timeout(self.opts.timeout))
        } else {
            self.err(ErrorKind::Connect(crate::llm::http::error_chain(&e)))
        }
    }

    async fn read_body(&self, mut resp: reqwest::Response) -> Result<Vec<u8>, A2aError> {
        let limit = self.opts.max_response_bytes;
        if resp.content_length().is_some_and(|n| n > limit as u64) {
            return Err(self.err(ErrorKind::TooLarge(limit)));
        }
        let mut buf = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.req_err(e))? {
            if buf.len() + chunk.len() > limit {
                return Err(self.err(ErrorKind::TooLarge(limit)));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf)
    }

    /// One JSON-RPC call; its `result`.
    async fn rpc(
        &self,
        ep: &Endpoint,
        protocol: Protocol,
        method: &str,
        params: Value,
    ) -> Result<Value, A2aError> {
        let body =
            json!({"jsonrpc": "2.0", "id": new_message_id(), "method": method, "params": params});
        let mut req = self
            .http
            .post(&ep.url)
            .header("Accept", "application/json")
            .json(&body);
        if protocol == Protocol::V1 {
            req = req.header("A2A-Version", "1.0");
        }
        let resp = req.send().await.map_err(|e| self.req_err(e))?;
        let status = resp.status();
        let bytes = self.read_body(resp).await?;
        let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
        // A JSON-RPC error wins over the HTTP status (servers send them with 200, 400 or 500).
        if let Some(e) = parsed
            .as_ref()
            .and_then(|v| v.get("error"))
            .filter(|e| e.is_object())
        {
            return Err(self.err(ErrorKind::Rpc {
                method: method.to_string(),
                code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
                    .to_string(),
            }));
        }
        if !status.is_success() {
            return Err(self.err(ErrorKind::Http {
                url: ep.url.clone(),
                status: status.as_u16(),
                body: String::from_utf8_lossy(&bytes).into_owned(),
            }));
        }
        let Some(v) = parsed else {
            return Err(self.err(ErrorKind::BadResponse(format!(
                "`{method}` answered with something that is not JSON: {}",
                snippet(&String::from_utf8_lossy(&bytes), 200)
            ))));
        };
        match v.get("result") {
            Some(r) if !r.is_null() => Ok(r.clone()),
            _ => Err(self.err(ErrorKind::BadResponse(format!(
                "`{method}` answered without `result` or `error`: {}",
                snippet(&v.to_string(), 200)
            )))),
        }
    }

    /// Send `text` (continuing `task_id` / `context_id` when given) and wait for a usable
    /// reply: completed, a direct message, or waiting for input. Polls running tasks.
    /// Bounded by the overall timeout.
    pub async fn send(
        &self,
        text: &str,
        task_id: Option<&str>,
        context_id: Option<&str>,
    ) -> Result<Reply, A2aError> {
        match tokio::time::timeout(
            self.opts.timeout,
            self.send_inner(text, task_id, context_id),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(self.err(ErrorKind::Timeout(self.opts.timeout))),
        }
    }

    async fn send_inner(
        &self,
        text: &str,
        task_id: Option<&str>,
        context_id: Option<&str>,
    ) -> Result<Reply, A2aError> {
        let mut ep = self.endpoint().await?;
        let message_id = new_message_id();
        let call = |ep: &Endpoint, p: Protocol| {
            let params = send_params(
                p,
                text,
                &message_id,
                task_id,
                context_id,
                ep.tenant.as_deref(),
            );
            let ep = ep.clone();
            async move { self.rpc(&ep, p, p.send_method(), params).await }
        };
        let result = match call(&ep, ep.protocol).await {
            Ok(r) => r,
            Err(
                first @ A2aError {
                    kind:
                        ErrorKind::Rpc {
                            code: -32601 | -32009,
                            ..
                        },
                    ..
                },
            ) => {
                // The card said one dialect, the server speaks the other: try it once, keep it.
                let other = ep.protocol.other();
                match call(&ep, other).await {
                    Ok(r) => {
                        ep.protocol = other;
                        *self.endpoint.lock().unwrap_or_else(|p| p.into_inner()) = Some(ep.clone());
                        r
                    }
                    Err(A2aError {
                        kind:
                            ErrorKind::Rpc {
                                code: -32601 | -32009,
                                ..
                            },
                        ..
                    }) => return Err(first),
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let mut reply =
            parse_result(&result, ep.protocol).map_err(|e| self.err(ErrorKind::BadResponse(e)))?;
        while reply.state.as_ref().is_some_and(TaskState::is_running) {
            let Some(id) = reply.task_id.clone() else {
                return Err(self.err(ErrorKind::BadResponse(
                    "a running task without an `id` cannot be polled".into(),
                )));
            };
            tokio::time::sleep(self.opts.poll_interval).await;
            let mut params = Map::new();
            params.insert("id".into(), Value::String(id));
            if let (Protocol::V1, Some(t)) = (ep.protocol, &ep.tenant) {
                params.insert("tenant".into(), t.clone().into());
            }
            let r = self
                .rpc(
                    &ep,
                    ep.protocol,
                    ep.protocol.get_method(),
                    Value::Object(params),
                )
                .await?;
            let mut next =
                parse_result(&r, ep.protocol).map_err(|e| self.err(ErrorKind::BadResponse(e)))?;
            next.context_id = next.context_id.or(reply.context_id.take());
            next.task_id = next.task_id.or(reply.task_id.take());
            reply = next;
        }
        match &reply.state {
            None
            | Some(TaskState::Completed | TaskState::InputRequired | TaskState::AuthRequired) => {
                Ok(reply)
            }
            Some(state) => Err(self.err(ErrorKind::Task {
                state: state.clone(),
                message: reply.text.clone(),
            })),
        }
    }

    /// [`RemoteAgent::send`] from synchronous code: runs on the shared runtime, gives up (and
    /// drops the request) when `stop` is raised or the overall timeout passes.
    pub fn send_blocking(
        &self,
        text: &str,
        task_id: Option<&str>,
        context_id: Option<&str>,
        stop: Option<&AtomicBool>,
    ) -> Result<Reply, A2aError> {
        let me = self.clone();
        let (text, task_id, context_id) = (
            text.to_string(),
            task_id.map(str::to_string),
            context_id.map(str::to_string),
        );
        // A little beyond the inner timeout, so the inner one reports first when it can.
        let deadline = Instant::now() + self.opts.timeout + Duration::from_millis(500);
        let fut = async move {
            me.send(&text, task_id.as_deref(), context_id.as_deref())
                .await
        };
        match crate::rt::block_on_until(fut, stop, Some(deadline)) {
            Ok(r) => r,
            Err(crate::rt::Interrupted::Stopped) => Err(self.err(ErrorKind::Stopped)),
            Err(crate::rt::Interrupted::TimedOut) => {
                Err(self.err(ErrorKind::Timeout(self.opts.timeout)))
            }
        }
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "http://127.0.0.1:9/agent";

    #[test]
    fn card_urls_well_known_and_direct() {
        assert_eq!(
            card_urls("http://h:1/a/"),
            vec![
                "http://h:1/a/.well-known/agent-card.json".to_string(),
                "http://h:1/a/.well-known/agent.json".to_string()
            ]
        );
        assert_eq!(
            card_urls("http://h:1/cards/x.json"),
            vec!["http://h:1/cards/x.json".to_string()]
        );
        assert_eq!(
            card_urls("http://h:1/x.json?v=2"),
            vec!["http://h:1/x.json?v=2".to_string()]
        );
    }

    #[test]
    fn v1_card_picks_the_first_jsonrpc_interface() {
        let card = json!({
            "name": "Booker", "description": "books things",
            "supportedInterfaces": [
                {"url": "http://h/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "http://h/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t1"}
            ]
        });
        let ep = parse_card(&card, "http://h:5/.well-known/agent-card.json").unwrap();
        assert_eq!(ep.protocol, Protocol::V1);
        assert_eq!(ep.url, "http://h:5/rpc");
        assert_eq!(ep.tenant.as_deref(), Some("t1"));
        assert_eq!(ep.name, "Booker");
        // Only a 0.3 JSON-RPC interface listed: spoken as 0.3.
        let card = json!({"supportedInterfaces": [{"url": "http://h/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]});
        assert_eq!(parse_card(&card, BASE).unwrap().protocol, Protocol::V03);
    }

    #[test]
    fn v1_card_without_jsonrpc_is_a_clear_error() {
        let card =
            json!({"supportedInterfaces": [{"url": "http://h/g", "protocolBinding": "GRPC"}]});
        let e = parse_card(&card, BASE).unwrap_err();
        assert!(
            e.contains("no JSONRPC interface") && e.contains("GRPC"),
            "{e}"
        );
    }

    #[test]
    fn v03_card_uses_the_top_level_url() {
        let card = json!({"name": "Old", "url": "http://h/a2a", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC"});
        let ep = parse_card(&card, BASE).unwrap();
        assert_eq!(
            (ep.protocol, ep.url.as_str()),
            (Protocol::V03, "http://h/a2a")
        );
        // Preferring gRPC, with a JSON-RPC additional interface.
        let card = json!({"url": "http://h/g", "preferredTransport": "GRPC",
                          "additionalInterfaces": [{"url": "http://h/j", "transport": "JSONRPC"}]});
        assert_eq!(parse_card(&card, BASE).unwrap().url, "http://h/j");
        let card = json!({"url": "http://h/g", "preferredTransport": "GRPC"});
        assert!(
            parse_card(&card, BASE)
                .unwrap_err()
                .contains("prefers transport `GRPC`")
        );
    }

    #[test]
    fn cards_without_endpoints_are_rejected() {
        assert!(
            parse_card(&json!({"name": "x"}), BASE)
                .unwrap_err()
                .contains("neither `supportedInterfaces`")
        );
        assert!(
            parse_card(&json!([1]), BASE)
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(
            parse_card(&json!({"supportedInterfaces": {}}), BASE)
                .unwrap_err()
                .contains("not a list")
        );
    }

    #[test]
    fn task_states_in_both_spellings() {
        for (a, b) in [
            ("input-required", "TASK_STATE_INPUT_REQUIRED"),
            ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
            ("completed", "TASK_STATE_COMPLETED"),
            ("failed", "TASK_STATE_FAILED"),
            ("canceled", "TASK_STATE_CANCELED"),
            ("rejected", "TASK_STATE_REJECTED"),
            ("working", "TASK_STATE_WORKING"),
            ("submitted", "TASK_STATE_SUBMITTED"),
        ] {
            assert_eq!(TaskState::parse(a), TaskState::parse(b));
            assert_eq!(TaskState::parse(b).as_str(), a);
        }
        assert_eq!(
            TaskState::parse("TASK_STATE_UNSPECIFIED"),
            TaskState::Other("TASK_STATE_UNSPECIFIED".into())
        );
        assert!(
            TaskState::InputRequired.is_interrupted() && TaskState::AuthRequired.is_interrupted()
        );
        assert!(!TaskState::Completed.is_interrupted());
    }

    #[test]
    fn v1_results_are_wrapped() {
        let r = json!({"task": {
            "id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED", "message": {"role": "ROLE_AGENT", "parts": [{"text": "done"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "line 1"}, {"data": {"n": 1}}]}, {"artifactId": "b", "parts": [{"url": "http://x/f.pdf"}]}]
        }});
        let rep = parse_result(&r, Protocol::V1).unwrap();
        assert_eq!(rep.state, Some(TaskState::Completed));
        assert_eq!(
            (rep.task_id.as_deref(), rep.context_id.as_deref()),
            (Some("t1"), Some("c1"))
        );
        assert_eq!(rep.text, "line 1\n{\"n\":1}\nhttp://x/f.pdf");
        let m = json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "contextId": "c9", "parts": [{"text": "hi"}, {"text": "there"}]}});
        let rep = parse_result(&m, Protocol::V1).unwrap();
        assert_eq!(
            (rep.state, rep.text.as_str(), rep.context_id.as_deref()),
            (None, "hi there", Some("c9"))
        );
    }

    #[test]
    fn v03_results_use_kind() {
        let r = json!({"kind": "task", "id": "t2", "contextId": "c2",
            "status": {"state": "input-required", "message": {"kind": "message", "role": "agent", "parts": [{"kind": "text", "text": "Which city?"}]}}});
        let rep = parse_result(&r, Protocol::V03).unwrap();
        assert!(rep.needs_input());
        assert_eq!(rep.text, "Which city?");
        let m = json!({"kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "text", "text": "ok"}, {"kind": "file", "file": {"name": "a.png", "bytes": "AAA="}}]});
        assert_eq!(
            parse_result(&m, Protocol::V03).unwrap().text,
            "ok [file a.png]"
        );
    }

    #[test]
    fn completed_text_falls_back_to_status_then_history() {
        let r = json!({"kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "completed", "message": {"role": "agent", "parts": [{"kind": "text", "text": "from status"}]}}, "artifacts": []});
        assert_eq!(parse_result(&r, Protocol::V03).unwrap().text, "from status");
        let r = json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "completed"},
            "history": [{"role": "user", "parts": [{"kind": "text", "text": "q"}]}, {"role": "agent", "parts": [{"kind": "text", "text": "a"}]}]});
        assert_eq!(parse_result(&r, Protocol::V03).unwrap().text, "a");
    }

    #[test]
    fn malformed_results_are_errors() {
        assert!(
            parse_result(&json!({"foo": 1}), Protocol::V1)
                .unwrap_err()
                .contains("expected a Task or a Message")
        );
        assert!(
            parse_result(&json!({"task": {"id": "t"}}), Protocol::V1)
                .unwrap_err()
                .contains("status.state")
        );
    }

    #[test]
    fn send_params_per_dialect() {
        let p = send_params(
            Protocol::V1,
            "hello",
            "m1",
            Some("t1"),
            Some("c1"),
            Some("ten"),
        );
        assert_eq!(p["message"]["role"], "ROLE_USER");
        assert_eq!(p["message"]["parts"], json!([{"text": "hello"}]));
        assert_eq!(
            (
                p["message"]["taskId"].as_str(),
                p["message"]["contextId"].as_str()
            ),
            (Some("t1"), Some("c1"))
        );
        assert_eq!(p["configuration"]["returnImmediately"], false);
        assert_eq!(p["tenant"], "ten");
        let p = send_params(Protocol::V03, "hello", "m1", None, None, None);
        assert_eq!(p["message"]["kind"], "message");
        assert_eq!(p["message"]["role"], "user");
        assert_eq!(
            p["message"]["parts"],
            json!([{"kind": "text", "text": "hello"}])
        );
        assert!(p["message"].get("taskId").is_none() && p["message"].get("contextId").is_none());
        assert_eq!(p["configuration"]["blocking"], true);
    }

    #[test]
    fn message_ids_are_unique_and_uuid_shaped() {
        let a = new_message_id();
        let b = new_message_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
    }

    #[test]
    fn errors_name_the_agent_and_url() {
        let e = A2aError {
            agent: "booking".into(),
            url: "http://h/a".into(),
            kind: ErrorKind::Task {
                state: TaskState::Failed,
                message: "db down".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            "remote agent `booking` (http://h/a): the task failed: db down"
        );
        let e = A2aError {
            agent: "b".into(),
            url: "u".into(),
            kind: ErrorKind::Rpc {
                method: "SendMessage".into(),
                code: -32601,
                message: "Method not found".into(),
            },
        };
        assert!(
            e.to_string()
                .contains("JSON-RPC error -32601 for `SendMessage`: Method not found"),
            "{e}"
        );
    }

    #[test]
    fn bad_urls_are_refused_up_front() {
        let e = RemoteAgent::new("x", "ftp://h/a", A2aOptions::default()).unwrap_err();
        assert!(e.to_string().contains("not an http(s) URL"), "{e}");
        assert!(RemoteAgent::new("x", "not a url", A2aOptions::default()).is_err());
    }
}
