//! A Loki run's dynamic part as JSON, for durable runs (`run::store`): the state, the frontier,
//! visit counts, answers given to the frontier's approval/input nodes, the time spent (what
//! `settings.timeout` limits), the output and whether the run ended. The document, the Python
//! bridge and MCP servers are rebuilt from the agent directory.
//!
//! An agent node's child graph runs to its end inside the parent's step (a question it cannot
//! take from the answer queue fails the node), so no child run is ever in progress between two
//! steps and nothing of it needs saving.

use super::{LokiMachine, LokiState};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// The version of this snapshot layout; a restore refuses others.
const FORMAT: u64 = 1;

impl LokiMachine {
    pub(super) fn durable_snapshot(&self) -> Value {
        let state: serde_json::Map<String, Value> =
            self.state.iter().map(|(k, v)| (k.clone(), v.as_ref().clone())).collect();
        json!({
            "format": FORMAT,
            "dialect": "loki",
            "agent": self.agent,
            "state": state,
            "frontier": self.frontier,
            "visits": self.visits,
            "answers": self.answers,
            "elapsed_ms": self.elapsed.as_millis() as u64,
            "output": self.output,
            "done": self.done,
        })
    }

    pub(super) fn durable_restore(&mut self, snap: &Value) -> Result<(), String> {
        if snap.get("dialect").and_then(Value::as_str) != Some("loki") {
            return Err("the saved run is not a Loki run".into());
        }
        let format = snap.get("format").and_then(Value::as_u64).unwrap_or(0);
        if format != FORMAT {
            return Err(format!("the saved Loki run has format {format}; this version reads format {FORMAT}"));
        }
        let field = |key: &str| snap.get(key).cloned().unwrap_or(Value::Null);
        let bad = |key: &str, e: serde_json::Error| format!("the saved run's `{key}` is unreadable: {e}");
        let frontier: BTreeSet<String> = serde_json::from_value(field("frontier")).map_err(|e| bad("frontier", e))?;
        let l = self.loki();
        if let Some(n) = frontier.iter().find(|n| !l.has_node(n)) {
            return Err(format!(
                "the saved run goes on at node '{n}', which graph '{}' no longer has (the file changed)",
                self.name
            ));
        }
        let visits: BTreeMap<String, u64> = serde_json::from_value(field("visits")).map_err(|e| bad("visits", e))?;
        let answers: BTreeMap<String, String> =
            serde_json::from_value(field("answers")).map_err(|e| bad("answers", e))?;
        let Value::Object(fields) = field("state") else {
            return Err("the saved run has no state object".into());
        };
        let state: LokiState = fields.into_iter().map(|(k, v)| (k, Arc::new(v))).collect();
        self.state = state;
        self.frontier = frontier;
        self.visits = visits;
        self.answers = answers;
        self.elapsed = Duration::from_millis(snap.get("elapsed_ms").and_then(Value::as_u64).unwrap_or(0));
        self.output = field("output");
        self.done = snap.get("done").and_then(Value::as_bool).unwrap_or(false);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::machine::LokiMachine;
    use runtime::provider::NoProvider;
    use runtime::session::{Machine, ResumePoint, RunOptions, RunSession, Status};
    use serde_json::{Value, json};
    use std::sync::Arc;

    const GRAPH: &str = r#"
version: "1.0"
name: gate
start: first
initial_state:
  n: 1
nodes:
  first:
    type: approval
    question: "Go on with {{n}}?"
    options: [yes, no]
    routes:
      yes: second
      no: stop
    on_other: stop
  second:
    type: input
    question: "Name?"
    state_updates:
      name: "{{input}}"
    next: stop
  stop:
    type: end
    output: "{{name}} {{n}}"
"#;

    /// A machine for the graph in a folder of its own per test (`tag`): tests run in
    /// parallel, and the folder's name is the agent's name, which a restore checks.
    fn machine(tag: &str) -> LokiMachine {
        let dir = std::env::temp_dir().join(format!("sy-loki-durable-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("graph.yaml");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(GRAPH) {
            std::fs::write(&path, GRAPH).unwrap();
        }
        let doc = Arc::new(model::doc::load_path(&path));
        LokiMachine::new(doc, "hello", None).unwrap()
    }

    #[test]
    fn round_trip_between_two_questions() {
        let mut opts = RunOptions::new(Box::new(NoProvider));
        opts.answers = vec![json!("yes"), json!("Ada")];
        let mut whole = RunSession::new(Box::new(machine("round-trip")), Value::Null, opts);
        whole.run();
        assert!(matches!(whole.status(), Status::Finished { .. }), "{:?}", whole.status());

        let mut opts = RunOptions::new(Box::new(NoProvider));
        opts.answers = vec![json!("yes")];
        let mut first = RunSession::new(Box::new(machine("round-trip")), Value::Null, opts);
        let Status::Interrupted { pending } = first.run().clone() else { panic!("{:?}", first.status()) };
        assert_eq!(pending.node, "second");
        let snap: Value = serde_json::from_str(&first.durable_snapshot().to_string()).unwrap();
        let mut m = machine("round-trip");
        m.restore(&snap["machine"]).unwrap();
        assert_eq!(m.snapshot(), snap["machine"]);
        assert_eq!(m.visits(), &[("first".to_string(), 1u64)].into_iter().collect());
        let (at, _, _) = ResumePoint::parse(&snap, Status::Interrupted { pending: pending.clone() }).unwrap();
        let mut resumed = RunSession::resume(Box::new(m), Value::Null, at, RunOptions::new(Box::new(NoProvider)));
        assert_eq!(resumed.status(), &Status::Interrupted { pending: pending.clone() });
        resumed.answer(&pending.id, json!("Ada")).unwrap();
        resumed.run();
        assert_eq!(resumed.status(), whole.status());
        assert_eq!(resumed.state(), whole.state());
        assert_eq!(resumed.steps(), whole.steps());
    }

    #[test]
    fn restore_refuses_unknown_nodes_and_formats() {
        let m = machine("refuse");
        let mut snap = m.snapshot();
        snap["frontier"] = json!(["nowhere"]);
        assert!(machine("refuse").restore(&snap).unwrap_err().contains("no longer has"));
        snap["frontier"] = json!(["first"]);
        snap["format"] = json!(7);
        assert!(machine("refuse").restore(&snap).unwrap_err().contains("format 7"));
        snap["dialect"] = json!("sherma");
        assert!(machine("refuse").restore(&snap).is_err());
    }
}
