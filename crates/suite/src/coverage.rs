//! Routing coverage: how often each node of an agent's graph ran and each edge (static edge,
//! branch, default, route, `on_other`, fallback, `_next`, map branch) was taken across a
//! suite's runs, from the runs' events mapped onto the graph IR (`model::graph`). Never-taken
//! edges and never-run nodes are what the suite does not prove.

use model::graph::{END, EdgeKind, GEdge, Graph, START};
use runtime::events::{Event, EventBody, RouteReason};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use ts_rs::TS;

/// How often one node ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct NodeCount {
    pub id: String,
    pub kind: String,
    /// Made explicit by lowering (sherma's `<node>_tools`, start and end markers).
    pub derived: bool,
    pub count: u64,
}

/// How often one edge was taken; `index` is its position in the graph's edge list (the order
/// of `switchyard graph --format json` and the canvas).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct EdgeCount {
    pub index: u32,
    pub from: String,
    pub to: String,
    /// `entry`, `static`, `branch`, `default`, `next`, `route`, `on_other`, `fallback`,
    /// `map_branch`, `dynamic`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub label: Option<String>,
    pub derived: bool,
    pub count: u64,
}

/// A route a run took that no edge of the graph stands for (a Loki script's `_next` to a node
/// it does not declare, say).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct OtherRoute {
    pub from: String,
    pub to: String,
    pub reason: String,
    pub count: u64,
}

/// Routing coverage of one agent over the runs of a suite.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct Coverage {
    /// The agent (sherma agent id, Loki graph name).
    pub agent: String,
    /// The runs counted.
    pub runs: u64,
    /// Every node of the graph, in the graph's order.
    pub nodes: Vec<NodeCount>,
    /// Every edge of the graph, in the graph's order.
    pub edges: Vec<EdgeCount>,
    pub other_routes: Vec<OtherRoute>,
    pub nodes_covered: u32,
    pub edges_covered: u32,
}

impl Coverage {
    /// The nodes that never ran (start and end markers included).
    pub fn never_run(&self) -> impl Iterator<Item = &NodeCount> {
        self.nodes.iter().filter(|n| n.count == 0)
    }
    /// The edges never taken.
    pub fn never_taken(&self) -> impl Iterator<Item = &EdgeCount> {
        self.edges.iter().filter(|e| e.count == 0)
    }
    /// Add another run's counts (the same graph).
    pub fn merge(&mut self, other: &Coverage) {
        self.runs += other.runs;
        for (a, b) in self.nodes.iter_mut().zip(&other.nodes) {
            a.count += b.count;
        }
        for (a, b) in self.edges.iter_mut().zip(&other.edges) {
            a.count += b.count;
        }
        for o in &other.other_routes {
            match self.other_routes.iter_mut().find(|r| r.from == o.from && r.to == o.to && r.reason == o.reason) {
                Some(r) => r.count += o.count,
                None => self.other_routes.push(o.clone()),
            }
        }
        self.totals();
    }
    fn totals(&mut self) {
        self.nodes_covered = self.nodes.iter().filter(|n| n.count > 0).count() as u32;
        self.edges_covered = self.edges.iter().filter(|e| e.count > 0).count() as u32;
    }
}

/// The edges from `from` to `to`.
pub fn edges_between<'g>(g: &'g Graph, from: &str, to: &str) -> Vec<&'g GEdge> {
    g.edges_ordered().into_iter().filter(|(a, b, _)| g.g[*a].id == from && g.g[*b].id == to).map(|(_, _, e)| e).collect()
}

/// `a -> b` for each edge out of `from`, for hints.
pub fn edges_out(g: &Graph, from: &str) -> Vec<String> {
    g.edges_ordered()
        .into_iter()
        .filter(|(a, _, _)| g.g[*a].id == from)
        .map(|(a, b, _)| format!("{} -> {}", g.g[a].id, g.g[b].id))
        .collect()
}

/// Empty coverage of `g`: every node and edge with count 0.
pub fn empty(g: &Graph) -> Coverage {
    let nodes = g
        .nodes_ordered()
        .into_iter()
        .map(|ix| {
            let n = &g.g[ix];
            NodeCount { id: n.id.clone(), kind: n.kind.clone(), derived: n.derived, count: 0 }
        })
        .collect();
    let edges = g
        .edges_ordered()
        .into_iter()
        .enumerate()
        .map(|(i, (a, b, e))| EdgeCount {
            index: i as u32,
            from: g.g[a].id.clone(),
            to: g.g[b].id.clone(),
            kind: e.kind.as_str().to_string(),
            label: e.label.clone(),
            derived: e.derived,
            count: 0,
        })
        .collect();
    Coverage { agent: g.agent.clone(), nodes, edges, ..Coverage::default() }
}

/// A route event as the edge kinds it can stand for.
fn kinds_for(reason: &RouteReason) -> &'static [EdgeKind] {
    match reason {
        RouteReason::Static => &[EdgeKind::Static, EdgeKind::Next, EdgeKind::Entry],
        RouteReason::Branch { .. } => &[EdgeKind::Branch],
        RouteReason::Default => &[EdgeKind::Default],
        RouteReason::Next => &[EdgeKind::Dynamic, EdgeKind::Next, EdgeKind::Static],
        RouteReason::Fallback => &[EdgeKind::Fallback],
        RouteReason::OnOther => &[EdgeKind::OnOther],
        RouteReason::RouteOption { .. } => &[EdgeKind::Route],
    }
}

/// The index (in [`Coverage::edges`]) of the edge a route event took, if the graph has one.
pub fn edge_of(cov: &Coverage, from: &str, to: &str, reason: &RouteReason) -> Option<usize> {
    let cands: Vec<usize> = cov.edges.iter().enumerate().filter(|(_, e)| e.from == from && e.to == to).map(|(i, _)| i).collect();
    let kinds = kinds_for(reason);
    let kind_ok = |i: &usize| kinds.iter().any(|k| k.as_str() == cov.edges[*i].kind);
    let picked = match reason {
        RouteReason::Branch { index, condition } => {
            // By the condition's text; else the index-th branch out of `from`.
            cands.iter().copied().filter(kind_ok).find(|i| cov.edges[*i].label.as_deref() == Some(condition.as_str())).or_else(|| {
                let branches: Vec<usize> =
                    cov.edges.iter().enumerate().filter(|(_, e)| e.from == from && e.kind == "branch").map(|(i, _)| i).collect();
                branches.get(*index).copied().filter(|i| cov.edges[*i].to == to)
            })
        }
        RouteReason::RouteOption { option } => {
            cands.iter().copied().filter(kind_ok).find(|i| cov.edges[*i].label.as_deref() == Some(option.as_str()))
        }
        _ => cands.iter().copied().find(kind_ok),
    };
    picked.or_else(|| (cands.len() == 1).then(|| cands[0]))
}

/// Coverage of one run's events (`root` is the run's id). Events of Loki map items
/// (`<root>/<map>/<item>`) count for the map's lane; other nested runs (sub-agents) are other
/// graphs and are not counted.
pub fn of_run(g: &Graph, root: &str, events: &[Event]) -> Coverage {
    let mut cov = empty(g);
    cov.runs = 1;
    let node_ix: HashMap<&str, usize> = cov.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let lanes: HashMap<&str, &str> = g.lanes.iter().filter_map(|l| l.nodes.first().map(|first| (l.map.as_str(), first.as_str()))).collect();
    let mut items_seen: HashSet<&str> = HashSet::new();
    let mut entered: HashSet<(&str, u64, &str)> = HashSet::new();
    let mut started = false;
    let mut counts_n = vec![0u64; cov.nodes.len()];
    let mut counts_e = vec![0u64; cov.edges.len()];
    let mut others: Vec<OtherRoute> = Vec::new();
    for ev in events {
        let lane_map = if ev.run == root {
            None
        } else {
            // `<root>/<map>/<item>`: one item of a map's lane.
            match ev.run.strip_prefix(root).and_then(|r| r.strip_prefix('/')).and_then(|r| r.split_once('/')) {
                Some((map, item)) if lanes.contains_key(map) && !item.contains('/') => Some(map),
                _ => continue,
            }
        };
        match &ev.body {
            EventBody::NodeEnter { node, step, .. } => {
                // A node that asked a question enters again at the same step when answered.
                if !entered.insert((ev.run.as_str(), *step, node.as_str())) {
                    continue;
                }
                if let Some(&i) = node_ix.get(node.as_str()) {
                    counts_n[i] += 1;
                }
                if lane_map.is_none() && !started {
                    started = true;
                    // The entry edge (`__start__` -> the first node) is taken once per run.
                    if let Some(&s) = node_ix.get(START) {
                        counts_n[s] += 1;
                        if let Some(e) = edge_of(&cov, START, node, &RouteReason::Static) {
                            counts_e[e] += 1;
                        }
                    }
                }
                if let Some(map) = lane_map
                    && items_seen.insert(ev.run.as_str())
                    && let Some(e) = edge_of(&cov, map, lanes[map], &RouteReason::Static)
                        .or_else(|| cov.edges.iter().position(|x| x.from == map && x.to == lanes[map] && x.kind == "map_branch"))
                {
                    counts_e[e] += 1;
                }
            }
            EventBody::Route { from, to, reason } => {
                match edge_of(&cov, from, to, reason) {
                    Some(e) => counts_e[e] += 1,
                    None => {
                        let r = runtime::narrate::reason_text(reason);
                        match others.iter_mut().find(|o| o.from == *from && o.to == *to && o.reason == r) {
                            Some(o) => o.count += 1,
                            None => others.push(OtherRoute { from: from.clone(), to: to.clone(), reason: r, count: 1 }),
                        }
                    }
                }
                if to == END
                    && let Some(&i) = node_ix.get(END)
                {
                    counts_n[i] += 1;
                }
            }
            _ => {}
        }
    }
    for (n, c) in cov.nodes.iter_mut().zip(counts_n) {
        n.count = c;
    }
    for (e, c) in cov.edges.iter_mut().zip(counts_e) {
        e.count = c;
    }
    cov.other_routes = others;
    cov.totals();
    cov
}

/// The text `switchyard test --coverage` prints for one agent.
pub fn to_text(cov: &Coverage) -> String {
    let mut out = format!(
        "coverage of `{}` over {} run{}: {}/{} nodes ran, {}/{} edges taken\n",
        cov.agent,
        cov.runs,
        if cov.runs == 1 { "" } else { "s" },
        cov.nodes_covered,
        cov.nodes.len(),
        cov.edges_covered,
        cov.edges.len()
    );
    for n in &cov.nodes {
        out.push_str(&format!("  node {:<28} {:>5}{}\n", n.id, n.count, if n.count == 0 { "  never ran" } else { "" }));
    }
    for e in &cov.edges {
        let label = e.label.as_deref().map(|l| format!(" [{}]", short(l))).unwrap_or_default();
        out.push_str(&format!(
            "  edge {:<40} {:>5}{}\n",
            format!("{} -> {} ({}){label}", e.from, e.to, e.kind),
            e.count,
            if e.count == 0 { "  never taken" } else { "" }
        ));
    }
    for o in &cov.other_routes {
        out.push_str(&format!("  route {} -> {} ({}) {:>5}  not an edge of the graph\n", o.from, o.to, o.reason, o.count));
    }
    out
}

fn short(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 48 { format!("{}…", one.chars().take(47).collect::<String>()) } else { one }
}
