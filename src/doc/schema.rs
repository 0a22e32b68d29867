//! A small, data-driven schema for agent documents.
//!
//! Each dialect describes its objects (fields, types, required flags, docs) as static data. The
//! same description drives three things: structural checks with positioned diagnostics (wrong
//! type, missing field, unknown key with "did you mean"), the inspector forms of the editor
//! (exported as JSON), and the documentation of what a field means.

use crate::diag::{Diagnostic, did_you_mean};
use crate::source::{SourceFile, Span};
use crate::yaml::{ScalarValue, Style, YKind, YNode};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// A field type.
#[derive(Clone, Copy, Debug)]
pub enum Ty {
    /// Anything at all (free-form data, JSON Schema, metadata).
    Any,
    Str,
    Bool,
    /// An integer, optionally with a minimum.
    Int { min: Option<i64> },
    /// A number (integers accepted), optionally with a minimum.
    Float { min: Option<f64> },
    /// One of the listed strings.
    Enum(&'static [&'static str]),
    /// A CEL expression (sherma).
    Cel,
    /// A CEL branch condition, or one of the built-in names `has_tool_calls` / `has_error_fallback`.
    CelCondition,
    /// A `{{path}}` template (Loki).
    Template,
    /// The name of a node of the same graph.
    NodeRef,
    /// A path to a file, relative to the document.
    Path,
    List(&'static Ty),
    /// A mapping with free keys and values of one type.
    Map(&'static Ty),
    Obj(&'static Obj),
    /// The first alternative whose outer shape matches is used.
    OneOf(&'static [Ty]),
}

#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub doc: &'static str,
}

/// Shorthand constructors for schema tables.
pub const fn req(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field { name, ty, required: true, doc }
}
pub const fn opt(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field { name, ty, required: false, doc }
}

#[derive(Debug)]
pub struct Obj {
    pub name: &'static str,
    pub fields: &'static [Field],
    /// Unknown keys are accepted silently (free-form objects).
    pub open: bool,
}

impl Obj {
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

impl Ty {
    pub fn describe(&self) -> String {
        match self {
            Ty::Any => "any value".into(),
            Ty::Str | Ty::Path => "a string".into(),
            Ty::Cel | Ty::CelCondition => "a CEL expression (string)".into(),
            Ty::Template => "a template string".into(),
            Ty::NodeRef => "a node name (string)".into(),
            Ty::Bool => "true or false".into(),
            Ty::Int { min: Some(m) } => format!("an integer >= {m}"),
            Ty::Int { min: None } => "an integer".into(),
            Ty::Float { min: Some(m) } => format!("a number >= {m}"),
            Ty::Float { min: None } => "a number".into(),
            Ty::Enum(vals) => format!("one of {}", vals.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")),
            Ty::List(inner) => format!("a list of {}", inner.describe_plural()),
            Ty::Map(_) => "a mapping".into(),
            Ty::Obj(o) => format!("a mapping ({})", o.name),
            Ty::OneOf(alts) => alts.iter().map(|t| t.describe()).collect::<Vec<_>>().join(" or "),
        }
    }
    fn describe_plural(&self) -> String {
        match self {
            Ty::Str | Ty::Path => "strings".into(),
            Ty::NodeRef => "node names".into(),
            Ty::Obj(o) => format!("mappings ({})", o.name),
            other => format!("items ({})", other.describe()),
        }
    }
    /// A machine-readable kind name for the editor.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Ty::Any => "any",
            Ty::Str => "string",
            Ty::Path => "path",
            Ty::Bool => "bool",
            Ty::Int { .. } => "int",
            Ty::Float { .. } => "number",
            Ty::Enum(_) => "enum",
            Ty::Cel => "cel",
            Ty::CelCondition => "cel_condition",
            Ty::Template => "template",
            Ty::NodeRef => "node_ref",
            Ty::List(_) => "list",
            Ty::Map(_) => "map",
            Ty::Obj(_) => "object",
            Ty::OneOf(_) => "one_of",
        }
    }
    fn is_stringish(&self) -> bool {
        matches!(self, Ty::Str | Ty::Path | Ty::Cel | Ty::CelCondition | Ty::Template | Ty::NodeRef | Ty::Enum(_))
    }
    /// Does the outer shape of `node` fit this type (used to pick a `OneOf` alternative)?
    fn shape_fits(&self, node: &YNode) -> bool {
        match (&node.kind, self) {
            (_, Ty::Any) => true,
            (YKind::Map(_), Ty::Obj(_) | Ty::Map(_)) => true,
            (YKind::Seq(_), Ty::List(_)) => true,
            (YKind::Scalar(s), t) => match (&s.value, t) {
                (ScalarValue::Bool(_), Ty::Bool) => true,
                (ScalarValue::Int(_), Ty::Int { .. } | Ty::Float { .. }) => true,
                (ScalarValue::Float(_), Ty::Float { .. }) => true,
                (ScalarValue::Str, t) => t.is_stringish(),
                _ => false,
            },
            _ => false,
        }
    }
}

impl Serialize for Ty {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", self.kind_name())?;
        match self {
            Ty::Int { min: Some(v) } => m.serialize_entry("min", v)?,
            Ty::Float { min: Some(v) } => m.serialize_entry("min", v)?,
            Ty::Enum(vals) => m.serialize_entry("values", vals)?,
            Ty::List(inner) | Ty::Map(inner) => m.serialize_entry("items", inner)?,
            Ty::Obj(o) => m.serialize_entry("object", o)?,
            Ty::OneOf(alts) => m.serialize_entry("alternatives", alts)?,
            _ => {}
        }
        m.end()
    }
}

impl Serialize for Field {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("name", self.name)?;
        m.serialize_entry("type", &self.ty)?;
        m.serialize_entry("required", &self.required)?;
        m.serialize_entry("doc", self.doc)?;
        m.end()
    }
}

impl Serialize for Obj {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("name", self.name)?;
        m.serialize_entry("fields", self.fields)?;
        m.serialize_entry("open", &self.open)?;
        m.end()
    }
}

/// Structural checker: walks a YAML tree against a schema and records diagnostics.
pub struct Checker<'a> {
    pub file: &'a SourceFile,
    pub diags: &'a mut Vec<Diagnostic>,
    /// Keys accepted everywhere without a warning (editor extensions such as `x-...`).
    pub allow_x_keys: bool,
}

impl<'a> Checker<'a> {
    pub fn new(file: &'a SourceFile, diags: &'a mut Vec<Diagnostic>) -> Checker<'a> {
        Checker { file, diags, allow_x_keys: true }
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// Check a mapping against `obj`. `what` names the object in messages ("node `agent`").
    /// Returns false when `node` is not a mapping at all.
    pub fn check_obj(&mut self, node: &YNode, obj: &Obj, what: &str) -> bool {
        self.check_obj_except(node, obj, what, &[])
    }

    /// Like [`Checker::check_obj`], but keys in `skip` are left to the caller.
    pub fn check_obj_except(&mut self, node: &YNode, obj: &Obj, what: &str, skip: &[&str]) -> bool {
        let Some(entries) = node.as_map() else {
            if !matches!(node.kind, YKind::Bad) {
                self.push(
                    Diagnostic::error("wrong-type", format!("{what} must be a mapping, found {}", node.describe()))
                        .at(self.file, node.span),
                );
            }
            return false;
        };
        for e in entries {
            let key = e.key.key_text();
            if skip.contains(&key) {
                continue;
            }
            match obj.field(key) {
                Some(f) => self.check_value(&e.value, &f.ty, &format!("`{key}` of {what}"), f.required),
                None if obj.open => {}
                None if self.allow_x_keys && key.starts_with("x-") => {}
                None => {
                    let names = obj.fields.iter().map(|f| f.name);
                    let sugg = did_you_mean(key, names);
                    let mut d = Diagnostic::warning("unknown-key", format!("unknown key `{key}` in {what}"))
                        .at(self.file, e.key.span);
                    d = match sugg {
                        Some(s) => d.hint(format!("did you mean `{s}`? Unknown keys are ignored when the agent runs")),
                        None => d.hint(format!(
                            "known keys here: {}. Unknown keys are ignored when the agent runs",
                            obj.fields.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
                        )),
                    };
                    self.push(d);
                }
            }
        }
        for f in obj.fields.iter().filter(|f| f.required) {
            if skip.contains(&f.name) {
                continue;
            }
            let present = node.get(f.name).is_some_and(|v| !v.is_null());
            if !present {
                let span = node.entry(f.name).map(|e| e.key.span).unwrap_or_else(|| head_span(self.file, node));
                self.push(
                    Diagnostic::error("missing-field", format!("{what} is missing required field `{}`", f.name))
                        .at(self.file, span)
                        .hint(format!("add `{}:` ({}){}", f.name, f.ty.describe(), doc_suffix(f.doc))),
                );
            }
        }
        true
    }

    /// Check one value against a type. `required` only matters for null handling.
    pub fn check_value(&mut self, node: &YNode, ty: &Ty, what: &str, required: bool) {
        if matches!(node.kind, YKind::Bad) {
            return;
        }
        if node.is_null() {
            if required && !matches!(ty, Ty::Any) {
                self.push(
                    Diagnostic::error("missing-value", format!("{what} is empty"))
                        .at(self.file, node.span)
                        .hint(format!("give it {}", ty.describe())),
                );
            }
            return;
        }
        match ty {
            Ty::Any => {}
            Ty::OneOf(alts) => {
                if let Some(t) = alts.iter().find(|t| t.shape_fits(node)) {
                    self.check_value(node, t, what, required);
                } else {
                    self.type_error(node, ty, what);
                }
            }
            Ty::Obj(o) => {
                self.check_obj(node, o, what);
            }
            Ty::List(inner) => match node.as_seq() {
                Some(items) => {
                    for (i, item) in items.iter().enumerate() {
                        self.check_value(item, inner, &format!("item {} of {what}", i + 1), true);
                    }
                }
                None => self.type_error(node, ty, what),
            },
            Ty::Map(inner) => match node.as_map() {
                Some(entries) => {
                    for e in entries {
                        self.check_value(&e.value, inner, &format!("`{}` of {what}", e.key.key_text()), false);
                    }
                }
                None => self.type_error(node, ty, what),
            },
            Ty::Bool => {
                if node.as_bool().is_none() {
                    self.type_error(node, ty, what);
                }
            }
            Ty::Int { min } => match node.as_i64() {
                Some(v) => self.check_min(node, what, v, *min),
                None => self.type_error(node, ty, what),
            },
            Ty::Float { min } => match node.as_f64() {
                Some(v) => self.check_min(node, what, v, *min),
                None => self.type_error(node, ty, what),
            },
            Ty::Enum(vals) => match node.scalar_text() {
                Some(v) if vals.contains(&v) => {}
                Some(v) => {
                    let sugg = did_you_mean(v, vals.iter().copied());
                    let mut d = Diagnostic::error(
                        "bad-enum",
                        format!("{what} is `{v}`, but must be {}", ty.describe()),
                    )
                    .at(self.file, node.span);
                    if let Some(s) = sugg {
                        d = d.hint(format!("did you mean `{s}`?"));
                    }
                    self.push(d);
                }
                None => self.type_error(node, ty, what),
            },
            Ty::Str | Ty::Path | Ty::Cel | Ty::CelCondition | Ty::Template | Ty::NodeRef => {
                if node.as_str().is_none() {
                    // Numbers and booleans where a string is expected: tolerated for CEL/str in
                    // sherma (pydantic coerces), an error for Loki (serde). The dialect decides by
                    // calling `expect_string_strict` where it matters; here we only flag
                    // containers.
                    if node.as_scalar().is_none() {
                        self.type_error(node, ty, what);
                    }
                }
            }
        }
    }

    /// Error unless `node` is a string scalar (quoted, or plain text that is not a number/bool).
    pub fn expect_string_strict(&mut self, node: &YNode, what: &str) {
        if let Some(s) = node.as_scalar() {
            if s.value != ScalarValue::Str && s.value != ScalarValue::Null {
                self.push(
                    Diagnostic::error("wrong-type", format!("{what} must be a string, found {}", node.describe()))
                        .at(self.file, node.span)
                        .hint(format!("quote it: \"{}\"", s.text)),
                );
            }
        }
    }

    /// A number below its schema minimum.
    fn check_min<T: PartialOrd + std::fmt::Display>(&mut self, node: &YNode, what: &str, v: T, min: Option<T>) {
        if let Some(m) = min {
            if v < m {
                self.push(Diagnostic::error("out-of-range", format!("{what} must be >= {m}, found {v}")).at(self.file, node.span));
            }
        }
    }

    fn type_error(&mut self, node: &YNode, ty: &Ty, what: &str) {
        let hint = match (&node.kind, ty) {
            (YKind::Scalar(_), Ty::List(_)) => Some(format!(
                "write it as a list: `[{}]` or one `- item` per line",
                node.scalar_text().unwrap_or("...")
            )),
            (YKind::Scalar(s), t) if t.is_stringish() && s.style == Style::Plain => {
                Some(format!("quote it: \"{}\"", s.text))
            }
            _ => None,
        };
        self.push(
            Diagnostic::error("wrong-type", format!("{what} must be {}, found {}", ty.describe(), node.describe()))
                .at(self.file, node.span)
                .maybe_hint(hint),
        );
    }
}

fn doc_suffix(doc: &str) -> String {
    if doc.is_empty() { String::new() } else { format!(": {doc}") }
}

/// A short span at the start of a node (its first line), for "missing field" diagnostics.
pub fn head_span(file: &SourceFile, node: &YNode) -> Span {
    let text = file.text();
    let s = (node.span.start as usize).min(text.len());
    let e = text[s..].find('\n').map(|i| s + i).unwrap_or(text.len()).min(node.span.end.max(node.span.start) as usize);
    Span::new(s, e.max(s))
}

/// Map a byte offset inside a scalar's *value* to a byte offset in the source text.
///
/// Exact for plain and single-line quoted scalars without escapes and for literal blocks;
/// best effort (searching each value line in the source) for folded and escaped scalars.
pub fn value_offset_to_source(file: &SourceFile, node: &YNode, value_off: usize) -> usize {
    let Some(sc) = node.as_scalar() else { return node.span.start as usize };
    let value = sc.text.as_bytes();
    let value_off = value_off.min(value.len());
    let raw_str = file.slice(node.span);
    let base = node.span.start as usize;
    if sc.style == Style::Plain && !sc.text.contains('\n') && raw_str.as_bytes().starts_with(value) {
        return base + value_off;
    }
    // Skip the opening: a quote, or a block header line (`|`, `>-`, `|2` ...).
    let raw = raw_str.as_bytes();
    let mut j = match (sc.style, raw.first()) {
        (Style::SingleQuoted, Some(b'\'')) | (Style::DoubleQuoted, Some(b'"')) => 1,
        (Style::Literal | Style::Folded, Some(b'|' | b'>')) => {
            raw.iter().position(|&c| c == b'\n').map(|p| p + 1).unwrap_or(raw.len())
        }
        _ => 0,
    };
    // Walk value and source together; whitespace runs (indentation, folded line breaks) and
    // escapes (`\n`, `''`) are where they differ.
    let mut i = 0;
    while i < value_off && j < raw.len() {
        let (v, r) = (value[i], raw[j]);
        if v == r {
            i += 1;
            j += 1;
        } else if r == b'\\' && sc.style == Style::DoubleQuoted {
            j += match raw.get(j + 1) {
                Some(b'x') => 4,
                Some(b'u') => 6,
                Some(b'U') => 10,
                _ => 2,
            };
            i += 1;
            while i < value.len() && (value[i] & 0xC0) == 0x80 {
                i += 1;
            }
        } else if r == b'\'' && sc.style == Style::SingleQuoted && raw.get(j + 1) == Some(&b'\'') {
            j += 2;
            i += 1;
        } else if r.is_ascii_whitespace() {
            j += 1;
            if v.is_ascii_whitespace() && !raw.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
                i += 1;
            }
        } else if v.is_ascii_whitespace() {
            i += 1;
        } else {
            i += 1;
            j += 1;
        }
    }
    while j < raw.len() && !raw_str.is_char_boundary(j) {
        j += 1;
    }
    base + j.min(raw.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    static INNER: Obj = Obj {
        name: "inner",
        fields: &[req("id", Ty::Str, "identifier"), opt("count", Ty::Int { min: Some(1) }, "")],
        open: false,
    };
    static OUTER: Obj = Obj {
        name: "outer",
        fields: &[
            req("name", Ty::Str, ""),
            opt("mode", Ty::Enum(&["fixed", "exponential"]), ""),
            opt("items", Ty::List(&Ty::Obj(&INNER)), ""),
            opt("next", Ty::OneOf(&[Ty::NodeRef, Ty::List(&Ty::NodeRef)]), ""),
        ],
        open: false,
    };

    fn check(src: &str) -> Vec<Diagnostic> {
        let f = SourceFile::new("t.yaml", src);
        let root = yaml::parse(&f).root.unwrap();
        let mut diags = Vec::new();
        Checker::new(&f, &mut diags).check_obj(&root, &OUTER, "the outer");
        diags
    }

    #[test]
    fn structural_findings() {
        let d = check("name: x\nmode: exponental\nitems:\n  - id: a\n    count: 0\n  - cont: 2\nnxt: a\n");
        let codes: Vec<_> = d.iter().map(|d| (d.code.as_str(), d.line)).collect();
        assert!(codes.contains(&("bad-enum", 2)), "{d:#?}");
        assert!(codes.contains(&("out-of-range", 5)), "{d:#?}");
        assert!(codes.contains(&("unknown-key", 6)), "{d:#?}");
        assert!(codes.contains(&("missing-field", 6)), "{d:#?}");
        assert!(codes.contains(&("unknown-key", 7)), "{d:#?}");
        let nxt = d.iter().find(|d| d.line == 7).unwrap();
        assert!(nxt.hint.as_deref().unwrap().contains("`next`"), "{nxt:?}");
        assert!(d.iter().find(|d| d.code == "bad-enum").unwrap().hint.as_deref().unwrap().contains("exponential"));
    }

    #[test]
    fn one_of_and_missing() {
        assert!(check("name: x\nnext: [a, b]\n").is_empty());
        assert!(check("name: x\nnext: a\n").is_empty());
        let d = check("next: {a: 1}\n");
        assert!(d.iter().any(|d| d.code == "wrong-type" && d.line == 1));
        assert!(d.iter().any(|d| d.code == "missing-field"));
    }

    #[test]
    fn value_offsets() {
        let src = "a: state.x + 1\nb: \"state.y\"\nc: |\n  line one\n  line two\nd: >\n  folded one\n  folded two\n";
        let f = SourceFile::new("t.yaml", src);
        let root = yaml::parse(&f).root.unwrap();
        let a = root.get("a").unwrap();
        assert_eq!(&src[value_offset_to_source(&f, a, 6)..][..1], "x");
        let b = root.get("b").unwrap();
        assert_eq!(&src[value_offset_to_source(&f, b, 6)..][..1], "y");
        let c = root.get("c").unwrap();
        let off = "line one\nline ".len();
        assert_eq!(&src[value_offset_to_source(&f, c, off)..][..3], "two");
        let d = root.get("d").unwrap();
        let off = "folded one folded ".len();
        assert_eq!(&src[value_offset_to_source(&f, d, off)..][..3], "two");
    }
}
