//! The engine's integration tests, in one binary (as ripgrep keeps them): each module was a test
//! binary of its own, and each of those linked the whole engine. `cargo test --test integration
//! <module>::` runs one of them. What they share is the `test-support` crate (`test_support::…`):
//! temp dirs, the fake LLM server, HTTP serving on 127.0.0.1 (the MCP server of `mcp`, the A2A
//! server of `a2a` and the hook server of `hooks` are their own routers served through it),
//! static sites, run assertions. `support/fake_llm.rs` only re-exports the fake LLM for
//! `bench/llm_calls.rs`, which includes that file by its path.

mod a2a;
mod bad_input;
mod bundle;
mod cases;
mod child_env;
mod conformance;
mod diff;
mod durable;
mod edit_lllm;
mod edit_ops;
mod faults;
mod hooks;
mod hostile;
mod keyring;
mod llm_http;
mod load;
mod loki_tools;
mod mcp;
mod offline;
mod package;
mod prop_edit;
mod prop_loader;
mod rag;
mod run_coyote;
mod run_coyote_supervisor;
mod run_driver;
mod run_golden;
mod run_lllm;
mod run_loki;
mod run_session;
mod run_sherma;
mod run_skills;
mod save_kill;
mod restate;
mod security;
mod serve;
mod sherma_fidelity;
mod suite;
mod tidy;
mod trust;
