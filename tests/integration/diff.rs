//! `switchyard diff` and `switchyard trace diff` through the real CLI: the file pairs of
//! `tests/diff/{sherma,loki}/` (rename, add/remove a node, a changed branch condition or route
//! option, reordered branches, a comments-and-formatting-only change) checked by exit code and
//! JSON; `--rev HEAD` in a temporary git repository; two runs of the example Loki agent with
//! different scripted replies, their first divergence.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use test_support::temp::{TempDir, copy_dir};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_switchyard")
}

fn data(dialect: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/diff")
        .join(dialect)
        .join(format!("{name}.yaml"))
}

/// Exit code and JSON of `switchyard diff --json A B`.
fn diff_json(a: &Path, b: &Path) -> (i32, Value) {
    let out = Command::new(bin())
        .args(["diff", "--json"])
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), v)
}

fn pair(dialect: &str, name: &str) -> (i32, Value) {
    diff_json(&data(dialect, "base"), &data(dialect, name))
}

fn changes(v: &Value, what: &str) -> Vec<String> {
    v["agents"][0][what]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| match what {
            "nodes" => format!(
                "{} {}{}",
                x["change"].as_str().unwrap(),
                x["old_id"]
                    .as_str()
                    .map(|o| format!("{o}->"))
                    .unwrap_or_default(),
                x["id"].as_str().unwrap()
            ),
            _ => format!(
                "{} {}->{} {}",
                x["change"].as_str().unwrap(),
                x["from"].as_str().unwrap(),
                x["to"].as_str().unwrap(),
                x["kind"].as_str().unwrap()
            ),
        })
        .collect()
}

#[test]
fn comments_only_is_no_graph_change_exit_0() {
    for dialect in ["sherma", "loki"] {
        let (code, v) = pair(dialect, "comments");
        assert_eq!(code, 0, "{dialect}: {v:#}");
        assert_eq!(v["same"], true);
        // The text output says so too.
        let out = Command::new(bin())
            .arg("diff")
            .arg(data(dialect, "base"))
            .arg(data(dialect, "comments"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stdout).contains("no graph change"));
    }
}

#[test]
fn renames_are_renames() {
    let (code, v) = pair("sherma", "rename");
    assert_eq!(code, 1);
    assert_eq!(changes(&v, "nodes"), ["renamed close->resolve"]);
    assert!(changes(&v, "edges").is_empty());
    let (code, v) = pair("loki", "rename");
    assert_eq!(code, 1);
    assert_eq!(changes(&v, "nodes"), ["renamed held->parked"]);
    assert!(changes(&v, "edges").is_empty());
}

#[test]
fn added_and_removed_nodes() {
    let (code, v) = pair("sherma", "add_remove");
    assert_eq!(code, 1);
    assert_eq!(changes(&v, "nodes"), ["added audit", "removed escalate"]);
    assert!(changes(&v, "edges").contains(&"removed measure->escalate branch".to_string()));
    let (_, v) = pair("loki", "add_remove");
    assert_eq!(
        changes(&v, "nodes"),
        ["changed approve", "added note", "removed held"]
    );
    let approve = &v["agents"][0]["nodes"][0]["fields"];
    assert_eq!(approve[1]["path"], "on_other");
    assert_eq!(
        (approve[1]["old"].as_str(), approve[1]["new"].as_str()),
        (Some("held"), Some("note"))
    );
}

#[test]
fn changed_conditions_and_options() {
    let (code, v) = pair("sherma", "condition");
    assert_eq!(code, 1);
    let e = &v["agents"][0]["edges"][0];
    assert_eq!(
        (
            e["change"].as_str(),
            e["label"].as_str(),
            e["old_label"].as_str()
        ),
        (
            Some("changed"),
            Some("state.score > 5"),
            Some("state.score > 3")
        )
    );
    assert!(changes(&v, "nodes").is_empty());
    let (_, v) = pair("loki", "condition");
    let e = &v["agents"][0]["edges"][0];
    assert_eq!(
        (
            e["kind"].as_str(),
            e["label"].as_str(),
            e["old_label"].as_str()
        ),
        (Some("route"), Some("wait"), Some("hold"))
    );
}

#[test]
fn reordered_branches_are_a_reorder() {
    let (code, v) = pair("sherma", "reorder");
    assert_eq!(code, 1);
    assert!(changes(&v, "nodes").is_empty() && changes(&v, "edges").is_empty());
    let r = &v["agents"][0]["reorders"][0];
    assert_eq!(r["node"], "measure");
    assert_eq!(r["new"][0], "state.score > 1 → close");
    let (code, v) = pair("loki", "reorder");
    assert_eq!(code, 1);
    assert_eq!(v["agents"][0]["reorders"][0]["kind"], "route");
    // Text: a line per change.
    let out = Command::new(bin())
        .arg("diff")
        .arg(data("sherma", "base"))
        .arg(data("sherma", "reorder"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("branches (evaluated in another order) of measure"),
        "{text}"
    );
    assert!(
        !text.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
}

#[test]
fn usage_and_io_problems_exit_2() {
    let out = Command::new(bin())
        .arg("diff")
        .arg(data("sherma", "base"))
        .arg("/nowhere/x.yaml")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(bin())
        .arg("diff")
        .arg(data("sherma", "base"))
        .arg(data("loki", "base"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cannot compare a sherma file with a loki file")
    );
    let out = Command::new(bin())
        .arg("diff")
        .arg(data("sherma", "base"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(bin())
        .args(["diff", "--rev=--output=/tmp/x"])
        .arg(data("sherma", "base"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Switchyard Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rev_head_in_a_git_repository() {
    let t = TempDir::new("diff-rev");
    let dir = t.path();
    let agent = dir.join("agents/review");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::copy(data("loki", "base"), agent.join("graph.yaml")).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
    // Unchanged: exit 0, for the file and for its agent folder.
    for target in [agent.join("graph.yaml"), agent.clone()] {
        let out = Command::new(bin())
            .args(["diff", "--rev"])
            .arg(&target)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::copy(data("loki", "rename"), agent.join("graph.yaml")).unwrap();
    let out = Command::new(bin())
        .args(["diff", "--json", "--rev"])
        .arg(&agent)
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(changes(&v, "nodes"), ["renamed held->parked"]);
    git(dir, &["commit", "-q", "-am", "rename"]);
    let out = Command::new(bin())
        .args(["diff", "--rev", "HEAD~1"])
        .arg(agent.join("graph.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("held → parked"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = Command::new(bin())
        .args(["diff", "--rev"])
        .arg(agent.join("graph.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // A file git does not know: exit 2 with git's message.
    std::fs::copy(data("loki", "base"), agent.join("new.yaml")).unwrap();
    let out = Command::new(bin())
        .args(["diff", "--rev"])
        .arg(agent.join("new.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("git show HEAD"));
}

#[test]
fn bundles_compared_agent_by_agent() {
    let t = TempDir::new("diff-bundle");
    for (side, graph) in [("a", "base"), ("b", "add_remove")] {
        let agent = t.path().join(side).join("agents/review");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::copy(data("loki", graph), agent.join("graph.yaml")).unwrap();
    }
    std::fs::create_dir_all(t.path().join("b/agents/helper")).unwrap();
    std::fs::write(
        t.path().join("b/agents/helper/config.yaml"),
        "model: openai:gpt-4o-mini\ninstructions: Help.\n",
    )
    .unwrap();
    let (code, v) = diff_json(&t.path().join("a"), &t.path().join("b"));
    assert_eq!(code, 1);
    assert_eq!(v["bundle"], true);
    let agents: Vec<(String, Value)> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap().to_string(),
                a["change"].clone(),
            )
        })
        .collect();
    assert!(
        agents.contains(&("helper".into(), "added".into())),
        "{agents:?}"
    );
    let review = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "review")
        .unwrap();
    assert_eq!(review["diff"]["agents"][0]["nodes"][1]["id"], "note");
}

/// Run the example Loki agent (a copy) with scripted replies and an answer; its trace.
fn traced_run(dir: &Path, replies: Option<&str>, answer: &str, name: &str) -> PathBuf {
    let trace = dir.join(format!("{name}.jsonl"));
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--trust", "-q", "--answer", answer, "--trace"])
        .arg(&trace);
    if let Some(r) = replies {
        let f = dir.join(format!("{name}.replies.yaml"));
        std::fs::write(&f, r).unwrap();
        cmd.arg("--llm-script").arg(f);
    }
    let out = cmd.arg(dir.join("release-gate")).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    trace
}

#[test]
fn trace_diff_of_two_runs_finds_the_first_divergence() {
    let t = TempDir::new("trace-diff");
    let agents = Path::new(env!("CARGO_MANIFEST_DIR")).join("agents/release-gate");
    copy_dir(&agents, &t.path().join("release-gate"));
    let a = traced_run(t.path(), None, "ship", "a");
    let a2 = traced_run(t.path(), None, "ship", "a2");
    let hold = "replies:\n  - node: summarise\n    content: '{\"summary\": \"Two tests fail.\", \"verdict\": \"hold\"}'\n";
    let b = traced_run(t.path(), Some(hold), "hold", "b");
    // The same run twice: exit 0.
    let out = Command::new(bin())
        .args(["trace", "diff"])
        .arg(&a)
        .arg(&a2)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Another reply: the first divergence is summarise's reply at step 3, not the route after it.
    let out = Command::new(bin())
        .args(["trace", "diff", "--json", "--file"])
        .arg(t.path().join("release-gate"))
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &v["first_divergence"];
    assert_eq!(
        (d["step"].as_u64(), d["kind"].as_str(), d["node"].as_str()),
        (Some(3), Some("llm_response"), Some("summarise")),
        "{d:#}"
    );
    assert!(d["b"].as_str().unwrap().contains("hold"));
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6, "step 0 and five steps");
    assert!(steps[..3].iter().all(|s| s["same"] == true));
    assert!(steps[3..].iter().all(|s| s["same"] == false));
    assert_eq!(steps[5]["a"]["nodes"][0][0], "shipped");
    assert_eq!(steps[5]["b"]["nodes"][0][0], "held");
    // Text: the divergence, then the steps side by side.
    let out = Command::new(bin())
        .args(["trace", "diff"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("first divergence at step 3: summarise's LLM reply differs at content"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("shipped") && l.contains("held")),
        "{text}"
    );
    // A missing trace: exit 2.
    let out = Command::new(bin())
        .args(["trace", "diff"])
        .arg(&a)
        .arg(t.path().join("none.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
