//! LLLM agent configs (the third dialect): `global` + an `agent_configs` list + `base`
//! inheritance, and the two older shapes (`agent_configs` as a mapping, `agent_group_configs`),
//! opened with a migration diagnostic. `schema.rs` the schema tables, `model.rs` the typed
//! model, `build.rs` building it (the `base` chain read, prompts resolved), `package.rs`
//! `lllm.toml` and the prompt and config folders, `effective.rs` the effective config of each
//! agent with the origin of every value (pure).

mod build;
pub mod effective;
mod model;
pub mod package;
pub mod schema;

pub use build::build;
pub use effective::{Effective, EffectiveAgent, Origin, PVal, Section};
pub use model::*;
