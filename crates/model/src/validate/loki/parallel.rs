//! Fan-outs: user interaction, writes and reads in parallel branches (upstream steps 13 to
//! 15), and the `output` null leak of reference §9.1.

use super::{Group, V};
use crate::doc::loki::{LokiDoc, NodeBody};
use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;
use syntax::source::Span;

impl<'a> V<'a> {
    /// The fan-outs of the graph (`next` lists of more than one entry), computed once for steps
    /// 13 to 15 and the null leak.
    pub(super) fn fanout_groups(&self) -> Vec<Group<'a>> {
        let l: &'a LokiDoc = self.l;
        let mut out = Vec::new();
        for n in &l.nodes {
            if n.next.len() < 2 {
                continue;
            }
            let mut members: Vec<(usize, Span)> = Vec::new();
            for t in &n.next {
                if let Some(j) = self.idx(&t.value)
                    && !members.iter().any(|(m, _)| *m == j)
                {
                    members.push((j, t.span));
                }
            }
            out.push(Group { source: n, members });
        }
        out
    }

    /// Upstream 13: no approval or input node is an immediate target of a fan-out.
    pub(super) fn parallel_ui(&mut self) {
        let groups = Rc::clone(&self.groups);
        for g in groups.iter() {
            for &(j, span) in &g.members {
                let t = &self.l.nodes[j];
                if matches!(t.body, NodeBody::Approval(_) | NodeBody::Input(_)) {
                    let d = self
                        .err(
                            "loki-parallel-ui",
                            format!(
                                "{} node is an immediate target of a fan-out (from '{}'); it cannot ask the user from a parallel branch",
                                t.kind_str(),
                                g.source.id.value
                            ),
                            span,
                        )
                        .node(t.id.value.clone())
                        .hint("ask before the fan-out, or after the node the branches join at");
                    self.push(d);
                }
            }
        }
    }

    /// Upstream 14: parallel branches declare what they write, and keys written by several
    /// branches have a reducer.
    pub(super) fn parallel_writes(&mut self) {
        let groups = Rc::clone(&self.groups);
        let mut reported: HashSet<usize> = HashSet::new();
        for g in groups.iter() {
            for &(j, _) in &g.members {
                let t = &self.l.nodes[j];
                if matches!(t.body, NodeBody::Script(_))
                    && t.state_updates.is_none()
                    && reported.insert(j)
                {
                    let d = self
                        .err(
                            "loki-parallel-write",
                            "script node is in a parallel branch but declares no `state_updates`; the keys it writes cannot be checked against its siblings",
                            t.id.span,
                        )
                        .node(t.id.value.clone())
                        .hint("add `state_updates: {}` (or the keys it sets); keys it prints must not collide with sibling branches unless they have a reducer");
                    self.push(d);
                }
            }
        }
        for g in groups.iter() {
            let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for &(j, _) in &g.members {
                let t = &self.l.nodes[j];
                for k in t.write_set() {
                    writers.entry(k).or_default().push(t.id.value.clone());
                }
            }
            for (k, mut ws) in writers {
                if ws.len() < 2 || self.l.reducer(&k).is_some() {
                    continue;
                }
                ws.sort();
                let span = g.source.next_span.unwrap_or(g.source.id.span);
                let d = self
                    .err(
                        "loki-parallel-write",
                        format!(
                            "nodes [{}] all write key '{k}' in the same parallel super-step but no reducer is declared for '{k}'. Add `reducers: {{ {k}: <reducer> }}`",
                            ws.join(", ")
                        ),
                        span,
                    )
                    .node(g.source.id.value.clone())
                    .hint("reducers: append, extend, concat, sum, max, min, merge, overwrite; without one the run fails at the join");
                self.push(d);
            }
        }
    }

    /// Upstream 15: no branch reads a key a sibling branch writes in the same super-step.
    pub(super) fn parallel_reads(&mut self) {
        let groups = Rc::clone(&self.groups);
        for g in groups.iter() {
            let writes_of: Vec<Vec<String>> = g
                .members
                .iter()
                .map(|&(b, _)| self.l.nodes[b].write_set())
                .collect();
            for &(a, _) in &g.members {
                let na = &self.l.nodes[a];
                let reads = na.read_set();
                if reads.is_empty() {
                    continue;
                }
                for (bi, &(b, _)) in g.members.iter().enumerate() {
                    if a == b {
                        continue;
                    }
                    let nb = &self.l.nodes[b];
                    let writes = &writes_of[bi];
                    let both: Vec<String> = reads
                        .iter()
                        .filter(|k| writes.contains(k))
                        .cloned()
                        .collect();
                    if both.is_empty() {
                        continue;
                    }
                    let d = self
                        .err(
                            "loki-parallel-read",
                            format!(
                                "node '{}' reads state key(s) {} which sibling parallel branch '{}' writes in the same super-step; it would see the value from before the fan-out",
                                na.id.value,
                                list(&both),
                                nb.id.value
                            ),
                            na.id.span,
                        )
                        .node(na.id.value.clone())
                        .hint("read the key after the branches join, or write it before the fan-out");
                    self.push(d);
                }
            }
        }
    }

    /// Beyond upstream (coyote 0.10.3 `teammates`): a flagged agent node with no flagged peer in
    /// the same fan-out or map chain has no one to message.
    pub(super) fn lonely_teammates(&mut self) {
        let groups = Rc::clone(&self.groups);
        let l = self.l;
        let chains = l.map_chains();
        for (i, n) in l.nodes.iter().enumerate() {
            let Some(t) = n.agent().and_then(|a| a.teammates.as_ref()).filter(|t| t.value) else {
                continue;
            };
            let in_chain = chains.iter().any(|(_, c)| c.contains(&i));
            let has_peer = groups.iter().any(|g| {
                g.members.iter().any(|&(j, _)| j == i)
                    && g.members
                        .iter()
                        .any(|&(j, _)| j != i && l.nodes[j].agent().is_some_and(|a| a.teammates()))
            });
            if in_chain || has_peer {
                continue;
            }
            let d = self
                .warn(
                    "loki-teammates",
                    "`teammates: true` has no effect here: the node is neither in a map's branch chain nor in a fan-out with another `teammates` agent node",
                    t.span,
                )
                .node(n.id.value.clone())
                .hint("peers are the items of one map, or the flagged agent nodes of one `next: [...]` fan-out; remove the flag otherwise");
            self.push(d);
        }
    }
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
