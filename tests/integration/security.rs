//! Security properties (issue 8, item 4) checked end to end:
//! - secrets (environment values whose names contain KEY/TOKEN/SECRET/PASSWORD, and provider
//!   keys from the provider file) never reach the trace, the narration, errors or the output of
//!   `switchyard run`;
//! - `${ENV}` placeholders are never replaced by their values in a saved file, nor shown resolved
//!   in the editor's view of a secret;
//! - a script path cannot lead out of the agent directory;
//! - the desktop shell grants the webview only the app's own commands, under a strict CSP.

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use test_support::fake_llm::{FakeLlm, openai_text, status};
use switchyard::edit::EditOp;
use switchyard::studio::Session;
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    trace: String,
}

fn run_cli(args: &[&str], env: &[(&str, &str)], trace: &Path) -> Ran {
    let mut cmd = Command::new(BIN);
    cmd.args(args).arg("--trace").arg(trace).env("NO_COLOR", "1");
    // Keep the developer's own provider file and keys out of the test.
    cmd.env_remove("OPENAI_API_KEY").env_remove("OPENAI_BASE_URL").env("SWITCHYARD_PROVIDERS", "/nonexistent/providers.yaml");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run switchyard");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        trace: std::fs::read_to_string(trace).unwrap_or_default(),
    }
}

fn assert_no_secret(r: &Ran, secret: &str, label: &str) {
    for (what, text) in [("stdout", &r.stdout), ("stderr", &r.stderr), ("trace", &r.trace)] {
        assert!(!text.contains(secret), "the {what} shows the secret:\n{text}");
    }
    assert!(r.trace.contains(&format!("[redacted:{label}]")), "the trace marks the redaction:\n{}", r.trace);
}

#[test]
fn environment_secrets_never_reach_the_trace_the_narration_or_the_output() {
    let dir = TempDir::new("security-env");
    let secret = "tok-5ecret-abc123XYZ";
    std::fs::write(
        dir.join("graph.yaml"),
        r#"version: "1.0"
name: leak
start: read
nodes:
  read:
    type: script
    script: read.sh
    state_updates: { copied: "token={{token}}" }
    next: ask
  ask:
    type: approval
    question: "Ship with {{token}}?"
    options: ["yes", "no"]
    routes: { "yes": done, "no": done }
    on_other: done
  done: { type: end, output: "the token is {{token}}" }
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("read.sh"),
        "printf '{\"token\": \"%s\", \"note\": \"key %s in a sentence\"}' \"$MY_SERVICE_TOKEN\" \"$MY_SERVICE_TOKEN\"\n",
    )
    .unwrap();
    let trace = dir.join("t.jsonl");
    let graph = dir.join("graph.yaml");
    // The graph does not reference the variable: the user lets it through to the script.
    let pass = ("SWITCHYARD_CHILD_ENV", "MY_SERVICE_TOKEN");
    let r = run_cli(&["run", "--trust", graph.to_str().unwrap(), "--answer", "yes"], &[("MY_SERVICE_TOKEN", secret), pass], &trace);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_no_secret(&r, secret, "MY_SERVICE_TOKEN");
    assert_eq!(r.stdout.trim(), "the token is [redacted:MY_SERVICE_TOKEN]");
    // The run itself used the real value (only what is shown is redacted): the approval's
    // question and the state in the trace carry the marker where the value was.
    let events: Vec<Value> = r.trace.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let exit = events.iter().find(|e| e["event"] == "node_exit" && e["node"] == "read").expect("node_exit read");
    assert_eq!(exit["update"]["token"], "[redacted:MY_SERVICE_TOKEN]");
    assert_eq!(exit["update"]["note"], "key [redacted:MY_SERVICE_TOKEN] in a sentence");

    // A short value is not a secret: `USE_KEYRING=true` must not blank every "true".
    let r = run_cli(&["run", "--trust", graph.to_str().unwrap(), "--answer", "yes"], &[("MY_SERVICE_TOKEN", "true"), pass], &trace);
    assert_eq!(r.stdout.trim(), "the token is true");
}

#[test]
fn a_provider_key_from_the_provider_file_is_redacted_in_answers_and_errors() {
    let fake = FakeLlm::start();
    let dir = TempDir::new("security-provider");
    let key = "sk-provider-file-0123456789abcdef";
    let providers = dir.join("providers.yaml");
    std::fs::write(
        &providers,
        format!("providers:\n  openai:\n    base_url: '{}'\n    api_key: '{key}'\n    timeout_s: 5\n", fake.base()),
    )
    .unwrap();
    std::fs::write(
        dir.join("graph.yaml"),
        r#"version: "1.0"
name: echo
model: openai:gpt-4o-mini
start: answer
nodes:
  answer:
    type: llm
    prompt: "{{initial_prompt}}"
    max_attempts: 1
    state_updates: { reply: "{{output}}" }
    next: done
  done: { type: end, output: "{{reply}}" }
"#,
    )
    .unwrap();
    let graph = dir.join("graph.yaml");
    let trace = dir.join("t.jsonl");
    // A model that repeats the key it was sent.
    fake.push(openai_text(&["your key is ", key], Duration::ZERO));
    let mut cmd_env = vec![("SWITCHYARD_PROVIDERS", providers.to_str().unwrap())];
    let r = {
        let mut cmd = Command::new(BIN);
        cmd.args(["run", "--trust", graph.to_str().unwrap(), "--live", "--input", "hi", "--trace"]).arg(&trace).env("NO_COLOR", "1");
        cmd.env_remove("OPENAI_API_KEY").env_remove("OPENAI_BASE_URL");
        for (k, v) in cmd_env.drain(..) {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        Ran {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            trace: std::fs::read_to_string(&trace).unwrap_or_default(),
        }
    };
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The key did go to the server (it is the real one), but is shown nowhere.
    assert_eq!(fake.headers(0).get("authorization").and_then(|h| h.to_str().ok()), Some(format!("Bearer {key}").as_str()));
    assert_no_secret(&r, key, "OPENAI_API_KEY");
    assert_eq!(r.stdout.trim(), "your key is [redacted:OPENAI_API_KEY]");

    // A server error that quotes the key: the failure message is redacted too.
    fake.push(status(401, json!({"error": {"message": format!("Incorrect API key provided: {key}")}})));
    let out = Command::new(BIN)
        .args(["run", "--trust", graph.to_str().unwrap(), "--live", "--input", "hi", "--trace"])
        .arg(&trace)
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("SWITCHYARD_PROVIDERS", &providers)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let trace_text = std::fs::read_to_string(&trace).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Incorrect API key provided: [redacted:OPENAI_API_KEY]"), "{stderr}");
    assert!(!stderr.contains(key) && !trace_text.contains(key), "{stderr}\n{trace_text}");
    fake.stop();
}

const ENV_AGENT: &str = r#"# placeholders stay placeholders
manifest_version: 1
llms:
  - id: fast
    model_name: ${SY_SEC_MODEL:-gpt-4o-mini}   # a default
prompts:
  - id: sys
    version: "1"
    instructions: "Use the key ${SY_SEC_API_KEY} for the billing API."
agents:
  billing:
    state:
      fields:
        - name: messages
          type: list
    graph:
      entry_point: start
      nodes:
        - name: start
          type: set_state
          args:
            values:
              auth: '"${SY_SEC_API_KEY}"'
      edges:
        - source: start
          target: __end__
"#;

#[test]
fn env_placeholders_are_never_written_back_on_save() {
    // SAFETY: only this test reads or writes these two variables.
    unsafe {
        std::env::set_var("SY_SEC_API_KEY", "sy-sec-value-0123456789");
        std::env::set_var("SY_SEC_MODEL", "gpt-secret-model-name");
    }
    let dir = TempDir::new("security-env-save");
    let path = dir.join("agent.yaml");
    std::fs::write(&path, ENV_AGENT).unwrap();
    let mut s = Session::open(&path).unwrap();
    let ops: Vec<Value> = vec![
        json!({"op": "add_node", "name": "check", "kind": "set_state", "after": "start"}),
        json!({"op": "set_field", "node": "start", "path": ["args", "values", "other"], "value": "1"}),
        json!({"op": "rename_node", "from": "start", "to": "begin"}),
        json!({"op": "set_doc_field", "path": ["llms", 0, "temperature"], "value": 0.2}),
        json!({"op": "set_doc_field", "path": ["prompts", 0, "version"], "value": "2"}),
    ];
    for op in ops {
        let op: EditOp = serde_json::from_value(op.clone()).unwrap_or_else(|e| panic!("{op}: {e}"));
        s.apply(&op).unwrap_or_else(|e| panic!("{op:?}: {e}"));
    }
    s.save(false).unwrap();
    let saved = std::fs::read_to_string(&path).unwrap();
    for placeholder in ["${SY_SEC_MODEL:-gpt-4o-mini}", "\"Use the key ${SY_SEC_API_KEY} for the billing API.\"", "'\"${SY_SEC_API_KEY}\"'"] {
        assert!(saved.contains(placeholder), "`{placeholder}` is gone:\n{saved}");
    }
    for value in ["sy-sec-value-0123456789", "gpt-secret-model-name"] {
        assert!(!saved.contains(value), "`{value}` was written into the file:\n{saved}");
    }
    assert!(saved.starts_with("# placeholders stay placeholders\n"), "{saved}");
    assert!(saved.contains("name: begin") && saved.contains("name: check"), "{saved}");
    // What the editor shows of the document does not hold the secret's value either.
    let view = serde_json::to_string(&s.view()).unwrap();
    assert!(!view.contains("sy-sec-value-0123456789"), "the editor's view shows the key: {view}");
}

#[test]
fn a_script_path_cannot_leave_the_agent_directory() {
    let root = TempDir::new("security-escape");
    let agent = root.join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(root.join("outside.sh"), "touch \"$LLM_AGENT_DATA_DIR/../ran\"; echo '{}'\n").unwrap();
    std::fs::write(
        agent.join("graph.yaml"),
        "version: \"1.0\"\nname: esc\nstart: s\nnodes:\n  s: { type: script, script: ../outside.sh, next: done }\n  done: { type: end }\n",
    )
    .unwrap();
    let trace = root.join("t.jsonl");
    // Validation refuses it before the run (exit 2, positioned at the path)...
    let r = run_cli(&["run", "--trust", agent.join("graph.yaml").to_str().unwrap()], &[], &trace);
    assert_eq!(r.code, Some(2), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("graph.yaml:5:") && r.stderr.contains("outside the agent directory"), "{}", r.stderr);
    // ...and so does the engine when validation is switched off.
    std::fs::write(
        agent.join("graph.yaml"),
        "version: \"1.0\"\nname: esc\nsettings: { validate_before_run: false }\nstart: s\nnodes:\n  s: { type: script, script: ../outside.sh, next: done }\n  done: { type: end }\n",
    )
    .unwrap();
    let r = run_cli(&["run", "--trust", agent.join("graph.yaml").to_str().unwrap()], &[], &trace);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("outside the agent directory"), "{}", r.stderr);
    assert!(!root.join("ran").exists(), "the script outside the agent ran");
}

// ---- the desktop shell's configuration ----------------------------------------------------------

fn json_file(rel: &str) -> Value {
    let p = Path::new(ROOT).join(rel);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

#[test]
fn the_webview_gets_only_the_apps_commands_and_a_strict_csp() {
    // Capabilities: nothing beyond core defaults and events. No fs, shell, http, process,
    // opener, dialog or updater permission reaches the webview (the app's own commands do the
    // file work, after checking what they are asked).
    let cap_dir = Path::new(ROOT).join("src-tauri/capabilities");
    let mut caps = Vec::new();
    for e in std::fs::read_dir(&cap_dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            caps.push(json_file(p.strip_prefix(ROOT).unwrap().to_str().unwrap()));
        }
    }
    assert!(!caps.is_empty());
    let allowed = ["core:default", "core:event:allow-listen", "core:event:allow-unlisten", "core:event:allow-emit"];
    for cap in &caps {
        assert_eq!(cap["windows"], json!(["main"]), "{cap}");
        assert!(cap.get("remote").is_none(), "no remote origin may call the app: {cap}");
        for p in cap["permissions"].as_array().unwrap() {
            let id = p.as_str().unwrap_or_else(|| p["identifier"].as_str().unwrap());
            assert!(allowed.contains(&id), "unexpected permission `{id}`");
        }
    }
    // No plugin that exposes the file system or a shell is even linked.
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("src-tauri/Cargo.toml")).unwrap();
    for plugin in ["tauri-plugin-fs", "tauri-plugin-shell", "tauri-plugin-http", "tauri-plugin-process", "tauri-plugin-opener"] {
        assert!(!manifest.contains(plugin), "{plugin} is a dependency of the shell");
    }

    // CSP: scripts only from the app itself; no eval, no inline script, no remote origin.
    let conf = json_file("tauri.conf.json");
    let sec = &conf["app"]["security"];
    let csp = sec["csp"].as_str().expect("a CSP is set");
    let directives: Vec<(&str, Vec<&str>)> = csp
        .split(';')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            let mut it = d.split_whitespace();
            (it.next().unwrap(), it.collect())
        })
        .collect();
    let get = |name: &str| directives.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
    let scripts = get("script-src").or_else(|| get("default-src")).expect("script sources are limited");
    assert!(!scripts.contains(&"'unsafe-eval'") && !scripts.contains(&"'unsafe-inline'"), "{csp}");
    assert!(get("default-src").is_some(), "{csp}");
    // No plugins, no <base> rewriting relative URLs, no form posts, no frames.
    for name in ["object-src", "base-uri", "form-action", "frame-src"] {
        assert_eq!(get(name), Some(vec!["'none'"]), "{name} must be 'none': {csp}");
    }
    for (name, sources) in &directives {
        for s in sources {
            let remote = (s.starts_with("http:") || s.starts_with("https:") || s.starts_with("ws")) && !s.contains("ipc.localhost");
            assert!(!remote && *s != "*", "{name} allows `{s}`: {csp}");
        }
    }
    assert_ne!(conf["app"]["withGlobalTauri"], json!(true), "the Tauri API is not a global for injected scripts");
    assert_ne!(sec["dangerousDisableAssetCspModification"], json!(true));
}
