//! The engine's integration tests, in one binary (as ripgrep keeps them): each module was a test
//! binary of its own, and each of those linked the whole engine. `cargo test --test integration
//! <module>::` runs one of them. What they share (temp dirs, the fake LLM, HTTP, MCP and A2A
//! servers on 127.0.0.1, run assertions) is the `test-support` crate (`test_support::…`);
//! `support/fake_llm.rs` only re-exports its fake LLM for `bench/llm_calls.rs`.

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
