//! Loki graph runs end to end: small graphs written into temp agent dirs with stand-in scripts,
//! scripted LLM replies and queued answers, run through `RunSession`; plus session controls and
//! the conformance corpus' `graph.example.yaml`.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use switchyard::run::events::{Event, EventBody, PauseReason, RouteReason, RunStatus};
use switchyard::run::loki::LokiMachine;
use switchyard::run::narrate::{Narrator, perf_summary};
use switchyard::run::provider::ScriptedProvider;
use switchyard::run::session::{Breakpoint, RunOptions, RunSession, Status};
use test_support::run::{completed, dump, failure};
use test_support::TempDir;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A fresh `agents` folder in a temp dir (kept: the helpers hand out paths inside it).
fn agents_root() -> PathBuf {
    TempDir::new("loki").sub("agents").keep()
}

/// Write an agent `<root>/<name>/graph.yaml` plus files (path, content); returns its graph path.
fn write_agent(root: &Path, name: &str, graph: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (p, text) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let g = dir.join("graph.yaml");
    std::fs::write(&g, graph).unwrap();
    g
}

fn agent(graph: &str, files: &[(&str, &str)]) -> PathBuf {
    write_agent(&agents_root(), "t", graph, files)
}

fn machine(graph: &Path, input: &str) -> LokiMachine {
    let doc = Arc::new(switchyard::doc::load_path(graph));
    LokiMachine::new(doc, input, None).unwrap_or_else(|e| panic!("{e}"))
}

fn options(replies: &str, answers: &[&str]) -> RunOptions {
    let provider = ScriptedProvider::from_str(Path::new("replies.yaml"), replies).expect("replies parse");
    let mut o = RunOptions::new(Box::new(provider));
    o.answers = answers.iter().map(|a| json!(a)).collect();
    o
}

fn session(graph: &Path, input: &str, replies: &str, answers: &[&str]) -> RunSession {
    RunSession::new(Box::new(machine(graph, input)), json!(input), options(replies, answers))
}

/// Nodes entered by the top-level run, per step in node-id order (parallel branches enter in
/// any order).
fn visited(events: &[Event]) -> Vec<String> {
    let top = &events[0].run;
    let mut v: Vec<(u64, String)> = events
        .iter()
        .filter(|e| &e.run == top)
        .filter_map(|e| match &e.body {
            EventBody::NodeEnter { step, node, .. } => Some((*step, node.clone())),
            _ => None,
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, n)| n).collect()
}

fn routes(events: &[Event]) -> Vec<(String, String, RouteReason)> {
    let top = &events[0].run;
    let mut v: Vec<(String, String, RouteReason)> = events
        .iter()
        .filter(|e| &e.run == top)
        .filter_map(|e| match &e.body {
            EventBody::Route { from, to, reason } => Some((from.clone(), to.clone(), reason.clone())),
            _ => None,
        })
        .collect();
    v.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    v
}

const NO_REPLIES: &str = "replies: []\n";

// ---------------------------------------------------------------------------------------------
// Graph semantics
// ---------------------------------------------------------------------------------------------

#[test]
fn fan_out_merges_through_reducers() {
    let g = agent(
        r#"
name: fan
start: s0
reducers: { sources: append, n: sum, notes: concat }
initial_state: { n: 10 }
nodes:
  s0: { type: script, script: s0.sh, next: [a, b] }
  a: { type: script, script: a.sh, state_updates: {}, next: j }
  b: { type: script, script: b.py, state_updates: {}, next: j }
  j: { type: script, script: j.py, next: done }
  done: { type: end, output: "{{sources}} {{n}} {{total}}" }
"#,
        &[
            ("s0.sh", "echo '{\"started\": true}'\n"),
            ("a.sh", "echo '{\"sources\": \"A\", \"n\": 1, \"notes\": \"from a\"}'\n"),
            (
                "b.py",
                "import json, os\ns = json.loads(os.environ['GRAPH_STATE'])\nprint(json.dumps({'sources': 'B', 'n': s['n'] + 5, 'notes': 'from b'}))\n",
            ),
            (
                "j.py",
                "import json, os\ns = json.loads(os.environ['GRAPH_STATE'])\nprint(json.dumps({'total': len(s['sources'])}))\n",
            ),
        ],
    );
    let mut s = session(&g, "go", NO_REPLIES, &[]);
    s.run();
    // b read n = 10 from its fork and wrote 15; a wrote 1: sum folds 10 + 1 + 15.
    assert_eq!(completed(&s), json!(r#"["A","B"] 26 2"#));
    assert_eq!(visited(&s.events()), ["s0", "a", "b", "j", "done"]);
    let st = s.state();
    assert_eq!(st["notes"], json!("from a\nfrom b"));
    assert_eq!(st["started"], json!(true));
    assert_eq!(st["initial_prompt"], json!("go"));
}

#[test]
fn parallel_writes_without_reducer_fail() {
    let g = agent(
        r#"
name: clash
settings: { validate_before_run: false }
start: s0
nodes:
  s0: { type: script, script: s0.sh, next: [a, b] }
  a: { type: script, script: s.sh, next: done }
  b: { type: script, script: s2.sh, next: done }
  done: { type: end }
"#,
        &[("s0.sh", "echo '{}'\n"), ("s.sh", "echo '{\"x\": 1}'\n"), ("s2.sh", "echo '{\"x\": 2}'\n")],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert!(failure(&s).starts_with("Key 'x' was written by 2 parallel branches but has no reducer declared."));
}

#[test]
fn map_collects_script_and_llm_branches_in_order() {
    let g = agent(
        r#"
name: mapper
start: m1
initial_state: { items: ["x", "y", "z"] }
nodes:
  m1:
    type: map
    over: "{{items}}"
    as: item
    branch: up
    collect_into: upper
    next: m2
  up: { type: script, script: up.py }
  m2:
    type: map
    over: "{{upper}}"
    as: word
    branch: describe
    collect_into: described
    max_concurrency: 1
    next: done
  describe: { type: llm, prompt: "Describe {{word}}" }
  done: { type: end, output: "{{upper}} {{described}}" }
"#,
        &[(
            "up.py",
            "import json, os\ns = json.loads(os.environ['GRAPH_STATE'])\nprint(json.dumps({'output': s['item'].upper()}))\n",
        )],
    );
    let replies = "replies:\n  - { node: describe, content: one }\n  - { node: describe, content: two }\n  - { node: describe, content: three }\n";
    let mut s = session(&g, "", replies, &[]);
    s.run();
    assert_eq!(completed(&s), json!(r#"["X","Y","Z"] ["one","two","three"]"#));
    assert_eq!(visited(&s.events()), ["m1", "m2", "done"]);
    // Item state stays in the items: neither `item` nor `output` reach the run state.
    let st = s.state();
    assert!(st.get("item").is_none() && st.get("output").is_none(), "{st}");
    // Each llm item saw its own word.
    let prompts: Vec<String> = s
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::LlmRequest { messages, .. } => Some(messages[0]["content"].as_str().unwrap().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(prompts, ["Describe X", "Describe Y", "Describe Z"]);
}

#[test]
fn map_over_a_non_list_fails() {
    let g = agent(
        r#"
name: mapper
start: m
initial_state: { items: "a,b" }
nodes:
  m: { type: map, over: "{{items}}", as: item, branch: up, collect_into: out, next: done }
  up: { type: script, script: up.sh }
  done: { type: end }
"#,
        &[("up.sh", "echo '{}'\n")],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(failure(&s), "map node 'm': `over` template '{{items}}' must resolve to an array, got string");
}

#[test]
fn script_next_overrides_static_routes() {
    let g = agent(
        r#"
name: router
start: r
nodes:
  r:
    type: script
    script: r.sh
    next: [a, b]
    state_updates: { picked: "{{choice_made}}" }
  a: { type: end, output: A }
  b: { type: end, output: B }
  c: { type: end, output: "C {{picked}}" }
"#,
        &[("r.sh", "echo '{\"_next\": \"c\", \"choice_made\": \"via next\"}'\n")],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(completed(&s), json!("C via next"));
    assert_eq!(visited(&s.events()), ["r", "c"]);
    assert_eq!(routes(&s.events()), [("r".into(), "c".into(), RouteReason::Next)]);
    assert!(s.state().get("_next").is_none());
}

const APPROVAL: &str = r#"
name: approve
start: ask
initial_state: { plan: "ship it" }
nodes:
  ask:
    type: approval
    question: "Approve {{plan}}?"
    options: ["yes", "no"]
    routes: { "yes": ok, "no": nope }
    on_other: other
    state_updates: { decision: "{{choice}}" }
  ok: { type: end, output: "approved" }
  nope: { type: end, output: "rejected" }
  other: { type: end, output: "other: {{decision}}" }
"#;

#[test]
fn approval_routes_by_option_and_on_other() {
    let g = agent(APPROVAL, &[]);
    for (answer, out, reason) in [
        ("yes", "approved", RouteReason::RouteOption { option: "yes".into() }),
        ("no", "rejected", RouteReason::RouteOption { option: "no".into() }),
        ("later, maybe", "other: later, maybe", RouteReason::OnOther),
    ] {
        let mut s = session(&g, "", NO_REPLIES, &[answer]);
        s.run();
        assert_eq!(completed(&s), json!(out), "{answer}");
        assert_eq!(s.state()["decision"], json!(answer));
        // The scoped `choice` never leaks into the state.
        assert!(s.state().get("choice").is_none());
        let r = routes(&s.events());
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].2, reason);
        let interrupt = s.events().into_iter().find_map(|e| match e.body {
            EventBody::Interrupt { prompt, options, .. } => Some((prompt, options)),
            _ => None,
        });
        assert_eq!(interrupt, Some(("Approve ship it?".to_string(), vec!["yes".to_string(), "no".to_string()])));
    }
}

#[test]
fn approval_waits_for_session_answer() {
    let g = agent(APPROVAL, &[]);
    let mut s = session(&g, "", NO_REPLIES, &[]);
    let pending = match s.run().clone() {
        Status::Interrupted { pending } => pending,
        other => panic!("{other:?}"),
    };
    assert_eq!(pending.node, "ask");
    assert!(s.state().get("decision").is_none(), "nothing ran yet");
    s.answer(&pending.id, json!("no")).unwrap();
    s.run();
    assert_eq!(completed(&s), json!("rejected"));
    // Entered once: the interrupt happens before the node runs.
    assert_eq!(visited(&s.events()), ["ask", "nope"]);
}

const INPUT: &str = r#"
name: ask
start: name
initial_state: { last: "Ada" }
nodes:
  name:
    type: input
    question: "Your name?"
    default: "{{last}}"
    validation: "len(input) > 2"
    state_updates: { who: "{{input}}" }
    next: [done, unused]
  done: { type: end, output: "hi {{who}}" }
  unused: { type: end, output: "never" }
"#;

#[test]
fn input_default_and_validation() {
    let g = agent(INPUT, &[]);
    let mut s = session(&g, "", NO_REPLIES, &[""]);
    s.run();
    assert_eq!(completed(&s), json!("hi Ada"));
    assert_eq!(visited(&s.events()), ["name", "done"], "only the first `next` is followed");
    let asked = s.events().into_iter().find_map(|e| match e.body {
        EventBody::Interrupt { prompt, default, validation, .. } => Some((prompt, default, validation)),
        _ => None,
    });
    assert_eq!(
        asked,
        Some(("Your name?".to_string(), Some("Ada".to_string()), Some("len(input) > 2".to_string()))),
        "the question, its default and its rule travel separately"
    );

    let mut s = session(&g, "", NO_REPLIES, &["Grace"]);
    s.run();
    assert_eq!(completed(&s), json!("hi Grace"));

    let mut s = session(&g, "", NO_REPLIES, &["Al"]);
    s.run();
    assert_eq!(failure(&s), "Input failed validation 'len(input) > 2' (got 2 chars)");
    assert_eq!(s.failure().unwrap().0.as_deref(), Some("name"));

    // Answered through the session (the app's dialog), a failing answer is refused and the
    // question stays open; a good one goes through.
    let mut s = session(&g, "", NO_REPLIES, &[]);
    let Status::Interrupted { pending } = s.run().clone() else { panic!("expected the question: {}", dump(&s)) };
    let e = s.answer(&pending.id, json!("Al")).unwrap_err();
    assert_eq!(e, "Input failed validation 'len(input) > 2' (got 2 chars)");
    assert!(matches!(s.status(), Status::Interrupted { .. }), "still waiting after a refused answer");
    s.answer(&pending.id, json!("Grace")).unwrap();
    s.run();
    assert_eq!(completed(&s), json!("hi Grace"));
}

const SCHEMA_GRAPH: &str = r#"
name: schema
start: triage
nodes:
  triage:
    type: llm
    instructions: "Triage for {{initial_prompt}}"
    prompt: "{{initial_prompt}}"
    output_schema:
      type: object
      properties: { topic: { type: string }, depth: { type: integer } }
    state_updates: { summary: "{{output.topic}}/{{output.depth}}", topic: "explicit wins" }
    next: done
  done: { type: end, output: "{{topic}} {{depth}} {{summary}}" }
"#;

fn llm_requests(s: &RunSession) -> Vec<Value> {
    s.events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::LlmRequest { messages, .. } => Some(messages),
            _ => None,
        })
        .collect()
}

#[test]
fn llm_output_schema_fast_path_auto_merges() {
    let g = agent(SCHEMA_GRAPH, &[]);
    let replies = "replies:\n  - content: \"<think>hmm</think>\\n```json\\n{\\\"topic\\\": \\\"rust\\\", \\\"depth\\\": 3, \\\"extra\\\": [1]}\\n```\"\n";
    let mut s = session(&g, "learn rust", replies, &[]);
    s.run();
    assert_eq!(completed(&s), json!("explicit wins 3 rust/3"));
    let st = s.state();
    assert_eq!(st["depth"], json!(3), "typed auto-merge");
    assert!(st.get("extra").is_none(), "coyote 0.10.3: only the keys the schema declares are merged");
    assert!(st.get("output").is_none());
    let reqs = llm_requests(&s);
    assert_eq!(reqs.len(), 1, "no extractor call");
    // The schema hint goes to the instructions (system prompt).
    assert_eq!(reqs[0][0]["role"], json!("system"));
    assert!(reqs[0][0]["content"].as_str().unwrap().starts_with("Triage for learn rust\n\nRespond with a JSON object"));
    assert_eq!(reqs[0][1]["content"], json!("learn rust"));
}

#[test]
fn llm_output_schema_extractor_path() {
    let g = agent(SCHEMA_GRAPH, &[]);
    let replies = r#"
replies:
  - content: "The topic is go, at depth two."
  - content: "Sure! topic=go"
  - content: '{"topic": "go", "depth": 2}'
"#;
    let mut s = session(&g, "learn go", replies, &[]);
    s.run();
    assert_eq!(completed(&s), json!("explicit wins 2 go/2"));
    let reqs = llm_requests(&s);
    assert_eq!(reqs.len(), 3, "call, extractor, repair");
    assert!(reqs[1][1]["content"].as_str().unwrap().ends_with("Input:\nThe topic is go, at depth two."));
    assert!(reqs[2][1]["content"].as_str().unwrap().starts_with("Your previous response was not valid JSON"));
}

#[test]
fn llm_failure_takes_fallback_with_failure_text() {
    let g = agent(
        r#"
name: llmfail
start: think
nodes:
  think:
    type: llm
    prompt: "about {{missing_key}}"
    fallback: recover
    state_updates: { err: "{{output}}" }
    next: done
  recover: { type: end, output: "recovered: {{err}}" }
  done: { type: end, output: "ok" }
"#,
        &[],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(completed(&s), json!("recovered: LLM node failed: Failed to interpolate llm node prompt"));
    assert_eq!(routes(&s.events()), [("think".into(), "recover".into(), RouteReason::Fallback)]);
}

#[test]
fn llm_failure_without_fallback_fails_the_run() {
    let g = agent(
        "name: x\nstart: think\nnodes:\n  think: { type: llm, prompt: hi, next: done }\n  done: { type: end }\n",
        &[],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    let m = failure(&s);
    assert!(m.starts_with("LLM node failed and no fallback declared: LLM call failed: scripted provider: no reply left"), "{m}");
}

#[test]
fn llm_tool_calls_get_error_results() {
    let g = agent(
        r#"
name: tools
global_tools: [web_search.sh]
start: think
nodes:
  think: { type: llm, prompt: hi, tools: [web_search], max_iterations: 3, next: done }
  done: { type: end, output: "{{answer}}" }
"#,
        &[],
    );
    let replies = r#"
replies:
  - content: "Searching."
    tool_calls: [{ name: web_search, args: { q: rust } }]
  - content: "Done without tools."
"#;
    let mut s = session(&g, "", replies, &[]);
    s.run();
    completed(&s);
    let reqs = llm_requests(&s);
    assert_eq!(reqs.len(), 2);
    let tool_msg = reqs[1].as_array().unwrap().last().unwrap().clone();
    assert_eq!(tool_msg["role"], json!("tool"));
    // The global tool file is nowhere: the model is told where it was looked for.
    let text = tool_msg["content"].as_str().unwrap();
    assert!(text.contains("global tool 'web_search.sh' not found; looked in:"), "{text}");
}

#[test]
fn llm_runs_python_agent_tools_from_tools_py() {
    let g = agent(
        r#"
name: pytools
start: think
nodes:
  think: { type: llm, prompt: hi, tools: [lookup], max_iterations: 3, next: done }
  done: { type: end, output: "{{output}}" }
"#,
        &[(
            "tools.py",
            "def lookup(q: str, limit: int = 2) -> dict:\n    \"\"\"Find things.\"\"\"\n    return {'found': q.upper(), 'limit': limit}\n\n\ndef broken(q: str) -> str:\n    raise ValueError('no index')\n",
        )],
    );
    let replies = r#"
replies:
  - tool_calls: [{ name: lookup, args: { q: rust } }]
  - content: "Found it."
"#;
    let mut s = session(&g, "", replies, &[]);
    s.run();
    completed(&s);
    let reqs = llm_requests(&s);
    assert_eq!(reqs.len(), 2);
    let tool_msg = reqs[1].as_array().unwrap().last().unwrap().clone();
    assert_eq!(tool_msg["role"], json!("tool"));
    assert_eq!(tool_msg["content"], json!(r#"{"found":"RUST","limit":2}"#));
    let offered = s.events().into_iter().find_map(|e| match e.body {
        EventBody::LlmRequest { tools, .. } => Some(tools),
        _ => None,
    });
    let offered = offered.unwrap();
    assert_eq!(offered[0]["description"], json!("Find things."));
    assert_eq!(offered[0]["parameters"]["required"], json!(["q"]));
    let result = s.events().into_iter().find_map(|e| match e.body {
        EventBody::ToolResult { result, error, .. } => Some((result, error)),
        _ => None,
    });
    assert_eq!(result, Some((json!({"found": "RUST", "limit": 2}), None)));

    // A tool that raises: the model sees the error, the run goes on.
    let g = agent(
        r#"
name: pytools2
start: think
nodes:
  think: { type: llm, prompt: hi, tools: [broken], max_iterations: 3, next: done }
  done: { type: end, output: "{{output}}" }
"#,
        &[("tools.py", "def broken(q: str) -> str:\n    raise ValueError('no index')\n")],
    );
    let replies = "replies:\n  - tool_calls: [{ name: broken, args: { q: x } }]\n  - content: ok\n";
    let mut s = session(&g, "", replies, &[]);
    s.run();
    completed(&s);
    let reqs = llm_requests(&s);
    let tool_msg = reqs[1].as_array().unwrap().last().unwrap().clone();
    let text = tool_msg["content"].as_str().unwrap();
    assert!(text.starts_with("Error: ") && text.contains("ValueError: no index"), "{text}");
}

#[test]
fn script_failure_routes_to_fallback() {
    let g = agent(
        r#"
name: fb
start: s
nodes:
  s: { type: script, script: bad.sh, fallback: f, next: done }
  f: { type: script, script: ok.sh, next: done }
  done: { type: end, output: "{{fixed}}" }
"#,
        &[("bad.sh", "echo oops >&2\nexit 3\n"), ("ok.sh", "echo '{\"fixed\": \"yes\"}'\n")],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(completed(&s), json!("yes"));
    assert_eq!(visited(&s.events()), ["s", "f", "done"]);
    assert_eq!(routes(&s.events())[1], ("s".into(), "f".into(), RouteReason::Fallback));
}

#[test]
fn script_failure_without_fallback_fails() {
    let g = agent(
        "name: x\nstart: s\nnodes:\n  s: { type: script, script: bad.sh, next: done }\n  done: { type: end }\n",
        &[("bad.sh", "echo 'not json'\n")],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert!(failure(&s).contains("not valid JSON"));
}

const COUNTER: &str = r#"
name: loop
settings: { max_loop_iterations: 3 }
start: tick
initial_state: { n: 0 }
nodes:
  tick: { type: script, script: tick.py, next: done }
  done: { type: end, output: "{{n}}" }
"#;
const TICK: &str =
    "import json, os\ns = json.loads(os.environ['GRAPH_STATE'])\nn = s['n'] + 1\nprint(json.dumps({'n': n, '_next': 'tick' if n < LIMIT else 'done'}))\n";

#[test]
fn loops_through_next_up_to_max_loop_iterations() {
    let g = agent(COUNTER, &[("tick.py", &TICK.replace("LIMIT", "3"))]);
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(completed(&s), json!("3"));
    assert_eq!(visited(&s.events()), ["tick", "tick", "tick", "done"]);

    let g = agent(COUNTER, &[("tick.py", &TICK.replace("LIMIT", "10"))]);
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(failure(&s), "Node 'tick' visited 4 times (max_loop_iterations=3). Possible infinite loop.");
    assert_eq!(s.state()["n"], json!(3));
}

#[test]
fn settings_timeout_aborts_between_and_during_super_steps() {
    // During: the script sleeps past the whole-run timeout and is killed.
    let g = agent(
        "name: slow\nsettings: { timeout: 1 }\nstart: s\nnodes:\n  s: { type: script, script: slow.sh, next: done }\n  done: { type: end }\n",
        &[("slow.sh", "sleep 5\necho '{}'\n")],
    );
    let t0 = std::time::Instant::now();
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(failure(&s), r#"Graph 'slow' timed out after 1s during super-step with frontier ["s"]"#);
    assert!(t0.elapsed().as_secs_f64() < 4.0, "the script was killed at the deadline");

    // Short steps add up: the step that crosses the budget is cut short.
    let g = agent(
        "name: slow2\nsettings: { timeout: 1 }\nstart: s\nnodes:\n  s: { type: script, script: nap.sh, next: done }\n  done: { type: end }\n",
        &[("nap.sh", "sleep 0.3\necho '{\"_next\": \"s\"}'\n")],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(failure(&s), r#"Graph 'slow2' timed out after 1s during super-step with frontier ["s"]"#);
    // At most budget / nap steps (a loaded machine may take fewer).
    assert!((1..=5).contains(&visited(&s.events()).len()), "{:?}", visited(&s.events()));
}

#[test]
fn timeout_zero_means_no_bound() {
    // coyote 0.10.3: `timeout: 0` (and `max_loop_iterations: 0`) mean "no cap".
    let g = agent(
        "name: z\nsettings: { timeout: 0, max_loop_iterations: 0 }\nstart: done\nnodes:\n  done: { type: end, output: fine }\n",
        &[],
    );
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(completed(&s), json!("fine"));
}

#[test]
fn agent_node_runs_a_nested_graph() {
    let root = agents_root();
    write_agent(
        &root,
        "helper",
        r#"
name: helper
start: work
nodes:
  work: { type: script, script: work.sh, next: confirm }
  confirm:
    type: approval
    question: "Continue?"
    options: ["go"]
    routes: { "go": done }
    on_other: done
  done: { type: end, output: '{"answer": "{{echo}}", "by": "helper"}' }
"#,
        &[(
            "work.sh",
            "python3 -c 'import json,os; s=json.loads(os.environ[\"GRAPH_STATE\"]); print(json.dumps({\"echo\": s[\"initial_prompt\"].upper()}))'\n",
        )],
    );
    let parent = write_agent(
        &root,
        "parent",
        r#"
name: parent
start: call
initial_state: { topic: "rust" }
nodes:
  call:
    type: agent
    agent: helper
    prompt: "study {{topic}}"
    output_schema: { type: object, properties: { answer: { type: string }, by: { type: string } } }
    state_updates: { result: "{{output.answer}}" }
    next: done
  done: { type: end, output: "{{result}} from {{by}}" }
"#,
        &[],
    );
    let mut s = session(&parent, "", NO_REPLIES, &["go"]);
    s.run();
    assert_eq!(completed(&s), json!("STUDY RUST from helper"));
    let events = s.events();
    assert_eq!(visited(&events), ["call", "done"]);
    let nested = format!("{}/call", events[0].run);
    let inner: Vec<String> = events
        .iter()
        .filter(|e| e.run == nested)
        .filter_map(|e| match &e.body {
            EventBody::NodeEnter { node, .. } => Some(node.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(inner, ["work", "confirm", "done"]);
    assert!(events.iter().all(|e| e.run == events[0].run || e.run == nested));
    // Nested runs are not narrated.
    let mut n = Narrator::new();
    let _ = n.feed(&events[0]);
    assert!(events.iter().filter(|e| e.run == nested).all(|e| n.feed(e).is_empty()));

    // Not found: the error names the paths tried.
    let lost = write_agent(
        &root,
        "lost",
        "name: lost\nsettings: { validate_before_run: false }\nstart: call\nnodes:\n  call: { type: agent, agent: nobody, prompt: hi, next: done }\n  done: { type: end }\n",
        &[],
    );
    let mut s = session(&lost, "", NO_REPLIES, &[]);
    s.run();
    let m = failure(&s);
    assert!(m.starts_with("Agent 'nobody' not found for agent node 'call': tried "), "{m}");
    assert!(m.contains("agents/nobody/graph.yaml") && m.contains("lost/agents/nobody/graph.yaml"), "{m}");
}

/// A rag node runs offline (keyword retrieval); its knowledge base goes to the cache folder,
/// not beside the agent (more in tests/rag.rs).
#[test]
fn rag_nodes_retrieve_offline() {
    crate::rag::cache();
    let g = agent(
        "name: r\nstart: look\nnodes:\n  look: { type: rag, documents: [./k], state_updates: {ctx: \"{{output.context}}\"}, next: done }\n  done: { type: end, output: \"{{ctx}}\" }\n",
        &[("k/a.md", "some text about kites"), ("k/b.md", "other notes on boats")],
    );
    let mut s = session(&g, "kites", NO_REPLIES, &[]);
    s.run();
    assert_eq!(completed(&s), json!("[Source: ./k/a.md]\nsome text about kites"));
    assert!(crate::rag::kb_file(g.parent().unwrap(), "look").is_file());
    assert!(!g.parent().unwrap().join("look.yaml").exists());
}

#[test]
fn validation_errors_refuse_to_start() {
    let g = agent("name: bad\nstart: nowhere\nnodes:\n  done: { type: end }\n", &[]);
    let doc = Arc::new(switchyard::doc::load_path(&g));
    let e = LokiMachine::new(doc, "", None).unwrap_err();
    assert!(e.starts_with("graph 'bad' has"), "{e}");
    assert!(e.contains("graph.yaml:2:"), "line:col listed: {e}");
    let not_loki = agent("agents: {}\n", &[]);
    let doc = Arc::new(switchyard::doc::load_path(&not_loki));
    assert!(LokiMachine::new(doc, "", None).is_err());
}

// ---------------------------------------------------------------------------------------------
// Session controls on a Loki graph
// ---------------------------------------------------------------------------------------------

const CHAIN: &str = r#"
name: chain
start: a
reducers: { log: append }
nodes:
  a: { type: script, script: a.sh, next: b }
  b: { type: script, script: b.sh, next: c }
  c: { type: llm, prompt: "sum up {{log}}", state_updates: { summary: "{{output}}" }, next: done }
  done: { type: end, output: "{{summary}} ({{count}})" }
"#;

fn chain() -> PathBuf {
    agent(
        CHAIN,
        &[("a.sh", "echo '{\"log\": \"a\", \"count\": 1}'\n"), ("b.sh", "echo '{\"log\": \"b\", \"count\": 2}'\n")],
    )
}

const CHAIN_REPLIES: &str = "replies:\n  - node: c\n    content: summary\n";

#[test]
fn breakpoint_with_template_condition_step_and_rewind() {
    let g = chain();
    let mut clean = session(&g, "", CHAIN_REPLIES, &[]);
    clean.run();
    let want_out = completed(&clean);
    let want_state = clean.state();
    assert_eq!(want_out, json!("summary (2)"));

    let mut o = options(CHAIN_REPLIES, &[]);
    // `{{flag}}` is missing: renders empty, so false; `{{count}}` is 1 when `b` is due.
    o.breakpoints = vec![Breakpoint::when("b", "{{flag}}"), Breakpoint::when("c", "{{count}}")];
    let mut s = RunSession::new(Box::new(machine(&g, "")), json!(""), o);
    assert_eq!(s.run(), &Status::Paused { reason: PauseReason::Breakpoint });
    assert_eq!(s.due(), ["c"]);
    assert_eq!(s.state()["log"], json!(["a", "b"]));
    // One step: `c` runs, then the session pauses before `done`.
    assert_eq!(s.step(), &Status::Paused { reason: PauseReason::Step });
    assert_eq!(s.due(), ["done"]);
    assert_eq!(s.state()["summary"], json!("summary"));
    s.run();
    assert_eq!(completed(&s), want_out);

    // Rewind to after `a` and re-run: same result (the scripted reply is given back).
    s.rewind(1).unwrap();
    assert_eq!(s.due(), ["b"]);
    assert_eq!(s.state()["log"], json!(["a"]));
    s.run(); // stops again at the breakpoint on c
    s.run();
    assert_eq!(completed(&s), want_out);
    assert_eq!(s.state(), want_state);
}

#[test]
fn state_edit_while_paused_and_bad_conditions() {
    let g = chain();
    let mut o = options(CHAIN_REPLIES, &[]);
    o.breakpoints = vec![Breakpoint::on("c")];
    let mut s = RunSession::new(Box::new(machine(&g, "")), json!(""), o);
    s.run();
    s.edit_state("count", json!(41)).unwrap();
    s.run();
    assert_eq!(completed(&s), json!("summary (41)"));
    let mut s = session(&g, "", CHAIN_REPLIES, &[]);
    let e = s.set_breakpoints(vec![Breakpoint::when("c", "{{count[x]}}")]).unwrap_err();
    assert!(e.contains("can never be found"), "{e}");
    assert!(s.set_breakpoints(vec![Breakpoint::when("c", "{{count}}")]).is_ok());
}

#[test]
fn narration_and_perf_summary_of_a_run() {
    let g = chain();
    let mut s = session(&g, "", CHAIN_REPLIES, &[]);
    s.run();
    completed(&s);
    let mut n = Narrator::new();
    let mut lines: Vec<String> = s.events().iter().flat_map(|e| n.feed(e)).collect();
    lines.extend(n.finish());
    assert_eq!(lines[0], "▸ run: t");
    assert!(lines.iter().any(|l| l.ends_with(" a (script) start")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains(" a (script) done in ") && l.ends_with(" -> b")), "{lines:?}");
    assert!(lines.last().unwrap().starts_with("▸ run done in "), "{lines:?}");
    let perf = perf_summary(&s.events());
    assert_eq!(perf.len(), 4, "{perf:?}");
    assert!(perf.iter().any(|l| l.starts_with("done: 1 visit(s), total ")), "{perf:?}");
}

// ---------------------------------------------------------------------------------------------
// Conformance corpus
// ---------------------------------------------------------------------------------------------

fn example_graph() -> String {
    let p = switchyard::testdata::conformance_dir().join("loki/v0.4.0/graph.example.yaml");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Stand-ins for the example's scripts and the sibling agent its agent node names.
fn example_agent(graph: &str) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/loki_runs/graph.example");
    let synth = std::fs::read_to_string(fixtures.join("synthesize.py")).unwrap();
    let retrieve = std::fs::read_to_string(fixtures.join("retrieve.sh")).unwrap();
    let root = agents_root();
    // The example's `mcp:ddg-search` server, defined where Loki looks (`<config>/functions/mcp.json`):
    // the test MCP server of tests/mcp.rs stands in for it.
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/stdio_server.py");
    let functions = root.parent().unwrap().join("functions");
    std::fs::create_dir_all(&functions).unwrap();
    let mcp = json!({"mcpServers": {"ddg-search": {"command": "python3", "args": [server.display().to_string()]}}});
    std::fs::write(functions.join("mcp.json"), mcp.to_string()).unwrap();
    write_agent(
        &root,
        "deep-research",
        "name: deep-research\nstart: work\nnodes:\n  work: { type: script, script: work.sh, next: done }\n  done: { type: end, output: \"{{report}}\" }\n",
        &[(
            "work.sh",
            "python3 -c 'import json,os; p=json.loads(os.environ[\"GRAPH_STATE\"])[\"initial_prompt\"]; print(json.dumps({\"report\": json.dumps({\"summary\": \"deep \" + p.splitlines()[0], \"findings\": [\"f1\"]})}))'\n",
        )],
    );
    write_agent(
        &root,
        "deep-research-example",
        graph,
        &[("scripts/synthesize.py", &synth), ("scripts/retrieve.sh", &retrieve), ("knowledge/a.md", "notes\n")],
    )
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/loki_runs/graph.example").join(name)).unwrap()
}

/// As shipped: the diamond's `retrieve` is a rag node whose documents (`./knowledge/` and a
/// URL) are not part of the corpus: the run stops there, naming the missing folder, before any
/// URL is fetched.
#[test]
fn conformance_graph_example_as_is_stops_at_rag() {
    let g = example_agent(&example_graph());
    // The stand-in folder is not there as shipped (and the URL is never reached in tests).
    std::fs::remove_dir_all(g.parent().unwrap().join("knowledge")).unwrap();
    let mut s = session(&g, "Research WebAssembly outside the browser", &fixture("replies.yaml"), &[]);
    s.run();
    let f = failure(&s);
    assert!(f.contains("rag node 'retrieve': document './knowledge/' not found"), "{f}");
    assert!(f.contains("remove it from `documents`"), "{f}");
    assert!(!g.parent().unwrap().join("retrieve.yaml").exists());
    assert_eq!(visited(&s.events()), ["triage", "retrieve", "web_search"]);
    let st = s.state();
    assert_eq!(st["topic"], json!("WebAssembly outside the browser"));
    assert_eq!(st["needs_deep_dive"], json!(false));
}

fn example_patched() -> String {
    let text = example_graph();
    let start = text.find("  retrieve:\n").unwrap();
    let end = text.find("  # --- llm node (parallel branch 2").unwrap();
    format!(
        "{}  retrieve:\n    id: retrieve\n    type: script\n    script: scripts/retrieve.sh\n    state_updates: {{}}\n    next: synthesize\n\n{}",
        &text[..start],
        &text[end..]
    )
}

/// With `retrieve` swapped for a script stand-in (in the copy), the whole graph runs: the
/// diamond joins through the reducers, `synthesize` routes by `_next` to the map, the approval
/// answer goes to `on_other`, the input takes its default.
#[test]
fn conformance_graph_example_full_run() {
    let patched = example_patched();
    let g = example_agent(&patched);
    let mut s = session(&g, "Research WebAssembly outside the browser", &fixture("replies.yaml"), &["needs more", ""]);
    s.run();
    let out = completed(&s);
    assert_eq!(
        visited(&s.events()),
        [
            "triage",
            "retrieve",
            "web_search",
            "synthesize",
            "subjects_map",
            "aggregate_subjects",
            "review",
            "refine",
            "finalize",
            "done"
        ]
    );
    let st = s.state();
    assert_eq!(st["context"], json!("local notes on WebAssembly outside the browser\nweb findings"));
    assert_eq!(st["sources"], json!(["knowledge/a.md", ["https://webassembly.org"]]));
    assert_eq!(st["decided_for"], json!("WebAssembly outside the browser"));
    assert_eq!(st["subject_findings"], json!(["subject report", "subject report"]));
    assert_eq!(st["research"], json!("combined report"));
    assert_eq!(st["decision"], json!("needs more"));
    assert_eq!(st["refinement"], json!("tighten the summary"));
    assert_eq!(st["status"], json!("completed"));
    assert_eq!(
        out,
        json!("[completed] FINAL REPORT\n\nSources: [\"knowledge/a.md\",[\"https://webassembly.org\"]]\n")
    );
    let r = routes(&s.events());
    assert!(r.contains(&("synthesize".into(), "subjects_map".into(), RouteReason::Next)));
    assert!(r.contains(&("review".into(), "refine".into(), RouteReason::OnOther)));
}

/// `agents/coder` (v0.4.0) with stand-in scripts: planner with schema auto-merge, `_next`
/// routing to the approval gate, an llm tool loop (tool calls answered with errors), a build
/// failure routed by `fallback` into the fix loop, and the loop back to `implement`.
#[test]
fn conformance_coder_agent_fix_loop() {
    let graph = switchyard::testdata::conformance_dir().join("loki/v0.4.0/agents/coder/graph.yaml");
    let text = std::fs::read_to_string(&graph).unwrap_or_else(|e| panic!("{}: {e}", graph.display()));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/loki_runs/coder");
    let scripts: Vec<(String, String)> = std::fs::read_dir(fixtures.join("scripts"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (format!("scripts/{}", p.file_name().unwrap().to_string_lossy()), std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    let files: Vec<(&str, &str)> = scripts.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let g = write_agent(&agents_root(), "coder", &text, &files);
    let replies = std::fs::read_to_string(fixtures.join("replies.yaml")).unwrap();
    let mut s = session(&g, "Add a greet command", &replies, &["yes"]);
    s.run();
    let out = completed(&s);
    assert_eq!(
        visited(&s.events()),
        [
            "resolve_paths",
            "analyze_request",
            "route_complexity",
            "gate_approval",
            "implement",
            "verify_build",
            "fix_loop_gate",
            "implement",
            "verify_build",
            "verify_tests",
            "end_success"
        ]
    );
    let st = s.state();
    assert_eq!(st["complexity_score"], json!(8));
    assert_eq!(st["files_to_create"], json!(["src/greet.rs"]));
    assert_eq!(st["fix_attempts"], json!(1));
    assert_eq!(st["last_node_output"], json!("Fixed the build."));
    assert_eq!(st["tests_output"], json!("2 passed"));
    assert_eq!(
        out,
        json!(
            "CODER_COMPLETE\nPlan: Add a greet command\nFiles modified: [\"src/main.rs\"]\nFiles created: [\"src/greet.rs\"]\nBuild: passed\nTests: passed\n"
        )
    );
    let r = routes(&s.events());
    assert!(r.contains(&("verify_build".into(), "fix_loop_gate".into(), RouteReason::Fallback)));
    assert!(r.contains(&("gate_approval".into(), "implement".into(), RouteReason::RouteOption { option: "yes".into() })));
    let tool_errors = s.events().iter().filter(|e| matches!(&e.body, EventBody::ToolResult { error: Some(_), .. })).count();
    assert_eq!(tool_errors, 1);
}

/// The example's other branch: `synthesize` routes to the agent node `deep_dive`, which runs the
/// sibling agent `deep-research` (a stand-in graph) as a nested run; its output goes through
/// the output_schema extraction and auto-merge.
#[test]
fn conformance_graph_example_agent_branch() {
    let g = example_agent(&example_patched());
    let mut s = session(&g, "Research WebAssembly in depth", &fixture("replies.yaml"), &["yes"]);
    s.run();
    let out = completed(&s);
    assert_eq!(
        visited(&s.events()),
        ["triage", "retrieve", "web_search", "synthesize", "deep_dive", "review", "finalize", "done"]
    );
    let st = s.state();
    assert_eq!(st["findings"], json!(["f1"]));
    assert_eq!(st["summary"], json!("deep Research WebAssembly outside the browser in depth. Existing context:"));
    assert_eq!(st["decision"], json!("yes"));
    assert!(out.as_str().unwrap().starts_with("[completed] FINAL REPORT"));
    let nested = format!("{}/deep_dive", s.events()[0].run);
    assert!(s.events().iter().any(|e| e.run == nested && matches!(e.body, EventBody::RunFinished { status: RunStatus::Completed, .. })));
}

/// Run-level failures, data-driven: (graph, scripts, answers, expected message).
#[test]
fn run_failures() {
    let cases: &[(&str, &[(&str, &str)], &[&str], &str)] = &[
        (
            "name: ends\nsettings: { validate_before_run: false }\nstart: s\nnodes:\n  s: { type: script, script: s.sh, next: [x, y] }\n  x: { type: end }\n  y: { type: end }\n",
            &[("s.sh", "echo '{}'\n")],
            &[],
            "super-step ended with multiple End targets (x, y). Fan-out branches must converge on a single node before ending.",
        ),
        (
            "name: empty\nsettings: { validate_before_run: false }\nstart: s\nnodes:\n  s: { type: script, script: s.sh, next: [] }\n  x: { type: end }\n",
            &[("s.sh", "echo '{}'\n")],
            &[],
            "Graph 'empty' frontier emptied without reaching an End node",
        ),
        (
            "name: lost\nstart: s\nnodes:\n  s: { type: script, script: s.sh, next: x }\n  x: { type: end }\n",
            &[("s.sh", "echo '{\"_next\": \"nowhere\"}'\n")],
            &[],
            "Node 'nowhere' not found in graph 'lost'",
        ),
        (
            "name: q\nstart: a\nnodes:\n  a: { type: approval, question: \"ok {{nope}}?\", options: [y], routes: { y: x }, on_other: x }\n  x: { type: end }\n",
            &[],
            &[],
            "Failed to interpolate approval question: Template interpolation failed: 'nope' not found in state",
        ),
        (
            "name: nonext\nsettings: { validate_before_run: false }\nstart: s\nnodes:\n  s: { type: script, script: s.sh }\n  x: { type: end }\n",
            &[("s.sh", "echo '{}'\n")],
            &[],
            "script node 's' has no `next` and is not an end node",
        ),
    ];
    for (graph, files, answers, want) in cases {
        let g = agent(graph, files);
        let mut s = session(&g, "", NO_REPLIES, answers);
        s.run();
        assert_eq!(failure(&s), *want, "{graph}");
    }
}

#[test]
fn fan_out_branches_run_in_parallel_and_questions_come_first() {
    let g = agent(
        r#"
name: par
# upstream's validator refuses input nodes in a fan-out (it cannot ask from a branch); this
# engine asks every question of a super-step before running it.
settings: { validate_before_run: false }
start: s
reducers: { done: append }
nodes:
  s: { type: script, script: s.sh, next: [a, b, q1, q2] }
  a: { type: script, script: nap.sh, state_updates: { done: a }, next: j }
  b: { type: script, script: nap.sh, state_updates: { done: b }, next: j }
  q1: { type: input, question: "first?", state_updates: { one: "{{input}}" }, next: j }
  q2: { type: input, question: "second?", state_updates: { two: "{{input}}" }, next: j }
  j: { type: end, output: "{{one}}{{two}} {{done}}" }
"#,
        // Each branch marks that it started and waits (up to 20 s) until both have: run one
        // after the other, the first would give up and fail. Proven by overlap, not by a
        // stopwatch, so a loaded machine cannot fail it.
        &[
            ("s.sh", "echo '{}'\n"),
            (
                "nap.sh",
                "d=$(dirname \"$0\")\ntouch \"$d/started.$$\"\nfor i in $(seq 200); do [ \"$(ls \"$d\" | grep -c '^started\\.')\" -ge 2 ] && break; sleep 0.1; done\n[ \"$(ls \"$d\" | grep -c '^started\\.')\" -ge 2 ] || { echo 'ran alone' >&2; exit 1; }\necho '{}'\n",
            ),
        ],
    );
    let mut s = session(&g, "", NO_REPLIES, &["1", "2"]);
    s.run();
    assert_eq!(completed(&s), json!(r#"12 ["a","b"]"#), "a and b ran at the same time");
    let asked: Vec<String> = s
        .events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::Interrupt { node, .. } => Some(node),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["q1", "q2"]);
    assert_eq!(visited(&s.events()), ["s", "a", "b", "q1", "q2", "j"]);
}

// ---------------------------------------------------------------------------------------------
// coyote 0.10.3 agent nodes: normal (config.yaml) children, retries, fallbacks, inputs, depth
// ---------------------------------------------------------------------------------------------

/// A normal agent (`config.yaml`) beside the graph: instructions with a variable, a `tools.sh`
/// tool, an `outline` tool it does not offer.
fn write_normal_agent(root: &Path) {
    let dir = root.join("writer");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.yaml"),
        "name: writer\ndescription: Writes\nversion: 1.0.0\ntemperature: 0.3\nvariables:\n  - name: tone\n    description: The tone\n    default: dry\n\
         instructions: |\n  You write in a {{tone}} tone. Unknown stays: {{nope}}.\nconversation_starters:\n  - Write\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tools.sh"),
        "#!/usr/bin/env bash\nset -e\n# @env LLM_OUTPUT=/dev/stdout\n\n# @cmd Count the words of a text\n# @option --text! The text\nword_count() {\n  echo \"words: $(echo \"$argc_text\" | wc -w | tr -d ' ')\" >> \"$LLM_OUTPUT\"\n}\n",
    )
    .unwrap();
}

fn nested_nodes(events: &[Event], run: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.run == run)
        .filter_map(|e| match &e.body {
            EventBody::NodeEnter { node, .. } => Some(node.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn agent_node_runs_a_normal_config_yaml_agent() {
    let root = agents_root();
    write_normal_agent(&root);
    let parent = write_agent(
        &root,
        "parent",
        r#"
name: parent
start: draft
initial_state: { topic: "kites" }
nodes:
  draft:
    type: agent
    agent: writer
    prompt: "Write about {{topic}}"
    output_schema: { type: object, properties: { title: { type: string } } }
    state_updates: { raw: "{{output}}" }
    next: done
  done: { type: end, output: "{{title}}" }
"#,
        &[],
    );
    // The first turn asks for its tool and for one it does not have; the second answers.
    let replies = r#"
replies:
  - node: writer
    content: "Counting first."
    tool_calls:
      - { id: c1, name: word_count, args: { text: "kites fly high" } }
      - { id: c2, name: outline, args: {} }
  - node: writer
    content: '{"title": "Kites, counted"}'
  # The output is every turn's text, not JSON alone: the extractor runs for the agent node.
  - node: draft
    content: '{"title": "Kites, counted"}'
"#;
    let mut s = session(&parent, "", replies, &[]);
    s.run();
    let events = s.events();
    assert_eq!(completed(&s), json!("Kites, counted"), "{}", dump(&s));
    let nested = format!("{}/draft", events[0].run);
    // One node named after the agent, one step per turn.
    assert_eq!(nested_nodes(&events, &nested), ["writer", "writer"]);
    let reqs: Vec<&Value> = events
        .iter()
        .filter(|e| e.run == nested)
        .filter_map(|e| match &e.body {
            EventBody::LlmRequest { messages, .. } => Some(messages),
            _ => None,
        })
        .collect();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0][0], json!({"role": "system", "content": "You write in a dry tone. Unknown stays: {{nope}}.\n"}));
    assert_eq!(reqs[0][1], json!({"role": "user", "content": "Write about kites"}));
    // The second request carries both tool results.
    let tool_msgs: Vec<&Value> = reqs[1].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_msgs[0]["content"], json!("words: 3"));
    assert!(tool_msgs[1]["content"].as_str().unwrap().starts_with("Error: tool 'outline' is not available to agent 'writer'"));
    // Every turn's text is the agent's output; the schema extracts from it.
    let exit = events
        .iter()
        .filter(|e| e.run == events[0].run)
        .find_map(|e| match &e.body {
            EventBody::NodeExit { node, update, .. } if node == "draft" => Some(update.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(exit["title"], json!("Kites, counted"));
    let finished = events.iter().find_map(|e| match &e.body {
        EventBody::RunFinished { output, state, .. } if e.run == nested => Some((output.clone(), state.clone())),
        _ => None,
    });
    let (output, state) = finished.unwrap();
    assert_eq!(output, json!("Counting first.\n{\"title\": \"Kites, counted\"}"));
    assert_eq!(state["turns"], json!(2));
}

#[test]
fn normal_agents_refuse_inputs_and_fail_like_agents() {
    let root = agents_root();
    write_normal_agent(&root);
    let with_inputs = write_agent(
        &root,
        "seeding",
        "name: seeding\nsettings: { validate_before_run: false }\nstart: call\nnodes:\n  call: { type: agent, agent: writer, prompt: hi, inputs: { tone: wet }, next: done }\n  done: { type: end }\n",
        &[],
    );
    let mut s = session(&with_inputs, "", NO_REPLIES, &[]);
    s.run();
    let m = failure(&s);
    assert!(m.contains("`inputs` only seed graph agents, and 'writer'") && m.contains("is a normal agent (config.yaml)"), "{m}");
    // A failing LLM call fails the child; a fallback takes it.
    let falls = write_agent(
        &root,
        "falls",
        "name: falls\nstart: call\nnodes:\n  call: { type: agent, agent: writer, prompt: hi, state_updates: { why: \"{{output}}\" }, fallback: done, next: done }\n  done: { type: end, output: \"{{why}}\" }\n",
        &[],
    );
    let mut s = session(&falls, "", "replies:\n  - node: writer\n    error: \"model refused\"\n", &[]);
    s.run();
    let out = completed(&s);
    assert!(
        out.as_str().unwrap().starts_with("Agent node failed: Agent 'writer' failed at node 'writer': LLM call failed: model refused"),
        "{out}"
    );
}

/// A child graph with one llm node and no fallback, so an LLM failure fails the child.
fn write_llm_child(root: &Path, name: &str) {
    write_agent(
        root,
        name,
        &format!("name: {name}\nstart: work\nnodes:\n  work: {{ type: llm, prompt: \"{{{{initial_prompt}}}}\", next: done }}\n  done: {{ type: end, output: \"{{{{said}}}}\" }}\n")
            .replace("next: done }", "state_updates: { said: \"{{output}}\" }, next: done }"),
        &[],
    );
}

fn llm_calls(s: &RunSession, node: &str) -> usize {
    s.events().iter().filter(|e| matches!(&e.body, EventBody::LlmRequest { node: n, .. } if n == node)).count()
}

#[test]
fn agent_max_attempts_retries_transient_failures_only() {
    let root = agents_root();
    write_llm_child(&root, "flaky");
    let parent = write_agent(
        &root,
        "parent",
        "name: parent\nstart: call\nnodes:\n  call: { type: agent, agent: flaky, prompt: hi, max_attempts: 3, state_updates: { got: \"{{output}}\" }, next: done }\n  done: { type: end, output: \"{{got}}\" }\n",
        &[],
    );
    // A transient failure (429) is tried again, each attempt a fresh child run.
    let mut s = session(&parent, "", "replies:\n  - node: work\n    error: \"429 rate limit\"\n  - node: work\n    content: ok\n", &[]);
    s.run();
    assert_eq!(completed(&s), json!("ok"));
    assert_eq!(llm_calls(&s, "work"), 2);
    let logs: Vec<String> = s
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Log { source, text } if source == "agent:call" => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(logs.len(), 1);
    assert!(logs[0].starts_with("attempt 1 of 3 failed with a transient error, trying again: "), "{logs:?}");
    // Any other failure ends at once, whatever max_attempts says.
    let mut s = session(&parent, "", "replies:\n  - node: work\n    error: \"model refused\"\n  - node: work\n    content: never\n", &[]);
    s.run();
    assert!(failure(&s).contains("model refused"), "{}", failure(&s));
    assert_eq!(llm_calls(&s, "work"), 1);
    // Three transient failures use up three attempts.
    let mut s = session(&parent, "", "replies:\n  - { node: work, error: \"429 rate limit\" }\n  - { node: work, error: \"429 rate limit\" }\n  - { node: work, error: \"429 rate limit\" }\n", &[]);
    s.run();
    failure(&s);
    assert_eq!(llm_calls(&s, "work"), 3);
}

#[test]
fn agent_fallback_routes_with_the_failure_text() {
    let root = agents_root();
    write_llm_child(&root, "dies");
    let parent = write_agent(
        &root,
        "parent",
        "name: parent\nstart: call\nnodes:\n  call: { type: agent, agent: dies, prompt: hi, state_updates: { why: \"{{output}}\" }, fallback: rescue, next: done }\n  rescue: { type: end, output: \"rescued: {{why}}\" }\n  done: { type: end, output: fine }\n",
        &[],
    );
    let mut s = session(&parent, "", "replies:\n  - node: work\n    error: \"model refused\"\n", &[]);
    s.run();
    let out = completed(&s);
    assert!(out.as_str().unwrap().starts_with("rescued: Agent node failed: Agent 'dies' failed at node 'work': "), "{out}");
    assert!(routes(&s.events()).iter().any(|(f, t, r)| f == "call" && t == "rescue" && *r == RouteReason::Fallback));
    // Without a failure the static next is taken.
    let mut s = session(&parent, "", "replies:\n  - node: work\n    content: ok\n", &[]);
    s.run();
    assert_eq!(completed(&s), json!("fine"));
}

#[test]
fn agent_inputs_seed_the_child_state_with_json_types() {
    let root = agents_root();
    write_agent(
        &root,
        "child",
        "name: child\nstart: show\ninitial_state: { colors: [], label: none }\nnodes:\n  show: { type: script, script: show.py, next: done }\n  done: { type: end, output: \"{{shown}}\" }\n",
        &[("show.py", "import json, os\ns = json.loads(os.environ['GRAPH_STATE'])\nprint(json.dumps({'shown': f\"{type(s['colors']).__name__}:{len(s['colors'])} {s['label']} {s['initial_prompt']}\"}))\n")],
    );
    let parent = write_agent(
        &root,
        "parent",
        "name: parent\nstart: call\ninitial_state: { picked: [red, blue] }\nnodes:\n  call: { type: agent, agent: child, prompt: go, inputs: { colors: \"{{picked}}\", label: \"n={{picked}}\" }, state_updates: { got: \"{{output}}\" }, next: done }\n  done: { type: end, output: \"{{got}}\" }\n",
        &[],
    );
    let mut s = session(&parent, "", NO_REPLIES, &[]);
    s.run();
    // A lone `{{key}}` keeps the list; other text becomes a string; the prompt stays the prompt.
    assert_eq!(completed(&s), json!("list:2 n=[\"red\",\"blue\"] go"));
}

#[test]
fn agent_depth_is_checked_by_the_spawner() {
    let root = agents_root();
    write_agent(&root, "leaf", "name: leaf\nstart: done\nnodes:\n  done: { type: end, output: leaf }\n", &[]);
    // `middle` runs at depth 1 and may start children up to depth 1 only.
    write_agent(
        &root,
        "middle",
        "name: middle\nmax_agent_depth: 1\nstart: call\nnodes:\n  call: { type: agent, agent: leaf, prompt: hi, state_updates: { got: \"{{output}}\" }, next: done }\n  done: { type: end, output: \"{{got}}\" }\n",
        &[],
    );
    let top = write_agent(
        &root,
        "top",
        "name: top\nstart: call\nnodes:\n  call: { type: agent, agent: middle, prompt: hi, state_updates: { got: \"{{output}}\" }, next: done }\n  done: { type: end, output: \"{{got}}\" }\n",
        &[],
    );
    let mut s = session(&top, "", NO_REPLIES, &[]);
    s.run();
    let m = failure(&s);
    assert!(
        m.contains("Max agent depth exceeded: agent node 'call' would start 'leaf' at depth 2 (max_agent_depth=1)"),
        "{m}"
    );
    // With room for it (the default, 3), the same chain completes.
    let middle = root.join("middle/graph.yaml");
    std::fs::write(&middle, std::fs::read_to_string(&middle).unwrap().replace("max_agent_depth: 1\n", "")).unwrap();
    let mut s = session(&top, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(completed(&s), json!("leaf"));
}

#[test]
fn mcp_tools_allow_lists_filter_the_offered_tools() {
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/stdio_server.py");
    let mcp = json!({"mcpServers": {"calc": {"command": "python3", "args": [server.display().to_string()]}}}).to_string();
    // The graph allows add and e*; the node narrows it to e* (every layer naming the server must match).
    let g = agent(
        "name: m\nmcp_servers: [calc]\nmcp_tools: { calc: [add, \"e*\"] }\nstart: a\nnodes:\n  a: { type: llm, prompt: hi, tools: [\"mcp:calc\"], state_updates: { x: \"{{output}}\" }, next: b }\n  b: { type: llm, prompt: hi, tools: [\"mcp:calc\"], mcp_tools: { calc: [\"e*\"] }, state_updates: { y: \"{{output}}\" }, next: done }\n  done: { type: end, output: \"{{x}} {{y}}\" }\n",
        &[("mcp.json", &mcp)],
    );
    let mut s = session(&g, "", "replies:\n  - { node: a, content: A }\n  - { node: b, content: B }\n", &[]);
    s.run();
    assert_eq!(completed(&s), json!("A B"));
    let offered = |node: &str| -> Vec<String> {
        s.events()
            .iter()
            .find_map(|e| match &e.body {
                EventBody::LlmRequest { node: n, tools, .. } if n == node => {
                    Some(tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect())
                }
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(offered("a"), ["add", "echo", "env"]);
    assert_eq!(offered("b"), ["echo", "env"]);
}

#[test]
fn map_max_concurrency_template_resolves_against_the_state() {
    let graph = |cap: &str| {
        format!(
            "name: mc\nstart: m\ninitial_state: {{ items: [a, b, c], cap: {cap} }}\nnodes:\n  m: {{ type: map, over: \"{{{{items}}}}\", as: it, branch: up, collect_into: out, output_key: r, max_concurrency: \"{{{{cap}}}}\", next: done }}\n  up: {{ type: script, script: up.py }}\n  done: {{ type: end, output: \"{{{{out}}}}\" }}\n"
        )
    };
    let up = "import json, os\ns = json.loads(os.environ['GRAPH_STATE'])\nprint(json.dumps({'r': s['it'].upper()}))\n";
    let g = agent(&graph("2"), &[("up.py", up)]);
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    assert_eq!(completed(&s), json!("[\"A\",\"B\",\"C\"]"));
    // A value that is not a positive whole number fails the map, naming it.
    let g = agent(&graph("lots"), &[("up.py", up)]);
    let mut s = session(&g, "", NO_REPLIES, &[]);
    s.run();
    let m = failure(&s);
    assert!(m.starts_with("map node 'm': ") && m.contains("lots"), "{m}");
}
