//! Switchyard engine: documents, graph IR, validation, expressions and (later) runs.
//! See ARCHITECTURE.md for the code map and the invariants.

pub use syntax::diag;
pub use model::doc;
/// Graph diffs of two versions of an agent file (`switchyard diff`).
pub use model::diff;
pub use editor::edit;
pub use expr;
pub use model::graph;
pub use model::layout;
/// Live providers (`connect::llm`) with the cassettes and prices of `runtime`.
pub mod llm {
    pub use connect::llm::*;
    pub use runtime::{cassette, price};
}
pub use connect::rt;
pub use runtime::secrets;
pub mod run;
pub use model::skills;
/// Agent test suites and routing coverage (`switchyard test`).
pub use ::suite;
pub use syntax::source;
/// `switchyard serve` (the LangGraph API, the embedded engine, tokens).
pub use server as serve;
pub use editor::studio;
pub use model::testdata;
pub use model::validate;
pub use syntax::yaml;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
