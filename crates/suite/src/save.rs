//! *Save run as test case* (issue 33): a run's trace and configuration turned into a new case of
//! the agent's test suite — its input, initial state, answers, the LLM and tool replies it got as
//! a cassette beside the suite, and its route, final status and output as expectations — and
//! the case added to the suite file with the editor's span-based surgery, so every byte outside
//! the new case stays as it was (comments included). A suite that does not exist yet is created
//! with a header comment.

use crate::file::{Suite, load_str};
use editor::edit::{PathSeg, set_in_yaml};
use runtime::cassette::{Cassette, Exchange, RecordedError, RecordedRequest, RecordedResponse};
use runtime::events::{Event, EventBody};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What the run was started with, and what it was given while it ran.
#[derive(Clone, Debug, Default)]
pub struct RunRecord {
    /// The sherma agent of a multi-agent file the run ran.
    pub agent_id: Option<String>,
    pub input: Option<String>,
    pub state: Option<Value>,
    /// Answers queued at the start (they answer the first questions, in order).
    pub answers: Vec<Value>,
    /// Answers given while the run waited, by the id of the question (`interrupt` event).
    pub answered: Vec<(String, Value)>,
    /// The cassette the run recorded (its LLM, tool and effect exchanges), if it recorded one.
    pub recorded: Option<PathBuf>,
}

/// A case made from a run: the case as JSON (written into the suite) and its cassette.
#[derive(Clone, Debug)]
pub struct SavedCase {
    pub case: Value,
    pub cassette: Cassette,
}

/// Where a saved case went.
#[derive(Clone, Debug, serde::Serialize, ts_rs::TS)]
pub struct SavedRun {
    /// The suite file (created when the agent had none).
    pub file: String,
    pub case: String,
    /// The cassette written beside the suite.
    pub cassette: String,
    /// The suite was created.
    pub created: bool,
}

/// The cassette of a run rebuilt from its trace: each `llm_request` with the `llm_response` (or
/// `llm_error`) of the same node that follows it, each `tool_call` with its `tool_result`,
/// numbered per node as a recording numbers them. Effects (script outputs, hooks) are not in a
/// trace, so the cassette is version 1: a replay runs them again.
pub fn cassette_from_trace(events: &[Event]) -> Cassette {
    let mut exchanges: Vec<Exchange> = Vec::new();
    let mut calls: HashMap<(bool, String), usize> = HashMap::new();
    let mut pending_llm: HashMap<String, Vec<usize>> = HashMap::new();
    let mut pending_tool: HashMap<String, usize> = HashMap::new();
    let mut next = |tool: bool, node: &str| {
        let n = calls.entry((tool, node.to_string())).or_insert(0);
        *n += 1;
        *n
    };
    for e in events {
        match &e.body {
            EventBody::LlmRequest { node, messages, tools, model } => {
                let call = next(false, node);
                pending_llm.entry(node.clone()).or_default().push(exchanges.len());
                exchanges.push(Exchange::Llm {
                    node: node.clone(),
                    call,
                    request: RecordedRequest { model: model.clone(), messages: messages.clone(), tools: tools.clone(), response_format: None },
                    response: None,
                    error: None,
                });
            }
            EventBody::LlmResponse { node, content, tool_calls, usage, model, .. } => {
                if let Some(i) = pending_llm.get_mut(node).filter(|v| !v.is_empty()).map(|v| v.remove(0))
                    && let Exchange::Llm { response, .. } = &mut exchanges[i]
                {
                    *response = Some(RecordedResponse {
                        content: content.clone(),
                        tool_calls: tool_calls.clone(),
                        usage: *usage,
                        model: model.clone(),
                        finish_reason: None,
                    });
                }
            }
            EventBody::LlmError { node, kind, message, .. } => {
                if let Some(i) = pending_llm.get_mut(node).filter(|v| !v.is_empty()).map(|v| v.remove(0))
                    && let Exchange::Llm { error, .. } = &mut exchanges[i]
                {
                    *error = Some(RecordedError { kind: *kind, message: message.clone(), raw: None });
                }
            }
            EventBody::ToolCall { node, call } => {
                let n = next(true, node);
                pending_tool.insert(call.id.clone(), exchanges.len());
                exchanges.push(Exchange::Tool {
                    node: node.clone(),
                    call: n,
                    name: call.name.clone(),
                    args: call.args.clone(),
                    result: Value::Null,
                    error: None,
                });
            }
            EventBody::ToolResult { id, result: r, error: er, .. } => {
                if let Some(i) = pending_tool.remove(id)
                    && let Exchange::Tool { result, error, .. } = &mut exchanges[i]
                {
                    *result = r.clone();
                    *error = er.clone();
                }
            }
            _ => {}
        }
    }
    // A call the run never got an answer to (stopped mid-call) cannot be replayed.
    exchanges.retain(|x| !matches!(x, Exchange::Llm { response: None, error: None, .. }));
    Cassette { version: 1, exchanges }
}

/// The events of the run as it finally went: after a rewind to step `n` (a fork), the top-level
/// run's events from step `n + 1` on before it are dropped, with what nested runs did meanwhile.
pub fn last_fork(events: &[Event]) -> Vec<Event> {
    let root = root_run(events);
    let mut kept: Vec<(u64, &Event)> = Vec::new();
    let mut step = 0;
    for e in events {
        match &e.body {
            EventBody::NodeEnter { step: s, .. } if e.run == root => step = *s,
            EventBody::Rewound { step: s } if e.run == root => {
                kept.retain(|(at, _)| at <= s);
                step = *s;
                continue;
            }
            _ => {}
        }
        kept.push((step, e));
    }
    kept.into_iter().map(|(_, e)| e.clone()).collect()
}

/// The answers a run used, in order: each question (`interrupt` event, once per id and run) gets
/// the answer given to it while the run waited (the last one, as a rewound run asks again), else
/// the next queued answer.
pub fn answers_used(events: &[Event], run: &RunRecord) -> Vec<Value> {
    let mut queued = run.answers.iter();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in events {
        if let EventBody::Interrupt { id, .. } = &e.body
            && seen.insert((e.run.as_str(), id.as_str()))
        {
            match run.answered.iter().rev().find(|(i, _)| i == id) {
                Some((_, v)) => out.push(v.clone()),
                None => out.extend(queued.next().cloned()),
            }
        }
    }
    out
}

/// Why the run (as it finally went) cannot become a case that passes, if it cannot: it is still
/// going (a case replays a run to its end, or to a question left unanswered), it was stopped,
/// or its state was edited while it was paused (a case cannot repeat an edit).
pub fn replayable(events: &[Event]) -> Result<(), String> {
    let root = root_run(events);
    if let Some(key) = events.iter().find_map(|e| match &e.body {
        EventBody::StateEdited { key, .. } => Some(key.clone()),
        _ => None,
    }) {
        return Err(format!(
            "the run's state was edited while it was paused (`{key}`), which a test case cannot repeat; give the value as the run's initial state or input and run it again"
        ));
    }
    let last = events.iter().rev().filter(|e| e.run == root).find(|e| {
        !matches!(e.body, EventBody::Paused { .. } | EventBody::Log { .. } | EventBody::NestedPaused { .. } | EventBody::NestedResumed {})
    });
    match last.map(|e| &e.body) {
        Some(EventBody::RunFinished { status: runtime::events::RunStatus::Stopped, .. }) => {
            Err("the run was stopped before its end; a test case replays a run to its end: run it to the end (or until it waits for an answer), then save it".into())
        }
        Some(EventBody::RunFinished { .. } | EventBody::Interrupt { .. }) => Ok(()),
        _ => Err("the run has not finished: continue it to its end (or until it waits for an answer), then save it".into()),
    }
}

/// The run's own id (the top-level run's, not a nested run's).
fn root_run(events: &[Event]) -> String {
    events.iter().find(|e| matches!(e.body, EventBody::RunStarted { .. })).or(events.first()).map(|e| e.run.clone()).unwrap_or_default()
}

/// The case a run makes (as it finally went, see [`last_fork`]): `name`, its input, initial state
/// and the answers it used, `cassette` (the path of
/// its cassette, relative to the suite) and expectations — the nodes it entered in order (as the
/// suite's `nodes` check counts them: `suite` gives the graph's declaration order), its final
/// status and its output.
pub fn case_from_run(suite: &Suite, name: &str, events: &[Event], run: &RunRecord, cassette: &str, recorded: Option<Cassette>) -> SavedCase {
    let rewound = events.iter().any(|e| matches!(e.body, EventBody::Rewound { .. }));
    let events = &last_fork(events)[..];
    let root = root_run(events);
    let mut case = Map::new();
    case.insert("name".into(), json!(name));
    let input = run.input.clone().filter(|s| !s.is_empty());
    if let Some(i) = input {
        case.insert("input".into(), json!(i));
    }
    if let Some(s) = run.state.as_ref().filter(|s| s.as_object().is_some_and(|m| !m.is_empty())) {
        case.insert("state".into(), s.clone());
    }
    case.insert("cassette".into(), json!(cassette));
    let answers = answers_used(events, run);
    if !answers.is_empty() {
        case.insert("answers".into(), Value::Array(answers));
    }
    let mut expect = Map::new();
    let finished = events.iter().rev().filter(|e| e.run == root).find_map(|e| match &e.body {
        EventBody::RunFinished { status, output, .. } => Some((*status, output.clone())),
        _ => None,
    });
    match &finished {
        Some((status, _)) => {
            expect.insert("status".into(), serde_json::to_value(status).unwrap_or(Value::Null));
        }
        // Waiting for an answer (see `replayable`): a case with no answer left ends so too.
        None => {
            expect.insert("status".into(), json!("interrupted"));
        }
    }
    // A run left waiting ends `interrupted` in a suite, its sequence ending at the node that asked.
    let mut ended = events.to_vec();
    if finished.is_none() {
        ended.push(Event { run: root.clone(), ts_ms: 0, body: EventBody::RunFinished { status: runtime::events::RunStatus::Interrupted, state: Value::Null, output: Value::Null } });
    }
    let (nodes, _) = crate::run::sequence(suite, &root, &ended);
    if !nodes.is_empty() {
        expect.insert("nodes".into(), json!(nodes));
    }
    if let Some((_, output)) = finished.filter(|(_, o)| !o.is_null()) {
        expect.insert("output".into(), output);
    }
    if !expect.is_empty() {
        case.insert("expect".into(), Value::Object(expect));
    }
    // A recording made across a rewind may hold the abandoned branch's calls: a rewound run's
    // cassette is rebuilt from the branch it kept.
    let cassette = recorded.filter(|_| !rewound).unwrap_or_else(|| cassette_from_trace(events));
    SavedCase { case: Value::Object(case), cassette }
}

/// The first text of a new suite for the agent file `agent` (its name as the suite names it);
/// [`append_case`] adds `cases:` with the first case.
pub fn new_suite_text(agent: &str, agent_id: Option<&str>) -> String {
    let mut t = format!(
        "# Tests of {agent}: `switchyard test` runs them; the app's Tests panel lists them.\n# Cases saved from runs replay the run's cassette and expect its route, status and output.\nagent: {}\n",
        editor_scalar(agent)
    );
    if let Some(id) = agent_id {
        t.push_str(&format!("agent_id: {}\n", editor_scalar(id)));
    }
    t
}

fn editor_scalar(s: &str) -> String {
    // JSON strings are YAML double-quoted scalars; plain when nothing in it needs quoting.
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c)) {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

/// `suite_text` with `case` added at the end of its `cases:` list (created when absent); every
/// other byte is kept.
pub fn append_case(suite_text: &str, case: &Value) -> Result<String, String> {
    let root = syntax::yaml::parse(&syntax::source::SourceFile::new("suite.tests.yaml", suite_text));
    let Some(root) = root.root else { return Err("the suite file is not valid YAML; fix it first".into()) };
    let cases = root.get("cases");
    let out = match cases.and_then(|c| c.as_seq().map(<[_]>::len)) {
        Some(n) => set_in_yaml(suite_text, &[PathSeg::Key("cases".into()), PathSeg::Index(n)], Some(case)),
        None if cases.is_some_and(|c| !c.is_null()) => return Err("the suite's `cases` is not a list".into()),
        None => set_in_yaml(suite_text, &[PathSeg::Key("cases".into())], Some(&Value::Array(vec![case.clone()]))),
    };
    out.map_err(|e| e.message)
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').chars().take(60).collect::<String>();
    if out.is_empty() { "case".into() } else { out }
}

/// The suite a case of `agent` goes to: the first existing suite of that agent in its folder,
/// else `<agent stem>.tests.yaml` beside it (for a Loki `graph.yaml`, `<folder>.tests.yaml`).
pub fn suite_for(agent: &Path) -> Result<(PathBuf, bool), String> {
    let dir = agent.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let want = std::fs::canonicalize(agent).ok();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| crate::is_suite_name(p))
        .collect();
    files.sort();
    for f in &files {
        let s = crate::load(f);
        if want.is_some() && std::fs::canonicalize(&s.doc.path).ok() == want {
            return Ok((f.clone(), false));
        }
    }
    let stem = agent.file_stem().and_then(|s| s.to_str()).unwrap_or("agent");
    let stem = if stem == "graph" { dir.file_name().and_then(|s| s.to_str()).unwrap_or(stem) } else { stem };
    let path = dir.join(format!("{stem}.tests.yaml"));
    if path.exists() {
        return Err(format!("{} exists and tests another agent; add the case to a suite of {} by hand", path.display(), agent.display()));
    }
    Ok((path, true))
}

/// Save a run of `agent` (its trace events and what it was given) as the case `name` of the
/// agent's suite: the cassette goes to `cassettes/<name>.json` beside the suite (private, as
/// every cassette), then the suite is written atomically.
pub fn save_run(agent: &Path, name: &str, events: &[Event], run: &RunRecord) -> Result<SavedRun, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("give the case a name".into());
    }
    if events.is_empty() {
        return Err("the run's trace holds no events".into());
    }
    replayable(&last_fork(events))?;
    let (file, created) = suite_for(agent)?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let text = if created {
        let rel = agent.file_name().and_then(|s| s.to_str()).unwrap_or("agent.yaml");
        new_suite_text(rel, run.agent_id.as_deref())
    } else {
        syntax::source::read_bounded_text(&file, crate::file::MAX_SUITE_BYTES, None).map_err(|e| format!("cannot read {}: {e}", file.display()))?
    };
    let suite = load_str(&file, &text);
    if suite.cases.iter().any(|c| c.name == name) {
        return Err(format!("{} has a case named `{name}` already; choose another name", file.display()));
    }
    let base = slug(name);
    let mut rel = format!("cassettes/{base}.json");
    let mut k = 2;
    while dir.join(&rel).exists() {
        rel = format!("cassettes/{base}-{k}.json");
        k += 1;
    }
    let recorded = match run.recorded.as_deref().filter(|p| p.is_file()) {
        Some(p) => Some(Cassette::load(p)?),
        None => None,
    };
    let saved = case_from_run(&suite, name, events, run, &rel, recorded);
    let new_text = append_case(&text, &saved.case)?;
    let cassette_path = dir.join(&rel);
    saved.cassette.scrubbed().save(&cassette_path)?;
    editor::studio::write_atomic(&file, new_text.as_bytes()).map_err(|e| format!("cannot write {}: {e:?}", file.display()))?;
    Ok(SavedRun { file: file.display().to_string(), case: name.to_string(), cassette: cassette_path.display().to_string(), created })
}

/// The events of a JSONL trace file.
pub fn read_events(trace: &Path) -> Result<Vec<Event>, String> {
    runtime::driver::read_trace(trace)?
        .into_iter()
        .map(|v| serde_json::from_value(v).map_err(|e| format!("{}: an event is unreadable: {e}", trace.display())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str) -> Value {
        json!({"name": name, "input": "v1.2", "cassette": "cassettes/x.json", "answers": ["ship"],
               "expect": {"status": "completed", "nodes": ["plan", "approve"], "output": "Shipped: \"ok\"\nline 2"}})
    }

    #[test]
    fn appends_keeping_every_other_byte() {
        let text = "# header comment\nagent: agent.yaml   # the agent\ncases:\n  - name: first   # keep me\n    input: hi\n    expect: { status: completed }\n\n# trailing comment\n";
        let out = append_case(text, &case("saved")).unwrap();
        assert!(out.starts_with("# header comment\nagent: agent.yaml   # the agent\ncases:\n  - name: first   # keep me\n    input: hi\n    expect: { status: completed }\n"), "{out}");
        assert!(out.contains("# trailing comment"), "{out}");
        let added = &out[text.find("\n\n# trailing").unwrap()..];
        assert!(out.len() > text.len() && added.contains("# trailing comment"));
        let s = load_str(Path::new("/nonexistent/x.tests.yaml"), &out);
        let names: Vec<_> = s.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["first", "saved"], "{out}");
        let saved = &s.cases[1];
        assert_eq!(saved.input.as_deref(), Some("v1.2"));
        assert_eq!(saved.answers, vec![json!("ship")]);
        // The new case's text is what a reparse gives back.
        let root = syntax::yaml::parse(&syntax::source::SourceFile::new("x", &out)).root.unwrap();
        let item = &root.get("cases").unwrap().as_seq().unwrap()[1];
        assert_eq!(item.get("expect").unwrap().get("output").unwrap().as_str(), Some("Shipped: \"ok\"\nline 2"));
    }

    #[test]
    fn creates_a_suite_and_fills_an_empty_or_missing_list() {
        let t = new_suite_text("agent.yaml", None);
        assert!(t.starts_with("# Tests of agent.yaml"));
        let out = append_case(&t, &case("one")).unwrap();
        assert!(out.starts_with(t.lines().next().unwrap()));
        assert!(out.contains("\ncases:\n  - name: one\n"), "a block list: {out}");
        let out = append_case(&out, &case("two")).unwrap();
        let root = syntax::yaml::parse(&syntax::source::SourceFile::new("x", &out)).root.unwrap();
        assert_eq!(root.get("cases").unwrap().as_seq().unwrap().len(), 2, "{out}");
        let out = append_case("agent: a.yaml\n", &case("one")).unwrap();
        assert!(out.starts_with("agent: a.yaml\ncases:"), "{out}");
        let out = append_case("agent: a.yaml\ncases: []  # none yet\n", &case("one")).unwrap();
        let root = syntax::yaml::parse(&syntax::source::SourceFile::new("x", &out)).root.unwrap();
        assert_eq!(root.get("cases").unwrap().as_seq().unwrap().len(), 1, "{out}");
        assert!(out.contains("# none yet"), "{out}");
        assert!(append_case("cases: 3\n", &case("x")).is_err());
    }

    #[test]
    fn a_saved_run_passes_as_a_case() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (src, agent) in [("agents/release-gate", "graph.yaml"), ("agents/support-triage", "agent.yaml")] {
            let dir = std::env::temp_dir().join(format!("sy-save-{}-{}", std::process::id(), slug(src)));
            let _ = std::fs::remove_dir_all(&dir);
            copy_dir(&root.join(src), &dir);
            // The folder's own suite is kept: the case is appended to it, its bytes kept.
            let suite_path = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| crate::is_suite_name(p)).unwrap();
            let before = std::fs::read_to_string(&suite_path).unwrap();
            let agent_path = dir.join(agent);
            // Run the first case of the shipped suite as the debugger would, with a trace.
            let suite = crate::load(&suite_path);
            assert!(!suite.has_errors(), "{:?}", suite.diagnostics);
            let first = suite.cases.iter().find(|c| !c.answers.is_empty() || src.contains("support")).unwrap().clone();
            let traces = dir.join("traces");
            let opts = crate::Options { trust: true, only: Some(first.name.clone()), trace_dir: Some(traces.clone()), ..Default::default() };
            // A failing run's trace is written: an expectation that cannot hold makes it fail.
            let mut failing = first.clone();
            failing.expects.push(crate::file::Expect { key: "max_steps".into(), span: first.span, check: crate::file::Check::MaxSteps(0) });
            let (res, _) = crate::run::run_case(&suite, &failing, &opts);
            let trace = res.run.as_ref().and_then(|r| r.trace.clone()).expect("a failing run's trace");
            let events = read_events(Path::new(&trace)).unwrap();
            let run = RunRecord { input: first.input.clone(), state: first.state.clone(), answers: first.answers.clone(), ..Default::default() };
            let saved = save_run(&agent_path, "saved from a run", &events, &run).unwrap();
            assert!(!saved.created);
            let after = std::fs::read_to_string(&suite_path).unwrap();
            assert!(after.starts_with(before.trim_end()), "untouched bytes changed:\n{after}");
            assert!(Path::new(&saved.cassette).is_file());
            // The saved case passes.
            let suite = crate::load(&suite_path);
            assert!(!suite.has_errors(), "{:?}\n{after}", suite.diagnostics);
            let case = suite.cases.iter().find(|c| c.name == "saved from a run").unwrap();
            assert!(matches!(case.llm, crate::file::Llm::Cassette { .. }));
            assert!(case.expects.iter().any(|e| e.key == "nodes"));
            let opts = crate::Options { trust: true, ..Default::default() };
            let (res, _) = crate::run::run_case(&suite, case, &opts);
            assert!(matches!(res.outcome, crate::Outcome::Passed), "{:?}\n{after}", res.run);
            // A run left waiting at its first question (as the debugger's trace holds it: no
            // `run_finished`) is a case that ends `interrupted` there.
            let asked = events.iter().position(|e| matches!(e.body, EventBody::Interrupt { .. })).unwrap();
            let waiting = RunRecord { input: first.input.clone(), state: first.state.clone(), ..Default::default() };
            save_run(&agent_path, "waits for the first answer", &events[..=asked], &waiting).unwrap();
            let suite = crate::load(&suite_path);
            let case = suite.cases.iter().find(|c| c.name == "waits for the first answer").unwrap();
            assert!(case.answers.is_empty());
            let (res, _) = crate::run::run_case(&suite, case, &opts);
            assert!(matches!(res.outcome, crate::Outcome::Passed), "{:?}", res.run);
            // A second save with the same name is refused; a new agent folder gets a new suite.
            assert!(save_run(&agent_path, "saved from a run", &events, &run).is_err());
            std::fs::remove_file(&suite_path).unwrap();
            let saved = save_run(&agent_path, "fresh", &events, &run).unwrap();
            assert!(saved.created);
            let suite = crate::load(Path::new(&saved.file));
            assert!(!suite.has_errors(), "{:?}", suite.diagnostics);
            let (res, _) = crate::run::run_case(&suite, &suite.cases[0], &opts);
            assert!(matches!(res.outcome, crate::Outcome::Passed), "{:?}", res.run);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    fn ev(run: &str, body: Value) -> Event {
        let mut v = body;
        v["run"] = json!(run);
        v["ts_ms"] = json!(1);
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_rewound_run_keeps_its_last_fork_and_the_answers_it_used() {
        let enter = |s: u64, n: &str| ev("r", json!({"event": "node_enter", "step": s, "node": n, "kind": "x"}));
        let ask = |id: &str| ev("r", json!({"event": "interrupt", "id": id, "node": "ask", "kind": "approval", "prompt": "?"}));
        let events = vec![
            ev("r", json!({"event": "run_started", "agent": "a", "input": "hi"})),
            enter(1, "plan"),
            ask("i1"),
            enter(1, "plan"),
            enter(2, "ask"),
            ask("i2"),
            enter(3, "held"),
            ev("r", json!({"event": "rewound", "step": 2})),
            ask("i2"),
            enter(3, "shipped"),
            ev("r", json!({"event": "run_finished", "status": "completed", "state": {}, "output": "ok"})),
        ];
        let kept = last_fork(&events);
        let nodes: Vec<_> = kept.iter().filter_map(|e| match &e.body { EventBody::NodeEnter { node, .. } => Some(node.as_str()), _ => None }).collect();
        assert_eq!(nodes, ["plan", "plan", "ask", "shipped"]);
        // i1 from the queue; i2 answered twice (before and after the rewind): the last answer.
        let run = RunRecord { answers: vec![json!("q1"), json!("q2")], answered: vec![("i2".into(), json!("hold")), ("i2".into(), json!("ship"))], ..Default::default() };
        assert_eq!(answers_used(&kept, &run), vec![json!("q1"), json!("ship")]);
        assert!(replayable(&kept).is_ok());
        // Still going, stopped, or edited: refused, saying why.
        assert!(replayable(&kept[..8]).unwrap_err().contains("has not finished"));
        assert!(replayable(&kept[..6]).is_ok(), "waiting for an answer");
        let mut stopped = kept.clone();
        stopped.push(ev("r", json!({"event": "run_finished", "status": "stopped", "state": {}, "output": null})));
        stopped.remove(kept.len() - 1);
        assert!(replayable(&stopped).unwrap_err().contains("stopped"));
        let mut edited = kept.clone();
        edited.insert(3, ev("r", json!({"event": "state_edited", "key": "mode", "value": 1})));
        assert!(replayable(&edited).unwrap_err().contains("`mode`"));
        // Nothing typed: the queue answers each question once, in order; unused ones are left out.
        let run = RunRecord { answers: vec![json!("a"), json!("b"), json!("c")], ..Default::default() };
        assert_eq!(answers_used(&kept, &run), vec![json!("a"), json!("b")]);
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                copy_dir(&p, &to.join(e.file_name()));
            } else {
                std::fs::copy(&p, to.join(e.file_name())).unwrap();
            }
        }
    }
}
