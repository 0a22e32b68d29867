//! The engine's integration tests, in one binary (as ripgrep keeps them): each module was a test
//! binary of its own, and each of those linked the whole engine. `cargo test --test integration
//! <module>::` runs one of them; `support` holds the fake servers they share.

mod support;

mod a2a;
mod bad_input;
mod cases;
mod conformance;
mod durable;
mod edit_ops;
mod faults;
mod hooks;
mod keyring;
mod llm_http;
mod load;
mod loki_tools;
mod mcp;
mod prop_edit;
mod prop_loader;
mod rag;
mod run_driver;
mod run_golden;
mod run_loki;
mod run_session;
mod run_sherma;
mod run_skills;
mod save_kill;
mod security;
mod tidy;
