//! The LLLM config schema as data: the agent keys (what `global` and each `agent_configs`
//! entry may hold), LLLM's defaults, and the `Obj` tables the checker and the inspector read.

use crate::doc::schema::{opt, req, Field, Obj, Ty};
use serde_json::Value as Json;

/// The keys LLLM reads from an agent's merged entry; any other key becomes a model argument.
/// `tools` is LLLM 0.2's.
pub const AGENT_KEYS: &[&str] = &[
    "name",
    "model_name",
    "system_prompt",
    "system_prompt_path",
    "api_type",
    "model_args",
    "max_exception_retry",
    "max_interrupt_steps",
    "max_llm_recall",
    "extra_settings",
    "proxy",
    "context_manager",
    "skills",
    "tools",
];

/// LLLM's defaults of the agent keys that have one.
pub const DEFAULTS: &[(&str, fn() -> Json)] = &[
    ("api_type", || Json::from("completion")),
    ("max_exception_retry", || Json::from(3)),
    ("max_interrupt_steps", || Json::from(5)),
    ("max_llm_recall", || Json::from(0)),
];

/// Names older LLLM configs used for agent keys, and today's name.
pub const RENAMED: &[(&str, &str)] = &[("max_interrupt_times", "max_interrupt_steps")];

static SKILLS: [Ty; 2] = [Ty::Enum(&["*"]), Ty::List(&Ty::Str)];
static ANY: Ty = Ty::Any;

/// The agent keys after the given first fields (`name` for an agent entry, none for `global`).
macro_rules! agent_fields {
    ($($first:expr),*) => { [
    $($first,)*
    opt("model_name", Ty::Str, "the model (a LiteLLM model id such as `gpt-4o`); usually set in `global`"),
    opt("system_prompt", Ty::Str, "the system prompt as inline text (or use `system_prompt_path`)"),
    opt("system_prompt_path", Ty::Str, "a registered prompt: `folder/name` or `package:folder/name`"),
    opt("api_type", Ty::Enum(&["completion", "response"]), "`completion` (default) or `response` (OpenAI Responses API)"),
    opt("model_args", Ty::Map(&ANY), "arguments sent to the model (`temperature`, `max_tokens`, …); merged with `global`'s"),
    opt("max_exception_retry", Ty::Int { min: Some(0) }, "retries after a parse or validation failure (default 3)"),
    opt("max_interrupt_steps", Ty::Int { min: Some(0) }, "tool-call rounds before `on_interrupt_final` (default 5)"),
    opt("max_llm_recall", Ty::Int { min: Some(0) }, "retries after a network or API error (default 0)"),
    opt("extra_settings", Ty::Map(&ANY), "reserved for advanced use"),
    opt("proxy", Ty::Any, "proxy settings"),
    opt("context_manager", Ty::Any, "context window management (`type: null` disables it)"),
    opt("skills", Ty::OneOf(&SKILLS), "skill names, Anthropic skill ids (`skill_…`), SKILL.md URLs, or `\"*\"`; replaces the global list"),
    opt("tools", Ty::List(&Ty::Str), "tool, tactic-tool or proxy references (`pkg.tools:search`); replaces the global list"),
    ] };
}

const AGENT_FIELDS: [Field; 14] =
    agent_fields!(req("name", Ty::Str, "the agent's name, as the tactic's `agent_group` names it"));
const GLOBAL_FIELDS: [Field; 13] = agent_fields!();

/// One entry of `agent_configs`. Open: unknown keys are model arguments (noted by the builder).
pub static AGENT: Obj = Obj { name: "agent config", fields: &AGENT_FIELDS, open: true };

/// `global`: the agent keys but `name`.
pub static GLOBAL: Obj = Obj { name: "global", fields: &GLOBAL_FIELDS, open: true };

/// The top level. Open: other keys are read by the tactic (`tactic_type`, …).
pub static TOP: Obj = Obj {
    name: "LLLM config",
    fields: &[
        opt("base", Ty::Str, "the config this one inherits from: `name` or `package:name` (no `.yaml`)"),
        opt("global", Ty::Obj(&GLOBAL), "defaults deep-merged into every agent"),
        opt("agent_configs", Ty::List(&Ty::Obj(&AGENT)), "the agents, a list of entries with `name`"),
    ],
    open: true,
};

