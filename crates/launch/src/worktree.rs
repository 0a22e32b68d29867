//! Recording into a git work tree: a cassette or a trace written inside a clone can end up in a
//! commit (a recording holds prompts, replies and tool results). Front ends ask [`check`] about
//! the file they are about to record into and warn when git would not ignore it; [`add_to_gitignore`]
//! is the fix they offer.
//!
//! - The work tree is the nearest folder at or above the file that holds `.git` (a folder, or the
//!   file a linked work tree or a submodule has).
//! - Whether git ignores the file is git's own answer: `git check-ignore -q` run in the work tree.
//!   Without git (or when git cannot answer, e.g. a repository it refuses as unsafe) the file
//!   counts as not ignored, so the warning errs on the side of showing.
//! - `.gitignore` is changed atomically: its bytes are kept, a missing final newline is added,
//!   then one anchored pattern line; a line already there is not added twice.

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

/// A file inside a git work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkTree {
    /// The work tree's top folder (canonical).
    pub root: PathBuf,
    /// The file, relative to `root`.
    pub relative: PathBuf,
    /// Git would ignore the file (a `.gitignore`, `.git/info/exclude` or the global excludes say so).
    pub ignored: bool,
}

/// `path` made absolute, with symbolic links of the part that exists resolved (the file itself
/// may not exist yet, nor the folders to be made for it). None when what does not exist names
/// `..` or `.`: it cannot be judged. The app's path rule uses it too.
pub fn resolved(path: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(path).ok()?;
    let mut existing = abs.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(existing) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        match existing.components().next_back() {
            Some(Component::Normal(name)) => rest.push(name),
            _ => return None,
        }
        existing = existing.parent()?;
    }
}

/// The git work tree holding `path` (a file about to be recorded into, existing or not), and
/// whether git ignores it; None outside any work tree.
pub fn check(path: &Path) -> Option<WorkTree> {
    let file = resolved(path)?;
    let root = file.ancestors().skip(1).find(|d| d.join(".git").exists())?.to_path_buf();
    let relative = file.strip_prefix(&root).ok()?.to_path_buf();
    if relative.components().next() == Some(Component::Normal(".git".as_ref())) {
        // Inside the repository's own folder: never committed.
        return Some(WorkTree { root, relative, ignored: true });
    }
    let ignored = git_ignores(&root, &relative);
    Some(WorkTree { root, relative, ignored })
}

/// `git check-ignore -q -- <relative>` in `root`: exit 0 = ignored; anything else (not ignored,
/// an error, no git) = not ignored.
fn git_ignores(root: &Path, relative: &Path) -> bool {
    Command::new("git")
        .arg("check-ignore")
        .arg("-q")
        .arg("--")
        .arg(relative)
        .current_dir(root)
        // The work tree is the one found above the file, not one the environment names.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The `.gitignore` line that ignores exactly `relative` (anchored at the work tree's top with a
/// leading `/`; `/` separators; `*`, `?`, `[`, `\` and trailing spaces escaped).
pub fn pattern(relative: &Path) -> String {
    let parts: Vec<String> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let mut out = String::from("/");
    let joined = parts.join("/");
    let trailing = joined.len() - joined.trim_end_matches(' ').len();
    for (i, ch) in joined.chars().enumerate() {
        if matches!(ch, '*' | '?' | '[' | '\\') || (ch == ' ' && i >= joined.chars().count() - trailing) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// What [`add_to_gitignore`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// The `.gitignore` changed (or was made).
    pub gitignore: PathBuf,
    /// The line that ignores the file.
    pub pattern: String,
    /// False when the line was there already (nothing written).
    pub written: bool,
}

/// Appends the pattern of `path` (a file inside the work tree `root`) to `<root>/.gitignore`,
/// atomically (a fresh temp file in `root`, then a rename), keeping the bytes already there and
/// adding a newline first when the file does not end with one. A line already equal to the
/// pattern is left alone. A `.gitignore` that is a symbolic link is refused (the rename would
/// replace the link).
pub fn add_to_gitignore(root: &Path, path: &Path) -> Result<Added, String> {
    let root_c = std::fs::canonicalize(root).map_err(|e| format!("cannot read the work tree {}: {e}", root.display()))?;
    let file = resolved(path).ok_or_else(|| format!("cannot resolve {}", path.display()))?;
    let relative = file
        .strip_prefix(&root_c)
        .map_err(|_| format!("{} is not inside the work tree {}", path.display(), root_c.display()))?;
    if relative.as_os_str().is_empty() {
        return Err(format!("{} is the work tree itself, not a file in it", path.display()));
    }
    let pattern = pattern(relative);
    let gitignore = root_c.join(".gitignore");
    let old = match std::fs::symlink_metadata(&gitignore) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(format!(
                "{} is a symbolic link: add the line {pattern} to the file it points to yourself",
                gitignore.display()
            ));
        }
        Ok(_) => std::fs::read(&gitignore).map_err(|e| format!("cannot read {}: {e}", gitignore.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", gitignore.display())),
    };
    let present = String::from_utf8_lossy(&old).lines().any(|l| l.trim_end_matches('\r') == pattern);
    if present {
        return Ok(Added { gitignore, pattern, written: false });
    }
    let mut bytes = old.clone();
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(pattern.as_bytes());
    bytes.push(b'\n');
    let mut tmp = tempfile::Builder::new()
        .prefix(".gitignore.")
        .suffix(".tmp")
        .tempfile_in(&root_c)
        .map_err(|e| format!("cannot write in {}: {e}", root_c.display()))?;
    tmp.write_all(&bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", tmp.path().display()))?;
    // The temp file is private (0600); a .gitignore is an ordinary file of the repository.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&gitignore).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("cannot set the mode of {}: {e}", tmp.path().display()))?;
    }
    tmp.persist(&gitignore).map_err(|e| format!("cannot replace {}: {}", gitignore.display(), e.error))?;
    Ok(Added { gitignore, pattern, written: true })
}

/// The bytes of `file` as committed at `rev` (`switchyard diff --rev`, the app's diff against
/// HEAD): `git -C <its folder> show <rev>:./<name>`, a fixed argv and no shell; a revision that
/// could be read as an option or a path (`-…`, `:`, spaces) is refused. The error quotes git.
pub fn show(rev: &str, file: &Path) -> Result<Vec<u8>, String> {
    if rev.is_empty() || rev.starts_with('-') || rev.contains(':') || rev.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`{rev}` is not a revision (a commit, branch or tag such as HEAD~1)"));
    }
    let dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = file.file_name().ok_or_else(|| format!("{}: not a file", file.display()))?;
    let mut spec = std::ffi::OsString::from(format!("{rev}:./"));
    spec.push(name);
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .arg("show")
        .arg(&spec)
        // The repository is the one holding the file, not one the environment names.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("git show {rev}:{}: {}", file.display(), err.trim()));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::TempDir;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git").args(args).current_dir(dir).output().expect("git is installed");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn repo() -> (TempDir, PathBuf) {
        let t = TempDir::new("worktree");
        git(&t, &["init", "-q"]);
        let root = std::fs::canonicalize(&*t).unwrap();
        (t, root)
    }

    #[test]
    fn a_file_in_a_repository_is_in_its_work_tree_and_not_ignored_until_gitignore_says_so() {
        let (_t, root) = repo();
        std::fs::create_dir_all(root.join("agents/a")).unwrap();
        // The cassette does not exist yet: it is about to be recorded.
        let cassette = root.join("agents/a/agent.cassette.json");
        let w = check(&cassette).expect("inside the work tree");
        assert_eq!(w.root, root);
        assert_eq!(w.relative, Path::new("agents/a/agent.cassette.json"));
        assert!(!w.ignored);

        std::fs::write(root.join(".gitignore"), "target/\n*.cassette.json\n").unwrap();
        assert!(check(&cassette).unwrap().ignored, "git's own rules decide");
        // Folders that do not exist yet are fine too.
        let deep = root.join("new/folder/run.jsonl");
        assert!(!check(&deep).unwrap().ignored);
    }

    #[test]
    fn outside_a_work_tree_there_is_nothing_to_warn_about() {
        let t = TempDir::new("worktree-none");
        assert_eq!(check(&t.join("x.cassette.json")), None);
    }

    #[test]
    fn a_git_file_marks_a_work_tree_too() {
        // A linked work tree or a submodule has a `.git` file pointing at the repository.
        let t = TempDir::new("worktree-file");
        let root = std::fs::canonicalize(&*t).unwrap();
        std::fs::write(root.join(".git"), "gitdir: /nowhere/.git/worktrees/x\n").unwrap();
        let w = check(&root.join("sub/c.json")).expect("a .git file counts");
        assert_eq!(w.root, root);
        assert!(!w.ignored, "git cannot answer for a broken link: not ignored");
    }

    #[test]
    fn add_to_gitignore_appends_an_anchored_line_keeps_bytes_and_is_idempotent() {
        let (_t, root) = repo();
        std::fs::create_dir_all(root.join("agents/a")).unwrap();
        let cassette = root.join("agents/a/agent.cassette.json");
        // No trailing newline, a CRLF line: kept as they are.
        std::fs::write(root.join(".gitignore"), b"target/\r\n# keep\nnode_modules").unwrap();
        let a = add_to_gitignore(&root, &cassette).unwrap();
        assert_eq!(a.pattern, "/agents/a/agent.cassette.json");
        assert!(a.written);
        assert_eq!(
            std::fs::read(root.join(".gitignore")).unwrap(),
            b"target/\r\n# keep\nnode_modules\n/agents/a/agent.cassette.json\n"
        );
        assert!(check(&cassette).unwrap().ignored, "git now ignores it");
        let again = add_to_gitignore(&root, &cassette).unwrap();
        assert!(!again.written);
        assert_eq!(
            std::fs::read_to_string(root.join(".gitignore")).unwrap().matches("agent.cassette.json").count(),
            1
        );
        // No temp file left behind.
        let left: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn add_to_gitignore_makes_the_file_and_escapes_glob_characters() {
        let (_t, root) = repo();
        let odd = root.join("runs [1]/a*b?.json");
        let a = add_to_gitignore(&root, &odd).unwrap();
        assert_eq!(a.pattern, "/runs \\[1]/a\\*b\\?.json");
        assert_eq!(std::fs::read_to_string(root.join(".gitignore")).unwrap(), format!("{}\n", a.pattern));
        assert!(check(&odd).unwrap().ignored, "git reads the escaped pattern as the literal name");
        assert!(!check(&root.join("runs [1]/aXbY.json")).unwrap().ignored, "and as nothing wider");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(root.join(".gitignore")).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644, "an ordinary file of the repository, not a private temp file");
        }
    }

    #[test]
    fn a_path_outside_the_work_tree_is_refused() {
        let (_t, root) = repo();
        let other = TempDir::new("worktree-other");
        let e = add_to_gitignore(&root, &other.join("c.json")).unwrap_err();
        assert!(e.contains("not inside the work tree"), "{e}");
        assert!(!root.join(".gitignore").exists());
    }
}
