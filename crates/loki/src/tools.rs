//! Loki llm-node tools that run as subprocesses: the agent's own tools in `tools.sh` (bash with
//! llm-functions / argc comment tags), `tools.ts` and `tools.js` (exported functions with JSDoc),
//! and the graph's `global_tools` files.
//!
//! **Declarations.** What the model is offered is read from the source, the way llm-functions and
//! Loki build their `functions.json`:
//!
//! * bash: `# @describe <text>` + `main` for a one-tool file (global tools); `# @cmd <text>`
//!   before each function for a file of several tools (agent `tools.sh`). Parameters come from
//!   `# @option --name[!|*|+][=default][[a|b]] [<INT>|<NUM>|<…>] <text>` (`!` required, `*` an
//!   array, `+` a required array, `[a|b]` an enum, `<INT>` / `<NUM>` integer / number, string
//!   otherwise) and `# @flag --name <text>` (boolean). The JSON key is the option name with `-`
//!   turned into `_`. Functions whose name starts with `_` are not tools;
//! * TypeScript / JavaScript: every exported function (`export [async] function f(…)`,
//!   `export const f = (…) =>`, `exports.f = function (…)`) whose name does not start with `_`;
//!   a global tool is its file's `run` function, named after the file. The JSDoc block above
//!   the function gives the description (the text before the first tag) and `@param` texts;
//!   types come from the signature (`string`, `number`, `boolean`, `string[]`, `Array<T>`,
//!   `'a' | 'b'`, `T | null`), else from the JSDoc type (`{Integer}`, `{string[]}`, …);
//!   `name?`, a default value or `[name]` make a parameter optional. The llm-functions form —
//!   one argument object described by `@typedef {Object} Args` + `@property` lines (or
//!   `@param {T} args.name`, or a destructured `{ a, b }`) — is called with the object.
//!
//! **Calls.** A call is a real subprocess in the agent directory, in its own process group
//! (killed on timeout or stop, children included: `script::run_supervised`), with `LLM_OUTPUT`
//! naming a fresh temp file:
//!
//! * bash: `bash -c <shim> <file> [<function>] --<option> <value>…` — the argc command line
//!   llm-functions builds (keys `_` → `-`, arrays repeat the option, `true` flags appear bare).
//!   No `argc` binary is needed: the shim defines an `argc` function whose `--argc-eval`
//!   prints the parsed result (`argc_<name>` variables, arrays for `*`/`+` options, `1` for
//!   flags, defaults, `@env` defaults) followed by the function call, so a file ending with
//!   `eval "$(argc --argc-eval "$0" "$@")"` works unchanged; a file without that line (Loki's
//!   own tools, which Loki pre-builds with argc) is sourced and the function then called.
//!   Arguments are checked first as argc would (required, enum, INT/NUM, unknown names);
//! * TypeScript / JavaScript: a small ES-module runner, run by the runtime script nodes use
//!   for `.ts` (`script::ts_runtime`: `deno run -A`, `bun` or `npx --yes tsx`; `.js` written
//!   as CommonJS prefers `node`), imports the file and calls the function with the arguments
//!   spread by parameter name (or as one object), then writes its return value to
//!   `LLM_OUTPUT` (strings as they are, other values as JSON).
//!
//! The result is the content of `LLM_OUTPUT` — stdout when the tool left it empty, `"DONE"` when
//! both are — parsed as JSON when it is JSON, else the text. A non-zero exit is an error quoting
//! the end of stderr.
//!
//! **Global tools** are looked for in `$LOKI_FUNCTIONS_DIR/tools/` (Loki's override of its
//! functions directory), then in `<config>/functions/tools/` where `<config>` is two levels above
//! the agent directory (Loki keeps agents in `<config>/agents/<name>/`), then in
//! `$LOKI_CONFIG_DIR/functions/tools/` or `~/.config/loki/functions/tools/`. A whitelist entry
//! names a global tool by its file stem (`web_search` for `web_search.sh`).

use crate::script::{
    OUTPUT_LIMIT, STDERR_TAIL_LINES, TempFile, Unfinished, on_path, run_supervised, tail_lines,
    ts_runtime,
};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Files of agent tools run as subprocesses, in lookup order (`tools.py` runs in the Python
/// bridge).
pub const AGENT_TOOL_FILES: [&str; 3] = ["tools.sh", "tools.ts", "tools.js"];

/// How long a tool may run when the run has no deadline (`settings.timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Argument lists longer than this (bytes) are not put on a bash tool's command line (the
/// kernel refuses long ones); the tool still gets every value through its `argc_*` variables.
const ARGV_LIMIT: usize = 96 * 1024;

/// The language a tool is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Bash,
    TypeScript,
    JavaScript,
}

/// A parameter's JSON type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array(Box<ParamType>),
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The key in the call's arguments and in the schema.
    pub key: String,
    /// bash: the option as declared (`string-enum`); JS/TS: the parameter's name.
    pub name: String,
    pub ty: ParamType,
    pub required: bool,
    pub description: String,
    /// Allowed values (of the items, for an array).
    pub choices: Vec<Value>,
    /// bash `@flag`.
    pub flag: bool,
    /// bash: the declared default (`--name=value`, `[=a|b]`).
    pub default: Option<String>,
}

impl Param {
    fn new(key: &str, name: &str, ty: ParamType) -> Param {
        Param {
            key: key.to_string(),
            name: name.to_string(),
            ty,
            required: false,
            description: String::new(),
            choices: Vec::new(),
            flag: false,
            default: None,
        }
    }

    /// The parameter's JSON Schema.
    pub fn schema(&self) -> Value {
        let mut s = type_schema(&self.ty);
        if !self.choices.is_empty() {
            match s.get_mut("items") {
                Some(items) => items["enum"] = Value::Array(self.choices.clone()),
                None => s["enum"] = Value::Array(self.choices.clone()),
            }
        }
        if !self.description.is_empty() {
            s["description"] = Value::String(self.description.clone());
        }
        s
    }
}

fn type_schema(ty: &ParamType) -> Value {
    match ty {
        ParamType::String => json!({"type": "string"}),
        ParamType::Integer => json!({"type": "integer"}),
        ParamType::Number => json!({"type": "number"}),
        ParamType::Boolean => json!({"type": "boolean"}),
        ParamType::Object => json!({"type": "object"}),
        ParamType::Array(inner) => json!({"type": "array", "items": type_schema(inner)}),
    }
}

/// How a JS/TS function takes its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStyle {
    /// `f(a, b)`: the values spread in declaration order.
    Spread,
    /// `f(args)`: one object.
    Object,
}

/// A tool as declared in its file.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDecl {
    /// The name the model sees.
    pub name: String,
    /// The function that runs (bash `main` or the `@cmd` function; the JS/TS export).
    pub function: String,
    pub description: String,
    pub params: Vec<Param>,
    pub file: PathBuf,
    pub lang: Lang,
    /// A global tool (a one-tool file): bash calls `main` with no sub-command argument.
    pub global: bool,
    pub style: CallStyle,
    /// bash `# @env NAME=default`: exported when the variable is not set.
    pub env_defaults: Vec<(String, String)>,
}

impl ToolDecl {
    /// The parameters' JSON Schema (an object schema; `required` always present).
    pub fn parameters(&self) -> Value {
        let mut props = Map::new();
        let mut required = Vec::new();
        for p in &self.params {
            if p.required {
                required.push(Value::String(p.key.clone()));
            }
            props.insert(p.key.clone(), p.schema());
        }
        json!({"type": "object", "properties": props, "required": required})
    }

    /// The declaration offered to the model: `{name, description, parameters}`.
    pub fn offer(&self) -> Value {
        let mut v = json!({"name": self.name, "parameters": self.parameters()});
        if !self.description.is_empty() {
            v["description"] = Value::String(self.description.clone());
        }
        v
    }
}

// ---------------------------------------------------------------------------------------------
// Finding tools
// ---------------------------------------------------------------------------------------------

/// The declarations of one file, or why they cannot be read.
#[derive(Debug, Default)]
pub struct Catalog {
    pub tools: Vec<ToolDecl>,
    /// Files that exist but could not be read or parsed: `<file>: <problem>`, with the names
    /// of the functions the file defines (`-` as `_`; none when it could not be read).
    pub problems: Vec<(String, Vec<String>)>,
    /// bash functions of `tools.sh` without a `# @cmd` (not tools).
    pub plain_functions: Vec<String>,
}

/// The agent's subprocess tools ([`AGENT_TOOL_FILES`] in `agent_dir`).
pub fn agent_tools(agent_dir: &Path) -> Catalog {
    let mut cat = Catalog::default();
    for file in AGENT_TOOL_FILES {
        let path = agent_dir.join(file);
        if !path.is_file() {
            continue;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                cat.problems
                    .push((format!("{}: {e}", path.display()), Vec::new()));
                continue;
            }
        };
        let parsed = match lang_of(&path) {
            Some(Lang::Bash) => parse_bash(&text, "tools").map(|(decls, plain)| {
                cat.plain_functions.extend(plain);
                decls
            }),
            Some(lang) => Ok(parse_js(&text, "tools", false, lang)),
            None => Ok(Vec::new()),
        };
        match parsed {
            Ok(decls) => {
                for mut d in decls {
                    d.file = path.clone();
                    if !cat.tools.iter().any(|t| t.name == d.name) {
                        cat.tools.push(d);
                    }
                }
            }
            Err(e) => {
                let defined = text
                    .lines()
                    .filter_map(bash_function_name)
                    .map(|f| f.replace('-', "_"))
                    .collect();
                cat.problems
                    .push((format!("{}: {e}", path.display()), defined));
            }
        }
    }
    cat
}

fn lang_of(path: &Path) -> Option<Lang> {
    match path
        .extension()?
        .to_string_lossy()
        .to_ascii_lowercase()
        .as_str()
    {
        "sh" => Some(Lang::Bash),
        "ts" | "mts" => Some(Lang::TypeScript),
        "js" | "mjs" | "cjs" => Some(Lang::JavaScript),
        _ => None,
    }
}

/// Where global tool files are looked for, in order (see the module docs).
pub fn global_tool_dirs(agent_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(d) = std::env::var_os("LOKI_FUNCTIONS_DIR").filter(|d| !d.is_empty()) {
        out.push(PathBuf::from(d).join("tools"));
    }
    if let Some(config) = agent_dir.parent().and_then(Path::parent) {
        out.push(config.join("functions").join("tools"));
    }
    let user_config = match std::env::var_os("LOKI_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(d) => Some(PathBuf::from(d)),
        None => std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .map(|c| c.join("loki")),
    };
    if let Some(c) = user_config {
        out.push(c.join("functions").join("tools"));
    }
    let mut seen = Vec::new();
    out.retain(|d| {
        let fresh = !seen.contains(d);
        seen.push(d.clone());
        fresh
    });
    out
}

/// The path of the global tool `file` (as listed in `global_tools`), or an error naming every
/// path looked at.
pub fn find_global_tool(agent_dir: &Path, file: &str) -> Result<PathBuf, String> {
    let as_given = Path::new(file);
    if as_given.is_absolute() {
        return if as_given.is_file() {
            Ok(as_given.to_path_buf())
        } else {
            Err(format!("global tool '{file}' not found"))
        };
    }
    let candidates: Vec<PathBuf> = global_tool_dirs(agent_dir)
        .into_iter()
        .map(|d| d.join(file))
        .collect();
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    Err(format!(
        "global tool '{file}' not found; looked in: {}. Put the file in one of these places (Loki \
         keeps global tools in <config>/functions/tools/; set LOKI_FUNCTIONS_DIR to use another \
         functions directory)",
        looked.join(", ")
    ))
}

/// The declarations of the global tool file at `path`.
pub fn global_tool_decls(path: &Path) -> Result<Vec<ToolDecl>, String> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let decls = match lang_of(path) {
        Some(Lang::Bash) => {
            parse_bash(&text, &stem)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .0
        }
        Some(lang) => parse_js(&text, &stem, true, lang),
        None => {
            return Err(format!(
                "global tool '{}': Switchyard runs global tools written in bash (.sh), TypeScript \
                 (.ts), JavaScript (.js) or Python (.py, through its Python bridge)",
                path.display()
            ));
        }
    };
    Ok(decls
        .into_iter()
        .map(|mut d| {
            d.file = path.to_path_buf();
            d.global = true;
            d
        })
        .collect())
}

/// The subprocess tool the model knows as `name`: a global tool whose file stem is `name`, else
/// an agent tool. `None` when there is none; `Some(Err)` when there is one but it cannot be used
/// (file missing, unreadable or malformed; a `tools.sh` function without `# @cmd`).
pub fn lookup<'a>(
    agent_dir: &Path,
    global_files: impl IntoIterator<Item = &'a str>,
    name: &str,
) -> Option<Result<ToolDecl, String>> {
    for file in global_files {
        if Path::new(file)
            .file_stem()
            .is_none_or(|s| s.to_string_lossy() != name)
        {
            continue;
        }
        let found = find_global_tool(agent_dir, file).and_then(|path| {
            let decls = global_tool_decls(&path)?;
            decls.into_iter().find(|d| d.name == name).ok_or_else(|| {
                format!(
                    "global tool '{}' declares no tool named '{name}' (a one-tool file needs a \
                     `# @describe` line and a `main` function, or a `run` function for JS/TS)",
                    path.display()
                )
            })
        });
        return Some(found);
    }
    let cat = agent_tools(agent_dir);
    if let Some(d) = cat.tools.into_iter().find(|d| d.name == name) {
        return Some(Ok(d));
    }
    if cat
        .plain_functions
        .iter()
        .any(|f| f.replace('-', "_") == name)
    {
        return Some(Err(format!(
            "function '{name}' in tools.sh has no `# @cmd <description>` comment above it, so it is \
             not a tool (llm-functions declares each agent tool with `# @cmd` and its `# @option` / \
             `# @flag` lines)"
        )));
    }
    // A file that does not parse answers for the functions it defines (and only for those, so
    // that other tools of the same name, such as MCP ones, still work).
    cat.problems
        .into_iter()
        .find(|(_, defined)| defined.iter().any(|f| f == name))
        .map(|(problem, _)| Err(format!("agent tool '{name}' cannot be used: {problem}")))
}

// ---------------------------------------------------------------------------------------------
// bash (argc comment tags)
// ---------------------------------------------------------------------------------------------

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
fn bash_function_name(line: &str) -> Option<&str> {
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

// ---------------------------------------------------------------------------------------------
// TypeScript / JavaScript (exports + JSDoc)
// ---------------------------------------------------------------------------------------------

/// A parsed JSDoc `@param` / `@property`.
#[derive(Debug, Default, Clone)]
struct DocParam {
    name: String,
    ty: Option<String>,
    optional: bool,
    desc: String,
}

#[derive(Debug, Default)]
struct JsDoc {
    description: String,
    params: Vec<DocParam>,
    props: Vec<DocParam>,
}

/// One parameter of a function signature.
#[derive(Debug)]
struct SigParam {
    name: String,
    ty: Option<String>,
    optional: bool,
    /// A destructured object: the names it takes.
    destructured: Option<Vec<(String, bool)>>,
}

/// Parse a JS/TS tool file: every exported function not starting with `_` (`global`: only
/// `run`, named `stem`).
pub fn parse_js(src: &str, stem: &str, global: bool, lang: Lang) -> Vec<ToolDecl> {
    let mut out = Vec::new();
    let mut doc: Option<(usize, &str)> = None;
    let mut i = 0;
    while i < src.len() {
        let line_end = src[i..].find('\n').map_or(src.len(), |n| i + n);
        let line = &src[i..line_end];
        let t = line.trim_start();
        let at = i + (line.len() - t.len());
        if t.starts_with("/*") {
            match src[at + 2..].find("*/") {
                Some(close) => {
                    let end = at + 2 + close + 2;
                    if t.starts_with("/**") {
                        doc = Some((end, &src[at..end]));
                    }
                    i = end;
                    continue;
                }
                None => break,
            }
        }
        if let Some((name, paren)) = js_declaration(t) {
            let open = at + paren;
            let attached = doc
                .filter(|(end, _)| *end <= at && src[*end..at].trim().is_empty())
                .map(|(_, d)| d);
            if let Some((inner, close)) = balanced(src, open)
                && !name.starts_with('_')
                && (!global || name == "run")
            {
                let tool_name = if global {
                    stem.replace('-', "_")
                } else {
                    name.to_string()
                };
                out.push(js_decl(&tool_name, name, inner, attached, lang));
                i = src[close..].find('\n').map_or(src.len(), |n| close + n + 1);
                doc = None;
                continue;
            }
        }
        i = line_end + 1;
    }
    out
}

/// An export declaring a function: its name and the offset of its `(` in `t`.
fn js_declaration(t: &str) -> Option<(&str, usize)> {
    let offset = |rest: &str| t.len() - rest.len();
    let value = |r: &str| -> Option<usize> {
        // After `=`: `[async] function [name](`, `[async] (`.
        let r = r.trim_start().strip_prefix('=')?.trim_start();
        let r = r.strip_prefix("async").map_or(r, str::trim_start);
        let r = match r.strip_prefix("function") {
            Some(f) => {
                let f = f.trim_start().trim_start_matches('*').trim_start();
                let e = f
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                    .unwrap_or(f.len());
                f[e..].trim_start()
            }
            None => r,
        };
        r.starts_with('(').then(|| offset(r))
    };
    if let Some(r) = t.strip_prefix("export ") {
        let r = r.trim_start();
        let r2 = r.strip_prefix("async ").map_or(r, str::trim_start);
        if let Some(f) = r2.strip_prefix("function") {
            let f = f.trim_start().trim_start_matches('*').trim_start();
            let (name, after) = js_ident(f)?;
            let after = skip_generics(after.trim_start());
            return after.starts_with('(').then(|| (name, offset(after)));
        }
        let r = r
            .strip_prefix("const ")
            .or_else(|| r.strip_prefix("let "))
            .or_else(|| r.strip_prefix("var "))?;
        let (name, after) = js_ident(r.trim_start())?;
        let after = match after.trim_start().strip_prefix(':') {
            // A typed constant (`export const f: Tool = (…) =>`): skip to the `=`.
            Some(ty) => &ty[ty.find('=')?..],
            None => after,
        };
        return value(after).map(|o| (name, o));
    }
    let r = t
        .strip_prefix("module.exports.")
        .or_else(|| t.strip_prefix("exports."))?;
    let (name, after) = js_ident(r)?;
    value(after).map(|o| (name, o))
}

fn js_ident(s: &str) -> Option<(&str, &str)> {
    let e = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    (e > 0).then(|| (&s[..e], &s[e..]))
}

fn skip_generics(s: &str) -> &str {
    if !s.starts_with('<') {
        return s;
    }
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return s[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    s
}

/// The text between the bracket at `open` and its match, and the offset after the match.
/// Strings, template literals and comments are skipped.
fn balanced(src: &str, open: usize) -> Option<(&str, usize)> {
    let bytes = src.as_bytes();
    let mut depth = 0i32;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&src[open + 1..i], i + 1));
                }
            }
            q @ (b'"' | b'\'' | b'`') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = src[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |j| i + 2 + j + 1);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Split `s` at top-level occurrences of `sep` (outside brackets, angle brackets and strings;
/// `=>` is not a closing angle bracket).
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut start = 0;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if c == q && prev != '\\' {
                quote = None;
            }
            prev = c;
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '>' if prev != '=' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
        prev = c;
    }
    out.push(&s[start..]);
    out
}

/// `s` without `//` and `/* */` comments (outside strings).
fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            ('"' | '\'' | '`', _) => {
                quote = Some(c);
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn parse_signature(inner: &str) -> Vec<SigParam> {
    let cleaned = strip_comments(inner);
    let mut out = Vec::new();
    for part in split_top(&cleaned, ',') {
        let part = part.trim();
        if part.is_empty() || part.starts_with("...") {
            continue;
        }
        if part.starts_with('{') {
            let names = match balanced(part, 0) {
                Some((pattern, end)) => {
                    let names = split_top(pattern, ',')
                        .into_iter()
                        .filter_map(|n| {
                            let n = n.trim();
                            let (name, _) = js_ident(n)?;
                            let has_default = split_top(n, '=').len() > 1;
                            Some((name.to_string(), has_default))
                        })
                        .collect();
                    let rest = part[end..].trim_start();
                    let ty = rest
                        .strip_prefix(':')
                        .map(|t| split_top(t, '=')[0].trim().to_string());
                    out.push(SigParam {
                        name: String::new(),
                        ty,
                        optional: split_top(rest, '=').len() > 1,
                        destructured: Some(names),
                    });
                    continue;
                }
                None => Vec::new(),
            };
            out.push(SigParam {
                name: String::new(),
                ty: None,
                optional: false,
                destructured: Some(names),
            });
            continue;
        }
        let Some((name, rest)) = js_ident(part) else {
            continue;
        };
        if name == "this" {
            continue;
        }
        let mut rest = rest.trim_start();
        let mut optional = false;
        if let Some(r) = rest.strip_prefix('?') {
            optional = true;
            rest = r.trim_start();
        }
        let pieces = split_top(rest, '=');
        let (annotation, has_default) = (pieces[0].trim(), pieces.len() > 1);
        let ty = annotation
            .strip_prefix(':')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        out.push(SigParam {
            name: name.to_string(),
            ty,
            optional: optional || has_default,
            destructured: None,
        });
    }
    out
}

fn parse_jsdoc(text: &str) -> JsDoc {
    let inner = text.trim().trim_start_matches("/**").trim_end_matches("*/");
    let lines: Vec<&str> = inner
        .lines()
        .map(|l| {
            let l = l.trim();
            l.strip_prefix('*')
                .map_or(l, |r| r.strip_prefix(' ').unwrap_or(r))
                .trim_end()
        })
        .collect();
    let mut doc = JsDoc::default();
    let mut description = Vec::new();
    let mut tags: Vec<String> = Vec::new();
    for l in lines {
        if l.trim_start().starts_with('@') {
            tags.push(l.trim().to_string());
        } else if let Some(last) = tags.last_mut() {
            if !l.trim().is_empty() {
                last.push('\n');
                last.push_str(l.trim());
            }
        } else {
            description.push(l);
        }
    }
    doc.description = description.join("\n").trim().to_string();
    for tag in tags {
        let (name, rest) = match tag.find(char::is_whitespace) {
            Some(i) => (&tag[1..i], tag[i..].trim()),
            None => (&tag[1..], ""),
        };
        match name {
            "param" | "arg" | "argument" => doc.params.extend(parse_doc_param(rest)),
            "property" | "prop" => doc.props.extend(parse_doc_param(rest)),
            _ => {}
        }
    }
    doc
}

/// `{type} name desc`, `{type} [name=default] desc`, `name - desc`.
fn parse_doc_param(rest: &str) -> Option<DocParam> {
    let mut s = rest.trim();
    let mut p = DocParam::default();
    if s.starts_with('{') {
        let (ty, end) = balanced(s, 0)?;
        let mut ty = ty.trim().to_string();
        if let Some(t) = ty.strip_suffix('=') {
            ty = t.to_string();
            p.optional = true;
        }
        p.ty = Some(ty);
        s = s[end..].trim_start();
    }
    if s.starts_with('[') {
        let close = s.find(']')?;
        p.name = s[1..close]
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        p.optional = true;
        s = &s[close + 1..];
    } else {
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        let mut name = &s[..end];
        if let Some(n) = name.strip_suffix('?') {
            name = n;
            p.optional = true;
        }
        p.name = name.to_string();
        s = &s[end..];
    }
    let desc = s.trim_start();
    p.desc = desc
        .strip_prefix('-')
        .map_or(desc, str::trim_start)
        .trim()
        .to_string();
    (!p.name.is_empty()).then_some(p)
}

/// A JS/TS type (signature or JSDoc) as a parameter type, its allowed values and whether it
/// admits `null` / `undefined`.
fn js_type(ty: &str) -> (ParamType, Vec<Value>, bool) {
    let mut t = ty.trim();
    while t.starts_with('(') && balanced(t, 0).is_some_and(|(_, end)| end == t.len()) {
        t = t[1..t.len() - 1].trim();
    }
    let mut nullable = false;
    if let Some(r) = t.strip_prefix('?') {
        nullable = true;
        t = r.trim();
    }
    t = t.strip_prefix('!').unwrap_or(t);
    let members: Vec<&str> = split_top(t, '|')
        .into_iter()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .collect();
    let mut kept = Vec::new();
    for m in members {
        if matches!(m, "null" | "undefined" | "void") {
            nullable = true;
        } else {
            kept.push(m);
        }
    }
    let strings: Vec<Value> = kept
        .iter()
        .filter_map(|m| string_literal(m).map(Value::String))
        .collect();
    if !kept.is_empty() && strings.len() == kept.len() {
        return (ParamType::String, strings, nullable);
    }
    let numbers: Vec<Value> = kept
        .iter()
        .filter_map(|m| serde_json::from_str::<serde_json::Number>(m).ok())
        .map(Value::Number)
        .collect();
    if !kept.is_empty() && numbers.len() == kept.len() {
        let ty = if numbers.iter().all(|n| n.is_i64() || n.is_u64()) {
            ParamType::Integer
        } else {
            ParamType::Number
        };
        return (ty, numbers, nullable);
    }
    if !kept.is_empty() && kept.iter().all(|m| matches!(*m, "true" | "false")) {
        return (ParamType::Boolean, Vec::new(), nullable);
    }
    let Some(first) = kept.first() else {
        return (ParamType::String, Vec::new(), nullable);
    };
    let (ty, choices) = single_js_type(first);
    (ty, choices, nullable)
}

fn single_js_type(t: &str) -> (ParamType, Vec<Value>) {
    if let Some(inner) = t.strip_suffix("[]") {
        let (item, choices, _) = js_type(inner);
        return (ParamType::Array(Box::new(item)), choices);
    }
    for generic in ["Array<", "ReadonlyArray<"] {
        if let Some(inner) = t.strip_prefix(generic).and_then(|r| r.strip_suffix('>')) {
            let (item, choices, _) = js_type(inner);
            return (ParamType::Array(Box::new(item)), choices);
        }
    }
    let ty = match t {
        "string" | "String" => ParamType::String,
        "number" | "Number" | "float" => ParamType::Number,
        "integer" | "Integer" | "int" | "bigint" => ParamType::Integer,
        "boolean" | "Boolean" | "bool" => ParamType::Boolean,
        "object" | "Object" => ParamType::Object,
        "array" | "Array" => ParamType::Array(Box::new(ParamType::String)),
        _ if t.starts_with('{') || t.starts_with("Record<") || t.starts_with("Map<") => {
            ParamType::Object
        }
        _ => ParamType::String,
    };
    (ty, Vec::new())
}

fn string_literal(m: &str) -> Option<String> {
    let q = m.chars().next()?;
    if !matches!(q, '"' | '\'' | '`') || m.len() < 2 || !m.ends_with(q) {
        return None;
    }
    Some(m[1..m.len() - 1].to_string())
}

fn js_decl(tool_name: &str, function: &str, sig: &str, doc: Option<&str>, lang: Lang) -> ToolDecl {
    let doc = doc.map(parse_jsdoc).unwrap_or_default();
    let sig = parse_signature(sig);
    let dotted: Vec<DocParam> = doc
        .params
        .iter()
        .filter_map(|p| {
            let (_, field) = p.name.split_once('.')?;
            Some(DocParam {
                name: field.to_string(),
                ..p.clone()
            })
        })
        .collect();
    let object_style = sig.len() == 1
        && (sig[0].destructured.is_some() || !doc.props.is_empty() || !dotted.is_empty());
    let from_doc = |d: &DocParam| {
        let (ty, choices, nullable) = js_type(d.ty.as_deref().unwrap_or("string"));
        let mut p = Param::new(&d.name, &d.name, ty);
        p.choices = choices;
        p.required = !(d.optional || nullable);
        p.description = d.desc.clone();
        p
    };
    let params: Vec<Param> = if object_style {
        let fields: &[DocParam] = if !doc.props.is_empty() {
            &doc.props
        } else {
            &dotted
        };
        if !fields.is_empty() {
            fields.iter().map(from_doc).collect()
        } else {
            sig[0]
                .destructured
                .iter()
                .flatten()
                .map(|(name, has_default)| {
                    let mut p = Param::new(name, name, ParamType::String);
                    p.required = !has_default;
                    p
                })
                .collect()
        }
    } else {
        sig.iter()
            .filter(|s| s.destructured.is_none())
            .map(|s| {
                let d = doc.params.iter().find(|d| d.name == s.name);
                let ty_text =
                    s.ty.as_deref()
                        .or(d.and_then(|d| d.ty.as_deref()))
                        .unwrap_or("string");
                let (ty, choices, nullable) = js_type(ty_text);
                let mut p = Param::new(&s.name, &s.name, ty);
                p.choices = choices;
                p.required = !(s.optional || nullable || d.is_some_and(|d| d.optional));
                p.description = d.map(|d| d.desc.clone()).unwrap_or_default();
                p
            })
            .collect()
    };
    ToolDecl {
        name: tool_name.to_string(),
        function: function.to_string(),
        description: doc.description,
        params,
        file: PathBuf::new(),
        lang,
        global: false,
        style: if object_style {
            CallStyle::Object
        } else {
            CallStyle::Spread
        },
        env_defaults: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// What a call produced: the result (or error) and, for the run log, what the tool printed that
/// is not its result (stderr; stdout when the result came through `LLM_OUTPUT`).
pub struct CallOutcome {
    pub result: Result<Value, String>,
    pub log: Option<String>,
}

/// Where a call runs.
pub struct CallEnv<'a> {
    pub agent_dir: &'a Path,
    pub timeout: Duration,
    pub stop: Option<&'a AtomicBool>,
}

/// Run `decl` with the model's `args` (a JSON object, or null for none).
pub fn call(decl: &ToolDecl, args: &Value, env: &CallEnv<'_>) -> CallOutcome {
    let fail = |e: String| CallOutcome {
        result: Err(e),
        log: None,
    };
    let args = match args {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            _ => {
                return fail(format!(
                    "tool '{}' takes a JSON object of arguments, got {args}",
                    decl.name
                ));
            }
        },
        other => {
            return fail(format!(
                "tool '{}' takes a JSON object of arguments, got {other}",
                decl.name
            ));
        }
    };
    let started = Instant::now();
    let output = match TempFile::create("tool-output", "", b"") {
        Ok(f) => f,
        Err(e) => {
            return fail(format!(
                "tool '{}': cannot create its LLM_OUTPUT file: {e}",
                decl.name
            ));
        }
    };
    let workdir = env
        .agent_dir
        .canonicalize()
        .unwrap_or_else(|_| env.agent_dir.to_path_buf());
    let file = decl
        .file
        .canonicalize()
        .unwrap_or_else(|_| decl.file.clone());
    // Kept alive until the process ends.
    let mut temps: Vec<TempFile> = Vec::new();
    let (program, mut cmd) = match decl.lang {
        Lang::Bash => match bash_command(decl, &file, &args, &mut temps) {
            Ok(c) => c,
            Err(e) => return fail(e),
        },
        Lang::TypeScript | Lang::JavaScript => match js_command(decl, &file, &args, &mut temps) {
            Ok(c) => c,
            Err(e) => return fail(e),
        },
    };
    cmd.current_dir(&workdir)
        .env("LLM_OUTPUT", output.path())
        .env("LLM_AGENT_DATA_DIR", &workdir)
        .env("LLM_AGENT_ROOT_DIR", &workdir);
    if let Some(agent) = workdir.file_name() {
        cmd.env("LLM_AGENT_NAME", agent);
    }
    if decl.global {
        cmd.env("LLM_TOOL_NAME", &decl.name);
    } else {
        cmd.env("LLM_AGENT_FUNC", &decl.function);
        if let Some(config) = workdir.parent().and_then(Path::parent) {
            cmd.env("LLM_ROOT_DIR", config);
        }
    }
    if let Some(utils) = global_tool_dirs(&workdir)
        .into_iter()
        .filter_map(|d| d.parent().map(|f| f.join("utils").join("prompt-utils.sh")))
        .find(|p| p.is_file())
    {
        cmd.env("LLM_PROMPT_UTILS_FILE", utils);
    }
    let done = match run_supervised(&mut cmd, started + env.timeout, env.stop) {
        Ok(d) => d,
        Err(Unfinished::Spawn(e)) => {
            let mut m = format!(
                "tool '{}' could not be started with `{program}`: {e}",
                decl.name
            );
            if e.kind() == std::io::ErrorKind::NotFound {
                m.push_str(&format!("; install `{program}` or make sure it is on PATH"));
            }
            return fail(m);
        }
        Err(Unfinished::Timeout) => {
            return fail(format!(
                "tool '{}' timed out after {}; it and its child processes were killed",
                decl.name,
                fmt_secs(env.timeout)
            ));
        }
        Err(Unfinished::Stopped) => {
            return fail(format!(
                "tool '{}' was killed (with its child processes) because the run was stopped",
                decl.name
            ));
        }
    };
    let stdout = String::from_utf8_lossy(&done.stdout).into_owned();
    let stderr = done.stderr;
    if !done.status.success() {
        let why = match (
            done.status.code(),
            std::os::unix::process::ExitStatusExt::signal(&done.status),
        ) {
            (Some(c), _) => format!("failed with exit code {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            _ => "failed".to_string(),
        };
        let mut m = format!("tool '{}' ({}) {why}", decl.name, decl.file.display());
        let err_tail = tail_lines(&stderr, STDERR_TAIL_LINES);
        let out_tail = tail_lines(&stdout, STDERR_TAIL_LINES);
        if !err_tail.is_empty() {
            m.push_str(&format!("; last lines of stderr:\n{err_tail}"));
        } else if !out_tail.is_empty() {
            m.push_str(&format!("; no stderr, last lines of stdout:\n{out_tail}"));
        } else {
            m.push_str(" (no output)");
        }
        return fail(m);
    }
    let written = match std::fs::read(output.path()) {
        Ok(mut bytes) => {
            bytes.truncate(OUTPUT_LIMIT);
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(_) => String::new(),
    };
    let (text, log) = if written.trim().is_empty() {
        (stdout.as_str(), stderr.clone())
    } else {
        let mut log = stdout.clone();
        if !stderr.is_empty() {
            if !log.is_empty() && !log.ends_with('\n') {
                log.push('\n');
            }
            log.push_str(&stderr);
        }
        (written.as_str(), log)
    };
    let text = text.trim_end();
    let result = if text.trim().is_empty() {
        Value::String("DONE".into())
    } else {
        serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_string()))
    };
    CallOutcome {
        result: Ok(result),
        log: (!log.trim().is_empty()).then_some(log),
    }
}

fn fmt_secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

/// The bash shim: an `argc` whose `--argc-eval` prints the precomputed parse, the tool file
/// sourced with the command line, and the function called when the file did not ask argc.
const BASH_SHIM: &str = r#"argc() {
    if [ "${1-}" = "--argc-eval" ]; then
        cat "$SWITCHYARD_ARGC_EVAL_FILE"
    else
        command argc "$@"
    fi
}
source "$0" "$@"
if [ -z "${__switchyard_argc_done-}" ]; then
    eval "$(cat "$SWITCHYARD_ARGC_EVAL_FILE")"
fi
"#;

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A JSON value as the text argc would get on the command line.
fn arg_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Check one scalar value against its parameter, as argc does.
fn check_value(tool: &str, p: &Param, ty: &ParamType, v: &Value) -> Result<String, String> {
    let text = arg_text(v);
    let ok = match ty {
        ParamType::Integer => text.trim().parse::<i64>().is_ok(),
        ParamType::Number => text.trim().parse::<f64>().is_ok(),
        _ => true,
    };
    if !ok {
        let what = if *ty == ParamType::Integer {
            "an integer"
        } else {
            "a number"
        };
        return Err(format!(
            "tool '{tool}': argument '{}' must be {what}, got {v}",
            p.key
        ));
    }
    if !p.choices.is_empty() && !p.choices.iter().any(|c| arg_text(c) == text) {
        let list: Vec<String> = p.choices.iter().map(arg_text).collect();
        return Err(format!(
            "tool '{tool}': argument '{}' must be one of {}, got {v}",
            p.key,
            list.join(", ")
        ));
    }
    Ok(text)
}

/// The argc parse of `args` for `decl`: the command line and the eval text.
fn argc_parse(decl: &ToolDecl, args: &Map<String, Value>) -> Result<(Vec<String>, String), String> {
    let tool = &decl.name;
    for key in args.keys() {
        if !decl.params.iter().any(|p| &p.key == key || p.name == *key) {
            let known: Vec<&str> = decl.params.iter().map(|p| p.key.as_str()).collect();
            return Err(format!(
                "tool '{tool}': unknown argument '{key}' (it takes: {})",
                if known.is_empty() {
                    "no arguments".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    let mut argv: Vec<String> = Vec::new();
    if !decl.global {
        argv.push(decl.function.clone());
    }
    let mut eval = String::from("__switchyard_argc_done=1\n");
    eval.push_str(&format!("argc__fn={}\n", shell_quote(&decl.function)));
    for p in &decl.params {
        let var = format!("argc_{}", p.name.replace(['-', '.', ':'], "_"));
        let v = args
            .get(&p.key)
            .or_else(|| args.get(&p.name))
            .filter(|v| !v.is_null());
        if p.flag {
            let on = match v {
                Some(Value::Bool(b)) => *b,
                Some(Value::String(s)) => !matches!(s.as_str(), "" | "false" | "0"),
                Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
                Some(_) => true,
                None => false,
            };
            if on {
                argv.push(format!("--{}", p.name));
                eval.push_str(&format!("{var}=1\n"));
            }
            continue;
        }
        let Some(v) = v else {
            if p.required {
                return Err(format!(
                    "tool '{tool}': missing required argument '{}'",
                    p.key
                ));
            }
            if let Some(d) = &p.default {
                eval.push_str(&format!("{var}={}\n", shell_quote(d)));
            }
            continue;
        };
        match &p.ty {
            ParamType::Array(item) => {
                let items: Vec<&Value> = match v {
                    Value::Array(a) => a.iter().filter(|x| !x.is_null()).collect(),
                    one => vec![one],
                };
                if items.is_empty() && p.required {
                    return Err(format!(
                        "tool '{tool}': argument '{}' needs at least one value",
                        p.key
                    ));
                }
                let mut quoted = Vec::new();
                for x in items {
                    let text = check_value(tool, p, item, x)?;
                    argv.push(format!("--{}", p.name));
                    argv.push(text.clone());
                    quoted.push(shell_quote(&text));
                }
                eval.push_str(&format!("{var}=( {} )\n", quoted.join(" ")));
            }
            ty => {
                if v.is_array() {
                    return Err(format!(
                        "tool '{tool}': argument '{}' takes one value, got a list: {v}",
                        p.key
                    ));
                }
                let text = check_value(tool, p, ty, v)?;
                argv.push(format!("--{}", p.name));
                argv.push(text.clone());
                eval.push_str(&format!("{var}={}\n", shell_quote(&text)));
            }
        }
    }
    for (name, default) in &decl.env_defaults {
        eval.push_str(&format!(
            "if [ -z \"${{{name}+x}}\" ]; then export {name}={}; fi\n",
            shell_quote(default)
        ));
    }
    eval.push_str("argc__positionals=()\n");
    eval.push_str(&format!("{}\n", shell_quote(&decl.function)));
    Ok((argv, eval))
}

fn bash_command(
    decl: &ToolDecl,
    file: &Path,
    args: &Map<String, Value>,
    temps: &mut Vec<TempFile>,
) -> Result<(String, Command), String> {
    let (mut argv, eval) = argc_parse(decl, args)?;
    let eval_file = TempFile::create("argc-eval", ".sh", eval.as_bytes())
        .map_err(|e| format!("tool '{}': cannot write its arguments: {e}", decl.name))?;
    let mut cmd = Command::new("bash");
    if argv.iter().map(|a| a.len() + 1).sum::<usize>() > ARGV_LIMIT
        || argv.iter().any(|a| a.contains('\0'))
    {
        argv.truncate(usize::from(!decl.global));
    }
    cmd.arg("-c")
        .arg(BASH_SHIM)
        .arg(file)
        .args(&argv)
        .env("SWITCHYARD_ARGC_EVAL_FILE", eval_file.path());
    temps.push(eval_file);
    Ok(("bash".to_string(), cmd))
}

/// The ES-module runner for JS/TS tools (see the module docs).
const JS_RUNNER: &str = r#"import { readFileSync, writeFileSync } from "node:fs";
import process from "node:process";
import { pathToFileURL } from "node:url";

const env = process.env;
try {
    const file = env.SWITCHYARD_TOOL_FILE;
    const name = env.SWITCHYARD_TOOL_FUNCTION;
    const args = JSON.parse(readFileSync(env.LLM_TOOL_DATA_FILE, "utf8"));
    const mod = await import(pathToFileURL(file).href);
    let fn = mod[name];
    if (typeof fn !== "function" && mod.default && typeof mod.default[name] === "function") {
        fn = mod.default[name];
    }
    if (typeof fn !== "function") {
        throw new Error(`${file} exports no function '${name}'`);
    }
    const spread = env.SWITCHYARD_TOOL_PARAMS ? JSON.parse(env.SWITCHYARD_TOOL_PARAMS) : null;
    const value = await (spread ? fn(...spread.map((k) => args[k])) : fn(args));
    if (value !== undefined && value !== null) {
        const text = typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value);
        writeFileSync(env.LLM_OUTPUT, text);
    }
} catch (err) {
    process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
}
"#;

/// The program (and its leading arguments) that runs a JS/TS tool file.
fn js_runtime(decl: &ToolDecl, file: &Path) -> Result<(String, Vec<String>), String> {
    let node = || on_path("node").map(|p| (p.to_string_lossy().into_owned(), Vec::new()));
    let found = match decl.lang {
        Lang::TypeScript => ts_runtime(),
        _ => {
            // CommonJS (`exports.f = …`, the llm-functions form) is node's; ES modules go to the
            // TypeScript runtimes, which take both forms.
            let src = std::fs::read_to_string(file).unwrap_or_default();
            let esm = src.lines().any(|l| l.trim_start().starts_with("export "))
                || file.extension().is_some_and(|e| e == "mjs");
            if esm {
                ts_runtime().or_else(node)
            } else {
                node().or_else(ts_runtime)
            }
        }
    };
    found.ok_or_else(|| {
        let what = if decl.lang == Lang::TypeScript {
            "TypeScript"
        } else {
            "JavaScript"
        };
        format!(
            "tool '{}' is {what} but none of `deno`, `bun`, `npx` (for tsx){} is on PATH; install \
             Deno, Bun or Node.js",
            decl.name,
            if decl.lang == Lang::JavaScript {
                ", `node`"
            } else {
                ""
            }
        )
    })
}

fn js_command(
    decl: &ToolDecl,
    file: &Path,
    args: &Map<String, Value>,
    temps: &mut Vec<TempFile>,
) -> Result<(String, Command), String> {
    let (program, mut leading) = js_runtime(decl, file)?;
    let io = |e: std::io::Error| format!("tool '{}': cannot write its runner: {e}", decl.name);
    let runner = TempFile::create("tool-runner", ".mjs", JS_RUNNER.as_bytes()).map_err(io)?;
    let data = serde_json::to_vec(&Value::Object(args.clone())).unwrap_or_else(|_| b"{}".to_vec());
    let data = TempFile::create("tool-args", ".json", &data).map_err(io)?;
    leading.push(runner.path().to_string_lossy().into_owned());
    let mut cmd = Command::new(&program);
    cmd.args(&leading)
        .env("SWITCHYARD_TOOL_FILE", file)
        .env("SWITCHYARD_TOOL_FUNCTION", &decl.function)
        .env("LLM_TOOL_DATA_FILE", data.path());
    match decl.style {
        CallStyle::Spread => {
            let names: Vec<&str> = decl.params.iter().map(|p| p.name.as_str()).collect();
            cmd.env(
                "SWITCHYARD_TOOL_PARAMS",
                serde_json::to_string(&names).unwrap_or_else(|_| "[]".into()),
            );
        }
        CallStyle::Object => {
            cmd.env_remove("SWITCHYARD_TOOL_PARAMS");
        }
    }
    temps.push(runner);
    temps.push(data);
    Ok((program, cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &str) -> ToolDecl {
        let (mut d, _) = parse_bash(src, "demo").unwrap();
        assert_eq!(d.len(), 1, "{d:?}");
        d.remove(0)
    }

    #[test]
    fn bash_global_tool_with_every_kind_of_option() {
        let src = r#"#!/usr/bin/env bash
set -e

# @describe Demonstrate how to create a tool using Bash.
# It spans two lines.
# @option --string!                  Define a required string property
# @option --string-enum![foo|bar]    Define a required string property with enum
# @option --string-optional          Define a optional string property
# @flag --boolean                    Define a boolean property
# @option --integer! <INT>           Define a required integer property
# @option --number! <NUM>            Define a required number property
# @option --array+ <VALUE>           Define a required string array property
# @option --array-optional*          Define a optional string array property
# @option -l --level=info[=info|debug] The level
# @option --ids*,<INT>               Integer ids

# @env LLM_OUTPUT=/dev/stdout The output path

main() {
    echo hi >> "$LLM_OUTPUT"
}

eval "$(argc --argc-eval "$0" "$@")"
"#;
        let d = one(src);
        assert_eq!(d.name, "demo");
        assert_eq!(d.function, "main");
        assert_eq!(
            d.description,
            "Demonstrate how to create a tool using Bash.\nIt spans two lines."
        );
        assert_eq!(
            d.env_defaults,
            [("LLM_OUTPUT".to_string(), "/dev/stdout".to_string())]
        );
        assert_eq!(
            d.parameters(),
            json!({
                "type": "object",
                "properties": {
                    "string": {"type": "string", "description": "Define a required string property"},
                    "string_enum": {"type": "string", "enum": ["foo", "bar"], "description": "Define a required string property with enum"},
                    "string_optional": {"type": "string", "description": "Define a optional string property"},
                    "boolean": {"type": "boolean", "description": "Define a boolean property"},
                    "integer": {"type": "integer", "description": "Define a required integer property"},
                    "number": {"type": "number", "description": "Define a required number property"},
                    "array": {"type": "array", "items": {"type": "string"}, "description": "Define a required string array property"},
                    "array_optional": {"type": "array", "items": {"type": "string"}, "description": "Define a optional string array property"},
                    "level": {"type": "string", "enum": ["info", "debug"], "description": "The level"},
                    "ids": {"type": "array", "items": {"type": "integer"}, "description": "Integer ids"},
                },
                "required": ["string", "string_enum", "integer", "number", "array"],
            })
        );
        let level = d.params.iter().find(|p| p.key == "level").unwrap();
        assert_eq!(level.default.as_deref(), Some("info"));
        assert!(d.params.iter().find(|p| p.key == "boolean").unwrap().flag);
    }

    #[test]
    fn bash_agent_tools_are_the_cmd_functions() {
        let src = r#"#!/usr/bin/env bash
set -e

# @env LLM_OUTPUT=/dev/stdout The output path

# @cmd Create a new file at the specified path with the given contents.
# @option --path! The path where the file should be created
# @option --contents! The contents of the file
# shellcheck disable=SC2154
fs_create() {
    printf "%s" "$argc_contents" > "$argc_path"
}

# @cmd Classify a source
# @option --kind![=web|paper|other] What it is
# @flag -v --verbose Say more
function classify-source {
    :
}

helper() { :; }

# @cmd Internal
_private() { :; }
"#;
        let (d, plain) = parse_bash(src, "tools").unwrap();
        let names: Vec<(&str, &str)> = d
            .iter()
            .map(|t| (t.name.as_str(), t.function.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("fs_create", "fs_create"),
                ("classify_source", "classify-source")
            ]
        );
        assert_eq!(plain, ["helper"]);
        assert_eq!(
            d[0].description,
            "Create a new file at the specified path with the given contents."
        );
        assert_eq!(d[0].parameters()["required"], json!(["path", "contents"]));
        assert_eq!(
            d[1].params[0].choices,
            [json!("web"), json!("paper"), json!("other")]
        );
        assert_eq!(d[1].params[0].default.as_deref(), Some("web"));
        assert_eq!(d[1].params[1].key, "verbose");
        assert_eq!(d[1].params[1].ty, ParamType::Boolean);
        // The file-level `@env` reaches every command.
        assert_eq!(
            d[1].env_defaults,
            [("LLM_OUTPUT".to_string(), "/dev/stdout".to_string())]
        );
    }

    #[test]
    fn bash_errors_and_files_without_tools() {
        let e =
            parse_bash("# @cmd Bad\n# @option path the path\nf() { :; }\n", "tools").unwrap_err();
        assert!(e.contains("line 2") && e.contains("--name"), "{e}");
        let (d, plain) = parse_bash("main() { echo hi; }\n", "x").unwrap();
        assert!(d.is_empty() && plain.is_empty());
    }

    #[test]
    fn argc_parse_builds_the_command_line_and_the_variables() {
        let src = "# @cmd Do it\n# @option --the-path! p\n# @option --n <INT> n\n# @option --tags* t\n# @option --mode[=a|b] m\n# @flag --dry-run d\ndo_it() { :; }\n";
        let (d, _) = parse_bash(src, "tools").unwrap();
        let d = &d[0];
        let args = json!({"the_path": "it's here", "n": 3, "tags": ["x", "y z"], "dry_run": true});
        let (argv, eval) = argc_parse(d, args.as_object().unwrap()).unwrap();
        assert_eq!(
            argv,
            [
                "do_it",
                "--the-path",
                "it's here",
                "--n",
                "3",
                "--tags",
                "x",
                "--tags",
                "y z",
                "--dry-run"
            ]
        );
        assert!(eval.contains("argc_the_path='it'\\''s here'\n"), "{eval}");
        assert!(eval.contains("argc_tags=( 'x' 'y z' )\n"), "{eval}");
        assert!(eval.contains("argc_dry_run=1\n"), "{eval}");
        assert!(eval.contains("argc_mode='a'\n"), "{eval}");
        assert!(eval.ends_with("'do_it'\n"), "{eval}");

        let bad = |args: Value| argc_parse(d, args.as_object().unwrap()).unwrap_err();
        assert!(bad(json!({})).contains("missing required argument 'the_path'"));
        assert!(bad(json!({"the_path": "p", "n": "three"})).contains("'n' must be an integer"));
        assert!(bad(json!({"the_path": "p", "mode": "c"})).contains("must be one of a, b"));
        assert!(bad(json!({"the_path": "p", "other": 1})).contains("unknown argument 'other'"));
        assert!(bad(json!({"the_path": ["a", "b"]})).contains("takes one value"));
    }

    #[test]
    fn typescript_exported_functions_with_jsdoc() {
        let src = r#"
import { readFileSync } from "node:fs";

/**
 * Search the catalogue.
 *
 * @param query - The search query string
 * @param format - Output format
 * @param count - Maximum results to return
 * @param verbose - Enable verbose output
 * @param tags - List of tags to filter by
 * @param language - Optional language filter
 * @param extra_tags - Optional extra tags
 */
export async function search(
  query: string,
  format: "json" | "csv",
  count: number,
  verbose: boolean,
  tags: string[],
  language?: string,
  extra_tags: Array<string> | null = null,
): Promise<string> {
  return `${query}`;
}

/** Count things. @param n how many */
export const count_up = (n: number = 1) => n + 1;

function notExported(a: string) {}

/** Hidden */
export function _helper() {}
"#;
        let d = parse_js(src, "tools", false, Lang::TypeScript);
        let names: Vec<&str> = d.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["search", "count_up"]);
        assert_eq!(d[0].description, "Search the catalogue.");
        assert_eq!(d[0].style, CallStyle::Spread);
        assert_eq!(
            d[0].parameters(),
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "The search query string"},
                    "format": {"type": "string", "enum": ["json", "csv"], "description": "Output format"},
                    "count": {"type": "number", "description": "Maximum results to return"},
                    "verbose": {"type": "boolean", "description": "Enable verbose output"},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "List of tags to filter by"},
                    "language": {"type": "string", "description": "Optional language filter"},
                    "extra_tags": {"type": "array", "items": {"type": "string"}, "description": "Optional extra tags"},
                },
                "required": ["query", "format", "count", "verbose", "tags"],
            })
        );
        assert_eq!(d[1].params[0].ty, ParamType::Number);
        assert!(!d[1].params[0].required);
    }

    #[test]
    fn javascript_llm_functions_forms() {
        // A global tool: `run` with an Args typedef, named after the file.
        let src = r#"
/**
 * Demonstrate how to create a tool using Javascript and how to use comments.
 * @typedef {Object} Args
 * @property {string} string - Define a required string property
 * @property {'foo'|'bar'} string_enum - Define a required string property with enum
 * @property {string} [string_optional] - Define a optional string property
 * @property {boolean} boolean - Define a required boolean property
 * @property {Integer} integer - Define a required integer property
 * @property {number} number - Define a required number property
 * @property {string[]} array - Define a required string array property
 * @property {string[]} [array_optional] - Define a optional string array property
 * @param {Args} args
 */
exports.run = function (args) {
  return args;
}

/** Not the tool of a global file. */
exports.other = function (a) {}
"#;
        let d = parse_js(src, "demo_js", true, Lang::JavaScript);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].name.as_str(), d[0].function.as_str()),
            ("demo_js", "run")
        );
        assert_eq!(d[0].style, CallStyle::Object);
        let p = d[0].parameters();
        assert_eq!(
            p["required"],
            json!([
                "string",
                "string_enum",
                "boolean",
                "integer",
                "number",
                "array"
            ])
        );
        assert_eq!(p["properties"]["integer"]["type"], json!("integer"));
        assert_eq!(
            p["properties"]["string_enum"]["enum"],
            json!(["foo", "bar"])
        );
        assert_eq!(
            p["properties"]["array_optional"],
            json!({"type": "array", "items": {"type": "string"}, "description": "Define a optional string array property"})
        );

        // Agent tools in CommonJS, typed by JSDoc; a destructured argument object.
        let src = r#"
/**
 * Get the weather.
 * @param {string} city The city
 * @param {number=} days How many days
 * @param {('c'|'f')} [unit] Unit
 */
exports.get_weather = async function getWeather(city, days, unit) {};

/**
 * Book it.
 * @param {object} args
 * @param {string} args.when When
 * @param {Integer} [args.seats] Seats
 */
module.exports.book = (args) => {};

/** Tag it. */
export function tag({ name, colour = "red" }) {}
"#;
        let d = parse_js(src, "tools", false, Lang::JavaScript);
        let names: Vec<&str> = d.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["get_weather", "book", "tag"]);
        assert_eq!(d[0].parameters()["required"], json!(["city"]));
        assert_eq!(
            d[0].parameters()["properties"]["unit"]["enum"],
            json!(["c", "f"])
        );
        assert_eq!(d[1].style, CallStyle::Object);
        assert_eq!(
            d[1].parameters()["properties"]["seats"],
            json!({"type": "integer", "description": "Seats"})
        );
        assert_eq!(d[1].parameters()["required"], json!(["when"]));
        assert_eq!(d[2].style, CallStyle::Object);
        assert_eq!(d[2].parameters()["required"], json!(["name"]));
    }

    #[test]
    fn js_types() {
        let t = |s: &str| js_type(s);
        assert_eq!(t("string"), (ParamType::String, vec![], false));
        assert_eq!(t("number | undefined"), (ParamType::Number, vec![], true));
        assert_eq!(
            t("1 | 2 | 3"),
            (
                ParamType::Integer,
                vec![json!(1), json!(2), json!(3)],
                false
            )
        );
        assert_eq!(
            t("('a' | 'b')[]"),
            (
                ParamType::Array(Box::new(ParamType::String)),
                vec![json!("a"), json!("b")],
                false
            )
        );
        assert_eq!(
            t("Array<number>"),
            (ParamType::Array(Box::new(ParamType::Number)), vec![], false)
        );
        assert_eq!(
            t("Record<string, number>"),
            (ParamType::Object, vec![], false)
        );
        assert_eq!(t("?Integer"), (ParamType::Integer, vec![], true));
        assert_eq!(t("(x: number) => void"), (ParamType::String, vec![], false));
    }

    #[test]
    fn calls_pass_hostile_values_verbatim_and_say_done_when_silent() {
        let dir = std::env::temp_dir().join(format!("switchyard-lt-call-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("tools.sh"),
            "# @cmd Echo\n# @option --text! t\necho_it() { printf '%s' \"$argc_text\" >> \"$LLM_OUTPUT\"; }\n\n\
             # @cmd Quiet\nquiet() { :; }\n",
        )
        .unwrap();
        let cat = agent_tools(&dir);
        assert!(cat.problems.is_empty(), "{:?}", cat.problems);
        // A malformed tools.sh answers only for the functions it defines.
        std::fs::write(
            dir.join("tools.sh"),
            "# @cmd Bad\n# @option oops\nbad_one() { :; }\n",
        )
        .unwrap();
        let e = lookup(&dir, [], "bad_one").unwrap().unwrap_err();
        assert!(
            e.starts_with("agent tool 'bad_one' cannot be used: ") && e.contains("line 2"),
            "{e}"
        );
        assert!(lookup(&dir, [], "some_mcp_tool").is_none());
        std::fs::write(
            dir.join("tools.sh"),
            "# @cmd Echo\n# @option --text! t\necho_it() { printf '%s' \"$argc_text\" >> \"$LLM_OUTPUT\"; }\n\n\
             # @cmd Quiet\nquiet() { :; }\n",
        )
        .unwrap();
        let env = CallEnv {
            agent_dir: &dir,
            timeout: Duration::from_secs(20),
            stop: None,
        };
        let hostile = "it's $(touch pwned) `touch pwned2` \"q\" ;|&\nline2 \\ end";
        let out = call(&cat.tools[0], &json!({"text": hostile}), &env);
        assert_eq!(out.result, Ok(Value::String(hostile.to_string())));
        assert!(!dir.join("pwned").exists() && !dir.join("pwned2").exists());
        let out = call(&cat.tools[1], &Value::Null, &env);
        assert_eq!(out.result, Ok(json!("DONE")));
        let out = call(&cat.tools[1], &json!([1]), &env);
        assert!(out.result.unwrap_err().contains("takes a JSON object"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn global_tool_search_path_names_every_place() {
        let dir = std::env::temp_dir().join(format!("switchyard-gt-{}", std::process::id()));
        let agent = dir.join("agents").join("a");
        std::fs::create_dir_all(&agent).unwrap();
        let e = find_global_tool(&agent, "nope_tool.sh").unwrap_err();
        let expected = dir.join("functions").join("tools").join("nope_tool.sh");
        assert!(e.contains(&expected.display().to_string()), "{e}");
        std::fs::create_dir_all(dir.join("functions/tools")).unwrap();
        std::fs::write(&expected, "# @describe Nope\nmain() { :; }\n").unwrap();
        assert_eq!(find_global_tool(&agent, "nope_tool.sh").unwrap(), expected);
        let found = lookup(&agent, ["nope_tool.sh"], "nope_tool")
            .unwrap()
            .unwrap();
        assert_eq!((found.name.as_str(), found.global), ("nope_tool", true));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
