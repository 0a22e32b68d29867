//! Edit-and-save round trip on a 10,000-line YAML file: one edit op through the editing session
//! (the engine patches the text) followed by an atomic save, as the desktop app does on Ctrl+S.
//! Also reports the cost of rebuilding the View (validate + lower + layout) the UI redraws from.
//!
//! `cargo bench --bench edit_save` measures in release; under `cargo test --all-targets` it runs
//! once as a smoke test (every op must apply and the file on disk must match the session).

#[path = "gen.rs"]
mod generate;

use std::path::PathBuf;
use std::time::{Duration, Instant};
use switchyard::edit::{EditOp, PathSeg};
use switchyard::studio::Session;

const TARGET_LINES: usize = 10_000;
const TARGET_MS: f64 = 50.0;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A generated file of the dialect with at least `TARGET_LINES` lines.
fn generate(dialect: &str) -> (String, usize) {
    let mut n = 500;
    loop {
        let text = if dialect == "sherma" { generate::sherma(n) } else { generate::loki(n) };
        let lines = text.lines().count();
        if lines >= TARGET_LINES {
            return (text, n);
        }
        n = n * TARGET_LINES / lines.max(1) + 10;
    }
}

fn first_node(s: &Session) -> String {
    s.view().nodes.iter().find(|n| !n.derived && !n.id.starts_with("__")).map(|n| n.id.clone()).expect("a declared node")
}

fn run(dialect: &str, bench: bool) {
    let (text, n) = generate(dialect);
    let dir = std::env::temp_dir().join(format!("switchyard-bench-edit-{}-{dialect}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join(if dialect == "sherma" { "agent.yaml" } else { "graph.yaml" });
    std::fs::write(&path, &text).unwrap();
    let mut s = Session::open(&path).expect("open the generated file");
    let node = first_node(&s);
    let field: Vec<PathSeg> = if dialect == "sherma" {
        vec![PathSeg::Key("args".into()), PathSeg::Key("note".into())]
    } else {
        vec![PathSeg::Key("description".into())]
    };
    let runs = if bench { 30 } else { 2 };
    let mut rename = Vec::new();
    let mut set = Vec::new();
    let mut views = Vec::new();
    let mut name = node.clone();
    // As in the app: the UI redraws from the View after every edit, then the next edit comes.
    for i in 0..runs + if bench { 5 } else { 0 } {
        let keep = i >= if bench { 5 } else { 0 };
        let new_name = format!("{node}_{i}");
        let t = Instant::now();
        s.apply(&EditOp::RenameNode { from: name.clone(), to: new_name.clone() }).expect("rename applies");
        s.save(false).expect("save");
        let d1 = t.elapsed();
        name = new_name;
        let t = Instant::now();
        let v = s.view();
        let d3 = t.elapsed();
        assert!(v.nodes.iter().any(|x| x.id == name));
        let t = Instant::now();
        s.apply(&EditOp::SetField { node: name.clone(), path: field.clone(), value: Some(serde_json::json!(format!("edit {i}"))) })
            .expect("set_field applies");
        s.save(false).expect("save");
        let d2 = t.elapsed();
        std::hint::black_box(s.view());
        if keep {
            rename.push(d1);
            set.push(d2);
            views.push(d3);
        }
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), s.text(), "the file on disk is what the session holds");
    if bench {
        // Where the time goes: the op alone (engine text patch) and the save alone.
        let t = Instant::now();
        for _ in 0..10 {
            std::hint::black_box(switchyard::edit::apply(s.text(), &path, s.agent(), &EditOp::RenameNode { from: name.clone(), to: "zz".into() }).unwrap());
        }
        let op_only = t.elapsed() / 10;
        let t = Instant::now();
        for _ in 0..10 {
            s.save(true).unwrap();
        }
        let save_only = t.elapsed() / 10;
        println!("    for reference: the edit op from scratch (parsing the text itself) {:.2} ms; the atomic save alone {:.2} ms", ms(op_only), ms(save_only));
        let lines = text.lines().count();
        let (r, st, v) = (ms(median(rename)), ms(median(set)), ms(median(views)));
        println!(
            "edit+save {dialect} {lines} lines ({n} nodes): rename_node {r:.2} ms (target {TARGET_MS} ms, ratio target/actual = {:.2}); set_field {st:.2} ms (ratio {:.2}) [median of {runs}]",
            TARGET_MS / r,
            TARGET_MS / st
        );
        println!("    View rebuild after the edit (validate + lower + layout): {v:.2} ms");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    run("sherma", bench);
    run("loki", bench);
    if !bench {
        println!("edit_save smoke test: ok (run `cargo bench --bench edit_save` to measure)");
    }
}
