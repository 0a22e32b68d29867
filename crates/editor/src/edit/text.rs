//! Span-based YAML text surgery: find the exact text region of entries and items, render values
//! (quoting, `|` blocks, flow style), and set/insert/remove/move/rename inside the tree while every
//! byte outside the edited region stays as it was.

use super::{EditError, PathSeg};
use syntax::source::SourceFile;
use syntax::yaml::{self, ScalarValue, Style, YEntry, YKind, YNode};
use serde_json::Value as Json;

pub type Res<T> = Result<T, EditError>;

pub fn err<T>(msg: impl Into<String>) -> Res<T> {
    Err(EditError::new(msg))
}

/// Parse text into the spanned tree (the first document's root).
pub fn parse_root(text: &str) -> Option<YNode> {
    yaml::parse(&SourceFile::new("edit.yaml", text)).root
}

/// One replacement in the old text.
#[derive(Debug, Clone)]
pub struct Rep {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// Apply non-overlapping replacements (any order). Overlapping ones: the later-starting one
/// that overlaps an earlier kept one is dropped.
pub fn apply_reps(text: &str, mut reps: Vec<Rep>) -> String {
    reps.sort_by_key(|r| (r.start, r.end));
    let mut out = String::with_capacity(text.len() + 64);
    let mut pos = 0;
    for r in reps {
        if r.start < pos || r.end > text.len() || r.start > r.end {
            continue;
        }
        out.push_str(&text[pos..r.start]);
        out.push_str(&r.text);
        pos = r.end;
    }
    out.push_str(&text[pos..]);
    out
}

// ---------------------------------------------------------------------------------------------
// Lines and positions
// ---------------------------------------------------------------------------------------------

pub fn line_start(text: &str, pos: usize) -> usize {
    let pos = pos.min(text.len());
    text[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0)
}

/// Position just after the line terminator of the line containing `pos` (or the text end).
pub fn line_end_incl(text: &str, pos: usize) -> usize {
    let pos = pos.min(text.len());
    text[pos..].find('\n').map(|i| pos + i + 1).unwrap_or(text.len())
}

/// Position of the line terminator (`\r\n` or `\n`) of the line containing `pos`.
pub fn line_end_excl(text: &str, pos: usize) -> usize {
    let e = line_end_incl(text, pos);
    let b = text.as_bytes();
    let mut e2 = e;
    if e2 > pos && e2 > 0 && b[e2 - 1] == b'\n' {
        e2 -= 1;
        if e2 > pos && b[e2 - 1] == b'\r' {
            e2 -= 1;
        }
    }
    e2.max(pos.min(text.len()))
}

/// Byte column (indentation is ASCII spaces, so bytes are columns where it matters).
pub fn col(text: &str, pos: usize) -> usize {
    let ls = line_start(text, pos);
    // A byte order mark before a document takes no column (found by `edit_ops`: a file saved
    // with a BOM got its new top-level keys indented by the mark's three bytes).
    let bom = if text[ls..].starts_with('\u{feff}') && pos >= ls + 3 { 3 } else { 0 };
    pos - ls - bom
}

/// White space as YAML sees it. Rust's `trim` also strips Unicode spaces such as a vertical tab
/// or U+3000, which are content to YAML (found by `edit_ops`: a block scalar ending in `\x0b`).
fn yaml_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_blank(line: &str) -> bool {
    line.trim_matches(yaml_blank).is_empty()
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// The line (without terminator) starting at `ls`.
fn line_at(text: &str, ls: usize) -> &str {
    &text[ls..line_end_excl(text, ls)]
}

/// Start of the previous line, if any.
fn prev_line_start(text: &str, ls: usize) -> Option<usize> {
    if ls == 0 { None } else { Some(line_start(text, ls - 1)) }
}

pub fn spaces(n: usize) -> String {
    " ".repeat(n)
}

// ---------------------------------------------------------------------------------------------
// Node extents
// ---------------------------------------------------------------------------------------------

/// `v` wrapped in one mapping per key of `rest`, innermost last (`[a, b]`, 1 → `{a: {b: 1}}`):
/// the value that creates a missing path. None when `rest` holds a list index (an index can
/// only address an existing item).
pub fn nest_value(v: &Json, rest: &[PathSeg]) -> Option<Json> {
    let mut nv = v.clone();
    for s in rest.iter().rev() {
        match s {
            PathSeg::Key(k) => {
                let mut m = serde_json::Map::new();
                m.insert(k.clone(), nv);
                nv = Json::Object(m);
            }
            PathSeg::Index(_) => return None,
        }
    }
    Some(nv)
}

pub fn is_flow(text: &str, node: &YNode) -> bool {
    flow_open(text, node).is_some()
}

/// The position of a flow collection's `{` / `[`. The node's span may start at its properties
/// (`&anchor`, `!tag`), which can stand on the line above.
fn flow_open(text: &str, node: &YNode) -> Option<usize> {
    if !matches!(node.kind, YKind::Map(_) | YKind::Seq(_)) {
        return None;
    }
    let b = text.as_bytes();
    let mut p = node.span.start as usize;
    // A block mapping whose first key is a flow collection (`{a: 1}: x`) starts with a bracket
    // that is its key's, not its own; so does a list written at its key's column whose first
    // item is one (`key:` then `- [a]`): its span starts at that item, not at a `-`.
    let first_key = match &node.kind {
        YKind::Map(entries) => entries.first().map(|e| e.key.span.start as usize),
        YKind::Seq(items) => items.first().map(|i| i.span.start as usize),
        _ => None,
    };
    loop {
        match b.get(p)? {
            b'{' | b'[' if first_key.is_some_and(|k| k <= p) => return None,
            b'{' | b'[' => return Some(p),
            b' ' | b'\t' | b'\r' | b'\n' => p += 1,
            b'#' => p = line_end_incl(text, p),
            b'&' | b'!' => {
                // An anchor or tag ends at a blank or at a flow indicator (`&a{x: 1}`).
                while p < b.len() && !matches!(b[p], b' ' | b'\t' | b'\r' | b'\n' | b'{' | b'[' | b'}' | b']' | b',') {
                    p += 1;
                }
            }
            _ => return None,
        }
    }
}

/// The end of what the node really spans (block collection and block scalar spans reach into
/// the following blank lines and comments; flow collection spans reach past trailing comments).
pub fn eff_end(text: &str, node: &YNode) -> usize {
    let s = (node.span.start as usize).min(text.len());
    let e = (node.span.end as usize).min(text.len()).max(s);
    if is_alias(node) {
        // `*a`: its text is the alias alone; the children are the anchored node's, elsewhere.
        return e;
    }
    match &node.kind {
        YKind::Scalar(sc) if matches!(sc.style, Style::Literal | Style::Folded) => {
            let t = text[s..e].trim_end_matches(yaml_blank);
            if t.is_empty() {
                // empty block scalar: just after the `|`/`>` header (and its indicators)
                let hs = text[..s].rfind(['|', '>']).unwrap_or(s);
                let mut p = hs + 1;
                let b = text.as_bytes();
                while p < text.len() && matches!(b[p], b'-' | b'+' | b'0'..=b'9') {
                    p += 1;
                }
                p
            } else {
                s + t.len()
            }
        }
        YKind::Scalar(_) | YKind::Bad => e,
        YKind::Map(entries) => {
            let last = entries.last().map(|en| entry_end(text, en));
            if is_flow(text, node) {
                flow_close(text, node, last).map(|c| c + 1).unwrap_or(e)
            } else {
                last.unwrap_or(s)
            }
        }
        YKind::Seq(items) => {
            let last = items.last().map(|it| eff_end(text, it));
            if is_flow(text, node) {
                flow_close(text, node, last).map(|c| c + 1).unwrap_or(e)
            } else {
                last.unwrap_or(s)
            }
        }
    }
}

/// A collection repeated through an alias (`*a`). The tree holds a copy of the anchored node
/// whose children keep their places in the file, which lie before the alias (an anchor must be
/// complete before its alias), while the copy itself is spanned at the alias.
pub fn is_alias(node: &YNode) -> bool {
    let first = match &node.kind {
        YKind::Map(entries) => entries.first().map(|en| &en.key),
        YKind::Seq(items) => items.first(),
        _ => None,
    };
    first.is_some_and(|c| c.span.start < node.span.start)
}

/// The end of a mapping entry: its value's end, but never before the `:` (an empty value, as
/// in `key: # comment`, is placed before the colon).
fn entry_end(text: &str, en: &YEntry) -> usize {
    eff_end(text, &en.value).max(after_colon(text, &en.key))
}

/// Position of the closing bracket of a flow collection.
fn flow_close(text: &str, node: &YNode, last_child_end: Option<usize>) -> Option<usize> {
    let b = text.as_bytes();
    let open = flow_open(text, node).unwrap_or(node.span.start as usize) + 1;
    let mut p = last_child_end.unwrap_or(open).max(open);
    while p < b.len() {
        match b[p] {
            b' ' | b'\t' | b'\r' | b'\n' | b',' => p += 1,
            b'#' => p = line_end_incl(text, p),
            b'}' | b']' => return Some(p),
            _ => return None,
        }
    }
    None
}

/// Position just after the `:` following a mapping key.
pub fn after_colon(text: &str, key: &YNode) -> usize {
    syntax::yaml::after_key(text, key.span.end as usize)
}

/// Position of the `-` of a block sequence item.
pub fn dash_of(text: &str, item: &YNode) -> Option<usize> {
    // Between the `-` and its item stand only blanks, line breaks and comments (`- # note`
    // above a mapping), and a comment may itself end in a dash: look at each line without its
    // comment, from the item's line upwards.
    let mut p = (item.span.start as usize).min(text.len());
    loop {
        let ls = line_start(text, p);
        let mut seg = &text[ls..p];
        let b = seg.as_bytes();
        if let Some(h) = (0..b.len()).find(|&i| b[i] == b'#' && (i == 0 || matches!(b[i - 1], b' ' | b'\t'))) {
            seg = &seg[..h];
        }
        let t = seg.trim_end_matches([' ', '\t', '\r']);
        if !t.is_empty() {
            return t.ends_with('-').then(|| ls + t.len() - 1);
        }
        if ls == 0 {
            return None;
        }
        p = ls - 1;
    }
}

/// Extend a line-aligned region start upwards over comment lines at column `c`.
fn with_comments_above(text: &str, ls: usize, c: usize) -> usize {
    let mut start = ls;
    while let Some(p) = prev_line_start(text, start) {
        let line = line_at(text, p);
        let t = line.trim_start_matches(' ');
        if t.starts_with('#') && indent_of(line) == c {
            start = p;
        } else {
            break;
        }
    }
    start
}

/// The text region of a child of a block collection: (start, end). `start` is at a line start
/// (with attached comments) unless the child shares its line with something before it.
pub fn child_region(text: &str, parent: &YNode, idx: usize) -> Option<(usize, usize, bool)> {
    let (anchor, end) = match &parent.kind {
        YKind::Map(entries) => {
            let en = entries.get(idx)?;
            (en.key.span.start as usize, entry_end(text, en))
        }
        YKind::Seq(items) => {
            let it = items.get(idx)?;
            let d = dash_of(text, it)?;
            (d, eff_end(text, it).max(d + 1))
        }
        _ => return None,
    };
    let ls = line_start(text, anchor);
    let end = line_end_incl(text, end);
    if text[ls..anchor].trim_matches(yaml_blank).is_empty() {
        Some((with_comments_above(text, ls, anchor - ls), end, true))
    } else {
        Some((anchor, end, false))
    }
}

/// Number of blank lines directly above line start `ls`.
fn blank_lines_above(text: &str, ls: usize) -> usize {
    let mut n = 0;
    let mut p = ls;
    while let Some(q) = prev_line_start(text, p) {
        if is_blank(line_at(text, q)) {
            n += 1;
            p = q;
        } else {
            break;
        }
    }
    n
}

/// The blank-line separation used between siblings of a block collection.
fn sibling_gap(text: &str, parent: &YNode) -> usize {
    let n = match &parent.kind {
        YKind::Map(e) => e.len(),
        YKind::Seq(i) => i.len(),
        _ => 0,
    };
    if n < 2 {
        return 0;
    }
    match child_region(text, parent, n - 1) {
        Some((s, _, true)) => blank_lines_above(text, s).min(3),
        _ => 0,
    }
}

fn children_len(node: &YNode) -> usize {
    match &node.kind {
        YKind::Map(e) => e.len(),
        YKind::Seq(i) => i.len(),
        _ => 0,
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

fn needs_quotes(s: &str) -> bool {
    if s.is_empty() || s.trim() != s {
        return true;
    }
    let first = s.chars().next().unwrap_or(' ');
    if "-?:,[]{}#&*!|>'\"%@`=<.+~".contains(first) || first.is_ascii_digit() {
        return true;
    }
    // A `-` that ends a plain scalar after a space reads, in a flow collection, as the start
    // of another scalar followed by `,`, `]` or `}`, which the parser rejects (`edit_ops`).
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') || s.ends_with(" -") || s.contains(['\t', ',', '[', ']', '{', '}']) {
        return true;
    }
    if s.chars().any(|c| c.is_control() || c == '\u{feff}' || c == '\u{2028}' || c == '\u{2029}' || c == '\u{85}') {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(lower.as_str(), "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null") {
        return true;
    }
    yaml::resolve_plain(s) != ScalarValue::Str
}

pub fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || c == '\u{feff}' || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn single_quoted(s: &str) -> Option<String> {
    if s.chars().any(|c| c.is_control() || c == '\u{feff}' || c == '\u{2028}' || c == '\u{2029}') {
        return None;
    }
    Some(format!("'{}'", s.replace('\'', "''")))
}

/// What goes before a `,`, `}` or `]` written right after `before` in a flow collection: a
/// space when the text ends in a dash, which the parser would otherwise read, after a space, as
/// a scalar of its own followed by a flow indicator and reject (`{a: x -}`; found by
/// `edit_ops`).
fn comma_gap(before: &str) -> &'static str {
    if before.ends_with('-') { " " } else { "" }
}

/// A string as a one-line scalar: plain when YAML reads it back as this string, else quoted.
pub fn scalar_str(s: &str) -> String {
    if needs_quotes(s) { double_quoted(s) } else { s.to_string() }
}

/// YAML's limit on an implicit key (`key: value`): 1,024 characters as written.
const MAX_KEY_CHARS: usize = 1024;

/// Refuses a key, or any key inside `value`, that would pass YAML's 1,024-character limit on an
/// implicit key once written (found by `edit_ops`: a long key broke the file).
pub fn check_keys(k: Option<&str>, value: Option<&Json>) -> Res<()> {
    fn long<'v>(v: &'v Json) -> Option<&'v str> {
        match v {
            Json::Object(m) => m.iter().find_map(|(k, v)| if scalar_str(k).chars().count() > MAX_KEY_CHARS { Some(k.as_str()) } else { long(v) }),
            Json::Array(a) => a.iter().find_map(long),
            _ => None,
        }
    }
    let bad = k.filter(|k| scalar_str(k).chars().count() > MAX_KEY_CHARS).or_else(|| value.and_then(long));
    match bad {
        Some(k) => {
            let head: String = k.chars().take(24).collect();
            err(format!(
                "the key {head:?}… is {} characters long once written; YAML keys can be at most {MAX_KEY_CHARS}: shorten it",
                scalar_str(k).chars().count()
            ))
        }
        None => Ok(()),
    }
}

/// A string replacing an existing scalar: keeps the old quoting style when it can.
pub fn scalar_like(old: &YNode, s: &str) -> String {
    match old.as_scalar().map(|x| x.style) {
        Some(Style::SingleQuoted) => single_quoted(s).unwrap_or_else(|| double_quoted(s)),
        Some(Style::DoubleQuoted) => double_quoted(s),
        _ => scalar_str(s),
    }
}

fn scalar_json(v: &Json) -> Option<String> {
    Some(match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => {
            let t = n.to_string();
            if yaml::resolve_plain(&t) == ScalarValue::Str { double_quoted(&t) } else { t }
        }
        Json::String(s) => scalar_str(s),
        _ => return None,
    })
}

/// A value in flow style.
pub fn render_flow(v: &Json) -> String {
    match v {
        Json::Array(a) => format!("[{}]", a.iter().map(render_flow).collect::<Vec<_>>().join(", ")),
        Json::Object(m) => format!(
            "{{{}}}",
            m.iter().map(|(k, v)| format!("{}: {}", scalar_str(k), render_flow(v))).collect::<Vec<_>>().join(", ")
        ),
        Json::String(s) if s.contains('\n') => double_quoted(s),
        v => scalar_json(v).unwrap_or_default(),
    }
}

/// Can this string be written as a `|` block? Returns the header (`|`, `|-`, `|+`).
fn literal_header(s: &str) -> Option<&'static str> {
    if !s.contains('\n') || s.contains('\r') || s.trim().is_empty() {
        return None;
    }
    if s.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{feff}' || c == '\u{2028}' || c == '\u{2029}' || c == '\u{85}') {
        return None;
    }
    let first = s.lines().find(|l| !l.is_empty())?;
    if first.starts_with([' ', '\t']) {
        return None;
    }
    // all-whitespace lines would be read as indentation
    if s.split('\n').any(|l| !l.is_empty() && l.trim().is_empty()) {
        return None;
    }
    let trailing = s.len() - s.trim_end_matches('\n').len();
    Some(match trailing {
        0 => "|-",
        1 => "|",
        _ => "|+",
    })
}

/// Render a value for a block context. `child` is the column nested content starts at.
/// Returns (head, body): head goes right after `key:` / `-` on the same line; body is empty or
/// starts with a line break.
pub fn render_block(v: &Json, child: usize, nl: &str) -> (String, String) {
    match v {
        Json::String(s) if s.contains('\n') => match literal_header(s) {
            Some(h) => {
                let content = if h == "|+" { s.as_str() } else { s.trim_end_matches('\n') };
                let content = if h == "|+" { content.strip_suffix('\n').unwrap_or(content) } else { content };
                let mut body = String::new();
                for line in content.split('\n') {
                    body.push_str(nl);
                    if !line.is_empty() {
                        body.push_str(&spaces(child));
                        body.push_str(line);
                    }
                }
                (format!(" {h}"), body)
            }
            None => (format!(" {}", double_quoted(s)), String::new()),
        },
        Json::Array(a) if !a.is_empty() => {
            let mut body = String::new();
            for item in a {
                body.push_str(nl);
                body.push_str(&spaces(child));
                body.push('-');
                let (h, b) = render_item(item, child + 2, nl);
                body.push_str(&h);
                body.push_str(&b);
            }
            (String::new(), body)
        }
        Json::Object(m) if !m.is_empty() => {
            let mut body = String::new();
            for (k, val) in m {
                body.push_str(nl);
                body.push_str(&spaces(child));
                body.push_str(&scalar_str(k));
                body.push(':');
                let (h, b) = render_block(val, child + 2, nl);
                body.push_str(&h);
                body.push_str(&b);
            }
            (String::new(), body)
        }
        Json::Array(_) => (" []".into(), String::new()),
        Json::Object(_) => (" {}".into(), String::new()),
        v => (format!(" {}", scalar_json(v).unwrap_or_default()), String::new()),
    }
}

/// Render a value as a block sequence item (after the `-`); `content` is the item's content column.
pub fn render_item(v: &Json, content: usize, nl: &str) -> (String, String) {
    match v {
        Json::Object(m) if !m.is_empty() => inline_first(render_block(v, content, nl), content, nl),
        Json::Array(a) if !a.is_empty() => inline_first(render_block(v, content, nl), content, nl),
        _ => render_block(v, content, nl),
    }
}

/// Move the first body line up onto the head line (`- key: v` instead of `-\n  key: v`).
fn inline_first((_, body): (String, String), content: usize, nl: &str) -> (String, String) {
    let prefix = format!("{nl}{}", spaces(content));
    let rest = body.strip_prefix(&prefix).unwrap_or(&body);
    match rest.find(nl) {
        Some(i) => (format!(" {}", &rest[..i]), rest[i..].to_string()),
        None => (format!(" {rest}"), String::new()),
    }
}

// ---------------------------------------------------------------------------------------------
// Tree navigation
// ---------------------------------------------------------------------------------------------

pub fn seg_str(p: &PathSeg) -> String {
    match p {
        PathSeg::Key(k) => k.clone(),
        PathSeg::Index(i) => i.to_string(),
    }
}

pub fn path_str(path: &[PathSeg]) -> String {
    path.iter().map(seg_str).collect::<Vec<_>>().join(".")
}

/// Index of the (last) entry with this key.
pub fn entry_index(map: &YNode, key: &str) -> Option<usize> {
    map.as_map()?.iter().rposition(|e| e.key.as_scalar().is_some_and(|s| s.text == key))
}

pub fn child<'a>(node: &'a YNode, seg: &PathSeg) -> Option<&'a YNode> {
    match (&node.kind, seg) {
        (YKind::Map(entries), PathSeg::Key(k)) => entry_index(node, k).map(|i| &entries[i].value),
        (YKind::Map(entries), PathSeg::Index(i)) => entry_index(node, &i.to_string()).map(|j| &entries[j].value),
        (YKind::Seq(items), PathSeg::Index(i)) => items.get(*i),
        (YKind::Seq(items), PathSeg::Key(k)) => k.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

pub fn at<'a>(root: &'a YNode, path: &[PathSeg]) -> Option<&'a YNode> {
    let mut cur = root;
    for seg in path {
        cur = child(cur, seg)?;
    }
    Some(cur)
}

pub fn key(s: &str) -> PathSeg {
    PathSeg::Key(s.to_string())
}

// ---------------------------------------------------------------------------------------------
// Edits
// ---------------------------------------------------------------------------------------------

/// The text editor for one document version.
/// Collects the replacements that turn every reference to `from` into `to` (a node rename).
pub struct Renamer<'e, 'a> {
    ed: &'e Ed<'a>,
    from: &'e str,
    to: &'e str,
    reps: Vec<Rep>,
}

impl<'e, 'a> Renamer<'e, 'a> {
    pub fn new(ed: &'e Ed<'a>, from: &'e str, to: &'e str) -> Self {
        Renamer { ed, from, to, reps: Vec::new() }
    }

    /// Renames `n` when it is a scalar naming `from`; a block scalar cannot be renamed in place.
    pub fn push(&mut self, n: Option<&YNode>) -> Result<(), EditError> {
        // A scalar reached twice (through an anchored node and an alias of it) is renamed once.
        if let Some(n) = n.filter(|n| ref_str(n) == Some(self.from) && !self.reps.iter().any(|r| r.start <= n.span.start as usize && n.span.start as usize <= r.end)) {
            let rep = self.ed.replace_scalar(n, self.to).ok_or_else(|| {
                EditError::new(format!("a reference to `{}` is written as a block scalar; edit it in the source view", self.from))
            })?;
            self.reps.push(rep);
        }
        Ok(())
    }

    /// The text with every collected replacement applied.
    pub fn finish(self) -> String {
        apply_reps(self.ed.text, self.reps)
    }
}

pub struct Ed<'a> {
    pub text: &'a str,
    pub root: &'a YNode,
    pub nl: &'a str,
}

impl<'a> Ed<'a> {
    /// Refuses an edit inside an alias (`*a`) of a collection: it would land in the anchored node
    /// and change every alias of it (and the alias's own text would stay as it is).
    pub fn not_in_alias(&self, node: &YNode) -> Res<()> {
        if !is_alias(node) {
            return Ok(());
        }
        let at = (node.span.start as usize).min(self.text.len());
        let (line, column) = super::line_col(self.text, at);
        let alias = self.text[at..(node.span.end as usize).clamp(at, self.text.len())].trim_end_matches(':').trim();
        err(format!(
            "this edit would go inside `{alias}` at {line}:{column}, an alias of a node written elsewhere, and change that \
             node and every alias of it; edit the anchored node, or write the value out in full in the source view, then edit again"
        ))
    }

    /// Set (Some) or remove (None) the value at `path`, creating missing mappings.
    pub fn set(&self, path: &[PathSeg], value: Option<&Json>) -> Res<Rep> {
        let mut chain: Vec<&YNode> = vec![self.root];
        for (k, seg) in path.iter().enumerate() {
            let cur = chain[k];
            let is_last = k + 1 == path.len();
            self.not_in_alias(cur)?;
            match child(cur, seg) {
                Some(c) if !is_last => chain.push(c),
                Some(_) => {
                    return match value {
                        Some(v) => self.replace_child(cur, seg, v),
                        None => self.remove_child(&chain, path),
                    };
                }
                None => {
                    let Some(v) = value else {
                        // removing something absent: nothing to do
                        return Ok(Rep { start: 0, end: 0, text: String::new() });
                    };
                    // build the missing rest
                    let Some(nv) = nest_value(v, &path[k + 1..]) else {
                        return err(format!("`{}` does not exist; a list index can only address an existing item", path_str(&path[..=k + 1])));
                    };
                    return match (&cur.kind, seg) {
                        (YKind::Map(_), PathSeg::Key(kk)) => self.insert_entry(cur, None, kk, &nv),
                        (YKind::Map(_), PathSeg::Index(i)) => self.insert_entry(cur, None, &i.to_string(), &nv),
                        (YKind::Seq(items), PathSeg::Index(i)) if *i == items.len() => self.insert_item(cur, None, &nv),
                        (YKind::Seq(items), _) => err(format!(
                            "`{}` has {} item(s); use an index from 0 to {}",
                            path_str(&path[..k]),
                            items.len(),
                            items.len()
                        )),
                        _ if cur.is_null() && k > 0 => {
                            let whole = match seg {
                                PathSeg::Key(kk) => {
                                    let mut m = serde_json::Map::new();
                                    m.insert(kk.clone(), nv);
                                    Json::Object(m)
                                }
                                PathSeg::Index(0) => Json::Array(vec![nv]),
                                PathSeg::Index(_) => return err(format!("`{}` is empty; use index 0", path_str(&path[..k]))),
                            };
                            self.replace_child(chain[k - 1], &path[k - 1], &whole)
                        }
                        _ => err(format!(
                            "`{}` is {}, not a mapping or list; set it as a whole instead",
                            if k == 0 { "the document".to_string() } else { path_str(&path[..k]) },
                            cur.describe()
                        )),
                    };
                }
            }
        }
        // empty path: the whole document
        match value {
            Some(Json::Object(_)) => err("replace the whole document in the source view instead"),
            _ => err("give a path to the field to set"),
        }
    }

    fn child_index(parent: &YNode, seg: &PathSeg) -> Option<usize> {
        match (&parent.kind, seg) {
            (YKind::Map(_), PathSeg::Key(k)) => entry_index(parent, k),
            (YKind::Map(_), PathSeg::Index(i)) => entry_index(parent, &i.to_string()),
            (YKind::Seq(items), PathSeg::Index(i)) => (*i < items.len()).then_some(*i),
            (YKind::Seq(items), PathSeg::Key(k)) => k.parse::<usize>().ok().filter(|i| *i < items.len()),
            _ => None,
        }
    }

    /// Replace the value of an existing child.
    pub fn replace_child(&self, parent: &YNode, seg: &PathSeg, v: &Json) -> Res<Rep> {
        check_keys(None, Some(v))?;
        self.not_in_alias(parent)?;
        let text = self.text;
        let idx = Self::child_index(parent, seg).ok_or_else(|| EditError::new("internal: child not found"))?;
        // `bare`: a key written without a `:` (`{a: 1, b}`), whose value has no colon to follow.
        let (old, anchor_end, child_col, bare) = match &parent.kind {
            YKind::Map(entries) => {
                let en = &entries[idx];
                let kc = col(text, en.key.span.start as usize);
                let cc = match &en.value.kind {
                    YKind::Map(m) if !is_flow(text, &en.value) && !m.is_empty() => col(text, m[0].key.span.start as usize),
                    YKind::Seq(s) if !is_flow(text, &en.value) && !s.is_empty() => {
                        let d = dash_of(text, &s[0]).map(|d| col(text, d)).unwrap_or(kc + 2);
                        // A block list may stand at its key's column (`key:` then `- a`); a
                        // block scalar's text or a mapping there would leave the value.
                        if d <= kc && !matches!(v, Json::Array(a) if !a.is_empty()) { kc + 2 } else { d }
                    }
                    _ => kc + 2,
                };
                (&en.value, after_colon(text, &en.key), cc, after_colon(text, &en.key) == en.key.span.end as usize)
            }
            YKind::Seq(items) => {
                let it = &items[idx];
                if is_flow(text, parent) {
                    (it, it.span.start as usize, 0, false)
                } else {
                    let d = dash_of(text, it).ok_or_else(|| EditError::new("cannot find the `-` of this list item"))?;
                    (it, d + 1, col(text, d) + 2, false)
                }
            }
            _ => return err("internal: not a collection"),
        };
        let mut old_s = old.span.start as usize;
        let old_e = eff_end(text, old);
        // A tab between the `:` and the value: YAML parsers disagree on it (PyYAML refuses any,
        // saphyr refuses one before a letter, digit or `-`), so a new value could make the file
        // unreadable. The value's separator becomes a space.
        let gap = text.get(anchor_end..old_s).unwrap_or("");
        let tab_gap = matches!(parent.kind, YKind::Map(_)) && gap.contains('\t') && gap.bytes().all(|b| b == b' ' || b == b'\t');
        if tab_gap {
            old_s = anchor_end;
        }
        let sep = if tab_gap { " " } else { "" };
        if is_flow(text, parent) {
            let t = render_flow(v);
            if old_s == old_e {
                let lead = if bare { ": " } else { " " };
                return Ok(Rep { start: old_s, end: old_e, text: format!("{lead}{t}") });
            }
            return Ok(Rep { start: old_s, end: old_e, text: format!("{sep}{t}") });
        }
        let old_block_scalar = matches!(old.as_scalar().map(|s| s.style), Some(Style::Literal | Style::Folded));
        let is_scalar_v = !matches!(v, Json::Array(_) | Json::Object(_)) && !matches!(v, Json::String(s) if s.contains('\n'));
        if is_scalar_v && matches!(old.kind, YKind::Scalar(_)) && !old_block_scalar && old_s < old_e {
            let t = match (v, old) {
                (Json::String(s), o) => scalar_like(o, s),
                (v, _) => scalar_json(v).unwrap_or_default(),
            };
            return Ok(Rep { start: old_s, end: old_e, text: format!("{sep}{t}") });
        }
        if matches!(v, Json::Array(_) | Json::Object(_)) && is_flow(text, old) {
            return Ok(Rep { start: old_s, end: old_e, text: format!("{sep}{}", render_flow(v)) });
        }
        let (head, body) = if matches!(parent.kind, YKind::Seq(_)) {
            render_item(v, child_col, self.nl)
        } else {
            render_block(v, child_col, self.nl)
        };
        let start = anchor_end;
        let end = old_e.max(start);
        if body.is_empty() {
            return Ok(Rep { start, end, text: head });
        }
        // keep a trailing comment on the head line, before the new block body
        let le = line_end_excl(text, end);
        let rest = &text[end..le];
        let rest = if rest.trim_matches(yaml_blank).is_empty() { "" } else { rest };
        Ok(Rep { start, end: le, text: format!("{head}{rest}{body}") })
    }

    /// Remove the child at the end of `path` (chain holds the nodes down to its parent).
    fn remove_child(&self, chain: &[&YNode], path: &[PathSeg]) -> Res<Rep> {
        let parent = chain[chain.len() - 1];
        let seg = &path[path.len() - 1];
        let idx = Self::child_index(parent, seg).ok_or_else(|| EditError::new("internal: child not found"))?;
        if children_len(parent) == 1 && chain.len() >= 2 {
            // the collection becomes empty: write it as `{}` / `[]`
            let empty = if matches!(parent.kind, YKind::Map(_)) { Json::Object(Default::default()) } else { Json::Array(vec![]) };
            return self.replace_child(chain[chain.len() - 2], &path[path.len() - 2], &empty);
        }
        self.remove_index(parent, idx)
    }

    /// Remove child `idx` of a collection that has other children too (or is the root).
    pub fn remove_index(&self, parent: &YNode, idx: usize) -> Res<Rep> {
        self.not_in_alias(parent)?;
        let text = self.text;
        if is_flow(text, parent) {
            let spans: Vec<(usize, usize)> = match &parent.kind {
                YKind::Map(e) => e.iter().map(|en| (en.key.span.start as usize, entry_end(text, en))).collect(),
                YKind::Seq(i) => i.iter().map(|it| (it.span.start as usize, eff_end(text, it))).collect(),
                _ => vec![],
            };
            let (s, e) = spans[idx];
            return Ok(if idx + 1 < spans.len() {
                Rep { start: s, end: spans[idx + 1].0, text: String::new() }
            } else if idx > 0 {
                // The entry before may end in a dash, which must not meet the `}` or `]`.
                let start = spans[idx - 1].1;
                Rep { start, end: e, text: comma_gap(&text[..start]).to_string() }
            } else {
                // The only entry: a trailing comma after it (`{a,}`) must go too, for `{,}` is
                // not YAML (what stands between them, a comment, goes with the entry).
                let b = text.as_bytes();
                let mut p = e;
                while p < b.len() && matches!(b[p], b' ' | b'\t' | b'\r' | b'\n' | b'#') {
                    p = if b[p] == b'#' { line_end_incl(text, p) } else { p + 1 };
                }
                let end = if b.get(p) == Some(&b',') { p + 1 } else { e };
                Rep { start: s, end, text: String::new() }
            });
        }
        let (s, e, line_aligned) = child_region(text, parent, idx).ok_or_else(|| EditError::new("cannot find this entry in the text"))?;
        if !line_aligned {
            // shares its line with a `- ` or key before it: pull the next sibling up
            if idx + 1 < children_len(parent) {
                let next_anchor = match &parent.kind {
                    YKind::Map(en) => en[idx + 1].key.span.start as usize,
                    YKind::Seq(items) => dash_of(text, &items[idx + 1]).unwrap_or(e),
                    _ => e,
                };
                return Ok(Rep { start: s, end: next_anchor.max(s), text: String::new() });
            }
            return Ok(Rep { start: s, end: e, text: "{}".to_string() + self.nl });
        }
        let mut end = e;
        let first = idx == 0 || child_region(text, parent, idx - 1).is_none();
        let blank_before = s > 0 && blank_lines_above(text, s) > 0;
        if first || blank_before {
            while end < text.len() && is_blank(line_at(text, end)) {
                end = line_end_incl(text, end);
            }
            let is_last = idx + 1 == children_len(parent);
            if is_last && !first {
                // the separator above goes; the one below belongs to what follows the collection
                end = e;
                let mut start = s;
                while let Some(q) = prev_line_start(text, start) {
                    if is_blank(line_at(text, q)) { start = q } else { break }
                }
                return Ok(Rep { start, end, text: String::new() });
            }
        }
        Ok(Rep { start: s, end, text: String::new() })
    }

    /// Insert `key: value` into a mapping (before entry `before`, or at the end).
    pub fn insert_entry(&self, map: &YNode, before: Option<usize>, k: &str, v: &Json) -> Res<Rep> {
        check_keys(Some(k), Some(v))?;
        self.not_in_alias(map)?;
        let text = self.text;
        let entries = map.as_map().unwrap_or(&[]);
        let ks = scalar_str(k);
        if is_flow(text, map) {
            let item = format!("{ks}: {}", render_flow(v));
            return Ok(match before {
                Some(i) if i < entries.len() => {
                    let p = entries[i].key.span.start as usize;
                    Rep { start: p, end: p, text: format!("{item}, ") }
                }
                _ => match entries.last() {
                    Some(last) => {
                        // An implicit null value at the end (`{a: 1, b}`) may span the `}`:
                        // never insert past the closing bracket.
                        let mut p = entry_end(text, last);
                        let close = eff_end(text, map).saturating_sub(1);
                        if text.as_bytes().get(close) == Some(&b'}') && p > close {
                            p = close;
                        }
                        // There, a trailing comma (`{a: 1, b,}`) already separates.
                        if text[..p].trim_end_matches([' ', '\t', '\r', '\n']).ends_with(',') {
                            return Ok(Rep { start: p, end: p, text: format!(" {item}") });
                        }
                        Rep { start: p, end: p, text: format!("{}, {item}", comma_gap(&text[..p])) }
                    }
                    None => {
                        let p = flow_open(text, map).unwrap_or(map.span.start as usize) + 1;
                        Rep { start: p, end: p, text: item }
                    }
                },
            });
        }
        let Some(first) = entries.first() else { return err("internal: empty block mapping") };
        let c = col(text, first.key.span.start as usize);
        let (head, body) = render_block(v, c + 2, self.nl);
        let entry = format!("{}{ks}:{head}{body}{}", spaces(c), self.nl);
        let gap = self.nl.repeat(sibling_gap(text, map));
        self.insert_lines(map, before, entry, gap)
    }

    fn insert_lines(&self, parent: &YNode, before: Option<usize>, entry: String, gap: String) -> Res<Rep> {
        let text = self.text;
        let n = children_len(parent);
        match before {
            Some(i) if i < n => {
                let (s, _, aligned) = child_region(text, parent, i).ok_or_else(|| EditError::new("cannot find the entry in the text"))?;
                if !aligned {
                    return err("cannot insert before an entry that shares its line with `- `; insert it later in the list");
                }
                Ok(Rep { start: s, end: s, text: format!("{entry}{gap}") })
            }
            _ => {
                let (_, e, _) = child_region(text, parent, n - 1).ok_or_else(|| EditError::new("cannot find the last entry in the text"))?;
                let pre = if e == text.len() && !text.ends_with('\n') { self.nl } else { "" };
                Ok(Rep { start: e, end: e, text: format!("{pre}{gap}{entry}") })
            }
        }
    }

    /// Insert an item into a list (before item `before`, or at the end).
    pub fn insert_item(&self, seq: &YNode, before: Option<usize>, v: &Json) -> Res<Rep> {
        check_keys(None, Some(v))?;
        self.not_in_alias(seq)?;
        let text = self.text;
        let items = seq.as_seq().unwrap_or(&[]);
        if is_flow(text, seq) {
            let item = render_flow(v);
            return Ok(match before {
                Some(i) if i < items.len() => {
                    let p = items[i].span.start as usize;
                    Rep { start: p, end: p, text: format!("{item}, ") }
                }
                _ => match items.last() {
                    Some(last) => {
                        let p = eff_end(text, last);
                        Rep { start: p, end: p, text: format!("{}, {item}", comma_gap(&text[..p])) }
                    }
                    None => {
                        let p = flow_open(text, seq).unwrap_or(seq.span.start as usize) + 1;
                        Rep { start: p, end: p, text: item }
                    }
                },
            });
        }
        let Some(first) = items.first() else { return err("internal: empty block list") };
        // An entry that is a bare `-` has no text of its own to line a new entry up with (found
        // by the edit_ops fuzz target): say where it is rather than guess.
        if let Some(empty) = items.iter().find(|it| it.is_null() && it.span.start == it.span.end) {
            let at = dash_of(text, empty).unwrap_or(empty.span.start as usize).min(text.len());
            let line = text[..at].matches('\n').count() + 1;
            return err(format!("the list has an empty `-` entry at line {line}; fill it in or remove it in the source view, then try again"));
        }
        let d = dash_of(text, first).ok_or_else(|| EditError::new("cannot find the `-` of the first list item"))?;
        let dc = col(text, d);
        let cc = if line_start(text, first.span.start as usize) == line_start(text, d) { col(text, first.span.start as usize) } else { dc + 2 };
        let (head, body) = render_item(v, cc, self.nl);
        let head = if cc > dc + 2 && head.starts_with(' ') { format!("{}{}", spaces(cc - dc - 1), &head[1..]) } else { head };
        let entry = format!("{}-{head}{body}{}", spaces(dc), self.nl);
        let gap = self.nl.repeat(sibling_gap(text, seq));
        self.insert_lines(seq, before, entry, gap)
    }

    /// Move child `from` of a collection to position `to`.
    pub fn move_child(&self, parent: &YNode, from: usize, to: usize) -> Res<Rep> {
        self.not_in_alias(parent)?;
        let text = self.text;
        let n = children_len(parent);
        if from >= n || to >= n {
            return err(format!("index out of range: there are {n} entries (0..{})", n.saturating_sub(1)));
        }
        let regions: Vec<(usize, usize)> = if is_flow(text, parent) {
            match &parent.kind {
                YKind::Map(e) => e.iter().map(|en| (en.key.span.start as usize, entry_end(text, en))).collect(),
                YKind::Seq(i) => i.iter().map(|it| (it.span.start as usize, eff_end(text, it))).collect(),
                _ => vec![],
            }
        } else {
            let mut v = Vec::new();
            for i in 0..n {
                let (s, e, aligned) = child_region(text, parent, i).ok_or_else(|| EditError::new("cannot find the entries in the text"))?;
                if !aligned {
                    return err("cannot reorder entries that share a line with `- `");
                }
                v.push((s, e));
            }
            v
        };
        if from == to {
            return Ok(Rep { start: 0, end: 0, text: String::new() });
        }
        for w in regions.windows(2) {
            if w[0].1 > w[1].0 {
                return err("entries overlap in the text; reorder them in the source view");
            }
        }
        let mut order: Vec<usize> = (0..n).collect();
        let x = order.remove(from);
        order.insert(to, x);
        let mut out = String::new();
        for (slot, &src) in order.iter().enumerate() {
            out.push_str(&text[regions[src].0..regions[src].1]);
            if slot + 1 < n {
                out.push_str(&text[regions[slot].1..regions[slot + 1].0]);
            }
        }
        Ok(Rep { start: regions[0].0, end: regions[n - 1].1, text: out })
    }

    /// Replace a scalar (value or key) by a string, keeping its quoting style when possible.
    pub fn replace_scalar(&self, node: &YNode, s: &str) -> Option<Rep> {
        let sc = node.as_scalar()?;
        if matches!(sc.style, Style::Literal | Style::Folded) || node.span.start == node.span.end {
            return None;
        }
        Some(Rep { start: node.span.start as usize, end: node.span.end as usize, text: scalar_like(node, s) })
    }
}

/// A YAML value as a string reference (node name), if it is one.
pub fn ref_str(n: &YNode) -> Option<&str> {
    n.scalar_text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        let quoted = ["yes", "No", "on", "off", "null", "~", "123", "1.5", "a: b", "{{x}}", "- x", "#c", "a #c", " x", "x ", "", "\"q\"", "true", "@x", "`x`", "0x1F", "1e3", ".5", "[a]", "a,b", "x -", "x  -"];
        for s in quoted {
            assert_ne!(scalar_str(s), s, "{s:?} must be quoted");
        }
        // Every string, quoted or not, reads back as itself in block and flow context, as a
        // value and as a key.
        let plain = ["x - y", "x ?", "x ? y", "x -y", "x !", "x &a", "x |", "x ---", "it's", "gpt-4o-mini"];
        for s in quoted.into_iter().chain(plain) {
            let q = scalar_str(s);
            let value = |k: &YNode| k.as_str().map(str::to_string);
            let in_map = |k: &YNode| k.get("a").and_then(|v| v.as_str()).map(str::to_string);
            let first_item = |k: &YNode| k.as_seq().and_then(|i| i[0].as_str()).map(str::to_string);
            let first_key = |k: &YNode| k.as_map().and_then(|e| e[0].key.as_str()).map(str::to_string);
            let forms: [(String, &dyn Fn(&YNode) -> Option<String>); 5] = [
                (format!("k: {q}\n"), &value),
                (format!("k: {{a: {q}}}\n"), &in_map),
                (format!("k: {{a: {q}, b: 1}}\n"), &in_map),
                (format!("k: [{q}, 1]\n"), &first_item),
                (format!("k: {{{q}: 1}}\n"), &first_key),
            ];
            for (src, read) in forms {
                let parsed = yaml::parse(&SourceFile::new("e.yaml", &src));
                assert!(parsed.diagnostics.is_empty(), "{s:?} -> {src:?}: {:?}", parsed.diagnostics);
                let k = parsed.root.unwrap().get("k").unwrap().clone();
                assert_eq!(read(&k).as_deref(), Some(s), "{s:?} -> {src:?}");
            }
        }
        assert_eq!(scalar_str("it's"), "it's");
        assert_eq!(scalar_str("gpt-4o-mini"), "gpt-4o-mini");
        assert_eq!(scalar_str("state.messages"), "state.messages");
    }

    #[test]
    fn literal_blocks() {
        for s in ["a\nb", "a\nb\n", "a\n\nb\n\n", "x:\n  - y\n", "  lead\nx", "a\n \nb", "tab\there\n"] {
            let (h, b) = render_block(&Json::String(s.into()), 2, "\n");
            let src = format!("k:{h}{b}\nz: 1\n");
            let root = parse_root(&src).unwrap();
            assert_eq!(root.get("k").unwrap().as_str(), Some(s), "{s:?} -> {src}");
        }
    }

    #[test]
    fn eff_end_of_block_scalar_and_flow() {
        let src = "a: |\n  x\n\n# c\nb: {x: 1}  # t\nc: 2\n";
        let root = parse_root(src).unwrap();
        assert_eq!(&src[..eff_end(src, root.get("a").unwrap())], "a: |\n  x");
        let b = root.get("b").unwrap();
        assert_eq!(&src[b.span.start as usize..eff_end(src, b)], "{x: 1}");
    }
}
