//! LLLM agent runs (issue 32 items 3-4), data-driven: each folder of `tests/lllm_runs/` is a case
//! (`case.yaml`, see `tests/lllm_runs/README.md`), run end to end through `launch` and
//! `RunSession` with its scripted replies, or with the fake HTTP model server behind the live
//! provider. Each case checks the call loop's node sequence and what the run shows of it.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use switchyard::run::events::{Event, EventBody, RunStatus};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{RunOptions, RunSession, Status};
use test_support::fake_llm::{FakeLlm, Reply, anthropic_answer, status};
use test_support::run::{dump, nodes_of};

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lllm_runs")
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().map(|x| x.as_str().unwrap_or_else(|| panic!("not text: {x}")).to_string()).collect()
}

/// `want` is contained in `got`: mappings key by key, anything else equal.
fn subset(want: &Value, got: &Value, at: &str) -> Result<(), String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, v) in w {
                subset(v, g.get(k).unwrap_or(&Value::Null), &format!("{at}.{k}"))?;
            }
            Ok(())
        }
        _ if want == got => Ok(()),
        _ => Err(format!("{at}: expected {want}, got {got}")),
    }
}

fn requests(events: &[Event]) -> Vec<(Value, Value)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::LlmRequest { messages, tools, .. } => Some((messages.clone(), tools.clone())),
            _ => None,
        })
        .collect()
}

fn tool_texts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolResult { result, error, .. } => Some(match (error, result) {
                (Some(e), _) => format!("Error: {e}"),
                (None, Value::String(s)) => s.clone(),
                (None, v) => v.to_string(),
            }),
            _ => None,
        })
        .collect()
}

/// Run one case folder; the problems found, empty when it passes.
fn run_case(dir: &Path) -> Vec<String> {
    let case: Value = serde_yaml::from_str(&std::fs::read_to_string(dir.join("case.yaml")).unwrap()).unwrap();
    let doc = Arc::new(switchyard::doc::load_path(&dir.join("config.yaml")));
    // Every case's config validates clean (its prompt files found in `prompts/` beside it), but
    // for the warnings the case lists (`validate_warnings`), which it must give.
    let allowed = strs(&case["validate_warnings"]);
    let diags = switchyard::validate::validate(&doc, None);
    let problems: Vec<String> = diags
        .iter()
        .filter(|d| d.severity != switchyard::diag::Severity::Info)
        .filter(|d| !(d.severity == switchyard::diag::Severity::Warning && allowed.iter().any(|a| d.message.contains(a.as_str()))))
        .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
        .collect();
    assert!(problems.is_empty(), "{}: {problems:?}", dir.display());
    for a in &allowed {
        assert!(diags.iter().any(|d| d.message.contains(a.as_str())), "{}: expected the warning `{a}`", dir.display());
    }
    let req = RunRequest {
        agent: case["agent"].as_str().map(str::to_string),
        input: case["input"].as_str().map(str::to_string),
        state: case.get("state").cloned(),
        ..Default::default()
    };
    let fake = case.get("http").map(|replies| {
        let fake = FakeLlm::start();
        for r in replies.as_array().unwrap() {
            fake.push(match (r.get("status"), r.get("text"), r.get("anthropic_text")) {
                (Some(code), _, _) => status(code.as_u64().unwrap() as u16, json!({"error": {"message": "the fake server is down"}})),
                (_, Some(t), _) => Reply::Text(t.as_str().unwrap().to_string()),
                (_, _, Some(t)) => anthropic_answer(&[t.as_str().unwrap()], None),
                _ => panic!("{}: an http reply is `status: N`, `text: ...` or `anthropic_text: ...`", dir.display()),
            });
        }
        fake
    });
    // A run that must not start: its error names the place and what to do.
    if let Some(want) = case["expect"].get("start_error") {
        let err = launch::start(doc, &req, RunOptions::new(Box::new(NoProvider))).err().unwrap_or_default();
        return strs(want).into_iter().filter(|t| !err.contains(t.as_str())).map(|t| format!("start error: expected `{t}` in `{err}`")).collect();
    }
    let mut s: RunSession = match &fake {
        Some(f) => {
            let live = switchyard::llm::LiveProvider::new(f.config("sk-lllm-test", 30.0));
            launch::session(doc, &req, RunOptions::new(Box::new(live)))
        }
        None => launch::start(doc, &req, RunOptions::new(Box::new(NoProvider))),
    }
    .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    s.run();
    let events = s.events();
    let state = s.state();
    let want = &case["expect"];
    let mut bad = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            bad.push(what);
        }
    };
    // Status, output, error.
    let (status, output) = match s.status() {
        Status::Finished { status, output } => (*status, output.clone()),
        other => panic!("{}: the run did not finish: {other:?}\n{}", dir.display(), dump(&s)),
    };
    let want_status = want["status"].as_str().unwrap_or("completed");
    let got_status = match status {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        _ => "other",
    };
    check(got_status == want_status, format!("status: expected {want_status}, got {got_status} ({:?})", s.failure()));
    if let Some(o) = want.get("output") {
        check(&output == o, format!("output: expected {o}, got {output}"));
    }
    if let Some(e) = want["error_contains"].as_str() {
        let msg = s.failure().map(|(_, m)| m.clone()).unwrap_or_default();
        check(msg.contains(e), format!("error: expected `{e}` in `{msg}`"));
    }
    // The call loop's steps.
    if let Some(n) = want.get("nodes") {
        let got = nodes_of(&events, &events[0].run);
        check(got == strs(n), format!("nodes: expected {:?}, got {got:?}", strs(n)));
    }
    // What the model was sent.
    let reqs = requests(&events);
    let system = reqs.first().and_then(|(m, _)| m[0]["content"].as_str().map(str::to_string)).unwrap_or_default();
    for t in strs(&want["system_contains"]) {
        check(system.contains(&t), format!("system prompt: expected `{t}` in:\n{system}"));
    }
    for t in strs(&want["system_lacks"]) {
        check(!system.contains(&t), format!("system prompt: `{t}` should not be in:\n{system}"));
    }
    if let Some(offered) = want.get("tools_offered") {
        let got: Vec<Vec<String>> =
            reqs.iter().map(|(_, t)| t.as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap().to_string()).collect()).collect();
        let exp: Vec<Vec<String>> = offered.as_array().unwrap().iter().map(strs).collect();
        check(got == exp, format!("tools offered: expected {exp:?}, got {got:?}"));
    }
    // What each request sent: its number of messages, texts its messages hold.
    if let Some(sizes) = want["requests_sizes"].as_array() {
        let got: Vec<u64> = reqs.iter().map(|(m, _)| m.as_array().map_or(0, |a| a.len() as u64)).collect();
        let exp: Vec<u64> = sizes.iter().filter_map(Value::as_u64).collect();
        check(got == exp, format!("messages per request: expected {exp:?}, got {got:?}"));
    }
    for (i, texts) in want["requests_contain"].as_array().into_iter().flatten().enumerate() {
        let sent: Vec<String> =
            reqs.get(i).and_then(|(m, _)| m.as_array().cloned()).unwrap_or_default().iter().filter_map(|x| x["content"].as_str().map(str::to_string)).collect();
        for t in strs(texts) {
            check(sent.iter().any(|c| c.contains(&t)), format!("request {i}: expected a message holding `{t}` in {sent:?}"));
        }
    }
    if let Some(t) = want["last_request_ends_with"].as_str() {
        let last = reqs.last().map(|(m, _)| m.as_array().unwrap().last().cloned().unwrap_or_default()).unwrap_or_default();
        check(last["content"].as_str().is_some_and(|c| c.ends_with(t)) && last["role"] == "user", format!("last message sent: expected a user message ending `{t}`, got {last}"));
    }
    // Tools.
    let results = tool_texts(&events);
    if let Some(r) = want.get("tool_results") {
        let exp = strs(r);
        let ok = exp.len() == results.len() && exp.iter().zip(&results).all(|(e, g)| g.starts_with(e.as_str()));
        check(ok, format!("tool results: expected ones starting {exp:?}, got {results:?}"));
    }
    for t in strs(&want["tool_results_contain"]) {
        check(results.iter().any(|r| r.contains(&t)), format!("tool results: expected `{t}` in {results:?}"));
    }
    // Errors of the model calls and requests to the fake server.
    if let Some(n) = want["llm_errors"].as_u64() {
        let got = events.iter().filter(|e| matches!(e.body, EventBody::LlmError { .. })).count() as u64;
        check(got == n, format!("llm_error events: expected {n}, got {got}"));
    }
    if let (Some(n), Some(f)) = (want["http_requests"].as_u64(), &fake) {
        check(f.requests().len() as u64 == n, format!("requests to the fake server: expected {n}, got {}", f.requests().len()));
    }
    if let Some(f) = &fake {
        if let Some(body) = want.get("http_body")
            && let Err(e) = subset(body, f.requests().first().unwrap_or(&Value::Null), "the first request's body")
        {
            check(false, e);
        }
        if let Some(Value::Object(h)) = want.get("http_header") {
            let got = f.headers(0);
            for (k, v) in h {
                let have = got.get(k.as_str()).and_then(|x| x.to_str().ok()).unwrap_or("");
                check(Some(have) == v.as_str(), format!("header {k}: expected {v}, got `{have}`"));
            }
        }
    }
    // The dialog tree.
    let dialogs = state["dialogs"].as_array().cloned().unwrap_or_default();
    if let Some(Value::Object(d)) = want.get("dialogs") {
        let got: Vec<(String, Value)> = dialogs.iter().map(|x| (x["id"].as_str().unwrap().to_string(), x["parent"].clone())).collect();
        let exp: Vec<(String, Value)> = d.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        check(got == exp, format!("dialogs (id, parent): expected {exp:?}, got {got:?}"));
    }
    if let Some(roles) = want.get("main_roles") {
        let got: Vec<String> = dialogs[0]["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap().to_string()).collect();
        check(got == strs(roles), format!("the canonical dialog's roles: expected {:?}, got {got:?}", strs(roles)));
    }
    for t in strs(&want["fork_last"]) {
        let last = dialogs.last().and_then(|d| d["messages"].as_array()?.last()?.get("content")?.as_str().map(str::to_string)).unwrap_or_default();
        check(last.contains(&t), format!("the last fork's last message: expected `{t}` in `{last}`"));
    }
    if let Some(st) = want.get("state")
        && let Err(e) = subset(st, &state, "state")
    {
        check(false, e);
    }
    if let Some(f) = fake {
        f.stop();
    }
    if !bad.is_empty() {
        bad.push(format!("events:\n{}", dump(&s)));
    }
    bad
}

#[test]
fn lllm_run_cases() {
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(cases_dir()).unwrap().flatten().map(|e| e.path()).filter(|p| p.join("case.yaml").is_file()).collect();
    dirs.sort();
    assert!(dirs.len() >= 7, "the LLLM run cases are missing: {dirs:?}");
    let mut failed = Vec::new();
    for d in &dirs {
        let problems = run_case(d);
        if !problems.is_empty() {
            failed.push(format!("== {}\n{}", d.file_name().unwrap().to_string_lossy(), problems.join("\n")));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn the_cli_runs_an_lllm_agent_offline() {
    let exe = env!("CARGO_BIN_EXE_switchyard");
    let cfg = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("agents/research-desk/configs/default.yaml");
    let out = std::process::Command::new(exe)
        .args(["run", cfg.to_str().unwrap(), "--agent", "researcher", "--input", "How tall is Mont Blanc?", "--state", "{\"audience\": \"hikers\"}", "--trust"])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(stdout.trim(), "<answer>Mont Blanc is 4,806 m high (2021 survey) [reference notes].</answer>");
    for step in ["invoke (call_llm)", "interrupt (tool_node)", "exception (lllm_exception)", "success (lllm_success)"] {
        assert!(stderr.contains(step), "narration lacks `{step}`:\n{stderr}");
    }
    // A missing user message and an unknown agent are clear errors.
    let out = std::process::Command::new(exe).args(["run", cfg.to_str().unwrap(), "--agent", "nobody", "--input", "x", "--trust"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no agent named `nobody`") && err.contains("researcher, writer"), "{err}");
    let out = std::process::Command::new(exe).args(["run", cfg.to_str().unwrap(), "--agent", "writer", "--trust"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("needs a user message"), "{err}");
}

#[test]
fn a_python_prompt_module_of_the_corpus_gives_the_prompt_and_needs_trust() {
    // The corpus' code-review service declares its prompts in `prompts/system.py`
    // (`from lllm.core.prompt import Prompt`; lllm itself is not installed: the stand-in reads it).
    let cfg = switchyard::testdata::conformance_dir().join("lllm/main-6845bfa/examples/code_review_service/configs/default.yaml");
    let doc = Arc::new(switchyard::doc::load_path(&cfg));
    let req = RunRequest { agent: Some("analyzer".into()), input: Some("review this".into()), ..Default::default() };
    let s = launch::start(doc.clone(), &req, RunOptions::new(Box::new(NoProvider))).unwrap_or_else(|e| panic!("{e}"));
    let system = s.state()["dialogs"][0]["messages"][0]["content"].as_str().unwrap_or("").to_string();
    assert!(system.starts_with("You are an expert code analyst."), "{system}");
    // Not trusted: refused with the module's place and what to do; nothing ran.
    let opts = switchyard::run::lllm::LllmOptions { trusted: false, ..Default::default() };
    let err = switchyard::run::lllm::LllmMachine::new(doc, Some("analyzer"), Some("x"), None, opts).err().expect("refused");
    assert!(err.contains("prompts/system.py:11") && err.contains("trust the folder to run its prompt modules"), "{err}");
}

#[test]
fn a_durable_lllm_run_stopped_on_a_fork_resumes_to_the_same_end() {
    use switchyard::run::store::{self, Durable};
    let dir = test_support::TempDir::new("lllm-durable");
    let db = dir.join("runs.sqlite");
    let cfg = cases_dir().join("parse_retry/config.yaml");
    let req = RunRequest { agent: Some("answerer".into()), input: Some("Capital of France?".into()), ..Default::default() };
    let doc = Arc::new(switchyard::doc::load_path(&cfg));
    let llm = launch::llm_choice(&doc, &req);
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.run_id = Some("lllm-durable-1".into());
    let mut s = store::start(&db, doc, &req, llm, None, options).unwrap_or_else(|e| panic!("{e}"));
    // invoke → exception → invoke: the run stands on the first fork.
    for _ in 0..3 {
        s.step();
    }
    assert_eq!(s.state()["active_dialog"], "main.exception1", "{}", dump(&s));
    drop(s);
    let (mut s, rec) = store::resume(&Durable { db: db.clone(), force: false }, "lllm-durable-1", None, RunOptions::new(Box::new(NoProvider)))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.dialect, "lllm");
    s.run();
    match s.status() {
        Status::Finished { status: RunStatus::Completed, output } => assert_eq!(output, &json!("<answer>Paris</answer>")),
        other => panic!("{other:?}\n{}", dump(&s)),
    }
    let ids: Vec<String> = s.state()["dialogs"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids, ["main", "main.exception1", "main.exception2"]);
}

#[test]
fn a_replay_reads_a_recorded_prompt_module_without_running_python() {
    use switchyard::llm::cassette::{Recorder, Replayer};
    use switchyard::run::lllm::{LllmMachine, LllmOptions};
    let dir = test_support::TempDir::new("lllm-module-cassette");
    let cassette = dir.join("solver.cassette.json");
    let doc = Arc::new(switchyard::doc::load_path(&cases_dir().join("prompt_module/config.yaml")));
    let (input, args) = ("What is 2 + 3?", json!({"user": "Ada"}));
    let req = RunRequest { agent: Some("solver".into()), input: Some(input.into()), state: Some(args.clone()), ..Default::default() };
    let scripted = launch::provider_for(&doc, &req).unwrap_or_else(|e| panic!("{e}"));
    let mut s = launch::session(doc.clone(), &req, RunOptions::new(Box::new(Recorder::new(scripted, &cassette)))).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    assert!(matches!(s.status(), Status::Finished { status: RunStatus::Completed, .. }), "{}", dump(&s));
    // The replay may not run Python (the folder is "not trusted"): the prompt and the prompt's
    // tool come from the cassette.
    let replay = Replayer::load(&cassette, true).unwrap();
    let opts = LllmOptions { trusted: false, ..Default::default() };
    let m = LllmMachine::with_provider(doc, Some("solver"), Some(input), Some(args), opts, Some(&replay)).unwrap_or_else(|e| panic!("{e}"));
    let mut r = RunSession::new(Box::new(m), json!(input), RunOptions::new(Box::new(replay)));
    r.run();
    match r.status() {
        Status::Finished { status: RunStatus::Completed, output } => assert_eq!(output, &json!("<answer>5</answer>")),
        other => panic!("{other:?}\n{}", dump(&r)),
    }
    assert_eq!(r.state()["dialogs"][0]["messages"][0]["content"], "You solve sums for Ada. Answer as <answer>...</answer>.");
    assert!(tool_texts(&r.events())[0].starts_with("Return of calling function add"), "{}", dump(&r));
}

#[test]
fn the_run_manifest_lists_the_prompt_modules_a_run_imports() {
    // Declared by name: that module; built by code: every module of the prompt folders.
    for (case, want) in [("prompt_module", "prompts/agent.py"), ("prompt_discovered", "prompts/**/*.py")] {
        let doc = switchyard::doc::load_path(&cases_dir().join(case).join("config.yaml"));
        let m = launch::manifest::manifest(&doc);
        let hit = m.executes.iter().find(|i| i.kind == "python import" && i.what.ends_with(want));
        let item = hit.unwrap_or_else(|| panic!("{case}: no python import of {want} in {:?}", m.executes));
        assert!(item.detail.as_deref().is_some_and(|d| d.contains("prompt")) && item.at.line == 6, "{case}: {item:?}");
    }
}
