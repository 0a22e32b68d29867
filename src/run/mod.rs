//! Runs: what a run reports to a debugger (`events`) and where its LLM replies come from
//! (`provider`), the dialect-neutral debugger session (`session`) and the interpreters.

pub use connect::a2a;
pub use runtime::events;
pub use runtime::provider;
pub use connect::proctag;
pub use connect::pybridge;
pub use ::loki::script;
pub use ::sherma::state as sherma_state;
pub use runtime::session;
pub use runtime::nested;
pub use ::sherma::machine as sherma;
pub use ::launch;
pub use runtime::narrate;
pub use ::loki::machine as loki;
pub use ::lllm::machine as lllm;
pub use ::loki::tools as loki_tools;
pub use runtime::driver;
pub use connect::mcp;
pub use ::sherma::hooks;
pub use ::loki::rag;
pub use ::launch::durable as store;
