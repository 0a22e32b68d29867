//! The run session API on sherma agents: continue, step, pause, stop, breakpoints (plain and
//! conditional), break-on-error, interrupts and answers, state edits, checkpoints and rewind;
//! plus node semantics and routing rules that need no Python.

use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use switchyard::doc::load_str;
use switchyard::run::events::{EventBody, PauseReason, RouteReason, RunStatus};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{Breakpoint, RunOptions, RunSession, Status};
use switchyard::run::sherma::{ShermaMachine, ShermaOptions};
use test_support::TempDir;
use test_support::run::{finished, nodes_of, scripted};

const COUNTER: &str = r#"
manifest_version: 1
agents:
  counter:
    state:
      fields:
        - name: count
          type: int
          default: 0
        - name: log
          type: str
    graph:
      entry_point: inc
      nodes:
        - name: inc
          type: set_state
          args:
            values:
              count: "state.count + 1"
        - name: note
          type: data_transform
          args:
            expression: '{"log": state.log + string(state.count) + ";"}'
      edges:
        - source: inc
          target: note
        - source: note
          branches:
            - condition: "state.count < 5"
              target: inc
          default: __end__
"#;

fn session_with(yaml: &str, input: Value, options: RunOptions) -> RunSession {
    let doc = Arc::new(load_str(Path::new("/virtual/agent.yaml"), yaml));
    let m = ShermaMachine::new(doc, None, input, ShermaOptions { retry_delay_scale: 0.0, ..Default::default() })
        .unwrap_or_else(|e| panic!("machine: {e}"));
    RunSession::new(Box::new(m), Value::Null, options)
}

fn visited(s: &RunSession) -> Vec<String> {
    nodes_of(&s.events(), s.id())
}

fn session(yaml: &str) -> RunSession {
    session_with(yaml, Value::Null, RunOptions::new(Box::new(NoProvider)))
}

#[test]
fn a_loop_runs_to_the_end_with_branch_and_default_routes() {
    let mut s = session(COUNTER);
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);
    assert_eq!(s.state()["count"], json!(5));
    assert_eq!(s.state()["log"], json!("1;2;3;4;5;"));
    assert_eq!(visited(&s).len(), 10);
    let routes: Vec<(String, RouteReason)> = s
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Route { to, reason, .. } => Some((to.clone(), reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(routes[0], ("note".into(), RouteReason::Static));
    assert_eq!(routes[1], ("inc".into(), RouteReason::Branch { index: 0, condition: "state.count < 5".into() }));
    assert_eq!(routes.last().unwrap(), &("__end__".into(), RouteReason::Default));
    // node_exit carries the delta only.
    let first_exit = s.events().into_iter().find_map(|e| match e.body {
        EventBody::NodeExit { update, .. } => Some(update),
        _ => None,
    });
    assert_eq!(first_exit, Some(json!({"count": 1})));
}

#[test]
fn step_runs_one_node_at_a_time() {
    let mut s = session(COUNTER);
    assert_eq!(s.step(), &Status::Paused { reason: PauseReason::Step });
    assert_eq!(visited(&s), vec!["inc"]);
    assert_eq!(s.due(), vec!["note"]);
    assert_eq!(s.state()["count"], json!(1));
    s.step();
    s.step();
    assert_eq!(visited(&s), vec!["inc", "note", "inc"]);
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);
}

#[test]
fn breakpoints_stop_before_the_node_and_conditions_are_cel() {
    let mut s = session(COUNTER);
    s.set_breakpoints(vec![Breakpoint::when("note", "state.count == 3")]).unwrap();
    assert_eq!(s.run(), &Status::Paused { reason: PauseReason::Breakpoint });
    assert_eq!(s.due(), vec!["note"]);
    assert_eq!(s.state()["count"], json!(3));
    assert_eq!(s.state()["log"], json!("1;2;"), "paused before `note` ran");
    // Continuing does not stop at the same place again; the condition is false afterwards.
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);

    let mut s = session(COUNTER);
    s.set_breakpoints(vec![Breakpoint::on("inc")]).unwrap();
    s.run();
    assert_eq!(s.state()["count"], json!(0));
    s.run();
    assert_eq!(s.state()["count"], json!(1), "stops at every visit");
    // A condition that does not compile is refused when set.
    let err = s.set_breakpoints(vec![Breakpoint::when("inc", "state.count ==")]).unwrap_err();
    assert!(err.contains("breakpoint on `inc`"), "{err}");
}

#[test]
fn a_breakpoint_condition_that_fails_at_run_time_pauses_with_an_error() {
    let mut s = session(COUNTER);
    s.set_breakpoints(vec![Breakpoint::when("note", "state.nope.deeper > 1")]).unwrap();
    assert_eq!(s.run(), &Status::Paused { reason: PauseReason::Breakpoint });
    let err = s.events().into_iter().find_map(|e| match e.body {
        EventBody::Error { message, .. } => Some(message),
        _ => None,
    });
    assert!(err.unwrap().contains("breakpoint condition `state.nope.deeper > 1` on `note` failed"));
}

#[test]
fn pause_and_stop_handles_work_between_steps() {
    let mut s = session(COUNTER);
    s.pause_handle().store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(s.run(), &Status::Paused { reason: PauseReason::Requested });
    assert!(visited(&s).is_empty());
    s.step();
    s.stop_handle().store(true, std::sync::atomic::Ordering::Relaxed);
    s.run();
    assert_eq!(finished(&s), RunStatus::Stopped);
    let last = s.events().pop().unwrap();
    assert!(matches!(last.body, EventBody::RunFinished { status: RunStatus::Stopped, .. }));
}

#[test]
fn edit_state_while_paused_changes_the_rest_of_the_run() {
    let mut s = session(COUNTER);
    s.step();
    s.edit_state("count", json!(4)).unwrap();
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);
    assert_eq!(s.state()["log"], json!("4;5;"));
    assert!(s.events().iter().any(|e| matches!(&e.body, EventBody::StateEdited { key, .. } if key == "count")));
    assert!(s.edit_state("count", json!(1)).is_err(), "finished runs cannot be edited");
}

#[test]
fn checkpoints_are_kept_per_step_and_rewind_forks() {
    let mut s = session(COUNTER);
    s.run();
    let cps = s.checkpoints();
    assert_eq!(cps.len(), 11, "initial + one per step");
    assert_eq!(cps[3].nodes, vec!["inc"]);
    assert_eq!(s.state_at(3).unwrap()["count"], json!(2));
    assert_eq!(s.state_at(4).unwrap()["log"], json!("1;2;"));
    // Rewind to after step 4 and change the past.
    s.rewind(4).unwrap();
    assert_eq!(s.status(), &Status::Paused { reason: PauseReason::Requested });
    assert_eq!(s.state()["count"], json!(2));
    assert_eq!(s.checkpoints().len(), 5);
    s.edit_state("log", json!("X;")).unwrap();
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);
    assert_eq!(s.state()["log"], json!("X;3;4;5;"));
    assert!(s.rewind(99).unwrap_err().contains("no checkpoint after step 99"));
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn checkpoints_share_state_instead_of_copying_it() {
    // 2,000 steps, a checkpoint after each, over a state holding a 4 MiB value that no node
    // changes: deep copies would need 8 GiB; shared values need almost nothing.
    let yaml = r#"
manifest_version: 1
agents:
  big:
    langgraph_config:
      recursion_limit: 5000
    state:
      fields:
        - name: count
          type: int
        - name: blob
          type: str
    graph:
      entry_point: inc
      nodes:
        - name: inc
          type: set_state
          args:
            values:
              count: "state.count + 1"
      edges:
        - source: inc
          branches:
            - condition: "state.count < 2000"
              target: inc
          default: __end__
"#;
    let big = "x".repeat(4 << 20);
    let mut opts = RunOptions::new(Box::new(NoProvider));
    opts.keep_events = false;
    let mut s = session_with(yaml, json!({"blob": big}), opts);
    let before = rss_kib();
    s.run();
    let after = rss_kib();
    assert_eq!(finished(&s), RunStatus::Completed);
    assert_eq!(s.checkpoints().len(), 2001);
    assert_eq!(s.state_at(1500).unwrap()["count"], json!(1500));
    assert!(after.saturating_sub(before) < 512 * 1024, "RSS grew by {} KiB", after - before);
}

#[test]
fn recursion_limit_stops_runaway_loops_with_a_clear_error() {
    let yaml = COUNTER.replace("state.count < 5", "true");
    let mut s = session(&yaml);
    s.run();
    assert_eq!(finished(&s), RunStatus::Failed);
    let (node, msg) = s.failure().unwrap().clone();
    assert!(node.is_some());
    assert!(msg.contains("recursion limit of 25"), "{msg}");
    assert_eq!(visited(&s).len(), 25);
}

#[test]
fn break_on_error_pauses_before_failing() {
    let yaml = COUNTER.replace("state.count + 1", "state.count + 1.5");
    let mut s = session(&yaml);
    s.set_break_on_error(true);
    assert_eq!(s.run(), &Status::Paused { reason: PauseReason::Error });
    s.run();
    assert_eq!(finished(&s), RunStatus::Failed);
    let (node, msg) = s.failure().unwrap().clone();
    assert_eq!(node.as_deref(), Some("inc"));
    assert!(msg.contains("set_state node `inc`, value `count`"), "{msg}");
}

const ASK: &str = r#"
manifest_version: 1
agents:
  ask:
    state:
      fields:
        - name: messages
          type: list
        - name: rounds
          type: int
    graph:
      entry_point: question
      nodes:
        - name: question
          type: interrupt
          args:
            value: '{"q": "Proceed?", "round": state.rounds}'
        - name: bump
          type: set_state
          args:
            values:
              rounds: "state.rounds + 1"
      edges:
        - source: question
          target: bump
        - source: bump
          branches:
            - condition: 'state.messages[size(state.messages) - 1].content == "again"'
              target: question
          default: __end__
"#;

#[test]
fn interrupts_wait_for_answers_and_queued_answers_are_used_first() {
    let mut s = session(ASK);
    let Status::Interrupted { pending } = s.run().clone() else { panic!("{:?}", s.status()) };
    assert_eq!(pending.node, "question");
    assert_eq!(pending.value, json!({"q": "Proceed?", "round": 0}));
    assert!(pending.prompt.contains("Proceed?"));
    assert!(s.answer("wrong-id", json!("x")).is_err());
    s.answer(&pending.id, json!("again")).unwrap();
    s.queue_answers([json!({"content": "stop", "additional_kwargs": {"who": "me"}})]);
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);
    assert_eq!(s.state()["rounds"], json!(2));
    let msgs = s.state()["messages"].as_array().unwrap().clone();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["type"], json!("human"));
    assert_eq!(msgs[1]["additional_kwargs"], json!({"who": "me"}), "structured answers keep their fields");
    let kinds: Vec<&str> = s.events().iter().map(|e| e.kind()).filter(|k| *k == "interrupt").collect();
    assert_eq!(kinds.len(), 2);
}

#[test]
fn an_unanswered_interrupt_can_end_the_run_as_interrupted() {
    let mut s = session(ASK);
    s.run();
    s.give_up_interrupted();
    assert_eq!(finished(&s), RunStatus::Interrupted);
}

const LLM: &str = r#"
manifest_version: 1
llms:
  - id: m
    provider: openai
    model_name: test
prompts:
  - id: sys
    instructions: "Be brief."
agents:
  chat:
    state:
      fields:
        - name: messages
          type: list
        - name: last
          type: str
    graph:
      entry_point: talk
      nodes:
        - name: talk
          type: call_llm
          args:
            llm: { id: m }
            prompt:
              - role: system
                content: 'prompts["sys"]["instructions"] + " Model: " + llms["m"]["model_name"]'
              - role: messages
                content: state.messages
            state_updates:
              messages: "[llm_response]"
              last: "llm_response.content"
          on_error:
            retry:
              max_attempts: 3
              strategy: exponential
              delay: 1.0
            fallback: sorry
        - name: sorry
          type: set_state
          args:
            values:
              last: '"failed: " + state.__sherma__.last_error.message'
      edges:
        - source: talk
          target: __end__
"#;

#[test]
fn call_llm_builds_the_prompt_and_applies_state_updates() {
    let doc = Arc::new(load_str(Path::new("/virtual/agent.yaml"), LLM));
    let m = ShermaMachine::new(doc, None, json!("hello"), ShermaOptions { retry_delay_scale: 0.0, ..Default::default() }).unwrap();
    let mut s = RunSession::new(Box::new(m), Value::Null, RunOptions::new(scripted("replies:\n  - content: hi there\n")));
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);
    assert_eq!(s.state()["last"], json!("hi there"));
    let req = s.events().into_iter().find_map(|e| match e.body {
        EventBody::LlmRequest { messages, .. } => Some(messages),
        _ => None,
    });
    let req = req.unwrap();
    assert_eq!(req[0]["role"], json!("system"));
    assert_eq!(req[1]["role"], json!("user"));
    assert_eq!(req[0]["content"], json!("Be brief. Model: test"));
    assert_eq!(req[1]["content"], json!("hello"));
    assert_eq!(s.events().last().map(|e| e.kind()), Some("run_finished"));
    match s.status() {
        Status::Finished { output, .. } => assert_eq!(output, &json!("hi there")),
        _ => unreachable!(),
    }
}

#[test]
fn retries_then_falls_back_with_the_last_error() {
    let doc = Arc::new(load_str(Path::new("/virtual/agent.yaml"), LLM));
    let m = ShermaMachine::new(doc, None, json!("hello"), ShermaOptions { retry_delay_scale: 0.0, ..Default::default() }).unwrap();
    let replies = "replies:\n  - error: 503 overloaded\n  - error: 503 overloaded\n  - error: 503 still overloaded\n  - content: never\n";
    let mut s = RunSession::new(Box::new(m), Value::Null, RunOptions::new(scripted(replies)));
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);
    assert_eq!(visited(&s), vec!["talk", "sorry"]);
    let internal = &s.state()["__sherma__"];
    assert_eq!(internal["last_error"]["node"], json!("talk"));
    assert_eq!(internal["last_error"]["attempt"], json!(3));
    assert!(internal.get("error_fallback").is_none(), "cleared when the fallback branch fired");
    // The error's own text, as upstream records `str(exception)`; our context is in the events.
    assert_eq!(s.state()["last"], json!("failed: 503 still overloaded"));
    assert!(s.events().iter().any(|e| matches!(&e.body, EventBody::Error { message, .. }
        if message.starts_with("LLM call failed: 503 still overloaded (scripted error, "))));
    let retries = s.events().iter().filter(|e| matches!(&e.body, EventBody::Error { message, .. } if message.contains("retrying"))).count();
    assert_eq!(retries, 2);
    let route = s.events().into_iter().find_map(|e| match e.body {
        EventBody::Route { to, reason, .. } if to == "sorry" => Some(reason),
        _ => None,
    });
    assert_eq!(route, Some(RouteReason::Branch { index: 0, condition: "has_error_fallback".into() }));
}

#[test]
fn running_out_of_scripted_replies_names_the_node() {
    let yaml = LLM.replace("            fallback: sorry\n", "");
    let doc = Arc::new(load_str(Path::new("/virtual/agent.yaml"), &yaml));
    let m = ShermaMachine::new(doc, None, json!("hello"), ShermaOptions { retry_delay_scale: 0.0, ..Default::default() }).unwrap();
    let mut s = RunSession::new(Box::new(m), Value::Null, RunOptions::new(scripted("replies:\n  - node: other\n    content: x\n")));
    s.run();
    assert_eq!(finished(&s), RunStatus::Failed);
    let (node, msg) = s.failure().unwrap().clone();
    assert_eq!(node.as_deref(), Some("talk"));
    assert!(msg.contains("no reply left for node `talk`"), "{msg}");
}

#[test]
fn rewind_gives_scripted_replies_back() {
    let doc = Arc::new(load_str(Path::new("/virtual/agent.yaml"), LLM));
    let m = ShermaMachine::new(doc, None, json!("hello"), ShermaOptions::default()).unwrap();
    let mut s = RunSession::new(Box::new(m), Value::Null, RunOptions::new(scripted("replies:\n  - content: first\n")));
    s.run();
    assert_eq!(s.state()["last"], json!("first"));
    s.rewind(0).unwrap();
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed);
    assert_eq!(s.state()["last"], json!("first"), "the reply is available again after the rewind");
}

#[test]
fn bad_cel_on_an_edge_fails_the_run_naming_the_edge() {
    let yaml = COUNTER.replace("state.count < 5", "state.count < 'five'");
    let mut s = session(&yaml);
    s.run();
    assert_eq!(finished(&s), RunStatus::Failed);
    let errors: Vec<String> = s
        .events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::Error { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert!(errors.iter().any(|m| m.contains("edge from `note`, branch 1")), "{errors:?}");
}

#[test]
fn unknown_agent_and_non_sherma_files_are_refused_clearly() {
    let doc = Arc::new(load_str(Path::new("/virtual/agent.yaml"), COUNTER));
    let e = ShermaMachine::new(doc, Some("nope"), Value::Null, ShermaOptions::default()).err().unwrap();
    assert!(e.contains("no agent `nope`") && e.contains("counter"), "{e}");
    let doc = Arc::new(load_str(Path::new("/virtual/graph.yaml"), "version: \"1.0\"\nname: x\nstart: a\nnodes:\n  a: {type: end}\n"));
    let e = ShermaMachine::new(doc, None, Value::Null, ShermaOptions::default()).err().unwrap();
    assert!(e.contains("not a sherma agent file"), "{e}");
}

/// `split` fans out to `left` and `right` (two static edges), which meet at `join`.
const FAN_OUT: &str = r#"
manifest_version: 1
agents:
  fan:
    state:
      fields:
        - name: messages
          type: list
        - name: n
          type: int
          default: 1
        - name: left
          type: str
        - name: right
          type: str
        - name: seen
          type: str
    graph:
      entry_point: split
      nodes:
        - name: split
          type: set_state
          args:
            values:
              n: "10"
        - name: left
          type: set_state
          args:
            values:
              left: "'left saw n=' + string(state.n) + ', right=' + state.right"
              n: "state.n + 1"
        - name: right
          type: data_transform
          args:
            expression: '{"right": "right saw n=" + string(state.n) + ", left=" + state.left, "messages": [{"type": "human", "content": "from right"}]}'
        - name: join
          type: set_state
          args:
            values:
              seen: "state.left + ' | ' + state.right + ' | n=' + string(state.n)"
      edges:
        - source: split
          target: left
        - source: split
          target: right
        - source: left
          target: join
        - source: right
          target: join
        - source: join
          target: __end__
"#;

#[test]
fn a_fan_out_runs_its_nodes_on_the_same_state_and_joins_once() {
    let mut s = session(FAN_OUT);
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed, "{:?}", s.failure());
    // `join` is reached from both and runs once, after both.
    assert_eq!(visited(&s), ["split", "left", "right", "join"]);
    let st = s.state();
    // Each parallel node saw the state after `split`, not the other's update (LangGraph's
    // super-step), and `join` sees both updates.
    assert_eq!(st["left"], json!("left saw n=10, right="));
    assert_eq!(st["right"], json!("right saw n=10, left="));
    assert_eq!(
        st["seen"],
        json!("left saw n=10, right= | right saw n=10, left= | n=11")
    );
    assert_eq!(st["messages"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_fan_out_routes_each_node_on_its_own_update() {
    // `right` routes on `state.left`, which only `left` sets: in a super-step it does not see it.
    let yaml = FAN_OUT.replace(
        "        - source: right\n          target: join\n",
        "        - source: right\n          branches:\n            - condition: \"state.left != ''\"\n              target: __end__\n          default: join\n",
    );
    let mut s = session(&yaml);
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed, "{:?}", s.failure());
    let routes: Vec<(String, String, RouteReason)> = s
        .events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::Route { from, to, reason } if from == "right" => Some((from, to, reason)),
            _ => None,
        })
        .collect();
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0].1, "join", "{routes:?}");
    assert_eq!(routes[0].2, RouteReason::Default);
}

#[test]
fn two_parallel_nodes_setting_one_field_fail_as_in_langgraph() {
    let yaml = FAN_OUT.replace(
        r#"{"right": "right saw n=" + string(state.n) + ", left=" + state.left,"#,
        r#"{"n": 99, "right": "r","#,
    );
    let mut s = session(&yaml);
    s.run();
    assert_eq!(finished(&s), RunStatus::Failed);
    let (node, message) = s.failure().cloned().expect("a failure");
    assert_eq!(node.as_deref(), Some("right"));
    assert!(
        message.contains("`left` and `right` both set `n` in the same super-step"),
        "{message}"
    );
    assert!(message.contains("InvalidUpdateError"), "{message}");
}

#[test]
fn a_fan_out_paused_midway_keeps_its_shared_state_across_rewind_and_edits() {
    let mut s = session(FAN_OUT);
    s.step(); // split
    s.step(); // left
    assert_eq!(s.state()["left"], json!("left saw n=10, right="));
    // An edit while paused mid-wave reaches the node still to run in it.
    s.edit_state("left", json!("edited")).unwrap();
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed, "{:?}", s.failure());
    assert_eq!(s.state()["right"], json!("right saw n=10, left=edited"));
    // A fork from step 1 (after `split`) runs the whole wave again on its shared state.
    s.rewind(1).unwrap();
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed, "{:?}", s.failure());
    assert_eq!(s.state()["right"], json!("right saw n=10, left="));
    assert_eq!(s.state()["n"], json!(11));
    // A fork from step 2 of this run (after `left`) runs `right` on the wave's state.
    s.rewind(2).unwrap();
    s.run();
    assert_eq!(s.state()["right"], json!("right saw n=10, left="));
    assert_eq!(s.state()["left"], json!("left saw n=10, right="));
}

#[test]
fn a_sherma_sub_agent_can_be_stepped_into_through_the_nested_gate() {
    use std::sync::mpsc;
    use switchyard::run::nested::{NestedControl, NestedGate};
    let dir = TempDir::new("session-nested");
    std::fs::write(
        dir.join("boss.yaml"),
        "manifest_version: 1\nsub_agents:\n  - {id: helper, version: \"1.0.0\", yaml_path: helper.yaml}\nagents:\n  boss:\n    state:\n      fields:\n        - {name: messages, type: list, default: []}\n    graph:\n      entry_point: delegate\n      nodes:\n        - name: delegate\n          type: call_agent\n          args: {agent: {id: helper, version: \"1.0.0\"}, input: '\"do it\"'}\n      edges:\n        - {source: delegate, target: __end__}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("helper.yaml"),
        "manifest_version: 1\nagents:\n  helper:\n    state:\n      fields:\n        - {name: messages, type: list, default: []}\n        - {name: n, type: int, default: 0}\n    graph:\n      entry_point: one\n      nodes:\n        - {name: one, type: set_state, args: {values: {n: \"state.n + 1\"}}}\n        - {name: two, type: data_transform, args: {expression: '{\"messages\": [{\"type\": \"ai\", \"content\": \"n is \" + string(state.n)}]}'}}\n      edges:\n        - {source: one, target: two}\n        - {source: two, target: __end__}\n",
    )
    .unwrap();
    let doc = Arc::new(switchyard::doc::load_path(&dir.join("boss.yaml")));
    let gate = Arc::new(NestedGate::new());
    let (tx, rx) = mpsc::channel::<switchyard::run::events::Event>();
    let tx = std::sync::Mutex::new(tx);
    let mut opts = RunOptions::new(Box::new(NoProvider));
    opts.gate = Some(gate.clone());
    opts.listener = Some(Arc::new(move |e: &switchyard::run::events::Event| {
        let _ = tx.lock().unwrap().send(e.clone());
    }));
    let m = ShermaMachine::new(doc, None, Value::Null, ShermaOptions::default()).unwrap();
    let mut s = RunSession::new(Box::new(m), Value::Null, opts);
    gate.set_pause_at(u32::MAX);
    let user = {
        let gate = gate.clone();
        std::thread::spawn(move || {
            let mut pauses = Vec::new();
            for ev in rx.iter() {
                if let EventBody::NestedPaused { due, state, agent, depth, .. } = &ev.body {
                    pauses.push((ev.run.clone(), due.clone(), state["n"].clone(), agent.clone(), *depth));
                    if pauses.len() == 1 {
                        // Change the sub-agent's state, then step over its first node.
                        assert_eq!(gate.edit("n", json!(40), std::time::Duration::from_secs(5)), Some(Ok(())));
                    } else if pauses.len() == 2 {
                        assert!(gate.command(NestedControl::Step));
                    } else {
                        assert!(gate.command(NestedControl::StepOut));
                    }
                }
                if matches!(ev.body, EventBody::RunFinished { .. }) && !ev.run.contains('/') {
                    break;
                }
            }
            pauses
        })
    };
    s.step();
    s.run();
    assert_eq!(finished(&s), RunStatus::Completed, "{:?}", s.failure());
    let pauses = user.join().unwrap();
    assert_eq!(pauses.len(), 3, "{pauses:?}");
    assert!(pauses[0].0.ends_with("/delegate"), "{pauses:?}");
    assert_eq!((pauses[0].1.clone(), pauses[0].3.clone(), pauses[0].4), (vec!["one".to_string()], "helper".to_string(), 1));
    // The edit shows at once; the step ran `one` on the edited value.
    assert_eq!(pauses[1].2, json!(40));
    assert_eq!((pauses[2].1.clone(), pauses[2].2.clone()), (vec!["two".to_string()], json!(41)));
    let last = s.state()["messages"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(last["content"], json!("n is 41"), "the parent got the sub-agent's answer: {last}");
}
