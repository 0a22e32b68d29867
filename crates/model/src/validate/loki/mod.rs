//! Loki validation: upstream's checks (reference/loki.md §4) in upstream's order, with positions,
//! then what users need and upstream only finds at run time (or never).
//!
//! Upstream order: 1 references, 2 cycles, 3 reachability, 4 terminals, 5 scripts, 6 agents,
//! 7 approvals, 8 rag, 9 llm tools/model, 10 skills, 11 concurrency, 12 map branch contract,
//! 13 parallel UI, 14 parallel writes, 15 parallel reads. Then: `next` rules, zero limits,
//! script extensions, template lint, unknown state keys, the `output` null leak of §9.1, the
//! map/llm-branch trap of §9.2 and a seeded `initial_prompt`.
//!
//! One file per family of checks; `RULES` lists them in the order [`validate`] runs them.

mod agents;
mod approvals;
mod cycles;
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
    |v| v.references(),           // 1
    |v| v.cycles(),               // 2
    |v| v.reachability(),         // 3
    |v| v.terminals(),            // 4
    |v| v.scripts(),              // 5
    |v| v.agents(),               // 6
    |v| v.approvals(),            // 7
    |v| v.rag(),                  // 8
    |v| v.llm_tools_and_models(), // 9
    |v| v.skills(),               // 10
    |v| v.concurrency(),          // 11
    |v| v.map_branches(),         // 12
    |v| v.parallel_ui(),          // 13
    |v| v.parallel_writes(),      // 14
    |v| v.parallel_reads(),       // 15
    // Beyond upstream's validator.
    |v| v.next_rules(),
    |v| v.zero_limits(),
    |v| v.script_extensions(),
    |v| v.templates(),
    |v| v.state_keys(),
    |v| v.null_leak(),
    |v| v.map_output_trap(),
    |v| v.seeded_initial_prompt(),
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

    fn node_by(&self, id: &str) -> Option<&'a LokiNode> {
        let l: &'a LokiDoc = self.l;
        self.idx(id).map(|i| &l.nodes[i])
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
