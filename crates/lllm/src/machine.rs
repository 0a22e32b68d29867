//! `LllmMachine`: one agent of an LLLM config, run as LLLM's agent call loop
//! (`Agent._call`, reference/lllm-skills-a2a-mcp.md §1.1), each state of the loop a node the
//! debugger steps through:
//!
//! | node | what the step does | routes to |
//! | --- | --- | --- |
//! | `invoke` | one LLM call on the active dialog (the canonical one, or the fork of the last exception), cut to `context_manager`'s limit first (the cut another fork, `context_cuts` saying what was dropped) | `interrupt` (tool calls), `success` (a plain reply that parses), `exception` (a parse or validation failure, malformed tool-call arguments), `llm_recall` (a network or API error), `failure` (a budget spent, an error nothing retries) |
//! | `exception` | forks the dialog: the child holds the bad reply and the `on_exception` message (`{error_message}`), and becomes the active dialog; the canonical dialog never sees them | `invoke` |
//! | `llm_recall` | waits (back-off: `Retry-After`, else 0.5 s doubling up to 8 s) | `invoke` |
//! | `interrupt` | runs each tool call (an identical repeat gets LLLM's canned answer; an unknown tool fails the call, as upstream), feeds each result back (`on_interrupt`, `{call_results}`, role `tool`); at `max_interrupt_steps` appends `on_interrupt_final` and offers no tools any more | `invoke`, `failure` |
//! | `success` | the reply is the delivery; the run finishes with its text | — |
//! | `failure` | the run fails with the reason | — |
//!
//! The budgets are LLLM's totals over the whole call: `max_exception_retry` exceptions,
//! `max_interrupt_steps` steps with tool calls (`0`: 100, LLLM's "unlimited"),
//! `max_llm_recall` recalls. The state (what the state panel shows) is LLLM's
//! `AgentCallSession` plus the dialog tree: `dialogs` (each with `id`, `parent`, `split_point`,
//! `messages`), `active_dialog`, `exception_retries`, `interrupts`, `llm_recalls`, `delivery`.
//! Breakpoint conditions are CEL over it (`state.exception_retries.size() >= 2`, or the fields
//! bare).

use crate::context::{self, ContextManager};
use crate::prompt::{self, Located, ModuleRef, Prompt};
use crate::tools;
use connect::pybridge::{PyBridge, PyError};
use model::doc::Document;
use model::skills::AgentSkill;
use runtime::events::{EventBody, RouteReason};
use runtime::provider::{ErrorKind, LlmProvider, LlmRequest, ModelRef, ToolCall};
use runtime::session::{Cx, Machine, Pending, StepOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The nodes of the call loop, in the order the canvas draws them.
pub const NODES: [&str; 6] = ["invoke", "exception", "interrupt", "llm_recall", "success", "failure"];

/// The kind of each node (what `node_enter` carries).
fn kind_of(node: &str) -> &'static str {
    match node {
        "invoke" => "call_llm",
        "exception" => "lllm_exception",
        "interrupt" => "tool_node",
        "llm_recall" => "lllm_recall",
        "success" => "lllm_success",
        _ => "lllm_failure",
    }
}

/// How long one Python tool call may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long importing a prompt module may take (by default).
const PROMPT_TIMEOUT: Duration = Duration::from_secs(60);
/// LLLM's "unlimited" interrupt steps (`max_interrupt_steps: 0`).
const UNLIMITED_STEPS: u64 = 100;
/// The checkpoint format of [`Machine::snapshot`].
const FORMAT: u64 = 1;

/// How a run is set up beyond the document.
#[derive(Clone, Debug)]
pub struct LllmOptions {
    /// Whether the run may use the network besides its model calls (URL skills).
    pub network: bool,
    /// Extra `sys.path` entries for Python tools.
    pub python_path: Vec<PathBuf>,
    pub child_env: connect::childenv::ChildEnv,
    /// Scales the `llm_recall` back-off (tests use a small one).
    pub backoff_scale: f64,
    /// Whether the config's folder is trusted for this run: a prompt module runs only then
    /// (front ends refuse untrusted runs before; this keeps library callers honest).
    pub trusted: bool,
    /// How long importing a prompt module may take.
    pub prompt_timeout: Duration,
}

impl Default for LllmOptions {
    fn default() -> Self {
        LllmOptions {
            network: false,
            python_path: Vec::new(),
            child_env: Default::default(),
            backoff_scale: 1.0,
            trusted: false,
            prompt_timeout: PROMPT_TIMEOUT,
        }
    }
}

/// A tool the agent offers.
#[derive(Clone, Debug)]
enum Tool {
    Python { import_path: String },
    /// A function the prompt module's `Prompt` declares (`function_list`).
    PromptFunction { module: ModuleRef, name: String },
    ActivateSkill,
}

/// What never changes during a run.
struct Shared {
    agent: String,
    file: PathBuf,
    model: Option<ModelRef>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    /// The other model arguments, sent as written (`LlmRequest::extra`).
    extra: Map<String, Value>,
    /// `context_manager`, when one applies.
    context: Option<ContextManager>,
    prompt: Prompt,
    /// The `tools` entries that are Python tools (import paths), in order.
    python_tools: Vec<String>,
    skills: Vec<AgentSkill>,
    /// Anthropic skill ids (sent to Anthropic models as API arguments).
    skill_ids: Vec<String>,
    warnings: Vec<String>,
    max_exception_retry: u64,
    max_interrupt_steps: u64,
    max_llm_recall: u64,
    python_path: Vec<PathBuf>,
    child_env: connect::childenv::ChildEnv,
    backoff_scale: f64,
    /// The tools offered (schemas), worked out at the first `invoke` (Python tools are described
    /// by importing them), shared by forks.
    offered: Mutex<Option<Vec<(Value, Tool)>>>,
    py: Mutex<Option<PyBridge>>,
}

/// One dialog of the tree.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dialog {
    pub id: String,
    /// The dialog it was forked from.
    #[serde(default)]
    pub parent: Option<String>,
    /// How many of the parent's messages it starts with.
    #[serde(default)]
    pub split_point: usize,
    /// Why it was forked (`exception 1: …`).
    #[serde(default)]
    pub reason: Option<String>,
    pub messages: Vec<Value>,
}

/// One failure the loop retried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Retry {
    /// The interrupt step it happened in.
    pub step: u64,
    pub error: String,
}

/// One step with tool calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    pub step: u64,
    pub calls: Vec<ToolCall>,
}

/// The run's state (LLLM's `AgentCallSession` and the dialog tree), what the state panel shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallState {
    pub agent: String,
    /// `initial`, `exception`, `interrupt`, `llm_recall`, `success` or `failure`.
    pub state: String,
    pub input: String,
    pub prompt_args: Map<String, Value>,
    pub dialogs: Vec<Dialog>,
    pub active_dialog: String,
    /// The current interrupt step (0-based).
    pub interrupt_step: u64,
    pub exception_retries: Vec<Retry>,
    pub interrupts: Vec<Interrupt>,
    pub llm_recalls: Vec<Retry>,
    pub activated_skills: Vec<String>,
    /// `on_interrupt_final` was sent: no more tools.
    pub final_forced: bool,
    /// The reply the next node acts on (a bad reply for `exception`, tool calls for
    /// `interrupt`, the delivery for `success`).
    pub last_reply: Option<Value>,
    /// Why the next node runs (the parse error, the provider error, the failure).
    pub last_error: Option<String>,
    /// `Retry-After` of the last provider error, in ms.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
    pub delivery: Option<Value>,
    pub limits: Value,
    /// The model arguments each call sends (`temperature`, `top_p` and the rest as written).
    #[serde(default)]
    pub model_args: Map<String, Value>,
    /// Each time `context_manager` cut the dialog before a call: which dialog, the fork sent,
    /// the messages dropped (index, role, start), the one cut, the tokens before and after.
    #[serde(default)]
    pub context_cuts: Vec<Value>,
}

const MAIN: &str = "main";

impl CallState {
    fn dialog(&self, id: &str) -> Option<&Dialog> {
        self.dialogs.iter().find(|d| d.id == id)
    }
    fn dialog_mut(&mut self, id: &str) -> &mut Dialog {
        let i = self.dialogs.iter().position(|d| d.id == id).unwrap_or(0);
        &mut self.dialogs[i]
    }
}

/// A reading of prompts (`load_prompt`, `discover_prompt`) as an effect of the run: replayed
/// from a recording without Python; else run, only in a trusted run (`untrusted` is the
/// refusal), and recorded.
fn prompt_effect(
    provider: Option<&dyn LlmProvider>,
    effect: &str,
    key: &Value,
    trusted: bool,
    untrusted: impl FnOnce() -> String,
    read: impl FnOnce() -> Result<Value, String>,
) -> Result<Value, String> {
    if let Some(recorded) = provider.and_then(|p| p.replay_effect("invoke", effect, key)) {
        return recorded;
    }
    if !trusted {
        return Err(untrusted());
    }
    let out = read();
    if let Some(p) = provider {
        p.record_effect("invoke", effect, key, &out);
    }
    out
}

/// What the prompt reader (`prompt_module.py`) answers to `op` (`load`, `discover`), run in
/// `bridge` (started here, kept for the run's tools); bounded by `opts.prompt_timeout`. `at`
/// says what was being read, for the errors.
fn run_reader(op: &str, args: &Value, at: &str, python_path: &[PathBuf], opts: &LllmOptions, bridge: &mut Option<PyBridge>) -> Result<Value, String> {
    if bridge.is_none() {
        let py = PyBridge::start_with_env(None, python_path, opts.child_env.clone()).map_err(|e| format!("{at}: {e}"))?;
        *bridge = Some(py);
    }
    let py = bridge.as_mut().expect("started");
    py.define_module(prompt::READER, prompt::READER_SOURCE).map_err(|e| format!("{at}: Switchyard's prompt reader did not load: {e}"))?;
    py.call(&format!("{}.{op}", prompt::READER), args, opts.prompt_timeout).map_err(|e| match e {
        PyError::Timeout { .. } => format!(
            "{at}: importing did not finish within {:.0} s, so its Python process was killed (does a module wait or loop when imported?)",
            opts.prompt_timeout.as_secs_f64()
        ),
        other => format!("{at}: {other}"),
    })
}

/// LiteLLM's client settings: how to reach the model, not arguments of the call. They are not
/// sent (the provider file and the keyring say how to reach a model).
const CLIENT_SETTINGS: [&str; 15] = [
    "api_key", "api_base", "base_url", "api_version", "timeout", "request_timeout", "num_retries", "max_retries",
    "drop_params", "extra_headers", "custom_llm_provider", "caching", "mock_response", "fallbacks", "stream",
];

/// An agent's effective model arguments as a request carries them: `temperature` and `top_p`
/// (numbers), the rest as written (`extra_body`'s entries merged in), and warnings for what is
/// not sent (LiteLLM's client settings; for Anthropic models, the arguments its API rejects).
fn model_args(args: Vec<(String, Value)>, anthropic: bool) -> (Option<f64>, Option<f64>, Map<String, Value>, Vec<String>) {
    let (mut temperature, mut top_p, mut extra, mut warnings) = (None, None, Map::new(), Vec::new());
    let mut unsent = Vec::new();
    for (k, v) in args {
        match (k.as_str(), v.as_f64()) {
            ("temperature", Some(t)) => temperature = Some(t),
            ("top_p", Some(p)) => top_p = Some(p),
            ("extra_body", _) if v.is_object() => {
                for (bk, bv) in v.as_object().into_iter().flatten() {
                    extra.insert(bk.clone(), bv.clone());
                }
            }
            (name, _) if CLIENT_SETTINGS.contains(&name) => unsent.push(k),
            (name, _) if anthropic && connect::llm::anthropic::UNSUPPORTED.contains(&name) => {
                warnings.push(format!("model argument `{k}` is not sent: the Anthropic Messages API has no such argument (LiteLLM drops it too)"));
            }
            _ => {
                extra.insert(k, v);
            }
        }
    }
    if !unsent.is_empty() {
        warnings.push(format!(
            "model arguments {} are LiteLLM client settings, not arguments of the call: they are not sent (the provider file says how to reach the model)",
            unsent.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    (temperature, top_p, extra, warnings)
}

/// A run of one LLLM agent (see the module docs).
#[derive(Clone)]
pub struct LllmMachine {
    shared: Arc<Shared>,
    st: CallState,
    /// The node the next step runs; `None` once over.
    next: Option<String>,
    output: Value,
}

impl LllmMachine {
    /// A run of `agent` (default: the first) of the LLLM config `doc` for the user message
    /// `input`, the system prompt rendered with `prompt_args` (a JSON object).
    pub fn new(doc: Arc<Document>, agent: Option<&str>, input: Option<&str>, prompt_args: Option<Value>, opts: LllmOptions) -> Result<LllmMachine, String> {
        LllmMachine::with_provider(doc, agent, input, prompt_args, opts, None)
    }

    /// [`LllmMachine::new`] for a run with `provider`: a prompt module's prompt is an effect it
    /// records, or replays without running Python.
    pub fn with_provider(
        doc: Arc<Document>,
        agent: Option<&str>,
        input: Option<&str>,
        prompt_args: Option<Value>,
        opts: LllmOptions,
        provider: Option<&dyn LlmProvider>,
    ) -> Result<LllmMachine, String> {
        let l = doc.lllm().ok_or_else(|| format!("{} is not an LLLM config", doc.path.display()))?;
        if let Some(d) = doc.diagnostics.iter().find(|d| d.is_error()) {
            return Err(format!("{} has errors; the first: {} (line {}); `switchyard validate` lists them", doc.path.display(), d.message, d.line));
        }
        let names: Vec<&str> = l.effective.agents.iter().map(|a| a.name.as_str()).collect();
        let name = match agent {
            Some(a) => a.to_string(),
            None => names.first().map(|s| s.to_string()).ok_or_else(|| format!("{} declares no agents", doc.path.display()))?,
        };
        let a = l.agent(&name).ok_or_else(|| format!("no agent named `{name}` in {}; its agents: {}", doc.path.display(), names.join(", ")))?;
        let input = input.map(str::to_string).ok_or_else(|| {
            format!("an LLLM agent run needs a user message: `--input \"…\"` (agent `{name}`)")
        })?;
        let prompt_args = match prompt_args {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err("the prompt arguments must be a JSON object (`--state '{\"topic\": \"…\"}'`)".into()),
        };
        let mut python_path: Vec<PathBuf> = Vec::new();
        if let Some(p) = l.package() {
            python_path.push(p.root.clone());
        }
        if !python_path.contains(&doc.base_dir) {
            python_path.push(doc.base_dir.clone());
        }
        python_path.extend(opts.python_path.iter().cloned());
        let mut warnings = Vec::new();
        let mut bridge: Option<PyBridge> = None;
        let prompt = match prompt::locate(&doc, l, &name)? {
            Located::Ready(p) => p,
            Located::Module { path, module } => {
                let untrusted = || {
                    format!(
                        "prompt `{path}` of agent `{name}` is declared by the Python prompt module {}:{}, which a run reads by running it; \
                         the folder is not trusted: trust the folder to run its prompt modules (`switchyard trust {}`, or `--trust` for one run)",
                        module.file.display(),
                        module.line,
                        model::doc::project_root(&doc.path).display()
                    )
                };
                let at = format!("prompt module {}:{}", module.file.display(), module.line);
                let read = || run_reader("load", &prompt::reader_args(&module), &at, &python_path, &opts, &mut bridge);
                let answer = prompt_effect(provider, "load_prompt", &prompt::effect_key(&module), opts.trusted, untrusted, read)?;
                let (p, mut notes) = prompt::from_module(&path, &name, &module, &answer)?;
                warnings.append(&mut notes);
                p
            }
            Located::Discover { path, key, folders } => {
                let shown: Vec<String> = folders.iter().map(|(f, _)| f.display().to_string()).collect();
                let untrusted = || {
                    format!(
                        "prompt `{path}` of agent `{name}` is no prompt file and no prompt module declares it by name; a run looks for it by importing the package's prompt modules ({}); \
                         the folder is not trusted: trust the folder to run its prompt modules (`switchyard trust {}`, or `--trust` for one run)",
                        shown.join(", "),
                        model::doc::project_root(&doc.path).display()
                    )
                };
                let at = format!("prompt `{path}`: the prompt modules in {}", shown.join(", "));
                let read = || run_reader("discover", &prompt::discover_args(&key, &folders), &at, &python_path, &opts, &mut bridge);
                let ekey = prompt::discover_key(&doc.base_dir, &key, &folders);
                let answer = prompt_effect(provider, "discover_prompt", &ekey, opts.trusted, untrusted, read)?;
                let (p, mut notes) = prompt::from_discovery(&path, &name, &doc, &folders, &answer)?;
                warnings.append(&mut notes);
                p
            }
        };
        let system = prompt::render(&prompt.template, &prompt_args).map_err(|e| format!("prompt `{}` of agent `{name}`: {e}", prompt.path))?;
        let count = |k: &str, default: u64| -> u64 { a.get(k).and_then(|v| v.to_json().as_u64()).unwrap_or(default) };
        let max_interrupt_steps = match count("max_interrupt_steps", 5) {
            0 => UNLIMITED_STEPS,
            n => n,
        };
        let mut python_tools = Vec::new();
        if let Some(Value::Array(list)) = a.get("tools").map(|v| v.to_json()) {
            for t in list.iter().filter_map(Value::as_str) {
                match tools::import_path(t) {
                    Some(p) => python_tools.push(p),
                    None => warnings.push(format!(
                        "tool `{t}` is not a Python function reference (`module.path:function`); tactic tools and proxies are not run by Switchyard, so it is not offered"
                    )),
                }
            }
        }
        let entries = tools::classify(a.get("skills").map(|v| v.to_json()).as_ref());
        let (skills, mut skill_warnings) = tools::resolve(&entries, &doc.base_dir, opts.network)?;
        warnings.append(&mut skill_warnings);
        let model = a.str("model_name").map(tools::model_ref);
        let anthropic = model.as_ref().is_some_and(|m| m.provider == "anthropic");
        let args: Vec<(String, Value)> = a.model_args.iter().map(|(k, v)| (k.clone(), v.to_json())).collect();
        let (temperature, top_p, extra, mut arg_warnings) = model_args(args, anthropic);
        warnings.append(&mut arg_warnings);
        if !entries.ids.is_empty() && model.as_ref().is_some_and(|m| m.provider != "anthropic") {
            warnings.push(format!(
                "skill ids {} are Anthropic-hosted; model `{}` is not an Anthropic model, so they are not sent",
                entries.ids.join(", "),
                a.str("model_name").unwrap_or("")
            ));
        }
        let mut system_text = system;
        if !skills.is_empty() {
            system_text.push_str(&tools::catalogue_block(&skills));
        }
        let (context, context_note) = context::from_config(a.get("context_manager").map(|v| v.to_json()).as_ref());
        warnings.extend(context_note);
        let limits = json!({
            "max_exception_retry": count("max_exception_retry", 3),
            "max_interrupt_steps": max_interrupt_steps,
            "max_llm_recall": count("max_llm_recall", 0),
            "context_manager": context.as_ref().map(|c| json!({"max_tokens": c.max_tokens, "limit": c.limit()})),
        });
        let mut sent_args = Map::new();
        for (k, v) in [("temperature", temperature), ("top_p", top_p)] {
            if let Some(x) = v {
                sent_args.insert(k.into(), json!(x));
            }
        }
        sent_args.extend(extra.clone());
        let shared = Shared {
            agent: name.clone(),
            file: doc.path.clone(),
            model,
            temperature,
            top_p,
            extra,
            context,
            python_tools,
            skills,
            skill_ids: entries.ids,
            warnings,
            max_exception_retry: count("max_exception_retry", 3),
            max_interrupt_steps,
            max_llm_recall: count("max_llm_recall", 0),
            python_path,
            child_env: opts.child_env,
            backoff_scale: opts.backoff_scale,
            offered: Mutex::new(None),
            py: Mutex::new(bridge),
            prompt,
        };
        let mut messages = Vec::new();
        if !system_text.trim().is_empty() {
            messages.push(json!({"role": "system", "content": system_text}));
        }
        messages.push(json!({"role": "user", "content": input}));
        let st = CallState {
            agent: name,
            state: "initial".into(),
            input,
            prompt_args,
            dialogs: vec![Dialog { id: MAIN.into(), parent: None, split_point: 0, reason: None, messages }],
            active_dialog: MAIN.into(),
            interrupt_step: 0,
            exception_retries: Vec::new(),
            interrupts: Vec::new(),
            llm_recalls: Vec::new(),
            activated_skills: Vec::new(),
            final_forced: false,
            last_reply: None,
            last_error: None,
            retry_after_ms: None,
            delivery: None,
            limits,
            model_args: sent_args,
            context_cuts: Vec::new(),
        };
        Ok(LllmMachine { shared: Arc::new(shared), st, next: Some("invoke".into()), output: Value::Null })
    }

    /// The Anthropic skill ids the agent sends (as `skills: [{id}]`).
    pub fn skill_ids(&self) -> &[String] {
        &self.shared.skill_ids
    }

    /// The tools offered (described once per run; Python tools through the bridge, or a replay).
    fn offered(&self, cx: &Cx<'_>) -> Result<Vec<(Value, Tool)>, String> {
        let sh = &self.shared;
        let mut slot = sh.offered.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = slot.as_ref() {
            return Ok(t.clone());
        }
        let mut out: Vec<(Value, Tool)> = Vec::new();
        if let Some(m) = &sh.prompt.module {
            for f in &sh.prompt.functions {
                let name = f.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                if !name.is_empty() && !out.iter().any(|(v, _)| v["name"] == name.as_str()) {
                    out.push((f.clone(), Tool::PromptFunction { module: m.clone(), name }));
                }
            }
        }
        for path in &sh.python_tools {
            let info = cx.effect("invoke", "describe_tool", &json!({"import_path": path}), || {
                let info = self.with_python(|py| py.describe(path).map_err(|e| e.to_string()))?;
                Ok(json!({"name": info.name, "description": info.description, "parameters": info.schema}))
            })?;
            out.push((info, Tool::Python { import_path: path.clone() }));
        }
        if !sh.skills.is_empty() {
            out.push((tools::activate_tool(&sh.skills), Tool::ActivateSkill));
        }
        *slot = Some(out.clone());
        Ok(out)
    }

    /// A reply parsed by the prompt module's own parser class, through the Python bridge (a
    /// recorded effect: a replay runs no Python): `{"errors": [...], "parsed": ...}`.
    fn module_parse(&self, cx: &Cx<'_>, m: &ModuleRef, content: &str) -> Result<Value, String> {
        let key = json!({"module": m.shown, "path": m.prompt_path, "content": content});
        cx.effect("invoke", "parse_reply", &key, || {
            self.with_python(|py| {
                py.define_module(prompt::READER, prompt::READER_SOURCE).map_err(|e| e.to_string())?;
                let mut args = prompt::reader_args(m);
                args["content"] = Value::String(content.to_string());
                py.call_until(&format!("{}.parse", prompt::READER), &args, TOOL_TIMEOUT, Some(cx.stop)).map_err(|e| e.to_string())
            })
        })
        .map_err(|e| format!("the parser of prompt `{}` ({}:{}) failed to run: {e}", self.shared.prompt.path, m.file.display(), m.line))
    }

    fn with_python<T>(&self, f: impl FnOnce(&mut PyBridge) -> Result<T, String>) -> Result<T, String> {
        let mut g = self.shared.py.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(PyBridge::start_with_env(None, &self.shared.python_path, self.shared.child_env.clone()).map_err(|e| e.to_string())?);
        }
        f(g.as_mut().expect("started"))
    }

    fn route(&mut self, cx: &Cx<'_>, from: &str, to: &str, why: &str) {
        let index = NODES.iter().position(|n| *n == to).unwrap_or(0);
        cx.emit(EventBody::Route { from: from.into(), to: to.into(), reason: RouteReason::Branch { index, condition: why.into() } });
        self.next = Some(to.into());
    }

    /// The messages the next call sends: the active dialog's, cut by `context_manager` when
    /// they are over its limit (the cut is a fork of the active dialog, and `context_cuts` says
    /// what was dropped).
    fn context_cut(&mut self) -> Vec<Value> {
        let messages = self.active_messages();
        let Some(cm) = self.shared.context.clone() else { return messages };
        let Some(cut) = context::truncate(&cm, &messages) else { return messages };
        let parent = self.st.active_dialog.clone();
        let n = self.st.context_cuts.len() + 1;
        let id = format!("{parent}.context{n}");
        let preview = |m: &Value| -> String {
            let t = m.get("content").and_then(Value::as_str).unwrap_or("");
            let mut p: String = t.chars().take(60).collect();
            if t.chars().count() > 60 {
                p.push('…');
            }
            p
        };
        let dropped: Vec<Value> = cut.dropped.iter().map(|&i| json!({"index": i, "role": messages[i]["role"], "content": preview(&messages[i])})).collect();
        let reason = format!(
            "context_manager: {} → {} tokens (limit {}): {} message{} dropped{}",
            cut.tokens_before,
            cut.tokens_after,
            cm.limit(),
            cut.dropped.len(),
            if cut.dropped.len() == 1 { "" } else { "s" },
            cut.cut.map(|i| format!(", message {i} cut")).unwrap_or_default()
        );
        self.st.context_cuts.push(json!({
            "step": self.st.interrupt_step,
            "dialog": parent,
            "fork": id,
            "dropped": dropped,
            "cut": cut.cut,
            "tokens_before": cut.tokens_before,
            "tokens_after": cut.tokens_after,
            "limit": cm.limit(),
        }));
        self.st.dialogs.push(Dialog { id, parent: Some(parent), split_point: cut.messages.len(), reason: Some(reason), messages: cut.messages.clone() });
        cut.messages
    }

    /// The messages of the active dialog.
    fn active_messages(&self) -> Vec<Value> {
        self.st.dialog(&self.st.active_dialog).map(|d| d.messages.clone()).unwrap_or_default()
    }

    fn invoke(&mut self, cx: &Cx<'_>) -> Result<(&'static str, String), String> {
        let sh = self.shared.clone();
        if cx.step <= 1 {
            for w in &sh.warnings {
                cx.emit(EventBody::Log { source: format!("agent:{}", sh.agent), text: w.clone() });
            }
        }
        let offered = self.offered(cx)?;
        let tools: Vec<Value> = if self.st.final_forced { Vec::new() } else { offered.iter().map(|(v, _)| v.clone()).collect() };
        let messages = self.context_cut();
        let req = LlmRequest {
            node: "invoke".into(),
            messages: Value::Array(messages),
            tools: Value::Array(tools),
            model: sh.model.clone(),
            temperature: sh.temperature,
            top_p: sh.top_p,
            response_format: sh.prompt.response_format(),
            skills: if sh.model.as_ref().is_some_and(|m| m.provider == "anthropic") { sh.skill_ids.clone() } else { Vec::new() },
            extra: sh.extra.clone(),
        };
        self.st.last_reply = None;
        self.st.last_error = None;
        self.st.retry_after_ms = None;
        let resp = match cx.complete(&req) {
            Ok(r) => r,
            Err(e) if e.kind == ErrorKind::Malformed => {
                // A reply that could not be read (tool-call arguments that are not JSON): LLLM's
                // invoker reports it as a parse error.
                return Ok(self.parse_failure(e.own_message().to_string()));
            }
            Err(e) if e.retryable() => {
                let text = e.own_message().to_string();
                if (self.st.llm_recalls.len() as u64) < sh.max_llm_recall {
                    self.st.last_error = Some(text);
                    self.st.retry_after_ms = e.retry_after.map(|d| d.as_millis() as u64);
                    return Ok(("llm_recall", format!("{:?} error, recall {} of {}", e.kind, self.st.llm_recalls.len() + 1, sh.max_llm_recall)));
                }
                self.st.last_error = Some(format!("LLM call failed: {e} (max_llm_recall {} spent)", sh.max_llm_recall));
                return Ok(("failure", "llm recalls spent".into()));
            }
            Err(e) => {
                self.st.last_error = Some(format!("LLM call failed: {e}"));
                return Ok(("failure", "LLM error".into()));
            }
        };
        let content = resp.content.clone().unwrap_or_default();
        let mut msg = json!({"role": "assistant", "content": content});
        if !resp.tool_calls.is_empty() {
            msg["tool_calls"] = serde_json::to_value(&resp.tool_calls).unwrap_or(Value::Null);
        }
        // Arguments that are not a JSON object: malformed (LLLM: a parse error).
        if let Some(bad) = resp.tool_calls.iter().find(|c| !(c.args.is_object() || c.args.is_null())) {
            self.st.last_reply = Some(msg);
            return Ok(self.parse_failure(format!("the arguments of tool call `{}` are not a JSON object: {}", bad.name, bad.args)));
        }
        let mut parsed_by_module = None;
        if resp.tool_calls.is_empty() {
            let errors = match (&sh.prompt.parser, &sh.prompt.module) {
                // The prompt's own parser class (a structured `format` is parsed as JSON instead).
                (Some(_), Some(m)) if sh.prompt.front.format.is_none() => {
                    let out = self.module_parse(cx, m, &content)?;
                    parsed_by_module = out.get("parsed").cloned();
                    out.get("errors").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
                }
                _ => sh.prompt.check(&content),
            };
            if !errors.is_empty() {
                self.st.last_reply = Some(msg);
                return Ok(self.parse_failure(errors.join("\n")));
            }
        }
        // A good reply: it goes to the canonical dialog; a retry fork has done its work.
        self.st.active_dialog = MAIN.into();
        self.st.dialog_mut(MAIN).messages.push(msg.clone());
        self.st.last_reply = Some(msg);
        if resp.tool_calls.is_empty() {
            let parsed = parsed_by_module.unwrap_or_else(|| sh.prompt.parse(&content));
            self.st.delivery = Some(json!({"content": content, "parsed": parsed}));
            return Ok(("success", "a reply without tool calls".into()));
        }
        if self.st.final_forced {
            self.st.last_error = Some(format!(
                "agent `{}` still called tools after on_interrupt_final (max_interrupt_steps {} reached)",
                sh.agent, sh.max_interrupt_steps
            ));
            return Ok(("failure", "tool calls after on_interrupt_final".into()));
        }
        Ok(("interrupt", format!("{} tool call{}", resp.tool_calls.len(), if resp.tool_calls.len() == 1 { "" } else { "s" })))
    }

    fn parse_failure(&mut self, error: String) -> (&'static str, String) {
        let sh = &self.shared;
        if (self.st.exception_retries.len() as u64) < sh.max_exception_retry {
            self.st.last_error = Some(error);
            ("exception", format!("parse error, retry {} of {}", self.st.exception_retries.len() + 1, sh.max_exception_retry))
        } else {
            self.st.last_error = Some(format!("the reply did not parse after {} retries (max_exception_retry): {error}", sh.max_exception_retry));
            ("failure", "exception retries spent".into())
        }
    }

    fn exception(&mut self) -> Result<String, String> {
        let error = self.st.last_error.clone().unwrap_or_default();
        let step = self.st.interrupt_step;
        self.st.exception_retries.push(Retry { step, error: error.clone() });
        self.st.state = "exception".into();
        let n = self.st.exception_retries.len();
        let parent = self.st.active_dialog.clone();
        let mut messages = self.active_messages();
        let split_point = messages.len();
        if let Some(bad) = self.st.last_reply.take() {
            messages.push(bad);
        }
        let mut args = Map::new();
        args.insert("error_message".into(), Value::String(error.clone()));
        let text = prompt::render(self.shared.prompt.on_exception(), &args)?;
        messages.push(json!({"role": "user", "name": "exception", "content": text}));
        let id = format!("{MAIN}.exception{n}");
        let first_line = error.lines().find(|l| !l.trim().is_empty() && !l.starts_with("Parsing errors")).unwrap_or(&error).to_string();
        self.st.dialogs.push(Dialog { id: id.clone(), parent: Some(parent), split_point, reason: Some(format!("exception {n}: {first_line}")), messages });
        self.st.active_dialog = id;
        Ok("retry on the forked dialog".into())
    }

    fn llm_recall(&mut self, cx: &Cx<'_>) -> String {
        let error = self.st.last_error.clone().unwrap_or_default();
        self.st.llm_recalls.push(Retry { step: self.st.interrupt_step, error });
        self.st.state = "llm_recall".into();
        let k = self.st.llm_recalls.len() as u32;
        let wait = match self.st.retry_after_ms {
            Some(ms) => Duration::from_millis(ms).min(Duration::from_secs(60)),
            None => Duration::from_millis(500u64.saturating_mul(1 << (k - 1).min(4))),
        };
        let wait = wait.mul_f64(self.shared.backoff_scale.max(0.0));
        let until = Instant::now() + wait;
        while Instant::now() < until && !cx.stopped() {
            std::thread::sleep(Duration::from_millis(10).min(until.saturating_duration_since(Instant::now())));
        }
        format!("recall after {} ms", wait.as_millis())
    }

    fn interrupt(&mut self, cx: &Cx<'_>) -> Result<(&'static str, String), String> {
        let sh = self.shared.clone();
        self.st.state = "interrupt".into();
        let calls: Vec<ToolCall> = self
            .st
            .last_reply
            .as_ref()
            .and_then(|m| m.get("tool_calls"))
            .and_then(|c| serde_json::from_value(c.clone()).ok())
            .unwrap_or_default();
        let offered = self.offered(cx)?;
        let step = self.st.interrupt_step;
        let earlier: Vec<ToolCall> = self.st.interrupts.iter().flat_map(|i| i.calls.iter().cloned()).collect();
        self.st.interrupts.push(Interrupt { step, calls: calls.clone() });
        for call in &calls {
            cx.emit(EventBody::ToolCall { node: "interrupt".into(), call: call.clone() });
            let repeated = earlier.iter().any(|c| c.name == call.name && c.args == call.args);
            let outcome: Result<Value, String> = if repeated {
                Ok(Value::String(format!(
                    "The function {} with identical arguments {} has been called earlier, please check the previous results and do not call it again. If you do not need to call more functions, just stop calling and provide the final response.",
                    call.name, call.args
                )))
            } else {
                match offered.iter().find(|(v, _)| v["name"] == call.name.as_str()).map(|(_, t)| t.clone()) {
                    None => {
                        let names: Vec<&str> = offered.iter().filter_map(|(v, _)| v["name"].as_str()).collect();
                        self.st.last_error = Some(format!(
                            "the model called `{}`, which agent `{}` does not offer (offered: {}); LLLM fails the call here",
                            call.name,
                            sh.agent,
                            if names.is_empty() { "none".to_string() } else { names.join(", ") }
                        ));
                        cx.emit(EventBody::ToolResult { node: "interrupt".into(), id: call.id.clone(), name: call.name.clone(), result: Value::Null, error: self.st.last_error.clone() });
                        return Ok(("failure", "unknown tool".into()));
                    }
                    Some(Tool::ActivateSkill) => {
                        let name = call.args.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                        if sh.skills.iter().any(|k| k.name == name) && !self.st.activated_skills.contains(&name) {
                            self.st.activated_skills.push(name.clone());
                        }
                        Ok(Value::String(model::skills::activate(&sh.skills, &name)))
                    }
                    Some(Tool::Python { import_path }) => cx.tool("interrupt", &call.name, &call.args, || {
                        self.with_python(|py| py.call_until(&import_path, &call.args, TOOL_TIMEOUT, Some(cx.stop)).map_err(|e| e.to_string()))
                    }),
                    Some(Tool::PromptFunction { module, name }) => cx.tool("interrupt", &call.name, &call.args, || {
                        self.with_python(|py| {
                            py.define_module(prompt::READER, prompt::READER_SOURCE).map_err(|e| e.to_string())?;
                            let mut args = prompt::reader_args(&module);
                            args["function"] = Value::String(name.clone());
                            args["args"] = call.args.clone();
                            py.call_until(&format!("{}.call_function", prompt::READER), &args, TOOL_TIMEOUT, Some(cx.stop)).map_err(|e| e.to_string())
                        })
                    }),
                }
            };
            let (result, error) = match outcome {
                Ok(v) => (v, None),
                Err(e) => (Value::Null, Some(e)),
            };
            let text = match (&error, &result) {
                (Some(e), _) => format!("Error: {e}"),
                (None, Value::String(s)) => s.clone(),
                (None, v) => v.to_string(),
            };
            cx.emit(EventBody::ToolResult { node: "interrupt".into(), id: call.id.clone(), name: call.name.clone(), result, error });
            let mut args = Map::new();
            args.insert("call_results".into(), Value::String(text));
            let content = prompt::render(sh.prompt.on_interrupt(), &args)?;
            self.st.dialog_mut(MAIN).messages.push(json!({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}));
        }
        self.st.interrupt_step += 1;
        if self.st.interrupts.len() as u64 >= sh.max_interrupt_steps && !self.st.final_forced {
            let text = prompt::render(sh.prompt.on_interrupt_final(), &Map::new())?;
            self.st.dialog_mut(MAIN).messages.push(json!({"role": "user", "content": text}));
            self.st.final_forced = true;
            return Ok(("invoke", format!("max_interrupt_steps ({}) reached: on_interrupt_final", sh.max_interrupt_steps)));
        }
        Ok(("invoke", "tool results fed back".into()))
    }

    /// The top-level keys whose values differ between two states (a step's update).
    fn diff(before: &Value, after: &Value) -> Value {
        let (Value::Object(b), Value::Object(a)) = (before, after) else { return after.clone() };
        Value::Object(a.iter().filter(|(k, v)| b.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

impl Machine for LllmMachine {
    fn agent(&self) -> &str {
        &self.shared.agent
    }
    fn file(&self) -> Option<String> {
        Some(self.shared.file.display().to_string())
    }
    fn due(&self) -> Vec<String> {
        self.next.iter().cloned().collect()
    }
    fn node_kind(&self, node: &str) -> String {
        kind_of(node).into()
    }
    fn step(&mut self, cx: &Cx<'_>) -> StepOutcome {
        let Some(node) = self.next.clone() else {
            return StepOutcome::Finished { output: self.output.clone() };
        };
        if cx.stopped() {
            return StepOutcome::Failed { node: Some(node), message: format!("agent `{}` was stopped", self.shared.agent) };
        }
        cx.emit(EventBody::NodeEnter { step: cx.step, node: node.clone(), kind: kind_of(&node).into() });
        let t0 = Instant::now();
        let before = if cx.wanted() { self.state() } else { Value::Null };
        let routed: Result<Option<(&'static str, String)>, String> = match node.as_str() {
            "invoke" => self.invoke(cx).map(Some),
            "exception" => self.exception().map(|why| Some(("invoke", why))),
            "llm_recall" => Ok(Some(("invoke", self.llm_recall(cx)))),
            "interrupt" => self.interrupt(cx).map(Some),
            "success" => {
                self.st.state = "success".into();
                Ok(None)
            }
            "failure" => {
                self.st.state = "failure".into();
                Ok(None)
            }
            other => Err(format!("no node `{other}` in an LLLM call loop")),
        };
        let exit = |m: &Self| {
            let update = if cx.wanted() { Self::diff(&before, &m.state()) } else { Value::Null };
            cx.emit(EventBody::NodeExit { step: cx.step, node: node.clone(), update, duration_ms: t0.elapsed().as_millis() as u64 });
        };
        match routed {
            Err(message) => {
                self.st.state = "failure".into();
                self.st.last_error = Some(message.clone());
                self.next = None;
                exit(self);
                StepOutcome::Failed { node: Some(node), message }
            }
            Ok(Some((to, why))) => {
                exit(self);
                self.route(cx, &node, to, &why);
                StepOutcome::Continue
            }
            Ok(None) => {
                exit(self);
                self.next = None;
                if node == "success" {
                    let content = self.st.delivery.as_ref().and_then(|d| d.get("content")).cloned().unwrap_or(Value::Null);
                    self.output = content.clone();
                    StepOutcome::Finished { output: content }
                } else {
                    StepOutcome::Failed {
                        node: Some(node),
                        message: self.st.last_error.clone().unwrap_or_else(|| "the agent call failed".into()),
                    }
                }
            }
        }
    }
    fn answer(&mut self, pending: &Pending, _answer: Value) -> Result<(), String> {
        Err(format!("an LLLM agent asks no questions (node `{}`)", pending.node))
    }
    fn state(&self) -> Value {
        serde_json::to_value(&self.st).unwrap_or(Value::Null)
    }
    fn edit_state(&mut self, key: &str, value: Value) -> Result<(), String> {
        let mut whole = self.state();
        let Some(obj) = whole.as_object_mut() else { return Err("the state is not an object".into()) };
        if !obj.contains_key(key) {
            let keys: Vec<&String> = obj.keys().collect();
            return Err(format!("an LLLM run's state has no key `{key}` (its keys: {})", keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")));
        }
        obj.insert(key.to_string(), value);
        let st: CallState = serde_json::from_value(whole).map_err(|e| format!("`{key}`: {e}"))?;
        if st.dialog(&st.active_dialog).is_none() {
            return Err(format!("`active_dialog` names no dialog (`{}`)", st.active_dialog));
        }
        self.st = st;
        Ok(())
    }
    fn condition(&self, _node: &str, condition: &str) -> Result<bool, String> {
        let engine = expr::cel::CelEngine::shared();
        let prog = engine.compile(condition).map_err(|e| e.to_string())?;
        let state = self.state();
        let mut b = expr::cel::Bindings::with_state(&state);
        b.all_fields_bare();
        match engine.eval(&prog, &b).map_err(|e| e.to_string())? {
            Value::Bool(x) => Ok(x),
            Value::Null => Ok(false),
            other => Err(format!("condition `{condition}` returned {other}, expected a bool")),
        }
    }
    fn check_condition(&self, condition: &str) -> Result<(), String> {
        expr::cel::CelEngine::shared().compile(condition).map(|_| ()).map_err(|e| e.to_string())
    }
    fn fork(&self) -> Box<dyn Machine> {
        Box::new(self.clone())
    }
    fn output(&self) -> Value {
        self.output.clone()
    }
    fn snapshot(&self) -> Value {
        json!({"format": FORMAT, "dialect": "lllm", "agent": self.shared.agent, "next": self.next, "output": self.output, "state": self.st})
    }
    fn restore(&mut self, snapshot: &Value) -> Result<(), String> {
        if snapshot.get("dialect").and_then(Value::as_str) != Some("lllm") {
            return Err("the checkpoint is not of an LLLM run".into());
        }
        if snapshot.get("format").and_then(Value::as_u64) != Some(FORMAT) {
            return Err(format!("the checkpoint has another format than {FORMAT}"));
        }
        if snapshot.get("agent").and_then(Value::as_str) != Some(self.shared.agent.as_str()) {
            return Err(format!("the checkpoint is of another agent than `{}`", self.shared.agent));
        }
        let st: CallState = serde_json::from_value(snapshot.get("state").cloned().unwrap_or(Value::Null)).map_err(|e| format!("the checkpoint's state: {e}"))?;
        self.next = snapshot.get("next").and_then(Value::as_str).map(str::to_string);
        self.output = snapshot.get("output").cloned().unwrap_or(Value::Null);
        self.st = st;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config in a fresh folder with a prompt module `prompts/m.py` of `module` text.
    fn module_config(tag: &str, module: &str) -> (PathBuf, Arc<Document>) {
        let dir = std::env::temp_dir().join(format!("switchyard-lllm-{tag}-{}-{:?}", std::process::id(), std::time::Instant::now()));
        std::fs::create_dir_all(dir.join("prompts")).unwrap();
        std::fs::write(dir.join("lllm.toml"), "[package]\nname = \"t\"\n").unwrap();
        std::fs::write(dir.join("prompts/m.py"), module).unwrap();
        std::fs::write(dir.join("config.yaml"), "global:\n  model_name: gpt-4o-mini\nagent_configs:\n  - name: a\n    system_prompt_path: m/p\n").unwrap();
        let doc = Arc::new(model::doc::load_path(&dir.join("config.yaml")));
        (dir, doc)
    }

    fn have_python() -> bool {
        let ok = std::process::Command::new(std::env::var_os("SWITCHYARD_PYTHON").filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".into()))
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("note: no python3; skipping a prompt-module test");
        }
        ok
    }

    #[test]
    fn a_prompt_module_that_never_finishes_importing_is_stopped_at_the_timeout() {
        if !have_python() {
            return;
        }
        let (dir, doc) = module_config("slow", "import time\ntime.sleep(600)\nfrom lllm import Prompt\np = Prompt(path=\"p\", prompt=\"x\")\n");
        let opts = LllmOptions { trusted: true, prompt_timeout: Duration::from_secs(2), ..LllmOptions::default() };
        let err = LllmMachine::new(doc, None, Some("hi"), None, opts).err().expect("timed out");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(err.contains("prompts/m.py:4") && err.contains("did not finish within 2 s"), "{err}");
    }

    #[test]
    fn a_module_prompt_reads_its_old_shape_and_refuses_untrusted_runs() {
        if !have_python() {
            return;
        }
        // LLLM 2025-11 (`lllm.models`): tags and handler messages on the Prompt itself.
        let (dir, doc) = module_config(
            "old",
            "from lllm.models import Prompt\np = Prompt(\n    path='p',\n    prompt='Hi {who}',\n    xml_tags=['answer'],\n    exception_prompt='Bad: {error_message}',\n    format={'type': 'object', 'required': ['v']},\n)\n",
        );
        let opts = LllmOptions { trusted: true, ..LllmOptions::default() };
        let m = LllmMachine::new(doc.clone(), None, Some("hi"), Some(json!({"who": "Ada"})), opts).unwrap_or_else(|e| panic!("{e}"));
        let p = &m.shared.prompt;
        assert_eq!((p.template.as_str(), p.front.xml_tags.clone(), p.on_exception()), ("Hi {who}", vec!["answer".to_string()], "Bad: {error_message}"));
        assert_eq!(p.front.format, Some(json!({"type": "object", "required": ["v"]})));
        assert_eq!(m.st.dialogs[0].messages[0]["content"], "Hi Ada");
        let err = LllmMachine::new(doc, None, Some("hi"), None, LllmOptions::default()).err().expect("untrusted");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(err.contains("prompts/m.py:3") && err.contains("trust the folder to run its prompt modules"), "{err}");
    }

    #[test]
    fn an_importable_lllm_package_is_preferred_to_the_stand_in() {
        if !have_python() {
            return;
        }
        let (dir, doc) = module_config("real", "from lllm.core.prompt import Prompt\np = Prompt(path=\"p\", prompt=\"Hello\")\n");
        // An `lllm` package on sys.path (the package root) whose Prompt marks what it builds.
        std::fs::create_dir_all(dir.join("lllm/core")).unwrap();
        std::fs::write(dir.join("lllm/__init__.py"), "").unwrap();
        std::fs::write(dir.join("lllm/core/__init__.py"), "").unwrap();
        std::fs::write(
            dir.join("lllm/core/prompt.py"),
            "class Prompt:\n    def __init__(self, path, prompt, **kw):\n        self.path = path\n        self.prompt = 'upstream: ' + prompt\n",
        )
        .unwrap();
        let opts = LllmOptions { trusted: true, ..LllmOptions::default() };
        let m = LllmMachine::new(doc, None, Some("hi"), None, opts).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(m.shared.prompt.template, "upstream: Hello");
        assert!(m.shared.warnings.iter().any(|w| w.ends_with("with the installed lllm package")), "{:?}", m.shared.warnings);
    }

    #[test]
    fn a_prompt_no_module_declares_by_name_is_found_by_importing_them() {
        if !have_python() {
            return;
        }
        let (dir, doc) = module_config("built", "from lllm import Prompt\nfor _n in ['p', 'q']:\n    globals()[_n] = Prompt(path=_n, prompt='built ' + _n)\n");
        std::fs::write(dir.join("prompts/other.py"), "raise RuntimeError('not today')\n").unwrap();
        let opts = LllmOptions { trusted: true, ..LllmOptions::default() };
        let m = LllmMachine::new(doc.clone(), None, Some("hi"), None, opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.shared.prompt.template, "built p");
        assert!(m.shared.warnings.iter().any(|w| w.contains("other.py:1 did not import (RuntimeError: not today)")), "{:?}", m.shared.warnings);
        let err = LllmMachine::new(doc, None, Some("hi"), None, LllmOptions::default()).err().expect("untrusted");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(err.contains("importing the package's prompt modules") && err.contains("trust the folder to run its prompt modules"), "{err}");
    }

    #[test]
    fn every_model_argument_is_sent_but_client_settings() {
        let args = |v: Value| v.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>();
        let (t, p, extra, w) = model_args(
            args(json!({"temperature": 0.2, "top_p": 1, "max_tokens": 300, "stop": ["X"], "seed": 4, "api_key": "sk-x", "extra_body": {"vendor": true}, "weird": "kept"})),
            false,
        );
        assert_eq!((t, p), (Some(0.2), Some(1.0)));
        assert_eq!(Value::Object(extra), json!({"max_tokens": 300, "stop": ["X"], "seed": 4, "vendor": true, "weird": "kept"}));
        assert!(w.len() == 1 && w[0].contains("`api_key`"), "{w:?}");
        let (_, _, extra, w) = model_args(args(json!({"seed": 4, "max_tokens": 10})), true);
        assert_eq!(Value::Object(extra), json!({"max_tokens": 10}));
        assert!(w[0].contains("`seed` is not sent"), "{w:?}");
    }

    #[test]
    fn the_steps_are_the_nodes_the_graph_draws() {
        let drawn: Vec<(&str, &str)> = model::graph::lower_lllm::LOOP.to_vec();
        let ours: Vec<(&str, &str)> = NODES.iter().map(|n| (*n, kind_of(n))).collect();
        assert_eq!(ours, drawn);
    }
}
