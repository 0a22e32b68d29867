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

/// The names of the tools a `llm_request` event offers.
fn offered(request: &Value) -> Vec<&str> {
    request["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// The last message of a `llm_request` event (the user's prompt on a first turn).
fn last_message(request: &Value) -> String {
    request["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string()
}

/// A map's two teammates (`agent` in map `fan`, node `work`, one item at a time): item 0
/// learned its peers from its prompt (`verb slice alpha.` then the roster) and messaged item 1
/// (`message`), which read it from its inbox; the map collected `results`. The offered tools of
/// item 0's first request.
fn check_teammates<'e>(ev: &'e [Value], agent: &str, verb: &str, message: &str, results: Value) -> Vec<&'e str> {
    let first = events(ev, "llm_request", "RUN/fan/0/work")[0];
    let prompt = last_message(first);
    let head = format!("{verb} slice alpha.\n\n## Teammates\nYour id is `graph_agent_{agent}_fan_0` (work[0]).");
    assert!(prompt.starts_with(&head), "{prompt}");
    assert!(prompt.contains(&format!("- `graph_agent_{agent}_fan_1` — work[1]")), "{prompt}");
    assert_eq!(result_of(ev, "send")["result"]["message"], format!("Message delivered to teammate 'graph_agent_{agent}_fan_1'"));
    assert_eq!(run_of(result_of(ev, "send")), "RUN/fan/0/work");
    let inbox = &result_of(ev, "inbox")["result"];
    assert_eq!(inbox["count"], 1, "{inbox}");
    assert_eq!(inbox["messages"][0]["from"], format!("graph_agent_{agent}_fan_0"));
    assert_eq!(inbox["messages"][0]["payload"]["content"], message);
    assert_eq!(run_of(result_of(ev, "inbox")), "RUN/fan/1/work");
    let last = ev.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(last["state"]["results"], results);
    offered(first)
}

/// Teammates of a map: normal agents (`team` running `worker`), and graph agents (`squad`
/// running `critic`, whose llm node `review` gets the teammate pair its `tools:` list names and
/// speaks as its agent node's identity).
#[test]
fn teammates_of_a_map_message_each_other() {
    let cases = [
        ("team", "Review", "worker", "alpha renames div; beta calls it", ["alpha reviewed", "beta reviewed, callers updated"]),
        ("squad", "Criticise", "critic", "alpha drops the cache; beta reads it", ["alpha criticised", "beta criticised, cache noted"]),
    ];
    for (graph, verb, agent, message, results) in cases {
        let t = TempDir::new(&format!("coyote-{graph}"));
        let (ev, _) = run(&t, graph, &format!("{graph}.replies.yaml"), "Look at the change.");
        let tools = check_teammates(&ev, agent, verb, message, serde_json::json!(results));
        if agent == "worker" {
            // A normal agent is offered the teammate functions among its own.
            assert!(tools.contains(&"agent__send_message") && tools.contains(&"agent__check_inbox"), "{tools:?}");
        } else {
            assert_eq!(tools, ["agent__send_message", "agent__check_inbox"]);
        }
    }
}

/// `s1` spawned `agent_helper_1` (its `topic` variable `topic`), `s2` was refused while it was
/// uncollected (`max_concurrent_agents: 1`), `c1` collected its "part one done"; it ran once,
/// as the nested run `kid`.
fn check_first_child(ev: &[Value], kid: &str, topic: &str) {
    assert_eq!(result_of(ev, "s1")["result"]["id"], "agent_helper_1");
    let refused = &result_of(ev, "s2")["result"]["message"];
    assert_eq!(refused, "At capacity: 1/1 agents running. Wait for one to finish or cancel one.");
    let c1 = &result_of(ev, "c1")["result"];
    assert_eq!((c1["exit_status"].as_str(), c1["output"].as_str()), (Some("Completed"), Some("part one done")));
    assert_eq!(events(ev, "run_started", kid).len(), 1);
    let system = &events(ev, "llm_request", kid)[0]["messages"][0]["content"];
    assert_eq!(system.as_str(), Some(format!("You do one part of a task about {topic}.").as_str()));
}

#[test]
fn a_normal_agent_spawns_children_within_its_caps() {
    let t = TempDir::new("coyote-boss");
    let (ev, out) = run(&t, "boss-graph", "boss.replies.yaml", "Do both parts.");
    // The second spawn of the first turn is refused: one child is uncollected (cap 1). The
    // child ran as a nested run of the boss, with its variable given at the spawn.
    let kid = "RUN/delegate/agent_helper_1";
    check_first_child(&ev, kid, "parsing");
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
    let tools = offered(first);
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

#[test]
fn a_graph_llm_node_spawns_collects_and_reaps_its_jobs() {
    let t = TempDir::new("coyote-planner");
    let (ev, out) = run(&t, "planner", "planner.replies.yaml", "Plan the work.");
    // The node is offered the functions its `tools:` list names, and only those.
    let want = ["agent__spawn", "agent__collect", "agent__list_available", "job__start", "run_command"];
    assert_eq!(offered(events(&ev, "llm_request", "RUN")[0]), want);
    // A spawn, a second one refused past max_concurrent_agents (1), the first collected; the
    // child is a nested run of the graph, with the variable given at the spawn.
    let kid = "RUN/agent_helper_1";
    check_first_child(&ev, kid, "graphs");
    // It ran within the node's step: before `plan`'s node_exit.
    let at = |kind: &str, run: &str| ev.iter().position(|e| e["event"] == kind && run_of(e) == run).unwrap();
    assert!(at("run_finished", kid) < at("node_exit", "RUN"));
    // The job the node never collected is reaped when it ends; the next node finds none.
    assert_eq!(result_of(&ev, "j1")["result"]["job_id"], "job_1");
    let reaped = ev.iter().find(|e| e["event"] == "log" && e["source"] == "llm:plan").expect("a reaping log");
    assert_eq!(reaped["text"], "reaped at the node's end, never collected: job_1");
    let late = &result_of(&ev, "late")["result"];
    assert!(late["message"].as_str().unwrap().starts_with("No job 'job_1' is registered"), "{late}");
    assert_eq!(ev.last().unwrap()["output"], "planned / checked");
    assert!(String::from_utf8_lossy(&out.stdout).contains("planned / checked"));
}
