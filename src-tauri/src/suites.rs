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

/// What the debugger's runs were started with and given (by trace path), for *Save run as test
/// case*: a trace holds the run's events but not the answers typed while it waited.
static RUNS: std::sync::Mutex<Vec<(PathBuf, suite::save::RunRecord)>> = std::sync::Mutex::new(Vec::new());
/// Runs remembered at most.
const RUNS_KEPT: usize = 64;

/// `run_start` started a run writing the trace `trace`.
pub(crate) fn note_run(
    trace: &Path,
    agent_id: Option<String>,
    input: Option<String>,
    state: Option<serde_json::Value>,
    answers: Vec<serde_json::Value>,
    recorded: Option<PathBuf>,
) {
    let mut runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
    runs.retain(|(t, _)| t != trace);
    if runs.len() >= RUNS_KEPT {
        runs.remove(0);
    }
    runs.push((trace.to_path_buf(), suite::save::RunRecord { agent_id, input, state, answers, answered: Vec::new(), recorded }));
}

/// The run writing the trace `trace` was given `answer` to its question `id` while it waited (a run `run_start` did
/// not start, a resumed one, is not remembered).
pub(crate) fn note_answer(trace: Option<&Path>, id: &str, answer: serde_json::Value) {
    let Some(trace) = trace else { return };
    if let Some((_, r)) = RUNS.lock().unwrap_or_else(|p| p.into_inner()).iter_mut().rev().find(|(t, _)| t == trace) {
        r.answered.push((id.to_string(), answer));
    }
}

fn known_run(given: &Path, checked: &Path) -> Option<suite::save::RunRecord> {
    let runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
    runs.iter().rev().find(|(t, _)| t == given || t == checked).map(|(_, r)| r.clone())
}

/// What a trace this window did not start tells of its run: the input (a text) or the initial
/// state (an object) of its `run_started` event; answers are not in a trace.
fn record_from_trace(events: &[switchyard::run::events::Event]) -> suite::save::RunRecord {
    use switchyard::run::events::EventBody;
    let mut r = suite::save::RunRecord::default();
    if let Some(EventBody::RunStarted { input, .. }) = events.first().map(|e| &e.body) {
        match input {
            serde_json::Value::String(s) => r.input = Some(s.clone()),
            serde_json::Value::Object(_) => r.state = Some(input.clone()),
            _ => {}
        }
    }
    r
}

/// *Save run as test case*: the run whose trace is `trace` (the debugger's current or viewed
/// run) becomes the case `name` of the open agent's suite (created beside it when there is
/// none): its input, state, answers, a cassette of its replies beside the suite, and its route,
/// status and output as expectations. Answers: the suite file and the case's name.
#[tauri::command]
pub async fn suite_save_run(app: AppHandle, name: String, trace: String) -> Result<suite::save::SavedRun, CmdError> {
    crate::remote::refuse_edit(&app, "saving a run as a test case")?;
    let agent = open_path(&app)?;
    let given = PathBuf::from(&trace);
    let trace = crate::paths::check(&app, &given, "read the trace")?;
    let known = known_run(&given, &trace);
    tauri::async_runtime::spawn_blocking(move || {
        let events = suite::save::read_events(&trace)?;
        let record = known.unwrap_or_else(|| record_from_trace(&events));
        suite::save::save_run(&agent, &name, &events, &record)
    })
    .await
    .map_err(|e| CmdError::new(format!("saving the run failed: {e}")))?
    .map_err(CmdError::new)
}
