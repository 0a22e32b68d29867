//! Documents: agent files of either dialect, loaded into a typed model with source spans.
//!
//! Loading never fails. [`load_path`] always returns a [`Document`]; what went wrong is in its
//! diagnostics (I/O problems included), and as much of the model as could be read is there.

pub mod bundle;
pub mod env;
pub mod lllm;
pub mod loki;
pub mod schema;
pub mod sherma;

use syntax::diag::Diagnostic;
use syntax::source::{SourceFile, Span};
use syntax::yaml::{self, YNode};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Agent files larger than this are refused with a diagnostic instead of being parsed.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A value with the span it came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sp<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Sp<T> {
    pub fn new(value: T, span: Span) -> Sp<T> {
        Sp { value, span }
    }
}

impl Sp<String> {
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    Sherma,
    Loki,
    Lllm,
}

impl Dialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Sherma => "sherma",
            Dialect::Loki => "loki",
            Dialect::Lllm => "lllm",
        }
    }
}

#[derive(Debug)]
pub enum Model {
    Sherma(sherma::ShermaDoc),
    Loki(loki::LokiDoc),
    Lllm(lllm::LllmDoc),
    /// Not an agent file we understand (or not readable at all).
    Unknown,
}

/// A loaded agent file.
#[derive(Debug)]
pub struct Document {
    /// The YAML file (for an agent directory, the `graph.yaml` inside it).
    pub path: PathBuf,
    /// The directory relative paths resolve against.
    pub base_dir: PathBuf,
    /// The source text; `None` when the file could not be read.
    pub file: Option<SourceFile>,
    /// The YAML tree of the first document; `None` for an empty or unreadable file.
    pub root: Option<YNode>,
    pub model: Model,
    /// Load-time diagnostics: I/O, YAML syntax, structure. Validation adds more.
    pub diagnostics: Vec<Diagnostic>,
    /// True when the problem was I/O (unreadable path), not content: the CLI exits 2.
    pub io_error: bool,
    /// Other files read while loading (prompt files, skill cards, sub-agents), for rendering.
    pub extra_files: Vec<SourceFile>,
}

impl Document {
    pub fn dialect(&self) -> Option<Dialect> {
        match self.model {
            Model::Sherma(_) => Some(Dialect::Sherma),
            Model::Loki(_) => Some(Dialect::Loki),
            Model::Lllm(_) => Some(Dialect::Lllm),
            Model::Unknown => None,
        }
    }
    pub fn sherma(&self) -> Option<&sherma::ShermaDoc> {
        match &self.model {
            Model::Sherma(d) => Some(d),
            _ => None,
        }
    }
    pub fn loki(&self) -> Option<&loki::LokiDoc> {
        match &self.model {
            Model::Loki(d) => Some(d),
            _ => None,
        }
    }
    pub fn lllm(&self) -> Option<&lllm::LllmDoc> {
        match &self.model {
            Model::Lllm(d) => Some(d),
            _ => None,
        }
    }
    /// Every source file involved, main file first (for rendering diagnostics).
    pub fn files(&self) -> Vec<SourceFile> {
        self.file.iter().cloned().chain(self.extra_files.iter().cloned()).collect()
    }
    fn io_failure(path: &Path, diag: Diagnostic) -> Document {
        Document {
            path: path.to_path_buf(),
            base_dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            file: None,
            root: None,
            model: Model::Unknown,
            diagnostics: vec![diag.in_file(path)],
            io_error: true,
            extra_files: Vec::new(),
        }
    }
}

/// Resolve what the user named: a YAML file, or a Loki agent directory holding exactly one of
/// `graph.yaml` / `config.yaml`.
pub fn resolve_input(path: &Path) -> Result<PathBuf, Diagnostic> {
    let meta = std::fs::metadata(path).map_err(|e| {
        let msg = match e.kind() {
            std::io::ErrorKind::NotFound => format!("{}: no such file or directory", path.display()),
            std::io::ErrorKind::PermissionDenied => format!("{}: permission denied", path.display()),
            _ => format!("{}: cannot read: {e}", path.display()),
        };
        Diagnostic::error("io", msg).hint("check the path; give a .yaml agent file or a Loki agent directory")
    })?;
    if !meta.is_dir() {
        return within_size_limit(path, meta.len());
    }
    let graph = path.join("graph.yaml");
    let config = path.join("config.yaml");
    let sized = |p: PathBuf| {
        let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        within_size_limit(&p, len)
    };
    match (graph.is_file(), config.is_file()) {
        (true, true) => Err(Diagnostic::error(
            "agent-dir-ambiguous",
            format!("{} holds both graph.yaml and config.yaml", path.display()),
        )
        .hint("a Loki agent directory must contain exactly one of them: graph.yaml for a graph agent, config.yaml for a normal agent")),
        (true, false) => sized(graph),
        (false, true) => sized(config),
        (false, false) => Err(Diagnostic::error(
            "agent-dir-empty",
            format!("{} is a directory without graph.yaml or config.yaml", path.display()),
        )
        .hint("give an agent YAML file, or a Loki agent directory that contains graph.yaml")),
    }
}

/// The file itself when it is small enough to load; checked before anything reads it, so a
/// huge file (or a device) costs no memory, in the CLI and in the editor alike.
fn within_size_limit(file_path: &Path, len: u64) -> Result<PathBuf, Diagnostic> {
    if len <= MAX_FILE_BYTES {
        return Ok(file_path.to_path_buf());
    }
    Err(Diagnostic::error(
        "file-too-large",
        format!(
            "{} is {:.1} MB; agent files larger than {} MB are not loaded",
            file_path.display(),
            len as f64 / 1e6,
            MAX_FILE_BYTES / 1024 / 1024
        ),
    )
    .hint("agent files are small; move large data into files the agent reads at run time")
    .in_file(file_path))
}

/// The project a file belongs to (`syntax::source::project_root`): what folder trust is keyed
/// on and where skills are looked up to.
pub use syntax::source::project_root;

/// Load an agent file or agent directory. Never fails; see the diagnostics.
pub fn load_path(path: &Path) -> Document {
    let file_path = match resolve_input(path) {
        Ok(p) => p,
        Err(d) => {
            let at = if d.file.is_empty() { path.to_path_buf() } else { PathBuf::from(&d.file) };
            return Document::io_failure(&at, d);
        }
    };
    // Bounded: a device (`/dev/zero`), a FIFO or a file that grew past the cap since its size
    // was checked is refused, never read forever.
    let bytes = match syntax::source::read_bounded(&file_path, MAX_FILE_BYTES, None) {
        Ok(b) => b,
        Err(e) => {
            return Document::io_failure(
                &file_path,
                Diagnostic::error("io", e.to_string()).hint("give a regular .yaml agent file or a Loki agent directory"),
            );
        }
    };
    load_bytes(&file_path, &bytes)
}

/// Load from bytes that claim to be the file at `path` (the path gives the dialect hint and the
/// base directory). Invalid UTF-8 is reported and decoded lossily.
pub fn load_bytes(path: &Path, bytes: &[u8]) -> Document {
    match std::str::from_utf8(bytes) {
        Ok(text) => load_str(path, text),
        Err(e) => {
            let good = e.valid_up_to();
            let text = String::from_utf8_lossy(bytes).into_owned();
            let prefix = String::from_utf8_lossy(&bytes[..good]);
            let mut doc = load_str(path, &text);
            if let Some(file) = &doc.file {
                let d = Diagnostic::error("not-utf8", format!("the file is not valid UTF-8 (first bad byte at offset {good})"))
                    .at(file, Span::new(prefix.len(), prefix.len() + 3))
                    .hint("save the file as UTF-8; invalid bytes were replaced by \u{FFFD} and the file cannot be saved from the editor");
                doc.diagnostics.insert(0, d);
            }
            doc
        }
    }
}

/// Load from text.
pub fn load_str(path: &Path, text: &str) -> Document {
    let file = SourceFile::new(path, text);
    let parsed = yaml::parse(&file);
    let mut diags = parsed.diagnostics;
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = parsed.root;
    let dialect = detect(path, root.as_ref());
    let mut extra_files = Vec::new();
    let model = match dialect {
        Some(Dialect::Sherma) => {
            Model::Sherma(sherma::build(&file, root.as_ref(), &base_dir, &mut diags, &mut extra_files))
        }
        Some(Dialect::Loki) => Model::Loki(loki::build(&file, root.as_ref(), &base_dir, &mut diags)),
        Some(Dialect::Lllm) => {
            Model::Lllm(lllm::build(&file, root.as_ref(), &base_dir, &mut diags, &mut extra_files))
        }
        None => {
            if path.file_name().is_some_and(|n| n == "config.yaml")
                && root.as_ref().is_some_and(|r| r.get("nodes").is_none())
            {
                diags.push(
                    Diagnostic::error("loki-normal-agent", "this is a Loki normal agent (config.yaml), not a graph agent")
                        .at(&file, Span::at(0))
                        .hint("Switchyard opens graph agents: a directory with graph.yaml, or a sherma agent YAML"),
                );
            } else if root.is_none() && !diags.iter().any(|d| d.is_error()) {
                diags.push(
                    Diagnostic::error("empty-file", "the file is empty")
                        .at(&file, Span::at(0))
                        .hint("a sherma agent starts with `manifest_version: 1`; a Loki graph agent with `name:`, `version: \"1.0\"`, `start:` and `nodes:`"),
                );
            } else if root.as_ref().is_some_and(|r| r.as_map().is_none()) {
                let r = root.as_ref().unwrap();
                diags.push(
                    Diagnostic::error("root-not-mapping", format!("the document must be a mapping, found {}", r.describe()))
                        .at(&file, schema::head_span(&file, r))
                        .hint("an agent file is a mapping of keys such as `manifest_version`, `agents` (sherma) or `name`, `start`, `nodes` (Loki), or `global`, `agent_configs` (LLLM)"),
                );
            } else if root.is_some() {
                diags.push(
                    Diagnostic::error("unknown-dialect", "cannot tell which kind of agent file this is")
                        .at(&file, Span::at(0))
                        .hint("a sherma agent has `manifest_version: 1` and `agents:`; a Loki graph agent (graph.yaml) has `version: \"1.0\"`, `start:` and `nodes:`; an LLLM config has `global:` and `agent_configs:`"),
                );
            }
            Model::Unknown
        }
    };
    Document {
        path: path.to_path_buf(),
        base_dir,
        file: Some(file),
        root,
        model,
        diagnostics: diags,
        io_error: false,
        extra_files,
    }
}

/// Which dialect a document is written in.
pub fn detect(path: &Path, root: Option<&YNode>) -> Option<Dialect> {
    let root = root?;
    root.as_map()?;
    if root.get("manifest_version").is_some() {
        return Some(Dialect::Sherma);
    }
    let has = |k: &str| root.get(k).is_some();
    if has("nodes") && (has("start") || has("version") || has("name")) {
        return Some(Dialect::Loki);
    }
    if has("agents") || has("llms") || has("prompts") {
        return Some(Dialect::Sherma);
    }
    // LLLM: an agent list in any of its shapes, or `global` defaults (a config that only sets
    // defaults for the configs inheriting from it). Checked after sherma and Loki, whose files
    // never hold these keys, so their detection is unchanged.
    if has("agent_configs") || has("agent_group_configs") || root.get("global").is_some_and(|g| g.as_map().is_some()) {
        return Some(Dialect::Lllm);
    }
    if path.file_name().is_some_and(|n| n == "graph.yaml") {
        return Some(Dialect::Loki);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size limit is checked when the input is resolved, before anything reads the file: the
    /// CLI and the editor (which opens through `resolve_input`) never hold a huge file in memory.
    #[test]
    fn oversized_files_are_refused_before_reading() {
        let dir = std::env::temp_dir().join(format!("sy-doc-size-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("agent")).unwrap();
        let sparse = |p: &Path| {
            // Sparse: 64 GB on disk costs nothing, but reading it would.
            std::fs::File::create(p).unwrap().set_len(64 << 30).unwrap();
        };
        let file = dir.join("big.yaml");
        sparse(&file);
        sparse(&dir.join("agent/graph.yaml"));
        for (given, resolved) in [(file.clone(), file.clone()), (dir.join("agent"), dir.join("agent/graph.yaml"))] {
            let e = resolve_input(&given).unwrap_err();
            assert_eq!(e.code, "file-too-large");
            assert_eq!(e.file, resolved.display().to_string());
            let d = load_path(&given);
            assert!(d.io_error);
            assert_eq!(d.diagnostics[0].code, "file-too-large");
            assert_eq!(d.path, resolved);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
