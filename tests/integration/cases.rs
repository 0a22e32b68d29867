//! Data-driven tests: every input under `tests/cases/` and its expected output beside it.
//!
//! Inputs are `tests/cases/**/*.yaml` files and agent directories `tests/cases/**/<name>.agent/`
//! (holding `graph.yaml` or `config.yaml`). Files and directories whose name starts with `_` are
//! helpers (sub-agents, prompt files) and are not inputs themselves.
//!
//! Beside each input, `<name>.expect` holds what `validate` reports, one diagnostic per line
//! (`severity code line:col message`, the hint on the next line indented), followed by the graph
//! JSON of each agent the document lowers to. Run with `UPDATE_EXPECT=1` to rewrite the expected
//! files from what the code produces today, then review the diff.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use switchyard::{doc, graph, validate};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn cases_dir() -> PathBuf {
    Path::new(ROOT).join("tests/cases")
}

/// Every input under `dir`, sorted.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            if name.ends_with(".agent") {
                out.push(p);
            } else {
                collect(&p, out);
            }
        } else if name.ends_with(".yaml") {
            out.push(p);
        }
    }
}

fn expect_path(input: &Path) -> PathBuf {
    let name = input.file_name().unwrap().to_str().unwrap();
    let stem = name
        .strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".agent"))
        .unwrap_or(name);
    input.with_file_name(format!("{stem}.expect"))
}

/// Make absolute paths under the repository relative, so expected files are stable anywhere.
fn stable(s: &str) -> String {
    let root = format!("{ROOT}/");
    s.replace(&root, "").replace(ROOT, ".")
}

/// What the engine says about one input, in the `.expect` format.
fn render(input: &Path) -> String {
    let d = doc::load_path(input);
    let diags = validate::validate(&d, None);
    let main_file = d.path.display().to_string();
    let mut out = String::new();
    for x in &diags {
        let file = if x.file.is_empty() || x.file == main_file {
            String::new()
        } else {
            format!("{}:", stable(&x.file))
        };
        let _ = writeln!(
            out,
            "{} {} {}{}:{} {}",
            x.severity.as_str(),
            x.code,
            file,
            x.line,
            x.column,
            stable(&x.message)
        );
        if let Some(h) = &x.hint {
            let _ = writeln!(out, "    hint: {}", stable(h));
        }
    }
    if diags.is_empty() {
        out.push_str("(no diagnostics)\n");
    }
    let names = graph::agent_names(&d);
    let picks: Vec<Option<&str>> = if names.len() > 1 {
        names.iter().map(|n| Some(n.as_str())).collect()
    } else {
        vec![None]
    };
    for pick in picks {
        let (g, _) = graph::lower(&d, pick);
        if let Some(g) = g {
            let json = serde_json::to_string_pretty(&graph::export::to_json(&g)).unwrap();
            let _ = writeln!(out, "--- graph {}", g.agent);
            out.push_str(&stable(&json));
            out.push('\n');
        }
    }
    out
}

/// A small line diff (LCS), `-` expected / `+` actual, with a little context.
fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(('+', b[j]));
            j += 1;
        } else {
            ops.push(('-', a[i]));
            i += 1;
        }
    }
    const CONTEXT: usize = 2;
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, (c, _))| *c != ' ')
        .map(|(k, _)| k)
        .collect();
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    for (k, (c, line)) in ops.iter().enumerate() {
        let near = changed.iter().any(|&x| x.abs_diff(k) <= CONTEXT);
        if !near {
            continue;
        }
        if last_shown.is_some_and(|l| l + 1 < k) {
            out.push_str("   ...\n");
        }
        let _ = writeln!(out, "  {c} {line}");
        last_shown = Some(k);
    }
    out
}

/// The cases use these names for environment interpolation: pin them down. Every test of this
/// binary calls this before loading anything, so no thread reads the environment meanwhile.
fn pin_environment() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: the other tests of this binary wait on `ONCE` before touching the environment.
        unsafe {
            std::env::set_var("SWITCHYARD_CASE_PROVIDER", "anthropic");
            std::env::remove_var("SWITCHYARD_CASE_MODEL");
            std::env::remove_var("NOPE");
        }
    });
}

#[test]
fn data_driven_cases() {
    pin_environment();
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v != "0" && !v.is_empty());
    let mut inputs = Vec::new();
    collect(&cases_dir(), &mut inputs);
    assert!(
        inputs.len() >= 30,
        "expected the seeded cases under tests/cases, found {}",
        inputs.len()
    );

    let mut failures = Vec::new();
    let mut updated = Vec::new();
    for input in &inputs {
        let rel = stable(&input.display().to_string());
        let actual = render(input);
        let exp_path = expect_path(input);
        let expected = std::fs::read_to_string(&exp_path).ok();
        if expected.as_deref() == Some(actual.as_str()) {
            continue;
        }
        if update {
            std::fs::write(&exp_path, &actual)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", exp_path.display()));
            updated.push(stable(&exp_path.display().to_string()));
            continue;
        }
        match expected {
            None => failures.push(format!(
                "{rel}: no expected file {}",
                stable(&exp_path.display().to_string())
            )),
            Some(exp) => failures.push(format!(
                "{rel}: output differs (- expected, + actual)\n{}",
                diff(&exp, &actual)
            )),
        }
    }
    // Expected files without an input are stale.
    let mut stale = Vec::new();
    let mut all = Vec::new();
    fn expects(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                expects(&p, out);
            } else if p.extension().is_some_and(|x| x == "expect") {
                out.push(p);
            }
        }
    }
    expects(&cases_dir(), &mut all);
    for e in all {
        if !inputs.iter().any(|i| expect_path(i) == e) {
            stale.push(stable(&e.display().to_string()));
        }
    }

    if update {
        for u in &updated {
            println!("updated {u}");
        }
        println!(
            "{} of {} expected files updated",
            updated.len(),
            inputs.len()
        );
    }
    assert!(
        stale.is_empty(),
        "expected files without an input (delete them): {stale:?}"
    );
    if !failures.is_empty() {
        panic!(
            "{} of {} cases differ from their expected files:\n\n{}\n\nIf the new output is right, run `UPDATE_EXPECT=1 cargo test --test cases` and review the diff.",
            failures.len(),
            inputs.len(),
            failures.join("\n\n")
        );
    }
    println!("{} cases match", inputs.len());
}

/// CEL syntax errors point inside the expression, whatever the scalar style. Kept apart from the
/// expected files so that regenerating them cannot bless a wrong position.
#[test]
fn cel_errors_point_inside_the_expression() {
    let cases: &[(&str, u32, u32, &str)] = &[
        // literal block `|`: the `*` on the third line of the block
        ("sherma/cel_syntax_literal.yaml", 20, 21, "'*'"),
        // folded block `>`: the `,` on the second line of the block
        ("sherma/cel_syntax_folded.yaml", 19, 34, "','"),
        // plain scalar in a branch condition: the second `>`
        ("sherma/cel_syntax_folded.yaml", 24, 39, "'>'"),
        // double-quoted scalar with `\"` escapes before the error: the `)`
        ("sherma/cel_syntax_quoted.yaml", 18, 53, "')'"),
        // single-quoted scalar with `''` escapes, error at the end: just before the closing quote
        ("sherma/cel_syntax_quoted.yaml", 19, 37, "end of expression"),
    ];
    pin_environment();
    let mut wrong = Vec::new();
    for (file, line, col, what) in cases {
        let path = cases_dir().join(file);
        let d = doc::load_path(&path);
        let diags = validate::validate(&d, None);
        let cel: Vec<_> = diags
            .iter()
            .filter(|x| x.code == "cel-syntax" && x.message.contains(what))
            .collect();
        if !cel.iter().any(|x| x.line == *line && x.column == *col) {
            let got: Vec<String> = cel
                .iter()
                .map(|x| format!("{}:{} {}", x.line, x.column, x.message))
                .collect();
            wrong.push(format!(
                "{file}: expected cel-syntax ({what}) at {line}:{col}, got {got:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "CEL error positions:\n{}",
        wrong.join("\n")
    );
}

/// sherma interpolates `${NAME}` into every string value before it validates the file
/// (reference/sherma.md §13), so checks apply to the interpolated value: with
/// `SWITCHYARD_CASE_PROVIDER=anthropic`, `provider: ${SWITCHYARD_CASE_PROVIDER}` is valid.
#[test]
fn environment_is_interpolated_before_schema_checks() {
    pin_environment();
    let path = cases_dir().join("sherma/env_interpolation.yaml");
    let d = doc::load_path(&path);
    let diags = validate::validate(&d, None);
    let provider: Vec<String> = diags
        .iter()
        .filter(|x| x.line == 6)
        .map(|x| format!("{} {}:{} {}", x.code, x.line, x.column, x.message))
        .collect();
    assert!(
        provider.is_empty(),
        "provider: ${{SWITCHYARD_CASE_PROVIDER}} (= anthropic) is reported: {provider:?}"
    );
    let missing: Vec<_> = diags.iter().filter(|x| x.code == "env-missing").collect();
    assert_eq!(
        missing.len(),
        1,
        "exactly one missing variable (NOPE): {diags:#?}"
    );
    assert_eq!((missing[0].line, missing[0].column), (9, 17));
}

/// coyote 0.10.3's validator runs 22 checks; `tests/cases/loki/upstream/` holds a failing and a
/// passing file for each (`NN_<check>_fail.yaml` / `NN_<check>_pass.yaml`): the failing file
/// reports something, the passing one nothing (their `.expect` files pin the exact output).
#[test]
fn every_upstream_loki_check_has_a_failing_and_a_passing_case() {
    const CHECKS: [&str; 22] = [
        "references", "cycles", "reachability", "terminal_nodes", "scripts", "agents",
        "approval_routes", "rag", "llm_nodes", "llm_skills", "max_attempts", "fallback_capture",
        "output_schema_properties", "max_concurrency", "max_concurrency_template",
        "orchestration_limits", "timeouts", "variable_shadowing", "map_subgraphs",
        "parallel_user_interaction", "parallel_writes", "parallel_reads",
    ];
    let dir = cases_dir().join("loki/upstream");
    for (i, check) in CHECKS.iter().enumerate() {
        for (side, want_diags) in [("fail", true), ("pass", false)] {
            let p = dir.join(format!("{:02}_{check}_{side}.yaml", i + 1));
            let d = doc::load_path(&p);
            assert!(!d.io_error, "{} is missing", p.display());
            let diags = validate::validate(&d, None);
            assert_eq!(!diags.is_empty(), want_diags, "{}: {diags:#?}", p.display());
        }
    }
}
