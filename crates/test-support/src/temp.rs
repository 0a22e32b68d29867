//! Temp directories that are removed when the test is done with them.

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A fresh, unique directory under the system's temp dir (`switchyard-<tag>-…`), removed with
/// everything in it when the guard is dropped. It dereferences to a path inside it: the
/// directory itself, or the sub-folder chosen with [`TempDir::sub`], so a helper can hand a
/// test "the agent's folder inside a scratch tree" and the whole tree still goes away.
pub struct TempDir {
    guard: tempfile::TempDir,
    at: PathBuf,
}

impl TempDir {
    /// A new empty directory whose name starts with `switchyard-<tag>-`.
    pub fn new(tag: &str) -> TempDir {
        let guard = tempfile::Builder::new()
            .prefix(&format!("switchyard-{tag}-"))
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir for {tag}: {e}"));
        let at = guard.path().to_path_buf();
        TempDir { guard, at }
    }

    /// The same directory (still removed as a whole on drop), now dereferencing to `rel` inside
    /// it; `rel` is created.
    pub fn sub(mut self, rel: impl AsRef<Path>) -> TempDir {
        self.at = self.guard.path().join(rel);
        std::fs::create_dir_all(&self.at).unwrap_or_else(|e| panic!("{}: {e}", self.at.display()));
        self
    }

    /// The path it dereferences to (the directory, or its chosen sub-folder).
    pub fn path(&self) -> &Path {
        &self.at
    }

    /// Gives up the removal: the directory stays after the test (as a bare path that a helper
    /// can hand out, e.g. inside a request); the path it dereferences to.
    pub fn keep(self) -> PathBuf {
        let at = self.at.clone();
        let _ = self.guard.keep();
        at
    }

    /// The directory that is removed on drop.
    pub fn root(&self) -> &Path {
        self.guard.path()
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.at
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.at
    }
}

impl std::fmt::Debug for TempDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TempDir({})", self.at.display())
    }
}

/// Copies the tree `from` into `to` (created), files and folders only.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap_or_else(|err| panic!("{}: {err}", e.path().display()));
        }
    }
}
