//! The hostile-agent corpus (`tests/hostile/<case>/`, issue 27 "Trust before code runs"): each
//! case is an agent of either dialect that tries one escape (a script, a tool, an MCP command,
//! an `import_path`, a hook, a secret in a URL, a path outside the project, a planted symlink or
//! FIFO, `/dev/zero`, self-referencing sub-agents, a background process, a fork bomb, a huge
//! reply, …) and a `case.yaml` saying what must happen in each mode. `tests/hostile/README.md`
//! describes the format.
//!
//! Every case is copied into a temp project of its own (placeholders filled, symlinks, FIFOs and
//! big files planted) and run through the real `switchyard` binary: `validate`, `run --manifest`,
//! then `run` in restricted mode (folder not trusted), and, after `switchyard trust`, a scripted
//! run (offline), a legitimate run allowed the network where the case has one, and a replay of
//! the cassette recorded before (offline). After each step the test checks that no marker file
//! was written (or that it was, for a legitimate run), that no connection reached the loopback
//! listener (or that one did), that no file of the fake home or of the folder outside the
//! project changed, that the known secrets appear in no output and no file the run wrote, that
//! nothing panicked or survived the run, and that the message says the case's words. Each
//! subprocess runs under a generous guard: a hang fails the case instead of blocking the test.
//!
//! `pending: "<reason>"` on a case or a mode skips its assertions with a note (and says so when
//! it now passes), for behaviours being built.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// An AWS-key-shaped secret in the fake home's `~/.aws/credentials` (and the file outside the
/// project), and the value of `OPENAI_API_KEY` in the runs' environment.
const AWS_SECRET: &str = "AKIAHOSTILEQX2Z9K4MW";
const AWS_SECRET_2: &str = "hostileAwsSecretKey0123456789abcdefGHIJKL";
const ENV_SECRET: &str = "sk-hostile-0123456789abcdefABCDEF";

/// How long any one subprocess may take before the case fails as hung (generous: a loaded
/// two-core machine, a cold Python start).
const GUARD: Duration = Duration::from_secs(180);

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Case {
    dialect: String,
    /// The agent file or folder, relative to the case folder (= the project).
    agent: String,
    /// The one escape the agent tries.
    escape: String,
    /// Create `.git` at the project's top (the project root is the case folder either way when
    /// the agent sits at its top).
    #[serde(default)]
    git: bool,
    /// Scripted replies (`--llm-script`), relative to the case folder.
    #[serde(default)]
    replies: Option<String>,
    #[serde(default)]
    setup: Vec<Setup>,
    /// Extra environment of every run (placeholders filled).
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Where the scripted and trusted runs record their cassettes, relative to the project
    /// (default: a scratch folder outside it).
    #[serde(default)]
    record: Option<String>,
    /// Processes whose command line holds `{{TAG}}` must be gone after every run.
    #[serde(default)]
    tag: bool,
    #[serde(default)]
    pending: Option<String>,
    #[serde(default)]
    validate: Option<Expect>,
    #[serde(default)]
    manifest: Option<Expect>,
    restricted: Expect,
    scripted: Expect,
    #[serde(default)]
    trusted: Option<Expect>,
    replay: Expect,
}

/// One thing the test plants: exactly one of the fields.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Setup {
    #[serde(default)]
    fifo: Option<Planted>,
    #[serde(default)]
    symlink: Option<Planted>,
    #[serde(default)]
    big: Option<Big>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Planted {
    path: String,
    /// symlink: where it points (placeholders filled).
    #[serde(default)]
    to: Option<String>,
}

/// A file of `bytes` bytes: `head`, then `fill` repeated, then `tail`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Big {
    path: String,
    bytes: usize,
    head: String,
    fill: String,
    tail: String,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// `refused`, `offline`, `blocked`, `bounded`, `runs`, `contacts`, `stopped`, `ok`: sets the
    /// defaults of the fields below (README).
    outcome: String,
    #[serde(default)]
    exit: Option<i32>,
    /// Substrings of stdout + stderr.
    #[serde(default)]
    says: Vec<String>,
    /// `present` / `absent`.
    #[serde(default)]
    marker: Option<String>,
    #[serde(default)]
    contacted: Option<bool>,
    /// Send SIGINT once the output holds this (a run that would wait for an hour).
    #[serde(default)]
    stop_when: Option<String>,
    /// Extra arguments of this run.
    #[serde(default)]
    args: Vec<String>,
    /// replay: which run's cassette (`scripted` or `trusted`; default the trusted one if any).
    #[serde(default)]
    from: Option<String>,
    /// replay: the cassette to replay instead (placeholders filled).
    #[serde(default)]
    cassette: Option<String>,
    #[serde(default)]
    pending: Option<String>,
    /// Not run at all, printing the reason (a step that today would harm the machine).
    #[serde(default)]
    skip: Option<String>,
    /// Pending when the tests run as root (limits the kernel does not enforce for root).
    #[serde(default)]
    pending_as_root: Option<String>,
}

/// A loopback HTTP listener counting every connection it accepts (before any request is read),
/// answering `/hooks` as a JSON-RPC hook executor (result null, the request's id) and the
/// paths in `pages`; 404 otherwise.
struct Listener {
    url: String,
    conns: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Listener {
    fn start() -> Listener {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let conns = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (c, p) = (conns.clone(), paths.clone());
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { continue };
                c.fetch_add(1, Ordering::SeqCst);
                let p = p.clone();
                std::thread::spawn(move || {
                    let _ = serve_one(s, &p);
                });
            }
        });
        Listener { url, conns, paths }
    }

    fn contacted(&self) -> bool {
        self.conns.load(Ordering::SeqCst) > 0
    }

    fn reset(&self) {
        self.conns.store(0, Ordering::SeqCst);
        self.paths.lock().unwrap().clear();
    }
}

fn serve_one(mut s: std::net::TcpStream, paths: &Mutex<Vec<String>>) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 1 << 20 {
            return Ok(());
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
    let len: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len.min(1 << 20) {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    paths.lock().unwrap().push(path.clone());
    let bare = path.split('?').next().unwrap_or("");
    let (status, ctype, reply) = if bare == "/hooks" {
        let id = serde_json::from_slice::<serde_json::Value>(&body).ok().map(|v| v["id"].clone()).unwrap_or(serde_json::json!(1));
        ("200 OK", "application/json", serde_json::json!({"jsonrpc": "2.0", "id": id, "result": null}).to_string())
    } else if bare == "/doc.txt" {
        ("200 OK", "text/plain", "Launch the kite with the wind at your back.".to_string())
    } else {
        ("404 Not Found", "text/plain", "no such page".to_string())
    };
    write!(s, "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}", reply.len())?;
    s.flush()
}

/// What a subprocess did.
struct Out {
    code: Option<i32>,
    text: String,
}

/// Runs `cmd` under the guard: output collected on threads, SIGINT once the output holds
/// `stop_when`, killed (and the case failed) when it outlives [`GUARD`].
fn run_guarded(mut cmd: Command, stop_when: Option<&str>) -> Result<Out, String> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {BIN}: {e}"))?;
    let text = Arc::new(Mutex::new(String::new()));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let readers: Vec<Box<dyn Read + Send>> =
        vec![Box::new(child.stdout.take().unwrap()), Box::new(child.stderr.take().unwrap())];
    for mut r in readers {
        let (text, done) = (text.clone(), done_tx.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            // At most 64 MiB kept: a huge reply must not exhaust the test.
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut t = text.lock().unwrap();
                if t.len() < 64 << 20 {
                    t.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
            let _ = done.send(());
        });
    }
    drop(done_tx);
    let start = Instant::now();
    let mut interrupted = false;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if let Some(w) = stop_when
            && !interrupted
            && text.lock().unwrap().contains(w)
        {
            let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            interrupted = true;
        }
        if start.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("hung: still running after {GUARD:?}; output so far:\n{}", tail(&text.lock().unwrap())));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Both pipes end once nothing holds them; a leftover child holding one is a failure.
    for _ in 0..2 {
        if done_rx.recv_timeout(Duration::from_secs(30)).is_err() {
            return Err(format!(
                "the run ended ({status}) but something it started still holds its output open:\n{}",
                tail(&text.lock().unwrap())
            ));
        }
    }
    let text = text.lock().unwrap().clone();
    Ok(Out { code: status.code(), text })
}

fn tail(s: &str) -> String {
    let cut = s.len().saturating_sub(4000);
    let cut = (cut..=s.len()).find(|i| s.is_char_boundary(*i)).unwrap_or(s.len());
    s[cut..].to_string()
}

/// One file's identity for the "nothing outside changed" check.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    kind: &'static str,
    size: u64,
    mtime: (i64, i64),
    link: Option<PathBuf>,
}

fn snapshot(dirs: &[&Path]) -> BTreeMap<PathBuf, Seen> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut todo: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(p) = todo.pop() {
        let Ok(m) = std::fs::symlink_metadata(&p) else { continue };
        let ft = m.file_type();
        let kind = if ft.is_symlink() {
            "symlink"
        } else if ft.is_dir() {
            "dir"
        } else if ft.is_file() {
            "file"
        } else {
            "other"
        };
        out.insert(
            p.clone(),
            Seen {
                kind,
                size: if ft.is_dir() { 0 } else { m.len() },
                mtime: if ft.is_dir() { (0, 0) } else { (m.mtime(), m.mtime_nsec()) },
                link: std::fs::read_link(&p).ok(),
            },
        );
        if ft.is_dir() {
            for e in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                todo.push(e.path());
            }
        }
    }
    out
}

/// The regular files under `dir` (symlinks not followed), for the secret scan.
fn regular_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            regular_files(&e.path(), out);
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
}

fn holds_secret(bytes: &[u8]) -> Option<&'static str> {
    [AWS_SECRET, AWS_SECRET_2, ENV_SECRET]
        .into_iter()
        .find(|s| bytes.windows(s.len()).any(|w| w == s.as_bytes()))
}

/// Processes whose command line holds `tag` (not this test's own).
fn tagged(tag: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(tag) && !test_support::process_gone(pid) {
            out.push((pid, cmd));
        }
    }
    out
}

struct Ctx<'a> {
    name: String,
    case: &'a Case,
    tmp: PathBuf,
    proj: PathBuf,
    scratch: PathBuf,
    marker: PathBuf,
    tag: String,
    listener: &'a Listener,
    vars: Vec<(String, String)>,
    sentinel: BTreeMap<PathBuf, Seen>,
    sentinel_dirs: Vec<PathBuf>,
    notes: Vec<String>,
}

impl Ctx<'_> {
    fn fill(&self, s: &str) -> String {
        let mut s = s.to_string();
        for (k, v) in &self.vars {
            s = s.replace(k, v);
        }
        s
    }

    fn agent(&self) -> String {
        self.proj.join(&self.case.agent).display().to_string()
    }

    fn command(&self, args: &[String]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args).current_dir(&self.proj).env_clear();
        c.env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("HOME", self.tmp.join("home"))
            .env("XDG_CONFIG_HOME", self.tmp.join("home/.config"))
            .env("XDG_DATA_HOME", self.tmp.join("home/.local/share"))
            .env("XDG_STATE_HOME", self.tmp.join("home/.local/state"))
            .env("XDG_CACHE_HOME", self.scratch.join("cache"))
            .env("TMPDIR", self.scratch.join("tmp"))
            .env("SWITCHYARD_TRUST", self.scratch.join("trust.json"))
            .env("SWITCHYARD_RUNS_DB", self.scratch.join("runs.sqlite"))
            .env("SWITCHYARD_KEYRING", "off")
            .env("OPENAI_API_KEY", ENV_SECRET)
            .env("HOSTILE_TAG", &self.tag);
        for (k, v) in &self.case.env {
            c.env(k, self.fill(v));
        }
        c
    }

    /// Runs one step and checks what every step must keep; `Err` holds what went wrong.
    fn step(&mut self, mode: &str, args: Vec<String>, e: &Expect) -> Result<(), String> {
        let _ = std::fs::remove_file(&self.marker);
        self.listener.reset();
        let out = run_guarded(self.command(&args), e.stop_when.as_deref())?;
        let ctx = || format!("{mode}: `switchyard {}` exited {:?}:\n{}", args.join(" "), out.code, tail(&out.text));
        let mut problems = Vec::new();

        // Always: no panic, no secret in the output, nothing outside changed, nothing left over.
        if out.text.contains("panicked at") {
            problems.push("the CLI panicked".to_string());
        }
        if let Some(s) = holds_secret(out.text.as_bytes()) {
            problems.push(format!("the output holds the secret {s}"));
        }
        let refs: Vec<&Path> = self.sentinel_dirs.iter().map(|p| p.as_path()).collect();
        let now = snapshot(&refs);
        if now != self.sentinel {
            let mut diff = Vec::new();
            for (p, s) in &now {
                if self.sentinel.get(p) != Some(s) {
                    diff.push(format!("changed or new: {} {s:?}", p.display()));
                }
            }
            for p in self.sentinel.keys().filter(|p| !now.contains_key(*p)) {
                diff.push(format!("removed: {}", p.display()));
            }
            problems.push(format!("files outside the project changed:\n  {}", diff.join("\n  ")));
            self.sentinel = now;
        }
        if self.case.tag {
            let ok = test_support::wait_until(Duration::from_secs(10), || tagged(&self.tag).is_empty());
            if !ok {
                let left = tagged(&self.tag);
                for (pid, _) in &left {
                    if let Some(p) = rustix::process::Pid::from_raw(*pid as i32) {
                        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                    }
                }
                problems.push(format!("processes the run started survived it: {left:?}"));
            }
        }

        // What this mode expects.
        let (exit, mut says, marker, contacted) = defaults(&e.outcome)?;
        let exit = e.exit.or(exit);
        says.extend(e.says.iter().map(|s| self.fill(s)));
        let marker = e.marker.clone().or(marker.map(String::from));
        let contacted = e.contacted.or(contacted);
        if let Some(x) = exit
            && out.code != Some(x)
        {
            problems.push(format!("expected exit {x}, got {:?}", out.code));
        }
        if exit.is_none() && out.code.is_none() {
            problems.push("killed by a signal".to_string());
        }
        for s in &says {
            if !out.text.contains(s.as_str()) {
                problems.push(format!("the output does not say {s:?}"));
            }
        }
        let present = self.marker.exists();
        if let Some(m) = marker.as_deref() {
            match m {
                "present" if !present => problems.push("the marker is absent: it did not run".into()),
                "absent" if present => problems.push(format!(
                    "the marker is present: something ran ({})",
                    std::fs::read_to_string(&self.marker).unwrap_or_default().chars().take(300).collect::<String>()
                )),
                "present" | "absent" => {}
                other => return Err(format!("marker: {other:?} is neither present nor absent")),
            }
        }
        if present && let Ok(b) = std::fs::read(&self.marker) && let Some(s) = holds_secret(&b) {
            problems.push(format!("the marker file holds the secret {s} (what the child saw)"));
        }
        match contacted {
            Some(true) if !self.listener.contacted() => problems.push("no connection reached the listener".into()),
            Some(false) if self.listener.contacted() => problems.push(format!(
                "a connection reached the loopback listener: {:?}",
                self.listener.paths.lock().unwrap()
            )),
            _ => {}
        }
        // No file the run wrote (project, cassettes, traces, temp files) holds a secret.
        let mut files = Vec::new();
        regular_files(&self.proj, &mut files);
        regular_files(&self.scratch, &mut files);
        for f in files {
            if f == self.marker {
                continue;
            }
            let mut b = Vec::new();
            if std::fs::File::open(&f).and_then(|h| h.take(64 << 20).read_to_end(&mut b)).is_ok()
                && let Some(s) = holds_secret(&b)
            {
                problems.push(format!("{} holds the secret {s}", f.display()));
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(format!("{}\n{}", problems.join("\n"), ctx())) }
    }

    /// A step, honouring `pending`: a pending step's failure is a note, its success a note too.
    fn checked(&mut self, mode: &str, args: Vec<String>, e: &Expect, failures: &mut Vec<String>) {
        if let Some(why) = &e.skip {
            self.notes.push(format!("{} {mode}: skipped ({why})", self.name));
            return;
        }
        let pending = e.pending.clone().or_else(|| e.pending_as_root.clone().filter(|_| is_root()));
        let r = self.step(mode, args, e);
        match (r, pending) {
            (Ok(()), None) => {}
            (Ok(()), Some(why)) => self.notes.push(format!("{} {mode}: pending ({why}) but passes now: flip it", self.name)),
            (Err(e), Some(why)) => {
                self.notes.push(format!("{} {mode}: pending ({why}); today: {}", self.name, e.lines().next().unwrap_or("")))
            }
            (Err(e), None) => failures.push(format!("case {} ({}), {mode}:\n{e}", self.name, self.case.escape)),
        }
    }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `(exit, says, marker, contacted)` an outcome implies.
#[allow(clippy::type_complexity)]
fn defaults(outcome: &str) -> Result<(Option<i32>, Vec<String>, Option<&'static str>, Option<bool>), String> {
    Ok(match outcome {
        "refused" => (Some(2), vec!["is not trusted".into(), "switchyard trust".into()], Some("absent"), Some(false)),
        "offline" => (Some(1), vec!["this run is offline".into(), "--allow-network".into()], Some("absent"), Some(false)),
        "blocked" => (Some(1), vec![], Some("absent"), Some(false)),
        "bounded" => (None, vec![], None, Some(false)),
        "runs" => (Some(0), vec![], Some("present"), Some(false)),
        "contacts" => (None, vec![], Some("absent"), Some(true)),
        "stopped" => (Some(130), vec![], None, Some(false)),
        "ok" => (None, vec![], Some("absent"), Some(false)),
        other => return Err(format!("unknown outcome {other:?}")),
    })
}

fn copy_filled(from: &Path, to: &Path, ctx: &Ctx) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, name) = (e.path(), e.file_name());
        let dst = to.join(&name);
        if src.is_dir() {
            copy_filled(&src, &dst, ctx);
        } else {
            let text = std::fs::read_to_string(&src).unwrap();
            std::fs::write(&dst, ctx.fill(&text)).unwrap();
            let mode = std::fs::metadata(&src).unwrap().permissions();
            std::fs::set_permissions(&dst, mode).unwrap();
        }
    }
}

/// Runs one case in every mode; the failures, and notes for pending ones.
fn run_case(dir: &Path, listener: &Listener) -> (Vec<String>, Vec<String>) {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let case: Case = match serde_yaml::from_str(&std::fs::read_to_string(dir.join("case.yaml")).unwrap()) {
        Ok(c) => c,
        Err(e) => return (vec![format!("case {name}: case.yaml: {e}")], vec![]),
    };
    if let Some(why) = &case.pending {
        return (vec![], vec![format!("{name}: pending ({why}), skipped")]);
    }
    let t = TempDir::new(&format!("hostile-{name}"));
    let tmp = t.path().to_path_buf();
    let (proj, scratch, home, outside) = (tmp.join("proj"), tmp.join("scratch"), tmp.join("home"), tmp.join("outside"));
    for d in [&scratch.join("tmp"), &home.join(".aws"), &home.join(".config"), &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        home.join(".aws/credentials"),
        format!("[default]\naws_access_key_id = {AWS_SECRET}\naws_secret_access_key = {AWS_SECRET_2}\n"),
    )
    .unwrap();
    std::fs::write(outside.join("secret.txt"), format!("The key is {AWS_SECRET}.\n")).unwrap();
    std::fs::write(outside.join("victim.txt"), "a file outside the project\n").unwrap();
    let marker = scratch.join("marker");
    std::fs::write(
        outside.join("evil.sh"),
        format!("#!/usr/bin/env bash\necho escaped >> '{}'\necho '{{}}'\n", marker.display()),
    )
    .unwrap();
    std::fs::write(
        outside.join("tools.sh"),
        format!(
            "#!/usr/bin/env bash\n# @cmd Plant a marker.\n# @option --what! What to plant\nplant() {{\n    echo \"planted $argc_what\" >> '{}'\n}}\neval \"$(argc --argc-eval \"$0\" \"$@\")\"\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(outside.join("child")).unwrap();
    std::fs::write(
        outside.join("child/graph.yaml"),
        "version: \"1.0\"\nname: child\nstart: s\nnodes:\n  s:\n    type: script\n    script: evil.sh\n    next: done\n  done:\n    type: end\n",
    )
    .unwrap();
    std::fs::copy(outside.join("evil.sh"), outside.join("child/evil.sh")).unwrap();
    for f in ["evil.sh", "child/evil.sh", "tools.sh"] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(outside.join(f), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let tag = format!("hostile-tag-{}-{}", std::process::id(), name);
    let vars = vec![
        ("{{MARKER}}".to_string(), marker.display().to_string()),
        ("{{URL}}".to_string(), listener.url.clone()),
        ("{{OUTSIDE}}".to_string(), outside.display().to_string()),
        ("{{HOME}}".to_string(), home.display().to_string()),
        ("{{PROJ}}".to_string(), proj.display().to_string()),
        ("{{REPO}}".to_string(), ROOT.to_string()),
        ("{{TAG}}".to_string(), tag.clone()),
    ];
    let sentinel_dirs = vec![home.clone(), outside.clone()];
    let mut ctx = Ctx {
        name: name.clone(),
        case: &case,
        tmp: tmp.clone(),
        proj: proj.clone(),
        scratch: scratch.clone(),
        marker,
        tag,
        listener,
        vars,
        sentinel: BTreeMap::new(),
        sentinel_dirs,
        notes: vec![],
    };
    copy_filled(dir, &proj, &ctx);
    let _ = std::fs::remove_file(proj.join("case.yaml"));
    if case.git {
        std::fs::create_dir_all(proj.join(".git")).unwrap();
    }
    for s in &case.setup {
        if let Some(Planted { path, .. }) = &s.fifo {
            let p = proj.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let _ = std::fs::remove_file(&p);
            rustix::fs::mknodat(rustix::fs::CWD, &p, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o644), 0)
                .unwrap();
        }
        if let Some(Planted { path, to }) = &s.symlink {
            let p = proj.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let _ = std::fs::remove_file(&p);
            std::os::unix::fs::symlink(ctx.fill(to.as_deref().expect("a symlink needs `to`")), &p).unwrap();
        }
        if let Some(Big { path, bytes, head, fill, tail }) = &s.big {
            let mut f = std::io::BufWriter::new(std::fs::File::create(proj.join(path)).unwrap());
            f.write_all(head.as_bytes()).unwrap();
            let mut n = head.len() + tail.len();
            while n < *bytes {
                f.write_all(fill.as_bytes()).unwrap();
                n += fill.len();
            }
            f.write_all(tail.as_bytes()).unwrap();
        }
    }
    ctx.sentinel = snapshot(&[&home, &outside]);

    let mut failures = Vec::new();
    let agent = ctx.agent();
    let replies: Vec<String> = case
        .replies
        .iter()
        .flat_map(|r| ["--llm-script".to_string(), proj.join(r).display().to_string()])
        .collect();

    // Validating and listing what would run run nothing, trusted or not.
    let v = case.validate.clone().unwrap_or(Expect { outcome: "ok".into(), ..Default::default() });
    ctx.checked("validate", vec!["validate".into(), agent.clone()], &v, &mut failures);
    let m = case.manifest.clone().unwrap_or(Expect { outcome: "ok".into(), ..Default::default() });
    ctx.checked("manifest", vec!["run".into(), agent.clone(), "--manifest".into(), "--format".into(), "json".into()], &m, &mut failures);

    let run_args = |ctx: &Ctx, e: &Expect, extra: Vec<String>| -> Vec<String> {
        let mut a = vec!["run".to_string(), agent.clone()];
        a.extend(extra);
        a.extend(e.args.iter().map(|s| ctx.fill(s)));
        a
    };
    let mut restricted = case.restricted.clone();
    if !restricted.says.iter().any(|s| s == "is not trusted") {
        restricted.says.push("is not trusted".into());
    }
    let a = run_args(&ctx, &restricted, replies.clone());
    ctx.checked("restricted", a, &restricted, &mut failures);

    // Trust the folder, as a user would.
    let o = run_guarded(ctx.command(&["trust".into(), agent.clone()]), None);
    match o {
        Ok(o) if o.code == Some(0) => {}
        Ok(o) => failures.push(format!("case {name}: `switchyard trust` failed: {}", o.text)),
        Err(e) => failures.push(format!("case {name}: `switchyard trust`: {e}")),
    }

    let cassette = |mode: &str| match &case.record {
        Some(r) => proj.join(r),
        None => scratch.join(format!("{mode}.cassette.json")),
    };
    let trace = |mode: &str| scratch.join(format!("{mode}.jsonl"));
    let mut extra = replies.clone();
    extra.extend(["--record".into(), cassette("scripted").display().to_string()]);
    extra.extend(["--trace".into(), trace("scripted").display().to_string()]);
    let a = run_args(&ctx, &case.scripted, extra);
    ctx.checked("scripted", a, &case.scripted, &mut failures);

    if let Some(tr) = &case.trusted {
        let mut extra = replies.clone();
        extra.push("--allow-network".into());
        extra.extend(["--record".into(), cassette("trusted").display().to_string()]);
        extra.extend(["--trace".into(), trace("trusted").display().to_string()]);
        let a = run_args(&ctx, tr, extra);
        ctx.checked("trusted", a, tr, &mut failures);
    }

    let from = case.replay.from.clone().unwrap_or_else(|| if case.trusted.is_some() { "trusted".into() } else { "scripted".into() });
    let extra = vec![
        "--replay".into(),
        match &case.replay.cassette {
            Some(c) => ctx.fill(c),
            // A run that made no exchange (or failed before its first) may leave no cassette:
            // replay an empty one then.
            None if !cassette(&from).exists() => format!("{ROOT}/tests/hostile/empty.cassette.json"),
            None => cassette(&from).display().to_string(),
        },
        "--trace".into(),
        trace("replay").display().to_string(),
    ];
    let a = run_args(&ctx, &case.replay, extra);
    ctx.checked("replay", a, &case.replay, &mut failures);

    let notes = std::mem::take(&mut ctx.notes);
    (failures, notes)
}

fn cases(dialect: &str) -> Vec<PathBuf> {
    let root = Path::new(ROOT).join("tests/hostile");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("case.yaml").is_file())
        .filter(|p| {
            let c: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(p.join("case.yaml")).unwrap()).unwrap();
            c["dialect"].as_str() == Some(dialect)
        })
        .collect();
    out.sort();
    if let Ok(only) = std::env::var("HOSTILE_CASE") {
        out.retain(|p| p.file_name().unwrap().to_string_lossy().contains(&only));
    }
    out
}

fn run_all(dialect: &str) {
    let listener = Listener::start();
    let mut failures = Vec::new();
    for dir in cases(dialect) {
        let (f, notes) = run_case(&dir, &listener);
        for n in notes {
            eprintln!("note: {n}");
        }
        failures.extend(f);
    }
    assert!(failures.is_empty(), "{} hostile {dialect} step(s) failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn hostile_loki_agents_run_nothing_they_may_not() {
    run_all("loki");
}

#[test]
fn hostile_sherma_agents_run_nothing_they_may_not() {
    run_all("sherma");
}

/// The corpus is what the issue asks for: at least 25 cases, both dialects well represented,
/// every case with an escape and a legitimate or refused outcome in every mode.
#[test]
fn the_corpus_has_enough_cases_of_both_dialects() {
    let (l, s) = (cases("loki").len(), cases("sherma").len());
    if std::env::var("HOSTILE_CASE").is_err() {
        assert!(l + s >= 25 && l >= 10 && s >= 10, "loki {l}, sherma {s}");
    }
    for dir in cases("loki").into_iter().chain(cases("sherma")) {
        let c: Case = serde_yaml::from_str(&std::fs::read_to_string(dir.join("case.yaml")).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(!c.escape.trim().is_empty(), "{}", dir.display());
        assert!(["loki", "sherma"].contains(&c.dialect.as_str()), "{}: dialect {}", dir.display(), c.dialect);
        assert!(dir.join(&c.agent).exists(), "{}: no agent {}", dir.display(), c.agent);
        for s in &c.setup {
            let n = [s.fifo.is_some(), s.symlink.is_some(), s.big.is_some()].iter().filter(|x| **x).count();
            assert_eq!(n, 1, "{}: each setup item plants one thing", dir.display());
        }
        assert_eq!(c.restricted.outcome, "refused", "{}: restricted mode refuses every case", dir.display());
    }
}
