//! Runs on Restate against the embedded engine, on loopback, for `switchyard serve`
//! (embedded) and `serve --engine restate` with one worker, then two workers sharing one
//! address:
//!
//! - step overhead: one run at a time of a generated Loki agent of 40 trivial script steps
//!   (`POST /runs/wait`, median of 5): time per step;
//! - throughput: `RESTATE_LOAD_RUNS` (default 100) runs of 5 such steps, 16 `POST /runs/wait`
//!   in flight: runs finished per second;
//! - the LLM-bound run: a sherma chain of 20 sequential `call_llm` nodes (live, against a fake
//!   OpenAI-compatible server on 127.0.0.1 answering after 20 ms, as `bench/llm_calls.rs`), one
//!   at a time, median of 5 after a warm-up: the run's own time (its first checkpoint to its
//!   last, as the run's history says) against its physical limit, 20 × 20 ms = 400 ms (target
//!   on Restate: within 10 %), and the time a client waits for it through the API.
//!
//! Printed as the numbers and as ratios to the embedded engine (and two workers to one). The
//! Restate server is `$SWITCHYARD_RESTATE_SERVER` (`./dev test` installs it; without it the
//! bench says so and ends). The rest is the release `switchyard` binary (`cargo bench --bench
//! restate_load`). Under `cargo test --all-targets` it does nothing. Measured numbers are in
//! docs/performance.md.

#[path = "llm_chain.rs"]
mod llm_chain;

use futures_util::StreamExt;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const LONG: usize = 40;
const CALLS: usize = 20;
const LATENCY: Duration = Duration::from_millis(20);
const TARGET_OVERHEAD: f64 = 0.10;
const SHORT: usize = 5;
const DEADLINE: Duration = Duration::from_secs(600);

/// A child process, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Start `cmd` and wait for a stdout line starting with `prefix`: (process, the rest of it).
fn spawn_until(cmd: &mut Command, prefix: &str) -> (Proc, String) {
    let mut child = cmd.env("SWITCHYARD_KEYRING", "off").stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with(prefix) {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "ended before a `{prefix}` line");
    }
    std::thread::spawn(move || for _ in r.lines() {});
    (Proc(child), line.trim().trim_start_matches(prefix).to_string())
}

/// A Loki agent `name` of `steps` script steps that print `{}`.
fn chain(agents: &Path, name: &str, steps: usize) {
    let agent = agents.join(name);
    std::fs::create_dir_all(agent.join("scripts")).unwrap();
    let mut yaml = format!("name: {name}\nversion: \"1.0\"\nstart: s1\nnodes:\n");
    for i in 1..=steps {
        let next = if i == steps { "done".to_string() } else { format!("s{}", i + 1) };
        yaml.push_str(&format!("  s{i}:\n    type: script\n    script: scripts/step.sh\n    next: {next}\n"));
    }
    yaml.push_str("  done:\n    type: end\n    output: \"done\"\n");
    std::fs::write(agent.join("graph.yaml"), yaml).unwrap();
    let script = agent.join("scripts/step.sh");
    std::fs::write(&script, "#!/bin/sh\necho '{}'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

async fn ok(c: &reqwest::Client, url: &str) -> bool {
    matches!(c.get(url).send().await, Ok(r) if r.status().is_success())
}

/// `POST /runs/wait` of `assistant` with `input`: the final state.
async fn wait(c: &reqwest::Client, url: &str, assistant: &str, input: Value) -> Value {
    let r = c.post(format!("{url}/runs/wait")).json(&json!({"assistant_id": assistant, "input": input})).send().await.unwrap();
    assert!(r.status().is_success(), "a run of {assistant}: {}", r.status());
    r.json().await.unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median ms per step of the long agent, one run at a time.
async fn per_step(c: &reqwest::Client, url: &str) -> f64 {
    let mut per_step = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = wait(c, url, "long", json!("go")).await;
        assert_eq!(out["initial_prompt"], json!("go"), "the long run's final state: {out}");
        per_step.push(t.elapsed().as_secs_f64() * 1000.0 / LONG as f64);
    }
    median(per_step)
}

/// Runs of the short agent finished per second, 16 waited for at a time.
async fn throughput(c: &reqwest::Client, url: &str, runs: usize) -> f64 {
    let t = Instant::now();
    let outs: Vec<Value> = futures_util::stream::iter(0..runs).map(|_| wait(c, url, "short", json!("go"))).buffer_unordered(16).collect().await;
    assert!(outs.iter().all(|o| o["initial_prompt"] == json!("go")), "every short run completed");
    runs as f64 / t.elapsed().as_secs_f64()
}

fn ms_of(iso: &Value) -> f64 {
    let t = time::OffsetDateTime::parse(iso.as_str().unwrap(), &time::format_description::well_known::Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as f64
}

/// The LLM chain on a thread, one run at a time, median of 5 after a warm-up: (the run's own
/// ms, first checkpoint to last; the ms a client waited for it).
async fn llm_chain(c: &reqwest::Client, url: &str) -> (f64, f64) {
    let (mut own, mut waited) = (Vec::new(), Vec::new());
    for i in 0..6 {
        let thread: Value = c.post(format!("{url}/threads")).json(&json!({})).send().await.unwrap().json().await.unwrap();
        let tid = thread["thread_id"].as_str().unwrap();
        let t = Instant::now();
        let r = c
            .post(format!("{url}/threads/{tid}/runs/wait"))
            .json(&json!({"assistant_id": "chain", "input": {"messages": [{"role": "user", "content": "go"}]}}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "the chain: {}", r.status());
        let out: Value = r.json().await.unwrap();
        let dt = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(out["messages"].as_array().map_or(0, |m| m.len()), CALLS + 1, "one answer per call: {out}");
        let hist: Value = c.get(format!("{url}/threads/{tid}/history?limit=100")).send().await.unwrap().json().await.unwrap();
        let hist = hist.as_array().unwrap();
        assert_eq!(hist.len(), CALLS + 1, "a checkpoint before the first call and after each");
        let run_ms = ms_of(&hist[0]["created_at"]) - ms_of(&hist[hist.len() - 1]["created_at"]);
        if i > 0 {
            own.push(run_ms);
            waited.push(dt);
        }
    }
    (median(own), median(waited))
}

/// The sherma chain of bench/llm_chain.rs as the agent `chain`.
fn llm_agent(agents: &Path, calls: usize) {
    std::fs::create_dir_all(agents.join("chain")).unwrap();
    std::fs::write(agents.join("chain/agent.yaml"), llm_chain::chain_yaml(calls)).unwrap();
}

/// Everything measured on one server.
struct Measured {
    ms_per_step: f64,
    runs_per_s: f64,
    llm_own_ms: f64,
    llm_waited_ms: f64,
}

async fn measure(c: &reqwest::Client, url: &str, runs: usize) -> Measured {
    let ms_per_step = per_step(c, url).await;
    let runs_per_s = throughput(c, url, runs).await;
    let (llm_own_ms, llm_waited_ms) = llm_chain(c, url).await;
    Measured { ms_per_step, runs_per_s, llm_own_ms, llm_waited_ms }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("restate_load: a benchmark (cargo bench --bench restate_load); nothing to do under cargo test");
        return;
    }
    let Some(restate) = std::env::var_os("SWITCHYARD_RESTATE_SERVER").map(PathBuf::from) else {
        println!("restate_load: skipped, SWITCHYARD_RESTATE_SERVER is not set (./dev test installs Restate's server and sets it)");
        return;
    };
    let runs: usize = std::env::var("RESTATE_LOAD_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(100);
    let t = test_support::temp::TempDir::new("restate-load");
    let agents = t.join("agents");
    chain(&agents, "long", LONG);
    chain(&agents, "short", SHORT);
    llm_agent(&agents, CALLS);
    // The fake model: every answer after LATENCY; the servers and workers call it live.
    let fake = test_support::fake_llm::FakeLlm::start();
    fake.set_latency(LATENCY);
    fake.set_default(test_support::fake_llm::Reply::Text("ok".into()));
    let providers = t.join("providers.yaml");
    std::fs::write(&providers, format!("providers:\n  openai:\n    base_url: \"{}\"\n    api_key: sk-bench\n", fake.base())).unwrap();
    let serve = |engine: &[&str], db: &str| {
        let mut c = Command::new(BIN);
        c.arg("serve").args(engine).args(["--live", "--listen", "127.0.0.1:0", "--agents"]).arg(&agents).arg("--db").arg(t.join(db));
        c.env("SWITCHYARD_PROVIDERS", &providers);
        spawn_until(&mut c, "listening on ")
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let c = reqwest::Client::new();
    let embedded = {
        let (_s, url) = serve(&[], "embedded.sqlite");
        rt.block_on(measure(&c, &url, runs))
    };
    let (admin, ingress, node) = (free_port(), free_port(), free_port());
    let _restate = Proc(
        Command::new(&restate)
            .args(["--no-logo", "--listen-mode", "tcp", "--base-dir"])
            .arg(t.join("restate-data"))
            .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
            .env("RESTATE_INGRESS__BIND_ADDRESS", format!("127.0.0.1:{ingress}"))
            .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}"))
            .env("RESTATE_ADVERTISED_ADDRESS", format!("http://127.0.0.1:{node}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let (admin, ingress) = (format!("http://127.0.0.1:{admin}"), format!("http://127.0.0.1:{ingress}"));
    let deadline = Instant::now() + DEADLINE;
    while !rt.block_on(async { ok(&c, &format!("{admin}/health")).await && ok(&c, &format!("{ingress}/restate/health")).await }) {
        assert!(Instant::now() < deadline, "Restate did not get ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    let listen = format!("127.0.0.1:{}", free_port());
    let worker = || {
        let mut c = Command::new(BIN);
        c.args(["worker", "--restate", &ingress, "--admin", &admin, "--listen", &listen, "--agents"]).arg(&agents);
        c.env("SWITCHYARD_PROVIDERS", &providers);
        spawn_until(&mut c, "worker listening on ").0
    };
    let _w1 = worker();
    let (_s, url) = serve(&["--engine", "restate", "--restate", &ingress, "--restate-admin", &admin], "restate.sqlite");
    let one = rt.block_on(measure(&c, &url, runs));
    let _w2 = worker();
    let two = rt.block_on(measure(&c, &url, runs));
    let limit = LATENCY.as_secs_f64() * 1000.0 * CALLS as f64;
    println!(
        "restate_load: {LONG}-step runs one at a time (median of 5); {runs} runs of {SHORT} steps, 16 in flight; \
         a {CALLS}-call LLM chain against a {} ms fake model (median of 5, physical limit {limit:.0} ms)",
        LATENCY.as_millis()
    );
    println!("{:<20} {:>12} {:>8} {:>14} {:>10} {:>16}", "engine", "ms per step", "runs/s", "llm run (ms)", "overhead", "llm waited (ms)");
    for (name, m) in [("embedded", &embedded), ("restate, 1 worker", &one), ("restate, 2 workers", &two)] {
        println!(
            "{name:<20} {:>12.2} {:>8.1} {:>14.1} {:>9.1}% {:>16.1}",
            m.ms_per_step,
            m.runs_per_s,
            m.llm_own_ms,
            (m.llm_own_ms / limit - 1.0) * 100.0,
            m.llm_waited_ms
        );
    }
    println!("step overhead, restate 1 worker / embedded: {:.2}x", one.ms_per_step / embedded.ms_per_step);
    println!("step overhead, restate 2 workers / embedded: {:.2}x", two.ms_per_step / embedded.ms_per_step);
    println!("runs/s, embedded / restate 1 worker: {:.2}x", embedded.runs_per_s / one.runs_per_s);
    println!("runs/s, restate 2 workers / 1 worker: {:.2}x", two.runs_per_s / one.runs_per_s);
    for (name, m) in [("1 worker", &one), ("2 workers", &two)] {
        let over = m.llm_own_ms / limit - 1.0;
        println!(
            "llm chain on restate, {name}: {:.1} ms against its physical limit {limit:.0} ms: overhead {:.1}% (target ≤ {:.0}%: {})",
            m.llm_own_ms,
            over * 100.0,
            TARGET_OVERHEAD * 100.0,
            if over <= TARGET_OVERHEAD { "met" } else { "NOT met" }
        );
    }
}
