//! Anthropic Messages (`POST {base}/v1/messages`), streamed. System messages go to `system`;
//! tool calls are `tool_use` blocks and their results `tool_result` blocks in a user turn;
//! consecutive turns of one role are merged, as the API wants alternating turns.
//!
//! Structured output (`response_format`): the Messages API has no JSON-schema response mode in
//! its stable version, so the schema is appended to the system prompt with the instruction to
//! answer with one JSON object (the nodes parse and check the reply as for any provider).

use super::http::{WireParser, fail, snippet};
use runtime::provider::{ErrorKind, LlmRequest, LlmResponse, ProviderError, TokenUsage, ToolCall};
use serde_json::{Map, Value, json};
use std::sync::mpsc::Sender;

/// `max_tokens` is required by the API; nodes do not set it.
pub const MAX_TOKENS: u64 = 4096;

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The request body for `req`.
pub fn request_body(req: &LlmRequest, model: &str) -> Value {
    let mut system: Vec<String> = Vec::new();
    let mut turns: Vec<(String, Vec<Value>)> = Vec::new();
    let mut push = |role: &str, block: Value| match turns.last_mut() {
        Some((r, blocks)) if r == role => blocks.push(block),
        _ => turns.push((role.to_string(), vec![block])),
    };
    for m in req.messages.as_array().into_iter().flatten() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        match role {
            "system" => system.push(text_of(m.get("content"))),
            "assistant" => {
                let t = text_of(m.get("content"));
                if !t.is_empty() {
                    push("assistant", json!({"type": "text", "text": t}));
                }
                for c in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let input = match c.get("args") {
                        Some(Value::Object(o)) => Value::Object(o.clone()),
                        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(json!({})),
                        _ => json!({}),
                    };
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": c.get("id").cloned().unwrap_or(json!("")), "name": c.get("name").cloned().unwrap_or(json!("")), "input": input}),
                    );
                }
            }
            "tool" => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": m.get("tool_call_id").cloned().unwrap_or(json!("")), "content": text_of(m.get("content"))}),
            ),
            _ => push("user", json!({"type": "text", "text": text_of(m.get("content"))})),
        }
    }
    if let Some(rf) = req.response_format.clone().or_else(|| schema_format(req.extra.get("response_format"))) {
        let schema = rf.get("schema").cloned().unwrap_or(json!({"type": "object"}));
        system.push(format!(
            "Answer with one JSON object that matches this JSON Schema, and nothing else (no prose, no code fences):\n{}",
            serde_json::to_string_pretty(&schema).unwrap_or_default()
        ));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(MAX_TOKENS));
    let system: Vec<String> = system.into_iter().filter(|s| !s.is_empty()).collect();
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert(
        "messages".into(),
        Value::Array(turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect()),
    );
    if let Some(tools) = req.tools.as_array().filter(|t| !t.is_empty()) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                let (name, description, parameters) = super::tool_parts(t);
                json!({"name": name, "description": description, "input_schema": parameters})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    super::put_sampling(req, &mut body);
    if !req.skills.is_empty() {
        // Anthropic-hosted skills (LLLM's `skill_…` ids), as LLLM passes them.
        body.insert("skills".into(), Value::Array(req.skills.iter().map(|id| json!({"id": id})).collect()));
    }
    put_extra(&req.extra, &mut body);
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

/// OpenAI-style model arguments the Messages API rejects; [`request_body`] leaves them out
/// (LiteLLM's `drop_params`), and LLLM runs say so when the run starts.
pub const UNSUPPORTED: [&str; 8] =
    ["seed", "presence_penalty", "frequency_penalty", "n", "logit_bias", "logprobs", "top_logprobs", "parallel_tool_calls"];

/// Body keys the wire format sets itself: `LlmRequest::extra` does not replace them.
const OWNED: [&str; 5] = ["model", "messages", "system", "tools", "stream"];

/// `response_format` given as a model argument (`{"type": "json_schema", "json_schema": {…}}`
/// or `{"type": "json_object"}`) as [`LlmRequest::response_format`] has it.
fn schema_format(v: Option<&Value>) -> Option<Value> {
    let v = v?;
    match v.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let js = v.get("json_schema").cloned().unwrap_or(json!({}));
            Some(json!({"name": js.get("name").cloned().unwrap_or(json!("response")), "schema": js.get("schema").cloned().unwrap_or(json!({"type": "object"}))}))
        }
        Some("json_object") => Some(json!({"name": "response", "schema": {"type": "object"}})),
        _ => None,
    }
}

/// Further model arguments (`LlmRequest::extra`) in Messages terms, as LiteLLM translates them:
/// `max_tokens` / `max_completion_tokens` replace the default `max_tokens`, `stop` becomes
/// `stop_sequences`, `reasoning_effort` a `thinking` budget (low 1024, medium 2048, high 4096
/// tokens), `tool_choice` Anthropic's shape, `user` `metadata.user_id`; [`UNSUPPORTED`] ones and
/// `response_format` (already in the system prompt) are left out; the rest is sent as written.
fn put_extra(extra: &Map<String, Value>, body: &mut Map<String, Value>) {
    for (k, v) in extra {
        match k.as_str() {
            "max_tokens" | "max_completion_tokens" => {
                body.insert("max_tokens".into(), v.clone());
            }
            "stop" => {
                let list = match v {
                    Value::String(s) => json!([s]),
                    other => other.clone(),
                };
                body.insert("stop_sequences".into(), list);
            }
            // Written out, it wins over a budget `reasoning_effort` gives.
            "thinking" => {
                body.insert("thinking".into(), v.clone());
            }
            "reasoning_effort" => {
                let budget = match v.as_str() {
                    Some("high") => 4096,
                    Some("medium") => 2048,
                    _ => 1024,
                };
                body.entry("thinking").or_insert(json!({"type": "enabled", "budget_tokens": budget}));
            }
            "tool_choice" => {
                let choice = match v {
                    Value::String(s) if s == "required" => json!({"type": "any"}),
                    Value::String(s) => json!({"type": s}),
                    Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("function") => {
                        json!({"type": "tool", "name": o.get("function").and_then(|f| f.get("name")).cloned().unwrap_or(json!(""))})
                    }
                    other => other.clone(),
                };
                body.insert("tool_choice".into(), choice);
            }
            "user" => {
                let meta = body.entry("metadata").or_insert(json!({}));
                if let Value::Object(m) = meta {
                    m.entry("user_id").or_insert(v.clone());
                }
            }
            "response_format" => {}
            k if UNSUPPORTED.contains(&k) || OWNED.contains(&k) => {}
            _ => {
                if !body.contains_key(k) {
                    body.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// One content block being streamed.
enum Block {
    Text,
    Tool { id: String, name: String, json: String },
    Other,
}

/// Puts a streamed (or whole) Messages answer back together.
pub struct Parser {
    provider: String,
    content: String,
    blocks: Vec<Block>,
    calls: Vec<ToolCall>,
    usage: TokenUsage,
    model: Option<String>,
    stop: Option<String>,
}

impl Parser {
    pub fn new(provider: &str) -> Parser {
        Parser {
            provider: provider.to_string(),
            content: String::new(),
            blocks: Vec::new(),
            calls: Vec::new(),
            usage: TokenUsage::default(),
            model: None,
            stop: None,
        }
    }

    fn close(&mut self, i: usize) -> Result<(), ProviderError> {
        if let Some(Block::Tool { id, name, json }) = self.blocks.get_mut(i) {
            let args = if json.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(json).map_err(|e| {
                    fail(ErrorKind::Malformed, format!("{}: the input of tool call `{name}` is not JSON ({e}): {}", self.provider, snippet(json)))
                })?
            };
            self.calls.push(ToolCall { id: std::mem::take(id), name: std::mem::take(name), args });
            self.blocks[i] = Block::Other;
        }
        Ok(())
    }
}

impl WireParser for Parser {
    fn event(&mut self, event: &str, data: &str, text: &Sender<String>) -> Result<bool, ProviderError> {
        if data.trim().is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| fail(ErrorKind::Malformed, format!("{}: a stream event is not JSON ({e}): {}", self.provider, snippet(data))))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        match kind {
            "message_start" => {
                let m = &v["message"];
                self.model = m.get("model").and_then(Value::as_str).map(str::to_string);
                self.usage.input_tokens = m["usage"].get("input_tokens").and_then(Value::as_u64).unwrap_or(0);
                self.usage.output_tokens = m["usage"].get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
            }
            "content_block_start" => {
                let i = v.get("index").and_then(Value::as_u64).unwrap_or(self.blocks.len() as u64) as usize;
                let b = &v["content_block"];
                let block = match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = b.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                            self.content.push_str(t);
                            let _ = text.send(t.to_string());
                        }
                        Block::Text
                    }
                    Some("tool_use") => Block::Tool {
                        id: b.get("id").and_then(Value::as_str).unwrap_or("").to_string(),
                        name: b.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                while self.blocks.len() <= i {
                    self.blocks.push(Block::Other);
                }
                self.blocks[i] = block;
            }
            "content_block_delta" => {
                let i = v.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                let d = &v["delta"];
                match (d.get("type").and_then(Value::as_str), self.blocks.get_mut(i)) {
                    (Some("text_delta"), _) => {
                        if let Some(t) = d.get("text").and_then(Value::as_str) {
                            self.content.push_str(t);
                            let _ = text.send(t.to_string());
                        }
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(d.get("partial_json").and_then(Value::as_str).unwrap_or(""));
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let i = v.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                self.close(i)?;
            }
            "message_delta" => {
                if let Some(s) = v["delta"].get("stop_reason").and_then(Value::as_str) {
                    self.stop = Some(s.to_string());
                }
                if let Some(o) = v["usage"].get("output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = o;
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let e = &v["error"];
                let t = e.get("type").and_then(Value::as_str).unwrap_or("error");
                let msg = e.get("message").and_then(Value::as_str).unwrap_or("");
                let kind = match t {
                    "overloaded_error" | "api_error" => ErrorKind::Server,
                    "rate_limit_error" => ErrorKind::RateLimited,
                    "authentication_error" | "permission_error" => ErrorKind::Auth,
                    _ => ErrorKind::BadRequest,
                };
                return Err(fail(kind, format!("{} reported {t} during the answer: {msg}", self.provider)));
            }
            _ => {}
        }
        Ok(false)
    }

    fn whole(&mut self, v: Value, text: &Sender<String>) -> Result<(), ProviderError> {
        if v.get("type").and_then(Value::as_str) == Some("error") {
            return self.event("error", &v.to_string(), text).map(|_| ());
        }
        let blocks = v.get("content").and_then(Value::as_array).ok_or_else(|| {
            fail(ErrorKind::Malformed, format!("{}: the answer has no `content`: {}", self.provider, snippet(&v.to_string())))
        })?;
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                    self.content.push_str(t);
                    if !t.is_empty() {
                        let _ = text.send(t.to_string());
                    }
                }
                Some("tool_use") => self.calls.push(ToolCall {
                    id: b.get("id").and_then(Value::as_str).unwrap_or("").to_string(),
                    name: b.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                    args: b.get("input").cloned().unwrap_or(json!({})),
                }),
                _ => {}
            }
        }
        self.model = v.get("model").and_then(Value::as_str).map(str::to_string);
        self.stop = v.get("stop_reason").and_then(Value::as_str).map(str::to_string);
        self.usage.input_tokens = v["usage"].get("input_tokens").and_then(Value::as_u64).unwrap_or(0);
        self.usage.output_tokens = v["usage"].get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
        Ok(())
    }

    fn finish(mut self: Box<Self>, ended: bool) -> Result<LlmResponse, ProviderError> {
        if !ended && self.stop.is_none() {
            return Err(fail(
                ErrorKind::Malformed,
                format!(
                    "{}: the stream ended before the answer was complete (no message_stop; {} characters received)",
                    self.provider,
                    self.content.len()
                ),
            ));
        }
        for i in 0..self.blocks.len() {
            self.close(i)?;
        }
        let calls = std::mem::take(&mut self.calls);
        Ok(LlmResponse {
            content: if self.content.is_empty() && !calls.is_empty() { None } else { Some(std::mem::take(&mut self.content)) },
            tool_calls: calls,
            usage: self.usage,
            model: self.model.take(),
            finish_reason: self.stop.take(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_arguments_in_messages_terms() {
        let extra = json!({
            "max_completion_tokens": 900, "stop": "END", "reasoning_effort": "medium", "tool_choice": "required",
            "user": "u1", "seed": 3, "presence_penalty": 0.5, "top_k": 40, "stream": false, "system": "x",
            "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object", "required": ["a"]}}},
        });
        let req = LlmRequest {
            node: "n".into(),
            messages: json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]),
            tools: json!([]),
            extra: extra.as_object().unwrap().clone(),
            ..Default::default()
        };
        let b = request_body(&req, "claude-x");
        assert_eq!(b["max_tokens"], 900);
        assert_eq!(b["stop_sequences"], json!(["END"]));
        assert_eq!(b["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
        assert_eq!(b["tool_choice"], json!({"type": "any"}));
        assert_eq!(b["metadata"], json!({"user_id": "u1"}));
        assert_eq!(b["top_k"], 40);
        for k in ["seed", "presence_penalty", "response_format", "stop", "user", "max_completion_tokens"] {
            assert!(b.get(k).is_none(), "{k} is not a Messages argument: {b}");
        }
        assert_eq!(b["stream"], true);
        let system = b["system"].as_str().unwrap();
        assert!(system.starts_with("be brief") && system.contains("\"required\": ["), "{system}");
        let mut both = req.clone();
        both.extra = json!({"thinking": {"type": "enabled", "budget_tokens": 9000}, "reasoning_effort": "low"}).as_object().unwrap().clone();
        assert_eq!(request_body(&both, "c")["thinking"]["budget_tokens"], 9000);
        let plain = LlmRequest { extra: Map::new(), ..req };
        assert_eq!(request_body(&plain, "c")["max_tokens"], MAX_TOKENS);
    }

    #[test]
    fn system_goes_apart_tools_become_blocks_and_turns_alternate() {
        let req = LlmRequest {
            node: "n".into(),
            messages: json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "add 1 and 2"},
                {"role": "assistant", "content": "sure", "tool_calls": [{"id": "t1", "name": "add", "args": {"a": 1, "b": 2}}]},
                {"role": "tool", "tool_call_id": "t1", "content": "3"},
                {"role": "user", "content": "thanks"},
            ]),
            tools: json!([{"name": "add", "description": "adds", "parameters": {"type": "object"}}]),
            ..Default::default()
        };
        let b = request_body(&req, "claude-x");
        assert_eq!(b["system"], "be brief");
        assert_eq!(b["max_tokens"], MAX_TOKENS);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[1]["content"][1], json!({"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}}));
        assert_eq!(m[2]["role"], "user");
        assert_eq!(m[2]["content"][0]["type"], "tool_result");
        assert_eq!(m[2]["content"][1], json!({"type": "text", "text": "thanks"}));
        assert_eq!(b["tools"][0]["input_schema"], json!({"type": "object"}));
    }

    #[test]
    fn a_stream_is_put_back_together() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut p = Box::new(Parser::new("anthropic"));
        let events = [
            r#"{"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":11,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"add."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"tu1","name":"add","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 1,"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"b\": 2}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
        ];
        for e in events {
            assert!(!p.event("", e, &tx).unwrap());
        }
        assert!(p.event("message_stop", r#"{"type":"message_stop"}"#, &tx).unwrap());
        let r = p.finish(true).unwrap();
        assert_eq!(r.content.as_deref(), Some("Let me add."));
        assert_eq!(r.tool_calls, vec![ToolCall { id: "tu1".into(), name: "add".into(), args: json!({"a": 1, "b": 2}) }]);
        assert_eq!(r.usage, TokenUsage { input_tokens: 11, output_tokens: 9 });
        assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(rx.try_iter().collect::<String>(), "Let me add.");
    }

    #[test]
    fn an_overloaded_error_event_is_a_server_error() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let mut p = Parser::new("anthropic");
        let e = p.event("error", r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#, &tx).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Server);
        assert!(e.message.contains("Overloaded"));
    }
}
