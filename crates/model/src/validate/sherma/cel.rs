//! CEL: every expression of an agent (prompts, updates, inputs, branch conditions) compiled once
//! per distinct text, then checked for syntax, unknown variables, undeclared state fields,
//! unknown functions, registry lookups with unknown ids and `data` keys that do not exist.

use super::V;
use crate::doc::schema::value_offset_to_source;
use crate::doc::sherma::{AgentDef, Expr};
use expr::cel::CelEngine;
use std::collections::{BTreeSet, HashMap, HashSet};
use syntax::diag::{Diagnostic, did_you_mean};
use syntax::source::{SourceFile, Span};

/// One expression to check: the expression, where it is used, and the node it belongs to.
pub(super) type ExprRef<'a> = (&'a Expr, ExprCtx, String);

/// Branch conditions (except the built-in ones), attributed to the edge's source node.
pub(super) fn branch_conditions<'a>(agent: &'a AgentDef, engine_refs: &mut Vec<ExprRef<'a>>) {
    for e in &agent.edges {
        for b in e.branches.iter().flatten() {
            if let Some(c) = &b.condition {
                let t = c.text.trim();
                if t == "has_tool_calls" || t == "has_error_fallback" {
                    continue;
                }
                let src = e.source.as_ref().map(|s| s.value.clone()).unwrap_or_default();
                engine_refs.push((c, ExprCtx::Condition, src));
            }
        }
    }
}

/// CEL: syntax and references.
pub(super) fn check_expressions(v: &mut V<'_>, agent: &AgentDef, engine_refs: Vec<ExprRef<'_>>) {
    let s = v.doc;
    let file = v.file;
    let engine = CelEngine::shared();
    let mut known_vars: BTreeSet<&str> = ["state"].into_iter().collect();
    if !s.prompts.is_empty() {
        known_vars.insert("prompts");
    }
    if !s.llms.is_empty() {
        known_vars.insert("llms");
    }
    if !s.skills.is_empty() {
        known_vars.insert("skills");
    }
    known_vars.insert("data");
    let declared: HashSet<&str> = agent.state_fields.iter().map(|f| f.name.value.as_str()).collect();
    let internal_ok = !s.skills.is_empty() || agent.nodes.iter().any(|n| n.on_error.as_ref().is_some_and(|o| o.fallback.is_some()));
    let compiled = compile_all(engine, engine_refs.iter().map(|(x, _, _)| x.text.as_str()).collect());
    for ((x, ctx, node), result) in engine_refs.into_iter().zip(compiled) {
        match result {
            Err(e) => {
                let span = expr_span(file, x, e.offset, e.offset + e.len.max(1));
                let mut d = Diagnostic::error("cel-syntax", format!("CEL: {}", e.message)).at(file, span).node(node.clone());
                d.hint = Some(e.hint.clone().unwrap_or_else(|| match ctx {
                    ExprCtx::Value if looks_like_bare_text(&x.text) => {
                        "this is a CEL expression: a text literal needs inner quotes, e.g. '\"ready\"'".to_string()
                    }
                    _ => format!("in the expression `{}`", x.text.trim()),
                }));
                v.diags.push(d);
            }
            Ok(prog) => {
                let refs = prog.references();
                for var in &refs.variables {
                    let ok = known_vars.contains(var.as_str())
                        || declared.contains(var.as_str())
                        || (var == "llm_response" && ctx == ExprCtx::StateUpdates);
                    if !ok {
                        let off = x.text.find(var.as_str()).unwrap_or(0);
                        let span = expr_span(file, x, off, off + var.len());
                        let hint = if var == "llm_response" {
                            "`llm_response` exists only inside a call_llm node's `state_updates`".to_string()
                        } else if matches!(var.as_str(), "prompts" | "llms" | "skills") {
                            format!("`{var}` is bound only when the file declares `{var}:`")
                        } else {
                            let mut cands: Vec<&str> = known_vars.iter().copied().collect();
                            cands.extend(declared.iter().copied());
                            match did_you_mean(var, cands) {
                                Some(sug) => format!("did you mean `{sug}`? State fields are read as state.<name>"),
                                None => "state fields are read as state.<name>; declare the field under state.fields".to_string(),
                            }
                        };
                        v.diags.push(
                            Diagnostic::warning("cel-unknown-variable", format!("CEL reads `{var}`, which is not defined here"))
                                .at(file, span)
                                .node(node.clone())
                                .hint(hint),
                        );
                    }
                }
                for (field, off) in &refs.state_fields {
                    if declared.contains(field.as_str()) || (field == "__sherma__" && internal_ok) {
                        continue;
                    }
                    let span = expr_span(file, x, *off, off + field.len());
                    let hint = match did_you_mean(field, declared.iter().copied()) {
                        Some(sug) => format!("did you mean `{sug}`?"),
                        None if field == "__sherma__" => "`__sherma__` exists only when the file declares skills or a node has on_error.fallback".into(),
                        None => format!("declare `{field}` under state.fields, or the read fails when the field was never written"),
                    };
                    v.diags.push(
                        Diagnostic::warning("sherma-undeclared-field", format!("state field `{field}` is not declared"))
                            .at(file, span)
                            .node(node.clone())
                            .hint(hint),
                    );
                }
                for f in &refs.functions {
                    if f.contains('.') || function_known(engine, f) {
                        continue;
                    }
                    let off = call_offset(&x.text, f).unwrap_or(0);
                    let span = expr_span(file, x, off, off + f.len());
                    let hint = if MACROS.contains(&f.as_str()) {
                        format!("`{f}` is a macro: write it as `list.{f}(x, <expression of x>)` with a variable name first")
                    } else {
                        let cands = expr::cel::functions::CUSTOM_FUNCTIONS.iter().copied().chain(STANDARD_FUNCTIONS.iter().copied());
                        match did_you_mean(f, cands) {
                            Some(sug) => format!("did you mean `{sug}`?"),
                            None => format!("sherma's functions: {}", expr::cel::functions::CUSTOM_FUNCTIONS.join(", ")),
                        }
                    };
                    v.diags.push(
                        Diagnostic::warning("cel-unknown-function", format!("CEL calls `{f}`, which is not a known function"))
                            .at(file, span)
                            .node(node.clone())
                            .hint(hint),
                    );
                }
                check_registry_lookups(v, x, &node);
                check_data_lookups(v, x, &node, &refs);
            }
        }
    }
}

/// CEL macros: a call with the wrong shape is parsed as a call of an unknown function.
const MACROS: &[&str] = &["has", "all", "exists", "exists_one", "map", "filter"];
/// Common standard functions, for "did you mean".
const STANDARD_FUNCTIONS: &[&str] = &[
    "size", "contains", "startsWith", "endsWith", "matches", "int", "uint", "double", "string", "bytes", "bool", "type",
    "dyn", "duration", "timestamp",
];

/// Whether the CEL environment has a function of this name (any arity, global or member):
/// calling it without arguments fails with "unknown function" only when it has neither.
/// Cached per name.
fn function_known(engine: &CelEngine, name: &str) -> bool {
    static KNOWN: std::sync::OnceLock<std::sync::Mutex<HashMap<String, bool>>> = std::sync::OnceLock::new();
    let cache = KNOWN.get_or_init(Default::default);
    if let Some(k) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
        return *k;
    }
    let valid_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let known = !valid_name
        || [format!("{name}()"), format!("null.{name}()")].iter().any(|probe| match engine.compile(probe) {
            Ok(p) => !matches!(engine.eval(&p, &expr::cel::Bindings::new()), Err(e) if e.message.starts_with("unknown function")),
            Err(_) => true,
        });
    cache.lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_string(), known);
    known
}

/// Byte offset of the name of the first call of `f` (`f(` or `.f(`, spaces allowed before `(`).
fn call_offset(text: &str, f: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(f).map(|i| i + from) {
        let before_ok = text[..i].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if before_ok && text[i + f.len()..].trim_start().starts_with('(') {
            return Some(i);
        }
        from = i + f.len();
    }
    text.find(f)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ExprCtx {
    Value,
    StateUpdates,
    Condition,
}

fn looks_like_bare_text(s: &str) -> bool {
    let t = s.trim();
    t.contains(' ') && !t.contains(['"', '\'', '(', '[', '{', '.'])
}

/// The file span of `[a, b)` inside an expression's value.
fn expr_span(file: &SourceFile, x: &Expr, a: usize, b: usize) -> Span {
    if x.interpolated {
        return x.node.span;
    }
    let s = value_offset_to_source(file, &x.node, a);
    let e = value_offset_to_source(file, &x.node, b.max(a));
    Span::new(s, e.max(s))
}

/// `prompts["x"]`, `llms["x"]`, `skills["x"]` with a literal id that is not declared.
fn check_registry_lookups(v: &mut V<'_>, x: &Expr, node: &str) {
    let s = v.doc;
    for (reg, ids) in [
        ("prompts", s.prompts.iter().map(|p| p.id_str()).collect::<Vec<_>>()),
        ("llms", s.llms.iter().map(|p| p.id_str()).collect()),
        ("skills", s.skills.iter().map(|p| p.id_str()).collect()),
    ] {
        let text = &x.text;
        let mut from = 0;
        while let Some(pos) = text[from..].find(reg) {
            let at = from + pos;
            from = at + reg.len();
            let before_ok = at == 0 || !text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
            let rest = &text[from..];
            let Some(rest) = rest.strip_prefix('[') else { continue };
            let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
            let Some(end) = rest[1..].find(q) else { continue };
            let id = &rest[1..1 + end];
            if !before_ok || ids.contains(&id) || ids.is_empty() {
                continue;
            }
            let off = from + 2;
            let span = expr_span(v.file, x, off, off + id.len());
            let hint = match did_you_mean(id, ids.iter().copied()) {
                Some(sug) => format!("did you mean `{sug}`?"),
                None => format!("declared {reg}: {}", ids.join(", ")),
            };
            v.diags.push(
                Diagnostic::error("sherma-unknown-id", format!("`{reg}[\"{id}\"]`: no {} with id `{id}`", reg.trim_end_matches('s')))
                    .at(v.file, span)
                    .node(node.to_string())
                    .hint(hint),
            );
        }
    }
}

/// `data.key` / `data["key"]` reading a key the top-level `data:` map does not have (evaluation
/// fails with "no such key"; without `data:` the name is not even bound upstream).
fn check_data_lookups(v: &mut V<'_>, x: &Expr, node: &str, refs: &expr::cel::CelRefs) {
    if !refs.variables.contains("data") {
        return;
    }
    let keys: Vec<&str> = v.doc.data.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
    let text = &x.text;
    let mut from = 0;
    while let Some(pos) = text[from..].find("data") {
        let at = from + pos;
        from = at + 4;
        let before_ok = !text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        if !before_ok {
            continue;
        }
        let rest = &text[from..];
        let (key, off) = if let Some(r) = rest.strip_prefix('.') {
            let n = r.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(r.len());
            (&r[..n], from + 1)
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(q) = r.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
            let Some(end) = r[1..].find(q) else { continue };
            (&r[1..1 + end], from + 2)
        } else {
            continue;
        };
        if key.is_empty() || keys.contains(&key) {
            continue;
        }
        let span = expr_span(v.file, x, off, off + key.len());
        let hint = match did_you_mean(key, keys.iter().copied()) {
            Some(sug) => format!("did you mean `{sug}`?"),
            None if keys.is_empty() => "declare it under a top-level `data:` mapping".to_string(),
            None => format!("keys of `data`: {}", keys.join(", ")),
        };
        v.diags.push(
            Diagnostic::error("sherma-unknown-id", format!("`data` has no key `{key}`"))
                .at(v.file, span)
                .node(node.to_string())
                .hint(hint),
        );
    }
}

/// Compiles many CEL expressions, each distinct text once (agents repeat conditions and
/// updates, and a program is shared by reference), spreading the work over the available cores
/// when there are enough of them to pay for the threads. Results come back in input order.
fn compile_all(engine: &CelEngine, texts: Vec<&str>) -> Vec<Result<expr::cel::CelProgram, expr::cel::CelError>> {
    let mut slot_of: HashMap<&str, usize> = HashMap::with_capacity(texts.len());
    let mut distinct: Vec<&str> = Vec::new();
    let slots: Vec<usize> = texts
        .iter()
        .map(|t| {
            *slot_of.entry(t).or_insert_with(|| {
                distinct.push(t);
                distinct.len() - 1
            })
        })
        .collect();
    let compiled = compile_distinct(engine, distinct);
    slots.into_iter().map(|i| compiled[i].clone()).collect()
}

fn compile_distinct(engine: &CelEngine, texts: Vec<&str>) -> Vec<Result<expr::cel::CelProgram, expr::cel::CelError>> {
    const PER_THREAD_MIN: usize = 256;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(texts.len() / PER_THREAD_MIN).max(1);
    if threads == 1 {
        return texts.into_iter().map(|t| engine.compile(t)).collect();
    }
    let chunk = texts.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = texts
            .chunks(chunk)
            .map(|part| (part.len(), scope.spawn(move || part.iter().map(|t| engine.compile(t)).collect::<Vec<_>>())))
            .collect();
        handles
            .into_iter()
            .flat_map(|(n, h)| {
                h.join().unwrap_or_else(|_| {
                    (0..n).map(|_| Err(expr::cel::CelError::new("the CEL compiler failed on this expression".to_string(), 0, 0))).collect()
                })
            })
            .collect()
    })
}
