//! Coyote bundles in the app (docs/app-contract.md §3, "Bundles"): a folder laid out as
//! `agents/<name>/{graph.yaml|config.yaml, …}` (optionally `coyote-bundle.yaml`) opens as a
//! project. Opening it remembers it as the window's open bundle and grants its folder (so the
//! webview may name any agent inside it, `paths.rs`); the UI lists its agents
//! ([`BundleView`]) and opens the one the user picks with `open_path`.
//!
//! `open_path` on a bundle folder (a drop, a recent entry) refuses with the code [`BUNDLE`], so
//! the UI opens it with `bundle_open` instead; `open_folder_dialog` picks a folder natively and
//! opens it as a bundle or as an agent folder.

use crate::commands::CmdError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use switchyard::diag::Diagnostic;
use switchyard::doc::bundle::{self, Bundle};
use switchyard::studio::View;
use tauri::{AppHandle, Manager};
use ts_rs::TS;

/// `CmdError.code` of `open_path` given a bundle folder: open it with `bundle_open`.
pub const BUNDLE: &str = "bundle";

/// The window's open bundle (its folder, canonical), if any.
#[derive(Default)]
pub struct OpenBundle(Mutex<Option<PathBuf>>);

impl OpenBundle {
    fn get(&self) -> Option<PathBuf> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn set(&self, root: Option<PathBuf>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = root;
    }
}

/// A bundle as the UI lists it.
#[derive(Debug, Serialize, TS)]
pub struct BundleView {
    /// The bundle's folder (absolute).
    pub root: String,
    /// The manifest's `name`, else the folder's name.
    pub name: String,
    /// `coyote-bundle.yaml`'s path when the bundle has one.
    pub manifest: Option<String>,
    pub version: Option<String>,
    pub description: Option<String>,
    pub homepage: Option<String>,
    /// Its agents, in name order.
    pub agents: Vec<BundleAgentView>,
    /// What is wrong with the manifest or the layout (agent folders that are not agents).
    pub diagnostics: Vec<Diagnostic>,
}

/// One agent of a bundle.
#[derive(Debug, Serialize, TS)]
pub struct BundleAgentView {
    /// Its folder's name under `agents/`.
    pub name: String,
    /// `graph` (a graph agent, drawn) or `config` (an LLM-loop agent that agent nodes spawn).
    #[ts(type = r#""graph" | "config""#)]
    pub kind: &'static str,
    /// Its agent file (absolute): what `open_path` opens.
    pub file: String,
    /// The file's top-level `description`.
    pub description: Option<String>,
    /// It has a `scripts/` folder.
    pub scripts: bool,
    /// Its agent-local tool file, if any.
    pub tools: Option<String>,
}

impl BundleView {
    pub fn of(b: &Bundle) -> BundleView {
        let m = b.manifest.as_ref();
        let text = |f: Option<&bundle::ManifestField>| f.map(|f| f.value.clone());
        BundleView {
            root: b.root.display().to_string(),
            name: b.name(),
            manifest: m.map(|m| m.file.path().display().to_string()),
            version: text(m.and_then(|m| m.version.as_ref())),
            description: text(m.and_then(|m| m.description.as_ref())),
            homepage: text(m.and_then(|m| m.homepage.as_ref())),
            agents: b
                .agents
                .iter()
                .map(|a| BundleAgentView {
                    name: a.name.clone(),
                    kind: a.kind.as_str(),
                    file: a.file.display().to_string(),
                    description: a.description.clone(),
                    scripts: a.scripts,
                    tools: a.tools.as_ref().map(|t| t.display().to_string()),
                })
                .collect(),
            diagnostics: b.diagnostics.clone(),
        }
    }
}

/// The refusal of `open_path` for a bundle folder.
pub fn refuse_open(path: &Path) -> CmdError {
    CmdError::coded(
        BUNDLE,
        format!("{} is a coyote bundle (agents/<name>/…): open it as a bundle and choose one of its agents", path.display()),
    )
}

/// Open the bundle at `root` (already judged or given by the user): remember it, grant its
/// folder, add it to the recent list. None when it is not a bundle.
pub fn open(app: &AppHandle, root: &Path) -> Option<BundleView> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let b = bundle::discover(&root)?;
    crate::paths::grant(app, &root);
    app.state::<OpenBundle>().set(Some(root.clone()));
    app.state::<crate::recent::Recent>().push(&root);
    Some(BundleView::of(&b))
}

/// Open a bundle folder the webview names (a drop, a recent entry, a path typed in a test).
#[tauri::command]
pub async fn bundle_open(app: AppHandle, path: String) -> Result<BundleView, CmdError> {
    let p = crate::paths::check(&app, Path::new(&path), "open the bundle")?;
    open(&app, &p).ok_or_else(|| {
        CmdError::new(format!(
            "{} is not a coyote bundle: it has no agents/<name>/graph.yaml (or config.yaml) and no coyote-bundle.yaml",
            p.display()
        ))
    })
}

/// The open bundle, read again (agents added or removed since show), or null.
#[tauri::command]
pub async fn bundle_current(app: AppHandle) -> Result<Option<BundleView>, CmdError> {
    let Some(root) = app.state::<OpenBundle>().get() else { return Ok(None) };
    match bundle::discover(&root) {
        Some(b) => Ok(Some(BundleView::of(&b))),
        None => {
            app.state::<OpenBundle>().set(None);
            Ok(None)
        }
    }
}

/// Forget the open bundle (the agent list closes; an open document stays open).
#[tauri::command]
pub async fn bundle_close(app: AppHandle) -> Result<(), CmdError> {
    app.state::<OpenBundle>().set(None);
    Ok(())
}

/// What `open_folder_dialog` opened: a bundle (listed) or an agent folder (its view).
#[derive(Debug, Serialize, TS)]
pub struct FolderOpened {
    pub bundle: Option<BundleView>,
    pub view: Option<View>,
}

/// Choose a folder in a native dialog: a bundle opens as a bundle, an agent folder as that
/// agent. Null when the user cancels.
#[tauri::command]
pub async fn open_folder_dialog(app: AppHandle, discard: Option<bool>) -> Result<Option<FolderOpened>, CmdError> {
    let start = {
        let state = app.state::<crate::AppState>();
        let guard = state.lock_session();
        guard.as_ref().and_then(|s| s.path().parent().map(Path::to_path_buf))
    };
    let mut dialog = rfd::AsyncFileDialog::new().set_title("Open an agent folder or a coyote bundle");
    if let Some(dir) = start.or_else(|| std::env::current_dir().ok()) {
        dialog = dialog.set_directory(dir);
    }
    let Some(folder) = dialog.pick_folder().await else { return Ok(None) };
    // Chosen by the user in a native dialog: the webview may name it from now on.
    crate::paths::grant(&app, folder.path());
    if let Some(b) = open(&app, folder.path()) {
        return Ok(Some(FolderOpened { bundle: Some(b), view: None }));
    }
    if !discard.unwrap_or(false) {
        crate::commands::refuse_if_dirty(&app)?;
    }
    crate::commands::open(&app, folder.path()).map(|v| Some(FolderOpened { bundle: None, view: Some(v) }))
}

/// At start, a bundle given on the command line opens as the open bundle (no document).
pub fn open_at_start(app: &AppHandle, path: &Path) -> bool {
    bundle::is_bundle(path) && open(app, path).is_some()
}
