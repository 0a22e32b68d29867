//! Switchyard engine: documents, graph IR, validation, expressions and (later) runs.
//! See ARCHITECTURE.md for the code map and the invariants.

pub mod diag;
pub mod doc;
pub mod edit;
pub mod expr;
pub mod graph;
pub mod layout;
pub mod llm;
pub mod rt;
pub mod secrets;
pub mod run;
pub mod skills;
pub mod source;
pub mod studio;
pub mod testdata;
pub mod validate;
pub mod yaml;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
