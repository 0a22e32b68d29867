//! The sherma schema tables: node and state types, and one `Obj` per object of the format
//! (top level, registries, agents, nodes and their args, edges), as the checker and the editor
//! read them.

use crate::doc::schema::{Field, Obj, Ty, opt, req};

pub const NODE_TYPES: &[&str] =
    &["call_llm", "tool_node", "call_agent", "data_transform", "set_state", "interrupt", "load_skills", "custom"];
pub const STATE_TYPES: &[&str] = &["str", "int", "float", "bool", "list", "dict"];
pub const BUILTIN_CONDITIONS: &[&str] = &["has_tool_calls", "has_error_fallback"];

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

pub(super) const STATE_FIELDS_TY: Ty = Ty::List(&Ty::Obj(&STATE_FIELD));
pub(super) const NODES_TY: Ty = Ty::List(&Ty::Obj(&NODE_DEF));
pub(super) const EDGES_TY: Ty = Ty::List(&Ty::Obj(&EDGE_DEF));

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

/// Fields of a schema object (for the editor's inspector).
pub fn fields_of(obj: &'static Obj) -> &'static [Field] {
    obj.fields
}
