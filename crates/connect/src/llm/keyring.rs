//! API keys in the OS keyring: the secret service over D-Bus on Linux, the Keychain on macOS,
//! the Credential Manager on Windows, under service `switchyard`, account = the provider name.
//!
//! The desktop app's Settings page writes keys here; live runs, in the app and from the CLI,
//! read them through [`llm_config`]: the provider file, then the keyring's keys
//! ([`LlmConfig::with_keys`]), with the environment still winning. Every keyring call runs on
//! its own thread with a timeout, since a locked keyring can wait for a password prompt; a
//! missing D-Bus session fails at once. `SWITCHYARD_KEYRING=off` turns the keyring off.

use crate::llm::config::LlmConfig;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The keyring service name keys are stored under.
pub const KEYRING_SERVICE: &str = "switchyard";

/// How long a keyring read may take before the keyring counts as unavailable.
const READ_TIMEOUT: Duration = Duration::from_secs(3);
/// A write may ask the user to unlock the keyring: give them time.
const WRITE_TIMEOUT: Duration = Duration::from_secs(20);
/// Where API keys are kept. `Err` means the store itself is unavailable (the message says
/// why); a missing key is `Ok(None)`.
pub trait KeyStore: Send + Sync {
    fn get(&self, provider: &str) -> Result<Option<String>, String>;
    fn set(&self, provider: &str, key: &str) -> Result<(), String>;
    fn delete(&self, provider: &str) -> Result<(), String>;
}

/// The OS keyring through the `keyring` crate, each call on its own thread with a timeout (a
/// locked keyring can wait for a password prompt; a missing D-Bus fails at once).
pub struct OsKeyring {
    /// Set after a call timed out, so later reads do not wait again; cleared by `reset`.
    down: Mutex<Option<String>>,
}

/// Run `f` on its own thread; `None` when it did not finish within `timeout`.
fn with_timeout<T: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("switchyard-keyring".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .ok()?;
    rx.recv_timeout(timeout).ok()
}

fn keyring_error(e: &keyring::Error) -> String {
    match e {
        keyring::Error::NoStorageAccess(inner) => format!("no access: {inner}"),
        keyring::Error::PlatformFailure(inner) => inner.to_string(),
        other => other.to_string(),
    }
}

impl OsKeyring {
    fn new() -> OsKeyring {
        OsKeyring {
            down: Mutex::new(None),
        }
    }

    /// Forget an earlier timeout (opening Settings asks the keyring again).
    pub fn reset(&self) {
        *self.down.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn disabled() -> Option<String> {
        let v = std::env::var("SWITCHYARD_KEYRING").unwrap_or_default();
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "no" | "false" | "file"
        )
        .then(|| "turned off with SWITCHYARD_KEYRING=off".to_string())
    }

    fn call<T: Send + 'static>(
        &self,
        timeout: Duration,
        provider: &str,
        f: impl FnOnce(keyring::Entry) -> keyring::Result<T> + Send + 'static,
    ) -> Result<keyring::Result<T>, String> {
        if let Some(why) = Self::disabled() {
            return Err(why);
        }
        if let Some(why) = self.down.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Err(why);
        }
        let p = provider.to_string();
        match with_timeout(timeout, move || {
            keyring::Entry::new(KEYRING_SERVICE, &p).and_then(f)
        }) {
            Some(r) => Ok(r),
            None => {
                let why = format!("no answer within {} s (is it locked?)", timeout.as_secs());
                *self.down.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
                Err(why)
            }
        }
    }
}

impl KeyStore for OsKeyring {
    fn get(&self, provider: &str) -> Result<Option<String>, String> {
        match self.call(READ_TIMEOUT, provider, |e| e.get_password())? {
            Ok(k) => Ok(Some(k)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keyring_error(&e)),
        }
    }
    fn set(&self, provider: &str, key: &str) -> Result<(), String> {
        let key = key.to_string();
        self.call(WRITE_TIMEOUT, provider, move |e| e.set_password(&key))?
            .map_err(|e| keyring_error(&e))
    }
    fn delete(&self, provider: &str) -> Result<(), String> {
        match self.call(READ_TIMEOUT, provider, |e| e.delete_credential())? {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(keyring_error(&e)),
        }
    }
}

/// The process's keyring.
pub fn os_keyring() -> &'static OsKeyring {
    static K: OnceLock<OsKeyring> = OnceLock::new();
    K.get_or_init(OsKeyring::new)
}

/// The keys `store` holds for `names`, and why the store is unavailable (it is asked until
/// the first failure).
pub fn stored_keys(
    store: &dyn KeyStore,
    names: &[String],
) -> (BTreeMap<String, String>, Option<String>) {
    let mut keys = BTreeMap::new();
    for n in names {
        match store.get(n) {
            Ok(Some(k)) if !k.trim().is_empty() => {
                keys.insert(n.clone(), k);
            }
            Ok(_) => {}
            Err(e) => return (keys, Some(e)),
        }
    }
    (keys, None)
}

/// The provider configuration with the keyring's keys, from `path` and `env`.
pub fn load_config(
    path: Option<&Path>,
    env: BTreeMap<String, String>,
    store: &dyn KeyStore,
) -> Result<(LlmConfig, Option<String>), String> {
    let cfg = LlmConfig::load(path, env)?;
    let (keys, down) = stored_keys(store, &cfg.provider_names());
    Ok((cfg.with_keys(keys), down))
}

/// The configuration live runs use: the provider file, the OS keyring, the environment.
pub fn llm_config() -> Result<LlmConfig, String> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    load_config(LlmConfig::default_path().as_deref(), env, os_keyring()).map(|(c, _)| c)
}

