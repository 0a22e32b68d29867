//! sherma validation: upstream's checks (reference/sherma.md §4) and what users need beyond them
//! (unknown references, CEL syntax with positions, unreachable nodes, undeclared state fields,
//! versions sherma cannot look up).

use syntax::diag::{Diagnostic, did_you_mean};
use crate::doc::Document;
use crate::doc::schema::value_offset_to_source;
use crate::doc::sherma::{AgentDef, Expr, NodeArgs, RegistryRef, ShermaDoc, SubAgentsAsTools};
use expr::cel::CelEngine;
use crate::graph::lower_sherma::{Cond, EffKind, effective};
use crate::graph::{END, Graph, START};
use syntax::source::{SourceFile, Span};
use std::collections::{BTreeSet, HashMap, HashSet};

thread_local! {
    static SUB_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

const ON_ERROR_TYPES: &[&str] = &["call_llm", "tool_node", "call_agent", "custom"];
const SKILL_TOOLS: &[&str] = &[
    "list_skills",
    "load_skill_md",
    "unload_skill",
    "list_skill_resources",
    "load_skill_resource",
    "list_skill_assets",
    "load_skill_asset",
];

struct V<'a> {
    file: &'a SourceFile,
    doc: &'a ShermaDoc,
    diags: &'a mut Vec<Diagnostic>,
}

impl V<'_> {
    fn err(&mut self, code: &str, msg: String, span: Span) -> &mut Diagnostic {
        self.diags.push(Diagnostic::error(code, msg).at(self.file, span));
        self.diags.last_mut().unwrap()
    }
    fn warn(&mut self, code: &str, msg: String, span: Span) -> &mut Diagnostic {
        self.diags.push(Diagnostic::warning(code, msg).at(self.file, span));
        self.diags.last_mut().unwrap()
    }
}

fn set_hint(d: &mut Diagnostic, h: impl Into<String>) {
    d.hint = Some(h.into());
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
    // Sub-agents from `yaml_path`: validate them too (depth-limited, so cycles cannot recurse).
    for sa in &s.sub_agents {
        let (Some(path), Some(yp)) = (sa.resolved_path.as_ref().filter(|p| p.is_file()), sa.get("yaml_path")) else { continue };
        let depth = SUB_DEPTH.with(|d| d.get());
        if depth >= 4 {
            continue;
        }
        SUB_DEPTH.with(|d| d.set(depth + 1));
        let sub = crate::doc::load_path(path);
        let sub_diags = super::validate(&sub, None);
        SUB_DEPTH.with(|d| d.set(depth));
        let errors: Vec<_> = sub_diags.iter().filter(|d| d.is_error()).collect();
        if sub.sherma().is_none() && !sub.io_error {
            let d = v.err("sherma-sub-agent-file", format!("`{}` is not a sherma agent file", yp.value), yp.span);
            set_hint(d, "yaml_path must name another declarative agent YAML (with manifest_version: 1)");
        } else if let Some(first) = errors.first() {
            let d = v.err(
                "sherma-sub-agent-file",
                format!("sub-agent `{}` has {} error{} in {}", sa.id_str(), errors.len(), if errors.len() == 1 { "" } else { "s" }, yp.value),
                yp.span,
            );
            set_hint(d, format!("first: {}:{}:{}: {}", first.file, first.line, first.column, first.message));
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

fn check_llm_ref(v: &mut V<'_>, r: &RegistryRef, what: &str) {
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

/// Validate one agent. `graph` is its lowered IR.
pub fn validate_agent(doc: &Document, s: &ShermaDoc, agent: &AgentDef, graph: &Graph, diags: &mut Vec<Diagnostic>) {
    let Some(file) = &doc.file else { return };
    let mut v = V { file, doc: s, diags };
    let names: Vec<&str> = agent.nodes.iter().map(|n| n.name.value.as_str()).collect();
    let agent_label = format!("agent `{}`", agent.name.value);

    // Node names: present, unique.
    let mut first_at: HashMap<&str, Span> = HashMap::new();
    for n in &agent.nodes {
        if n.name.value.is_empty() {
            // A missing name is reported by the schema check; an empty one is not.
            if n.node.get("name").is_some_and(|x| x.as_scalar().is_some() && !x.is_null()) {
                let d = v.err("sherma-empty-name", "a node name cannot be empty".into(), n.name.span);
                set_hint(d, "give the node a name that edges can refer to");
            }
            continue;
        }
        if n.name.value == START || n.name.value == END {
            let d = v.err("sherma-reserved-name", format!("`{}` is reserved and cannot name a node", n.name.value), n.name.span);
            set_hint(d, "rename the node");
        }
        match first_at.get(n.name.value.as_str()) {
            Some(first) => {
                let line = file.line_col(first.start as usize).line;
                let d = v.err("duplicate-node", format!("duplicate node name `{}`", n.name.value), n.name.span);
                d.node = Some(n.name.value.clone());
                set_hint(d, format!("a node named `{}` is already defined on line {line}; node names must be unique", n.name.value));
            }
            None => {
                first_at.insert(&n.name.value, n.name.span);
            }
        }
    }
    // State fields: unique names (sherma builds its state class from the list; a repeat
    // silently replaces the first declaration's type and default).
    let mut field_at: HashMap<&str, Span> = HashMap::new();
    for f in &agent.state_fields {
        if f.name.value.is_empty() {
            continue;
        }
        if let Some(first) = field_at.get(f.name.value.as_str()) {
            let line = file.line_col(first.start as usize).line;
            let d = v.err("sherma-duplicate-field", format!("state field `{}` is declared twice", f.name.value), f.name.span);
            set_hint(d, format!("the first declaration is on line {line}; remove one of them"));
        } else {
            field_at.insert(&f.name.value, f.name.span);
        }
    }
    let name_set: HashSet<&str> = names.iter().copied().collect();
    let node_exists = |name: &str| name_set.contains(name);
    let ref_hint = |name: &str| -> String {
        match did_you_mean(name, names.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!("nodes of {agent_label}: {}", if names.is_empty() { "none".into() } else { names.join(", ") }),
        }
    };

    // Entry.
    let start_edges = agent.edges.iter().filter(|e| e.source.as_ref().is_some_and(|s| s.value == START)).count();
    match (&agent.entry_point, start_edges) {
        (Some(ep), n) if n > 0 => {
            let d = v.err("sherma-entry", "both `entry_point` and an edge from `__start__` are given".into(), ep.span);
            set_hint(d, "keep exactly one way to enter the graph");
        }
        (None, 0) => {
            let d = v.err("sherma-entry", format!("{agent_label} has no entry: no `entry_point` and no edge from `__start__`"), agent.graph_span);
            set_hint(d, "add `entry_point: <first node>` under `graph:`");
            if let Some(d) = v.diags.last_mut() {
                let f = v.file;
                let head = crate::doc::schema::head_span(f, &syntax::yaml::YNode { span: agent.graph_span, kind: syntax::yaml::YKind::Bad });
                *d = d.clone().at(f, head);
            }
        }
        (Some(ep), _) if !node_exists(&ep.value) => {
            let d = v.err("sherma-ref", format!("`entry_point` names node `{}`, which does not exist", ep.value), ep.span);
            set_hint(d, ref_hint(&ep.value));
        }
        _ => {}
    }

    // Edges.
    for e in &agent.edges {
        if let Some(src) = &e.source {
            if src.value == END {
                let d = v.err("sherma-ref", "an edge cannot start at `__end__`".into(), src.span);
                set_hint(d, "`__end__` is only a target");
            } else if src.value != START && !node_exists(&src.value) {
                let d = v.err("sherma-ref", format!("edge source `{}` is not a node", src.value), src.span);
                set_hint(d, ref_hint(&src.value));
            }
        }
        let check_target = |v: &mut V<'_>, t: &crate::doc::Sp<String>, what: &str| {
            if t.value == START {
                let d = v.err("sherma-ref", format!("{what} cannot be `__start__`"), t.span);
                set_hint(d, "`__start__` is only a source");
            } else if t.value != END && !node_exists(&t.value) {
                let d = v.err("sherma-ref", format!("{what} `{}` is not a node", t.value), t.span);
                set_hint(d, ref_hint(&t.value));
            }
        };
        match &e.branches {
            Some(branches) => {
                if let Some(t) = &e.target {
                    let d = v.warn("sherma-target-ignored", "`target` is ignored because the edge has `branches`".into(), t.span);
                    set_hint(d, "move this target into `default:`, or remove it");
                }
                for b in branches {
                    if let Some(t) = &b.target {
                        check_target(&mut v, t, "branch target");
                    }
                }
                if let Some(d) = &e.default {
                    check_target(&mut v, d, "`default`");
                }
            }
            None => match &e.target {
                Some(t) => check_target(&mut v, t, "edge target"),
                None => {
                    let f = v.file;
                    let d = v.warn("sherma-edge-empty", "edge has neither `target` nor `branches`; it is ignored".into(), crate::doc::schema::head_span(f, &syntax::yaml::YNode { span: e.span, kind: syntax::yaml::YKind::Bad }));
                    set_hint(d, "add `target: <node>` (or `__end__`)");
                }
            },
        }
    }

    // messages field.
    let needs_messages = agent.nodes.iter().find(|n| matches!(n.kind.value.as_str(), "call_llm" | "interrupt"));
    if let Some(n) = needs_messages {
        if !agent.has_field("messages") {
            let d = v.err(
                "sherma-messages-field",
                format!("{agent_label} has a `{}` node but no state field named `messages`", n.kind.value),
                n.kind.span,
            );
            d.node = Some(n.name.value.clone());
            set_hint(d, "add `- name: messages` (type list) to `state.fields`");
        }
    }

    let tool_nodes = agent.nodes.iter().filter(|n| n.kind.value == "tool_node").count();
    let mut engine_refs: Vec<(&Expr, ExprCtx, String)> = Vec::new();
    let hooks_declared = !s.hooks.is_empty();
    for n in &agent.nodes {
        let nname = n.name.value.clone();
        match &n.args {
            NodeArgs::CallLlm(c) => {
                let flags = [
                    ("use_tools_from_registry", c.use_tools_from_registry),
                    ("use_tools_from_loaded_skills", c.use_tools_from_loaded_skills),
                    ("use_sub_agents_as_tools", !matches!(c.use_sub_agents_as_tools, SubAgentsAsTools::No)),
                ];
                let on: Vec<&str> = flags.iter().filter(|(_, b)| *b).map(|(n, _)| *n).collect();
                if on.len() > 1 {
                    let d = v.err("sherma-tool-flags", format!("node `{nname}` sets {}; at most one is allowed", on.join(" and ")), n.kind.span);
                    d.node = Some(nname.clone());
                    set_hint(d, "keep one of the tool flags (an explicit `tools` list can be combined with it)");
                }
                if c.response_format.is_some() && c.binds_tools() {
                    let d = v.err(
                        "sherma-response-format-tools",
                        format!("node `{nname}` combines `response_format` with tools"),
                        c.response_format_span.unwrap_or(n.kind.span),
                    );
                    d.node = Some(nname.clone());
                    set_hint(d, "structured output cannot be combined with tool binding: split it into two call_llm nodes");
                }
                if c.binds_tools() && tool_nodes == 0 {
                    let conditional = agent.edges.iter().any(|e| e.source.as_ref().is_some_and(|s| s.value == nname) && e.branches.is_some());
                    if conditional {
                        let d = v.err(
                            "sherma-tool-node-missing",
                            format!("node `{nname}` binds tools and routes with its own branches, but the graph has no tool_node"),
                            n.kind.span,
                        );
                        d.node = Some(nname.clone());
                        set_hint(d, "add a tool_node and a `has_tool_calls` branch to it (sherma only injects one when the node has no conditional edge)");
                    }
                }
                match &c.use_sub_agents_as_tools {
                    SubAgentsAsTools::No => {}
                    SubAgentsAsTools::All => {
                        if s.sub_agents.is_empty() {
                            let d = v.err("sherma-sub-agents", format!("node `{nname}` uses sub-agents as tools, but `sub_agents` is empty"), n.kind.span);
                            d.node = Some(nname.clone());
                            set_hint(d, "declare `sub_agents:` or remove `use_sub_agents_as_tools`");
                        }
                    }
                    SubAgentsAsTools::List(refs) => {
                        for r in refs {
                            if let Some(id) = &r.id {
                                if !s.sub_agents.iter().any(|a| a.id_str() == id.value) {
                                    let d = v.err("sherma-sub-agents", format!("`{}` is not a declared sub-agent", id.value), id.span);
                                    d.node = Some(nname.clone());
                                    set_hint(d, "list only ids declared under `sub_agents:`");
                                }
                            }
                        }
                    }
                }
                match &c.llm {
                    Some(r) => check_llm_ref(&mut v, r, &format!("node `{nname}`")),
                    None if s.default_llm.is_none() => {
                        let d = v.err("sherma-no-llm", format!("node `{nname}` has no `llm` and the file has no `default_llm`"), n.kind.span);
                        d.node = Some(nname.clone());
                        set_hint(d, "add `llm: {id: <llm id>}` to the args, or `default_llm:` at the top level");
                    }
                    None => {}
                }
                for r in c.tools.iter().flatten() {
                    check_tool_ref(&mut v, r, &nname);
                }
                if c.prompt.is_empty() && n.node.at_path(&["args", "prompt"]).is_some_and(|p| p.as_seq().is_some()) {
                    let d = v.warn("sherma-empty-prompt", format!("node `{nname}` sends an empty prompt"), n.kind.span);
                    set_hint(d, "add at least one `- role: ... content: ...` item");
                }
                for item in &c.prompt {
                    if let Some(content) = &item.content {
                        engine_refs.push((content, ExprCtx::Value, nname.clone()));
                    }
                }
                for (k, x) in &c.state_updates {
                    check_field_write(&mut v, agent, k, &nname);
                    engine_refs.push((x, ExprCtx::StateUpdates, nname.clone()));
                }
                if c.binds_tools() && !c.state_updates.iter().any(|(k, _)| k.value == "messages") && agent.has_field("messages") {
                    let d = v.warn(
                        "sherma-tools-without-messages",
                        format!("node `{nname}` binds tools but its `state_updates` do not write `messages`"),
                        n.kind.span,
                    );
                    d.node = Some(nname.clone());
                    set_hint(d, "add `messages: '[llm_response]'` so the tool calls reach the tool node");
                }
            }
            NodeArgs::ToolNode { tools } => {
                for r in tools.iter().flatten() {
                    check_tool_ref(&mut v, r, &nname);
                }
            }
            NodeArgs::CallAgent { agent: target, input } => {
                if let Some(r) = target {
                    if let Some(id) = &r.id {
                        if !s.sub_agents.iter().any(|a| a.id_str() == id.value) {
                            let ids: Vec<&str> = s.sub_agents.iter().map(|a| a.id_str()).collect();
                            let d = v.err("sherma-unknown-agent", format!("node `{nname}` calls `{}`, which is not a declared sub-agent", id.value), id.span);
                            d.node = Some(nname.clone());
                            set_hint(
                                d,
                                match did_you_mean(&id.value, ids.iter().copied()) {
                                    Some(s) => format!("did you mean `{s}`?"),
                                    None => "declare it under `sub_agents:` (with yaml_path, url or import_path)".into(),
                                },
                            );
                        }
                    }
                    if let Some(ver) = &r.version {
                        let t = ver.value.trim();
                        if t != "*" && t.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                            let d = v.warn("sherma-version-specifier", format!("version `{t}` is not a PEP 440 specifier; sherma fails to resolve it"), ver.span);
                            set_hint(d, format!("write `==={t}`-style specifiers as `=={t}`, or `*`").replace("===", "=="));
                        }
                    }
                }
                if let Some(x) = input {
                    engine_refs.push((x, ExprCtx::Value, nname.clone()));
                }
            }
            NodeArgs::DataTransform { expression } => {
                if let Some(x) = expression {
                    engine_refs.push((x, ExprCtx::Value, nname.clone()));
                }
            }
            NodeArgs::SetState { values } => {
                for (k, x) in values {
                    check_field_write(&mut v, agent, k, &nname);
                    engine_refs.push((x, ExprCtx::Value, nname.clone()));
                }
            }
            NodeArgs::Interrupt { value } => {
                if let Some(x) = value {
                    engine_refs.push((x, ExprCtx::Value, nname.clone()));
                }
            }
            NodeArgs::LoadSkills { skill_ids } => {
                if s.skills.is_empty() {
                    let d = v.warn("sherma-no-skills", format!("node `{nname}` loads skills, but the file declares no `skills`"), n.kind.span);
                    set_hint(d, "declare the skills under `skills:` (id, version, skill_card_path)");
                }
                if let Some(x) = skill_ids {
                    engine_refs.push((x, ExprCtx::Value, nname.clone()));
                }
            }
            NodeArgs::Custom { .. } => {
                if !hooks_declared {
                    let d = v.warn("sherma-custom-no-hooks", format!("custom node `{nname}` does nothing: the file declares no `hooks`"), n.kind.span);
                    d.node = Some(nname.clone());
                    set_hint(d, "a custom node runs through the `node_execute` hook; declare a hook executor under `hooks:`");
                }
            }
            NodeArgs::Unknown => {}
        }
        if let Some(oe) = &n.on_error {
            let kind = n.kind.value.as_str();
            if !ON_ERROR_TYPES.contains(&kind) && !kind.is_empty() {
                let d = v.err("sherma-on-error", format!("`on_error` is not allowed on a {kind} node"), oe.span);
                d.node = Some(nname.clone());
                set_hint(d, "on_error works on call_llm, tool_node, call_agent and custom nodes");
            }
            if let Some(r) = &oe.retry {
                if kind != "call_llm" && !kind.is_empty() {
                    let d = v.err("sherma-on-error", format!("`retry` is only supported on call_llm nodes, not {kind}"), r.span);
                    d.node = Some(nname.clone());
                    set_hint(d, "remove `retry`, keep `fallback`");
                }
                if r.max_delay < r.delay {
                    let d = v.err("sherma-on-error", format!("`max_delay` ({}) is smaller than `delay` ({})", r.max_delay, r.delay), r.span);
                    d.node = Some(nname.clone());
                    set_hint(d, "make max_delay >= delay");
                }
            }
            if let Some(fb) = &oe.fallback {
                if !node_exists(&fb.value) {
                    let d = v.err("sherma-ref", format!("`fallback` names node `{}`, which does not exist", fb.value), fb.span);
                    d.node = Some(nname.clone());
                    set_hint(d, ref_hint(&fb.value));
                } else if fb.value == nname {
                    let d = v.warn("sherma-fallback-self", format!("node `{nname}` falls back to itself"), fb.span);
                    set_hint(d, "a failing node that falls back to itself loops until the recursion limit");
                }
                if kind == "custom" {
                    let d = v.warn("sherma-custom-fallback", "sherma never routes a custom node to its `fallback`".into(), fb.span);
                    d.node = Some(nname.clone());
                    set_hint(d, "Switchyard honours it; upstream sherma raises the error instead (reference §7.8)");
                }
                let has_out = agent.edges.iter().any(|e| e.source.as_ref().is_some_and(|s| s.value == nname));
                if !has_out {
                    let d = v.warn(
                        "sherma-fallback-unrouted",
                        format!("node `{nname}` has a fallback but no outgoing edge, so the fallback is never taken"),
                        fb.span,
                    );
                    set_hint(d, "sherma attaches the fallback branch to the node's first outgoing edge: add one (e.g. to __end__)");
                }
            }
        }
    }

    // Branch conditions.
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

    // CEL: syntax and references.
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
                check_registry_lookups(&mut v, x, &node);
                check_data_lookups(&mut v, x, &node, &refs);
            }
        }
    }

    // Reachability over the effective routing.
    let mut diags_unused = Vec::new();
    let eff = effective(agent, Some(doc), &mut diags_unused);
    let mut seen: HashSet<&str> = HashSet::new();
    let mut stack = vec![START];
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        for e in eff.outgoing(n) {
            match &e.kind {
                EffKind::Static { target } => stack.push(target),
                EffKind::Conditional { branches, default, .. } => {
                    stack.extend(branches.iter().map(|b| b.target.as_str()));
                    stack.push(default);
                }
            }
        }
    }
    for n in &agent.nodes {
        if !n.name.value.is_empty() && !seen.contains(n.name.value.as_str()) {
            let d = v.warn("unreachable", format!("node `{}` is unreachable from the entry", n.name.value), n.name.span);
            d.node = Some(n.name.value.clone());
            set_hint(d, "connect it with an edge, or delete it");
        }
    }
    no_exit(&mut v, agent, &eff, &seen);
    let _ = graph;
    let _ = Cond::Missing;
}

/// Reachable nodes from which no path leads to `__end__` or to a node without outgoing edges
/// (which ends the run): such a run can only stop at the recursion limit, an error. Interrupt
/// nodes count as exits (a chat loop stops when the user stops answering).
fn no_exit(v: &mut V<'_>, agent: &AgentDef, eff: &crate::graph::lower_sherma::Effective, reachable: &HashSet<&str>) {
    let kinds: HashMap<&str, &str> = agent.nodes.iter().map(|n| (n.name.value.as_str(), n.kind.value.as_str())).collect();
    // One pass over the edges: who has outgoing edges, and who leads to whom (reversed).
    let mut has_out: HashSet<&str> = HashSet::new();
    let mut preds: HashMap<&str, Vec<&str>> = HashMap::new();
    for e in &eff.edges {
        has_out.insert(e.source.as_str());
        let targets: Vec<&str> = match &e.kind {
            EffKind::Static { target } => vec![target.as_str()],
            EffKind::Conditional { branches, default, .. } => {
                branches.iter().map(|b| b.target.as_str()).chain(std::iter::once(default.as_str())).collect()
            }
        };
        for t in targets {
            preds.entry(t).or_default().push(e.source.as_str());
        }
    }
    // A node finishes when it ends the run (no outgoing edge, an interrupt, `__end__`) or one of
    // its edges leads to a node that finishes (or back to `__start__`, an error of its own, not
    // followed here): a backward search from the exits, linear in nodes and edges.
    let mut finishes: HashSet<&str> = HashSet::from([END, START]);
    let mut queue: Vec<&str> = vec![END, START];
    for &n in reachable {
        if !has_out.contains(n) || kinds.get(n) == Some(&"interrupt") {
            if finishes.insert(n) {
                queue.push(n);
            }
        }
    }
    while let Some(n) = queue.pop() {
        for &p in preds.get(n).map(Vec::as_slice).unwrap_or(&[]) {
            if finishes.insert(p) {
                queue.push(p);
            }
        }
    }
    // `__start__` counts as finishing only through its own edges (the entry point).
    let start_finishes = eff.outgoing(START).any(|e| match &e.kind {
        EffKind::Static { target } => finishes.contains(target.as_str()),
        EffKind::Conditional { branches, default, .. } => {
            branches.iter().any(|b| finishes.contains(b.target.as_str())) || finishes.contains(default.as_str())
        }
    });
    if !start_finishes {
        finishes.remove(START);
    }
    let stuck: Vec<&crate::doc::sherma::NodeDef> =
        agent.nodes.iter().filter(|n| reachable.contains(n.name.value.as_str()) && !finishes.contains(n.name.value.as_str())).collect();
    let Some(first) = stuck.first() else { return };
    let names: Vec<&str> = stuck.iter().take(10).map(|n| n.name.value.as_str()).collect();
    let more = if stuck.len() > 10 { format!(" and {} more", stuck.len() - 10) } else { String::new() };
    let every_run = !finishes.contains(START);
    let msg = format!(
        "no path from {} `{}`{more} reaches `__end__`: {} loops until the recursion limit fails it",
        if names.len() == 1 { "node" } else { "nodes" },
        names.join("`, `"),
        if every_run { "every run" } else { "a run that gets here" },
    );
    let d = if every_run { v.err("sherma-no-exit", msg, first.name.span) } else { v.warn("sherma-no-exit", msg, first.name.span) };
    d.node = Some(first.name.value.clone());
    set_hint(d, "give the loop a way out: a branch (or `default`) to `__end__` or to a node that ends the run");
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
enum ExprCtx {
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

fn check_field_write(v: &mut V<'_>, agent: &AgentDef, key: &crate::doc::Sp<String>, node: &str) {
    if agent.has_field(&key.value) || key.value == "__sherma__" {
        return;
    }
    let declared: Vec<&str> = agent.state_fields.iter().map(|f| f.name.value.as_str()).collect();
    let d = v.warn("sherma-undeclared-field", format!("`{}` is not a declared state field; the update is dropped", key.value), key.span);
    d.node = Some(node.to_string());
    set_hint(
        d,
        match did_you_mean(&key.value, declared.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!("declare `{}` under state.fields", key.value),
        },
    );
}

fn check_tool_ref(v: &mut V<'_>, r: &RegistryRef, node: &str) {
    let Some(id) = &r.id else { return };
    let s = v.doc;
    let known = s.tools.iter().any(|t| t.id_str() == id.value)
        || (!s.skills.is_empty() && SKILL_TOOLS.contains(&id.value.as_str()))
        || (s.agent_skills.declared && id.value == "activate_skill")
        || s.sub_agents.iter().any(|a| a.id_str() == id.value);
    // MCP servers and skill cards register tools we cannot list without connecting.
    let unknowable = !s.mcp_servers.is_empty() || !s.skills.is_empty();
    if known || unknowable {
        return;
    }
    let ids: Vec<&str> = s.tools.iter().map(|t| t.id_str()).collect();
    let d = v.err("sherma-unknown-tool", format!("node `{node}` uses tool `{}`, which is not declared", id.value), id.span);
    d.node = Some(node.to_string());
    set_hint(
        d,
        match did_you_mean(&id.value, ids.iter().copied()) {
            Some(sug) => format!("did you mean `{sug}`?"),
            None => "declare it under `tools:` (id, version, import_path)".into(),
        },
    );
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

#[cfg(test)]
mod tests {
    use syntax::diag::{Diagnostic, Severity};
    use std::path::Path;

    fn check(text: &str) -> Vec<Diagnostic> {
        let doc = crate::doc::load_str(Path::new("/nonexistent/agent.yaml"), text);
        crate::validate::validate(&doc, None)
    }

    fn find<'d>(d: &'d [Diagnostic], code: &str) -> &'d Diagnostic {
        d.iter().find(|x| x.code == code).unwrap_or_else(|| panic!("no {code} in {d:#?}"))
    }

    /// One agent with fields `messages` and `n`; `nodes` and `edges` are indented for `graph:`.
    fn agent(nodes: &str, edges: &str) -> String {
        format!(
            "manifest_version: 1\nagents:\n  a:\n    state:\n      fields: [{{name: messages, type: list}}, {{name: n, type: int}}]\n    graph:\n      entry_point: x\n      nodes:\n{nodes}      edges:\n{edges}"
        )
    }

    const XY: &str = "        - {name: x, type: set_state, args: {values: {n: '1'}}}\n        - {name: y, type: set_state, args: {values: {n: '2'}}}\n";

    #[test]
    fn loops_without_an_exit() {
        // Every run loops: an error at the first stuck node.
        let d = check(&agent(XY, "        - {source: x, target: y}\n        - {source: y, target: x}\n"));
        let x = find(&d, "sherma-no-exit");
        assert_eq!((x.line, x.column, x.severity), (9, 18, Severity::Error), "{x:?}");
        assert!(x.message.contains("`x`, `y`"), "{x:?}");
        // A branch out of the loop: fine.
        let out = "        - {source: x, target: y}\n        - source: y\n          branches: [{condition: state.n > 3, target: __end__}]\n          default: x\n";
        assert!(!check(&agent(XY, out)).iter().any(|d| d.code == "sherma-no-exit"));
        // Only some runs get stuck: a warning.
        let some = "        - source: x\n          branches: [{condition: state.n > 3, target: y}]\n        - {source: y, target: y}\n";
        let x = find(&check(&agent(XY, some)), "sherma-no-exit").clone();
        assert_eq!((x.line, x.severity), (10, Severity::Warning), "{x:?}");
        // A node without outgoing edges ends the run; an interrupt in the loop is a way out.
        assert!(!check(&agent(XY, "        - {source: x, target: y}\n")).iter().any(|d| d.code == "sherma-no-exit"));
        let chat = "        - {name: x, type: interrupt, args: {value: '\"?\"'}}\n        - {name: y, type: set_state, args: {values: {n: '2'}}}\n";
        let d = check(&agent(chat, "        - {source: x, target: y}\n        - {source: y, target: x}\n"));
        assert!(!d.iter().any(|d| d.code == "sherma-no-exit"), "{d:#?}");
    }

    #[test]
    fn a_repeated_expression_is_reported_at_each_place() {
        // The same text is compiled once; every occurrence still gets its own diagnostics.
        let nodes = "        - {name: x, type: set_state, args: {values: {n: 'state.n +', m: 'state.nn + 1'}}}\n        - {name: y, type: set_state, args: {values: {n: 'state.n +', m: 'state.nn + 1'}}}\n";
        let d = check(&agent(nodes, "        - {source: x, target: y}\n        - {source: y, target: __end__}\n"));
        let at = |code: &str| -> Vec<(u32, Option<String>)> {
            d.iter().filter(|d| d.code == code).map(|d| (d.line, d.node.clone())).collect()
        };
        assert_eq!(at("cel-syntax"), vec![(9, Some("x".to_string())), (10, Some("y".to_string()))], "{d:#?}");
        let unknown: Vec<(u32, u32)> =
            d.iter().filter(|d| d.code == "sherma-undeclared-field" && d.message.contains("`nn`")).map(|d| (d.line, d.column)).collect();
        assert_eq!(unknown.len(), 2, "{d:#?}");
        assert_eq!((unknown[0].0, unknown[1].0), (9, 10), "{d:#?}");
        assert_eq!(unknown[0].1, unknown[1].1, "{d:#?}");
    }

    #[test]
    fn unknown_cel_functions_warn_at_the_call() {
        let nodes = "        - {name: x, type: set_state, args: {values: {n: 'size(state.messages) + nosuch(1) + state.s.lowerAscii().strtsWith(\"a\")'}}}\n";
        let d = check(&agent(nodes, "        - {source: x, target: __end__}\n"));
        let found: Vec<(u32, u32, &str)> =
            d.iter().filter(|d| d.code == "cel-unknown-function").map(|d| (d.line, d.column, d.message.as_str())).collect();
        assert_eq!(
            found,
            vec![
                (9, 81, "CEL calls `nosuch`, which is not a known function"),
                (9, 114, "CEL calls `strtsWith`, which is not a known function"),
            ],
            "{d:#?}"
        );
        let hint = d.iter().find(|d| d.message.contains("strtsWith")).unwrap().hint.clone().unwrap();
        assert!(hint.contains("startsWith"), "{hint}");
        // Standard and sherma functions, global and member style, and macros are known.
        let ok = "        - {name: x, type: set_state, args: {values: {n: 'int(state.s.trim()) + size(split(state.s, \",\")) + [1].map(i, i).size()'}}}\n";
        let d = check(&agent(ok, "        - {source: x, target: __end__}\n"));
        assert!(!d.iter().any(|d| d.code == "cel-unknown-function"), "{d:#?}");
    }

    #[test]
    fn data_keys_that_do_not_exist() {
        let nodes = "        - {name: x, type: set_state, args: {values: {n: 'size(data.greting) + size(data[\"greeting\"]) + size(metadata.x)'}}}\n";
        let text = agent(nodes, "        - {source: x, target: __end__}\n").replace("manifest_version: 1\n", "manifest_version: 1\ndata: {greeting: hi}\n");
        let d = check(&text);
        let found: Vec<(u32, u32)> = d.iter().filter(|d| d.code == "sherma-unknown-id").map(|d| (d.line, d.column)).collect();
        assert_eq!(found, vec![(10, 68)], "{d:#?}");
        assert!(d.iter().find(|d| d.code == "sherma-unknown-id").unwrap().hint.as_deref().unwrap().contains("greeting"));
        // Without `data:` every key is unknown.
        let d = check(&agent(nodes, "        - {source: x, target: __end__}\n"));
        assert_eq!(d.iter().filter(|d| d.code == "sherma-unknown-id").count(), 2, "{d:#?}");
    }

    #[test]
    fn empty_node_names() {
        let nodes = "        - {name: '', type: set_state, args: {values: {n: '1'}}}\n        - {name: x, type: set_state, args: {values: {n: '1'}}}\n";
        let x = find(&check(&agent(nodes, "        - {source: x, target: __end__}\n")), "sherma-empty-name").clone();
        assert_eq!((x.line, x.column), (9, 18), "{x:?}");
    }

    #[test]
    fn duplicate_state_fields() {
        let text = agent(XY, "        - {source: x, target: y}\n").replace("{name: n, type: int}]", "{name: n, type: int}, {name: n, type: str}]");
        let x = find(&check(&text), "sherma-duplicate-field").clone();
        assert_eq!((x.line, x.column), (5, 75), "{x:?}");
    }

    #[test]
    fn skill_and_sub_agent_sources() {
        let head = "manifest_version: 1\nskills:\n  - {id: s, version: '1.0.0'}\nsub_agents:\n  - id: b\n    version: '1.0.0'\n    url: http://localhost:1\n    yaml_path: other.yaml\n";
        let d = check(&format!("{head}{}", &agent(XY, "        - {source: x, target: y}\n")["manifest_version: 1\n".len()..]));
        assert_eq!(find(&d, "skill-source").line, 3);
        let x = find(&d, "sub-agent-source");
        assert_eq!((x.line, x.column), (8, 16), "{x:?}");
    }

    #[test]
    fn json_schemas_of_agents_and_response_formats() {
        let text = agent(
            "        - name: x\n          type: call_llm\n          args:\n            llm: {id: m}\n            prompt: [{role: human, content: '\"hi\"'}]\n            response_format: {name: r, schema: {type: object, properties: {a: {type: str}}}}\n            state_updates: {messages: '[llm_response]'}\n",
            "        - {source: x, target: __end__}\n",
        )
        .replace("    state:\n", "    input_schema: {type: objekt}\n    state:\n")
        .replace("manifest_version: 1\n", "manifest_version: 1\nllms: [{id: m, model_name: x}]\n");
        let d = check(&text);
        let lines: Vec<u32> = d.iter().filter(|d| d.code == "json-schema").map(|d| d.line).collect();
        assert_eq!(lines, vec![5, 16], "{d:#?}");
        assert!(d.iter().filter(|d| d.code == "json-schema").all(|d| d.severity == Severity::Error));
    }
}
