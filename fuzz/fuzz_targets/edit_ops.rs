//! Input `DOC \0 OPS`: DOC is a sherma or Loki file (the seeds are the edit fixtures, the
//! small conformance files, agents/ and tests/cases/), OPS drives up to 6 edit ops on it, with
//! node names taken from the document, tricky YAML-ish strings or fuzzed text, then undoes them.
//!
//! Checks, as tests/prop_edit.rs does: no panic; a refused op says why and is never the
//! engine's own "internal error" (its output check); a successful op's `edit` turns the old text
//! into the new one and is minimal (only the changed bytes), its `inverse` restores the old
//! bytes, the new text has no YAML syntax error and keeps the dialect; undoing every op in
//! reverse order gives back the original bytes exactly.
#![no_main]

use libfuzzer_sys::arbitrary::{Result as AResult, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value as Json, json};
use std::path::Path;
use switchyard::doc;
use switchyard::edit::{self, EditOp, PathSeg};

const TRICKY: &[&str] = &[
    "yes", "no", "123", "1.5", "a: b", "{{x}}", "- x", "#", "x #y", " lead", "trail ", "it's", "\"q\"",
    "line1\nline2", "line1\nline2\n", "two\n\n", "", "~", "null", "on", "é ü", "[a, b]", "{a: 1}",
    "\t tab", "x\r\ny", "\u{7}bell", "__end__", "__start__", "state.x > 1", "  \n x", "a,b", "@at",
    "`tick`", "%p", "!tag", "&anc", "*ali", "? q", "\u{feff}bom", "x\u{2028}y", "---", "...", "'",
];

const PATHS: &[&[&str]] = &[
    &["args", "prompt"],
    &["model"],
    &["args", "values", "k"],
    &["x"],
    &["on_error", "fallback"],
    &["next"],
    &["state_updates", "k"],
    &["args"],
    &["routes", "yes"],
    &["prompt"],
    &["args", "state_updates", "k"],
    &["options"],
];

fn names(d: &doc::Document, agent: Option<&str>) -> Vec<String> {
    match (d.sherma(), d.loki()) {
        (Some(s), _) => s
            .agents
            .iter()
            .find(|a| Some(a.name.value.as_str()) == agent)
            .map(|a| a.nodes.iter().map(|n| n.name.value.clone()).collect())
            .unwrap_or_default(),
        (_, Some(l)) => l.nodes.iter().map(|n| n.id.value.clone()).collect(),
        _ => vec![],
    }
}

fn string(u: &mut Unstructured, existing: &[String]) -> AResult<String> {
    Ok(match u.int_in_range(0..=5u8)? {
        0..=2 if !existing.is_empty() => existing[u.choose_index(existing.len())?].clone(),
        3 => TRICKY[u.choose_index(TRICKY.len())?].to_string(),
        4 => {
            let n = u.int_in_range(1..=6usize)?;
            (0..n).map(|_| u.choose(b"abcdefghij_-0").map(|&b| b as char)).collect::<AResult<String>>()?
        }
        _ => {
            let s: &str = u.arbitrary()?;
            s.chars().take(12).collect()
        }
    })
}

fn value(u: &mut Unstructured, existing: &[String], depth: u8) -> AResult<Json> {
    Ok(match u.int_in_range(0..=7u8)? {
        0 => Json::Null,
        1 => json!(u.arbitrary::<i64>()?),
        2 => json!(u.arbitrary::<bool>()?),
        3 => json!(u.arbitrary::<f64>()?),
        4 if depth < 2 => {
            let n = u.int_in_range(0..=3usize)?;
            Json::Array((0..n).map(|_| value(u, existing, depth + 1)).collect::<AResult<_>>()?)
        }
        5 if depth < 2 => {
            let n = u.int_in_range(0..=3usize)?;
            let mut m = serde_json::Map::new();
            for _ in 0..n {
                m.insert(string(u, existing)?, value(u, existing, depth + 1)?);
            }
            Json::Object(m)
        }
        _ => json!(string(u, existing)?),
    })
}

fn path(u: &mut Unstructured) -> AResult<Vec<PathSeg>> {
    let mut p: Vec<PathSeg> = PATHS[u.choose_index(PATHS.len())?].iter().map(|s| PathSeg::Key(s.to_string())).collect();
    if u.ratio(1, 4)? {
        p.push(PathSeg::Index(u.int_in_range(0..=3usize)?));
    }
    if u.ratio(1, 8)? {
        let k: &str = u.arbitrary()?;
        p.push(PathSeg::Key(k.chars().take(8).collect()));
    }
    Ok(p)
}

fn index(u: &mut Unstructured) -> AResult<Option<usize>> {
    Ok(if u.arbitrary()? { Some(u.int_in_range(0..=4usize)?) } else { None })
}

fn op(u: &mut Unstructured, d: &doc::Document, agent: Option<&str>) -> AResult<EditOp> {
    let ns = names(d, agent);
    let sherma = d.sherma().is_some();
    let kinds: &[&str] = if sherma { doc::sherma::NODE_TYPES } else { doc::loki::NODE_TYPES };
    let s = |u: &mut Unstructured| string(u, &ns);
    Ok(match u.int_in_range(0..=11u8)? {
        0 => {
            let kind = if u.ratio(1, 16)? { s(u)? } else { kinds[u.choose_index(kinds.len())?].to_string() };
            EditOp::AddNode { name: s(u)?, kind, after: if u.arbitrary()? { Some(s(u)?) } else { None } }
        }
        1 => EditOp::DeleteNode { name: s(u)? },
        2 => EditOp::RenameNode { from: s(u)?, to: s(u)? },
        3 => EditOp::SetField {
            node: s(u)?,
            path: path(u)?,
            value: if u.ratio(1, 5)? { None } else { Some(value(u, &ns, 0)?) },
        },
        4 => {
            let k = ["description", "data", "settings", "llms", "name", "start", "state", "prompts", "x"];
            let mut p = vec![PathSeg::Key(k[u.choose_index(k.len())?].to_string())];
            if u.arbitrary()? {
                p.push(PathSeg::Key(s(u)?));
            }
            EditOp::SetDocField { path: p, value: if u.ratio(1, 5)? { None } else { Some(value(u, &ns, 0)?) } }
        }
        5 => EditOp::AddEdge { from: s(u)?, to: s(u)? },
        6 => {
            let k: &[&str] = if sherma {
                &["static", "branch", "default", "fallback", "entry", "x"]
            } else {
                &["next", "route", "on_other", "fallback", "start", "x"]
            };
            EditOp::RemoveEdge { from: s(u)?, to: s(u)?, kind: k[u.choose_index(k.len())?].to_string(), index: index(u)? }
        }
        7 => EditOp::AddBranch { from: s(u)?, condition: s(u)?, to: s(u)?, index: index(u)? },
        8 => EditOp::SetBranch {
            from: s(u)?,
            index: u.int_in_range(0..=4usize)?,
            condition: if u.arbitrary()? { Some(s(u)?) } else { None },
            to: if u.arbitrary()? { Some(s(u)?) } else { None },
        },
        9 => EditOp::MoveBranch { from: s(u)?, index: u.int_in_range(0..=3usize)?, to_index: u.int_in_range(0..=3usize)? },
        10 => EditOp::RemoveBranch { from: s(u)?, index: u.int_in_range(0..=4usize)? },
        _ => EditOp::SetDefault { from: s(u)?, to: if u.arbitrary()? { Some(s(u)?) } else { None } },
    })
}

fn no_syntax_error(d: &doc::Document) -> bool {
    d.diagnostics.iter().all(|x| x.code != "yaml-syntax")
}

fuzz_target!(|data: &[u8]| {
    let Some(sep) = data.iter().position(|&b| b == 0) else {
        return;
    };
    let Ok(original) = std::str::from_utf8(&data[..sep]) else {
        return;
    };
    let mut u = Unstructured::new(&data[sep + 1..]);
    let Ok(flags) = u.arbitrary::<u8>() else {
        return;
    };
    let path = Path::new(if flags & 1 == 0 { "/nonexistent-switchyard-fuzz/agent.yaml" } else { "/nonexistent-switchyard-fuzz/graph.yaml" });
    let mut d = doc::load_str(path, original);
    let dialect = d.dialect();
    let agent: Option<String> = d
        .sherma()
        .and_then(|s| s.agents.get((flags >> 1) as usize % s.agents.len().max(1)))
        .map(|a| a.name.value.clone());
    let agent = agent.as_deref();
    let mut text = original.to_string();
    let mut undo = Vec::new();
    for _ in 0..6 {
        if u.is_empty() {
            break;
        }
        let Ok(o) = op(&mut u, &d, agent) else { break };
        match edit::apply_doc(&d, &text, agent, &o) {
            Ok(a) => {
                assert_eq!(a.edit.apply(&text), a.text, "{o:?}: edit does not give the new text");
                assert_eq!(a.inverse.apply(&a.text), text, "{o:?}: inverse does not restore");
                assert_eq!(a.edit, edit::diff(&text, &a.text), "{o:?}: edit is not minimal");
                let nd = doc::load_str(path, &a.text);
                assert!(no_syntax_error(&nd), "{o:?} broke the YAML:\n{}", a.text);
                assert_eq!(nd.dialect(), dialect, "{o:?} changed the dialect:\n{}", a.text);
                undo.push(a.inverse);
                text = a.text;
                d = nd;
            }
            Err(e) => {
                assert!(!e.message.is_empty(), "{o:?}: empty error");
                assert!(!e.message.starts_with("internal"), "{o:?}: {}\n{text}", e.message);
            }
        }
    }
    for inv in undo.iter().rev() {
        text = inv.apply(&text);
    }
    assert_eq!(text, original, "undo did not restore the original");
});
