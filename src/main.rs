//! The `switchyard` command line: validate agent files, export their graphs, run agents.
//! This is the only place in the engine crate that renders for a terminal.

use clap::{Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use switchyard::diag::{Diagnostic, render_human};
use switchyard::doc::{self, Document};
use switchyard::graph::{self, export};
use switchyard::validate;

#[derive(Parser)]
#[command(name = "switchyard", version, about = "Author, run and debug declarative LLM agent graphs (sherma and Loki)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum DiagFormat {
    Human,
    Json,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum GraphFormat {
    Mermaid,
    Dot,
    Json,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check agent files (sherma YAML files or Loki agent directories / graph.yaml files).
    ///
    /// Exit status: 0 no errors, 1 errors found, 2 usage or I/O problems.
    Validate {
        /// Files or agent directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Validate only this agent of a multi-agent sherma file.
        #[arg(long)]
        agent: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: DiagFormat,
        /// Do not print warnings.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Print an agent's graph (declared and derived nodes and edges).
    Graph {
        path: PathBuf,
        /// The agent of a multi-agent sherma file.
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, value_enum, default_value = "mermaid")]
        format: GraphFormat,
    },
    /// Run an agent. Narration (`▸` lines) and the performance summary go to stderr, the final
    /// output to stdout.
    ///
    /// Exit status: 0 completed, 1 failed, 2 usage or I/O problems, 3 interrupted (an
    /// interrupt, approval or input needs an answer: pass `--answer`), 130 stopped.
    Run {
        /// A sherma YAML file, or a Loki agent directory / graph.yaml.
        path: PathBuf,
        /// The agent of a multi-agent sherma file.
        #[arg(long)]
        agent: Option<String>,
        /// The user's input (sherma: a human message; Loki: the initial prompt).
        #[arg(long)]
        input: Option<String>,
        /// Initial state as a JSON object.
        #[arg(long)]
        state: Option<String>,
        /// Scripted LLM replies (YAML `replies: [...]`); default: `replies.yaml` beside the
        /// agent, else `<name>.cassette.json` / `cassette.json` beside it (replayed).
        #[arg(long, value_name = "FILE")]
        llm_script: Option<PathBuf>,
        /// Call the models the agent names over HTTP (OpenAI-compatible or Anthropic). Keys
        /// and base URLs from OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ... and the
        /// provider file ~/.config/switchyard/providers.yaml.
        #[arg(long, conflicts_with_all = ["llm_script", "replay"])]
        live: bool,
        /// Answer LLM calls and tool calls from a recorded cassette; the first request that
        /// differs from the recording is reported.
        #[arg(long, value_name = "CASSETTE.json", conflicts_with = "llm_script")]
        replay: Option<PathBuf>,
        /// With --replay: fail at the first request that differs from the recording.
        #[arg(long, requires = "replay")]
        replay_strict: bool,
        /// Record every LLM and tool exchange of this run into a cassette (for --replay).
        #[arg(long, value_name = "CASSETTE.json")]
        record: Option<PathBuf>,
        /// An answer for the next interrupt/approval/input, in order (repeatable). Text, or a
        /// JSON object/list for a structured answer, e.g.
        /// '{"content": "ok", "additional_kwargs": {"decision": "approve"}}'.
        #[arg(long = "answer", value_name = "TEXT")]
        answers: Vec<String>,
        /// Write every event as one JSON object per line.
        #[arg(long, value_name = "FILE.jsonl")]
        trace: Option<PathBuf>,
        /// Extra Python path entries for sherma `import_path` tools (repeatable).
        #[arg(long = "python-path", value_name = "DIR")]
        python_path: Vec<PathBuf>,
        /// No narration or summary on stderr.
        #[arg(short, long)]
        quiet: bool,
    },
}

fn color_for(stream_is_tty: bool) -> bool {
    stream_is_tty && std::env::var_os("NO_COLOR").is_none()
}

fn diag_json(d: &Diagnostic) -> serde_json::Value {
    let mut v = serde_json::json!({
        "severity": d.severity.as_str(),
        "code": d.code,
        "message": d.message,
        "file": d.file,
        "line": d.line,
        "column": d.column,
        "end_line": d.end_line,
        "end_column": d.end_column,
        "hint": d.hint,
    });
    if let Some(n) = &d.node {
        v["node"] = serde_json::json!(n);
    }
    v
}

fn cmd_validate(paths: &[PathBuf], agent: Option<&str>, format: DiagFormat, quiet: bool) -> ExitCode {
    let mut all = Vec::new();
    let mut io_problem = false;
    let mut any_error = false;
    let color = color_for(std::io::stdout().is_terminal());
    let mut out = std::io::stdout().lock();
    let (mut n_err, mut n_warn) = (0, 0);
    for p in paths {
        let d: Document = doc::load_path(p);
        io_problem |= d.io_error;
        let mut diags = validate::validate(&d, agent);
        if quiet {
            diags.retain(|x| x.is_error());
        }
        let (e, w) = validate::counts(&diags);
        n_err += e;
        n_warn += w;
        any_error |= e > 0;
        match format {
            DiagFormat::Json => all.extend(diags.iter().map(diag_json)),
            DiagFormat::Human => {
                let text = render_human(&diags, &d.files(), color);
                let _ = out.write_all(text.as_bytes());
            }
        }
    }
    match format {
        DiagFormat::Json => {
            let _ = writeln!(out, "{}", serde_json::to_string_pretty(&all).unwrap_or_else(|_| "[]".into()));
        }
        DiagFormat::Human => {
            let files = if paths.len() == 1 { "1 file".to_string() } else { format!("{} files", paths.len()) };
            let _ = writeln!(
                out,
                "{}: {n_err} error{}, {n_warn} warning{} in {files}",
                if n_err > 0 { "failed" } else { "ok" },
                if n_err == 1 { "" } else { "s" },
                if n_warn == 1 { "" } else { "s" },
            );
        }
    }
    if io_problem {
        ExitCode::from(2)
    } else if any_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn cmd_graph(path: &PathBuf, agent: Option<&str>, format: GraphFormat) -> ExitCode {
    let d = doc::load_path(path);
    let color = color_for(std::io::stderr().is_terminal());
    if d.io_error {
        eprint!("{}", render_human(&d.diagnostics, &d.files(), color));
        return ExitCode::from(2);
    }
    let (g, diags) = graph::lower(&d, agent);
    let Some(g) = g else {
        let mut shown = diags;
        if shown.is_empty() {
            shown = d.diagnostics.iter().filter(|x| x.is_error()).cloned().collect();
        }
        eprint!("{}", render_human(&shown, &d.files(), color));
        let usage = shown.iter().any(|x| x.code == "agent-ambiguous" || x.code == "agent-not-found");
        return ExitCode::from(if usage { 2 } else { 1 });
    };
    let errors: Vec<Diagnostic> = d.diagnostics.iter().filter(|x| x.is_error()).cloned().collect();
    if !errors.is_empty() {
        eprint!("{}", render_human(&errors, &d.files(), color));
        eprintln!("note: the graph below is drawn from a file with errors");
    }
    let text = match format {
        GraphFormat::Json => serde_json::to_string_pretty(&export::to_json(&g)).unwrap_or_default() + "\n",
        GraphFormat::Mermaid => export::to_mermaid(&g),
        GraphFormat::Dot => export::to_dot(&g),
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    ExitCode::SUCCESS
}

/// An `--answer`: JSON when it looks like an object or list, else text.
fn parse_answer(text: &str) -> serde_json::Value {
    let t = text.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        if let Ok(v) = serde_json::from_str(text) {
            return v;
        }
    }
    serde_json::Value::String(text.to_string())
}

struct RunArgs {
    path: PathBuf,
    agent: Option<String>,
    input: Option<String>,
    state: Option<String>,
    llm_script: Option<PathBuf>,
    live: bool,
    replay: Option<PathBuf>,
    replay_strict: bool,
    record: Option<PathBuf>,
    answers: Vec<String>,
    trace: Option<PathBuf>,
    python_path: Vec<PathBuf>,
    quiet: bool,
}

/// Ask on the terminal; `None` when stdin is closed.
fn ask(pending: &switchyard::run::session::Pending) -> Option<serde_json::Value> {
    use std::io::BufRead;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "\n? {}", pending.prompt);
    for (i, o) in pending.options.iter().enumerate() {
        let _ = writeln!(err, "  {}) {o}", i + 1);
    }
    if let Some(d) = &pending.default {
        let _ = writeln!(err, "  (empty answer: {d})");
    }
    let _ = write!(err, "> ");
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).ok()? == 0 {
        return None;
    }
    let line = line.trim_end_matches(['\n', '\r']).to_string();
    if let Ok(n) = line.trim().parse::<usize>() {
        if n >= 1 && n <= pending.options.len() {
            return Some(serde_json::Value::String(pending.options[n - 1].clone()));
        }
    }
    Some(parse_answer(&line))
}

fn cmd_run(a: RunArgs) -> ExitCode {
    use std::sync::{Arc, Mutex};
    use switchyard::run::events::RunStatus;
    use switchyard::run::launch::{self, RunRequest};
    use switchyard::run::narrate::{Narrator, perf_summary};
    use switchyard::run::provider::NoProvider;
    use switchyard::run::session::{RunOptions, Status};

    let color = color_for(std::io::stderr().is_terminal());
    let d = doc::load_path(&a.path);
    if d.io_error {
        eprint!("{}", render_human(&d.diagnostics, &d.files(), color));
        return ExitCode::from(2);
    }
    let state = match a.state.as_deref().map(serde_json::from_str::<serde_json::Value>) {
        None => None,
        Some(Ok(v)) if v.is_object() => Some(v),
        Some(Ok(_)) => {
            eprintln!("error: --state must be a JSON object, e.g. '{{\"count\": 1}}'");
            return ExitCode::from(2);
        }
        Some(Err(e)) => {
            eprintln!("error: --state is not valid JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let req = RunRequest {
        agent: a.agent,
        input: a.input,
        state,
        llm_script: a.llm_script,
        python_path: a.python_path,
        replay: a.replay,
        replay_strict: a.replay_strict,
        live: a.live,
        record: a.record,
    };
    let trace = match &a.trace {
        None => None,
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Some(Arc::new(Mutex::new(std::io::BufWriter::new(f)))),
            Err(e) => {
                eprintln!("error: cannot write the trace {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
    };
    let narrator = Arc::new(Mutex::new(Narrator::new()));
    let listener: switchyard::run::session::Listener = {
        let trace = trace.clone();
        let narrator = narrator.clone();
        let quiet = a.quiet;
        Arc::new(move |ev| {
            if let Some(t) = &trace {
                let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
                let _ = writeln!(t, "{}", ev.to_json_line());
            }
            if !quiet {
                let lines = narrator.lock().unwrap_or_else(|p| p.into_inner()).feed(ev);
                let mut err = std::io::stderr().lock();
                for l in lines {
                    let _ = if color { writeln!(err, "\x1b[38;5;243m{l}\x1b[0m") } else { writeln!(err, "{l}") };
                }
            }
        })
    };
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.answers = a.answers.iter().map(|s| parse_answer(s)).collect();
    options.listener = Some(listener);
    let mut session = match launch::start(Arc::new(d), &req, options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let interactive = std::io::stdin().is_terminal();
    loop {
        match session.run().clone() {
            Status::Interrupted { pending } => {
                let answer = if interactive { ask(&pending) } else { None };
                match answer {
                    Some(v) => {
                        if let Err(e) = session.answer(&pending.id, v) {
                            // Refused (e.g. an input that fails its validation): ask again.
                            eprintln!("{e}; try again");
                        }
                    }
                    None => {
                        session.give_up_interrupted();
                        break;
                    }
                }
            }
            Status::Finished { .. } => break,
            // No breakpoints from the CLI; a pause can only be a requested one.
            Status::Paused { .. } | Status::Ready => continue,
        }
    }
    let lines = narrator.lock().unwrap_or_else(|p| p.into_inner()).finish();
    if let Some(t) = &trace {
        let _ = t.lock().unwrap_or_else(|p| p.into_inner()).flush();
    }
    let Status::Finished { status, output } = session.status().clone() else { return ExitCode::from(1) };
    if !a.quiet {
        let mut err = std::io::stderr().lock();
        for l in lines {
            let _ = writeln!(err, "{l}");
        }
        if status == RunStatus::Completed {
            let _ = writeln!(err, "performance summary (slowest first):");
            for l in perf_summary(&session.events()) {
                let _ = writeln!(err, "  {l}");
            }
        }
    }
    match status {
        RunStatus::Completed => {
            let text = match &output {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => String::new(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            if !text.is_empty() {
                println!("{text}");
            }
            ExitCode::SUCCESS
        }
        RunStatus::Failed => {
            if let Some((node, message)) = session.failure() {
                let at = node.as_deref().map(|n| format!(" at node `{n}`")).unwrap_or_default();
                eprintln!("error: the run failed{at}: {message}");
            }
            ExitCode::from(1)
        }
        RunStatus::Interrupted => {
            if let Some(switchyard::run::events::EventBody::Interrupt { node, prompt, .. }) =
                session.events().iter().rev().find_map(|e| match &e.body {
                    b @ switchyard::run::events::EventBody::Interrupt { .. } => Some(b.clone()),
                    _ => None,
                })
            {
                eprintln!(
                    "interrupted: node `{node}` waits for an answer: {prompt}\n\
                     hint: run again with `--answer TEXT` (once per question, in order; JSON for a \
                     structured answer), or from a terminal to answer interactively"
                );
            }
            ExitCode::from(3)
        }
        RunStatus::Stopped => ExitCode::from(130),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => ExitCode::SUCCESS,
                _ => ExitCode::from(2),
            };
        }
    };
    match cli.cmd {
        Cmd::Validate { paths, agent, format, quiet } => cmd_validate(&paths, agent.as_deref(), format, quiet),
        Cmd::Graph { path, agent, format } => cmd_graph(&path, agent.as_deref(), format),
        Cmd::Run { path, agent, input, state, llm_script, live, replay, replay_strict, record, answers, trace, python_path, quiet } => {
            cmd_run(RunArgs {
                path,
                agent,
                input,
                state,
                llm_script,
                live,
                replay,
                replay_strict,
                record,
                answers,
                trace,
                python_path,
                quiet,
            })
        }
    }
}
