//! Edit ops: every change to a document is a text edit computed here (docs/app-contract.md §1).

mod lllm;
mod loki;
pub mod sequence;
mod sherma;
pub(crate) mod text;

use std::path::Path;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use model::doc::{self, Dialect};
use syntax::yaml::YNode;
use text::{Ed, Rep};

/// A replacement of the byte range `start..end` of the OLD text by `text`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TextEdit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// The result of an op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Applied {
    pub text: String,
    pub edit: TextEdit,
    pub inverse: TextEdit,
    pub select: Option<String>,
}

/// What went wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct EditError {
    pub message: String,
}

impl EditError {
    pub fn new(message: impl Into<String>) -> Self {
        EditError { message: message.into() }
    }
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EditError {}

/// One element of a field path: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(untagged)]
pub enum PathSeg {
    Index(usize),
    Key(String),
}

/// An edit op as the UI sends it (JSON tagged by `op`). Fields with a default may be left out;
/// a `value` of null removes the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum EditOp {
    AddNode { name: String, kind: String, #[serde(default)] #[ts(optional)] after: Option<String> },
    DeleteNode { name: String },
    RenameNode { from: String, to: String },
    SetField { node: String, path: Vec<PathSeg>, #[serde(default)] value: Option<serde_json::Value> },
    SetDocField { path: Vec<PathSeg>, #[serde(default)] value: Option<serde_json::Value> },
    AddEdge { from: String, to: String },
    RemoveEdge { from: String, to: String, kind: String, #[serde(default)] #[ts(optional)] index: Option<usize> },
    AddBranch { from: String, condition: String, to: String, #[serde(default)] #[ts(optional)] index: Option<usize> },
    SetBranch {
        from: String,
        index: usize,
        #[serde(default)]
        #[ts(optional)]
        condition: Option<String>,
        #[serde(default)]
        #[ts(optional)]
        to: Option<String>,
    },
    MoveBranch { from: String, index: usize, to_index: usize },
    RemoveBranch { from: String, index: usize },
    SetDefault { from: String, #[serde(default)] to: Option<String> },
}

impl TextEdit {
    /// Apply to the text this edit was computed against (out-of-range or non-boundary offsets are
    /// clamped/snapped instead of panicking).
    pub fn apply(&self, text: &str) -> String {
        let mut s = self.start.min(text.len());
        while s > 0 && !text.is_char_boundary(s) {
            s -= 1;
        }
        let mut e = self.end.min(text.len()).max(s);
        while e < text.len() && !text.is_char_boundary(e) {
            e += 1;
        }
        let mut out = String::with_capacity(text.len() + self.text.len());
        out.push_str(&text[..s]);
        out.push_str(&self.text);
        out.push_str(&text[e..]);
        out
    }
    pub fn is_empty(&self) -> bool {
        self.start == self.end && self.text.is_empty()
    }
}

/// The minimal edit turning `old` into `new`: common prefix and suffix trimmed on char boundaries.
pub fn diff(old: &str, new: &str) -> TextEdit {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    while p > 0 && !(old.is_char_boundary(p) && new.is_char_boundary(p)) {
        p -= 1;
    }
    let max_s = a.len().min(b.len()) - p;
    let mut s = a.iter().rev().zip(b.iter().rev()).take(max_s).take_while(|(x, y)| x == y).count();
    while s > 0 && !(old.is_char_boundary(a.len() - s) && new.is_char_boundary(b.len() - s)) {
        s -= 1;
    }
    TextEdit { start: p, end: a.len() - s, text: new[p..b.len() - s].to_string() }
}

/// The document text being edited, re-parsed after every step.
pub(crate) struct Work {
    pub text: String,
    pub nl: &'static str,
}

impl Work {
    pub fn root(&self) -> Result<YNode, EditError> {
        text::parse_root(&self.text).ok_or_else(|| EditError::new("the document is empty; write the agent first"))
    }
    /// One edit computed on a fresh parse.
    pub fn step(&mut self, f: impl FnOnce(&Ed) -> Result<Rep, EditError>) -> Result<(), EditError> {
        let root = self.root()?;
        let rep = f(&Ed { text: &self.text, root: &root, nl: self.nl })?;
        self.text = text::apply_reps(&self.text, vec![rep]);
        Ok(())
    }
    pub fn set(&mut self, path: &[PathSeg], value: Option<&serde_json::Value>) -> Result<(), EditError> {
        self.step(|ed| ed.set(path, value))
    }
}

/// Set (or insert, or with `None` remove) the value at `path` in any YAML text, not only an
/// agent's: the same span-based surgery as every edit, so bytes outside the change stay as they
/// were (used to add a case to an agent test suite). Index `len` of a list appends an item.
pub fn set_in_yaml(text: &str, path: &[PathSeg], value: Option<&serde_json::Value>) -> Result<String, EditError> {
    let mut w = Work { text: text.to_string(), nl: if text.contains("\r\n") { "\r\n" } else { "\n" } };
    w.set(path, value)?;
    Ok(w.text)
}

/// Apply `op` to `text` (the content of the file at `path`); `agent` picks the sherma agent.
pub fn apply(text: &str, path: &Path, agent: Option<&str>, op: &EditOp) -> Result<Applied, EditError> {
    let doc = doc::load_str(path, text);
    apply_doc(&doc, text, agent, op)
}

/// [`apply`] on a document already loaded from exactly `text` (the editing session keeps the one
/// it built for the view, so an edit does not parse the file again).
pub fn apply_doc(doc: &doc::Document, text: &str, agent: Option<&str>, op: &EditOp) -> Result<Applied, EditError> {
    let path = doc.path.as_path();
    debug_assert!(doc.file.as_ref().is_none_or(|f| f.text() == text));
    if let Some(d) = doc.diagnostics.iter().find(|d| d.code == "yaml-syntax") {
        return Err(EditError::new(format!(
            "fix the syntax error at {}:{} first ({})",
            d.line, d.column, d.message
        )));
    }
    if doc.diagnostics.iter().any(|d| d.code == "multiple-documents") {
        return Err(EditError::new("this file holds more than one YAML document; remove the `---` and what follows first"));
    }
    // With a key written twice, YAML keeps the last one but the text holds both: an edit could
    // land in the one that is ignored.
    if let Some(d) = doc.diagnostics.iter().find(|d| d.code == "duplicate-key") {
        return Err(EditError::new(format!(
            "this file has a {} at {}:{}; remove or rename one of the two in the source view, then edit again",
            d.message, d.line, d.column
        )));
    }
    if let Some(at) = lone_cr(text) {
        let (line, column) = line_col(text, at);
        return Err(EditError::new(format!(
            "this file has a carriage return without a line feed at {line}:{column} (an old Mac line break), \
             which YAML reads as a line break of its own; replace it with a line feed or remove it in the source view, then edit again"
        )));
    }
    if let Some(at) = doc.root.as_ref().and_then(|r| explicit_key(text, r)) {
        let (line, column) = line_col(text, at);
        return Err(EditError::new(format!(
            "this file uses an explicit `?` key at {line}:{column}, which the visual editor cannot place edits around; \
             write the key plainly (`name:`) in the source view, then edit again"
        )));
    }
    let nl: &'static str = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let added_nl = !text.is_empty() && !text.ends_with('\n');
    let mut work = Work { text: if added_nl { format!("{text}{nl}") } else { text.to_string() }, nl };
    let select = match doc.dialect() {
        Some(Dialect::Sherma) => sherma::apply(&mut work, doc, agent, op)?,
        Some(Dialect::Loki) => loki::apply(&mut work, doc, op)?,
        Some(Dialect::Lllm) => lllm::apply(&mut work, doc, op)?,
        None => {
            return Err(EditError::new(
                "this file is not a sherma or Loki agent Switchyard can edit; fix the problems listed first",
            ));
        }
    };
    let mut new = work.text;
    if added_nl && new.ends_with(nl) {
        new.truncate(new.len() - nl.len());
    }
    // Only the YAML syntax needs checking here (the validator reports the rest to the user), and
    // a parse without building the model keeps a 10,000-line round trip fast.
    let check = syntax::yaml::parse(&syntax::source::SourceFile::new(path, new.clone()));
    if let Some(d) = check.diagnostics.iter().find(|d| d.code == "yaml-syntax") {
        return Err(EditError::new(format!(
            "internal error: this edit would break the YAML ({} at {}:{}); the file is unchanged — please edit it in the source view",
            d.message, d.line, d.column
        )));
    }
    // A top-level key can decide the dialect (`prompts:` in a Loki graph.yaml without `nodes:`).
    let now = doc::detect(path, check.root.as_ref());
    if now != doc.dialect() {
        let name = |d: Option<Dialect>| match d {
            Some(Dialect::Sherma) => "a sherma agent",
            Some(Dialect::Loki) => "a Loki graph",
            Some(Dialect::Lllm) => "an LLLM config",
            None => "no kind of agent Switchyard knows",
        };
        return Err(EditError::new(format!(
            "this change would make the file read as {} instead of {}; the file is unchanged",
            name(now),
            name(doc.dialect())
        )));
    }
    let edit = diff(text, &new);
    let inverse = diff(&new, text);
    Ok(Applied { text: new, edit, inverse, select })
}

/// The offset of the first explicit-key indicator (`? key`) in the document, if any.
fn explicit_key(text: &str, node: &YNode) -> Option<usize> {
    match &node.kind {
        syntax::yaml::YKind::Seq(items) => items.iter().find_map(|i| explicit_key(text, i)),
        syntax::yaml::YKind::Map(entries) => entries.iter().find_map(|e| {
            // On the key's line, before the key: `?` standing alone as an indicator (at the
            // indentation, or after `- `, `: `, `{`, `[` or `,`), not the end of some text. The
            // parser takes `key: ? x` as a mapping under `key` with the explicit key `x`.
            let mut start = (e.key.span.start as usize).min(text.len());
            if matches!(&e.key.kind, syntax::yaml::YKind::Scalar(sc) if matches!(sc.style, syntax::yaml::Style::Literal | syntax::yaml::Style::Folded)) {
                // Only an explicit key can be a block scalar. Its text starts on a line after
                // its `|` / `>` header (`? |`, or `?` and the header on a line of its own): the
                // `?` is the last one before the header.
                let h = key_lead(text, start);
                let word = text[..h].rfind([' ', '\t', '\n']).map_or(0, |i| i + 1);
                return Some(text[..word].rfind('?').unwrap_or(word));
            }
            let own_line = text[..start].rfind('\n').map_or(0, |i| i + 1);
            if matches!(e.key.kind, syntax::yaml::YKind::Seq(_)) {
                // A block sequence's span can start after its first `-` (an empty first item).
                if let Some(h) = text[own_line..start].trim_end_matches([' ', '\t']).strip_suffix('-') {
                    start = own_line + h.len();
                }
            }
            // An empty key has no text of its own: the parser places it at the next token,
            // which can be at the end of the `?` line after a comment (`? # note` at the end
            // of the file).
            let empty_at_line_end = e.key.span.start == e.key.span.end
                && text[start..].split('\n').next().is_some_and(|rest| rest.trim_matches([' ', '\t', '\r']).is_empty());
            if empty_at_line_end || text[own_line..start].trim_matches([' ', '\t']).is_empty() {
                // A key first on its line (or an empty key, which has no text of its own) may
                // belong to a `?` lines above it: step back over blank and comment lines.
                start = key_lead(text, start);
            }
            let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
            let before = text[line_start..start].trim_end_matches([' ', '\t']);
            if let Some(rest) = before.strip_suffix('?') {
                let prev = rest.trim_end_matches([' ', '\t']);
                if prev.is_empty() || prev.ends_with(['-', ':', '{', '[', ',']) && rest.len() > prev.len() || prev.ends_with(['{', '[', ',']) {
                    return Some(line_start + rest.len());
                }
            }
            explicit_key(text, &e.key).or_else(|| explicit_key(text, &e.value))
        }),
        _ => None,
    }
}

/// Where a key first on its line "starts" for [`explicit_key`]: just after the last character
/// before `at` that is neither blank space nor part of a comment.
fn key_lead(text: &str, at: usize) -> usize {
    let mut end = at;
    loop {
        let head = &text[..end];
        let trimmed = head.trim_end_matches([' ', '\t', '\n', '\r']);
        let line_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
        if trimmed[line_start..].trim_start_matches([' ', '\t']).starts_with('#') && line_start < trimmed.len() {
            end = line_start;
            continue;
        }
        // A trailing comment after the `?` (`? # note`), or after the `?` and a block scalar
        // header (`? | # note`), is skipped the same way.
        let line = &trimmed[line_start..];
        if let Some(hash) = line.find(" #").or_else(|| line.find("\t#")) {
            let before = line[..hash].trim_end_matches([' ', '\t']);
            let word = before.rfind([' ', '\t']).map_or(0, |i| i + 1);
            let header = before[word..].starts_with(['|', '>']) && before[..word].trim_end_matches([' ', '\t']).ends_with('?');
            if before.ends_with('?') || header {
                return line_start + before.len();
            }
        }
        return trimmed.len();
    }
}

/// 1-based line and column (in bytes) of byte offset `at` of `text`, for refusals that point
/// at a place in the file.
pub(crate) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, column)
}

/// The byte offset of the first `\r` not followed by `\n`. YAML counts it as a line break, the
/// editor's line arithmetic does not; such files are refused rather than edited wrongly.
fn lone_cr(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    b.iter().enumerate().find(|&(i, &c)| c == b'\r' && b.get(i + 1) != Some(&b'\n')).map(|(i, _)| i)
}

/// A node name as written in the file (error when empty).
pub(crate) fn check_new_name(name: &str) -> Result<(), EditError> {
    if name.trim().is_empty() {
        return Err(EditError::new("the node name is empty; type a name"));
    }
    if name.trim() != name || name.contains(['\n', '\r']) || name.chars().any(char::is_control) {
        return Err(EditError::new(format!(
            "the node name {name:?} has leading/trailing spaces or control characters; use letters, digits, `_` or `-`"
        )));
    }
    if name == model::graph::START || name == model::graph::END {
        return Err(EditError::new(format!("`{name}` is reserved; choose another name")));
    }
    text::check_keys(Some(name), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `edit_ops` fuzz target: a Loki graph.yaml known as Loki only by its name
    /// (no `nodes:` yet) turned into a sherma file when a `prompts:` key was added.
    #[test]
    fn an_edit_never_changes_the_dialect() {
        let path = Path::new("/nowhere/graph.yaml");
        let text = "model: openai:gpt-4o-mini\ninstructions: hi\n";
        assert_eq!(doc::load_str(path, text).dialect(), Some(Dialect::Loki));
        let op = EditOp::SetDocField {
            path: vec![PathSeg::Key("prompts".into())],
            value: Some(serde_json::json!({"": null})),
        };
        let e = apply(text, path, None, &op).unwrap_err();
        assert!(e.message.contains("read as a sherma agent instead of a Loki graph"), "{e}");
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("description".into())], value: Some("d".into()) };
        assert!(apply(text, path, None, &op).unwrap().text.contains("description: d"));
    }

    /// Found by the `edit_ops` fuzz target: after a `%` directive with a non-ASCII character
    /// every position the YAML scanner reported was off (it counted the directive in bytes), so
    /// a new top-level key went in at the wrong indentation and broke the file.
    #[test]
    fn a_directive_with_non_ascii_characters_does_not_shift_an_edit() {
        let path = Path::new("/nowhere/graph.yaml");
        let text = "%NOTE rédigé à la main\n---\nmodel: openai:gpt-4o-mini\ninstructions: hi\n";
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("description".into())], value: Some("d".into()) };
        let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.text, format!("{text}description: d\n"));
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("instructions".into())], value: Some("bye".into()) };
        assert_eq!(apply(text, path, None, &op).unwrap().text, text.replace("hi", "bye"));
    }

    /// Found by the `edit_ops` fuzz target: a lone carriage return inside a comment is a line
    /// break to YAML, not to the editor; adding a top-level key broke the file. Such files are
    /// refused with the position of the carriage return; CRLF files still edit.
    #[test]
    fn a_lone_carriage_return_is_refused_with_its_position() {
        let path = Path::new("/nowhere/agent.yaml");
        let text = "# Explicit cond\ritional edges: no injection.\nmanifest_version: 1\nagents:\n  a:\n    state:\n      fields:\n        - name: turn";
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("start".into())], value: Some(serde_json::Value::Null) };
        let e = apply(text, path, None, &op).unwrap_err();
        assert!(e.message.contains("carriage return without a line feed at 1:16"), "{e}");
        assert!(!e.message.starts_with("internal"), "{e}");
        let crlf = text.replace("cond\r", "cond").replace('\n', "\r\n");
        let a = apply(&crlf, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        assert!(a.text.ends_with("- name: turn\r\nstart: null"), "{:?}", a.text);
    }

    /// Found by the `edit_ops` fuzz target: deleting a Loki node when `nodes:` also holds a key
    /// that is no plain name (an explicit `? ...` key) panicked while unhooking references, and
    /// adding a node next to an unquoted `{{x}}` (a flow mapping as a key) broke the YAML. Edits
    /// of such a file are refused with the key's position.
    #[test]
    fn loki_nodes_with_a_key_that_is_no_name_are_refused_with_its_position() {
        let path = Path::new("/nowhere/graph.yaml");
        let text = "version: \"1.0\"\nname: x\nstart: a\nnodes:\n  a:\n    type: script\n    script: a.sh\n    next: b\n  ? [odd, key]\n  : {type: end}\n  b:\n    type: end\n";
        let e = apply(text, path, None, &EditOp::DeleteNode { name: "b".into() }).unwrap_err();
        assert!(e.message.contains("explicit `?` key at 9:3"), "{e}");
        // Text that merely ends with `?` before a key is no explicit key.
        let text = "version: \"1.0\"\nname: x\nstart: a\nnodes:\n  a:\n    type: approval\n    question: Ship it?\n    options: [\"yes\", \"no\"]\n";
        apply(text, path, None, &EditOp::AddNode { name: "n".into(), kind: "end".into(), after: None }).unwrap_or_else(|e| panic!("{e}"));
        let text = "version: \"2.0\"\nstart: a\nnodes:\n  {{x}}\n";
        let op = EditOp::AddNode { name: "n".into(), kind: "llm".into(), after: None };
        let e = apply(text, path, None, &op).unwrap_err();
        assert!(e.message.contains("at 4:4") && !e.message.starts_with("internal"), "{e}");
    }

    /// Found by the `edit_ops` fuzz target: a top level that is only an explicit `?` with an empty
    /// (null) key got the output check's "internal error" instead of a positioned refusal: an
    /// empty key's span starts after the `?` line, so the indicator was not seen. The same with a
    /// comment after the `?` at the very end of the file: the empty key is placed after the comment.
    #[test]
    fn an_explicit_empty_key_is_refused_with_its_position() {
        let path = Path::new("/nowhere/graph.yaml");
        for (text, at) in [("# servers\n?\n  \u{8}", "2:1"), ("# c\n?\n", "2:1"), ("nodes:\n  ?\n  : {type: end}\n", "2:3"), ("? \n# c\n\n: x\n", "1:1"), ("nodes:\n /&a:\n ?  #E\u{1}", "3:2")] {
            let op = EditOp::AddNode { name: "-d".into(), kind: "input".into(), after: None };
            let e = apply(text, path, None, &op).unwrap_err();
            assert!(e.message.contains(&format!("explicit `?` key at {at}")), "{text:?}: {e}");
        }
    }

    /// Found by the `edit_ops` fuzz target: the parser reads `key: ? x` as a mapping under `key`
    /// whose explicit key is `x`; a `?` after `: ` was not taken for the indicator, and setting a
    /// field of that node broke the YAML instead of being refused with the position.
    #[test]
    fn an_explicit_key_after_a_colon_is_refused_with_its_position() {
        let path = Path::new("/nowhere/graph.yaml");
        let text = "# A declared crion: \"5.0\"\nstart: a\nnodes:\n : ? nodes # R:e";
        let op = EditOp::SetField { node: "".into(), path: vec![PathSeg::Key("options".into())], value: Some(serde_json::Value::Null) };
        let e = apply(text, path, None, &op).unwrap_err();
        assert!(e.message.contains("explicit `?` key at 4:4"), "{e}");
        // a `?` ending a plain value is not an indicator
        let text = "name: g\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n    note: why?\n";
        let op = EditOp::SetField { node: "a".into(), path: vec![PathSeg::Key("options".into())], value: Some(serde_json::Value::Null) };
        apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Found by the `edit_ops` fuzz target: removing the only entry of a flow mapping written
    /// with a trailing comma (`{start,}`, here the whole file) left `{,}`, which is not YAML.
    #[test]
    fn the_only_flow_entry_goes_with_its_trailing_comma() {
        let path = Path::new("/nowhere/graph.yaml");
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("start".into())], value: None };
        for (text, want) in [
            ("&&&exe&e&&Rtend{\"start\",}\n", "&&&exe&e&&Rtend{}\n"),
            ("{start: a , }\n", "{ }\n"),
            ("{start: a # why\n,}\n", "{}\n"),
            ("{name: g, start: a,}\n", "{name: g,}\n"),
        ] {
            let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(a.text, want);
        }
    }

    /// Found by the `edit_ops` fuzz target: a block list may stand at its key's column
    /// (`settings:` then `- a` at column 0). Replacing it with a multi-line string wrote the
    /// `|` block's text at that column too, outside the value, which broke the YAML; a mapping
    /// there would have become keys of the parent. Other values now go two columns in.
    #[test]
    fn a_list_at_its_keys_column_is_replaced_by_a_string_or_a_mapping() {
        let path = Path::new("/nowhere/graph.yaml");
        let text = "# Ar\nversion: \"1.0\"\nstart: plan\nsettings:\n- m/ax_conc\nnodes:\n  plan: {type: end}\n";
        let set = |v: serde_json::Value| {
            let op = EditOp::SetDocField { path: vec![PathSeg::Key("settings".into())], value: Some(v) };
            apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}")).text
        };
        assert_eq!(
            set("two\n\n".into()),
            "# Ar\nversion: \"1.0\"\nstart: plan\nsettings: |+\n  two\n\nnodes:\n  plan: {type: end}\n"
        );
        assert_eq!(
            set(serde_json::json!({"a": 1, "b": [1]})),
            "# Ar\nversion: \"1.0\"\nstart: plan\nsettings:\n  a: 1\n  b:\n    - 1\nnodes:\n  plan: {type: end}\n"
        );
        // a list keeps the column the file uses
        assert_eq!(
            set(serde_json::json!(["x", "z"])),
            "# Ar\nversion: \"1.0\"\nstart: plan\nsettings:\n- x\n- z\nnodes:\n  plan: {type: end}\n"
        );
    }

    /// Found by the `edit_ops` fuzz target on an LLLM config: a list written at its key's column
    /// whose first item is a flow collection (`agent_configs:` then `- ["tools:search"]`) starts
    /// where that item does, so its bracket was taken for the list's own and a new agent was
    /// written as a flow item after it (`- ["tools:search"], {name: …}`), breaking the YAML.
    #[test]
    fn a_list_at_its_keys_column_starting_with_a_flow_item_is_a_block_list() {
        let path = Path::new("/nowhere/default.yaml");
        let add = |text: &str| {
            let op = EditOp::AddNode { name: "mme".into(), kind: "agent".into(), after: Some("global".into()) };
            apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}")).text
        };
        assert_eq!(
            add("agent_configs:\n- [\"tools:search\"]\n"),
            "agent_configs:\n- [\"tools:search\"]\n- name: mme\n  system_prompt: You are mme.\n"
        );
        assert_eq!(add("global: {}\nagent_configs:\n- {name: a}\n"), "global: {}\nagent_configs:\n- {name: a}\n- name: mme\n  system_prompt: You are mme.\n");
        // A flow list stays one.
        assert_eq!(add("agent_configs: [[x]]\n"), "agent_configs: [[x], {name: mme, system_prompt: You are mme.}]\n");
        // The same list in a Loki file: a setting appended below it.
        let path = Path::new("/nowhere/graph.yaml");
        let text = "version: \"1.0\"\nstart: plan\nsettings:\n- [a]\nnodes:\n  plan: {type: end}\n";
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("settings".into()), PathSeg::Index(1)], value: Some(serde_json::json!("b")) };
        assert_eq!(
            apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}")).text,
            "version: \"1.0\"\nstart: plan\nsettings:\n- [a]\n- b\nnodes:\n  plan: {type: end}\n"
        );
    }

    /// Found by the `edit_ops` fuzz target: a block scalar key (`? |` and its text on the lines
    /// below) starts after its header, so the `?` before the `|` was not seen; adding a top-level
    /// field then wrote into the key's text, or broke the YAML. Refused with the position.
    #[test]
    fn an_explicit_block_scalar_key_is_refused_with_its_position() {
        let path = Path::new("/nowhere/graph.yaml");
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("data".into())], value: Some(serde_json::json!([])) };
        for (text, at) in [
            ("? |\n   quergion: \"again?\"\n    options: [\"ag?in\",)\"stop\"]\n", "1:1"),
            ("name: g\n? >-\n  k\n: v\n", "2:1"),
            ("? |2+ # why\n  k\n: v\nname: g\n", "1:1"),
            ("name: g\nnodes:\n  ? | # c\n\n    k\n  : {type: end}\n", "3:3"),
            ("?\n  |\n  k\n: v\nname: g\n", "1:1"),
            ("name: g\n? &a\n  >\n  k\n: v\n", "2:1"),
        ] {
            let e = apply(text, path, None, &op).unwrap_err();
            assert!(e.message.contains(&format!("explicit `?` key at {at}")), "{text:?}: {e}");
        }
        // a block scalar value after a key is not a `?` key
        let text = "name: g\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n    note: | # why?\n      text\n";
        apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Found by the `edit_ops` fuzz target: a list item whose `-` is followed by a comment that
    /// ends in a dash (`- # source: su-`, the mapping on the next line) was lined up with that
    /// dash, so a new edge went at column 29 and broke the YAML.
    #[test]
    fn a_dash_at_the_end_of_a_comment_is_not_the_items_dash() {
        let path = Path::new("/nowhere/agent.yaml");
        let text = "manifest_version: 1\nagents:\n  cel:\n    graph:\n      entry_point: sum\n      nodes:\n        - name: sum\n          type: set_state\n      edges:\n        - # callreasource: su-\n          target: __end__\n";
        let op = EditOp::AddBranch { from: "sum".into(), condition: "sum".into(), to: "sum".into(), index: Some(4) };
        let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        assert!(a.text.ends_with("          target: __end__\n        - source: sum\n          branches:\n            - condition: sum\n              target: sum\n"), "{}", a.text);
    }

    /// Found by the `edit_ops` fuzz target: deleting a node of a file with `graph:` written twice
    /// edited the ignored first one and broke the YAML. Such files are refused with the position.
    #[test]
    fn a_file_with_a_duplicate_key_is_refused_with_its_position() {
        let path = Path::new("/nowhere/agent.yaml");
        let text = "manifest_version: 1\nagents:\n  a:\n    graph:\n       type: int\n    graph:\n      entry_point: sum\n      nodes:\n        - name: sum\n          type: set_state\n";
        let e = apply(text, path, None, &EditOp::DeleteNode { name: "sum".into() }).unwrap_err();
        assert!(e.message.contains("duplicate key `graph` at 6:5"), "{e}");
    }

    /// Found by the `edit_ops` fuzz target: a key written bare in a flow mapping (`{s: 1, nodes}`,
    /// so `nodes` is null) got its new value written without a `:` (`nodes {…}`), which broke the
    /// YAML and was refused as an internal error. With the colon written but nothing after it
    /// (`{s, nodes: }`), the parser places the empty value before the colon: the new value
    /// went there (`nodes {…}:`) and is now written after the colon. In a flow mapping the colon
    /// may also stand on a later line (`{s, nodes\n:}`); the value then went after the key,
    /// leaving that colon behind, and now goes after it.
    #[test]
    fn a_value_for_a_bare_key_in_a_flow_mapping_gets_its_colon() {
        let path = Path::new("/nowhere/graph.yaml");
        for text in ["{s: 1, nodes, d: null}\n", "&e{\"s\",nodes\n}", "{nodes}", "{\"nodes\" , x: 1}", "{\"s\",nodes:\n}", "{s, nodes: }", "&e\"s{m\\\\w\",nodes\n:}", "{s: 1, nodes\n:}", "{s: 1, nodes\n  : }", "{s: 1, nodes # c\n :}", "{s: 1, \"nodes\"\n\n:}"] {
            let op = EditOp::AddNode { name: "b".into(), kind: "end".into(), after: None };
            let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            let out = a.edit.apply(text);
            assert!(out.contains(": {b: {type: end}}") && !out.contains("nodes {"), "{text:?} -> {out:?}");
        }
    }

    /// Found by the `edit_ops` fuzz target: a flow collection followed by blanks before the
    /// bracket that closes its parent (`{{a} }`). The parser's end event takes in those blanks,
    /// so the inner collection seemed to end past the outer `}` and a new top-level entry went
    /// after it.
    #[test]
    fn an_entry_after_a_flow_collection_key_goes_inside_the_mapping() {
        let path = Path::new("/nowhere/graph.yaml");
        for (text, want) in [
            ("# Fiz\n!ta\t\t\t{{a.}\t} \n #\t", "!ta\t\t\t{{a.}, nodes: {jaaa: {type: end}}\t} \n"),
            ("{{a.} } \n", "{{a.}, nodes: {jaaa: {type: end}} } \n"),
            ("{{a: 1} }\n", "{{a: 1}, nodes: {jaaa: {type: end}} }\n"),
            ("{[a] }\n", "{[a], nodes: {jaaa: {type: end}} }\n"),
            ("{x: {b: 1}  , }\n", "{x: {b: 1}, nodes: {jaaa: {type: end}}  , }\n"),
        ] {
            let op = EditOp::AddNode { name: "jaaa".into(), kind: "end".into(), after: None };
            let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            let out = a.edit.apply(text);
            assert!(out.contains(want), "{text:?} -> {out:?}");
        }
    }

    /// Found by the `edit_ops` fuzz target: a flow mapping whose last entry ends in a plain
    /// scalar ending with ` -` (`{typ      -   }`). Writing `,` right after that dash made it read
    /// as the start of another scalar followed by `,`, which the parser rejects.
    #[test]
    fn an_entry_after_a_plain_scalar_ending_in_a_dash_keeps_the_file_valid() {
        let path = Path::new("/nowhere/graph.yaml");
        for text in ["&extendu\"s{\\typ\\\\      -          }", "{s: x - }", "{s: x -  }\n", "{s: 1, t - }"] {
            let op = EditOp::AddNode { name: "- x".into(), kind: "agent".into(), after: None };
            let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            let out = a.edit.apply(text);
            assert!(out.contains(" - , nodes: {\"- x\": {type: agent, "), "{text:?} -> {out:?}");
        }
        // The same at the end of a flow list.
        let text = "version: \"1.0\"\nstart: a\nnodes: {a: {type: end}}\nx: [a, b - ]\n";
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("x".into()), PathSeg::Index(2)], value: Some(serde_json::json!("c")) };
        let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.edit.apply(text), "version: \"1.0\"\nstart: a\nnodes: {a: {type: end}}\nx: [a, b - , c ]\n");
        // Deleting the entry after such a scalar keeps a space between the dash and the bracket.
        let text = "version: \"1.0\"\nstart: a\nnodes: {a: {type: end}}\nx: [a, b - , c]\ny: {a: b - , c: 1}\n";
        for (at, want) in [
            (vec![PathSeg::Key("x".into()), PathSeg::Index(2)], "x: [a, b - ]\ny: {a: b - , c: 1}\n"),
            (vec![PathSeg::Key("y".into()), PathSeg::Key("c".into())], "x: [a, b - , c]\ny: {a: b - }\n"),
        ] {
            let a = apply(text, path, None, &EditOp::SetDocField { path: at, value: None }).unwrap_or_else(|e| panic!("{e}"));
            assert!(a.edit.apply(text).ends_with(want), "{:?}", a.edit.apply(text));
        }
    }

    /// Found by the `edit_ops` fuzz target: a node whose body is a mapping keyed by a flow mapping
    /// with a trailing comma (`{"a",}:`). The parser ends such a collection at the comma, so the
    /// node's text seemed to end before the `}` and deleting the node left `}:` behind.
    #[test]
    fn a_node_keyed_by_a_flow_mapping_with_a_trailing_comma_is_deleted_whole() {
        let path = Path::new("/nowhere/graph.yaml");
        let text = "start: triage\nnodes:\n  tri:\n   {\"s\",}:\nprompts:\n  hh-: 2\n";
        let a = apply(text, path, None, &EditOp::DeleteNode { name: "tri".into() }).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.edit.apply(text), "start: triage\nnodes: {}\nprompts:\n  hh-: 2\n");
    }

    /// Found by the `edit_ops` fuzz target: a file that starts with a byte order mark (as some
    /// Windows editors save) got new top-level keys indented by the mark's three bytes, which
    /// broke the YAML. The mark takes no column; every op keeps the file valid and the mark first.
    #[test]
    fn a_file_starting_with_a_byte_order_mark_is_edited_at_the_right_columns() {
        let key = |k: &str| PathSeg::Key(k.into());
        let loki = "\u{feff}version: \"1.0\"\nname: g\nstart: a\nnodes:\n  a:\n    type: approval\n    question: Ship?\n    options: [\"yes\", \"no\"]\n    routes: {\"yes\": b, \"no\": b}\n  b:\n    type: end\n";
        let sherma = "\u{feff}manifest_version: 1\nagents:\n  a:\n    state: {fields: [{name: n, type: int}]}\n    graph:\n      entry_point: s\n      nodes:\n        - name: s\n          type: set_state\n          args: {values: {n: \"1\"}}\n      edges: []\n";
        let ops = [
            EditOp::SetDocField { path: vec![key("x")], value: Some(serde_json::json!(-5)) },
            EditOp::SetDocField { path: vec![key("description")], value: Some(serde_json::json!({"a": [1, 2]})) },
            EditOp::AddNode { name: "n".into(), kind: "end".into(), after: None },
            EditOp::RenameNode { from: "a".into(), to: "z".into() },
            EditOp::DeleteNode { name: "b".into() },
            EditOp::RenameNode { from: "s".into(), to: "t".into() },
            EditOp::AddNode { name: "m".into(), kind: "set_state".into(), after: None },
        ];
        let mut applied = 0;
        for (text, file) in [(loki, "/nowhere/graph.yaml"), (sherma, "/nowhere/agent.yaml")] {
            for op in &ops {
                let Ok(a) = apply(text, Path::new(file), None, op) else { continue };
                let out = a.edit.apply(text);
                assert!(out.starts_with('\u{feff}') && out.matches('\u{feff}').count() == 1, "{op:?}: {out:?}");
                let d = doc::load_str(Path::new(file), &out);
                assert!(!d.diagnostics.iter().any(|d| d.code == "yaml-syntax"), "{op:?}: {out:?}");
                applied += 1;
            }
        }
        assert!(applied >= 6, "only {applied} ops applied");
    }

    /// Found by the `edit_ops` fuzz target: a value that is an alias of a mapping (`nodes: *n`).
    /// The tree holds a copy of the anchored mapping whose children keep their places before the
    /// alias, so the entry seemed to end at its key and a new top-level key went between `nodes:`
    /// and the alias. An alias now ends at its own text, and edits inside one are refused: they
    /// would land in the anchored node and change every alias of it.
    #[test]
    fn an_alias_of_a_mapping_is_one_value_and_edits_inside_it_are_refused() {
        let text = "version: \"1.0\"\nshared: &n\n  a:\n    type: end\nstart: a\nnodes:\n  *n\n";
        let out = set_doc(text, &["x"], serde_json::json!(1)).unwrap_or_else(|e| panic!("{e}")).edit.apply(text);
        assert_eq!(out, format!("{text}x: 1\n"));
        let e = apply(text, Path::new("/nowhere/graph.yaml"), None, &EditOp::AddNode { name: "b".into(), kind: "end".into(), after: None }).unwrap_err();
        assert!(e.message.contains("inside `*n` at 7:3, an alias"), "{e}");
        let e = set_doc(text, &["nodes", "a", "type"], serde_json::json!("input")).unwrap_err();
        assert!(e.message.contains("inside `*n` at 7:3, an alias"), "{e}");
        // Renaming reaches the anchored key once, through the anchor, and the alias follows it.
        let a = apply(text, Path::new("/nowhere/graph.yaml"), None, &EditOp::RenameNode { from: "a".into(), to: "z".into() });
        match a {
            Ok(a) => assert_eq!(a.edit.apply(text).matches("z:").count(), 1),
            Err(e) => assert!(!e.message.starts_with("internal"), "{e}"),
        }
        // The anchored node itself is edited as usual.
        let out = set_doc(text, &["shared", "a", "type"], serde_json::json!("input")).unwrap_or_else(|e| panic!("{e}")).edit.apply(text);
        assert!(out.contains("shared: &n\n  a:\n    type: input\n"), "{out}");
    }

    /// Found by the `edit_ops` fuzz target: a key of more than 1,024 characters (YAML's limit on
    /// an implicit key) broke the file when written. Such keys are refused, as new keys, inside
    /// values and as node names.
    #[test]
    fn keys_longer_than_yaml_allows_are_refused() {
        let text = "version: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n";
        let long = "k".repeat(1025);
        let e = set_doc(text, &["x", &long], serde_json::json!(1)).unwrap_err();
        assert!(e.message.contains("1025 characters long") && e.message.contains("at most 1024"), "{e}");
        let e = set_doc(text, &["x"], serde_json::json!({"a": [{&long: 1}]})).unwrap_err();
        assert!(e.message.contains("1025 characters long"), "{e}");
        // With control characters a key is written quoted and escaped: that length counts.
        let escaped = format!("s{}", "\u{4}".repeat(300));
        let e = set_doc(text, &["x", &escaped], serde_json::json!(1)).unwrap_err();
        assert!(e.message.contains("characters long"), "{e}");
        let e = apply(text, Path::new("/nowhere/graph.yaml"), None, &EditOp::AddNode { name: long.clone(), kind: "end".into(), after: None }).unwrap_err();
        assert!(e.message.contains("1025 characters long"), "{e}");
        let ok = "k".repeat(1024);
        set_doc(text, &["x", &ok], serde_json::json!(1)).unwrap_or_else(|e| panic!("{e}"));
    }

    /// `SetDocField` on a Loki `graph.yaml` text: the key path and the new value.
    fn set_doc(text: &str, keys: &[&str], v: serde_json::Value) -> Result<Applied, EditError> {
        let op = EditOp::SetDocField { path: keys.iter().map(|k| PathSeg::Key(k.to_string())).collect(), value: Some(v) };
        apply(text, Path::new("/nowhere/graph.yaml"), None, &op)
    }

    /// Found by the `edit_ops` fuzz target: a block scalar ending in a vertical tab (content to
    /// YAML, white space to Rust's `trim`) was cut short, and deleting its node left the tab.
    #[test]
    fn a_block_scalar_ending_in_a_vertical_tab_is_deleted_whole() {
        let path = Path::new("/nowhere/agent.yaml");
        let text = "manifest_version: 1\nagents:\n  cel:\n    state:\n      fields:\n    e: int\n    graph:\n      entry_point: sum\n      nodes:\n        - name: sum\n          type: data_transform\n          args:\n            expression: >\n              {\"total\":\n              size(state.item  \u{b}";
        let a = apply(text, path, None, &EditOp::DeleteNode { name: "sum".into() }).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.text, "manifest_version: 1\nagents:\n  cel:\n    state:\n      fields:\n    e: int\n    graph:\n      nodes: []");
    }

    /// Found by the `edit_ops` fuzz target: an explicit `?` key that is a block list with an
    /// empty first item, on a later line; its span starts after the first `-`.
    #[test]
    fn an_explicit_list_key_on_a_later_line_is_refused_with_its_position() {
        let e = set_doc("# \n? \n\n\n-\n\n-\n    argstype: end\n", &["prompts"], serde_json::Value::Null).unwrap_err();
        assert!(e.message.contains("explicit `?` key at 2:1"), "{e}");
    }

    /// Found by the `edit_ops` fuzz target: a block mapping whose first key is a flow mapping
    /// (`{a, b: null}:`) was taken for a flow mapping, so a new key went after the `:` as
    /// `, key: …` and broke the YAML.
    #[test]
    fn a_block_mapping_whose_first_key_is_a_flow_mapping_gets_a_block_entry() {
        let text = "# R]es:\n   {\"sleolw)d\", description: null}:\n";
        let a = set_doc(text, &["x"], serde_json::json!(1)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.text, "# R]es:\n   {\"sleolw)d\", description: null}:\n   x: 1\n");
    }

    /// Found by the `edit_ops` fuzz target: a plain value after tabs, holding tabs itself.
    #[test]
    fn a_plain_value_after_tabs_is_replaced() {
        let text = "version: \"1.0\"\nstart:\t\t\t)\t\t\t{{a..b}}\t\ndata: null\n";
        let a = set_doc(text, &["start"], serde_json::json!(7)).unwrap_or_else(|e| panic!("{e}"));
        // The tabs after the `:` become a space: saphyr refuses `start:\t7` (PyYAML any tab there).
        assert_eq!(a.text, "version: \"1.0\"\nstart: 7\t\ndata: null\n");
        let a = set_doc(text, &["start"], serde_json::json!({"a": [1]})).unwrap_or_else(|e| panic!("{e}"));
        assert!(a.text.starts_with("version: \"1.0\"\nstart:\n") || a.text.starts_with("version: \"1.0\"\nstart: "), "{:?}", a.text);
    }

    /// Found by the `edit_ops` fuzz target: a key added to a flow mapping whose last key (here a
    /// flow mapping itself) has no value landed after the closing `}`. The empty value's span
    /// reached past the bracket; the loader now puts it right after its key.
    #[test]
    fn a_key_is_added_to_a_flow_mapping_whose_last_key_is_a_flow_mapping() {
        let text = "version: \"1.0\"\nstart:\t\t{{a..b}}\t\n";
        let a = set_doc(text, &["start", "n"], serde_json::json!("x\n  y")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.text, "version: \"1.0\"\nstart:\t\t{{a..b}, \"n\": \"x\\n  y\"}\t\n");
    }

    /// Found by the `edit_ops` fuzz target: adding a key to a flow mapping whose last key has no
    /// value (`{"a": 1, "b"}`) wrote it after the `}` and broke the YAML.
    #[test]
    fn a_key_is_added_inside_a_flow_mapping_ending_in_a_bare_key() {
        let path = Path::new("/nowhere/graph.yaml");
        let text = "# Rees:\n   {\"summary\": \"Lint is clean.\", \"verdict\": ,\"ship\"}\n";
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("description".into())], value: Some(serde_json::Value::Null) };
        let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        assert!(a.text.contains("\"ship\", description: null}"), "{:?}", a.text);
        let text = "{a: 1, b}\n";
        let op = EditOp::SetDocField { path: vec![PathSeg::Key("c".into())], value: Some(serde_json::json!(2)) };
        assert_eq!(apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}")).text, "{a: 1, b, c: 2}\n");
        // With an anchor on the line above the `{` (the node's span starts at the anchor).
        let text = "&&Rees:\n   {\"summary\": \"x\",}\n";
        let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.text, "&&Rees:\n   {\"summary\": \"x\", c: 2,}\n");
        // With the anchor right before the `{`, no blank between.
        let text = "&&Reex{\"summary\": \"x\",}\n";
        let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.text, "&&Reex{\"summary\": \"x\", c: 2,}\n");
        // With a trailing comma too.
        let text = "{\"s\": \"x\",ple key\",}\n";
        let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        // The new key goes after the bare key, the trailing comma stays last (as above).
        assert_eq!(a.text, "{\"s\": \"x\",ple key\", c: 2,}\n");
    }

    /// Found by the `edit_ops` fuzz target: adding an edge after an `edges:` list whose only
    /// entry is a bare `-` broke the YAML; it is refused with the line of that entry.
    #[test]
    fn adding_to_a_list_with_an_empty_entry_is_refused_with_its_line() {
        let path = Path::new("/nowhere/agent.yaml");
        let text = "manifest_version: 1\nagents:\n  helper:\n    graph:\n      entry_point: reply\n      nodes:\n        - name: reply\n          type: set_state\n      edges:\n        -\n";
        let e = apply(text, path, None, &EditOp::AddEdge { from: "reply".into(), to: "reply".into() }).unwrap_err();
        assert!(e.message.contains("empty `-` entry at line 10"), "{e}");
    }

    /// Found by the `edit_ops` fuzz target: deleting the only node removed its only edge, whose
    /// `target:` is empty and followed by a comment; the edit broke the YAML.
    #[test]
    fn delete_the_node_of_an_edge_with_an_empty_commented_target() {
        let path = Path::new("/nowhere/agent.yaml");
        let text = "manifest_version: 0\nagents:\n  neither:\n    graph:\n      nodes:\n        - name: first\n          type: set_state\n      edges:\n        - source: first\n          target: # comment\n";
        let a = apply(text, path, None, &EditOp::DeleteNode { name: "first".into() });
        let a = a.unwrap_or_else(|e| panic!("{e}"));
        assert!(doc::load_str(path, &a.text).diagnostics.iter().all(|d| d.code != "yaml-syntax"), "{}", a.text);
        assert!(a.text.ends_with("      nodes: []\n      edges: [] # comment\n"), "{}", a.text);
        // the same in flow mappings: the last entry's empty value
        let text = "manifest_version: 1\nagents: {a: {graph: {nodes: [{name: n, type: set_state, args: {values: {x: 1, y: }}}]}}}\n";
        let op = EditOp::SetField { node: "n".into(), path: vec![PathSeg::Key("args".into()), PathSeg::Key("values".into()), PathSeg::Key("y".into())], value: None };
        let a = apply(text, path, None, &op).unwrap_or_else(|e| panic!("{e}"));
        assert!(a.text.contains("{values: {x: 1 }}"), "{}", a.text);
    }
}
