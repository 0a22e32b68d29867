//! sherma declarative agents (`manifest_version: 1`): schema, typed model with spans.
//!
//! Upstream ignores unknown keys; we warn about them (with "did you mean"). Environment
//! placeholders (`${NAME}`, `${NAME:-default}`, `$$`) are interpolated into the model's strings,
//! while the YAML tree keeps the original text, so nothing from the environment is ever written
//! back into the file.
//!
//! `schema.rs` holds the static schema tables, `model.rs` the typed model, `build.rs` builds the
//! model from the YAML tree; everything is re-exported here (`doc::sherma::NodeArgs`, ...).

mod build;
mod model;
mod schema;

pub use build::build;
pub use model::*;
pub use schema::*;
