//! Remote sub-agents of a sherma run over A2A (`sub_agents` entries with `url` and no
//! `yaml_path`), through [`connect::a2a`].
//!
//! - `call_agent` sends the node's input as one user message; the reply's text becomes an AI
//!   message in `messages`, as for a local sub-agent.
//! - As tools (`use_sub_agents_as_tools`), the `request` argument is sent and the reply's text
//!   is the tool message.
//! - `input-required` / `auth-required`: the node stops at an interrupt whose prompt is the
//!   remote agent's question. The answer is sent to the same task (its `taskId` and
//!   `contextId`), and the node goes on from there; a tool node keeps the results of the calls
//!   before the waiting one. The waiting task lives in the machine ([`RemoteWait`]), so
//!   checkpoints, forks and rewinds carry it.
//! - Each A2A exchange is shown to the debugger as a `tool_call` / `tool_result` pair named
//!   `a2a:<sub-agent id>` (arguments: URL, message, task ids; result: protocol, state, task ids,
//!   text; a failure as the result's `error`).

use super::{NodeError, NodeResult, ShermaMachine, Tool, ToolKind, display};
use model::doc::sherma::Expr;
use connect::a2a::{RemoteAgent, TaskState};
use runtime::events::{EventBody, InterruptKind};
use runtime::provider::ToolCall;
use runtime::session::{Cx, Pending};
use crate::state::{MESSAGES, message};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The remote agents of a run (one client each, shared by every fork) and a counter for the
/// ids of their events.
#[derive(Default)]
pub(super) struct Remotes {
    agents: Mutex<HashMap<String, RemoteAgent>>,
    seq: AtomicU64,
}

/// A remote task waiting for the user's answer.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct RemoteWait {
    /// The node that asked.
    node: String,
    /// The sub-agent id.
    agent: String,
    task_id: Option<String>,
    context_id: Option<String>,
    state: String,
    /// The remote agent's question.
    question: String,
    /// Set when the question came from a tool call of a tool node.
    tool: Option<ToolWait>,
}

/// Where a tool node stopped: the waiting call and what the calls before it produced.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct ToolWait {
    call: usize,
    done: Vec<Value>,
    internal: Map<String, Value>,
    internal_changed: bool,
}

/// How a tool node starts: afresh, asking again (no answer yet), or resuming a waiting call.
pub(super) enum ToolResume {
    Fresh,
    Ask(Pending),
    /// The waiting call's index, the tool messages before it, `__sherma__` and whether it
    /// changed, and the waiting task with its answer.
    Go {
        call: usize,
        done: Vec<Value>,
        internal: Map<String, Value>,
        internal_changed: bool,
        wait: Box<(RemoteWait, Value)>,
    },
}

/// The outcome of one exchange with a remote agent.
pub(super) enum RemoteStep {
    Done(String),
    Wait(Box<RemoteWait>),
}

impl RemoteWait {
    fn pending(&self) -> Pending {
        let prompt = if self.question.trim().is_empty() {
            if self.state == TaskState::AuthRequired.as_str() {
                format!(
                    "The remote agent `{}` needs authentication ({}).",
                    self.agent, self.state
                )
            } else {
                format!(
                    "The remote agent `{}` needs more input ({}).",
                    self.agent, self.state
                )
            }
        } else {
            self.question.clone()
        };
        Pending {
            id: String::new(),
            node: self.node.clone(),
            kind: InterruptKind::Interrupt,
            value: Value::String(prompt.clone()),
            prompt,
            options: Vec::new(),
            default: None,
            validation: None,
        }
    }
}

/// The text an interrupt answer sends to a remote agent: a string as is, a message's `content`,
/// anything else as JSON.
fn answer_text(answer: &Value) -> String {
    match answer {
        Value::Object(m) if m.contains_key("content") => display(&m["content"]),
        other => display(other),
    }
}

fn node_error(message: String) -> NodeError {
    NodeError {
        message,
        kind: "A2AError".into(),
        attempt: 1,
        own: None,
    }
}

impl ShermaMachine {
    /// The A2A client of sub-agent `id` when it is remote (declared with `url` and no
    /// `yaml_path`); `None` for local sub-agents.
    pub(super) fn remote_agent(&self, id: &str) -> Option<Result<RemoteAgent, String>> {
        let ent = self
            .shared
            .sherma()
            .sub_agents
            .iter()
            .find(|s| s.id_str() == id)?;
        if ent.resolved_path.is_some() || ent.get("yaml_path").is_some() {
            return None;
        }
        let url = ent.get_str("url")?;
        let mut agents = self
            .shared
            .remotes
            .agents
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(a) = agents.get(id) {
            return Some(Ok(a.clone()));
        }
        Some(
            match RemoteAgent::new(id, url, self.shared.opts.a2a.clone()) {
                Ok(a) => {
                    agents.insert(id.to_string(), a.clone());
                    Ok(a)
                }
                Err(e) => Err(e.to_string()),
            },
        )
    }

    /// A `call_agent` node whose sub-agent is remote.
    pub(super) fn call_remote_agent(
        &mut self,
        node: &str,
        agent: Result<RemoteAgent, String>,
        input: Option<&Expr>,
        cx: &Cx<'_>,
    ) -> Result<NodeResult, NodeError> {
        let agent = agent.map_err(NodeError::plain)?;
        let waiting = self
            .remote
            .take()
            .filter(|w| w.node == node && w.tool.is_none());
        let step = match waiting {
            Some(w) => match self.resume.take() {
                Some(answer) => {
                    self.a2a_exchange(node, &agent, &answer_text(&answer), Some(&w), cx)
                }
                // No answer yet (a checkpoint taken while it waited): ask again.
                None => {
                    let p = w.pending();
                    self.remote = Some(w);
                    return Ok(NodeResult::Interrupt(p));
                }
            },
            None => {
                let value = match input {
                    Some(e) => self.eval(&e.text, None).map_err(NodeError::plain)?,
                    None => Value::String(String::new()),
                };
                self.a2a_exchange(node, &agent, &display(&value), None, cx)
            }
        };
        match step.map_err(node_error)? {
            RemoteStep::Done(text) => {
                let mut up = Map::new();
                if !text.is_empty() {
                    up.insert(MESSAGES.into(), json!([message("ai", Value::String(text))]));
                }
                Ok(NodeResult::Update(up))
            }
            RemoteStep::Wait(w) => {
                let p = w.pending();
                self.remote = Some(*w);
                Ok(NodeResult::Interrupt(p))
            }
        }
    }

    /// How tool node `node` starts (see [`ToolResume`]).
    pub(super) fn tool_resume(&mut self, node: &str) -> ToolResume {
        match self.remote.take() {
            Some(w) if w.node == node && w.tool.is_some() => match self.resume.take() {
                Some(answer) => {
                    let t = w.tool.clone().expect("checked");
                    ToolResume::Go {
                        call: t.call,
                        done: t.done,
                        internal: t.internal,
                        internal_changed: t.internal_changed,
                        wait: Box::new((w, answer)),
                    }
                }
                None => {
                    let p = w.pending();
                    self.remote = Some(w);
                    ToolResume::Ask(p)
                }
            },
            _ => ToolResume::Fresh,
        }
    }

    /// A tool call on a remote sub-agent (`None` when `t` is not one). `resuming`: the waiting
    /// task this call continues, with the user's answer.
    pub(super) fn remote_tool_call(
        &self,
        node: &str,
        t: &Tool,
        args: &Value,
        resuming: Option<Box<(RemoteWait, Value)>>,
        cx: &Cx<'_>,
    ) -> Option<Result<RemoteStep, String>> {
        let ToolKind::SubAgent(i) = &t.kind else {
            return None;
        };
        let id = self.shared.sherma().sub_agents[*i].id_str().to_string();
        let agent = match self.remote_agent(&id)? {
            Ok(a) => a,
            Err(e) => return Some(Err(e)),
        };
        let r = match resuming.map(|b| *b) {
            Some((w, answer)) => {
                self.a2a_exchange(node, &agent, &answer_text(&answer), Some(&w), cx)
            }
            None => {
                let request = args.get("request").map(display).unwrap_or_default();
                self.a2a_exchange(node, &agent, &request, None, cx)
            }
        };
        Some(r.map_err(|e| e.to_string()))
    }

    /// Stop tool node `node` at call `call` for the remote agent's question.
    pub(super) fn wait_in_tool(
        &mut self,
        mut w: Box<RemoteWait>,
        call: usize,
        done: Vec<Value>,
        internal: Map<String, Value>,
        internal_changed: bool,
    ) -> NodeResult {
        w.tool = Some(ToolWait {
            call,
            done,
            internal,
            internal_changed,
        });
        let p = w.pending();
        self.remote = Some(*w);
        NodeResult::Interrupt(p)
    }

    /// Send `text` to `agent` (continuing the task of `cont`), with its debugger events.
    fn a2a_exchange(
        &self,
        node: &str,
        agent: &RemoteAgent,
        text: &str,
        cont: Option<&RemoteWait>,
        cx: &Cx<'_>,
    ) -> Result<RemoteStep, String> {
        let n = self.shared.remotes.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("a2a-{}-{n}", agent.id);
        let name = format!("a2a:{}", agent.id);
        let task_id = cont.and_then(|w| w.task_id.clone());
        let context_id = cont.and_then(|w| w.context_id.clone());
        let mut args = Map::new();
        args.insert("url".into(), Value::String(agent.url.clone()));
        args.insert("message".into(), Value::String(text.to_string()));
        if let Some(t) = &task_id {
            args.insert("task_id".into(), Value::String(t.clone()));
        }
        if let Some(c) = &context_id {
            args.insert("context_id".into(), Value::String(c.clone()));
        }
        let args = Value::Object(args);
        cx.emit(EventBody::ToolCall {
            node: node.to_string(),
            call: ToolCall {
                id: id.clone(),
                name: name.clone(),
                args: args.clone(),
            },
        });
        // Through the run's provider: a recording keeps the exchange, a replay answers it
        // from the cassette without the remote agent.
        let result = cx.tool(node, &name, &args, || {
            cx.network(&format!("the A2A agent `{}`", agent.id), &agent.url)?;
            agent
                .send_blocking(text, task_id.as_deref(), context_id.as_deref(), Some(cx.stop))
                .map(|reply| {
                    json!({
                        "protocol": reply.protocol.label(),
                        "state": reply.state.as_ref().map(|s| s.as_str().to_string()),
                        "task_id": reply.task_id,
                        "context_id": reply.context_id,
                        "text": reply.text,
                    })
                })
                .map_err(|e| e.to_string())
        });
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        match result {
            Ok(reply) => {
                cx.emit(EventBody::ToolResult { node: node.to_string(), id, name, result: reply.clone(), error: None });
                let state = field(&reply, "state");
                let text = field(&reply, "text").unwrap_or_default();
                if state.as_deref().is_some_and(|s| TaskState::parse(s).is_interrupted()) {
                    Ok(RemoteStep::Wait(Box::new(RemoteWait {
                        node: node.to_string(),
                        agent: agent.id.clone(),
                        // A server may leave the ids out of a continued task's reply: keep ours.
                        task_id: field(&reply, "task_id").or(task_id),
                        context_id: field(&reply, "context_id").or(context_id),
                        state: state.unwrap_or_default(),
                        question: text,
                        tool: None,
                    })))
                } else {
                    Ok(RemoteStep::Done(text))
                }
            }
            Err(e) => {
                cx.emit(EventBody::ToolResult { node: node.to_string(), id, name, result: Value::Null, error: Some(e.clone()) });
                Err(e)
            }
        }
    }
}
