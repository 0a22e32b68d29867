//! The threaded run driver the desktop debugger uses: batches, status changes, controls from
//! another thread (pause latency), requests served while running, answers, state edits,
//! rewind, restart, traces.

use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use switchyard::doc::load_str;
use switchyard::run::driver::{Batch, Control, Driver, DriverOptions, StatusInfo, read_trace, wait_for};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{Breakpoint, RunOptions, RunSession};
use switchyard::run::sherma::{ShermaMachine, ShermaOptions};
use test_support::TempDir;

/// Counts to `limit` (a loop of two nodes), so a run has `2 * limit` steps.
fn counter(limit: u64) -> String {
    format!(
        r#"
manifest_version: 1
agents:
  counter:
    langgraph_config: {{recursion_limit: 100000000}}
    state:
      fields:
        - {{name: count, type: int, default: 0}}
        - {{name: mode, type: str, default: "a"}}
    graph:
      entry_point: inc
      nodes:
        - name: inc
          type: set_state
          args: {{values: {{count: "state.count + 1"}}}}
        - name: check
          type: data_transform
          args: {{expression: '{{"mode": state.mode}}'}}
        - name: ask
          type: interrupt
          args: {{value: '"continue?"'}}
      edges:
        - {{source: inc, target: check}}
        - source: check
          branches:
            - {{condition: 'state.mode == "ask"', target: ask}}
            - {{condition: "state.count < {limit}", target: inc}}
          default: __end__
        - {{source: ask, target: inc}}
"#
    )
}

struct Seen {
    batches: Mutex<Vec<Batch>>,
}

impl Seen {
    fn statuses(&self) -> Vec<StatusInfo> {
        self.batches.lock().unwrap().iter().filter_map(|b| b.status.clone()).collect()
    }
    fn last(&self) -> Option<StatusInfo> {
        self.statuses().last().cloned()
    }
    fn events(&self) -> Vec<Value> {
        self.batches.lock().unwrap().iter().flat_map(|b| b.events.clone()).collect()
    }
    fn kinds(&self, kind: &str) -> usize {
        self.events().iter().filter(|e| e["event"] == kind).count()
    }
}

fn drive(yaml: &str, start: Option<Control>, bps: Vec<Breakpoint>, trace: Option<std::path::PathBuf>) -> (Driver, Arc<Seen>) {
    drive_with(yaml, bps, DriverOptions { start, trace, ..Default::default() })
}

fn drive_with(yaml: &str, bps: Vec<Breakpoint>, driver: DriverOptions) -> (Driver, Arc<Seen>) {
    let seen = Arc::new(Seen { batches: Mutex::new(Vec::new()) });
    let s2 = seen.clone();
    let doc = Arc::new(load_str(Path::new("/virtual/agent.yaml"), yaml));
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.breakpoints = bps;
    let d = Driver::start(
        move |opts| {
            let m = ShermaMachine::new(doc, None, Value::Null, ShermaOptions::default())?;
            Ok(RunSession::new(Box::new(m), Value::Null, opts))
        },
        options,
        driver,
        Arc::new(move |b| s2.batches.lock().unwrap().push(b)),
    )
    .expect("driver");
    (d, seen)
}

fn wait_state(seen: &Seen, state: &str) -> StatusInfo {
    assert!(
        wait_for(Duration::from_secs(20), || seen.last().is_some_and(|s| s.state == state)),
        "never reached {state}; last status {:?}",
        seen.last()
    );
    seen.last().unwrap()
}

#[test]
fn runs_to_the_end_and_sends_events_in_order() {
    let (_d, seen) = drive(&counter(3), Some(Control::Continue), vec![], None);
    let st = wait_state(&seen, "finished");
    assert_eq!(st.status, Some(switchyard::run::events::RunStatus::Completed));
    assert_eq!(st.step, 6);
    assert!(wait_for(Duration::from_secs(2), || seen.kinds("run_finished") == 1));
    let events = seen.events();
    assert_eq!(events[0]["event"], "run_started");
    assert_eq!(events.last().unwrap()["event"], "run_finished");
    assert_eq!(seen.kinds("node_enter"), 6);
    // The status went through running before finishing.
    assert!(seen.statuses().iter().any(|s| s.state == "running"));
}

#[test]
fn breakpoint_then_step_then_continue() {
    let (d, seen) = drive(&counter(3), Some(Control::Continue), vec![Breakpoint::on("check")], None);
    let st = wait_state(&seen, "paused");
    assert_eq!(st.reason, Some(switchyard::run::events::PauseReason::Breakpoint));
    assert_eq!(st.due, vec!["check".to_string()]);
    assert_eq!(st.step, 1);
    d.control(Control::Step);
    assert!(wait_for(Duration::from_secs(5), || seen.last().is_some_and(|s| s.step == 2)));
    assert_eq!(seen.last().unwrap().reason, Some(switchyard::run::events::PauseReason::Step));
    // State requests are served while paused.
    assert_eq!(d.state_at(1).unwrap()["count"], json!(1));
    assert_eq!(d.state_at(0).unwrap()["count"], json!(0));
    assert!(d.state_at(99).unwrap_err().contains("no state is kept for step 99"));
    d.set_breakpoints(vec![], false).unwrap();
    d.control(Control::Continue);
    let st = wait_state(&seen, "finished");
    assert_eq!(st.step, 6);
}

#[test]
fn bad_breakpoint_condition_is_refused_with_the_node_named() {
    let (d, seen) = drive(&counter(2), None, vec![], None);
    wait_state(&seen, "ready");
    let e = d.set_breakpoints(vec![Breakpoint::when("inc", "state.count ==")], false).unwrap_err();
    assert!(e.contains("breakpoint on `inc`"), "{e}");
}

#[test]
fn conditional_breakpoint_stops_on_the_third_iteration() {
    let (d, seen) = drive(&counter(5), Some(Control::Continue), vec![Breakpoint::when("inc", "state.count == 2")], None);
    let st = wait_state(&seen, "paused");
    assert_eq!(st.due, vec!["inc".to_string()]);
    assert_eq!(d.state_at(st.step).unwrap()["count"], json!(2));
    assert_eq!(st.step, 4, "two iterations of inc+check ran before the third");
}

#[test]
fn edit_state_while_paused_changes_the_route_and_answers_resume() {
    let (d, seen) = drive(&counter(3), Some(Control::Continue), vec![Breakpoint::on("check")], None);
    wait_state(&seen, "paused");
    d.edit_state("mode", json!("ask")).unwrap();
    d.set_breakpoints(vec![], false).unwrap();
    d.control(Control::Continue);
    let st = wait_state(&seen, "interrupted");
    let pending = st.pending.expect("pending");
    assert_eq!(pending.node, "ask");
    assert!(seen.events().iter().any(|e| e["event"] == "route" && e["to"] == "ask"));
    assert!(d.answer("nope", json!("x")).unwrap_err().contains("waiting for"));
    d.edit_state("mode", json!("a")).unwrap();
    d.answer(&pending.id, json!("yes")).unwrap();
    let st = wait_state(&seen, "finished");
    assert_eq!(st.status, Some(switchyard::run::events::RunStatus::Completed));
    assert!(seen.kinds("state_edited") == 2);
}

#[test]
fn edits_are_refused_while_running_and_rewind_forks() {
    let (d, seen) = drive(&counter(3), Some(Control::Step), vec![], None);
    wait_state(&seen, "paused");
    d.control(Control::Step);
    d.control(Control::Step);
    assert!(wait_for(Duration::from_secs(5), || seen.last().is_some_and(|s| s.step == 3 && s.state == "paused")));
    d.rewind(1).unwrap();
    let st = seen.last().unwrap();
    assert_eq!((st.state.as_str(), st.step), ("paused", 1));
    assert!(seen.events().iter().any(|e| e["event"] == "rewound" && e["step"] == 1));
    d.control(Control::Continue);
    let st = wait_state(&seen, "finished");
    assert_eq!(st.step, 6);
    assert!(d.rewind(50).unwrap_err().contains("no checkpoint after step 50"));
    d.control(Control::Restart);
    assert!(wait_for(Duration::from_secs(5), || seen.kinds("run_finished") == 2));
    assert!(seen.events().iter().any(|e| e["event"] == "rewound" && e["step"] == 0));
}

#[test]
fn pause_from_another_thread_stops_a_long_run_quickly_and_batches_stay_few() {
    let (d, seen) = drive(&counter(1_000_000), Some(Control::Continue), vec![], None);
    assert!(wait_for(Duration::from_secs(10), || seen.events().len() > 3_000), "run did not get going");
    let t0 = Instant::now();
    d.control(Control::Pause);
    let st = wait_state(&seen, "paused");
    let latency = t0.elapsed();
    assert_eq!(st.reason, Some(switchyard::run::events::PauseReason::Requested));
    assert!(latency < Duration::from_millis(500), "pause took {latency:?}");
    // Requests are served between slices while running, too.
    d.control(Control::Continue);
    assert!(wait_for(Duration::from_secs(5), || seen.last().is_some_and(|s| s.state == "running")));
    let t1 = Instant::now();
    let state = d.state_at(0).unwrap();
    assert_eq!(state["count"], json!(0));
    assert!(t1.elapsed() < Duration::from_secs(1));
    let steps = seen.kinds("node_enter");
    let batches = seen.batches.lock().unwrap().len();
    assert!(batches * 20 < steps, "{batches} batches for {steps} steps: events are not batched");
    d.control(Control::Stop);
    let st = wait_state(&seen, "finished");
    assert_eq!(st.status, Some(switchyard::run::events::RunStatus::Stopped));
}

/// The highest step any event sent so far names.
fn top_step(seen: &Seen) -> u64 {
    seen.events().iter().filter_map(|e| e["step"].as_u64()).max().unwrap_or(0)
}

#[test]
fn flow_control_holds_a_run_back_while_the_window_has_not_folded_its_events() {
    // A window of 300 events that never stalls within the test; 1 ms slices, so the worker
    // looks at the window often.
    let options = DriverOptions {
        start: Some(Control::Continue),
        window: Some(300),
        stall: Duration::from_secs(600),
        slice: Duration::from_millis(1),
        ..Default::default()
    };
    let (d, seen) = drive_with(&counter(100_000_000), vec![], options);
    assert!(wait_for(Duration::from_secs(20), || seen.events().len() >= 300), "the first events never came");
    // Nothing acknowledged: once the window is full the run makes no progress.
    assert!(wait_for(Duration::from_secs(20), || {
        let before = top_step(&seen);
        std::thread::sleep(Duration::from_millis(300));
        top_step(&seen) == before
    }));
    let held = seen.events().len();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(seen.events().len(), held, "events kept coming while the window was full");
    assert_eq!(seen.last().map(|s| s.state), Some("running".to_string()));
    // Acknowledging what was sent lets it go on.
    let step = top_step(&seen);
    d.ack(held as u64);
    assert!(wait_for(Duration::from_secs(20), || top_step(&seen) > step), "acknowledged events did not let the run go on");
    // A pause acts at once while the run is held back.
    d.control(Control::Pause);
    let st = wait_state(&seen, "paused");
    assert!(st.step > 0);
}

#[test]
fn a_window_that_stops_acknowledging_does_not_stop_the_run() {
    let options = DriverOptions {
        start: Some(Control::Continue),
        window: Some(100),
        stall: Duration::from_millis(200),
        ..Default::default()
    };
    let (_d, seen) = drive_with(&counter(2000), vec![], options);
    let st = wait_state(&seen, "finished");
    assert_eq!(st.step, 4000);
    assert!(wait_for(Duration::from_secs(5), || seen.kinds("run_finished") == 1));
    assert_eq!(seen.kinds("node_enter"), 4000);
}

#[test]
fn trace_is_written_and_read_back() {
    let dir = TempDir::new("driver");
    let path = dir.join("counter-run.jsonl");
    let (d, seen) = drive(&counter(2), Some(Control::Continue), vec![], Some(path.clone()));
    wait_state(&seen, "finished");
    drop(d);
    let events = read_trace(&path).unwrap();
    assert_eq!(events.len(), seen.events().len());
    assert_eq!(events.first().unwrap()["event"], "run_started");
    assert_eq!(events.last().unwrap()["event"], "run_finished");
    std::fs::write(dir.join("bad.jsonl"), "{\"event\":\"run_started\"}\nnot json\n").unwrap();
    let e = read_trace(&dir.join("bad.jsonl")).unwrap_err();
    assert!(e.contains("bad.jsonl:2:"), "{e}");
}

#[test]
fn dropping_the_driver_stops_the_run() {
    let (d, seen) = drive(&counter(10_000_000), Some(Control::Continue), vec![], None);
    assert!(wait_for(Duration::from_secs(10), || seen.kinds("node_enter") > 100));
    let t0 = Instant::now();
    drop(d);
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_eq!(seen.last().unwrap().status, Some(switchyard::run::events::RunStatus::Stopped));
}

#[test]
fn what_the_debugger_is_sent_shows_no_secret() {
    // A key the provider configuration resolved (registered), put into the state by the run.
    let secret = "sk-driver-secret-0123456789";
    switchyard::secrets::register("OPENAI_API_KEY", secret);
    let yaml = format!(
        r#"
manifest_version: 1
agents:
  leak:
    state:
      fields:
        - {{name: key, type: str, default: ""}}
    graph:
      entry_point: put
      nodes:
        - name: put
          type: set_state
          args: {{values: {{key: '"the key is {secret}"'}}}}
        - name: ask
          type: interrupt
          args: {{value: 'state.key'}}
      edges:
        - {{source: put, target: ask}}
        - {{source: ask, target: __end__}}
"#
    );
    let (d, seen) = drive(&yaml, Some(Control::Continue), vec![], None);
    let st = wait_state(&seen, "interrupted");
    let shown = "the key is [redacted:OPENAI_API_KEY]";
    assert_eq!(st.pending.as_ref().map(|p| p.prompt.as_str()), Some(shown));
    assert_eq!(d.state_at(1).unwrap()["key"], shown);
    assert_eq!(d.status().unwrap().pending.unwrap().prompt, shown);
    let events = serde_json::to_string(&seen.events()).unwrap();
    assert!(!events.contains(secret) && events.contains("[redacted:OPENAI_API_KEY]"), "{events}");
}

/// A Loki parent whose `call` node runs the agent `child` (two script nodes, then an end) as a
/// nested run; `tail` runs after it. Returns the parent's graph.yaml.
fn nested_agents(tag: &str) -> std::path::PathBuf {
    let root = TempDir::new(&format!("driver-nested-{tag}")).sub("agents").keep();
    let files: [(&str, &str, Vec<(&str, &str)>); 2] = [
        (
            "parent",
            "version: \"1.0\"\nname: parent\nstart: call\nnodes:\n  call: { type: agent, agent: child, prompt: hi, next: tail, state_updates: { result: \"{{output}}\" } }\n  tail: { type: end, output: \"parent done\" }\n",
            vec![],
        ),
        (
            "child",
            "version: \"1.0\"\nname: child\nstart: a\nnodes:\n  a: { type: script, script: a.sh, next: b }\n  b: { type: script, script: b.sh, next: done }\n  done: { type: end, output: \"child {{a}} {{b}} {{note}}\" }\n",
            vec![("a.sh", "echo '{\"a\": 1}'\n"), ("b.sh", "echo '{\"b\": 2}'\n")],
        ),
    ];
    for (name, graph, scripts) in files {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("graph.yaml"), graph).unwrap();
        for (f, t) in scripts {
            std::fs::write(d.join(f), t).unwrap();
        }
    }
    root.join("parent/graph.yaml")
}

fn drive_path(path: &Path, start: Option<Control>) -> (Driver, Arc<Seen>) {
    let seen = Arc::new(Seen { batches: Mutex::new(Vec::new()) });
    let s2 = seen.clone();
    let doc = Arc::new(switchyard::doc::load_path(path));
    let d = Driver::start(
        move |opts| switchyard::run::launch::session(doc, &switchyard::run::launch::RunRequest::default(), opts),
        RunOptions::new(Box::new(NoProvider)),
        DriverOptions { start, ..Default::default() },
        Arc::new(move |b| s2.batches.lock().unwrap().push(b)),
    )
    .expect("driver");
    (d, seen)
}

/// The `nested_paused` events so far.
fn nested_pauses(seen: &Seen) -> Vec<Value> {
    seen.events().into_iter().filter(|e| e["event"] == "nested_paused").collect()
}

fn wait_nested_pauses(seen: &Seen, n: usize) -> Value {
    assert!(
        wait_for(Duration::from_secs(20), || nested_pauses(seen).len() >= n),
        "no nested pause #{n}; events: {:?}",
        seen.events().iter().map(|e| e["event"].clone()).collect::<Vec<_>>()
    );
    nested_pauses(seen)[n - 1].clone()
}

#[test]
fn step_into_a_nested_run_step_edit_and_step_out() {
    let path = nested_agents("into");
    let (d, seen) = drive_path(&path, None);
    wait_state(&seen, "ready");
    d.control(Control::StepInto);
    // Paused before the nested run's first node, with its state, agent and file.
    let p = wait_nested_pauses(&seen, 1);
    assert!(p["run"].as_str().unwrap().ends_with("/call"), "{p}");
    assert_eq!(p["node"], "call");
    assert_eq!(p["due"], json!(["a"]));
    assert_eq!(p["step"], 0);
    assert_eq!(p["depth"], 1);
    assert_eq!(p["agent"], "child");
    assert!(p["file"].as_str().unwrap().ends_with("child/graph.yaml"), "{p}");
    assert!(d.nested_pause().is_some());
    // The window was told the run is running (its worker is inside the parent's step).
    assert_eq!(seen.last().unwrap().state, "running");
    // The top level is busy inside its step: its queries say where the run is paused.
    let e = d.state_at(0).unwrap_err();
    assert!(e.contains("paused inside the nested run") && e.contains("/call"), "{e}");
    // An edit changes the nested run's state, and the pause is shown again with it.
    d.edit_state("note", json!("edited")).unwrap();
    let p = wait_nested_pauses(&seen, 2);
    assert_eq!(p["state"]["note"], "edited");
    // Step: one node of the nested run, then paused again before `b`.
    d.control(Control::Step);
    let p = wait_nested_pauses(&seen, 3);
    assert_eq!(p["due"], json!(["b"]));
    assert_eq!(p["step"], 1);
    assert_eq!(p["state"]["a"], 1);
    assert_eq!(seen.kinds("nested_resumed"), 1, "an edit does not resume; the step did");
    // Step out: the nested run ends, the parent's step completes and the top level pauses
    // before its next node.
    d.control(Control::StepOut);
    let st = wait_state(&seen, "paused");
    assert_eq!(st.step, 1);
    assert_eq!(st.due, vec!["tail".to_string()]);
    assert!(d.nested_pause().is_none());
    assert_eq!(nested_pauses(&seen).len(), 3, "no pause after stepping out");
    // The parent sees what the nested run produced, the edit included.
    let state = d.state_at(1).unwrap();
    assert!(state.to_string().contains("child 1 2 edited"), "{state}");
    d.control(Control::Continue);
    let st = wait_state(&seen, "finished");
    assert_eq!(st.output, json!("parent done"));
}

#[test]
fn continue_inside_a_nested_run_runs_to_the_end_and_step_over_does_not_pause_inside() {
    let path = nested_agents("cont");
    let (d, seen) = drive_path(&path, None);
    wait_state(&seen, "ready");
    d.control(Control::StepInto);
    wait_nested_pauses(&seen, 1);
    d.control(Control::Continue);
    let st = wait_state(&seen, "finished");
    assert_eq!(st.status, Some(switchyard::run::events::RunStatus::Completed));
    assert_eq!(nested_pauses(&seen).len(), 1);

    // A plain step over the agent node runs the whole nested run without pausing in it.
    let (d, seen) = drive_path(&path, None);
    wait_state(&seen, "ready");
    d.control(Control::Step);
    let st = wait_state(&seen, "paused");
    assert_eq!(st.due, vec!["tail".to_string()]);
    assert!(nested_pauses(&seen).is_empty());
    // Step out at the top level continues.
    d.control(Control::StepOut);
    wait_state(&seen, "finished");
}

#[test]
fn stop_and_restart_inside_a_nested_run() {
    let path = nested_agents("stop");
    let (d, seen) = drive_path(&path, None);
    wait_state(&seen, "ready");
    d.control(Control::StepInto);
    wait_nested_pauses(&seen, 1);
    d.control(Control::Stop);
    let st = wait_state(&seen, "finished");
    assert_eq!(st.status, Some(switchyard::run::events::RunStatus::Stopped));
    assert!(d.nested_pause().is_none());

    let (d, seen) = drive_path(&path, None);
    wait_state(&seen, "ready");
    d.control(Control::StepInto);
    wait_nested_pauses(&seen, 1);
    d.control(Control::Restart);
    // The stopped step ends, then the run starts again from step 0 and runs to the end.
    assert!(
        wait_for(Duration::from_secs(20), || seen.last().is_some_and(|s| s.state == "finished"
            && s.status == Some(switchyard::run::events::RunStatus::Completed))),
        "{:?}",
        seen.last()
    );
}
