//! Switchyard engine: documents, graph IR, validation, expressions and (later) runs.
//! See ARCHITECTURE.md for the code map and the invariants.

pub use switchyard_syntax::diag;
pub mod doc;
pub mod edit;
pub use switchyard_expr as expr;
pub mod graph;
pub mod layout;
pub mod llm;
pub mod rt;
pub mod secrets;
pub mod run;
pub mod skills;
pub use switchyard_syntax::source;
pub mod studio;
pub mod testdata;
pub mod validate;
pub use switchyard_syntax::yaml;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
