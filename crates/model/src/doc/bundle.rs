//! Coyote bundles: a folder laid out as `coyote --install` reads it (coyote 0.10.3,
//! `config/install_remote.rs`, and the bundle template's README):
//!
//! ```text
//! <bundle>/
//!   coyote-bundle.yaml        optional identity: name, version, description, homepage
//!   agents/<name>/            graph.yaml (graph agent) or config.yaml (LLM-loop agent),
//!                             scripts/, tools.sh (or tools.py / tools.ts / tools.js), README.md
//!   skills/ roles/ macros/ functions/tools/ functions/mcp.json
//! ```
//!
//! [`discover`] finds the agents and loads the manifest with spans; [`check_manifest`] checks
//! it as coyote does (it refuses a manifest without a valid `name`; unknown keys, which coyote
//! ignores, are warnings here). Pure code: nothing is read but the folder itself, its manifest
//! and the agent files' top-level `description` (bounded).

use crate::doc::MAX_FILE_BYTES;
use std::path::{Path, PathBuf};
use syntax::diag::{Diagnostic, did_you_mean};
use syntax::source::{SourceFile, Span};
use syntax::yaml::{self, YNode};

/// The manifest's file name at the bundle's root.
pub const MANIFEST_FILE: &str = "coyote-bundle.yaml";
/// The manifest's keys (coyote's `BundleManifest`).
pub const MANIFEST_KEYS: &[&str] = &["name", "version", "description", "homepage"];

/// What kind of agent a bundle's `agents/<name>/` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKind {
    /// `graph.yaml`: a graph agent.
    Graph,
    /// `config.yaml`: an LLM-loop agent (what `agent` nodes spawn).
    Config,
}

impl AgentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Graph => "graph",
            AgentKind::Config => "config",
        }
    }
}

/// One agent of a bundle.
#[derive(Clone, Debug, PartialEq)]
pub struct BundleAgent {
    /// The folder's name (how agent nodes and coyote name it).
    pub name: String,
    /// `<bundle>/agents/<name>`.
    pub dir: PathBuf,
    /// Its agent file (`graph.yaml` or `config.yaml`).
    pub file: PathBuf,
    pub kind: AgentKind,
    /// The file's top-level `description`, when it has one as text.
    pub description: Option<String>,
    /// It has a `scripts/` folder.
    pub scripts: bool,
    /// Its agent-local tool file (`tools.sh`, `tools.py`, `tools.ts`, `tools.js`), if any.
    pub tools: Option<PathBuf>,
}

/// A value of the manifest with where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestField {
    pub value: String,
    pub span: Span,
}

/// `coyote-bundle.yaml`, loaded with spans.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub file: SourceFile,
    pub root: Option<YNode>,
    pub name: Option<ManifestField>,
    pub version: Option<ManifestField>,
    pub description: Option<ManifestField>,
    pub homepage: Option<ManifestField>,
}

/// A bundle folder: its manifest (if any), its agents in name order, and what is wrong with
/// its layout or its manifest.
#[derive(Clone, Debug)]
pub struct Bundle {
    pub root: PathBuf,
    pub manifest: Option<Manifest>,
    pub agents: Vec<BundleAgent>,
    /// Manifest problems (positioned in it) and agent folders that cannot be opened (both
    /// agent files, or neither).
    pub diagnostics: Vec<Diagnostic>,
}

impl Bundle {
    /// The bundle's name: the manifest's, else the folder's (coyote derives it from the
    /// repository's name).
    pub fn name(&self) -> String {
        self.manifest
            .as_ref()
            .and_then(|m| m.name.as_ref())
            .map(|n| n.value.clone())
            .unwrap_or_else(|| self.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
    }
    /// The agent named `name`.
    pub fn agent(&self, name: &str) -> Option<&BundleAgent> {
        self.agents.iter().find(|a| a.name == name)
    }
}

/// Whether `dir` is a bundle folder: it holds `coyote-bundle.yaml`, or an `agents/` folder with
/// at least one `<name>/graph.yaml` or `<name>/config.yaml` — and it is not itself an agent
/// folder (one holding `graph.yaml` or `config.yaml`, which opens as that agent).
pub fn is_bundle(dir: &Path) -> bool {
    if !dir.is_dir() || dir.join("graph.yaml").is_file() || dir.join("config.yaml").is_file() {
        return false;
    }
    dir.join(MANIFEST_FILE).is_file() || agent_dirs(&dir.join("agents")).iter().any(|d| agent_file(d).is_some())
}

/// The bundle `path` lies in, for a file or folder inside `<bundle>/agents/<name>/`: the bundle
/// folder, when it is one ([`is_bundle`]).
pub fn bundle_of(path: &Path) -> Option<PathBuf> {
    let mut cur = if path.is_dir() { Some(path) } else { path.parent() };
    while let Some(d) = cur {
        if d.file_name().is_some_and(|n| n == "agents")
            && let Some(root) = d.parent()
            && is_bundle(root)
        {
            return Some(root.to_path_buf());
        }
        cur = d.parent();
    }
    None
}

/// The bundle at `dir`, or `None` when it is not one ([`is_bundle`]).
pub fn discover(dir: &Path) -> Option<Bundle> {
    if !is_bundle(dir) {
        return None;
    }
    let mut diagnostics = Vec::new();
    let manifest_path = dir.join(MANIFEST_FILE);
    let manifest = manifest_path.is_file().then(|| match syntax::source::read_bounded_text(&manifest_path, MAX_FILE_BYTES, None) {
        Ok(text) => {
            let m = load_manifest(&manifest_path, &text);
            diagnostics.extend(check_manifest(&m));
            Some(m)
        }
        Err(e) => {
            diagnostics.push(
                Diagnostic::error("io", format!("cannot read {}: {e}", manifest_path.display())).in_file(&manifest_path),
            );
            None
        }
    });
    let mut agents = Vec::new();
    for d in agent_dirs(&dir.join("agents")) {
        let name = d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let graph = d.join("graph.yaml");
        let config = d.join("config.yaml");
        let (file, kind) = match (graph.is_file(), config.is_file()) {
            (true, false) => (graph, AgentKind::Graph),
            (false, true) => (config, AgentKind::Config),
            (true, true) => {
                diagnostics.push(
                    Diagnostic::error(
                        "agent-dir-ambiguous",
                        format!("bundle agent `{name}` holds both graph.yaml and config.yaml"),
                    )
                    .in_file(&d)
                    .hint("an agent folder holds exactly one of them: graph.yaml for a graph agent, config.yaml for an LLM-loop agent"),
                );
                continue;
            }
            (false, false) => {
                diagnostics.push(
                    Diagnostic::warning(
                        "bundle-agent-empty",
                        format!("agents/{name} has no graph.yaml or config.yaml; it is not an agent"),
                    )
                    .in_file(&d)
                    .hint("put the agent's graph.yaml (or config.yaml) in it, or move the folder out of agents/"),
                );
                continue;
            }
        };
        let tools = ["tools.sh", "tools.py", "tools.ts", "tools.js"].iter().map(|t| d.join(t)).find(|p| p.is_file());
        agents.push(BundleAgent {
            description: top_level_description(&file),
            scripts: d.join("scripts").is_dir(),
            tools,
            name,
            dir: d,
            file,
            kind,
        });
    }
    Some(Bundle { root: dir.to_path_buf(), manifest: manifest.flatten(), agents, diagnostics })
}

/// The sub-folders of `agents`, in name order (none when it is not a folder).
fn agent_dirs(agents: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(agents) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) || e.path().is_dir())
        .map(|e| e.path())
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    dirs.sort();
    dirs
}

fn agent_file(dir: &Path) -> Option<PathBuf> {
    ["graph.yaml", "config.yaml"].iter().map(|f| dir.join(f)).find(|p| p.is_file())
}

/// A YAML file's top-level `description:` when it is text.
fn top_level_description(file: &Path) -> Option<String> {
    let text = syntax::source::read_bounded_text(file, MAX_FILE_BYTES, None).ok()?;
    let sf = SourceFile::new(file, text);
    let parsed = yaml::parse(&sf);
    let d = parsed.root.as_ref()?.get("description")?.as_str()?.trim();
    (!d.is_empty()).then(|| d.to_string())
}

/// Parse a manifest's text (never fails; see [`check_manifest`] for what is wrong with it).
pub fn load_manifest(path: &Path, text: &str) -> Manifest {
    let file = SourceFile::new(path, text);
    let parsed = yaml::parse(&file);
    let field = |k: &str| {
        parsed.root.as_ref().and_then(|r| r.get(k)).and_then(|n| {
            n.scalar_text().map(|t| ManifestField { value: t.to_string(), span: n.span })
        })
    };
    Manifest {
        name: field("name"),
        version: field("version"),
        description: field("description"),
        homepage: field("homepage"),
        root: parsed.root.clone(),
        file,
    }
}

/// What coyote would say about a manifest, positioned: YAML errors, a root that is not a
/// mapping, a missing or invalid `name` (coyote refuses the install), fields that are not text
/// (a plain number `version: 1.0` — quote it), and unknown keys (ignored by coyote: warnings).
pub fn check_manifest(m: &Manifest) -> Vec<Diagnostic> {
    let file = &m.file;
    let parsed = yaml::parse(file);
    let mut out: Vec<Diagnostic> = parsed.diagnostics;
    let Some(root) = &m.root else {
        out.push(
            Diagnostic::error("bundle-manifest-empty", format!("{MANIFEST_FILE} is empty"))
                .in_file(file.path())
                .hint("write `name: my-bundle` (and optionally version, description, homepage)"),
        );
        return out;
    };
    let Some(entries) = root.as_map() else {
        out.push(
            Diagnostic::error("wrong-type", format!("{MANIFEST_FILE} must be a mapping, found {}", root.describe()))
                .at(file, root.span)
                .hint("write `name: my-bundle` (and optionally version, description, homepage)"),
        );
        return out;
    };
    for e in entries {
        let key = e.key.key_text();
        if !MANIFEST_KEYS.contains(&key) {
            let hint = match did_you_mean(key, MANIFEST_KEYS.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => "a bundle manifest declares the bundle's identity only: name, version, description, homepage".into(),
            };
            out.push(
                Diagnostic::warning("unknown-key", format!("unknown key `{key}` in {MANIFEST_FILE} (coyote ignores it)"))
                    .at(file, e.key.span)
                    .hint(hint),
            );
            continue;
        }
        let v = &e.value;
        if v.is_null() {
            continue;
        }
        if v.as_str().is_none() {
            let msg = format!("`{key}` must be text, found {}", v.describe());
            let d = match v.scalar_text() {
                // A plain number or boolean: coyote reads it as text only when quoted.
                Some(t) if key != "name" => Diagnostic::warning("wrong-type", format!("{msg}; quote it so coyote reads it as text"))
                    .hint(format!("quote it: `{key}: \"{t}\"`")),
                Some(t) => Diagnostic::error("wrong-type", msg).hint(format!("quote it: `{key}: \"{t}\"`")),
                None => Diagnostic::error("wrong-type", msg).hint(format!("`{key}` is text")),
            };
            out.push(d.at(file, v.span));
        }
    }
    match root.get("name") {
        None => out.push(
            Diagnostic::error("missing-field", format!("{MANIFEST_FILE} has no `name`"))
                .at(file, Span { start: root.span.start, end: root.span.start })
                .hint("add `name: my-bundle`: coyote refuses a manifest without a name"),
        ),
        Some(n) => {
            if let Some(text) = n.as_str()
                && let Err(why) = bundle_name_problem(text)
            {
                out.push(
                    Diagnostic::error("bundle-name", format!("invalid bundle name `{text}`: {why}"))
                        .at(file, n.span)
                        .hint("use letters, digits, `-` and `_`, with at most one `/` between an owner and the name"),
                );
            } else if n.is_null() {
                out.push(
                    Diagnostic::error("missing-field", "`name` is empty".to_string())
                        .at(file, n.span)
                        .hint("write the bundle's name, e.g. `name: my-bundle`"),
                );
            }
        }
    }
    out
}

/// Coyote's `validate_bundle_name`: at most one `/` (owner qualifier), non-empty segments of
/// ASCII letters, digits, `-` and `_`.
pub fn bundle_name_problem(name: &str) -> Result<(), String> {
    let (owner, base) = match name.split_once('/') {
        Some((o, b)) => (Some(o), b),
        None => (None, name),
    };
    if base.contains('/') {
        return Err("at most one `/` is allowed (between an owner and the name)".into());
    }
    for part in owner.into_iter().chain(std::iter::once(base)) {
        if part.is_empty() {
            return Err("name segments cannot be empty".into());
        }
        if !part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err("only letters, digits, `-` and `_` are allowed".into());
        }
    }
    Ok(())
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
    fn scratch(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("switchyard-bundle-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    fn manifest(text: &str) -> Vec<Diagnostic> {
        check_manifest(&load_manifest(Path::new("/b/coyote-bundle.yaml"), text))
    }

    #[test]
    fn agents_are_found_in_name_order_with_their_kind_tools_and_description() {
        let s = scratch("agents");
        let b = &s.0;
        write(&b.join("agents/zeta/graph.yaml"), "name: zeta\ndescription: The last one\nnodes: {}\n");
        write(&b.join("agents/zeta/scripts/run.sh"), "#!/bin/sh\n");
        write(&b.join("agents/alpha/config.yaml"), "name: alpha\ndescription: >\n  Helps.\n");
        write(&b.join("agents/alpha/tools.sh"), "# @cmd x\n");
        write(&b.join("agents/notes/README.md"), "x");
        write(&b.join("agents/both/graph.yaml"), "x: 1\n");
        write(&b.join("agents/both/config.yaml"), "x: 1\n");
        write(&b.join("skills/s/SKILL.md"), "x");
        assert!(is_bundle(b));
        let bundle = discover(b).unwrap();
        let names: Vec<&str> = bundle.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        let alpha = bundle.agent("alpha").unwrap();
        assert_eq!((alpha.kind, alpha.file.clone()), (AgentKind::Config, b.join("agents/alpha/config.yaml")));
        assert_eq!(alpha.description.as_deref(), Some("Helps."));
        assert_eq!(alpha.tools.as_deref(), Some(b.join("agents/alpha/tools.sh").as_path()));
        assert!(!alpha.scripts);
        let zeta = bundle.agent("zeta").unwrap();
        assert_eq!(zeta.kind, AgentKind::Graph);
        assert!(zeta.scripts && zeta.tools.is_none());
        assert_eq!(zeta.description.as_deref(), Some("The last one"));
        let codes: Vec<(&str, bool)> = bundle.diagnostics.iter().map(|d| (d.code.as_str(), d.is_error())).collect();
        assert_eq!(codes, [("agent-dir-ambiguous", true), ("bundle-agent-empty", false)]);
        assert!(bundle.diagnostics[0].file.ends_with("agents/both"), "{:?}", bundle.diagnostics[0]);
        // No manifest: the folder's name.
        assert!(bundle.manifest.is_none());
        assert_eq!(bundle.name(), b.file_name().unwrap().to_string_lossy());
        // Inside it: the bundle of an agent file or folder.
        assert_eq!(bundle_of(&b.join("agents/zeta/graph.yaml")), Some(b.clone()));
        assert_eq!(bundle_of(&b.join("agents/zeta/scripts")), Some(b.clone()));
        assert_eq!(bundle_of(&b.join("skills/s/SKILL.md")), None);
    }

    #[test]
    fn an_agent_folder_or_a_plain_folder_is_not_a_bundle() {
        let s = scratch("not");
        let b = &s.0;
        assert!(!is_bundle(b));
        assert!(discover(b).is_none());
        // agents/ without agent files.
        write(&b.join("agents/x/README.md"), "x");
        assert!(!is_bundle(b));
        // An agent folder opens as the agent, even with an agents/ folder of its own.
        write(&b.join("agents/y/graph.yaml"), "x: 1\n");
        assert!(is_bundle(b));
        write(&b.join("graph.yaml"), "x: 1\n");
        assert!(!is_bundle(b));
        assert!(!is_bundle(&b.join("graph.yaml")));
        // A manifest alone makes a bundle (with no agents yet).
        let s2 = scratch("manifest-only");
        write(&s2.0.join(MANIFEST_FILE), "name: empty\n");
        let bundle = discover(&s2.0).unwrap();
        assert!(bundle.agents.is_empty() && bundle.diagnostics.is_empty(), "{:?}", bundle.diagnostics);
        assert_eq!(bundle.name(), "empty");
    }

    #[test]
    fn the_manifest_loads_with_spans() {
        let text = "name: my-bundle\nversion: \"1.0.0\"\ndescription: Starter template\nhomepage: https://example.com/b\n";
        let m = load_manifest(Path::new("/b/coyote-bundle.yaml"), text);
        assert!(check_manifest(&m).is_empty());
        let name = m.name.as_ref().unwrap();
        assert_eq!((name.value.as_str(), &text[name.span.start as usize..name.span.end as usize]), ("my-bundle", "my-bundle"));
        let v = m.version.as_ref().unwrap();
        assert_eq!(v.value, "1.0.0");
        assert_eq!(&text[v.span.start as usize..v.span.end as usize], "\"1.0.0\"");
        assert_eq!(m.homepage.as_ref().unwrap().value, "https://example.com/b");
        assert_eq!(m.description.as_ref().unwrap().value, "Starter template");
        // An owner-qualified name.
        assert!(manifest("name: acme/tools\n").is_empty());
    }

    #[test]
    fn manifest_problems_are_positioned_as_coyote_would_refuse_them() {
        let d = manifest("version: \"1\"\n");
        assert_eq!((d[0].code.as_str(), d[0].line, d[0].column, d[0].is_error()), ("missing-field", 1, 1, true));
        let d = manifest("name: a/b/c\n");
        assert_eq!((d[0].code.as_str(), d[0].line, d[0].column), ("bundle-name", 1, 7));
        assert!(d[0].message.contains("at most one `/`"), "{}", d[0].message);
        let d = manifest("name: \"has space\"\n");
        assert!(d[0].message.contains("only letters, digits"), "{}", d[0].message);
        let d = manifest("name: /x\n");
        assert!(d[0].message.contains("cannot be empty"), "{}", d[0].message);
        let d = manifest("name:\n");
        assert_eq!(d[0].code, "missing-field");
        // Unknown keys: coyote ignores them; a warning with a suggestion.
        let d = manifest("name: b\nversoin: \"1\"\n");
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].code.as_str(), d[0].line, d[0].column, d[0].is_error()), ("unknown-key", 2, 1, false));
        assert_eq!(d[0].hint.as_deref(), Some("did you mean `version`?"));
        // A number where text goes: quote it.
        let d = manifest("name: b\nversion: 1.0\n");
        assert_eq!((d[0].code.as_str(), d[0].line, d[0].column, d[0].is_error()), ("wrong-type", 2, 10, false));
        assert_eq!(d[0].hint.as_deref(), Some("quote it: `version: \"1.0\"`"));
        let d = manifest("name: 12\n");
        assert!(d[0].is_error() && d[0].code == "wrong-type", "{d:?}");
        let d = manifest("name: b\ndescription: [a]\n");
        assert!(d[0].is_error() && d[0].line == 2, "{d:?}");
        // Not a mapping, empty, broken YAML.
        assert_eq!(manifest("- a\n")[0].code, "wrong-type");
        assert_eq!(manifest("")[0].code, "bundle-manifest-empty");
        assert!(manifest("name: [x\n").iter().any(|d| d.code == "yaml-syntax"));
    }
}
