//! Edit ops on Loki graph documents (`start`, `nodes: {id: {type, next, routes, ...}}`).

use super::sherma::unknown_node;
use super::text::{at, entry_index, err, is_flow, key, ref_str, Res};
use super::{check_new_name, EditError, EditOp, PathSeg, Work};
use model::doc::loki::NODE_TYPES;
use model::doc::Document;
use syntax::yaml::YNode;
use serde_json::{Value as Json, json};

const EDGE_KINDS: &str = "next, route, on_other, fallback, map_branch, dynamic or start";

fn np(name: &str, rest: &[&str]) -> Vec<PathSeg> {
    let mut v = vec![key("nodes"), key(name)];
    v.extend(rest.iter().map(|k| key(k)));
    v
}

fn names(root: &YNode) -> Vec<String> {
    root.get("nodes").and_then(|n| n.as_map()).map(|m| m.iter().map(|e| e.key.key_text().to_string()).collect()).unwrap_or_default()
}

fn node<'a>(root: &'a YNode, name: &str) -> Option<&'a YNode> {
    let nodes = root.get("nodes")?;
    nodes.as_map()?;
    let i = entry_index(nodes, name)?;
    Some(&nodes.as_map()?[i].value)
}

fn need<'a>(root: &'a YNode, name: &str) -> Res<&'a YNode> {
    node(root, name).ok_or_else(|| unknown_node(name, &names(root)))
}

fn kind_of(n: &YNode) -> &str {
    n.get("type").and_then(ref_str).unwrap_or("")
}

fn placeholder(kind: &str, name: &str, root: &YNode) -> Json {
    match kind {
        "agent" => json!({"type": kind, "agent": "helper", "prompt": "{{initial_prompt}}"}),
        "script" => json!({"type": kind, "script": format!("scripts/{name}.sh")}),
        "approval" => json!({"type": kind, "question": "Continue?", "options": ["approve", "reject"], "routes": {}}),
        "input" => json!({"type": kind, "question": "What should I do next?"}),
        "llm" => json!({"type": kind, "prompt": "{{initial_prompt}}"}),
        "rag" => json!({"type": kind, "documents": ["docs"]}),
        "map" => {
            let branch = root.get("nodes").and_then(|n| n.as_map()).and_then(|m| {
                m.iter()
                    .find(|e| matches!(kind_of(&e.value), "llm" | "agent" | "rag" | "script"))
                    .map(|e| e.key.key_text().to_string())
            });
            let mut v = json!({"type": kind, "over": "{{items}}", "as": "item"});
            if let Some(b) = branch {
                v["branch"] = json!(b);
            }
            v["collect_into"] = json!("results");
            v
        }
        _ => json!({"type": kind}),
    }
}

/// `next` / `x-next` as a list of names (None when absent or not a name/list).
fn next_list(n: &YNode, k: &str) -> Option<(bool, Vec<String>)> {
    let v = n.get(k)?;
    if let Some(s) = v.as_seq() {
        return Some((true, s.iter().map(|x| ref_str(x).unwrap_or("").to_string()).collect()));
    }
    ref_str(v).map(|s| (false, vec![s.to_string()]))
}

/// Remove `to` from `next`-like field `k` of node `from` (the key goes when nothing is left).
fn remove_from_next(w: &mut Work, from: &str, k: &str, to: &str) -> Res<bool> {
    let root = w.root()?;
    let Some(n) = node(&root, from) else { return Ok(false) };
    let Some((is_list, items)) = next_list(n, k) else { return Ok(false) };
    let Some(i) = items.iter().position(|x| x == to) else { return Ok(false) };
    if !is_list || items.len() == 1 {
        w.set(&np(from, &[k]), None)?;
    } else {
        let mut path = np(from, &[k]);
        path.push(PathSeg::Index(i));
        w.set(&path, None)?;
    }
    Ok(true)
}

fn routes(n: &YNode) -> Vec<(String, String)> {
    n.get("routes")
        .and_then(|r| r.as_map())
        .map(|m| m.iter().map(|e| (e.key.key_text().to_string(), ref_str(&e.value).unwrap_or("").to_string())).collect())
        .unwrap_or_default()
}

fn route_at(root: &YNode, from: &str, index: usize) -> Res<(String, String)> {
    let n = need(root, from)?;
    if kind_of(n) != "approval" {
        return err(format!("`{from}` is a {} node; only approval nodes have routes", kind_of(n)));
    }
    let rs = routes(n);
    rs.get(index).cloned().ok_or_else(|| EditError::new(format!("`{from}` has {} route(s); index {index} does not exist", rs.len())))
}

const REF_FIELDS: &[&str] = &["on_other", "fallback", "branch"];

pub(crate) fn apply(w: &mut Work, _doc: &Document, op: &EditOp) -> Res<Option<String>> {
    let root = w.root()?;
    // A key under `nodes:` that is no plain name (`{{x}}` read as a flow mapping, `? [a, b]`)
    // is no node, and edits around it cannot be placed safely: say where it is.
    if let Some(bad) = root.get("nodes").and_then(|n| n.as_map()).and_then(|m| m.iter().find(|e| e.key.as_scalar().is_none())) {
        let (line, column) = super::line_col(&w.text, bad.key.span.start as usize);
        return err(format!(
            "`nodes:` has a key at {line}:{column} that is not a node name (a list or mapping as a key; \
             a `{{{{template}}}}` there needs quotes); fix it in the source view, then edit again"
        ));
    }
    match op {
        EditOp::AddNode { name, kind, after } => {
            check_new_name(name)?;
            if node(&root, name).is_some() {
                return err(format!("a node named `{name}` already exists; choose another name"));
            }
            if !NODE_TYPES.contains(&kind.as_str()) {
                return err(format!("unknown Loki node type `{kind}`; use one of {}", NODE_TYPES.join(", ")));
            }
            let v = placeholder(kind, name, &root);
            let before = match after {
                Some(a) => {
                    need(&root, a)?;
                    let all = names(&root);
                    let i = all.iter().rposition(|n| n == a).unwrap_or(0);
                    (i + 1 < all.len()).then_some(i + 1)
                }
                None => None,
            };
            w.step(|ed| match ed.root.get("nodes") {
                Some(m) if m.as_map().is_some_and(|m| !m.is_empty()) || m.as_map().is_some() && is_flow(ed.text, m) => {
                    ed.insert_entry(m, before, name, &v)
                }
                _ => ed.set(&[key("nodes"), key(name)], Some(&v)),
            })?;
            Ok(Some(name.clone()))
        }
        EditOp::DeleteNode { name } => {
            need(&root, name)?;
            for _ in 0..100_000 {
                let root = w.root()?;
                if node(&root, name).is_some() {
                    w.set(&[key("nodes"), key(name)], None)?;
                    continue;
                }
                let mut changed = false;
                for other in names(&root) {
                    // A key that is not a plain name (a complex `? [..]` key, a repeated one) is
                    // no node: nothing to unhook from it.
                    let Some(n) = node(&root, &other) else { continue };
                    let in_next = |k: &str| next_list(n, k).is_some_and(|(_, l)| l.iter().any(|x| x == name));
                    if (in_next("next") && remove_from_next(w, &other, "next", name)?)
                        || (in_next("x-next") && remove_from_next(w, &other, "x-next", name)?)
                    {
                        changed = true;
                        break;
                    }
                    if let Some((opt, _)) = routes(n).into_iter().find(|(_, t)| t == name) {
                        w.set(&[key("nodes"), key(&other), key("routes"), key(&opt)], None)?;
                        changed = true;
                        break;
                    }
                    if let Some(f) = REF_FIELDS.iter().find(|f| n.get(f).and_then(ref_str) == Some(name.as_str())) {
                        w.set(&np(&other, &[f]), None)?;
                        changed = true;
                        break;
                    }
                }
                if !changed {
                    return Ok(None);
                }
            }
            err("internal error: too many references to remove")
        }
        EditOp::RenameNode { from, to } => {
            need(&root, from)?;
            if from == to {
                return Ok(Some(to.clone()));
            }
            check_new_name(to)?;
            if node(&root, to).is_some() {
                return err(format!("a node named `{to}` already exists; choose another name"));
            }
            let text = w.text.clone();
            let ed = super::text::Ed { text: &text, root: &root, nl: w.nl };
            let mut rn = super::text::Renamer::new(&ed, from, to);
            let nodes = root.get("nodes").and_then(|n| n.as_map()).unwrap_or(&[]);
            for e in nodes {
                rn.push(Some(&e.key))?;
            }
            rn.push(root.get("start"))?;
            for e in nodes {
                let n = &e.value;
                if e.key.key_text() == from {
                    rn.push(n.get("id"))?;
                }
                for k in ["next", "x-next"] {
                    match n.get(k) {
                        Some(v) if v.as_seq().is_some() => {
                            for it in v.as_seq().unwrap() {
                                rn.push(Some(it))?;
                            }
                        }
                        v => rn.push(v)?,
                    }
                }
                for r in n.get("routes").and_then(|r| r.as_map()).unwrap_or(&[]) {
                    rn.push(Some(&r.value))?;
                }
                for f in REF_FIELDS {
                    rn.push(n.get(f))?;
                }
            }
            w.text = rn.finish();
            Ok(Some(to.clone()))
        }
        EditOp::SetField { node: name, path, value } => {
            need(&root, name)?;
            if path.is_empty() {
                return err("give the path of the field to set, e.g. [\"model\"]");
            }
            let mut full = vec![key("nodes"), key(name)];
            full.extend(path.iter().cloned());
            w.set(&full, value.as_ref())?;
            Ok(Some(name.clone()))
        }
        EditOp::SetDocField { path, value } => {
            if path.is_empty() {
                return err("give the path of the field to set, e.g. [\"start\"]");
            }
            w.set(path, value.as_ref())?;
            Ok(None)
        }
        EditOp::AddEdge { from, to } => {
            let n = need(&root, from)?;
            need(&root, to)?;
            match next_list(n, "next") {
                None if n.get("next").is_some_and(|v| !v.is_null()) => {
                    return err(format!("`next` of `{from}` is not a node name or list; fix it in the inspector"));
                }
                None => w.set(&np(from, &["next"]), Some(&json!(to)))?,
                Some((_, items)) if items.iter().any(|x| x == to) => {
                    return err(format!("`{from}` already goes to `{to}`"));
                }
                Some((false, items)) => {
                    let list = json!([items[0], to]);
                    w.step(|ed| {
                        let v = at(ed.root, &np(from, &["next"])).unwrap();
                        Ok(super::text::Rep {
                            start: v.span.start as usize,
                            end: super::text::eff_end(ed.text, v),
                            text: super::text::render_flow(&list),
                        })
                    })?;
                }
                Some((true, _)) => {
                    w.step(|ed| {
                        let v = at(ed.root, &np(from, &["next"])).unwrap();
                        if v.as_seq().is_some_and(|s| s.is_empty()) && !is_flow(ed.text, v) {
                            ed.set(&np(from, &["next"]), Some(&json!([to])))
                        } else {
                            ed.insert_item(v, None, &json!(to))
                        }
                    })?;
                }
            }
            Ok(None)
        }
        EditOp::RemoveEdge { from, to, kind, index } => {
            let n = need(&root, from).or_else(|e| if matches!(kind.as_str(), "start" | "entry") { Ok(&root) } else { Err(e) })?;
            match kind.as_str() {
                "next" => {
                    if !remove_from_next(w, from, "next", to)? {
                        return err(format!("`{from}` has no `next` to `{to}`"));
                    }
                }
                "dynamic" => {
                    if !remove_from_next(w, from, "x-next", to)? {
                        return err(format!("`{from}` has no `x-next` entry `{to}` (dynamic `_next` targets inferred from the script cannot be removed here; edit the script)"));
                    }
                }
                "route" => {
                    let rs = routes(n);
                    let opt = match index {
                        Some(i) => {
                            let (o, t) = route_at(&root, from, *i)?;
                            if &t != to {
                                return err(format!("route {i} of `{from}` goes to `{t}`, not `{to}`; reload and try again"));
                            }
                            o
                        }
                        None => rs
                            .into_iter()
                            .find(|(_, t)| t == to)
                            .map(|(o, _)| o)
                            .ok_or_else(|| EditError::new(format!("`{from}` has no route to `{to}`")))?,
                    };
                    w.set(&[key("nodes"), key(from), key("routes"), key(&opt)], None)?;
                }
                "on_other" | "fallback" | "map_branch" => {
                    let f = if kind == "map_branch" { "branch" } else { kind.as_str() };
                    if n.get(f).and_then(ref_str) != Some(to.as_str()) {
                        return err(format!("`{from}` has no `{f}` to `{to}`"));
                    }
                    w.set(&np(from, &[f]), None)?;
                }
                "start" | "entry" => {
                    if root.get("start").and_then(ref_str) != Some(to.as_str()) {
                        return err(format!("`start` is not `{to}`"));
                    }
                    w.set(&[key("start")], None)?;
                }
                k => return err(format!("cannot remove a `{k}` edge in a Loki file; the kind is one of {EDGE_KINDS}")),
            }
            Ok(None)
        }
        EditOp::AddBranch { from, condition, to, index } => {
            let n = need(&root, from)?;
            need(&root, to)?;
            if kind_of(n) != "approval" {
                return err(format!("`{from}` is a {} node; routes exist only on approval nodes (use add_edge for `next`)", kind_of(n)));
            }
            if condition.is_empty() {
                return err("the route option is empty; type the answer this route is for");
            }
            let rs = routes(n);
            if rs.iter().any(|(o, _)| o == condition) {
                return err(format!("`{from}` already has a route for `{condition}`; edit that route instead"));
            }
            if index.is_some_and(|i| i > rs.len()) {
                return err(format!("`{from}` has {} route(s); the index must be 0..={}", rs.len(), rs.len()));
            }
            let before = index.filter(|i| *i < rs.len());
            let rp = np(from, &["routes"]);
            w.step(|ed| match at(ed.root, &rp) {
                Some(m) if m.as_map().is_some_and(|m| !m.is_empty()) || m.as_map().is_some() && is_flow(ed.text, m) => {
                    ed.insert_entry(m, before, condition, &json!(to))
                }
                _ => ed.set(&rp, Some(&json!({ condition.as_str(): to }))),
            })?;
            let root = w.root()?;
            let opts = node(&root, from).and_then(|n| n.get("options"));
            if let Some(o) = opts.and_then(|o| o.as_seq()) {
                if !o.iter().any(|x| ref_str(x) == Some(condition.as_str())) {
                    w.step(|ed| {
                        let o = at(ed.root, &np(from, &["options"])).unwrap();
                        if o.as_seq().is_some_and(|s| s.is_empty()) && !is_flow(ed.text, o) {
                            ed.set(&np(from, &["options"]), Some(&json!([condition])))
                        } else {
                            ed.insert_item(o, None, &json!(condition))
                        }
                    })?;
                }
            }
            Ok(None)
        }
        EditOp::SetBranch { from, index, condition, to } => {
            let (opt, _) = route_at(&root, from, *index)?;
            if let Some(t) = to {
                need(&root, t)?;
                w.set(&[key("nodes"), key(from), key("routes"), key(&opt)], Some(&json!(t)))?;
            }
            if let Some(c) = condition.as_ref().filter(|c| **c != opt) {
                if c.is_empty() {
                    return err("the route option is empty; type the answer this route is for");
                }
                let n = need(&root, from)?;
                if routes(n).iter().any(|(o, _)| o == c) {
                    return err(format!("`{from}` already has a route for `{c}`"));
                }
                w.step(|ed| {
                    let r = at(ed.root, &np(from, &["routes"])).unwrap();
                    let e = &r.as_map().unwrap()[entry_index(r, &opt).unwrap()];
                    ed.replace_scalar(&e.key, c).ok_or_else(|| EditError::new("cannot rename this route option"))
                })?;
                // keep `options` in step
                let root = w.root()?;
                if let Some(i) = node(&root, from)
                    .and_then(|n| n.get("options"))
                    .and_then(|o| o.as_seq())
                    .and_then(|o| o.iter().position(|x| ref_str(x) == Some(opt.as_str())))
                {
                    w.step(|ed| {
                        let o = at(ed.root, &np(from, &["options"])).unwrap();
                        ed.replace_scalar(&o.as_seq().unwrap()[i], c).ok_or_else(|| EditError::new("cannot rename this option"))
                    })?;
                }
            }
            Ok(None)
        }
        EditOp::MoveBranch { from, index, to_index } => {
            route_at(&root, from, *index)?;
            w.step(|ed| {
                let r = at(ed.root, &np(from, &["routes"])).unwrap();
                ed.move_child(r, *index, *to_index)
            })?;
            Ok(None)
        }
        EditOp::RemoveBranch { from, index } => {
            let (opt, _) = route_at(&root, from, *index)?;
            w.set(&[key("nodes"), key(from), key("routes"), key(&opt)], None)?;
            Ok(None)
        }
        EditOp::SetDefault { .. } => {
            err("Loki nodes have no `default`; for an approval node set `on_other`, otherwise use `next`")
        }
    }
}
