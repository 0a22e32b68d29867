//! A small, data-driven schema for agent documents.
//!
//! Each dialect describes its objects (fields, types, required flags, docs) as static data. The
//! same description drives three things: structural checks with positioned diagnostics (wrong
//! type, missing field, unknown key with "did you mean"), the inspector forms of the editor
//! (exported as JSON), and the documentation of what a field means.

use syntax::diag::{Diagnostic, did_you_mean};
use syntax::source::{SourceFile, Span};
use syntax::yaml::{ScalarValue, Style, YKind, YNode};
use serde::{Serialize, Serializer};
use ts_rs::TS;

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

/// One field of an object (JSON: `{name, type, required, doc}`).
#[derive(Debug, Serialize, TS)]
#[ts(rename = "SchemaField")]
pub struct Field {
    pub name: &'static str,
    #[serde(rename = "type")]
    #[ts(as = "TyJson")]
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

/// An object of a schema (JSON: `{name, fields, open}`), what the inspector builds a form from.
#[derive(Debug, Serialize, TS)]
#[ts(rename = "SchemaObj")]
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

/// A [`Ty`] as JSON for the editor: `kind` (its [`Ty::kind_name`]) and what that kind needs
/// (`min`, `values`, `items`, `object`, `alternatives`).
#[derive(Serialize, TS)]
#[ts(rename = "SchemaType")]
pub struct TyJson {
    #[ts(type = r#""any" | "string" | "path" | "bool" | "int" | "number" | "enum" | "cel" | "cel_condition" | "template" | "node_ref" | "list" | "map" | "object" | "one_of""#)]
    pub kind: &'static str,
    /// `int` and `number`: the smallest value allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub min: Option<serde_json::Number>,
    /// `enum`: the strings allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub values: Option<&'static [&'static str]>,
    /// `list` and `map`: the type of the items (values).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, as = "Option<Box<TyJson>>")]
    pub items: Option<&'static Ty>,
    /// `object`: its fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub object: Option<&'static Obj>,
    /// `one_of`: the alternatives, the first whose outer shape matches is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, as = "Option<Vec<TyJson>>")]
    pub alternatives: Option<&'static [Ty]>,
}

impl From<&Ty> for TyJson {
    fn from(t: &Ty) -> TyJson {
        let mut j = TyJson { kind: t.kind_name(), min: None, values: None, items: None, object: None, alternatives: None };
        match *t {
            Ty::Int { min: Some(v) } => j.min = Some(v.into()),
            Ty::Float { min: Some(v) } => j.min = serde_json::Number::from_f64(v),
            Ty::Enum(vals) => j.values = Some(vals),
            Ty::List(inner) | Ty::Map(inner) => j.items = Some(inner),
            Ty::Obj(o) => j.object = Some(o),
            Ty::OneOf(alts) => j.alternatives = Some(alts),
            _ => {}
        }
        j
    }
}

impl Serialize for Ty {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TyJson::from(self).serialize(s)
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
                None if is_merge_key(&e.key) => self.push(merge_key_error(self.file, &e.key, what)),
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

    /// Sanity checks of a JSON Schema written in YAML: the root is a mapping, `type` names JSON
    /// types, `properties` / `$defs` map names to schemas, `required` lists names, `items` and
    /// the combinators hold schemas. Not a full meta-schema check: only what no JSON Schema
    /// consumer (provider APIs, validators) accepts. `severity` is the dialect's call: sherma
    /// hands the schema to an API or a validator, Loki only shows it to the model.
    pub fn check_json_schema(&mut self, node: &YNode, what: &str, severity: syntax::diag::Severity) {
        if node.is_null() || matches!(node.kind, YKind::Bad) {
            return;
        }
        if node.as_map().is_none() {
            let mut d = Diagnostic::new(severity, "json-schema", format!("{what} must be a JSON Schema object (a mapping), found {}", node.describe()))
                .at(self.file, node.span);
            if node.as_str().is_some_and(|t| t.trim_start().starts_with('{')) {
                d = d.hint("write the schema as YAML (a mapping), not as a JSON string");
            } else {
                d = d.hint("e.g. `{type: object, properties: {answer: {type: string}}, required: [answer]}`");
            }
            self.push(d);
            return;
        }
        self.json_schema_at(node, what, severity, 0);
    }

    fn json_schema_at(&mut self, node: &YNode, what: &str, severity: syntax::diag::Severity, depth: usize) {
        const TYPES: &[&str] = &["string", "number", "integer", "boolean", "object", "array", "null"];
        let Some(entries) = node.as_map() else {
            // `true` / `false` are schemas too.
            if node.as_bool().is_none() && !matches!(node.kind, YKind::Bad) {
                self.push(
                    Diagnostic::new(severity, "json-schema", format!("{what} must be a schema (a mapping), found {}", node.describe()))
                        .at(self.file, node.span),
                );
            }
            return;
        };
        if depth > 64 {
            return;
        }
        let bad = |this: &mut Self, n: &YNode, msg: String, hint: &str| {
            this.push(Diagnostic::new(severity, "json-schema", msg).at(this.file, n.span).hint(hint.to_string()));
        };
        for e in entries {
            let key = e.key.key_text();
            let v = &e.value;
            let at = format!("`{key}` of {what}");
            match key {
                "type" => {
                    let names: Vec<&YNode> = match &v.kind {
                        YKind::Seq(items) if !items.is_empty() => items.iter().collect(),
                        YKind::Scalar(_) => vec![v],
                        _ => {
                            bad(self, v, format!("{at} must be a type name or a list of them, found {}", v.describe()), "JSON types: string, number, integer, boolean, object, array, null");
                            continue;
                        }
                    };
                    for n in names {
                        let t = n.scalar_text().unwrap_or("");
                        if !TYPES.contains(&t) {
                            let hint = match did_you_mean(t, TYPES.iter().copied()) {
                                Some(s) => format!("did you mean `{s}`? JSON types: {}", TYPES.join(", ")),
                                None => format!("JSON types: {}", TYPES.join(", ")),
                            };
                            bad(self, n, format!("{at} is `{t}`, which is not a JSON type"), &hint);
                        }
                    }
                }
                "properties" | "$defs" | "definitions" | "patternProperties" => match v.as_map() {
                    Some(props) => {
                        for p in props {
                            self.json_schema_at(&p.value, &format!("property `{}` of {what}", p.key.key_text()), severity, depth + 1);
                        }
                    }
                    None => bad(self, v, format!("{at} must map names to schemas, found {}", v.describe()), "e.g. `properties: {answer: {type: string}}`"),
                },
                "required" => match v.as_seq() {
                    Some(items) => {
                        for i in items {
                            if i.as_str().is_none() {
                                bad(self, i, format!("{at} must list property names, found {}", i.describe()), "quote it if it is a name");
                            }
                        }
                    }
                    None => bad(self, v, format!("{at} must be a list of property names, found {}", v.describe()), "e.g. `required: [answer]`"),
                },
                "items" | "additionalProperties" | "not" | "contains" | "propertyNames" | "if" | "then" | "else" => match v.as_seq() {
                    Some(items) if key == "items" => {
                        for i in items {
                            self.json_schema_at(i, &at, severity, depth + 1);
                        }
                    }
                    _ => self.json_schema_at(v, &at, severity, depth + 1),
                },
                "anyOf" | "allOf" | "oneOf" | "prefixItems" => match v.as_seq() {
                    Some(items) if !items.is_empty() => {
                        for i in items {
                            self.json_schema_at(i, &at, severity, depth + 1);
                        }
                    }
                    _ => bad(self, v, format!("{at} must be a non-empty list of schemas, found {}", v.describe()), "one schema per list item"),
                },
                "enum" => {
                    if v.as_seq().is_none() {
                        bad(self, v, format!("{at} must be a list of values, found {}", v.describe()), "e.g. `enum: [low, high]`");
                    }
                }
                _ => {}
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

/// A plain `<<` key: a YAML 1.1 merge key.
pub fn is_merge_key(key: &YNode) -> bool {
    matches!(&key.kind, YKind::Scalar(s) if s.style == Style::Plain && s.text == "<<")
}

/// Merge keys are not applied: sherma's loader (PyYAML) would merge, Loki's (serde) ignores them.
pub fn merge_key_error(file: &SourceFile, key: &YNode, what: &str) -> Diagnostic {
    Diagnostic::error("merge-key", format!("YAML merge keys (`<<`) are not supported: the keys it would merge into {what} are not read"))
        .at(file, key.span)
        .hint("write the keys out in full: sherma's YAML loader would merge them while Loki ignores `<<`, so the file would mean different things to different tools")
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
    if sc.style == Style::Literal {
        // The body of the block from the start of its first line (the span may start at the
        // header or at the first content character).
        let text = file.text();
        let body_start = match raw_str.starts_with(['|', '>']) {
            true => raw_str.find('\n').map(|p| base + p + 1),
            false => Some(text[..base].rfind('\n').map_or(0, |p| p + 1)),
        };
        let end = (node.span.end as usize).min(text.len());
        if let Some(start) = body_start.filter(|&s| s <= end) {
            if let Some(off) = literal_offset(&text[start..end], &sc.text, value_off) {
                return start + off;
            }
        }
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

/// [`value_offset_to_source`] for a literal block scalar (`|`): each value line is a source line
/// without the block's indentation, so the offset is exact (also on more-indented lines).
/// `body` starts at the beginning of the block's first content line.
fn literal_offset(body: &str, value: &str, value_off: usize) -> Option<usize> {
    let raw_lines: Vec<&str> = body.split('\n').collect();
    let value_lines: Vec<&str> = value.split('\n').collect();
    let spaces = |l: &str| l.len() - l.trim_start_matches(' ').len();
    // The block's indentation: a non-blank line's indentation in the source minus in the value.
    let k = value_lines.iter().position(|l| !l.trim().is_empty())?;
    let indent = spaces(raw_lines.get(k)?).checked_sub(spaces(value_lines[k]))?;
    let before = value.get(..value_off)?;
    let line = before.matches('\n').count();
    let column = value_off - before.rfind('\n').map_or(0, |p| p + 1);
    let target = raw_lines.get(line)?;
    let line_start: usize = raw_lines[..line].iter().map(|l| l.len() + 1).sum::<usize>();
    let off = line_start + indent.min(spaces(target)) + column;
    (off <= body.len() && body.is_char_boundary(off)).then_some(off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use syntax::yaml;

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
    fn value_offset_at_the_start_of_a_block_line_skips_the_indentation() {
        let src = "a:\n  b: |\n    {\n      x\n    }\n";
        let f = SourceFile::new("t.yaml", src);
        let root = yaml::parse(&f).root.unwrap();
        let b = root.get("a").unwrap().get("b").unwrap();
        let value = b.as_str().unwrap();
        let close = value.find('}').unwrap();
        assert_eq!(value_offset_to_source(&f, b, close), src.find('}').unwrap());
        let x = value.find('x').unwrap();
        assert_eq!(value_offset_to_source(&f, b, x), src.find('x').unwrap());
        // A more-indented line keeps its extra spaces.
        assert_eq!(value_offset_to_source(&f, b, value.find("  x").unwrap()), src.find("  x").unwrap());
    }

    #[test]
    fn json_schema_sanity() {
        let run = |src: &str| {
            let f = SourceFile::new("t.yaml", src);
            let root = yaml::parse(&f).root.unwrap();
            let mut diags = Vec::new();
            Checker::new(&f, &mut diags).check_json_schema(root.get("s").unwrap(), "the schema", syntax::diag::Severity::Error);
            diags.into_iter().map(|d| (d.line, d.column)).collect::<Vec<_>>()
        };
        let ok = "s:\n  type: object\n  properties:\n    a: {type: [string, 'null']}\n    b: {type: array, items: {type: integer}}\n    c: true\n  required: [a]\n  anyOf: [{required: [a]}]\n  additionalProperties: false\n";
        assert_eq!(run(ok), vec![]);
        assert_eq!(run("s: '{\"type\": \"object\"}'\n"), vec![(1, 4)]);
        let bad = "s:\n  type: objekt\n  properties: [a, b]\n  required: a\n  items: {type: [str]}\n  anyOf: []\n";
        assert_eq!(run(bad), vec![(2, 9), (3, 15), (4, 13), (5, 18), (6, 10)]);
    }

    #[test]
    fn merge_keys_are_reported() {
        let d = check("name: x\n<<: {next: a}\n");
        let m = d.iter().find(|d| d.code == "merge-key").expect("merge-key");
        assert_eq!((m.line, m.column, m.severity), (2, 1, syntax::diag::Severity::Error));
        assert!(!d.iter().any(|d| d.code == "unknown-key"), "{d:#?}");
        assert!(check("name: x\n\"<<\": 1\n").iter().any(|d| d.code == "unknown-key"));
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
