//! Embeddings over HTTP: `POST {base}/embeddings` of the provider named before the `:` of a
//! node's `embedding_model` (OpenAI wire, endpoints and keys from [`LlmConfig`]), in batches,
//! classified errors, transient ones retried twice, stop and deadline through
//! `rt::block_on_until`.

use super::DEFAULT_BATCH_SIZE;
use super::spec::{Ctl, Spec, stopped_msg};
use connect::llm::config::{Endpoint, LlmConfig, Wire};
use connect::llm::http;
use connect::rt::{self, Interrupted};
use runtime::provider::{ErrorKind, ModelRef, ProviderError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Where a node's embeddings come from.
pub(super) struct Embedder {
    pub(super) model: ModelRef,
    ep: Endpoint,
    batch: usize,
}

impl Embedder {
    /// The embedder of a node, or `None` (keyword retrieval only) with a warning when its
    /// provider is not set up; `config` (endpoints and keys) is asked for only when the node
    /// names a model.
    pub(super) fn of_node(
        spec: &Spec,
        config: impl FnOnce() -> Result<Arc<LlmConfig>, String>,
        ctl: &Ctl<'_>,
    ) -> Result<Option<Embedder>, String> {
        let Some(text) = &spec.embedding_model else { return Ok(None) };
        let model = ModelRef::parse(text);
        if model.provider.is_empty() || model.name.is_empty() {
            return Err(format!(
                "rag node '{}': `embedding_model: {text}` is not `provider:name` (e.g. openai:text-embedding-3-small)",
                spec.node
            ));
        }
        let config = config()?;
        let unavailable = |why: String| {
            (ctl.log)(format!(
                "warning: embedding model `{model}` is unavailable ({why}); retrieving by keyword (BM25) only"
            ));
            tracing::warn!("rag node '{}': embedding model `{model}` unavailable: {why}", spec.node);
            Ok(None)
        };
        let ep = match config.check(&model) {
            Ok(ep) => ep,
            Err(e) => return unavailable(e.lines().next().unwrap_or("").to_string()),
        };
        if ep.wire != Wire::Openai {
            return unavailable(format!(
                "provider `{}` speaks the Anthropic wire, which has no embeddings endpoint",
                ep.provider
            ));
        }
        let batch = spec.batch_size.map(|b| b.clamp(1, 2048) as usize).unwrap_or(DEFAULT_BATCH_SIZE);
        Ok(Some(Embedder { model, ep, batch }))
    }

    /// Vectors for `texts`, in order, through `POST {base}/embeddings`.
    pub(super) fn embed(&self, id: &str, texts: &[String], ctl: &Ctl<'_>) -> Result<Vec<Vec<f32>>, String> {
        if !ctl.network {
            return Err(format!(
                "rag node '{id}': {}",
                runtime::provider::offline_error(&format!("the embedding model `{}:{}`", self.model.provider, self.model.name), &self.ep.base_url)
            ));
        }
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch.max(1)) {
            out.extend(self.embed_batch(id, batch, ctl)?);
        }
        Ok(out)
    }

    fn embed_batch(&self, id: &str, texts: &[String], ctl: &Ctl<'_>) -> Result<Vec<Vec<f32>>, String> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.call(id, texts, ctl) {
                Ok(v) => return Ok(v),
                Err(CallErr::Provider(e)) if e.kind.transient() && attempt < 3 => {
                    let wait = e.retry_after.unwrap_or(Duration::from_secs(1)).min(Duration::from_secs(30));
                    let until = Instant::now() + wait;
                    if until >= ctl.deadline {
                        return Err(self.describe(id, &e));
                    }
                    while Instant::now() < until {
                        if ctl.stop.load(Ordering::Relaxed) {
                            return Err(stopped_msg(id, "waiting to retry an embeddings request"));
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                Err(CallErr::Provider(e)) => return Err(self.describe(id, &e)),
                Err(CallErr::Other(m)) => return Err(m),
            }
        }
    }

    fn describe(&self, id: &str, e: &ProviderError) -> String {
        let kind = serde_json::to_value(e.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let hint = e.hint.as_ref().map(|h| format!("\nhint: {h}")).unwrap_or_default();
        format!("rag node '{id}': embeddings from `{}` failed ({kind}): {}{hint}", self.model, e.message)
    }

    fn call(&self, id: &str, texts: &[String], ctl: &Ctl<'_>) -> Result<Vec<Vec<f32>>, CallErr> {
        let mut headers = Vec::new();
        if let Some(k) = self.ep.api_key.as_ref().filter(|k| !k.is_empty()) {
            headers.push(("authorization", format!("Bearer {k}")));
        }
        let body = json!({"model": self.model.name, "input": texts, "encoding_format": "float"});
        let url = format!("{}/embeddings", self.ep.base_url);
        let ep = self.ep.clone();
        let fut = async move { http::post_json(&ep, url, headers, body).await };
        let v = match rt::block_on_until(fut, Some(ctl.stop), Some(ctl.deadline)) {
            Ok(r) => r.map_err(CallErr::Provider)?,
            Err(Interrupted::Stopped) => return Err(CallErr::Other(stopped_msg(id, "embedding"))),
            Err(Interrupted::TimedOut) => return Err(CallErr::Other(ctl.timed_out(id))),
        };
        parse_embeddings(&v, texts.len()).map_err(|m| {
            CallErr::Provider(ProviderError::new(id, ErrorKind::Malformed, format!("{}: {m}", self.ep.provider)))
        })
    }
}

enum CallErr {
    Provider(ProviderError),
    Other(String),
}

/// The vectors of an OpenAI embeddings answer, in input order, all of one length.
fn parse_embeddings(v: &Value, n: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = v.get("data").and_then(Value::as_array).ok_or("the answer has no `data` list")?;
    if data.len() != n {
        return Err(format!("the answer has {} embeddings for {n} texts", data.len()));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for (pos, item) in data.iter().enumerate() {
        let i = item.get("index").and_then(Value::as_u64).map(|i| i as usize).unwrap_or(pos);
        let emb = item.get("embedding").and_then(Value::as_array).ok_or("an item has no `embedding` list")?;
        let vec: Option<Vec<f32>> = emb.iter().map(|x| x.as_f64().map(|f| f as f32)).collect();
        let vec = vec.filter(|v| !v.is_empty()).ok_or("an embedding is empty or not all numbers")?;
        match out.get_mut(i) {
            Some(slot @ None) => *slot = Some(vec),
            _ => return Err(format!("embedding index {i} is out of range or repeated")),
        }
    }
    let out: Vec<Vec<f32>> = out.into_iter().map(|v| v.unwrap_or_default()).collect();
    let dims = out.first().map(Vec::len).unwrap_or(0);
    if out.iter().any(|v| v.len() != dims) {
        return Err("the embeddings differ in length".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_answers_are_checked() {
        let v = json!({"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]});
        assert_eq!(parse_embeddings(&v, 2).unwrap(), vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert!(parse_embeddings(&v, 3).unwrap_err().contains("2 embeddings for 3"));
        let bad = json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]});
        assert!(parse_embeddings(&bad, 2).is_err());
        assert!(parse_embeddings(&json!({"error": "x"}), 1).is_err());
    }
}
