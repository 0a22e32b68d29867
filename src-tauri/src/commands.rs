//! The Tauri commands of docs/app-contract.md §3. Each one locks the session, calls the engine,
//! and answers with the new `View` (or `{message}` saying what went wrong and what to do), then
//! updates the window title.
//!
//! Engine calls run inside `catch_unwind`: a bug in the engine becomes an error message instead of
//! a hung `invoke` or a dead window.

use crate::{AppState, documents_changed, recent::Recent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use switchyard::edit::EditOp;
use switchyard::studio::{Pos, SaveError, Session, View};
use tauri::{AppHandle, Manager};
use ts_rs::TS;

/// What every failing command rejects with: what went wrong and what to do.
#[derive(Debug, Serialize, TS)]
pub struct CmdError {
    pub message: String,
    /// What kind of refusal, for the UI to recognise (`untrusted`, `manifest`: see trust.rs;
    /// `path_not_allowed`: see paths.rs; `bundle`: see bundle.rs); absent for other failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = r#""untrusted" | "manifest" | "path_not_allowed" | "bundle""#)]
    pub code: Option<&'static str>,
}

impl CmdError {
    pub fn new(message: impl Into<String>) -> CmdError {
        CmdError { message: message.into(), code: None }
    }
    /// An error the UI tells apart by its `code`.
    pub fn coded(code: &'static str, message: impl Into<String>) -> CmdError {
        CmdError { message: message.into(), code: Some(code) }
    }
}

impl From<String> for CmdError {
    fn from(message: String) -> CmdError {
        CmdError { message, code: None }
    }
}

type Res<T> = Result<T, CmdError>;

const NO_DOCUMENT: &str =
    "no document is open: open a YAML file or an agent folder first (Open…, a recent file, or drop a file on the window)";

pub fn panic_message(what: &str, p: Box<dyn std::any::Any + Send>) -> CmdError {
    let detail = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    CmdError::new(format!(
        "internal error while {what}: {detail}. The file on disk was not changed; please report this with the file that caused it"
    ))
}

/// Runs `f` on the open session (error when none is open), then refreshes the window title.
pub fn with_session<T>(
    app: &AppHandle,
    what: &str,
    f: impl FnOnce(&mut Session) -> Res<T>,
) -> Res<T> {
    let state = app.state::<AppState>();
    let out = {
        let mut guard = state.lock_session();
        let Some(session) = guard.as_mut() else { return Err(CmdError::new(NO_DOCUMENT)) };
        match catch_unwind(AssertUnwindSafe(|| f(session))) {
            Ok(r) => r,
            Err(p) => Err(panic_message(what, p)),
        }
    };
    crate::refresh_title(app);
    // Any command may have changed the text: the recovery file follows once changes settle.
    crate::recovery::changed(app);
    out
}

fn view_of(s: &Session, what: &str) -> Res<View> {
    catch_unwind(AssertUnwindSafe(|| trusted_view(s))).map_err(|p| panic_message(what, p))
}

/// The view of `s` with what a folder that is not trusted is refused (files outside the project
/// root, `launch::manifest::restricted`) among its problems, at their lines.
pub fn trusted_view(s: &Session) -> View {
    let mut v = s.view();
    if s.path().starts_with(crate::remote::REMOTE_ROOT) {
        // A server's agent file: its side files are on the server, not missing.
        v.diagnostics.retain(|d| !d.message.contains(crate::remote::REMOTE_ROOT));
        // The nodes' badges count what is left.
        for n in &mut v.nodes {
            let mine = v.diagnostics.iter().filter(|d| d.node.as_deref() == Some(n.id.as_str()));
            let (errors, others): (Vec<_>, Vec<_>) = mine.partition(|d| d.is_error());
            (n.errors, n.warnings) = (errors.len(), others.len());
        }
        return v;
    }
    v.diagnostics.extend(switchyard::run::launch::manifest::restricted(&s.document()));
    v
}

/// Opens `path` (a file or an agent folder), replacing the current document, and starts watching it.
pub fn open(app: &AppHandle, path: &Path) -> Res<View> {
    let (session, view) = prepare(path)?;
    install(app, session);
    Ok(view)
}

/// Reads, validates and lays out `path` (no app state touched: any thread may do it).
pub fn prepare(path: &Path) -> Res<(Session, View)> {
    let path = absolute(path);
    let session = match catch_unwind(AssertUnwindSafe(|| Session::open(&path))) {
        Ok(Ok(s)) => s,
        Ok(Err(d)) => {
            let mut m = d.message.clone();
            if let Some(h) = &d.hint {
                m.push_str(&format!(" ({h})"));
            }
            if !m.contains(&*path.to_string_lossy()) {
                m = format!("cannot open {}: {m}", path.display());
            }
            return Err(CmdError::new(m));
        }
        Err(p) => return Err(panic_message(&format!("opening {}", path.display()), p)),
    };
    let view = view_of(&session, "drawing the document")?;
    Ok((session, view))
}

/// Makes `session` the open document: recovery, recent files, the watch, the title.
pub fn install(app: &AppHandle, session: Session) {
    let file = session.path().to_path_buf();
    crate::remote::forget_doc(app);
    let state = app.state::<AppState>();
    let recovery = app.state::<crate::recovery::Recovery>();
    recovery.on_open(&session);
    if let Some(old) = state.lock_session().replace(session) {
        // Replacing a dirty document means the user chose to throw its changes away.
        if old.dirty() && old.path() != file {
            recovery.on_discard(&old);
        }
    }
    app.state::<Recent>().push(&file);
    crate::watch_file(app, &file);
    crate::refresh_title(app);
}

/// The graph of another agent file, read-only (the open document is not touched): what the
/// debugger shows when the run is paused inside a nested run of that agent.
#[tauri::command]
pub async fn nested_view(app: AppHandle, file: String, agent: Option<String>) -> Res<View> {
    let path = absolute(Path::new(&file));
    crate::paths::check(&app, &path, "draw the nested agent")?;
    let mut session = match catch_unwind(AssertUnwindSafe(|| Session::open(&path))) {
        Ok(Ok(s)) => s,
        Ok(Err(d)) => return Err(CmdError::new(format!("cannot draw the nested agent {}: {}", path.display(), d.message))),
        Err(p) => return Err(panic_message(&format!("opening {}", path.display()), p)),
    };
    if let Some(a) = agent.filter(|a| !a.is_empty()) {
        // Only files with several agents (sherma) pick one; a Loki graph is its one agent.
        if switchyard::graph::agent_names(&session.document()).iter().any(|n| *n == a) {
            session.select_agent(&a).map_err(CmdError::new)?;
        }
    }
    view_of(&session, "drawing the nested agent")
}

fn absolute(p: &Path) -> PathBuf {
    let p = if let Some(rest) = p.to_str().and_then(|s| s.strip_prefix("~/")) {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rest)).unwrap_or_else(|| p.into())
    } else {
        p.to_path_buf()
    };
    std::path::absolute(&p).unwrap_or(p)
}

#[tauri::command]
pub async fn open_path(app: AppHandle, path: String, discard: Option<bool>) -> Res<View> {
    if path.trim().is_empty() {
        return Err(CmdError::new("no path given: choose a YAML file or an agent folder to open"));
    }
    // The document of the command line, still opening, must not replace this one afterwards.
    crate::startup::wait(&app).await;
    let judged = crate::paths::check(&app, Path::new(&path), "open")?;
    // A bundle folder is not a document: the UI opens it with `bundle_open`.
    if switchyard::doc::bundle::is_bundle(&judged) {
        return Err(crate::bundle::refuse_open(Path::new(&path)));
    }
    if !discard.unwrap_or(false) {
        refuse_if_dirty(&app)?;
    }
    open(&app, Path::new(&path))
}

/// Opening another document while this one has unsaved changes would lose them: refuse, and say
/// what to do. (`discard: true` on the command is the explicit "throw them away".)
pub fn refuse_if_dirty(app: &AppHandle) -> Res<()> {
    let state = app.state::<AppState>();
    let guard = state.lock_session();
    match guard.as_ref() {
        Some(s) if s.dirty() => Err(CmdError::new(format!(
            "{} has unsaved changes: save them (Ctrl+S) or undo them before opening another file",
            s.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ))),
        _ => Ok(()),
    }
}

#[tauri::command]
pub async fn open_dialog(app: AppHandle, discard: Option<bool>) -> Res<Option<View>> {
    if !discard.unwrap_or(false) {
        refuse_if_dirty(&app)?;
    }
    let start = {
        let state = app.state::<AppState>();
        let guard = state.lock_session();
        guard.as_ref().and_then(|s| s.path().parent().map(Path::to_path_buf))
    };
    let mut dialog = rfd::AsyncFileDialog::new()
        .set_title("Open an agent")
        .add_filter("Agent YAML", &["yaml", "yml"])
        .add_filter("All files", &["*"]);
    if let Some(dir) = start.or_else(|| std::env::current_dir().ok()) {
        dialog = dialog.set_directory(dir);
    }
    let Some(file) = dialog.pick_file().await else { return Ok(None) };
    // Chosen by the user in a native dialog: the webview may name it from now on.
    crate::paths::grant(&app, file.path());
    open(&app, file.path()).map(Some)
}

#[tauri::command]
pub async fn recent_files(app: AppHandle) -> Res<Vec<String>> {
    Ok(app.state::<Recent>().list())
}

#[tauri::command]
pub async fn get_view(app: AppHandle) -> Res<Option<View>> {
    crate::startup::wait(&app).await;
    crate::startup::mark("get_view");
    let state = app.state::<AppState>();
    let guard = state.lock_session();
    match guard.as_ref() {
        Some(s) => match crate::startup::take_first_view(&app, s) {
            Some(v) => Ok(Some(v)),
            None => view_of(s, "drawing the document").map(Some),
        },
        // The document named on the command line did not open: the window shows why.
        None => crate::startup::take_error(&app).map_or(Ok(None), Err),
    }
}

#[tauri::command]
pub async fn select_agent(app: AppHandle, name: String) -> Res<View> {
    with_session(&app, "switching agents", |s| {
        s.select_agent(&name).map_err(CmdError::new)?;
        view_of(s, "drawing the document")
    })
}

/// `apply_edit`'s answer: the `View` after the edit and `select`, the node the UI should select
/// afterwards (a new or renamed node), else null.
#[derive(Debug, Serialize, TS)]
#[ts(type = "View & { select: string | null }")]
pub struct EditedView {
    #[serde(flatten)]
    pub view: View,
    pub select: Option<String>,
}

#[tauri::command]
pub async fn apply_edit(app: AppHandle, op: Value) -> Res<EditedView> {
    crate::remote::refuse_edit(&app, "editing")?;
    let op: EditOp = serde_json::from_value(op).map_err(|e| {
        CmdError::new(format!("the editor sent an edit the engine does not understand ({e}); this is a bug in the UI"))
    })?;
    with_session(&app, "applying the edit", |s| {
        let select = s.apply(&op).map_err(|e| CmdError::new(e.message))?;
        Ok(EditedView { view: view_of(s, "drawing the document")?, select })
    })
}

#[tauri::command]
pub async fn set_text(app: AppHandle, text: String) -> Res<View> {
    crate::remote::refuse_edit(&app, "editing")?;
    with_session(&app, "taking the edited text", |s| {
        s.set_text(text);
        view_of(s, "drawing the document")
    })
}

#[tauri::command]
pub async fn undo(app: AppHandle) -> Res<View> {
    crate::remote::refuse_edit(&app, "undoing")?;
    with_session(&app, "undoing", |s| {
        s.undo();
        view_of(s, "drawing the document")
    })
}

#[tauri::command]
pub async fn redo(app: AppHandle) -> Res<View> {
    crate::remote::refuse_edit(&app, "redoing")?;
    with_session(&app, "redoing", |s| {
        s.redo();
        view_of(s, "drawing the document")
    })
}

#[tauri::command]
pub async fn save(app: AppHandle, force: Option<bool>) -> Res<View> {
    crate::remote::refuse_edit(&app, "saving")?;
    let mut conflict_view = None;
    let out = with_session(&app, "saving", |s| match s.save(force.unwrap_or(false)) {
        Ok(()) => view_of(s, "drawing the document"),
        Err(e) => {
            if matches!(e, SaveError::Conflict { .. }) {
                conflict_view = view_of(s, "drawing the document").ok();
            }
            Err(CmdError::new(e.to_string()))
        }
    });
    if let Some(view) = conflict_view {
        documents_changed(&app, crate::ChangeKind::Conflict, view);
    }
    if out.is_ok() {
        // Saved: the recovery file is obsolete now, not in 1.5 s.
        crate::recovery::sync_now(&app);
    }
    out
}

#[tauri::command]
pub async fn reload(app: AppHandle) -> Res<View> {
    crate::remote::refuse_edit(&app, "reloading")?;
    with_session(&app, "reloading", |s| {
        s.reload().map_err(|d| {
            CmdError::new(match &d.hint {
                Some(h) => format!("{} ({h})", d.message),
                None => d.message.clone(),
            })
        })?;
        view_of(s, "drawing the document")
    })
    .inspect(|_| crate::recovery::sync_now(&app))
}

#[tauri::command]
pub async fn keep_mine(app: AppHandle) -> Res<View> {
    crate::remote::refuse_edit(&app, "keeping your version")?;
    with_session(&app, "keeping your version", |s| {
        s.keep_mine();
        view_of(s, "drawing the document")
    })
}

#[tauri::command]
pub async fn disk_text(app: AppHandle) -> Res<Option<String>> {
    with_session(&app, "reading the file on disk", |s| Ok(s.disk_text()))
}

#[tauri::command]
pub async fn set_positions(app: AppHandle, positions: BTreeMap<String, Pos>) -> Res<()> {
    // A remote document keeps its layout in memory only (no sidecar is written).
    if crate::remote::is_remote_doc(&app) {
        return Ok(());
    }
    with_session(&app, "moving nodes", |s| {
        s.set_positions(positions);
        Ok(())
    })
}

#[tauri::command]
pub async fn relayout(app: AppHandle) -> Res<View> {
    with_session(&app, "laying out the graph", |s| {
        s.relayout();
        view_of(s, "drawing the document")
    })
}

/// One problem `check_expr` found in an expression.
#[derive(Debug, Serialize, TS)]
pub struct ExprIssue {
    pub message: String,
    /// Offsets in UTF-16 code units (JavaScript string indices), end exclusive.
    pub start: usize,
    pub end: usize,
    pub severity: switchyard::diag::Severity,
}

/// Byte offset → UTF-16 offset (clamped, and snapped back to a char boundary).
fn utf16_at(text: &str, byte: usize) -> usize {
    let mut b = byte.min(text.len());
    while !text.is_char_boundary(b) {
        b -= 1;
    }
    text[..b].encode_utf16().count()
}

/// The engine's expression check (`studio::check_expr`: kind `cel`, `cel_condition` or
/// `template`) with offsets converted for JavaScript strings.
pub fn check_expression(kind: &str, text: &str) -> Vec<ExprIssue> {
    switchyard::studio::check_expr(kind, text)
        .into_iter()
        .map(|p| ExprIssue {
            start: utf16_at(text, p.start),
            end: utf16_at(text, p.end),
            message: p.message,
            severity: p.severity,
        })
        .collect()
}

#[tauri::command]
pub async fn check_expr(kind: String, text: String) -> Res<Vec<ExprIssue>> {
    catch_unwind(AssertUnwindSafe(|| check_expression(&kind, &text)))
        .map_err(|p| panic_message("checking the expression", p))
}

/// `export_diagram`'s format.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, TS)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    Svg,
    Png,
}

/// Asks where to save the diagram and writes it. `data` is SVG text or base64 PNG (a
/// `data:image/png;base64,` prefix is accepted). Returns the path, or null when cancelled.
#[tauri::command]
pub async fn export_diagram(app: AppHandle, format: ExportFormat, data: String) -> Res<Option<String>> {
    use base64::Engine as _;
    let bytes = match format {
        ExportFormat::Svg => data.into_bytes(),
        ExportFormat::Png => {
            let b64 = data.split_once(";base64,").map(|(_, b)| b).unwrap_or(&data);
            base64::engine::general_purpose::STANDARD.decode(b64.trim()).map_err(|e| {
                CmdError::new(format!("the PNG from the canvas is not valid base64 ({e}); export as SVG instead"))
            })?
        }
    };
    let ext = if format == ExportFormat::Svg { "svg" } else { "png" };
    let (dir, stem) = {
        let state = app.state::<AppState>();
        let guard = state.lock_session();
        match guard.as_ref() {
            Some(s) => (
                s.path().parent().map(Path::to_path_buf),
                s.path().file_stem().map(|x| x.to_string_lossy().into_owned()).unwrap_or_else(|| "diagram".into()),
            ),
            None => (None, "diagram".into()),
        }
    };
    let mut dialog = rfd::AsyncFileDialog::new()
        .set_title("Export diagram")
        .set_file_name(format!("{stem}.{ext}"))
        .add_filter(ext.to_uppercase(), &[ext]);
    if let Some(dir) = dir {
        dialog = dialog.set_directory(dir);
    }
    let Some(target) = dialog.save_file().await else { return Ok(None) };
    let target = target.path().to_path_buf();
    std::fs::write(&target, bytes).map_err(|e| {
        CmdError::new(format!("could not write {}: {e}; choose another folder", target.display()))
    })?;
    Ok(Some(target.to_string_lossy().into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cel_errors_are_positioned_in_utf16() {
        assert!(check_expression("cel", "state.count > 1").is_empty());
        let e = check_expression("cel", "state.count >");
        assert_eq!(e.len(), 1);
        assert!(e[0].start <= e[0].end && e[0].end <= "state.count >".len());
        let e = check_expression("cel", "'é' + )");
        assert_eq!(e.len(), 1);
        assert!(e[0].end <= "'é' + )".encode_utf16().count());
    }

    /// `EditedView`'s TypeScript is `View & { select: string | null }`: the view's keys at the top.
    #[test]
    fn edited_view_is_the_view_plus_select() {
        let dir = std::env::temp_dir().join(format!("switchyard-edited-view-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("agent.yaml");
        std::fs::write(&file, "a: 1\n").unwrap();
        let view = Session::open(&file).unwrap().view();
        let v = serde_json::to_value(EditedView { view, select: Some("n".into()) }).unwrap();
        for k in ["path", "text", "nodes", "edges", "diagnostics", "revision"] {
            assert!(v.get(k).is_some(), "{k} in {v}");
        }
        assert_eq!(v["select"], "n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn templates_are_linted() {
        assert!(check_expression("template", "hello {{name}}").is_empty());
        assert!(!check_expression("template", "hello {{ name }}").is_empty());
    }

    #[test]
    fn utf16_offsets_snap_to_char_boundaries() {
        assert_eq!(utf16_at("aé😀b", 0), 0);
        assert_eq!(utf16_at("aé😀b", 2), 1); // inside é
        assert_eq!(utf16_at("aé😀b", 3), 2);
        assert_eq!(utf16_at("aé😀b", 7), 4);
        assert_eq!(utf16_at("aé😀b", 100), 5);
    }
}
