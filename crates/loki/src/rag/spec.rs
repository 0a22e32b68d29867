//! What a rag node asks for ([`Spec`], its checked build settings [`Params`]) and the limits
//! of one retrieval ([`Ctl`]).

use super::{DEFAULT_CHUNK_SIZE, DEFAULT_TOP_K};
use model::doc::loki::RagNode;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One rag node's knowledge-base settings, from its YAML.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub node: String,
    pub agent_dir: PathBuf,
    pub documents: Vec<String>,
    pub top_k: Option<u64>,
    pub chunk_size: Option<u64>,
    pub chunk_overlap: Option<u64>,
    pub embedding_model: Option<String>,
    pub batch_size: Option<u64>,
    pub driver: Option<String>,
    /// Files never indexed: the knowledge bases of the graph's rag nodes, in the cache and
    /// beside the agent ([`Spec::kb_paths`]).
    pub skip_files: Vec<PathBuf>,
}

/// The variable naming Switchyard's cache folder (tests; default `$XDG_CACHE_HOME/switchyard`,
/// else `~/.cache/switchyard`).
pub const CACHE_DIR_VAR: &str = "SWITCHYARD_CACHE_DIR";

/// Switchyard's cache folder: `$SWITCHYARD_CACHE_DIR`, else `$XDG_CACHE_HOME/switchyard` (when
/// absolute), else `$HOME/.cache/switchyard`.
pub fn cache_dir() -> Result<PathBuf, String> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var(CACHE_DIR_VAR) {
        return Ok(d);
    }
    if let Some(d) = var("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
        return Ok(d.join("switchyard"));
    }
    match var("HOME") {
        Some(h) => Ok(h.join(".cache").join("switchyard")),
        None => Err(format!("no cache folder for knowledge bases: set HOME, XDG_CACHE_HOME or {CACHE_DIR_VAR}")),
    }
}

/// The folder of the knowledge bases of the agent in `agent_dir`, in the cache folder `cache`:
/// `<cache>/rag/<first 16 hex digits of the SHA-256 of the agent folder's canonical path>`.
pub fn kb_dir_in(cache: &Path, agent_dir: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let canonical = agent_dir
        .canonicalize()
        .unwrap_or_else(|_| std::path::absolute(agent_dir).unwrap_or_else(|_| agent_dir.to_path_buf()));
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    cache.join("rag").join(hex)
}

impl Spec {
    /// The settings of rag node `id` of an agent in `agent_dir`; `rag_ids` are the graph's rag
    /// node ids (their knowledge-base files are not documents).
    pub fn of_node<'a>(id: &str, agent_dir: &Path, r: &RagNode, rag_ids: impl IntoIterator<Item = &'a str>) -> Spec {
        Spec {
            node: id.to_string(),
            agent_dir: agent_dir.to_path_buf(),
            documents: r.documents.iter().map(|d| d.value.clone()).collect(),
            top_k: r.top_k,
            chunk_size: r.chunk_size,
            chunk_overlap: r.chunk_overlap,
            embedding_model: r.embedding_model.clone().filter(|m| !m.trim().is_empty()),
            batch_size: r.batch_size,
            driver: r.driver.as_ref().map(|d| d.value.clone()),
            skip_files: rag_ids
                .into_iter()
                .flat_map(|i| {
                    let s = Spec { node: i.to_string(), agent_dir: agent_dir.to_path_buf(), ..Spec::default() };
                    let (cache, beside) = s.kb_paths();
                    cache.into_iter().chain(beside)
                })
                .collect(),
        }
    }

    /// Where the node's knowledge base is written: `<cache>/rag/<agent hash>/<node_id>.yaml` in
    /// the user's cache folder ([`cache_dir`], [`kb_dir_in`]), or why the id cannot name a file
    /// or there is no cache folder.
    pub fn kb_path(&self) -> Result<PathBuf, String> {
        self.kb_path_in(&cache_dir()?)
    }

    /// [`Spec::kb_path`] in the cache folder `cache`.
    pub fn kb_path_in(&self, cache: &Path) -> Result<PathBuf, String> {
        let id = self.file_id()?;
        Ok(kb_dir_in(cache, &self.agent_dir).join(format!("{id}.yaml")))
    }

    /// Where earlier versions (and upstream Loki) keep it, `<agent_dir>/<node_id>.yaml`: read
    /// when it is valid for the current settings, never written.
    pub fn kb_path_beside_agent(&self) -> Result<PathBuf, String> {
        let id = self.file_id()?;
        Ok(self.agent_dir.join(format!("{id}.yaml")))
    }

    /// Both places of the knowledge base ([`Spec::kb_path`], [`Spec::kb_path_beside_agent`]),
    /// those that can be named.
    pub fn kb_paths(&self) -> (Option<PathBuf>, Option<PathBuf>) {
        (self.kb_path().ok(), self.kb_path_beside_agent().ok())
    }

    /// The node id as a file name, or why it cannot be one.
    fn file_id(&self) -> Result<&str, String> {
        let id = self.node.as_str();
        if id.is_empty() || id == "." || id == ".." || id.contains(['/', '\\', '\0']) {
            return Err(format!(
                "rag node '{id}': its id cannot name the knowledge-base file `<id>.yaml`; rename the node (letters, digits, `_`, `-`)"
            ));
        }
        Ok(id)
    }

    pub fn top_k(&self) -> usize {
        self.top_k.map(|k| k.min(10_000) as usize).unwrap_or(DEFAULT_TOP_K)
    }

    /// The build settings, checked.
    pub fn params(&self) -> Result<Params, String> {
        let id = &self.node;
        let size = self.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE as u64);
        if size == 0 {
            return Err(format!("rag node '{id}': `chunk_size` must be at least 1"));
        }
        let size = size.min(1_000_000) as usize;
        let overlap = self.chunk_overlap.map(|o| o.min(1_000_000) as usize).unwrap_or(size / 20);
        if overlap >= size {
            return Err(format!(
                "rag node '{id}': `chunk_overlap` ({overlap}) must be smaller than `chunk_size` ({size})"
            ));
        }
        Ok(Params { chunk_size: size, chunk_overlap: overlap, embedding_model: self.embedding_model.clone() })
    }
}

/// What the chunks and vectors of a knowledge base depend on: any change rebuilds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    pub chunk_size: usize,
    pub chunk_overlap: usize,
    #[serde(default)]
    pub embedding_model: Option<String>,
}

/// Limits of one retrieval and where its log lines go.
pub struct Ctl<'a> {
    pub stop: &'a AtomicBool,
    /// Build and retrieval end by then.
    pub deadline: Instant,
    /// The node's `timeout` (for messages).
    pub timeout: Duration,
    /// Warnings and progress for the run log.
    pub log: &'a (dyn Fn(String) + Sync),
    /// Whether URL documents may be fetched and embeddings computed over the network (`false`
    /// in an offline run: scripted or replayed replies, network not allowed).
    pub network: bool,
}

impl Ctl<'_> {
    pub(super) fn timed_out(&self, id: &str) -> String {
        format!(
            "rag node '{id}' timed out after {}s (building the knowledge base and retrieving)",
            self.timeout.as_secs()
        )
    }
    pub(super) fn check(&self, id: &str) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(stopped_msg(id, "building the knowledge base"));
        }
        if Instant::now() >= self.deadline {
            return Err(self.timed_out(id));
        }
        Ok(())
    }
}

pub(super) fn stopped_msg(id: &str, what: &str) -> String {
    format!("rag node '{id}': the run was stopped while {what}; the request was cancelled")
}
