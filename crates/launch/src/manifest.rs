//! The run manifest: what running a document would do to the user's machine, computed from the
//! document alone (nothing runs, nothing is fetched). A front end shows it before the first run
//! of a trusted folder and again when it changes; `switchyard run --manifest` prints it.
//!
//! It lists what will **execute** (Loki scripts with their interpreter, tool files, global tools,
//! sherma `import_path`s of tools, hooks and sub-agents, MCP commands with their arguments and
//! working folder), the **hosts** that will be contacted (LLM providers of live runs, remote
//! hooks, MCP and A2A servers, skill and RAG URLs, embeddings), the files read **outside the
//! project root**, and the **environment variables** the file references (`${VAR}` in it, Loki
//! tool files' `# @env` declarations, `${VAR}` in the definitions of the MCP servers it uses).
//! Sub-agents (`yaml_path`, Loki agent nodes) are followed, each item naming the file and line it
//! comes from.
//!
//! Those variables are also all a run's children (scripts, tools, the Python bridge, MCP
//! servers) get of the user's environment besides the base set and the user's
//! `SWITCHYARD_CHILD_ENV` ([`env_var_names`], `connect::childenv`): a provider key reaches a
//! child only when the file references it.
//!
//! The [`Manifest::hash`] covers what runs and where it connects, not where in the file it is
//! written, so moving lines or editing prompts does not ask the user again.

use connect::mcp::{McpServerSpec, McpTransport};
use model::doc::loki::{LokiDoc, NodeBody};
use model::doc::sherma::{Entity, ShermaDoc};
use model::doc::{Document, load_path};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use syntax::source::Span;

/// What the manifest says about its environment variables, for people.
pub const CHILD_ENV_NOTE: &str = "children (scripts, tools, Python, MCP servers) see only these of your environment, \
plus PATH, HOME, LANG, LC_*, TZ, TERM, TMPDIR, USER, LOGNAME, SHELL, the Python settings (PYTHONPATH, PYTHONHOME, \
VIRTUAL_ENV, PYENV_*) and the names you list in SWITCHYARD_CHILD_ENV";

/// One thing the manifest lists.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Item {
    /// What kind of thing (`script`, `python import`, `MCP command`, `LLM provider`, ...).
    pub kind: String,
    /// The thing itself: a command line, a host, a path, a variable name.
    pub what: String,
    /// More about it (the interpreter, the working folder, the URL a host comes from).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Where the document names it.
    pub at: Origin,
}

/// A position in an agent file (1-based line and column; 0 when unknown).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Origin {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

/// What running a document would do.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Manifest {
    /// The agent file.
    pub document: PathBuf,
    /// Its project root (the trust key, see `trust::project_root`).
    pub root: PathBuf,
    pub executes: Vec<Item>,
    pub hosts: Vec<Item>,
    pub outside_files: Vec<Item>,
    /// The variables the file references; besides the base set (`PATH`, `HOME`, …) and the
    /// user's `SWITCHYARD_CHILD_ENV`, the only ones its children see ([`CHILD_ENV_NOTE`]).
    pub env_vars: Vec<Item>,
    /// sha256 of what executes, the hosts, the outside files and the variable names.
    pub hash: String,
}

impl Manifest {
    /// Nothing to execute, contact or read outside the root.
    pub fn is_inert(&self) -> bool {
        self.executes.is_empty() && self.hosts.is_empty() && self.outside_files.is_empty()
    }

    /// The manifest as people read it (the CLI's `run --manifest`, refusals).
    pub fn to_text(&self) -> String {
        let mut out = format!("run manifest of {}\nproject root: {}\n", self.document.display(), self.root.display());
        let sections: [(&str, &[Item]); 4] = [
            ("executes", &self.executes),
            ("contacts", &self.hosts),
            ("reads outside the project root", &self.outside_files),
            ("environment variables it references", &self.env_vars),
        ];
        for (title, items) in sections {
            if items.is_empty() {
                out.push_str(&format!("{title}: nothing\n"));
                continue;
            }
            out.push_str(&format!("{title}:\n"));
            for i in items {
                let detail = i.detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default();
                out.push_str(&format!("  {:<16} {}{detail}    {}\n", i.kind, i.what, origin_text(&i.at)));
            }
        }
        out.push_str(&format!("({CHILD_ENV_NOTE})\n"));
        out.push_str(&format!("manifest hash: {}\n", self.hash));
        out
    }

    /// One line per item that executes or connects, for a refusal message (at most `max`).
    pub fn summary(&self, max: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .executes
            .iter()
            .map(|i| format!("runs {} {}", i.kind, i.what))
            .chain(self.hosts.iter().map(|i| match &i.detail {
                Some(d) => format!("contacts {} ({}: {d})", i.what, i.kind),
                None => format!("contacts {} ({})", i.what, i.kind),
            }))
            .chain(self.outside_files.iter().map(|i| format!("reads {} ({})", i.what, i.kind)))
            .collect();
        if lines.len() > max {
            let more = lines.len() - max;
            lines.truncate(max);
            lines.push(format!("… and {more} more (`switchyard run --manifest` lists everything)"));
        }
        lines
    }
}

fn origin_text(o: &Origin) -> String {
    if o.line == 0 {
        o.file.display().to_string()
    } else {
        format!("{}:{}:{}", o.file.display(), o.line, o.column)
    }
}

/// The manifest of `doc`, following its sub-agents.
pub fn manifest(doc: &Document) -> Manifest {
    let root = crate::trust::project_root(&doc.path);
    let mut b = Builder { root: root.clone(), seen: BTreeSet::new(), m: Collected::default(), providers: true };
    b.document(doc);
    let Collected { mut executes, mut hosts, mut outside_files, mut env_vars } = b.m;
    for list in [&mut executes, &mut hosts, &mut outside_files, &mut env_vars] {
        // Values filled in from the environment can hold secrets: the manifest never shows one.
        for i in list.iter_mut() {
            i.what = runtime::secrets::scrub_text(&i.what);
            i.detail = i.detail.as_deref().map(runtime::secrets::scrub_text);
        }
        dedupe(list);
    }
    let hash = {
        let mut h = Sha256::new();
        for (section, items) in [("x", &executes), ("h", &hosts), ("o", &outside_files), ("e", &env_vars)] {
            for i in items.iter() {
                h.update(format!("{section}\0{}\0{}\0{}\n", i.kind, i.what, i.detail.as_deref().unwrap_or("")));
            }
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    Manifest { document: doc.path.clone(), root, executes, hosts, outside_files, env_vars, hash }
}

/// The names of the environment variables `doc` references (its manifest's `env_vars`), computed
/// without the provider configuration (no keyring, no provider file): what a run's children get
/// beyond the base set (`launch::child_env`).
pub fn env_var_names(doc: &Document) -> BTreeSet<String> {
    let root = crate::trust::project_root(&doc.path);
    let mut b = Builder { root, seen: BTreeSet::new(), m: Collected::default(), providers: false };
    b.document(doc);
    b.m.env_vars.into_iter().map(|i| i.what).collect()
}

/// The files outside the project root `doc` would read (its manifest's `outside_files`), without
/// the provider configuration: what an untrusted folder is refused ([`restricted`]).
pub fn outside_files(doc: &Document) -> Vec<Item> {
    let root = crate::trust::project_root(&doc.path);
    let mut b = Builder { root, seen: BTreeSet::new(), m: Collected::default(), providers: false };
    b.document(doc);
    let mut out = b.m.outside_files;
    dedupe(&mut out);
    out
}

/// What a folder that is not trusted is refused, as positioned errors: every file outside the
/// project root the document would read (`instructions_path`, `yaml_path`, skill cards and
/// `base_uri`, prompts, RAG documents, `checkpointer.path`, ...). Nothing when the folder is
/// trusted: the run manifest lists those files and the user confirms them. `validate` and the
/// app show these, so a cloned repository pointing at `~/.aws/credentials` says so up front.
pub fn restricted(doc: &model::doc::Document) -> Vec<syntax::diag::Diagnostic> {
    if matches!(crate::trust::trusted_folder(&doc.path), Ok(Some(_))) {
        return Vec::new();
    }
    let root = crate::trust::project_root(&doc.path);
    outside_files(doc)
        .into_iter()
        .map(|i| {
            let mut d = syntax::diag::Diagnostic::error(
                "outside-project",
                format!(
                    "{} `{}` is outside the project root {}; a folder that is not trusted may not read it",
                    i.kind,
                    i.what,
                    root.display()
                ),
            )
            .hint(format!(
                "move the file into the project, or trust the folder if you meant it: switchyard trust {}",
                root.display()
            ))
            .in_file(&i.at.file);
            if i.at.line > 0 {
                (d.line, d.column, d.end_line, d.end_column) = (i.at.line, i.at.column, i.at.line, i.at.column);
            }
            d
        })
        .collect()
}

/// Sorted by what it is, duplicates (same kind, thing and detail) kept once at their first place.
fn dedupe(list: &mut Vec<Item>) {
    let mut seen = BTreeSet::new();
    list.retain(|i| seen.insert((i.kind.clone(), i.what.clone(), i.detail.clone())));
    list.sort_by(|a, b| (&a.kind, &a.what, &a.detail).cmp(&(&b.kind, &b.what, &b.detail)));
}

#[derive(Default)]
struct Collected {
    executes: Vec<Item>,
    hosts: Vec<Item>,
    outside_files: Vec<Item>,
    env_vars: Vec<Item>,
}

struct Builder {
    root: PathBuf,
    /// Documents already visited (sub-agents can refer to each other).
    seen: BTreeSet<PathBuf>,
    m: Collected,
    /// Whether to list LLM providers and embedding hosts (which reads the provider
    /// configuration); [`env_var_names`] does not need them.
    providers: bool,
}

/// Where `span` of `doc` is.
fn origin(doc: &Document, span: Option<Span>) -> Origin {
    let (line, column) = match (&doc.file, span) {
        (Some(f), Some(s)) => {
            let lc = f.line_col(s.start as usize);
            (lc.line, lc.column)
        }
        _ => (0, 0),
    };
    Origin { file: doc.path.clone(), line, column }
}

fn item(kind: &str, what: impl Into<String>, detail: Option<String>, at: Origin) -> Item {
    Item { kind: kind.to_string(), what: what.into(), detail, at }
}

/// The host of a URL (`scheme://host[:port]`), or the text when it is not a URL.
fn host_of(url: &str) -> String {
    let t = url.trim();
    match t.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let authority = &rest[..end];
            let authority = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
            format!("{}://{}", scheme.to_ascii_lowercase(), authority.to_ascii_lowercase())
        }
        None => t.to_string(),
    }
}

fn is_url(s: &str) -> bool {
    let l = s.trim().to_ascii_lowercase();
    l.starts_with("http://") || l.starts_with("https://")
}

impl Builder {
    fn canonical(&self, p: &Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
    }

    /// Record `path` (read by the run) when it lies outside the project root.
    fn read_file(&mut self, kind: &str, path: &Path, at: Origin) {
        let c = self.canonical(path);
        if !c.starts_with(&self.root) {
            self.m.outside_files.push(item(kind, c.display().to_string(), None, at));
        }
    }

    fn host(&mut self, kind: &str, url: &str, at: Origin) {
        // Neither user:password nor a secret the query carries (`?k=${OPENAI_API_KEY}` filled in).
        let shown = runtime::secrets::scrub_text(&runtime::secrets::without_credentials(url.trim()));
        let detail = (host_of(url) != shown).then_some(shown);
        self.m.hosts.push(item(kind, host_of(url), detail, at));
    }

    fn exec(&mut self, kind: &str, what: impl Into<String>, detail: Option<String>, at: Origin) {
        self.m.executes.push(item(kind, what, detail, at));
    }

    fn document(&mut self, doc: &Document) {
        let key = self.canonical(&doc.path);
        if !self.seen.insert(key) {
            return;
        }
        // `${VARS}` anywhere in the file.
        if let Some(f) = &doc.file {
            for p in model::doc::env::references(f.text()) {
                let at = origin(doc, Some(Span { start: p.start as u32, end: p.end as u32 }));
                let detail = p.default.as_ref().map(|d| format!("default {d:?}"));
                self.m.env_vars.push(item("variable", p.name.clone(), detail, at));
            }
        }
        if let Some(s) = doc.sherma() {
            self.sherma(doc, s);
        } else if let Some(l) = doc.loki() {
            self.loki(doc, l);
        } else if let Some(l) = doc.lllm() {
            self.lllm(l);
        }
        if self.providers {
            self.providers(doc);
        }
    }

    /// An LLLM config: each agent's Python tools (`tools`), URL skills and prompt files.
    fn lllm(&mut self, l: &model::doc::lllm::LllmDoc) {
        for a in &l.effective.agents {
            let at_of = |v: &model::doc::lllm::PVal| {
                let o = v.from();
                Origin { file: PathBuf::from(&o.file), line: o.line, column: o.column }
            };
            if let Some(v) = a.get("tools") {
                for t in v.to_json().as_array().into_iter().flatten().filter_map(|t| t.as_str()) {
                    if let Some(path) = lllm::tools::import_path(t) {
                        self.exec("python import", path, Some(format!("tool of agent {}", a.name)), at_of(v));
                    }
                }
            }
            if let Some(v) = a.get("skills") {
                for u in lllm::tools::classify(Some(&v.to_json())).urls {
                    self.host("skill URL", &u, at_of(v));
                }
            }
            if let Some(p) = l.prompt_of(&a.name) {
                let at = a.get("system_prompt_path").map(at_of).unwrap_or(Origin { file: PathBuf::new(), line: 0, column: 0 });
                match &p.hit {
                    Some(model::doc::lllm::package::PromptHit::File(f)) => self.read_file("prompt", f, at),
                    // A prompt module's prompt is read by running the module (the Python bridge).
                    Some(model::doc::lllm::package::PromptHit::Module(m, line)) => {
                        let detail = Some(format!("prompt module of agent {} (prompt `{}`, declared at line {line})", a.name, p.path));
                        self.exec("python import", m.display().to_string(), detail, at);
                    }
                    // Declared by no module by name: a run imports the package's prompt modules.
                    None => {
                        if let Some(pkg) = l.package()
                            && model::doc::lllm::package::PromptIndex::of(pkg).modules > 0
                        {
                            for f in pkg.prompts.iter().filter(|f| f.path.is_dir()) {
                                let detail = Some(format!("prompt modules, imported to find prompt `{}` of agent {}", p.path, a.name));
                                self.exec("python import", format!("{}/**/*.py", f.path.display()), detail, at.clone());
                            }
                        }
                    }
                }
            }
        }
    }

    /// The variables a tool file declares (`# @env NAME`).
    fn tool_env(&mut self, path: &Path) {
        let Ok(text) = syntax::source::read_bounded_text(path, syntax::source::SIDE_FILE_CAP, None) else { return };
        for (name, line) in connect::childenv::env_declarations(&text) {
            let at = Origin { file: path.to_path_buf(), line, column: 1 };
            self.m.env_vars.push(item("variable", name, Some("declared by a tool (@env)".into()), at));
        }
    }

    /// LLM providers of live runs (scripted and replay runs contact none).
    fn providers(&mut self, doc: &Document) {
        let models = connect::llm::models_used(doc);
        if models.is_empty() {
            return;
        }
        let cfg = crate::live_config().unwrap_or_default();
        for (m, _) in models {
            let at = origin(doc, None);
            match cfg.endpoint(&m.provider) {
                Ok(ep) => {
                    let detail = Some(format!("live runs of {}:{}", m.provider, m.name));
                    self.m.hosts.push(item("LLM provider", host_of(&ep.base_url), detail, at));
                }
                Err(_) => {
                    let detail = Some(format!("live runs of {}:{}; no endpoint configured", m.provider, m.name));
                    self.m.hosts.push(item("LLM provider", m.provider.clone(), detail, at));
                }
            }
        }
    }

    fn entity_field(&mut self, doc: &Document, e: &Entity, key: &str) -> Option<(String, Origin)> {
        let v = e.get(key)?;
        Some((v.value.clone(), origin(doc, Some(v.span))))
    }

    fn mcp_spec(&mut self, doc: &Document, spec: &McpServerSpec, at: Origin) {
        match &spec.transport {
            McpTransport::Stdio { command, args, cwd, .. } => {
                let mut line = command.clone();
                for a in args {
                    line.push(' ');
                    line.push_str(&shell_word(a));
                }
                let dir = cwd.clone().unwrap_or_else(|| doc.base_dir.clone());
                self.exec("MCP command", line, Some(format!("server {}, in {}", spec.name, dir.display())), at);
            }
            McpTransport::Http { url, .. } | McpTransport::Sse { url } => {
                let at2 = at.clone();
                self.host("MCP server", url, at2);
            }
        }
    }

    fn sherma(&mut self, doc: &Document, s: &ShermaDoc) {
        for t in &s.tools {
            if let Some((ip, at)) = self.entity_field(doc, t, "import_path") {
                self.exec("python import", ip, Some(format!("tool {}", t.id_str())), at);
            }
        }
        for h in &s.hooks {
            if let Some((ip, at)) = self.entity_field(doc, h, "import_path") {
                self.exec("python import", ip, Some("hook executor".into()), at);
            }
            if let Some((url, at)) = self.entity_field(doc, h, "url") {
                self.host("remote hook", &url, at);
            }
            if let Some(m) = h.node.get("mcp") {
                let at = origin(doc, Some(m.span));
                match McpServerSpec::from_json("hooks", &m.to_json(), &doc.base_dir, None) {
                    Ok(spec) => self.mcp_spec(doc, &spec, at),
                    Err(e) => self.exec("MCP command", "(unreadable)", Some(e), at),
                }
            }
        }
        for a in &s.sub_agents {
            if let Some((url, at)) = self.entity_field(doc, a, "url") {
                self.host("A2A agent", &url, at);
            }
            if let Some((ip, at)) = self.entity_field(doc, a, "import_path") {
                self.exec("python import", ip, Some(format!("sub-agent {}", a.id_str())), at);
            }
            if let Some(p) = &a.resolved_path {
                let at = a.get("yaml_path").map(|v| origin(doc, Some(v.span))).unwrap_or_else(|| origin(doc, Some(a.span)));
                self.read_file("sub-agent file", p, at);
                if p.is_file() {
                    let child = load_path(p);
                    self.document(&child);
                }
            }
        }
        for m in &s.mcp_servers {
            let at = origin(doc, Some(m.span));
            match McpServerSpec::from_json(m.id_str(), &m.node.to_json(), &doc.base_dir, None) {
                Ok(spec) => self.mcp_spec(doc, &spec, at),
                Err(e) => self.exec("MCP command", "(unreadable)", Some(e), at),
            }
        }
        for sk in &s.skills {
            if let Some((url, at)) = self.entity_field(doc, sk, "url") {
                self.host("skill card", &url, at);
            }
            if let Some(p) = &sk.resolved_path {
                let at = sk.get("skill_card_path").map(|v| origin(doc, Some(v.span))).unwrap_or_else(|| origin(doc, Some(sk.span)));
                self.read_file("skill card", p, at);
            }
        }
        for (_, card) in &s.skill_cards {
            let at = Origin { file: card.path.clone(), line: 0, column: 0 };
            if is_url(&card.base) {
                self.host("skill files", &card.base, at.clone());
            } else if !card.base.trim().is_empty() {
                // A local `base_uri`: the skill's files are read from there.
                let base = card.path.parent().unwrap_or(Path::new("")).join(card.base.trim().trim_start_matches("file://"));
                self.read_file("skill files", &base, at.clone());
            }
            for (name, def) in &card.card.mcps {
                let dir = card.path.parent().map(Path::to_path_buf).unwrap_or_default();
                match McpServerSpec::from_json(name, def, &dir, None) {
                    Ok(spec) => self.mcp_spec(doc, &spec, at.clone()),
                    Err(e) => self.exec("MCP command", "(unreadable)", Some(e), at.clone()),
                }
            }
        }
        for url in &s.agent_skills.urls {
            self.host("skill", url, origin(doc, None));
        }
        for p in &s.prompts {
            if let Some(path) = &p.resolved_path {
                let at = p.get("instructions_path").map(|v| origin(doc, Some(v.span))).unwrap_or_else(|| origin(doc, Some(p.span)));
                self.read_file("prompt file", path, at);
            }
        }
        if let Some(c) = &s.checkpointer
            && let Some(path) = &c.resolved_path
        {
            let at = c.get("path").map(|v| origin(doc, Some(v.span))).unwrap_or_else(|| origin(doc, Some(c.span)));
            self.read_file("checkpointer database", path, at);
        }
    }

    fn loki(&mut self, doc: &Document, l: &LokiDoc) {
        let mut tools_used = false;
        let mut mcp_used: Vec<String> = l.mcp_servers.iter().map(|s| s.value.clone()).collect();
        for n in &l.nodes {
            match &n.body {
                NodeBody::Script(s) => {
                    if let (Some(name), Some(path)) = (&s.script, &s.script_path) {
                        let at = origin(doc, Some(name.span));
                        self.exec("script", path.display().to_string(), Some(interpreter_of(path)), at.clone());
                        self.read_file("script", path, at);
                    }
                }
                NodeBody::Llm(x) => {
                    if x.tools.as_ref().is_some_and(|t| !t.is_empty()) {
                        tools_used = true;
                    }
                    for t in x.tools.iter().flatten() {
                        if let Some(server) = t.value.strip_prefix("mcp:")
                            && !mcp_used.iter().any(|s| s == server)
                        {
                            mcp_used.push(server.to_string());
                        }
                    }
                }
                NodeBody::Rag(r) => {
                    for d in &r.documents {
                        let at = origin(doc, Some(d.span));
                        if is_url(&d.value) {
                            self.host("RAG document", &d.value, at);
                        } else {
                            let p = doc.base_dir.join(&d.value);
                            self.read_file("RAG document", &p, at);
                        }
                    }
                    if let Some(m) = r.embedding_model.as_ref().filter(|_| self.providers) {
                        let cfg = crate::live_config().unwrap_or_default();
                        let provider = m.split_once(':').map(|(p, _)| p).unwrap_or(m);
                        let what = cfg.endpoint(provider).map(|e| host_of(&e.base_url)).unwrap_or_else(|_| provider.to_string());
                        self.m.hosts.push(item("embeddings", what, Some(format!("model {m}")), origin(doc, Some(n.id.span))));
                    }
                }
                NodeBody::Agent(a) => {
                    if let Some(name) = &a.agent {
                        let dirs = [l.agents_dir().join(&name.value), l.agent_dir.join("agents").join(&name.value)];
                        if let Some(path) = dirs.iter().map(|d| d.join("graph.yaml")).find(|p| p.is_file()) {
                            self.read_file("sub-agent", &path, origin(doc, Some(name.span)));
                            let child = load_path(&path);
                            self.document(&child);
                        }
                    }
                }
                _ => {}
            }
        }
        if tools_used {
            let agent = model::doc::loki::tools::AgentTools::read(&l.agent_dir);
            for f in ["tools.sh", "tools.ts", "tools.js", "tools.py"] {
                let p = l.agent_dir.join(f);
                if p.is_file() {
                    let interp = if f.ends_with(".py") { "the Python bridge".to_string() } else { interpreter_of(&p) };
                    let names = if f.ends_with(".py") {
                        String::new()
                    } else {
                        let own: Vec<&str> = agent
                            .catalog
                            .tools
                            .iter()
                            .filter(|t| t.file == p)
                            .map(|t| t.name.as_str())
                            .collect();
                        if own.is_empty() { String::new() } else { format!("; tools {}", own.join(", ")) }
                    };
                    self.exec("tool file", p.display().to_string(), Some(format!("{interp}{names}")), origin(doc, None));
                    self.tool_env(&p);
                }
            }
            for g in &l.global_tools {
                let at = origin(doc, Some(g.span));
                match loki::tools::find_global_tool(&l.agent_dir, &g.value) {
                    Ok(p) => {
                        self.exec("global tool", p.display().to_string(), Some(interpreter_of(&p)), at.clone());
                        self.read_file("global tool", &p, at);
                        self.tool_env(&p);
                    }
                    Err(_) => self.exec("global tool", g.value.clone(), Some("not found; the call fails".into()), at),
                }
            }
        }
        if !mcp_used.is_empty() {
            // `${VARS}` in the definitions of the servers used (`mcp.json`).
            for (name, file, entry) in connect::mcp::loki_server_entries(&l.agent_dir, &mcp_used).into_iter().flatten() {
                for p in model::doc::env::references(&entry.to_string()) {
                    let at = Origin { file: file.clone(), line: 0, column: 0 };
                    self.m.env_vars.push(item("variable", p.name, Some(format!("MCP server {name}")), at));
                }
            }
            let specs = connect::mcp::loki_server_specs(&l.agent_dir, &mcp_used);
            let at = l.mcp_servers.first().map(|s| origin(doc, Some(s.span))).unwrap_or_else(|| origin(doc, None));
            for spec in specs {
                match spec {
                    Ok(spec) => self.mcp_spec(doc, &spec, at.clone()),
                    Err((name, why)) => self.exec("MCP command", format!("server {name}"), Some(why), at.clone()),
                }
            }
        }
    }
}

/// The program that runs a script or tool file, by extension (as `loki::script` picks it).
fn interpreter_of(path: &Path) -> String {
    match path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).as_deref() {
        Some("sh") => "bash".into(),
        Some("py") => "python3".into(),
        Some("ts" | "mts") => "a TypeScript runtime (deno, bun or tsx)".into(),
        Some("js" | "mjs" | "cjs") => "node".into(),
        _ => "run directly".into(),
    }
}

/// `s` as a shell word (quoted when it holds anything but plain characters).
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_scheme_and_authority_without_credentials() {
        assert_eq!(host_of("https://User:pw@Evil.Example:8443/x?k=1"), "https://evil.example:8443");
        assert_eq!(host_of("http://127.0.0.1:9/a"), "http://127.0.0.1:9");
        assert_eq!(host_of("not a url"), "not a url");
        assert_eq!(runtime::secrets::without_credentials("https://u:p@h.example/x?y"), "https://h.example/x?y");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("--flag=x"), "--flag=x");
    }
}
