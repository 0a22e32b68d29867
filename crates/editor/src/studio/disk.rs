//! Files on disk: reading text, hashing, atomic writes, the positions sidecar.

use super::{Pos, Positions};
use syntax::diag::Diagnostic;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a look at the disk found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum DiskEvent {
    Unchanged,
    Reloaded,
    Conflict,
    Deleted,
}

#[derive(Debug)]
pub enum SaveError {
    /// The file changed on disk since it was loaded or saved.
    Conflict { path: PathBuf },
    Io { path: PathBuf, message: String },
}

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaveError::Conflict { path } => write!(
                f,
                "{} changed on disk since it was opened: reload it, or keep your version and save again to overwrite it",
                path.display()
            ),
            SaveError::Io { path, message } => write!(
                f,
                "could not save {}: {message}. Nothing was written; check the folder's permissions and free space, then save again",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SaveError {}

pub fn hash(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

pub fn read_text(path: &Path) -> Result<String, Diagnostic> {
    let bytes = std::fs::read(path).map_err(|e| {
        Diagnostic::error("io", format!("cannot read {}: {e}", path.display()))
            .hint("check that the file exists and is readable".to_string())
            .in_file(path)
    })?;
    if bytes.len() as u64 > model::doc::MAX_FILE_BYTES {
        return Err(Diagnostic::error(
            "file-too-large",
            format!("{} is {} bytes; the editor opens files up to {} bytes", path.display(), bytes.len(), model::doc::MAX_FILE_BYTES),
        )
        .in_file(path));
    }
    String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error("not-utf8", format!("{} is not UTF-8 text (invalid byte at offset {})", path.display(), e.utf8_error().valid_up_to()))
            .hint("save the file as UTF-8 and open it again".to_string())
            .in_file(path)
    })
}

pub fn read_hash(path: &Path) -> Option<u64> {
    std::fs::read(path).ok().map(|b| hash(&b))
}

/// The temporary file a save by this process writes before renaming it over `path`:
/// `.<name>.switchyard-<pid>.tmp` in the same directory (a rename is only atomic within one file
/// system).
fn temp_path(path: &Path, pid: u32) -> PathBuf {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    dir.join(format!(".{name}.switchyard-{pid}.tmp"))
}

/// Writes through a temporary file in the same directory, fsyncs it, keeps the original's
/// permissions, renames it over the target and fsyncs the directory; a crash (even `kill -9`)
/// leaves either the old or the new file, never a mix. A crash between create and rename can
/// leave the temporary file behind: [`remove_stale_temps`] removes it on the next open.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), super::SaveError> {
    write_atomic_mode(path, bytes, None)
}

/// [`write_atomic`] with the permissions of a new file set to `mode` (unix), e.g. `0o600` for
/// files only the user may read.
pub fn write_atomic_mode(
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<(), super::SaveError> {
    let io = |e: std::io::Error| super::SaveError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = temp_path(path, std::process::id());
    let result = (|| {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if let Some(m) = mode {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(m);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

/// Whether the process `pid` still exists (a save of that process may be under way).
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Some(p) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return false;
        };
        match rustix::process::test_kill_process(p) {
            Ok(()) => true,
            // It exists but belongs to someone else.
            Err(e) => e == rustix::io::Errno::PERM,
        }
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Removes temporary files that a save of `path` left behind when its process died between
/// creating and renaming them (the target itself is intact: the rename never happened). Files
/// of processes that still run are left alone (their save may be under way), as are files the
/// pattern does not match exactly. Returns how many were removed.
pub fn remove_stale_temps(path: &Path) -> usize {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return 0;
    };
    let prefix = format!(".{name}.switchyard-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(f) = file.to_str() else { continue };
        let Some(pid) = f
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".tmp"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !process_alive(pid)
            && e.file_type().is_ok_and(|t| t.is_file())
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".switchyard.json");
    path.with_file_name(name)
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Sidecar {
    version: u32,
    #[serde(default)]
    agents: BTreeMap<String, SidecarAgent>,
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct SidecarAgent {
    #[serde(default)]
    positions: BTreeMap<String, Pos>,
}

/// Reads the sidecar; a missing or unreadable one means no saved positions (never an error:
/// the automatic layout applies).
pub fn read_sidecar(path: &Path) -> Positions {
    let Ok(bytes) = std::fs::read(sidecar_path(path)) else { return Positions::new() };
    match serde_json::from_slice::<Sidecar>(&bytes) {
        Ok(s) => s.agents.into_iter().map(|(k, v)| (k, v.positions)).collect(),
        Err(e) => {
            tracing::warn!("ignoring unreadable sidecar {}: {e}", sidecar_path(path).display());
            Positions::new()
        }
    }
}

pub fn write_sidecar(path: &Path, p: &Positions) -> Result<(), super::SaveError> {
    let s = Sidecar {
        version: 1,
        agents: p
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), SidecarAgent { positions: v.clone() }))
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&s).unwrap_or_default();
    text.push('\n');
    write_atomic(&sidecar_path(path), text.as_bytes())
}
