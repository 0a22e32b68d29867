//! A fake LLM server on 127.0.0.1 speaking the OpenAI chat-completions and Anthropic Messages
//! wire formats, with real server-sent events dripped out with delays. Each request takes the
//! next scripted [`Reply`]; every request body is kept for the test to inspect.
//!
//! It also answers OpenAI `POST /v1/embeddings` with deterministic vectors ([`fake_embedding`]:
//! a hashed bag of words, with a few synonyms folded together so that vector search can find
//! what keyword search cannot), unless an embeddings reply is queued ([`FakeLlm::push_embedding`]).
//!
//! [`FakeLlm::config`] is the live-provider configuration that sends `openai:*` and
//! `anthropic:*` models to it.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use connect::llm::config::{LlmConfig, ProviderEntry, ProviderFile, Wire};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Server-sent events `(event name, data)`, `delay` before each.
    Sse { events: Vec<(Option<String>, String)>, delay: Duration },
    /// Some events, then the connection is cut (no end marker).
    SseThenReset { events: Vec<(Option<String>, String)> },
    /// Some events, then nothing more, ever.
    SseThenStall { events: Vec<(Option<String>, String)> },
    /// A whole response.
    Status { code: u16, body: String, headers: Vec<(String, String)> },
    /// Headers are never sent.
    Stall,
    /// 200 with a body that is not JSON.
    Garbage,
    /// An OpenAI answer with this text, streamed or whole as the request asks (`stream`).
    Text(String),
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<(HeaderMap, Value)>>,
    latency: Mutex<Duration>,
    /// Taken when no reply is queued.
    default: Mutex<Option<Reply>>,
    /// Keep request bodies (off for benchmarks).
    keep: Mutex<bool>,
    /// Replies for `/v1/embeddings` taken before computed vectors are sent.
    embed_replies: Mutex<VecDeque<Reply>>,
    embed_requests: Mutex<Vec<(HeaderMap, Value)>>,
}

/// The fake server: started by [`FakeLlm::start`], stopped when dropped (or by [`FakeLlm::stop`]).
pub struct FakeLlm {
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeLlm {
    /// Starts a server on 127.0.0.1 (a free port) on a thread of its own, with no reply queued.
    pub fn start() -> FakeLlm {
        let shared = Arc::new(Shared { keep: Mutex::new(true), ..Shared::default() });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let s2 = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let app = Router::new()
                    .route("/v1/chat/completions", post(handle))
                    .route("/v1/messages", post(handle))
                    .route("/v1/embeddings", post(embeddings))
                    .with_state(s2);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                // No Nagle delay on the server's writes (a real provider's edge does the same).
                use axum::serve::ListenerExt;
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop_rx.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx.recv().unwrap();
        FakeLlm { addr, shared, shutdown: Some(stop_tx), thread: Some(thread) }
    }

    /// The OpenAI base URL (`http://127.0.0.1:<port>/v1`).
    pub fn base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A live-provider configuration with the providers `openai` (at [`FakeLlm::base`]) and
    /// `anthropic` (at `http://<addr>`), both with API key `key` and a `timeout_s` per call.
    pub fn config(&self, key: &str, timeout_s: f64) -> LlmConfig {
        let mut providers = BTreeMap::new();
        for (name, wire) in [("openai", Wire::Openai), ("anthropic", Wire::Anthropic)] {
            let base = if wire == Wire::Anthropic { format!("http://{}", self.addr) } else { self.base() };
            providers.insert(
                name.to_string(),
                ProviderEntry { wire: Some(wire), base_url: Some(base), api_key: Some(key.into()), timeout_s: Some(timeout_s), ..Default::default() },
            );
        }
        LlmConfig::new(ProviderFile { default_model: None, providers }, BTreeMap::new())
    }

    /// Queues the reply to the next request.
    pub fn push(&self, r: Reply) -> &Self {
        self.shared.replies.lock().unwrap().push_back(r);
        self
    }

    /// The reply for every request when none is queued.
    pub fn set_default(&self, r: Reply) {
        *self.shared.default.lock().unwrap() = Some(r);
    }

    /// Stop keeping request bodies (long benchmarks).
    pub fn forget_requests(&self) {
        *self.shared.keep.lock().unwrap() = false;
    }

    /// A fixed delay before every answer (the "model latency").
    pub fn set_latency(&self, d: Duration) {
        *self.shared.latency.lock().unwrap() = d;
    }

    /// The bodies of the chat requests so far.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().unwrap().iter().map(|(_, b)| b.clone()).collect()
    }

    /// The headers of the `i`-th chat request.
    pub fn headers(&self, i: usize) -> HeaderMap {
        self.shared.requests.lock().unwrap()[i].0.clone()
    }

    /// Answer the next embeddings request with `r` instead of computed vectors.
    pub fn push_embedding(&self, r: Reply) -> &Self {
        self.shared.embed_replies.lock().unwrap().push_back(r);
        self
    }

    /// The bodies of the embeddings requests so far.
    pub fn embedding_requests(&self) -> Vec<Value> {
        self.shared.embed_requests.lock().unwrap().iter().map(|(_, b)| b.clone()).collect()
    }

    /// The headers of the `i`-th embeddings request.
    pub fn embedding_headers(&self, i: usize) -> HeaderMap {
        self.shared.embed_requests.lock().unwrap()[i].0.clone()
    }

    /// Stop the server and wait until its port is closed.
    pub fn stop(mut self) {
        self.shutdown_now();
    }

    fn shutdown_now(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        // Stalled handlers would keep a graceful shutdown waiting: just detach.
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
    }
}

fn sse_bytes(event: &Option<String>, data: &str) -> Bytes {
    let mut s = String::new();
    if let Some(e) = event {
        s.push_str(&format!("event: {e}\n"));
    }
    for line in data.lines() {
        s.push_str(&format!("data: {line}\n"));
    }
    s.push('\n');
    Bytes::from(s)
}

async fn handle(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let streamed = v.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if *shared.keep.lock().unwrap() {
        shared.requests.lock().unwrap().push((headers, v));
    }
    let latency = *shared.latency.lock().unwrap();
    let reply = shared.replies.lock().unwrap().pop_front().or_else(|| shared.default.lock().unwrap().clone());
    let Some(reply) = reply else {
        return Response::builder().status(500).body(Body::from("{\"error\":{\"message\":\"fake server: no reply scripted\"}}")).unwrap();
    };
    if !latency.is_zero() {
        // A thread sleep is precise to well under a millisecond; tokio's timer rounds up to
        // the next millisecond tick, which would make the "physical limit" a lie.
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(latency)).await;
    }
    let sse = |body: Body| Response::builder().status(200).header("content-type", "text/event-stream").body(body).unwrap();
    match reply {
        Reply::Sse { events, delay } => {
            let stream = futures_util::stream::unfold(events.into_iter(), move |mut it| async move {
                let (e, d) = it.next()?;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Some((Ok::<Bytes, std::io::Error>(sse_bytes(&e, &d)), it))
            });
            sse(Body::from_stream(stream))
        }
        Reply::SseThenReset { events } => {
            let items: Vec<Result<Bytes, std::io::Error>> = events
                .iter()
                .map(|(e, d)| Ok(sse_bytes(e, d)))
                .chain(std::iter::once(Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut"))))
                .collect();
            let stream = futures_util::stream::unfold(items.into_iter(), |mut it| async move {
                let item = it.next()?;
                tokio::time::sleep(Duration::from_millis(5)).await;
                Some((item, it))
            });
            sse(Body::from_stream(stream))
        }
        Reply::SseThenStall { events } => {
            let stream = futures_util::stream::unfold((events.into_iter(), false), |(mut it, _)| async move {
                match it.next() {
                    Some((e, d)) => Some((Ok::<Bytes, std::io::Error>(sse_bytes(&e, &d)), (it, false))),
                    None => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        None
                    }
                }
            });
            sse(Body::from_stream(stream))
        }
        Reply::Status { code, body, headers } => {
            let mut b = Response::builder().status(StatusCode::from_u16(code).unwrap()).header("content-type", "application/json");
            for (k, v) in headers {
                b = b.header(k, v);
            }
            b.body(Body::from(body)).unwrap()
        }
        Reply::Stall => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Response::new(Body::empty())
        }
        Reply::Text(t) if streamed => {
            let events = [
                json!({"id": "c1", "object": "chat.completion.chunk", "model": "fake-gpt", "choices": [{"index": 0, "delta": {"role": "assistant", "content": t}}]}),
                json!({"id": "c1", "object": "chat.completion.chunk", "model": "fake-gpt", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}),
            ];
            let mut body = String::new();
            for e in events {
                body.push_str(&format!("data: {e}\n\n"));
            }
            body.push_str("data: [DONE]\n\n");
            sse(Body::from(body))
        }
        Reply::Text(t) => {
            let v = json!({
                "id": "c1", "object": "chat.completion", "created": 0, "model": "fake-gpt",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
            });
            Response::builder().status(200).header("content-type", "application/json").body(Body::from(v.to_string())).unwrap()
        }
        Reply::Garbage => Response::builder().status(200).header("content-type", "application/json").body(Body::from("<html>oops")).unwrap(),
    }
}

/// Words the fake embedding model treats as one (a stand-in for semantic similarity).
const SYNONYMS: &[(&str, &str)] = &[("automobile", "car"), ("automobiles", "car"), ("cars", "car"), ("vehicle", "car")];

/// Dimensions of [`fake_embedding`].
pub const FAKE_DIMS: usize = 1024;

/// The fake model's vector of `text`: each lower-case word (synonyms folded) adds 1 to the
/// dimension its FNV-1a hash picks.
pub fn fake_embedding(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; FAKE_DIMS];
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let w = w.to_lowercase();
        let w = SYNONYMS.iter().find(|(a, _)| *a == w).map(|(_, b)| b.to_string()).unwrap_or(w);
        let mut h: u64 = 0xcbf29ce484222325;
        for b in w.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        v[(h % FAKE_DIMS as u64) as usize] += 1.0;
    }
    v
}

async fn embeddings(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.embed_requests.lock().unwrap().push((headers, v.clone()));
    let queued = shared.embed_replies.lock().unwrap().pop_front();
    match queued {
        Some(Reply::Status { code, body, headers }) => {
            let mut b = Response::builder().status(StatusCode::from_u16(code).unwrap()).header("content-type", "application/json");
            for (k, v) in headers {
                b = b.header(k, v);
            }
            return b.body(Body::from(body)).unwrap();
        }
        Some(Reply::Stall) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return Response::new(Body::empty());
        }
        Some(Reply::Garbage) => {
            return Response::builder().status(200).header("content-type", "application/json").body(Body::from("<html>oops")).unwrap();
        }
        _ => {}
    }
    let inputs: Vec<String> = match &v["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect(),
        _ => return Response::builder().status(400).body(Body::from("{\"error\":{\"message\":\"`input` must be a string or a list\"}}")).unwrap(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake_embedding(t)}))
        .collect();
    let out = json!({"object": "list", "data": data, "model": v["model"], "usage": {"prompt_tokens": inputs.len(), "total_tokens": inputs.len()}});
    Response::builder().status(200).header("content-type", "application/json").body(Body::from(out.to_string())).unwrap()
}

// ---- reply builders -------------------------------------------------------------------------

fn ev(data: Value) -> (Option<String>, String) {
    (None, data.to_string())
}

/// An OpenAI streamed answer: `text` in pieces, then optional tool calls, usage and `[DONE]`.
pub fn openai_text(pieces: &[&str], delay: Duration) -> Reply {
    let mut events: Vec<(Option<String>, String)> = pieces
        .iter()
        .map(|p| ev(json!({"id": "c1", "object": "chat.completion.chunk", "model": "fake-gpt", "choices": [{"index": 0, "delta": {"content": p}}]})))
        .collect();
    events.push(ev(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})));
    events.push(ev(json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": pieces.len()}})));
    events.push((None, "[DONE]".into()));
    Reply::Sse { events, delay }
}

/// An OpenAI streamed tool call (arguments split in two fragments).
pub fn openai_tool_call(id: &str, name: &str, args: Value) -> Reply {
    let a = args.to_string();
    let (x, y) = a.split_at(a.len() / 2);
    let events = vec![
        ev(json!({"model": "fake-gpt", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": x}}]}}]})),
        ev(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": y}}]}, "finish_reason": "tool_calls"}]})),
        ev(json!({"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}})),
        (None, "[DONE]".into()),
    ];
    Reply::Sse { events, delay: Duration::ZERO }
}

/// An Anthropic streamed answer with `text` and optional tool use.
pub fn anthropic_answer(pieces: &[&str], tool: Option<(&str, &str, Value)>) -> Reply {
    let mut events = vec![
        (Some("message_start".into()), json!({"type": "message_start", "message": {"model": "fake-claude", "usage": {"input_tokens": 15, "output_tokens": 1}}}).to_string()),
        (Some("content_block_start".into()), json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}).to_string()),
    ];
    for p in pieces {
        events.push((Some("content_block_delta".into()), json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}).to_string()));
    }
    events.push((Some("content_block_stop".into()), json!({"type": "content_block_stop", "index": 0}).to_string()));
    let stop = if let Some((id, name, input)) = &tool {
        events.push((Some("content_block_start".into()), json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}).to_string()));
        events.push((Some("content_block_delta".into()), json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}).to_string()));
        events.push((Some("content_block_stop".into()), json!({"type": "content_block_stop", "index": 1}).to_string()));
        "tool_use"
    } else {
        "end_turn"
    };
    events.push((Some("message_delta".into()), json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 7}}).to_string()));
    events.push((Some("message_stop".into()), json!({"type": "message_stop"}).to_string()));
    Reply::Sse { events, delay: Duration::ZERO }
}

/// A whole JSON response with this status.
pub fn status(code: u16, body: Value) -> Reply {
    Reply::Status { code, body: body.to_string(), headers: Vec::new() }
}
