//! Runs: what a run reports to a debugger (`events`) and where its LLM replies come from
//! (`provider`). The executor itself arrives later; these are the contracts it will speak.

pub mod events;
pub mod provider;
pub mod script;
pub mod sherma_state;
