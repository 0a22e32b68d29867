use syntax::diag::{Diagnostic, Severity};
use std::path::Path;

fn check(text: &str) -> Vec<Diagnostic> {
    let doc = crate::doc::load_str(Path::new("/nonexistent/agent.yaml"), text);
    crate::validate::validate(&doc, None)
}

fn find<'d>(d: &'d [Diagnostic], code: &str) -> &'d Diagnostic {
    d.iter().find(|x| x.code == code).unwrap_or_else(|| panic!("no {code} in {d:#?}"))
}

/// One agent with fields `messages` and `n`; `nodes` and `edges` are indented for `graph:`.
fn agent(nodes: &str, edges: &str) -> String {
    format!(
        "manifest_version: 1\nagents:\n  a:\n    state:\n      fields: [{{name: messages, type: list}}, {{name: n, type: int}}]\n    graph:\n      entry_point: x\n      nodes:\n{nodes}      edges:\n{edges}"
    )
}

const XY: &str = "        - {name: x, type: set_state, args: {values: {n: '1'}}}\n        - {name: y, type: set_state, args: {values: {n: '2'}}}\n";

#[test]
fn loops_without_an_exit() {
    // Every run loops: an error at the first stuck node.
    let d = check(&agent(XY, "        - {source: x, target: y}\n        - {source: y, target: x}\n"));
    let x = find(&d, "sherma-no-exit");
    assert_eq!((x.line, x.column, x.severity), (9, 18, Severity::Error), "{x:?}");
    assert!(x.message.contains("`x`, `y`"), "{x:?}");
    // A branch out of the loop: fine.
    let out = "        - {source: x, target: y}\n        - source: y\n          branches: [{condition: state.n > 3, target: __end__}]\n          default: x\n";
    assert!(!check(&agent(XY, out)).iter().any(|d| d.code == "sherma-no-exit"));
    // Only some runs get stuck: a warning.
    let some = "        - source: x\n          branches: [{condition: state.n > 3, target: y}]\n        - {source: y, target: y}\n";
    let x = find(&check(&agent(XY, some)), "sherma-no-exit").clone();
    assert_eq!((x.line, x.severity), (10, Severity::Warning), "{x:?}");
    // A node without outgoing edges ends the run; an interrupt in the loop is a way out.
    assert!(!check(&agent(XY, "        - {source: x, target: y}\n")).iter().any(|d| d.code == "sherma-no-exit"));
    let chat = "        - {name: x, type: interrupt, args: {value: '\"?\"'}}\n        - {name: y, type: set_state, args: {values: {n: '2'}}}\n";
    let d = check(&agent(chat, "        - {source: x, target: y}\n        - {source: y, target: x}\n"));
    assert!(!d.iter().any(|d| d.code == "sherma-no-exit"), "{d:#?}");
}

#[test]
fn a_repeated_expression_is_reported_at_each_place() {
    // The same text is compiled once; every occurrence still gets its own diagnostics.
    let nodes = "        - {name: x, type: set_state, args: {values: {n: 'state.n +', m: 'state.nn + 1'}}}\n        - {name: y, type: set_state, args: {values: {n: 'state.n +', m: 'state.nn + 1'}}}\n";
    let d = check(&agent(nodes, "        - {source: x, target: y}\n        - {source: y, target: __end__}\n"));
    let at = |code: &str| -> Vec<(u32, Option<String>)> {
        d.iter().filter(|d| d.code == code).map(|d| (d.line, d.node.clone())).collect()
    };
    assert_eq!(at("cel-syntax"), vec![(9, Some("x".to_string())), (10, Some("y".to_string()))], "{d:#?}");
    let unknown: Vec<(u32, u32)> =
        d.iter().filter(|d| d.code == "sherma-undeclared-field" && d.message.contains("`nn`")).map(|d| (d.line, d.column)).collect();
    assert_eq!(unknown.len(), 2, "{d:#?}");
    assert_eq!((unknown[0].0, unknown[1].0), (9, 10), "{d:#?}");
    assert_eq!(unknown[0].1, unknown[1].1, "{d:#?}");
}

#[test]
fn unknown_cel_functions_warn_at_the_call() {
    let nodes = "        - {name: x, type: set_state, args: {values: {n: 'size(state.messages) + nosuch(1) + state.s.lowerAscii().strtsWith(\"a\")'}}}\n";
    let d = check(&agent(nodes, "        - {source: x, target: __end__}\n"));
    let found: Vec<(u32, u32, &str)> =
        d.iter().filter(|d| d.code == "cel-unknown-function").map(|d| (d.line, d.column, d.message.as_str())).collect();
    assert_eq!(
        found,
        vec![
            (9, 81, "CEL calls `nosuch`, which is not a known function"),
            (9, 114, "CEL calls `strtsWith`, which is not a known function"),
        ],
        "{d:#?}"
    );
    let hint = d.iter().find(|d| d.message.contains("strtsWith")).unwrap().hint.clone().unwrap();
    assert!(hint.contains("startsWith"), "{hint}");
    // Standard and sherma functions, global and member style, and macros are known.
    let ok = "        - {name: x, type: set_state, args: {values: {n: 'int(state.s.trim()) + size(split(state.s, \",\")) + [1].map(i, i).size()'}}}\n";
    let d = check(&agent(ok, "        - {source: x, target: __end__}\n"));
    assert!(!d.iter().any(|d| d.code == "cel-unknown-function"), "{d:#?}");
}

#[test]
fn data_keys_that_do_not_exist() {
    let nodes = "        - {name: x, type: set_state, args: {values: {n: 'size(data.greting) + size(data[\"greeting\"]) + size(metadata.x)'}}}\n";
    let text = agent(nodes, "        - {source: x, target: __end__}\n").replace("manifest_version: 1\n", "manifest_version: 1\ndata: {greeting: hi}\n");
    let d = check(&text);
    let found: Vec<(u32, u32)> = d.iter().filter(|d| d.code == "sherma-unknown-id").map(|d| (d.line, d.column)).collect();
    assert_eq!(found, vec![(10, 68)], "{d:#?}");
    assert!(d.iter().find(|d| d.code == "sherma-unknown-id").unwrap().hint.as_deref().unwrap().contains("greeting"));
    // Without `data:` every key is unknown.
    let d = check(&agent(nodes, "        - {source: x, target: __end__}\n"));
    assert_eq!(d.iter().filter(|d| d.code == "sherma-unknown-id").count(), 2, "{d:#?}");
}

/// Findings checked by where they are: (case, document, code, line, column when checked) of the
/// first diagnostic with that code.
#[test]
fn findings_are_positioned() {
    let empty_name = agent(
        "        - {name: '', type: set_state, args: {values: {n: '1'}}}\n        - {name: x, type: set_state, args: {values: {n: '1'}}}\n",
        "        - {source: x, target: __end__}\n",
    );
    let duplicate_field = agent(XY, "        - {source: x, target: y}\n")
        .replace("{name: n, type: int}]", "{name: n, type: int}, {name: n, type: str}]");
    let head = "manifest_version: 1\nskills:\n  - {id: s, version: '1.0.0'}\nsub_agents:\n  - id: b\n    version: '1.0.0'\n    url: http://localhost:1\n    yaml_path: other.yaml\n";
    let sources = format!("{head}{}", &agent(XY, "        - {source: x, target: y}\n")["manifest_version: 1\n".len()..]);
    let cases: [(&str, &str, &str, u32, Option<u32>); 4] = [
        ("empty node name", &empty_name, "sherma-empty-name", 9, Some(18)),
        ("duplicate state field", &duplicate_field, "sherma-duplicate-field", 5, Some(75)),
        ("skill source", &sources, "skill-source", 3, None),
        ("sub-agent source", &sources, "sub-agent-source", 8, Some(16)),
    ];
    for (case, text, code, line, column) in cases {
        let d = check(text);
        let x = find(&d, code);
        assert_eq!(x.line, line, "{case}: {x:?}");
        if let Some(column) = column {
            assert_eq!(x.column, column, "{case}: {x:?}");
        }
    }
}

#[test]
fn json_schemas_of_agents_and_response_formats() {
    let text = agent(
        "        - name: x\n          type: call_llm\n          args:\n            llm: {id: m}\n            prompt: [{role: human, content: '\"hi\"'}]\n            response_format: {name: r, schema: {type: object, properties: {a: {type: str}}}}\n            state_updates: {messages: '[llm_response]'}\n",
        "        - {source: x, target: __end__}\n",
    )
    .replace("    state:\n", "    input_schema: {type: objekt}\n    state:\n")
    .replace("manifest_version: 1\n", "manifest_version: 1\nllms: [{id: m, model_name: x}]\n");
    let d = check(&text);
    let lines: Vec<u32> = d.iter().filter(|d| d.code == "json-schema").map(|d| d.line).collect();
    assert_eq!(lines, vec![5, 16], "{d:#?}");
    assert!(d.iter().filter(|d| d.code == "json-schema").all(|d| d.severity == Severity::Error));
}

/// Sub-agent files are validated once per top-level validation: 40 `yaml_path` entries naming
/// the file itself and 40 naming a broken sibling (which names the first back) used to cost
/// 40⁴ validations; each file's errors are still reported at every entry that names it.
#[test]
fn sub_agent_files_are_validated_once_each() {
    let d = std::env::temp_dir().join(format!("switchyard-subagents-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let body = agent(XY, "        - {source: x, target: y}\n");
    let body = &body["manifest_version: 1\n".len()..];
    let entries = |target: &str, n: usize| -> String {
        (0..n).map(|i| format!("  - {{id: s{i}, version: '1', yaml_path: {target}}}\n")).collect()
    };
    let a = format!("manifest_version: 1\nsub_agents:\n{}{}{body}", entries("a.yaml", 40), entries("b.yaml", 40).replace("id: s", "id: t"));
    std::fs::write(d.join("a.yaml"), &a).unwrap();
    let b = format!("manifest_version: 1\nsub_agents:\n{}agents: {{}}\nbroken: [\n", entries("a.yaml", 40));
    std::fs::write(d.join("b.yaml"), &b).unwrap();
    let doc = crate::doc::load_path(&d.join("a.yaml"));
    let diags = crate::validate::validate(&doc, None);
    let about_b: Vec<_> = diags.iter().filter(|x| x.code == "sherma-sub-agent-file" && x.message.contains("b.yaml")).collect();
    assert_eq!(about_b.len(), 40, "{diags:#?}");
    assert!(diags.iter().all(|x| !x.message.contains("errors in a.yaml")), "a file naming itself is not its own sub-agent error");
    let cycles = diags.iter().filter(|x| x.code == "sherma-sub-agent-file" && x.message.contains("a.yaml, which is already being loaded")).count();
    assert_eq!(cycles, 40, "each self-reference is a warning: {diags:#?}");
    let _ = std::fs::remove_dir_all(&d);
}
