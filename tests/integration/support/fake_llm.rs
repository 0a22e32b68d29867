//! Kept for `bench/llm_calls.rs`, which includes this file by its path: the fake LLM server now
//! lives in the `test-support` crate (`test_support::fake_llm`).

#![allow(unused_imports)]

pub use test_support::fake_llm::*;
