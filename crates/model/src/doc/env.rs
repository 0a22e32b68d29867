//! sherma environment interpolation: `${NAME}`, `${NAME:-default}`, `$$` (reference/sherma.md §13).

/// Whether the file at a path may read the process environment: front ends install the check
/// (the per-folder trust of `launch::trust`: a folder that is not trusted does not get your
/// `${OPENAI_API_KEY}` filled into its URLs); without one, every file may (tests, benches,
/// library use).
type EnvPolicy = std::sync::Arc<dyn Fn(&std::path::Path) -> bool + Send + Sync>;

static ENV_POLICY: std::sync::RwLock<Option<EnvPolicy>> = std::sync::RwLock::new(None);

/// Install the check [`env_allowed`] asks (replacing any earlier one).
pub fn set_env_policy(allowed: impl Fn(&std::path::Path) -> bool + Send + Sync + 'static) {
    *ENV_POLICY.write().unwrap_or_else(|p| p.into_inner()) = Some(std::sync::Arc::new(allowed));
}

/// Whether `${VAR}`s of the file at `path` are filled in from the process environment.
pub fn env_allowed(path: &std::path::Path) -> bool {
    let policy = ENV_POLICY.read().unwrap_or_else(|p| p.into_inner()).clone();
    policy.is_none_or(|allowed| allowed(path))
}

/// A placeholder found in a string: byte range in the original text and the variable name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placeholder {
    pub start: usize,
    pub end: usize,
    pub name: String,
    pub default: Option<String>,
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Interpolate `text`. `lookup` gives a variable's value. Returns the new text and the names of
/// variables that were missing (with no default). Lowercase placeholders such as
/// `${available_skills}` are left for `template()`.
pub fn interpolate(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> (String, Vec<Placeholder>) {
    if !text.contains('$') {
        return (text.to_string(), Vec::new());
    }
    let mut out = String::with_capacity(text.len());
    let mut missing = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            if i + 1 < b.len() && b[i + 1] == b'$' {
                out.push('$');
                i += 2;
                continue;
            }
            if i + 1 < b.len() && b[i + 1] == b'{' {
                if let Some(close) = text[i + 2..].find('}') {
                    let inner = &text[i + 2..i + 2 + close];
                    let (name, default) = match inner.find(":-") {
                        Some(p) => (&inner[..p], Some(&inner[p + 2..])),
                        None => (inner, None),
                    };
                    if is_name(name) {
                        let end = i + 2 + close + 1;
                        match (lookup(name), default) {
                            (Some(v), _) => out.push_str(&v),
                            (None, Some(d)) => out.push_str(d),
                            (None, None) => {
                                missing.push(Placeholder { start: i, end, name: name.to_string(), default: None });
                                out.push_str(&text[i..end]);
                            }
                        }
                        i = end;
                        continue;
                    }
                }
            }
        }
        let ch = text[i..].chars().next().unwrap_or('\u{FFFD}');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    (out, missing)
}

/// Placeholders in `text` (for diagnostics and for the editor).
pub fn placeholders(text: &str) -> Vec<Placeholder> {
    interpolate(text, &|_| None).1
}

/// Every environment reference in `text`, with or without a default (`$$` is not one).
pub fn references(text: &str) -> Vec<Placeholder> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'$' && b[i + 1] == b'$' {
            i += 2;
            continue;
        }
        if b[i] == b'$' && b[i + 1] == b'{' {
            if let Some(close) = text[i + 2..].find('}') {
                let inner = &text[i + 2..i + 2 + close];
                let (name, default) = match inner.find(":-") {
                    Some(p) => (&inner[..p], Some(inner[p + 2..].to_string())),
                    None => (inner, None),
                };
                if is_name(name) {
                    let end = i + 2 + close + 1;
                    out.push(Placeholder { start: i, end, name: name.to_string(), default });
                    i = end;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file under a folder the installed policy does not trust keeps its `${VAR}`s as written
    /// (defaults apply), each with a positioned warning; elsewhere they are filled in.
    #[test]
    fn an_untrusted_file_does_not_read_the_environment() {
        const ZONE: &str = "/switchyard-untrusted-test-zone";
        set_env_policy(|p| !p.starts_with(ZONE));
        let text = "manifest_version: 1\nskills:\n  - id: s\n    version: \"1\"\n    url: \"https://x.example/?home=${HOME}&d=${NOT_SET_SY_9:-dflt}\"\nagents: {}\n";
        let untrusted = crate::doc::load_str(std::path::Path::new(&format!("{ZONE}/a.yaml")), text);
        assert_eq!(untrusted.sherma().unwrap().skills[0].get_str("url"), Some("https://x.example/?home=${HOME}&d=dflt"));
        let w: Vec<_> = untrusted.diagnostics.iter().filter(|d| d.code == "env-untrusted").collect();
        assert_eq!(w.len(), 1, "{:?}", untrusted.diagnostics);
        assert!(w[0].message.contains("`${HOME}`") && w[0].line == 5 && !w[0].is_error(), "{:?}", w[0]);

        let trusted = crate::doc::load_str(std::path::Path::new("/elsewhere/a.yaml"), text);
        let url = trusted.sherma().unwrap().skills[0].get_str("url").unwrap().to_string();
        assert!(!url.contains("${HOME}") && url.ends_with("&d=dflt"), "{url}");
        assert!(trusted.diagnostics.iter().all(|d| d.code != "env-untrusted"));
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME_DIR" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn forms() {
        assert_eq!(interpolate("a ${HOME_DIR} b", &env).0, "a /home/u b");
        assert_eq!(interpolate("${NOPE:-fallback}", &env).0, "fallback");
        assert_eq!(interpolate("cost $$5", &env).0, "cost $5");
        assert_eq!(interpolate("${available_skills}", &env).0, "${available_skills}");
        assert_eq!(interpolate("${EMPTY:-x}", &env).0, "");
        let (out, missing) = interpolate("x ${A1} ${B_2}", &env);
        assert_eq!(out, "x ${A1} ${B_2}");
        assert_eq!(missing.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["A1", "B_2"]);
        assert_eq!(missing[0].start, 2);
        assert_eq!(interpolate("${unterminated", &env).0, "${unterminated");
        assert_eq!(interpolate("é$", &env).0, "é$");
        let refs = references("a ${HOME_DIR} $${NOT} ${X_1:-d} ${lower}");
        assert_eq!(refs.iter().map(|p| (p.name.as_str(), p.default.as_deref())).collect::<Vec<_>>(), [("HOME_DIR", None), ("X_1", Some("d"))]);
        assert_eq!(refs[0].start, 2);
    }
}
