//! Routing: where a node goes next over [`lower_sherma::effective`]'s edges, given the current
//! state, with the reason for each target; and [`RouteError`], why that cannot be computed (a
//! branch condition that fails to evaluate), which fails the step — or, routing from
//! `__start__`, the run's start.
//!
//! [`lower_sherma::effective`]: model::graph::lower_sherma::effective

use super::{INTERNAL, ShermaMachine, last_has_tool_calls};
use model::doc::sherma::NodeArgs;
use model::graph::lower_sherma::{Cond, EffKind};
use runtime::events::RouteReason;
use serde_json::{Map, Value};
use std::fmt;

/// A node's targets, each with the reason it was taken (one `route` event each).
pub(super) type Targets = Vec<(String, RouteReason)>;

/// A branch condition routing could not evaluate (a CEL error on an edge): routing cannot go
/// on. Its text is what the user reads after "routing after \`NODE\` failed: " (or, from
/// `__start__`, after "agent \`NAME\` cannot start: ").
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RouteError {
    /// The node routed from.
    pub(super) from: String,
    /// The branch's place among its edge's branches (from 0) and its target.
    pub(super) branch: usize,
    pub(super) target: String,
    /// Why the condition could not be evaluated.
    pub(super) error: String,
    /// When `from` is an interrupt and the condition reads a key its answer lacks: that key
    /// (the message then says a structured answer was expected).
    pub(super) missing_answer_key: Option<String>,
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let RouteError { from, branch, target, error, missing_answer_key } = self;
        write!(f, "edge from `{from}`, branch {} (to `{target}`): {error}", branch + 1)?;
        if let Some(key) = missing_answer_key {
            write!(
                f,
                "; the answer to the interrupt `{from}` has no `{key}`: this edge expects a \
                 structured answer, a message such as \
                 {{\"content\": \"...\", \"additional_kwargs\": {{\"{key}\": ...}}}}, not plain text"
            )?;
        }
        Ok(())
    }
}

impl ShermaMachine {
    /// Where `from` goes next, given the current state, with the reason for each target; an
    /// error when a branch condition cannot be evaluated. Clears `__sherma__.error_fallback`
    /// when a `has_error_fallback` branch fires.
    pub(super) fn route_from(&mut self, from: &str) -> Result<Targets, RouteError> {
        let shared = self.shared.clone();
        let mut out = Vec::new();
        for e in shared.eff.outgoing(from) {
            match &e.kind {
                EffKind::Static { target } => out.push((target.clone(), RouteReason::Static)),
                EffKind::Conditional { branches, default, .. } => {
                    let mut chosen = None;
                    for (i, b) in branches.iter().enumerate() {
                        let hit = match &b.condition {
                            Cond::HasToolCalls => last_has_tool_calls(&self.state),
                            Cond::HasErrorFallback => self.take_error_fallback(),
                            Cond::Cel(expr) => self.eval_bool(&expr.text).map_err(|error| {
                                let is_interrupt =
                                    shared.decl(from).is_some_and(|d| matches!(d.args, NodeArgs::Interrupt { .. }));
                                let missing_answer_key =
                                    missing_key(&error).filter(|_| is_interrupt).map(str::to_string);
                                RouteError {
                                    from: from.to_string(),
                                    branch: i,
                                    target: b.target.clone(),
                                    error,
                                    missing_answer_key,
                                }
                            })?,
                            Cond::Missing => false,
                        };
                        if hit {
                            chosen = Some((
                                b.target.clone(),
                                RouteReason::Branch { index: i, condition: b.condition.label() },
                            ));
                            break;
                        }
                    }
                    out.push(chosen.unwrap_or_else(|| (default.clone(), RouteReason::Default)));
                }
            }
        }
        Ok(out)
    }

    fn take_error_fallback(&mut self) -> bool {
        let Some(internal) = self.state.get(INTERNAL).and_then(Value::as_object) else { return false };
        let set = internal.get("error_fallback").is_some_and(|v| !v.is_null() && v != &Value::Bool(false) && v != "");
        if set {
            let mut m = internal.clone();
            m.shift_remove("error_fallback");
            let mut up = Map::new();
            up.insert(INTERNAL.into(), Value::Object(m));
            let _ = self.state.apply(&up);
            self.cleared_fallback = true;
        }
        set
    }
}

/// The key a CEL `no such key: <k>` error names.
fn missing_key(err: &str) -> Option<&str> {
    let rest = &err[err.find("no such key: ")? + "no such key: ".len()..];
    let key = rest.split(|c: char| c.is_whitespace() || c == ')' || c == ',' || c == ';').next()?;
    (!key.is_empty()).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(missing_answer_key: Option<&str>) -> RouteError {
        RouteError {
            from: "ask".into(),
            branch: 1,
            target: "approve".into(),
            error: "no such key: decision".into(),
            missing_answer_key: missing_answer_key.map(str::to_string),
        }
    }

    #[test]
    fn route_errors_read_as_before() {
        assert_eq!(err(None).to_string(), "edge from `ask`, branch 2 (to `approve`): no such key: decision");
        assert_eq!(
            err(Some("decision")).to_string(),
            "edge from `ask`, branch 2 (to `approve`): no such key: decision; the answer to the interrupt `ask` has \
             no `decision`: this edge expects a structured answer, a message such as {\"content\": \"...\", \
             \"additional_kwargs\": {\"decision\": ...}}, not plain text"
        );
    }

    #[test]
    fn the_missing_key_is_read_from_cel_errors() {
        assert_eq!(missing_key("No such key: x"), None);
        assert_eq!(missing_key("execution error: no such key: decision"), Some("decision"));
        assert_eq!(missing_key("no such key: a, b"), Some("a"));
        assert_eq!(missing_key("no such key: "), None);
    }
}
