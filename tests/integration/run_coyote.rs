//! coyote 0.10.3's own graph agents run end to end through the CLI (issue 28): each is copied
//! from the conformance corpus into a temp `<config>/agents/<name>/` (the corpus is read-only
//! and `SWITCHYARD_CONFORMANCE` may point anywhere), with the global tools it names provided as
//! small stand-ins in `<config>/functions/tools/` (and MCP servers as the stdio test server in
//! `<config>/functions/mcp.json`), a tiny project for its tools to read, and a
//! replies file from `tests/fixtures/coyote/`; the folder is trusted with `--trust`, the run is
//! offline and scripted, and its real Python scripts run. The JSONL trace, normalised (see
//! [`normalize`] and [`canonical`]), must equal `tests/golden/coyote-<name>.jsonl`;
//! `UPDATE_EXPECT=1` rewrites the files (review the diff).

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus_agents() -> PathBuf {
    switchyard::testdata::conformance_dir().join("loki/coyote-0.10.3/assets/agents")
}

/// A global tool stand-in (argc tags as coyote's bash tools carry them): prints the file with
/// line numbers.
fn stand_in_tool(name: &str) -> String {
    format!(
        "#!/usr/bin/env bash\n# @describe {name}: test stand-in for coyote's tool of that name (prints the file with line numbers).\n\
         # @option --path! The file to read.\n# @option --pattern A pattern (ignored).\n\
         main() {{\n    nl -ba \"$argc_path\" >> \"$LLM_OUTPUT\"\n}}\n"
    )
}

/// A web-ish global tool stand-in: answers a `--query` (or `--url`) with canned text citing a
/// URL on a closed loopback port (so `verify_sources.py` finds it unreachable, offline and at
/// once).
fn stand_in_web_tool(name: &str) -> String {
    format!(
        "#!/usr/bin/env bash\n# @describe {name}: test stand-in for coyote's tool of that name (canned results).\n\
         # @option --query The query.\n# @option --url A URL.\n\
         main() {{\n    echo \"{name} results for ${{argc_query:-$argc_url}}: http://127.0.0.1:1/solid-state-review (2025 review)\" >> \"$LLM_OUTPUT\"\n}}\n"
    )
}

/// A command-running global tool stand-in (`execute_command`): answers with canned output of a
/// passing test run, running nothing.
fn stand_in_exec_tool(name: &str) -> String {
    format!(
        "#!/usr/bin/env bash\n# @describe {name}: test stand-in for coyote's tool of that name (canned output, runs nothing).\n\
         # @option --command! The command.\n\
         main() {{\n    printf '$ %s\\nrunning 1 test\\ntest tests::div_by_zero ... ok\\ntest result: ok. 1 passed; 0 failed\\n' \"$argc_command\" >> \"$LLM_OUTPUT\"\n}}\n"
    )
}

struct CoyoteRun {
    /// The agent (a folder of the corpus) and, first, the other agents it spawns.
    agents: &'static [&'static str],
    /// `tests/fixtures/coyote/<replies>`.
    replies: &'static str,
    input: &'static str,
    golden: &'static str,
    /// Answers to the run's questions, in order (`--answer`).
    answers: &'static [&'static str],
    /// Global tools given as [`stand_in_web_tool`]s.
    web_tools: &'static [&'static str],
    /// Global tools given as [`stand_in_tool`]s besides the `fs_*` ones every run has.
    file_tools: &'static [&'static str],
    /// Global tools given as [`stand_in_exec_tool`]s.
    exec_tools: &'static [&'static str],
    /// MCP servers defined in `<config>/functions/mcp.json` as the test server
    /// (`tests/fixtures/mcp/stdio_server.py`, on stdio: offline).
    mcp: &'static [&'static str],
    /// Every agent's folder is a git repository (each agent resolves `.` against its own
    /// folder): `src/lib.rs` committed, then changed in the work tree (a diff for the agent to
    /// review; fixed dates, so fixed hashes).
    git: bool,
}

const RUNS: &[CoyoteRun] = &[CoyoteRun {
    agents: &["finding-verifier"],
    replies: "finding-verifier.replies.yaml",
    input: "Verify these findings. Repository: .\n\
            🔴 CRITICAL src/lib.rs:2 — div divides by b without checking for zero\n\
            🟡 WARNING src/lib.rs:1 — div takes unsigned integers\n\
            🟡 WARNING src/missing.rs — missing.rs leaks a file handle",
    golden: "coyote-finding-verifier",
    answers: &[],
    web_tools: &[],
    file_tools: &[],
    exec_tools: &[],
    mcp: &[],
    git: false,
}, CoyoteRun {
    // The plan fans out beside the knowledge lookup (a rag node, keyword retrieval offline); two
    // questions researched as map items with global tools and the MCP server's tools; the
    // critique asks for a revision once (reflexion_gate's `_next` loop back into the map); the
    // report is written by `report-writer`, a normal agent (config.yaml) nested in the
    // `synthesize` agent node, whose first attempt times out (agent `max_attempts: 2`); the
    // report's citation is checked (a closed loopback port: unreachable); the approval is
    // answered `accept`.
    agents: &["deep-research", "report-writer"],
    replies: "deep-research.replies.yaml",
    input: "How far along are solid-state batteries?",
    golden: "coyote-deep-research",
    answers: &["accept"],
    web_tools: &["web_search_coyote", "fetch_url_via_curl", "search_arxiv"],
    file_tools: &[],
    exec_tools: &[],
    mcp: &["ddg-search"],
    git: false,
}, CoyoteRun {
    // A plan-conformance review of a work-tree diff (git, really run by diff_facts.py): three
    // criteria checked as map items (max_concurrency 4) with the per-item chain
    // check_criterion -> crit_gate: item 0 MET after reading a file, item 1 malformed and sent
    // back once by crit_gate's `_next` loop, item 2's checker dies twice on a transient error
    // (max_attempts: 2) and takes its per-item fallback criterion_fault; holistic's reply is
    // prose, so the structured-output extractor runs; verdict.py computes the sentinel. No
    // verification commands are declared (their recorded durations would vary from run to run).
    agents: &["adversary"],
    replies: "adversary.replies.yaml",
    input: "Review the change in the work tree against this plan.\n\
            Acceptance criteria:\n\
            1. div returns None when b is zero.\n\
            2. div keeps its i32 signature.\n\
            3. A unit test covers division by zero.",
    golden: "coyote-adversary",
    answers: &[],
    web_tools: &[],
    file_tools: &[],
    exec_tools: &[],
    mcp: &[],
    git: true,
}, CoyoteRun {
    // The done gate over a work-tree diff (git, read by signals.py and by each lane's own
    // scripts): select_lanes adds security and probe to the rules' code-review and adversary,
    // so all four lane maps run (the fan-out). Lanes: code-reviewer, a graph agent, runs its
    // facts/linters/grouping scripts, domain-reviewer (a normal agent, nested two deep) reads
    // the file, and it spawns finding-verifier (three deep), whose items verify one finding and
    // refute the other; adversary (a graph agent, `inputs` seeded) checks one criterion;
    // security-reviewer (normal) times out once and is retried by the agent node
    // (max_attempts: 2); probe (normal) dies on both attempts, takes the lane's fallback
    // lane_fault, and retry_gate's `_next` sends the gauntlet back to build_items for a second
    // pass of that lane alone, where probe runs the execute_command stand-in and passes;
    // verdict_gate reads the four sentinels. The lanes run in one parallel super-step, so the
    // calls of the agents nested in them are named by their run path (`parse@map_adversary/0/
    // run_adversary`): the replies file answers each nested `parse` by its own name.
    agents: &["review-gauntlet", "code-reviewer", "finding-verifier", "domain-reviewer", "adversary", "security-reviewer", "probe"],
    replies: "review-gauntlet.replies.yaml",
    input: "Gate the change in the work tree before I call it done.\n\
            Plan: div returns None when b is zero.\n\
            Local run recipe: cargo test.",
    golden: "coyote-review-gauntlet",
    answers: &[],
    web_tools: &[],
    file_tools: &["ast_grep", "fs_write", "fs_patch"],
    exec_tools: &["execute_command"],
    mcp: &[],
    git: true,
}];

/// The agent folder of a run, laid out as coyote keeps it, and its graph file.
fn lay_out(t: &TempDir, run: &CoyoteRun) -> PathBuf {
    let config = t.join("config");
    for a in run.agents {
        let to = config.join("agents").join(a);
        test_support::temp::copy_dir(&corpus_agents().join(a), &to);
        // The project the findings cite (the agents resolve paths against their folder).
        std::fs::create_dir_all(to.join("src")).unwrap();
        std::fs::write(to.join("src/lib.rs"), "fn div(a: i32, b: i32) -> i32 {\n    a / b\n}\n").unwrap();
    }
    for dir in run.agents.iter().map(|a| config.join("agents").join(a)).filter(|_| run.git) {
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args(["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"])
                .args(args)
                .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
                .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["add", "src/lib.rs"]);
        git(&["commit", "-q", "-m", "div"]);
        std::fs::write(
            dir.join("src/lib.rs"),
            "fn div(a: i32, b: i32) -> Option<i32> {\n    if b == 0 {\n        return None;\n    }\n    Some(a / b)\n}\n",
        )
        .unwrap();
    }
    let tools = config.join("functions/tools");
    std::fs::create_dir_all(&tools).unwrap();
    for name in ["fs_read", "fs_cat", "fs_grep", "fs_ls", "fs_glob"] {
        std::fs::write(tools.join(format!("{name}.sh")), stand_in_tool(name)).unwrap();
    }
    for name in run.file_tools {
        std::fs::write(tools.join(format!("{name}.sh")), stand_in_tool(name)).unwrap();
    }
    for name in run.exec_tools {
        std::fs::write(tools.join(format!("{name}.sh")), stand_in_exec_tool(name)).unwrap();
    }
    for name in run.web_tools {
        std::fs::write(tools.join(format!("{name}.sh")), stand_in_web_tool(name)).unwrap();
    }
    if !run.mcp.is_empty() {
        let server = repo().join("tests/fixtures/mcp/stdio_server.py");
        let servers: serde_json::Map<String, Value> = run
            .mcp
            .iter()
            .map(|n| (n.to_string(), serde_json::json!({"command": "python3", "args": [server.display().to_string(), "--name", n]})))
            .collect();
        std::fs::write(config.join("functions/mcp.json"), serde_json::json!({"mcpServers": servers}).to_string()).unwrap();
    }
    config.join("agents").join(run.agents[0]).join("graph.yaml")
}

/// Run it through the CLI; returns the trace text and the CLI's output.
fn cli_run(t: &TempDir, run: &CoyoteRun) -> (String, std::process::Output) {
    let graph = lay_out(t, run);
    let trace = t.join("trace.jsonl");
    let replies = repo().join("tests/fixtures/coyote").join(run.replies);
    let out = isolated_cli(t)
        .arg(&graph)
        .arg("--llm-script")
        .arg(&replies)
        .args(run.answers.iter().flat_map(|a| ["--answer", a]))
        .args(["--input", run.input, "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    (text, out)
}

/// `switchyard run --trust --quiet` with the trust file, run store, providers file and cache in
/// `t`, no keyring, a fixed locale and `$SHELL`, and none of the user's Loki or child-env
/// settings (append the graph and the run's options).
pub(crate) fn isolated_cli(t: &TempDir) -> Command {
    let mut c = Command::new(BIN);
    c.args(["run", "--trust", "--quiet"])
        .env("SWITCHYARD_TRUST", t.join("trust.json"))
        .env("SWITCHYARD_RUNS_DB", t.join("runs.sqlite"))
        .env("SWITCHYARD_PROVIDERS", t.join("no-providers.yaml"))
        .env("SWITCHYARD_CACHE_DIR", t.join("cache"))
        .env("SWITCHYARD_KEYRING", "off")
        .env("LC_ALL", "C.UTF-8")
        // `{{__shell__}}` in a prompt is `$SHELL`'s name (CI runs with none set: `sh`).
        .env("SHELL", "/bin/bash")
        .env_remove("LOKI_FUNCTIONS_DIR")
        .env_remove("LOKI_CONFIG_DIR")
        .env_remove("SWITCHYARD_CHILD_ENV");
    c
}

/// An event without what changes from run to run: times, durations, token estimates (they
/// count characters of prompts that hold temp paths), the run id (`RUN`, nesting kept), the
/// temp folder and the repository (`<tmp>`, `<repo>`).
fn normalize(mut v: Value) -> Value {
    clock_stamps(&mut v);
    if let Some(o) = v.as_object_mut() {
        for k in ["ts_ms", "duration_ms", "usage", "cost_usd"] {
            o.shift_remove(k);
        }
        if let Some(Value::String(run)) = o.get("run") {
            let nested = run.split_once('/').map(|(_, rest)| format!("RUN/{rest}")).unwrap_or_else(|| "RUN".into());
            o.insert("run".into(), Value::String(nested));
        }
    }
    v
}

/// Wall-clock stamps scripts put in state (review-gauntlet's `gauntlet_started_at`, a
/// `time.time()`), wherever they appear, as `"<clock>"`.
fn clock_stamps(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "gauntlet_started_at" && x.as_f64().is_some_and(|t| t > 0.0) {
                    *x = Value::from("<clock>");
                } else {
                    clock_stamps(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(clock_stamps),
        _ => {}
    }
}

/// Which node of run `run` an event belongs to: its own node (or route source, or the node of
/// an `agent:<node>` log) when the event is `run`'s, else the first segment of its nested run
/// id below `run`. `None`: a run-level event.
fn owner(e: &Value, run: &str) -> Option<String> {
    let r = e["run"].as_str().unwrap_or("");
    if r == run {
        let src = e["source"].as_str().and_then(|s| s.strip_prefix("agent:")).map(str::to_string);
        return e["node"].as_str().or(e["from"].as_str()).map(str::to_string).or(src);
    }
    r.strip_prefix(run)?.strip_prefix('/').map(|rest| rest.split('/').next().unwrap_or(rest).to_string())
}

/// The events of `run` (and of the runs nested in it) in an order that does not depend on
/// thread scheduling: parallel nodes (a fan-out), map items and nested runs interleave freely
/// in a live trace. Within one super-step of `run` (its nodes entering with one step number),
/// events are grouped by the node they
/// belong to (sorted by node id); inside a group, the node's own events keep their order and
/// the runs nested below it (an agent node's child run, a map's items `<map>/<i>`) follow its
/// first event, each as a block (ordered by run id, each put in this order recursively).
fn canonical(events: &[Value], run: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut block: Vec<Value> = Vec::new();
    let flush = |block: &mut Vec<Value>, out: &mut Vec<Value>| {
        let mut owners: Vec<String> = block.iter().filter_map(|e| owner(e, run)).collect();
        owners.sort();
        owners.dedup();
        for o in owners {
            let mine: Vec<&Value> = block.iter().filter(|e| owner(e, run).as_deref() == Some(o.as_str())).collect();
            let own: Vec<&Value> = mine.iter().copied().filter(|e| e["run"].as_str() == Some(run)).collect();
            let nested: Vec<Value> = mine.iter().copied().filter(|e| e["run"].as_str() != Some(run)).cloned().collect();
            // The runs directly below this node: the shortest run ids among the nested events.
            let mut children: Vec<String> = Vec::new();
            let mut ids: Vec<&str> = nested.iter().filter_map(|e| e["run"].as_str()).collect();
            ids.sort();
            ids.dedup();
            for id in &ids {
                if !children.iter().any(|c| id.starts_with(&format!("{c}/"))) {
                    children.push(id.to_string());
                }
            }
            let mut own = own.into_iter();
            if let Some(first) = own.next() {
                out.push(first.clone());
            }
            for c in &children {
                let sub: Vec<Value> = nested
                    .iter()
                    .filter(|e| e["run"].as_str().is_some_and(|r| r == c || r.starts_with(&format!("{c}/"))))
                    .cloned()
                    .collect();
                out.extend(canonical(&sub, c));
            }
            out.extend(own.cloned());
        }
        block.clear();
    };
    let mut step = None;
    for e in events {
        // A super-step of `run` begins where one of its nodes enters with a new step number.
        if e["run"].as_str() == Some(run) && e["event"] == "node_enter" && step != Some(e["step"].clone()) {
            step = Some(e["step"].clone());
            flush(&mut block, &mut out);
        }
        if owner(e, run).is_some() {
            block.push(e.clone());
        } else {
            flush(&mut block, &mut out);
            out.push(e.clone());
        }
    }
    flush(&mut block, &mut out);
    out
}

fn golden_text(trace: &str, t: &TempDir) -> String {
    let events: Vec<Value> = trace
        .lines()
        .map(|l| normalize(serde_json::from_str(l).expect("a JSON line")))
        // An MCP server says it started (with its pid) in whichever map item connected it
        // first: scheduling decides, so the line is left out.
        .filter(|e| !(e["event"] == "log" && e["text"].as_str().is_some_and(|t| t.contains(" starting (pid "))))
        .collect();
    // What an MCP server writes to its stderr arrives on a reader thread of its own, so where
    // its lines fall among the run's events is the scheduler's choice: they are compared as a
    // sorted list at the end instead (before the last event).
    let is_server_line = |e: &Value| e["event"] == "log" && e["source"].as_str().is_some_and(|s| s.starts_with("mcp:"));
    let (server_lines, events): (Vec<Value>, Vec<Value>) = events.into_iter().partition(is_server_line);
    let mut lines: Vec<String> = canonical(&events, "RUN").iter().map(Value::to_string).collect();
    let last = lines.pop();
    let mut server_lines: Vec<String> = server_lines.iter().map(Value::to_string).collect();
    server_lines.sort();
    // Before the run's last event (its `run_finished`), so the trace still ends with it.
    lines.extend(server_lines);
    lines.extend(last);
    let mut out = String::new();
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    let tmp = t.path().canonicalize().unwrap_or_else(|_| t.path().to_path_buf());
    let out = out
        .replace(&tmp.display().to_string(), "<tmp>")
        .replace(&t.path().display().to_string(), "<tmp>")
        .replace(&repo().display().to_string(), "<repo>");
    // A rag node's knowledge base lives in `<cache>/rag/<hash of the agent's path>/`.
    let mut parts = out.split("/rag/");
    let mut text = parts.next().unwrap_or("").to_string();
    for p in parts {
        let hex = p.chars().take_while(char::is_ascii_hexdigit).count();
        text.push_str("/rag/");
        text.push_str(if hex == 16 && p[hex..].starts_with('/') { "<hash>" } else { &p[..hex] });
        text.push_str(&p[hex..]);
    }
    text
}

#[test]
fn coyote_agents_match_their_golden_traces() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v != "0" && !v.is_empty());
    let mut failures = Vec::new();
    for run in RUNS {
        let t = TempDir::new("coyote");
        let (trace, out) = cli_run(&t, run);
        assert!(
            out.status.success(),
            "{}: the run must complete\nstdout:\n{}\nstderr:\n{}\ntrace:\n{trace}",
            run.golden,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let got = golden_text(&trace, &t);
        let file = repo().join("tests/golden").join(format!("{}.jsonl", run.golden));
        failures.extend(test_support::run::check_golden(run.golden, &file, &got, update));
    }
    assert!(failures.is_empty(), "{}\n\nIf the new traces are right, run with UPDATE_EXPECT=1 and review the diff.", failures.join("\n\n"));
}

/// Read a golden trace back.
fn golden(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo().join("tests/golden").join(format!("{name}.jsonl"))).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn of<'a>(events: &'a [Value], kind: &str, run: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind && e["run"] == run).collect()
}

/// What the finding-verifier golden proves, said once more as assertions on the file (so a
/// careless `UPDATE_EXPECT=1` cannot bless a run that lost one of them).
#[test]
fn finding_verifier_golden_shows_chains_retry_loop_fallback_and_extractor() {
    let ev = golden("coyote-finding-verifier");
    let last = ev.last().unwrap();
    assert_eq!(last["event"], "run_finished");
    assert_eq!(last["status"], "completed");
    // The parse node's prose reply went through the structured-output extractor (a second
    // request with its own system prompt, carrying the schema and the first reply).
    let parse: Vec<&Value> = of(&ev, "llm_request", "RUN").into_iter().filter(|e| e["node"] == "parse").collect();
    assert_eq!(parse.len(), 2, "the call and the extractor");
    let extractor = parse[1]["messages"].as_array().unwrap();
    assert!(extractor[0]["content"].as_str().unwrap().contains("JSON object"));
    assert!(extractor[1]["content"].as_str().unwrap().starts_with("Schema:\n"));
    assert!(extractor[1]["content"].as_str().unwrap().contains("Here are the findings I extracted"));
    // Three items, each a chain of its own.
    let steps = |run: &str| -> Vec<String> {
        of(&ev, "node_enter", run).iter().map(|e| e["node"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(steps("RUN/verify_each/0"), ["verify_one", "verdict_gate"]);
    // The `_next` retry loop: the gate rejected the first verdict and sent the item back.
    assert_eq!(steps("RUN/verify_each/1"), ["verify_one", "verdict_gate", "verify_one", "verdict_gate"]);
    let back = of(&ev, "route", "RUN/verify_each/1");
    assert!(back.iter().any(|r| r["from"] == "verdict_gate" && r["to"] == "verify_one" && r["reason"]["type"] == "_next"));
    // A dead verifier (two transient failures, max_attempts: 2) takes its per-item fallback.
    assert_eq!(steps("RUN/verify_each/2"), ["verify_one", "verify_fault"]);
    assert_eq!(of(&ev, "llm_error", "RUN/verify_each/2").len(), 2);
    // A real tool call inside an item.
    assert_eq!(of(&ev, "tool_result", "RUN/verify_each/0")[0]["name"], "fs_read");
    let verdicts = &last["state"]["verdicts"];
    let v: Vec<&str> = verdicts.as_array().unwrap().iter().map(|v| v["verdict"].as_str().unwrap()).collect();
    assert_eq!(v, ["VERIFIED", "FALSE", "UNVERIFIABLE"]);
    assert!(verdicts[2]["note"].as_str().unwrap().starts_with("PIPELINE-FAULT: verifier lane failed after retries — LLM node failed"));
    assert!(last["output"].as_str().unwrap().starts_with("FINDING_VERIFIER_RESULTS"));
}

#[test]
fn canonical_order_groups_parallel_nodes_and_items() {
    let e = |run: &str, event: &str, node: &str| serde_json::json!({"event": event, "run": run, "node": node});
    let shuffled = vec![
        serde_json::json!({"event": "run_started", "run": "RUN"}),
        e("RUN", "node_enter", "m"),
        e("RUN/m/1", "node_enter", "b"),
        e("RUN/m/0", "node_enter", "b"),
        e("RUN/m/1", "node_exit", "b"),
        e("RUN/m/0/b", "node_enter", "inner"),
        e("RUN/m/0", "node_exit", "b"),
        e("RUN", "node_exit", "m"),
        serde_json::json!({"event": "run_finished", "run": "RUN"}),
    ];
    let got: Vec<String> = canonical(&shuffled, "RUN").iter().map(|e| format!("{} {}", e["run"].as_str().unwrap(), e["event"].as_str().unwrap())).collect();
    assert_eq!(
        got,
        [
            "RUN run_started",
            "RUN node_enter",
            "RUN/m/0 node_enter",
            "RUN/m/0/b node_enter",
            "RUN/m/0 node_exit",
            "RUN/m/1 node_enter",
            "RUN/m/1 node_exit",
            "RUN node_exit",
            "RUN run_finished"
        ]
    );
}

/// What the deep-research golden proves (see the comment on its entry in [`RUNS`]).
#[test]
fn deep_research_golden_shows_fan_out_reflexion_loop_and_a_normal_agent_retried() {
    let ev = golden("coyote-deep-research");
    let last = ev.last().unwrap();
    assert_eq!((&last["event"], &last["status"]), (&Value::from("run_finished"), &Value::from("completed")));
    let entered = |run: &str| -> Vec<String> {
        of(&ev, "node_enter", run).iter().map(|e| e["node"].as_str().unwrap().to_string()).collect()
    };
    let top = entered("RUN");
    // The plan fans out beside the rag node; the map runs twice (reflexion_gate's `_next`).
    assert_eq!(&top[..4], ["parse_request", "bootstrap_research", "knowledge_lookup", "plan"]);
    assert_eq!(top.iter().filter(|n| *n == "research_each_question").count(), 2);
    assert!(of(&ev, "route", "RUN").iter().any(|r| r["from"] == "reflexion_gate"
        && r["to"] == "research_each_question"
        && r["reason"]["type"] == "_next"));
    // Map items used a global tool stand-in and the MCP server's tool.
    let tools: Vec<&str> = of(&ev, "tool_result", "RUN/research_each_question/0").iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["web_search_coyote", "echo"]);
    // report-writer, a normal agent, ran twice in the synthesize node: a transient failure, then
    // the report; each attempt a run of one node named after the agent.
    assert_eq!(entered("RUN/synthesize"), ["report-writer", "report-writer"]);
    let ends: Vec<&Value> = of(&ev, "run_finished", "RUN/synthesize").into_iter().map(|e| &e["status"]).collect();
    assert_eq!(ends, ["failed", "completed"]);
    assert_eq!(of(&ev, "llm_request", "RUN/synthesize")[0]["messages"][0]["role"], "system");
    assert!(of(&ev, "llm_request", "RUN/synthesize")[0]["messages"][0]["content"].as_str().unwrap().starts_with("You are a technical writer."));
    assert!(last["state"]["source_check"].as_str().unwrap().contains("UNREACHABLE  http://127.0.0.1:1/solid-state-review"));
    assert_eq!(last["state"]["decision"], "accept");
    assert!(last["output"].as_str().unwrap().starts_with("Solid-state batteries are close"));
}

/// What the adversary golden proves (see the comment on its entry in [`RUNS`]).
#[test]
fn adversary_golden_shows_git_diff_chains_retry_loop_and_fault_fallback() {
    let ev = golden("coyote-adversary");
    let last = ev.last().unwrap();
    assert_eq!((&last["event"], &last["status"]), (&Value::from("run_finished"), &Value::from("completed")));
    let steps = |run: &str| -> Vec<String> {
        of(&ev, "node_enter", run).iter().map(|e| e["node"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(steps("RUN/map_criteria/0"), ["check_criterion", "crit_gate"]);
    assert_eq!(steps("RUN/map_criteria/1"), ["check_criterion", "crit_gate", "check_criterion", "crit_gate"]);
    assert_eq!(steps("RUN/map_criteria/2"), ["check_criterion", "criterion_fault"]);
    assert_eq!(of(&ev, "llm_error", "RUN/map_criteria/2").len(), 2);
    // diff_facts.py ran git on the agent's work tree.
    assert!(last["state"]["diff_text"].as_str().unwrap().contains("+fn div(a: i32, b: i32) -> Option<i32> {"));
    // holistic's prose went through the extractor.
    assert_eq!(of(&ev, "llm_request", "RUN").iter().filter(|e| e["node"] == "holistic").count(), 2);
    let out = last["output"].as_str().unwrap();
    assert!(out.starts_with("ADVERSARIAL_REVIEW: DIVERGES"), "{out}");
    assert!(out.contains("1 criterion check(s) died (fail-closed)"), "{out}");
}

/// What the review-gauntlet golden proves (see the comment on its entry in [`RUNS`]).
#[test]
fn review_gauntlet_golden_shows_four_lanes_nesting_three_deep_retry_fallback_and_verdict() {
    let ev = golden("coyote-review-gauntlet");
    let last = ev.last().unwrap();
    assert_eq!((&last["event"], &last["status"]), (&Value::from("run_finished"), &Value::from("completed")));
    let entered = |run: &str| -> Vec<String> {
        of(&ev, "node_enter", run).iter().map(|e| e["node"].as_str().unwrap().to_string()).collect()
    };
    let ends = |run: &str| -> Vec<String> {
        of(&ev, "run_finished", run).iter().map(|e| e["status"].as_str().unwrap().to_string()).collect()
    };
    // signals.py read the git work-tree diff.
    assert_eq!(last["state"]["changed_files"], serde_json::json!(["src/lib.rs"]));
    // The four-way fan-out into the lane maps, twice (the retry pass maps three lanes over []).
    let maps = ["map_code_review", "map_adversary", "map_security", "map_probe"];
    for m in maps {
        let fanned = of(&ev, "route", "RUN").iter().filter(|r| r["from"] == "build_items" && r["to"] == m).count();
        assert_eq!(fanned, 2, "{m}");
    }
    assert_eq!(entered("RUN/map_code_review/0"), ["run_code_review"]);
    assert_eq!(entered("RUN/map_adversary/0"), ["run_adversary"]);
    assert_eq!(entered("RUN/map_security/0"), ["run_security"]);
    // Nesting: code-reviewer (a graph) runs domain-reviewer (a normal agent, reading the file)
    // in its map and finding-verifier (a graph) whose map items are three graph levels down.
    let cr = "RUN/map_code_review/0/run_code_review";
    assert_eq!(ends(cr), ["completed"]);
    assert_eq!(entered(&format!("{cr}/map_domains/0/review_domain")), ["domain-reviewer", "domain-reviewer"]);
    assert_eq!(of(&ev, "tool_result", &format!("{cr}/map_domains/0/review_domain"))[0]["name"], "fs_read");
    assert_eq!(ends(&format!("{cr}/verify")), ["completed"]);
    assert_eq!(entered(&format!("{cr}/verify/verify_each/0")), ["verify_one", "verdict_gate"]);
    assert_eq!(entered(&format!("{cr}/verify/verify_each/1")), ["verify_one", "verdict_gate"]);
    // adversary, a graph agent, ran its criteria map.
    assert_eq!(entered("RUN/map_adversary/0/run_adversary/map_criteria/0"), ["check_criterion", "crit_gate"]);
    // security-reviewer: a transient failure retried by the agent node (max_attempts: 2).
    assert_eq!(ends("RUN/map_security/0/run_security"), ["failed", "completed"]);
    // probe: both attempts die, the lane's fallback marks it, retry_gate sends the gauntlet
    // back (`_next`) and the second pass runs probe alone, with the execute_command stand-in.
    assert_eq!(entered("RUN/map_probe/0"), ["run_probe", "lane_fault", "run_probe"]);
    assert!(of(&ev, "route", "RUN/map_probe/0").iter().any(|r| r["from"] == "run_probe" && r["to"] == "lane_fault" && r["reason"]["type"] == "fallback"));
    let fault = of(&ev, "node_exit", "RUN/map_probe/0").into_iter().find(|e| e["node"] == "lane_fault").unwrap();
    assert!(fault["update"]["lane_out"].as_str().unwrap().starts_with("PIPELINE-FAULT: probe lane failed after retries — Agent node failed"));
    assert_eq!(ends("RUN/map_probe/0/run_probe"), ["failed", "failed", "completed"]);
    assert!(of(&ev, "route", "RUN").iter().any(|r| r["from"] == "retry_gate" && r["to"] == "build_items" && r["reason"]["type"] == "_next"));
    assert_eq!(of(&ev, "tool_result", "RUN/map_probe/0/run_probe")[0]["name"], "execute_command");
    assert_eq!(last["state"]["lane_attempts"], serde_json::json!({"code-review": 1, "adversary": 1, "security": 1, "probe": 2}));
    // The verdict: all four sentinels green; the refuted finding was dropped by code-reviewer.
    let out = last["output"].as_str().unwrap();
    assert!(out.starts_with("GAUNTLET: PASS\n"), "{out}");
    for row in ["| code-review | GREEN | MERGE-READY |", "| adversary | GREEN | CONFORMS |", "| security | GREEN | PASS |", "| probe | GREEN | PASS |"] {
        assert!(out.contains(row), "{row}\n{out}");
    }
    assert!(out.contains("- retried: [probe (attempt 2)]"), "{out}");
    assert!(out.contains("verifier: dropped 1 provably-false (div still panics when b is zero)"), "{out}");
}
