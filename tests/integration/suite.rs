//! Agent test suites through the real CLI (`switchyard test`): the example agents' suites pass
//! offline; `tests/suites/` holds suites that must pass and suites that must fail — one case
//! per kind of expectation, each breaking exactly the expectation on its line marked `# fails`
//! — checked by exit code and by the JSON and JUnit reports; a bad suite file gives positioned
//! diagnostics (`# !code` markers); routing coverage is checked on suites whose taken branches
//! are known, in both dialects. Every run uses a trust list in a temp file
//! (`SWITCHYARD_TRUST`), so the user's own list is never touched.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `switchyard test ARGS` from the repository root, with a private trust list.
fn test(tmp: &TempDir, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("test")
        .args(args)
        .current_dir(root())
        .env("SWITCHYARD_TRUST", tmp.path().join("trust.json"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `test ARGS --json FILE`: the exit code and the JSON report.
fn json_report(tmp: &TempDir, args: &[&str]) -> (i32, Value, String) {
    let file = tmp.path().join(format!("report-{}.json", args.join("_").replace(['/', ' '], "_")));
    let mut all: Vec<&str> = args.to_vec();
    let f = file.display().to_string();
    all.extend(["--json", f.as_str()]);
    let o = test(tmp, &all);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{}", text(&o)));
    (o.status.code().unwrap_or(-1), report, text(&o))
}

fn cases(report: &Value) -> Vec<&Value> {
    report["suites"].as_array().unwrap().iter().flat_map(|s| s["cases"].as_array().unwrap()).collect()
}

#[test]
fn the_example_agents_suites_pass_offline() {
    let tmp = TempDir::new("suite-examples");
    let (code, report, out) = json_report(&tmp, &["agents/", "--trust"]);
    assert_eq!(code, 0, "{out}");
    let t = &report["totals"];
    assert_eq!(t["failed"], 0, "{out}");
    assert_eq!(t["errors"], 0, "{out}");
    assert!(t["passed"].as_u64().unwrap() >= 7, "{out}");
    assert_eq!(t["suites"], 2, "both examples ship a suite: {out}");
    assert!(out.contains("test result: ok."), "{out}");
}

#[test]
fn running_a_suite_needs_its_agents_folder_trusted() {
    let tmp = TempDir::new("suite-trust");
    let o = test(&tmp, &["tests/suites/sherma/router.tests.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("is not trusted") && out.contains("--trust"), "{out}");
    // Trusted, it runs.
    let t = Command::new(BIN)
        .args(["trust", "tests/suites/sherma"])
        .current_dir(root())
        .env("SWITCHYARD_TRUST", tmp.path().join("trust.json"))
        .output()
        .unwrap();
    assert!(t.status.success(), "{}", text(&t));
    let o = test(&tmp, &["tests/suites/sherma/router.tests.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn passing_suites_pass_in_both_dialects() {
    let tmp = TempDir::new("suite-pass");
    for suite in [
        "tests/suites/sherma/router.tests.yaml",
        "tests/suites/sherma/router-replies.tests.yaml",
        "tests/suites/loki/triage/triage.tests.yaml",
        // Its case's timeout stops the run and the script it waits for.
        "tests/suites/loki/slow/slow.tests.yaml",
    ] {
        let (code, report, out) = json_report(&tmp, &[suite, "--trust"]);
        assert_eq!(code, 0, "{suite}: {out}");
        for c in cases(&report) {
            assert_eq!(c["outcome"], "passed", "{suite}: {c}");
            assert!(c["run"]["failures"].as_array().unwrap().is_empty(), "{c}");
        }
    }
}

/// The lines of `file` holding `marker`, 1-based.
fn marked_lines(file: &Path, marker: &str) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().ends_with(marker))
        .map(|(i, _)| i as u32 + 1)
        .collect()
}

#[test]
fn failing_suites_fail_at_each_kind_of_expectation() {
    let tmp = TempDir::new("suite-fail");
    let mut kinds = std::collections::BTreeSet::new();
    for suite in ["tests/suites/sherma/router-fails.tests.yaml", "tests/suites/loki/triage/triage-fails.tests.yaml"] {
        let junit = tmp.path().join("junit.xml");
        let j = junit.display().to_string();
        let (code, report, out) = json_report(&tmp, &[suite, "--trust", "--junit", &j]);
        assert_eq!(code, 1, "{suite}: a failing suite exits 1: {out}");
        let lines = marked_lines(&root().join(suite), "# fails");
        let cs = cases(&report);
        assert_eq!(cs.len(), lines.len(), "{suite}: one `# fails` line per case");
        for (c, line) in cs.iter().zip(&lines) {
            let name = c["name"].as_str().unwrap();
            assert_eq!(c["outcome"], "failed", "{suite}: case `{name}` must fail: {c}");
            let f = &c["run"]["failures"][0];
            assert_eq!(c["run"]["failures"].as_array().unwrap().len(), 1, "{suite}: `{name}` breaks one expectation: {c}");
            assert_eq!(f["line"], *line, "{suite}: `{name}` fails at its marked line: {f}");
            assert!(f["column"].as_u64().unwrap() >= 1);
            assert_eq!(f["file"], suite);
            // The case is named after the expectation it breaks (`state cel` breaks a `state.`
            // one; `pass_rate` an `output` in too many of its runs).
            let key = f["expectation"].as_str().unwrap();
            let kind = name.split(' ').next().unwrap();
            if kind != "pass_rate" {
                assert!(key.starts_with(kind), "{suite}: `{name}` failed `{key}`");
            }
            kinds.insert(key.split('.').next().unwrap().to_string());
            // And the report says where, compiler-style.
            assert!(out.contains(&format!("{suite}:{line}:")), "{suite}: the report points at line {line}:\n{out}");
        }
        // The JUnit report: every case a <testcase> with a <failure> naming the position.
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"), "{xml}");
        assert!(xml.contains(&format!("failures=\"{}\"", lines.len())), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), lines.len(), "{xml}");
        assert_eq!(xml.matches("<failure ").count(), lines.len(), "{xml}");
        for line in &lines {
            assert!(xml.contains(&format!("{suite}:{line}:")), "{suite}: JUnit names line {line}:\n{xml}");
        }
    }
    let want: std::collections::BTreeSet<String> = [
        "status",
        "nodes",
        "nodes_contain",
        "nodes_not_contain",
        "edges",
        "edges_not_taken",
        "state",
        "output",
        "error",
        "max_steps",
        "max_tokens",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(kinds, want, "every kind of expectation has a failing case");
}

#[test]
fn the_pass_rate_counts_runs() {
    let tmp = TempDir::new("suite-rate");
    let (code, report, out) = json_report(&tmp, &["tests/suites/loki/triage/triage-fails.tests.yaml", "--trust", "--filter", "pass_rate"]);
    assert_eq!(code, 1, "{out}");
    let cs = cases(&report);
    assert_eq!(cs.len(), 1, "--filter keeps one case: {out}");
    assert_eq!(cs[0]["runs"], 3);
    assert_eq!(cs[0]["passed_runs"], 0);
    assert!(cs[0]["message"].as_str().unwrap().contains("0 of 3 runs passed"), "{out}");
}

#[test]
fn a_bad_suite_file_is_reported_at_its_lines() {
    let tmp = TempDir::new("suite-bad");
    let file = root().join("tests/suites/bad/bad.tests.yaml");
    let (code, report, out) = json_report(&tmp, &["tests/suites/bad", "--trust"]);
    assert_eq!(code, 2, "a suite with errors runs nothing and exits 2: {out}");
    assert!(cases(&report).is_empty(), "{out}");
    let mut want = std::collections::BTreeSet::new();
    for (i, l) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
        if let Some((_, m)) = l.split_once("  # !") {
            for code in m.split_whitespace() {
                want.insert((i as u64 + 1, code.trim_start_matches('!').to_string()));
            }
        }
    }
    let got: std::collections::BTreeSet<(u64, String)> = report["suites"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            assert!(d["column"].as_u64().unwrap() >= 1, "{d}");
            (d["line"].as_u64().unwrap(), d["code"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(got, want, "{out}");
    assert!(out.contains("did you mean `refund`?") && out.contains("did you mean `status`?"), "{out}");
    // Compiler-style: the file, line and column, and the source line.
    assert!(out.contains("tests/suites/bad/bad.tests.yaml:8:25"), "{out}");
}

#[test]
fn no_suite_and_missing_paths_exit_2() {
    let tmp = TempDir::new("suite-none");
    let o = test(&tmp, &["tests/suites/does-not-exist"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = test(&tmp, &["crates/suite/src"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no test suites"), "{}", text(&o));
}

/// Coverage of `agent` in the JSON report: node id → count, `from -> to [label]` → count.
fn coverage(report: &Value) -> (Vec<(String, u64)>, Vec<(String, u64)>) {
    let c = &report["suites"][0]["coverage"];
    let nodes =
        c["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap().to_string(), n["count"].as_u64().unwrap())).collect();
    let edges = c["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let label = e["label"].as_str().map(|l| format!(" [{l}]")).unwrap_or_default();
            (format!("{} -> {}{label}", e["from"].as_str().unwrap(), e["to"].as_str().unwrap()), e["count"].as_u64().unwrap())
        })
        .collect();
    (nodes, edges)
}

#[test]
fn coverage_counts_the_branches_a_sherma_suite_takes() {
    let tmp = TempDir::new("suite-cov-sherma");
    let (code, report, out) = json_report(&tmp, &["tests/suites/sherma/router.tests.yaml", "--trust", "--coverage"]);
    assert_eq!(code, 0, "{out}");
    let (nodes, edges) = coverage(&report);
    assert_eq!(
        nodes,
        [("__start__", 2), ("classify", 2), ("refund", 1), ("bug", 1), ("other", 0), ("__end__", 2)]
            .map(|(a, b)| (a.to_string(), b))
            .to_vec()
    );
    assert_eq!(
        edges,
        [
            ("__start__ -> classify", 2),
            ("classify -> refund [state.kind == \"refund\"]", 1),
            ("classify -> bug [state.kind == \"bug\"]", 1),
            ("classify -> other [default]", 0),
            ("refund -> __end__", 1),
            ("bug -> __end__", 1),
            ("other -> __end__", 0),
        ]
        .map(|(a, b)| (a.to_string(), b))
        .to_vec()
    );
    let c = &report["suites"][0]["coverage"];
    assert_eq!((c["runs"].as_u64(), c["nodes_covered"].as_u64(), c["edges_covered"].as_u64()), (Some(2), Some(5), Some(5)));
    // The text lists what never ran.
    assert!(out.contains("5/6 nodes ran, 5/7 edges taken"), "{out}");
    assert!(out.lines().any(|l| l.contains("classify -> other (default)") && l.ends_with("never taken")), "{out}");
    assert!(out.lines().any(|l| l.contains("node other") && l.ends_with("never ran")), "{out}");
}

#[test]
fn coverage_counts_the_routes_a_loki_suite_takes() {
    let tmp = TempDir::new("suite-cov-loki");
    let (code, report, out) = json_report(&tmp, &["tests/suites/loki/triage/triage.tests.yaml", "--trust", "--coverage"]);
    assert_eq!(code, 0, "{out}");
    let (nodes, edges) = coverage(&report);
    // Three runs: high (ask, page), other (ask, ticket), unanswered (asks, never enters).
    assert_eq!(nodes, [("ask", 2), ("page", 1), ("ticket", 1)].map(|(a, b)| (a.to_string(), b)).to_vec(), "{out}");
    assert_eq!(
        edges,
        [("ask -> page [high]", 1), ("ask -> ticket [low]", 0), ("ask -> ticket [other]", 1)].map(|(a, b)| (a.to_string(), b)).to_vec(),
        "{out}"
    );
    assert!(out.lines().any(|l| l.contains("ask -> ticket (route) [low]") && l.ends_with("never taken")), "{out}");
}

#[test]
fn coverage_of_the_examples_covers_every_edge_of_release_gate() {
    let tmp = TempDir::new("suite-cov-examples");
    let (code, report, out) = json_report(&tmp, &["agents/release-gate", "--trust"]);
    assert_eq!(code, 0, "{out}");
    let c = &report["suites"][0]["coverage"];
    assert_eq!(c["edges_covered"].as_u64(), Some(c["edges"].as_array().unwrap().len() as u64), "{out}");
    assert_eq!(c["nodes_covered"], 8, "{out}");
}

/// Live cases are skipped without `--live`; with it (the `openai` provider pointed at a fake
/// server on 127.0.0.1) a repeated case passes on its pass rate, and priced calls count against
/// `max_cost_usd`.
#[test]
fn live_cases_repeat_with_a_pass_rate_and_a_cost_budget() {
    use test_support::fake_llm::{FakeLlm, openai_text};
    let tmp = TempDir::new("suite-live");
    let suite = "tests/suites/live/router-live.tests.yaml";
    let (code, report, out) = json_report(&tmp, &[suite, "--trust"]);
    assert_eq!(code, 0, "skipped cases do not fail: {out}");
    assert_eq!(report["totals"]["skipped"], 2, "{out}");
    assert!(out.contains("SKIP") && out.contains("--live"), "{out}");

    let fake = FakeLlm::start();
    for answer in ["refund", "bug", "refund", "refund"] {
        fake.push(openai_text(&[answer], std::time::Duration::ZERO));
    }
    let file = tmp.path().join("live.json");
    let o = Command::new(BIN)
        .args(["test", suite, "--trust", "--live", "-j", "1", "--json"])
        .arg(&file)
        .current_dir(root())
        .env("SWITCHYARD_TRUST", tmp.path().join("trust.json"))
        .env("SWITCHYARD_PROVIDERS", tmp.path().join("no-providers.yaml"))
        .env("SWITCHYARD_KEYRING", "off")
        .env("OPENAI_BASE_URL", fake.base())
        .env("OPENAI_API_KEY", "test-key")
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let cs = cases(&report);
    assert_eq!(
        (cs[0]["outcome"].as_str(), cs[0]["runs"].as_u64(), cs[0]["passed_runs"].as_u64()),
        (Some("passed"), Some(3), Some(2)),
        "{out}"
    );
    assert_eq!(cs[1]["outcome"], "failed", "{out}");
    let f = &cs[1]["run"]["failures"][0];
    assert_eq!(f["expectation"], "max_cost_usd", "{out}");
    assert_eq!(f["line"], marked_lines(&root().join(suite), "# fails")[0], "{out}");
    assert!(cs[1]["run"]["cost_usd"].as_f64().unwrap() > 0.0, "a live call is priced: {out}");
    assert_eq!(fake.requests().len(), 4, "{out}");
}

/// A Loki map's items run in nested runs (`<run>/<map>/<item>`): each counts for the lane's
/// nodes and for the map's branch edge.
#[test]
fn coverage_counts_each_item_of_a_loki_map() {
    let tmp = TempDir::new("suite-cov-map");
    let (code, report, out) = json_report(&tmp, &["tests/suites/loki/fanout", "--trust"]);
    assert_eq!(code, 0, "{out}");
    let (nodes, edges) = coverage(&report);
    assert_eq!(nodes, [("each", 1), ("worker", 3), ("done", 1)].map(|(a, b)| (a.to_string(), b)).to_vec(), "{out}");
    assert_eq!(edges, [("each -> worker [each]", 3), ("each -> done", 1)].map(|(a, b)| (a.to_string(), b)).to_vec(), "{out}");
}

/// `--traces DIR`: each failing run's JSONL trace, named after the suite and the case, which
/// the debugger opens (the report names it, with the step that failed).
#[test]
fn failing_runs_leave_their_traces() {
    let tmp = TempDir::new("suite-traces");
    let dir = tmp.path().join("traces");
    let d = dir.display().to_string();
    let (code, report, out) =
        json_report(&tmp, &["tests/suites/sherma/router-fails.tests.yaml", "--trust", "--filter", "nodes_not", "--traces", &d]);
    assert_eq!(code, 1, "{out}");
    let c = cases(&report)[0];
    let trace = c["run"]["trace"].as_str().unwrap_or_else(|| panic!("no trace: {c}"));
    assert_eq!(Path::new(trace), dir.join("router-fails--nodes_not_contain.jsonl"));
    assert!(out.contains(&format!("trace: {trace} (step 2)")), "{out}");
    let events: Vec<Value> = std::fs::read_to_string(trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events[0]["event"], "run_started");
    assert_eq!(events.last().unwrap()["event"], "run_finished");
    // The failing step is where `refund` ran.
    assert!(events.iter().any(|e| e["event"] == "node_enter" && e["step"] == 2 && e["node"] == "refund"), "{events:?}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(trace).unwrap().permissions().mode() & 0o077, 0, "a trace is private");
    // Passing runs leave none.
    let (_, _, _) = json_report(&tmp, &["tests/suites/sherma/router.tests.yaml", "--trust", "--traces", &d]);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}
