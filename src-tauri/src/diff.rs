//! The graph diff of the open document (issue 33 item 5): the editor's text, saved or not,
//! against the file as committed at a git revision (default HEAD) or against another file,
//! compared by `model::diff` (`switchyard diff`'s engine) for the agent the canvas shows. The
//! answer is a `GraphDiff` (`ui/src/contract/diff.ts`); the UI colours the canvas and the
//! inspector from it.

use crate::commands::{CmdError, with_session};
use std::path::{Path, PathBuf};
use switchyard::diff::{GraphDiff, diff_documents};
use switchyard::doc;
use tauri::AppHandle;

/// `rev`: a git revision (default `HEAD`); `file`: another agent file to compare with instead
/// (judged by `paths.rs` like every path the webview names).
#[tauri::command]
pub async fn diff_document(
    app: AppHandle,
    rev: Option<String>,
    file: Option<String>,
) -> Result<GraphDiff, CmdError> {
    let (path, agent, new) = with_session(&app, "comparing the document", |s| {
        Ok((
            s.path().to_path_buf(),
            s.agent().map(String::from),
            s.document(),
        ))
    })?;
    let old = match file.filter(|f| !f.trim().is_empty()) {
        Some(f) => {
            let p: PathBuf = crate::paths::check(&app, Path::new(&f), "compare with")?;
            doc::load_path(&p)
        }
        None => {
            let rev = rev
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "HEAD".into());
            let bytes = switchyard::run::launch::worktree::show(&rev, &path).map_err(|e| {
                CmdError::new(format!("{e} (is the file committed in a git repository?)"))
            })?;
            doc::load_bytes(&path, &bytes)
        }
    };
    if old.io_error {
        let why = old
            .diagnostics
            .first()
            .map(|d| d.message.clone())
            .unwrap_or_default();
        return Err(CmdError::new(format!(
            "cannot read the version to compare with: {why}"
        )));
    }
    diff_documents(&old, &new, agent.as_deref()).map_err(CmdError::new)
}

/// Two recorded runs compared step by step (issue 33 item 6; `launch::trace::diff`, what
/// `switchyard trace diff` prints): `a` and `b` are trace files, `a_events` / `b_events` how many
/// of their events count (a run before a rewind shares its trace file with the fork that went
/// on). The open document, when there is one, gives a Loki graph's reducers. The answer is a
/// `TraceDiff` (`ui/src/contract/tracediff.ts`), passed through the secret redactor.
#[tauri::command]
pub async fn trace_diff(
    app: AppHandle,
    a: String,
    a_events: Option<usize>,
    b: String,
    b_events: Option<usize>,
) -> Result<serde_json::Value, CmdError> {
    let pa = crate::paths::check(&app, Path::new(&a), "read the trace")?;
    let pb = crate::paths::check(&app, Path::new(&b), "read the trace")?;
    let doc = {
        use tauri::Manager;
        let state = app.state::<crate::AppState>();
        let session = state.lock_session();
        session.as_ref().map(|s| s.document())
    };
    let job = move || -> Result<serde_json::Value, String> {
        use switchyard::run::launch::trace::{Trace, diff};
        let ta = diff::prefix(&Trace::read(&pa)?, a_events);
        let tb = diff::prefix(&Trace::read(&pb)?, b_events);
        let d = diff::compare(&ta, &tb, doc.as_deref());
        let mut v = serde_json::to_value(&d).map_err(|e| e.to_string())?;
        switchyard::secrets::global().value(&mut v);
        Ok(v)
    };
    match tauri::async_runtime::spawn_blocking(job).await {
        Ok(r) => r.map_err(CmdError::new),
        Err(e) => Err(CmdError::new(format!("comparing the runs failed: {e}"))),
    }
}
