use super::*;
use crate::doc::{Model, load_str};
use std::path::Path;
use syntax::diag::Diagnostic;

fn load(text: &str) -> (LokiDoc, Vec<Diagnostic>) {
    let doc = load_str(Path::new("/tmp/agents/t/graph.yaml"), text);
    let diags = doc.diagnostics.clone();
    match doc.model {
        Model::Loki(l) => (l, diags),
        other => panic!("not loki: {other:?}"),
    }
}

const MINIMAL: &str =
    "name: t\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n    output: hi\n";

#[test]
fn minimal_graph_has_no_diagnostics() {
    let (l, d) = load(MINIMAL);
    assert!(d.is_empty(), "{d:#?}");
    assert_eq!(l.name.as_deref(), Some("t"));
    assert_eq!(l.nodes.len(), 1);
    assert_eq!(l.settings.max_loop_iterations, 100);
    assert_eq!(l.settings.max_concurrency, 8);
    assert!(l.settings.validate_before_run && l.settings.log_state_snapshots);
    assert_eq!(l.agent_dir, Path::new("/tmp/agents/t"));
    assert_eq!(l.agents_dir(), Path::new("/tmp/agents"));
}

#[test]
fn version_rules() {
    let (_, d) = load(&MINIMAL.replace("\"1.0\"", "1.0"));
    assert!(d.is_empty(), "unquoted 1.0 is accepted: {d:#?}");
    let (_, d) = load(&MINIMAL.replace("\"1.0\"", "\"1.00\""));
    let v = d
        .iter()
        .find(|d| d.code == "loki-version")
        .expect("version error");
    assert_eq!(
        v.message,
        "Unsupported graph schema version '1.00'. Supported versions: 1.0"
    );
    assert_eq!((v.line, v.column), (2, 10));
    let (_, d) = load(&MINIMAL.replace("version: \"1.0\"\n", ""));
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn node_id_mismatch_and_name_and_start() {
    let (_, d) = load("name: \"\"\nstart: b\nnodes:\n  a:\n    id: x\n    type: end\n");
    let id = d
        .iter()
        .find(|d| d.code == "loki-node-id")
        .expect("id mismatch");
    assert_eq!(
        id.message,
        "Node ID mismatch: key 'a' does not match node.id 'x'"
    );
    assert_eq!((id.line, id.column), (5, 9));
    assert!(d.iter().any(|d| d.code == "loki-name" && d.line == 1));
    let st = d.iter().find(|d| d.code == "loki-start").expect("start");
    assert_eq!(
        st.message,
        "Start node 'b' not found in graph ''. Available nodes: a"
    );
    // A matching or empty id is fine.
    let (_, d) = load(
        "name: t\nstart: a\nnodes:\n  a:\n    id: a\n    type: end\n  b:\n    id: ''\n    type: end\n",
    );
    assert!(!d.iter().any(|d| d.code == "loki-node-id"), "{d:#?}");
}

#[test]
fn start_did_you_mean_and_empty_nodes() {
    let (_, d) = load(
        "name: t\nstart: finsh\nnodes:\n  finish:\n    type: end\n  other:\n    type: end\n",
    );
    let st = d.iter().find(|d| d.code == "loki-start").unwrap();
    assert!(
        st.message.ends_with("Available nodes: finish, other"),
        "{st:?}"
    );
    assert!(st.hint.as_deref().unwrap().contains("`finish`"), "{st:?}");
    let (_, d) = load("name: g\nstart: a\nnodes: {}\n");
    let n = d.iter().find(|d| d.code == "loki-no-nodes").unwrap();
    assert_eq!(n.message, "Graph 'g' has no nodes defined");
    assert!(!d.iter().any(|d| d.code == "loki-start"));
}

#[test]
fn unknown_type_suggests_all_types_including_map() {
    let (l, d) = load("name: t\nstart: a\nnodes:\n  a:\n    type: mapp\n  b:\n    type: End\n");
    let t = d
        .iter()
        .filter(|d| d.code == "loki-node-type")
        .collect::<Vec<_>>();
    assert_eq!(t.len(), 2, "{d:#?}");
    assert!(
        t[0].hint.as_deref().unwrap().contains("did you mean `map`"),
        "{t:?}"
    );
    assert!(
        t[1].hint.as_deref().unwrap().contains("did you mean `end`"),
        "{t:?}"
    );
    assert_eq!((t[0].line, t[0].column), (5, 11));
    assert!(matches!(l.nodes[0].body, NodeBody::Unknown));
}

#[test]
fn strings_where_upstream_wants_strings() {
    let src = "name: t\nstart: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options: [yes, 2]\n    routes: {yes: e, '2': e}\n    on_other: e\n    state_updates:\n      n: 5\n      ok: \"{{choice}}\"\n  e:\n    type: end\n";
    let (l, d) = load(src);
    let mut w: Vec<_> = d.iter().filter(|d| d.code == "wrong-type").collect();
    w.sort_by_key(|d| (d.line, d.column));
    assert_eq!(w.len(), 2, "{d:#?}");
    assert!(w.iter().all(|d| d.message.contains("must be a string")
        && d.hint.as_deref().unwrap().starts_with("quote it")));
    assert_eq!((w[0].line, w[0].column), (7, 20));
    assert_eq!(w[1].line, 11);
    let NodeBody::Approval(a) = &l.nodes[0].body else {
        panic!()
    };
    assert_eq!(a.options.len(), 2);
    assert_eq!(a.route("yes").unwrap().value, "e");
}

#[test]
fn schema_findings_unknown_keys_and_reducers() {
    let src = "name: t\nstart: a\nreducers:\n  xs: apend\nnodes:\n  a:\n    type: script\n    script: s.sh\n    fallbak: e\n    x-next: [e]\n  e:\n    type: end\n";
    let (l, d) = load(src);
    let uk = d
        .iter()
        .find(|d| d.code == "unknown-key")
        .expect("unknown key");
    assert!(uk.hint.as_deref().unwrap().contains("`fallback`"), "{uk:?}");
    let be = d
        .iter()
        .find(|d| d.code == "bad-enum")
        .expect("bad reducer");
    assert!(be.hint.as_deref().unwrap().contains("`append`"), "{be:?}");
    let s = l.nodes[0].script().unwrap();
    assert_eq!(s.x_next.as_ref().unwrap()[0].value, "e");
    assert_eq!(
        s.script_path.as_deref(),
        Some(Path::new("/tmp/agents/t/s.sh"))
    );
    assert_eq!(d.len(), 2, "{d:#?}");
}

#[test]
fn input_validation_is_checked_at_load() {
    let src = "name: t\nstart: a\nnodes:\n  a:\n    type: input\n    question: q\n    validation: \"len(input) != 3\"\n    next: e\n  e:\n    type: end\n";
    let (l, d) = load(src);
    let v = d
        .iter()
        .find(|d| d.code == "loki-input-validation")
        .expect("validation error");
    assert_eq!((v.line, v.column), (7, 17));
    assert_eq!(v.node.as_deref(), Some("a"));
    let (l2, d2) = load(&src.replace("!= 3", ">= 3"));
    assert!(d2.is_empty(), "{d2:#?}");
    let NodeBody::Input(i) = &l2.nodes[0].body else {
        panic!()
    };
    assert!(i.parsed_validation.is_some());
    let NodeBody::Input(i) = &l.nodes[0].body else {
        panic!()
    };
    assert!(i.parsed_validation.is_none());
}

#[test]
fn model_keeps_everything_a_run_needs() {
    let src = r#"name: t
model: openai:gpt-4o
global_tools: [web.sh]
mcp_servers: [ddg]
variables:
  - name: project_dir
    default: "."
settings:
  max_loop_iterations: 5
  timeout: 60
  max_concurrency: 2
initial_state:
  b: 1
  a: [x]
reducers:
  a: extend
start: l
nodes:
  l:
    type: llm
    prompt: "go {{b}}"
    tools: [web, "mcp:ddg"]
    max_attempts: 3
    output_schema: {type: object, properties: {z: {type: string}, y: {type: string}}}
    state_updates: {r: "{{output}}"}
    fallback: e
    next: [m, e]
  m:
    type: map
    over: "{{a}}"
    as: item
    branch: l
    collect_into: out
  e:
    type: end
    output: done
"#;
    let (l, _) = load(src);
    assert_eq!(l.settings.max_loop_iterations, 5);
    assert_eq!(l.settings.timeout, Some(60));
    assert_eq!(l.settings.max_concurrency, 2);
    assert_eq!(
        serde_json::to_string(&l.initial_state).unwrap(),
        r#"{"b":1,"a":["x"]}"#
    );
    assert_eq!(l.reducer("a"), Some(Reducer::Extend));
    assert_eq!(l.variables[0].default.as_deref(), Some("."));
    let n = l.node("l").unwrap();
    assert!(n.is_fanout() && n.next_is_list);
    let NodeBody::Llm(llm) = &n.body else {
        panic!()
    };
    assert_eq!(llm.max_attempts(), 3);
    assert_eq!(llm.max_iterations(), 10);
    assert_eq!(n.write_set(), vec!["r", "y", "z"]);
    assert_eq!(n.read_set(), vec!["b"]);
    let kinds: Vec<_> = n
        .targets()
        .iter()
        .map(|t| (t.kind.label(), t.to.value.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("'next'", "m".into()),
            ("'next'", "e".into()),
            ("llm 'fallback'", "e".into())
        ]
    );
    let m = l.node("m").unwrap().map().unwrap();
    assert_eq!(m.output_key(), "output");
    assert_eq!(m.concurrency(&l.settings), 2);
}

#[test]
fn schemas_cover_every_type() {
    for t in NODE_TYPES {
        let s = node_schema(t).unwrap();
        for f in ["id", "description", "type", "next"] {
            assert!(s.field(f).is_some(), "{t} lacks {f}");
        }
    }
    assert!(node_schema("nope").is_none());
    assert_eq!(schema_objects().len(), 11);
    assert!(SCRIPT_NODE.field("x-next").is_some());
}
