//! Run benchmark, side by side with sherma 1.8.0: the same agent files run by this engine and
//! by upstream sherma (Python, LangGraph), time per step compared.
//!
//! - `bench/steps/loop.yaml`: a loop of `set_state` / `data_transform` nodes with CEL
//!   conditions on the edges; 10,001 steps (5,000 iterations of two nodes, plus `init`).
//! - `bench/steps/tool_loop.yaml`: a `call_llm` node binding one Python tool
//!   (`bench_tools.echo`); the scripted model asks for the tool `CALLS` times, then answers;
//!   2 * CALLS + 1 steps (the derived `agent_tools` node runs the tool).
//!
//! Our side: `ShermaMachine` in a `RunSession` with checkpoints on (one per step, the default),
//! events off for the headline number and on for a second one; median of `RUNS` after warm-up.
//! The timed part is creating the machine and the session and running it to the end (the file
//! is loaded once beforehand; the scripted replies are parsed outside the timing). Tools run in
//! the Python bridge, started once and shared by the runs (sherma imports its tools once too).
//!
//! sherma's side: `bench/sherma_peer.py` run with the venv python (`SWITCHYARD_SHERMA_PYTHON`,
//! else `~/.cache/switchyard-tools/sherma-venv/bin/python`; `./dev bench` creates the venv). It
//! times `graph.ainvoke` alone, with the YAML's MemorySaver checkpointer, and prints JSON.
//! Without the venv the peer is skipped with a message and no ratio is printed.
//!
//! `cargo bench --bench run_steps` (or `bench/run`) measures in release. Under
//! `cargo test --all-targets` (no `--bench` argument) it does nothing: it is not part of the
//! test suite (it needs Python and takes a few minutes).

#[path = "peer.rs"]
mod peer;
use peer::sherma_python;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use switchyard::doc::{self, Document};
use switchyard::run::events::RunStatus;
use switchyard::run::provider::ScriptedProvider;
use switchyard::run::pybridge::PyBridge;
use switchyard::run::session::{RunOptions, RunSession, Status};
use switchyard::run::sherma::{ShermaMachine, ShermaOptions, ToolRunner};

/// Loop iterations (two nodes each): 10,001 steps.
const LIMIT: u64 = 5_000;
/// Tool calls before the final answer: 201 steps. The history grows by two messages a round
/// and sherma's cost per step grows with it (about 12 ms/step at 100 calls, 170 ms/step at 500),
/// so the tool loop is kept short enough for the peer to finish in seconds.
const CALLS: u64 = 100;
const WARMUP: usize = 2;
const RUNS: usize = 7;
/// Runs of the sherma peer per case (median): one 10,001-step loop takes about 35 s.
fn peer_runs(case: &str) -> usize {
    if case == "loop" { 1 } else { 3 }
}
const TARGET_RATIO: f64 = 100.0;

fn steps_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/steps")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The scripted replies of the tool loop: `calls` tool calls, then a text answer.
fn replies_yaml(calls: u64) -> String {
    let mut s = String::from("replies:\n");
    for i in 0..calls {
        s.push_str(&format!(
            "  - content: \"\"\n    tool_calls:\n      - name: echo\n        id: call_{i}\n        args: {{text: \"ping {i}\"}}\n"
        ));
    }
    s.push_str("  - content: done\n");
    s
}

struct Case {
    name: &'static str,
    file: &'static str,
    agent: &'static str,
    input: Value,
    /// Scripted replies (tool loop only).
    replies: Option<String>,
    expected_steps: u64,
}

fn cases(limit: u64, calls: u64) -> Vec<Case> {
    vec![
        Case {
            name: "loop",
            file: "loop.yaml",
            agent: "loop",
            input: json!({ "limit": limit }),
            replies: None,
            expected_steps: 2 * limit + 1,
        },
        Case {
            name: "tool_loop",
            file: "tool_loop.yaml",
            agent: "tool_loop",
            input: json!({ "messages": [{ "role": "user", "content": "go" }] }),
            replies: Some(replies_yaml(calls)),
            expected_steps: 2 * calls + 1,
        },
    ]
}

/// One run to the end; returns the time and the number of steps.
fn run_once(
    doc: &Arc<Document>,
    case: &Case,
    tools: &Arc<Mutex<dyn ToolRunner>>,
    keep_events: bool,
) -> (Duration, u64) {
    // Parsed from memory; the path only names the script in messages.
    let script_path = steps_dir().join("tool_loop.replies.yaml");
    let provider = ScriptedProvider::from_str(&script_path, case.replies.as_deref().unwrap_or("replies: []\n"))
        .unwrap_or_else(|d| panic!("scripted replies: {d:?}"));
    let opts = ShermaOptions { tools: Some(tools.clone()), ..ShermaOptions::default() };
    // Building the machine (CEL compiled, tools bound) is not timed, as the peer does not time
    // loading and compiling its graph: both sides time the run alone.
    let machine = ShermaMachine::new(doc.clone(), Some(case.agent), case.input.clone(), opts)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let t = Instant::now();
    let mut ro = RunOptions::new(Box::new(provider));
    ro.keep_events = keep_events;
    assert!(ro.checkpoints, "checkpoints must stay on");
    let mut s = RunSession::new(Box::new(machine), case.input.clone(), ro);
    s.run();
    let dt = t.elapsed();
    match s.status() {
        Status::Finished { status, .. } => {
            assert_eq!(*status, RunStatus::Completed, "{}: run ended {status:?}: {:?}", case.name, s.failure());
        }
        other => panic!("{}: run did not finish: {other:?}", case.name),
    }
    assert_eq!(s.steps(), case.expected_steps, "{}: steps", case.name);
    if keep_events {
        assert!(s.event_count() > 0, "{}: events kept", case.name);
    }
    std::hint::black_box(s.state());
    (dt, s.steps())
}

/// `bench_tools.echo` without Python: separates the engine's own cost from the bridge's.
struct InProcessEcho;

impl ToolRunner for InProcessEcho {
    fn call(&mut self, _import_path: &str, args: &Value, _timeout: Duration) -> Result<Value, String> {
        Ok(args.get("text").cloned().unwrap_or(Value::Null))
    }
    fn describe(&mut self, _import_path: &str) -> Option<(String, Value)> {
        Some((
            "Return the text unchanged.".into(),
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ))
    }
}

/// Median round trip of one bridge `call` and one `describe` of `bench_tools.echo`.
fn bridge_round_trips(tools: &Arc<Mutex<dyn ToolRunner>>) -> (Duration, Duration) {
    let mut r = tools.lock().unwrap();
    let args = json!({"text": "ping"});
    let (mut calls, mut describes) = (Vec::new(), Vec::new());
    for i in 0..220 {
        let t = Instant::now();
        let v = r.call("bench_tools.echo", &args, Duration::from_secs(60)).expect("bridge call");
        let dc = t.elapsed();
        assert_eq!(v, json!("ping"));
        let t = Instant::now();
        r.describe("bench_tools.echo").expect("bridge describe");
        let dd = t.elapsed();
        if i >= 20 {
            calls.push(dc);
            describes.push(dd);
        }
    }
    (median(calls), median(describes))
}

struct Ours {
    per_step: Duration,
    min: Duration,
    max: Duration,
    steps: u64,
    per_step_events: Duration,
}

fn measure_ours(case: &Case, tools: &Arc<Mutex<dyn ToolRunner>>) -> Ours {
    let path = steps_dir().join(case.file);
    let doc = Arc::new(doc::load_path(&path));
    for _ in 0..WARMUP {
        run_once(&doc, case, tools, false);
    }
    let mut times = Vec::with_capacity(RUNS);
    let mut steps = 0;
    for _ in 0..RUNS {
        let (dt, n) = run_once(&doc, case, tools, false);
        times.push(dt);
        steps = n;
    }
    let min = *times.iter().min().unwrap();
    let max = *times.iter().max().unwrap();
    let med = median(times);
    let mut with_events = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        with_events.push(run_once(&doc, case, tools, true).0);
    }
    let n = steps as u32;
    Ours { per_step: med / n, min: min / n, max: max / n, steps, per_step_events: median(with_events) / n }
}


struct Peer {
    steps: u64,
    seconds: f64,
}

/// Run the sherma peer; `Err` says why there is no number.
fn run_peer(python: &Path, case: &Case, limit: u64, calls: u64) -> Result<Peer, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/sherma_peer.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(case.name)
        .args(["--limit", &limit.to_string(), "--calls", &calls.to_string(), "--runs", &peer_runs(case.name).to_string()])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).unwrap_or("");
    if !out.status.success() || line.is_empty() {
        return Err(format!(
            "sherma_peer.py {} failed ({}):\n{}\n{}",
            case.name,
            out.status,
            stdout.trim_end(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        ));
    }
    let v: Value = serde_json::from_str(line).map_err(|e| format!("bad peer output `{line}`: {e}"))?;
    match (v["steps"].as_u64(), v["seconds"].as_f64()) {
        (Some(steps), Some(seconds)) if steps > 0 => Ok(Peer { steps, seconds }),
        _ => Err(format!("peer output without steps/seconds: {line}")),
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("run_steps: not a test (needs Python, takes minutes); run `cargo bench --bench run_steps`");
        return;
    }
    // Overrides, e.g. to see how the cost per step grows with the history.
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (limit, calls) = (env("RUN_STEPS_LIMIT", LIMIT), env("RUN_STEPS_CALLS", CALLS));
    // One bridge for every run (plain `python3`, or SWITCHYARD_PYTHON), like sherma's tools
    // that are imported once when the graph is built.
    let bridge = PyBridge::start(None, &[steps_dir()]).unwrap_or_else(|e| panic!("python bridge: {e}"));
    let tools: Arc<Mutex<dyn ToolRunner>> = Arc::new(Mutex::new(bridge));

    let python = sherma_python();
    let peer_ok = python.as_deref().is_some_and(|p| p.exists());
    if !peer_ok {
        println!(
            "sherma peer: SKIPPED, no venv python at {} (run `./dev bench` to create it, or set \
             SWITCHYARD_SHERMA_PYTHON); only our numbers are printed",
            python.as_deref().map(|p| p.display().to_string()).unwrap_or_else(|| "?".into())
        );
    }
    let mut failed = false;
    for case in cases(limit, calls) {
        let ours = measure_ours(&case, &tools);
        println!(
            "run {} ({} steps, checkpoints on): ours {:.2} µs/step [events off, median of {RUNS}, min {:.2}, max {:.2}]; \
             {:.2} µs/step with events kept",
            case.name,
            ours.steps,
            us(ours.per_step),
            us(ours.min),
            us(ours.max),
            us(ours.per_step_events)
        );
        let mut core_per_step = None;
        if case.replies.is_some() {
            let (call, describe) = bridge_round_trips(&tools);
            let in_process: Arc<Mutex<dyn ToolRunner>> = Arc::new(Mutex::new(InProcessEcho));
            let core = measure_ours(&case, &in_process);
            println!(
                "run {} breakdown: python bridge round trip {:.1} µs per call, {:.1} µs per describe \
                 (a run describes the tool once, then calls it once per round); with the tool in-process instead: \
                 {:.2} µs/step (events off), {:.2} µs/step (events kept)",
                case.name,
                us(call),
                us(describe),
                us(core.per_step),
                us(core.per_step_events)
            );
            core_per_step = Some(core.per_step);
        }
        if !peer_ok {
            continue;
        }
        match run_peer(python.as_deref().unwrap(), &case, limit, calls) {
            Ok(peer) => {
                let theirs = peer.seconds * 1e6 / peer.steps as f64;
                let ratio = theirs / us(ours.per_step);
                let ratio_events = theirs / us(ours.per_step_events);
                let note = if peer.steps != ours.steps {
                    format!(" (sherma ran {} steps, compared per step)", peer.steps)
                } else {
                    String::new()
                };
                let verdict = if ratio >= TARGET_RATIO { "met" } else { "NOT met" };
                let core = core_per_step
                    .map(|c| format!("; {:.0} against ours with the tool in-process", theirs / us(c)))
                    .unwrap_or_default();
                println!(
                    "run {}: sherma 1.8.0 {:.1} µs/step ({} steps in {:.2} s, MemorySaver on){note}; \
                     ratio sherma/ours = {:.0} (target {TARGET_RATIO:.0}: {verdict}), {:.0} with events kept{core}",
                    case.name, theirs, peer.steps, peer.seconds, ratio, ratio_events
                );
            }
            Err(e) => {
                println!("run {}: sherma peer FAILED: {e}", case.name);
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
