//! LLLM checks on each agent's effective config (after `base` and `global`): a system prompt,
//! a model, skills that fit the model, lists that replace a global list.

use crate::doc::lllm::{EffectiveAgent, LllmDoc, Origin, Section};
use syntax::diag::{Diagnostic, Severity};
use syntax::source::Span;

pub fn validate(l: &LllmDoc, diags: &mut Vec<Diagnostic>) {
    for a in &l.effective.agents {
        agent(l, a, diags);
    }
}

/// A diagnostic at an origin (a value or an entry in one of the chain's files).
fn at(l: &LllmDoc, o: &Origin, d: Diagnostic) -> Option<Diagnostic> {
    let f = l.file_of(o)?;
    Some(d.at(f, o.span.unwrap_or(Span::at(0))))
}

fn agent(l: &LllmDoc, a: &EffectiveAgent, diags: &mut Vec<Diagnostic>) {
    let mut push = |o: &Origin, d: Diagnostic| {
        if let Some(d) = at(l, o, d.node(a.name.clone())) {
            diags.push(d);
        }
    };
    let has = |k: &str| a.get(k).is_some_and(|v| !v.to_json().is_null());
    if !has("system_prompt") && !has("system_prompt_path") {
        push(
            &a.from,
            Diagnostic::error("lllm-no-prompt", format!("agent `{}` has no system prompt, after `global` and `base`", a.name))
                .hint("give it `system_prompt_path: folder/name` (a registered prompt) or `system_prompt: \"…\"`, here or in `global`"),
        );
    } else if has("system_prompt") && has("system_prompt_path") {
        let o = a.get("system_prompt_path").map(|v| v.from().clone()).unwrap_or_else(|| a.from.clone());
        push(
            &o,
            Diagnostic::warning("lllm-prompt-both", format!("agent `{}` has both `system_prompt` and `system_prompt_path`", a.name))
                .hint("only one of them is the agent's prompt; keep the one you mean (one may come from `global` or `base`)"),
        );
    }
    if !has("model_name") {
        push(
            &a.from,
            Diagnostic::warning("lllm-no-model", format!("agent `{}` has no `model_name`, after `global` and `base`", a.name))
                .hint("LLLM needs one when it builds the agent: set `model_name` in `global` or on the agent, unless the program sets it before building the tactic"),
        );
    }
    if let Some(skills) = a.get("skills") {
        let model = a.str("model_name").unwrap_or("");
        let anthropic = model.contains("claude") || model.starts_with("anthropic/");
        if let Some(list) = skills.to_json().as_array() {
            let ids: Vec<&str> = list.iter().filter_map(|s| s.as_str()).filter(|s| s.starts_with("skill_")).collect();
            if !ids.is_empty() && !model.is_empty() && !anthropic {
                push(
                    skills.from(),
                    Diagnostic::warning("lllm-skill-id-model", format!("agent `{}` lists Anthropic skill ids ({}) but its model `{model}` is not an Anthropic model", a.name, ids.join(", ")))
                        .hint("skill ids are passed to Anthropic's API only; use a local skill name or a SKILL.md URL for other models"),
                );
            }
            if list.iter().any(|s| s.as_str() == Some("*")) {
                push(
                    skills.from(),
                    Diagnostic::warning("lllm-skills-star", "`\"*\"` inside the skills list is a skill named `*`, not every skill")
                        .hint("write `skills: \"*\"` (the whole value) to load every locally discovered skill"),
                );
            }
        }
    }
    for k in &a.replaced_lists {
        if let Some(v) = a.get(k) {
            if v.from().section == Section::Agent {
                push(
                    v.from(),
                    Diagnostic::new(Severity::Info, "lllm-list-replaced", format!("agent `{}`'s `{k}` replaces the global `{k}` list", a.name))
                        .hint("LLLM does not merge lists: list every entry this agent should have"),
                );
            }
        }
    }
}
