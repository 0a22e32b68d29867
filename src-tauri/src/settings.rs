//! The Settings page (docs/app-contract.md §6): LLM providers, their API keys and the default
//! model, plus the models a document names (for the live run configuration).
//!
//! Provider settings live in the engine's provider file (`LlmConfig::default_path()`:
//! `$SWITCHYARD_PROVIDERS`, else `$XDG_CONFIG_HOME/switchyard/providers.yaml`). API keys go to
//! the OS keyring through the engine's `switchyard::llm::keyring` (the secret service on Linux,
//! the Keychain on macOS, the Credential Manager on Windows) under service `switchyard`,
//! account = the provider name; the CLI reads them from there too. When no keyring answers (no
//! D-Bus session, as under Xvfb or in CI; or `SWITCHYARD_KEYRING=off`) the key is written to the
//! provider file instead, which `LlmConfig::save` keeps readable by the user only, and the answer
//! says where it went. Runs see keyring keys through `LlmConfig::with_keys` (`launch::live_config`, the one resolver of runs and of the Settings probe); the
//! environment still wins. The UI never receives a key: only where it comes from and a masked
//! form (`sk-…9f3a`).

use crate::commands::CmdError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use switchyard::llm::config::{KeyOrigin, LlmConfig, ProviderEntry, ProviderFile, Wire};
use switchyard::run::provider::ModelRef;
use tauri::AppHandle;
use ts_rs::TS;

type Res<T> = Result<T, CmdError>;

pub use switchyard::llm::keyring::{KeyStore, load_config, os_keyring, stored_keys};

/// `settings_test_provider`'s request timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

// ------------------------------------------------------------------------------------------------
// What the Settings page shows

/// Where a key comes from, as the page says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    Env,
    Keyring,
    File,
}

impl From<KeyOrigin> for KeySource {
    fn from(o: KeyOrigin) -> KeySource {
        match o {
            KeyOrigin::Env => KeySource::Env,
            KeyOrigin::Store => KeySource::Keyring,
            KeyOrigin::File => KeySource::File,
        }
    }
}

#[derive(Debug, Serialize, TS)]
pub struct KeyringInfo {
    available: bool,
    /// Why it is not (null when it is).
    message: Option<String>,
}

#[derive(Debug, Serialize, TS)]
pub struct ProviderInfo {
    name: String,
    /// Known to the engine without configuration.
    builtin: bool,
    /// Has an entry in the provider file.
    configured: bool,
    #[ts(type = r#""openai" | "anthropic" | null"#)]
    wire: Option<Wire>,
    base_url: Option<String>,
    /// The variable whose value overrides the base URL, when it is set.
    base_url_env: Option<String>,
    /// The environment variable the key is read from (`OPENAI_API_KEY`).
    key_var: String,
    key_source: Option<KeySource>,
    /// The key with all but its first and last characters hidden (`sk-…9f3a`).
    key_masked: Option<String>,
    /// A local server that works without a key.
    key_optional: bool,
    models: Vec<String>,
    timeout_s: Option<f64>,
    /// Why calls to it cannot go anywhere (unknown wire format / base URL).
    error: Option<String>,
}

/// What `settings_get` answers.
#[derive(Debug, Serialize, TS)]
pub struct Settings {
    /// The provider file (written by `settings_save`).
    path: Option<String>,
    /// The file exists but cannot be read or parsed (saving is then refused).
    file_error: Option<String>,
    /// The file's `default_model`.
    default_model: Option<String>,
    /// `SWITCHYARD_MODEL` when set: it wins over `default_model`.
    default_model_env: Option<String>,
    keyring: KeyringInfo,
    providers: Vec<ProviderInfo>,
}

/// `sk-…9f3a`: the prefix up to the first `-` (when short), then the last 4 characters. Short
/// keys show less, so that most of a key is never on screen.
pub fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.trim().chars().collect();
    let n = chars.len();
    if n < 8 {
        return "…".into();
    }
    if n < 16 {
        return format!("…{}", chars[n - 2..].iter().collect::<String>());
    }
    let prefix: String = match chars.iter().take(5).position(|c| *c == '-') {
        Some(i) => chars[..=i].iter().collect(),
        None => String::new(),
    };
    format!("{prefix}…{}", chars[n - 4..].iter().collect::<String>())
}

fn builtin_config() -> LlmConfig {
    LlmConfig::new(ProviderFile::default(), BTreeMap::new())
}

fn env_prefix(name: &str) -> String {
    if name == "claude" {
        return "ANTHROPIC".into();
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The page's view of `cfg`.
pub fn describe(
    cfg: &LlmConfig,
    path: Option<&Path>,
    file_error: Option<String>,
    keyring_down: Option<String>,
) -> Settings {
    let builtins = builtin_config().provider_names();
    let providers = cfg
        .provider_names()
        .into_iter()
        .map(|name| {
            let entry = cfg.file.providers.get(&name);
            let base_var = format!("{}_BASE_URL", env_prefix(&name));
            let (wire, base_url, key_var, key_optional, key, error) = match cfg.endpoint(&name) {
                Ok(ep) => (
                    Some(ep.wire),
                    Some(ep.base_url),
                    ep.key_source,
                    ep.key_optional,
                    ep.api_key,
                    None,
                ),
                Err(e) => (
                    entry.and_then(|e| e.wire),
                    entry.and_then(|e| e.base_url.clone()),
                    entry
                        .and_then(|e| e.api_key_env.clone())
                        .unwrap_or_else(|| format!("{}_API_KEY", env_prefix(&name))),
                    true,
                    None,
                    Some(e),
                ),
            };
            ProviderInfo {
                builtin: builtins.contains(&name),
                configured: entry.is_some(),
                wire,
                base_url,
                base_url_env: cfg.has_var(&base_var).then_some(base_var),
                key_var,
                key_source: cfg.key_origin(&name).map(KeySource::from),
                key_masked: key.as_deref().map(mask_key),
                key_optional,
                models: entry.map(|e| e.models.clone()).unwrap_or_default(),
                timeout_s: entry.and_then(|e| e.timeout_s),
                error,
                name,
            }
        })
        .collect();
    let env_model = cfg
        .has_var("SWITCHYARD_MODEL")
        .then(|| cfg.default_model().map(|m| m.to_string()))
        .flatten();
    Settings {
        path: path.map(|p| p.display().to_string()),
        file_error,
        default_model: cfg.file.default_model.clone(),
        default_model_env: env_model,
        keyring: KeyringInfo {
            available: keyring_down.is_none(),
            message: keyring_down,
        },
        providers,
    }
}

/// Settings from `path`, `env` and `store` (a broken file is reported, not fatal).
pub fn read_settings(
    path: Option<&Path>,
    env: BTreeMap<String, String>,
    store: &dyn KeyStore,
) -> Settings {
    match load_config(path, env.clone(), store) {
        Ok((cfg, down)) => describe(&cfg, path, None, down),
        Err(e) => {
            let (keys, down) = stored_keys(store, &builtin_config().provider_names());
            let cfg = LlmConfig::new(ProviderFile::default(), env).with_keys(keys);
            describe(&cfg, path, Some(e), down)
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Saving

/// One provider as the form sends it.
#[derive(Clone, Debug, Default, Deserialize, TS)]
pub struct ProviderInput {
    pub name: String,
    #[ts(type = r#""openai" | "anthropic" | null"#)]
    pub wire: Option<Wire>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub models: Vec<String>,
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// A new key; absent or null keeps the stored one.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Forget the stored key (keyring and file).
    #[serde(default)]
    pub clear_key: bool,
}

/// What `settings_save` changes; absent parts are left as they are.
#[derive(Clone, Debug, Default, Deserialize, TS)]
pub struct SettingsChange {
    /// Add or update one provider.
    #[serde(default)]
    #[ts(optional)]
    pub provider: Option<ProviderInput>,
    /// Remove these providers from the file and their keys from the keyring (a built-in one
    /// goes back to its defaults).
    #[serde(default)]
    #[ts(optional = nullable)]
    pub remove: Vec<String>,
    /// The default model (`provider:name`); `""` clears it; absent leaves it.
    #[serde(default)]
    #[ts(optional)]
    pub default_model: Option<String>,
}

#[derive(Debug, PartialEq, Serialize)]
pub struct SaveOutcome {
    /// Where a new key went.
    pub key_stored: Option<KeySource>,
    /// What to tell the user (where the key went, why not the keyring).
    pub message: Option<String>,
}

/// What `settings_save` answers.
#[derive(Debug, Serialize, TS)]
pub struct SaveResult {
    settings: Settings,
    /// Where a new key went.
    key_stored: Option<KeySource>,
    /// What to tell the user (e.g. the keyring was unavailable and the key went to the file).
    message: Option<String>,
}

/// A provider name usable in `provider:model`.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "provider name `{name}`: use letters, digits, `-`, `_` or `.` (it is the part before `:` in `provider:model`)"
        ))
    }
}

/// An `http(s)://host...` URL, without a trailing slash.
pub fn check_base_url(url: &str) -> Result<String, String> {
    let u = url.trim();
    let rest = u
        .strip_prefix("https://")
        .or_else(|| u.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') && !r.contains(char::is_whitespace) => {
            Ok(u.trim_end_matches('/').to_string())
        }
        _ => Err(format!(
            "base URL `{u}`: must start with http:// or https:// and name a host, e.g. http://127.0.0.1:8080/v1"
        )),
    }
}

/// Apply `change` to `file`, storing a new key in `store` (or, when the store is unavailable,
/// in the file). `path` is only named in messages.
pub fn apply_change(
    file: &mut ProviderFile,
    change: &SettingsChange,
    store: &dyn KeyStore,
    path: &Path,
) -> Result<SaveOutcome, String> {
    let builtin = builtin_config();
    let mut outcome = SaveOutcome {
        key_stored: None,
        message: None,
    };
    if let Some(p) = &change.provider {
        let name = p.name.trim();
        check_name(name)?;
        let default = builtin.endpoint(name).ok();
        let base_url = match p
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(u) => Some(check_base_url(u)?),
            None if default.is_none() => {
                return Err(format!(
                    "provider `{name}` needs a base URL (it is not built in), e.g. http://127.0.0.1:8080/v1"
                ));
            }
            None => None,
        };
        let wire = match (p.wire, &default) {
            (Some(w), _) => w,
            (None, Some(d)) => d.wire,
            (None, None) => {
                return Err(format!(
                    "provider `{name}`: choose the wire format (openai or anthropic)"
                ));
            }
        };
        if let Some(t) = p.timeout_s
            && !(t > 0.0 && t <= 3600.0)
        {
            return Err(format!(
                "provider `{name}`: the timeout must be between 1 and 3600 seconds"
            ));
        }
        let mut entry = file.providers.get(name).cloned().unwrap_or_default();
        entry.wire = if default.as_ref().is_some_and(|d| d.wire == wire) {
            None
        } else {
            Some(wire)
        };
        entry.base_url = base_url.filter(|u| default.as_ref().is_none_or(|d| &d.base_url != u));
        let mut models: Vec<String> = Vec::new();
        for m in p.models.iter().map(|m| m.trim()).filter(|m| !m.is_empty()) {
            if !models.iter().any(|x| x == m) {
                models.push(m.to_string());
            }
        }
        entry.models = models;
        entry.timeout_s = p.timeout_s;
        let new_key = p
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty());
        if let Some(key) = new_key {
            match store.set(name, key) {
                Ok(()) => {
                    entry.api_key = None;
                    outcome.key_stored = Some(KeySource::Keyring);
                    outcome.message =
                        Some(format!("The key of `{name}` was saved in the OS keyring."));
                }
                Err(why) => {
                    entry.api_key = Some(key.to_string());
                    outcome.key_stored = Some(KeySource::File);
                    outcome.message = Some(format!(
                        "The OS keyring is not available ({why}); the key of `{name}` was saved in {}, readable by you only.",
                        path.display()
                    ));
                }
            }
        } else if p.clear_key {
            let _ = store.delete(name);
            entry.api_key = None;
        }
        if entry == ProviderEntry::default() && default.is_some() {
            file.providers.remove(name);
        } else {
            file.providers.insert(name.to_string(), entry);
        }
    }
    for name in &change.remove {
        file.providers.remove(name);
        let _ = store.delete(name);
    }
    if let Some(m) = &change.default_model {
        let m = m.trim();
        if m.is_empty() {
            file.default_model = None;
        } else {
            let r = ModelRef::parse(m);
            if r.provider.is_empty() || r.name.is_empty() {
                return Err(format!(
                    "default model `{m}`: write it as provider:model, e.g. openai:gpt-4o-mini"
                ));
            }
            file.default_model = Some(r.to_string());
        }
    }
    Ok(outcome)
}

// ------------------------------------------------------------------------------------------------
// Testing a provider

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ProbeStatus {
    /// The server answered (the key works, or none is needed).
    Reachable,
    /// The server answered 401/403.
    AuthError,
    /// No connection, or no answer within 5 s.
    Unreachable,
    /// Another HTTP error.
    Error,
}

/// What `settings_test_provider` answers.
#[derive(Debug, Serialize, TS)]
pub struct ProbeResult {
    status: ProbeStatus,
    message: String,
    /// Models the server lists (when it does).
    models: Vec<String>,
}

/// The model-list URL of a server.
pub fn models_url(wire: Wire, base: &str) -> String {
    let base = base.trim_end_matches('/');
    match wire {
        Wire::Openai => format!("{base}/models"),
        Wire::Anthropic => format!("{}/v1/models", base.strip_suffix("/v1").unwrap_or(base)),
    }
}

fn snippet(s: &str) -> String {
    let t: String = s.trim().chars().take(200).collect();
    if s.trim().chars().count() > 200 {
        format!("{t}…")
    } else {
        t
    }
}

/// What an HTTP answer to the model-list request means.
pub fn classify(status: u16, body: &str, url: &str) -> ProbeResult {
    let mut models: Vec<String> = Vec::new();
    if (200..300).contains(&status) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
            let list = v
                .get("data")
                .or_else(|| v.get("models"))
                .and_then(|d| d.as_array())
                .cloned()
                .unwrap_or_default();
            models = list
                .iter()
                .filter_map(|m| {
                    m.get("id")
                        .or_else(|| m.get("name"))
                        .and_then(|x| x.as_str())
                        .map(str::to_string)
                })
                .take(500)
                .collect();
        }
        let message = if models.is_empty() {
            format!("{url} answered {status}")
        } else {
            format!(
                "{url} answered {status}: {} model{} listed",
                models.len(),
                if models.len() == 1 { "" } else { "s" }
            )
        };
        return ProbeResult {
            status: ProbeStatus::Reachable,
            message,
            models,
        };
    }
    match status {
        401 | 403 => ProbeResult {
            status: ProbeStatus::AuthError,
            message: format!("{url} refused the key ({status}): {}", snippet(body)),
            models,
        },
        404 | 405 => ProbeResult {
            status: ProbeStatus::Reachable,
            message: format!(
                "the server answers but does not list models at {url} ({status}); calls may still work"
            ),
            models,
        },
        _ => ProbeResult {
            status: ProbeStatus::Error,
            message: format!("{url} answered {status}: {}", snippet(body)),
            models,
        },
    }
}

/// GET the model list of a server (5 s timeout), with its key when there is one.
pub fn probe(wire: Wire, base: &str, key: Option<&str>) -> ProbeResult {
    let url = models_url(wire, base);
    let mut req = switchyard::llm::http::client()
        .get(&url)
        .timeout(PROBE_TIMEOUT);
    match wire {
        Wire::Openai => {
            if let Some(k) = key {
                req = req.header("authorization", format!("Bearer {k}"));
            }
        }
        Wire::Anthropic => {
            req = req.header("anthropic-version", "2023-06-01");
            if let Some(k) = key {
                req = req.header("x-api-key", k);
            }
        }
    }
    let out = switchyard::rt::block_on_until(
        async move {
            let resp = req.send().await.map_err(|e| switchyard::llm::http::error_chain(&e))?;
            let status = resp.status().as_u16();
            let body = resp.text().await.unwrap_or_default();
            Ok::<_, String>((status, body))
        },
        None,
        Some(std::time::Instant::now() + PROBE_TIMEOUT + Duration::from_secs(1)),
    );
    match out {
        Ok(Ok((status, body))) => classify(status, &body, &url),
        Ok(Err(e)) => ProbeResult {
            status: ProbeStatus::Unreachable,
            message: format!("{url}: {e}"),
            models: Vec::new(),
        },
        Err(_) => ProbeResult {
            status: ProbeStatus::Unreachable,
            message: format!("{url}: no answer within {} s", PROBE_TIMEOUT.as_secs()),
            models: Vec::new(),
        },
    }
}


// ------------------------------------------------------------------------------------------------
// The models a document names (the live run configuration's model picker)

#[derive(Debug, Serialize, TS)]
pub struct DocModel {
    /// `provider:name`.
    model: String,
    /// Where the document names it (`agent.yaml: llm \`gpt\``).
    origin: String,
    /// The provider is known and has a key (or needs none).
    ready: bool,
    /// Why it cannot be called (the run would refuse to start with this message).
    problem: Option<String>,
}

/// What `llm_models` answers.
#[derive(Debug, Serialize, TS)]
pub struct ModelsInfo {
    models: Vec<DocModel>,
    /// The configured default model (`SWITCHYARD_MODEL`, else the file's), for nodes that
    /// name none.
    default_model: Option<String>,
    /// Models to offer as a run's default: the default, the document's, and every provider's
    /// `models` list, each once.
    choices: Vec<String>,
}

pub fn models_info(cfg: &LlmConfig, used: &[(ModelRef, String)]) -> ModelsInfo {
    let models: Vec<DocModel> = used
        .iter()
        .map(|(m, origin)| {
            let problem = cfg.check(m).err();
            DocModel {
                model: m.to_string(),
                origin: origin.clone(),
                ready: problem.is_none(),
                problem,
            }
        })
        .collect();
    let default_model = cfg.default_model().map(|m| m.to_string());
    let mut choices: Vec<String> = Vec::new();
    let mut add = |m: String| {
        if !m.is_empty() && !choices.contains(&m) {
            choices.push(m);
        }
    };
    if let Some(d) = &default_model {
        add(d.clone());
    }
    for m in &models {
        add(m.model.clone());
    }
    for (name, entry) in &cfg.file.providers {
        for m in &entry.models {
            add(format!("{name}:{m}"));
        }
    }
    ModelsInfo {
        models,
        default_model,
        choices,
    }
}

// ------------------------------------------------------------------------------------------------
// Commands

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Res<T> {
    match tauri::async_runtime::spawn_blocking(f).await {
        Ok(r) => r.map_err(CmdError::new),
        Err(e) => Err(CmdError::new(format!(
            "internal error in the settings request: {e}"
        ))),
    }
}

fn process_env() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

fn provider_file() -> Result<PathBuf, String> {
    LlmConfig::default_path().ok_or_else(|| {
        "no place for the provider file: set XDG_CONFIG_HOME, HOME or SWITCHYARD_PROVIDERS"
            .to_string()
    })
}

/// Providers, keys (where they come from, masked), the default model, the keyring's state.
#[tauri::command]
pub async fn settings_get() -> Res<Settings> {
    blocking(|| {
        os_keyring().reset();
        let path = LlmConfig::default_path();
        Ok(read_settings(path.as_deref(), process_env(), os_keyring()))
    })
    .await
}

/// Apply one change (a provider added or edited, providers removed, the default model) and
/// write the provider file; a new key goes to the keyring, else to the file (and says so).
#[tauri::command]
pub async fn settings_save(change: SettingsChange) -> Res<SaveResult> {
    blocking(move || {
        let path = provider_file()?;
        let cfg = LlmConfig::load(Some(&path), BTreeMap::new())
            .map_err(|e| format!("{e}\nFix or remove the file first: Settings does not overwrite a file it cannot read."))?;
        let mut file = cfg.file;
        let outcome = apply_change(&mut file, &change, os_keyring(), &path)?;
        LlmConfig::new(file, BTreeMap::new()).save(&path)?;
        let settings = read_settings(Some(&path), process_env(), os_keyring());
        Ok(SaveResult { settings, key_stored: outcome.key_stored, message: outcome.message })
    })
    .await
}

/// A cheap request to the provider's model list (5 s timeout) with the form's values, falling
/// back to the saved ones: reachable / auth error / unreachable.
#[tauri::command]
pub async fn settings_test_provider(provider: ProviderInput) -> Res<ProbeResult> {
    blocking(move || test_provider(provider)).await
}

/// The Settings probe: the form's values, else the saved ones as every live run resolves them
/// (`launch::live_config`: the provider file, the OS keyring, the environment).
fn test_provider(provider: ProviderInput) -> Result<ProbeResult, String> {
    test_provider_with(provider, switchyard::run::launch::live_config().unwrap_or_default())
}

/// [`test_provider`] against a given configuration. A saved key goes only to the saved base URL:
/// a form that changed the URL without typing a key probes without one (a page could otherwise
/// ask the shell to send the saved key anywhere).
fn test_provider_with(provider: ProviderInput, cfg: LlmConfig) -> Result<ProbeResult, String> {
    let name = provider.name.trim().to_string();
    let ep = cfg.endpoint(&name).ok();
    let wire = provider
        .wire
        .or(ep.as_ref().map(|e| e.wire))
        .ok_or_else(|| format!("provider `{name}`: choose the wire format first"))?;
    let base = match provider
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(u) => check_base_url(u)?,
        None => ep
            .as_ref()
            .map(|e| e.base_url.clone())
            .ok_or_else(|| format!("provider `{name}`: enter a base URL first"))?,
    };
    let key = match provider
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        Some(k) => Some(k.to_string()),
        None if provider.clear_key => None,
        None => ep.filter(|e| same_base(&e.base_url, &base)).and_then(|e| e.api_key),
    };
    Ok(probe(wire, &base, key.as_deref()))
}

/// Whether two base URLs are the same endpoint (trailing slashes and letter case of scheme and
/// host aside).
fn same_base(a: &str, b: &str) -> bool {
    let norm = |u: &str| {
        let u = u.trim().trim_end_matches('/');
        match u.split_once("://") {
            Some((scheme, rest)) => {
                let end = rest.find('/').unwrap_or(rest.len());
                format!("{}://{}{}", scheme.to_ascii_lowercase(), rest[..end].to_ascii_lowercase(), &rest[end..])
            }
            None => u.to_string(),
        }
    };
    norm(a) == norm(b)
}

/// The models the open document names, whether each can be called, and the models to offer
/// as a run's default.
#[tauri::command]
pub async fn llm_models(app: AppHandle) -> Res<ModelsInfo> {
    let (path, text) = crate::commands::with_session(&app, "listing the document's models", |s| {
        Ok((s.path().to_path_buf(), s.text().to_string()))
    })?;
    blocking(move || {
        let doc = switchyard::doc::load_str(&path, &text);
        let cfg = switchyard::run::launch::live_config()?;
        Ok(models_info(&cfg, &switchyard::llm::models_used(&doc)))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A key store in memory; `down` makes every call fail like a missing secret service.
    #[derive(Default)]
    struct MemStore {
        keys: Mutex<BTreeMap<String, String>>,
        down: bool,
    }

    impl KeyStore for MemStore {
        fn get(&self, p: &str) -> Result<Option<String>, String> {
            if self.down {
                return Err("no secret service".into());
            }
            Ok(self.keys.lock().unwrap().get(p).cloned())
        }
        fn set(&self, p: &str, k: &str) -> Result<(), String> {
            if self.down {
                return Err("no secret service".into());
            }
            self.keys.lock().unwrap().insert(p.into(), k.into());
            Ok(())
        }
        fn delete(&self, p: &str) -> Result<(), String> {
            if self.down {
                return Err("no secret service".into());
            }
            self.keys.lock().unwrap().remove(p);
            Ok(())
        }
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("switchyard-settings-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.join("providers.yaml")
    }

    fn provider<'a>(s: &'a Settings, name: &str) -> &'a ProviderInfo {
        s.providers
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no provider {name}"))
    }

    /// A server on 127.0.0.1 that answers one request with `status` and a JSON `body`, and hands
    /// back the request it got (lower-cased for header checks where the caller wants).
    fn one_request(status: &'static str, body: &'static str) -> (std::net::SocketAddr, std::thread::JoinHandle<String>) {
        use std::io::{Read, Write};
        let srv = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = srv.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut c, _) = srv.accept().unwrap();
            let mut buf = [0u8; 4096];
            let n = c.read(&mut buf).unwrap();
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            String::from_utf8_lossy(&buf[..n]).to_string()
        });
        (addr, t)
    }

    #[test]
    fn keys_are_masked_to_a_prefix_and_the_last_four_characters() {
        assert_eq!(mask_key("sk-proj-abcdefghijklmnop9f3a"), "sk-…9f3a");
        assert_eq!(mask_key("sk-ant-api03-aaaaaaaaaaaaaaaaaa1234"), "sk-…1234");
        assert_eq!(mask_key("abcdefghijklmnopqrst"), "…qrst");
        // Short keys show less: never most of the key.
        assert_eq!(mask_key("abcdefghij"), "…ij");
        assert_eq!(mask_key("abc"), "…");
        assert_eq!(mask_key("  sk-xxxxxxxxxxxxxxxxxxxxwxyz \n"), "sk-…wxyz");
    }

    #[test]
    fn keyring_keys_reach_the_engine_below_the_environment() {
        let path = scratch("merge");
        std::fs::write(
            &path,
            "providers:\n  local: {wire: openai, base_url: 'http://127.0.0.1:9/v1'}\n",
        )
        .unwrap();
        let store = MemStore::default();
        store.set("openai", "sk-ring-0000000000001111").unwrap();
        store.set("local", "sk-local-000000000002222").unwrap();
        let (cfg, down) = load_config(Some(&path), env(&[]), &store).unwrap();
        assert_eq!(down, None);
        assert_eq!(
            cfg.endpoint("openai").unwrap().api_key.as_deref(),
            Some("sk-ring-0000000000001111")
        );
        assert_eq!(
            cfg.endpoint("local").unwrap().api_key.as_deref(),
            Some("sk-local-000000000002222")
        );
        let s = describe(&cfg, Some(&path), None, down);
        let o = provider(&s, "openai");
        assert_eq!(
            (o.key_source, o.key_masked.as_deref()),
            (Some(KeySource::Keyring), Some("sk-…1111"))
        );
        assert!(o.builtin && !o.configured);
        let l = provider(&s, "local");
        assert!(!l.builtin && l.configured);
        assert_eq!(l.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        // The environment wins and says so.
        let (cfg, _) = load_config(
            Some(&path),
            env(&[("OPENAI_API_KEY", "sk-env-00000000000003333")]),
            &store,
        )
        .unwrap();
        let s = describe(&cfg, Some(&path), None, None);
        let o = provider(&s, "openai");
        assert_eq!(
            (o.key_source, o.key_masked.as_deref()),
            (Some(KeySource::Env), Some("sk-…3333"))
        );
        assert_eq!(o.key_var, "OPENAI_API_KEY");
        // No key anywhere.
        assert_eq!(provider(&s, "anthropic").key_source, None);
        // Nothing in the page's answer holds a whole key.
        let json = serde_json::to_string(&s).unwrap();
        assert!(
            !json.contains("sk-env-00000000000003333")
                && !json.contains("sk-local-000000000002222"),
            "{json}"
        );
    }

    #[test]
    fn a_new_key_goes_to_the_keyring_and_out_of_the_file() {
        let path = scratch("ring");
        let store = MemStore::default();
        let mut file = ProviderFile::default();
        file.providers.insert(
            "openai".into(),
            ProviderEntry {
                api_key: Some("sk-old".into()),
                ..Default::default()
            },
        );
        let change = SettingsChange {
            provider: Some(ProviderInput {
                name: "openai".into(),
                wire: Some(Wire::Openai),
                base_url: Some("https://api.openai.com/v1/".into()),
                api_key: Some(" sk-new-key-1234567890 ".into()),
                ..Default::default()
            }),
            default_model: Some("openai:gpt-4o-mini".into()),
            ..Default::default()
        };
        let out = apply_change(&mut file, &change, &store, &path).unwrap();
        assert_eq!(out.key_stored, Some(KeySource::Keyring));
        assert_eq!(
            store.get("openai").unwrap().as_deref(),
            Some("sk-new-key-1234567890")
        );
        // Only defaults left: the built-in's entry is dropped; the old file key is gone.
        assert!(!file.providers.contains_key("openai"), "{file:?}");
        assert_eq!(file.default_model.as_deref(), Some("openai:gpt-4o-mini"));
    }

    #[test]
    fn without_a_keyring_the_key_goes_to_a_private_file_and_the_user_is_told() {
        let path = scratch("fallback");
        let store = MemStore {
            down: true,
            ..Default::default()
        };
        let mut file = ProviderFile::default();
        let change = SettingsChange {
            provider: Some(ProviderInput {
                name: "mybox".into(),
                wire: Some(Wire::Openai),
                base_url: Some("http://127.0.0.1:8080/v1".into()),
                models: vec!["qwen".into(), " qwen ".into(), "".into(), "llama".into()],
                timeout_s: Some(30.0),
                api_key: Some("sk-mybox-secret-5678".into()),
                clear_key: false,
            }),
            ..Default::default()
        };
        let out = apply_change(&mut file, &change, &store, &path).unwrap();
        assert_eq!(out.key_stored, Some(KeySource::File));
        let msg = out.message.unwrap();
        assert!(
            msg.contains("not available")
                && msg.contains(&path.display().to_string())
                && msg.contains("readable by you only"),
            "{msg}"
        );
        let e = &file.providers["mybox"];
        assert_eq!(e.api_key.as_deref(), Some("sk-mybox-secret-5678"));
        assert_eq!(e.models, vec!["qwen", "llama"]);
        assert_eq!(
            (e.wire, e.base_url.as_deref(), e.timeout_s),
            (
                Some(Wire::Openai),
                Some("http://127.0.0.1:8080/v1"),
                Some(30.0)
            )
        );
        LlmConfig::new(file, BTreeMap::new()).save(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        // Read back: the key is found in the file and shown masked, the keyring reported down.
        let s = read_settings(Some(&path), env(&[]), &store);
        let p = provider(&s, "mybox");
        assert_eq!(
            (p.key_source, p.key_masked.as_deref()),
            (Some(KeySource::File), Some("sk-…5678"))
        );
        assert!(!s.keyring.available && s.keyring.message.as_deref() == Some("no secret service"));
        // Clearing the key and removing the provider.
        let mut file = LlmConfig::load(Some(&path), env(&[])).unwrap().file;
        let clear = SettingsChange {
            provider: Some(ProviderInput {
                name: "mybox".into(),
                wire: Some(Wire::Openai),
                base_url: Some("http://127.0.0.1:8080/v1".into()),
                clear_key: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        apply_change(&mut file, &clear, &store, &path).unwrap();
        assert_eq!(file.providers["mybox"].api_key, None);
        apply_change(
            &mut file,
            &SettingsChange {
                remove: vec!["mybox".into()],
                ..Default::default()
            },
            &store,
            &path,
        )
        .unwrap();
        assert!(file.providers.is_empty());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn bad_input_is_refused_with_what_to_do() {
        let path = scratch("bad");
        let store = MemStore::default();
        let mut file = ProviderFile::default();
        let with = |p: ProviderInput| SettingsChange {
            provider: Some(p),
            ..Default::default()
        };
        let e = apply_change(
            &mut file,
            &with(ProviderInput {
                name: "box".into(),
                wire: Some(Wire::Openai),
                base_url: Some("127.0.0.1:8080".into()),
                ..Default::default()
            }),
            &store,
            &path,
        )
        .unwrap_err();
        assert!(e.contains("http://"), "{e}");
        let e = apply_change(
            &mut file,
            &with(ProviderInput {
                name: "box".into(),
                wire: Some(Wire::Openai),
                ..Default::default()
            }),
            &store,
            &path,
        )
        .unwrap_err();
        assert!(e.contains("needs a base URL"), "{e}");
        let e = apply_change(
            &mut file,
            &with(ProviderInput {
                name: "my box:1".into(),
                wire: Some(Wire::Openai),
                base_url: Some("http://x".into()),
                ..Default::default()
            }),
            &store,
            &path,
        )
        .unwrap_err();
        assert!(e.contains("provider name"), "{e}");
        let e = apply_change(
            &mut file,
            &with(ProviderInput {
                name: "openai".into(),
                timeout_s: Some(0.0),
                ..Default::default()
            }),
            &store,
            &path,
        )
        .unwrap_err();
        assert!(e.contains("timeout"), "{e}");
        let e = apply_change(
            &mut file,
            &SettingsChange {
                default_model: Some("openai:".into()),
                ..Default::default()
            },
            &store,
            &path,
        )
        .unwrap_err();
        assert!(e.contains("provider:model"), "{e}");
        assert_eq!(file, ProviderFile::default(), "nothing applied");
        assert_eq!(
            check_base_url("https://api.example.com/v1/").unwrap(),
            "https://api.example.com/v1"
        );
    }

    #[test]
    fn model_list_answers_are_classified() {
        assert_eq!(
            models_url(Wire::Openai, "http://h/v1/"),
            "http://h/v1/models"
        );
        assert_eq!(
            models_url(Wire::Anthropic, "https://api.anthropic.com"),
            "https://api.anthropic.com/v1/models"
        );
        assert_eq!(
            models_url(Wire::Anthropic, "https://x/v1"),
            "https://x/v1/models"
        );
        let ok = classify(
            200,
            r#"{"data":[{"id":"gpt-4o"},{"id":"gpt-4o-mini"}]}"#,
            "u",
        );
        assert_eq!(
            (ok.status, ok.models.clone()),
            (
                ProbeStatus::Reachable,
                vec!["gpt-4o".to_string(), "gpt-4o-mini".to_string()]
            )
        );
        assert_eq!(
            classify(401, r#"{"error":"bad key"}"#, "u").status,
            ProbeStatus::AuthError
        );
        assert_eq!(classify(404, "", "u").status, ProbeStatus::Reachable);
        assert_eq!(classify(500, "boom", "u").status, ProbeStatus::Error);
    }

    #[test]
    fn probing_a_dead_port_is_unreachable_and_a_live_server_is_classified() {
        // A port nobody listens on.
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = dead.local_addr().unwrap().port();
        drop(dead);
        let r = probe(Wire::Openai, &format!("http://127.0.0.1:{port}/v1"), None);
        assert_eq!(r.status, ProbeStatus::Unreachable, "{}", r.message);
        // A server that refuses the key.
        let (addr, t) = one_request("401 Unauthorized", r#"{"error":{"message":"invalid api key"}}"#);
        let r = probe(Wire::Openai, &format!("http://{addr}/v1"), Some("sk-test"));
        let req = t.join().unwrap();
        assert!(
            req.starts_with("GET /v1/models")
                && req
                    .to_ascii_lowercase()
                    .contains("authorization: bearer sk-test"),
            "{req}"
        );
        assert_eq!(r.status, ProbeStatus::AuthError, "{}", r.message);
        assert!(r.message.contains("invalid api key"), "{}", r.message);
    }

    #[test]
    fn the_document_s_models_say_whether_they_can_be_called() {
        let cfg = LlmConfig::new(
            ProviderFile {
                default_model: Some("local:qwen".into()),
                providers: [(
                    "local".to_string(),
                    ProviderEntry {
                        wire: Some(Wire::Openai),
                        base_url: Some("http://127.0.0.1:1/v1".into()),
                        models: vec!["qwen".into(), "llama".into()],
                        ..Default::default()
                    },
                )]
                .into(),
            },
            env(&[]),
        );
        let used = vec![
            (
                ModelRef::parse("openai:gpt-4o"),
                "agent.yaml: llm `gpt`".to_string(),
            ),
            (ModelRef::parse("local:qwen"), "x".to_string()),
        ];
        let info = models_info(&cfg, &used);
        assert!(
            !info.models[0].ready
                && info.models[0]
                    .problem
                    .as_deref()
                    .unwrap()
                    .contains("OPENAI_API_KEY")
        );
        assert!(info.models[1].ready);
        assert_eq!(info.default_model.as_deref(), Some("local:qwen"));
        assert_eq!(
            info.choices,
            vec!["local:qwen", "openai:gpt-4o", "local:llama"]
        );
    }

    #[test]
    fn a_saved_key_is_sent_only_to_the_saved_base_url() {
        let serve = || {
            let (addr, t) = one_request("200 OK", r#"{"data":[]}"#);
            (addr, std::thread::spawn(move || t.join().unwrap().to_ascii_lowercase()))
        };
        let (saved, t1) = serve();
        let (other, t2) = serve();
        let cfg = LlmConfig::new(
            ProviderFile {
                providers: [(
                    "mine".to_string(),
                    ProviderEntry {
                        wire: Some(Wire::Openai),
                        base_url: Some(format!("http://{saved}/v1/")),
                        api_key: Some("sk-saved-key-0123456789".into()),
                        ..Default::default()
                    },
                )]
                .into_iter()
                .collect(),
                ..Default::default()
            },
            BTreeMap::new(),
        );
        let form = |base: Option<String>| ProviderInput { name: "mine".into(), base_url: base, ..Default::default() };
        // The saved URL (as saved, or written differently): the saved key goes along.
        test_provider_with(form(Some(format!("http://{saved}/v1"))), cfg.clone()).unwrap();
        assert!(t1.join().unwrap().contains("authorization: bearer sk-saved-key-0123456789"));
        // Another URL: probed without the saved key.
        test_provider_with(form(Some(format!("http://{other}/v1"))), cfg).unwrap();
        let req = t2.join().unwrap();
        assert!(!req.contains("authorization"), "the saved key went to another server: {req}");
    }

    /// The Settings probe resolves a saved key like every live run: a key only in the OS keyring
    /// reaches the provider. Needs a running secret service (`./dev test` runs `--ignored` tests
    /// of this binary under dbus-run-session with gnome-keyring, see `run_keyring_tests`).
    #[test]
    #[ignore = "needs a running secret service; ./dev test runs it under dbus-run-session with gnome-keyring"]
    fn the_settings_probe_uses_a_key_that_is_only_in_the_os_keyring() {
        const PROVIDER: &str = "syprobe";
        const KEY: &str = "sk-syprobe-only-in-the-keyring-41c9";
        const VAR: &str = "SYPROBE_KEYRING_API_KEY";
        let store = os_keyring();
        store.delete(PROVIDER).unwrap_or_else(|e| panic!("the OS keyring is not available: {e}"));
        store.set(PROVIDER, KEY).unwrap();

        let (addr, t) = one_request("200 OK", r#"{"data":[{"id":"m1"}]}"#);
        let dir = std::env::temp_dir().join(format!("switchyard-probe-keyring-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let providers = dir.join("providers.yaml");
        std::fs::write(
            &providers,
            format!("providers:\n  {PROVIDER}:\n    wire: openai\n    base_url: \"http://{addr}/v1\"\n    api_key_env: {VAR}\n    models: [m1]\n"),
        )
        .unwrap();
        // The only test of this binary that runs under `--ignored`, so nothing reads the
        // environment concurrently.
        unsafe {
            std::env::set_var("SWITCHYARD_PROVIDERS", &providers);
            std::env::remove_var(VAR);
            std::env::remove_var("SWITCHYARD_KEYRING");
        }
        let form = ProviderInput {
            name: PROVIDER.into(),
            wire: None,
            base_url: None,
            api_key: None,
            clear_key: false,
            ..Default::default()
        };
        let r = test_provider(form).unwrap();
        let req = t.join().unwrap();
        store.delete(PROVIDER).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            req.to_ascii_lowercase().contains(&format!("authorization: bearer {KEY}")),
            "the probe did not send the keyring's key: {req}"
        );
        assert_eq!(r.status, ProbeStatus::Reachable, "{}", r.message);
    }
}
