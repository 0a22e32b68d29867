//! Where a sherma run meets its hook executors (`run::hooks`): the contexts of each hook point,
//! built only when the agent declares hooks, and what the engine reads back (reference/sherma.md
//! §10.1). The run-level points (`before_graph_invoke`, `after_graph_invoke`, `on_error`) fire
//! per invocation: at the first step and again at the first step after an answered interrupt,
//! as upstream's `send_message` does per message.

use super::{NodeError, ShermaMachine};
use runtime::provider::{ModelRef, ToolCall};
use runtime::session::{Cx, StepOutcome};
use crate::state::State;
use serde_json::{Map, Value, json};
use std::time::Duration;

impl ShermaMachine {
    /// Whether any executor handles `point` (no context is built otherwise).
    pub(super) fn hooked(&self, point: &str) -> bool {
        !self.shared.hooks.is_empty() && self.shared.hooks.any_for(point)
    }

    /// Run `point`'s chain over `ctx`.
    pub(super) fn fire(&self, point: &str, node: Option<&str>, ctx: Value, cx: &Cx<'_>) -> Result<Value, String> {
        let shared = &self.shared;
        let py = |path: &str, method: &str, ctx: &Value, timeout: Duration| -> Result<Option<Value>, String> {
            let runner = shared.runner()?;
            let mut r = runner.lock().unwrap_or_else(|p| p.into_inner());
            r.hook(path, method, ctx, timeout)
        };
        shared.hooks.fire(point, node, ctx, cx, &py)
    }

    /// `node_context` as Python hooks see it: the node's name, type and `args`.
    pub(super) fn node_context(&self, node: &str) -> Value {
        let args = self
            .shared
            .decl(node)
            .and_then(|d| d.node.get("args"))
            .map(|a| a.to_json())
            .unwrap_or(Value::Null);
        json!({"node_name": node, "node_type": self.kind(node), "args": args})
    }

    /// `node_enter`: a changed `state` is what the rest of this node sees (never stored).
    pub(super) fn hook_node_enter(&self, node: &str, cx: &Cx<'_>) -> Result<Option<State>, NodeError> {
        if !self.hooked("node_enter") {
            return Ok(None);
        }
        let state = self.state.to_json();
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "node_type": self.kind(node), "state": state});
        let out = self.fire("node_enter", Some(node), ctx, cx).map_err(NodeError::hook)?;
        match out.get("state") {
            Some(Value::Object(m)) if out.get("state") != Some(&state) => {
                let mut st = State::new();
                for (k, v) in m {
                    st.replace(k, v.clone());
                }
                Ok(Some(st))
            }
            _ => Ok(None),
        }
    }

    /// `node_exit`: its `result` replaces the node's update.
    pub(super) fn hook_node_exit(&self, node: &str, update: Map<String, Value>, cx: &Cx<'_>) -> Result<Map<String, Value>, NodeError> {
        if !self.hooked("node_exit") {
            return Ok(update);
        }
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "node_type": self.kind(node),
            "result": update, "state": self.state.to_json()});
        let out = self.fire("node_exit", Some(node), ctx, cx).map_err(NodeError::hook)?;
        result_map(out, "node_exit")
    }

    /// `on_node_error`: `Ok(None)` = a hook cleared the error (the node returns `{}`), else the
    /// error as the hooks left it.
    pub(super) fn hook_node_error(&self, node: &str, e: NodeError, cx: &Cx<'_>) -> Option<NodeError> {
        if !self.hooked("on_node_error") {
            return Some(e);
        }
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "node_type": self.kind(node),
            "error": {"type": e.kind, "message": e.own_message()}, "state": self.state.to_json()});
        match self.fire("on_node_error", Some(node), ctx, cx) {
            Err(msg) => Some(NodeError { message: format!("{}; then {msg}", e.message), ..e }),
            Ok(out) => match out.get("error") {
                None | Some(Value::Null) => None,
                Some(err) => {
                    let kind = err.get("type").and_then(Value::as_str).map(str::to_string).unwrap_or(e.kind.clone());
                    match err.get("message").and_then(Value::as_str) {
                        // The hook passed the message on as it got it: our context stays.
                        None => Some(NodeError { kind, ..e }),
                        Some(m) if m == e.own_message() => Some(NodeError { kind, ..e }),
                        Some(m) => Some(NodeError { message: m.to_string(), kind, attempt: e.attempt, own: None }),
                    }
                }
            },
        }
    }

    /// `node_execute` (custom nodes): hooks fill `result`, merged like a data_transform.
    pub(super) fn hook_node_execute(&self, node: &str, cx: &Cx<'_>) -> Result<Map<String, Value>, NodeError> {
        if !self.hooked("node_execute") {
            return Ok(Map::new());
        }
        let metadata = self
            .shared
            .decl(node)
            .and_then(|d| d.node.get("args"))
            .and_then(|a| a.get("metadata"))
            .map(|m| m.to_json())
            .unwrap_or(Value::Null);
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "metadata": metadata,
            "state": self.state.to_json(), "result": {}, "registries": null});
        let out = self.fire("node_execute", Some(node), ctx, cx).map_err(NodeError::hook)?;
        result_map(out, "node_execute")
    }

    /// `before_llm_call`: the non-system messages, the joined system prompt and the tools. When
    /// a hook changed the messages or the prompt, the request is rebuilt as one system message
    /// first, then the messages (upstream rebuilds it whenever hooks exist, dropping system
    /// messages spliced from state; here an untouched prompt is sent as assembled).
    pub(super) fn hook_before_llm(&self, node: &str, wire: &mut Vec<Value>, tools: &mut Vec<Value>, cx: &Cx<'_>) -> Result<(), NodeError> {
        if !self.hooked("before_llm_call") {
            return Ok(());
        }
        let system: Vec<String> = wire
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .map(|m| m.get("content").map(super::display).unwrap_or_default())
            .collect();
        let system_prompt = system.join("\n");
        let messages: Vec<Value> =
            wire.iter().filter(|m| m.get("role").and_then(Value::as_str) != Some("system")).map(from_wire).collect();
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "messages": messages,
            "system_prompt": system_prompt, "tools": tools, "state": self.state.to_json()});
        let out = self.fire("before_llm_call", Some(node), ctx.clone(), cx).map_err(NodeError::hook)?;
        if out.get("messages") != ctx.get("messages") || out.get("system_prompt") != ctx.get("system_prompt") {
            let sp = out.get("system_prompt").map(super::display).unwrap_or_default();
            let Some(Value::Array(msgs)) = out.get("messages") else {
                return Err(NodeError::hook("before_llm_call: `messages` must stay a list of messages".into()));
            };
            let mut rebuilt = Vec::new();
            if !sp.is_empty() {
                rebuilt.push(json!({"role": "system", "content": sp}));
            }
            for m in msgs {
                match m {
                    Value::Object(o) => rebuilt.push(super::to_wire(&crate::state::normalize_message(o))),
                    Value::String(s) => rebuilt.push(json!({"role": "user", "content": s})),
                    other => return Err(NodeError::hook(format!("before_llm_call: {other} is not a message"))),
                }
            }
            *wire = rebuilt;
        }
        if out.get("tools") != ctx.get("tools") {
            match out.get("tools") {
                Some(Value::Array(t)) if t.iter().all(|x| x.get("name").and_then(Value::as_str).is_some()) => *tools = t.clone(),
                _ => return Err(NodeError::hook("before_llm_call: `tools` must stay a list of {name, description, parameters}".into())),
            }
        }
        Ok(())
    }

    /// `after_llm_call`: the response (`{type: ai, content, tool_calls}`) may be replaced.
    pub(super) fn hook_after_llm(&self, node: &str, response: Value, cx: &Cx<'_>) -> Result<Value, NodeError> {
        if !self.hooked("after_llm_call") {
            return Ok(response);
        }
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "response": response,
            "state": self.state.to_json()});
        let out = self.fire("after_llm_call", Some(node), ctx, cx).map_err(NodeError::hook)?;
        match out.get("response") {
            Some(Value::Object(_)) => Ok(out["response"].clone()),
            Some(Value::String(s)) => Ok(json!({"type": "ai", "content": s, "tool_calls": []})),
            _ => Err(NodeError::hook("after_llm_call: `response` must stay a message".into())),
        }
    }

    /// `before_tool_call`: hooks may narrow (or reorder) the tools the node may run; returns
    /// the names left.
    pub(super) fn hook_before_tools(&self, node: &str, calls: &Value, names: Vec<String>, cx: &Cx<'_>) -> Result<Vec<String>, NodeError> {
        if !self.hooked("before_tool_call") {
            return Ok(names);
        }
        let tools: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "tool_calls": calls,
            "tools": tools, "state": self.state.to_json()});
        let out = self.fire("before_tool_call", Some(node), ctx, cx).map_err(NodeError::hook)?;
        let Some(Value::Array(t)) = out.get("tools") else {
            return Err(NodeError::hook("before_tool_call: `tools` must stay a list".into()));
        };
        Ok(t.iter()
            .filter_map(|x| x.get("name").and_then(Value::as_str).or(x.as_str()).map(str::to_string))
            .collect())
    }

    /// `after_tool_call`, `after_agent_call`: the node's update as `result`.
    pub(super) fn hook_result(&self, point: &str, node: &str, update: Map<String, Value>, cx: &Cx<'_>) -> Result<Map<String, Value>, NodeError> {
        if !self.hooked(point) {
            return Ok(update);
        }
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "result": update,
            "state": self.state.to_json()});
        let out = self.fire(point, Some(node), ctx, cx).map_err(NodeError::hook)?;
        result_map(out, point)
    }

    /// `before_agent_call`: the sub-agent's input may be replaced.
    pub(super) fn hook_before_agent(&self, node: &str, agent: &str, input: Value, cx: &Cx<'_>) -> Result<Value, NodeError> {
        if !self.hooked("before_agent_call") {
            return Ok(input);
        }
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "input_value": input,
            "agent": {"id": agent}, "state": self.state.to_json()});
        let out = self.fire("before_agent_call", Some(node), ctx, cx).map_err(NodeError::hook)?;
        Ok(out.get("input_value").cloned().unwrap_or(Value::Null))
    }

    /// `before_interrupt`: the value shown to the user may be replaced.
    pub(super) fn hook_before_interrupt(&self, node: &str, value: Value, cx: &Cx<'_>) -> Result<Value, NodeError> {
        if !self.hooked("before_interrupt") {
            return Ok(value);
        }
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "value": value,
            "state": self.state.to_json()});
        let out = self.fire("before_interrupt", Some(node), ctx, cx).map_err(NodeError::hook)?;
        Ok(out.get("value").cloned().unwrap_or(Value::Null))
    }

    /// `after_interrupt`: the user's answer may be replaced.
    pub(super) fn hook_after_interrupt(&self, node: &str, value: Value, response: Value, cx: &Cx<'_>) -> Result<Value, NodeError> {
        if !self.hooked("after_interrupt") {
            return Ok(response);
        }
        let ctx = json!({"node_context": self.node_context(node), "node_name": node, "value": value,
            "response": response, "state": self.state.to_json()});
        let out = self.fire("after_interrupt", Some(node), ctx, cx).map_err(NodeError::hook)?;
        Ok(out.get("response").cloned().unwrap_or(Value::Null))
    }

    /// `before_skill_load` (load_skills nodes only, as upstream): the id and version to load.
    pub(super) fn hook_before_skill(&self, node: &str, id: &str, version: &str, cx: &Cx<'_>) -> Result<(String, String), String> {
        if !self.hooked("before_skill_load") {
            return Ok((id.to_string(), version.to_string()));
        }
        let ctx = json!({"node_context": null, "skill_id": id, "version": version});
        let out = self.fire("before_skill_load", Some(node), ctx, cx)?;
        let s = |k: &str, d: &str| out.get(k).and_then(Value::as_str).unwrap_or(d).to_string();
        Ok((s("skill_id", id), s("version", version)))
    }

    /// `after_skill_load`: the SKILL.md text the model receives may be replaced.
    pub(super) fn hook_after_skill(&self, node: &str, id: &str, version: &str, content: String, tools: &[Value], cx: &Cx<'_>) -> Result<String, String> {
        if !self.hooked("after_skill_load") {
            return Ok(content);
        }
        let ctx = json!({"node_context": null, "skill_id": id, "version": version, "content": content, "tools_loaded": tools});
        let out = self.fire("after_skill_load", Some(node), ctx, cx)?;
        Ok(out.get("content").map(super::display).unwrap_or_default())
    }

    /// `before_skill_unload` when the model calls `unload_skill` (upstream never fires the unload
    /// hooks in declarative agents): the skill id and version to unload.
    pub(super) fn hook_before_unload(&self, node: &str, call: &ToolCall, cx: &Cx<'_>) -> Result<ToolCall, NodeError> {
        let id = call.args.get("skill_id").and_then(Value::as_str).unwrap_or("");
        let version = call.args.get("version").and_then(Value::as_str).unwrap_or("*");
        let ctx = json!({"skill_id": id, "version": version});
        let out = self.fire("before_skill_unload", Some(node), ctx, cx).map_err(NodeError::hook)?;
        let mut call = call.clone();
        if let Value::Object(args) = &mut call.args {
            for k in ["skill_id", "version"] {
                if let Some(v) = out.get(k).filter(|v| v.is_string()) {
                    args.insert(k.into(), v.clone());
                }
            }
        }
        Ok(call)
    }

    /// `after_skill_unload` (observation only): the skill and the tools it took away.
    pub(super) fn hook_after_unload(&self, node: &str, id: &str, version: &str, cx: &Cx<'_>) -> Result<(), NodeError> {
        let tools: Vec<Value> = self
            .shared
            .sherma()
            .skill_cards
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, c)| {
                c.card.local_tools.values().map(|t| Value::String(t.id.clone())).chain(c.card.mcps.keys().map(|k| Value::String(k.clone()))).collect()
            })
            .unwrap_or_default();
        let ctx = json!({"skill_id": id, "version": version, "tools_unloaded": tools});
        self.fire("after_skill_unload", Some(node), ctx, cx).map_err(NodeError::hook)?;
        Ok(())
    }

    /// `on_chat_model_create`, once per `llms` entry and run (Python executors only): hooks may
    /// change `provider`, `model_name` or `kwargs.model` (all honoured; upstream ignores a
    /// changed `model_name`). A Python `chat_model` object cannot be used: the call goes to the
    /// provider Switchyard configures, and the hook event says so.
    pub(super) fn hook_chat_model(&self, llm_id: &str, model: ModelRef, cx: &Cx<'_>) -> Result<ModelRef, NodeError> {
        if !self.hooked("on_chat_model_create") {
            return Ok(model);
        }
        if let Some(m) = self.shared.chat_models.lock().unwrap_or_else(|p| p.into_inner()).get(llm_id) {
            return Ok(m.clone());
        }
        let ctx = json!({"llm_id": llm_id, "provider": model.provider, "model_name": model.name,
            "kwargs": {"model": model.name}, "chat_model": null});
        let out = self.fire("on_chat_model_create", None, ctx, cx).map_err(NodeError::hook)?;
        let mut m = model.clone();
        if let Some(p) = out.get("provider").and_then(Value::as_str).filter(|p| !p.is_empty()) {
            m.provider = p.to_string();
        }
        let kw_model = out.get("kwargs").and_then(|k| k.get("model")).and_then(Value::as_str);
        let named = out.get("model_name").and_then(Value::as_str);
        if let Some(n) = kw_model.filter(|n| *n != model.name).or(named).filter(|n| !n.is_empty()) {
            m.name = n.to_string();
        }
        if out.get("chat_model").is_some_and(|c| !c.is_null()) {
            cx.emit(runtime::events::EventBody::Log {
                source: "hooks".into(),
                text: format!(
                    "on_chat_model_create for `{llm_id}` supplied a Python chat model; Switchyard calls the provider itself \
                     ({}:{}), so set `provider`/`kwargs[\"model\"]` in the hook instead\n",
                    m.provider, m.name
                ),
            });
        }
        self.shared.chat_models.lock().unwrap_or_else(|p| p.into_inner()).insert(llm_id.to_string(), m.clone());
        Ok(m)
    }

    /// `before_graph_invoke` at the first step of an invocation: `config.recursion_limit` is
    /// honoured; other config keys are kept for the later run-level hooks.
    pub(super) fn hook_invoke(&mut self, cx: &Cx<'_>) -> Result<(), String> {
        if self.shared.hooks.is_empty() || self.invocation.is_some() {
            return Ok(());
        }
        let config = json!({"recursion_limit": self.recursion_limit(), "configurable": {"thread_id": cx.run}});
        let mut config = config;
        if self.hooked("before_graph_invoke") {
            let ctx = json!({"agent_id": self.shared.agent().name.value, "thread_id": cx.run, "config": config,
                "input": *self.input});
            let out = self.fire("before_graph_invoke", None, ctx, cx)?;
            if let Some(c @ Value::Object(_)) = out.get("config") {
                config = c.clone();
            }
            if let Some(n) = config.get("recursion_limit").and_then(Value::as_i64).filter(|n| *n > 0) {
                self.recursion_override = Some(n);
            }
        }
        self.invocation = Some(config);
        Ok(())
    }

    /// The run-level hooks after a step: `after_graph_invoke` when the invocation returns
    /// (finished or interrupted; a changed `result` replaces the state), `on_error` when it
    /// failed (a cleared error ends the run completed, with no output).
    pub(super) fn hook_outcome(&mut self, out: StepOutcome, cx: &Cx<'_>) -> StepOutcome {
        if self.shared.hooks.is_empty() {
            return out;
        }
        let config = self.invocation.clone().unwrap_or(Value::Null);
        let agent = self.shared.agent().name.value.clone();
        match out {
            StepOutcome::Failed { node, message } if self.hooked("on_error") => {
                let ctx = json!({"agent_id": agent, "thread_id": cx.run, "config": config, "input": *self.input,
                    "error": {"type": "GraphError", "message": message}});
                match self.fire("on_error", None, ctx, cx) {
                    Err(e) => StepOutcome::Failed { node, message: format!("{message}; then {e}") },
                    Ok(o) => match o.get("error") {
                        None | Some(Value::Null) => {
                            self.output = Value::Null;
                            self.queue.clear();
                            self.next.clear();
                            StepOutcome::Finished { output: Value::Null }
                        }
                        Some(err) => StepOutcome::Failed {
                            node,
                            message: err.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or(message),
                        },
                    },
                }
            }
            StepOutcome::Finished { .. } | StepOutcome::Interrupt(_) if self.hooked("after_graph_invoke") => {
                let state = self.state.to_json();
                let ctx = json!({"agent_id": agent, "thread_id": cx.run, "config": config, "input": *self.input,
                    "result": state});
                match self.fire("after_graph_invoke", None, ctx, cx) {
                    Err(e) => StepOutcome::Failed { node: None, message: e },
                    Ok(o) => {
                        if let Some(Value::Object(m)) = o.get("result").filter(|r| **r != state) {
                            let mut st = State::new();
                            for (k, v) in m {
                                st.replace(k, v.clone());
                            }
                            self.state = st;
                            if let StepOutcome::Finished { .. } = out {
                                self.output = self.final_output();
                                return StepOutcome::Finished { output: self.output.clone() };
                            }
                        }
                        out
                    }
                }
            }
            other => other,
        }
    }
}

/// A hook's `result` as an update (a JSON object).
fn result_map(out: Value, point: &str) -> Result<Map<String, Value>, NodeError> {
    match out.get("result") {
        Some(Value::Object(m)) => Ok(m.clone()),
        None | Some(Value::Null) => Ok(Map::new()),
        Some(other) => Err(NodeError::hook(format!("{point}: `result` must be a mapping of state updates, got {other}"))),
    }
}

/// A provider wire message back in the stored (LangChain) shape hooks see.
fn from_wire(m: &Value) -> Value {
    let mut out = m.as_object().cloned().unwrap_or_default();
    let role = out.shift_remove("role").and_then(|r| r.as_str().map(str::to_string)).unwrap_or_default();
    let kind = match role.as_str() {
        "user" => "human",
        "assistant" => "ai",
        other => other,
    };
    out.insert("type".into(), Value::String(kind.to_string()));
    Value::Object(out)
}
