//! MCP tools (src/run/mcp.rs) against real servers on this machine only: the stdio server in
//! `tests/fixtures/mcp/stdio_server.py` (plain Python) and a streamable-HTTP server built here
//! with rmcp's server side on 127.0.0.1. Tools are listed, called, timed out, fail in band;
//! missing commands and refused connections are named; stderr goes to the run log; children
//! die with their server. Then one sherma agent and one Loki agent run end to end with scripted
//! LLM replies and a tool call that goes to an MCP server.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use switchyard::run::events::{Event, EventBody, RunStatus};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::mcp::{McpPool, McpServer, McpServerSpec, McpTransport};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{RunOptions, RunSession};
use test_support::TempDir;
use test_support::http::{closed_port_url, serve};
use test_support::run::{finished, tool_results};
use test_support::{process_gone, wait_until};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp")
}

fn server_py() -> String {
    fixtures().join("stdio_server.py").display().to_string()
}

fn stdio(extra: &[&str]) -> McpServer {
    let py = server_py();
    let mut args = vec![py.as_str()];
    args.extend_from_slice(extra);
    McpServer::new(McpServerSpec::stdio("calc", "python3", &args))
}

fn wait_dead(pid: u32) -> bool {
    wait_until(Duration::from_secs(5), || process_gone(pid))
}

fn go() -> AtomicBool {
    AtomicBool::new(false)
}

fn read_pid(file: &Path) -> u32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(file)
            && let Ok(p) = s.trim().parse()
        {
            return p;
        }
        assert!(
            Instant::now() < until,
            "the server never wrote {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------------------------------------
// A streamable-HTTP server (rmcp's server side, axum on 127.0.0.1:0)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct MulArgs {
    /// left factor
    a: i32,
    b: i32,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct NapArgs {
    ms: u64,
}

#[derive(Debug, Clone)]
struct HttpTools {
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl HttpTools {
    fn new() -> Self {
        HttpTools {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Multiply two integers")]
    async fn mul(&self, Parameters(MulArgs { a, b }): Parameters<MulArgs>) -> String {
        (a * b).to_string()
    }

    #[tool(description = "Sleep for `ms` milliseconds")]
    async fn nap(&self, Parameters(NapArgs { ms }): Parameters<NapArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        "awake".into()
    }

    #[tool(description = "The X-Test request header")]
    async fn header(&self, Extension(parts): Extension<axum::http::request::Parts>) -> String {
        parts
            .headers
            .get("x-test")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    }
}

#[tool_handler]
impl ServerHandler for HttpTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// Start the HTTP server on 127.0.0.1; its URL.
fn http_server() -> String {
    let service: StreamableHttpService<HttpTools, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(HttpTools::new()), Default::default(), StreamableHttpServerConfig::default());
    let addr = serve(axum::Router::new().nest_service("/mcp", service)).keep();
    format!("http://{addr}/mcp")
}

// ---------------------------------------------------------------------------------------------
// stdio
// ---------------------------------------------------------------------------------------------

#[test]
fn stdio_tools_are_listed_with_cleaned_schemas_and_without_hooks() {
    let s = stdio(&[]);
    assert!(!s.is_connected(), "nothing starts before first use");
    let tools = s.list_tools(&go()).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["add", "echo", "slow", "fail", "env"],
        "`hooks.*` tools are left out"
    );
    let add = &tools[0];
    assert_eq!(add.description, "Add two integers.");
    assert_eq!(
        add.input_schema,
        json!({"type": "object",
               "properties": {"a": {"type": "integer", "description": "left"}, "b": {"type": "integer"}},
               "required": ["a", "b"]})
    );
    // A property named `format` survives; the keyword `format` inside it does not.
    let echo = &tools[1].input_schema;
    assert_eq!(
        echo["properties"]["format"],
        json!({"type": "string", "enum": ["plain", "upper"]})
    );
    assert_eq!(add.offer()["parameters"], add.input_schema);
    assert!(s.is_connected());
}

#[test]
fn stdio_tools_are_called() {
    let s = stdio(&[]);
    let stop = go();
    assert_eq!(
        s.call("add", &json!({"a": 2, "b": 40}), &stop).unwrap(),
        json!("42")
    );
    assert_eq!(
        s.call("echo", &json!({"text": "hi", "format": "upper"}), &stop)
            .unwrap(),
        json!("HI")
    );
    // One connection serves every call.
    let pid = s.child_pid().unwrap();
    assert_eq!(
        s.call("add", &json!({"a": 1, "b": 1}), &stop).unwrap(),
        json!("2")
    );
    assert_eq!(s.child_pid(), Some(pid));
    let e = s.call("add", &json!([1, 2]), &stop).unwrap_err();
    assert!(e.contains("takes an object of arguments"), "{e}");
}

#[test]
fn a_huge_result_is_refused_and_the_server_stays_usable() {
    let s = stdio(&[]);
    let stop = go();
    // 9 MiB of text: over the 8 MiB limit.
    let e = s
        .call("echo", &json!({"text": "x".repeat(1024), "times": 9 * 1024}), &stop)
        .unwrap_err();
    assert!(e.contains("more than the 8 MiB"), "{e}");
    assert!(e.contains("`echo`"), "{e}");
    // Just under the limit is fine, and the connection still serves calls.
    let ok = s.call("echo", &json!({"text": "y".repeat(1024), "times": 1024}), &stop).unwrap();
    assert_eq!(ok.as_str().map(str::len), Some(1024 * 1024));
    assert_eq!(s.call("add", &json!({"a": 1, "b": 2}), &stop).unwrap(), json!("3"));
}

#[test]
fn prefix_and_allowed_tools() {
    let py = server_py();
    let spec = McpServerSpec::from_json(
        "calc",
        &json!({"transport": "stdio", "command": "python3", "args": [py], "tool_prefix": "calc_", "allowed_tools": ["add", "echo"]}),
        Path::new(env!("CARGO_MANIFEST_DIR")),
        None,
    )
    .unwrap();
    let s = McpServer::new(spec);
    let tools = s.list_tools(&go()).unwrap();
    let pairs: Vec<(&str, &str)> = tools
        .iter()
        .map(|t| (t.name.as_str(), t.tool.as_str()))
        .collect();
    assert_eq!(pairs, [("calc_add", "add"), ("calc_echo", "echo")]);
    assert_eq!(
        s.call(&tools[0].tool, &json!({"a": 1, "b": 2}), &go())
            .unwrap(),
        json!("3")
    );
}

#[test]
fn env_values_reach_the_child_with_braced_expansion() {
    let lookup = |n: &str| (n == "MCP_TEST_TOKEN").then(|| "tok-123".to_string());
    let spec = McpServerSpec::from_json(
        "calc",
        &json!({"command": "python3", "args": [server_py()], "env": {"SECRET": "Bearer ${MCP_TEST_TOKEN}", "LITERAL": "$HOME"}}),
        Path::new(env!("CARGO_MANIFEST_DIR")),
        Some(&lookup),
    )
    .unwrap();
    let s = McpServer::new(spec);
    assert_eq!(
        s.call("env", &json!({"name": "SECRET"}), &go()).unwrap(),
        json!("Bearer tok-123")
    );
    assert_eq!(
        s.call("env", &json!({"name": "LITERAL"}), &go()).unwrap(),
        json!("$HOME")
    );
}

#[test]
fn a_slow_call_times_out_fast_with_a_clear_message() {
    let s = stdio(&[]);
    s.list_tools(&go()).unwrap();
    let t0 = Instant::now();
    let e = s
        .call_with_timeout(
            "slow",
            &json!({"seconds": 30}),
            &go(),
            Duration::from_millis(400),
        )
        .unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(e, "MCP server `calc`: tool `slow` timed out after 0.4s");
    // The spec's own timeout applies to `call`.
    // (Connected first and with room to spare: a loaded machine may take seconds to start Python.)
    let mut spec = McpServerSpec::stdio("slowpoke", "python3", &[&server_py()]);
    spec.timeout = Duration::from_secs(5);
    let s2 = McpServer::new(spec);
    s2.list_tools(&go()).unwrap();
    let e = s2.call("slow", &json!({"seconds": 30}), &go()).unwrap_err();
    assert_eq!(e, "MCP server `slowpoke`: tool `slow` timed out after 5s");
}

#[test]
fn the_stop_flag_cancels_a_call() {
    let s = stdio(&[]);
    s.list_tools(&go()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        st.store(true, Ordering::Relaxed);
    });
    let t0 = Instant::now();
    let e = s.call("slow", &json!({"seconds": 30}), &stop).unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(e.contains("cancelled because the run was stopped"), "{e}");
}

#[test]
fn in_band_errors_and_protocol_errors_are_told_apart() {
    let s = stdio(&[]);
    let e = s
        .call("fail", &json!({"reason": "disk full"}), &go())
        .unwrap_err();
    assert_eq!(
        e,
        "MCP server `calc`: tool `fail` reported an error: it broke: disk full"
    );
    let e = s.call("nope", &json!({}), &go()).unwrap_err();
    assert!(
        e.starts_with("MCP server `calc`: protocol error calling `nope`: unknown tool: nope"),
        "{e}"
    );
    // The connection is still fine.
    assert_eq!(
        s.call("add", &json!({"a": 1, "b": 2}), &go()).unwrap(),
        json!("3")
    );
}

#[test]
fn a_missing_command_is_named() {
    let s = McpServer::new(McpServerSpec::stdio(
        "ghost",
        "switchyard-no-such-mcp-server",
        &[],
    ));
    let e = s.list_tools(&go()).unwrap_err();
    assert_eq!(
        e,
        "MCP server `ghost`: command `switchyard-no-such-mcp-server` not found (is it installed and on PATH?)"
    );
    let e = s.call("x", &json!({}), &go()).unwrap_err();
    assert!(e.contains("not found"), "{e}");
}

#[test]
fn a_server_that_exits_during_the_handshake_shows_its_stderr() {
    let s = McpServer::new(McpServerSpec::stdio(
        "broken",
        "python3",
        &[
            "-c",
            "import sys; sys.stderr.write('missing API key\\n'); sys.exit(3)",
        ],
    ));
    let e = s.list_tools(&go()).unwrap_err();
    assert!(
        e.starts_with("MCP server `broken`: the MCP handshake with `python3` failed"),
        "{e}"
    );
    assert!(e.contains("missing API key"), "{e}");
}

#[test]
fn stderr_is_captured_for_the_run_log() {
    let s = stdio(&["--name", "chatty"]);
    s.call("echo", &json!({"text": "hello"}), &go()).unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while !s.stderr_tail().contains("echo called with hello") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let tail = s.stderr_tail();
    assert!(tail.contains("server chatty starting"), "{tail}");
    assert!(tail.contains("echo called with hello"), "{tail}");
    match s.take_log() {
        Some(EventBody::Log { source, text }) => {
            assert_eq!(source, "mcp:calc");
            assert!(text.contains("server chatty starting"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.take_log(), None, "each line is handed out once");
    assert!(
        s.stderr_tail().contains("chatty"),
        "the tail stays readable"
    );
}

#[test]
fn the_child_is_killed_when_the_server_is_dropped() {
    let dir = TempDir::new("mcp-pid");
    let pid_file = dir.join("pid");
    let pf = pid_file.display().to_string();
    let s = stdio(&["--pid-file", &pf]);
    s.list_tools(&go()).unwrap();
    let pid = read_pid(&pid_file);
    assert_eq!(s.child_pid(), Some(pid));
    assert!(!process_gone(pid));
    drop(s);
    assert!(
        wait_dead(pid),
        "server process {pid} outlived its McpServer"
    );

    // Also while a call is still running in the server (it ignores its closed stdin).
    let pid_file2 = dir.join("pid2");
    let pf2 = pid_file2.display().to_string();
    let s = stdio(&["--pid-file", &pf2]);
    let _ = s.call_with_timeout(
        "slow",
        &json!({"seconds": 30}),
        &go(),
        Duration::from_millis(200),
    );
    let pid2 = read_pid(&pid_file2);
    let t0 = Instant::now();
    drop(s);
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "closing took {:?}",
        t0.elapsed()
    );
    assert!(
        wait_dead(pid2),
        "busy server process {pid2} outlived its McpServer"
    );
}

#[test]
fn dropping_a_pool_stops_every_server() {
    let dir = TempDir::new("mcp-pool");
    let (a, b) = (dir.join("a"), dir.join("b"));
    let (pa, pb) = (a.display().to_string(), b.display().to_string());
    let py = server_py();
    let pool = McpPool::new(vec![
        McpServerSpec::stdio("one", "python3", &[&py, "--pid-file", &pa]),
        McpServerSpec::stdio("two", "python3", &[&py, "--pid-file", &pb]),
    ]);
    for s in pool.servers() {
        s.list_tools(&go()).unwrap();
    }
    let pids = [read_pid(&a), read_pid(&b)];
    let e = pool.server("three").unwrap_err();
    assert_eq!(e, "no MCP server `three` is declared (declared: one, two)");
    drop(pool);
    for p in pids {
        assert!(wait_dead(p), "{p} survived the pool");
    }
}

// ---------------------------------------------------------------------------------------------
// streamable HTTP
// ---------------------------------------------------------------------------------------------

#[test]
fn http_tools_are_listed_called_and_timed_out() {
    let url = http_server();
    let spec = McpServerSpec::from_json(
        "web",
        &json!({"transport": "streamable_http", "url": url, "headers": {"X-Test": "v-${MCP_HTTP_TEST}"}, "tool_prefix": "web_"}),
        Path::new("."),
        Some(&|n: &str| (n == "MCP_HTTP_TEST").then(|| "7".to_string())),
    )
    .unwrap();
    let s = McpServer::new(spec);
    let tools = s.list_tools(&go()).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for n in ["web_mul", "web_nap", "web_header"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let mul = tools.iter().find(|t| t.tool == "mul").unwrap();
    assert_eq!(mul.description, "Multiply two integers");
    // schemars' `$schema` and `format: int32` are gone.
    let text = mul.input_schema.to_string();
    assert!(
        !text.contains("$schema") && !text.contains("int32"),
        "{text}"
    );
    assert_eq!(mul.input_schema["type"], "object");
    assert_eq!(mul.input_schema["properties"]["a"]["type"], "integer");
    assert_eq!(mul.input_schema["required"], json!(["a", "b"]));

    assert_eq!(
        s.call("mul", &json!({"a": 6, "b": 7}), &go()).unwrap(),
        json!("42")
    );
    assert_eq!(
        s.call("header", &json!({}), &go()).unwrap(),
        json!("v-7"),
        "headers are sent, expanded"
    );
    let t0 = Instant::now();
    let e = s
        .call_with_timeout(
            "nap",
            &json!({"ms": 20000}),
            &go(),
            Duration::from_millis(300),
        )
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(e, "MCP server `web`: tool `nap` timed out after 0.3s");
    // The session survives a timed-out call.
    assert_eq!(
        s.call("mul", &json!({"a": 2, "b": 3}), &go()).unwrap(),
        json!("6")
    );
    let e = s.call("nope", &json!({}), &go()).unwrap_err();
    assert!(
        e.starts_with("MCP server `web`: protocol error calling `nope`"),
        "{e}"
    );
}

#[test]
fn a_refused_connection_is_named() {
    // A port nobody listens on: bind one, then let it go.
    let url = format!("{}/mcp", closed_port_url());
    let mut spec = McpServerSpec::http("offline", &url);
    spec.timeout = Duration::from_secs(10);
    let s = McpServer::new(spec);
    let t0 = Instant::now();
    let e = s.list_tools(&go()).unwrap_err();
    assert_eq!(
        e,
        format!("MCP server `offline`: connection refused at {url} (is the server running?)")
    );
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t0.elapsed()
    );
}

#[test]
fn the_legacy_sse_transport_is_refused() {
    let spec = McpServerSpec::from_json(
        "old",
        &json!({"transport": "sse", "url": "http://127.0.0.1:9/sse"}),
        Path::new("."),
        None,
    )
    .unwrap();
    assert!(matches!(spec.transport, McpTransport::Sse { .. }));
    let e = McpServer::new(spec).list_tools(&go()).unwrap_err();
    assert!(
        e.contains("legacy `sse` transport") && e.contains("streamable_http"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Agents end to end
// ---------------------------------------------------------------------------------------------

fn run_to_end(path: &Path, input: &str) -> RunSession {
    run_req(path, input, RunRequest::default())
}

fn logs(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Log { source, text } => Some(format!("[{source}] {text}")),
            _ => None,
        })
        .collect()
}

#[test]
fn loading_validating_and_preparing_a_run_start_no_server() {
    let dir = TempDir::new("mcp-lazy");
    let pid_file = dir.join("pid");
    let text = std::fs::read_to_string(fixtures().join("sherma_agent.yaml"))
        .unwrap()
        .replace(
            "args: [\"stdio_server.py\", \"--name\", \"calc\"]",
            &format!(
                "args: [\"{}\", \"--pid-file\", \"{}\"]",
                server_py(),
                pid_file.display()
            ),
        );
    assert!(text.contains("--pid-file"));
    let path = dir.join("agent.yaml");
    std::fs::write(&path, text).unwrap();
    let doc = Arc::new(switchyard::doc::load_path(&path));
    let diags = switchyard::validate::validate(&doc, None);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:#?}");
    let req = RunRequest {
        input: Some("x".into()),
        ..Default::default()
    };
    let m = launch::machine_for(doc, &req, Default::default()).unwrap();
    drop(m);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !pid_file.exists(),
        "loading or preparing the run started the MCP server"
    );
}

#[test]
fn a_sherma_agent_calls_an_mcp_tool() {
    let s = run_to_end(&fixtures().join("sherma_agent.yaml"), "what is 2 + 40?");
    assert_eq!(finished(&s), RunStatus::Completed, "{:#?}", s.events());
    let events = s.events();
    // The model was offered the prefixed tools, with cleaned schemas, and not the hook.
    let offered = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .unwrap();
    let names: Vec<&str> = offered
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "calc_add",
            "calc_echo",
            "calc_slow",
            "calc_fail",
            "calc_env"
        ]
    );
    assert!(!offered.to_string().contains("int32"));
    // The call went to the server; its result is a tool message in the state.
    assert_eq!(
        tool_results(&events),
        [("calc_add".to_string(), json!("42"), None)]
    );
    let state = s.state();
    assert_eq!(state["answer"], json!("42"));
    let msgs = state["messages"].as_array().unwrap();
    let tool_msg = msgs.iter().find(|m| m["type"] == "tool").unwrap();
    assert_eq!(tool_msg["content"], "42");
    assert_eq!(tool_msg["name"], "calc_add");
    // The server's stderr is in the run log.
    assert!(
        logs(&events).contains("[mcp:calc] server calc starting"),
        "{}",
        logs(&events)
    );
}

#[test]
fn a_sherma_agent_with_a_missing_mcp_command_fails_naming_it() {
    let dir = TempDir::new("mcp-sherma-missing");
    let text = std::fs::read_to_string(fixtures().join("sherma_agent.yaml"))
        .unwrap()
        .replace("command: python3", "command: switchyard-no-such-mcp-server");
    std::fs::write(dir.join("agent.yaml"), text).unwrap();
    std::fs::copy(
        fixtures().join("sherma_agent.replies.yaml"),
        dir.join("agent.replies.yaml"),
    )
    .unwrap();
    let s = run_to_end(&dir.join("agent.yaml"), "hi");
    assert_eq!(finished(&s), RunStatus::Failed);
    let err = s
        .events()
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Error { node, message } => Some((node.clone(), message.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(err.0.as_deref(), Some("agent"));
    assert!(
        err.1
            .contains("MCP server `calc`: command `switchyard-no-such-mcp-server` not found"),
        "{}",
        err.1
    );
}

#[test]
fn a_loki_agent_calls_an_mcp_tool() {
    let graph = fixtures().join("loki/agents/calc/graph.yaml");
    let s = run_to_end(&graph, "add them");
    assert_eq!(finished(&s), RunStatus::Completed, "{:#?}", s.events());
    let events = s.events();
    let requests: Vec<&Value> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::LlmRequest { messages, .. } => Some(messages),
            _ => None,
        })
        .collect();
    let tools = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["add", "echo", "slow", "fail", "env"]);
    assert_eq!(
        tool_results(&events),
        [("add".to_string(), json!("42"), None)]
    );
    // The tool result was fed back to the model as a tool message.
    let second = requests[1].as_array().unwrap();
    let tool_msg = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_msg["content"], "42");
    assert_eq!(s.state()["sum"], json!("42"));
    assert!(
        logs(&events).contains("[mcp:calc] server loki-calc starting"),
        "{}",
        logs(&events)
    );
}

#[test]
fn a_loki_agent_with_an_undefined_server_says_where_it_looked() {
    let root = TempDir::new("mcp-loki-undefined");
    let agent = root.join("agents").join("a");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("graph.yaml"),
        "name: a\nversion: \"1.0\"\nmcp_servers: [ghost]\nstart: c\nnodes:\n  c:\n    type: llm\n    prompt: hi\n    tools: [\"mcp:ghost\"]\n    next: e\n  e:\n    type: end\n",
    )
    .unwrap();
    std::fs::write(agent.join("replies.yaml"), "replies:\n  - content: never\n").unwrap();
    let s = run_to_end(&agent.join("graph.yaml"), "x");
    assert_eq!(finished(&s), RunStatus::Failed);
    let msg = s
        .events()
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
        .unwrap();
    assert!(msg.contains("MCP server `ghost` is not defined"), "{msg}");
    assert!(
        msg.contains(&agent.join("mcp.json").display().to_string()),
        "{msg}"
    );
    assert!(
        msg.contains(
            &root
                .join("functions")
                .join("mcp.json")
                .display()
                .to_string()
        ),
        "{msg}"
    );
}

#[test]
fn the_cli_keeps_server_stderr_out_of_the_terminal_and_in_the_trace() {
    let dir = TempDir::new("mcp-cli");
    let trace = dir.join("trace.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["run", "--trust"])
        .arg(fixtures().join("sherma_agent.yaml"))
        .args(["--input", "what is 2 + 40?", "--trace"])
        .arg(&trace)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        !stdout.contains("starting (pid") && !stderr.contains("starting (pid"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let lines = std::fs::read_to_string(&trace).unwrap();
    let events: Vec<Event> = lines
        .lines()
        .map(|l| Event::from_json_line(l).unwrap())
        .collect();
    assert!(logs(&events).contains("server calc starting"), "{lines}");
}

/// A skill card's `mcps` server: loading the skill binds every tool of the server to a
/// call_llm with `use_tools_from_loaded_skills`, and the tool node calls it.
#[test]
fn a_skill_cards_mcp_server_serves_the_loaded_skills_tools() {
    let s = run_to_end(&fixtures().join("skill/agent.yaml"), "add 20 and 22");
    assert_eq!(finished(&s), RunStatus::Completed, "{:#?}", s.events());
    let events = s.events();
    let offered: Vec<String> = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert!(offered.contains(&"add".to_string()) && !offered.iter().any(|n| n.starts_with("hooks.")), "{offered:?}");
    assert_eq!(tool_results(&events), [("add".to_string(), json!("42"), None)]);
    assert_eq!(s.state()["__sherma__"]["loaded_tools_from_skills"], json!(["calc-server"]));
}

// ---------------------------------------------------------------------------------------------
// Record and replay
// ---------------------------------------------------------------------------------------------

fn run_req(path: &Path, input: &str, mut req: RunRequest) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(path));
    req.input = Some(input.into());
    let mut s = launch::start(doc, &req, RunOptions::new(Box::new(NoProvider)))
        .unwrap_or_else(|e| panic!("{e}"));
    s.run();
    s
}

/// What a replay must reproduce: the tools offered to the model, the tool results, the state.
fn trace(s: &RunSession) -> (Vec<Value>, Vec<(String, Value, Option<String>)>, Value) {
    let events = s.events();
    let offered = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::LlmRequest { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .collect();
    (offered, tool_results(&events), s.state())
}

/// The listing and the calls of `server` in a cassette: (node, name) of its tool exchanges.
fn recorded_tools(cassette: &Path) -> Vec<(String, String)> {
    let c: Value = serde_json::from_str(&std::fs::read_to_string(cassette).unwrap()).unwrap();
    c["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "tool")
        .map(|x| (x["node"].as_str().unwrap().to_string(), x["name"].as_str().unwrap().to_string()))
        .collect()
}

/// A sherma run with an MCP server, recorded, replays with the server's command gone: the
/// listing comes from the cassette, so the server is never started.
#[test]
fn a_recorded_sherma_mcp_run_replays_without_starting_the_server() {
    let dir = TempDir::new("mcp-replay-sherma");
    let pid_file = dir.join("pid");
    let text = std::fs::read_to_string(fixtures().join("sherma_agent.yaml")).unwrap().replace(
        "args: [\"stdio_server.py\", \"--name\", \"calc\"]",
        &format!("args: [\"{}\", \"--name\", \"calc\", \"--pid-file\", \"{}\"]", server_py(), pid_file.display()),
    );
    assert!(text.contains("--pid-file"));
    let path = dir.join("agent.yaml");
    std::fs::write(&path, &text).unwrap();
    std::fs::copy(fixtures().join("sherma_agent.replies.yaml"), dir.join("agent.replies.yaml")).unwrap();
    let cassette = dir.join("run.cassette.json");
    let live = run_req(&path, "what is 2 + 40?", RunRequest { record: Some(cassette.clone()), ..Default::default() });
    assert_eq!(finished(&live), RunStatus::Completed, "{:#?}", live.events());
    assert!(pid_file.exists(), "the recorded run did not start the server");
    assert_eq!(
        recorded_tools(&cassette),
        [("@mcp:calc".to_string(), "tools/list".to_string()), ("agent_tools".to_string(), "calc_add".to_string())]
    );
    std::fs::remove_file(&pid_file).unwrap();
    std::fs::write(&path, text.replace("command: python3", "command: switchyard-no-such-mcp-server")).unwrap();
    let replay = RunRequest { replay: Some(cassette.clone()), replay_strict: true, ..Default::default() };
    let again = run_req(&path, "what is 2 + 40?", replay);
    assert_eq!(finished(&again), RunStatus::Completed, "{:#?}", again.events());
    assert_eq!(trace(&again), trace(&live));
    assert!(!pid_file.exists(), "the replay started the MCP server");
}

/// The same for a Loki agent whose server is defined in `mcp.json`.
#[test]
fn a_recorded_loki_mcp_run_replays_without_starting_the_server() {
    let root = TempDir::new("mcp-replay-loki");
    let agent = root.join("loki/agents/calc");
    let functions = root.join("loki/functions");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(&functions).unwrap();
    for f in ["graph.yaml", "replies.yaml"] {
        std::fs::copy(fixtures().join("loki/agents/calc").join(f), agent.join(f)).unwrap();
    }
    let mcp_json = std::fs::read_to_string(fixtures().join("loki/functions/mcp.json"))
        .unwrap()
        .replace("../../../stdio_server.py", &server_py());
    std::fs::write(functions.join("mcp.json"), &mcp_json).unwrap();
    let graph = agent.join("graph.yaml");
    let cassette = root.join("run.cassette.json");
    let live = run_req(&graph, "add them", RunRequest { record: Some(cassette.clone()), ..Default::default() });
    assert_eq!(finished(&live), RunStatus::Completed, "{:#?}", live.events());
    assert_eq!(live.state()["sum"], json!("42"));
    assert_eq!(
        recorded_tools(&cassette),
        [("@mcp:calc".to_string(), "tools/list".to_string()), ("compute".to_string(), "add".to_string())]
    );
    std::fs::write(functions.join("mcp.json"), mcp_json.replace("\"python3\"", "\"switchyard-no-such-mcp-server\"")).unwrap();
    let replay = RunRequest { replay: Some(cassette.clone()), replay_strict: true, ..Default::default() };
    let again = run_req(&graph, "add them", replay);
    assert_eq!(finished(&again), RunStatus::Completed, "{:#?}", again.events());
    assert_eq!(trace(&again), trace(&live));
    // A cassette from before listings were recorded lists the server live (and says so when
    // the server is gone).
    let old: Value = serde_json::from_str(&std::fs::read_to_string(&cassette).unwrap()).unwrap();
    let mut old = old;
    old["exchanges"].as_array_mut().unwrap().retain(|x| x["node"] != "@mcp:calc");
    std::fs::write(&cassette, old.to_string()).unwrap();
    let stale = run_req(&graph, "add them", RunRequest { replay: Some(cassette), ..Default::default() });
    assert_eq!(finished(&stale), RunStatus::Failed);
    assert!(format!("{:?}", stale.failure()).contains("switchyard-no-such-mcp-server"), "{:?}", stale.failure());
}
