//! Upstream step 8: rag nodes.

use super::V;
use crate::doc::loki::{NodeBody, RAG_DRIVERS};
use syntax::diag::did_you_mean;

impl V<'_> {
    /// Upstream 8: rag nodes: documents, `state_updates`, the driver, chunking, fields Switchyard
    /// ignores.
    pub(super) fn rag(&mut self) {
        for n in &self.l.nodes {
            let NodeBody::Rag(r) = &n.body else { continue };
            if r.documents.is_empty() {
                let d = self
                    .err("loki-rag", "RAG node has no 'documents'; at least one knowledge source is required", r.documents_span)
                    .node(n.id.value.clone())
                    .hint("list files, directories or URLs under `documents:` (relative paths resolve against the agent directory)");
                self.push(d);
            }
            if n.state_updates.is_none() {
                let d = self
                    .warn("loki-rag", "RAG node has no 'state_updates'; its retrieval result will not be written to state", n.id.span)
                    .node(n.id.value.clone())
                    .hint("add e.g. `state_updates: {context: \"{{output.context}}\"}`");
                self.push(d);
            }
            // What Switchyard does not do (the node runs without it, or fails saying so).
            for (field, set) in [
                ("reranker_model", r.reranker_model.is_some()),
                ("extractor_model", r.extractor_model.is_some()),
                ("extractor_prompt", r.extractor_prompt.is_some()),
                ("graph_hops", r.graph_hops.is_some()),
            ] {
                if set {
                    let d = self
                        .warn(
                            "loki-rag-ignored",
                            format!("rag node field `{field}` is ignored by Switchyard (no rerankers or graph RAG)"),
                            n.id.span,
                        )
                        .node(n.id.value.clone())
                        .hint("retrieval is keyword (BM25) search, fused with vector search when `embedding_model` is set");
                    self.push(d);
                }
            }
            if let Some(dr) = &r.driver
                && RAG_DRIVERS.contains(&dr.value.as_str())
                && dr.value != "yaml"
            {
                let d = self
                    .warn(
                        "loki-rag-ignored",
                        format!("RAG driver '{}' is not supported by Switchyard: the node will fail when it runs", dr.value),
                        dr.span,
                    )
                    .node(n.id.value.clone())
                    .hint("remove `driver` (knowledge bases are YAML files beside the agent)");
                self.push(d);
            }
            if let (Some(size), Some(overlap)) = (r.chunk_size, r.chunk_overlap)
                && overlap >= size
            {
                let d = self
                    .warn(
                        "loki-rag",
                        format!("RAG node's `chunk_overlap` ({overlap}) is not smaller than its `chunk_size` ({size}); the node will fail when it runs"),
                        n.id.span,
                    )
                    .node(n.id.value.clone())
                    .hint("a twentieth of `chunk_size` is the usual overlap");
                self.push(d);
            }
            if let Some(dr) = &r.driver
                && !RAG_DRIVERS.contains(&dr.value.as_str())
            {
                {
                    let hint = match did_you_mean(&dr.value, RAG_DRIVERS.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => "remove `driver` for the default (yaml)".into(),
                    };
                    let d = self
                        .err(
                            "loki-rag",
                            format!(
                                "Unknown RAG driver '{}'. Valid drivers: yaml, duckdb, qdrant.",
                                dr.value
                            ),
                            dr.span,
                        )
                        .node(n.id.value.clone())
                        .hint(hint);
                    self.push(d);
                }
            }
        }
    }
}
