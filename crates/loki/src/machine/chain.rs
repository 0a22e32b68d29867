//! Map branch chains (coyote 0.10.3): each item of a `map` node runs a per-item chain of nodes
//! on its own fork of the state, from the map's `branch` node along `next`, script `_next` and
//! the `fallback`s of llm, script and agent nodes, until a node with no successor.
//!
//! What an item shows and how its calls are named:
//!
//! - its chain steps emit `node_enter` / `node_exit` / `route` under the run id
//!   `<run>/<map>/<item index>` (an agent node in the chain nests below that), each step
//!   numbered from 1 within the item;
//! - the LLM calls, tool calls and effects made inside item `i` (nested agents' included) reach
//!   the provider under the node name `<node>[<i>]` ([`NamedProvider`]), so a recording of
//!   concurrent items replays each item's own exchanges, and a scripted reply can be aimed at
//!   one item (`node: "verify_one[1]"`) while `node: verify_one` serves any item.
//!
//! Calls of nested agent runs that could run at the same time as another's are qualified by
//! the nested run's path instead ([`Naming::Path`], the same [`NamedProvider`]): inside a
//! super-step that runs more than one node (and in every run nested below one), each agent
//! node's child run names its calls `<node>@<path>`, where `<path>` is the child's run id
//! without the top-level run's own id (`parse@map_code_review/0/run_code_review`); a child
//! spawned with `agent__spawn` always does (`helper@boss/agent_helper_1` below a normal agent
//! node `boss`, `helper@agent_helper_1` below a top-level graph's llm node,
//! `helper@plan/agent_helper_1` when llm node `plan` runs beside others). A name that already
//! holds `@` is left alone by every enclosing wrapper (its path already says where it runs),
//! so two concurrent runs never share a call name, and a scripted reply aimed at the exact
//! name (or at `node: parse`, which serves any `parse[…]` or `parse@…`) is unambiguous.

use super::{Exec, LokiState, diff, state_value};
use model::doc::loki::{NodeBody, TargetKind};
use runtime::events::{EventBody, RouteReason};
use runtime::provider::{CallCtl, LlmProvider, LlmRequest, LlmResponse, ProviderError};
use runtime::session::{Cx, SharedProvider};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

/// How a [`NamedProvider`] qualifies the node names of the calls made through it.
pub(super) enum Naming {
    /// Inside map item `i`: `<node>[<i>]`.
    Item(usize),
    /// Inside a nested agent run whose calls must not collide with a concurrent one's:
    /// `<node>@<path>`.
    Path(String),
}

/// The provider as the calls inside one map item (or one qualified nested run) see it: node
/// names qualified (see the module docs); everything else is the run's provider.
pub(super) struct NamedProvider {
    pub inner: SharedProvider,
    pub naming: Naming,
}

impl NamedProvider {
    fn name(&self, node: &str) -> String {
        if node.contains('@') {
            return node.to_string();
        }
        match &self.naming {
            Naming::Item(i) => format!("{node}[{i}]"),
            Naming::Path(p) => format!("{node}@{p}"),
        }
    }

    /// The provider of the nested run `run` (a run id): its calls named `<node>@<path>`, the
    /// path being `run` without the top-level run's id.
    pub(super) fn for_run(inner: &SharedProvider, run: &str) -> SharedProvider {
        let path = run.split_once('/').map_or(run, |(_, rest)| rest).to_string();
        Arc::new(NamedProvider { inner: inner.clone(), naming: Naming::Path(path) })
    }
}

impl LlmProvider for NamedProvider {
    fn complete(&self, request: &LlmRequest, ctl: &CallCtl<'_>) -> Result<LlmResponse, ProviderError> {
        let req = LlmRequest { node: self.name(&request.node), ..request.clone() };
        self.inner.complete(&req, ctl)
    }
    fn mark(&self) -> usize {
        self.inner.mark()
    }
    fn rewind_to(&self, mark: usize) {
        self.inner.rewind_to(mark)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn replay_tool(&self, node: &str, name: &str, args: &Value) -> Option<Result<Value, String>> {
        self.inner.replay_tool(&self.name(node), name, args)
    }
    fn record_tool(&self, node: &str, name: &str, args: &Value, outcome: &Result<Value, String>) {
        self.inner.record_tool(&self.name(node), name, args, outcome)
    }
    fn replay_effect(&self, node: &str, name: &str, args: &Value) -> Option<Result<Value, String>> {
        self.inner.replay_effect(&self.name(node), name, args)
    }
    fn record_effect(&self, node: &str, name: &str, args: &Value, outcome: &Result<Value, String>) {
        self.inner.record_effect(&self.name(node), name, args, outcome)
    }
    fn position(&self) -> Value {
        self.inner.position()
    }
    fn restore_position(&self, position: &Value) -> Result<(), String> {
        self.inner.restore_position(position)
    }
    fn network_allowed(&self) -> bool {
        self.inner.network_allowed()
    }
}

impl Exec<'_, '_> {
    /// The nodes of the chain that starts at `entry`: every node reachable from it through
    /// `next` and `fallback` edges (agent fallbacks included, as coyote's peer discovery walks
    /// them). Each must be an llm, agent, rag or script node.
    pub(super) fn chain_of(&self, map: &str, entry: &str) -> Result<BTreeSet<String>, String> {
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([entry.to_string()]);
        while let Some(id) = queue.pop_front() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let node = self.l.node(&id).ok_or_else(|| {
                format!("map node '{map}': chain node '{id}' not found in graph '{}'", self.graph)
            })?;
            if !matches!(node.body, NodeBody::Llm(_) | NodeBody::Agent(_) | NodeBody::Rag(_) | NodeBody::Script(_)) {
                return Err(format!(
                    "map node '{map}': node '{id}' of the branch chain is a {} node; map branch chains may hold llm, agent, rag or script nodes only",
                    node.kind_str()
                ));
            }
            for t in node.targets() {
                if matches!(
                    t.kind,
                    TargetKind::Next | TargetKind::ScriptFallback | TargetKind::LlmFallback | TargetKind::AgentFallback
                ) {
                    queue.push_back(t.to.value.clone());
                }
            }
        }
        Ok(seen)
    }

    /// One item of map `map`: its chain from `entry` on a fork of `base` with `as_key` = `item`;
    /// its result is the value of `key` in the fork when the chain ends.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_item(
        &self,
        map: &str,
        i: usize,
        item: &Value,
        base: &LokiState,
        as_key: &str,
        key: &str,
        entry: &str,
        chain: &BTreeSet<String>,
    ) -> Result<Value, String> {
        let provider: SharedProvider = Arc::new(NamedProvider { inner: self.cx.provider.clone(), naming: Naming::Item(i) });
        let run = format!("{}/{map}/{i}", self.cx.run);
        let mut fork = base.clone();
        fork.insert(as_key.to_string(), Arc::new(item.clone()));
        let cap = self.l.settings.visit_cap();
        let mut visits: BTreeMap<String, u64> = BTreeMap::new();
        let mut cur = entry.to_string();
        let mut step = 0u64;
        let mut last_output: Option<Value>;
        loop {
            if self.cx.stopped() || self.past_deadline() {
                return Err(format!("Graph '{}' timed out or was stopped", self.graph));
            }
            let n = visits.entry(cur.clone()).or_insert(0);
            *n += 1;
            if let Some(max) = cap
                && *n > max
            {
                return Err(format!("Node '{cur}' visited {n} times (max_loop_iterations={max}). Possible infinite loop."));
            }
            let node = self.l.node(&cur).expect("chain nodes exist (chain_of)");
            step += 1;
            let icx = Cx {
                run: run.clone(),
                step,
                log: self.cx.log,
                provider: &provider,
                stop: self.cx.stop,
                answers: self.cx.answers,
                depth: self.cx.depth,
                gate: self.cx.gate,
            };
            // The item's run id is its own: its llm nodes' children nest right below it.
            let ex = Exec { cx: &icx, fanout: false, ..*self };
            icx.emit(EventBody::NodeEnter { step, node: cur.clone(), kind: node.kind_str().to_string() });
            let t0 = Instant::now();
            let before = fork.clone();
            let ran = ex.exec(node, &mut fork, true)?;
            let d = diff(&before, &fork);
            icx.emit(EventBody::NodeExit {
                step,
                node: cur.clone(),
                update: if d.is_empty() { Value::Null } else { state_value(&d) },
                duration_ms: t0.elapsed().as_millis() as u64,
            });
            last_output = ran.output;
            let targets = match ran.flow {
                super::Flow::Go(t) => t,
                super::Flow::End(_) => Vec::new(),
            };
            let (to, reason) = match targets.len() {
                0 => break,
                1 => targets.into_iter().next().expect("one"),
                _ => {
                    return Err(format!(
                        "node '{cur}' fans out to {} nodes; a map branch chain cannot fan out",
                        targets.len()
                    ));
                }
            };
            if !chain.contains(&to) {
                let how = match reason {
                    RouteReason::Next => "`_next`",
                    RouteReason::Fallback => "`fallback`",
                    _ => "`next`",
                };
                return Err(format!(
                    "node '{cur}' routes ({how}) to '{to}', which is not part of the map branch chain that starts at '{entry}'"
                ));
            }
            icx.emit(EventBody::Route { from: cur.clone(), to: to.clone(), reason });
            cur = to;
        }
        if let Some(v) = fork.get(key) {
            return Ok((**v).clone());
        }
        // Switchyard: with the default `output_key: output`, an llm / agent / rag node that
        // ends the chain delivers its own output (coyote removes `output` after the node).
        if key == "output"
            && let Some(v) = last_output
        {
            return Ok(v);
        }
        Err(format!("the chain did not write `output_key` '{key}'"))
    }
}
