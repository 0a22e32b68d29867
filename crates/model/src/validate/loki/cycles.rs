//! Upstream step 2: cycles through declared edges.

use super::V;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{HashMap, HashSet, VecDeque};
use syntax::source::Span;

impl V<'_> {
    /// Upstream 2: no loop through declared edges; one finding per strongly connected component,
    /// with its shortest loop.
    pub(super) fn cycles(&mut self) {
        let n = self.l.nodes.len();
        let mut pg: DiGraph<usize, ()> = DiGraph::with_capacity(n, 0);
        let ix: Vec<NodeIndex> = (0..n).map(|i| pg.add_node(i)).collect();
        for (i, es) in self.adj.iter().enumerate() {
            for e in es {
                pg.add_edge(ix[i], ix[e.to], ());
            }
        }
        let mut sccs: Vec<Vec<usize>> = petgraph::algo::tarjan_scc(&pg)
            .into_iter()
            .map(|c| {
                let mut v: Vec<usize> = c.into_iter().map(|x| pg[x]).collect();
                v.sort();
                v
            })
            .filter(|c| c.len() > 1 || self.adj[c[0]].iter().any(|e| e.to == c[0]))
            .collect();
        sccs.sort();
        for scc in sccs {
            let Some((path, closing)) = self.cycle_through(scc[0], &scc) else {
                continue;
            };
            let mut names: Vec<String> = path
                .iter()
                .map(|&i| self.l.nodes[i].id.value.clone())
                .collect();
            if names.len() > 60 {
                // Keep huge cycles readable: the first and last 25 steps.
                let cut = names.len() - 50;
                names.splice(25..names.len() - 25, [format!("... ({cut} more)")]);
            }
            let last = path[path.len() - 2];
            let d = self
                .err("loki-cycle", format!("Cycle detected: {}", names.join(" -> ")), closing)
                .node(self.l.nodes[last].id.value.clone())
                .hint(
                    "declared edges (next, routes, on_other, fallback, branch) must not loop back; Loki rejects any such cycle. \
                     Loop through a script instead: it prints {\"_next\": \"<node>\"} to go back (declare the targets in its `x-next`)",
                );
            self.push(d);
        }
    }

    /// The shortest cycle from `s` back to `s` inside `scc`: the node path (s ... s) and the span
    /// of the reference that closes it.
    fn cycle_through(&self, s: usize, scc: &[usize]) -> Option<(Vec<usize>, Span)> {
        let members: HashSet<usize> = scc.iter().copied().collect();
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut seen: HashSet<usize> = HashSet::from([s]);
        let mut q = VecDeque::from([s]);
        while let Some(u) = q.pop_front() {
            for e in &self.adj[u] {
                if e.to == s {
                    let mut path = vec![u];
                    let mut cur = u;
                    while let Some(&p) = parent.get(&cur) {
                        path.push(p);
                        cur = p;
                    }
                    path.reverse();
                    if path[0] != s {
                        path.insert(0, s);
                    }
                    path.push(s);
                    return Some((path, e.span));
                }
                if members.contains(&e.to) && seen.insert(e.to) {
                    parent.insert(e.to, u);
                    q.push_back(e.to);
                }
            }
        }
        None
    }
}
