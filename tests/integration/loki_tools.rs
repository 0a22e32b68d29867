//! Loki llm-node tools that run as subprocesses, end to end: the agent folder
//! `tests/fixtures/loki_tools/agents/researcher` (its `tools.sh`, `tools.ts`, `tools.js`) and the
//! global tool `functions/tools/web_search.sh` beside it, copied to a temp dir and run through
//! `RunSession` with scripted LLM replies. The tools are real bash / node / tsx processes.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use switchyard::llm::cassette::{Recorder, Replayer};
use switchyard::run::events::{EventBody, RunStatus};
use switchyard::run::loki::LokiMachine;
use switchyard::run::provider::{LlmProvider, ScriptedProvider};
use switchyard::run::session::{RunOptions, RunSession, Status};
use test_support::process_gone;
use test_support::run::{completed, dump, tool_results};
use test_support::temp::{TempDir, copy_dir};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/loki_tools")
}

/// A fresh copy of the fixture config dir; returns the agent dir `<copy>/agents/researcher`.
/// `graph` replaces the agent's graph.yaml when given.
fn agent(graph: Option<&str>) -> TempDir {
    let dir = TempDir::new("loki-tools").sub("agents/researcher");
    copy_dir(&fixtures(), dir.root());
    if let Some(g) = graph {
        std::fs::write(dir.join("graph.yaml"), g).unwrap();
    }
    dir
}

/// A graph whose one llm node offers `tools` (the run's timeout in seconds, if any).
fn graph_with(tools: &[&str], globals: &[&str], timeout: Option<u64>) -> String {
    let settings = timeout
        .map(|t| format!("settings: {{ timeout: {t} }}\n"))
        .unwrap_or_default();
    format!(
        "name: researcher\n{settings}global_tools: [{}]\nstart: research\nnodes:\n  research:\n    type: llm\n    prompt: go\n    tools: [{}]\n    max_iterations: 3\n    state_updates: {{ answer: \"{{{{output}}}}\" }}\n    next: done\n  done: {{ type: end, output: \"{{{{answer}}}}\" }}\n",
        globals.join(", "),
        tools.join(", ")
    )
}

fn provider(replies: &str) -> Box<dyn LlmProvider> {
    Box::new(ScriptedProvider::from_str(Path::new("replies.yaml"), replies).expect("replies parse"))
}

fn session_with(dir: &Path, input: &str, provider: Box<dyn LlmProvider>) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(&dir.join("graph.yaml")));
    let m = LokiMachine::new(doc, input, None).unwrap_or_else(|e| panic!("{e}"));
    RunSession::new(Box::new(m), json!(input), RunOptions::new(provider))
}

fn session(dir: &Path, replies: &str) -> RunSession {
    session_with(dir, "rust", provider(replies))
}

/// The `messages` of every LLM request, in order.
fn requests(s: &RunSession) -> Vec<Vec<Value>> {
    s.events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::LlmRequest { messages, .. } => Some(messages.as_array().unwrap().clone()),
            _ => None,
        })
        .collect()
}

/// The tools offered by the first LLM request, by name.
fn offered(s: &RunSession) -> serde_json::Map<String, Value> {
    let tools = s
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::LlmRequest { tools, .. } => Some(tools),
            _ => None,
        })
        .expect("an llm request");
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t.clone()))
        .collect()
}

/// Tool message contents of the second request, by tool name.
fn tool_messages(s: &RunSession) -> serde_json::Map<String, Value> {
    let reqs = requests(s);
    assert!(reqs.len() >= 2, "no second request:\n{}", dump(s));
    reqs[1]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["content"].clone(),
            )
        })
        .collect()
}

/// The pid the `hang` tool wrote for its child, once it is there, and whether that child ended.
fn child_ends(dir: &Path) -> (String, bool) {
    let until = Instant::now() + Duration::from_secs(3);
    let mut pid = String::new();
    while Instant::now() < until {
        pid = std::fs::read_to_string(dir.join("hang_child.pid"))
            .unwrap_or_default()
            .trim()
            .to_string();
        if !pid.is_empty() && pid.parse().map(process_gone).unwrap_or(true) {
            return (pid, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (pid, false)
}

fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(prog).is_file()))
}

/// Whether a TypeScript runtime Switchyard uses is there (deno, bun, or tsx through npx, which
/// may fetch it from npm once). With `SWITCHYARD_REQUIRE_TS=1` (set by `./dev test`) a missing
/// runtime fails the test instead of skipping it.
fn ts_runtime_available() -> bool {
    let ok = on_path("deno")
        || on_path("bun")
        || (on_path("npx")
            && Command::new("npx")
                .args(["--yes", "tsx", "--version"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()));
    if !ok && std::env::var("SWITCHYARD_REQUIRE_TS").is_ok_and(|v| v == "1") {
        panic!("SWITCHYARD_REQUIRE_TS=1 but none of deno, bun, npx tsx works");
    }
    ok
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/// The fixture as it is: one llm node calls a global tool and two agent tools of tools.sh in one
/// turn; each result is in the next request; the declarations come from the comment tags.
#[test]
fn bash_agent_tools_and_a_global_tool_run_and_their_results_reach_the_model() {
    let dir = agent(None);
    let replies = r#"
replies:
  - content: "Looking."
    tool_calls:
      - { id: c1, name: web_search, args: { query: rust, limit: 2, site: [docs.rs, crates.io] } }
      - { id: c2, name: classify_source, args: { url: "https://example.org/a b", kind: paper, tag: [a, b], strict: true } }
      - { id: c3, name: word_count, args: { text: "one two three" } }
  - content: "All done."
"#;
    let mut s = session(&dir, replies);
    s.run();
    assert_eq!(completed(&s), json!("Looking.\nAll done."));

    let tools = offered(&s);
    let names: Vec<&String> = tools.keys().collect();
    assert_eq!(names, ["web_search", "classify_source", "word_count"]);
    assert_eq!(
        tools["web_search"]["description"],
        json!("Search the web (a stand-in that answers from its arguments).")
    );
    assert_eq!(
        tools["web_search"]["parameters"],
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The search query"},
                "limit": {"type": "integer", "description": "How many results"},
                "site": {"type": "array", "items": {"type": "string"}, "description": "Only these sites"},
            },
            "required": ["query"],
        })
    );
    let classify = &tools["classify_source"]["parameters"];
    assert_eq!(
        classify["properties"]["kind"]["enum"],
        json!(["paper", "news", "blog"])
    );
    assert_eq!(classify["properties"]["strict"]["type"], json!("boolean"));
    assert_eq!(classify["required"], json!(["url", "kind"]));

    let msgs = tool_messages(&s);
    // The global tool wrote JSON to LLM_OUTPUT: it goes back as JSON text, and ran in the agent dir.
    let search: Value = serde_json::from_str(msgs["web_search"].as_str().unwrap()).unwrap();
    assert_eq!(
        search,
        json!({"query": "rust", "limit": 2, "sites": "docs.rs crates.io", "tool": "web_search", "cwd": "researcher"})
    );
    // The agent tool got the argc variables and llm-functions' command line.
    assert_eq!(
        msgs["classify_source"],
        json!(
            "url=https://example.org/a b\nverdict=high (strict)\ntags=a b\nargv=classify_source --url https://example.org/a b --kind paper --tag a --tag b --strict\nfunc=classify_source"
        )
    );
    // Nothing in LLM_OUTPUT: stdout is the result.
    assert_eq!(msgs["word_count"], json!("3"));

    let results = tool_results(&s.events());
    assert_eq!(results[0], ("web_search".into(), search, None));
    assert_eq!(results[2], ("word_count".into(), json!(3), None));
    // What the global tool said on stderr is in the run log.
    let logs: Vec<(String, String)> = s
        .events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::Log { source, text } => Some((source, text)),
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        [(
            "tool:web_search".to_string(),
            "searching for rust\n".to_string()
        )]
    );
}

/// A tool that fails, and arguments argc would refuse: the model sees each error (stderr
/// quoted), the run goes on.
#[test]
fn tool_failures_are_error_results_quoting_stderr() {
    let dir = agent(Some(&graph_with(
        &["fail_loudly", "classify_source", "web_search"],
        &["web_search.sh"],
        None,
    )));
    let replies = r#"
replies:
  - tool_calls:
      - { name: fail_loudly, args: {} }
      - { name: classify_source, args: { url: x, kind: video } }
      - { name: web_search, args: { limit: 2 } }
      - { name: web_search, args: { query: q, limit: lots } }
      - { name: web_search, args: { query: q, colour: red } }
  - content: "Handled."
"#;
    let mut s = session(&dir, replies);
    s.run();
    assert_eq!(completed(&s), json!("Handled."));
    let reqs = requests(&s);
    let texts: Vec<String> = reqs[1]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    let tools_sh = dir.join("tools.sh");
    assert_eq!(
        texts[0],
        format!(
            "Error: tool 'fail_loudly' ({}) failed with exit code 3; last lines of stderr:\ndisk on fire",
            tools_sh.display()
        )
    );
    assert_eq!(
        texts[1],
        "Error: tool 'classify_source': argument 'kind' must be one of paper, news, blog, got \"video\""
    );
    assert_eq!(
        texts[2],
        "Error: tool 'web_search': missing required argument 'query'"
    );
    assert_eq!(
        texts[3],
        "Error: tool 'web_search': argument 'limit' must be an integer, got \"lots\""
    );
    assert_eq!(
        texts[4],
        "Error: tool 'web_search': unknown argument 'colour' (it takes: query, limit, site)"
    );
    let errors = tool_results(&s.events())
        .into_iter()
        .filter(|r| r.2.is_some())
        .count();
    assert_eq!(errors, 5);
}

/// A tool that never ends is killed with its child when the run's time is up.
#[test]
fn a_hanging_tool_is_killed_with_its_children_at_the_run_deadline() {
    let dir = agent(Some(&graph_with(&["hang"], &[], Some(2))));
    let replies = "replies:\n  - tool_calls: [{ name: hang, args: {} }]\n  - content: never\n";
    let t0 = Instant::now();
    let mut s = session(&dir, replies);
    s.run();
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}");
    let results = tool_results(&s.events());
    let err = results[0].2.clone().unwrap_or_default();
    assert!(
        err.starts_with("tool 'hang' timed out after ")
            && err.ends_with("it and its child processes were killed"),
        "{err}"
    );
    assert!(
        matches!(
            s.status(),
            Status::Finished {
                status: RunStatus::Failed,
                ..
            }
        ),
        "{:?}",
        s.status()
    );
    let (pid, ended) = child_ends(&dir);
    assert!(!pid.is_empty(), "the tool did not start its child");
    assert!(ended, "child {pid} of the tool survived the timeout");
}

/// A stop ends a running tool at once, children included.
#[test]
fn a_stop_kills_a_running_tool_at_once() {
    let dir = agent(Some(&graph_with(&["hang"], &[], None)));
    let replies = "replies:\n  - tool_calls: [{ name: hang, args: {} }]\n  - content: never\n";
    let mut s = session(&dir, replies);
    let stop = s.stop_handle();
    let pid_file = dir.join("hang_child.pid");
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(10);
        while !pid_file.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
    });
    let t0 = Instant::now();
    s.run();
    assert!(
        t0.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t0.elapsed()
    );
    let results = tool_results(&s.events());
    let err = results[0].2.clone().unwrap_or_default();
    assert_eq!(
        err,
        "tool 'hang' was killed (with its child processes) because the run was stopped"
    );
    let (pid, ended) = child_ends(&dir);
    assert!(ended, "child {pid} of the tool survived the stop");
}

/// A global tool whose file is nowhere: offered with a bare schema, each call an error naming
/// every place looked at.
#[test]
fn a_missing_global_tool_names_the_paths_searched() {
    let dir = agent(Some(&graph_with(&["nowhere"], &["nowhere.sh"], None)));
    let replies = "replies:\n  - tool_calls: [{ name: nowhere, args: {} }]\n  - content: ok\n";
    let mut s = session(&dir, replies);
    s.run();
    completed(&s);
    assert_eq!(
        offered(&s)["nowhere"],
        json!({"name": "nowhere", "parameters": {"type": "object"}})
    );
    let msg = tool_messages(&s)["nowhere"].as_str().unwrap().to_string();
    let expected = dir
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("functions/tools/nowhere.sh");
    assert!(
        msg.starts_with("Error: global tool 'nowhere.sh' not found; looked in: "),
        "{msg}"
    );
    assert!(msg.contains(&expected.display().to_string()), "{msg}");
}

/// TypeScript agent tools run with the runtime script nodes use (deno, bun or `npx tsx`).
#[test]
fn typescript_tools_run_with_the_ts_runtime() {
    if !ts_runtime_available() {
        eprintln!("skipped: no TypeScript runtime (deno, bun or npx tsx) is available");
        return;
    }
    let dir = agent(Some(&graph_with(&["summarize", "explode"], &[], None)));
    let replies = r#"
replies:
  - tool_calls:
      - { name: summarize, args: { text: "the quick brown fox jumps", max_words: 2 } }
      - { name: summarize, args: { text: "a b c d e" } }
      - { name: explode, args: { reason: "on purpose" } }
  - content: "Summed up."
"#;
    let mut s = session(&dir, replies);
    s.run();
    assert_eq!(completed(&s), json!("Summed up."));
    let tools = offered(&s);
    assert_eq!(
        tools["summarize"]["description"],
        json!("Summarize a text in a few words.")
    );
    assert_eq!(
        tools["summarize"]["parameters"],
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text to summarize"},
                "max_words": {"type": "number", "description": "At most this many words"},
                "style": {"type": "string", "enum": ["plain", "bullet"], "description": "How to write it"},
            },
            "required": ["text"],
        })
    );
    let results = tool_results(&s.events());
    assert_eq!(
        results[0].1,
        json!({"summary": "the quick", "words": 2, "style": "plain", "cwd": "researcher"})
    );
    assert_eq!(
        results[1].1,
        json!({"summary": "a b c", "words": 3, "style": "plain", "cwd": "researcher"})
    );
    let err = results[2].2.clone().unwrap_or_default();
    assert!(
        err.starts_with("tool 'explode' (") && err.contains("exploded: on purpose"),
        "{err}"
    );
}

/// A JavaScript agent tool in the llm-functions form (`exports.f = function (args)` with an
/// `Args` typedef) gets its arguments as one object.
#[test]
fn javascript_tools_take_their_arguments_object() {
    if !on_path("node") && !ts_runtime_available() {
        eprintln!("skipped: neither node nor a TypeScript runtime is available");
        return;
    }
    let dir = agent(Some(&graph_with(&["shout"], &[], None)));
    let replies = "replies:\n  - tool_calls: [{ name: shout, args: { text: hey, times: 2 } }]\n  - content: ok\n";
    let mut s = session(&dir, replies);
    s.run();
    completed(&s);
    let tools = offered(&s);
    assert_eq!(
        tools["shout"]["parameters"]["properties"]["times"],
        json!({"type": "integer", "description": "How many times"})
    );
    assert_eq!(tools["shout"]["parameters"]["required"], json!(["text"]));
    assert_eq!(tool_messages(&s)["shout"], json!("HEY HEY"));
}

/// Tool calls are recorded in a cassette and answered from it on replay: the tool does not run
/// again (here it would fail).
#[test]
fn tool_calls_are_recorded_and_replayed() {
    let dir = agent(Some(&graph_with(&["web_search"], &["web_search.sh"], None)));
    let replies = "replies:\n  - tool_calls: [{ name: web_search, args: { query: cassette } }]\n  - content: recorded\n";
    let cassette = dir.join("run.cassette.json");
    let mut s = session_with(
        &dir,
        "rust",
        Box::new(Recorder::new(provider(replies), &cassette)),
    );
    s.run();
    assert_eq!(completed(&s), json!("recorded"));
    let first = tool_results(&s.events());
    assert_eq!(first[0].1["query"], json!("cassette"));

    let tool = dir
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("functions/tools/web_search.sh");
    // Same declaration, but `main` now fails.
    let text = std::fs::read_to_string(&tool).unwrap();
    std::fs::write(
        &tool,
        format!("{text}\nmain() {{ echo 'must not run' >&2; exit 9; }}\n"),
    )
    .unwrap();
    let mut r = session_with(
        &dir,
        "rust",
        Box::new(Replayer::load(&cassette, true).unwrap()),
    );
    r.run();
    assert_eq!(completed(&r), json!("recorded"));
    assert_eq!(tool_results(&r.events()), first);
}

/// A Python global tool in the llm-functions form (`def run(...)` with a docstring) runs through
/// the Python bridge and is named after its file.
#[test]
fn python_global_tools_run_their_run_function() {
    let dir = agent(Some(&graph_with(&["word_stats"], &["word_stats.py"], None)));
    let replies = "replies:\n  - tool_calls: [{ name: word_stats, args: { text: \"b a B c\", top: 1 } }]\n  - content: ok\n";
    let mut s = session(&dir, replies);
    s.run();
    completed(&s);
    let tools = offered(&s);
    let params = &tools["word_stats"]["parameters"];
    assert_eq!(params["required"], json!(["text"]));
    assert_eq!(params["properties"]["top"]["type"], json!("integer"));
    assert!(
        tools["word_stats"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Count the words of a text"),
        "{}",
        tools["word_stats"]
    );
    assert_eq!(
        tool_results(&s.events())[0].1,
        json!({"words": 4, "top": ["b"]})
    );
}

/// A recorded run keeps what its script node printed, what its rag node retrieved and how the
/// Python bridge described a tool: the replay runs none of it (the script now fails and writes
/// a marker, the document is gone, importing the tool writes the marker), says so, and ends the
/// same way, with the same trace.
#[test]
fn scripts_retrievals_and_tool_descriptions_are_recorded_and_replayed_without_running() {
    let graph = "name: researcher\nglobal_tools: [word_stats.py]\nstart: prep\nnodes:\n  prep:\n    type: script\n    script: scripts/prep.sh\n    next: look\n  look:\n    type: rag\n    documents: [notes.txt]\n    query: \"{{topic}}\"\n    top_k: 1\n    state_updates: { found: \"{{output.context}}\" }\n    next: research\n  research:\n    type: llm\n    prompt: \"{{found}}\"\n    tools: [word_stats]\n    max_iterations: 3\n    state_updates: { answer: \"{{output}}\" }\n    next: done\n  done: { type: end, output: \"{{topic}} {{answer}}\" }\n";
    let dir = agent(Some(graph));
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    let marker = dir.join("script-ran.marker");
    std::fs::write(
        dir.join("scripts/prep.sh"),
        format!("#!/usr/bin/env bash\necho ran >> '{}'\necho '{{\"topic\": \"kites\"}}'\n", marker.display()),
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "Kites fly best in a steady wind.\n\nBoats need water.\n").unwrap();
    let replies = "replies:\n  - tool_calls: [{ name: word_stats, args: { text: kites fly } }]\n  - content: recorded\n";
    let cassette = dir.join("run.cassette.json");
    let mut s = session_with(&dir, "go", Box::new(Recorder::new(provider(replies), &cassette)));
    s.run();
    assert_eq!(completed(&s), json!("kites recorded"), "{}", dump(&s));
    assert!(marker.exists(), "the script ran while recording");
    let prompts = requests(&s);
    assert!(prompts[0].iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains("steady wind"))), "{prompts:?}");

    // Everything the run touched is gone or broken now.
    std::fs::remove_file(&marker).unwrap();
    std::fs::write(
        dir.join("scripts/prep.sh"),
        format!("#!/usr/bin/env bash\necho replayed >> '{}'\nexit 7\n", marker.display()),
    )
    .unwrap();
    std::fs::remove_file(dir.join("notes.txt")).unwrap();
    // Importing the tool module now leaves a marker: describing or calling it would show.
    let tool = dir.parent().unwrap().parent().unwrap().join("functions/tools/word_stats.py");
    let code = std::fs::read_to_string(&tool).unwrap();
    std::fs::write(&tool, format!("open({:?}, 'a').write('imported')\n{code}", marker.display().to_string())).unwrap();

    let mut r = session_with(&dir, "go", Box::new(Replayer::load(&cassette, true).unwrap()));
    r.run();
    assert_eq!(completed(&r), json!("kites recorded"), "{}", dump(&r));
    assert!(!marker.exists(), "the script ran during the replay");
    assert_eq!(requests(&r), prompts, "the model saw something else on replay");
    assert_eq!(offered(&r), offered(&s), "the tool was described differently on replay");
    assert_eq!(tool_results(&r.events()), tool_results(&s.events()));
    // The same trace, but for times and run ids (and the text deltas a replay streams where
    // scripted replies come whole).
    let comparable = |s: &RunSession| -> Vec<Value> {
        s.events()
            .iter()
            .filter(|e| !matches!(e.body, EventBody::LlmDelta { .. }))
            .map(|e| {
                let mut v = e.to_value();
                for k in ["ts_ms", "run", "duration_ms"] {
                    v.as_object_mut().unwrap().remove(k);
                }
                v
            })
            .collect()
    };
    assert_eq!(comparable(&r), comparable(&s), "the replay's trace differs");
    let said = Replayer::load(&cassette, true).unwrap().describe();
    assert!(said.contains("scripts, hooks, tools and retrievals answered from it, nothing runs"), "{said}");
}
