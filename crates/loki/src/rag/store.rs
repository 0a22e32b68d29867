//! The knowledge bases of one run: [`RagStore`] loads a node's knowledge base once, re-checks
//! it against the documents on every retrieval, and reads, chunks and embeds only what changed
//! (everything when the build settings change) before saving the file atomically, readable by
//! the user only, in the user's cache folder (never beside the agent, see the module docs).

use super::documents::{Origin, Resolved, fetch_url, read_file, resolve, sha256_hex};
use super::embed::Embedder;
use super::kb::{ChunkRecord, DocRecord, FORMAT, Hit, Kb, KbFile, output_of};
use super::spec::{Ctl, Params, Spec, cache_dir};
use super::split::{separators_for, split_text};
use super::vector::encode_vector;
use connect::llm::config::LlmConfig;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What one retrieval did.
#[derive(Debug)]
pub struct Retrieval {
    pub hits: Vec<Hit>,
    /// Vector search took part.
    pub hybrid: bool,
    pub kb: Arc<Kb>,
    /// How the knowledge base was obtained.
    pub source: KbSource,
}

impl Retrieval {
    pub fn output(&self) -> Value {
        output_of(&self.hits)
    }
}

/// How a retrieval got its knowledge base.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KbSource {
    /// Already loaded by this run, documents unchanged.
    Memory,
    /// Read from its file, documents unchanged.
    File,
    /// Built (or updated): why, documents read or fetched, documents whose chunks were kept,
    /// chunks embedded.
    Built { reason: String, read: usize, kept: usize, embedded: usize },
}

/// One node's knowledge base, once loaded (locked while it is built).
type Slot = Arc<Mutex<Option<Arc<Kb>>>>;

/// The knowledge bases of one run (shared by its forks and parallel branches): loaded once,
/// re-checked against the documents on every retrieval, built by one branch at a time.
#[derive(Default)]
pub struct RagStore {
    config: Mutex<Option<Arc<LlmConfig>>>,
    slots: Mutex<BTreeMap<String, Slot>>,
    /// The cache folder knowledge bases go to (`None`: [`cache_dir`], read when needed).
    cache: Option<PathBuf>,
}

impl std::fmt::Debug for RagStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RagStore").finish_non_exhaustive()
    }
}

impl RagStore {
    /// A store whose embeddings go where `config` says (`None`: the configuration of live runs,
    /// `connect::llm::keyring::llm_config` — provider file, OS keyring, environment — read when
    /// first needed).
    pub fn new(config: Option<Arc<LlmConfig>>) -> RagStore {
        RagStore { config: Mutex::new(config), slots: Mutex::default(), cache: None }
    }

    /// Keep the knowledge bases in `cache` instead of the user's cache folder (tests).
    pub fn with_cache_dir(mut self, cache: PathBuf) -> RagStore {
        self.cache = Some(cache);
        self
    }

    /// The configuration given to [`RagStore::new`] (nested runs share it).
    pub fn configured(&self) -> Option<Arc<LlmConfig>> {
        self.config.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn config(&self) -> Result<Arc<LlmConfig>, String> {
        let mut slot = self.config.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = Arc::new(connect::llm::keyring::llm_config()?);
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Retrieve the best chunks for `query`, building or updating the node's knowledge base
    /// first when its documents or settings changed.
    pub fn retrieve(&self, spec: &Spec, query: &str, ctl: &Ctl<'_>) -> Result<Retrieval, String> {
        let id = spec.node.as_str();
        if let Some(d) = spec.driver.as_deref().filter(|d| !d.eq_ignore_ascii_case("yaml")) {
            return Err(format!(
                "rag node '{id}': `driver: {d}` is not supported by Switchyard (knowledge bases are kept in YAML files in its cache folder); remove `driver` or set it to `yaml`"
            ));
        }
        let cache = match &self.cache {
            Some(c) => c.clone(),
            None => cache_dir()?,
        };
        let path = spec.kb_path_in(&cache)?;
        let params = spec.params()?;
        let warn = |m: String| (ctl.log)(format!("warning: {m}"));
        // The knowledge base is never a document, wherever the cache folder is.
        let mut spec_docs = spec.clone();
        spec_docs.skip_files.push(path.clone());
        let docs = resolve(&spec_docs, &warn)?;
        let embedder = Embedder::of_node(spec, || self.config(), ctl)?;
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            slots.entry(id.to_string()).or_default().clone()
        };
        // One build per node at a time: parallel branches (map items) wait for the first.
        let mut held = slot.lock().unwrap_or_else(|p| p.into_inner());
        let wants_vectors = |kb: &Kb| embedder.is_some() && kb.embedded_count() < kb.chunk_count();
        let (kb, source) = match held.as_ref() {
            Some(kb) if kb.file.params == params && kb.same_documents(&docs) && !wants_vectors(kb) => {
                (kb.clone(), KbSource::Memory)
            }
            _ => {
                let (kb, source) = self.load_or_build(spec, &path, &params, &docs, embedder.as_ref(), ctl)?;
                let kb = Arc::new(kb);
                *held = Some(kb.clone());
                (kb, source)
            }
        };
        drop(held);
        ctl.check(id)?;
        let top_k = spec.top_k();
        let query_vec = match &embedder {
            Some(e)
                if kb.embedded_count() > 0
                    && kb.file.vectors_model.as_deref() == Some(&e.model.to_string())
                    && !query.trim().is_empty() =>
            {
                e.embed(id, &[query.to_string()], ctl)?.pop()
            }
            _ => None,
        };
        let hits = kb.search(query, top_k, query_vec.as_deref());
        Ok(Retrieval { hits, hybrid: query_vec.is_some(), kb, source })
    }

    fn load_or_build(
        &self,
        spec: &Spec,
        path: &Path,
        params: &Params,
        docs: &[Resolved],
        embedder: Option<&Embedder>,
        ctl: &Ctl<'_>,
    ) -> Result<(Kb, KbSource), String> {
        let id = spec.node.as_str();
        let cached = match read_kb(path) {
            Ok(kb) => kb,
            Err(e) => {
                (ctl.log)(format!("warning: knowledge base {} {e}; rebuilding it", path.display()));
                tracing::warn!("rag node '{id}': knowledge base {} {e}", path.display());
                None
            }
        };
        // One that an earlier version (or upstream Loki) kept beside the agent counts when it
        // was built with these settings; it may be in another format (upstream's): then it is
        // not ours and is left alone, silently. It is never written.
        let old = match cached {
            Some(kb) if kb.file.params == *params => Some(kb),
            cached => spec
                .kb_path_beside_agent()
                .ok()
                .filter(|b| b != path)
                .and_then(|b| read_kb(&b).ok().flatten())
                .filter(|kb| kb.file.params == *params)
                .or(cached),
        };
        let wants_vectors = |kb: &Kb| embedder.is_some() && kb.embedded_count() < kb.chunk_count();
        if let Some(kb) = &old
            && kb.file.params == *params
            && kb.same_documents(docs)
            && !wants_vectors(kb)
        {
            let kb = old.expect("checked");
            return Ok((kb, KbSource::File));
        }
        let reason = match &old {
            None if path.exists() => "the file was unreadable".to_string(),
            None => "no knowledge base yet".to_string(),
            Some(kb) if kb.file.params != *params => "the build settings changed".to_string(),
            Some(kb) if !kb.same_documents(docs) => "the documents changed".to_string(),
            Some(_) => "chunks lacked embeddings".to_string(),
        };
        // Chunks and vectors of unchanged documents are kept (same settings only).
        let old = old.filter(|kb| kb.file.params == *params);
        let mut file = KbFile {
            switchyard_rag: FORMAT,
            node: id.to_string(),
            params: params.clone(),
            vectors_model: None,
            documents: Vec::new(),
            chunks: Vec::new(),
        };
        let old_vectors_ok = |kb: &Kb| match embedder {
            Some(e) => kb.file.vectors_model.as_deref() == Some(&e.model.to_string()),
            None => true,
        };
        let (mut read, mut kept) = (0, 0);
        for r in docs {
            ctl.check(id)?;
            let prior = old.as_ref().and_then(|kb| {
                let i = kb.file.documents.iter().position(|d| d.location == r.location())?;
                Some((kb, i))
            });
            // The old record, when the document is known to be unchanged without reading it.
            let mut reuse = prior.filter(|(kb, i)| {
                let d = &kb.file.documents[*i];
                match &r.origin {
                    Origin::Url(_) => true,
                    Origin::File { size, mtime_ns, .. } => {
                        *size == d.size && mtime_ns.is_some() && *mtime_ns == d.mtime_ns
                    }
                }
            });
            let mut fresh: Option<(Vec<u8>, String)> = None;
            if reuse.is_none() {
                let got = match &r.origin {
                    Origin::File { path, listed, .. } => read_file(id, r, path, *listed)?,
                    Origin::Url(u) => Some(fetch_url(id, u, ctl)?),
                };
                let Some(got) = got else { continue };
                read += 1;
                let hash = sha256_hex(&got.0);
                // Touched but not changed: keep its chunks.
                reuse = prior.filter(|(kb, i)| kb.file.documents[*i].sha256 == hash);
                fresh = Some(got);
            }
            let (size, mtime) = match &r.origin {
                Origin::File { size, mtime_ns, .. } => (*size, *mtime_ns),
                Origin::Url(_) => (0, None),
            };
            let doc_index = file.documents.len();
            match (reuse, fresh) {
                (Some((kb, i)), fresh) => {
                    kept += 1;
                    let d = &kb.file.documents[i];
                    file.documents.push(DocRecord {
                        source: r.source.clone(),
                        location: d.location.clone(),
                        sha256: d.sha256.clone(),
                        size: if fresh.is_some() || matches!(r.origin, Origin::File { .. }) { size } else { d.size },
                        mtime_ns: mtime.or(d.mtime_ns),
                    });
                    let keep_vec = old_vectors_ok(kb);
                    for c in kb.file.chunks.iter().filter(|c| c.doc == i) {
                        file.chunks.push(ChunkRecord {
                            doc: doc_index,
                            text: c.text.clone(),
                            vector: if keep_vec { c.vector.clone() } else { None },
                        });
                    }
                    if keep_vec && kb.file.vectors_model.is_some() {
                        file.vectors_model = kb.file.vectors_model.clone();
                    }
                }
                (None, Some((bytes, text))) => {
                    let size = if matches!(r.origin, Origin::Url(_)) { bytes.len() as u64 } else { size };
                    file.documents.push(DocRecord {
                        source: r.source.clone(),
                        location: r.location(),
                        sha256: sha256_hex(&bytes),
                        size,
                        mtime_ns: mtime,
                    });
                    for c in split_text(&text, params.chunk_size, params.chunk_overlap, separators_for(&r.source)) {
                        file.chunks.push(ChunkRecord { doc: doc_index, text: c, vector: None });
                    }
                }
                (None, None) => {}
            }
        }
        if file.chunks.is_empty() {
            return Err(format!(
                "rag node '{id}': the documents hold no text to index ({}); list text, Markdown or HTML files, folders holding them, or pages",
                spec.documents.join(", ")
            ));
        }
        let mut embedded = 0;
        if let Some(e) = embedder {
            let model = e.model.to_string();
            if file.vectors_model.as_deref() != Some(&model) {
                for c in &mut file.chunks {
                    c.vector = None;
                }
            }
            let missing: Vec<usize> = (0..file.chunks.len()).filter(|&i| file.chunks[i].vector.is_none()).collect();
            if !missing.is_empty() {
                let texts: Vec<String> = missing.iter().map(|&i| file.chunks[i].text.clone()).collect();
                let vectors = e.embed(id, &texts, ctl)?;
                for (&i, v) in missing.iter().zip(&vectors) {
                    file.chunks[i].vector = Some(encode_vector(v));
                }
                embedded = missing.len();
            }
            file.vectors_model = Some(model);
        }
        save(path, &file, ctl);
        let kb = Kb::new(file, path.to_path_buf())?;
        Ok((kb, KbSource::Built { reason, read, kept, embedded }))
    }
}

/// The knowledge base in `path`: `None` when there is no file, an error (saying why, after
/// "is …" / "cannot …") when it cannot be read or is not a knowledge base of this format.
fn read_kb(path: &Path) -> Result<Option<Kb>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    serde_yaml::from_str::<KbFile>(&text)
        .map_err(|e| e.to_string())
        .and_then(|f| {
            if f.switchyard_rag != FORMAT {
                Err(format!("format {} is not {FORMAT}", f.switchyard_rag))
            } else {
                Kb::new(f, path.to_path_buf())
            }
        })
        .map(Some)
        .map_err(|e| format!("is unreadable ({e})"))
}

/// Write the knowledge base to `path` in the cache folder: its folders created readable by the
/// user only (0700), the file written 0600 through an exclusively created, randomly named temp
/// file, synced and renamed (`runtime::cassette::write_private`). A failure is a warning (the
/// run goes on with the knowledge base in memory).
fn save(path: &Path, file: &KbFile, ctl: &Ctl<'_>) {
    let result = (|| -> Result<(), String> {
        let yaml = serde_yaml::to_string(file).map_err(|e| e.to_string())?;
        let text = format!(
            "# Knowledge base of rag node '{}', written by Switchyard. It is rebuilt when the node's\n# documents or build settings change; delete it to force a fresh build.\n{yaml}",
            file.node
        );
        if let Some(dir) = path.parent() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        runtime::cassette::write_private(path, text.as_bytes())
    })();
    if let Err(e) = result {
        (ctl.log)(format!("warning: the knowledge base could not be saved to {}: {e}", path.display()));
        tracing::warn!("rag: cannot save {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::test_support::tmpdir;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    #[test]
    fn the_knowledge_base_is_reused_updated_and_rebuilt() {
        let dir = tmpdir("reuse");
        std::fs::write(dir.join("a.md"), "Rust ownership and borrowing rules.").unwrap();
        std::fs::write(dir.join("b.md"), "Python uses reference counting.").unwrap();
        let spec = Spec {
            node: "kb".into(),
            agent_dir: dir.clone(),
            documents: vec!["a.md".into(), "b.md".into()],
            ..Spec::default()
        };
        let stop = AtomicBool::new(false);
        let lines = Mutex::new(Vec::<String>::new());
        let log = |m: String| lines.lock().unwrap().push(m);
        let ctl = Ctl {
            stop: &stop,
            deadline: Instant::now() + Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            log: &log,
            network: true,
        };
        let cache = tmpdir("reuse-cache");
        let new_store = || RagStore::new(None).with_cache_dir(cache.clone());
        let path = spec.kb_path_in(&cache).unwrap();
        assert!(path.starts_with(cache.join("rag")), "{}", path.display());

        let r = new_store().retrieve(&spec, "borrowing", &ctl).unwrap();
        assert!(matches!(&r.source, KbSource::Built { read: 2, kept: 0, .. }), "{:?}", r.source);
        assert_eq!(r.hits[0].source, "a.md");
        let written = std::fs::read_to_string(&path).unwrap();
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();

        // Same store: from memory. A new store: from the file, untouched.
        let store = new_store();
        assert_eq!(store.retrieve(&spec, "borrowing", &ctl).unwrap().source, KbSource::File);
        assert_eq!(store.retrieve(&spec, "borrowing", &ctl).unwrap().source, KbSource::Memory);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written);

        // One document changes: only it is read again.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(dir.join("b.md"), "Python uses reference counting and a cycle collector.").unwrap();
        let r = store.retrieve(&spec, "cycle collector", &ctl).unwrap();
        assert!(matches!(&r.source, KbSource::Built { read: 1, kept: 1, .. }), "{:?}", r.source);
        assert_eq!(r.hits[0].source, "b.md");

        // Settings change: everything is rebuilt.
        let spec2 = Spec { chunk_size: Some(500), ..spec.clone() };
        let r = new_store().retrieve(&spec2, "ownership", &ctl).unwrap();
        assert!(matches!(&r.source, KbSource::Built { read: 2, kept: 0, .. }), "{:?}", r.source);

        // A corrupt file: rebuilt with a warning.
        std::fs::write(&path, "switchyard_rag: [this is not a knowledge base").unwrap();
        let r = new_store().retrieve(&spec2, "ownership", &ctl).unwrap();
        assert!(matches!(&r.source, KbSource::Built { read: 2, .. }), "{:?}", r.source);
        assert!(
            lines.lock().unwrap().iter().any(|l| l.contains("unreadable") && l.contains("rebuilding")),
            "{:?}",
            lines.lock().unwrap()
        );
        let f: KbFile = serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(f.params.chunk_size, 500);
        assert_eq!(f.documents.len(), 2);
        assert_eq!(f.documents[0].sha256.len(), 64);
        // Nothing was ever written beside the agent; the cache file is the user's alone.
        let mut beside: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        beside.sort();
        assert_eq!(beside, ["a.md", "b.md"]);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_knowledge_base_beside_the_agent_is_read_when_current_and_never_written() {
        let dir = tmpdir("beside");
        std::fs::write(dir.join("a.md"), "Rust ownership and borrowing rules.").unwrap();
        let spec = Spec { node: "kb".into(), agent_dir: dir.clone(), documents: vec!["a.md".into()], ..Spec::default() };
        let stop = AtomicBool::new(false);
        let log = |_m: String| {};
        let ctl = Ctl {
            stop: &stop,
            deadline: Instant::now() + Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            log: &log,
            network: true,
        };
        // An earlier version's knowledge base beside the agent: built in another cache, moved.
        let other = tmpdir("beside-other-cache");
        RagStore::new(None).with_cache_dir(other.clone()).retrieve(&spec, "borrowing", &ctl).unwrap();
        let beside = spec.kb_path_beside_agent().unwrap();
        assert_eq!(beside, dir.join("kb.yaml"));
        std::fs::rename(spec.kb_path_in(&other).unwrap(), &beside).unwrap();
        let text = std::fs::read_to_string(&beside).unwrap();

        // Current: read, not rewritten, nothing in the cache.
        let cache = tmpdir("beside-cache");
        let r = RagStore::new(None).with_cache_dir(cache.clone()).retrieve(&spec, "borrowing", &ctl).unwrap();
        assert_eq!(r.source, KbSource::File);
        assert_eq!(r.kb.path, beside);
        assert!(!spec.kb_path_in(&cache).unwrap().exists());
        // It is not a document of a node that indexes the agent's folder either.
        let all = Spec { documents: vec!["./".into()], ..spec.clone() };
        let all = Spec { skip_files: Spec::of_node("kb", &dir, &Default::default(), ["kb"]).skip_files, ..all };
        let r = RagStore::new(None).with_cache_dir(cache.clone()).retrieve(&all, "borrowing", &ctl).unwrap();
        assert_eq!(r.kb.file.documents.iter().map(|d| d.source.as_str()).collect::<Vec<_>>(), ["a.md"]);

        // Other settings: built again, into the cache only; the file beside the agent stays.
        let spec2 = Spec { chunk_size: Some(300), ..spec.clone() };
        let r = RagStore::new(None).with_cache_dir(cache.clone()).retrieve(&spec2, "borrowing", &ctl).unwrap();
        assert!(matches!(&r.source, KbSource::Built { .. }), "{:?}", r.source);
        assert_eq!(r.kb.path, spec2.kb_path_in(&cache).unwrap());
        assert_eq!(std::fs::read_to_string(&beside).unwrap(), text);

        // Upstream Loki's own format beside the agent is left alone, silently.
        std::fs::write(&beside, "documents: []\nembeddings: {}\n").unwrap();
        let lines = Mutex::new(Vec::<String>::new());
        let log = |m: String| lines.lock().unwrap().push(m);
        let ctl = Ctl { log: &log, ..ctl };
        let fresh = tmpdir("beside-cache-2");
        let r = RagStore::new(None).with_cache_dir(fresh).retrieve(&spec, "borrowing", &ctl).unwrap();
        assert!(matches!(&r.source, KbSource::Built { .. }), "{:?}", r.source);
        assert!(lines.lock().unwrap().iter().all(|l| !l.contains("warning")), "{:?}", lines.lock().unwrap());
        assert_eq!(std::fs::read_to_string(&beside).unwrap(), "documents: []\nembeddings: {}\n");
    }
}
