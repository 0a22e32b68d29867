//! Where a run's LLM answers come from, decided in one place for every front end.
//!
//! A front end turns what the user chose into an [`LlmChoice`] (the CLI's flags through
//! [`llm_choice`], the app's run configuration by resolving its paths) and calls [`provider`].
//! Live calls get their API keys from [`live_config`] only: the provider file, then the OS
//! keyring (the app's Settings), then the environment, which wins. The same resolver serves a
//! live run, the resume of a live run and RAG embeddings.

use connect::llm::config::LlmConfig;
use connect::llm::{LiveProvider, models_used};
use model::doc::Document;
use runtime::cassette::{Recorder, Replayer};
use runtime::provider::{BoxProvider, NoProvider, ScriptedProvider};
use runtime::request::{LlmChoice, RunRequest};
use std::path::{Path, PathBuf};

/// The configuration of live calls: the provider file (`$SWITCHYARD_PROVIDERS` or the user's
/// config folder), the OS keyring's keys, the environment. The only key resolver of runs.
pub fn live_config() -> Result<LlmConfig, String> {
    connect::llm::keyring::llm_config()
}

/// The provider `choice` names for `doc`, wrapped in a recorder when `record` names a cassette
/// to write. Live providers check every model the document names before anything runs, so a
/// missing key is reported at once; the error says which key and where it is looked for.
pub fn provider(doc: &Document, choice: &LlmChoice, record: Option<&Path>) -> Result<BoxProvider, String> {
    let base: BoxProvider = match choice {
        LlmChoice::None => Box::new(NoProvider),
        LlmChoice::Scripted { script } => match script.clone().or_else(|| default_script(doc)) {
            Some(p) => scripted(&p)?,
            // Agents without LLM nodes need no replies; one that calls a model fails at that
            // node with a message saying where replies are looked for.
            None => Box::new(NoProvider),
        },
        LlmChoice::Replay { cassette, strict } => {
            let c = cassette.clone().or_else(|| default_cassette(doc)).ok_or_else(|| {
                format!(
                    "no cassette beside the agent ({}.cassette.json or cassette.json in {}): name one, or record a run first",
                    doc.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
                    doc.base_dir.display()
                )
            })?;
            Box::new(Replayer::load(&c, strict.unwrap_or(false))?)
        }
        LlmChoice::Live { model } => {
            let mut config = live_config()?;
            if let Some(m) = model.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
                config = config.with_default_model(m);
            }
            let live = LiveProvider::new(config);
            live.preflight(&models_used(doc)).map_err(|e| format!("cannot run live:\n{e}"))?;
            Box::new(live)
        }
    };
    Ok(match record {
        Some(path) => Box::new(Recorder::new(base, path)),
        None => base,
    })
}

/// The provider the CLI's flags in `req` ask for: [`provider`] of [`llm_choice`], recording
/// when `req.record` is set.
pub fn provider_for(doc: &Document, req: &RunRequest) -> Result<BoxProvider, String> {
    let choice = llm_choice(doc, req);
    let p = match &req.record {
        // Secrets kept as they are: the user asked for it (`--raw`).
        Some(path) if req.record_raw => Box::new(Recorder::raw(provider(doc, &choice, None)?, path)),
        record => provider(doc, &choice, record.as_deref())?,
    };
    Ok(online_if(p, req.allow_network))
}

/// `p` allowed the network when `allow` (the user's choice for one run), else as it is.
pub fn online_if(p: BoxProvider, allow: bool) -> BoxProvider {
    if allow && !p.network_allowed() { Box::new(runtime::provider::Online(p)) } else { p }
}

/// The provider of a saved [`LlmChoice`] (a resumed durable run), not recording.
pub fn provider_from_choice(doc: &Document, choice: &LlmChoice) -> Result<BoxProvider, String> {
    provider(doc, choice, None)
}

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

/// The CLI's flags in `req` as an [`LlmChoice`] with absolute paths (`record` is not part of
/// it): live, else a replay, else a script (the named one, else `replies.yaml` beside the
/// agent), else a cassette beside the agent, else none.
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

