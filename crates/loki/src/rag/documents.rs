//! A rag node's documents: `documents` resolved to files (folders walked for text files) and
//! URLs without reading anything, then each read from disk or fetched through the shared HTTP
//! client (time and size limits) and turned into text.

use super::html::html_to_text;
use super::spec::{Ctl, Spec, stopped_msg};
use super::{MAX_DOCUMENT_BYTES, MAX_FILES, URL_TIMEOUT, ext_of};
use connect::llm::http;
use connect::rt::{self, Interrupted};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// One document after resolving the node's `documents`.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Origin {
    File { path: PathBuf, size: u64, mtime_ns: Option<u64>, listed: bool },
    Url(String),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Resolved {
    /// How sources are shown: the document as written, or `<dir as written>/<path inside>`.
    pub(super) source: String,
    pub(super) origin: Origin,
}

impl Resolved {
    pub(super) fn location(&self) -> String {
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

fn mtime_ns(m: &std::fs::Metadata) -> Option<u64> {
    m.modified().ok()?.duration_since(UNIX_EPOCH).ok().map(|d| d.as_nanos().min(u64::MAX as u128) as u64)
}

/// The node's documents as files and URLs, without reading or fetching anything. Every local
/// document is checked before any URL is touched.
pub(super) fn resolve(spec: &Spec, warn: &dyn Fn(String)) -> Result<Vec<Resolved>, String> {
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
pub(super) fn read_file(
    id: &str,
    r: &Resolved,
    path: &Path,
    listed: bool,
) -> Result<Option<(Vec<u8>, String)>, String> {
    let bytes = match syntax::source::read_bounded(path, MAX_DOCUMENT_BYTES, None) {
        Ok(b) => b,
        Err(syntax::source::ReadError::TooLarge { .. }) if listed => {
            return Err(format!(
                "rag node '{id}': document '{}' is larger than {} MiB; split it or list smaller files",
                r.source,
                MAX_DOCUMENT_BYTES >> 20
            ));
        }
        Err(syntax::source::ReadError::TooLarge { .. }) => return Ok(None),
        Err(e) => return Err(format!("rag node '{id}': document '{}' cannot be read: {e}", r.source)),
    };
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
pub(super) fn fetch_url(id: &str, url: &str, ctl: &Ctl<'_>) -> Result<(Vec<u8>, String), String> {
    if !ctl.network {
        return Err(format!("rag node '{id}': {}", runtime::provider::offline_error("the document", url)));
    }
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

pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::test_support::{no_log, tmpdir};
    use crate::rag::{Params, RagStore};
    use std::sync::atomic::AtomicBool;

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
            network: true,
        };
        let r = RagStore::new(None).with_cache_dir(tmpdir("walk-cache")).retrieve(&spec, "alpha", &ctl).unwrap();
        assert_eq!(r.kb.document_count(), 2, "{:?}", r.kb.file.documents);
        assert_eq!(r.hits[0].source, "./k/a.md");
    }
}
