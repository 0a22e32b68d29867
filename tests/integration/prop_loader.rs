//! Property: no input makes the loader, the validator, lowering or the exports panic.
//!
//! Three generators, 12,000 cases in all per run (a few seconds):
//! - arbitrary bytes;
//! - YAML-ish text from a small grammar of keys, values and indentation that mixes both
//!   dialects' vocabulary, so the dialect-specific code is reached, not just the YAML parser;
//! - real agent files from `tests/cases/` with a random splice (cut, duplicate, insert a token).
//!
//! Each input is loaded both as a sherma file (`agent.yaml`) and as a Loki `graph.yaml`.

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use std::path::{Path, PathBuf};
use switchyard::{doc, graph, validate};

/// Load, validate, lower every agent and export each graph three ways. Panics propagate.
fn exercise(bytes: &[u8]) {
    // A base directory that does not exist: relative paths in generated files resolve nowhere.
    for name in ["agent.yaml", "graph.yaml"] {
        let path = Path::new("/nonexistent-switchyard-prop").join(name);
        let d = doc::load_bytes(&path, bytes);
        let _ = validate::validate(&d, None);
        let mut picks: Vec<Option<String>> = vec![None];
        picks.extend(graph::agent_names(&d).into_iter().take(4).map(Some));
        for pick in &picks {
            if pick.is_some() {
                let _ = validate::validate(&d, pick.as_deref());
            }
            if let (Some(g), _) = graph::lower(&d, pick.as_deref()) {
                let _ = graph::export::to_json(&g);
                let _ = graph::export::to_mermaid(&g);
                let _ = graph::export::to_dot(&g);
            }
        }
    }
}

const KEYS: &[&str] = &[
    // sherma
    "manifest_version",
    "agents",
    "prompts",
    "llms",
    "tools",
    "skills",
    "sub_agents",
    "hooks",
    "mcp_servers",
    "default_llm",
    "checkpointer",
    "data",
    "state",
    "fields",
    "graph",
    "nodes",
    "edges",
    "entry_point",
    "name",
    "type",
    "args",
    "on_error",
    "retry",
    "max_attempts",
    "delay",
    "max_delay",
    "strategy",
    "fallback",
    "source",
    "target",
    "branches",
    "condition",
    "default",
    "values",
    "expression",
    "value",
    "instructions",
    "instructions_path",
    "yaml_path",
    "skill_card_path",
    "id",
    "version",
    "model_name",
    "provider",
    "llm",
    "prompt",
    "role",
    "content",
    "state_updates",
    "response_format",
    "use_tools_from_registry",
    "use_tools_from_loaded_skills",
    "use_sub_agents_as_tools",
    "skill_ids",
    "agent",
    "input",
    "metadata",
    "import_path",
    "url",
    "transport",
    "langgraph_config",
    "recursion_limit",
    // Loki
    "start",
    "next",
    "routes",
    "on_other",
    "options",
    "question",
    "script",
    "over",
    "as",
    "branch",
    "collect_into",
    "output_key",
    "reducers",
    "settings",
    "initial_state",
    "output",
    "validation",
    "x-next",
    "timeout",
    "max_concurrency",
    "max_loop_iterations",
    "output_schema",
    "documents",
    "query",
    "model",
    "temperature",
    "global_tools",
    "variables",
    "enabled_skills",
    "description",
    // node names and oddities
    "a",
    "b",
    "c",
    "__start__",
    "__end__",
    "<<",
    "? [k]",
    "\"quoted key\"",
    "é",
    "1",
    "",
];

const VALUES: &[&str] = &[
    "",
    "1",
    "2",
    "0",
    "-1",
    "\"1.0\"",
    "1.0",
    "99999999999999999999",
    ".nan",
    "-.inf",
    "~",
    "null",
    "true",
    "no",
    "call_llm",
    "tool_node",
    "call_agent",
    "data_transform",
    "set_state",
    "interrupt",
    "load_skills",
    "custom",
    "llm",
    "script",
    "agent",
    "approval",
    "input",
    "end",
    "map",
    "rag",
    "append",
    "concat",
    "a",
    "b",
    "c",
    "__start__",
    "__end__",
    "[a, b]",
    "[a, [b]]",
    "{a: 1}",
    "{}",
    "[]",
    "|",
    ">",
    "|-",
    ">+2",
    "&x",
    "*x",
    "&y [1, *y]",
    "!!str 3",
    "!tag x",
    "'{{state.x}}'",
    "\"{{ output }}\"",
    "\"{{\"",
    "'{{a..b}}'",
    "state.x + 1",
    "'{\"a\": state.a}'",
    "size(state.messages) > 1",
    "default(state.a, 1)",
    "'(('",
    "\"1 +\"",
    "has_tool_calls",
    "has_error_fallback",
    "'prompts[\"p\"][\"instructions\"]'",
    "${NOPE}",
    "${X:-d}",
    "$$",
    "scripts/x.sh",
    "./missing.md",
    "/etc",
    "..",
    "\"unterminated",
    "'also",
    "[",
    "{",
    "}",
    "]",
    "- x",
    "\"\\u00e9\\q\"",
    "\t",
    "@x",
    "`x`",
    "len(input) > 3",
    "\"mcp:srv\"",
    "- {name: a, type: end}",
];

/// One line of YAML-ish text.
fn line() -> impl Strategy<Value = String> {
    let indent = prop_oneof![Just(0usize), Just(2), Just(4), Just(6), Just(8), 0usize..12];
    let key = prop::sample::select(KEYS);
    let value = prop::sample::select(VALUES);
    prop_oneof![
        8 => (indent.clone(), any::<bool>(), key, value).prop_map(|(i, dash, k, v)| {
            format!("{}{}{}: {}", " ".repeat(i), if dash { "- " } else { "" }, k, v)
        }),
        2 => (indent.clone(), prop::sample::select(VALUES)).prop_map(|(i, v)| format!("{}- {}", " ".repeat(i), v)),
        1 => (indent, prop::sample::select(VALUES)).prop_map(|(i, v)| format!("{}{}", " ".repeat(i), v)),
        1 => Just("# comment".to_string()),
        1 => Just("---".to_string()),
    ]
}

fn yamlish() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(line(), 1..40),
        prop::sample::select(&["\n", "\r\n"][..]),
        any::<bool>(),
    )
        .prop_map(|(lines, nl, header)| {
            let mut s = String::new();
            if header {
                // Make one dialect likely, so its model builder and validator run.
                s.push_str(if lines.len() % 2 == 0 {
                    "manifest_version: 1\n"
                } else {
                    "name: g\nversion: \"1.0\"\nstart: a\n"
                });
            }
            s.push_str(&lines.join(nl));
            s.into_bytes()
        })
}

/// Agent files to mutate: the data-driven cases (valid and invalid, both dialects).
fn seed_files() -> Vec<Vec<u8>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases"),
        &mut paths,
    );
    paths.sort();
    let files: Vec<Vec<u8>> = paths.iter().filter_map(|p| std::fs::read(p).ok()).collect();
    assert!(files.len() >= 10, "seed files under tests/cases");
    files
}

#[derive(Debug, Clone)]
enum Splice {
    Cut { at: usize, len: usize },
    Duplicate { at: usize, len: usize },
    Insert { at: usize, token: &'static str },
    Truncate { at: usize },
    FlipByte { at: usize, byte: u8 },
}

fn apply(mut b: Vec<u8>, edits: &[Splice]) -> Vec<u8> {
    for e in edits {
        let n = b.len().max(1);
        match *e {
            Splice::Cut { at, len } => {
                let s = at % n;
                let end = (s + len).min(b.len());
                if s < end {
                    b.drain(s..end);
                }
            }
            Splice::Duplicate { at, len } => {
                let s = (at % n).min(b.len());
                let end = (s + len).min(b.len());
                let chunk = b[s..end].to_vec();
                b.splice(s..s, chunk);
            }
            Splice::Insert { at, token } => {
                let s = (at % n).min(b.len());
                b.splice(s..s, token.bytes());
            }
            Splice::Truncate { at } => b.truncate(at % n),
            Splice::FlipByte { at, byte } => {
                if !b.is_empty() {
                    let i = at % b.len();
                    b[i] = byte;
                }
            }
        }
    }
    b
}

fn splice() -> impl Strategy<Value = Splice> {
    let tokens = prop::sample::select(
        &[
            "\n", "\t", ":", ": ", "- ", "[", "]", "{", "}", "'", "\"", "|", ">", "&a ", "*a", "#",
            "\n  ", "\n    - ", "{{", "}}", "${", "$$", "(", ")", "\\", "\u{feff}", "\0", "é",
            "\r", "<<: *a\n", "---\n", "? ",
        ][..],
    );
    prop_oneof![
        (any::<usize>(), 0usize..64).prop_map(|(at, len)| Splice::Cut { at, len }),
        (any::<usize>(), 0usize..64).prop_map(|(at, len)| Splice::Duplicate { at, len }),
        (any::<usize>(), tokens).prop_map(|(at, token)| Splice::Insert { at, token }),
        any::<usize>().prop_map(|at| Splice::Truncate { at }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Splice::FlipByte { at, byte }),
    ]
}

/// `PROPTEST_CASES` overrides the per-test case count (for long local runs).
fn runner(cases: u32) -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    TestRunner::new(Config {
        cases,
        max_shrink_iters: 2_000,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..Config::default()
    })
}

#[test]
fn arbitrary_bytes_never_panic() {
    runner(3_000)
        .run(&prop::collection::vec(any::<u8>(), 0..600), |bytes| {
            exercise(&bytes);
            Ok(())
        })
        .unwrap();
}

#[test]
fn yamlish_text_never_panics() {
    runner(5_000)
        .run(&yamlish(), |bytes| {
            exercise(&bytes);
            Ok(())
        })
        .unwrap();
}

#[test]
fn mutated_agent_files_never_panic() {
    let seeds = seed_files();
    let n = seeds.len();
    runner(4_000)
        .run(
            &(0..n, prop::collection::vec(splice(), 1..6)),
            |(i, edits)| {
                exercise(&apply(seeds[i].clone(), &edits));
                Ok(())
            },
        )
        .unwrap();
}
