//! sherma declarative agents (`manifest_version: 1`): schema, typed model with spans.
//!
//! Upstream ignores unknown keys; we warn about them (with "did you mean"). Environment
//! placeholders (`${NAME}`, `${NAME:-default}`, `$$`) are interpolated into the model's strings,
//! while the YAML tree keeps the original text, so nothing from the environment is ever written
//! back into the file.

use super::Sp;
use super::env;
use super::schema::{Checker, Field, Obj, Ty, opt, req};
use syntax::diag::Diagnostic;
use syntax::source::{SourceFile, Span};
use syntax::yaml::{YKind, YNode};
use std::path::{Path, PathBuf};

pub const NODE_TYPES: &[&str] =
    &["call_llm", "tool_node", "call_agent", "data_transform", "set_state", "interrupt", "load_skills", "custom"];
pub const STATE_TYPES: &[&str] = &["str", "int", "float", "bool", "list", "dict"];
pub const BUILTIN_CONDITIONS: &[&str] = &["has_tool_calls", "has_error_fallback"];

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

pub static REGISTRY_REF: Obj = Obj {
    name: "registry reference",
    fields: &[
        req("id", Ty::Str, "id of the registered entity"),
        opt("version", Ty::Str, "version or PEP 440 specifier such as `==1.0.0`; default `*`"),
    ],
    open: false,
};
const REF: Ty = Ty::Obj(&REGISTRY_REF);

pub static LLM_DEF: Obj = Obj {
    name: "llm",
    fields: &[
        req("id", Ty::Str, "id used by `llm:` references and `default_llm`"),
        opt("version", Ty::Str, "version, default `*`"),
        opt("provider", Ty::Enum(&["openai", "anthropic"]), "model provider, default `openai`"),
        req("model_name", Ty::Str, "the provider's model name, e.g. gpt-4o-mini"),
    ],
    open: false,
};
pub static TOOL_DEF: Obj = Obj {
    name: "tool",
    fields: &[
        req("id", Ty::Str, "tool id (the model sees the tool's own name)"),
        opt("version", Ty::Str, "version, default `*`"),
        opt("import_path", Ty::Str, "dotted Python path of a LangChain tool object"),
        opt("url", Ty::Str, "parsed but ignored by sherma"),
        opt("protocol", Ty::Str, "parsed but ignored by sherma"),
    ],
    open: false,
};
pub static PROMPT_DEF: Obj = Obj {
    name: "prompt",
    fields: &[
        req("id", Ty::Str, "prompt id, read in CEL as prompts[\"<id>\"][\"instructions\"]"),
        opt("version", Ty::Str, "version, default `*`"),
        opt("instructions", Ty::Str, "the prompt text (exactly one of instructions / instructions_path)"),
        opt("instructions_path", Ty::Path, "file holding the prompt text, relative to this YAML"),
    ],
    open: false,
};
pub static SKILL_DEF: Obj = Obj {
    name: "skill",
    fields: &[
        req("id", Ty::Str, "skill id"),
        opt("version", Ty::Str, "concrete version (sherma cannot look up `*` here)"),
        opt("skill_card_path", Ty::Path, "local skill card JSON, relative to this YAML"),
        opt("url", Ty::Str, "URL of a remote skill card"),
    ],
    open: false,
};
pub static HOOK_MCP: Obj = Obj {
    name: "hook MCP server",
    fields: &[
        opt("command", Ty::Str, "stdio server command"),
        opt("args", Ty::List(&Ty::Str), "stdio server arguments"),
        opt("env", Ty::Map(&Ty::Str), "stdio server environment"),
        opt("url", Ty::Str, "HTTP server URL"),
        opt("transport", Ty::Enum(&["streamable_http", "sse"]), "HTTP transport"),
        opt("headers", Ty::Map(&Ty::Str), "HTTP headers"),
    ],
    open: false,
};
pub static HOOK_DEF: Obj = Obj {
    name: "hook",
    fields: &[
        opt("import_path", Ty::Str, "dotted Python path of a hook executor class"),
        opt("url", Ty::Str, "JSON-RPC 2.0 endpoint of a remote hook executor"),
        opt("mcp", Ty::Obj(&HOOK_MCP), "MCP server exposing `hooks.<name>` tools"),
        opt("timeout", Ty::Float { min: Some(0.0) }, "Switchyard extension: per hook call, in seconds (default 30)"),
    ],
    open: false,
};
pub static SUB_AGENT_DEF: Obj = Obj {
    name: "sub-agent",
    fields: &[
        req("id", Ty::Str, "sub-agent id (also the tool name when used as a tool)"),
        opt("version", Ty::Str, "concrete version (sherma cannot look up `*` here)"),
        opt("url", Ty::Str, "remote A2A agent URL"),
        opt("import_path", Ty::Str, "dotted Python path of an Agent instance"),
        opt("yaml_path", Ty::Path, "another declarative agent YAML, relative to this file"),
    ],
    open: false,
};
pub static MCP_SERVER_DEF: Obj = Obj {
    name: "MCP server",
    fields: &[
        req("id", Ty::Str, "server id"),
        opt("version", Ty::Str, "version, default `*`"),
        opt("transport", Ty::Enum(&["streamable_http", "sse", "stdio"]), "default `streamable_http`"),
        opt("url", Ty::Str, "server URL (HTTP transports)"),
        opt("headers", Ty::Map(&Ty::Str), "HTTP headers"),
        opt("command", Ty::Str, "command (stdio)"),
        opt("args", Ty::List(&Ty::Str), "arguments (stdio)"),
        opt("env", Ty::Map(&Ty::Str), "environment (stdio)"),
        opt("tool_prefix", Ty::Str, "prefix added to every tool name of this server"),
        opt("timeout", Ty::Float { min: Some(0.0) }, "Switchyard extension: per-call timeout in seconds (default 60)"),
        opt("cwd", Ty::Str, "Switchyard extension: working directory of a stdio server, relative to this file (default: its folder)"),
        opt("allowed_tools", Ty::List(&Ty::Str), "Switchyard extension: register only these tools of the server"),
    ],
    open: false,
};
pub static CHECKPOINTER_DEF: Obj = Obj {
    name: "checkpointer",
    fields: &[
        req("type", Ty::Enum(&["memory", "sqlite"]), "`memory`, or `sqlite` (Switchyard extension: durable runs)"),
        opt("path", Ty::Path, "SQLite database file (type sqlite), relative to this YAML"),
    ],
    open: false,
};
pub static STATE_FIELD: Obj = Obj {
    name: "state field",
    fields: &[
        req("name", Ty::Str, "field name; `messages` gets append/replace-by-id semantics"),
        opt("type", Ty::Str, "str, int, float, bool, list or dict (not enforced)"),
        opt("default", Ty::Any, "initial value (Switchyard applies it; sherma ignores it)"),
    ],
    open: false,
};
pub static STATE_DEF: Obj =
    Obj { name: "state", fields: &[req("fields", Ty::List(&Ty::Obj(&STATE_FIELD)), "declared state fields")], open: false };
pub static PROMPT_ITEM: Obj = Obj {
    name: "prompt item",
    fields: &[
        req("role", Ty::Enum(&["system", "human", "ai", "messages"]), "message role; `messages` splices a list"),
        req("content", Ty::Cel, "CEL expression producing the content"),
    ],
    open: false,
};
pub static RESPONSE_FORMAT: Obj = Obj {
    name: "response_format",
    fields: &[
        req("name", Ty::Str, "schema name"),
        opt("description", Ty::Str, "schema description"),
        req("schema", Ty::Any, "JSON Schema of the structured output"),
    ],
    open: false,
};
pub static CALL_LLM_ARGS: Obj = Obj {
    name: "call_llm args",
    fields: &[
        opt("llm", REF, "the llm to call; default `default_llm`"),
        req("prompt", Ty::List(&Ty::Obj(&PROMPT_ITEM)), "messages sent to the model, in order"),
        opt("tools", Ty::List(&REF), "tools bound to the model"),
        opt("use_tools_from_registry", Ty::Bool, "bind every registered tool"),
        opt("use_tools_from_loaded_skills", Ty::Bool, "bind the tools of skills loaded so far"),
        opt(
            "use_sub_agents_as_tools",
            Ty::OneOf(&[Ty::Bool, Ty::Enum(&["all"]), Ty::List(&REF)]),
            "bind sub-agents as tools: true/`all`, or a list",
        ),
        opt("response_format", Ty::Obj(&RESPONSE_FORMAT), "structured output schema"),
        req("state_updates", Ty::Map(&Ty::Cel), "field -> CEL over the state and `llm_response`"),
    ],
    open: false,
};
pub static TOOL_NODE_ARGS: Obj = Obj {
    name: "tool_node args",
    fields: &[opt("tools", Ty::List(&REF), "tools this node may run; default: every registered tool")],
    open: false,
};
pub static CALL_AGENT_ARGS: Obj = Obj {
    name: "call_agent args",
    fields: &[req("agent", REF, "sub-agent to call"), req("input", Ty::Cel, "CEL producing the message text")],
    open: false,
};
pub static DATA_TRANSFORM_ARGS: Obj = Obj {
    name: "data_transform args",
    fields: &[req("expression", Ty::Cel, "CEL producing a map of state updates")],
    open: false,
};
pub static SET_STATE_ARGS: Obj = Obj {
    name: "set_state args",
    fields: &[req("values", Ty::Map(&Ty::Cel), "field -> CEL (string literals need inner quotes)")],
    open: false,
};
pub static INTERRUPT_ARGS: Obj = Obj {
    name: "interrupt args",
    fields: &[req("value", Ty::Cel, "CEL producing the value shown to the user")],
    open: false,
};
pub static LOAD_SKILLS_ARGS: Obj = Obj {
    name: "load_skills args",
    fields: &[req("skill_ids", Ty::Cel, "CEL producing a list of {id, version} maps")],
    open: false,
};
pub static CUSTOM_ARGS: Obj = Obj {
    name: "custom args",
    fields: &[opt("metadata", Ty::Map(&Ty::Any), "free data for the node_execute hook")],
    open: false,
};
pub static RETRY_DEF: Obj = Obj {
    name: "retry",
    fields: &[
        opt("max_attempts", Ty::Int { min: Some(1) }, "attempts in all, default 3"),
        opt("strategy", Ty::Enum(&["fixed", "exponential"]), "default exponential"),
        opt("delay", Ty::Float { min: Some(0.0) }, "seconds before the first retry, default 1.0"),
        opt("max_delay", Ty::Float { min: Some(0.0) }, "cap on the delay, default 30.0"),
    ],
    open: false,
};
pub static ON_ERROR_DEF: Obj = Obj {
    name: "on_error",
    fields: &[
        opt("retry", Ty::Obj(&RETRY_DEF), "retry the model call (call_llm only)"),
        opt("fallback", Ty::NodeRef, "node to route to when the node fails"),
    ],
    open: false,
};
pub static NODE_DEF: Obj = Obj {
    name: "node",
    fields: &[
        req("name", Ty::Str, "node name, unique in the agent"),
        req("type", Ty::Enum(NODE_TYPES), "node type"),
        opt("args", Ty::Any, "type-specific arguments"),
        opt("on_error", Ty::Obj(&ON_ERROR_DEF), "retry and fallback"),
    ],
    open: false,
};
pub static BRANCH_DEF: Obj = Obj {
    name: "branch",
    fields: &[
        req("condition", Ty::CelCondition, "CEL condition, or has_tool_calls / has_error_fallback"),
        req("target", Ty::NodeRef, "node to go to when the condition holds"),
    ],
    open: false,
};
pub static EDGE_DEF: Obj = Obj {
    name: "edge",
    fields: &[
        req("source", Ty::NodeRef, "source node, or __start__"),
        opt("target", Ty::NodeRef, "target node, or __end__ (ignored when branches are given)"),
        opt("branches", Ty::List(&Ty::Obj(&BRANCH_DEF)), "conditions tested in order; the first true wins"),
        opt("default", Ty::NodeRef, "target when no branch holds; default __end__"),
    ],
    open: false,
};
pub static GRAPH_DEF: Obj = Obj {
    name: "graph",
    fields: &[
        opt("entry_point", Ty::NodeRef, "first node (or use an edge from __start__)"),
        req("nodes", Ty::List(&Ty::Obj(&NODE_DEF)), "the nodes"),
        req("edges", Ty::List(&Ty::Obj(&EDGE_DEF)), "the edges (may be empty)"),
    ],
    open: false,
};
pub static LANGGRAPH_CONFIG: Obj = Obj {
    name: "langgraph_config",
    fields: &[
        opt("recursion_limit", Ty::Int { min: Some(1) }, "maximum steps of one run, default 25"),
        opt("max_concurrency", Ty::Int { min: Some(1) }, "parallel branches"),
        opt("tags", Ty::List(&Ty::Str), "run tags"),
        opt("metadata", Ty::Map(&Ty::Any), "run metadata"),
    ],
    open: false,
};
pub static AGENT_DEF: Obj = Obj {
    name: "agent",
    fields: &[
        req("state", Ty::Obj(&STATE_DEF), "state fields"),
        req("graph", Ty::Obj(&GRAPH_DEF), "nodes and edges"),
        opt("langgraph_config", Ty::Obj(&LANGGRAPH_CONFIG), "run configuration"),
        opt("input_schema", Ty::Any, "JSON Schema of structured input (A2A)"),
        opt("output_schema", Ty::Any, "JSON Schema of structured output (A2A)"),
    ],
    open: false,
};
pub static TOP_LEVEL: Obj = Obj {
    name: "sherma file",
    fields: &[
        req("manifest_version", Ty::Int { min: None }, "format version; must be 1"),
        opt("prompts", Ty::List(&Ty::Obj(&PROMPT_DEF)), "prompts"),
        opt("llms", Ty::List(&Ty::Obj(&LLM_DEF)), "language models"),
        opt("tools", Ty::List(&Ty::Obj(&TOOL_DEF)), "tools"),
        opt("skills", Ty::List(&Ty::Obj(&SKILL_DEF)), "skills"),
        opt(
            "agent_skills",
            Ty::OneOf(&[Ty::Enum(&["*"]), Ty::List(&Ty::Str)]),
            "Agent Skills offered through the `activate_skill` tool (Switchyard extension): names found in `.agents/skills` / `.claude/skills` of the project and the user's home, SKILL.md URLs, or `*` for every skill found",
        ),
        opt("hooks", Ty::List(&Ty::Obj(&HOOK_DEF)), "hook executors"),
        opt("sub_agents", Ty::List(&Ty::Obj(&SUB_AGENT_DEF)), "sub-agents"),
        opt("mcp_servers", Ty::List(&Ty::Obj(&MCP_SERVER_DEF)), "MCP servers whose tools are registered"),
        opt("default_llm", REF, "llm used by call_llm nodes without `llm`"),
        opt("checkpointer", Ty::Obj(&CHECKPOINTER_DEF), "checkpointer"),
        opt("data", Ty::Map(&Ty::Any), "free data, read in CEL as `data`"),
        opt("agents", Ty::Map(&Ty::Obj(&AGENT_DEF)), "agents, by name"),
    ],
    open: false,
};

const STATE_FIELDS_TY: Ty = Ty::List(&Ty::Obj(&STATE_FIELD));
const NODES_TY: Ty = Ty::List(&Ty::Obj(&NODE_DEF));
const EDGES_TY: Ty = Ty::List(&Ty::Obj(&EDGE_DEF));

/// The args schema of a node type.
pub fn args_schema(node_type: &str) -> Option<&'static Obj> {
    Some(match node_type {
        "call_llm" => &CALL_LLM_ARGS,
        "tool_node" => &TOOL_NODE_ARGS,
        "call_agent" => &CALL_AGENT_ARGS,
        "data_transform" => &DATA_TRANSFORM_ARGS,
        "set_state" => &SET_STATE_ARGS,
        "interrupt" => &INTERRUPT_ARGS,
        "load_skills" => &LOAD_SKILLS_ARGS,
        "custom" => &CUSTOM_ARGS,
        _ => return None,
    })
}

/// Every object schema of the dialect, for the editor.
pub fn schema_objects() -> Vec<&'static Obj> {
    vec![
        &TOP_LEVEL, &AGENT_DEF, &NODE_DEF, &EDGE_DEF, &BRANCH_DEF, &ON_ERROR_DEF, &RETRY_DEF, &CALL_LLM_ARGS,
        &TOOL_NODE_ARGS, &CALL_AGENT_ARGS, &DATA_TRANSFORM_ARGS, &SET_STATE_ARGS, &INTERRUPT_ARGS,
        &LOAD_SKILLS_ARGS, &CUSTOM_ARGS, &PROMPT_ITEM, &RESPONSE_FORMAT, &REGISTRY_REF, &LLM_DEF, &TOOL_DEF,
        &PROMPT_DEF, &SKILL_DEF, &HOOK_DEF, &SUB_AGENT_DEF, &MCP_SERVER_DEF, &CHECKPOINTER_DEF, &STATE_FIELD,
        &LANGGRAPH_CONFIG,
    ]
}

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

/// A CEL expression: its text after environment interpolation, and the YAML scalar it came from
/// (for mapping error offsets back to the file).
#[derive(Clone, Debug)]
pub struct Expr {
    pub text: String,
    pub node: YNode,
    /// True when interpolation changed the text (offsets then map to the scalar start).
    pub interpolated: bool,
}

impl Expr {
    pub fn span(&self) -> Span {
        self.node.span
    }
}

#[derive(Clone, Debug, Default)]
pub struct RegistryRef {
    pub id: Option<Sp<String>>,
    pub version: Option<Sp<String>>,
    pub span: Span,
}

impl RegistryRef {
    pub fn id_str(&self) -> &str {
        self.id.as_ref().map(|s| s.value.as_str()).unwrap_or("")
    }
    pub fn version_str(&self) -> &str {
        self.version.as_ref().map(|s| s.value.as_str()).unwrap_or("*")
    }
}

/// A top-level registry entry (llm, tool, prompt, skill, sub-agent, MCP server).
#[derive(Clone, Debug, Default)]
pub struct Entity {
    pub id: Option<Sp<String>>,
    pub version: Option<Sp<String>>,
    /// Other scalar fields, interpolated (provider, model_name, import_path, url, ...).
    pub fields: Vec<(String, Sp<String>)>,
    /// The whole entry, for anything else (headers, args, env, mcp ...).
    pub node: YNode,
    pub span: Span,
    /// Resolved file for path fields (instructions_path, skill_card_path, yaml_path).
    pub resolved_path: Option<PathBuf>,
}

impl Entity {
    pub fn id_str(&self) -> &str {
        self.id.as_ref().map(|s| s.value.as_str()).unwrap_or("")
    }
    pub fn get(&self, key: &str) -> Option<&Sp<String>> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).map(|s| s.value.as_str())
    }
}

#[derive(Clone, Debug)]
pub struct StateField {
    pub name: Sp<String>,
    pub ty: Option<Sp<String>>,
    pub default: Option<serde_json::Value>,
}

#[derive(Clone, Debug)]
pub struct PromptItem {
    pub role: Sp<String>,
    pub content: Option<Expr>,
}

#[derive(Clone, Debug, Default)]
pub enum SubAgentsAsTools {
    #[default]
    No,
    All,
    List(Vec<RegistryRef>),
}

#[derive(Clone, Debug, Default)]
pub struct CallLlm {
    pub llm: Option<RegistryRef>,
    pub prompt: Vec<PromptItem>,
    pub tools: Option<Vec<RegistryRef>>,
    pub use_tools_from_registry: bool,
    pub use_tools_from_loaded_skills: bool,
    pub use_sub_agents_as_tools: SubAgentsAsTools,
    pub response_format: Option<serde_json::Value>,
    pub response_format_span: Option<Span>,
    pub state_updates: Vec<(Sp<String>, Expr)>,
}

impl CallLlm {
    /// Does the node bind tools in any way (which triggers the auto tool node)?
    pub fn binds_tools(&self) -> bool {
        self.tools.as_ref().is_some_and(|t| !t.is_empty())
            || self.use_tools_from_registry
            || self.use_tools_from_loaded_skills
            || !matches!(self.use_sub_agents_as_tools, SubAgentsAsTools::No)
    }
}

#[derive(Clone, Debug)]
pub enum NodeArgs {
    CallLlm(Box<CallLlm>),
    ToolNode { tools: Option<Vec<RegistryRef>> },
    CallAgent { agent: Option<RegistryRef>, input: Option<Expr> },
    DataTransform { expression: Option<Expr> },
    SetState { values: Vec<(Sp<String>, Expr)> },
    Interrupt { value: Option<Expr> },
    LoadSkills { skill_ids: Option<Expr> },
    Custom { metadata: serde_json::Value },
    /// Unknown or missing type.
    Unknown,
}

#[derive(Clone, Debug, Default)]
pub struct Retry {
    pub max_attempts: i64,
    pub strategy: String,
    pub delay: f64,
    pub max_delay: f64,
    pub span: Span,
}

#[derive(Clone, Debug, Default)]
pub struct OnError {
    pub retry: Option<Retry>,
    pub fallback: Option<Sp<String>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct NodeDef {
    pub name: Sp<String>,
    pub kind: Sp<String>,
    pub args: NodeArgs,
    pub on_error: Option<OnError>,
    pub span: Span,
    /// The node's YAML mapping.
    pub node: YNode,
}

#[derive(Clone, Debug)]
pub struct Branch {
    pub condition: Option<Expr>,
    pub target: Option<Sp<String>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct EdgeDef {
    pub source: Option<Sp<String>>,
    pub target: Option<Sp<String>>,
    /// `Some` when the key `branches` is present (even empty): the edge is conditional.
    pub branches: Option<Vec<Branch>>,
    pub default: Option<Sp<String>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct AgentDef {
    pub name: Sp<String>,
    pub state_fields: Vec<StateField>,
    pub entry_point: Option<Sp<String>>,
    pub nodes: Vec<NodeDef>,
    pub edges: Vec<EdgeDef>,
    pub recursion_limit: Option<i64>,
    pub input_schema: Option<serde_json::Value>,
    pub output_schema: Option<serde_json::Value>,
    pub span: Span,
    /// Span of the `graph:` mapping (or of the agent when absent).
    pub graph_span: Span,
}

impl AgentDef {
    pub fn node(&self, name: &str) -> Option<&NodeDef> {
        self.nodes.iter().find(|n| n.name.value == name)
    }
    pub fn has_field(&self, name: &str) -> bool {
        self.state_fields.iter().any(|f| f.name.value == name)
    }
}

#[derive(Clone, Debug, Default)]
pub struct ShermaDoc {
    pub manifest_version: Option<Sp<i64>>,
    pub prompts: Vec<Entity>,
    pub llms: Vec<Entity>,
    pub tools: Vec<Entity>,
    pub skills: Vec<Entity>,
    pub hooks: Vec<Entity>,
    pub sub_agents: Vec<Entity>,
    pub mcp_servers: Vec<Entity>,
    pub default_llm: Option<RegistryRef>,
    pub checkpointer: Option<Entity>,
    pub data: serde_json::Value,
    pub agents: Vec<AgentDef>,
    /// Prompt texts by id (inline or read from `instructions_path`).
    pub prompt_texts: Vec<(String, String)>,
    /// Skill cards of `skills` entries with a local `skill_card_path`, by skill id.
    pub skill_cards: Vec<(String, crate::skills::LoadedCard)>,
    /// `agent_skills` (a Switchyard extension): the Agent Skills `activate_skill` offers.
    pub agent_skills: crate::skills::AgentSkills,
}

impl ShermaDoc {
    pub fn agent(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|a| a.name.value == name)
    }
}

// ---------------------------------------------------------------------------------------------
// Building the model
// ---------------------------------------------------------------------------------------------

struct Builder<'a> {
    /// Spans of scalars whose text interpolation changed.
    changed: std::collections::HashSet<Span>,
    file: &'a SourceFile,
    base_dir: &'a Path,
    diags: &'a mut Vec<Diagnostic>,
    extra_files: &'a mut Vec<SourceFile>,
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl Builder<'_> {
    fn checker(&mut self) -> Checker<'_> {
        Checker::new(self.file, self.diags)
    }

    /// The (already interpolated) text of a scalar, and whether interpolation changed it.
    fn interp(&mut self, node: &YNode) -> Option<(String, bool)> {
        let text = node.scalar_text()?;
        Some((text.to_string(), self.changed.contains(&node.span)))
    }

    fn sp_str(&mut self, node: Option<&YNode>) -> Option<Sp<String>> {
        let n = node?;
        let (text, _) = self.interp(n)?;
        Some(Sp::new(text, n.span))
    }

    fn expr(&mut self, node: Option<&YNode>) -> Option<Expr> {
        let n = node?;
        if n.as_scalar().is_none() || n.is_null() {
            return None;
        }
        let (text, interpolated) = self.interp(n)?;
        Some(Expr { text, node: n.clone(), interpolated })
    }

    fn registry_ref(&mut self, node: Option<&YNode>) -> Option<RegistryRef> {
        let n = node?;
        n.as_map()?;
        Some(RegistryRef { id: self.sp_str(n.get("id")), version: self.sp_str(n.get("version")), span: n.span })
    }

    fn ref_list(&mut self, node: Option<&YNode>) -> Option<Vec<RegistryRef>> {
        let items = node?.as_seq()?;
        Some(items.iter().filter_map(|i| self.registry_ref(Some(i))).collect())
    }

    fn entity_list(&mut self, root: &YNode, key: &str, path_field: Option<&str>) -> Vec<Entity> {
        let Some(items) = root.get(key).and_then(|n| n.as_seq()) else { return Vec::new() };
        let mut out = Vec::new();
        for item in items {
            let Some(entries) = item.as_map() else { continue };
            let mut ent = Entity { node: item.clone(), span: item.span, ..Default::default() };
            for e in entries {
                let k = e.key.key_text();
                if e.value.as_scalar().is_some() && !e.value.is_null() {
                    let Some(v) = self.sp_str(Some(&e.value)) else { continue };
                    match k {
                        "id" => ent.id = Some(v),
                        "version" => ent.version = Some(v),
                        _ => ent.fields.push((k.to_string(), v)),
                    }
                }
            }
            if let Some(pf) = path_field {
                if let Some(p) = ent.get(pf).cloned() {
                    ent.resolved_path = Some(self.resolve_path(&p, pf));
                }
            }
            out.push(ent);
        }
        out
    }

    /// Resolve a relative path against the document's directory; report a missing file.
    fn resolve_path(&mut self, p: &Sp<String>, field: &str) -> PathBuf {
        let path = Path::new(&p.value);
        let full = if path.is_absolute() { path.to_path_buf() } else { self.base_dir.join(path) };
        if !full.is_file() {
            let what = if full.is_dir() { "is a directory, not a file" } else { "does not exist" };
            self.diags.push(
                Diagnostic::error("file-not-found", format!("`{field}` names {} which {what}", full.display()))
                    .at(self.file, p.span)
                    .hint("paths are relative to the folder of this YAML file"),
            );
        }
        full
    }
}

/// Build the sherma model from a parsed tree. Structural problems become diagnostics.
pub fn build(
    file: &SourceFile,
    root: Option<&YNode>,
    base_dir: &Path,
    diags: &mut Vec<Diagnostic>,
    extra_files: &mut Vec<SourceFile>,
) -> ShermaDoc {
    let mut doc = ShermaDoc { data: serde_json::Value::Object(Default::default()), ..Default::default() };
    let Some(raw_root) = root else { return doc };
    // sherma interpolates the environment into every string value before validating, so the
    // schema checks and the model see interpolated text; the document's tree keeps the original.
    let mut changed = std::collections::HashSet::new();
    let itree = interpolate_tree(file, raw_root, diags, &mut changed);
    let root = &itree;
    let mut b = Builder { changed, file, base_dir, diags, extra_files };
    // Structure of everything but `agents` (checked per agent below) and `manifest_version`.
    b.checker().check_obj_except(root, &TOP_LEVEL, "the sherma file", &["agents", "manifest_version"]);

    match root.entry("manifest_version") {
        None => {
            b.diags.push(
                Diagnostic::error("manifest-version-missing", "missing `manifest_version`")
                    .at(file, super::schema::head_span(file, root))
                    .hint("add `manifest_version: 1` as the first line. Files without it were written for sherma before 1.0, which also read state fields by bare name (still accepted here)"),
            );
        }
        Some(e) => match e.value.as_i64().or_else(|| e.value.as_str().and_then(|s| s.trim().parse().ok())) {
            Some(1) => doc.manifest_version = Some(Sp::new(1, e.value.span)),
            Some(v) => {
                doc.manifest_version = Some(Sp::new(v, e.value.span));
                b.diags.push(
                    Diagnostic::error("manifest-version", format!("unsupported manifest_version {v}"))
                        .at(file, e.value.span)
                        .hint("this is manifest version 1 of the sherma format: write `manifest_version: 1`"),
                );
            }
            None => b.diags.push(
                Diagnostic::error(
                    "manifest-version",
                    format!("manifest_version must be the integer 1, found {}", e.value.describe()),
                )
                .at(file, e.value.span)
                .hint("write `manifest_version: 1`"),
            ),
        },
    }

    doc.llms = b.entity_list(root, "llms", None);
    doc.tools = b.entity_list(root, "tools", None);
    doc.prompts = b.entity_list(root, "prompts", Some("instructions_path"));
    doc.skills = b.entity_list(root, "skills", Some("skill_card_path"));
    doc.hooks = b.entity_list(root, "hooks", None);
    doc.sub_agents = b.entity_list(root, "sub_agents", Some("yaml_path"));
    doc.mcp_servers = b.entity_list(root, "mcp_servers", None);
    doc.default_llm = b.registry_ref(root.get("default_llm"));
    if let Some(cp) = root.get("checkpointer").filter(|n| n.as_map().is_some()) {
        let mut ent = Entity { node: cp.clone(), span: cp.span, ..Default::default() };
        for key in ["type", "path"] {
            if let Some(v) = b.sp_str(cp.get(key)) {
                ent.fields.push((key.to_string(), v));
            }
        }
        doc.checkpointer = Some(ent);
    }
    if let Some(d) = root.get("data") {
        if d.as_map().is_some() {
            doc.data = d.to_json();
        }
    }

    // Prompt texts (inline or from a file).
    for p in &doc.prompts {
        let id = p.id_str().to_string();
        if let Some(text) = p.get_str("instructions") {
            doc.prompt_texts.push((id.clone(), text.to_string()));
        } else if let Some(path) = &p.resolved_path {
            if let Ok(text) = std::fs::read_to_string(path) {
                b.extra_files.push(SourceFile::new(path.clone(), text.clone()));
                doc.prompt_texts.push((id.clone(), text));
            }
        }
        let has_inline = p.get("instructions").is_some();
        let has_path = p.get("instructions_path").is_some();
        if has_inline == has_path {
            let msg = if has_inline {
                "prompt has both `instructions` and `instructions_path`"
            } else {
                "prompt has neither `instructions` nor `instructions_path`"
            };
            b.diags.push(
                Diagnostic::error("prompt-source", format!("{msg} (prompt `{id}`)"))
                    .at(file, super::schema::head_span(file, &p.node))
                    .hint("give exactly one: inline `instructions: ...` or a file in `instructions_path: ...`"),
            );
        }
    }
    for sk in &doc.skills {
        if let Some(path) = sk.resolved_path.as_ref().filter(|p| p.is_file()) {
            if let Some(card) = crate::skills::load_card(path, b.diags, b.extra_files) {
                doc.skill_cards.push((sk.id_str().to_string(), card));
            }
        }
    }
    if let Some(n) = root.get("agent_skills").filter(|n| !n.is_null()) {
        doc.agent_skills = crate::skills::load_agent_skills(n, file, b.base_dir, b.diags, b.extra_files);
    }
    for h in &doc.hooks {
        let n = ["import_path", "url"].iter().filter(|k| h.get(k).is_some()).count()
            + usize::from(h.node.get("mcp").is_some_and(|m| !m.is_null()));
        if n != 1 {
            b.diags.push(
                Diagnostic::error("hook-source", "a hook needs exactly one of `import_path`, `url` or `mcp`")
                    .at(file, super::schema::head_span(file, &h.node)),
            );
        }
    }
    // Skills need a card (sherma silently registers nothing without one); a sub-agent has at
    // most one source (sherma silently picks one).
    for sk in &doc.skills {
        if sk.id.is_some() && sk.get("skill_card_path").is_none() && sk.get("url").is_none() {
            b.diags.push(
                Diagnostic::error("skill-source", format!("skill `{}` has neither `skill_card_path` nor `url`", sk.id_str()))
                    .at(file, super::schema::head_span(file, &sk.node))
                    .hint("sherma registers nothing for it, so loading it fails: add `skill_card_path:` (a local card) or `url:` (a remote card)"),
            );
        }
    }
    for sa in &doc.sub_agents {
        let given: Vec<&str> = ["url", "import_path", "yaml_path"].into_iter().filter(|k| sa.get(k).is_some()).collect();
        if given.len() > 1 {
            let at = sa.get(given[1]).map(|v| v.span).unwrap_or_else(|| super::schema::head_span(file, &sa.node));
            b.diags.push(
                Diagnostic::error("sub-agent-source", format!("sub-agent `{}` has both `{}` and `{}`", sa.id_str(), given[0], given[1]))
                    .at(file, at)
                    .hint("give exactly one source: `url` (a remote A2A agent), `import_path` (a Python Agent) or `yaml_path` (another agent file)"),
            );
        }
    }
    for m in &doc.mcp_servers {
        let transport = m.get_str("transport").unwrap_or("streamable_http");
        let (has_url, has_cmd) = (m.get("url").is_some(), m.get("command").is_some());
        let problem = if transport == "stdio" {
            if !has_cmd {
                Some("a stdio MCP server needs `command`")
            } else if has_url {
                Some("a stdio MCP server must not have `url`")
            } else {
                None
            }
        } else if !has_url {
            Some("an HTTP MCP server needs `url`")
        } else if has_cmd {
            Some("an HTTP MCP server must not have `command` (set `transport: stdio` for a child process)")
        } else {
            None
        };
        if let Some(p) = problem {
            b.diags.push(
                Diagnostic::error("mcp-server", format!("{p} (server `{}`)", m.id_str()))
                    .at(file, super::schema::head_span(file, &m.node)),
            );
        } else if transport == "sse" {
            let at = m.get("transport").map(|t| t.span).unwrap_or_else(|| super::schema::head_span(file, &m.node));
            b.diags.push(
                Diagnostic::warning(
                    "mcp-sse",
                    format!("MCP server `{}`: the legacy `sse` transport is not supported by Switchyard's MCP client", m.id_str()),
                )
                .at(file, at)
                .hint("use the server's streamable-HTTP endpoint (often `/mcp` instead of `/sse`) with `transport: streamable_http`"),
            );
        }
    }

    if let Some(agents) = root.get("agents") {
        match agents.as_map() {
            Some(entries) => {
                for e in entries {
                    let name = Sp::new(e.key.key_text().to_string(), e.key.span);
                    if let Some(a) = build_agent(&mut b, name, &e.value) {
                        doc.agents.push(a);
                    }
                }
            }
            None if agents.is_null() => {}
            None => b.diags.push(
                Diagnostic::error("wrong-type", format!("`agents` must be a mapping of agent names, found {}", agents.describe()))
                    .at(file, agents.span),
            ),
        }
    }
    if doc.agents.is_empty() && !b.diags.iter().any(|d| d.is_error()) {
        let span = root.entry("agents").map(|e| e.key.span).unwrap_or_else(|| super::schema::head_span(file, root));
        b.diags.push(
            Diagnostic::warning("no-agents", "the file defines no agents")
                .at(file, span)
                .hint("add `agents:` with at least one agent (state + graph)"),
        );
    }
    doc
}

/// A copy of `node` with `${NAME}` / `${NAME:-default}` / `$$` interpolated into every string
/// scalar (plain scalars are re-resolved, so `${N:-1}` becomes the integer 1). Missing variables
/// are reported at their placeholder.
fn interpolate_tree(
    file: &SourceFile,
    node: &YNode,
    diags: &mut Vec<Diagnostic>,
    changed: &mut std::collections::HashSet<Span>,
) -> YNode {
    use syntax::yaml::{ScalarValue, Style};
    match &node.kind {
        YKind::Scalar(sc) if sc.value == ScalarValue::Str && sc.text.contains('$') => {
            let (out, missing) = env::interpolate(&sc.text, &process_env);
            for m in missing {
                let s = super::schema::value_offset_to_source(file, node, m.start);
                let e = super::schema::value_offset_to_source(file, node, m.end);
                diags.push(
                    Diagnostic::error("env-missing", format!("environment variable `{}` is not set", m.name))
                        .at(file, Span::new(s, e.max(s)))
                        .hint(format!(
                            "set {} before running, or give a default: ${{{}:-value}}; write $$ for a literal $",
                            m.name, m.name
                        )),
                );
            }
            if out == sc.text {
                return node.clone();
            }
            changed.insert(node.span);
            let value = if sc.style == Style::Plain { syntax::yaml::resolve_plain(&out) } else { ScalarValue::Str };
            YNode { span: node.span, kind: YKind::Scalar(syntax::yaml::Scalar { text: out, style: sc.style, value }) }
        }
        YKind::Seq(items) => YNode {
            span: node.span,
            kind: YKind::Seq(items.iter().map(|n| interpolate_tree(file, n, diags, changed)).collect()),
        },
        YKind::Map(entries) => YNode {
            span: node.span,
            kind: YKind::Map(
                entries
                    .iter()
                    .map(|e| syntax::yaml::YEntry { key: e.key.clone(), value: interpolate_tree(file, &e.value, diags, changed) })
                    .collect(),
            ),
        },
        _ => node.clone(),
    }
}

fn build_agent(b: &mut Builder<'_>, name: Sp<String>, node: &YNode) -> Option<AgentDef> {
    let what = format!("agent `{}`", name.value);
    if !b.checker().check_obj_except(node, &AGENT_DEF, &what, &["graph", "state"]) {
        return None;
    }
    // The A2A executor validates structured input and output against these with jsonschema.
    for key in ["input_schema", "output_schema"] {
        if let Some(schema) = node.get(key) {
            b.checker().check_json_schema(schema, &format!("`{key}` of {what}"), syntax::diag::Severity::Error);
        }
    }
    let mut agent = AgentDef {
        name,
        state_fields: Vec::new(),
        entry_point: None,
        nodes: Vec::new(),
        edges: Vec::new(),
        recursion_limit: None,
        input_schema: node.get("input_schema").map(|n| n.to_json()),
        output_schema: node.get("output_schema").map(|n| n.to_json()),
        span: node.span,
        graph_span: node.span,
    };
    if let Some(lc) = node.get("langgraph_config") {
        agent.recursion_limit = lc.get("recursion_limit").and_then(|n| n.as_i64());
    }
    // State.
    if let Some(state) = node.get("state") {
        b.checker().check_obj_except(state, &STATE_DEF, &format!("the state of {what}"), &["fields"]);
        match state.get("fields") {
            Some(fields) if fields.as_seq().is_some() => {
                for f in fields.as_seq().unwrap() {
                    if !b.checker().check_obj(f, &STATE_FIELD, &format!("a state field of {what}")) {
                        continue;
                    }
                    let Some(fname) = b.sp_str(f.get("name")) else { continue };
                    let ty = b.sp_str(f.get("type"));
                    if let Some(t) = &ty {
                        if !STATE_TYPES.contains(&t.value.as_str()) {
                            let sugg = syntax::diag::did_you_mean(&t.value, STATE_TYPES.iter().copied());
                            b.diags.push(
                                Diagnostic::warning("state-type", format!("unknown state field type `{}`; it is treated as `str`", t.value))
                                    .at(b.file, t.span)
                                    .hint(match sugg {
                                        Some(s) => format!("did you mean `{s}`? Known types: {}", STATE_TYPES.join(", ")),
                                        None => format!("known types: {}", STATE_TYPES.join(", ")),
                                    }),
                            );
                        }
                    }
                    agent.state_fields.push(StateField { name: fname, ty, default: f.get("default").map(|d| d.to_json()) });
                }
            }
            Some(other) if !other.is_null() => b.checker().check_value(other, &STATE_FIELDS_TY, "`fields`", true),
            _ => b.diags.push(
                Diagnostic::error("missing-field", format!("the state of {what} is missing `fields`"))
                    .at(b.file, super::schema::head_span(b.file, state))
                    .hint("add `fields:` with a list of `- name: ...` entries (a `messages` field for chat agents)"),
            ),
        }
    } else {
        b.diags.push(
            Diagnostic::error("missing-field", format!("{what} is missing required field `state`"))
                .at(b.file, agent.name.span)
                .hint("add `state: {fields: [{name: messages, type: list}]}`"),
        );
    }
    // Graph.
    let Some(graph) = node.get("graph") else {
        b.diags.push(
            Diagnostic::error("missing-field", format!("{what} is missing required field `graph`"))
                .at(b.file, agent.name.span)
                .hint("add `graph:` with `entry_point`, `nodes` and `edges`"),
        );
        return Some(agent);
    };
    agent.graph_span = graph.span;
    b.checker().check_obj_except(graph, &GRAPH_DEF, &format!("the graph of {what}"), &["nodes", "edges"]);
    agent.entry_point = b.sp_str(graph.get("entry_point"));
    match graph.get("nodes") {
        Some(nodes) => match nodes.as_seq() {
            Some(items) => {
                for item in items {
                    if let Some(n) = build_node(b, item, &what) {
                        agent.nodes.push(n);
                    }
                }
            }
            None if nodes.is_null() => {}
            None => b.checker().check_value(nodes, &NODES_TY, "`nodes`", true),
        },
        None => b.diags.push(
            Diagnostic::error("missing-field", format!("the graph of {what} is missing required field `nodes`"))
                .at(b.file, super::schema::head_span(b.file, graph)),
        ),
    }
    match graph.get("edges") {
        Some(edges) => match edges.as_seq() {
            Some(items) => {
                for item in items {
                    if !b.checker().check_obj(item, &EDGE_DEF, &format!("an edge of {what}")) {
                        continue;
                    }
                    let branches = item.get("branches").map(|br| {
                        br.as_seq()
                            .unwrap_or(&[])
                            .iter()
                            .filter(|x| x.as_map().is_some())
                            .map(|x| Branch {
                                condition: b.expr(x.get("condition")),
                                target: b.sp_str(x.get("target")),
                                span: x.span,
                            })
                            .collect()
                    });
                    agent.edges.push(EdgeDef {
                        source: b.sp_str(item.get("source")),
                        target: b.sp_str(item.get("target")),
                        branches,
                        default: b.sp_str(item.get("default")),
                        span: item.span,
                    });
                }
            }
            None if edges.is_null() => {}
            None => b.checker().check_value(edges, &EDGES_TY, "`edges`", true),
        },
        None => b.diags.push(
            Diagnostic::error("missing-field", format!("the graph of {what} is missing required field `edges`"))
                .at(b.file, super::schema::head_span(b.file, graph))
                .hint("add `edges: []` if the graph has a single node"),
        ),
    }
    Some(agent)
}

fn build_node(b: &mut Builder<'_>, item: &YNode, agent_what: &str) -> Option<NodeDef> {
    let label = item
        .get("name")
        .and_then(|n| n.scalar_text())
        .map(|n| format!("node `{n}`"))
        .unwrap_or_else(|| format!("a node of {agent_what}"));
    if !b.checker().check_obj_except(item, &NODE_DEF, &label, &["args"]) {
        return None;
    }
    let name = b.sp_str(item.get("name")).unwrap_or_else(|| Sp::new(String::new(), super::schema::head_span(b.file, item)));
    let kind = b.sp_str(item.get("type")).unwrap_or_else(|| Sp::new(String::new(), name.span));
    let args_node = item.get("args");
    let empty = YNode { span: Span::at(item.span.end as usize), kind: YKind::Map(Vec::new()) };
    let args = match args_node {
        Some(a) if !a.is_null() => a,
        _ => &empty,
    };
    if let Some(schema) = args_schema(&kind.value) {
        let args_what = format!("the args of {label}");
        let ok = if args_node.is_some_and(|a| !a.is_null()) {
            b.checker().check_obj(args, schema, &args_what)
        } else if schema.fields.iter().any(|f| f.required) {
            let req: Vec<_> = schema.fields.iter().filter(|f| f.required).map(|f| format!("`{}`", f.name)).collect();
            b.diags.push(
                Diagnostic::error("missing-field", format!("{label} of type {} needs `args` with {}", kind.value, req.join(", ")))
                    .at(b.file, name.span)
                    .hint(format!("add `args:` with {}", req.join(" and "))),
            );
            true
        } else {
            true
        };
        if !ok {
            return Some(NodeDef { name, kind, args: NodeArgs::Unknown, on_error: None, span: item.span, node: item.clone() });
        }
    }
    let nargs = match kind.value.as_str() {
        "call_llm" => {
            let mut c = CallLlm {
                llm: b.registry_ref(args.get("llm")),
                tools: b.ref_list(args.get("tools")),
                use_tools_from_registry: args.get("use_tools_from_registry").and_then(|n| n.as_bool()).unwrap_or(false),
                use_tools_from_loaded_skills: args
                    .get("use_tools_from_loaded_skills")
                    .and_then(|n| n.as_bool())
                    .unwrap_or(false),
                ..Default::default()
            };
            if let Some(prompt) = args.get("prompt") {
                match prompt.as_seq() {
                    Some(items) => {
                        for it in items {
                            if let Some(role) = b.sp_str(it.get("role")) {
                                let content = b.expr(it.get("content"));
                                c.prompt.push(PromptItem { role, content });
                            }
                        }
                    }
                    None if prompt.as_scalar().is_some() && !prompt.is_null() => {
                        // The checker already reported the type; add the fix a user needs.
                        if let Some(d) = b.diags.iter_mut().rev().find(|d| d.span == Some(prompt.span)) {
                            d.hint = Some("`prompt` is a list of messages: `- role: system` / `content: '\"...\"'` (a plain string is rejected by sherma)".into());
                        }
                    }
                    None => {}
                }
            }
            c.use_sub_agents_as_tools = match args.get("use_sub_agents_as_tools") {
                Some(n) if n.as_bool() == Some(true) => SubAgentsAsTools::All,
                Some(n) if n.as_str() == Some("all") => SubAgentsAsTools::All,
                Some(n) if n.as_seq().is_some() => SubAgentsAsTools::List(b.ref_list(Some(n)).unwrap_or_default()),
                _ => SubAgentsAsTools::No,
            };
            if let Some(rf) = args.get("response_format").filter(|n| !n.is_null()) {
                c.response_format = Some(rf.to_json());
                c.response_format_span = Some(rf.span);
                if let Some(schema) = rf.get("schema") {
                    let what = format!("the `response_format` schema of {label}");
                    b.checker().check_json_schema(schema, &what, syntax::diag::Severity::Error);
                }
            }
            if let Some(su) = args.get("state_updates").and_then(|n| n.as_map()) {
                for e in su {
                    if let Some(x) = b.expr(Some(&e.value)) {
                        c.state_updates.push((Sp::new(e.key.key_text().to_string(), e.key.span), x));
                    }
                }
            }
            NodeArgs::CallLlm(Box::new(c))
        }
        "tool_node" => NodeArgs::ToolNode { tools: b.ref_list(args.get("tools")) },
        "call_agent" => NodeArgs::CallAgent { agent: b.registry_ref(args.get("agent")), input: b.expr(args.get("input")) },
        "data_transform" => NodeArgs::DataTransform { expression: b.expr(args.get("expression")) },
        "set_state" => {
            let mut values = Vec::new();
            if let Some(m) = args.get("values").and_then(|n| n.as_map()) {
                for e in m {
                    if let Some(x) = b.expr(Some(&e.value)) {
                        values.push((Sp::new(e.key.key_text().to_string(), e.key.span), x));
                    }
                }
            }
            NodeArgs::SetState { values }
        }
        "interrupt" => NodeArgs::Interrupt { value: b.expr(args.get("value")) },
        "load_skills" => NodeArgs::LoadSkills { skill_ids: b.expr(args.get("skill_ids")) },
        "custom" => NodeArgs::Custom {
            metadata: args.get("metadata").map(|m| m.to_json()).unwrap_or(serde_json::Value::Object(Default::default())),
        },
        _ => NodeArgs::Unknown,
    };
    let on_error = item.get("on_error").filter(|n| n.as_map().is_some()).map(|oe| OnError {
        retry: oe.get("retry").filter(|r| r.as_map().is_some()).map(|r| Retry {
            max_attempts: r.get("max_attempts").and_then(|n| n.as_i64()).unwrap_or(3),
            strategy: r.get("strategy").and_then(|n| n.as_str()).unwrap_or("exponential").to_string(),
            delay: r.get("delay").and_then(|n| n.as_f64()).unwrap_or(1.0),
            max_delay: r.get("max_delay").and_then(|n| n.as_f64()).unwrap_or(30.0),
            span: r.span,
        }),
        fallback: b.sp_str(oe.get("fallback")),
        span: oe.span,
    });
    Some(NodeDef { name, kind, args: nargs, on_error, span: item.span, node: item.clone() })
}

/// Fields of a schema object (for the editor's inspector).
pub fn fields_of(obj: &'static Obj) -> &'static [Field] {
    obj.fields
}
