//! Starting a run from a document: picks the dialect's machine, the LLM provider and the input.
//! Front ends (CLI, desktop shell, tests) all start runs here.

use crate::doc::{Dialect, Document};
use crate::run::provider::{BoxProvider, NoProvider, ScriptedProvider};
use crate::run::session::{Machine, RunOptions, RunSession};
use crate::run::sherma::{ShermaMachine, ShermaOptions};
pub use runtime::request::{LlmChoice, RunRequest};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// The scripted replies used when none are named: `<file stem>.replies.yaml` or
/// `replies.yaml` in the agent's directory.
pub fn default_script(doc: &Document) -> Option<PathBuf> {
    let stem = doc.path.file_stem()?.to_string_lossy().to_string();
    [doc.base_dir.join(format!("{stem}.replies.yaml")), doc.base_dir.join("replies.yaml")]
        .into_iter()
        .find(|p| p.is_file())
}

/// The cassette used when none is named: `<file stem>.cassette.json` or `cassette.json` in the
/// agent's directory.
pub fn default_cassette(doc: &Document) -> Option<PathBuf> {
    let stem = doc.path.file_stem()?.to_string_lossy().to_string();
    [doc.base_dir.join(format!("{stem}.cassette.json")), doc.base_dir.join("cassette.json")]
        .into_iter()
        .find(|p| p.is_file())
}

/// The provider a request asks for, or an error saying what is wrong: live (every model the
/// document names checked first, so a missing key is reported before anything runs), a
/// replay, a script (the named one, else `replies.yaml` beside the agent), else a cassette
/// beside the agent, else none. `record` wraps any of them.
pub fn provider_for(doc: &Document, req: &RunRequest) -> Result<BoxProvider, String> {
    let base: BoxProvider = if req.live {
        // The provider file, the OS keyring's keys (the app's Settings), the environment.
        let config = crate::llm::keyring::llm_config()?;
        let live = crate::llm::LiveProvider::new(config);
        live.preflight(&crate::llm::models_used(doc)).map_err(|e| format!("cannot run live:\n{e}"))?;
        Box::new(live)
    } else if let Some(c) = &req.replay {
        Box::new(crate::llm::cassette::Replayer::load(c, req.replay_strict)?)
    } else if let Some(p) = req.llm_script.clone().or_else(|| default_script(doc)) {
        scripted(&p)?
    } else if let Some(c) = default_cassette(doc) {
        Box::new(crate::llm::cassette::Replayer::load(&c, req.replay_strict)?)
    } else {
        Box::new(NoProvider)
    };
    Ok(match &req.record {
        Some(path) => Box::new(crate::llm::cassette::Recorder::new(base, path)),
        None => base,
    })
}

/// Scripted replies from `path`, or an error listing the file's problems with their positions.
pub fn scripted(path: &std::path::Path) -> Result<BoxProvider, String> {
    ScriptedProvider::load(path).map(|s| Box::new(s) as BoxProvider).map_err(|diags| {
        let first = diags
            .iter()
            .map(|d| format!("{}:{}:{}: {}", d.file, d.line, d.column, d.message))
            .collect::<Vec<_>>()
            .join("\n");
        format!("cannot use the scripted replies in {}:\n{first}", path.display())
    })
}

/// The machine for `doc` (either dialect).
pub fn machine_for(doc: Arc<Document>, req: &RunRequest, sherma: ShermaOptions) -> Result<Box<dyn Machine>, String> {
    match doc.dialect() {
        Some(Dialect::Sherma) => {
            let mut input = req.state.clone().unwrap_or(Value::Null);
            if let Some(text) = &req.input {
                let msg = crate::run::sherma_state::message("human", Value::String(text.clone()));
                match &mut input {
                    Value::Object(m) => {
                        let list = m.entry(crate::run::sherma_state::MESSAGES).or_insert_with(|| Value::Array(Vec::new()));
                        match list {
                            Value::Array(a) => a.push(msg),
                            _ => return Err("`messages` in the initial state must be a list".into()),
                        }
                    }
                    Value::Null => input = serde_json::json!({ "messages": [msg] }),
                    _ => return Err("the initial state must be a JSON object".into()),
                }
            }
            let mut opts = sherma;
            opts.python_path.extend(req.python_path.iter().cloned());
            Ok(Box::new(ShermaMachine::new(doc, req.agent.as_deref(), input, opts)?))
        }
        Some(Dialect::Loki) => Ok(Box::new(crate::run::loki::LokiMachine::new(
            doc,
            req.input.as_deref().unwrap_or(""),
            req.state.clone(),
        )?)),
        None => Err(format!(
            "{} is neither a sherma agent (`manifest_version: 1`) nor a Loki graph (`version: \"1.0\"`); \
             `switchyard validate` says why",
            doc.path.display()
        )),
    }
}

/// Start a session: machine + the provider the request asks for (its script, or the default
/// `replies.yaml`) + options.
pub fn start(doc: Arc<Document>, req: &RunRequest, mut options: RunOptions) -> Result<RunSession, String> {
    options.provider = provider_for(&doc, req)?;
    session(doc, req, options)
}

/// Start a session with the provider already in `options` (front ends that let the user pick it).
pub fn session(doc: Arc<Document>, req: &RunRequest, options: RunOptions) -> Result<RunSession, String> {
    let machine = machine_for(doc, req, ShermaOptions::default())?;
    Ok(RunSession::new(machine, input_of(req), options))
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

/// What [`provider_for`] would pick for `req`, as an [`LlmChoice`] with absolute paths
/// (`record` is not part of it).
pub fn llm_choice(doc: &Document, req: &RunRequest) -> LlmChoice {
    let abs = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    if req.live {
        LlmChoice::Live { model: None }
    } else if let Some(c) = &req.replay {
        LlmChoice::Replay { cassette: Some(abs(c)), strict: Some(req.replay_strict) }
    } else if let Some(p) = req.llm_script.clone().or_else(|| default_script(doc)) {
        LlmChoice::Scripted { script: Some(abs(&p)) }
    } else if let Some(c) = default_cassette(doc) {
        LlmChoice::Replay { cassette: Some(abs(&c)), strict: Some(req.replay_strict) }
    } else {
        LlmChoice::None
    }
}

/// The provider of an [`LlmChoice`] (live: keys from the environment and the provider file,
/// checked before anything runs).
pub fn provider_from_choice(doc: &Document, choice: &LlmChoice) -> Result<BoxProvider, String> {
    Ok(match choice {
        LlmChoice::None => Box::new(NoProvider),
        LlmChoice::Scripted { script } => match script.clone().or_else(|| default_script(doc)) {
            Some(p) => scripted(&p)?,
            None => Box::new(NoProvider),
        },
        LlmChoice::Replay { cassette, strict } => {
            let c = cassette.clone().or_else(|| default_cassette(doc)).ok_or_else(|| {
                format!("no cassette to replay beside {}", doc.path.display())
            })?;
            Box::new(crate::llm::cassette::Replayer::load(&c, strict.unwrap_or(false))?)
        }
        LlmChoice::Live { model } => {
            let mut config = crate::llm::config::LlmConfig::from_env()?;
            if let Some(m) = model {
                config = config.with_default_model(m);
            }
            let live = crate::llm::LiveProvider::new(config);
            live.preflight(&crate::llm::models_used(doc)).map_err(|e| format!("cannot run live:\n{e}"))?;
            Box::new(live)
        }
    })
}
