//! Arbitrary sequences of edit ops on one document, and the invariants every op keeps. Shared by
//! the `edit_ops` fuzz target (`fuzz/`, nightly) and the property test
//! `tests/integration/prop_edit.rs` (stable, so CI proves what the fuzz target checks):
//!
//! - [`Vocab`]: what ops on a document are made of, per dialect: the node ids the canvas names
//!   (sherma nodes of the agent, Loki nodes; for an LLLM config `global`, its agents and the bases
//!   of its chain), node kinds, field paths, top-level keys, edge kinds;
//! - [`op`]: one op built from those and a [`Source`] of choices (fuzz bytes, a seeded
//!   generator), with names taken from the document, [`TRICKY`] YAML-ish strings or free text;
//! - [`Sequence`]: applies ops one after another, each checked — a refused op says why and is
//!   never the editor's "internal" error (its own output check); an applied op's `edit` turns the
//!   old text into the new one and is minimal (every byte outside it untouched), its `inverse`
//!   restores the old bytes, the new text parses without a YAML syntax error and keeps the
//!   dialect — then [`Sequence::undo_all`] applies the inverses in reverse order and must give
//!   back the original bytes.

use super::{apply_doc, diff, EditOp, PathSeg, TextEdit};
use model::doc::{self, Dialect, Document};
use model::graph::lower_lllm::{agent_id, base_id, GLOBAL};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

/// Strings that stress YAML quoting, block scalars, comments and special names.
pub const TRICKY: &[&str] = &[
    "yes", "no", "123", "1.5", "a: b", "{{x}}", "- x", "#", "x #y", " lead", "trail ", "it's", "\"q\"", "line1\nline2",
    "line1\nline2\n", "two\n\n", "", "~", "null", "on", "é ü", "[a, b]", "{a: 1}", "\t tab", "x\r\ny", "\u{7}bell", "__end__",
    "__start__", "state.x > 1", "  \n x", "a,b", "@at", "`tick`", "%p", "!tag", "&anc", "*ali", "? q", "\u{feff}bom",
    "x\u{2028}y", "---", "...", "'", "global", "base:x", "agent:global", "{audience}", "*",
];

const SHERMA_FIELDS: &[&[&str]] = &[
    &["args", "prompt"],
    &["model"],
    &["args", "values", "k"],
    &["x"],
    &["on_error", "fallback"],
    &["state_updates", "k"],
    &["args"],
    &["prompt"],
    &["args", "state_updates", "k"],
];
const LOKI_FIELDS: &[&[&str]] = &[&["model"], &["x"], &["next"], &["routes", "yes"], &["prompt"], &["options"], &["args"], &["settings", "k"]];
const LLLM_FIELDS: &[&[&str]] = &[
    &["model_args", "temperature"],
    &["model_args"],
    &["model_name"],
    &["system_prompt_path"],
    &["system_prompt"],
    &["skills"],
    &["tools"],
    &["max_exception_retry"],
    &["max_interrupt_steps"],
    &["max_llm_recall"],
    &["name"],
    &["base"],
    &["x"],
    &["model_args", "extra_body", "k"],
];
const SHERMA_DOC: &[&str] = &["manifest_version", "agents", "llms", "prompts", "tools", "description", "x"];
const LOKI_DOC: &[&str] = &["description", "data", "settings", "llms", "name", "start", "state", "version", "x"];
const LLLM_DOC: &[&str] = &["base", "global", "agent_configs", "agent_group_configs", "tactic_type", "x"];
const SHERMA_EDGES: &[&str] = &["static", "branch", "default", "fallback", "entry", "x"];
const LOKI_EDGES: &[&str] = &["next", "route", "on_other", "fallback", "start", "x"];
const LLLM_EDGES: &[&str] = &["inherits", "defaults", "base", "x"];

/// What the ops on one document are made of (see the module docs).
#[derive(Clone, Debug)]
pub struct Vocab {
    pub dialect: Option<Dialect>,
    /// Node ids as the canvas names them.
    pub names: Vec<String>,
    pub kinds: Vec<String>,
    pub fields: &'static [&'static [&'static str]],
    pub doc_keys: &'static [&'static str],
    pub edge_kinds: &'static [&'static str],
}

impl Vocab {
    /// The vocabulary of `d` (for a sherma file, of its agent `agent`).
    pub fn of(d: &Document, agent: Option<&str>) -> Vocab {
        let dialect = d.dialect();
        let names = if let Some(s) = d.sherma() {
            s.agents
                .iter()
                .find(|a| Some(a.name.value.as_str()) == agent)
                .map(|a| a.nodes.iter().map(|n| n.name.value.clone()).collect())
                .unwrap_or_default()
        } else if let Some(l) = d.loki() {
            l.nodes.iter().map(|n| n.id.value.clone()).collect()
        } else if let Some(l) = d.lllm() {
            let mut ids: Vec<String> = std::iter::once(GLOBAL.to_string())
                .chain(l.effective.agents.iter().map(|a| agent_id(&a.name)))
                .chain(l.layers.iter().rev().skip(1).map(|b| base_id(&b.name)))
                .collect();
            // The base as written (also when the chain could not be read, e.g. no such file).
            if let Some(b) = &l.base {
                let id = base_id(&b.value);
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            ids
        } else {
            Vec::new()
        };
        let (kinds, fields, doc_keys, edge_kinds): (Vec<String>, _, _, _) = match dialect {
            Some(Dialect::Sherma) => (doc::sherma::NODE_TYPES.iter().map(|s| s.to_string()).collect(), SHERMA_FIELDS, SHERMA_DOC, SHERMA_EDGES),
            Some(Dialect::Lllm) => (vec!["agent".into(), "global".into()], LLLM_FIELDS, LLLM_DOC, LLLM_EDGES),
            _ => (doc::loki::NODE_TYPES.iter().map(|s| s.to_string()).collect(), LOKI_FIELDS, LOKI_DOC, LOKI_EDGES),
        };
        Vocab { dialect, names, kinds, fields, doc_keys, edge_kinds }
    }
}

/// Where the choices of [`op`] come from. Each method may fail (a fuzz input that ran out of
/// bytes); the sequence then ends.
pub trait Source {
    /// A number in `0..n` (`n >= 1`).
    fn below(&mut self, n: usize) -> Option<usize>;
    /// Free text of at most `max` characters.
    fn text(&mut self, max: usize) -> Option<String>;
    fn int(&mut self) -> Option<i64>;
    fn float(&mut self) -> Option<f64>;
}

fn pick<'a>(src: &mut dyn Source, list: &'a [&'a str]) -> Option<&'a str> {
    Some(list[src.below(list.len())?])
}

fn chance(src: &mut dyn Source, one_in: usize) -> Option<bool> {
    Some(src.below(one_in)? == 0)
}

/// A node name or a new one: an existing name (half the time), a tricky string, a short word, or
/// free text.
pub fn string(src: &mut dyn Source, v: &Vocab) -> Option<String> {
    Some(match src.below(6)? {
        0..=2 if !v.names.is_empty() => v.names[src.below(v.names.len())?].clone(),
        3 => pick(src, TRICKY)?.to_string(),
        4 => {
            let n = 1 + src.below(6)?;
            (0..n).map(|_| src.below(13).map(|i| b"abcdefghij_-0"[i] as char)).collect::<Option<String>>()?
        }
        _ => src.text(12)?,
    })
}

/// A value for a field: null, numbers, booleans, strings, and lists and mappings two deep.
pub fn value(src: &mut dyn Source, v: &Vocab, depth: u8) -> Option<Json> {
    Some(match src.below(8)? {
        0 => Json::Null,
        1 => json!(src.int()?),
        2 => json!(src.below(2)? == 0),
        3 => json!(src.float()?),
        4 if depth < 2 => {
            let n = src.below(4)?;
            Json::Array((0..n).map(|_| value(src, v, depth + 1)).collect::<Option<_>>()?)
        }
        5 if depth < 2 => {
            let n = src.below(4)?;
            let mut m = serde_json::Map::new();
            for _ in 0..n {
                m.insert(string(src, v)?, value(src, v, depth + 1)?);
            }
            Json::Object(m)
        }
        _ => json!(string(src, v)?),
    })
}

fn field_path(src: &mut dyn Source, v: &Vocab) -> Option<Vec<PathSeg>> {
    let mut p: Vec<PathSeg> = v.fields[src.below(v.fields.len())?].iter().map(|s| PathSeg::Key(s.to_string())).collect();
    if chance(src, 4)? {
        p.push(PathSeg::Index(src.below(4)?));
    }
    if chance(src, 8)? {
        p.push(PathSeg::Key(src.text(8)?));
    }
    Some(p)
}

fn maybe_index(src: &mut dyn Source) -> Option<Option<usize>> {
    Some(if src.below(2)? == 0 { Some(src.below(5)?) } else { None })
}

/// One op of any kind on a document with vocabulary `v`.
pub fn op(src: &mut dyn Source, v: &Vocab) -> Option<EditOp> {
    let s = |src: &mut dyn Source| string(src, v);
    Some(match src.below(12)? {
        0 => {
            let kind = if chance(src, 16)? { s(src)? } else { v.kinds[src.below(v.kinds.len())?].clone() };
            EditOp::AddNode { name: s(src)?, kind, after: if src.below(2)? == 0 { Some(s(src)?) } else { None } }
        }
        1 => EditOp::DeleteNode { name: s(src)? },
        2 => EditOp::RenameNode { from: s(src)?, to: s(src)? },
        3 => EditOp::SetField {
            node: s(src)?,
            path: field_path(src, v)?,
            value: if chance(src, 5)? { None } else { Some(value(src, v, 0)?) },
        },
        4 => {
            let mut p = vec![PathSeg::Key(pick(src, v.doc_keys)?.to_string())];
            if src.below(2)? == 0 {
                p.push(PathSeg::Key(s(src)?));
            }
            if chance(src, 6)? {
                p.push(PathSeg::Index(src.below(3)?));
            }
            EditOp::SetDocField { path: p, value: if chance(src, 5)? { None } else { Some(value(src, v, 0)?) } }
        }
        5 => EditOp::AddEdge { from: s(src)?, to: s(src)? },
        6 => EditOp::RemoveEdge { from: s(src)?, to: s(src)?, kind: pick(src, v.edge_kinds)?.to_string(), index: maybe_index(src)? },
        7 => EditOp::AddBranch { from: s(src)?, condition: s(src)?, to: s(src)?, index: maybe_index(src)? },
        8 => EditOp::SetBranch {
            from: s(src)?,
            index: src.below(5)?,
            condition: if src.below(2)? == 0 { Some(s(src)?) } else { None },
            to: if src.below(2)? == 0 { Some(s(src)?) } else { None },
        },
        9 => EditOp::MoveBranch { from: s(src)?, index: src.below(4)?, to_index: src.below(4)? },
        10 => EditOp::RemoveBranch { from: s(src)?, index: src.below(5)? },
        _ => EditOp::SetDefault { from: s(src)?, to: if src.below(2)? == 0 { Some(s(src)?) } else { None } },
    })
}

/// Ops applied one after another to one document, each checked (see the module docs).
pub struct Sequence {
    path: PathBuf,
    original: String,
    agent: Option<String>,
    text: String,
    doc: Document,
    dialect: Option<Dialect>,
    undo: Vec<TextEdit>,
}

impl Sequence {
    /// A sequence on `original`, read as the file `path` (for a sherma file, its agent `agent`).
    pub fn new(path: &Path, original: &str, agent: Option<&str>) -> Sequence {
        let doc = doc::load_str(path, original);
        let dialect = doc.dialect();
        Sequence {
            path: path.to_path_buf(),
            original: original.to_string(),
            agent: agent.map(str::to_string),
            text: original.to_string(),
            doc,
            dialect,
            undo: Vec::new(),
        }
    }

    /// The document as the ops so far left it.
    pub fn doc(&self) -> &Document {
        &self.doc
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The vocabulary of the document as it is now.
    pub fn vocab(&self) -> Vocab {
        Vocab::of(&self.doc, self.agent.as_deref())
    }

    /// How many ops were applied.
    pub fn applied(&self) -> usize {
        self.undo.len()
    }

    /// Apply `o` and check it: `Ok(true)` applied, `Ok(false)` refused with a reason, `Err` what
    /// it broke.
    pub fn apply(&mut self, o: &EditOp) -> Result<bool, String> {
        let at = || format!("{}: {o:?}", self.path.display());
        match apply_doc(&self.doc, &self.text, self.agent.as_deref(), o) {
            Ok(a) => {
                if a.edit.apply(&self.text) != a.text {
                    return Err(format!("{}: the edit does not give the new text", at()));
                }
                if a.inverse.apply(&a.text) != self.text {
                    return Err(format!("{}: the inverse does not restore the old text", at()));
                }
                if a.edit != diff(&self.text, &a.text) {
                    return Err(format!("{}: the edit {:?} is not minimal (touches bytes it does not change)", at(), a.edit));
                }
                let nd = doc::load_str(&self.path, &a.text);
                if let Some(d) = nd.diagnostics.iter().find(|d| d.code == "yaml-syntax") {
                    return Err(format!("{}: broke the YAML ({}:{}: {}):\n{}", at(), d.line, d.column, d.message, a.text));
                }
                if nd.dialect() != self.dialect {
                    return Err(format!("{}: changed the dialect from {:?} to {:?}:\n{}", at(), self.dialect, nd.dialect(), a.text));
                }
                self.undo.push(a.inverse);
                self.text = a.text;
                self.doc = nd;
                Ok(true)
            }
            Err(e) if e.message.trim().is_empty() => Err(format!("{}: refused without a reason", at())),
            Err(e) if e.message.starts_with("internal") => Err(format!("{}: {}\n{}", at(), e.message, self.text)),
            Err(_) => Ok(false),
        }
    }

    /// Undo every applied op, newest first; the original bytes must come back. Returns how many
    /// ops were undone.
    pub fn undo_all(mut self) -> Result<usize, String> {
        let n = self.undo.len();
        for inv in self.undo.iter().rev() {
            self.text = inv.apply(&self.text);
        }
        if self.text != self.original {
            return Err(format!("{}: undoing {n} ops did not restore the original:\n{}", self.path.display(), self.text));
        }
        Ok(n)
    }
}

/// Choices read from bytes (what a fuzzer mutates): each number from as few bytes as its range
/// needs, little-endian; text as a length and that many bytes (invalid UTF-8 replaced). Runs
/// out (`None`) at the end of the bytes.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            self.0 = &[];
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn word(&mut self, n: usize) -> Option<u64> {
        Some(self.take(n)?.iter().rev().fold(0u64, |acc, &b| acc << 8 | b as u64))
    }
}

impl Source for Bytes<'_> {
    fn below(&mut self, n: usize) -> Option<usize> {
        let n = n.max(1) as u64;
        let bytes = (64 - (n - 1).leading_zeros() as usize).div_ceil(8).max(1);
        Some((self.word(bytes)? % n) as usize)
    }
    fn text(&mut self, max: usize) -> Option<String> {
        let len = self.below(max + 1)?;
        let raw = self.take(len)?;
        Some(String::from_utf8_lossy(raw).chars().take(max).collect())
    }
    fn int(&mut self) -> Option<i64> {
        Some(self.word(8)? as i64)
    }
    fn float(&mut self) -> Option<f64> {
        Some(f64::from_bits(self.word(8)?))
    }
}

/// What [`run_bytes`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub dialect: Option<Dialect>,
    /// Ops applied (all undone again).
    pub applied: usize,
    /// Ops refused with a reason.
    pub refused: usize,
    /// Each op's name (`set_field`, …) and whether it was applied, in order.
    pub ops: Vec<(&'static str, bool)>,
}

/// The name of an op as the UI sends it (`op` of its JSON).
pub fn op_name(o: &EditOp) -> &'static str {
    match o {
        EditOp::AddNode { .. } => "add_node",
        EditOp::DeleteNode { .. } => "delete_node",
        EditOp::RenameNode { .. } => "rename_node",
        EditOp::SetField { .. } => "set_field",
        EditOp::SetDocField { .. } => "set_doc_field",
        EditOp::AddEdge { .. } => "add_edge",
        EditOp::RemoveEdge { .. } => "remove_edge",
        EditOp::AddBranch { .. } => "add_branch",
        EditOp::SetBranch { .. } => "set_branch",
        EditOp::MoveBranch { .. } => "move_branch",
        EditOp::RemoveBranch { .. } => "remove_branch",
        EditOp::SetDefault { .. } => "set_default",
    }
}

/// The most ops one input drives.
pub const MAX_OPS: usize = 6;

/// The `edit_ops` fuzz target's whole check on one input `DOC \0 OPS`: DOC (UTF-8) read as an
/// `agent.yaml`, a `graph.yaml` or an LLLM `default.yaml` (the first byte of OPS says which, and
/// which agent of a sherma file), then up to [`MAX_OPS`] ops built from the rest of OPS, each
/// checked, then all undone (see the module docs). Inputs that are not of that form are
/// `Ok` with nothing done; `Err` says what broke.
pub fn run_bytes(data: &[u8]) -> Result<Outcome, String> {
    let Some(sep) = data.iter().position(|&b| b == 0) else { return Ok(Outcome::default()) };
    let Ok(original) = std::str::from_utf8(&data[..sep]) else { return Ok(Outcome::default()) };
    let mut src = Bytes(&data[sep + 1..]);
    let Some(flags) = src.word(1) else { return Ok(Outcome::default()) };
    let name = ["agent.yaml", "graph.yaml", "default.yaml", "agent.yaml"][(flags & 3) as usize];
    let path = Path::new("/nonexistent-switchyard-fuzz").join(name);
    let probe = doc::load_str(&path, original);
    let agent: Option<String> =
        probe.sherma().and_then(|s| s.agents.get((flags >> 2) as usize % s.agents.len().max(1))).map(|a| a.name.value.clone());
    let mut seq = Sequence::new(&path, original, agent.as_deref());
    let mut out = Outcome { dialect: seq.dialect, ..Outcome::default() };
    for _ in 0..MAX_OPS {
        if src.0.is_empty() {
            break;
        }
        let v = seq.vocab();
        let Some(o) = op(&mut src, &v) else { break };
        let applied = seq.apply(&o)?;
        match applied {
            true => out.applied += 1,
            false => out.refused += 1,
        }
        out.ops.push((op_name(&o), applied));
    }
    seq.undo_all()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Choices from a fixed list, cycled (enough to build ops deterministically here).
    struct Cycle(Vec<usize>, usize);

    impl Source for Cycle {
        fn below(&mut self, n: usize) -> Option<usize> {
            self.1 += 1;
            Some(self.0[self.1 % self.0.len()] % n)
        }
        fn text(&mut self, _max: usize) -> Option<String> {
            Some("free".into())
        }
        fn int(&mut self) -> Option<i64> {
            Some(7)
        }
        fn float(&mut self) -> Option<f64> {
            Some(0.5)
        }
    }

    const LLLM: &str = "# desk\nglobal:\n  model_name: gpt-4o-mini # the default\nagent_configs:\n  - name: a\n    system_prompt: Hi.\n  - name: b\n    model_args:\n      temperature: 0.2\n";

    #[test]
    fn an_lllm_configs_vocabulary_names_the_canvas_ids() {
        let d = doc::load_str(Path::new("/x/default.yaml"), LLLM);
        let v = Vocab::of(&d, None);
        assert_eq!(v.dialect, Some(Dialect::Lllm));
        assert_eq!(v.names, ["global", "a", "b"]);
        assert_eq!(v.kinds, ["agent", "global"]);
        assert!(v.doc_keys.contains(&"base") && v.edge_kinds.contains(&"inherits"));
    }

    #[test]
    fn a_sequence_checks_each_op_and_undoes_them_all() {
        let mut s = Sequence::new(Path::new("/x/default.yaml"), LLLM, None);
        let temp = EditOp::SetField { node: "a".into(), path: vec![PathSeg::Key("model_args".into()), PathSeg::Key("temperature".into())], value: Some(json!(0.9)) };
        assert_eq!(s.apply(&temp), Ok(true));
        assert_eq!(s.apply(&EditOp::RenameNode { from: "b".into(), to: "writer".into() }), Ok(true));
        assert_eq!(s.vocab().names, ["global", "a", "writer"]);
        assert!(s.text().contains("- name: writer") && s.text().contains("temperature: 0.9") && s.text().contains("# the default"));
        // Refused with a reason: no branches in an LLLM config.
        assert_eq!(s.apply(&EditOp::AddBranch { from: "a".into(), condition: "x".into(), to: "writer".into(), index: None }), Ok(false));
        assert_eq!(s.applied(), 2);
        assert_eq!(s.undo_all(), Ok(2));
        // Ops built from choices are ops of every kind, on the document's names.
        let d = doc::load_str(Path::new("/x/default.yaml"), LLLM);
        let v = Vocab::of(&d, None);
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let mut src = Cycle(vec![seed, seed / 3 + 1, seed * 7 + 2, 5, seed / 11], 0);
            let o = op(&mut src, &v).unwrap();
            let name = serde_json::to_value(&o).unwrap()["op"].as_str().unwrap().to_string();
            assert_eq!(name, op_name(&o));
            kinds.insert(name);
        }
        assert_eq!(kinds.len(), 12, "{kinds:?}");
    }

    #[test]
    fn bytes_drive_a_whole_sequence_and_run_out_cleanly() {
        let mut b = Bytes(&[5, 1, 0, 200, 3]);
        assert_eq!(b.below(4), Some(1));
        assert_eq!(b.below(300), Some(1), "two bytes, little-endian");
        assert_eq!(b.below(200), Some(0));
        assert_eq!(b.below(2), Some(1));
        assert_eq!(b.below(2), None);
        // Not `DOC \0 OPS`, or not UTF-8: nothing done.
        assert_eq!(run_bytes(b"no separator"), Ok(Outcome::default()));
        assert_eq!(run_bytes(b"\xff\0\x01"), Ok(Outcome::default()));
        // An LLLM config with enough bytes for several ops: some apply, all are undone.
        let mut applied = 0;
        for seed in 0u32..64 {
            let mut data = LLLM.as_bytes().to_vec();
            data.push(0);
            data.push(2);
            data.extend((0..400u32).map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed * 97) >> 13) as u8));
            let out = run_bytes(&data).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(out.dialect, Some(Dialect::Lllm));
            applied += out.applied;
        }
        assert!(applied > 0, "no op applied");
    }
}
