//! Faults in runs (issue 8, item 3):
//! - Ctrl-C (SIGINT) or SIGTERM to `switchyard run` while any node works (a script with
//!   children and grandchildren, a Python tool that started a subprocess, an MCP server busy
//!   in a call) ends the run with status 130 and leaves no process behind;
//! - a script that hangs, forks and floods its output is killed at its timeout with its whole
//!   process group; one that prints more than the output limit is a clear error;
//! - LLM servers that stall, reset the connection or send garbage give node errors naming
//!   the node and the cause, in both dialects;
//! - a sub-agent that fails is an error of the parent's node (or its fallback), never a crash.

use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::fake_llm::{FakeLlm, Reply};
use switchyard::doc;
use switchyard::llm::LiveProvider;
use switchyard::run::events::{EventBody, RunStatus};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::BoxProvider;
use switchyard::run::session::{RunOptions, RunSession, Status};
use test_support::run::scripted;
use test_support::{TempDir, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

// ---- processes ----------------------------------------------------------------------------------

/// (pid, parent pid, state) of every process.
fn processes() -> Vec<(i32, i32, char)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        let mut f = rest.split_whitespace();
        let state = f.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = f.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        out.push((pid, ppid, state));
    }
    out
}

/// Every live descendant of `root`.
fn descendants(root: i32) -> BTreeSet<i32> {
    let procs = processes();
    let mut found = BTreeSet::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid, state) in &procs {
            if ppid == p && state != 'Z' && found.insert(pid) {
                frontier.push(pid);
            }
        }
    }
    found
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rfind(')').and_then(|i| stat[i + 2..].chars().next()).is_some_and(|s| s != 'Z'),
        Err(_) => false,
    }
}

/// Live processes whose command line contains `marker`.
fn with_marker(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains(marker)
            && alive(pid)
        {
            out.push(pid);
        }
    }
    out
}

fn unique(tag: &str) -> String {
    format!("sy-fault-{tag}-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos())
}

// ---- stopping a CLI run at every node -----------------------------------------------------------

/// A Loki agent whose every node keeps processes busy: `work` is a script with a child and a
/// grandchild, `tool` calls a Python tool that starts a subprocess, `remote` calls an MCP
/// server's slow tool. Each names its processes with `marker` and leaves a `started-<node>`
/// file once they are up. The run starts at `first`.
fn busy_agent(root: &Path, marker: &str, first: &str) -> PathBuf {
    let dir = root.join("agents/busy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(root.join("functions")).unwrap();
    let server = Path::new(ROOT).join("tests/fixtures/mcp/stdio_server.py");
    std::fs::write(
        root.join("functions/mcp.json"),
        json!({"mcpServers": {"slowsrv": {"command": "python3", "args": [server, "--name", format!("{marker}-mcp")], "timeout": 600}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("graph.yaml"),
        format!(
            r#"version: "1.0"
name: busy
model: openai:gpt-4o-mini
mcp_servers: [slowsrv]
start: {first}
nodes:
  work: {{ type: script, script: work.sh, timeout: 600, next: tool }}
  tool: {{ type: llm, prompt: "nap", tools: [nap], next: remote }}
  remote: {{ type: llm, prompt: "wait", tools: ["mcp:slowsrv"], next: done }}
  done: {{ type: end }}
"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("work.sh"),
        format!(
            "bash -c 'exec -a {marker}-child sleep 3000' &\n\
             bash -c \"bash -c 'exec -a {marker}-grandchild sleep 3000' & wait\" &\n\
             sleep 0.2\ntouch started-work\nexec -a {marker}-script sleep 3000\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("tools.py"),
        format!(
            "import subprocess, time\n\n\
             def nap() -> str:\n    \"\"\"Sleep a long time.\"\"\"\n    \
             subprocess.Popen(['{marker}-pychild', '3000'], executable='/bin/sleep')\n    \
             open({started:?}, 'w').close()\n    time.sleep(3000)\n    return 'rested'\n",
            started = dir.join("started-tool").display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("replies.yaml"),
        "replies:\n  - node: tool\n    tool_calls: [{name: nap, args: {}}]\n  - node: tool\n    content: rested\n  \
         - node: remote\n    tool_calls: [{name: slow, args: {seconds: 3000}}]\n  - node: remote\n    content: done\n",
    )
    .unwrap();
    dir
}

fn stop_cli_run_during(node: &str, signal: rustix::process::Signal) {
    let root = TempDir::new(&format!("faults-stop-{node}"));
    let marker = unique(node);
    let dir = busy_agent(&root, &marker, node);
    let started = dir.join(format!("started-{node}"));
    let mut child = Command::new(BIN)
        .args(["run", "--trust"])
        .arg(dir.join("graph.yaml"))
        .args(["--llm-script"])
        .arg(dir.join("replies.yaml"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // The MCP node has no file to leave: it is busy once its server has been asked to call.
    let busy = || {
        if node == "remote" {
            !with_marker(&format!("{marker}-mcp")).is_empty()
        } else {
            started.exists()
        }
    };
    if !wait_until(Duration::from_secs(30), busy) {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!("node `{node}` never started:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    if node == "remote" {
        std::thread::sleep(Duration::from_millis(1500));
    }
    let family = descendants(pid);
    assert!(!family.is_empty(), "the run has no child processes while `{node}` works");
    let t0 = Instant::now();
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid).unwrap(), signal).unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("`switchyard run` did not end within 15 s of the signal during `{node}`");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t0.elapsed();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(130), "stopped during `{node}`: {stderr}");
    assert!(took < Duration::from_secs(5), "stopping during `{node}` took {took:?}");
    let left = || family.iter().copied().filter(|p| alive(*p)).collect::<Vec<_>>();
    assert!(wait_until(Duration::from_secs(3), || left().is_empty()), "after a stop during `{node}`, still running: {:?}", left());
    assert!(with_marker(&marker).is_empty(), "processes named {marker} survived: {:?}", with_marker(&marker));
}

#[test]
fn ctrl_c_during_a_script_with_children_leaves_no_process() {
    stop_cli_run_during("work", rustix::process::Signal::INT);
}

#[test]
fn ctrl_c_during_a_python_tool_with_a_subprocess_leaves_no_process() {
    if Command::new("python3").arg("-V").output().is_err() {
        return;
    }
    stop_cli_run_during("tool", rustix::process::Signal::INT);
}

#[test]
fn sigterm_during_an_mcp_call_leaves_no_process() {
    if Command::new("python3").arg("-V").output().is_err() {
        return;
    }
    stop_cli_run_during("remote", rustix::process::Signal::TERM);
}

// ---- scripts that misbehave ---------------------------------------------------------------------

const NO_REPLIES: &str = "replies: []\n";

fn loki_session(dir: &Path, graph: &str, files: &[(&str, &str)], provider: BoxProvider) -> RunSession {
    std::fs::write(dir.join("graph.yaml"), graph).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let d = Arc::new(doc::load_path(&dir.join("graph.yaml")));
    assert!(!d.diagnostics.iter().any(|x| x.is_error()), "{:?}", d.diagnostics);
    launch::session(d, &RunRequest { input: Some("hi".into()), ..Default::default() }, RunOptions::new(provider))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn failed(s: &mut RunSession) -> (Option<String>, String) {
    match s.run().clone() {
        Status::Finished { status: RunStatus::Failed, .. } => s.failure().cloned().expect("a failure"),
        other => panic!("expected a failed run, got {other:?}"),
    }
}

#[test]
fn a_hanging_forking_flooding_script_is_killed_at_its_timeout_with_its_group() {
    let dir = TempDir::new("faults-flood");
    let marker = unique("flood");
    let graph = "version: \"1.0\"\nname: flood\nstart: flood\nnodes:\n  flood: { type: script, script: flood.sh, timeout: 1, next: done }\n  done: { type: end }\n";
    let script = format!(
        "bash -c 'exec -a {marker}-child sleep 3000' &\n\
         bash -c \"bash -c 'exec -a {marker}-grandchild sleep 3000' & wait\" &\n\
         yes 'a line of output that never ends'\n"
    );
    let mut s = loki_session(&dir, graph, &[("flood.sh", &script)], scripted(NO_REPLIES));
    let t0 = Instant::now();
    let (node, message) = failed(&mut s);
    let took = t0.elapsed();
    assert_eq!(node.as_deref(), Some("flood"));
    assert!(message.contains("timed out after 1"), "{message}");
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert!(wait_until(Duration::from_secs(2), || with_marker(&marker).is_empty()), "{:?} survived", with_marker(&marker));
}

#[test]
fn a_script_that_prints_too_much_is_a_clear_error() {
    let dir = TempDir::new("faults-big");
    let graph = "version: \"1.0\"\nname: big\nstart: big\nnodes:\n  big: { type: script, script: big.sh, next: done }\n  done: { type: end }\n";
    // 20 MB on stdout, then a normal exit.
    let script = "head -c 20000000 /dev/zero | tr '\\0' 'x'\n";
    let mut s = loki_session(&dir, graph, &[("big.sh", script)], scripted(NO_REPLIES));
    let (node, message) = failed(&mut s);
    assert_eq!(node.as_deref(), Some("big"));
    assert!(message.contains("big.sh") && message.contains("more than 8 MiB on stdout"), "{message}");
}

// ---- LLM servers that misbehave -----------------------------------------------------------------

const LOKI_LLM: &str = r#"version: "1.0"
name: asker
model: openai:gpt-4o-mini
start: answer
nodes:
  answer:
    type: llm
    prompt: "{{initial_prompt}}"
    max_attempts: 1
    state_updates: { reply: "{{output}}" }
    next: done
  done: { type: end }
"#;

const SHERMA_LLM: &str = r#"manifest_version: 1
llms:
  - id: gpt
    provider: openai
    model_name: gpt-4o-mini
default_llm: {id: gpt}
agents:
  a:
    state:
      fields:
        - {name: messages, type: list, default: []}
    graph:
      entry_point: ask
      nodes:
        - name: ask
          type: call_llm
          args:
            prompt:
              - {role: messages, content: state.messages}
            state_updates:
              messages: '[llm_response]'
      edges:
        - {source: ask, target: __end__}
"#;

fn bad_servers() -> Vec<(&'static str, Reply, &'static str)> {
    vec![
        ("stall", Reply::Stall, "no complete answer within 0.6 s"),
        (
            "reset",
            Reply::SseThenReset { events: vec![(None, json!({"choices": [{"index": 0, "delta": {"content": "par"}}]}).to_string())] },
            "broke during the answer",
        ),
        ("garbage", Reply::Garbage, "not JSON"),
    ]
}

#[test]
fn llm_servers_that_stall_reset_or_send_garbage_fail_the_node_clearly() {
    let fake = FakeLlm::start();
    for (what, reply, text) in bad_servers() {
        // Loki: one attempt, no fallback: the run fails at the node.
        fake.set_default(reply.clone());
        let dir = TempDir::new(&format!("faults-loki-{what}"));
        let mut s = loki_session(&dir, LOKI_LLM, &[], Box::new(LiveProvider::new(fake.config("sk-faults", 0.6))));
        let t0 = Instant::now();
        let (node, message) = failed(&mut s);
        assert_eq!(node.as_deref(), Some("answer"), "{what}: {message}");
        assert!(message.contains(text), "{what}: expected `{text}` in: {message}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{what} took {:?}", t0.elapsed());

        // sherma: the default retry policy retries transient failures, then the node fails.
        let dir = TempDir::new(&format!("faults-sherma-{what}"));
        std::fs::write(dir.join("agent.yaml"), SHERMA_LLM).unwrap();
        let d = Arc::new(doc::load_path(&dir.join("agent.yaml")));
        let mut s = launch::session(d, &RunRequest { input: Some("hi".into()), ..Default::default() }, RunOptions::new(Box::new(LiveProvider::new(fake.config("sk-faults", 0.6)))))
            .unwrap_or_else(|e| panic!("{e}"));
        let (node, message) = failed(&mut s);
        assert_eq!(node.as_deref(), Some("ask"), "{what}: {message}");
        assert!(message.contains(text), "{what}: expected `{text}` in: {message}");
        let errors = s.events().iter().filter(|e| matches!(e.body, EventBody::LlmError { .. })).count();
        assert!(errors >= 1, "{what}: the failed call is an llm_error event");
    }
    fake.stop();
}

// ---- sub-agents that fail -----------------------------------------------------------------------

const PARENT: &str = r#"manifest_version: 1
sub_agents:
  - id: helper
    version: "1.0.0"
    yaml_path: helper.yaml
agents:
  boss:
    state:
      fields:
        - {name: messages, type: list, default: []}
        - {name: outcome, type: str, default: ""}
    graph:
      entry_point: delegate
      nodes:
        - name: delegate
          type: call_agent
          args:
            agent: { id: helper, version: "1.0.0" }
            input: '"do it"'
          on_error:
            fallback: recover
        - name: recover
          type: set_state
          args:
            values:
              outcome: '"recovered"'
      edges:
        - {source: delegate, target: __end__}
        - {source: recover, target: __end__}
"#;

const HELPER: &str = r#"manifest_version: 1
agents:
  helper:
    state:
      fields:
        - {name: messages, type: list, default: []}
        - {name: n, type: int, default: 0}
    graph:
      entry_point: crash
      nodes:
        - name: crash
          type: set_state
          args:
            values:
              n: 'state.n / 0'
      edges:
        - {source: crash, target: __end__}
"#;

#[test]
fn a_failing_sub_agent_is_an_error_of_the_parents_node_never_a_crash() {
    let dir = TempDir::new("faults-sub");
    std::fs::write(dir.join("helper.yaml"), HELPER).unwrap();
    // With a fallback the parent goes on and completes.
    std::fs::write(dir.join("boss.yaml"), PARENT).unwrap();
    let d = Arc::new(doc::load_path(&dir.join("boss.yaml")));
    let mut s = launch::session(d, &RunRequest { input: Some("go".into()), ..Default::default() }, RunOptions::new(scripted(NO_REPLIES)))
        .unwrap_or_else(|e| panic!("{e}"));
    match s.run().clone() {
        Status::Finished { status: RunStatus::Completed, .. } => {}
        other => panic!("the parent should recover: {other:?} {:?}", s.failure()),
    }
    assert_eq!(s.state()["outcome"], "recovered");
    let errors: Vec<String> = s
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Error { node, message, .. } => Some(format!("{} {node:?} {message}", e.run)),
            _ => None,
        })
        .collect();
    assert!(errors.iter().any(|e| e.contains("crash")), "the sub-agent's failing node is named: {errors:?}");

    // Without a fallback the parent's run fails at its node, naming the sub-agent's node.
    std::fs::write(dir.join("boss.yaml"), PARENT.replace("          on_error:\n            fallback: recover\n", "")).unwrap();
    let d = Arc::new(doc::load_path(&dir.join("boss.yaml")));
    let mut s = launch::session(d, &RunRequest { input: Some("go".into()), ..Default::default() }, RunOptions::new(scripted(NO_REPLIES)))
        .unwrap_or_else(|e| panic!("{e}"));
    let (node, message) = failed(&mut s);
    assert_eq!(node.as_deref(), Some("delegate"), "{message}");
    assert!(message.contains("crash") || message.contains("helper"), "{message}");

    // Loki: an agent node whose sub-agent's script fails (Loki agent nodes have no fallback):
    // the parent's run fails at that node, saying why the child failed.
    let root = TempDir::new("faults-loki-sub").sub("agents");
    for (name, graph, files) in [
        (
            "parent",
            "version: \"1.0\"\nname: parent\nstart: call\nnodes:\n  call: { type: agent, agent: child, prompt: hi, next: done }\n  done: { type: end, output: fine }\n",
            vec![],
        ),
        (
            "child",
            "version: \"1.0\"\nname: child\nstart: boom\nnodes:\n  boom: { type: script, script: boom.sh, next: done }\n  done: { type: end }\n",
            vec![("boom.sh", "echo 'the child broke' >&2\nexit 3\n")],
        ),
    ] {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("graph.yaml"), graph).unwrap();
        for (f, t) in files {
            std::fs::write(d.join(f), t).unwrap();
        }
    }
    let d = Arc::new(doc::load_path(&root.join("parent/graph.yaml")));
    let mut s = launch::session(d, &RunRequest::default(), RunOptions::new(scripted(NO_REPLIES))).unwrap_or_else(|e| panic!("{e}"));
    let (node, message) = failed(&mut s);
    assert_eq!(node.as_deref(), Some("call"), "{message}");
    assert!(message.contains("boom") && message.contains("the child broke"), "{message}");
}
