//! The sherma interpreter: a [`Machine`] that runs one node per step.
//!
//! Routing is [`lower_sherma::effective`], the same function the canvas draws, so the engine
//! runs exactly what the IR shows (derived `<node>_tools` nodes, `has_tool_calls` and
//! `has_error_fallback` branches included). State and reducers are [`sherma_state`]. Node
//! semantics follow reference/sherma.md §7–§9; the deliberate differences are listed in
//! ARCHITECTURE.md ("Deliberate divergences"), the run-time ones here:
//!
//! - Several static edges from one node (a LangGraph fan-out) make a wave: its nodes run one
//!   per step, each on the state the wave started from plus its own update (its routing too),
//!   as LangGraph's parallel tasks in one super-step; each update then goes into the run's
//!   state. Two nodes of a wave setting the same plain field fail the second one (LangGraph's
//!   InvalidUpdateError); `messages` appends. Targets reached twice in one wave run once.
//! - `recursion_limit` counts node runs since the start or the last answered interrupt
//!   (LangGraph counts super-steps per invocation; default 25 as upstream).
//! - A `custom` node runs its `node_execute` hooks (`sherma/hooked.rs`); with none it returns
//!   `{}`. Unlike upstream, it honours `on_error.fallback`.
//! - Interrupt answers: a string becomes a human message; a map with `content` becomes a
//!   message (its `type`/`role` kept, default human, `additional_kwargs` kept); a list of such
//!   maps is appended as is. The node runs once on resume (upstream re-runs its CEL first).
//! - Tool errors inside `tool_node` fail the node (upstream behaviour, §7.2); unknown tool names
//!   become an error tool message, as upstream.
//! - Remote sub-agents (`url`) are called over A2A (`sherma/remote.rs`); upstream drops an
//!   `input-required` reply (empty result), here it is an interrupt of this run whose answer
//!   goes to the same remote task.
//! - `mcp_servers` connect when a node first needs their tools (a call_llm binding the registry
//!   or naming a tool not declared locally, a tool node calling one), not at load; their tools
//!   join the registry as `<tool_prefix><name>` after the declared ones (`hooks.*` never).

use model::doc::sherma::{AgentDef, CallLlm, Entity, NodeArgs, NodeDef, ShermaDoc, SubAgentsAsTools};
use model::doc::{Document, Model};
use expr::CelEngine;
use model::graph::lower_sherma::{self, Effective};
use model::graph::{END, START};
use runtime::events::{EventBody, InterruptKind};
use connect::mcp::{McpPool, McpServerSpec};
use runtime::provider::{LlmRequest, ModelRef, ToolCall};
use runtime::session::{Cx, Machine, NestedEnd, Pending, StepOutcome, run_nested};
use crate::state::{self as sherma_state, MESSAGES, State, message, normalize_message};
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod hooked;
mod durable;
mod remote;
mod route;
mod skills;

use route::{RouteError, Targets};

/// The internal state key sherma keeps its bookkeeping in.
pub const INTERNAL: &str = "__sherma__";
/// LangGraph's default recursion limit.
pub const DEFAULT_RECURSION_LIMIT: i64 = 25;

/// Runs a tool that lives outside the engine (a Python `import_path`).
pub trait ToolRunner: Send {
    /// Call `import_path` with `args`; `Err` is the tool's failure, as text.
    fn call(&mut self, import_path: &str, args: &Value, timeout: Duration) -> Result<Value, String>;
    /// [`ToolRunner::call`] that ends early (killing what the tool started) once `stop` is
    /// raised; runners that cannot be interrupted just call.
    fn call_until(&mut self, import_path: &str, args: &Value, timeout: Duration, stop: &std::sync::atomic::AtomicBool) -> Result<Value, String> {
        let _ = stop;
        self.call(import_path, args, timeout)
    }
    /// The tool's description and JSON Schema, if it can be inspected.
    fn describe(&mut self, import_path: &str) -> Option<(String, Value)>;
    /// Run hook `method` of the hook executor `import_path` with context `ctx`: `Ok(None)` when
    /// the executor does not define it, else the context after the call.
    fn hook(&mut self, import_path: &str, method: &str, ctx: &Value, timeout: Duration) -> Result<Option<Value>, String> {
        let _ = (method, ctx, timeout);
        Err(format!("hook executor `{import_path}`: this tool runner cannot run Python hooks"))
    }
}

/// How a sherma run is set up.
#[derive(Clone)]
pub struct ShermaOptions {
    /// Python interpreter for `import_path` tools (default: `SWITCHYARD_PYTHON`, then `python3`).
    pub python: Option<PathBuf>,
    /// Extra `sys.path` entries for tools (the agent's directory is always first).
    pub python_path: Vec<PathBuf>,
    /// Per tool call.
    pub tool_timeout: Duration,
    /// Multiplies `on_error.retry` delays (1.0 = as written; tests use 0).
    pub retry_delay_scale: f64,
    /// Runs `import_path` tools; default: the Python bridge, started on first use.
    pub tools: Option<Arc<Mutex<dyn ToolRunner>>>,
    /// Timeouts and limits of remote (A2A) sub-agents.
    pub a2a: connect::a2a::A2aOptions,
    /// Whether the run may use the network besides its model calls (remote skill cards and
    /// files); `launch` sets it from the run's provider (`LlmProvider::network_allowed`).
    /// Hooks, A2A and MCP ask the step's `Cx`.
    pub network: bool,
    /// What of the engine's environment the Python bridge and MCP servers see
    /// (`connect::childenv`; `launch` computes it from the run manifest).
    pub child_env: connect::childenv::ChildEnv,
}

impl Default for ShermaOptions {
    fn default() -> Self {
        ShermaOptions {
            python: None,
            python_path: Vec::new(),
            tool_timeout: Duration::from_secs(60),
            retry_delay_scale: 1.0,
            tools: None,
            a2a: Default::default(),
            network: true,
            child_env: Default::default(),
        }
    }
}

/// A tool the run can offer and execute.
#[derive(Clone, Debug)]
enum ToolKind {
    /// A Python function (`import_path`).
    Python(String),
    /// One of sherma's seven skill tools.
    Skill(&'static str),
    /// A sub-agent wrapped as a tool (argument `request`).
    SubAgent(usize),
    /// A tool of an MCP server (`mcp_servers`), listed when the server connects.
    Mcp(Box<McpToolRef>),
    /// Declared but not runnable here (remote agents, tools without `import_path`).
    Unavailable(String),
}

/// Where an MCP tool lives: the server (index in the run's pool) and its own name there.
#[derive(Clone, Debug)]
struct McpToolRef {
    server: usize,
    tool: String,
    description: String,
    schema: Value,
}

#[derive(Clone, Debug)]
struct Tool {
    name: String,
    kind: ToolKind,
}

const SKILL_TOOLS: &[&str] = &[
    "list_skills",
    "load_skill_md",
    "unload_skill",
    "list_skill_resources",
    "list_skill_assets",
    "load_skill_resource",
    "load_skill_asset",
];

/// What every fork of a run shares (never changes during the run).
struct Shared {
    doc: Arc<Document>,
    agent_index: usize,
    eff: Effective,
    /// `prompts`, `llms`, `skills`, `data` CEL bindings (only those that exist).
    extras: Vec<(&'static str, Value)>,
    tools: Vec<Tool>,
    opts: ShermaOptions,
    runner: Mutex<Option<Arc<Mutex<dyn ToolRunner>>>>,
    /// Python tools' (description, JSON Schema), asked once per run.
    described: Mutex<std::collections::HashMap<String, (String, Value)>>,
    /// Nodes with `on_error.fallback` (they record errors instead of failing).
    recursion_limit: i64,
    /// Remote (A2A) sub-agents' clients.
    remotes: remote::Remotes,
    /// The agent's MCP servers (`mcp_servers`); they connect on first use.
    mcp: McpPool,
    /// Their tools, registered as `<tool_prefix><name>` once every server has connected.
    mcp_tools: Mutex<Option<Vec<Tool>>>,
    /// Tools of skill-card MCP servers (`mcps`), by the card's key, listed when a node first
    /// binds the tools of a loaded skill that names the server.
    skill_mcp_tools: Mutex<std::collections::BTreeMap<String, Vec<Tool>>>,
    /// The hook executors (`hooks:`), in declaration order.
    hooks: crate::hooks::Hooks,
    /// Models as `on_chat_model_create` hooks left them, by `llms` id.
    chat_models: Mutex<std::collections::HashMap<String, ModelRef>>,
}

impl Shared {
    fn sherma(&self) -> &ShermaDoc {
        match &self.doc.model {
            Model::Sherma(d) => d,
            _ => unreachable!("checked in ShermaMachine::new"),
        }
    }
    fn agent(&self) -> &AgentDef {
        &self.sherma().agents[self.agent_index]
    }
    fn decl(&self, node: &str) -> Option<&NodeDef> {
        self.agent().node(node)
    }
    fn extras(&self) -> Vec<(&str, &Value)> {
        self.extras.iter().map(|(k, v)| (*k, v)).collect()
    }
    /// The tool registry: the declared tools, then the MCP tools once listed.
    fn all_tools(&self) -> Vec<Tool> {
        let mut all = self.tools.clone();
        if let Some(m) = &*self.mcp_tools.lock().unwrap_or_else(|p| p.into_inner()) {
            all.extend(m.iter().filter(|t| !all.iter().any(|x| x.name == t.name)).cloned().collect::<Vec<_>>());
        }
        for tools in self.skill_mcp_tools.lock().unwrap_or_else(|p| p.into_inner()).values() {
            all.extend(tools.iter().filter(|t| !all.iter().any(|x| x.name == t.name)).cloned().collect::<Vec<_>>());
        }
        all
    }
    /// The tools of the skill-card MCP server `key` (a key of some card's `mcps`), connecting
    /// it on first use; `None` when no card names such a server.
    fn skill_mcp(&self, key: &str, cx: &Cx<'_>) -> Option<Result<Vec<Tool>, String>> {
        if let Some(t) = self.skill_mcp_tools.lock().unwrap_or_else(|p| p.into_inner()).get(key) {
            return Some(Ok(t.clone()));
        }
        let (skill, _) = self.sherma().skill_cards.iter().find(|(_, c)| c.card.mcps.contains_key(key))?;
        let name = skill_mcp_name(skill, key);
        let listed = self.mcp.server(&name).and_then(|s| s.tools(cx));
        for ev in self.mcp.take_logs() {
            cx.emit(ev);
        }
        Some(listed.map(|list| {
            let index = self.mcp.servers().iter().position(|s| s.name() == name).unwrap_or(0);
            let tools: Vec<Tool> = list
                .into_iter()
                .map(|t| Tool {
                    name: t.name,
                    kind: ToolKind::Mcp(Box::new(McpToolRef {
                        server: index,
                        tool: t.tool,
                        description: t.description,
                        schema: t.input_schema,
                    })),
                })
                .collect();
            self.skill_mcp_tools.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string(), tools.clone());
            tools
        }))
    }
    /// Connect every MCP server (once) and register its tools (`hooks.*` tools never are).
    /// Captured server stderr goes to the run log.
    fn connect_mcp(&self, cx: &Cx<'_>) -> Result<(), String> {
        if self.mcp.is_empty() || self.mcp_tools.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
            return Ok(());
        }
        let mut tools = Vec::new();
        let mut failure = None;
        for ent in &self.sherma().mcp_servers {
            let listed = self.mcp.server(ent.id_str()).and_then(|s| s.tools(cx));
            match listed {
                Ok(list) => {
                    let index = self.mcp.servers().iter().position(|s| s.name() == ent.id_str()).unwrap_or(0);
                    tools.extend(list.into_iter().map(|t| Tool {
                        name: t.name,
                        kind: ToolKind::Mcp(Box::new(McpToolRef {
                            server: index,
                            tool: t.tool,
                            description: t.description,
                            schema: t.input_schema,
                        })),
                    }));
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        for ev in self.mcp.take_logs() {
            cx.emit(ev);
        }
        if let Some(e) = failure {
            return Err(e);
        }
        *self.mcp_tools.lock().unwrap_or_else(|p| p.into_inner()) = Some(tools);
        Ok(())
    }
    /// Whether a call_llm needs the MCP tools: it binds the whole registry, or names a tool that
    /// is not declared locally.
    fn needs_mcp(&self, c: &CallLlm) -> bool {
        !self.mcp.is_empty()
            && (c.use_tools_from_registry
                || c.tools.iter().flatten().any(|r| !self.tools.iter().any(|t| t.name == r.id_str())))
    }
    fn runner(&self) -> Result<Arc<Mutex<dyn ToolRunner>>, String> {
        let mut slot = self.runner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = &*slot {
            return Ok(r.clone());
        }
        let mut path = vec![self.doc.base_dir.clone()];
        path.extend(self.opts.python_path.iter().cloned());
        let bridge = connect::pybridge::PyBridge::start_with_env(self.opts.python.as_deref(), &path, self.opts.child_env.clone())
            .map_err(|e| e.to_string())?;
        let r: Arc<Mutex<dyn ToolRunner>> = Arc::new(Mutex::new(bridge));
        *slot = Some(r.clone());
        Ok(r)
    }
}

impl ToolRunner for connect::pybridge::PyBridge {
    fn call(&mut self, import_path: &str, args: &Value, timeout: Duration) -> Result<Value, String> {
        connect::pybridge::PyBridge::call(self, import_path, args, timeout).map_err(|e| e.to_string())
    }
    fn call_until(&mut self, import_path: &str, args: &Value, timeout: Duration, stop: &std::sync::atomic::AtomicBool) -> Result<Value, String> {
        connect::pybridge::PyBridge::call_until(self, import_path, args, timeout, Some(stop)).map_err(|e| e.to_string())
    }
    fn describe(&mut self, import_path: &str) -> Option<(String, Value)> {
        connect::pybridge::PyBridge::describe(self, import_path).ok().map(|i| (i.description, i.schema))
    }
    fn hook(&mut self, import_path: &str, method: &str, ctx: &Value, timeout: Duration) -> Result<Option<Value>, String> {
        connect::pybridge::PyBridge::hook(self, import_path, method, ctx, timeout).map_err(|e| e.to_string())
    }
}

/// A sherma run (see the module docs). Cheap to fork: the state is `Arc`-shared.
pub struct ShermaMachine {
    shared: Arc<Shared>,
    state: State,
    /// Nodes of the current wave still to run, in order.
    queue: VecDeque<String>,
    /// Targets collected for the next wave.
    next: Vec<String>,
    /// While a wave of several nodes (a fan-out) runs: the state it started from, which each of
    /// them sees (LangGraph runs them in one super-step on the same snapshot).
    wave_base: Option<State>,
    /// Fields other than `messages` and `__sherma__` set so far in this wave, and by which node
    /// (two parallel nodes setting the same one is an error, as in LangGraph).
    wave_writes: std::collections::BTreeMap<String, String>,
    /// Routing just cleared `__sherma__.error_fallback` (a `has_error_fallback` branch fired).
    cleared_fallback: bool,
    /// The answer to the pending interrupt, for the node's re-run.
    resume: Option<Value>,
    /// Node runs since the start or the last answer.
    since_resume: i64,
    output: Value,
    /// A remote sub-agent's task waiting for the answer to the pending interrupt.
    remote: Option<remote::RemoteWait>,
    /// The run's input as given (hook contexts); shared by every checkpoint.
    input: Arc<Value>,
    /// The invocation's config once `before_graph_invoke` ran (hooks only; cleared by an
    /// answer, which starts a new invocation).
    invocation: Option<Value>,
    /// `config.recursion_limit` as a `before_graph_invoke` hook set it.
    recursion_override: Option<i64>,
}

impl ShermaMachine {
    /// Prepare a run of `agent` (default: the first) with `input` (a JSON object of state
    /// fields, or a string = one human message, or null).
    pub fn new(doc: Arc<Document>, agent: Option<&str>, input: Value, opts: ShermaOptions) -> Result<ShermaMachine, String> {
        let doc = skills::with_remote(doc, opts.network)?;
        let Model::Sherma(sd) = &doc.model else {
            return Err(format!("{} is not a sherma agent file (no `manifest_version`/`agents`)", doc.path.display()));
        };
        if let Some(e) = doc.diagnostics.iter().find(|d| d.is_error() && !is_soft(&d.code)) {
            return Err(format!(
                "{} cannot run: {}:{}:{}: {}; fix it first (`switchyard validate` lists every problem)",
                doc.path.display(),
                e.file,
                e.line,
                e.column,
                e.message
            ));
        }
        let names: Vec<&str> = sd.agents.iter().map(|a| a.name.value.as_str()).collect();
        let agent_index = match agent {
            None => {
                if sd.agents.is_empty() {
                    return Err(format!("{} declares no agents", doc.path.display()));
                }
                0
            }
            Some(a) => sd.agents.iter().position(|x| x.name.value == a).ok_or_else(|| {
                format!("no agent `{a}` in {}; it has: {}", doc.path.display(), names.join(", "))
            })?,
        };
        let agent_def = &sd.agents[agent_index];
        let mut diags = Vec::new();
        let eff = lower_sherma::effective(agent_def, Some(&doc), &mut diags);
        if let Some(d) = diags.iter().find(|d| d.is_error()) {
            return Err(format!("agent `{}` cannot run: {}", agent_def.name.value, d.message));
        }
        let input = match input {
            Value::String(s) => json!({ MESSAGES: [message("human", Value::String(s))] }),
            other => other,
        };
        let state = State::initial(agent_def, &input)?;
        let input_given = input.clone();
        let extras = build_extras(sd);
        let tools = build_tools(sd);
        let recursion_limit = agent_def.recursion_limit.unwrap_or(DEFAULT_RECURSION_LIMIT);
        let runner = Mutex::new(opts.tools.clone());
        let described = Mutex::new(Default::default());
        let remotes = Default::default();
        let mcp = build_mcp_pool(sd, &doc.base_dir, opts.tool_timeout);
        mcp.set_child_env(&opts.child_env);
        let hook_entries: Vec<Value> = sd.hooks.iter().map(hook_entry).collect();
        let (hooks, bad_hooks) = crate::hooks::Hooks::from_entries(&hook_entries, &doc.base_dir);
        hooks.set_child_env(&opts.child_env);
        if let Some(b) = bad_hooks.first() {
            return Err(format!("{} cannot run: {b}", doc.path.display()));
        }
        let shared = Shared {
            doc: doc.clone(),
            agent_index,
            eff,
            extras,
            tools,
            opts,
            runner,
            described,
            recursion_limit,
            remotes,
            mcp,
            mcp_tools: Mutex::new(None),
            skill_mcp_tools: Mutex::new(Default::default()),
            hooks,
            chat_models: Mutex::new(Default::default()),
        };
        let mut m = ShermaMachine {
            shared: Arc::new(shared),
            state,
            queue: VecDeque::new(),
            next: Vec::new(),
            wave_base: None,
            wave_writes: Default::default(),
            cleared_fallback: false,
            resume: None,
            since_resume: 0,
            output: Value::Null,
            remote: None,
            input: Arc::new(input_given),
            invocation: None,
            recursion_override: None,
        };
        let entry = match m.route_from(START) {
            Ok(entry) => entry,
            Err(e) => return Err(format!("agent `{}` cannot start: {e}", m.shared.agent().name.value)),
        };
        if entry.is_empty() {
            return Err(format!(
                "agent `{}` has no entry: add `entry_point: <node>` under `graph:`",
                m.shared.agent().name.value
            ));
        }
        m.queue = entry.into_iter().map(|(to, _)| to).collect();
        m.start_wave();
        Ok(m)
    }

    fn kind(&self, node: &str) -> String {
        self.shared.eff.node(node).map(|n| n.kind.clone()).unwrap_or_else(|| "?".into())
    }

    fn eval(&self, expr: &str, llm_response: Option<&Value>) -> Result<Value, String> {
        let mut extras = self.shared.extras();
        if let Some(r) = llm_response {
            extras.push(("llm_response", r));
        }
        sherma_state::eval(&self.state, expr, &extras)
    }

    fn eval_bool(&self, expr: &str) -> Result<bool, String> {
        match self.eval(expr, None)? {
            Value::Bool(b) => Ok(b),
            Value::Null => Ok(false),
            other => Err(format!("condition `{expr}` returned {other}, expected a bool")),
        }
    }

    /// Run one node; returns the update to apply, or an interrupt.
    fn run_node(&mut self, node: &str, cx: &Cx<'_>) -> Result<NodeResult, NodeError> {
        let shared = self.shared.clone();
        let eff = shared.eff.node(node).ok_or_else(|| NodeError::plain(format!("no node `{node}` in the agent")))?;
        if eff.tools_for.is_some() {
            // A derived tool node: all registry tools (upstream behaviour, §7.2).
            return self.tool_node(node, None, cx);
        }
        let decl = shared.decl(node).ok_or_else(|| NodeError::plain(format!("no node `{node}` in the agent")))?;
        match &decl.args {
            NodeArgs::SetState { .. } => sherma_state::run_set_state_with(decl, &self.state, &shared.extras())
                .map(NodeResult::Update)
                .map_err(NodeError::plain),
            NodeArgs::DataTransform { .. } => sherma_state::run_data_transform_with(decl, &self.state, &shared.extras())
                .map(NodeResult::Update)
                .map_err(NodeError::plain),
            NodeArgs::CallLlm(c) => {
                if shared.needs_mcp(c) {
                    shared.connect_mcp(cx).map_err(NodeError::plain)?;
                }
                self.call_llm(decl, c, cx).map(NodeResult::Update)
            }
            NodeArgs::ToolNode { tools } => {
                let names = tools.as_ref().map(|t| t.iter().map(|r| r.id_str().to_string()).collect());
                self.tool_node(node, names, cx)
            }
            NodeArgs::CallAgent { agent, input } => {
                let sub = agent.as_ref().map(|a| a.id_str().to_string()).unwrap_or_default();
                if let Some(remote) = self.remote_agent(&sub) {
                    return self.call_remote_agent(node, remote, input.as_ref(), cx);
                }
                let value = match input {
                    Some(e) => self.eval(&e.text, None).map_err(NodeError::plain)?,
                    None => Value::String(String::new()),
                };
                let value = self.hook_before_agent(node, &sub, value, cx)?;
                let text = self.run_sub_agent(node, &sub, &display(&value), cx).map_err(NodeError::plain)?;
                let mut up = Map::new();
                if let Some(t) = text {
                    up.insert(MESSAGES.into(), json!([message("ai", Value::String(t))]));
                }
                self.hook_result("after_agent_call", node, up, cx).map(NodeResult::Update)
            }
            NodeArgs::Interrupt { value } => {
                let eval_value = |m: &Self| match value {
                    Some(e) => m.eval(&e.text, None).map_err(NodeError::plain),
                    None => Ok(Value::Null),
                };
                if let Some(answer) = self.resume.take() {
                    let answer = if self.hooked("after_interrupt") {
                        let v = eval_value(self).unwrap_or(Value::Null);
                        self.hook_after_interrupt(node, v, answer, cx)?
                    } else {
                        answer
                    };
                    let mut up = Map::new();
                    up.insert(MESSAGES.into(), answer_messages(answer));
                    return Ok(NodeResult::Update(up));
                }
                let v = eval_value(self)?;
                let v = self.hook_before_interrupt(node, v, cx)?;
                Ok(NodeResult::Interrupt(Pending {
                    id: String::new(),
                    node: node.to_string(),
                    kind: InterruptKind::Interrupt,
                    prompt: display(&v),
                    options: Vec::new(),
                    value: v,
                    default: None,
                    validation: None,
                }))
            }
            NodeArgs::LoadSkills { skill_ids } => {
                let ids = match skill_ids {
                    Some(e) => self.eval(&e.text, None).map_err(NodeError::plain)?,
                    None => Value::Array(Vec::new()),
                };
                self.load_skills(node, ids, cx).map(NodeResult::Update).map_err(NodeError::plain)
            }
            NodeArgs::Custom { .. } => self.hook_node_execute(node, cx).map(NodeResult::Update),
            NodeArgs::Unknown => Err(NodeError::plain(format!(
                "node `{node}` has unknown type `{}`; use one of call_llm, tool_node, call_agent, data_transform, set_state, interrupt, load_skills, custom",
                decl.kind.value
            ))),
        }
    }

    fn call_llm(&self, decl: &NodeDef, c: &CallLlm, cx: &Cx<'_>) -> Result<Map<String, Value>, NodeError> {
        let node = decl.name.value.as_str();
        // 1. tools
        let tools = self.bound_tools(c, cx).map_err(NodeError::plain)?;
        let tools_json: Vec<Value> = tools.iter().map(|t| self.tool_schema(t, cx)).collect();
        // 2. prompt
        let mut wire: Vec<Value> = Vec::new();
        for item in &c.prompt {
            let role = item.role.value.as_str();
            let Some(content) = &item.content else { continue };
            // `state.messages` / `state["messages"]` is spliced straight from the state (as
            // upstream does), without a round trip through CEL; stored messages are already in
            // the stored shape.
            if role == "messages" {
                match direct_field(&content.text) {
                    Some(MESSAGES) => {
                        wire.extend(self.state.messages().iter().map(|m| to_wire(m)));
                        continue;
                    }
                    Some(f) => {
                        if let Some(Value::Array(items)) = self.state.get(f) {
                            wire.extend(items.iter().map(to_wire));
                            continue;
                        }
                    }
                    None => {}
                }
            }
            let v = self.eval(&content.text, None).map_err(|e| NodeError::plain(format!("prompt ({role}): {e}")))?;
            match role {
                "messages" => match v {
                    Value::Array(items) => {
                        for m in items {
                            match m {
                                Value::Object(o) => wire.push(to_wire(&normalize_message(&o))),
                                Value::String(s) => wire.push(to_wire(&message("human", Value::String(s)))),
                                other => {
                                    return Err(NodeError::plain(format!(
                                        "prompt (messages): `{}` gave a list with {other}, which is not a message",
                                        content.text
                                    )));
                                }
                            }
                        }
                    }
                    Value::Null => {}
                    other => {
                        return Err(NodeError::plain(format!(
                            "prompt (messages): `{}` must give a list of messages, got {other}",
                            content.text
                        )));
                    }
                },
                "system" | "human" | "ai" => wire.push(to_wire(&message(role, Value::String(display(&v))))),
                other => {
                    return Err(NodeError::plain(format!(
                        "prompt role `{other}` is not one of system, human, ai, messages"
                    )));
                }
            }
        }
        // The model first (upstream creates chat models before any node runs), then the prompt.
        let model = match self.model_of(c) {
            Some(m) if self.hooked("on_chat_model_create") => {
                let sd = self.shared.sherma();
                let id = c.llm.as_ref().or(sd.default_llm.as_ref()).map(|r| r.id_str().to_string()).unwrap_or_default();
                Some(self.hook_chat_model(&id, m, cx)?)
            }
            other => other,
        };
        let mut tools_json = tools_json;
        self.hook_before_llm(node, &mut wire, &mut tools_json, cx)?;
        let request = LlmRequest {
            node: node.to_string(),
            messages: Value::Array(wire),
            tools: Value::Array(tools_json),
            model,
            response_format: c.response_format.clone(),
            ..LlmRequest::default()
        };
        // 3. the model call, with on_error.retry
        let retry = decl.on_error.as_ref().and_then(|o| o.retry.clone());
        let max_attempts = retry.as_ref().map_or(1, |r| r.max_attempts.max(1));
        let mut attempt = 0;
        let response = loop {
            attempt += 1;
            match cx.complete(&request) {
                Ok(r) => break r,
                Err(e) => {
                    // Only failures that may pass are retried (timeouts, connection errors,
                    // 429, 5xx, malformed answers); a wrong key or a bad request fails at once.
                    if attempt >= max_attempts || cx.stopped() || !e.retryable() {
                        return Err(NodeError {
                            message: format!("LLM call failed: {e}"),
                            kind: "LLMError".into(),
                            attempt,
                            // Upstream records `str(exception)`: the error's own text.
                            own: Some(e.own_message().to_string()),
                        });
                    }
                    let r = retry.as_ref().expect("attempts > 1 only with retry");
                    let base = if r.strategy == "exponential" { r.delay * 2f64.powi(attempt as i32 - 1) } else { r.delay };
                    let mut delay = base.min(r.max_delay).max(0.0) * self.shared.opts.retry_delay_scale;
                    // A server's `Retry-After` wins over a shorter backoff.
                    if let Some(after) = e.retry_after {
                        delay = delay.max(after.as_secs_f64());
                    }
                    // Clamped to an hour: `delay: .inf` or `1e300` in the file must not panic.
                    let delay = if delay.is_finite() { delay.clamp(0.0, 3600.0) } else { 3600.0 };
                    cx.emit(EventBody::Error {
                        node: Some(node.to_string()),
                        message: format!(
                            "attempt {attempt} of {max_attempts} failed: {}; retrying in {delay:.2}s",
                            e.message
                        ),
                    });
                    sleep_unless_stopped(Duration::from_secs_f64(delay), cx);
                    // A stop during the wait ends the node with the failure it was waiting on,
                    // rather than cutting the wait short and trying again.
                    if cx.stopped() {
                        return Err(NodeError {
                            message: format!("LLM call failed: {e}"),
                            kind: "LLMError".into(),
                            attempt,
                            own: Some(e.own_message().to_string()),
                        });
                    }
                }
            }
        };
        // 4. structured output
        let mut content = response.content.clone().unwrap_or_default();
        if c.response_format.is_some() {
            let v: Value = parse_json_reply(&content).ok_or_else(|| {
                NodeError::plain(format!(
                    "response_format: the model's reply is not a JSON object: {}",
                    truncate(&content, 200)
                ))
            })?;
            content = v.to_string();
        }
        let llm_response = json!({
            "role": "ai",
            "type": "ai",
            "content": content,
            "tool_calls": response.tool_calls.iter().map(|t| json!({"id": t.id, "name": t.name, "args": t.args})).collect::<Vec<_>>(),
        });
        let llm_response = if self.hooked("after_llm_call") {
            let mut r = self.hook_after_llm(node, llm_response, cx)?;
            if let Value::Object(m) = &mut r {
                m.insert("role".into(), "ai".into());
                m.entry("type").or_insert_with(|| "ai".into());
                m.entry("content").or_insert_with(|| "".into());
                m.entry("tool_calls").or_insert_with(|| json!([]));
            }
            r
        } else {
            llm_response
        };
        // 5. state_updates against the pre-node state + llm_response
        let mut up = Map::new();
        for (key, expr) in &c.state_updates {
            let v = self
                .eval(&expr.text, Some(&llm_response))
                .map_err(|e| NodeError::plain(format!("state_updates.{}: {e}", key.value)))?;
            up.insert(key.value.clone(), v);
        }
        Ok(up)
    }

    /// The model a call_llm names: its `llm`, else the file's `default_llm`, looked up in
    /// `llms` (`provider` defaults to `openai`, as in sherma).
    fn model_of(&self, c: &CallLlm) -> Option<ModelRef> {
        let sd = self.shared.sherma();
        let id = c.llm.as_ref().or(sd.default_llm.as_ref())?.id_str().to_string();
        let l = sd.llms.iter().find(|l| l.id_str() == id)?;
        Some(ModelRef {
            provider: l.get_str("provider").unwrap_or("openai").to_string(),
            name: l.get_str("model_name").unwrap_or("").to_string(),
        })
    }

    /// The tools a call_llm binds, in sherma's order (§7.1), without duplicates.
    fn bound_tools(&self, c: &CallLlm, cx: &Cx<'_>) -> Result<Vec<Tool>, String> {
        let all = &self.shared.all_tools();
        let mut out: Vec<Tool> = Vec::new();
        let push = |t: &Tool, out: &mut Vec<Tool>| {
            if !out.iter().any(|x| x.name == t.name) {
                out.push(t.clone());
            }
        };
        if c.use_tools_from_loaded_skills {
            let loaded = self
                .state
                .get(INTERNAL)
                .and_then(|i| i.get("loaded_tools_from_skills"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for id in loaded.iter().filter_map(Value::as_str) {
                if let Some(t) = all.iter().find(|t| t.name == id) {
                    push(t, &mut out);
                } else if let Some(listed) = self.shared.skill_mcp(id, cx) {
                    // A card's `mcps` key: every tool of that server (upstream records the
                    // key, which names no tool, so the server's tools were never bound).
                    for t in &listed? {
                        push(t, &mut out);
                    }
                }
            }
        }
        if c.use_tools_from_registry {
            for t in all {
                push(t, &mut out);
            }
        }
        let sd = self.shared.sherma();
        match &c.use_sub_agents_as_tools {
            SubAgentsAsTools::No => {}
            SubAgentsAsTools::All => {
                for s in &sd.sub_agents {
                    if let Some(t) = all.iter().find(|t| t.name == s.id_str()) {
                        push(t, &mut out);
                    }
                }
            }
            SubAgentsAsTools::List(refs) => {
                for r in refs {
                    let t = all.iter().find(|t| t.name == r.id_str()).ok_or_else(|| {
                        format!("use_sub_agents_as_tools names `{}`, which is not a declared sub-agent", r.id_str())
                    })?;
                    push(t, &mut out);
                }
            }
        }
        for r in c.tools.iter().flatten() {
            if skills::unbound_activate_skill(self.shared.sherma(), r.id_str(), all.iter().any(|t| t.name == r.id_str())) {
                continue;
            }
            let t = all.iter().find(|t| t.name == r.id_str()).ok_or_else(|| {
                format!("tool `{}` is not declared under `tools:` (nor a skill or sub-agent tool)", r.id_str())
            })?;
            push(t, &mut out);
        }
        Ok(out)
    }

    fn tool_schema(&self, t: &Tool, cx: &Cx<'_>) -> Value {
        let (description, parameters) = match &t.kind {
            ToolKind::Python(path) => {
                let cached = self.shared.described.lock().unwrap_or_else(|p| p.into_inner()).get(path).cloned();
                match cached {
                    Some(d) => d,
                    None => {
                        // Describing imports the module (its top-level code runs): an effect,
                        // so a replay takes the recorded description and starts no Python.
                        let described = cx
                            .effect("@python", &format!("describe:{path}"), &Value::Null, || {
                                let r = self.shared.runner()?;
                                let d = r.lock().unwrap_or_else(|p| p.into_inner()).describe(path);
                                d.map(|(d, schema)| json!([d, schema])).ok_or_else(|| format!("{path} cannot be described"))
                            })
                            .ok()
                            .and_then(|v| Some((v.get(0)?.as_str()?.to_string(), v.get(1)?.clone())));
                        let d = described.unwrap_or_else(|| (format!("Python tool {path}"), json!({"type": "object"})));
                        self.shared.described.lock().unwrap_or_else(|p| p.into_inner()).insert(path.clone(), d.clone());
                        d
                    }
                }
            }
            ToolKind::Skill("activate_skill") => skills::activate_schema(self.shared.sherma()),
            ToolKind::Skill(name) => (skill_tool_doc(name).into(), skill_tool_params(name)),
            ToolKind::SubAgent(i) => (
                format!("Invoke agent: {}", self.shared.sherma().sub_agents[*i].id_str()),
                json!({"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]}),
            ),
            ToolKind::Mcp(m) => (m.description.clone(), m.schema.clone()),
            ToolKind::Unavailable(why) => (why.clone(), json!({"type": "object"})),
        };
        json!({"name": t.name, "description": description, "parameters": parameters})
    }

    /// Execute the tool calls of the last message. `only`: the node's explicit tools.
    fn tool_node(&mut self, node: &str, only: Option<Vec<String>>, cx: &Cx<'_>) -> Result<NodeResult, NodeError> {
        let calls: Vec<ToolCall> = self
            .state
            .messages()
            .last()
            .and_then(|m| m.get("tool_calls"))
            .and_then(|t| serde_json::from_value::<Vec<ToolCall>>(t.clone()).ok())
            .unwrap_or_default();
        if calls.iter().any(|c| !self.shared.tools.iter().any(|t| t.name == c.name)) {
            self.shared.connect_mcp(cx).map_err(NodeError::plain)?;
        }
        let all = self.shared.all_tools();
        let available: Vec<Tool> = match &only {
            Some(names) => all.into_iter().filter(|t| names.contains(&t.name)).collect(),
            None => all,
        };
        // A remote sub-agent's question stopped this node: go on from the call that asked.
        let (start, mut out_msgs, mut internal, mut internal_changed, mut resumed) = match self.tool_resume(node) {
            remote::ToolResume::Fresh => {
                let internal = self.state.get(INTERNAL).and_then(Value::as_object).cloned().unwrap_or_default();
                (0, Vec::new(), internal, false, None)
            }
            remote::ToolResume::Ask(p) => return Ok(NodeResult::Interrupt(p)),
            remote::ToolResume::Go { call, done, internal, internal_changed, wait } => {
                (call, done, internal, internal_changed, Some(wait))
            }
        };
        let available: Vec<Tool> = if resumed.is_none() && self.hooked("before_tool_call") {
            let calls_json = serde_json::to_value(&calls).unwrap_or(Value::Null);
            let names = self.hook_before_tools(node, &calls_json, available.iter().map(|t| t.name.clone()).collect(), cx)?;
            names.iter().filter_map(|n| available.iter().find(|t| &t.name == n).cloned()).collect()
        } else {
            available
        };
        for (i, call) in calls.iter().enumerate().skip(start) {
            let resuming = if i == start { resumed.take() } else { None };
            // `before_skill_unload` may change which skill the unload_skill tool unloads.
            let unload;
            let call = if call.name == "unload_skill" && self.hooked("before_skill_unload") {
                unload = self.hook_before_unload(node, call, cx)?;
                &unload
            } else {
                call
            };
            if resuming.is_none() {
                cx.emit(EventBody::ToolCall { node: node.to_string(), call: call.clone() });
            }
            let result = match available.iter().find(|t| t.name == call.name) {
                None => Ok(Value::String(format!(
                    "Error: {} is not a valid tool, try one of [{}].",
                    call.name,
                    available.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
                ))),
                Some(t) => match self.remote_tool_call(node, t, &call.args, resuming, cx) {
                    None => self.exec_tool(node, t, &call.args, cx),
                    Some(Ok(remote::RemoteStep::Done(text))) => Ok(Value::String(text)),
                    Some(Ok(remote::RemoteStep::Wait(w))) => {
                        return Ok(self.wait_in_tool(w, i, out_msgs, internal, internal_changed));
                    }
                    Some(Err(e)) => Err(e),
                },
            };
            match result {
                Ok(v) => {
                    cx.emit(EventBody::ToolResult {
                        node: node.to_string(),
                        id: call.id.clone(),
                        name: call.name.clone(),
                        result: v.clone(),
                        error: None,
                    });
                    let mut m = Map::new();
                    m.insert("type".into(), "tool".into());
                    m.insert("content".into(), Value::String(display(&v)));
                    m.insert("tool_call_id".into(), Value::String(call.id.clone()));
                    m.insert("name".into(), Value::String(call.name.clone()));
                    out_msgs.push(normalize_message(&m));
                }
                Err(e) => {
                    cx.emit(EventBody::ToolResult {
                        node: node.to_string(),
                        id: call.id.clone(),
                        name: call.name.clone(),
                        result: Value::Null,
                        error: Some(e.clone()),
                    });
                    return Err(NodeError {
                        message: format!("tool `{}` failed: {e}", call.name),
                        kind: "ToolException".into(),
                        attempt: 1,
                        own: None,
                    });
                }
            }
            // Skill tracking for tool-driven loads (§7.2 step 6).
            if matches!(call.name.as_str(), "load_skill_md" | "unload_skill")
                && let Some(id) = call.args.get("skill_id").and_then(Value::as_str).filter(|s| !s.is_empty())
            {
                let version = call.args.get("version").and_then(Value::as_str).unwrap_or("*").to_string();
                internal_changed |= self.track_skill(&mut internal, &call.name, id, &version);
                if call.name == "unload_skill" && self.hooked("after_skill_unload") {
                    self.hook_after_unload(node, id, &version, cx)?;
                }
            }
            if call.name == "activate_skill" {
                internal_changed |= skills::track_activation(&mut internal, self.shared.sherma(), &call.args);
            }
        }
        let mut up = Map::new();
        up.insert(MESSAGES.into(), Value::Array(out_msgs));
        if internal_changed {
            up.insert(INTERNAL.into(), Value::Object(internal));
        }
        self.hook_result("after_tool_call", node, up, cx).map(NodeResult::Update)
    }

    fn track_skill(&self, internal: &mut Map<String, Value>, tool: &str, id: &str, version: &str) -> bool {
        let Some((_, card)) = self.shared.sherma().skill_cards.iter().find(|(k, _)| k == id) else { return false };
        let keys: Vec<Value> = card
            .card
            .local_tools
            .keys()
            .chain(card.card.mcps.keys())
            .map(|k| Value::String(k.clone()))
            .collect();
        let mut loaded_list: Vec<Value> =
            internal.get("loaded_tools_from_skills").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut skills_map = internal.get("loaded_skills").and_then(Value::as_object).cloned().unwrap_or_default();
        if tool == "load_skill_md" {
            for k in &keys {
                if !loaded_list.contains(k) {
                    loaded_list.push(k.clone());
                }
            }
            let v = if version.chars().next().is_some_and(|c| c.is_ascii_digit()) { format!("=={version}") } else { version.to_string() };
            skills_map.insert(id.into(), json!({"version": v, "tools": keys}));
        } else {
            if let Some(entry) = skills_map.shift_remove(id) {
                let tools = entry.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
                loaded_list.retain(|t| !tools.contains(t));
            }
        }
        internal.insert("loaded_tools_from_skills".into(), Value::Array(loaded_list));
        internal.insert("loaded_skills".into(), Value::Object(skills_map));
        true
    }

    fn exec_tool(&self, node: &str, t: &Tool, args: &Value, cx: &Cx<'_>) -> Result<Value, String> {
        match &t.kind {
            // Through the provider: a replay answers from the recording, a recorder writes
            // the outcome down.
            ToolKind::Python(path) => cx.tool(node, &t.name, args, || {
                let runner = self.shared.runner()?;
                let mut r = runner.lock().unwrap_or_else(|p| p.into_inner());
                r.call_until(path, args, self.shared.opts.tool_timeout, cx.stop)
            }),
            ToolKind::Skill(name) => Ok(Value::String(self.skill_tool(name, args, cx.stop))),
            ToolKind::SubAgent(i) => {
                let id = self.shared.sherma().sub_agents[*i].id_str().to_string();
                let request = args.get("request").map(display).unwrap_or_default();
                Ok(Value::String(self.run_sub_agent(node, &id, &request, cx)?.unwrap_or_default()))
            }
            ToolKind::Mcp(m) => cx.tool(node, &t.name, args, || {
                let server = &self.shared.mcp.servers()[m.server];
                server.network(cx)?;
                let result = server.call(&m.tool, args, cx.stop);
                if let Some(ev) = server.take_log() {
                    cx.emit(ev);
                }
                result
            }),
            ToolKind::Unavailable(why) => Err(why.clone()),
        }
    }

    /// Run a `yaml_path` sub-agent to completion as a nested run; its last message's text (what
    /// upstream's tool wrapper gets: the final A2A message, the last state message).
    fn run_sub_agent(&self, node: &str, id: &str, request: &str, cx: &Cx<'_>) -> Result<Option<String>, String> {
        let sd = self.shared.sherma();
        let ent = sd
            .sub_agents
            .iter()
            .find(|s| s.id_str() == id)
            .ok_or_else(|| format!("no sub-agent `{id}` is declared under `sub_agents:`"))?;
        let Some(path) = ent.resolved_path.clone() else {
            return Err(match ent.get_str("url") {
                Some(u) => format!("sub-agent `{id}` is remote ({u}); it is called over A2A, not as a nested run"),
                None => format!("sub-agent `{id}` has no `yaml_path` (nor `url`)"),
            });
        };
        if cx.depth >= 8 {
            return Err(format!("sub-agent `{id}`: nesting deeper than 8 levels (a sub-agent calling itself?)"));
        }
        let doc = Arc::new(model::doc::load_path(&path));
        let mut child = ShermaMachine::new(doc, None, Value::String(request.to_string()), self.shared.opts.clone())
            .map_err(|e| format!("sub-agent `{id}`: {e}"))?;
        match run_nested(&mut child, cx, node, Value::String(request.to_string()), None) {
            NestedEnd::Completed(_) => Ok(child.last_message_text()),
            // Upstream: a sub-agent that ends waiting for input gives an empty result.
            NestedEnd::Unanswered(_) => Ok(None),
            NestedEnd::Failed { node: n, message } => {
                Err(format!("sub-agent `{id}` failed at `{}`: {message}", n.unwrap_or_default()))
            }
            NestedEnd::Stopped => Err(format!("sub-agent `{id}`: the run was stopped")),
            NestedEnd::TimedOut => Err(format!("sub-agent `{id}` timed out")),
        }
    }

    /// The run's reply: the text of the last message of `messages`, whatever its role, as
    /// upstream's `send_message` yields the last state message (reference/sherma.md §14) — so
    /// the error-recovery example's apology, a human message made by its data_transform, is
    /// the reply. `None` without messages.
    fn last_message_text(&self) -> Option<String> {
        self.state.messages().last().map(|m| display(m.get("content").unwrap_or(&Value::Null)))
    }

    fn skill_tool(&self, name: &str, args: &Value, stop: &std::sync::atomic::AtomicBool) -> String {
        let sd = self.shared.sherma();
        let id = args.get("skill_id").and_then(Value::as_str).unwrap_or("");
        let card = sd.skill_cards.iter().find(|(k, _)| k == id).map(|(_, c)| c);
        match name {
            "list_skills" => {
                let list: Vec<Value> = sd
                    .skills
                    .iter()
                    .map(|s| {
                        let c = sd.skill_cards.iter().find(|(k, _)| k == s.id_str()).map(|(_, c)| &c.card);
                        json!({"id": s.id_str(), "version": s.version.as_ref().map(|v| v.value.clone()).unwrap_or("*".into()),
                               "name": c.map(|c| c.name.clone()).unwrap_or_default(),
                               "description": c.map(|c| c.description.clone()).unwrap_or_default()})
                    })
                    .collect();
                Value::Array(list).to_string()
            }
            "activate_skill" => skills::activate(sd, args),
            "load_skill_md" => match card {
                Some(c) => skills::read_card_file(id, c, "SKILL.md", Some(stop), self.shared.opts.network).unwrap_or_else(|e| format!("Error: {e}")),
                None => format!("Error: skill '{id}' not found"),
            },
            "unload_skill" => match card {
                Some(c) => format!(
                    "Unloaded skill '{id}'. MCP servers: [{}]. Local tools: [{}].",
                    c.card.mcps.keys().cloned().collect::<Vec<_>>().join(", "),
                    c.card.local_tools.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                None => format!("Error: skill '{id}' not found"),
            },
            "list_skill_resources" | "list_skill_assets" => {
                let prefix = if name == "list_skill_resources" { "references/" } else { "assets/" };
                let files: Vec<Value> = card
                    .map(|c| c.card.files.iter().filter(|f| f.starts_with(prefix)).map(|f| Value::String(f.clone())).collect())
                    .unwrap_or_default();
                Value::Array(files).to_string()
            }
            _ => {
                let (prefix, key) = if name == "load_skill_resource" { ("references/", "resource_path") } else { ("assets/", "asset_path") };
                let path = args.get(key).and_then(Value::as_str).unwrap_or("");
                let Some(c) = card else { return format!("Error: skill '{id}' not found") };
                let listed: Vec<&String> = c.card.files.iter().filter(|f| f.starts_with(prefix)).collect();
                if !listed.iter().any(|f| f.as_str() == path) {
                    return format!("Error: '{path}' not found. Available: [{}]", listed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "));
                }
                skills::read_card_file(id, c, path, Some(stop), self.shared.opts.network).unwrap_or_else(|e| format!("Error: {e}"))
            }
        }
    }

    fn load_skills(&self, node: &str, ids: Value, cx: &Cx<'_>) -> Result<Map<String, Value>, String> {
        let Value::Array(items) = ids else {
            return Err(format!("load_skills node `{node}`: `skill_ids` must give a list of {{id, version}} maps, got {ids}"));
        };
        let sd = self.shared.sherma();
        let mut internal = self.state.get(INTERNAL).and_then(Value::as_object).cloned().unwrap_or_default();
        let mut loaded: Vec<Value> = internal.get("loaded_tools_from_skills").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut skills = internal.get("loaded_skills").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut calls = Vec::new();
        let mut tool_msgs = Vec::new();
        for (k, item) in items.iter().enumerate() {
            let Some(id) = item.get("id").and_then(Value::as_str) else { continue };
            let version = item.get("version").and_then(Value::as_str).unwrap_or("*");
            let (id, version) = self.hook_before_skill(node, id, version, cx)?;
            let (id, version) = (id.as_str(), version.as_str());
            let Some((_, card)) = sd.skill_cards.iter().find(|(s, _)| s == id) else { continue };
            let text = match skills::read_card_file(id, card, "SKILL.md", Some(cx.stop), self.shared.opts.network) {
                Ok(t) => t,
                Err(e) => {
                    cx.emit(EventBody::Log { source: format!("load_skills `{node}`"), text: format!("skipped: {e}") });
                    continue;
                }
            };
            let call_id = format!("load_skill_{:08x}", fxhash(&format!("{node}/{id}/{k}/{}", self.since_resume)));
            calls.push(json!({"id": call_id, "name": "load_skill_md", "args": {"skill_id": id, "version": version}}));
            let mut tm = Map::new();
            tm.insert("type".into(), "tool".into());
            tm.insert("content".into(), Value::String(text));
            tm.insert("tool_call_id".into(), Value::String(call_id));
            tm.insert("name".into(), "load_skill_md".into());
            tool_msgs.push(normalize_message(&tm));
            // Its local tools and its MCP servers (by the card's key; a node binding the loaded
            // skills' tools gets every tool of such a server).
            let names: Vec<Value> = card
                .card
                .local_tools
                .values()
                .map(|t| Value::String(t.id.clone()))
                .chain(card.card.mcps.keys().map(|k| Value::String(k.clone())))
                .collect();
            if self.hooked("after_skill_load")
                && let Some(Value::Object(tm)) = tool_msgs.last_mut()
            {
                let text = tm.get("content").map(display).unwrap_or_default();
                let text = self.hook_after_skill(node, id, version, text, &names, cx)?;
                tm.insert("content".into(), Value::String(text));
            }
            for n in &names {
                if !loaded.contains(n) {
                    loaded.push(n.clone());
                }
            }
            skills.insert(id.into(), json!({"version": version, "tools": names}));
        }
        internal.insert("loaded_tools_from_skills".into(), Value::Array(loaded));
        internal.insert("loaded_skills".into(), Value::Object(skills));
        let mut up = Map::new();
        if !calls.is_empty() {
            let mut ai = Map::new();
            ai.insert("type".into(), "ai".into());
            ai.insert("content".into(), "".into());
            ai.insert("tool_calls".into(), Value::Array(calls));
            let mut msgs = vec![normalize_message(&ai)];
            msgs.extend(tool_msgs);
            up.insert(MESSAGES.into(), Value::Array(msgs));
        }
        up.insert(INTERNAL.into(), Value::Object(internal));
        Ok(up)
    }
}

/// A node that ran and was routed from ([`ShermaMachine::node_and_route`]).
struct Ran {
    /// The node's update (already applied to the state it ran on).
    update: Map<String, Value>,
    /// Where the run goes next, or why routing failed.
    targets: Result<Targets, RouteError>,
    /// Routing changed `__sherma__` (a `has_error_fallback` branch cleared its flag).
    routing_changed_internal: bool,
}

enum NodeResult {
    Update(Map<String, Value>),
    Interrupt(Pending),
}

struct NodeError {
    /// What events, the timeline and the run's failure say: the error with Switchyard's context
    /// (`LLM call failed: boom (scripted error, replies.yaml:4)`).
    message: String,
    /// Error class for `__sherma__.last_error.type`.
    kind: String,
    attempt: i64,
    /// The error's own text, as upstream records `str(exception)` (`boom`), when it differs
    /// from `message`: what the agent's state (`__sherma__.last_error.message`) and its
    /// `on_node_error` hooks get. `None`: `message`.
    own: Option<String>,
}

impl NodeError {
    fn plain(message: String) -> NodeError {
        NodeError { message, kind: "NodeError".into(), attempt: 1, own: None }
    }
    fn hook(message: String) -> NodeError {
        NodeError { message, kind: "HookError".into(), attempt: 1, own: None }
    }
    /// What the agent sees of the error (see [`NodeError::own`]).
    fn own_message(&self) -> &str {
        self.own.as_deref().unwrap_or(&self.message)
    }
}

impl Machine for ShermaMachine {
    fn agent(&self) -> &str {
        &self.shared.agent().name.value
    }

    fn file(&self) -> Option<String> {
        Some(self.shared.doc.path.display().to_string())
    }

    fn due(&self) -> Vec<String> {
        match self.queue.front() {
            Some(n) => vec![n.clone()],
            None => self.next.first().cloned().into_iter().collect(),
        }
    }

    fn node_kind(&self, node: &str) -> String {
        self.kind(node)
    }

    fn step(&mut self, cx: &Cx<'_>) -> StepOutcome {
        if let Err(e) = self.hook_invoke(cx) {
            return StepOutcome::Failed { node: None, message: e };
        }
        let out = self.step_plain(cx);
        self.hook_outcome(out, cx)
    }

    fn answer(&mut self, pending: &Pending, answer: Value) -> Result<(), String> {
        if self.queue.front().map(String::as_str) != Some(pending.node.as_str()) {
            return Err(format!("node `{}` is not waiting for an answer", pending.node));
        }
        self.resume = Some(answer);
        self.since_resume = 0;
        self.invocation = None;
        Ok(())
    }

    fn state(&self) -> Value {
        self.state.to_json()
    }

    fn edit_state(&mut self, key: &str, value: Value) -> Result<(), String> {
        let mut up = Map::new();
        if key == MESSAGES {
            // An edit replaces the list (the reducer would append).
            let Value::Array(_) = value else {
                return Err("`messages` must be a list of messages".into());
            };
            self.state.replace(MESSAGES, Value::Array(Vec::new()));
        }
        up.insert(key.to_string(), value);
        self.state.apply(&up)?;
        // The nodes still to run in this wave see the edit too.
        if let Some(base) = &mut self.wave_base {
            if key == MESSAGES {
                base.replace(MESSAGES, Value::Array(Vec::new()));
            }
            base.apply(&up)?;
        }
        Ok(())
    }

    fn condition(&self, _node: &str, condition: &str) -> Result<bool, String> {
        self.eval_bool(condition)
    }

    fn check_condition(&self, condition: &str) -> Result<(), String> {
        CelEngine::shared().compile(condition).map(|_| ()).map_err(|e| e.to_string())
    }

    fn fork(&self) -> Box<dyn Machine> {
        Box::new(ShermaMachine {
            shared: self.shared.clone(),
            state: self.state.snapshot(),
            queue: self.queue.clone(),
            next: self.next.clone(),
            wave_base: self.wave_base.as_ref().map(State::snapshot),
            wave_writes: self.wave_writes.clone(),
            cleared_fallback: false,
            resume: self.resume.clone(),
            since_resume: self.since_resume,
            output: self.output.clone(),
            remote: self.remote.clone(),
            input: self.input.clone(),
            invocation: self.invocation.clone(),
            recursion_override: self.recursion_override,
        })
    }

    fn output(&self) -> Value {
        if self.output.is_null() { self.final_output() } else { self.output.clone() }
    }

    fn snapshot(&self) -> Value {
        self.durable_snapshot()
    }

    fn restore(&mut self, snapshot: &Value) -> Result<(), String> {
        self.durable_restore(snapshot)
    }
}

impl ShermaMachine {
    /// `recursion_limit`, as the agent or a `before_graph_invoke` hook set it.
    fn recursion_limit(&self) -> i64 {
        self.recursion_override.unwrap_or(self.shared.recursion_limit)
    }

    /// Start the wave in `queue`: with several nodes, remember the state they all see.
    fn start_wave(&mut self) {
        self.wave_base = (self.queue.len() > 1).then(|| self.state.snapshot());
        self.wave_writes.clear();
    }

    /// One node: `node_enter`, the node, `node_exit`, the update, routing.
    fn step_plain(&mut self, cx: &Cx<'_>) -> StepOutcome {
        if self.queue.is_empty() {
            let mut seen = BTreeSet::new();
            self.queue = std::mem::take(&mut self.next).into_iter().filter(|n| seen.insert(n.clone())).collect();
            self.start_wave();
        }
        let Some(node) = self.queue.front().cloned() else {
            return StepOutcome::Finished { output: self.output() };
        };
        self.since_resume += 1;
        if self.since_resume > self.recursion_limit() {
            return StepOutcome::Failed {
                node: Some(node),
                message: format!(
                    "recursion limit of {} reached without hitting a stop condition; raise `langgraph_config.recursion_limit` \
                     on the agent if the loop is intended, or check the loop's exit condition",
                    self.recursion_limit()
                ),
            };
        }
        let kind = self.kind(&node);
        cx.emit(EventBody::NodeEnter { step: cx.step, node: node.clone(), kind });
        let t0 = Instant::now();
        // In a fan-out, the node runs and routes on the wave's starting state plus its own
        // update (what LangGraph's parallel tasks see); the run's state then takes the update.
        let live = self.wave_base.as_ref().map(|b| std::mem::replace(&mut self.state, b.snapshot()));
        let ran = self.node_and_route(&node, cx);
        let (update, targets) = match (ran, live) {
            (Err(outcome), Some(live)) => {
                self.state = live;
                return outcome;
            }
            (Err(outcome), None) => return outcome,
            (Ok(Ran { update, targets, .. }), None) => (update, targets),
            (Ok(Ran { update, targets, routing_changed_internal }), Some(live)) => {
                let own = std::mem::replace(&mut self.state, live);
                for key in update.keys() {
                    if key == MESSAGES || key == INTERNAL {
                        continue;
                    }
                    match self.wave_writes.get(key) {
                        Some(other) if other != &node => {
                            return StepOutcome::Failed {
                                node: Some(node.clone()),
                                message: format!(
                                    "`{other}` and `{node}` both set `{key}` in the same super-step: they run in parallel \
                                     (several static edges lead to them from one node), and a plain field takes one \
                                     value per step (LangGraph refuses this too, with InvalidUpdateError). Set \
                                     different fields, or chain the two nodes with an edge"
                                ),
                            };
                        }
                        _ => {
                            self.wave_writes.insert(key.clone(), node.clone());
                        }
                    }
                }
                if let Err(e) = self.state.apply(&update) {
                    return StepOutcome::Failed { node: Some(node.clone()), message: format!("node `{node}` returned a bad update: {e}") };
                }
                if (update.contains_key(INTERNAL) || routing_changed_internal)
                    && let Some(v) = own.get(INTERNAL)
                {
                    self.state.replace(INTERNAL, v.clone());
                }
                (update, targets)
            }
        };
        cx.emit(EventBody::NodeExit {
            step: cx.step,
            node: node.clone(),
            update: if cx.wanted() { Value::Object(update) } else { Value::Null },
            duration_ms: t0.elapsed().as_millis() as u64,
        });
        self.queue.pop_front();
        let targets = match targets {
            Ok(targets) => targets,
            Err(e) => {
                return StepOutcome::Failed { node: Some(node.clone()), message: format!("routing after `{node}` failed: {e}") };
            }
        };
        // A node without outgoing edges ends the run (sherma): no targets are added.
        for (to, reason) in targets {
            cx.emit(EventBody::Route { from: node.clone(), to: to.clone(), reason });
            if to != END {
                self.next.push(to);
            }
        }
        if self.queue.is_empty() && self.next.is_empty() {
            self.wave_base = None;
            self.output = self.final_output();
            return StepOutcome::Finished { output: self.output.clone() };
        }
        StepOutcome::Continue
    }

    /// Run `node` (with its hooks, `on_error` fallback and error hooks) on the current state,
    /// apply its update and route from it. `Err` is the step's outcome when the node asks a
    /// question or fails; a routing failure is in [`Ran::targets`] (the step fails after
    /// `node_exit`).
    fn node_and_route(&mut self, node: &str, cx: &Cx<'_>) -> Result<Ran, StepOutcome> {
        let node = node.to_string();
        // `node_enter` may change the state this node sees (only this node: it is put back).
        let (result, saved) = match self.hook_node_enter(&node, cx) {
            Err(e) => (Err(e), None),
            Ok(entered) => {
                let saved = entered.map(|st| std::mem::replace(&mut self.state, st));
                let r = match self.run_node(&node, cx) {
                    Ok(NodeResult::Update(u)) => self.hook_node_exit(&node, u, cx).map(NodeResult::Update),
                    other => other,
                };
                (r, saved)
            }
        };
        if let Some(st) = saved {
            self.state = st;
        }
        let update = match result {
            Ok(NodeResult::Interrupt(p)) => {
                self.since_resume -= 1;
                return Err(StepOutcome::Interrupt(p));
            }
            Ok(NodeResult::Update(u)) => u,
            Err(e) => {
                let decl = self.shared.decl(&node);
                let fallback = decl.and_then(|d| d.on_error.as_ref()).and_then(|o| o.fallback.as_ref());
                match fallback {
                    Some(fb) => {
                        let mut internal = self.state.get(INTERNAL).and_then(Value::as_object).cloned().unwrap_or_default();
                        internal.insert(
                            "last_error".into(),
                            json!({"node": node, "type": e.kind, "message": e.own_message(), "attempt": e.attempt}),
                        );
                        internal.insert("error_fallback".into(), Value::String(fb.value.clone()));
                        cx.emit(EventBody::Error {
                            node: Some(node.clone()),
                            message: format!("{}; recorded in __sherma__.last_error, going to fallback `{}`", e.message, fb.value),
                        });
                        let mut up = Map::new();
                        up.insert(INTERNAL.into(), Value::Object(internal));
                        up
                    }
                    None => match self.hook_node_error(&node, e, cx) {
                        // A hook consumed the error: the node returns `{}` and routing goes on.
                        None => Map::new(),
                        Some(e) => {
                            return Err(StepOutcome::Failed {
                                node: Some(node.clone()),
                                message: format!("node `{node}`: {}", e.message),
                            });
                        }
                    },
                }
            }
        };
        if let Err(e) = self.state.apply(&update) {
            return Err(StepOutcome::Failed { node: Some(node.clone()), message: format!("node `{node}` returned a bad update: {e}") });
        }
        self.cleared_fallback = false;
        let targets = self.route_from(&node);
        Ok(Ran { update, targets, routing_changed_internal: std::mem::take(&mut self.cleared_fallback) })
    }

    /// The run's result: the last AI message's text, else null.
    fn final_output(&self) -> Value {
        self.last_message_text().map(Value::String).unwrap_or(Value::Null)
    }
}

/// Load diagnostics that do not stop a run (warnings are never errors; these codes are
/// errors only for the editor's benefit).
fn is_soft(code: &str) -> bool {
    matches!(code, "manifest-version" | "manifest-version-missing")
}

fn last_has_tool_calls(state: &State) -> bool {
    state
        .messages()
        .last()
        .and_then(|m| m.get("tool_calls"))
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

/// The field an expression names when it is exactly `state.<key>` or `state["<key>"]`.
fn direct_field(expr: &str) -> Option<&str> {
    let e = expr.trim();
    let key = e
        .strip_prefix("state.")
        .or_else(|| e.strip_prefix("state[\"").and_then(|r| r.strip_suffix("\"]")))
        .or_else(|| e.strip_prefix("state['").and_then(|r| r.strip_suffix("']")))?;
    (!key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(key)
}

/// A stored (LangChain-shaped) message in the provider wire format shared by both dialects:
/// `{role: system|user|assistant|tool, content, tool_calls?, tool_call_id?, name?}`.
fn to_wire(m: &Value) -> Value {
    let role = match m.get("type").and_then(Value::as_str).unwrap_or("human") {
        "human" => "user",
        "ai" => "assistant",
        other => other,
    };
    let mut out = Map::new();
    out.insert("role".into(), Value::String(role.into()));
    out.insert("content".into(), m.get("content").cloned().unwrap_or(Value::String(String::new())));
    for key in ["tool_calls", "tool_call_id", "name"] {
        match m.get(key) {
            Some(Value::Array(a)) if a.is_empty() => {}
            Some(Value::Null) | None => {}
            Some(v) => {
                out.insert(key.into(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// What an interrupt answer appends to `messages`.
fn answer_messages(answer: Value) -> Value {
    match answer {
        Value::Array(items) if !items.is_empty() && items.iter().all(|i| i.get("content").is_some()) => {
            Value::Array(items.iter().filter_map(|i| i.as_object().map(normalize_message)).collect())
        }
        Value::Object(m) if m.contains_key("content") => json!([normalize_message(&m)]),
        Value::String(s) => json!([message("human", Value::String(s))]),
        other => json!([message("human", Value::String(display(&other)))]),
    }
}

/// A value as text the way a prompt shows it: strings as is, everything else as JSON.
pub fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { format!("{}…", s.chars().take(n).collect::<String>()) }
}

/// A reply as a JSON object: the whole text, or inside ``` fences (after any leading
/// `<think>` blocks), parsed the same way as Loki's structured output.
fn parse_json_reply(text: &str) -> Option<Value> {
    runtime::provider::parse_json_loose(text).filter(Value::is_object)
}

fn sleep_unless_stopped(d: Duration, cx: &Cx<'_>) {
    let end = Instant::now() + d;
    while Instant::now() < end && !cx.stopped() {
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
}

fn fxhash(s: &str) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    h
}

fn entity_map(list: &[Entity], f: impl Fn(&Entity) -> Value) -> Option<Value> {
    if list.is_empty() {
        return None;
    }
    Some(Value::Object(list.iter().map(|e| (e.id_str().to_string(), f(e))).collect()))
}

fn build_extras(sd: &ShermaDoc) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    if let Some(p) = entity_map(&sd.prompts, |e| {
        let text = sd.prompt_texts.iter().find(|(k, _)| k == e.id_str()).map(|(_, t)| t.clone()).unwrap_or_default();
        json!({"instructions": text})
    }) {
        out.push(("prompts", p));
    }
    if let Some(l) = entity_map(&sd.llms, |e| json!({"model_name": e.get_str("model_name").unwrap_or("")})) {
        out.push(("llms", l));
    }
    if let Some(s) = entity_map(&sd.skills, |e| {
        let card = sd.skill_cards.iter().find(|(k, _)| k == e.id_str()).map(|(_, c)| &c.card);
        let version = e.version.as_ref().map(|v| v.value.clone()).unwrap_or_else(|| "*".into());
        match card {
            Some(c) => json!({"id": e.id_str(), "version": version, "name": c.name, "description": c.description}),
            None => json!({"id": e.id_str(), "version": version}),
        }
    }) {
        out.push(("skills", s));
    }
    if sd.data.as_object().is_some_and(|m| !m.is_empty()) {
        out.push(("data", sd.data.clone()));
    }
    out
}

fn build_tools(sd: &ShermaDoc) -> Vec<Tool> {
    let mut tools = Vec::new();
    let add = |t: Tool, tools: &mut Vec<Tool>| {
        if !tools.iter().any(|x: &Tool| x.name == t.name) {
            tools.push(t);
        }
    };
    for t in &sd.tools {
        let kind = match t.get_str("import_path") {
            Some(p) => ToolKind::Python(p.to_string()),
            None => ToolKind::Unavailable(format!("tool `{}` has no `import_path`; only Python tools run locally", t.id_str())),
        };
        add(Tool { name: t.id_str().to_string(), kind }, &mut tools);
    }
    // Without any Agent Skill there is no catalogue and no tool (a node naming it binds nothing).
    if !sd.agent_skills.skills.is_empty() {
        add(Tool { name: "activate_skill".into(), kind: ToolKind::Skill("activate_skill") }, &mut tools);
    }
    if !sd.skills.is_empty() {
        for name in SKILL_TOOLS {
            add(Tool { name: (*name).into(), kind: ToolKind::Skill(name) }, &mut tools);
        }
        for (_, card) in &sd.skill_cards {
            for (key, lt) in &card.card.local_tools {
                let name = if lt.id.is_empty() { key.clone() } else { lt.id.clone() };
                let kind = match &lt.import_path {
                    Some(p) => ToolKind::Python(p.clone()),
                    None => ToolKind::Unavailable(format!("skill tool `{name}` has no `import_path`")),
                };
                add(Tool { name, kind }, &mut tools);
            }
        }
    }
    for (i, s) in sd.sub_agents.iter().enumerate() {
        add(Tool { name: s.id_str().to_string(), kind: ToolKind::SubAgent(i) }, &mut tools);
    }
    // MCP tools are listed by their servers when they connect (`Shared::connect_mcp`).
    tools
}

/// The agent's MCP servers, not connected. An entry that cannot be used (a bad transport, no
/// `command`) fails the first node that needs it, with the reason.
/// A `hooks:` entry as JSON, with its interpolated `import_path` / `url`.
fn hook_entry(e: &Entity) -> Value {
    let mut v = e.node.to_json();
    if let Value::Object(m) = &mut v {
        for k in ["import_path", "url"] {
            if let Some(s) = e.get_str(k) {
                m.insert(k.into(), Value::String(s.to_string()));
            }
        }
    }
    v
}

fn build_mcp_pool(sd: &ShermaDoc, base_dir: &std::path::Path, timeout: Duration) -> McpPool {
    let mut specs = Vec::new();
    let mut bad = Vec::new();
    for ent in &sd.mcp_servers {
        match McpServerSpec::from_json(ent.id_str(), &ent.node.to_json(), base_dir, None) {
            Ok(mut spec) => {
                if ent.node.get("timeout").is_none() {
                    spec.timeout = timeout;
                }
                specs.push(spec);
            }
            Err(e) => bad.push((ent.id_str().to_string(), e)),
        }
    }
    // Skill cards' `mcps` (`{id, version, url, transport}`, or a stdio `command`): one server
    // each, named `<skill>/<key>`, connected only when a node binds the loaded skill's tools.
    for (skill, card) in &sd.skill_cards {
        let dir = card.path.parent().map(std::path::Path::to_path_buf).unwrap_or_else(|| base_dir.to_path_buf());
        for (key, def) in &card.card.mcps {
            let name = skill_mcp_name(skill, key);
            match McpServerSpec::from_json(&name, def, &dir, None) {
                Ok(mut spec) => {
                    if def.get("timeout").is_none() {
                        spec.timeout = timeout;
                    }
                    specs.push(spec);
                }
                Err(e) => bad.push((name, e)),
            }
        }
    }
    let mut pool = McpPool::new(specs);
    for (name, why) in bad {
        pool.add_unavailable(&name, why);
    }
    pool
}

/// The pool name of a skill card's MCP server.
fn skill_mcp_name(skill: &str, key: &str) -> String {
    format!("{skill}/{key}")
}

fn skill_tool_doc(name: &str) -> &'static str {
    match name {
        "list_skills" => "List the available skills (id, version, name, description).",
        "load_skill_md" => "Load a skill's SKILL.md instructions and make its tools available.",
        "unload_skill" => "Unload a skill and remove its tools.",
        "list_skill_resources" => "List a skill's reference files.",
        "list_skill_assets" => "List a skill's asset files.",
        "load_skill_resource" => "Read one of a skill's reference files.",
        _ => "Read one of a skill's asset files.",
    }
}

fn skill_tool_params(name: &str) -> Value {
    let s = |props: Value, req: &[&str]| json!({"type": "object", "properties": props, "required": req});
    match name {
        "list_skills" => s(json!({}), &[]),
        "load_skill_md" | "unload_skill" | "list_skill_resources" | "list_skill_assets" => {
            s(json!({"skill_id": {"type": "string"}, "version": {"type": "string", "default": "*"}}), &["skill_id"])
        }
        "load_skill_resource" => s(
            json!({"skill_id": {"type": "string"}, "resource_path": {"type": "string"}, "version": {"type": "string", "default": "*"}}),
            &["skill_id", "resource_path"],
        ),
        _ => s(
            json!({"skill_id": {"type": "string"}, "asset_path": {"type": "string"}, "version": {"type": "string", "default": "*"}}),
            &["skill_id", "asset_path"],
        ),
    }
}
