//! Coyote bundles (issue 28 item 5) through the CLI: `switchyard validate BUNDLE_DIR` checks
//! every agent of a copy of coyote 0.10.3's bundled assets (the layout `coyote --install`
//! reads: `agents/<name>/{graph.yaml|config.yaml, scripts/, tools.sh}`), with each agent's
//! diagnostics, a line per bundle and per agent, and exit 1 when any is an error.

use std::path::Path;
use std::process::Command;
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

/// A copy of `coyote-0.10.3/assets` (agents, functions, skills) in a temp dir.
fn corpus_copy() -> TempDir {
    let src = switchyard::testdata::conformance_dir().join("loki/coyote-0.10.3/assets");
    assert!(src.is_dir(), "conformance corpus missing: {} (set SWITCHYARD_CONFORMANCE)", src.display());
    let t = TempDir::new("bundle");
    let status = Command::new("cp").arg("-r").arg(&src).arg(t.join("bundle")).status().unwrap();
    assert!(status.success());
    t
}

fn validate(dir: &Path, extra: &[&str], home: &Path) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .arg("validate")
        .arg(dir)
        .args(extra)
        .env("NO_COLOR", "1")
        .env("SWITCHYARD_TRUST", home.join("trust.json"))
        .env_remove("LOKI_FUNCTIONS_DIR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn validate_checks_every_agent_of_a_bundle() {
    let t = corpus_copy();
    let b = t.join("bundle");
    let (code, out) = validate(&b, &[], &t);
    assert_eq!(code, Some(0), "{out}");
    let summary = format!("bundle bundle ({}): 22 agents (8 graph, 14 config): 0 errors,", b.display());
    assert!(out.contains(&summary), "{out}");
    // One line per agent, graph and config agents alike (config agents are what agent nodes
    // spawn: not an error in a bundle).
    for line in ["  ✓ adversary (graph): 0 errors", "  ✓ review-gauntlet (graph): 0 errors", "  ✓ oracle (config): 0 errors, 0 warnings"] {
        assert!(out.contains(line), "no `{line}` in:\n{out}");
    }
    assert!(out.contains("ok: 0 errors,") && out.trim_end().ends_with("in 22 files"), "{out}");
}

#[test]
fn validate_of_a_bundle_fails_on_an_agents_error_and_a_bad_manifest() {
    let t = corpus_copy();
    let b = t.join("bundle");
    std::fs::write(b.join("coyote-bundle.yaml"), "name: acme/tools/extra\nversoin: \"1.0.0\"\n").unwrap();
    let g = b.join("agents/adversary/graph.yaml");
    let mut text = std::fs::read_to_string(&g).unwrap();
    text.push_str("\nbroken: [unclosed\n");
    std::fs::write(&g, text).unwrap();
    let (code, out) = validate(&b, &[], &t);
    assert_eq!(code, Some(1), "{out}");
    // The manifest's problems, positioned in it.
    assert!(out.contains("error[bundle-name]: invalid bundle name `acme/tools/extra`"), "{out}");
    assert!(out.contains("coyote-bundle.yaml:1:7"), "{out}");
    assert!(out.contains("warning[unknown-key]") && out.contains("did you mean `version`?"), "{out}");
    // The broken agent's, in its file.
    assert!(out.contains("agents/adversary/graph.yaml:"), "{out}");
    assert!(out.contains("  ✗ adversary (graph): "), "{out}");
    assert!(out.contains("(8 graph, 14 config), coyote-bundle.yaml: "), "{out}");
    assert!(out.contains("failed: "), "{out}");
    // JSON: the same diagnostics, each with its file.
    let (code, json) = validate(&b, &["--format", "json"], &t);
    assert_eq!(code, Some(1));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let files: Vec<&str> = v.as_array().unwrap().iter().filter(|d| d["severity"] == "error").map(|d| d["file"].as_str().unwrap()).collect();
    assert!(files.iter().any(|f| f.ends_with("coyote-bundle.yaml")), "{files:?}");
    assert!(files.iter().any(|f| f.ends_with("agents/adversary/graph.yaml")), "{files:?}");
}

#[test]
fn an_agent_folder_inside_a_bundle_still_validates_as_that_agent() {
    let t = corpus_copy();
    let (code, out) = validate(&t.join("bundle/agents/finding-verifier"), &[], &t);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("bundle "), "{out}");
    assert!(out.contains("in 1 file"), "{out}");
}
