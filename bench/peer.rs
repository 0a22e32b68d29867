//! Shared by the benchmarks that run sherma side by side (`run_steps`, `llm_calls`).

use std::path::PathBuf;

/// The python of the sherma venv: `SWITCHYARD_SHERMA_PYTHON`, else
/// `$SWITCHYARD_TOOLS/sherma-venv/bin/python` (default `~/.cache/switchyard-tools`), which
/// `./dev bench` creates.
pub fn sherma_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SWITCHYARD_SHERMA_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let tools = std::env::var_os("SWITCHYARD_TOOLS")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/switchyard-tools")))?;
    Some(tools.join("sherma-venv/bin/python"))
}
