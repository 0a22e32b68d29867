//! The `switchyard` command line: validate agent files, export their graphs.
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
    }
}
