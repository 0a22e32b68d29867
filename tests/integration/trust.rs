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
    // The manifest is shown before the first run, not again while it stays the same, and again
    // when what the file runs changed.
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(said.contains("the first run of this file") && said.contains("touch.sh"), "{said}");
    let o = cli(&tf, &["run", a, "--answer", "yes", "--quiet"]);
    assert!(!text(&o).contains("touch.sh"), "{}", text(&o));
    std::fs::copy(agent.join("scripts/touch.sh"), agent.join("scripts/touch2.sh")).unwrap();
    let g = std::fs::read_to_string(agent.join("graph.yaml")).unwrap();
    std::fs::write(agent.join("graph.yaml"), g.replace("scripts/touch.sh", "scripts/touch2.sh")).unwrap();
    let o = cli(&tf, &["run", a, "--answer", "yes", "--quiet"]);
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(said.contains("changed since its last run") && said.contains("touch2.sh"), "{said}");
    std::fs::write(&marker, "ran\n").unwrap();

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
    // Not trusted: the file does not read the environment, so the default is what it would use.
    assert!(!out.contains("tok-very-secret-4711") && out.contains("card?k=x"), "{out}");
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

/// A recorded run whose prompt carries a known secret (an environment variable named like a
/// token): the cassette holds no occurrence of it, is 0600, and replays — with the script made
/// to fail, so it must not run — to the same trace. Recording inside a git work tree that does
/// not ignore the cassette warns with the `.gitignore` line; `--raw` keeps the secret.
#[test]
fn a_recorded_cassette_holds_no_secret_is_private_warns_in_a_work_tree_and_replays_to_the_same_trace() {
    use std::os::unix::fs::PermissionsExt;
    let t = TempDir::new("trust-cassette");
    let dir = t.path().join("repo");
    let agent = dir.join("agent");
    std::fs::create_dir_all(agent.join("scripts")).unwrap();
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let secret = "s3cr3t-value-9f2c41d7e0";
    let marker = t.path().join("ran.marker");
    std::fs::write(
        agent.join("scripts/fetch.sh"),
        format!("#!/usr/bin/env bash\necho ran >> '{}'\necho '{{\"note\": \"token {secret}\"}}'\n", marker.display()),
    )
    .unwrap();
    std::fs::write(
        agent.join("graph.yaml"),
        "version: \"1.0\"\nname: taped\nstart: fetch\nnodes:\n  fetch:\n    type: script\n    script: scripts/fetch.sh\n    next: think\n  think:\n    type: llm\n    prompt: \"Use {{note}}\"\n    state_updates: { reply: \"{{output}}\" }\n    next: done\n  done:\n    type: end\n    output: \"{{reply}}\"\n",
    )
    .unwrap();
    std::fs::write(agent.join("replies.yaml"), "replies:\n  - content: fine\n").unwrap();
    let tf = t.path().join("trust.json");
    let cassette = agent.join("run.cassette.json");
    let (c, a) = (cassette.to_str().unwrap(), agent.to_str().unwrap());
    let (t1, t2) = (t.path().join("rec.jsonl"), t.path().join("rep.jsonl"));
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("SWITCHYARD_TRUST", &tf)
            .env("SWITCHYARD_RUNS_DB", t.path().join("runs.sqlite"))
            .env("DEMO_SERVICE_TOKEN", secret)
            .output()
            .unwrap()
    };

    let o = run(&["run", a, "--trust", "--quiet", "--record", c, "--trace", t1.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let said = text(&o);
    assert!(said.contains("inside the git work tree") && said.contains("/agent/run.cassette.json"), "{said}");
    assert!(said.contains(".gitignore"), "{said}");
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    assert!(!recorded.contains(secret), "the cassette holds the secret:\n{recorded}");
    assert!(recorded.contains("[redacted:DEMO_SERVICE_TOKEN]"), "{recorded}");
    assert_eq!(std::fs::metadata(&cassette).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&marker).unwrap().lines().count(), 1);

    // The script would fail now (and mark the run): the replay must not run it.
    std::fs::write(agent.join("scripts/fetch.sh"), format!("#!/usr/bin/env bash\necho again >> '{}'\nexit 3\n", marker.display())).unwrap();
    let o = run(&["run", a, "--trust", "--quiet", "--replay", c, "--replay-strict", "--trace", t2.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&marker).unwrap().lines().count(), 1, "the script ran during the replay");
    let comparable = |p: &Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                for k in ["ts_ms", "run", "duration_ms"] {
                    v.as_object_mut().unwrap().remove(k);
                }
                v
            })
            .filter(|v| v["event"] != "llm_delta")
            .collect()
    };
    assert_eq!(comparable(&t2), comparable(&t1), "the replay's trace differs");

    // Ignored by git: no warning. `--raw`: the secret is kept, on request.
    if Command::new("git").arg("--version").output().is_ok_and(|o| o.status.success()) {
        std::fs::remove_dir_all(dir.join(".git")).unwrap();
        assert!(Command::new("git").args(["init", "-q"]).current_dir(&dir).status().unwrap().success());
        std::fs::write(dir.join(".gitignore"), "*.cassette.json\n").unwrap();
        std::fs::write(agent.join("scripts/fetch.sh"), format!("#!/usr/bin/env bash\necho '{{\"note\": \"token {secret}\"}}'\n")).unwrap();
        let raw = agent.join("raw.cassette.json");
        let o = run(&["run", a, "--trust", "--quiet", "--record", raw.to_str().unwrap(), "--raw"]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(!text(&o).contains("git work tree"), "{}", text(&o));
        assert!(std::fs::read_to_string(&raw).unwrap().contains(secret));
    }
}

/// Files outside the project root (here a prompt's `instructions_path` and a sub-agent's
/// `yaml_path`, absolute or through `${HOME}`) are refused with a positioned error while the
/// folder is not trusted; once it is, they are the manifest's business and validation is quiet.
#[test]
fn files_outside_the_project_root_are_refused_until_the_folder_is_trusted() {
    let t = TempDir::new("trust-outside");
    let home = t.path().join("home");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), "[default]\naws_secret_access_key = abc\n").unwrap();
    let dir = t.path().join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    let agent = dir.join("agent.yaml");
    std::fs::write(
        &agent,
        "manifest_version: 1\nprompts:\n  - id: sys\n    version: \"1\"\n    instructions_path: ${HOME}/.aws/credentials\nagents:\n  a:\n    graph:\n      entry_point: n\n      nodes:\n        - name: n\n          type: set_state\n          args: {values: {x: '1'}}\n      edges: []\n",
    )
    .unwrap();
    let tf = t.path().join("trust.json");
    let validate = || {
        Command::new(BIN)
            .args(["validate", agent.to_str().unwrap(), "--format", "json"])
            .env("SWITCHYARD_TRUST", &tf)
            .env("HOME", &home)
            .output()
            .unwrap()
    };
    let o = validate();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let diags: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let d = diags.iter().find(|d| d["code"] == "outside-project").unwrap_or_else(|| panic!("{diags:#?}"));
    assert!(d["message"].as_str().unwrap().contains(".aws/credentials"), "{d}");
    assert_eq!(d["line"], 5, "{d}");
    assert!(d["hint"].as_str().unwrap().contains("switchyard trust"), "{d}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("aws_secret_access_key"), "the file's content was shown");

    let o = cli(&tf, &["trust", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = validate();
    let diags: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert!(diags.iter().all(|d| d["code"] != "outside-project"), "{diags:#?}");
}

/// A run of a file whose folder is not trusted does not read the environment: the refusal and
/// `--manifest` show `${DEMO_TOKEN}` as written, never its value; `--trust` fills it in (and the
/// manifest still shows no secret: it is redacted).
#[test]
fn an_untrusted_file_does_not_read_the_environment() {
    let t = TempDir::new("trust-env");
    let dir = t.path().join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    let agent = dir.join("agent.yaml");
    std::fs::write(
        &agent,
        "manifest_version: 1\nskills:\n  - id: s\n    version: \"1\"\n    url: \"https://skills.example/card?k=${DEMO_TOKEN}\"\nagents:\n  a:\n    graph:\n      entry_point: n\n      nodes:\n        - name: n\n          type: set_state\n          args: {values: {x: '1'}}\n      edges: []\n",
    )
    .unwrap();
    let secret = "tok-3b8f0a1e99d24c";
    let tf = t.path().join("trust.json");
    let run = |args: &[&str]| {
        Command::new(BIN).args(args).env("SWITCHYARD_TRUST", &tf).env("DEMO_TOKEN", secret).output().unwrap()
    };
    let a = agent.to_str().unwrap();
    let o = run(&["run", a, "--manifest"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("k=${DEMO_TOKEN}") && !out.contains(secret), "{out}");
    let o = run(&["run", a]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!text(&o).contains(secret), "{}", text(&o));

    // Trusted for this run: the value is filled in, and still never printed.
    let o = run(&["run", a, "--trust", "--manifest"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("${DEMO_TOKEN}") && !out.contains(secret), "{out}");
    assert!(out.contains("[redacted:DEMO_TOKEN]"), "{out}");
}
