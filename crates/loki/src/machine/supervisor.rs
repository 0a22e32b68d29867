//! coyote 0.10.3's built-in agent functions, as normal agents (`config.yaml`) and graph llm
//! nodes (those their `tools:` list names) run them here:
//! teammate messaging (`agent__send_message`, `agent__check_inbox`), the supervisor family
//! (`agent__spawn`, `agent__check`, `agent__collect`, `agent__list_running`,
//! `agent__list_available`, `agent__cancel`) and background jobs (`job__start`, `job__check`,
//! `job__collect`, `job__cancel`, `job__list`).
//!
//! Which families an agent gets (as coyote decides it): the teammate pair always; the
//! supervisor family with `can_spawn_agents: true` (a graph's default: whether it has an agent
//! node); the job family while the effective `max_concurrent_jobs` (the agent's, else
//! [`DEFAULT_MAX_CONCURRENT_JOBS`]) is above 0 (`model::doc::loki::AgentFunctions` names them).
//! The task-queue functions (`agent__task_*`) and escalation replies are not offered.
//!
//! Identities are deterministic (coyote draws a random uuid suffix):
//!
//! - an agent run by an agent node is `graph_agent_<agent>_<node>`; as a teammate of a map
//!   item, `graph_agent_<agent>_<map>_<item>` ([`peer_id`]);
//! - a spawned child is `agent_<agent>_<n>`, a job `job_<n>`, numbered from 1 per spawner.
//!
//! Scheduling keeps every step of a run atomic (a durable snapshot never holds a half-run
//! child): a spawn or a job start only queues the work ([`Supervisor`]); the queue runs, its
//! children concurrently up to `max_concurrent_agents` and its jobs up to
//! `max_concurrent_jobs`, when a call needs a queued one (`agent__check` / `agent__collect`,
//! `job__check` / `job__collect`) and at the end of the turn's tool calls ([`Calls::settle`]).
//! So a child always finishes within the turn that spawned it (a graph llm node's turn, so
//! within its step; the node's [`Supervisor`] lives as long as the node runs). Cancelling a queued child or
//! job drops it unrun. The capacity rules are coyote's: a spawn is refused while as many
//! children as `max_concurrent_agents` are uncollected, a job start while as many jobs as
//! `max_concurrent_jobs` are unfinished, a spawn whose child would be deeper than
//! `max_agent_depth` (never deeper than [`super::MAX_AGENT_DEPTH`]).

use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex, MutexGuard};

/// The prefix of the supervisor and teammate functions.
pub const AGENT_PREFIX: &str = "agent__";
/// The prefix of the job functions.
pub const JOB_PREFIX: &str = "job__";
/// The id a spawned child uses to message its spawner.
pub const PARENT: &str = "parent";
/// coyote's default `max_concurrent_jobs`.
pub const DEFAULT_MAX_CONCURRENT_JOBS: u64 = model::doc::loki::DEFAULT_MAX_CONCURRENT_JOBS;

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Mailboxes and teammates
// ---------------------------------------------------------------------------------------------

/// One message: who sent it and its text.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    pub from: String,
    pub content: String,
}

/// The messages waiting for one agent, in arrival order.
#[derive(Debug, Default)]
pub struct Inbox(Mutex<Vec<Envelope>>);

impl Inbox {
    pub fn deliver(&self, from: &str, content: &str) {
        lock(&self.0).push(Envelope { from: from.to_string(), content: content.to_string() });
    }
    /// Every waiting message, removed.
    pub fn drain(&self) -> Vec<Envelope> {
        std::mem::take(&mut *lock(&self.0))
    }
}

struct Peer {
    id: String,
    label: String,
    inbox: Arc<Inbox>,
    finished: bool,
}

/// The teammates of one fan-out (a static super-step or a map's items): ids, labels, inboxes
/// and whether each has finished. It only routes messages and answers roster questions.
#[derive(Default)]
pub struct Peers(Mutex<Vec<Peer>>);

impl Peers {
    fn inbox(&self, id: &str) -> Option<(Arc<Inbox>, bool)> {
        lock(&self.0).iter().find(|p| p.id == id).map(|p| (p.inbox.clone(), p.finished))
    }
    /// The teammate `id` is done: messages to it are refused from now on.
    pub fn finish(&self, id: &str) {
        if let Some(p) = lock(&self.0).iter_mut().find(|p| p.id == id) {
            p.finished = true;
        }
    }
    /// (id, label, finished) of every teammate, in provisioning order.
    pub fn roster(&self) -> Vec<(String, String, bool)> {
        lock(&self.0).iter().map(|p| (p.id.clone(), p.label.clone(), p.finished)).collect()
    }
}

/// One teammate identity of a fan-out.
#[derive(Clone)]
pub struct Teammate {
    pub id: String,
    pub inbox: Arc<Inbox>,
    pub peers: Arc<Peers>,
}

/// The peer id of agent `agent` in the fan-out slot `slot` (its node id, or `<map>_<item>`).
pub fn peer_id(agent: &str, slot: &str) -> String {
    format!("graph_agent_{agent}_{slot}")
}

/// Identities for the members of one fan-out, given as (label, agent, slot), sharing one
/// registry; none when there are fewer than two (a lone member has no one to message).
pub fn provision(members: &[(String, String, String)]) -> Vec<Teammate> {
    if members.len() < 2 {
        return Vec::new();
    }
    let peers = Arc::new(Peers::default());
    let mut out = Vec::with_capacity(members.len());
    for (label, agent, slot) in members {
        let t = Teammate { id: peer_id(agent, slot), inbox: Arc::new(Inbox::default()), peers: peers.clone() };
        lock(&peers.0).push(Peer { id: t.id.clone(), label: label.clone(), inbox: t.inbox.clone(), finished: false });
        out.push(t);
    }
    out
}

/// What a teammate is told about its peers, appended to its prompt.
pub fn roster_text(me: &Teammate) -> String {
    let mut own = String::new();
    let mut others = Vec::new();
    for (id, label, _) in me.peers.roster() {
        if id == me.id {
            own = format!(" ({label})");
        } else {
            others.push(format!("- `{id}` — {label}"));
        }
    }
    format!(
        "## Teammates\nYour id is `{}`{own}. These agents run beside you:\n{}\n\nWhen you learn something that matters to a teammate's part, tell it with `agent__send_message`; read `agent__check_inbox` after each phase of your work and before you answer.",
        me.id,
        others.join("\n")
    )
}

/// Where one agent run's messages come from and go to.
#[derive(Clone)]
pub struct Mailbox {
    /// The run's own id (what others address it by).
    pub id: String,
    pub inbox: Arc<Inbox>,
    /// Its teammates, when it runs in a fan-out of `teammates: true` agents.
    pub peers: Option<Arc<Peers>>,
    /// Its spawner's inbox (`parent`), for a spawned child.
    pub parent: Option<Arc<Inbox>>,
    /// Its spawner's supervisor (its siblings), for a spawned child.
    pub siblings: Option<Arc<Mutex<Supervisor>>>,
}

impl Mailbox {
    /// A run that is nobody's teammate or child.
    pub fn alone(id: String) -> Mailbox {
        Mailbox { id, inbox: Arc::new(Inbox::default()), peers: None, parent: None, siblings: None }
    }
    pub fn of_teammate(t: &Teammate) -> Mailbox {
        Mailbox { id: t.id.clone(), inbox: t.inbox.clone(), peers: Some(t.peers.clone()), parent: None, siblings: None }
    }
}

// ---------------------------------------------------------------------------------------------
// The supervisor: spawned children and jobs
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Work<T> {
    Queued,
    Running,
    Done(Result<T, String>),
}

/// A spawned child.
#[derive(Clone)]
pub struct Child {
    pub id: String,
    pub agent: String,
    pub prompt: String,
    /// `variables` given to `agent__spawn` (strings).
    pub variables: Map<String, Value>,
    pub inbox: Arc<Inbox>,
    state: Work<String>,
}

#[derive(Clone)]
struct Job {
    id: String,
    tool: String,
    args: Value,
    state: Work<Value>,
}

/// What an agent may spawn and start.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// `can_spawn_agents`: the supervisor family is offered.
    pub spawn: bool,
    pub max_agents: usize,
    /// The deepest a child may run (already capped by [`super::MAX_AGENT_DEPTH`]).
    pub max_depth: u64,
    /// `0`: no job family.
    pub max_jobs: usize,
    /// `spawnable_agents`: the agents it may spawn (`None`: any).
    pub spawnable: Option<Vec<String>>,
}

/// The children and jobs of one agent run (see the module docs).
#[derive(Clone)]
pub struct Supervisor {
    pub limits: Limits,
    children: Vec<Child>,
    jobs: Vec<Job>,
    spawned: usize,
    started: usize,
}

impl Supervisor {
    pub fn new(limits: Limits) -> Supervisor {
        Supervisor { limits, children: Vec::new(), jobs: Vec::new(), spawned: 0, started: 0 }
    }
    fn child(&self, id: &str) -> Option<&Child> {
        self.children.iter().find(|c| c.id == id)
    }
    fn job(&self, id: &str) -> Option<&Job> {
        self.jobs.iter().find(|j| j.id == id)
    }
    fn active_jobs(&self) -> usize {
        self.jobs.iter().filter(|j| !matches!(j.state, Work::Done(_))).count()
    }
    /// The inbox of child `id`, while it is uncollected.
    pub fn inbox(&self, id: &str) -> Option<Arc<Inbox>> {
        self.child(id).map(|c| c.inbox.clone())
    }
    /// The ids of the children and jobs not collected or cancelled yet, children first.
    pub fn uncollected(&self) -> Vec<String> {
        self.children.iter().map(|c| c.id.clone()).chain(self.jobs.iter().map(|j| j.id.clone())).collect()
    }
}

/// An agent found to spawn: its name, description and declared variables (name,
/// description, default).
#[derive(Clone, Debug, PartialEq)]
pub struct Available {
    pub name: String,
    pub description: Option<String>,
    pub variables: Vec<(String, String, Option<String>)>,
}

/// What the functions need from the run that calls them.
pub trait Host: Sync {
    /// Run spawned child `child` to its end (a nested run); its output text.
    fn run_child(&self, child: &Child) -> Result<String, String>;
    /// Run the tool of a job; its result.
    fn run_job(&self, tool: &str, args: &Value) -> Result<Value, String>;
    /// The agents that can be spawned, in name order.
    fn available(&self) -> Vec<Available>;
}

/// The teammate functions as offered to the model.
pub fn teammate_tools() -> Vec<Value> {
    vec![
        tool(
            "agent__send_message",
            "Put a text message in another agent's inbox: a teammate running beside you, a child you spawned, a sibling, or `parent` (the agent that spawned you).",
            &[("id", "string", "The id of the agent to message, or `parent`"), ("message", "string", "The text to send")],
            &["id", "message"],
        ),
        tool("agent__check_inbox", "Read and empty your inbox: messages from teammates, your children or your parent.", &[], &[]),
    ]
}

/// The supervisor functions as offered to the model.
pub fn supervisor_tools() -> Vec<Value> {
    let id = [("id", "string", "The id `agent__spawn` returned")];
    vec![
        tool(
            "agent__spawn",
            "Start a sub-agent on a task and get its id back at once. Collect (`agent__collect`) or cancel (`agent__cancel`) every agent you spawn before you give your answer.",
            &[
                ("agent", "string", "The agent to run (see `agent__list_available`)"),
                ("prompt", "string", "The task for it"),
                ("variables", "object", "Values (strings) for the variables the agent declares"),
            ],
            &["agent", "prompt"],
        ),
        tool("agent__check", "Whether a spawned agent is still running or has finished (it never returns the result: use `agent__collect`).", &id, &["id"]),
        tool("agent__collect", "Wait for a spawned agent to finish and return its output.", &id, &["id"]),
        tool("agent__list_running", "The agents you spawned that are not collected yet, and your teammates.", &[], &[]),
        tool("agent__list_available", "The agents you can spawn, with their descriptions and variables.", &[], &[]),
        tool("agent__cancel", "Stop a spawned agent whose result you no longer need.", &id, &["id"]),
    ]
}

/// The job functions as offered to the model.
pub fn job_tools() -> Vec<Value> {
    let id = [("id", "string", "The id `job__start` returned")];
    vec![
        tool(
            "job__start",
            "Run one of your tools as a background job and get a job id back at once. Only external command tools can run as jobs. Collect or cancel every job before you answer.",
            &[("tool", "string", "The tool's name, as offered to you"), ("arguments", "object", "The arguments the tool takes")],
            &["tool"],
        ),
        tool("job__check", "A background job's status (it never returns the result: use `job__collect`).", &id, &["id"]),
        tool(
            "job__collect",
            "Wait for a background job to finish and return its result.",
            &[
                ("id", "string", "The id `job__start` returned"),
                ("tail_lines", "number", "Keep only the last N lines of the result"),
                ("full_result", "boolean", "Do not shorten the result"),
            ],
            &["id"],
        ),
        tool("job__cancel", "Stop a background job and forget it.", &id, &["id"]),
        tool("job__list", "Your background jobs that are not collected yet.", &[], &[]),
    ]
}

/// The built-in function `name` as offered to the model, whichever family it is of.
pub fn function(name: &str) -> Option<Value> {
    [supervisor_tools(), job_tools(), teammate_tools()].into_iter().flatten().find(|t| t["name"] == name)
}

fn tool(name: &str, description: &str, params: &[(&str, &str, &str)], required: &[&str]) -> Value {
    let props: Map<String, Value> =
        params.iter().map(|(n, t, d)| (n.to_string(), json!({"type": t, "description": d}))).collect();
    json!({"name": name, "description": description, "parameters": {"type": "object", "properties": props, "required": required}})
}

/// Tools that cannot run as jobs, with why (coyote's whitelist).
fn not_backgroundable(tool: &str) -> Option<String> {
    let why = if tool.starts_with(AGENT_PREFIX) || tool.starts_with(JOB_PREFIX) {
        format!("'{tool}' is asynchronous already: call it directly. Agents may start jobs; jobs never start agents or jobs.")
    } else if tool.starts_with("user__") {
        format!("'{tool}' asks the user and must run in the turn. Call it directly.")
    } else if ["todo__", "memory__", "skill__", "rag__"].iter().any(|p| tool.starts_with(p)) {
        format!("'{tool}' changes the agent's own state and must run in the turn. Call it directly.")
    } else if tool.starts_with("fs_") || tool == "ast_grep" {
        format!("'{tool}' is quick: call it directly instead of in the background.")
    } else {
        return None;
    };
    Some(format!("{why} Tools that can run as jobs: external command tools (such as execute_command)."))
}

fn error(message: String) -> Result<Value, String> {
    Ok(json!({"status": "error", "message": message}))
}

fn required<'v>(args: &'v Value, key: &str) -> Result<&'v str, String> {
    args.get(key).and_then(Value::as_str).ok_or_else(|| format!("'{key}' is required"))
}

/// The functions of one turn of one agent run.
pub struct Calls<'a> {
    /// `None` when the agent has neither the supervisor nor the job family.
    pub sup: Option<&'a Arc<Mutex<Supervisor>>>,
    pub mail: &'a Mailbox,
    /// The depth a spawned child would run at.
    pub child_depth: u64,
    /// The names of the tools offered this turn.
    pub offered: &'a [String],
    pub host: &'a dyn Host,
}

impl Calls<'_> {
    /// Whether `name` is one of these built-in functions.
    pub fn handles(name: &str) -> bool {
        name.starts_with(AGENT_PREFIX) || name.starts_with(JOB_PREFIX)
    }

    /// Run the built-in function `name` (an error: a malformed call).
    pub fn call(&self, name: &str, args: &Value) -> Result<Value, String> {
        match name {
            "agent__send_message" => self.send(args),
            "agent__check_inbox" => {
                let messages: Vec<Value> = self
                    .mail
                    .inbox
                    .drain()
                    .into_iter()
                    .map(|e| json!({"from": e.from, "payload": {"type": "text", "content": e.content}}))
                    .collect();
                Ok(json!({"count": messages.len(), "messages": messages}))
            }
            "agent__spawn" => self.spawn(args),
            "agent__check" => self.check(args),
            "agent__collect" => self.collect(args),
            "agent__list_running" => self.list_running(),
            "agent__list_available" => self.list_available(),
            "agent__cancel" => self.cancel(args),
            "job__start" => self.job_start(args),
            "job__check" | "job__collect" | "job__cancel" => self.job_call(name, args),
            "job__list" => self.job_list(),
            other => Err(format!("Unknown agent action: {}", other.trim_start_matches(AGENT_PREFIX))),
        }
    }

    fn supervisor(&self) -> Result<&Arc<Mutex<Supervisor>>, String> {
        self.sup.ok_or_else(|| "No supervisor active; Agent spawning not enabled".to_string())
    }

    fn send(&self, args: &Value) -> Result<Value, String> {
        let id = required(args, "id")?;
        let message = required(args, "message")?;
        let me = self.mail.id.as_str();
        if id == PARENT {
            return match &self.mail.parent {
                Some(inbox) => {
                    inbox.deliver(me, message);
                    Ok(json!({"status": "ok", "message": "Message delivered to your parent agent's inbox; it reads it at its next agent__check_inbox."}))
                }
                None => error("You have no parent agent: `parent` only reaches the spawner of a spawned agent.".into()),
            };
        }
        if let Some(inbox) = self.sup.and_then(|s| lock(s).inbox(id)) {
            inbox.deliver(PARENT, message);
            return Ok(json!({"status": "ok", "message": format!("Message delivered to agent '{id}'")}));
        }
        if let Some(inbox) = self.mail.siblings.as_ref().and_then(|s| lock(s).inbox(id)) {
            inbox.deliver(me, message);
            return Ok(json!({"status": "ok", "message": format!("Message delivered to agent '{id}'")}));
        }
        if let Some((inbox, finished)) = self.mail.peers.as_ref().and_then(|p| p.inbox(id)) {
            if finished {
                return error(format!(
                    "Teammate '{id}' has already finished; the message was not delivered. Its results reach the graph through its collected output."
                ));
            }
            inbox.deliver(me, message);
            return Ok(json!({"status": "ok", "message": format!("Message delivered to teammate '{id}'")}));
        }
        if self.is_job(id) {
            return self.not_an_agent(id);
        }
        error(format!("No agent found with id '{id}'. Agent may not exist or may have already completed."))
    }

    fn is_job(&self, id: &str) -> bool {
        id.starts_with("job_") || self.sup.is_some_and(|s| lock(s).job(id).is_some())
    }

    fn not_an_agent(&self, id: &str) -> Result<Value, String> {
        error(format!("'{id}' is a background job, not an agent: use job__check / job__collect / job__cancel"))
    }

    fn spawn(&self, args: &Value) -> Result<Value, String> {
        let agent = required(args, "agent")?.to_string();
        let prompt = required(args, "prompt")?.to_string();
        let variables = match args.get("variables") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => {
                if let Some((k, _)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return error(format!("'variables.{k}' must be a string value"));
                }
                m.clone()
            }
            Some(_) => {
                return error(
                    "'variables' must be a JSON object mapping variable names to string values, e.g. {\"pr\": \"1234\"}".into(),
                );
            }
        };
        let sup = self.supervisor()?;
        let limits = lock(sup).limits.clone();
        if !limits.spawn {
            return Err("No supervisor active; Agent spawning not enabled".into());
        }
        if let Some(list) = limits.spawnable.as_ref().filter(|l| !l.contains(&agent)) {
            return error(format!(
                "Agent '{agent}' is not in this agent's `spawnable_agents` whitelist. Allowed: {list:?}. Call `agent__list_available` to see what you can spawn."
            ));
        }
        {
            let s = lock(sup);
            if s.children.len() >= limits.max_agents {
                return error(format!(
                    "At capacity: {}/{} agents running. Wait for one to finish or cancel one.",
                    s.children.len(),
                    limits.max_agents
                ));
            }
        }
        if self.child_depth > limits.max_depth {
            return error(format!("Max agent depth exceeded ({}/{})", self.child_depth, limits.max_depth));
        }
        let Some(found) = self.host.available().into_iter().find(|a| a.name == agent) else {
            return Err(format!("Agent '{agent}' not found: no folder of that name with a graph.yaml or config.yaml"));
        };
        let unknown: Vec<&String> = variables.keys().filter(|k| !found.variables.iter().any(|v| &v.0 == *k)).collect();
        if !unknown.is_empty() {
            if found.variables.is_empty() {
                return error(format!("Agent '{agent}' declares no variables; remove the 'variables' argument."));
            }
            let declared: Vec<String> = found.variables.iter().map(|(n, d, _)| format!("{n} ({d})")).collect();
            return error(format!(
                "Unknown variable(s) {unknown:?} for agent '{agent}'. Declared variables: {}",
                declared.join(", ")
            ));
        }
        let mut s = lock(sup);
        s.spawned += 1;
        let id = format!("agent_{agent}_{}", s.spawned);
        s.children.push(Child {
            id: id.clone(),
            agent: agent.clone(),
            prompt,
            variables,
            inbox: Arc::new(Inbox::default()),
            state: Work::Queued,
        });
        Ok(json!({
            "status": "ok",
            "id": id,
            "agent": agent,
            "message": format!("Agent '{agent}' spawned as '{id}'. Collect it with `agent__collect` (or cancel it with `agent__cancel`) before you give your answer."),
        }))
    }

    fn check(&self, args: &Value) -> Result<Value, String> {
        let id = required(args, "id")?;
        let sup = self.supervisor()?;
        if lock(sup).child(id).is_none() {
            return if self.is_job(id) { self.not_an_agent(id) } else { error(format!("No agent found with id '{id}'")) };
        }
        self.settle();
        Ok(json!({
            "status": "finished",
            "id": id,
            "message": format!("Agent '{id}' has finished; its result is ready and has NOT been consumed. Call `agent__collect --id {id}` to retrieve it."),
        }))
    }

    fn collect(&self, args: &Value) -> Result<Value, String> {
        let id = required(args, "id")?;
        let sup = self.supervisor()?;
        if lock(sup).child(id).is_none() {
            if self.is_job(id) {
                return self.not_an_agent(id);
            }
            return error(format!("Agent '{id}' not found. Use agent__check to verify it exists and is finished."));
        }
        self.settle();
        let mut s = lock(sup);
        let Some(at) = s.children.iter().position(|c| c.id == id) else {
            return error(format!("Agent '{id}' completed but could not be collected. It may have been collected by another call."));
        };
        let child = s.children.remove(at);
        let (exit, output) = match child.state {
            Work::Done(Ok(out)) => ("Completed".to_string(), out),
            Work::Done(Err(e)) => (format!("Failed({e:?})"), String::new()),
            _ => ("Failed(\"not run\")".to_string(), String::new()),
        };
        Ok(json!({"status": "completed", "id": id, "agent": child.agent, "exit_status": exit, "output": output}))
    }

    fn list_running(&self) -> Result<Value, String> {
        let peers: Option<Vec<Value>> = self.mail.peers.as_ref().map(|p| {
            p.roster()
                .into_iter()
                .filter(|(id, _, _)| *id != self.mail.id)
                .map(|(id, label, finished)| {
                    json!({"id": id, "label": label, "kind": "peer", "status": if finished { "finished" } else { "running" }})
                })
                .collect()
        });
        let mut out = match self.sup {
            Some(sup) => {
                let s = lock(sup);
                let agents: Vec<Value> = s
                    .children
                    .iter()
                    .map(|c| {
                        let status = if matches!(c.state, Work::Done(_)) { "finished" } else { "running" };
                        json!({"id": c.id, "agent": c.agent, "status": status})
                    })
                    .collect();
                json!({"active_count": s.children.len(), "max_concurrent": s.limits.max_agents, "agents": agents})
            }
            None if peers.is_none() => return Err("No supervisor active".into()),
            None => json!({}),
        };
        if let Some(peers) = peers {
            out["peers"] = Value::Array(peers);
            out["peers_note"] =
                json!("Peers are teammates running beside you: message them with agent__send_message; they cannot be checked, collected or cancelled.");
        }
        Ok(out)
    }

    fn list_available(&self) -> Result<Value, String> {
        let spawnable = self.sup.and_then(|s| lock(s).limits.spawnable.clone());
        let agents: Vec<Value> = self
            .host
            .available()
            .into_iter()
            .filter(|a| spawnable.as_ref().is_none_or(|l| l.contains(&a.name)))
            .map(|a| {
                let mut v = json!({"name": a.name});
                if let Some(d) = a.description.filter(|d| !d.is_empty()) {
                    v["description"] = json!(d);
                }
                if !a.variables.is_empty() {
                    let vars: Vec<Value> = a
                        .variables
                        .iter()
                        .map(|(n, d, def)| {
                            let mut x = json!({"name": n, "description": d, "required": def.is_none()});
                            if let Some(def) = def {
                                x["default"] = json!(def);
                            }
                            x
                        })
                        .collect();
                    v["variables"] = Value::Array(vars);
                }
                v
            })
            .collect();
        Ok(json!({"count": agents.len(), "agents": agents}))
    }

    fn cancel(&self, args: &Value) -> Result<Value, String> {
        let id = required(args, "id")?;
        let sup = self.supervisor()?;
        let mut s = lock(sup);
        match s.children.iter().position(|c| c.id == id) {
            Some(at) => {
                let child = s.children.remove(at);
                Ok(json!({"status": "ok", "message": format!("Cancelled agent '{}' and waited for cleanup.", child.agent)}))
            }
            None => {
                drop(s);
                if self.is_job(id) { self.not_an_agent(id) } else { error(format!("No agent found with id '{id}'")) }
            }
        }
    }

    fn job_miss(&self, id: &str) -> Result<Value, String> {
        if self.sup.is_some_and(|s| lock(s).child(id).is_some()) {
            return error(format!("'{id}' is a spawned agent, not a background job: use agent__check / agent__collect / agent__cancel"));
        }
        error(format!("No job '{id}' is registered: it may have been collected or cancelled already. job__list shows the jobs."))
    }

    fn job_start(&self, args: &Value) -> Result<Value, String> {
        let Some(sup) = self.sup.filter(|s| lock(s).limits.max_jobs > 0) else {
            return error("Background jobs are disabled in this context (max_concurrent_jobs is 0).".into());
        };
        let tool = args
            .get("tool")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| "'tool' is required".to_string())?
            .to_string();
        if let Some(why) = not_backgroundable(&tool) {
            return error(why);
        }
        if !self.offered.contains(&tool) {
            return error(format!(
                "'{tool}' is not enabled in this context: job__start can only run tools offered to you in this request. Use the exact name of one of your tools."
            ));
        }
        let mut s = lock(sup);
        let (active, max) = (s.active_jobs(), s.limits.max_jobs);
        if active >= max {
            return error(format!("At capacity: {active}/{max} jobs running. Collect or cancel one first."));
        }
        s.started += 1;
        let id = format!("job_{}", s.started);
        let arguments = args.get("arguments").cloned().unwrap_or_else(|| json!({}));
        s.jobs.push(Job { id: id.clone(), tool: tool.clone(), args: arguments, state: Work::Queued });
        Ok(json!({
            "status": "ok",
            "job_id": id,
            "tool": tool,
            "message": "Running in the background. Check it with job__check, wait for it with job__collect, stop it with job__cancel.",
        }))
    }

    fn job_call(&self, name: &str, args: &Value) -> Result<Value, String> {
        let id = required(args, "id")?;
        let Some(sup) = self.sup else { return self.job_miss(id) };
        if lock(sup).job(id).is_none() {
            return self.job_miss(id);
        }
        if name == "job__cancel" {
            let mut s = lock(sup);
            let at = s.jobs.iter().position(|j| j.id == id).expect("checked");
            let job = s.jobs.remove(at);
            return Ok(json!({"status": "cancelled", "id": id, "tool": job.tool, "output_tail": "", "output_bytes_captured": 0}));
        }
        self.settle();
        let mut s = lock(sup);
        let at = s.jobs.iter().position(|j| j.id == id).expect("settling keeps jobs");
        let job = if name == "job__collect" { s.jobs.remove(at) } else { s.jobs[at].clone() };
        let (status, result, err) = match &job.state {
            Work::Done(Ok(v)) => ("completed", v.clone(), None),
            Work::Done(Err(e)) => ("failed", Value::Null, Some(e.clone())),
            _ => ("failed", Value::Null, Some("the job did not run".to_string())),
        };
        if name == "job__check" {
            return Ok(json!({
                "status": status,
                "id": id,
                "tool": job.tool,
                "message": format!("Job finished — retrieve the result with job__collect --id {id}"),
            }));
        }
        match err {
            Some(e) => Ok(json!({"status": "failed", "id": id, "tool": job.tool, "error": e})),
            None => {
                let tail = args.get("tail_lines").and_then(Value::as_u64).map(|n| n as usize);
                let (result, cut) = shorten(result, tail);
                let mut out = json!({"status": status, "id": id, "tool": job.tool, "result": result});
                if cut {
                    out["result_truncated"] = json!(true);
                }
                Ok(out)
            }
        }
    }

    fn job_list(&self) -> Result<Value, String> {
        let Some(sup) = self.sup else {
            return Ok(json!({"active_jobs": 0, "max_concurrent_jobs": 0, "jobs": []}));
        };
        let s = lock(sup);
        let jobs: Vec<Value> = s
            .jobs
            .iter()
            .map(|j| {
                let status = match &j.state {
                    Work::Done(Ok(_)) => "completed",
                    Work::Done(Err(_)) => "failed",
                    _ => "running",
                };
                json!({"id": j.id, "tool": j.tool, "status": status})
            })
            .collect();
        Ok(json!({"active_jobs": s.active_jobs(), "max_concurrent_jobs": s.limits.max_jobs, "jobs": jobs}))
    }

    /// Run every queued child and job to its end: children concurrently up to
    /// `max_concurrent_agents`, jobs up to `max_concurrent_jobs` (see the module docs).
    pub fn settle(&self) {
        let Some(sup) = self.sup else { return };
        let (children, jobs, limits) = {
            let mut s = lock(sup);
            let mut children = Vec::new();
            for c in s.children.iter_mut().filter(|c| c.state == Work::Queued) {
                c.state = Work::Running;
                children.push(c.clone());
            }
            let mut jobs = Vec::new();
            for j in s.jobs.iter_mut().filter(|j| j.state == Work::Queued) {
                j.state = Work::Running;
                jobs.push(j.clone());
            }
            (children, jobs, s.limits.clone())
        };
        if !children.is_empty() {
            let done = super::par_map(&children, limits.max_agents.max(1), &|_, c: &Child| self.host.run_child(c));
            let mut s = lock(sup);
            for (c, r) in children.iter().zip(done) {
                if let Some(x) = s.children.iter_mut().find(|x| x.id == c.id) {
                    x.state = Work::Done(r);
                }
            }
        }
        if !jobs.is_empty() {
            let done = super::par_map(&jobs, limits.max_jobs.max(1), &|_, j: &Job| self.host.run_job(&j.tool, &j.args));
            let mut s = lock(sup);
            for (j, r) in jobs.iter().zip(done) {
                if let Some(x) = s.jobs.iter_mut().find(|x| x.id == j.id) {
                    x.state = Work::Done(r);
                }
            }
        }
    }
}

/// A job's result with only its last `tail` lines (coyote's `tail_lines`).
fn shorten(result: Value, tail: Option<usize>) -> (Value, bool) {
    if result.is_null() {
        return (json!("DONE"), false);
    }
    let Some(n) = tail else { return (result, false) };
    let text = match &result {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= n {
        return (result, false);
    }
    (json!(lines[lines.len() - n..].join("\n")), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Children echo their prompt after a short sleep, counting how many run at once.
    struct Fake {
        running: AtomicUsize,
        most: AtomicUsize,
        ran: Mutex<Vec<String>>,
    }

    impl Fake {
        fn new() -> Fake {
            Fake { running: AtomicUsize::new(0), most: AtomicUsize::new(0), ran: Mutex::new(Vec::new()) }
        }
    }

    impl Host for Fake {
        fn run_child(&self, child: &Child) -> Result<String, String> {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(30));
            self.running.fetch_sub(1, Ordering::SeqCst);
            lock(&self.ran).push(child.id.clone());
            if child.prompt == "fail" { Err("boom".into()) } else { Ok(format!("did {}", child.prompt)) }
        }
        fn run_job(&self, tool: &str, args: &Value) -> Result<Value, String> {
            lock(&self.ran).push(format!("{tool} {args}"));
            Ok(json!("line 1\nline 2\nline 3"))
        }
        fn available(&self) -> Vec<Available> {
            vec![
                Available { name: "helper".into(), description: Some("helps".into()), variables: vec![("topic".into(), "what".into(), None)] },
                Available { name: "plain".into(), description: None, variables: Vec::new() },
            ]
        }
    }

    fn limits(max_agents: usize, max_depth: u64, max_jobs: usize) -> Limits {
        Limits { spawn: true, max_agents, max_depth, max_jobs, spawnable: None }
    }

    fn calls<'a>(sup: &'a Arc<Mutex<Supervisor>>, mail: &'a Mailbox, depth: u64, offered: &'a [String], host: &'a Fake) -> Calls<'a> {
        Calls { sup: Some(sup), mail, child_depth: depth, offered, host }
    }

    #[test]
    fn families_match_the_model() {
        use model::doc::loki::AgentFunctions as F;
        let names = |tools: Vec<Value>| tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(names(teammate_tools()), F::Teammate.names());
        assert_eq!(names(supervisor_tools()), F::Supervisor.names());
        assert_eq!(names(job_tools()), F::Job.names());
        assert_eq!(function("job__list").unwrap()["name"], "job__list");
        assert!(function("agent__task_create").is_none());
        let mut sup = Supervisor::new(limits(2, 3, 2));
        sup.children.push(Child { id: "agent_a_1".into(), agent: "a".into(), prompt: String::new(), variables: Map::new(), inbox: Arc::default(), state: Work::Queued });
        sup.jobs.push(Job { id: "job_1".into(), tool: "t".into(), args: Value::Null, state: Work::Queued });
        assert_eq!(sup.uncollected(), ["agent_a_1", "job_1"]);
    }

    #[test]
    fn spawns_queue_until_needed_and_run_within_the_cap() {
        let host = Fake::new();
        let sup = Arc::new(Mutex::new(Supervisor::new(limits(2, 3, 0))));
        let mail = Mailbox::alone("me".into());
        let c = calls(&sup, &mail, 2, &[], &host);
        for p in ["a", "b"] {
            let r = c.call("agent__spawn", &json!({"agent": "plain", "prompt": p})).unwrap();
            assert_eq!(r["status"], "ok", "{r}");
        }
        assert_eq!(c.call("agent__spawn", &json!({"agent": "plain", "prompt": "c"})).unwrap()["message"], "At capacity: 2/2 agents running. Wait for one to finish or cancel one.");
        assert!(lock(&host.ran).is_empty(), "a spawn only queues");
        let checked = c.call("agent__check", &json!({"id": "agent_plain_1"})).unwrap();
        assert_eq!(checked["status"], "finished");
        assert_eq!(lock(&host.ran).len(), 2, "a check runs the whole queue");
        assert_eq!(host.most.load(Ordering::SeqCst), 2, "concurrently");
        let got = c.call("agent__collect", &json!({"id": "agent_plain_2"})).unwrap();
        assert_eq!((got["exit_status"].as_str(), got["output"].as_str()), (Some("Completed"), Some("did b")));
        assert_eq!(c.call("agent__collect", &json!({"id": "agent_plain_2"})).unwrap()["status"], "error", "collected once");
        // A freed slot takes a new spawn; its numbering goes on.
        assert_eq!(c.call("agent__spawn", &json!({"agent": "plain", "prompt": "fail"})).unwrap()["id"], "agent_plain_3");
        c.settle();
        let failed = c.call("agent__collect", &json!({"id": "agent_plain_3"})).unwrap();
        assert_eq!(failed["exit_status"], "Failed(\"boom\")");
        // A cancelled queued child never runs.
        c.call("agent__spawn", &json!({"agent": "plain", "prompt": "never"})).unwrap();
        assert_eq!(c.call("agent__cancel", &json!({"id": "agent_plain_4"})).unwrap()["status"], "ok");
        c.settle();
        assert!(!lock(&host.ran).contains(&"agent_plain_4".to_string()));
    }

    #[test]
    fn cap_of_one_runs_children_one_at_a_time() {
        let host = Fake::new();
        let sup = Arc::new(Mutex::new(Supervisor::new(limits(1, 3, 0))));
        let mail = Mailbox::alone("me".into());
        let c = calls(&sup, &mail, 1, &[], &host);
        c.call("agent__spawn", &json!({"agent": "plain", "prompt": "a"})).unwrap();
        assert_eq!(c.call("agent__spawn", &json!({"agent": "plain", "prompt": "b"})).unwrap()["status"], "error");
        c.call("agent__collect", &json!({"id": "agent_plain_1"})).unwrap();
        c.call("agent__spawn", &json!({"agent": "plain", "prompt": "b"})).unwrap();
        c.settle();
        assert_eq!(host.most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn spawn_refusals() {
        let host = Fake::new();
        let sup = Arc::new(Mutex::new(Supervisor::new(limits(4, 2, 0))));
        let mail = Mailbox::alone("me".into());
        let deep = calls(&sup, &mail, 3, &[], &host);
        assert_eq!(deep.call("agent__spawn", &json!({"agent": "plain", "prompt": "x"})).unwrap()["message"], "Max agent depth exceeded (3/2)");
        let c = calls(&sup, &mail, 2, &[], &host);
        assert!(c.call("agent__spawn", &json!({"agent": "nobody", "prompt": "x"})).unwrap_err().contains("not found"));
        let bad = c.call("agent__spawn", &json!({"agent": "helper", "prompt": "x", "variables": {"nope": "1"}})).unwrap();
        assert!(bad["message"].as_str().unwrap().starts_with("Unknown variable(s) [\"nope\"] for agent 'helper'. Declared variables: topic (what)"));
        let none = c.call("agent__spawn", &json!({"agent": "plain", "prompt": "x", "variables": {"a": "1"}})).unwrap();
        assert_eq!(none["message"], "Agent 'plain' declares no variables; remove the 'variables' argument.");
        assert_eq!(c.call("agent__spawn", &json!({"agent": "plain", "prompt": "x", "variables": {"a": 1}})).unwrap()["message"], "'variables.a' must be a string value");
        lock(&sup).limits.spawnable = Some(vec!["helper".into()]);
        assert!(c.call("agent__spawn", &json!({"agent": "plain", "prompt": "x"})).unwrap()["message"].as_str().unwrap().contains("spawnable_agents"));
        assert_eq!(c.call("agent__list_available", &json!({})).unwrap()["count"], 1);
        assert!(c.call("agent__spawn", &json!({"prompt": "x"})).unwrap_err().contains("'agent' is required"));
    }

    #[test]
    fn mailbox_routing() {
        let host = Fake::new();
        let team = provision(&[
            ("a".into(), "w".into(), "m_0".into()),
            ("b".into(), "w".into(), "m_1".into()),
        ]);
        assert_eq!(team.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["graph_agent_w_m_0", "graph_agent_w_m_1"]);
        assert!(provision(&[("a".into(), "w".into(), "x".into())]).is_empty(), "a lone member has no team");
        let (m0, m1) = (Mailbox::of_teammate(&team[0]), Mailbox::of_teammate(&team[1]));
        let c0 = Calls { sup: None, mail: &m0, child_depth: 1, offered: &[], host: &host };
        let c1 = Calls { sup: None, mail: &m1, child_depth: 1, offered: &[], host: &host };
        assert_eq!(c0.call("agent__send_message", &json!({"id": "graph_agent_w_m_1", "message": "hi"})).unwrap()["status"], "ok");
        let inbox = c1.call("agent__check_inbox", &json!({})).unwrap();
        assert_eq!(inbox, json!({"count": 1, "messages": [{"from": "graph_agent_w_m_0", "payload": {"type": "text", "content": "hi"}}]}));
        assert_eq!(c1.call("agent__check_inbox", &json!({})).unwrap()["count"], 0, "drained");
        assert!(roster_text(&team[0]).contains("- `graph_agent_w_m_1` — b"));
        assert_eq!(c1.call("agent__list_running", &json!({})).unwrap()["peers"][0]["id"], "graph_agent_w_m_0");
        team[1].peers.finish("graph_agent_w_m_1");
        assert!(c0.call("agent__send_message", &json!({"id": "graph_agent_w_m_1", "message": "late"})).unwrap()["message"].as_str().unwrap().starts_with("Teammate 'graph_agent_w_m_1' has already finished"));
        assert!(c0.call("agent__send_message", &json!({"id": "ghost", "message": "x"})).unwrap()["message"].as_str().unwrap().starts_with("No agent found with id 'ghost'"));
        assert_eq!(c0.call("agent__send_message", &json!({"id": "parent", "message": "x"})).unwrap()["status"], "error");
        // A spawner and its child: `parent` one way, the child's id the other.
        let sup = Arc::new(Mutex::new(Supervisor::new(limits(2, 3, 0))));
        let boss = Mailbox::alone("boss".into());
        let cb = calls(&sup, &boss, 2, &[], &host);
        cb.call("agent__spawn", &json!({"agent": "plain", "prompt": "p"})).unwrap();
        let child = lock(&sup).children[0].clone();
        let kid = Mailbox { id: child.id.clone(), inbox: child.inbox.clone(), peers: None, parent: Some(boss.inbox.clone()), siblings: Some(sup.clone()) };
        let ck = Calls { sup: None, mail: &kid, child_depth: 3, offered: &[], host: &host };
        ck.call("agent__send_message", &json!({"id": "parent", "message": "up"})).unwrap();
        cb.call("agent__send_message", &json!({"id": "agent_plain_1", "message": "down"})).unwrap();
        assert_eq!(boss.inbox.drain(), [Envelope { from: "agent_plain_1".into(), content: "up".into() }]);
        assert_eq!(child.inbox.drain(), [Envelope { from: "parent".into(), content: "down".into() }]);
    }

    #[test]
    fn jobs_queue_cap_and_collect() {
        let host = Fake::new();
        let sup = Arc::new(Mutex::new(Supervisor::new(Limits { spawn: false, max_agents: 4, max_depth: 3, max_jobs: 1, spawnable: None })));
        let mail = Mailbox::alone("me".into());
        let offered = vec!["execute_command".to_string(), "fs_read".to_string()];
        let c = calls(&sup, &mail, 2, &offered, &host);
        let start = |args: Value| c.call("job__start", &args).unwrap();
        assert!(start(json!({"tool": "fs_read"}))["message"].as_str().unwrap().contains("is quick"));
        assert!(start(json!({"tool": "other"}))["message"].as_str().unwrap().contains("is not enabled in this context"));
        assert_eq!(start(json!({"tool": "execute_command", "arguments": {"command": "ls"}}))["job_id"], "job_1");
        assert_eq!(start(json!({"tool": "execute_command"}))["message"], "At capacity: 1/1 jobs running. Collect or cancel one first.");
        assert_eq!(c.call("job__check", &json!({"id": "job_1"})).unwrap()["status"], "completed");
        let got = c.call("job__collect", &json!({"id": "job_1", "tail_lines": 1})).unwrap();
        assert_eq!((got["result"].as_str(), got["result_truncated"].as_bool()), (Some("line 3"), Some(true)));
        assert_eq!(lock(&host.ran).as_slice(), ["execute_command {\"command\":\"ls\"}"]);
        assert!(c.call("job__collect", &json!({"id": "job_1"})).unwrap()["message"].as_str().unwrap().starts_with("No job 'job_1'"));
        assert!(c.call("agent__check", &json!({"id": "job_1"})).unwrap()["message"].as_str().unwrap().contains("is a background job"));
        assert!(c.call("agent__spawn", &json!({"agent": "plain", "prompt": "x"})).unwrap_err().contains("not enabled"));
        assert_eq!(c.call("job__list", &json!({})).unwrap()["active_jobs"], 0);
    }
}
