//! Reachability over the effective routing (what the engine runs): unreachable nodes, and
//! loops no run can leave.

use super::{V, set_hint};
use crate::doc::Document;
use crate::doc::sherma::AgentDef;
use crate::graph::lower_sherma::{EffKind, effective};
use crate::graph::{END, START};
use std::collections::{HashMap, HashSet};

/// Nodes unreachable from the entry, then the loops without an exit.
pub(super) fn reachability(v: &mut V<'_>, doc: &Document, agent: &AgentDef) {
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
    no_exit(v, agent, &eff, &seen);
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
