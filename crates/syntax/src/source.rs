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
}
