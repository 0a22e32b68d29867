//! The OS keyring for real: keys stored the way the app's Settings page stores them, read back,
//! and used by a live run of the `switchyard` CLI against a fake OpenAI server on 127.0.0.1.
//!
//! It needs a running secret service, so it is `#[ignore]`d in a plain `cargo test`;
//! `./dev test` (and so `.ci/run`) runs it inside `dbus-run-session` with an unlocked
//! `gnome-keyring-daemon` in a scratch home (`run_keyring_tests`). It uses a provider of its own
//! (`sytest`), so a developer's real keys are never touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use test_support::fake_llm::{FakeLlm, openai_text};
use switchyard::llm::config::KeyOrigin;
use switchyard::llm::keyring::{KeyStore, load_config, os_keyring};
use test_support::TempDir;

const PROVIDER: &str = "sytest";
const KEY: &str = "sk-sytest-from-the-keyring-7f3a";
const VAR: &str = "SYTEST_KEYRING_API_KEY";

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
    c.args(["run", "--trust", graph.to_str().unwrap(), "--live", "--quiet"])
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
    let dir = TempDir::new("keyring");
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

/// Every other entry point of a live call reads the same keyring (one key resolver,
/// `launch::live_config`): a durable live run (`run --live --durable`), the resume of that run
/// in a new process, and a rag node's embeddings. Each sees a key that only the keyring holds.
/// A provider of its own (`sytest2`), so it never races the test above over one entry.
#[test]
#[ignore = "needs a running secret service; ./dev test runs it under dbus-run-session with gnome-keyring"]
fn durable_live_runs_their_resume_and_embeddings_use_the_keyring_key() {
    const P2: &str = "sytest2";
    const KEY2: &str = "sk-sytest2-only-in-the-keyring-91c4";
    const VAR2: &str = "SYTEST2_KEYRING_API_KEY";
    let store = os_keyring();
    store.set(P2, KEY2).unwrap_or_else(|e| panic!("the OS keyring is not available: {e}"));

    let fake = FakeLlm::start();
    fake.set_default(openai_text(&["Hello ", "Ada"], Duration::ZERO));
    let dir = TempDir::new("keyring2");
    let providers = dir.join("providers.yaml");
    std::fs::write(
        &providers,
        format!(
            "providers:\n  {P2}:\n    wire: openai\n    base_url: \"{}\"\n    api_key_env: {VAR2}\n    models: [m1, emb]\n",
            fake.base()
        ),
    )
    .unwrap();
    let db = dir.join("runs.sqlite");
    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(args)
            .env("SWITCHYARD_PROVIDERS", &providers)
            .env("SWITCHYARD_RUNS_DB", &db)
            .env_remove(VAR2)
            .env_remove("OPENAI_API_KEY")
            .env_remove("SWITCHYARD_KEYRING")
            .output()
            .unwrap()
    };

    // A durable live run that asks a question before its llm node: it stops interrupted (exit
    // 3) after the pre-run key check passed on the keyring's key alone.
    let asker = dir.join("agents/asker");
    std::fs::create_dir_all(&asker).unwrap();
    let graph = asker.join("graph.yaml");
    std::fs::write(
        &graph,
        format!(
            "name: asker\nversion: \"1.0\"\nmodel: {P2}:m1\nstart: q\nnodes:\n  q:\n    type: input\n    question: \"Who?\"\n    state_updates:\n      who: \"{{{{input}}}}\"\n    next: ask\n  ask:\n    type: llm\n    prompt: \"Say hello to {{{{who}}}}\"\n    state_updates:\n      said: \"{{{{output}}}}\"\n    next: done\n  done:\n    type: end\n    output: \"{{{{said}}}}\"\n"
        ),
    )
    .unwrap();
    let out = cli(&["run", "--trust", graph.to_str().unwrap(), "--live", "--durable", "--quiet"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(fake.requests().is_empty(), "the run called the model before its question");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let id = err
        .split_whitespace()
        .skip_while(|w| *w != "run")
        .nth(1)
        .filter(|_| err.contains("durable run "))
        .unwrap_or_else(|| panic!("no durable run id in: {err}"))
        .to_string();

    // Its resume, in a new process: the saved live choice gets the keyring's key again.
    let out = cli(&["resume", "--trust", &id, "--answer", "Ada", "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Hello Ada"), "{}", text(&out));
    assert_eq!(fake.requests().len(), 1, "{}", text(&out));
    assert_eq!(fake.headers(0)["authorization"], format!("Bearer {KEY2}").as_str());

    // A rag node's embeddings (the llm node answers from scripted replies): the same key.
    let kb = dir.join("agents/kb");
    std::fs::create_dir_all(kb.join("knowledge")).unwrap();
    std::fs::write(kb.join("knowledge/bees.md"), "# Bees\n\nWorker bees fan nectar into honey.\n").unwrap();
    std::fs::write(kb.join("replies.yaml"), "replies:\n  - content: \"Bees make honey.\"\n").unwrap();
    std::fs::write(
        kb.join("graph.yaml"),
        format!(
            "name: kb\nversion: \"1.0\"\nstart: retrieve\nnodes:\n  retrieve:\n    type: rag\n    documents: [./knowledge/]\n    top_k: 1\n    embedding_model: {P2}:emb\n    state_updates:\n      context: \"{{{{output.context}}}}\"\n    next: answer\n  answer:\n    type: llm\n    prompt: \"{{{{context}}}}\"\n    state_updates:\n      answer: \"{{{{output}}}}\"\n    next: done\n  done:\n    type: end\n    output: \"{{{{answer}}}}\"\n"
        ),
    )
    .unwrap();
    let out = cli(&["run", "--trust", "--allow-network", kb.to_str().unwrap(), "--input", "honey", "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Bees make honey."), "{}", text(&out));
    assert!(!fake.embedding_requests().is_empty(), "no embeddings request: {}", text(&out));
    assert_eq!(fake.embedding_headers(0)["authorization"], format!("Bearer {KEY2}").as_str());

    store.delete(P2).unwrap();
}
