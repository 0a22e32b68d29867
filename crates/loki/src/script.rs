//! One Loki `script` node run as a real subprocess.
//!
//! What upstream does (reference §7.1), and where we differ on purpose:
//!
//! * the interpreter is chosen by extension: `.sh` → `bash`, `.py` → `python3`, `.ts` → the
//!   first of `deno run -A`, `bun`, `npx tsx` found on `PATH`. Any other file is run directly
//!   when it is executable (upstream refuses it); otherwise the error says how to fix it;
//! * the working directory is the agent directory (upstream: the CLI's directory);
//! * the environment is scrubbed (upstream: the whole of Loki's): the base set, the variables
//!   the agent file references and the user's opt-in (`connect::childenv`), then
//!   `LLM_AGENT_DATA_DIR` and the state;
//! * the state goes in as compact JSON: env `GRAPH_STATE` when it is at most 32,768 bytes,
//!   otherwise a temp file named by `GRAPH_STATE_FILE` (removed when the run ends). Exactly one
//!   of the two is set;
//! * stdout, trimmed, must be exactly one JSON object (no log lines on stdout). Every key but
//!   `_next` is a state update; `_next` routes only when it is a string (otherwise dropped);
//! * the timeout covers the whole process and kills its whole process group;
//! * stdin is closed; stdout and stderr are read concurrently (no pipe deadlock) and bounded.
//!
//! Routing to `fallback` / `next` on failure is the executor's business: this module only
//! reports an `Err(ScriptError)`.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use connect::childenv::ChildEnv;

/// States whose compact JSON is longer than this go through `GRAPH_STATE_FILE`.
pub const STATE_ENV_LIMIT: usize = 32 * 1024;
/// At most this many bytes of stdout (and of stderr) are kept.
pub const OUTPUT_LIMIT: usize = 8 * 1024 * 1024;
/// Lines of stderr quoted in a failure message.
pub(crate) const STDERR_TAIL_LINES: usize = 20;
/// Characters of stdout quoted when it is not a JSON object.
const QUOTE_CHARS: usize = 200;

/// A successful script run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptOutcome {
    /// Every key of the output object except `_next`.
    pub updates: Map<String, Value>,
    /// `_next` when it was a string.
    pub next: Option<String>,
    /// Captured stderr (lossy UTF-8, bounded).
    pub stderr: String,
    pub duration_ms: u64,
}

/// Why a script run failed. `script` is the node's `script:` value as written.
#[derive(Debug)]
pub enum ScriptError {
    NotFound {
        script: String,
        path: PathBuf,
    },
    /// The path leads out of the agent directory (`..`, an absolute path, or a symbolic link).
    Escapes {
        script: String,
        path: PathBuf,
    },
    /// `.ts` but none of deno, bun, npx is on `PATH`.
    NoTsRuntime {
        script: String,
    },
    /// Unknown extension and not executable.
    NotExecutable {
        script: String,
        path: PathBuf,
    },
    /// The interpreter (or the script itself) could not be started.
    Spawn {
        script: String,
        program: String,
        error: io::Error,
    },
    /// The state could not be serialised or its temp file written.
    State {
        script: String,
        error: String,
    },
    Timeout {
        script: String,
        timeout: Duration,
    },
    /// The run was stopped while the script ran; it and its children were killed.
    Stopped {
        script: String,
    },
    /// Exit status not zero; `code` is `None` when killed by `signal`.
    Failed {
        script: String,
        code: Option<i32>,
        signal: Option<i32>,
        stderr_tail: String,
    },
    NoOutput {
        script: String,
        stderr_tail: String,
    },
    OutputTooLarge {
        script: String,
    },
    InvalidJson {
        script: String,
        error: String,
        start: String,
    },
    NotObject {
        script: String,
        kind: &'static str,
        start: String,
    },
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptError::NotFound { script, path } => write!(
                f,
                "script '{script}' not found at '{}'; create it or fix the node's `script:` path \
                 (it is relative to the agent directory)",
                path.display()
            ),
            ScriptError::Escapes { script, path } => write!(
                f,
                "script '{script}' resolves to '{}', outside the agent directory; scripts must live \
                 in the agent's folder (move it there, or copy it into `scripts/`)",
                path.display()
            ),
            ScriptError::NoTsRuntime { script } => write!(
                f,
                "script '{script}' is TypeScript but none of `deno`, `bun`, `npx` (for tsx) is on \
                 PATH; install Deno, Bun or Node.js, or rewrite the script as .sh or .py"
            ),
            ScriptError::NotExecutable { script, path } => write!(
                f,
                "script '{script}' has no known extension (.sh, .py, .ts) and is not executable; \
                 rename it with one of those extensions or run `chmod +x '{}'`",
                path.display()
            ),
            ScriptError::Spawn {
                script,
                program,
                error,
            } => {
                write!(
                    f,
                    "script '{script}' could not be started with `{program}`: {error}"
                )?;
                if error.kind() == io::ErrorKind::NotFound {
                    write!(f, "; install `{program}` or make sure it is on PATH")?;
                }
                Ok(())
            }
            ScriptError::State { script, error } => {
                write!(
                    f,
                    "script '{script}': could not pass the state to it: {error}"
                )
            }
            ScriptError::Stopped { script } => {
                write!(f, "script '{script}' was killed (with its child processes) because the run was stopped")
            }
            ScriptError::Timeout { script, timeout } => write!(
                f,
                "script '{script}' timed out after {}; it and its child processes were killed. \
                 Raise the node's `timeout:` or make the script finish sooner",
                fmt_duration(*timeout)
            ),
            ScriptError::Failed {
                script,
                code,
                signal,
                stderr_tail,
            } => {
                match (code, signal) {
                    (Some(c), _) => write!(f, "script '{script}' failed with exit code {c}")?,
                    (None, Some(s)) => write!(f, "script '{script}' was killed by signal {s}")?,
                    (None, None) => write!(f, "script '{script}' failed")?,
                }
                if stderr_tail.is_empty() {
                    write!(f, " (no stderr)")
                } else {
                    write!(f, "; last lines of stderr:\n{stderr_tail}")
                }
            }
            ScriptError::NoOutput {
                script,
                stderr_tail,
            } => {
                write!(
                    f,
                    "script '{script}' produced no output; scripts must print a single JSON object \
                     on stdout"
                )?;
                if !stderr_tail.is_empty() {
                    write!(f, "; last lines of stderr:\n{stderr_tail}")?;
                }
                Ok(())
            }
            ScriptError::OutputTooLarge { script } => write!(
                f,
                "script '{script}' printed more than {} MiB on stdout; print only the JSON object \
                 and send logs to stderr",
                OUTPUT_LIMIT / (1024 * 1024)
            ),
            ScriptError::InvalidJson {
                script,
                error,
                start,
            } => write!(
                f,
                "script '{script}' output is not valid JSON ({error}); stdout must be exactly one \
                 JSON object, send logs to stderr. Output starts with: {start:?}"
            ),
            ScriptError::NotObject {
                script,
                kind,
                start,
            } => write!(
                f,
                "script '{script}' output must be a JSON object, not {kind}; wrap the values in \
                 {{\"key\": ...}}. Output starts with: {start:?}"
            ),
        }
    }
}

impl std::error::Error for ScriptError {}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

/// Run `script` (relative to `agent_dir`, or absolute) with `state`, killing it after `timeout`.
/// It sees the base environment only (`connect::childenv::ChildEnv::default`).
pub fn run_script(
    agent_dir: &Path,
    script: &str,
    state: &Value,
    timeout: Duration,
) -> Result<ScriptOutcome, ScriptError> {
    run_script_in(agent_dir, script, state, timeout, None, &ChildEnv::default())
}

/// [`run_script`], also ending (process group killed) as soon as `stop` is raised.
pub fn run_script_until(
    agent_dir: &Path,
    script: &str,
    state: &Value,
    timeout: Duration,
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> Result<ScriptOutcome, ScriptError> {
    run_script_in(agent_dir, script, state, timeout, stop, &ChildEnv::default())
}

/// [`run_script_until`] seeing the variables `env` allows (the run's, see
/// `connect::childenv`) and those set for the script here.
pub fn run_script_in(
    agent_dir: &Path,
    script: &str,
    state: &Value,
    timeout: Duration,
    stop: Option<&std::sync::atomic::AtomicBool>,
    env: &ChildEnv,
) -> Result<ScriptOutcome, ScriptError> {
    run_script_with(agent_dir, script, state, timeout, stop, env, &[])
}

/// [`run_script_in`] with extra variables set for the script (coyote 0.10.3's
/// `LLM_AGENT_VAR_<NAME>` of the graph's declared `variables`).
pub fn run_script_with(
    agent_dir: &Path,
    script: &str,
    state: &Value,
    timeout: Duration,
    stop: Option<&std::sync::atomic::AtomicBool>,
    env: &ChildEnv,
    vars: &[(String, String)],
) -> Result<ScriptOutcome, ScriptError> {
    let started = Instant::now();
    let name = script.to_string();
    let joined = agent_dir.join(script);
    if !joined.is_file() {
        return Err(ScriptError::NotFound {
            script: name,
            path: joined,
        });
    }
    // Absolute, so that neither the interpreter nor exec depends on the new working directory.
    let path = joined.canonicalize().unwrap_or(joined);
    let workdir = agent_dir
        .canonicalize()
        .unwrap_or_else(|_| agent_dir.to_path_buf());
    // An agent runs only its own scripts: nothing reached through `..`, an absolute path or a
    // symbolic link that leaves the agent directory.
    if !path.starts_with(&workdir) {
        return Err(ScriptError::Escapes { script: name, path });
    }

    let (program, args) = interpreter(&name, &path)?;
    let mut cmd = Command::new(&program);
    env.apply(&mut cmd);
    cmd.args(&args)
        .current_dir(&workdir)
        .env("LLM_AGENT_DATA_DIR", &workdir)
        .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));

    let json = serde_json::to_string(state).map_err(|e| ScriptError::State {
        script: name.clone(),
        error: e.to_string(),
    })?;
    let _state_file = if json.len() > STATE_ENV_LIMIT {
        let file = TempFile::write(json.as_bytes()).map_err(|e| ScriptError::State {
            script: name.clone(),
            error: e.to_string(),
        })?;
        cmd.env_remove("GRAPH_STATE")
            .env("GRAPH_STATE_FILE", &file.0);
        Some(file)
    } else {
        cmd.env_remove("GRAPH_STATE_FILE").env("GRAPH_STATE", &json);
        None
    };

    let done = match run_supervised(&mut cmd, started + timeout, stop) {
        Ok(done) => done,
        Err(Unfinished::Spawn(error)) => {
            return Err(ScriptError::Spawn {
                script: name,
                program,
                error,
            });
        }
        Err(Unfinished::Stopped) => return Err(ScriptError::Stopped { script: name }),
        Err(Unfinished::Timeout) => {
            return Err(ScriptError::Timeout {
                script: name,
                timeout,
            });
        }
    };
    let Finished {
        status,
        stdout,
        stdout_truncated: out_truncated,
        stderr,
    } = done;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);

    if !status.success() {
        return Err(ScriptError::Failed {
            script: name,
            code: status.code(),
            signal: status.signal(),
            stderr_tail: tail_lines(&stderr, STDERR_TAIL_LINES),
        });
    }
    if out_truncated {
        return Err(ScriptError::OutputTooLarge { script: name });
    }
    let (updates, next) = parse_output(&name, &String::from_utf8_lossy(&stdout), &stderr)?;
    Ok(ScriptOutcome {
        updates,
        next,
        stderr,
        duration_ms,
    })
}

/// A supervised subprocess that exited by itself.
pub(crate) struct Finished {
    pub status: ExitStatus,
    /// At most [`OUTPUT_LIMIT`] bytes.
    pub stdout: Vec<u8>,
    /// More than [`OUTPUT_LIMIT`] bytes were written to stdout.
    pub stdout_truncated: bool,
    /// Lossy UTF-8, its newest bytes when it was too long.
    pub stderr: String,
}

/// Why a supervised subprocess did not exit by itself.
pub(crate) enum Unfinished {
    /// It could not be started.
    Spawn(io::Error),
    /// The deadline passed (it ran too long, or processes it left behind kept its pipes open);
    /// its whole process group was killed.
    Timeout,
    /// The stop flag was raised; its whole process group was killed.
    Stopped,
}

/// Run `cmd` as the leader of a new process group with stdin closed, stdout and stderr read
/// concurrently into bounded buffers, with the run's resource limits
/// (`connect::proctag::limits`), until it exits, `deadline` passes or `stop` is raised (the last
/// two kill the whole group). Whatever it leaves behind is killed when it ends, however it ends.
/// Script nodes and Loki tools run through this.
pub(crate) fn run_supervised(
    cmd: &mut Command,
    deadline: Instant,
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> Result<Finished, Unfinished> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let tag = connect::proctag::ProcTag::new();
    tag.apply(cmd);
    connect::proctag::limit(cmd);
    let mut child = cmd.spawn().map_err(Unfinished::Spawn)?;
    let group = ProcessGroup(child.id() as i32, tag);
    let out = Capture::start(child.stdout.take(), false);
    let err = Capture::start(child.stderr.take(), true);
    let status = match wait_until(&mut child, deadline, stop) {
        Some(status) => status,
        None => {
            group.kill();
            let _ = child.kill();
            let _ = child.wait();
            if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                return Err(Unfinished::Stopped);
            }
            return Err(Unfinished::Timeout);
        }
    };
    // The process is gone; processes it left behind may still hold the pipes. They get the
    // rest of the time, like the process itself.
    if !(out.wait_until(deadline) && err.wait_until(deadline)) {
        group.kill();
        return Err(Unfinished::Timeout);
    }
    // Nothing it started outlives it: a `nohup x &` that let go of the pipes, a daemon that
    // left the group (found by its tag).
    group.kill();
    let (stdout, stdout_truncated) = out.take();
    let (stderr, _) = err.take();
    Ok(Finished {
        status,
        stdout,
        stdout_truncated,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// Split a script's stdout into state updates and `_next`, as upstream does.
fn parse_output(
    script: &str,
    stdout: &str,
    stderr: &str,
) -> Result<(Map<String, Value>, Option<String>), ScriptError> {
    let text = stdout.trim();
    if text.is_empty() {
        return Err(ScriptError::NoOutput {
            script: script.to_string(),
            stderr_tail: tail_lines(stderr, STDERR_TAIL_LINES),
        });
    }
    let start = || {
        let mut s: String = text.chars().take(QUOTE_CHARS).collect();
        if s.len() < text.len() {
            s.push('…');
        }
        s
    };
    let value: Value = serde_json::from_str(text).map_err(|e| ScriptError::InvalidJson {
        script: script.to_string(),
        error: e.to_string(),
        start: start(),
    })?;
    let mut updates = match value {
        Value::Object(map) => map,
        other => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            };
            return Err(ScriptError::NotObject {
                script: script.to_string(),
                kind,
                start: start(),
            });
        }
    };
    let next = match updates.shift_remove("_next") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Ok((updates, next))
}

/// The program and its arguments (the script path included).
fn interpreter(script: &str, path: &Path) -> Result<(String, Vec<String>), ScriptError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("sh") => Ok(("bash".into(), vec![path_arg(path)])),
        Some("py") => Ok(("python3".into(), vec![path_arg(path)])),
        Some("ts") => match ts_runtime() {
            Some((program, mut args)) => {
                args.push(path_arg(path));
                Ok((program, args))
            }
            None => Err(ScriptError::NoTsRuntime {
                script: script.to_string(),
            }),
        },
        _ => {
            let executable = std::fs::metadata(path)
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false);
            if executable {
                Ok((path.to_string_lossy().into_owned(), vec![]))
            } else {
                Err(ScriptError::NotExecutable {
                    script: script.to_string(),
                    path: path.into(),
                })
            }
        }
    }
}

/// The TypeScript runtime: the first of `deno run -A`, `bun`, `npx --yes tsx` found on `PATH`,
/// as the program and the arguments that go before the file to run.
pub(crate) fn ts_runtime() -> Option<(String, Vec<String>)> {
    let candidates: [(&str, &[&str]); 3] = [
        ("deno", &["run", "-A"]),
        ("bun", &[]),
        // Never prompt to install tsx: stdin is closed and the run would hang.
        ("npx", &["--yes", "tsx"]),
    ];
    candidates.into_iter().find_map(|(prog, args)| {
        on_path(prog).map(|found| {
            (
                found.to_string_lossy().into_owned(),
                args.iter().map(|a| a.to_string()).collect(),
            )
        })
    })
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

pub(crate) fn on_path(prog: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(prog))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Poll the child until it exits or `deadline` passes (`None`).
fn wait_until(child: &mut Child, deadline: Instant, stop: Option<&std::sync::atomic::AtomicBool>) -> Option<ExitStatus> {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            // Cannot ask: treat as a hung process, the caller kills it.
            Err(_) => return None,
        }
        let now = Instant::now();
        if now >= deadline || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return None;
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The supervised process's group, and the tag its descendants carry (which finds those that
/// left the group with `setsid`).
struct ProcessGroup(i32, connect::proctag::ProcTag);

impl ProcessGroup {
    fn kill(&self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0) {
            // ESRCH (already gone) is fine.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        self.1.kill_all();
    }
}

/// A pipe read to EOF on its own thread into a bounded buffer.
struct Capture {
    shared: Arc<Mutex<(Vec<u8>, bool)>>,
    done: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

impl Capture {
    /// `keep_tail`: when over the limit keep the newest bytes (stderr) rather than the first.
    fn start<R: Read + Send + 'static>(pipe: Option<R>, keep_tail: bool) -> Capture {
        let shared = Arc::new(Mutex::new((Vec::new(), false)));
        let done = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let (s, d) = (shared.clone(), done.clone());
        let spawned = thread::Builder::new()
            .name("script-pipe".into())
            .spawn(move || {
                if let Some(mut pipe) = pipe {
                    let mut chunk = [0u8; 64 * 1024];
                    loop {
                        match pipe.read(&mut chunk) {
                            Ok(0) => break,
                            Ok(n) => {
                                let Ok(mut g) = s.lock() else { break };
                                let (buf, truncated) = &mut *g;
                                if keep_tail {
                                    buf.extend_from_slice(&chunk[..n]);
                                    if buf.len() > OUTPUT_LIMIT {
                                        let cut = buf.len() - OUTPUT_LIMIT / 2;
                                        buf.drain(..cut);
                                        *truncated = true;
                                    }
                                } else {
                                    let room = OUTPUT_LIMIT.saturating_sub(buf.len());
                                    buf.extend_from_slice(&chunk[..n.min(room)]);
                                    if n > room {
                                        *truncated = true;
                                    }
                                }
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(_) => break,
                        }
                    }
                }
                let (lock, cv) = &*d;
                if let Ok(mut g) = lock.lock() {
                    *g = true;
                }
                cv.notify_all();
            });
        if spawned.is_err() {
            // No thread: nothing will be read; report done so nobody waits.
            if let Ok(mut g) = done.0.lock() {
                *g = true;
            }
        }
        Capture { shared, done }
    }

    /// Wait for EOF until `deadline`; `false` if it did not come.
    fn wait_until(&self, deadline: Instant) -> bool {
        let (lock, cv) = &*self.done;
        let Ok(mut g) = lock.lock() else { return true };
        while !*g {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            match cv.wait_timeout(g, deadline - now) {
                Ok((next, _)) => g = next,
                Err(_) => return true,
            }
        }
        true
    }

    fn take(&self) -> (Vec<u8>, bool) {
        match self.shared.lock() {
            Ok(mut g) => (std::mem::take(&mut g.0), g.1),
            Err(_) => (Vec::new(), false),
        }
    }
}

/// The last `n` non-empty-trailing lines of `s`, trimmed.
pub(crate) fn tail_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .join("\n")
        .trim()
        .to_string()
}

/// A private temp file removed on drop.
pub(crate) struct TempFile(PathBuf);

impl TempFile {
    fn write(bytes: &[u8]) -> io::Result<TempFile> {
        TempFile::create("state", ".json", bytes)
    }

    /// A new file `switchyard-<tag>-…<suffix>` in the temp dir, readable only by us, holding
    /// `bytes`.
    pub(crate) fn create(tag: &str, suffix: &str, bytes: &[u8]) -> io::Result<TempFile> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for _ in 0..16 {
            let path = std::env::temp_dir().join(format!(
                "switchyard-{tag}-{}-{}-{}{suffix}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::Relaxed),
                nanos
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut f) => {
                    let file = TempFile(path);
                    f.write_all(bytes)?;
                    f.flush()?;
                    return Ok(file);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free temp file name",
        ))
    }
}

impl TempFile {
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Dir(PathBuf);
    impl Dir {
        fn new(tag: &str) -> Dir {
            static N: AtomicU64 = AtomicU64::new(0);
            let p = std::env::temp_dir().join(format!(
                "switchyard-script-test-{}-{}-{}",
                std::process::id(),
                tag,
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(p.join("scripts")).unwrap();
            Dir(p)
        }
        fn file(&self, rel: &str, body: &str) {
            std::fs::write(self.0.join(rel), body).unwrap();
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const T: Duration = Duration::from_secs(20);

    fn have(prog: &str) -> bool {
        on_path(prog).is_some()
    }

    #[test]
    fn bash_reads_graph_state_and_runs_in_agent_dir() {
        let d = Dir::new("bash");
        d.file("marker.txt", "here");
        d.file(
            "scripts/s.sh",
            r#"set -e
n=$(printf '%s' "$GRAPH_STATE" | sed 's/.*"n":\([0-9]*\).*/\1/')
echo "log line" >&2
printf '{"doubled": %d, "cwd_marker": "%s", "file_set": "%s"}\n' $((n * 2)) "$(cat marker.txt)" "${GRAPH_STATE_FILE-unset}"
"#,
        );
        let out = run_script(&d.0, "scripts/s.sh", &json!({"n": 21}), T).unwrap();
        assert_eq!(
            Value::Object(out.updates),
            json!({"doubled": 42, "cwd_marker": "here", "file_set": "unset"})
        );
        assert_eq!(out.next, None);
        assert!(out.stderr.contains("log line"), "{:?}", out.stderr);
    }

    #[test]
    fn python_reads_graph_state() {
        let d = Dir::new("py");
        d.file(
            "scripts/s.py",
            "import json, os\ns = json.loads(os.environ['GRAPH_STATE'])\nprint(json.dumps({'greeting': 'hi ' + s['name'], 'items': s['items'] + [3]}))\n",
        );
        let out = run_script(
            &d.0,
            "scripts/s.py",
            &json!({"name": "ann", "items": [1, 2]}),
            T,
        )
        .unwrap();
        assert_eq!(
            Value::Object(out.updates),
            json!({"greeting": "hi ann", "items": [1, 2, 3]})
        );
    }

    #[test]
    fn large_state_goes_through_a_file_that_is_removed() {
        let d = Dir::new("big");
        d.file(
            "scripts/s.py",
            "import json, os\np = os.environ['GRAPH_STATE_FILE']\nassert 'GRAPH_STATE' not in os.environ\ns = json.load(open(p))\nprint(json.dumps({'path': p, 'len': len(s['blob'])}))\n",
        );
        // Exactly 32768 bytes stays in the environment; one more goes to a file.
        let base = serde_json::to_string(&json!({"blob": ""})).unwrap().len();
        let small = json!({"blob": "x".repeat(STATE_ENV_LIMIT - base)});
        assert_eq!(
            serde_json::to_string(&small).unwrap().len(),
            STATE_ENV_LIMIT
        );
        let err = run_script(&d.0, "scripts/s.py", &small, T).unwrap_err();
        assert!(matches!(err, ScriptError::Failed { .. }), "{err}");

        let big = json!({"blob": "x".repeat(STATE_ENV_LIMIT - base + 1)});
        let out = run_script(&d.0, "scripts/s.py", &big, T).unwrap();
        assert_eq!(out.updates["len"], json!(STATE_ENV_LIMIT - base + 1));
        let path = out.updates["path"].as_str().unwrap();
        assert!(
            !Path::new(path).exists(),
            "temp state file {path} was not removed"
        );
    }

    #[test]
    fn next_is_split_out_when_a_string() {
        let d = Dir::new("next");
        d.file("scripts/a.sh", "echo '{\"_next\": \"review\", \"x\": 1}'\n");
        d.file("scripts/b.sh", "echo '{\"_next\": 5, \"y\": 2}'\n");
        let a = run_script(&d.0, "scripts/a.sh", &json!({}), T).unwrap();
        assert_eq!(a.next.as_deref(), Some("review"));
        assert_eq!(Value::Object(a.updates), json!({"x": 1}));
        let b = run_script(&d.0, "scripts/b.sh", &json!({}), T).unwrap();
        assert_eq!(b.next, None);
        assert_eq!(Value::Object(b.updates), json!({"y": 2}));
    }

    #[test]
    fn bad_output_is_a_clear_error() {
        let d = Dir::new("bad");
        d.file("scripts/text.sh", "echo 'starting up'\necho '{\"a\": 1}'\n");
        d.file("scripts/arr.sh", "echo '[1]'\n");
        d.file("scripts/none.sh", "echo 'only stderr' >&2\n");
        let e = run_script(&d.0, "scripts/text.sh", &json!({}), T).unwrap_err();
        assert!(matches!(e, ScriptError::InvalidJson { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("scripts/text.sh") && msg.contains("starting up"),
            "{msg}"
        );
        let e = run_script(&d.0, "scripts/arr.sh", &json!({}), T).unwrap_err();
        assert!(
            matches!(
                e,
                ScriptError::NotObject {
                    kind: "an array",
                    ..
                }
            ),
            "{e}"
        );
        let e = run_script(&d.0, "scripts/none.sh", &json!({}), T).unwrap_err();
        assert!(matches!(e, ScriptError::NoOutput { .. }), "{e}");
        assert!(e.to_string().contains("only stderr"), "{e}");
    }

    #[test]
    fn non_zero_exit_quotes_the_stderr_tail() {
        let d = Dir::new("exit");
        d.file(
            "scripts/s.sh",
            "for i in $(seq 1 50); do echo \"line $i\" >&2; done\necho '{}'\nexit 3\n",
        );
        let e = run_script(&d.0, "scripts/s.sh", &json!({}), T).unwrap_err();
        match &e {
            ScriptError::Failed {
                code, stderr_tail, ..
            } => {
                assert_eq!(*code, Some(3));
                assert!(stderr_tail.ends_with("line 50"), "{stderr_tail}");
                assert!(!stderr_tail.contains("line 30\n"), "{stderr_tail}");
            }
            other => panic!("unexpected {other}"),
        }
        assert!(e.to_string().contains("exit code 3"), "{e}");
    }

    fn dead(pid: &str) -> bool {
        let alive = Command::new("kill")
            .args(["-0", pid])
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !alive {
            return true;
        }
        // A killed process nobody has reaped yet (our pid 1 may not reap) is dead too.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
                    .unwrap_or(false)
            })
            .unwrap_or(true)
    }

    /// Wait up to 2 s for the process whose pid the script wrote to `child.pid` to die; its pid
    /// and whether it did.
    fn child_dies(d: &Dir) -> (String, bool) {
        let pid = std::fs::read_to_string(d.0.join("child.pid")).unwrap_or_default().trim().to_string();
        assert!(!pid.is_empty(), "the script wrote no child.pid");
        let until = Instant::now() + Duration::from_secs(2);
        while !dead(&pid) && Instant::now() < until {
            thread::sleep(Duration::from_millis(20));
        }
        let gone = dead(&pid);
        (pid, gone)
    }

    #[test]
    fn timeout_kills_the_whole_process_group() {
        let d = Dir::new("timeout");
        d.file(
            "scripts/s.sh",
            "sleep 60 &\necho $! > child.pid\nsleep 60\n",
        );
        let t0 = Instant::now();
        let e =
            run_script(&d.0, "scripts/s.sh", &json!({}), Duration::from_millis(500)).unwrap_err();
        let took = t0.elapsed();
        assert!(matches!(e, ScriptError::Timeout { .. }), "{e}");
        assert!(took < Duration::from_secs(2), "took {took:?}");
        assert!(e.to_string().contains("timed out after 0.500s"), "{e}");
        let (pid, gone) = child_dies(&d);
        assert!(gone, "child {pid} of the script survived the timeout");
    }

    #[test]
    fn what_a_script_leaves_running_is_killed_when_it_ends() {
        let d = Dir::new("nohup");
        // `nohup … &` with its output redirected lets go of the pipes: the script ends at once,
        // successfully, and the background process would outlive the run.
        d.file(
            "scripts/s.sh",
            "nohup sleep 60 >/dev/null 2>&1 &\necho $! > child.pid\necho '{\"ok\": true}'\n",
        );
        let out = run_script(&d.0, "scripts/s.sh", &json!({}), Duration::from_secs(20)).unwrap();
        assert_eq!(out.updates.get("ok"), Some(&json!(true)), "{out:?}");
        let (pid, gone) = child_dies(&d);
        assert!(gone, "the background child {pid} outlived the script");
    }

    #[test]
    fn timeout_kills_a_child_that_left_the_group_with_setsid() {
        let d = Dir::new("setsid");
        // The child starts a session of its own (so the group kill misses it) and its parent,
        // a subshell, is gone by the time of the kill.
        d.file(
            "scripts/s.sh",
            "(setsid sh -c 'echo $$ > child.tmp; mv child.tmp child.pid; exec sleep 60' </dev/null >/dev/null 2>&1 &)\nsleep 60\n",
        );
        let e = run_script(&d.0, "scripts/s.sh", &json!({}), Duration::from_millis(700)).unwrap_err();
        assert!(matches!(e, ScriptError::Timeout { .. }), "{e}");
        let (pid, gone) = child_dies(&d);
        assert!(gone, "the setsid child {pid} survived the timeout");
    }

    #[test]
    fn a_stop_kills_the_script_and_its_children_at_once() {
        let d = Dir::new("stop");
        d.file("scripts/slow.sh", "sleep 30 &\necho $! > child.pid\nsleep 30\n");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            s2.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let t0 = Instant::now();
        let e = run_script_until(&d.0, "scripts/slow.sh", &json!({}), T, Some(&stop)).unwrap_err();
        assert!(matches!(e, ScriptError::Stopped { .. }), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        let (pid, gone) = child_dies(&d);
        assert!(gone, "child {pid} survived the stop");
    }

    #[test]
    fn scripts_outside_the_agent_directory_are_refused() {
        let d = Dir::new("escape");
        let outside = Dir::new("escape-outside");
        outside.file("scripts/evil.sh", "echo '{\"ran\": true}'\n");
        let rel = format!("../{}/scripts/evil.sh", outside.0.file_name().unwrap().to_string_lossy());
        let abs = outside.0.join("scripts/evil.sh").display().to_string();
        std::os::unix::fs::symlink(outside.0.join("scripts/evil.sh"), d.0.join("scripts/link.sh")).unwrap();
        for script in [rel.as_str(), abs.as_str(), "scripts/link.sh"] {
            let e = run_script(&d.0, script, &json!({}), T).unwrap_err();
            assert!(matches!(e, ScriptError::Escapes { .. }), "{script}: {e}");
            assert!(e.to_string().contains("outside the agent directory"), "{e}");
        }
        // A link that stays inside is fine.
        d.file("scripts/real.sh", "echo '{\"ok\": 1}'\n");
        std::os::unix::fs::symlink(d.0.join("scripts/real.sh"), d.0.join("scripts/alias.sh")).unwrap();
        assert!(run_script(&d.0, "scripts/alias.sh", &json!({}), T).is_ok());
    }

    #[test]
    fn missing_script_and_unknown_extension() {
        let d = Dir::new("missing");
        let e = run_script(&d.0, "scripts/nope.sh", &json!({}), T).unwrap_err();
        assert!(matches!(e, ScriptError::NotFound { .. }), "{e}");
        assert!(e.to_string().contains("scripts/nope.sh"), "{e}");

        d.file("scripts/tool.rb", "puts 1\n");
        let e = run_script(&d.0, "scripts/tool.rb", &json!({}), T).unwrap_err();
        assert!(matches!(e, ScriptError::NotExecutable { .. }), "{e}");
        assert!(e.to_string().contains("chmod +x"), "{e}");

        d.file("scripts/run", "#!/bin/sh\necho '{\"direct\": true}'\n");
        let p = d.0.join("scripts/run");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = run_script(&d.0, "scripts/run", &json!({}), T).unwrap();
        assert_eq!(Value::Object(out.updates), json!({"direct": true}));
    }

    #[test]
    fn large_output_on_both_pipes_does_not_deadlock() {
        if !have("python3") {
            return;
        }
        let d = Dir::new("pipes");
        d.file(
            "scripts/s.py",
            "import sys, json\nsys.stderr.write('e' * 1000000)\nprint(json.dumps({'big': 'o' * 1000000}))\n",
        );
        let out = run_script(&d.0, "scripts/s.py", &json!({}), T).unwrap();
        assert_eq!(out.updates["big"].as_str().unwrap().len(), 1_000_000);
        assert_eq!(out.stderr.len(), 1_000_000);
    }
}
