//! Assertions on runs: how a [`RunSession`] ended (panicking with its events when it did not end
//! as the test expects) and what its events say.

use runtime::events::{Event, EventBody, RunStatus};
use runtime::provider::{BoxProvider, ScriptedProvider};
use runtime::session::{Pending, RunSession, Status};
use serde_json::Value;
use std::path::Path;

/// The run's events as JSON lines, for a failing assertion's message.
pub fn dump(s: &RunSession) -> String {
    s.events().iter().map(|e| e.to_json_line()).collect::<Vec<_>>().join("\n")
}

/// The status of a finished run; panics with the events when it has not finished.
pub fn finished(s: &RunSession) -> RunStatus {
    match s.status() {
        Status::Finished { status, .. } => *status,
        other => panic!("not finished: {other:?}\n{}", dump(s)),
    }
}

/// The output of a run that completed; panics with its failure and events otherwise.
pub fn completed(s: &RunSession) -> Value {
    match s.status() {
        Status::Finished { status: RunStatus::Completed, output } => output.clone(),
        other => panic!("run did not complete: {other:?}; failure: {:?}; events:\n{}", s.failure(), dump(s)),
    }
}

/// The failure message of a run that failed; panics with its status and events otherwise.
pub fn failure(s: &RunSession) -> String {
    match s.failure() {
        Some((_, m)) => m.clone(),
        None => panic!("run did not fail: {:?}\n{}", s.status(), dump(s)),
    }
}

/// The question a run waits on; panics with its failure and events when it is not interrupted.
pub fn pending(s: &RunSession) -> Pending {
    match s.status() {
        Status::Interrupted { pending } => pending.clone(),
        other => panic!("run is not interrupted: {other:?}; failure: {:?}; events:\n{}", s.failure(), dump(s)),
    }
}

/// A scripted provider from the text of a replies file (`replies: [...]`); panics when it does
/// not parse.
pub fn scripted(replies: &str) -> BoxProvider {
    Box::new(ScriptedProvider::from_str(Path::new("replies.yaml"), replies).unwrap_or_else(|e| panic!("replies: {e:?}")))
}

/// `(name, result, error)` of every tool result.
pub fn tool_results(events: &[Event]) -> Vec<(String, Value, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolResult { name, result, error, .. } => Some((name.clone(), result.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

/// The nodes run `run` entered, in the order of its events.
pub fn nodes_of(events: &[Event], run: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.run == run)
        .filter_map(|e| match &e.body {
            EventBody::NodeEnter { node, .. } => Some(node.clone()),
            _ => None,
        })
        .collect()
}

/// `(type, content)` of every message in a sherma state's `messages`.
pub fn messages(state: &Value) -> Vec<(String, String)> {
    state["messages"]
        .as_array()
        .expect("messages is a list")
        .iter()
        .map(|m| (m["type"].as_str().unwrap_or("?").to_string(), m["content"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// Compare a trace with its golden file `file` (`name` in the message): `update` rewrites the
/// file instead (`UPDATE_EXPECT=1`); otherwise a difference is returned as a message naming the
/// first line that differs, what the file wants and what the run gave.
pub fn check_golden(name: &str, file: &Path, got: &str, update: bool) -> Option<String> {
    if update {
        std::fs::write(file, got).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
        return None;
    }
    let want = std::fs::read_to_string(file).unwrap_or_default();
    if want == got {
        return None;
    }
    let first = want.lines().zip(got.lines()).position(|(a, b)| a != b).unwrap_or(want.lines().count().min(got.lines().count()));
    Some(format!(
        "{name}: differs from {} at line {}:\n  want: {}\n  got:  {}",
        file.display(),
        first + 1,
        want.lines().nth(first).unwrap_or("<end>"),
        got.lines().nth(first).unwrap_or("<end>")
    ))
}
