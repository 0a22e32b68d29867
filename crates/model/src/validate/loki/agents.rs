//! Upstream step 6: agent nodes name a sibling agent.

use super::V;
use crate::doc::loki::NodeBody;
use std::path::PathBuf;

impl V<'_> {
    fn agent_dir_for(&self, name: &str) -> PathBuf {
        let var = format!("{}_DATA_DIR", name.to_uppercase().replace('-', "_"));
        match std::env::var_os(&var) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => self.l.agents_dir().join(name),
        }
    }

    /// Upstream 6: agent nodes name a sibling agent directory with a config.yaml or graph.yaml.
    pub(super) fn agents(&mut self) {
        for n in &self.l.nodes {
            let NodeBody::Agent(a) = &n.body else {
                continue;
            };
            let Some(name) = &a.agent else { continue };
            let dir = self.agent_dir_for(&name.value);
            let msg = if !dir.is_dir() {
                format!("Agent '{}' not found (directory missing)", name.value)
            } else if !dir.join("config.yaml").is_file() && !dir.join("graph.yaml").is_file() {
                format!(
                    "Agent '{}' has neither a config.yaml nor a graph.yaml",
                    name.value
                )
            } else {
                continue;
            };
            let d = self.err("loki-agent-missing", msg, name.span).node(n.id.value.clone()).hint(format!(
                "agent nodes spawn a sibling agent: a directory {} holding config.yaml (normal agent) or graph.yaml (graph agent)",
                dir.display()
            ));
            self.push(d);
        }
        self.agent_inputs();
    }

    /// coyote 0.10.3 (part of upstream 6, "validate agent node inputs at load time"): `inputs`
    /// seed a child *graph* agent's state; `initial_prompt` is reserved (seeded from `prompt`).
    fn agent_inputs(&mut self) {
        for n in &self.l.nodes {
            let NodeBody::Agent(a) = &n.body else {
                continue;
            };
            let Some(inputs) = &a.inputs else { continue };
            for (k, _) in inputs {
                if k.value == "initial_prompt" {
                    let d = self
                        .err("loki-agent-inputs", "agent node `inputs` may not set 'initial_prompt': it is always seeded from `prompt`", k.span)
                        .node(n.id.value.clone())
                        .hint("put the text in the node's `prompt`, or use another key");
                    self.push(d);
                }
            }
            let Some(name) = &a.agent else { continue };
            let dir = self.agent_dir_for(&name.value);
            if dir.join("config.yaml").is_file() && !dir.join("graph.yaml").is_file() {
                let span = n
                    .node
                    .entry("inputs")
                    .map(|e| e.key.span)
                    .unwrap_or(n.id.span);
                let d = self
                    .err(
                        "loki-agent-inputs",
                        format!("agent node sets `inputs`, but '{}' is a config.yaml agent: only graph agents have a state to seed", name.value),
                        span,
                    )
                    .node(n.id.value.clone())
                    .hint("remove `inputs` and pass what the agent needs in `prompt` (or the agent's variables)");
                self.push(d);
            }
        }
    }
}
