//! Where the shared conformance corpus is, for tests and benchmarks: `$SWITCHYARD_CONFORMANCE`,
//! else `../shared/conformance` beside the repository (or beside any folder above it), else
//! `/work/shared/conformance`. The first that exists wins; when none does, the first candidate is
//! returned and the tests that need it say it is missing.

use std::path::PathBuf;

/// The repository's root folder (where `agents/` and `tests/fixtures/` are).
#[doc(hidden)]
pub fn workspace_root() -> PathBuf {
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    model.parent().and_then(|crates| crates.parent()).map(PathBuf::from).unwrap_or(model)
}

#[doc(hidden)]
pub fn conformance_dir() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("SWITCHYARD_CONFORMANCE") {
        candidates.push(PathBuf::from(p));
    }
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for dir in here.ancestors().skip(1) {
        candidates.push(dir.join("shared/conformance"));
    }
    candidates.push(PathBuf::from("/work/shared/conformance"));
    candidates.iter().find(|p| p.is_dir()).cloned().unwrap_or_else(|| candidates[0].clone())
}

/// Every `*.yaml` file under the given folders (recursively), sorted; unreadable folders are
/// skipped. For tests and benchmarks that walk the corpus and the examples.
#[doc(hidden)]
pub fn yaml_files(roots: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = roots.into_iter().collect();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
