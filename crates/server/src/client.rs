//! The CLI as a client of a server: list its runs, answer one (`switchyard runs --server`,
//! `switchyard answer --server`). Plain HTTP on the shared I/O runtime (`connect::rt`).

use serde_json::{Value, json};
use std::time::Duration;

/// A server at `base` (`http://host:port`), with a token when it needs one.
pub struct Client {
    base: String,
    token: Option<String>,
}

impl Client {
    pub fn new(base: &str, token: Option<String>) -> Result<Client, String> {
        let base = base.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(format!("--server takes an http:// or https:// URL, not `{base}`"));
        }
        Ok(Client { base, token: token.filter(|t| !t.is_empty()) })
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let (token, method) = (self.token.clone(), method.to_string());
        let shown = url.clone();
        connect::rt::block_on(async move {
            let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().map_err(|e| e.to_string())?;
            let mut r = c.request(method.parse().map_err(|_| "bad method".to_string())?, &url);
            if let Some(t) = token {
                r = r.bearer_auth(t);
            }
            if let Some(b) = body {
                r = r.json(&b);
            }
            let resp = r.send().await.map_err(|e| format!("cannot reach {url}: {e}"))?;
            let status = resp.status();
            let text = resp.text().await.map_err(|e| format!("{url}: {e}"))?;
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
            if status.is_success() {
                return Ok(v);
            }
            let detail = v["detail"].as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
            Err(match status.as_u16() {
                401 => format!("{detail} (pass --token or set SWITCHYARD_TOKEN)"),
                _ => format!("{} {detail}", status.as_u16()),
            })
        })
        .map_err(|e: String| format!("{shown}: {e}"))
    }

    /// The server's runs, newest first (`status`: only those).
    pub fn runs(&self, status: Option<&str>) -> Result<Vec<Value>, String> {
        let path = match status {
            Some(s) => format!("/switchyard/runs?status={s}"),
            None => "/switchyard/runs".into(),
        };
        match self.call("GET", &path, None)? {
            Value::Array(a) => Ok(a),
            other => Err(format!("unexpected answer from {}: {other}", self.base)),
        }
    }

    /// Answer run `run`'s question; the answer is JSON when it parses as an object or list.
    pub fn answer(&self, run: &str, answer: Value, by: Option<&str>) -> Result<Value, String> {
        let mut body = json!({ "answer": answer });
        if let Some(b) = by {
            body["by"] = json!(b);
        }
        self.call("POST", &format!("/switchyard/runs/{run}/answer"), Some(body))
    }
}
