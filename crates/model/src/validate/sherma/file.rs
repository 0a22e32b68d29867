//! Checks of the whole file, independent of the agent: concrete versions of sub-agents and
//! skills, duplicate registry ids, `default_llm`, sub-agent files (validated in turn), Python
//! import paths.

use super::{V, set_hint};
use crate::doc::Document;
use crate::doc::sherma::{RegistryRef, ShermaDoc};
use std::collections::HashMap;
use syntax::diag::{Diagnostic, did_you_mean};
use syntax::source::Span;

thread_local! {
    static SUB_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Sub-agent files already validated during this top-level validation (memoised: a file
    /// whose 50 `yaml_path` entries name itself is validated once, not 50⁴ times), `None` while
    /// one is being validated further up (a cycle: not validated again).
    static SUB_SEEN: std::cell::RefCell<HashMap<std::path::PathBuf, Option<SubResult>>> = std::cell::RefCell::new(HashMap::new());
}

/// What a sub-agent file's validation says to the file that names it.
#[derive(Clone)]
struct SubResult {
    is_sherma: bool,
    io_error: bool,
    errors: usize,
    first: Option<(String, u32, u32, String)>,
}

fn canonical(p: &std::path::Path) -> std::path::PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Checks that concern the whole file (registries), independent of the agent.
pub fn validate_doc(doc: &Document, s: &ShermaDoc, diags: &mut Vec<Diagnostic>) {
    let Some(file) = &doc.file else { return };
    let mut v = V { file, doc: s, diags };
    // sherma looks sub-agents and local skills up with `==<version>` at load: `*` (the default)
    // is not a valid specifier there and crashes upstream.
    for (what, list) in [("sub-agent", &s.sub_agents), ("skill", &s.skills)] {
        for e in list.iter() {
            let concrete = e.version.as_ref().is_some_and(|v| v.value != "*" && !v.value.is_empty());
            let needs = what == "sub-agent" || e.get("skill_card_path").is_some() || e.get("url").is_some();
            if !concrete && needs {
                let span = e.version.as_ref().map(|v| v.span).or(e.id.as_ref().map(|i| i.span)).unwrap_or(e.span);
                let d = v.warn(
                    "sherma-version-star",
                    format!("{what} `{}` has no concrete version; sherma fails to register it", e.id_str()),
                    span,
                );
                set_hint(d, "add a concrete version such as `version: \"1.0.0\"` (Switchyard accepts `*`, sherma does not)");
            }
        }
    }
    let mut seen: HashMap<(&str, String), Span> = HashMap::new();
    for (what, list) in [
        ("llm", &s.llms),
        ("tool", &s.tools),
        ("prompt", &s.prompts),
        ("skill", &s.skills),
        ("sub-agent", &s.sub_agents),
        ("MCP server", &s.mcp_servers),
    ] {
        for e in list.iter() {
            let Some(id) = &e.id else { continue };
            let key = (what, format!("{}@{}", id.value, e.version.as_ref().map(|v| v.value.as_str()).unwrap_or("*")));
            if let Some(first) = seen.get(&key) {
                let line = file.line_col(first.start as usize).line;
                let d = v.err("sherma-duplicate-id", format!("{what} `{}` is declared twice with the same version", id.value), id.span);
                set_hint(d, format!("the first declaration is on line {line}; remove one or give them different versions"));
            } else {
                seen.insert(key, id.span);
            }
        }
    }
    if let Some(dl) = &s.default_llm {
        check_llm_ref(&mut v, dl, "default_llm");
    }
    // Sub-agents from `yaml_path`: validate them too (depth-limited and memoised per file, so
    // cycles and self-references cost one validation per file).
    let depth = SUB_DEPTH.with(|d| d.get());
    if depth == 0 {
        SUB_SEEN.with(|m| {
            let mut m = m.borrow_mut();
            m.clear();
            m.insert(canonical(&doc.path), None);
        });
    }
    for sa in &s.sub_agents {
        let (Some(path), Some(yp)) = (sa.resolved_path.as_ref().filter(|p| p.is_file()), sa.get("yaml_path")) else { continue };
        if depth >= 4 {
            continue;
        }
        let key = canonical(path);
        let known = SUB_SEEN.with(|m| m.borrow().get(&key).cloned());
        let result = match known {
            Some(None) => {
                // Being validated further up: a cycle. Said once, not validated again.
                let d = v.warn(
                    "sherma-sub-agent-file",
                    format!("sub-agent `{}` names {}, which is already being loaded above it: calling it starts this agent inside itself", sa.id_str(), yp.value),
                    yp.span,
                );
                set_hint(d, "a sub-agent file that names itself (directly or through others) recurses until the recursion limit; point yaml_path at another agent");
                continue;
            }
            Some(Some(r)) => r,
            None => {
                SUB_SEEN.with(|m| m.borrow_mut().insert(key.clone(), None));
                SUB_DEPTH.with(|d| d.set(depth + 1));
                let sub = crate::doc::load_path(path);
                let sub_diags = crate::validate::validate(&sub, None);
                SUB_DEPTH.with(|d| d.set(depth));
                let errors: Vec<_> = sub_diags.iter().filter(|d| d.is_error()).collect();
                let r = SubResult {
                    is_sherma: sub.sherma().is_some(),
                    io_error: sub.io_error,
                    errors: errors.len(),
                    first: errors.first().map(|d| (d.file.clone(), d.line, d.column, d.message.clone())),
                };
                SUB_SEEN.with(|m| m.borrow_mut().insert(key, Some(r.clone())));
                r
            }
        };
        if !result.is_sherma && !result.io_error {
            let d = v.err("sherma-sub-agent-file", format!("`{}` is not a sherma agent file", yp.value), yp.span);
            set_hint(d, "yaml_path must name another declarative agent YAML (with manifest_version: 1)");
        } else if let Some((f, line, column, message)) = &result.first {
            let n = result.errors;
            let d = v.err(
                "sherma-sub-agent-file",
                format!("sub-agent `{}` has {n} error{} in {}", sa.id_str(), if n == 1 { "" } else { "s" }, yp.value),
                yp.span,
            );
            set_hint(d, format!("first: {f}:{line}:{column}: {message}"));
        }
    }
    for (what, list) in [("tool", &s.tools), ("hook", &s.hooks), ("sub-agent", &s.sub_agents)] {
        for e in list.iter() {
            let Some(ip) = e.get("import_path") else { continue };
            if resolve_python_import(&doc.base_dir, &ip.value).is_none() {
                let d = v.warn(
                    "python-import-unresolved",
                    format!("{what} import path `{}` cannot be resolved from this folder", ip.value),
                    ip.span,
                );
                set_hint(d, "runs import it with the agent's folder and its parents on sys.path; add the module there or set PYTHONPATH");
            }
        }
    }
}

/// Find the Python module file of a dotted `module.attr` path, searching the agent's folder and
/// its ancestors (and PYTHONPATH). Returns the module file.
pub fn resolve_python_import(base: &std::path::Path, dotted: &str) -> Option<std::path::PathBuf> {
    let parts: Vec<&str> = dotted.split('.').filter(|p| !p.is_empty()).collect();
    if parts.len() < 2 {
        return None;
    }
    let module = &parts[..parts.len() - 1];
    let mut roots: Vec<std::path::PathBuf> = base.ancestors().take(6).map(|p| p.to_path_buf()).collect();
    if let Some(pp) = std::env::var_os("PYTHONPATH") {
        roots.extend(std::env::split_paths(&pp));
    }
    for root in roots {
        let mut p = root.clone();
        for m in module {
            p.push(m);
        }
        let file = p.with_extension("py");
        if file.is_file() {
            return Some(file);
        }
        let init = p.join("__init__.py");
        if init.is_file() {
            return Some(init);
        }
    }
    None
}

pub(super) fn check_llm_ref(v: &mut V<'_>, r: &RegistryRef, what: &str) {
    let Some(id) = &r.id else { return };
    if !v.doc.llms.iter().any(|l| l.id_str() == id.value) {
        let ids: Vec<&str> = v.doc.llms.iter().map(|l| l.id_str()).collect();
        let sugg = did_you_mean(&id.value, ids.iter().copied());
        let d = v.err("sherma-unknown-llm", format!("{what} names llm `{}`, which is not declared in `llms`", id.value), id.span);
        set_hint(
            d,
            match sugg {
                Some(s) => format!("did you mean `{s}`?"),
                None if ids.is_empty() => "declare it under `llms:` (id, provider, model_name)".to_string(),
                None => format!("declared llms: {}", ids.join(", ")),
            },
        );
    }
}
