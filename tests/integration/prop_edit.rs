//! Property test of the edit ops: random sequences of ops (random existing node names, random
//! new names, tricky values) on every conformance file, agents/* and the edit fixtures, then
//! undo by applying the inverses in reverse order. Never panics; every successful op leaves YAML
//! without syntax errors; undoing everything restores the original bytes exactly. The
//! `the_edit_ops_fuzz_check_*` tests run the `edit_ops` fuzz target's whole check
//! (`edit::sequence::run_bytes`) on stable: its committed seeds, and LLLM configs with random ops.

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use std::path::{Path, PathBuf};
use switchyard::doc;
use switchyard::edit::{self, EditOp};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn files() -> Vec<(PathBuf, String)> {
    let c = switchyard::testdata::conformance_dir();
    assert!(c.is_dir(), "the conformance corpus is missing at {}", c.display());
    let roots = [c, Path::new(ROOT).join("agents"), Path::new(ROOT).join("tests/edit")];
    switchyard::testdata::yaml_files(roots)
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect()
}

const TRICKY: &[&str] = &[
    "yes", "no", "123", "1.5", "a: b", "{{x}}", "- x", "#", "x #y", " lead", "trail ", "it's", "\"q\"", "line1\nline2",
    "line1\nline2\n", "two\n\n", "", "~", "null", "on", "é ü", "[a, b]", "{a: 1}", "\t tab", "x\r\ny", "\u{7}bell",
    "__end__", "__start__", "state.x > 1", "  \n x", "a,b", "@at", "`tick`", "%p", "!tag", "&anc", "*ali", "? q",
];

#[derive(Debug, Clone)]
struct Step {
    kind: u8,
    a: usize,
    b: usize,
    c: usize,
    s: usize,
    name: String,
}

fn step() -> impl Strategy<Value = Step> {
    (0u8..14, any::<usize>(), any::<usize>(), any::<usize>(), any::<usize>(), "[a-z_]{1,6}|[A-Za-z0-9 :#'\"{}-]{0,6}")
        .prop_map(|(kind, a, b, c, s, name)| Step { kind, a, b, c, s, name })
}

fn names(d: &doc::Document, agent: Option<&str>) -> Vec<String> {
    match (d.sherma(), d.loki()) {
        (Some(s), _) => s
            .agents
            .iter()
            .find(|a| Some(a.name.value.as_str()) == agent)
            .map(|a| a.nodes.iter().map(|n| n.name.value.clone()).collect())
            .unwrap_or_default(),
        (_, Some(l)) => l.nodes.iter().map(|n| n.id.value.clone()).collect(),
        _ => match d.lllm() {
            // The canvas' ids: `global`, each agent, the bases of the chain.
            Some(l) => std::iter::once("global".to_string())
                .chain(l.effective.agents.iter().map(|a| switchyard::graph::lower_lllm::agent_id(&a.name)))
                .chain(l.layers.iter().rev().skip(1).map(|b| switchyard::graph::lower_lllm::base_id(&b.name)))
                .collect(),
            None => vec![],
        },
    }
}

fn value(st: &Step) -> Json {
    let t = TRICKY[st.s % TRICKY.len()];
    match st.c % 8 {
        0 => Json::Null,
        1 => json!(st.b % 1000),
        2 => json!(st.a % 2 == 0),
        3 => json!([t, st.name]),
        4 => json!({"k": t, "n": {"deep": st.name}}),
        _ => json!(t),
    }
}

fn build(st: &Step, d: &doc::Document, agent: Option<&str>) -> Json {
    let ns = names(d, agent);
    let pick = |i: usize| if ns.is_empty() { "nothing".to_string() } else { ns[i % ns.len()].clone() };
    let (x, y) = (pick(st.a), pick(st.b));
    let tricky = TRICKY[st.s % TRICKY.len()].to_string();
    let new_name = if st.c % 3 == 0 { tricky.clone() } else { st.name.clone() };
    let sherma = d.sherma().is_some();
    let lllm = d.lllm().is_some();
    let kinds: &[&str] = if sherma { switchyard::doc::sherma::NODE_TYPES } else if lllm { &["agent", "global"] } else { switchyard::doc::loki::NODE_TYPES };
    let paths: &[&[&str]] = if lllm {
        &[&["model_args", "temperature"], &["model_name"], &["skills"], &["x"], &["max_llm_recall"], &["name"], &["model_args"], &["system_prompt"]]
    } else {
        &[&["args", "prompt"], &["model"], &["args", "values", "k"], &["x"], &["on_error", "fallback"], &["next"], &["state_updates", "k"], &["args"]]
    };
    let path: Vec<Json> = paths[st.c % paths.len()].iter().map(|p| json!(p)).collect();
    let idx = st.c % 4;
    match st.kind {
        0 => json!({"op": "add_node", "name": new_name, "kind": kinds[st.b % kinds.len()], "after": if st.c % 2 == 0 { Json::Null } else { json!(x) }}),
        1 => json!({"op": "delete_node", "name": x}),
        2 => json!({"op": "rename_node", "from": x, "to": new_name}),
        3 => json!({"op": "set_field", "node": x, "path": path, "value": value(st)}),
        4 => {
            let k = if lllm { ["base", "global", "tactic_type", "agent_configs"][st.b % 4] } else { ["description", "data", "settings", "llms"][st.b % 4] };
            json!({"op": "set_doc_field", "path": [k], "value": value(st)})
        }
        5 => json!({"op": "add_edge", "from": x, "to": if st.c % 5 == 0 { "__end__".into() } else { y }}),
        6 => {
            let k = if sherma { ["static", "branch", "default", "fallback", "entry"] } else { ["next", "route", "on_other", "fallback", "start"] };
            json!({"op": "remove_edge", "from": x, "to": y, "kind": k[st.c % 5], "index": if st.s % 2 == 0 { Json::Null } else { json!(idx) }})
        }
        7 => json!({"op": "add_branch", "from": x, "condition": tricky, "to": y, "index": if st.s % 2 == 0 { Json::Null } else { json!(idx) }}),
        8 => json!({"op": "set_branch", "from": x, "index": idx, "condition": if st.s % 2 == 0 { Json::Null } else { json!(tricky) }, "to": y}),
        9 => json!({"op": "move_branch", "from": x, "index": st.c % 3, "to_index": st.s % 3}),
        10 => json!({"op": "remove_branch", "from": x, "index": idx}),
        11 => json!({"op": "set_default", "from": x, "to": if st.c % 2 == 0 { Json::Null } else { json!(y) }}),
        12 => json!({"op": "rename_node", "from": x, "to": y}),
        _ => json!({"op": "delete_node", "name": tricky}),
    }
}

fn run(steps: &[Step], file_pick: usize, all: &[(PathBuf, String)]) -> Result<usize, TestCaseError> {
    let (path, original) = &all[file_pick % all.len()];
    let d0 = doc::load_str(path, original);
    let agent: Option<String> = d0.sherma().and_then(|s| s.agents.get(file_pick / all.len() % s.agents.len().max(1))).map(|a| a.name.value.clone());
    let mut text = original.clone();
    let mut undo = Vec::new();
    for st in steps {
        let d = doc::load_str(path, &text);
        let j = build(st, &d, agent.as_deref());
        let op: EditOp = serde_json::from_value(j.clone()).unwrap();
        match edit::apply(&text, path, agent.as_deref(), &op) {
            Ok(a) => {
                let nd = doc::load_str(path, &a.text);
                prop_assert!(
                    nd.diagnostics.iter().all(|x| x.code != "yaml-syntax"),
                    "{}: {j} broke the YAML:\n{}",
                    path.display(),
                    a.text
                );
                prop_assert_eq!(a.edit.apply(&text), a.text.clone());
                prop_assert_eq!(a.inverse.apply(&a.text), text.clone());
                undo.push(a.inverse.clone());
                text = a.text;
            }
            Err(e) => {
                prop_assert!(!e.message.is_empty());
                prop_assert!(!e.message.starts_with("internal"), "{}: {j}: {}\n{}", path.display(), e.message, text);
            }
        }
    }
    for inv in undo.iter().rev() {
        text = inv.apply(&text);
    }
    prop_assert_eq!(&text, original, "undo did not restore {}", path.display());
    Ok(undo.len())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, max_shrink_iters: 200, ..ProptestConfig::default() })]
    #[test]
    fn random_ops_then_undo(steps in proptest::collection::vec(step(), 1..8), file_pick in any::<usize>()) {
        let all = files();
        run(&steps, file_pick, &all)?;
    }
}

/// Every file gets a fixed mixed sequence too (so each file is covered on every run).
#[test]
fn every_file_mixed_sequence() {
    let all = files();
    assert!(all.len() >= 20, "{} files", all.len());
    let mut ok = 0;
    for i in 0..all.len() {
        let steps: Vec<Step> = (0..14u8)
            .map(|k| Step { kind: k, a: i + k as usize, b: 2 * i + 1, c: k as usize * 7 + i, s: k as usize * 5 + i, name: format!("n{k}") })
            .collect();
        ok += run(&steps, i, &all).unwrap_or_else(|e| panic!("{e}"));
    }
    // the sequence must mostly succeed on agent files (LLLM configs included), or this test
    // would prove nothing (the corpus also holds YAML that is no agent of ours)
    let agents = all.iter().filter(|(p, t)| switchyard::doc::load_str(p, t).dialect().is_some()).count();
    assert!(agents >= 20, "{agents} agent files");
    assert!(ok >= agents * 5, "only {ok} ops succeeded on {agents} agent files ({} files)", all.len());
}

/// The LLLM configs among [`files`].
fn lllm_files() -> Vec<(PathBuf, String)> {
    files().into_iter().filter(|(p, t)| doc::load_str(p, t).dialect() == Some(doc::Dialect::Lllm)).collect()
}

/// `DOC \0 OPS` as the `edit_ops` fuzz target reads it.
fn fuzz_input(doc: &str, ops: &[u8]) -> Vec<u8> {
    let mut data = doc.as_bytes().to_vec();
    data.push(0);
    data.extend_from_slice(ops);
    data
}

/// The `edit_ops` fuzz target's whole check (`edit::sequence::run_bytes`, which the target only
/// wraps) on stable, so CI proves it: every committed seed of the target's corpus passes.
#[test]
fn the_edit_ops_fuzz_check_passes_on_its_committed_seeds() {
    let dir = Path::new(ROOT).join("fuzz/corpus/edit_ops");
    let mut seeds: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("seed-")))
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 200, "{} seeds", seeds.len());
    let (mut lllm, mut applied) = (0, 0);
    for p in &seeds {
        let out = edit::sequence::run_bytes(&std::fs::read(p).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if out.dialect == Some(doc::Dialect::Lllm) {
            lllm += 1;
            applied += out.applied;
        }
    }
    assert!(lllm >= 60, "{lllm} LLLM seeds (fuzz/seed-corpus makes them)");
    assert!(applied > 0, "no op applied on the {lllm} LLLM seeds");
}

/// The fuzz target's check on every LLLM config with many byte strings: every LLLM op is applied
/// somewhere (so the sequences reach them), and all of them keep the invariants.
#[test]
fn the_edit_ops_fuzz_check_applies_every_lllm_op() {
    let all = lllm_files();
    assert!(all.len() >= 15, "{} LLLM configs", all.len());
    let mut applied = std::collections::BTreeMap::<&str, usize>::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for (path, text) in &all {
        for _ in 0..60 {
            let ops: Vec<u8> = (0..96)
                .map(|_| {
                    // xorshift64*: deterministic bytes
                    x ^= x >> 12;
                    x ^= x << 25;
                    x ^= x >> 27;
                    (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
                })
                .collect();
            let out = edit::sequence::run_bytes(&fuzz_input(text, &ops)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(out.dialect, Some(doc::Dialect::Lllm), "{}", path.display());
            for (name, ok) in out.ops {
                *applied.entry(name).or_default() += ok as usize;
            }
        }
    }
    for name in ["add_node", "delete_node", "rename_node", "set_field", "set_doc_field", "remove_edge"] {
        assert!(applied.get(name).copied().unwrap_or(0) > 0, "`{name}` never applied on an LLLM config: {applied:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, max_shrink_iters: 200, ..ProptestConfig::default() })]
    #[test]
    fn the_edit_ops_fuzz_check_on_lllm_configs_and_random_bytes(file_pick in any::<usize>(), ops in proptest::collection::vec(any::<u8>(), 1..200)) {
        let all = lllm_files();
        let (path, text) = &all[file_pick % all.len()];
        let out = edit::sequence::run_bytes(&fuzz_input(text, &ops)).map_err(|e| TestCaseError::fail(format!("{}: {e}", path.display())))?;
        prop_assert_eq!(out.dialect, Some(doc::Dialect::Lllm));
    }
}
