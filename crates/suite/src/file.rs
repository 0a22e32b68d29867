//! A suite file (`<name>.tests.yaml`) read with spans and checked against its schema: the
//! agent it tests, and its cases with their LLM source, answers and expectations. Every
//! problem is a positioned diagnostic; node and edge names are checked against the agent's
//! graph, CEL and templates compiled, so a misspelt expectation cannot pass unnoticed.

use model::doc::schema::{Checker, Field, Obj, Ty, head_span, opt, req, value_offset_to_source};
use model::doc::{Document, load_path};
use model::graph::{END, Graph, START};
use runtime::events::RunStatus;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use syntax::diag::{Diagnostic, did_you_mean};
use syntax::source::{SourceFile, Span};
use syntax::yaml::{YKind, YNode};

/// The largest suite file read (16 MiB, as agent files).
pub const MAX_SUITE_BYTES: u64 = 16 << 20;
/// A case's time limit when it names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

const STATUSES: &[&str] = &["completed", "failed", "interrupted", "stopped"];
const PREDICATE_KEYS: &[&str] = &["equals", "contains", "cel", "template", "absent"];

static EDGE: Obj = Obj {
    name: "edge",
    fields: &[
        req("from", Ty::NodeRef, "the node the edge leaves"),
        req("to", Ty::NodeRef, "the node it enters"),
        opt("label", Ty::Str, "the branch condition, approval option, `default`, ... (any edge between the two when absent)"),
    ],
    open: false,
};
static EDGE_TY: Ty = Ty::OneOf(&[Ty::Str, Ty::Obj(&EDGE)]);
static EXPECT: Obj = Obj {
    name: "expect",
    fields: &[
        opt("status", Ty::Enum(STATUSES), "how the run ends"),
        opt("nodes", Ty::List(&Ty::NodeRef), "the exact sequence of nodes the run entered"),
        opt("nodes_contain", Ty::List(&Ty::NodeRef), "nodes that ran at least once, in this order"),
        opt("nodes_not_contain", Ty::List(&Ty::NodeRef), "nodes that never ran"),
        opt("edges", Ty::List(&EDGE_TY), "edges taken at least once (`from -> to` or {from, to, label})"),
        opt("edges_not_taken", Ty::List(&EDGE_TY), "edges never taken"),
        opt("state", Ty::Map(&Ty::Any), "final state fields: a value, or {equals|contains|cel|template|absent}"),
        opt("output", Ty::Any, "the run's output: a value, or a predicate as for `state`"),
        opt("error", Ty::Str, "text the run's failure message contains"),
        opt("max_steps", Ty::Int { min: Some(0) }, "steps the run may take at most"),
        opt("max_tokens", Ty::Int { min: Some(0) }, "LLM tokens (prompt + completion) the run may use at most"),
        opt("max_cost_usd", Ty::Float { min: Some(0.0) }, "what the run's LLM calls may cost at most"),
    ],
    open: false,
};
static CASE: Obj = Obj {
    name: "case",
    fields: &[
        req("name", Ty::Str, "the case's name, unique in the suite"),
        opt("input", Ty::Str, "the user's input (sherma: a human message; Loki: the initial prompt)"),
        opt("state", Ty::Map(&Ty::Any), "the initial state"),
        opt("replies", Ty::List(&Ty::Any), "scripted LLM replies, as in replies.yaml"),
        opt("replies_file", Ty::Path, "a replies file, relative to the suite"),
        opt("cassette", Ty::Path, "a recorded cassette to replay, relative to the suite"),
        opt("strict", Ty::Bool, "with `cassette`: fail at the first request that differs from the recording"),
        opt("live", Ty::OneOf(&[Ty::Bool, Ty::Str]), "call the models the agent names (true), or this model"),
        opt("repeat", Ty::Int { min: Some(1) }, "run the case this many times (live models are not deterministic)"),
        opt("pass_rate", Ty::Float { min: Some(0.0) }, "with `repeat`: the share of runs that must pass (default 1.0)"),
        opt("answers", Ty::List(&Ty::Any), "answers to the run's interrupts, approvals and inputs, in order"),
        opt("timeout", Ty::Float { min: Some(0.0) }, "seconds the case may take (default 120)"),
        opt("expect", Ty::Obj(&EXPECT), "what must hold when the run ends"),
    ],
    open: false,
};
static TOP: Obj = Obj {
    name: "suite",
    fields: &[
        opt("agent", Ty::Path, "the agent file or Loki folder, relative to the suite (default: <name>.yaml beside it, else graph.yaml)"),
        opt("agent_id", Ty::Str, "the agent of a multi-agent sherma file"),
        req("cases", Ty::List(&Ty::Obj(&CASE)), "the test cases"),
    ],
    open: false,
};

/// The schema tables, for documentation and the editor.
pub fn schema() -> [&'static Obj; 4] {
    [&TOP, &CASE, &EXPECT, &EDGE]
}

/// Where a case's LLM answers come from.
#[derive(Clone, Debug)]
pub enum Llm {
    /// As `switchyard run` without flags: `replies.yaml` beside the agent, else its cassette.
    Default,
    /// Replies written in the case (the `replies` node of the suite file).
    Replies(YNode),
    File(PathBuf),
    Cassette {
        path: PathBuf,
        strict: bool,
    },
    Live {
        model: Option<String>,
    },
}

impl Llm {
    pub fn is_live(&self) -> bool {
        matches!(self, Llm::Live { .. })
    }
}

/// What a value must satisfy.
#[derive(Clone, Debug)]
pub enum Pred {
    Equals(Value),
    /// The value (as text, or the JSON text of a non-string) contains this.
    Contains(String),
    /// A CEL expression that must be true; `value` is the value, `state` the final state,
    /// `output` the run's output.
    Cel(String),
    /// A `{{template}}` rendered against the final state, then checked.
    Template(String, Box<Pred>),
    Absent,
}

/// One edge named in an expectation.
#[derive(Clone, Debug)]
pub struct EdgePat {
    pub from: String,
    pub to: String,
    pub label: Option<String>,
    pub span: Span,
}

impl std::fmt::Display for EdgePat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} -> {}", self.from, self.to)?;
        if let Some(l) = &self.label {
            write!(f, " [{l}]")?;
        }
        Ok(())
    }
}

/// One expectation.
#[derive(Clone, Debug)]
pub enum Check {
    Status(RunStatus),
    Nodes(Vec<(String, Span)>),
    NodesContain(Vec<(String, Span)>),
    NodesNotContain(Vec<(String, Span)>),
    Edges(Vec<EdgePat>),
    EdgesNotTaken(Vec<EdgePat>),
    State { field: String, pred: Pred },
    Output(Pred),
    Error(String),
    MaxSteps(u64),
    MaxTokens(u64),
    MaxCost(f64),
}

/// An expectation and where it is written (what a failure points at).
#[derive(Clone, Debug)]
pub struct Expect {
    /// `status`, `nodes`, `state.verdict`, ... (the key as written).
    pub key: String,
    pub span: Span,
    pub check: Check,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    /// The case's `name:` value.
    pub span: Span,
    pub input: Option<String>,
    pub state: Option<Value>,
    pub llm: Llm,
    pub answers: Vec<Value>,
    pub repeat: u32,
    pub pass_rate: f64,
    pub timeout: Duration,
    pub expects: Vec<Expect>,
}

/// A loaded suite. Never fails to load: see `diagnostics` (a suite with errors runs nothing).
pub struct Suite {
    pub path: PathBuf,
    pub file: SourceFile,
    /// The agent's file (or Loki folder) as resolved.
    pub agent_path: PathBuf,
    pub agent_id: Option<String>,
    pub doc: Arc<Document>,
    pub graph: Option<Graph>,
    pub cases: Vec<Case>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Suite {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
    /// The file's display name (as given).
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }
}

/// Is `path` a suite file by its name (`*.tests.yaml`, `*.tests.yml`)?
pub fn is_suite_name(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        let l = n.to_ascii_lowercase();
        l.ends_with(".tests.yaml") || l.ends_with(".tests.yml")
    })
}

/// Read and check the suite at `path`.
pub fn load(path: &Path) -> Suite {
    let text = match syntax::source::read_bounded_text(path, MAX_SUITE_BYTES, None) {
        Ok(t) => t,
        Err(e) => {
            let d = Diagnostic::error("io", format!("cannot read the suite {}: {e}", path.display()))
                .in_file(path)
                .hint("give a `*.tests.yaml` file or a folder holding some");
            return empty(path, SourceFile::new(path, String::new()), vec![d]);
        }
    };
    load_str(path, &text)
}

fn empty(path: &Path, file: SourceFile, diagnostics: Vec<Diagnostic>) -> Suite {
    Suite {
        path: path.to_path_buf(),
        file,
        agent_path: PathBuf::new(),
        agent_id: None,
        doc: Arc::new(model::doc::load_str(path, "")),
        graph: None,
        cases: Vec::new(),
        diagnostics,
    }
}

/// Check a suite given as text; `path` places it (relative paths in it are resolved from its
/// folder).
pub fn load_str(path: &Path, text: &str) -> Suite {
    let file = SourceFile::new(path, text);
    let parsed = syntax::yaml::parse(&file);
    let mut diags = parsed.diagnostics;
    let Some(root) = parsed.root else {
        diags.push(
            Diagnostic::error("suite-empty", "the suite is empty")
                .in_file(path)
                .hint("write `cases:` followed by a list of cases, e.g. `- name: first` with `input:` and `expect:`"),
        );
        return empty(path, file, diags);
    };
    {
        let mut ck = Checker::new(&file, &mut diags);
        ck.allow_x_keys = false;
        ck.check_obj(&root, &TOP, "the suite");
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };

    // The agent.
    let agent_node = root.get("agent").filter(|n| !n.is_null());
    let agent_path = match agent_node.and_then(YNode::as_str) {
        Some(a) => dir.join(a),
        None => default_agent(path, &dir),
    };
    let doc = Arc::new(load_path(&agent_path));
    let agent_id = root.get("agent_id").and_then(YNode::as_str).map(String::from);
    let at = agent_node.map(|n| n.span).unwrap_or_else(|| head_span(&file, &root));
    let mut graph = None;
    if doc.io_error || doc.dialect().is_none() {
        let why = doc.diagnostics.iter().find(|d| d.is_error()).map(|d| d.message.clone()).unwrap_or_default();
        diags.push(
            Diagnostic::error("suite-agent", format!("the agent {} cannot be loaded: {why}", agent_path.display()))
                .at(&file, at)
                .hint("name the agent with `agent: <file.yaml or Loki folder>`, relative to this suite (default: <name>.yaml beside the suite, else graph.yaml)"),
        );
    } else {
        let (g, gd) = model::graph::lower(&doc, agent_id.as_deref());
        if g.is_none() {
            let why = gd.first().map(|d| d.message.clone()).unwrap_or_else(|| "it has no agent".into());
            let span = root.get("agent_id").map(|n| n.span).unwrap_or(at);
            diags.push(Diagnostic::error("suite-agent", format!("no graph for the agent: {why}")).at(&file, span));
        }
        graph = g;
    }

    // The cases. Their side files (replies, cassettes) stay inside the suite's project.
    let project = model::doc::project_root(path);
    let mut cases = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for c in root.get("cases").and_then(YNode::as_seq).unwrap_or(&[]) {
        if c.as_map().is_none() {
            continue; // reported by the checker
        }
        let Some(name_node) = c.get("name") else { continue };
        let name = name_node.scalar_text().unwrap_or_default().to_string();
        if names.contains(&name) {
            diags.push(
                Diagnostic::error("suite-duplicate-case", format!("a second case named `{name}`"))
                    .at(&file, name_node.span)
                    .hint("case names identify results in reports: give each case its own"),
            );
        }
        names.push(name.clone());
        let mut cx = Cx { file: &file, diags: &mut diags, graph: graph.as_ref(), dir: &dir, root: &project };
        if let Some(case) = cx.case(c, name, name_node.span) {
            cases.push(case);
        }
    }
    // Unknown keys in a suite are errors: a misspelt expectation would never be checked.
    for d in diags.iter_mut().filter(|d| d.code == "unknown-key") {
        d.severity = syntax::diag::Severity::Error;
        if let Some(h) = &mut d.hint {
            *h = h.replace("Unknown keys are ignored when the agent runs", "A misspelt key would never be checked");
        }
    }
    syntax::diag::sort_and_dedup(&mut diags);
    Suite { path: path.to_path_buf(), file, agent_path, agent_id, doc, graph, cases, diagnostics: diags }
}

/// `<name>.tests.yaml` tests `<name>.yaml` beside it; else the folder's `graph.yaml` (Loki),
/// else `agent.yaml`.
fn default_agent(path: &Path, dir: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let stem = name.rsplit_once(".tests.").map(|(s, _)| s).unwrap_or(name);
    for cand in [format!("{stem}.yaml"), format!("{stem}.yml")] {
        let p = dir.join(cand);
        if p.is_file() {
            return p;
        }
    }
    if dir.join("graph.yaml").is_file() {
        return dir.to_path_buf();
    }
    dir.join("agent.yaml")
}

struct Cx<'a> {
    file: &'a SourceFile,
    diags: &'a mut Vec<Diagnostic>,
    graph: Option<&'a Graph>,
    dir: &'a Path,
    /// The suite's project root (`model::doc::project_root`), which side files may not leave.
    root: &'a Path,
}

impl Cx<'_> {
    fn err(&mut self, code: &str, span: Span, msg: String, hint: Option<String>) {
        self.diags.push(Diagnostic::error(code, msg).at(self.file, span).maybe_hint(hint));
    }

    fn case(&mut self, c: &YNode, name: String, span: Span) -> Option<Case> {
        let input = c.get("input").and_then(|n| n.scalar_text()).map(String::from);
        let state = c.get("state").filter(|n| n.as_map().is_some()).map(YNode::to_json);
        let sources: Vec<&YEntryRef> = ["replies", "replies_file", "cassette", "live"]
            .iter()
            .filter_map(|k| c.entry(k).filter(|e| !e.value.is_null()).map(|e| e as &YEntryRef))
            .collect();
        if sources.len() > 1 {
            let keys: Vec<String> = sources.iter().map(|e| format!("`{}`", e.key.key_text())).collect();
            self.err(
                "suite-llm-source",
                sources[1].key.span,
                format!("case `{name}` names two LLM sources: {}", keys.join(" and ")),
                Some("keep one of `replies`, `replies_file`, `cassette`, `live`".into()),
            );
        }
        let llm = match sources.first().map(|e| (e.key.key_text(), &e.value)) {
            Some(("replies", n)) => {
                if let Err(ds) = runtime::provider::ScriptedProvider::from_list(self.file, n) {
                    self.diags.extend(ds);
                }
                Llm::Replies(n.clone())
            }
            Some(("replies_file", n)) => Llm::File(self.side_file(n, "replies file")),
            Some(("cassette", n)) => {
                Llm::Cassette { path: self.side_file(n, "cassette"), strict: c.get("strict").and_then(YNode::as_bool).unwrap_or(false) }
            }
            Some(("live", n)) => match (n.as_bool(), n.as_str()) {
                (Some(false), _) => Llm::Default,
                (_, Some(m)) => Llm::Live { model: Some(m.to_string()) },
                _ => Llm::Live { model: None },
            },
            _ => Llm::Default,
        };
        if let Some(s) = c.entry("strict")
            && !matches!(llm, Llm::Cassette { .. })
        {
            self.err("suite-strict", s.key.span, "`strict` applies to a `cassette` only".into(), None);
        }
        let repeat = c.get("repeat").and_then(YNode::as_i64).unwrap_or(1).clamp(1, 10_000) as u32;
        let pass_rate = c.get("pass_rate").and_then(YNode::as_f64).unwrap_or(1.0);
        if let Some(p) = c.get("pass_rate") {
            if pass_rate > 1.0 {
                self.err(
                    "suite-pass-rate",
                    p.span,
                    format!("`pass_rate` is {pass_rate}, but a share is at most 1"),
                    Some("write e.g. `pass_rate: 0.8` for 80 % of the runs".into()),
                );
            }
            if c.get("repeat").is_none() {
                self.err(
                    "suite-pass-rate",
                    p.span,
                    "`pass_rate` without `repeat` means nothing: the case runs once".into(),
                    Some("add `repeat: N`".into()),
                );
            }
        }
        let answers = c.get("answers").and_then(YNode::as_seq).map(|s| s.iter().map(YNode::to_json).collect()).unwrap_or_default();
        let timeout = c
            .get("timeout")
            .and_then(YNode::as_f64)
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(|t| Duration::from_secs_f64(t.min(86_400.0)))
            .unwrap_or(DEFAULT_TIMEOUT);
        let mut expects = Vec::new();
        if let Some(e) = c.get("expect").filter(|e| e.as_map().is_some()) {
            for entry in e.as_map().unwrap_or(&[]) {
                self.expect(entry.key.key_text(), &entry.key, &entry.value, &mut expects);
            }
        }
        if expects.is_empty() {
            let at = c.entry("expect").map(|e| e.key.span).unwrap_or(span);
            self.diags.push(
                Diagnostic::warning("suite-no-expect", format!("case `{name}` expects nothing: it passes whenever the run ends"))
                    .at(self.file, at)
                    .hint("add `expect:` with at least `status: completed`"),
            );
        }
        Some(Case { name, span, input, state, llm, answers, repeat, pass_rate, timeout, expects })
    }

    fn side_file(&mut self, n: &YNode, what: &str) -> PathBuf {
        let p = self.dir.join(n.as_str().unwrap_or_default());
        if !p.is_file() {
            self.err(
                "suite-missing-file",
                n.span,
                format!("the {what} {} does not exist", p.display()),
                Some("paths are relative to the suite file's folder".into()),
            );
        } else if let (Ok(real), Ok(root)) = (std::fs::canonicalize(&p), std::fs::canonicalize(self.root))
            && !real.starts_with(&root)
        {
            self.err(
                "suite-outside-project",
                n.span,
                format!("the {what} {} is outside the suite's project {}", p.display(), root.display()),
                Some("keep replies and cassettes beside the suite (symbolic links out of the project are refused too)".into()),
            );
        }
        p
    }

    fn node_name(&mut self, n: &YNode) -> Option<(String, Span)> {
        let name = n.scalar_text()?.to_string();
        if let Some(g) = self.graph
            && g.node(&name).is_none()
        {
            let ids: Vec<&str> = g.nodes_ordered().into_iter().map(|ix| g.g[ix].id.as_str()).collect();
            let hint = match did_you_mean(&name, ids.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("the agent's nodes: {}", ids.join(", ")),
            };
            self.err("suite-unknown-node", n.span, format!("the agent has no node `{name}`"), Some(hint));
        }
        Some((name, n.span))
    }

    fn edge(&mut self, n: &YNode) -> Option<EdgePat> {
        let (from, to, label) = match &n.kind {
            YKind::Scalar(_) => {
                let t = n.scalar_text()?;
                let Some((a, b)) = t.split_once("->") else {
                    self.err(
                        "suite-edge",
                        n.span,
                        format!("`{t}` is not an edge"),
                        Some("write `from -> to`, or {from: a, to: b, label: ...}".into()),
                    );
                    return None;
                };
                (a.trim().to_string(), b.trim().to_string(), None)
            }
            YKind::Map(_) => (
                n.get("from")?.scalar_text()?.to_string(),
                n.get("to")?.scalar_text()?.to_string(),
                n.get("label").and_then(|l| l.scalar_text()).map(String::from),
            ),
            _ => return None,
        };
        let Some(g) = self.graph else { return Some(EdgePat { from, to, label, span: n.span }) };
        for end in [&from, &to] {
            if g.node(end).is_none() && end != START && end != END {
                let ids: Vec<&str> = g.nodes_ordered().into_iter().map(|ix| g.g[ix].id.as_str()).collect();
                let hint = did_you_mean(end, ids.iter().copied()).map(|s| format!("did you mean `{s}`?"));
                self.err("suite-unknown-node", n.span, format!("the agent has no node `{end}`"), hint);
                return None;
            }
        }
        let edges = crate::coverage::edges_between(g, &from, &to);
        if edges.is_empty() {
            self.err(
                "suite-unknown-edge",
                n.span,
                format!("the agent has no edge {from} -> {to}"),
                Some(format!("edges out of `{from}`: {}", crate::coverage::edges_out(g, &from).join(", "))),
            );
            return None;
        }
        if let Some(l) = &label
            && !edges.iter().any(|e| e.label.as_deref() == Some(l.as_str()))
        {
            let labels: Vec<String> = edges.iter().map(|e| format!("`{}`", e.label.clone().unwrap_or_default())).collect();
            self.err(
                "suite-unknown-edge",
                n.span,
                format!("no edge {from} -> {to} has the label `{l}`"),
                Some(format!("its labels: {}", labels.join(", "))),
            );
            return None;
        }
        Some(EdgePat { from, to, label, span: n.span })
    }

    fn names(&mut self, v: &YNode) -> Vec<(String, Span)> {
        v.as_seq().unwrap_or(&[]).iter().filter_map(|n| self.node_name(n)).collect()
    }

    fn expect(&mut self, key: &str, k: &YNode, v: &YNode, out: &mut Vec<Expect>) {
        if v.is_null() {
            return; // reported by the checker when it matters
        }
        let span = k.span.cover(v.span);
        let mut push = |key: &str, span: Span, check: Check| out.push(Expect { key: key.to_string(), span, check });
        match key {
            "status" => {
                let s = match v.scalar_text() {
                    Some("completed") => RunStatus::Completed,
                    Some("failed") => RunStatus::Failed,
                    Some("interrupted") => RunStatus::Interrupted,
                    Some("stopped") => RunStatus::Stopped,
                    _ => return,
                };
                push(key, span, Check::Status(s));
            }
            "nodes" => push(key, span, Check::Nodes(self.names(v))),
            "nodes_contain" => push(key, span, Check::NodesContain(self.names(v))),
            "nodes_not_contain" => push(key, span, Check::NodesNotContain(self.names(v))),
            "edges" | "edges_not_taken" => {
                let es: Vec<EdgePat> = v.as_seq().unwrap_or(&[]).iter().filter_map(|n| self.edge(n)).collect();
                push(key, span, if key == "edges" { Check::Edges(es) } else { Check::EdgesNotTaken(es) });
            }
            "state" => {
                for e in v.as_map().unwrap_or(&[]) {
                    let field = e.key.key_text().to_string();
                    if let Some(pred) = self.pred(&e.value) {
                        out.push(Expect {
                            key: format!("state.{field}"),
                            span: e.key.span.cover(e.value.span),
                            check: Check::State { field, pred },
                        });
                    }
                }
            }
            "output" => {
                if let Some(p) = self.pred(v) {
                    push(key, span, Check::Output(p));
                }
            }
            "error" => push(key, span, Check::Error(v.scalar_text().unwrap_or_default().to_string())),
            "max_steps" => push(key, span, Check::MaxSteps(v.as_i64().unwrap_or(0).max(0) as u64)),
            "max_tokens" => push(key, span, Check::MaxTokens(v.as_i64().unwrap_or(0).max(0) as u64)),
            "max_cost_usd" => push(key, span, Check::MaxCost(v.as_f64().unwrap_or(0.0))),
            _ => {} // unknown keys: reported by the checker
        }
    }

    /// A value, or a mapping of predicate keys (`{equals|contains|cel|template|absent}`).
    fn pred(&mut self, v: &YNode) -> Option<Pred> {
        let Some(entries) = v.as_map() else { return Some(Pred::Equals(v.to_json())) };
        if entries.is_empty() || !entries.iter().all(|e| PREDICATE_KEYS.contains(&e.key.key_text())) {
            return Some(Pred::Equals(v.to_json()));
        }
        let mut base = None;
        let mut template = None;
        for e in entries {
            let val = &e.value;
            match e.key.key_text() {
                "equals" => base = Some(Pred::Equals(val.to_json())),
                "contains" => match val.scalar_text() {
                    Some(t) => base = Some(Pred::Contains(t.to_string())),
                    None => self.err("wrong-type", val.span, "`contains` must be text".into(), None),
                },
                "absent" => {
                    if val.as_bool() != Some(true) {
                        self.err(
                            "wrong-type",
                            val.span,
                            "`absent` must be `true`".into(),
                            Some("to expect a value, write it (or `equals:`)".into()),
                        );
                        return None;
                    }
                    base = Some(Pred::Absent)
                }
                "cel" => {
                    let Some(src) = val.as_str() else {
                        self.err("wrong-type", val.span, "`cel` must be a CEL expression (text)".into(), None);
                        return None;
                    };
                    if let Err(e) = expr::CelEngine::shared().compile(src) {
                        let r = e.range();
                        let s = value_offset_to_source(self.file, val, r.start);
                        let end = value_offset_to_source(self.file, val, r.end.max(r.start + 1));
                        self.err(
                            "suite-cel",
                            Span::new(s, end.max(s)),
                            format!("CEL: {}", e.message),
                            Some("`value` is the value checked, `state` the final state, `output` the run's output".into()),
                        );
                        return None;
                    }
                    base = Some(Pred::Cel(src.to_string()));
                }
                "template" => {
                    let Some(src) = val.as_str() else {
                        self.err("wrong-type", val.span, "`template` must be a `{{...}}` template (text)".into(), None);
                        return None;
                    };
                    for issue in expr::lint(src).into_iter().filter(|i| i.severity == expr::Severity::Error) {
                        let s = value_offset_to_source(self.file, val, issue.range.start);
                        let end = value_offset_to_source(self.file, val, issue.range.end);
                        self.err("suite-template", Span::new(s, end.max(s)), issue.message, None);
                        return None;
                    }
                    template = Some(src.to_string());
                }
                _ => {}
            }
        }
        match (template, base) {
            (Some(t), Some(b)) => Some(Pred::Template(t, Box::new(b))),
            (Some(_), None) => {
                self.err("suite-template", v.span, "a `template` needs `equals` or `contains` to compare its text with".into(), None);
                None
            }
            (None, b) => b,
        }
    }
}

type YEntryRef = syntax::yaml::YEntry;

/// The schema as it is documented (README): field, type, required, meaning.
pub fn describe() -> String {
    let mut out = String::new();
    for o in schema() {
        out.push_str(&format!("{}:\n", o.name));
        for f in o.fields {
            let Field { name, ty, required, doc } = f;
            out.push_str(&format!("  {name}{}: {} — {doc}\n", if *required { " (required)" } else { "" }, ty.describe()));
        }
    }
    out
}
