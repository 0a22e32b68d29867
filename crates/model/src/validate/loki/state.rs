//! State keys: templates reading keys nothing writes, and a seeded `initial_prompt`.

use super::V;
use crate::doc::loki::NodeBody;
use crate::doc::schema::value_offset_to_source;
use std::collections::HashSet;
use syntax::diag::did_you_mean;
use syntax::source::Span;

impl V<'_> {
    /// Every state key the graph visibly writes or seeds, or `None` when it cannot be known
    /// (script or agent nodes, output schemas without `properties`).
    fn known_state_keys(&self) -> Option<HashSet<String>> {
        let l = self.l;
        let mut keys: HashSet<String> = ["output", "choice", "input", "initial_prompt"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        keys.extend(l.initial_state_keys.iter().map(|k| k.value.clone()));
        // coyote 0.10.3 seeds every declared variable into state under its name.
        keys.extend(l.variables.iter().map(|v| v.name.value.clone()));
        for n in &l.nodes {
            match &n.body {
                NodeBody::Script(_) | NodeBody::Agent(_) | NodeBody::Unknown => return None,
                NodeBody::Map(m) => {
                    keys.extend(m.collect_into.iter().map(|k| k.value.clone()));
                    keys.extend(m.as_key.iter().map(|k| k.value.clone()));
                    keys.insert(m.output_key().to_string());
                }
                _ => {}
            }
            n.output_schema().map_or(Some(()), |s| {
                s.value
                    .get("properties")
                    .and_then(|p| p.as_object())
                    .map(|_| ())
            })?;
            keys.extend(n.write_set());
        }
        Some(keys)
    }

    /// Beyond upstream: templates reading state keys that no node writes (only when every write
    /// can be known).
    pub(super) fn state_keys(&mut self) {
        let Some(known) = self.known_state_keys() else {
            return;
        };
        let mut sorted: Vec<&str> = known.iter().map(String::as_str).collect();
        sorted.sort();
        for n in &self.l.nodes {
            for (field, t) in n.templates() {
                let mut done: Vec<String> = Vec::new();
                for r in expr::template::parse(&t.text).refs {
                    if r.root.is_empty() || known.contains(&r.root) || done.contains(&r.root) {
                        continue;
                    }
                    done.push(r.root.clone());
                    let s = value_offset_to_source(self.file, &t.node, r.range.start);
                    let e = value_offset_to_source(self.file, &t.node, r.range.end);
                    let hint = match did_you_mean(&r.root, sorted.iter().copied()) {
                        Some(x) => format!("did you mean `{{{{{x}}}}}`?"),
                        None => format!(
                            "seed it in `initial_state` (e.g. `{}: \"\"`) or write it with `state_updates`; in prompts and questions a missing key fails the node, elsewhere it renders empty",
                            r.root
                        ),
                    };
                    let d = self
                        .warn(
                            "loki-state-key",
                            format!("`{field}` reads state key '{}', which no node writes and `initial_state` does not seed", r.root),
                            Span::new(s, e.max(s)),
                        )
                        .node(n.id.value.clone())
                        .hint(hint);
                    self.push(d);
                }
            }
        }
    }

    /// Upstream 18 (coyote 0.10.3): declared `variables` are seeded into state under their
    /// names, and an `initial_state` key of the same name takes precedence — the variable's
    /// default and any `--agent-variable` override never reach the state.
    pub(super) fn variable_shadowing(&mut self) {
        let l = self.l;
        for k in &l.initial_state_keys {
            let Some(v) = l.variables.iter().find(|v| v.name.value == k.value) else {
                continue;
            };
            let d = self
                .warn(
                    "loki-variable-shadowed",
                    format!(
                        "`initial_state` key '{}' shadows the declared variable '{}': the state holds this value, never the variable's default or a run-time override",
                        k.value, v.name.value
                    ),
                    k.span,
                )
                .hint(format!(
                    "remove '{}' from `initial_state` (the variable is seeded into state under its name), or rename one of them",
                    k.value
                ));
            self.push(d);
        }
    }

    /// Beyond upstream: an `initial_prompt` in `initial_state` is always replaced.
    pub(super) fn seeded_initial_prompt(&mut self) {
        if let Some(k) = self
            .l
            .initial_state_keys
            .iter()
            .find(|k| k.value == "initial_prompt")
        {
            let d = self
                .warn("loki-initial-prompt", "`initial_prompt` in `initial_state` is always replaced by the user's input when a run starts", k.span)
                .hint("remove it; use another key for a default");
            self.push(d);
        }
    }
}
