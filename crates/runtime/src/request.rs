//! What a front end asks a run for: the request (agent, input, state, LLM mode flags) and the
//! LLM choice a durable run saves. Plain data; `switchyard::run::launch` turns them into a
//! machine and a provider.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use ts_rs::TS;

/// What to run and with what.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct RunRequest {
    /// The agent of a multi-agent sherma file (default: the first).
    pub agent: Option<String>,
    /// The user's input text (sherma: one human message; Loki: `initial_prompt`).
    pub input: Option<String>,
    /// Initial state as a JSON object (sherma: fields; Loki: merged over `initial_state`).
    pub state: Option<Value>,
    /// Scripted LLM replies; default: `replies.yaml` beside the agent file, if present.
    pub llm_script: Option<PathBuf>,
    /// Extra Python `sys.path` entries for sherma `import_path` tools.
    pub python_path: Vec<PathBuf>,
    /// Answer from this cassette instead (see [`crate::cassette`]).
    pub replay: Option<PathBuf>,
    /// With `replay`: fail at the first request that differs from the recording.
    pub replay_strict: bool,
    /// Call the models the document names, over HTTP (keys from the environment and the
    /// provider file).
    pub live: bool,
    /// Record every LLM and tool exchange into this cassette.
    pub record: Option<PathBuf>,
    /// With `record`: keep secrets in the cassette as they are (an explicit opt-in; cassettes
    /// are redacted otherwise).
    pub record_raw: bool,
    /// Let a scripted or replayed run use the network (remote hooks, skill and RAG URLs,
    /// embeddings, A2A, MCP over HTTP); such runs are offline otherwise.
    pub allow_network: bool,
}

/// Where a run's LLM answers come from, as a durable run saves it (JSON tagged by `mode`, the
/// same shape as the desktop's run configuration) so a resume in another process builds the
/// same provider. Paths are absolute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum LlmChoice {
    None,
    Scripted {
        #[serde(default)]
        script: Option<PathBuf>,
    },
    Replay {
        #[serde(default)]
        cassette: Option<PathBuf>,
        #[serde(default)]
        strict: Option<bool>,
    },
    Live {
        /// The model for nodes that name none (the desktop's per-run choice).
        #[serde(default)]
        model: Option<String>,
    },
}

