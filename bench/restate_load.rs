//! Runs on Restate against the embedded engine, on loopback: the step overhead (one run of a
//! generated Loki agent of 40 trivial script steps at a time, `POST /runs/wait`, 5 runs: the
//! median time per step) and the throughput (`RESTATE_LOAD_RUNS`, default 100, runs of 5 such
//! steps started 16 at a time: runs finished per second), for `switchyard serve` (embedded),
//! and `serve --engine restate` with one worker, then two workers sharing one address. Printed
//! as the numbers and as ratios to the embedded engine (and two workers to one).
//!
//! The Restate server is `$SWITCHYARD_RESTATE_SERVER` (`./dev test` installs it; without it the
//! bench says so and ends). The rest is the release `switchyard` binary (`cargo bench --bench
//! restate_load`). Under `cargo test --all-targets` it does nothing.
//!
//! Measured on the 2-core dev machine (release, Restate 1.7.12, 100 runs): embedded 4.6 ms per
//! step and 41 runs/s; Restate with one worker 80 ms per step (17x) and 5.8 runs/s (7x fewer);
//! with two workers 79 ms and 3.0 runs/s. The two-worker phase runs second on the same server,
//! so its completion polling lists more runs: read its runs/s with that in mind.

use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const LONG: usize = 40;
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

/// (median ms per step of the long agent, runs of the short agent per second) on `url`.
async fn measure(c: &reqwest::Client, url: &str, runs: usize) -> (f64, f64) {
    let mut per_step = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let r = c.post(format!("{url}/runs/wait")).json(&json!({"assistant_id": "long", "input": "go"})).send().await.unwrap();
        assert!(r.status().is_success(), "the long run: {}", r.status());
        let out: Value = r.json().await.unwrap();
        assert_eq!(out["initial_prompt"], json!("go"), "the long run's final state: {out}");
        per_step.push(t.elapsed().as_secs_f64() * 1000.0 / LONG as f64);
    }
    per_step.sort_by(f64::total_cmp);
    let t = Instant::now();
    let ids: Vec<String> = futures_util::stream::iter(0..runs)
        .map(|_| async {
            let r: Value = c.post(format!("{url}/runs")).json(&json!({"assistant_id": "short", "input": "go"})).send().await.unwrap().json().await.unwrap();
            r["run_id"].as_str().unwrap_or_else(|| panic!("{r}")).to_string()
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let ids: HashSet<String> = ids.into_iter().collect();
    loop {
        let v: Value = c.get(format!("{url}/switchyard/runs?status=completed")).send().await.unwrap().json().await.unwrap();
        let done = v.as_array().unwrap().iter().filter(|r| ids.contains(r["run_id"].as_str().unwrap_or(""))).count();
        if done == runs {
            break;
        }
        assert!(t.elapsed() < DEADLINE, "{done} of {runs} runs finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (per_step[2], runs as f64 / t.elapsed().as_secs_f64())
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
    let serve = |engine: &[&str], db: &str| {
        let mut c = Command::new(BIN);
        c.arg("serve").args(engine).args(["--listen", "127.0.0.1:0", "--agents"]).arg(&agents).arg("--db").arg(t.join(db));
        c.env("SWITCHYARD_PROVIDERS", t.join("no-providers.yaml"));
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
        spawn_until(&mut c, "worker listening on ").0
    };
    let _w1 = worker();
    let (_s, url) = serve(&["--engine", "restate", "--restate", &ingress, "--restate-admin", &admin], "restate.sqlite");
    let one = rt.block_on(measure(&c, &url, runs));
    let _w2 = worker();
    let two = rt.block_on(measure(&c, &url, runs));
    println!("restate_load: {LONG}-step runs one at a time (median of 5), {runs} runs of {SHORT} steps 16 at a time");
    println!("{:<22} {:>12} {:>10}", "engine", "ms per step", "runs/s");
    for (name, (ms, rps)) in [("embedded", embedded), ("restate, 1 worker", one), ("restate, 2 workers", two)] {
        println!("{name:<22} {ms:>12.2} {rps:>10.1}");
    }
    println!("step overhead, restate 1 worker / embedded: {:.2}x", one.0 / embedded.0);
    println!("step overhead, restate 2 workers / embedded: {:.2}x", two.0 / embedded.0);
    println!("runs/s, embedded / restate 1 worker: {:.2}x", embedded.1 / one.1);
    println!("runs/s, restate 2 workers / 1 worker: {:.2}x", two.1 / one.1);
}
