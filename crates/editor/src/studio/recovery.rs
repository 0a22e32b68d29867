//! Recovery files: the unsaved text of a dirty document, kept outside the document's folder so a
//! crash of the engine or the app does not take it along.
//!
//! For a document at `path` the store keeps two files in its directory (by default
//! `$XDG_STATE_HOME/switchyard/recovery`), named by a hash of the absolute path:
//! `<key>.yaml` (the text, exactly) and `<key>.json` ([`Meta`]: the document's path, when the text
//! was written, hashes of the text and of the file on disk the edits were made on). Both are
//! written atomically and readable by the user only. The text is written first, so a crash
//! between the two writes leaves the newest text with an older meta: it is still offered, with a
//! warning that its origin could not be verified. Nothing here knows when to write: the front end
//! calls [`RecoveryStore::write`] (debounced) while the document is dirty and
//! [`RecoveryStore::discard`] once it is saved, reverted or closed.

use super::SaveError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A recovery file bigger than this is ignored (left on disk, never loaded).
const MAX_RECOVERY_BYTES: u64 = 4 * model::doc::MAX_FILE_BYTES;

/// What a front end hands to [`RecoveryStore::write`]: see `Session::recovery_snapshot`.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub path: PathBuf,
    pub text: String,
    /// SHA-256 (hex) of the file on disk the unsaved edits were made on; `None` when unknown
    /// (the file is missing, or changed on disk since the session last read it).
    pub base_sha256: Option<String>,
}

/// The JSON written beside the text.
#[derive(Serialize, Deserialize)]
struct Meta {
    version: u32,
    path: String,
    saved_at_ms: u64,
    text_sha256: String,
    base_sha256: Option<String>,
}

/// Unsaved text found for a document.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
pub struct Recovered {
    /// The document the text belongs to.
    pub path: PathBuf,
    pub text: String,
    /// When the text was written (milliseconds since the Unix epoch).
    pub saved_at_ms: u64,
    /// The file on disk is not (or not provably) the version the edits were made on: restoring
    /// replaces changes made since by someone else. The UI shows `warning`.
    pub disk_changed: bool,
    pub warning: Option<String>,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Where recovery files live.
pub struct RecoveryStore {
    dir: PathBuf,
}

impl RecoveryStore {
    pub fn new(dir: impl Into<PathBuf>) -> RecoveryStore {
        RecoveryStore { dir: dir.into() }
    }

    /// `$SWITCHYARD_RECOVERY_DIR`, else `$XDG_STATE_HOME/switchyard/recovery`, else the
    /// platform's per-user state folder (`~/.local/state/switchyard/recovery` on Linux,
    /// `~/Library/Application Support/switchyard/recovery` on macOS, `%LOCALAPPDATA%` on
    /// Windows). `None` when none is known (no home directory).
    pub fn default_dir() -> Option<PathBuf> {
        Self::dir_from_env(|k| std::env::var_os(k))
    }

    /// [`RecoveryStore::default_dir`] with the environment read through `var`.
    pub fn dir_from_env(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
        let env = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(d) = env("SWITCHYARD_RECOVERY_DIR") {
            return Some(d);
        }
        if let Some(d) = env("XDG_STATE_HOME").filter(|d| d.is_absolute()) {
            return Some(d.join("switchyard").join("recovery"));
        }
        if cfg!(windows) {
            return env("LOCALAPPDATA").map(|d| d.join("switchyard").join("recovery"));
        }
        let home = env("HOME")?;
        if cfg!(target_os = "macos") {
            return Some(home.join("Library/Application Support/switchyard/recovery"));
        }
        Some(home.join(".local/state/switchyard/recovery"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file name stem for a document: the first 128 bits of SHA-256 of its path.
    fn key(doc: &Path) -> String {
        let abs = std::path::absolute(doc).unwrap_or_else(|_| doc.to_path_buf());
        sha256_hex(abs.as_os_str().as_encoded_bytes())[..32].to_string()
    }

    /// The recovery text file of `doc`.
    pub fn text_path(&self, doc: &Path) -> PathBuf {
        self.dir.join(format!("{}.yaml", Self::key(doc)))
    }

    /// The recovery meta file of `doc`.
    pub fn meta_path(&self, doc: &Path) -> PathBuf {
        self.dir.join(format!("{}.json", Self::key(doc)))
    }

    /// Writes `snap`'s text and meta atomically (text first), private to the user.
    pub fn write(&self, snap: &Snapshot) -> Result<(), SaveError> {
        let io = |e: std::io::Error| SaveError::Io {
            path: self.dir.clone(),
            message: e.to_string(),
        };
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&self.dir).map_err(io)?;
        super::disk::write_atomic_mode(
            &self.text_path(&snap.path),
            snap.text.as_bytes(),
            Some(0o600),
        )?;
        let meta = Meta {
            version: 1,
            path: snap.path.to_string_lossy().into_owned(),
            saved_at_ms: now_ms(),
            text_sha256: sha256_hex(snap.text.as_bytes()),
            base_sha256: snap.base_sha256.clone(),
        };
        let mut json = serde_json::to_string_pretty(&meta).unwrap_or_default();
        json.push('\n');
        super::disk::write_atomic_mode(&self.meta_path(&snap.path), json.as_bytes(), Some(0o600))
    }

    /// Removes `doc`'s recovery files (missing ones are fine).
    pub fn discard(&self, doc: &Path) -> Result<(), String> {
        for p in [self.text_path(doc), self.meta_path(doc)] {
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(format!(
                        "could not remove the recovery file {}: {e}",
                        p.display()
                    ));
                }
            }
        }
        super::disk::remove_stale_temps(&self.text_path(doc));
        super::disk::remove_stale_temps(&self.meta_path(doc));
        Ok(())
    }

    /// Unsaved text kept for `doc`, given the file's current content on disk (`None`: missing).
    /// Text equal to the disk content was saved after all: its files are removed and nothing is
    /// offered. A recovery whose disk version changed since is still offered, with a warning.
    pub fn find(&self, doc: &Path, disk_text: Option<&str>) -> Option<Recovered> {
        let text_path = self.text_path(doc);
        let meta_path = self.meta_path(doc);
        super::disk::remove_stale_temps(&text_path);
        super::disk::remove_stale_temps(&meta_path);
        let file_meta = std::fs::metadata(&text_path).ok()?;
        if file_meta.len() > MAX_RECOVERY_BYTES {
            tracing::warn!(
                "ignoring the recovery file {}: {} bytes",
                text_path.display(),
                file_meta.len()
            );
            return None;
        }
        let bytes = std::fs::read(&text_path).ok()?;
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let meta = std::fs::read(&meta_path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Meta>(&b).ok());
        let doc_str = doc.to_string_lossy();
        if let Some(m) = &meta {
            if m.path != doc_str
                && Path::new(&m.path)
                    != std::path::absolute(doc).unwrap_or_else(|_| doc.to_path_buf())
            {
                // Another document's recovery under the same key: not ours to offer or remove.
                return None;
            }
        }
        if disk_text == Some(text.as_str()) {
            let _ = self.discard(doc);
            return None;
        }
        let text_sha = sha256_hex(text.as_bytes());
        let verified = meta.as_ref().filter(|m| m.text_sha256 == text_sha);
        let saved_at_ms = match verified {
            Some(m) => m.saved_at_ms,
            None => file_meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        };
        let (disk_changed, warning) = match (verified, disk_text) {
            (_, None) => (true, Some("the file no longer exists on disk; restoring and saving writes it again".to_string())),
            (None, Some(_)) => (
                true,
                Some("it could not be verified which version of the file these changes were made on; check them before saving".to_string()),
            ),
            (Some(m), Some(d)) => {
                if m.base_sha256.as_deref() == Some(sha256_hex(d.as_bytes()).as_str()) {
                    (false, None)
                } else {
                    (
                        true,
                        Some("the file changed on disk after these changes were made; restoring replaces the version on disk when you save".to_string()),
                    )
                }
            }
        };
        Some(Recovered {
            path: doc.to_path_buf(),
            text,
            saved_at_ms,
            disk_changed,
            warning,
        })
    }
}
