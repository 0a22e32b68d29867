//! The `switchyard` command line: validate agent files, export their graphs, run agents.
//! This is the only place in the engine crate that renders for a terminal.

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use switchyard::diag::{Diagnostic, render_human};
use switchyard::doc::{self, Document};
use switchyard::graph::{self, export};
use switchyard::validate;

mod diff_cmd;
mod package_assets;
mod test_cmd;

/// `switchyard --version`: the package version, the commit and its date (build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("SWITCHYARD_COMMIT"), ")");

#[derive(Parser)]
#[command(name = "switchyard", version = VERSION, about = "Author, run and debug declarative LLM agent graphs (sherma and Loki)")]
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
    /// Check agent files (sherma YAML files or Loki agent directories / graph.yaml files), or
    /// every agent of a coyote bundle folder (`agents/<name>/graph.yaml|config.yaml`, optional
    /// `coyote-bundle.yaml`).
    ///
    /// Exit status: 0 no errors, 1 errors found, 2 usage or I/O problems.
    #[command(
        mut_arg("agent", help("Validate only this agent of a multi-agent sherma file")),
        mut_arg("quiet", help("Do not print warnings"))
    )]
    Validate {
        /// Files, agent directories or bundle folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[command(flatten)]
        agent: AgentArg,
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: DiagFormat,
        #[command(flatten)]
        quiet: QuietArg,
    },
    /// Print an agent's graph (declared and derived nodes and edges).
    Graph {
        path: PathBuf,
        #[command(flatten)]
        agent: AgentArg,
        #[arg(long, value_enum, default_value = "mermaid")]
        format: GraphFormat,
    },
    /// Compare two versions of an agent file as graphs: nodes and edges added, removed,
    /// changed or renamed, changed fields with old and new values, reordered branches; comments
    /// and formatting are no change. `--rev [REV]` compares a file with its git revision
    /// (default HEAD).
    ///
    /// Exit status: 0 the same graph, 1 different, 2 usage or I/O problems.
    Diff(diff_cmd::DiffArgs),
    /// Recorded runs (JSONL traces of `run --trace`).
    Trace {
        #[command(subcommand)]
        action: TraceAction,
    },
    /// Run an agent. Narration (`▸` lines) and the performance summary go to stderr, the final
    /// output to stdout.
    ///
    /// Exit status: 0 completed, 1 failed, 2 usage or I/O problems, 3 interrupted (an
    /// interrupt, approval or input needs an answer: pass `--answer`), 130 stopped.
    Run(RunArgs),
    /// Go on with a durable run from its last checkpoint (after an interrupt, a pause, or a
    /// process that died). The agent file is read again; a changed file is refused unless
    /// --force. Exit status as for `run`.
    Resume(ResumeArgs),
    /// Run agent test suites: every `*.tests.yaml` under the paths (default: the current
    /// folder), their cases in parallel, each a run of the agent with scripted replies, a
    /// cassette or a live model and queued answers, checked against its expectations (nodes,
    /// edges, status, state, output, budgets). Running a suite runs its agent: the agent's
    /// folder must be trusted (or pass --trust).
    ///
    /// Exit status: 0 every case passed, 1 a case failed or could not run, 2 no suite found,
    /// a suite file with errors, an untrusted agent, or an I/O problem.
    Test(test_cmd::TestArgs),
    /// Trust a folder, so that `run` and `resume` may execute what its agent files name
    /// (scripts, tools, MCP commands, Python imports, hooks) and contact their hosts. A
    /// file's folder is its project root: the nearest folder holding `.git`, else the agent's
    /// folder; trusting a folder trusts everything under it. `validate` and `graph` never need
    /// trust. The list is kept in ~/.config/switchyard/trust.json ($SWITCHYARD_TRUST).
    Trust(TrustArgs),
    /// List durable runs (id, agent, file, status, updated, step), or delete them.
    #[command(mut_arg("db", |a| a.global(true)))]
    Runs {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        server: ServerUrlArg,
        #[command(subcommand)]
        action: Option<RunsAction>,
    },
    /// Answer the question a run of a server waits for (`switchyard serve`): an approval's
    /// option, an input's text, or a sherma interrupt's answer (JSON when it is an object or a
    /// list). Exit status: 0 answered, 1 refused (answered already, not waiting, failed the
    /// input's validation), 2 usage or connection problems.
    Answer {
        #[command(flatten)]
        server: ServerUrlArg,
        /// The run's id (`switchyard runs --server URL` lists them).
        run: String,
        answer: String,
        /// Your name, recorded in the server's audit log beside the token's.
        #[arg(long)]
        by: Option<String>,
    },
    /// Serve the agents under a folder over HTTP: the LangGraph Platform API (assistants,
    /// threads, runs, streaming, interrupts resumed with `command: {resume: ...}`) and
    /// Switchyard's own endpoints under /switchyard/ (waiting runs, answers and their audit
    /// log, debugger event streams). Runs are durable: a server started again on the same store
    /// goes on with them. Serving a folder trusts it. Without a token (`switchyard token
    /// create`) the server listens on loopback addresses only. Stops on Ctrl-C / SIGTERM.
    Serve(ServeArgs),
    /// A worker for runs on Restate: serves Restate's protocol on --listen (workers on one
    /// machine may share it) and executes runs of the agents under --agents, one Restate
    /// workflow per run; registers itself with Restate's admin API (docs/restate.md).
    Worker(WorkerArgs),
    /// Manage the API tokens of a server's store (`serve` needs one on every request once one
    /// exists; only a hash of each is kept).
    Token {
        #[command(flatten)]
        db: ServerDbArg,
        #[command(subcommand)]
        action: TokenAction,
    },
}

/// `switchyard serve`'s arguments.
#[derive(clap::Args)]
struct ServeArgs {
    /// The folder whose agents become assistants (sherma files, Loki graph folders, coyote
    /// bundles).
    #[arg(long, value_name = "DIR")]
    agents: PathBuf,
    /// The address to listen on (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:2024")]
    listen: std::net::SocketAddr,
    #[command(flatten)]
    db: ServerDbArg,
    /// Call the models the agents name over HTTP (keys as for `run --live`); default: the
    /// scripted replies beside each agent (`replies.yaml`).
    #[arg(long)]
    live: bool,
    /// Where runs execute: `embedded` (in this process, durable in --db) or `restate` (on
    /// Restate's workers, see `switchyard worker`; needs --restate).
    #[arg(long, value_name = "ENGINE", default_value = "embedded", value_parser = ["embedded", "restate"])]
    engine: String,
    /// Restate's ingress URL (with --engine restate).
    #[arg(long, value_name = "URL")]
    restate: Option<String>,
    /// Restate's admin API, where runs are read (with --engine restate; default: the ingress's
    /// host on port 9070).
    #[arg(long = "restate-admin", value_name = "URL")]
    restate_admin: Option<String>,
}

/// `switchyard worker`'s arguments.
#[derive(clap::Args)]
struct WorkerArgs {
    /// Restate's ingress URL (the admin URL is the same host on port 9070 unless --admin).
    #[arg(long, value_name = "URL")]
    restate: String,
    /// The folder of the agents it runs (the same as the server's).
    #[arg(long, value_name = "DIR")]
    agents: PathBuf,
    /// Where Restate reaches this worker (several workers on one machine may share it).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9080")]
    listen: std::net::SocketAddr,
    /// Restate's admin API.
    #[arg(long, value_name = "URL")]
    admin: Option<String>,
    /// Do not register with Restate (register once by hand: docs/restate.md).
    #[arg(long)]
    no_register: bool,
}

/// `--server` / `--token`: a `switchyard serve` to talk to.
#[derive(clap::Args)]
struct ServerUrlArg {
    /// The server's URL (http://host:port); `runs` lists its runs instead of the local store's.
    #[arg(long, value_name = "URL", global = true)]
    server: Option<String>,
    /// Its API token (default: $SWITCHYARD_TOKEN).
    #[arg(long, value_name = "TOKEN", global = true)]
    token: Option<String>,
}

impl ServerUrlArg {
    fn client(&self) -> Result<Option<switchyard::serve::client::Client>, String> {
        let token = self.token.clone().or_else(|| std::env::var("SWITCHYARD_TOKEN").ok());
        self.server.as_deref().map(|s| switchyard::serve::client::Client::new(s, token)).transpose()
    }
}

/// `--db` of `serve` and `token`.
#[derive(clap::Args)]
struct ServerDbArg {
    /// The server's store (default: server.sqlite beside the default run store).
    #[arg(long, value_name = "FILE.sqlite", global = true)]
    db: Option<PathBuf>,
}

#[derive(Subcommand)]
enum TraceAction {
    /// Compare two runs step by step (an original and its fork, or two runs of one agent):
    /// the first divergence (node, LLM request or reply, state value, route), then the steps
    /// side by side. Exit status: 0 the same run, 1 they diverge, 2 usage or I/O problems.
    Diff(diff_cmd::TraceDiffArgs),
}

#[derive(Subcommand)]
enum TokenAction {
    /// Make a token; it is printed once (keep it: only its hash is stored).
    Create {
        /// Who uses it (recorded with every answer given with it).
        name: String,
    },
    /// List the tokens (id, name, created, revoked).
    List,
    /// Revoke the tokens with this id or name.
    Revoke { id_or_name: String },
}

// Flags several commands share, one group each (`#[command(flatten)]`). A command whose help
// text for one differs from the group's says so with `#[command(mut_arg(ID, help(TEXT)))]`.

/// `#[command(mut_arg(ID, help(TEXT)))]`: a shared flag's help text in one command.
fn help(text: &'static str) -> impl FnOnce(clap::Arg) -> clap::Arg {
    move |a| a.help(text)
}

/// `--agent` (`validate`, `graph`, `run`).
#[derive(clap::Args)]
struct AgentArg {
    /// The agent of a multi-agent sherma file.
    #[arg(long)]
    agent: Option<String>,
}

/// `-q, --quiet` (`validate`, `run`, `resume`); what it silences is the command's help text.
#[derive(clap::Args)]
struct QuietArg {
    #[arg(short, long)]
    quiet: bool,
}

/// `--db`: the durable run store (`run`, `resume`, `runs`).
#[derive(clap::Args)]
struct DbArg {
    /// The run store (default as for `run --durable`).
    #[arg(long, value_name = "FILE.sqlite")]
    db: Option<PathBuf>,
}

impl DbArg {
    /// The store named, else the default one.
    fn or_default(self) -> PathBuf {
        self.db.unwrap_or_else(switchyard::run::store::default_db_path)
    }
}

/// `--trace` (`run`, `resume`).
#[derive(clap::Args)]
struct TraceArg {
    /// Write every event as one JSON object per line.
    #[arg(long, value_name = "FILE.jsonl")]
    trace: Option<PathBuf>,
}

/// `--answer`, repeatable (`run`, `resume`).
#[derive(clap::Args)]
struct AnswerArg {
    /// An answer for the next interrupt/approval/input, in order (repeatable). Text, or a
    /// JSON object/list for a structured answer, e.g.
    /// '{"content": "ok", "additional_kwargs": {"decision": "approve"}}'.
    #[arg(long = "answer", value_name = "TEXT")]
    answers: Vec<String>,
}

impl AnswerArg {
    /// The answers, each JSON when it looks like an object or list, else text.
    fn values(&self) -> Vec<serde_json::Value> {
        self.answers.iter().map(|s| parse_answer(s)).collect()
    }
}

/// `--answer-stdin` (`run`, `resume`).
#[derive(clap::Args)]
struct AnswerStdinArg {
    /// Read answers from stdin, one line per question, even when stdin is not a terminal
    /// (a durable run stays interrupted and resumable when stdin ends).
    #[arg(long)]
    answer_stdin: bool,
}

/// `--trust` (`run`, `resume`).
#[derive(clap::Args)]
struct TrustArg {
    /// Trust the agent's folder for this run only (see `switchyard trust`).
    #[arg(long)]
    trust: bool,
}

/// `switchyard trust`'s arguments.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("action").args(["path", "list", "remove"]).required(true)))]
struct TrustArgs {
    /// An agent file or folder: its project root becomes trusted.
    path: Option<PathBuf>,
    /// List the trusted folders.
    #[arg(long)]
    list: bool,
    /// Stop trusting this folder (and the trusted folders under it).
    #[arg(long, value_name = "PATH")]
    remove: Option<PathBuf>,
}

/// Where `run`'s LLM answers come from.
#[derive(clap::Args)]
struct LlmArgs {
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
    /// Record every LLM and tool exchange of this run into a cassette (for --replay), with
    /// what scripts, hooks, Python tools and RAG nodes returned. Secrets are redacted.
    #[arg(long, value_name = "CASSETTE.json")]
    record: Option<PathBuf>,
    /// With --record: keep secrets in the cassette as they are instead of redacting them.
    #[arg(long, requires = "record")]
    raw: bool,
}

#[derive(Subcommand)]
enum RunsAction {
    /// List the runs, most recently updated first (the default).
    List {
        /// One JSON object per run instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Delete runs and their checkpoints.
    Delete {
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Delete runs not updated for a while (any status).
    Prune {
        /// An age: 7d, 12h, 30m, 90s, 2w.
        #[arg(long, value_name = "AGE")]
        older_than: String,
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
    let mut n_files = 0;
    for p in paths {
        // A coyote bundle folder: every agent in it, then a line for the bundle.
        if let Some(b) = doc::bundle::discover(p) {
            let mut diags = b.diagnostics.clone();
            let mut files: Vec<switchyard::source::SourceFile> = b.manifest.iter().map(|m| m.file.clone()).collect();
            let (mut b_err, mut b_warn) = validate::counts(&diags);
            let mut lines = Vec::new();
            for a in &b.agents {
                let d: Document = doc::load_path(&a.file);
                io_problem |= d.io_error;
                let mut ad = validate::validate(&d, None);
                ad.extend(switchyard::run::launch::manifest::restricted(&d));
                // A config.yaml agent is what a bundle's agent nodes spawn: not a graph to draw,
                // but not an error in a bundle either (its YAML is still checked).
                if a.kind == doc::bundle::AgentKind::Config {
                    ad.retain(|x| x.code != "loki-normal-agent");
                }
                let (e, w) = validate::counts(&ad);
                b_err += e;
                b_warn += w;
                lines.push(format!("  {} {} ({}): {}", if e > 0 { "✗" } else { "✓" }, a.name, a.kind.as_str(), plural_counts(e, w)));
                files.extend(d.files());
                diags.extend(ad);
            }
            if quiet {
                diags.retain(|x| x.is_error());
                b_warn = 0;
            }
            n_err += b_err;
            n_warn += b_warn;
            n_files += b.agents.len() + usize::from(b.manifest.is_some());
            any_error |= b_err > 0;
            match format {
                DiagFormat::Json => all.extend(diags.iter().map(diag_json)),
                DiagFormat::Human => {
                    let text = render_human(&diags, &files, color);
                    let _ = out.write_all(text.as_bytes());
                    let graphs = b.agents.iter().filter(|a| a.kind == doc::bundle::AgentKind::Graph).count();
                    let _ = writeln!(
                        out,
                        "bundle {} ({}): {} agent{} ({graphs} graph, {} config){}: {}",
                        b.name(),
                        p.display(),
                        b.agents.len(),
                        if b.agents.len() == 1 { "" } else { "s" },
                        b.agents.len() - graphs,
                        if b.manifest.is_some() { format!(", {}", doc::bundle::MANIFEST_FILE) } else { String::new() },
                        plural_counts(b_err, b_warn),
                    );
                    for l in lines {
                        let _ = writeln!(out, "{l}");
                    }
                }
            }
            continue;
        }
        n_files += 1;
        let d: Document = doc::load_path(p);
        io_problem |= d.io_error;
        let mut diags = validate::validate(&d, agent);
        // Files outside the project root are refused unless the folder is trusted.
        diags.extend(switchyard::run::launch::manifest::restricted(&d));
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
            let files = if n_files == 1 { "1 file".to_string() } else { format!("{n_files} files") };
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

/// `2 errors, 1 warning`.
fn plural_counts(e: usize, w: usize) -> String {
    format!("{e} error{}, {w} warning{}", if e == 1 { "" } else { "s" }, if w == 1 { "" } else { "s" })
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

/// `switchyard run`'s argument and flags.
#[derive(clap::Args)]
#[command(
    mut_arg("quiet", help("No narration or summary on stderr")),
    mut_arg(
        "db",
        help(
            "The run store (implies --durable). Default: the sherma file's `checkpointer.path`, else \
             $SWITCHYARD_RUNS_DB, else $XDG_DATA_HOME/switchyard/runs.sqlite (~/.local/share/switchyard/runs.sqlite)"
        )
    )
)]
struct RunArgs {
    /// A sherma YAML file, or a Loki agent directory / graph.yaml.
    path: PathBuf,
    #[command(flatten)]
    agent: AgentArg,
    /// The user's input (sherma: a human message; Loki: the initial prompt).
    #[arg(long)]
    input: Option<String>,
    /// Initial state as a JSON object.
    #[arg(long)]
    state: Option<String>,
    #[command(flatten)]
    llm: LlmArgs,
    #[command(flatten)]
    answers: AnswerArg,
    #[command(flatten)]
    trace: TraceArg,
    /// Extra Python path entries for sherma `import_path` tools (repeatable).
    #[arg(long = "python-path", value_name = "DIR")]
    python_path: Vec<PathBuf>,
    #[command(flatten)]
    quiet: QuietArg,
    /// Make the run durable: every step is written to a SQLite run store, so a run that is
    /// interrupted (or whose process dies) can be resumed with `switchyard resume ID`.
    /// Also on when a sherma file says `checkpointer: {type: sqlite}`.
    #[arg(long)]
    durable: bool,
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    answer_stdin: AnswerStdinArg,
    #[command(flatten)]
    trust: TrustArg,
    /// Let a scripted or replayed run use the network (remote hooks, skill and RAG URLs,
    /// embeddings, A2A agents, MCP servers over HTTP); such runs are offline otherwise.
    #[arg(long)]
    allow_network: bool,
    /// Print what running the agent would execute, contact and read (the run manifest) and
    /// exit without running anything; needs no trust.
    #[arg(long)]
    manifest: bool,
    /// With --manifest: the output format.
    #[arg(long, value_enum, default_value = "human", requires = "manifest")]
    format: DiagFormat,
}

/// `switchyard resume`'s argument and flags.
#[derive(clap::Args)]
#[command(
    mut_arg(
        "answers",
        help(
            "The answer to the question the run waits for, then to later ones (repeatable; JSON when it looks \
             like an object or list, else text)"
        )
    ),
    mut_arg("trace", help("Write every event of this part of the run as one JSON object per line")),
    mut_arg("answer_stdin", help("Read answers from stdin (see `run --answer-stdin`)"))
)]
struct ResumeArgs {
    /// The run id (`switchyard runs` lists them).
    id: String,
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    answers: AnswerArg,
    /// An answer given as JSON (any value: "text", 3, {...}); used after the --answer ones.
    #[arg(long = "answer-json", value_name = "JSON")]
    answers_json: Vec<String>,
    /// Resume even though the agent file changed since the run started.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    trace: TraceArg,
    #[command(flatten)]
    answer_stdin: AnswerStdinArg,
    #[command(flatten)]
    quiet: QuietArg,
    #[command(flatten)]
    trust: TrustArg,
}

/// Ask on the terminal; `None` when stdin is closed.
fn ask(pending: &switchyard::run::session::Pending) -> Option<serde_json::Value> {
    use std::io::BufRead;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "\n? {}", switchyard::secrets::redact(&pending.prompt));
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

/// What `run` and `resume` print around a run: narration, the trace, the final output.
struct Frontend {
    color: bool,
    quiet: bool,
    trace: Option<std::sync::Arc<std::sync::Mutex<std::io::BufWriter<std::fs::File>>>>,
    narrator: std::sync::Arc<std::sync::Mutex<switchyard::run::narrate::Narrator>>,
}

impl Frontend {
    fn new(trace: &TraceArg, quiet: &QuietArg) -> Result<Frontend, String> {
        use std::sync::{Arc, Mutex};
        let trace = match &trace.trace {
            None => None,
            Some(p) => match {
                use std::os::unix::fs::OpenOptionsExt;
                // Readable by the user only: a trace holds the run's states.
                std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(p)
            } {
                Ok(f) => Some(Arc::new(Mutex::new(std::io::BufWriter::new(f)))),
                Err(e) => return Err(format!("cannot write the trace {}: {e}", p.display())),
            },
        };
        Ok(Frontend {
            color: color_for(std::io::stderr().is_terminal()),
            quiet: quiet.quiet,
            trace,
            narrator: Arc::new(Mutex::new(switchyard::run::narrate::Narrator::new())),
        })
    }

    fn listener(&self) -> switchyard::run::session::Listener {
        let trace = self.trace.clone();
        let narrator = self.narrator.clone();
        let (quiet, color) = (self.quiet, self.color);
        std::sync::Arc::new(move |ev| {
            if let Some(t) = &trace {
                let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
                let _ = writeln!(t, "{}", ev.to_file_line());
            }
            if !quiet {
                let lines = narrator.lock().unwrap_or_else(|p| p.into_inner()).feed(ev);
                let mut err = std::io::stderr().lock();
                for l in lines {
                    let _ = if color { writeln!(err, "\x1b[38;5;243m{l}\x1b[0m") } else { writeln!(err, "{l}") };
                }
            }
        })
    }
}

/// A durable run as the CLI reports it.
struct DurableInfo {
    id: String,
    db: PathBuf,
}

impl DurableInfo {
    /// `switchyard resume ID [--db DB]` (the store named only when it is not the default).
    fn resume_command(&self) -> String {
        let default = switchyard::run::store::default_db_path();
        if self.db == default {
            format!("switchyard resume {}", self.id)
        } else {
            format!("switchyard resume {} --db {}", self.id, shell_word(&self.db.display().to_string()))
        }
    }
}

fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn cmd_run(a: RunArgs) -> ExitCode {
    use std::sync::Arc;
    use switchyard::run::launch::{self, RunRequest};
    use switchyard::run::provider::NoProvider;
    use switchyard::run::session::RunOptions;

    let color = color_for(std::io::stderr().is_terminal());
    let d = doc::load_path(&a.path);
    if d.io_error {
        eprint!("{}", render_human(&d.diagnostics, &d.files(), color));
        return ExitCode::from(2);
    }
    if a.manifest {
        let m = launch::manifest::manifest(&d);
        match a.format {
            DiagFormat::Human => print!("{}", m.to_text()),
            DiagFormat::Json => println!("{}", serde_json::to_string_pretty(&m).unwrap_or_default()),
        }
        return ExitCode::SUCCESS;
    }
    if let Err(code) = require_trust(&d, a.trust.trust, "run") {
        return code;
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
        agent: a.agent.agent,
        input: a.input,
        state,
        llm_script: a.llm.llm_script,
        python_path: a.python_path,
        replay: a.llm.replay,
        replay_strict: a.llm.replay_strict,
        live: a.llm.live,
        record: a.llm.record,
        record_raw: a.llm.raw,
        allow_network: a.allow_network,
    };
    for (what, file) in [("cassette", req.record.as_ref()), ("trace", a.trace.trace.as_ref())] {
        if let Some(file) = file {
            warn_if_committable(what, file);
        }
    }
    let fe = match Frontend::new(&a.trace, &a.quiet) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.answers = a.answers.values();
    options.listener = Some(fe.listener());
    let yaml_db = switchyard::run::store::yaml_checkpointer(&d);
    let db = a.db.db.or(yaml_db).or_else(|| a.durable.then(switchyard::run::store::default_db_path));
    let doc = Arc::new(d);
    let (session, durable) = match db {
        None => match launch::start(doc, &req, options) {
            Ok(s) => (s, None),
            Err(e) => {
                eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
                return ExitCode::from(2);
            }
        },
        Some(db) => {
            let started = (|| {
                let llm = launch::llm_choice(&doc, &req);
                let provider = launch::provider_for(&doc, &req)?;
                switchyard::run::store::start(&db, doc.clone(), &req, llm, Some(provider), options)
            })();
            match started {
                Ok(s) => {
                    let info = DurableInfo { id: s.id().to_string(), db };
                    eprintln!("durable run {} (run store {})", info.id, info.db.display());
                    (s, Some(info))
                }
                Err(e) => {
                    eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
                    return ExitCode::from(2);
                }
            }
        }
    };
    drive(session, &fe, a.answer_stdin.answer_stdin, durable.as_ref())
}

/// A recording (cassette or trace) about to be written inside a git work tree that does not
/// ignore it could be committed: say so, and give the line that ignores it.
fn warn_if_committable(what: &str, file: &std::path::Path) {
    use switchyard::run::launch::worktree;
    let Some(wt) = worktree::check(file) else { return };
    if wt.ignored {
        return;
    }
    let line = worktree::pattern(&wt.relative);
    eprintln!(
        "warning: the {what} {} is inside the git work tree {} and git does not ignore it; it holds prompts, replies and tool results{}.\n  \
         to keep it out of commits: echo '{line}' >> {}",
        file.display(),
        wt.root.display(),
        if what == "cassette" { " (secrets redacted unless --raw)" } else { "" },
        wt.root.join(".gitignore").display()
    );
}

/// Refuse (exit 2) to run `d` unless its folder is trusted or `once` (`--trust`) says so, naming
/// what would execute and how to trust it. A trusted run whose manifest changed since the last
/// one says so on stderr (and remembers the new one).
fn require_trust(d: &Document, once: bool, verb: &str) -> Result<(), ExitCode> {
    use switchyard::run::launch::{manifest, trust};
    let m = manifest::manifest(d);
    let trusted = match trust::trusted_folder(&d.path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
            return Err(ExitCode::from(2));
        }
    };
    if trusted.is_none() && !once {
        let mut msg = format!(
            "error: refusing to {verb} {}: its folder {} is not trusted.\n",
            d.path.display(),
            m.root.display()
        );
        if m.is_inert() {
            msg.push_str("The file names nothing that executes or connects, but running it still needs trust.\n");
        } else {
            msg.push_str("Running it would:\n");
            for line in m.summary(12) {
                msg.push_str(&format!("  - {line}\n"));
            }
        }
        msg.push_str(&format!(
            "hint: review it with `switchyard run {} --manifest`; trust the folder with `switchyard trust {}`, or pass --trust for this run only",
            shell_word(&d.path.display().to_string()),
            shell_word(&m.root.display().to_string())
        ));
        eprintln!("{msg}");
        return Err(ExitCode::from(2));
    }
    if trusted.is_some() {
        match trust::confirmed_manifest(&d.path) {
            Ok(Some(h)) if h == m.hash => {}
            Ok(previous) => {
                // The manifest is shown before the first run of the file and whenever it changed.
                if !m.is_inert() {
                    if previous.is_some() {
                        eprintln!("note: what this agent runs changed since its last run:");
                    } else {
                        eprintln!("note: the first run of this file; it will:");
                    }
                    for line in m.summary(12) {
                        eprintln!("  - {line}");
                    }
                }
                let _ = trust::confirm_manifest(&d.path, &m.hash);
            }
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    Ok(())
}

/// `switchyard trust`.
fn cmd_trust(a: TrustArgs) -> ExitCode {
    use switchyard::run::launch::trust;
    if a.list {
        return match trust::list() {
            Ok(folders) if folders.is_empty() => {
                eprintln!("no trusted folders");
                ExitCode::SUCCESS
            }
            Ok(folders) => {
                for f in folders {
                    println!("{}", f.display());
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
                ExitCode::from(2)
            }
        };
    }
    if let Some(p) = a.remove {
        return match trust::untrust(&p) {
            Ok(gone) if gone.is_empty() => {
                eprintln!("error: {} is not a trusted folder (`switchyard trust --list` lists them)", p.display());
                ExitCode::from(2)
            }
            Ok(gone) => {
                for f in gone {
                    eprintln!("no longer trusted: {}", f.display());
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
                ExitCode::from(2)
            }
        };
    }
    let Some(p) = a.path else { return ExitCode::from(2) };
    if !p.exists() {
        eprintln!("error: {} does not exist", p.display());
        return ExitCode::from(2);
    }
    match trust::trust(&p) {
        Ok((root, true)) => {
            eprintln!("trusted {}", root.display());
            ExitCode::SUCCESS
        }
        Ok((root, false)) => {
            eprintln!("{} is already trusted", root.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// `switchyard resume`.
fn cmd_resume(a: ResumeArgs) -> ExitCode {
    use switchyard::run::provider::NoProvider;
    use switchyard::run::session::{RunOptions, Status};
    use switchyard::run::store::{self, Durable};
    let mut queued = a.answers.values();
    for j in &a.answers_json {
        match serde_json::from_str(j) {
            Ok(v) => queued.push(v),
            Err(e) => {
                eprintln!("error: --answer-json `{j}` is not valid JSON: {e} (text needs quotes: '\"yes\"')");
                return ExitCode::from(2);
            }
        }
    }
    let fe = match Frontend::new(&a.trace, &a.quiet) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let db = a.db.or_default();
    // The file the run belongs to must be trusted before anything of it runs again.
    if db.is_file()
        && let Ok(Some(rec)) = store::RunStore::open(&db).and_then(|s| s.get(&a.id))
    {
        let d = doc::load_path(std::path::Path::new(&rec.file));
        if let Err(code) = require_trust(&d, a.trust.trust, "resume") {
            return code;
        }
    }
    let mut options = RunOptions::new(Box::new(NoProvider));
    options.listener = Some(fe.listener());
    let d = Durable { db: db.clone(), force: a.force };
    match store::resume(&d, &a.id, None, options) {
        Ok((mut session, rec)) => {
            eprintln!("resuming run {} of {} at step {} ({})", rec.id, rec.file, rec.step, rec.status);
            let info = DurableInfo { id: rec.id, db };
            let mut queued = queued.into_iter();
            // The first answer goes to the question the run waits for; a refused one (an
            // input failing its validation) leaves the run waiting, unchanged.
            if let Status::Interrupted { pending } = session.status().clone() {
                if let Some(first) = queued.next() {
                    if let Err(e) = session.answer(&pending.id, first) {
                        eprintln!(
                            "error: {e}\nthe run still waits at node `{}`: {}\nanswer again with: {} --answer TEXT",
                            pending.node,
                            switchyard::secrets::redact(&pending.prompt),
                            info.resume_command()
                        );
                        return ExitCode::from(2);
                    }
                }
            }
            session.queue_answers(queued);
            drive(session, &fe, a.answer_stdin.answer_stdin, Some(&info))
        }
        Err(e) => {
            eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// Ctrl-C, SIGTERM and SIGHUP stop the run the way the app's Stop button does: the node in
/// progress gives up, scripts, tools and servers are killed with their process groups (they
/// run in groups of their own, so the terminal's Ctrl-C does not reach them), the trace is
/// flushed, and the exit status is 130. A second signal exits at once.
fn stop_on_signals(stop: &std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::flag;
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        // The conditional exit is registered first so that it sees the flag before the
        // second handler sets it: the first signal only stops, a second one exits.
        let _ = flag::register_conditional_shutdown(sig, 130, stop.clone());
        let _ = flag::register(sig, stop.clone());
    }
}

/// Run a session to its end (or to a question nobody answers), print what happened, and give
/// the exit status of `run`.
fn drive(
    mut session: switchyard::run::session::RunSession,
    fe: &Frontend,
    answer_stdin: bool,
    durable: Option<&DurableInfo>,
) -> ExitCode {
    use switchyard::run::events::RunStatus;
    use switchyard::run::narrate::perf_summary;
    use switchyard::run::session::Status;

    let interactive = answer_stdin || std::io::stdin().is_terminal();
    stop_on_signals(&session.stop_handle());
    let mut waiting = None;
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
                    None if durable.is_some() => {
                        // A durable run stays interrupted in its store, to be resumed.
                        waiting = Some(pending);
                        break;
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
    let lines = fe.narrator.lock().unwrap_or_else(|p| p.into_inner()).finish();
    if let Some(t) = &fe.trace {
        let _ = t.lock().unwrap_or_else(|p| p.into_inner()).flush();
    }
    if let (Some(pending), Some(info)) = (waiting, durable) {
        if !fe.quiet {
            let mut err = std::io::stderr().lock();
            for l in lines {
                let _ = writeln!(err, "{l}");
            }
        }
        eprintln!(
            "interrupted: node `{}` waits for an answer: {}\n\
             the run is saved; answer it with: {} --answer TEXT",
            pending.node,
            switchyard::secrets::redact(&pending.prompt),
            info.resume_command()
        );
        return ExitCode::from(3);
    }
    let Status::Finished { status, output } = session.status().clone() else { return ExitCode::from(1) };
    if !fe.quiet {
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
                println!("{}", switchyard::secrets::redact(&text));
            }
            ExitCode::SUCCESS
        }
        RunStatus::Failed => {
            if let Some((node, message)) = session.failure() {
                let at = node.as_deref().map(|n| format!(" at node `{n}`")).unwrap_or_default();
                eprintln!("error: the run failed{at}: {}", switchyard::secrets::redact(message));
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
                     structured answer), or from a terminal to answer interactively; `--durable` \
                     keeps the run to answer later with `switchyard resume`"
                );
            }
            ExitCode::from(3)
        }
        RunStatus::Stopped => ExitCode::from(130),
    }
}

/// `switchyard runs [list|delete|prune]`.
fn cmd_runs(db: DbArg, action: Option<RunsAction>) -> ExitCode {
    use switchyard::run::store::{RunStore, parse_age};
    let db = db.or_default();
    let action = action.unwrap_or(RunsAction::List { json: false });
    if matches!(action, RunsAction::List { .. }) && !db.exists() {
        eprintln!("no durable runs yet (no run store at {})", db.display());
        return ExitCode::SUCCESS;
    }
    let mut store = match RunStore::open(&db) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    match action {
        RunsAction::List { json } => {
            let runs = match store.list() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
                    return ExitCode::from(2);
                }
            };
            let mut out = std::io::stdout().lock();
            if json {
                for r in &runs {
                    let _ = writeln!(out, "{}", serde_json::to_string(r).unwrap_or_default());
                }
                return ExitCode::SUCCESS;
            }
            let rows: Vec<[String; 6]> = runs
                .iter()
                .map(|r| {
                    [r.id.clone(), r.agent.clone(), r.status.clone(), format_time(r.updated_ms), r.step.to_string(), r.file.clone()]
                })
                .collect();
            let head = ["ID", "AGENT", "STATUS", "UPDATED", "STEP", "FILE"].map(String::from);
            let mut width = [0usize; 5];
            for row in std::iter::once(&head).chain(rows.iter()) {
                for (w, c) in width.iter_mut().zip(row.iter()) {
                    *w = (*w).max(c.chars().count());
                }
            }
            for row in std::iter::once(&head).chain(rows.iter()) {
                let mut line = String::new();
                for (i, c) in row.iter().enumerate() {
                    if i < 5 {
                        line.push_str(&format!("{c:<w$}  ", w = width[i]));
                    } else {
                        line.push_str(c);
                    }
                }
                let _ = writeln!(out, "{}", line.trim_end());
            }
            if runs.is_empty() {
                eprintln!("no durable runs in {}", db.display());
            }
            ExitCode::SUCCESS
        }
        RunsAction::Delete { ids } => match store.delete(&ids) {
            Ok(missing) => {
                let n = ids.len() - missing.len();
                eprintln!("deleted {n} run{}", if n == 1 { "" } else { "s" });
                if missing.is_empty() {
                    ExitCode::SUCCESS
                } else {
                    eprintln!("error: no such run in {}: {}", db.display(), missing.join(", "));
                    ExitCode::from(1)
                }
            }
            Err(e) => {
                eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
                ExitCode::from(2)
            }
        },
        RunsAction::Prune { older_than } => {
            let age = match parse_age(&older_than) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("error: --older-than {e}");
                    return ExitCode::from(2);
                }
            };
            match store.prune(age) {
                Ok(ids) => {
                    eprintln!("deleted {} run{} not updated for {older_than}", ids.len(), if ids.len() == 1 { "" } else { "s" });
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {}", switchyard::secrets::scrub_text(&e.to_string()));
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// UTC `YYYY-MM-DD HH:MM:SS` of a Unix time in milliseconds.
fn format_time(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", t.year(), u8::from(t.month()), t.day(), t.hour(), t.minute(), t.second())
}

fn main() -> ExitCode {
    // `switchyard package-assets DIR` (`./dev package`) is no clap command: completions and man
    // pages, which it writes, never offer it.
    let args: Vec<_> = std::env::args_os().collect();
    if args.len() == 3 && args[1] == "package-assets" {
        return package_assets::run(Cli::command(), std::path::Path::new(&args[2]));
    }
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
    // What a run or its manifest sees of a file whose folder is not trusted: its `${VAR}`s stay
    // as written (so a refusal or `--manifest` shows `${OPENAI_API_KEY}`, not the key);
    // `--trust` trusts it for this run. (`validate` and `graph` print to your terminal only and
    // fill them in as before.)
    let once = match &cli.cmd {
        Cmd::Run(a) => Some(a.trust.trust),
        Cmd::Resume(a) => Some(a.trust.trust),
        Cmd::Test(a) => Some(a.trust),
        _ => None,
    };
    if let Some(once) = once {
        switchyard::doc::env::set_env_policy(move |path| {
            once || matches!(switchyard::run::launch::trust::trusted_folder(path), Ok(Some(_)))
        });
    }
    match cli.cmd {
        Cmd::Validate { paths, agent, format, quiet } => cmd_validate(&paths, agent.agent.as_deref(), format, quiet.quiet),
        Cmd::Graph { path, agent, format } => cmd_graph(&path, agent.agent.as_deref(), format),
        Cmd::Diff(args) => diff_cmd::cmd_diff(args),
        Cmd::Trace { action: TraceAction::Diff(args) } => diff_cmd::cmd_trace_diff(args),
        Cmd::Run(args) => cmd_run(args),
        Cmd::Resume(args) => cmd_resume(args),
        Cmd::Test(args) => test_cmd::cmd_test(args),
        Cmd::Runs { db, server, action } => match server.client() {
            Ok(Some(c)) => cmd_remote_runs(&c, action),
            Ok(None) => cmd_runs(db, action),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Answer { server, run, answer, by } => cmd_answer(&server, &run, &answer, by.as_deref()),
        Cmd::Trust(args) => cmd_trust(args),
        Cmd::Serve(args) => cmd_serve(args),
        Cmd::Worker(args) => cmd_worker(args),
        Cmd::Token { db, action } => cmd_token(db, action),
    }
}

/// `switchyard runs --server URL`: the server's runs, its waiting question beside each.
fn cmd_remote_runs(c: &switchyard::serve::client::Client, action: Option<RunsAction>) -> ExitCode {
    let json = match action {
        None => false,
        Some(RunsAction::List { json }) => json,
        Some(_) => {
            eprintln!("error: with --server, `runs` only lists (delete and prune work on a local store)");
            return ExitCode::from(2);
        }
    };
    let runs = match c.runs(None) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    if json {
        for r in &runs {
            let _ = writeln!(out, "{r}");
        }
        return ExitCode::SUCCESS;
    }
    if runs.is_empty() {
        eprintln!("the server has no runs");
        return ExitCode::SUCCESS;
    }
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let q = &r["question"];
            let waiting = if q.is_object() {
                let prompt: String = text(&q["prompt"]).split_whitespace().collect::<Vec<_>>().join(" ");
                let clipped: String = prompt.chars().take(60).collect();
                let more = if prompt.chars().count() > 60 { "…" } else { "" };
                let options = q["options"].as_array().filter(|o| !o.is_empty()).map(|o| {
                    format!(" [{}]", o.iter().map(|x| x.as_str().unwrap_or("")).collect::<Vec<_>>().join("/"))
                });
                format!("{} {}: {clipped}{more}{}", text(&q["kind"]), text(&q["node"]), options.unwrap_or_default())
            } else {
                String::new()
            };
            vec![text(&r["run_id"]), text(&r["assistant"]), text(&r["status"]), text(&r["updated_at"]), waiting]
        })
        .collect();
    let head: Vec<String> = ["ID", "ASSISTANT", "STATUS", "UPDATED", "WAITING FOR"].map(String::from).to_vec();
    let mut width = [0usize; 4];
    for row in std::iter::once(&head).chain(rows.iter()) {
        for (w, c) in width.iter_mut().zip(row.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    for row in std::iter::once(&head).chain(rows.iter()) {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            if i < 4 {
                line.push_str(&format!("{c:<w$}  ", w = width[i]));
            } else {
                line.push_str(c);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    ExitCode::SUCCESS
}

/// `switchyard answer --server URL RUN ANSWER`.
fn cmd_answer(server: &ServerUrlArg, run: &str, answer: &str, by: Option<&str>) -> ExitCode {
    let c = match server.client() {
        Ok(Some(c)) => c,
        Ok(None) => {
            eprintln!("error: `answer` needs --server URL (a local durable run is answered with `switchyard resume ID --answer TEXT`)");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match c.answer(run, parse_answer(answer), by) {
        Ok(v) => {
            eprintln!("answered run {run} (recorded as {})", v["by"].as_str().unwrap_or("?"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            // Refusals (409 answered/not waiting, 422 invalid, 404 no such run) are 1.
            let refused = [" 409 ", " 422 ", " 404 "].iter().any(|c| e.contains(c));
            ExitCode::from(if refused { 1 } else { 2 })
        }
    }
}

/// `switchyard serve`.
fn cmd_serve(a: ServeArgs) -> ExitCode {
    use switchyard::serve;
    let config = serve::Config {
        agents: a.agents,
        listen: a.listen,
        db: a.db.db.unwrap_or_else(serve::default_db_path),
        llm: if a.live { serve::engine::LlmMode::Live } else { serve::engine::LlmMode::Scripted },
    };
    let db = config.db.clone();
    let make: Option<serve::MakeEngine> = match (a.engine.as_str(), a.restate) {
        ("restate", Some(url)) => {
            let admin = a.restate_admin.unwrap_or_else(|| restate::admin_of(&url));
            Some(Box::new(move |c: &serve::Config, assistants, rt| {
                Ok(restate::engine::Restate::open(&url, &admin, &c.db, assistants, c.llm, rt)? as std::sync::Arc<dyn serve::engine::Engine>)
            }))
        }
        ("restate", None) => {
            eprintln!("error: --engine restate needs --restate URL (Restate's ingress)");
            return ExitCode::from(2);
        }
        _ => None,
    };
    let served = serve::serve_with(config, make, |r| {
        for x in &r.assistants {
            let problems = if x.errors.is_empty() { String::new() } else { format!(" ({} errors: it will not run)", x.errors.len()) };
            eprintln!("assistant {} ({}, {}){problems}", x.graph_id, x.dialect, x.file.display());
            for e in x.errors.iter().take(3) {
                eprintln!("  {e}");
            }
        }
        if r.recovered > 0 {
            eprintln!("went on with {} unfinished run(s) from {}", r.recovered, db.display());
        }
        if !r.tokens {
            eprintln!("no tokens: listening on a loopback address only, every request is `local` (`switchyard token create NAME` to require one)");
        }
        // The line scripts wait for (the address, with the port chosen for `:0`).
        println!("listening on http://{}", r.addr);
        let _ = std::io::stdout().flush();
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", switchyard::secrets::scrub_text(&e));
            ExitCode::from(2)
        }
    }
}

/// `switchyard worker`.
fn cmd_worker(a: WorkerArgs) -> ExitCode {
    let config = restate::WorkerConfig {
        agents: a.agents,
        listen: a.listen,
        admin: if a.no_register { None } else { Some(a.admin.unwrap_or_else(|| restate::admin_of(&a.restate))) },
        advertise: None,
    };
    let worked = restate::run_worker(config, |addr| {
        // The line scripts wait for.
        println!("worker listening on http://{addr}");
        let _ = std::io::stdout().flush();
    });
    match worked {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", switchyard::secrets::scrub_text(&e));
            ExitCode::from(2)
        }
    }
}

/// `switchyard token`.
fn cmd_token(db: ServerDbArg, action: TokenAction) -> ExitCode {
    use switchyard::serve;
    let path = db.db.unwrap_or_else(serve::default_db_path);
    let sdb = match serve::db::ServerDb::open(&path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let done = match action {
        TokenAction::Create { name } => sdb.create_token(&name).map(|(id, token)| {
            eprintln!("token {id} for {name} (shown once; the server keeps only its hash):");
            println!("{token}");
        }),
        TokenAction::List => sdb.tokens().map(|list| {
            if list.is_empty() {
                eprintln!("no tokens in {}", path.display());
            }
            for t in list {
                let state = match t.revoked_ms {
                    Some(ms) => format!("revoked {}", format_time(ms)),
                    None => "live".into(),
                };
                println!("{}\t{}\tcreated {}\t{state}", t.id, t.name, format_time(t.created_ms));
            }
        }),
        TokenAction::Revoke { id_or_name } => match sdb.revoke_token(&id_or_name) {
            Ok(0) => Err(format!("no live token with id or name `{id_or_name}` (`switchyard token list`)")),
            Ok(n) => {
                eprintln!("revoked {n} token(s)");
                Ok(())
            }
            Err(e) => Err(e),
        },
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn run_times_are_utc_calendar_dates() {
        assert_eq!(super::format_time(0), "1970-01-01 00:00:00");
        assert_eq!(super::format_time(1_795_782_069_624), "2026-11-27 12:21:09");
        assert_eq!(super::format_time(-1_000), "1969-12-31 23:59:59");
    }
}
