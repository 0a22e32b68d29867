//! A sherma run's dynamic part as JSON, for durable runs (`run::store`): the state, the nodes
//! of the current wave (with the state a fan-out's nodes share) and the next one, the answer to a pending interrupt, the node-run count
//! since the last answer (the recursion limit), the output, a remote (A2A) task waiting for
//! an answer, and what `before_graph_invoke` hooks set for the invocation. Everything else (the
//! document, routing, tools, MCP servers, clients) is rebuilt from the agent file.
//!
//! Nested runs (`call_agent`, sub-agents as tools) always finish inside the step that started
//! them (a child's unanswered question ends it), so no child run is ever in progress between
//! two steps and nothing of it needs saving.

use super::ShermaMachine;
use super::remote::RemoteWait;
use model::graph::END;
use crate::state::State;
use serde_json::{Value, json};

/// The version of this snapshot layout; a restore refuses others.
const FORMAT: u64 = 1;

impl ShermaMachine {
    pub(super) fn durable_snapshot(&self) -> Value {
        json!({
            "format": FORMAT,
            "dialect": "sherma",
            "agent": self.shared.agent().name.value,
            "state": self.state.to_json(),
            "queue": self.queue,
            "next": self.next,
            // Mid fan-out: the state the wave's nodes see, and which plain fields they set.
            "wave_base": self.wave_base.as_ref().map(State::to_json),
            "wave_writes": self.wave_writes,
            "resume": self.resume,
            "since_resume": self.since_resume,
            "output": self.output,
            "remote": self.remote,
            "invocation": self.invocation,
            "recursion_override": self.recursion_override,
        })
    }

    pub(super) fn durable_restore(&mut self, snap: &Value) -> Result<(), String> {
        let format = snap.get("format").and_then(Value::as_u64).unwrap_or(0);
        if snap.get("dialect").and_then(Value::as_str) != Some("sherma") {
            return Err("the saved run is not a sherma run".into());
        }
        if format != FORMAT {
            return Err(format!("the saved sherma run has format {format}; this version reads format {FORMAT}"));
        }
        let agent = self.shared.agent().name.value.clone();
        let saved_agent = snap.get("agent").and_then(Value::as_str).unwrap_or("");
        if saved_agent != agent {
            return Err(format!("the saved run is of agent `{saved_agent}`, not `{agent}`"));
        }
        let list = |key: &str| -> Result<Vec<String>, String> {
            let v: Vec<String> = serde_json::from_value(snap.get(key).cloned().unwrap_or(json!([])))
                .map_err(|e| format!("the saved run's `{key}` is unreadable: {e}"))?;
            for n in &v {
                if n != END && self.shared.eff.node(n).is_none() {
                    return Err(format!(
                        "the saved run goes on at node `{n}`, which agent `{agent}` no longer has (the file changed)"
                    ));
                }
            }
            Ok(v)
        };
        let queue = list("queue")?;
        let next = list("next")?;
        let Some(Value::Object(fields)) = snap.get("state") else {
            return Err("the saved run has no state object".into());
        };
        let mut state = State::new();
        for (k, v) in fields {
            state.replace(k, v.clone());
        }
        let remote: Option<RemoteWait> = serde_json::from_value(snap.get("remote").cloned().unwrap_or(Value::Null))
            .map_err(|e| format!("the saved run's waiting remote task is unreadable: {e}"))?;
        self.state = state;
        self.queue = queue.into();
        self.next = next;
        // Absent in snapshots written before fan-outs shared one state: the wave's nodes left
        // then see the current state.
        self.wave_base = match snap.get("wave_base") {
            Some(Value::Object(fields)) => {
                let mut base = State::new();
                for (k, v) in fields {
                    base.replace(k, v.clone());
                }
                Some(base)
            }
            _ => None,
        };
        self.wave_writes = serde_json::from_value(snap.get("wave_writes").cloned().unwrap_or(json!({})))
            .map_err(|e| format!("the saved run's `wave_writes` is unreadable: {e}"))?;
        self.resume = snap.get("resume").cloned().filter(|v| !v.is_null());
        self.since_resume = snap.get("since_resume").and_then(Value::as_i64).unwrap_or(0);
        self.output = snap.get("output").cloned().unwrap_or(Value::Null);
        self.remote = remote;
        // Hooks: the invocation's config (`before_graph_invoke`) and the recursion limit it set.
        self.invocation = snap.get("invocation").cloned().filter(|v| !v.is_null());
        self.recursion_override = snap.get("recursion_override").and_then(Value::as_i64);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use runtime::provider::ScriptedProvider;
    use runtime::session::{Machine, RunOptions, RunSession, Status};
    use crate::machine::{ShermaMachine, ShermaOptions};
    use serde_json::{Value, json};
    use std::sync::Arc;

    const AGENT: &str = r#"
manifest_version: 1
llms:
  - id: m
    model_name: x
agents:
  a:
    state:
      fields:
        - name: messages
          type: list
        - name: count
          type: int
    graph:
      entry_point: think
      nodes:
        - name: think
          type: call_llm
          args:
            llm: {id: m}
            prompt:
              - role: system
                content: '"be brief"'
              - role: messages
                content: state.messages
            state_updates:
              messages: "[llm_response]"
        - name: bump
          type: set_state
          args:
            values:
              count: 'state.count + 1'
        - name: ask
          type: interrupt
          args:
            value: 'state.messages[size(state.messages) - 1]'
        - name: again
          type: call_llm
          args:
            llm: {id: m}
            prompt:
              - role: system
                content: '"again"'
              - role: messages
                content: state.messages
            state_updates:
              messages: "[llm_response]"
      edges:
        - source: think
          target: bump
        - source: bump
          target: ask
        - source: ask
          target: again
"#;

    fn machine() -> ShermaMachine {
        let doc = Arc::new(model::doc::load_str(std::path::Path::new("/tmp/durable-agent.yaml"), AGENT));
        ShermaMachine::new(doc, None, Value::String("hi".into()), ShermaOptions::default()).unwrap()
    }

    fn provider() -> Box<ScriptedProvider> {
        let replies = "replies:\n  - content: first\n  - content: second\n";
        Box::new(ScriptedProvider::from_str(std::path::Path::new("replies.yaml"), replies).unwrap())
    }

    #[test]
    fn round_trip_at_every_step_gives_the_same_run() {
        // Uninterrupted.
        let mut opts = RunOptions::new(provider());
        opts.answers = vec![json!("yes")];
        let mut whole = RunSession::new(Box::new(machine()), Value::Null, opts);
        whole.run();
        let Status::Finished { output, .. } = whole.status().clone() else { panic!("{:?}", whole.status()) };
        assert_eq!(output, json!("second"));

        // Stop at the interrupt, snapshot, restore into a fresh machine, answer, finish.
        let mut first = RunSession::new(Box::new(machine()), Value::Null, RunOptions::new(provider()));
        let Status::Interrupted { pending } = first.run().clone() else { panic!() };
        let snap = first.durable_snapshot();
        let text = serde_json::to_string(&snap).unwrap();
        let snap: Value = serde_json::from_str(&text).unwrap();
        let mut m = machine();
        m.restore(&snap["machine"]).unwrap();
        assert_eq!(m.state(), first.state());
        assert_eq!(m.due(), vec!["ask".to_string()]);
        assert_eq!(m.snapshot(), snap["machine"]);
        let p = provider();
        use runtime::provider::LlmProvider;
        p.restore_position(&snap["provider"]).unwrap();
        let (at, _, _) =
            runtime::session::ResumePoint::parse(&snap, Status::Interrupted { pending: pending.clone() }).unwrap();
        let mut resumed = RunSession::resume(Box::new(m), Value::Null, at, RunOptions::new(p));
        resumed.answer(&pending.id, json!("yes")).unwrap();
        resumed.run();
        assert_eq!(resumed.status(), whole.status());
        assert_eq!(resumed.state(), whole.state());
        assert_eq!(resumed.steps(), whole.steps());
    }

    #[test]
    fn a_snapshot_mid_fan_out_keeps_the_state_the_wave_shares() {
        let yaml = r#"
manifest_version: 1
agents:
  f:
    state:
      fields:
        - {name: n, type: int}
        - {name: a, type: str}
        - {name: b, type: str}
    graph:
      entry_point: s
      nodes:
        - {name: s, type: set_state, args: {values: {n: "1"}}}
        - {name: x, type: set_state, args: {values: {a: "'x saw ' + string(state.n)", n: "state.n + 1"}}}
        - {name: y, type: set_state, args: {values: {b: "'y saw ' + string(state.n)"}}}
      edges:
        - {source: s, target: x}
        - {source: s, target: y}
"#;
        let mk = || {
            let doc = Arc::new(model::doc::load_str(
                std::path::Path::new("/tmp/fan.yaml"),
                yaml,
            ));
            ShermaMachine::new(doc, None, Value::Null, ShermaOptions::default()).unwrap()
        };
        let none = || Box::new(runtime::provider::NoProvider);
        let mut first = RunSession::new(Box::new(mk()), Value::Null, RunOptions::new(none()));
        first.step();
        first.step(); // s, x: `y` is still to run on the state after `s`
        let snap: Value =
            serde_json::from_str(&serde_json::to_string(&first.durable_snapshot()).unwrap())
                .unwrap();
        assert_eq!(snap["machine"]["wave_base"]["n"], json!(1));
        assert_eq!(snap["machine"]["wave_writes"], json!({"a": "x", "n": "x"}));
        let mut m = mk();
        m.restore(&snap["machine"]).unwrap();
        assert_eq!(m.snapshot(), snap["machine"]);
        let (at, _, _) = runtime::session::ResumePoint::parse(&snap, Status::Ready).unwrap();
        let mut resumed = RunSession::resume(Box::new(m), Value::Null, at, RunOptions::new(none()));
        resumed.run();
        let st = resumed.state();
        assert_eq!(
            (st["a"].clone(), st["b"].clone(), st["n"].clone()),
            (json!("x saw 1"), json!("y saw 1"), json!(2))
        );
    }

    #[test]
    fn restore_refuses_what_does_not_fit() {
        let m = machine();
        let mut snap = m.snapshot();
        let mut other = machine();
        snap["queue"] = json!(["gone"]);
        let e = other.restore(&snap).unwrap_err();
        assert!(e.contains("no longer has"), "{e}");
        snap["queue"] = json!([]);
        snap["format"] = json!(99);
        assert!(other.restore(&snap).unwrap_err().contains("format 99"));
        snap["format"] = json!(1);
        snap["agent"] = json!("b");
        assert!(other.restore(&snap).unwrap_err().contains("agent `b`"));
        snap["dialect"] = json!("loki");
        assert!(other.restore(&snap).is_err());
    }
}
