//! `switchyard test [PATH...]`: find agent test suites (`*.tests.yaml`), run their cases in
//! parallel, print a compiler-style report (the first failing expectation of each case at its
//! place in the suite file), routing coverage with `--coverage`, and JSON / JUnit reports.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use switchyard::diag::render_human;
use switchyard::suite::{self, Outcome, SuiteResult, Totals};

/// `switchyard test`'s arguments.
#[derive(clap::Args)]
pub struct TestArgs {
    /// Suite files, or folders searched recursively for `*.tests.yaml` (default: the current
    /// folder).
    pub paths: Vec<PathBuf>,
    /// Only the cases whose name (or `FILE::NAME`) contains this text.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Write the results as JSON (totals, suites, cases, failures with positions, coverage).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the results as JUnit XML (for CI systems).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print routing coverage: how often each node ran and each edge was taken across the
    /// cases, and which never were.
    #[arg(long)]
    pub coverage: bool,
    /// Trust the agents' folders for this invocation only (see `switchyard trust`).
    #[arg(long)]
    pub trust: bool,
    /// Also run the cases that call live models (`live: true`); they are skipped otherwise.
    #[arg(long)]
    pub live: bool,
    /// Cases run at once (default: one per CPU).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Write the JSONL trace of each failing run into this folder (`<suite>--<case>.jsonl`),
    /// to review in the app's debugger (Open trace…) at the step that failed.
    #[arg(long, value_name = "DIR")]
    pub traces: Option<PathBuf>,
    /// Print only failures and the summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

fn write_file(path: &PathBuf, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `switchyard test`. Exit status: 0 every case passed, 1 a case failed or could not run,
/// 2 no suite found, a suite file with errors, an untrusted agent, or an I/O problem.
pub fn cmd_test(a: TestArgs) -> ExitCode {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let paths = if a.paths.is_empty() { vec![PathBuf::from(".")] } else { a.paths.clone() };
    let (files, errs) = suite::discover(&paths);
    let mut out = String::new();
    if !errs.is_empty() {
        eprint!("{}", render_human(&errs, &[], false));
        return ExitCode::from(2);
    }
    if files.is_empty() {
        eprintln!(
            "error: no test suites under {}\nhint: a suite is a `<name>.tests.yaml` file beside the agent (README: Agent test suites)",
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        );
        return ExitCode::from(2);
    }
    let suites: Vec<suite::Suite> = files.iter().map(|f| suite::load(f)).collect();
    let opts = suite::Options {
        trust: a.trust,
        live: a.live,
        filter: a.filter.clone(),
        jobs: a.jobs.unwrap_or(0),
        only: None,
        trace_dir: a.traces.clone(),
    };
    let started = std::time::Instant::now();
    let results = suite::run_all(&suites, &opts, &|_, _| {});
    let elapsed = started.elapsed();

    let (green, red, yellow, reset) = if color { ("\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[0m") } else { ("", "", "", "") };
    for (s, r) in suites.iter().zip(&results) {
        let files = [s.file.clone()];
        let shown: Vec<_> = r.diagnostics.iter().filter(|d| d.is_error() || !a.quiet).cloned().collect();
        if !shown.is_empty() {
            out.push_str(&render_human(&shown, &files, color));
        }
        for c in &r.cases {
            let id = format!("{}::{}", r.file, c.name);
            let runs = if c.runs > 1 { format!(", {}/{} runs passed", c.passed_runs, c.runs) } else { String::new() };
            let time = format!("{:.2} s", c.duration_ms as f64 / 1000.0);
            match c.outcome {
                Outcome::Passed => {
                    if !a.quiet {
                        out.push_str(&format!("{green}PASS{reset} {id} ({time}{runs})\n"));
                    }
                }
                Outcome::Skipped => {
                    if !a.quiet {
                        out.push_str(&format!("{yellow}SKIP{reset} {id}: {}\n", c.message.clone().unwrap_or_default()));
                    }
                }
                Outcome::Error => {
                    out.push_str(&format!(
                        "{red}ERROR{reset} {id}: {}\n",
                        switchyard::secrets::scrub_text(&c.message.clone().unwrap_or_default())
                    ));
                }
                Outcome::Failed => {
                    out.push_str(&format!("{red}FAIL{reset} {id} ({time}{runs})\n"));
                    if let Some(m) = &c.message {
                        out.push_str(&format!("  {m}\n"));
                    }
                    if let Some(f) = c.first_failure() {
                        out.push_str(&render_human(&[f.diagnostic()], &files, color));
                        if let Some(run) = &c.run {
                            if let Some(t) = &run.trace {
                                let at = f.step.map(|s| format!(" (step {s})")).unwrap_or_default();
                                out.push_str(&format!("  trace: {t}{at}\n"));
                            }
                            let more = run.failures.len() - 1;
                            if more > 0 {
                                out.push_str(&format!("  ({more} more expectation{} failed)\n", if more == 1 { "" } else { "s" }));
                            }
                        }
                    }
                }
            }
        }
    }
    if a.coverage {
        for r in &results {
            if let Some(c) = &r.coverage {
                out.push_str(&format!("\n{}: ", r.file));
                out.push_str(&suite::coverage::to_text(c));
            }
        }
    }
    let t = Totals::of(&results);
    let verdict = if t.ok() { format!("{green}ok{reset}") } else { format!("{red}FAILED{reset}") };
    out.push_str(&format!(
        "\ntest result: {verdict}. {} passed; {} failed; {} errors; {} skipped; {} suite{}{} ({:.2} s)\n",
        t.passed,
        t.failed,
        t.errors,
        t.skipped,
        t.suites,
        if t.suites == 1 { "" } else { "s" },
        if t.broken_suites > 0 { format!(", {} could not run", t.broken_suites) } else { String::new() },
        elapsed.as_secs_f64()
    ));
    let _ = std::io::stdout().lock().write_all(switchyard::secrets::redact(&out).as_bytes());

    let mut io_failed = false;
    if let Some(p) = &a.json {
        let json = serde_json::to_string_pretty(&suite::report::to_json(&results)).unwrap_or_default() + "\n";
        if let Err(e) = write_file(p, &switchyard::secrets::redact(&json)) {
            eprintln!("error: {e}");
            io_failed = true;
        }
    }
    if let Some(p) = &a.junit {
        if let Err(e) = write_file(p, &switchyard::secrets::redact(&suite::report::to_junit(&results))) {
            eprintln!("error: {e}");
            io_failed = true;
        }
    }
    exit_code(&results, &t, io_failed)
}

fn exit_code(results: &[SuiteResult], t: &Totals, io_failed: bool) -> ExitCode {
    if io_failed || results.iter().any(SuiteResult::broken) {
        ExitCode::from(2)
    } else if t.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
