//! Edit ops on LLLM configs (docs/app-contract.md §1), on every LLLM config of the corpus: each
//! agent written in the file renamed, deleted, its temperature, model and retry knob set and
//! cleared, `global` and `base` changed. Every op is byte-exact (its inverse restores the file,
//! the lines it does not touch stay, comments included) and does what the effective config says:
//! the value set is the agent's own, and no other agent's effective config changes.

use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use switchyard::doc::{self, lllm::Section, Dialect};
use switchyard::edit::{self, Applied, EditOp};

fn configs() -> Vec<PathBuf> {
    let c = switchyard::testdata::conformance_dir().join("lllm");
    assert!(c.is_dir(), "the LLLM corpus is missing at {}", c.display());
    switchyard::testdata::yaml_files([c])
        .into_iter()
        .filter(|p| {
            let d = doc::load_str(p, &std::fs::read_to_string(p).unwrap());
            d.dialect() == Some(Dialect::Lllm)
                && d.diagnostics.iter().all(|x| x.code != "yaml-syntax")
        })
        .collect()
}

fn op(v: Json) -> EditOp {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("bad op {v}: {e}"))
}

/// Apply and check what every op keeps: edit and inverse exact, the edit minimal, the YAML still
/// an LLLM config, every line outside the changed region (comments included) still there.
fn apply(p: &Path, text: &str, o: Json) -> Applied {
    let a = edit::apply(text, p, None, &op(o.clone()))
        .unwrap_or_else(|e| panic!("{}: {o}: {}", p.display(), e.message));
    assert_eq!(a.edit.apply(text), a.text);
    assert_eq!(
        a.inverse.apply(&a.text),
        text,
        "{}: {o}: the inverse restores the bytes",
        p.display()
    );
    assert_eq!(a.edit, edit::diff(text, &a.text));
    let d = doc::load_str(p, &a.text);
    assert_eq!(d.dialect(), Some(Dialect::Lllm), "{}: {o}", p.display());
    assert!(
        d.diagnostics.iter().all(|x| x.code != "yaml-syntax"),
        "{}: {o}:\n{}",
        p.display(),
        a.text
    );
    let (s, e) = (a.edit.start, a.edit.end);
    let (head, tail) = (&text[..s], &text[e..]);
    let kept_head = &head[..head.rfind('\n').map_or(0, |i| i + 1)];
    let kept_tail = &tail[tail.find('\n').map_or(tail.len(), |i| i + 1)..];
    assert!(
        a.text.starts_with(kept_head) && a.text.ends_with(kept_tail),
        "{}: {o}",
        p.display()
    );
    a
}

/// Each agent's effective config as JSON (values only), by name.
fn effective(p: &Path, text: &str) -> Vec<(String, Json)> {
    let d = doc::load_str(p, text);
    let l = d.lllm().expect("an LLLM config");
    l.effective
        .agents
        .iter()
        .map(|a| {
            let c: serde_json::Map<String, Json> = a
                .config
                .iter()
                .filter(|(k, _)| *k != "name")
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect();
            let m: serde_json::Map<String, Json> = a
                .model_args
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect();
            (a.name.clone(), json!({"config": c, "model_args": m}))
        })
        .collect()
}

/// An agent's entry as written: an item of the `agent_configs` list, or the value under its
/// name in the older mapping shapes.
fn entry_of<'a>(
    root: &'a switchyard::yaml::YNode,
    name: &str,
) -> Option<&'a switchyard::yaml::YNode> {
    let list = root
        .get("agent_configs")
        .or_else(|| root.get("agent_group_configs"))?;
    match list.as_seq() {
        Some(items) => items
            .iter()
            .rev()
            .find(|it| it.get("name").and_then(|n| n.scalar_text()) == Some(name)),
        None => list.get(name),
    }
}

fn others_unchanged(before: &[(String, Json)], after: &[(String, Json)], agent: &str, what: &str) {
    for (n, v) in before.iter().filter(|(n, _)| n != agent) {
        let now = after.iter().find(|(m, _)| m == n).map(|(_, v)| v);
        assert_eq!(now, Some(v), "{what}: agent `{n}` changed");
    }
}

#[test]
fn every_corpus_config_every_agent_every_op() {
    let files = configs();
    assert!(files.len() >= 8, "the LLLM configs: {files:?}");
    let mut ops = 0;
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        let d = doc::load_str(p, &text);
        let l = d.lllm().unwrap();
        let own = d.file.as_ref().unwrap().path().display().to_string();
        let before = effective(p, &text);
        let here: Vec<String> = l
            .effective
            .agents
            .iter()
            .filter(|a| a.from.file == own)
            .map(|a| a.name.clone())
            .collect();
        for name in &here {
            let what = format!("{} `{name}`", p.display());
            // Temperature: set on the agent, its effective value is its own; cleared, it is inherited again.
            // Where LLLM reads it from: a `temperature` key outside `model_args` wins over one inside.
            let entry = entry_of(d.root.as_ref().unwrap(), name);
            let path = if entry.is_some_and(|e| e.get("temperature").is_some()) {
                json!(["temperature"])
            } else {
                json!(["model_args", "temperature"])
            };
            let a = apply(
                p,
                &text,
                json!({"op": "set_field", "node": name, "path": path, "value": 0.42}),
            );
            let d2 = doc::load_str(p, &a.text);
            let ag = d2.lllm().unwrap().agent(name).unwrap();
            let t = ag
                .model_args
                .get("temperature")
                .unwrap_or_else(|| panic!("{what}: no temperature"));
            assert_eq!(
                (t.to_json(), t.from().section, t.from().file.as_str()),
                (json!(0.42), Section::Agent, own.as_str()),
                "{what}"
            );
            others_unchanged(&before, &effective(p, &a.text), name, &what);
            let cleared = apply(
                p,
                &a.text,
                json!({"op": "set_field", "node": name, "path": path, "value": null}),
            );
            if !l
                .agent(name)
                .unwrap()
                .model_args
                .get("temperature")
                .is_some_and(|t| t.from().section == Section::Agent)
            {
                assert_eq!(cleared.text, text, "{what}: setting then clearing a temperature it did not have gives the file back");
            }
            // Model and a retry knob.
            for (k, v) in [
                ("model_name", json!("gpt-4o-mini")),
                ("max_llm_recall", json!(2)),
            ] {
                let a = apply(
                    p,
                    &text,
                    json!({"op": "set_field", "node": name, "path": [k], "value": v}),
                );
                let d2 = doc::load_str(p, &a.text);
                let got = d2
                    .lllm()
                    .unwrap()
                    .agent(name)
                    .unwrap()
                    .get(k)
                    .unwrap()
                    .to_json();
                assert_eq!(got, v, "{what}: {k}");
                others_unchanged(&before, &effective(p, &a.text), name, &what);
            }
            // Rename: the same config under the new name.
            let a = apply(
                p,
                &text,
                json!({"op": "rename_node", "from": name, "to": format!("{name}_2")}),
            );
            let after = effective(p, &a.text);
            let renamed = after
                .iter()
                .find(|(n, _)| *n == format!("{name}_2"))
                .map(|(_, v)| v);
            assert_eq!(
                renamed,
                before.iter().find(|(n, _)| n == name).map(|(_, v)| v),
                "{what}: renamed"
            );
            others_unchanged(&before, &after, name, &what);
            // Delete: gone, the others as they were.
            let a = apply(p, &text, json!({"op": "delete_node", "name": name}));
            let after = effective(p, &a.text);
            assert!(
                after.iter().all(|(n, _)| n != name),
                "{what}: still there after delete"
            );
            others_unchanged(&before, &after, name, &what);
            ops += 6;
        }
        // `global`: a default every agent without its own gets.
        let a = apply(
            p,
            &text,
            json!({"op": "set_field", "node": "global", "path": ["max_interrupt_steps"], "value": 9}),
        );
        let d2 = doc::load_str(p, &a.text);
        for ag in &d2.lllm().unwrap().effective.agents {
            let v = ag.get("max_interrupt_steps").unwrap();
            if v.from().section != Section::Agent {
                assert_eq!(
                    v.to_json(),
                    json!(9),
                    "{}: `{}` takes global's default",
                    p.display(),
                    ag.name
                );
            }
        }
        // A new agent, then `base` set and removed.
        let a = apply(
            p,
            &text,
            json!({"op": "set_doc_field", "path": ["base"], "value": "elsewhere"}),
        );
        assert_eq!(
            doc::load_str(p, &a.text)
                .lllm()
                .unwrap()
                .base
                .as_ref()
                .map(|b| b.value.as_str()),
            Some("elsewhere")
        );
        let back = apply(
            p,
            &a.text,
            json!({"op": "set_doc_field", "path": ["base"], "value": l.base.as_ref().map(|b| b.value.clone())}),
        );
        if l.base.is_some() {
            assert_eq!(back.text, text, "{}: base set back", p.display());
        }
        if l.effective.agents_from.is_none() || !here.is_empty() {
            let a = apply(
                p,
                &text,
                json!({"op": "add_node", "name": "added_agent", "kind": "agent"}),
            );
            let d2 = doc::load_str(p, &a.text);
            assert!(
                d2.lllm().unwrap().agent("added_agent").is_some(),
                "{}: the new agent",
                p.display()
            );
            others_unchanged(
                &before,
                &effective(p, &a.text),
                "added_agent",
                &p.display().to_string(),
            );
            ops += 1;
        }
        ops += 3;
    }
    assert!(ops >= 60, "only {ops} ops ran on {} configs", files.len());
}
