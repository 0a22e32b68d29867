//! Two recorded runs compared (`switchyard trace diff`): their top-level steps aligned by step
//! number (a fork or a rewound run is a trace with the same prefix), each step's nodes, LLM
//! requests and replies, question, state and routes side by side, and the first divergence —
//! the earliest thing that differs, in the order a step happens: the nodes that ran, the LLM
//! request, the reply, the question asked, the state after the step (rebuilt from the trace
//! with [`Trace::state_at`]), the route taken; then a run that ended where the other went on,
//! the final status and output.
//!
//! Ids the engine makes up per run (the run id, times, durations) are not compared.

use super::Trace;
use model::doc::Document;
use runtime::events::EventBody;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use ts_rs::TS;

/// Two runs compared.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct TraceDiff {
    /// The earliest difference; `None` when the runs are the same.
    pub first_divergence: Option<Divergence>,
    /// Step 0 (the input and initial state) and every step either run took, aligned by number.
    pub steps: Vec<AlignedStep>,
    /// How each run ended (`completed`, `failed`, ...; `None`: the trace has no end).
    pub end_a: Option<String>,
    pub end_b: Option<String>,
    pub output_a: Value,
    pub output_b: Value,
}

/// Where two runs first differ.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[ts(rename = "RunDivergence")]
pub struct Divergence {
    pub step: u64,
    /// `input`, `node`, `llm_request`, `llm_response`, `interrupt`, `state`, `route`, `error`,
    /// `end` or `output`.
    pub kind: String,
    /// The node it happened at, when there is one.
    pub node: Option<String>,
    /// Where inside the compared values (`messages[1].content`, a state key).
    pub path: Option<String>,
    pub message: String,
    /// The two values at `path` (`None`: nothing there on that side).
    pub a: Option<Value>,
    pub b: Option<Value>,
}

/// One step of both runs.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct AlignedStep {
    pub step: u64,
    pub same: bool,
    pub a: Option<StepView>,
    pub b: Option<StepView>,
}

/// What one run did in one step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, TS)]
pub struct StepView {
    /// The nodes that ran (a Loki super-step may run several), with their kinds.
    pub nodes: Vec<(String, String)>,
    pub llm: Vec<LlmCall>,
    /// The question a node asked.
    pub interrupt: Option<String>,
    pub error: Option<String>,
    /// The state keys the step changed, with their new values (step 0: the initial state).
    pub changed: BTreeMap<String, Value>,
    pub routes: Vec<RouteTaken>,
}

#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct LlmCall {
    pub node: String,
    pub model: Option<String>,
    pub messages: Value,
    pub tools: Value,
    /// The reply's text and tool calls (`None`: no reply recorded).
    pub content: Option<String>,
    pub tool_calls: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct RouteTaken {
    pub from: String,
    pub to: String,
    /// `static`, `branch 1: state.x > 2`, `option ship`, `default`, ...
    pub reason: String,
}

impl StepView {
    /// `answer (call_llm) → count`: one line for a table.
    pub fn summary(&self) -> String {
        let nodes: Vec<&str> = self.nodes.iter().map(|(n, _)| n.as_str()).collect();
        let mut s = if nodes.is_empty() {
            "(start)".to_string()
        } else {
            nodes.join(", ")
        };
        if !self.llm.is_empty() {
            s.push_str(&format!(" [llm×{}]", self.llm.len()));
        }
        if self.interrupt.is_some() {
            s.push_str(" [asks]");
        }
        if self.error.is_some() {
            s.push_str(" [error]");
        }
        let mut to: Vec<&str> = Vec::new();
        for r in &self.routes {
            if !to.contains(&r.to.as_str()) {
                to.push(&r.to);
            }
        }
        if !to.is_empty() {
            s.push_str(&format!(" → {}", to.join(", ")));
        }
        s
    }
}

/// A run read into steps.
struct Run {
    steps: BTreeMap<u64, StepView>,
    input: Value,
    end: Option<String>,
    output: Value,
}

fn read_run(t: &Trace) -> Run {
    let mut run = Run {
        steps: BTreeMap::new(),
        input: Value::Null,
        end: None,
        output: Value::Null,
    };
    let mut top: Option<&str> = None;
    let mut cur: u64 = 0;
    // A Loki approval or input asks before its node enters: the question waits for it.
    let mut asking: Option<(String, String)> = None;
    run.steps.insert(0, StepView::default());
    for ev in t.lines.iter().flatten() {
        // The top-level run only (nested runs are `<run>/<node>`).
        match top {
            None => top = Some(&ev.run),
            Some(r) if r != ev.run => continue,
            _ => {}
        }
        match &ev.body {
            EventBody::RunStarted { input, .. } => run.input = input.clone(),
            EventBody::NodeEnter { step, node, kind } => {
                cur = *step;
                let s = run.steps.entry(cur).or_default();
                s.nodes.push((node.clone(), kind.clone()));
                if asking.as_ref().is_some_and(|(n, _)| n == node) {
                    s.interrupt = asking.take().map(|(_, p)| p);
                }
            }
            EventBody::NodeExit { step, .. } => cur = *step,
            EventBody::Route { from, to, reason } => {
                run.steps.entry(cur).or_default().routes.push(RouteTaken {
                    from: from.clone(),
                    to: to.clone(),
                    reason: runtime::narrate::reason_text(reason),
                })
            }
            EventBody::LlmRequest {
                node,
                messages,
                tools,
                model,
            } => run.steps.entry(cur).or_default().llm.push(LlmCall {
                node: node.clone(),
                model: model.clone(),
                messages: messages.clone(),
                tools: tools.clone(),
                content: None,
                tool_calls: Value::Null,
            }),
            EventBody::LlmResponse {
                node,
                content,
                tool_calls,
                ..
            } => {
                let s = run.steps.entry(cur).or_default();
                if let Some(c) = s.llm.iter_mut().rev().find(|c| &c.node == node) {
                    c.content = content.clone();
                    c.tool_calls = serde_json::to_value(tool_calls).unwrap_or(Value::Null);
                }
            }
            EventBody::Interrupt { prompt, node, .. } => {
                let s = run.steps.entry(cur).or_default();
                if s.nodes.iter().any(|(n, _)| n == node) {
                    s.interrupt = Some(prompt.clone());
                } else {
                    asking = Some((node.clone(), prompt.clone()));
                }
            }
            EventBody::Error { message, .. } => {
                run.steps.entry(cur).or_default().error = Some(message.clone())
            }
            EventBody::Rewound { step } => {
                run.steps.retain(|k, _| k <= step);
                if let Some(s) = run.steps.get_mut(step) {
                    // What came after the step's own events was undone.
                    s.interrupt = None;
                    s.error = None;
                }
                cur = *step;
                run.end = None;
            }
            EventBody::RunFinished { status, output, .. } => {
                run.end = serde_json::to_value(status)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from));
                run.output = output.clone();
            }
            _ => {}
        }
    }
    if let Some((_, p)) = asking {
        run.steps.entry(cur).or_default().interrupt = Some(p);
    }
    // Parallel nodes of a super-step call their models in any order.
    for s in run.steps.values_mut() {
        s.llm.sort_by(|a, b| a.node.cmp(&b.node));
    }
    run
}

/// The state after each step (0 = initial), rebuilt from the trace, and the keys each step
/// changed.
fn states(t: &Trace, run: &mut Run, doc: Option<&Document>) -> BTreeMap<u64, Value> {
    let mut out = BTreeMap::new();
    let mut prev = Value::Null;
    for (&step, view) in run.steps.iter_mut() {
        let st = t.state_at(None, step, doc).state;
        if let Value::Object(m) = &st {
            for (k, v) in m {
                if prev.get(k) != Some(v) {
                    view.changed.insert(k.clone(), v.clone());
                }
            }
        }
        prev = st.clone();
        out.insert(step, st);
    }
    out
}

fn div(
    step: u64,
    kind: &str,
    node: Option<&str>,
    path: Option<String>,
    message: String,
    a: Option<Value>,
    b: Option<Value>,
) -> Divergence {
    Divergence {
        step,
        kind: kind.into(),
        node: node.map(String::from),
        path,
        message,
        a,
        b,
    }
}

fn names(v: &StepView) -> Vec<&str> {
    let mut n: Vec<&str> = v.nodes.iter().map(|(n, _)| n.as_str()).collect();
    n.sort();
    n
}

/// The first difference inside one step both runs took, in the order a step happens.
fn step_divergence(
    step: u64,
    a: &StepView,
    b: &StepView,
    sa: &Value,
    sb: &Value,
) -> Option<Divergence> {
    let (na, nb) = (names(a), names(b));
    if na != nb {
        return Some(div(
            step,
            "node",
            nb.first().copied(),
            None,
            format!("A ran {}, B ran {}", list(&na), list(&nb)),
            Some(Value::from(na.clone())),
            Some(Value::from(nb.clone())),
        ));
    }
    for i in 0..a.llm.len().max(b.llm.len()) {
        match (a.llm.get(i), b.llm.get(i)) {
            (Some(x), Some(y)) => {
                let req = |c: &LlmCall| serde_json::json!({"model": c.model, "messages": c.messages, "tools": c.tools});
                if let Some((p, va, vb)) = runtime::cassette::first_difference("", &req(x), &req(y))
                {
                    return Some(div(
                        step,
                        "llm_request",
                        Some(&y.node),
                        Some(p.clone()),
                        format!("{}'s LLM request differs at {p}", y.node),
                        Some(va),
                        Some(vb),
                    ));
                }
                let rep = |c: &LlmCall| serde_json::json!({"content": c.content, "tool_calls": c.tool_calls});
                if let Some((p, va, vb)) = runtime::cassette::first_difference("", &rep(x), &rep(y))
                {
                    return Some(div(
                        step,
                        "llm_response",
                        Some(&y.node),
                        Some(p.clone()),
                        format!("{}'s LLM reply differs at {p}", y.node),
                        Some(va),
                        Some(vb),
                    ));
                }
            }
            (x, y) => {
                let node = x.or(y).map(|c| c.node.as_str());
                let (ca, cb) = (a.llm.len(), b.llm.len());
                return Some(div(
                    step,
                    "llm_request",
                    node,
                    None,
                    format!(
                        "A made {ca} LLM call{}, B made {cb}",
                        if ca == 1 { "" } else { "s" }
                    ),
                    Some(Value::from(ca)),
                    Some(Value::from(cb)),
                ));
            }
        }
    }
    if a.interrupt != b.interrupt {
        return Some(div(
            step,
            "interrupt",
            nb.first().copied(),
            None,
            "the question asked differs".into(),
            a.interrupt.clone().map(Value::from),
            b.interrupt.clone().map(Value::from),
        ));
    }
    if let Some((p, va, vb)) = runtime::cassette::first_difference("", sa, sb) {
        let key = p.split(['.', '[']).next().unwrap_or(&p).to_string();
        let node = a
            .nodes
            .iter()
            .find(|_| a.nodes.len() == 1)
            .map(|(n, _)| n.as_str());
        let msg = if step == 0 {
            format!("the initial state differs at {p}")
        } else {
            format!("the state after the step differs at {p}")
        };
        return Some(
            div(
                step,
                "state",
                node.or(nb.first().copied()),
                Some(p),
                msg,
                Some(va),
                Some(vb),
            )
            .with_key(key),
        );
    }
    let routes = |v: &StepView| {
        let mut r: Vec<String> = v
            .routes
            .iter()
            .map(|r| format!("{} → {} ({})", r.from, r.to, r.reason))
            .collect();
        r.sort();
        r
    };
    let (ra, rb) = (routes(a), routes(b));
    if ra != rb {
        let from = a
            .routes
            .iter()
            .zip(&b.routes)
            .find(|(x, y)| x != y)
            .map(|(x, _)| x.from.clone())
            .or_else(|| a.routes.first().map(|r| r.from.clone()));
        return Some(div(
            step,
            "route",
            from.as_deref(),
            None,
            format!("A went {}, B went {}", list_s(&ra), list_s(&rb)),
            Some(Value::from(ra)),
            Some(Value::from(rb)),
        ));
    }
    if a.error != b.error {
        return Some(div(
            step,
            "error",
            nb.first().copied(),
            None,
            "the step's error differs".into(),
            a.error.clone().map(Value::from),
            b.error.clone().map(Value::from),
        ));
    }
    None
}

impl Divergence {
    fn with_key(mut self, key: String) -> Divergence {
        if self.path.as_deref() == Some("") {
            self.path = Some(key);
        }
        self
    }
}

fn list(v: &[&str]) -> String {
    if v.is_empty() {
        "nothing".into()
    } else {
        v.join(", ")
    }
}

fn list_s(v: &[String]) -> String {
    if v.is_empty() {
        "nowhere".into()
    } else {
        v.join(", ")
    }
}

/// A trace's first `events` lines (the run a debugger had before a rewind went on in the same
/// file), or all of it.
pub fn prefix(t: &Trace, events: Option<usize>) -> Trace {
    let n = events.unwrap_or(t.lines.len()).min(t.lines.len());
    Trace {
        lines: t.lines[..n].to_vec(),
    }
}

/// The TypeScript of the comparison (`ui/src/contract/tracediff.ts`), generated like the other
/// contract files (`syntax::contract`).
pub fn tracediff_ts() -> String {
    use syntax::contract::{LIB_COMMAND, config, declaration, file};
    let c = &config();
    file(
        "crates/launch (trace::diff)",
        LIB_COMMAND,
        &["import type { JsonValue } from './editor';"],
        &[
            declaration::<TraceDiff>(c),
            declaration::<Divergence>(c),
            declaration::<AlignedStep>(c),
            declaration::<StepView>(c),
            declaration::<LlmCall>(c),
            declaration::<RouteTaken>(c),
        ],
    )
}

/// Compare two traces. `doc` is the agent file the runs came from, for the states (see
/// [`Trace::state_at`]).
pub fn compare(ta: &Trace, tb: &Trace, doc: Option<&Document>) -> TraceDiff {
    let mut a = read_run(ta);
    let mut b = read_run(tb);
    let sa = states(ta, &mut a, doc);
    let sb = states(tb, &mut b, doc);
    let mut first = None;
    if a.input != b.input {
        let (p, va, vb) =
            runtime::cassette::first_difference("", &a.input, &b.input).unwrap_or_default();
        first = Some(div(
            0,
            "input",
            None,
            Some(p),
            "the runs started from different input".into(),
            Some(va),
            Some(vb),
        ));
    }
    let mut steps = Vec::new();
    let last = a
        .steps
        .keys()
        .chain(b.steps.keys())
        .copied()
        .max()
        .unwrap_or(0);
    for step in 0..=last {
        let (va, vb) = (a.steps.get(&step), b.steps.get(&step));
        if va.is_none() && vb.is_none() {
            continue;
        }
        let d = match (va, vb) {
            (Some(x), Some(y)) => step_divergence(
                step,
                x,
                y,
                sa.get(&step).unwrap_or(&Value::Null),
                sb.get(&step).unwrap_or(&Value::Null),
            ),
            (Some(x), None) => Some(div(
                step,
                "end",
                x.nodes.first().map(|(n, _)| n.as_str()),
                None,
                format!(
                    "B ended after step {} ({}); A went on to {}",
                    step - 1,
                    b.end.as_deref().unwrap_or("no end recorded"),
                    x.summary()
                ),
                Some(Value::from(x.summary())),
                None,
            )),
            (None, Some(y)) => Some(div(
                step,
                "end",
                y.nodes.first().map(|(n, _)| n.as_str()),
                None,
                format!(
                    "A ended after step {} ({}); B went on to {}",
                    step - 1,
                    a.end.as_deref().unwrap_or("no end recorded"),
                    y.summary()
                ),
                None,
                Some(Value::from(y.summary())),
            )),
            (None, None) => None,
        };
        let same = d.is_none();
        if first.is_none() {
            first = d;
        }
        steps.push(AlignedStep {
            step,
            same,
            a: va.cloned(),
            b: vb.cloned(),
        });
    }
    if first.is_none() && a.end != b.end {
        first = Some(div(
            last,
            "end",
            None,
            None,
            format!(
                "A ended {}, B ended {}",
                a.end.as_deref().unwrap_or("without an end"),
                b.end.as_deref().unwrap_or("without an end")
            ),
            a.end.clone().map(Value::from),
            b.end.clone().map(Value::from),
        ));
    }
    if first.is_none() && a.output != b.output {
        let (p, va, vb) =
            runtime::cassette::first_difference("", &a.output, &b.output).unwrap_or_default();
        first = Some(div(
            last,
            "output",
            None,
            Some(p),
            "the runs' outputs differ".into(),
            Some(va),
            Some(vb),
        ));
    }
    TraceDiff {
        first_divergence: first,
        steps,
        end_a: a.end,
        end_b: b.end,
        output_a: a.output,
        output_b: b.output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime::events::{Event, RouteReason, RunStatus};
    use serde_json::json;

    fn ev(body: EventBody) -> Event {
        Event {
            run: "r1".into(),
            ts_ms: 1,
            body,
        }
    }

    fn run(reply: &str, route_to: &str, extra: bool) -> Trace {
        let mut v = vec![
            ev(EventBody::RunStarted {
                agent: "a".into(),
                input: json!("hi"),
                state: json!({"said": [], "n": 0}),
            }),
            ev(EventBody::NodeEnter {
                step: 1,
                node: "ask".into(),
                kind: "call_llm".into(),
            }),
            ev(EventBody::LlmRequest {
                node: "ask".into(),
                messages: json!([{"role": "user", "content": "hi"}]),
                tools: json!([]),
                model: None,
            }),
            ev(EventBody::LlmResponse {
                node: "ask".into(),
                content: Some(reply.into()),
                tool_calls: vec![],
                usage: Default::default(),
                duration_ms: Some(5),
                model: None,
                cost_usd: None,
            }),
            ev(EventBody::NodeExit {
                step: 1,
                node: "ask".into(),
                update: json!({"said": [reply]}),
                duration_ms: 3,
            }),
            ev(EventBody::Route {
                from: "ask".into(),
                to: route_to.into(),
                reason: RouteReason::Branch {
                    index: 0,
                    condition: "x".into(),
                },
            }),
            ev(EventBody::NodeEnter {
                step: 2,
                node: route_to.into(),
                kind: "set_state".into(),
            }),
            ev(EventBody::NodeExit {
                step: 2,
                node: route_to.into(),
                update: json!({"n": 1}),
                duration_ms: 1,
            }),
        ];
        if extra {
            v.push(ev(EventBody::NodeEnter {
                step: 3,
                node: "more".into(),
                kind: "set_state".into(),
            }));
            v.push(ev(EventBody::NodeExit {
                step: 3,
                node: "more".into(),
                update: json!({"n": 2}),
                duration_ms: 1,
            }));
        }
        let n = if extra { 2 } else { 1 };
        let state = json!({"said": [reply], "n": n});
        v.push(ev(EventBody::RunFinished {
            status: RunStatus::Completed,
            state,
            output: json!(reply),
        }));
        Trace::from_events(v)
    }

    #[test]
    fn the_same_run_has_no_divergence() {
        let d = compare(&run("yes", "done", false), &run("yes", "done", false), None);
        assert!(d.first_divergence.is_none(), "{:?}", d.first_divergence);
        assert_eq!(d.steps.len(), 3);
        assert!(d.steps.iter().all(|s| s.same));
        assert_eq!(
            d.steps[1].a.as_ref().unwrap().summary(),
            "ask [llm×1] → done"
        );
    }

    #[test]
    fn another_reply_diverges_at_the_reply_not_at_the_route() {
        let d = compare(&run("yes", "done", false), &run("no", "retry", false), None);
        let x = d.first_divergence.unwrap();
        assert_eq!(
            (x.step, x.kind.as_str(), x.node.as_deref()),
            (1, "llm_response", Some("ask"))
        );
        assert_eq!(x.path.as_deref(), Some("content"));
        assert_eq!((x.a, x.b), (Some(json!("yes")), Some(json!("no"))));
        assert!(!d.steps[1].same && !d.steps[2].same && d.steps[0].same);
    }

    #[test]
    fn the_state_and_the_route_diverge_in_that_order() {
        // Same reply, another route: the state after step 1 is the same, the route is not.
        let d = compare(
            &run("yes", "done", false),
            &run("yes", "retry", false),
            None,
        );
        let x = d.first_divergence.unwrap();
        assert_eq!((x.step, x.kind.as_str()), (1, "route"));
        assert!(
            x.message.contains("ask → done") && x.message.contains("ask → retry"),
            "{}",
            x.message
        );
    }

    #[test]
    fn a_run_that_goes_on_diverges_at_its_extra_step() {
        let d = compare(&run("yes", "done", false), &run("yes", "done", true), None);
        let x = d.first_divergence.unwrap();
        assert_eq!(
            (x.step, x.kind.as_str(), x.node.as_deref()),
            (3, "end", Some("more")),
            "{x:?}"
        );
        assert!(d.steps[3].a.is_none());
    }

    #[test]
    fn a_rewound_trace_reads_as_its_fork() {
        let mut v = run("yes", "done", false)
            .lines
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        v.pop(); // run_finished
        v.push(ev(EventBody::Rewound { step: 1 }));
        v.push(ev(EventBody::NodeEnter {
            step: 2,
            node: "done".into(),
            kind: "set_state".into(),
        }));
        v.push(ev(EventBody::NodeExit {
            step: 2,
            node: "done".into(),
            update: json!({"n": 1}),
            duration_ms: 1,
        }));
        let state = json!({"said": ["yes"], "n": 1});
        v.push(ev(EventBody::RunFinished {
            status: RunStatus::Completed,
            state,
            output: json!("yes"),
        }));
        let d = compare(&run("yes", "done", false), &Trace::from_events(v), None);
        assert!(d.first_divergence.is_none(), "{:?}", d.first_divergence);
    }

    #[test]
    fn contract_checked_in_tracediff_ts_is_what_the_rust_types_generate() {
        let path = syntax::contract::ui_contract_path(env!("CARGO_MANIFEST_DIR"), "tracediff.ts");
        if let Err(e) =
            syntax::contract::check_or_update(&path, &tracediff_ts(), syntax::contract::LIB_COMMAND)
        {
            panic!("{e}");
        }
    }

    #[test]
    fn a_prefix_is_the_run_before_it_went_on() {
        let long = run("yes", "done", true);
        let n = long.lines.len();
        // Without the extra step (two events) and the run_finished event: steps 0-2.
        let short = prefix(&long, Some(n - 3));
        let d = compare(&short, &long, None);
        assert_eq!(d.first_divergence.unwrap().step, 3);
        assert_eq!(prefix(&long, None).lines.len(), n);
        assert_eq!(prefix(&long, Some(10_000)).lines.len(), n);
    }

    #[test]
    fn different_input_is_the_first_divergence() {
        let mut t = run("yes", "done", false);
        if let Some(Some(Event {
            body: EventBody::RunStarted { input, .. },
            ..
        })) = t.lines.first_mut()
        {
            *input = json!("hello");
        }
        let x = compare(&run("yes", "done", false), &t, None)
            .first_divergence
            .unwrap();
        assert_eq!((x.step, x.kind.as_str()), (0, "input"));
    }
}
