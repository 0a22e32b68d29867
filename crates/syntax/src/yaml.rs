//! A YAML tree with a byte span on every node, built from `saphyr-parser` events.
//!
//! Parsing never fails: a syntax error yields a diagnostic plus the tree parsed up to the error
//! (open containers are closed), so the editor can still draw a half-broken file.
//! Guards against hostile input: nesting deeper than [`MAX_DEPTH`] and alias expansion beyond
//! [`ALIAS_BUDGET`] nodes are cut off with an error instead of exhausting the stack or memory.

use crate::diag::Diagnostic;
use crate::source::{CharIndex, SourceFile, Span};
use saphyr_parser::{Event, Parser, ScalarStyle};
use std::borrow::Cow;
use std::collections::HashMap;

/// Deepest nesting of mappings/sequences we build. Real agent files nest < 20 levels.
pub const MAX_DEPTH: usize = 256;
/// How many nodes alias expansion may add to one document ("billion laughs" guard).
pub const ALIAS_BUDGET: usize = 100_000;

#[derive(Clone, Debug, PartialEq)]
pub struct YNode {
    pub span: Span,
    pub kind: YKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum YKind {
    Scalar(Scalar),
    Seq(Vec<YNode>),
    Map(Vec<YEntry>),
    /// Something that could not be built (cut off by a guard or an error).
    Bad,
}

#[derive(Clone, Debug, PartialEq)]
pub struct YEntry {
    pub key: YNode,
    pub value: YNode,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Scalar {
    pub text: String,
    pub style: Style,
    pub value: ScalarValue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

/// The YAML 1.2 core-schema reading of a scalar.
#[derive(Clone, Debug, PartialEq)]
pub enum ScalarValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str,
}

impl Default for YNode {
    fn default() -> YNode {
        YNode::bad(Span::default())
    }
}

impl YNode {
    pub fn bad(span: Span) -> YNode {
        YNode { span, kind: YKind::Bad }
    }
    pub fn is_null(&self) -> bool {
        matches!(&self.kind, YKind::Scalar(s) if s.value == ScalarValue::Null)
    }
    pub fn as_map(&self) -> Option<&[YEntry]> {
        match &self.kind {
            YKind::Map(m) => Some(m),
            _ => None,
        }
    }
    pub fn as_seq(&self) -> Option<&[YNode]> {
        match &self.kind {
            YKind::Seq(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_scalar(&self) -> Option<&Scalar> {
        match &self.kind {
            YKind::Scalar(s) => Some(s),
            _ => None,
        }
    }
    /// The text of a string scalar (quoted, or plain that is not null/bool/number).
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            YKind::Scalar(s) if s.value == ScalarValue::Str => Some(&s.text),
            _ => None,
        }
    }
    /// The text of any non-null scalar (numbers and booleans as written).
    pub fn scalar_text(&self) -> Option<&str> {
        match &self.kind {
            YKind::Scalar(s) if s.value != ScalarValue::Null => Some(&s.text),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match &self.kind {
            YKind::Scalar(Scalar { value: ScalarValue::Int(i), .. }) => Some(*i),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match &self.kind {
            YKind::Scalar(Scalar { value: ScalarValue::Int(i), .. }) => Some(*i as f64),
            YKind::Scalar(Scalar { value: ScalarValue::Float(f), .. }) => Some(*f),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match &self.kind {
            YKind::Scalar(Scalar { value: ScalarValue::Bool(b), .. }) => Some(*b),
            _ => None,
        }
    }
    /// Look up a key of a mapping (the last occurrence wins, as in most YAML loaders).
    pub fn get(&self, key: &str) -> Option<&YNode> {
        self.entry(key).map(|e| &e.value)
    }
    pub fn entry(&self, key: &str) -> Option<&YEntry> {
        self.as_map()?.iter().rev().find(|e| e.key.scalar_text_or_null() == Some(key))
    }
    fn scalar_text_or_null(&self) -> Option<&str> {
        match &self.kind {
            YKind::Scalar(s) => Some(&s.text),
            _ => None,
        }
    }
    /// The key text of a mapping entry's key node.
    pub fn key_text(&self) -> &str {
        self.scalar_text_or_null().unwrap_or("")
    }
    /// Follow a path of mapping keys and sequence indices (`"3"`).
    pub fn at_path(&self, path: &[&str]) -> Option<&YNode> {
        let mut cur = self;
        for seg in path {
            cur = match &cur.kind {
                YKind::Map(_) => cur.get(seg)?,
                YKind::Seq(items) => items.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }
    /// A short description of the node's type for messages: "a mapping", "a string", ...
    pub fn describe(&self) -> &'static str {
        match &self.kind {
            YKind::Map(_) => "a mapping",
            YKind::Seq(_) => "a list",
            YKind::Bad => "an invalid value",
            YKind::Scalar(s) => match s.value {
                ScalarValue::Null => "null",
                ScalarValue::Bool(_) => "a boolean",
                ScalarValue::Int(_) => "an integer",
                ScalarValue::Float(_) => "a number",
                ScalarValue::Str => "a string",
            },
        }
    }
    /// The node of this tree at exactly `span` (a value, not a key), if any.
    pub fn at_span(&self, span: Span) -> Option<&YNode> {
        if self.span == span {
            return Some(self);
        }
        if self.span.start > span.start || self.span.end < span.end {
            return None;
        }
        match &self.kind {
            YKind::Seq(items) => items.iter().find_map(|i| i.at_span(span)),
            YKind::Map(entries) => entries.iter().find_map(|e| e.value.at_span(span)),
            _ => None,
        }
    }

    /// Convert to JSON (keys as text; later duplicates win; Bad becomes null).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.kind {
            YKind::Scalar(s) => match &s.value {
                ScalarValue::Null => J::Null,
                ScalarValue::Bool(b) => J::Bool(*b),
                ScalarValue::Int(i) => J::from(*i),
                ScalarValue::Float(f) => serde_json::Number::from_f64(*f).map(J::Number).unwrap_or(J::Null),
                ScalarValue::Str => J::String(s.text.clone()),
            },
            YKind::Seq(items) => J::Array(items.iter().map(|n| n.to_json()).collect()),
            YKind::Map(entries) => {
                let mut m = serde_json::Map::new();
                for e in entries {
                    m.insert(e.key.key_text().to_string(), e.value.to_json());
                }
                J::Object(m)
            }
            YKind::Bad => J::Null,
        }
    }
    /// Number of nodes in this subtree (saturating).
    pub fn size(&self) -> usize {
        match &self.kind {
            YKind::Seq(items) => items.iter().fold(1usize, |a, n| a.saturating_add(n.size())),
            YKind::Map(entries) => entries
                .iter()
                .fold(1usize, |a, e| a.saturating_add(e.key.size()).saturating_add(e.value.size())),
            _ => 1,
        }
    }
}

/// Resolve a plain scalar by the YAML 1.2 core schema.
pub fn resolve_plain(text: &str) -> ScalarValue {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return ScalarValue::Null,
        "true" | "True" | "TRUE" => return ScalarValue::Bool(true),
        "false" | "False" | "FALSE" => return ScalarValue::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return ScalarValue::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return ScalarValue::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return ScalarValue::Float(f64::NAN),
        _ => {}
    }
    let b = text.as_bytes();
    if let Some(hex) = text.strip_prefix("0x") {
        if !hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return i64::from_str_radix(hex, 16).map(ScalarValue::Int).unwrap_or(ScalarValue::Str);
        }
        return ScalarValue::Str;
    }
    if let Some(oct) = text.strip_prefix("0o") {
        if !oct.is_empty() && oct.bytes().all(|c| (b'0'..=b'7').contains(&c)) {
            return i64::from_str_radix(oct, 8).map(ScalarValue::Int).unwrap_or(ScalarValue::Str);
        }
        return ScalarValue::Str;
    }
    let digits = b.strip_prefix(b"-").or_else(|| b.strip_prefix(b"+")).unwrap_or(b);
    if !digits.is_empty() && digits.iter().all(|c| c.is_ascii_digit()) {
        return match text.parse::<i64>() {
            Ok(i) => ScalarValue::Int(i),
            Err(_) => text.parse::<f64>().map(ScalarValue::Float).unwrap_or(ScalarValue::Str),
        };
    }
    // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    let mut i = 0;
    let n = digits.len();
    let mut int_digits = 0;
    while i < n && digits[i].is_ascii_digit() {
        i += 1;
        int_digits += 1;
    }
    let mut frac_digits = 0;
    if i < n && digits[i] == b'.' {
        i += 1;
        while i < n && digits[i].is_ascii_digit() {
            i += 1;
            frac_digits += 1;
        }
    } else if int_digits == 0 {
        return ScalarValue::Str;
    }
    if int_digits == 0 && frac_digits == 0 {
        return ScalarValue::Str;
    }
    if i < n && (digits[i] == b'e' || digits[i] == b'E') {
        i += 1;
        if i < n && (digits[i] == b'+' || digits[i] == b'-') {
            i += 1;
        }
        let s = i;
        while i < n && digits[i].is_ascii_digit() {
            i += 1;
        }
        if s == i {
            return ScalarValue::Str;
        }
    }
    if i != n {
        return ScalarValue::Str;
    }
    text.parse::<f64>().map(ScalarValue::Float).unwrap_or(ScalarValue::Str)
}

/// Just after the `:` that follows a mapping key ending at `end`, or `end` when no colon follows.
/// Blanks and a closing quote may stand between; in a flow mapping so may line breaks and
/// comments (`{nodes\n: x}`: the parser takes the `:` on the next line for the key's).
pub fn after_key(text: &str, end: usize) -> usize {
    let b = text.as_bytes();
    let mut p = end;
    while p < b.len() {
        match b[p] {
            b':' => return p + 1,
            b' ' | b'\t' | b'\r' | b'\n' | b'"' | b'\'' => p += 1,
            // A comment needs white space before it; `a#b` is part of a plain key.
            b'#' if p > end && matches!(b[p - 1], b' ' | b'\t' | b'\r' | b'\n') => {
                while p < b.len() && b[p] != b'\n' {
                    p += 1;
                }
            }
            _ => break,
        }
    }
    end
}

enum Frame {
    Seq { start: usize, items: Vec<YNode>, anchor: usize },
    Map { start: usize, entries: Vec<YEntry>, key: Option<YNode>, anchor: usize },
}

/// Result of parsing one file.
pub struct Parsed {
    /// The first document's root; `None` for an empty file.
    pub root: Option<YNode>,
    pub diagnostics: Vec<Diagnostic>,
}

/// `text` with every non-ASCII character of its `%` directive lines replaced by as many `_` as
/// it has bytes. saphyr-parser 0.3 counts a directive's name and parameters in bytes where its
/// positions count characters, so after `%TAG é` every position in the file was off by a byte
/// per extra UTF-8 byte (an edit then landed in the wrong place). The directive means the same
/// either way: a reserved one is ignored, and a `%YAML` or `%TAG` with such characters is an
/// error in both. Directive lines are those starting with `%` before a document starts: at the
/// beginning of the file or after a `...` line, with only blank and comment lines between.
fn ascii_directives(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text); // nearly every file: no line to look at
    }
    let mut out: Option<String> = None;
    let mut in_directives = true;
    let mut ls = 0;
    while ls < text.len() {
        let le = text[ls..].find('\n').map_or(text.len(), |i| ls + i + 1);
        let line = &text[ls..le];
        if in_directives {
            if line.starts_with('%') {
                if !line.is_ascii() {
                    let o = out.get_or_insert_with(|| text[..ls].to_string());
                    o.extend(line.chars().flat_map(|c| std::iter::repeat_n(if c.is_ascii() { c } else { '_' }, c.len_utf8())));
                    ls = le;
                    continue;
                }
            } else {
                let t = line.trim_start_matches([' ', '\t']);
                in_directives = t.is_empty() || t.starts_with(['#', '\r', '\n']);
            }
        } else if let Some(rest) = line.strip_prefix("...") {
            in_directives = rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n', '#']);
        }
        if let Some(o) = &mut out {
            o.push_str(line);
        }
        ls = le;
    }
    match out {
        Some(o) => Cow::Owned(o),
        None => Cow::Borrowed(text),
    }
}

/// Parse `file` into a spanned tree. Never panics; never fails.
pub fn parse(file: &SourceFile) -> Parsed {
    let text = file.text();
    // The scanner reads a copy whose directives are ASCII (see `ascii_directives`); it has the
    // same bytes everywhere else, so its positions hold for `text`.
    let scanned = ascii_directives(text);
    let ci = CharIndex::new(&scanned);
    let mut diags = Vec::new();
    let mut parser = Parser::new_from_str(&scanned);
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<YNode> = None;
    let mut anchors: HashMap<usize, (YNode, usize)> = HashMap::new();
    let mut alias_total = 0usize;
    let mut skip_depth = 0usize; // > 0 while inside content deeper than MAX_DEPTH
    let mut skip_start = 0usize;
    let mut docs = 0usize;
    let mut seen_keys: Vec<HashMap<String, Span>> = Vec::new();
    // YAML forbids C0/C1 control characters (other than tab and line breaks) in a document.
    let mut reported = 0;
    for (i, ch) in text.char_indices() {
        let bad = (ch < ' ' && !matches!(ch, '\t' | '\n' | '\r')) || ('\u{7f}'..='\u{9f}').contains(&ch);
        if bad {
            diags.push(
                Diagnostic::error("control-character", format!("control character U+{:04X} is not allowed in YAML", ch as u32))
                    .at(file, Span::new(i, i + ch.len_utf8()))
                    .hint("remove it; inside a double-quoted string write it as an escape such as \\x07"),
            );
            reported += 1;
            if reported >= 5 {
                break;
            }
        }
    }

    // Put a finished node into its parent (or make it the root).
    fn emit(
        stack: &mut [Frame],
        root: &mut Option<YNode>,
        node: YNode,
        seen: &mut [HashMap<String, Span>],
        file: &SourceFile,
        diags: &mut Vec<Diagnostic>,
    ) {
        match stack.last_mut() {
            None => {
                if root.is_none() {
                    *root = Some(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => {
                    if let (Some(seen), YKind::Scalar(s)) = (seen.last_mut(), &node.kind) {
                        if let Some(first) = seen.get(&s.text) {
                            let first_line = file.line_col(first.start as usize).line;
                            diags.push(
                                Diagnostic::error("duplicate-key", format!("duplicate key `{}`", s.text))
                                    .at(file, node.span)
                                    .hint(format!(
                                        "`{}` is already defined on line {first_line}; only the last one is used. Remove or rename one of them",
                                        s.text
                                    )),
                            );
                        } else {
                            seen.insert(s.text.clone(), node.span);
                        }
                    } else if !matches!(node.kind, YKind::Scalar(_)) {
                        diags.push(
                            Diagnostic::warning("complex-key", "a mapping key that is not a plain value is ignored")
                                .at(file, node.span),
                        );
                    }
                    *key = Some(node);
                }
                Some(k) => entries.push(YEntry { key: k, value: node }),
            },
        }
    }

    loop {
        let ev = match parser.next_event() {
            None => break,
            Some(Ok(ev)) => ev,
            Some(Err(e)) => {
                let m = e.marker();
                let pos = ci.byte(m.index());
                let info = e.info().to_string();
                let hint = syntax_hint(&info, file, pos);
                diags.push(
                    Diagnostic::error("yaml-syntax", format!("YAML syntax error: {info}"))
                        .at(file, Span::at(pos))
                        .maybe_hint(hint),
                );
                break;
            }
        };
        let (event, span) = ev;
        let s = ci.byte(span.start.index());
        let e = ci.byte(span.end.index()).max(s);
        if skip_depth > 0 {
            match event {
                Event::SequenceStart(..) | Event::MappingStart(..) => skip_depth += 1,
                Event::SequenceEnd | Event::MappingEnd => {
                    skip_depth -= 1;
                    if skip_depth == 0 {
                        let bad = YNode::bad(Span::new(skip_start, e));
                        emit(&mut stack, &mut root, bad, &mut seen_keys, file, &mut diags);
                    }
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing | Event::DocumentEnd => {}
            Event::DocumentStart(_) => {
                docs += 1;
                if docs > 1 {
                    diags.push(
                        Diagnostic::error(
                            "multiple-documents",
                            "this file holds more than one YAML document; only the first is used",
                        )
                        .at(file, Span::new(s, e.max(s + 3).min(text.len())))
                        .hint("remove the `---` separator and everything after it, or move it to its own file"),
                    );
                    break;
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let style = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted => Style::SingleQuoted,
                    ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    ScalarStyle::Literal => Style::Literal,
                    ScalarStyle::Folded => Style::Folded,
                };
                let text = value.into_owned();
                let mut val = if style == Style::Plain { resolve_plain(&text) } else { ScalarValue::Str };
                let bare = tag.is_none() && anchor == 0;
                if let Some(tag) = tag {
                    let suffix = tag.suffix.as_str();
                    val = match suffix {
                        "str" => ScalarValue::Str,
                        "null" => ScalarValue::Null,
                        "int" | "float" | "bool" => match resolve_plain(&text) {
                            ScalarValue::Str => ScalarValue::Str,
                            v => v,
                        },
                        _ => val,
                    };
                }
                // An empty value (`key:` with nothing after it, or a bare `key` in a flow
                // mapping) is placed by the parser at the next token, which can lie past a
                // closing `}` or on a later line. It belongs right after its key's `:` (or the
                // key itself when there is no colon), as a zero-width span.
                let (s, e) = match stack.last() {
                    Some(Frame::Map { key: Some(k), .. }) if bare && text.is_empty() && style == Style::Plain && e >= k.span.end as usize => {
                        // In a flow mapping the parser can also place it before the colon
                        // (`{a, b: }`); it belongs after it all the same.
                        let at = after_key(file.text(), k.span.end as usize);
                        (at, at)
                    }
                    _ => (s, e),
                };
                let node = YNode { span: Span::new(s, e), kind: YKind::Scalar(Scalar { text, style, value: val }) };
                if anchor > 0 {
                    anchors.insert(anchor, (node.clone(), 1));
                }
                emit(&mut stack, &mut root, node, &mut seen_keys, file, &mut diags);
            }
            Event::Alias(id) => {
                let node = match anchors.get(&id) {
                    Some((n, size)) => {
                        alias_total = alias_total.saturating_add(*size);
                        if alias_total > ALIAS_BUDGET {
                            diags.push(
                                Diagnostic::error(
                                    "alias-bomb",
                                    format!("alias expansion exceeds {ALIAS_BUDGET} nodes; the rest is ignored"),
                                )
                                .at(file, Span::new(s, e))
                                .hint("this looks like a \"billion laughs\" document; agent files do not need nested aliases"),
                            );
                            YNode::bad(Span::new(s, e))
                        } else {
                            let mut n = n.clone();
                            n.span = Span::new(s, e);
                            n
                        }
                    }
                    // The anchor is not finished yet: the alias sits inside the node it names.
                    None => {
                        diags.push(
                            Diagnostic::error("recursive-alias", "this alias refers to a node that contains it (a recursive structure)")
                                .at(file, Span::new(s, e))
                                .hint("an alias can only repeat a node that is complete before it; agent files cannot hold recursive data"),
                        );
                        YNode::bad(Span::new(s, e))
                    }
                };
                emit(&mut stack, &mut root, node, &mut seen_keys, file, &mut diags);
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                let is_map = matches!(event, Event::MappingStart(..));
                if stack.len() >= MAX_DEPTH {
                    diags.push(
                        Diagnostic::error(
                            "too-deep",
                            format!("nesting deeper than {MAX_DEPTH} levels; the inner part is ignored"),
                        )
                        .at(file, Span::new(s, e))
                        .hint("agent files nest only a few levels; flatten this value"),
                    );
                    skip_depth = 1;
                    skip_start = s;
                    continue;
                }
                if is_map {
                    stack.push(Frame::Map { start: s, entries: Vec::new(), key: None, anchor });
                    seen_keys.push(HashMap::new());
                } else {
                    stack.push(Frame::Seq { start: s, items: Vec::new(), anchor });
                }
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = stack.pop() else { continue };
                let closer = if matches!(frame, Frame::Map { .. }) { b'}' } else { b']' };
                // The event's span runs from the closing bracket over the blanks after it
                // (`{a: {b: 1} }`: the inner mapping's end takes in the space); the collection
                // ends just past the bracket (found by `edit_ops`: a flow mapping as a key,
                // `{{a} }`, seemed to run through the outer `}`).
                let e = if file.text().as_bytes().get(s) == Some(&closer) { s + 1 } else { through_closer(file.text(), e, closer) };
                let (node, anchor) = close_frame(frame, e, &mut seen_keys);
                if anchor > 0 {
                    let size = node.size();
                    anchors.insert(anchor, (node.clone(), size));
                }
                emit(&mut stack, &mut root, node, &mut seen_keys, file, &mut diags);
            }
        }
    }
    // Close whatever an error left open, innermost first.
    while let Some(frame) = stack.pop() {
        let (node, _) = close_frame(frame, text.len(), &mut seen_keys);
        emit(&mut stack, &mut root, node, &mut seen_keys, file, &mut diags);
    }
    Parsed { root, diagnostics: diags }
}

/// The parser ends a flow collection written with a trailing comma (`{a,}`, `{a: 1,  # c` then
/// `}` on the next line) before its closing bracket. When `end` is not just past the `closer`
/// and the next thing after blanks, line breaks and comments is that `closer`, the collection
/// ends after it. (A block collection is never followed by a closing bracket in valid YAML.)
fn through_closer(text: &str, end: usize, closer: u8) -> usize {
    let b = text.as_bytes();
    if end == 0 || end > b.len() || b[end - 1] == closer {
        return end;
    }
    let mut p = end;
    while p < b.len() {
        match b[p] {
            b' ' | b'\t' | b'\r' | b'\n' => p += 1,
            b'#' if matches!(b[p - 1], b' ' | b'\t' | b'\r' | b'\n') => {
                while p < b.len() && b[p] != b'\n' {
                    p += 1;
                }
            }
            c if c == closer => return p + 1,
            _ => return end,
        }
    }
    end
}

fn close_frame(frame: Frame, end: usize, seen: &mut Vec<HashMap<String, Span>>) -> (YNode, usize) {
    match frame {
        Frame::Seq { start, items, anchor } => {
            let end = items.last().map(|n| n.span.end as usize).unwrap_or(end).max(end.min(usize::MAX));
            (YNode { span: Span::new(start, end.max(start)), kind: YKind::Seq(items) }, anchor)
        }
        Frame::Map { start, mut entries, key, anchor } => {
            seen.pop();
            if let Some(k) = key {
                // a key whose value was cut off by an error
                let span = Span::at(k.span.end as usize);
                entries.push(YEntry { key: k, value: YNode::bad(span) });
            }
            (YNode { span: Span::new(start, end.max(start)), kind: YKind::Map(entries) }, anchor)
        }
    }
}

/// A `:` followed by a tab at or just before `pos` (the parser reports the value after it).
fn colon_tab_near(file: &SourceFile, pos: usize) -> bool {
    let b = file.text().as_bytes();
    let mut i = pos.min(b.len());
    if b.get(i) == Some(&b':') {
        return b.get(i + 1) == Some(&b'\t');
    }
    let mut tab = false;
    while i > 0 && matches!(b[i - 1], b' ' | b'\t') {
        tab |= b[i - 1] == b'\t';
        i -= 1;
    }
    tab && i > 0 && b[i - 1] == b':'
}

fn syntax_hint(info: &str, file: &SourceFile, pos: usize) -> Option<String> {
    let lc = file.line_col(pos);
    let line = file.line_text(lc.line);
    let prev = if lc.line > 1 { file.line_text(lc.line - 1) } else { "" };
    if info.contains("tab") || line.starts_with('\t') || line.trim_start_matches(' ').starts_with('\t') {
        return Some("YAML does not allow tab characters for indentation; indent with spaces".into());
    }
    if info.contains("must be followed by a valid YAML whitespace") && colon_tab_near(file, pos) {
        return Some("put a space, not a tab, after `:` (Switchyard's YAML parser does not accept a tab there)".into());
    }
    if info.contains("mapping values are not allowed") {
        return Some(
            "a value contains `: ` — quote the whole value (e.g. \"a: b\"), or check the indentation of this line"
                .into(),
        );
    }
    if info.contains("did not find expected key") || info.contains("expected key") {
        return Some("check the indentation of this line against the lines above it".into());
    }
    if info.contains("unclosed quote") || info.contains("while scanning a quoted scalar") {
        return Some("a quoted value is missing its closing quote".into());
    }
    if info.contains("found character that cannot start any token") {
        if line.trim_start().starts_with('@') || line.trim_start().starts_with('`') {
            return Some("values starting with @ or ` must be quoted".into());
        }
        return Some("this character cannot start a plain value; quote the value".into());
    }
    if info.contains("recursion limit") {
        return Some("the value is nested too deeply; agent files nest only a few levels".into());
    }
    if prev.trim_end().ends_with(':') && info.contains("block") {
        return Some("check the indentation of the value under the previous key".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Parsed {
        parse(&SourceFile::new("t.yaml", text))
    }

    #[test]
    fn a_flow_collection_ends_at_its_closing_bracket_not_the_blanks_after_it() {
        let p = parse(&SourceFile::new("t.yaml", "{a: {b: 1} , c: [x ] }\n"));
        assert!(p.diagnostics.is_empty());
        let root = p.root.unwrap();
        assert_eq!(root.span, Span::new(0, 22));
        assert_eq!(root.get("a").unwrap().span, Span::new(4, 10));
        assert_eq!(root.get("c").unwrap().span, Span::new(16, 20));
        // A flow mapping as a key.
        let p = parse(&SourceFile::new("t.yaml", "{{a: 1} }\n"));
        let root = p.root.unwrap();
        assert_eq!(root.span, Span::new(0, 9));
        assert_eq!(root.as_map().unwrap()[0].key.span, Span::new(1, 7));
    }

    #[test]
    fn spans_and_values() {
        let src = "a: 1\nb: 'x'\nc:\n  - true\n  - 2.5\n  - ~\nd: |\n  hi\n";
        let r = p(src);
        assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
        let root = r.root.unwrap();
        assert_eq!(root.get("a").unwrap().as_i64(), Some(1));
        let b = root.get("b").unwrap();
        assert_eq!(b.as_str(), Some("x"));
        assert_eq!(&src[b.span.range()], "'x'");
        let c = root.get("c").unwrap().as_seq().unwrap();
        assert_eq!(c[0].as_bool(), Some(true));
        assert_eq!(c[1].as_f64(), Some(2.5));
        assert!(c[2].is_null());
        assert_eq!(root.get("d").unwrap().as_str(), Some("hi\n"));
        let a_key = &root.entry("a").unwrap().key;
        assert_eq!(&src[a_key.span.range()], "a");
    }

    /// The parser ends a flow collection with a trailing comma at the comma; its span must still
    /// reach the closing bracket, or an edit of the text around it leaves the bracket behind.
    #[test]
    fn flow_collections_with_a_trailing_comma_end_at_their_bracket() {
        for (src, want) in [("k:\n {a,}: 1\n", "{a,}"), ("k:\n {\"a\",}: 1\n", "{\"a\",}"), ("k:\n {\"a\"}: 1\n", "{\"a\"}")] {
            let root = p(src).root.unwrap();
            let inner = root.get("k").unwrap().as_map().unwrap();
            assert_eq!(&src[inner[0].key.span.range()], want, "{src:?}");
        }
        let src = "k: {a: 1,  # c\n  }\nz: 2\n";
        assert_eq!(&src[p(src).root.unwrap().get("k").unwrap().span.range()], "{a: 1,  # c\n  }");
        let src = "k: [a, [b,], {c,}, {d: 1,},]\n";
        let k = p(src).root.unwrap().get("k").unwrap().clone();
        assert_eq!(&src[k.span.range()], "[a, [b,], {c,}, {d: 1,},]");
        let items = k.as_seq().unwrap();
        let texts: Vec<&str> = items.iter().map(|i| &src[i.span.range()]).collect();
        assert_eq!(texts, ["a", "[b,]", "{c,}", "{d: 1,}"]);
    }

    #[test]
    fn core_schema() {
        assert_eq!(resolve_plain("yes"), ScalarValue::Str);
        assert_eq!(resolve_plain("1.0"), ScalarValue::Float(1.0));
        assert_eq!(resolve_plain("-3"), ScalarValue::Int(-3));
        assert_eq!(resolve_plain("1e3"), ScalarValue::Float(1000.0));
        assert_eq!(resolve_plain("1.2.3"), ScalarValue::Str);
        assert_eq!(resolve_plain("0x1F"), ScalarValue::Int(31));
        assert_eq!(resolve_plain("."), ScalarValue::Str);
        assert_eq!(resolve_plain("99999999999999999999"), ScalarValue::Float(1e20));
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let r = p("a: 1\nb: 2\na: 3\n");
        assert_eq!(r.diagnostics.len(), 1);
        assert_eq!(r.diagnostics[0].code, "duplicate-key");
        assert_eq!(r.diagnostics[0].line, 3);
        assert_eq!(r.root.unwrap().get("a").unwrap().as_i64(), Some(3));
    }

    #[test]
    fn syntax_error_keeps_partial_tree() {
        let r = p("a: 1\nb: [1, 2\nc: 3\n");
        assert!(r.diagnostics.iter().any(|d| d.code == "yaml-syntax"));
        let root = r.root.unwrap();
        assert_eq!(root.get("a").unwrap().as_i64(), Some(1));
    }

    #[test]
    fn tabs_get_a_hint() {
        let r = p("a:\n\tb: 1\n");
        let d = r.diagnostics.iter().find(|d| d.code == "yaml-syntax").expect("syntax error");
        assert!(d.hint.as_deref().unwrap_or("").contains("tab"), "{d:?}");
    }

    #[test]
    fn recursive_alias_is_an_error_at_the_alias() {
        let src = "a: &x\n  b: 1\n  c: *x\n";
        let r = p(src);
        let d = r.diagnostics.iter().find(|d| d.code == "recursive-alias").expect("recursive-alias");
        assert_eq!((d.line, d.column), (3, 6), "{d:?}");
        assert_eq!(r.root.unwrap().get("a").unwrap().get("b").unwrap().as_i64(), Some(1));
    }

    #[test]
    fn tab_after_colon_gets_a_hint() {
        let r = p("a:\t1\n");
        let d = r.diagnostics.iter().find(|d| d.code == "yaml-syntax").expect("syntax error");
        assert!(d.hint.as_deref().unwrap_or("").contains("not a tab"), "{d:?}");
    }

    #[test]
    fn billion_laughs_is_cut_off() {
        let mut s = String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        for w in names.windows(2) {
            let (prev, cur) = (w[0], w[1]);
            s += &format!("{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n");
        }
        let r = p(&s);
        assert!(r.diagnostics.iter().any(|d| d.code == "alias-bomb"));
        assert!(r.root.unwrap().size() < 10 * ALIAS_BUDGET);
    }

    #[test]
    fn deep_nesting_is_cut_off() {
        let depth = 10_000;
        let s = "[".repeat(depth) + &"]".repeat(depth);
        let r = p(&s);
        assert!(r.diagnostics.iter().any(|d| d.code == "too-deep" || d.message.contains("recursion")), "{:?}", r.diagnostics);
        let s = (0..3000).map(|i| format!("{}k:\n", " ".repeat(i))).collect::<String>();
        let r = p(&s);
        assert!(r.diagnostics.iter().any(|d| d.code == "too-deep"), "{:?}", r.diagnostics);
    }

    #[test]
    fn multibyte_spans() {
        let src = "é: \"ü\"\nnext: x\n";
        let r = p(src);
        let root = r.root.unwrap();
        let n = root.get("next").unwrap();
        assert_eq!(&src[n.span.range()], "x");
        assert_eq!(&src[root.get("é").unwrap().span.range()], "\"ü\"");
    }

    #[test]
    fn spans_after_a_directive_with_non_ascii_characters() {
        // The scanner counted such a directive in bytes: every later span was off.
        for src in [
            "%FOO é ✓\n---\nkey: value\n",
            "# c\n\n%é\n%BAR x\n--- # doc\nkey: value\n",
            "%TAG !e! tag:é.example,2000:\n---\nkey: value\n",
            "a: 1\n...\n# c\n%X ü\n---\nkey: value\n",
        ] {
            let r = p(src);
            let root = r.root.unwrap_or_else(|| panic!("{src:?}: {:?}", r.diagnostics));
            let (k, v) = match &root.kind {
                YKind::Map(es) => (&es[0].key, &es[0].value),
                _ => panic!("{src:?}: not a map"),
            };
            let want = if src.starts_with("a: 1") { ("a", "1") } else { ("key", "value") };
            assert_eq!((&src[k.span.range()], &src[v.span.range()]), want, "{src:?}");
            if let Some(second) = root.get("key").filter(|_| src.starts_with("a: 1")) {
                panic!("{src:?}: the second document is not read: {second:?}");
            }
        }
        // A directive after a document has started is a syntax error, at its own place;
        // content that merely starts with `%` is not touched.
        let src = "a: 1\n%X é\nb: 2\n";
        let d = &p(src).diagnostics;
        assert_eq!(d.first().map(|d| (d.line, d.column)), Some((2, 1)), "{d:?}");
        assert_eq!(ascii_directives("k: |\n  %é\n"), "k: |\n  %é\n");
        assert_eq!(ascii_directives("%é x\n--- |\n%é\n"), "%__ x\n--- |\n%é\n");
    }

    #[test]
    fn empty_and_comment_only() {
        assert!(p("").root.is_none());
        assert!(p("# just a comment\n").root.is_none());
    }
}
