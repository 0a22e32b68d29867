//! Skill cards (JSON) and SKILL.md files (front matter + body), loaded with positioned diagnostics.
//!
//! A skill card names a skill's files, local tools and MCP servers; SKILL.md carries the skill's
//! instructions with YAML front matter (`name`, `description`, ...). See spec/sherma-skills.txt
//! and reference/sherma.md §16.

use syntax::diag::Diagnostic;
use syntax::source::{SourceFile, Span};
use syntax::yaml;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LocalTool {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub import_path: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SkillCard {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub base_uri: Option<String>,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub mcps: indexmap::IndexMap<String, serde_json::Value>,
    #[serde(default)]
    pub local_tools: indexmap::IndexMap<String, LocalTool>,
    #[serde(default)]
    pub extensions: Vec<serde_json::Value>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FrontMatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: Option<serde_json::Value>,
    pub allowed_tools: Option<serde_json::Value>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SkillMd {
    pub front: Option<FrontMatter>,
    /// Text after the front matter.
    pub body: String,
    /// The whole file as written.
    pub raw: String,
}

/// A skill card loaded from disk, with the directory its files resolve against.
#[derive(Clone, Debug)]
pub struct LoadedCard {
    pub path: PathBuf,
    pub card: SkillCard,
    /// `base_uri` resolved: a URL kept as is, otherwise a directory relative to the card.
    pub base: String,
    /// Where a remote card (a `skills` entry's `url`) was fetched from; `None` for a local card.
    pub url: Option<String>,
}

/// Parse a skill card. Errors point at the JSON position.
pub fn parse_card(file: &SourceFile) -> Result<SkillCard, Diagnostic> {
    serde_json::from_str::<SkillCard>(file.text()).map_err(|e| {
        let off =
            file.offset(syntax::source::LineCol { line: e.line().max(1) as u32, column: e.column().max(1) as u32 });
        Diagnostic::error("skill-card", format!("invalid skill card: {e}"))
            .at(file, Span::at(off))
            .hint("a skill card is a JSON object with id, version, name, description, files, local_tools, mcps")
    })
}

/// Load a skill card file and check that the files it lists exist (local base only).
pub fn load_card(path: &Path, diags: &mut Vec<Diagnostic>, files: &mut Vec<SourceFile>) -> Option<LoadedCard> {
    let text = syntax::source::read_bounded_text(path, syntax::source::SIDE_FILE_CAP, None).ok()?;
    let file = SourceFile::new(path, text);
    files.push(file.clone());
    let card = match parse_card(&file) {
        Ok(c) => c,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let base = match card.base_uri.as_deref() {
        Some(u) if u.starts_with("http://") || u.starts_with("https://") => u.to_string(),
        Some(u) => dir.join(u).display().to_string(),
        None => dir.display().to_string(),
    };
    if !base.starts_with("http") {
        for f in &card.files {
            let full = Path::new(&base).join(f);
            let escapes = Path::new(f).is_absolute()
                || Path::new(f).components().any(|c| matches!(c, std::path::Component::ParentDir));
            if escapes {
                let pos = file.text().find(&format!("\"{f}\"")).map(|p| p + 1).unwrap_or(0);
                diags.push(
                    Diagnostic::error(
                        "skill-file-escapes",
                        format!("skill file `{f}` points outside the skill folder"),
                    )
                    .at(&file, Span::new(pos, pos + f.len()))
                    .hint("skill files must be relative paths inside the skill's folder"),
                );
            } else if !full.is_file() {
                let pos = file.text().find(&format!("\"{f}\"")).map(|p| p + 1).unwrap_or(0);
                diags.push(
                    Diagnostic::warning("skill-file-missing", format!("skill file `{f}` does not exist"))
                        .at(&file, Span::new(pos, pos + f.len()))
                        .hint(format!("expected at {}", full.display())),
                );
            }
        }
        let md = Path::new(&base).join("SKILL.md");
        if md.is_file() {
            if let Ok(text) = syntax::source::read_bounded_text(&md, syntax::source::SIDE_FILE_CAP, None) {
                let mdfile = SourceFile::new(&md, text);
                let (_, mut d) = parse_skill_md(&mdfile, false);
                if !d.is_empty() {
                    files.push(mdfile);
                }
                diags.append(&mut d);
            }
        }
    }
    Some(LoadedCard { path: path.to_path_buf(), card, base, url: None })
}

/// Split and parse SKILL.md. Front matter problems become diagnostics; the body is kept.
///
/// Always checked (the Agent Skills rules that hold for sherma too): the front matter is a YAML
/// mapping, `description` is present, non-empty and at most 1024 characters, `compatibility`
/// at most 500, `metadata` a mapping of strings, no keys beyond the specification's.
///
/// `agent_skills_rules`: also apply the Agent Skills naming rules (front matter required, name
/// format, name equal to the folder). They hold for discovered Agent-Skills folders; a sherma
/// skill is named by its card's id, and its SKILL.md `name` is display text (the upstream
/// example uses "Weather Lookup").
pub fn parse_skill_md(file: &SourceFile, agent_skills_rules: bool) -> (SkillMd, Vec<Diagnostic>) {
    let raw = file.text().to_string();
    let mut diags = Vec::new();
    let text = raw.strip_prefix('\u{feff}').unwrap_or(&raw);
    let bom = raw.len() - text.len();
    let mut md = SkillMd { front: None, body: text.to_string(), raw: raw.clone() };
    let Some(rest) = text.strip_prefix("---") else {
        if agent_skills_rules {
            diags.push(
                Diagnostic::warning("skill-md-front-matter", "SKILL.md has no front matter")
                    .at(file, Span::at(bom))
                    .hint("start the file with `---`, then `name:` and `description:`, then a line `---`"),
            );
        }
        return (md, diags);
    };
    let Some(end) = rest.find("\n---") else {
        diags.push(
            Diagnostic::warning("skill-md-front-matter", "front matter starts with `---` but never ends")
                .at(file, Span::new(bom, bom + 3))
                .hint("close the front matter with a line `---`"),
        );
        return (md, diags);
    };
    let fm_start = bom + 3;
    let fm_text = &rest[..end];
    let after = &rest[end + 4..];
    md.body = after.strip_prefix('\n').or_else(|| after.strip_prefix("\r\n")).unwrap_or(after).to_string();
    // Parse the front matter as its own YAML document, then shift spans into the file.
    let fm_file = SourceFile::new(file.path(), fm_text.to_string());
    let parsed = yaml::parse(&fm_file);
    let had_yaml_errors = !parsed.diagnostics.is_empty();
    for d in parsed.diagnostics {
        let shift = fm_start + d.span.map(|s| s.start as usize).unwrap_or(0);
        diags.push(Diagnostic { ..d }.at(file, Span::at(shift)));
    }
    let Some(root) = parsed.root.filter(|r| r.as_map().is_some()) else {
        if !had_yaml_errors {
            diags.push(
                Diagnostic::warning("skill-md-front-matter", "the front matter is not a mapping of `key: value` lines")
                    .at(file, Span::new(bom, bom + 3))
                    .hint("write `name: ...` and `description: ...` between the `---` lines"),
            );
        }
        return (md, diags);
    };
    let s = |k: &str| root.get(k).and_then(|n| n.scalar_text()).map(str::to_string);
    let fm = FrontMatter {
        name: s("name"),
        description: s("description"),
        license: s("license"),
        compatibility: s("compatibility"),
        metadata: root.get("metadata").map(|n| n.to_json()),
        allowed_tools: root.get("allowed_tools").or(root.get("allowed-tools")).map(|n| n.to_json()),
    };
    check_front_matter(file, &root, &fm, bom, fm_start, agent_skills_rules, &mut diags);
    md.front = Some(fm);
    (md, diags)
}

/// The keys the Agent Skills specification allows in the front matter (`allowed_tools` is
/// sherma's spelling of `allowed-tools`).
const FRONT_MATTER_KEYS: &[&str] =
    &["name", "description", "license", "compatibility", "metadata", "allowed-tools", "allowed_tools"];

/// Whether `n` is a valid Agent Skills name: 1-64 of `a-z`, `0-9` and `-`, no hyphen at either
/// end, no `--`.
pub fn is_skill_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !n.starts_with('-')
        && !n.ends_with('-')
        && !n.contains("--")
}

fn check_front_matter(
    file: &SourceFile,
    root: &yaml::YNode,
    fm: &FrontMatter,
    bom: usize,
    fm_start: usize,
    agent_skills_rules: bool,
    diags: &mut Vec<Diagnostic>,
) {
    let shift = |sp: Span| Span::new(fm_start + sp.start as usize, fm_start + sp.end as usize);
    let span_of = |k: &str| root.get(k).map(|n| shift(n.span)).unwrap_or(Span::new(bom, bom + 3));
    let head = Span::new(bom, bom + 3);
    for e in root.as_map().unwrap_or(&[]) {
        let k = e.key.key_text();
        if !FRONT_MATTER_KEYS.contains(&k) {
            let hint = match syntax::diag::did_you_mean(k, FRONT_MATTER_KEYS.iter().copied()) {
                Some(s) => format!("did you mean `{s}`? (put anything else under `metadata:`)"),
                None => "the Agent Skills front matter allows name, description, license, compatibility, metadata, allowed-tools; put anything else under `metadata:`".into(),
            };
            diags.push(
                Diagnostic::warning("skill-md-key", format!("unknown front matter key `{k}`"))
                    .at(file, shift(e.key.span))
                    .hint(hint),
            );
        }
    }
    for k in ["name", "description", "license", "compatibility"] {
        if let Some(n) = root.get(k).filter(|n| !n.is_null() && n.as_scalar().is_none()) {
            diags.push(
                Diagnostic::warning("skill-md-type", format!("`{k}` must be a string, found {}", n.describe()))
                    .at(file, shift(n.span)),
            );
        }
    }
    match &fm.name {
        None => diags.push(
            Diagnostic::warning("skill-md-name", "SKILL.md front matter has no `name`")
                .at(file, head)
                .hint("add `name: <skill-folder-name>` (lowercase letters, digits and hyphens)"),
        ),
        Some(_) if !agent_skills_rules => {}
        Some(n) => {
            let valid = is_skill_name(n);
            if !valid {
                let why = if n.is_empty() {
                    "is empty".to_string()
                } else if n.chars().count() > 64 {
                    format!("is {} characters long (at most 64)", n.chars().count())
                } else if !n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
                    "may only hold lowercase letters a-z, digits and hyphens".into()
                } else if n.starts_with('-') || n.ends_with('-') {
                    "starts or ends with a hyphen".into()
                } else {
                    "contains `--`".into()
                };
                diags.push(
                    Diagnostic::warning("skill-md-name", format!("skill name `{n}` {why}"))
                        .at(file, span_of("name"))
                        .hint("Agent Skills names are 1-64 characters: lowercase letters, digits and single hyphens, not at the start or end"),
                );
            }
            let folder = file.path().parent().and_then(|p| p.file_name()).and_then(|f| f.to_str()).unwrap_or("");
            if valid && !folder.is_empty() && folder != n {
                diags.push(
                    Diagnostic::warning(
                        "skill-md-folder",
                        format!("skill name `{n}` does not match its folder `{folder}`"),
                    )
                    .at(file, span_of("name"))
                    .hint(format!("rename the folder to `{n}` or the skill to `{folder}`")),
                );
            }
        }
    }
    match &fm.description {
        None => diags.push(
            Diagnostic::warning("skill-md-description", "SKILL.md front matter has no `description`")
                .at(file, head)
                .hint("add a description (what the skill does and when to use it), at most 1024 characters"),
        ),
        Some(d) if d.trim().is_empty() => diags.push(
            Diagnostic::warning("skill-md-description", "the skill's `description` is empty")
                .at(file, span_of("description"))
                .hint("say what the skill does and when to use it"),
        ),
        Some(d) if d.chars().count() > 1024 => diags.push(
            Diagnostic::warning(
                "skill-md-description",
                format!("description is {} characters; the limit is 1024", d.chars().count()),
            )
            .at(file, span_of("description")),
        ),
        _ => {}
    }
    if let Some(c) = &fm.compatibility {
        let n = c.chars().count();
        if n == 0 || n > 500 {
            diags.push(
                Diagnostic::warning(
                    "skill-md-compatibility",
                    format!("compatibility is {n} characters; it must be 1-500"),
                )
                .at(file, span_of("compatibility")),
            );
        }
    }
    if let Some(m) = root.get("metadata").filter(|n| !n.is_null()) {
        match m.as_map() {
            None => diags.push(
                Diagnostic::warning(
                    "skill-md-metadata",
                    format!("`metadata` must be a mapping, found {}", m.describe()),
                )
                .at(file, shift(m.span)),
            ),
            Some(entries) => {
                for e in entries.iter().filter(|e| e.value.as_scalar().is_none()) {
                    diags.push(
                        Diagnostic::warning(
                            "skill-md-metadata",
                            format!("metadata `{}` must be a string, found {}", e.key.key_text(), e.value.describe()),
                        )
                        .at(file, shift(e.value.span)),
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Agent-Skills folders (`.agents/skills/<name>/SKILL.md`) and the `agent_skills` key
// ---------------------------------------------------------------------------------------------

/// Where a discovered skill came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Project,
    User,
    Url,
}

/// One Agent Skill offered through `activate_skill`.
#[derive(Clone, Debug, Serialize)]
pub struct AgentSkill {
    pub name: String,
    pub description: String,
    pub scope: Scope,
    /// The SKILL.md file, or its URL.
    pub location: String,
    /// The skill's folder (`None` for a URL skill: no resources).
    pub dir: Option<PathBuf>,
    /// The SKILL.md text when it was fetched (URL skills); local ones are re-read on activation.
    pub text: Option<String>,
}

/// A sherma file's `agent_skills` (a Switchyard extension): the Agent Skills an agent may
/// activate, resolved at load; URL entries are fetched when a run starts.
#[derive(Clone, Debug, Default)]
pub struct AgentSkills {
    /// The key is present (so `activate_skill` exists, even with nothing found).
    pub declared: bool,
    pub skills: Vec<AgentSkill>,
    /// `http(s)://…/SKILL.md` entries, in order.
    pub urls: Vec<String>,
}

/// The user's home for skill discovery: `SWITCHYARD_HOME`, else `HOME` (`USERPROFILE`).
pub fn user_home() -> Option<PathBuf> {
    ["SWITCHYARD_HOME", "HOME", "USERPROFILE"]
        .iter()
        .find_map(|k| std::env::var_os(k).filter(|v| !v.is_empty()))
        .map(PathBuf::from)
}

/// The folders scanned for Agent Skills, in precedence order: for the agent's folder and each
/// ancestor up to the project root (`syntax::source::project_root`: the nearest folder holding
/// `.git`, else an LLLM package's or a Loki bundle's folder, else the agent's folder alone),
/// `.agents/skills` then `.claude/skills`; then the same two in the user's home.
pub fn skill_roots(agent_dir: &Path, home: Option<&Path>) -> Vec<(Scope, PathBuf)> {
    let agent_dir = std::fs::canonicalize(agent_dir).unwrap_or_else(|_| agent_dir.to_path_buf());
    let root = syntax::source::project_root(&agent_dir);
    let mut project: Vec<&Path> = Vec::new();
    for dir in agent_dir.ancestors() {
        project.push(dir);
        if dir == root {
            break;
        }
    }
    if project.last() != Some(&root.as_path()) {
        project.truncate(1);
    }
    let mut out = Vec::new();
    for dir in project {
        for sub in [".agents/skills", ".claude/skills"] {
            out.push((Scope::Project, dir.join(sub)));
        }
    }
    if let Some(h) = home {
        for sub in [".agents/skills", ".claude/skills"] {
            let p = h.join(sub);
            if !out.iter().any(|(_, q)| q == &p) {
                out.push((Scope::User, p));
            }
        }
    }
    out
}

/// How many skill folders one root may hold before the rest are ignored.
const MAX_SKILL_DIRS: usize = 1000;

/// A skill folder found under a root: its SKILL.md and the parse.
struct Found {
    scope: Scope,
    md_file: SourceFile,
    md: SkillMd,
    diags: Vec<Diagnostic>,
    name: String,
}

fn scan_roots(roots: &[(Scope, PathBuf)]) -> Vec<Found> {
    let mut out = Vec::new();
    for (scope, root) in roots {
        let Ok(rd) = std::fs::read_dir(root) else { continue };
        let mut dirs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                !n.starts_with('.') && n != "node_modules"
            })
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .take(MAX_SKILL_DIRS)
            .collect();
        dirs.sort();
        for d in dirs {
            let md_path = d.join("SKILL.md");
            let Ok(text) = read_limited(&md_path, MAX_SKILL_FILE) else { continue };
            let md_file = SourceFile::new(&md_path, text);
            let (md, diags) = parse_skill_md(&md_file, true);
            let folder = d.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let name =
                md.front.as_ref().and_then(|f| f.name.clone()).filter(|n| !n.trim().is_empty()).unwrap_or(folder);
            out.push(Found { scope: *scope, md_file, md, diags, name });
        }
    }
    out
}

/// Resolve a sherma file's `agent_skills` node: a list of skill names, `http(s)` URLs of
/// SKILL.md files, or `"*"` (every skill found). Names are looked up in [`skill_roots`]; the
/// first folder whose front-matter name matches wins (a shadowed one is reported). Problems in
/// a selected SKILL.md are reported at their place in that file; a skill without a description
/// is left out, as the Agent Skills client guidance says.
pub fn load_agent_skills(
    node: &yaml::YNode,
    file: &SourceFile,
    agent_dir: &Path,
    diags: &mut Vec<Diagnostic>,
    files: &mut Vec<SourceFile>,
) -> AgentSkills {
    let mut out = AgentSkills { declared: true, ..Default::default() };
    // The entries: (text, span); `*` as a bare string or a list item.
    let entries: Vec<(String, Span)> = match (node.scalar_text(), node.as_seq()) {
        (Some(t), _) => vec![(t.to_string(), node.span)],
        (None, Some(items)) => items.iter().filter_map(|i| i.scalar_text().map(|t| (t.to_string(), i.span))).collect(),
        _ => Vec::new(),
    };
    let roots = skill_roots(agent_dir, user_home().as_deref());
    let found = scan_roots(&roots);
    let all = entries.iter().any(|(t, _)| t == "*");
    let mut wanted: Vec<(String, Option<Span>)> = Vec::new();
    for (t, sp) in &entries {
        if t == "*" {
            continue;
        } else if t.starts_with("http://") || t.starts_with("https://") {
            if !out.urls.contains(t) {
                out.urls.push(t.clone());
            }
        } else if !wanted.iter().any(|(w, _)| w == t) {
            wanted.push((t.clone(), Some(*sp)));
        }
    }
    if all {
        for f in &found {
            if !wanted.iter().any(|(w, _)| w == &f.name) {
                wanted.push((f.name.clone(), None));
            }
        }
    }
    for (name, sp) in wanted {
        let mut matches = found.iter().filter(|f| f.name == name);
        let Some(first) = matches.next() else {
            if let Some(sp) = sp {
                let searched: Vec<String> = roots.iter().map(|(_, r)| r.display().to_string()).collect();
                diags.push(
                    Diagnostic::warning("agent-skill-missing", format!("no Agent Skill named `{name}` was found"))
                        .at(file, sp)
                        .hint(format!("expected a folder `{name}/SKILL.md` in one of: {}", searched.join(", "))),
                );
            }
            continue;
        };
        let mut own = first.diags.clone();
        for other in matches {
            own.push(
                Diagnostic::warning(
                    "agent-skill-shadowed",
                    format!("Agent Skill `{name}` is shadowed by {}", first.md_file.path().display()),
                )
                .at(&other.md_file, Span::at(0))
                .hint("project skills win over user skills, nearer folders over farther ones"),
            );
            files.push(other.md_file.clone());
        }
        if !own.is_empty() {
            files.push(first.md_file.clone());
        }
        diags.append(&mut own);
        let description = first.md.front.as_ref().and_then(|f| f.description.clone()).unwrap_or_default();
        if description.trim().is_empty() {
            continue;
        }
        out.skills.push(AgentSkill {
            name,
            description,
            scope: first.scope,
            location: first.md_file.path().display().to_string(),
            dir: first.md_file.path().parent().map(Path::to_path_buf),
            text: None,
        });
    }
    out
}

/// Local Agent Skills by name (LLLM's `skills:` list at run time): each name looked up in
/// [`skill_roots`] of `agent_dir` (first front-matter name wins), `all` adding every skill found.
/// Returns the skills (those without a description left out) and the names not found.
pub fn find_agent_skills(names: &[String], all: bool, agent_dir: &Path, home: Option<&Path>) -> (Vec<AgentSkill>, Vec<String>) {
    let found = scan_roots(&skill_roots(agent_dir, home));
    let mut wanted: Vec<String> = Vec::new();
    for n in names {
        if !wanted.contains(n) {
            wanted.push(n.clone());
        }
    }
    if all {
        for f in &found {
            if !wanted.contains(&f.name) {
                wanted.push(f.name.clone());
            }
        }
    }
    let (mut out, mut missing) = (Vec::new(), Vec::new());
    for name in wanted {
        let Some(first) = found.iter().find(|f| f.name == name) else {
            missing.push(name);
            continue;
        };
        let description = first.md.front.as_ref().and_then(|f| f.description.clone()).unwrap_or_default();
        if description.trim().is_empty() {
            continue;
        }
        out.push(AgentSkill {
            name,
            description,
            scope: first.scope,
            location: first.md_file.path().display().to_string(),
            dir: first.md_file.path().parent().map(Path::to_path_buf),
            text: None,
        });
    }
    (out, missing)
}

/// The catalogue of `skills`, for the `activate_skill` tool's description.
pub fn catalogue(skills: &[AgentSkill]) -> String {
    let mut s = String::from(
        "Load a skill's full instructions. When a task matches a skill's description, call this tool with that skill's name to load its full instructions before proceeding.\n\n<available_skills>\n",
    );
    for k in skills {
        s.push_str(&format!(
            "  <skill name=\"{}\">\n    <description>{}</description>\n  </skill>\n",
            xml_escape(&k.name),
            xml_escape(&k.description)
        ));
    }
    s.push_str("</available_skills>");
    s
}

/// What `activate_skill(name)` returns: the SKILL.md body (front matter removed) wrapped in
/// `<skill_content>`, the skill's folder and its resource files (not their contents), and a
/// note about `allowed-tools`. An unknown name gives an error text listing the valid names.
pub fn activate(skills: &[AgentSkill], name: &str) -> String {
    let Some(k) = skills.iter().find(|k| k.name == name) else {
        let names: Vec<&str> = skills.iter().map(|k| k.name.as_str()).collect();
        return format!("Error: unknown skill '{name}'. Available skills: [{}]", names.join(", "));
    };
    let text = match (&k.text, &k.dir) {
        (Some(t), _) => t.clone(),
        (None, _) => match read_limited(Path::new(&k.location), MAX_SKILL_FILE) {
            Ok(t) => t,
            Err(e) => return format!("Error: cannot read the SKILL.md of skill '{name}' ({}): {e}", k.location),
        },
    };
    let (md, _) = parse_skill_md(&SourceFile::new(&k.location, text), false);
    let mut out = format!("<skill_content name=\"{}\">\n{}", xml_escape(&k.name), md.body.trim_end());
    if let Some(dir) = &k.dir {
        out.push_str(&format!(
            "\n\nSkill directory: {}\nRelative paths in this skill resolve against the skill directory.\n",
            dir.display()
        ));
        let files = resource_files(dir);
        if !files.is_empty() {
            out.push_str("\n<skill_resources>\n");
            for f in files {
                out.push_str(&format!("  <file>{}</file>\n", xml_escape(&f)));
            }
            out.push_str("</skill_resources>\n");
        }
    } else {
        out.push('\n');
    }
    if let Some(tools) = md.front.as_ref().and_then(|f| f.allowed_tools.as_ref()) {
        let list = match tools {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        };
        out.push_str(&format!(
            "\nThis skill declares that it needs these tools: {list}. Activating it does not grant them; use the tools this agent offers.\n"
        ));
    }
    out.push_str("</skill_content>");
    out
}

/// The files of a skill folder other than SKILL.md, relative and sorted (hidden entries and
/// `__pycache__` skipped, symbolic links not followed; at most 200 files, 6 levels).
pub fn resource_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.filter_map(|e| e.ok()) {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with('.') || n == "__pycache__" {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() && depth < 6 {
                stack.push((p, depth + 1));
            } else if ft.is_file() {
                if let Ok(rel) = p.strip_prefix(dir) {
                    let rel = rel.to_string_lossy().replace('\\', "/");
                    if rel != "SKILL.md" {
                        out.push(rel);
                    }
                }
            }
            if out.len() >= 200 {
                break;
            }
        }
    }
    out.sort();
    out.truncate(200);
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

// ---------------------------------------------------------------------------------------------
// Reading a skill's files, confined to its folder
// ---------------------------------------------------------------------------------------------

/// The largest skill file read (SKILL.md, references, assets, cards), local or fetched.
pub const MAX_SKILL_FILE: u64 = 4 * 1024 * 1024;

/// Check a path a skill names (a card's `files` entry, a tool's `resource_path`): relative,
/// no `..`, no drive or root, not empty.
pub fn check_relative(rel: &str) -> Result<(), String> {
    let p = Path::new(rel);
    if rel.trim().is_empty() {
        return Err("the path is empty".into());
    }
    if p.is_absolute() || rel.starts_with('/') || rel.starts_with('\\') || rel.contains(':') {
        return Err(format!("'{rel}' is not a relative path inside the skill"));
    }
    if rel.contains('\\')
        || p.components().any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
    {
        return Err(format!("'{rel}' leaves the skill's folder"));
    }
    Ok(())
}

/// Read `rel` inside the skill folder `base`, refusing paths that leave it — `..`, absolute
/// paths, and symbolic links that resolve outside the folder.
pub fn read_confined(base: &Path, rel: &str) -> Result<String, String> {
    check_relative(rel)?;
    let root =
        std::fs::canonicalize(base).map_err(|e| format!("the skill folder {} cannot be read: {e}", base.display()))?;
    let full = std::fs::canonicalize(root.join(rel)).map_err(|e| format!("cannot read '{rel}': {e}"))?;
    if !full.starts_with(&root) {
        return Err(format!("'{rel}' resolves outside the skill's folder (a symbolic link?)"));
    }
    read_limited(&full, MAX_SKILL_FILE).map_err(|e| format!("cannot read '{rel}': {e}"))
}

/// Read a text file of at most `max` bytes.
pub fn read_limited(path: &Path, max: u64) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf).map_err(|e| e.to_string())?;
    if buf.len() as u64 > max {
        return Err(format!("larger than {} MiB", max / (1024 * 1024)));
    }
    String::from_utf8(buf).map_err(|_| "not UTF-8 text".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance_weather_skill_loads() {
        let dir = crate::testdata::conformance_dir().join("sherma/examples/skills/weather");
        let mut diags = Vec::new();
        let mut files = Vec::new();
        let card = load_card(&dir.join("skill-card.json"), &mut diags, &mut files).expect("card loads");
        assert!(diags.is_empty(), "{diags:#?}");
        assert!(!card.card.id.is_empty());
        assert!(card.card.version.is_some());
        assert!(!card.card.name.is_empty() && !card.card.description.is_empty());
        assert!(!card.card.files.is_empty());
        assert_eq!(card.card.local_tools.len(), 1);
        let text = std::fs::read_to_string(dir.join("SKILL.md")).unwrap();
        let (md, d) = parse_skill_md(&SourceFile::new(dir.join("SKILL.md"), text), false);
        assert!(d.is_empty(), "{d:#?}");
        let fm = md.front.expect("front matter");
        assert!(fm.name.is_some() && fm.description.is_some());
        assert!(!md.body.starts_with("---"));
    }

    #[test]
    fn bad_card_and_front_matter() {
        let f = SourceFile::new("card.json", "{\n  \"id\": \"x\",\n  \"files\": [1]\n}");
        let d = parse_card(&f).unwrap_err();
        assert_eq!(d.line, 3);
        let md = SourceFile::new("/s/Weather/SKILL.md", "---\nname: Weather_Tool\n---\nbody\n");
        let (m, d) = parse_skill_md(&md, true);
        assert_eq!(m.body, "body\n");
        assert!(d.iter().any(|x| x.code == "skill-md-name" && x.line == 2), "{d:#?}");
        assert!(d.iter().any(|x| x.code == "skill-md-description"), "{d:#?}");
    }

    /// A fresh temp dir for one test.
    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("switchyard-skills-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn codes(d: &[Diagnostic]) -> Vec<(&str, u32, u32)> {
        d.iter().map(|x| (x.code.as_str(), x.line, x.column)).collect()
    }

    #[test]
    fn agent_skills_name_rules() {
        for ok in ["pdf", "pdf-tools", "a1", &"a".repeat(64)] {
            assert!(is_skill_name(ok), "{ok}");
        }
        for bad in ["", "-pdf", "pdf-", "pdf--x", "PDF", "pdf_x", "pdf x", "café", &"a".repeat(65)] {
            assert!(!is_skill_name(bad), "{bad}");
        }
    }

    #[test]
    fn front_matter_diagnostics_are_positioned() {
        let text = "---\nname: Pdf--Tool\ndescription: \"\"\ncompatibility: \nmetadata:\n  author: [a]\ncolour: red\n---\n# body\n";
        let (_, d) = parse_skill_md(&SourceFile::new("/s/pdf/SKILL.md", text), true);
        let c = codes(&d);
        assert!(c.contains(&("skill-md-name", 2, 7)), "{c:?}");
        assert!(c.contains(&("skill-md-description", 3, 14)), "{c:?}");
        assert!(c.contains(&("skill-md-metadata", 6, 11)), "{c:?}");
        assert!(c.contains(&("skill-md-key", 7, 1)), "{c:?}");
        let msg = &d.iter().find(|x| x.code == "skill-md-name").unwrap().message;
        assert!(msg.contains("lowercase"), "{msg}");
        // The folder must match, and the description has a length limit.
        let long = "x".repeat(1025);
        let text = format!("---\nname: pdf\ndescription: {long}\ncompatibility: {}\n---\n", "y".repeat(501));
        let (_, d) = parse_skill_md(&SourceFile::new("/s/tools/SKILL.md", text), true);
        let c = codes(&d);
        assert!(c.contains(&("skill-md-folder", 2, 7)), "{c:?}");
        assert!(c.contains(&("skill-md-description", 3, 14)), "{c:?}");
        assert!(c.contains(&("skill-md-compatibility", 4, 16)), "{c:?}");
        // sherma cards keep display names: no name rules, but the rest applies.
        let (_, d) = parse_skill_md(&SourceFile::new("/s/tools/SKILL.md", "---\nname: Weather Lookup\nlicence: MIT\n---\n"), false);
        let c = codes(&d);
        assert_eq!(c, vec![("skill-md-key", 3, 1), ("skill-md-description", 1, 1)], "{d:#?}");
        // A valid file gives nothing; no front matter is reported under the Agent Skills rules.
        let (_, d) = parse_skill_md(&SourceFile::new("/s/pdf/SKILL.md", "---\nname: pdf\ndescription: PDFs.\n---\nx"), true);
        assert!(d.is_empty(), "{d:#?}");
        let (_, d) = parse_skill_md(&SourceFile::new("/s/pdf/SKILL.md", "# just text\n"), true);
        assert_eq!(codes(&d), vec![("skill-md-front-matter", 1, 1)]);
        let (_, d) = parse_skill_md(&SourceFile::new("/s/pdf/SKILL.md", "---\n- a\n---\n"), true);
        assert_eq!(codes(&d), vec![("skill-md-front-matter", 1, 1)]);
    }

    fn write_skill(root: &Path, folder: &str, name: &str, desc: &str) {
        let d = root.join(folder);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SKILL.md"), format!("---\nname: {name}\ndescription: {desc}\n---\n# {name}\nBody of {name}.\n")).unwrap();
    }

    #[test]
    fn discovery_order_and_scopes() {
        let base = tmp("disc");
        let repo = base.join("repo");
        let agent_dir = repo.join("agents/a");
        std::fs::create_dir_all(&agent_dir).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let home = base.join("home");
        let roots = skill_roots(&agent_dir, Some(&home));
        let repo_c = std::fs::canonicalize(&repo).unwrap();
        let agent_c = std::fs::canonicalize(&agent_dir).unwrap();
        let got: Vec<(Scope, PathBuf)> = roots.clone();
        assert_eq!(got[0], (Scope::Project, agent_c.join(".agents/skills")));
        assert_eq!(got[1], (Scope::Project, agent_c.join(".claude/skills")));
        // ... up to the folder holding `.git`, not beyond, then the home.
        assert_eq!(got[got.len() - 4], (Scope::Project, repo_c.join(".agents/skills")));
        assert_eq!(got[got.len() - 2], (Scope::User, home.join(".agents/skills")));
        assert_eq!(got.len(), 3 * 2 + 2);
        // Without a `.git` above, only the agent's folder is the project.
        let lone = base.join("lone");
        std::fs::create_dir_all(&lone).unwrap();
        assert_eq!(skill_roots(&lone, None).len(), 2);
        // An LLLM package without git: its configs' skills are looked up to the package folder.
        let pkg = base.join("pkg");
        std::fs::create_dir_all(pkg.join("configs")).unwrap();
        std::fs::write(pkg.join("lllm.toml"), "[package]\n").unwrap();
        let pkg_c = std::fs::canonicalize(&pkg).unwrap();
        let got = skill_roots(&pkg.join("configs"), None);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[2], (Scope::Project, pkg_c.join(".agents/skills")));

        // Skills: `pdf` in the project and in the home (project wins, the other is shadowed),
        // `commit` in the home only, `nodesc` without a description (left out), a folder whose
        // name differs from its skill.
        write_skill(&repo.join(".agents/skills"), "pdf", "pdf", "Project PDF skill.");
        write_skill(&home.join(".agents/skills"), "pdf", "pdf", "User PDF skill.");
        write_skill(&home.join(".claude/skills"), "commit", "commit", "Commit messages.");
        std::fs::create_dir_all(home.join(".agents/skills/nodesc")).unwrap();
        std::fs::write(home.join(".agents/skills/nodesc/SKILL.md"), "---\nname: nodesc\n---\nx").unwrap();
        write_skill(&home.join(".agents/skills"), "Review", "review", "Reviews.");
        std::fs::create_dir_all(home.join(".agents/skills/.hidden")).unwrap();

        let found = scan_roots(&skill_roots(&agent_dir, Some(&home)));
        let names: Vec<(&str, Scope)> = found.iter().map(|f| (f.name.as_str(), f.scope)).collect();
        assert_eq!(
            names,
            vec![
                ("pdf", Scope::Project),
                ("review", Scope::User),
                ("nodesc", Scope::User),
                ("pdf", Scope::User),
                ("commit", Scope::User)
            ]
        );
        assert!(found[1].diags.iter().any(|d| d.code == "skill-md-folder"));
    }

    #[test]
    fn activation_text_and_resources() {
        let base = tmp("act");
        let dir = base.join("pdf");
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::create_dir_all(dir.join("__pycache__")).unwrap();
        std::fs::write(dir.join("SKILL.md"), "---\nname: pdf\ndescription: PDFs & <forms>.\nallowed-tools: Read Bash(git:*)\n---\n# PDF\nUse it.\n").unwrap();
        std::fs::write(dir.join("references/FORMS.md"), "forms").unwrap();
        std::fs::write(dir.join("__pycache__/x.pyc"), "x").unwrap();
        std::fs::write(dir.join(".secret"), "x").unwrap();
        let k = AgentSkill {
            name: "pdf".into(),
            description: "PDFs & <forms>.".into(),
            scope: Scope::Project,
            location: dir.join("SKILL.md").display().to_string(),
            dir: Some(dir.clone()),
            text: None,
        };
        let out = activate(std::slice::from_ref(&k), "pdf");
        assert!(out.starts_with("<skill_content name=\"pdf\">\n# PDF\nUse it.\n"), "{out}");
        assert!(!out.contains("description:"), "{out}");
        assert!(out.contains(&format!("Skill directory: {}\n", dir.display())), "{out}");
        assert!(out.contains("<skill_resources>\n  <file>references/FORMS.md</file>\n</skill_resources>"), "{out}");
        assert!(!out.contains("pyc") && !out.contains(".secret"), "{out}");
        assert!(out.contains("needs these tools: Read Bash(git:*)"), "{out}");
        assert!(out.ends_with("</skill_content>"), "{out}");
        assert_eq!(activate(std::slice::from_ref(&k), "nope"), "Error: unknown skill 'nope'. Available skills: [pdf]");
        let cat = catalogue(std::slice::from_ref(&k));
        assert!(cat.contains("<skill name=\"pdf\">\n    <description>PDFs &amp; &lt;forms&gt;.</description>"), "{cat}");
    }

    #[test]
    fn files_are_confined_to_the_skill_folder() {
        let base = tmp("conf");
        let dir = base.join("skill");
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(dir.join("references/a.md"), "inside").unwrap();
        std::fs::write(base.join("secret.txt"), "outside").unwrap();
        assert_eq!(read_confined(&dir, "references/a.md").unwrap(), "inside");
        assert_eq!(read_confined(&dir, "./references/a.md").unwrap(), "inside");
        for bad in ["../secret.txt", "references/../../secret.txt", "/etc/passwd", "", "C:\\x", "references\\..\\..\\secret.txt"] {
            let e = read_confined(&dir, bad).unwrap_err();
            assert!(!e.contains("outside\n"), "{bad}: {e}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(base.join("secret.txt"), dir.join("references/link.md")).unwrap();
            std::os::unix::fs::symlink(&base, dir.join("references/up")).unwrap();
            std::os::unix::fs::symlink(dir.join("references/a.md"), dir.join("references/ok.md")).unwrap();
            let e = read_confined(&dir, "references/link.md").unwrap_err();
            assert!(e.contains("outside the skill's folder"), "{e}");
            assert!(read_confined(&dir, "references/up/secret.txt").unwrap_err().contains("outside"));
            assert_eq!(read_confined(&dir, "references/ok.md").unwrap(), "inside");
        }
    }

    #[test]
    fn agent_skills_node_resolves_names() {
        let base = tmp("node");
        std::fs::create_dir_all(base.join(".git")).unwrap();
        write_skill(&base.join(".agents/skills"), "pdf", "pdf", "PDFs.");
        write_skill(&base.join(".agents/skills"), "bad", "Bad_Name", "Bad.");
        let yaml = "agent_skills: [pdf, missing, https://example.invalid/x/SKILL.md]\nall: \"*\"\n";
        let file = SourceFile::new(base.join("agent.yaml"), yaml);
        let root = yaml::parse(&file).root.unwrap();
        let (mut diags, mut files) = (Vec::new(), Vec::new());
        let got = load_agent_skills(root.get("agent_skills").unwrap(), &file, &base, &mut diags, &mut files);
        assert!(got.declared);
        assert_eq!(got.skills.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), vec!["pdf"]);
        assert_eq!(got.urls, vec!["https://example.invalid/x/SKILL.md".to_string()]);
        assert_eq!(codes(&diags), vec![("agent-skill-missing", 1, 21)], "{diags:#?}");
        // `*`: every skill found; the bad one's problems are reported in its SKILL.md.
        let (mut diags, mut files) = (Vec::new(), Vec::new());
        let got = load_agent_skills(root.get("all").unwrap(), &file, &base, &mut diags, &mut files);
        let mut names: Vec<&str> = got.skills.iter().map(|k| k.name.as_str()).collect();
        names.sort();
        assert_eq!(names, vec!["Bad_Name", "pdf"]);
        let d = diags.iter().find(|d| d.code == "skill-md-name").expect("name diagnostic");
        assert!(d.file.ends_with("bad/SKILL.md") && d.line == 2 && d.column == 7, "{d:#?}");
        assert!(files.iter().any(|f| f.path().ends_with("bad/SKILL.md")));
    }
}
