//! Which paths the webview may name (issue 27 item 8): a command that takes a path from the
//! webview (`open_path`, `nested_view`, `open_trace`, `trace_state_at`, the replies, cassette and
//! recording paths of `run_start`, `record_check`, `record_gitignore`) reads or writes it only
//! when it is
//!
//! - inside the open document's project root (`launch::trust::project_root`: the nearest folder
//!   holding `.git`, else the agent's folder);
//! - or a path the user gave the app outside the webview: chosen in a native file dialog, dropped
//!   on the window, given on the command line (or `SWITCHYARD_OPEN`), or a nested agent file a run
//!   of this window named ([`Grants`]);
//! - or in the recent-files list the app itself keeps;
//! - or inside the app's own runs folder (the traces it writes).
//!
//! Anything else is refused with a `CmdError` whose `code` is [`PATH_NOT_ALLOWED`] before anything
//! is read or written. Paths are judged after symbolic links are resolved, so a link inside the
//! project that points elsewhere is judged by where it points.

use crate::commands::CmdError;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tauri::{AppHandle, Manager};

/// `CmdError.code` of a path the webview may not name.
pub const PATH_NOT_ALLOWED: &str = "path_not_allowed";

/// How many paths given outside the webview are remembered (oldest forgotten first).
const GRANTS_MAX: usize = 256;

/// Paths the user gave the app outside the webview (dialogs, drops, the command line) and
/// nested agent files runs named, canonical. A folder covers what is inside it.
#[derive(Default)]
pub struct Grants {
    paths: Mutex<Vec<PathBuf>>,
}

impl Grants {
    pub fn grant(&self, path: &Path) {
        let Some(p) = resolved(path) else { return };
        let mut paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        paths.retain(|x| *x != p);
        paths.push(p);
        let over = paths.len().saturating_sub(GRANTS_MAX);
        paths.drain(..over);
    }
    fn list(&self) -> Vec<PathBuf> {
        self.paths.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What the webview may name, at one moment.
#[derive(Debug, Default, Clone)]
pub struct Allowed {
    /// The open document's project root (None with no document open).
    pub root: Option<PathBuf>,
    /// Given outside the webview (dialogs, drops, the command line, nested agents of runs).
    pub granted: Vec<PathBuf>,
    /// The recent-files list the app keeps.
    pub recent: Vec<PathBuf>,
    /// The app's own folders (where run traces go).
    pub app_dirs: Vec<PathBuf>,
}

/// `path` made absolute (`~/` expanded) with the symbolic links of the part that exists
/// resolved; the rest (a file about to be written, in folders to be made) appended as it is.
/// None when the part that does not exist names `..` or `.`: it cannot be judged.
pub fn resolved(path: &Path) -> Option<PathBuf> {
    let p = match path.to_str().and_then(|s| s.strip_prefix("~/")) {
        Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
        None => path.to_path_buf(),
    };
    switchyard::run::launch::worktree::resolved(&p)
}

/// The rule, over what is allowed now: `Ok(the resolved path)`, or why not. `what` says what
/// the path was for ("open", "read the trace", "record the cassette").
pub fn judge(path: &Path, allowed: &Allowed, what: &str) -> Result<PathBuf, CmdError> {
    let refuse = |why: String| {
        let within = match &allowed.root {
            Some(r) => format!("inside the open project ({})", r.display()),
            None => "inside the open project (none is open)".to_string(),
        };
        CmdError::coded(
            PATH_NOT_ALLOWED,
            format!(
                "refused to {what} {}: {why}. The app only reads and writes files {within}, files you chose in a file \
                 dialog or dropped on the window, recent files and paths given on its command line; choose it with Open… instead",
                path.display()
            ),
        )
    };
    let Some(p) = resolved(path) else {
        return Err(refuse("the path cannot be resolved (a `..` after a folder that does not exist)".into()));
    };
    let under = |dir: &Path| p.starts_with(dir);
    let ok = allowed.root.as_deref().is_some_and(under)
        || allowed.granted.iter().any(|g| under(g))
        || allowed.recent.contains(&p)
        || allowed.app_dirs.iter().any(|d| under(d));
    if ok {
        Ok(p)
    } else if p != path {
        Err(refuse(format!("it is {}, outside what the app may touch", p.display())))
    } else {
        Err(refuse("it is outside what the app may touch".into()))
    }
}

/// What is allowed now in the running app.
pub fn allowed(app: &AppHandle) -> Allowed {
    let root = {
        let state = app.state::<crate::AppState>();
        let guard = state.lock_session();
        guard.as_ref().map(|s| switchyard::run::launch::trust::project_root(s.path()))
    };
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    Allowed {
        root: root.as_deref().and_then(canon),
        granted: app.state::<Grants>().list(),
        recent: app.state::<crate::recent::Recent>().list().iter().filter_map(|r| canon(Path::new(r))).collect(),
        app_dirs: crate::debug::runs_dir(app).as_deref().and_then(canon).into_iter().collect(),
    }
}

/// [`judge`] in the running app.
pub fn check(app: &AppHandle, path: &Path, what: &str) -> Result<PathBuf, CmdError> {
    judge(path, &allowed(app), what)
}

/// Remember a path the user gave outside the webview.
pub fn grant(app: &AppHandle, path: &Path) {
    app.state::<Grants>().grant(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scratch(PathBuf);
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn scratch(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("switchyard-paths-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(std::fs::canonicalize(&d).unwrap())
    }

    fn project(s: &Scratch) -> (PathBuf, Allowed) {
        let root = s.0.join("project");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("agents/a")).unwrap();
        std::fs::write(root.join("agents/a/agent.yaml"), "manifest_version: 1\n").unwrap();
        let root_of = switchyard::run::launch::trust::project_root(&root.join("agents/a/agent.yaml"));
        assert_eq!(root_of, root);
        (root.clone(), Allowed { root: Some(root), ..Allowed::default() })
    }

    fn refused(r: Result<PathBuf, CmdError>) -> CmdError {
        let e = r.expect_err("refused");
        assert_eq!(e.code, Some(PATH_NOT_ALLOWED));
        e
    }

    #[test]
    fn inside_the_project_root_is_allowed_outside_is_refused_with_the_path_named() {
        let s = scratch("root");
        let (root, allowed) = project(&s);
        let inside = root.join("agents/a/agent.yaml");
        assert_eq!(judge(&inside, &allowed, "open").unwrap(), inside);
        // A file that does not exist yet (a recording), in folders that do not either.
        let rec = root.join("agents/a/new/dir/x.cassette.json");
        assert_eq!(judge(&rec, &allowed, "record").unwrap(), rec);
        let e = refused(judge(Path::new("/etc/passwd"), &allowed, "open"));
        assert!(e.message.contains("/etc/passwd") && e.message.contains(&root.display().to_string()), "{}", e.message);
        std::fs::write(s.0.join("elsewhere.yaml"), "a: 1\n").unwrap();
        refused(judge(&s.0.join("elsewhere.yaml"), &allowed, "open"));
        // `..` out of the project is judged by where it leads.
        refused(judge(&root.join("agents/../../elsewhere.yaml"), &allowed, "open"));
        refused(judge(&root.join("agents/missing/../../../elsewhere.yaml"), &allowed, "open"));
        // No document open: no project.
        refused(judge(&inside, &Allowed::default(), "open"));
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_judged_by_where_it_points() {
        let s = scratch("link");
        let (root, allowed) = project(&s);
        std::fs::write(s.0.join("secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(s.0.join("secret.txt"), root.join("innocent.yaml")).unwrap();
        let e = refused(judge(&root.join("innocent.yaml"), &allowed, "open"));
        assert!(e.message.contains("secret.txt"), "{}", e.message);
        std::os::unix::fs::symlink(&s.0, root.join("out")).unwrap();
        refused(judge(&root.join("out/new.cassette.json"), &allowed, "record"));
    }

    #[test]
    fn dialog_grants_recent_files_and_the_runs_folder_are_allowed() {
        let s = scratch("grants");
        let (_, mut allowed) = project(&s);
        let picked = s.0.join("picked.yaml");
        let recent = s.0.join("recent.yaml");
        let other = s.0.join("other.yaml");
        for f in [&picked, &recent, &other] {
            std::fs::write(f, "a: 1\n").unwrap();
        }
        let runs = s.0.join("runs");
        std::fs::create_dir_all(&runs).unwrap();
        let g = Grants::default();
        g.grant(&picked);
        allowed.granted = g.list();
        allowed.recent = vec![recent.clone()];
        allowed.app_dirs = vec![runs.clone()];
        assert!(judge(&picked, &allowed, "open").is_ok());
        assert!(judge(&recent, &allowed, "open").is_ok());
        assert!(judge(&runs.join("loop-r1.jsonl"), &allowed, "read the trace").is_ok());
        // A granted file covers itself only; a recent file too.
        refused(judge(&other, &allowed, "open"));
        // A granted folder (an agent folder on the command line) covers what is inside it.
        let folder = s.0.join("agent-dir");
        std::fs::create_dir_all(&folder).unwrap();
        g.grant(&folder);
        allowed.granted = g.list();
        assert!(judge(&folder.join("graph.yaml"), &allowed, "open").is_ok());
    }

    #[test]
    fn grants_are_capped_oldest_first() {
        let g = Grants::default();
        for i in 0..GRANTS_MAX + 5 {
            g.grant(&std::env::temp_dir().join(format!("g{i}.yaml")));
        }
        let l = g.list();
        assert_eq!(l.len(), GRANTS_MAX);
        assert!(l.last().unwrap().ends_with(format!("g{}.yaml", GRANTS_MAX + 4)));
        assert!(!l.iter().any(|p| p.ends_with("g0.yaml")));
    }
}
