//! Lower a sherma agent into the IR, applying sherma's two implicit transforms visibly.
//!
//! sherma rewrites the graph before running it (reference/sherma.md §8.4):
//! 1. every `call_llm` that binds tools and has no conditional edge gets a derived
//!    `<name>_tools` tool node, a `has_tool_calls` branch to it, and an edge back;
//! 2. every node with `on_error.fallback` gets a `has_error_fallback` branch on its first
//!    outgoing edge.
//!
//! [`effective`] computes the routing after both transforms: the engine runs exactly this, and
//! the IR draws it with the injected parts marked `derived`.

use super::{EdgeKind, END, GEdge, GNode, Graph, START};
use syntax::diag::Diagnostic;
use crate::doc::sherma::{AgentDef, Expr, NodeArgs, ShermaDoc};
use crate::doc::{Dialect, Document};
use syntax::source::Span;

pub const HAS_TOOL_CALLS: &str = "has_tool_calls";
pub const HAS_ERROR_FALLBACK: &str = "has_error_fallback";

#[derive(Clone, Debug)]
pub enum Cond {
    HasToolCalls,
    HasErrorFallback,
    Cel(Expr),
    /// The branch has no condition (a load error was reported).
    Missing,
}

impl Cond {
    pub fn label(&self) -> String {
        match self {
            Cond::HasToolCalls => HAS_TOOL_CALLS.into(),
            Cond::HasErrorFallback => HAS_ERROR_FALLBACK.into(),
            Cond::Cel(e) => e.text.split_whitespace().collect::<Vec<_>>().join(" "),
            Cond::Missing => "?".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct EffBranch {
    pub condition: Cond,
    pub target: String,
    pub derived: bool,
    pub span: Option<Span>,
}

#[derive(Clone, Debug)]
pub enum EffKind {
    Static { target: String },
    /// Branches in order; the first true wins; otherwise `default` (`__end__` when absent).
    Conditional { branches: Vec<EffBranch>, default: String, default_derived: bool },
}

#[derive(Clone, Debug)]
pub struct EffEdge {
    pub source: String,
    pub kind: EffKind,
    pub derived: bool,
    pub span: Option<Span>,
}

#[derive(Clone, Debug)]
pub struct EffNode {
    pub name: String,
    pub kind: String,
    pub derived: bool,
    /// Index into `AgentDef::nodes` for declared nodes.
    pub decl: Option<usize>,
    /// For a derived tool node: the call_llm it serves.
    pub tools_for: Option<String>,
}

/// An agent's routing after sherma's transforms.
#[derive(Clone, Debug, Default)]
pub struct Effective {
    pub nodes: Vec<EffNode>,
    pub edges: Vec<EffEdge>,
}

impl Effective {
    pub fn node(&self, name: &str) -> Option<&EffNode> {
        self.nodes.iter().find(|n| n.name == name)
    }
    /// Outgoing edges of a node, in order.
    pub fn outgoing<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a EffEdge> + 'a {
        self.edges.iter().filter(move |e| e.source == name)
    }
}

/// Compute the effective routing of `agent`. Name collisions of injected tool nodes are
/// reported in `diags` (file-positioned by the caller's document).
pub fn effective(agent: &AgentDef, doc: Option<&Document>, diags: &mut Vec<Diagnostic>) -> Effective {
    let mut eff = Effective::default();
    for (i, n) in agent.nodes.iter().enumerate() {
        if eff.node(&n.name.value).is_some() {
            continue; // duplicate names are reported by the validator
        }
        eff.nodes.push(EffNode { name: n.name.value.clone(), kind: n.kind.value.clone(), derived: false, decl: Some(i), tools_for: None });
    }
    if let Some(ep) = &agent.entry_point {
        eff.edges.push(EffEdge { source: START.into(), kind: EffKind::Static { target: ep.value.clone() }, derived: false, span: Some(ep.span) });
    }
    for e in &agent.edges {
        let Some(source) = &e.source else { continue };
        let kind = match &e.branches {
            Some(branches) => EffKind::Conditional {
                branches: branches
                    .iter()
                    .filter_map(|b| {
                        let target = b.target.as_ref()?.value.clone();
                        let condition = match &b.condition {
                            Some(c) if c.text.trim() == HAS_TOOL_CALLS => Cond::HasToolCalls,
                            Some(c) if c.text.trim() == HAS_ERROR_FALLBACK => Cond::HasErrorFallback,
                            Some(c) => Cond::Cel(c.clone()),
                            None => Cond::Missing,
                        };
                        Some(EffBranch { condition, target, derived: false, span: Some(b.span) })
                    })
                    .collect(),
                default: e.default.as_ref().map(|d| d.value.clone()).unwrap_or_else(|| END.into()),
                default_derived: e.default.is_none(),
            },
            None => match &e.target {
                Some(t) => EffKind::Static { target: t.value.clone() },
                None => continue, // an edge with neither target nor branches is ignored (sherma)
            },
        };
        eff.edges.push(EffEdge { source: source.value.clone(), kind, derived: false, span: Some(e.span) });
    }

    // Transform 1: auto tool nodes.
    for n in &agent.nodes {
        let NodeArgs::CallLlm(c) = &n.args else { continue };
        if !c.binds_tools() {
            continue;
        }
        let name = n.name.value.clone();
        let has_conditional = agent.edges.iter().any(|e| {
            e.source.as_ref().is_some_and(|s| s.value == name) && e.branches.is_some()
        });
        if has_conditional {
            continue;
        }
        let tools_name = format!("{name}_tools");
        if eff.node(&tools_name).is_some() {
            if let (Some(doc), Some(file)) = (doc, doc.and_then(|d| d.file.as_ref())) {
                let _ = doc;
                let other = agent.node(&tools_name).map(|o| o.name.span).unwrap_or(n.name.span);
                diags.push(
                    Diagnostic::error(
                        "sherma-tool-node-collision",
                        format!("node `{tools_name}` already exists, so the tool node for `{name}` cannot be added"),
                    )
                    .at(file, other)
                    .node(tools_name.clone())
                    .hint(format!("`{name}` binds tools, so sherma adds a tool node named `{tools_name}`; rename this node")),
                );
            }
            continue;
        }
        let pos = eff
            .edges
            .iter()
            .position(|e| e.source == name && matches!(e.kind, EffKind::Static { .. }));
        let (default, span, insert_at) = match pos {
            Some(p) => {
                let removed = eff.edges.remove(p);
                let EffKind::Static { target } = removed.kind else { unreachable!() };
                (target, removed.span, p)
            }
            None => (END.to_string(), None, eff.edges.len()),
        };
        let default_derived = pos.is_none();
        eff.edges.insert(
            insert_at,
            EffEdge {
                source: name.clone(),
                kind: EffKind::Conditional {
                    branches: vec![EffBranch { condition: Cond::HasToolCalls, target: tools_name.clone(), derived: true, span: None }],
                    default,
                    default_derived,
                },
                derived: false,
                span,
            },
        );
        eff.edges.push(EffEdge { source: tools_name.clone(), kind: EffKind::Static { target: name.clone() }, derived: true, span: None });
        eff.nodes.push(EffNode { name: tools_name, kind: "tool_node".into(), derived: true, decl: None, tools_for: Some(name) });
    }

    // Transform 2: error fallback branches.
    for n in &agent.nodes {
        let Some(fb) = n.on_error.as_ref().and_then(|o| o.fallback.as_ref()) else { continue };
        if eff.node(&fb.value).is_none() {
            continue; // reported by the validator
        }
        let name = &n.name.value;
        let Some(first) = eff.edges.iter_mut().find(|e| &e.source == name) else { continue };
        let branch = EffBranch { condition: Cond::HasErrorFallback, target: fb.value.clone(), derived: true, span: Some(fb.span) };
        match &mut first.kind {
            EffKind::Static { target } => {
                let target = target.clone();
                first.kind = EffKind::Conditional { branches: vec![branch], default: target, default_derived: false };
            }
            EffKind::Conditional { branches, .. } => branches.insert(0, branch),
        }
    }
    eff
}

fn summary(agent: &AgentDef, doc: &ShermaDoc, decl: usize) -> String {
    let n = &agent.nodes[decl];
    let one = |s: &str| -> String {
        let line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.chars().count() > 60 { line.chars().take(57).collect::<String>() + "..." } else { line }
    };
    match &n.args {
        NodeArgs::CallLlm(c) => {
            let llm_id = c.llm.as_ref().map(|r| r.id_str().to_string()).or_else(|| doc.default_llm.as_ref().map(|r| r.id_str().to_string()));
            let model = llm_id
                .as_deref()
                .and_then(|id| doc.llms.iter().find(|l| l.id_str() == id))
                .and_then(|l| l.get_str("model_name"))
                .map(str::to_string)
                .or(llm_id)
                .unwrap_or_else(|| "no llm".into());
            let tools = c.tools.as_ref().map(|t| t.len()).unwrap_or(0);
            if tools > 0 { format!("{model} · {tools} tool{}", if tools == 1 { "" } else { "s" }) } else { model }
        }
        NodeArgs::ToolNode { tools } => match tools {
            Some(t) if !t.is_empty() => t.iter().map(|r| r.id_str()).collect::<Vec<_>>().join(", "),
            _ => "all registered tools".into(),
        },
        NodeArgs::CallAgent { agent, .. } => format!("→ {}", agent.as_ref().map(|a| a.id_str()).unwrap_or("?")),
        NodeArgs::DataTransform { expression } => expression.as_ref().map(|e| one(&e.text)).unwrap_or_default(),
        NodeArgs::SetState { values } => one(&values.iter().map(|(k, _)| k.value.as_str()).collect::<Vec<_>>().join(", ")),
        NodeArgs::Interrupt { value } => value.as_ref().map(|e| one(&e.text)).unwrap_or_default(),
        NodeArgs::LoadSkills { skill_ids } => skill_ids.as_ref().map(|e| one(&e.text)).unwrap_or_default(),
        NodeArgs::Custom { .. } => "node_execute hook".into(),
        NodeArgs::Unknown => String::new(),
    }
}

/// Pick the agent to lower: the named one, or the only one.
pub fn select_agent<'a>(doc: &Document, s: &'a ShermaDoc, agent: Option<&str>) -> Result<&'a AgentDef, Diagnostic> {
    let names: Vec<&str> = s.agents.iter().map(|a| a.name.value.as_str()).collect();
    let at = |d: Diagnostic| match &doc.file {
        Some(f) => d.at(f, Span::at(0)),
        None => d.in_file(&doc.path),
    };
    match agent {
        Some(name) => s.agent(name).ok_or_else(|| {
            let mut d = Diagnostic::error("agent-not-found", format!("no agent named `{name}` in this file"));
            d = match syntax::diag::did_you_mean(name, names.iter().copied()) {
                Some(sug) => d.hint(format!("did you mean `{sug}`? Agents here: {}", names.join(", "))),
                None => d.hint(format!("agents in this file: {}", if names.is_empty() { "none".to_string() } else { names.join(", ") })),
            };
            at(d)
        }),
        None => match s.agents.as_slice() {
            [only] => Ok(only),
            [] => Err(at(Diagnostic::error("no-agents", "the file defines no agents"))),
            _ => Err(at(Diagnostic::error("agent-ambiguous", format!("this file defines {} agents; choose one", names.len()))
                .hint(format!("pass --agent with one of: {}", names.join(", "))))),
        },
    }
}

pub fn lower(doc: &Document, s: &ShermaDoc, agent: Option<&str>) -> (Option<Graph>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let a = match select_agent(doc, s, agent) {
        Ok(a) => a,
        Err(d) => return (None, vec![d]),
    };
    (Some(lower_agent(doc, s, a, &mut diags)), diags)
}

/// Build the IR of one agent.
pub fn lower_agent(doc: &Document, s: &ShermaDoc, agent: &AgentDef, diags: &mut Vec<Diagnostic>) -> Graph {
    let eff = effective(agent, Some(doc), diags);
    let mut g = Graph::new(Dialect::Sherma, agent.name.value.clone());
    let start = g.add_node(GNode {
        id: START.into(),
        kind: START.into(),
        derived: false,
        summary: String::new(),
        span: agent.entry_point.as_ref().map(|e| e.span),
        order: 0,
        dynamic_next: false,
    });
    g.entry = Some(start);
    for (i, n) in eff.nodes.iter().enumerate() {
        let (span, summ) = match n.decl {
            Some(d) => (Some(agent.nodes[d].name.span), summary(agent, s, d)),
            None => (None, format!("tools of {}", n.tools_for.as_deref().unwrap_or(""))),
        };
        g.add_node(GNode { id: n.name.clone(), kind: n.kind.clone(), derived: n.derived, summary: summ, span, order: i + 1, dynamic_next: false });
    }
    let mut order_of: std::collections::HashMap<String, usize> = Default::default();
    let ensure_end = |g: &mut Graph| {
        if g.index.get(END).is_none() {
            g.add_node(GNode { id: END.into(), kind: END.into(), derived: false, summary: String::new(), span: None, order: usize::MAX, dynamic_next: false });
        }
        g.index[END]
    };
    for e in &eff.edges {
        let Some(&from) = g.index.get(&e.source) else { continue };
        let add = |g: &mut Graph, target: &str, edge: GEdge| {
            let to = if target == END { Some(ensure_end(g)) } else { g.index.get(target).copied() };
            if let Some(to) = to {
                g.add_edge(from, to, edge);
            }
        };
        let mut next_order = || {
            let o = order_of.entry(e.source.clone()).or_insert(0);
            *o += 1;
            *o - 1
        };
        match &e.kind {
            EffKind::Static { target } => {
                let kind = if e.source == START { EdgeKind::Entry } else { EdgeKind::Static };
                let order = next_order();
                add(&mut g, target, GEdge { kind, label: None, derived: e.derived, dynamic: false, fanout: false, order, span: e.span });
            }
            EffKind::Conditional { branches, default, default_derived } => {
                for b in branches {
                    let kind = if matches!(b.condition, Cond::HasErrorFallback) { EdgeKind::Fallback } else { EdgeKind::Branch };
                    let order = next_order();
                    add(&mut g, &b.target, GEdge { kind, label: Some(b.condition.label()), derived: b.derived, dynamic: false, fanout: false, order, span: b.span });
                }
                let order = next_order();
                add(&mut g, default, GEdge { kind: EdgeKind::Default, label: Some("default".into()), derived: *default_derived, dynamic: false, fanout: false, order, span: e.span });
            }
        }
    }
    g
}
