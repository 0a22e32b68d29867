//! Durable runs through the real CLI: a run is killed (`kill -9`) while it waits at an
//! interrupt, resumed from its SQLite run store in a new process, and ends with the same final
//! state as a run that was never interrupted. Both dialects; plus listing, deleting, pruning
//! and the error messages.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The CLI with a private default run store (never the user's).
fn cli(db: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("SWITCHYARD_RUNS_DB", db).env("NO_COLOR", "1").stdin(Stdio::null());
    c
}

fn run(mut c: Command) -> Output {
    c.output().expect("the switchyard binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The state of the last `run_finished` event of a JSONL trace (the top-level run's).
fn final_state(trace: &Path) -> (String, Value) {
    let body = std::fs::read_to_string(trace).unwrap();
    let ev = body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "run_finished" && !e["run"].as_str().unwrap_or("").contains('/'))
        .last()
        .unwrap_or_else(|| panic!("no run_finished in {}:\n{body}", trace.display()));
    (ev["status"].as_str().unwrap_or("").to_string(), ev["state"].clone())
}

/// Start `args` with a durable run and stdin open, wait until it asks its first question (the
/// prompt on stderr and the store saying `interrupted`), then `kill -9` it. The run id.
fn start_and_kill_at_interrupt(db: &Path, args: &[&str]) -> String {
    let mut child: Child = cli(db)
        .args(args)
        .args(["--durable", "--answer-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut id = None;
    let mut seen = Vec::new();
    loop {
        let line = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) => l,
            Err(_) => {
                let _ = child.kill();
                panic!("no question within 60 s; stderr so far:\n{}", seen.join("\n"));
            }
        };
        seen.push(line.clone());
        if let Some(rest) = line.strip_prefix("durable run ") {
            id = rest.split_whitespace().next().map(str::to_string);
        }
        if line.starts_with("? ") {
            break;
        }
    }
    let id = id.unwrap_or_else(|| panic!("no run id printed:\n{}", seen.join("\n")));
    // The store already says the run waits (the write happens before the question is asked).
    let rec = record(db, &id);
    assert_eq!(rec["status"], "interrupted", "{rec}");
    assert!(rec["pending"]["prompt"].is_string(), "{rec}");
    // The process is alive, waiting on stdin; kill it without any chance to clean up.
    assert!(child.try_wait().unwrap().is_none(), "the CLI should wait for an answer");
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success());
    id
}

/// The run's row as `switchyard runs --json` prints it.
fn record(db: &Path, id: &str) -> Value {
    let out = run({
        let mut c = cli(db);
        c.args(["runs", "list", "--json"]);
        c
    });
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("run {id} not listed:\n{}", text(&out.stdout)))
}

#[test]
fn sherma_run_killed_at_an_interrupt_resumes_to_the_same_final_state() {
    let dir = TempDir::new("durable-sherma");
    let db = dir.join("store").join("runs.sqlite");
    let agent = root().join("agents/support-triage/agent.yaml");
    let agent = agent.to_str().unwrap();
    let input = "Where is my order 1001?";

    // The reference: one uninterrupted run with both answers queued.
    let whole_trace = dir.join("whole.jsonl");
    let whole = run({
        let mut c = cli(&db);
        c.args(["run", "--trust", agent, "--input", input, "--answer", "thanks", "--answer", "done", "-q", "--trace"])
            .arg(&whole_trace);
        c
    });
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    let (status, whole_state) = final_state(&whole_trace);
    assert_eq!(status, "completed");
    assert_eq!(whole_state["turns"], 2, "{whole_state}");

    // Durable, killed while it waits for the first answer.
    let id = start_and_kill_at_interrupt(&db, &["run", "--trust", agent, "--input", input]);
    let rec = record(&db, &id);
    assert_eq!(rec["agent"], "support-triage");
    assert_eq!(rec["dialect"], "sherma");

    // A new process resumes it from the store and answers both questions.
    let trace = dir.join("resumed.jsonl");
    let out = run({
        let mut c = cli(&db);
        c.args(["resume", "--trust", &id, "--answer", "thanks", "--answer-json", "\"done\"", "-q", "--trace"]).arg(&trace);
        c
    });
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), text(&whole.stdout));
    let (status, state) = final_state(&trace);
    assert_eq!(status, "completed");
    assert_eq!(state, whole_state);
    assert_eq!(record(&db, &id)["status"], "completed");

    // A finished run cannot be resumed again.
    let again = run({
        let mut c = cli(&db);
        c.args(["resume", "--trust", &id]);
        c
    });
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("has ended (completed)"), "{}", text(&again.stderr));
}

#[test]
fn loki_run_killed_at_an_approval_resumes_through_a_second_question() {
    let dir = TempDir::new("durable-loki");
    let db = dir.join("runs.sqlite");
    let agent = root().join("agents/release-gate");
    let agent = agent.to_str().unwrap();
    let input = "Release 1.4";

    let whole_trace = dir.join("whole.jsonl");
    let whole = run({
        let mut c = cli(&db);
        c.args(["run", "--trust", agent, "--input", input, "--answer", "needs notes", "--answer", "Fixed the bug.", "-q"])
            .arg("--trace")
            .arg(&whole_trace);
        c
    });
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    let (status, whole_state) = final_state(&whole_trace);
    assert_eq!(status, "completed");
    assert_eq!(whole_state["notes"], "Fixed the bug.", "{whole_state}");

    let id = start_and_kill_at_interrupt(&db, &["run", "--trust", agent, "--input", input, "--db", db.to_str().unwrap()]);
    let rec = record(&db, &id);
    assert_eq!(rec["dialect"], "loki");
    assert_eq!(rec["pending"]["node"], "approve");
    assert_eq!(rec["pending"]["options"], serde_json::json!(["ship", "hold"]));

    // First resume: a free-text answer goes to `on_other`, whose input node asks again; with
    // no answer left and no terminal the run stays interrupted in the store (exit 3).
    let out = run({
        let mut c = cli(&db);
        c.args(["resume", "--trust", &id, "--db", db.to_str().unwrap(), "--answer", "needs notes", "-q"]);
        c
    });
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("the run is saved") && err.contains(&format!("switchyard resume {id}")), "{err}");
    let rec = record(&db, &id);
    assert_eq!((rec["status"].as_str(), rec["pending"]["node"].as_str()), (Some("interrupted"), Some("note")));

    // Second resume: an answer failing the input's validation is refused, and the run keeps
    // waiting in the store; then the real answer finishes it.
    let out = run({
        let mut c = cli(&db);
        c.args(["resume", "--trust", &id, "--answer", "ok", "-q"]);
        c
    });
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("still waits"), "{}", text(&out.stderr));
    assert_eq!(record(&db, &id)["status"], "interrupted");
    let trace = dir.join("resumed.jsonl");
    let out = run({
        let mut c = cli(&db);
        c.args(["resume", "--trust", &id, "--answer", "Fixed the bug.", "-q", "--trace"]).arg(&trace);
        c
    });
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (status, state) = final_state(&trace);
    assert_eq!(status, "completed");
    assert_eq!(state, whole_state);
    assert_eq!(text(&out.stdout), text(&whole.stdout));
}

#[test]
fn yaml_checkpointer_makes_a_run_durable_and_a_changed_file_is_refused() {
    let dir = TempDir::new("durable-yaml");
    let src = root().join("agents/support-triage");
    for f in ["agent.yaml", "replies.yaml", "tools.py"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let file = dir.join("agent.yaml");
    let body = std::fs::read_to_string(&file).unwrap();
    let body = body.replacen("agents:\n", "checkpointer:\n  type: sqlite\n  path: state/runs.sqlite\n\nagents:\n", 1);
    std::fs::write(&file, &body).unwrap();
    let default_db = dir.join("default.sqlite");
    // No --durable: the file asks for it. Without a terminal the run stays interrupted.
    let out = run({
        let mut c = cli(&default_db);
        c.args(["run", "--trust", file.to_str().unwrap(), "--input", "Where is order 1001?", "-q"]);
        c
    });
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let db = dir.join("state/runs.sqlite");
    assert!(db.is_file(), "the store is beside the agent");
    assert!(!default_db.exists(), "the default store is not used");
    let err = text(&out.stderr);
    let id = err.lines().find_map(|l| l.strip_prefix("durable run ")).unwrap().split_whitespace().next().unwrap();
    assert!(err.contains(&format!("switchyard resume {id} --db ")), "{err}");
    assert_eq!(record(&db, id)["status"], "interrupted");

    // The agent changes: a resume refuses, naming the file; --force goes on.
    std::fs::write(&file, body.replace("Answer in two sentences.", "Answer in one sentence.")).unwrap();
    let out = run({
        let mut c = cli(&default_db);
        c.args(["resume", "--trust", id, "--db", db.to_str().unwrap(), "--answer", "done"]);
        c
    });
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("changed since the run started") && err.contains("--force"), "{err}");
    let out = run({
        let mut c = cli(&default_db);
        c.args(["resume", "--trust", id, "--db", db.to_str().unwrap(), "--answer", "done", "--force", "-q"]);
        c
    });
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn runs_are_listed_deleted_and_pruned() {
    let dir = TempDir::new("durable-list");
    let db = dir.join("runs.sqlite");
    let agent = root().join("agents/release-gate");
    let mut ids = Vec::new();
    for _ in 0..2 {
        let out = run({
            let mut c = cli(&db);
            c.args(["run", "--trust", agent.to_str().unwrap(), "--durable", "-q"]);
            c
        });
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        ids.push(
            err.lines()
                .find_map(|l| l.strip_prefix("durable run "))
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .to_string(),
        );
    }
    let out = run({
        let mut c = cli(&db);
        c.arg("runs");
        c
    });
    assert!(out.status.success());
    let table = text(&out.stdout);
    let head = table.lines().next().unwrap();
    for col in ["ID", "AGENT", "STATUS", "UPDATED", "STEP", "FILE"] {
        assert!(head.contains(col), "{table}");
    }
    for id in &ids {
        let line = table.lines().find(|l| l.starts_with(id.as_str())).unwrap_or_else(|| panic!("{table}"));
        assert!(line.contains("release-gate") && line.contains("interrupted"), "{line}");
    }
    // Delete one (and an unknown id: reported, exit 1).
    let out = run({
        let mut c = cli(&db);
        c.args(["runs", "delete", &ids[0], "nope"]);
        c
    });
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no such run") && text(&out.stderr).contains("nope"));
    let out = run({
        let mut c = cli(&db);
        c.args(["runs", "list"]);
        c
    });
    assert!(!text(&out.stdout).contains(&ids[0]) && text(&out.stdout).contains(&ids[1]));
    // Prune: nothing is a week old; everything is older than 0 s.
    let out = run({
        let mut c = cli(&db);
        c.args(["runs", "prune", "--older-than", "7d"]);
        c
    });
    assert!(out.status.success() && text(&out.stderr).contains("deleted 0 runs"), "{}", text(&out.stderr));
    std::thread::sleep(Duration::from_millis(20));
    let out = run({
        let mut c = cli(&db);
        c.args(["runs", "prune", "--older-than", "0s"]);
        c
    });
    assert!(text(&out.stderr).contains("deleted 1 run "), "{}", text(&out.stderr));
    let out = run({
        let mut c = cli(&db);
        c.args(["runs", "prune", "--older-than", "soon"]);
        c
    });
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not an age"));
}

#[test]
fn clear_errors_for_an_unknown_run_and_an_unwritable_store() {
    let dir = TempDir::new("durable-errors");
    let db = dir.join("runs.sqlite");
    // No store yet.
    let out = run({
        let mut c = cli(&db);
        c.args(["resume", "--trust", "run-nope"]);
        c
    });
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no run store at"), "{}", text(&out.stderr));
    // A store without that run.
    let agent = root().join("agents/release-gate");
    let out = run({
        let mut c = cli(&db);
        c.args(["run", "--trust", agent.to_str().unwrap(), "--durable", "-q"]);
        c
    });
    assert_eq!(out.status.code(), Some(3));
    let out = run({
        let mut c = cli(&db);
        c.args(["resume", "--trust", "run-nope"]);
        c
    });
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("no run `run-nope` in the run store") && err.contains(db.to_str().unwrap()), "{err}");
    // A store path that cannot be created (a file stands where its folder should be).
    let blocker = dir.join("blocker");
    std::fs::write(&blocker, "not a folder").unwrap();
    let bad = blocker.join("runs.sqlite");
    let out = run({
        let mut c = cli(&db);
        c.args(["run", "--trust", agent.to_str().unwrap(), "--db", bad.to_str().unwrap(), "-q"]);
        c
    });
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(bad.to_str().unwrap()) && err.contains("cannot create the folder"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // A file that is not a database.
    let junk = dir.join("junk.sqlite");
    std::fs::write(&junk, vec![b'j'; 8192]).unwrap();
    let out = run({
        let mut c = cli(&db);
        c.args(["runs", "--db", junk.to_str().unwrap()]);
        c
    });
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a Switchyard run store"), "{}", text(&out.stderr));
}

/// The desktop's path: a durable run driven by a `Driver` (as `run_start` does), the app closing
/// while it waits at a question (`keep_resumable`, then the driver's stop), and a new driver
/// resuming it from the store (as `run_resume` does) and finishing it with the answer.
#[test]
fn a_driven_run_closed_at_an_interrupt_stays_resumable_and_finishes_in_a_new_driver() {
    use std::sync::{Arc, Mutex};
    use switchyard::run::driver::{Batch, Control, Driver, DriverOptions, StatusInfo, wait_for};
    use switchyard::run::launch::{self, RunRequest};
    use switchyard::run::provider::NoProvider;
    use switchyard::run::session::RunOptions;
    use switchyard::run::store::{self, Durable, RunStore};

    let dir = TempDir::new("durable-driver");
    let db = dir.join("runs.sqlite");
    let path = root().join("agents/release-gate/graph.yaml");
    let req = RunRequest { input: Some("Release 2.0".into()), ..Default::default() };
    type Seen = Arc<Mutex<Vec<StatusInfo>>>;
    let sink = |seen: &Seen| {
        let s = seen.clone();
        Arc::new(move |b: Batch| {
            if let Some(st) = b.status {
                s.lock().unwrap().push(st);
            }
        })
    };
    let wait_state = |seen: &Seen, state: &str| {
        assert!(
            wait_for(Duration::from_secs(30), || seen.lock().unwrap().last().is_some_and(|s| s.state == state)),
            "never {state}: {:?}",
            seen.lock().unwrap().last()
        );
        seen.lock().unwrap().last().cloned().unwrap()
    };

    let seen: Seen = Arc::default();
    let (db2, req2) = (db.clone(), req.clone());
    let d = Driver::start(
        move |opts| {
            let doc = Arc::new(switchyard::doc::load_path(&path));
            let llm = launch::llm_choice(&doc, &req2);
            store::start(&db2, doc, &req2, llm, None, opts)
        },
        RunOptions::new(Box::new(NoProvider)),
        DriverOptions { start: Some(Control::Continue), ..Default::default() },
        sink(&seen),
    )
    .unwrap();
    let st = wait_state(&seen, "interrupted");
    assert_eq!(st.pending.as_ref().unwrap().node, "approve");
    let id = d.run_id().to_string();
    assert!(d.is_durable());
    // The app closes: nothing of the shutdown is saved.
    d.keep_resumable();
    d.control(Control::Stop);
    drop(d);
    let rec = RunStore::open(&db).unwrap().get(&id).unwrap().unwrap();
    assert_eq!(rec.status, "interrupted", "closing the app must not end the run");

    // The app again: resume it in a new driver, answer the question, and it finishes.
    let seen: Seen = Arc::default();
    let (db2, id2) = (db.clone(), id.clone());
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.run_id = Some(id.clone());
    let d = Driver::start(
        move |opts| store::resume(&Durable { db: db2, force: false }, &id2, None, opts).map(|(s, _)| s),
        options,
        DriverOptions { start: None, ..Default::default() },
        sink(&seen),
    )
    .unwrap();
    let st = wait_state(&seen, "interrupted");
    let pending = st.pending.unwrap();
    assert_eq!(pending.node, "approve");
    d.answer(&pending.id, Value::String("ship".into())).unwrap();
    let st = wait_state(&seen, "finished");
    assert_eq!(st.status, Some(switchyard::run::events::RunStatus::Completed));
    assert!(st.output.as_str().unwrap_or("").starts_with("Shipped."), "{:?}", st.output);
    drop(d);
    let rec = RunStore::open(&db).unwrap().get(&id).unwrap().unwrap();
    assert_eq!(
        (rec.status.as_str(), rec.output.as_str().map(|s| s.starts_with("Shipped."))),
        ("completed", Some(true))
    );
}
