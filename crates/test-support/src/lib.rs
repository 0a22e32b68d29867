//! What Switchyard's tests share, so that no test file writes it again: temp directories
//! ([`temp`]), fake servers on 127.0.0.1 that speak the real wire formats ([`fake_llm`] for LLM
//! providers and embeddings, [`http`] for any axum router, a static site and a port nobody
//! listens on), assertions on runs and their events ([`run`]), processes the tests start and
//! talk to over HTTP ([`process`]), and whether a process is gone ([`process_gone`]).
//!
//! A dev-dependency only (ARCHITECTURE.md, `## Crates`): the integration tests
//! (`tests/integration/`), the benches and the unit tests of the crates above `connect`
//! (`launch`'s trace tests) use it; no crate's own code does. It imports `runtime` and `connect`
//! and nothing higher, so `launch` can depend on it for its tests without a cycle.

pub mod fake_llm;
pub mod http;
pub mod process;
pub mod run;
pub mod temp;

pub use temp::TempDir;

/// Whether process `pid` is gone, or a zombie waiting to be reaped (Linux: `/proc/<pid>/stat`).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) == Some("Z"),
    }
}

/// Waits up to `limit` for `ok` to hold, checking every 20 ms; whether it did.
pub fn wait_until(limit: std::time::Duration, mut ok: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if ok() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ok()
}
