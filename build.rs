//! Build script of the root package: the git commit the CLI was built from, for
//! `switchyard --version` (`SWITCHYARD_COMMIT`: the short hash and the commit date, from `git` in
//! the source tree; "unknown" without git or outside a clone; a value set in the environment wins,
//! for builds from a source archive).

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SWITCHYARD_COMMIT");
    if let Ok(v) = std::env::var("SWITCHYARD_COMMIT")
        && !v.trim().is_empty()
    {
        println!("cargo:rustc-env=SWITCHYARD_COMMIT={}", v.trim());
        return;
    }
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let commit = git(&root, &["rev-parse", "--short=12", "HEAD"]);
    let date = git(&root, &["log", "-1", "--format=%cs", "HEAD"]);
    let value = match (commit, date) {
        (Some(c), Some(d)) => format!("{c} {d}"),
        (Some(c), None) => c,
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=SWITCHYARD_COMMIT={value}");
    // Built again when HEAD moves: HEAD itself (a checkout), the branch it names (a commit), and
    // packed-refs (a branch whose loose ref was packed). Only files that exist are named: cargo
    // runs a build script on every build while a file it names is missing.
    let abs = |p: Option<String>| p.map(|p| if Path::new(&p).is_absolute() { PathBuf::from(p) } else { root.join(p) });
    let (Some(git_dir), Some(common)) =
        (abs(git(&root, &["rev-parse", "--git-dir"])), abs(git(&root, &["rev-parse", "--git-common-dir"])))
    else {
        return;
    };
    let mut watch = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&root, &["symbolic-ref", "-q", "HEAD"]) {
        watch.push(common.join(branch));
    }
    for p in watch.into_iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}
