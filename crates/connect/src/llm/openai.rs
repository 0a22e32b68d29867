//! OpenAI chat completions (`POST {base}/chat/completions`), streamed: the wire format of
//! OpenAI and of every server that imitates it (Ollama, vLLM, llama.cpp, OpenRouter, Groq).

use super::http::{WireParser, fail, snippet};
use runtime::provider::{ErrorKind, LlmRequest, LlmResponse, ProviderError, TokenUsage, ToolCall};
use serde_json::{Map, Value, json};
use std::sync::mpsc::Sender;

/// Body keys the wire format sets itself: `LlmRequest::extra` does not replace them.
pub const OWNED: [&str; 5] = ["model", "messages", "tools", "stream", "stream_options"];

/// The request body for `req`, asking for a stream with usage at the end; `req.extra`'s model
/// arguments are added as written (`max_tokens`, `stop`, `seed`, `reasoning_effort`, …).
pub fn request_body(req: &LlmRequest, model: &str) -> Value {
    let messages: Vec<Value> = req.messages.as_array().map(|m| m.iter().map(message).collect()).unwrap_or_default();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    if let Some(tools) = req.tools.as_array().filter(|t| !t.is_empty()) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                let (name, description, parameters) = super::tool_parts(t);
                json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    super::put_sampling(req, &mut body);
    if let Some(rf) = &req.response_format {
        let name: String = rf
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("response")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect();
        let mut js = json!({"name": if name.is_empty() { "response".to_string() } else { name }, "schema": rf.get("schema").cloned().unwrap_or(json!({"type": "object"}))});
        if let Some(d) = rf.get("description").and_then(Value::as_str).filter(|d| !d.is_empty()) {
            js["description"] = json!(d);
        }
        body.insert("response_format".into(), json!({"type": "json_schema", "json_schema": js}));
    }
    // Further model arguments as written, except what the wire format sets itself.
    for (k, v) in &req.extra {
        if !OWNED.contains(&k.as_str()) && !body.contains_key(k) {
            body.insert(k.clone(), v.clone());
        }
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

/// One message of our wire format in OpenAI's: tool calls become `function` calls with their
/// arguments as a JSON string; content that is not text is sent as JSON text.
fn message(m: &Value) -> Value {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
    let content = match m.get("content") {
        Some(Value::String(s)) => json!(s),
        Some(Value::Null) | None => Value::Null,
        Some(Value::Array(parts)) if parts.iter().all(|p| p.get("type").is_some()) => Value::Array(parts.clone()),
        Some(other) => json!(other.to_string()),
    };
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    match role {
        "assistant" => {
            let calls: Vec<Value> = m
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| {
                            let args = c.get("args").cloned().unwrap_or(json!({}));
                            json!({"id": c.get("id").cloned().unwrap_or(json!("")), "type": "function", "function": {
                                "name": c.get("name").cloned().unwrap_or(json!("")),
                                "arguments": if let Value::String(s) = &args { s.clone() } else { args.to_string() },
                            }})
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.insert("content".into(), if content.as_str() == Some("") && !calls.is_empty() { Value::Null } else { content });
            if !calls.is_empty() {
                out.insert("tool_calls".into(), Value::Array(calls));
            }
        }
        "tool" => {
            out.insert("tool_call_id".into(), m.get("tool_call_id").cloned().unwrap_or(json!("")));
            out.insert("content".into(), if content.is_null() { json!("") } else { content });
        }
        _ => {
            out.insert("content".into(), if content.is_null() { json!("") } else { content });
        }
    }
    Value::Object(out)
}

/// Puts a streamed (or whole) chat completion back together.
#[derive(Default)]
pub struct Parser {
    content: String,
    /// Tool calls by their stream index: (id, name, argument text).
    calls: Vec<(String, String, String)>,
    usage: TokenUsage,
    model: Option<String>,
    finish: Option<String>,
    provider: String,
}

impl Parser {
    pub fn new(provider: &str) -> Parser {
        Parser { provider: provider.to_string(), ..Parser::default() }
    }

    fn usage_from(&mut self, v: &Value) {
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage.input_tokens = u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(self.usage.input_tokens);
            self.usage.output_tokens = u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(self.usage.output_tokens);
        }
        if let Some(m) = v.get("model").and_then(Value::as_str) {
            self.model = Some(m.to_string());
        }
    }

    fn in_band_error(&self, v: &Value) -> Option<ProviderError> {
        let e = v.get("error")?;
        let msg = e.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| e.to_string());
        let code = e.get("code").map(|c| c.to_string()).unwrap_or_default();
        let kind = if code.contains("429") || msg.to_ascii_lowercase().contains("rate limit") { ErrorKind::RateLimited } else { ErrorKind::Server };
        Some(fail(kind, format!("{} reported an error during the answer: {msg}", self.provider)))
    }
}

impl WireParser for Parser {
    fn event(&mut self, _event: &str, data: &str, text: &Sender<String>) -> Result<bool, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            fail(ErrorKind::Malformed, format!("{}: a stream chunk is not JSON ({e}): {}", self.provider, snippet(data)))
        })?;
        if let Some(e) = self.in_band_error(&v) {
            return Err(e);
        }
        self.usage_from(&v);
        let Some(choice) = v.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else { return Ok(false) };
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(f.to_string());
        }
        let Some(delta) = choice.get("delta") else { return Ok(false) };
        if let Some(t) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.content.push_str(t);
            let _ = text.send(t.to_string());
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for c in calls {
                let i = c.get("index").and_then(Value::as_u64).unwrap_or(self.calls.len().saturating_sub(1) as u64) as usize;
                while self.calls.len() <= i {
                    self.calls.push(Default::default());
                }
                let slot = &mut self.calls[i];
                if let Some(id) = c.get("id").and_then(Value::as_str) {
                    slot.0 = id.to_string();
                }
                if let Some(f) = c.get("function") {
                    if let Some(n) = f.get("name").and_then(Value::as_str) {
                        slot.1.push_str(n);
                    }
                    if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                        slot.2.push_str(a);
                    }
                }
            }
        }
        Ok(false)
    }

    fn whole(&mut self, v: Value, text: &Sender<String>) -> Result<(), ProviderError> {
        if let Some(e) = self.in_band_error(&v) {
            return Err(e);
        }
        self.usage_from(&v);
        let choice = v.get("choices").and_then(Value::as_array).and_then(|c| c.first()).ok_or_else(|| {
            fail(ErrorKind::Malformed, format!("{}: the answer has no `choices`: {}", self.provider, snippet(&v.to_string())))
        })?;
        self.finish = choice.get("finish_reason").and_then(Value::as_str).map(str::to_string);
        let msg = choice.get("message").cloned().unwrap_or(Value::Null);
        if let Some(t) = msg.get("content").and_then(Value::as_str) {
            self.content = t.to_string();
            if !t.is_empty() {
                let _ = text.send(t.to_string());
            }
        }
        for c in msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let f = c.get("function").cloned().unwrap_or(Value::Null);
            self.calls.push((
                c.get("id").and_then(Value::as_str).unwrap_or("").to_string(),
                f.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                match f.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                },
            ));
        }
        Ok(())
    }

    fn finish(self: Box<Self>, ended: bool) -> Result<LlmResponse, ProviderError> {
        if !ended && self.finish.is_none() {
            return Err(fail(
                ErrorKind::Malformed,
                format!(
                    "{}: the stream ended before the answer was complete (no finish_reason, no [DONE]; {} characters received)",
                    self.provider,
                    self.content.len()
                ),
            ));
        }
        let mut tool_calls = Vec::new();
        for (k, (id, name, args)) in self.calls.into_iter().enumerate() {
            let args = if args.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&args).map_err(|e| {
                    fail(
                        ErrorKind::Malformed,
                        format!("{}: the arguments of tool call `{name}` are not JSON ({e}): {}", self.provider, snippet(&args)),
                    )
                })?
            };
            tool_calls.push(ToolCall { id: if id.is_empty() { format!("call_{}", k + 1) } else { id }, name, args });
        }
        Ok(LlmResponse {
            content: if self.content.is_empty() && !tool_calls.is_empty() { None } else { Some(self.content) },
            tool_calls,
            usage: self.usage,
            model: self.model,
            finish_reason: self.finish,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_messages_become_openai_messages() {
        let req = LlmRequest {
            node: "n".into(),
            messages: json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "add", "args": {"a": 1}}]},
                {"role": "tool", "tool_call_id": "c1", "name": "add", "content": "2"},
            ]),
            tools: json!([{"name": "add", "description": "adds", "parameters": {"type": "object"}}]),
            temperature: Some(0.2),
            response_format: Some(json!({"name": "out put", "schema": {"type": "object"}})),
            ..Default::default()
        };
        let b = request_body(&req, "gpt-4o-mini");
        assert_eq!(b["model"], "gpt-4o-mini");
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(b["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
        assert_eq!(b["messages"][3], json!({"role": "tool", "tool_call_id": "c1", "content": "2"}));
        assert_eq!(b["tools"][0]["function"]["name"], "add");
        assert_eq!(b["temperature"], 0.2);
        assert_eq!(b["response_format"]["json_schema"]["name"], "out_put");
        assert_eq!(b["stream"], true);
    }

    #[test]
    fn further_model_arguments_are_sent_as_written() {
        let extra = json!({"max_completion_tokens": 200, "stop": ["END"], "seed": 7, "reasoning_effort": "low", "stream": false, "model": "x", "vendor_knob": {"a": 1}});
        let req = LlmRequest {
            node: "n".into(),
            messages: json!([{"role": "user", "content": "hi"}]),
            tools: json!([]),
            response_format: Some(json!({"name": "r", "schema": {"type": "object"}})),
            extra: extra.as_object().unwrap().clone(),
            ..Default::default()
        };
        let b = request_body(&req, "gpt-4o-mini");
        for k in ["max_completion_tokens", "stop", "seed", "reasoning_effort", "vendor_knob"] {
            assert_eq!(b[k], extra[k], "{k}");
        }
        // What the wire format sets itself stays.
        assert_eq!((b["model"].as_str(), b["stream"].as_bool()), (Some("gpt-4o-mini"), Some(true)));
        let mut rf = req.clone();
        rf.extra.insert("response_format".into(), json!({"type": "json_object"}));
        assert_eq!(request_body(&rf, "m")["response_format"]["type"], "json_schema", "the prompt's format wins");
        rf.response_format = None;
        assert_eq!(request_body(&rf, "m")["response_format"], json!({"type": "json_object"}));
    }

    #[test]
    fn a_stream_with_tool_call_fragments_is_put_back_together() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut p = Box::new(Parser::new("openai"));
        let chunks = [
            r#"{"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"add","arguments":"{\"a\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":2}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#,
        ];
        for c in chunks {
            assert!(!p.event("", c, &tx).unwrap());
        }
        assert!(p.event("", "[DONE]", &tx).unwrap());
        let r = p.finish(true).unwrap();
        assert_eq!(r.content.as_deref(), Some("Hello"));
        assert_eq!(r.tool_calls, vec![ToolCall { id: "call_a".into(), name: "add".into(), args: json!({"a": 2}) }]);
        assert_eq!(r.usage, TokenUsage { input_tokens: 7, output_tokens: 3 });
        assert_eq!(r.model.as_deref(), Some("gpt-x"));
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec!["Hel", "lo"]);
    }

    #[test]
    fn truncated_and_garbage_streams_are_malformed() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let mut p = Box::new(Parser::new("openai"));
        p.event("", r#"{"choices":[{"index":0,"delta":{"content":"par"}}]}"#, &tx).unwrap();
        let e = p.finish(false).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(e.message.contains("ended before the answer was complete"), "{}", e.message);
        let mut p = Box::new(Parser::new("openai"));
        assert_eq!(p.event("", "{not json", &tx).unwrap_err().kind, ErrorKind::Malformed);
    }
}
