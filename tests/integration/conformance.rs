//! The shared conformance corpus behaves as `../shared/conformance/EXPECTATIONS.md` says (the
//! loading, validating and graph parts), and the CLI's exit codes.
//!
//! The corpus is read in place, never copied. What the files declare is read independently of
//! the engine (with `serde_yaml`), so the graph checks compare the engine against the file.

use serde_json::Value as Json;
use serde_yaml::Value as Yaml;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use switchyard::diag::Diagnostic;
use switchyard::doc::{self, Dialect, Document};
use switchyard::{graph, validate};

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

fn corpus() -> PathBuf {
    let p = switchyard::testdata::conformance_dir();
    assert!(
        p.is_dir(),
        "the conformance corpus is missing at {}",
        p.display()
    );
    p
}

fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .flatten()
        {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn name_is(p: &Path, names: &[&str]) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| names.contains(&n))
}

fn rel(p: &Path) -> String {
    p.strip_prefix(corpus()).unwrap_or(p).display().to_string()
}

/// sherma files that must validate clean: `examples/*/agent.yaml` and `examples/multi_agent/*.yaml`.
fn sherma_examples() -> Vec<PathBuf> {
    let ex = corpus().join("sherma/examples");
    let v = files_under(&ex, &|p| {
        p.extension().is_some_and(|e| e == "yaml")
            && (name_is(p, &["agent.yaml"])
                || p.parent().is_some_and(|d| d.ends_with("multi_agent")))
    });
    assert!(v.len() >= 9, "expected the sherma examples, found {v:?}");
    v
}

fn sherma_legacy() -> Vec<PathBuf> {
    let v = files_under(&corpus().join("sherma/legacy"), &|p| {
        p.extension().is_some_and(|e| e == "yaml")
    });
    assert!(v.len() >= 4, "expected the legacy files, found {v:?}");
    v
}

/// The coyote 0.10.3 release (the reference for Loki, EXPECTATIONS.md "Loki as coyote 0.10.3").
const COYOTE: &str = "loki/coyote-0.10.3";

fn loki_graphs() -> Vec<PathBuf> {
    let v = files_under(&corpus().join("loki"), &|p| {
        name_is(p, &["graph.yaml", "graph.example.yaml"])
    });
    assert!(v.len() >= 8, "expected the Loki graphs, found {v:?}");
    v
}

fn show(diags: &[&Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| {
            format!(
                "  {} {} {}:{} {}",
                d.severity.as_str(),
                d.code,
                d.line,
                d.column,
                d.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn yaml_of(p: &Path) -> Yaml {
    let text = std::fs::read_to_string(p).unwrap();
    serde_yaml::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: serde_yaml cannot read it: {e}", rel(p)))
}

fn ystr<'a>(v: &'a Yaml, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Yaml::as_str)
}

fn seq(v: Option<&Yaml>) -> &[Yaml] {
    v.and_then(Yaml::as_sequence)
        .map(|s| s.as_slice())
        .unwrap_or(&[])
}

/// The graph JSON of one agent, via the engine.
fn export(d: &Document, agent: Option<&str>, file: &Path) -> Json {
    let (g, diags) = graph::lower(d, agent);
    let g = g.unwrap_or_else(|| {
        panic!(
            "{} (agent {agent:?}) does not lower to a graph: {diags:?}",
            rel(file)
        )
    });
    // The other exports must not panic either.
    let _ = graph::export::to_mermaid(&g);
    let _ = graph::export::to_dot(&g);
    graph::export::to_json(&g)
}

struct G {
    nodes: Vec<(String, bool)>,
    edges: Vec<(String, String, Json)>,
}

impl G {
    fn of(j: &Json) -> G {
        let nodes = j["nodes"]
            .as_array()
            .expect("nodes array")
            .iter()
            .map(|n| {
                (
                    n["id"].as_str().unwrap().to_string(),
                    n["derived"].as_bool().unwrap(),
                )
            })
            .collect();
        let edges = j["edges"]
            .as_array()
            .expect("edges array")
            .iter()
            .map(|e| {
                (
                    e["from"].as_str().unwrap().to_string(),
                    e["to"].as_str().unwrap().to_string(),
                    e.clone(),
                )
            })
            .collect();
        G { nodes, edges }
    }
    fn has_node(&self, id: &str) -> bool {
        self.nodes.iter().any(|(n, _)| n == id)
    }
    fn node_derived(&self, id: &str) -> Option<bool> {
        self.nodes.iter().find(|(n, _)| n == id).map(|(_, d)| *d)
    }
    fn edge(&self, from: &str, to: &str) -> Option<&Json> {
        self.edges
            .iter()
            .find(|(f, t, _)| f == from && t == to)
            .map(|(_, _, e)| e)
    }
}

/// Compare a sherma agent's export against what its YAML declares. Returns the problems.
fn check_sherma_agent(file: &Path, name: &str, agent: &Yaml, j: &Json) -> Vec<String> {
    let g = G::of(j);
    let mut bad = Vec::new();
    let need_edge = |from: &str, to: &str, why: &str, bad: &mut Vec<String>| {
        if g.edge(from, to).is_none() {
            bad.push(format!(
                "{} agent {name}: missing edge {from} -> {to} ({why})",
                rel(file)
            ));
        }
    };
    let graph_y = agent.get("graph").cloned().unwrap_or(Yaml::Null);
    let nodes = seq(graph_y.get("nodes"));
    let edges = seq(graph_y.get("edges"));
    for n in nodes {
        let id = ystr(n, "name").unwrap_or_default();
        if !g.has_node(id) {
            bad.push(format!(
                "{} agent {name}: declared node `{id}` is not in the export",
                rel(file)
            ));
        } else if g.node_derived(id) == Some(true) {
            bad.push(format!(
                "{} agent {name}: declared node `{id}` is marked derived",
                rel(file)
            ));
        }
    }
    if let Some(ep) = ystr(&graph_y, "entry_point") {
        need_edge("__start__", ep, "entry_point", &mut bad);
    }
    let mut conditional_sources = BTreeSet::new();
    for e in edges {
        let src = ystr(e, "source").unwrap_or_default();
        match e.get("branches") {
            Some(branches) => {
                conditional_sources.insert(src.to_string());
                for b in seq(Some(branches)) {
                    if let Some(t) = ystr(b, "target") {
                        need_edge(src, t, "branch target", &mut bad);
                    }
                }
                need_edge(
                    src,
                    ystr(e, "default").unwrap_or("__end__"),
                    "branch default",
                    &mut bad,
                );
            }
            None => {
                if let Some(t) = ystr(e, "target") {
                    need_edge(src, t, "static edge", &mut bad);
                }
            }
        }
    }
    for n in nodes {
        let id = ystr(n, "name").unwrap_or_default();
        if ystr(n, "type") == Some("call_llm") {
            let args = n.get("args").cloned().unwrap_or(Yaml::Null);
            let truthy = |k: &str| match args.get(k) {
                Some(Yaml::Bool(b)) => *b,
                Some(Yaml::Null) | None => false,
                Some(Yaml::String(s)) => !s.is_empty(),
                Some(_) => true,
            };
            let binds = !seq(args.get("tools")).is_empty()
                || truthy("use_tools_from_registry")
                || truthy("use_tools_from_loaded_skills")
                || truthy("use_sub_agents_as_tools");
            if binds && !conditional_sources.contains(id) {
                let tools = format!("{id}_tools");
                match g.node_derived(&tools) {
                    Some(true) => {}
                    Some(false) => bad.push(format!(
                        "{} agent {name}: `{tools}` is not marked derived",
                        rel(file)
                    )),
                    None => bad.push(format!(
                        "{} agent {name}: derived tool node `{tools}` is missing",
                        rel(file)
                    )),
                }
                need_edge(id, &tools, "has_tool_calls branch", &mut bad);
                need_edge(&tools, id, "tool node returns to its call_llm", &mut bad);
                if let Some(e) = g.edge(id, &tools)
                    && (e["derived"] != Json::Bool(true) || e["label"] != "has_tool_calls")
                {
                    bad.push(format!("{} agent {name}: {id} -> {tools} should be a derived has_tool_calls branch: {e}", rel(file)));
                }
            }
        }
        if let Some(fb) = n.get("on_error").and_then(|o| ystr(o, "fallback")) {
            need_edge(id, fb, "on_error.fallback", &mut bad);
            if let Some(e) = g.edge(id, fb)
                && e["derived"] != Json::Bool(true)
            {
                bad.push(format!(
                    "{} agent {name}: fallback edge {id} -> {fb} is not marked derived: {e}",
                    rel(file)
                ));
            }
        }
    }
    bad
}

fn check_sherma_graphs(file: &Path, d: &Document) -> Vec<String> {
    let y = yaml_of(file);
    let agents = y
        .get("agents")
        .and_then(Yaml::as_mapping)
        .expect("agents mapping");
    let mut bad = Vec::new();
    for (k, agent) in agents {
        let name = k.as_str().unwrap();
        let j = export(d, Some(name), file);
        assert_eq!(j["agent"], name, "{}", rel(file));
        bad.extend(check_sherma_agent(file, name, agent, &j));
    }
    bad
}

/// A warning the corpus may produce: a Python import path that needs the Python environment.
fn allowed_example_warning(d: &Diagnostic) -> bool {
    !d.is_error()
        && d.message.contains("import")
        && (d.message.contains("examples.tools.") || d.message.contains("examples.hooks."))
}

#[test]
fn sherma_examples_validate_clean() {
    let mut bad = Vec::new();
    for f in sherma_examples() {
        let d = doc::load_path(&f);
        assert_eq!(d.dialect(), Some(Dialect::Sherma), "{}", rel(&f));
        let diags = validate::validate(&d, None);
        let unexpected: Vec<&Diagnostic> = diags
            .iter()
            .filter(|x| !allowed_example_warning(x))
            .collect();
        if !unexpected.is_empty() {
            bad.push(format!("{}:\n{}", rel(&f), show(&unexpected)));
        }
    }
    assert!(
        bad.is_empty(),
        "sherma examples must validate with no errors and no warnings other than Python import paths:\n{}",
        bad.join("\n")
    );
}

#[test]
fn sherma_examples_export_every_declared_and_derived_element() {
    let mut bad = Vec::new();
    for f in sherma_examples() {
        let d = doc::load_path(&f);
        bad.extend(check_sherma_graphs(&f, &d));
    }
    assert!(bad.is_empty(), "graph exports:\n{}", bad.join("\n"));
}

#[test]
fn sherma_examples_have_the_derived_elements_expectations_name() {
    // EXPECTATIONS.md, runs: the weather agent's auto-injected tool node and the error recovery
    // agent's fallback branch.
    let weather = corpus().join("sherma/examples/declarative_weather_agent/agent.yaml");
    let g = G::of(&export(&doc::load_path(&weather), None, &weather));
    assert_eq!(g.node_derived("agent_tools"), Some(true));
    assert_eq!(
        g.edge("agent", "agent_tools").unwrap()["label"],
        "has_tool_calls"
    );
    assert_eq!(g.edge("agent", "update_stats").unwrap()["kind"], "default");

    let recovery = corpus().join("sherma/examples/error_recovery_agent/agent.yaml");
    let g = G::of(&export(&doc::load_path(&recovery), None, &recovery));
    let fb = g.edge("agent", "error_handler").expect("fallback edge");
    assert_eq!(fb["label"], "has_error_fallback");
    assert_eq!(fb["derived"], true);

    let supervisor = corpus().join("sherma/examples/multi_agent/supervisor_agent.yaml");
    let d = doc::load_path(&supervisor);
    let g = G::of(&export(&d, None, &supervisor));
    assert!(
        g.nodes
            .iter()
            .any(|(id, derived)| *derived && id.ends_with("_tools")),
        "sub-agents as tools inject a tool node: {:?}",
        g.nodes
    );
    // `yaml_path` resolves relative to the YAML file.
    let sub = &d.sherma().expect("sherma").sub_agents;
    let resolved = sub
        .iter()
        .find(|e| e.id_str() == "weather-agent")
        .and_then(|e| e.resolved_path.clone());
    assert!(
        resolved
            .as_deref()
            .is_some_and(|p| p.is_file() && p.ends_with("multi_agent/weather_agent.yaml")),
        "yaml_path resolves next to supervisor_agent.yaml: {resolved:?}"
    );
}

/// The line of the first key: the first line that is neither blank nor a comment.
fn first_key_line(p: &Path) -> u32 {
    let text = std::fs::read_to_string(p).unwrap();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if !t.is_empty() && !t.starts_with('#') {
            return i as u32 + 1;
        }
    }
    1
}

#[test]
fn sherma_legacy_files_open_draw_and_report_the_missing_manifest_version() {
    let mut bad = Vec::new();
    for f in sherma_legacy() {
        let d = doc::load_path(&f);
        assert_eq!(d.dialect(), Some(Dialect::Sherma), "{}", rel(&f));
        // Draws: every agent lowers to a graph with its declared nodes.
        let y = yaml_of(&f);
        for (k, _) in y.get("agents").and_then(Yaml::as_mapping).expect("agents") {
            let j = export(&d, k.as_str(), &f);
            if j["nodes"].as_array().is_none_or(|n| n.len() <= 2) {
                bad.push(format!("{}: agent {k:?} draws no nodes: {j}", rel(&f)));
            }
        }
        bad.extend(check_sherma_graphs(&f, &d));
        let diags = validate::validate(&d, None);
        let line = first_key_line(&f);
        match diags.iter().find(|x| x.code == "manifest-version-missing") {
            None => bad.push(format!(
                "{}: no manifest-version-missing diagnostic",
                rel(&f)
            )),
            Some(m) => {
                if !m.is_error() {
                    bad.push(format!(
                        "{}: manifest-version-missing is not an error",
                        rel(&f)
                    ));
                }
                if m.line != line || m.column != 1 {
                    bad.push(format!(
                        "{}: manifest-version-missing at {}:{}, expected {line}:1 (the first key)",
                        rel(&f),
                        m.line,
                        m.column
                    ));
                }
                if m.hint
                    .as_deref()
                    .is_none_or(|h| !h.contains("manifest_version"))
                {
                    bad.push(format!(
                        "{}: manifest-version-missing has no useful hint: {:?}",
                        rel(&f),
                        m.hint
                    ));
                }
            }
        }
        // Bare field names are accepted: no CEL complaints about them.
        let cel: Vec<&Diagnostic> = diags
            .iter()
            .filter(|x| x.code.starts_with("cel-"))
            .collect();
        if !cel.is_empty() {
            bad.push(format!(
                "{}: CEL findings in a legacy file (bare names are accepted):\n{}",
                rel(&f),
                show(&cel)
            ));
        }
    }
    assert!(bad.is_empty(), "legacy files:\n{}", bad.join("\n"));
}

#[test]
fn sherma_skill_card_and_skill_md_load() {
    let dir = corpus().join("sherma/examples/skills/weather");
    let card: Json =
        serde_json::from_str(&std::fs::read_to_string(dir.join("skill-card.json")).unwrap())
            .unwrap();
    for k in ["id", "version", "name", "description"] {
        assert!(
            card[k].as_str().is_some_and(|s| !s.is_empty()),
            "skill card `{k}`: {card}"
        );
    }
    let files = card["files"].as_array().expect("files");
    assert!(!files.is_empty());
    for f in files {
        assert!(
            dir.join(f.as_str().unwrap()).is_file(),
            "skill card lists {f}, which is missing"
        );
    }
    assert_eq!(
        card["local_tools"].as_object().map(|m| m.len()),
        Some(1),
        "one local tool: {card}"
    );

    let md = std::fs::read_to_string(dir.join("SKILL.md")).unwrap();
    let rest = md
        .strip_prefix("---\n")
        .expect("SKILL.md starts with front matter");
    let (front, body) = rest.split_once("\n---\n").expect("front matter is closed");
    let fm: Yaml = serde_yaml::from_str(front).expect("front matter is YAML");
    assert!(ystr(&fm, "name").is_some_and(|s| !s.is_empty()), "{fm:?}");
    assert!(
        ystr(&fm, "description").is_some_and(|s| !s.is_empty()),
        "{fm:?}"
    );
    assert!(!body.trim().is_empty());
}

#[test]
fn every_corpus_file_loads_validates_and_exports_without_panicking() {
    let all = files_under(&corpus(), &|p| {
        p.extension().is_some_and(|e| e == "yaml" || e == "yml")
    });
    assert!(all.len() >= 20, "{all:?}");
    for f in &all {
        let d = doc::load_path(f);
        let _ = validate::validate(&d, None);
        for name in graph::agent_names(&d) {
            if let (Some(g), _) = graph::lower(&d, Some(&name)) {
                let _ = graph::export::to_json(&g);
                let _ = graph::export::to_mermaid(&g);
                let _ = graph::export::to_dot(&g);
            }
        }
    }
}

#[test]
fn loki_graphs_load_as_loki_and_export() {
    for f in loki_graphs() {
        let d = doc::load_path(&f);
        assert!(!d.io_error, "{}", rel(&f));
        assert_eq!(d.dialect(), Some(Dialect::Loki), "{}", rel(&f));
        let _ = validate::validate(&d, None);
        let j = export(&d, None, &f);
        assert_eq!(j["dialect"], "loki", "{}", rel(&f));
        // The agent directory form loads the same file.
        if name_is(&f, &["graph.yaml"]) {
            let by_dir = doc::load_path(f.parent().unwrap());
            assert_eq!(
                by_dir.path, f,
                "an agent directory resolves to its graph.yaml"
            );
            assert_eq!(by_dir.dialect(), Some(Dialect::Loki));
        }
    }
}

/// Declared Loki edges: (from, to, what) for `next`, approval `routes`/`on_other`, `fallback`,
/// map `branch`.
fn loki_declared_edges(y: &Yaml) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let Some(nodes) = y.get("nodes").and_then(Yaml::as_mapping) else {
        return out;
    };
    for (k, n) in nodes {
        let id = k.as_str().unwrap_or_default().to_string();
        match n.get("next") {
            Some(Yaml::String(t)) => out.push((id.clone(), t.clone(), "next".into())),
            Some(Yaml::Sequence(ts)) => {
                for t in ts.iter().filter_map(Yaml::as_str) {
                    out.push((id.clone(), t.to_string(), "next (fan-out)".into()));
                }
            }
            _ => {}
        }
        if let Some(routes) = n.get("routes").and_then(Yaml::as_mapping) {
            for (opt, t) in routes {
                if let Some(t) = t.as_str() {
                    let label = match opt {
                        Yaml::String(s) => s.clone(),
                        other => serde_yaml::to_string(other)
                            .unwrap_or_default()
                            .trim()
                            .to_string(),
                    };
                    out.push((id.clone(), t.to_string(), format!("route {label}")));
                }
            }
        }
        for key in ["on_other", "fallback", "branch"] {
            if let Some(t) = ystr(n, key) {
                out.push((id.clone(), t.to_string(), key.to_string()));
            }
        }
    }
    out
}

#[test]
fn loki_graphs_export_exactly_the_declared_nodes_and_every_declared_edge() {
    let schema_codes = [
        "yaml-syntax",
        "wrong-type",
        "missing-field",
        "bad-enum",
        "duplicate-key",
        "out-of-range",
    ];
    let mut bad = Vec::new();
    for f in loki_graphs() {
        let y = yaml_of(&f);
        let declared: Vec<String> = y
            .get("nodes")
            .and_then(Yaml::as_mapping)
            .expect("nodes mapping")
            .keys()
            .map(|k| k.as_str().unwrap().to_string())
            .collect();
        let d = doc::load_path(&f);
        let j = export(&d, None, &f);
        let g = G::of(&j);
        let exported: Vec<String> = g
            .nodes
            .iter()
            .filter(|(_, derived)| !derived)
            .map(|(id, _)| id.clone())
            .collect();
        if exported != declared {
            bad.push(format!(
                "{}: exported nodes {exported:?} != declared {declared:?}",
                rel(&f)
            ));
        }
        if j["entry"].as_str() != ystr(&y, "start") {
            bad.push(format!(
                "{}: entry {} != start {:?}",
                rel(&f),
                j["entry"],
                ystr(&y, "start")
            ));
        }
        for (from, to, what) in loki_declared_edges(&y) {
            match g.edge(&from, &to) {
                None => bad.push(format!("{}: missing edge {from} -> {to} ({what})", rel(&f))),
                Some(e) => {
                    if let Some(opt) = what.strip_prefix("route ")
                        && !g
                            .edges
                            .iter()
                            .any(|(a, b, e)| *a == from && *b == to && e["label"] == opt)
                    {
                        bad.push(format!(
                            "{}: route {from} -> {to} is not labelled `{opt}`: {e}",
                            rel(&f)
                        ));
                    }
                }
            }
        }
        let diags = validate::validate(&d, None);
        let schema: Vec<&Diagnostic> = diags
            .iter()
            .filter(|x| x.is_error() && schema_codes.contains(&x.code.as_str()))
            .collect();
        if !schema.is_empty() {
            bad.push(format!("{}: schema errors:\n{}", rel(&f), show(&schema)));
        }
    }
    assert!(bad.is_empty(), "Loki graphs:\n{}", bad.join("\n"));
}

#[test]
fn loki_script_next_is_dynamic_and_fanout_is_marked() {
    // EXPECTATIONS.md: the canvas shows fan-out, map nodes and script `_next` routing as dynamic.
    let f = corpus().join("loki/main/agents/deep-research/graph.yaml");
    let d = doc::load_path(&f);
    let j = export(&d, None, &f);
    let edges = j["edges"].as_array().unwrap();
    assert!(
        edges.iter().any(|e| e["fanout"] == true),
        "a fan-out edge: {j}"
    );
    assert!(
        edges.iter().any(|e| e["kind"] == "map_branch"),
        "a map branch edge: {j}"
    );
    let nodes = j["nodes"].as_array().unwrap();
    assert!(
        nodes
            .iter()
            .any(|n| n["kind"] == "script" && n["dynamic_next"] == true)
            || edges.iter().any(|e| e["dynamic"] == true),
        "script `_next` routing is marked dynamic: {j}"
    );
}

// ---------------------------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------------------------

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Out {
    let o = Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run switchyard");
    Out {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn p(rel: &str) -> String {
    corpus().join(rel).display().to_string()
}

#[test]
fn cli_exit_codes() {
    let clean = p("sherma/examples/declarative_weather_agent/agent.yaml");
    let legacy = p("sherma/legacy/declarative-weather-agent.yaml");
    let multi = p("sherma/examples/multi_agent/supervisor_agent.yaml");
    let missing = p("sherma/examples/no-such-file.yaml");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["validate", &clean], 0),
        (vec!["validate", "--format", "json", &clean], 0),
        (vec!["validate", "--quiet", &clean, &multi], 0),
        (vec!["validate", &legacy], 1),
        (vec!["validate", &clean, &legacy], 1),
        (vec!["validate", &missing], 2),
        (vec!["validate", &clean, &missing], 2),
        (vec!["validate", &legacy, &missing], 2),
        (vec!["validate"], 2),
        (vec!["validate", "--format", "xml", &clean], 2),
        (vec!["validate", "--agent", "no-such-agent", &clean], 1),
        (vec!["frobnicate"], 2),
        (vec!["--help"], 0),
        (vec!["--version"], 0),
        (vec!["graph", &clean, "--format", "json"], 0),
        (vec!["graph", &clean, "--format", "mermaid"], 0),
        (vec!["graph", &clean, "--format", "dot"], 0),
        (vec!["graph", &legacy, "--format", "json"], 0),
        (
            vec![
                "graph",
                &multi,
                "--agent",
                "no-such-agent",
                "--format",
                "json",
            ],
            2,
        ),
        (vec!["graph", &missing, "--format", "json"], 2),
        (vec!["graph", &clean, "--format", "png"], 2),
    ];
    let mut bad = Vec::new();
    for (args, want) in &cases {
        let o = run(args);
        if o.code != Some(*want) {
            bad.push(format!(
                "switchyard {}: exit {:?}, expected {want}\nstdout: {}\nstderr: {}",
                args.join(" "),
                o.code,
                o.stdout,
                o.stderr
            ));
        }
        if o.stderr.contains("panicked") {
            bad.push(format!(
                "switchyard {}: panicked\n{}",
                args.join(" "),
                o.stderr
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

#[test]
fn cli_outputs() {
    let clean = p("sherma/examples/declarative_weather_agent/agent.yaml");
    let o = run(&["graph", &clean, "--format", "json"]);
    let j: Json = serde_json::from_str(&o.stdout).expect("graph json");
    assert!(
        j["nodes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["id"] == "agent_tools")),
        "{j}"
    );
    for e in j["edges"].as_array().unwrap() {
        for k in ["from", "to", "kind", "label", "derived", "dynamic"] {
            assert!(e.get(k).is_some(), "edge lacks `{k}`: {e}");
        }
    }
    assert!(
        run(&["graph", &clean, "--format", "mermaid"])
            .stdout
            .starts_with("flowchart")
    );
    assert!(
        run(&["graph", &clean, "--format", "dot"])
            .stdout
            .contains("digraph")
    );

    let legacy = p("sherma/legacy/declarative-weather-agent.yaml");
    let o = run(&["validate", "--format", "json", &legacy]);
    let diags: Json = serde_json::from_str(&o.stdout).expect("diagnostics json");
    let arr = diags.as_array().unwrap();
    assert!(!arr.is_empty());
    for d in arr {
        for k in [
            "severity",
            "code",
            "message",
            "file",
            "line",
            "column",
            "end_line",
            "end_column",
            "hint",
        ] {
            assert!(d.get(k).is_some(), "diagnostic lacks `{k}`: {d}");
        }
    }
    let o = run(&["validate", &legacy]);
    assert!(
        o.stdout.contains("declarative-weather-agent.yaml:"),
        "human output names file:line:col:\n{}",
        o.stdout
    );
    assert!(o.stdout.contains("hint:"), "{}", o.stdout);
}

/// coyote 0.10.3's graphs: what each may report beyond nothing, because its corpus lacks it
/// (EXPECTATIONS.md, "Loki as coyote 0.10.3"):
///
/// | file | error | why |
/// | --- | --- | --- |
/// | `graph.example.yaml` | `loki-script-missing` | `scripts/synthesize.py` is not shipped (the file says it "is not a runnable agent as-is") |
/// | `graph.example.yaml` | `loki-agent-missing` | its `deep_dive` names `deep-research`, which lives under `assets/agents/`, not beside the example |
///
/// Every other file: no errors. No file: any schema warning (`unknown-key`, `wrong-type`, ...).
const COYOTE_EXPECTED_ERRORS: &[(&str, &str)] = &[
    ("graph.example.yaml", "loki-script-missing"),
    ("graph.example.yaml", "loki-agent-missing"),
];

fn coyote_graphs() -> Vec<PathBuf> {
    let v: Vec<PathBuf> = loki_graphs()
        .into_iter()
        .filter(|f| f.starts_with(corpus().join(COYOTE)))
        .collect();
    assert!(v.len() >= 9, "expected coyote's example and its eight graph agents, found {v:?}");
    v
}

#[test]
fn coyote_graphs_validate_clean_but_for_what_the_corpus_lacks() {
    let schema_codes = [
        "unknown-key",
        "wrong-type",
        "missing-field",
        "missing-value",
        "bad-enum",
        "duplicate-key",
        "out-of-range",
        "yaml-syntax",
        "merge-key",
    ];
    let mut bad = Vec::new();
    for f in coyote_graphs() {
        let name = f.file_name().unwrap().to_str().unwrap();
        let d = doc::load_path(&f);
        let diags = validate::validate(&d, None);
        let schema: Vec<&Diagnostic> = diags
            .iter()
            .filter(|x| schema_codes.contains(&x.code.as_str()))
            .collect();
        if !schema.is_empty() {
            bad.push(format!("{}: schema diagnostics:\n{}", rel(&f), show(&schema)));
        }
        let mut expected: Vec<&str> = COYOTE_EXPECTED_ERRORS
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .collect();
        let errors: Vec<&Diagnostic> = diags.iter().filter(|x| x.is_error()).collect();
        let mut unexpected = Vec::new();
        for e in &errors {
            match expected.iter().position(|c| *c == e.code) {
                Some(i) => {
                    expected.remove(i);
                }
                None => unexpected.push(*e),
            }
        }
        if !unexpected.is_empty() {
            bad.push(format!("{}: errors:\n{}", rel(&f), show(&unexpected)));
        }
        if !expected.is_empty() {
            bad.push(format!("{}: expected errors that did not come: {expected:?}", rel(&f)));
        }
    }
    assert!(bad.is_empty(), "coyote 0.10.3 graphs:\n{}", bad.join("\n"));
}

/// A map's chain read from the file: the branch entry, then breadth-first over `next` and
/// `fallback` (upstream's definition of the per-item chain).
fn yaml_chain(y: &Yaml, entry: &str) -> Vec<String> {
    let nodes = y.get("nodes").and_then(Yaml::as_mapping).expect("nodes");
    let mut out = vec![entry.to_string()];
    let mut i = 0;
    while i < out.len() {
        let n = nodes.get(Yaml::String(out[i].clone())).cloned().unwrap_or(Yaml::Null);
        let mut ts: Vec<String> = match n.get("next") {
            Some(Yaml::String(t)) => vec![t.clone()],
            Some(Yaml::Sequence(v)) => v.iter().filter_map(|t| t.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        };
        ts.extend(ystr(&n, "fallback").map(str::to_string));
        for t in ts {
            if nodes.contains_key(Yaml::String(t.clone())) && !out.contains(&t) {
                out.push(t);
            }
        }
        i += 1;
    }
    out
}

#[test]
fn coyote_graphs_export_agent_fallbacks_and_map_lanes() {
    let mut bad = Vec::new();
    let mut agent_fallbacks = 0;
    let mut chains = 0;
    for f in coyote_graphs() {
        let y = yaml_of(&f);
        let d = doc::load_path(&f);
        let j = export(&d, None, &f);
        let g = G::of(&j);
        let nodes = y.get("nodes").and_then(Yaml::as_mapping).expect("nodes");
        let mut lanes_expected: Vec<Json> = Vec::new();
        for (k, n) in nodes {
            let id = k.as_str().unwrap();
            if ystr(n, "type") == Some("agent")
                && let Some(t) = ystr(n, "fallback")
            {
                agent_fallbacks += 1;
                if !g.edges.iter().any(|(a, b, e)| a == id && b == t && e["kind"] == "fallback") {
                    bad.push(format!("{}: agent fallback {id} -> {t} is not a fallback edge", rel(&f)));
                }
            }
            if ystr(n, "type") == Some("map")
                && let Some(b) = ystr(n, "branch")
            {
                let chain = yaml_chain(&y, b);
                if chain.len() > 1 {
                    chains += 1;
                }
                lanes_expected.push(serde_json::json!({"map": id, "nodes": chain}));
            }
        }
        let lanes = j.get("lanes").cloned().unwrap_or(Json::Array(Vec::new()));
        if lanes != Json::Array(lanes_expected.clone()) {
            bad.push(format!("{}: lanes {lanes} != {}", rel(&f), Json::Array(lanes_expected.clone())));
        }
        for n in j["nodes"].as_array().unwrap() {
            let want: Vec<&Json> = lanes_expected
                .iter()
                .filter(|l| l["nodes"].as_array().unwrap().contains(&n["id"]))
                .map(|l| &l["map"])
                .collect();
            let got: Vec<&Json> = n.get("lanes").and_then(Json::as_array).map(|v| v.iter().collect()).unwrap_or_default();
            if got != want {
                bad.push(format!("{}: node {} is in lanes {got:?}, expected {want:?}", rel(&f), n["id"]));
            }
        }
    }
    assert!(bad.is_empty(), "coyote 0.10.3 graphs:\n{}", bad.join("\n"));
    // The corpus has what this test is about (so it cannot pass by finding nothing).
    assert!(agent_fallbacks >= 8, "agent fallbacks found: {agent_fallbacks}");
    assert!(chains >= 3, "map chains found: {chains}");
}

/// A single edit of each coyote 0.10.3 field changes only its bytes, and the inverse restores
/// the file byte for byte.
#[test]
fn coyote_fields_edit_byte_exactly() {
    use switchyard::edit::{self, EditOp};
    let f = corpus().join(COYOTE).join("graph.example.yaml");
    let old = std::fs::read_to_string(&f).unwrap();
    // (op, the old text of the value, the new text it becomes)
    let cases: Vec<(Json, &str, &str)> = vec![
        (serde_json::json!({"op": "set_doc_field", "path": ["max_concurrent_jobs"], "value": 2}), "max_concurrent_jobs: 5 ", "max_concurrent_jobs: 2 "),
        (serde_json::json!({"op": "set_doc_field", "path": ["can_spawn_agents"], "value": false}), "can_spawn_agents: true ", "can_spawn_agents: false "),
        (serde_json::json!({"op": "set_doc_field", "path": ["max_concurrent_agents"], "value": 2}), "max_concurrent_agents: 4 ", "max_concurrent_agents: 2 "),
        (serde_json::json!({"op": "set_doc_field", "path": ["max_agent_depth"], "value": 5}), "max_agent_depth: 3 ", "max_agent_depth: 5 "),
        // A block list stays a block list: the edit stays inside the list's own lines.
        (serde_json::json!({"op": "set_doc_field", "path": ["mcp_tools", "ddg-search"], "value": ["search", "news*"]}), "ddg-search:                      # every node that uses `mcp:<server>`; intersects with the other\n    - search                       # allowlist layers (global config, agent, mcp.json `allowedTools`).\n", ""),
        (serde_json::json!({"op": "set_field", "node": "summarize", "path": ["mcp_tools", "ddg-search"], "value": ["se?rch"]}), "ddg-search:              #   keys must be servers this graph enables; intersects with\n        - search               #   the graph-level mcp_tools above and every other layer\n", ""),
        (serde_json::json!({"op": "set_field", "node": "deep_dive", "path": ["teammates"], "value": true}), "teammates: false ", "teammates: true "),
        (serde_json::json!({"op": "set_field", "node": "subjects_map", "path": ["max_concurrency"], "value": "{{budget}}"}), "max_concurrency: 3 ", "max_concurrency: \"{{budget}}\" "),
        (serde_json::json!({"op": "set_field", "node": "summarize", "path": ["max_iterations"], "value": 0}), "max_iterations: 10 ", "max_iterations: 0 "),
        (serde_json::json!({"op": "set_field", "node": "deep_dive", "path": ["timeout"], "value": 0}), "timeout: 600               # Optional wall-clock cap, seconds. Default 300", "timeout: 0               # Optional wall-clock cap, seconds. Default 300"),
    ];
    let mut bad = Vec::new();
    for (o, before, after) in cases {
        let op: EditOp = serde_json::from_value(o.clone()).unwrap();
        let a = match edit::apply(&old, &f, None, &op) {
            Ok(a) => a,
            Err(e) => {
                bad.push(format!("{o}: refused: {}", e.message));
                continue;
            }
        };
        assert_eq!(a.inverse.apply(&a.text), old, "{o}: the inverse restores the bytes");
        assert_eq!(a.edit, edit::diff(&old, &a.text), "{o}: the edit is minimal");
        // Exactly one occurrence of the old text became the new text; nothing else moved.
        assert_eq!(old.matches(before).count(), 1, "{o}: fixture text {before:?} is not unique");
        let at = old.find(before).unwrap();
        if after.is_empty() {
            // Only the region changed.
            if a.edit.start < at || a.edit.end > at + before.len() {
                bad.push(format!("{o}: edit {}..{} outside the value's lines {}..{}: {:?}", a.edit.start, a.edit.end, at, at + before.len(), a.edit.text));
            }
        } else if a.text != old.replacen(before, after, 1) {
            let expected = old.replacen(before, after, 1);
            let at = a.text.bytes().zip(expected.bytes()).position(|(x, y)| x != y).unwrap_or(0);
            bad.push(format!("{o}: changed more than the value near byte {at}: {:?}", &a.text[at.saturating_sub(40)..(at + 80).min(a.text.len())]));
            continue;
        }
        // The edited file still loads without schema warnings, holding the new value.
        let d = doc::load_str(&f, &a.text);
        let root = d.root.as_ref().expect("root").to_json();
        let path: Vec<String> = o["path"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
        let mut v = match o["node"].as_str() {
            Some(n) => &root["nodes"][n],
            None => &root,
        };
        for p in &path {
            v = &v[p.as_str()];
        }
        if *v != o["value"] {
            bad.push(format!("{o}: the file now holds {v}"));
        }
        let unknown: Vec<&Diagnostic> = d.diagnostics.iter().filter(|x| x.code == "unknown-key" || x.code == "wrong-type").collect();
        if !unknown.is_empty() {
            bad.push(format!("{o}: {}", show(&unknown)));
        }
    }
    assert!(bad.is_empty(), "edits:\n{}", bad.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// LLLM (EXPECTATIONS.md, section LLLM)
// ---------------------------------------------------------------------------------------------

/// What one kind of LLLM corpus file must give: the dialect it loads as, the diagnostic codes
/// that must come, and the only error codes allowed (`None`: any, for files that are not LLLM).
struct LllmCase {
    what: &'static str,
    applies: fn(&str) -> bool,
    dialect: Option<Dialect>,
    must: &'static [&'static str],
    errors_allowed: Option<&'static [&'static str]>,
}

/// First match wins; every YAML file under `lllm/` must match one.
const LLLM_CASES: &[LllmCase] = &[
    LllmCase {
        what: "an asset of a package, not a config",
        applies: |p| p.ends_with("pkg_gamma/assets/models/config.yaml"),
        dialect: None,
        must: &[],
        errors_allowed: None,
    },
    LllmCase {
        what: "an unrendered project template",
        applies: |p| p.contains("__project_name__"),
        dialect: Some(Dialect::Lllm),
        must: &["yaml-syntax", "template-placeholder", "lllm-old-shape"],
        errors_allowed: Some(&["yaml-syntax", "template-placeholder", "lllm-old-shape", "wrong-type"]),
    },
    LllmCase {
        what: "an older config shape",
        applies: |p| p.starts_with("history/"),
        dialect: Some(Dialect::Lllm),
        must: &["lllm-old-shape"],
        errors_allowed: Some(&["lllm-old-shape"]),
    },
    LllmCase {
        what: "a current-shape config",
        applies: |p| p.starts_with("main-6845bfa/") && p.contains("/configs/"),
        dialect: Some(Dialect::Lllm),
        must: &[],
        // What the corpus lacks (prompt modules, packages not present) is a warning.
        errors_allowed: Some(&[]),
    },
];

fn lllm_files() -> Vec<PathBuf> {
    let v = files_under(&corpus().join("lllm"), &|p| p.extension().is_some_and(|e| e == "yaml"));
    assert!(v.len() >= 17, "expected the LLLM configs, found {v:?}");
    v
}

fn lllm_rel(p: &Path) -> String {
    p.strip_prefix(corpus().join("lllm")).unwrap_or(p).display().to_string()
}

#[test]
fn lllm_configs_load_validate_and_draw_as_expected() {
    let mut bad = Vec::new();
    let mut seen = vec![0usize; LLLM_CASES.len()];
    for f in lllm_files() {
        let r = lllm_rel(&f);
        let Some(i) = LLLM_CASES.iter().position(|c| (c.applies)(&r)) else {
            bad.push(format!("{r}: no expectation covers this file"));
            continue;
        };
        seen[i] += 1;
        let case = &LLLM_CASES[i];
        let d = doc::load_path(&f);
        if d.dialect() != case.dialect {
            bad.push(format!("{r} ({}): loads as {:?}, expected {:?}", case.what, d.dialect(), case.dialect));
            continue;
        }
        let diags = validate::validate(&d, None);
        for x in &diags {
            if x.file.is_empty() || x.line == 0 || x.column == 0 {
                bad.push(format!("{r}: a diagnostic without a position: {x:?}"));
            }
        }
        for code in case.must {
            if !diags.iter().any(|x| x.code == *code) {
                bad.push(format!("{r} ({}): no `{code}` diagnostic in\n{}", case.what, show(&diags.iter().collect::<Vec<_>>())));
            }
        }
        if let Some(allowed) = case.errors_allowed {
            let errors: Vec<&Diagnostic> = diags.iter().filter(|x| x.is_error() && !allowed.contains(&x.code.as_str())).collect();
            if !errors.is_empty() {
                bad.push(format!("{r} ({}): errors:\n{}", case.what, show(&errors)));
            }
        }
        if case.dialect == Some(Dialect::Lllm) {
            let (g, gd) = graph::lower(&d, None);
            match g {
                Some(g) => {
                    let agents = d.lllm().unwrap().effective.agents.len();
                    let j = graph::export::to_json(&g);
                    let drawn = j["nodes"].as_array().unwrap().iter().filter(|n| n["kind"] == "agent").count();
                    if drawn != agents {
                        bad.push(format!("{r}: {agents} agents, {drawn} agent nodes"));
                    }
                }
                None => bad.push(format!("{r}: no graph: {gd:?}")),
            }
        }
    }
    for (c, n) in LLLM_CASES.iter().zip(&seen) {
        if *n == 0 {
            bad.push(format!("no file is {}", c.what));
        }
    }
    assert!(bad.is_empty(), "LLLM corpus:\n{}", bad.join("\n"));
}

/// The older shapes' diagnostic names the shape and says how to migrate; an unrendered
/// template's YAML error is on a line holding a placeholder.
#[test]
fn lllm_older_shapes_say_how_to_migrate_and_templates_fail_where_the_placeholder_is() {
    for f in lllm_files().into_iter().filter(|f| lllm_rel(f).starts_with("history/")) {
        let d = doc::load_path(&f);
        let text = std::fs::read_to_string(&f).unwrap();
        let old = d.diagnostics.iter().find(|x| x.code == "lllm-old-shape").unwrap_or_else(|| panic!("{}", rel(&f)));
        assert!(old.message.contains("`agent_configs` is a mapping"), "{}: {}", rel(&f), old.message);
        assert!(old.hint.as_deref().is_some_and(|h| h.starts_with("migrate:") && h.contains("- name: vanilla")), "{old:?}");
        assert_eq!(text.lines().nth(old.line as usize - 1).unwrap().trim_end(), "agent_configs:", "{}", rel(&f));
        if text.contains("{{project_name}}") {
            let y = d.diagnostics.iter().find(|x| x.code == "yaml-syntax").unwrap_or_else(|| panic!("{}", rel(&f)));
            let line = text.lines().nth(y.line as usize - 1).unwrap();
            assert!(line.contains("{{project_name}}"), "{}: the YAML error is at {}:{} `{line}`", rel(&f), y.line, y.column);
            let p = d.diagnostics.iter().find(|x| x.code == "template-placeholder").unwrap();
            assert!(text.lines().nth(p.line as usize - 1).unwrap().contains("{{project_name}}"));
        }
    }
    let d = doc::load_str(Path::new("/x/research_writer.yaml"), "agent_group_configs:\n  researcher:\n    model_name: gpt-4o\n    system_prompt: hi\n");
    assert_eq!(d.dialect(), Some(Dialect::Lllm));
    let old = d.diagnostics.iter().find(|x| x.code == "lllm-old-shape").unwrap();
    assert!(old.message.contains("`agent_group_configs`") && old.hint.as_deref().unwrap().contains("rename `agent_group_configs` to `agent_configs`"));
    assert_eq!(d.lllm().unwrap().effective.agents[0].name, "researcher");
}

/// LLLM's merge, computed here from the files with serde_yaml (independently of the engine):
/// `base` (same folder) under the file, mappings merged, lists and scalars replaced, then
/// `global` under each agent entry.
fn lllm_merge(a: &mut Yaml, b: Yaml) {
    match (a, b) {
        (Yaml::Mapping(a), Yaml::Mapping(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(old) => lllm_merge(old, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (a, b) => *a = b,
    }
}

fn lllm_resolved(f: &Path) -> Yaml {
    let mut y = yaml_of(f);
    let base = ystr(&y, "base").map(str::to_string);
    if let Yaml::Mapping(m) = &mut y {
        m.remove("base");
    }
    match base {
        Some(b) => {
            let mut under = lllm_resolved(&f.with_file_name(format!("{b}.yaml")));
            lllm_merge(&mut under, y);
            under
        }
        None => y,
    }
}

#[test]
fn lllm_effective_configs_match_the_merge_of_the_files() {
    const KNOWN: &[&str] = &["name", "model_name", "system_prompt", "system_prompt_path", "api_type", "model_args", "max_exception_retry", "max_interrupt_steps", "max_llm_recall", "extra_settings", "proxy", "context_manager", "skills", "tools"];
    let mut checked = 0;
    for f in lllm_files().into_iter().filter(|f| { let r = lllm_rel(f); r.starts_with("main-6845bfa/") && r.contains("/configs/") }) {
        let d = doc::load_path(&f);
        let l = d.lllm().unwrap_or_else(|| panic!("{}", rel(&f)));
        let y = lllm_resolved(&f);
        let global = y.get("global").cloned().unwrap_or(Yaml::Mapping(Default::default()));
        let entries = seq(y.get("agent_configs"));
        assert_eq!(l.effective.agents.len(), entries.len(), "{}", rel(&f));
        for (a, entry) in l.effective.agents.iter().zip(entries) {
            assert_eq!(Some(a.name.as_str()), ystr(entry, "name"), "{}", rel(&f));
            let mut merged = global.clone();
            lllm_merge(&mut merged, entry.clone());
            let mut args = merged.get("model_args").cloned().unwrap_or(Yaml::Mapping(Default::default()));
            for (k, v) in merged.as_mapping().unwrap() {
                if !KNOWN.contains(&k.as_str().unwrap()) {
                    args.as_mapping_mut().unwrap().insert(k.clone(), v.clone());
                }
            }
            let want: Json = serde_json::to_value(&args).unwrap();
            let got = Json::Object(a.model_args.iter().map(|(k, v)| (k.clone(), v.to_json())).collect());
            assert_eq!(got, want, "{}: model_args of `{}`", rel(&f), a.name);
            assert_eq!(a.str("model_name"), ystr(&merged, "model_name"), "{}: `{}`", rel(&f), a.name);
            for k in ["max_exception_retry", "max_interrupt_steps"] {
                if let Some(v) = merged.get(k) {
                    assert_eq!(a.get(k).unwrap().to_json(), serde_json::to_value(v).unwrap(), "{}: {k}", rel(&f));
                }
            }
            // Every value says where it came from, a line in one of the chain's files.
            for v in a.config.values().chain(a.model_args.values()) {
                let o = v.from();
                assert!(o.section == switchyard::doc::lllm::Section::Default || (o.line > 0 && o.file.ends_with(".yaml")), "{o:?}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked}");
    // pro.yaml inherits default.yaml: a value it does not override says so.
    let pro = doc::load_path(&corpus().join("lllm/main-6845bfa/examples/code_review_service/configs/pro.yaml"));
    let l = pro.lllm().unwrap();
    assert_eq!(l.layers.len(), 2);
    let dev = doc::load_path(&corpus().join("lllm/main-6845bfa/tests/test_cases/packages/pkg_alpha/configs/development.yaml"));
    let a = &dev.lllm().unwrap().effective.agents[0];
    let m = a.get("model_name").unwrap().from();
    assert!(m.file.ends_with("pkg_alpha/configs/default.yaml") && m.line == 2, "{m:?}");
    let r = a.get("max_exception_retry").unwrap();
    assert_eq!((r.to_json(), r.from().file.ends_with("development.yaml")), (serde_json::json!(1), true));
    assert_eq!(a.get("max_interrupt_steps").unwrap().from().line, 7);
}

#[test]
fn lllm_cli_validates_and_draws_configs() {
    let pro = p("lllm/main-6845bfa/examples/code_review_service/configs/pro.yaml");
    let o = run(&["validate", &pro]);
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    let o = run(&["graph", &pro, "--format", "json"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let j: Json = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(j["dialect"], "lllm");
    let edges: BTreeSet<(String, String)> = j["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["from"].as_str().unwrap().to_string(), e["to"].as_str().unwrap().to_string()))
        .collect();
    let want: BTreeSet<(String, String)> = [("base:default", "global"), ("global", "analyzer"), ("global", "synthesizer")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(edges, want);
    let o = run(&["validate", &p("lllm/history/2025-11-25_ba58ecd/template/default.yaml")]);
    assert_eq!(o.code, Some(1));
    assert!(o.stdout.contains("lllm-old-shape"), "{}", o.stdout);
}
