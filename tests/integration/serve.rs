//! `switchyard serve` as its users meet it: the real CLI binary listening on 127.0.0.1, driven
//! over HTTP by LangGraph's own Python SDK (`langgraph-sdk` from PyPI, which `./dev test`
//! installs) and by plain requests; tokens; answers taken exactly once; the debugger event
//! stream resumed with `Last-Event-ID`; `kill -9` of the server in the middle of runs.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use test_support::process::Proc;
use test_support::temp::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A server process; killed (SIGKILL) when dropped.
struct Server {
    p: Proc,
    url: String,
}

impl Server {
    fn start(agents: &Path, db: &Path, extra: &[&str]) -> Server {
        Server::try_start(agents, db, extra).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_start(agents: &Path, db: &Path, extra: &[&str]) -> Result<Server, String> {
        let stderr = db.with_extension(format!("stderr.{}", std::process::id() as u64 * 1000 + rand_suffix()));
        let mut c = Command::new(BIN);
        c.args(["serve", "--agents"])
            .arg(agents)
            .args(["--listen", "127.0.0.1:0", "--db"])
            .arg(db)
            .args(extra)
            .env("SWITCHYARD_PROVIDERS", db.with_file_name("no-providers.yaml"));
        // Generous: a loaded 2-core machine starts a debug binary slowly.
        let (p, url) = test_support::process::spawn_until(c, stderr, "listening on ", Duration::from_secs(60))?;
        Ok(Server { p, url })
    }

    fn pid(&self) -> u32 {
        self.p.pid()
    }

    fn log(&self) -> String {
        self.p.log()
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// One HTTP request: (status, JSON body or the text as a JSON string).
fn call(method: &str, url: &str, body: Option<Value>, token: Option<&str>) -> (u16, Value) {
    test_support::process::call(method, url, body, token, Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e}"))
}

fn get(url: &str) -> Value {
    let (s, v) = call("GET", url, None, None);
    assert_eq!(s, 200, "GET {url}: {v}");
    v
}

fn post(url: &str, body: Value) -> Value {
    let (s, v) = call("POST", url, Some(body), None);
    assert!((200..300).contains(&s), "POST {url}: {s} {v}");
    v
}

/// The example agents, copied (runs write nothing there, but a test owns its files).
fn example_agents(t: &TempDir) -> PathBuf {
    let to = t.join("agents");
    test_support::temp::copy_dir(&repo().join("agents"), &to);
    to
}

/// A Python with `langgraph_sdk`: `$SWITCHYARD_LANGGRAPH_PYTHON` (`./dev test` makes one), else
/// a `python3` that can import it.
fn langgraph_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SWITCHYARD_LANGGRAPH_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let ok = Command::new("python3").args(["-c", "import langgraph_sdk"]).output().is_ok_and(|o| o.status.success());
    ok.then(|| PathBuf::from("python3"))
}

#[test]
fn langgraph_sdk_streams_a_sherma_interrupt_resumes_it_and_answers_a_loki_approval() {
    let Some(python) = langgraph_python() else {
        assert!(
            std::env::var_os("SWITCHYARD_REQUIRE_LANGGRAPH").is_none(),
            "langgraph-sdk is required here (SWITCHYARD_REQUIRE_LANGGRAPH) but no Python has it"
        );
        eprintln!("skipped: no Python with langgraph-sdk (`./dev test` installs one)");
        return;
    };
    let t = TempDir::new("serve-sdk");
    let agents = example_agents(&t);
    let s = Server::start(&agents, &t.join("server.sqlite"), &[]);
    let out = Command::new(&python).arg(repo().join("tests/serve/langgraph_client.py")).arg(&s.url).output().unwrap();
    assert!(
        out.status.success(),
        "the SDK client failed:\n{}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        s.log()
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["assistants"], json!(["release-gate", "research-desk.researcher", "research-desk.writer", "support-triage"]));
    assert!(v["graph_nodes"].as_array().unwrap().iter().any(|n| n == "answer"), "{}", v["graph_nodes"]);
    // The stream: metadata, values after each step, updates per node, the interrupt.
    let first: Vec<&str> = v["first_events"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert_eq!(first[0], "metadata");
    assert!(first.contains(&"values") && first.contains(&"updates"), "{first:?}");
    let interrupt = &v["first_interrupt"][0];
    assert_eq!(interrupt["id"], "confirm#1");
    assert!(interrupt["value"].as_str().unwrap().contains("Order 1001 shipped"), "{interrupt}");
    assert_eq!(v["state_next"], json!(["confirm"]));
    assert_eq!(v["state_task_interrupts"], json!(["confirm#1"]));
    assert_eq!(v["thread_status_waiting"], "interrupted");
    // Resumed with Command(resume=...): the answer is the human message, the run ends.
    let msgs = v["final_messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap(), &json!(["human", "no thanks, done"]));
    assert_eq!(msgs[0], json!(["human", "Where is order 1001?"]));
    assert_eq!(v["thread_status_done"], "idle");
    // History: one checkpoint per step, newest first, down to the input.
    let steps: Vec<u64> = v["history_steps"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    assert_eq!(steps.last(), Some(&0));
    assert!(steps.windows(2).all(|w| w[0] == w[1] + 1), "{steps:?}");
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
    assert_eq!(v["runs"][0][1], "success");
    // The Loki approval, answered through /switchyard/, recorded with who answered.
    let approval = &v["approval"][0];
    assert_eq!(approval["id"], "approve#1");
    assert_eq!(approval["value"]["options"], json!(["ship", "hold"]));
    assert_eq!(v["answer_status"], 200);
    assert_eq!(v["joined_decision"], "ship");
    assert_eq!(v["loki_run_status"], "success");
    assert_eq!(v["audit"], json!([["approve#1", "ship", "sdk test (token local)"]]));
    // The LLLM agent, run to its answer.
    assert_eq!(v["lllm_delivery"], "<answer>Mont Blanc is 4,806 m high (2021 survey) [reference notes].</answer>");
    assert_eq!((v["lllm_state"].as_str(), v["lllm_run_status"].as_str()), (Some("success"), Some("success")));
}

#[test]
fn tokens_guard_every_request_and_name_who_answered() {
    let t = TempDir::new("serve-tokens");
    let agents = example_agents(&t);
    let db = t.join("server.sqlite");
    // No token: a public address is refused.
    let out = Command::new(BIN)
        .args(["serve", "--agents"])
        .arg(&agents)
        .args(["--listen", "0.0.0.0:0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refusing to listen on 0.0.0.0") && err.contains("switchyard token create"), "{err}");
    let token_cmd = |args: &[&str]| {
        let o = Command::new(BIN).arg("token").args(args).arg("--db").arg(&db).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).trim().to_string(), String::from_utf8_lossy(&o.stderr).to_string())
    };
    let (code, alice, _) = token_cmd(&["create", "alice"]);
    assert_eq!(code, Some(0));
    assert!(alice.starts_with("sy_"), "{alice}");
    let (_, bob, _) = token_cmd(&["create", "bob"]);
    let s = Server::start(&agents, &db, &[]);
    assert_eq!(call("GET", &format!("{}/ok", s.url), None, None).0, 200, "liveness needs no token");
    let (status, body) = call("POST", &format!("{}/assistants/search", s.url), Some(json!({})), None);
    assert_eq!(status, 401, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("token"), "{body}");
    assert_eq!(call("POST", &format!("{}/assistants/search", s.url), Some(json!({})), Some("sy_wrong")).0, 401);
    let (status, list) = call("POST", &format!("{}/assistants/search", s.url), Some(json!({})), Some(&alice));
    assert_eq!((status, list.as_array().map(Vec::len)), (200, Some(4)), "the examples' four assistants: {list}");
    // x-api-key (what LangGraph's SDKs send) works too.
    let xkey = {
        let (url, key) = (format!("{}/info", s.url), bob.clone());
        switchyard::rt::block_on(async move { reqwest::Client::new().get(url).header("x-api-key", key).send().await.unwrap().status().as_u16() })
    };
    assert_eq!(xkey, 200);
    // A run started with alice's token, its approval answered with bob's: the log says bob.
    let (status, waited) = call(
        "POST",
        &format!("{}/runs/wait", s.url),
        Some(json!({"assistant_id": "release-gate", "input": "release 2.0"})),
        Some(&alice),
    );
    assert_eq!(status, 200, "{waited}");
    let (_, runs) = call("GET", &format!("{}/switchyard/runs?status=interrupted", s.url), None, Some(&alice));
    let run = runs[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(runs[0]["started_by"], "alice");
    let (status, _) = call("POST", &format!("{}/switchyard/runs/{run}/answer", s.url), Some(json!({"answer": "hold"})), Some(&bob));
    assert_eq!(status, 200);
    let (_, audit) = call("GET", &format!("{}/switchyard/answers", s.url), None, Some(&alice));
    assert_eq!(audit[0]["who"], "bob");
    // Revoked: refused at once.
    assert_eq!(token_cmd(&["revoke", "bob"]).0, Some(0));
    assert_eq!(call("GET", &format!("{}/info", s.url), None, Some(&bob)).0, 401);
    let (_, listed, _) = token_cmd(&["list"]);
    assert!(listed.contains("alice") && listed.contains("live") && listed.contains("revoked"), "{listed}");
    assert!(!listed.contains(&alice) && !listed.contains(&bob), "the list never shows a token");
    assert_eq!(token_cmd(&["revoke", "nobody"]).0, Some(2));
}

/// A Loki agent that works a while (a script sleeping `secs`), then asks for approval.
pub(crate) fn slow_gate(dir: &Path, secs: &str) -> PathBuf {
    let agent = dir.join("agents/gate");
    std::fs::create_dir_all(agent.join("scripts")).unwrap();
    std::fs::write(
        agent.join("graph.yaml"),
        "name: gate\nversion: \"1.0\"\nstart: work\ninitial_state:\n  n: 0\nnodes:\n  work:\n    type: script\n    script: scripts/work.sh\n    next: more\n  more:\n    type: script\n    script: scripts/work.sh\n    next: ask\n  ask:\n    type: approval\n    question: \"Go on after {{n}} steps?\"\n    options: [\"go\", \"stop\"]\n    routes:\n      go: done\n      stop: done\n    on_other: done\n    state_updates:\n      choice: \"{{choice}}\"\n  done:\n    type: end\n    output: \"{{choice}} after {{n}}\"\n",
    )
    .unwrap();
    let script = agent.join("scripts/work.sh");
    std::fs::write(
        &script,
        format!("#!/usr/bin/env bash\nsleep {secs}\nn=$(printf '%s' \"$GRAPH_STATE\" | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"n\"])')\necho \"{{\\\"n\\\": $((n + 1))}}\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir.join("agents")
}

#[test]
fn an_answer_is_taken_once_and_a_refused_one_is_not_logged() {
    let t = TempDir::new("serve-once");
    let agents = example_agents(&t);
    let s = Server::start(&agents, &t.join("server.sqlite"), &[]);
    post(&format!("{}/runs/wait", s.url), json!({"assistant_id": "release-gate", "input": "release 3"}));
    let runs = get(&format!("{}/switchyard/runs?status=interrupted", s.url));
    let run = runs[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(runs[0]["question"]["kind"], "approval");
    assert!(runs[0]["state"]["summary"].is_string(), "the inbox sees the state the question refers to: {}", runs[0]);
    // Free text goes to on_other → the `note` input, whose validation refuses "ok".
    let url = format!("{}/switchyard/runs/{run}/answer", s.url);
    assert_eq!(call("POST", &url, Some(json!({"answer": "let me write notes"})), None).0, 200);
    let wait_for = |want: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = get(&format!("{}/switchyard/runs/{run}", s.url));
            if r["status"] == want {
                return r;
            }
            assert!(Instant::now() < deadline, "run never became {want}: {r}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let r = wait_for("interrupted");
    assert_eq!(r["question"]["kind"], "input");
    assert_eq!(r["question"]["validation"], "len(input) >= 3");
    let (status, body) = call("POST", &url, Some(json!({"answer": "ok"})), None);
    assert_eq!(status, 422, "{body}");
    assert_eq!(get(&format!("{}/switchyard/answers?run_id={run}", s.url)).as_array().unwrap().len(), 1, "a refused answer is not logged");
    // Eight answers at once: exactly one is taken.
    let codes: Vec<u16> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..8)
            .map(|i| {
                let url = url.clone();
                sc.spawn(move || call("POST", &url, Some(json!({"answer": format!("notes from writer {i}")})), None).0)
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 1, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 200 || *c == 409), "{codes:?}");
    let r = wait_for("completed");
    let answers = get(&format!("{}/switchyard/answers?run_id={run}", s.url));
    assert_eq!(answers.as_array().unwrap().len(), 2);
    let notes = answers[1]["answer"].as_str().unwrap();
    assert!(r["output"].as_str().unwrap().starts_with("Shipped."), "{r}");
    assert!(notes.starts_with("notes from writer"));
    // Answering an ended run is a conflict, an unknown one not found.
    assert_eq!(call("POST", &url, Some(json!({"answer": "again"})), None).0, 409);
    assert_eq!(call("POST", &format!("{}/switchyard/runs/nope/answer", s.url), Some(json!({"answer": "x"})), None).0, 404);
}

/// Read a debugger event stream until `stop` says so or it ends: `(id, event name)`s.
fn read_events(url: &str, last_id: Option<u64>, stop: impl Fn(&[(u64, String)]) -> bool + Send + 'static) -> Vec<(u64, String)> {
    use futures_util::StreamExt;
    let url = url.to_string();
    switchyard::rt::block_on(async move {
        let mut r = reqwest::Client::new().get(&url);
        if let Some(id) = last_id {
            r = r.header("Last-Event-ID", id.to_string());
        }
        let resp = r.send().await.unwrap();
        let mut body = resp.bytes_stream();
        let mut buf = String::new();
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
        loop {
            let chunk = match tokio::time::timeout_at(deadline, body.next()).await {
                Ok(Some(Ok(c))) => c,
                _ => return got,
            };
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block = buf[..end].to_string();
                buf.drain(..end + 2);
                let id = block.lines().find_map(|l| l.strip_prefix("id: ")).and_then(|s| s.parse::<u64>().ok());
                let data = block.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("");
                if let Some(id) = id {
                    let v: Value = serde_json::from_str(data).unwrap();
                    got.push((id, v["event"].as_str().unwrap_or("").to_string()));
                } else if block.contains("event: end") {
                    return got;
                }
                if stop(&got) {
                    return got;
                }
            }
        }
    })
}

#[test]
fn the_debugger_event_stream_resumes_after_the_last_event_id_without_gaps() {
    let t = TempDir::new("serve-events");
    let agents = slow_gate(t.path(), "0.2");
    let s = Server::start(&agents, &t.join("server.sqlite"), &[]);
    let run = post(&format!("{}/runs", s.url), json!({"assistant_id": "gate"}))["run_id"].as_str().unwrap().to_string();
    let events = format!("{}/switchyard/runs/{run}/events", s.url);
    // Disconnect after the first node's exit, while the run works on.
    let first = read_events(&events, None, |got| got.iter().any(|(_, e)| e == "node_exit"));
    let last = first.last().unwrap().0;
    assert_eq!(first.first().unwrap(), &(1, "run_started".to_string()));
    // Answer once it waits; the resumed stream goes to the end of the run.
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(&format!("{}/switchyard/runs/{run}", s.url))["status"] != "interrupted" {
        assert!(Instant::now() < deadline, "the run never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    post(&format!("{}/switchyard/runs/{run}/answer", s.url), json!({"answer": "go"}));
    let rest = read_events(&events, Some(last), |_| false);
    let ids: Vec<u64> = first.iter().chain(rest.iter()).map(|(i, _)| *i).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "numbered without gaps or repeats: {ids:?}");
    assert_eq!(rest.first().map(|x| x.0), Some(last + 1));
    let names: Vec<&str> = rest.iter().map(|(_, e)| e.as_str()).collect();
    assert!(names.contains(&"interrupt") && names.last() == Some(&"run_finished"), "{names:?}");
    assert_eq!(get(&format!("{}/switchyard/runs/{run}", s.url))["output"], "go after 2");
    // The whole log again from the start: the same numbers.
    let all = read_events(&events, Some(0), |_| false);
    assert_eq!(all.iter().map(|x| x.0).collect::<Vec<_>>(), ids);
}

#[test]
fn kill_9_in_the_middle_of_runs_loses_no_run_and_no_answer() {
    let t = TempDir::new("serve-kill");
    let agents = slow_gate(t.path(), "0.3");
    let db = t.join("server.sqlite");
    let s = Server::start(&agents, &db, &[]);
    let n = 12;
    let ids: Vec<String> = (0..n)
        .map(|_| post(&format!("{}/runs", s.url), json!({"assistant_id": "gate"}))["run_id"].as_str().unwrap().to_string())
        .collect();
    // Wait until some runs wait for an answer while others still work, answer a few, then kill.
    let deadline = Instant::now() + Duration::from_secs(90);
    let waiting = loop {
        let w = get(&format!("{}/switchyard/runs?status=interrupted", s.url));
        if w.as_array().unwrap().len() >= 3 {
            break w;
        }
        assert!(Instant::now() < deadline, "no run reached its approval");
        std::thread::sleep(Duration::from_millis(20));
    };
    let answered: Vec<String> = waiting.as_array().unwrap().iter().take(2).map(|r| r["run_id"].as_str().unwrap().to_string()).collect();
    for r in &answered {
        post(&format!("{}/switchyard/runs/{r}/answer", s.url), json!({"answer": "stop"}));
    }
    rustix::process::kill_process(rustix::process::Pid::from_raw(s.pid() as i32).unwrap(), rustix::process::Signal::KILL).unwrap();
    drop(s);
    // Restarted on the same store: unfinished runs go on, waiting ones wait.
    let s = Server::start(&agents, &db, &[]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut given: std::collections::BTreeSet<String> = answered.iter().cloned().collect();
    loop {
        let all = get(&format!("{}/switchyard/runs", s.url));
        let mut done = 0;
        for r in all.as_array().unwrap() {
            let id = r["run_id"].as_str().unwrap().to_string();
            match r["status"].as_str().unwrap() {
                "completed" => done += 1,
                "interrupted" if !given.contains(&id) => {
                    post(&format!("{}/switchyard/runs/{id}/answer", s.url), json!({"answer": "go"}));
                    given.insert(id);
                }
                "failed" | "stopped" => panic!("run {id} ended badly after the restart: {r}\n{}", s.log()),
                _ => {}
            }
        }
        if done == n {
            break;
        }
        assert!(Instant::now() < deadline, "not every run finished after the restart: {all}\n{}", s.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every run answered exactly once; the two answered before the kill kept their answer.
    let audit = get(&format!("{}/switchyard/answers", s.url));
    assert_eq!(audit.as_array().unwrap().len(), n);
    for id in &ids {
        let r = get(&format!("{}/switchyard/runs/{id}", s.url));
        let want = if answered.contains(id) { "stop after 2" } else { "go after 2" };
        assert_eq!(r["output"], want, "{r}");
        assert_eq!(r["answers"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn the_cli_lists_a_servers_runs_and_answers_one() {
    let t = TempDir::new("serve-cli");
    let agents = example_agents(&t);
    let s = Server::start(&agents, &t.join("server.sqlite"), &[]);
    let run = post(&format!("{}/runs", s.url), json!({"assistant_id": "release-gate", "input": "release 4"}))["run_id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(&format!("{}/switchyard/runs/{run}", s.url))["status"] != "interrupted" {
        assert!(Instant::now() < deadline, "the run never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    let cli = |args: &[&str]| {
        let o = Command::new(BIN).args(args).env_remove("SWITCHYARD_TOKEN").output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).to_string(), String::from_utf8_lossy(&o.stderr).to_string())
    };
    let (code, out, err) = cli(&["runs", "--server", &s.url]);
    assert_eq!(code, Some(0), "{err}");
    let line = out.lines().find(|l| l.starts_with(&run)).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("release-gate") && line.contains("interrupted") && line.contains("approval approve:") && line.contains("[ship/hold]"), "{line}");
    let (code, _, err) = cli(&["answer", "--server", &s.url, &run, "hold", "--by", "carol"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("carol"), "{err}");
    let (code, _, err) = cli(&["answer", "--server", &s.url, &run, "ship"]);
    assert_eq!(code, Some(1), "a second answer is refused: {err}");
    assert!(err.contains("not waiting"), "{err}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, out, _) = cli(&["runs", "--server", &s.url, "list", "--json"]);
        let v: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        if v["status"] == "completed" {
            assert!(v["output"].as_str().unwrap().starts_with("Held:"), "{v}");
            break;
        }
        assert!(Instant::now() < deadline, "{v}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, _, err) = cli(&["answer", "--server", "ftp://x", &run, "a"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("http://"), "{err}");
    let (code, _, err) = cli(&["answer", "--server", &test_support::http::closed_port_url(), &run, "a"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("cannot reach"), "{err}");
}

#[test]
fn a_server_run_is_debugged_from_afar_and_stays_paused_across_a_restart() {
    let t = TempDir::new("serve-debug");
    let agents = slow_gate(t.path(), "0.1");
    let db = t.join("server.sqlite");
    let mut s = Server::start(&agents, &db, &[]);
    let run_url = |s: &Server, run: &str| format!("{}/switchyard/runs/{run}", s.url);
    let settled = |s: &Server, run: &str, want: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = get(&run_url(s, run));
            if r["status"] == want && r["active"] == false {
                return r;
            }
            assert!(Instant::now() < deadline, "never {want}: {r}");
            std::thread::sleep(Duration::from_millis(30));
        }
    };
    // Unknown breakpoint nodes are refused before anything runs.
    let (code, body) = call("POST", &format!("{}/runs", s.url), Some(json!({"assistant_id": "gate", "breakpoints": [{"node": "nope"}]})), None);
    assert_eq!(code, 422, "{body}");
    // Started held: nothing runs until it is stepped.
    let run = post(&format!("{}/runs", s.url), json!({"assistant_id": "gate", "paused": true}))["run_id"].as_str().unwrap().to_string();
    let r = settled(&s, &run, "paused");
    assert_eq!(r["step"], 0);
    post(&format!("{}/step", run_url(&s, &run)), json!({}));
    let r = settled(&s, &run, "paused");
    assert_eq!(r["step"], 1, "one step: {r}");
    // A breakpoint on the approval, then continue: it stops before `ask`.
    let (code, _) = call("PUT", &format!("{}/breakpoints", run_url(&s, &run)), Some(json!({"breakpoints": [{"node": "nowhere"}]})), None);
    assert_eq!(code, 422);
    let (code, b) = call("PUT", &format!("{}/breakpoints", run_url(&s, &run)), Some(json!({"breakpoints": [{"node": "ask"}]})), None);
    assert_eq!(code, 200, "{b}");
    post(&format!("{}/continue", run_url(&s, &run)), json!({}));
    let r = settled(&s, &run, "paused");
    assert_eq!(r["step"], 2, "stopped at the breakpoint before `ask`: {r}");
    assert_eq!(get(&run_url(&s, &run))["breakpoints"][0]["node"], "ask");
    // kill -9 while paused: the restarted server leaves it paused.
    rustix::process::kill_process(rustix::process::Pid::from_raw(s.pid() as i32).unwrap(), rustix::process::Signal::KILL).unwrap();
    drop(s);
    s = Server::start(&agents, &db, &[]);
    std::thread::sleep(Duration::from_millis(300));
    let r = settled(&s, &run, "paused");
    assert_eq!(r["step"], 2, "still where it was: {r}");
    // Pausing a run that is not running is a conflict; continuing goes on to the question.
    assert_eq!(call("POST", &format!("{}/pause", run_url(&s, &run)), Some(json!({})), None).0, 409);
    post(&format!("{}/continue", run_url(&s, &run)), json!({}));
    let r = settled(&s, &run, "interrupted");
    assert_eq!(r["question"]["node"], "ask");
    assert_eq!(call("POST", &format!("{}/step", run_url(&s, &run)), Some(json!({})), None).0, 409, "a waiting run is answered, not stepped");
    post(&format!("{}/answer", run_url(&s, &run)), json!({"answer": "go"}));
    let r = settled(&s, &run, "completed");
    assert_eq!(r["output"], "go after 2");
    // Pause while it runs: it stops before its next step.
    let slow = post(&format!("{}/runs", s.url), json!({"assistant_id": "gate"}))["run_id"].as_str().unwrap().to_string();
    let (code, _) = call("POST", &format!("{}/pause", run_url(&s, &slow)), Some(json!({})), None);
    assert!(code == 202 || code == 409, "{code}");
    if code == 202 {
        let r = settled(&s, &slow, "paused");
        assert!(r["step"].as_u64().unwrap() < 3, "{r}");
        post(&format!("{}/continue", run_url(&s, &slow)), json!({}));
    }
    settled(&s, &slow, "interrupted");
}

#[test]
fn an_assistants_source_is_served_for_the_studio() {
    let t = TempDir::new("serve-source");
    let agents = example_agents(&t);
    let s = Server::start(&agents, &t.join("server.sqlite"), &[]);
    let v = get(&format!("{}/switchyard/assistants/release-gate/source", s.url));
    assert_eq!((v["file_name"].as_str(), v["dialect"].as_str()), (Some("graph.yaml"), Some("loki")));
    assert_eq!(v["text"].as_str().unwrap(), std::fs::read_to_string(agents.join("release-gate/graph.yaml")).unwrap());
    assert_eq!(call("GET", &format!("{}/switchyard/assistants/nope/source", s.url), None, None).0, 404);
}

#[test]
fn an_lllm_agent_is_an_assistant_run_over_http_to_its_answer() {
    let t = TempDir::new("serve-lllm");
    let agents = example_agents(&t);
    // No `.git` above the copy: the desk's researcher finds its skill in the package (the
    // folder of its lllm.toml), as a copied package would.
    let s = Server::start(&agents, &t.join("server.sqlite"), &[]);
    // Listed: one assistant per agent of the research desk's config.
    let list = post(&format!("{}/assistants/search", s.url), json!({"limit": 50}));
    let lllm: Vec<&str> =
        list.as_array().unwrap().iter().filter(|a| a["metadata"]["dialect"] == "lllm").map(|a| a["graph_id"].as_str().unwrap()).collect();
    assert_eq!(lllm, ["research-desk.researcher", "research-desk.writer"], "{list}");
    let graph = get(&format!("{}/assistants/research-desk.researcher/graph", s.url));
    let nodes: Vec<&str> = graph["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    for n in ["global", "researcher", "writer", "invoke", "exception", "interrupt", "success"] {
        assert!(nodes.contains(&n), "no node {n}: {nodes:?}");
    }
    let schema = get(&format!("{}/assistants/research-desk.researcher/schemas", s.url));
    assert!(schema["input_schema"]["properties"]["args"].is_object(), "{schema}");
    // No user message: refused before anything runs.
    let tid = post(&format!("{}/threads", s.url), json!({}))["thread_id"].as_str().unwrap().to_string();
    let (code, body) =
        call("POST", &format!("{}/threads/{tid}/runs/wait", s.url), Some(json!({"assistant_id": "research-desk.researcher", "input": {"audience": "hikers"}})), None);
    assert_eq!(code, 422, "{body}");
    assert!(body.to_string().contains("needs a user message"), "{body}");
    // The user message from `messages`, the prompt argument beside it; the scripted replies:
    // a skill, a tool call, a parse failure on a forked dialog, the answer.
    let input = json!({"messages": [{"role": "user", "content": "How tall is Mont Blanc?"}], "audience": "hikers"});
    let v = post(&format!("{}/threads/{tid}/runs/wait", s.url), json!({"assistant_id": "research-desk.researcher", "input": input}));
    let answer = "<answer>Mont Blanc is 4,806 m high (2021 survey) [reference notes].</answer>";
    assert_eq!(v["delivery"]["content"], answer, "{v}");
    assert_eq!((v["state"].as_str(), v["agent"].as_str(), v["input"].as_str()), (Some("success"), Some("researcher"), Some("How tall is Mont Blanc?")));
    assert_eq!(v["prompt_args"], json!({"audience": "hikers"}));
    let system = v["dialogs"][0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("writing for hikers"), "the prompt is rendered with the argument: {system}");
    assert_eq!(v["exception_retries"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["dialogs"].as_array().unwrap().len(), 2, "the parse failure forked the dialog: {v}");
    assert!(v["__error__"].is_null() && v["__interrupt__"].is_null(), "{v}");
    // The thread: idle, its state the call's, its history one checkpoint per step down to the input.
    assert_eq!(get(&format!("{}/threads/{tid}", s.url))["status"], "idle");
    let st = get(&format!("{}/threads/{tid}/state", s.url));
    assert_eq!(st["values"]["delivery"]["content"], answer);
    assert_eq!(st["next"], json!([]));
    let history = post(&format!("{}/threads/{tid}/history", s.url), json!({"limit": 50}));
    let steps: Vec<u64> = history.as_array().unwrap().iter().map(|h| h["metadata"]["step"].as_u64().unwrap()).collect();
    assert_eq!(steps.last(), Some(&0));
    assert_eq!(steps, (0..=8).rev().collect::<Vec<u64>>(), "one checkpoint per state of the loop");
    let runs = get(&format!("{}/threads/{tid}/runs", s.url));
    assert_eq!(runs[0]["status"], "success", "{runs}");
    // A second run on the thread: `message` alone; the prompt arguments carry over. Streamed:
    // the updates name the call loop's states in the order they ran.
    let (code, text) = call(
        "POST",
        &format!("{}/threads/{tid}/runs/stream", s.url),
        Some(json!({"assistant_id": "research-desk.researcher", "input": {"message": "And again?"}, "stream_mode": ["updates", "values"]})),
        None,
    );
    assert_eq!(code, 200, "{text}");
    let text = text.as_str().unwrap_or_default().to_string();
    let updated: Vec<String> = text
        .split("\n\n")
        .filter(|b| b.contains("event: updates"))
        .filter_map(|b| b.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok()?.as_object()?.keys().next().cloned())
        .collect();
    assert_eq!(updated, ["invoke", "interrupt", "invoke", "interrupt", "invoke", "exception", "invoke", "success"], "{text}");
    assert!(!text.contains("event: error"), "{text}");
    let st = get(&format!("{}/threads/{tid}/state", s.url));
    assert_eq!((st["values"]["input"].as_str(), &st["values"]["prompt_args"]), (Some("And again?"), &json!({"audience": "hikers"})));
    // Debugged from afar: a breakpoint on the exception state stops the run there; continue ends it.
    let (code, b) = call(
        "POST",
        &format!("{}/runs", s.url),
        Some(json!({"assistant_id": "research-desk.researcher", "input": {"message": "Mont Blanc?", "args": {"audience": "climbers"}}, "breakpoints": [{"node": "nope"}]})),
        None,
    );
    assert_eq!(code, 422, "{b}");
    let run = post(
        &format!("{}/runs", s.url),
        json!({"assistant_id": "research-desk.researcher", "input": {"message": "Mont Blanc?", "args": {"audience": "climbers"}}, "breakpoints": [{"node": "exception"}]}),
    )["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let run_url = format!("{}/switchyard/runs/{run}", s.url);
    let settled = |want: &str| {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let r = get(&run_url);
            if r["status"] == want && r["active"] == false {
                return r;
            }
            assert!(Instant::now() < deadline, "never {want}: {r}");
            std::thread::sleep(Duration::from_millis(30));
        }
    };
    let r = settled("paused");
    assert_eq!(r["step"], 5, "invoke, interrupt, invoke, interrupt, invoke: paused before `exception`: {r}");
    post(&format!("{run_url}/continue"), json!({}));
    let r = settled("completed");
    assert_eq!(r["output"], answer, "{r}");
}

#[test]
fn a_run_that_cannot_start_is_refused_and_leaves_no_run_behind() {
    // An LLLM agent whose prompt module raises while it is imported: the server lists it (the
    // file is valid), but starting a run fails after the request was accepted.
    let t = TempDir::new("serve-refused");
    let agents = t.join("agents");
    test_support::temp::copy_dir(&repo().join("tests/lllm_runs/prompt_module_errors"), &agents.join("broken"));
    let s = Server::start(&agents, &t.join("server.sqlite"), &[]);
    let tid = post(&format!("{}/threads", s.url), json!({}))["thread_id"].as_str().unwrap().to_string();
    let (code, body) = call("POST", &format!("{}/threads/{tid}/runs/wait", s.url), Some(json!({"assistant_id": "broken", "input": "Hi"})), None);
    assert_eq!(code, 400, "{body}");
    assert!(body.to_string().contains("prompt module"), "{body}");
    // Neither the thread nor the server's list keeps a run that never started.
    assert_eq!(get(&format!("{}/threads/{tid}/runs", s.url)), json!([]));
    let all = get(&format!("{}/switchyard/runs", s.url));
    assert!(!all.to_string().contains(&tid) && all.as_array().is_none_or(|a| a.is_empty()), "{all}");
    // The thread takes the next run as if nothing happened.
    let (code, body) = call("POST", &format!("{}/threads/{tid}/runs/wait", s.url), Some(json!({"assistant_id": "broken", "input": "Hi"})), None);
    assert_eq!(code, 400, "{body}");
    assert!(!body.to_string().contains("busy"), "{body}");
}
