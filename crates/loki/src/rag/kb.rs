//! The knowledge-base file of a rag node (`<agent_dir>/<node_id>.yaml`: build settings,
//! documents with their SHA-256, size and modification time, chunks with their embedding
//! vectors) and, loaded, its search: keyword (BM25) alone, or fused with vector search.

use super::bm25::Bm25;
use super::documents::{Origin, Resolved};
use super::fusion::fuse;
use super::spec::Params;
use super::vector::{decode_vector, dot, normalize};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;

/// Version of the knowledge-base file format.
pub(super) const FORMAT: u32 = 1;

/// The knowledge-base file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KbFile {
    /// Format version.
    pub switchyard_rag: u32,
    pub node: String,
    pub params: Params,
    /// The model the stored vectors come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors_model: Option<String>,
    pub documents: Vec<DocRecord>,
    pub chunks: Vec<ChunkRecord>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocRecord {
    /// As shown in `sources`.
    pub source: String,
    /// The absolute path or the URL.
    pub location: String,
    pub sha256: String,
    #[serde(default)]
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime_ns: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// Index into `documents`.
    pub doc: usize,
    pub text: String,
    /// Base64 of the little-endian `f32` embedding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<String>,
}

/// A loaded knowledge base: the file plus its indexes.
#[derive(Debug)]
pub struct Kb {
    pub file: KbFile,
    pub path: PathBuf,
    bm25: Bm25,
    /// Unit-length vectors per chunk.
    vectors: Vec<Option<Vec<f32>>>,
}

impl Kb {
    pub(super) fn new(file: KbFile, path: PathBuf) -> Result<Kb, String> {
        if file.chunks.iter().any(|c| c.doc >= file.documents.len()) {
            return Err("a chunk names a document that is not listed".into());
        }
        let mut vectors = Vec::with_capacity(file.chunks.len());
        for (i, c) in file.chunks.iter().enumerate() {
            vectors.push(match &c.vector {
                Some(s) => Some(normalize(
                    decode_vector(s).ok_or_else(|| format!("the vector of chunk {i} is not valid base64 f32 data"))?,
                )),
                None => None,
            });
        }
        let bm25 = Bm25::new(file.chunks.iter().map(|c| c.text.as_str()));
        Ok(Kb { file, path, bm25, vectors })
    }

    pub fn chunk_count(&self) -> usize {
        self.file.chunks.len()
    }
    pub fn document_count(&self) -> usize {
        self.file.documents.len()
    }
    /// Chunks that carry an embedding.
    pub fn embedded_count(&self) -> usize {
        self.vectors.iter().filter(|v| v.is_some()).count()
    }

    /// Whether the resolved documents are exactly the ones recorded, unchanged on disk (same
    /// size and modification time; URLs by address).
    pub(super) fn same_documents(&self, docs: &[Resolved]) -> bool {
        docs.len() == self.file.documents.len()
            && docs.iter().zip(&self.file.documents).all(|(r, d)| {
                r.location() == d.location
                    && match &r.origin {
                        Origin::File { size, mtime_ns, .. } => {
                            *size == d.size && mtime_ns.is_some() && *mtime_ns == d.mtime_ns
                        }
                        Origin::Url(_) => true,
                    }
            })
    }

    /// Keyword (and, with `query_vec`, vector) search: the best `top_k` chunks.
    pub fn search(&self, query: &str, top_k: usize, query_vec: Option<&[f32]>) -> Vec<Hit> {
        let keyword = self.bm25.search(query);
        let kw: HashMap<usize, f64> = keyword.iter().copied().collect();
        let hit = |i: usize, score: f64, cosine: Option<f64>| Hit {
            chunk: i,
            source: self.file.documents[self.file.chunks[i].doc].source.clone(),
            text: self.file.chunks[i].text.clone(),
            score,
            keyword: kw.get(&i).copied(),
            cosine,
        };
        let Some(q) = query_vec.filter(|_| self.vectors.iter().any(Option::is_some)) else {
            return keyword.into_iter().take(top_k).map(|(i, s)| hit(i, s, None)).collect();
        };
        let q = normalize(q.to_vec());
        let mut by_vec: Vec<(usize, f64)> =
            self.vectors.iter().enumerate().filter_map(|(i, v)| v.as_ref().map(|v| (i, dot(&q, v)))).collect();
        by_vec.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let cos: HashMap<usize, f64> = by_vec.iter().copied().collect();
        fuse(&by_vec, &keyword, top_k).into_iter().map(|(i, s)| hit(i, s, cos.get(&i).copied())).collect()
    }
}

/// One retrieved chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub chunk: usize,
    pub source: String,
    pub text: String,
    /// The ranking score: BM25 alone, or the fused reciprocal-rank score.
    pub score: f64,
    pub keyword: Option<f64>,
    pub cosine: Option<f64>,
}

/// The node's `output`: `{context, sources}`.
pub fn output_of(hits: &[Hit]) -> Value {
    let context = hits.iter().map(|h| format!("[Source: {}]\n{}", h.source, h.text)).collect::<Vec<_>>().join("\n\n");
    let mut sources: Vec<&str> = Vec::new();
    for h in hits {
        if !sources.contains(&h.source.as_str()) {
            sources.push(&h.source);
        }
    }
    json!({"context": context, "sources": sources})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::vector::encode_vector;

    #[test]
    fn output_has_context_with_sources_and_unique_sources() {
        let h = |s: &str, t: &str| Hit {
            chunk: 0,
            source: s.into(),
            text: t.into(),
            score: 1.0,
            keyword: None,
            cosine: None,
        };
        let out = output_of(&[h("./k/a.md", "one"), h("https://x.test/p", "two"), h("./k/a.md", "three")]);
        assert_eq!(
            out["context"],
            "[Source: ./k/a.md]\none\n\n[Source: https://x.test/p]\ntwo\n\n[Source: ./k/a.md]\nthree"
        );
        assert_eq!(out["sources"], json!(["./k/a.md", "https://x.test/p"]));
        assert_eq!(output_of(&[]), json!({"context": "", "sources": []}));
    }

    #[test]
    fn hybrid_search_fuses_keyword_and_vector_ranks() {
        let file = KbFile {
            switchyard_rag: FORMAT,
            node: "kb".into(),
            params: Params { chunk_size: 100, chunk_overlap: 0, embedding_model: Some("openai:e".into()) },
            vectors_model: Some("openai:e".into()),
            documents: vec![DocRecord {
                source: "d".into(),
                location: "/d".into(),
                sha256: String::new(),
                size: 0,
                mtime_ns: None,
            }],
            chunks: vec![
                ChunkRecord { doc: 0, text: "apples and pears".into(), vector: Some(encode_vector(&[1.0, 0.0])) },
                ChunkRecord { doc: 0, text: "fruit salad".into(), vector: Some(encode_vector(&[0.0, 1.0])) },
                ChunkRecord { doc: 0, text: "car engines".into(), vector: Some(encode_vector(&[-1.0, 0.0])) },
            ],
        };
        let kb = Kb::new(file, PathBuf::from("/kb.yaml")).unwrap();
        // "fruit" matches chunk 1 by keyword; the query vector is closest to chunk 0.
        let hits = kb.search("fruit", 2, Some(&[0.9, 0.5]));
        let order: Vec<usize> = hits.iter().map(|h| h.chunk).collect();
        assert_eq!(order, [1, 0], "{hits:?}");
        assert!(hits[0].keyword.is_some() && hits[0].cosine.is_some());
        // Without a vector: keyword only.
        let hits = kb.search("fruit", 2, None);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].chunk, 1);
    }
}
