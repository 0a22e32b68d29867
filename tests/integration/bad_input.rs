//! Hostile and malformed input: the committed corpus under `tests/bad/` (both dialects), the
//! expression corpus under `tests/bad/expressions/` (CEL and Loki templates, each wrapped into a
//! minimal agent), plus inputs generated here that are too big or too odd to commit (alias bombs,
//! 10,000-level nesting, a 50 MB file, directories, missing and unreadable paths).
//!
//! Each input goes through the real binary, `switchyard validate --format json`, with a
//! 2-second wall-clock limit and a bound on the child's peak memory (its `VmHWM`, sampled while
//! it runs). Every input must be reported, never crash: exit 1 or 2, no panic, JSON with at least
//! one diagnostic, every diagnostic positioned (line and column >= 1) with a message, and at
//! least one error pointing somewhere specific (not the whole-file 1:1 marker) unless the input
//! is an I/O problem or an empty file.
//!
//! Committed files say what they expect:
//! - a trailing comment `# !code` (or `# !a !b`) on a line: a diagnostic with that code is
//!   reported on that line;
//! - a line `# expect: code` or `# expect: code@LINE` anywhere: that code is reported
//!   (on that line);
//! - a name starting with `warn-`: the expected findings are warnings, no error is required;
//! - a name starting with `empty-`, and Loki `config.yaml`: a whole-file 1:1 error is right.
//!
//! Expression files hold one expression per line (`#` comments, blank lines skipped); lines
//! under `[bad]` must be reported on the expression's own line in every place the wrapper puts
//! them, lines under `[valid]` (adversarial but valid) must validate clean.
//!
//! The desktop app opens documents through `studio::Session::open` and shows `View::diagnostics`:
//! `the_app_reports_what_the_cli_reports` opens every input that way, in process, on a thread
//! with a 2 MB stack (a worker thread's) and the same 2-second limit, and requires the same
//! findings as the CLI.
//!
//! Files and directories under `tests/bad/` whose name starts with `_` are data that the inputs
//! refer to (skill cards, sub-agents), not inputs.

use serde_json::Value as Json;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const LIMIT: Duration = Duration::from_secs(2);
/// Peak resident memory a validation may reach (the largest inputs stay far below).
const RSS_LIMIT_KB: u64 = 512 * 1024;
/// Inputs in the whole corpus (committed files, expressions, generated inputs).
const MIN_TOTAL: usize = 300;
const MIN_COMMITTED: usize = 230;
const MIN_BAD_CEL: usize = 60;
const MIN_BAD_TEMPLATES: usize = 30;

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// A committed or generated bad input.
    Bad,
    /// A wrapped bad expression: `lines` must each carry a diagnostic.
    BadExpr,
    /// A wrapped adversarial-but-valid expression: must validate clean.
    ValidExpr,
}

#[derive(Clone, Debug)]
struct Input {
    path: PathBuf,
    /// How it is shown in messages.
    label: String,
    kind: Kind,
    /// An I/O problem or an empty file: a whole-file diagnostic at 1:1 is the right answer.
    whole_file_ok: bool,
    /// Warnings are the expected findings (`warn-` files): no error required.
    warn_only: bool,
    /// (code, line) findings the file asks for.
    expect: Vec<(String, Option<u32>)>,
    /// Lines that must carry a diagnostic (where a wrapped expression sits).
    lines: Vec<u32>,
}

impl Input {
    fn bad(path: PathBuf, label: String, whole_file_ok: bool) -> Input {
        Input { path, label, kind: Kind::Bad, whole_file_ok, warn_only: false, expect: Vec::new(), lines: Vec::new() }
    }
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    timed_out: bool,
    /// Peak resident set of the child in KiB, where the platform tells.
    max_rss_kb: Option<u64>,
}

// ---- running the CLI, with the child's peak memory ---------------------------------------------

/// The peak resident set of a running process in KiB (`VmHWM` of `/proc/<pid>/status`; Linux).
/// After `exec` a process has a fresh address space, so this is the CLI's own peak. (`wait4`'s
/// `ru_maxrss` is no use here: a child inherits the high-water mark of the process that spawned
/// it, so every child would show the test process's memory.)
fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run the CLI (`validate --format json <path>`, plus `extra` arguments) with a wall-clock
/// limit. Output is drained on threads so a large report cannot block the child.
fn run_validate(path: &Path, extra: &[&str]) -> Outcome {
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(["validate", "--format", "json"])
        .args(extra)
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
    // Sampled every millisecond while the child runs; the high-water mark only grows, so the
    // last sample before the exit holds all but the final instant (a blow-up takes far longer).
    let pid = child.id();
    let mut max_rss_kb: Option<u64> = None;
    let status = loop {
        if let Some(kb) = peak_rss_kb(pid) {
            max_rss_kb = Some(max_rss_kb.unwrap_or(0).max(kb));
        }
        match child.try_wait().expect("wait") {
            Some(s) => break s,
            None if start.elapsed() > LIMIT => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().expect("wait after kill");
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    let elapsed = start.elapsed();
    let stdout = String::from_utf8_lossy(&t_out.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).into_owned();
    Outcome { code: status.code(), stdout, stderr, elapsed, timed_out, max_rss_kb }
}

// ---- judging an outcome -----------------------------------------------------------------------

fn num(d: &Json, k: &str) -> u64 {
    d[k].as_u64().unwrap_or(0)
}

/// Problems with one outcome (empty when it behaves).
fn judge(input: &Input, o: &Outcome) -> Vec<String> {
    let mut bad = Vec::new();
    if o.timed_out {
        bad.push(format!("took longer than {LIMIT:?} (killed)"));
        return bad;
    }
    if let Some(kb) = o.max_rss_kb.filter(|&kb| kb > RSS_LIMIT_KB) {
        bad.push(format!("peak memory {} MB, over the {} MB bound", kb / 1024, RSS_LIMIT_KB / 1024));
    }
    let valid = input.kind == Kind::ValidExpr;
    // Warnings alone (expected by `warn-` files and some expressions) exit 0.
    let warnings_ok = input.warn_only || input.kind == Kind::BadExpr;
    match o.code {
        Some(0) if valid || warnings_ok => {}
        Some(1) | Some(2) if !valid => {}
        Some(c) => bad.push(format!("exit code {c}, expected {}", if valid { "0" } else { "1 or 2" })),
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
    if valid {
        if !diags.is_empty() {
            bad.push(format!("a valid expression is reported: {}", summary(diags)));
        }
        return bad;
    }
    if diags.is_empty() {
        bad.push("no diagnostics".into());
        return bad;
    }
    for d in diags {
        let (line, col, end_line, end_col) = (num(d, "line"), num(d, "column"), num(d, "end_line"), num(d, "end_column"));
        let msg = d["message"].as_str().unwrap_or("");
        let code = d["code"].as_str().unwrap_or("");
        if line < 1 || col < 1 {
            bad.push(format!("diagnostic `{code}` has position {line}:{col}: {d}"));
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
    for (code, line) in &input.expect {
        let hit = diags.iter().any(|d| d["code"] == code.as_str() && line.is_none_or(|l| num(d, "line") == u64::from(l)));
        if !hit {
            let at = line.map(|l| format!(" on line {l}")).unwrap_or_default();
            bad.push(format!("expected `{code}`{at}, got: {}", summary(diags)));
        }
    }
    for &l in &input.lines {
        if !diags.iter().any(|d| num(d, "line") == u64::from(l)) {
            bad.push(format!("nothing reported on line {l}, where the expression is: {}", summary(diags)));
        }
    }
    let errors: Vec<&Json> = diags.iter().filter(|d| d["severity"] == "error").collect();
    if errors.is_empty() {
        if !input.warn_only && input.kind == Kind::Bad {
            bad.push(format!("no error among {} diagnostics: {}", diags.len(), summary(diags)));
        }
    } else if !input.whole_file_ok {
        let located = errors
            .iter()
            .any(|d| (num(d, "line"), num(d, "column"), num(d, "end_line"), num(d, "end_column")) != (1, 1, 1, 1));
        if !located {
            bad.push(format!("every error is a whole-file 1:1 marker: {}", summary(diags)));
        }
    }
    bad
}

fn summary(diags: &[Json]) -> String {
    diags
        .iter()
        .take(8)
        .map(|d| format!("{} {} {}:{} {}", d["severity"], d["code"], d["line"], d["column"], d["message"]))
        .collect::<Vec<_>>()
        .join(" | ")
}

// ---- the committed corpus -----------------------------------------------------------------------

/// What a committed file asks for: `# !code` trailing comments and `# expect:` lines.
fn expectations(bytes: &[u8]) -> Vec<(String, Option<u32>)> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let n = i as u32 + 1;
        let t = line.trim_end();
        if let Some(rest) = t.trim_start().strip_prefix('#').map(str::trim_start).and_then(|r| r.strip_prefix("expect:")) {
            let spec = rest.trim();
            match spec.split_once('@') {
                Some((code, l)) => out.push((code.to_string(), Some(l.parse().expect("# expect: code@LINE")))),
                None => out.push((spec.to_string(), None)),
            }
            continue;
        }
        // A trailing comment made only of `!code` words.
        if let Some(pos) = t.rfind('#') {
            let words: Vec<&str> = t[pos + 1..].split_whitespace().collect();
            let codes = || words.iter().map(|w| w.strip_prefix('!'));
            if !words.is_empty()
                && codes().all(|c| c.is_some_and(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')))
            {
                out.extend(codes().map(|c| (c.unwrap().to_string(), Some(n))));
            }
        }
    }
    out
}

fn committed_inputs() -> Vec<Input> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with('_') || name.starts_with('.') || name == "expressions" && p.parent() == Some(&bad_dir()) {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&bad_dir(), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let label = path.strip_prefix(ROOT).unwrap().display().to_string();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
            // Empty files, and a Loki normal agent (config.yaml): findings about the whole file.
            let whole_file_ok = name.starts_with("empty-") || name == "config.yaml";
            let bytes = std::fs::read(&path).unwrap_or_default();
            Input {
                expect: expectations(&bytes),
                warn_only: name.starts_with("warn-"),
                ..Input::bad(path, label, whole_file_ok)
            }
        })
        .collect()
}

fn bad_dir() -> PathBuf {
    Path::new(ROOT).join("tests/bad")
}

// ---- the expression corpus ----------------------------------------------------------------------

/// `(bad, valid)` expressions of one file: one per line, `#` comments, `[bad]` / `[valid]`
/// sections.
fn expression_file(name: &str) -> (Vec<String>, Vec<String>) {
    let path = bad_dir().join("expressions").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut bad, mut valid) = (Vec::new(), Vec::new());
    let mut in_valid = false;
    for line in text.lines() {
        let t = line.trim();
        match t {
            "" => {}
            "[bad]" => in_valid = false,
            "[valid]" => in_valid = true,
            _ if t.starts_with('#') => {}
            _ if in_valid => valid.push(t.to_string()),
            _ => bad.push(t.to_string()),
        }
    }
    (bad, valid)
}

/// A sherma agent with the expression as a `set_state` value and as a branch condition (each
/// in a literal block scalar, so the text needs no quoting). The declared fields are what the
/// expressions read.
const CEL_WRAPPER: &str = "manifest_version: 1
agents:
  a:
    state:
      fields:
        - {name: messages, type: list}
        - {name: n, type: int}
        - {name: s, type: str}
        - {name: items, type: list}
        - {name: m, type: dict}
    graph:
      entry_point: x
      nodes:
        - name: x
          type: set_state
          args:
            values:
              n: |-
                @EXPR@
      edges:
        - source: x
          branches:
            - condition: |-
                @EXPR@
              target: __end__
";

/// A Loki graph with the template as an llm `prompt` (strict) and as a `state_updates` value
/// (lenient). `initial_state` seeds what the templates read.
const TEMPLATE_WRAPPER: &str = "name: t
version: \"1.0\"
initial_state:
  topic: x
  items: [1, 2]
  user: {name: a, tags: [b]}
start: a
nodes:
  a:
    type: llm
    prompt: |-
      @EXPR@
    state_updates:
      s: |-
        @EXPR@
    next: e
  e:
    type: end
";

/// Writes one wrapped expression and describes it as an input.
fn wrap(dir: &Path, file: &str, wrapper: &str, expr: &str, kind: Kind) -> Input {
    let text = wrapper.replace("@EXPR@", expr);
    let lines: Vec<u32> =
        wrapper.lines().enumerate().filter(|(_, l)| l.contains("@EXPR@")).map(|(i, _)| i as u32 + 1).collect();
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    let shown: String = expr.chars().take(80).collect();
    Input {
        label: format!("<expression>/{file} `{shown}`"),
        kind: kind.clone(),
        lines: if kind == Kind::BadExpr { lines } else { Vec::new() },
        ..Input::bad(path, String::new(), false)
    }
}

struct Expressions {
    inputs: Vec<Input>,
    bad_cel: usize,
    valid_cel: usize,
    bad_templates: usize,
    valid_templates: usize,
}

fn expression_inputs(dir: &Path) -> Expressions {
    let (bad_cel, mut valid_cel) = expression_file("cel.txt");
    let (bad_tpl, mut valid_tpl) = expression_file("templates.txt");
    // Adversarial but valid, too big to commit: long, deep and wide, within the engine's limits
    // (brackets nest up to ~96 levels, operator chains 200, an expression is at most 64 KiB).
    valid_cel.push(format!("{}state.n{} > 0", "(".repeat(90), ")".repeat(90)));
    valid_cel.push(format!("{}{} != []", "[".repeat(90), "]".repeat(90)));
    valid_cel.push(format!("{} > 0", vec!["state.n"; 190].join(" + ")));
    valid_cel.push(format!("[{}].size() > 0", vec!["1"; 5_000].join(", ")));
    valid_cel.push(format!("state.s == \"{}\"", "é🙂x".repeat(8_000)));
    valid_tpl.push("{{topic}} and {{user.name}} ".repeat(5_000));
    valid_tpl.push(format!("{{{{user.tags[0]}}}}{}", "x".repeat(200_000)));
    valid_tpl.push("{ x } and }} alone ".repeat(2_000));
    let mut inputs = Vec::new();
    for (i, e) in bad_cel.iter().enumerate() {
        inputs.push(wrap(dir, &format!("cel-bad-{:03}.yaml", i + 1), CEL_WRAPPER, e, Kind::BadExpr));
    }
    for (i, e) in valid_cel.iter().enumerate() {
        inputs.push(wrap(dir, &format!("cel-valid-{:03}.yaml", i + 1), CEL_WRAPPER, e, Kind::ValidExpr));
    }
    for (i, e) in bad_tpl.iter().enumerate() {
        inputs.push(wrap(dir, &format!("template-bad-{:03}.yaml", i + 1), TEMPLATE_WRAPPER, e, Kind::BadExpr));
    }
    for (i, e) in valid_tpl.iter().enumerate() {
        inputs.push(wrap(dir, &format!("template-valid-{:03}.yaml", i + 1), TEMPLATE_WRAPPER, e, Kind::ValidExpr));
    }
    Expressions {
        inputs,
        bad_cel: bad_cel.len(),
        valid_cel: valid_cel.len(),
        bad_templates: bad_tpl.len(),
        valid_templates: valid_tpl.len(),
    }
}

// ---- generated inputs -----------------------------------------------------------------------------

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
        v.push(Input::bad(path, format!("<generated>/{name}"), whole_file_ok));
    };
    // "Billion laughs": 9 levels of 9 aliases, as a sherma file and inside a Loki graph.
    add("alias-bomb.yaml", Some(billion_laughs("manifest_version: 1\n").into_bytes()), false);
    let loki_bomb =
        billion_laughs("name: g\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\ninitial_state:\n").replace("\nl", "\n  l");
    add("alias-bomb-loki.yaml", Some(loki_bomb.into_bytes()), false);
    // 10,000 levels of nesting: block sequences, flow sequences, flow mappings.
    let depth = 10_000;
    add("nesting-block-sequences.yaml", Some(("- ".repeat(depth) + "x\n").into_bytes()), false);
    add(
        "nesting-flow-sequences.yaml",
        Some(("manifest_version: 1\ndata: ".to_string() + &"[".repeat(depth) + &"]".repeat(depth) + "\n").into_bytes()),
        false,
    );
    add(
        "nesting-flow-mappings.yaml",
        Some(
            ("name: g\nversion: \"1.0\"\nstart: a\nnodes: ".to_string() + &"{a: ".repeat(depth) + "1" + &"}".repeat(depth) + "\n")
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
    add("nesting-block-mappings.yaml", Some(deep_map.into_bytes()), false);
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
    add("cel-expression-80kb.yaml", Some(big_cel.into_bytes()), false);
    // Many diagnostics: 10,000 unknown keys (a big report must not block the pipe).
    let mut many = String::from("manifest_version: 2\n");
    for i in 0..10_000 {
        many.push_str(&format!("unknown_key_{i}: {i}\n"));
    }
    add("ten-thousand-unknown-keys.yaml", Some(many.into_bytes()), false);
    // A huge string value: 8 MB in one double-quoted scalar, under the file size limit.
    let huge = format!("name: g\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n    output: \"{}\n", "x".repeat(8 << 20));
    add("huge-unterminated-string.yaml", Some(huge.into_bytes()), false);
    // A 2,000-node loop with no exit (every run would hit the recursion limit).
    let mut chain = String::from("manifest_version: 1\nagents:\n  a:\n    state: {fields: [{name: n, type: int}]}\n    graph:\n      entry_point: n0\n      nodes:\n");
    for i in 0..2000 {
        chain.push_str(&format!("        - {{name: n{i}, type: set_state, args: {{values: {{n: '{i}'}}}}}}\n"));
    }
    chain.push_str("      edges:\n");
    for i in 0..2000 {
        chain.push_str(&format!("        - {{source: n{i}, target: n{}}}\n", (i + 1) % 2000));
    }
    add("loop-of-2000-nodes.yaml", Some(chain.into_bytes()), false);
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
    // A sparse 64 GB file: reading it would exhaust memory; it must be refused by its size.
    std::fs::File::create(dir.join("sparse-64-gb.yaml")).unwrap().set_len(64 << 30).unwrap();
    add("sparse-64-gb.yaml", None, true);
    // A directory given as a file, and an agent directory with both graph.yaml and config.yaml.
    std::fs::create_dir_all(dir.join("a-directory.yaml")).unwrap();
    add("a-directory.yaml", None, true);
    let both = dir.join("both-agent");
    std::fs::create_dir_all(&both).unwrap();
    std::fs::write(both.join("graph.yaml"), "name: both\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n").unwrap();
    std::fs::write(both.join("config.yaml"), "model: openai:gpt-4o-mini\n").unwrap();
    add("both-agent", None, true);
    // A path that does not exist.
    add("does/not/exist.yaml", None, true);
    // An unreadable file (only meaningful when permissions are enforced, i.e. not as root).
    let unreadable = dir.join("unreadable.yaml");
    std::fs::write(&unreadable, "manifest_version: 1\nagents: {}\n").unwrap();
    set_mode(&unreadable, 0o000).unwrap();
    if std::fs::File::open(&unreadable).is_err() {
        add("unreadable.yaml", None, true);
    } else {
        println!("skipping the unreadable-file case: permissions are not enforced for this user (root?)");
    }
    v
}

// ---- the CLI over everything ------------------------------------------------------------------

#[test]
fn bad_inputs_are_reported_never_crash() {
    let scratch = TempDir::new("bad-input");
    let exprs_dir = scratch.path().join("expressions");
    std::fs::create_dir_all(&exprs_dir).unwrap();
    let committed = committed_inputs();
    let exprs = expression_inputs(&exprs_dir);
    let generated = generated_inputs(&scratch.path());
    let total = committed.len() + exprs.inputs.len() + generated.len();

    let mut failures = Vec::new();
    let mut slowest = (Duration::ZERO, String::new());
    let mut hungriest = (0u64, String::new());
    let started = Instant::now();
    let all: Vec<&Input> = committed.iter().chain(&exprs.inputs).chain(&generated).collect();
    for input in &all {
        let o = run_validate(&input.path, &[]);
        if o.elapsed > slowest.0 {
            slowest = (o.elapsed, input.label.clone());
        }
        if let Some(kb) = o.max_rss_kb.filter(|&kb| kb > hungriest.0) {
            hungriest = (kb, input.label.clone());
        }
        let problems = judge(input, &o);
        if !problems.is_empty() {
            failures.push(format!("{} ({:?}):\n    {}", input.label, o.elapsed, problems.join("\n    ")));
        }
    }
    println!(
        "bad inputs: {total} in all — {} committed files, {} expressions (CEL {} bad + {} valid, templates {} bad + {} valid), {} generated",
        committed.len(),
        exprs.inputs.len(),
        exprs.bad_cel,
        exprs.valid_cel,
        exprs.bad_templates,
        exprs.valid_templates,
        generated.len(),
    );
    println!(
        "total time {:.2?}; slowest {:.0?} ({}); peak memory {} ({})",
        started.elapsed(),
        slowest.0,
        slowest.1,
        if hungriest.0 > 0 { format!("{:.1} MB", hungriest.0 as f64 / 1024.0) } else { "not measured here".into() },
        hungriest.1
    );
    assert!(failures.is_empty(), "{} of {total} bad inputs misbehave:\n{}", failures.len(), failures.join("\n"));
    assert!(committed.len() >= MIN_COMMITTED, "tests/bad should hold at least {MIN_COMMITTED} files, found {}", committed.len());
    assert!(exprs.bad_cel >= MIN_BAD_CEL, "expressions/cel.txt: {} bad expressions, want {MIN_BAD_CEL}", exprs.bad_cel);
    assert!(
        exprs.bad_templates >= MIN_BAD_TEMPLATES,
        "expressions/templates.txt: {} bad templates, want {MIN_BAD_TEMPLATES}",
        exprs.bad_templates
    );
    assert!(total >= MIN_TOTAL, "the corpus holds {total} inputs, want at least {MIN_TOTAL}");
}

// ---- the app's open path over everything --------------------------------------------------------

/// What the app does with a path: `Session::open`, then the view's diagnostics. `Err` is the
/// error the app shows instead of a document.
fn open_in_app(path: PathBuf) -> Result<(Vec<switchyard::diag::Diagnostic>, Option<String>, usize), switchyard::diag::Diagnostic> {
    let s = switchyard::studio::Session::open(&path)?;
    let mut view = s.view();
    // What the shell adds to the view (`commands::trusted_view`): files outside the project.
    view.diagnostics.extend(switchyard::run::launch::manifest::restricted(&s.document()));
    Ok((view.diagnostics, view.agent, view.agents.len()))
}

type AppResult = Result<(Vec<switchyard::diag::Diagnostic>, Option<String>, usize), switchyard::diag::Diagnostic>;

/// `open_in_app` on a thread with a worker's 2 MB stack, within [`LIMIT`]; `Err` describes a
/// panic or a hang.
fn open_in_app_limited(path: &Path) -> Result<(AppResult, Duration), String> {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    let start = Instant::now();
    std::thread::Builder::new()
        .name("app-open".into())
        .stack_size(2 << 20)
        .spawn(move || {
            let r = std::panic::catch_unwind(|| open_in_app(p));
            let _ = tx.send(r);
        })
        .expect("spawn");
    match rx.recv_timeout(LIMIT) {
        Ok(Ok(r)) => Ok((r, start.elapsed())),
        Ok(Err(p)) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!("panicked: {}", msg.unwrap_or_default()))
        }
        Err(_) => Err(format!("took longer than {LIMIT:?}")),
    }
}

#[test]
fn the_app_reports_what_the_cli_reports() {
    let scratch = TempDir::new("bad-input-app");
    let exprs_dir = scratch.path().join("expressions");
    std::fs::create_dir_all(&exprs_dir).unwrap();
    let mut inputs = committed_inputs();
    inputs.extend(expression_inputs(&exprs_dir).inputs);
    inputs.extend(generated_inputs(&scratch.path()));

    let mut failures = Vec::new();
    let mut slowest = (Duration::ZERO, String::new());
    let (mut opened, mut refused) = (0, 0);
    for input in &inputs {
        let (app, elapsed) = match open_in_app_limited(&input.path) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{}: {e}", input.label));
                continue;
            }
        };
        if elapsed > slowest.0 {
            slowest = (elapsed, input.label.clone());
        }
        let mut problems = Vec::new();
        match app {
            Ok((diags, agent, agents)) => {
                opened += 1;
                // A multi-agent sherma file shows one agent: compare with the CLI on that agent.
                let extra: Vec<&str> = match (&agent, agents > 1) {
                    (Some(a), true) => vec!["--agent", a.as_str()],
                    _ => Vec::new(),
                };
                let cli = run_validate(&input.path, &extra);
                let cli_diags: Vec<Json> = serde_json::from_str::<Json>(&cli.stdout)
                    .ok()
                    .and_then(|j| j.as_array().cloned())
                    .unwrap_or_default();
                for d in &diags {
                    if d.line < 1 || d.column < 1 || d.message.trim().is_empty() {
                        problems.push(format!("unpositioned or empty: {} {}:{} {}", d.code, d.line, d.column, d.message));
                    }
                }
                let app_list: Vec<String> =
                    diags.iter().map(|d| format!("{} {} {}:{}", d.severity.as_str(), d.code, d.line, d.column)).collect();
                let cli_list: Vec<String> = cli_diags
                    .iter()
                    .map(|d| format!("{} {} {}:{}", d["severity"].as_str().unwrap_or(""), d["code"].as_str().unwrap_or(""), d["line"], d["column"]))
                    .collect();
                if app_list != cli_list {
                    problems.push(format!(
                        "the app shows {} finding(s), the CLI {}; first: app {:?}, CLI {:?}\n      app: {}\n      cli: {}",
                        app_list.len(),
                        cli_list.len(),
                        app_list.first(),
                        cli_list.first(),
                        app_list.join(" | "),
                        cli_list.join(" | ")
                    ));
                }
                if input.kind != Kind::ValidExpr && diags.is_empty() {
                    problems.push("the app shows no finding".into());
                }
            }
            Err(d) => {
                // The app refuses to open it (not a readable UTF-8 file of a sane size): the
                // CLI must report the same problem, and the message must say it.
                refused += 1;
                let cli = run_validate(&input.path, &[]);
                let cli_codes: Vec<String> = serde_json::from_str::<Json>(&cli.stdout)
                    .ok()
                    .and_then(|j| j.as_array().cloned())
                    .unwrap_or_default()
                    .iter()
                    .map(|d| d["code"].as_str().unwrap_or("").to_string())
                    .collect();
                if !cli_codes.contains(&d.code) {
                    problems.push(format!("the app refuses it with `{}` ({}), the CLI reports {cli_codes:?}", d.code, d.message));
                }
                if d.message.trim().is_empty() {
                    problems.push(format!("the app refuses it with an empty message (`{}`)", d.code));
                }
                if d.code == "not-utf8" && !d.message.contains("offset") {
                    problems.push(format!("the app's not-utf8 message does not say where: {}", d.message));
                }
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{} ({elapsed:?}):\n    {}", input.label, problems.join("\n    ")));
        }
    }
    println!(
        "app: {} inputs opened in process ({opened} shown, {refused} refused with a message), slowest {:.0?} ({})",
        inputs.len(),
        slowest.0,
        slowest.1
    );
    assert!(failures.is_empty(), "{} of {} inputs misbehave in the app:\n{}", failures.len(), inputs.len(), failures.join("\n"));
}

// ---- single properties ----------------------------------------------------------------------------

#[test]
fn file_size_limit_is_reported_as_such() {
    let scratch = TempDir::new("size-limit");
    let path = scratch.path().join("big.yaml");
    let f = std::fs::File::create(&path).unwrap();
    // A sparse file just over the limit: the size check must come before reading.
    f.set_len(switchyard::doc::MAX_FILE_BYTES + 1).unwrap();
    drop(f);
    let o = run_validate(&path, &[]);
    assert!(!o.timed_out);
    assert_eq!(o.code, Some(2), "{}", o.stdout);
    let j: Json = serde_json::from_str(&o.stdout).unwrap();
    assert!(j.as_array().unwrap().iter().any(|d| d["code"] == "file-too-large"), "{j}");
}

/// BOM, CRLF and CR-only line endings must not shift positions: the same unknown node type is
/// reported on line 12, column 17 in each (YAML treats a lone CR as a line break too).
#[test]
fn line_endings_and_bom_keep_positions() {
    let mut wrong = Vec::new();
    for name in ["bom-sherma.yaml", "crlf-sherma.yaml", "cr-only-line-endings.yaml"] {
        let path = Path::new(ROOT).join("tests/bad/bytes").join(name);
        let o = run_validate(&path, &[]);
        let j: Json = serde_json::from_str(&o.stdout).unwrap_or(Json::Null);
        let hit = j.as_array().into_iter().flatten().find(|d| d["code"] == "bad-enum");
        match hit {
            Some(d) if d["line"] == 12 && d["column"] == 17 => {}
            Some(d) => wrong.push(format!("{name}: bad-enum at {}:{}, expected 12:17", d["line"], d["column"])),
            None => wrong.push(format!("{name}: no bad-enum diagnostic: {}", o.stdout)),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The expectation syntax of the corpus files, so a typo cannot silently expect nothing.
#[test]
fn expectation_markers_are_read() {
    let text = b"a: 1   # !wrong-type !bad-enum\nb: '# not a marker'\nc: x # a comment !\n# expect: cel-syntax@7\n# expect: no-agents\n";
    assert_eq!(
        expectations(text),
        vec![
            ("wrong-type".to_string(), Some(1)),
            ("bad-enum".to_string(), Some(1)),
            ("cel-syntax".to_string(), Some(7)),
            ("no-agents".to_string(), None),
        ]
    );
}

