//! Upstream step 10: skill names of the graph and its llm nodes.

use super::V;
use crate::doc::loki::NodeBody;
use syntax::diag::did_you_mean;

impl V<'_> {
    /// Upstream 10: skill names are valid, and an llm node's `enabled_skills` narrow the graph's.
    pub(super) fn skills(&mut self) {
        let l = self.l;
        let graph_list: Option<Vec<&str>> = l
            .skills
            .enabled_skills
            .as_ref()
            .map(|v| v.iter().map(|s| s.value.as_str()).collect());
        for s in l.skills.enabled_skills.iter().flatten() {
            if let Some(msg) = skill_name_problem(&s.value) {
                let d = self
                    .err(
                        "loki-skill",
                        format!("graph 'enabled_skills' {msg}"),
                        s.span,
                    )
                    .hint(SKILL_NAME_HINT);
                self.push(d);
            }
        }
        for n in &l.nodes {
            let NodeBody::Llm(x) = &n.body else { continue };
            for s in x.skills.enabled_skills.iter().flatten() {
                if let Some(msg) = skill_name_problem(&s.value) {
                    let d = self
                        .err(
                            "loki-skill",
                            format!("llm node 'enabled_skills' {msg}"),
                            s.span,
                        )
                        .node(n.id.value.clone())
                        .hint(SKILL_NAME_HINT);
                    self.push(d);
                    continue;
                }
                if let Some(gl) = &graph_list
                    && !gl.contains(&s.value.as_str())
                {
                    {
                        let d = self
                            .err(
                                "loki-skill",
                                format!(
                                    "llm node 'enabled_skills' references '{}' which is not in graph-level 'enabled_skills' ({})",
                                    s.value,
                                    gl.join(", ")
                                ),
                                s.span,
                            )
                            .node(n.id.value.clone())
                            .hint(match did_you_mean(&s.value, gl.iter().copied()) {
                                Some(x) => format!("did you mean `{x}`? A node may only narrow the graph's list"),
                                None => format!("add `{}` to the graph-level `enabled_skills`, or remove it here", s.value),
                            });
                        self.push(d);
                    }
                }
            }
        }
    }
}

fn is_skill_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

const SKILL_NAME_HINT: &str = "skill names use letters, digits, '-' and '_' only";

fn skill_name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        Some("contains a blank skill name".into())
    } else if !is_skill_name(name) {
        Some(format!("entry '{name}' is not a valid skill name"))
    } else {
        None
    }
}
