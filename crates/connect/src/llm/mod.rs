//! Live LLM providers over HTTP and their configuration (prices and cassettes are in
//! `runtime`: they need no network).
//!
//! - [`LiveProvider`] sends each call to the provider the document names for the node
//!   ([`config`] resolves names to endpoints), in the OpenAI chat-completions or Anthropic
//!   Messages wire format, streamed; text arrives as `llm_delta` events; a stop cancels the
//!   request in flight; failures are classified ([`runtime::provider::ErrorKind`]).

pub mod anthropic;
pub mod config;
pub mod http;
pub mod keyring;
pub mod openai;

use model::doc::{Dialect, Document};
use crate::rt::{self, Interrupted};
use runtime::provider::{CallCtl, ErrorKind, LlmProvider, LlmRequest, LlmResponse, ModelRef, ProviderError};
use config::{LlmConfig, Wire};
use std::time::Instant;

/// A tool as both wire formats take it: (name, description, JSON Schema of the parameters).
fn tool_parts(t: &serde_json::Value) -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    use serde_json::json;
    (
        t.get("name").cloned().unwrap_or(json!("")),
        t.get("description").cloned().unwrap_or(json!("")),
        t.get("parameters").cloned().unwrap_or(json!({"type": "object", "properties": {}})),
    )
}

/// The sampling options a node set (both wire formats name them alike).
fn put_sampling(req: &LlmRequest, body: &mut serde_json::Map<String, serde_json::Value>) {
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), serde_json::json!(t));
    }
    if let Some(p) = req.top_p {
        body.insert("top_p".into(), serde_json::json!(p));
    }
}

/// Calls real models (see the module docs).
pub struct LiveProvider {
    config: LlmConfig,
}

impl LiveProvider {
    pub fn new(config: LlmConfig) -> LiveProvider {
        LiveProvider { config }
    }

    /// Check before a run starts that every model the document names can be called (known
    /// provider, key present). The error lists every problem with where the model is named.
    pub fn preflight(&self, models: &[(ModelRef, String)]) -> Result<(), String> {
        let mut problems = Vec::new();
        for (m, origin) in models {
            if let Err(e) = self.config.check(m) {
                problems.push(format!("{origin}: {e}"));
            }
        }
        if models.is_empty()
            && let Some(m) = self.config.default_model()
            && let Err(e) = self.config.check(&m)
        {
            problems.push(format!("default model: {e}"));
        }
        problems.dedup();
        if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
    }

    fn model_for(&self, req: &LlmRequest) -> Result<ModelRef, ProviderError> {
        req.model.clone().or_else(|| self.config.default_model()).ok_or_else(|| {
            ProviderError::new(&req.node, ErrorKind::Config, format!("node `{}` names no model and no default model is set", req.node))
                .hint("set `model: provider:name` on the node or the agent, or `default_model` in the provider file, or SWITCHYARD_MODEL")
        })
    }
}

impl LlmProvider for LiveProvider {
    fn complete(&self, req: &LlmRequest, ctl: &CallCtl<'_>) -> Result<LlmResponse, ProviderError> {
        let model = self.model_for(req)?;
        let ep = self.config.check(&model).map_err(|e| ProviderError::new(&req.node, ErrorKind::Config, e))?;
        let key = ep.api_key.clone().unwrap_or_default();
        let (url, headers, body, parser): (String, Vec<(&'static str, String)>, _, Box<dyn http::WireParser>) = match ep.wire {
            Wire::Openai => {
                let mut h = Vec::new();
                if !key.is_empty() {
                    h.push(("authorization", format!("Bearer {key}")));
                }
                (
                    format!("{}/chat/completions", ep.base_url),
                    h,
                    openai::request_body(req, &model.name),
                    Box::new(openai::Parser::new(&ep.provider)),
                )
            }
            Wire::Anthropic => {
                let base = ep.base_url.strip_suffix("/v1").unwrap_or(&ep.base_url);
                let mut h = vec![("x-api-key", key), ("anthropic-version", "2023-06-01".to_string())];
                if !req.skills.is_empty() {
                    h.push(("anthropic-beta", "skills-2025-10-02".to_string()));
                }
                (
                    format!("{base}/v1/messages"),
                    h,
                    anthropic::request_body(req, &model.name),
                    Box::new(anthropic::Parser::new(&ep.provider)),
                )
            }
        };
        let deadline = Instant::now() + ep.timeout;
        let out = if tokio::runtime::Handle::try_current().is_err() {
            on_this_thread(&ep, url, headers, body, parser, ctl, deadline)
        } else {
            // Inside someone's runtime (cannot block it with our own): on the shared one.
            let ep2 = ep.clone();
            rt::pump(
                move |tx| async move { http::post(&ep2, url, headers, body, parser, tx).await },
                |t: String| (ctl.on_text)(&t),
                Some(ctl.stop),
                Some(deadline),
            )
        };
        match out {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(mut e)) => {
                e.node = req.node.clone();
                e.message = format!("{} ({model}): {}", req.node, e.message);
                Err(e)
            }
            Err(Interrupted::Stopped) => Err(ProviderError::new(
                &req.node,
                ErrorKind::Cancelled,
                format!("{}: the run was stopped during the call to {model}; the request was cancelled", req.node),
            )),
            Err(Interrupted::TimedOut) => Err(ProviderError::new(
                &req.node,
                ErrorKind::Timeout,
                format!("{} ({model}): no complete answer within {} s", req.node, ep.timeout.as_secs_f64()),
            )
            .hint("raise `timeout_s` for this provider in the provider file, or check the server")),
        }
    }

    fn describe(&self) -> String {
        match self.config.default_model() {
            Some(m) => format!("live models (default {m})"),
            None => "live models".into(),
        }
    }
}

thread_local! {
    /// The calling thread's runtime and HTTP client: a call is driven on the engine's own
    /// thread, so no thread has to be woken to hand the answer over (each hop costs a wake-up,
    /// a good part of a millisecond on a virtual machine).
    static LOCAL: std::cell::RefCell<Option<(tokio::runtime::Runtime, reqwest::Client)>> = const { std::cell::RefCell::new(None) };
}

/// One call driven on the calling thread, watching the stop flag and the deadline every few
/// milliseconds (dropping the request, which closes its connection, when either fires).
fn on_this_thread(
    ep: &config::Endpoint,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: serde_json::Value,
    parser: Box<dyn http::WireParser>,
    ctl: &CallCtl<'_>,
    deadline: Instant,
) -> Result<Result<LlmResponse, ProviderError>, Interrupted> {
    LOCAL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cannot start an I/O runtime on this thread");
            *slot = Some((rt, http::new_client()));
        }
        let (rt, client) = slot.as_ref().expect("set above");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        rt.block_on(async {
            let fut = http::post_with(client, ep, url, headers, body, parser, tx);
            tokio::pin!(fut);
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(5));
            loop {
                tokio::select! {
                    r = &mut fut => {
                        for t in rx.try_iter() {
                            (ctl.on_text)(&t);
                        }
                        return Ok(r);
                    }
                    _ = tick.tick() => {
                        for t in rx.try_iter() {
                            (ctl.on_text)(&t);
                        }
                        if ctl.stopped() {
                            return Err(Interrupted::Stopped);
                        }
                        if Instant::now() >= deadline {
                            return Err(Interrupted::TimedOut);
                        }
                    }
                }
            }
        })
    })
}

/// The models a document names, each with where it is named (`llms[0] \`gpt\``, `node
/// \`triage\``), for the pre-run check.
pub fn models_used(doc: &Document) -> Vec<(ModelRef, String)> {
    let mut out = Vec::new();
    let file = doc.path.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
    match doc.dialect() {
        Some(Dialect::Sherma) => {
            if let Some(sd) = doc.sherma() {
                for l in &sd.llms {
                    out.push((
                        ModelRef {
                            provider: l.get_str("provider").unwrap_or("openai").to_string(),
                            name: l.get_str("model_name").unwrap_or("").to_string(),
                        },
                        format!("{file}: llm `{}`", l.id_str()),
                    ));
                }
            }
        }
        Some(Dialect::Loki) => {
            if let Some(l) = doc.loki() {
                if let Some(m) = &l.model {
                    out.push((ModelRef::parse(&m.value), format!("{file}: agent `model`")));
                }
                for (id, m) in l.llm_models() {
                    out.push((ModelRef::parse(&m), format!("{file}: node `{id}` `model`")));
                }
            }
        }
        // LLLM: each agent's effective `model_name` (LLLM runs are not built yet; listed for
        // the checks that read every model a file names).
        Some(Dialect::Lllm) => {
            if let Some(l) = doc.lllm() {
                for a in &l.effective.agents {
                    if let Some(m) = a.str("model_name") {
                        out.push((ModelRef::parse(m), format!("{file}: agent `{}` `model_name`", a.name)));
                    }
                }
            }
        }
        None => {}
    }
    out
}
