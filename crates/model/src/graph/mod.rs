//! The dialect-neutral graph IR that both dialects lower into.
//!
//! Validation, export, layout, the canvas and the executor read this. Implicit structure is made
//! explicit and marked `derived`: sherma's auto-injected `<node>_tools` nodes, its
//! `has_tool_calls` / `has_error_fallback` branches; Loki's approval routes, `on_other`,
//! `fallback` and script `_next` (dynamic) edges.

pub mod export;
pub mod lower_lllm;
pub mod lower_loki;
pub mod lower_sherma;

use crate::doc::{Dialect, Document, Model};
use syntax::source::Span;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use serde::Serialize;
use std::collections::HashMap;

pub const START: &str = "__start__";
pub const END: &str = "__end__";

/// What kind of connection an edge is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// The entry edge from `__start__` (sherma `entry_point` or a `__start__` edge).
    Entry,
    /// A plain, unconditional edge (sherma `target`).
    Static,
    /// A conditional branch; the label is the condition.
    Branch,
    /// The `default` of a conditional edge.
    Default,
    /// Loki `next` (one of several targets when it is a fan-out list).
    Next,
    /// Loki approval route; the label is the option.
    Route,
    /// Loki approval `on_other`.
    OnOther,
    /// Error fallback (Loki `fallback`, sherma `on_error.fallback`).
    Fallback,
    /// Loki map node → its branch node ("calls").
    MapBranch,
    /// Loki script `_next`: decided at run time by the script's output.
    Dynamic,
    /// LLLM: a config inherits from its `base`; an agent takes `global`'s defaults.
    Inherits,
}

impl EdgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Entry => "entry",
            EdgeKind::Static => "static",
            EdgeKind::Branch => "branch",
            EdgeKind::Default => "default",
            EdgeKind::Next => "next",
            EdgeKind::Route => "route",
            EdgeKind::OnOther => "on_other",
            EdgeKind::Fallback => "fallback",
            EdgeKind::MapBranch => "map_branch",
            EdgeKind::Dynamic => "dynamic",
            EdgeKind::Inherits => "inherits",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct GNode {
    pub id: String,
    /// The node type as written (`call_llm`, `script`, ...), or `__start__` / `__end__`.
    pub kind: String,
    /// Not written in the file: made explicit by lowering (auto tool nodes, start/end markers).
    pub derived: bool,
    /// A one-line summary for the canvas (model, script, question, ...).
    pub summary: String,
    /// Where the node is declared (its name/key).
    pub span: Option<Span>,
    /// Declaration order among the declared nodes.
    pub order: usize,
    /// The node may route somewhere decided at run time (Loki script `_next`).
    pub dynamic_next: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct GEdge {
    pub kind: EdgeKind,
    /// Condition text, approval option, `has_tool_calls`, `default`, ...
    pub label: Option<String>,
    pub derived: bool,
    pub dynamic: bool,
    /// Part of a Loki fan-out (`next` list with more than one target).
    pub fanout: bool,
    /// Position among the outgoing edges of its source, in routing order.
    pub order: usize,
    pub span: Option<Span>,
}

/// A Loki map's per-item lane (coyote 0.10.3 branch chains): the map and the nodes of its
/// chain (the branch entry first, then breadth-first over `next` and `fallback`).
#[derive(Clone, Debug, Serialize)]
pub struct Lane {
    pub map: String,
    pub nodes: Vec<String>,
}

/// One agent's graph.
#[derive(Debug)]
pub struct Graph {
    pub dialect: Dialect,
    /// Agent name (sherma agent key, Loki graph name).
    pub agent: String,
    pub g: StableDiGraph<GNode, GEdge>,
    pub index: HashMap<String, NodeIndex>,
    /// The node execution starts at (sherma: `__start__`; Loki: the `start` node).
    pub entry: Option<NodeIndex>,
    /// Loki map lanes, maps in declaration order.
    pub lanes: Vec<Lane>,
}

impl Graph {
    pub fn new(dialect: Dialect, agent: impl Into<String>) -> Graph {
        Graph { dialect, agent: agent.into(), g: StableDiGraph::new(), index: HashMap::new(), entry: None, lanes: Vec::new() }
    }

    /// Add a node; a second node with the same id is not added (the first is returned).
    pub fn add_node(&mut self, node: GNode) -> NodeIndex {
        if let Some(&ix) = self.index.get(&node.id) {
            return ix;
        }
        let id = node.id.clone();
        let ix = self.g.add_node(node);
        self.index.insert(id, ix);
        ix
    }

    /// The maps whose lanes hold `id`, in declaration order (a chain node may be shared, e.g. one
    /// fault handler for several maps).
    pub fn lanes_of(&self, id: &str) -> Vec<&str> {
        self.lanes.iter().filter(|l| l.nodes.iter().any(|n| n == id)).map(|l| l.map.as_str()).collect()
    }

    pub fn node(&self, id: &str) -> Option<&GNode> {
        self.index.get(id).map(|&ix| &self.g[ix])
    }

    pub fn add_edge(&mut self, from: NodeIndex, to: NodeIndex, edge: GEdge) {
        self.g.add_edge(from, to, edge);
    }

    /// Nodes in a stable order: start marker, declared nodes in declaration order, derived, end.
    pub fn nodes_ordered(&self) -> Vec<NodeIndex> {
        let mut v: Vec<NodeIndex> = self.g.node_indices().collect();
        v.sort_by_key(|&ix| {
            let n = &self.g[ix];
            let rank = if n.id == START {
                0
            } else if n.id == END {
                3
            } else if n.derived {
                2
            } else {
                1
            };
            (rank, n.order, n.id.clone())
        });
        v
    }

    /// Edges in a stable order: by source (node order), then routing order.
    pub fn edges_ordered(&self) -> Vec<(NodeIndex, NodeIndex, &GEdge)> {
        let mut out = Vec::new();
        for ix in self.nodes_ordered() {
            let mut es: Vec<_> = self.g.edges(ix).map(|e| (e.source(), e.target(), e.weight())).collect();
            es.sort_by_key(|(_, t, w)| (w.order, self.g[*t].order, self.g[*t].id.clone()));
            out.extend(es);
        }
        out
    }

    /// Ids of nodes reachable from the entry (all edge kinds, dynamic included).
    pub fn reachable(&self) -> std::collections::HashSet<NodeIndex> {
        let mut seen = std::collections::HashSet::new();
        if let Some(entry) = self.entry {
            let mut dfs = petgraph::visit::Dfs::new(&self.g, entry);
            while let Some(n) = dfs.next(&self.g) {
                seen.insert(n);
            }
        }
        seen
    }
}

/// Names of the agents a document defines (sherma: every key of `agents`; Loki: the graph;
/// LLLM: the config, drawn whole).
pub fn agent_names(doc: &Document) -> Vec<String> {
    match &doc.model {
        Model::Sherma(s) => s.agents.iter().map(|a| a.name.value.clone()).collect(),
        Model::Loki(l) => vec![l.name.clone().unwrap_or_else(|| "graph".into())],
        // One graph per config, named after the file.
        Model::Lllm(_) => vec![lower_lllm::graph_name(doc)],
        Model::Unknown => Vec::new(),
    }
}

/// The agents a view may be drawn for: [`agent_names`], and for an LLLM config each of its
/// agents too (drawn with the call loop a run of it steps through).
pub fn selectable_agents(doc: &Document) -> Vec<String> {
    let mut out = agent_names(doc);
    if let Model::Lllm(l) = &doc.model {
        out.extend(l.effective.agents.iter().map(|a| a.name.clone()).filter(|a| !out.contains(a)).collect::<Vec<_>>());
    }
    out
}

/// Lower one agent of a document into the IR. For sherma, `agent` picks the agent (a file with a
/// single agent needs none). Returns `None` when the document has no usable agent; the reason is
/// in the returned diagnostics.
pub fn lower(doc: &Document, agent: Option<&str>) -> (Option<Graph>, Vec<syntax::diag::Diagnostic>) {
    match &doc.model {
        Model::Sherma(s) => lower_sherma::lower(doc, s, agent),
        Model::Loki(l) => (Some(lower_loki::lower(doc, l)), Vec::new()),
        Model::Lllm(l) => lower_lllm::lower(doc, l, agent),
        Model::Unknown => (None, Vec::new()),
    }
}
