//! LLLM packages as far as a config needs them: the `lllm.toml` above a config (its name, its
//! prompt and config folders, its dependencies), the configs `base` names, and the prompts
//! `system_prompt_path` names.
//!
//! `lllm.toml` is read with the `toml` crate, for those keys only (`[package] name`, `[prompts]`
//! and `[configs] paths` — older manifests' `folders` —, `[dependencies] packages`); a file that
//! is not TOML, or gives one of them the wrong type, is reported at its line.

use std::path::{Path, PathBuf};

/// How far up from a config `lllm.toml` is looked for.
const MAX_UP: usize = 8;
/// Python prompt modules scanned per package, and their depth below a prompt folder.
const MAX_MODULES: usize = 500;
const MAX_DEPTH: usize = 4;

/// A folder of a package section: `path`, or `path under prefix`.
#[derive(Clone, Debug, PartialEq)]
pub struct Folder {
    pub path: PathBuf,
    /// Resources in the folder are registered under `prefix/`.
    pub prefix: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Package {
    /// The folder of `lllm.toml`.
    pub root: PathBuf,
    pub manifest: PathBuf,
    pub name: Option<String>,
    pub prompts: Vec<Folder>,
    pub configs: Vec<Folder>,
    /// `[dependencies] packages`, as written.
    pub dependencies: Vec<String>,
}

/// Why `lllm.toml` could not be read: the line and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestError {
    pub manifest: PathBuf,
    pub line: u32,
    pub message: String,
}

/// The nearest `lllm.toml` at or above `dir`.
pub fn find_manifest(dir: &Path) -> Option<PathBuf> {
    let mut d = Some(dir);
    for _ in 0..MAX_UP {
        let cur = d?;
        let m = cur.join("lllm.toml");
        if m.is_file() {
            return Some(m);
        }
        d = cur.parent();
    }
    None
}

/// Read a package's `lllm.toml`.
pub fn read(manifest: &Path) -> Result<Package, ManifestError> {
    let text = std::fs::read_to_string(manifest)
        .map_err(|e| ManifestError { manifest: manifest.to_path_buf(), line: 1, message: e.to_string() })?;
    parse(manifest, &text)
}

/// The keys of `lllm.toml` a config needs (others are ignored).
#[derive(serde::Deserialize, Default)]
struct Manifest {
    #[serde(default)]
    package: Option<PackageSection>,
    #[serde(default)]
    prompts: Option<FolderSection>,
    #[serde(default)]
    configs: Option<FolderSection>,
    #[serde(default)]
    dependencies: Option<DependencySection>,
}

#[derive(serde::Deserialize)]
struct PackageSection {
    #[serde(default)]
    name: Option<String>,
}

#[derive(serde::Deserialize)]
struct FolderSection {
    #[serde(default)]
    paths: Option<Vec<String>>,
    /// What older LLLM manifests call `paths`.
    #[serde(default)]
    folders: Option<Vec<String>>,
}

#[derive(serde::Deserialize)]
struct DependencySection {
    #[serde(default)]
    packages: Vec<String>,
}

/// Parse the keys a config needs from the text of `lllm.toml` at `manifest`.
pub fn parse(manifest: &Path, text: &str) -> Result<Package, ManifestError> {
    let root = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
    let m: Manifest = toml::from_str(text).map_err(|e| ManifestError {
        manifest: manifest.to_path_buf(),
        line: e.span().map_or(1, |s| text[..s.start.min(text.len())].matches('\n').count() as u32 + 1),
        message: e.message().to_string(),
    })?;
    let folders = |sec: Option<FolderSection>, default: &str| -> Vec<Folder> {
        match sec.and_then(|f| f.paths.or(f.folders)) {
            Some(list) => list.iter().map(|s| folder(&root, s)).collect(),
            None => vec![Folder { path: root.join(default), prefix: None }],
        }
    };
    Ok(Package {
        root: root.clone(),
        manifest: manifest.to_path_buf(),
        name: m.package.and_then(|p| p.name),
        prompts: folders(m.prompts, "prompts"),
        configs: folders(m.configs, "configs"),
        dependencies: m.dependencies.map(|d| d.packages).unwrap_or_default(),
    })
}

fn folder(root: &Path, entry: &str) -> Folder {
    let (path, prefix) = match entry.split_once(" under ") {
        Some((p, pre)) => (p.trim(), Some(pre.trim().trim_matches('/').to_string())),
        None => (entry.trim(), None),
    };
    Folder { path: root.join(path.trim_end_matches('/')), prefix }
}

impl Package {
    /// The dependency packages that exist on disk and whose `lllm.toml` reads, by name.
    pub fn dependency(&self, name: &str) -> Option<Package> {
        self.dependencies.iter().find_map(|d| {
            let m = self.root.join(d).join("lllm.toml");
            let p = read(&m).ok()?;
            (p.name.as_deref() == Some(name)).then_some(p)
        })
    }
    /// The package a `pkg:` qualifier names: this one, or one of its dependencies.
    pub fn resolve(&self, qualifier: Option<&str>) -> Option<Package> {
        match qualifier {
            None => Some(self.clone()),
            Some(q) if self.name.as_deref() == Some(q) => Some(self.clone()),
            Some(q) => self.dependency(q),
        }
    }
    /// The config file a `base` name (without its package) names.
    pub fn config_file(&self, name: &str) -> Option<PathBuf> {
        config_in(self.configs.iter().map(|f| (f.path.as_path(), f.prefix.as_deref())), name)
    }
    /// The names of the configs in the package's config folders (for "did you mean").
    pub fn config_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in &self.configs {
            collect_configs(&f.path, f.prefix.as_deref().unwrap_or(""), 0, &mut out);
        }
        out.sort();
        out
    }
}

/// The config named `name` (`experiments/ablation`) in folders that may carry a prefix.
pub fn config_in<'a>(folders: impl Iterator<Item = (&'a Path, Option<&'a str>)>, name: &str) -> Option<PathBuf> {
    for (dir, prefix) in folders {
        let rest = match prefix {
            Some(p) if !p.is_empty() => match name.strip_prefix(p).and_then(|r| r.strip_prefix('/')) {
                Some(r) => r,
                None => continue,
            },
            _ => name,
        };
        if rest.split('/').any(|seg| seg.is_empty() || seg == "..") {
            continue;
        }
        for ext in ["yaml", "yml"] {
            let p = dir.join(format!("{rest}.{ext}"));
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

fn collect_configs(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let joined = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
        if p.is_dir() {
            collect_configs(&p, &joined, depth + 1, out);
        } else if let Some(stem) = joined.strip_suffix(".yaml").or_else(|| joined.strip_suffix(".yml")) {
            out.push(stem.to_string());
        }
    }
}

/// What a `system_prompt_path` resolved to.
#[derive(Clone, Debug, PartialEq)]
pub enum PromptHit {
    /// A prompt file (`<folder>/<key>.md` or `.txt`).
    File(PathBuf),
    /// A Python module declaring a prompt with this key (`path="…"`, read without running it):
    /// the module and the 1-based line.
    Module(PathBuf, u32),
}

/// What is in a package's prompt folders, for resolving keys.
#[derive(Clone, Debug, Default)]
pub struct PromptIndex {
    /// Keys declared literally by Python modules, with the module and line.
    pub declared: Vec<(String, PathBuf, u32)>,
    /// Python modules found (their prompts may be built by code, not declared literally).
    pub modules: usize,
    /// Prompt folders that exist.
    pub folders: usize,
}

impl PromptIndex {
    pub fn of(pkg: &Package) -> PromptIndex {
        let mut ix = PromptIndex::default();
        for f in &pkg.prompts {
            if f.path.is_dir() {
                ix.folders += 1;
                scan_modules(&f.path, &f.path, f.prefix.as_deref(), 0, &mut ix);
            }
        }
        ix
    }
}

fn scan_modules(root: &Path, dir: &Path, prefix: Option<&str>, depth: usize, ix: &mut PromptIndex) {
    if depth > MAX_DEPTH || ix.modules >= MAX_MODULES {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            scan_modules(root, &p, prefix, depth + 1, ix);
        } else if name.ends_with(".py") && ix.modules < MAX_MODULES {
            ix.modules += 1;
            let Ok(text) = std::fs::read_to_string(&p) else { continue };
            let module = p.strip_prefix(root).unwrap_or(&p).with_extension("").to_string_lossy().replace('\\', "/");
            for (line, path) in declared_paths(&text) {
                let key = if path.contains('/') { path } else { format!("{module}/{path}") };
                let key = match prefix {
                    Some(pre) if !pre.is_empty() => format!("{pre}/{key}"),
                    _ => key,
                };
                ix.declared.push((key, p.clone(), line));
            }
        }
    }
}

/// `path="…"` / `path='…'` keyword arguments in Python text, with their 1-based lines.
fn declared_paths(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("path") {
            let before = rest[..at].chars().next_back();
            let after = rest[at + 4..].trim_start();
            rest = &rest[at + 4..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let Some(v) = after.strip_prefix('=') else { continue };
            let v = v.trim_start();
            if v.starts_with('=') {
                continue;
            }
            let Some(q) = v.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
            if let Some(end) = v[1..].find(q) {
                out.push((i as u32 + 1, v[1..1 + end].to_string()));
            }
        }
    }
    out
}

/// The prompt file of `key` for a config in `dir` that belongs to no package: `<key>.md` or
/// `.txt` in `prompts/` beside it, else in `prompts/` beside its folder.
pub fn loose_prompt(dir: &Path, key: &str) -> Option<PathBuf> {
    if key.split('/').any(|seg| seg.is_empty() || seg == ".." || seg == ".") {
        return None;
    }
    let folders = [Some(dir.join("prompts")), dir.parent().map(|p| p.join("prompts"))];
    folders.into_iter().flatten().flat_map(|f| ["md", "txt"].map(|ext| f.join(format!("{key}.{ext}")))).find(|p| p.is_file())
}

/// Resolve a prompt key (without its package) in a package.
pub fn find_prompt(pkg: &Package, ix: &PromptIndex, key: &str) -> Option<PromptHit> {
    for f in &pkg.prompts {
        let rest = match f.prefix.as_deref() {
            Some(p) if !p.is_empty() => match key.strip_prefix(p).and_then(|r| r.strip_prefix('/')) {
                Some(r) => r,
                None => continue,
            },
            _ => key,
        };
        if rest.split('/').any(|seg| seg.is_empty() || seg == "..") {
            continue;
        }
        for ext in ["md", "txt"] {
            let p = f.path.join(format!("{rest}.{ext}"));
            if p.is_file() {
                return Some(PromptHit::File(p));
            }
        }
    }
    ix.declared.iter().find(|(k, _, _)| k == key).map(|(_, p, l)| PromptHit::Module(p.clone(), *l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_keys_and_defaults() {
        let m = Path::new("/p/lllm.toml");
        let p = parse(m, "[package]\nname = \"code_review\" # c\nversion = \"0.1\"\n\n[prompts]\npaths = [\"prompts\", 'vendor under tools']\n\n[dependencies]\npackages = [\"../a\"]\n").unwrap();
        assert_eq!(p.name.as_deref(), Some("code_review"));
        assert_eq!(p.prompts, vec![Folder { path: "/p/prompts".into(), prefix: None }, Folder { path: "/p/vendor".into(), prefix: Some("tools".into()) }]);
        assert_eq!(p.configs, vec![Folder { path: "/p/configs".into(), prefix: None }]);
        assert_eq!(p.dependencies, vec!["../a".to_string()]);
        let bad = parse(m, "[package]\nname = \"x\"\nthis is not valid toml [[[\n").unwrap_err();
        assert_eq!(bad.line, 3);
        let wrong = parse(m, "[package]\nversion = \"1\"\nname = 3\n").unwrap_err();
        assert_eq!(wrong.line, 3, "{wrong:?}");
        assert!(wrong.message.contains("string"), "{wrong:?}");
        let old = parse(m, "[configs]\nfolders = [\"cfg\"]\n").unwrap();
        assert_eq!(old.configs, vec![Folder { path: "/p/cfg".into(), prefix: None }]);
    }

    #[test]
    fn python_prompt_paths_are_read_without_running_the_module() {
        let text = "a = Prompt(\n    path=\"system/analyzer\",\n)\nb = Prompt(path='greet', x=1)\nc = dict(mypath=\"no\")\nif path == 'x': pass\n";
        assert_eq!(declared_paths(text), vec![(2, "system/analyzer".to_string()), (4, "greet".to_string())]);
    }
}
