//! sherma as sherma 1.8 itself runs the same files (issue 28, item 7): what an agent's state and
//! reply hold is what upstream's hold, while Switchyard's extra context (which scripted reply,
//! which attempt) stays in events, the timeline and the CLI's narration. And structured replies
//! scripted as YAML mappings (`content: {skills: [...]}`) for a node with `response_format`.
//!
//! The corpus files are read in place (`testdata::conformance_dir()`); the replies are under
//! `tests/fixtures/sherma_fidelity/`; the stand-in `examples.tools.get_weather` tool is written
//! into a temp dir as `run_sherma` does.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use switchyard::run::events::{Event, EventBody};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{RunOptions, RunSession};
use switchyard::run::sherma::ShermaOptions;
use test_support::run::{completed, messages, nodes_of};
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

const WEATHER_TOOL: &str = r#"
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return "Sunny, 22 degrees in " + city
"#;

/// What sherma 1.8 answers for `examples/error_recovery_agent` when every model call fails with
/// an exception whose message is `boom`, derived from its code (reference/sherma.md):
/// - §9: after `max_attempts` (3) the `call_llm` node with `on_error.fallback` returns only
///   `__sherma__` with `last_error = {node, type: type(e).__name__, message: str(e), attempt}`,
///   so `message` is the exception's own text, `boom`, with nothing added;
/// - §8.4/§8.2: the injected `has_error_fallback` branch routes to `error_handler`;
/// - §7.4: its `data_transform` builds `"I'm sorry, I encountered an error: " +
///   state["__sherma__"]["last_error"]["message"] + ". Please try again later."` and the
///   `messages` reducer turns the string into a human message;
/// - §14 step 8: `send_message` yields the last state message, whatever its role, as the reply.
const UPSTREAM_REPLY: &str = "I'm sorry, I encountered an error: boom. Please try again later.";

fn corpus(rel: &str) -> PathBuf {
    let p = switchyard::testdata::conformance_dir().join("sherma").join(rel);
    assert!(p.is_file(), "conformance corpus file missing: {} (set SWITCHYARD_CONFORMANCE)", p.display());
    p
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sherma_fidelity").join(name)
}

/// A temp dir holding the stand-in `examples/tools.py` (for `sys.path`).
fn tools_dir() -> TempDir {
    let dir = TempDir::new("sherma-fidelity");
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    std::fs::write(dir.join("examples/__init__.py"), "").unwrap();
    std::fs::write(dir.join("examples/tools.py"), WEATHER_TOOL).unwrap();
    dir
}

/// Run corpus file `rel` with the replies `script` to its end (retry delays scaled to 0).
fn run(rel: &str, input: &str, script: &str, tools: &Path) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(&corpus(rel)));
    let req = RunRequest {
        input: Some(input.to_string()),
        llm_script: Some(fixture(script)),
        python_path: vec![tools.to_path_buf()],
        ..Default::default()
    };
    let opts = ShermaOptions { retry_delay_scale: 0.0, ..Default::default() };
    let machine = launch::machine_for(doc.clone(), &req, opts).unwrap_or_else(|e| panic!("{e}"));
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.provider = launch::provider_for(&doc, &req).unwrap_or_else(|e| panic!("{e}"));
    let mut s = RunSession::new(machine, json!(input), options);
    s.run();
    s
}

fn visited(events: &[Event]) -> Vec<String> {
    nodes_of(events, &events[0].run)
}

#[test]
fn error_recovery_agent_records_the_errors_own_message_and_replies_as_upstream() {
    let tools = tools_dir();
    let s = run("examples/error_recovery_agent/agent.yaml", "Weather in Paris?", "error_recovery_boom.replies.yaml", &tools);
    // The reply: the last message, the apology the fallback node wrote (a human message).
    assert_eq!(completed(&s), json!(UPSTREAM_REPLY));
    let ev = s.events();
    assert_eq!(visited(&ev), ["agent", "error_handler"]);

    // The state holds what upstream's holds.
    let st = s.state();
    assert_eq!(
        st["__sherma__"]["last_error"],
        json!({"node": "agent", "type": "LLMError", "message": "boom", "attempt": 3}),
        "{st}"
    );
    assert_eq!(
        messages(&st),
        vec![("human".to_string(), "Weather in Paris?".to_string()), ("human".to_string(), UPSTREAM_REPLY.to_string())]
    );

    // Our context stays in the events: each failed call names its scripted reply's line, and the
    // node's errors say which attempt failed and where the run went.
    let file = fixture("error_recovery_boom.replies.yaml").display().to_string();
    let llm_errors: Vec<&str> = ev
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::LlmError { node, message, .. } if node == "agent" => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        llm_errors,
        [4, 6, 8].map(|l| format!("boom (scripted error, {file}:{l})")).iter().map(String::as_str).collect::<Vec<_>>()
    );
    let node_errors: Vec<&str> = ev
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Error { node: Some(n), message } if n == "agent" => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(node_errors.len(), 3, "{node_errors:#?}");
    assert_eq!(node_errors[0], format!("attempt 1 of 3 failed: boom (scripted error, {file}:4); retrying in 0.00s"));
    assert_eq!(
        node_errors[2],
        format!(
            "LLM call failed: boom (scripted error, {file}:8); recorded in __sherma__.last_error, going to fallback `error_handler`"
        )
    );
}

#[test]
fn error_recovery_agent_cli_prints_upstreams_reply_and_narrates_our_context() {
    let tools = tools_dir();
    let home = TempDir::new("sherma-fidelity-home");
    let trace = home.join("trace.jsonl");
    let out = Command::new(BIN)
        .arg("run")
        .arg("--trust")
        .arg(corpus("examples/error_recovery_agent/agent.yaml"))
        .arg("--llm-script")
        .arg(fixture("error_recovery_boom.replies.yaml"))
        .arg("--python-path")
        .arg(tools.path())
        .args(["--input", "Weather in Paris?", "--trace"])
        .arg(&trace)
        .env("NO_COLOR", "1")
        .env("SWITCHYARD_TRUST", home.join("trust.json"))
        .env("SWITCHYARD_PROVIDERS", "/nonexistent/providers.yaml")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run switchyard");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim_end(), UPSTREAM_REPLY, "{stderr}");
    // The narration keeps the scripted reply's file and line.
    assert!(stderr.contains("error_recovery_boom.replies.yaml:8"), "{stderr}");
    // So does the trace, while its final state holds upstream's message.
    let lines: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l["event"] == "llm_error"
            && l["message"].as_str().is_some_and(|m| m.contains("(scripted error,") && m.contains(":8)"))),
        "no llm_error with the reply's line in the trace"
    );
    let fin = lines.iter().find(|l| l["event"] == "run_finished").expect("run_finished in the trace");
    assert_eq!(fin["output"], json!(UPSTREAM_REPLY), "{fin}");
}

#[test]
fn structured_reply_scripted_as_a_yaml_mapping_runs_end_to_end() {
    let tools = tools_dir();
    let s = run("examples/load_skills_llm_driven/agent.yaml", "Weather in Oslo?", "load_skills_structured.replies.yaml", &tools);
    assert_eq!(completed(&s), json!("Oslo: sunny."));
    let ev = s.events();
    assert_eq!(visited(&ev), ["select_skills", "load_selected_skills", "execute", "execute_tools", "execute"]);
    // The mapping reached the node as the JSON text a structured-output model sends.
    let reply = ev
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmResponse { node, content, .. } if node == "select_skills" => Some(content.clone()),
            _ => None,
        })
        .expect("select_skills answered");
    assert_eq!(reply.as_deref(), Some(r#"{"skills":[{"id":"weather","version":"1.0.0"}]}"#));
    // `json(llm_response.content)` read it: the skill was loaded and its tool offered and used.
    let st = s.state();
    assert_eq!(st["__sherma__"]["loaded_tools_from_skills"], json!(["get_weather"]), "{st}");
    assert_eq!(st["__sherma__"]["loaded_skills"]["weather"]["version"], "1.0.0");
    let msgs = messages(&st);
    assert_eq!(msgs[1], ("ai".to_string(), r#"{"skills":[{"id":"weather","version":"1.0.0"}]}"#.to_string()));
    assert_eq!(msgs[5], ("tool".to_string(), "Sunny, 22 degrees in Oslo".to_string()));
}

#[test]
fn structured_reply_as_a_flow_mapping_with_an_empty_list() {
    let tools = tools_dir();
    let s = run(
        "examples/load_skills_llm_driven/agent.yaml",
        "Tell me a joke.",
        "load_skills_structured_list.replies.yaml",
        &tools,
    );
    assert_eq!(completed(&s), json!("No skill needed."));
    let ev = s.events();
    assert_eq!(visited(&ev), ["select_skills", "load_selected_skills", "execute"]);
    let st = s.state();
    assert_eq!(st["__sherma__"]["loaded_tools_from_skills"], json!([]), "{st}");
    assert_eq!(messages(&st)[1], ("ai".to_string(), r#"{"skills":[]}"#.to_string()));
}
