//! The Loki graph-agent interpreter: a [`Machine`] that runs a Loki `graph.yaml` one
//! bulk-synchronous super-step at a time (reference/loki.md §5–§9).
//!
//! Shape:
//!
//! - **state** is a flat map `key → Arc<Value>` ([`LokiMachine::fork`] copies pointers, never the
//!   values), seeded from `initial_state`, the caller's `initial_state` and `initial_prompt`;
//! - the **frontier** is the set of due node ids; one [`Machine::step`] runs all of them (in
//!   parallel on `std::thread::scope`, at most `settings.max_concurrency` at once), each on a
//!   fork of the state, and merges their diffs in node-id order through the `reducers`;
//! - approval and input nodes do not block: the step returns [`StepOutcome::Interrupt`] before
//!   any node of the super-step runs, the session collects the answer, and the step re-runs;
//! - templates are rendered straight against the map through
//!   [`template::render_strict_with`] and friends (no JSON copy of the state per render);
//! - script nodes run through [`run_script`]; llm nodes through [`Cx::complete`]; agent nodes
//!   run the child graph as a nested `LokiMachine` with [`Cx::child`] (events carry
//!   `<run>/<node>` as run id).
//!
//! Semantics follow coyote 0.10.3 where it changed the baseline: `state_updates` render against
//! the state before the block and `{{output}}` is gone after it (an explicit `output` entry is
//! kept); `output_schema` auto-merges only the keys declared under `properties`; declared
//! `variables` seed the state (and scripts' `LLM_AGENT_VAR_<NAME>`); `0` means no cap for
//! `max_loop_iterations`, timeouts and llm `max_iterations`; map branches are per-item chains
//! ([`chain`]); agent nodes retry transient failures (`max_attempts`), route to `fallback` with
//! `{{output}}` = `Agent node failed: <error>`, seed a child graph with `inputs`, and the
//! spawner checks the child's depth against its `max_agent_depth`; `mcp_tools` allow-lists
//! (graph and node) filter the MCP tools offered; `teammates: true` agent nodes of one fan-out
//! (two or more in a super-step, or a map's items) message each other, and normal agents and
//! graph llm nodes spawn children and start background jobs ([`supervisor`]): an llm node gets
//! the built-in functions its `tools:` list names, from the families the graph offers
//! (`model::doc::loki::AgentFunctions`: messaging always, spawning with the effective
//! `can_spawn_agents`, jobs while the effective `max_concurrent_jobs` is above 0), with the
//! graph's `max_concurrent_agents`, `max_agent_depth` and `max_concurrent_jobs`; its children
//! run as nested runs `<run>/agent_<name>_<n>` (`<run>/<node>/agent_<name>_<n>` when its
//! super-step runs several nodes), and what it leaves uncollected is reaped when it ends (a
//! `log` event names it).
//!
//! Deliberate divergences from upstream (baseline coyote `main@5f23e24`, and 0.10.3):
//!
//! | upstream | here |
//! | --- | --- |
//! | scoped `{{output}}` / `{{choice}}` / `{{input}}` leak into state as `null` after the node (§9.1) | bound only while `state_updates` render; never written to state (the later upstream fix) |
//! | (baseline) `state_updates` entries applied in hash order, each visible to later ones | as 0.10: all rendered against the state before the block, written in declaration order |
//! | 0.10.3: with the default `output_key: output`, a chain that never writes `output` fails the item | the output of the llm / agent / rag node that ended the chain is collected |
//! | 0.10.3: map items run silently | each chain step is a `node_enter` / `node_exit` / `route` under the run id `<run>/<map>/<item>`; the item's LLM calls, tools and effects reach the provider as `<node>[<item>]` (so replies can target one item and a replay matches each item's own calls) |
//! | 0.10.3: `teammates: true` agent nodes of one fan-out get peer ids `graph_agent_<agent>_<8 random hex>` | deterministic ids ([`supervisor::peer_id`]): `graph_agent_<agent>_<node>` in a static super-step, `graph_agent_<agent>_<map>_<item>` for a map's items; the roster is appended to the child's prompt as upstream does, in our own words; a normal (`config.yaml`) child gets `agent__send_message` / `agent__check_inbox`, a graph child's llm nodes get them when their `tools:` list them, speaking as the agent node's identity |
//! | 0.10.3: `agent__spawn` starts the child in the background at once; `agent__check` may find it running; `job__start` likewise | a spawn or a job start queues the work; queued children (up to `max_concurrent_agents` at once) and jobs (up to `max_concurrent_jobs`) run when a call needs one (`agent__check` / `agent__collect`, `job__check` / `job__collect`) or at the end of the turn's tool calls, so every child and job ends within the turn that started it and a step stays atomic (durable snapshots never hold a running child); a cancelled queued child or job never runs; capacity and depth refusals use upstream's texts ([`supervisor`]) |
//! | 0.10.3: spawned ids `agent_<agent>_<uuid>`, job ids `job_<uuid>`; collect summarises long outputs with an LLM call; jobs report elapsed time and output tails; the `agent__task_*` queue, escalations, completion notifications and the turn-end reminder exist | ids numbered per spawner (`agent_<agent>_<n>`, `job_<n>`); outputs returned as they are; no times or tails; no task queue, escalations, notifications or reminders (an uncollected child's result is dropped with its run) |
//! | 0.10.3: a graph agent has one supervisor for the whole run: children a node spawns stay until some node collects them, and only jobs are node-scoped (reaped when the node that started them ends) | each llm node has its own supervisor: its children and its jobs are node-scoped, run within its step, and are dropped (reaped) when it ends; `max_concurrent_agents` / `max_concurrent_jobs` cap each node, not the fan-out together; a graph llm node speaks as the graph's identity (its agent node's), also inside a map item |
//! | provider calls carry the node's name | calls of nested agent runs that may run beside another's (below a super-step of several nodes, and every spawned child) are named `<node>@<run path>` ([`chain`]'s module docs), like map items' `<node>[<item>]` |
//! | 0.10.3: `max_agent_depth` (default 3) bounds nesting | same, and never deeper than [`MAX_AGENT_DEPTH`] |
//! | `settings.timeout` is wall clock since the run started | only time spent running steps counts: time paused at a breakpoint or waiting for an answer is not charged |
//! | approval/input ask interactively (no way to pre-supply answers headless) | they interrupt the run; answers come from the session (`--answer`, the debugger); nested runs take them from the answer queue only |
//! | llm tools are executed (argc-built binaries; a tool's failure is a `tool_call_error` result) | Python agent tools (`tools.py`) run through the Python bridge; `tools.sh` / `tools.ts` / `tools.js` and `global_tools` files as subprocesses ([`loki_tools`]: no argc binary needed, killed with their children at the run's deadline (else 120 s) or on stop; a failure is an error result quoting stderr); MCP tools (`mcp:<server>` or a tool's own name) go to the server |
//! | a `global_tools` file that is missing fails the agent's load | it is offered with a bare schema and each call fails naming the paths searched |
//! | a tool's non-JSON output reaches the model as `{"output": text}`; stdout is shown, not returned | the text itself; stdout is the result when `LLM_OUTPUT` stays empty |
//! | `mcp:<server>`: recent Loki versions offer the server through meta functions (`mcp_search_<server>`, `mcp_describe_<server>`, `mcp_invoke_<server>`) | the server's tools themselves, with cleaned schemas; definitions from `mcp.json` in the agent directory, else Loki's `<config>/functions/mcp.json` |
//! | rag knowledge bases are built at agent load (interactively when not fully specified), never rebuilt, hybrid vector + keyword search always | built when the node first runs (no questions asked), updated when its documents or build settings change ([`rag`]); keyword (BM25) retrieval alone without `embedding_model` (or when its provider has no key); `driver` other than yaml, rerankers and graph RAG are not supported |
//! | agent nodes run any Loki agent | graph agents (`graph.yaml`) and normal agents (`config.yaml`, [`normal`]: a nested run of one node, capped at [`normal::MAX_TURNS`] turns) beside this agent or under `<agent_dir>/agents/` |
//! | graph-level `temperature` etc. ignored by llm nodes | same (not sent: providers take no sampling options yet) |
//! | an approval/input node in a fan-out asks from its branch (the validator refuses it) | every question of a super-step is asked before any of its nodes runs (validator rule unchanged) |
//! | a step with no targets empties the frontier and fails one iteration later | fails in the step that emptied it (same message) |
//! | scripts get `LLM_AGENT_VAR_*`, `LLM_ROOT_DIR`, ... | only what [`run_script`] sets (`GRAPH_STATE*`, `LLM_AGENT_DATA_DIR`); cwd is the agent dir |
//! | `{{.}}` renders the whole state | not found (whole-state references are not resolved) |
//! | narration times are local time | UTC (no time-zone database in the engine) |

use model::doc::loki::{AgentFunctions, AgentNode, LlmNode, LokiDoc, LokiNode, MapNode, NodeBody, Reducer};
use model::doc::{Document, load_path};
use expr::template::{self, TemplateError};
use crate::tools as loki_tools;
use connect::pybridge::PyBridge;
use runtime::events::{EventBody, InterruptKind, RouteReason};
use connect::mcp::{McpPool, McpServer, McpTool};
use crate::rag::{self, RagStore};
use runtime::provider::{LlmRequest, ModelRef, parse_json_loose};
use crate::script::run_script_with;
use runtime::session::{Cx, Machine, NestedEnd, Pending, SharedProvider, StepOutcome, run_nested};
use supervisor::{Calls, Mailbox, Supervisor, Teammate};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod chain;
mod durable;
pub mod normal;
pub mod supervisor;

/// The run state: top-level key → shared value.
pub type LokiState = BTreeMap<String, Arc<Value>>;

/// Nested agent runs never go deeper than this, whatever a graph's `max_agent_depth` says
/// (coyote's own default is 3, see `LokiDoc::max_agent_depth`).
pub const MAX_AGENT_DEPTH: u32 = 8;

/// Error texts that make an llm node retry (up to `max_attempts`).
const TRANSIENT: &[&str] =
    &["timed out", "rate limit", "429", "Connection reset", "Connection refused", "produced no output"];

const EXTRACTOR_SYSTEM: &str = "You convert text into a JSON object. Output only one JSON object that \
conforms to the given JSON Schema, with every required key. No prose, no code fences, no <think> tags. \
Do not invent fields or facts that are not in the input.";

/// A Loki graph run (see the module docs).
#[derive(Clone)]
pub struct LokiMachine {
    doc: Arc<Document>,
    agent: String,
    name: String,
    state: LokiState,
    frontier: BTreeSet<String>,
    visits: BTreeMap<String, u64>,
    /// Answers given to approval/input nodes of the current frontier.
    answers: BTreeMap<String, String>,
    /// Time spent running steps (what `settings.timeout` limits).
    elapsed: Duration,
    /// A deadline imposed from outside (a parent agent node's timeout).
    outer_deadline: Option<Instant>,
    output: Value,
    done: bool,
    /// Python agent tools (`tools.py`), one bridge shared by every fork of the run.
    py: Arc<Mutex<Option<PyBridge>>>,
    /// The agent's MCP servers (`mcp_servers`, defined in `mcp.json`), shared by every fork;
    /// they connect on first use.
    mcp: Arc<McpPool>,
    /// The knowledge bases of the graph's rag nodes, shared by every fork.
    rag: Arc<RagStore>,
    /// What of the engine's environment its scripts, tools, Python and MCP servers see.
    child_env: connect::childenv::ChildEnv,
    /// `LLM_AGENT_VAR_<NAME>` for each declared variable (coyote 0.10.3), as the run started.
    vars: Arc<Vec<(String, String)>>,
    /// The run is nested in a run whose calls must not collide with a concurrent one's: its
    /// agent nodes' children name their calls by their run path ([`chain`]'s module docs).
    qualify_nested: bool,
    /// Its identity and inbox for coyote 0.10.3's teammate functions (its agent node's, as a
    /// teammate or a spawned child); its llm nodes speak as it.
    mail: Mailbox,
}

impl std::fmt::Debug for LokiMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LokiMachine")
            .field("agent", &self.agent)
            .field("frontier", &self.frontier)
            .field("done", &self.done)
            .finish()
    }
}

impl LokiMachine {
    /// A run of the Loki graph `doc` for the user message `input` (`initial_prompt`), with
    /// `initial_state` (a JSON object) laid over the graph's own `initial_state`.
    ///
    /// Fails when `doc` is not a Loki graph, when `initial_state` is not an object, or — with
    /// `settings.validate_before_run` (the default) — when validation reports errors (listed as
    /// `file:line:col: message`).
    pub fn new(doc: Arc<Document>, input: &str, initial_state: Option<Value>) -> Result<LokiMachine, String> {
        let Some(l) = doc.loki() else {
            return Err(format!("`{}` is not a Loki graph (graph.yaml) document", doc.path.display()));
        };
        if l.settings.validate_before_run {
            let errors: Vec<String> = model::validate::validate(&doc, None)
                .into_iter()
                .filter(|d| d.is_error())
                .map(|d| format!("  {}:{}:{}: {}", d.file, d.line, d.column, d.message))
                .collect();
            if !errors.is_empty() {
                return Err(format!(
                    "graph '{}' has {} validation error(s) (settings.validate_before_run is on):\n{}",
                    l.name.clone().unwrap_or_default(),
                    errors.len(),
                    errors.join("\n")
                ));
            }
        }
        let state = initial_state_of(l, input, initial_state)?;
        let vars = l
            .variables
            .iter()
            .filter_map(|v| {
                let name = &v.name.value;
                let value = match state.get(name).map(|x| x.as_ref()) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => v.default.clone()?,
                };
                Some((format!("LLM_AGENT_VAR_{}", name.to_uppercase()), value))
            })
            .collect();
        let agent = l
            .agent_dir
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .or_else(|| l.name.clone())
            .unwrap_or_else(|| "graph".into());
        let name = l.name.clone().unwrap_or_else(|| agent.clone());
        let mut frontier = BTreeSet::new();
        if let Some(s) = &l.start {
            frontier.insert(s.value.clone());
        }
        let servers: Vec<String> = l.mcp_servers.iter().map(|s| s.value.clone()).collect();
        let mcp = Arc::new(connect::mcp::loki_pool(&l.agent_dir, &servers));
        let mail = Mailbox::alone(supervisor::peer_id(&agent, &agent));
        Ok(LokiMachine {
            doc,
            agent,
            name,
            state,
            frontier,
            visits: BTreeMap::new(),
            answers: BTreeMap::new(),
            elapsed: Duration::ZERO,
            outer_deadline: None,
            output: Value::Null,
            done: false,
            py: Arc::new(Mutex::new(None)),
            mcp,
            rag: Arc::new(RagStore::new(None)),
            child_env: Default::default(),
            vars: Arc::new(vars),
            qualify_nested: false,
            mail,
        })
    }

    /// Its identity and inbox (an agent node gives a teammate's, a spawner its child's).
    pub fn with_mailbox(mut self, mail: Mailbox) -> LokiMachine {
        self.mail = mail;
        self
    }

    /// The environment its children see (`connect::childenv`; `launch` computes it from the run
    /// manifest). Nested agent runs inherit it. Default: the base set and the user's opt-in.
    pub fn with_child_env(mut self, env: connect::childenv::ChildEnv) -> LokiMachine {
        self.mcp.set_child_env(&env);
        self.child_env = env;
        self
    }

    /// Send the rag nodes' embedding requests where `config` says (default: the process's
    /// provider file and environment, read when first needed). Nested agent runs inherit it.
    pub fn with_llm_config(mut self, config: Arc<connect::llm::config::LlmConfig>) -> LokiMachine {
        self.rag = Arc::new(RagStore::new(Some(config)));
        self
    }

    /// The graph's `name:` (narration and error messages use it).
    pub fn graph_name(&self) -> &str {
        &self.name
    }

    /// Visit counts per node so far.
    pub fn visits(&self) -> &BTreeMap<String, u64> {
        &self.visits
    }

    fn loki(&self) -> &LokiDoc {
        self.doc.loki().expect("LokiMachine holds a Loki document")
    }

    fn failed(node: Option<&str>, message: String) -> StepOutcome {
        StepOutcome::Failed { node: node.map(str::to_string), message }
    }

    fn run_step(&mut self, cx: &Cx<'_>) -> StepOutcome {
        let doc = self.doc.clone();
        let l = doc.loki().expect("Loki document");
        let g = self.name.clone();
        if self.frontier.is_empty() {
            return Self::failed(None, format!("Graph '{g}' frontier emptied without reaching an End node"));
        }
        let frontier: Vec<String> = self.frontier.iter().cloned().collect();
        if cx.stopped() {
            return Self::failed(None, format!("Graph '{g}' aborted before super-step with frontier {frontier:?}"));
        }
        // coyote 0.10.3: `timeout: 0` means no bound.
        let timeout = l.settings.run_timeout().map(Duration::from_secs);
        if let Some(t) = timeout
            && self.elapsed >= t
        {
            return Self::failed(
                None,
                format!("Graph '{g}' timed out after {}s before super-step with frontier {frontier:?}", t.as_secs()),
            );
        }
        // Visits are counted before existence is checked (as upstream), but only committed
        // when the step really runs (an interrupt re-runs the same step).
        // coyote 0.10.3: `max_loop_iterations: 0` means no cap.
        let cap = l.settings.visit_cap();
        for id in &frontier {
            let n = self.visits.get(id).copied().unwrap_or(0) + 1;
            if let Some(max) = cap
                && n > max
            {
                self.visits.insert(id.clone(), n);
                return Self::failed(
                    Some(id),
                    format!("Node '{id}' visited {n} times (max_loop_iterations={max}). Possible infinite loop."),
                );
            }
        }
        for id in &frontier {
            if !l.has_node(id) {
                return Self::failed(Some(id), format!("Node '{id}' not found in graph '{g}'"));
            }
        }
        // Human input first: nothing of the super-step runs until every question has an answer.
        for id in &frontier {
            if self.answers.contains_key(id) {
                continue;
            }
            let node = l.node(id).expect("checked");
            let scope = Scope::new(&self.state);
            match &node.body {
                NodeBody::Approval(a) => {
                    let q = a.question.as_ref().map(|t| t.text.as_str()).unwrap_or("");
                    let prompt = match scope.strict(q) {
                        Ok(p) => p,
                        Err(e) => return Self::failed(Some(id), format!("Failed to interpolate approval question: {e}")),
                    };
                    return StepOutcome::Interrupt(Pending {
                        id: String::new(),
                        node: id.clone(),
                        kind: InterruptKind::Approval,
                        prompt,
                        options: a.options.iter().map(|o| o.value.clone()).collect(),
                        value: Value::Null,
                        default: None,
                        validation: None,
                    });
                }
                NodeBody::Input(i) => {
                    let q = i.question.as_ref().map(|t| t.text.as_str()).unwrap_or("");
                    let prompt = match scope.strict(q) {
                        Ok(p) => p,
                        Err(e) => return Self::failed(Some(id), format!("Failed to interpolate input question: {e}")),
                    };
                    let default = i.default.as_ref().map(|d| scope.lenient(&d.text)).filter(|d| !d.is_empty());
                    return StepOutcome::Interrupt(Pending {
                        id: String::new(),
                        node: id.clone(),
                        kind: InterruptKind::Input,
                        prompt,
                        options: Vec::new(),
                        value: Value::Null,
                        default,
                        validation: i.validation.as_ref().map(|v| v.value.clone()),
                    });
                }
                _ => {}
            }
        }
        for id in &frontier {
            *self.visits.entry(id.clone()).or_insert(0) += 1;
        }

        let started = Instant::now();
        let mut deadline = timeout.map(|t| started + t.saturating_sub(self.elapsed));
        if let Some(o) = self.outer_deadline {
            deadline = Some(deadline.map_or(o, |d| d.min(o)));
        }
        let answers = std::mem::take(&mut self.answers);
        let ex = Exec {
            l,
            graph: &g,
            cx,
            answers: &answers,
            deadline,
            py: &self.py,
            mcp: &self.mcp,
            rag: &self.rag,
            child_env: &self.child_env,
            vars: &self.vars,
            // Nested agent runs of a parallel super-step name their calls by their run path.
            qualify: self.qualify_nested || frontier.len() > 1,
            fanout: frontier.len() > 1,
            teammate: None,
            mail: &self.mail,
        };
        let snapshot = &self.state;
        // coyote 0.10.3: the `teammates: true` agent nodes of this super-step, when there are
        // at least two, can message each other.
        let members: Vec<(String, String, String)> = frontier
            .iter()
            .filter_map(|id| match l.node(id).map(|n| &n.body) {
                Some(NodeBody::Agent(a)) if a.teammates() => {
                    a.agent.as_ref().map(|name| (id.clone(), name.value.clone(), id.clone()))
                }
                _ => None,
            })
            .collect();
        let team = supervisor::provision(&members);
        let run_one = |id: &String| {
            let mate = members.iter().position(|(m, _, _)| m == id).and_then(|i| team.get(i));
            let r = Exec { teammate: mate, ..ex }.run_node(id, snapshot);
            if let Some(t) = mate {
                t.peers.finish(&t.id);
            }
            (id.clone(), r)
        };
        let results: Vec<(String, NodeResult)> = if frontier.len() == 1 {
            vec![run_one(&frontier[0])]
        } else {
            let limit = l.settings.max_concurrency.max(1) as usize;
            par_map(&frontier, limit, &|_, id: &String| run_one(id))
        };
        self.elapsed += started.elapsed();
        let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
        if timed_out
            && let Some(t) = timeout
            && self.elapsed >= t
        {
            return Self::failed(
                None,
                format!("Graph '{g}' timed out after {}s during super-step with frontier {frontier:?}", t.as_secs()),
            );
        }
        let mut diffs: Vec<(String, LokiState)> = Vec::new();
        let mut ends: Vec<(String, String, LokiState)> = Vec::new();
        let mut next = BTreeSet::new();
        for (id, r) in results {
            match r {
                Err(message) => return Self::failed(Some(&id), message),
                Ok((ran, diff)) => match ran.flow {
                    Flow::Go(targets) => {
                        next.extend(targets.into_iter().map(|(t, _)| t));
                        diffs.push((id, diff));
                    }
                    Flow::End(out) => ends.push((id, out, diff)),
                },
            }
        }
        if ends.len() > 1 {
            let names: Vec<&str> = ends.iter().map(|(id, _, _)| id.as_str()).collect();
            return Self::failed(
                None,
                format!(
                    "super-step ended with multiple End targets ({}). Fan-out branches must converge on a single node before ending.",
                    names.join(", ")
                ),
            );
        }
        if let Err(e) = merge_diffs(l, &mut self.state, &diffs) {
            return Self::failed(None, e);
        }
        if let Some((id, out, diff)) = ends.pop() {
            if let Err(e) = merge_diffs(l, &mut self.state, &[(id, diff)]) {
                return Self::failed(None, e);
            }
            self.frontier.clear();
            self.done = true;
            self.output = Value::String(out.clone());
            return StepOutcome::Finished { output: Value::String(out) };
        }
        if next.is_empty() {
            // Upstream fails one iteration later; failing now keeps the session from seeing an
            // empty frontier as a finished run.
            self.frontier.clear();
            return Self::failed(None, format!("Graph '{g}' frontier emptied without reaching an End node"));
        }
        self.frontier = next;
        StepOutcome::Continue
    }
}

impl Machine for LokiMachine {
    fn agent(&self) -> &str {
        &self.agent
    }
    fn file(&self) -> Option<String> {
        Some(self.doc.path.display().to_string())
    }
    fn due(&self) -> Vec<String> {
        if self.done { Vec::new() } else { self.frontier.iter().cloned().collect() }
    }
    fn node_kind(&self, node: &str) -> String {
        self.loki().node(node).map(|n| n.kind_str().to_string()).unwrap_or_else(|| "unknown".into())
    }
    fn step(&mut self, cx: &Cx<'_>) -> StepOutcome {
        self.run_step(cx)
    }
    fn answer(&mut self, pending: &Pending, answer: Value) -> Result<(), String> {
        if !self.frontier.contains(&pending.node) {
            return Err(format!("node '{}' is not waiting for an answer", pending.node));
        }
        match self.loki().node(&pending.node).map(|n| &n.body) {
            Some(NodeBody::Approval(_)) | Some(NodeBody::Input(_)) => {}
            _ => return Err(format!("node '{}' is not an approval or input node", pending.node)),
        }
        let text = match answer {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        };
        // An input answer that fails the node's validation is refused here, so the question
        // stays open and the user can answer again (upstream re-asks on the terminal).
        if let Some(NodeBody::Input(i)) = self.loki().node(&pending.node).map(|n| &n.body) {
            if let Some(v) = &i.validation {
                let effective = if text.is_empty() { pending.default.clone().unwrap_or_default() } else { text.clone() };
                let check = template::check_input_validation(&v.value)?;
                if !check.check(&effective) {
                    return Err(template::input_validation_error(&v.value, &effective));
                }
            }
        }
        self.answers.insert(pending.node.clone(), text);
        Ok(())
    }
    fn state(&self) -> Value {
        state_value(&self.state)
    }
    fn edit_state(&mut self, key: &str, value: Value) -> Result<(), String> {
        if key.is_empty() {
            return Err("a state key cannot be empty".into());
        }
        self.state.insert(key.to_string(), Arc::new(value));
        Ok(())
    }
    fn condition(&self, _node: &str, condition: &str) -> Result<bool, String> {
        Ok(truthy(&Scope::new(&self.state).lenient(condition)))
    }
    fn check_condition(&self, condition: &str) -> Result<(), String> {
        let errors: Vec<String> = template::lint(condition)
            .into_iter()
            .filter(|i| i.severity == template::Severity::Error)
            .map(|i| i.message)
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
    }
    fn fork(&self) -> Box<dyn Machine> {
        Box::new(self.clone())
    }
    fn output(&self) -> Value {
        self.output.clone()
    }
    fn snapshot(&self) -> Value {
        self.durable_snapshot()
    }
    fn restore(&mut self, snapshot: &Value) -> Result<(), String> {
        self.durable_restore(snapshot)
    }
}

/// The state a run of `l` starts from: the declared `variables`' defaults, the graph's `initial_state`, the caller's
/// `initial_state` (a JSON object) laid over it, and `initial_prompt` = `input`. (Also how a
/// trace without a recorded initial state is read back: `launch::trace`.)
pub fn initial_state_of(l: &LokiDoc, input: &str, initial_state: Option<Value>) -> Result<LokiState, String> {
    let mut state = LokiState::new();
    // coyote 0.10.3: each declared variable with a default is seeded under its name; the
    // graph's `initial_state` and the caller's (Switchyard's form of `--agent-variable`) win.
    for v in &l.variables {
        if let Some(d) = &v.default {
            state.insert(v.name.value.clone(), Arc::new(Value::String(d.clone())));
        }
    }
    if let Value::Object(m) = &l.initial_state {
        for (k, v) in m {
            state.insert(k.clone(), Arc::new(v.clone()));
        }
    }
    match initial_state {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                state.insert(k, Arc::new(v));
            }
        }
        Some(other) => return Err(format!("the initial state must be a JSON object, got {}", type_name(&other))),
    }
    state.insert("initial_prompt".into(), Arc::new(Value::String(input.to_string())));
    Ok(state)
}

/// A breakpoint condition's verdict: false for "", `false`, `0`, `null`, `[]`, `{}` (after
/// trimming), true otherwise.
pub fn truthy(rendered: &str) -> bool {
    !matches!(rendered.trim(), "" | "false" | "0" | "null" | "[]" | "{}")
}

/// The state as one JSON object.
pub fn state_value(state: &LokiState) -> Value {
    Value::Object(state.iter().map(|(k, v)| (k.clone(), (**v).clone())).collect())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------------------------------------
// Templates against the state map
// ---------------------------------------------------------------------------------------------

/// The state a template sees: the map plus at most one scoped variable (`output`, `choice`,
/// `input`, a map's `as`), which shadows a state key of the same name.
struct Scope<'a> {
    state: &'a LokiState,
    bind: Option<(&'a str, &'a Value)>,
}

impl<'a> Scope<'a> {
    fn new(state: &'a LokiState) -> Scope<'a> {
        Scope { state, bind: None }
    }
    fn with(state: &'a LokiState, key: &'a str, value: &'a Value) -> Scope<'a> {
        Scope { state, bind: Some((key, value)) }
    }
    /// The value at a whole reference path (`a.b[0].c`), as upstream resolves it.
    fn resolve(&self, path: &str) -> Option<&'a Value> {
        let cut = path.find(['.', '[']).unwrap_or(path.len());
        let (root, rest) = path.split_at(cut);
        if root.is_empty() {
            // `{{.x}}`: upstream skips an empty first key.
            return rest.strip_prefix('.').filter(|r| !r.is_empty()).and_then(|r| self.resolve(r));
        }
        if root.contains(']') {
            return None;
        }
        let v: &'a Value = match self.bind {
            Some((k, v)) if k == root => v,
            _ => self.state.get(root)?.as_ref(),
        };
        if rest.is_empty() { Some(v) } else { template::lookup(v, rest) }
    }
    fn strict(&self, src: &str) -> Result<String, TemplateError> {
        template::render_strict_with(src, &|p| self.resolve(p))
    }
    fn lenient(&self, src: &str) -> String {
        template::render_lenient_with(src, &|p| self.resolve(p))
    }
    fn raw(&self, src: &str) -> Result<Value, TemplateError> {
        template::render_raw_with(src, &|p| self.resolve(p))
    }
}

/// Apply a node's `state_updates` (lenient, stored as strings) as coyote 0.10 does: every
/// entry is rendered against the state as it was before the block (no entry sees another's
/// write), then all are written in declaration order (a repeated key: the later one wins);
/// `bind` is the node's scoped variable, visible only while they render. An explicit `output`
/// entry is written like any other key.
fn apply_updates(node: &LokiNode, state: &mut LokiState, bind: Option<(&str, &Value)>) {
    let Some(ups) = &node.state_updates else { return };
    let rendered: Vec<(String, String)> = {
        let scope = match bind {
            Some((name, v)) => Scope::with(state, name, v),
            None => Scope::new(state),
        };
        ups.iter().map(|(k, t)| (k.value.clone(), scope.lenient(&t.text))).collect()
    };
    for (k, s) in rendered {
        state.insert(k, Arc::new(Value::String(s)));
    }
}

// ---------------------------------------------------------------------------------------------
// Diffs, merge and reducers
// ---------------------------------------------------------------------------------------------

/// Keys whose value in `after` is new or differs from `before` (an unchanged re-write is no
/// change).
pub fn diff(before: &LokiState, after: &LokiState) -> LokiState {
    after
        .iter()
        .filter(|(k, v)| match before.get(*k) {
            Some(b) => !Arc::ptr_eq(b, v) && **b != ***v,
            None => true,
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Merge branch diffs (already in node-id order) into `state` through the reducers: keys in
/// sorted order; a reducer folds every write; no reducer and one writer overwrites; no reducer
/// and several writers is an error.
pub fn merge_diffs(l: &LokiDoc, state: &mut LokiState, diffs: &[(String, LokiState)]) -> Result<(), String> {
    let mut by_key: BTreeMap<&str, Vec<&Arc<Value>>> = BTreeMap::new();
    for (_, d) in diffs {
        for (k, v) in d {
            by_key.entry(k.as_str()).or_default().push(v);
        }
    }
    for (k, writes) in by_key {
        match l.reducer(k) {
            Some(r) => {
                let mut cur: Option<Value> = state.get(k).map(|v| (**v).clone());
                for w in writes {
                    cur = Some(apply_reducer(r, cur.as_ref(), (**w).clone())?);
                }
                if let Some(v) = cur {
                    state.insert(k.to_string(), Arc::new(v));
                }
            }
            None if writes.len() == 1 => {
                state.insert(k.to_string(), writes[0].clone());
            }
            None => {
                return Err(format!(
                    "Key '{k}' was written by {} parallel branches but has no reducer declared. Declare one under `reducers:` (append, extend, concat, sum, max, min, merge or overwrite).",
                    writes.len()
                ));
            }
        }
    }
    Ok(())
}

/// One reducer step: `current` (absent allowed) combined with `incoming` (reference §5.4, with
/// upstream's error messages).
pub fn apply_reducer(r: Reducer, current: Option<&Value>, incoming: Value) -> Result<Value, String> {
    let name = r.as_str();
    let need = |what: &str, side: &str, v: &Value| {
        format!("reducer '{name}' requires {what} for the {side} value, got {}", type_name(v))
    };
    let num = |v: &Value, side: &str| v.as_f64().ok_or_else(|| need("a number", side, v));
    match r {
        Reducer::Overwrite => Ok(incoming),
        Reducer::Append | Reducer::Extend => {
            let mut arr = match current {
                None => Vec::new(),
                Some(Value::Array(a)) => a.clone(),
                Some(o) => return Err(need("an array (or absent)", "current", o)),
            };
            if r == Reducer::Append {
                arr.push(incoming);
            } else {
                match incoming {
                    Value::Array(items) => arr.extend(items),
                    o => return Err(need("an array", "incoming", &o)),
                }
            }
            Ok(Value::Array(arr))
        }
        Reducer::Concat => {
            let inc = match incoming {
                Value::String(s) => s,
                o => return Err(need("a string", "incoming", &o)),
            };
            match current {
                None => Ok(Value::String(inc)),
                Some(Value::String(c)) if c.is_empty() => Ok(Value::String(inc)),
                Some(Value::String(c)) => Ok(Value::String(format!("{c}\n{inc}"))),
                Some(o) => Err(need("a string (or absent)", "current", o)),
            }
        }
        Reducer::Sum => {
            let i = num(&incoming, "incoming")?;
            let c = match current {
                None => 0.0,
                Some(v) => num(v, "current")?,
            };
            Ok(json_number(c + i))
        }
        Reducer::Max | Reducer::Min => {
            let i = num(&incoming, "incoming")?;
            match current {
                None => Ok(json_number(i)),
                Some(v) => {
                    let c = num(v, "current")?;
                    Ok(json_number(if r == Reducer::Max { c.max(i) } else { c.min(i) }))
                }
            }
        }
        Reducer::Merge => {
            let mut m = match current {
                None => Map::new(),
                Some(Value::Object(m)) => m.clone(),
                Some(o) => return Err(need("an object (or absent)", "current", o)),
            };
            match incoming {
                Value::Object(items) => m.extend(items),
                o => return Err(need("an object", "incoming", &o)),
            }
            Ok(Value::Object(m))
        }
    }
}

/// Integral finite results stay integers.
fn json_number(n: f64) -> Value {
    if n.fract() == 0.0 && n.is_finite() && n.abs() <= i64::MAX as f64 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
    }
}

// ---------------------------------------------------------------------------------------------
// Node execution
// ---------------------------------------------------------------------------------------------

/// One frontier node's result: its flow and its diff, or its error.
type NodeResult = Result<(Ran, LokiState), String>;

enum Flow {
    /// Continue to these targets (each with why).
    Go(Vec<(String, RouteReason)>),
    /// An end node: the graph's output.
    End(String),
}

struct Ran {
    flow: Flow,
    /// The node's output (llm/agent), for map branches.
    output: Option<Value>,
}

impl Ran {
    fn go(targets: Vec<(String, RouteReason)>) -> Ran {
        Ran { flow: Flow::Go(targets), output: None }
    }
}

/// A tool call's outcome: its `tool_result` event, and the message the model gets back (the
/// text itself, other JSON as JSON text, a failure as `Error: ...`).
fn tool_answer(cx: &Cx<'_>, node: &str, call: &runtime::provider::ToolCall, outcome: Result<Value, String>) -> Value {
    let (result, error) = match outcome {
        Ok(v) => (v, None),
        Err(e) => (Value::Null, Some(e)),
    };
    let content = match (&error, &result) {
        (Some(e), _) => format!("Error: {e}"),
        (None, Value::String(s)) => s.clone(),
        (None, v) => v.to_string(),
    };
    cx.emit(EventBody::ToolResult { node: node.to_string(), id: call.id.clone(), name: call.name.clone(), result, error });
    json!({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
}

/// An llm node failure: the outermost message (what `{{output}}` shows) and the full chain.
struct LlmErr {
    outer: String,
    chain: String,
    extraction: bool,
    /// A provider classified the failure as one that may pass (timeout, connection, 429, 5xx,
    /// malformed answer).
    transient: bool,
}

impl LlmErr {
    fn plain(m: String) -> LlmErr {
        LlmErr { outer: m.clone(), chain: m, extraction: false, transient: false }
    }
    fn with(outer: &str, cause: impl std::fmt::Display) -> LlmErr {
        LlmErr { outer: outer.to_string(), chain: format!("{outer}: {cause}"), extraction: false, transient: false }
    }
}

/// What an llm node offers: its tools, and the supervisor of its children and jobs when it
/// has coyote 0.10.3's supervisor or job functions.
struct Offer<'t> {
    tools: &'t [Value],
    sup: Option<&'t Arc<Mutex<Supervisor>>>,
}

/// The node name under which a recording keeps the Python bridge's tool descriptions.
const PYTHON_NODE: &str = "@python";

/// What one super-step's nodes share.
#[derive(Clone, Copy)]
struct Exec<'a, 'c> {
    l: &'a LokiDoc,
    graph: &'a str,
    cx: &'a Cx<'c>,
    answers: &'a BTreeMap<String, String>,
    deadline: Option<Instant>,
    py: &'a Mutex<Option<PyBridge>>,
    mcp: &'a McpPool,
    rag: &'a RagStore,
    child_env: &'a connect::childenv::ChildEnv,
    vars: &'a [(String, String)],
    /// Agent nodes' child runs name their calls by their run path ([`chain`]'s module docs).
    qualify: bool,
    /// The super-step runs several nodes: an llm node's spawned children nest under
    /// `<run>/<node>` so that concurrent nodes' children never share a run id.
    fanout: bool,
    /// The teammate identity of a `teammates: true` agent node (or map item) running now.
    teammate: Option<&'a Teammate>,
    /// The run's own identity and inbox (what its llm nodes' teammate functions use).
    mail: &'a Mailbox,
}

/// Whether the agent's `tools.py` defines `name` at the top level.
fn python_tool(agent_dir: &std::path::Path, name: &str) -> bool {
    let Ok(text) = syntax::source::read_bounded_text(&agent_dir.join("tools.py"), syntax::source::SIDE_FILE_CAP, None) else {
        return false;
    };
    loki_tools::python_functions(&text).iter().any(|f| f == name)
}

impl Exec<'_, '_> {
    /// The subprocess tool (`tools.sh` / `tools.ts` / `tools.js`, or a `global_tools` file) the
    /// model knows as `name`, if any (see [`loki_tools::lookup`]).
    fn subprocess_tool(&self, name: &str) -> Option<Result<loki_tools::ToolDecl, String>> {
        loki_tools::lookup(&self.l.agent_dir, self.l.global_tools.iter().map(|t| t.value.as_str()), name)
    }

    /// The graph's Python `global_tools` files (`.py`).
    fn python_globals(&self) -> impl Iterator<Item = &str> {
        self.l
            .global_tools
            .iter()
            .map(|t| t.value.as_str())
            .filter(|f| std::path::Path::new(f).extension().is_some_and(|e| e.eq_ignore_ascii_case("py")))
    }

    /// The Python tool the model knows as `name`, as the bridge imports it: `tools.<name>` for
    /// the agent's `tools.py`, `<stem>.run` for a Python global tool (llm-functions' form), or
    /// why that global tool cannot be found.
    fn python_import(&self, name: &str) -> Option<Result<String, String>> {
        if python_tool(&self.l.agent_dir, name) {
            return Some(Ok(format!("tools.{name}")));
        }
        let file = self.python_globals().find(|f| std::path::Path::new(f).file_stem().is_some_and(|s| s == name))?;
        Some(loki_tools::find_global_tool(&self.l.agent_dir, file).map(|_| format!("{name}.run")))
    }

    /// Run `f` on the Python bridge, started on first use with the agent directory and the
    /// folders of the graph's Python global tools on `sys.path`.
    fn with_bridge<T>(&self, f: impl FnOnce(&mut PyBridge) -> Result<T, String>) -> Result<T, String> {
        let mut slot = self.py.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let mut path = vec![self.l.agent_dir.clone()];
            for file in self.python_globals() {
                if let Ok(found) = loki_tools::find_global_tool(&self.l.agent_dir, file)
                    && let Some(dir) = found.parent()
                    && !path.iter().any(|p| p == dir)
                {
                    path.push(dir.to_path_buf());
                }
            }
            *slot = Some(PyBridge::start_with_env(None, &path, self.child_env.clone()).map_err(|e| e.to_string())?);
        }
        f(slot.as_mut().expect("started above"))
    }

    /// A tool as offered to the model: Python tools with their description and JSON Schema from
    /// the bridge, subprocess tools with theirs from their comment tags / JSDoc, others (or a
    /// tool whose file is missing or unreadable) with a bare object schema.
    fn describe_tool(&self, name: &str) -> Value {
        let bare = json!({"name": name, "parameters": {"type": "object"}});
        match self.python_import(name) {
            // Describing imports the module (its top-level code runs): an effect, so a replay
            // takes the recorded description and starts no Python.
            Some(Ok(import)) => self
                .cx
                .effect(PYTHON_NODE, &format!("describe:{import}"), &Value::Null, || {
                    self.with_bridge(|b| b.describe(&import).map_err(|e| e.to_string()))
                        .map(|info| json!({"description": info.description, "parameters": info.schema}))
                })
                .map(|info| json!({"name": name, "description": info["description"], "parameters": info["parameters"]}))
                .unwrap_or(bare),
            Some(Err(_)) => bare,
            None => match self.subprocess_tool(name) {
                Some(Ok(decl)) => decl.offer(),
                _ => bare,
            },
        }
    }

    /// Run a tool the model called. Python tools (`tools.py`, `.py` global tools) run through
    /// the Python bridge with their folders on `sys.path`; shell / TypeScript / JavaScript agent
    /// tools and global tools as subprocesses ([`loki_tools::call`]), what they print besides
    /// their result going to the run log; MCP tools on their server. Tools get the run's
    /// remaining time (else [`loki_tools::DEFAULT_TIMEOUT`]) and end when the run is stopped.
    fn run_tool(&self, name: &str, args: &Value) -> Result<Value, String> {
        let timeout = match self.deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => loki_tools::DEFAULT_TIMEOUT,
        };
        if let Some(import) = self.python_import(name) {
            let import = import?;
            return self.with_bridge(|b| b.call_until(&import, args, timeout, Some(self.cx.stop)).map_err(|e| e.to_string()));
        }
        if let Some(found) = self.subprocess_tool(name) {
            let decl = found?;
            let env = loki_tools::CallEnv { agent_dir: &self.l.agent_dir, timeout, stop: Some(self.cx.stop) };
            let out = loki_tools::call_in(&decl, args, &env, self.child_env);
            if let Some(text) = out.log {
                self.cx.emit(EventBody::Log { source: format!("tool:{name}"), text });
            }
            return out.result;
        }
        if let Some((server, tool)) = self.connected_mcp_tool(name) {
            let mut timeout = server.spec().timeout;
            if let Some(d) = self.deadline {
                timeout = timeout.min(d.saturating_duration_since(Instant::now()));
            }
            server.network(self.cx)?;
            let result = server.call_with_timeout(&tool, args, self.cx.stop, timeout);
            if let Some(ev) = server.take_log() {
                self.cx.emit(ev);
            }
            return result;
        }
        Err(format!(
            "tool '{name}' is not defined: no function of that name in the agent's tools.py, \
             tools.sh, tools.ts or tools.js, no `global_tools` file named '{name}.*' and no \
             connected MCP server offering it"
        ))
    }

    /// The model of an llm node: its own `model`, else the agent's (`None`: the provider's
    /// default).
    fn model_of(&self, node_model: Option<&str>) -> Option<ModelRef> {
        node_model.or(self.l.model.as_ref().map(|m| m.value.as_str())).map(ModelRef::parse)
    }

    /// Sleep for a server's `Retry-After` (at most a minute), waking for a stop or the deadline.
    fn wait_unless_stopped(&self, d: Duration) {
        let until = Instant::now() + d.min(Duration::from_secs(60));
        while Instant::now() < until && !self.cx.stopped() && !self.past_deadline() {
            std::thread::sleep(Duration::from_millis(10).min(until.saturating_duration_since(Instant::now())));
        }
    }

    /// The MCP tool the model sees as `name`, among servers already listed (an llm node lists
    /// the servers it offers before the model can call their tools).
    fn connected_mcp_tool(&self, name: &str) -> Option<(Arc<McpServer>, String)> {
        self.mcp.servers().iter().filter(|s| s.was_offered()).find_map(|s| {
            let tools = s.tools(self.cx).ok()?;
            tools.into_iter().find(|t| t.name == name).map(|t| (s.clone(), t.tool))
        })
    }

    /// The tools of the agent's MCP server `server` (connecting it on first use), with its
    /// stderr so far moved to the run log.
    fn mcp_tools(&self, server: &str) -> Result<Vec<McpTool>, String> {
        let s = self.mcp.server(server)?;
        let listed = s.tools(self.cx);
        if let Some(ev) = s.take_log() {
            self.cx.emit(ev);
        }
        listed
    }

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Run one frontier node on a fork of `snapshot`, with its events. Returns its flow and
    /// its diff.
    fn run_node(&self, id: &str, snapshot: &LokiState) -> NodeResult {
        let node = self.l.node(id).ok_or_else(|| format!("Node '{id}' not found in graph '{}'", self.graph))?;
        let cx = self.cx;
        cx.emit(EventBody::NodeEnter { step: cx.step, node: id.to_string(), kind: node.kind_str().to_string() });
        let t0 = Instant::now();
        let mut st = snapshot.clone();
        let ran = self.exec(node, &mut st, false)?;
        let d = diff(snapshot, &st);
        let update = if d.is_empty() { Value::Null } else { state_value(&d) };
        cx.emit(EventBody::NodeExit {
            step: cx.step,
            node: id.to_string(),
            update,
            duration_ms: t0.elapsed().as_millis() as u64,
        });
        if let Flow::Go(targets) = &ran.flow {
            for (to, reason) in targets {
                cx.emit(EventBody::Route { from: id.to_string(), to: to.clone(), reason: reason.clone() });
            }
        }
        Ok((ran, d))
    }

    /// A node's `next` targets (`Static`); none is an error naming the kind, except in a map
    /// branch chain (`chain`), where a node without `next` ends the item's chain.
    fn static_next(node: &LokiNode, kind: &str, chain: bool) -> Result<Vec<(String, RouteReason)>, String> {
        if chain && node.next.is_empty() {
            return Ok(Vec::new());
        }
        if node.next.is_empty() && !node.next_is_list {
            return Err(format!("{kind} node '{}' has no `next` and is not an end node", node.id.value));
        }
        Ok(node.next.iter().map(|t| (t.value.clone(), RouteReason::Static)).collect())
    }

    /// Execute a node's body on `st`. `chain` is true for the steps of a map item's branch
    /// chain (coyote 0.10.3): routes are followed there too, and a node without `next` ends
    /// the chain.
    fn exec(&self, node: &LokiNode, st: &mut LokiState, chain: bool) -> Result<Ran, String> {
        let id = node.id.value.as_str();
        match &node.body {
            NodeBody::Script(s) => {
                let script = s
                    .script
                    .as_ref()
                    .map(|x| x.value.clone())
                    .ok_or_else(|| format!("script node '{id}' has no `script`"))?;
                // coyote 0.10.3: `timeout: 0` means no bound.
                let mut timeout = Duration::from_secs(s.timeout_bound().unwrap_or(model::doc::loki::MAX_SECS));
                if let Some(d) = self.deadline {
                    timeout = timeout.min(d.saturating_duration_since(Instant::now()));
                }
                // An effect: a replay of a recording answers it and the script does not run.
                let input = state_value(st);
                let ran = self.cx.effect(id, &format!("script:{script}"), &input, || {
                    run_script_with(&self.l.agent_dir, &script, &input, timeout, Some(self.cx.stop), self.child_env, self.vars)
                        .map(|out| json!({"updates": out.updates, "next": out.next}))
                        .map_err(|e| e.to_string())
                });
                match ran {
                    Ok(out) => {
                        if let Some(Value::Object(updates)) = out.get("updates") {
                            for (k, v) in updates {
                                st.insert(k.clone(), Arc::new(v.clone()));
                            }
                        }
                        apply_updates(node, st, None);
                        let targets = match out.get("next").and_then(Value::as_str) {
                            Some(n) => vec![(n.to_string(), RouteReason::Next)],
                            None => Self::static_next(node, "script", chain)?,
                        };
                        Ok(Ran::go(targets))
                    }
                    Err(e) => match &s.fallback {
                        Some(fb) => {
                            tracing::warn!("script node '{id}' failed, routing to fallback '{}': {e}", fb.value);
                            Ok(Ran::go(vec![(fb.value.clone(), RouteReason::Fallback)]))
                        }
                        _ => Err(e),
                    },
                }
            }
            NodeBody::Approval(a) => {
                let ans = self.answers.get(id).cloned().ok_or_else(|| format!("approval node '{id}' has no answer"))?;
                let choice = Value::String(ans.clone());
                apply_updates(node, st, Some(("choice", &choice)));
                if let Some(t) = a.route(&ans) {
                    Ok(Ran::go(vec![(t.value.clone(), RouteReason::RouteOption { option: ans })]))
                } else if let Some(o) = &a.on_other {
                    Ok(Ran::go(vec![(o.value.clone(), RouteReason::OnOther)]))
                } else {
                    Err(format!("approval node '{id}': the answer '{ans}' matches no route and no `on_other` is declared"))
                }
            }
            NodeBody::Input(i) => {
                let mut ans = self.answers.get(id).cloned().ok_or_else(|| format!("input node '{id}' has no answer"))?;
                if ans.is_empty() {
                    ans = i.default.as_ref().map(|d| Scope::new(st).lenient(&d.text)).unwrap_or_default();
                }
                if let Some(v) = &i.validation {
                    let check = template::check_input_validation(&v.value)?;
                    if !check.check(&ans) {
                        return Err(template::input_validation_error(&v.value, &ans));
                    }
                }
                let input = Value::String(ans);
                apply_updates(node, st, Some(("input", &input)));
                match node.next.first() {
                    Some(t) => Ok(Ran::go(vec![(t.value.clone(), RouteReason::Static)])),
                    None => Err("Input node has no `next` set".into()),
                }
            }
            NodeBody::Llm(x) => self.exec_llm(node, x, st, chain),
            NodeBody::Agent(a) => {
                let got = self.agent_attempts(id, a, st).and_then(|raw| match &a.output_schema {
                    Some(schema) => {
                        let text = match &raw {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        self.extract(id, &schema.value, &text)
                            .map(|v| (v, Some(schema)))
                            .map_err(|e| format!("structured extraction failed: {e}"))
                    }
                    None => Ok((raw, None)),
                });
                match got {
                    Ok((out, schema)) => {
                        if let Some(schema) = schema {
                            merge_declared(st, &out, &schema.value);
                        }
                        apply_updates(node, st, Some(("output", &out)));
                        let targets = Self::static_next(node, "agent", chain)?;
                        Ok(Ran { flow: Flow::Go(targets), output: Some(out) })
                    }
                    // coyote 0.10.3: a failed agent node with a `fallback` applies its
                    // `state_updates` with `{{output}}` = "Agent node failed: <error chain>" and
                    // routes there (in a map branch chain too).
                    Err(e) => match &a.fallback {
                        Some(fb) => {
                            let failure = Value::String(format!("Agent node failed: {e}"));
                            apply_updates(node, st, Some(("output", &failure)));
                            Ok(Ran { flow: Flow::Go(vec![(fb.value.clone(), RouteReason::Fallback)]), output: Some(failure) })
                        }
                        None => Err(e),
                    },
                }
            }
            NodeBody::Rag(r) => {
                let out = self.run_rag(id, r, st)?;
                apply_updates(node, st, Some(("output", &out)));
                let targets = Self::static_next(node, "rag", chain)?;
                Ok(Ran { flow: Flow::Go(targets), output: Some(out) })
            }
            NodeBody::End(e) => {
                apply_updates(node, st, None);
                let out = e.output.as_ref().map(|t| Scope::new(st).lenient(&t.text)).unwrap_or_default();
                Ok(Ran { flow: Flow::End(out), output: None })
            }
            NodeBody::Map(m) => self.exec_map(node, m, st),
            NodeBody::Unknown => Err(format!("node '{id}' has an unknown type '{}'", node.kind_str())),
        }
    }

    fn exec_map(&self, node: &LokiNode, m: &MapNode, st: &mut LokiState) -> Result<Ran, String> {
        let id = node.id.value.as_str();
        let targets = Self::static_next(node, "map", false)?;
        let over = m.over.as_ref().map(|t| t.text.clone()).unwrap_or_default();
        let items = match Scope::new(st).raw(&over) {
            Ok(Value::Array(a)) => a,
            Ok(other) => {
                return Err(format!(
                    "map node '{id}': `over` template '{over}' must resolve to an array, got {}",
                    type_name(&other)
                ));
            }
            Err(e) => return Err(format!("map node '{id}': {e}")),
        };
        let as_key = m.as_key.as_ref().map(|k| k.value.clone()).ok_or_else(|| format!("map node '{id}' has no `as`"))?;
        let branch_id = m.branch.as_ref().map(|b| b.value.clone()).ok_or_else(|| format!("map node '{id}' has no `branch`"))?;
        let collect = m
            .collect_into
            .as_ref()
            .map(|c| c.value.clone())
            .ok_or_else(|| format!("map node '{id}' has no `collect_into`"))?;
        let key = m.output_key().to_string();
        if key == as_key {
            return Err(format!("map node '{id}': `as` and `output_key` are both '{key}'; they must differ"));
        }
        let chain = self.chain_of(id, &branch_id)?;
        // A number, or (coyote 0.10.3) a `{{key}}` template resolved against the state now.
        let limit = m.concurrency_in(&self.l.settings, &state_value(st)).map_err(|e| format!("map node '{id}': {e}"))? as usize;
        // The chain must write `output_key` itself: a value the parent state holds is not its
        // result (coyote 0.10.3 removes the key from each fork first).
        let mut base: LokiState = st.clone();
        base.remove(&key);
        let base = &base;
        // coyote 0.10.3: with two items or more, each item is a teammate named after the first
        // `teammates: true` agent of its chain (breadth first from the entry).
        let flagged = self.l.map_chain(&branch_id).into_iter().find_map(|i| match &self.l.nodes[i].body {
            NodeBody::Agent(a) if a.teammates() => a.agent.as_ref().map(|n| n.value.clone()),
            _ => None,
        });
        let members: Vec<(String, String, String)> = match &flagged {
            Some(agent) => (0..items.len()).map(|i| (format!("{branch_id}[{i}]"), agent.clone(), format!("{id}_{i}"))).collect(),
            None => Vec::new(),
        };
        let team = supervisor::provision(&members);
        let results = par_map(&items, limit, &|i, item: &Value| -> Result<Value, String> {
            let mate = team.get(i);
            let r = Exec { teammate: mate, ..*self }
                .run_item(id, i, item, base, &as_key, &key, &branch_id, &chain)
                .map_err(|e| format!("map node '{id}': sub-branch [{i}] failed: {e}"));
            if let Some(t) = mate {
                t.peers.finish(&t.id);
            }
            r
        });
        let mut collected = Vec::with_capacity(results.len());
        for r in results {
            collected.push(r?);
        }
        st.insert(collect, Arc::new(Value::Array(collected)));
        Ok(Ran::go(targets))
    }

    fn exec_llm(&self, node: &LokiNode, x: &LlmNode, st: &mut LokiState, chain: bool) -> Result<Ran, String> {
        let id = node.id.value.as_str();
        match self.llm_output(id, x, st) {
            Ok(out) => {
                if let Some(schema) = &x.output_schema {
                    merge_declared(st, &out, &schema.value);
                }
                apply_updates(node, st, Some(("output", &out)));
                let targets = Self::static_next(node, "llm", chain)?;
                Ok(Ran { flow: Flow::Go(targets), output: Some(out) })
            }
            Err(e) => {
                let text = if e.extraction {
                    format!("LLM node structured-extraction failed: {}", e.outer)
                } else {
                    format!("LLM node failed: {}", e.outer)
                };
                let failure = Value::String(text);
                apply_updates(node, st, Some(("output", &failure)));
                match &x.fallback {
                    Some(fb) => {
                        let targets = vec![(fb.value.clone(), RouteReason::Fallback)];
                        Ok(Ran { flow: Flow::Go(targets), output: Some(failure) })
                    }
                    None => Err(format!(
                        "LLM node failed and no fallback declared: {}. Add a `fallback:` route to handle this failure.",
                        e.chain
                    )),
                }
            }
        }
    }

    /// Whether the `mcp_tools` allow-lists (graph level and the node's own, coyote 0.10.3) let
    /// `tool` of `server` through: every layer that names the server must match it.
    fn mcp_allowed(&self, x: &LlmNode, server: &str, tool: &str) -> bool {
        self.l.mcp_tools.as_ref().is_none_or(|m| m.allows(server, tool))
            && x.mcp_tools.as_ref().is_none_or(|m| m.allows(server, tool))
    }

    /// The tools an llm node offers (its whitelist resolved against the agent's tools).
    fn llm_tools(&self, x: &LlmNode) -> Result<Vec<Value>, String> {
        let Some(list) = &x.tools else { return Ok(Vec::new()) };
        if list.is_empty() {
            return Ok(Vec::new());
        }
        let mut universe: Vec<String> = self
            .l
            .global_tools
            .iter()
            .filter_map(|t| std::path::Path::new(&t.value).file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
        universe.extend(loki_tools::AgentTools::read(&self.l.agent_dir).names);
        let servers: Vec<&str> = self.l.mcp_servers.iter().map(|s| s.value.as_str()).collect();
        let mut out = Vec::new();
        for t in list {
            let name = t.value.as_str();
            if let Some(server) = name.strip_prefix("mcp:")
                && servers.contains(&server)
            {
                // `mcp:<server>`: every tool of that server the `mcp_tools` allow-lists let
                // through (coyote 0.10.3: the graph's and the node's layers intersect).
                out.extend(self.mcp_tools(server)?.iter().filter(|t| self.mcp_allowed(x, server, &t.tool)).map(McpTool::offer));
                continue;
            }
            if !universe.iter().any(|u| u == name)
                && let Some(family) = AgentFunctions::of(name)
            {
                // coyote 0.10.3: the agent's built-in functions, where the graph offers them.
                if !self.l.offers(family) {
                    let why = match family {
                        AgentFunctions::Job => "`max_concurrent_jobs` is 0",
                        _ => "`can_spawn_agents` is false",
                    };
                    return Err(format!(
                        "llm node references '{name}', a built-in function that graph '{}' does not offer ({why})",
                        self.graph
                    ));
                }
                out.extend(supervisor::function(name));
                continue;
            }
            if !name.starts_with("mcp:") && !universe.iter().any(|u| u == name) && !servers.is_empty() {
                // An individual MCP function, looked up in the agent's servers.
                let mut found = None;
                for server in &servers {
                    if let Some(tool) = self.mcp_tools(server)?.into_iter().find(|t| t.name == name) {
                        if !self.mcp_allowed(x, server, &tool.tool) {
                            return Err(format!(
                                "llm node offers the MCP tool '{name}' of server '{server}', which the `mcp_tools` allow-list of this {} does not allow",
                                if x.mcp_tools.as_ref().is_some_and(|m| m.patterns(server).is_some()) { "node" } else { "graph" }
                            ));
                        }
                        found = Some(tool);
                        break;
                    }
                }
                if let Some(tool) = found {
                    out.push(tool.offer());
                    continue;
                }
            }
            let known = match name.strip_prefix("mcp:") {
                Some(server) => servers.contains(&server),
                None => universe.iter().any(|u| u == name),
            };
            if !known {
                let mut provides: Vec<String> = universe.clone();
                provides.extend(servers.iter().map(|s| format!("mcp:{s}")));
                return Err(format!(
                    "llm node references unknown tool '{name}'. Agent '{}' provides: {}",
                    self.graph,
                    if provides.is_empty() { "(nothing)".to_string() } else { provides.join(", ") }
                ));
            }
            out.push(self.describe_tool(name));
        }
        Ok(out)
    }

    /// Render, call (with retries and the tool loop), extract.
    fn llm_output(&self, id: &str, x: &LlmNode, st: &LokiState) -> Result<Value, LlmErr> {
        let scope = Scope::new(st);
        let mut instructions = match &x.instructions {
            Some(t) => Some(scope.strict(&t.text).map_err(|e| LlmErr::with("Failed to interpolate llm node instructions", e))?),
            None => None,
        };
        let mut prompt = match &x.prompt {
            Some(t) => scope.strict(&t.text).map_err(|e| LlmErr::with("Failed to interpolate llm node prompt", e))?,
            None => String::new(),
        };
        if let Some(schema) = &x.output_schema {
            let hint = format!(
                "\n\nRespond with a JSON object matching this schema. Output only the object: no prose, no code fences.\n{}",
                serde_json::to_string_pretty(&schema.value).unwrap_or_default()
            );
            match &mut instructions {
                Some(i) => i.push_str(&hint),
                None => prompt.push_str(&hint),
            }
        }
        let tools = self.llm_tools(x).map_err(LlmErr::plain)?;
        // coyote 0.10.3: the node's spawned children and jobs; what it leaves uncollected is
        // reaped when it ends (upstream's `node_job_scope`).
        let sup = self.node_supervisor(&tools);
        let offer = Offer { tools: &tools, sup: sup.as_ref() };
        let result = self.llm_attempts(id, x, (instructions.as_deref(), &prompt), &offer);
        if let Some(left) = sup.map(|s| supervisor::lock(&s).uncollected()).filter(|l| !l.is_empty()) {
            self.cx.emit(EventBody::Log {
                source: format!("llm:{id}"),
                text: format!("reaped at the node's end, never collected: {}", left.join(", ")),
            });
        }
        result
    }

    /// The supervisor of an llm node offered coyote 0.10.3's supervisor or job functions, with
    /// the graph's limits.
    fn node_supervisor(&self, tools: &[Value]) -> Option<Arc<Mutex<Supervisor>>> {
        let wants = tools.iter().filter_map(|t| t["name"].as_str()).filter_map(AgentFunctions::of);
        if !wants.into_iter().any(|f| f != AgentFunctions::Teammate) {
            return None;
        }
        let l = self.l;
        Some(Arc::new(Mutex::new(Supervisor::new(supervisor::Limits {
            spawn: l.can_spawn_agents(),
            max_agents: l.max_concurrent_agents() as usize,
            max_depth: l.max_agent_depth().min(u64::from(MAX_AGENT_DEPTH)),
            max_jobs: l.max_concurrent_jobs() as usize,
            spawnable: None,
        }))))
    }

    /// The node's attempts (`max_attempts`), each a tool-call loop, and the extraction.
    fn llm_attempts(&self, id: &str, x: &LlmNode, text: (Option<&str>, &str), offer: &Offer<'_>) -> Result<Value, LlmErr> {
        let (instructions, prompt) = text;
        let attempts = x.max_attempts();
        if attempts == 0 {
            return Err(LlmErr::plain("llm node exhausted retries".into()));
        }
        let node_deadline =
            x.timeout_bound().map(|t| (t, Instant::now() + Duration::from_secs(t)));
        let mut last = None;
        for _ in 0..attempts {
            match self.llm_loop(id, x, instructions, prompt, offer, node_deadline) {
                Ok(text) => {
                    let out = match &x.output_schema {
                        Some(schema) => self.extract(id, &schema.value, &text).map_err(|e| LlmErr {
                            outer: e.clone(),
                            chain: format!("structured extraction failed: {e}"),
                            extraction: true,
                            transient: false,
                        })?,
                        None => Value::String(text),
                    };
                    return Ok(out);
                }
                Err((e, retry)) => {
                    let transient = retry && (e.transient || TRANSIENT.iter().any(|t| e.chain.contains(t)));
                    last = Some(e);
                    if !transient {
                        break;
                    }
                }
            }
        }
        Err(last.unwrap_or_else(|| LlmErr::plain("llm node exhausted retries".into())))
    }

    /// One attempt: the tool-call loop. The error's flag says whether a retry may help.
    fn llm_loop(
        &self,
        id: &str,
        x: &LlmNode,
        instructions: Option<&str>,
        prompt: &str,
        offer: &Offer<'_>,
        node_deadline: Option<(u64, Instant)>,
    ) -> Result<String, (LlmErr, bool)> {
        let tools = offer.tools;
        // coyote 0.10.3: `max_iterations: 0` means no turn cap (the run's timeout and stop
        // still end it).
        let cap = x.turn_cap();
        let mut messages = Vec::new();
        if let Some(i) = instructions.filter(|i| !i.is_empty()) {
            messages.push(json!({"role": "system", "content": i}));
        }
        messages.push(json!({"role": "user", "content": prompt}));
        let offered: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        // coyote 0.10.3's built-in functions: children nest under the graph's run (under the
        // node's own when its super-step runs several nodes), and speak as the graph does.
        let names: Vec<String> = offered.iter().map(|n| n.to_string()).collect();
        let host = normal::Spawner {
            ex: self,
            node: id,
            base: if self.fanout { format!("{}/{id}", self.cx.run) } else { self.cx.run.clone() },
            agents_dir: self.l.agents_dir(),
            mail: self.mail,
            sup: offer.sup,
        };
        let calls =
            Calls { sup: offer.sup, mail: self.mail, child_depth: u64::from(self.cx.depth) + 1, offered: &names, host: &host };
        let mut texts: Vec<String> = Vec::new();
        let timeout_err = |n: u64| (LlmErr::plain(format!("llm node timed out after {n}s")), false);
        for _ in 0..cap.unwrap_or(u64::MAX) {
            if let Some((n, d)) = node_deadline
                && Instant::now() >= d
            {
                return Err(timeout_err(n));
            }
            if self.past_deadline() || self.cx.stopped() {
                return Err((LlmErr::plain(format!("Graph '{}' timed out or was stopped", self.graph)), false));
            }
            let req = LlmRequest {
                node: id.to_string(),
                messages: Value::Array(messages.clone()),
                tools: Value::Array(tools.to_vec()),
                model: self.model_of(x.model.as_ref().map(|m| m.value.as_str())),
                temperature: x.temperature,
                top_p: x.top_p,
                response_format: None,
                ..LlmRequest::default()
            };
            let resp = self.cx.complete(&req).map_err(|e| {
                // Upstream retries by the error's text; classified failures (timeouts,
                // connection errors, 429, 5xx, malformed answers) are retried too, after the
                // server's `Retry-After` when it sent one.
                if e.kind.transient()
                    && let Some(after) = e.retry_after
                {
                    self.wait_unless_stopped(after);
                }
                let mut err = LlmErr::with("LLM call failed", &e);
                err.transient = e.kind.transient();
                (err, true)
            })?;
            if let Some((n, d)) = node_deadline
                && Instant::now() >= d
            {
                return Err(timeout_err(n));
            }
            let content = resp.content.clone().unwrap_or_default();
            if !content.is_empty() {
                texts.push(content.clone());
            }
            if resp.tool_calls.is_empty() {
                return Ok(texts.join("\n"));
            }
            messages.push(json!({"role": "assistant", "content": content, "tool_calls": resp.tool_calls}));
            for call in &resp.tool_calls {
                self.cx.emit(EventBody::ToolCall { node: id.to_string(), call: call.clone() });
                let outcome = if offered.contains(&call.name.as_str()) && Calls::handles(&call.name) {
                    calls.call(&call.name, &call.args)
                } else if offered.contains(&call.name.as_str()) {
                    self.cx.tool(id, &call.name, &call.args, || self.run_tool(&call.name, &call.args))
                } else {
                    Err(format!("tool '{}' is not available to this node", call.name))
                };
                messages.push(tool_answer(&self.cx, id, call, outcome));
            }
            // Every child and job of this turn ends within it (see `supervisor`).
            calls.settle();
        }
        Err((LlmErr::plain(format!("llm node hit max_iterations ({}) before LLM concluded", cap.unwrap_or(u64::MAX))), false))
    }

    /// Structured extraction (§7.5): JSON fast path, else one extractor call and one repair.
    fn extract(&self, id: &str, schema: &Value, raw: &str) -> Result<Value, String> {
        if let Some(v) = parse_json_loose(raw) {
            return Ok(v);
        }
        let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
        let call = |user: String| -> Result<String, String> {
            // The extractor uses the agent's model, not the node's override (as upstream).
            let req = LlmRequest {
                node: id.to_string(),
                messages: json!([{"role": "system", "content": EXTRACTOR_SYSTEM}, {"role": "user", "content": user}]),
                tools: json!([]),
                model: self.model_of(None),
                ..LlmRequest::default()
            };
            self.cx
                .complete(&req)
                .map(|r| r.content.unwrap_or_default())
                .map_err(|e| format!("Structured-output extractor call failed: {e}"))
        };
        let first = call(format!("Schema:\n{pretty}\n\nInput:\n{raw}"))?;
        if let Some(v) = parse_json_loose(&first) {
            return Ok(v);
        }
        let second = call(format!(
            "Your previous response was not valid JSON. Return only the JSON object.\n\nSchema:\n{pretty}\n\nInput:\n{first}"
        ))?;
        parse_json_loose(&second).ok_or_else(|| {
            format!("Structured-output extractor failed to produce valid JSON after repair retry. Last response:\n{second}")
        })
    }

    /// A rag node's retrieval (reference §7.7): the strict-rendered `query` against the node's
    /// knowledge base, built or updated first when needed, within the node's `timeout`. The
    /// debugger sees a `log` line about the knowledge base and a `tool_call` / `tool_result`
    /// pair named `rag:<node>` with the query and the hits.
    fn run_rag(&self, id: &str, r: &model::doc::loki::RagNode, st: &LokiState) -> Result<Value, String> {
        let query = Scope::new(st)
            .strict(r.query_text())
            .map_err(|e| format!("Failed to interpolate rag node query: {e}"))?;
        let rag_ids = self.l.nodes.iter().filter(|n| matches!(n.body, NodeBody::Rag(_))).map(|n| n.id.value.as_str());
        let spec = rag::Spec::of_node(id, &self.l.agent_dir, r, rag_ids);
        let timeout = Duration::from_secs(r.timeout_bound().unwrap_or(model::doc::loki::MAX_SECS));
        let mut deadline = Instant::now() + timeout;
        if let Some(d) = self.deadline {
            deadline = deadline.min(d);
        }
        let source = format!("rag:{id}");
        let log = |text: String| self.cx.emit(EventBody::Log { source: source.clone(), text });
        for (field, set) in [
            ("reranker_model", r.reranker_model.is_some()),
            ("extractor_model", r.extractor_model.is_some()),
            ("extractor_prompt", r.extractor_prompt.is_some()),
            ("graph_hops", r.graph_hops.is_some()),
        ] {
            if set {
                log(format!("warning: `{field}` is ignored (Switchyard has no rerankers or graph RAG)"));
            }
        }
        let call = runtime::provider::ToolCall {
            id: format!("rag-{id}-{}", self.cx.step),
            name: source.clone(),
            args: json!({"query": query, "top_k": spec.top_k()}),
        };
        self.cx.emit(EventBody::ToolCall { node: id.to_string(), call: call.clone() });
        let network = self.cx.provider.network_allowed();
        // An effect: a replay of a recording answers it without building or reading anything.
        // What it says about the knowledge base is part of the result, so a replay says it too.
        let said = Mutex::new(Vec::new());
        let note = |text: String| {
            log(text.clone());
            said.lock().unwrap_or_else(|p| p.into_inner()).push(text);
        };
        let ctl = rag::Ctl { stop: self.cx.stop, deadline, timeout, log: &note, network };
        let outcome = self.cx.effect(id, "rag", &call.args, || {
            let ret = self.rag.retrieve(&spec, &query, &ctl)?;
            let kb = &ret.kb;
            let what = format!(
                "{} ({} documents, {} chunks{})",
                kb.path.display(),
                kb.document_count(),
                kb.chunk_count(),
                match &kb.file.vectors_model {
                    Some(m) if kb.embedded_count() > 0 => format!(", {} embedded with {m}", kb.embedded_count()),
                    _ => String::new(),
                }
            );
            match &ret.source {
                rag::KbSource::Memory => {}
                rag::KbSource::File => note(format!("loaded knowledge base {what}")),
                rag::KbSource::Built { reason, read, kept, embedded } => note(format!(
                    "built knowledge base {what}: {reason}; {read} documents read, {kept} unchanged, {embedded} chunks embedded"
                )),
            }
            let hits: Vec<Value> = ret
                .hits
                .iter()
                .map(|h| {
                    json!({"source": h.source, "chunk": h.chunk, "score": h.score, "keyword": h.keyword, "cosine": h.cosine, "text": h.text})
                })
                .collect();
            let mode = if ret.hybrid { "hybrid" } else { "keyword" };
            let said = said.lock().unwrap_or_else(|p| p.into_inner()).clone();
            Ok(json!({"result": {"mode": mode, "hits": hits}, "output": ret.output(), "log": said}))
        });
        // Replayed (nothing was said while it ran): say what the recorded run said.
        if said.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            for line in outcome.iter().filter_map(|v| v.get("log")?.as_array()).flatten() {
                if let Some(text) = line.as_str() {
                    log(text.to_string());
                }
            }
        }
        let (result, error) = match &outcome {
            Ok(v) => (v.get("result").cloned().unwrap_or(Value::Null), None),
            Err(e) => (Value::Null, Some(e.clone())),
        };
        self.cx.emit(EventBody::ToolResult { node: id.to_string(), id: call.id, name: call.name, result, error });
        outcome.map(|v| v.get("output").cloned().unwrap_or(Value::Null))
    }

    /// Run the child agent up to `max_attempts` times (coyote 0.10.3): only a failure that
    /// upstream's transient matcher accepts (timeouts, rate limits, 429, connection resets and
    /// refusals, no output) is tried again, each attempt a fresh child run; every other failure
    /// ends at once. A retry is said in a `log` event.
    fn agent_attempts(&self, id: &str, a: &AgentNode, st: &LokiState) -> Result<Value, String> {
        let attempts = a.max_attempts().max(1);
        let mut n = 1;
        loop {
            match self.run_agent(id, a, st) {
                Ok(v) => return Ok(v),
                Err(e) if n < attempts && TRANSIENT.iter().any(|t| e.contains(t)) && !self.cx.stopped() => {
                    self.cx.emit(EventBody::Log {
                        source: format!("agent:{id}"),
                        text: format!("attempt {n} of {attempts} failed with a transient error, trying again: {e}"),
                    });
                    n += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// An agent node's `inputs` (coyote 0.10.3) rendered against this graph's state: a lone
    /// `{{key}}` keeps the value's JSON type, other text becomes a string; `initial_prompt` is
    /// reserved (always the node's `prompt`).
    fn agent_inputs(id: &str, a: &AgentNode, st: &LokiState) -> Result<Option<Value>, String> {
        let Some(inputs) = &a.inputs else { return Ok(None) };
        let mut m = Map::new();
        for (k, t) in inputs {
            if k.value == "initial_prompt" {
                return Err(format!(
                    "agent node '{id}': `initial_prompt` cannot be an input (it is always seeded from `prompt`)"
                ));
            }
            let v = Scope::new(st)
                .raw(&t.text)
                .map_err(|e| format!("Failed to interpolate agent node input '{}': {e}", k.value))?;
            m.insert(k.value.clone(), v);
        }
        Ok(Some(Value::Object(m)))
    }

    /// Run a child graph agent to its end (nested run, answers from the queue).
    fn run_agent(&self, id: &str, a: &AgentNode, st: &LokiState) -> Result<Value, String> {
        let name = a.agent.as_ref().map(|n| n.value.clone()).ok_or_else(|| format!("agent node '{id}' has no `agent`"))?;
        let prompt = match &a.prompt {
            Some(t) => Scope::new(st).strict(&t.text).map_err(|e| format!("Failed to interpolate agent node prompt: {e}"))?,
            None => String::new(),
        };
        // coyote 0.10.3: the spawner checks the child's absolute depth against its own
        // `max_agent_depth` (default 3).
        let child_depth = u64::from(self.cx.depth) + 1;
        let max_depth = self.l.max_agent_depth().min(u64::from(MAX_AGENT_DEPTH));
        if child_depth > max_depth {
            return Err(format!(
                "Max agent depth exceeded: agent node '{id}' would start '{name}' at depth {child_depth} (max_agent_depth={max_depth})"
            ));
        }
        let inputs = Self::agent_inputs(id, a, st)?;
        let dirs: Vec<PathBuf> = vec![self.l.agents_dir().join(&name), self.l.agent_dir.join("agents").join(&name)];
        // coyote 0.10.3: the child is a graph agent (graph.yaml) or a normal one (config.yaml),
        // looked up beside this agent first.
        let Some((path, normal)) = locate_agent(&dirs) else {
            let tried: Vec<String> =
                dirs.iter().map(|d| format!("{} (or config.yaml)", d.join("graph.yaml").display())).collect();
            return Err(format!("Agent '{name}' not found for agent node '{id}': tried {}", tried.join(" and ")));
        };
        // coyote 0.10.3: `timeout: 0` means no bound (the run's own deadline still applies).
        let timeout = a.timeout_bound().unwrap_or(model::doc::loki::MAX_SECS);
        let mut deadline = Instant::now() + Duration::from_secs(timeout);
        if let Some(d) = self.deadline {
            deadline = deadline.min(d);
        }
        // coyote 0.10.3: a `teammates: true` node in a fan-out speaks as its teammate identity
        // (a graph child's llm nodes too) and learns the roster from its prompt; any other child
        // gets an inbox of its own.
        let mate = self.teammate.filter(|_| a.teammates());
        let prompt = match mate {
            Some(t) => format!("{prompt}\n\n{}", supervisor::roster_text(t)),
            None => prompt,
        };
        let mail = match mate {
            Some(t) => Mailbox::of_teammate(t),
            None => Mailbox::alone(supervisor::peer_id(&name, id)),
        };
        let mut graph_child;
        let mut normal_child;
        let child: &mut dyn Machine = if normal {
            if inputs.is_some() {
                return Err(format!(
                    "agent node '{id}': `inputs` only seed graph agents, and '{name}' ({}) is a normal agent (config.yaml)",
                    path.display()
                ));
            }
            normal_child = normal::NormalMachine::new(&path, &prompt)
                .map_err(|e| format!("Agent '{name}' failed to start: {e}"))?
                .with_child_env(self.child_env.clone())
                .with_mailbox(mail);
            normal_child.outer_deadline = Some(deadline);
            &mut normal_child
        } else {
            let doc = Arc::new(load_path(&path));
            graph_child = LokiMachine::new(doc, &prompt, inputs).map_err(|e| format!("Agent '{name}' failed to start: {e}"))?;
            graph_child = graph_child.with_child_env(self.child_env.clone()).with_mailbox(mail);
            graph_child.outer_deadline = Some(deadline);
            graph_child.rag = Arc::new(RagStore::new(self.rag.configured()));
            graph_child.qualify_nested = self.qualify;
            &mut graph_child
        };
        let qualified: SharedProvider;
        let qcx;
        let cx = if self.qualify {
            qualified = chain::NamedProvider::for_run(self.cx.provider, &format!("{}/{id}", self.cx.run));
            qcx = self.cx_with(&qualified);
            &qcx
        } else {
            self.cx
        };
        nested_result(&name, run_nested(child, cx, id, Value::String(prompt), Some(deadline)), timeout)
    }

    /// This step's context with another provider.
    fn cx_with<'p>(&'p self, provider: &'p SharedProvider) -> Cx<'p> {
        let cx = self.cx;
        Cx {
            run: cx.run.clone(),
            step: cx.step,
            log: cx.log,
            provider,
            stop: cx.stop,
            answers: cx.answers,
            depth: cx.depth,
            gate: cx.gate,
        }
    }
}

/// Where agent `name` lives among `dirs` (its possible folders, in order): its `graph.yaml`
/// (`false`), or its folder when it is a normal agent with a `config.yaml` (`true`).
fn locate_agent(dirs: &[PathBuf]) -> Option<(PathBuf, bool)> {
    dirs.iter().find_map(|d| {
        if d.join("graph.yaml").is_file() {
            Some((d.join("graph.yaml"), false))
        } else if d.join("config.yaml").is_file() {
            Some((d.clone(), true))
        } else {
            None
        }
    })
}

/// A nested agent run's end as the agent's output or the error its parent sees (`timeout`: the
/// bound it ran under, in seconds).
fn nested_result(name: &str, end: NestedEnd, timeout: u64) -> Result<Value, String> {
    match end {
        NestedEnd::Completed(output) => Ok(output),
        NestedEnd::Unanswered(p) => Err(format!(
            "Agent '{name}' asks at its node '{}' ({:?}) but no answer is queued: a nested agent takes answers only from the queue (--answer)",
            p.node, p.prompt
        )),
        NestedEnd::Failed { node, message } => {
            let at = node.map(|n| format!(" at node '{n}'")).unwrap_or_default();
            Err(format!("Agent '{name}' failed{at}: {message}"))
        }
        NestedEnd::Stopped => Err(format!("Agent '{name}' aborted")),
        NestedEnd::TimedOut => Err(format!("Agent '{name}' timed out after {timeout}s")),
    }
}

/// Auto-merge (coyote 0.10.3): the top-level keys of an object output that the schema declares
/// under `properties` go into the state; undeclared keys are dropped (a schema without
/// `properties` merges nothing; the validator warns about it).
fn merge_declared(st: &mut LokiState, v: &Value, schema: &Value) {
    let (Value::Object(m), Some(Value::Object(props))) = (v, schema.get("properties")) else { return };
    for (k, v) in m {
        if props.contains_key(k) {
            st.insert(k.clone(), Arc::new(v.clone()));
        }
    }
}

/// Run `f` over `items` on at most `limit` threads; results in input order.
fn par_map<T: Sync, R: Send>(items: &[T], limit: usize, f: &(dyn Fn(usize, &T) -> R + Sync)) -> Vec<R> {
    if items.len() <= 1 || limit <= 1 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..limit.min(items.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= items.len() {
                        break;
                    }
                    let r = f(i, &items[i]);
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every item ran"))
        .collect()
}


#[cfg(test)]
mod tests {
    use super::*;

    fn st(v: Value) -> LokiState {
        v.as_object().unwrap().iter().map(|(k, v)| (k.clone(), Arc::new(v.clone()))).collect()
    }

    /// A folder `<tmp>/sy-loki-<tag>-<pid>/` with `planner/graph.yaml` = `graph` and a normal
    /// agent `kid`; the planner's machine.
    fn planner(tag: &str, graph: &str) -> LokiMachine {
        let dir = std::env::temp_dir().join(format!("sy-loki-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("planner")).unwrap();
        std::fs::create_dir_all(dir.join("kid")).unwrap();
        std::fs::write(dir.join("planner/graph.yaml"), graph).unwrap();
        std::fs::write(dir.join("kid/config.yaml"), "instructions: You help.\n").unwrap();
        LokiMachine::new(Arc::new(load_path(&dir.join("planner/graph.yaml"))), "go", None).unwrap()
    }

    fn run_scripted(m: LokiMachine, replies: &str) -> runtime::session::RunSession {
        use runtime::provider::ScriptedProvider;
        use runtime::session::{RunOptions, RunSession};
        let p = ScriptedProvider::from_str(std::path::Path::new("replies.yaml"), replies).unwrap();
        let mut s = RunSession::new(Box::new(m), json!("go"), RunOptions::new(Box::new(p)));
        s.run();
        s
    }

    #[test]
    fn graph_llm_nodes_of_a_fan_out_spawn_children_under_their_own_names() {
        let graph = "name: planner\nversion: \"1.0\"\ncan_spawn_agents: true\nstart: go\nnodes:\n  go:\n    type: llm\n    prompt: p\n    next: [a, b]\n\
                     \x20 a:\n    type: llm\n    prompt: p\n    tools: [agent__spawn, agent__collect]\n    state_updates:\n      ra: \"{{output}}\"\n    next: join\n\
                     \x20 b:\n    type: llm\n    prompt: p\n    tools: [agent__spawn, agent__collect]\n    state_updates:\n      rb: \"{{output}}\"\n    next: join\n\
                     \x20 join:\n    type: end\n    output: \"{{ra}} {{rb}}\"\n";
        let mut replies = String::from("replies:\n  - node: go\n    content: split\n");
        for n in ["a", "b"] {
            replies.push_str(&format!(
                "  - node: {n}\n    tool_calls:\n      - {{ id: s{n}, name: agent__spawn, args: {{ agent: kid, prompt: \"for {n}\" }} }}\n      - {{ id: c{n}, name: agent__collect, args: {{ id: agent_kid_1 }} }}\n\
                 \x20 - node: \"kid@{n}/agent_kid_1\"\n    content: kid of {n}\n  - node: {n}\n    content: {n} done\n"
            ));
        }
        let s = run_scripted(planner("fanout-spawn", graph), &replies);
        assert!(
            matches!(s.status(), runtime::session::Status::Finished { output, .. } if output == "a done b done"),
            "{:?}",
            s.status()
        );
        let events = s.events();
        let children: Vec<&str> = events
            .iter()
            .filter(|e| matches!(e.body, EventBody::RunStarted { .. }))
            .filter_map(|e| e.run.split_once('/').map(|(_, rest)| rest))
            .collect();
        assert_eq!(children.len(), 2, "{children:?}");
        assert!(children.contains(&"a/agent_kid_1") && children.contains(&"b/agent_kid_1"), "{children:?}");
        let collected = |out: &str| {
            events.iter().any(|e| matches!(&e.body, EventBody::ToolResult { name, result, .. } if name == "agent__collect" && result["output"] == out))
        };
        assert!(collected("kid of a") && collected("kid of b"));
    }

    #[test]
    fn graph_llm_nodes_get_only_the_families_the_graph_offers() {
        let graph = "name: planner\nversion: \"1.0\"\ncan_spawn_agents: false\nsettings:\n  validate_before_run: false\nstart: a\nnodes:\n\
                     \x20 a:\n    type: llm\n    prompt: p\n    tools: [agent__spawn]\n    next: e\n  e:\n    type: end\n";
        let s = run_scripted(planner("no-spawn", graph), "replies: []\n");
        let failed = s.events().into_iter().find_map(|e| match e.body {
            EventBody::RunFinished { .. } => None,
            EventBody::Error { message, .. } => Some(message),
            _ => None,
        });
        let text = format!("{failed:?} {:?}", s.status());
        assert!(text.contains("'agent__spawn', a built-in function that graph 'planner' does not offer (`can_spawn_agents` is false)"), "{text}");
    }

    #[test]
    fn reducers_follow_upstream() {
        use Reducer::*;
        let cases: Vec<(Reducer, Option<Value>, Value, Value)> = vec![
            (Append, None, json!("a"), json!(["a"])),
            (Append, Some(json!(["a"])), json!(["b", "c"]), json!(["a", ["b", "c"]])),
            (Extend, Some(json!([1, 2])), json!([3, 4]), json!([1, 2, 3, 4])),
            (Extend, None, json!([1]), json!([1])),
            (Concat, Some(json!("first")), json!("second"), json!("first\nsecond")),
            (Concat, Some(json!("")), json!("x"), json!("x")),
            (Concat, None, json!("x"), json!("x")),
            (Sum, Some(json!(2)), json!(3), json!(5)),
            (Sum, None, json!(3.5), json!(3.5)),
            (Sum, Some(json!(1.5)), json!(2.5), json!(4)),
            (Max, Some(json!(5)), json!(10), json!(10)),
            (Max, None, json!(42), json!(42)),
            (Min, Some(json!(5)), json!(3), json!(3)),
            (Merge, Some(json!({"a": 1, "b": 2})), json!({"b": 99, "c": 3}), json!({"a": 1, "b": 99, "c": 3})),
            (Merge, None, json!({"k": "v"}), json!({"k": "v"})),
            (Overwrite, Some(json!("old")), json!("new"), json!("new")),
        ];
        for (r, cur, inc, want) in cases {
            assert_eq!(apply_reducer(r, cur.as_ref(), inc.clone()).unwrap(), want, "{r:?} {cur:?} {inc}");
        }
        assert!(apply_reducer(Sum, Some(&json!(2)), json!(3)).unwrap().is_i64());
        let errs = [
            (Append, Some(json!("s")), json!(1), "reducer 'append' requires an array (or absent) for the current value, got string"),
            (Extend, None, json!(42), "reducer 'extend' requires an array for the incoming value, got number"),
            (Concat, None, json!(42), "reducer 'concat' requires a string for the incoming value, got number"),
            (Sum, None, json!("x"), "reducer 'sum' requires a number for the incoming value, got string"),
            (Min, Some(json!("oops")), json!(1), "reducer 'min' requires a number for the current value, got string"),
            (Merge, None, json!([1]), "reducer 'merge' requires an object for the incoming value, got array"),
            (Merge, Some(json!("x")), json!({}), "reducer 'merge' requires an object (or absent) for the current value, got string"),
        ];
        for (r, cur, inc, want) in errs {
            assert_eq!(apply_reducer(r, cur.as_ref(), inc).unwrap_err(), want);
        }
    }

    fn doc(yaml: &str) -> Arc<Document> {
        Arc::new(model::doc::load_str(std::path::Path::new("/tmp/agents/t/graph.yaml"), yaml))
    }

    const TINY: &str = "name: t\nstart: e\nreducers:\n  n: sum\n  log: append\nnodes:\n  e:\n    type: end\n";

    #[test]
    fn merge_uses_reducers_and_rejects_unreduced_collisions() {
        let d = doc(TINY);
        let l = d.loki().unwrap();
        let mut state = st(json!({"n": 1, "x": "a"}));
        let diffs = vec![
            ("a".to_string(), st(json!({"n": 2, "log": "A"}))),
            ("b".to_string(), st(json!({"n": 3, "log": "B", "y": true}))),
        ];
        merge_diffs(l, &mut state, &diffs).unwrap();
        assert_eq!(state_value(&state), json!({"log": ["A", "B"], "n": 6, "x": "a", "y": true}));
        // Reducers apply to a single writer too.
        merge_diffs(l, &mut state, &[("c".into(), st(json!({"log": "C"})))]).unwrap();
        assert_eq!(*state["log"], json!(["A", "B", "C"]));
        let clash = vec![("a".to_string(), st(json!({"x": 1}))), ("b".to_string(), st(json!({"x": 2})))];
        let e = merge_diffs(l, &mut state, &clash).unwrap_err();
        assert!(e.starts_with("Key 'x' was written by 2 parallel branches but has no reducer declared."), "{e}");
    }

    #[test]
    fn diff_ignores_unchanged_rewrites() {
        let before = st(json!({"a": 1, "b": [1, 2]}));
        let mut after = before.clone();
        after.insert("b".into(), Arc::new(json!([1, 2])));
        after.insert("c".into(), Arc::new(json!(null)));
        after.insert("a".into(), Arc::new(json!(2)));
        assert_eq!(state_value(&diff(&before, &after)), json!({"a": 2, "c": null}));
    }

    #[test]
    fn template_scoping() {
        let s = st(json!({
            "a": "{{b}}", "b": "B", "n": null, "items": ["x", "y"], "obj": {"k": [1, {"z": "deep"}]},
            "output": "old"
        }));
        let sc = Scope::new(&s);
        assert_eq!(sc.lenient("{{a}} {{b}}"), "B B");
        assert_eq!(sc.lenient("{{a}}"), "{{b}}");
        assert_eq!(sc.lenient("{{items[1]}} {{items.0}}|{{obj.k[1].z}} {{obj.k.[0]}} {{n}}"), "y |deep 1 null");
        assert_eq!(sc.lenient("{{.b}}"), "B");
        assert_eq!(sc.raw(" {{items}} ").unwrap(), json!(["x", "y"]));
        let e = sc.strict("{{m}} and {{m}} and {{q}}").unwrap_err();
        assert_eq!(e.to_string(), "Template interpolation failed: 'm', 'm', 'q' not found in state");
        // The scoped variable shadows the state key, with paths into it.
        let out = json!({"topic": "rust", "list": ["p"]});
        let bound = Scope::with(&s, "output", &out);
        assert_eq!(bound.lenient("{{output.topic}}/{{output.list[0]}}/{{b}}"), "rust/p/B");
        assert_eq!(bound.lenient("{{output}}"), r#"{"topic":"rust","list":["p"]}"#);
        assert_eq!(Scope::new(&s).lenient("{{output}}"), "old");
    }

    #[test]
    fn state_updates_bind_scoped_var_without_leaking() {
        let d = doc(
            "name: t\nstart: l\nnodes:\n  l:\n    type: llm\n    prompt: p\n    state_updates:\n      first: \"{{output.k}}\"\n      second: \"[{{first}}]\"\n    next: e\n  e:\n    type: end\n",
        );
        let node = d.loki().unwrap().node("l").unwrap();
        let mut s = st(json!({}));
        apply_updates(node, &mut s, Some(("output", &json!({"k": 7}))));
        // coyote 0.10: every entry renders against the state before the block.
        assert_eq!(state_value(&s), json!({"first": "7", "second": "[]"}));
        let mut s = st(json!({"first": "old"}));
        apply_updates(node, &mut s, Some(("output", &json!({"k": 7}))));
        assert_eq!(state_value(&s), json!({"first": "7", "second": "[old]"}));
    }

    #[test]
    fn conditions_and_loose_json() {
        for (r, want) in [("", false), (" false ", false), ("0", false), ("null", false), ("[]", false), ("{}", false), ("x", true), ("1", true)] {
            assert_eq!(truthy(r), want, "{r:?}");
        }
        assert_eq!(parse_json_loose("<think>hm</think>\n```json\n{\"a\": 1}\n```"), Some(json!({"a": 1})));
        assert_eq!(parse_json_loose("<think>a</think><think>b</think> [1]"), Some(json!([1])));
        assert_eq!(parse_json_loose("<think>open {\"a\":1}"), None);
        assert_eq!(parse_json_loose("Sure: {\"a\":1}"), None);
    }
}
