//! Per-folder trust in the app (README "Trust and safety"): the open document's folder trusted or
//! not (restricted mode), its run manifest, and the gate in front of every run.
//!
//! - `trust_status`: the open document's project root, whether a trusted folder covers it, its
//!   run manifest (of the text in the editor, unsaved edits included) and whether the user has
//!   confirmed that manifest (by hash) since it last changed.
//! - `trust_folder` / `trust_forget`: trust the project root / take the trust back.
//! - `trust_confirm_manifest`: remember that the user confirmed the manifest with this hash
//!   (refused when the document's manifest is no longer that one).
//! - [`require_trust`]: called first by `run_start` and `run_resume`; refuses with a `CmdError`
//!   whose `code` is `untrusted` (the folder is not trusted) or `manifest` (the manifest has not
//!   been confirmed since it changed), so the UI can tell a refusal from a failure.
//!
//! The trust list itself (and the confirmed hashes) belong to `launch::trust`, shared with the CLI.

use crate::commands::CmdError;
use serde::Serialize;
use std::path::Path;
use switchyard::doc::{Document, load_path, load_str};
use switchyard::run::launch::manifest::{self, Item, Manifest};
use switchyard::run::launch::trust;
use tauri::AppHandle;
use ts_rs::TS;

type Res<T> = Result<T, CmdError>;

/// `CmdError.code` of a run refused because the folder is not trusted.
pub const UNTRUSTED: &str = "untrusted";
/// `CmdError.code` of a run refused because its manifest is not confirmed.
pub const MANIFEST: &str = "manifest";

/// One thing the run manifest lists.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ManifestItem {
    /// What kind of thing (`script`, `python import`, `MCP command`, `LLM provider`, ...).
    kind: String,
    /// The thing itself: a command line, a host, a path, a variable name.
    what: String,
    /// More about it (the interpreter, the working folder, the URL a host comes from).
    detail: Option<String>,
    /// The agent file that names it (a sub-agent's file for what a sub-agent runs).
    file: String,
    /// 1-based; 0 when unknown.
    line: u32,
    column: u32,
}

/// What running the open document would do (`launch::manifest`).
#[derive(Debug, Clone, Serialize, TS)]
pub struct RunManifest {
    /// The agent file.
    document: String,
    /// Its project root (the folder trust is about).
    root: String,
    executes: Vec<ManifestItem>,
    /// Hosts it would contact.
    hosts: Vec<ManifestItem>,
    /// Files it reads outside the project root.
    outside_files: Vec<ManifestItem>,
    /// Environment variables it references.
    env_vars: Vec<ManifestItem>,
    /// Of what executes, the hosts, the outside files and the variable names (not positions).
    hash: String,
    /// Nothing executes, is contacted or is read outside the project root.
    inert: bool,
}

/// `trust_status`: the open document's trust.
#[derive(Debug, Clone, Serialize, TS)]
pub struct TrustStatus {
    /// The open document.
    path: String,
    /// Its project root: the nearest folder holding `.git`, else the agent's folder.
    root: String,
    /// A trusted folder covers the root; false = restricted mode.
    trusted: bool,
    /// The trusted folder that covers it (the root or a folder above it).
    trusted_by: Option<String>,
    manifest: RunManifest,
    /// The user confirmed this manifest (its hash) for this file.
    confirmed: bool,
    /// The trust list could not be read (damaged or unreadable): nothing is trusted meanwhile.
    error: Option<String>,
}

fn item(i: &Item) -> ManifestItem {
    ManifestItem {
        kind: i.kind.clone(),
        what: i.what.clone(),
        detail: i.detail.clone(),
        file: i.at.file.display().to_string(),
        line: i.at.line,
        column: i.at.column,
    }
}

fn run_manifest(m: &Manifest) -> RunManifest {
    let items = |v: &[Item]| v.iter().map(item).collect();
    RunManifest {
        document: m.document.display().to_string(),
        root: m.root.display().to_string(),
        executes: items(&m.executes),
        hosts: items(&m.hosts),
        outside_files: items(&m.outside_files),
        env_vars: items(&m.env_vars),
        hash: m.hash.clone(),
        inert: m.is_inert(),
    }
}

/// The trust of `path` with its document `doc`.
pub fn status_of(path: &Path, doc: &Document) -> TrustStatus {
    let m = manifest::manifest(doc);
    let (trusted_by, error) = match trust::trusted_folder(path) {
        Ok(t) => (t, None),
        Err(e) => (None, Some(e)),
    };
    let confirmed = trust::confirmed_manifest(path).ok().flatten().is_some_and(|h| h == m.hash);
    TrustStatus {
        path: path.display().to_string(),
        root: m.root.display().to_string(),
        trusted: trusted_by.is_some(),
        trusted_by: trusted_by.map(|f| f.display().to_string()),
        manifest: run_manifest(&m),
        confirmed,
        error,
    }
}

/// The refusal (if any) for a run of `m`'s document: `trusted_by` is the trusted folder covering
/// it, `confirmed` the manifest hash last confirmed for the file.
fn refusal(m: &Manifest, trusted_by: Option<&Path>, confirmed: Option<&str>, list_error: Option<&str>) -> Option<CmdError> {
    if trusted_by.is_none() {
        let mut msg = format!(
            "Running is blocked: the folder {} is not trusted (restricted mode). Opening, validating, editing, saving and \
             viewing work; running, stepping and resuming need trust. Review what would run with “What would run?” and \
             trust the folder with “Trust folder…” in the banner (or `switchyard trust {}`).",
            m.root.display(),
            m.root.display()
        );
        if let Some(e) = list_error {
            msg.push_str(&format!(" The trust list cannot be read: {e}"));
        }
        return Some(CmdError::coded(UNTRUSTED, msg));
    }
    if confirmed != Some(m.hash.as_str()) {
        let why = if confirmed.is_none() { "has not been confirmed yet" } else { "changed since it was last confirmed" };
        return Some(CmdError::coded(
            MANIFEST,
            format!(
                "Confirm the run manifest first: what running {} would execute and contact {why}.",
                m.document.display()
            ),
        ));
    }
    None
}

/// The gate in front of every run (start, resume): refuses with code `untrusted` in an untrusted
/// folder and with code `manifest` when the run manifest was not confirmed since it changed.
pub fn require_trust(path: &Path, doc: &Document) -> Res<()> {
    let m = manifest::manifest(doc);
    let (trusted_by, list_error) = match trust::trusted_folder(path) {
        Ok(t) => (t, None),
        Err(e) => (None, Some(e)),
    };
    let confirmed = trust::confirmed_manifest(path).ok().flatten();
    match refusal(&m, trusted_by.as_deref(), confirmed.as_deref(), list_error.as_deref()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The gate for resuming the durable run `id` of `db`: its agent file as it is on disk (what a
/// resume reads). A run the store does not know is left to the resume to report.
pub fn require_trust_of_run(db: &Path, id: &str) -> Res<()> {
    use switchyard::run::store::RunStore;
    let Ok(Some(rec)) = RunStore::open(db).and_then(|s| s.get(id)) else { return Ok(()) };
    let path = Path::new(&rec.file);
    require_trust(path, &load_path(path))
}

/// The open document's path and its document as the editor holds it.
fn open_document(app: &AppHandle) -> Res<(std::path::PathBuf, Document)> {
    let (path, text) = crate::commands::with_session(app, "reading the folder's trust", |s| {
        Ok((s.path().to_path_buf(), s.text().to_string()))
    })?;
    let doc = load_str(&path, &text);
    Ok((path, doc))
}

/// The folder's trust changed: the open document is parsed again (whether its `${VAR}`s read
/// the environment depends on it), so the next view shows the difference.
fn reparse(app: &AppHandle) -> Res<()> {
    crate::commands::with_session(app, "parsing the document again", |s| {
        s.reparse();
        Ok(())
    })
}

#[tauri::command]
pub async fn trust_status(app: AppHandle) -> Res<TrustStatus> {
    let (path, doc) = open_document(&app)?;
    Ok(status_of(&path, &doc))
}

/// Trust the open document's project root.
#[tauri::command]
pub async fn trust_folder(app: AppHandle) -> Res<TrustStatus> {
    let (path, _) = open_document(&app)?;
    trust::trust(&path).map_err(CmdError::new)?;
    reparse(&app)?;
    let (path, doc) = open_document(&app)?;
    Ok(status_of(&path, &doc))
}

/// Stop trusting the open document's folder (the trusted folder that covers it, and everything
/// trusted under that).
#[tauri::command]
pub async fn trust_forget(app: AppHandle) -> Res<TrustStatus> {
    let (path, doc) = open_document(&app)?;
    let folder = trust::trusted_folder(&path).map_err(CmdError::new)?.unwrap_or_else(|| trust::project_root(&path));
    trust::untrust(&folder).map_err(CmdError::new)?;
    let _ = doc;
    reparse(&app)?;
    let (path, doc) = open_document(&app)?;
    Ok(status_of(&path, &doc))
}

/// The user confirmed the run manifest with `hash` for the open document.
#[tauri::command]
pub async fn trust_confirm_manifest(app: AppHandle, hash: String) -> Res<TrustStatus> {
    let (path, doc) = open_document(&app)?;
    let m = manifest::manifest(&doc);
    if m.hash != hash {
        return Err(CmdError::coded(
            MANIFEST,
            "the run manifest changed while it was shown (the file was edited): look at it again before confirming",
        ));
    }
    trust::confirm_manifest(&path, &hash).map_err(CmdError::new)?;
    Ok(status_of(&path, &doc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn manifest_of(text: &str) -> Manifest {
        let doc = load_str(Path::new("/nowhere/project/agents/a/graph.yaml"), text);
        manifest::manifest(&doc)
    }

    const LOKI: &str = "version: \"1.0\"\nname: a\nentry: lint\nnodes:\n  lint:\n    type: script\n    script: lint.sh\n    next: done\n  done:\n    type: end\n";

    #[test]
    fn an_untrusted_folder_is_refused_with_its_code_and_the_folder_named() {
        let m = manifest_of(LOKI);
        let e = refusal(&m, None, None, None).expect("refused");
        assert_eq!(e.code, Some(UNTRUSTED));
        assert!(e.message.contains("not trusted") && e.message.contains(&m.root.display().to_string()), "{}", e.message);
        let e = refusal(&m, None, Some(&m.hash), Some("trust.json: damaged")).expect("refused");
        assert!(e.message.contains("damaged"), "{}", e.message);
    }

    #[test]
    fn a_trusted_folder_needs_the_current_manifest_confirmed() {
        let m = manifest_of(LOKI);
        let root = PathBuf::from("/nowhere");
        let e = refusal(&m, Some(&root), None, None).expect("first run");
        assert_eq!(e.code, Some(MANIFEST));
        assert!(e.message.contains("not been confirmed"), "{}", e.message);
        let e = refusal(&m, Some(&root), Some("an older hash"), None).expect("changed");
        assert!(e.message.contains("changed since"), "{}", e.message);
        assert!(refusal(&m, Some(&root), Some(&m.hash), None).is_none());
        // Another script changes the hash.
        let other = manifest_of(&LOKI.replace("lint.sh", "other.sh"));
        assert_ne!(other.hash, m.hash);
        assert!(refusal(&other, Some(&root), Some(&m.hash), None).is_some());
    }

    #[test]
    fn the_manifest_the_ui_gets_lists_the_script_with_its_place() {
        let m = run_manifest(&manifest_of(LOKI));
        let s = m.executes.iter().find(|i| i.what.contains("lint.sh")).expect("the script is listed");
        assert!(s.line > 0, "{s:?}");
        assert!(!m.inert);
        let json = serde_json::to_value(&m).unwrap();
        for k in ["document", "root", "executes", "hosts", "outside_files", "env_vars", "hash", "inert"] {
            assert!(json.get(k).is_some(), "{k} in {json}");
        }
    }

    mod contract {
        use switchyard::studio::contract::{check_or_update, config, declaration, file, ui_contract_path};

        const COMMAND: &str = "cargo test --workspace --features switchyard-app/custom-protocol --bin switchyard-app contract";

        fn trust_ts() -> String {
            let c = &config();
            let decls = vec![
                declaration::<super::super::TrustStatus>(c),
                declaration::<super::super::RunManifest>(c),
                declaration::<super::super::ManifestItem>(c),
            ];
            file("src-tauri (trust)", COMMAND, &[], &decls)
        }

        #[test]
        fn checked_in_trust_ts_is_what_the_trust_types_generate() {
            let path = ui_contract_path(env!("CARGO_MANIFEST_DIR"), "trust.ts");
            if let Err(e) = check_or_update(&path, &trust_ts(), COMMAND) {
                panic!("{e}");
            }
        }
    }
}
