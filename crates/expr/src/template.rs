//! Loki `{{path}}` templates, reproducing upstream exactly (reference/loki.md §6).
//!
//! - A reference is `{{` + one or more of `[A-Za-z0-9_.\[\]]` + `}}`; anything else (including
//!   `{{ name }}` with spaces) is literal text.
//! - A path is split on `.`; each segment is a key optionally followed by `[N]`s. Keys look up
//!   object members, indexes array elements, nothing else. An empty key does no lookup (so
//!   `a.[0]` is `a[0]`; by the same rule `a..b` reads `a.b`); malformed brackets never resolve.
//! - Values render as: strings as is, everything else as compact JSON (`1.0` stays `1.0`).
//! - Substitution: for each match of the *original* template, left to right, every occurrence
//!   of that literal match text in the *current* result is replaced. A substituted value that
//!   contains `{{x}}` is therefore expanded again when `{{x}}` occurs later in the template.
//!   This quirk is intended: it is what upstream does.

use std::fmt;
use std::ops::Range;

use serde_json::Value as Json;

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// One `{{path}}` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRef {
    /// The text between the braces, e.g. `obj.k[1].z`.
    pub path: String,
    /// The top-level state key: the text before the first `.` or `[`.
    pub root: String,
    /// Byte range of the whole `{{...}}` in the template.
    pub range: Range<usize>,
}

/// The references of a template, in source order (repeats included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Template {
    pub refs: Vec<TemplateRef>,
}

impl Template {
    /// Distinct root keys, in order of first use (empty roots skipped).
    pub fn root_keys(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.refs {
            if !r.root.is_empty() && !out.contains(&r.root) {
                out.push(r.root.clone());
            }
        }
        out
    }
}

fn is_ref_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'[' | b']')
}

/// Byte ranges of the `{{...}}` matches, left to right, non-overlapping (regex semantics).
fn find_matches(src: &str) -> Vec<Range<usize>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'{' && b[i + 1] == b'{' {
            let mut j = i + 2;
            while j < b.len() && is_ref_byte(b[j]) {
                j += 1;
            }
            if j > i + 2 && j + 1 < b.len() && b[j] == b'}' && b[j + 1] == b'}' {
                out.push(i..j + 2);
                i = j + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn root_of(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or("")
}

/// Finds the references of a template.
pub fn parse(src: &str) -> Template {
    Template {
        refs: find_matches(src)
            .into_iter()
            .map(|range| {
                let path = &src[range.start + 2..range.end - 2];
                TemplateRef {
                    path: path.to_owned(),
                    root: root_of(path).to_owned(),
                    range,
                }
            })
            .collect(),
    }
}

/// Distinct top-level state keys a template reads (text before the first `.` or `[` of each
/// reference), in order of first use.
pub fn root_keys(src: &str) -> Vec<String> {
    parse(src).root_keys()
}

// ---------------------------------------------------------------------------------------------
// Paths and lookup
// ---------------------------------------------------------------------------------------------

struct Segment<'p> {
    key: &'p str,
    indexes: Vec<Option<usize>>,
}

/// Splits a path into segments; `None` when brackets are malformed. An index too large for
/// `usize` is kept as `None` (never found) rather than being malformed.
fn parse_path(path: &str) -> Option<Vec<Segment<'_>>> {
    path.split('.')
        .map(|seg| {
            let (key, mut rest) = match seg.find('[') {
                Some(p) => (&seg[..p], &seg[p..]),
                None => (seg, ""),
            };
            if key.contains(']') {
                return None;
            }
            let mut indexes = Vec::new();
            while !rest.is_empty() {
                let inner = rest.strip_prefix('[')?;
                let close = inner.find(']')?;
                let digits = &inner[..close];
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                indexes.push(digits.parse::<usize>().ok());
                rest = &inner[close + 1..];
            }
            Some(Segment { key, indexes })
        })
        .collect()
}

/// Resolves a reference path against the state, as upstream does. `None` = "not found".
pub fn lookup<'a>(state: &'a Json, path: &str) -> Option<&'a Json> {
    let mut cur = state;
    for seg in parse_path(path)? {
        if !seg.key.is_empty() {
            cur = cur.as_object()?.get(seg.key)?;
        }
        for index in seg.indexes {
            cur = cur.as_array()?.get(index?)?;
        }
    }
    Some(cur)
}

/// How a found value is written into text.
fn render_value(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// Longest text a render produces. A value holding `{{x}}` is expanded again at every later
/// `{{x}}` of the template (upstream's rule), so a template repeating a reference whose value
/// holds it twice doubles its text at each repeat: 30 repeats would need gigabytes. A render
/// that would grow past this stops there (strict and raw fail; lenient leaves the remaining
/// references as they are written).
pub const MAX_RENDERED_LEN: usize = 64 * 1024 * 1024;

/// A strict or raw render found references missing from the state (or grew too long).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// Missing paths, one entry per occurrence in the template.
    pub missing: Vec<String>,
    /// The render stopped at [`MAX_RENDERED_LEN`].
    pub too_long: bool,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.too_long {
            return write!(
                f,
                "Template interpolation failed: the text would grow beyond {} MiB (a value holding {{{{...}}}} is expanded again at each later reference to it)",
                MAX_RENDERED_LEN >> 20
            );
        }
        let list: Vec<String> = self.missing.iter().map(|m| format!("'{m}'")).collect();
        write!(
            f,
            "Template interpolation failed: {} not found in state",
            list.join(", ")
        )
    }
}

impl std::error::Error for TemplateError {}

/// The §6.3 algorithm. A missing path renders empty when `lenient`; otherwise its text is
/// left and the path recorded (once per occurrence in the template).
fn substitute(src: &str, state: &Json, lenient: bool) -> (String, Vec<String>, bool) {
    substitute_with(src, &|path| lookup(state, path), lenient)
}

/// [`substitute`] with the path resolution supplied by the caller (`resolve(path)` gives the
/// value a whole reference path points at, `None` = not found). The flag: stopped at
/// [`MAX_RENDERED_LEN`].
fn substitute_with<'a>(
    src: &str,
    resolve: &dyn Fn(&str) -> Option<&'a Json>,
    lenient: bool,
) -> (String, Vec<String>, bool) {
    let mut result = src.to_owned();
    let mut missing = Vec::new();
    for range in find_matches(src) {
        let text = &src[range.clone()];
        let path = &text[2..text.len() - 2];
        let replacement = match resolve(path) {
            Some(v) => render_value(v),
            None if lenient => String::new(),
            None => {
                missing.push(path.to_owned());
                continue;
            }
        };
        let n = result.matches(text).count();
        if n > 0 {
            let grown = n.saturating_mul(replacement.len());
            if replacement.len() > text.len() && result.len().saturating_add(grown) > MAX_RENDERED_LEN {
                return (result, missing, true);
            }
            result = result.replace(text, &replacement);
        }
    }
    (result, missing, false)
}

fn finish((out, missing, too_long): (String, Vec<String>, bool)) -> Result<String, TemplateError> {
    if missing.is_empty() && !too_long {
        Ok(out)
    } else {
        Err(TemplateError { missing, too_long })
    }
}

/// Strict mode (`interpolate`): every missing path is an error.
pub fn render_strict(src: &str, state: &Json) -> Result<String, TemplateError> {
    finish(substitute(src, state, false))
}

/// Lenient mode (`interpolate_lenient`): missing paths render as empty text.
pub fn render_lenient(src: &str, state: &Json) -> String {
    substitute(src, state, true).0
}

/// Raw mode (`interpolate_raw`, map `over`): when the trimmed template is exactly one
/// reference, the referenced value with its JSON type; otherwise a strict string render.
pub fn render_raw(src: &str, state: &Json) -> Result<Json, TemplateError> {
    render_raw_with(src, &|path| lookup(state, path))
}

/// [`render_strict`] against a state the caller resolves (`resolve(path)`: the value at a whole
/// reference path). Lets an executor render against a state it does not keep as one JSON
/// object (and bind scoped variables) without copying it.
pub fn render_strict_with<'a>(
    src: &str,
    resolve: &dyn Fn(&str) -> Option<&'a Json>,
) -> Result<String, TemplateError> {
    finish(substitute_with(src, resolve, false))
}

/// [`render_lenient`] with caller-supplied resolution (see [`render_strict_with`]).
pub fn render_lenient_with<'a>(src: &str, resolve: &dyn Fn(&str) -> Option<&'a Json>) -> String {
    substitute_with(src, resolve, true).0
}

/// [`render_raw`] with caller-supplied resolution (see [`render_strict_with`]).
pub fn render_raw_with<'a>(
    src: &str,
    resolve: &dyn Fn(&str) -> Option<&'a Json>,
) -> Result<Json, TemplateError> {
    let t = src.trim();
    let matches = find_matches(t);
    if let [only] = matches.as_slice()
        && *only == (0..t.len())
    {
        let path = &t[2..t.len() - 2];
        return resolve(path).cloned().ok_or_else(|| TemplateError {
            missing: vec![path.to_owned()],
            too_long: false,
        });
    }
    render_strict_with(src, resolve).map(Json::String)
}

// ---------------------------------------------------------------------------------------------
// Lint
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

/// A likely mistake in a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateIssue {
    pub message: String,
    /// Byte range in the template.
    pub range: Range<usize>,
    pub severity: Severity,
}

fn issue(severity: Severity, range: Range<usize>, message: String) -> TemplateIssue {
    TemplateIssue {
        message,
        range,
        severity,
    }
}

/// Finds what users get wrong in templates: `{{ name }}` with spaces, characters outside the
/// reference alphabet, malformed brackets, `items.0` (never indexes an array), unclosed `{{`.
/// Plain `{`, `{%` and `}}` are never flagged.
pub fn lint(src: &str) -> Vec<TemplateIssue> {
    use Severity::{Error, Warning};
    let matches = find_matches(src);
    let mut out = Vec::new();

    for range in &matches {
        let path = &src[range.start + 2..range.end - 2];
        let shown = &src[range.clone()];
        let Some(segments) = parse_path(path) else {
            out.push(issue(
                Error,
                range.clone(),
                format!(
                    "{shown} can never be found: indexes are written [N] after a key, with N a non-negative number"
                ),
            ));
            continue;
        };
        if segments.iter().any(|s| s.indexes.iter().any(Option::is_none)) {
            out.push(issue(
                Error,
                range.clone(),
                format!("{shown} can never be found: an index is too large for any list"),
            ));
            continue;
        }
        if segments[0].key.is_empty() && !segments[0].indexes.is_empty() {
            out.push(issue(
                Error,
                range.clone(),
                format!("{shown} can never be found: a reference starts with a state key"),
            ));
            continue;
        }
        if segments
            .iter()
            .any(|s| s.key.is_empty() && s.indexes.is_empty())
        {
            out.push(issue(
                Warning,
                range.clone(),
                format!("{shown} has an empty path segment ('..' or a leading/trailing '.')"),
            ));
        }
        if segments
            .iter()
            .skip(1)
            .any(|s| !s.key.is_empty() && s.key.bytes().all(|b| b.is_ascii_digit()))
        {
            let mut fixed = String::new();
            for (i, s) in segments.iter().enumerate() {
                if i > 0 && !s.key.is_empty() && s.key.bytes().all(|b| b.is_ascii_digit()) {
                    fixed.push_str(&format!("[{}]", s.key));
                } else {
                    if i > 0 {
                        fixed.push('.');
                    }
                    fixed.push_str(s.key);
                }
                for idx in &s.indexes {
                    match idx {
                        Some(n) => fixed.push_str(&format!("[{n}]")),
                        None => fixed.push_str("[…]"),
                    }
                }
            }
            out.push(issue(
                Warning,
                range.clone(),
                format!(
                    "{shown} looks up a key, it never indexes an array: write {{{{{fixed}}}}} for an element"
                ),
            ));
        }
    }

    // `{{` that do not start a reference.
    let covered = |pos: usize| matches.iter().any(|m| m.start <= pos + 1 && pos < m.end);
    let b = src.as_bytes();
    let mut i = 0;
    while let Some(p) = src[i..].find("{{") {
        let pos = i + p;
        let mut run_end = pos;
        while run_end < b.len() && b[run_end] == b'{' {
            run_end += 1;
        }
        i = run_end;
        if (pos..run_end - 1).any(covered) {
            continue;
        }
        let next_open = src[run_end..].find("{{").map_or(src.len(), |q| run_end + q);
        let close = src[run_end..next_open].find("}}").map(|q| run_end + q);
        let Some(close) = close else {
            out.push(issue(
                Warning,
                pos..run_end,
                "'{{' is never closed by '}}': it is left as literal text".into(),
            ));
            continue;
        };
        let inner = &src[run_end..close];
        let range = pos..close + 2;
        let trimmed = inner.trim();
        let bad = trimmed
            .chars()
            .find(|&c| !(c.is_ascii() && is_ref_byte(c as u8)));
        let message = if trimmed.is_empty() {
            if inner.is_empty() {
                "'{{}}' is empty: it is left as literal text".to_owned()
            } else {
                "not a reference: spaces are not allowed inside {{ }}".to_owned()
            }
        } else {
            match bad {
                None => format!(
                    "not a reference: spaces are not allowed inside {{{{ }}}} (write {{{{{trimmed}}}}})"
                ),
                Some(c) if c.is_whitespace() => {
                    "not a reference: spaces are not allowed inside {{ }}".to_owned()
                }
                Some('-') if trimmed.contains("[-") => {
                    "not a reference: negative indexes are not supported; the text is left as is"
                        .to_owned()
                }
                Some(c) => format!(
                    "not a reference: '{c}' is not allowed inside {{{{ }}}} (only ASCII letters, digits, '_', '.', '[' and ']'); the text is left as is"
                ),
            }
        };
        out.push(issue(Warning, range, message));
    }
    out.sort_by_key(|i| (i.range.start, i.range.end));
    out
}

// ---------------------------------------------------------------------------------------------
// Input validation: `len(input) OP N`
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    Ge,
    Le,
    Eq,
    Gt,
    Lt,
}

impl CompareOp {
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Ge => ">=",
            CompareOp::Le => "<=",
            CompareOp::Eq => "==",
            CompareOp::Gt => ">",
            CompareOp::Lt => "<",
        }
    }
}

impl fmt::Display for CompareOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed input-node `validation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InputValidation {
    pub op: CompareOp,
    pub n: u64,
}

impl InputValidation {
    /// Whether the answer passes. Length is the UTF-8 **byte** length, as upstream.
    pub fn check(&self, input: &str) -> bool {
        let len = input.len() as u64;
        match self.op {
            CompareOp::Ge => len >= self.n,
            CompareOp::Le => len <= self.n,
            CompareOp::Eq => len == self.n,
            CompareOp::Gt => len > self.n,
            CompareOp::Lt => len < self.n,
        }
    }
}

/// Upstream's failure message; it reports the length in characters (while the check uses
/// bytes).
pub fn input_validation_error(expr: &str, input: &str) -> String {
    format!(
        "Input failed validation '{expr}' (got {} chars)",
        input.chars().count()
    )
}

/// Parses `len(input) OP N` (whitespace allowed between tokens; OP one of `>= <= == > <`; N a
/// non-negative integer).
pub fn check_input_validation(expr: &str) -> Result<InputValidation, String> {
    let usage = "expected `len(input) <op> <N>` with <op> one of >=, <=, ==, >, < and N a non-negative integer";
    let fail = |what: &str| Err(format!("invalid validation '{expr}': {what}; {usage}"));
    let mut s = expr.trim();
    for token in ["len", "(", "input", ")"] {
        match s.strip_prefix(token) {
            Some(rest) => s = rest.trim_start(),
            None => return fail(&format!("expected '{token}'")),
        }
    }
    let op = if let Some(rest) = s.strip_prefix(">=") {
        s = rest;
        CompareOp::Ge
    } else if let Some(rest) = s.strip_prefix("<=") {
        s = rest;
        CompareOp::Le
    } else if let Some(rest) = s.strip_prefix("==") {
        s = rest;
        CompareOp::Eq
    } else if s.starts_with("!=") {
        return fail("'!=' is not supported");
    } else if let Some(rest) = s.strip_prefix('>') {
        s = rest;
        CompareOp::Gt
    } else if let Some(rest) = s.strip_prefix('<') {
        s = rest;
        CompareOp::Lt
    } else {
        return fail("missing comparison operator");
    };
    let digits = s.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return fail(&format!("'{digits}' is not a non-negative integer"));
    }
    match digits.parse::<u64>() {
        Ok(n) => Ok(InputValidation { op, n }),
        Err(_) => fail(&format!("'{digits}' is too large")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn probe_state() -> Json {
        json!({
            "a": "{{b}}", "b": "B", "n": null, "f": 1.0, "i": 3, "t": true,
            "items": ["x", "y"], "obj": {"k": [1, {"z": "deep"}]}, "c": "{{zz}}"
        })
    }

    /// Found while writing the `template_render` fuzz target (and reproduced by it as a
    /// timeout): a 150-byte template doubled its text at each repeat of `{{a}}`.
    #[test]
    fn a_self_expanding_value_stops_at_the_size_limit() {
        let s = json!({"a": "{{a}}{{a}}", "b": "B"});
        // the quirk itself is kept: 3 repeats give 2^3 copies per occurrence
        assert_eq!(render_strict("{{a}}{{a}}{{a}}", &s).unwrap(), "{{a}}".repeat(24));
        let src = format!("{}{{{{b}}}}", "{{a}}".repeat(40));
        let t = std::time::Instant::now();
        let e = render_strict(&src, &s).unwrap_err();
        assert!(e.too_long && e.missing.is_empty(), "{e:?}");
        assert!(e.to_string().contains("beyond 64 MiB"), "{e}");
        assert_eq!(render_raw(&src, &s).unwrap_err(), e);
        let l = render_lenient(&src, &s);
        assert!(l.len() <= MAX_RENDERED_LEN && l.ends_with("{{b}}"), "{}", l.len());
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    }

    #[test]
    fn probe_table_of_section_6_6() {
        let s = probe_state();
        assert_eq!(render_lenient("{{a}} {{b}}", &s), "B B");
        assert_eq!(render_strict("{{a}} {{b}}", &s).unwrap(), "B B");
        assert_eq!(render_lenient("{{a}}", &s), "{{b}}");
        let err = render_strict("{{m}} and {{m}} and {{q}}", &s).unwrap_err();
        assert_eq!(err.missing, ["m", "m", "q"]);
        assert_eq!(
            err.to_string(),
            "Template interpolation failed: 'm', 'm', 'q' not found in state"
        );
        assert_eq!(render_strict("{{ b }}", &s).unwrap(), "{{ b }}");
        assert_eq!(render_lenient("{{items.0}}", &s), "");
        assert_eq!(render_strict("{{items[1]}}", &s).unwrap(), "y");
        assert_eq!(
            render_strict("{{n}}, {{f}}, {{i}}, {{t}}", &s).unwrap(),
            "null, 1.0, 3, true"
        );
        assert_eq!(
            render_strict("{{items}} {{obj}}", &s).unwrap(),
            r#"["x","y"] {"k":[1,{"z":"deep"}]}"#
        );
        assert_eq!(render_strict("{{obj.k[1].z}}", &s).unwrap(), "deep");
        assert_eq!(render_strict("{{obj.k.[0]}}", &s).unwrap(), "1");
        for literal in ["{{items[-1]}}", "{{my-key}}", "{{clé}}"] {
            assert_eq!(render_strict(literal, &s).unwrap(), literal);
        }
        assert_eq!(
            render_strict("{{obj[0]}}", &s).unwrap_err().missing,
            ["obj[0]"]
        );
        assert_eq!(render_strict("{{{b}}}", &s).unwrap(), "{B}");
        assert_eq!(render_lenient("{{c}} {{zz}}", &s), " ");
        assert_eq!(render_raw("  {{items}} ", &s).unwrap(), json!(["x", "y"]));
        assert_eq!(render_raw("x{{i}}", &s).unwrap(), json!("x3"));
    }

    #[test]
    fn raw_mode() {
        let s = probe_state();
        assert_eq!(render_raw("{{i}}", &s).unwrap(), json!(3));
        assert_eq!(render_raw("{{n}}", &s).unwrap(), Json::Null);
        assert_eq!(
            render_raw("{{obj.k}}", &s).unwrap(),
            json!([1, {"z": "deep"}])
        );
        let err = render_raw(" {{nope}} ", &s).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Template interpolation failed: 'nope' not found in state"
        );
        assert_eq!(render_raw("{{i}}{{i}}", &s).unwrap(), json!("33"));
        assert!(render_raw("{{i}} {{nope}}", &s).is_err());
        assert_eq!(render_raw("no refs", &s).unwrap(), json!("no refs"));
    }

    #[test]
    fn lookup_rules() {
        let s = json!({"a": {"0": "zero", "b": [[10, 11], {"c": 5}]}, "arr": [1, 2]});
        assert_eq!(lookup(&s, "a.0"), Some(&json!("zero")));
        assert_eq!(lookup(&s, "a.b[0][1]"), Some(&json!(11)));
        assert_eq!(lookup(&s, "a.b[1].c"), Some(&json!(5)));
        assert_eq!(lookup(&s, "arr.0"), None);
        assert_eq!(lookup(&s, "arr[2]"), None);
        assert_eq!(lookup(&s, "arr[99999999999999999999999]"), None);
        assert_eq!(lookup(&s, "a[0]"), None);
        assert_eq!(lookup(&s, "arr[x]"), None);
        assert_eq!(lookup(&s, "arr["), None);
        assert_eq!(lookup(&s, "arr[]"), None);
        assert_eq!(lookup(&s, "arr]0["), None);
        assert_eq!(lookup(&s, "arr[0]x"), None);
        assert_eq!(lookup(&s, "[0]"), None);
        assert_eq!(lookup(&s, "a..0"), Some(&json!("zero")));
    }

    #[test]
    fn parse_lists_references_and_roots() {
        let t = parse("Hi {{user.name}}, {{items[0]}} {{ x }} {{user.id}} {{{b}}}");
        let paths: Vec<&str> = t.refs.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["user.name", "items[0]", "user.id", "b"]);
        assert_eq!(t.refs[0].root, "user");
        assert_eq!(t.refs[0].range, 3..16);
        assert_eq!(t.refs[3].range, 52..57);
        assert_eq!(
            root_keys("{{user.name}} {{items[0]}} {{user.id}} {{[0]}}"),
            ["user", "items"]
        );
    }

    #[test]
    fn repeated_references_are_all_replaced() {
        let s = json!({"x": "1"});
        assert_eq!(render_strict("{{x}}-{{x}}-{{x}}", &s).unwrap(), "1-1-1");
    }

    fn lint_msgs(src: &str) -> Vec<(Severity, String, Range<usize>)> {
        lint(src)
            .into_iter()
            .map(|i| (i.severity, i.message, i.range))
            .collect()
    }

    #[test]
    fn lint_flags_common_mistakes() {
        let l = lint_msgs("Hello {{ name }}!");
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].0, Severity::Warning);
        assert!(
            l[0].1
                .starts_with("not a reference: spaces are not allowed inside {{ }}")
        );
        assert!(l[0].1.contains("{{name}}"));
        assert_eq!(l[0].2, 6..16);

        let l = lint_msgs("{{my-key}}");
        assert_eq!(l.len(), 1);
        assert!(l[0].1.contains("'-' is not allowed"), "{:?}", l);

        let l = lint_msgs("{{items[-1]}}");
        assert!(l[0].1.contains("negative indexes"), "{:?}", l);

        let l = lint_msgs("{{a[}}");
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].0, Severity::Error);

        let l = lint_msgs("{{items.0}} {{a.b.12[1]}}");
        assert_eq!(l.len(), 2);
        assert!(l[0].1.contains("{{items[0]}}"), "{:?}", l);
        assert!(l[1].1.contains("{{a.b[12][1]}}"), "{:?}", l);

        let l = lint_msgs("text {{name and more");
        assert_eq!(l.len(), 1);
        assert!(l[0].1.contains("never closed"));
        assert_eq!(l[0].2, 5..7);

        let l = lint_msgs("{{clé}} {{}} {{ }} {{a..b}} {{[0]}}");
        assert_eq!(l.len(), 5, "{l:?}");
        assert_eq!(l[4].0, Severity::Error);
    }

    #[test]
    fn lint_flags_indexes_too_large_for_any_list() {
        let l = lint_msgs("{{items[99999999999999999999999]}} {{items[1]}}");
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!((l[0].0, l[0].2.clone()), (Severity::Error, 0..34));
        assert!(l[0].1.contains("too large"), "{l:?}");
    }

    #[test]
    fn lint_leaves_ordinary_text_alone() {
        for ok in [
            "plain text",
            "{% if x %} { lone brace } }}",
            "{{a}} {{b.c[0]}} {{{b}}}",
            "json: {\"a\": {\"b\": 1}}",
            "",
            "{",
        ] {
            assert!(lint(ok).is_empty(), "{ok}: {:?}", lint(ok));
        }
        // a broken reference followed by a valid one is reported once, at the broken one
        let l = lint_msgs("{{ a {{b}}");
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].2, 0..2);
    }

    #[test]
    fn input_validation() {
        let v = check_input_validation("len(input) >= 3").unwrap();
        assert_eq!(
            v,
            InputValidation {
                op: CompareOp::Ge,
                n: 3
            }
        );
        assert!(v.check("abc") && !v.check("ab"));
        // byte length: "é" is 2 bytes
        assert!(v.check("éa"));
        let v = check_input_validation("  len( input )<5 ").unwrap();
        assert_eq!(v.op, CompareOp::Lt);
        assert!(v.check("1234") && !v.check("12345"));
        let v = check_input_validation("len(input)==0").unwrap();
        assert!(v.check("") && !v.check(" "));
        assert!(
            check_input_validation("len(input) > 2")
                .unwrap()
                .check("abc")
        );
        assert!(
            check_input_validation("len(input) <= 2")
                .unwrap()
                .check("ab")
        );
        for bad in [
            "len(input) != 3",
            "len(input) 3",
            "len(input) > x",
            "len(input) > -1",
            "len(x) > 1",
            "input.matches('a')",
            "len(input) > 99999999999999999999999",
            "",
        ] {
            assert!(check_input_validation(bad).is_err(), "{bad}");
        }
        assert_eq!(
            input_validation_error("len(input) >= 3", "é"),
            "Input failed validation 'len(input) >= 3' (got 1 chars)"
        );
    }

    proptest! {
        #[test]
        fn never_panics(src in ".{0,80}", key in "[a-z{}\\[\\]. 0-9_-]{0,12}") {
            let state = json!({"a": {"b": [1, "{{a}}"]}, "k": key.clone()});
            let _ = parse(&src);
            let _ = lint(&src);
            let _ = render_strict(&src, &state);
            let _ = render_lenient(&src, &state);
            let _ = render_raw(&src, &state);
            let _ = root_keys(&src);
            let _ = check_input_validation(&src);
            let with_key = format!("x{{{{{key}}}}}y {src}");
            let _ = lint(&with_key);
            let _ = render_lenient(&with_key, &state);
        }

        #[test]
        fn text_without_braces_is_unchanged(src in "[^{}]{0,80}") {
            let state = json!({"a": 1});
            prop_assert_eq!(render_strict(&src, &state).unwrap(), src.clone());
            prop_assert!(lint(&src).is_empty());
        }
    }
}
