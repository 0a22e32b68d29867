//! The Tests panel's commands (issue 33): the agent test suites of the open document (the
//! `*.tests.yaml` files under its folder whose agent is the open file) and running them through
//! the engine's `suite` crate, as `switchyard test` does. Running a suite runs its agent, so the
//! agent's folder must be trusted and its manifest confirmed first (`trust::require_trust`, the
//! gate `run_start` uses). Live cases are skipped, as `switchyard test` without `--live`.

use crate::commands::{CmdError, with_session};
use std::path::{Path, PathBuf};
use switchyard::suite::{self, SuiteInfo, SuiteResult};
use tauri::AppHandle;

fn open_path(app: &AppHandle) -> Result<PathBuf, CmdError> {
    with_session(app, "listing the tests", |s| Ok(s.path().to_path_buf()))
}

/// The suites beside the open document, with their cases (and their problems, if any).
#[tauri::command]
pub async fn suite_list(app: AppHandle) -> Result<Vec<SuiteInfo>, CmdError> {
    let path = open_path(&app)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    tauri::async_runtime::spawn_blocking(move || suite::suites_of(&path, &dir).iter().map(suite::info).collect())
        .await
        .map_err(|e| CmdError::new(format!("listing the tests failed: {e}")))
}

/// Run the suite `file` (a path `suite_list` gave), all its cases or the one named `case`.
#[tauri::command]
pub async fn suite_run(app: AppHandle, file: String, case: Option<String>) -> Result<SuiteResult, CmdError> {
    let file = crate::paths::check(&app, Path::new(&file), "run the tests of")?;
    let s = tauri::async_runtime::spawn_blocking(move || suite::load(&file))
        .await
        .map_err(|e| CmdError::new(format!("reading the suite failed: {e}")))?;
    if !s.has_errors() {
        crate::trust::require_trust(&s.doc.path, &s.doc)?;
    }
    // A failing run's trace goes to the app's runs folder, where the debugger may open it.
    let trace_dir = crate::debug::runs_dir(&app).map(|d| d.join("tests"));
    let opts = suite::Options { trust: true, only: case, trace_dir, ..suite::Options::default() };
    tauri::async_runtime::spawn_blocking(move || {
        let mut results = suite::run_all(std::slice::from_ref(&s), &opts, &|_, _| {});
        results.remove(0)
    })
    .await
    .map_err(|e| CmdError::new(format!("running the tests failed: {e}")))
}
