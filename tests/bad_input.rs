//! Hostile and malformed input: the committed corpus under `tests/bad/` (both dialects) plus
//! inputs generated here that are too big or too odd to commit (alias bombs, 10,000-level
//! nesting, a 50 MB file, directories, missing and unreadable paths).
//!
//! Each input goes through the real binary, `switchyard validate --format json`, with a
//! 2-second wall-clock limit. Every input must be reported, never crash: exit 1 or 2, no panic,
//! JSON with at least one diagnostic, every diagnostic positioned (line and column >= 1) with a
//! message, and at least one error pointing somewhere specific (not the whole-file 1:1 marker)
//! unless the input is an I/O problem or an empty file.
//!
//! Files and directories under `tests/bad/` whose name starts with `_` are data that the inputs
//! refer to (skill cards, sub-agents), not inputs.

use serde_json::Value as Json;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const LIMIT: Duration = Duration::from_secs(2);

struct Input {
    path: PathBuf,
    /// How it is shown in messages.
    label: String,
    /// An I/O problem or an empty file: a whole-file diagnostic at 1:1 is the right answer.
    whole_file_ok: bool,
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    timed_out: bool,
}

/// Run the CLI on `path` with a wall-clock limit. Output is drained on threads so a large
/// report cannot block the child.
fn run_validate(path: &Path) -> Outcome {
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(["validate", "--format", "json"])
        .arg(path)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchyard");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let mut timed_out = false;
    let status = loop {
        match child.try_wait().expect("wait") {
            Some(s) => break s,
            None if start.elapsed() > LIMIT => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().expect("wait after kill");
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    };
    let elapsed = start.elapsed();
    let stdout = String::from_utf8_lossy(&t_out.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).into_owned();
    Outcome {
        code: status.code(),
        stdout,
        stderr,
        elapsed,
        timed_out,
    }
}

/// Problems with one outcome (empty when it behaves).
fn judge(input: &Input, o: &Outcome) -> Vec<String> {
    let mut bad = Vec::new();
    if o.timed_out {
        bad.push(format!("took longer than {LIMIT:?} (killed)"));
        return bad;
    }
    match o.code {
        Some(1) | Some(2) => {}
        Some(c) => bad.push(format!("exit code {c}, expected 1 or 2")),
        None => bad.push("killed by a signal".to_string()),
    }
    if o.stderr.contains("panicked") || o.stderr.contains("RUST_BACKTRACE") {
        bad.push(format!("panicked:\n{}", o.stderr.trim_end()));
    }
    let json: Json = match serde_json::from_str(&o.stdout) {
        Ok(j) => j,
        Err(e) => {
            let head: String = o.stdout.chars().take(300).collect();
            bad.push(format!("stdout is not JSON ({e}): {head:?}"));
            return bad;
        }
    };
    let Some(diags) = json.as_array() else {
        bad.push("stdout is not a JSON array".into());
        return bad;
    };
    if diags.is_empty() {
        bad.push("no diagnostics".into());
        return bad;
    }
    let num = |d: &Json, k: &str| d[k].as_u64().unwrap_or(0);
    for d in diags {
        let (line, col, end_line, end_col) = (
            num(d, "line"),
            num(d, "column"),
            num(d, "end_line"),
            num(d, "end_column"),
        );
        let msg = d["message"].as_str().unwrap_or("");
        let code = d["code"].as_str().unwrap_or("");
        if line < 1 || col < 1 {
            bad.push(format!(
                "diagnostic `{code}` has position {line}:{col}: {d}"
            ));
        }
        if (end_line, end_col) < (line, col) {
            bad.push(format!("diagnostic `{code}` ends ({end_line}:{end_col}) before it starts ({line}:{col}): {msg}"));
        }
        if msg.trim().is_empty() {
            bad.push(format!("diagnostic `{code}` has an empty message: {d}"));
        }
        if code.is_empty() {
            bad.push(format!("diagnostic without a code: {d}"));
        }
        if d["file"].as_str().is_none_or(str::is_empty) {
            bad.push(format!("diagnostic `{code}` names no file: {d}"));
        }
    }
    let errors: Vec<&Json> = diags.iter().filter(|d| d["severity"] == "error").collect();
    if errors.is_empty() {
        bad.push(format!(
            "no error among {} diagnostics: {}",
            diags.len(),
            summary(diags)
        ));
    } else if !input.whole_file_ok {
        let located = errors.iter().any(|d| {
            (
                num(d, "line"),
                num(d, "column"),
                num(d, "end_line"),
                num(d, "end_column"),
            ) != (1, 1, 1, 1)
        });
        if !located {
            bad.push(format!(
                "every error is a whole-file 1:1 marker: {}",
                summary(diags)
            ));
        }
    }
    bad
}

fn summary(diags: &[Json]) -> String {
    diags
        .iter()
        .take(8)
        .map(|d| {
            format!(
                "{} {} {}:{} {}",
                d["severity"], d["code"], d["line"], d["column"], d["message"]
            )
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn committed_inputs() -> Vec<Input> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('_') || n.starts_with('.'))
            {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let root = Path::new(ROOT).join("tests/bad");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let label = path.strip_prefix(ROOT).unwrap().display().to_string();
            // Empty files, and a Loki normal agent (config.yaml): findings about the whole file.
            let whole_file_ok = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("empty-") || n == "config.yaml");
            Input {
                path,
                label,
                whole_file_ok,
            }
        })
        .collect()
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("switchyard-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Restore permissions first so everything can be removed.
        let unreadable = self.0.join("unreadable.yaml");
        if unreadable.exists() {
            let _ = set_mode(&unreadable, 0o644);
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_p: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

fn billion_laughs(prefix: &str) -> String {
    let mut s = String::from(prefix);
    s += "l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
    for i in 1..=9 {
        let p = format!("*l{}", i - 1);
        s += &format!("l{i}: &l{i} [{}]\n", [p.as_str(); 9].join(","));
    }
    s
}

/// Inputs generated at test time (never committed).
fn generated_inputs(dir: &Path) -> Vec<Input> {
    let mut v = Vec::new();
    let mut add = |name: &str, content: Option<Vec<u8>>, whole_file_ok: bool| {
        let path = dir.join(name);
        if let Some(c) = content {
            std::fs::write(&path, c).unwrap();
        }
        v.push(Input {
            path,
            label: format!("<generated>/{name}"),
            whole_file_ok,
        });
    };
    // "Billion laughs": 9 levels of 9 aliases, as a sherma file and inside a Loki graph.
    add(
        "alias-bomb.yaml",
        Some(billion_laughs("manifest_version: 1\n").into_bytes()),
        false,
    );
    let loki_bomb = billion_laughs(
        "name: g\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\ninitial_state:\n",
    )
    .replace("\nl", "\n  l");
    add("alias-bomb-loki.yaml", Some(loki_bomb.into_bytes()), false);
    // 10,000 levels of nesting: block sequences, flow sequences, flow mappings.
    let depth = 10_000;
    add(
        "nesting-block-sequences.yaml",
        Some(("- ".repeat(depth) + "x\n").into_bytes()),
        false,
    );
    add(
        "nesting-flow-sequences.yaml",
        Some(
            ("manifest_version: 1\ndata: ".to_string()
                + &"[".repeat(depth)
                + &"]".repeat(depth)
                + "\n")
                .into_bytes(),
        ),
        false,
    );
    add(
        "nesting-flow-mappings.yaml",
        Some(
            ("name: g\nversion: \"1.0\"\nstart: a\nnodes: ".to_string()
                + &"{a: ".repeat(depth)
                + "1"
                + &"}".repeat(depth)
                + "\n")
                .into_bytes(),
        ),
        false,
    );
    // Block mappings nest by indentation, so 10,000 levels would be 50 MB; 3,000 levels is 4.5 MB.
    let mut deep_map = String::from("manifest_version: 1\ndata:\n");
    for i in 1..3000 {
        deep_map.push_str(&" ".repeat(i));
        deep_map.push_str("k:\n");
    }
    add(
        "nesting-block-mappings.yaml",
        Some(deep_map.into_bytes()),
        false,
    );
    // Unclosed nesting: 10,000 open brackets and nothing else.
    add(
        "nesting-unclosed.yaml",
        Some(("manifest_version: 1\nagents: ".to_string() + &"[{".repeat(depth / 2)).into_bytes()),
        false,
    );
    // A 5 MB single line, and a 64 KB+ CEL expression.
    let long = format!(
        "manifest_version: 1\nprompts:\n  - id: p\n    instructions: {}\n    instructions_path: [oops]\nagents: {{}}\n",
        "word ".repeat(1_000_000)
    );
    add("long-line-5mb.yaml", Some(long.into_bytes()), false);
    let big_cel = format!(
        "manifest_version: 1\nagents:\n  a:\n    state:\n      fields: [{{name: messages, type: list}}]\n    graph:\n      entry_point: n\n      nodes:\n        - name: n\n          type: interrupt\n          args:\n            value: '{}1'\n      edges: []\n",
        "1 + ".repeat(20_000)
    );
    add(
        "cel-expression-80kb.yaml",
        Some(big_cel.into_bytes()),
        false,
    );
    // Many diagnostics: 10,000 unknown keys (a big report must not block the pipe).
    let mut many = String::from("manifest_version: 2\n");
    for i in 0..10_000 {
        many.push_str(&format!("unknown_key_{i}: {i}\n"));
    }
    add(
        "ten-thousand-unknown-keys.yaml",
        Some(many.into_bytes()),
        false,
    );
    // A 50 MB file: refused by size before it is read.
    {
        let path = dir.join("fifty-megabytes.yaml");
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        use std::io::Write;
        f.write_all(b"manifest_version: 1\ndata:\n").unwrap();
        let line = format!("  - \"{}\"\n", "x".repeat(90));
        for _ in 0..(50 * 1024 * 1024 / line.len() + 1) {
            f.write_all(line.as_bytes()).unwrap();
        }
        f.flush().unwrap();
        add("fifty-megabytes.yaml", None, true);
    }
    // A directory given as a file, and an agent directory with both graph.yaml and config.yaml.
    std::fs::create_dir_all(dir.join("a-directory.yaml")).unwrap();
    add("a-directory.yaml", None, true);
    let both = dir.join("both-agent");
    std::fs::create_dir_all(&both).unwrap();
    std::fs::write(
        both.join("graph.yaml"),
        "name: both\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n",
    )
    .unwrap();
    std::fs::write(both.join("config.yaml"), "model: openai:gpt-4o-mini\n").unwrap();
    add("both-agent", None, true);
    // A path that does not exist.
    add("does/not/exist.yaml", None, true);
    v
}

#[test]
fn bad_inputs_are_reported_never_crash() {
    let scratch = Scratch::new("bad-input");
    let mut inputs = committed_inputs();
    let committed = inputs.len();
    assert!(
        committed >= 60,
        "tests/bad should hold at least 60 inputs, found {committed}"
    );
    inputs.extend(generated_inputs(&scratch.0));

    // An unreadable file (only meaningful when permissions are enforced, i.e. not as root).
    let unreadable = scratch.0.join("unreadable.yaml");
    std::fs::write(&unreadable, "manifest_version: 1\nagents: {}\n").unwrap();
    set_mode(&unreadable, 0o000).unwrap();
    if std::fs::File::open(&unreadable).is_err() {
        inputs.push(Input {
            path: unreadable.clone(),
            label: "<generated>/unreadable.yaml".into(),
            whole_file_ok: true,
        });
    } else {
        println!(
            "skipping the unreadable-file case: permissions are not enforced for this user (root?)"
        );
    }

    let mut failures = Vec::new();
    let mut slowest = (Duration::ZERO, String::new());
    let started = Instant::now();
    for input in &inputs {
        let o = run_validate(&input.path);
        if o.elapsed > slowest.0 {
            slowest = (o.elapsed, input.label.clone());
        }
        let problems = judge(input, &o);
        if !problems.is_empty() {
            failures.push(format!(
                "{} ({:?}):\n    {}",
                input.label,
                o.elapsed,
                problems.join("\n    ")
            ));
        }
    }
    println!(
        "bad inputs: {} ({} committed, {} generated), total {:.2?}, slowest {:.0?} ({})",
        inputs.len(),
        committed,
        inputs.len() - committed,
        started.elapsed(),
        slowest.0,
        slowest.1
    );
    assert!(
        failures.is_empty(),
        "{} of {} bad inputs misbehave:\n{}",
        failures.len(),
        inputs.len(),
        failures.join("\n")
    );
}

#[test]
fn file_size_limit_is_reported_as_such() {
    let scratch = Scratch::new("size-limit");
    let path = scratch.0.join("big.yaml");
    let f = std::fs::File::create(&path).unwrap();
    // A sparse file just over the limit: the size check must come before reading.
    f.set_len(switchyard::doc::MAX_FILE_BYTES + 1).unwrap();
    drop(f);
    let o = run_validate(&path);
    assert!(!o.timed_out);
    assert_eq!(o.code, Some(2), "{}", o.stdout);
    let j: Json = serde_json::from_str(&o.stdout).unwrap();
    assert!(
        j.as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "file-too-large"),
        "{j}"
    );
}

/// BOM, CRLF and CR-only line endings must not shift positions: the same unknown node type is
/// reported on line 12, column 17 in each (YAML treats a lone CR as a line break too).
#[test]
fn line_endings_and_bom_keep_positions() {
    let mut wrong = Vec::new();
    for name in [
        "bom-sherma.yaml",
        "crlf-sherma.yaml",
        "cr-only-line-endings.yaml",
    ] {
        let path = Path::new(ROOT).join("tests/bad/bytes").join(name);
        let o = run_validate(&path);
        let j: Json = serde_json::from_str(&o.stdout).unwrap_or(Json::Null);
        let hit = j
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["code"] == "bad-enum");
        match hit {
            Some(d) if d["line"] == 12 && d["column"] == 17 => {}
            Some(d) => wrong.push(format!(
                "{name}: bad-enum at {}:{}, expected 12:17",
                d["line"], d["column"]
            )),
            None => wrong.push(format!("{name}: no bad-enum diagnostic: {}", o.stdout)),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
