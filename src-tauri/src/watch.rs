//! Watches the open file for changes made by other programs.
//!
//! The watch is on the file's parent directory (a watch on the file itself goes silent after the
//! first save-by-rename), debounced, and filtered by file name. Every event for our file only
//! means "maybe changed": the handler asks the session, which compares content hashes, so our own
//! saves and no-op touches change nothing.

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// Time the debouncer waits for a burst of events to settle.
pub const DEBOUNCE: Duration = Duration::from_millis(250);

pub struct FileWatch {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
}

impl FileWatch {
    /// Starts watching `file`; `on_change` runs on the debouncer's thread after events that
    /// touched it. Fails with a message when the folder cannot be watched (the app still works,
    /// without live reload).
    pub fn start(file: &Path, on_change: impl Fn() + Send + 'static) -> Result<FileWatch, String> {
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let name: OsString = file.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        let mut debouncer = new_debouncer(DEBOUNCE, None, move |res: DebounceEventResult| {
            let Ok(events) = res else { return };
            let ours = events.iter().any(|e| {
                e.paths.iter().any(|p| p.file_name() == Some(name.as_os_str()))
            });
            if ours {
                on_change();
            }
        })
        .map_err(|e| format!("cannot watch {} for changes: {e}", dir.display()))?;
        debouncer
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|e| format!("cannot watch {} for changes: {e}", dir.display()))?;
        Ok(FileWatch { _debouncer: debouncer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn reports_atomic_replacements_and_in_place_writes_of_the_file_only() {
        let d = std::env::temp_dir().join(format!("switchyard-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("agent.yaml");
        std::fs::write(&f, "a: 1\n").unwrap();
        let (tx, rx) = mpsc::channel();
        let _w = FileWatch::start(&f, move || {
            let _ = tx.send(());
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));

        // Another file in the same folder: no report.
        std::fs::write(d.join("other.yaml"), "b: 1\n").unwrap();
        assert!(rx.recv_timeout(Duration::from_millis(800)).is_err());

        // Save by rename, twice (a watch on the file itself would miss the second).
        for i in 0..2 {
            let tmp = d.join(format!(".agent.yaml.tmp{i}"));
            std::fs::write(&tmp, format!("a: {i}\n")).unwrap();
            std::fs::rename(&tmp, &f).unwrap();
            rx.recv_timeout(Duration::from_secs(3)).expect("rename reported");
            while rx.recv_timeout(Duration::from_millis(400)).is_ok() {}
        }
        // In-place write.
        std::fs::write(&f, "a: 9\n").unwrap();
        rx.recv_timeout(Duration::from_secs(3)).expect("write reported");
        let _ = std::fs::remove_dir_all(&d);
    }
}
