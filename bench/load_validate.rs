//! Load + validate benchmark: generated 2,000-node graphs of both dialects, and validation
//! throughput over the shared conformance corpus.
//!
//! `cargo bench --bench load_validate` (or `bench/run`) measures in release. Under
//! `cargo test --all-targets` (no `--bench` argument) it runs once as a smoke test: the generated
//! graphs must load and validate with no errors.

#[path = "gen.rs"]
mod generate;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use switchyard::{doc, graph, validate};

const NODES: usize = 2_000;
const TARGET_MS: f64 = 100.0;
const WARMUP: usize = 5;
const RUNS: usize = 30;

fn load_validate(path: &Path) -> (usize, usize) {
    let d = doc::load_path(path);
    let diags = validate::validate(&d, None);
    validate::counts(&diags)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_runs(path: &Path, warmup: usize, runs: usize) -> (Duration, Duration, Duration) {
    for _ in 0..warmup {
        std::hint::black_box(load_validate(path));
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(load_validate(path));
        times.push(t.elapsed());
    }
    let min = *times.iter().min().unwrap();
    let max = *times.iter().max().unwrap();
    (median(times), min, max)
}

/// Median time of `load_path` alone and of `validate` alone.
fn breakdown(path: &Path) -> (Duration, Duration) {
    let (mut load, mut check) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        let d = doc::load_path(path);
        load.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(validate::validate(&d, None));
        check.push(t.elapsed());
    }
    (median(load), median(check))
}

fn write_inputs(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir.join("loki-big/scripts")).unwrap();
    let sherma = dir.join("sherma-big.yaml");
    std::fs::write(&sherma, generate::sherma(NODES)).unwrap();
    let loki = dir.join("loki-big/graph.yaml");
    std::fs::write(&loki, generate::loki(NODES)).unwrap();
    std::fs::write(
        dir.join("loki-big/scripts/step.sh"),
        "#!/bin/sh\necho '{}'\n",
    )
    .unwrap();
    (sherma, loki)
}

/// The generated files are what they claim: the right dialect, `NODES` declared nodes, no errors.
fn check_inputs(sherma: &Path, loki: &Path) {
    for (path, dialect) in [(sherma, doc::Dialect::Sherma), (loki, doc::Dialect::Loki)] {
        let d = doc::load_path(path);
        assert_eq!(d.dialect(), Some(dialect), "{}", path.display());
        let diags = validate::validate(&d, None);
        let errors: Vec<String> = diags
            .iter()
            .filter(|x| x.is_error())
            .take(10)
            .map(|x| format!("{} {}:{} {}", x.code, x.line, x.column, x.message))
            .collect();
        assert!(
            errors.is_empty(),
            "{} has errors:\n{}",
            path.display(),
            errors.join("\n")
        );
        let (g, _) = graph::lower(&d, None);
        let g = g.expect("lowers to a graph");
        let declared =
            g.g.node_weights()
                .filter(|n| !n.derived && !n.id.starts_with("__"))
                .count();
        assert_eq!(
            declared,
            NODES,
            "{}: declared nodes in the graph",
            path.display()
        );
    }
}

fn corpus_files() -> Vec<PathBuf> {
    switchyard::testdata::yaml_files([switchyard::testdata::conformance_dir()])
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("switchyard-bench");
    let (sherma, loki) = write_inputs(&dir);
    check_inputs(&sherma, &loki);
    if !bench_mode {
        // Smoke run under `cargo test`: one timed pass, no claims.
        let (t, _, _) = time_runs(&sherma, 0, 1);
        let (u, _, _) = time_runs(&loki, 0, 1);
        println!("bench smoke (debug build, not a measurement): sherma {t:.1?}, loki {u:.1?}");
        return;
    }
    if cfg!(debug_assertions) {
        println!(
            "warning: debug build; run `cargo bench --bench load_validate` for release numbers"
        );
    }
    println!(
        "inputs: {} ({} bytes), {} ({} bytes)",
        sherma.display(),
        std::fs::metadata(&sherma).unwrap().len(),
        loki.display(),
        std::fs::metadata(&loki).unwrap().len()
    );
    for (label, path) in [("sherma", &sherma), ("Loki", &loki)] {
        let (med, min, max) = time_runs(path, WARMUP, RUNS);
        let ms = med.as_secs_f64() * 1e3;
        println!(
            "load+validate {NODES}-node {label}: {ms:.2} ms (target {TARGET_MS:.0} ms, ratio target/actual = {:.2}) [median of {RUNS}, min {:.2} ms, max {:.2} ms]",
            TARGET_MS / ms,
            min.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3
        );
        let (load, check) = breakdown(path);
        println!(
            "    of which load {:.2} ms, validate {:.2} ms (medians)",
            load.as_secs_f64() * 1e3,
            check.as_secs_f64() * 1e3
        );
    }
    // Scaling: time per node at 1,000 / 2,000 / 4,000 nodes; flat means linear.
    for (label, make) in [
        ("sherma", generate::sherma as fn(usize) -> String),
        ("Loki", generate::loki),
    ] {
        let mut line = format!("scaling {label}:");
        for n in [1_000, 2_000, 4_000] {
            let sub = dir.join(format!("scale-{label}-{n}"));
            std::fs::create_dir_all(sub.join("scripts")).unwrap();
            std::fs::write(sub.join("scripts/step.sh"), "#!/bin/sh\necho '{}'\n").unwrap();
            let path = sub.join(if label == "Loki" {
                "graph.yaml"
            } else {
                "agent.yaml"
            });
            std::fs::write(&path, make(n)).unwrap();
            let (med, _, _) = time_runs(&path, 2, 9);
            line += &format!(
                " {n} nodes {:.1} ms ({:.1} µs/node);",
                med.as_secs_f64() * 1e3,
                med.as_secs_f64() * 1e6 / n as f64
            );
        }
        println!("{}", line.trim_end_matches(';'));
    }
    // Throughput over the conformance corpus: whole passes for at least a second.
    let files = corpus_files();
    assert!(!files.is_empty(), "conformance corpus not found");
    for f in &files {
        std::hint::black_box(load_validate(f));
    }
    let t = Instant::now();
    let mut n = 0usize;
    while t.elapsed() < Duration::from_secs(1) {
        for f in &files {
            std::hint::black_box(load_validate(f));
            n += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "validation throughput, conformance corpus ({} files): {:.0} files/s ({:.2} ms per file)",
        files.len(),
        n as f64 / secs,
        secs * 1e3 / n as f64
    );
}
