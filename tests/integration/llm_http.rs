//! Live providers against fake servers on 127.0.0.1 that speak the real wire formats
//! (OpenAI chat completions and Anthropic Messages, streamed with SSE): plain answers, tool
//! loops, structured output, streaming events, every failure class with its retry/fallback
//! behaviour, cancellation mid-stream, and record → replay.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use test_support::fake_llm::{FakeLlm, Reply, anthropic_answer, openai_text, openai_tool_call, status};
use switchyard::doc;
use switchyard::llm::LiveProvider;
use switchyard::llm::cassette::{Recorder, Replayer};
use switchyard::llm::config::{LlmConfig, ProviderEntry, ProviderFile};
use switchyard::run::events::{EventBody, RunStatus};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::{BoxProvider, CallCtl, ErrorKind, LlmProvider, LlmRequest, ModelRef};
use switchyard::run::session::{RunOptions, RunSession, Status};
use test_support::TempDir;
use test_support::http::closed_port_url;

fn live(fake: &FakeLlm) -> LiveProvider {
    LiveProvider::new(fake.config("sk-test", 5.0))
}

fn req(model: &str, text: &str) -> LlmRequest {
    LlmRequest {
        node: "agent".into(),
        messages: json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]),
        tools: json!([]),
        model: Some(ModelRef::parse(model)),
        ..Default::default()
    }
}

// ---- the provider alone ------------------------------------------------------------------------

#[test]
fn openai_plain_answer_streams_text_and_reports_usage() {
    let fake = FakeLlm::start();
    fake.push(openai_text(&["Hel", "lo ", "world"], Duration::from_millis(15)));
    let p = live(&fake);
    let pieces = std::sync::Mutex::new(Vec::<(String, Instant)>::new());
    let on_text = |t: &str| pieces.lock().unwrap().push((t.to_string(), Instant::now()));
    let ctl = CallCtl { on_text: &on_text, ..CallCtl::none() };
    let r = p.complete(&req("openai:gpt-4o-mini", "hi"), &ctl).unwrap();
    assert_eq!(r.content.as_deref(), Some("Hello world"));
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (12, 3));
    assert_eq!(r.model.as_deref(), Some("fake-gpt"));
    let pieces = pieces.into_inner().unwrap();
    assert_eq!(pieces.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(), ["Hel", "lo ", "world"]);
    // They arrived as they were sent, not all at the end.
    assert!(pieces[2].1 - pieces[0].1 >= Duration::from_millis(20), "text streamed in over time");
    // The wire request: model, messages, auth header, streaming with usage.
    let sent = &fake.requests()[0];
    assert_eq!(sent["model"], "gpt-4o-mini");
    assert_eq!(sent["messages"][0], json!({"role": "system", "content": "be brief"}));
    assert_eq!(sent["stream"], true);
    assert_eq!(fake.headers(0)["authorization"], "Bearer sk-test");
}

#[test]
fn anthropic_answer_with_tool_use() {
    let fake = FakeLlm::start();
    fake.push(anthropic_answer(&["Let me ", "check."], Some(("tu_1", "lookup", json!({"q": "rust"})))));
    let p = live(&fake);
    let mut r = req("anthropic:claude-3-5-haiku", "look up rust");
    r.tools = json!([{"name": "lookup", "description": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]);
    let out = p.complete(&r, &CallCtl::none()).unwrap();
    assert_eq!(out.content.as_deref(), Some("Let me check."));
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!((out.tool_calls[0].id.as_str(), out.tool_calls[0].name.as_str()), ("tu_1", "lookup"));
    assert_eq!(out.tool_calls[0].args, json!({"q": "rust"}));
    let sent = &fake.requests()[0];
    assert_eq!(sent["system"], "be brief");
    assert_eq!(sent["tools"][0]["input_schema"]["properties"]["q"]["type"], "string");
    let h = fake.headers(0);
    assert_eq!(h["x-api-key"], "sk-test");
    assert_eq!(h["anthropic-version"], "2023-06-01");
}

#[test]
fn failure_classes() {
    let fake = FakeLlm::start();
    let p = LiveProvider::new(fake.config("sk-test", 0.5));
    let cases: Vec<(Reply, ErrorKind, &str)> = vec![
        (
            Reply::Status {
                code: 429,
                body: json!({"error": {"message": "Rate limit reached for requests"}}).to_string(),
                headers: vec![("retry-after".into(), "3".into())],
            },
            ErrorKind::RateLimited,
            "Rate limit reached",
        ),
        (status(503, json!({"error": {"message": "upstream overloaded"}})), ErrorKind::Server, "HTTP 503"),
        (status(401, json!({"error": {"message": "Incorrect API key provided"}})), ErrorKind::Auth, "Incorrect API key"),
        (status(400, json!({"error": {"message": "model not found"}})), ErrorKind::BadRequest, "model not found"),
        (Reply::Garbage, ErrorKind::Malformed, "not JSON"),
        (
            Reply::SseThenReset { events: vec![(None, json!({"choices": [{"index": 0, "delta": {"content": "par"}}]}).to_string())] },
            ErrorKind::Connection,
            "broke during the answer",
        ),
        (Reply::Stall, ErrorKind::Timeout, "no complete answer within 0.5 s"),
    ];
    for (reply, kind, text) in cases {
        fake.push(reply);
        let t0 = Instant::now();
        let e = p.complete(&req("openai:gpt-4o", "hi"), &CallCtl::none()).unwrap_err();
        assert_eq!(e.kind, kind, "{e}");
        assert!(e.message.contains(text), "expected `{text}` in: {}", e.message);
        assert!(e.message.contains("agent"), "the node is named: {}", e.message);
        assert!(t0.elapsed() < Duration::from_secs(3), "{kind:?} took {:?}", t0.elapsed());
        if kind == ErrorKind::RateLimited {
            assert_eq!(e.retry_after, Some(Duration::from_secs(3)));
        }
        assert_eq!(e.kind.transient(), matches!(kind, ErrorKind::RateLimited | ErrorKind::Server | ErrorKind::Malformed | ErrorKind::Connection | ErrorKind::Timeout));
    }
    // A truncated stream (closed cleanly but without an end) is malformed.
    fake.push(Reply::Sse { events: vec![(None, json!({"choices": [{"index": 0, "delta": {"content": "half"}}]}).to_string())], delay: Duration::ZERO });
    let e = p.complete(&req("openai:gpt-4o", "hi"), &CallCtl::none()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert!(e.message.contains("ended before the answer was complete"), "{}", e.message);
    // Nothing listening: connection refused, named with the address.
    let closed = closed_port_url();
    let mut providers = BTreeMap::new();
    providers.insert(
        "openai".to_string(),
        ProviderEntry { base_url: Some(format!("{closed}/v1")), api_key: Some("k".into()), ..Default::default() },
    );
    let gone = LiveProvider::new(LlmConfig::new(ProviderFile { default_model: None, providers }, BTreeMap::new()));
    let e = gone.complete(&req("openai:gpt-4o", "hi"), &CallCtl::none()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Connection);
    assert!(e.message.contains(closed.trim_start_matches("http://")), "{}", e.message);
}

#[test]
fn a_stop_cancels_the_request_mid_stream() {
    let fake = FakeLlm::start();
    fake.push(Reply::SseThenStall { events: vec![(None, json!({"choices": [{"index": 0, "delta": {"content": "thinking"}}]}).to_string())] });
    let p = live(&fake);
    let stop = Arc::new(AtomicBool::new(false));
    let got_text = AtomicBool::new(false);
    let s2 = stop.clone();
    let on_text = |_: &str| {
        got_text.store(true, Ordering::SeqCst);
        // The first text arrived: stop the run now, mid-stream.
        s2.store(true, Ordering::SeqCst);
    };
    let ctl = CallCtl { stop: &stop, on_text: &on_text, ..CallCtl::none() };
    let t0 = Instant::now();
    let e = p.complete(&req("openai:gpt-4o", "hi"), &ctl).unwrap_err();
    assert!(got_text.load(Ordering::SeqCst));
    assert_eq!(e.kind, ErrorKind::Cancelled);
    assert!(t0.elapsed() < Duration::from_secs(1), "cancelled at once, took {:?}", t0.elapsed());
}

#[test]
fn a_missing_key_is_reported_before_the_run_names_the_variable() {
    let c = LlmConfig::new(ProviderFile::default(), BTreeMap::new());
    let p = LiveProvider::new(c);
    let d = doc::load_path(Path::new("agents/sherma/support-triage/agent.yaml"));
    let models = switchyard::llm::models_used(&d);
    if models.iter().all(|(m, _)| m.provider != "openai") {
        return;
    }
    let e = p.preflight(&models).unwrap_err();
    assert!(e.contains("OPENAI_API_KEY"), "{e}");
}

// ---- runs through the engine -------------------------------------------------------------------

const SHERMA_AGENT: &str = r#"
manifest_version: 1
llms:
  - id: gpt
    provider: openai
    model_name: gpt-4o-mini
default_llm: {id: gpt}
agents:
  a:
    state:
      fields:
        - {name: messages, type: list, default: []}
        - {name: verdict, type: str, default: ""}
    graph:
      entry_point: ask
      nodes:
        - name: ask
          type: call_llm
          args:
            prompt:
              - {role: system, content: '"You triage."'}
              - {role: messages, content: state.messages}
            state_updates:
              messages: '[llm_response]'
          on_error:
            retry: {max_attempts: 3, strategy: fixed, delay: 0.01}
            fallback: apologise
        - name: apologise
          type: set_state
          args:
            values:
              verdict: '"fallback"'
      edges:
        - {source: ask, target: __end__}
        - {source: apologise, target: __end__}
"#;

fn sherma_session(dir: &Path, provider: BoxProvider) -> RunSession {
    let f = dir.join("agent.yaml");
    std::fs::write(&f, SHERMA_AGENT).unwrap();
    let d = Arc::new(doc::load_path(&f));
    let req = RunRequest { input: Some("my printer is on fire".into()), ..Default::default() };
    launch::session(d, &req, RunOptions::new(provider)).unwrap_or_else(|e| panic!("{e}"))
}

fn finished(s: &mut RunSession) -> (RunStatus, Value) {
    match s.run().clone() {
        Status::Finished { status, .. } => (status, s.state()),
        other => panic!("not finished: {other:?}"),
    }
}

#[test]
fn sherma_retries_transient_failures_then_succeeds() {
    let fake = FakeLlm::start();
    fake.push(status(503, json!({"error": {"message": "busy"}})));
    fake.push(Reply::Status { code: 429, body: "{}".into(), headers: vec![("retry-after-ms".into(), "50".into())] });
    fake.push(openai_text(&["Call the fire brigade."], Duration::ZERO));
    let dir = TempDir::new("llm-http-sherma-retry");
    let mut s = sherma_session(&dir, Box::new(live(&fake)));
    let t0 = Instant::now();
    let (st, state) = finished(&mut s);
    assert_eq!(st, RunStatus::Completed);
    assert!(t0.elapsed() >= Duration::from_millis(50), "Retry-After was honoured");
    assert_eq!(state["messages"].as_array().unwrap().last().unwrap()["content"], "Call the fire brigade.");
    assert_eq!(fake.requests().len(), 3);
    let kinds: Vec<ErrorKind> = s
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::LlmError { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [ErrorKind::Server, ErrorKind::RateLimited]);
    // Streaming text reached the event log; the response event has latency and tokens.
    assert!(s.events().iter().any(|e| matches!(&e.body, EventBody::LlmDelta { text, .. } if text.contains("fire brigade"))));
    assert!(s.events().iter().any(|e| matches!(&e.body, EventBody::LlmResponse { duration_ms: Some(_), usage, cost_usd: Some(_), .. } if usage.input_tokens == 12)));
}

#[test]
fn sherma_does_not_retry_a_bad_key_and_takes_the_fallback() {
    let fake = FakeLlm::start();
    fake.push(status(401, json!({"error": {"message": "Incorrect API key provided"}})));
    let dir = TempDir::new("llm-http-sherma-auth");
    let mut s = sherma_session(&dir, Box::new(live(&fake)));
    let (st, state) = finished(&mut s);
    assert_eq!(st, RunStatus::Completed);
    assert_eq!(state["verdict"], "fallback");
    assert_eq!(fake.requests().len(), 1, "an auth failure is not retried");
    let err = state["__sherma__"]["last_error"].to_string();
    assert!(err.contains("Incorrect API key"), "{err}");
}

#[test]
fn structured_output_is_sent_as_a_json_schema() {
    let fake = FakeLlm::start();
    fake.push(openai_text(&["{\"severity\": ", "\"high\"}"], Duration::ZERO));
    let p = live(&fake);
    let mut r = req("openai:gpt-4o", "classify");
    r.response_format = Some(json!({"name": "Triage", "schema": {"type": "object", "properties": {"severity": {"type": "string"}}}}));
    let out = p.complete(&r, &CallCtl::none()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(out.content.as_deref().unwrap()).unwrap(), json!({"severity": "high"}));
    let sent = &fake.requests()[0];
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["name"], "Triage");
}

const LOKI_GRAPH: &str = r#"
version: "1.0"
name: helper
model: openai:gpt-4o-mini
start: answer
nodes:
  answer:
    type: llm
    prompt: "{{initial_prompt}}"
    tools: [add]
    max_attempts: 2
    state_updates:
      reply: "{{output}}"
    next: done
  done:
    type: end
"#;

const LOKI_TOOLS: &str = r#"
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
"#;

fn loki_session(dir: &Path, provider: BoxProvider) -> RunSession {
    std::fs::write(dir.join("graph.yaml"), LOKI_GRAPH).unwrap();
    std::fs::write(dir.join("tools.py"), LOKI_TOOLS).unwrap();
    let d = Arc::new(doc::load_path(dir));
    let req = RunRequest { input: Some("what is 2 + 3?".into()), ..Default::default() };
    launch::session(d, &req, RunOptions::new(provider)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn loki_tool_loop_against_the_fake_server_then_record_and_replay_offline() {
    let fake = FakeLlm::start();
    // A 5xx first (Loki retries the whole loop), then the tool loop.
    fake.push(status(502, json!({"error": {"message": "bad gateway"}})));
    fake.push(openai_tool_call("call_1", "add", json!({"a": 2, "b": 3})));
    fake.push(openai_text(&["It is ", "5."], Duration::ZERO));
    let dir = TempDir::new("llm-http-loki-rr");
    let cassette = dir.join("run.cassette.json");
    let mut s = loki_session(&dir, Box::new(Recorder::new(Box::new(live(&fake)), &cassette)));
    let (st, state) = finished(&mut s);
    assert_eq!(st, RunStatus::Completed, "{:?}", s.events().iter().filter(|e| matches!(e.body, EventBody::Error { .. })).collect::<Vec<_>>());
    assert_eq!(state["reply"], "It is 5.");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    // The tool result went back to the model in OpenAI's format.
    let last = reqs[2]["messages"].as_array().unwrap();
    assert_eq!(last[last.len() - 1]["role"], "tool");
    assert_eq!(last[last.len() - 1]["content"], "5");
    assert_eq!(last[last.len() - 2]["tool_calls"][0]["function"]["name"], "add");
    let recorded: Vec<Value> = s.events().iter().map(|e| comparable(&e.to_value())).collect();
    fake.stop();

    // Replay with the server gone (and Python not needed: the tool result is recorded too).
    std::fs::write(dir.join("tools.py"), "raise SystemExit('the tool must not run in a replay')\n").unwrap();
    let mut r = loki_session(&dir, Box::new(Replayer::load(&cassette, true).unwrap()));
    let (st2, state2) = finished(&mut r);
    assert_eq!(st2, RunStatus::Completed);
    assert_eq!(state2, state);
    let replayed: Vec<Value> = r.events().iter().map(|e| comparable(&e.to_value())).collect();
    assert_eq!(replayed, recorded, "the replay gives the same trace");

    // Edit the prompt: the replay still runs, and reports where it diverges.
    std::fs::write(dir.join("graph.yaml"), LOKI_GRAPH.replace("\"{{initial_prompt}}\"", "\"Please: {{initial_prompt}}\"")).unwrap();
    let d = Arc::new(doc::load_path(&dir));
    let req = RunRequest { input: Some("what is 2 + 3?".into()), ..Default::default() };
    let mut e = launch::session(d, &req, RunOptions::new(Box::new(Replayer::load(&cassette, false).unwrap()))).unwrap();
    let _ = e.run();
    let div: Vec<(String, usize, String)> = e
        .events()
        .iter()
        .filter_map(|ev| match &ev.body {
            EventBody::ReplayDiverged { node, call, path, .. } => Some((node.clone(), *call, path.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(div, [("answer".to_string(), 1, "messages[0].content".to_string())]);
}

/// An event without what changes from run to run (times, durations, run ids).
fn comparable(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "ts_ms" | "duration_ms" | "run"))
                .map(|(k, v)| (k.clone(), comparable(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(comparable).collect()),
        other => other.clone(),
    }
}
