//! The OS keyring for real: keys stored the way the app's Settings page stores them, read back,
//! and used by a live run of the `switchyard` CLI against a fake OpenAI server on 127.0.0.1.
//!
//! It needs a running secret service, so it is `#[ignore]`d in a plain `cargo test`;
//! `./dev test` (and so `.ci/run`) runs it inside `dbus-run-session` with an unlocked
//! `gnome-keyring-daemon` in a scratch home (`run_keyring_tests`). It uses a provider of its own
//! (`sytest`), so a developer's real keys are never touched.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::fake_llm::{FakeLlm, openai_text};
use switchyard::llm::config::KeyOrigin;
use switchyard::llm::keyring::{KeyStore, load_config, os_keyring};

const PROVIDER: &str = "sytest";
const KEY: &str = "sk-sytest-from-the-keyring-7f3a";
const VAR: &str = "SYTEST_KEYRING_API_KEY";

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("switchyard-keyring-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A provider file naming `sytest` (OpenAI wire, at `base`, key from `VAR`) and a one-node Loki
/// graph that calls `sytest:m1`.
fn setup(dir: &Path, base: &str) -> (PathBuf, PathBuf) {
    let providers = dir.join("providers.yaml");
    std::fs::write(
        &providers,
        format!("providers:\n  {PROVIDER}:\n    wire: openai\n    base_url: \"{base}\"\n    api_key_env: {VAR}\n    models: [m1]\n"),
    )
    .unwrap();
    let agent = dir.join("agents/hello");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("graph.yaml"),
        "name: hello\nversion: \"1.0\"\nmodel: sytest:m1\nstart: ask\nnodes:\n  ask:\n    type: llm\n    prompt: \"Say hello\"\n    state_updates:\n      said: \"{{output}}\"\n    next: done\n  done:\n    type: end\n    output: \"{{said}}\"\n",
    )
    .unwrap();
    (providers, agent.join("graph.yaml"))
}

fn cli(graph: &Path, providers: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.args(["run", graph.to_str().unwrap(), "--live", "--quiet"])
        .env("SWITCHYARD_PROVIDERS", providers)
        .env_remove(VAR)
        .env_remove("SWITCHYARD_KEYRING");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &std::process::Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
#[ignore = "needs a running secret service; ./dev test runs it under dbus-run-session with gnome-keyring"]
fn keys_stored_in_the_os_keyring_are_read_back_and_used_by_the_cli() {
    let store = os_keyring();
    store.delete(PROVIDER).unwrap_or_else(|e| panic!("the OS keyring is not available: {e}"));
    assert_eq!(store.get(PROVIDER).unwrap(), None);
    store.set(PROVIDER, KEY).unwrap();
    assert_eq!(store.get(PROVIDER).unwrap().as_deref(), Some(KEY));

    let fake = FakeLlm::start();
    fake.set_default(openai_text(&["Hello ", "there"], Duration::ZERO));
    let dir = scratch();
    let (providers, graph) = setup(&dir, &fake.base());

    // The engine's configuration (what the app's live runs use) sees the keyring's key.
    let (cfg, down) = load_config(Some(&providers), BTreeMap::new(), store).unwrap();
    assert_eq!(down, None);
    let ep = cfg.endpoint(PROVIDER).unwrap();
    assert_eq!(ep.api_key.as_deref(), Some(KEY));
    assert_eq!(cfg.key_origin(PROVIDER), Some(KeyOrigin::Store));

    // The CLI: no key in the environment, the keyring's key in the request.
    let out = cli(&graph, &providers, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Hello there"), "{}", text(&out));
    assert_eq!(fake.headers(0)["authorization"], format!("Bearer {KEY}").as_str());

    // The environment still wins.
    let out = cli(&graph, &providers, &[(VAR, "sk-from-env")]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(fake.headers(1)["authorization"], "Bearer sk-from-env");

    // Turned off, the keyring is not asked: the pre-run check names the variable.
    let out = cli(&graph, &providers, &[("SWITCHYARD_KEYRING", "off")]);
    assert!(!out.status.success());
    assert!(text(&out).contains(VAR), "{}", text(&out));

    // Deleted, the key is gone for the CLI too.
    store.delete(PROVIDER).unwrap();
    assert_eq!(store.get(PROVIDER).unwrap(), None);
    let out = cli(&graph, &providers, &[]);
    assert!(!out.status.success());
    assert!(text(&out).contains(VAR), "{}", text(&out));
    assert_eq!(fake.requests().len(), 2, "a run without a key reached the server");
}
