//! sherma hook executors (`hooks:`), chained at every hook point of reference/sherma.md §10.
//!
//! Three kinds of executor, run in declaration order:
//!
//! - `import_path`: a Python class (or instance) in the run's Python bridge. A method that is
//!   not defined is skipped; a defined one gets a context object, and whatever it returns — or,
//!   for `None`, the same object with its in-place changes — is the context the next executor
//!   sees. An exception fails the node (as upstream). `sherma` need not be installed: the
//!   bridge provides `sherma.BaseHookExecutor` and `sherma.hooks.types` when it is missing.
//! - `url`: a JSON-RPC 2.0 endpoint, one POST per hook call (method = the hook point, params =
//!   the context without `node_context`/`agent`/`chat_model`/`registries`). A `null` result
//!   passes; an object result rebuilds the context, except the read-only fields (`messages`,
//!   `response`, `tools`, `tool_calls`, `error`), which stay as they were. A timeout, transport,
//!   HTTP or JSON-RPC error is a warning (a `hook` event with outcome `failed`) and the context
//!   passes on unchanged. Unlike upstream, the state is always serialisable JSON, so a remote
//!   hook never fails the node (upstream raises on LangChain messages in `state`).
//! - `mcp`: an MCP server whose `hooks.<point>` tools are called with `{params: <context>}`;
//!   the result (structured content, `{"result": …}` unwrapped, or JSON text) is read back like
//!   a JSON-RPC result. It connects at the first hook point; a server that cannot be reached
//!   fails that node, naming it (upstream fails the agent's load).
//!
//! `on_chat_model_create` reaches Python executors only (as upstream). Every executor that
//! handles a point leaves a `hook` event (outcome, changed fields, duration) for the debugger.

use runtime::events::{EventBody, HookOutcome};
use connect::mcp::{McpServer, McpServerSpec};
use runtime::session::Cx;
use connect::rt::{self, Interrupted};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every hook point, in reference/sherma.md §10.1's order.
pub const POINTS: [&str; 20] = [
    "before_llm_call",
    "after_llm_call",
    "before_tool_call",
    "after_tool_call",
    "before_agent_call",
    "after_agent_call",
    "before_skill_load",
    "after_skill_load",
    "before_skill_unload",
    "after_skill_unload",
    "node_enter",
    "node_execute",
    "node_exit",
    "before_interrupt",
    "after_interrupt",
    "on_chat_model_create",
    "before_graph_invoke",
    "after_graph_invoke",
    "on_node_error",
    "on_error",
];

/// Context fields a remote executor sees but cannot change.
const READ_ONLY: [&str; 5] = ["messages", "response", "tools", "tool_calls", "error"];
/// Context fields never sent to a remote executor (Python objects upstream).
const NOT_SENT: [&str; 4] = ["node_context", "agent", "chat_model", "registries"];

/// Default time limit of one remote hook call (upstream's 30 s) and of a Python hook method.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest remote hook response read.
const MAX_RESPONSE: usize = 8 << 20;

/// Runs Python hook methods (the run's Python bridge).
pub type PyHook<'a> = &'a dyn Fn(&str, &str, &Value, Duration) -> Result<Option<Value>, String>;

enum Source {
    Python(String),
    Remote(String),
    Mcp {
        server: Arc<McpServer>,
        /// The server's `hooks.*` tools, once connected.
        tools: Mutex<Option<Vec<String>>>,
    },
}

struct Executor {
    label: String,
    source: Source,
    timeout: Duration,
}

/// The hook executors of one run (shared by its forks).
#[derive(Default)]
pub struct Hooks {
    execs: Vec<Executor>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.execs.iter().map(|e| &e.label)).finish()
    }
}

impl Hooks {
    /// The executors declared under `hooks:` (each entry a JSON object with one of
    /// `import_path`, `url`, `mcp`; optional `timeout` in seconds, a Switchyard extension).
    /// Entries that cannot be used are returned as messages (the loader already reported
    /// their shape).
    pub fn from_entries(entries: &[Value], base_dir: &Path) -> (Hooks, Vec<String>) {
        let mut execs = Vec::new();
        let mut bad = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let timeout = e
                .get("timeout")
                .and_then(Value::as_f64)
                .filter(|t| t.is_finite() && *t > 0.0)
                .map(|t| Duration::from_secs_f64(t.min(86_400.0)))
                .unwrap_or(DEFAULT_TIMEOUT);
            if let Some(p) = e.get("import_path").and_then(Value::as_str) {
                execs.push(Executor { label: format!("python:{p}"), source: Source::Python(p.to_string()), timeout });
            } else if let Some(u) = e.get("url").and_then(Value::as_str) {
                execs.push(Executor { label: format!("url:{u}"), source: Source::Remote(u.to_string()), timeout });
            } else if let Some(m) = e.get("mcp").filter(|m| m.is_object()) {
                let name = format!("hooks#{}", i + 1);
                match McpServerSpec::from_json(&name, m, base_dir, None) {
                    Ok(mut spec) => {
                        if m.get("timeout").is_none() {
                            spec.timeout = timeout;
                        }
                        let label = match &spec.transport {
                            connect::mcp::McpTransport::Stdio { command, .. } => format!("mcp:{command}"),
                            connect::mcp::McpTransport::Http { url, .. }
                            | connect::mcp::McpTransport::Sse { url } => format!("mcp:{url}"),
                        };
                        execs.push(Executor {
                            label,
                            source: Source::Mcp { server: Arc::new(McpServer::new(spec)), tools: Mutex::new(None) },
                            timeout,
                        });
                    }
                    Err(err) => bad.push(format!("hook {}: {err}", i + 1)),
                }
            } else {
                bad.push(format!("hook {}: needs one of `import_path`, `url` or `mcp`", i + 1));
            }
        }
        (Hooks { execs, next_id: AtomicU64::new(1) }, bad)
    }

    /// The run's environment for the MCP hook servers (`connect::childenv`).
    pub fn set_child_env(&self, env: &connect::childenv::ChildEnv) {
        for e in &self.execs {
            if let Source::Mcp { server, .. } = &e.source {
                server.set_child_env(env);
            }
        }
    }

    /// No executors: callers skip building contexts altogether.
    pub fn is_empty(&self) -> bool {
        self.execs.is_empty()
    }

    /// Whether any executor may handle `point` (remote and MCP executors never get
    /// `on_chat_model_create`).
    pub fn any_for(&self, point: &str) -> bool {
        self.execs.iter().any(|e| point != "on_chat_model_create" || matches!(e.source, Source::Python(_)))
    }

    /// Run `point`'s chain over `ctx`: every executor in order, each seeing the context the
    /// previous one left. `Err` is a failure that fails the node (a Python hook raised, an MCP
    /// hook server cannot be reached); remote failures are warnings.
    pub fn fire(&self, point: &str, node: Option<&str>, ctx: Value, cx: &Cx<'_>, py: PyHook<'_>) -> Result<Value, String> {
        let mut ctx = ctx;
        for e in &self.execs {
            if cx.stopped() {
                break;
            }
            let t0 = Instant::now();
            let before = ctx.clone();
            let call = || match &e.source {
                Source::Python(path) => py(path, point, &ctx, e.timeout).map_err(|m| (m, true)),
                Source::Remote(url) if point != "on_chat_model_create" => self.remote(url, point, &ctx, e.timeout, cx),
                Source::Mcp { server, tools } if point != "on_chat_model_create" => mcp_call(server, tools, point, &ctx, cx),
                _ => Ok(None),
            };
            // An effect: a replay of a recording takes the hook's recorded answer and runs no
            // Python, contacts no server. Recorded as `{"result": ...}` or `{"error", "hard"}`.
            let recorded = cx.effect(node.unwrap_or("@run"), &format!("hook:{}:{point}", e.label), &ctx, || {
                Ok(match call() {
                    Ok(v) => json!({"result": v}),
                    Err((message, hard)) => json!({"error": message, "hard": hard}),
                })
            });
            let result = match recorded {
                Ok(v) => match v.get("error").and_then(Value::as_str) {
                    Some(m) => Err((m.to_string(), v.get("hard").and_then(Value::as_bool).unwrap_or(true))),
                    None => Ok(v.get("result").cloned().filter(|r| !r.is_null())),
                },
                Err(m) => Err((m, true)),
            };
            let emit = |outcome: HookOutcome, detail: Option<String>| {
                cx.emit(EventBody::Hook {
                    node: node.map(str::to_string),
                    point: point.to_string(),
                    executor: e.label.clone(),
                    outcome,
                    duration_ms: t0.elapsed().as_millis() as u64,
                    detail,
                });
            };
            match result {
                Ok(None) => {}
                Ok(Some(new)) => {
                    let new = match &e.source {
                        Source::Python(_) => merge_python(&before, new),
                        _ => rebuild(&before, new),
                    };
                    let changed = changed_fields(&before, &new);
                    let consumed = matches!(point, "on_node_error" | "on_error")
                        && !before.get("error").is_none_or(Value::is_null)
                        && new.get("error").is_none_or(Value::is_null);
                    let outcome = if consumed {
                        HookOutcome::Consumed
                    } else if changed.is_empty() {
                        HookOutcome::Pass
                    } else {
                        HookOutcome::Modified
                    };
                    emit(outcome, (!changed.is_empty()).then(|| changed.join(", ")));
                    ctx = new;
                }
                Err((message, hard)) => {
                    emit(HookOutcome::Failed, Some(message.clone()));
                    if hard {
                        return Err(format!("hook `{}` ({point}): {message}", e.label));
                    }
                }
            }
        }
        Ok(ctx)
    }

    /// One JSON-RPC call; `Ok(None)` = a `null` result (pass through).
    fn remote(&self, url: &str, point: &str, ctx: &Value, timeout: Duration, cx: &Cx<'_>) -> Result<Option<Value>, (String, bool)> {
        cx.network("the remote hook", url).map_err(|e| (e, true))?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "method": point, "params": sendable(ctx), "id": id});
        let url_owned = url.to_string();
        let fut = async move {
            let resp = connect::llm::http::client()
                .post(&url_owned)
                .json(&body)
                .send()
                .await
                .map_err(|e| format!("cannot reach the hook server: {}", connect::llm::http::error_chain(&e)))?;
            let status = resp.status();
            if let Some(len) = resp.content_length()
                && len as usize > MAX_RESPONSE
            {
                return Err(format!("the response is larger than {} MiB", MAX_RESPONSE >> 20));
            }
            let bytes = read_limited(resp).await?;
            if !status.is_success() {
                return Err(format!("HTTP {status}: {}", snippet(&bytes)));
            }
            serde_json::from_slice::<Value>(&bytes).map_err(|e| format!("the response is not JSON ({e}): {}", snippet(&bytes)))
        };
        let reply = match rt::block_on_until(fut, Some(cx.stop), Some(Instant::now() + timeout)) {
            Err(Interrupted::TimedOut) => return Err((format!("no answer within {:.1}s; passing through", timeout.as_secs_f64()), false)),
            Err(Interrupted::Stopped) => return Ok(None),
            Ok(Err(e)) => return Err((format!("{e}; passing through"), false)),
            Ok(Ok(v)) => v,
        };
        if let Some(err) = reply.get("error").filter(|e| !e.is_null()) {
            let msg = err.get("message").and_then(Value::as_str).unwrap_or("error");
            let code = err.get("code").map(Value::to_string).unwrap_or_default();
            return Err((format!("the hook server answered error {code}: {msg}; passing through"), false));
        }
        match reply.get("result") {
            None => Err(("the response has neither `result` nor `error`; passing through".into(), false)),
            Some(Value::Null) => Ok(None),
            Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
            Some(other) => Err((format!("the result is {}, not an object or null; passing through", kind_of(other)), false)),
        }
    }
}

/// One `hooks.<point>` tool call. `Err((message, hard))`: hard = the server cannot be used.
fn mcp_call(
    server: &McpServer,
    tools: &Mutex<Option<Vec<String>>>,
    point: &str,
    ctx: &Value,
    cx: &Cx<'_>,
) -> Result<Option<Value>, (String, bool)> {
    let listed = {
        let mut g = tools.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            server.network(cx).map_err(|e| (e, true))?;
            let t = server.hook_tools(cx.stop).map_err(|e| (e, true))?;
            *g = Some(t);
        }
        g.clone().unwrap_or_default()
    };
    if let Some(ev) = server.take_log() {
        cx.emit(ev);
    }
    let tool = format!("hooks.{point}");
    if !listed.contains(&tool) {
        return Ok(None);
    }
    let out = server.call(&tool, &json!({"params": sendable(ctx)}), cx.stop).map_err(|e| (format!("{e}; passing through"), false))?;
    let v = match out {
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v) => v,
            Err(_) if s.trim().is_empty() || s.trim() == "null" => Value::Null,
            Err(e) => return Err((format!("`{tool}` returned text that is not JSON ({e}); passing through"), false)),
        },
        v => v,
    };
    let v = match v {
        Value::Object(mut m) if m.len() == 1 && m.contains_key("result") => m.shift_remove("result").unwrap_or(Value::Null),
        v => v,
    };
    match v {
        Value::Null => Ok(None),
        v @ Value::Object(_) => Ok(Some(v)),
        other => Err((format!("`{tool}` returned {}, not an object or null; passing through", kind_of(&other)), false)),
    }
}

async fn read_limited(mut resp: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("reading the response failed: {e}"))? {
        out.extend_from_slice(&chunk);
        if out.len() > MAX_RESPONSE {
            return Err(format!("the response is larger than {} MiB", MAX_RESPONSE >> 20));
        }
    }
    Ok(out)
}


fn snippet(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    if s.chars().count() > 200 { format!("{}…", s.chars().take(200).collect::<String>()) } else { s.to_string() }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The context as sent to a remote executor.
fn sendable(ctx: &Value) -> Value {
    match ctx {
        Value::Object(m) => Value::Object(m.iter().filter(|(k, _)| !NOT_SENT.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()),
        other => other.clone(),
    }
}

/// A remote result laid over the original context: known, writable fields from the result.
fn rebuild(orig: &Value, result: Value) -> Value {
    let (Value::Object(o), Value::Object(r)) = (orig, result) else { return orig.clone() };
    let mut out: Map<String, Value> = o.clone();
    for (k, v) in r {
        if o.contains_key(&k) && !READ_ONLY.contains(&k.as_str()) && !NOT_SENT.contains(&k.as_str()) {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

/// A Python hook's context: every field it left, but the fields that are Python objects
/// upstream (`node_context`, `registries`, `agent`) keep their original value.
fn merge_python(orig: &Value, result: Value) -> Value {
    let (Value::Object(o), Value::Object(r)) = (orig, result) else { return orig.clone() };
    let mut out: Map<String, Value> = o.clone();
    for (k, v) in r {
        if !matches!(k.as_str(), "node_context" | "registries" | "agent") && o.contains_key(&k) {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

fn changed_fields(a: &Value, b: &Value) -> Vec<String> {
    let (Value::Object(a), Value::Object(b)) = (a, b) else { return Vec::new() };
    a.iter().filter(|(k, v)| b.get(*k) != Some(*v)).map(|(k, _)| k.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_results_cannot_touch_read_only_fields() {
        let orig = json!({"node_name": "a", "system_prompt": "s", "messages": [1], "error": {"type": "X", "message": "m"}});
        let got = rebuild(&orig, json!({"system_prompt": "t", "messages": [], "error": null, "extra": 1}));
        assert_eq!(got, json!({"node_name": "a", "system_prompt": "t", "messages": [1], "error": {"type": "X", "message": "m"}}));
    }

    #[test]
    fn sendable_drops_python_objects() {
        let ctx = json!({"node_context": {"x": 1}, "node_name": "a", "registries": {}, "state": {"k": 1}});
        assert_eq!(sendable(&ctx), json!({"node_name": "a", "state": {"k": 1}}));
    }

    #[test]
    fn python_results_keep_node_context_and_may_clear_errors() {
        let orig = json!({"node_context": {"node_name": "a"}, "error": {"type": "X", "message": "m"}});
        let got = merge_python(&orig, json!({"node_context": "changed", "error": null}));
        assert_eq!(got, json!({"node_context": {"node_name": "a"}, "error": null}));
        assert_eq!(changed_fields(&orig, &got), vec!["error".to_string()]);
    }

    #[test]
    fn entries_need_a_source() {
        let (h, bad) = Hooks::from_entries(
            &[json!({"url": "http://127.0.0.1:1/hooks", "timeout": 2}), json!({"import_path": "m.H"}), json!({})],
            Path::new("."),
        );
        assert_eq!(h.execs.len(), 2);
        assert_eq!(h.execs[0].timeout, Duration::from_secs(2));
        assert_eq!(h.execs[1].label, "python:m.H");
        assert_eq!(bad.len(), 1);
        assert!(h.any_for("on_chat_model_create"));
        let (remote_only, _) = Hooks::from_entries(&[json!({"url": "http://127.0.0.1:1/hooks"})], Path::new("."));
        assert!(!remote_only.any_for("on_chat_model_create") && remote_only.any_for("node_enter"));
    }
}
