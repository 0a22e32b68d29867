//! The typed sherma model: registries, agents, nodes with their args, edges and CEL expressions,
//! with the spans they came from.

use crate::doc::Sp;
use std::path::PathBuf;
use syntax::source::Span;
use syntax::yaml::YNode;

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
