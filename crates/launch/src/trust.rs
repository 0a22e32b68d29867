//! Per-folder trust, as VS Code's Workspace Trust: running what an agent file names (scripts,
//! tools, MCP commands, Python imports, hooks) needs the user's trust of the folder it lives in.
//! Opening, validating, drawing and editing need none.
//!
//! The trust key is the **project root** of a file: the nearest ancestor folder holding `.git`,
//! else the agent's own folder ([`project_root`]). Trusting a folder trusts everything under it.
//! The list lives in the user's config folder (`$SWITCHYARD_TRUST`, else
//! `$XDG_CONFIG_HOME/switchyard/trust.json`, else `~/.config/switchyard/trust.json`), written
//! atomically (an exclusive random temp name, then a rename) and readable by the user only. The
//! same file remembers, per agent file, the hash of the last run manifest the user confirmed, so
//! a front end shows the manifest again when what would run changes.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The trust file's content.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrustFile {
    /// Trusted folders (canonical paths).
    #[serde(default)]
    pub folders: Vec<PathBuf>,
    /// Per agent file (canonical path): the hash of the last run manifest the user confirmed.
    #[serde(default)]
    pub confirmed: BTreeMap<PathBuf, String>,
}

/// Where the trust list is kept.
pub fn trust_file_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SWITCHYARD_TRUST").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("switchyard").join("trust.json"))
}

/// The project root of `path` (a file or a folder): the nearest folder at or above it holding
/// `.git`; else, for a Loki agent laid out as a bundle (`<bundle>/agents/<name>/graph.yaml`, the
/// layout whose agent nodes name their sibling agents), the bundle folder; else the folder
/// itself (a file's folder). Canonical when the path exists.
pub fn project_root(path: &Path) -> PathBuf {
    model::doc::project_root(path)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The trust list at `file` (missing: empty; unreadable or malformed: an error naming the file,
/// so a damaged list never silently trusts or forgets anything).
pub fn load(file: &Path) -> Result<TrustFile, String> {
    match std::fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => Ok(TrustFile::default()),
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            format!("{}: not a Switchyard trust list ({e}); fix or delete the file", file.display())
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
        Err(e) => Err(format!("cannot read {}: {e}", file.display())),
    }
}

/// Write the trust list to `file`: an exclusive random temp name beside it (mode 0600), then a
/// rename, so a crash leaves the old list or the new one.
pub fn save(file: &Path, list: &TrustFile) -> Result<(), String> {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".trust-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    let text = serde_json::to_string_pretty(list).map_err(|e| e.to_string())?;
    tmp.write_all(text.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    tmp.persist(file).map_err(|e| format!("cannot replace {}: {}", file.display(), e.error))?;
    Ok(())
}

impl TrustFile {
    /// The trusted folder that covers `root` (itself or an ancestor), if any.
    pub fn covering(&self, root: &Path) -> Option<&Path> {
        self.folders.iter().map(PathBuf::as_path).find(|f| root.starts_with(f))
    }

    /// Trust `folder` (canonical). Returns false when it was already covered.
    pub fn add(&mut self, folder: PathBuf) -> bool {
        if self.covering(&folder).is_some() {
            return false;
        }
        self.folders.push(folder);
        self.folders.sort();
        true
    }

    /// Stop trusting `folder` and every trusted folder under it. Returns the folders removed.
    pub fn remove(&mut self, folder: &Path) -> Vec<PathBuf> {
        let (gone, kept): (Vec<PathBuf>, Vec<PathBuf>) = self.folders.drain(..).partition(|f| f.starts_with(folder));
        self.folders = kept;
        self.confirmed.retain(|doc, _| !doc.starts_with(folder) || self.folders.iter().any(|f| doc.starts_with(f)));
        gone
    }
}

/// Whether running `doc_path` is trusted, and under which folder: `Ok(Some(folder))` when a
/// trusted folder covers its project root, `Ok(None)` when not.
pub fn trusted_folder(doc_path: &Path) -> Result<Option<PathBuf>, String> {
    let Some(file) = trust_file_path() else { return Ok(None) };
    let list = load(&file)?;
    Ok(list.covering(&project_root(doc_path)).map(Path::to_path_buf))
}

/// Trust the project root of `path`. Returns the folder and whether it was newly trusted.
pub fn trust(path: &Path) -> Result<(PathBuf, bool), String> {
    let file = trust_file_path().ok_or("no config folder: set HOME, XDG_CONFIG_HOME or SWITCHYARD_TRUST")?;
    let mut list = load(&file)?;
    let root = project_root(path);
    let added = list.add(root.clone());
    if added {
        save(&file, &list)?;
    }
    Ok((root, added))
}

/// Stop trusting `path` (a trusted folder, or a folder whose project root is one) and everything
/// trusted under it. Returns the folders removed.
pub fn untrust(path: &Path) -> Result<Vec<PathBuf>, String> {
    let file = trust_file_path().ok_or("no config folder: set HOME, XDG_CONFIG_HOME or SWITCHYARD_TRUST")?;
    let mut list = load(&file)?;
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| absolute(path));
    let mut gone = list.remove(&abs);
    if gone.is_empty() {
        gone = list.remove(&project_root(path));
    }
    if !gone.is_empty() {
        save(&file, &list)?;
    }
    Ok(gone)
}

/// The trusted folders.
pub fn list() -> Result<Vec<PathBuf>, String> {
    let Some(file) = trust_file_path() else { return Ok(Vec::new()) };
    Ok(load(&file)?.folders)
}

/// The manifest hash last confirmed for `doc_path`, if any.
pub fn confirmed_manifest(doc_path: &Path) -> Result<Option<String>, String> {
    let Some(file) = trust_file_path() else { return Ok(None) };
    let key = std::fs::canonicalize(doc_path).unwrap_or_else(|_| absolute(doc_path));
    Ok(load(&file)?.confirmed.get(&key).cloned())
}

/// Remember that the user confirmed the manifest with `hash` for `doc_path`.
pub fn confirm_manifest(doc_path: &Path, hash: &str) -> Result<(), String> {
    let file = trust_file_path().ok_or("no config folder: set HOME, XDG_CONFIG_HOME or SWITCHYARD_TRUST")?;
    let mut list = load(&file)?;
    let key = std::fs::canonicalize(doc_path).unwrap_or_else(|_| absolute(doc_path));
    if list.confirmed.get(&key).map(String::as_str) != Some(hash) {
        list.confirmed.insert(key, hash.to_string());
        save(&file, &list)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_root_is_the_nearest_git_folder_else_the_lllm_package_else_the_loki_bundle_else_the_agents_folder() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("agents/a")).unwrap();
        std::fs::write(repo.join("agents/a/graph.yaml"), "x").unwrap();
        let repo = std::fs::canonicalize(&repo).unwrap();
        assert_eq!(project_root(&repo.join("agents/a/graph.yaml")), repo);
        assert_eq!(project_root(&repo.join("agents/a")), repo);
        let loose = t.path().join("loose");
        std::fs::create_dir_all(&loose).unwrap();
        std::fs::write(loose.join("agent.yaml"), "x").unwrap();
        let loose = std::fs::canonicalize(&loose).unwrap();
        assert_eq!(project_root(&loose.join("agent.yaml")), loose);
        // A Loki bundle without git: its agents name their siblings, so the bundle is the root.
        let bundle = t.path().join("bundle");
        for a in ["agents/main", "agents/helper"] {
            std::fs::create_dir_all(bundle.join(a)).unwrap();
        }
        std::fs::write(bundle.join("agents/main/graph.yaml"), "x").unwrap();
        std::fs::write(bundle.join("agents/helper/config.yaml"), "x").unwrap();
        let bundle = std::fs::canonicalize(&bundle).unwrap();
        assert_eq!(project_root(&bundle.join("agents/main/graph.yaml")), bundle);
        assert_eq!(project_root(&bundle.join("agents/helper")), bundle);
        // A folder named `agents` holding a file that is not a Loki agent: just its folder.
        std::fs::create_dir_all(bundle.join("agents/notes")).unwrap();
        std::fs::write(bundle.join("agents/notes/agent.yaml"), "x").unwrap();
        assert_eq!(project_root(&bundle.join("agents/notes/agent.yaml")), bundle.join("agents/notes"));
        // An LLLM package without git: the folder of its lllm.toml, for its configs in a subfolder.
        let pkg = t.path().join("pkg");
        std::fs::create_dir_all(pkg.join("configs")).unwrap();
        std::fs::write(pkg.join("lllm.toml"), "[package]\nname = \"pkg\"\n").unwrap();
        std::fs::write(pkg.join("configs/default.yaml"), "x").unwrap();
        let pkg = std::fs::canonicalize(&pkg).unwrap();
        assert_eq!(project_root(&pkg.join("configs/default.yaml")), pkg);
        // ...and git above the package wins.
        std::fs::create_dir_all(repo.join("pkg/configs")).unwrap();
        std::fs::write(repo.join("pkg/lllm.toml"), "x").unwrap();
        std::fs::write(repo.join("pkg/configs/default.yaml"), "x").unwrap();
        assert_eq!(project_root(&repo.join("pkg/configs/default.yaml")), repo);
    }

    #[test]
    fn trusting_a_folder_trusts_its_children_and_removal_takes_them_back() {
        let mut l = TrustFile::default();
        assert!(l.add(PathBuf::from("/p/a")));
        assert!(!l.add(PathBuf::from("/p/a/b")), "already covered");
        assert_eq!(l.covering(Path::new("/p/a/b/c")), Some(Path::new("/p/a")));
        assert_eq!(l.covering(Path::new("/p/ab")), None, "a sibling with a common prefix is not a child");
        assert!(l.add(PathBuf::from("/q")));
        l.confirmed.insert(PathBuf::from("/p/a/x.yaml"), "h".into());
        assert_eq!(l.remove(Path::new("/p")), [PathBuf::from("/p/a")]);
        assert_eq!(l.folders, [PathBuf::from("/q")]);
        assert!(l.confirmed.is_empty());
    }

    #[test]
    fn the_list_is_saved_atomically_readable_by_the_user_only_and_a_damaged_one_is_an_error() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("cfg/trust.json");
        assert_eq!(load(&f).unwrap(), TrustFile::default());
        let mut l = TrustFile::default();
        l.add(PathBuf::from("/p"));
        save(&f, &l).unwrap();
        assert_eq!(load(&f).unwrap(), l);
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(f.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["trust.json"], "no temp file left behind");
        std::fs::write(&f, "{not json").unwrap();
        let e = load(&f).unwrap_err();
        assert!(e.contains("trust.json") && e.contains("fix or delete"), "{e}");
    }
}
