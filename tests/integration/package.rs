//! What the release packages take from the CLI itself (e2e/package.mjs checks the installed
//! package): `switchyard --version` names the commit the binary was built from (build.rs), and
//! `switchyard package-assets DIR` writes completions for bash, zsh and fish and one man page per
//! command a user can type.

use std::process::Command;
use test_support::temp::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.trim();
    let rest = line
        .strip_prefix(&format!("switchyard {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("--version: {line}"));
    let head = Command::new("git").args(["-C", ROOT, "rev-parse", "--short=12", "HEAD"]).output();
    match head {
        Ok(h) if h.status.success() => {
            let (commit, date) = rest.split_once(' ').unwrap_or_else(|| panic!("commit and date in {line}"));
            // The binary is built from this tree; a commit made since the build is the one case
            // where they differ, so compare with the commit the tree had then: HEAD or an ancestor.
            let head = String::from_utf8(h.stdout).unwrap().trim().to_string();
            let ancestor = Command::new("git")
                .args(["-C", ROOT, "merge-base", "--is-ancestor", commit, "HEAD"])
                .status()
                .is_ok_and(|s| s.success());
            assert!(commit == head || ancestor, "--version names {commit}, HEAD is {head}");
            assert!(commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()), "{line}");
            assert!(date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-', "{line}");
        }
        _ => assert_eq!(rest, "unknown", "no git here: {line}"),
    }
}

#[test]
fn package_assets_writes_completions_and_man_pages() {
    let dir = TempDir::new("package-assets");
    let out = Command::new(BIN).arg("package-assets").arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    for f in ["completions/switchyard.bash", "completions/_switchyard", "completions/switchyard.fish"] {
        let text = read(f);
        for cmd in ["validate", "graph", "run", "serve"] {
            assert!(text.contains(cmd), "{f} completes {cmd}");
        }
        assert!(!text.contains("package-assets"), "{f} offers the hidden command");
    }
    let mut pages: Vec<String> = std::fs::read_dir(dir.path().join("man"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for p in ["switchyard.1", "switchyard-validate.1", "switchyard-run.1", "switchyard-runs-list.1", "switchyard-token-create.1"] {
        assert!(pages.iter().any(|x| x == p), "{p} in {pages:?}");
    }
    assert!(!pages.iter().any(|p| p.contains("help") || p.contains("package-assets")), "no pages of help or hidden commands: {pages:?}");
    let top = read("man/switchyard.1");
    assert!(top.starts_with(".ie") || top.contains(".TH switchyard 1"), "a man page: {}", &top[..200.min(top.len())]);
    assert!(top.contains("validate") && top.contains(env!("CARGO_PKG_VERSION")), "switchyard.1 lists the commands and the version");
}
