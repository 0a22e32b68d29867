//! The front ends' one door to runs: the CLI, the desktop shell and the tests start, resume
//! and configure runs here, without reaching into the engine's crates one by one.
//!
//! - [`machine_for`], [`start`], [`session`]: a document and a [`RunRequest`] become the
//!   dialect's machine (`sherma` or `loki`) inside a `runtime` session, its children seeing
//!   only [`child_env`] of the user's environment.
//! - [`provider`]: the one decision of where a run's LLM answers come from ([`LlmChoice`]:
//!   none, scripted, replay, live; `record` wraps any), with the one key resolver for live
//!   calls ([`live_config`]: provider file, OS keyring, environment).
//! - [`durable`]: durable runs in the SQLite run store: start, resume, list.
//! - [`trust`]: per-folder trust (the project root of a file, the user's trusted folders);
//!   [`manifest`]: what running a document would execute, contact and read, computed from the
//!   document alone.
//! - [`trace`]: a recorded run (JSONL trace) reviewed: its state at any step, rebuilt with the
//!   dialect's own reducers.
//! - [`worktree`]: whether a file about to be recorded into is inside a git work tree and
//!   not ignored there, and the `.gitignore` line that fixes it.

pub mod durable;
pub mod manifest;
mod provider;
pub mod trace;
pub mod trust;
pub mod worktree;

pub use provider::{
    default_cassette, default_script, live_config, llm_choice, online_if, provider, provider_for,
    provider_from_choice, scripted,
};
pub use runtime::request::{LlmChoice, RunRequest};

use model::doc::{Dialect, Document};
use runtime::session::{Machine, RunOptions, RunSession};
use serde_json::Value;
use sherma::{ShermaMachine, ShermaOptions};
use std::sync::Arc;

/// The machine for `doc` (either dialect), its children seeing [`child_env`] of the document.
pub fn machine_for(doc: Arc<Document>, req: &RunRequest, sherma: ShermaOptions) -> Result<Box<dyn Machine>, String> {
    machine_with(doc, req, sherma, None)
}

/// [`machine_for`] in a run with `provider`: an LLLM prompt module's prompt is an effect it
/// records, or replays without running Python.
pub fn machine_with(
    doc: Arc<Document>,
    req: &RunRequest,
    sherma: ShermaOptions,
    provider: Option<&dyn runtime::provider::LlmProvider>,
) -> Result<Box<dyn Machine>, String> {
    match doc.dialect() {
        Some(Dialect::Sherma) => {
            let input = sherma_input(req.input.as_deref(), req.state.clone())?;
            let mut opts = sherma;
            opts.python_path.extend(req.python_path.iter().cloned());
            opts.child_env = child_env(&doc);
            Ok(Box::new(ShermaMachine::new(doc, req.agent.as_deref(), input, opts)?))
        }
        Some(Dialect::Loki) => {
            let env = child_env(&doc);
            let m = loki::LokiMachine::new(doc, req.input.as_deref().unwrap_or(""), req.state.clone())?;
            Ok(Box::new(m.with_child_env(env)))
        }
        Some(Dialect::Lllm) => {
            let opts = lllm::LllmOptions {
                network: sherma.network,
                python_path: req.python_path.clone(),
                child_env: child_env(&doc),
                // The front end's trust decision for this file (its folder, or `--trust`).
                trusted: model::doc::env::env_allowed(&doc.path),
                ..lllm::LllmOptions::default()
            };
            let (agent, input) = (req.agent.as_deref(), req.input.as_deref());
            Ok(Box::new(lllm::LllmMachine::with_provider(doc, agent, input, req.state.clone(), opts, provider)?))
        }
        None => Err(format!(
            "{} is neither a sherma agent (`manifest_version: 1`) nor a Loki graph (`version: \"1.0\"`); \
             `switchyard validate` says why",
            doc.path.display()
        )),
    }
}

/// What of the user's environment the children of a run of `doc` see (scripts, tools, the
/// Python bridge, MCP servers): the base set of `connect::childenv`, the variables the run
/// manifest lists as referenced ([`manifest::env_var_names`], sub-agents included) and the
/// user's `SWITCHYARD_CHILD_ENV`. Computed once per run, when its machine is built.
pub fn child_env(doc: &Document) -> connect::childenv::ChildEnv {
    connect::childenv::ChildEnv::new(manifest::env_var_names(doc))
}

/// A sherma run's input as its machine takes it: the initial state (a JSON object, or null), with
/// the user message `text` appended to its `messages` as a human message.
pub(crate) fn sherma_input(text: Option<&str>, state: Option<Value>) -> Result<Value, String> {
    let mut input = state.unwrap_or(Value::Null);
    if let Some(text) = text {
        let msg = sherma::state::message("human", Value::String(text.to_string()));
        match &mut input {
            Value::Object(m) => {
                let list = m.entry(sherma::state::MESSAGES).or_insert_with(|| Value::Array(Vec::new()));
                match list {
                    Value::Array(a) => a.push(msg),
                    _ => return Err("`messages` in the initial state must be a list".into()),
                }
            }
            Value::Null => input = serde_json::json!({ "messages": [msg] }),
            _ => return Err("the initial state must be a JSON object".into()),
        }
    }
    Ok(input)
}

/// Start a session: machine + the provider the request asks for (its script, or the default
/// `replies.yaml`) + options.
pub fn start(doc: Arc<Document>, req: &RunRequest, mut options: RunOptions) -> Result<RunSession, String> {
    options.provider = provider_for(&doc, req)?;
    session(doc, req, options)
}

/// Start a session with the provider already in `options` (front ends that let the user pick it).
pub fn session(doc: Arc<Document>, req: &RunRequest, options: RunOptions) -> Result<RunSession, String> {
    let machine = machine_with(doc, req, sherma_options(&*options.provider), Some(&*options.provider))?;
    Ok(RunSession::new(machine, input_of(req), options))
}

/// The sherma machine's options for a run with `provider`: online only when the provider is
/// (a live run, or the user allowed the network for this run).
pub(crate) fn sherma_options(provider: &dyn runtime::provider::LlmProvider) -> ShermaOptions {
    ShermaOptions { network: provider.network_allowed(), ..ShermaOptions::default() }
}

/// The run's input as the `run_started` event shows it.
pub fn input_of(req: &RunRequest) -> Value {
    match (&req.input, &req.state) {
        (Some(t), None) => Value::String(t.clone()),
        (None, Some(s)) => s.clone(),
        (Some(t), Some(s)) => serde_json::json!({"input": t, "state": s}),
        (None, None) => Value::Null,
    }
}

