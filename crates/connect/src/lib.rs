//! Everything of Switchyard that talks to the world outside the process:
//!
//! - [`rt`]: the one tokio runtime of the engine's I/O; blocking calls that a stop flag or a
//!   deadline cancels.
//! - [`llm`]: live LLM providers over HTTP (OpenAI and Anthropic wire formats, streamed), their
//!   configuration and API keys (environment, provider file, OS keyring).
//! - [`mcp`]: MCP servers (stdio and streamable HTTP) behind a synchronous facade.
//! - [`a2a`]: the A2A client for remote sub-agents.
//! - [`pybridge`]: sherma `import_path` tools in a long-lived Python process.
//! - [`proctag`]: the tag that lets a stop kill every process a run started.
//! - [`childenv`]: the environment those processes see (scrubbed: the base set, what the agent
//!   file references, the user's opt-in).
//!
//! Every call here runs under a stop flag and a deadline; nothing blocks a stop.

pub mod a2a;
pub mod childenv;
pub mod llm;
pub mod mcp;
pub mod proctag;
pub mod pybridge;
pub mod rt;
