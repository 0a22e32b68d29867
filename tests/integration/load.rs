//! Load (issue 8, item 5): 200 headless runs at once of a 50-node sherma graph (25 `call_llm`
//! nodes against the fake OpenAI-compatible server over loopback HTTP, 25 `data_transform`
//! nodes), each with its own session, events kept as the debugger keeps them.
//!
//! Checked: every run completes with the right state; the process's resident memory while the
//! 200 runs are in flight stays under a bound; and a second wave of 200 runs does not grow it
//! (nothing accumulates across runs). The numbers are printed (`cargo test --test load --
//! --nocapture`).

use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use test_support::fake_llm::{FakeLlm, Reply};
use switchyard::doc;
use switchyard::llm::LiveProvider;
use switchyard::run::events::RunStatus;
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::session::{RunOptions, Status};
use test_support::TempDir;

const RUNS: usize = 200;
const LLM_NODES: usize = 25;
/// Resident memory the 200 runs in flight may add to the process (debug build).
const GROWTH_BOUND_MB: u64 = 600;

/// A chain of `ask_i` (call_llm) → `tally_i` (data_transform) pairs, 50 nodes.
fn graph() -> String {
    let mut nodes = String::new();
    let mut edges = String::new();
    for i in 0..LLM_NODES {
        nodes.push_str(&format!(
            "        - name: ask_{i}\n          type: call_llm\n          args:\n            prompt:\n              \
             - {{role: system, content: '\"You are step {i}.\"'}}\n              \
             - {{role: messages, content: state.messages}}\n            state_updates:\n              \
             messages: '[llm_response]'\n\
             \x20       - name: tally_{i}\n          type: data_transform\n          args:\n            \
             expression: '{{\"calls\": state.calls + 1, \"last\": \"step-\" + string(state.calls + 1)}}'\n"
        ));
        let next = if i + 1 < LLM_NODES { format!("ask_{}", i + 1) } else { "__end__".into() };
        edges.push_str(&format!("        - {{source: ask_{i}, target: tally_{i}}}\n        - {{source: tally_{i}, target: {next}}}\n"));
    }
    format!(
        "manifest_version: 1\nllms:\n  - id: gpt\n    provider: openai\n    model_name: gpt-4o-mini\n\
         default_llm: {{id: gpt}}\nagents:\n  load:\n    langgraph_config:\n      recursion_limit: 1000\n    state:\n      fields:\n        \
         - {{name: messages, type: list, default: []}}\n        - {{name: calls, type: int, default: 0}}\n        \
         - {{name: last, type: str, default: \"\"}}\n    graph:\n      entry_point: ask_0\n      nodes:\n{nodes}      edges:\n{edges}"
    )
}

fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Run `RUNS` sessions at once; returns (wall time, peak RSS in KB seen while they ran).
fn wave(doc: &Arc<doc::Document>, fake: &FakeLlm) -> (Duration, u64) {
    let peak = Arc::new(AtomicU64::new(rss_kb()));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kb(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let config = fake.config("sk-load", 60.0);
    let t0 = Instant::now();
    let workers: Vec<_> = (0..RUNS)
        .map(|i| {
            let doc = doc.clone();
            let config = config.clone();
            std::thread::Builder::new()
                .stack_size(4 << 20)
                .spawn(move || {
                    let req = RunRequest { input: Some(format!("run {i}")), ..Default::default() };
                    let mut s = launch::session(doc, &req, RunOptions::new(Box::new(LiveProvider::new(config))))
                        .unwrap_or_else(|e| panic!("{e}"));
                    let st = s.run().clone();
                    let state = s.state();
                    (st, state, s.event_count())
                })
                .unwrap()
        })
        .collect();
    for (i, w) in workers.into_iter().enumerate() {
        let (st, state, events) = w.join().unwrap();
        assert!(matches!(st, Status::Finished { status: RunStatus::Completed, .. }), "run {i}: {st:?}");
        assert_eq!(state["calls"], json!(LLM_NODES), "run {i}");
        assert_eq!(state["last"], json!(format!("step-{LLM_NODES}")), "run {i}");
        // The input plus one answer per call_llm node.
        assert_eq!(state["messages"].as_array().map(Vec::len), Some(LLM_NODES + 1), "run {i}");
        assert!(events > 4 * LLM_NODES, "run {i}: {events} events");
    }
    let took = t0.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    (took, peak.load(Ordering::Relaxed).max(rss_kb()))
}

/// The memory bound is about this test's runs alone: the other tests of this binary run in the
/// same process at the same time and move its RSS, so the test runs itself again in a process
/// of its own (`SWITCHYARD_LOAD_ALONE`) and measures there.
#[test]
fn two_hundred_concurrent_runs_of_a_50_node_graph_with_bounded_memory() {
    if std::env::var_os("SWITCHYARD_LOAD_ALONE").is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["load::two_hundred_concurrent_runs_of_a_50_node_graph_with_bounded_memory", "--exact", "--nocapture", "--test-threads=1"])
            .env("SWITCHYARD_LOAD_ALONE", "1")
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("1 passed"), "the load test in a process of its own failed:\n{text}");
        if let Some(line) = text.lines().find_map(|l| l.find("load: ").map(|i| &l[i..])) {
            println!("{line}");
        }
        return;
    }
    let dir = TempDir::new("load");
    let file = dir.join("load.yaml");
    std::fs::write(&file, graph()).unwrap();
    let doc = Arc::new(doc::load_path(&file));
    assert!(!doc.diagnostics.iter().any(|d| d.is_error()), "{:?}", doc.diagnostics);
    let nodes = doc.sherma().unwrap().agents[0].nodes.len();
    assert_eq!(nodes, 2 * LLM_NODES);

    let fake = FakeLlm::start();
    fake.forget_requests();
    fake.set_default(Reply::Text("noted".into()));

    let base = rss_kb();
    let (t1, peak1) = wave(&doc, &fake);
    let after1 = rss_kb();
    let (t2, peak2) = wave(&doc, &fake);
    let after2 = rss_kb();
    let mb = |kb: u64| kb / 1024;
    println!(
        "load: {RUNS} runs x {nodes} nodes ({} LLM calls) at once: wave 1 {:.1} s, wave 2 {:.1} s; \
         RSS before {} MB, peak {} MB / {} MB, after {} MB / {} MB",
        RUNS * LLM_NODES,
        t1.as_secs_f64(),
        t2.as_secs_f64(),
        mb(base),
        mb(peak1),
        mb(peak2),
        mb(after1),
        mb(after2)
    );
    assert!(
        mb(peak1.saturating_sub(base)) < GROWTH_BOUND_MB,
        "200 runs in flight added {} MB (bound {GROWTH_BOUND_MB} MB)",
        mb(peak1.saturating_sub(base))
    );
    // A second wave reuses what the first freed: no growth beyond allocator noise.
    assert!(
        mb(peak2) <= mb(peak1) + mb(peak1.saturating_sub(base)) / 4 + 32,
        "the second wave grew the peak from {} MB to {} MB",
        mb(peak1),
        mb(peak2)
    );
    fake.stop();
}
