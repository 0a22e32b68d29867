//! Each node's args (tool flags and bindings, llms, sub-agents, skills, hooks, state writes, tool
//! references) and its `on_error`; collects the node's CEL expressions for `cel.rs`.

use super::cel::{ExprCtx, ExprRef};
use super::file::check_llm_ref;
use super::{Names, V, set_hint};
use crate::doc::sherma::{AgentDef, CallLlm, Expr, NodeArgs, NodeDef, OnError, RegistryRef, SubAgentsAsTools};
use syntax::diag::did_you_mean;

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

/// Checks every node's args and `on_error`, in declaration order; returns the CEL expressions
/// of the nodes (with their context and node name) for the CEL checks.
pub(super) fn check_nodes<'a>(v: &mut V<'_>, agent: &'a AgentDef, names: &Names<'_>) -> Vec<ExprRef<'a>> {
    let s = v.doc;
    let tool_nodes = agent.nodes.iter().filter(|n| n.kind.value == "tool_node").count();
    let mut engine_refs: Vec<ExprRef<'a>> = Vec::new();
    let hooks_declared = !s.hooks.is_empty();
    for n in &agent.nodes {
        let nname = n.name.value.clone();
        match &n.args {
            NodeArgs::CallLlm(c) => call_llm(v, agent, n, c, tool_nodes, &mut engine_refs),
            NodeArgs::ToolNode { tools } => {
                for r in tools.iter().flatten() {
                    check_tool_ref(v, r, &nname);
                }
            }
            NodeArgs::CallAgent { agent: target, input } => {
                call_agent(v, n, target.as_ref(), input.as_ref(), &mut engine_refs)
            }
            NodeArgs::DataTransform { expression } => {
                if let Some(x) = expression {
                    engine_refs.push((x, ExprCtx::Value, nname.clone()));
                }
            }
            NodeArgs::SetState { values } => {
                for (k, x) in values {
                    check_field_write(v, agent, k, &nname);
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
            on_error(v, agent, names, n, oe);
        }
    }
    engine_refs
}

/// A call_llm node: tool flags and binding, `response_format`, sub-agents as tools, its llm,
/// tools, prompt and `state_updates`.
fn call_llm<'a>(
    v: &mut V<'_>,
    agent: &AgentDef,
    n: &NodeDef,
    c: &'a CallLlm,
    tool_nodes: usize,
    engine_refs: &mut Vec<ExprRef<'a>>,
) {
    let s = v.doc;
    let nname = n.name.value.clone();
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
        Some(r) => check_llm_ref(v, r, &format!("node `{nname}`")),
        None if s.default_llm.is_none() => {
            let d = v.err("sherma-no-llm", format!("node `{nname}` has no `llm` and the file has no `default_llm`"), n.kind.span);
            d.node = Some(nname.clone());
            set_hint(d, "add `llm: {id: <llm id>}` to the args, or `default_llm:` at the top level");
        }
        None => {}
    }
    for r in c.tools.iter().flatten() {
        check_tool_ref(v, r, &nname);
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
        check_field_write(v, agent, k, &nname);
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

/// A call_agent node: the sub-agent it calls (declared, with a version sherma can resolve).
fn call_agent<'a>(
    v: &mut V<'_>,
    n: &NodeDef,
    target: Option<&RegistryRef>,
    input: Option<&'a Expr>,
    engine_refs: &mut Vec<ExprRef<'a>>,
) {
    let s = v.doc;
    let nname = n.name.value.clone();
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

/// `on_error`: allowed on this node type, `retry` only on call_llm, a fallback that exists, is
/// not the node itself and can be routed.
fn on_error(v: &mut V<'_>, agent: &AgentDef, names: &Names<'_>, n: &NodeDef, oe: &OnError) {
    let nname = n.name.value.clone();
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
        if !names.exists(&fb.value) {
            let d = v.err("sherma-ref", format!("`fallback` names node `{}`, which does not exist", fb.value), fb.span);
            d.node = Some(nname.clone());
            set_hint(d, names.hint(&fb.value));
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
