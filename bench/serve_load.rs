//! `switchyard serve` under load, on loopback: 1,000 runs of a generated Loki agent start at
//! once and each waits at an approval; they are answered through the API in random order
//! (8 at a time: `SERVE_LOAD_AT_ONCE`), and the server is killed with SIGKILL after half of the answers and started
//! again on the same store. Checked: no run lost, none answered twice (a second answer to 50
//! random runs must be refused), every run finishes with the answer it was given. Measured:
//! the server's RSS with 1,000 runs waiting (target under 200 MB) and the time from sending an
//! answer to the server's event of the run's next step (target p99 under 50 ms), both printed
//! as ratios to the targets.
//!
//! The server is the release `switchyard` binary (`cargo bench --bench serve_load`). Under
//! `cargo test --all-targets` it does nothing. `SERVE_LOAD_RUNS` changes the number of runs.

use futures_util::StreamExt;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const RSS_TARGET_MB: f64 = 200.0;
const P99_TARGET_MS: f64 = 50.0;

fn start_server(agents: &Path, db: &Path) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--agents"])
        .arg(agents)
        .args(["--listen", "127.0.0.1:0", "--db"])
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut line = String::new();
    let mut r = BufReader::new(out);
    while !line.starts_with("listening on ") {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "the server ended before it listened");
    }
    let url = line.trim().trim_start_matches("listening on ").to_string();
    std::thread::spawn(move || for _ in r.lines() {});
    (child, url)
}

fn rss_mb(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn now_ms_f() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// A small deterministic shuffle (xorshift), so runs are answered in a random but repeatable order.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

async fn waiting(c: &reqwest::Client, url: &str) -> Vec<String> {
    let v: Value = c.get(format!("{url}/switchyard/runs?status=interrupted")).send().await.unwrap().json().await.unwrap();
    v.as_array().unwrap().iter().map(|r| r["run_id"].as_str().unwrap().to_string()).collect()
}

async fn wait_for_waiting(c: &reqwest::Client, url: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let w = waiting(c, url).await;
        if w.len() >= n {
            return w;
        }
        assert!(Instant::now() < deadline, "only {} of {n} runs reached their approval", w.len());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Answer `ids` (`at_once` at a time): `(id, answer, time sent in ms since the epoch)` of each.
async fn answer_all(c: &reqwest::Client, url: &str, ids: &[String], at_once: usize) -> Vec<(String, String, f64)> {
    let futs = ids.iter().enumerate().map(|(i, id)| {
        let c = c.clone();
        let url = url.to_string();
        let id = id.clone();
        async move {
            let answer = if i % 2 == 0 { "yes" } else { "no" };
            let sent = now_ms_f();
            let r = c.post(format!("{url}/switchyard/runs/{id}/answer")).json(&json!({"answer": answer, "by": "bench"})).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200, "answer to {id}: {}", r.text().await.unwrap_or_default());
            (id, answer.to_string(), sent)
        }
    });
    futures_util::stream::iter(futs).buffer_unordered(at_once).collect().await
}

/// The events of a finished run: `(event name, ts_ms)` in order.
async fn events_of(c: &reqwest::Client, url: &str, id: &str) -> Vec<(String, f64)> {
    let text = c.get(format!("{url}/switchyard/runs/{id}/events")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|v| v["event"].is_string())
        .map(|v| (v["event"].as_str().unwrap().to_string(), v["ts_ms"].as_f64().unwrap_or(0.0)))
        .collect()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("serve_load: a benchmark (cargo bench --bench serve_load); nothing to do under cargo test");
        return;
    }
    let runs: usize = std::env::var("SERVE_LOAD_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let at_once: usize = std::env::var("SERVE_LOAD_AT_ONCE").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    let dir = std::env::temp_dir().join(format!("switchyard-serve-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let agent = dir.join("agents/gate");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("graph.yaml"),
        "name: gate\nversion: \"1.0\"\nstart: ask\nnodes:\n  ask:\n    type: approval\n    question: \"Proceed?\"\n    options: [\"yes\", \"no\"]\n    routes:\n      \"yes\": done\n      \"no\": done\n    on_other: done\n    state_updates:\n      choice: \"{{choice}}\"\n  done:\n    type: end\n    output: \"{{choice}}\"\n",
    )
    .unwrap();
    let agents = dir.join("agents");
    let db = dir.join("server.sqlite");
    let (mut server, url) = start_server(&agents, &db);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let c = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
    rt.block_on(async {
        // 1. Start every run at once (64 requests in flight).
        let t0 = Instant::now();
        let starts = (0..runs).map(|_| {
            let (c, url) = (c.clone(), url.clone());
            async move {
                let v: Value = c.post(format!("{url}/runs")).json(&json!({"assistant_id": "gate"})).send().await.unwrap().json().await.unwrap();
                v["run_id"].as_str().unwrap_or_else(|| panic!("{v}")).to_string()
            }
        });
        let mut ids: Vec<String> = futures_util::stream::iter(starts).buffer_unordered(64).collect().await;
        let w = wait_for_waiting(&c, &url, runs).await;
        assert_eq!(w.len(), runs);
        let started = t0.elapsed();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss = rss_mb(server.id());
        println!(
            "serve_load: {runs} runs started and waiting at their approval in {:.1} s; server RSS {rss:.0} MB (target {RSS_TARGET_MB:.0} MB, ratio {:.2})",
            started.as_secs_f64(),
            rss / RSS_TARGET_MB
        );

        // 2. Answer in random order; kill -9 after half; restart on the same store.
        shuffle(&mut ids, 0x9e37_79b9_7f4a_7c15);
        let half = runs / 2;
        let mut answered = answer_all(&c, &url, &ids[..half], at_once).await;
        server.kill().unwrap();
        server.wait().unwrap();
        let t_restart = Instant::now();
        let (s2, url2) = start_server(&agents, &db);
        server = s2;
        let restart = t_restart.elapsed();
        // The runs answered before the kill finish; the others still wait.
        let still = wait_for_waiting(&c, &url2, runs - half).await;
        assert_eq!(still.len(), runs - half, "the runs not yet answered wait again after the restart");
        answered.extend(answer_all(&c, &url2, &ids[half..], at_once).await);

        // 3. A second answer to 50 runs is refused.
        let mut twice = 0;
        for id in ids.iter().step_by((runs / 50).max(1)).take(50) {
            let r = c.post(format!("{url2}/switchyard/runs/{id}/answer")).json(&json!({"answer": "yes"})).send().await.unwrap();
            if r.status().as_u16() == 200 {
                twice += 1;
            }
        }
        // 4. Every run finishes with its answer; the audit log has one answer per run.
        let deadline = Instant::now() + Duration::from_secs(600);
        let all = loop {
            let all: Value = c.get(format!("{url2}/switchyard/runs")).send().await.unwrap().json().await.unwrap();
            let done = all.as_array().unwrap().iter().filter(|r| r["status"] == "completed").count();
            if done == runs {
                break all;
            }
            assert!(Instant::now() < deadline, "{done} of {runs} runs finished");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let outputs: std::collections::HashMap<String, String> = all
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["run_id"].as_str().unwrap().to_string(), r["output"].as_str().unwrap_or("").to_string()))
            .collect();
        let lost = answered.iter().filter(|(id, a, _)| outputs.get(id) != Some(a)).count();
        let audit: Value = c.get(format!("{url2}/switchyard/answers")).send().await.unwrap().json().await.unwrap();
        let audited = audit.as_array().unwrap().len();

        // 5. Latency: answer sent → the run's next step entering (its event's time).
        let sent: Arc<std::collections::HashMap<String, f64>> = Arc::new(answered.iter().map(|(id, _, t)| (id.clone(), *t)).collect());
        let lat = ids[half..].iter().map(|id| {
            let (c, url, sent) = (c.clone(), url2.clone(), sent.clone());
            let id = id.clone();
            async move {
                let ev = events_of(&c, &url, &id).await;
                let t = sent[&id];
                ev.iter().find(|(name, ts)| name == "node_enter" && *ts + 1.0 >= t).map(|(_, ts)| (ts - t).max(0.0))
            }
        });
        let mut lat: Vec<f64> = futures_util::stream::iter(lat).buffer_unordered(16).filter_map(|x| async move { x }).collect().await;
        lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
        println!(
            "serve_load: answer → next step's event over {} runs, {at_once} answers in flight: p50 {p50:.1} ms, p99 {p99:.1} ms (target p99 {P99_TARGET_MS:.0} ms, ratio {:.2})",
            lat.len(),
            p99 / P99_TARGET_MS
        );
        println!(
            "serve_load: kill -9 after {half} answers, restart in {:.2} s: {} of {runs} runs finished, {lost} lost or wrong, {twice} answered twice, {audited} answers in the audit log",
            restart.as_secs_f64(),
            outputs.len()
        );
        assert_eq!((lost, twice, audited), (0, 0, runs), "none lost, none answered twice");
    });
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
