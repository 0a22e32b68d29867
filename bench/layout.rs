//! Layout benchmark: `layout::layout` on generated graphs of 500 / 1,000 / 2,000 / 5,000 nodes
//! (the sherma and Loki generators of `gen.rs`, and a wide random graph with back edges).
//!
//! The target is the share of the 1.5 s "open to interactive" budget allotted to layout: 150 ms.
//! `cargo bench --bench layout` measures in release. Under `cargo test --all-targets` (no
//! `--bench` argument) it runs once as a smoke test: every node gets a box.

#[path = "gen.rs"]
mod generate;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use switchyard::doc::Dialect;
use switchyard::graph::{EdgeKind, GEdge, GNode, Graph};
use switchyard::{doc, graph, layout};

const SIZES: [usize; 4] = [500, 1_000, 2_000, 5_000];
const TARGET_MS: f64 = 150.0;
const WARMUP: usize = 3;
const RUNS: usize = 21;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_runs(g: &Graph, warmup: usize, runs: usize) -> (Duration, Duration, Duration) {
    for _ in 0..warmup {
        std::hint::black_box(layout::layout(g));
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(layout::layout(g));
        times.push(t.elapsed());
    }
    let min = *times.iter().min().unwrap();
    let max = *times.iter().max().unwrap();
    (median(times), min, max)
}

/// Write the generated file, load and lower it (not timed).
fn lowered(dir: &Path, dialect: &str, n: usize) -> Graph {
    let sub = dir.join(format!("layout-{dialect}-{n}"));
    std::fs::create_dir_all(sub.join("scripts")).unwrap();
    let path = if dialect == "Loki" {
        std::fs::write(sub.join("scripts/step.sh"), "#!/bin/sh\necho '{}'\n").unwrap();
        std::fs::write(sub.join("graph.yaml"), generate::loki(n)).unwrap();
        sub.join("graph.yaml")
    } else {
        std::fs::write(sub.join("agent.yaml"), generate::sherma(n)).unwrap();
        sub.join("agent.yaml")
    };
    let d = doc::load_path(&path);
    graph::lower(&d, None).0.expect("generated file lowers")
}

/// A wide graph: every node hangs off one of the previous 50, 30% get a second edge a few
/// layers down, 5% a back edge, 1% an edge anywhere (deterministic LCG).
fn wide(n: usize) -> Graph {
    let mut s: u64 = 0x5eed;
    let mut rnd = move |m: usize| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) as usize) % m.max(1)
    };
    let mut g = Graph::new(Dialect::Loki, "wide");
    let ix: Vec<_> = (0..n)
        .map(|i| {
            g.add_node(GNode {
                id: format!("node_{i}"),
                kind: "llm".into(),
                derived: false,
                summary: String::new(),
                span: None,
                order: i,
                dynamic_next: false,
            })
        })
        .collect();
    let mut out_count = vec![0usize; n];
    let mut add = |g: &mut Graph, a: usize, b: usize| {
        let e = GEdge {
            kind: EdgeKind::Next,
            label: None,
            derived: false,
            dynamic: false,
            fanout: false,
            order: out_count[a],
            span: None,
        };
        out_count[a] += 1;
        g.add_edge(ix[a], ix[b], e);
    };
    for i in 1..n {
        let p = i - 1 - rnd(i.min(50));
        add(&mut g, p, i);
        if rnd(10) < 3 {
            let t = (i + 1 + rnd(60)).min(n - 1);
            add(&mut g, i, t);
        }
        if rnd(20) == 0 {
            let t = rnd(i);
            add(&mut g, i, t);
        }
        if rnd(100) == 0 {
            let t = rnd(n);
            add(&mut g, i, t);
        }
    }
    g.entry = Some(ix[0]);
    g
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("switchyard-bench");
    if !bench_mode {
        // Smoke run under `cargo test`: one pass per kind at the smallest size, no claims.
        for (label, g) in [
            ("sherma", lowered(&dir, "sherma", SIZES[0])),
            ("Loki", lowered(&dir, "Loki", SIZES[0])),
            ("wide", wide(SIZES[0])),
        ] {
            let t = Instant::now();
            let l = layout::layout(&g);
            assert_eq!(l.nodes.len(), g.g.node_count(), "{label}: one box per node");
            println!(
                "bench smoke (debug build, not a measurement): layout {label} {} nodes {:.1?}",
                g.g.node_count(),
                t.elapsed()
            );
        }
        return;
    }
    if cfg!(debug_assertions) {
        println!("warning: debug build; run `cargo bench --bench layout` for release numbers");
    }
    for label in ["sherma", "Loki", "wide"] {
        for n in SIZES {
            let g = match label {
                "wide" => wide(n),
                _ => lowered(&dir, label, n),
            };
            let (med, min, max) = time_runs(&g, WARMUP, RUNS);
            let ms = med.as_secs_f64() * 1e3;
            println!(
                "layout {n}-node {label} ({} nodes, {} edges in the IR): {ms:.2} ms (target {TARGET_MS:.0} ms, ratio target/actual = {:.1}) [median of {RUNS}, min {:.2} ms, max {:.2} ms]",
                g.g.node_count(),
                g.g.edge_count(),
                TARGET_MS / ms,
                min.as_secs_f64() * 1e3,
                max.as_secs_f64() * 1e3
            );
        }
    }
}
