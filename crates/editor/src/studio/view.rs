//! The [`View`]: everything the UI draws for one document, computed from the text.

use super::Session;
use syntax::diag::{Diagnostic, Severity};
use model::doc::{Document, Model};
use model::graph::{self, Graph};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use ts_rs::TS;

/// What the UI draws for one document (docs/app-contract.md §2).
#[derive(Clone, Debug, Serialize, TS)]
pub struct View {
    pub path: String,
    pub file_name: String,
    #[ts(type = r#""sherma" | "loki" | "lllm" | null"#)]
    pub dialect: Option<&'static str>,
    pub text: String,
    pub dirty: bool,
    pub conflict: bool,
    pub can_undo: bool,
    pub can_redo: bool,
    pub revision: u64,
    pub agents: Vec<String>,
    pub agent: Option<String>,
    pub nodes: Vec<ViewNode>,
    pub edges: Vec<ViewEdge>,
    pub diagnostics: Vec<Diagnostic>,
    pub node_kinds: Vec<&'static str>,
    /// The inspector's schema of each node kind (sherma: its `args`; Loki: the node mapping).
    #[ts(as = "std::collections::BTreeMap<String, model::doc::schema::Obj>")]
    pub schema: serde_json::Map<String, Value>,
    pub width: f64,
    pub height: f64,
    /// Loki map lanes (coyote 0.10.3 branch chains), maps in declaration order; absent when
    /// there are none. A node may be in several lanes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub lanes: Option<Vec<ViewLane>>,
}

/// One map's lane: the map and the nodes of its per-item chain (the branch entry first).
#[derive(Clone, Debug, Serialize, TS)]
pub struct ViewLane {
    pub map: String,
    pub nodes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, TS)]
pub struct ViewNode {
    pub id: String,
    /// The node type as written (`call_llm`, `script`, ...; an unknown or misspelt type too, which
    /// the diagnostics report), or the markers `__start__` / `__end__`: an open set.
    pub kind: String,
    pub derived: bool,
    pub summary: String,
    pub dynamic_next: bool,
    pub order: usize,
    pub line: Option<usize>,
    pub end_line: Option<usize>,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    /// The user dragged it (position from the sidecar, not the automatic layout).
    pub pinned: bool,
    pub data: Value,
    pub errors: usize,
    pub warnings: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sub_agent: Option<String>,
}

#[derive(Clone, Debug, Serialize, TS)]
pub struct ViewEdge {
    pub id: String,
    pub from: String,
    pub to: String,
    /// `model::graph::EdgeKind` (`as_str`): a closed set.
    #[ts(type = r#""entry" | "static" | "branch" | "default" | "next" | "route" | "on_other" | "fallback" | "map_branch" | "dynamic" | "inherits""#)]
    pub kind: &'static str,
    pub label: Option<String>,
    pub derived: bool,
    pub dynamic: bool,
    pub fanout: bool,
    pub order: usize,
    /// Position of the branch / route inside its source, for branch ops.
    pub index: Option<usize>,
    /// Points (x, y) a long edge passes through from its source to its target, one per layer it
    /// crosses, from the layout; absent when there are none, or when one of its ends has a
    /// position the user dragged (the route would be stale).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub points: Option<Vec<(f64, f64)>>,
}

const SHERMA_KINDS: &[&str] =
    &["call_llm", "tool_node", "call_agent", "data_transform", "set_state", "interrupt", "load_skills", "custom"];
const LOKI_KINDS: &[&str] = &["agent", "script", "approval", "input", "llm", "rag", "map", "end"];
/// What the palette adds to an LLLM config: agents (`global` is written once, a base with `base`).
const LLLM_KINDS: &[&str] = &["agent"];

pub(super) fn build(s: &Session) -> View {
    let doc_arc = s.document();
    let doc: &Document = &doc_arc;
    let agents = graph::agent_names(&doc);
    let agent = s.agent.clone().filter(|a| graph::selectable_agents(&doc).contains(a)).or_else(|| agents.first().cloned());
    let diagnostics = model::validate::validate(&doc, agent.as_deref());
    let (g, _) = graph::lower(&doc, agent.as_deref());
    let dialect = doc.dialect().map(|d| d.as_str());
    let (node_kinds, schema) = match &doc.model {
        Model::Sherma(_) => (SHERMA_KINDS.to_vec(), sherma_schema()),
        Model::Loki(_) => (LOKI_KINDS.to_vec(), loki_schema()),
        Model::Lllm(_) => (LLLM_KINDS.to_vec(), lllm_schema()),
        Model::Unknown => (Vec::new(), serde_json::Map::new()),
    };
    let mut v = View {
        path: s.path.display().to_string(),
        file_name: s.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        dialect,
        text: s.text.clone(),
        dirty: s.dirty(),
        conflict: s.conflict,
        can_undo: s.can_undo(),
        can_redo: s.can_redo(),
        revision: s.revision,
        agents,
        agent,
        nodes: Vec::new(),
        edges: Vec::new(),
        diagnostics,
        node_kinds,
        schema,
        width: 0.0,
        height: 0.0,
        lanes: None,
    };
    if let Some(g) = g {
        fill_graph(&mut v, s, doc, &g);
    }
    v
}

fn fill_graph(v: &mut View, s: &Session, doc: &Document, g: &Graph) {
    let layout = model::layout::layout(g);
    let boxes: HashMap<&str, &model::layout::NodeBox> = layout.nodes.iter().map(|b| (b.id.as_str(), b)).collect();
    let pinned = s.positions();
    let file = doc.file.as_ref();
    let decl = declarations(doc, v.agent.as_deref());
    let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
    for d in &v.diagnostics {
        if let Some(n) = &d.node {
            let c = counts.entry(n.as_str()).or_default();
            match d.severity {
                Severity::Error => c.0 += 1,
                _ => c.1 += 1,
            }
        }
    }
    let mut nodes = Vec::new();
    for ix in g.nodes_ordered() {
        let n = &g.g[ix];
        let b = boxes.get(n.id.as_str());
        let (mut x, mut y) = b.map(|b| (b.x, b.y)).unwrap_or((0.0, 0.0));
        let (w, h) = b.map(|b| (b.w, b.h)).unwrap_or((200.0, 64.0));
        let pin = pinned.and_then(|p| p.get(&n.id));
        if let Some(p) = pin {
            x = p.x;
            y = p.y;
        }
        let d = if n.derived { None } else { decl.get(n.id.as_str()) };
        let (line, end_line) = match (d.and_then(|d| d.span), file) {
            (Some(span), Some(f)) => {
                let a = f.line_col(span.0).line as usize;
                // A mapping's span may run into the blank and comment lines before the next
                // entry: the node ends on its last line of content.
                let text = f.text();
                let (s0, s1) = (span.0.min(text.len()), span.1.min(text.len()).max(span.0.min(text.len())));
                let body = text.get(s0..s1).unwrap_or("");
                let kept = body.lines().count().saturating_sub(
                    body.lines().rev().take_while(|l| l.trim().is_empty() || l.trim_start().starts_with('#')).count(),
                );
                (Some(a), Some((a + kept.max(1) - 1).max(a)))
            }
            _ => (None, None),
        };
        let (errors, warnings) = counts.get(n.id.as_str()).copied().unwrap_or((0, 0));
        nodes.push(ViewNode {
            id: n.id.clone(),
            kind: n.kind.clone(),
            derived: n.derived,
            summary: n.summary.clone(),
            dynamic_next: n.dynamic_next,
            order: n.order,
            line,
            end_line,
            x,
            y,
            w,
            h,
            pinned: pin.is_some(),
            data: d.map(|d| d.data.clone()).unwrap_or(Value::Null),
            errors,
            warnings,
            sub_agent: d.and_then(|d| d.sub_agent.clone()),
        });
    }
    let mut branch_index: HashMap<&str, usize> = HashMap::new();
    let mut edges = Vec::new();
    let is_pinned = |id: &str| pinned.is_some_and(|p| p.contains_key(id));
    for (i, (a, b, e)) in g.edges_ordered().into_iter().enumerate() {
        let from = g.g[a].id.as_str();
        let points = layout
            .points
            .get(i)
            .filter(|p| !p.is_empty() && !is_pinned(from) && !is_pinned(&g.g[b].id))
            .cloned();
        let kind = e.kind.as_str();
        let index = match (kind, e.derived) {
            ("branch" | "route", false) => {
                let c = branch_index.entry(from).or_default();
                *c += 1;
                Some(*c - 1)
            }
            _ => None,
        };
        edges.push(ViewEdge {
            id: format!("e{i}"),
            from: from.to_string(),
            to: g.g[b].id.clone(),
            kind,
            label: e.label.clone(),
            derived: e.derived,
            dynamic: e.dynamic,
            fanout: e.fanout,
            order: e.order,
            index,
            points,
        });
    }
    if !g.lanes.is_empty() {
        v.lanes = Some(g.lanes.iter().map(|l| ViewLane { map: l.map.clone(), nodes: l.nodes.clone() }).collect());
    }
    v.width = layout.width;
    v.height = layout.height;
    v.nodes = nodes;
    v.edges = edges;
}

pub(super) struct Decl {
    /// Byte range of the whole entry (from the name/key to the end of its mapping); `None` when
    /// it is not in this file (an LLLM agent or base from the `base` chain).
    pub(super) span: Option<(usize, usize)>,
    pub(super) data: Value,
    pub(super) sub_agent: Option<String>,
}

fn declarations(doc: &Document, agent: Option<&str>) -> HashMap<String, Decl> {
    let mut out = HashMap::new();
    match &doc.model {
        Model::Sherma(s) => {
            let a = match agent {
                Some(name) => s.agents.iter().find(|a| a.name.value == name),
                None => s.agents.first(),
            };
            let Some(a) = a else { return out };
            for n in &a.nodes {
                let sub_agent = match &n.args {
                    model::doc::sherma::NodeArgs::CallAgent { agent: Some(r), .. } => r.id.as_ref().and_then(|id| {
                        s.sub_agents
                            .iter()
                            .find(|e| e.id_str() == id.value)
                            .and_then(|e| e.resolved_path.as_ref())
                            .filter(|p| p.is_file())
                            .map(|p| p.display().to_string())
                    }),
                    _ => None,
                };
                let start = n.span.start as usize;
                // The editor shows and edits what the file says: `${NAME}` placeholders as
                // written, never their values (the model holds the interpolated tree; the
                // document's root is the file's own). Otherwise an edit in the inspector could
                // write a secret from the environment into the file.
                let raw = doc.root.as_ref().and_then(|r| r.at_span(n.node.span)).unwrap_or(&n.node);
                out.insert(n.name.value.clone(), Decl { span: Some((start, n.span.end as usize)), data: raw.to_json(), sub_agent });
            }
        }
        Model::Loki(l) => {
            for n in &l.nodes {
                let sub_agent = match &n.body {
                    model::doc::loki::NodeBody::Agent(a) => a.agent.as_ref().and_then(|name| loki_agent_file(doc, &name.value)),
                    _ => None,
                };
                out.insert(
                    n.id.value.clone(),
                    Decl { span: Some((n.id.span.start as usize, n.span.end as usize)), data: n.node.to_json(), sub_agent },
                );
            }
        }
        Model::Lllm(l) => return super::lllm_view::declarations(doc, l),
        Model::Unknown => {}
    }
    out
}

/// A Loki agent node names an agent; when a graph or config for it sits nearby, the UI can open it.
fn loki_agent_file(doc: &Document, name: &str) -> Option<String> {
    if name.is_empty() || name.contains("..") {
        return None;
    }
    let base = &doc.base_dir;
    let mut dirs = vec![base.join(name), base.join("agents").join(name)];
    if let Some(parent) = base.parent() {
        dirs.push(parent.join(name));
    }
    for d in dirs {
        for f in ["graph.yaml", "config.yaml"] {
            let p = d.join(f);
            if p.is_file() && p != doc.path {
                return Some(p.display().to_string());
            }
        }
    }
    None
}

/// Inspector schemas, keyed by node kind. sherma: the type-specific `args` object (the inspector
/// writes its fields under `["args", ...]` and edits `on_error` with its own controls); Loki: the
/// node mapping itself.
fn sherma_schema() -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    for k in SHERMA_KINDS {
        if let Some(o) = model::doc::sherma::args_schema(k) {
            m.insert((*k).to_string(), json!(o));
        }
    }
    m
}

fn lllm_schema() -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("global".into(), json!(&model::doc::lllm::schema::GLOBAL));
    m.insert("agent".into(), json!(&model::doc::lllm::schema::AGENT));
    m
}

fn loki_schema() -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    for k in LOKI_KINDS {
        if let Some(o) = model::doc::loki::node_schema(k) {
            m.insert((*k).to_string(), json!(o));
        }
    }
    m
}
