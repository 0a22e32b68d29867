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
    /// Files never indexed: the knowledge bases of the graph's rag nodes.
    pub skip_files: Vec<PathBuf>,
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
            skip_files: rag_ids.into_iter().map(|i| agent_dir.join(format!("{i}.yaml"))).collect(),
        }
    }

    /// `<agent_dir>/<node_id>.yaml`, or why the id cannot name a file there.
    pub fn kb_path(&self) -> Result<PathBuf, String> {
        let id = self.node.as_str();
        if id.is_empty() || id == "." || id == ".." || id.contains(['/', '\\', '\0']) {
            return Err(format!(
                "rag node '{id}': its id cannot name the knowledge-base file `<agent dir>/<id>.yaml`; rename the node (letters, digits, `_`, `-`)"
            ));
        }
        Ok(self.agent_dir.join(format!("{id}.yaml")))
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
