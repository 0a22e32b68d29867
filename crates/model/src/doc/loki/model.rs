//! The typed Loki model: the graph, its nodes per type and the sets and targets the validator,
//! the lowering into the IR and the executor read, with upstream's defaults applied.

use crate::doc::Sp;
use expr::template::InputValidation;
use serde_json::Value;
use std::path::{Path, PathBuf};
use syntax::source::Span;
use syntax::yaml::YNode;

// Upstream's defaults, applied where upstream applies them.
pub const DEFAULT_MAX_LOOP_ITERATIONS: u64 = 100;
pub const DEFAULT_MAX_CONCURRENCY: u64 = 8;
pub const DEFAULT_AGENT_TIMEOUT: u64 = 300;
pub const DEFAULT_SCRIPT_TIMEOUT: u64 = 30;
pub const DEFAULT_RAG_TIMEOUT: u64 = 120;
pub const DEFAULT_LLM_MAX_ATTEMPTS: u64 = 1;
pub const DEFAULT_LLM_MAX_ITERATIONS: u64 = 10;
pub const DEFAULT_RAG_QUERY: &str = "{{initial_prompt}}";
pub const DEFAULT_MAP_OUTPUT_KEY: &str = "output";
/// coyote 0.10.3: agent nodes retry transient errors `max_attempts` times (default 1).
pub const DEFAULT_AGENT_MAX_ATTEMPTS: u64 = 1;
/// coyote 0.10.3: dynamically spawned sub-agents running at once (`max_concurrent_agents`).
pub const DEFAULT_MAX_CONCURRENT_AGENTS: u64 = 4;
/// coyote 0.10.3: agent nesting depth (`max_agent_depth`).
pub const DEFAULT_MAX_AGENT_DEPTH: u64 = 3;
/// coyote 0.10.3: background jobs running at once (`max_concurrent_jobs`).
pub const DEFAULT_MAX_CONCURRENT_JOBS: u64 = 5;

/// coyote 0.10.3's built-in agent functions, by family: what an agent (a graph's llm nodes
/// through their `tools:` list) may be offered besides its own tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentFunctions {
    /// `agent__send_message`, `agent__check_inbox`: always offered.
    Teammate,
    /// `agent__spawn` and the rest: with `can_spawn_agents`.
    Supervisor,
    /// `job__start` and the rest: while `max_concurrent_jobs` is above 0.
    Job,
}

impl AgentFunctions {
    /// The functions of the family, in coyote's order.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            AgentFunctions::Teammate => &["agent__send_message", "agent__check_inbox"],
            AgentFunctions::Supervisor => &[
                "agent__spawn",
                "agent__check",
                "agent__collect",
                "agent__list_running",
                "agent__list_available",
                "agent__cancel",
            ],
            AgentFunctions::Job => &["job__start", "job__check", "job__collect", "job__cancel", "job__list"],
        }
    }

    /// The family of the built-in function `name`, if it is one.
    pub fn of(name: &str) -> Option<AgentFunctions> {
        [AgentFunctions::Teammate, AgentFunctions::Supervisor, AgentFunctions::Job]
            .into_iter()
            .find(|f| f.names().contains(&name))
    }
}

/// A `{{path}}` template: its text and the YAML scalar it came from (for mapping offsets inside
/// the text back to the file with `schema::value_offset_to_source`).
#[derive(Clone, Debug)]
pub struct TemplateText {
    pub text: String,
    pub node: YNode,
}

impl TemplateText {
    pub fn span(&self) -> Span {
        self.node.span
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reducer {
    Append,
    Extend,
    Concat,
    Sum,
    Max,
    Min,
    Merge,
    Overwrite,
}

impl Reducer {
    pub fn parse(s: &str) -> Option<Reducer> {
        Some(match s {
            "append" => Reducer::Append,
            "extend" => Reducer::Extend,
            "concat" => Reducer::Concat,
            "sum" => Reducer::Sum,
            "max" => Reducer::Max,
            "min" => Reducer::Min,
            "merge" => Reducer::Merge,
            "overwrite" => Reducer::Overwrite,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Reducer::Append => "append",
            Reducer::Extend => "extend",
            Reducer::Concat => "concat",
            Reducer::Sum => "sum",
            Reducer::Max => "max",
            Reducer::Min => "min",
            Reducer::Merge => "merge",
            Reducer::Overwrite => "overwrite",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ReducerDecl {
    pub key: Sp<String>,
    pub reducer: Sp<Reducer>,
}

#[derive(Clone, Debug)]
pub struct Variable {
    pub name: Sp<String>,
    pub description: Option<String>,
    /// The default as text (scripts receive it as an environment variable).
    pub default: Option<String>,
}

/// `settings:` with upstream's defaults applied.
#[derive(Clone, Debug)]
pub struct Settings {
    pub max_loop_iterations: u64,
    pub timeout: Option<u64>,
    pub log_state_snapshots: bool,
    pub validate_before_run: bool,
    pub max_concurrency: u64,
    /// The `settings:` mapping, when present.
    pub span: Option<Span>,
    /// Value spans of the keys that were written.
    pub value_spans: Vec<(String, Span)>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_loop_iterations: DEFAULT_MAX_LOOP_ITERATIONS,
            timeout: None,
            log_state_snapshots: true,
            validate_before_run: true,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            span: None,
            value_spans: Vec::new(),
        }
    }
}

impl Settings {
    /// coyote 0.10.3: the per-node visit cap, `None` when `max_loop_iterations: 0` (no cap).
    pub fn visit_cap(&self) -> Option<u64> {
        zero_is_none(self.max_loop_iterations)
    }
    /// coyote 0.10.3: the whole-run bound in seconds, `None` when unset or `timeout: 0`.
    pub fn run_timeout(&self) -> Option<u64> {
        self.timeout.and_then(|t| zero_is_none(t.min(MAX_SECS)))
    }
    pub fn span_of(&self, key: &str) -> Option<Span> {
        self.value_spans
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, s)| *s)
    }
}

/// `mcp_tools:` (coyote 0.10.3, graph level and llm nodes): per-MCP-server tool allow-lists of
/// globs (`*` any run of characters, `?` one character), in declaration order.
#[derive(Clone, Debug, Default)]
pub struct McpTools {
    /// `(server, patterns)`; a later duplicate server replaces the earlier one in place.
    pub servers: Vec<(Sp<String>, Vec<Sp<String>>)>,
    /// The `mcp_tools` mapping.
    pub span: Span,
}

impl McpTools {
    /// The patterns for `server` (`None`: this layer does not restrict the server).
    pub fn patterns(&self, server: &str) -> Option<&[Sp<String>]> {
        self.servers
            .iter()
            .find(|(s, _)| s.value == server)
            .map(|(_, p)| p.as_slice())
    }
    /// Does this layer allow `tool` of `server`? (No entry for the server: yes.)
    pub fn allows(&self, server: &str, tool: &str) -> bool {
        match self.patterns(server) {
            None => true,
            Some(ps) => ps.iter().any(|p| glob_match(&p.value, tool)),
        }
    }
}

/// Does `name` match `pattern` (`*` any run of characters, `?` exactly one; nothing else is
/// special)? Iterative, no backtracking blow-up.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Skills policy (graph level and llm nodes). `None` = inherit.
#[derive(Clone, Debug, Default)]
pub struct SkillsPolicy {
    pub skills_enabled: Option<bool>,
    pub enabled_skills: Option<Vec<Sp<String>>>,
    pub enabled_skills_span: Option<Span>,
    pub inject_skill_instructions: Option<bool>,
    pub skill_instructions: Option<String>,
}

/// The longest timeout a file can set (a year, in seconds): larger values, which would overflow
/// a deadline, are clamped to it.
pub const MAX_SECS: u64 = 366 * 86_400;

#[derive(Clone, Debug, Default)]
pub struct AgentNode {
    pub agent: Option<Sp<String>>,
    pub prompt: Option<TemplateText>,
    pub output_schema: Option<Sp<Value>>,
    /// Seconds; coyote 0.10.3: `0` = no bound.
    pub timeout: Option<Sp<u64>>,
    /// coyote 0.10.3: attempts on transient errors (default 1).
    pub max_attempts: Option<Sp<u64>>,
    /// coyote 0.10.3: route taken when every attempt failed.
    pub fallback: Option<Sp<String>>,
    /// coyote 0.10.3: child-state seeds (key -> template against this graph's state), in
    /// declaration order; only for graph agents. `None` when not written.
    pub inputs: Option<Vec<(Sp<String>, TemplateText)>>,
    /// coyote 0.10.3: peer messaging with the other flagged agent nodes of the same fan-out.
    pub teammates: Option<Sp<bool>>,
}

impl AgentNode {
    /// The timeout in seconds as Loki up to 0.9 reads it (`0` is a zero-second bound).
    pub fn timeout_secs(&self) -> u64 {
        self.timeout
            .as_ref()
            .map(|t| t.value.min(MAX_SECS))
            .unwrap_or(DEFAULT_AGENT_TIMEOUT)
    }
    /// coyote 0.10.3: the bound in seconds, `None` when `timeout: 0` (no bound).
    pub fn timeout_bound(&self) -> Option<u64> {
        zero_is_none(self.timeout_secs())
    }
    pub fn max_attempts(&self) -> u64 {
        self.max_attempts
            .as_ref()
            .map(|t| t.value)
            .unwrap_or(DEFAULT_AGENT_MAX_ATTEMPTS)
    }
    pub fn teammates(&self) -> bool {
        self.teammates.as_ref().is_some_and(|t| t.value)
    }
}

/// coyote 0.10.3's reading of a cap: `0` means "no cap".
pub fn zero_is_none(v: u64) -> Option<u64> {
    (v != 0).then_some(v)
}

#[derive(Clone, Debug, Default)]
pub struct ScriptNode {
    /// The path as written.
    pub script: Option<Sp<String>>,
    /// `<agent_dir>/<script>` (an absolute `script` replaces the base).
    pub script_path: Option<PathBuf>,
    pub fallback: Option<Sp<String>>,
    pub timeout: Option<Sp<u64>>,
    /// Switchyard `x-next`: the declared possible `_next` targets (`None` when not written).
    pub x_next: Option<Vec<Sp<String>>>,
}

impl ScriptNode {
    pub fn timeout_secs(&self) -> u64 {
        self.timeout
            .as_ref()
            .map(|t| t.value.min(MAX_SECS))
            .unwrap_or(DEFAULT_SCRIPT_TIMEOUT)
    }
    /// coyote 0.10.3: the bound in seconds, `None` when `timeout: 0` (no bound).
    pub fn timeout_bound(&self) -> Option<u64> {
        zero_is_none(self.timeout_secs())
    }
}

#[derive(Clone, Debug, Default)]
pub struct ApprovalNode {
    pub question: Option<TemplateText>,
    pub options: Vec<Sp<String>>,
    /// `(option, target)` in declaration order (later duplicates replace earlier ones).
    pub routes: Vec<(Sp<String>, Sp<String>)>,
    pub on_other: Option<Sp<String>>,
}

impl ApprovalNode {
    /// The target of an exact answer, as upstream routes it (`None` -> `on_other`).
    pub fn route(&self, answer: &str) -> Option<&Sp<String>> {
        self.routes
            .iter()
            .find(|(k, _)| k.value == answer)
            .map(|(_, t)| t)
    }
}

#[derive(Clone, Debug, Default)]
pub struct InputNode {
    pub question: Option<TemplateText>,
    pub default: Option<TemplateText>,
    pub validation: Option<Sp<String>>,
    /// The parsed `validation` (`None` when absent or invalid).
    pub parsed_validation: Option<InputValidation>,
}

#[derive(Clone, Debug, Default)]
pub struct LlmNode {
    pub prompt: Option<TemplateText>,
    pub instructions: Option<TemplateText>,
    /// `None` = not written (no tools); entries as written (`mcp:<server>` or a function name).
    pub tools: Option<Vec<Sp<String>>>,
    pub model: Option<Sp<String>>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub reasoning_effort: Option<String>,
    pub fallback: Option<Sp<String>>,
    pub max_attempts: Option<Sp<u64>>,
    pub max_iterations: Option<Sp<u64>>,
    pub output_schema: Option<Sp<Value>>,
    pub timeout: Option<Sp<u64>>,
    pub skills: SkillsPolicy,
    /// coyote 0.10.3: per-node MCP tool allow-lists (intersected with the graph's).
    pub mcp_tools: Option<McpTools>,
}

impl LlmNode {
    pub fn max_attempts(&self) -> u64 {
        self.max_attempts
            .as_ref()
            .map(|t| t.value)
            .unwrap_or(DEFAULT_LLM_MAX_ATTEMPTS)
    }
    pub fn max_iterations(&self) -> u64 {
        self.max_iterations
            .as_ref()
            .map(|t| t.value)
            .unwrap_or(DEFAULT_LLM_MAX_ITERATIONS)
    }
    /// coyote 0.10.3: the turn cap, `None` when `max_iterations: 0` (no cap).
    pub fn turn_cap(&self) -> Option<u64> {
        zero_is_none(self.max_iterations())
    }
    /// The node timeout in seconds (unset or `0`: none).
    pub fn timeout_bound(&self) -> Option<u64> {
        self.timeout
            .as_ref()
            .and_then(|t| zero_is_none(t.value.min(MAX_SECS)))
    }
}

#[derive(Clone, Debug, Default)]
pub struct RagNode {
    pub documents: Vec<Sp<String>>,
    /// Span of the `documents` value (or of the node key when absent).
    pub documents_span: Span,
    pub query: Option<TemplateText>,
    pub top_k: Option<u64>,
    pub embedding_model: Option<String>,
    pub chunk_size: Option<u64>,
    pub chunk_overlap: Option<u64>,
    pub reranker_model: Option<String>,
    pub batch_size: Option<u64>,
    pub extractor_model: Option<String>,
    pub extractor_prompt: Option<String>,
    pub graph_hops: Option<u64>,
    pub driver: Option<Sp<String>>,
    pub timeout: Option<Sp<u64>>,
}

impl RagNode {
    /// The query template text (`{{initial_prompt}}` when not written).
    pub fn query_text(&self) -> &str {
        self.query
            .as_ref()
            .map(|q| q.text.as_str())
            .unwrap_or(DEFAULT_RAG_QUERY)
    }
    pub fn timeout_secs(&self) -> u64 {
        self.timeout
            .as_ref()
            .map(|t| t.value.min(MAX_SECS))
            .unwrap_or(DEFAULT_RAG_TIMEOUT)
    }
    /// coyote 0.10.3: the bound in seconds, `None` when `timeout: 0` (no bound).
    pub fn timeout_bound(&self) -> Option<u64> {
        zero_is_none(self.timeout_secs())
    }
}

#[derive(Clone, Debug, Default)]
pub struct EndNode {
    pub output: Option<TemplateText>,
}

#[derive(Clone, Debug, Default)]
pub struct MapNode {
    pub over: Option<TemplateText>,
    pub as_key: Option<Sp<String>>,
    pub branch: Option<Sp<String>>,
    pub collect_into: Option<Sp<String>>,
    pub output_key: Option<Sp<String>>,
    pub max_concurrency: Option<Sp<MaxConcurrency>>,
}

/// A map's `max_concurrency`: a number, or (coyote 0.10.3) a template that is exactly one
/// `{{key}}` (whitespace around it allowed) resolving to a positive integer at run time.
#[derive(Clone, Debug)]
pub enum MaxConcurrency {
    Fixed(u64),
    /// The text as written; [`MaxConcurrency::template_key`] says whether it is well formed.
    Template(TemplateText),
}

impl MaxConcurrency {
    /// The key of a well-formed `"{{key}}"` template (whitespace inside and around allowed),
    /// `None` for anything else (text around it, two references, an empty key).
    pub fn template_key(text: &str) -> Option<&str> {
        let t = text.trim();
        let inner = t.strip_prefix("{{")?.strip_suffix("}}")?.trim();
        let ok = !inner.is_empty()
            && !inner.contains("{{")
            && !inner.contains("}}")
            && !inner.chars().any(char::is_whitespace);
        ok.then_some(inner)
    }
    /// Resolve against the state: a fixed number as is; a template's key must hold a positive
    /// integer (a number, or a string of digits). The error says why not.
    pub fn resolve(&self, state: &Value) -> Result<u64, String> {
        match self {
            MaxConcurrency::Fixed(n) => Ok(*n),
            MaxConcurrency::Template(t) => {
                let Some(key) = MaxConcurrency::template_key(&t.text) else {
                    return Err(format!(
                        "map `max_concurrency` '{}' must be an integer or exactly one {{{{key}}}}",
                        t.text
                    ));
                };
                let v = expr::template::lookup(state, key);
                let n = match v {
                    Some(Value::Number(n)) => n.as_u64(),
                    Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
                    _ => None,
                };
                match n {
                    Some(n) if n >= 1 => Ok(n),
                    _ => Err(format!(
                        "map `max_concurrency` '{}' must resolve to a positive integer, got {}",
                        t.text,
                        v.map(|v| v.to_string()).unwrap_or_else(|| "nothing (key absent)".into())
                    )),
                }
            }
        }
    }
}

impl MapNode {
    pub fn output_key(&self) -> &str {
        self.output_key
            .as_ref()
            .map(|k| k.value.as_str())
            .unwrap_or(DEFAULT_MAP_OUTPUT_KEY)
    }
    /// Effective concurrency (clamped to >= 1, as upstream does at run time). A template is not
    /// resolved here (the settings value is used): see [`MapNode::concurrency_in`].
    pub fn concurrency(&self, settings: &Settings) -> u64 {
        match self.max_concurrency.as_ref().map(|m| &m.value) {
            Some(MaxConcurrency::Fixed(n)) => *n,
            _ => settings.max_concurrency,
        }
        .max(1)
    }
    /// coyote 0.10.3: effective concurrency with a `{{key}}` template resolved against `state`.
    pub fn concurrency_in(&self, settings: &Settings, state: &Value) -> Result<u64, String> {
        match self.max_concurrency.as_ref() {
            Some(m) => m.value.resolve(state).map(|n| n.max(1)),
            None => Ok(settings.max_concurrency.max(1)),
        }
    }
}

/// The per-type part of a node.
#[derive(Clone, Debug)]
pub enum NodeBody {
    Agent(AgentNode),
    Script(ScriptNode),
    Approval(ApprovalNode),
    Input(InputNode),
    Llm(Box<LlmNode>),
    Rag(RagNode),
    End(EndNode),
    Map(MapNode),
    /// Missing or unknown `type`.
    Unknown,
}

/// How a node names another (the label upstream's reference check uses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetKind {
    Next,
    /// An approval route; the option it is keyed by.
    Route(String),
    OnOther,
    ScriptFallback,
    LlmFallback,
    /// coyote 0.10.3: an agent node's `fallback`.
    AgentFallback,
    MapBranch,
}

impl TargetKind {
    /// Upstream's label in `References non-existent node '<t>' in <label>`.
    pub fn label(&self) -> &'static str {
        match self {
            TargetKind::Next => "'next'",
            TargetKind::Route(_) => "approval 'routes'",
            TargetKind::OnOther => "approval 'on_other'",
            TargetKind::ScriptFallback => "script 'fallback'",
            TargetKind::LlmFallback => "llm 'fallback'",
            TargetKind::AgentFallback => "agent 'fallback'",
            TargetKind::MapBranch => "map 'branch'",
        }
    }
}

/// A declared edge: kind and target (with its span).
#[derive(Clone, Debug)]
pub struct Target<'a> {
    pub kind: TargetKind,
    pub to: &'a Sp<String>,
}

#[derive(Clone, Debug)]
pub struct LokiNode {
    /// The key under `nodes:` (span of the key).
    pub id: Sp<String>,
    /// The `id:` field when written.
    pub id_field: Option<Sp<String>>,
    /// The `type` as written (empty when missing), with its span (the key's when missing).
    pub kind: Sp<String>,
    pub description: Option<String>,
    pub next: Vec<Sp<String>>,
    /// `next` was written as a list (a list of one behaves like a string).
    pub next_is_list: bool,
    /// Span of the `next` value, when written.
    pub next_span: Option<Span>,
    /// `Some` when `state_updates` is written (even `{}`), in declaration order.
    pub state_updates: Option<Vec<(Sp<String>, TemplateText)>>,
    pub body: NodeBody,
    /// The node's mapping.
    pub span: Span,
    pub node: YNode,
}

impl LokiNode {
    pub fn kind_str(&self) -> &str {
        &self.kind.value
    }
    /// More than one `next` entry: a static fan-out.
    pub fn is_fanout(&self) -> bool {
        self.next.len() > 1
    }
    pub fn output_schema(&self) -> Option<&Sp<Value>> {
        match &self.body {
            NodeBody::Llm(l) => l.output_schema.as_ref(),
            NodeBody::Agent(a) => a.output_schema.as_ref(),
            _ => None,
        }
    }
    /// Top-level `properties` keys of the output schema (llm and agent nodes), sorted.
    pub fn output_schema_properties(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .output_schema()
            .and_then(|s| s.value.get("properties"))
            .and_then(|p| p.as_object())
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    }
    /// The variable bound only inside this node's `state_updates`.
    pub fn scoped_var(&self) -> Option<&'static str> {
        match &self.body {
            NodeBody::Llm(_) | NodeBody::Agent(_) | NodeBody::Rag(_) => Some("output"),
            NodeBody::Approval(_) => Some("choice"),
            NodeBody::Input(_) => Some("input"),
            _ => None,
        }
    }
    /// Every declared target in upstream's order: `next` entries, approval routes (in `options`
    /// order, then the other route keys) and `on_other`, script `fallback`, llm `fallback`, agent
    /// `fallback` (coyote 0.10.3), map `branch`.
    pub fn targets(&self) -> Vec<Target<'_>> {
        let mut out: Vec<Target<'_>> = self
            .next
            .iter()
            .map(|t| Target {
                kind: TargetKind::Next,
                to: t,
            })
            .collect();
        match &self.body {
            NodeBody::Approval(a) => {
                let mut done: Vec<&str> = Vec::new();
                for o in &a.options {
                    if done.contains(&o.value.as_str()) {
                        continue;
                    }
                    if let Some((k, t)) = a.routes.iter().find(|(k, _)| k.value == o.value) {
                        done.push(&k.value);
                        out.push(Target {
                            kind: TargetKind::Route(k.value.clone()),
                            to: t,
                        });
                    }
                }
                for (k, t) in &a.routes {
                    if !done.contains(&k.value.as_str()) {
                        done.push(&k.value);
                        out.push(Target {
                            kind: TargetKind::Route(k.value.clone()),
                            to: t,
                        });
                    }
                }
                if let Some(o) = &a.on_other {
                    out.push(Target {
                        kind: TargetKind::OnOther,
                        to: o,
                    });
                }
            }
            NodeBody::Script(s) => {
                if let Some(f) = &s.fallback {
                    out.push(Target {
                        kind: TargetKind::ScriptFallback,
                        to: f,
                    });
                }
            }
            NodeBody::Llm(l) => {
                if let Some(f) = &l.fallback {
                    out.push(Target {
                        kind: TargetKind::LlmFallback,
                        to: f,
                    });
                }
            }
            NodeBody::Agent(a) => {
                if let Some(f) = &a.fallback {
                    out.push(Target {
                        kind: TargetKind::AgentFallback,
                        to: f,
                    });
                }
            }
            NodeBody::Map(m) => {
                if let Some(b) = &m.branch {
                    out.push(Target {
                        kind: TargetKind::MapBranch,
                        to: b,
                    });
                }
            }
            _ => {}
        }
        out
    }
    /// The templated fields that are rendered (name, template), `state_updates` values included.
    pub fn templates(&self) -> Vec<(String, &TemplateText)> {
        let fields: Vec<(&str, &Option<TemplateText>)> = match &self.body {
            NodeBody::Agent(a) => vec![("prompt", &a.prompt)],
            NodeBody::Approval(a) => vec![("question", &a.question)],
            NodeBody::Input(i) => vec![("question", &i.question), ("default", &i.default)],
            NodeBody::Llm(l) => vec![("instructions", &l.instructions), ("prompt", &l.prompt)],
            NodeBody::Rag(r) => vec![("query", &r.query)],
            NodeBody::End(e) => vec![("output", &e.output)],
            NodeBody::Map(m) => vec![("over", &m.over)],
            NodeBody::Script(_) | NodeBody::Unknown => Vec::new(),
        };
        let mut out: Vec<(String, &TemplateText)> = fields
            .into_iter()
            .filter_map(|(n, t)| t.as_ref().map(|t| (n.to_string(), t)))
            .collect();
        if let NodeBody::Agent(AgentNode {
            inputs: Some(inputs),
            ..
        }) = &self.body
        {
            for (k, v) in inputs {
                out.push((format!("inputs.{}", k.value), v));
            }
        }
        if let Some(su) = &self.state_updates {
            for (k, v) in su {
                out.push((format!("state_updates.{}", k.value), v));
            }
        }
        out
    }
    /// The primary templates upstream's parallel-read analysis looks at (no `state_updates`).
    pub fn primary_template_texts(&self) -> Vec<&str> {
        match &self.body {
            // coyote 0.10.3: `inputs` values count as reads.
            NodeBody::Agent(a) => a
                .prompt
                .iter()
                .chain(a.inputs.iter().flatten().map(|(_, t)| t))
                .map(|t| t.text.as_str())
                .collect(),
            NodeBody::Approval(a) => a.question.iter().map(|t| t.text.as_str()).collect(),
            NodeBody::Input(i) => i
                .question
                .iter()
                .chain(i.default.iter())
                .map(|t| t.text.as_str())
                .collect(),
            NodeBody::Llm(l) => l
                .prompt
                .iter()
                .chain(l.instructions.iter())
                .map(|t| t.text.as_str())
                .collect(),
            NodeBody::Rag(r) => vec![r.query_text()],
            NodeBody::End(e) => e.output.iter().map(|t| t.text.as_str()).collect(),
            NodeBody::Map(m) => m.over.iter().map(|t| t.text.as_str()).collect(),
            NodeBody::Script(_) | NodeBody::Unknown => Vec::new(),
        }
    }
    /// Upstream's read-set: root keys of the primary templates and of the `state_updates`
    /// values, without the node's scoped variable. Sorted, distinct.
    pub fn read_set(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        let scoped = self.scoped_var();
        let mut add = |src: &str, skip_scoped: bool| {
            for k in expr::template::root_keys(src) {
                if skip_scoped && Some(k.as_str()) == scoped {
                    continue;
                }
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        };
        for t in self.primary_template_texts() {
            add(t, false);
        }
        if let Some(su) = &self.state_updates {
            for (_, v) in su {
                add(&v.text, true);
            }
        }
        keys.sort();
        keys
    }
    /// Upstream's write-set: `state_updates` keys plus output-schema `properties` keys (llm and
    /// agent). Sorted, distinct.
    pub fn write_set(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .state_updates
            .iter()
            .flatten()
            .map(|(k, _)| k.value.clone())
            .collect();
        keys.extend(self.output_schema_properties());
        keys.sort();
        keys.dedup();
        keys
    }
    /// The node's `fallback` target (script, llm and, coyote 0.10.3, agent nodes).
    pub fn fallback(&self) -> Option<&Sp<String>> {
        match &self.body {
            NodeBody::Script(s) => s.fallback.as_ref(),
            NodeBody::Llm(l) => l.fallback.as_ref(),
            NodeBody::Agent(a) => a.fallback.as_ref(),
            _ => None,
        }
    }
    pub fn agent(&self) -> Option<&AgentNode> {
        match &self.body {
            NodeBody::Agent(a) => Some(a),
            _ => None,
        }
    }
    pub fn llm(&self) -> Option<&LlmNode> {
        match &self.body {
            NodeBody::Llm(l) => Some(l),
            _ => None,
        }
    }
    pub fn script(&self) -> Option<&ScriptNode> {
        match &self.body {
            NodeBody::Script(s) => Some(s),
            _ => None,
        }
    }
    pub fn map(&self) -> Option<&MapNode> {
        match &self.body {
            NodeBody::Map(m) => Some(m),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct LokiDoc {
    pub name: Option<String>,
    pub name_span: Option<Span>,
    pub description: Option<String>,
    /// The version as written (`None`: not written, which means "1.0").
    pub version: Option<Sp<String>>,
    pub model: Option<Sp<String>>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub reasoning_effort: Option<String>,
    pub global_tools: Vec<Sp<String>>,
    pub mcp_servers: Vec<Sp<String>>,
    /// coyote 0.10.3: per-server MCP tool allow-lists for every node using `mcp:<server>`.
    pub mcp_tools: Option<McpTools>,
    /// coyote 0.10.3: background jobs running at once across the run (`0` disables jobs).
    pub max_concurrent_jobs: Option<Sp<u64>>,
    /// coyote 0.10.3: may llm nodes spawn sub-agents (default: the graph has an agent node).
    pub can_spawn_agents: Option<Sp<bool>>,
    /// coyote 0.10.3: dynamically spawned sub-agents running at once (default 4).
    pub max_concurrent_agents: Option<Sp<u64>>,
    /// coyote 0.10.3: agent nesting depth (default 3).
    pub max_agent_depth: Option<Sp<u64>>,
    pub skills: SkillsPolicy,
    pub conversation_starters: Vec<String>,
    pub variables: Vec<Variable>,
    pub settings: Settings,
    /// Seed state, in file order (a JSON object).
    pub initial_state: Value,
    /// Keys of `initial_state` with their spans.
    pub initial_state_keys: Vec<Sp<String>>,
    pub reducers: Vec<ReducerDecl>,
    pub start: Option<Sp<String>>,
    /// Nodes in declaration order (a duplicate key replaces the earlier node in place).
    pub nodes: Vec<LokiNode>,
    /// Span of the `nodes:` key (or of the file head when missing).
    pub nodes_span: Span,
    /// The agent directory (the folder of graph.yaml): scripts, tools.sh and rag documents
    /// resolve against it; agent nodes name its siblings.
    pub agent_dir: PathBuf,
}

impl LokiDoc {
    /// The `model` of every llm node that sets one: (node id, model text).
    pub fn llm_models(&self) -> Vec<(String, String)> {
        self.nodes
            .iter()
            .filter_map(|n| match &n.body {
                NodeBody::Llm(l) => l.model.as_ref().map(|m| (n.id.value.clone(), m.value.clone())),
                _ => None,
            })
            .collect()
    }

    /// coyote 0.10.3: `can_spawn_agents`, else whether the graph has an agent node.
    pub fn can_spawn_agents(&self) -> bool {
        match &self.can_spawn_agents {
            Some(v) => v.value,
            None => self.nodes.iter().any(|n| matches!(n.body, NodeBody::Agent(_))),
        }
    }
    pub fn max_concurrent_agents(&self) -> u64 {
        self.max_concurrent_agents
            .as_ref()
            .map(|v| v.value)
            .unwrap_or(DEFAULT_MAX_CONCURRENT_AGENTS)
    }
    pub fn max_agent_depth(&self) -> u64 {
        self.max_agent_depth
            .as_ref()
            .map(|v| v.value)
            .unwrap_or(DEFAULT_MAX_AGENT_DEPTH)
    }
    /// coyote 0.10.3: `max_concurrent_jobs`, else 5 (`0`: no job functions).
    pub fn max_concurrent_jobs(&self) -> u64 {
        self.max_concurrent_jobs
            .as_ref()
            .map(|v| v.value)
            .unwrap_or(DEFAULT_MAX_CONCURRENT_JOBS)
    }
    /// Whether the graph offers the built-in functions of `family` to its llm nodes (coyote
    /// 0.10.3 builds a graph agent's functions as it does a normal agent's).
    pub fn offers(&self, family: AgentFunctions) -> bool {
        match family {
            AgentFunctions::Teammate => true,
            AgentFunctions::Supervisor => self.can_spawn_agents(),
            AgentFunctions::Job => self.max_concurrent_jobs() > 0,
        }
    }

    /// coyote 0.10.3: the per-item chain of a map whose `branch` is `entry`: the node indexes
    /// reachable from it over `next` and `fallback` (BFS, the entry first; unknown targets
    /// skipped). Script `_next` stays inside the chain at run time, so it adds nothing here.
    pub fn map_chain(&self, entry: &str) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        let Some(first) = self.node_index(entry) else {
            return out;
        };
        out.push(first);
        let mut i = 0;
        while i < out.len() {
            let n = &self.nodes[out[i]];
            for t in n.next.iter().chain(n.fallback()) {
                if let Some(j) = self.node_index(&t.value)
                    && !out.contains(&j)
                {
                    out.push(j);
                }
            }
            i += 1;
        }
        out
    }

    /// Every map chain: `(map index, chain node indexes)`, maps in declaration order.
    pub fn map_chains(&self) -> Vec<(usize, Vec<usize>)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let b = n.map()?.branch.as_ref()?;
                Some((i, self.map_chain(&b.value)))
            })
            .collect()
    }

    pub fn node(&self, id: &str) -> Option<&LokiNode> {
        self.nodes.iter().find(|n| n.id.value == id)
    }
    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id.value == id)
    }
    pub fn has_node(&self, id: &str) -> bool {
        self.node_index(id).is_some()
    }
    pub fn node_ids(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.id.value.as_str())
    }
    pub fn reducer(&self, key: &str) -> Option<Reducer> {
        self.reducers
            .iter()
            .rev()
            .find(|r| r.key.value == key)
            .map(|r| r.reducer.value)
    }
    /// The directory agent nodes' agents live in (the parent of this agent's directory).
    pub fn agents_dir(&self) -> PathBuf {
        self.agent_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }
    /// The version in effect ("1.0" when not written).
    pub fn version_str(&self) -> &str {
        self.version
            .as_ref()
            .map(|v| v.value.as_str())
            .unwrap_or("1.0")
    }
}

/// Comma-joined names, cut after 50 (`, ... (N more)`), for messages that list node ids.
pub fn short_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    const MAX: usize = 50;
    let all: Vec<&str> = names.collect();
    if all.len() <= MAX {
        return all.join(", ");
    }
    format!("{}, ... ({} more)", all[..MAX].join(", "), all.len() - MAX)
}
