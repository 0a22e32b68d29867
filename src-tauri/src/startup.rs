//! Start-up: the document named on the command line is opened (read, validated, laid out) on a
//! thread of its own while GTK and WebKit start, and its first view is handed to the page's first
//! `get_view`; and, when `SWITCHYARD_STARTUP_TRACE` asks for it, the times of each start-up phase
//! (bench/coldstart.mjs reads them).
//!
//! `SWITCHYARD_STARTUP_TRACE=1` prints one line `switchyard-startup {json}` on stdout once the page
//! reports the canvas interactive (`startup_done`); `=exit` also quits the app then. The JSON has
//! the shell's marks (`rust`) and the page's (`page`), each `[name, ms since the Unix epoch]`.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};
use switchyard::studio::{Session, View};
use tauri::{AppHandle, Manager};
use tokio::sync::watch;

use crate::commands::{self, CmdError};

/// Milliseconds since the Unix epoch (the clock the page's `performance.timeOrigin` uses).
pub fn now_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
}

struct Trace {
    exit: bool,
    marks: Mutex<Vec<(&'static str, f64)>>,
}

static TRACE: OnceLock<Option<Trace>> = OnceLock::new();

/// Called first in `main`: reads `SWITCHYARD_STARTUP_TRACE` and takes the first mark.
pub fn init_trace() {
    let trace = match std::env::var("SWITCHYARD_STARTUP_TRACE").ok().as_deref() {
        None | Some("") | Some("0") => None,
        Some(v) => Some(Trace { exit: v == "exit", marks: Mutex::new(Vec::with_capacity(16)) }),
    };
    let _ = TRACE.set(trace);
    mark("main");
}

/// Whether the page should be composited with OpenGL, when the app decides it (`None`: the user
/// did, with `WEBKIT_DISABLE_COMPOSITING_MODE`, and that stands). `SWITCHYARD_COMPOSITING=on|off`
/// forces it; otherwise it is on only when the machine has a GPU render node (`/dev/dri/renderD*`).
///
/// Without one (a VM, a remote or virtual display) WebKitGTK's GL is Mesa's software rasterizer:
/// it loads LLVM into the web process and draws every layer on the CPU, which costs memory and
/// frames and gains nothing over WebKit's own software painting. Measured under Xvfb (release
/// app, docs/performance.md): the idle web process 195 → 115 MB PSS; a 100,001-step run 529–577
/// → 482 MB PSS for app + web process, its longest frame gap 209–236 → 139 ms.
pub fn compositing_wanted(user_webkit: Option<&str>, forced: Option<&str>, has_render_node: bool) -> Option<bool> {
    match forced.map(str::trim) {
        Some("on" | "1" | "true") => return Some(true),
        Some("off" | "0" | "false") => return Some(false),
        _ => {}
    }
    if user_webkit.is_some() {
        return None;
    }
    Some(has_render_node)
}

/// Applies `compositing_wanted` to this process's environment, which the WebKit web process
/// inherits. Called first in `main`, before any thread exists.
pub fn rendering_policy() {
    let node = std::fs::read_dir("/dev/dri")
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD")))
        .unwrap_or(false);
    let user = std::env::var("WEBKIT_DISABLE_COMPOSITING_MODE").ok();
    let forced = std::env::var("SWITCHYARD_COMPOSITING").ok();
    match compositing_wanted(user.as_deref(), forced.as_deref(), node) {
        // SAFETY: `main` calls this before it starts any thread, so nothing reads the environment concurrently.
        Some(false) => unsafe { std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1") },
        Some(true) => unsafe { std::env::remove_var("WEBKIT_DISABLE_COMPOSITING_MODE") },
        None => {}
    }
}

/// Records that the phase `name` was reached now (nothing unless tracing).
pub fn mark(name: &'static str) {
    if let Some(Some(t)) = TRACE.get() {
        t.marks.lock().unwrap_or_else(|e| e.into_inner()).push((name, now_ms()));
    }
}

/// The command-line document while it is being opened, then until the page has its first view.
pub struct Startup {
    /// `true` once the command-line document is the session (or failed to open, or there was none).
    done: watch::Sender<bool>,
    /// The view computed while opening, for the first `get_view` of the same revision.
    first: Mutex<Option<(PathBuf, u64, View)>>,
    /// Why the command-line document did not open, for the first `get_view` (the window says so).
    error: Mutex<Option<CmdError>>,
}

impl Default for Startup {
    fn default() -> Self {
        Startup { done: watch::Sender::new(true), first: Mutex::new(None), error: Mutex::new(None) }
    }
}

/// What `main` starts before the window: the opening of `path` on a thread of its own.
pub struct Pending(std::thread::JoinHandle<Result<(Session, View), CmdError>>);

/// Starts opening `path` (not a bundle folder: those open in `setup`).
pub fn begin(path: PathBuf) -> Pending {
    Pending(std::thread::spawn(move || {
        let r = commands::prepare(&path);
        mark("document_prepared");
        r
    }))
}

/// In `setup`: installs the document as the session once it is ready, without holding up the
/// window; `get_view` waits for it.
pub fn finish_in_background(app: &AppHandle, pending: Pending) {
    let startup = app.state::<Startup>();
    startup.done.send_replace(false);
    let app = app.clone();
    std::thread::spawn(move || {
        let result = pending.0.join().unwrap_or_else(|p| Err(commands::panic_message("opening the document", p)));
        match result {
            Ok((session, view)) => {
                let key = (session.path().to_path_buf(), session.revision());
                commands::install(&app, session);
                *app.state::<Startup>().first.lock().unwrap_or_else(|e| e.into_inner()) = Some((key.0, key.1, view));
            }
            Err(e) => {
                eprintln!("switchyard: {}", e.message);
                *app.state::<Startup>().error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            }
        }
        mark("document_installed");
        app.state::<Startup>().done.send_replace(true);
    });
}

/// Waits until the command-line document (if any) is open.
pub async fn wait(app: &AppHandle) {
    let mut rx = app.state::<Startup>().done.subscribe();
    let _ = rx.wait_for(|done| *done).await;
}

/// The view computed while opening, if `s` is still that document at that revision (taken once).
pub fn take_first_view(app: &AppHandle, s: &Session) -> Option<View> {
    let startup = app.state::<Startup>();
    let mut slot = startup.first.lock().unwrap_or_else(|e| e.into_inner());
    let (path, rev, view) = slot.take()?;
    (path == s.path() && rev == s.revision()).then_some(view)
}

/// Why the command-line document did not open, once (the first `get_view` reports it).
pub fn take_error(app: &AppHandle) -> Option<CmdError> {
    app.state::<Startup>().error.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The page says the canvas is interactive, with its own marks (`[name, ms since the epoch]`).
/// Prints the start-up trace when `SWITCHYARD_STARTUP_TRACE` asks for it; else does nothing.
#[tauri::command]
pub async fn startup_done(app: AppHandle, page: Vec<(String, f64)>) {
    let Some(Some(t)) = TRACE.get() else { return };
    mark("startup_done");
    let rust: Vec<(&str, f64)> = t.marks.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let line = serde_json::json!({ "rust": rust, "page": page });
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "switchyard-startup {line}");
        let _ = out.flush();
    }
    if t.exit {
        app.exit(0);
    }
}

#[cfg(test)]
mod tests {
    use super::compositing_wanted;

    #[test]
    fn compositing_follows_the_gpu_unless_the_user_chose() {
        // No choice made: on with a GPU render node, off without one.
        assert_eq!(compositing_wanted(None, None, true), Some(true));
        assert_eq!(compositing_wanted(None, None, false), Some(false));
        // The user's own WebKit setting stands.
        assert_eq!(compositing_wanted(Some("1"), None, true), None);
        assert_eq!(compositing_wanted(Some("0"), None, false), None);
        // SWITCHYARD_COMPOSITING forces it either way; anything else is no choice.
        assert_eq!(compositing_wanted(Some("1"), Some("on"), false), Some(true));
        assert_eq!(compositing_wanted(None, Some(" off "), true), Some(false));
        assert_eq!(compositing_wanted(None, Some("maybe"), false), Some(false));
    }
}
