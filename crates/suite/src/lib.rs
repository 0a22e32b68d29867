//! Agent test suites (`<name>.tests.yaml` beside an agent): cases that run the agent through
//! `launch` with scripted replies, a replies file, a cassette or a live model, answer its
//! questions from a queue, and check what happened — the node sequence, edges taken, the final
//! status, state fields (values, CEL or `{{template}}` predicates), the output, the error, and
//! step, token and cost budgets. `switchyard test` and the app run them.
//!
//! - [`file`]: the suite format, loaded with spans and checked (positioned diagnostics).
//! - [`run`]: one case's runs and the first failing expectation of each.
//! - [`coverage`]: routing coverage of the agent's graph over the suite's runs.
//! - [`report`]: the results as JSON and JUnit XML.

pub mod contract;
pub mod coverage;
pub mod file;
pub mod report;
pub mod run;
pub mod save;

pub use coverage::Coverage;
pub use file::{Case, Suite, is_suite_name, load};
pub use run::{CaseResult, Failure, Outcome, RunSummary};

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use syntax::diag::Diagnostic;
use ts_rs::TS;

/// How suites are run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Run the agents of untrusted folders too, for this invocation (`--trust`).
    pub trust: bool,
    /// Run the cases that call live models (otherwise they are skipped).
    pub live: bool,
    /// Only cases whose name (or `<suite file>::<name>`) contains this.
    pub filter: Option<String>,
    /// Parallel runs at most (0: one per CPU).
    pub jobs: usize,
    /// Only the case with exactly this name (the app's "run one").
    pub only: Option<String>,
    /// Write the JSONL trace of each failing run here (`<suite>--<case>.jsonl`, private), so
    /// it can be reviewed in the debugger at the step that failed.
    pub trace_dir: Option<PathBuf>,
}

/// A suite as the app lists it before running it: its file, agent, cases and problems.
#[derive(Clone, Debug, Serialize, TS)]
pub struct SuiteInfo {
    pub file: String,
    pub agent: String,
    pub cases: Vec<CaseInfo>,
    pub diagnostics: Vec<Diagnostic>,
}

/// A case of a [`SuiteInfo`]: its name and where it is written.
#[derive(Clone, Debug, Serialize, TS)]
pub struct CaseInfo {
    pub name: String,
    pub line: u32,
    /// Calls a live model (skipped unless live cases are asked for).
    pub live: bool,
}

/// What the app lists of a loaded suite.
pub fn info(s: &Suite) -> SuiteInfo {
    SuiteInfo {
        file: s.name(),
        agent: s.doc.path.display().to_string(),
        cases: s
            .cases
            .iter()
            .map(|c| CaseInfo { name: c.name.clone(), line: s.file.line_col(c.span.start as usize).line, live: c.llm.is_live() })
            .collect(),
        diagnostics: s.diagnostics.clone(),
    }
}

/// The suites beside an agent: the suite files under `dir` (recursively) whose agent is the
/// file `agent` (compared after resolving both).
pub fn suites_of(agent: &Path, dir: &Path) -> Vec<Suite> {
    let want = std::fs::canonicalize(agent).ok();
    let (files, _) = discover(&[dir.to_path_buf()]);
    files
        .iter()
        .map(|f| load(f))
        .filter(|s| {
            let p = &s.doc.path;
            want.is_some() && std::fs::canonicalize(p).ok() == want
        })
        .collect()
}

/// One suite's results.
#[derive(Clone, Debug, Serialize, TS)]
pub struct SuiteResult {
    /// The suite file, as found.
    pub file: String,
    /// The agent it tests.
    pub agent: String,
    pub cases: Vec<CaseResult>,
    /// The agent's routing coverage over every run of the suite (none when nothing ran).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
    /// Problems of the suite file (a suite with errors runs nothing) or why it could not run.
    pub diagnostics: Vec<Diagnostic>,
}

impl SuiteResult {
    /// Did the suite fail to load or run (no case results count then)?
    pub fn broken(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Totals over suites.
#[derive(Clone, Debug, Default, Serialize, TS)]
pub struct Totals {
    pub suites: u32,
    pub cases: u32,
    pub passed: u32,
    pub failed: u32,
    pub errors: u32,
    pub skipped: u32,
    /// Suites that could not run (bad suite file, untrusted agent).
    pub broken_suites: u32,
}

impl Totals {
    pub fn of(results: &[SuiteResult]) -> Totals {
        let mut t = Totals { suites: results.len() as u32, ..Totals::default() };
        for s in results {
            if s.broken() {
                t.broken_suites += 1;
            }
            for c in &s.cases {
                t.cases += 1;
                match c.outcome {
                    Outcome::Passed => t.passed += 1,
                    Outcome::Failed => t.failed += 1,
                    Outcome::Error => t.errors += 1,
                    Outcome::Skipped => t.skipped += 1,
                }
            }
        }
        t
    }
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.errors == 0 && self.broken_suites == 0
    }
}

fn skipped_dir(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "node_modules" | "target" | "__pycache__")
}

/// The suite files under `paths`: a file is taken as it is; a folder is searched recursively
/// for `*.tests.yaml` / `*.tests.yml` (hidden folders, `node_modules`, `target` skipped), in
/// name order. Paths that do not exist are errors.
pub fn discover(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let mut errs = Vec::new();
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() && depth < 32 && !skipped_dir(&name) {
                walk(&e.path(), depth + 1, out);
            } else if ft.is_file() && is_suite_name(&e.path()) {
                out.push(e.path());
            }
        }
    }
    for p in paths {
        if p.is_dir() {
            walk(p, 0, &mut out);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            errs.push(
                Diagnostic::error("io", format!("{} does not exist", p.display()))
                    .in_file(p)
                    .hint("give suite files (`*.tests.yaml`) or folders holding some"),
            );
        }
    }
    out.dedup();
    (out, errs)
}

/// Why a suite may not run its agent, if it may not: the agent's folder is not trusted (and
/// `--trust` was not given).
pub fn trust_refusal(suite: &Suite, opts: &Options) -> Option<Diagnostic> {
    if opts.trust {
        return None;
    }
    match launch::trust::trusted_folder(&suite.doc.path) {
        Ok(Some(_)) => None,
        Ok(None) => {
            let root = launch::trust::project_root(&suite.doc.path);
            let m = launch::manifest::manifest(&suite.doc);
            let what = if m.is_inert() { String::new() } else { format!(" (running it would: {})", m.summary(4).join("; ")) };
            Some(
                Diagnostic::error(
                    "untrusted",
                    format!("refusing to run {}: its folder {} is not trusted{what}", suite.doc.path.display(), root.display()),
                )
                .in_file(&suite.path)
                .hint(format!(
                    "review it with `switchyard run {} --manifest`; trust the folder with `switchyard trust {}`, or pass --trust",
                    suite.doc.path.display(),
                    root.display()
                )),
            )
        }
        Err(e) => Some(Diagnostic::error("untrusted", e).in_file(&suite.path)),
    }
}

/// Does `case` of `suite` pass `filter`?
pub fn selected(suite: &Suite, case: &Case, filter: Option<&str>) -> bool {
    match filter {
        None | Some("") => true,
        Some(f) => case.name.contains(f) || format!("{}::{}", suite.name(), case.name).contains(f),
    }
}

/// Run every suite at `paths` (already loaded), their cases in parallel, calling `on_case`
/// as each case ends. Results in the suites' order, cases in file order.
pub fn run_all(suites: &[Suite], opts: &Options, on_case: &(dyn Fn(&Suite, &CaseResult) + Sync)) -> Vec<SuiteResult> {
    // The work: every selected case of every suite that may run.
    let mut results: Vec<SuiteResult> = Vec::new();
    let mut work: Vec<(usize, usize)> = Vec::new();
    for (si, s) in suites.iter().enumerate() {
        let mut diagnostics: Vec<Diagnostic> = s.diagnostics.clone();
        if !s.has_errors()
            && let Some(d) = trust_refusal(s, opts)
        {
            diagnostics.push(d);
        }
        let runnable = !diagnostics.iter().any(Diagnostic::is_error);
        if runnable {
            for (ci, c) in s.cases.iter().enumerate() {
                if selected(s, c, opts.filter.as_deref()) && opts.only.as_ref().is_none_or(|o| *o == c.name) {
                    work.push((si, ci));
                }
            }
        }
        results.push(SuiteResult {
            file: s.name(),
            agent: s.doc.path.display().to_string(),
            cases: Vec::new(),
            coverage: None,
            diagnostics,
        });
    }
    let jobs = match opts.jobs {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
        n => n,
    }
    .clamp(1, work.len().max(1));
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, usize, CaseResult, Option<Coverage>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(si, ci)) = work.get(i) else { break };
                    let (res, cov) = run::run_case(&suites[si], &suites[si].cases[ci], opts);
                    on_case(&suites[si], &res);
                    done.lock().unwrap_or_else(|p| p.into_inner()).push((si, ci, res, cov));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|(si, ci, _, _)| (*si, *ci));
    for (si, _, res, cov) in done {
        let r = &mut results[si];
        r.cases.push(res);
        if let Some(c) = cov {
            match &mut r.coverage {
                Some(all) => all.merge(&c),
                None => r.coverage = Some(c),
            }
        }
    }
    // A suite none of whose cases ran still shows its graph, all at zero.
    for (si, s) in suites.iter().enumerate() {
        if results[si].coverage.is_none()
            && !results[si].cases.is_empty()
            && let Some(g) = &s.graph
        {
            results[si].coverage = Some(coverage::empty(g));
        }
    }
    results
}
