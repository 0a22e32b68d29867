//! An LLLM agent's `context_manager`: the dialog cut to the model's window before each call.
//!
//! LLLM (`lllm/core/dialog.py`, `DefaultContextManager`, applied by `Agent._call` to the scratch
//! fork of each step): `context_manager: {type: default, max_tokens: N}` keeps the dialog within
//! `N` minus a 5,000-token safety buffer. When the dialog is over, the first message (the system
//! prompt) is kept; messages are kept from the newest back while they fit; the first one that
//! does not fit is cut to the budget left (its first characters, `len × budget/tokens × 0.85`,
//! after a `[...earlier content truncated...]` line) when more than 50 tokens are left; older
//! ones are dropped. The result is another fork of the dialog tree.
//!
//! Where this differs: tokens are counted as 4 characters a token plus 4 per message (LLLM asks
//! LiteLLM's tokenizer for the model; Switchyard has none), over the content and tool calls; a
//! `max_tokens` is needed (LLLM looks the window up in LiteLLM's model table, which Switchyard
//! does not have: without one the manager is not applied, with a log line); tool results whose
//! call was dropped are dropped too (the APIs refuse them); custom types (registered in Python)
//! are not run. `type: null`, no `type` (LLLM disables it too) or no `context_manager`: the whole
//! dialog is sent.

use serde_json::{Value, json};

/// LLLM's `DefaultContextManager.SAFETY_BUFFER`.
pub const SAFETY_BUFFER: u64 = 5000;
/// The marker of a cut message.
pub const CUT_MARK: &str = "[...earlier content truncated...]\n";

/// A `context_manager` Switchyard applies.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextManager {
    /// The window (`max_tokens`).
    pub max_tokens: u64,
}

impl ContextManager {
    /// The tokens a dialog may have: the window less the safety buffer.
    pub fn limit(&self) -> i64 {
        self.max_tokens as i64 - SAFETY_BUFFER as i64
    }
}

/// An agent's effective `context_manager` value: the manager, or why none is applied (a note
/// for the run's log; `None` when there is nothing to say).
pub fn from_config(v: Option<&Value>) -> (Option<ContextManager>, Option<String>) {
    let Some(v) = v.filter(|v| !v.is_null()) else { return (None, None) };
    let Some(m) = v.as_object() else {
        return (None, Some(format!("`context_manager` is {v}, not a mapping (`{{type: default, max_tokens: N}}`); LLLM ignores it too, so the whole dialog is sent")));
    };
    match m.get("type") {
        // `type: null` turns it off, as written.
        Some(Value::Null) => (None, None),
        None => {
            let note = (!m.is_empty()).then(|| "`context_manager` has no `type`: LLLM disables it then, so the whole dialog is sent (write `type: default` to apply it)".to_string());
            (None, note)
        }
        Some(Value::String(t)) if t == "null" || t == "none" => (None, None),
        Some(Value::String(t)) if t == "default" => match m.get("max_tokens").and_then(Value::as_u64) {
            Some(n) => (Some(ContextManager { max_tokens: n }), None),
            None => (
                None,
                Some(
                    "`context_manager` has no `max_tokens`: LLLM looks the model's window up in LiteLLM's table, which Switchyard does not have, so it is not applied (set `max_tokens`)"
                        .to_string(),
                ),
            ),
        },
        Some(t) => (
            None,
            Some(format!("`context_manager` type {t} is a context manager registered in Python; Switchyard does not run it, so the whole dialog is sent")),
        ),
    }
}

/// The text of a message as it is counted: its content and its tool calls.
fn text(m: &Value) -> String {
    let mut s = match m.get("content") {
        Some(Value::String(c)) => c.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    if let Some(calls) = m.get("tool_calls").filter(|c| !c.is_null()) {
        s.push_str(&calls.to_string());
    }
    s
}

/// The tokens of one message as counted here (see the module docs).
pub fn tokens(m: &Value) -> u64 {
    (text(m).chars().count() as u64).div_ceil(4) + 4
}

/// What [`truncate`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct Cut {
    /// The messages sent.
    pub messages: Vec<Value>,
    /// The indices (in the dialog) of the messages dropped.
    pub dropped: Vec<usize>,
    /// The index of the message cut to fit, if one was.
    pub cut: Option<usize>,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// `messages` within `cm`'s limit, as LLLM's `DefaultContextManager` cuts them (see the module
/// docs); `None` when they fit.
pub fn truncate(cm: &ContextManager, messages: &[Value]) -> Option<Cut> {
    let Some(first) = messages.first() else { return None };
    let limit = cm.limit();
    let before: u64 = messages.iter().map(tokens).sum();
    if before as i64 <= limit {
        return None;
    }
    let mut budget = limit - tokens(first) as i64;
    let mut kept: Vec<(usize, Value)> = Vec::new();
    let mut cut = None;
    for (i, m) in messages.iter().enumerate().skip(1).rev() {
        let t = tokens(m) as i64;
        if t <= budget {
            kept.push((i, m.clone()));
            budget -= t;
            continue;
        }
        if budget > 50
            && let Some(content) = m.get("content").and_then(Value::as_str)
        {
            let chars = content.chars().count() as f64;
            let n = ((chars * (budget as f64 / t as f64) * 0.85) as usize).max(1);
            let mut border = m.clone();
            border["content"] = json!(format!("{CUT_MARK}{}", content.chars().take(n).collect::<String>()));
            kept.push((i, border));
            cut = Some(i);
        }
        break;
    }
    kept.reverse();
    // Tool results whose call is no longer sent would be refused by the API.
    let calls: Vec<String> = kept
        .iter()
        .flat_map(|(_, m)| m.get("tool_calls").and_then(Value::as_array).into_iter().flatten().filter_map(|c| c.get("id").and_then(Value::as_str).map(str::to_string)))
        .collect();
    kept.retain(|(_, m)| m.get("role").and_then(Value::as_str) != Some("tool") || m.get("tool_call_id").and_then(Value::as_str).is_some_and(|id| calls.iter().any(|c| c == id)));
    if cut.is_some_and(|c| !kept.iter().any(|(i, _)| *i == c)) {
        cut = None;
    }
    let kept_ix: Vec<usize> = kept.iter().map(|(i, _)| *i).collect();
    let dropped = (1..messages.len()).filter(|i| !kept_ix.contains(i)).collect();
    let out: Vec<Value> = std::iter::once(first.clone()).chain(kept.into_iter().map(|(_, m)| m)).collect();
    let after = out.iter().map(tokens).sum();
    Some(Cut { messages: out, dropped, cut, tokens_before: before, tokens_after: after })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, chars: usize) -> Value {
        json!({"role": role, "content": "x".repeat(chars)})
    }

    #[test]
    fn config_as_lllm_reads_it() {
        assert_eq!(from_config(Some(&json!({"type": "default", "max_tokens": 9000}))).0, Some(ContextManager { max_tokens: 9000 }));
        assert_eq!(from_config(None), (None, None));
        assert_eq!(from_config(Some(&json!({"type": null}))), (None, None));
        assert_eq!(from_config(Some(&json!({"type": "none", "max_tokens": 1}))), (None, None));
        assert!(from_config(Some(&json!({"max_tokens": 9000}))).1.unwrap().contains("no `type`"));
        assert!(from_config(Some(&json!({"type": "default"}))).1.unwrap().contains("no `max_tokens`"));
        assert!(from_config(Some(&json!({"type": "summary", "max_tokens": 9000}))).1.unwrap().contains("registered in Python"));
        assert!(from_config(Some(&json!("default"))).1.unwrap().contains("not a mapping"));
    }

    #[test]
    fn the_newest_messages_are_kept_the_border_cut_the_rest_dropped() {
        let cm = ContextManager { max_tokens: SAFETY_BUFFER + 200 };
        // 14 + 104 + 54 + 54 tokens: 226 > 200.
        let dialog = vec![msg("system", 40), msg("user", 400), msg("assistant", 200), msg("user", 200)];
        assert_eq!(dialog.iter().map(tokens).collect::<Vec<_>>(), [14, 104, 54, 54]);
        let c = truncate(&cm, &dialog).unwrap();
        // Budget 186: the last two fit (108), 78 left > 50 for the 104-token message: cut.
        assert_eq!((c.dropped.clone(), c.cut), (vec![], Some(1)));
        let border = c.messages[1]["content"].as_str().unwrap();
        assert!(border.starts_with(CUT_MARK));
        assert_eq!(border.len() - CUT_MARK.len(), (400.0 * (78.0 / 104.0) * 0.85) as usize);
        assert!(c.tokens_after <= 200 && c.tokens_before == 226, "{c:?}");
        // Less than 50 tokens left: the older messages are dropped.
        let tight = ContextManager { max_tokens: SAFETY_BUFFER + 150 };
        let c = truncate(&tight, &dialog).unwrap();
        assert_eq!((c.dropped.clone(), c.cut, c.messages.len()), (vec![1], None, 3));
        assert!(truncate(&ContextManager { max_tokens: SAFETY_BUFFER + 226 }, &dialog).is_none(), "it fits");
    }

    #[test]
    fn a_tool_result_without_its_call_is_dropped_too() {
        let call = json!({"role": "assistant", "content": "x".repeat(400), "tool_calls": [{"id": "c1", "name": "f", "args": {}}]});
        let result = json!({"role": "tool", "tool_call_id": "c1", "content": "42"});
        let dialog = vec![msg("system", 8), msg("user", 8), call, result, msg("user", 8)];
        let c = truncate(&ContextManager { max_tokens: SAFETY_BUFFER + 40 }, &dialog).unwrap();
        assert_eq!(c.dropped, [1, 2, 3]);
        assert_eq!(c.messages.len(), 2);
    }
}
