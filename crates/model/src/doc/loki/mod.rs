//! Loki graph agents (`graph.yaml`, `version: "1.0"`): schema, typed model with spans.
//!
//! The model is what the validator, the lowering into the IR and (later) the executor read, so
//! everything needed to run a node is kept here, with defaults applied where upstream applies
//! them. The parser checks of upstream (reference/loki.md §3) are reported here; the semantic
//! checks of §4 live in `validate::loki`.
//!
//! Upstream ignores unknown keys; we warn about them (with "did you mean"). `x-...` keys are
//! Switchyard extensions that upstream also ignores; the only one with meaning is `x-next` on
//! script nodes (the possible `_next` targets of the script).
//!
//! `schema.rs` holds the static schema tables, `model.rs` the typed model, `build.rs` builds the
//! model from the YAML tree; everything is re-exported here (`doc::loki::LokiDoc`, ...).

mod build;
mod model;
mod schema;
pub mod tools;
#[cfg(test)]
mod tests;

pub use build::build;
pub use model::*;
pub use schema::*;
