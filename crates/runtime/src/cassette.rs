//! Record and replay: a cassette holds every LLM and tool exchange of a run, so the run can be
//! repeated offline, without keys, servers or tools.
//!
//! - [`Recorder`] wraps any provider; each exchange is appended to the cassette file as it
//!   happens (the file is rewritten atomically, so a crash keeps everything up to that point).
//! - [`Replayer`] answers from a cassette. Calls are matched by node and by their order within
//!   the node (the 2nd call of node `plan` gets the 2nd recorded answer of `plan`), so parallel
//!   branches replay correctly whatever their interleaving. When a request differs from the
//!   recorded one (the graph or a prompt was edited) it reports the first difference as a
//!   `replay_diverged` event and, by default, still answers with the recording so the run can
//!   be followed further; `strict` fails the call instead.
//!
//! Format (JSON):
//!
//! ```json
//! {"version": 1, "exchanges": [
//!   {"kind": "llm", "node": "agent", "call": 1,
//!    "request": {"model": "openai:gpt-4o", "messages": [...], "tools": [...]},
//!    "response": {"content": "...", "tool_calls": [], "usage": {...}}},
//!   {"kind": "tool", "node": "tools", "call": 1, "name": "search", "args": {...}, "result": ...}
//! ]}
//! ```
//!
//! A cassette is written **redacted** unless the recorder is made with [`Recorder::raw`]: known
//! secrets and secret-shaped strings become placeholders ([`crate::secrets::scrub_for_file`]),
//! and a replay scrubs the live request the same way before comparing, so a redacted recording
//! replays to the same trace. The file is readable by the user only (0600), written to an
//! exclusive random temp name beside it (never following a planted symlink) and renamed.
//!
//! **Effects** (version 2) are what a run does to the machine it runs on, recorded with their
//! results so that a replay does none of it: a Loki script node's output, a hook's answer, a
//! Python tool's description, a RAG retrieval. They are matched by node, name and input (the
//! 2nd run of script `a.sh` at node `x` with the same state gets the 2nd recorded result), so
//! map items in any order replay correctly. A version 1 cassette has no effects; replaying it
//! runs them, as before.
//!
//! Tool exchanges also hold what a run asks outside its model: an MCP server's tool listing
//! (node `@mcp:<server>`, name `tools/list`, so a replay never starts the server) and each A2A
//! exchange with a remote sub-agent (name `a2a:<id>`; args: URL, message, task ids; result:
//! protocol, task state, task ids, text).

use crate::events::EventBody;
use crate::provider::{
    BoxProvider, CallCtl, ErrorKind, LlmProvider, LlmRequest, LlmResponse, ModelRef, ProviderError, TokenUsage, ToolCall,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const VERSION: u32 = 2;

/// The largest cassette read (512 MiB).
pub const CASSETTE_CAP: u64 = 512 << 20;

/// The tool name under which a run's cassette records an MCP server's tool listing (node
/// `@mcp:<server>`), so a replay offers the same tools without starting the server.
pub const MCP_LISTING: &str = "tools/list";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    pub version: u32,
    #[serde(default)]
    pub exchanges: Vec<Exchange>,
}

/// The parts of a request a replay compares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub messages: Value,
    #[serde(default)]
    pub tools: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedResponse {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: TokenUsage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedError {
    pub kind: ErrorKind,
    pub message: String,
    /// The error's own text when it differs from `message` ([`ProviderError::raw`]), so a
    /// replay records the same state as the run it replays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Exchange {
    Llm {
        node: String,
        /// 1-based order of the call within its node.
        call: usize,
        request: RecordedRequest,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response: Option<RecordedResponse>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<RecordedError>,
    },
    Tool {
        node: String,
        call: usize,
        name: String,
        #[serde(default)]
        args: Value,
        #[serde(default)]
        result: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A side effect with its result (see the module docs).
    Effect {
        node: String,
        /// What ran: `script:<path>`, `hook:<executor>:<point>`, `describe:<import path>`, `rag`.
        name: String,
        /// Its input (a script's state, a hook's context, a query).
        #[serde(default)]
        args: Value,
        #[serde(default)]
        result: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

fn recorded_request(req: &LlmRequest) -> RecordedRequest {
    RecordedRequest {
        model: req.model.as_ref().map(ModelRef::to_string),
        messages: req.messages.clone(),
        tools: req.tools.clone(),
        response_format: req.response_format.clone(),
    }
}

impl Cassette {
    pub fn load(path: &Path) -> Result<Cassette, String> {
        // Bounded: a device, a FIFO or a file past the cap is refused, never read forever.
        let text = syntax::source::read_bounded_text(path, CASSETTE_CAP, None)
            .map_err(|e| format!("cannot read the cassette {}: {e}", path.display()))?;
        let c: Cassette = serde_json::from_str(&text).map_err(|e| {
            format!("{}:{}:{}: not a cassette: {e}", path.display(), e.line(), e.column())
        })?;
        if !(1..=VERSION).contains(&c.version) {
            return Err(format!(
                "{}: cassette version {} is not supported (this build reads versions 1 to {VERSION})",
                path.display(),
                c.version
            ));
        }
        Ok(c)
    }

    /// Write atomically and privately: see [`write_private`].
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        write_private(path, text.as_bytes())
    }

    /// The cassette with known secrets and secret-shaped strings replaced by placeholders.
    pub fn scrubbed(&self) -> Cassette {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        crate::secrets::scrub_for_file(&mut v);
        serde_json::from_value(v).unwrap_or_else(|_| self.clone())
    }
}

/// Write `bytes` to `path` so that a crash leaves the old file or the new one, nobody else can
/// read it (0600), and nothing planted in the folder is followed: the bytes go to a fresh temp
/// file beside `path`, created exclusively (`O_CREAT|O_EXCL`, so an existing name or symlink
/// is refused) under a random name, synced, then renamed over `path`.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut attempt = 0u32;
    let (tmp, mut f) = loop {
        let tmp = dir.join(format!(".{name}.{:016x}.tmp", random_u64()));
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(format!("cannot write in {}: {e}", dir.display())),
        }
    };
    let written = f.write_all(bytes).and_then(|_| f.sync_all());
    drop(f);
    if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", path.display()));
    }
    Ok(())
}

/// 64 random bits (the OS's randomness through the standard library's hasher keys, mixed with
/// the time and a counter), for temp file names.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    h.write_u32(std::process::id());
    h.finish()
}

/// Counts calls per node (for matching).
#[derive(Default, Clone)]
struct Counter(HashMap<(bool, String), usize>);

impl Counter {
    /// As JSON for a durable run's checkpoint: `[[tool, node, calls], ...]`, sorted.
    fn to_json(&self) -> Value {
        let mut v: Vec<(bool, String, usize)> = self.0.iter().map(|((t, n), c)| (*t, n.clone(), *c)).collect();
        v.sort();
        serde_json::to_value(v).unwrap_or(Value::Null)
    }
    fn from_json(v: &Value) -> Result<Counter, String> {
        let list: Vec<(bool, String, usize)> = serde_json::from_value(v.clone())
            .map_err(|e| format!("the saved position in the cassette is unreadable: {e}"))?;
        Ok(Counter(list.into_iter().map(|(t, n, c)| ((t, n), c)).collect()))
    }
    fn next(&mut self, tool: bool, node: &str) -> usize {
        let n = self.0.entry((tool, node.to_string())).or_insert(0);
        *n += 1;
        *n
    }
}

/// The counter key of an effect: node, name and a digest of its (scrubbed) input.
fn effect_key(node: &str, name: &str, args: &Value) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(args.to_string().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("effect\u{1f}{node}\u{1f}{name}\u{1f}{hex}")
}

/// Records every exchange of a run into a cassette file (see the module docs).
pub struct Recorder {
    inner: BoxProvider,
    path: PathBuf,
    /// Write secrets as they are (`--raw`); redacted otherwise.
    raw: bool,
    state: Mutex<RecState>,
}

#[derive(Default)]
struct RecState {
    cassette: Cassette,
    counter: Counter,
    /// Marks handed out: (inner provider's mark, exchanges so far, counter).
    marks: Vec<(usize, usize, Counter)>,
    /// The first write error (reported once).
    write_error: Option<String>,
}

impl Recorder {
    /// Records into `path` (created or replaced when the first exchange happens), redacted.
    pub fn new(inner: BoxProvider, path: &Path) -> Recorder {
        let state = RecState { cassette: Cassette { version: VERSION, exchanges: Vec::new() }, ..RecState::default() };
        Recorder { inner, path: path.to_path_buf(), raw: false, state: Mutex::new(state) }
    }

    /// Records into `path` with secrets as they are (an explicit opt-in: `--raw`).
    pub fn raw(inner: BoxProvider, path: &Path) -> Recorder {
        Recorder { raw: true, ..Recorder::new(inner, path) }
    }

    fn save(&self, cassette: &Cassette) -> Result<(), String> {
        if self.raw { cassette.save(&self.path) } else { cassette.scrubbed().save(&self.path) }
    }

    fn push(&self, make: impl FnOnce(&mut Counter) -> Exchange) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let ex = make(&mut st.counter);
        st.cassette.exchanges.push(ex);
        if let Err(e) = self.save(&st.cassette)
            && st.write_error.is_none()
        {
            tracing::warn!("recording: {e}");
            st.write_error = Some(e);
        }
    }
}

impl LlmProvider for Recorder {
    fn network_allowed(&self) -> bool {
        self.inner.network_allowed()
    }
    fn complete(&self, req: &LlmRequest, ctl: &CallCtl<'_>) -> Result<LlmResponse, ProviderError> {
        let out = self.inner.complete(req, ctl);
        self.push(|counter| {
            let call = counter.next(false, &req.node);
            let (response, error) = match &out {
                Ok(r) => (
                    Some(RecordedResponse {
                        content: r.content.clone(),
                        tool_calls: r.tool_calls.clone(),
                        usage: r.usage,
                        model: r.model.clone(),
                        finish_reason: r.finish_reason.clone(),
                    }),
                    None,
                ),
                Err(e) => (None, Some(RecordedError { kind: e.kind, message: e.message.clone(), raw: e.raw.clone() })),
            };
            Exchange::Llm { node: req.node.clone(), call, request: recorded_request(req), response, error }
        });
        out
    }
    fn mark(&self) -> usize {
        let inner = self.inner.mark();
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let entry = (inner, st.cassette.exchanges.len(), st.counter.clone());
        st.marks.push(entry);
        st.marks.len() - 1
    }
    fn rewind_to(&self, mark: usize) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Some((inner, len, counter)) = st.marks.get(mark).cloned() else { return };
        st.cassette.exchanges.truncate(len);
        st.counter = counter;
        let _ = self.save(&st.cassette);
        drop(st);
        self.inner.rewind_to(inner);
    }
    fn describe(&self) -> String {
        format!("{}, recorded to {}", self.inner.describe(), self.path.display())
    }
    fn position(&self) -> Value {
        self.inner.position()
    }
    fn restore_position(&self, position: &Value) -> Result<(), String> {
        self.inner.restore_position(position)
    }
    fn replay_tool(&self, node: &str, name: &str, args: &Value) -> Option<Result<Value, String>> {
        self.inner.replay_tool(node, name, args)
    }
    fn replay_effect(&self, node: &str, name: &str, args: &Value) -> Option<Result<Value, String>> {
        self.inner.replay_effect(node, name, args)
    }
    fn record_effect(&self, node: &str, name: &str, args: &Value, outcome: &Result<Value, String>) {
        self.push(|_| {
            let (result, error) = match outcome {
                Ok(v) => (v.clone(), None),
                Err(e) => (Value::Null, Some(e.clone())),
            };
            Exchange::Effect { node: node.to_string(), name: name.to_string(), args: args.clone(), result, error }
        });
    }
    fn record_tool(&self, node: &str, name: &str, args: &Value, outcome: &Result<Value, String>) {
        self.push(|counter| {
            let call = counter.next(true, node);
            let (result, error) = match outcome {
                Ok(v) => (v.clone(), None),
                Err(e) => (Value::Null, Some(e.clone())),
            };
            Exchange::Tool { node: node.to_string(), call, name: name.to_string(), args: args.clone(), result, error }
        });
    }
}

/// Answers from a cassette (see the module docs).
pub struct Replayer {
    path: PathBuf,
    cassette: Cassette,
    strict: bool,
    state: Mutex<ReplayState>,
}

#[derive(Default)]
struct ReplayState {
    counter: Counter,
    marks: Vec<Counter>,
    /// A divergence was reported already (only the first is).
    diverged: bool,
}

/// The first place two JSON values differ: (path, left, right).
pub fn first_difference(path: &str, a: &Value, b: &Value) -> Option<(String, Value, Value)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = first_difference(&p, va, vb) {
                            return Some(d);
                        }
                    }
                    None => return Some((p, va.clone(), Value::Null)),
                }
            }
            y.iter().find(|(k, _)| !x.contains_key(*k)).map(|(k, vb)| {
                (if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, Value::Null, vb.clone())
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(&format!("{path}[{i}]"), va, vb) {
                    return Some(d);
                }
            }
            if x.len() != y.len() {
                let i = x.len().min(y.len());
                return Some((
                    format!("{path}[{i}]"),
                    x.get(i).cloned().unwrap_or(Value::Null),
                    y.get(i).cloned().unwrap_or(Value::Null),
                ));
            }
            None
        }
        _ if a == b => None,
        _ => Some((path.to_string(), a.clone(), b.clone())),
    }
}

impl Replayer {
    pub fn load(path: &Path, strict: bool) -> Result<Replayer, String> {
        let cassette = Cassette::load(path)?;
        Ok(Replayer { path: path.to_path_buf(), cassette, strict, state: Mutex::new(ReplayState::default()) })
    }

    pub fn cassette(&self) -> &Cassette {
        &self.cassette
    }

    fn find_llm(&self, node: &str, call: usize) -> Option<(&RecordedRequest, &Option<RecordedResponse>, &Option<RecordedError>)> {
        self.cassette.exchanges.iter().find_map(|e| match e {
            Exchange::Llm { node: n, call: c, request, response, error } if n == node && *c == call => Some((request, response, error)),
            _ => None,
        })
    }

    fn recorded_calls(&self, node: &str, tool: bool) -> usize {
        self.cassette
            .exchanges
            .iter()
            .filter(|e| match e {
                Exchange::Llm { node: n, .. } => !tool && n == node,
                Exchange::Tool { node: n, .. } => tool && n == node,
                Exchange::Effect { .. } => false,
            })
            .count()
    }
}

impl LlmProvider for Replayer {
    fn network_allowed(&self) -> bool {
        false
    }
    fn complete(&self, req: &LlmRequest, ctl: &CallCtl<'_>) -> Result<LlmResponse, ProviderError> {
        let call = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            st.counter.next(false, &req.node)
        };
        let file = self.path.display();
        let Some((request, response, error)) = self.find_llm(&req.node, call) else {
            let n = self.recorded_calls(&req.node, false);
            let why = format!("the recording has {n} call(s) of node `{}`; this is call {call}", req.node);
            self.report(ctl, &req.node, call, why.clone(), Value::Null, Value::Null);
            return Err(ProviderError::new(
                &req.node,
                ErrorKind::Config,
                format!("replay: no recorded answer for call {call} of node `{}` in {file} ({why})", req.node),
            )
            .hint("the graph now makes calls the recorded run did not: record the run again (`--record`), or run it live"));
        };
        let now = recorded_request(req);
        // Both sides scrubbed: a redacted recording's placeholders equal the live secrets.
        let mut a = serde_json::to_value(request).unwrap_or(Value::Null);
        let mut b = serde_json::to_value(&now).unwrap_or(Value::Null);
        crate::secrets::scrub_for_file(&mut a);
        crate::secrets::scrub_for_file(&mut b);
        if let Some((path, recorded, current)) = first_difference("", &a, &b) {
            let first = self.report(ctl, &req.node, call, path.clone(), recorded.clone(), current.clone());
            if self.strict {
                return Err(ProviderError::new(
                    &req.node,
                    ErrorKind::BadRequest,
                    format!(
                        "replay diverged at call {call} of node `{}`: `{path}` was {} in the recording, now {}",
                        req.node,
                        short(&recorded),
                        short(&current)
                    ),
                ));
            }
            if first {
                tracing::info!("replay diverged at {}#{call}: {path}", req.node);
            }
        }
        if let Some(e) = error {
            // The recorded failure exactly as it happened (a replay reproduces the trace).
            let mut err = ProviderError::new(&req.node, e.kind, e.message.clone());
            err.raw = e.raw.clone();
            return Err(err);
        }
        let r = response.clone().unwrap_or_default();
        if let Some(c) = &r.content
            && !c.is_empty()
        {
            (ctl.on_text)(c);
        }
        Ok(LlmResponse {
            content: r.content,
            tool_calls: r.tool_calls,
            usage: r.usage,
            model: r.model,
            finish_reason: r.finish_reason,
        })
    }
    fn mark(&self) -> usize {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let c = st.counter.clone();
        st.marks.push(c);
        st.marks.len() - 1
    }
    fn rewind_to(&self, mark: usize) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = st.marks.get(mark).cloned() {
            st.counter = c;
        }
    }
    fn describe(&self) -> String {
        format!(
            "replay of {}{}{}",
            self.path.display(),
            if self.strict { " (strict)" } else { "" },
            if self.cassette.version >= 2 {
                "; scripts, hooks, tools and retrievals answered from it, nothing runs"
            } else {
                "; an old cassette: scripts, hooks and retrievals run again"
            }
        )
    }
    fn position(&self) -> Value {
        json!({"replay": self.state.lock().unwrap_or_else(|p| p.into_inner()).counter.to_json()})
    }
    fn restore_position(&self, position: &Value) -> Result<(), String> {
        match position.get("replay") {
            Some(c) => {
                let counter = Counter::from_json(c)?;
                self.state.lock().unwrap_or_else(|p| p.into_inner()).counter = counter;
                Ok(())
            }
            None if position.is_null() => Ok(()),
            None => Err(format!("the saved run did not replay a cassette; it cannot go on with {}", self.path.display())),
        }
    }
    fn replay_effect(&self, node: &str, name: &str, args: &Value) -> Option<Result<Value, String>> {
        if self.cassette.version < 2 {
            return None;
        }
        let mut now = args.clone();
        crate::secrets::scrub_for_file(&mut now);
        let key = effect_key(node, &crate::secrets::scrub_text(name), &now);
        let nth = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            st.counter.next(true, &key)
        };
        let mut same = self.cassette.exchanges.iter().filter_map(|e| match e {
            // Names can hold secrets (a hook's URL): compared as the file keeps them.
            Exchange::Effect { node: n, name: nm, args: a, result, error }
                if n == node && crate::secrets::scrub_text(nm) == crate::secrets::scrub_text(name) =>
            {
                let mut rec = a.clone();
                crate::secrets::scrub_for_file(&mut rec);
                (rec == now).then_some((result, error))
            }
            _ => None,
        });
        Some(match same.nth(nth - 1) {
            Some((_, Some(e))) => Err(e.clone()),
            Some((result, None)) => Ok(result.clone()),
            None => Err(format!(
                "replay: {} holds no result of `{name}` at node `{node}` for this input (run {nth} with it); \
                 the graph or its input changed since the recording, and a replay runs nothing: record the run again (`--record`)",
                self.path.display()
            )),
        })
    }
    fn replay_tool(&self, node: &str, name: &str, args: &Value) -> Option<Result<Value, String>> {
        let call = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            st.counter.next(true, node)
        };
        let found = self.cassette.exchanges.iter().find_map(|e| match e {
            Exchange::Tool { node: n, call: c, name: nm, args: a, result, error } if n == node && *c == call => {
                Some((nm, a, result, error))
            }
            _ => None,
        });
        Some(match found {
            Some((nm, a, result, error)) => {
                let (mut rec_args, mut now_args) = (a.clone(), args.clone());
                crate::secrets::scrub_for_file(&mut rec_args);
                crate::secrets::scrub_for_file(&mut now_args);
                if nm != name || rec_args != now_args {
                    let (rec, now) = (json!({"name": nm, "args": a}), json!({"name": name, "args": args}));
                    if self.strict {
                        return Some(Err(format!(
                            "replay diverged at tool call {call} of node `{node}`: recorded {}, now {}",
                            short(&rec),
                            short(&now)
                        )));
                    }
                }
                match error {
                    Some(e) => Err(e.clone()),
                    None => Ok(result.clone()),
                }
            }
            // A cassette recorded before MCP listings were kept: list the server live.
            None if name == MCP_LISTING && node.starts_with("@mcp:") => return None,
            None => Err(format!(
                "replay: no recorded result for tool call {call} of node `{node}` (`{name}`) in {}; record the run again",
                self.path.display()
            )),
        })
    }
}

impl Replayer {
    /// Emits `replay_diverged` for the first divergence only; returns whether this was it.
    fn report(&self, ctl: &CallCtl<'_>, node: &str, call: usize, path: String, recorded: Value, now: Value) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.diverged {
            return false;
        }
        st.diverged = true;
        drop(st);
        (ctl.emit)(EventBody::ReplayDiverged { node: node.to_string(), call, path, recorded, now });
        true
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 { format!("{}…", s.chars().take(120).collect::<String>()) } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ScriptedProvider;

    fn req(node: &str, text: &str) -> LlmRequest {
        LlmRequest { node: node.into(), messages: json!([{"role": "user", "content": text}]), tools: json!([]), ..Default::default() }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("switchyard-cassette-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn record_then_replay_gives_the_same_answers_and_reports_the_first_difference() {
        let d = scratch("rr");
        let script = ScriptedProvider::from_str(Path::new("r.yaml"), "replies:\n  - content: one\n  - content: two\n").unwrap();
        let rec = Recorder::new(Box::new(script), &d.join("c.json"));
        let ctl = CallCtl::none();
        assert_eq!(rec.complete(&req("a", "hi"), &ctl).unwrap().content.as_deref(), Some("one"));
        rec.record_tool("t", "add", &json!({"x": 1}), &Ok(json!(2)));
        assert_eq!(rec.complete(&req("a", "again"), &ctl).unwrap().content.as_deref(), Some("two"));

        let rep = Replayer::load(&d.join("c.json"), false).unwrap();
        assert_eq!(rep.cassette().exchanges.len(), 3);
        assert_eq!(rep.complete(&req("a", "hi"), &ctl).unwrap().content.as_deref(), Some("one"));
        assert_eq!(rep.replay_tool("t", "add", &json!({"x": 1})), Some(Ok(json!(2))));
        // An edited prompt: still answered (lenient), and reported.
        let seen = Mutex::new(Vec::new());
        let emit = |e: EventBody| seen.lock().unwrap().push(e);
        let ctl2 = CallCtl { emit: &emit, ..CallCtl::none() };
        assert_eq!(rep.complete(&req("a", "edited"), &ctl2).unwrap().content.as_deref(), Some("two"));
        let seen = seen.into_inner().unwrap();
        assert!(
            matches!(&seen[..], [EventBody::ReplayDiverged { node, call: 2, path, recorded, now }]
                if node == "a" && path == "messages[0].content" && recorded == "again" && now == "edited"),
            "{seen:?}"
        );
        // A call the recording does not have.
        let e = rep.complete(&req("a", "x"), &ctl).unwrap_err();
        assert!(e.message.contains("no recorded answer for call 3 of node `a`"), "{}", e.message);
        // Strict mode fails at the difference.
        let strict = Replayer::load(&d.join("c.json"), true).unwrap();
        let e = strict.complete(&req("a", "changed"), &ctl).unwrap_err();
        assert!(e.message.contains("replay diverged at call 1 of node `a`"), "{}", e.message);
    }

    #[test]
    fn a_recording_holds_no_secret_is_private_and_replays_without_a_difference() {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch("secret");
        let known = "known-secret-value-5d1e0c";
        crate::secrets::register("CASSETTE_TEST_TOKEN", known);
        let shaped = "sk-AbCdEfGhIjKlMnOpQrStUvWx0123";
        let prompt = format!("token {known} and key {shaped}");
        let script = ScriptedProvider::from_str(Path::new("r.yaml"), "replies:\n  - content: done\n").unwrap();
        let path = d.join("c.json");
        // A planted symlink where an old fixed temp name was: never followed.
        let victim = d.join("victim.txt");
        std::fs::write(&victim, "untouched").unwrap();
        std::os::unix::fs::symlink(&victim, d.join("c.cassette.tmp")).unwrap();
        let rec = Recorder::new(Box::new(script), &path);
        let ctl = CallCtl::none();
        rec.complete(&req("a", &prompt), &ctl).unwrap();
        rec.record_tool("t", "lookup", &json!({"auth": known}), &Ok(json!({"echo": shaped})));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(known) && !text.contains(shaped), "{text}");
        assert!(text.contains("[redacted:CASSETTE_TEST_TOKEN]") && text.contains("[redacted:secret-shaped]"), "{text}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        let names: Vec<String> =
            std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp") || n == "c.cassette.tmp"), "{names:?}");

        // The live request holds the secrets; the recording placeholders: no difference.
        let rep = Replayer::load(&path, true).unwrap();
        assert_eq!(rep.complete(&req("a", &prompt), &ctl).unwrap().content.as_deref(), Some("done"));
        assert_eq!(rep.replay_tool("t", "lookup", &json!({"auth": known})).unwrap().unwrap(), json!({"echo": "[redacted:secret-shaped]"}));

        // `raw` keeps them, on explicit request.
        let script = ScriptedProvider::from_str(Path::new("r.yaml"), "replies:\n  - content: done\n").unwrap();
        let raw = Recorder::raw(Box::new(script), &d.join("raw.json"));
        raw.complete(&req("a", &prompt), &ctl).unwrap();
        assert!(std::fs::read_to_string(d.join("raw.json")).unwrap().contains(known));
    }

    #[test]
    fn effects_replay_by_node_name_and_input_in_any_order_and_old_cassettes_run_them() {
        let d = scratch("effects");
        let script = ScriptedProvider::from_str(Path::new("r.yaml"), "replies: []\n").unwrap();
        let rec = Recorder::new(Box::new(script), &d.join("c.json"));
        // Two map items running the same script with different input, and one running twice.
        rec.record_effect("m", "script:a.sh", &json!({"item": 1}), &Ok(json!({"n": 1})));
        rec.record_effect("m", "script:a.sh", &json!({"item": 2}), &Ok(json!({"n": 2})));
        rec.record_effect("m", "script:a.sh", &json!({"item": 1}), &Err("exit 3".into()));
        let c = Cassette::load(&d.join("c.json")).unwrap();
        assert_eq!(c.version, VERSION);
        assert!(matches!(&c.exchanges[0], Exchange::Effect { node, name, .. } if node == "m" && name == "script:a.sh"));

        let rep = Replayer::load(&d.join("c.json"), false).unwrap();
        assert_eq!(rep.replay_effect("m", "script:a.sh", &json!({"item": 2})), Some(Ok(json!({"n": 2}))));
        assert_eq!(rep.replay_effect("m", "script:a.sh", &json!({"item": 1})), Some(Ok(json!({"n": 1}))));
        assert_eq!(rep.replay_effect("m", "script:a.sh", &json!({"item": 1})), Some(Err("exit 3".into())));
        let e = rep.replay_effect("m", "script:a.sh", &json!({"item": 1})).unwrap().unwrap_err();
        assert!(e.contains("no result of `script:a.sh` at node `m`") && e.contains("runs nothing"), "{e}");
        let e = rep.replay_effect("m", "script:a.sh", &json!({"item": 9})).unwrap().unwrap_err();
        assert!(e.contains("record the run again"), "{e}");
        // Effects do not shift the numbering of tool calls.
        assert!(matches!(rep.replay_tool("m", "t", &json!({})), Some(Err(e)) if e.contains("tool call 1 of node `m`")));

        // A version 1 cassette recorded no effects: replaying it runs them (None).
        std::fs::write(d.join("v1.json"), "{\"version\": 1, \"exchanges\": []}").unwrap();
        let old = Replayer::load(&d.join("v1.json"), true).unwrap();
        assert_eq!(old.replay_effect("m", "script:a.sh", &json!({"item": 1})), None);
        std::fs::write(d.join("v9.json"), "{\"version\": 9, \"exchanges\": []}").unwrap();
        assert!(Replayer::load(&d.join("v9.json"), true).err().unwrap().contains("versions 1 to 2"));
    }

    #[test]
    fn rewinding_a_recording_drops_what_came_after() {
        let d = scratch("rewind");
        let script = ScriptedProvider::from_str(Path::new("r.yaml"), "replies:\n  - content: one\n  - content: two\n").unwrap();
        let rec = Recorder::new(Box::new(script), &d.join("c.json"));
        let ctl = CallCtl::none();
        rec.complete(&req("a", "1"), &ctl).unwrap();
        let m = rec.mark();
        rec.complete(&req("a", "2"), &ctl).unwrap();
        rec.rewind_to(m);
        assert_eq!(rec.complete(&req("a", "2b"), &ctl).unwrap().content.as_deref(), Some("two"));
        let c = Cassette::load(&d.join("c.json")).unwrap();
        assert_eq!(c.exchanges.len(), 2);
        assert!(matches!(&c.exchanges[1], Exchange::Llm { call: 2, request, .. } if request.messages[0]["content"] == "2b"));
    }

    #[test]
    fn bad_cassettes_are_positioned() {
        let d = scratch("bad");
        std::fs::write(d.join("c.json"), "{\"version\": 1, \"exchanges\": [ {\"kind\": \"llm\"} ]}").unwrap();
        let e = Replayer::load(&d.join("c.json"), false).err().unwrap();
        assert!(e.contains("c.json:1:") && e.contains("not a cassette"), "{e}");
        let e = Replayer::load(&d.join("missing.json"), false).err().unwrap();
        assert!(e.contains("cannot read the cassette"), "{e}");
    }

    #[test]
    fn first_difference_paths() {
        assert_eq!(first_difference("", &json!({"a": [1, 2]}), &json!({"a": [1, 2]})), None);
        assert_eq!(first_difference("", &json!({"a": [1, 2]}), &json!({"a": [1, 3]})).unwrap().0, "a[1]");
        assert_eq!(first_difference("", &json!({"a": [1]}), &json!({"a": [1, 3]})).unwrap().0, "a[1]");
        assert_eq!(first_difference("", &json!({"a": 1}), &json!({"a": 1, "b": 2})).unwrap().0, "b");
    }
}
