//! Switchyard's interpreter of LLLM agents (the third dialect): one agent of an LLLM config run
//! as LLLM's agent call loop, each state of the loop a step the debugger stops at.
//!
//! - [`machine`]: `LllmMachine`, the call loop (`invoke` → `interrupt` / `exception` /
//!   `llm_recall` → `success` / `failure`) as a `runtime::session::Machine`;
//! - [`prompt`]: the system prompt of an agent (a prompt file beside the config, its optional
//!   front matter: parser tags, structured output, the handler messages; or a Python prompt
//!   module's `Prompt`, read through the Python bridge in trusted runs), rendered with the run's
//!   prompt arguments, and the parse checks of a reply;
//! - [`context`]: `context_manager`, the dialog cut to the model's window before each call;
//! - [`tools`]: what an agent may call: Python functions named by `tools` (through the Python
//!   bridge), `activate_skill` over the agent's skills, Anthropic skill ids as API arguments.

pub mod context;
pub mod machine;
pub mod prompt;
pub mod tools;

pub use machine::{LllmMachine, LllmOptions, NODES};
