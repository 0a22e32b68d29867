//! Switchyard desktop shell: wraps the engine's editing session (`switchyard::studio::Session`)
//! in the Tauri commands and events of docs/app-contract.md §3. Only this crate knows Tauri.
//!
//!     switchyard-app [PATH]        PATH: a sherma YAML file, a Loki graph.yaml, an agent folder,
//!                                  or a coyote bundle folder (its agents are listed)
//!     SWITCHYARD_OPEN=PATH switchyard-app
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod bundle;
mod commands;
mod debug;
mod diff;
mod links;
mod paths;
mod recent;
mod recovery;
mod remote;
mod settings;
mod startup;
mod suites;
mod trust;
mod watch;

use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use switchyard::studio::{DiskEvent, Session, View};
use tauri::{AppHandle, Emitter, Manager, WindowEvent};
use ts_rs::TS;

/// The open document (if any) and the watch on its folder.
#[derive(Default)]
pub struct AppState {
    session: Mutex<Option<Session>>,
    watch: Mutex<Option<watch::FileWatch>>,
}

impl AppState {
    /// The lock survives a panic elsewhere: the session is still the best state we have.
    pub fn lock_session(&self) -> MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Payload of the `document-changed` event: the open document changed on disk (or a save met
/// a change there), and the view after it.
#[derive(Serialize, Clone, TS)]
pub struct DocumentChanged {
    pub kind: ChangeKind,
    pub view: View,
}

/// What happened to the open document on disk.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Changed on disk while clean: reloaded (undoable).
    Reloaded,
    /// Changed on disk while there are unsaved edits (or a save found it changed).
    Conflict,
    /// Removed from disk; the text stays open.
    Deleted,
}

pub const MAIN_WINDOW: &str = "main";

pub fn documents_changed(app: &AppHandle, kind: ChangeKind, view: View) {
    if let Err(e) = app.emit("document-changed", DocumentChanged { kind, view }) {
        eprintln!("switchyard: could not notify the UI of a {kind:?} document: {e}");
    }
}

/// `<file name>[ •] — Switchyard`, or `Switchyard` with no document.
pub fn title_for(session: Option<&Session>) -> String {
    match session {
        None => "Switchyard".to_string(),
        Some(s) => {
            let name = s.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let dirty = if s.dirty() { " •" } else { "" };
            let remote = if s.path().starts_with(remote::REMOTE_ROOT) { " (remote, read-only)" } else { "" };
            format!("{name}{dirty}{remote} — Switchyard")
        }
    }
}

pub fn refresh_title(app: &AppHandle) {
    let title = {
        let state = app.state::<AppState>();
        let guard = state.lock_session();
        title_for(guard.as_ref())
    };
    if let Some(w) = app.get_webview_window(MAIN_WINDOW) {
        let _ = w.set_title(&title);
    }
}

/// Replaces the watch with one on `file`'s folder. Without a watch the app still works; the user
/// just does not see outside changes live (they are still caught on save).
pub fn watch_file(app: &AppHandle, file: &std::path::Path) {
    let handle = app.clone();
    let state = app.state::<AppState>();
    let mut slot = state.watch.lock().unwrap_or_else(|e| e.into_inner());
    *slot = None;
    match watch::FileWatch::start(file, move || check_disk(&handle)) {
        Ok(w) => *slot = Some(w),
        Err(e) => eprintln!("switchyard: {e}; outside changes will only be noticed on save"),
    }
}

/// No watch (a remote document has no file to watch).
pub fn unwatch(app: &AppHandle) {
    let state = app.state::<AppState>();
    *state.watch.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Looks at the disk after a watcher event (or when the window gets focus) and tells the UI.
pub fn check_disk(app: &AppHandle) {
    if remote::is_remote_doc(app) {
        return;
    }
    let (event, view) = {
        let state = app.state::<AppState>();
        let mut guard = state.lock_session();
        let Some(s) = guard.as_mut() else { return };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let ev = s.check_disk();
            let view = if ev == DiskEvent::Unchanged { None } else { Some(crate::commands::trusted_view(s)) };
            (ev, view)
        }));
        match r {
            Ok(x) => x,
            Err(_) => return,
        }
    };
    let kind = match event {
        DiskEvent::Unchanged => return,
        DiskEvent::Reloaded => ChangeKind::Reloaded,
        DiskEvent::Conflict => ChangeKind::Conflict,
        DiskEvent::Deleted => ChangeKind::Deleted,
    };
    let Some(view) = view else { return };
    documents_changed(app, kind, view);
    refresh_title(app);
    recovery::changed(app);
}

/// What to open at start: the first argument that is not a flag, else `SWITCHYARD_OPEN`.
fn startup_path() -> Option<PathBuf> {
    let arg = std::env::args_os().skip(1).find(|a| !a.to_string_lossy().starts_with('-'));
    arg.map(PathBuf::from)
        .or_else(|| std::env::var_os("SWITCHYARD_OPEN").filter(|v| !v.is_empty()).map(PathBuf::from))
}

fn main() {
    startup::rendering_policy();
    startup::init_trace();
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("usage: switchyard-app [PATH]\n\nOpens PATH (a sherma YAML file, a Loki graph.yaml, an LLLM config, an agent folder, or a coyote bundle folder) in the Switchyard editor.\nSWITCHYARD_OPEN=PATH does the same.");
        return;
    }
    if std::env::args().skip(1).any(|a| a == "--version" || a == "-V") {
        println!("switchyard-app {}", switchyard::VERSION);
        return;
    }
    // A file whose folder is not trusted does not read the environment (`${VAR}` stays as
    // written, with a warning) until the user trusts the folder.
    switchyard::doc::env::set_env_policy(|path| {
        matches!(switchyard::run::launch::trust::trusted_folder(path), Ok(Some(_)))
    });
    // The document of the command line is read, validated and laid out while the window starts.
    let start_path = startup_path();
    let mut pending = start_path.clone().filter(|p| !switchyard::doc::bundle::is_bundle(p)).map(startup::begin);
    let context = tauri::generate_context!("../tauri.conf.json");
    startup::mark("context");
    let result = tauri::Builder::default()
        .manage(AppState::default())
        .manage(startup::Startup::default())
        .manage(debug::Debugger::default())
        .manage(debug::EventQueue::default())
        .manage(paths::Grants::default())
        .manage(bundle::OpenBundle::default())
        .manage(remote::Remote::default())
        .setup(move |app| {
            startup::mark("setup");
            let dir = app.path().app_config_dir().ok();
            app.manage(recent::Recent::new(dir.map(|d| d.join("recent.json"))));
            let rec_dir = switchyard::studio::RecoveryStore::default_dir()
                .or_else(|| app.path().app_local_data_dir().ok().map(|d| d.join("recovery")));
            app.manage(recovery::Recovery::new(rec_dir));
            recovery::start(app.handle());
            if let Some(p) = &start_path {
                // Given on the command line: the user's choice, not the webview's.
                paths::grant(app.handle(), p);
                match pending.take() {
                    // Being opened since `main` began: made the session when ready (get_view waits).
                    Some(pending) => startup::finish_in_background(app.handle(), pending),
                    // A bundle folder opens as the window's bundle: the UI lists its agents.
                    None => {
                        if !bundle::open_at_start(app.handle(), p) {
                            if let Err(e) = commands::open(app.handle(), p) {
                                eprintln!("switchyard: {}", e.message);
                            }
                        }
                    }
                }
            }
            refresh_title(app.handle());
            startup::mark("setup_done");
            Ok(())
        })
        .on_page_load(|_, payload| {
            startup::mark(match payload.event() {
                tauri::webview::PageLoadEvent::Started => "page_load_started",
                tauri::webview::PageLoadEvent::Finished => "page_load_finished",
            })
        })
        .on_window_event(|window, event| {
            // Belt and braces next to the watcher: look at the disk when the user comes back.
            match event {
                WindowEvent::Focused(true) => check_disk(window.app_handle()),
                // Files dropped on the window are the user's choice: the UI opens them next.
                WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths: dropped, .. }) => {
                    for p in dropped {
                        paths::grant(window.app_handle(), p);
                    }
                }
                WindowEvent::Destroyed => {
                    // Unsaved text outlives the window: it is offered again on the next open.
                    recovery::sync_now(window.app_handle());
                    debug::shut_down(window.app_handle());
                }
                _ => {}
            }
        })
        .on_webview_event(|webview, event| {
            if let tauri::WebviewEvent::DragDrop(tauri::DragDropEvent::Drop { paths: dropped, .. }) = event {
                for p in dropped {
                    paths::grant(webview.app_handle(), p);
                }
            }
        })
        .invoke_handler(tauri::generate_handler![
            commands::open_path,
            commands::open_dialog,
            bundle::open_folder_dialog,
            bundle::bundle_open,
            bundle::bundle_current,
            bundle::bundle_close,
            commands::recent_files,
            commands::get_view,
            commands::select_agent,
            commands::apply_edit,
            commands::set_text,
            commands::undo,
            commands::redo,
            commands::save,
            commands::reload,
            commands::keep_mine,
            commands::disk_text,
            commands::set_positions,
            commands::relayout,
            commands::check_expr,
            commands::export_diagram,
            diff::diff_document,
            diff::trace_diff,
            suites::suite_list,
            suites::suite_run,
            suites::suite_save_run,
            recovery::recovery_offer,
            recovery::recovery_restore,
            recovery::recovery_discard,
            debug::run_start,
            debug::run_control,
            debug::run_events_ack,
            debug::run_events_take,
            debug::run_breakpoints,
            debug::run_answer,
            debug::run_edit_state,
            debug::run_state_at,
            debug::run_rewind,
            debug::open_trace,
            debug::trace_state_at,
            commands::nested_view,
            debug::record_check,
            debug::record_gitignore,
            links::open_external,
            debug::runs_list,
            debug::runs_delete,
            debug::run_resume,
            settings::settings_get,
            settings::settings_save,
            settings::settings_test_provider,
            settings::llm_models,
            trust::trust_status,
            trust::trust_folder,
            trust::trust_forget,
            trust::trust_confirm_manifest,
            remote::remote_status,
            remote::remote_connect,
            remote::remote_disconnect,
            remote::remote_runs,
            remote::remote_assistants,
            remote::remote_open_assistant,
            remote::remote_open_run,
            remote::remote_start,
            startup::startup_done,
        ])
        .build(context)
        .map(|app| {
            startup::mark("built");
            app.run(|_, _| {})
        });
    if let Err(e) = result {
        eprintln!("switchyard: the window could not start: {e}");
        eprintln!("(no display? run it under `xvfb-run -a`, or from a desktop session)");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_marks_dirty_documents() {
        assert_eq!(title_for(None), "Switchyard");
        let mut s = Session::from_text(std::path::Path::new("/tmp/x/agent.yaml"), "a: 1\n".into());
        assert_eq!(title_for(Some(&s)), "agent.yaml — Switchyard");
        s.set_text("a: 2\n".into());
        assert_eq!(title_for(Some(&s)), "agent.yaml • — Switchyard");
    }
}
