//! Loki validation: upstream's checks in upstream's order (coyote 0.10.3's 22; reference/loki.md
//! §4 and §11), with positions and hints, then what users need and upstream only finds at run
//! time (or never).
//!
//! Upstream order: 1 references, 2 cycles, 3 reachability, 4 terminal nodes, 5 scripts,
//! 6 agents (and agent `inputs`), 7 approval routes, 8 rag, 9 llm nodes (tools, `mcp_tools`,
//! models), 10 llm skills, 11 max_attempts, 12 fallback_capture, 13 output_schema_properties,
//! 14 max_concurrency, 15 max_concurrency_template, 16 orchestration_limits, 17 timeouts (and
//! the other caps `0` disables), 18 variable_shadowing, 19 map_subgraphs, 20 parallel user
//! interaction, 21 parallel writes, 22 parallel reads. Then: `next` rules, script extensions,
//! template lint, unknown state keys, a map chain that never writes its output key, a seeded
//! `initial_prompt`, `teammates` without peers.
//!
//! One file per family of checks; `RULES` lists them in the order [`validate`] runs them.

mod agents;
mod approvals;
mod cycles;
mod fallbacks;
mod limits;
mod llm;
mod map;
mod next;
mod parallel;
mod rag;
mod reachability;
mod references;
mod scripts;
mod skills;
mod state;
mod templates;
#[cfg(test)]
mod tests;


use crate::doc::Document;
use crate::doc::loki::{LokiDoc, LokiNode, NodeBody};
use crate::graph::{EdgeKind, Graph};
use std::collections::HashMap;
use std::rc::Rc;
use syntax::diag::Diagnostic;
use syntax::source::{SourceFile, Span};

/// One check: it reads the graph through `V` and adds its findings.
type Rule = fn(&mut V<'_>);

/// Every check, in the order [`validate`] runs them (the tests check that upstream's come in
/// upstream's order).
const RULES: &[Rule] = &[
    // Upstream's validator (reference/loki.md §4), in its order.
    |v| v.references(),               // 1
    |v| v.cycles(),                   // 2
    |v| v.reachability(),             // 3
    |v| v.terminals(),                // 4
    |v| v.scripts(),                  // 5
    |v| v.agents(),                   // 6
    |v| v.approvals(),                // 7
    |v| v.rag(),                      // 8
    |v| v.llm_tools_and_models(),     // 9
    |v| v.skills(),                   // 10
    |v| v.max_attempts(),             // 11
    |v| v.fallback_capture(),         // 12
    |v| v.output_schema_properties(), // 13
    |v| v.concurrency(),              // 14
    |v| v.concurrency_template(),     // 15
    |v| v.orchestration_limits(),     // 16
    |v| v.timeouts(),                 // 17
    |v| v.variable_shadowing(),       // 18
    |v| v.map_subgraphs(),            // 19
    |v| v.parallel_ui(),              // 20
    |v| v.parallel_writes(),          // 21
    |v| v.parallel_reads(),           // 22
    // Beyond upstream's validator.
    |v| v.next_rules(),
    |v| v.script_extensions(),
    |v| v.templates(),
    |v| v.state_keys(),
    |v| v.map_output_trap(),
    |v| v.seeded_initial_prompt(),
    |v| v.lonely_teammates(),
];

/// Runs every check of `RULES` over one Loki graph (`graph` is its IR), adding the findings to
/// `diags`.
pub fn validate(doc: &Document, l: &LokiDoc, graph: &Graph, diags: &mut Vec<Diagnostic>) {
    let Some(file) = doc.file.as_ref() else {
        return;
    };
    let mut v = V::new(file, l, graph, diags);
    for rule in RULES {
        rule(&mut v);
    }
}

/// One declared edge: target node index, the span of the reference, and its kind.
#[derive(Clone, Debug)]
struct DEdge {
    to: usize,
    span: Span,
    /// A map's `branch` (into its per-item chain), not a step of the main flow.
    branch: bool,
}

/// The targets of one fan-out (`next` list with more than one entry).
struct Group<'a> {
    source: &'a LokiNode,
    /// Distinct existing targets, in `next` order, with the span of their first entry.
    members: Vec<(usize, Span)>,
}

struct V<'a> {
    file: &'a SourceFile,
    l: &'a LokiDoc,
    diags: &'a mut Vec<Diagnostic>,
    /// Declared edges per node (upstream's edge set: next, routes, on_other, fallbacks, branch).
    adj: Vec<Vec<DEdge>>,
    /// Dynamic `_next` edges known from `x-next` or the script source (node index -> targets).
    dyn_adj: Vec<Vec<usize>>,
    has_scripts: bool,
    /// Node id -> declaration index.
    ids: HashMap<&'a str, usize>,
    /// The fan-outs, for the parallel checks.
    groups: Rc<[Group<'a>]>,
}

impl<'a> V<'a> {
    fn new(
        file: &'a SourceFile,
        l: &'a LokiDoc,
        graph: &'a Graph,
        diags: &'a mut Vec<Diagnostic>,
    ) -> V<'a> {
        let ids: HashMap<&'a str, usize> = l
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.value.as_str(), i))
            .collect();
        let mut adj = vec![Vec::new(); l.nodes.len()];
        for (i, n) in l.nodes.iter().enumerate() {
            for t in n.targets() {
                if let Some(&j) = ids.get(t.to.value.as_str()) {
                    adj[i].push(DEdge {
                        to: j,
                        span: t.to.span,
                        branch: t.kind == crate::doc::loki::TargetKind::MapBranch,
                    });
                }
            }
        }
        let mut dyn_adj = vec![Vec::new(); l.nodes.len()];
        for e in graph.g.edge_indices() {
            let w = &graph.g[e];
            if w.kind != EdgeKind::Dynamic {
                continue;
            }
            let Some((s, t)) = graph.g.edge_endpoints(e) else {
                continue;
            };
            if let (Some(i), Some(j)) = (
                ids.get(graph.g[s].id.as_str()).copied(),
                ids.get(graph.g[t].id.as_str()).copied(),
            ) {
                dyn_adj[i].push(j);
            }
        }
        let has_scripts = l
            .nodes
            .iter()
            .any(|n| matches!(n.body, NodeBody::Script(_)));
        let mut v = V {
            file,
            l,
            diags,
            adj,
            dyn_adj,
            has_scripts,
            ids,
            groups: Rc::from(Vec::new()),
        };
        v.groups = v.fanout_groups().into();
        v
    }

    fn idx(&self, id: &str) -> Option<usize> {
        self.ids.get(id).copied()
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn err(&self, code: &str, msg: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::error(code, msg).at(self.file, span)
    }

    fn warn(&self, code: &str, msg: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::warning(code, msg).at(self.file, span)
    }

    fn start_index(&self) -> Option<usize> {
        self.l.start.as_ref().and_then(|s| self.idx(&s.value))
    }
}
