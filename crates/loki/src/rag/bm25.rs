//! The keyword index: Okapi BM25 over a knowledge base's chunks, with English stop words
//! dropped and plural endings folded. Pure: no I/O.

use std::collections::{HashMap, HashSet};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
