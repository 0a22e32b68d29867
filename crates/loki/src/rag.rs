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
//! - **Knowledge base file**: `<agent_dir>/<node_id>.yaml` (YAML: build settings, documents with
//!   their SHA-256, size and modification time, chunks with their embedding vectors as base64
//!   little-endian `f32`). It is reused while the documents and settings stay the same; a
//!   changed document is re-read and re-chunked (the others keep their chunks and vectors);
//!   changed settings rebuild everything. URLs are fetched when first added and kept until the
//!   settings change or the file is deleted. Written atomically; a corrupt file is rebuilt with
//!   a warning.
//! - **Embeddings**: `POST {base}/embeddings` of the provider named before the `:` (OpenAI
//!   wire, endpoints and keys from [`LlmConfig`]), in batches of `batch_size` (default 100),
//!   classified errors, transient ones retried twice. A model whose provider is not set up
//!   (no key, unknown provider, Anthropic wire) falls back to keyword retrieval with a warning.
//! - **Output**: `{context, sources}`: `context` is the hits joined by a blank line, each as
//!   `[Source: <source>]\n<chunk>`; `sources` the hits' sources without repeats, in rank order.

use model::doc::loki::RagNode;
use connect::llm::config::{Endpoint, LlmConfig, Wire};
use connect::llm::http;
use connect::rt::{self, Interrupted};
use runtime::provider::{ErrorKind, ModelRef, ProviderError};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

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
/// Version of the knowledge-base file format.
const FORMAT: u32 = 1;
/// Reciprocal-rank fusion constant and weights (vector, keyword), as upstream.
const RRF_K: f64 = 60.0;
const RRF_WEIGHTS: (f64, f64) = (1.125, 1.0);

// ---------------------------------------------------------------------------------------------
// What a node asks for
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------------------------

/// One document after resolving the node's `documents`.
#[derive(Clone, Debug, PartialEq)]
enum Origin {
    File { path: PathBuf, size: u64, mtime_ns: Option<u64>, listed: bool },
    Url(String),
}

#[derive(Clone, Debug, PartialEq)]
struct Resolved {
    /// How sources are shown: the document as written, or `<dir as written>/<path inside>`.
    source: String,
    origin: Origin,
}

impl Resolved {
    fn location(&self) -> String {
        match &self.origin {
            Origin::File { path, .. } => path.display().to_string(),
            Origin::Url(u) => u.clone(),
        }
    }
}

fn is_url(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.starts_with("http://") || l.starts_with("https://")
}

/// `name:rest` where `name` is a Loki document-loader name (not a URL, not a drive letter).
fn loader_protocol(s: &str) -> Option<&str> {
    let (name, rest) = s.split_once(':')?;
    let ok = name.len() >= 2
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !rest.starts_with("//");
    ok.then_some(name)
}

/// Extensions of files that are never text (skipped in directories).
const BINARY_EXT: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tif", "tiff", "psd", "pdf", "zip", "gz", "tgz", "bz2", "xz",
    "zst", "7z", "rar", "tar", "jar", "war", "class", "so", "dylib", "dll", "exe", "bin", "o", "a", "lib", "wasm",
    "pyc", "pyo", "mp3", "mp4", "m4a", "wav", "ogg", "flac", "mov", "avi", "mkv", "webm", "ttf", "otf", "woff",
    "woff2", "eot", "sqlite", "db", "parquet", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "dmg", "iso",
    "npy", "pkl",
];

fn ext_of(p: &str) -> String {
    Path::new(p).extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default()
}

fn mtime_ns(m: &std::fs::Metadata) -> Option<u64> {
    m.modified().ok()?.duration_since(UNIX_EPOCH).ok().map(|d| d.as_nanos().min(u64::MAX as u128) as u64)
}

/// The node's documents as files and URLs, without reading or fetching anything. Every local
/// document is checked before any URL is touched.
fn resolve(spec: &Spec, warn: &dyn Fn(String)) -> Result<Vec<Resolved>, String> {
    let id = &spec.node;
    if spec.documents.is_empty() {
        return Err(format!("rag node '{id}' has no `documents`; list files, directories or URLs"));
    }
    let mut out: Vec<Resolved> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut push = |r: Resolved, out: &mut Vec<Resolved>| {
        if seen.insert(r.location()) {
            out.push(r);
        }
    };
    for raw in &spec.documents {
        let d = raw.trim();
        if d.is_empty() {
            return Err(format!("rag node '{id}': `documents` has an empty entry"));
        }
        if is_url(d) {
            if d.ends_with("**") {
                return Err(format!(
                    "rag node '{id}': document '{d}' asks for a recursive crawl (`**`), which Switchyard does not do; list the pages to index one by one"
                ));
            }
            push(Resolved { source: d.to_string(), origin: Origin::Url(d.to_string()) }, &mut out);
            continue;
        }
        if let Some((scheme, _)) = d.split_once("://") {
            return Err(format!(
                "rag node '{id}': document '{d}' uses the `{scheme}://` scheme; only files, directories and http(s) URLs are supported"
            ));
        }
        if let Some(loader) = loader_protocol(d) {
            return Err(format!(
                "rag node '{id}': document '{d}' names Loki's `{loader}` document loader, which Switchyard does not run; \
                 convert the document to text (Markdown, plain text, HTML) and list that file instead"
            ));
        }
        if d.contains(['*', '?']) {
            return Err(format!(
                "rag node '{id}': document '{d}' is a glob pattern, which Switchyard does not expand; list the directory (all its text files are indexed) or the files"
            ));
        }
        let path = clean(&match d.strip_prefix("~/") {
            Some(rest) => match std::env::var_os("HOME") {
                Some(h) => PathBuf::from(h).join(rest),
                None => spec.agent_dir.join(d),
            },
            None => spec.agent_dir.join(d),
        });
        let meta = std::fs::metadata(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "rag node '{id}': document '{d}' not found (looked for {}). Create it, fix the path (relative paths resolve against the agent directory {}), or remove it from `documents`",
                    path.display(),
                    spec.agent_dir.display()
                )
            } else {
                format!("rag node '{id}': document '{d}' cannot be read ({}): {e}", path.display())
            }
        })?;
        if meta.is_dir() {
            let before = out.len();
            let mut files = Vec::new();
            walk(&path, Path::new(""), 0, &mut files, &spec.skip_files);
            if files.len() > MAX_FILES {
                return Err(format!(
                    "rag node '{id}': directory '{d}' holds more than {MAX_FILES} files; point `documents` at a smaller folder"
                ));
            }
            let prefix = d.trim_end_matches(['/', '\\']);
            for (rel, p, m) in files {
                let source = if prefix.is_empty() { rel.clone() } else { format!("{prefix}/{rel}") };
                push(
                    Resolved {
                        source,
                        origin: Origin::File { path: p, size: m.len(), mtime_ns: mtime_ns(&m), listed: false },
                    },
                    &mut out,
                );
            }
            if out.len() == before {
                warn(format!("document '{d}' is a directory with no text files"));
            }
        } else {
            push(
                Resolved {
                    source: d.to_string(),
                    origin: Origin::File { path, size: meta.len(), mtime_ns: mtime_ns(&meta), listed: true },
                },
                &mut out,
            );
        }
        if out.len() > MAX_FILES {
            return Err(format!("rag node '{id}': the documents expand to more than {MAX_FILES} files"));
        }
    }
    // Local documents were all checked above; URLs are fetched later, only when needed.
    Ok(out)
}

/// `path` without `.` components and with `..` applied to what precedes it (no file-system
/// access), so one file has one location however it is named.
fn clean(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Text-file candidates under `dir` (sorted, hidden entries and symlinked folders skipped):
/// (path inside with `/`, path, metadata).
fn walk(dir: &Path, rel: &Path, depth: usize, out: &mut Vec<(String, PathBuf, std::fs::Metadata)>, skip: &[PathBuf]) {
    if depth > 32 || out.len() > MAX_FILES {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.ends_with(".switchyard.json") {
            continue;
        }
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        let r = rel.join(&name);
        if ft.is_dir() {
            walk(&path, &r, depth + 1, out, skip);
            continue;
        }
        // Symlinks to files are followed; symlinks to folders are not (no cycles).
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if !meta.is_file() || BINARY_EXT.contains(&ext_of(&name).as_str()) || skip.iter().any(|s| s == &path) {
            continue;
        }
        let shown = r.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/");
        out.push((shown, path, meta));
    }
}

/// A document's text: HTML without its markup, line ends normalised.
fn to_text(bytes: &[u8], html: bool) -> String {
    let s = String::from_utf8_lossy(bytes).replace("\r\n", "\n");
    if html { html_to_text(&s) } else { s }
}

/// Whether `bytes` look like text: no NUL in the first 8 KiB, valid UTF-8.
fn looks_textual(bytes: &[u8]) -> bool {
    !bytes[..bytes.len().min(8192)].contains(&0) && std::str::from_utf8(bytes).is_ok()
}

/// Read a local document: `Ok(None)` for a file found in a directory that turns out not to be
/// text (skipped), an error for a listed one.
fn read_file(id: &str, r: &Resolved, path: &Path, listed: bool) -> Result<Option<(Vec<u8>, String)>, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("rag node '{id}': document '{}' cannot be read: {e}", r.source))?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        if listed {
            return Err(format!(
                "rag node '{id}': document '{}' is larger than {} MiB; split it or list smaller files",
                r.source,
                MAX_DOCUMENT_BYTES >> 20
            ));
        }
        return Ok(None);
    }
    if !looks_textual(&bytes) {
        if listed {
            return Err(format!(
                "rag node '{id}': document '{}' is not a text file (binary or not UTF-8); convert it to text (PDF and Office files need Loki's document loaders, which Switchyard does not run)",
                r.source
            ));
        }
        return Ok(None);
    }
    let ext = ext_of(&r.source);
    let text = to_text(&bytes, ext == "html" || ext == "htm" || ext == "xhtml");
    Ok(Some((bytes, text)))
}

/// Fetch a URL document (time and size limited) and turn it into text.
fn fetch_url(id: &str, url: &str, ctl: &Ctl<'_>) -> Result<(Vec<u8>, String), String> {
    let fail = |what: String| {
        format!(
            "rag node '{id}': document '{url}' could not be fetched: {what}. Check the URL and the network, or remove it from `documents`"
        )
    };
    let u = url.to_string();
    let fut = async move {
        let resp = http::client().get(&u).timeout(URL_TIMEOUT).send().await.map_err(|e| root_cause(&e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("HTTP {} {}", status.as_u16(), status.canonical_reason().unwrap_or("")));
        }
        let ctype = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let mut body = Vec::new();
        let mut resp = resp;
        while let Some(chunk) = resp.chunk().await.map_err(|e| root_cause(&e))? {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > MAX_DOCUMENT_BYTES {
                return Err(format!("the page is larger than {} MiB", MAX_DOCUMENT_BYTES >> 20));
            }
        }
        Ok((ctype, body))
    };
    let deadline = ctl.deadline.min(Instant::now() + URL_TIMEOUT + Duration::from_secs(1));
    let (ctype, body) = match rt::block_on_until(fut, Some(ctl.stop), Some(deadline)) {
        Ok(r) => r.map_err(fail)?,
        Err(Interrupted::Stopped) => return Err(stopped_msg(id, "fetching a document")),
        Err(Interrupted::TimedOut) if deadline >= ctl.deadline => return Err(ctl.timed_out(id)),
        Err(Interrupted::TimedOut) => {
            return Err(fail(format!("no complete answer within {} s", URL_TIMEOUT.as_secs())));
        }
    };
    let textual_type = ctype.is_empty()
        || ctype.starts_with("text/")
        || ["json", "xml", "yaml", "javascript", "markdown", "csv"].iter().any(|t| ctype.contains(t));
    if !textual_type || body[..body.len().min(8192)].contains(&0) {
        return Err(format!(
            "rag node '{id}': document '{url}' is not a text document (content type `{ctype}`); list text, Markdown or HTML pages only"
        ));
    }
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let html =
        ctype.contains("html") || (ctype.is_empty() && (head.contains("<html") || head.contains("<!doctype html")));
    let text = to_text(&body, html);
    Ok((body, text))
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    let inner = cur.to_string();
    let outer = e.to_string();
    if inner == outer { outer } else { format!("{outer}: {inner}") }
}

fn stopped_msg(id: &str, what: &str) -> String {
    format!("rag node '{id}': the run was stopped while {what}; the request was cancelled")
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// HTML to text
// ---------------------------------------------------------------------------------------------

/// Tags whose content is not text.
const SKIP_TAGS: &[&str] = &["script", "style", "noscript", "template", "svg"];
/// Tags that break lines.
const BLOCK_TAGS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "pre",
    "blockquote",
    "hr",
    "dt",
    "dd",
    "dl",
    "figure",
    "figcaption",
    "title",
    "body",
    "html",
    "form",
    "details",
    "summary",
];

/// The text of an HTML page: markup, scripts, styles and comments removed, block elements on
/// their own lines, entities decoded, runs of blank space collapsed. The `<title>` is kept.
pub fn html_to_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let b = html.as_bytes();
    let mut out = String::with_capacity(html.len() / 2);
    let mut title = String::new();
    let mut i = 0;
    let mut text_start = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        if lower[i..].starts_with("<!--") {
            out.push_str(&decode_entities(&html[text_start..i]));
            i = lower[i + 4..].find("-->").map(|j| i + 4 + j + 3).unwrap_or(b.len());
            text_start = i;
            continue;
        }
        // The tag's name.
        let mut j = i + 1;
        let closing = j < b.len() && b[j] == b'/';
        if closing {
            j += 1;
        }
        let name_start = j;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-') {
            j += 1;
        }
        let name = &lower[name_start..j];
        if name.is_empty() && !closing && !lower[i..].starts_with("<!") && !lower[i..].starts_with("<?") {
            // A lone `<` (as in `a < b`): text.
            i += 1;
            continue;
        }
        out.push_str(&decode_entities(&html[text_start..i]));
        let end = tag_end(b, j);
        if !closing && name == "title" {
            let close = lower[end..].find("</title").map(|k| end + k).unwrap_or(b.len());
            title = decode_entities(&html[end..close]).split_whitespace().collect::<Vec<_>>().join(" ");
            i = close;
            text_start = i;
            continue;
        }
        if !closing && SKIP_TAGS.contains(&name) && !html[i..end].ends_with("/>") {
            let pat = format!("</{name}");
            i = match lower[end..].find(&pat) {
                Some(k) => tag_end(b, end + k + pat.len()),
                None => b.len(),
            };
            text_start = i;
            continue;
        }
        if BLOCK_TAGS.contains(&name) {
            out.push('\n');
        } else if name == "td" || name == "th" {
            out.push(' ');
        }
        i = end;
        text_start = i;
    }
    if text_start < b.len() {
        out.push_str(&decode_entities(&html[text_start..]));
    }
    // Collapse spaces within lines and blank lines between them.
    let mut lines: Vec<String> = Vec::new();
    let mut blank = false;
    for l in out.lines() {
        let l = l.split_whitespace().collect::<Vec<_>>().join(" ");
        if l.is_empty() {
            blank = !lines.is_empty();
            continue;
        }
        if blank {
            lines.push(String::new());
            blank = false;
        }
        lines.push(l);
    }
    let body = lines.join("\n");
    if title.is_empty() || body.starts_with(&title) { body } else { format!("{title}\n\n{body}") }
}

/// The index after the `>` closing the tag whose name ends at `j` (quotes respected).
fn tag_end(b: &[u8], mut j: usize) -> usize {
    let mut quote = None;
    while j < b.len() {
        match (quote, b[j]) {
            (None, b'>') => return j + 1,
            (None, q @ (b'"' | b'\'')) => quote = Some(q),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
        j += 1;
    }
    b.len()
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        let semi = after.find(';').filter(|&k| k <= 10);
        let decoded = semi.and_then(|k| {
            let name = &after[..k];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "nbsp" => Some(' '),
                "mdash" => Some('—'),
                "ndash" => Some('–'),
                "hellip" => Some('…'),
                "copy" => Some('©'),
                _ => {
                    let n = name.strip_prefix('#')?;
                    let v = match n.strip_prefix(['x', 'X']) {
                        Some(h) => u32::from_str_radix(h, 16).ok()?,
                        None => n.parse().ok()?,
                    };
                    char::from_u32(v)
                }
            }?;
            Some((c, k))
        });
        match decoded {
            Some((c, k)) => {
                out.push(c);
                rest = &after[k + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------------------------
// Chunking
// ---------------------------------------------------------------------------------------------

/// Separators tried in order (upstream's recursive splitter, with sentence and clause ends).
const SEPARATORS: &[&str] = &["\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " "];
const MARKDOWN_SEPARATORS: &[&str] =
    &["\n# ", "\n## ", "\n### ", "\n#### ", "\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " "];

fn separators_for(source: &str) -> &'static [&'static str] {
    match ext_of(source.split(['?', '#']).next().unwrap_or(source)).as_str() {
        "md" | "markdown" | "mdx" | "mkd" => MARKDOWN_SEPARATORS,
        _ => SEPARATORS,
    }
}

fn clen(s: &str) -> usize {
    s.chars().count()
}

/// Split `text` into chunks of at most `size` characters with up to `overlap` characters of
/// the previous chunk repeated, cutting at the first separator of `seps` that occurs (then the
/// next ones inside pieces still too long, then anywhere). Chunks are trimmed; empty ones are
/// dropped.
pub fn split_text(text: &str, size: usize, overlap: usize, seps: &[&str]) -> Vec<String> {
    let size = size.max(1);
    let mut pieces = Vec::new();
    pieces_of(text, size, seps, &mut pieces);
    merge(&pieces, size, overlap.min(size.saturating_sub(1)))
}

/// Pieces of at most `size` characters whose concatenation is `text`.
fn pieces_of<'t>(text: &'t str, size: usize, seps: &[&str], out: &mut Vec<&'t str>) {
    if clen(text) <= size {
        if !text.is_empty() {
            out.push(text);
        }
        return;
    }
    let Some(k) = seps.iter().position(|s| text.contains(s)) else {
        // No separator left: cut every `size` characters.
        let mut start = 0;
        let mut n = 0;
        for (i, _) in text.char_indices() {
            if n == size {
                out.push(&text[start..i]);
                start = i;
                n = 0;
            }
            n += 1;
        }
        out.push(&text[start..]);
        return;
    };
    let sep = seps[k];
    let rest = &seps[k + 1..];
    // Line-level separators start the next piece (a heading stays with its section); the
    // others end the previous one (a sentence keeps its full stop).
    let lead = sep.starts_with('\n');
    let mut start = 0;
    let mut search = 0;
    while let Some(p) = text[search..].find(sep) {
        let at = search + p;
        let cut = if lead { at } else { at + sep.len() };
        if cut > start {
            pieces_of(&text[start..cut], size, rest, out);
            start = cut;
        }
        search = at + sep.len();
    }
    if start < text.len() {
        pieces_of(&text[start..], size, rest, out);
    }
}

/// Greedy merge of pieces into chunks, carrying trailing pieces worth at most `overlap`
/// characters into the next chunk. A piece's trailing blank space does not count when it ends
/// a chunk (it is trimmed away).
fn merge(pieces: &[&str], size: usize, overlap: usize) -> Vec<String> {
    // (piece, characters, characters without trailing blank space)
    let mut cur: std::collections::VecDeque<(&str, usize, usize)> = Default::default();
    let mut chunks: Vec<String> = Vec::new();
    let mut total = 0;
    let effective = |cur: &std::collections::VecDeque<(&str, usize, usize)>, total: usize| {
        cur.back().map(|(_, n, t)| total - (n - t)).unwrap_or(0)
    };
    let flush = |cur: &std::collections::VecDeque<(&str, usize, usize)>, chunks: &mut Vec<String>| {
        let s: String = cur.iter().map(|(p, _, _)| *p).collect();
        let t = s.trim();
        if !t.is_empty() && chunks.last().map(String::as_str) != Some(t) {
            chunks.push(t.to_string());
        }
    };
    for p in pieces {
        let n = clen(p);
        let trimmed = clen(p.trim_end());
        if total + trimmed > size && !cur.is_empty() {
            flush(&cur, &mut chunks);
            while !cur.is_empty() && (effective(&cur, total) > overlap || total + trimmed > size) {
                if let Some((_, m, _)) = cur.pop_front() {
                    total -= m;
                }
            }
        }
        cur.push_back((p, n, trimmed));
        total += n;
    }
    flush(&cur, &mut chunks);
    chunks
}

// ---------------------------------------------------------------------------------------------
// Keyword index (BM25)
// ---------------------------------------------------------------------------------------------

/// English stop words (not indexed, not searched).
const STOPWORDS: &str = "a about above after again against all am an and any are as at be because been before being below \
     between both but by can could did do does doing down during each few for from further had has have \
     having he her here hers herself him himself his how i if in into is it its itself just me more most \
     my myself no nor not now of off on once only or other our ours ourselves out over own same she \
     should so some such than that the their theirs them themselves then there these they this those \
     through to too under until up very was we were what when where which while who whom why will with \
     would you your yours yourself yourselves";

fn is_stopword(w: &str) -> bool {
    static SET: std::sync::OnceLock<HashSet<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOPWORDS.split_whitespace().collect()).contains(w)
}

/// Search terms of a text: lower-case words and numbers, stop words dropped, plural endings
/// folded (`batteries` → `battery`, `boxes` → `box`, `cats` → `cat`).
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !is_stopword(w))
        .map(|w| stem(&w))
        .collect()
}

fn stem(w: &str) -> String {
    let n = w.chars().count();
    if n <= 3 || !w.is_ascii() {
        return w.to_string();
    }
    if let Some(s) = w.strip_suffix("ies")
        && n > 4
    {
        return format!("{s}y");
    }
    for suf in ["sses", "shes", "ches", "xes", "zes"] {
        if let Some(s) = w.strip_suffix(suf) {
            return format!("{s}{}", &suf[..suf.len() - 2]);
        }
    }
    if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        return w[..w.len() - 1].to_string();
    }
    w.to_string()
}

/// Okapi BM25 over the chunks (k1 = 1.5, b = 0.75, upstream's values).
#[derive(Clone, Debug, Default)]
pub struct Bm25 {
    postings: HashMap<String, Vec<(u32, u32)>>,
    lens: Vec<u32>,
    avg: f64,
}

impl Bm25 {
    const K1: f64 = 1.5;
    const B: f64 = 0.75;

    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Bm25 {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lens = Vec::new();
        for (i, t) in texts.into_iter().enumerate() {
            let toks = tokenize(t);
            lens.push(toks.len() as u32);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for tok in toks {
                *tf.entry(tok).or_insert(0) += 1;
            }
            for (tok, n) in tf {
                postings.entry(tok).or_default().push((i as u32, n));
            }
        }
        let avg = if lens.is_empty() { 0.0 } else { lens.iter().map(|&l| l as f64).sum::<f64>() / lens.len() as f64 };
        Bm25 { postings, lens, avg }
    }

    /// Chunks matching at least one query term, best first (ties: earlier chunk first).
    pub fn search(&self, query: &str) -> Vec<(usize, f64)> {
        let n = self.lens.len() as f64;
        let mut terms = tokenize(query);
        terms.sort();
        terms.dedup();
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for t in &terms {
            let Some(list) = self.postings.get(t) else { continue };
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(d, tf) in list {
                let tf = tf as f64;
                let len = self.lens[d as usize] as f64;
                let norm = if self.avg > 0.0 { len / self.avg } else { 1.0 };
                let s = idf * tf * (Self::K1 + 1.0) / (tf + Self::K1 * (1.0 - Self::B + Self::B * norm));
                *scores.entry(d).or_insert(0.0) += s;
            }
        }
        let mut out: Vec<(usize, f64)> =
            scores.into_iter().filter(|(_, s)| *s > 0.0).map(|(d, s)| (d as usize, s)).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Embeddings
// ---------------------------------------------------------------------------------------------

/// Where a node's embeddings come from.
struct Embedder {
    model: ModelRef,
    ep: Endpoint,
    batch: usize,
}

impl Embedder {
    /// Vectors for `texts`, in order, through `POST {base}/embeddings`.
    fn embed(&self, id: &str, texts: &[String], ctl: &Ctl<'_>) -> Result<Vec<Vec<f32>>, String> {
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

fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| (*x as f64) * (*x as f64)).sum::<f64>().sqrt();
    if n > 0.0 && n.is_finite() {
        for x in &mut v {
            *x = (*x as f64 / n) as f32;
        }
    }
    v
}

fn encode_vector(v: &[f32]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decode_vector(s: &str) -> Option<Vec<f32>> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s.trim()).ok()?;
    if bytes.is_empty() || bytes.len() % 4 != 0 {
        return None;
    }
    Some(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
}

// ---------------------------------------------------------------------------------------------
// The knowledge base
// ---------------------------------------------------------------------------------------------

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
    fn new(file: KbFile, path: PathBuf) -> Result<Kb, String> {
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
    fn same_documents(&self, docs: &[Resolved]) -> bool {
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
        let mut fused: BTreeMap<usize, f64> = BTreeMap::new();
        for (rank, (i, _)) in by_vec.iter().take(top_k).enumerate() {
            *fused.entry(*i).or_insert(0.0) += RRF_WEIGHTS.0 / (RRF_K + rank as f64 + 1.0);
        }
        for (rank, (i, _)) in keyword.iter().take(top_k).enumerate() {
            *fused.entry(*i).or_insert(0.0) += RRF_WEIGHTS.1 / (RRF_K + rank as f64 + 1.0);
        }
        let mut ranked: Vec<(usize, f64)> = fused.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.into_iter().take(top_k).map(|(i, s)| hit(i, s, cos.get(&i).copied())).collect()
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

/// Limits of one retrieval and where its log lines go.
pub struct Ctl<'a> {
    pub stop: &'a AtomicBool,
    /// Build and retrieval end by then.
    pub deadline: Instant,
    /// The node's `timeout` (for messages).
    pub timeout: Duration,
    /// Warnings and progress for the run log.
    pub log: &'a (dyn Fn(String) + Sync),
}

impl Ctl<'_> {
    fn timed_out(&self, id: &str) -> String {
        format!(
            "rag node '{id}' timed out after {}s (building the knowledge base and retrieving)",
            self.timeout.as_secs()
        )
    }
    fn check(&self, id: &str) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(stopped_msg(id, "building the knowledge base"));
        }
        if Instant::now() >= self.deadline {
            return Err(self.timed_out(id));
        }
        Ok(())
    }
}

/// One node's knowledge base, once loaded (locked while it is built).
type Slot = Arc<Mutex<Option<Arc<Kb>>>>;

/// The knowledge bases of one run (shared by its forks and parallel branches): loaded once,
/// re-checked against the documents on every retrieval, built by one branch at a time.
#[derive(Default)]
pub struct RagStore {
    config: Mutex<Option<Arc<LlmConfig>>>,
    slots: Mutex<BTreeMap<String, Slot>>,
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
        RagStore { config: Mutex::new(config), slots: Mutex::default() }
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

    /// The embedder of a node, or `None` (keyword retrieval only) with a warning when its
    /// provider is not set up.
    fn embedder(&self, spec: &Spec, ctl: &Ctl<'_>) -> Result<Option<Embedder>, String> {
        let Some(text) = &spec.embedding_model else { return Ok(None) };
        let model = ModelRef::parse(text);
        if model.provider.is_empty() || model.name.is_empty() {
            return Err(format!(
                "rag node '{}': `embedding_model: {text}` is not `provider:name` (e.g. openai:text-embedding-3-small)",
                spec.node
            ));
        }
        let config = self.config()?;
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

    /// Retrieve the best chunks for `query`, building or updating the node's knowledge base
    /// first when its documents or settings changed.
    pub fn retrieve(&self, spec: &Spec, query: &str, ctl: &Ctl<'_>) -> Result<Retrieval, String> {
        let id = spec.node.as_str();
        if let Some(d) = spec.driver.as_deref().filter(|d| !d.eq_ignore_ascii_case("yaml")) {
            return Err(format!(
                "rag node '{id}': `driver: {d}` is not supported by Switchyard (knowledge bases are kept in YAML beside the agent); remove `driver` or set it to `yaml`"
            ));
        }
        let path = spec.kb_path()?;
        let params = spec.params()?;
        let warn = |m: String| (ctl.log)(format!("warning: {m}"));
        let docs = resolve(spec, &warn)?;
        let embedder = self.embedder(spec, ctl)?;
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
        let old = match std::fs::read_to_string(path) {
            Ok(text) => match serde_yaml::from_str::<KbFile>(&text).map_err(|e| e.to_string()).and_then(|f| {
                if f.switchyard_rag != FORMAT {
                    Err(format!("format {} is not {FORMAT}", f.switchyard_rag))
                } else {
                    Kb::new(f, path.to_path_buf())
                }
            }) {
                Ok(kb) => Some(kb),
                Err(e) => {
                    (ctl.log)(format!("warning: knowledge base {} is unreadable ({e}); rebuilding it", path.display()));
                    tracing::warn!("rag node '{id}': knowledge base {} unreadable: {e}", path.display());
                    None
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                (ctl.log)(format!("warning: knowledge base {} cannot be read ({e}); rebuilding it", path.display()));
                None
            }
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

/// Write the knowledge base atomically (temp file, fsync, rename); a failure is a warning (the
/// run goes on with the knowledge base in memory).
fn save(path: &Path, file: &KbFile, ctl: &Ctl<'_>) {
    static N: AtomicU64 = AtomicU64::new(0);
    let result = (|| -> Result<(), String> {
        let yaml = serde_yaml::to_string(file).map_err(|e| e.to_string())?;
        let text = format!(
            "# Knowledge base of rag node '{}', written by Switchyard. It is rebuilt when the node's\n# documents or build settings change; delete it to force a fresh build.\n{yaml}",
            file.node
        );
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            e.to_string()
        })
    })();
    if let Err(e) = result {
        (ctl.log)(format!("warning: the knowledge base could not be saved to {}: {e}", path.display()));
        tracing::warn!("rag: cannot save {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_log() -> impl Fn(String) + Sync {
        |_m: String| {}
    }

    fn tmpdir(tag: &str) -> PathBuf {
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

    #[test]
    fn chunks_respect_size_and_cut_at_paragraphs_then_sentences() {
        let text = "First paragraph is short.\n\nSecond paragraph has two sentences. This is the second one.\n\nThird.";
        let chunks = split_text(text, 40, 0, SEPARATORS);
        assert!(chunks.iter().all(|c| clen(c) <= 40), "{chunks:?}");
        assert_eq!(chunks[0], "First paragraph is short.");
        assert!(chunks.contains(&"Second paragraph has two sentences.".to_string()), "{chunks:?}");
        assert!(chunks.contains(&"This is the second one.\n\nThird.".to_string()), "{chunks:?}");
        // Nothing lost: every word of the text is in some chunk.
        for w in text.split_whitespace() {
            assert!(chunks.iter().any(|c| c.contains(w)), "{w} missing from {chunks:?}");
        }
    }

    #[test]
    fn chunks_overlap_and_count_characters_not_bytes() {
        let chunks = split_text("foo bar baz 123", 7, 3, &[" "]);
        assert_eq!(chunks, ["foo bar", "bar baz", "baz 123"]);
        // Multi-byte characters count once.
        let text = "éééé éééé éééé";
        let chunks = split_text(text, 9, 0, &[" "]);
        assert_eq!(chunks, ["éééé éééé", "éééé"]);
        // No separator: hard cuts every `size` characters.
        assert_eq!(split_text("abcdefghij", 4, 0, &[" "]), ["abcd", "efgh", "ij"]);
        assert!(split_text("   \n\n  ", 10, 2, SEPARATORS).is_empty());
    }

    #[test]
    fn markdown_splits_at_headings() {
        let md = "# Title\n\nIntro text here.\n\n## Install\n\nRun the installer now.\n\n## Usage\n\nCall it.";
        let chunks = split_text(md, 45, 0, MARKDOWN_SEPARATORS);
        assert_eq!(chunks[0], "# Title\n\nIntro text here.");
        assert_eq!(chunks[1], "## Install\n\nRun the installer now.");
        assert_eq!(chunks[2], "## Usage\n\nCall it.");
    }

    #[test]
    fn tokens_drop_stopwords_and_fold_plurals() {
        assert_eq!(tokenize("The Batteries of the boxes, and cats!"), ["battery", "box", "cat"]);
        assert_eq!(tokenize("HTTP/2 is fast"), ["http", "2", "fast"]);
        assert_eq!(tokenize("class status bus"), ["class", "status", "bus"]);
    }

    #[test]
    fn bm25_ranks_the_document_about_the_query_first() {
        let texts = [
            "Volcanoes erupt molten lava and ash from the mantle.",
            "Photosynthesis turns sunlight, water and carbon dioxide into sugar in plant leaves.",
            "The stock market fell as interest rates rose.",
            "Lava flows cool into basalt; volcanoes build islands.",
        ];
        let idx = Bm25::new(texts.iter().copied());
        let r = idx.search("how do volcanoes form islands?");
        assert_eq!(r[0].0, 3, "{r:?}");
        assert_eq!(r[1].0, 0, "{r:?}");
        assert_eq!(r.len(), 2, "only chunks sharing a term are returned: {r:?}");
        assert_eq!(idx.search("leaves")[0].0, 1);
        assert!(idx.search("the of and").is_empty());
        // A rare term outweighs a common one.
        let idx = Bm25::new(["alpha beta", "alpha gamma", "alpha delta"]);
        assert_eq!(idx.search("alpha gamma")[0].0, 1);
    }

    #[test]
    fn html_becomes_text() {
        let html = "<!DOCTYPE html><html><head><title>Tea &amp; Co</title><style>p{color:red}</style><script>var x = '<p>';</script></head>\
                    <body><h1>Green&nbsp;tea</h1><p>Steep at 80&#176;C for <b>two</b> minutes.</p><!-- note --><ul><li>One</li><li>Two &lt;3</li></ul></body></html>";
        let t = html_to_text(html);
        assert_eq!(t, "Tea & Co\n\nGreen tea\n\nSteep at 80°C for two minutes.\n\nOne\n\nTwo <3");
        assert_eq!(html_to_text("a < b and c > d"), "a < b and c > d");
    }

    #[test]
    fn vectors_round_trip_through_base64() {
        let v = vec![0.25f32, -1.5, 3.0];
        assert_eq!(decode_vector(&encode_vector(&v)), Some(v));
        assert_eq!(decode_vector("not base64!"), None);
        assert_eq!(decode_vector("AAA="), None);
    }

    #[test]
    fn embeddings_answers_are_checked() {
        let v = json!({"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]});
        assert_eq!(parse_embeddings(&v, 2).unwrap(), vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert!(parse_embeddings(&v, 3).unwrap_err().contains("2 embeddings for 3"));
        let bad = json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]});
        assert!(parse_embeddings(&bad, 2).is_err());
        assert!(parse_embeddings(&json!({"error": "x"}), 1).is_err());
    }

    #[test]
    fn documents_that_cannot_be_indexed_are_refused_clearly() {
        let dir = tmpdir("refuse");
        let spec = |docs: &[&str]| Spec {
            node: "kb".into(),
            agent_dir: dir.clone(),
            documents: docs.iter().map(|d| d.to_string()).collect(),
            ..Spec::default()
        };
        let w = no_log();
        let e = resolve(&spec(&["./missing/"]), &w).unwrap_err();
        assert!(e.contains("rag node 'kb'") && e.contains("'./missing/' not found"), "{e}");
        assert!(resolve(&spec(&["pdf:manual.pdf"]), &w).unwrap_err().contains("`pdf` document loader"));
        assert!(resolve(&spec(&["docs/**/*.md"]), &w).unwrap_err().contains("glob"));
        assert!(resolve(&spec(&["https://example.com/**"]), &w).unwrap_err().contains("recursive crawl"));
        assert!(resolve(&spec(&["ftp://host/x"]), &w).unwrap_err().contains("`ftp://`"));
        // A missing local document is reported even when a URL comes first (nothing fetched).
        let e = resolve(&spec(&["https://example.com/a", "gone.md"]), &w).unwrap_err();
        assert!(e.contains("'gone.md' not found"), "{e}");
        assert_eq!(clean(Path::new("/a/./b/../c/")), PathBuf::from("/a/c"));
        assert_eq!(clean(Path::new("a/../../b")), PathBuf::from("../b"));
        let bad_id = Spec { node: "../x".into(), ..spec(&["a"]) };
        assert!(bad_id.kb_path().is_err());
        assert!(Spec { chunk_size: Some(10), chunk_overlap: Some(10), ..spec(&["a"]) }.params().is_err());
        assert_eq!(
            spec(&["a"]).params().unwrap(),
            Params { chunk_size: 1000, chunk_overlap: 50, embedding_model: None }
        );
    }

    #[test]
    fn directories_are_walked_for_text_files_only() {
        let dir = tmpdir("walk");
        std::fs::create_dir_all(dir.join("k/sub")).unwrap();
        std::fs::create_dir_all(dir.join("k/.git")).unwrap();
        std::fs::write(dir.join("k/a.md"), "alpha").unwrap();
        std::fs::write(dir.join("k/sub/b.txt"), "beta").unwrap();
        std::fs::write(dir.join("k/.git/config"), "hidden").unwrap();
        std::fs::write(dir.join("k/logo.png"), [0x89u8, b'P', b'N', b'G', 0, 0]).unwrap();
        std::fs::write(dir.join("k/blob.dat"), [1u8, 0, 2, 0]).unwrap();
        let spec =
            Spec { node: "kb".into(), agent_dir: dir.clone(), documents: vec!["./k/".into()], ..Spec::default() };
        let docs = resolve(&spec, &no_log()).unwrap();
        let sources: Vec<&str> = docs.iter().map(|d| d.source.as_str()).collect();
        assert_eq!(sources, ["./k/a.md", "./k/blob.dat", "./k/sub/b.txt"]);
        // The binary without a known extension is skipped when read.
        let stop = AtomicBool::new(false);
        let log = no_log();
        let ctl = Ctl {
            stop: &stop,
            deadline: Instant::now() + Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            log: &log,
        };
        let r = RagStore::new(None).retrieve(&spec, "alpha", &ctl).unwrap();
        assert_eq!(r.kb.document_count(), 2, "{:?}", r.kb.file.documents);
        assert_eq!(r.hits[0].source, "./k/a.md");
    }

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
        };
        let path = dir.join("kb.yaml");

        let r = RagStore::new(None).retrieve(&spec, "borrowing", &ctl).unwrap();
        assert!(matches!(&r.source, KbSource::Built { read: 2, kept: 0, .. }), "{:?}", r.source);
        assert_eq!(r.hits[0].source, "a.md");
        let written = std::fs::read_to_string(&path).unwrap();
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();

        // Same store: from memory. A new store: from the file, untouched.
        let store = RagStore::new(None);
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
        let r = RagStore::new(None).retrieve(&spec2, "ownership", &ctl).unwrap();
        assert!(matches!(&r.source, KbSource::Built { read: 2, kept: 0, .. }), "{:?}", r.source);

        // A corrupt file: rebuilt with a warning.
        std::fs::write(&path, "switchyard_rag: [this is not a knowledge base").unwrap();
        let r = RagStore::new(None).retrieve(&spec2, "ownership", &ctl).unwrap();
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
    }

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
