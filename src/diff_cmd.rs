//! `switchyard diff` (two versions of an agent file compared as graphs, `model::diff`) and
//! `switchyard trace diff` (two recorded runs aligned by step, `launch::trace::diff`): reading
//! the files (a git revision through `git show`), rendering for a terminal, exit codes like
//! diff(1): 0 the same, 1 different, 2 trouble.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use switchyard::diag::render_human;
use switchyard::diff::{AgentDiff, Change, FieldChange, GraphDiff};
use switchyard::doc::{self, Document};
use switchyard::run::launch::trace::diff as tdiff;

/// `switchyard diff`'s arguments.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The old version: a YAML file, a Loki agent folder or a coyote bundle folder (with
    /// `--rev`: the file whose committed version is compared with the one on disk).
    pub a: Option<PathBuf>,
    /// The new version (not with `--rev`).
    pub b: Option<PathBuf>,
    /// Compare A as committed at this git revision (default HEAD) with A on disk.
    #[arg(long, value_name = "REV", num_args = 0..=1, default_missing_value = "HEAD")]
    pub rev: Option<String>,
    /// Compare only this agent of a multi-agent sherma file.
    #[arg(long)]
    pub agent: Option<String>,
    /// Print the diff as JSON (`model::diff::GraphDiff`; a bundle: one per agent).
    #[arg(long)]
    pub json: bool,
}

/// `switchyard trace diff`'s arguments.
#[derive(clap::Args)]
pub struct TraceDiffArgs {
    /// The first trace (JSONL, `switchyard run --trace`).
    pub a: PathBuf,
    /// The second trace (a fork of the same run: the same prefix).
    pub b: PathBuf,
    /// The agent file the runs came from (a Loki graph's reducers, to rebuild states exactly).
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

struct Paint {
    on: bool,
}

impl Paint {
    fn c(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// Load one side: I/O problems print and give `None`; errors in the file print as a note (the
/// diff is still drawn from what was read).
fn load_side(d: Document) -> Option<Document> {
    let c = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    if d.io_error {
        eprint!("{}", render_human(&d.diagnostics, &d.files(), c));
        return None;
    }
    let errors: Vec<_> = d
        .diagnostics
        .iter()
        .filter(|x| x.is_error())
        .cloned()
        .collect();
    if !errors.is_empty() {
        eprint!("{}", render_human(&errors, &d.files(), c));
        eprintln!(
            "note: {} has errors; it is compared as far as it was read",
            d.path.display()
        );
    }
    Some(d)
}

pub fn cmd_diff(mut args: DiffArgs) -> ExitCode {
    let paint = Paint { on: color() };
    // `diff --rev FILE`: clap reads FILE as the revision.
    if args.a.is_none() {
        match args.rev.take() {
            Some(file) => {
                args.a = Some(PathBuf::from(file));
                args.rev = Some("HEAD".into());
            }
            None => return fail("give two files to compare, or one with --rev [REV]"),
        }
    }
    let a = args.a.clone().unwrap_or_default();
    let (old, new) = match (&args.rev, &args.b) {
        (Some(_), Some(_)) => return fail("give one file with --rev, or two files without it"),
        (None, None) => return fail("give two files to compare, or one with --rev [REV]"),
        (None, Some(b)) => {
            if let (Some(ba), Some(bb)) = (doc::bundle::discover(&a), doc::bundle::discover(b)) {
                return diff_bundles(&ba, &bb, &args, &paint);
            }
            (doc::load_path(&a), doc::load_path(b))
        }
        (Some(rev), None) => {
            if doc::bundle::discover(&a).is_some() {
                return fail(
                    "--rev compares one agent file or agent folder; name an agent of the bundle",
                );
            }
            let file = match doc::resolve_input(&a) {
                Ok(f) => f,
                Err(d) => {
                    eprint!("{}", render_human(&[d], &[], false));
                    return ExitCode::from(2);
                }
            };
            let blob = match switchyard::run::launch::worktree::show(rev, &file) {
                Ok(b) => b,
                Err(e) => return fail(e),
            };
            (doc::load_bytes(&file, &blob), doc::load_path(&file))
        }
    };
    let (Some(old), Some(new)) = (load_side(old), load_side(new)) else {
        return ExitCode::from(2);
    };
    let d = match switchyard::diff::diff_documents(&old, &new, args.agent.as_deref()) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&d).unwrap_or_default()
        );
    } else {
        let title = match &args.rev {
            Some(rev) => format!("{} ({rev} → working tree)", new.path.display()),
            None => format!("{} → {}", old.path.display(), new.path.display()),
        };
        let _ = out.write_all(render(&d, &title, &paint).as_bytes());
    }
    ExitCode::from(if d.same { 0 } else { 1 })
}

/// Two coyote bundles: each agent compared by folder name.
fn diff_bundles(
    a: &doc::bundle::Bundle,
    b: &doc::bundle::Bundle,
    args: &DiffArgs,
    paint: &Paint,
) -> ExitCode {
    let mut names: Vec<&str> = b.agents.iter().map(|x| x.name.as_str()).collect();
    for x in &a.agents {
        if !names.contains(&x.name.as_str()) {
            names.push(&x.name);
        }
    }
    let mut same = true;
    let mut json = Vec::new();
    let mut text = String::new();
    for name in names {
        let oa = a.agents.iter().find(|x| x.name == name);
        let nb = b.agents.iter().find(|x| x.name == name);
        let entry = match (oa, nb) {
            (Some(x), Some(y)) => {
                let (Some(od), Some(nd)) = (
                    load_side(doc::load_path(&x.file)),
                    load_side(doc::load_path(&y.file)),
                ) else {
                    return ExitCode::from(2);
                };
                let d = match switchyard::diff::diff_documents(&od, &nd, None) {
                    Ok(d) => d,
                    // An LLM-loop agent (config.yaml) is no graph: its keys are compared.
                    Err(_) => {
                        let mut fields = Vec::new();
                        let j =
                            |d: &Document| d.root.as_ref().map(|r| r.to_json()).unwrap_or_default();
                        switchyard::diff::json_diff("", &j(&od), &j(&nd), &mut fields);
                        GraphDiff {
                            dialect: "loki".into(),
                            same: fields.is_empty(),
                            agents: Vec::new(),
                            fields,
                        }
                    }
                };
                same &= d.same;
                text.push_str(&render(&d, &format!("agent {name}"), paint));
                serde_json::json!({"agent": name, "change": if d.same { None } else { Some("changed") }, "diff": d})
            }
            (x, _) => {
                same = false;
                let change = if x.is_some() { "removed" } else { "added" };
                let sign = if x.is_some() {
                    paint.c("31", "-")
                } else {
                    paint.c("32", "+")
                };
                text.push_str(&format!("{sign} agent {name} ({change})\n"));
                serde_json::json!({"agent": name, "change": change})
            }
        };
        json.push(entry);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let v = serde_json::json!({"bundle": true, "same": same, "agents": json});
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&v).unwrap_or_default()
        );
    } else {
        let _ = out.write_all(text.as_bytes());
    }
    ExitCode::from(if same { 0 } else { 1 })
}

fn short(v: &Option<serde_json::Value>) -> String {
    match v {
        None => "(none)".into(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 100 {
                format!("{}…", s.chars().take(99).collect::<String>())
            } else {
                s
            }
        }
    }
}

fn field_line(f: &FieldChange, indent: &str, paint: &Paint) -> String {
    if f.reordered {
        return format!(
            "{indent}{} {}: {} → {}\n",
            paint.c("36", "↕"),
            f.path,
            short(&f.old),
            short(&f.new)
        );
    }
    let sign = match (&f.old, &f.new) {
        (None, _) => paint.c("32", "+"),
        (_, None) => paint.c("31", "-"),
        _ => paint.c("33", "~"),
    };
    format!(
        "{indent}{sign} {}: {} → {}\n",
        f.path,
        short(&f.old),
        short(&f.new)
    )
}

/// The text of a diff: one line per change, fields under their node.
fn render(d: &GraphDiff, title: &str, paint: &Paint) -> String {
    let mut s = format!("{} {}\n", paint.c("1", "diff"), title);
    if d.same {
        s.push_str("  no graph change\n");
        return s;
    }
    for a in &d.agents {
        render_agent(a, d.agents.len() > 1 || a.change.is_some(), &mut s, paint);
    }
    if !d.fields.is_empty() {
        s.push_str("  outside the graph:\n");
        for f in &d.fields {
            s.push_str(&field_line(f, "    ", paint));
        }
    }
    s
}

fn render_agent(a: &AgentDiff, header: bool, s: &mut String, paint: &Paint) {
    if header {
        let what = match (a.change, &a.old_agent) {
            (Some(Change::Renamed), Some(o)) => format!(" (renamed from {o})"),
            (Some(Change::Added), _) => " (added)".into(),
            (Some(Change::Removed), _) => " (removed)".into(),
            _ => String::new(),
        };
        s.push_str(&format!("  agent {}{what}\n", a.agent));
    }
    for n in &a.nodes {
        let derived = if n.derived { ", derived" } else { "" };
        let line = match n.change {
            Change::Added => format!("{} node {} ({}{derived})", paint.c("32", "+"), n.id, n.kind),
            Change::Removed => {
                format!("{} node {} ({}{derived})", paint.c("31", "-"), n.id, n.kind)
            }
            Change::Renamed => format!(
                "{} node {} → {} ({}{derived}, renamed{})",
                paint.c("36", "→"),
                n.old_id.as_deref().unwrap_or("?"),
                n.id,
                n.kind,
                n.similarity
                    .map(|x| format!(", {:.0}% alike", x * 100.0))
                    .unwrap_or_default()
            ),
            Change::Changed => match &n.old_kind {
                Some(k) => format!(
                    "{} node {} ({k} → {}{derived})",
                    paint.c("33", "~"),
                    n.id,
                    n.kind
                ),
                None => format!("{} node {} ({}{derived})", paint.c("33", "~"), n.id, n.kind),
            },
        };
        s.push_str(&format!("  {line}\n"));
        for f in &n.fields {
            s.push_str(&field_line(f, "      ", paint));
        }
    }
    for e in &a.edges {
        let label = e
            .label
            .as_ref()
            .map(|l| format!(" [{l}]"))
            .unwrap_or_default();
        let line = match e.change {
            Change::Added => format!(
                "{} edge {} → {} ({}){label}",
                paint.c("32", "+"),
                e.from,
                e.to,
                e.kind
            ),
            Change::Removed => format!(
                "{} edge {} → {} ({}){label}",
                paint.c("31", "-"),
                e.from,
                e.to,
                e.kind
            ),
            _ => {
                let mut what = Vec::new();
                if let Some(o) = &e.old_label {
                    what.push(format!(
                        "{} {o:?} → {:?}",
                        if e.kind == "route" {
                            "option"
                        } else {
                            "condition"
                        },
                        e.label.as_deref().unwrap_or("")
                    ));
                }
                if let Some(o) = &e.old_to {
                    what.push(format!("target {o} → {}", e.to));
                }
                format!(
                    "{} edge {} → {} ({}){label}: {}",
                    paint.c("33", "~"),
                    e.from,
                    e.to,
                    e.kind,
                    what.join(", ")
                )
            }
        };
        s.push_str(&format!("  {line}\n"));
    }
    for r in &a.reorders {
        let what = if r.kind == "route" {
            "routes (options offered in another order)"
        } else {
            "branches (evaluated in another order)"
        };
        s.push_str(&format!("  {} {what} of {}\n", paint.c("36", "↕"), r.node));
        s.push_str(&format!("      was: {}\n", r.old.join(", ")));
        s.push_str(&format!("      now: {}\n", r.new.join(", ")));
    }
}

pub fn cmd_trace_diff(args: TraceDiffArgs) -> ExitCode {
    let paint = Paint { on: color() };
    let doc = match &args.file {
        Some(f) => match load_side(doc::load_path(f)) {
            Some(d) => Some(d),
            None => return ExitCode::from(2),
        },
        None => None,
    };
    let read = |p: &Path| {
        switchyard::run::launch::trace::Trace::read(p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let (a, b) = match (read(&args.a), read(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return fail(e),
    };
    let d = tdiff::compare(&a, &b, doc.as_ref());
    let mut out = std::io::stdout().lock();
    if args.json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&d).unwrap_or_default()
        );
    } else {
        let _ = out.write_all(render_trace(&d, &args.a, &args.b, &paint).as_bytes());
    }
    ExitCode::from(if d.first_divergence.is_none() { 0 } else { 1 })
}

fn render_trace(d: &tdiff::TraceDiff, a: &Path, b: &Path, paint: &Paint) -> String {
    let mut s = format!(
        "{} {} ↔ {}\n",
        paint.c("1", "trace diff"),
        a.display(),
        b.display()
    );
    match &d.first_divergence {
        None => s.push_str(&format!(
            "  the same run: {} step{}, no divergence\n",
            d.steps.len(),
            if d.steps.len() == 1 { "" } else { "s" }
        )),
        Some(x) => {
            s.push_str(&format!(
                "  {} at step {}: {}\n",
                paint.c("31;1", "first divergence"),
                x.step,
                x.message
            ));
            if x.a.is_some() || x.b.is_some() {
                s.push_str(&format!("      A: {}\n", short(&x.a)));
                s.push_str(&format!("      B: {}\n", short(&x.b)));
            }
        }
    }
    let w = 38;
    s.push_str(&format!("  {:>4}  {:<w$}  {}\n", "step", "A", "B"));
    for st in &d.steps {
        let cell = |side: &Option<tdiff::StepView>| match side {
            None => "—".to_string(),
            Some(v) => v.summary(),
        };
        let (ca, cb) = (cell(&st.a), cell(&st.b));
        let mark = if st.same { " " } else { "≠" };
        let ca = fit(&ca, w);
        let line = format!("{mark} {:>4}  {ca:<w$}  {cb}", st.step);
        s.push_str(&if st.same {
            format!("{line}\n")
        } else {
            format!("{}\n", paint.c("33", &line))
        });
    }
    if let (Some(a), Some(b)) = (&d.end_a, &d.end_b) {
        s.push_str(&format!("  end: A {a}, B {b}\n"));
    }
    s
}

fn fit(s: &str, w: usize) -> String {
    if s.chars().count() > w {
        format!("{}…", s.chars().take(w - 1).collect::<String>())
    } else {
        s.to_string()
    }
}
