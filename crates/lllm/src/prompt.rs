//! An LLLM agent's system prompt at run time, and what its replies must look like.
//!
//! Upstream, a prompt is a Python `Prompt` object (template, parser, tools, handlers) registered
//! by a prompt module. A run reads the prompt **file** `system_prompt_path` names
//! (`<prompt folder>/<key>.md` or `.txt`: the package's prompt folders from `lllm.toml`, else
//! `prompts/` beside the config or beside its folder), or the inline `system_prompt`.
//!
//! A prompt a Python **prompt module** declares ([`Located::Module`]) is read by running the
//! module, through the Python bridge, and only in a run whose folder is trusted ([`from_module`]):
//! `prompt_module.py` (defined in the bridge as `switchyard_lllm`) imports the module by file as
//! LLLM's discovery does and reads the `Prompt` whose `path` the declaration gives: its template,
//! its parser's tags, `format` (a pydantic model's JSON Schema), the handler messages and the
//! functions it declares (offered as tools, called through the bridge). Without the `lllm`
//! package in that Python, a stand-in `lllm` (`lllm.core.prompt`, `lllm.models`, …) captures the
//! declarations. What the module gave is a recorded effect (`load_prompt`), so a replay of a
//! cassette that recorded it runs no Python. Opening and validating a config run nothing.
//!
//! A prompt file may start with a YAML front matter (a Switchyard extension) carrying what the
//! Python object would: the parser's tags (`xml_tags`, `md_tags`, `signal_tags`,
//! `required_xml_tags`, `required_md_tags`, as upstream's `DefaultTagParser`), `format: json` or
//! a JSON Schema (structured output: the reply must be JSON with the schema's required keys),
//! and the handler messages `on_exception` (`{error_message}`), `on_interrupt`
//! (`{call_results}`) and `on_interrupt_final`, LLLM's defaults otherwise.
//!
//! Templates render as Python's `str.format` does for plain fields: `{name}` takes the prompt
//! argument, `{{` / `}}` are braces; a template without fields is used as written; a missing
//! argument is an error naming it (upstream's `ValueError`).

use model::doc::lllm::package::{PromptHit, PromptIndex};
use model::doc::lllm::{LllmDoc, PVal};
use model::doc::Document;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// LLLM's default handler messages (`DefaultSimpleHandler`).
pub const ON_EXCEPTION: &str = "Error: {error_message}. Please fix.";
pub const ON_INTERRUPT: &str = "{call_results}";
pub const ON_INTERRUPT_FINAL: &str = "You are reaching the limit of tool calls. Provide the final response.";

/// The largest prompt file read.
const PROMPT_CAP: u64 = 4 << 20;

/// The front matter of a prompt file (see the module docs).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Front {
    #[serde(default)]
    pub xml_tags: Vec<String>,
    #[serde(default)]
    pub md_tags: Vec<String>,
    #[serde(default)]
    pub signal_tags: Vec<String>,
    #[serde(default)]
    pub required_xml_tags: Vec<String>,
    #[serde(default)]
    pub required_md_tags: Vec<String>,
    /// `json`, or a JSON Schema object.
    #[serde(default)]
    pub format: Option<Value>,
    #[serde(default)]
    pub on_exception: Option<String>,
    #[serde(default)]
    pub on_interrupt: Option<String>,
    #[serde(default)]
    pub on_interrupt_final: Option<String>,
}

/// An agent's prompt: the template, where it came from, its parser and handlers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prompt {
    /// `system_prompt_path` as written, or `inline`.
    pub path: String,
    /// The prompt file or module (`None` for an inline prompt).
    pub file: Option<PathBuf>,
    pub template: String,
    pub front: Front,
    /// The prompt module it came from.
    pub module: Option<ModuleRef>,
    /// The functions a module's prompt declares (`function_list`), as tools are offered:
    /// `{"name", "description", "parameters"}`.
    pub functions: Vec<Value>,
    /// A module's prompt whose parser is its own class (not `DefaultTagParser`): its name. Each
    /// reply is parsed by it, through the Python bridge.
    pub parser: Option<String>,
}

/// A prompt a Python prompt module declares.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleRef {
    /// The module file.
    pub file: PathBuf,
    /// The 1-based line of the `Prompt(path=…)` declaration.
    pub line: u32,
    /// The `path` the declaration gives the `Prompt`.
    pub prompt_path: String,
    /// The name the module is imported under (`_lllm_prompts.<its path>`).
    pub module: String,
    /// The file relative to the config's folder (what a recording keys the prompt by).
    pub shown: String,
}

/// Where an agent's prompt comes from: ready (a file, inline), or a prompt module to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Located {
    Ready(Prompt),
    Module {
        /// `system_prompt_path` as written.
        path: String,
        module: ModuleRef,
    },
    /// No module declares it by name, but the package has prompt modules: a run imports them
    /// all, as LLLM's discovery does, to find the `Prompt` registered under `key`.
    Discover {
        path: String,
        key: String,
        /// The package's prompt folders with their prefixes.
        folders: Vec<(PathBuf, String)>,
    },
}

/// The name of the prompt reader in the Python bridge, and its source.
pub const READER: &str = "switchyard_lllm";
pub const READER_SOURCE: &str = include_str!("prompt_module.py");

impl Prompt {
    /// The handler messages, LLLM's defaults where the front matter sets none.
    pub fn on_exception(&self) -> &str {
        self.front.on_exception.as_deref().unwrap_or(ON_EXCEPTION)
    }
    pub fn on_interrupt(&self) -> &str {
        self.front.on_interrupt.as_deref().unwrap_or(ON_INTERRUPT)
    }
    pub fn on_interrupt_final(&self) -> &str {
        self.front.on_interrupt_final.as_deref().unwrap_or(ON_INTERRUPT_FINAL)
    }

    /// The structured-output request (`response_format`) when `format` is a JSON Schema, named
    /// after its `title` (a pydantic model's class name, as LiteLLM names it), else `response`.
    pub fn response_format(&self) -> Option<Value> {
        match &self.front.format {
            Some(schema @ Value::Object(_)) => {
                let name = schema.get("title").and_then(Value::as_str).filter(|t| !t.trim().is_empty()).unwrap_or("response");
                Some(serde_json::json!({"name": name, "schema": schema}))
            }
            _ => None,
        }
    }

    /// What is wrong with a final reply's text (upstream's parser errors), empty when it parses.
    pub fn check(&self, content: &str) -> Vec<String> {
        let f = &self.front;
        let mut errors = Vec::new();
        for tag in &f.xml_tags {
            if xml_blocks(content, tag).is_empty() {
                errors.push(format!("No {tag} tags found, it should be provided as <{tag}>...</{tag}>"));
            }
        }
        for tag in &f.md_tags {
            if md_blocks(content, tag).is_empty() {
                errors.push(format!("No {tag} tags found, it should be provided as ```{tag} ... ```"));
            }
        }
        for tag in &f.required_xml_tags {
            if !f.xml_tags.contains(tag) && xml_blocks(content, tag).is_empty() {
                errors.push(format!("Missing required XML tag: <{tag}>"));
            }
        }
        for tag in &f.required_md_tags {
            if !f.md_tags.contains(tag) && md_blocks(content, tag).is_empty() {
                errors.push(format!("Missing required markdown section: {tag}"));
            }
        }
        if let Some(format) = &f.format {
            match serde_json::from_str::<Value>(content.trim()) {
                Err(e) => errors.push(format!("the reply is not JSON: {e}")),
                Ok(v) => {
                    let required = format.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
                    for k in required.iter().filter_map(Value::as_str) {
                        if v.get(k).is_none() {
                            errors.push(format!("the JSON reply has no `{k}` (the format requires it)"));
                        }
                    }
                }
            }
        }
        if errors.is_empty() { errors } else { vec![format!("Parsing errors:\n{}", errors.join("\n"))] }
    }

    /// What a parsed reply holds (upstream's parse result): the tag blocks, signal tags, or the
    /// JSON value of a structured reply.
    pub fn parse(&self, content: &str) -> Value {
        let f = &self.front;
        if f.format.is_some() {
            return serde_json::from_str(content.trim()).unwrap_or(Value::Null);
        }
        if f.xml_tags.is_empty() && f.md_tags.is_empty() && f.signal_tags.is_empty() {
            return Value::Null;
        }
        let map = |tags: &[String], find: fn(&str, &str) -> Vec<String>| -> Map<String, Value> {
            tags.iter().map(|t| (t.clone(), Value::from(find(content, t)))).collect()
        };
        serde_json::json!({
            "xml_tags": map(&f.xml_tags, xml_blocks),
            "md_tags": map(&f.md_tags, md_blocks),
            "signal_tags": f.signal_tags.iter().map(|t| (t.clone(), Value::Bool(content.contains(&format!("<{t}>"))))).collect::<Map<_, _>>(),
        })
    }
}

/// The contents of every `<tag>…</tag>` block.
pub fn xml_blocks(content: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = content;
    while let Some(a) = rest.find(&open) {
        let after = &rest[a + open.len()..];
        let Some(b) = after.find(&close) else { break };
        out.push(after[..b].trim().to_string());
        rest = &after[b + close.len()..];
    }
    out
}

/// The contents of every ```` ```tag … ``` ```` block.
pub fn md_blocks(content: &str, tag: &str) -> Vec<String> {
    let open = format!("```{tag}");
    let mut out = Vec::new();
    let mut rest = content;
    while let Some(a) = rest.find(&open) {
        let after = &rest[a + open.len()..];
        let Some(b) = after.find("```") else { break };
        out.push(after[..b].trim().to_string());
        rest = &after[b + 3..];
    }
    out
}

/// Render a template as Python's `str.format` with `args` (see the module docs).
pub fn render(template: &str, args: &Map<String, Value>) -> Result<String, String> {
    let fields = fields(template);
    if fields.is_empty() {
        return Ok(template.to_string());
    }
    let missing: Vec<&String> = fields.iter().filter(|f| !args.contains_key(f.as_str())).collect();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|m| format!("'{m}'")).collect();
        return Err(format!("missing prompt arguments: [{}] (give them as a JSON object: --state '{{\"{}\": \"…\"}}')", names.join(", "), missing[0]));
    }
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                    field.push(d);
                }
                let name = field_name(&field);
                match args.get(name) {
                    Some(Value::String(s)) => out.push_str(s),
                    Some(v) => out.push_str(&v.to_string()),
                    None => {}
                }
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// `name` of a field `name.attr`, `name[0]`, `name:spec`, `name!r`.
fn field_name(field: &str) -> &str {
    let end = field.find(['.', '[', ':', '!']).unwrap_or(field.len());
    field[..end].trim()
}

/// The field names of a template, in order, once each.
pub fn fields(template: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
            }
            '{' => {
                let mut field = String::new();
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                    field.push(d);
                }
                let name = field_name(&field).to_string();
                if !name.is_empty() && !out.contains(&name) {
                    out.push(name);
                }
            }
            _ => {}
        }
    }
    out
}

/// Split a prompt file's text into its front matter and its template.
pub fn split_front(file: &Path, text: &str) -> Result<(Front, String), String> {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = t.strip_prefix("---\n").or_else(|| t.strip_prefix("---\r\n")) else {
        return Ok((Front::default(), text.to_string()));
    };
    let end = rest.find("\n---\n").map(|i| (i, i + 5)).or_else(|| rest.find("\n---\r\n").map(|i| (i, i + 6))).or_else(|| {
        rest.strip_suffix("\n---").map(|r| (r.len(), rest.len())).or_else(|| rest.ends_with("\n---\n").then(|| (rest.len() - 5, rest.len())))
    });
    let Some((yaml_end, body_start)) = end else {
        return Err(format!("{}: the front matter opened by `---` on line 1 is never closed by a `---` line", file.display()));
    };
    let front: Front = if rest[..yaml_end].trim().is_empty() {
        Front::default()
    } else {
        serde_yaml::from_str(&rest[..yaml_end]).map_err(|e| {
            format!(
                "{}: front matter: {e} (the keys are xml_tags, md_tags, signal_tags, required_xml_tags, required_md_tags, format, on_exception, on_interrupt, on_interrupt_final)",
                file.display()
            )
        })?
    };
    if let Some(f) = &front.format
        && !(f.as_str() == Some("json") || f.is_object())
    {
        return Err(format!("{}: front matter: `format` must be `json` or a JSON Schema object", file.display()));
    }
    Ok((front, rest[body_start.min(rest.len())..].to_string()))
}

/// The prompt of agent `agent` of an LLLM config: inline `system_prompt`, or the prompt file
/// `system_prompt_path` names (see the module docs); a prompt module's is an error here (a run
/// reads it with [`locate`] and [`from_module`]). Errors say what to do.
pub fn load(doc: &Document, l: &LllmDoc, agent: &str) -> Result<Prompt, String> {
    match locate(doc, l, agent)? {
        Located::Ready(p) => Ok(p),
        Located::Module { path, module } => Err(format!(
            "prompt `{path}` of agent `{agent}` is a Python prompt module's ({}:{}); only a run reads it (through the Python bridge)",
            module.file.display(),
            module.line
        )),
        Located::Discover { path, .. } => Err(format!("prompt `{path}` of agent `{agent}` may be built by a Python prompt module; only a run looks for it (through the Python bridge)")),
    }
}

/// Where the prompt of agent `agent` comes from (see [`load`]); nothing runs.
pub fn locate(doc: &Document, l: &LllmDoc, agent: &str) -> Result<Located, String> {
    let a = l.agent(agent).ok_or_else(|| format!("no agent named `{agent}` in {}", doc.path.display()))?;
    let text_of = |k: &str| match a.get(k) {
        Some(PVal::Value { value: Value::String(s), .. }) => Some(s.clone()),
        _ => None,
    };
    if let Some(path) = text_of("system_prompt_path") {
        let key = path.split_once(':').map_or(path.as_str(), |(_, k)| k);
        let hit = l.prompt_of(agent).and_then(|p| p.hit.clone());
        let file = match hit {
            Some(PromptHit::File(f)) => f,
            Some(PromptHit::Module(m, line)) => {
                let module = module_ref(doc, l, &m, line).ok_or_else(|| {
                    format!("prompt `{path}` of agent `{agent}`: {}:{line} no longer declares it (`path=\"…\"`); the module changed since the config was opened", m.display())
                })?;
                return Ok(Located::Module { path, module });
            }
            None => {
                if let Some(pkg) = l.package().and_then(|p| p.resolve(path.split_once(':').map(|(q, _)| q)))
                    && PromptIndex::of(&pkg).modules > 0
                {
                    let folders = pkg.prompts.iter().filter(|f| f.path.is_dir()).map(|f| (f.path.clone(), f.prefix.clone().unwrap_or_default())).collect();
                    return Ok(Located::Discover { path: path.clone(), key: key.to_string(), folders });
                }
                let folders = fallback_folders(doc);
                find_in(&folders, key).ok_or_else(|| {
                    let list: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
                    format!(
                        "prompt `{path}` of agent `{agent}` was not found: no `{key}.md` or `{key}.txt` in {}, and no prompt module declares it by name (`path=\"…\"`)",
                        if list.is_empty() { "any prompt folder".into() } else { list.join(", ") }
                    )
                })?
            }
        };
        let text = syntax::source::read_bounded_text(&file, PROMPT_CAP, None).map_err(|e| format!("cannot read prompt file {}: {e}", file.display()))?;
        let (front, template) = split_front(&file, &text)?;
        return Ok(Located::Ready(Prompt { path, file: Some(file), template, front, ..Prompt::default() }));
    }
    if let Some(t) = text_of("system_prompt") {
        return Ok(Located::Ready(Prompt { path: "inline".into(), template: t, ..Prompt::default() }));
    }
    Err(format!("agent `{agent}` has no system prompt: set `system_prompt_path` (a prompt file) or `system_prompt`"))
}

/// The module declaration at `file:line`: the `path="…"` it gives its `Prompt`, the name to
/// import it under, the file as a recording keys it.
fn module_ref(doc: &Document, l: &LllmDoc, file: &Path, line: u32) -> Option<ModuleRef> {
    let text = syntax::source::read_bounded_text(file, PROMPT_CAP, None).ok()?;
    let prompt_path = path_literal(text.lines().nth(line.checked_sub(1)? as usize)?)?;
    let root = l.package().map(|p| p.root.clone()).unwrap_or_else(|| doc.base_dir.clone());
    let rel = file.strip_prefix(&root).unwrap_or(file).with_extension("");
    let dotted: String = rel.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let shown = relative_to(file, &doc.base_dir);
    Some(ModuleRef { file: file.to_path_buf(), line, prompt_path, module: format!("_lllm_prompts.m_{dotted}"), shown })
}

/// `file` as seen from `dir` (`../prompts/system.py`), else as it is.
fn relative_to(file: &Path, dir: &Path) -> String {
    let (f, d): (Vec<_>, Vec<_>) = (file.components().collect(), dir.components().collect());
    let common = f.iter().zip(&d).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return file.display().to_string();
    }
    let mut out: Vec<String> = d[common..].iter().map(|_| "..".to_string()).collect();
    out.extend(f[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    out.join("/")
}

/// The `path="…"` / `path='…'` keyword argument of a line of Python.
fn path_literal(line: &str) -> Option<String> {
    let mut rest = line;
    while let Some(at) = rest.find("path") {
        let before = rest[..at].chars().next_back();
        let after = rest[at + 4..].trim_start();
        rest = &rest[at + 4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(v) = after.strip_prefix('=').map(str::trim_start) else { continue };
        let Some(q) = v.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
        if let Some(end) = v[1..].find(q) {
            return Some(v[1..1 + end].to_string());
        }
    }
    None
}

/// What the prompt reader gave for a module's prompt (`load`'s answer, maybe a recording of
/// it) as a [`Prompt`], with the reader's notes; a positioned error when the module did not
/// import or declares no such prompt.
pub fn from_module(path: &str, agent: &str, m: &ModuleRef, answer: &Value) -> Result<(Prompt, Vec<String>), String> {
    let at = |line: Option<u64>| format!("{}:{}", m.file.display(), line.unwrap_or(m.line as u64));
    match answer.get("error").and_then(Value::as_str) {
        Some("import") => {
            let s = |k: &str| answer.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let mut msg = format!("prompt `{path}` of agent `{agent}`: importing its prompt module failed at {}: {}", at(answer.get("line").and_then(Value::as_u64)), s("message"));
            let missing = s("missing");
            if missing == "lllm" || missing.starts_with("lllm.") {
                msg.push_str(
                    "; Switchyard's stand-in for lllm has what prompt modules declare prompts with (lllm, lllm.core.prompt, lllm.models: Prompt, \
                     DefaultTagParser, DefaultSimpleHandler, Function, tool, MCP, register_prompt), not the rest: install the lllm package \
                     (`pip install lllm-core`) into the Python the bridge runs (`python3`, or SWITCHYARD_PYTHON)",
                );
            } else if !missing.is_empty() {
                msg.push_str(&format!(
                    "; the module needs `{missing}`: install it into the Python the bridge runs (`python3`, or SWITCHYARD_PYTHON)"
                ));
            } else if answer.get("line").is_some_and(Value::is_null) && !s("at").is_empty() {
                msg.push_str(&format!(" (raised at {})", s("at")));
            }
            return Err(msg);
        }
        Some("missing") => {
            let list: Vec<&str> = answer.get("prompts").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            return Err(format!(
                "prompt `{path}` of agent `{agent}`: the module {} has no `Prompt` with path `{}` once it runs ({})",
                at(None),
                m.prompt_path,
                if list.is_empty() { "it defines no prompts".to_string() } else { format!("its prompts: {}", list.join(", ")) }
            ));
        }
        Some(other) => return Err(format!("prompt `{path}` of agent `{agent}` ({}): {other}", at(None))),
        None => {}
    }
    let template = answer.get("template").and_then(Value::as_str).ok_or_else(|| format!("prompt `{path}` of agent `{agent}` ({}): the reader gave no template", at(None)))?.to_string();
    let front: Front = serde_json::from_value(answer.get("front").cloned().unwrap_or(Value::Null))
        .map_err(|e| format!("prompt `{path}` of agent `{agent}` ({}): {e}", at(None)))?;
    let functions = answer.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut notes: Vec<String> = answer
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|w| format!("prompt `{path}` ({}): {w}", at(None)))
        .collect();
    if let Some(with) = answer.get("lllm").and_then(Value::as_str) {
        notes.insert(0, format!("prompt `{path}` read from its prompt module {} with {with}", at(None)));
    }
    let parser = answer.get("parser").and_then(Value::as_str).map(str::to_string);
    if let Some(class) = &parser {
        notes.push(format!("prompt `{path}` ({}): its parser {class} is its own code: each reply is parsed by it through the Python bridge", at(None)));
    }
    Ok((Prompt { path: path.to_string(), file: Some(m.file.clone()), template, front, module: Some(m.clone()), functions, parser }, notes))
}

/// The arguments of the reader's `discover` (see [`Located::Discover`]).
pub fn discover_args(key: &str, folders: &[(PathBuf, String)]) -> Value {
    let list: Vec<Value> = folders.iter().map(|(f, p)| serde_json::json!([f.display().to_string(), p])).collect();
    serde_json::json!({"folders": list, "key": key})
}

/// What a recording of a discovery is keyed by: the key and the folders as seen from `dir`.
pub fn discover_key(dir: &Path, key: &str, folders: &[(PathBuf, String)]) -> Value {
    let list: Vec<Value> = folders.iter().map(|(f, p)| serde_json::json!([relative_to(f, dir), p])).collect();
    serde_json::json!({"discover": key, "folders": list})
}

/// What the reader's `discover` gave as a [`Prompt`] (see [`from_module`]); an error naming the
/// folders searched and the modules that did not import when no module builds the prompt.
pub fn from_discovery(path: &str, agent: &str, doc: &Document, folders: &[(PathBuf, String)], answer: &Value) -> Result<(Prompt, Vec<String>), String> {
    if answer.get("error").and_then(Value::as_str) == Some("undiscovered") {
        let failures: Vec<String> = answer
            .get("failures")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|f| {
                let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                format!("{}:{}: {}", s("file"), f.get("line").and_then(Value::as_u64).unwrap_or(1), s("message"))
            })
            .collect();
        let list: Vec<String> = folders.iter().map(|(f, _)| f.display().to_string()).collect();
        return Err(format!(
            "prompt `{path}` of agent `{agent}` was not found: no prompt file, and none of the {} prompt modules in {} registers it once imported{}",
            answer.get("modules").and_then(Value::as_u64).unwrap_or(0),
            list.join(", "),
            if failures.is_empty() { String::new() } else { format!("; these did not import: {}", failures.join("; ")) }
        ));
    }
    let file = PathBuf::from(answer.get("file").and_then(Value::as_str).unwrap_or(""));
    let prompt_path = answer.get("path").and_then(Value::as_str).unwrap_or("").to_string();
    let text = syntax::source::read_bounded_text(&file, PROMPT_CAP, None).unwrap_or_default();
    let line = text.lines().position(|l| path_literal(l).as_deref() == Some(prompt_path.as_str())).map_or(1, |i| i as u32 + 1);
    let m = ModuleRef {
        module: answer.get("module").and_then(Value::as_str).unwrap_or("").to_string(),
        shown: relative_to(&file, &doc.base_dir),
        file,
        line,
        prompt_path,
    };
    from_module(path, agent, &m, answer)
}

/// The arguments of the reader's `load` for a module's prompt (also what a recording keys it by,
/// with the file relative to the config: see [`effect_key`]).
pub fn reader_args(m: &ModuleRef) -> Value {
    serde_json::json!({"file": m.file.display().to_string(), "module": m.module, "path": m.prompt_path})
}

/// What a recording of the prompt's load is keyed by: the module as seen from the config, the
/// prompt's path (no absolute path, so a cassette replays in another checkout).
pub fn effect_key(m: &ModuleRef) -> Value {
    serde_json::json!({"module": m.shown, "path": m.prompt_path})
}

/// The prompt folders of a config outside a package: `prompts/` beside it and beside its folder.
fn fallback_folders(doc: &Document) -> Vec<PathBuf> {
    let mut out = vec![doc.base_dir.join("prompts")];
    if let Some(parent) = doc.base_dir.parent() {
        out.push(parent.join("prompts"));
    }
    out.retain(|p| p.is_dir());
    out
}

fn find_in(folders: &[PathBuf], key: &str) -> Option<PathBuf> {
    if key.split('/').any(|s| s.is_empty() || s == ".." || s == ".") {
        return None;
    }
    folders.iter().flat_map(|f| ["md", "txt"].map(|ext| f.join(format!("{key}.{ext}")))).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_like_str_format() {
        let args = json!({"topic": "rust", "n": 3}).as_object().unwrap().clone();
        assert_eq!(render("About {topic} ({n}) {{x}}", &args).unwrap(), "About rust (3) {x}");
        assert_eq!(render("no fields {{x}}", &Map::new()).unwrap(), "no fields {{x}}", "used as written");
        let e = render("Hi {who} {topic}", &args).unwrap_err();
        assert!(e.contains("'who'"), "{e}");
        assert_eq!(fields("{a} {b.c} {a:>3} {{d}}"), ["a", "b"]);
    }

    #[test]
    fn a_module_declaration_and_what_the_reader_gives() {
        assert_eq!(path_literal("x = Prompt(path=\"system/a\", prompt='p')").as_deref(), Some("system/a"));
        assert_eq!(path_literal("    path = 'b',").as_deref(), Some("b"));
        assert_eq!(path_literal("system_prompt_path='c'"), None);
        assert_eq!(path_literal("if path == 'd':"), None);
        assert_eq!(relative_to(Path::new("/p/prompts/a.py"), Path::new("/p/configs")), "../prompts/a.py");
        let m = ModuleRef { file: "/p/prompts/a.py".into(), line: 4, prompt_path: "a".into(), module: "_lllm_prompts.m_prompts_a".into(), shown: "prompts/a.py".into() };
        let ok = json!({
            "template": "Hi {who}",
            "front": {"xml_tags": ["answer"], "md_tags": [], "signal_tags": [], "required_xml_tags": [], "required_md_tags": [],
                      "format": {"type": "object", "required": ["v"]}, "on_exception": "E {error_message}"},
            "tools": [{"name": "add", "description": "adds", "parameters": {"type": "object"}}],
            "warnings": ["the prompt's parser P is its own code"],
        });
        let (p, notes) = from_module("x/a", "ag", &m, &ok).unwrap();
        assert_eq!((p.template.as_str(), p.on_exception(), p.on_interrupt()), ("Hi {who}", "E {error_message}", ON_INTERRUPT));
        assert_eq!(p.response_format().unwrap()["schema"]["required"], json!(["v"]));
        assert_eq!(p.response_format().unwrap()["name"], "response");
        let titled = Prompt { front: Front { format: Some(json!({"title": "Review", "type": "object"})), ..Front::default() }, ..Prompt::default() };
        assert_eq!(titled.response_format().unwrap()["name"], "Review");
        assert_eq!(p.functions[0]["name"], "add");
        assert!(notes[0].starts_with("prompt `x/a` (/p/prompts/a.py:4): the prompt's parser"), "{notes:?}");
        let mut with = ok.clone();
        with["lllm"] = json!("the installed lllm package");
        let (_, notes) = from_module("x/a", "ag", &m, &with).unwrap();
        assert_eq!(notes[0], "prompt `x/a` read from its prompt module /p/prompts/a.py:4 with the installed lllm package");
        let e = from_module("x/a", "ag", &m, &json!({"error": "import", "message": "ModuleNotFoundError: No module named 'pydantic'", "line": 2, "missing": "pydantic"})).unwrap_err();
        assert!(e.contains("/p/prompts/a.py:2") && e.contains("needs `pydantic`"), "{e}");
        let e = from_module("x/a", "ag", &m, &json!({"error": "import", "message": "ModuleNotFoundError: No module named 'lllm.core.dialog'", "line": 1, "missing": "lllm.core.dialog"})).unwrap_err();
        assert!(e.contains("stand-in for lllm") && e.contains("pip install lllm-core"), "{e}");
        let e = from_module("x/a", "ag", &m, &json!({"error": "missing", "prompts": ["b", "c"]})).unwrap_err();
        assert!(e.contains("no `Prompt` with path `a`") && e.contains("its prompts: b, c"), "{e}");
        assert!(from_module("x/a", "ag", &m, &json!({"template": "t", "front": {"parser": 1}})).unwrap_err().contains("unknown field"));
        assert_eq!(effect_key(&m), json!({"module": "prompts/a.py", "path": "a"}), "no absolute path in a recording");
    }

    #[test]
    fn front_matter_and_checks() {
        let (f, body) = split_front(Path::new("p.md"), "---\nxml_tags: [answer]\non_exception: 'Bad: {error_message}'\n---\nYou help.\n").unwrap();
        assert_eq!(f.xml_tags, ["answer"]);
        assert_eq!(body, "You help.\n");
        let p = Prompt { path: "x".into(), template: body, front: f, ..Prompt::default() };
        assert_eq!(p.check("<answer>42</answer>"), Vec::<String>::new());
        let e = p.check("42");
        assert!(e[0].contains("No answer tags found"), "{e:?}");
        assert_eq!(p.parse("<answer> 42 </answer>")["xml_tags"]["answer"], json!(["42"]));
        assert_eq!(p.on_exception(), "Bad: {error_message}");
        assert_eq!(p.on_interrupt(), ON_INTERRUPT);
        assert!(split_front(Path::new("p.md"), "---\nparser: x\n---\nhi").unwrap_err().contains("unknown field"));
        assert!(split_front(Path::new("p.md"), "---\nxml_tags: [a]\nhi").unwrap_err().contains("never closed"));
        let (plain, t) = split_front(Path::new("p.md"), "just text").unwrap();
        assert_eq!((plain, t.as_str()), (Front::default(), "just text"));
        let js = Prompt {
            path: "x".into(),
            front: Front { format: Some(json!({"type": "object", "required": ["verdict"]})), ..Front::default() },
            ..Prompt::default()
        };
        assert!(js.check("{\"verdict\": 1}").is_empty());
        assert!(js.check("{\"v\": 1}")[0].contains("`verdict`"));
        assert!(js.check("nope")[0].contains("not JSON"));
        assert_eq!(md_blocks("a ```py\nx=1\n``` b", "py"), ["x=1"]);
    }
}
