//! The Python tool bridge: sherma `import_path` tools run in one long-lived `python3` process.
//!
//! The engine starts `python3 -u -c <pybridge.py> <sys.path entries…>` and speaks JSON lines
//! with it (one request, one response; see the header of `pybridge.py`). The Python side keeps
//! the protocol on private duplicates of fd 0 / fd 1 and points the real fd 0 at `/dev/null` and
//! fd 1 at stderr, so a tool's own prints (Python, C or subprocess) cannot corrupt it. stderr is
//! captured into a bounded tail ([`PyBridge::stderr_tail`]).
//!
//! * `describe` imports the object and reports its name, description and JSON Schema; `call`
//!   imports it and calls it (LangChain-style tools with `.invoke`, async ones through
//!   `asyncio.run`, plain callables with `**args`).
//! * A tool exception is a [`PyError::Call`] and the process lives on. A process that dies is a
//!   [`PyError::Crashed`]; a call past its timeout kills the process group
//!   ([`PyError::Timeout`]). Either way the next request starts a fresh process.
//! * The process runs in its own process group; dropping the bridge closes its stdin, gives it
//!   a moment to exit and kills the group.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The bridge program, run with `python3 -c`.
const BRIDGE_PY: &str = include_str!("pybridge.py");
/// How long the interpreter may take to start and report ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `describe` may take (it imports the tool's module).
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of stderr kept.
const STDERR_LIMIT: usize = 64 * 1024;
/// Lines of stderr quoted in error messages.
const STDERR_TAIL_LINES: usize = 12;
/// How long a request looks for the reply before sleeping until it comes (see `recv_line`).
const SPIN: Duration = Duration::from_micros(150);

/// What `describe` reports about a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The name the model sees: a LangChain tool's `.name`, else the function's `__name__`.
    pub name: String,
    pub description: String,
    /// JSON Schema (an object schema) of the arguments.
    pub schema: Value,
}

/// Why a bridge request failed. `Display` is one paragraph saying what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum PyError {
    /// The interpreter could not be started (message says which and why).
    Start(String),
    /// The import path could not be resolved to a tool; `message` includes the module, the
    /// `sys.path` searched and a hint.
    Import { path: String, message: String },
    /// The tool raised. `message` is `Type: text`; `traceback` is its tail (tool frames only).
    Call {
        name: String,
        message: String,
        traceback: String,
    },
    /// The request ran past `timeout`; the process was killed and restarts on the next request.
    Timeout { name: String, timeout: Duration },
    /// The run was stopped during the request; the process (and what the tool started) was
    /// killed and restarts on the next request.
    Stopped { name: String },
    /// The Python process died during the request (e.g. `os._exit`, a segfault).
    Crashed {
        name: String,
        status: String,
        stderr_tail: String,
    },
}

impl std::error::Error for PyError {}

impl fmt::Display for PyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PyError::Start(message) => f.write_str(message),
            PyError::Import { path, message } => {
                write!(f, "cannot load Python tool '{path}': {message}")
            }
            PyError::Call {
                name,
                message,
                traceback,
            } => {
                write!(f, "Python tool '{name}' raised {message}")?;
                if let Some(at) = last_frame(traceback) {
                    write!(f, " ({at})")?;
                }
                f.write_str(
                    ". The error is in the tool's own code or in the arguments it was given; \
                     see the traceback for details.",
                )
            }
            PyError::Timeout { name, timeout } => write!(
                f,
                "Python tool '{name}' did not finish within {}; its Python process was killed \
                 and is restarted on the next call. Make the tool faster or raise the timeout.",
                fmt_duration(*timeout)
            ),
            PyError::Stopped { name } => write!(
                f,
                "Python tool '{name}' was cancelled because the run was stopped; its Python \
                 process and everything it started were killed"
            ),
            PyError::Crashed {
                name,
                status,
                stderr_tail,
            } => {
                write!(
                    f,
                    "the Python process running tool '{name}' died ({status}); the tool may \
                     have called os._exit or crashed the interpreter. It is restarted on the \
                     next call."
                )?;
                if !stderr_tail.trim().is_empty() {
                    write!(f, " Last stderr output:\n{}", stderr_tail.trim_end())?;
                }
                Ok(())
            }
        }
    }
}

/// `File "x.py", line 3, in f` of the innermost frame, as `x.py:3 in f`.
fn last_frame(traceback: &str) -> Option<String> {
    let line = traceback
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("File \""))?;
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (file, rest) = rest.split_once('"')?;
    let rest = rest.trim_start_matches(", line ");
    let (lineno, func) = rest.split_once(", in ").unwrap_or((rest, ""));
    Some(if func.is_empty() {
        format!("at {file}:{lineno}")
    } else {
        format!("at {file}:{lineno} in {func}")
    })
}

fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 && d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{s:.1} s")
    }
}

/// A long-lived Python process running tools. `Send`; one request at a time (`&mut self`).
pub struct PyBridge {
    python: OsString,
    sys_path: Vec<PathBuf>,
    /// The environment the interpreter gets (see `childenv`).
    child_env: crate::childenv::ChildEnv,
    proc: Option<Proc>,
    next_id: u64,
}

struct Proc {
    child: Child,
    /// Carried by the interpreter and everything it starts (see `proctag`).
    tag: crate::proctag::ProcTag,
    stdin: Option<ChildStdin>,
    /// The protocol's replies, read on the calling thread (a reader thread would cost a second
    /// wake-up per round trip): see [`Proc::recv_line`].
    stdout: Option<ChildStdout>,
    /// Bytes read from `stdout` past the last full line.
    buf: Vec<u8>,
    stderr: Arc<Tail>,
}

impl PyBridge {
    /// Start the interpreter: `python` if given, else `$SWITCHYARD_PYTHON`, else `python3` on
    /// `PATH`. `sys_path` entries (the agent's directory first, then extras) are prepended to
    /// `sys.path` in order.
    /// The interpreter gets the base environment of `childenv` (and the user's opt-in) only;
    /// [`PyBridge::start_with_env`] gives it a run's.
    pub fn start(python: Option<&Path>, sys_path: &[PathBuf]) -> Result<PyBridge, PyError> {
        PyBridge::start_with_env(python, sys_path, crate::childenv::ChildEnv::default())
    }

    /// [`PyBridge::start`] with the run's [`ChildEnv`](crate::childenv::ChildEnv): the
    /// interpreter (and every restart of it) sees only the variables it allows.
    pub fn start_with_env(
        python: Option<&Path>,
        sys_path: &[PathBuf],
        child_env: crate::childenv::ChildEnv,
    ) -> Result<PyBridge, PyError> {
        let python = match python {
            Some(p) => p.as_os_str().to_owned(),
            None => match std::env::var_os("SWITCHYARD_PYTHON") {
                Some(p) if !p.is_empty() => p,
                _ => OsString::from("python3"),
            },
        };
        let mut bridge = PyBridge {
            python,
            sys_path: sys_path.to_vec(),
            child_env,
            proc: None,
            next_id: 1,
        };
        bridge.proc = Some(bridge.spawn()?);
        Ok(bridge)
    }

    /// Import `import_path` (`package.module.attribute`) and describe the tool.
    pub fn describe(&mut self, import_path: &str) -> Result<ToolInfo, PyError> {
        let result = self.request("describe", import_path, &Value::Null, DESCRIBE_TIMEOUT, None)?;
        let text = |k: &str| {
            result
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        Ok(ToolInfo {
            name: text("name"),
            description: text("description"),
            schema: result
                .get("schema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        })
    }

    /// Call the tool at `import_path` with `args` (a JSON object), killing the process if it
    /// takes longer than `timeout`. The result is the tool's return value as JSON (pydantic
    /// models and LangChain messages through `model_dump()`, anything else as `str(x)`).
    pub fn call(
        &mut self,
        import_path: &str,
        args: &Value,
        timeout: Duration,
    ) -> Result<Value, PyError> {
        self.request("call", import_path, args, timeout, None)
    }

    /// [`PyBridge::call`], also ending as soon as `stop` is raised (the process group is
    /// killed: the tool and whatever it started).
    pub fn call_until(
        &mut self,
        import_path: &str,
        args: &Value,
        timeout: Duration,
        stop: Option<&AtomicBool>,
    ) -> Result<Value, PyError> {
        self.request("call", import_path, args, timeout, stop)
    }

    /// Run the hook method `method` of the hook executor at `import_path` (a class, instantiated
    /// once per process, or an instance) with the context `ctx` (a JSON object). `None` when
    /// the executor does not define that hook; otherwise the context after the call — the
    /// returned one, or the passed one with the method's in-place changes (sherma's chaining).
    pub fn hook(
        &mut self,
        import_path: &str,
        method: &str,
        ctx: &Value,
        timeout: Duration,
    ) -> Result<Option<Value>, PyError> {
        let r = self.request("hook", import_path, &json!({"method": method, "ctx": ctx}), timeout, None)?;
        if r.get("defined") != Some(&Value::Bool(true)) {
            return Ok(None);
        }
        Ok(Some(r.get("ctx").cloned().unwrap_or(Value::Null)))
    }

    /// Define the module `name` in the interpreter from `source` (a module of the engine's own,
    /// such as the LLLM prompt reader), unless it already holds it with that source. A process
    /// that restarted (after a timeout, a crash or a stop) has lost it: define it before each use.
    pub fn define_module(&mut self, name: &str, source: &str) -> Result<(), PyError> {
        self.request("define", name, &json!({"source": source}), DESCRIBE_TIMEOUT, None).map(|_| ())
    }

    /// The newest stderr output of the process (bounded): tools' prints and warnings.
    pub fn stderr_tail(&self) -> String {
        self.proc
            .as_ref()
            .map(|p| p.stderr.text())
            .unwrap_or_default()
    }

    /// The process id of the running interpreter, if one is running.
    pub fn pid(&self) -> Option<u32> {
        self.proc.as_ref().map(|p| p.child.id())
    }

    fn spawn(&self) -> Result<Proc, PyError> {
        let shown = self.python.to_string_lossy().into_owned();
        let tag = crate::proctag::ProcTag::new();
        let mut command = Command::new(&self.python);
        self.child_env.apply(&mut command);
        crate::proctag::limit(&mut command);
        let mut child = command
            .arg("-u")
            .arg("-c")
            .arg(BRIDGE_PY)
            .args(&self.sys_path)
            .env("PYTHONIOENCODING", "utf-8:backslashreplace")
            // Importing the agent's modules writes nothing into its folder (no __pycache__).
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env(crate::proctag::VAR, tag.value())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| {
                let why = if e.kind() == std::io::ErrorKind::NotFound {
                    "not found".to_owned()
                } else {
                    e.to_string()
                };
                PyError::Start(format!(
                    "cannot start Python ('{shown}': {why}), which runs the agent's Python \
                     tools. Install python3, or set SWITCHYARD_PYTHON to the interpreter to use."
                ))
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = Tail::start(child.stderr.take());
        let mut proc = Proc {
            child,
            tag,
            stdin,
            stdout,
            buf: Vec::new(),
            stderr,
        };
        match proc.recv_line(Some(START_TIMEOUT)) {
            Ok(line) => match serde_json::from_slice::<Value>(&line) {
                Ok(v) if v.get("ready") == Some(&Value::Bool(true)) => Ok(proc),
                _ => {
                    proc.kill();
                    Err(PyError::Start(format!(
                        "'{shown}' did not start Switchyard's Python tool bridge (it wrote {:?}). \
                         Check that it is Python 3.8 or newer, or set SWITCHYARD_PYTHON.",
                        String::from_utf8_lossy(&line).trim_end()
                    )))
                }
            },
            Err(RecvTimeoutError::Timeout) => {
                proc.kill();
                Err(PyError::Start(format!(
                    "'{shown}' did not start within {}. Check the interpreter (or set \
                     SWITCHYARD_PYTHON to another one).",
                    fmt_duration(START_TIMEOUT)
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = proc.reap();
                Err(PyError::Start(format!(
                    "'{shown}' exited while starting Switchyard's Python tool bridge ({status}). \
                     Check that it is Python 3.8 or newer, or set SWITCHYARD_PYTHON.{}",
                    quote_tail(&proc.stderr.text())
                )))
            }
        }
    }

    fn request(
        &mut self,
        op: &str,
        path: &str,
        args: &Value,
        timeout: Duration,
        stop: Option<&AtomicBool>,
    ) -> Result<Value, PyError> {
        // A process that died since the last request (or was killed) is replaced first.
        let died = self
            .proc
            .as_mut()
            .is_some_and(|p| !matches!(p.child.try_wait(), Ok(None)));
        if died && let Some(mut dead) = self.proc.take() {
            dead.kill();
        }
        if self.proc.is_none() {
            self.proc = Some(self.spawn()?);
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut line = serde_json::to_vec(&json!({"id": id, "op": op, "path": path, "args": args}))
            .expect("JSON values serialise");
        line.push(b'\n');

        let proc = self.proc.as_mut().expect("spawned");
        let sent = match proc.stdin.as_mut() {
            Some(stdin) => stdin.write_all(&line).and_then(|()| stdin.flush()).is_ok(),
            None => false,
        };
        let deadline = Instant::now().checked_add(timeout);
        // With a stop flag, wait in short slices to notice it.
        const SLICE: Duration = Duration::from_millis(50);
        let mut stopped = false;
        let response = loop {
            if !sent {
                break Err(RecvTimeoutError::Disconnected);
            }
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                stopped = true;
                break Err(RecvTimeoutError::Timeout);
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let wait = match (left, stop.is_some()) {
                (Some(l), true) => Some(l.min(SLICE)),
                (Some(l), false) => Some(l),
                (None, true) => Some(SLICE),
                (None, false) => None,
            };
            match proc.recv_line(wait) {
                Ok(line) => match serde_json::from_slice::<Value>(&line) {
                    Ok(v) if v.get("id").and_then(Value::as_u64) == Some(id) => break Ok(v),
                    // A stale or foreign line: not ours.
                    _ => continue,
                },
                // A slice ran out, not the deadline: look at the stop flag again.
                Err(RecvTimeoutError::Timeout) if deadline.is_none_or(|d| Instant::now() < d) => continue,
                Err(e) => break Err(e),
            }
        };
        if stopped {
            let mut p = self.proc.take().expect("running");
            p.kill();
            return Err(PyError::Stopped { name: path.to_owned() });
        }
        match response {
            Ok(v) => self.interpret(path, v),
            Err(RecvTimeoutError::Timeout) => {
                let mut p = self.proc.take().expect("running");
                p.kill();
                Err(PyError::Timeout {
                    name: path.to_owned(),
                    timeout,
                })
            }
            Err(RecvTimeoutError::Disconnected) => {
                let mut p = self.proc.take().expect("running");
                let status = p.reap();
                // Give stderr a moment to drain so the message can quote it.
                p.stderr.wait_done(Duration::from_millis(500));
                Err(PyError::Crashed {
                    name: path.to_owned(),
                    status,
                    stderr_tail: tail_lines(&p.stderr.text(), STDERR_TAIL_LINES),
                })
            }
        }
    }

    fn interpret(&self, path: &str, v: Value) -> Result<Value, PyError> {
        if v.get("ok") == Some(&Value::Bool(true)) {
            return Ok(v.get("result").cloned().unwrap_or(Value::Null));
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        if s("kind") == "import" {
            let sys_path: Vec<&str> = v
                .get("sys_path")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let module = s("module");
            let mut message = s("message");
            let not_found = s("type") == "ModuleNotFoundError";
            if !module.is_empty() && module != path && !message.contains(&format!("'{module}'")) {
                message = format!("importing module '{module}' failed: {message}");
            }
            message.push_str(&format!(" (sys.path: [{}])", sys_path.join(", ")));
            let missing = s("missing");
            let is_dependency = not_found
                && !missing.is_empty()
                && module != missing
                && !module.starts_with(&format!("{missing}."));
            if is_dependency {
                message.push_str(&format!(
                    ". The tool's module needs '{missing}': install the package that provides it \
                     into this Python (e.g. `pip install`), or set SWITCHYARD_PYTHON to an \
                     interpreter that has it."
                ));
            } else if not_found {
                message.push_str(
                    ". Check that the module is in the agent's directory (or a sys.path entry) \
                     and spelled as in `import_path`, or install the missing package into this \
                     Python (SWITCHYARD_PYTHON picks another interpreter).",
                );
            } else if s("type").is_empty() {
                message.push_str(
                    ". Check `import_path`: it must name a function or a LangChain tool.",
                );
            } else {
                message.push_str(
                    ". The module failed while importing; see the traceback, or install the \
                     packages it needs into this Python.",
                );
                let tb = s("traceback");
                if let Some(at) = last_frame(&tb) {
                    message.push_str(&format!(" The error is {at}."));
                }
            }
            return Err(PyError::Import {
                path: path.to_owned(),
                message,
            });
        }
        Err(PyError::Call {
            name: path.to_owned(),
            message: s("message"),
            traceback: s("traceback"),
        })
    }
}

impl Drop for PyBridge {
    fn drop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            // EOF on stdin ends the bridge loop; give it a moment, then make sure.
            drop(p.stdin.take());
            let deadline = Instant::now() + Duration::from_millis(300);
            while Instant::now() < deadline {
                if !matches!(p.child.try_wait(), Ok(None)) {
                    break;
                }
                thread::sleep(Duration::from_millis(5));
            }
            p.kill();
        }
    }
}

impl Proc {
    /// The next line the bridge wrote, waiting at most `wait` (`None`: as long as it takes).
    /// `Timeout` when none came in time, `Disconnected` once the pipe is closed.
    fn recv_line(&mut self, wait: Option<Duration>) -> Result<Vec<u8>, RecvTimeoutError> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let deadline = wait.and_then(|w| Instant::now().checked_add(w));
        let mut scanned = 0;
        loop {
            if let Some(i) = self.buf[scanned..].iter().position(|&b| b == b'\n') {
                let rest = self.buf.split_off(scanned + i + 1);
                return Ok(std::mem::replace(&mut self.buf, rest));
            }
            scanned = self.buf.len();
            let Some(out) = self.stdout.as_mut() else {
                return Err(RecvTimeoutError::Disconnected);
            };
            let timeout = deadline.map(|d| {
                let left = d.saturating_duration_since(Instant::now());
                Timespec { tv_sec: left.as_secs() as _, tv_nsec: left.subsec_nanos() as _ }
            });
            let mut fds = [PollFd::new(&*out, PollFlags::IN)];
            // A tool's reply usually comes within microseconds: look for it a little while
            // before sleeping, which saves the wake-up (tens of µs on a VM) on every call.
            let spin_until = Instant::now() + SPIN;
            let mut ready = false;
            while Instant::now() < spin_until {
                if matches!(poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })), Ok(n) if n > 0) {
                    ready = true;
                    break;
                }
                std::hint::spin_loop();
            }
            match if ready { Ok(1) } else { poll(&mut fds, timeout.as_ref()) } {
                Ok(0) => return Err(RecvTimeoutError::Timeout),
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return Err(RecvTimeoutError::Disconnected),
            }
            let mut chunk = [0u8; 16 * 1024];
            match out.read(&mut chunk) {
                Ok(0) => {
                    self.stdout = None;
                    return Err(RecvTimeoutError::Disconnected);
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.stdout = None;
                    return Err(RecvTimeoutError::Disconnected);
                }
            }
        }
    }

    /// Kill the whole process group (tools' subprocesses too) and reap the interpreter.
    fn kill(&mut self) {
        drop(self.stdin.take());
        let pid = i32::try_from(self.child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            // ESRCH (already gone) is fine.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        self.tag.kill_all();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The interpreter's exit status as text, killing what is left of the group.
    fn reap(&mut self) -> String {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut status: Option<ExitStatus> = None;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    break;
                }
                Ok(None) => thread::sleep(Duration::from_millis(5)),
                Err(_) => break,
            }
        }
        self.kill();
        match status {
            Some(s) => match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(sig)) => format!("killed by signal {sig}"),
                _ => s.to_string(),
            },
            None => "it closed its output".to_owned(),
        }
    }
}

/// stderr read to EOF on its own thread, keeping the newest `STDERR_LIMIT` bytes.
struct Tail {
    buf: Mutex<VecDeque<u8>>,
    done: (Mutex<bool>, Condvar),
}

impl Tail {
    fn start<R: Read + Send + 'static>(pipe: Option<R>) -> Arc<Tail> {
        let tail = Arc::new(Tail {
            buf: Mutex::new(VecDeque::new()),
            done: (Mutex::new(false), Condvar::new()),
        });
        let t = Arc::clone(&tail);
        thread::spawn(move || {
            if let Some(mut pipe) = pipe {
                let mut chunk = [0u8; 8192];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let mut buf = t.buf.lock().unwrap_or_else(|e| e.into_inner());
                            buf.extend(&chunk[..n]);
                            let over = buf.len().saturating_sub(STDERR_LIMIT);
                            buf.drain(..over);
                        }
                    }
                }
            }
            *t.done.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            t.done.1.notify_all();
        });
        tail
    }

    fn text(&self) -> String {
        let buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = buf.as_slices();
        let mut bytes = Vec::with_capacity(buf.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn wait_done(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut done = self.done.0.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            done = match self.done.1.wait_timeout(done, deadline - now) {
                Ok((d, _)) => d,
                Err(e) => e.into_inner().0,
            };
        }
    }
}

fn tail_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn quote_tail(stderr: &str) -> String {
    let t = tail_lines(stderr, STDERR_TAIL_LINES);
    if t.trim().is_empty() {
        String::new()
    } else {
        format!(" Its stderr ended with:\n{t}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let dir = std::env::temp_dir().join(format!(
                "switchyard-pybridge-{tag}-{}-{}-{nanos}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(dir.join("fx")).unwrap();
            std::fs::write(dir.join("fx/__init__.py"), "").unwrap();
            Dir(dir)
        }
        fn file(&self, rel: &str, body: &str) {
            std::fs::write(self.0.join(rel), body).unwrap();
        }
        fn bridge(&self) -> PyBridge {
            PyBridge::start(None, std::slice::from_ref(&self.0)).unwrap()
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn have_python() -> bool {
        let python = std::env::var_os("SWITCHYARD_PYTHON")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "python3".into());
        let ok = Command::new(python)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            eprintln!("note: python3 not found; skipping a Python tool bridge test");
        }
        ok
    }

    const T: Duration = Duration::from_secs(20);

    #[test]
    fn a_defined_module_is_callable_and_a_new_source_replaces_it() {
        if !have_python() {
            return;
        }
        let d = Dir::new("define");
        let mut b = d.bridge();
        let src = "def twice(x):\n    return x * 2\n";
        b.define_module("sy_helper", src).unwrap();
        b.define_module("sy_helper", src).unwrap();
        assert_eq!(b.call("sy_helper.twice", &json!({"x": 21}), T).unwrap(), json!(42));
        // A new source replaces the old one (the resolved function is not kept).
        b.define_module("sy_helper", "def twice(x):\n    return x * 3\n").unwrap();
        assert_eq!(b.call("sy_helper.twice", &json!({"x": 2}), T).unwrap(), json!(6));
        assert!(b.define_module("not a name", src).is_err());
        assert!(matches!(b.define_module("sy_bad", "def (:\n"), Err(PyError::Call { .. })));
    }

    const PLAIN: &str = r#"
import asyncio

def search(query: str, limit: int = 5, ratio: float = 0.5, fuzzy: bool = False,
           tags: list = None, extra: dict = {}, anything=None):
    """Search the index.

    Returns matching titles."""
    return {"query": query, "limit": limit, "ratio": ratio, "fuzzy": fuzzy,
            "tags": tags, "extra": extra}

def nested(items: list[str], opt: "int | None" = None, *args, **kwargs) -> str:
    return ",".join(items)

async def slow_add(a: int, b: int) -> int:
    """Add asynchronously."""
    await asyncio.sleep(0.01)
    return a + b

class Point:
    def __init__(self, x):
        self.x = x
    def model_dump(self):
        return {"x": self.x, "kind": "point"}
    
class Opaque:
    def __str__(self):
        return "opaque!"

def shapes():
    return {"point": Point(3), "opaque": Opaque(), "tuple": (1, 2), "nan": float("nan"),
            3: "int key"}

NOT_A_TOOL = 42
"#;

    #[test]
    fn plain_function_schema_and_call() {
        if !have_python() {
            return;
        }
        let d = Dir::new("plain");
        d.file("fx/plain.py", PLAIN);
        let mut b = d.bridge();
        let info = b.describe("fx.plain.search").unwrap();
        assert_eq!(info.name, "search");
        assert_eq!(
            info.description,
            "Search the index.\n\nReturns matching titles."
        );
        assert_eq!(
            info.schema,
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "default": 5},
                    "ratio": {"type": "number", "default": 0.5},
                    "fuzzy": {"type": "boolean", "default": false},
                    "tags": {"type": "array", "default": null},
                    "extra": {"type": "object", "default": {}},
                    "anything": {"default": null},
                },
                "required": ["query"],
            })
        );
        let nested = b.describe("fx.plain.nested").unwrap();
        assert_eq!(
            nested.schema,
            json!({
                "type": "object",
                "properties": {
                    "items": {"type": "array", "items": {"type": "string"}},
                    "opt": {"type": "integer", "default": null},
                },
                "required": ["items"],
            })
        );
        let out = b
            .call(
                "fx.plain.search",
                &json!({"query": "rust", "fuzzy": true}),
                T,
            )
            .unwrap();
        assert_eq!(
            out,
            json!({"query": "rust", "limit": 5, "ratio": 0.5, "fuzzy": true, "tags": null,
                   "extra": {}})
        );
        // Async functions run through asyncio.run.
        assert_eq!(
            b.call("fx.plain.slow_add", &json!({"a": 2, "b": 40}), T)
                .unwrap(),
            json!(42)
        );
        // Results: model_dump, str() for the rest, no NaN in JSON, keys as strings.
        assert_eq!(
            b.call("fx.plain.shapes", &json!({}), T).unwrap(),
            json!({"point": {"x": 3, "kind": "point"}, "opaque": "opaque!", "tuple": [1, 2],
                   "nan": "nan", "3": "int key"})
        );
        // Wrong arguments are the tool's error, not a bridge failure.
        let err = b
            .call("fx.plain.search", &json!({"nope": 1}), T)
            .unwrap_err();
        assert!(
            matches!(&err, PyError::Call { message, .. } if message.starts_with("TypeError:")),
            "{err:?}"
        );
        let err = b.call("fx.plain.search", &json!([1]), T).unwrap_err();
        assert!(err.to_string().contains("JSON object"), "{err}");
        // Not callable.
        let err = b.describe("fx.plain.NOT_A_TOOL").unwrap_err();
        assert!(
            matches!(&err, PyError::Import { message, .. } if message.contains("is a int, not a function")),
            "{err:?}"
        );
    }

    const LC: &str = r#"
import asyncio

class FakeTool:
    name = "get_weather"
    description = "Weather for a city."
    args = {"city": {"type": "string", "title": "City"}}
    def __init__(self):
        self.seen = []
    def invoke(self, input):
        self.seen.append(input)
        return {"city": input["city"], "temp": 21, "calls": len(self.seen)}

weather = FakeTool()

class Schema:
    @classmethod
    def model_json_schema(cls):
        return {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

class Message:
    def model_dump(self):
        return {"type": "ai", "content": "hello"}

class AsyncTool:
    name = "fetch"
    description = "Fetch async."
    tool_call_schema = Schema
    args = {"ignored": {}}
    async def ainvoke(self, input):
        await asyncio.sleep(0.01)
        return Message()

fetch = AsyncTool()

class SyncRefuses:
    name = "coro_only"
    description = ""
    args_schema = Schema
    def invoke(self, input):
        raise NotImplementedError("StructuredTool does not support sync invocation.")
    async def ainvoke(self, input):
        return "async " + input["q"]

coro_only = SyncRefuses()
"#;

    #[test]
    fn langchain_style_tools() {
        if !have_python() {
            return;
        }
        let d = Dir::new("lc");
        d.file("fx/lc.py", LC);
        let mut b = d.bridge();
        let info = b.describe("fx.lc.weather").unwrap();
        assert_eq!(
            info,
            ToolInfo {
                name: "get_weather".into(),
                description: "Weather for a city.".into(),
                schema: json!({"type": "object",
                               "properties": {"city": {"type": "string", "title": "City"}}}),
            }
        );
        assert_eq!(
            b.call("fx.lc.weather", &json!({"city": "Oslo"}), T)
                .unwrap(),
            json!({"city": "Oslo", "temp": 21, "calls": 1})
        );
        // Same process, same module object: state persists between calls.
        assert_eq!(
            b.call("fx.lc.weather", &json!({"city": "Rome"}), T)
                .unwrap()["calls"],
            json!(2)
        );
        let fetch = b.describe("fx.lc.fetch").unwrap();
        assert_eq!(fetch.name, "fetch");
        assert_eq!(
            fetch.schema,
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
        );
        assert_eq!(
            b.call("fx.lc.fetch", &json!({"q": "x"}), T).unwrap(),
            json!({"type": "ai", "content": "hello"})
        );
        assert_eq!(
            b.describe("fx.lc.coro_only").unwrap().schema["required"],
            json!(["q"])
        );
        assert_eq!(
            b.call("fx.lc.coro_only", &json!({"q": "y"}), T).unwrap(),
            json!("async y")
        );
    }

    const MISC: &str = r#"
import os, sys, time

def boom(city: str):
    raise ValueError("no weather for " + city)

def chatty(x: int):
    print("hello from the tool")
    sys.stdout.write("no newline")
    os.write(1, b"raw fd 1\n")
    os.system("echo from a subprocess")
    return x * 2

def reads_stdin():
    return sys.stdin.read()

def exits():
    sys.exit(4)

def sleepy(seconds: float = 30):
    time.sleep(seconds)
    return "woke"

def die():
    sys.stderr.write("about to die\n")
    os._exit(3)

def ok():
    return "ok"

def big(n: int):
    return "".join(chr(97 + i % 26) for i in range(n))
"#;

    #[test]
    fn tool_exception_is_a_call_error_and_the_bridge_lives_on() {
        if !have_python() {
            return;
        }
        let d = Dir::new("raise");
        d.file("fx/misc.py", MISC);
        let mut b = d.bridge();
        let pid = b.pid();
        let err = b
            .call("fx.misc.boom", &json!({"city": "Atlantis"}), T)
            .unwrap_err();
        match &err {
            PyError::Call {
                name,
                message,
                traceback,
            } => {
                assert_eq!(name, "fx.misc.boom");
                assert_eq!(message, "ValueError: no weather for Atlantis");
                assert!(traceback.contains("misc.py"), "{traceback}");
                assert!(traceback.contains("raise ValueError"), "{traceback}");
                assert!(
                    !traceback.contains("<string>"),
                    "bridge frames leak: {traceback}"
                );
            }
            other => panic!("{other:?}"),
        }
        let text = err.to_string();
        assert!(text.contains("misc.py:5 in boom"), "{text}");
        // sys.exit inside a tool is an error, not the end of the bridge.
        let err = b.call("fx.misc.exits", &json!({}), T).unwrap_err();
        assert!(
            matches!(&err, PyError::Call { message, .. } if message == "SystemExit: 4"),
            "{err:?}"
        );
        assert_eq!(b.call("fx.misc.ok", &json!({}), T).unwrap(), json!("ok"));
        assert_eq!(b.pid(), pid, "the process must survive tool exceptions");
    }

    #[test]
    fn tool_output_does_not_corrupt_the_protocol() {
        if !have_python() {
            return;
        }
        let d = Dir::new("print");
        d.file("fx/misc.py", MISC);
        let mut b = d.bridge();
        for i in 0..3 {
            assert_eq!(
                b.call("fx.misc.chatty", &json!({"x": i}), T).unwrap(),
                json!(i * 2)
            );
        }
        // The tool cannot read the protocol either.
        assert_eq!(
            b.call("fx.misc.reads_stdin", &json!({}), T).unwrap(),
            json!("")
        );
        assert_eq!(b.call("fx.misc.ok", &json!({}), T).unwrap(), json!("ok"));
        // The prints went to stderr.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let tail = b.stderr_tail();
            if (tail.contains("hello from the tool")
                && tail.contains("raw fd 1")
                && tail.contains("from a subprocess"))
                || Instant::now() > deadline
            {
                assert!(tail.contains("hello from the tool"), "{tail}");
                assert!(tail.contains("raw fd 1"), "{tail}");
                assert!(tail.contains("from a subprocess"), "{tail}");
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn big_and_slow_replies_arrive_whole() {
        if !have_python() {
            return;
        }
        let d = Dir::new("bigslow");
        d.file("fx/misc.py", MISC);
        let mut b = d.bridge();
        // A reply of several MB comes in many reads; it must come back whole and in order.
        let big = b.call("fx.misc.big", &json!({"n": 3_000_000}), T).unwrap();
        let text = big.as_str().unwrap();
        assert_eq!(text.len(), 3_000_000);
        assert!(text.bytes().enumerate().all(|(i, c)| c == b'a' + (i % 26) as u8));
        // A reply that takes longer than the spin before sleeping still arrives.
        let t = Instant::now();
        assert_eq!(b.call("fx.misc.sleepy", &json!({"seconds": 0.05}), T).unwrap(), json!("woke"));
        assert!(t.elapsed() >= Duration::from_millis(50));
        // And the protocol is still in step.
        assert_eq!(b.call("fx.misc.ok", &json!({}), T).unwrap(), json!("ok"));
    }

    #[test]
    fn timeout_kills_and_the_next_call_restarts() {
        if !have_python() {
            return;
        }
        let d = Dir::new("timeout");
        d.file("fx/misc.py", MISC);
        let mut b = d.bridge();
        let first = b.pid().unwrap();
        let started = Instant::now();
        let err = b
            .call("fx.misc.sleepy", &json!({}), Duration::from_millis(400))
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(
            err,
            PyError::Timeout {
                name: "fx.misc.sleepy".into(),
                timeout: Duration::from_millis(400)
            }
        );
        assert!(err.to_string().contains("within 0.4 s"), "{err}");
        assert_eq!(b.pid(), None, "the timed-out process is gone");
        assert_eq!(b.call("fx.misc.ok", &json!({}), T).unwrap(), json!("ok"));
        assert_ne!(b.pid(), Some(first));
        // A short sleep within the timeout works.
        assert_eq!(
            b.call("fx.misc.sleepy", &json!({"seconds": 0.05}), T)
                .unwrap(),
            json!("woke")
        );
    }

    #[test]
    fn hard_crash_is_reported_and_the_next_call_restarts() {
        if !have_python() {
            return;
        }
        let d = Dir::new("crash");
        d.file("fx/misc.py", MISC);
        let mut b = d.bridge();
        let err = b.call("fx.misc.die", &json!({}), T).unwrap_err();
        match &err {
            PyError::Crashed {
                name,
                status,
                stderr_tail,
            } => {
                assert_eq!(name, "fx.misc.die");
                assert_eq!(status, "exit code 3");
                assert!(stderr_tail.contains("about to die"), "{stderr_tail}");
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("os._exit"), "{err}");
        assert_eq!(b.call("fx.misc.ok", &json!({}), T).unwrap(), json!("ok"));
    }

    #[test]
    fn process_killed_between_calls_is_replaced() {
        if !have_python() {
            return;
        }
        let d = Dir::new("killed");
        d.file("fx/misc.py", MISC);
        let mut b = d.bridge();
        let pid = b.pid().unwrap();
        Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        thread::sleep(Duration::from_millis(100));
        assert_eq!(b.call("fx.misc.ok", &json!({}), T).unwrap(), json!("ok"));
        assert_ne!(b.pid(), Some(pid));
    }

    #[test]
    fn bad_import_paths_say_what_to_check() {
        if !have_python() {
            return;
        }
        let d = Dir::new("import");
        d.file("fx/plain.py", PLAIN);
        d.file(
            "fx/needs_dep.py",
            "import surely_not_installed_pkg\n\ndef t(): pass\n",
        );
        d.file(
            "fx/broken.py",
            "x = 1\nraise RuntimeError('config missing')\n",
        );
        let mut b = d.bridge();
        let dir = d.0.to_string_lossy().into_owned();

        let err = b.describe("nosuchmod.tool").unwrap_err();
        match &err {
            PyError::Import { path, message } => {
                assert_eq!(path, "nosuchmod.tool");
                assert!(message.contains("No module named 'nosuchmod'"), "{message}");
                assert!(message.contains(&dir), "sys.path missing: {message}");
                assert!(message.contains("agent's directory"), "{message}");
                assert!(message.contains("install"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let err = b.call("fx.nosuch.tool", &json!({}), T).unwrap_err();
        assert!(
            err.to_string().contains("No module named 'fx.nosuch'"),
            "{err}"
        );

        let err = b.describe("fx.plain.missing_attr").unwrap_err();
        assert!(
            err.to_string().contains("has no attribute 'missing_attr'"),
            "{err}"
        );
        let err = b.describe("fx.needs_dep.t").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("surely_not_installed_pkg"), "{text}");
        assert!(text.contains("fx.needs_dep"), "{text}");
        assert!(text.contains("needs 'surely_not_installed_pkg'"), "{text}");
        assert!(text.contains("pip install"), "{text}");
        let err = b.describe("fx.broken.t").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("RuntimeError: config missing"), "{text}");
        assert!(text.contains("broken.py:2"), "{text}");
        let err = b.describe("not a path").unwrap_err();
        assert!(err.to_string().contains("not an import path"), "{err}");
        // Still alive after all that.
        assert_eq!(b.describe("fx.plain.search").unwrap().name, "search");
    }

    #[test]
    fn missing_interpreter_is_a_start_error() {
        let err = PyBridge::start(Some(Path::new("/nonexistent/python3")), &[])
            .err()
            .expect("must fail");
        assert!(matches!(err, PyError::Start(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("/nonexistent/python3"), "{text}");
        assert!(text.contains("not found"), "{text}");
        assert!(text.contains("SWITCHYARD_PYTHON"), "{text}");
        // Something that is not Python at all.
        if Path::new("/bin/false").exists() {
            let err = PyBridge::start(Some(Path::new("/bin/false")), &[])
                .err()
                .expect("must fail");
            assert!(
                matches!(&err, PyError::Start(m) if m.contains("exited")),
                "{err:?}"
            );
        }
    }

    #[test]
    fn two_bridges_concurrently() {
        if !have_python() {
            return;
        }
        let d = Dir::new("concurrent");
        d.file("fx/misc.py", MISC);
        d.file("fx/plain.py", PLAIN);
        let handles: Vec<_> = (0..2)
            .map(|n| {
                let mut b = d.bridge();
                thread::spawn(move || {
                    let mut out = Vec::new();
                    for i in 0..20 {
                        let v = b
                            .call("fx.plain.slow_add", &json!({"a": n * 1000, "b": i}), T)
                            .unwrap();
                        out.push(v.as_i64().unwrap());
                    }
                    (b.pid(), out)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_ne!(results[0].0, results[1].0);
        for (n, (_, out)) in results.iter().enumerate() {
            let want: Vec<i64> = (0..20).map(|i| n as i64 * 1000 + i).collect();
            assert_eq!(out, &want);
        }
    }

    #[test]
    fn drop_ends_the_process() {
        if !have_python() {
            return;
        }
        let d = Dir::new("drop");
        let b = d.bridge();
        let pid = b.pid().unwrap();
        drop(b);
        // Reaped by Drop, so the pid no longer names our child.
        let alive = Path::new(&format!("/proc/{pid}")).exists()
            && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.contains("pybridge") || c.contains("Switchyard's Python tool bridge"))
                .unwrap_or(false);
        assert!(!alive);
    }
}
