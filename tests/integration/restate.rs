//! Runs on Restate: a real Restate server (npm `@restatedev/restate-server`, the binary in
//! `$SWITCHYARD_RESTATE_SERVER`; `./dev test` installs it and sets it) on loopback ports with a
//! temporary base dir, two `switchyard worker`s sharing one deployment address, and `switchyard
//! serve --engine restate` in front. The same agents and replies through the embedded engine
//! give the reference: the same event sequences, the same final state; a worker killed with
//! `kill -9` in the middle of a run and a new one started: the run completes as the reference
//! did, each committed step's script ran once (plus at most one repeat of the step in flight);
//! many runs while workers are killed at random moments: none lost, none off the reference;
//! runs waiting at approvals while the Restate server restarts: all answered once, as asked.
//!
//! Without `$SWITCHYARD_RESTATE_SERVER` the tests say so and pass (`./dev test` always sets it).

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_support::process::Proc;
use test_support::temp::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

/// Generous: a loaded 2-core machine.
const DEADLINE: Duration = Duration::from_secs(120);

fn restate_server() -> Option<PathBuf> {
    match std::env::var_os("SWITCHYARD_RESTATE_SERVER") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            eprintln!("skipped: SWITCHYARD_RESTATE_SERVER is not set (./dev test installs Restate's server and sets it)");
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Start `cmd` and wait for a stdout line starting with `prefix`: (process, the rest of it).
fn spawn_until(cmd: Command, log: PathBuf, prefix: &'static str) -> (Proc, String) {
    test_support::process::spawn_until(cmd, log, prefix, DEADLINE).unwrap_or_else(|e| panic!("{e}"))
}

/// One HTTP request: (status, JSON body or the text as a JSON string); status 0 when no answer
/// came.
fn call(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    test_support::process::call(method, url, body, None, DEADLINE).unwrap_or_else(|e| (0, Value::String(e)))
}

fn get(url: &str) -> Value {
    let (s, v) = call("GET", url, None);
    assert_eq!(s, 200, "GET {url}: {v}");
    v
}

fn post(url: &str, body: Value) -> Value {
    let (s, v) = call("POST", url, Some(body));
    assert!((200..300).contains(&s), "POST {url}: {s} {v}");
    v
}

/// A Restate server on free loopback ports with its state in `dir`.
struct Restate {
    p: Proc,
    bin: PathBuf,
    dir: PathBuf,
    ports: (u16, u16, u16),
    ingress: String,
    admin: String,
}

impl Restate {
    fn start(bin: &Path, dir: &Path) -> Restate {
        let ports = (free_port(), free_port(), free_port());
        let p = Self::spawn(bin, dir, ports, 0);
        let r = Restate {
            p,
            bin: bin.to_path_buf(),
            dir: dir.to_path_buf(),
            ports,
            ingress: format!("http://127.0.0.1:{}", ports.1),
            admin: format!("http://127.0.0.1:{}", ports.0),
        };
        r.wait_ready();
        r
    }

    fn spawn(bin: &Path, dir: &Path, (admin, ingress, node): (u16, u16, u16), nth: usize) -> Proc {
        let log = dir.join(format!("restate-{nth}.log"));
        let child = Command::new(bin)
            .args(["--no-logo", "--listen-mode", "tcp", "--base-dir"])
            .arg(dir.join("restate-data"))
            .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
            .env("RESTATE_INGRESS__BIND_ADDRESS", format!("127.0.0.1:{ingress}"))
            .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}"))
            .env("RESTATE_ADVERTISED_ADDRESS", format!("http://127.0.0.1:{node}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Proc { child, log }
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + DEADLINE;
        while call("GET", &format!("{}/health", self.admin), None).0 != 200 || call("GET", &format!("{}/restate/health", self.ingress), None).0 != 200 {
            assert!(Instant::now() < deadline, "Restate did not get ready:\n{}", self.p.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stop the server with SIGTERM, wait until it exited, and start it again on the same base
    /// dir and ports (the `nth` start).
    fn restart(&mut self, nth: usize) {
        let pid = rustix::process::Pid::from_raw(self.p.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let deadline = Instant::now() + DEADLINE;
        while self.p.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "Restate did not stop on SIGTERM:\n{}", self.p.log());
            std::thread::sleep(Duration::from_millis(50));
        }
        // Its ports may linger a moment after the exit: start again until one stays up.
        loop {
            self.p = Self::spawn(&self.bin, &self.dir, self.ports, nth);
            let up = Instant::now() + Duration::from_secs(3);
            let mut exited = false;
            while Instant::now() < up {
                if self.p.child.try_wait().unwrap().is_some() {
                    exited = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if !exited {
                break;
            }
            assert!(Instant::now() < deadline, "Restate did not start again:\n{}", self.p.log());
        }
        self.wait_ready();
    }

    /// A worker on `listen` (shared by the workers of a test), registered.
    fn worker(&self, agents: &Path, listen: &str, log: PathBuf) -> Proc {
        let mut c = Command::new(BIN);
        c.args(["worker", "--restate", &self.ingress, "--admin", &self.admin, "--listen", listen, "--agents"]).arg(agents);
        spawn_until(c, log, "worker listening on ").0
    }

    /// `switchyard serve --engine restate`: (process, URL).
    fn server(&self, agents: &Path, db: &Path) -> (Proc, String) {
        let mut c = Command::new(BIN);
        c.args(["serve", "--engine", "restate", "--restate", &self.ingress, "--restate-admin", &self.admin, "--listen", "127.0.0.1:0", "--agents"])
            .arg(agents)
            .arg("--db")
            .arg(db)
            .env("SWITCHYARD_PROVIDERS", db.with_file_name("no-providers.yaml"));
        spawn_until(c, db.with_extension("log"), "listening on ")
    }
}

/// The embedded engine's server: (process, URL).
fn embedded(agents: &Path, db: &Path) -> (Proc, String) {
    let mut c = Command::new(BIN);
    c.args(["serve", "--listen", "127.0.0.1:0", "--agents"])
        .arg(agents)
        .arg("--db")
        .arg(db)
        .env("SWITCHYARD_PROVIDERS", db.with_file_name("no-providers.yaml"));
    spawn_until(c, db.with_extension("log"), "listening on ")
}

fn copy_agents(t: &TempDir, name: &str) -> PathBuf {
    let to = t.join(name);
    test_support::temp::copy_dir(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("agents"), &to);
    to
}

/// Run the research desk's LLLM researcher (no question: tool calls, a parse failure on a
/// forked dialog, the answer) on the server at `url`: its events and output.
fn lllm_basics(url: &str) -> (Vec<(String, String, String)>, Value) {
    let input = json!({"messages": [{"role": "user", "content": "How tall is Mont Blanc?"}], "audience": "hikers"});
    let waited = post(&format!("{url}/runs/wait"), json!({"assistant_id": "research-desk.researcher", "input": input}));
    assert_eq!(waited["state"], "success", "{waited}");
    let runs = get(&format!("{url}/switchyard/runs"));
    let run = runs.as_array().unwrap().iter().find(|r| r["assistant"] == "research-desk.researcher").unwrap()["run_id"].as_str().unwrap().to_string();
    let done = wait_status(url, &run, "completed");
    (events(url, &run), done["output"].clone())
}

/// Wait until run `run`'s status is `want`.
fn wait_status(url: &str, run: &str, want: &str) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let r = get(&format!("{url}/switchyard/runs/{run}"));
        if r["status"] == want {
            return r;
        }
        assert!(Instant::now() < deadline, "run {run} never became {want}: {r}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The run's debugger events as `(event, node, run)`, read from its event stream until the
/// top-level `run_finished`.
fn events(url: &str, run: &str) -> Vec<(String, String, String)> {
    use futures_util::StreamExt;
    let (u, run) = (format!("{url}/switchyard/runs/{run}/events?after=0"), run.to_string());
    switchyard::rt::block_on(async move {
        let resp = reqwest::Client::new().get(&u).send().await.unwrap();
        let mut stream = resp.bytes_stream();
        let (mut buf, mut out) = (String::new(), Vec::new());
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let chunk = tokio::time::timeout_at(deadline, stream.next()).await;
            let Ok(Some(Ok(chunk))) = chunk else { panic!("the event stream of {run} ended early: {out:?}") };
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(i) = buf.find('\n') {
                let line: String = buf.drain(..=i).collect();
                let Some(data) = line.trim_end().strip_prefix("data:") else { continue };
                let Ok(e) = serde_json::from_str::<Value>(data.trim()) else { continue };
                let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
                let r = s("run").replace(&run, "RUN");
                out.push((s("event"), s("node"), r.clone()));
                if s("event") == "run_finished" && r == "RUN" {
                    return out;
                }
            }
        }
    })
}

/// Run support-triage (sherma: an interrupt answered) and release-gate (Loki: an approval
/// answered through the API) on the server at `url`: their event sequences and final states.
fn basics(url: &str) -> Vec<(Vec<(String, String, String)>, Value)> {
    let mut out = Vec::new();
    for (assistant, input, answer) in [
        ("support-triage", json!({"messages": [{"role": "user", "content": "Where is order 1001?"}]}), json!("thanks, done")),
        ("release-gate", json!("release 2.0"), json!("ship")),
    ] {
        let waited = post(&format!("{url}/runs/wait"), json!({"assistant_id": assistant, "input": input}));
        assert!(waited["__interrupt__"].is_array(), "{assistant}: {waited}");
        let runs = get(&format!("{url}/switchyard/runs?status=interrupted"));
        let run = runs.as_array().unwrap().iter().find(|r| r["assistant"] == assistant).unwrap()["run_id"].as_str().unwrap().to_string();
        post(&format!("{url}/switchyard/runs/{run}/answer"), json!({"answer": answer}));
        // Answered once only.
        assert_eq!(call("POST", &format!("{url}/switchyard/runs/{run}/answer"), Some(json!({"answer": answer}))).0, 409);
        let done = wait_status(url, &run, "completed");
        out.push((events(url, &run), done["output"].clone()));
    }
    out
}

#[test]
fn runs_on_restate_match_the_embedded_engine() {
    let Some(bin) = restate_server() else { return };
    let t = TempDir::new("restate-basics");
    let reference = {
        let agents = copy_agents(&t, "agents-embedded");
        let (_s, url) = embedded(&agents, &t.join("embedded.sqlite"));
        (basics(&url), lllm_basics(&url))
    };
    let (reference, lllm_reference) = reference;
    let r = Restate::start(&bin, t.path());
    let agents = copy_agents(&t, "agents-restate");
    let listen = format!("127.0.0.1:{}", free_port());
    let _w1 = r.worker(&agents, &listen, t.join("w1.log"));
    let _w2 = r.worker(&agents, &listen, t.join("w2.log"));
    let (_s, url) = r.server(&agents, &t.join("server.sqlite"));
    let got = basics(&url);
    // An LLLM agent's run: one step at a time, the same events in the same order, the same answer.
    let lllm = lllm_basics(&url);
    assert_eq!(lllm, lllm_reference, "the LLLM run on Restate is the embedded engine's");
    assert_eq!(lllm.1, "<answer>Mont Blanc is 4,806 m high (2021 survey) [reference notes].</answer>");
    for ((want_events, want_out), (got_events, got_out)) in reference.iter().zip(&got) {
        assert_eq!(got_out, want_out);
        // Loki's parallel branches interleave as the scheduler has it (in either engine): the
        // same events, each node's in the same order, the run's own in the same order.
        let sorted = |v: &Vec<(String, String, String)>| {
            let mut v = v.clone();
            v.sort();
            v
        };
        assert_eq!(sorted(got_events), sorted(want_events), "the same events as the embedded engine");
        let of = |v: &Vec<(String, String, String)>, node: &str| -> Vec<(String, String, String)> {
            v.iter().filter(|e| e.1 == node && e.0 != "route").cloned().collect()
        };
        for (_, node, _) in want_events {
            assert_eq!(of(got_events, node), of(want_events, node), "node `{node}`: the same events in the same order");
        }
    }
    assert!(got[0].0.len() > 20 && got[1].0.len() > 10, "{got:?}");
}

/// A Loki agent `name` of `steps` nodes that each run `scripts/step.sh` (`script`), counting
/// in `n` and ending with `counted {{n}}`.
fn script_chain(agents: &Path, name: &str, steps: usize, script: &str) {
    let agent = agents.join(name);
    std::fs::create_dir_all(agent.join("scripts")).unwrap();
    let mut yaml = format!("name: {name}\nversion: \"1.0\"\nstart: s1\ninitial_state:\n  n: 0\nnodes:\n");
    for i in 1..=steps {
        let next = if i == steps { "done".to_string() } else { format!("s{}", i + 1) };
        yaml.push_str(&format!("  s{i}:\n    type: script\n    script: scripts/step.sh\n    next: {next}\n"));
    }
    yaml.push_str("  done:\n    type: end\n    output: \"counted {{n}}\"\n");
    std::fs::write(agent.join("graph.yaml"), yaml).unwrap();
    let path = agent.join("scripts/step.sh");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A Loki agent of `steps` script steps (each sleeping `secs`, counting in `n` and appending
/// its name to `executions.log` beside the agent), ending with `n`.
fn counter(agents: &Path, steps: usize, secs: &str) {
    let script = format!(
        "#!/usr/bin/env bash\nn=$(printf '%s' \"$GRAPH_STATE\" | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"n\"])')\necho \"step $((n + 1))\" >> executions.log\nsleep {secs}\necho \"{{\\\"n\\\": $((n + 1))}}\"\n"
    );
    script_chain(agents, "counter", steps, &script);
}

/// Start a counter run on a thread and return its id and thread id.
fn start_counter(url: &str) -> (String, String) {
    let thread = post(&format!("{url}/threads"), json!({}))["thread_id"].as_str().unwrap().to_string();
    let run = post(&format!("{url}/threads/{thread}/runs"), json!({"assistant_id": "counter", "input": "go"}));
    (run["run_id"].as_str().unwrap().to_string(), thread)
}

#[test]
fn a_worker_killed_mid_run_loses_nothing() {
    let Some(bin) = restate_server() else { return };
    const STEPS: usize = 5;
    let t = TempDir::new("restate-kill");
    let reference = {
        let agents = t.join("agents-embedded");
        counter(&agents, STEPS, "0");
        let (_s, url) = embedded(&agents, &t.join("embedded.sqlite"));
        let (run, thread) = start_counter(&url);
        let done = wait_status(&url, &run, "completed");
        (done["output"].clone(), get(&format!("{url}/threads/{thread}/state"))["values"].clone())
    };
    assert_eq!(reference.0, json!(format!("counted {STEPS}")));
    let r = Restate::start(&bin, t.path());
    let agents = t.join("agents-restate");
    counter(&agents, STEPS, "1");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut w1 = r.worker(&agents, &listen, t.join("w1.log"));
    let (_s, url) = r.server(&agents, &t.join("server.sqlite"));
    let (run, thread) = start_counter(&url);
    // Killed while a step is in flight (after at least one committed step).
    let deadline = Instant::now() + DEADLINE;
    let at_kill = loop {
        let r = get(&format!("{url}/switchyard/runs/{run}"));
        let lines = std::fs::read_to_string(agents.join("counter/executions.log")).unwrap_or_default().lines().count() as u64;
        let step = r["step"].as_u64().unwrap_or(0);
        if step >= 1 && lines > step {
            break step;
        }
        assert!(Instant::now() < deadline, "the run never got going: {r}\n{}", w1.log());
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = w1.child.kill();
    let _ = w1.child.wait();
    assert!(at_kill < STEPS as u64, "killed too late (step {at_kill})");
    let _w2 = r.worker(&agents, &listen, t.join("w2.log"));
    let done = wait_status(&url, &run, "completed");
    assert_eq!(done["output"], reference.0);
    assert_eq!(get(&format!("{url}/threads/{thread}/state"))["values"], reference.1, "the reference final state");
    let log = std::fs::read_to_string(agents.join("counter/executions.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    for i in 1..=STEPS {
        let n = lines.iter().filter(|l| **l == format!("step {i}")).count();
        assert!(n >= 1, "step {i} never ran: {lines:?}");
    }
    assert!(lines.len() <= STEPS + 1, "each committed step once, plus at most one repeat of the step killed: {lines:?}");
}

/// A Loki agent `gate`: an approval (ship or hold) of the release named by the input, then
/// an end saying which.
fn gate(agents: &Path) {
    let agent = agents.join("gate");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("graph.yaml"),
        "name: gate\nversion: \"1.0\"\nstart: approve\nnodes:\n  approve:\n    type: approval\n    question: \"Ship {{initial_prompt}}?\"\n    options: [\"ship\", \"hold\"]\n    routes:\n      ship: shipped\n      hold: held\n    on_other: held\n    state_updates:\n      decision: \"{{choice}}\"\n  shipped:\n    type: end\n    output: \"shipped {{initial_prompt}}\"\n  held:\n    type: end\n    output: \"held {{initial_prompt}}\"\n",
    )
    .unwrap();
}

#[test]
fn runs_waiting_at_approvals_survive_a_restate_restart() {
    let Some(bin) = restate_server() else { return };
    const RUNS: usize = 5;
    let t = TempDir::new("restate-restart");
    let mut r = Restate::start(&bin, t.path());
    let agents = t.join("agents");
    gate(&agents);
    let listen = format!("127.0.0.1:{}", free_port());
    let _w1 = r.worker(&agents, &listen, t.join("w1.log"));
    let _w2 = r.worker(&agents, &listen, t.join("w2.log"));
    let (_s, url) = r.server(&agents, &t.join("server.sqlite"));
    let runs: Vec<(String, String)> = (0..RUNS)
        .map(|i| {
            let thread = post(&format!("{url}/threads"), json!({}))["thread_id"].as_str().unwrap().to_string();
            let run = post(&format!("{url}/threads/{thread}/runs"), json!({"assistant_id": "gate", "input": format!("r{i}")}));
            (run["run_id"].as_str().unwrap().to_string(), thread)
        })
        .collect();
    for (run, _) in &runs {
        wait_status(&url, run, "interrupted");
    }
    r.restart(1);
    // Every run is still there and still waiting (read back through the restarted server).
    for (run, _) in &runs {
        wait_status(&url, run, "interrupted");
    }
    let answer = |i: usize| if i % 2 == 0 { "ship" } else { "hold" };
    for (i, (run, _)) in runs.iter().enumerate() {
        post(&format!("{url}/switchyard/runs/{run}/answer"), json!({"answer": answer(i)}));
    }
    for (i, (run, thread)) in runs.iter().enumerate() {
        // Answered once only.
        let (status, body) = call("POST", &format!("{url}/switchyard/runs/{run}/answer"), Some(json!({"answer": "ship"})));
        assert_eq!(status, 409, "a second answer to {run}: {body}");
        let done = wait_status(&url, run, "completed");
        let verb = if answer(i) == "ship" { "shipped" } else { "held" };
        assert_eq!(done["output"], json!(format!("{verb} r{i}")), "run {run}");
        let state = get(&format!("{url}/threads/{thread}/state"))["values"].clone();
        assert_eq!(state["decision"], json!(answer(i)), "run {run}: {state}");
        let ev = events(&url, run);
        // The answered branch ran once, the other never.
        let entered = |node: &str| ev.iter().filter(|e| e.0 == "node_enter" && e.1 == node).count();
        assert_eq!((entered("shipped"), entered("held")), if verb == "shipped" { (1, 0) } else { (0, 1) }, "run {run}: {ev:?}");
    }
}

#[test]
fn a_run_on_restate_is_debugged_from_afar_and_read_with_no_worker_up() {
    let Some(bin) = restate_server() else { return };
    let t = TempDir::new("restate-debug");
    let r = Restate::start(&bin, t.path());
    // Two script steps (0.1 s each, counting in `n`), the approval `ask`, an end saying both:
    // the agent the embedded engine's debugging test uses.
    let agents = crate::serve::slow_gate(t.path(), "0.1");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut w1 = r.worker(&agents, &listen, t.join("w1.log"));
    let (_s, url) = r.server(&agents, &t.join("server.sqlite"));
    let run_url = |run: &str| format!("{url}/switchyard/runs/{run}");
    let settled = |run: &str, want: &str| {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let r = get(&run_url(run));
            if r["status"] == want && r["active"] == false {
                return r;
            }
            assert!(Instant::now() < deadline, "never {want}: {r}");
            std::thread::sleep(Duration::from_millis(30));
        }
    };
    // Unknown breakpoint nodes are refused before anything runs.
    let (code, body) = call("POST", &format!("{url}/runs"), Some(json!({"assistant_id": "gate", "breakpoints": [{"node": "nope"}]})));
    assert_eq!(code, 422, "{body}");
    // Started held: nothing runs until it is stepped; one step, then held again.
    let thread = post(&format!("{url}/threads"), json!({}))["thread_id"].as_str().unwrap().to_string();
    let run = post(&format!("{url}/threads/{thread}/runs"), json!({"assistant_id": "gate", "paused": true}))["run_id"].as_str().unwrap().to_string();
    assert_eq!(settled(&run, "paused")["step"], 0);
    post(&format!("{}/step", run_url(&run)), json!({}));
    let got = settled(&run, "paused");
    assert_eq!(got["step"], 1, "one step: {got}");
    // A breakpoint on the approval, then continue: it stops before `ask`.
    let (code, _) = call("PUT", &format!("{}/breakpoints", run_url(&run)), Some(json!({"breakpoints": [{"node": "nowhere"}]})));
    assert_eq!(code, 422);
    let (code, b) = call("PUT", &format!("{}/breakpoints", run_url(&run)), Some(json!({"breakpoints": [{"node": "ask"}]})));
    assert_eq!(code, 200, "{b}");
    post(&format!("{}/continue", run_url(&run)), json!({}));
    let got = settled(&run, "paused");
    assert_eq!(got["step"], 2, "held at the breakpoint before `ask`: {got}");
    assert_eq!(get(&run_url(&run))["breakpoints"][0]["node"], "ask");
    // With no worker up, the run is still read from Restate: its record, breakpoints, the run
    // list, the history of its states.
    let _ = w1.child.kill();
    let _ = w1.child.wait();
    let got = get(&run_url(&run));
    assert_eq!((got["status"].as_str(), got["step"].as_u64()), (Some("paused"), Some(2)), "read with no worker: {got}");
    assert_eq!(got["breakpoints"][0]["node"], "ask");
    let listed = get(&format!("{url}/switchyard/runs"));
    assert!(listed.as_array().unwrap().iter().any(|r| r["run_id"] == run.as_str() && r["status"] == "paused"), "{listed}");
    let hist = get(&format!("{url}/threads/{thread}/history"));
    let steps: Vec<u64> = hist.as_array().map(|a| a.iter().filter_map(|h| h["metadata"]["step"].as_u64()).collect()).unwrap_or_default();
    assert_eq!(steps, vec![2, 1, 0], "the run's states, newest first, read with no worker: {hist}");
    assert_eq!(hist[0]["values"]["n"], 2, "{hist}");
    let _w2 = r.worker(&agents, &listen, t.join("w2.log"));
    // Pausing a run that is not running is a conflict; continuing goes on to the question.
    assert_eq!(call("POST", &format!("{}/pause", run_url(&run)), Some(json!({}))).0, 409);
    post(&format!("{}/continue", run_url(&run)), json!({}));
    let got = settled(&run, "interrupted");
    assert_eq!(got["question"]["node"], "ask");
    assert_eq!(call("POST", &format!("{}/step", run_url(&run)), Some(json!({}))).0, 409, "a waiting run is answered, not stepped");
    post(&format!("{}/answer", run_url(&run)), json!({"answer": "go"}));
    let got = settled(&run, "completed");
    assert_eq!(got["output"], "go after 2");
    // Pause while it runs: it stops before its next step, then goes on.
    let slow = post(&format!("{url}/runs"), json!({"assistant_id": "gate"}))["run_id"].as_str().unwrap().to_string();
    let (code, _) = call("POST", &format!("{}/pause", run_url(&slow)), Some(json!({})));
    assert!(code == 202 || code == 409, "{code}");
    if code == 202 {
        let got = settled(&slow, "paused");
        assert!(got["step"].as_u64().unwrap() < 3, "{got}");
        post(&format!("{}/continue", run_url(&slow)), json!({}));
    }
    settled(&slow, "interrupted");
}

/// A Loki agent `tally` of `steps` script steps, each appending `<input> <step>` to
/// `executions.log` beside the agent (the input names the run), then sleeping `secs`.
fn tally(agents: &Path, steps: usize, secs: &str) {
    // Bash alone reads the state (no Python start-up per step: 200 runs' steps at once on a
    // 2-core machine).
    let body = r#"#!/usr/bin/env bash
re_run='"initial_prompt": ?"([^"]*)"'
re_n='"n": ?([0-9]+)'
[[ $GRAPH_STATE =~ $re_run ]] && run=${BASH_REMATCH[1]}
[[ $GRAPH_STATE =~ $re_n ]] && n=${BASH_REMATCH[1]}
echo "$run $((n + 1))" >> executions.log
sleep SECS
echo "{\"n\": $((n + 1))}"
"#;
    script_chain(agents, "tally", steps, &body.replace("SECS", secs));
}

/// Many runs while workers are killed with `kill -9` at random moments (a new one started on
/// the same address each time): every run completes with the reference's final state, and
/// each run's script lines are its steps in order, each once, plus at most one repeat of the
/// step in flight per kill (a run has one step in flight at a time).
///
/// Measured on the 2-core dev machine, the test alone: 40 runs 25 s, 80 runs 42 s, 60 runs
/// 33 s (40 s with two `yes` loops running, 51 s for the whole `restate::` module then): 60
/// keeps the module under a minute on CI.
#[test]
fn workers_killed_at_random_lose_no_run() {
    let Some(bin) = restate_server() else { return };
    const STEPS: usize = 4;
    const RUNS: usize = 200;
    const KILLS: usize = 6;
    let t = TempDir::new("restate-chaos");
    let began = Instant::now();
    let reference = {
        let agents = t.join("agents-embedded");
        tally(&agents, STEPS, "0");
        let (_s, url) = embedded(&agents, &t.join("embedded.sqlite"));
        let thread = post(&format!("{url}/threads"), json!({}))["thread_id"].as_str().unwrap().to_string();
        let run = post(&format!("{url}/threads/{thread}/runs"), json!({"assistant_id": "tally", "input": "r0"}))["run_id"].as_str().unwrap().to_string();
        let done = wait_status(&url, &run, "completed");
        (done["output"].clone(), get(&format!("{url}/threads/{thread}/state"))["values"].clone())
    };
    assert_eq!(reference.0, json!(format!("counted {STEPS}")));
    let r = Restate::start(&bin, t.path());
    let agents = t.join("agents-restate");
    tally(&agents, STEPS, "0.2");
    let listen = format!("127.0.0.1:{}", free_port());
    let workers = std::sync::Mutex::new(vec![r.worker(&agents, &listen, t.join("w0.log")), r.worker(&agents, &listen, t.join("w1.log"))]);
    let (_s, url) = r.server(&agents, &t.join("server.sqlite"));
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("kill schedule seed {seed}");
    let done = std::sync::atomic::AtomicBool::new(false);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (kills, runs) = std::thread::scope(|s| {
        // Killing starts with the submissions (a run's first action may be the one killed).
        let killer = s.spawn(|| {
            let mut x = seed;
            let mut rand = move |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            };
            let mut kills = 0;
            while kills < KILLS && !done.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200 + rand(1300)));
                if done.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let mut w = workers.lock().unwrap();
                let i = rand(w.len() as u64) as usize;
                let _ = w[i].child.kill();
                let _ = w[i].child.wait();
                kills += 1;
                w[i] = r.worker(&agents, &listen, t.join(format!("w{}.log", kills + 1)));
            }
            kills
        });
        // Submitted 8 at a time.
        let submit = || {
            let mut mine = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= RUNS {
                    return mine;
                }
                let thread = post(&format!("{url}/threads"), json!({}))["thread_id"].as_str().unwrap().to_string();
                let run = post(&format!("{url}/threads/{thread}/runs"), json!({"assistant_id": "tally", "input": format!("r{i}")}));
                mine.push((i, run["run_id"].as_str().unwrap().to_string(), thread));
            }
        };
        let hs: Vec<_> = (0..8).map(|_| s.spawn(submit)).collect();
        let mut runs: Vec<(usize, String, String)> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        eprintln!("{RUNS} runs submitted after {:?}", began.elapsed());
        runs.sort();
        let runs: Vec<(String, String)> = runs.into_iter().map(|(_, r, t)| (r, t)).collect();
        let deadline = Instant::now() + DEADLINE;
        loop {
            let listed = get(&format!("{url}/switchyard/runs"));
            let listed = listed.as_array().unwrap();
            for r in listed {
                assert!(r["status"] != "failed" && r["status"] != "cancelled", "run: {r}");
            }
            let done = listed.iter().filter(|r| r["status"] == "completed").count();
            if done == RUNS {
                break;
            }
            assert!(Instant::now() < deadline, "{} runs never completed (seed {seed})", RUNS - done);
            std::thread::sleep(Duration::from_millis(300));
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        (killer.join().unwrap(), runs)
    });
    assert!(kills >= 1, "no worker was killed: the runs finished too soon");
    for (run, thread) in &runs {
        let got = get(&format!("{url}/switchyard/runs/{run}"));
        assert_eq!(got["output"], reference.0, "run {run}");
        let mut state = get(&format!("{url}/threads/{thread}/state"))["values"].clone();
        state["initial_prompt"] = reference.1["initial_prompt"].clone();
        assert_eq!(state, reference.1, "run {run}: the reference final state");
    }
    let log = std::fs::read_to_string(agents.join("tally/executions.log")).unwrap();
    let mut repeats = 0;
    for i in 0..RUNS {
        let name = format!("r{i}");
        let steps: Vec<usize> = log.lines().filter_map(|l| l.strip_prefix(&format!("{name} "))).map(|n| n.parse().unwrap()).collect();
        let mut want = 1;
        let mut seen = 0;
        for &s in &steps {
            if s == want - 1 {
                seen += 1;
            } else {
                assert_eq!(s, want, "{name}: steps out of order (seed {seed}): {steps:?}");
                want += 1;
            }
        }
        assert_eq!(want, STEPS + 1, "{name}: every step ran (seed {seed}): {steps:?}");
        assert!(seen <= kills, "{name}: more repeats than kills ({kills}, seed {seed}): {steps:?}");
        repeats += seen;
    }
    eprintln!("{RUNS} runs, {kills} kills, {repeats} repeated steps, {:?}", began.elapsed());
}
