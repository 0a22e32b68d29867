//! Edit ops on sherma documents (`agents.<name>.graph.{entry_point,nodes,edges}`).

use super::text::{at, err, key, ref_str, Res};
use super::{check_new_name, EditError, EditOp, PathSeg, Work};
use model::doc::sherma::NODE_TYPES;
use model::doc::Document;
use model::graph::{END, START};
use syntax::yaml::YNode;
use serde_json::{Value as Json, json};

const EDGE_KINDS: &str = "static, branch, default, fallback or entry";

fn p(base: &[PathSeg], rest: &[PathSeg]) -> Vec<PathSeg> {
    base.iter().chain(rest).cloned().collect()
}

fn ix(i: usize) -> PathSeg {
    PathSeg::Index(i)
}

/// Path of the graph mapping of the chosen agent.
fn graph_path(root: &YNode, agent: Option<&str>) -> Res<Vec<PathSeg>> {
    let names: Vec<String> = root
        .get("agents")
        .and_then(|a| a.as_map())
        .map(|m| m.iter().map(|e| e.key.key_text().to_string()).collect())
        .unwrap_or_default();
    let name = match agent {
        Some(a) if names.iter().any(|n| n == a) => a.to_string(),
        Some(a) => {
            return err(format!(
                "there is no agent `{a}` in this file (agents: {}); pick one of them",
                if names.is_empty() { "none".into() } else { names.join(", ") }
            ));
        }
        None if names.len() == 1 => names[0].clone(),
        None if names.is_empty() => return err("this file has no agents; add one under `agents:` first"),
        None => return err(format!("this file has several agents ({}); pick one first", names.join(", "))),
    };
    Ok(vec![key("agents"), PathSeg::Key(name), key("graph")])
}

struct G<'a> {
    root: &'a YNode,
    gp: Vec<PathSeg>,
}

impl<'a> G<'a> {
    fn nodes(&self) -> &'a [YNode] {
        at(self.root, &p(&self.gp, &[key("nodes")])).and_then(|n| n.as_seq()).unwrap_or(&[])
    }
    fn edges(&self) -> &'a [YNode] {
        at(self.root, &p(&self.gp, &[key("edges")])).and_then(|n| n.as_seq()).unwrap_or(&[])
    }
    fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes().iter().position(|n| n.get("name").and_then(ref_str) == Some(name))
    }
    fn names(&self) -> Vec<String> {
        self.nodes().iter().filter_map(|n| n.get("name").and_then(ref_str)).map(str::to_string).collect()
    }
    fn node_path(&self, i: usize) -> Vec<PathSeg> {
        p(&self.gp, &[key("nodes"), ix(i)])
    }
    fn edge_path(&self, i: usize) -> Vec<PathSeg> {
        p(&self.gp, &[key("edges"), ix(i)])
    }
    fn need_node(&self, name: &str) -> Res<usize> {
        self.node_index(name).ok_or_else(|| unknown_node(name, &self.names()))
    }
    fn need_target(&self, name: &str) -> Res<()> {
        if name == END || self.node_index(name).is_some() {
            Ok(())
        } else {
            Err(unknown_node(name, &self.names()))
        }
    }
    fn need_source(&self, name: &str) -> Res<()> {
        if name == START || self.node_index(name).is_some() {
            Ok(())
        } else {
            Err(unknown_node(name, &self.names()))
        }
    }
    /// Edges whose source is `from`: (index, conditional?).
    fn edges_from(&self, from: &str) -> Vec<(usize, bool)> {
        self.edges()
            .iter()
            .enumerate()
            .filter(|(_, e)| e.get("source").and_then(ref_str) == Some(from))
            .map(|(i, e)| (i, e.get("branches").is_some()))
            .collect()
    }
    fn conditional(&self, from: &str) -> Res<usize> {
        self.need_source(from)?;
        let es = self.edges_from(from);
        if let Some((i, _)) = es.iter().find(|(_, c)| *c) {
            return Ok(*i);
        }
        match es.first() {
            Some((i, _)) => {
                let t = self.edges()[*i].get("target").and_then(ref_str).unwrap_or("?");
                err(format!("`{from}` has a static edge to `{t}`, not branches; add a branch first"))
            }
            None => err(format!("`{from}` has no conditional edge; add a branch first")),
        }
    }
}

pub(crate) fn unknown_node(name: &str, names: &[String]) -> EditError {
    let hint = match syntax::diag::did_you_mean(name, names.iter().map(String::as_str)) {
        Some(s) => format!("did you mean `{s}`?"),
        None if names.is_empty() => "the agent has no nodes yet".to_string(),
        None if names.len() <= 8 => format!("its nodes are: {}", names.join(", ")),
        None => format!("its nodes include: {}, … ({} in all)", names[..8].join(", "), names.len()),
    };
    EditError::new(format!("there is no node `{name}`; {hint}"))
}

fn placeholder_args(kind: &str, root: &YNode) -> Json {
    match kind {
        "call_llm" => json!({
            "prompt": [
                {"role": "system", "content": "\"You are a helpful assistant.\""},
                {"role": "messages", "content": "state.messages"}
            ],
            "state_updates": {"messages": "[llm_response]"}
        }),
        "call_agent" => {
            let id = root
                .get("sub_agents")
                .and_then(|s| s.as_seq())
                .and_then(|s| s.first())
                .and_then(|s| s.get("id"))
                .and_then(ref_str)
                .unwrap_or("sub_agent")
                .to_string();
            json!({"agent": {"id": id}, "input": "state.messages[size(state.messages) - 1].content"})
        }
        "data_transform" => json!({"expression": "{}"}),
        "set_state" => json!({"values": {}}),
        "interrupt" => json!({"value": "\"Continue?\""}),
        "load_skills" => json!({"skill_ids": "[]"}),
        _ => json!({}),
    }
}

/// Append `v` to the list at `path` (creating it when missing or null).
fn append(w: &mut Work, path: &[PathSeg], v: &Json) -> Res<()> {
    w.step(|ed| match at(ed.root, path) {
        Some(l) if l.as_seq().is_some() && (!l.as_seq().unwrap().is_empty() || super::text::is_flow(ed.text, l)) => {
            ed.insert_item(l, None, v)
        }
        _ => ed.set(path, Some(&Json::Array(vec![v.clone()]))),
    })
}

/// Remove branch `bi` of edge `ei`; the last branch turns the edge back into a static one
/// (to its `default`, else to `__end__`).
fn remove_branch_at(w: &mut Work, gp: &[PathSeg], ei: usize, bi: usize) -> Res<()> {
    let ep = p(gp, &[key("edges"), ix(ei)]);
    let root = w.root()?;
    let edge = at(&root, &ep).ok_or_else(|| EditError::new("internal: edge vanished"))?;
    let n = edge.get("branches").and_then(|b| b.as_seq()).map(|b| b.len()).unwrap_or(0);
    if bi >= n {
        return err(format!("branch index {bi} is out of range: the edge has {n} branch(es)"));
    }
    if n > 1 {
        return w.set(&p(&ep, &[key("branches"), ix(bi)]), None);
    }
    let has_default = edge.get("default").is_some();
    w.set(&p(&ep, &[key("branches")]), None)?;
    if has_default {
        rename_key(w, &ep, "default", "target")
    } else {
        w.set(&p(&ep, &[key("target")]), Some(&json!(END)))
    }
}

fn rename_key(w: &mut Work, map_path: &[PathSeg], from: &str, to: &str) -> Res<()> {
    w.step(|ed| {
        let m = at(ed.root, map_path).ok_or_else(|| EditError::new("internal: mapping vanished"))?;
        let i = super::text::entry_index(m, from).ok_or_else(|| EditError::new("internal: key vanished"))?;
        let k = &m.as_map().unwrap()[i].key;
        ed.replace_scalar(k, to).ok_or_else(|| EditError::new("cannot rename this key"))
    })
}

/// Remove `on_error.fallback` of node `ni` (and `on_error` when nothing else is in it).
fn remove_fallback(w: &mut Work, np: &[PathSeg], on_error: &YNode) -> Res<()> {
    if on_error.as_map().map(|m| m.len()).unwrap_or(0) <= 1 {
        w.set(&p(np, &[key("on_error")]), None)
    } else {
        w.set(&p(np, &[key("on_error"), key("fallback")]), None)
    }
}

pub(crate) fn apply(w: &mut Work, _doc: &Document, agent: Option<&str>, op: &EditOp) -> Res<Option<String>> {
    let root = w.root()?;
    let gp = graph_path(&root, agent)?;
    let g = G { root: &root, gp: gp.clone() };
    match op {
        EditOp::AddNode { name, kind, after } => {
            check_new_name(name)?;
            if g.node_index(name).is_some() {
                return err(format!("a node named `{name}` already exists; choose another name"));
            }
            if !NODE_TYPES.contains(&kind.as_str()) {
                return err(format!("unknown sherma node type `{kind}`; use one of {}", NODE_TYPES.join(", ")));
            }
            let v = json!({"name": name, "type": kind, "args": placeholder_args(kind, &root)});
            let nodes_path = p(&gp, &[key("nodes")]);
            match after {
                Some(a) => {
                    let i = g.need_node(a)?;
                    let n = g.nodes().len();
                    w.step(|ed| {
                        let l = at(ed.root, &nodes_path).unwrap();
                        ed.insert_item(l, if i + 1 < n { Some(i + 1) } else { None }, &v)
                    })?;
                }
                None => append(w, &nodes_path, &v)?,
            }
            Ok(Some(name.clone()))
        }
        EditOp::DeleteNode { name } => {
            g.need_node(name)?;
            drop(g);
            for _ in 0..100_000 {
                let root = w.root()?;
                let g = G { root: &root, gp: gp.clone() };
                if let Some(i) = g.node_index(name) {
                    w.set(&g.node_path(i), None)?;
                    continue;
                }
                let mut done = true;
                for (ei, e) in g.edges().iter().enumerate() {
                    let ep = g.edge_path(ei);
                    let is = |k: &str| e.get(k).and_then(ref_str) == Some(name.as_str());
                    if is("source") || (is("target") && e.get("branches").is_none()) {
                        w.set(&ep, None)?;
                    } else if is("default") {
                        w.set(&p(&ep, &[key("default")]), None)?;
                    } else if let Some(bi) = e
                        .get("branches")
                        .and_then(|b| b.as_seq())
                        .and_then(|bs| bs.iter().position(|b| b.get("target").and_then(ref_str) == Some(name.as_str())))
                    {
                        remove_branch_at(w, &gp, ei, bi)?;
                    } else {
                        continue;
                    }
                    done = false;
                    break;
                }
                if !done {
                    continue;
                }
                if at(&root, &p(&gp, &[key("entry_point")])).and_then(ref_str) == Some(name.as_str()) {
                    w.set(&p(&gp, &[key("entry_point")]), None)?;
                    continue;
                }
                let fb = g.nodes().iter().enumerate().find_map(|(ni, n)| {
                    let oe = n.get("on_error")?;
                    (oe.get("fallback").and_then(ref_str) == Some(name.as_str())).then_some((ni, oe))
                });
                if let Some((ni, oe)) = fb {
                    remove_fallback(w, &g.node_path(ni), oe)?;
                    continue;
                }
                return Ok(None);
            }
            err("internal error: too many references to remove")
        }
        EditOp::RenameNode { from, to } => {
            let i = g.need_node(from)?;
            if from == to {
                return Ok(Some(to.clone()));
            }
            check_new_name(to)?;
            if g.node_index(to).is_some() {
                return err(format!("a node named `{to}` already exists; choose another name"));
            }
            let text = w.text.clone();
            let ed = super::text::Ed { text: &text, root: &root, nl: w.nl };
            let mut rn = super::text::Renamer::new(&ed, from, to);
            rn.push(g.nodes()[i].get("name"))?;
            rn.push(at(&root, &p(&gp, &[key("entry_point")])))?;
            for e in g.edges() {
                rn.push(e.get("source"))?;
                rn.push(e.get("target"))?;
                rn.push(e.get("default"))?;
                for b in e.get("branches").and_then(|b| b.as_seq()).unwrap_or(&[]) {
                    rn.push(b.get("target"))?;
                }
            }
            for n in g.nodes() {
                rn.push(n.get("on_error").and_then(|o| o.get("fallback")))?;
            }
            w.text = rn.finish();
            Ok(Some(to.clone()))
        }
        EditOp::SetField { node, path, value } => {
            let i = g.need_node(node)?;
            if path.is_empty() {
                return err("give the path of the field to set, e.g. [\"args\", \"prompt\"]");
            }
            w.set(&p(&g.node_path(i), path), value.as_ref().filter(|_| true))?;
            let new_name = match (path.as_slice(), value) {
                ([PathSeg::Key(k)], Some(Json::String(s))) if k == "name" => s.clone(),
                _ => node.clone(),
            };
            Ok(Some(new_name))
        }
        EditOp::SetDocField { path, value } => {
            if path.is_empty() {
                return err("give the path of the field to set, e.g. [\"default_llm\"]");
            }
            w.set(path, value.as_ref())?;
            Ok(None)
        }
        EditOp::AddEdge { from, to } => {
            g.need_source(from)?;
            g.need_target(to)?;
            for (ei, cond) in g.edges_from(from) {
                if cond {
                    return err(format!("`{from}` routes by branches; add a branch instead"));
                }
                let t = g.edges()[ei].get("target").and_then(ref_str).unwrap_or("?");
                return err(format!("`{from}` already has a static edge to `{t}`; add a branch instead"));
            }
            append(w, &p(&gp, &[key("edges")]), &json!({"source": from, "target": to}))?;
            Ok(None)
        }
        EditOp::RemoveEdge { from, to, kind, index } => {
            match kind.as_str() {
                "static" => {
                    let ei = g
                        .edges()
                        .iter()
                        .position(|e| {
                            e.get("source").and_then(ref_str) == Some(from.as_str())
                                && e.get("target").and_then(ref_str) == Some(to.as_str())
                                && e.get("branches").is_none()
                        })
                        .ok_or_else(|| EditError::new(format!("there is no static edge from `{from}` to `{to}`")))?;
                    w.set(&g.edge_path(ei), None)?;
                }
                "branch" => {
                    let ei = g.conditional(from)?;
                    let bs = g.edges()[ei].get("branches").and_then(|b| b.as_seq()).unwrap_or(&[]);
                    let bi = match index {
                        Some(i) => {
                            let b = bs.get(*i).ok_or_else(|| {
                                EditError::new(format!("`{from}` has {} branch(es); index {i} does not exist", bs.len()))
                            })?;
                            let t = b.get("target").and_then(ref_str).unwrap_or("");
                            if t != to {
                                return err(format!("branch {i} of `{from}` goes to `{t}`, not `{to}`; reload and try again"));
                            }
                            *i
                        }
                        None => bs
                            .iter()
                            .position(|b| b.get("target").and_then(ref_str) == Some(to.as_str()))
                            .ok_or_else(|| EditError::new(format!("`{from}` has no branch to `{to}`")))?,
                    };
                    remove_branch_at(w, &gp, ei, bi)?;
                }
                "default" => {
                    let ei = g.conditional(from)?;
                    let d = g.edges()[ei].get("default").and_then(ref_str);
                    if d != Some(to.as_str()) {
                        return err(format!("the default of `{from}` is not `{to}`"));
                    }
                    w.set(&p(&g.edge_path(ei), &[key("default")]), None)?;
                }
                "fallback" => {
                    let ni = g.need_node(from)?;
                    let oe = g.nodes()[ni].get("on_error");
                    match oe {
                        Some(oe) if oe.get("fallback").and_then(ref_str) == Some(to.as_str()) => {
                            remove_fallback(w, &g.node_path(ni), oe)?
                        }
                        _ => return err(format!("`{from}` has no error fallback to `{to}`")),
                    }
                }
                "entry" => {
                    if at(&root, &p(&gp, &[key("entry_point")])).and_then(ref_str) == Some(to.as_str()) {
                        w.set(&p(&gp, &[key("entry_point")]), None)?;
                    } else if let Some(ei) = g.edges().iter().position(|e| {
                        e.get("source").and_then(ref_str) == Some(START) && e.get("target").and_then(ref_str) == Some(to.as_str())
                    }) {
                        w.set(&g.edge_path(ei), None)?;
                    } else {
                        return err(format!("`{to}` is not the entry point"));
                    }
                }
                k => return err(format!("cannot remove a `{k}` edge in a sherma file; the kind is one of {EDGE_KINDS}")),
            }
            Ok(None)
        }
        EditOp::AddBranch { from, condition, to, index } => {
            g.need_source(from)?;
            g.need_target(to)?;
            if condition.trim().is_empty() {
                return err("the branch condition is empty; write a CEL condition such as `state.x > 1`");
            }
            let branch = json!({"condition": condition, "target": to});
            let es = g.edges_from(from);
            if let Some((ei, _)) = es.iter().find(|(_, c)| *c) {
                let bp = p(&g.edge_path(*ei), &[key("branches")]);
                let n = g.edges()[*ei].get("branches").and_then(|b| b.as_seq()).map(|b| b.len()).unwrap_or(0);
                if index.is_some_and(|i| i > n) {
                    return err(format!("`{from}` has {n} branch(es); the index must be 0..={n}"));
                }
                let before = index.filter(|i| *i < n);
                w.step(|ed| match at(ed.root, &bp) {
                    Some(l) if l.as_seq().is_some_and(|s| !s.is_empty()) || l.as_seq().is_some() && super::text::is_flow(ed.text, l) => {
                        ed.insert_item(l, before, &branch)
                    }
                    _ => ed.set(&bp, Some(&Json::Array(vec![branch.clone()]))),
                })?;
            } else if let Some((ei, _)) = es.first() {
                let ep = g.edge_path(*ei);
                let has_target = g.edges()[*ei].get("target").is_some();
                if has_target {
                    rename_key(w, &ep, "target", "default")?;
                }
                w.step(|ed| {
                    let e = at(ed.root, &ep).unwrap();
                    let before = super::text::entry_index(e, "default");
                    ed.insert_entry(e, before, "branches", &Json::Array(vec![branch.clone()]))
                })?;
            } else {
                append(w, &p(&gp, &[key("edges")]), &json!({"source": from, "branches": [branch]}))?;
            }
            Ok(None)
        }
        EditOp::SetBranch { from, index, condition, to } => {
            let ei = g.conditional(from)?;
            let n = g.edges()[ei].get("branches").and_then(|b| b.as_seq()).map(|b| b.len()).unwrap_or(0);
            if *index >= n {
                return err(format!("`{from}` has {n} branch(es); index {index} does not exist"));
            }
            let bp = p(&g.edge_path(ei), &[key("branches"), ix(*index)]);
            if let Some(t) = to {
                g.need_target(t)?;
                w.set(&p(&bp, &[key("target")]), Some(&json!(t)))?;
            }
            if let Some(c) = condition {
                if c.trim().is_empty() {
                    return err("the branch condition is empty; write a CEL condition");
                }
                w.set(&p(&bp, &[key("condition")]), Some(&json!(c)))?;
            }
            Ok(None)
        }
        EditOp::MoveBranch { from, index, to_index } => {
            let ei = g.conditional(from)?;
            let bp = p(&g.edge_path(ei), &[key("branches")]);
            w.step(|ed| {
                let l = at(ed.root, &bp).ok_or_else(|| EditError::new("internal: branches vanished"))?;
                ed.move_child(l, *index, *to_index)
            })?;
            Ok(None)
        }
        EditOp::RemoveBranch { from, index } => {
            let ei = g.conditional(from)?;
            remove_branch_at(w, &gp, ei, *index)?;
            Ok(None)
        }
        EditOp::SetDefault { from, to } => {
            let ei = g.conditional(from)?;
            let dp = p(&g.edge_path(ei), &[key("default")]);
            match to {
                Some(t) => {
                    g.need_target(t)?;
                    w.set(&dp, Some(&json!(t)))?;
                }
                None => w.set(&dp, None)?,
            }
            Ok(None)
        }
    }
}

