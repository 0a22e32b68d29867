//! The environment a run's children see: scripts, Loki tools, the Python bridge, MCP stdio
//! servers. One rule, decided here and nowhere else.
//!
//! A child does **not** inherit the user's environment (which holds `OPENAI_API_KEY`, `AWS_*`,
//! `GITHUB_TOKEN`, …). It starts empty and gets:
//!
//! - the **base set** ([`BASE`], [`BASE_PREFIXES`]): what any program needs to find programs and
//!   files and to speak the user's language (`PATH`, `HOME`, `LANG`, `LC_*`, `TZ`, `TERM`,
//!   `TMPDIR`, `USER`, `LOGNAME`, `SHELL`), and what finding and running the user's Python needs
//!   (`PYTHONPATH`, `PYTHONHOME`, `VIRTUAL_ENV`, `PYENV_*` for pyenv's shims);
//! - the variables the **agent file references** (the run manifest's *environment variables*:
//!   `${VAR}` in the file and its sub-files, Loki tool files' `# @env` declarations, MCP
//!   definitions' `${VAR}`s), handed to the spawn sites as a [`ChildEnv`] built once per run by
//!   `launch`. A provider key (`OPENAI_API_KEY`, …) reaches a child only this way, where the
//!   file says it goes;
//! - the names the user lists in [`OPT_IN`] (`SWITCHYARD_CHILD_ENV=NAME1,NAME2`), read when a
//!   child starts;
//! - what the engine sets for that child itself (Loki's `LLM_OUTPUT`, `GRAPH_STATE`, …, an MCP
//!   definition's own `env:` map, the process tag), set after [`ChildEnv::apply`].
//!
//! A variable that is allowed but not set is not set in the child either. A spawn site that was
//! handed nothing uses [`ChildEnv::default`]: the base set and the opt-in only.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::sync::Arc;

/// The user's list of more names children get (comma- or whitespace-separated).
pub const OPT_IN: &str = "SWITCHYARD_CHILD_ENV";

/// Names every child gets when they are set.
pub const BASE: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "SHELL",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
];

/// Prefixes of names every child gets: the locale categories (`LC_ALL`, `LC_CTYPE`, …) and
/// pyenv's settings (`PYENV_ROOT`, `PYENV_VERSION`, …), which its `python3` shim reads.
pub const BASE_PREFIXES: &[&str] = &["LC_", "PYENV_"];

/// Which variables of the engine's environment a child gets (see the module docs). Cheap to
/// clone (the names are shared).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChildEnv {
    /// The variables the agent file references, beyond the base set.
    referenced: Arc<BTreeSet<String>>,
}

impl ChildEnv {
    /// Children of a run whose file references `names`.
    pub fn new<I, S>(names: I) -> ChildEnv
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ChildEnv { referenced: Arc::new(names.into_iter().map(Into::into).collect()) }
    }

    /// The referenced names (sorted).
    pub fn referenced(&self) -> impl Iterator<Item = &str> {
        self.referenced.iter().map(String::as_str)
    }

    /// Whether a child gets `name` when it is set, given the user's [`OPT_IN`] list `opt_in`.
    pub fn passes(&self, name: &str, opt_in: &[String]) -> bool {
        is_base(name) || self.referenced.contains(name) || opt_in.iter().any(|n| n == name)
    }

    /// The variables of `env` a child gets, in `env`'s order, with `opt_in` the value of
    /// [`OPT_IN`]. Names that are not UTF-8 are never passed.
    pub fn filter(
        &self,
        env: impl IntoIterator<Item = (OsString, OsString)>,
        opt_in: Option<&OsStr>,
    ) -> Vec<(OsString, OsString)> {
        let opt_in = opt_in_names(opt_in);
        env.into_iter()
            .filter(|(k, _)| k.to_str().is_some_and(|k| self.passes(k, &opt_in)))
            .collect()
    }

    /// The variables of this process's environment a child gets now.
    pub fn vars(&self) -> Vec<(OsString, OsString)> {
        self.filter(std::env::vars_os(), std::env::var_os(OPT_IN).as_deref())
    }

    /// Give a command (std) exactly [`ChildEnv::vars`]: call it right after creating the
    /// command, before setting the child's own variables (`env_clear` would drop them).
    pub fn apply(&self, cmd: &mut std::process::Command) {
        cmd.env_clear().envs(self.vars());
    }

    /// [`ChildEnv::apply`] for a tokio command.
    pub fn apply_tokio(&self, cmd: &mut tokio::process::Command) {
        cmd.env_clear().envs(self.vars());
    }
}

/// Whether `name` is in the base set.
pub fn is_base(name: &str) -> bool {
    BASE.contains(&name) || BASE_PREFIXES.iter().any(|p| name.starts_with(p) && name.len() > p.len())
}

/// The names in an [`OPT_IN`] value: separated by commas or white space; anything that is not
/// a variable name is ignored.
pub fn opt_in_names(value: Option<&OsStr>) -> Vec<String> {
    let Some(v) = value.and_then(OsStr::to_str) else { return Vec::new() };
    v.split(|c: char| c == ',' || c.is_whitespace())
        .map(str::trim)
        .filter(|n| is_name(n))
        .map(str::to_string)
        .collect()
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The variables a tool file declares with `@env NAME …` in a comment (argc's tag, as
/// llm-functions writes it in `tools.sh`; the same tag in a `#`, `//` or `*` comment of a
/// `tools.py` / `tools.js` / `tools.ts`), each once, with the 1-based line of its first
/// declaration.
pub fn env_declarations(text: &str) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let Some(rest) = ["#", "//", "*", "/**"]
            .iter()
            .rev()
            .find_map(|c| t.strip_prefix(c))
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix("@env"))
        else {
            continue;
        };
        if !rest.starts_with(char::is_whitespace) {
            continue;
        }
        let rest = rest.trim_start();
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let name = &rest[..end];
        if is_name(name) && !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), u32::try_from(i + 1).unwrap_or(u32::MAX)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect()
    }

    fn names(v: &[(OsString, OsString)]) -> Vec<String> {
        v.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect()
    }

    const USER_ENV: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C.UTF-8"),
        ("LC_", "not a locale category"),
        ("PYENV_VERSION", "3.12"),
        ("VIRTUAL_ENV", "/home/u/venv"),
        ("OPENAI_API_KEY", "sk-secret"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
        ("GITHUB_TOKEN", "ghp_x"),
        ("ORDERS_URL", "http://127.0.0.1:9"),
        ("SWITCHYARD_PROC_TAG", "inherited-tag"),
    ];

    #[test]
    fn the_base_set_and_nothing_else_by_default() {
        let got = ChildEnv::default().filter(env(USER_ENV), None);
        assert_eq!(names(&got), ["PATH", "HOME", "LANG", "LC_ALL", "PYENV_VERSION", "VIRTUAL_ENV"]);
        assert_eq!(got[0].1, "/usr/bin", "values are passed as they are");
    }

    #[test]
    fn referenced_variables_pass_provider_keys_only_when_referenced() {
        let e = ChildEnv::new(["ORDERS_URL", "ANTHROPIC_API_KEY", "NOT_SET"]);
        let got = names(&e.filter(env(USER_ENV), None));
        assert!(got.contains(&"ORDERS_URL".to_string()) && got.contains(&"ANTHROPIC_API_KEY".to_string()), "{got:?}");
        for secret in ["OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"] {
            assert!(!got.contains(&secret.to_string()), "{secret} leaked: {got:?}");
        }
        assert!(!got.contains(&"NOT_SET".to_string()), "an unset variable stays unset");
        assert_eq!(e.referenced().collect::<Vec<_>>(), ["ANTHROPIC_API_KEY", "NOT_SET", "ORDERS_URL"]);
    }

    #[test]
    fn the_opt_in_adds_names_and_only_names() {
        let got = ChildEnv::default().filter(env(USER_ENV), Some(OsStr::new(" GITHUB_TOKEN, ORDERS_URL ,,bad-name *")));
        let got = names(&got);
        assert!(got.contains(&"GITHUB_TOKEN".to_string()) && got.contains(&"ORDERS_URL".to_string()), "{got:?}");
        assert!(!got.contains(&"OPENAI_API_KEY".to_string()), "{got:?}");
        assert_eq!(opt_in_names(Some(OsStr::new("A B\tC,D"))), ["A", "B", "C", "D"]);
        assert!(opt_in_names(Some(OsStr::new("*,1X,a-b"))).is_empty());
    }

    #[test]
    fn no_provider_key_is_in_the_base_set() {
        for key in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY", "DEEPSEEK_API_KEY", "MISTRAL_API_KEY", "GEMINI_API_KEY"] {
            assert!(!is_base(key), "{key}");
        }
    }

    #[test]
    fn a_command_gets_exactly_the_allowed_variables() {
        // `env_clear` also drops what was set on the command before: apply comes first.
        let mut cmd = std::process::Command::new("env");
        cmd.env("SET_BEFORE", "x");
        ChildEnv::default().apply(&mut cmd);
        cmd.env("SET_AFTER", "y");
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let got: Vec<&str> = text.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
        assert!(got.contains(&"SET_AFTER") && !got.contains(&"SET_BEFORE"), "{got:?}");
        let expected = ChildEnv::default().vars();
        for (k, _) in &expected {
            assert!(got.contains(&k.to_str().unwrap()), "{k:?} missing: {got:?}");
        }
        assert_eq!(got.len(), expected.len() + 1, "{got:?}");
    }

    #[test]
    fn env_declarations_of_tool_files() {
        let sh = "#!/usr/bin/env bash\n# @env GITHUB_TOKEN! the token\n# @env ORDERS_URL=http://x  where\n#@env LOW_SPACE\n# @envelope no\n# @env GITHUB_TOKEN again\necho '# @env' \n";
        let names = |t: &str| env_declarations(t).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        assert_eq!(names(sh), ["GITHUB_TOKEN", "ORDERS_URL", "LOW_SPACE"]);
        assert_eq!(env_declarations(sh)[1], ("ORDERS_URL".to_string(), 3));
        let js = "/**\n * Look it up\n * @env API_BASE the base\n */\n// @env OTHER\nexport function f() {}\n";
        assert_eq!(names(js), ["API_BASE", "OTHER"]);
        assert!(env_declarations("x = '@env NOPE'\n").is_empty());
    }
}
