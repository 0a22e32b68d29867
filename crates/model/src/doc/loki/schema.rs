//! The Loki schema tables: node types, reducers, versions, drivers and one `Obj` per object
//! (graph, settings, variables and each node type), as the checker and the editor read them.

use crate::doc::schema::{Field, Obj, Ty, opt, req};

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

const NEXT_TY: Ty = Ty::OneOf(&[Ty::NodeRef, Ty::List(&Ty::NodeRef)]);
const STATE_UPDATES_TY: Ty = Ty::Map(&Ty::Template);
const SECONDS: Ty = Ty::Int { min: Some(0) };
const COUNT: Ty = Ty::Int { min: Some(0) };
/// `mcp_tools`: server -> glob patterns (`*`, `?`).
const MCP_TOOLS_TY: Ty = Ty::Map(&Ty::List(&Ty::Str));
/// Map `max_concurrency`: an integer or exactly one `"{{key}}"`.
const MAX_CONCURRENCY_TY: Ty = Ty::OneOf(&[COUNT, Ty::Template]);

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
            "per-node visit cap, default 100; 0 = no cap (coyote 0.10.3, with a warning)",
        ),
        opt(
            "timeout",
            SECONDS,
            "whole-run wall clock in seconds; 0 = no bound (coyote 0.10.3, with a warning)",
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
            "mcp_tools",
            MCP_TOOLS_TY,
            "server -> tool globs (`*`, `?`) allowed on every node using `mcp:<server>` (coyote 0.10.3)",
        ),
        opt(
            "max_concurrent_jobs",
            COUNT,
            "background jobs (`job__*` tools) running at once across the run; 0 disables jobs (coyote 0.10.3)",
        ),
        opt(
            "can_spawn_agents",
            Ty::Bool,
            "llm nodes may spawn sub-agents (agent__* tools); default: the graph has an agent node (coyote 0.10.3)",
        ),
        opt(
            "max_concurrent_agents",
            COUNT,
            "dynamically spawned sub-agents running at once, default 4 (coyote 0.10.3)",
        ),
        opt(
            "max_agent_depth",
            COUNT,
            "agent nesting depth (agents spawning agents), default 3 (coyote 0.10.3)",
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
        opt("timeout", SECONDS, "seconds, default 300; 0 = no bound (coyote 0.10.3)"),
        opt(
            "max_attempts",
            COUNT,
            "attempts on transient errors only, default 1 (coyote 0.10.3)",
        ),
        opt(
            "fallback",
            Ty::NodeRef,
            "node to route to when every attempt failed (coyote 0.10.3)",
        ),
        opt(
            "inputs",
            Ty::Map(&Ty::Template),
            "child graph agent's state seeds: key -> template against this graph's state; a lone {{key}} keeps its JSON type (coyote 0.10.3; graph agents only)",
        ),
        opt(
            "teammates",
            Ty::Bool,
            "flagged agent nodes running in the same fan-out can message each other (coyote 0.10.3)",
        ),
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
        opt("timeout", SECONDS, "seconds, default 30; 0 = no bound (coyote 0.10.3)"),
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
        opt(
            "max_iterations",
            COUNT,
            "tool-call loop turns, default 10; 0 = no cap (coyote 0.10.3, with a warning)",
        ),
        F_STATE_UPDATES,
        F_OUTPUT_SCHEMA,
        opt(
            "timeout",
            SECONDS,
            "seconds for all attempts together (unset or 0 = none)",
        ),
        opt(
            "mcp_tools",
            MCP_TOOLS_TY,
            "server -> tool globs narrowing this node's MCP tools; servers must be the graph's (coyote 0.10.3)",
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
        opt("timeout", SECONDS, "seconds, default 120; 0 = no bound (coyote 0.10.3)"),
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
            "entry node of the per-item chain (llm, agent, rag or script nodes, followed over `next` and `fallback`)",
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
            MAX_CONCURRENCY_TY,
            "items in flight, default settings.max_concurrency; an integer >= 1 or exactly one \"{{key}}\" (coyote 0.10.3)",
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
