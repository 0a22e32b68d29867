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

    /// Beyond upstream (reference §9.1): parallel llm, agent and rag nodes with `state_updates`
    /// each leave `output: null`.
    pub(super) fn null_leak(&mut self) {
        let groups = Rc::clone(&self.groups);
        if self.l.reducer("output").is_some()
            || self
                .l
                .initial_state_keys
                .iter()
                .any(|k| k.value == "output")
        {
            return;
        }
        for g in groups.iter() {
            let mut ws: Vec<String> = g
                .members
                .iter()
                .map(|&(j, _)| &self.l.nodes[j])
                .filter(|t| {
                    matches!(
                        t.body,
                        NodeBody::Llm(_) | NodeBody::Agent(_) | NodeBody::Rag(_)
                    )
                })
                .filter(|t| t.state_updates.is_some())
                .map(|t| t.id.value.clone())
                .collect();
            if ws.len() < 2 {
                continue;
            }
            ws.sort();
            let span = g.source.next_span.unwrap_or(g.source.id.span);
            let d = self
                .warn(
                    "loki-null-leak",
                    format!(
                        "nodes [{}] run in parallel and have `state_updates`: Loki leaves `output: null` in state after each of them, so both branches write `output` and the run fails at the join (\"Key 'output' was written by {} parallel branches but has no reducer declared\") unless `output` already exists",
                        ws.join(", "),
                        ws.len()
                    ),
                    span,
                )
                .node(g.source.id.value.clone())
                .hint("add `reducers: {output: overwrite}` (what Loki's own librarian agent does)");
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
