//! Secret redaction: what a run shows (events, traces, the CLI's narration and errors, the
//! debugger's state snapshots) never contains a secret's value.
//!
//! A secret is
//! - the value of an environment variable whose name contains `KEY`, `TOKEN`, `SECRET`,
//!   `PASSWORD`, `PASSWD` or `CREDENTIAL` (any case), read once when first needed, and
//! - every value handed to [`register`]: the API keys the provider configuration resolves
//!   (provider file, keyring, `api_key_env`), so a key kept outside the environment is covered too.
//!
//! Values shorter than [`MIN_LEN`] characters are not treated as secrets: `USE_KEYRING=true` or
//! `KEY_ID=42` would otherwise blank ordinary words and numbers everywhere. Each occurrence is
//! replaced by `[redacted:NAME]`, so a reader still sees which secret was there.
//!
//! Recorded cassettes are redacted too ([`scrub_for_file`]): the values above and
//! **secret-shaped** strings (credential formats with a known prefix: `sk-…`, `ghp_…`,
//! `AKIA…`, `AIza…`, `xoxb-…`, …) become placeholders, and a replay redacts the live request
//! the same way before comparing, so a placeholder compares equal to the secret it replaced.
//!
//! What is *not* redacted, on purpose: the durable run store and the checkpoints in memory hold
//! the real state (a resumed run needs it); it stays on this machine, in a file only the user
//! can read.

use aho_corasick::AhoCorasick;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::{Arc, LazyLock, RwLock};

/// Shorter values are not secrets (see the module docs).
pub const MIN_LEN: usize = 8;

const MARKERS: [&str; 6] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether an environment variable of this name holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    MARKERS.iter().any(|m| up.contains(m))
}

/// A set of secret values and what to write in their place.
pub struct Redactor {
    /// `None` when there is nothing to redact (the common case: no scan at all).
    ac: Option<AhoCorasick>,
    /// The replacement for each pattern, by pattern index.
    labels: Vec<String>,
    /// (name, value) as given, to rebuild with more entries.
    entries: Vec<(String, String)>,
}

impl Redactor {
    /// A redactor for these (name, value) pairs; short and duplicate values are dropped.
    pub fn new(entries: impl IntoIterator<Item = (String, String)>) -> Redactor {
        let mut kept: Vec<(String, String)> = Vec::new();
        for (name, value) in entries {
            let value = value.trim().to_string();
            if value.chars().count() < MIN_LEN || kept.iter().any(|(_, v)| *v == value) {
                continue;
            }
            kept.push((name, value));
        }
        // Longest first, so a key that contains another is replaced whole.
        kept.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        let labels = kept.iter().map(|(n, _)| format!("[redacted:{n}]")).collect();
        let ac = if kept.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                .build(kept.iter().map(|(_, v)| v.as_str()))
                .ok()
        };
        Redactor { ac, labels, entries: kept }
    }

    /// Secrets of the process environment.
    pub fn from_env() -> Redactor {
        Redactor::new(std::env::vars_os().filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            let v = v.into_string().ok()?;
            is_secret_name(&k).then_some((k, v))
        }))
    }

    pub fn is_empty(&self) -> bool {
        self.ac.is_none()
    }

    /// Whether `text` contains a secret.
    pub fn finds(&self, text: &str) -> bool {
        self.ac.as_ref().is_some_and(|ac| ac.is_match(text))
    }

    /// Whether any string or key of `v` contains a secret.
    pub fn holds(&self, v: &Value) -> bool {
        match v {
            Value::String(s) => self.finds(s),
            Value::Array(items) => items.iter().any(|i| self.holds(i)),
            Value::Object(map) => map.iter().any(|(k, i)| self.finds(k) || self.holds(i)),
            _ => false,
        }
    }

    /// `text` with every secret replaced.
    pub fn str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.ac {
            Some(ac) if ac.is_match(text) => Cow::Owned(ac.replace_all(text, &self.labels)),
            _ => Cow::Borrowed(text),
        }
    }

    /// Replace secrets in every string (and object key) of `v`, in place.
    pub fn value(&self, v: &mut Value) {
        if self.ac.is_none() {
            return;
        }
        match v {
            Value::String(s) => {
                if let Cow::Owned(r) = self.str(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                if map.keys().any(|k| self.finds(k)) {
                    let old = std::mem::take(map);
                    for (k, mut item) in old {
                        self.value(&mut item);
                        map.insert(self.str(&k).into_owned(), item);
                    }
                } else {
                    map.values_mut().for_each(|i| self.value(i));
                }
            }
            _ => {}
        }
    }

    /// Any serializable thing with its secrets replaced; `None` when it holds none (the
    /// caller keeps the original: no copy made).
    pub fn serde<T: serde::Serialize + serde::de::DeserializeOwned>(&self, item: &T) -> Option<T> {
        self.ac.as_ref()?;
        let mut v = serde_json::to_value(item).ok()?;
        if !self.holds(&v) {
            return None;
        }
        self.value(&mut v);
        serde_json::from_value(v).ok()
    }
}

static GLOBAL: LazyLock<RwLock<Arc<Redactor>>> = LazyLock::new(|| RwLock::new(Arc::new(Redactor::from_env())));

/// The process's redactor (environment secrets plus everything registered).
pub fn global() -> Arc<Redactor> {
    GLOBAL.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Treat `value` as a secret from now on, shown as `[redacted:NAME]`.
pub fn register(name: &str, value: &str) {
    let value = value.trim();
    if value.chars().count() < MIN_LEN {
        return;
    }
    let mut g = GLOBAL.write().unwrap_or_else(|p| p.into_inner());
    if g.entries.iter().any(|(_, v)| v == value) {
        return;
    }
    let mut entries = g.entries.clone();
    entries.push((name.to_string(), value.to_string()));
    *g = Arc::new(Redactor::new(entries));
}

/// Shorthand for `global().str(text)`, owned.
pub fn redact(text: &str) -> String {
    global().str(text).into_owned()
}

/// Shorthand for `global().value(v)`.
pub fn redact_value(v: &mut Value) {
    global().value(v)
}

/// Credential formats recognised by their prefix: (prefix, minimum length of what follows).
/// What follows is made of letters, digits, `_` and `-`.
const SHAPES: [(&str, usize); 14] = [
    ("sk-ant-", 20),
    ("sk-proj-", 20),
    ("sk-or-", 20),
    ("sk-", 20),
    ("ghp_", 30),
    ("gho_", 30),
    ("ghs_", 30),
    ("github_pat_", 30),
    ("glpat-", 20),
    ("xoxb-", 20),
    ("xoxp-", 20),
    ("hf_", 30),
    ("AKIA", 16),
    ("AIza", 30),
];

/// The placeholder of a secret-shaped string.
pub const SHAPED: &str = "[redacted:secret-shaped]";

fn token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// `text` with every secret-shaped string (see [`SHAPES`]) replaced by [`SHAPED`].
pub fn scrub_shapes(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        let at_boundary = i == 0 || !token_char(b[i - 1]);
        let hit = at_boundary
            .then(|| {
                SHAPES.iter().find_map(|(prefix, min)| {
                    // Bytes, not `text[i..]`: `i` may sit inside a multi-byte character.
                    if !b[i..].starts_with(prefix.as_bytes()) {
                        return None;
                    }
                    let start = i + prefix.len();
                    let end = start + b[start..].iter().take_while(|c| token_char(**c)).count();
                    (end - start >= *min).then_some(end)
                })
            })
            .flatten();
        match hit {
            Some(end) => {
                let o = out.get_or_insert_with(String::new);
                o.push_str(&text[copied..i]);
                o.push_str(SHAPED);
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    match out {
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
        None => Cow::Borrowed(text),
    }
}

/// `url` with any `user:password@` removed (for messages and manifests people may paste anywhere).
pub fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            match rest[..end].rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{host}{}", &rest[end..]),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    }
}

/// `text` with known secrets ([`global`]) and secret-shaped strings replaced.
pub fn scrub_text(text: &str) -> String {
    scrub_shapes(&global().str(text)).into_owned()
}

/// Replace known secrets ([`global`]) and secret-shaped strings in every string and key of `v`:
/// what a file we write beside the agent (a cassette) may hold.
pub fn scrub_for_file(v: &mut Value) {
    global().value(v);
    scrub_value_shapes(v);
}

fn scrub_value_shapes(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(r) = scrub_shapes(s) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_value_shapes),
        Value::Object(map) => {
            if map.keys().any(|k| matches!(scrub_shapes(k), Cow::Owned(_))) {
                let old = std::mem::take(map);
                for (k, mut item) in old {
                    scrub_value_shapes(&mut item);
                    map.insert(scrub_shapes(&k).into_owned(), item);
                }
            } else {
                map.values_mut().for_each(scrub_value_shapes);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_shaped_strings_are_scrubbed_and_ordinary_words_are_not() {
        let key = "sk-proj-AbCdEf0123456789_xyz-QRST";
        let text = format!("use {key} now; sk-short stays; task-sk-AbCdEf0123456789abcdef stays; AKIAABCDEFGHIJKLMNOP.");
        let out = scrub_shapes(&text);
        assert_eq!(
            out,
            "use [redacted:secret-shaped] now; sk-short stays; task-sk-AbCdEf0123456789abcdef stays; [redacted:secret-shaped]."
        );
        assert!(matches!(scrub_shapes("nothing here"), Cow::Borrowed(_)));
        // Multi-byte characters right before a prefix or inside the text do not split.
        assert_eq!(scrub_shapes("ONLY — do ⚠️ sk-AbCdEf0123456789abcdefgh"), "ONLY — do ⚠️ [redacted:secret-shaped]");
        assert!(matches!(scrub_shapes("EXTRACTION ONLY — do not judge 🔴"), Cow::Borrowed(_)));
        let mut v = json!({"a": [format!("Bearer {key}")], key: 1});
        scrub_value_shapes(&mut v);
        assert_eq!(v, json!({"a": ["Bearer [redacted:secret-shaped]"], "[redacted:secret-shaped]": 1}));
    }

    fn r() -> Redactor {
        Redactor::new([
            ("OPENAI_API_KEY".to_string(), "sk-test-0123456789".to_string()),
            ("DB_PASSWORD".to_string(), "hunter2hunter2".to_string()),
            ("USE_KEYRING".to_string(), "true".to_string()),
            ("LONG_TOKEN".to_string(), "sk-test-0123456789-and-more".to_string()),
        ])
    }

    #[test]
    fn names_that_mark_secrets() {
        for n in ["OPENAI_API_KEY", "github_token", "ClientSecret", "DB_PASSWORD", "AWS_CREDENTIALS", "KEY"] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["PATH", "HOME", "LANG", "MODEL"] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn strings_values_and_keys_are_redacted_short_values_are_not() {
        let r = r();
        assert_eq!(r.str("key=sk-test-0123456789, pw hunter2hunter2"), "key=[redacted:OPENAI_API_KEY], pw [redacted:DB_PASSWORD]");
        // The longer secret that contains the shorter one is replaced whole.
        assert_eq!(r.str("sk-test-0123456789-and-more!"), "[redacted:LONG_TOKEN]!");
        assert_eq!(r.str("true story"), "true story");
        assert!(matches!(r.str("nothing here"), Cow::Borrowed(_)));
        let mut v = json!({"a": ["x sk-test-0123456789 y", 1, true], "hunter2hunter2": {"b": "hunter2hunter2"}});
        r.value(&mut v);
        assert_eq!(v, json!({"a": ["x [redacted:OPENAI_API_KEY] y", 1, true], "[redacted:DB_PASSWORD]": {"b": "[redacted:DB_PASSWORD]"}}));
    }

    #[test]
    fn serde_round_trip_only_when_needed() {
        let r = r();
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct E {
            msg: String,
            n: u32,
        }
        assert_eq!(r.serde(&E { msg: "plain".into(), n: 1 }), None);
        assert_eq!(
            r.serde(&E { msg: "with \"sk-test-0123456789\"".into(), n: 2 }),
            Some(E { msg: "with \"[redacted:OPENAI_API_KEY]\"".into(), n: 2 })
        );
        let empty = Redactor::new(Vec::new());
        assert!(empty.is_empty());
        assert_eq!(empty.serde(&E { msg: "sk-test-0123456789".into(), n: 3 }), None);
    }

    #[test]
    fn registered_values_join_the_global_set() {
        let secret = "reg-secret-value-42xyz";
        assert!(!global().finds(secret));
        register("ANTHROPIC_API_KEY", secret);
        register("ANTHROPIC_API_KEY", secret);
        register("SHORT", "abc");
        assert_eq!(redact(&format!("a {secret} b")), "a [redacted:ANTHROPIC_API_KEY] b");
        assert_eq!(redact("abc"), "abc");
    }
}
