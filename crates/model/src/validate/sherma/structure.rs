//! The shape of an agent: node names (present, unique, not reserved), state fields (unique),
//! the entry, edge sources and targets, and the `messages` field call_llm and interrupt nodes need.

use super::{Names, V, set_hint};
use crate::doc::Sp;
use crate::doc::sherma::AgentDef;
use crate::graph::{END, START};
use std::collections::HashMap;
use syntax::source::Span;

/// Node names: present, unique.
pub(super) fn node_names(v: &mut V<'_>, agent: &AgentDef) {
    let file = v.file;
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
}

/// State fields: unique names (sherma builds its state class from the list; a repeat
/// silently replaces the first declaration's type and default).
pub(super) fn state_fields(v: &mut V<'_>, agent: &AgentDef) {
    let file = v.file;
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
}

/// The entry: exactly one of `entry_point` and an edge from `__start__`, naming a node.
pub(super) fn entry(v: &mut V<'_>, agent: &AgentDef, names: &Names<'_>) {
    let agent_label = &names.agent_label;
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
        (Some(ep), _) if !names.exists(&ep.value) => {
            let d = v.err("sherma-ref", format!("`entry_point` names node `{}`, which does not exist", ep.value), ep.span);
            set_hint(d, names.hint(&ep.value));
        }
        _ => {}
    }
}

/// Edges: sources and targets that are nodes (or `__start__` / `__end__` where they may be).
pub(super) fn edges(v: &mut V<'_>, agent: &AgentDef, names: &Names<'_>) {
    for e in &agent.edges {
        if let Some(src) = &e.source {
            if src.value == END {
                let d = v.err("sherma-ref", "an edge cannot start at `__end__`".into(), src.span);
                set_hint(d, "`__end__` is only a target");
            } else if src.value != START && !names.exists(&src.value) {
                let d = v.err("sherma-ref", format!("edge source `{}` is not a node", src.value), src.span);
                set_hint(d, names.hint(&src.value));
            }
        }
        match &e.branches {
            Some(branches) => {
                if let Some(t) = &e.target {
                    let d = v.warn("sherma-target-ignored", "`target` is ignored because the edge has `branches`".into(), t.span);
                    set_hint(d, "move this target into `default:`, or remove it");
                }
                for b in branches {
                    if let Some(t) = &b.target {
                        check_target(v, names, t, "branch target");
                    }
                }
                if let Some(d) = &e.default {
                    check_target(v, names, d, "`default`");
                }
            }
            None => match &e.target {
                Some(t) => check_target(v, names, t, "edge target"),
                None => {
                    let f = v.file;
                    let d = v.warn("sherma-edge-empty", "edge has neither `target` nor `branches`; it is ignored".into(), crate::doc::schema::head_span(f, &syntax::yaml::YNode { span: e.span, kind: syntax::yaml::YKind::Bad }));
                    set_hint(d, "add `target: <node>` (or `__end__`)");
                }
            },
        }
    }
}

fn check_target(v: &mut V<'_>, names: &Names<'_>, t: &Sp<String>, what: &str) {
    if t.value == START {
        let d = v.err("sherma-ref", format!("{what} cannot be `__start__`"), t.span);
        set_hint(d, "`__start__` is only a source");
    } else if t.value != END && !names.exists(&t.value) {
        let d = v.err("sherma-ref", format!("{what} `{}` is not a node", t.value), t.span);
        set_hint(d, names.hint(&t.value));
    }
}

/// A call_llm or interrupt node needs a `messages` state field.
pub(super) fn messages_field(v: &mut V<'_>, agent: &AgentDef, names: &Names<'_>) {
    let agent_label = &names.agent_label;
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
}
