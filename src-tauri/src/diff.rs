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
