//! Per-folder trust and the run manifest, through the `switchyard` CLI: an untrusted folder's
//! agent runs nothing (exit 2, the refusal names what would execute and how to trust it);
//! `switchyard trust` / `--trust` let it run; `run --manifest` lists what would run without
//! running it; `resume` needs trust too; `validate` and `graph` never do. Every test keeps its
//! trust list in a temp file (`SWITCHYARD_TRUST`), so the user's own list is never touched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

/// A Loki agent whose script writes `marker` when it runs, then asks for approval (so a durable
/// run waits and can be resumed).
fn project(t: &TempDir) -> (PathBuf, PathBuf, PathBuf) {
    let dir = t.path().join("proj");
    let agent = dir.join("agent");
    std::fs::create_dir_all(agent.join("scripts")).unwrap();
    let marker = t.path().join("ran.marker");
    std::fs::write(
        agent.join("scripts/touch.sh"),
        format!("#!/usr/bin/env bash\necho ran >> '{}'\necho '{{}}'\n", marker.display()),
    )
    .unwrap();
    std::fs::write(
        agent.join("graph.yaml"),
        "version: \"1.0\"\nname: touchy\nstart: touch\nnodes:\n  touch:\n    type: script\n    script: scripts/touch.sh\n    next: ask\n  ask:\n    type: approval\n    question: go on?\n    options: [yes, no]\n    routes:\n      yes: done\n      no: done\n    on_other: done\n  done:\n    type: end\n",
    )
    .unwrap();
    (dir, agent, marker)
}

fn cli(trust_file: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("SWITCHYARD_TRUST", trust_file)
        .env("SWITCHYARD_RUNS_DB", trust_file.with_file_name("runs.sqlite"))
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn an_untrusted_folder_runs_nothing_and_says_what_would_run_and_how_to_trust_it() {
    let t = TempDir::new("trust-refuse");
    let (dir, agent, marker) = project(&t);
    let tf = t.path().join("trust.json");
    let a = agent.to_str().unwrap();
    let o = cli(&tf, &["run", a, "--answer", "yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let msg = text(&o);
    assert!(msg.contains("is not trusted"), "{msg}");
    assert!(msg.contains("runs script") && msg.contains("touch.sh"), "{msg}");
    assert!(msg.contains("switchyard trust") && msg.contains("--trust"), "{msg}");
    assert!(msg.contains(&std::fs::canonicalize(&dir).unwrap().join("agent").display().to_string()), "the project root is the agent's folder without .git: {msg}");
    assert!(!marker.exists(), "the script ran in an untrusted folder");
    assert!(!tf.exists(), "refusing wrote the trust list");

    // validate and graph need no trust, and run nothing.
    assert_eq!(cli(&tf, &["validate", a]).status.code(), Some(0));
    assert_eq!(cli(&tf, &["graph", a]).status.code(), Some(0));
    assert!(!marker.exists());
}

#[test]
fn trusting_the_folder_lets_it_run_and_removing_the_trust_takes_it_back() {
    let t = TempDir::new("trust-cmd");
    let (dir, agent, marker) = project(&t);
    // A .git folder makes the repository the project root: trusting it trusts the agent below.
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let tf = t.path().join("trust.json");
    let a = agent.to_str().unwrap();
    let o = cli(&tf, &["trust", a]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let root = std::fs::canonicalize(&dir).unwrap();
    assert!(text(&o).contains(&format!("trusted {}", root.display())), "{}", text(&o));
    let o = cli(&tf, &["trust", "--list"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), root.display().to_string());
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&tf).unwrap().permissions().mode() & 0o777, 0o600);
    }

    let o = cli(&tf, &["run", a, "--answer", "yes", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");

    let o = cli(&tf, &["trust", "--remove", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = cli(&tf, &["run", a, "--answer", "yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n", "ran again after the trust was removed");
    let o = cli(&tf, &["trust", "--remove", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "removing what is not trusted is an error: {}", text(&o));
}

#[test]
fn trust_for_one_run_is_not_remembered() {
    let t = TempDir::new("trust-once");
    let (_dir, agent, marker) = project(&t);
    let tf = t.path().join("trust.json");
    let a = agent.to_str().unwrap();
    let o = cli(&tf, &["run", a, "--trust", "--answer", "yes", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(marker.exists());
    assert!(!tf.exists() || !std::fs::read_to_string(&tf).unwrap().contains("proj"), "--trust was remembered");
    assert_eq!(cli(&tf, &["run", a, "--answer", "yes"]).status.code(), Some(2));
}

#[test]
fn the_manifest_lists_what_would_run_and_runs_nothing() {
    let t = TempDir::new("trust-manifest");
    let (_dir, agent, marker) = project(&t);
    let tf = t.path().join("trust.json");
    let o = cli(&tf, &["run", agent.to_str().unwrap(), "--manifest", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let exec = &m["executes"][0];
    assert_eq!(exec["kind"], "script");
    assert!(exec["what"].as_str().unwrap().ends_with("scripts/touch.sh"), "{m}");
    assert_eq!(exec["detail"], "bash");
    assert_eq!(exec["at"]["line"], 7, "{m}");
    assert_eq!(m["hash"].as_str().unwrap().len(), 64);
    assert!(!marker.exists());

    // A sherma file: environment variables, hosts (credentials never shown), commands.
    let sherma = t.path().join("proj/agent/s.yaml");
    std::fs::write(
        &sherma,
        "manifest_version: 1\nskills:\n  - id: s\n    version: \"1\"\n    url: \"https://u:p@Skills.Example/card?k=${SECRET_TOKEN:-x}\"\nmcp_servers:\n  - id: fs\n    transport: stdio\n    command: python3\n    args: [\"srv.py\", \"--root\", \"a b\"]\nagents:\n  a:\n    graph:\n      entry_point: n\n      nodes:\n        - name: n\n          type: set_state\n          args: {values: {x: '1'}}\n      edges: []\n",
    )
    .unwrap();
    let o = Command::new(BIN)
        .args(["run", sherma.to_str().unwrap(), "--manifest"])
        .env("SWITCHYARD_TRUST", &tf)
        .env("SECRET_TOKEN", "tok-very-secret-4711")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("python3 srv.py --root 'a b'"), "{out}");
    assert!(out.contains("https://skills.example") && !out.contains("u:p@") && !out.contains("u:p"), "{out}");
    assert!(out.contains("SECRET_TOKEN"), "{out}");
    assert!(!out.contains("tok-very-secret-4711") && out.contains("[redacted:SECRET_TOKEN]"), "{out}");
}

#[test]
fn resume_needs_trust_too() {
    let t = TempDir::new("trust-resume");
    let (_dir, agent, marker) = project(&t);
    let tf = t.path().join("trust.json");
    let db = t.path().join("runs.sqlite");
    let a = agent.to_str().unwrap();
    let o = cli(&tf, &["run", a, "--trust", "--db", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "the run waits for its approval: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let id = err
        .split_whitespace()
        .skip_while(|w| *w != "run")
        .nth(1)
        .expect("a durable run id")
        .to_string();
    let o = cli(&tf, &["resume", &id, "--db", db.to_str().unwrap(), "--answer", "yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("refusing to resume"), "{}", text(&o));
    let o = cli(&tf, &["resume", &id, "--db", db.to_str().unwrap(), "--answer", "yes", "--trust"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
}
