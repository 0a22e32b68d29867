//! Upstream's recursive character splitter: chunks of at most `chunk_size` characters (not
//! bytes or tokens), cut at paragraphs first, then lines, sentences, clauses, words, and
//! characters as a last resort; Markdown splits at headings before paragraphs. Pure: no I/O.

use super::ext_of;

/// Separators tried in order (upstream's recursive splitter, with sentence and clause ends).
const SEPARATORS: &[&str] = &["\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " "];
const MARKDOWN_SEPARATORS: &[&str] =
    &["\n# ", "\n## ", "\n### ", "\n#### ", "\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " "];

pub(super) fn separators_for(source: &str) -> &'static [&'static str] {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
