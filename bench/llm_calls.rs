//! LLM-bound overhead: 20 sequential `call_llm` nodes against a fake OpenAI-compatible server
//! on 127.0.0.1 that waits 20 ms before each answer. The physical limit is the server's
//! latency, 20 × 20 ms = 400 ms; the target is a total within 5 % of it. The same graph is run
//! by sherma 1.8.0 (its own ChatOpenAI over real HTTP, `bench/sherma_llm_peer.py`) against the
//! same server in the same run, and the ratio is printed.
//!
//! Ours: the live provider (streamed SSE over reqwest), a `RunSession` with checkpoints and
//! events kept (as in the app); median of 7 after 2 warm-ups. `cargo bench --bench llm_calls`.
//! Under `cargo test --all-targets` it does nothing.


#[path = "llm_chain.rs"]
mod llm_chain;
#[path = "peer.rs"]
mod peer;
use llm_chain::chain_yaml;
use peer::sherma_python;
use test_support::fake_llm::{FakeLlm, Reply};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchyard::doc;
use switchyard::llm::LiveProvider;
use switchyard::llm::config::{LlmConfig, ProviderEntry, ProviderFile};
use switchyard::run::events::RunStatus;
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::session::{RunOptions, Status};

const CALLS: usize = 20;
const LATENCY: Duration = Duration::from_millis(20);
const WARMUP: usize = 2;
const RUNS: usize = 7;
const TARGET_OVERHEAD: f64 = 0.05;



fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("llm_calls: a benchmark (cargo bench --bench llm_calls); nothing to do under cargo test");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tmp/switchyard-bench");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("llm_chain.yaml");
    std::fs::write(&file, chain_yaml(CALLS)).unwrap();

    // `LLM_CALLS_LATENCY_MS` overrides the server's latency (0 shows the HTTP round trip alone).
    let latency = std::env::var("LLM_CALLS_LATENCY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(LATENCY, Duration::from_millis);
    let fake = FakeLlm::start();
    fake.set_latency(latency);
    fake.set_default(Reply::Text("ok".into()));
    fake.forget_requests();

    let mut providers = BTreeMap::new();
    providers.insert(
        "openai".to_string(),
        ProviderEntry { base_url: Some(fake.base()), api_key: Some("sk-bench".into()), ..Default::default() },
    );
    let config = LlmConfig::new(ProviderFile { default_model: None, providers }, BTreeMap::new());
    let d = Arc::new(doc::load_path(&file));
    let req = RunRequest { input: Some("go".into()), ..Default::default() };
    let once = || {
        let opts = RunOptions::new(Box::new(LiveProvider::new(config.clone())));
        let t0 = Instant::now();
        let mut s = launch::session(d.clone(), &req, opts).expect("session");
        let st = s.run().clone();
        let dt = t0.elapsed();
        match st {
            Status::Finished { status: RunStatus::Completed, .. } => {}
            other => panic!("the chain did not complete: {other:?}"),
        }
        let n = s.state()["messages"].as_array().map_or(0, |m| m.len());
        assert_eq!(n, CALLS + 1, "one answer per call");
        dt
    };
    for _ in 0..WARMUP {
        once();
    }
    let mut times: Vec<Duration> = (0..RUNS).map(|_| once()).collect();
    times.sort();
    let ours = times[RUNS / 2];
    let limit = latency * CALLS as u32;
    let overhead = ours.as_secs_f64() / limit.as_secs_f64() - 1.0;
    println!(
        "llm chain ({CALLS} sequential calls, fake server latency {} ms): ours {:.1} ms; physical limit {} ms; overhead {:.1}% (target ≤ {:.0}%: {}) [median of {RUNS}, min {:.1}, max {:.1}]",
        latency.as_millis(),
        ours.as_secs_f64() * 1e3,
        limit.as_millis(),
        overhead * 100.0,
        TARGET_OVERHEAD * 100.0,
        if overhead <= TARGET_OVERHEAD { "met" } else { "NOT met" },
        times[0].as_secs_f64() * 1e3,
        times[RUNS - 1].as_secs_f64() * 1e3,
    );

    // The floor a client can reach on this machine: the same 20 requests with a bare HTTP
    // client (no engine), for reference.
    let floor = {
        let url = format!("{}/chat/completions", fake.base());
        let body = serde_json::json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "go"}], "stream": true});
        let bare = || {
            let t0 = Instant::now();
            for _ in 0..CALLS {
                let (url, body) = (url.clone(), body.clone());
                switchyard::rt::block_on(async move {
                    let r = switchyard::llm::http::client().post(url).json(&body).send().await.unwrap();
                    r.bytes().await.unwrap()
                });
            }
            t0.elapsed()
        };
        bare();
        let mut v: Vec<Duration> = (0..RUNS).map(|_| bare()).collect();
        v.sort();
        v[RUNS / 2]
    };
    println!(
        "llm chain: for reference, the same {CALLS} requests from a bare HTTP client take {:.1} ms (engine overhead over that: {:.2} ms per call)",
        floor.as_secs_f64() * 1e3,
        (ours.as_secs_f64() - floor.as_secs_f64()) * 1e3 / CALLS as f64
    );

    let Some(py) = sherma_python().filter(|p| p.exists()) else {
        println!("llm chain: sherma peer skipped (no venv; `./dev bench` creates it)");
        return;
    };
    let out = Command::new(&py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/sherma_llm_peer.py"))
        .args(["--yaml", &file.to_string_lossy(), "--base-url", &fake.base(), "--calls", &CALLS.to_string(), "--runs", "5"])
        .output()
        .expect("start the sherma peer");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
    let Some(secs) = v.get("seconds").and_then(serde_json::Value::as_f64).filter(|_| out.status.success()) else {
        eprintln!("sherma_llm_peer.py failed ({}):\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        std::process::exit(1);
    };
    println!(
        "llm chain: sherma 1.8.0 {:.1} ms (overhead {:.1}% over the limit); ratio sherma/ours = {:.2}",
        secs * 1e3,
        (secs / limit.as_secs_f64() - 1.0) * 100.0,
        secs / ours.as_secs_f64()
    );
}
