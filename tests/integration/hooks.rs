//! sherma hooks (issue 7, item 2 and 3): every hook point firing in order with the right
//! context, chaining, error hooks consuming or replacing errors, custom nodes driven by
//! `node_execute`; executors from Python (`import_path`, through the bridge, with sherma not
//! installed), from a JSON-RPC server on 127.0.0.1 (well-behaved, slow, failing, unreachable)
//! and from an MCP server over stdio. Plus the conformance hooks agent with its two hooks.

use axum::{Json, Router, extract::State as AxState, routing::post};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchyard::run::events::{Event, EventBody, HookOutcome, RunStatus};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{RunOptions, RunSession, Status};
use test_support::TempDir;
use test_support::http::{closed_port_url, serve};
use test_support::run::dump;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

const WEATHER_TOOL: &str = r#"
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return "Sunny in " + city
"#;

/// The test agent: set_state → call_llm (one tool) → auto tool node → call_llm → custom →
/// interrupt → end. `{hooks}` is replaced by the `hooks:` list.
const AGENT: &str = r#"manifest_version: 1
llms:
  - id: m
    provider: openai
    model_name: gpt-test
tools:
  - id: get_weather
    import_path: tools.get_weather
{hooks}
agents:
  a:
    state:
      fields:
        - name: messages
          type: list
        - name: note
          type: str
    graph:
      entry_point: prep
      nodes:
        - name: prep
          type: set_state
          args:
            values:
              note: '"n"'
        - name: agent
          type: call_llm
          args:
            llm: { id: m }
            prompt:
              - role: system
                content: '"You are terse."'
              - role: messages
                content: 'state.messages'
            tools:
              - id: get_weather
            state_updates:
              messages: '[llm_response]'
        - name: enrich
          type: custom
          args:
            metadata: { greeting: hi }
        - name: ask
          type: interrupt
          args:
            value: '"Continue?"'
      edges:
        - source: prep
          target: agent
        - source: agent
          target: enrich
        - source: enrich
          target: ask
        - source: ask
          target: __end__
"#;

const REPLIES: &str = r#"replies:
  - node: agent
    tool_calls:
      - name: get_weather
        args: { city: Paris }
  - node: agent
    content: "Sunny."
"#;

/// Write the agent with `hooks` (YAML list items), the tool module and the replies into `dir`.
fn agent(dir: &Path, hooks: &str) -> PathBuf {
    let block = if hooks.is_empty() { String::new() } else { format!("hooks:\n{hooks}") };
    std::fs::write(dir.join("agent.yaml"), AGENT.replace("{hooks}", &block)).unwrap();
    std::fs::write(dir.join("tools.py"), WEATHER_TOOL).unwrap();
    std::fs::write(dir.join("replies.yaml"), REPLIES).unwrap();
    dir.join("agent.yaml")
}

fn start(path: &Path, input: &str) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(path));
    let diags = switchyard::validate::validate(&doc, None);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:#?}");
    // Remote hook servers are fakes on 127.0.0.1: the run may use the network (offline.rs:
    // scripted runs are offline otherwise).
    let req = RunRequest {
        input: Some(input.into()),
        llm_script: Some(path.with_file_name("replies.yaml")),
        allow_network: true,
        ..Default::default()
    };
    launch::start(doc, &req, RunOptions::new(Box::new(NoProvider))).unwrap_or_else(|e| panic!("{e}"))
}

/// Run to the interrupt, answer it, run to the end.
fn run_through(s: &mut RunSession, answer: &str) {
    s.run();
    let id = match s.status() {
        Status::Interrupted { pending } => pending.id.clone(),
        other => panic!("expected the interrupt, got {other:?}\n{}", dump(s)),
    };
    s.answer(&id, json!(answer)).unwrap_or_else(|e| panic!("{e}"));
    s.run();
}

fn finished(s: &RunSession) -> (RunStatus, Value) {
    match s.status() {
        Status::Finished { status, .. } => (*status, s.state()),
        other => panic!("not finished: {other:?}\n{}", dump(s)),
    }
}

/// `(point, executor, outcome, detail)` of every hook event.
fn hook_events(events: &[Event]) -> Vec<(String, String, HookOutcome, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Hook { point, executor, outcome, detail, .. } => {
                Some((point.clone(), executor.clone(), *outcome, detail.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The messages of every `llm_request`.
fn requests(events: &[Event]) -> Vec<(Value, Value, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::LlmRequest { messages, tools, model, .. } => Some((messages.clone(), tools.clone(), model.clone())),
            _ => None,
        })
        .collect()
}

fn read_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Python hooks through the bridge
// ---------------------------------------------------------------------------------------------
/// Record a run into `cassette` (replies from the agent's replies.yaml), or replay it.
fn start_taped(path: &Path, input: &str, record: Option<&Path>, replay: Option<&Path>) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(path));
    let req = RunRequest {
        input: Some(input.into()),
        llm_script: replay.is_none().then(|| path.with_file_name("replies.yaml")),
        record: record.map(Path::to_path_buf),
        replay: replay.map(Path::to_path_buf),
        replay_strict: true,
        ..Default::default()
    };
    launch::start(doc, &req, RunOptions::new(Box::new(NoProvider))).unwrap_or_else(|e| panic!("{e}"))
}

/// A recorded run keeps what its Python hooks and tools answered: the replay runs no Python at
/// all (the hook module and the tool module are deleted before it, and the hooks' log stays
/// empty) and ends in the same state with the same hook events and model requests.
#[test]
fn a_replay_takes_hook_and_tool_results_from_the_cassette_and_runs_no_python() {
    let dir = TempDir::new("hooks-replay");
    let log = python_hooks(&dir);
    let path = agent(&dir, "  - import_path: myhooks.Recorder\n  - import_path: myhooks.Second\n");
    let cassette = dir.join("run.cassette.json");
    let mut rec = start_taped(&path, "weather in Paris?", Some(&cassette), None);
    run_through(&mut rec, "yes");
    let (status, state) = finished(&rec);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&rec));
    assert!(!read_log(&log).is_empty(), "the hooks ran while recording");

    std::fs::remove_file(&log).unwrap();
    std::fs::remove_file(dir.join("myhooks.py")).unwrap();
    std::fs::remove_file(dir.join("tools.py")).unwrap();
    let mut rep = start_taped(&path, "weather in Paris?", None, Some(&cassette));
    run_through(&mut rep, "yes");
    let (status2, state2) = finished(&rep);
    assert_eq!(status2, RunStatus::Completed, "{}", dump(&rep));
    assert_eq!(state2, state);
    assert!(!log.exists(), "a hook ran during the replay: {:?}", read_log(&log));
    assert_eq!(hook_events(&rep.events()), hook_events(&rec.events()));
    assert_eq!(requests(&rep.events()), requests(&rec.events()));
}


/// A hook executor touching every point the test agent reaches; it logs each call as a JSON
/// line (point + what it saw) to `{log}`.
const RECORDER: &str = r#"
import json
from sherma import BaseHookExecutor
from sherma.hooks.types import BeforeLLMCallContext

LOG = {log!r}


def log(point, **kw):
    kw["point"] = point
    with open(LOG, "a") as f:
        f.write(json.dumps(kw) + "\n")


class Recorder(BaseHookExecutor):
    async def before_graph_invoke(self, ctx):
        log("before_graph_invoke", thread=bool(ctx.thread_id), limit=ctx.config["recursion_limit"])
        ctx.config["recursion_limit"] = 40
        return ctx

    async def after_graph_invoke(self, ctx):
        log("after_graph_invoke", keys=sorted(ctx.result))

    async def on_chat_model_create(self, ctx):
        log("on_chat_model_create", llm=ctx.llm_id, model=ctx.model_name)
        ctx.kwargs["model"] = "gpt-swapped"
        return ctx

    async def node_enter(self, ctx):
        log("node_enter", node=ctx.node_name, type=ctx.node_type)
        ctx.state["note"] = "seen by this node only"

    async def node_exit(self, ctx):
        log("node_exit", node=ctx.node_name, result=sorted(ctx.result))

    async def before_llm_call(self, ctx):
        assert isinstance(ctx, BeforeLLMCallContext)
        log("before_llm_call", system=ctx.system_prompt, roles=[m.type for m in ctx.messages],
            tools=[t.name for t in ctx.tools], note=ctx.state["note"])
        ctx.system_prompt += " Never fabricate data."
        return ctx

    async def after_llm_call(self, ctx):
        log("after_llm_call", content=ctx.response.content, calls=[c["name"] for c in ctx.response.tool_calls])
        if ctx.response.content:
            ctx.response.content = ctx.response.content + " (checked)"

    async def before_tool_call(self, ctx):
        log("before_tool_call", calls=[c["name"] for c in ctx.tool_calls], tools=[t.name for t in ctx.tools])

    async def after_tool_call(self, ctx):
        log("after_tool_call", contents=[m.content for m in ctx.result["messages"]])

    async def node_execute(self, ctx):
        log("node_execute", node=ctx.node_name, metadata=ctx.metadata)
        ctx.result = {"note": "custom:" + ctx.metadata["greeting"]}
        return ctx

    async def before_interrupt(self, ctx):
        log("before_interrupt", value=ctx.value)
        ctx.value = "Really? " + ctx.value
        return ctx

    async def after_interrupt(self, ctx):
        log("after_interrupt", value=ctx.value, response=ctx.response)
        ctx.response = ctx.response.upper()
        return ctx


class Second(BaseHookExecutor):
    """Runs after Recorder: sees what it left (chaining)."""

    async def before_llm_call(self, ctx):
        log("second.before_llm_call", system=ctx.system_prompt)
"#;

fn python_hooks(dir: &Path) -> PathBuf {
    let log = dir.join("hooks.log");
    let code = RECORDER.replace("{log!r}", &format!("{:?}", log.display().to_string()));
    std::fs::write(dir.join("myhooks.py"), code).unwrap();
    log
}

#[test]
fn python_hooks_fire_at_every_point_in_order_and_chain() {
    let dir = TempDir::new("hooks-py");
    let log = python_hooks(&dir);
    let path = agent(&dir, "  - import_path: myhooks.Recorder\n  - import_path: myhooks.Second\n");
    let mut s = start(&path, "weather in Paris?");
    run_through(&mut s, "yes");
    let (status, state) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));

    let points: Vec<String> = read_log(&log).iter().map(|l| l["point"].as_str().unwrap().to_string()).collect();
    let enter_exit = |n: &str| vec![format!("node_enter:{n}")];
    let _ = enter_exit;
    let want = [
        "before_graph_invoke",
        "node_enter",
        "node_exit", // prep
        "node_enter",
        "on_chat_model_create",
        "before_llm_call",
        "second.before_llm_call",
        "after_llm_call",
        "node_exit", // agent (tool call)
        "node_enter",
        "before_tool_call",
        "after_tool_call",
        "node_exit", // agent_tools
        "node_enter",
        "before_llm_call",
        "second.before_llm_call",
        "after_llm_call",
        "node_exit", // agent (answer)
        "node_enter",
        "node_execute",
        "node_exit", // enrich
        "node_enter",
        "before_interrupt",
        "after_graph_invoke", // the invocation returns at the interrupt
        "before_graph_invoke",
        "node_enter",
        "after_interrupt",
        "node_exit", // ask
        "after_graph_invoke",
    ];
    assert_eq!(points, want, "{}", dump(&s));
    let lines = read_log(&log);
    let nodes: Vec<&str> = lines.iter().filter(|l| l["point"] == "node_enter").map(|l| l["node"].as_str().unwrap()).collect();
    assert_eq!(nodes, ["prep", "agent", "agent_tools", "agent", "enrich", "ask", "ask"]);

    // Contexts: the joined system prompt, messages without it, the bound tools; node_enter's
    // state change is seen inside the node, never stored.
    let first_llm = lines.iter().find(|l| l["point"] == "before_llm_call").unwrap();
    assert_eq!(first_llm["system"], "You are terse.");
    assert_eq!(first_llm["roles"], json!(["human"]));
    assert_eq!(first_llm["tools"], json!(["get_weather"]));
    assert_eq!(first_llm["note"], "seen by this node only");
    // Chaining: the second executor saw the first one's change.
    let second = lines.iter().find(|l| l["point"] == "second.before_llm_call").unwrap();
    assert_eq!(second["system"], "You are terse. Never fabricate data.");
    let tool = lines.iter().find(|l| l["point"] == "after_tool_call").unwrap();
    assert_eq!(tool["contents"], json!(["Sunny in Paris"]));
    let graph = lines.iter().find(|l| l["point"] == "before_graph_invoke").unwrap();
    assert_eq!(graph["limit"], 25);

    // What the engine read back.
    let reqs = requests(&s.events());
    assert_eq!(reqs.len(), 2);
    for (messages, _, model) in &reqs {
        assert_eq!(messages[0], json!({"role": "system", "content": "You are terse. Never fabricate data."}));
        assert_eq!(model.as_deref(), Some("openai:gpt-swapped"), "on_chat_model_create's kwargs[\"model\"]");
    }
    let msgs = state["messages"].as_array().unwrap();
    let texts: Vec<&str> = msgs.iter().map(|m| m["content"].as_str().unwrap_or("")).collect();
    assert!(texts.contains(&"Sunny. (checked)"), "after_llm_call changed the reply: {texts:?}");
    assert_eq!(texts.last(), Some(&"YES"), "after_interrupt changed the answer");
    assert_eq!(state["note"], "custom:hi", "node_execute filled the custom node's result");
    let prompt = s
        .events()
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Interrupt { prompt, .. } => Some(prompt.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(prompt, "Really? Continue?");

    // The debugger sees each executor's work.
    let hooks = hook_events(&s.events());
    assert!(hooks.iter().any(|(p, ex, o, d)| p == "before_llm_call"
        && ex == "python:myhooks.Recorder"
        && *o == HookOutcome::Modified
        && d.as_deref() == Some("system_prompt")));
    assert!(hooks.iter().any(|(p, ex, o, _)| p == "before_llm_call" && ex == "python:myhooks.Second" && *o == HookOutcome::Pass));
    assert!(!hooks.iter().any(|(p, ex, _, _)| ex == "python:myhooks.Second" && p != "before_llm_call"), "undefined methods are skipped");
}

const ERROR_AGENT: &str = r#"manifest_version: 1
hooks:
  - import_path: errhooks.Handler
agents:
  a:
    state:
      fields:
        - name: n
          type: int
    graph:
      entry_point: {entry}
      nodes:
        - name: summarize
          type: data_transform
          args:
            expression: '{"n": state.missing.x}'
        - name: other
          type: data_transform
          args:
            expression: '{"n": state.missing.y}'
        - name: after
          type: set_state
          args:
            values:
              n: "7"
      edges:
        - source: summarize
          target: after
        - source: other
          target: after
"#;

const ERROR_HOOKS: &str = r#"
from sherma import BaseHookExecutor


class Handler(BaseHookExecutor):
    async def on_node_error(self, ctx):
        if ctx.node_name == "summarize":
            ctx.error = None
            return ctx
        ctx.error = RuntimeError("Node '%s' failed: %s" % (ctx.node_name, type(ctx.error).__name__))
        return ctx

    async def on_error(self, ctx):
        if "keep-going" in str(ctx.input):
            ctx.error = None
            return ctx
"#;

fn error_agent(entry: &str) -> PathBuf {
    let dir = TempDir::new("hooks-err").keep();
    std::fs::write(dir.join("agent.yaml"), ERROR_AGENT.replace("{entry}", entry)).unwrap();
    std::fs::write(dir.join("errhooks.py"), ERROR_HOOKS).unwrap();
    std::fs::write(dir.join("replies.yaml"), "replies: []\n").unwrap();
    dir.join("agent.yaml")
}

#[test]
fn on_node_error_consumes_or_replaces_and_on_error_can_swallow_the_failure() {
    // Consumed: the node returns {} and routing goes on.
    let mut s = start(&error_agent("summarize"), "go");
    s.run();
    let (status, state) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    assert_eq!(state["n"], 7);
    assert!(hook_events(&s.events()).iter().any(|(p, _, o, _)| p == "on_node_error" && *o == HookOutcome::Consumed));

    // Replaced: the run fails with the hook's error.
    let mut s = start(&error_agent("other"), "go");
    s.run();
    let msg = match s.status() {
        Status::Finished { status: RunStatus::Failed, .. } => s
            .events()
            .iter()
            .rev()
            .find_map(|e| match &e.body {
                EventBody::Error { message, .. } => Some(message.clone()),
                _ => None,
            })
            .unwrap(),
        other => panic!("{other:?}\n{}", dump(&s)),
    };
    assert!(msg.contains("Node 'other' failed: NodeError"), "{msg}");

    // on_error swallowing the run's failure: completed, no output.
    let mut s = start(&error_agent("other"), "keep-going");
    s.run();
    let (status, _) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    assert!(hook_events(&s.events()).iter().any(|(p, _, o, _)| p == "on_error" && *o == HookOutcome::Consumed));
}

#[test]
fn a_python_hook_that_raises_fails_its_node_with_the_hook_named() {
    let dir = TempDir::new("hooks-raise");
    std::fs::write(
        dir.join("bad.py"),
        "class Boom:\n    def before_llm_call(self, ctx):\n        raise ValueError('guardrail tripped')\n",
    )
    .unwrap();
    let path = agent(&dir, "  - import_path: bad.Boom\n");
    let mut s = start(&path, "hi");
    s.run();
    match s.status() {
        Status::Finished { status: RunStatus::Failed, .. } => {}
        other => panic!("{other:?}\n{}", dump(&s)),
    }
    let text = dump(&s);
    assert!(text.contains("hook `python:bad.Boom` (before_llm_call)") && text.contains("guardrail tripped"), "{text}");
}

#[test]
fn custom_nodes_without_hooks_return_nothing() {
    let dir = TempDir::new("hooks-nohooks");
    let path = agent(&dir, "");
    let mut s = start(&path, "weather?");
    run_through(&mut s, "ok");
    let (status, state) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    assert_eq!(state["note"], "n");
    assert!(hook_events(&s.events()).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Remote hooks over JSON-RPC
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct HookServer {
    calls: Mutex<Vec<Value>>,
}

async fn rpc(AxState(st): AxState<Arc<HookServer>>, Json(req): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    st.calls.lock().unwrap().push(req.clone());
    let id = req["id"].clone();
    let mut params = req["params"].clone();
    match req["method"].as_str().unwrap_or("") {
        "before_llm_call" => {
            let sp = params["system_prompt"].as_str().unwrap_or("").to_string();
            params["system_prompt"] = json!(format!("{sp} Be brief."));
            // Read-only: a remote hook cannot change the messages.
            params["messages"] = json!([]);
            Json(json!({"jsonrpc": "2.0", "id": id, "result": params})).into_response()
        }
        "node_exit" if params["node_name"] == "prep" => {
            // Slow: longer than the hook's timeout.
            tokio::time::sleep(Duration::from_secs(3)).await;
            Json(json!({"jsonrpc": "2.0", "id": id, "result": null})).into_response()
        }
        "after_llm_call" => {
            Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "handler blew up"}})).into_response()
        }
        "before_tool_call" => (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response(),
        "node_execute" => {
            params["result"] = json!({"note": format!("remote saw {}", params["state"]["note"].as_str().unwrap_or("?"))});
            Json(json!({"jsonrpc": "2.0", "id": id, "result": params})).into_response()
        }
        _ => Json(json!({"jsonrpc": "2.0", "id": id, "result": null})).into_response(),
    }
}

fn hook_server() -> (SocketAddr, Arc<HookServer>) {
    let st = Arc::new(HookServer::default());
    let addr = serve(Router::new().route("/hooks", post(rpc)).with_state(st.clone())).keep();
    (addr, st)
}

#[test]
fn remote_hooks_modify_pass_and_fail_soft() {
    let (addr, server) = hook_server();
    let dir = TempDir::new("hooks-remote");
    let path = agent(&dir, &format!("  - url: http://{addr}/hooks\n    timeout: 0.5\n"));
    let mut s = start(&path, "weather in Paris?");
    let t0 = std::time::Instant::now();
    run_through(&mut s, "fine");
    let (status, state) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    assert!(t0.elapsed() < Duration::from_secs(10), "the slow hook was cut at its timeout");

    let reqs = requests(&s.events());
    assert_eq!(reqs[0].0[0], json!({"role": "system", "content": "You are terse. Be brief."}));
    assert_eq!(reqs[0].0.as_array().unwrap().len(), 2, "messages are read-only for remote hooks");
    assert_eq!(state["note"], "remote saw n");

    let calls = server.calls.lock().unwrap().clone();
    let methods: Vec<&str> = calls.iter().map(|c| c["method"].as_str().unwrap()).collect();
    assert!(!methods.contains(&"on_chat_model_create"), "never sent to remote hooks");
    for c in &calls {
        assert_eq!(c["jsonrpc"], "2.0");
        assert!(c["params"].get("node_context").is_none());
    }
    // State messages are sent as JSON (upstream fails to encode them).
    let enter = calls.iter().rev().find(|c| c["method"] == "node_enter").unwrap();
    assert!(enter["params"]["state"]["messages"].as_array().is_some_and(|m| !m.is_empty()));
    // Ids increase.
    let ids: Vec<u64> = calls.iter().map(|c| c["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    let hooks = hook_events(&s.events());
    let failed = |point: &str, needle: &str| {
        hooks.iter().any(|(p, _, o, d)| p == point && *o == HookOutcome::Failed && d.as_deref().unwrap_or("").contains(needle))
    };
    assert!(failed("node_exit", "no answer within 0.5s"), "{hooks:#?}");
    assert!(failed("after_llm_call", "handler blew up"), "{hooks:#?}");
    assert!(failed("before_tool_call", "HTTP 500"), "{hooks:#?}");
}

#[test]
fn an_unreachable_hook_server_is_a_warning_not_a_failure() {
    let dir = TempDir::new("hooks-unreachable");
    let path = agent(&dir, &format!("  - url: {}/hooks\n", closed_port_url()));
    let mut s = start(&path, "weather?");
    run_through(&mut s, "ok");
    let (status, _) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    let hooks = hook_events(&s.events());
    assert!(!hooks.is_empty() && hooks.iter().all(|(_, _, o, d)| *o == HookOutcome::Failed
        && d.as_deref().unwrap_or("").contains("cannot reach the hook server")), "{hooks:#?}");
}

// ---------------------------------------------------------------------------------------------
// MCP hooks
// ---------------------------------------------------------------------------------------------

fn mcp_hook_server() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks/mcp_hooks.py")
}

#[test]
fn mcp_hooks_are_called_through_their_hooks_tools() {
    let dir = TempDir::new("hooks-mcp");
    let log = dir.join("mcp.log");
    let path = agent(
        &dir,
        &format!(
            "  - mcp:\n      command: python3\n      args: [{:?}, {:?}]\n",
            mcp_hook_server().display().to_string(),
            log.display().to_string()
        ),
    );
    let mut s = start(&path, "weather?");
    run_through(&mut s, "ok");
    let (status, _) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    let reqs = requests(&s.events());
    assert_eq!(reqs[0].0[0]["content"], "You are terse. (mcp)");
    // Only the points the server has a `hooks.*` tool for are called.
    let seen: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(str::to_string).collect();
    assert!(seen.iter().all(|p| p == "before_llm_call" || p == "node_enter"), "{seen:?}");
    assert_eq!(seen.iter().filter(|p| *p == "node_enter").count(), 7);
    let hooks = hook_events(&s.events());
    assert!(hooks.iter().all(|(_, ex, _, _)| ex == "mcp:python3"), "{hooks:#?}");
}

#[test]
fn an_mcp_hook_server_that_cannot_start_fails_the_run_naming_it() {
    let dir = TempDir::new("hooks-mcp-missing");
    let path = agent(&dir, "  - mcp:\n      command: switchyard-no-such-hook-server\n");
    let mut s = start(&path, "weather?");
    s.run();
    let text = dump(&s);
    assert!(matches!(s.status(), Status::Finished { status: RunStatus::Failed, .. }), "{text}");
    assert!(text.contains("switchyard-no-such-hook-server"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// The conformance hooks agent, with the two hooks its comments describe
// ---------------------------------------------------------------------------------------------

/// Stand-ins for the corpus' `examples.hooks` (the spec's LoggingHook and PromptGuardrailHook).
const EXAMPLE_HOOKS: &str = r#"
import time
from sherma import BaseHookExecutor
from sherma.hooks.types import BeforeLLMCallContext, NodeEnterContext, NodeExitContext


class LoggingHook(BaseHookExecutor):
    async def node_enter(self, ctx: NodeEnterContext):
        print(f">>> Entering '{ctx.node_name}' (type={ctx.node_type})")
        ctx.state["__enter_time__"] = time.monotonic()
        return None

    async def node_exit(self, ctx: NodeExitContext):
        enter_time = ctx.state.get("__enter_time__")
        elapsed = f" ({time.monotonic() - enter_time:.3f}s)" if enter_time else ""
        print(f"<<< Exiting '{ctx.node_name}'{elapsed}")
        return None

    async def before_llm_call(self, ctx: BeforeLLMCallContext):
        print(f"LLM: {len(ctx.messages)} msgs, {len(ctx.tools)} tools")
        return None


class PromptGuardrailHook(BaseHookExecutor):
    GUARDRAIL = (
        "\n\nIMPORTANT: Always be helpful, accurate, and concise. "
        "Never fabricate data -- if a tool returns an error, say so."
    )

    async def before_llm_call(self, ctx: BeforeLLMCallContext):
        ctx.system_prompt += self.GUARDRAIL
        return ctx
"#;

#[test]
fn conformance_hooks_agent_runs_with_its_logging_and_guardrail_hooks() {
    let src = switchyard::testdata::conformance_dir().join("sherma/examples/declarative_hooks_agent/agent.yaml");
    let text = std::fs::read_to_string(&src).unwrap();
    // Uncomment the two YAML hooks, as the file's comment says.
    let text = text
        .replace("# hooks:\n", "hooks:\n")
        .replace("#   - import_path: examples.hooks.LoggingHook", "  - import_path: examples.hooks.LoggingHook")
        .replace("#   - import_path: examples.hooks.PromptGuardrailHook", "  - import_path: examples.hooks.PromptGuardrailHook");
    assert!(text.contains("\nhooks:\n  - import_path: examples.hooks.LoggingHook\n"), "{text}");
    let dir = TempDir::new("hooks-conf");
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    std::fs::write(dir.join("examples/__init__.py"), "").unwrap();
    std::fs::write(dir.join("examples/hooks.py"), EXAMPLE_HOOKS).unwrap();
    std::fs::write(dir.join("examples/tools.py"), WEATHER_TOOL).unwrap();
    std::fs::write(dir.join("agent.yaml"), &text).unwrap();
    std::fs::write(
        dir.join("replies.yaml"),
        "replies:\n  - node: agent\n    tool_calls:\n      - name: get_weather\n        args: { city: Oslo }\n  - node: agent\n    content: It is sunny in Oslo.\n",
    )
    .unwrap();
    let mut s = start(&dir.join("agent.yaml"), "Weather in Oslo?");
    s.run();
    let (status, state) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    let reqs = requests(&s.events());
    assert_eq!(reqs.len(), 2);
    for (messages, _, _) in &reqs {
        let system = messages[0]["content"].as_str().unwrap();
        assert!(system.starts_with("You are a helpful weather assistant."), "{system}");
        assert!(system.ends_with("Never fabricate data -- if a tool returns an error, say so."), "{system}");
    }
    assert_eq!(state["messages"].as_array().unwrap().last().unwrap()["content"], "It is sunny in Oslo.");
    let hooks = hook_events(&s.events());
    let logging = hooks.iter().filter(|(_, ex, _, _)| ex == "python:examples.hooks.LoggingHook").count();
    // node_enter + node_exit for agent, agent_tools, agent; before_llm_call twice.
    assert_eq!(logging, 8, "{hooks:#?}");
    assert!(hooks.iter().all(|(_, _, o, _)| *o != HookOutcome::Failed), "{hooks:#?}");
}

// ---------------------------------------------------------------------------------------------
// Skill hooks: the load_skills node (load hooks) and the unload_skill tool (unload hooks)
// ---------------------------------------------------------------------------------------------

const SKILL_HOOKS: &str = r#"
import json
from sherma import BaseHookExecutor

LOG = {log!r}


def log(point, **kw):
    kw["point"] = point
    with open(LOG, "a") as f:
        f.write(json.dumps(kw) + "\n")


class Rec(BaseHookExecutor):
    async def before_skill_load(self, ctx):
        log("before_skill_load", skill=ctx.skill_id, version=ctx.version)

    async def after_skill_load(self, ctx):
        log("after_skill_load", skill=ctx.skill_id, tools=ctx.tools_loaded)
        ctx.content = "VETTED\n" + ctx.content
        return ctx

    async def before_skill_unload(self, ctx):
        log("before_skill_unload", skill=ctx.skill_id, version=ctx.version)

    async def after_skill_unload(self, ctx):
        log("after_skill_unload", skill=ctx.skill_id, tools=ctx.tools_unloaded)
"#;

/// A corpus skill agent copied into a temp dir with `hooks:` added and its skill card path made
/// absolute; the stand-in `examples.tools.get_weather` beside it.
fn skill_agent(rel: &str, replies: &str) -> (PathBuf, PathBuf) {
    let conf = switchyard::testdata::conformance_dir().join("sherma/examples");
    let card = conf.join("skills/weather/skill-card.json");
    let text = std::fs::read_to_string(conf.join(rel)).unwrap();
    let text = text
        .replace("skill_card_path: ../skills/weather/skill-card.json", &format!("skill_card_path: {:?}", card.display().to_string()))
        .replacen("manifest_version: 1\n", "manifest_version: 1\nhooks:\n  - import_path: skillhooks.Rec\n", 1);
    let dir = TempDir::new("hooks-skills").keep();
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    std::fs::write(dir.join("examples/__init__.py"), "").unwrap();
    std::fs::write(dir.join("examples/tools.py"), WEATHER_TOOL).unwrap();
    let log = dir.join("skill.log");
    std::fs::write(dir.join("skillhooks.py"), SKILL_HOOKS.replace("{log!r}", &format!("{:?}", log.display().to_string()))).unwrap();
    std::fs::write(dir.join("agent.yaml"), text).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sherma_runs").join(replies);
    std::fs::copy(src, dir.join("replies.yaml")).unwrap();
    (dir.join("agent.yaml"), log)
}

#[test]
fn skill_load_hooks_fire_in_load_skills_nodes_and_unload_hooks_on_unload_skill() {
    let (path, log) = skill_agent("load_skills_manual/agent.yaml", "load_skills_manual.replies.yaml");
    let mut s = start(&path, "Weather in Berlin?");
    s.run();
    let (status, state) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    let lines = read_log(&log);
    assert_eq!(lines.iter().map(|l| l["point"].as_str().unwrap()).collect::<Vec<_>>(), ["before_skill_load", "after_skill_load"]);
    assert_eq!(lines[0]["skill"], "weather");
    assert_eq!(lines[1]["tools"], json!(["get_weather"]));
    // after_skill_load's content is the tool message the model receives.
    let msgs = state["messages"].as_array().unwrap();
    assert!(msgs[2]["content"].as_str().unwrap().starts_with("VETTED\n---"), "{}", msgs[2]);

    let (path, log) = skill_agent("declarative_skill_agent/agent.yaml", "declarative_skill_agent.replies.yaml");
    let mut s = start(&path, "Weather in Tokyo?");
    s.run();
    let (status, _) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    let lines = read_log(&log);
    // The model's load_skill_md fires no load hooks (as upstream); its unload_skill fires both
    // unload hooks (upstream never does in declarative agents).
    assert_eq!(lines.iter().map(|l| l["point"].as_str().unwrap()).collect::<Vec<_>>(), ["before_skill_unload", "after_skill_unload"]);
    assert_eq!(lines[1]["skill"], "weather");
    assert_eq!(lines[1]["tools"], json!(["get_weather"]));
}

// ---------------------------------------------------------------------------------------------
// call_agent: before_agent_call / after_agent_call
// ---------------------------------------------------------------------------------------------

const PARENT: &str = r#"manifest_version: 1
hooks:
  - import_path: agenthooks.Rec
sub_agents:
  - id: helper
    version: "1.0.0"
    yaml_path: helper.yaml
agents:
  boss:
    state:
      fields:
        - name: messages
          type: list
    graph:
      entry_point: ask_helper
      nodes:
        - name: ask_helper
          type: call_agent
          args:
            agent: { id: helper, version: "1.0.0" }
            input: 'state.messages[0].content'
      edges:
        - source: ask_helper
          target: __end__
"#;

const HELPER: &str = r#"manifest_version: 1
llms:
  - id: m
    provider: openai
    model_name: gpt-test
default_llm: { id: m }
agents:
  helper:
    state:
      fields:
        - name: messages
          type: list
    graph:
      entry_point: answer
      nodes:
        - name: answer
          type: call_llm
          args:
            prompt:
              - role: messages
                content: 'state.messages'
            state_updates:
              messages: '[llm_response]'
      edges:
        - source: answer
          target: __end__
"#;

const AGENT_HOOKS: &str = r#"
from sherma import BaseHookExecutor


class Rec(BaseHookExecutor):
    async def before_agent_call(self, ctx):
        ctx.input_value = "[from %s] %s" % (ctx.node_name, ctx.input_value)
        return ctx

    async def after_agent_call(self, ctx):
        for m in ctx.result.get("messages", []):
            m["content"] = m["content"].upper()
        return ctx
"#;

#[test]
fn agent_call_hooks_change_the_sub_agents_input_and_result() {
    let dir = TempDir::new("hooks-agent");
    std::fs::write(dir.join("agent.yaml"), PARENT).unwrap();
    std::fs::write(dir.join("helper.yaml"), HELPER).unwrap();
    std::fs::write(dir.join("agenthooks.py"), AGENT_HOOKS).unwrap();
    std::fs::write(dir.join("replies.yaml"), "replies:\n  - node: answer\n    content: done by the helper\n").unwrap();
    let mut s = start(&dir.join("agent.yaml"), "tidy the report");
    s.run();
    let (status, state) = finished(&s);
    assert_eq!(status, RunStatus::Completed, "{}", dump(&s));
    // The helper saw the input as the hook changed it.
    let sent = requests(&s.events());
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0[0]["content"], "[from ask_helper] tidy the report");
    let msgs = state["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"], "DONE BY THE HELPER");
}
