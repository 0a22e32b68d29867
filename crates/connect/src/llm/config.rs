//! Where live LLM calls go: one endpoint per provider name, from built-in defaults, the user's
//! provider file and the environment.
//!
//! Provider names are the ones documents use: sherma `llms[].provider` (`openai`,
//! `anthropic`) and the part before `:` of a Loki `model: provider:name` (Loki client names:
//! `openai`, `claude`, `ollama`, `openrouter`, ...). Each resolves to an [`Endpoint`]: the wire
//! format (OpenAI chat completions or Anthropic Messages), the base URL and the API key.
//!
//! Precedence, lowest first: built-in defaults; the provider file
//! (`$SWITCHYARD_PROVIDERS`, else `<config dir>/switchyard/providers.yaml`); keys a front end
//! hands over from its own store ([`LlmConfig::with_keys`]: the desktop app's OS keyring); environment
//! variables (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`,
//! and `<NAME>_API_KEY` / `<NAME>_BASE_URL` for any other provider name). The file:
//!
//! ```yaml
//! default_model: openai:gpt-4o-mini     # for Loki nodes and agents that name no model
//! providers:
//!   openai: { api_key: sk-... }
//!   local:  { wire: openai, base_url: "http://127.0.0.1:8080/v1" }   # llama.cpp, vLLM, ...
//!   claude: { wire: anthropic, api_key_env: MY_CLAUDE_KEY }
//! ```

use runtime::provider::ModelRef;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The two wire formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wire {
    /// OpenAI chat completions (`POST {base}/chat/completions`): OpenAI, Ollama, vLLM,
    /// llama.cpp server, OpenRouter, Groq, ...
    Openai,
    /// Anthropic Messages (`POST {base}/v1/messages`).
    Anthropic,
}

/// One provider as the user configured it (every field optional: built-ins fill the gaps).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<Wire>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The key itself (the file is then kept readable by the user only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The environment variable holding the key (default `<NAME>_API_KEY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Per-request timeout in seconds (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// Models offered in the app's model picker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
}

/// The provider file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderEntry>,
}

/// Where one provider's calls go.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub provider: String,
    pub wire: Wire,
    /// Without a trailing slash.
    pub base_url: String,
    pub api_key: Option<String>,
    /// Where the key is looked for, for messages (`OPENAI_API_KEY`).
    pub key_source: String,
    /// Whether the endpoint works without a key (local servers).
    pub key_optional: bool,
    pub timeout: Duration,
}

/// Built-in providers: (name, wire, base URL, key variable, key optional).
const BUILTIN: &[(&str, Wire, &str, &str, bool)] = &[
    ("openai", Wire::Openai, "https://api.openai.com/v1", "OPENAI_API_KEY", false),
    ("anthropic", Wire::Anthropic, "https://api.anthropic.com", "ANTHROPIC_API_KEY", false),
    ("claude", Wire::Anthropic, "https://api.anthropic.com", "ANTHROPIC_API_KEY", false),
    ("openrouter", Wire::Openai, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", false),
    ("groq", Wire::Openai, "https://api.groq.com/openai/v1", "GROQ_API_KEY", false),
    ("deepseek", Wire::Openai, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", false),
    ("mistral", Wire::Openai, "https://api.mistral.ai/v1", "MISTRAL_API_KEY", false),
    ("ollama", Wire::Openai, "http://localhost:11434/v1", "OLLAMA_API_KEY", true),
    ("vllm", Wire::Openai, "http://localhost:8000/v1", "VLLM_API_KEY", true),
    ("llamacpp", Wire::Openai, "http://localhost:8080/v1", "LLAMACPP_API_KEY", true),
    ("lmstudio", Wire::Openai, "http://localhost:1234/v1", "LMSTUDIO_API_KEY", true),
];

/// The environment variable prefix of a provider name (`open-router` → `OPEN_ROUTER`);
/// `claude` shares Anthropic's variables.
fn env_prefix(name: &str) -> String {
    if name == "claude" {
        return "ANTHROPIC".into();
    }
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect()
}

/// Where a provider's API key comes from (highest precedence first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyOrigin {
    /// The environment variable named by [`Endpoint::key_source`].
    Env,
    /// A key the front end handed over ([`LlmConfig::with_keys`]: the app's OS keyring).
    Store,
    /// `api_key` in the provider file.
    File,
}

/// The resolved configuration.
#[derive(Clone, Debug, Default)]
pub struct LlmConfig {
    pub file: ProviderFile,
    /// The provider file that was read (or would be written).
    pub path: Option<PathBuf>,
    env: BTreeMap<String, String>,
    /// Keys by provider name from the front end's own store (the desktop app's OS keyring):
    /// below the environment, above the file.
    keys: BTreeMap<String, String>,
}

impl LlmConfig {
    /// The default provider file: `$SWITCHYARD_PROVIDERS`, else
    /// `$XDG_CONFIG_HOME/switchyard/providers.yaml` (`~/.config/...`).
    pub fn default_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("SWITCHYARD_PROVIDERS") {
            return Some(PathBuf::from(p));
        }
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(base.join("switchyard").join("providers.yaml"))
    }

    /// `path` (missing is fine; unreadable or malformed is an error naming the file) and the
    /// given environment.
    pub fn load(path: Option<&Path>, env: BTreeMap<String, String>) -> Result<LlmConfig, String> {
        let file = match path {
            Some(p) if p.exists() => {
                let text = std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
                if text.trim().is_empty() {
                    ProviderFile::default()
                } else {
                    serde_yaml::from_str::<ProviderFile>(&text).map_err(|e| {
                        format!(
                            "{}: {e}\nhint: the file holds `default_model: provider:name` and `providers: {{name: {{wire, base_url, api_key, api_key_env, timeout_s, models}}}}`",
                            p.display()
                        )
                    })?
                }
            }
            _ => ProviderFile::default(),
        };
        Ok(LlmConfig { file, path: path.map(Path::to_path_buf), env, keys: BTreeMap::new() })
    }

    /// A configuration from parts (tests, the app's settings page).
    pub fn new(file: ProviderFile, env: BTreeMap<String, String>) -> LlmConfig {
        LlmConfig { file, path: None, env, keys: BTreeMap::new() }
    }

    /// Add API keys by provider name from a store the front end keeps (the desktop app's OS
    /// keyring). They are used when the environment holds none, before a key in the file.
    /// Blank keys are ignored.
    pub fn with_keys(mut self, keys: BTreeMap<String, String>) -> LlmConfig {
        self.keys.extend(keys.into_iter().filter(|(_, v)| !v.trim().is_empty()));
        self
    }

    /// The model for agents and nodes that name none, for this configuration only (a run's
    /// choice in the app): it wins over `SWITCHYARD_MODEL` and the file's `default_model`.
    pub fn with_default_model(mut self, model: &str) -> LlmConfig {
        if !model.trim().is_empty() {
            self.env.insert("SWITCHYARD_MODEL".into(), model.trim().to_string());
        }
        self
    }

    /// Where `provider`'s key comes from, when it has one.
    pub fn key_origin(&self, provider: &str) -> Option<KeyOrigin> {
        let ep = self.endpoint(provider).ok()?;
        if self.var(&ep.key_source).is_some() {
            Some(KeyOrigin::Env)
        } else if self.keys.contains_key(provider) {
            Some(KeyOrigin::Store)
        } else if ep.api_key.is_some() {
            Some(KeyOrigin::File)
        } else {
            None
        }
    }

    /// Whether the environment variable `name` is set (not blank) in this configuration.
    pub fn has_var(&self, name: &str) -> bool {
        self.var(name).is_some()
    }

    fn var(&self, name: &str) -> Option<String> {
        self.env.get(name).filter(|v| !v.trim().is_empty()).cloned()
    }

    /// The model used where a document names none: the file's `default_model`, else
    /// `$SWITCHYARD_MODEL`.
    pub fn default_model(&self) -> Option<ModelRef> {
        self.var("SWITCHYARD_MODEL").or_else(|| self.file.default_model.clone()).map(|m| ModelRef::parse(&m))
    }

    /// Every provider name known (built-in or configured), sorted.
    pub fn provider_names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILTIN.iter().map(|b| b.0.to_string()).collect();
        names.extend(self.file.providers.keys().cloned());
        names.sort();
        names.dedup();
        names
    }

    /// Where calls for `provider` go, or why they cannot go anywhere.
    pub fn endpoint(&self, provider: &str) -> Result<Endpoint, String> {
        let builtin = BUILTIN.iter().find(|b| b.0 == provider);
        let entry = self.file.providers.get(provider);
        let prefix = env_prefix(provider);
        let wire = entry.and_then(|e| e.wire).or(builtin.map(|b| b.1));
        let base = self
            .var(&format!("{prefix}_BASE_URL"))
            .or_else(|| entry.and_then(|e| e.base_url.clone()))
            .or_else(|| builtin.map(|b| b.2.to_string()));
        let (Some(wire), Some(base)) = (wire, base) else {
            let file = self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the provider file".into());
            return Err(format!(
                "unknown LLM provider `{provider}`: it is not built in ({}) and not configured\nhint: set {prefix}_BASE_URL (an OpenAI-compatible server), or add `providers: {{{provider}: {{wire: openai, base_url: ...}}}}` to {file}",
                BUILTIN.iter().map(|b| b.0).collect::<Vec<_>>().join(", ")
            ));
        };
        let key_var = entry
            .and_then(|e| e.api_key_env.clone())
            .or_else(|| builtin.map(|b| b.3.to_string()))
            .unwrap_or_else(|| format!("{prefix}_API_KEY"));
        let api_key = self
            .var(&key_var)
            .or_else(|| self.keys.get(provider).cloned())
            .or_else(|| entry.and_then(|e| e.api_key.clone()).filter(|k| !k.trim().is_empty()));
        if let Some(k) = &api_key {
            // Whatever the key's source, it never shows in events, traces or errors.
            runtime::secrets::register(&key_var, k);
        }
        let key_optional = builtin.is_some_and(|b| b.4) || (builtin.is_none() && entry.is_some_and(|e| e.api_key_env.is_none()));
        // Clamped to a day: `inf` or `1e300` would overflow a deadline.
        let timeout = entry.and_then(|e| e.timeout_s).filter(|t| *t > 0.0 && t.is_finite()).unwrap_or(120.0).min(86_400.0);
        Ok(Endpoint {
            provider: provider.to_string(),
            wire,
            base_url: base.trim_end_matches('/').to_string(),
            api_key,
            key_source: key_var,
            key_optional,
            timeout: Duration::from_secs_f64(timeout),
        })
    }

    /// Check that `model` can be called: the provider is known and has a key (unless it is a
    /// local server). The error names the variable to set.
    pub fn check(&self, model: &ModelRef) -> Result<Endpoint, String> {
        let ep = self.endpoint(&model.provider)?;
        if ep.api_key.is_none() && !ep.key_optional {
            let file = self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the provider file".into());
            return Err(format!(
                "model `{model}` needs an API key: set {} (or `api_key` under `providers: {{{}: ...}}` in {file}, or in the app's Settings)",
                ep.key_source, model.provider
            ));
        }
        Ok(ep)
    }

    /// Write the provider file (the app's settings page), readable by the user only.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_yaml::to_string(&self.file).map_err(|e| e.to_string())?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let tmp = path.with_extension("yaml.tmp");
        {
            use std::io::Write;
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(0o600);
            }
            let mut f = opts.open(&tmp).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
            f.write_all(text.as_bytes()).and_then(|_| f.sync_all()).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn builtins_take_keys_and_base_urls_from_the_environment() {
        let c = LlmConfig::new(ProviderFile::default(), env(&[("OPENAI_API_KEY", "sk-1"), ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")]));
        let ep = c.check(&ModelRef::parse("openai:gpt-4o")).unwrap();
        assert_eq!(ep.wire, Wire::Openai);
        assert_eq!(ep.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(ep.api_key.as_deref(), Some("sk-1"));
        let claude = c.endpoint("claude").unwrap();
        assert_eq!((claude.wire, claude.key_source.as_str()), (Wire::Anthropic, "ANTHROPIC_API_KEY"));
    }

    #[test]
    fn a_missing_key_names_the_variable() {
        let c = LlmConfig::new(ProviderFile::default(), env(&[]));
        let e = c.check(&ModelRef::parse("anthropic:claude-3-5-haiku")).unwrap_err();
        assert!(e.contains("ANTHROPIC_API_KEY") && e.contains("anthropic:claude-3-5-haiku"), "{e}");
        // Local servers need none.
        assert!(c.check(&ModelRef::parse("ollama:llama3")).is_ok());
    }

    #[test]
    fn keys_from_the_front_end_sit_between_the_environment_and_the_file() {
        let file = ProviderFile {
            default_model: Some("openai:gpt-4o-mini".into()),
            providers: [("openai".to_string(), ProviderEntry { api_key: Some("sk-file".into()), ..Default::default() })].into(),
        };
        let keys: BTreeMap<String, String> =
            [("openai".to_string(), "sk-ring".to_string()), ("groq".to_string(), " ".to_string())].into();
        let c = LlmConfig::new(file.clone(), env(&[])).with_keys(keys.clone());
        assert_eq!(c.endpoint("openai").unwrap().api_key.as_deref(), Some("sk-ring"));
        assert_eq!(c.key_origin("openai"), Some(KeyOrigin::Store));
        assert_eq!(c.key_origin("groq"), None, "blank keys are ignored");
        let c = LlmConfig::new(file.clone(), env(&[("OPENAI_API_KEY", "sk-env")])).with_keys(keys);
        assert_eq!(c.endpoint("openai").unwrap().api_key.as_deref(), Some("sk-env"));
        assert_eq!(c.key_origin("openai"), Some(KeyOrigin::Env));
        let c = LlmConfig::new(file, env(&[]));
        assert_eq!(c.key_origin("openai"), Some(KeyOrigin::File));
        assert_eq!(c.key_origin("anthropic"), None);
        // A run's default model wins over the file's.
        let c = c.with_default_model("ollama:llama3");
        assert_eq!(c.default_model(), Some(ModelRef::parse("ollama:llama3")));
    }

    #[test]
    fn unknown_providers_say_how_to_configure_them() {
        let c = LlmConfig::new(ProviderFile::default(), env(&[]));
        let e = c.endpoint("mybox").unwrap_err();
        assert!(e.contains("MYBOX_BASE_URL") && e.contains("unknown LLM provider `mybox`"), "{e}");
        // A base URL in the environment makes it an OpenAI-compatible server.
        let c = LlmConfig::new(ProviderFile::default(), env(&[("MYBOX_BASE_URL", "http://127.0.0.1:1/v1")]));
        assert!(c.endpoint("mybox").is_err(), "no wire format known without the file");
    }

    #[test]
    fn the_file_configures_providers_and_the_environment_wins() {
        let d = std::env::temp_dir().join(format!("switchyard-llmcfg-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("providers.yaml");
        std::fs::write(
            &p,
            "default_model: local:qwen\nproviders:\n  local: {wire: openai, base_url: 'http://127.0.0.1:8/v1'}\n  openai: {api_key: sk-file}\n",
        )
        .unwrap();
        let c = LlmConfig::load(Some(&p), env(&[])).unwrap();
        assert_eq!(c.default_model(), Some(ModelRef { provider: "local".into(), name: "qwen".into() }));
        let local = c.check(&ModelRef::parse("local:qwen")).unwrap();
        assert_eq!(local.base_url, "http://127.0.0.1:8/v1");
        assert_eq!(c.endpoint("openai").unwrap().api_key.as_deref(), Some("sk-file"));
        let c = LlmConfig::load(Some(&p), env(&[("OPENAI_API_KEY", "sk-env")])).unwrap();
        assert_eq!(c.endpoint("openai").unwrap().api_key.as_deref(), Some("sk-env"));
        // Saving keeps it private.
        let out = d.join("saved.yaml");
        c.save(&out).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert_eq!(LlmConfig::load(Some(&out), env(&[])).unwrap().file, c.file);
        std::fs::write(&p, "providers:\n  x: {wire: carrier-pigeon}\n").unwrap();
        let e = LlmConfig::load(Some(&p), env(&[])).unwrap_err();
        assert!(e.contains("providers.yaml"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
