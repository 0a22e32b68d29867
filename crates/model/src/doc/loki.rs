//! Loki graph agents (`graph.yaml`, `version: "1.0"`): schema, typed model with spans.
//!
//! The model is what the validator, the lowering into the IR and (later) the executor read, so
//! everything needed to run a node is kept here, with defaults applied where upstream applies
//! them. The parser checks of upstream (reference/loki.md §3) are reported here; the semantic
//! checks of §4 live in `validate::loki`.
//!
//! Upstream ignores unknown keys; we warn about them (with "did you mean"). `x-...` keys are
//! Switchyard extensions that upstream also ignores; the only one with meaning is `x-next` on
//! script nodes (the possible `_next` targets of the script).

use super::Sp;
use super::schema::{Checker, Field, Obj, Ty, head_span, opt, req};
use syntax::diag::{Diagnostic, did_you_mean};
use expr::template::{InputValidation, check_input_validation};
use syntax::source::{SourceFile, Span};
use syntax::yaml::{ScalarValue, YNode};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every node type, in the order of the documentation.
pub const NODE_TYPES: &[&str] = &[
    "agent", "script", "approval", "input", "llm", "rag", "end", "map",
];
/// Reducer names (lower-case; anything else is a parse error upstream).
pub const REDUCERS: &[&str] = &[
    "append",
    "extend",
    "concat",
    "sum",
    "max",
    "min",
    "merge",
    "overwrite",
];
/// Graph schema versions upstream accepts.
pub const SUPPORTED_VERSIONS: &[&str] = &["1.0"];
/// RAG storage drivers upstream accepts.
pub const RAG_DRIVERS: &[&str] = &["yaml", "duckdb", "qdrant"];

pub const DEFAULT_MAX_LOOP_ITERATIONS: u64 = 100;
pub const DEFAULT_MAX_CONCURRENCY: u64 = 8;
pub const DEFAULT_AGENT_TIMEOUT: u64 = 300;
pub const DEFAULT_SCRIPT_TIMEOUT: u64 = 30;
pub const DEFAULT_RAG_TIMEOUT: u64 = 120;
pub const DEFAULT_LLM_MAX_ATTEMPTS: u64 = 1;
pub const DEFAULT_LLM_MAX_ITERATIONS: u64 = 10;
pub const DEFAULT_RAG_QUERY: &str = "{{initial_prompt}}";
pub const DEFAULT_MAP_OUTPUT_KEY: &str = "output";

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

const NEXT_TY: Ty = Ty::OneOf(&[Ty::NodeRef, Ty::List(&Ty::NodeRef)]);
const STATE_UPDATES_TY: Ty = Ty::Map(&Ty::Template);
const SECONDS: Ty = Ty::Int { min: Some(0) };
const COUNT: Ty = Ty::Int { min: Some(0) };

const F_ID: Field = opt(
    "id",
    Ty::Str,
    "node id; filled from the key when omitted, must equal the key when given",
);
const F_DESCRIPTION: Field = opt("description", Ty::Str, "free text");
const F_TYPE: Field = req("type", Ty::Enum(NODE_TYPES), "node type");
const F_NEXT: Field = opt(
    "next",
    NEXT_TY,
    "next node; a list of more than one runs them in parallel (fan-out)",
);
const F_STATE_UPDATES: Field = opt(
    "state_updates",
    STATE_UPDATES_TY,
    "state key -> template, rendered after the node ran (stored as strings)",
);
const F_OUTPUT_SCHEMA: Field = opt(
    "output_schema",
    Ty::Any,
    "JSON Schema; the output is parsed as JSON and its top-level keys merge into state",
);

pub static VARIABLE_DEF: Obj = Obj {
    name: "variable",
    fields: &[
        req(
            "name",
            Ty::Str,
            "variable name; scripts see it as LLM_AGENT_VAR_<NAME>",
        ),
        opt("description", Ty::Str, "what the variable is for"),
        opt("default", Ty::Any, "default value"),
    ],
    open: false,
};

pub static SETTINGS_DEF: Obj = Obj {
    name: "settings",
    fields: &[
        opt(
            "max_loop_iterations",
            COUNT,
            "per-node visit cap, default 100 (0 fails at the first visit)",
        ),
        opt(
            "timeout",
            SECONDS,
            "whole-run wall clock in seconds (0 fails immediately)",
        ),
        opt(
            "log_state_snapshots",
            Ty::Bool,
            "log state snapshots (debug/trace), default true",
        ),
        opt(
            "validate_before_run",
            Ty::Bool,
            "run the validator before every run, default true",
        ),
        opt(
            "max_concurrency",
            COUNT,
            "parallel branches of one super-step and default for map nodes, default 8",
        ),
    ],
    open: false,
};

pub static GRAPH_DEF: Obj = Obj {
    name: "graph",
    fields: &[
        req(
            "name",
            Ty::Str,
            "graph name (used in logs); must be non-empty",
        ),
        opt("description", Ty::Str, "free text"),
        opt("version", Ty::Str, "graph schema version; only \"1.0\""),
        opt(
            "model",
            Ty::Str,
            "agent model (`provider:name`); llm nodes without `model` use it",
        ),
        opt(
            "temperature",
            Ty::Float { min: Some(0.0) },
            "agent temperature",
        ),
        opt("top_p", Ty::Float { min: Some(0.0) }, "agent top_p"),
        opt("reasoning_effort", Ty::Str, "agent reasoning effort"),
        opt(
            "global_tools",
            Ty::List(&Ty::Str),
            "tool files (e.g. `web_search.sh`) llm nodes may whitelist",
        ),
        opt(
            "mcp_servers",
            Ty::List(&Ty::Str),
            "MCP servers llm nodes may use as `mcp:<server>`",
        ),
        opt(
            "skills_enabled",
            Ty::Bool,
            "skills master switch for llm nodes",
        ),
        opt(
            "enabled_skills",
            Ty::List(&Ty::Str),
            "skills llm nodes may use",
        ),
        opt(
            "inject_skill_instructions",
            Ty::Bool,
            "add the skills hint to llm system prompts, default true",
        ),
        opt("skill_instructions", Ty::Str, "custom skills hint text"),
        opt(
            "conversation_starters",
            Ty::List(&Ty::Str),
            "suggested prompts (UI only)",
        ),
        opt(
            "variables",
            Ty::List(&Ty::Obj(&VARIABLE_DEF)),
            "agent variables (env vars for scripts)",
        ),
        opt("settings", Ty::Obj(&SETTINGS_DEF), "execution settings"),
        opt(
            "initial_state",
            Ty::Map(&Ty::Any),
            "seed state; `initial_prompt` is always set to the user's input",
        ),
        opt(
            "reducers",
            Ty::Map(&Ty::Enum(REDUCERS)),
            "state key -> merge rule for parallel (and sequential) writes",
        ),
        req("start", Ty::NodeRef, "the first node"),
        req("nodes", Ty::Map(&Ty::Any), "nodes by id"),
    ],
    open: false,
};

pub static AGENT_NODE: Obj = Obj {
    name: "agent node",
    fields: &[
        F_ID,
        F_DESCRIPTION,
        F_TYPE,
        F_NEXT,
        req(
            "agent",
            Ty::Str,
            "name of a sibling agent directory to spawn",
        ),
        req(
            "prompt",
            Ty::Template,
            "message sent to the agent (strict template)",
        ),
        F_STATE_UPDATES,
        F_OUTPUT_SCHEMA,
        opt("timeout", SECONDS, "seconds, default 300"),
    ],
    open: false,
};

pub static SCRIPT_NODE: Obj = Obj {
    name: "script node",
    fields: &[
        F_ID,
        F_DESCRIPTION,
        F_TYPE,
        F_NEXT,
        req(
            "script",
            Ty::Path,
            "script path relative to the agent directory (.sh, .py or .ts)",
        ),
        F_STATE_UPDATES,
        opt(
            "fallback",
            Ty::NodeRef,
            "node to route to when the script fails",
        ),
        opt("timeout", SECONDS, "seconds, default 30"),
        opt(
            "x-next",
            NEXT_TY,
            "Switchyard: the nodes the script may route to with `_next` (ignored by Loki)",
        ),
    ],
    open: false,
};

pub static APPROVAL_NODE: Obj = Obj {
    name: "approval node",
    fields: &[
        F_ID,
        F_DESCRIPTION,
        F_TYPE,
        F_NEXT,
        req(
            "question",
            Ty::Template,
            "question shown to the user (strict template)",
        ),
        req("options", Ty::List(&Ty::Str), "choices offered"),
        req("routes", Ty::Map(&Ty::NodeRef), "option -> next node"),
        req(
            "on_other",
            Ty::NodeRef,
            "next node for any other (free-text) answer",
        ),
        F_STATE_UPDATES,
    ],
    open: false,
};

pub static INPUT_NODE: Obj = Obj {
    name: "input node",
    fields: &[
        F_ID,
        F_DESCRIPTION,
        F_TYPE,
        F_NEXT,
        req(
            "question",
            Ty::Template,
            "question shown to the user (strict template)",
        ),
        opt(
            "default",
            Ty::Template,
            "used when the answer is empty (lenient template)",
        ),
        opt(
            "validation",
            Ty::Str,
            "`len(input) <op> N`, op one of >=, <=, ==, >, <",
        ),
        F_STATE_UPDATES,
    ],
    open: false,
};

pub static LLM_NODE: Obj = Obj {
    name: "llm node",
    fields: &[
        F_ID,
        F_DESCRIPTION,
        F_TYPE,
        F_NEXT,
        req("prompt", Ty::Template, "user prompt (strict template)"),
        opt(
            "instructions",
            Ty::Template,
            "system prompt (strict template)",
        ),
        opt(
            "tools",
            Ty::List(&Ty::Str),
            "tool whitelist: function names and `mcp:<server>`; none = no tools",
        ),
        opt("model", Ty::Str, "model override (`provider:name`)"),
        opt(
            "temperature",
            Ty::Float { min: Some(0.0) },
            "sampling temperature",
        ),
        opt("top_p", Ty::Float { min: Some(0.0) }, "sampling top_p"),
        opt("reasoning_effort", Ty::Str, "reasoning effort"),
        opt(
            "fallback",
            Ty::NodeRef,
            "node to route to when the call fails",
        ),
        opt(
            "max_attempts",
            COUNT,
            "attempts on transient errors, default 1",
        ),
        opt("max_iterations", COUNT, "tool-call loop turns, default 10"),
        F_STATE_UPDATES,
        F_OUTPUT_SCHEMA,
        opt(
            "timeout",
            SECONDS,
            "seconds for all attempts together (unset = none)",
        ),
        opt("skills_enabled", Ty::Bool, "skills on this node"),
        opt(
            "enabled_skills",
            Ty::List(&Ty::Str),
            "skills this node may use (subset of the graph's)",
        ),
        opt("inject_skill_instructions", Ty::Bool, "add the skills hint"),
        opt("skill_instructions", Ty::Str, "custom skills hint text"),
    ],
    open: false,
};

pub static RAG_NODE: Obj = Obj {
    name: "rag node",
    fields: &[
        F_ID,
        F_DESCRIPTION,
        F_TYPE,
        F_NEXT,
        req(
            "documents",
            Ty::List(&Ty::Str),
            "files, directories, URLs or loader paths (relative to the agent directory)",
        ),
        opt(
            "query",
            Ty::Template,
            "search query (strict template), default {{initial_prompt}}",
        ),
        opt("top_k", COUNT, "chunks to retrieve"),
        opt(
            "embedding_model",
            Ty::Str,
            "embedding model (knowledge-base build)",
        ),
        opt("chunk_size", COUNT, "chunk size (knowledge-base build)"),
        opt(
            "chunk_overlap",
            COUNT,
            "chunk overlap (knowledge-base build)",
        ),
        opt("reranker_model", Ty::Str, "reranker model"),
        opt("batch_size", COUNT, "embedding batch size"),
        opt("extractor_model", Ty::Str, "graph-RAG extraction model"),
        opt(
            "extractor_prompt",
            Ty::Str,
            "graph-RAG extraction prompt (must contain __CHUNK__)",
        ),
        opt("graph_hops", COUNT, "graph-RAG expansion depth"),
        opt("driver", Ty::Str, "storage driver: yaml, duckdb or qdrant"),
        F_STATE_UPDATES,
        opt("timeout", SECONDS, "seconds, default 120"),
    ],
    open: false,
};

pub static END_NODE: Obj = Obj {
    name: "end node",
    fields: &[
        F_ID,
        F_DESCRIPTION,
        F_TYPE,
        F_NEXT,
        opt(
            "output",
            Ty::Template,
            "the graph's result (lenient template)",
        ),
        F_STATE_UPDATES,
    ],
    open: false,
};

pub static MAP_NODE: Obj = Obj {
    name: "map node",
    fields: &[
        F_ID,
        F_DESCRIPTION,
        F_TYPE,
        F_NEXT,
        req("over", Ty::Template, "a single {{key}} resolving to a list"),
        req(
            "as",
            Ty::Str,
            "state key holding the current item in each branch",
        ),
        req(
            "branch",
            Ty::NodeRef,
            "node run once per item (llm, agent, rag or script)",
        ),
        req(
            "collect_into",
            Ty::Str,
            "state key receiving the list of branch outputs",
        ),
        opt(
            "output_key",
            Ty::Str,
            "state key read from each branch, default `output`",
        ),
        opt(
            "max_concurrency",
            COUNT,
            "parallel items, default settings.max_concurrency",
        ),
    ],
    open: false,
};

/// The schema of a node type.
pub fn node_schema(kind: &str) -> Option<&'static Obj> {
    Some(match kind {
        "agent" => &AGENT_NODE,
        "script" => &SCRIPT_NODE,
        "approval" => &APPROVAL_NODE,
        "input" => &INPUT_NODE,
        "llm" => &LLM_NODE,
        "rag" => &RAG_NODE,
        "end" => &END_NODE,
        "map" => &MAP_NODE,
        _ => return None,
    })
}

/// Every object schema of the dialect, for the editor.
pub fn schema_objects() -> Vec<&'static Obj> {
    vec![
        &GRAPH_DEF,
        &SETTINGS_DEF,
        &VARIABLE_DEF,
        &AGENT_NODE,
        &SCRIPT_NODE,
        &APPROVAL_NODE,
        &INPUT_NODE,
        &LLM_NODE,
        &RAG_NODE,
        &END_NODE,
        &MAP_NODE,
    ]
}

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

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
    pub fn span_of(&self, key: &str) -> Option<Span> {
        self.value_spans
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, s)| *s)
    }
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

#[derive(Clone, Debug, Default)]
pub struct AgentNode {
    pub agent: Option<Sp<String>>,
    pub prompt: Option<TemplateText>,
    pub output_schema: Option<Sp<Value>>,
    pub timeout: Option<Sp<u64>>,
}

impl AgentNode {
    pub fn timeout_secs(&self) -> u64 {
        self.timeout
            .as_ref()
            .map(|t| t.value)
            .unwrap_or(DEFAULT_AGENT_TIMEOUT)
    }
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
            .map(|t| t.value)
            .unwrap_or(DEFAULT_SCRIPT_TIMEOUT)
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
            .map(|t| t.value)
            .unwrap_or(DEFAULT_RAG_TIMEOUT)
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
    pub max_concurrency: Option<Sp<u64>>,
}

impl MapNode {
    pub fn output_key(&self) -> &str {
        self.output_key
            .as_ref()
            .map(|k| k.value.as_str())
            .unwrap_or(DEFAULT_MAP_OUTPUT_KEY)
    }
    /// Effective concurrency (clamped to >= 1, as upstream does at run time).
    pub fn concurrency(&self, settings: &Settings) -> u64 {
        self.max_concurrency
            .as_ref()
            .map(|m| m.value)
            .unwrap_or(settings.max_concurrency)
            .max(1)
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
    /// order, then the other route keys) and `on_other`, script `fallback`, llm `fallback`, map
    /// `branch`.
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
            NodeBody::Agent(a) => a.prompt.iter().map(|t| t.text.as_str()).collect(),
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

// ---------------------------------------------------------------------------------------------
// Building the model
// ---------------------------------------------------------------------------------------------

struct Builder<'a> {
    file: &'a SourceFile,
    base_dir: &'a Path,
    diags: &'a mut Vec<Diagnostic>,
}

impl Builder<'_> {
    fn checker(&mut self) -> Checker<'_> {
        Checker::new(self.file, self.diags)
    }

    /// Any non-null scalar, as written (the checker reports wrong types).
    fn sp_str(&self, node: Option<&YNode>) -> Option<Sp<String>> {
        let n = node?;
        Some(Sp::new(n.scalar_text()?.to_string(), n.span))
    }

    fn string(&self, node: Option<&YNode>) -> Option<String> {
        node.and_then(|n| n.scalar_text()).map(str::to_string)
    }

    /// A scalar that upstream types as a string: numbers and booleans are errors.
    fn strict_str(&mut self, node: Option<&YNode>, what: &str) -> Option<Sp<String>> {
        let n = node?;
        self.checker().expect_string_strict(n, what);
        self.sp_str(Some(n))
    }

    fn template(&self, node: Option<&YNode>) -> Option<TemplateText> {
        let n = node?;
        let text = n.scalar_text()?;
        Some(TemplateText {
            text: text.to_string(),
            node: n.clone(),
        })
    }

    fn u64_field(&self, node: Option<&YNode>) -> Option<Sp<u64>> {
        let n = node?;
        let v = n.as_i64().filter(|v| *v >= 0)?;
        Some(Sp::new(v as u64, n.span))
    }

    fn f64_field(&self, node: Option<&YNode>) -> Option<f64> {
        node?.as_f64()
    }

    fn bool_field(&self, node: Option<&YNode>) -> Option<bool> {
        node?.as_bool()
    }

    /// A list of strings upstream types as `Vec<String>`.
    fn strict_list(&mut self, node: Option<&YNode>, what: &str) -> Option<Vec<Sp<String>>> {
        let items = node?.as_seq()?;
        let mut out = Vec::new();
        for (i, it) in items.iter().enumerate() {
            if let Some(s) = self.strict_str(Some(it), &format!("item {} of {what}", i + 1)) {
                out.push(s);
            }
        }
        Some(out)
    }

    /// `next`-like: a string or a list of strings. Returns the entries and whether it was a list.
    fn node_refs(&self, node: Option<&YNode>) -> (Vec<Sp<String>>, bool) {
        let Some(n) = node else {
            return (Vec::new(), false);
        };
        match n.as_seq() {
            Some(items) => (
                items.iter().filter_map(|i| self.sp_str(Some(i))).collect(),
                true,
            ),
            None => (self.sp_str(Some(n)).into_iter().collect(), false),
        }
    }

    fn state_updates(
        &mut self,
        node: Option<&YNode>,
        what: &str,
    ) -> Option<Vec<(Sp<String>, TemplateText)>> {
        let n = node?;
        if n.is_null() {
            return None;
        }
        let entries = n.as_map()?;
        let mut out: Vec<(Sp<String>, TemplateText)> = Vec::new();
        for e in entries {
            let key = e.key.key_text().to_string();
            self.checker()
                .expect_string_strict(&e.value, &format!("`{key}` of the state_updates of {what}"));
            let Some(t) = self.template(Some(&e.value)) else {
                continue;
            };
            let k = Sp::new(key, e.key.span);
            match out.iter_mut().find(|(x, _)| x.value == k.value) {
                Some(slot) => *slot = (k, t),
                None => out.push((k, t)),
            }
        }
        Some(out)
    }

    fn json(&self, node: Option<&YNode>) -> Option<Sp<Value>> {
        let n = node.filter(|n| !n.is_null())?;
        Some(Sp::new(n.to_json(), n.span))
    }

    fn skills(&mut self, node: &YNode, what: &str) -> SkillsPolicy {
        let es = node.get("enabled_skills");
        SkillsPolicy {
            skills_enabled: self.bool_field(node.get("skills_enabled")),
            enabled_skills: self.strict_list(es, &format!("`enabled_skills` of {what}")),
            enabled_skills_span: es.filter(|n| !n.is_null()).map(|n| n.span),
            inject_skill_instructions: self.bool_field(node.get("inject_skill_instructions")),
            skill_instructions: self.string(node.get("skill_instructions")),
        }
    }
}

/// Build the Loki model from a parsed tree. Structural problems and upstream's parser checks
/// (§3) become diagnostics; as much of the model as can be read is returned.
pub fn build(
    file: &SourceFile,
    root: Option<&YNode>,
    base_dir: &Path,
    diags: &mut Vec<Diagnostic>,
) -> LokiDoc {
    let mut doc = LokiDoc {
        agent_dir: base_dir.to_path_buf(),
        initial_state: Value::Object(Default::default()),
        ..Default::default()
    };
    let Some(root) = root else { return doc };
    doc.nodes_span = head_span(file, root);
    let mut b = Builder {
        file,
        base_dir,
        diags,
    };
    if !b
        .checker()
        .check_obj_except(root, &GRAPH_DEF, "the graph", &["nodes", "version"])
    {
        return doc;
    }

    // Graph-level fields.
    if let Some(e) = root.entry("name") {
        doc.name_span = Some(e.value.span);
        if let Some(t) = e.value.scalar_text() {
            doc.name = Some(t.to_string());
            if t.trim().is_empty() {
                b.diags.push(
                    Diagnostic::error("loki-name", "Graph must have a non-empty 'name' field")
                        .at(file, e.value.span)
                        .hint("give the graph a name, usually the agent directory's name"),
                );
            }
        }
    }
    doc.description = b.string(root.get("description"));
    doc.model = b.sp_str(root.get("model"));
    doc.temperature = b.f64_field(root.get("temperature"));
    doc.top_p = b.f64_field(root.get("top_p"));
    doc.reasoning_effort = b.string(root.get("reasoning_effort"));
    doc.global_tools = b
        .strict_list(root.get("global_tools"), "`global_tools`")
        .unwrap_or_default();
    doc.mcp_servers = b
        .strict_list(root.get("mcp_servers"), "`mcp_servers`")
        .unwrap_or_default();
    doc.skills = b.skills(root, "the graph");
    doc.conversation_starters = root
        .get("conversation_starters")
        .and_then(|n| n.as_seq())
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.scalar_text().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if let Some(items) = root.get("variables").and_then(|n| n.as_seq()) {
        for it in items {
            let Some(name) = b.sp_str(it.get("name")) else {
                continue;
            };
            doc.variables.push(Variable {
                name,
                description: b.string(it.get("description")),
                default: b.string(it.get("default")),
            });
        }
    }
    if let Some(s) = root.get("settings").filter(|s| s.as_map().is_some()) {
        let st = &mut doc.settings;
        st.span = Some(s.span);
        for e in s.as_map().unwrap_or(&[]) {
            st.value_spans
                .push((e.key.key_text().to_string(), e.value.span));
        }
        if let Some(v) = s
            .get("max_loop_iterations")
            .and_then(|n| n.as_i64())
            .filter(|v| *v >= 0)
        {
            st.max_loop_iterations = v as u64;
        }
        st.timeout = s
            .get("timeout")
            .and_then(|n| n.as_i64())
            .filter(|v| *v >= 0)
            .map(|v| v as u64);
        if let Some(v) = s.get("log_state_snapshots").and_then(|n| n.as_bool()) {
            st.log_state_snapshots = v;
        }
        if let Some(v) = s.get("validate_before_run").and_then(|n| n.as_bool()) {
            st.validate_before_run = v;
        }
        if let Some(v) = s
            .get("max_concurrency")
            .and_then(|n| n.as_i64())
            .filter(|v| *v >= 0)
        {
            st.max_concurrency = v as u64;
        }
    }
    if let Some(is) = root.get("initial_state").filter(|n| n.as_map().is_some()) {
        doc.initial_state = is.to_json();
        doc.initial_state_keys = is
            .as_map()
            .unwrap_or(&[])
            .iter()
            .map(|e| Sp::new(e.key.key_text().to_string(), e.key.span))
            .collect();
    }
    if let Some(rs) = root.get("reducers").and_then(|n| n.as_map()) {
        for e in rs {
            let Some(r) = e.value.scalar_text().and_then(Reducer::parse) else {
                continue;
            };
            doc.reducers.push(ReducerDecl {
                key: Sp::new(e.key.key_text().to_string(), e.key.span),
                reducer: Sp::new(r, e.value.span),
            });
        }
    }
    doc.start = b.sp_str(root.get("start"));

    // Version (§3 step 2): unquoted `1.0` is read as the string "1.0" upstream.
    if let Some(e) = root.entry("version") {
        let v = &e.value;
        match v.as_scalar() {
            Some(s) if s.value != ScalarValue::Null => {
                doc.version = Some(Sp::new(s.text.clone(), v.span));
                if !SUPPORTED_VERSIONS.contains(&s.text.as_str()) {
                    b.diags.push(
                        Diagnostic::error(
                            "loki-version",
                            format!(
                                "Unsupported graph schema version '{}'. Supported versions: {}",
                                s.text,
                                SUPPORTED_VERSIONS.join(", ")
                            ),
                        )
                        .at(file, v.span)
                        .hint("write `version: \"1.0\"` (the only graph schema version)"),
                    );
                }
            }
            _ => b.diags.push(
                Diagnostic::error(
                    "loki-version",
                    format!(
                        "`version` must be the string \"1.0\", found {}",
                        v.describe()
                    ),
                )
                .at(file, v.span)
                .hint("write `version: \"1.0\"`, or remove the key (the default is \"1.0\")"),
            ),
        }
    }

    // Nodes (§3 step 3).
    match root.entry("nodes") {
        None => b.diags.push(
            Diagnostic::error(
                "missing-field",
                "the graph is missing required field `nodes`",
            )
            .at(file, head_span(file, root))
            .hint("add `nodes:` with at least one node, keyed by id"),
        ),
        Some(e) => {
            doc.nodes_span = e.key.span;
            match e.value.as_map() {
                Some(entries) => {
                    let mut pos: std::collections::HashMap<String, usize> = Default::default();
                    for ne in entries {
                        let id = Sp::new(ne.key.key_text().to_string(), ne.key.span);
                        let Some(node) = build_node(&mut b, id, &ne.value) else {
                            continue;
                        };
                        match pos.get(&node.id.value) {
                            Some(&i) => doc.nodes[i] = node,
                            None => {
                                pos.insert(node.id.value.clone(), doc.nodes.len());
                                doc.nodes.push(node);
                            }
                        }
                    }
                }
                None if e.value.is_null() => {}
                None => b.diags.push(
                    Diagnostic::error(
                        "wrong-type",
                        format!(
                            "`nodes` must be a mapping of node ids to nodes, found {}",
                            e.value.describe()
                        ),
                    )
                    .at(file, e.value.span)
                    .hint("write each node as `<id>:` followed by its fields, indented"),
                ),
            }
        }
    }

    // §3 steps 5 and 6.
    let graph_name = doc.name.clone().unwrap_or_default();
    if doc.nodes.is_empty() {
        if let Some(e) = root
            .entry("nodes")
            .filter(|e| e.value.as_map().is_some() || e.value.is_null())
        {
            b.diags.push(
                Diagnostic::error(
                    "loki-no-nodes",
                    format!("Graph '{graph_name}' has no nodes defined"),
                )
                .at(file, e.key.span)
                .hint("add at least one node under `nodes:`, and an `end` node to finish"),
            );
        }
    } else if let Some(start) = &doc.start
        && !doc.has_node(&start.value)
    {
        let ids: Vec<&str> = doc.node_ids().collect();
        let hint = match did_you_mean(&start.value, ids.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? `start` names the first node to run"),
            None => "`start` names the first node to run; it must be one of the ids under `nodes:`"
                .into(),
        };
        b.diags.push(
            Diagnostic::error(
                "loki-start",
                format!(
                    "Start node '{}' not found in graph '{graph_name}'. Available nodes: {}",
                    start.value,
                    short_list(ids.iter().copied())
                ),
            )
            .at(file, start.span)
            .hint(hint),
        );
    }
    doc
}

fn build_node(b: &mut Builder<'_>, id: Sp<String>, node: &YNode) -> Option<LokiNode> {
    let what = format!("node `{}`", id.value);
    if node.as_map().is_none() {
        b.checker().check_obj(node, &END_NODE, &what);
        return None;
    }
    // Type first: it selects the schema.
    let type_node = node.get("type");
    let kind = match type_node {
        Some(t) if !t.is_null() => b
            .sp_str(Some(t))
            .unwrap_or_else(|| Sp::new(String::new(), t.span)),
        _ => {
            let span = node.entry("type").map(|e| e.key.span).unwrap_or(id.span);
            b.diags.push(
                Diagnostic::error(
                    "missing-field",
                    format!("{what} is missing required field `type`"),
                )
                .at(b.file, span)
                .hint(format!("add `type:` (one of {})", NODE_TYPES.join(", "))),
            );
            Sp::new(String::new(), span)
        }
    };
    let schema = node_schema(&kind.value);
    match schema {
        Some(s) => {
            b.checker().check_obj_except(node, s, &what, &["type"]);
        }
        None if !kind.value.is_empty() || type_node.is_some_and(|t| !t.is_null()) => {
            let hint = match did_you_mean(&kind.value, NODE_TYPES.iter().copied()) {
                Some(s) => format!("did you mean `{s}`? Node types: {}", NODE_TYPES.join(", ")),
                None => format!("node types: {}", NODE_TYPES.join(", ")),
            };
            b.diags.push(
                Diagnostic::error(
                    "loki-node-type",
                    format!("unknown node type '{}' on {what}", kind.value),
                )
                .at(b.file, kind.span)
                .hint(hint),
            );
        }
        None => {}
    }
    if schema.is_none() {
        // No schema check ran: still say why keys from a `<<` merge are missing.
        for e in node.as_map().unwrap_or(&[]) {
            if super::schema::is_merge_key(&e.key) {
                b.diags.push(super::schema::merge_key_error(b.file, &e.key, &what));
            }
        }
    }

    // Node id (§3 step 3).
    let id_field = b.sp_str(node.get("id"));
    if let Some(f) = &id_field
        && !f.value.is_empty()
        && f.value != id.value
    {
        b.diags.push(
            Diagnostic::error(
                "loki-node-id",
                format!(
                    "Node ID mismatch: key '{}' does not match node.id '{}'",
                    id.value, f.value
                ),
            )
            .at(b.file, f.span)
            .node(id.value.clone())
            .hint(format!(
                "write `id: {}` (the key under `nodes:`), or remove `id`",
                id.value
            )),
        );
    }

    let (next, next_is_list) = b.node_refs(node.get("next").filter(|n| !n.is_null()));
    let next_span = node.get("next").filter(|n| !n.is_null()).map(|n| n.span);
    let state_updates = b.state_updates(node.get("state_updates"), &what);
    let g = |k: &str| node.get(k).filter(|n| !n.is_null());

    // The schema is only shown to the model (as text), so a broken one is a warning.
    if matches!(kind.value.as_str(), "agent" | "llm") {
        if let Some(schema) = g("output_schema") {
            b.checker().check_json_schema(schema, &format!("`output_schema` of {what}"), syntax::diag::Severity::Warning);
        }
    }
    let body = match kind.value.as_str() {
        "agent" => NodeBody::Agent(AgentNode {
            agent: b.sp_str(g("agent")),
            prompt: b.template(g("prompt")),
            output_schema: b.json(g("output_schema")),
            timeout: b.u64_field(g("timeout")),
        }),
        "script" => {
            let script = b.sp_str(g("script"));
            let script_path = script.as_ref().map(|s| b.base_dir.join(&s.value));
            let x_next = g("x-next").map(|n| b.node_refs(Some(n)).0);
            NodeBody::Script(ScriptNode {
                script,
                script_path,
                fallback: b.sp_str(g("fallback")),
                timeout: b.u64_field(g("timeout")),
                x_next,
            })
        }
        "approval" => {
            let options = b
                .strict_list(g("options"), &format!("`options` of {what}"))
                .unwrap_or_default();
            let mut routes: Vec<(Sp<String>, Sp<String>)> = Vec::new();
            for e in g("routes").and_then(|n| n.as_map()).unwrap_or(&[]) {
                let k = Sp::new(e.key.key_text().to_string(), e.key.span);
                let Some(t) = b.sp_str(Some(&e.value)) else {
                    continue;
                };
                match routes.iter_mut().find(|(x, _)| x.value == k.value) {
                    Some(slot) => *slot = (k, t),
                    None => routes.push((k, t)),
                }
            }
            NodeBody::Approval(ApprovalNode {
                question: b.template(g("question")),
                options,
                routes,
                on_other: b.sp_str(g("on_other")),
            })
        }
        "input" => {
            let validation = b.sp_str(g("validation"));
            let mut parsed_validation = None;
            if let Some(v) = &validation {
                match check_input_validation(&v.value) {
                    Ok(p) => parsed_validation = Some(p),
                    Err(msg) => b.diags.push(
                        Diagnostic::error("loki-input-validation", format!("invalid input validation '{}'", v.value))
                            .at(b.file, v.span)
                            .node(id.value.clone())
                            .hint(format!(
                                "{msg}. Loki only notices when the node runs, and then fails the whole run"
                            )),
                    ),
                }
            }
            NodeBody::Input(InputNode {
                question: b.template(g("question")),
                default: b.template(g("default")),
                validation,
                parsed_validation,
            })
        }
        "llm" => NodeBody::Llm(Box::new(LlmNode {
            prompt: b.template(g("prompt")),
            instructions: b.template(g("instructions")),
            tools: b.strict_list(g("tools"), &format!("`tools` of {what}")),
            model: b.sp_str(g("model")),
            temperature: b.f64_field(g("temperature")),
            top_p: b.f64_field(g("top_p")),
            reasoning_effort: b.string(g("reasoning_effort")),
            fallback: b.sp_str(g("fallback")),
            max_attempts: b.u64_field(g("max_attempts")),
            max_iterations: b.u64_field(g("max_iterations")),
            output_schema: b.json(g("output_schema")),
            timeout: b.u64_field(g("timeout")),
            skills: b.skills(node, &what),
        })),
        "rag" => NodeBody::Rag(RagNode {
            documents: b
                .strict_list(g("documents"), &format!("`documents` of {what}"))
                .unwrap_or_default(),
            documents_span: g("documents").map(|n| n.span).unwrap_or(id.span),
            query: b.template(g("query")),
            top_k: b.u64_field(g("top_k")).map(|v| v.value),
            embedding_model: b.string(g("embedding_model")),
            chunk_size: b.u64_field(g("chunk_size")).map(|v| v.value),
            chunk_overlap: b.u64_field(g("chunk_overlap")).map(|v| v.value),
            reranker_model: b.string(g("reranker_model")),
            batch_size: b.u64_field(g("batch_size")).map(|v| v.value),
            extractor_model: b.string(g("extractor_model")),
            extractor_prompt: b.string(g("extractor_prompt")),
            graph_hops: b.u64_field(g("graph_hops")).map(|v| v.value),
            driver: b.sp_str(g("driver")),
            timeout: b.u64_field(g("timeout")),
        }),
        "end" => NodeBody::End(EndNode {
            output: b.template(g("output")),
        }),
        "map" => NodeBody::Map(MapNode {
            over: b.template(g("over")),
            as_key: b.sp_str(g("as")),
            branch: b.sp_str(g("branch")),
            collect_into: b.sp_str(g("collect_into")),
            output_key: b.sp_str(g("output_key")),
            max_concurrency: b.u64_field(g("max_concurrency")),
        }),
        _ => NodeBody::Unknown,
    };
    Some(LokiNode {
        id,
        id_field,
        kind,
        description: b.string(node.get("description")),
        next,
        next_is_list,
        next_span,
        state_updates,
        body,
        span: node.span,
        node: node.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Model, load_str};

    fn load(text: &str) -> (LokiDoc, Vec<Diagnostic>) {
        let doc = load_str(Path::new("/tmp/agents/t/graph.yaml"), text);
        let diags = doc.diagnostics.clone();
        match doc.model {
            Model::Loki(l) => (l, diags),
            other => panic!("not loki: {other:?}"),
        }
    }

    const MINIMAL: &str =
        "name: t\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n    output: hi\n";

    #[test]
    fn minimal_graph_has_no_diagnostics() {
        let (l, d) = load(MINIMAL);
        assert!(d.is_empty(), "{d:#?}");
        assert_eq!(l.name.as_deref(), Some("t"));
        assert_eq!(l.nodes.len(), 1);
        assert_eq!(l.settings.max_loop_iterations, 100);
        assert_eq!(l.settings.max_concurrency, 8);
        assert!(l.settings.validate_before_run && l.settings.log_state_snapshots);
        assert_eq!(l.agent_dir, Path::new("/tmp/agents/t"));
        assert_eq!(l.agents_dir(), Path::new("/tmp/agents"));
    }

    #[test]
    fn version_rules() {
        let (_, d) = load(&MINIMAL.replace("\"1.0\"", "1.0"));
        assert!(d.is_empty(), "unquoted 1.0 is accepted: {d:#?}");
        let (_, d) = load(&MINIMAL.replace("\"1.0\"", "\"1.00\""));
        let v = d
            .iter()
            .find(|d| d.code == "loki-version")
            .expect("version error");
        assert_eq!(
            v.message,
            "Unsupported graph schema version '1.00'. Supported versions: 1.0"
        );
        assert_eq!((v.line, v.column), (2, 10));
        let (_, d) = load(&MINIMAL.replace("version: \"1.0\"\n", ""));
        assert!(d.is_empty(), "{d:#?}");
    }

    #[test]
    fn node_id_mismatch_and_name_and_start() {
        let (_, d) = load("name: \"\"\nstart: b\nnodes:\n  a:\n    id: x\n    type: end\n");
        let id = d
            .iter()
            .find(|d| d.code == "loki-node-id")
            .expect("id mismatch");
        assert_eq!(
            id.message,
            "Node ID mismatch: key 'a' does not match node.id 'x'"
        );
        assert_eq!((id.line, id.column), (5, 9));
        assert!(d.iter().any(|d| d.code == "loki-name" && d.line == 1));
        let st = d.iter().find(|d| d.code == "loki-start").expect("start");
        assert_eq!(
            st.message,
            "Start node 'b' not found in graph ''. Available nodes: a"
        );
        // A matching or empty id is fine.
        let (_, d) = load(
            "name: t\nstart: a\nnodes:\n  a:\n    id: a\n    type: end\n  b:\n    id: ''\n    type: end\n",
        );
        assert!(!d.iter().any(|d| d.code == "loki-node-id"), "{d:#?}");
    }

    #[test]
    fn start_did_you_mean_and_empty_nodes() {
        let (_, d) = load(
            "name: t\nstart: finsh\nnodes:\n  finish:\n    type: end\n  other:\n    type: end\n",
        );
        let st = d.iter().find(|d| d.code == "loki-start").unwrap();
        assert!(
            st.message.ends_with("Available nodes: finish, other"),
            "{st:?}"
        );
        assert!(st.hint.as_deref().unwrap().contains("`finish`"), "{st:?}");
        let (_, d) = load("name: g\nstart: a\nnodes: {}\n");
        let n = d.iter().find(|d| d.code == "loki-no-nodes").unwrap();
        assert_eq!(n.message, "Graph 'g' has no nodes defined");
        assert!(!d.iter().any(|d| d.code == "loki-start"));
    }

    #[test]
    fn unknown_type_suggests_all_types_including_map() {
        let (l, d) = load("name: t\nstart: a\nnodes:\n  a:\n    type: mapp\n  b:\n    type: End\n");
        let t = d
            .iter()
            .filter(|d| d.code == "loki-node-type")
            .collect::<Vec<_>>();
        assert_eq!(t.len(), 2, "{d:#?}");
        assert!(
            t[0].hint.as_deref().unwrap().contains("did you mean `map`"),
            "{t:?}"
        );
        assert!(
            t[1].hint.as_deref().unwrap().contains("did you mean `end`"),
            "{t:?}"
        );
        assert_eq!((t[0].line, t[0].column), (5, 11));
        assert!(matches!(l.nodes[0].body, NodeBody::Unknown));
    }

    #[test]
    fn strings_where_upstream_wants_strings() {
        let src = "name: t\nstart: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options: [yes, 2]\n    routes: {yes: e, '2': e}\n    on_other: e\n    state_updates:\n      n: 5\n      ok: \"{{choice}}\"\n  e:\n    type: end\n";
        let (l, d) = load(src);
        let mut w: Vec<_> = d.iter().filter(|d| d.code == "wrong-type").collect();
        w.sort_by_key(|d| (d.line, d.column));
        assert_eq!(w.len(), 2, "{d:#?}");
        assert!(w.iter().all(|d| d.message.contains("must be a string")
            && d.hint.as_deref().unwrap().starts_with("quote it")));
        assert_eq!((w[0].line, w[0].column), (7, 20));
        assert_eq!(w[1].line, 11);
        let NodeBody::Approval(a) = &l.nodes[0].body else {
            panic!()
        };
        assert_eq!(a.options.len(), 2);
        assert_eq!(a.route("yes").unwrap().value, "e");
    }

    #[test]
    fn schema_findings_unknown_keys_and_reducers() {
        let src = "name: t\nstart: a\nreducers:\n  xs: apend\nnodes:\n  a:\n    type: script\n    script: s.sh\n    fallbak: e\n    x-next: [e]\n  e:\n    type: end\n";
        let (l, d) = load(src);
        let uk = d
            .iter()
            .find(|d| d.code == "unknown-key")
            .expect("unknown key");
        assert!(uk.hint.as_deref().unwrap().contains("`fallback`"), "{uk:?}");
        let be = d
            .iter()
            .find(|d| d.code == "bad-enum")
            .expect("bad reducer");
        assert!(be.hint.as_deref().unwrap().contains("`append`"), "{be:?}");
        let s = l.nodes[0].script().unwrap();
        assert_eq!(s.x_next.as_ref().unwrap()[0].value, "e");
        assert_eq!(
            s.script_path.as_deref(),
            Some(Path::new("/tmp/agents/t/s.sh"))
        );
        assert_eq!(d.len(), 2, "{d:#?}");
    }

    #[test]
    fn input_validation_is_checked_at_load() {
        let src = "name: t\nstart: a\nnodes:\n  a:\n    type: input\n    question: q\n    validation: \"len(input) != 3\"\n    next: e\n  e:\n    type: end\n";
        let (l, d) = load(src);
        let v = d
            .iter()
            .find(|d| d.code == "loki-input-validation")
            .expect("validation error");
        assert_eq!((v.line, v.column), (7, 17));
        assert_eq!(v.node.as_deref(), Some("a"));
        let (l2, d2) = load(&src.replace("!= 3", ">= 3"));
        assert!(d2.is_empty(), "{d2:#?}");
        let NodeBody::Input(i) = &l2.nodes[0].body else {
            panic!()
        };
        assert!(i.parsed_validation.is_some());
        let NodeBody::Input(i) = &l.nodes[0].body else {
            panic!()
        };
        assert!(i.parsed_validation.is_none());
    }

    #[test]
    fn model_keeps_everything_a_run_needs() {
        let src = r#"name: t
model: openai:gpt-4o
global_tools: [web.sh]
mcp_servers: [ddg]
variables:
  - name: project_dir
    default: "."
settings:
  max_loop_iterations: 5
  timeout: 60
  max_concurrency: 2
initial_state:
  b: 1
  a: [x]
reducers:
  a: extend
start: l
nodes:
  l:
    type: llm
    prompt: "go {{b}}"
    tools: [web, "mcp:ddg"]
    max_attempts: 3
    output_schema: {type: object, properties: {z: {type: string}, y: {type: string}}}
    state_updates: {r: "{{output}}"}
    fallback: e
    next: [m, e]
  m:
    type: map
    over: "{{a}}"
    as: item
    branch: l
    collect_into: out
  e:
    type: end
    output: done
"#;
        let (l, _) = load(src);
        assert_eq!(l.settings.max_loop_iterations, 5);
        assert_eq!(l.settings.timeout, Some(60));
        assert_eq!(l.settings.max_concurrency, 2);
        assert_eq!(
            serde_json::to_string(&l.initial_state).unwrap(),
            r#"{"b":1,"a":["x"]}"#
        );
        assert_eq!(l.reducer("a"), Some(Reducer::Extend));
        assert_eq!(l.variables[0].default.as_deref(), Some("."));
        let n = l.node("l").unwrap();
        assert!(n.is_fanout() && n.next_is_list);
        let NodeBody::Llm(llm) = &n.body else {
            panic!()
        };
        assert_eq!(llm.max_attempts(), 3);
        assert_eq!(llm.max_iterations(), 10);
        assert_eq!(n.write_set(), vec!["r", "y", "z"]);
        assert_eq!(n.read_set(), vec!["b"]);
        let kinds: Vec<_> = n
            .targets()
            .iter()
            .map(|t| (t.kind.label(), t.to.value.clone()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("'next'", "m".into()),
                ("'next'", "e".into()),
                ("llm 'fallback'", "e".into())
            ]
        );
        let m = l.node("m").unwrap().map().unwrap();
        assert_eq!(m.output_key(), "output");
        assert_eq!(m.concurrency(&l.settings), 2);
    }

    #[test]
    fn schemas_cover_every_type() {
        for t in NODE_TYPES {
            let s = node_schema(t).unwrap();
            for f in ["id", "description", "type", "next"] {
                assert!(s.field(f).is_some(), "{t} lacks {f}");
            }
        }
        assert!(node_schema("nope").is_none());
        assert_eq!(schema_objects().len(), 11);
        assert!(SCRIPT_NODE.field("x-next").is_some());
    }
}
