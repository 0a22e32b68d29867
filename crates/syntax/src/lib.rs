//! The bottom layer of Switchyard: source text with its line index and spans ([`source`]),
//! positioned diagnostics ([`diag`]) and the YAML tree that keeps a span on every node
//! ([`yaml`]). Imports nothing of Switchyard's own; every other crate builds on it.

pub mod contract;
pub mod diag;
pub mod source;
pub mod yaml;
