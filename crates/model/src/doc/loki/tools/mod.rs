//! Declarations of Loki's subprocess tools, read from their source the way llm-functions and
//! Loki build their `functions.json`: the agent's own tools in `tools.sh` (bash with
//! llm-functions / argc comment tags), `tools.ts` and `tools.js` (exported functions with JSDoc),
//! and the graph's `global_tools` files. This is the one parser of these files: the validator
//! checks llm-node tool names against it and the Loki interpreter offers and runs what it finds
//! (`loki::tools` runs them).
//!
//! * bash ([`bash`]): `# @describe <text>` + `main` for a one-tool file (global tools);
//!   `# @cmd <text>` before each function for a file of several tools (agent `tools.sh`).
//!   Parameters come from `# @option --name[!|*|+][=default][[a|b]] [<INT>|<NUM>|<…>] <text>`
//!   (`!` required, `*` an array, `+` a required array, `[a|b]` an enum, `<INT>` / `<NUM>`
//!   integer / number, string otherwise) and `# @flag --name <text>` (boolean). The JSON key is
//!   the option name with `-` turned into `_`. Functions whose name starts with `_` are not tools;
//! * TypeScript / JavaScript ([`js`]): every exported function (`export [async] function f(…)`,
//!   `export const f = (…) =>`, `exports.f = function (…)`) whose name does not start with `_`;
//!   a global tool is its file's `run` function, named after the file. The JSDoc block above
//!   the function gives the description (the text before the first tag) and `@param` texts;
//!   types come from the signature (`string`, `number`, `boolean`, `string[]`, `Array<T>`,
//!   `'a' | 'b'`, `T | null`), else from the JSDoc type (`{Integer}`, `{string[]}`, …);
//!   `name?`, a default value or `[name]` make a parameter optional. The llm-functions form —
//!   one argument object described by `@typedef {Object} Args` + `@property` lines (or
//!   `@param {T} args.name`, or a destructured `{ a, b }`) — is called with the object;
//! * Python (`tools.py`, run by the Python bridge): its top-level `def` functions
//!   ([`agent_tool_functions`] only: the bridge reads the signatures itself).
//!
//! **Global tools** are looked for in `$LOKI_FUNCTIONS_DIR/tools/` (Loki's override of its
//! functions directory), then in `<config>/functions/tools/` where `<config>` is two levels above
//! the agent directory (Loki keeps agents in `<config>/agents/<name>/`), then in
//! `$LOKI_CONFIG_DIR/functions/tools/` or `~/.config/loki/functions/tools/`. A whitelist entry
//! names a global tool by its file stem (`web_search` for `web_search.sh`).

mod bash;
mod js;
#[cfg(test)]
mod tests;

pub use bash::parse_bash;
use bash::bash_function_name;
#[cfg(test)]
use js::js_type;
pub use js::parse_js;

use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// bridge).
pub const AGENT_TOOL_FILES: [&str; 3] = ["tools.sh", "tools.ts", "tools.js"];

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
        // A tool file that links out of the project is not read (nor run): a clone could
        // plant it to run any file as the agent's tools.
        let read = match syntax::source::links_out(&path, &crate::doc::project_root(agent_dir)) {
            Some(e) => Err(e),
            None => syntax::source::read_bounded_text(&path, syntax::source::SIDE_FILE_CAP, None),
        };
        let text = match read {
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
    let text = syntax::source::read_bounded_text(path, syntax::source::SIDE_FILE_CAP, None).map_err(|e| e.to_string())?;
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
    if let Some(d) = cat.tools.iter().find(|d| d.name == name) {
        return Some(Ok(d.clone()));
    }
    cat.not_a_tool(name).map(Err)
}

impl Catalog {
    /// Why `name`, a function the agent's tool files define, is not a tool: a `tools.sh`
    /// function without `# @cmd`, or a function of a file that does not parse (a file that
    /// does not parse answers only for the functions it defines, so that other tools of the
    /// same name, such as MCP ones, still work), or a tool file that could not be read at all.
    /// `None` when the files do not define `name`.
    pub fn not_a_tool(&self, name: &str) -> Option<String> {
        if self.plain_functions.iter().any(|f| f.replace('-', "_") == name) {
            return Some(format!(
                "function '{name}' in tools.sh has no `# @cmd <description>` comment above it, so \
                 it is not a tool (llm-functions declares each agent tool with `# @cmd` and its \
                 `# @option` / `# @flag` lines)"
            ));
        }
        if let Some((problem, _)) = self.problems.iter().find(|(_, defined)| defined.iter().any(|f| f == name)) {
            return Some(format!("agent tool '{name}' cannot be used: {problem}"));
        }
        // A tool file that could not be read at all may be where `name` was meant to come from.
        self.problems
            .iter()
            .find(|(_, defined)| defined.is_empty())
            .map(|(problem, _)| format!("no readable tool file defines '{name}': {problem}"))
    }
}

/// The top-level functions (`def f(` / `async def f(`) of a Python tool file whose names do not
/// start with `_`: the agent tools of `tools.py`, which the Python bridge runs.
pub fn python_functions(src: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in src.lines() {
        let Some(rest) = line.strip_prefix("def ").or_else(|| line.strip_prefix("async def ")) else {
            continue;
        };
        let rest = rest.trim_start();
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let is_call = rest[name.len()..].trim_start().starts_with('(');
        if is_call && !name.is_empty() && !name.starts_with('_') && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// What an agent's own tool files (`tools.sh`, `tools.ts`, `tools.js`, `tools.py`) give its llm
/// nodes, read by the same parser the interpreter uses.
#[derive(Debug, Default)]
pub struct AgentTools {
    /// Whether the agent has any tool file at all (without one, tool names cannot be checked).
    pub any_file: bool,
    /// The subprocess tools as declared, then the `tools.py` functions.
    pub names: Vec<String>,
    /// The subprocess tool files as parsed.
    pub catalog: Catalog,
}

impl AgentTools {
    /// Read the tool files of the agent in `agent_dir`.
    pub fn read(agent_dir: &Path) -> AgentTools {
        let catalog = agent_tools(agent_dir);
        let mut any_file = AGENT_TOOL_FILES.iter().any(|f| agent_dir.join(f).is_file());
        let mut names: Vec<String> = catalog.tools.iter().map(|t| t.name.clone()).collect();
        if let Ok(py) = syntax::source::read_bounded_text(&agent_dir.join("tools.py"), syntax::source::SIDE_FILE_CAP, None) {
            any_file = true;
            for f in python_functions(&py) {
                if !names.contains(&f) {
                    names.push(f);
                }
            }
        }
        AgentTools { any_file, names, catalog }
    }
}

