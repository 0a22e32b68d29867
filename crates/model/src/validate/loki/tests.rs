use super::*;
use syntax::diag::Severity;
use crate::doc::{Model, load_path, load_str};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    crate::testdata::workspace_root().join("tests/fixtures/loki/agents")
}

fn check_doc(doc: &Document) -> Vec<Diagnostic> {
    let Model::Loki(l) = &doc.model else {
        panic!("not a Loki document: {:?}", doc.diagnostics)
    };
    let g = crate::graph::lower_loki::lower(doc, l);
    let mut diags = Vec::new();
    validate(doc, l, &g, &mut diags);
    diags
}

/// Validate `text` as `<fixtures>/<agent>/graph.yaml`; load diagnostics must be clean.
fn check_in(agent: &str, text: &str) -> Vec<Diagnostic> {
    let doc = load_str(&fixtures().join(agent).join("graph.yaml"), text);
    assert!(
        !doc.diagnostics.iter().any(|d| d.is_error()),
        "load errors: {:#?}",
        doc.diagnostics
    );
    check_doc(&doc)
}

fn check(text: &str) -> Vec<Diagnostic> {
    check_in("scratch", text)
}

fn codes(d: &[Diagnostic]) -> Vec<&str> {
    d.iter().map(|d| d.code.as_str()).collect()
}

fn find<'d>(d: &'d [Diagnostic], code: &str) -> &'d Diagnostic {
    d.iter()
        .find(|x| x.code == code)
        .unwrap_or_else(|| panic!("no {code} in {d:#?}"))
}

fn count(d: &[Diagnostic], code: &str) -> usize {
    d.iter().filter(|x| x.code == code).count()
}

const HEAD: &str = "name: t\nversion: \"1.0\"\n";

#[test]
fn scripts_outside_the_agent_directory_are_errors() {
    for (script, outside) in [
        ("../x.sh", true),
        ("/etc/hostname", true),
        ("a/../../x.py", true),
        ("a/../x.sh", false),
        ("./x.sh", false),
    ] {
        let d = check(&format!(
            "{HEAD}start: s\nnodes:\n  s:\n    type: script\n    script: {script}\n    next: e\n  e:\n    type: end\n"
        ));
        assert_eq!(count(&d, "loki-script-outside"), usize::from(outside), "{script}: {d:#?}");
        if outside {
            let x = find(&d, "loki-script-outside");
            assert_eq!((x.line, x.column, x.severity), (7, 13, Severity::Error), "{x:?}");
            assert!(x.message.contains("outside the agent directory"), "{x:?}");
            assert_eq!(count(&d, "loki-script-missing"), 0, "{d:#?}");
        }
    }
}

#[cfg(unix)]
#[test]
fn a_script_linked_out_of_the_agent_directory_is_an_error() {
    let root = std::env::temp_dir().join(format!("sy-script-link-{}", std::process::id()));
    let agent = root.join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(root.join("outside.sh"), "echo '{}'\n").unwrap();
    std::fs::write(agent.join("inside.sh"), "echo '{}'\n").unwrap();
    let _ = std::os::unix::fs::symlink(root.join("outside.sh"), agent.join("link.sh"));
    let text = |s: &str| format!("{HEAD}start: s\nnodes:\n  s:\n    type: script\n    script: {s}\n    next: e\n  e:\n    type: end\n");
    let d = check_doc(&load_str(&agent.join("graph.yaml"), &text("link.sh")));
    assert_eq!(count(&d, "loki-script-outside"), 1, "{d:#?}");
    let d = check_doc(&load_str(&agent.join("graph.yaml"), &text("inside.sh")));
    assert_eq!(count(&d, "loki-script-outside"), 0, "{d:#?}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn map_over_must_be_one_reference() {
    for (over, bad) in [("{{xs}}", false), (" {{xs}} ", false), ("{{xs}} and more", true), ("xs", true), ("{{xs}}{{ys}}", true)] {
        let d = check(&format!(
            "{HEAD}initial_state: {{xs: [1], ys: [2]}}\nstart: m\nnodes:\n  m:\n    type: map\n    over: \"{over}\"\n    as: x\n    branch: b\n    collect_into: out\n    next: e\n  b:\n    type: script\n    script: b.sh\n  e:\n    type: end\n"
        ));
        assert_eq!(count(&d, "loki-map-over"), usize::from(bad), "{over}: {d:#?}");
        if bad {
            assert_eq!(find(&d, "loki-map-over").line, 8);
        }
    }
}

/// What a finding's message must be.
enum Msg {
    Any,
    Is(&'static str),
    Has(&'static str),
}

/// A finding checked by its place: the first diagnostic with `code` in what `yaml` validates to.
struct Finding {
    case: &'static str,
    yaml: String,
    code: &'static str,
    /// How many diagnostics have `code`.
    count: usize,
    line: u32,
    /// Checked when given.
    column: Option<u32>,
    severity: Severity,
    message: Msg,
    /// Codes no diagnostic may have.
    absent: &'static [&'static str],
}

#[test]
fn findings_are_positioned() {
    let cases = [
        Finding {
            case: "a node listed twice in one fan-out",
            yaml: format!(
                "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: [b, c, b]\n  b:\n    type: end\n  c:\n    type: end\n"
            ),
            code: "loki-fanout-duplicate",
            count: 1,
            line: 8,
            column: Some(18),
            severity: Severity::Warning,
            message: Msg::Any,
            absent: &[],
        },
        Finding {
            case: "no end node (4b is skipped when 4a fires)",
            yaml: format!(
                "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: a2\n  a2:\n    type: script\n    script: x.sh\n"
            ),
            code: "loki-no-end",
            count: 1,
            line: 4, // at `nodes:`
            column: None,
            severity: Severity::Error,
            message: Msg::Is("Graph has no end nodes; execution would never terminate"),
            absent: &["loki-end-unreachable"],
        },
        Finding {
            case: "a map collecting the `output` of an llm branch (which needs no `next`)",
            yaml: format!(
                "{HEAD}start: m\nnodes:\n  m:\n    type: map\n    over: \"{{{{xs}}}}\"\n    as: x\n    branch: b\n    collect_into: out\n    next: e\n  b:\n    type: llm\n    prompt: p\n  e:\n    type: end\n"
            ),
            code: "loki-map-output",
            count: 1,
            line: 9,
            column: Some(13),
            severity: Severity::Warning,
            message: Msg::Any,
            absent: &["loki-no-next"],
        },
        Finding {
            case: "template lint inside the string",
            yaml: format!("{HEAD}start: e\nnodes:\n  e:\n    type: end\n    output: \"Result: {{{{ report }}}}\"\n"),
            code: "loki-template",
            count: 1,
            line: 7,
            column: Some(22),
            severity: Severity::Warning,
            message: Msg::Has("(in `output`)"),
            absent: &[],
        },
        Finding {
            case: "a seeded initial_prompt",
            yaml: format!("{HEAD}initial_state:\n  initial_prompt: hi\nstart: e\nnodes:\n  e:\n    type: end\n"),
            code: "loki-initial-prompt",
            count: 1,
            line: 4,
            column: Some(3),
            severity: Severity::Warning,
            message: Msg::Any,
            absent: &[],
        },
    ];
    for f in &cases {
        let case = f.case;
        let d = check(&f.yaml);
        assert_eq!(count(&d, f.code), f.count, "{case}: {d:#?}");
        let x = find(&d, f.code);
        assert_eq!((x.line, x.severity), (f.line, f.severity), "{case}: {x:?}");
        if let Some(column) = f.column {
            assert_eq!(x.column, column, "{case}: {x:?}");
        }
        match f.message {
            Msg::Any => {}
            Msg::Is(m) => assert_eq!(x.message, m, "{case}"),
            Msg::Has(m) => assert!(x.message.contains(m), "{case}: {x:?}"),
        }
        for code in f.absent {
            assert_eq!(count(&d, code), 0, "{case}: {d:#?}");
        }
    }
}

/// Load diagnostics checked by their place: (case, graph, code, line, column, severity when
/// checked) of the first one with that code.
#[test]
fn load_findings_are_positioned() {
    let cases: [(&str, String, &str, u32, u32, Option<Severity>); 2] = [
        (
            "a broken output schema is a warning",
            format!(
                "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    output_schema: {{type: objekt}}\n    next: e\n  e:\n    type: end\n"
            ),
            "json-schema",
            8,
            27,
            Some(Severity::Warning),
        ),
        (
            "merge keys in untyped nodes",
            format!("{HEAD}d: &d {{type: end}}\nstart: a\nnodes:\n  a:\n    <<: *d\n"),
            "merge-key",
            7,
            5,
            None,
        ),
    ];
    for (case, yaml, code, line, column, severity) in cases {
        let doc = load_str(&fixtures().join("scratch/graph.yaml"), &yaml);
        let x = doc
            .diagnostics
            .iter()
            .find(|d| d.code == code)
            .unwrap_or_else(|| panic!("{case}: no {code} in {:#?}", doc.diagnostics));
        assert_eq!((x.line, x.column), (line, column), "{case}: {:#?}", doc.diagnostics);
        if let Some(severity) = severity {
            assert_eq!(x.severity, severity, "{case}: {x:?}");
        }
    }
}

#[test]
fn demo_fixture_is_clean() {
    let doc = load_path(&fixtures().join("demo"));
    assert!(doc.diagnostics.is_empty(), "{:#?}", doc.diagnostics);
    let d = check_doc(&doc);
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn references_are_positioned_with_labels() {
    let src = format!(
        "{HEAD}start: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options: [go]\n    routes:\n      go: b\n    on_other: nowhere\n  b:\n    type: llm\n    prompt: p\n    fallback: ed\n    next: [e, zz]\n  e:\n    type: end\n"
    );
    let d = check(&src);
    let refs: Vec<_> = d.iter().filter(|x| x.code == "loki-ref").collect();
    assert_eq!(refs.len(), 3, "{d:#?}");
    assert_eq!(
        refs[0].message,
        "References non-existent node 'nowhere' in approval 'on_other'"
    );
    assert_eq!((refs[0].line, refs[0].column), (11, 15));
    assert_eq!(refs[0].node.as_deref(), Some("a"));
    assert_eq!(
        refs[1].message,
        "References non-existent node 'zz' in 'next'"
    );
    assert_eq!((refs[1].line, refs[1].column), (16, 15));
    assert_eq!(
        refs[2].message,
        "References non-existent node 'ed' in llm 'fallback'"
    );
    assert!(
        refs[2].hint.as_deref().unwrap().contains("`e`"),
        "{:?}",
        refs[2]
    );
    assert!(refs.iter().all(|r| r.is_error()));
    // x-next targets are checked too.
    let d = check(&format!(
        "{HEAD}start: s\nnodes:\n  s:\n    type: script\n    script: x.sh\n    x-next: [e, ghost]\n  e:\n    type: end\n"
    ));
    assert_eq!(
        find(&d, "loki-ref").message,
        "References non-existent node 'ghost' in 'x-next'"
    );
}

#[test]
fn cycles_report_the_whole_loop() {
    let src = format!(
        "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: b\n  b:\n    type: llm\n    prompt: p\n    next: c\n  c:\n    type: llm\n    prompt: p\n    fallback: a\n    next: e\n  e:\n    type: end\n"
    );
    let d = check(&src);
    let c = find(&d, "loki-cycle");
    assert_eq!(c.message, "Cycle detected: a -> b -> c -> a");
    assert_eq!(
        (c.line, c.column),
        (16, 15),
        "at the reference that closes the loop"
    );
    assert_eq!(c.node.as_deref(), Some("c"));
    assert!(c.hint.as_deref().unwrap().contains("_next"));
    // A self-loop through on_other (upstream rejects it too).
    let src = format!(
        "{HEAD}start: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options: [ok]\n    routes: {{ok: e}}\n    on_other: a\n  e:\n    type: end\n"
    );
    assert_eq!(
        find(&check(&src), "loki-cycle").message,
        "Cycle detected: a -> a"
    );
    // Loops through script `_next` are fine.
    let src = format!(
        "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: g\n  g:\n    type: script\n    script: g.sh\n    x-next: [a, e]\n  e:\n    type: end\n"
    );
    assert_eq!(count(&check(&src), "loki-cycle"), 0);
}

#[test]
fn long_cycles_are_shortened_in_the_message() {
    let mut src = format!("{HEAD}start: n0\nnodes:\n");
    for i in 0..100 {
        src += &format!(
            "  n{i}:\n    type: llm\n    prompt: p\n    next: n{}\n",
            (i + 1) % 100
        );
    }
    src += "  e:\n    type: end\n";
    let c = find(&check(&src), "loki-cycle").message.clone();
    assert!(c.starts_with("Cycle detected: n0 -> n1 -> "), "{c}");
    assert!(
        c.contains("... (51 more)") && c.ends_with("n98 -> n99 -> n0"),
        "{c}"
    );
}

#[test]
fn unreachable_nodes_and_dynamic_reachability() {
    let no_scripts =
        format!("{HEAD}start: a\nnodes:\n  a:\n    type: end\n  lost:\n    type: end\n");
    let d = check(&no_scripts);
    let u = find(&d, "loki-unreachable");
    assert_eq!(u.severity, Severity::Warning);
    assert_eq!(u.message, "Node is unreachable from the start node");
    assert!(!u.hint.as_deref().unwrap().contains("_next"));
    assert_eq!((u.line, u.column, u.node.as_deref()), (7, 3, Some("lost")));
    let with_script = format!(
        "{HEAD}start: s\nnodes:\n  s:\n    type: script\n    script: s.sh\n  e:\n    type: end\n"
    );
    let d = check(&with_script);
    assert!(
        find(&d, "loki-unreachable")
            .hint
            .as_deref()
            .unwrap()
            .contains("x-next")
    );
    assert_eq!(find(&d, "loki-end-unreachable").severity, Severity::Warning);
    let declared = with_script.replace("script: s.sh\n", "script: s.sh\n    x-next: [e]\n");
    let d = check(&declared);
    assert_eq!(
        count(&d, "loki-unreachable") + count(&d, "loki-end-unreachable"),
        0,
        "{d:#?}"
    );
}

#[test]
fn scripts_must_exist_with_a_known_extension() {
    let src = format!(
        "{HEAD}start: a\nnodes:\n  a:\n    type: script\n    script: scripts/route.sh\n    next: b\n  b:\n    type: script\n    script: scripts/nope.sh\n    next: c\n  c:\n    type: script\n    script: scripts/run.rb\n    next: e\n  e:\n    type: end\n"
    );
    let d = check_in("demo", &src);
    let m: Vec<_> = d
        .iter()
        .filter(|x| x.code == "loki-script-missing")
        .collect();
    assert_eq!(m.len(), 2, "{d:#?}");
    assert!(
        m[0].message.starts_with("Script file not found: '")
            && m[0].message.ends_with("demo/scripts/nope.sh'"),
        "{:?}",
        m[0]
    );
    assert_eq!(
        (m[0].line, m[0].column, m[0].node.as_deref()),
        (11, 13, Some("b"))
    );
    let ext = find(&d, "loki-script-ext");
    assert_eq!(
        ext.message,
        "Unsupported script extension '.rb' for 'scripts/run.rb'"
    );
}

#[test]
fn agent_nodes_name_sibling_agents() {
    let node = |a: &str| {
        format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: agent\n    agent: {a}\n    prompt: p\n    next: e\n  e:\n    type: end\n"
        )
    };
    // (agent, the message when it is missing, where when checked)
    let cases: [(&str, Option<&str>, Option<(u32, u32)>); 4] = [
        ("helper", None, None),
        ("demo", None, None),
        ("ghost", Some("Agent 'ghost' not found (directory missing)"), Some((7, 12))),
        ("hollow", Some("Agent 'hollow' has neither a config.yaml nor a graph.yaml"), None),
    ];
    for (agent, message, at) in cases {
        let d = check(&node(agent));
        let Some(message) = message else {
            assert_eq!(count(&d, "loki-agent-missing"), 0, "{agent}: {d:#?}");
            continue;
        };
        let m = find(&d, "loki-agent-missing");
        assert_eq!(m.message, message);
        if let Some(at) = at {
            assert_eq!((m.line, m.column), at, "{agent}");
        }
    }
}

#[test]
fn approval_routes_and_options() {
    let src = format!(
        "{HEAD}start: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options:\n      - approve\n      - revise\n    routes:\n      approve: e\n      Approve: e\n    on_other: e\n  e:\n    type: end\n"
    );
    let d = check(&src);
    let r: Vec<_> = d
        .iter()
        .filter(|x| x.code == "loki-approval-route")
        .collect();
    assert_eq!(r.len(), 2, "{d:#?}");
    assert!(r[0].is_error());
    assert_eq!(
        r[0].message,
        "Approval option 'revise' has no route defined"
    );
    assert_eq!((r[0].line, r[0].column), (10, 9));
    assert_eq!(r[1].severity, Severity::Warning);
    assert_eq!(r[1].message, "Route 'Approve' has no corresponding option");
    assert!(r[1].hint.as_deref().unwrap().contains("`approve`"));
}

#[test]
fn rag_checks() {
    let src = format!(
        "{HEAD}start: r\nnodes:\n  r:\n    type: rag\n    documents: []\n    driver: duckdv\n    next: e\n  e:\n    type: end\n"
    );
    let d = check(&src);
    let r: Vec<_> = d.iter().filter(|x| x.code == "loki-rag").collect();
    assert_eq!(r.len(), 3, "{d:#?}");
    assert_eq!(
        r[0].message,
        "RAG node has no 'documents'; at least one knowledge source is required"
    );
    assert_eq!((r[0].line, r[0].column), (7, 16));
    assert_eq!(r[1].severity, Severity::Warning);
    assert_eq!(
        r[2].message,
        "Unknown RAG driver 'duckdv'. Valid drivers: yaml, duckdb, qdrant."
    );
    assert!(r[2].hint.as_deref().unwrap().contains("`duckdb`"));
    let ok = src.replace("documents: []", "documents: [./k]").replace(
        "    driver: duckdv\n",
        "    state_updates: {c: \"{{output.context}}\"}\n",
    );
    assert_eq!(count(&check(&ok), "loki-rag"), 0);
    assert_eq!(count(&check(&ok), "loki-rag-ignored"), 0);
    let extras = ok.replace(
        "    next: e\n  e:",
        "    graph_hops: 1\n    reranker_model: m\n    driver: qdrant\n    chunk_size: 10\n    chunk_overlap: 10\n    next: e\n  e:",
    );
    let d = check(&extras);
    let ignored: Vec<_> = d.iter().filter(|x| x.code == "loki-rag-ignored").collect();
    assert_eq!(ignored.len(), 3, "{d:#?}");
    assert!(ignored.iter().all(|x| x.severity == Severity::Warning));
    assert!(ignored.iter().any(|x| x.message.contains("`graph_hops`")));
    assert!(ignored.iter().any(|x| x.message.contains("RAG driver 'qdrant' is not supported")));
    assert!(d.iter().any(|x| x.code == "loki-rag" && x.message.contains("`chunk_overlap` (10)")));
    assert!(!d.iter().any(|x| x.is_error()), "{d:#?}");
}

#[test]
fn llm_tools_mcp_and_models() {
    let src = "name: t\nglobal_tools: [web_search.sh]\nmcp_servers: [ddg]\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    model: gpt4\n    tools: [web_search, classify, lookup, web_search.sh, clasify, \"mcp:ddg\", \"mcp:dgg\"]\n    next: e\n  e:\n    type: end\n";
    let d = check_in("demo", src);
    let tools: Vec<_> = d.iter().filter(|x| x.code == "loki-tool").collect();
    assert_eq!(tools.len(), 2, "{d:#?}");
    assert!(tools.iter().all(|t| t.is_error()));
    assert_eq!(
        tools[0].message,
        "llm node references unknown tool 'web_search.sh'"
    );
    assert!(
        tools[0]
            .hint
            .as_deref()
            .unwrap()
            .contains("without the file extension")
    );
    assert_eq!(
        tools[1].message,
        "llm node references unknown tool 'clasify'"
    );
    assert!(tools[1].hint.as_deref().unwrap().contains("`classify`"));
    let mcp = find(&d, "loki-mcp");
    assert_eq!(
        mcp.message,
        "llm node references unknown MCP server 'mcp:dgg'"
    );
    assert_eq!(mcp.line, 10);
    let m = find(&d, "loki-model");
    assert_eq!(m.severity, Severity::Warning);
    assert_eq!((m.line, m.column), (9, 12));
    // Nothing to check against: warnings, not errors.
    let bare = "name: t\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    tools: [anything]\n    next: e\n  e:\n    type: end\n";
    let d = check(bare);
    assert_eq!(find(&d, "loki-tool").severity, Severity::Warning);
}

#[test]
fn builtin_agent_functions_follow_the_families_the_graph_offers() {
    let graph = |head: &str, tools: &str, agent_node: bool| {
        let (next, extra) = if agent_node { ("ask", "  ask:\n    type: agent\n    agent: _helper\n    prompt: p\n    next: e\n") } else { ("e", "") };
        format!("name: t\n{head}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    tools: [{tools}]\n    next: {next}\n{extra}  e:\n    type: end\n")
    };
    let tool_findings = |src: &str| -> Vec<Diagnostic> { check(src).into_iter().filter(|d| d.code == "loki-tool").collect() };
    // The teammate pair always; the job family by default (5); no tool file is needed.
    assert!(tool_findings(&graph("", "agent__send_message, agent__check_inbox, job__start, job__list", false)).is_empty());
    // Unset `can_spawn_agents` is whether the graph has an agent node.
    assert!(tool_findings(&graph("", "agent__spawn, agent__cancel", true)).is_empty());
    let d = tool_findings(&graph("", "agent__spawn", false));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(d[0].is_error());
    assert!(d[0].message.contains("`can_spawn_agents` is unset and the graph has no agent node"), "{}", d[0].message);
    assert_eq!((d[0].line, d[0].column), (7, 13));
    assert!(tool_findings(&graph("can_spawn_agents: true\n", "agent__spawn", false)).is_empty());
    let d = tool_findings(&graph("max_concurrent_jobs: 0\n", "job__collect", false));
    assert_eq!(d[0].message, "llm node references 'job__collect', a built-in function this graph does not offer: `max_concurrent_jobs` is 0");
    assert!(d[0].hint.as_deref().unwrap().contains("default 5"));
    // A name of no family (coyote's task queue is not run here) is an ordinary tool name.
    assert_eq!(find(&check(&graph("", "agent__task_create", false)), "loki-tool").severity, Severity::Warning);
}

#[test]
fn skills_checks() {
    let src = format!(
        "{HEAD}enabled_skills: [code-review, 'bad name']\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    enabled_skills: [code-review, git-master, '']\n    next: e\n  e:\n    type: end\n"
    );
    let d = check(&src);
    let s: Vec<_> = d.iter().filter(|x| x.code == "loki-skill").collect();
    assert_eq!(s.len(), 3, "{d:#?}");
    assert_eq!(
        s[0].message,
        "graph 'enabled_skills' entry 'bad name' is not a valid skill name"
    );
    assert_eq!(
        s[1].message,
        "llm node 'enabled_skills' references 'git-master' which is not in graph-level 'enabled_skills' (code-review, bad name)"
    );
    assert_eq!(
        s[2].message,
        "llm node 'enabled_skills' contains a blank skill name"
    );
}

#[test]
fn concurrency_must_be_positive() {
    let src = format!(
        "{HEAD}settings:\n  max_concurrency: 0\nstart: m\nnodes:\n  m:\n    type: map\n    over: \"{{{{xs}}}}\"\n    as: x\n    branch: w\n    collect_into: out\n    max_concurrency: 0\n    next: e\n  w:\n    type: script\n    script: w.sh\n  e:\n    type: end\n"
    );
    let d = check(&src);
    let c: Vec<_> = d.iter().filter(|x| x.code == "loki-concurrency").collect();
    assert_eq!(c.len(), 2, "{d:#?}");
    assert_eq!((c[0].line, c[0].column), (4, 20));
    assert!(
        c[0].message
            .starts_with("settings.max_concurrency must be >= 1 (got 0)")
    );
    assert!(
        c[1].message
            .starts_with("map node's `max_concurrency` must be >= 1 (got 0)")
    );
}

#[test]
fn map_branch_chains() {
    let map = |branch: &str| {
        format!(
            "{HEAD}start: m\nnodes:\n  m:\n    type: map\n    over: \"{{{{xs}}}}\"\n    as: x\n    branch: b\n    collect_into: out\n    output_key: r\n    next: e\n  b:\n{branch}  e:\n    type: end\n"
        )
    };
    let d = check(&map("    type: input\n    question: q\n"));
    let m = find(&d, "loki-map-branch");
    assert_eq!(m.node.as_deref(), Some("m"));
    assert!(m.message.contains("is an input node"), "{m:?}");
    // coyote 0.10.3: a branch is a chain; `next`, scratch writes and output schemas are allowed.
    let d = check(&map(
        "    type: llm\n    prompt: p\n    state_updates: {draft: \"{{output}}\"}\n    output_schema: {type: object, properties: {z: {}, a: {}}}\n    next: c\n  c:\n    type: llm\n    prompt: \"{{draft}}\"\n    state_updates: {r: \"{{output}}\"}\n",
    ));
    assert_eq!(count(&d, "loki-map-branch"), 0, "{d:#?}");
    assert_eq!(count(&d, "loki-no-next"), 0, "the chain's last node has no next: {d:#?}");
    // A chain that reaches the end node: named, with the node type.
    let d = check(&map("    type: llm\n    prompt: p\n    state_updates: {r: \"{{output}}\"}\n    next: e\n"));
    let m = find(&d, "loki-map-branch");
    assert!(m.message.contains("reaches 'e', which is an end node"), "{m:?}");
    assert_eq!(m.line, 17, "at the `next` entry that reaches it");
    let ok = check(&map(
        "    type: script\n    script: w.sh\n    state_updates: {r: x}\n",
    ));
    assert_eq!(count(&ok, "loki-map-branch"), 0, "{ok:#?}");
}

const FAN: &str =
    "name: t\nstart: f\nnodes:\n  f:\n    type: llm\n    prompt: p\n    next: [a, b]\n";

#[test]
fn parallel_ui_and_script_writes() {
    let d = check(&format!(
        "{FAN}  a:\n    type: approval\n    question: q\n    options: [x]\n    routes: {{x: e}}\n    on_other: e\n  b:\n    type: script\n    script: b.sh\n    next: e\n  e:\n    type: end\n"
    ));
    let ui = find(&d, "loki-parallel-ui");
    assert!(
        ui.message
            .starts_with("approval node is an immediate target of a fan-out")
    );
    assert_eq!((ui.line, ui.column, ui.node.as_deref()), (7, 12, Some("a")));
    let w = find(&d, "loki-parallel-write");
    assert!(
        w.message
            .starts_with("script node is in a parallel branch but declares no `state_updates`")
    );
    assert_eq!(w.node.as_deref(), Some("b"));
}

#[test]
fn parallel_write_collisions_need_reducers() {
    let body = "  a:\n    type: llm\n    prompt: p\n    output_schema: {type: object, properties: {k: {}}}\n    next: e\n  b:\n    type: script\n    script: b.sh\n    state_updates: {k: v}\n    next: e\n  e:\n    type: end\n";
    let d = check(&format!("{FAN}{body}"));
    let w = find(&d, "loki-parallel-write");
    assert!(w.message.starts_with("nodes [a, b] all write key 'k' in the same parallel super-step but no reducer is declared for 'k'. Add `reducers: { k: <reducer> }`"), "{w:?}");
    assert_eq!((w.line, w.column, w.node.as_deref()), (7, 11, Some("f")));
    let with_reducer =
        format!("{FAN}{body}").replace("start: f\n", "reducers: {k: append}\nstart: f\n");
    assert_eq!(count(&check(&with_reducer), "loki-parallel-write"), 0);
}

#[test]
fn parallel_reads_of_sibling_writes() {
    let d = check(&format!(
        "{FAN}  a:\n    type: llm\n    prompt: \"{{{{k}}}} {{{{j}}}}\"\n    next: e\n  b:\n    type: script\n    script: b.sh\n    state_updates: {{k: v, j: w}}\n    next: e\n  e:\n    type: end\n"
    ));
    let r = find(&d, "loki-parallel-read");
    assert!(r.message.starts_with("node 'a' reads state key(s) `j`, `k` which sibling parallel branch 'b' writes in the same super-step"), "{r:?}");
    assert_eq!(r.node.as_deref(), Some("a"));
    assert_eq!(r.line, 8);
}

#[test]
fn no_null_leak_in_coyote_0_10() {
    // coyote 0.10 removes `output` after `state_updates`: parallel llm and rag nodes no longer
    // collide on it (librarian dropped its `reducers: {output: overwrite}`).
    let body = "  a:\n    type: llm\n    prompt: p\n    state_updates: {x: \"{{output}}\"}\n    next: e\n  b:\n    type: rag\n    documents: [d]\n    state_updates: {y: \"{{output.context}}\"}\n    next: e\n  e:\n    type: end\n";
    let d = check(&format!("{FAN}{body}"));
    assert_eq!(count(&d, "loki-parallel-write"), 0, "{d:#?}");
    assert!(d.iter().all(|x| !x.message.contains("output: null")), "{d:#?}");
}

#[test]
fn next_rules() {
    let src = format!(
        "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: i\n  i:\n    type: input\n    question: q\n    next: [r, e]\n  r:\n    type: rag\n    documents: [d]\n    state_updates: {{}}\n    next: []\n  e:\n    type: end\n    next: a\n  lone:\n    type: agent\n    agent: helper\n    prompt: p\n"
    );
    let d = check(&src);
    assert_eq!(find(&d, "loki-next-empty").line, 17);
    let nn = find(&d, "loki-no-next");
    assert_eq!(nn.node.as_deref(), Some("lone"));
    assert!(nn.is_error());
    let ign: Vec<_> = d.iter().filter(|x| x.code == "loki-next-ignored").collect();
    assert_eq!(ign.len(), 2, "{d:#?}");
    assert!(ign.iter().all(|x| x.severity == Severity::Warning));
}

#[test]
fn zero_limits_warn() {
    let src = format!(
        "{HEAD}settings:\n  max_loop_iterations: 0\n  timeout: 0\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    max_attempts: 0\n    max_iterations: 0\n    timeout: 0\n    next: e\n  e:\n    type: end\n"
    );
    let d = check(&src);
    // coyote 0.10.3: `0` disables a cap (a warning); `max_attempts: 0` is an error of its own.
    let z: Vec<_> = d.iter().filter(|x| x.code == "loki-zero").collect();
    assert_eq!(z.len(), 4, "{d:#?}");
    assert!(find(&d, "loki-max-attempts").is_error());
    assert!(z.iter().all(|x| x.severity == Severity::Warning));
    assert_eq!((z[0].line, z[0].column), (4, 24));
}

#[test]
fn unknown_state_keys_only_without_scripts_or_agents() {
    let src = format!(
        "{HEAD}initial_state: {{topic: x}}\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: \"{{{{topic}}}} {{{{topik}}}} {{{{output}}}}\"\n    state_updates: {{summary: \"{{{{output}}}}\"}}\n    next: e\n  e:\n    type: end\n    output: \"{{{{summary}}}} {{{{initial_prompt}}}}\"\n"
    );
    let d = check(&src);
    assert_eq!(count(&d, "loki-state-key"), 1, "{d:#?}");
    let k = find(&d, "loki-state-key");
    assert_eq!((k.line, k.column), (8, 24));
    assert!(k.hint.as_deref().unwrap().contains("{{topic}}"), "{k:?}");
    let with_script = src.replace(
        "  e:\n",
        "  s:\n    type: script\n    script: s.sh\n    next: e\n  e:\n",
    );
    assert_eq!(count(&check(&with_script), "loki-state-key"), 0);
}

#[test]
fn checks_run_in_upstream_order() {
    let src = format!(
        "{HEAD}start: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options: [x, y]\n    routes: {{x: b}}\n    on_other: a\n  b:\n    type: script\n    script: nope.sh\n    next: ghost\n  c:\n    type: rag\n    documents: []\n"
    );
    let d = check(&src);
    let order: Vec<&str> = codes(&d)
        .into_iter()
        .filter(|c| {
            [
                "loki-ref",
                "loki-cycle",
                "loki-unreachable",
                "loki-no-end",
                "loki-script-missing",
                "loki-approval-route",
                "loki-rag",
            ]
            .contains(c)
        })
        .collect();
    assert_eq!(
        order,
        [
            "loki-ref",
            "loki-cycle",
            "loki-unreachable",
            "loki-no-end",
            "loki-script-missing",
            "loki-approval-route",
            "loki-rag",
            "loki-rag"
        ]
    );
}

#[test]
fn tool_names_come_from_the_interpreters_parser() {
    use crate::doc::loki::tools::AgentTools;
    let f = AgentTools::read(&fixtures().join("demo"));
    assert!(f.any_file);
    assert_eq!(f.names, ["classify", "lookup"]);
    assert!(!AgentTools::read(&fixtures().join("helper")).any_file);

    // A tools.sh function without `# @cmd` is not a tool: the validator says so in the words
    // the interpreter uses when the model calls it.
    let dir = std::env::temp_dir().join(format!("switchyard-vt-plain-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tools.sh"), "# @cmd Real\nreal() { :; }\n\nplain() { :; }\n").unwrap();
    std::fs::write(dir.join("tools.py"), "def py_tool(x):\n    return x\n\ndef _private():\n    pass\n").unwrap();
    let f = AgentTools::read(&dir);
    assert_eq!(f.names, ["real", "py_tool"]);
    let graph = "version: \"1.0\"\nname: t\nentry: ask\nnodes:\n  ask:\n    type: llm\n    prompt: hi\n    tools: [real, plain, py_tool, nope]\n    next: done\n  done:\n    type: end\n";
    std::fs::write(dir.join("graph.yaml"), graph).unwrap();
    let doc = load_path(&dir.join("graph.yaml"));
    let d = check_doc(&doc);
    let tools: Vec<&Diagnostic> = d.iter().filter(|d| d.code == "loki-tool").collect();
    assert_eq!(tools.len(), 2, "{d:#?}");
    assert!(tools[0].message.contains("'plain', which is not a usable tool"), "{:?}", tools[0]);
    assert!(tools[0].message.contains("no `# @cmd"), "{:?}", tools[0]);
    assert!(tools[1].message.contains("unknown tool 'nope'"), "{:?}", tools[1]);
    let _ = std::fs::remove_dir_all(&dir);
}

// Conformance -------------------------------------------------------------------------

fn corpus_graphs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            corpus_graphs(&p, out);
        } else if p
            .file_name()
            .is_some_and(|n| n == "graph.yaml" || n == "graph.example.yaml")
        {
            out.push(p);
        }
    }
}

/// Every corpus graph parses without schema problems, validates with only "missing from the
/// corpus" errors, and its IR holds every declared node and edge.
#[test]
fn conformance_corpus() {
    let root_buf = crate::testdata::conformance_dir().join("loki");
    let root = root_buf.as_path();
    let mut files = Vec::new();
    corpus_graphs(root, &mut files);
    // coyote 0.10.3's graphs use fields and checks this validator does not have yet (map
    // branches with `next`, agent-node `fallback`): they join this test with that work
    // (issue 28).
    files.retain(|f| !f.starts_with(root.join("coyote-0.10.3")));
    if files.is_empty() {
        eprintln!(
            "conformance corpus not found at {}; skipped",
            root.display()
        );
        return;
    }
    assert!(files.len() >= 8, "{files:?}");
    const MISSING: &[&str] = &[
        "loki-script-missing",
        "loki-agent-missing",
        "loki-tool",
        "loki-mcp",
    ];
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // graph.example.yaml is not named graph.yaml: load it under that name.
        let doc = load_str(&f.with_file_name("graph.yaml"), &text);
        assert!(
            doc.diagnostics.is_empty(),
            "{}: load diagnostics {:#?}",
            f.display(),
            doc.diagnostics
        );
        let Model::Loki(l) = &doc.model else {
            panic!("{} is not Loki", f.display())
        };
        let g = crate::graph::lower_loki::lower(&doc, l);
        let mut diags = Vec::new();
        validate(&doc, l, &g, &mut diags);
        for d in diags.iter().filter(|d| d.is_error()) {
            assert!(
                MISSING.contains(&d.code.as_str()),
                "{}: unexpected error {d:#?}",
                f.display()
            );
        }
        for d in &diags {
            assert!(d.line >= 1 && !d.file.is_empty(), "{d:?}");
        }
        // Every declared node and edge is in the IR.
        assert_eq!(g.g.node_count(), l.nodes.len(), "{}", f.display());
        for n in &l.nodes {
            assert!(
                g.node(&n.id.value).is_some(),
                "{}: node {}",
                f.display(),
                n.id.value
            );
            for t in n.targets() {
                let kind = match t.kind {
                    crate::doc::loki::TargetKind::Next => EdgeKind::Next,
                    crate::doc::loki::TargetKind::Route(_) => EdgeKind::Route,
                    crate::doc::loki::TargetKind::OnOther => EdgeKind::OnOther,
                    crate::doc::loki::TargetKind::ScriptFallback
                    | crate::doc::loki::TargetKind::LlmFallback
                    | crate::doc::loki::TargetKind::AgentFallback => EdgeKind::Fallback,
                    crate::doc::loki::TargetKind::MapBranch => EdgeKind::MapBranch,
                };
                let found = g.edges_ordered().into_iter().any(|(s, d, e)| {
                    g.g[s].id == n.id.value && g.g[d].id == t.to.value && e.kind == kind
                });
                assert!(
                    found,
                    "{}: edge {} -> {} ({kind:?})",
                    f.display(),
                    n.id.value,
                    t.to.value
                );
            }
        }
        assert_eq!(
            g.entry.map(|ix| g.g[ix].id.clone()),
            l.start.as_ref().map(|s| s.value.clone())
        );
    }
}
