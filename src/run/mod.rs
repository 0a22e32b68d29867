//! Runs: what a run reports to a debugger (`events`) and where its LLM replies come from
//! (`provider`), the dialect-neutral debugger session (`session`) and the interpreters.

pub use connect::a2a;
pub use runtime::events;
pub use runtime::provider;
pub use connect::proctag;
pub use connect::pybridge;
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
pub use connect::mcp;
pub mod hooks;
pub mod rag;
pub mod store;
