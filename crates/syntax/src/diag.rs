//! Diagnostics: what is wrong, where (file, line, column), and what to do about it.

use crate::source::{SourceFile, Span};
use serde::{Deserialize, Serialize};
use std::path::Path;
use ts_rs::TS;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One finding. Lines and columns are 1-based; columns count characters.
/// `end_line`/`end_column` are exclusive (the position just after the marked text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: String,
    pub message: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub hint: Option<String>,
    /// The graph node the finding is about, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub node: Option<String>,
    /// Byte range in `file` (for editors; not part of the stable JSON contract).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "{ start: number, end: number }")]
    pub span: Option<Span>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            code: code.to_string(),
            message: show_invisible(message.into()),
            file: String::new(),
            line: 1,
            column: 1,
            end_line: 1,
            end_column: 1,
            hint: None,
            node: None,
            span: None,
        }
    }
    pub fn error(code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message)
    }
    pub fn warning(code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message)
    }

    /// Position the diagnostic at `span` of `file`.
    pub fn at(mut self, file: &SourceFile, span: Span) -> Diagnostic {
        let s = file.line_col(span.start as usize);
        let e = file.line_col(span.end as usize);
        self.file = file.path().display().to_string();
        self.line = s.line;
        self.column = s.column;
        self.end_line = e.line;
        self.end_column = e.column;
        self.span = Some(span);
        self
    }

    /// A diagnostic about a file as a whole (I/O problems): line 1, column 1.
    pub fn in_file(mut self, path: &Path) -> Diagnostic {
        self.file = path.display().to_string();
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(show_invisible(hint.into()));
        self
    }
    pub fn maybe_hint(mut self, hint: Option<String>) -> Diagnostic {
        if let Some(h) = hint {
            self.hint = Some(show_invisible(h));
        }
        self
    }
    pub fn node(mut self, node: impl Into<String>) -> Diagnostic {
        self.node = Some(node.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Characters that render as nothing or reorder the text around them (zero-width spaces and
/// joiners, bidirectional controls, the BOM): two names that differ only by one look equal, and
/// a bidi control in a message scrambles the line it is shown on.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// Messages show invisible characters as escapes (`n\u{200b}1`), so quoted names say what the
/// file really holds.
fn show_invisible(s: String) -> String {
    if !s.chars().any(is_invisible) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_invisible(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Sort diagnostics by file, position, then severity; remove exact duplicates.
pub fn sort_and_dedup(diags: &mut Vec<Diagnostic>) {
    diags.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.severity, &a.code, &a.message).cmp(&(
            &b.file, b.line, b.column, b.severity, &b.code, &b.message,
        ))
    });
    diags.dedup();
}

/// "did you mean" suggestion among `candidates` (Jaro-Winkler / edit distance).
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(&str, f64)> = None;
    let lw = word.to_ascii_lowercase();
    let (wn, lev_max) = (lw.chars().count(), 2.max(word.len() / 4));
    for c in candidates {
        let lc = c.to_ascii_lowercase();
        // Lengths alone rule most pairs out, which spares the two O(n·m) measures for long
        // unknown words: the edit distance is at least the length difference, and a length
        // ratio under 0.4 keeps Jaro under 0.8 and so Jaro-Winkler (which adds at most 0.4 of
        // the rest) under 0.88.
        let cn = lc.chars().count();
        let (short, long) = (wn.min(cn), wn.max(cn));
        if long - short >= word.len().max(1) || (long - short > lev_max && short * 5 < long * 2) {
            continue;
        }
        let lev = strsim::levenshtein(&lw, &lc);
        let jw = strsim::jaro_winkler(&lw, &lc);
        let close = lev <= lev_max || jw >= 0.88;
        if !close || lev >= word.len().max(1) {
            continue;
        }
        let score = jw - lev as f64 * 0.05;
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((c, score));
        }
    }
    best.map(|(c, _)| c)
}

/// Render diagnostics the way a compiler does: `file:line:col`, the source line, a marker, a hint.
pub fn render_human(diags: &[Diagnostic], files: &[SourceFile], color: bool) -> String {
    use codespan_reporting::diagnostic::{Diagnostic as CsDiag, Label};
    use codespan_reporting::files::SimpleFiles;
    use codespan_reporting::term::{self, Config};

    let mut sf = SimpleFiles::new();
    let mut ids: Vec<(String, usize)> = Vec::new();
    for f in files {
        let name = f.path().display().to_string();
        if !ids.iter().any(|(n, _)| *n == name) {
            let id = sf.add(name.clone(), f.text().to_string());
            ids.push((name, id));
        }
    }
    let config = Config::default();
    let mut out: Vec<u8> = Vec::new();
    for d in diags {
        let mut cs = match d.severity {
            Severity::Error => CsDiag::error(),
            Severity::Warning => CsDiag::warning(),
            Severity::Info => CsDiag::note(),
        }
        .with_code(d.code.clone())
        .with_message(d.message.clone());
        let file_id = ids.iter().find(|(n, _)| *n == d.file).map(|(_, id)| *id);
        let mut notes = Vec::new();
        match (file_id, d.span) {
            (Some(id), Some(span)) => {
                let text_len = files
                    .iter()
                    .find(|f| f.path().display().to_string() == d.file)
                    .map(|f| f.text().len())
                    .unwrap_or(0);
                let s = (span.start as usize).min(text_len);
                let e = (span.end as usize).min(text_len).max(s);
                cs = cs.with_labels(vec![Label::primary(id, s..e)]);
            }
            _ => {
                if !d.file.is_empty() {
                    notes.push(format!("in {}:{}:{}", d.file, d.line, d.column));
                }
            }
        }
        if let Some(h) = &d.hint {
            notes.push(format!("hint: {h}"));
        }
        cs = cs.with_notes(notes);
        if color {
            let mut w = codespan_reporting::term::termcolor::Ansi::new(&mut out);
            let _ = term::emit_to_write_style(&mut w, &config, &sf, &cs);
        } else {
            let mut w = codespan_reporting::term::termcolor::NoColor::new(&mut out);
            let _ = term::emit_to_write_style(&mut w, &config, &sf, &cs);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("promt", ["prompt", "args", "name"]), Some("prompt"));
        assert_eq!(did_you_mean("on_eror", ["on_error", "name", "type"]), Some("on_error"));
        assert_eq!(did_you_mean("zzz", ["prompt", "args"]), None);
        assert_eq!(did_you_mean("fallbak", ["fallback", "next"]), Some("fallback"));
    }

    /// The measures without the length filter, to check the filter changes no answer.
    fn did_you_mean_unfiltered<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
        let mut best: Option<(&str, f64)> = None;
        let lw = word.to_ascii_lowercase();
        for &c in candidates {
            let lc = c.to_ascii_lowercase();
            let lev = strsim::levenshtein(&lw, &lc);
            let jw = strsim::jaro_winkler(&lw, &lc);
            if !(lev <= 2.max(word.len() / 4) || jw >= 0.88) || lev >= word.len().max(1) {
                continue;
            }
            let score = jw - lev as f64 * 0.05;
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((c, score));
            }
        }
        best.map(|(c, _)| c)
    }

    proptest::proptest! {
        #[test]
        fn the_length_filter_changes_no_suggestion(
            word in "[a-dA-D_é]{0,24}",
            others in proptest::collection::vec("[a-d_é]{0,30}", 0..4),
            suffixes in proptest::collection::vec("[a-z]{0,30}", 0..3),
        ) {
            // Candidates that start with the word come near the length bounds.
            let longer: Vec<String> = suffixes.iter().map(|s| format!("{word}{s}")).collect();
            let cands: Vec<&str> = others.iter().chain(&longer).map(String::as_str).collect();
            proptest::prop_assert_eq!(did_you_mean(&word, cands.iter().copied()), did_you_mean_unfiltered(&word, &cands));
        }
    }

    #[test]
    fn the_length_filter_keeps_near_misses_of_long_and_short_words() {
        let cands = ["prompt", "on_error", "state_updates", "a", "ab", "output_schema_for_the_final_answer"];
        for w in ["prompts_", "p", "abc", "state_update", "state_up", "STATE", "output_schema_for_the_final_answr", "output_schema", "stateupdatesxyz", &"x".repeat(5000)] {
            assert_eq!(did_you_mean(w, cands), did_you_mean_unfiltered(w, &cands), "{w}");
        }
        assert_eq!(did_you_mean("output_schema_for_the_final_answr", cands), Some("output_schema_for_the_final_answer"));
        // 8 of 13 characters, 5 edits: close by Jaro-Winkler (0.92) alone
        assert_eq!(did_you_mean("state_up", cands), Some("state_updates"));
    }

    #[test]
    fn invisible_characters_are_shown_as_escapes() {
        let d = Diagnostic::error("x", "node `n\u{200b}1` and `\u{202e}evil\u{202c}`").hint("rename `a\u{feff}`");
        assert_eq!(d.message, "node `n\\u{200b}1` and `\\u{202e}evil\\u{202c}`");
        assert_eq!(d.hint.as_deref(), Some("rename `a\\u{feff}`"));
        assert_eq!(Diagnostic::error("x", "tab\tand é").message, "tab\tand é");
    }

    #[test]
    fn positions_and_render() {
        let f = SourceFile::new("x.yaml", "a: 1\nbb: two\n");
        let d = Diagnostic::error("test", "bad value").at(&f, Span::new(9, 12)).hint("fix it");
        assert_eq!((d.line, d.column, d.end_line, d.end_column), (2, 5, 2, 8));
        let text = render_human(&[d], &[f], false);
        assert!(text.contains("x.yaml:2:5"), "{text}");
        assert!(text.contains("bb: two"), "{text}");
        assert!(text.contains("hint: fix it"), "{text}");
    }
}
