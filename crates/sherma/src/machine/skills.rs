//! sherma skills at run time: remote skill cards (a `skills` entry's `url`) and files under a
//! URL `base_uri` fetched over HTTP, a skill's files read only from inside its folder, and the
//! Agent-Skills `activate_skill` tool (the `agent_skills` extension). The parsing and discovery
//! live in `model::skills`; the seven sherma skill tools call in here for their files.

use model::doc::sherma::ShermaDoc;
use model::doc::{Document, Model};
use model::skills::{self, AgentSkill, LoadedCard, MAX_SKILL_FILE, Scope, SkillCard};
use syntax::source::SourceFile;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How long one skill file (or card) may take to arrive.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// GET `url` as text: 2xx only, at most [`MAX_SKILL_FILE`] bytes, within [`FETCH_TIMEOUT`];
/// a raised `stop` drops the request.
pub fn fetch_text(url: &str, stop: Option<&AtomicBool>) -> Result<String, String> {
    let u = url.to_string();
    let fut = async move {
        let mut resp = connect::llm::http::client().get(&u).send().await.map_err(|e| transport(&e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        if resp.content_length().is_some_and(|n| n > MAX_SKILL_FILE) {
            return Err(format!("the response is larger than {} MiB", MAX_SKILL_FILE / (1024 * 1024)));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| transport(&e))? {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > MAX_SKILL_FILE {
                return Err(format!("the response is larger than {} MiB", MAX_SKILL_FILE / (1024 * 1024)));
            }
        }
        String::from_utf8(body).map_err(|_| "the response is not UTF-8 text".to_string())
    };
    match connect::rt::block_on_until(fut, stop, Some(Instant::now() + FETCH_TIMEOUT)) {
        Ok(r) => r,
        Err(connect::rt::Interrupted::Stopped) => Err("cancelled: the run was stopped".into()),
        Err(connect::rt::Interrupted::TimedOut) => {
            Err(format!("no complete answer within {} s", FETCH_TIMEOUT.as_secs()))
        }
    }
}

fn transport(e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

/// `rel` under the URL `base` (sherma: `base_uri + "/" + file_path`).
fn url_join(base: &str, rel: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), rel.trim_start_matches("./"))
}

/// Read file `rel` of a skill: from its folder (never outside it: no `..`, no absolute path, no
/// symbolic link leading out) or, under a URL `base_uri`, over HTTP. Errors name the skill and
/// the path or URL.
pub fn read_card_file(
    id: &str,
    card: &LoadedCard,
    rel: &str,
    stop: Option<&AtomicBool>,
    network: bool,
) -> Result<String, String> {
    skills::check_relative(rel).map_err(|e| format!("skill '{id}': {e}"))?;
    if is_url(&card.base) {
        let url = url_join(&card.base, rel);
        if !network {
            return Err(format!("skill '{id}': {}", runtime::provider::offline_error("the skill file", &url)));
        }
        fetch_text(&url, stop).map_err(|e| format!("skill '{id}': cannot fetch {url}: {e}"))
    } else {
        skills::read_confined(std::path::Path::new(&card.base), rel).map_err(|e| format!("skill '{id}': {e}"))
    }
}

/// The document with its remote parts fetched: skill cards named by `url` (their `base_uri`
/// resolved against the card's URL) and `agent_skills` SKILL.md URLs. Unchanged (the same
/// `Arc`) when there is nothing remote. A failure names the skill and the URL.
pub fn with_remote(doc: Arc<Document>, network: bool) -> Result<Arc<Document>, String> {
    let Model::Sherma(sd) = &doc.model else { return Ok(doc) };
    let pending: Vec<(String, String)> = sd
        .skills
        .iter()
        .filter(|e| e.get("skill_card_path").is_none() && !sd.skill_cards.iter().any(|(k, _)| k == e.id_str()))
        .filter_map(|e| e.get_str("url").map(|u| (e.id_str().to_string(), u.to_string())))
        .collect();
    if pending.is_empty() && sd.agent_skills.urls.is_empty() {
        return Ok(doc);
    }
    let mut sd2: ShermaDoc = sd.clone();
    for (id, url) in pending {
        if !is_url(&url) {
            return Err(format!("skill `{id}`: `url` must be an http:// or https:// URL, got `{url}`"));
        }
        if !network {
            return Err(format!("skill `{id}`: {}", runtime::provider::offline_error("the remote skill card", &url)));
        }
        let text =
            fetch_text(&url, None).map_err(|e| format!("skill `{id}`: cannot fetch its skill card {url}: {e}"))?;
        let card: SkillCard = serde_json::from_str(&text).map_err(|e| {
            format!("skill `{id}`: {url} is not a skill card (JSON object with id, name, description, files, ...): {e}")
        })?;
        // `base_uri` against the card's URL: absent → the card's folder; relative → joined.
        let dir = &url[..url.rfind('/').map(|i| i + 1).unwrap_or(url.len())];
        let base = match card.base_uri.as_deref() {
            Some(b) if is_url(b) => b.to_string(),
            Some(b) if b.starts_with('/') || std::path::Path::new(b).is_absolute() => {
                return Err(format!(
                    "skill `{id}`: the card at {url} has a local `base_uri` ({b}); a remote card's files must be URLs"
                ));
            }
            Some(b) => reqwest::Url::parse(dir)
                .and_then(|d| d.join(b))
                .map(|u| u.to_string())
                .map_err(|e| format!("skill `{id}`: `base_uri` `{b}` of {url}: {e}"))?,
            None => dir.to_string(),
        };
        let base = base.trim_end_matches('/').to_string();
        for f in &card.files {
            skills::check_relative(f).map_err(|e| format!("skill `{id}`: the card at {url} lists a bad file: {e}"))?;
        }
        sd2.skill_cards.push((id, LoadedCard { path: doc.path.clone(), card, base, url: Some(url) }));
    }
    for url in sd.agent_skills.urls.clone() {
        if !network {
            return Err(format!("Agent Skill {url}: {}", runtime::provider::offline_error("the remote SKILL.md", &url)));
        }
        let text = fetch_text(&url, None).map_err(|e| format!("Agent Skill {url}: cannot fetch it: {e}"))?;
        let (md, _) = skills::parse_skill_md(&SourceFile::new(&url, text.clone()), false);
        let front = md.front.unwrap_or_default();
        let fallback = url.trim_end_matches("/SKILL.md").rsplit('/').next().unwrap_or("").to_string();
        let name = front.name.filter(|n| !n.trim().is_empty()).unwrap_or(fallback);
        let description = front.description.unwrap_or_default();
        if description.trim().is_empty() {
            return Err(format!("Agent Skill {url}: its SKILL.md has no `description`"));
        }
        if sd2.agent_skills.skills.iter().any(|k| k.name == name) {
            continue;
        }
        sd2.agent_skills.skills.push(AgentSkill {
            name,
            description,
            scope: Scope::Url,
            location: url.clone(),
            dir: None,
            text: Some(text),
        });
    }
    Ok(Arc::new(Document {
        path: doc.path.clone(),
        base_dir: doc.base_dir.clone(),
        file: doc.file.clone(),
        root: doc.root.clone(),
        model: Model::Sherma(sd2),
        diagnostics: doc.diagnostics.clone(),
        io_error: doc.io_error,
        extra_files: doc.extra_files.clone(),
    }))
}

/// Whether tool `id` is `activate_skill` of a file whose `agent_skills` found no skill: the
/// Agent Skills guidance omits the tool then, so a node naming it binds nothing instead of failing.
pub fn unbound_activate_skill(sd: &ShermaDoc, id: &str, registered: bool) -> bool {
    id == "activate_skill" && !registered && sd.agent_skills.declared && sd.agent_skills.skills.is_empty()
}

/// `activate_skill`'s description (the catalogue) and parameters (`name`, an enum of the skills).
pub fn activate_schema(sd: &ShermaDoc) -> (String, Value) {
    let names: Vec<&str> = sd.agent_skills.skills.iter().map(|k| k.name.as_str()).collect();
    let params = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "enum": names, "description": "the skill's name"}},
        "required": ["name"],
    });
    (skills::catalogue(&sd.agent_skills.skills), params)
}

/// Run `activate_skill`.
pub fn activate(sd: &ShermaDoc, args: &Value) -> String {
    let name = args.get("name").and_then(Value::as_str).unwrap_or("");
    skills::activate(&sd.agent_skills.skills, name)
}

/// Record an `activate_skill` call in `__sherma__.activated_skills` (name → `{scope,
/// location}`), so the state (and the debugger) shows which Agent Skills were activated.
pub fn track_activation(internal: &mut Map<String, Value>, sd: &ShermaDoc, args: &Value) -> bool {
    let name = args.get("name").and_then(Value::as_str).unwrap_or("");
    let Some(k) = sd.agent_skills.skills.iter().find(|k| k.name == name) else { return false };
    let mut map = internal.get("activated_skills").and_then(Value::as_object).cloned().unwrap_or_default();
    map.insert(k.name.clone(), json!({"scope": k.scope, "location": k.location}));
    internal.insert("activated_skills".into(), Value::Object(map));
    true
}
