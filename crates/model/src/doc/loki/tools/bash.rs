//! bash tool files: argc comment tags.

use super::{Param, ParamType, ToolDecl, Lang, CallStyle};
use serde_json::Value;
use std::path::PathBuf;

/// One argc command being collected.
#[derive(Default)]
struct Cmd {
    describe: String,
    params: Vec<Param>,
    envs: Vec<(String, String)>,
}

/// Parse a bash tool file's argc tags. Returns the tools (one per `# @cmd` function, or the root
/// command named `stem` calling `main` when there is no `@cmd`) and the names of functions that
/// carry no `@cmd`.
pub fn parse_bash(src: &str, stem: &str) -> Result<(Vec<ToolDecl>, Vec<String>), String> {
    let mut root = Cmd::default();
    let mut pending: Option<Cmd> = None;
    let mut cmds: Vec<(String, Cmd)> = Vec::new();
    let mut plain: Vec<String> = Vec::new();
    // Whether a comment line without a tag continues the last `@describe` / `@cmd` text.
    let mut continues = false;
    for (n, line) in src.lines().enumerate() {
        let lineno = n + 1;
        let t = line.trim_start();
        if let Some(body) = t.strip_prefix('#') {
            let body = body.trim();
            if let Some(tagged) = body.strip_prefix('@') {
                let (tag, rest) = match tagged.find(char::is_whitespace) {
                    Some(i) => (&tagged[..i], tagged[i..].trim()),
                    None => (tagged, ""),
                };
                continues = false;
                let target = pending.as_mut().unwrap_or(&mut root);
                match tag {
                    "describe" => {
                        root.describe = rest.to_string();
                        continues = pending.is_none();
                    }
                    "cmd" => {
                        pending = Some(Cmd {
                            describe: rest.to_string(),
                            ..Cmd::default()
                        });
                        continues = true;
                    }
                    "option" | "flag" => {
                        let p = parse_option(rest, tag == "flag")
                            .map_err(|e| format!("line {lineno}: {e}"))?;
                        target.params.push(p);
                    }
                    "env" => {
                        if let Some(env) = parse_env(rest) {
                            target.envs.push(env);
                        }
                    }
                    _ => {}
                }
            } else if continues && !body.is_empty() {
                let target = pending.as_mut().unwrap_or(&mut root);
                target.describe.push('\n');
                target.describe.push_str(body);
            } else {
                continues = false;
            }
            continue;
        }
        continues = false;
        if let Some(name) = bash_function_name(t) {
            match pending.take() {
                Some(cmd) => cmds.push((name.to_string(), cmd)),
                None if name != "main" => plain.push(name.to_string()),
                None => {}
            }
        }
    }
    let envs = root.envs.clone();
    let decl = |name: String, function: String, cmd: Cmd, extra_envs: &[(String, String)]| {
        let mut env_defaults = extra_envs.to_vec();
        env_defaults.extend(cmd.envs);
        ToolDecl {
            name,
            function,
            description: cmd.describe.trim().to_string(),
            params: cmd.params,
            file: PathBuf::new(),
            lang: Lang::Bash,
            global: false,
            style: CallStyle::Spread,
            env_defaults,
        }
    };
    if cmds.is_empty() {
        if root.describe.trim().is_empty() {
            return Ok((Vec::new(), plain));
        }
        let name = stem.replace('-', "_");
        return Ok((vec![decl(name, "main".into(), root, &[])], plain));
    }
    let tools = cmds
        .into_iter()
        .filter(|(f, _)| !f.starts_with('_'))
        .map(|(f, cmd)| decl(f.replace('-', "_"), f, cmd, &envs))
        .collect();
    Ok((tools, plain))
}

/// `name() {`, `name () {`, `function name {`, `function name() {` → `name`.
pub(super) fn bash_function_name(line: &str) -> Option<&str> {
    let t = line.trim();
    let (t, keyword) = match t.strip_prefix("function ") {
        Some(r) => (r.trim_start(), true),
        None => (t, false),
    };
    let end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.')))
        .unwrap_or(t.len());
    let name = &t[..end];
    if name.is_empty() || name.starts_with('-') {
        return None;
    }
    let rest = t[end..].trim_start();
    let parens = rest
        .strip_prefix('(')
        .is_some_and(|r| r.trim_start().starts_with(')'));
    (parens || (keyword && (rest.is_empty() || rest.starts_with('{')))).then_some(name)
}

/// `@option` / `@flag` text after the tag.
fn parse_option(rest: &str, flag: bool) -> Result<Param, String> {
    let mut s = rest.trim_start();
    // A short form first (`-f --file`).
    if s.starts_with('-') && !s.starts_with("--") {
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        let after = s[end..].trim_start();
        if after.starts_with('-') {
            s = after;
        }
    }
    let dashes = s.len() - s.trim_start_matches('-').len();
    if dashes == 0 || dashes > 2 {
        let what = if flag { "@flag" } else { "@option" };
        return Err(format!("`{what} {rest}`: expected `--name` after {what}"));
    }
    s = &s[dashes..];
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
        .unwrap_or(s.len());
    let name = &s[..end];
    if name.is_empty() {
        return Err(format!("`{rest}`: the option has no name"));
    }
    let mut p = Param::new(
        &name.replace('-', "_"),
        name,
        if flag {
            ParamType::Boolean
        } else {
            ParamType::String
        },
    );
    p.flag = flag;
    let mut multiple = false;
    let mut notation: Option<String> = None;
    let mut chars = s[end..].char_indices().peekable();
    let tail = &s[end..];
    let mut desc_from = tail.len();
    while let Some((i, c)) = chars.next() {
        match c {
            '!' => p.required = true,
            '*' | '+' => {
                multiple = true;
                p.required |= c == '+';
                // An optional value delimiter (`*,`).
                if let Some(&(_, d)) = chars.peek()
                    && matches!(d, ',' | ';' | ':' | '|' | '/')
                {
                    chars.next();
                }
            }
            '=' => {
                let rest = &tail[i + 1..];
                let (value, used) = bash_word(rest);
                p.default = (!value.starts_with('`')).then_some(value);
                for _ in 0..rest[..used].chars().count() {
                    chars.next();
                }
            }
            '[' => {
                let inner_start = i + 1;
                let close = tail[inner_start..]
                    .find(']')
                    .map(|j| inner_start + j)
                    .unwrap_or(tail.len());
                let inner = &tail[inner_start..close];
                if !inner.starts_with('`') {
                    let (with_default, list) = match inner.strip_prefix('=') {
                        Some(l) => (true, l),
                        None => (false, inner.strip_prefix('?').unwrap_or(inner)),
                    };
                    let values: Vec<String> = list
                        .split('|')
                        .map(|v| v.trim().to_string())
                        .filter(|v| !v.is_empty())
                        .collect();
                    if with_default {
                        p.default = values.first().cloned();
                    }
                    p.choices = values.into_iter().map(Value::String).collect();
                }
                for _ in 0..tail[i + 1..(close + 1).min(tail.len())].chars().count() {
                    chars.next();
                }
            }
            '<' => {
                let close = tail[i..].find('>').map(|j| i + j).unwrap_or(tail.len());
                notation.get_or_insert_with(|| tail[i + 1..close].to_string());
                for _ in 0..tail[i + 1..(close + 1).min(tail.len())].chars().count() {
                    chars.next();
                }
            }
            c if c.is_whitespace() => {
                desc_from = i;
                break;
            }
            _ => {}
        }
    }
    let mut desc = tail[desc_from.min(tail.len())..].trim_start();
    // Value notations after the name (`<INT>`, `<PATH> <PATH>`).
    while let Some(r) = desc.strip_prefix('<') {
        let Some(close) = r.find('>') else { break };
        notation.get_or_insert_with(|| r[..close].to_string());
        desc = r[close + 1..].trim_start();
    }
    p.description = desc.trim().to_string();
    if !flag {
        let scalar = match notation.as_deref() {
            Some("INT") => ParamType::Integer,
            Some("NUM") => ParamType::Number,
            _ => ParamType::String,
        };
        p.ty = if multiple {
            ParamType::Array(Box::new(scalar))
        } else {
            scalar
        };
    }
    Ok(p)
}

/// One shell-like word at the start of `s` (quotes removed) and the bytes it used.
fn bash_word(s: &str) -> (String, usize) {
    let mut chars = s.char_indices();
    match chars.next() {
        Some((_, q @ ('"' | '\''))) => match s[1..].find(q) {
            Some(j) => (s[1..1 + j].to_string(), j + 2),
            None => (s[1..].to_string(), s.len()),
        },
        Some((_, '`')) => match s[1..].find('`') {
            Some(j) => (s[..j + 2].to_string(), j + 2),
            None => (s.to_string(), s.len()),
        },
        _ => {
            let end = s
                .find(|c: char| c.is_whitespace() || c == '[' || c == '<')
                .unwrap_or(s.len());
            (s[..end].to_string(), end)
        }
    }
}

/// `@env NAME[!][=default] text` → `(NAME, default)` when a default is given.
fn parse_env(rest: &str) -> Option<(String, String)> {
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let name = &rest[..end];
    let after = rest[end..].strip_prefix('!').unwrap_or(&rest[end..]);
    let value = after.strip_prefix('=')?;
    let (value, _) = bash_word(value);
    (!name.is_empty() && !value.starts_with('`')).then(|| (name.to_string(), value))
}
