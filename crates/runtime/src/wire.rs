//! What an LLM call exchanges that events describe too: the tool calls a model asks for, the
//! tokens it used, and the kind of a failure. Below both `provider` (which makes calls) and
//! `events` (which reports them), so neither needs the other for these.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

/// One tool call requested by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub args: Value,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What kind of failure a provider error is. The transient kinds are retried as the node's
/// settings say (sherma `on_error.retry`, Loki `max_attempts`); the others fail at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No answer in time (connect, first byte, or between stream chunks).
    Timeout,
    /// Connection refused, reset, or closed before the answer was complete.
    Connection,
    /// HTTP 429.
    RateLimited,
    /// HTTP 5xx (and 529 overloaded).
    Server,
    /// The server answered, but not in the wire format (bad JSON, truncated stream).
    Malformed,
    /// HTTP 401/403: the key is missing, wrong or lacks access.
    Auth,
    /// HTTP 4xx other than the above: the request itself is wrong (unknown model, bad schema).
    BadRequest,
    /// The run was stopped while the call was in flight.
    Cancelled,
    /// The provider is not set up (no key, unknown provider, no script reply left).
    Config,
    /// Anything else (scripted errors without a recognisable cause).
    Other,
}

impl ErrorKind {
    /// Whether trying the same call again may succeed.
    pub fn transient(self) -> bool {
        matches!(
            self,
            ErrorKind::Timeout | ErrorKind::Connection | ErrorKind::RateLimited | ErrorKind::Server | ErrorKind::Malformed
        )
    }

    /// The kind a failure message describes (for scripted `error:` replies, which simulate
    /// real failures by their text: `429 rate limit`, `connection reset`, `timed out`, ...).
    pub fn from_text(text: &str) -> ErrorKind {
        let t = text.to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| t.contains(w));
        if has(&["429", "rate limit", "too many requests"]) {
            ErrorKind::RateLimited
        } else if has(&["timed out", "timeout"]) {
            ErrorKind::Timeout
        } else if has(&["connection", "refused", "reset", "unreachable"]) {
            ErrorKind::Connection
        } else if has(&["500", "502", "503", "504", "529", "overloaded", "server error", "unavailable"]) {
            ErrorKind::Server
        } else if has(&["401", "403", "unauthorized", "forbidden", "api key"]) {
            ErrorKind::Auth
        } else if has(&["400", "404", "422", "bad request", "invalid"]) {
            ErrorKind::BadRequest
        } else if has(&["malformed", "truncated", "no output", "not json"]) {
            ErrorKind::Malformed
        } else {
            ErrorKind::Other
        }
    }
}

