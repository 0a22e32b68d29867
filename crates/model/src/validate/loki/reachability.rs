//! Upstream steps 3 and 4: unreachable nodes, and end nodes (present, reachable).

use super::V;
use crate::doc::loki::NodeBody;
use std::collections::VecDeque;

impl V<'_> {
    /// Nodes reachable from `start` over declared and known dynamic edges.
    fn reachable(&self) -> Vec<bool> {
        let mut seen = vec![false; self.l.nodes.len()];
        let Some(s) = self.start_index() else {
            return seen;
        };
        let mut q = VecDeque::from([s]);
        seen[s] = true;
        while let Some(u) = q.pop_front() {
            let next = self.adj[u]
                .iter()
                .map(|e| e.to)
                .chain(self.dyn_adj[u].iter().copied());
            for w in next {
                if !seen[w] {
                    seen[w] = true;
                    q.push_back(w);
                }
            }
        }
        seen
    }

    /// Upstream 3: nodes unreachable from `start` over declared and known dynamic edges.
    pub(super) fn reachability(&mut self) {
        if self.start_index().is_none() {
            return;
        }
        let seen = self.reachable();
        for (i, n) in self.l.nodes.iter().enumerate() {
            if seen[i] {
                continue;
            }
            let d = if self.has_scripts {
                self.warn("loki-unreachable", "Node is unreachable from the start node via declared edges", n.id.span).hint(format!(
                    "if a script routes here with `_next`, list `{}` in that script node's `x-next: [...]` (a Switchyard key Loki ignores); otherwise connect it with `next`, a route or a fallback, or remove it",
                    n.id.value
                ))
            } else {
                self.warn(
                    "loki-unreachable",
                    "Node is unreachable from the start node",
                    n.id.span,
                )
                .hint("connect it with `next`, an approval route or a fallback, or remove it")
            };
            let d = d.node(n.id.value.clone());
            self.push(d);
        }
    }

    /// Upstream 4: the graph has an end node, and one is reachable.
    pub(super) fn terminals(&mut self) {
        let ends: Vec<usize> = (0..self.l.nodes.len())
            .filter(|&i| matches!(self.l.nodes[i].body, NodeBody::End(_)))
            .collect();
        if ends.is_empty() {
            if self.l.nodes.is_empty() {
                return;
            }
            let d = self
                .err("loki-no-end", "Graph has no end nodes; execution would never terminate", self.l.nodes_span)
                .hint("add a node with `type: end` (its `output` is the graph's result) and route to it");
            self.push(d);
            return;
        }
        let Some(start) = &self.l.start else { return };
        if self.start_index().is_none() {
            return;
        }
        let seen = self.reachable();
        if !ends.iter().any(|&i| seen[i]) {
            let (msg, hint) = if self.has_scripts {
                (
                    "No end node is reachable from the start node via declared edges",
                    "a script's `_next` may still route to one; declare such targets in the script node's `x-next: [...]`",
                )
            } else {
                (
                    "No end node is reachable from the start node",
                    "route some path from the start node to an `end` node",
                )
            };
            let d = self
                .warn("loki-end-unreachable", msg, start.span)
                .hint(hint);
            self.push(d);
        }
    }
}
