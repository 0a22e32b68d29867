//! What an LLLM agent may call, and its skills at run time.
//!
//! - **Python tools**: LLLM's tools are Python functions. The 0.2 `tools` key names them
//!   (`pkg.tools:search` or `pkg.tools.search`); a run imports and calls them through the
//!   engine's Python bridge (`connect::pybridge`), `sys.path` holding the package root (the
//!   folder of `lllm.toml`) or the config's folder. A replayed run answers them from its
//!   cassette without Python. Functions a prompt module's `Prompt` declares (`function_list`)
//!   are offered first and called through the prompt reader (`prompt`, `prompt_module.py`).
//! - **Skills** (`skills:`, LLLM's classification): local names looked up in the Agent-Skills
//!   folders (`model::skills::find_agent_skills`: `.agents/skills`, `.claude/skills` of the
//!   config's folder up to the project root, then the user's), `"*"` every local skill, URLs of
//!   a SKILL.md fetched when the run starts (only when the run may use the network), `skill_…`
//!   ids sent to Anthropic models as API arguments. Local and URL skills put a catalogue in the
//!   system prompt and offer `activate_skill`.

use model::skills::{self, AgentSkill, Scope};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use syntax::source::SourceFile;

/// How long fetching a URL skill may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The name of the skill tool.
pub const ACTIVATE_SKILL: &str = "activate_skill";

/// An agent's `skills` entries, classified.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkillEntries {
    pub all: bool,
    pub local: Vec<String>,
    pub urls: Vec<String>,
    /// Anthropic-hosted skill ids (`skill_…`).
    pub ids: Vec<String>,
}

/// Classify an effective `skills` value (`"*"` or a list) as LLLM does.
pub fn classify(v: Option<&Value>) -> SkillEntries {
    let mut out = SkillEntries::default();
    let items: Vec<String> = match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    };
    for i in items {
        let t = i.trim().to_string();
        if t == "*" {
            out.all = true;
        } else if t.starts_with("skill_") {
            out.ids.push(t);
        } else if t.starts_with("http://") || t.starts_with("https://") {
            out.urls.push(t);
        } else if !t.is_empty() {
            out.local.push(t);
        }
    }
    out
}

/// The skills an agent offers through `activate_skill`, and warnings (local names not found).
/// URL skills are fetched here: refused when the run may not use the network, an error when a
/// fetch fails (the run does not start).
pub fn resolve(entries: &SkillEntries, config_dir: &Path, network: bool) -> Result<(Vec<AgentSkill>, Vec<String>), String> {
    let (mut found, missing) = if entries.all || !entries.local.is_empty() {
        skills::find_agent_skills(&entries.local, entries.all, config_dir, skills::user_home().as_deref())
    } else {
        (Vec::new(), Vec::new())
    };
    let warnings = missing
        .iter()
        .map(|n| {
            format!(
                "skill `{n}` was not found in {} (LLLM skips it too)",
                skills::skill_roots(config_dir, skills::user_home().as_deref())
                    .iter()
                    .map(|(_, p)| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    for url in &entries.urls {
        if !network {
            return Err(format!("skill {url}: {}", runtime::provider::offline_error("the remote SKILL.md", url)));
        }
        let text = fetch_text(url).map_err(|e| format!("skill {url}: cannot fetch it: {e}"))?;
        let (md, _) = skills::parse_skill_md(&SourceFile::new(url, text.clone()), false);
        let front = md.front.unwrap_or_default();
        let fallback = url.trim_end_matches("/SKILL.md").rsplit('/').next().unwrap_or("").to_string();
        let name = front.name.filter(|n| !n.trim().is_empty()).unwrap_or(fallback);
        let description = front.description.unwrap_or_default();
        if description.trim().is_empty() {
            return Err(format!("skill {url}: its SKILL.md has no `description`"));
        }
        if !found.iter().any(|k| k.name == name) {
            found.push(AgentSkill { name, description, scope: Scope::Url, location: url.clone(), dir: None, text: Some(text) });
        }
    }
    Ok((found, warnings))
}

/// GET `url` as text: 2xx only, at most `MAX_SKILL_FILE` bytes, within [`FETCH_TIMEOUT`].
fn fetch_text(url: &str) -> Result<String, String> {
    let u = url.to_string();
    let fut = async move {
        let mut resp = connect::llm::http::client().get(&u).send().await.map_err(|e| e.to_string())?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > skills::MAX_SKILL_FILE {
                return Err(format!("the response is larger than {} MiB", skills::MAX_SKILL_FILE >> 20));
            }
        }
        String::from_utf8(body).map_err(|_| "the response is not UTF-8 text".to_string())
    };
    match connect::rt::block_on_until(fut, None, Some(Instant::now() + FETCH_TIMEOUT)) {
        Ok(r) => r,
        Err(_) => Err(format!("no complete answer within {} s", FETCH_TIMEOUT.as_secs())),
    }
}

/// The block LLLM appends to the system prompt for local and URL skills.
pub fn catalogue_block(skills: &[AgentSkill]) -> String {
    let mut lines = vec![
        String::new(),
        "When a task matches a skill's description, call the `activate_skill` tool with that skill's name to load its full instructions before proceeding.".to_string(),
        String::new(),
        "<available_skills>".to_string(),
    ];
    for k in skills {
        lines.push(format!("  <skill name=\"{}\">", k.name));
        lines.push(format!("    <description>{}</description>", k.description.trim()));
        lines.push("  </skill>".into());
    }
    lines.push("</available_skills>".into());
    format!("\n{}", lines.join("\n"))
}

/// The `activate_skill` tool as offered to the model.
pub fn activate_tool(skills: &[AgentSkill]) -> Value {
    let names: Vec<&str> = skills.iter().map(|k| k.name.as_str()).collect();
    json!({
        "name": ACTIVATE_SKILL,
        "description": format!(
            "Load the full instructions for an available skill. Call this when a task matches a skill's description — before attempting to perform the task — to get detailed step-by-step guidance. Available skills: {names:?}."
        ),
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": format!("Skill name to load. One of: {names:?}.")}},
            "required": ["name"],
        },
    })
}

/// A Python tool reference of the `tools` key as an import path (`pkg.tools:search` →
/// `pkg.tools.search`); `None` for what is not one (tactic tools, proxies: `pkg:name` without a
/// module path).
pub fn import_path(entry: &str) -> Option<String> {
    let e = entry.trim();
    let path = match e.split_once(':') {
        Some((module, attr)) if !module.is_empty() && !attr.is_empty() => format!("{module}.{attr}"),
        Some(_) => return None,
        None => e.to_string(),
    };
    let ok = path.contains('.') && path.split('.').all(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'));
    ok.then_some(path)
}

/// The model a LiteLLM model id names: `anthropic/claude-…`, `openai/gpt-4o`, `claude-…`
/// (Anthropic), anything else OpenAI's.
pub fn model_ref(name: &str) -> runtime::provider::ModelRef {
    let n = name.trim();
    if let Some((p, m)) = n.split_once('/') {
        return runtime::provider::ModelRef { provider: p.to_string(), name: m.to_string() };
    }
    if let Some((p, m)) = n.split_once(':') {
        return runtime::provider::ModelRef { provider: p.to_string(), name: m.to_string() };
    }
    let provider = if n.starts_with("claude") { "anthropic" } else { "openai" };
    runtime::provider::ModelRef { provider: provider.into(), name: n.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_classified_as_lllm_does() {
        let e = classify(Some(&json!(["pdf", "skill_01abc", "https://x.test/s/SKILL.md", "*"])));
        assert_eq!(e, SkillEntries { all: true, local: vec!["pdf".into()], urls: vec!["https://x.test/s/SKILL.md".into()], ids: vec!["skill_01abc".into()] });
        assert!(classify(Some(&json!("*"))).all);
        assert_eq!(classify(None), SkillEntries::default());
    }

    #[test]
    fn tool_references_and_models() {
        assert_eq!(import_path("pkg.tools:search").as_deref(), Some("pkg.tools.search"));
        assert_eq!(import_path("tools.add").as_deref(), Some("tools.add"));
        assert_eq!(import_path("pkg:search/web"), None, "a package-qualified resource, not a module");
        assert_eq!(import_path("bad name"), None);
        assert_eq!(model_ref("claude-sonnet-4-6").provider, "anthropic");
        assert_eq!(model_ref("gpt-4o").to_string(), "openai:gpt-4o");
        assert_eq!(model_ref("anthropic/claude-x").to_string(), "anthropic:claude-x");
    }

    #[test]
    fn catalogue_and_tool() {
        let k = AgentSkill { name: "pdf".into(), description: "PDFs.".into(), scope: Scope::Project, location: "x".into(), dir: None, text: None };
        let c = catalogue_block(std::slice::from_ref(&k));
        assert!(c.contains("<skill name=\"pdf\">\n    <description>PDFs.</description>"), "{c}");
        assert_eq!(activate_tool(&[k])["name"], ACTIVATE_SKILL);
    }
}
