//! Switchyard engine: documents, graph IR, validation, expressions and (later) runs.
//! See ARCHITECTURE.md for the code map and the invariants.

pub mod diag;
pub mod expr;
pub mod source;
pub mod yaml;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
