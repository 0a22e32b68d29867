//! Source text, byte spans and line/column conversion.
//!
//! Every position inside Switchyard is a byte range into one [`SourceFile`]. Lines are 1-based;
//! columns are 1-based and count Unicode scalar values (characters), which is what editors show.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A half-open byte range `[start, end)` into a source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        let s = start.min(u32::MAX as usize) as u32;
        let e = end.max(start).min(u32::MAX as usize) as u32;
        Span { start: s, end: e }
    }
    pub fn at(pos: usize) -> Span {
        Span::new(pos, pos)
    }
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
    /// The smallest span covering both.
    pub fn cover(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
    /// A sub-span `[a, b)` relative to this span's start, clamped to this span.
    pub fn sub(self, a: usize, b: usize) -> Span {
        let s = (self.start as usize + a).min(self.end as usize);
        let e = (self.start as usize + b).min(self.end as usize).max(s);
        Span::new(s, e)
    }
}

/// A 1-based line and column (column counts characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineCol {
    pub line: u32,
    pub column: u32,
}

/// One file's text plus a line index. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct SourceFile {
    inner: Arc<SourceInner>,
}

#[derive(Debug)]
struct SourceInner {
    path: PathBuf,
    text: String,
    line_starts: Vec<u32>,
}

impl SourceFile {
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let mut line_starts = Vec::with_capacity(text.len() / 32 + 1);
        line_starts.push(0u32);
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            // `\n`, `\r\n` and a lone `\r` all end a line (as the YAML scanner counts them).
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                line_starts.push((i + 1).min(u32::MAX as usize) as u32);
            }
        }
        SourceFile { inner: Arc::new(SourceInner { path: path.into(), text, line_starts }) }
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }
    pub fn text(&self) -> &str {
        &self.inner.text
    }
    pub fn line_count(&self) -> usize {
        self.inner.line_starts.len()
    }

    /// Byte offset of the start of 1-based `line` (clamped).
    pub fn line_start(&self, line: u32) -> usize {
        let idx = (line.max(1) - 1) as usize;
        self.inner.line_starts.get(idx).map(|&s| s as usize).unwrap_or(self.inner.text.len())
    }

    /// The text of 1-based `line`, without its line terminator.
    pub fn line_text(&self, line: u32) -> &str {
        let start = self.line_start(line);
        let text = self.text();
        let end = text[start..].find(['\n', '\r']).map(|i| start + i).unwrap_or(text.len());
        &text[start..end]
    }

    /// Line and column of a byte offset (clamped to the text, snapped to a char boundary).
    pub fn line_col(&self, offset: usize) -> LineCol {
        let text = self.text();
        let mut off = offset.min(text.len());
        while off > 0 && !text.is_char_boundary(off) {
            off -= 1;
        }
        let line_idx = match self.inner.line_starts.binary_search(&(off as u32)) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let ls = self.inner.line_starts[line_idx] as usize;
        let column = text[ls..off].chars().count() as u32 + 1;
        LineCol { line: line_idx as u32 + 1, column }
    }

    /// Byte offset of a 1-based line and column (clamped).
    pub fn offset(&self, lc: LineCol) -> usize {
        let ls = self.line_start(lc.line);
        let line = self.line_text(lc.line);
        let mut off = ls;
        for (n, ch) in line.chars().enumerate() {
            if n + 1 >= lc.column as usize {
                break;
            }
            off += ch.len_utf8();
        }
        off
    }

    pub fn slice(&self, span: Span) -> &str {
        let text = self.text();
        let s = (span.start as usize).min(text.len());
        let e = (span.end as usize).min(text.len()).max(s);
        text.get(s..e).unwrap_or("")
    }
}

/// Maps character indices (as YAML scanners report them) to byte offsets in O(1) amortised time:
/// a checkpoint every 64 characters, then a short forward scan.
pub struct CharIndex<'a> {
    text: &'a str,
    ascii: bool,
    checkpoints: Vec<u32>,
}

impl<'a> CharIndex<'a> {
    const STEP: usize = 64;
    pub fn new(text: &'a str) -> CharIndex<'a> {
        let ascii = text.is_ascii();
        let mut checkpoints = Vec::new();
        if !ascii {
            for (n, (b, _)) in text.char_indices().enumerate() {
                if n % Self::STEP == 0 {
                    checkpoints.push(b as u32);
                }
            }
        }
        CharIndex { text, ascii, checkpoints }
    }
    pub fn byte(&self, char_index: usize) -> usize {
        if self.ascii {
            return char_index.min(self.text.len());
        }
        let cp = char_index / Self::STEP;
        let Some(&start) = self.checkpoints.get(cp) else { return self.text.len() };
        let rest = char_index - cp * Self::STEP;
        let mut off = start as usize;
        for ch in self.text[off..].chars().take(rest) {
            off += ch.len_utf8();
        }
        off
    }
}

// ---------------------------------------------------------------------------------------------
// Bounded reads
// ---------------------------------------------------------------------------------------------

/// The cap for the small files an agent file points at (prompt files, skill cards and
/// `SKILL.md`, tool files): 4 MiB.
pub const SIDE_FILE_CAP: u64 = 4 * 1024 * 1024;

/// Why [`read_bounded`] refused or failed.
#[derive(Debug)]
pub enum ReadError {
    /// Not a regular file (a directory, a device such as `/dev/zero`, a FIFO, a socket).
    NotRegular { path: PathBuf, kind: &'static str },
    /// The path (or a symlink on the way) leads outside the folder it must stay in.
    OutsideRoot { path: PathBuf, target: PathBuf, root: PathBuf },
    /// Larger than the cap (bytes).
    TooLarge { path: PathBuf, cap: u64 },
    /// The file system's own error.
    Io { path: PathBuf, error: std::io::Error },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotRegular { path, kind } => write!(f, "{}: is {kind}, not a regular file", path.display()),
            ReadError::OutsideRoot { path, target, root } => write!(
                f,
                "{}: leads to {}, outside {} (files an agent reads must stay in its project folder)",
                path.display(),
                target.display(),
                root.display()
            ),
            ReadError::TooLarge { path, cap } => {
                write!(f, "{}: larger than {} (not read)", path.display(), human_bytes(*cap))
            }
            ReadError::Io { path, error } => match error.kind() {
                std::io::ErrorKind::NotFound => write!(f, "{}: no such file", path.display()),
                std::io::ErrorKind::PermissionDenied => write!(f, "{}: permission denied", path.display()),
                _ => write!(f, "{}: cannot read: {error}", path.display()),
            },
        }
    }
}

impl std::error::Error for ReadError {}

impl ReadError {
    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound)
    }
}

fn human_bytes(n: u64) -> String {
    if n >= 1024 * 1024 { format!("{} MB", n / 1024 / 1024) } else if n >= 1024 { format!("{} KB", n / 1024) } else { format!("{n} bytes") }
}

/// Read a file that an agent names, safely: only a regular file (never a device, FIFO or
/// socket: opened non-blocking and checked on the open handle, so nothing blocks or streams
/// forever), at most `cap` bytes (a larger file is refused, not truncated), and — when `root` is
/// given — only when the path, symlinks resolved, stays inside `root`. The one way agent files,
/// sidecars, prompt files, tool files, skill files, RAG documents and tool output are read.
pub fn read_bounded(path: &Path, cap: u64, root: Option<&Path>) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let io = |error: std::io::Error| ReadError::Io { path: path.to_path_buf(), error };
    if let Some(root) = root {
        let target = std::fs::canonicalize(path).map_err(io)?;
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        if !target.starts_with(&root) {
            return Err(ReadError::OutsideRoot { path: path.to_path_buf(), target, root });
        }
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_o_nonblock())
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else if ft.is_fifo() {
            "a FIFO (named pipe)"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(ReadError::NotRegular { path: path.to_path_buf(), kind });
    }
    if meta.len() > cap {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), cap });
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() as u64 > cap {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), cap });
    }
    Ok(out)
}

/// The project a file belongs to, what folder trust is keyed on and where skills are looked up
/// to: the nearest folder above it holding `.git`; else the nearest holding an LLLM package's
/// `lllm.toml` (its configs name its prompts, tools and skills beside them); else, for a Loki
/// agent in a bundle (`<bundle>/agents/<name>/graph.yaml`), the bundle folder; else the file's
/// own folder.
pub fn project_root(path: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()));
    let start = if abs.is_dir() { abs.clone() } else { abs.parent().map(Path::to_path_buf).unwrap_or(abs.clone()) };
    for marker in [".git", "lllm.toml"] {
        if let Some(d) = start.ancestors().find(|d| d.join(marker).exists()) {
            return d.to_path_buf();
        }
    }
    let is_loki_agent = start.join("graph.yaml").is_file() || start.join("config.yaml").is_file();
    match start.parent() {
        Some(agents) if is_loki_agent && agents.file_name().is_some_and(|n| n == "agents") => {
            agents.parent().map(Path::to_path_buf).unwrap_or(start)
        }
        _ => start,
    }
}

/// The refusal of a file that lies inside `root` by its path but is a symbolic link (or sits
/// under one) leading out of `root`: what a cloned repository could plant to make an agent read
/// `~/.aws/credentials` through an innocent-looking `prompts/p.txt`. `None` for a path outside
/// `root` by its own name (named on purpose, which the trust rules and the run manifest judge),
/// for a path that stays inside, and for one that does not exist.
pub fn links_out(path: &Path, root: &Path) -> Option<ReadError> {
    let lexical = lexical_absolute(path);
    let root_lexical = lexical_absolute(root);
    let root_real = std::fs::canonicalize(root).unwrap_or_else(|_| root_lexical.clone());
    if !(lexical.starts_with(&root_lexical) || lexical.starts_with(&root_real)) {
        return None;
    }
    let target = std::fs::canonicalize(path).ok()?;
    (!target.starts_with(&root_real)).then(|| ReadError::OutsideRoot { path: path.to_path_buf(), target, root: root_real })
}

/// `path` made absolute with `.` and `..` removed by name (no symlink resolved).
fn lexical_absolute(path: &Path) -> PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// [`read_bounded`] as UTF-8 text (invalid bytes replaced).
pub fn read_bounded_text(path: &Path, cap: u64, root: Option<&Path>) -> Result<String, ReadError> {
    read_bounded(path, cap, root).map(|b| match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// `O_NONBLOCK` on Linux (opening a FIFO with no writer must not block).
const fn libc_o_nonblock() -> i32 {
    0o4000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_round_trip() {
        let f = SourceFile::new("a.yaml", "ab\ncdé\n\nxyz");
        assert_eq!(f.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(f.line_col(3), LineCol { line: 2, column: 1 });
        assert_eq!(f.line_col(6), LineCol { line: 2, column: 3 }); // inside é snaps back
        assert_eq!(f.line_col(7), LineCol { line: 2, column: 4 });
        assert_eq!(f.line_col(8), LineCol { line: 3, column: 1 });
        assert_eq!(f.line_col(9), LineCol { line: 4, column: 1 });
        assert_eq!(f.line_col(100), LineCol { line: 4, column: 4 });
        for off in [0, 3, 5, 7, 8, 9, 10, 12] {
            assert_eq!(f.offset(f.line_col(off)), off);
        }
        assert_eq!(f.line_text(2), "cdé");
    }

    #[test]
    fn char_index_maps_multibyte() {
        let s = "é".repeat(200) + "x";
        let ci = CharIndex::new(&s);
        assert_eq!(ci.byte(0), 0);
        assert_eq!(ci.byte(1), 2);
        assert_eq!(ci.byte(130), 260);
        assert_eq!(ci.byte(200), 400);
        assert_eq!(ci.byte(201), 401);
        assert_eq!(ci.byte(5000), 401);
    }

    #[test]
    fn bounded_reads_refuse_devices_fifos_escapes_and_large_files() {
        let d = std::env::temp_dir().join(format!("switchyard-bounded-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("root")).unwrap();
        std::fs::write(d.join("root/ok.txt"), "hello").unwrap();
        std::fs::write(d.join("secret.txt"), "outside").unwrap();
        assert_eq!(read_bounded(&d.join("root/ok.txt"), 100, Some(&d.join("root"))).unwrap(), b"hello");
        let e = read_bounded(&d.join("root/ok.txt"), 3, None).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { cap: 3, .. }), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20, None).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let fifo = d.join("root/pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
        if made {
            let e = read_bounded(&fifo, 100, None).unwrap_err();
            assert!(e.to_string().contains("FIFO"), "{e}");
        }
        std::os::unix::fs::symlink(d.join("secret.txt"), d.join("root/link.txt")).unwrap();
        let e = read_bounded(&d.join("root/link.txt"), 100, Some(&d.join("root"))).unwrap_err();
        assert!(matches!(e, ReadError::OutsideRoot { .. }) && e.to_string().contains("outside"), "{e}");
        assert_eq!(read_bounded(&d.join("root/link.txt"), 100, None).unwrap(), b"outside");
        assert!(read_bounded(&d.join("root/none"), 100, None).unwrap_err().is_not_found());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_link_out_of_the_root_is_refused_a_path_named_outside_is_not() {
        let d = std::env::temp_dir().join(format!("switchyard-links-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("root/sub")).unwrap();
        std::fs::create_dir_all(d.join("home")).unwrap();
        std::fs::write(d.join("root/ok.txt"), "in").unwrap();
        std::fs::write(d.join("home/secret"), "out").unwrap();
        std::os::unix::fs::symlink(d.join("home/secret"), d.join("root/p.txt")).unwrap();
        std::os::unix::fs::symlink(d.join("root/ok.txt"), d.join("root/sub/in.txt")).unwrap();
        std::os::unix::fs::symlink(d.join("home"), d.join("root/linked-dir")).unwrap();
        let root = d.join("root");
        let e = links_out(&root.join("p.txt"), &root).expect("a link out is refused");
        assert!(e.to_string().contains("outside"), "{e}");
        assert!(links_out(&root.join("linked-dir/secret"), &root).is_some(), "under a linked folder");
        assert!(links_out(&root.join("sub/../p.txt"), &root).is_some(), "by a roundabout name");
        assert!(links_out(&root.join("sub/in.txt"), &root).is_none(), "a link that stays inside");
        assert!(links_out(&root.join("ok.txt"), &root).is_none());
        assert!(links_out(&d.join("home/secret"), &root).is_none(), "named outside on purpose: the trust rules judge it");
        assert!(links_out(&root.join("missing"), &root).is_none());
        let _ = std::fs::remove_dir_all(&d);
    }
}
