//! coyote 0.10.3's built-in agent functions as Switchyard runs them (issue 28): teammates of a
//! map messaging each other, a normal agent spawning children under `max_concurrent_agents`
//! and `max_agent_depth`, and background jobs under `max_concurrent_jobs`. The small agents of
//! `tests/fixtures/coyote/supervisor/` are copied into a temp `<config>/agents/`, trusted, and
//! run through the CLI with scripted replies, offline; the assertions read the JSONL trace.

use serde_json::Value;
use std::path::PathBuf;
use test_support::TempDir;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/coyote/supervisor")
}

/// Run agent `graph` of the fixtures with the replies file `replies`; the trace's events and
/// the CLI's output.
fn run(t: &TempDir, graph: &str, replies: &str, input: &str) -> (Vec<Value>, std::process::Output) {
    let agents = t.join("config/agents");
    test_support::temp::copy_dir(&fixtures().join("agents"), &agents);
    let trace = t.join("trace.jsonl");
    let out = super::run_coyote::isolated_cli(t)
        .arg(agents.join(graph).join("graph.yaml"))
        .arg("--llm-script")
        .arg(fixtures().join(replies))
        .args(["--input", input, "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert!(
        out.status.success(),
        "the run must complete\nstdout:\n{}\nstderr:\n{}\ntrace:\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (events, out)
}

/// The run id of an event below the top-level run, as `RUN/<rest>` (`RUN` for the top).
fn run_of(e: &Value) -> String {
    let r = e["run"].as_str().unwrap_or("");
    r.split_once('/').map(|(_, rest)| format!("RUN/{rest}")).unwrap_or_else(|| "RUN".into())
}

fn events<'a>(ev: &'a [Value], kind: &str, run: &str) -> Vec<&'a Value> {
    ev.iter().filter(|e| e["event"] == kind && run_of(e) == run).collect()
}

/// The result of the tool call `id` (a `tool_result` event), wherever it ran.
fn result_of<'a>(ev: &'a [Value], id: &str) -> &'a Value {
    ev.iter().find(|e| e["event"] == "tool_result" && e["id"] == id).unwrap_or_else(|| panic!("no result for call {id}"))
}

#[test]
fn teammates_of_a_map_message_each_other() {
    let t = TempDir::new("coyote-team");
    let (ev, _) = run(&t, "team", "team.replies.yaml", "Review the change.");
    // Item 0's worker learned its peers from its prompt (the roster), with deterministic ids.
    let first = events(&ev, "llm_request", "RUN/fan/0/work")[0];
    let prompt = first["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(prompt.starts_with("Review slice alpha.\n\n## Teammates\nYour id is `graph_agent_worker_fan_0` (work[0])."), "{prompt}");
    assert!(prompt.contains("- `graph_agent_worker_fan_1` — work[1]"), "{prompt}");
    // The teammate functions are offered.
    let tools: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"agent__send_message") && tools.contains(&"agent__check_inbox"), "{tools:?}");
    // Item 0 (run first: max_concurrency 1) sent; item 1 read it from its inbox.
    assert_eq!(result_of(&ev, "send")["result"]["message"], "Message delivered to teammate 'graph_agent_worker_fan_1'");
    let inbox = &result_of(&ev, "inbox")["result"];
    assert_eq!(inbox["count"], 1, "{inbox}");
    assert_eq!(inbox["messages"][0]["from"], "graph_agent_worker_fan_0");
    assert_eq!(inbox["messages"][0]["payload"]["content"], "alpha renames div; beta calls it");
    assert_eq!(run_of(result_of(&ev, "inbox")), "RUN/fan/1/work");
    let last = ev.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(last["state"]["results"], serde_json::json!(["alpha reviewed", "beta reviewed, callers updated"]));
}

#[test]
fn a_normal_agent_spawns_children_within_its_caps() {
    let t = TempDir::new("coyote-boss");
    let (ev, out) = run(&t, "boss-graph", "boss.replies.yaml", "Do both parts.");
    // The second spawn of the first turn is refused: one child is uncollected (cap 1).
    assert_eq!(result_of(&ev, "s1")["result"]["id"], "agent_helper_1");
    assert_eq!(result_of(&ev, "s2")["result"]["message"], "At capacity: 1/1 agents running. Wait for one to finish or cancel one.");
    let c1 = &result_of(&ev, "c1")["result"];
    assert_eq!((c1["exit_status"].as_str(), c1["output"].as_str()), (Some("Completed"), Some("part one done")));
    // The child ran as a nested run of the boss, with its variable given at the spawn.
    let kid = "RUN/delegate/agent_helper_1";
    assert_eq!(events(&ev, "run_started", kid).len(), 1);
    let system = events(&ev, "llm_request", kid)[0]["messages"][0]["content"].as_str().unwrap().to_string();
    assert_eq!(system, "You do one part of a task about parsing.");
    // Its own spawn would run at depth 3, past its max_agent_depth (2).
    assert_eq!(result_of(&ev, "deep")["result"]["message"], "Max agent depth exceeded (3/2)");
    assert_eq!(run_of(result_of(&ev, "deep")), kid);
    // The second child, spawned in the next turn once the first was collected.
    assert_eq!(result_of(&ev, "k2")["result"]["status"], "finished");
    assert_eq!(result_of(&ev, "c2")["result"]["output"], "part two done");
    let kid2 = "RUN/delegate/agent_helper_2";
    assert_eq!(events(&ev, "llm_request", kid2)[0]["messages"][0]["content"], "You do one part of a task about things.");
    // max_concurrent_agents: 1 observed: the children's runs never overlap in the trace.
    let at = |kind: &str, run: &str| ev.iter().position(|e| e["event"] == kind && run_of(e) == run).unwrap();
    assert!(at("run_finished", kid) < at("run_started", kid2));
    // Both ran inside the boss's turns (steps 1 and 2 of `delegate`), which each ended after them.
    let exits: Vec<usize> = ev
        .iter()
        .enumerate()
        .filter(|(_, e)| e["event"] == "node_exit" && run_of(e) == "RUN/delegate")
        .map(|(i, _)| i)
        .collect();
    assert!(at("run_finished", kid) < exits[0] && exits[0] < at("run_started", kid2) && at("run_finished", kid2) < exits[1]);
    let last = ev.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(last["output"], "both parts done");
    assert!(String::from_utf8_lossy(&out.stdout).contains("both parts done"));
}

#[test]
fn jobs_start_collect_and_respect_their_cap() {
    let t = TempDir::new("coyote-jobs");
    let (ev, _) = run(&t, "jobs-graph", "jobs.replies.yaml", "Run the tests.");
    let first = events(&ev, "llm_request", "RUN/work")[0];
    let tools: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"job__start") && tools.contains(&"job__collect"), "{tools:?}");
    assert!(!tools.contains(&"agent__spawn"), "no can_spawn_agents, no supervisor family: {tools:?}");
    assert_eq!(result_of(&ev, "j1")["result"]["job_id"], "job_1");
    assert_eq!(result_of(&ev, "j2")["result"]["message"], "At capacity: 1/1 jobs running. Collect or cancel one first.");
    let c1 = &result_of(&ev, "c1")["result"];
    assert_eq!(c1["status"], "completed", "{c1}");
    assert_eq!(c1["result"].as_str().map(str::trim), Some("ran: cargo test"));
    // The job ran its tool once (the refused start never ran).
    let ran: Vec<&Value> = ev.iter().filter(|e| e["event"] == "tool_result" && e["name"] == "run_command").collect();
    assert!(ran.is_empty(), "a job's tool is no tool call of the turn: {ran:?}");
    assert_eq!(ev.last().unwrap()["output"], "tests ran");
}
