//! Graph diff: what changed between two versions of an agent file, at the level of the graph
//! IR ([`crate::graph`]) and of each node's fields as written.
//!
//! - Nodes are matched by id first; the nodes left on each side are then paired by similarity
//!   (the node's fields as written, without its id, and its neighbours, with the ids already
//!   matched): a pair at or above [`RENAME_THRESHOLD`] whose fields alone are at least
//!   [`MIN_FIELD_LIKENESS`] alike is a **rename**, not a removal and an
//!   addition. References to a renamed node inside other nodes (Loki `next`, `routes`, ...)
//!   are read with the new name, so its neighbours do not show as changed for it.
//! - Edges are compared after old ids are mapped to new ones: the same source, target and kind
//!   with another label is a changed condition (or option), the same source, kind and label with
//!   another target is a changed target; the rest are added or removed.
//! - The order of a node's branches (sherma: the first true condition wins) and of an approval's
//!   routes (Loki: the order its options are offered in) is compared among the edges both sides
//!   have: a different order is a **reorder**.
//! - Fields are compared as JSON read from the YAML tree (values as written, `${NAME}` not
//!   filled in): comments, quoting style, flow or block layout and key order make no change. A
//!   list whose items only moved is one `reordered` change.
//!
//! Pure code over two [`Document`]s: no I/O, no git (the CLI and the shell read the files).

use crate::doc::{Document, Model};
use crate::graph::{self, EdgeKind, Graph};
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use ts_rs::TS;

#[cfg(test)]
mod tests;

/// A node left unmatched by id is a rename of the most similar unmatched node of the other side
/// at or above this similarity (0..1: 0.6 × fields + 0.4 × neighbours, same kind only).
pub const RENAME_THRESHOLD: f64 = 0.6;

/// ... and whose fields alone are at least this alike (a node in the same place with other
/// content is a new node).
pub const MIN_FIELD_LIKENESS: f64 = 0.5;

/// Above this many candidate pairs, nodes unmatched by id are not paired by similarity (they are
/// reported as removed and added).
const MAX_PAIRS: usize = 250_000;

/// What happened to a node, an edge or an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "DiffChange")]
pub enum Change {
    Added,
    Removed,
    Changed,
    /// A node whose id changed (its fields may have changed too); an agent of another name.
    Renamed,
}

/// Two versions of one document compared (`switchyard diff --json`, the canvas' diff overlay).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct GraphDiff {
    /// `sherma`, `loki` or `lllm`.
    pub dialect: String,
    /// No graph change: no agent, node, edge, order or document field differs.
    pub same: bool,
    /// One entry per agent of either side (sherma: agents matched by name); an agent without
    /// changes is listed with empty lists.
    pub agents: Vec<AgentDiff>,
    /// Changes outside the nodes and edges (sherma agents' `state`, Loki `settings`, `model`, ...).
    pub fields: Vec<FieldChange>,
}

/// One agent's graph compared.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct AgentDiff {
    /// The agent's name in the new version (the old one's when it was removed).
    pub agent: String,
    /// `None` when the agent is in both versions under the same name.
    pub change: Option<Change>,
    /// The old name of a renamed agent.
    pub old_agent: Option<String>,
    /// Nodes added, removed, changed or renamed, new graph order, then the removed ones.
    pub nodes: Vec<NodeChange>,
    /// Edges added, removed or changed; ids as in the new version (a removed node's old id).
    pub edges: Vec<EdgeChange>,
    pub reorders: Vec<Reorder>,
}

/// A node that differs.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct NodeChange {
    pub change: Change,
    /// The id in the new version (the old one for a removed node).
    pub id: String,
    /// The old id of a renamed node.
    pub old_id: Option<String>,
    pub kind: String,
    /// The old kind when it changed.
    pub old_kind: Option<String>,
    /// Made explicit by lowering (sherma's `<node>_tools`, `__start__`, `__end__`).
    pub derived: bool,
    /// How alike a renamed node's two versions are (0..1).
    pub similarity: Option<f64>,
    /// Changed fields of a changed or renamed node.
    pub fields: Vec<FieldChange>,
}

/// One field with its old and new values (`None`: not written on that side).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct FieldChange {
    /// `args.prompt[1].content`, `routes["yes"]`.
    pub path: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
    /// The list holds the same items in another order.
    pub reordered: bool,
}

/// An edge that differs.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct EdgeChange {
    pub change: Change,
    pub from: String,
    pub to: String,
    /// `model::graph::EdgeKind` as text (`branch`, `route`, `next`, ...).
    #[ts(
        type = "\"entry\" | \"static\" | \"branch\" | \"default\" | \"next\" | \"route\" | \"on_other\" | \"fallback\" | \"map_branch\" | \"dynamic\" | \"inherits\""
    )]
    pub kind: String,
    pub label: Option<String>,
    /// A changed edge's old target (when the target changed).
    pub old_to: Option<String>,
    /// A changed edge's old label (when the condition or option changed).
    pub old_label: Option<String>,
    pub derived: bool,
}

/// The edges out of a node in another order.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct Reorder {
    pub node: String,
    /// `branch` (sherma: evaluated in order, the first true wins) or `route` (Loki approval:
    /// the order the options are offered in).
    pub kind: String,
    /// `label → target`, old order (edges both versions have).
    pub old: Vec<String>,
    /// The same edges in the new order.
    pub new: Vec<String>,
}

/// Compare two documents of the same dialect. `agent` limits a sherma file to one agent. An
/// error when the dialects differ or a document is no agent file.
pub fn diff_documents(
    old: &Document,
    new: &Document,
    agent: Option<&str>,
) -> Result<GraphDiff, String> {
    let (Some(od), Some(nd)) = (old.dialect(), new.dialect()) else {
        let which = if old.dialect().is_none() {
            &old.path
        } else {
            &new.path
        };
        return Err(format!(
            "{}: not a sherma, Loki or LLLM agent file",
            which.display()
        ));
    };
    if od != nd {
        return Err(format!(
            "cannot compare a {} file with a {} file",
            od.as_str(),
            nd.as_str()
        ));
    }
    let old_names = graph::agent_names(old);
    let new_names = graph::agent_names(new);
    // Agents paired by name; one agent left on each side is the same agent renamed (a Loki
    // graph's `name`, an LLLM config's file, a sherma file's only agent).
    let mut pairs: Vec<(Option<String>, Option<String>)> = Vec::new();
    match agent {
        Some(a) => {
            let o = old_names.iter().find(|n| *n == a).cloned();
            let n = new_names.iter().find(|n| *n == a).cloned();
            if o.is_none() && n.is_none() {
                return Err(format!("no agent named `{a}` in either version"));
            }
            pairs.push((o, n));
        }
        None => {
            for n in &new_names {
                pairs.push((old_names.iter().find(|o| *o == n).cloned(), Some(n.clone())));
            }
            for o in &old_names {
                if !new_names.contains(o) {
                    pairs.push((Some(o.clone()), None));
                }
            }
            let lone_new: Vec<usize> = (0..pairs.len()).filter(|&i| pairs[i].0.is_none()).collect();
            let lone_old: Vec<usize> = (0..pairs.len()).filter(|&i| pairs[i].1.is_none()).collect();
            if lone_new.len() == 1 && lone_old.len() == 1 {
                let o = pairs[lone_old[0]].0.take();
                pairs[lone_new[0]].0 = o;
                pairs.remove(lone_old[0]);
            }
        }
    }
    let mut agents = Vec::new();
    for (o, n) in pairs {
        let og = o.as_deref().and_then(|a| graph::lower(old, Some(a)).0);
        let ng = n.as_deref().and_then(|a| graph::lower(new, Some(a)).0);
        let of = o
            .as_deref()
            .map(|a| node_fields(old, a))
            .unwrap_or_default();
        let nf = n
            .as_deref()
            .map(|a| node_fields(new, a))
            .unwrap_or_default();
        let mut d = diff_graphs(og.as_ref(), &of, ng.as_ref(), &nf);
        d.agent = n.clone().or(o.clone()).unwrap_or_default();
        d.change = match (&o, &n) {
            (None, Some(_)) => Some(Change::Added),
            (Some(_), None) => Some(Change::Removed),
            (Some(a), Some(b)) if a != b => Some(Change::Renamed),
            _ => None,
        };
        if d.change == Some(Change::Renamed) {
            d.old_agent = o;
        }
        agents.push(d);
    }
    let mut fields = Vec::new();
    json_diff("", &doc_fields(old), &doc_fields(new), &mut fields);
    let same = fields.is_empty()
        && agents.iter().all(|a| {
            a.change.is_none() && a.nodes.is_empty() && a.edges.is_empty() && a.reorders.is_empty()
        });
    Ok(GraphDiff {
        dialect: od.as_str().into(),
        same,
        agents,
        fields,
    })
}

/// The document as written without its nodes and edges (what [`GraphDiff::fields`] compares).
fn doc_fields(d: &Document) -> Value {
    let Some(root) = &d.root else {
        return Value::Null;
    };
    let mut j = root.to_json();
    match &d.model {
        Model::Sherma(_) => {
            if let Some(agents) = j.get_mut("agents").and_then(Value::as_object_mut) {
                for a in agents.values_mut() {
                    if let Some(o) = a.as_object_mut() {
                        o.remove("nodes");
                        o.remove("edges");
                        if let Some(g) = o.get_mut("graph").and_then(Value::as_object_mut) {
                            g.remove("nodes");
                            g.remove("edges");
                        }
                    }
                }
            }
        }
        Model::Loki(_) => {
            if let Some(o) = j.as_object_mut() {
                o.remove("nodes");
            }
        }
        Model::Lllm(_) => {
            if let Some(o) = j.as_object_mut() {
                o.remove("global");
                o.remove("agent_configs");
            }
        }
        Model::Unknown => {}
    }
    j
}

/// Each declared node's fields as written (the YAML tree, not the interpolated model), without
/// the key that names it.
pub fn node_fields(d: &Document, agent: &str) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    let Some(root) = &d.root else { return out };
    let strip = |mut v: Value, key: &str| {
        if let Some(o) = v.as_object_mut() {
            o.remove(key);
        }
        v
    };
    match &d.model {
        Model::Sherma(s) => {
            if let Some(a) = s.agents.iter().find(|a| a.name.value == agent) {
                for n in &a.nodes {
                    let raw = root.at_span(n.node.span).unwrap_or(&n.node);
                    out.insert(n.name.value.clone(), strip(raw.to_json(), "name"));
                }
            }
        }
        Model::Loki(l) => {
            for n in &l.nodes {
                out.insert(n.id.value.clone(), strip(n.node.to_json(), "id"));
            }
        }
        Model::Lllm(l) => {
            if let Some(g) = root.get("global") {
                out.insert(graph::lower_lllm::GLOBAL.to_string(), g.to_json());
            }
            for e in &l.agents {
                if let Some(n) = root.at_span(e.span) {
                    out.insert(
                        graph::lower_lllm::agent_id(&e.name.value),
                        strip(n.to_json(), "name"),
                    );
                }
            }
        }
        Model::Unknown => {}
    }
    out
}

/// One side's edge, ids as compared (old ids mapped to new ones).
#[derive(Clone, Debug)]
struct E {
    from: String,
    to: String,
    kind: EdgeKind,
    label: Option<String>,
    derived: bool,
    order: usize,
}

/// A node as the matcher sees it.
struct N<'a> {
    id: &'a str,
    kind: &'a str,
    derived: bool,
    summary: &'a str,
    fields: Value,
}

fn nodes_of<'a>(g: Option<&'a Graph>, fields: &HashMap<String, Value>) -> Vec<N<'a>> {
    let Some(g) = g else { return Vec::new() };
    g.nodes_ordered()
        .into_iter()
        .map(|ix| {
            let n = &g.g[ix];
            N {
                id: &n.id,
                kind: &n.kind,
                derived: n.derived,
                summary: &n.summary,
                fields: fields.get(&n.id).cloned().unwrap_or(Value::Null),
            }
        })
        .collect()
}

fn edges_of(g: Option<&Graph>, map: &dyn Fn(&str) -> String) -> Vec<E> {
    let Some(g) = g else { return Vec::new() };
    g.edges_ordered()
        .into_iter()
        .map(|(s, t, e)| E {
            from: map(&g.g[s].id),
            to: map(&g.g[t].id),
            kind: e.kind,
            label: e.label.clone(),
            derived: e.derived,
            order: e.order,
        })
        .collect()
}

/// Compare two lowered graphs of one agent with their nodes' fields (see the module docs).
pub fn diff_graphs(
    old: Option<&Graph>,
    old_fields: &HashMap<String, Value>,
    new: Option<&Graph>,
    new_fields: &HashMap<String, Value>,
) -> AgentDiff {
    let on = nodes_of(old, old_fields);
    let nn = nodes_of(new, new_fields);
    // old id -> new id
    let mut matched: HashMap<String, String> = HashMap::new();
    let new_ids: HashSet<&str> = nn.iter().map(|n| n.id).collect();
    for n in &on {
        if new_ids.contains(n.id) {
            matched.insert(n.id.to_string(), n.id.to_string());
        }
    }
    let mut similarity: HashMap<String, f64> = HashMap::new();
    // Declared nodes first, then derived ones (whose neighbours are then matched).
    for derived in [false, true] {
        let lone_old: Vec<&N> = on
            .iter()
            .filter(|n| n.derived == derived && !matched.contains_key(n.id))
            .collect();
        let taken: HashSet<&String> = matched.values().collect();
        let lone_new: Vec<&N> = nn
            .iter()
            .filter(|n| n.derived == derived && !taken.contains(&n.id.to_string()))
            .collect();
        if lone_old.is_empty() || lone_new.is_empty() || lone_old.len() * lone_new.len() > MAX_PAIRS
        {
            continue;
        }
        let mut scored = Vec::new();
        for (i, o) in lone_old.iter().enumerate() {
            for (j, n) in lone_new.iter().enumerate() {
                if o.kind != n.kind {
                    continue;
                }
                let (s, fields) = node_similarity(o, old, n, new, &matched);
                if s >= RENAME_THRESHOLD && fields >= MIN_FIELD_LIKENESS {
                    scored.push((s, i, j));
                }
            }
        }
        // Best first; ties in declaration order.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let (mut used_o, mut used_n) = (HashSet::new(), HashSet::new());
        for (s, i, j) in scored {
            if used_o.contains(&i) || used_n.contains(&j) {
                continue;
            }
            used_o.insert(i);
            used_n.insert(j);
            matched.insert(lone_old[i].id.to_string(), lone_new[j].id.to_string());
            similarity.insert(lone_new[j].id.to_string(), (s * 100.0).round() / 100.0);
        }
    }
    let renames: HashMap<String, String> = matched
        .iter()
        .filter(|(o, n)| o != n)
        .map(|(o, n)| (o.clone(), n.clone()))
        .collect();
    let back: HashMap<&str, &str> = matched
        .iter()
        .map(|(o, n)| (n.as_str(), o.as_str()))
        .collect();

    let mut nodes = Vec::new();
    for n in &nn {
        match back.get(n.id) {
            None => nodes.push(NodeChange {
                change: Change::Added,
                id: n.id.into(),
                old_id: None,
                kind: n.kind.into(),
                old_kind: None,
                derived: n.derived,
                similarity: None,
                fields: Vec::new(),
            }),
            Some(&oid) => {
                let o = on.iter().find(|x| x.id == oid).expect("matched ids exist");
                let mut fields = Vec::new();
                let old_json = rename_refs(&o.fields, &renames);
                json_diff("", &old_json, &n.fields, &mut fields);
                if o.derived
                    && n.derived
                    && o.summary != n.summary
                    && !renamed_summary(o.summary, n.summary, &renames)
                {
                    fields.push(FieldChange {
                        path: "summary".into(),
                        old: Some(Value::String(o.summary.into())),
                        new: Some(Value::String(n.summary.into())),
                        reordered: false,
                    });
                }
                let renamed = oid != n.id;
                if renamed || !fields.is_empty() || o.kind != n.kind {
                    nodes.push(NodeChange {
                        change: if renamed {
                            Change::Renamed
                        } else {
                            Change::Changed
                        },
                        id: n.id.into(),
                        old_id: renamed.then(|| oid.to_string()),
                        kind: n.kind.into(),
                        old_kind: (o.kind != n.kind).then(|| o.kind.to_string()),
                        derived: n.derived,
                        similarity: if renamed {
                            similarity.get(n.id).copied()
                        } else {
                            None
                        },
                        fields,
                    });
                }
            }
        }
    }
    for o in &on {
        if !matched.contains_key(o.id) {
            nodes.push(NodeChange {
                change: Change::Removed,
                id: o.id.into(),
                old_id: None,
                kind: o.kind.into(),
                old_kind: None,
                derived: o.derived,
                similarity: None,
                fields: Vec::new(),
            });
        }
    }

    let map_old = |id: &str| matched.get(id).cloned().unwrap_or_else(|| id.to_string());
    let oe = edges_of(old, &map_old);
    let ne = edges_of(new, &|id: &str| id.to_string());
    let (edges, pairs) = diff_edges(&oe, &ne);
    let reorders = reorders(&oe, &ne, &pairs);
    AgentDiff {
        agent: String::new(),
        change: None,
        old_agent: None,
        nodes,
        edges,
        reorders,
    }
}

/// Does a derived node's summary differ only by a renamed node's id (`tools of agent`)?
fn renamed_summary(old: &str, new: &str, renames: &HashMap<String, String>) -> bool {
    renames
        .iter()
        .any(|(o, n)| old.replace(o.as_str(), n) == new)
}

/// The keys of a node that name other nodes (Loki: `next`, `routes` values, `on_other`,
/// `fallback`, a map's `branch`; sherma nodes name none, its edges are apart).
const REFERENCE_KEYS: &[&str] = &["next", "routes", "on_other", "fallback", "branch"];

/// A node's references to renamed nodes read with their new names (only where a node is named,
/// so a text that happens to equal an id stays as written).
fn rename_refs(v: &Value, renames: &HashMap<String, String>) -> Value {
    fn rename(v: &Value, renames: &HashMap<String, String>) -> Value {
        match v {
            Value::String(s) => Value::String(renames.get(s).cloned().unwrap_or_else(|| s.clone())),
            Value::Array(a) => Value::Array(a.iter().map(|x| rename(x, renames)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), rename(x, renames)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut v = v.clone();
    if renames.is_empty() {
        return v;
    }
    if let Some(o) = v.as_object_mut() {
        for k in REFERENCE_KEYS {
            if let Some(x) = o.get_mut(*k) {
                *x = rename(x, renames);
            }
        }
    }
    v
}

/// (0.6 × the fields' likeness + 0.4 × the neighbours', the fields' likeness) (Jaccard over `path=value` and
/// `direction kind label other-end` sets; two empty sets are alike).
fn node_similarity(
    o: &N,
    og: Option<&Graph>,
    n: &N,
    ng: Option<&Graph>,
    matched: &HashMap<String, String>,
) -> (f64, f64) {
    let mut of = HashSet::new();
    flatten("", &o.fields, &mut of);
    let mut nf = HashSet::new();
    flatten("", &n.fields, &mut nf);
    if o.derived {
        // A derived node's summary names the node it serves (`tools of answer`): read with the
        // names already matched.
        let mut summary = o.summary.to_string();
        for (old_id, new_id) in matched.iter().filter(|(a, b)| a != b) {
            if summary.split_whitespace().any(|w| w == old_id) {
                summary = summary
                    .split(' ')
                    .map(|w| if w == old_id { new_id.as_str() } else { w })
                    .collect::<Vec<_>>()
                    .join(" ");
            }
        }
        of.insert(format!("summary={summary}"));
        nf.insert(format!("summary={}", n.summary));
    }
    let map = |id: &str| {
        if id == o.id {
            n.id.to_string()
        } else {
            matched
                .get(id)
                .cloned()
                .unwrap_or_else(|| format!("\u{0}{id}"))
        }
    };
    let on = neighbours(og, o.id, &map);
    let nn = neighbours(ng, n.id, &|id: &str| id.to_string());
    let fields = jaccard(&of, &nf);
    (0.6 * fields + 0.4 * jaccard(&on, &nn), fields)
}

fn neighbours(g: Option<&Graph>, id: &str, map: &dyn Fn(&str) -> String) -> HashSet<String> {
    let mut out = HashSet::new();
    let Some(g) = g else { return out };
    let Some(&ix) = g.index.get(id) else {
        return out;
    };
    use petgraph::visit::EdgeRef;
    for e in g.g.edges_directed(ix, petgraph::Direction::Outgoing) {
        out.insert(format!(
            "out {} {:?} {}",
            e.weight().kind.as_str(),
            e.weight().label,
            map(&g.g[e.target()].id)
        ));
    }
    for e in g.g.edges_directed(ix, petgraph::Direction::Incoming) {
        out.insert(format!(
            "in {} {:?} {}",
            e.weight().kind.as_str(),
            e.weight().label,
            map(&g.g[e.source()].id)
        ));
    }
    out
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(b).count() as f64;
    let union = a.union(b).count() as f64;
    inter / union
}

/// `path=value` for every leaf.
fn flatten(path: &str, v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                flatten(&join_key(path, k), x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{path}[{i}]"), x, out);
            }
        }
        Value::Null if path.is_empty() => {}
        leaf => {
            out.insert(format!("{path}={leaf}"));
        }
    }
}

fn join_key(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{}]", Value::String(key.into())),
    }
}

/// The differences between two JSON values as field changes, in the new value's key order
/// (removed keys where they were).
pub fn json_diff(path: &str, a: &Value, b: &Value, out: &mut Vec<FieldChange>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => json_diff(&join_key(path, k), va, vb, out),
                    None => out.push(FieldChange {
                        path: join_key(path, k),
                        old: Some(va.clone()),
                        new: None,
                        reordered: false,
                    }),
                }
            }
            for (k, vb) in y {
                if !x.contains_key(k) {
                    out.push(FieldChange {
                        path: join_key(path, k),
                        old: None,
                        new: Some(vb.clone()),
                        reordered: false,
                    });
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            if is_permutation(x, y) {
                out.push(FieldChange {
                    path: path.into(),
                    old: Some(a.clone()),
                    new: Some(b.clone()),
                    reordered: true,
                });
            } else {
                for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                    json_diff(&format!("{path}[{i}]"), va, vb, out);
                }
            }
        }
        (Value::Null, _) if path.is_empty() => {
            flatten_changes(b, out, false);
        }
        (_, Value::Null) if path.is_empty() => {
            flatten_changes(a, out, true);
        }
        _ => out.push(FieldChange {
            path: if path.is_empty() {
                "(value)".into()
            } else {
                path.into()
            },
            old: Some(a.clone()),
            new: Some(b.clone()),
            reordered: false,
        }),
    }
}

/// A whole side missing (an empty document): its top-level keys as added or removed.
fn flatten_changes(v: &Value, out: &mut Vec<FieldChange>, removed: bool) {
    if let Value::Object(o) = v {
        for (k, x) in o {
            let (old, new) = if removed {
                (Some(x.clone()), None)
            } else {
                (None, Some(x.clone()))
            };
            out.push(FieldChange {
                path: join_key("", k),
                old,
                new,
                reordered: false,
            });
        }
    }
}

fn is_permutation(x: &[Value], y: &[Value]) -> bool {
    let mut left: Vec<&Value> = y.iter().collect();
    for v in x {
        match left.iter().position(|w| *w == v) {
            Some(i) => {
                left.swap_remove(i);
            }
            None => return false,
        }
    }
    true
}

/// Edge changes and the pairs (old index, new index) of edges both sides have (the same or
/// changed).
fn diff_edges(oe: &[E], ne: &[E]) -> (Vec<EdgeChange>, Vec<(usize, usize)>) {
    let mut o_left: Vec<bool> = vec![true; oe.len()];
    let mut n_left: Vec<bool> = vec![true; ne.len()];
    let mut pairs = Vec::new();
    let mut changes = Vec::new();
    // 1. the same edge; 2. another label; 3. another target.
    type Same = fn(&E, &E) -> bool;
    let passes: [Same; 3] = [
        |a, b| a.from == b.from && a.to == b.to && a.kind == b.kind && a.label == b.label,
        |a, b| a.from == b.from && a.to == b.to && a.kind == b.kind,
        |a, b| a.from == b.from && a.kind == b.kind && a.label == b.label,
    ];
    for (pass, same) in passes.iter().enumerate() {
        for j in 0..ne.len() {
            if !n_left[j] {
                continue;
            }
            let Some(i) = (0..oe.len()).find(|&i| o_left[i] && same(&oe[i], &ne[j])) else {
                continue;
            };
            o_left[i] = false;
            n_left[j] = false;
            pairs.push((i, j));
            if pass > 0 {
                let (a, b) = (&oe[i], &ne[j]);
                changes.push((
                    j,
                    EdgeChange {
                        change: Change::Changed,
                        from: b.from.clone(),
                        to: b.to.clone(),
                        kind: b.kind.as_str().into(),
                        label: b.label.clone(),
                        old_to: (a.to != b.to).then(|| a.to.clone()),
                        old_label: if a.label != b.label {
                            a.label.clone().or(Some(String::new()))
                        } else {
                            None
                        },
                        derived: b.derived,
                    },
                ));
            }
        }
    }
    for (j, e) in ne.iter().enumerate() {
        if n_left[j] {
            changes.push((j, edge_change(Change::Added, e)));
        }
    }
    changes.sort_by_key(|(j, _)| *j);
    let mut out: Vec<EdgeChange> = changes.into_iter().map(|(_, c)| c).collect();
    for (i, e) in oe.iter().enumerate() {
        if o_left[i] {
            out.push(edge_change(Change::Removed, e));
        }
    }
    (out, pairs)
}

fn edge_change(change: Change, e: &E) -> EdgeChange {
    EdgeChange {
        change,
        from: e.from.clone(),
        to: e.to.clone(),
        kind: e.kind.as_str().into(),
        label: e.label.clone(),
        old_to: None,
        old_label: None,
        derived: e.derived,
    }
}

/// Branches (sherma) and approval routes (Loki) both sides have, in another order.
fn reorders(oe: &[E], ne: &[E], pairs: &[(usize, usize)]) -> Vec<Reorder> {
    let new_of: HashMap<usize, usize> = pairs.iter().copied().collect();
    let mut out = Vec::new();
    let mut sources: Vec<&str> = Vec::new();
    for e in ne {
        if matches!(e.kind, EdgeKind::Branch | EdgeKind::Route)
            && !sources.contains(&e.from.as_str())
        {
            sources.push(&e.from);
        }
    }
    let text = |e: &E| format!("{} → {}", e.label.as_deref().unwrap_or(""), e.to);
    for src in sources {
        for kind in [EdgeKind::Branch, EdgeKind::Route] {
            // Old edges in routing order, as the new edges they became.
            let mut old: Vec<(usize, usize)> = (0..oe.len())
                .filter(|&i| oe[i].from == src && oe[i].kind == kind)
                .filter_map(|i| new_of.get(&i).map(|&j| (oe[i].order, j)))
                .collect();
            old.sort();
            let old: Vec<usize> = old.into_iter().map(|(_, j)| j).collect();
            let mut new: Vec<(usize, usize)> = old.iter().map(|&j| (ne[j].order, j)).collect();
            new.sort();
            let new: Vec<usize> = new.into_iter().map(|(_, j)| j).collect();
            if old.len() > 1 && old != new {
                out.push(Reorder {
                    node: src.to_string(),
                    kind: kind.as_str().into(),
                    old: old.iter().map(|&j| text(&ne[j])).collect(),
                    new: new.iter().map(|&j| text(&ne[j])).collect(),
                });
            }
        }
    }
    out
}

/// The TypeScript of the diff (`ui/src/contract/diff.ts`), generated like the other contract
/// files (`syntax::contract`).
pub fn diff_ts() -> String {
    use syntax::contract::{LIB_COMMAND, config, declaration, file};
    let c = &config();
    file(
        "crates/model (diff)",
        LIB_COMMAND,
        &["import type { JsonValue } from './editor';"],
        &[
            declaration::<GraphDiff>(c),
            declaration::<AgentDiff>(c),
            declaration::<NodeChange>(c),
            declaration::<FieldChange>(c),
            declaration::<EdgeChange>(c),
            declaration::<Reorder>(c),
            declaration::<Change>(c),
        ],
    )
}
