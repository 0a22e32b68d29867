//! Traces of real runs (small agents driven step by step through a `RunSession`, with state
//! edits and rewinds) read back: every state the trace gives must be the session's own
//! checkpoint at that step.

use super::*;
use crate::RunRequest;
use model::doc::{load_path, load_str};
use runtime::provider::NoProvider;
use runtime::session::{RunOptions, RunSession, Status};
use serde_json::json;
use std::path::PathBuf;
use test_support::TempDir;

fn run(doc: &Arc<Document>, input: &str, break_on_error: bool) -> RunSession {
    let req = RunRequest { input: Some(input.into()), ..RunRequest::default() };
    let mut opts = RunOptions::new(Box::new(NoProvider));
    opts.break_on_error = break_on_error;
    crate::session(doc.clone(), &req, opts).unwrap_or_else(|e| panic!("{e}"))
}

/// Every checkpoint the session still holds is what the trace gives for that step (and for the
/// step before, as `prev`), with no warning.
fn assert_checkpoints(s: &RunSession, doc: Option<&Document>) {
    let events = s.events();
    let steps: Vec<u64> = s.checkpoints().iter().map(|c| c.step).collect();
    assert!(!steps.is_empty());
    for &step in &steps {
        let got = state_at(&events, step, doc);
        assert_eq!(got.state, s.state_at(step).unwrap(), "state at step {step}");
        if step > 0 && steps.contains(&(step - 1)) {
            assert_eq!(got.prev, s.state_at(step - 1), "prev at step {step}");
        }
        assert_eq!(got.prev.is_none(), step == 0);
        assert_eq!(got.warning, None, "step {step}");
    }
}

fn contents(state: &Value) -> Vec<String> {
    state["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap_or("").to_string()).collect()
}

const SHERMA: &str = r#"manifest_version: 1
llms:
  - id: gpt
    model_name: gpt-4o-mini
agents:
  a:
    state:
      fields:
        - name: messages
          type: list
        - name: n
          type: int
        - name: note
          type: str
          default: start
    graph:
      entry_point: first
      nodes:
        - name: first
          type: set_state
          args:
            values:
              n: "1"
              messages: '[{"id": "m1", "type": "ai", "content": "draft"}]'
        - name: second
          type: set_state
          args:
            values:
              n: "state.n + 1"
              messages: '[{"id": "m1", "type": "ai", "content": "final"}, {"type": "ai", "content": "more"}]'
        - name: ask
          type: call_llm
          args:
            llm: {id: gpt}
            prompt:
              - role: messages
                content: state.messages
            state_updates:
              messages: "[llm_response]"
          on_error:
            fallback: recover
        - name: recover
          type: set_state
          args:
            values:
              n: "state.n + 100"
      edges:
        - {source: first, target: second}
        - {source: second, target: ask}
        - {source: ask, target: __end__}
        - {source: recover, target: __end__}
"#;

#[test]
fn sherma_messages_replace_by_id_edits_and_rewinds() {
    let dir = TempDir::new("trace-sherma");
    let doc = Arc::new(load_str(&dir.join("agent.yaml"), SHERMA));
    let mut s = run(&doc, "hello", false);
    s.step();
    s.step();
    // Step 2 replaced the message with id m1 and appended one: the engine's reducer, not a copy.
    let at2 = state_at(&s.events(), 2, None);
    assert_eq!(contents(&at2.state), ["hello", "final", "more"]);
    assert_eq!(contents(at2.prev.as_ref().unwrap()), ["hello", "draft"]);
    assert_eq!((at2.state["n"].clone(), at2.state["note"].clone()), (json!(2), json!("start")));
    assert_checkpoints(&s, None);
    // Edits while paused after step 2 belong to step 2 (a `messages` edit replaces the list).
    s.edit_state("n", json!(42)).unwrap();
    s.edit_state("messages", json!([{"id": "e1", "type": "human", "content": "edited"}])).unwrap();
    assert_checkpoints(&s, None);
    assert_eq!(contents(&state_at(&s.events(), 2, None).state), ["edited"]);
    assert_eq!(state_at(&s.events(), 1, None).state["n"], json!(1));
    // The model call fails (no provider): the fallback records the error and routing clears
    // `error_fallback`, which no node update shows.
    let st = s.run().clone();
    assert!(matches!(st, Status::Finished { .. }), "{st:?}");
    let before_rewind: Vec<(u64, Value)> = s.checkpoints().iter().map(|c| (c.step, s.state_at(c.step).unwrap())).collect();
    assert_eq!(before_rewind.len(), 5, "{before_rewind:?}");
    let internal = &before_rewind[3].1["__sherma__"];
    assert!(internal.get("last_error").is_some() && internal.get("error_fallback").is_none(), "{internal}");
    assert_eq!(before_rewind[4].1["n"], json!(142));
    let events = s.events();
    let n_before = events.len();
    for (step, want) in &before_rewind {
        // Rebuilt for the steps before the end, the recorded final state for the last.
        assert_eq!(&state_at(&events, *step, None).state, want, "step {step}");
    }
    assert_checkpoints(&s, None);
    // A rewind forks: what came after step 1 is dropped, the fork's edits and steps count.
    s.rewind(1).unwrap();
    s.edit_state("note", json!("forked")).unwrap();
    s.step();
    assert_checkpoints(&s, None);
    let fork2 = state_at(&s.events(), 2, None).state;
    assert_eq!((fork2["n"].clone(), fork2["note"].clone()), (json!(2), json!("forked")));
    assert_eq!(contents(&fork2), ["hello", "final", "more"]);
    s.run();
    assert_checkpoints(&s, None);
    // The run before the rewind is still there in the trace's first lines.
    let trace = Trace::from_events(s.events());
    for (step, want) in &before_rewind {
        assert_eq!(&trace.state_at(Some(n_before), *step, None).state, want, "before the rewind, step {step}");
    }
}

#[test]
fn sherma_traces_without_a_recorded_initial_state_use_the_agents_defaults() {
    let dir = TempDir::new("trace-legacy");
    let doc = Arc::new(load_str(&dir.join("agent.yaml"), SHERMA));
    let mut s = run(&doc, "hello", false);
    s.step();
    s.step();
    let mut events = s.events();
    for e in &mut events {
        if let EventBody::RunStarted { state, .. } = &mut e.body {
            *state = Value::Null;
        }
    }
    for step in 0..=2 {
        let got = state_at(&events, step, Some(&doc));
        assert_eq!(got.state, s.state_at(step).unwrap(), "step {step}");
        assert_eq!(got.warning, None);
    }
    // Without the file the declared defaults are unknown, and the answer says so.
    let got = state_at(&events, 0, None);
    assert_eq!(contents(&got.state), ["hello"]);
    assert!(got.state.get("note").is_none());
    assert!(got.warning.unwrap().contains("declared defaults"));
}

/// A Loki graph in a folder of its own (a temp dir, kept), with shell scripts.
fn loki_agent(name: &str, graph: &str, scripts: &[(&str, &str)]) -> PathBuf {
    let dir = TempDir::new(&format!("trace-{name}")).sub(name).keep();
    for (file, text) in scripts {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let g = dir.join("graph.yaml");
    std::fs::write(&g, graph).unwrap();
    g
}

const FAN: &str = r#"name: fan
start: s0
reducers: { items: append, n: sum }
initial_state: { items: [], n: 10 }
nodes:
  s0: { type: script, script: s0.sh, next: [a, b] }
  a: { type: script, script: a.sh, state_updates: {}, next: j }
  b: { type: script, script: b.sh, state_updates: {}, next: j }
  j: { type: script, script: j.sh, next: done }
  done: { type: end, output: "{{items}} {{n}}" }
"#;

fn fan_scripts(b: &str) -> Vec<(&'static str, String)> {
    vec![
        ("s0.sh", "echo '{\"started\": true}'\n".to_string()),
        ("a.sh", "echo '{\"items\": \"A\", \"n\": 1}'\n".to_string()),
        ("b.sh", b.to_string()),
        ("j.sh", "echo '{\"joined\": true}'\n".to_string()),
    ]
}

fn fan(name: &str, b: &str) -> (PathBuf, Arc<Document>) {
    let scripts = fan_scripts(b);
    let refs: Vec<(&str, &str)> = scripts.iter().map(|(f, t)| (*f, t.as_str())).collect();
    let g = loki_agent(name, FAN, &refs);
    let doc = Arc::new(load_path(&g));
    (g, doc)
}

#[test]
fn loki_fan_out_merges_both_branches_through_the_graphs_reducers() {
    let (_, doc) = fan("fan", "echo '{\"items\": \"B\"}'\n");
    let mut s = run(&doc, "go", false);
    s.step();
    s.step();
    // The two branches of step 2 each appended to `items`: the state holds both.
    let at2 = state_at(&s.events(), 2, Some(&doc));
    assert_eq!(at2.state["items"], json!(["A", "B"]));
    assert_eq!(at2.state["n"], json!(11));
    assert_eq!(at2.prev.as_ref().unwrap()["items"], json!([]));
    assert_eq!(at2.warning, None);
    assert_checkpoints(&s, Some(&doc));
    // Without the graph its reducers are unknown: the answer is the last write, and says so.
    let blind = state_at(&s.events(), 2, None);
    assert_ne!(blind.state["items"], json!(["A", "B"]));
    assert!(blind.warning.as_deref().unwrap().contains("`reducers` are unknown (no agent file was given"), "{blind:?}");
    // Edits and a rewind, then the end.
    s.edit_state("note", json!("edited at 2")).unwrap();
    s.step();
    assert_checkpoints(&s, Some(&doc));
    let n_before = s.events().len();
    let at3 = s.state_at(3).unwrap();
    s.rewind(1).unwrap();
    s.edit_state("n", json!(100)).unwrap();
    s.run();
    assert!(matches!(s.status(), Status::Finished { .. }));
    assert_checkpoints(&s, Some(&doc));
    assert_eq!(s.state_at(2).unwrap()["n"], json!(101));
    let trace = Trace::from_events(s.events());
    assert_eq!(trace.state_at(Some(n_before), 3, Some(&doc)).state, at3);
    // The final step is the recorded state, with or without the file.
    let last = s.steps();
    assert_eq!(state_at(&s.events(), last, None).state, s.state());
}

#[test]
fn loki_agent_files_that_do_not_fit_the_trace_are_not_used_and_a_changed_one_is_noticed() {
    let (g, doc) = fan("fit", "echo '{\"items\": \"B\"}'\n");
    let mut s = run(&doc, "go", false);
    s.run();
    let events = s.events();
    // Another graph (a node of the trace is missing): its reducers are not used.
    let other = load_str(&g, &FAN.replace("  j: {", "  k: {").replace("next: j", "next: k"));
    let got = state_at(&events, 2, Some(&other));
    let w = got.warning.unwrap();
    assert!(w.contains("does not fit the trace: node `j` of the trace is not in"), "{w}");
    // The same nodes with other reducers: the rebuilt states miss the recorded end, which is said.
    let changed = load_str(&g, &FAN.replace("n: sum", "n: max"));
    let got = state_at(&events, 2, Some(&changed));
    assert_eq!(got.state["n"], json!(10));
    let w = got.warning.unwrap();
    assert!(w.contains("do not end in the state the run finished with (`n` differs)") && w.contains("may have changed"), "{w}");
    // The right file: no warning.
    assert_eq!(state_at(&events, 2, Some(&doc)).warning, None);
}

#[test]
fn loki_a_failed_branch_merges_nothing_of_its_step() {
    let (_, doc) = fan("fail", "echo boom >&2\nexit 3\n");
    let mut s = run(&doc, "go", true);
    s.run();
    // Break on error: paused after the failed step 2, whose branch `a` had exited.
    assert!(matches!(s.status(), Status::Paused { .. }), "{:?}", s.status());
    let events = s.events();
    assert!(events.iter().any(|e| matches!(&e.body, EventBody::NodeExit { node, step: 2, .. } if node == "a")));
    let at2 = state_at(&events, 2, Some(&doc));
    assert_eq!(at2.state, s.state());
    assert_eq!(at2.state["items"], json!([]));
    // An edit now is made after the failed step: not part of step 1.
    s.edit_state("fixed", json!(true)).unwrap();
    assert_eq!(state_at(&s.events(), 1, Some(&doc)).state, s.state_at(1).unwrap());
    assert_eq!(state_at(&s.events(), 2, Some(&doc)).state, s.state());
    s.run();
    assert!(matches!(s.status(), Status::Finished { .. }));
    assert_checkpoints(&s, Some(&doc));
}

#[test]
fn a_trace_file_is_read_back_with_unknown_lines_skipped_and_said() {
    let (_, doc) = fan("file", "echo '{\"items\": \"B\"}'\n");
    let mut s = run(&doc, "go", false);
    s.step();
    s.step();
    let dir = TempDir::new("trace-file-trace");
    let path = dir.join("fan-r1.jsonl");
    let mut text: String = s.events().iter().map(|e| e.to_json_line() + "\n").collect();
    text.push_str("{\"event\":\"from_the_future\",\"run\":\"x\",\"ts_ms\":1}\n");
    std::fs::write(&path, text).unwrap();
    let trace = Trace::read(&path).unwrap();
    assert_eq!(trace.len(), s.events().len() + 1);
    let got = trace.state_at(None, 2, Some(&doc));
    assert_eq!(got.state, s.state_at(2).unwrap());
    assert_eq!(got.warning.as_deref(), Some("1 line of the trace is not an event this version reads and was skipped."));
    // Only the lines the caller had: the unknown one is not among them.
    assert_eq!(trace.state_at(Some(s.events().len()), 2, Some(&doc)).warning, None);
    assert!(Trace::read(&dir.join("missing.jsonl")).unwrap_err().contains("cannot read the trace"));
}

#[test]
fn sherma_an_edit_while_a_question_waits_belongs_to_the_step_before_it() {
    let yaml = r#"manifest_version: 1
agents:
  q:
    state:
      fields:
        - name: messages
          type: list
        - name: n
          type: int
    graph:
      entry_point: first
      nodes:
        - name: first
          type: set_state
          args:
            values:
              n: "1"
        - name: ask
          type: interrupt
          args:
            value: '"name?"'
        - name: after
          type: set_state
          args:
            values:
              n: "state.n + 10"
      edges:
        - {source: first, target: ask}
        - {source: ask, target: after}
        - {source: after, target: __end__}
"#;
    let dir = TempDir::new("trace-interrupt");
    let doc = Arc::new(load_str(&dir.join("q.yaml"), yaml));
    let mut s = run(&doc, "hi", false);
    s.run();
    // The interrupt node entered step 2 and asked: the session is back at step 1.
    let Status::Interrupted { pending } = s.status().clone() else { panic!("{:?}", s.status()) };
    assert_eq!(s.steps(), 1);
    s.edit_state("n", json!(5)).unwrap();
    assert_checkpoints(&s, None);
    assert_eq!(state_at(&s.events(), 1, None).state["n"], json!(5));
    s.answer(&pending.id, json!("Ada")).unwrap();
    s.run();
    assert!(matches!(s.status(), Status::Finished { .. }), "{:?}", s.status());
    assert_checkpoints(&s, None);
    let at2 = state_at(&s.events(), 2, None).state;
    assert_eq!(contents(&at2), ["hi", "Ada"]);
    assert_eq!(state_at(&s.events(), 3, None).state["n"], json!(15));
}

#[test]
fn lllm_call_loop_states_are_rebuilt_from_the_trace() {
    // Two parse failures (two forked dialogs) then success: every step's state comes back.
    let dir = model::testdata::workspace_root().join("tests/lllm_runs/parse_retry");
    let doc = Arc::new(load_path(&dir.join("config.yaml")));
    let req = RunRequest { agent: Some("answerer".into()), input: Some("Capital of France?".into()), ..RunRequest::default() };
    let mut s = crate::start(doc.clone(), &req, RunOptions::new(Box::new(NoProvider))).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    assert!(matches!(s.status(), Status::Finished { .. }), "{:?}", s.status());
    assert_checkpoints(&s, Some(&doc));
    let last = state_at(&s.events(), s.checkpoints().last().unwrap().step, Some(&doc));
    assert_eq!(last.state["dialogs"].as_array().unwrap().len(), 3);
    assert_eq!(last.state["active_dialog"], "main");
}
