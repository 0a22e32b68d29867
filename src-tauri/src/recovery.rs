//! Recovery files of the open document (the engine's `studio::recovery`): while the text has
//! unsaved changes it is written to the recovery store ~1.5 s after the last change (at the
//! latest 5 s after the first change of a burst of typing), and the files are removed once the
//! document is clean again (saved, reverted, undone) or the user discards its changes. When a
//! document with a recovery file is opened, the offer waits for the UI's answer
//! (`recovery_restore` / `recovery_discard`); until then autosave leaves the files alone so the
//! recovered text cannot be overwritten.

use crate::AppState;
use crate::commands::{CmdError, with_session};
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use switchyard::studio::{Recovered, RecoveryStore, Session, View};
use tauri::{AppHandle, Manager};

/// Quiet time after the last change before the recovery file is written.
pub const QUIET: Duration = Duration::from_millis(1500);
/// Longest wait after the first change of a burst (typing without pause is still recovered).
pub const MAX_DELAY: Duration = Duration::from_secs(5);

pub struct Recovery {
    store: Option<RecoveryStore>,
    tx: Mutex<Option<mpsc::Sender<()>>>,
    offer: Mutex<Option<Recovered>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recovery {
    pub fn new(dir: Option<PathBuf>) -> Recovery {
        if dir.is_none() {
            eprintln!("switchyard: no folder for recovery files (no home directory); unsaved changes are not kept across crashes");
        }
        Recovery { store: dir.map(RecoveryStore::new), tx: Mutex::new(None), offer: Mutex::new(None) }
    }

    /// The unsaved text offered for the open document, if any.
    pub fn offer(&self) -> Option<Recovered> {
        lock(&self.offer).clone()
    }

    /// Looks for unsaved text of the document just opened (replacing any earlier offer).
    pub fn on_open(&self, session: &Session) {
        *lock(&self.offer) = self.store.as_ref().and_then(|st| session.find_recovery(st));
    }

    /// The user threw the changes of `session`'s document away (opened another one with
    /// `discard`): its recovery files go too.
    pub fn on_discard(&self, session: &Session) {
        if let Some(st) = &self.store {
            if let Err(e) = st.discard(session.path()) {
                eprintln!("switchyard: {e}");
            }
        }
    }

    /// Writes or removes the recovery files of the open document to match its state now.
    pub fn sync(&self, state: &AppState) {
        let Some(st) = &self.store else { return };
        if lock(&self.offer).is_some() {
            return;
        }
        let (path, snap) = {
            let guard = state.lock_session();
            let Some(s) = guard.as_ref() else { return };
            (s.path().to_path_buf(), s.recovery_snapshot())
        };
        match snap {
            None => {
                if let Err(e) = st.discard(&path) {
                    eprintln!("switchyard: {e}");
                }
            }
            Some(snap) => {
                // Written outside the session lock; a save that finished meanwhile is caught below.
                if let Err(e) = st.write(&snap) {
                    eprintln!("switchyard: could not write the recovery file: {e}");
                    return;
                }
                let clean_now = {
                    let guard = state.lock_session();
                    match guard.as_ref() {
                        Some(s) if s.path() == path => !s.text_dirty(),
                        _ => false,
                    }
                };
                if clean_now {
                    let _ = st.discard(&path);
                }
            }
        }
    }

    /// Asks for a [`Recovery::sync`] once the changes settle (see [`QUIET`], [`MAX_DELAY`]).
    pub fn changed(&self) {
        if let Some(tx) = lock(&self.tx).as_ref() {
            let _ = tx.send(());
        }
    }
}

/// Collects change notices and calls `flush` once they settle: `quiet` after the last one, or
/// `max_delay` after the first of a burst. Returns when every sender is gone.
pub fn debounce_loop(rx: mpsc::Receiver<()>, quiet: Duration, max_delay: Duration, mut flush: impl FnMut()) {
    while rx.recv().is_ok() {
        let first = Instant::now();
        loop {
            let left = max_delay.saturating_sub(first.elapsed());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(quiet.min(left)) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    flush();
                    return;
                }
            }
        }
        flush();
    }
}

/// Starts the autosave thread (once, at setup).
pub fn start(app: &AppHandle) {
    let (tx, rx) = mpsc::channel();
    *lock(&app.state::<Recovery>().tx) = Some(tx);
    let handle = app.clone();
    let spawned = std::thread::Builder::new().name("recovery".into()).spawn(move || {
        debounce_loop(rx, QUIET, MAX_DELAY, || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handle.state::<Recovery>().sync(&handle.state::<AppState>());
            }));
        })
    });
    if let Err(e) = spawned {
        eprintln!("switchyard: could not start the recovery thread ({e}); unsaved changes are not kept across crashes");
    }
}

pub fn changed(app: &AppHandle) {
    app.state::<Recovery>().changed();
}

/// Right now (after a save or a reload, when the window closes).
pub fn sync_now(app: &AppHandle) {
    app.state::<Recovery>().sync(&app.state::<AppState>());
}

#[tauri::command]
pub async fn recovery_offer(app: AppHandle) -> Result<Option<Recovered>, CmdError> {
    Ok(app.state::<Recovery>().offer())
}

/// Loads the offered text as one undoable edit over the text on disk.
#[tauri::command]
pub async fn recovery_restore(app: AppHandle) -> Result<View, CmdError> {
    let Some(offer) = app.state::<Recovery>().offer() else {
        return Err(CmdError::new("there are no recovered changes to restore (they were restored or discarded already)"));
    };
    let view = with_session(&app, "restoring unsaved changes", |s| {
        s.restore(&offer).map_err(CmdError::new)?;
        Ok(crate::commands::trusted_view(&s))
    })?;
    *lock(&app.state::<Recovery>().offer) = None;
    sync_now(&app);
    Ok(view)
}

/// Throws the offered text away (removes the recovery files).
#[tauri::command]
pub async fn recovery_discard(app: AppHandle) -> Result<(), CmdError> {
    let rec = app.state::<Recovery>();
    let Some(offer) = rec.offer() else { return Ok(()) };
    if let Some(st) = &rec.store {
        st.discard(&offer.path).map_err(CmdError::new)?;
    }
    *lock(&rec.offer) = None;
    // Edits made while the offer was shown are recovered from now on.
    rec.changed();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debounce_waits_for_quiet_and_caps_a_burst() {
        let (tx, rx) = mpsc::channel();
        let flushes = std::sync::Arc::new(Mutex::new(Vec::<Instant>::new()));
        let f2 = flushes.clone();
        let t = std::thread::spawn(move || {
            debounce_loop(rx, Duration::from_millis(100), Duration::from_millis(400), move || lock(&f2).push(Instant::now()))
        });
        // Three quick notices: one flush, about `quiet` after the last.
        let start = Instant::now();
        for _ in 0..3 {
            tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(lock(&flushes).len(), 1);
        assert!(lock(&flushes)[0] - start >= Duration::from_millis(140));
        // Notices every 50 ms for 1 s never go quiet: flushed at least every `max_delay`.
        lock(&flushes).clear();
        for _ in 0..20 {
            tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
        }
        let n = lock(&flushes).len();
        assert!((2..=3).contains(&n), "{n} flushes during a 1 s burst");
        drop(tx);
        t.join().unwrap();
    }

    #[test]
    fn sync_writes_while_dirty_and_removes_when_clean() {
        let d = std::env::temp_dir().join(format!("switchyard-app-recovery-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("agent.yaml");
        std::fs::write(&file, "name: g\n").unwrap();
        let rec = Recovery::new(Some(d.join("recovery")));
        let state = AppState::default();
        let session = Session::open(&file).unwrap();
        rec.on_open(&session);
        assert!(rec.offer().is_none());
        *state.lock_session() = Some(session);
        let st = RecoveryStore::new(d.join("recovery"));

        state.lock_session().as_mut().unwrap().set_text("name: mine\n".into());
        rec.sync(&state);
        assert_eq!(std::fs::read_to_string(st.text_path(&file)).unwrap(), "name: mine\n");

        // A new session (after a crash) is offered the text; autosave leaves it alone meanwhile.
        let mut fresh = Session::open(&file).unwrap();
        rec.on_open(&fresh);
        let offer = rec.offer().expect("offered");
        assert_eq!(offer.text, "name: mine\n");
        fresh.set_text("name: typed meanwhile\n".into());
        *state.lock_session() = Some(fresh);
        rec.sync(&state);
        assert_eq!(std::fs::read_to_string(st.text_path(&file)).unwrap(), "name: mine\n");

        // Answered (here: discarded): autosave resumes, and a clean document has no file.
        *lock(&rec.offer) = None;
        rec.sync(&state);
        assert_eq!(std::fs::read_to_string(st.text_path(&file)).unwrap(), "name: typed meanwhile\n");
        state.lock_session().as_mut().unwrap().save(false).unwrap();
        rec.sync(&state);
        assert!(!st.text_path(&file).exists() && !st.meta_path(&file).exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
