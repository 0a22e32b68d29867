//! LLM providers: the `LlmProvider` trait a run calls for every LLM node, and the scripted
//! provider that answers from a YAML file of canned replies (for tests, demos and debugging
//! without a network). The trait is synchronous (the engine steps a run on its own thread);
//! HTTP providers (`crate::llm`) run their requests on the shared I/O runtime and watch the
//! call's stop flag, so a stop cancels a request in flight. Providers are shared (`&self`,
//! `Sync`): parallel branches call the model at the same time.
//!
//! Script format:
//!
//! ```yaml
//! replies:
//!   - content: "Let me look that up."
//!     tool_calls:
//!       - name: search
//!         args: { q: rust }
//!   - node: summarise        # only the node `summarise` takes this one
//!     content: "Done."
//!   - error: "429 rate limit" # this call fails (to exercise retries and fallbacks)
//!   - node: select            # a structured reply: a mapping or list is sent as JSON text
//!     content: {skills: [{id: weather}]}
//! ```
//!
//! Each LLM call scans the replies in file order, skips the ones already used and the ones
//! targeted (`node:`) at another node, and takes the first remaining one.

use syntax::diag::{Diagnostic, did_you_mean};
use syntax::source::SourceFile;
use syntax::yaml::{self, YKind, YNode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
pub use crate::wire::{ErrorKind, TokenUsage, ToolCall};

/// What a node asks of the model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmRequest {
    /// The node making the call.
    pub node: String,
    /// The conversation, as JSON, in one wire format for both dialects:
    /// `[{"role": "system"|"user"|"assistant"|"tool", "content": ..., "tool_calls"?: [...],
    /// "tool_call_id"?: ..., "name"?: ...}, ...]`.
    pub messages: Value,
    /// The tools offered, as JSON (`[]` when none): `[{"name", "description", "parameters"}]`.
    pub tools: Value,
    /// The model the document names for this call (`None`: the document names none; a live
    /// provider then uses its configured default model).
    pub model: Option<ModelRef>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Structured output: `{"name", "description"?, "schema": <JSON Schema>}` (sherma
    /// `response_format`). Providers that support it constrain the reply to the schema.
    pub response_format: Option<Value>,
    /// Anthropic-hosted skill ids (LLLM's `skill_…` entries): the Anthropic wire sends them as
    /// `skills: [{"id"}]` with the `anthropic-beta: skills-2025-10-02` header; others ignore them.
    pub skills: Vec<String>,
    /// Further model arguments, sent as written (LLLM's `model_args` beyond `temperature` and
    /// `top_p`: `max_tokens`, `stop`, `seed`, `reasoning_effort`, provider-specific keys). Each
    /// wire format adds them to its request body without replacing what it sets itself
    /// (Anthropic's translates the OpenAI names it knows and leaves out what its API rejects:
    /// `connect::llm::anthropic`); scripted and replayed runs ignore them.
    pub extra: serde_json::Map<String, Value>,
}

/// A model as a document names it: sherma `llms: [{provider, model_name}]`, Loki
/// `model: provider:name`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelRef {
    /// `openai`, `anthropic`, or another configured provider (Loki client names such as
    /// `ollama`, `openrouter`, `claude`).
    pub provider: String,
    pub name: String,
}

impl ModelRef {
    /// `provider:name` (Loki's spelling); a bare name means provider `openai`.
    pub fn parse(text: &str) -> ModelRef {
        match text.split_once(':') {
            Some((p, n)) => ModelRef { provider: p.trim().to_string(), name: n.trim().to_string() },
            None => ModelRef { provider: "openai".into(), name: text.trim().to_string() },
        }
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.name)
    }
}

/// The model's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmResponse {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: TokenUsage,
    /// The model that answered, as the provider reports it (`gpt-4o-mini-2024-07-18`).
    pub model: Option<String>,
    /// Why the model stopped (`stop`, `tool_calls`, `length`, `end_turn`, ...).
    pub finish_reason: Option<String>,
}

/// A provider could not answer. `message` says what happened, `hint` what to do, `kind` whether
/// trying again may help.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderError {
    pub node: String,
    pub message: String,
    pub hint: Option<String>,
    pub kind: ErrorKind,
    /// How long the server asked us to wait before trying again (`Retry-After`).
    pub retry_after: Option<Duration>,
    /// The error's own text, without the context Switchyard adds to `message` (a scripted
    /// error's `error:` text as written, without its file and line). It is what an agent's own
    /// state records, as upstream records the exception's message (sherma's
    /// `__sherma__.last_error.message`); `None`: `message` is the error's own text.
    pub raw: Option<String>,
}

impl ProviderError {
    pub fn new(node: &str, kind: ErrorKind, message: impl Into<String>) -> ProviderError {
        ProviderError { node: node.to_string(), message: message.into(), hint: None, kind, retry_after: None, raw: None }
    }
    /// The error's own text (see [`ProviderError::raw`]).
    pub fn raw(mut self, raw: impl Into<String>) -> ProviderError {
        self.raw = Some(raw.into());
        self
    }
    /// What an agent's state records of this error: its own text, else `message` (no hint).
    pub fn own_message(&self) -> &str {
        self.raw.as_deref().unwrap_or(&self.message)
    }
    pub fn hint(mut self, hint: impl Into<String>) -> ProviderError {
        self.hint = Some(hint.into());
        self
    }
    /// Whether the node's retry settings apply. Scripted errors of unknown cause count as
    /// transient, so a script can exercise retries with any text.
    pub fn retryable(&self) -> bool {
        self.kind.transient() || self.kind == ErrorKind::Other
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProviderError {}

/// What a call may use besides the request: the run's stop flag (a provider gives up as soon
/// as it is raised) and a sink for text as it streams in.
pub struct CallCtl<'a> {
    pub stop: &'a AtomicBool,
    pub on_text: &'a (dyn Fn(&str) + Sync),
    /// Extra events about the call (a replay's divergence report).
    pub emit: &'a (dyn Fn(crate::events::EventBody) + Sync),
}

fn ignore_text(_: &str) {}
fn ignore_event(_: crate::events::EventBody) {}
static NEVER_STOP: AtomicBool = AtomicBool::new(false);

impl CallCtl<'static> {
    /// No stop flag, streamed text and extra events dropped.
    pub fn none() -> CallCtl<'static> {
        CallCtl { stop: &NEVER_STOP, on_text: &ignore_text, emit: &ignore_event }
    }
}

impl CallCtl<'_> {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Where a run's LLM replies come from. Shared by the run, its parallel branches and its
/// nested runs, hence `&self` and `Sync`.
pub trait LlmProvider: Send + Sync {
    fn complete(&self, request: &LlmRequest, ctl: &CallCtl<'_>) -> Result<LlmResponse, ProviderError>;
    /// A position to come back to when a run is rewound (scripted providers: how many replies
    /// were taken). Live providers have no position: the default is 0.
    fn mark(&self) -> usize {
        0
    }
    /// Forget everything taken after `mark` (see [`LlmProvider::mark`]).
    fn rewind_to(&self, _mark: usize) {}
    /// A short description for narration (`scripted: replies.yaml`).
    fn describe(&self) -> String {
        "provider".into()
    }
    /// A tool call about to run: a replaying provider answers it from its recording
    /// (`Some`); every other provider lets it run (`None`).
    fn replay_tool(&self, _node: &str, _name: &str, _args: &Value) -> Option<Result<Value, String>> {
        None
    }
    /// A tool call that ran, with its outcome (a recording provider writes it down).
    fn record_tool(&self, _node: &str, _name: &str, _args: &Value, _outcome: &Result<Value, String>) {}
    /// A side effect about to happen (a script, a hook, a Python import, a RAG retrieval): a
    /// replay of a cassette that recorded effects answers it from the recording (`Some`), so
    /// nothing runs; every other provider lets it happen (`None`).
    fn replay_effect(&self, _node: &str, _name: &str, _args: &Value) -> Option<Result<Value, String>> {
        None
    }
    /// A side effect that happened, with its outcome (a recording provider writes it down).
    fn record_effect(&self, _node: &str, _name: &str, _args: &Value, _outcome: &Result<Value, String>) {}
    /// Where the provider stands, as JSON, for a durable run's checkpoint (scripted replies:
    /// which were taken; a replay: the calls answered per node). `null` for providers
    /// without a position (live).
    fn position(&self) -> Value {
        Value::Null
    }
    /// Go to a position saved by [`LlmProvider::position`] (a durable run resumed in a new
    /// process); an error when it does not fit this provider (the script changed).
    fn restore_position(&self, _position: &Value) -> Result<(), String> {
        Ok(())
    }
    /// Whether the run may use the network besides its model calls: remote hooks, skill and
    /// RAG URLs, embeddings, A2A agents, MCP servers over HTTP. Scripted, replayed and
    /// provider-less runs are offline (`false`) unless the user allows the network for the run
    /// ([`Online`]); live runs are online.
    fn network_allowed(&self) -> bool {
        true
    }
}

/// A provider as runs take it.
pub type BoxProvider = Box<dyn LlmProvider>;

/// A provider whose run may use the network although its replies are scripted or replayed:
/// the user's explicit choice for one run (`switchyard run --allow-network`).
pub struct Online(pub BoxProvider);

impl LlmProvider for Online {
    fn complete(&self, request: &LlmRequest, ctl: &CallCtl<'_>) -> Result<LlmResponse, ProviderError> {
        self.0.complete(request, ctl)
    }
    fn mark(&self) -> usize {
        self.0.mark()
    }
    fn rewind_to(&self, mark: usize) {
        self.0.rewind_to(mark)
    }
    fn describe(&self) -> String {
        format!("{}, network allowed", self.0.describe())
    }
    fn replay_tool(&self, node: &str, name: &str, args: &Value) -> Option<Result<Value, String>> {
        self.0.replay_tool(node, name, args)
    }
    fn record_tool(&self, node: &str, name: &str, args: &Value, outcome: &Result<Value, String>) {
        self.0.record_tool(node, name, args, outcome)
    }
    fn replay_effect(&self, node: &str, name: &str, args: &Value) -> Option<Result<Value, String>> {
        self.0.replay_effect(node, name, args)
    }
    fn record_effect(&self, node: &str, name: &str, args: &Value, outcome: &Result<Value, String>) {
        self.0.record_effect(node, name, args, outcome)
    }
    fn position(&self) -> Value {
        self.0.position()
    }
    fn restore_position(&self, position: &Value) -> Result<(), String> {
        self.0.restore_position(position)
    }
    fn network_allowed(&self) -> bool {
        true
    }
}

/// The error of a request an offline run does not make: what (`the remote hook`) and where
/// (a URL; shown without credentials).
pub fn offline_error(what: &str, target: &str) -> String {
    // Neither user:password nor a secret in the query (`?key=${OPENAI_API_KEY}`) is shown.
    let target = crate::secrets::scrub_text(&crate::secrets::without_credentials(target));
    format!(
        "this run is offline (scripted or replayed replies make no network requests): {what} at {target} was not contacted; \
         allow the network for this run with `switchyard run --allow-network` (or \"Allow network\" in the app's run configuration), \
         or run live"
    )
}

/// The provider of a run that has none: every call fails with a message saying how to get one.
#[derive(Clone, Debug, Default)]
pub struct NoProvider;

impl LlmProvider for NoProvider {
    fn complete(&self, request: &LlmRequest, _ctl: &CallCtl<'_>) -> Result<LlmResponse, ProviderError> {
        Err(ProviderError::new(
            &request.node,
            ErrorKind::Config,
            format!("node `{}` calls an LLM, but this run has no LLM provider", request.node),
        )
        .hint(
            "pass `--llm-script FILE` with scripted replies (`replies: [{content: ...}]`) or put a \
             `replies.yaml` beside the agent; `--replay CASSETTE` to answer from a recording; or \
             `--live` to call the model the agent names (needs its API key)",
        ))
    }
    fn network_allowed(&self) -> bool {
        false
    }
    fn describe(&self) -> String {
        "no LLM provider".into()
    }
}

/// One canned reply.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedReply {
    /// Only this node may take the reply.
    pub node: Option<String>,
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// Simulate a failed call (e.g. `error: "429 rate limit"`): the call fails with this text.
    pub error: Option<String>,
    /// 1-based line of the reply in the script (for messages).
    pub line: u32,
}

/// Answers LLM calls from a script of replies (see the module docs).
#[derive(Debug)]
pub struct ScriptedProvider {
    path: PathBuf,
    replies: Vec<ScriptedReply>,
    cursor: Mutex<Cursor>,
}

/// Which replies are taken.
#[derive(Clone, Debug, Default)]
struct Cursor {
    used: Vec<bool>,
    /// Indices of the replies taken, in order (for rewinding).
    taken: Vec<usize>,
    /// The first reply that may still be unused (everything before it is taken).
    first_free: usize,
    calls: usize,
}

/// The largest replies file read (64 MiB).
pub const REPLIES_CAP: u64 = 64 << 20;

const TOP_KEYS: &[&str] = &["replies"];
const REPLY_KEYS: &[&str] = &["content", "tool_calls", "node", "error"];
const CALL_KEYS: &[&str] = &["name", "args", "id"];

impl ScriptedProvider {
    /// Read and check a script file. Errors are positioned diagnostics (file, line, column).
    pub fn load(path: &Path) -> Result<ScriptedProvider, Vec<Diagnostic>> {
        // Bounded: a device, a FIFO or a file past the cap is refused, never read forever.
        match syntax::source::read_bounded_text(path, REPLIES_CAP, None) {
            Ok(text) => ScriptedProvider::from_str(path, &text),
            Err(e) => Err(vec![
                Diagnostic::error("io-error", format!("cannot read script `{}`: {e}", path.display())).in_file(path),
            ]),
        }
    }

    /// Check a script given as text; `path` is used in messages.
    pub fn from_str(path: &Path, text: &str) -> Result<ScriptedProvider, Vec<Diagnostic>> {
        let file = SourceFile::new(path, text);
        let parsed = yaml::parse(&file);
        let mut diags: Vec<Diagnostic> = parsed.diagnostics.into_iter().filter(|d| d.is_error()).collect();
        if !diags.is_empty() {
            return Err(diags);
        }
        let replies = match &parsed.root {
            None => {
                diags.push(
                    Diagnostic::error("script-empty", "the script is empty")
                        .in_file(path)
                        .hint("write `replies:` followed by a list of replies, e.g. `- content: \"hello\"`"),
                );
                Vec::new()
            }
            Some(root) => check_root(&file, root, &mut diags),
        };
        if diags.is_empty() {
            let cursor = Cursor { used: vec![false; replies.len()], ..Cursor::default() };
            Ok(ScriptedProvider { path: path.to_path_buf(), replies, cursor: Mutex::new(cursor) })
        } else {
            Err(diags)
        }
    }

    /// Replies written inside another file (a test suite's case: `replies: [...]`), checked
    /// like a script's `replies:` list; errors are positioned in that file.
    pub fn from_list(file: &SourceFile, list: &YNode) -> Result<ScriptedProvider, Vec<Diagnostic>> {
        let mut diags = Vec::new();
        let replies: Vec<ScriptedReply> = match list.as_seq() {
            Some(items) => items.iter().filter_map(|r| check_reply(file, r, &mut diags)).collect(),
            None => {
                diags.push(err_at(file, list, "wrong-type", format!("`replies` must be a list, found {}", list.describe())));
                Vec::new()
            }
        };
        if !diags.is_empty() {
            return Err(diags);
        }
        let cursor = Cursor { used: vec![false; replies.len()], ..Cursor::default() };
        Ok(ScriptedProvider { path: file.path().to_path_buf(), replies, cursor: Mutex::new(cursor) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn replies(&self) -> &[ScriptedReply] {
        &self.replies
    }
    /// How many replies have not been taken yet.
    pub fn remaining(&self) -> usize {
        self.cursor().used.iter().filter(|u| !**u).count()
    }
    fn cursor(&self) -> std::sync::MutexGuard<'_, Cursor> {
        self.cursor.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl LlmProvider for ScriptedProvider {
    fn network_allowed(&self) -> bool {
        false
    }
    fn complete(&self, request: &LlmRequest, _ctl: &CallCtl<'_>) -> Result<LlmResponse, ProviderError> {
        let node = request.node.as_str();
        let mut cur = self.cursor();
        while cur.first_free < cur.used.len() && cur.used[cur.first_free] {
            cur.first_free += 1;
        }
        let pick = (cur.first_free..self.replies.len())
            .find(|&i| !cur.used[i] && self.replies[i].node.as_deref().is_none_or(|n| reply_fits(n, node)));
        let Some(i) = pick else {
            return Err(self.exhausted(node, &cur));
        };
        cur.used[i] = true;
        cur.taken.push(i);
        cur.calls += 1;
        let calls = cur.calls;
        drop(cur);
        let r = &self.replies[i];
        if let Some(e) = &r.error {
            return Err(ProviderError::new(
                node,
                ErrorKind::from_text(e),
                format!("{e} (scripted error, {}:{})", self.path.display(), r.line),
            )
            .raw(e.clone()));
        }
        let tool_calls: Vec<ToolCall> = r
            .tool_calls
            .iter()
            .enumerate()
            .map(|(k, c)| ToolCall {
                id: if c.id.is_empty() { format!("call_{}_{}", calls, k + 1) } else { c.id.clone() },
                name: c.name.clone(),
                args: c.args.clone(),
            })
            .collect();
        // No real tokenizer here: an estimate of one token per four characters, so traces and
        // the UI have plausible, deterministic numbers.
        let input_chars = text_len(&request.messages) + text_len(&request.tools);
        let output_chars = r.content.as_deref().map_or(0, |c| c.chars().count())
            + tool_calls.iter().map(|c| c.name.len() + c.args.to_string().len()).sum::<usize>();
        Ok(LlmResponse {
            content: r.content.clone(),
            tool_calls,
            usage: TokenUsage { input_tokens: input_chars.div_ceil(4) as u64, output_tokens: output_chars.div_ceil(4) as u64 },
            model: None,
            finish_reason: Some(if r.tool_calls.is_empty() { "stop" } else { "tool_calls" }.into()),
        })
    }
    fn mark(&self) -> usize {
        self.cursor().taken.len()
    }
    fn rewind_to(&self, mark: usize) {
        let mut cur = self.cursor();
        while cur.taken.len() > mark {
            let i = cur.taken.pop().expect("len > mark");
            cur.used[i] = false;
            cur.first_free = cur.first_free.min(i);
        }
        cur.calls = cur.taken.len();
    }
    fn describe(&self) -> String {
        format!("scripted replies from {}", self.path.display())
    }
    fn position(&self) -> Value {
        let cur = self.cursor();
        serde_json::json!({"scripted": {"taken": cur.taken, "calls": cur.calls}})
    }
    fn restore_position(&self, cursor: &Value) -> Result<(), String> {
        let Some(c) = cursor.get("scripted") else {
            return if cursor.is_null() {
                Ok(())
            } else {
                Err(format!("the saved run did not use scripted replies; it cannot go on with {}", self.path.display()))
            };
        };
        let taken: Vec<usize> = serde_json::from_value(c.get("taken").cloned().unwrap_or(Value::Null))
            .map_err(|e| format!("the saved position in the scripted replies is unreadable: {e}"))?;
        let mut used = vec![false; self.replies.len()];
        for &i in &taken {
            if i >= used.len() || used[i] {
                return Err(format!(
                    "the saved run took reply #{} of {}, which has only {} replies now; the script changed",
                    i + 1,
                    self.path.display(),
                    self.replies.len()
                ));
            }
            used[i] = true;
        }
        let mut cur = self.cursor();
        cur.calls = c.get("calls").and_then(Value::as_u64).map_or(taken.len(), |n| n as usize);
        cur.used = used;
        cur.taken = taken;
        cur.first_free = 0;
        Ok(())
    }
}

/// Whether a reply aimed at `target` (`node:`) may answer a call of `node`: the same name, or
/// the name of a call inside a Loki map item, `<node>[<item>]` (`node: verify` answers every
/// item of `verify`, `node: "verify[1]"` only item 1), or inside a Loki nested run qualified by
/// its path, `<node>@<path>` (`node: helper` answers `helper@boss/agent_helper_1`).
fn reply_fits(target: &str, node: &str) -> bool {
    node == target || node.strip_prefix(target).is_some_and(|rest| rest.starts_with('[') || rest.starts_with('@'))
}

/// Characters of text in a JSON value (strings and keys), without serialising it.
fn text_len(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len() + 2,
        Value::Array(a) => a.iter().map(text_len).sum::<usize>() + a.len() + 2,
        Value::Object(m) => m.iter().map(|(k, v)| k.len() + 3 + text_len(v)).sum::<usize>() + 2,
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 4,
    }
}

impl ScriptedProvider {
    fn exhausted(&self, node: &str, cur: &Cursor) -> ProviderError {
        let file = self.path.display();
        let reserved: Vec<String> = self
            .replies
            .iter()
            .zip(&cur.used)
            .filter(|(_, u)| !**u)
            .filter_map(|(r, _)| r.node.clone())
            .collect();
        let mut message = format!(
            "scripted provider: no reply left for node `{node}` in `{file}` ({} replies in the script, {} used)",
            self.replies.len(),
            cur.used.iter().filter(|u| **u).count()
        );
        if !reserved.is_empty() {
            let mut names = reserved.clone();
            names.dedup();
            message.push_str(&format!(
                "; the unused ones are reserved for other nodes: {}",
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        ProviderError::new(node, ErrorKind::Config, message).hint(format!(
            "add a reply for this call at the end of `replies:` in `{file}`, e.g.\n  - node: {node}\n    content: \"...\""
        ))
    }
}

fn err_at(file: &SourceFile, n: &YNode, code: &str, msg: String) -> Diagnostic {
    Diagnostic::error(code, msg).at(file, n.span)
}

fn unknown_keys(file: &SourceFile, n: &YNode, allowed: &[&str], what: &str, diags: &mut Vec<Diagnostic>) {
    for e in n.as_map().unwrap_or(&[]) {
        let key = e.key.key_text();
        if allowed.contains(&key) {
            continue;
        }
        let sugg = did_you_mean(key, allowed.iter().copied());
        let hint = match sugg {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!("{what} may have: {}", allowed.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")),
        };
        diags.push(err_at(file, &e.key, "unknown-key", format!("unknown key `{key}` in {what}")).hint(hint));
    }
}

fn check_root(file: &SourceFile, root: &YNode, diags: &mut Vec<Diagnostic>) -> Vec<ScriptedReply> {
    if root.as_map().is_none() {
        diags.push(
            err_at(file, root, "wrong-type", format!("the script must be a mapping with `replies:`, found {}", root.describe()))
                .hint("write `replies:` followed by a list of replies"),
        );
        return Vec::new();
    }
    unknown_keys(file, root, TOP_KEYS, "the script", diags);
    let Some(list) = root.get("replies") else {
        diags.push(
            err_at(file, root, "missing-field", "the script has no `replies:`".to_string())
                .hint("add `replies:` followed by a list of replies, e.g. `- content: \"hello\"`"),
        );
        return Vec::new();
    };
    let Some(items) = list.as_seq() else {
        diags.push(err_at(file, list, "wrong-type", format!("`replies` must be a list, found {}", list.describe())));
        return Vec::new();
    };
    items.iter().filter_map(|r| check_reply(file, r, diags)).collect()
}

fn check_reply(file: &SourceFile, r: &YNode, diags: &mut Vec<Diagnostic>) -> Option<ScriptedReply> {
    if r.as_map().is_none() {
        diags.push(
            err_at(file, r, "wrong-type", format!("a reply must be a mapping, found {}", r.describe()))
                .hint("write `- content: \"...\"` and/or `tool_calls: [{name: ..., args: {...}}]`"),
        );
        return None;
    }
    let before = diags.len();
    unknown_keys(file, r, REPLY_KEYS, "a reply", diags);
    let content = r.get("content").and_then(|c| content_field(file, c, diags));
    let node = r.get("node").and_then(|c| text_field(file, c, "node", diags));
    let error = r.get("error").and_then(|c| text_field(file, c, "error", diags));
    let mut tool_calls = Vec::new();
    if let Some(tc) = r.get("tool_calls") {
        match tc.as_seq() {
            Some(items) => tool_calls = items.iter().filter_map(|c| check_call(file, c, diags)).collect(),
            None if tc.is_null() => {}
            None => diags.push(err_at(file, tc, "wrong-type", format!("`tool_calls` must be a list, found {}", tc.describe()))),
        }
    }
    if content.is_none() && tool_calls.is_empty() && error.is_none() && diags.len() == before {
        diags.push(
            err_at(file, r, "empty-reply", "a reply needs `content`, `tool_calls` or `error`".to_string())
                .hint("add `content: \"...\"` or `tool_calls: [{name: ..., args: {...}}]`"),
        );
    }
    let line = file.line_col(r.span.start as usize).line;
    Some(ScriptedReply { node, content, tool_calls, error, line })
}

/// A reply's `content`: text, or a mapping or list — a structured reply (for a node with
/// sherma's `response_format` or Loki's `output_schema`) — sent on as its JSON text, as a
/// structured-output model answers. `null` counts as absent.
fn content_field(file: &SourceFile, n: &YNode, diags: &mut Vec<Diagnostic>) -> Option<String> {
    match &n.kind {
        YKind::Map(_) | YKind::Seq(_) => Some(n.to_json().to_string()),
        _ => text_field(file, n, "content", diags),
    }
}

/// A scalar field as text (`null` counts as absent).
fn text_field(file: &SourceFile, n: &YNode, name: &str, diags: &mut Vec<Diagnostic>) -> Option<String> {
    if n.is_null() {
        return None;
    }
    match n.scalar_text() {
        Some(t) => Some(t.to_string()),
        None => {
            diags.push(err_at(file, n, "wrong-type", format!("`{name}` must be text, found {}", n.describe())));
            None
        }
    }
}

fn check_call(file: &SourceFile, c: &YNode, diags: &mut Vec<Diagnostic>) -> Option<ToolCall> {
    if c.as_map().is_none() {
        diags.push(
            err_at(file, c, "wrong-type", format!("a tool call must be a mapping, found {}", c.describe()))
                .hint("write `{name: TOOL, args: {...}}`"),
        );
        return None;
    }
    unknown_keys(file, c, CALL_KEYS, "a tool call", diags);
    let name = match c.get("name") {
        Some(n) => text_field(file, n, "name", diags),
        None => {
            diags.push(
                err_at(file, c, "missing-field", "a tool call needs `name`".to_string()).hint("add `name: TOOL_NAME`"),
            );
            None
        }
    }?;
    let args = match c.get("args") {
        None => Value::Object(Default::default()),
        Some(a) if a.is_null() => Value::Object(Default::default()),
        Some(a) if matches!(a.kind, YKind::Map(_)) => a.to_json(),
        Some(a) => {
            diags.push(err_at(file, a, "wrong-type", format!("`args` must be a mapping, found {}", a.describe())));
            Value::Null
        }
    };
    let id = c.get("id").and_then(|i| text_field(file, i, "id", diags)).unwrap_or_default();
    Some(ToolCall { id, name, args })
}

/// Read a model's reply as JSON, leniently (the extraction fast path of both dialects): trim, strip leading `<think>…</think>` blocks and a surrounding
/// code fence, parse any JSON value.
pub fn parse_json_loose(raw: &str) -> Option<Value> {
    let mut s = raw.trim();
    while let Some(rest) = s.strip_prefix("<think>") {
        let end = rest.find("</think>")?;
        s = rest[end + "</think>".len()..].trim_start();
    }
    if let Some(rest) = s.strip_prefix("```json").or_else(|| s.strip_prefix("```")) {
        s = rest.trim();
        if let Some(inner) = s.strip_suffix("```") {
            s = inner.trim();
        }
    }
    serde_json::from_str(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(text: &str) -> Result<ScriptedProvider, Vec<Diagnostic>> {
        ScriptedProvider::from_str(Path::new("replies.yaml"), text)
    }
    fn req(node: &str) -> LlmRequest {
        LlmRequest { node: node.into(), messages: json!([{"role": "user", "content": "hi"}]), tools: json!([]), ..Default::default() }
    }
    fn content(p: &ScriptedProvider, node: &str) -> String {
        p.complete(&req(node), &CallCtl::none()).unwrap().content.unwrap_or_default()
    }

    #[test]
    fn replies_are_taken_in_order() {
        let p = load("replies:\n  - content: one\n  - content: two\n  - content: three\n").unwrap();
        assert_eq!(p.remaining(), 3);
        assert_eq!(content(&p, "a"), "one");
        assert_eq!(content(&p, "b"), "two");
        assert_eq!(content(&p, "a"), "three");
        assert_eq!(p.remaining(), 0);
    }

    #[test]
    fn tool_calls_are_returned_with_ids_and_args() {
        let p = load(
            "replies:\n  - content: looking\n    tool_calls:\n      - name: search\n        args: {q: rust, n: 3}\n      - {name: clock}\n      - {name: x, id: fixed}\n",
        )
        .unwrap();
        let r = p.complete(&req("agent"), &CallCtl::none()).unwrap();
        assert_eq!(r.content.as_deref(), Some("looking"));
        assert_eq!(r.tool_calls.len(), 3);
        assert_eq!(r.tool_calls[0].name, "search");
        assert_eq!(r.tool_calls[0].args, json!({"q": "rust", "n": 3}));
        assert_eq!(r.tool_calls[1].args, json!({}));
        assert_ne!(r.tool_calls[0].id, r.tool_calls[1].id);
        assert_eq!(r.tool_calls[2].id, "fixed");
        assert!(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
        // Tool calls only, no content.
        let p = load("replies:\n  - tool_calls: [{name: search, args: {q: a}}]\n").unwrap();
        let r = p.complete(&req("agent"), &CallCtl::none()).unwrap();
        assert_eq!(r.content, None);
        assert_eq!(r.tool_calls[0].name, "search");
    }

    #[test]
    fn node_targeted_replies_are_reserved() {
        let text = "replies:\n  - node: summarise\n    content: S\n  - content: one\n  - content: two\n  - node: plan\n    content: P\n";
        let p = load(text).unwrap();
        // `agent` skips the reply reserved for `summarise`.
        assert_eq!(content(&p, "agent"), "one");
        // `summarise`'s first call takes its reply even though it comes first in the file.
        assert_eq!(content(&p, "summarise"), "S");
        // `plan` takes the next reply in order it may take: untargeted `two` comes before `P`.
        assert_eq!(content(&p, "plan"), "two");
        assert_eq!(content(&p, "plan"), "P");
        assert_eq!(p.replies()[0].node.as_deref(), Some("summarise"));
        assert_eq!(p.replies()[3].line, 6);
    }

    #[test]
    fn exhaustion_names_node_file_and_what_to_add() {
        let p = load("replies:\n  - content: one\n  - node: other\n    content: reserved\n").unwrap();
        assert_eq!(content(&p, "agent"), "one");
        let e = p.complete(&req("agent"), &CallCtl::none()).unwrap_err();
        assert_eq!(e.node, "agent");
        assert_eq!(
            e.message,
            "scripted provider: no reply left for node `agent` in `replies.yaml` (2 replies in the script, 1 used); \
             the unused ones are reserved for other nodes: `other`"
        );
        let text = e.to_string();
        assert!(text.contains("add a reply for this call at the end of `replies:` in `replies.yaml`"), "{text}");
        assert!(text.contains("- node: agent\n    content: \"...\""), "{text}");
        // An empty list runs out at once.
        let p = load("replies: []\n").unwrap();
        let e = p.complete(&req("x"), &CallCtl::none()).unwrap_err();
        assert!(e.message.contains("no reply left for node `x`") && e.message.contains("0 replies"), "{}", e.message);
    }

    #[test]
    fn malformed_yaml_is_positioned() {
        let errs = load("replies:\n  - content: one\n  - content: [unclosed\n").unwrap_err();
        let d = &errs[0];
        assert_eq!(d.file, "replies.yaml");
        assert_eq!(d.code, "yaml-syntax");
        assert!(d.line >= 3, "{d:?}");
        assert!(d.column >= 1);
        // Tabs used for indentation.
        let errs = load("replies:\n\t- content: one\n").unwrap_err();
        assert_eq!(errs[0].file, "replies.yaml");
        assert_eq!(errs[0].line, 2, "{:?}", errs[0]);
    }

    #[test]
    fn wrong_shapes_are_positioned() {
        let errs = load("replies:\n  - content: ok\n  - just text\n  - tool_calls: nope\n").unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!((errs[0].line, errs[0].column), (3, 5));
        assert!(errs[0].message.contains("a reply must be a mapping"));
        assert_eq!((errs[1].line, errs[1].column), (4, 17));
        assert!(errs[1].message.contains("`tool_calls` must be a list"));

        let errs = load("replies:\n  - node: x\n").unwrap_err();
        assert_eq!(errs[0].code, "empty-reply");
        assert_eq!(errs[0].line, 2);

        let errs = load("replies:\n  - tool_calls: [{args: {}}]\n").unwrap_err();
        assert_eq!(errs[0].code, "missing-field");
        assert_eq!((errs[0].line, errs[0].column), (2, 18));

        let errs = load("- content: x\n").unwrap_err();
        assert!(errs[0].message.contains("must be a mapping with `replies:`"));
        let errs = load("repliez:\n  - content: x\n").unwrap_err();
        assert!(errs.iter().any(|d| d.hint.as_deref() == Some("did you mean `replies`?")), "{errs:?}");
        assert!(errs.iter().any(|d| d.code == "missing-field"));
        let errs = load("").unwrap_err();
        assert_eq!(errs[0].code, "script-empty");
        assert_eq!(errs[0].file, "replies.yaml");
    }

    #[test]
    fn error_replies_fail_the_call_and_rewind_gives_replies_back() {
        let p = load("replies:\n  - error: 429 rate limit\n  - content: ok\n").unwrap();
        let e = p.complete(&req("n"), &CallCtl::none()).unwrap_err();
        assert!(e.message.starts_with("429 rate limit (scripted error, replies.yaml:2)"), "{}", e.message);
        // The error's own text, as a model client would raise it, without our context.
        assert_eq!(e.raw.as_deref(), Some("429 rate limit"));
        assert_eq!(e.own_message(), "429 rate limit");
        assert_eq!(ProviderError::new("n", ErrorKind::Other, "plain").own_message(), "plain");
        let m = p.mark();
        assert_eq!(m, 1);
        assert_eq!(p.complete(&req("n"), &CallCtl::none()).unwrap().content.as_deref(), Some("ok"));
        assert!(p.complete(&req("n"), &CallCtl::none()).is_err());
        p.rewind_to(m);
        assert_eq!(p.complete(&req("n"), &CallCtl::none()).unwrap().content.as_deref(), Some("ok"));
        p.rewind_to(0);
        assert!(p.complete(&req("n"), &CallCtl::none()).is_err(), "the error reply is given back too");
    }

    #[test]
    fn structured_content_is_sent_as_json_text() {
        // A mapping (block or flow) or a list as `content`: a structured reply, as a model with
        // structured output gives it.
        let p = load(
            "replies:\n  - node: select\n    content:\n      skills:\n        - id: weather\n          version: \"1.0.0\"\n        - {id: maps, n: 2, ok: true, none: null}\n  - content: [1, two]\n  - content: {}\n",
        )
        .unwrap();
        let text = content(&p, "select");
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"skills": [{"id": "weather", "version": "1.0.0"}, {"id": "maps", "n": 2, "ok": true, "none": null}]})
        );
        assert_eq!(text, r#"{"skills":[{"id":"weather","version":"1.0.0"},{"id":"maps","n":2,"ok":true,"none":null}]}"#);
        assert_eq!(content(&p, "x"), r#"[1,"two"]"#);
        assert_eq!(content(&p, "x"), "{}");
        // Every other field keeps its positioned diagnostics.
        let errs = load("replies:\n  - content: {a: 1}\n    node: {n: x}\n  - error: [boom]\n").unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!((errs[0].code.as_str(), errs[0].line, errs[0].column), ("wrong-type", 3, 11));
        assert!(errs[0].message.contains("`node` must be text"), "{}", errs[0].message);
        assert_eq!((errs[1].line, errs[1].column), (4, 12));
        assert!(errs[1].message.contains("`error` must be text"), "{}", errs[1].message);
    }

    #[test]
    fn unknown_key_in_reply_suggests() {
        let errs = load("replies:\n  - contnet: hi\n").unwrap_err();
        let d = errs.iter().find(|d| d.code == "unknown-key").expect("unknown key reported");
        assert_eq!(d.message, "unknown key `contnet` in a reply");
        assert_eq!(d.hint.as_deref(), Some("did you mean `content`?"));
        assert_eq!((d.file.as_str(), d.line, d.column), ("replies.yaml", 2, 5));
        let errs = load("replies:\n  - content: hi\n    toolcalls: []\n").unwrap_err();
        assert_eq!(errs[0].hint.as_deref(), Some("did you mean `tool_calls`?"));
        let errs = load("replies:\n  - content: hi\n    zzzzzz: 1\n").unwrap_err();
        assert_eq!(errs[0].hint.as_deref(), Some("a reply may have: `content`, `tool_calls`, `node`, `error`"));
        let errs = load("replies:\n  - tool_calls: [{nmae: x}]\n").unwrap_err();
        assert!(errs.iter().any(|d| d.hint.as_deref() == Some("did you mean `name`?")), "{errs:?}");
    }

    #[test]
    fn load_reads_files_and_reports_io_errors() {
        let dir = std::env::temp_dir().join(format!("switchyard-run-provider-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("s.yaml");
        std::fs::write(&f, "replies:\n  - content: hi\n").unwrap();
        let p = ScriptedProvider::load(&f).unwrap();
        assert_eq!(p.path(), f.as_path());
        assert_eq!(content(&p, "a"), "hi");
        let errs = ScriptedProvider::load(&dir.join("missing.yaml")).unwrap_err();
        assert_eq!(errs[0].code, "io-error");
        assert!(errs[0].message.contains("missing.yaml"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
