use super::*;
use crate::doc;
use crate::testdata::workspace_root;
use serde_json::json;
use std::path::Path;

fn pair(dialect: &str, name: &str) -> GraphDiff {
    let dir = workspace_root().join("tests/diff").join(dialect);
    let a = doc::load_path(&dir.join("base.yaml"));
    let b = doc::load_path(&dir.join(format!("{name}.yaml")));
    assert!(!a.io_error && !b.io_error);
    diff_documents(&a, &b, None).unwrap()
}

fn strs(d: &GraphDiff) -> (Vec<String>, Vec<String>) {
    let a = &d.agents[0];
    let nodes = a
        .nodes
        .iter()
        .map(|n| {
            format!(
                "{:?} {}{}",
                n.change,
                n.old_id
                    .as_ref()
                    .map(|o| format!("{o} -> "))
                    .unwrap_or_default(),
                n.id
            )
        })
        .collect();
    let edges = a
        .edges
        .iter()
        .map(|e| {
            let mut s = format!("{:?} {} -{}-> {}", e.change, e.from, e.kind, e.to);
            if let Some(l) = &e.label {
                s += &format!(" [{l}]");
            }
            if let Some(o) = &e.old_label {
                s += &format!(" was [{o}]");
            }
            if let Some(o) = &e.old_to {
                s += &format!(" was -> {o}");
            }
            s
        })
        .collect();
    (nodes, edges)
}

#[test]
fn comments_and_formatting_are_no_change() {
    for dialect in ["sherma", "loki"] {
        let d = pair(dialect, "comments");
        assert!(d.same, "{dialect}: {d:#?}");
        assert!(
            d.fields.is_empty() && d.agents[0].nodes.is_empty() && d.agents[0].edges.is_empty()
        );
    }
}

#[test]
fn the_same_file_is_the_same_graph() {
    for dialect in ["sherma", "loki"] {
        let p = workspace_root()
            .join("tests/diff")
            .join(dialect)
            .join("base.yaml");
        let a = doc::load_path(&p);
        assert!(diff_documents(&a, &a, None).unwrap().same);
    }
}

#[test]
fn sherma_rename_is_a_rename() {
    let d = pair("sherma", "rename");
    assert!(!d.same);
    let (nodes, edges) = strs(&d);
    assert_eq!(nodes, ["Renamed close -> resolve"]);
    // The edges into and out of the renamed node are the same edges.
    assert!(edges.is_empty(), "{edges:?}");
    let n = &d.agents[0].nodes[0];
    assert!(n.fields.is_empty());
    assert_eq!(n.similarity, Some(1.0));
}

#[test]
fn loki_rename_is_a_rename_and_references_follow_it() {
    let d = pair("loki", "rename");
    let (nodes, edges) = strs(&d);
    // `approve` names `parked` in its routes and on_other: read with the new name, no change.
    assert_eq!(nodes, ["Renamed held -> parked"]);
    assert!(edges.is_empty(), "{edges:?}");
    // Its `output: "held"` is text, not a reference: unchanged.
    assert!(d.agents[0].nodes[0].fields.is_empty(), "{d:#?}");
}

#[test]
fn sherma_add_and_remove() {
    let d = pair("sherma", "add_remove");
    let (nodes, edges) = strs(&d);
    assert_eq!(nodes, ["Added audit", "Removed escalate"]);
    assert_eq!(
        edges,
        [
            "Changed classify -static-> audit was -> measure",
            "Added audit -static-> measure",
            "Removed measure -branch-> escalate [state.score > 3]",
            "Removed escalate -static-> __end__",
        ]
    );
    // The branch left moved up: its order changed, but there is nothing to reorder against.
    assert!(d.agents[0].reorders.is_empty());
}

#[test]
fn loki_add_and_remove() {
    let d = pair("loki", "add_remove");
    let (nodes, edges) = strs(&d);
    assert_eq!(nodes, ["Changed approve", "Added note", "Removed held"]);
    let approve = &d.agents[0].nodes[0];
    let paths: Vec<&str> = approve.fields.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["routes.hold", "on_other"]);
    assert_eq!(approve.fields[1].old, Some(json!("held")));
    assert_eq!(approve.fields[1].new, Some(json!("note")));
    assert_eq!(
        edges,
        [
            "Changed approve -route-> note [hold] was -> held",
            "Changed approve -on_other-> note [other] was -> held",
            "Added note -next-> shipped",
        ]
    );
}

#[test]
fn sherma_changed_condition() {
    let d = pair("sherma", "condition");
    let (nodes, edges) = strs(&d);
    assert!(nodes.is_empty(), "{nodes:?}");
    assert_eq!(
        edges,
        ["Changed measure -branch-> escalate [state.score > 5] was [state.score > 3]"]
    );
    assert!(d.agents[0].reorders.is_empty());
}

#[test]
fn loki_changed_route_option() {
    let d = pair("loki", "condition");
    let (nodes, edges) = strs(&d);
    assert_eq!(nodes, ["Changed approve"]);
    assert_eq!(edges, ["Changed approve -route-> held [wait] was [hold]"]);
    let f = &d.agents[0].nodes[0].fields;
    let paths: Vec<&str> = f.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["options[1]", "routes.hold", "routes.wait"]);
    assert_eq!(
        (f[1].old.clone(), f[1].new.clone()),
        (Some(json!("held")), None)
    );
}

#[test]
fn sherma_reordered_branches_are_a_reorder() {
    let d = pair("sherma", "reorder");
    let (nodes, edges) = strs(&d);
    assert!(nodes.is_empty() && edges.is_empty(), "{nodes:?} {edges:?}");
    let r = &d.agents[0].reorders;
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].node, "measure");
    assert_eq!(r[0].kind, "branch");
    assert_eq!(
        r[0].old,
        ["state.score > 3 → escalate", "state.score > 1 → close"]
    );
    assert_eq!(
        r[0].new,
        ["state.score > 1 → close", "state.score > 3 → escalate"]
    );
    assert!(!d.same);
}

#[test]
fn loki_reordered_options_are_a_reorder() {
    let d = pair("loki", "reorder");
    let a = &d.agents[0];
    assert!(a.edges.is_empty());
    assert_eq!(a.reorders.len(), 1);
    assert_eq!(a.reorders[0].kind, "route");
    assert_eq!(a.reorders[0].new, ["hold → held", "ship → shipped"]);
    // The options list: one reordered change, not two changed items.
    assert_eq!(a.nodes.len(), 1);
    assert_eq!(a.nodes[0].fields.len(), 1);
    assert!(a.nodes[0].fields[0].reordered);
    assert_eq!(a.nodes[0].fields[0].path, "options");
}

#[test]
fn a_new_node_unlike_any_removed_one_is_not_a_rename() {
    let p = Path::new("/nowhere/a.yaml");
    let a = doc::load_str(
        p,
        "start: a\nnodes:\n  a:\n    type: llm\n    prompt: Write a poem about the sea.\n    next: b\n  b:\n    type: end\n",
    );
    let b = doc::load_str(
        p,
        "start: a\nnodes:\n  a:\n    type: llm\n    prompt: Write a poem about the sea.\n    next: c\n  c:\n    type: end\n    output: \"{{output}}\"\n    state_updates:\n      x: \"1\"\n",
    );
    let d = diff_documents(&a, &b, None).unwrap();
    let (nodes, _) = strs(&d);
    // `c` is an end node after `a` like `b` was, but its fields are all new.
    assert_eq!(nodes, ["Changed a", "Added c", "Removed b"], "{d:#?}");
}

#[test]
fn a_renamed_node_with_changed_fields_is_a_rename_with_fields() {
    let p = Path::new("/nowhere/a.yaml");
    let body = |name: &str, temp: &str| {
        format!(
            "start: a\nnodes:\n  a:\n    type: script\n    script: s.sh\n    next: {name}\n  {name}:\n    type: llm\n    prompt: Summarise the findings.\n    instructions: Be brief.\n    model: openai:gpt-4o\n    temperature: {temp}\n    next: z\n  z:\n    type: end\n"
        )
    };
    let a = doc::load_str(p, &body("sum", "0.2"));
    let b = doc::load_str(p, &body("summary", "0.7"));
    let d = diff_documents(&a, &b, None).unwrap();
    let n = &d.agents[0].nodes;
    assert_eq!(n.len(), 1, "{d:#?}");
    assert_eq!(n[0].change, Change::Renamed);
    assert_eq!(n[0].old_id.as_deref(), Some("sum"));
    assert_eq!(n[0].fields.len(), 1);
    assert_eq!(n[0].fields[0].path, "temperature");
    assert!(n[0].similarity.unwrap() >= RENAME_THRESHOLD && n[0].similarity.unwrap() < 1.0);
}

#[test]
fn a_renamed_call_llm_takes_its_derived_tool_node_along() {
    let p = Path::new("/nowhere/a.yaml");
    let file = |name: &str| {
        format!(
            "llms:\n  - id: m\n    version: \"1\"\n    provider: openai\n    model_name: gpt-4o-mini\ntools:\n  - id: t\n    version: \"1\"\n    import_path: tools.t\nagents:\n  a:\n    graph:\n      entry_point: {name}\n      nodes:\n        - name: {name}\n          type: call_llm\n          args:\n            llm: {{ id: m }}\n            prompt:\n              - role: system\n                content: '\"hi\"'\n            tools:\n              - id: t\n      edges:\n        - source: {name}\n          target: __end__\n"
        )
    };
    let a = doc::load_str(p, &file("answer"));
    let b = doc::load_str(p, &file("reply"));
    let (g, _) = crate::graph::lower(&a, None);
    assert!(
        g.unwrap().node("answer_tools").is_some(),
        "the fixture has a derived tool node"
    );
    let d = diff_documents(&a, &b, None).unwrap();
    let (nodes, edges) = strs(&d);
    assert_eq!(
        nodes,
        [
            "Renamed answer -> reply",
            "Renamed answer_tools -> reply_tools"
        ],
        "{d:#?}"
    );
    assert!(edges.is_empty(), "{edges:?}");
}

#[test]
fn document_fields_outside_the_graph() {
    let p = Path::new("/nowhere/a.yaml");
    let a = doc::load_str(
        p,
        "model: openai:gpt-4o\nstart: a\nnodes:\n  a:\n    type: end\n",
    );
    let b = doc::load_str(
        p,
        "model: openai:gpt-4o-mini\nstart: a\nnodes:\n  a:\n    type: end\n",
    );
    let d = diff_documents(&a, &b, None).unwrap();
    assert!(!d.same);
    assert_eq!(d.fields.len(), 1);
    assert_eq!(d.fields[0].path, "model");
    assert!(d.agents[0].nodes.is_empty());
}

#[test]
fn sherma_agents_added_removed_and_one_renamed() {
    let p = Path::new("/nowhere/a.yaml");
    let agent = |name: &str| {
        format!(
            "  {name}:\n    graph:\n      entry_point: s\n      nodes:\n        - name: s\n          type: set_state\n          args:\n            values:\n              x: \"1\"\n      edges:\n        - source: s\n          target: __end__\n"
        )
    };
    let a = doc::load_str(p, &format!("agents:\n{}{}", agent("one"), agent("two")));
    let b = doc::load_str(p, &format!("agents:\n{}{}", agent("one"), agent("deux")));
    let d = diff_documents(&a, &b, None).unwrap();
    assert_eq!(d.agents.len(), 2);
    assert_eq!(d.agents[0].change, None);
    assert_eq!(d.agents[1].agent, "deux");
    assert_eq!(d.agents[1].change, Some(Change::Renamed));
    assert_eq!(d.agents[1].old_agent.as_deref(), Some("two"));
    assert!(d.agents[1].nodes.is_empty());
    // Only one agent compared.
    let only = diff_documents(&a, &b, Some("one")).unwrap();
    assert!(only.agents.len() == 1 && only.agents[0].nodes.is_empty());
    let c = doc::load_str(p, &format!("agents:\n{}", agent("one")));
    let d = diff_documents(&a, &c, None).unwrap();
    assert_eq!(d.agents[1].change, Some(Change::Removed));
    assert!(
        d.agents[1]
            .nodes
            .iter()
            .all(|n| n.change == Change::Removed)
    );
}

#[test]
fn lllm_agents_compared_by_entry() {
    let p = Path::new("/nowhere/configs/x.yaml");
    let a = doc::load_str(
        p,
        "global:\n  model_name: gpt-4o\nagent_configs:\n  - name: a\n    system_prompt: hi\n  - name: b\n    system_prompt: yo\n",
    );
    let b = doc::load_str(
        p,
        "global:\n  model_name: gpt-4o-mini\nagent_configs:\n  - name: a\n    system_prompt: hello\n  - name: c\n    system_prompt: yo\n",
    );
    let d = diff_documents(&a, &b, None).unwrap();
    assert_eq!(d.dialect, "lllm");
    let (nodes, _) = strs(&d);
    assert_eq!(
        nodes,
        ["Changed global", "Changed a", "Renamed b -> c"],
        "{d:#?}"
    );
    assert_eq!(d.agents[0].nodes[0].fields[0].path, "model_name");
}

#[test]
fn different_dialects_are_an_error() {
    let s = doc::load_path(&workspace_root().join("tests/diff/sherma/base.yaml"));
    let l = doc::load_path(&workspace_root().join("tests/diff/loki/base.yaml"));
    assert!(diff_documents(&s, &l, None).unwrap_err().contains("sherma"));
    let u = doc::load_str(Path::new("/x.yaml"), "hello: 1\n");
    assert!(diff_documents(&u, &u, None).is_err());
}

#[test]
fn json_diff_paths_and_reorders() {
    let mut out = Vec::new();
    json_diff(
        "",
        &json!({"a": [1, 2, 3], "b": {"c d": 1}, "e": [1]}),
        &json!({"a": [3, 1, 2], "b": {"c d": 2}, "e": [1, 2]}),
        &mut out,
    );
    let got: Vec<(String, bool)> = out.iter().map(|f| (f.path.clone(), f.reordered)).collect();
    assert_eq!(
        got,
        [
            ("a".into(), true),
            ("b[\"c d\"]".into(), false),
            ("e".into(), false)
        ]
    );
}

#[test]
fn contract_checked_in_diff_ts_is_what_the_rust_types_generate() {
    let path = syntax::contract::ui_contract_path(env!("CARGO_MANIFEST_DIR"), "diff.ts");
    if let Err(e) =
        syntax::contract::check_or_update(&path, &diff_ts(), syntax::contract::LIB_COMMAND)
    {
        panic!("{e}");
    }
}
