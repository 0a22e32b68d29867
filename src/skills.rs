//! Skill cards (JSON) and SKILL.md files (front matter + body), loaded with positioned diagnostics.
//!
//! A skill card names a skill's files, local tools and MCP servers; SKILL.md carries the skill's
//! instructions with YAML front matter (`name`, `description`, ...). See spec/sherma-skills.txt
//! and reference/sherma.md §16.

use crate::diag::Diagnostic;
use crate::source::{SourceFile, Span};
use crate::yaml;
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
}

/// Parse a skill card. Errors point at the JSON position.
pub fn parse_card(file: &SourceFile) -> Result<SkillCard, Diagnostic> {
    serde_json::from_str::<SkillCard>(file.text()).map_err(|e| {
        let off = file.offset(crate::source::LineCol { line: e.line().max(1) as u32, column: e.column().max(1) as u32 });
        Diagnostic::error("skill-card", format!("invalid skill card: {e}"))
            .at(file, Span::at(off))
            .hint("a skill card is a JSON object with id, version, name, description, files, local_tools, mcps")
    })
}

/// Load a skill card file and check that the files it lists exist (local base only).
pub fn load_card(path: &Path, diags: &mut Vec<Diagnostic>, files: &mut Vec<SourceFile>) -> Option<LoadedCard> {
    let text = std::fs::read_to_string(path).ok()?;
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
            let escapes = Path::new(f).is_absolute() || Path::new(f).components().any(|c| matches!(c, std::path::Component::ParentDir));
            if escapes {
                let pos = file.text().find(&format!("\"{f}\"")).map(|p| p + 1).unwrap_or(0);
                diags.push(
                    Diagnostic::error("skill-file-escapes", format!("skill file `{f}` points outside the skill folder"))
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
            if let Ok(text) = std::fs::read_to_string(&md) {
                let mdfile = SourceFile::new(&md, text);
                let (_, mut d) = parse_skill_md(&mdfile, false);
                if !d.is_empty() {
                    files.push(mdfile);
                }
                diags.append(&mut d);
            }
        }
    }
    Some(LoadedCard { path: path.to_path_buf(), card, base })
}

/// Split and parse SKILL.md. Front matter problems become diagnostics; the body is kept.
///
/// `agent_skills_rules`: also apply the Agent Skills naming rules (name format, folder match).
/// They hold for discovered Agent-Skills folders; a sherma skill is named by its card's id, and
/// its SKILL.md `name` is display text (the upstream example uses "Weather Lookup").
pub fn parse_skill_md(file: &SourceFile, agent_skills_rules: bool) -> (SkillMd, Vec<Diagnostic>) {
    let raw = file.text().to_string();
    let mut diags = Vec::new();
    let text = raw.strip_prefix('\u{feff}').unwrap_or(&raw);
    let bom = raw.len() - text.len();
    let mut md = SkillMd { front: None, body: text.to_string(), raw: raw.clone() };
    let Some(rest) = text.strip_prefix("---") else { return (md, diags) };
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
    let padded = format!("{}{}", " ".repeat(0), fm_text);
    let fm_file = SourceFile::new(file.path(), padded);
    let parsed = yaml::parse(&fm_file);
    for d in parsed.diagnostics {
        let shift = fm_start + d.span.map(|s| s.start as usize).unwrap_or(0);
        diags.push(Diagnostic { ..d }.at(file, Span::at(shift)));
    }
    let Some(root) = parsed.root.filter(|r| r.as_map().is_some()) else { return (md, diags) };
    let s = |k: &str| root.get(k).and_then(|n| n.scalar_text()).map(str::to_string);
    let fm = FrontMatter {
        name: s("name"),
        description: s("description"),
        license: s("license"),
        compatibility: s("compatibility"),
        metadata: root.get("metadata").map(|n| n.to_json()),
        allowed_tools: root.get("allowed_tools").or(root.get("allowed-tools")).map(|n| n.to_json()),
    };
    let span_of = |k: &str| {
        root.get(k).map(|n| Span::new(fm_start + n.span.start as usize, fm_start + n.span.end as usize)).unwrap_or(Span::at(bom))
    };
    match &fm.name {
        None => diags.push(
            Diagnostic::warning("skill-md-name", "SKILL.md front matter has no `name`")
                .at(file, Span::new(bom, bom + 3))
                .hint("add `name: <skill-folder-name>` (lowercase letters, digits and hyphens)"),
        ),
        Some(_) if !agent_skills_rules => {}
        Some(n) => {
            let valid = !n.is_empty()
                && n.len() <= 64
                && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !n.starts_with('-')
                && !n.ends_with('-')
                && !n.contains("--");
            if !valid {
                diags.push(
                    Diagnostic::warning("skill-md-name", format!("skill name `{n}` does not follow the Agent Skills rules"))
                        .at(file, span_of("name"))
                        .hint("1-64 characters: lowercase letters, digits and single hyphens, not at the start or end"),
                );
            }
            let folder = file.path().parent().and_then(|p| p.file_name()).and_then(|f| f.to_str()).unwrap_or("");
            if valid && !folder.is_empty() && folder != n {
                diags.push(
                    Diagnostic::warning("skill-md-folder", format!("skill name `{n}` does not match its folder `{folder}`"))
                        .at(file, span_of("name"))
                        .hint("the Agent Skills rules want the folder named like the skill"),
                );
            }
        }
    }
    match &fm.description {
        None => diags.push(
            Diagnostic::warning("skill-md-description", "SKILL.md front matter has no `description`")
                .at(file, Span::new(bom, bom + 3))
                .hint("add a description (what the skill does and when to use it), at most 1024 characters"),
        ),
        Some(d) if d.chars().count() > 1024 => diags.push(
            Diagnostic::warning("skill-md-description", format!("description is {} characters; the limit is 1024", d.chars().count()))
                .at(file, span_of("description")),
        ),
        _ => {}
    }
    md.front = Some(fm);
    (md, diags)
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
}
