//! Loki "normal" agents (`config.yaml`, an LLM loop with tools) as the nested runs that agent
//! nodes spawn (coyote 0.10.3: an agent node naming a config.yaml agent runs it).
//!
//! What of the `config.yaml` is used:
//!
//! - `instructions`: the system prompt, with `{{name}}` replaced by each declared variable's
//!   default and the special variables (`__os__`, `__os_family__`, `__arch__`, `__shell__`,
//!   `__locale__`, `__now__`, `__cwd__`, `__tools__`); any other `{{...}}` stays as written
//!   (Loki replaces what it knows, it does not fail on the rest);
//! - `model`, `temperature`, `top_p`;
//! - the tools: `global_tools` files, the agent's own `tools.sh` / `tools.ts` / `tools.js` /
//!   `tools.py`, and every tool of each of its `mcp_servers` (a server that cannot be listed is
//!   said in a `log` event and left out, as Loki warns and goes on); run through the same code as
//!   llm nodes' tools;
//! - the loop: the instructions and the agent node's prompt are sent; each tool call runs and
//!   its result goes back; the run ends at the first reply without tool calls, or fails after
//!   [`MAX_TURNS`] turns. Its output is the text of all its turns, joined by newlines (what Loki
//!   returns for a normal child).
//!
//! In the debugger the run has one node, named after the agent (its folder name), of kind
//! `llm`; each step is one turn (one LLM call and the tools it asked for). Its LLM calls and
//! tool calls carry that node name, so a scripted reply aimed at `node: report-writer` answers
//! the `report-writer` agent (inside map item `i`: `report-writer[i]`). The state is the
//! prompt, the conversation so far (without the system prompt) and the number of turns.
//!
//! coyote 0.10.3's built-in functions ([`super::supervisor`]): every normal agent gets the
//! teammate pair (`agent__send_message`, `agent__check_inbox`; as a `teammates: true` node of a
//! fan-out it also learns its peers' roster from its prompt), the supervisor family with
//! `can_spawn_agents: true` (`max_concurrent_agents`, `max_agent_depth`, `spawnable_agents`),
//! and the job family while `max_concurrent_jobs` (default 5) is above 0. A spawned child is a
//! nested run `<run>/<child id>` whose calls are named `<agent>@<run path>`; the children and
//! jobs of a turn all end within that turn.
//!
//! Not used (nothing in Switchyard acts on them): `conversation_starters`, `agent_session`,
//! `auto_continue` / `max_auto_continues` / todo injection, `dynamic_instructions`,
//! `documents` (agent RAG), skills, an agent-level `mcp_tools` allow-list.

use super::Exec;
use super::chain::NamedProvider;
use super::supervisor::{self, Available, Calls, Child, Host, Limits, Mailbox, Supervisor};
use crate::rag::RagStore;
use crate::tools as loki_tools;
use connect::mcp::{McpPool, McpTool};
use connect::pybridge::PyBridge;
use model::doc::Sp;
use model::doc::loki::LokiDoc;
use runtime::events::EventBody;
use runtime::provider::{LlmRequest, ModelRef};
use runtime::session::{Cx, Machine, Pending, StepOutcome, run_nested};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The turns a normal agent may take before it fails (Loki's own loop is unbounded).
pub const MAX_TURNS: u64 = 100;

/// A `config.yaml` agent as read from its folder.
#[derive(Clone, Debug)]
pub struct NormalAgent {
    /// The folder name (what agent nodes name, and the node name in events).
    pub name: String,
    pub file: PathBuf,
    pub instructions: String,
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub global_tools: Vec<String>,
    pub mcp_servers: Vec<String>,
    /// Declared variables: name and default.
    pub variables: Vec<(String, Option<String>)>,
    /// coyote 0.10.3's spawning and job settings, as written.
    pub spawning: Spawning,
}

/// A normal agent's `can_spawn_agents`, `max_concurrent_agents`, `max_agent_depth`,
/// `max_concurrent_jobs` and `spawnable_agents`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spawning {
    pub can_spawn_agents: bool,
    pub max_concurrent_agents: Option<u64>,
    pub max_agent_depth: Option<u64>,
    pub max_concurrent_jobs: Option<u64>,
    pub spawnable_agents: Option<Vec<String>>,
}

impl Spawning {
    /// The effective limits (coyote's defaults: 4 agents, depth 3, 5 jobs), or `None` when the
    /// agent has neither the supervisor nor the job family.
    pub fn limits(&self) -> Option<Limits> {
        let limits = Limits {
            spawn: self.can_spawn_agents,
            max_agents: self.max_concurrent_agents.unwrap_or(model::doc::loki::DEFAULT_MAX_CONCURRENT_AGENTS) as usize,
            max_depth: self.max_agent_depth.unwrap_or(3).min(u64::from(super::MAX_AGENT_DEPTH)),
            max_jobs: self.max_concurrent_jobs.unwrap_or(supervisor::DEFAULT_MAX_CONCURRENT_JOBS) as usize,
            spawnable: self.spawnable_agents.clone(),
        };
        (limits.spawn || limits.max_jobs > 0).then_some(limits)
    }
}

impl NormalAgent {
    /// Read `<dir>/config.yaml`.
    pub fn load(dir: &Path) -> Result<NormalAgent, String> {
        let file = dir.join("config.yaml");
        let text = syntax::source::read_bounded_text(&file, syntax::source::SIDE_FILE_CAP, None)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        Self::parse(dir, &text)
    }

    /// A `config.yaml`'s text, for the agent in `dir`.
    pub fn parse(dir: &Path, text: &str) -> Result<NormalAgent, String> {
        let file = dir.join("config.yaml");
        let v: Value = serde_yaml::from_str(text).map_err(|e| format!("{}: {e}", file.display()))?;
        if !v.is_object() {
            return Err(format!("{}: a normal agent's config.yaml must be a mapping", file.display()));
        }
        let text_of = |k: &str| -> Result<Option<String>, String> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(other.to_string())),
                Some(_) => Err(format!("{}: `{k}` must be text", file.display())),
            }
        };
        let number = |k: &str| -> Result<Option<f64>, String> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(n) => n.as_f64().map(Some).ok_or_else(|| format!("{}: `{k}` must be a number", file.display())),
            }
        };
        let list = |k: &str| -> Result<Vec<String>, String> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|x| x.as_str().map(str::to_string).ok_or_else(|| format!("{}: `{k}` must list names", file.display())))
                    .collect(),
                Some(_) => Err(format!("{}: `{k}` must be a list", file.display())),
            }
        };
        let mut variables = Vec::new();
        if let Some(Value::Array(vars)) = v.get("variables") {
            for var in vars {
                let Some(name) = var.get("name").and_then(Value::as_str) else {
                    return Err(format!("{}: every entry of `variables` needs a `name`", file.display()));
                };
                let default = match var.get("default") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(other) => Some(other.to_string()),
                };
                variables.push((name.to_string(), default));
            }
        }
        let name = dir
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .or(text_of("name")?)
            .unwrap_or_else(|| "agent".into());
        let instructions = text_of("instructions")?.unwrap_or_default();
        let model = text_of("model")?;
        let (temperature, top_p) = (number("temperature")?, number("top_p")?);
        let (global_tools, mcp_servers) = (list("global_tools")?, list("mcp_servers")?);
        let count = |k: &str| -> Result<Option<u64>, String> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(n) => n.as_u64().map(Some).ok_or_else(|| format!("{}: `{k}` must be a whole number", file.display())),
            }
        };
        let spawning = Spawning {
            can_spawn_agents: match v.get("can_spawn_agents") {
                None | Some(Value::Null) => false,
                Some(b) => b.as_bool().ok_or_else(|| format!("{}: `can_spawn_agents` must be true or false", file.display()))?,
            },
            max_concurrent_agents: count("max_concurrent_agents")?,
            max_agent_depth: count("max_agent_depth")?,
            max_concurrent_jobs: count("max_concurrent_jobs")?,
            spawnable_agents: v.get("spawnable_agents").filter(|x| !x.is_null()).map(|_| list("spawnable_agents")).transpose()?,
        };
        Ok(NormalAgent { name, file: file.clone(), instructions, model, temperature, top_p, global_tools, mcp_servers, variables, spawning })
    }

    /// The tool machinery's view of the agent: a graph document without nodes holding its
    /// folder, tools, servers and model.
    fn as_doc(&self, dir: &Path) -> LokiDoc {
        let sp = |s: &String| Sp::new(s.clone(), Default::default());
        LokiDoc {
            name: Some(self.name.clone()),
            model: self.model.as_ref().map(sp),
            temperature: self.temperature,
            top_p: self.top_p,
            global_tools: self.global_tools.iter().map(sp).collect(),
            mcp_servers: self.mcp_servers.iter().map(sp).collect(),
            agent_dir: dir.to_path_buf(),
            ..LokiDoc::default()
        }
    }
}

/// A run of a normal agent (see the module docs).
#[derive(Clone)]
pub struct NormalMachine {
    agent: Arc<NormalAgent>,
    doc: Arc<LokiDoc>,
    prompt: String,
    /// The conversation after the system prompt.
    messages: Vec<Value>,
    /// The text of every turn so far.
    texts: Vec<String>,
    turns: u64,
    /// The tools offered, worked out at the first turn.
    tools: Option<Vec<Value>>,
    output: Value,
    done: bool,
    pub(super) outer_deadline: Option<Instant>,
    py: Arc<Mutex<Option<PyBridge>>>,
    mcp: Arc<McpPool>,
    rag: Arc<RagStore>,
    child_env: connect::childenv::ChildEnv,
    vars: Arc<Vec<(String, String)>>,
    /// Its inbox and who it can message (coyote 0.10.3's teammate functions).
    mail: Mailbox,
    /// Its spawned children and jobs (when it has either family).
    sup: Option<Arc<Mutex<Supervisor>>>,
}

impl std::fmt::Debug for NormalMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NormalMachine").field("agent", &self.agent.name).field("turns", &self.turns).finish()
    }
}

impl NormalMachine {
    /// A run of the normal agent in `dir` for the user message `prompt`.
    pub fn new(dir: &Path, prompt: &str) -> Result<NormalMachine, String> {
        let agent = NormalAgent::load(dir)?;
        let doc = agent.as_doc(dir);
        let mcp = Arc::new(connect::mcp::loki_pool(dir, &agent.mcp_servers));
        let vars = agent
            .variables
            .iter()
            .filter_map(|(n, d)| Some((format!("LLM_AGENT_VAR_{}", n.to_uppercase()), d.clone()?)))
            .collect();
        let sup = agent.spawning.limits().map(|l| Arc::new(Mutex::new(Supervisor::new(l))));
        let mail = Mailbox::alone(supervisor::peer_id(&agent.name, &agent.name));
        Ok(NormalMachine {
            agent: Arc::new(agent),
            doc: Arc::new(doc),
            prompt: prompt.to_string(),
            messages: vec![json!({"role": "user", "content": prompt})],
            texts: Vec::new(),
            turns: 0,
            tools: None,
            output: Value::Null,
            done: false,
            outer_deadline: None,
            py: Arc::new(Mutex::new(None)),
            mcp,
            rag: Arc::new(RagStore::new(None)),
            child_env: Default::default(),
            vars: Arc::new(vars),
            mail,
            sup,
        })
    }

    /// Its identity and inbox (an agent node gives its own, or a teammate's).
    pub fn with_mailbox(mut self, mail: Mailbox) -> NormalMachine {
        self.mail = mail;
        self
    }

    /// Values for its declared variables (what `agent__spawn` passes), replacing the defaults.
    fn with_variables(mut self, values: &serde_json::Map<String, Value>) -> NormalMachine {
        if values.is_empty() {
            return self;
        }
        let agent = Arc::make_mut(&mut self.agent);
        for (name, default) in agent.variables.iter_mut() {
            if let Some(v) = values.get(name.as_str()).and_then(Value::as_str) {
                *default = Some(v.to_string());
            }
        }
        self.vars = Arc::new(
            agent
                .variables
                .iter()
                .filter_map(|(n, d)| Some((format!("LLM_AGENT_VAR_{}", n.to_uppercase()), d.clone()?)))
                .collect(),
        );
        self
    }

    /// The environment its tools see (`connect::childenv`).
    pub fn with_child_env(mut self, env: connect::childenv::ChildEnv) -> NormalMachine {
        self.mcp.set_child_env(&env);
        self.child_env = env;
        self
    }

    /// The system prompt: `instructions` with the variables replaced (see the module docs).
    pub fn system_prompt(&self, tools: &[Value]) -> String {
        let mut text = self.agent.instructions.clone();
        for (name, default) in &self.agent.variables {
            if let Some(d) = default {
                text = text.replace(&format!("{{{{{name}}}}}"), d);
            }
        }
        if !text.contains("{{__") {
            return text;
        }
        let tool_list: Vec<String> = tools
            .iter()
            .map(|t| match t["description"].as_str().filter(|d| !d.is_empty()) {
                Some(d) => format!("- {}: {}", t["name"].as_str().unwrap_or(""), d.lines().next().unwrap_or("")),
                None => format!("- {}", t["name"].as_str().unwrap_or("")),
            })
            .collect();
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let shell = env("SHELL")
            .and_then(|s| Path::new(&s).file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "sh".into());
        let locale = env("LC_ALL").or_else(|| env("LANG")).unwrap_or_else(|| "C".into());
        let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default();
        let specials = [
            ("__os__", std::env::consts::OS.to_string()),
            ("__os_family__", std::env::consts::FAMILY.to_string()),
            ("__arch__", std::env::consts::ARCH.to_string()),
            ("__shell__", shell),
            ("__locale__", locale),
            ("__now__", now_iso()),
            ("__cwd__", cwd),
            ("__tools__", tool_list.join("\n")),
        ];
        for (k, v) in specials {
            text = text.replace(&format!("{{{{{k}}}}}"), &v);
        }
        text
    }

    fn node(&self) -> &str {
        &self.agent.name
    }

    /// The tools the agent offers: its global tools, its own tool files' functions, its MCP
    /// servers' tools.
    fn offered(&self, ex: &Exec<'_, '_>) -> Vec<Value> {
        let mut names: Vec<String> = self
            .agent
            .global_tools
            .iter()
            .filter_map(|t| Path::new(t).file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
        for n in loki_tools::AgentTools::read(&self.doc.agent_dir).names {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let mut out: Vec<Value> = names.iter().map(|n| ex.describe_tool(n)).collect();
        for server in &self.agent.mcp_servers {
            match ex.mcp_tools(server) {
                Ok(tools) => out.extend(tools.iter().map(McpTool::offer)),
                Err(e) => ex.cx.emit(EventBody::Log {
                    source: format!("agent:{}", self.agent.name),
                    text: format!("MCP server '{server}' is left out: {e}"),
                }),
            }
        }
        // coyote 0.10.3's built-in functions, in its order: the supervisor family, the job
        // family, the teammate pair (always).
        let limits = self.sup.as_ref().map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).limits.clone());
        if limits.as_ref().is_some_and(|l| l.spawn) {
            out.extend(supervisor::supervisor_tools());
        }
        if limits.as_ref().is_some_and(|l| l.max_jobs > 0) {
            out.extend(supervisor::job_tools());
        }
        out.extend(supervisor::teammate_tools());
        out
    }

    fn state_of(&self) -> Value {
        json!({"initial_prompt": self.prompt, "messages": self.messages, "turns": self.turns})
    }

    fn turn(&mut self, cx: &Cx<'_>) -> StepOutcome {
        let node = self.node().to_string();
        let fail = |message: String| StepOutcome::Failed { node: Some(node.clone()), message };
        if cx.stopped() {
            return fail(format!("Agent '{node}' aborted"));
        }
        if self.turns >= MAX_TURNS {
            return fail(format!(
                "Agent '{node}' took {MAX_TURNS} turns without a reply free of tool calls (Switchyard's turn cap for normal agents)"
            ));
        }
        let answers = BTreeMap::new();
        let doc = self.doc.clone();
        let ex = Exec {
            l: &doc,
            graph: &node,
            cx,
            answers: &answers,
            deadline: self.outer_deadline,
            py: &self.py,
            mcp: &self.mcp,
            rag: &self.rag,
            child_env: &self.child_env,
            vars: &self.vars,
            qualify: false,
            fanout: false,
            teammate: None,
            mail: &self.mail,
        };
        cx.emit(EventBody::NodeEnter { step: cx.step, node: node.clone(), kind: "llm".into() });
        let t0 = Instant::now();
        if self.tools.is_none() {
            self.tools = Some(self.offered(&ex));
        }
        let tools = self.tools.clone().unwrap_or_default();
        let system = self.system_prompt(&tools);
        let mut messages = Vec::with_capacity(self.messages.len() + 1);
        if !system.trim().is_empty() {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(self.messages.iter().cloned());
        let req = LlmRequest {
            node: node.clone(),
            messages: Value::Array(messages),
            tools: Value::Array(tools.clone()),
            model: self.agent.model.as_deref().map(ModelRef::parse),
            temperature: self.agent.temperature,
            top_p: self.agent.top_p,
            response_format: None,
            ..LlmRequest::default()
        };
        self.turns += 1;
        let before = self.messages.len();
        let resp = match cx.complete(&req) {
            Ok(r) => r,
            Err(e) => {
                if e.kind.transient()
                    && let Some(after) = e.retry_after
                {
                    ex.wait_unless_stopped(after);
                }
                return fail(format!("LLM call failed: {e}"));
            }
        };
        let content = resp.content.clone().unwrap_or_default();
        if !content.is_empty() {
            self.texts.push(content.clone());
        }
        let offered: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        let names: Vec<String> = offered.iter().map(|n| n.to_string()).collect();
        let host = Spawner {
            ex: &ex,
            node: &node,
            base: ex.cx.run.clone(),
            agents_dir: self.doc.agents_dir(),
            mail: &self.mail,
            sup: self.sup.as_ref(),
        };
        let calls = Calls { sup: self.sup.as_ref(), mail: &self.mail, child_depth: u64::from(cx.depth) + 1, offered: &names, host: &host };
        if resp.tool_calls.is_empty() {
            self.messages.push(json!({"role": "assistant", "content": content}));
        } else {
            self.messages.push(json!({"role": "assistant", "content": content, "tool_calls": resp.tool_calls}));
            for call in &resp.tool_calls {
                cx.emit(EventBody::ToolCall { node: node.clone(), call: call.clone() });
                let outcome = if offered.contains(&call.name.as_str()) && Calls::handles(&call.name) {
                    calls.call(&call.name, &call.args)
                } else if offered.contains(&call.name.as_str()) {
                    cx.tool(&node, &call.name, &call.args, || ex.run_tool(&call.name, &call.args))
                } else {
                    Err(format!("tool '{}' is not available to agent '{node}'", call.name))
                };
                self.messages.push(super::tool_answer(cx, &node, call, outcome));
            }
            // Every child and job of this turn ends within it (see `supervisor`).
            calls.settle();
        }
        let added: Vec<Value> = self.messages[before..].to_vec();
        cx.emit(EventBody::NodeExit {
            step: cx.step,
            node: node.clone(),
            update: json!({"messages": added, "turns": self.turns}),
            duration_ms: t0.elapsed().as_millis() as u64,
        });
        if resp.tool_calls.is_empty() {
            self.done = true;
            self.output = Value::String(self.texts.join("\n"));
            return StepOutcome::Finished { output: self.output.clone() };
        }
        StepOutcome::Continue
    }
}

/// How the spawned children and jobs of a normal agent, or of a graph's llm node, run (see
/// [`supervisor`]).
pub(super) struct Spawner<'a, 'b, 'c> {
    pub ex: &'a Exec<'b, 'c>,
    /// The node whose tool calls the jobs are (recordings and replays match them by it).
    pub node: &'a str,
    /// The run id the children nest under (`<base>/<child id>`).
    pub base: String,
    pub agents_dir: PathBuf,
    pub mail: &'a Mailbox,
    pub sup: Option<&'a Arc<Mutex<Supervisor>>>,
}

impl Host for Spawner<'_, '_, '_> {
    /// A nested run `<base>/<child id>` of the agent, its calls named `<node>@<path>` (see
    /// `chain`), deadline and environment inherited.
    fn run_child(&self, child: &Child) -> Result<String, String> {
        let name = &child.agent;
        let Some((path, normal)) = super::locate_agent(&[self.agents_dir.join(name)]) else {
            return Err(format!("Agent '{name}' not found in {}", self.agents_dir.display()));
        };
        let deadline = self.ex.deadline;
        let env = self.ex.child_env.clone();
        let mut graph_child;
        let mut normal_child;
        let mail = Mailbox {
            id: child.id.clone(),
            inbox: child.inbox.clone(),
            peers: None,
            parent: Some(self.mail.inbox.clone()),
            siblings: self.sup.cloned(),
        };
        let machine: &mut dyn Machine = if normal {
            normal_child = NormalMachine::new(&path, &child.prompt)
                .map_err(|e| format!("Agent '{name}' failed to start: {e}"))?
                .with_child_env(env)
                .with_variables(&child.variables)
                .with_mailbox(mail);
            normal_child.outer_deadline = deadline;
            &mut normal_child
        } else {
            let seed = (!child.variables.is_empty()).then(|| Value::Object(child.variables.clone()));
            let doc = Arc::new(model::doc::load_path(&path));
            graph_child = super::LokiMachine::new(doc, &child.prompt, seed)
                .map_err(|e| format!("Agent '{name}' failed to start: {e}"))?
                .with_child_env(env)
                .with_mailbox(mail);
            graph_child.outer_deadline = deadline;
            graph_child.qualify_nested = true;
            &mut graph_child
        };
        let run = format!("{}/{}", self.base, child.id);
        let provider = NamedProvider::for_run(self.ex.cx.provider, &run);
        let mut cx = self.ex.cx_with(&provider);
        // `run_nested` nests below `cx.run`: the base, less the child's own id.
        let (under, id) = run.rsplit_once('/').expect("a base and an id");
        cx.run = under.to_string();
        let prompt = Value::String(child.prompt.clone());
        let timeout = deadline.map_or(model::doc::loki::MAX_SECS, |d| d.saturating_duration_since(Instant::now()).as_secs());
        super::nested_result(name, run_nested(machine, &cx, id, prompt, deadline), timeout).map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }

    fn run_job(&self, tool: &str, args: &Value) -> Result<Value, String> {
        self.ex.cx.tool(self.node, tool, args, || self.ex.run_tool(tool, args))
    }

    fn available(&self) -> Vec<Available> {
        let Ok(entries) = std::fs::read_dir(&self.agents_dir) else { return Vec::new() };
        let mut out: Vec<Available> = entries
            .flatten()
            .filter_map(|e| {
                let dir = e.path();
                let file = ["graph.yaml", "config.yaml"].iter().map(|f| dir.join(f)).find(|f| f.is_file())?;
                let text = syntax::source::read_bounded_text(&file, syntax::source::SIDE_FILE_CAP, None).ok()?;
                let v: Value = serde_yaml::from_str(&text).ok()?;
                let field = |x: &Value, k: &str| match x.get(k) {
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(n @ (Value::Number(_) | Value::Bool(_))) => Some(n.to_string()),
                    _ => None,
                };
                let variables = v
                    .get("variables")
                    .and_then(Value::as_array)
                    .map(|vars| {
                        vars.iter()
                            .filter_map(|x| Some((field(x, "name")?, field(x, "description").unwrap_or_default(), field(x, "default"))))
                            .collect()
                    })
                    .unwrap_or_default();
                Some(Available { name: e.file_name().to_string_lossy().into_owned(), description: field(&v, "description"), variables })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

/// Now in ISO 8601 (UTC, milliseconds), as `__now__` shows it.
fn now_iso() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

impl Machine for NormalMachine {
    fn agent(&self) -> &str {
        &self.agent.name
    }
    fn file(&self) -> Option<String> {
        Some(self.agent.file.display().to_string())
    }
    fn due(&self) -> Vec<String> {
        if self.done { Vec::new() } else { vec![self.agent.name.clone()] }
    }
    fn node_kind(&self, _node: &str) -> String {
        "llm".into()
    }
    fn step(&mut self, cx: &Cx<'_>) -> StepOutcome {
        self.turn(cx)
    }
    fn answer(&mut self, pending: &Pending, _answer: Value) -> Result<(), String> {
        Err(format!("agent '{}' asks no questions (node '{}')", self.agent.name, pending.node))
    }
    fn state(&self) -> Value {
        self.state_of()
    }
    fn edit_state(&mut self, key: &str, value: Value) -> Result<(), String> {
        match (key, value) {
            ("messages", Value::Array(m)) => {
                self.messages = m;
                Ok(())
            }
            ("messages", _) => Err("`messages` must be a list of chat messages".into()),
            (other, _) => Err(format!("a normal agent's state has no editable key '{other}' (only `messages`)")),
        }
    }
    fn condition(&self, _node: &str, condition: &str) -> Result<bool, String> {
        let st: super::LokiState =
            [("turns".to_string(), Arc::new(json!(self.turns))), ("initial_prompt".to_string(), Arc::new(json!(self.prompt)))]
                .into_iter()
                .collect();
        Ok(super::truthy(&super::Scope::new(&st).lenient(condition)))
    }
    fn check_condition(&self, condition: &str) -> Result<(), String> {
        let errors: Vec<String> = expr::template::lint(condition)
            .into_iter()
            .filter(|i| i.severity == expr::template::Severity::Error)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(text: &str) -> NormalAgent {
        NormalAgent::parse(Path::new("/tmp/agents/writer"), text).unwrap()
    }

    #[test]
    fn reads_the_fields_that_matter() {
        let a = agent(
            "name: Writer\nmodel: openai:gpt-4o\ntemperature: 0.2\ntop_p: 0.9\nglobal_tools: [fs_read.sh]\n\
             mcp_servers: [docs]\nvariables:\n  - name: project_dir\n    description: d\n    default: '.'\n  - name: who\n    description: w\n\
             instructions: |\n  Hi {{who}} in {{project_dir}}.\nconversation_starters: [x]\n",
        );
        assert_eq!(a.name, "writer", "the folder names the agent");
        assert_eq!(a.model.as_deref(), Some("openai:gpt-4o"));
        assert_eq!((a.temperature, a.top_p), (Some(0.2), Some(0.9)));
        assert_eq!(a.global_tools, ["fs_read.sh"]);
        assert_eq!(a.mcp_servers, ["docs"]);
        assert_eq!(a.variables, [("project_dir".to_string(), Some(".".to_string())), ("who".to_string(), None)]);
        assert!(NormalAgent::parse(Path::new("/tmp/agents/x"), "- a\n").unwrap_err().contains("must be a mapping"));
        assert!(NormalAgent::parse(Path::new("/tmp/agents/x"), "global_tools: 3\n").unwrap_err().contains("must be a list"));
    }

    #[test]
    fn system_prompt_replaces_known_variables_only() {
        let dir = Path::new("/tmp/agents/writer");
        assert!(NormalMachine::new(dir, "p").unwrap_err().contains("config.yaml"), "no config.yaml there");
        let a = agent(
            "variables:\n  - name: project_dir\n    description: d\n    default: src\n  - name: who\n    description: w\n\
             instructions: \"In {{project_dir}} for {{who}} on {{__os__}} with\\n{{__tools__}}\\n{{other}}\"\n",
        );
        let doc = a.as_doc(dir);
        let m = NormalMachine {
            agent: Arc::new(a),
            doc: Arc::new(doc),
            prompt: "p".into(),
            messages: Vec::new(),
            texts: Vec::new(),
            turns: 0,
            tools: None,
            output: Value::Null,
            done: false,
            outer_deadline: None,
            py: Arc::new(Mutex::new(None)),
            mcp: Arc::new(McpPool::default()),
            rag: Arc::new(RagStore::new(None)),
            child_env: Default::default(),
            vars: Arc::new(Vec::new()),
            mail: Mailbox::alone("writer".into()),
            sup: None,
        };
        let tools = vec![json!({"name": "get_diff", "description": "Get the diff.\nMore."}), json!({"name": "bare"})];
        let got = m.system_prompt(&tools);
        assert_eq!(
            got,
            format!("In src for {{{{who}}}} on {} with\n- get_diff: Get the diff.\n- bare\n{{{{other}}}}", std::env::consts::OS)
        );
    }

    #[test]
    fn now_is_iso_8601() {
        let n = now_iso();
        assert_eq!(n.len(), 24, "{n}");
        assert!(n.starts_with("20") && n.ends_with('Z') && &n[10..11] == "T", "{n}");
    }
}
