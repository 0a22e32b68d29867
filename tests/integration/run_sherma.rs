//! sherma conformance runs (EXPECTATIONS.md, "Runs" under sherma): the corpus' example agents,
//! read in place from `testdata::conformance_dir()`, run end to end through `launch` and
//! `RunSession` with scripted LLM replies (`tests/sherma_runs/*.replies.yaml`) and a stand-in
//! `examples.tools.get_weather` Python tool written into a temp dir. Each test checks the node
//! sequence of the top-level run, the final state and the key events.

use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use switchyard::run::events::{Event, EventBody, RouteReason, RunStatus};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{RunOptions, RunSession, Status};
use switchyard::run::sherma::ShermaOptions;
use test_support::run::{completed, dump, messages, nodes_of, pending};
use test_support::TempDir;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

const WEATHER_TOOL: &str = r#"
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return "Sunny, 22 degrees in " + city
"#;

/// A corpus file under `sherma/`.
fn corpus(rel: &str) -> PathBuf {
    let p = switchyard::testdata::conformance_dir().join("sherma").join(rel);
    assert!(p.is_file(), "conformance corpus file missing: {} (set SWITCHYARD_CONFORMANCE)", p.display());
    p
}

/// Scripted replies `tests/sherma_runs/<name>.replies.yaml`.
fn replies(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sherma_runs").join(format!("{name}.replies.yaml"))
}

/// A fresh temp dir (kept: a request names it) holding the stand-in `examples/tools.py` package (for `sys.path`).
fn tools_dir() -> PathBuf {
    let dir = TempDir::new("sherma").keep();
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    std::fs::write(dir.join("examples/__init__.py"), "").unwrap();
    std::fs::write(dir.join("examples/tools.py"), WEATHER_TOOL).unwrap();
    dir
}

fn request(input: &str, script: &str) -> RunRequest {
    RunRequest {
        input: Some(input.to_string()),
        llm_script: Some(replies(script)),
        python_path: vec![tools_dir()],
        ..Default::default()
    }
}

/// Start a run of corpus file `rel` through the launcher.
fn start(rel: &str, input: &str, script: &str) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(&corpus(rel)));
    launch::start(doc, &request(input, script), RunOptions::new(Box::new(NoProvider))).unwrap_or_else(|e| panic!("{e}"))
}

/// Start a run with retry delays scaled by `scale` (the launcher's default is 1.0).
fn start_scaled(rel: &str, input: &str, script: &str, scale: f64) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(&corpus(rel)));
    let req = request(input, script);
    let opts = ShermaOptions { retry_delay_scale: scale, ..Default::default() };
    let machine = launch::machine_for(doc.clone(), &req, opts).unwrap_or_else(|e| panic!("{e}"));
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.provider = launch::provider_for(&doc, &req).unwrap_or_else(|e| panic!("{e}"));
    RunSession::new(machine, json!(input), options)
}

/// Node ids entered by the top-level run, in order.
fn visited(events: &[Event]) -> Vec<String> {
    let top = &events[0].run;
    nodes_of(events, top)
}

/// Tool names offered by each `llm_request` of `node` (top-level run), in order.
fn offered(events: &[Event], node: &str) -> Vec<Vec<String>> {
    let top = &events[0].run;
    events
        .iter()
        .filter(|e| &e.run == top)
        .filter_map(|e| match &e.body {
            EventBody::LlmRequest { node: n, tools, .. } if n == node => Some(
                tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect(),
            ),
            _ => None,
        })
        .collect()
}

fn errors(events: &[Event], node: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Error { node: Some(n), message } if n == node => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// declarative_weather_agent
// ---------------------------------------------------------------------------------------------

#[test]
fn declarative_weather_agent_tool_loop_interrupt_and_resume() {
    let mut s = start("examples/declarative_weather_agent/agent.yaml", "Weather in Paris?", "declarative_weather_agent");
    s.run();
    let p = pending(&s);
    assert_eq!(p.node, "ask_next_place");
    // The interrupt value is the last message's content: a string.
    assert_eq!(p.value, json!("It is sunny in Paris."));
    assert_eq!(p.prompt, "It is sunny in Paris.");
    let ev = s.events();
    assert_eq!(visited(&ev), strs(&["init", "agent", "agent_tools", "agent", "update_stats", "ask_next_place"]));
    // The auto-injected tool node is reached through `has_tool_calls`.
    assert!(ev.iter().any(|e| matches!(&e.body,
        EventBody::Route { from, to, reason: RouteReason::Branch { condition, .. } }
            if from == "agent" && to == "agent_tools" && condition == "has_tool_calls")));
    // The tool really ran (stand-in Python module).
    let call = ev
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolCall { node, call } if node == "agent_tools" => Some(call.clone()),
            _ => None,
        })
        .expect("a tool_call event");
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.args, json!({"city": "Paris"}));
    let (id, result, error) = ev
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolResult { node, id, result, error, .. } if node == "agent_tools" => {
                Some((id.clone(), result.clone(), error.clone()))
            }
            _ => None,
        })
        .expect("a tool_result event");
    assert_eq!(id, call.id);
    assert_eq!(result, json!("Sunny, 22 degrees in Paris"), "{error:?}");
    assert_eq!(error, None);
    // The tool offered to the model, with the schema from the Python signature.
    let req_tools = ev
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(req_tools[0]["name"], "get_weather");
    assert_eq!(req_tools[0]["parameters"]["properties"]["city"]["type"], "string", "{req_tools}");

    let st = s.state();
    assert_eq!(st["query_count"], json!(1));
    assert_eq!(st["last_status"], json!("done"));
    let msgs = st["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[1]["type"], "ai");
    assert_eq!(msgs[1]["tool_calls"][0]["name"], "get_weather");
    assert_eq!(msgs[2]["type"], "tool");
    assert_eq!(msgs[2]["content"], "Sunny, 22 degrees in Paris");
    assert_eq!(msgs[2]["tool_call_id"], json!(call.id));
    assert_eq!(msgs[2]["name"], "get_weather");

    // Resume with the next question: the loop goes round again.
    s.answer(&p.id, json!("And in Rome?")).unwrap();
    s.run();
    let p2 = pending(&s);
    assert_eq!(p2.node, "ask_next_place");
    assert_ne!(p2.id, p.id);
    assert_eq!(p2.value, json!("Rome is sunny too."));
    assert_eq!(
        visited(&s.events()),
        strs(&[
            "init",
            "agent",
            "agent_tools",
            "agent",
            "update_stats",
            "ask_next_place",
            "ask_next_place", // the interrupt node re-runs on resume
            "agent",
            "agent_tools",
            "agent",
            "update_stats",
            "ask_next_place",
        ])
    );
    let st = s.state();
    assert_eq!(st["query_count"], json!(2));
    assert_eq!(
        messages(&st),
        vec![
            ("human".into(), "Weather in Paris?".into()),
            ("ai".into(), "".into()),
            ("tool".into(), "Sunny, 22 degrees in Paris".into()),
            ("ai".into(), "It is sunny in Paris.".into()),
            ("human".into(), "And in Rome?".into()),
            ("ai".into(), "".into()),
            ("tool".into(), "Sunny, 22 degrees in Rome".into()),
            ("ai".into(), "Rome is sunny too.".into()),
        ]
    );
    // Nobody answers the second question: the run ends interrupted.
    s.give_up_interrupted();
    assert!(matches!(s.status(), Status::Finished { status: RunStatus::Interrupted, .. }));
}

#[test]
fn legacy_declarative_weather_agent_bare_field_names() {
    // No manifest_version, `messages` / `query_count` as bare names in CEL.
    let mut s = start("legacy/declarative-weather-agent.yaml", "Weather in Madrid?", "legacy_declarative_weather_agent");
    s.run();
    let p = pending(&s);
    assert_eq!(p.node, "ask_next_place");
    assert_eq!(p.value, json!("Madrid is hot."));
    assert_eq!(visited(&s.events()), strs(&["init", "agent", "agent_tools", "agent", "update_stats", "ask_next_place"]));
    let st = s.state();
    assert_eq!(st["query_count"], json!(1));
    assert_eq!(st["last_status"], json!("done"));
    assert_eq!(
        messages(&st),
        vec![
            ("human".into(), "Weather in Madrid?".into()),
            ("ai".into(), "".into()),
            ("tool".into(), "Sunny, 22 degrees in Madrid".into()),
            ("ai".into(), "Madrid is hot.".into()),
        ]
    );
    // The `messages` prompt item (bare `messages`) spliced the conversation into the request.
    let ev = s.events();
    let last_req = ev
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { messages, .. } => Some(messages.clone()),
            _ => None,
        })
        .unwrap();
    let roles: Vec<&str> = last_req.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
}

// ---------------------------------------------------------------------------------------------
// approval_agent
// ---------------------------------------------------------------------------------------------

fn decision(text: &str, d: &str) -> Value {
    json!({"content": text, "additional_kwargs": {"decision": d}})
}

#[test]
fn approval_agent_revise_then_approve() {
    let mut s = start("examples/approval_agent/agent.yaml", "Describe Rust in one line.", "approval_agent");
    s.run();
    let p = pending(&s);
    assert_eq!(p.node, "get_approval");
    // A map value: shown to the user as is.
    assert_eq!(
        p.value,
        json!({"type": "approval_request", "draft": "Rust is a systems language focused on safety.",
               "instructions": "Reply 'approve' to accept, or provide feedback to revise."})
    );
    let ev = s.events();
    assert!(ev.iter().any(|e| matches!(&e.body, EventBody::Interrupt { node, value, .. }
        if node == "get_approval" && value["type"] == "approval_request")));

    s.answer(&p.id, decision("Shorter, please.", "revise")).unwrap();
    s.run();
    let p2 = pending(&s);
    assert_eq!(p2.value["draft"], "Rust: fast and memory-safe.");
    s.answer(&p2.id, decision("Looks good.", "approve")).unwrap();
    s.run();
    let out = completed(&s);
    // The reply is the last state message, whatever its role, as upstream's `send_message`
    // yields it (reference/sherma.md §14): here the approving answer itself.
    assert_eq!(out, json!("Looks good."));
    let ev = s.events();
    assert_eq!(
        visited(&ev),
        strs(&["draft", "get_approval", "get_approval", "revise", "get_approval", "get_approval"])
    );
    // Routing: the revise answer took the default, the approve answer the branch to the end.
    let from_approval: Vec<(String, RouteReason)> = ev
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Route { from, to, reason } if from == "get_approval" => Some((to.clone(), reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(from_approval.len(), 2);
    assert_eq!(from_approval[0], ("revise".to_string(), RouteReason::Default));
    assert_eq!(from_approval[1].0, "__end__");
    assert!(matches!(from_approval[1].1, RouteReason::Branch { index: 0, .. }));

    let st = s.state();
    assert_eq!(
        messages(&st),
        vec![
            ("human".into(), "Describe Rust in one line.".into()),
            ("ai".into(), "Rust is a systems language focused on safety.".into()),
            ("human".into(), "Shorter, please.".into()),
            ("ai".into(), "Rust: fast and memory-safe.".into()),
            ("human".into(), "Looks good.".into()),
        ]
    );
    // The structured answers keep their additional_kwargs.
    let msgs = st["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["additional_kwargs"], json!({"decision": "revise"}));
    assert_eq!(msgs[4]["additional_kwargs"], json!({"decision": "approve"}));
}

#[test]
fn approval_agent_plain_text_answer_fails_clearly() {
    let mut s = start("examples/approval_agent/agent.yaml", "Describe Rust in one line.", "approval_agent");
    s.run();
    let p = pending(&s);
    s.answer(&p.id, json!("approve")).unwrap();
    s.run();
    assert!(
        matches!(s.status(), Status::Finished { status: RunStatus::Failed, .. }),
        "{:?}\n{}",
        s.status(),
        dump(&s)
    );
    let (node, message) = s.failure().cloned().unwrap();
    assert_eq!(node.as_deref(), Some("get_approval"));
    // The failure names the node, the edge and the missing key.
    assert!(message.starts_with("routing after `get_approval` failed: edge from `get_approval`, branch 1 (to `__end__`): expression"), "{message}");
    assert!(message.contains("no such key: decision"), "{message}");
    assert!(message.contains("the answer to the interrupt `get_approval` has no `decision`"), "{message}");
    assert!(message.contains("structured answer"), "{message}");
    // One error event for the failure (the session's), carrying the same text.
    let errs = errors(&s.events(), "get_approval");
    assert_eq!(errs, vec![message.clone()]);
    assert_eq!(visited(&s.events()), strs(&["draft", "get_approval", "get_approval"]));
    // The plain answer was stored before routing failed.
    let st = s.state();
    assert_eq!(messages(&st).last().unwrap(), &("human".to_string(), "approve".to_string()));
}

// ---------------------------------------------------------------------------------------------
// error_recovery_agent
// ---------------------------------------------------------------------------------------------

#[test]
fn error_recovery_agent_retries_then_falls_back() {
    let mut s =
        start_scaled("examples/error_recovery_agent/agent.yaml", "Weather in Paris?", "error_recovery_agent", 0.0);
    s.run();
    completed(&s);
    let ev = s.events();
    assert_eq!(visited(&ev), strs(&["agent", "error_handler"]));
    // Three attempts: two retry errors, then the fallback.
    let errs = errors(&ev, "agent");
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert!(errs[0].starts_with("attempt 1 of 3 failed: 503 service unavailable"), "{}", errs[0]);
    assert!(errs[1].starts_with("attempt 2 of 3 failed: 503 service unavailable"), "{}", errs[1]);
    assert!(errs[2].contains("going to fallback `error_handler`"), "{}", errs[2]);
    assert!(ev.iter().any(|e| matches!(&e.body, EventBody::Route { from, to, reason: RouteReason::Branch { condition, .. } }
        if from == "agent" && to == "error_handler" && condition == "has_error_fallback")));

    let st = s.state();
    let last = &st["__sherma__"]["last_error"];
    assert_eq!(last["node"], "agent");
    assert_eq!(last["type"], "LLMError");
    assert_eq!(last["attempt"], json!(3));
    let msg = last["message"].as_str().unwrap();
    assert!(msg.contains("429 rate limit"), "{msg}");
    // The routing sentinel is cleared once the fallback branch fired; last_error stays.
    assert!(st["__sherma__"].get("error_fallback").is_none(), "{st}");
    // The fallback node read __sherma__.last_error; its string became a human message.
    let msgs = messages(&st);
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0], ("human".to_string(), "Weather in Paris?".to_string()));
    assert_eq!(msgs[1].0, "human");
    assert_eq!(msgs[1].1, format!("I'm sorry, I encountered an error: {msg}. Please try again later."));
}

#[test]
fn error_recovery_agent_backoff_is_exponential() {
    // delay 1.0, exponential, max 10: 1s then 2s, scaled by 1/100.
    let mut s =
        start_scaled("examples/error_recovery_agent/agent.yaml", "Weather in Paris?", "error_recovery_agent", 0.01);
    let t0 = std::time::Instant::now();
    s.run();
    completed(&s);
    assert!(t0.elapsed() >= std::time::Duration::from_millis(30));
    let errs = errors(&s.events(), "agent");
    assert!(errs[0].ends_with("retrying in 0.01s"), "{}", errs[0]);
    assert!(errs[1].ends_with("retrying in 0.02s"), "{}", errs[1]);
}

#[test]
fn error_recovery_agent_retry_succeeds() {
    let mut s = start_scaled(
        "examples/error_recovery_agent/agent.yaml",
        "Weather in Paris?",
        "error_recovery_agent.recovers",
        0.0,
    );
    s.run();
    assert_eq!(completed(&s), json!("Paris is sunny."));
    let ev = s.events();
    assert_eq!(visited(&ev), strs(&["agent"]));
    assert_eq!(errors(&ev, "agent").len(), 1);
    let st = s.state();
    assert!(st.get("__sherma__").is_none_or(|i| i.get("last_error").is_none()), "{st}");
    assert_eq!(
        messages(&st),
        vec![("human".into(), "Weather in Paris?".into()), ("ai".into(), "Paris is sunny.".into())]
    );
}

// ---------------------------------------------------------------------------------------------
// Skills
// ---------------------------------------------------------------------------------------------

fn skill_md() -> String {
    std::fs::read_to_string(corpus("examples/skills/weather/SKILL.md")).unwrap()
}

#[test]
fn load_skills_manual_binds_the_skill_tools() {
    let mut s = start("examples/load_skills_manual/agent.yaml", "Weather in Berlin?", "load_skills_manual");
    s.run();
    assert_eq!(completed(&s), json!("Berlin: sunny, 22 degrees."));
    let ev = s.events();
    assert_eq!(visited(&ev), strs(&["load_skills", "execute", "execute_tools", "execute"]));
    // Loaded by the graph, so the first call already offers the skill's tool.
    assert_eq!(offered(&ev, "execute"), vec![strs(&["get_weather"]), strs(&["get_weather"])]);
    let st = s.state();
    let internal = &st["__sherma__"];
    assert_eq!(internal["loaded_tools_from_skills"], json!(["get_weather"]));
    // load_skills keeps the version as given (not normalised).
    assert_eq!(internal["loaded_skills"]["weather"], json!({"version": "1.0.0", "tools": ["get_weather"]}));
    let msgs = st["messages"].as_array().unwrap();
    // human, synthesized ai(load_skill_md call), tool(SKILL.md), ai(get_weather), tool, ai
    assert_eq!(msgs.len(), 6, "{st}");
    assert_eq!(msgs[1]["type"], "ai");
    assert_eq!(msgs[1]["tool_calls"][0]["name"], "load_skill_md");
    assert_eq!(msgs[1]["tool_calls"][0]["args"], json!({"skill_id": "weather", "version": "1.0.0"}));
    assert!(msgs[1]["tool_calls"][0]["id"].as_str().unwrap().starts_with("load_skill_"));
    assert_eq!(msgs[2]["type"], "tool");
    assert_eq!(msgs[2]["content"], json!(skill_md()));
    assert_eq!(msgs[2]["tool_call_id"], msgs[1]["tool_calls"][0]["id"]);
    assert_eq!(msgs[4]["content"], "Sunny, 22 degrees in Berlin");
}

#[test]
fn load_skills_llm_driven_loads_what_the_model_selected() {
    let mut s = start("examples/load_skills_llm_driven/agent.yaml", "Weather in Oslo?", "load_skills_llm_driven");
    s.run();
    assert_eq!(completed(&s), json!("Oslo: sunny."));
    let ev = s.events();
    assert_eq!(visited(&ev), strs(&["select_skills", "load_selected_skills", "execute", "execute_tools", "execute"]));
    assert_eq!(offered(&ev, "select_skills"), vec![Vec::<String>::new()]);
    assert_eq!(offered(&ev, "execute"), vec![strs(&["get_weather"]), strs(&["get_weather"])]);
    let st = s.state();
    assert_eq!(st["__sherma__"]["loaded_tools_from_skills"], json!(["get_weather"]));
    assert_eq!(st["__sherma__"]["loaded_skills"]["weather"]["version"], "1.0.0");
    let msgs = messages(&st);
    assert_eq!(msgs[1], ("ai".to_string(), r#"{"skills":[{"id":"weather","version":"1.0.0"}]}"#.to_string()));
    assert_eq!(msgs[3], ("tool".to_string(), skill_md()));
    assert_eq!(msgs[5], ("tool".to_string(), "Sunny, 22 degrees in Oslo".to_string()));
    assert_eq!(msgs.len(), 7);
}

#[test]
fn load_skills_llm_driven_with_no_skill_selected() {
    let mut s =
        start("examples/load_skills_llm_driven/agent.yaml", "Tell me a joke.", "load_skills_llm_driven.none");
    s.run();
    assert_eq!(completed(&s), json!("I can only chat."));
    let ev = s.events();
    // Nothing loaded: no tools offered, so no tool call and no detour through execute_tools.
    assert_eq!(visited(&ev), strs(&["select_skills", "load_selected_skills", "execute"]));
    assert_eq!(offered(&ev, "execute"), vec![Vec::<String>::new()]);
    let st = s.state();
    assert_eq!(st["__sherma__"]["loaded_tools_from_skills"], json!([]));
    // load_skills added no messages.
    assert_eq!(messages(&st).len(), 3);
}

#[test]
fn declarative_skill_agent_load_use_unload() {
    let mut s = start("examples/declarative_skill_agent/agent.yaml", "Weather in Tokyo?", "declarative_skill_agent");
    s.run();
    assert_eq!(completed(&s), json!("TASK_COMPLETE Tokyo is sunny and warm."));
    let ev = s.events();
    assert_eq!(
        visited(&ev),
        strs(&[
            "discover_skills",
            "discover_skills_tools",
            "discover_skills",
            "execute",
            "execute_tools",
            "execute",
            "execute_tools",
            "execute",
            "reflect",
            "summarize",
            "execute",
            "reflect",
        ])
    );
    // The catalogue in CEL: `template(..., {"available_skills": string(skills)})`.
    let sys = ev
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { node, messages, .. } if node == "discover_skills" => Some(messages[0].clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(sys["role"], "system");
    let text = sys["content"].as_str().unwrap();
    assert!(text.contains("Weather Lookup") && text.contains("Open-Meteo"), "{text}");
    assert!(!text.contains("${available_skills}"), "{text}");
    // Tools offered: the explicit skill tools to discover_skills; to execute, the loaded skill's
    // tool until it is unloaded, then nothing.
    assert_eq!(offered(&ev, "discover_skills"), vec![strs(&["load_skill_md", "unload_skill"]); 2]);
    assert_eq!(
        offered(&ev, "execute"),
        vec![strs(&["get_weather"]), strs(&["get_weather"]), vec![], vec![]]
    );
    // Tool results: SKILL.md, the weather, the unload confirmation.
    let results: Vec<(String, String, Value)> = ev
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolResult { node, name, result, error: None, .. } => {
                Some((node.clone(), name.clone(), result.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3, "{results:#?}");
    assert_eq!(results[0], ("discover_skills_tools".into(), "load_skill_md".into(), json!(skill_md())));
    assert_eq!(results[1], ("execute_tools".into(), "get_weather".into(), json!("Sunny, 22 degrees in Tokyo")));
    assert_eq!(results[2].1, "unload_skill");
    assert!(results[2].2.as_str().unwrap().contains("get_weather"), "{:?}", results[2]);

    let st = s.state();
    let internal = &st["__sherma__"];
    assert_eq!(internal["loaded_tools_from_skills"], json!([]));
    assert_eq!(internal["loaded_skills"], json!({}));
    // While loaded (after discover_skills_tools) the version was normalised to `==1.0.0`.
    let after_load = ev
        .iter()
        .find_map(|e| match &e.body {
            EventBody::NodeExit { node, update, .. } if node == "discover_skills_tools" => Some(update.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        after_load["__sherma__"]["loaded_skills"]["weather"],
        json!({"version": "==1.0.0", "tools": ["get_weather"]})
    );
    assert_eq!(after_load["__sherma__"]["loaded_tools_from_skills"], json!(["get_weather"]));
    let kinds: Vec<String> = messages(&st).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        strs(&["human", "ai", "tool", "ai", "ai", "tool", "ai", "tool", "ai", "ai", "ai", "ai", "ai"])
    );
}

// ---------------------------------------------------------------------------------------------
// multi_agent
// ---------------------------------------------------------------------------------------------

#[test]
fn supervisor_agent_calls_the_sub_agent_as_a_tool() {
    let mut s = start("examples/multi_agent/supervisor_agent.yaml", "Plan a trip to Lisbon.", "supervisor_agent");
    s.run();
    assert_eq!(completed(&s), json!("Lisbon is sunny: pack sunscreen."));
    let ev = s.events();
    let top = ev[0].run.clone();
    assert_eq!(visited(&ev), strs(&["planner", "planner_tools", "planner"]));
    // use_sub_agents_as_tools: true offers the sub-agent by its id.
    assert_eq!(offered(&ev, "planner"), vec![strs(&["weather-agent"]); 2]);
    // The nested run: its own run id `<parent>/<node>`, its own node sequence and tool call.
    let child = format!("{top}/planner_tools");
    assert_eq!(nodes_of(&ev, &child), strs(&["agent", "agent_tools", "agent"]));
    assert!(ev.iter().any(|e| e.run == child
        && matches!(&e.body, EventBody::RunStarted { agent, input, .. } if agent == "weather-agent" && input == "What is the weather in Lisbon?")));
    assert!(ev.iter().any(|e| e.run == child
        && matches!(&e.body, EventBody::ToolResult { name, result, .. } if name == "get_weather" && result == "Sunny, 22 degrees in Lisbon")));
    assert!(ev.iter().any(|e| e.run == child
        && matches!(&e.body, EventBody::RunFinished { status: RunStatus::Completed, output, .. } if output == "Lisbon: sunny.")));
    // The sub-agent's answer is the tool message in the parent's state.
    let st = s.state();
    let msgs = st["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[1]["tool_calls"][0]["name"], "weather-agent");
    assert_eq!(msgs[2]["type"], "tool");
    assert_eq!(msgs[2]["name"], "weather-agent");
    assert_eq!(msgs[2]["content"], "Lisbon: sunny.");
    assert_eq!(msgs[3]["content"], "Lisbon is sunny: pack sunscreen.");
}

