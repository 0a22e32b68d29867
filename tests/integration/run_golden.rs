//! Golden traces of the example agents in `agents/`: each runs offline with the scripted
//! replies beside it and the answers below, and its event trace (run ids, timestamps and
//! durations removed) must equal `tests/golden/<name>.jsonl`. Run with `UPDATE_EXPECT=1` to
//! rewrite the files, then review the diff.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use switchyard::doc::load_path;
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{RunOptions, Status};

struct Example {
    name: &'static str,
    path: &'static str,
    input: &'static str,
    answers: &'static [&'static str],
}

const EXAMPLES: &[Example] = &[
    Example {
        name: "support-triage",
        path: "agents/support-triage/agent.yaml",
        input: "Where is my order 1001?",
        answers: &["thanks, one more question", "done"],
    },
    Example { name: "release-gate-ship", path: "agents/release-gate", input: "v1.2", answers: &["ship"] },
    Example { name: "release-gate-other", path: "agents/release-gate", input: "v1.2", answers: &["later", "Ship with a known-issues note."] },
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// An event without what changes from run to run.
fn normalize(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.shift_remove("ts_ms");
        o.shift_remove("duration_ms");
        if let Some(Value::String(run)) = o.get("run") {
            // Keep nesting visible: `<id>/<node>` becomes `RUN/<node>`.
            let nested = run.split_once('/').map(|(_, rest)| format!("RUN/{rest}")).unwrap_or_else(|| "RUN".into());
            o.insert("run".into(), Value::String(nested));
        }
    }
    v
}

/// Nodes of a Loki super-step run in parallel, so their events interleave differently from
/// run to run. Within each block of node-level events (between routes and run-level events),
/// order the events by node (routes by their source), keeping each node's own order.
fn canonical_order(events: Vec<Value>) -> Vec<Value> {
    const NODE_LEVEL: &[&str] =
        &["node_enter", "node_exit", "route", "llm_request", "llm_response", "tool_call", "tool_result"];
    let key = |e: &Value| e.get("node").or_else(|| e.get("from")).and_then(Value::as_str).map(String::from);
    let mut out = Vec::new();
    let mut block: Vec<Value> = Vec::new();
    let flush = |block: &mut Vec<Value>, out: &mut Vec<Value>| {
        block.sort_by_key(key);
        out.append(block);
    };
    for e in events {
        if NODE_LEVEL.contains(&e["event"].as_str().unwrap_or("")) {
            block.push(e);
        } else {
            flush(&mut block, &mut out);
            out.push(e);
        }
    }
    flush(&mut block, &mut out);
    out
}

fn trace(ex: &Example) -> (String, Status) {
    let doc = Arc::new(load_path(&root().join(ex.path)));
    let req = RunRequest { input: Some(ex.input.into()), ..Default::default() };
    let mut opts = RunOptions::new(Box::new(NoProvider));
    opts.answers = ex.answers.iter().map(|a| Value::String((*a).into())).collect();
    opts.run_id = Some("RUN".into());
    let mut s = launch::start(doc, &req, opts).unwrap_or_else(|e| panic!("{}: {e}", ex.name));
    s.run();
    let events: Vec<Value> = s.events().iter().map(|e| normalize(e.to_value())).collect();
    let mut out = String::new();
    for e in canonical_order(events) {
        out.push_str(&e.to_string());
        out.push('\n');
    }
    // Paths differ between clones: make them relative to the repository.
    let out = out.replace(&root().display().to_string(), "<repo>");
    (out, s.status().clone())
}

#[test]
fn example_agents_match_their_golden_traces() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v != "0" && !v.is_empty());
    let mut failures = Vec::new();
    for ex in EXAMPLES {
        let (got, status) = trace(ex);
        assert!(
            matches!(status, Status::Finished { status: switchyard::run::events::RunStatus::Completed, .. }),
            "{}: the example must complete offline, got {status:?}\n{got}",
            ex.name
        );
        let file = root().join("tests/golden").join(format!("{}.jsonl", ex.name));
        failures.extend(test_support::run::check_golden(ex.name, &file, &got, update));
    }
    assert!(
        failures.is_empty(),
        "{}\n\nIf the new traces are right, run `UPDATE_EXPECT=1 cargo test --test run_golden` and review the diff.",
        failures.join("\n\n")
    );
}

#[test]
fn golden_traces_have_the_documented_shape() {
    for ex in EXAMPLES {
        let text = std::fs::read_to_string(Path::new(&root()).join("tests/golden").join(format!("{}.jsonl", ex.name))).unwrap();
        let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(events[0]["event"], "run_started", "{}", ex.name);
        let last = events.last().unwrap();
        assert_eq!(last["event"], "run_finished");
        assert_eq!(last["status"], "completed");
        assert!(last["state"].is_object());
        assert!(events.iter().any(|e| e["event"] == "node_enter" && e["node"].is_string()));
    }
}

/// The cassettes shipped beside the examples replay strictly: every request the agent makes
/// today is the one recorded, and the run ends as the scripted run does. When an example is
/// edited, re-record its cassette (the failure says how).
#[test]
fn example_cassettes_replay_strictly() {
    use switchyard::run::launch::{self, RunRequest};
    use switchyard::run::session::{RunOptions, Status};
    for (ex, cassette) in [
        (&EXAMPLES[0], "agents/support-triage/agent.cassette.json"),
        (&EXAMPLES[1], "agents/release-gate/cassette.json"),
    ] {
        let d = std::sync::Arc::new(switchyard::doc::load_path(&root().join(ex.path)));
        let req = RunRequest {
            input: Some(ex.input.into()),
            replay: Some(root().join(cassette)),
            replay_strict: true,
            ..Default::default()
        };
        let mut opts = RunOptions::new(Box::new(switchyard::run::provider::NoProvider));
        opts.answers = ex.answers.iter().map(|a| serde_json::Value::String(a.to_string())).collect();
        let mut s = launch::start(d, &req, opts).unwrap_or_else(|e| panic!("{}: {e}", ex.name));
        let st = s.run().clone();
        assert!(
            matches!(st, Status::Finished { status: switchyard::run::events::RunStatus::Completed, .. }),
            "{}: the replay of {cassette} did not complete ({st:?}). If the agent was changed on purpose, re-record: \
             switchyard run {} --input {:?} {} --record {cassette}",
            ex.name,
            ex.path,
            ex.input,
            ex.answers.iter().map(|a| format!("--answer {a:?}")).collect::<Vec<_>>().join(" ")
        );
        assert!(
            !s.events().iter().any(|e| matches!(e.body, switchyard::run::events::EventBody::ReplayDiverged { .. })),
            "{}: no divergence",
            ex.name
        );
    }
}
