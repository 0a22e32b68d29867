//! TypeScript and JavaScript tool files: exported functions with JSDoc.

use super::{Param, ParamType, ToolDecl, Lang, CallStyle};
use serde_json::Value;
use std::path::PathBuf;

/// A parsed JSDoc `@param` / `@property`.
#[derive(Debug, Default, Clone)]
struct DocParam {
    name: String,
    ty: Option<String>,
    optional: bool,
    desc: String,
}

#[derive(Debug, Default)]
struct JsDoc {
    description: String,
    params: Vec<DocParam>,
    props: Vec<DocParam>,
}

/// One parameter of a function signature.
#[derive(Debug)]
struct SigParam {
    name: String,
    ty: Option<String>,
    optional: bool,
    /// A destructured object: the names it takes.
    destructured: Option<Vec<(String, bool)>>,
}

/// Parse a JS/TS tool file: every exported function not starting with `_` (`global`: only
/// `run`, named `stem`).
pub fn parse_js(src: &str, stem: &str, global: bool, lang: Lang) -> Vec<ToolDecl> {
    let mut out = Vec::new();
    let mut doc: Option<(usize, &str)> = None;
    let mut i = 0;
    while i < src.len() {
        let line_end = src[i..].find('\n').map_or(src.len(), |n| i + n);
        let line = &src[i..line_end];
        let t = line.trim_start();
        let at = i + (line.len() - t.len());
        if t.starts_with("/*") {
            match src[at + 2..].find("*/") {
                Some(close) => {
                    let end = at + 2 + close + 2;
                    if t.starts_with("/**") {
                        doc = Some((end, &src[at..end]));
                    }
                    i = end;
                    continue;
                }
                None => break,
            }
        }
        if let Some((name, paren)) = js_declaration(t) {
            let open = at + paren;
            let attached = doc
                .filter(|(end, _)| *end <= at && src[*end..at].trim().is_empty())
                .map(|(_, d)| d);
            if let Some((inner, close)) = balanced(src, open)
                && !name.starts_with('_')
                && (!global || name == "run")
            {
                let tool_name = if global {
                    stem.replace('-', "_")
                } else {
                    name.to_string()
                };
                out.push(js_decl(&tool_name, name, inner, attached, lang));
                i = src[close..].find('\n').map_or(src.len(), |n| close + n + 1);
                doc = None;
                continue;
            }
        }
        i = line_end + 1;
    }
    out
}

/// An export declaring a function: its name and the offset of its `(` in `t`.
fn js_declaration(t: &str) -> Option<(&str, usize)> {
    let offset = |rest: &str| t.len() - rest.len();
    let value = |r: &str| -> Option<usize> {
        // After `=`: `[async] function [name](`, `[async] (`.
        let r = r.trim_start().strip_prefix('=')?.trim_start();
        let r = r.strip_prefix("async").map_or(r, str::trim_start);
        let r = match r.strip_prefix("function") {
            Some(f) => {
                let f = f.trim_start().trim_start_matches('*').trim_start();
                let e = f
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                    .unwrap_or(f.len());
                f[e..].trim_start()
            }
            None => r,
        };
        r.starts_with('(').then(|| offset(r))
    };
    if let Some(r) = t.strip_prefix("export ") {
        let r = r.trim_start();
        let r2 = r.strip_prefix("async ").map_or(r, str::trim_start);
        if let Some(f) = r2.strip_prefix("function") {
            let f = f.trim_start().trim_start_matches('*').trim_start();
            let (name, after) = js_ident(f)?;
            let after = skip_generics(after.trim_start());
            return after.starts_with('(').then(|| (name, offset(after)));
        }
        let r = r
            .strip_prefix("const ")
            .or_else(|| r.strip_prefix("let "))
            .or_else(|| r.strip_prefix("var "))?;
        let (name, after) = js_ident(r.trim_start())?;
        let after = match after.trim_start().strip_prefix(':') {
            // A typed constant (`export const f: Tool = (…) =>`): skip to the `=`.
            Some(ty) => &ty[ty.find('=')?..],
            None => after,
        };
        return value(after).map(|o| (name, o));
    }
    let r = t
        .strip_prefix("module.exports.")
        .or_else(|| t.strip_prefix("exports."))?;
    let (name, after) = js_ident(r)?;
    value(after).map(|o| (name, o))
}

fn js_ident(s: &str) -> Option<(&str, &str)> {
    let e = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    (e > 0).then(|| (&s[..e], &s[e..]))
}

fn skip_generics(s: &str) -> &str {
    if !s.starts_with('<') {
        return s;
    }
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return s[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    s
}

/// The text between the bracket at `open` and its match, and the offset after the match.
/// Strings, template literals and comments are skipped.
fn balanced(src: &str, open: usize) -> Option<(&str, usize)> {
    let bytes = src.as_bytes();
    let mut depth = 0i32;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&src[open + 1..i], i + 1));
                }
            }
            q @ (b'"' | b'\'' | b'`') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = src[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |j| i + 2 + j + 1);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Split `s` at top-level occurrences of `sep` (outside brackets, angle brackets and strings;
/// `=>` is not a closing angle bracket).
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut start = 0;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if c == q && prev != '\\' {
                quote = None;
            }
            prev = c;
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '>' if prev != '=' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
        prev = c;
    }
    out.push(&s[start..]);
    out
}

/// `s` without `//` and `/* */` comments (outside strings).
fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            ('"' | '\'' | '`', _) => {
                quote = Some(c);
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn parse_signature(inner: &str) -> Vec<SigParam> {
    let cleaned = strip_comments(inner);
    let mut out = Vec::new();
    for part in split_top(&cleaned, ',') {
        let part = part.trim();
        if part.is_empty() || part.starts_with("...") {
            continue;
        }
        if part.starts_with('{') {
            let names = match balanced(part, 0) {
                Some((pattern, end)) => {
                    let names = split_top(pattern, ',')
                        .into_iter()
                        .filter_map(|n| {
                            let n = n.trim();
                            let (name, _) = js_ident(n)?;
                            let has_default = split_top(n, '=').len() > 1;
                            Some((name.to_string(), has_default))
                        })
                        .collect();
                    let rest = part[end..].trim_start();
                    let ty = rest
                        .strip_prefix(':')
                        .map(|t| split_top(t, '=')[0].trim().to_string());
                    out.push(SigParam {
                        name: String::new(),
                        ty,
                        optional: split_top(rest, '=').len() > 1,
                        destructured: Some(names),
                    });
                    continue;
                }
                None => Vec::new(),
            };
            out.push(SigParam {
                name: String::new(),
                ty: None,
                optional: false,
                destructured: Some(names),
            });
            continue;
        }
        let Some((name, rest)) = js_ident(part) else {
            continue;
        };
        if name == "this" {
            continue;
        }
        let mut rest = rest.trim_start();
        let mut optional = false;
        if let Some(r) = rest.strip_prefix('?') {
            optional = true;
            rest = r.trim_start();
        }
        let pieces = split_top(rest, '=');
        let (annotation, has_default) = (pieces[0].trim(), pieces.len() > 1);
        let ty = annotation
            .strip_prefix(':')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        out.push(SigParam {
            name: name.to_string(),
            ty,
            optional: optional || has_default,
            destructured: None,
        });
    }
    out
}

fn parse_jsdoc(text: &str) -> JsDoc {
    let inner = text.trim().trim_start_matches("/**").trim_end_matches("*/");
    let lines: Vec<&str> = inner
        .lines()
        .map(|l| {
            let l = l.trim();
            l.strip_prefix('*')
                .map_or(l, |r| r.strip_prefix(' ').unwrap_or(r))
                .trim_end()
        })
        .collect();
    let mut doc = JsDoc::default();
    let mut description = Vec::new();
    let mut tags: Vec<String> = Vec::new();
    for l in lines {
        if l.trim_start().starts_with('@') {
            tags.push(l.trim().to_string());
        } else if let Some(last) = tags.last_mut() {
            if !l.trim().is_empty() {
                last.push('\n');
                last.push_str(l.trim());
            }
        } else {
            description.push(l);
        }
    }
    doc.description = description.join("\n").trim().to_string();
    for tag in tags {
        let (name, rest) = match tag.find(char::is_whitespace) {
            Some(i) => (&tag[1..i], tag[i..].trim()),
            None => (&tag[1..], ""),
        };
        match name {
            "param" | "arg" | "argument" => doc.params.extend(parse_doc_param(rest)),
            "property" | "prop" => doc.props.extend(parse_doc_param(rest)),
            _ => {}
        }
    }
    doc
}

/// `{type} name desc`, `{type} [name=default] desc`, `name - desc`.
fn parse_doc_param(rest: &str) -> Option<DocParam> {
    let mut s = rest.trim();
    let mut p = DocParam::default();
    if s.starts_with('{') {
        let (ty, end) = balanced(s, 0)?;
        let mut ty = ty.trim().to_string();
        if let Some(t) = ty.strip_suffix('=') {
            ty = t.to_string();
            p.optional = true;
        }
        p.ty = Some(ty);
        s = s[end..].trim_start();
    }
    if s.starts_with('[') {
        let close = s.find(']')?;
        p.name = s[1..close]
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        p.optional = true;
        s = &s[close + 1..];
    } else {
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        let mut name = &s[..end];
        if let Some(n) = name.strip_suffix('?') {
            name = n;
            p.optional = true;
        }
        p.name = name.to_string();
        s = &s[end..];
    }
    let desc = s.trim_start();
    p.desc = desc
        .strip_prefix('-')
        .map_or(desc, str::trim_start)
        .trim()
        .to_string();
    (!p.name.is_empty()).then_some(p)
}

/// A JS/TS type (signature or JSDoc) as a parameter type, its allowed values and whether it
/// admits `null` / `undefined`.
pub(super) fn js_type(ty: &str) -> (ParamType, Vec<Value>, bool) {
    let mut t = ty.trim();
    while t.starts_with('(') && balanced(t, 0).is_some_and(|(_, end)| end == t.len()) {
        t = t[1..t.len() - 1].trim();
    }
    let mut nullable = false;
    if let Some(r) = t.strip_prefix('?') {
        nullable = true;
        t = r.trim();
    }
    t = t.strip_prefix('!').unwrap_or(t);
    let members: Vec<&str> = split_top(t, '|')
        .into_iter()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .collect();
    let mut kept = Vec::new();
    for m in members {
        if matches!(m, "null" | "undefined" | "void") {
            nullable = true;
        } else {
            kept.push(m);
        }
    }
    let strings: Vec<Value> = kept
        .iter()
        .filter_map(|m| string_literal(m).map(Value::String))
        .collect();
    if !kept.is_empty() && strings.len() == kept.len() {
        return (ParamType::String, strings, nullable);
    }
    let numbers: Vec<Value> = kept
        .iter()
        .filter_map(|m| serde_json::from_str::<serde_json::Number>(m).ok())
        .map(Value::Number)
        .collect();
    if !kept.is_empty() && numbers.len() == kept.len() {
        let ty = if numbers.iter().all(|n| n.is_i64() || n.is_u64()) {
            ParamType::Integer
        } else {
            ParamType::Number
        };
        return (ty, numbers, nullable);
    }
    if !kept.is_empty() && kept.iter().all(|m| matches!(*m, "true" | "false")) {
        return (ParamType::Boolean, Vec::new(), nullable);
    }
    let Some(first) = kept.first() else {
        return (ParamType::String, Vec::new(), nullable);
    };
    let (ty, choices) = single_js_type(first);
    (ty, choices, nullable)
}

fn single_js_type(t: &str) -> (ParamType, Vec<Value>) {
    if let Some(inner) = t.strip_suffix("[]") {
        let (item, choices, _) = js_type(inner);
        return (ParamType::Array(Box::new(item)), choices);
    }
    for generic in ["Array<", "ReadonlyArray<"] {
        if let Some(inner) = t.strip_prefix(generic).and_then(|r| r.strip_suffix('>')) {
            let (item, choices, _) = js_type(inner);
            return (ParamType::Array(Box::new(item)), choices);
        }
    }
    let ty = match t {
        "string" | "String" => ParamType::String,
        "number" | "Number" | "float" => ParamType::Number,
        "integer" | "Integer" | "int" | "bigint" => ParamType::Integer,
        "boolean" | "Boolean" | "bool" => ParamType::Boolean,
        "object" | "Object" => ParamType::Object,
        "array" | "Array" => ParamType::Array(Box::new(ParamType::String)),
        _ if t.starts_with('{') || t.starts_with("Record<") || t.starts_with("Map<") => {
            ParamType::Object
        }
        _ => ParamType::String,
    };
    (ty, Vec::new())
}

fn string_literal(m: &str) -> Option<String> {
    let q = m.chars().next()?;
    if !matches!(q, '"' | '\'' | '`') || m.len() < 2 || !m.ends_with(q) {
        return None;
    }
    Some(m[1..m.len() - 1].to_string())
}

fn js_decl(tool_name: &str, function: &str, sig: &str, doc: Option<&str>, lang: Lang) -> ToolDecl {
    let doc = doc.map(parse_jsdoc).unwrap_or_default();
    let sig = parse_signature(sig);
    let dotted: Vec<DocParam> = doc
        .params
        .iter()
        .filter_map(|p| {
            let (_, field) = p.name.split_once('.')?;
            Some(DocParam {
                name: field.to_string(),
                ..p.clone()
            })
        })
        .collect();
    let object_style = sig.len() == 1
        && (sig[0].destructured.is_some() || !doc.props.is_empty() || !dotted.is_empty());
    let from_doc = |d: &DocParam| {
        let (ty, choices, nullable) = js_type(d.ty.as_deref().unwrap_or("string"));
        let mut p = Param::new(&d.name, &d.name, ty);
        p.choices = choices;
        p.required = !(d.optional || nullable);
        p.description = d.desc.clone();
        p
    };
    let params: Vec<Param> = if object_style {
        let fields: &[DocParam] = if !doc.props.is_empty() {
            &doc.props
        } else {
            &dotted
        };
        if !fields.is_empty() {
            fields.iter().map(from_doc).collect()
        } else {
            sig[0]
                .destructured
                .iter()
                .flatten()
                .map(|(name, has_default)| {
                    let mut p = Param::new(name, name, ParamType::String);
                    p.required = !has_default;
                    p
                })
                .collect()
        }
    } else {
        sig.iter()
            .filter(|s| s.destructured.is_none())
            .map(|s| {
                let d = doc.params.iter().find(|d| d.name == s.name);
                let ty_text =
                    s.ty.as_deref()
                        .or(d.and_then(|d| d.ty.as_deref()))
                        .unwrap_or("string");
                let (ty, choices, nullable) = js_type(ty_text);
                let mut p = Param::new(&s.name, &s.name, ty);
                p.choices = choices;
                p.required = !(s.optional || nullable || d.is_some_and(|d| d.optional));
                p.description = d.map(|d| d.desc.clone()).unwrap_or_default();
                p
            })
            .collect()
    };
    ToolDecl {
        name: tool_name.to_string(),
        function: function.to_string(),
        description: doc.description,
        params,
        file: PathBuf::new(),
        lang,
        global: false,
        style: if object_style {
            CallStyle::Object
        } else {
            CallStyle::Spread
        },
        env_defaults: Vec::new(),
    }
}

