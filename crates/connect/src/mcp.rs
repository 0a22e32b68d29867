//! MCP tools for the (synchronous) engine: a thin facade over `rmcp`.
//!
//! - [`McpServerSpec`]: one server as declared (sherma `mcp_servers` entries, Loki / Claude
//!   `mcpServers` entries): a child process over stdio or a streamable-HTTP endpoint, a per-call
//!   timeout, a tool-name prefix and an optional tool allow-list.
//! - [`McpServer`]: one server of a run. It connects on first use (never at load: opening or
//!   validating a file spawns nothing), lists its tools once, and calls them with a timeout and
//!   the run's stop flag. The child's stderr is piped into a bounded buffer (the last
//!   [`STDERR_CAP`] bytes) that the run turns into `log` events instead of letting it reach the
//!   terminal. Dropping the server closes the session and kills the child's process group.
//! - [`McpPool`]: the servers of one run, shared by all its nodes and forks.
//!
//! Errors are plain text naming the server, and say which kind of failure it was: the command
//! was not found, the connection was refused, the call timed out, the tool reported an error
//! (in band, `isError`), the server answered with a protocol error, or the connection closed.
//!
//! All async work runs on the engine's shared runtime ([`crate::rt`]); a timeout or a stop drops
//! the request's future, which makes rmcp send `notifications/cancelled` to the server.

use crate::childenv::ChildEnv;
use crate::rt::{self, Interrupted};
use runtime::events::EventBody;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per-call timeout when the server declares none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The most a tool result may hold (text plus structured content), in bytes: a bigger one is an
/// error instead of entering the run's state.
pub const RESULT_LIMIT: usize = 8 * 1024 * 1024;

/// How much of a child's stderr is kept (the most recent bytes).
pub const STDERR_CAP: usize = 64 * 1024;
/// How long closing a session may take before the child's process group is killed.
const CLOSE_GRACE: Duration = Duration::from_millis(1500);

// ---------------------------------------------------------------------------------------------
// Specs
// ---------------------------------------------------------------------------------------------

/// How to reach a server.
#[derive(Clone, Debug, PartialEq)]
pub enum McpTransport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP (one endpoint, POST + optional SSE responses).
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// The legacy HTTP+SSE transport: rmcp 3.9 has no client for it; connecting says so.
    Sse { url: String },
}

/// One MCP server as declared.
#[derive(Clone, Debug, PartialEq)]
pub struct McpServerSpec {
    /// The server's name (sherma `id`, the Loki `mcpServers` key).
    pub name: String,
    pub transport: McpTransport,
    /// Per request (connecting counts as one request).
    pub timeout: Duration,
    /// Prepended to every tool name the model sees (sherma `tool_prefix`).
    pub tool_prefix: String,
    /// Only these tools (server-side names) are offered; `None` = all.
    pub allowed_tools: Option<Vec<String>>,
}

impl McpServerSpec {
    /// A stdio server with default settings.
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> McpServerSpec {
        McpServerSpec::new(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: Vec::new(),
                cwd: None,
            },
        )
    }

    /// A streamable-HTTP server with default settings.
    pub fn http(name: &str, url: &str) -> McpServerSpec {
        McpServerSpec::new(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: Vec::new(),
            },
        )
    }

    fn new(name: &str, transport: McpTransport) -> McpServerSpec {
        McpServerSpec {
            name: name.into(),
            transport,
            timeout: DEFAULT_TIMEOUT,
            tool_prefix: String::new(),
            allowed_tools: None,
        }
    }

    /// A spec from a JSON object in either declaration shape:
    ///
    /// - sherma `MCPServerDef`: `transport` (`streamable_http` default | `sse` | `stdio`),
    ///   `url` + `headers`, `command` + `args` + `env`, `tool_prefix`;
    /// - a Loki / Claude Desktop `mcpServers` entry: `command` + `args` + `env` + `cwd`, or
    ///   `url` + `headers`, the transport inferred (or given as `type` / `transport`).
    ///
    /// Both accept `timeout` (seconds), `cwd` and `allowed_tools`. A relative `cwd` is resolved
    /// against `base_dir`, which is also the default working directory of a child process.
    /// With `expand`, `${VAR}` / `${VAR:-default}` in `env` values and `headers` are replaced
    /// from `lookup` (a missing variable is an error); sherma files are expanded at load already.
    pub fn from_json(
        name: &str,
        v: &Value,
        base_dir: &Path,
        expand: Option<EnvLookup<'_>>,
    ) -> Result<McpServerSpec, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| format!("MCP server `{name}`: the entry must be a mapping"))?;
        let text = |k: &str| -> Result<Option<String>, String> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(Value::Number(n)) => Ok(Some(n.to_string())),
                Some(Value::Bool(b)) => Ok(Some(b.to_string())),
                Some(other) => Err(format!(
                    "MCP server `{name}`: `{k}` must be text, found {other}"
                )),
            }
        };
        let map = |k: &str| -> Result<Vec<(String, String)>, String> {
            let Some(m) = obj.get(k).filter(|x| !x.is_null()) else {
                return Ok(Vec::new());
            };
            let m = m
                .as_object()
                .ok_or_else(|| format!("MCP server `{name}`: `{k}` must be a mapping"))?;
            let mut out = Vec::new();
            for (key, val) in m {
                let raw = match val {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    other => {
                        return Err(format!(
                            "MCP server `{name}`: `{k}.{key}` must be text, found {other}"
                        ));
                    }
                };
                let value = match expand {
                    Some(lookup) => expand_env(&raw, lookup)
                        .map_err(|e| format!("MCP server `{name}`: `{k}.{key}`: {e}"))?,
                    None => raw,
                };
                out.push((key.clone(), value));
            }
            Ok(out)
        };
        let command = text("command")?;
        let url = text("url")?;
        let kind = match text("transport")?.or(text("type")?) {
            Some(t) => t.to_ascii_lowercase(),
            None if command.is_some() => "stdio".into(),
            None => "streamable_http".into(),
        };
        let cwd = text("cwd")?.map(|c| {
            let p = PathBuf::from(c);
            if p.is_absolute() { p } else { base_dir.join(p) }
        });
        let transport = match kind.as_str() {
            "stdio" => {
                let command = command.filter(|c| !c.trim().is_empty()).ok_or_else(|| {
                    format!("MCP server `{name}`: a stdio server needs `command`")
                })?;
                let args = match obj.get("args") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|x| match x {
                            Value::String(s) => Ok(s.clone()),
                            Value::Number(n) => Ok(n.to_string()),
                            Value::Bool(b) => Ok(b.to_string()),
                            other => Err(format!(
                                "MCP server `{name}`: `args` items must be text, found {other}"
                            )),
                        })
                        .collect::<Result<_, _>>()?,
                    Some(other) => {
                        return Err(format!(
                            "MCP server `{name}`: `args` must be a list, found {other}"
                        ));
                    }
                };
                McpTransport::Stdio {
                    command,
                    args,
                    env: map("env")?,
                    cwd: Some(cwd.unwrap_or_else(|| base_dir.to_path_buf())),
                }
            }
            "streamable_http" | "streamable-http" | "streamablehttp" | "http" => {
                let url =
                    url.ok_or_else(|| format!("MCP server `{name}`: an HTTP server needs `url`"))?;
                McpTransport::Http {
                    url,
                    headers: map("headers")?,
                }
            }
            "sse" => McpTransport::Sse {
                url: url.unwrap_or_default(),
            },
            other => {
                return Err(format!(
                    "MCP server `{name}`: unknown transport `{other}` (use `stdio` or `streamable_http`)"
                ));
            }
        };
        let timeout = match obj.get("timeout") {
            None | Some(Value::Null) => DEFAULT_TIMEOUT,
            Some(t) => match t
                .as_f64()
                .or_else(|| t.as_str().and_then(|s| s.trim().parse().ok()))
            {
                // Clamped to a day: a larger value would overflow a deadline.
                Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s.min(86_400.0)),
                _ => {
                    return Err(format!(
                        "MCP server `{name}`: `timeout` must be a positive number of seconds, found {t}"
                    ));
                }
            },
        };
        let allowed_tools = match obj.get("allowed_tools") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect(),
            ),
            Some(other) => {
                return Err(format!(
                    "MCP server `{name}`: `allowed_tools` must be a list, found {other}"
                ));
            }
        };
        Ok(McpServerSpec {
            name: name.into(),
            transport,
            timeout,
            tool_prefix: text("tool_prefix")?.unwrap_or_default(),
            allowed_tools,
        })
    }
}

/// Where `${VAR}` values come from ([`process_env`], or a test's table).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `${VAR}` and `${VAR:-default}` (braced forms only; `$$` is a literal `$`), from `lookup`.
/// A variable that is missing and has no default is an error naming it.
pub fn expand_env(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let (out, missing) = model::doc::env::interpolate(text, lookup);
    match missing.first() {
        None => Ok(out),
        Some(m) => Err(format!(
            "environment variable `{}` is not set (set it, or write `${{{}:-default}}`)",
            m.name, m.name
        )),
    }
}

/// The process environment, for [`expand_env`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

// ---------------------------------------------------------------------------------------------
// Schema cleaning
// ---------------------------------------------------------------------------------------------

/// Keywords strict function-calling providers reject (OpenAI strict mode, Gemini): dropped at
/// every level of a schema. Property *names* are never touched.
const DROPPED_KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "format",
    "examples",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "readOnly",
    "writeOnly",
    "deprecated",
];

/// A tool's input schema made acceptable to strict providers: [`DROPPED_KEYWORDS`] removed
/// recursively (through `properties`, `items`, `anyOf`, `$defs`, ...), and the top level made an
/// object schema (`type: object`, `properties: {}` when absent).
pub fn clean_schema(schema: &Value) -> Value {
    let mut out = clean(schema);
    match &mut out {
        Value::Object(m) => {
            if !m.contains_key("type")
                && !m.contains_key("anyOf")
                && !m.contains_key("oneOf")
                && !m.contains_key("$ref")
            {
                m.insert("type".into(), Value::String("object".into()));
            }
            if m.get("type").and_then(Value::as_str) == Some("object")
                && !m.contains_key("properties")
            {
                m.insert("properties".into(), Value::Object(Map::new()));
            }
        }
        _ => out = serde_json::json!({"type": "object", "properties": {}}),
    }
    out
}

/// Keywords whose value is a map of name → schema.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

fn clean(schema: &Value) -> Value {
    let Value::Object(m) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        if DROPPED_KEYWORDS.contains(&k.as_str()) {
            continue;
        }
        let cleaned = if SCHEMA_MAPS.contains(&k.as_str()) {
            match v {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, s)| (name.clone(), clean(s)))
                        .collect(),
                ),
                other => other.clone(),
            }
        } else {
            match (k.as_str(), v) {
                // Data, not schemas: kept verbatim.
                ("enum" | "const" | "default" | "required", _) => v.clone(),
                (_, Value::Object(_)) => clean(v),
                (_, Value::Array(items)) => Value::Array(items.iter().map(clean).collect()),
                _ => v.clone(),
            }
        };
        out.insert(k.clone(), cleaned);
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------------------------

/// The tool name of a server's tool listing in a cassette.
pub use runtime::cassette::MCP_LISTING as LISTING;

/// One tool of a server, as offered to a model.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McpTool {
    /// The name the model sees: the server's `tool_prefix` + the server's name for it.
    pub name: String,
    /// The server's own name for the tool (what [`McpServer::call`] takes).
    pub tool: String,
    pub description: String,
    /// The input schema, cleaned ([`clean_schema`]).
    pub input_schema: Value,
}

impl McpTool {
    /// The tool in the engine's provider-neutral shape `{name, description, parameters}`.
    pub fn offer(&self) -> Value {
        serde_json::json!({"name": self.name, "description": self.description, "parameters": self.input_schema})
    }
}

/// The last [`STDERR_CAP`] bytes a child wrote to stderr, and how much of it was handed out.
#[derive(Default)]
struct StderrBuf {
    text: String,
    /// Byte offset in `text` of the first byte not yet taken by [`McpServer::take_stderr`].
    unread: usize,
}

impl StderrBuf {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
        if self.text.len() > STDERR_CAP {
            let mut cut = self.text.len() - STDERR_CAP;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.unread = self.unread.saturating_sub(cut);
        }
    }
}

struct Conn {
    /// Kept to close the session on drop; `None` once taken for closing.
    service: Option<RunningService<RoleClient, ()>>,
    peer: Peer<RoleClient>,
    tools: Vec<McpTool>,
    /// The server's `hooks.<point>` tools (sherma MCP hook executors), never offered to models.
    hook_tools: Vec<String>,
}

/// One MCP server of a run (see the module docs).
pub struct McpServer {
    spec: McpServerSpec,
    conn: Mutex<Option<Conn>>,
    stderr: Arc<Mutex<StderrBuf>>,
    /// The child's pid (= its process group id), once spawned.
    pid: Arc<Mutex<Option<u32>>>,
    /// Carried by a stdio server and everything it starts (see `proctag`).
    tag: crate::proctag::ProcTag,
    /// The environment a stdio server gets (see `childenv`), before its own `env:` map.
    child_env: Mutex<ChildEnv>,
    /// The tools a run was offered ([`McpServer::tools`]), live or from a replay.
    offered: Mutex<Option<Vec<McpTool>>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("spec", &self.spec)
            .field("connected", &self.is_connected())
            .finish()
    }
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}s", s as u64)
    } else {
        format!("{s:.1}s")
    }
}

/// The texts of an error and its sources, joined (rmcp wraps transport errors several times).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

/// The reqwest error behind an rmcp transport error (rmcp's `Client` variant does not expose
/// it as a source, so it is looked for by type).
fn reqwest_cause<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a reqwest::Error> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut cur = Some(e);
    while let Some(x) = cur {
        if let Some(r) = x.downcast_ref::<reqwest::Error>() {
            return Some(r);
        }
        if let Some(StreamableHttpError::Client(r)) =
            x.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return Some(r);
        }
        cur = x.source();
    }
    None
}

fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    if let Some(r) = reqwest_cause(e) {
        cur = Some(r as &(dyn std::error::Error + 'static));
    }
    while let Some(x) = cur {
        if let Some(io) = x.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        if x.to_string()
            .to_ascii_lowercase()
            .contains("connection refused")
        {
            return true;
        }
        cur = x.source();
    }
    false
}

impl McpServer {
    pub fn new(spec: McpServerSpec) -> McpServer {
        McpServer {
            spec,
            conn: Mutex::new(None),
            stderr: Default::default(),
            pid: Default::default(),
            tag: crate::proctag::ProcTag::new(),
            child_env: Mutex::new(ChildEnv::default()),
            offered: Mutex::new(None),
        }
    }

    /// The run's [`ChildEnv`] for a stdio server started from now on (default: the base set
    /// and the user's opt-in only). The server's own `env:` entries are set on top of it.
    pub fn set_child_env(&self, env: &ChildEnv) {
        *self.child_env.lock().unwrap_or_else(|p| p.into_inner()) = env.clone();
    }

    /// The tools as a run sees them, through the run's provider: a replay answers from the
    /// listing recorded in its cassette (the server is not started; a cassette recorded before
    /// listings were kept lists live), a recording writes the listing down, otherwise
    /// [`McpServer::list_tools`]. Listed once per run; later calls return the same tools.
    pub fn tools(&self, cx: &runtime::session::Cx<'_>) -> Result<Vec<McpTool>, String> {
        if let Some(t) = self.offered.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(t);
        }
        let node = format!("@mcp:{}", self.spec.name);
        let listed = cx.tool(&node, LISTING, &Value::Null, || {
            self.network(cx)?;
            self.list_tools(cx.stop)
                .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
        })?;
        let tools: Vec<McpTool> = serde_json::from_value(listed).map_err(|e| {
            format!("MCP server `{}`: the recorded tool listing cannot be read ({e}); record the run again", self.spec.name)
        })?;
        *self.offered.lock().unwrap_or_else(|p| p.into_inner()) = Some(tools.clone());
        Ok(tools)
    }

    /// `Ok` unless the server is reached over HTTP and the run is offline (a scripted or replayed
    /// run the user did not allow the network): stdio servers are local processes.
    pub fn network(&self, cx: &runtime::session::Cx<'_>) -> Result<(), String> {
        match &self.spec.transport {
            McpTransport::Stdio { .. } => Ok(()),
            McpTransport::Http { url, .. } | McpTransport::Sse { url } => {
                cx.network(&format!("the MCP server `{}`", self.spec.name), url)
            }
        }
    }

    /// Whether [`McpServer::tools`] listed this server's tools in this run.
    pub fn was_offered(&self) -> bool {
        self.offered.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    pub fn spec(&self) -> &McpServerSpec {
        &self.spec
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Whether a live session exists.
    pub fn is_connected(&self) -> bool {
        let g = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        g.as_ref()
            .is_some_and(|c| c.service.as_ref().is_some_and(|s| !s.is_closed()))
    }

    /// The child's process id (stdio servers, once started).
    pub fn child_pid(&self) -> Option<u32> {
        *self.pid.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most recent stderr output of the child (at most [`STDERR_CAP`] bytes).
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .text
            .clone()
    }

    /// Stderr output not handed out before (and marks it handed out).
    pub fn take_stderr(&self) -> String {
        let mut b = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let s = b.text[b.unread..].to_string();
        b.unread = b.text.len();
        s
    }

    /// A `log` event with the stderr output not handed out before, if any.
    pub fn take_log(&self) -> Option<EventBody> {
        let text = self.take_stderr();
        (!text.is_empty()).then(|| EventBody::Log {
            source: format!("mcp:{}", self.spec.name),
            text,
        })
    }

    /// Connect (once; again after the connection was lost) and return the tools, filtered by
    /// `allowed_tools`, with the prefix applied and `hooks.*` tools left out.
    pub fn list_tools(&self, stop: &AtomicBool) -> Result<Vec<McpTool>, String> {
        let mut g = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        self.ensure(&mut g, stop)?;
        Ok(g.as_ref().map(|c| c.tools.clone()).unwrap_or_default())
    }

    /// The server's `hooks.<point>` tools (connecting first): what a sherma MCP hook executor
    /// serves.
    pub fn hook_tools(&self, stop: &AtomicBool) -> Result<Vec<String>, String> {
        let mut g = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        self.ensure(&mut g, stop)?;
        Ok(g.as_ref().map(|c| c.hook_tools.clone()).unwrap_or_default())
    }

    /// Call the server's tool `tool` (its own name, without prefix) with `args` (an object or
    /// null), within the server's timeout.
    pub fn call(&self, tool: &str, args: &Value, stop: &AtomicBool) -> Result<Value, String> {
        self.call_with_timeout(tool, args, stop, self.spec.timeout)
    }

    /// [`McpServer::call`] with an explicit timeout.
    pub fn call_with_timeout(
        &self,
        tool: &str,
        args: &Value,
        stop: &AtomicBool,
        timeout: Duration,
    ) -> Result<Value, String> {
        let name = &self.spec.name;
        let arguments = match args {
            Value::Object(m) => Some(m.clone()),
            Value::Null => None,
            other => {
                return Err(format!(
                    "MCP server `{name}`: tool `{tool}` takes an object of arguments, got {other}"
                ));
            }
        };
        let peer = {
            let mut g = self.conn.lock().unwrap_or_else(|p| p.into_inner());
            self.ensure(&mut g, stop)?;
            g.as_ref()
                .map(|c| c.peer.clone())
                .ok_or_else(|| format!("MCP server `{name}` is not connected"))?
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        let fut = async move { peer.call_tool(params).await };
        let result = match rt::block_on_until(fut, Some(stop), Some(Instant::now() + timeout)) {
            Err(Interrupted::TimedOut) => {
                return Err(format!(
                    "MCP server `{name}`: tool `{tool}` timed out after {}",
                    secs(timeout)
                ));
            }
            Err(Interrupted::Stopped) => {
                return Err(format!(
                    "MCP server `{name}`: tool `{tool}` was cancelled because the run was stopped"
                ));
            }
            Ok(Err(e)) => return Err(self.service_error(tool, e)),
            Ok(Ok(r)) => r,
        };
        let size: usize = result
            .content
            .iter()
            .map(|c| match c.as_text() {
                Some(t) => t.text.len(),
                None => serde_json::to_string(c).map(|j| j.len()).unwrap_or(0),
            })
            .sum::<usize>()
            + result.structured_content.as_ref().map(|s| s.to_string().len()).unwrap_or(0);
        if size > RESULT_LIMIT {
            return Err(format!(
                "MCP server `{name}`: tool `{tool}` returned {size} bytes, more than the {} MiB a tool \
                 result may hold; make the tool return less (a summary, a page, a file path)",
                RESULT_LIMIT / (1024 * 1024)
            ));
        }
        let texts: Vec<&str> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect();
        let all_text = texts.len() == result.content.len();
        if result.is_error == Some(true) {
            let detail = if texts.is_empty() {
                serde_json::to_string(&result.content).unwrap_or_default()
            } else {
                texts.join("\n")
            };
            return Err(format!(
                "MCP server `{name}`: tool `{tool}` reported an error: {detail}"
            ));
        }
        Ok(if !texts.is_empty() && all_text {
            Value::String(texts.join("\n"))
        } else if let Some(s) = result.structured_content {
            s
        } else {
            serde_json::to_value(&result.content).unwrap_or(Value::Null)
        })
    }

    fn service_error(&self, tool: &str, e: ServiceError) -> String {
        let name = &self.spec.name;
        match e {
            ServiceError::McpError(d) => {
                format!(
                    "MCP server `{name}`: protocol error calling `{tool}`: {} ({})",
                    d.message, d.code.0
                )
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let mut g = self.conn.lock().unwrap_or_else(|p| p.into_inner());
                let old = g.take();
                drop(g);
                drop(old);
                format!(
                    "MCP server `{name}`: the connection closed while calling `{tool}` ({e}){}",
                    self.stderr_note()
                )
            }
            ServiceError::Timeout { timeout } => {
                format!(
                    "MCP server `{name}`: tool `{tool}` timed out after {}",
                    secs(timeout)
                )
            }
            other => format!("MCP server `{name}`: calling `{tool}` failed: {other}"),
        }
    }

    /// "; its stderr ends with: ..." for stdio servers that wrote something.
    fn stderr_note(&self) -> String {
        let tail = self.stderr_tail();
        let tail = tail.trim_end();
        if tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = tail.lines().collect();
        let last = lines[lines.len().saturating_sub(5)..].join("\n");
        format!("; its stderr ends with:\n{last}")
    }

    /// Make sure `g` holds a live connection.
    fn ensure(&self, g: &mut Option<Conn>, stop: &AtomicBool) -> Result<(), String> {
        if let Some(c) = g.as_ref()
            && c.service.as_ref().is_some_and(|s| !s.is_closed())
        {
            return Ok(());
        }
        if let Some(old) = g.take() {
            self.close_conn(old);
        }
        *g = Some(self.connect(stop)?);
        Ok(())
    }

    fn connect(&self, stop: &AtomicBool) -> Result<Conn, String> {
        let spec = self.spec.clone();
        let name = spec.name.clone();
        let timeout = spec.timeout;
        let stderr = self.stderr.clone();
        let pid = self.pid.clone();
        let tag = self.tag.clone();
        let child_env = self.child_env.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let fut = async move {
            let service = match &spec.transport {
                McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let mut cmd = build_command(&spec.name, command, args, &child_env, env, cwd.as_deref())?;
                    tag.apply_tokio(&mut cmd);
                    let (transport, err) = TokioChildProcess::builder(cmd)
                        .stderr(std::process::Stdio::piped())
                        .spawn()
                        .map_err(|e| spawn_error(&spec.name, command, &e))?;
                    *pid.lock().unwrap_or_else(|p| p.into_inner()) = transport.id();
                    if let Some(err) = err {
                        tokio::spawn(read_stderr(err, stderr));
                    }
                    ().serve(transport).await.map_err(|e| {
                        format!(
                            "MCP server `{}`: the MCP handshake with `{command}` failed: {}",
                            spec.name,
                            chain(&e)
                        )
                    })?
                }
                McpTransport::Http { url, headers } => {
                    let mut custom = std::collections::HashMap::new();
                    for (k, v) in headers {
                        let hn =
                            reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|e| {
                                format!("MCP server `{}`: bad header name `{k}`: {e}", spec.name)
                            })?;
                        let hv = reqwest::header::HeaderValue::from_str(v).map_err(|e| {
                            format!(
                                "MCP server `{}`: bad value for header `{k}`: {e}",
                                spec.name
                            )
                        })?;
                        custom.insert(hn, hv);
                    }
                    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(custom);
                    let transport = StreamableHttpClientTransport::from_config(config);
                    ().serve(transport).await.map_err(|e| {
                        // The transport error is a field, not a `source`, of the init error.
                        let root: &(dyn std::error::Error + 'static) = match &e {
                            rmcp::service::ClientInitializeError::TransportError { error, .. } => error,
                            other => other,
                        };
                        if refused(root) {
                            format!("MCP server `{}`: connection refused at {url} (is the server running?)", spec.name)
                        } else if let Some(r) = reqwest_cause(root).filter(|r| r.is_connect() || r.is_timeout()) {
                            format!("MCP server `{}`: cannot connect to {url}: {}", spec.name, chain(r))
                        } else {
                            format!("MCP server `{}`: cannot connect to {url}: {}", spec.name, chain(&e))
                        }
                    })?
                }
                McpTransport::Sse { url } => {
                    return Err(format!(
                        "MCP server `{}`: the legacy `sse` transport ({url}) is not supported (the MCP client \
                         library, rmcp 3.9, has no SSE client); point `url` at the server's streamable-HTTP \
                         endpoint (often `/mcp` instead of `/sse`) and use `transport: streamable_http`",
                        spec.name
                    ));
                }
            };
            let listed = service.peer().list_all_tools().await;
            match listed {
                Ok(tools) => Ok((service, tools)),
                Err(e) => {
                    let msg = format!("MCP server `{}`: listing its tools failed: {e}", spec.name);
                    let mut service = service;
                    let _ = service.close_with_timeout(CLOSE_GRACE).await;
                    Err(msg)
                }
            }
        };
        let outcome = rt::block_on_until(fut, Some(stop), Some(Instant::now() + timeout));
        let (service, tools) = match outcome {
            Ok(Ok(x)) => x,
            Ok(Err(msg)) => {
                self.kill_group();
                let note = if matches!(self.spec.transport, McpTransport::Stdio { .. }) {
                    self.stderr_note()
                } else {
                    String::new()
                };
                return Err(format!("{msg}{note}"));
            }
            Err(why) => {
                self.kill_group();
                let what = match why {
                    Interrupted::TimedOut => {
                        format!("connecting timed out after {}", secs(timeout))
                    }
                    Interrupted::Stopped => {
                        "connecting was cancelled because the run was stopped".into()
                    }
                };
                return Err(format!("MCP server `{name}`: {what}{}", self.stderr_note()));
            }
        };
        let allowed = self.spec.allowed_tools.as_ref();
        let hook_tools: Vec<String> = tools
            .iter()
            .filter(|t| t.name.starts_with("hooks."))
            .map(|t| t.name.to_string())
            .collect();
        let tools = tools
            .into_iter()
            .filter(|t| !t.name.starts_with("hooks."))
            .filter(|t| allowed.is_none_or(|a| a.iter().any(|x| x == t.name.as_ref())))
            .map(|t| McpTool {
                name: format!("{}{}", self.spec.tool_prefix, t.name),
                tool: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: clean_schema(&Value::Object((*t.input_schema).clone())),
            })
            .collect();
        let peer = service.peer().clone();
        Ok(Conn {
            service: Some(service),
            peer,
            tools,
            hook_tools,
        })
    }

    fn close_conn(&self, mut conn: Conn) {
        if let Some(mut service) = conn.service.take() {
            let _ = rt::block_on_until(
                async move { service.close_with_timeout(CLOSE_GRACE).await },
                None,
                Some(Instant::now() + CLOSE_GRACE + Duration::from_millis(200)),
            );
        }
        self.kill_group();
    }

    /// Kill what is left of the child's process group (the server and anything it started).
    fn kill_group(&self) {
        let pid = self.pid.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(pid) = pid.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            // Only a server that was started can have left anything behind.
            self.tag.kill_all();
        }
    }

    /// Close the session and stop the child (also done on drop).
    pub fn close(&self) {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
        match conn {
            Some(c) => self.close_conn(c),
            None => self.kill_group(),
        }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.close();
    }
}

fn build_command(
    server: &str,
    command: &str,
    args: &[String],
    child_env: &ChildEnv,
    env: &[(String, String)],
    cwd: Option<&Path>,
) -> Result<tokio::process::Command, String> {
    let mut cmd = tokio::process::Command::new(command);
    // A scrubbed environment (`childenv`), then the server's own `env:` entries.
    child_env.apply_tokio(&mut cmd);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(dir) = cwd {
        if !dir.is_dir() {
            return Err(format!(
                "MCP server `{server}`: working directory {} does not exist",
                dir.display()
            ));
        }
        cmd.current_dir(dir);
    }
    // Its own process group, so that closing the run kills whatever the server started too.
    cmd.process_group(0);
    crate::proctag::limit_tokio(&mut cmd);
    cmd.kill_on_drop(true);
    Ok(cmd)
}

fn spawn_error(server: &str, command: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!(
                "MCP server `{server}`: command `{command}` not found (is it installed and on PATH?)"
            )
        }
        std::io::ErrorKind::PermissionDenied => {
            format!(
                "MCP server `{server}`: command `{command}` cannot be executed (permission denied)"
            )
        }
        _ => format!("MCP server `{server}`: cannot start `{command}`: {e}"),
    }
}

/// Copy a child's stderr into `buf` until it closes (UTF-8 split across reads is kept whole).
async fn read_stderr(mut err: tokio::process::ChildStderr, buf: Arc<Mutex<StderrBuf>>) {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0u8; 4096];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match err.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        let valid = match std::str::from_utf8(&pending) {
            Ok(_) => pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => pending.len(),
        };
        let text = String::from_utf8_lossy(&pending[..valid]).into_owned();
        pending.drain(..valid);
        buf.lock().unwrap_or_else(|p| p.into_inner()).push(&text);
    }
    if !pending.is_empty() {
        let text = String::from_utf8_lossy(&pending).into_owned();
        buf.lock().unwrap_or_else(|p| p.into_inner()).push(&text);
    }
}

// ---------------------------------------------------------------------------------------------
// Pool
// ---------------------------------------------------------------------------------------------

/// The MCP servers of one run, shared by all its nodes and forks (`Arc<McpPool>`). Servers
/// connect on first use; dropping the pool closes them all.
#[derive(Debug, Default)]
pub struct McpPool {
    servers: Vec<Arc<McpServer>>,
    /// Servers named by the agent that cannot be used, with the reason (no definition found,
    /// a bad entry); the reason is the error when one of them is used.
    unavailable: Vec<(String, String)>,
}

impl McpPool {
    pub fn new(specs: Vec<McpServerSpec>) -> McpPool {
        McpPool {
            servers: specs
                .into_iter()
                .map(|s| Arc::new(McpServer::new(s)))
                .collect(),
            unavailable: Vec::new(),
        }
    }

    /// The run's [`ChildEnv`] for every stdio server of the pool started from now on.
    pub fn set_child_env(&self, env: &ChildEnv) {
        for s in &self.servers {
            s.set_child_env(env);
        }
    }

    /// Record a server that cannot be used and why.
    pub fn add_unavailable(&mut self, name: &str, why: String) {
        self.unavailable.push((name.to_string(), why));
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty() && self.unavailable.is_empty()
    }

    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// The server `name`, or why there is none.
    pub fn server(&self, name: &str) -> Result<Arc<McpServer>, String> {
        if let Some(s) = self.servers.iter().find(|s| s.name() == name) {
            return Ok(s.clone());
        }
        if let Some((_, why)) = self.unavailable.iter().find(|(n, _)| n == name) {
            return Err(why.clone());
        }
        let known: Vec<&str> = self.servers.iter().map(|s| s.name()).collect();
        Err(format!(
            "no MCP server `{name}` is declared{}",
            if known.is_empty() {
                String::new()
            } else {
                format!(" (declared: {})", known.join(", "))
            }
        ))
    }

    /// `log` events for all stderr output not handed out yet.
    pub fn take_logs(&self) -> Vec<EventBody> {
        self.servers.iter().filter_map(|s| s.take_log()).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Loki: server definitions
// ---------------------------------------------------------------------------------------------

/// Where a Loki agent's MCP server definitions are looked for, in order: `mcp.json` in the
/// agent directory (a self-contained agent), then Loki's own `<config>/functions/mcp.json`
/// (agents live in `<config>/agents/<name>/`).
pub fn loki_config_files(agent_dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![agent_dir.join("mcp.json")];
    if let Some(config) = agent_dir.parent().and_then(Path::parent) {
        out.push(config.join("functions").join("mcp.json"));
    }
    out
}

/// The pool for a Loki agent that names `servers` in `mcp_servers`: each is defined by the first
/// of [`loki_config_files`] that has it under `mcpServers`. Nothing is started here; a server
/// with no definition (or a bad one) is recorded with a message naming the files looked at.
pub fn loki_pool(agent_dir: &Path, servers: &[String]) -> McpPool {
    let mut pool = McpPool::default();
    for spec in loki_server_specs(agent_dir, servers) {
        match spec {
            Ok(spec) => pool.servers.push(Arc::new(McpServer::new(spec))),
            Err((name, why)) => pool.add_unavailable(&name, why),
        }
    }
    pool
}

/// The definitions of the MCP servers a Loki agent names (see [`loki_pool`]), read without
/// starting anything: each server's spec, or its name and why it cannot be used.
pub fn loki_server_specs(agent_dir: &Path, servers: &[String]) -> Vec<Result<McpServerSpec, (String, String)>> {
    loki_server_entries(agent_dir, servers)
        .into_iter()
        .map(|found| {
            let (name, file, v) = found?;
            McpServerSpec::from_json(&name, &v, agent_dir, Some(&process_env))
                .map_err(|e| (name.clone(), format!("{e} (in {})", file.display())))
        })
        .collect()
}

/// One server's `mcpServers` entry as written: its name, the file defining it and the entry; or
/// its name and why no definition can be read.
pub type LokiServerEntry = Result<(String, PathBuf, Value), (String, String)>;

/// The `mcpServers` entries of the MCP servers a Loki agent names, as written (before `${VAR}`
/// expansion).
pub fn loki_server_entries(agent_dir: &Path, servers: &[String]) -> Vec<LokiServerEntry> {
    let mut out = Vec::new();
    if servers.is_empty() {
        return out;
    }
    let files = loki_config_files(agent_dir);
    // Each file that exists: its `mcpServers` entries, or why they cannot be read.
    type Entries = Result<Map<String, Value>, String>;
    let mut parsed: Vec<(PathBuf, Entries)> = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let entries = serde_json::from_str::<Value>(&text)
            .map_err(|e| format!("{} is not valid JSON: {e}", f.display()))
            .and_then(|v| match v.get("mcpServers") {
                Some(Value::Object(m)) => Ok(m.clone()),
                Some(_) => Err(format!("{}: `mcpServers` must be an object", f.display())),
                None => Ok(Map::new()),
            });
        parsed.push((f.clone(), entries));
    }
    for name in servers {
        let mut found = None;
        let mut problems = Vec::new();
        for (f, entries) in &parsed {
            match entries {
                Ok(m) => {
                    if let Some(v) = m.get(name) {
                        found = Some((f.clone(), v.clone()));
                        break;
                    }
                }
                Err(e) => problems.push(e.clone()),
            }
        }
        match found {
            Some((file, v)) => out.push(Ok((name.clone(), file, v))),
            None => {
                let looked: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                let mut msg = format!(
                    "MCP server `{name}` is not defined: looked for `mcpServers.{name}` in {}",
                    looked.join(" and ")
                );
                for p in problems {
                    msg.push_str(&format!("; {p}"));
                }
                out.push(Err((name.clone(), msg)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cleaning_drops_rejected_keywords_recursively_and_keeps_property_names() {
        let raw = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:x",
            "title": "Args",
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "int32", "description": "count", "examples": [1]},
                "format": {"type": "string", "enum": ["a", "format"], "format": "hostname", "default": "a"},
                "list": {"type": "array", "items": {"type": "string", "format": "uri", "$comment": "x"}},
                "either": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
                "nested": {"type": "object", "properties": {"$id": {"type": "string", "readOnly": true}}}
            },
            "required": ["n", "format"],
            "$defs": {"T": {"type": "string", "format": "email"}}
        });
        let clean = clean_schema(&raw);
        assert_eq!(
            clean,
            json!({
                "title": "Args",
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "description": "count"},
                    "format": {"type": "string", "enum": ["a", "format"], "default": "a"},
                    "list": {"type": "array", "items": {"type": "string"}},
                    "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "nested": {"type": "object", "properties": {"$id": {"type": "string"}}}
                },
                "required": ["n", "format"],
                "$defs": {"T": {"type": "string"}}
            })
        );
        let text = clean.to_string();
        assert!(!text.contains("$schema") && !text.contains("int32") && !text.contains("hostname"));
    }

    #[test]
    fn cleaning_makes_the_top_level_an_object_schema() {
        assert_eq!(
            clean_schema(&json!({})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            clean_schema(&json!({"type": "object"})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            clean_schema(&json!(true)),
            json!({"type": "object", "properties": {}})
        );
        let any = json!({"anyOf": [{"type": "object"}]});
        assert_eq!(clean_schema(&any), any);
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn env_expansion_braced_forms_only() {
        assert_eq!(
            expand_env("Bearer ${TOKEN}", &env).unwrap(),
            "Bearer s3cret"
        );
        assert_eq!(expand_env("${NOPE:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand_env("${EMPTY:-x}", &env).unwrap(), "");
        assert_eq!(expand_env("$TOKEN stays", &env).unwrap(), "$TOKEN stays");
        assert_eq!(expand_env("cost $$5", &env).unwrap(), "cost $5");
        assert_eq!(expand_env("plain", &env).unwrap(), "plain");
        let e = expand_env("x ${MISSING_VAR}", &env).unwrap_err();
        assert!(e.contains("`MISSING_VAR` is not set"), "{e}");
    }

    #[test]
    fn specs_from_both_declaration_shapes() {
        let base = Path::new("/agents/a");
        // sherma MCPServerDef (already interpolated at load: no expansion).
        let s = McpServerSpec::from_json(
            "fs",
            &json!({"id": "fs", "transport": "stdio", "command": "python3", "args": ["s.py", 3], "env": {"K": "${TOKEN}"}, "tool_prefix": "fs_"}),
            base,
            None,
        )
        .unwrap();
        assert_eq!(s.tool_prefix, "fs_");
        assert_eq!(
            s.transport,
            McpTransport::Stdio {
                command: "python3".into(),
                args: vec!["s.py".into(), "3".into()],
                env: vec![("K".into(), "${TOKEN}".into())],
                cwd: Some(base.to_path_buf())
            }
        );
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
        // A Claude/Loki entry: transport inferred, env and headers expanded.
        let s = McpServerSpec::from_json("x", &json!({"command": "srv", "env": {"T": "${TOKEN}", "N": 3}, "cwd": "sub", "timeout": 2.5}), base, Some(&env)).unwrap();
        match &s.transport {
            McpTransport::Stdio { env, cwd, .. } => {
                assert_eq!(
                    env,
                    &vec![
                        ("T".to_string(), "s3cret".to_string()),
                        ("N".to_string(), "3".to_string())
                    ]
                );
                assert_eq!(cwd.as_deref(), Some(Path::new("/agents/a/sub")));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.timeout, Duration::from_millis(2500));
        let h = McpServerSpec::from_json("h", &json!({"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "allowed_tools": ["a"]}), base, Some(&env)).unwrap();
        assert_eq!(
            h.transport,
            McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer s3cret".into())]
            }
        );
        assert_eq!(h.allowed_tools, Some(vec!["a".to_string()]));
        // Default transport of a sherma entry with only `url`, and the legacy `sse`.
        let d = McpServerSpec::from_json("d", &json!({"url": "http://h/mcp"}), base, None).unwrap();
        assert!(matches!(d.transport, McpTransport::Http { .. }));
        let sse = McpServerSpec::from_json(
            "old",
            &json!({"transport": "sse", "url": "http://h/sse"}),
            base,
            None,
        )
        .unwrap();
        assert!(matches!(sse.transport, McpTransport::Sse { .. }));
        // Problems name the server.
        let e = McpServerSpec::from_json(
            "m",
            &json!({"headers": {"A": "${NOPE_X}"}, "url": "http://h"}),
            base,
            Some(&env),
        )
        .unwrap_err();
        assert!(e.contains("MCP server `m`") && e.contains("NOPE_X"), "{e}");
        let e =
            McpServerSpec::from_json("m", &json!({"transport": "stdio"}), base, None).unwrap_err();
        assert!(e.contains("needs `command`"), "{e}");
        let e = McpServerSpec::from_json(
            "m",
            &json!({"transport": "websocket", "url": "ws://h"}),
            base,
            None,
        )
        .unwrap_err();
        assert!(e.contains("unknown transport `websocket`"), "{e}");
        let e = McpServerSpec::from_json("m", &json!({"command": "x", "timeout": -1}), base, None)
            .unwrap_err();
        assert!(e.contains("`timeout`"), "{e}");
    }

    #[test]
    fn stderr_buffer_keeps_the_tail_and_hands_out_new_text_once() {
        let mut b = StderrBuf::default();
        b.push("hello\n");
        assert_eq!(&b.text[b.unread..], "hello\n");
        b.unread = b.text.len();
        let big = "é".repeat(STDERR_CAP);
        b.push(&big);
        assert!(b.text.len() <= STDERR_CAP);
        assert!(b.text.is_char_boundary(0));
        assert!(b.unread <= b.text.len());
    }

    #[test]
    fn the_sse_transport_is_refused_with_a_hint() {
        let s = McpServer::new(McpServerSpec {
            name: "old".into(),
            transport: McpTransport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
            },
            timeout: Duration::from_secs(5),
            tool_prefix: String::new(),
            allowed_tools: None,
        });
        let e = s.list_tools(&AtomicBool::new(false)).unwrap_err();
        assert!(
            e.contains("legacy `sse` transport") && e.contains("streamable-HTTP"),
            "{e}"
        );
    }

    #[test]
    fn loki_definitions_missing_name_the_server_and_the_files() {
        let dir = std::env::temp_dir().join(format!("switchyard-mcp-unit-{}", std::process::id()));
        let agent = dir.join("agents").join("a");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(dir.join("functions")).unwrap();
        std::fs::write(
            dir.join("functions").join("mcp.json"),
            r#"{"mcpServers": {"ddg": {"command": "uvx", "args": ["ddg"]}}}"#,
        )
        .unwrap();
        let pool = loki_pool(&agent, &["ddg".into(), "nope".into()]);
        assert_eq!(pool.server("ddg").unwrap().name(), "ddg");
        let e = pool.server("nope").unwrap_err();
        assert!(e.contains("`nope` is not defined"), "{e}");
        assert!(
            e.contains(&agent.join("mcp.json").display().to_string()),
            "{e}"
        );
        assert!(
            e.contains(&dir.join("functions").join("mcp.json").display().to_string()),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
