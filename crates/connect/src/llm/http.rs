//! The HTTP side shared by both wire formats: one client, a streamed POST whose server-sent
//! events go to a wire parser, and the classification of failures into [`ErrorKind`]s with
//! the provider's own message.

use super::config::Endpoint;
use runtime::provider::{ErrorKind, LlmResponse, ProviderError};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::OnceLock;
use std::sync::mpsc::Sender;
use std::time::Duration;

/// The process's HTTP client (connection pool shared by every call).
pub fn client() -> &'static reqwest::Client {
    static C: OnceLock<reqwest::Client> = OnceLock::new();
    C.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("switchyard/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("the HTTP client builds (rustls, no system configuration needed)")
    })
}

/// Turns a provider's response (streamed events or one JSON body) into an [`LlmResponse`].
pub trait WireParser: Send {
    /// One server-sent event. Text deltas go to `text`. Returns true at the stream's end
    /// marker (`[DONE]`, `message_stop`).
    fn event(&mut self, event: &str, data: &str, text: &Sender<String>) -> Result<bool, ProviderError>;
    /// The whole answer in one JSON body (the server did not stream).
    fn whole(&mut self, body: Value, text: &Sender<String>) -> Result<(), ProviderError>;
    /// The answer, once the body is over. `ended` says whether the end marker was seen; a
    /// stream that stops without one (and without a finish reason) was truncated.
    fn finish(self: Box<Self>, ended: bool) -> Result<LlmResponse, ProviderError>;
}

/// What went wrong, as a provider error with kind (node filled in by the caller).
pub fn fail(kind: ErrorKind, message: impl Into<String>) -> ProviderError {
    ProviderError::new("", kind, message)
}

/// A client for the calling thread's own runtime (see [`crate::llm::LiveProvider`]): a
/// connection's background task lives on the runtime that opened it, so a thread that drives
/// its own runtime needs its own pool.
pub fn new_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("switchyard/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("the HTTP client builds (rustls, no system configuration needed)")
}

/// POST `body` to `url` and feed the response to `parser`.
pub async fn post(
    ep: &Endpoint,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: Value,
    parser: Box<dyn WireParser>,
    text: Sender<String>,
) -> Result<LlmResponse, ProviderError> {
    post_with(client(), ep, url, headers, body, parser, text).await
}

/// [`post`] with a given client.
pub async fn post_with(
    client: &reqwest::Client,
    ep: &Endpoint,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: Value,
    mut parser: Box<dyn WireParser>,
    text: Sender<String>,
) -> Result<LlmResponse, ProviderError> {
    let mut req = client.post(&url).json(&body);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let resp = send_checked(ep, req).await?;
    let streaming = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streaming {
        let raw = resp.bytes().await.map_err(|e| body_error(ep, &e))?;
        let v: Value = serde_json::from_slice(&raw).map_err(|e| {
            fail(
                ErrorKind::Malformed,
                format!("{}: the answer is not JSON ({e}): {}", ep.provider, snippet(&String::from_utf8_lossy(&raw))),
            )
        })?;
        parser.whole(v, &text)?;
        return parser.finish(true);
    }
    let mut events = resp.bytes_stream().eventsource();
    let mut ended = false;
    while let Some(ev) = events.next().await {
        let ev = ev.map_err(|e| match e {
            eventsource_stream::EventStreamError::Transport(t) => body_error(ep, &t),
            other => fail(ErrorKind::Malformed, format!("{}: a broken event stream: {other}", ep.provider)),
        })?;
        if parser.event(&ev.event, &ev.data, &text)? {
            ended = true;
            break;
        }
    }
    parser.finish(ended)
}

/// An error with its causes (`error sending request: connection refused`), for messages about
/// HTTP failures (reqwest's own text stops at the outermost layer).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        src = s.source();
    }
    out
}

/// Send `req`; a non-2xx status becomes the classified error (with `Retry-After`).
async fn send_checked(ep: &Endpoint, req: reqwest::RequestBuilder) -> Result<reqwest::Response, ProviderError> {
    let resp = req.send().await.map_err(|e| request_error(ep, &e))?;
    let status = resp.status();
    if !status.is_success() {
        let retry_after = retry_after(resp.headers());
        let raw = resp.text().await.unwrap_or_default();
        let mut e = status_error(ep, status.as_u16(), status.canonical_reason().unwrap_or(""), &raw);
        e.retry_after = retry_after;
        return Err(e);
    }
    Ok(resp)
}

/// POST `body` to `url` and return the JSON answer (no streaming): the embeddings endpoint.
/// Failures are classified as for chat calls.
pub async fn post_json(ep: &Endpoint, url: String, headers: Vec<(&'static str, String)>, body: Value) -> Result<Value, ProviderError> {
    let mut req = client().post(&url).json(&body).timeout(ep.timeout);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let resp = send_checked(ep, req).await?;
    let raw = resp.bytes().await.map_err(|e| body_error(ep, &e))?;
    serde_json::from_slice(&raw).map_err(|e| {
        fail(
            ErrorKind::Malformed,
            format!("{}: the answer is not JSON ({e}): {}", ep.provider, snippet(&String::from_utf8_lossy(&raw))),
        )
    })
}

/// A request that got no response.
fn request_error(ep: &Endpoint, e: &reqwest::Error) -> ProviderError {
    let cause = root_cause(e);
    if e.is_timeout() {
        fail(ErrorKind::Timeout, format!("{} at {}: no answer in time ({cause})", ep.provider, ep.base_url))
    } else if e.is_connect() {
        fail(ErrorKind::Connection, format!("cannot reach {} at {}: {cause}", ep.provider, ep.base_url)).hint(format!(
            "is the server running and the address right? The base URL comes from {}_BASE_URL or the provider file",
            ep.key_source.trim_end_matches("_API_KEY")
        ))
    } else {
        fail(ErrorKind::Connection, format!("{} at {}: the request failed: {cause}", ep.provider, ep.base_url))
    }
}

/// The body broke off.
fn body_error(ep: &Endpoint, e: &reqwest::Error) -> ProviderError {
    if e.is_timeout() {
        fail(ErrorKind::Timeout, format!("{}: the answer stalled ({})", ep.provider, root_cause(e)))
    } else {
        fail(ErrorKind::Connection, format!("{}: the connection broke during the answer ({})", ep.provider, root_cause(e)))
    }
}

/// The innermost cause of an error ("connection refused", not "error sending request").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// An HTTP error status, with the provider's message from the body.
pub fn status_error(ep: &Endpoint, status: u16, reason: &str, body: &str) -> ProviderError {
    let kind = match status {
        429 => ErrorKind::RateLimited,
        401 | 403 => ErrorKind::Auth,
        500..=599 => ErrorKind::Server,
        _ => ErrorKind::BadRequest,
    };
    let said = provider_message(body).unwrap_or_else(|| snippet(body));
    let mut e = fail(kind, format!("{} answered HTTP {status} {reason}: {said}", ep.provider));
    e = match kind {
        ErrorKind::Auth => e.hint(format!("check the API key in {}", ep.key_source)),
        ErrorKind::BadRequest if status == 404 => e.hint("check the model name and the base URL"),
        _ => e,
    };
    e
}

/// `error.message` of an OpenAI or Anthropic error body.
fn provider_message(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let err = v.get("error")?;
    match err {
        Value::String(s) => Some(s.clone()),
        Value::Object(_) => err.get("message").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// `Retry-After` (seconds) or `retry-after-ms`, capped at ten minutes.
fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| h.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok());
    let secs = get("retry-after-ms").map(|ms| ms / 1000.0).or_else(|| get("retry-after"))?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(600.0)))
}

/// The start of a body, for messages.
pub fn snippet(s: &str) -> String {
    let t = s.trim();
    if t.is_empty() {
        return "(empty body)".into();
    }
    let cut: String = t.chars().take(300).collect();
    if cut.len() < t.len() { format!("{cut}…") } else { cut }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::config::Wire;

    fn ep() -> Endpoint {
        Endpoint {
            provider: "openai".into(),
            wire: Wire::Openai,
            base_url: "http://127.0.0.1:1/v1".into(),
            api_key: None,
            key_source: "OPENAI_API_KEY".into(),
            key_optional: false,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn statuses_are_classified_with_the_providers_message() {
        let e = status_error(&ep(), 429, "Too Many Requests", r#"{"error":{"message":"Rate limit reached","type":"rate_limit"}}"#);
        assert_eq!(e.kind, ErrorKind::RateLimited);
        assert!(e.message.contains("HTTP 429") && e.message.contains("Rate limit reached"), "{}", e.message);
        assert_eq!(status_error(&ep(), 401, "", "{}").kind, ErrorKind::Auth);
        assert!(status_error(&ep(), 401, "", "{}").hint.unwrap().contains("OPENAI_API_KEY"));
        assert_eq!(status_error(&ep(), 503, "", "upstream down").kind, ErrorKind::Server);
        assert!(status_error(&ep(), 503, "", "upstream down").message.contains("upstream down"));
        assert_eq!(status_error(&ep(), 529, "", r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#).kind, ErrorKind::Server);
        assert_eq!(status_error(&ep(), 400, "", "{}").kind, ErrorKind::BadRequest);
    }

    #[test]
    fn retry_after_headers() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}
