//! Loki `rag` nodes: one knowledge base per node, retrieval by keyword (BM25) and, when the
//! node names an `embedding_model`, by embeddings too (reciprocal-rank fusion of both lists,
//! as upstream's hybrid search).
//!
//! - **Documents**: files, directories (walked recursively, hidden entries skipped, text files
//!   only: binaries are recognised by extension and by content), and `http(s)` URLs fetched
//!   through the shared HTTP client with a time and size limit. HTML (files or pages) becomes
//!   text. Relative paths resolve against the agent directory. Loader-protocol paths
//!   (`pdf:file.pdf`), globs and recursive URL crawls (`https://site/**`) are refused with a
//!   message saying what to do instead.
//! - **Chunks**: upstream's recursive character splitter, counting characters (not bytes or
//!   tokens): paragraphs first, then lines, sentences, clauses, words, and characters as a last
//!   resort; Markdown splits at headings before paragraphs. `chunk_size` defaults to 1000
//!   characters and `chunk_overlap` to a twentieth of it (upstream's defaults).
//! - **Knowledge base file**: `<cache>/rag/<agent hash>/<node_id>.yaml` in the user's cache
//!   folder (`$SWITCHYARD_CACHE_DIR`, else `$XDG_CACHE_HOME/switchyard`, else
//!   `~/.cache/switchyard`; the agent hash is of its folder's canonical path), never in the
//!   agent's folder (YAML: build settings, documents with their SHA-256, size and modification
//!   time, chunks with their embedding vectors as base64 little-endian `f32`). It is reused while
//!   the documents and settings stay the same; a changed document is re-read and re-chunked (the
//!   others keep their chunks and vectors); changed settings rebuild everything. URLs are fetched
//!   when first added and kept until the settings change or the file is deleted. Written
//!   readable by the user only (0600) through an exclusively created temp file with a random
//!   name, then renamed; a corrupt file is rebuilt with a warning. A knowledge base that earlier
//!   versions kept beside the agent (`<agent_dir>/<node_id>.yaml`, as upstream Loki does) is
//!   still read when it was built with the current settings, but never written; both places are
//!   never indexed as documents.
//! - **Embeddings**: `POST {base}/embeddings` of the provider named before the `:` (OpenAI
//!   wire, endpoints and keys from [`LlmConfig`]), in batches of `batch_size` (default 100),
//!   classified errors, transient ones retried twice. A model whose provider is not set up
//!   (no key, unknown provider, Anthropic wire) falls back to keyword retrieval with a warning.
//! - **Output**: `{context, sources}`: `context` is the hits joined by a blank line, each as
//!   `[Source: <source>]\n<chunk>`; `sources` the hits' sources without repeats, in rank order.
//!
//! The parts, one file each. Pure text and ranking code, no I/O: `html.rs` (HTML to text),
//! `split.rs` (the recursive character splitter), `bm25.rs` (the keyword index), `fusion.rs`
//! (reciprocal-rank fusion), `vector.rs` (vector math and the file's base64 encoding). What a
//! node asks for and its limits: `spec.rs`. With I/O: `documents.rs` (resolving, reading and
//! fetching documents), `embed.rs` (embeddings over HTTP), `kb.rs` (the knowledge-base file
//! and its search), `store.rs` (the run's [`RagStore`]: load, update or build, save).
//!
//! [`LlmConfig`]: connect::llm::config::LlmConfig

mod bm25;
mod documents;
mod embed;
mod fusion;
mod html;
mod kb;
mod spec;
mod split;
mod store;
mod vector;

pub use bm25::{Bm25, tokenize};
pub use html::html_to_text;
pub use kb::{ChunkRecord, DocRecord, Hit, Kb, KbFile, output_of};
pub use spec::{CACHE_DIR_VAR, Ctl, Params, Spec, cache_dir, kb_dir_in};
pub use split::split_text;
pub use store::{KbSource, RagStore, Retrieval};

use std::path::Path;
use std::time::Duration;

/// Chunks retrieved when the node sets no `top_k` (upstream's `rag_top_k`).
pub const DEFAULT_TOP_K: usize = 5;
/// Characters per chunk when the node sets no `chunk_size` (upstream's default chunk size).
pub const DEFAULT_CHUNK_SIZE: usize = 1000;
/// Texts per embeddings request when the node sets no `batch_size`.
pub const DEFAULT_BATCH_SIZE: usize = 100;
/// The largest document read (a file or a page).
pub const MAX_DOCUMENT_BYTES: u64 = 8 * 1024 * 1024;
/// The most files a node's documents may expand to.
pub const MAX_FILES: usize = 5_000;
/// The longest a URL fetch may take (within the node's own timeout).
pub const URL_TIMEOUT: Duration = Duration::from_secs(30);

/// The lower-case extension of a path or URL (empty when it has none).
fn ext_of(p: &str) -> String {
    Path::new(p).extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default()
}

#[cfg(test)]
mod test_support {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};

    pub fn no_log() -> impl Fn(String) + Sync {
        |_m: String| {}
    }

    pub fn tmpdir(tag: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!(
            "switchyard-rag-unit-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
