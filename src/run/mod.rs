//! Runs: what a run reports to a debugger (`events`) and where its LLM replies come from
//! (`provider`), the dialect-neutral debugger session (`session`) and the interpreters.

pub mod a2a;
pub use runtime::events;
pub use runtime::provider;
pub mod proctag;
pub mod pybridge;
pub mod script;
pub mod sherma_state;
pub use runtime::session;
pub use runtime::nested;
pub mod sherma;
pub mod launch;
pub use runtime::narrate;
pub mod loki;
pub mod loki_tools;
pub use runtime::driver;
pub mod mcp;
pub mod hooks;
pub mod rag;
pub mod store;
