//! Finding the processes a subprocess left behind, even those that left its process group.
//!
//! Scripts, Python tools and MCP servers run as the leaders of their own process group, and a
//! timeout, a stop or the end of a run kills the group. A process that calls `setsid` (a
//! daemonising double fork, `setsid cmd &`, `nohup setsid …`) starts a session and a group of
//! its own and would survive that kill as an orphan.
//!
//! So every such subprocess also gets an environment variable holding a tag unique to it, which
//! its descendants inherit. Killing sweeps `/proc` for processes whose initial environment holds
//! that tag, as Jenkins' process-tree killer does with `BUILD_ID`. A process that clears its
//! environment *and* leaves the group still escapes; nothing short of a cgroup (which needs
//! privileges a desktop app does not have) catches that.

//!
//! Every such subprocess also gets **resource limits** ([`Limits`], applied with [`limit`] /
//! [`limit_tokio`]): CPU seconds, memory (the data segment), and how many more tasks the user may
//! start, so a fork bomb or a runaway allocation in a script cannot take the machine down. The
//! defaults are generous; `SWITCHYARD_CHILD_CPU_SECS`, `SWITCHYARD_CHILD_MEMORY_MB` and
//! `SWITCHYARD_CHILD_TASKS` raise or lower them (0: no limit).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// Resource limits of the processes a run starts (0 = no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU seconds (`RLIMIT_CPU`): the process gets SIGXCPU, then SIGKILL 5 s later.
    pub cpu_secs: u64,
    /// Memory in MiB (`RLIMIT_DATA`: heap and private writable mappings).
    pub memory_mb: u64,
    /// How many tasks (processes and threads) the user may run beyond those running on the
    /// whole machine when the child starts (`RLIMIT_NPROC`, which counts per user).
    pub extra_tasks: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { cpu_secs: 3600, memory_mb: 8192, extra_tasks: 1024 }
    }
}

impl Limits {
    /// The defaults, changed by `SWITCHYARD_CHILD_CPU_SECS`, `SWITCHYARD_CHILD_MEMORY_MB`,
    /// `SWITCHYARD_CHILD_TASKS`.
    pub fn from_env() -> Limits {
        let get = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(d);
        let d = Limits::default();
        Limits {
            cpu_secs: get("SWITCHYARD_CHILD_CPU_SECS", d.cpu_secs),
            memory_mb: get("SWITCHYARD_CHILD_MEMORY_MB", d.memory_mb),
            extra_tasks: get("SWITCHYARD_CHILD_TASKS", d.extra_tasks),
        }
    }
}

static LIMITS: RwLock<Option<Limits>> = RwLock::new(None);

/// The limits children get now.
pub fn limits() -> Limits {
    if let Some(l) = *LIMITS.read().unwrap_or_else(|p| p.into_inner()) {
        return l;
    }
    let l = Limits::from_env();
    *LIMITS.write().unwrap_or_else(|p| p.into_inner()) = Some(l);
    l
}

/// Change the limits for children started from now on (the app's settings, tests).
pub fn set_limits(l: Limits) {
    *LIMITS.write().unwrap_or_else(|p| p.into_inner()) = Some(l);
}

/// Every task running on the machine now (`/proc/loadavg`'s total), an upper bound of the
/// user's own.
fn tasks_now() -> u64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().nth(3)?.split('/').nth(1)?.parse().ok())
        .unwrap_or(4096)
}

/// The `setrlimit` calls for `l`, computed before the fork (nothing but system calls after it).
fn rlimits(l: Limits) -> Vec<(rustix::process::Resource, rustix::process::Rlimit)> {
    use rustix::process::{Resource, Rlimit};
    let mut out = Vec::new();
    if l.cpu_secs > 0 {
        out.push((Resource::Cpu, Rlimit { current: Some(l.cpu_secs), maximum: Some(l.cpu_secs + 5) }));
    }
    if l.memory_mb > 0 {
        let bytes = l.memory_mb.saturating_mul(1024 * 1024);
        out.push((Resource::Data, Rlimit { current: Some(bytes), maximum: Some(bytes) }));
    }
    if l.extra_tasks > 0 {
        let n = tasks_now().saturating_add(l.extra_tasks);
        out.push((Resource::Nproc, Rlimit { current: Some(n), maximum: Some(n) }));
    }
    out
}

/// Apply the current [`limits`] to a command (std) before it is spawned. A limit the system
/// refuses to lower is left as it is.
pub fn limit(cmd: &mut std::process::Command) {
    limit_with(cmd, limits());
}

/// Apply `l` to a command (std) before it is spawned.
pub fn limit_with(cmd: &mut std::process::Command, l: Limits) {
    use std::os::unix::process::CommandExt;
    if let Some(f) = pre_exec(l) {
        // SAFETY: `pre_exec` runs only `setrlimit` system calls (async-signal-safe).
        unsafe {
            cmd.pre_exec(f);
        }
    }
}

/// [`limit`] for a tokio command.
pub fn limit_tokio(cmd: &mut tokio::process::Command) {
    if let Some(f) = pre_exec(limits()) {
        // SAFETY: as in `limit_with`.
        unsafe {
            cmd.pre_exec(f);
        }
    }
}

/// What runs between fork and exec: the `setrlimit` calls of `l`, computed before the fork (the
/// closure allocates nothing), or `None` when there is nothing to limit.
fn pre_exec(l: Limits) -> Option<impl FnMut() -> std::io::Result<()> + Send + Sync + 'static> {
    let set = rlimits(l);
    (!set.is_empty()).then(move || {
        move || {
            for (r, l) in &set {
                let _ = rustix::process::setrlimit(*r, l.clone());
            }
            Ok(())
        }
    })
}

/// The variable that carries the tag.
pub const VAR: &str = "SWITCHYARD_PROC_TAG";

/// A tag for one subprocess and everything it starts.
#[derive(Debug, Clone)]
pub struct ProcTag {
    value: String,
}

impl Default for ProcTag {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcTag {
    pub fn new() -> ProcTag {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        ProcTag {
            value: format!("{}-{}-{nanos:x}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)),
        }
    }

    pub fn value(&self) -> &str {
        &self.value
    }

    /// Tag a command (std or tokio) before it is spawned.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        cmd.env(VAR, &self.value);
    }

    pub fn apply_tokio(&self, cmd: &mut tokio::process::Command) {
        cmd.env(VAR, &self.value);
    }

    /// The processes (other than this one) whose environment holds the tag.
    pub fn find(&self) -> Vec<i32> {
        let needle = format!("{VAR}={}", self.value);
        let me = std::process::id() as i32;
        let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
        let mut out = Vec::new();
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            if pid == me {
                continue;
            }
            // Unreadable (another user's process, or gone meanwhile) is not ours.
            let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
            if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
                out.push(pid);
            }
        }
        out
    }

    /// Kill every process holding the tag with SIGKILL. Sweeps again while new ones turn up (one
    /// could fork between a scan and its kill), at most a few times. Returns how many processes
    /// were signalled.
    pub fn kill_all(&self) -> usize {
        let mut signalled = std::collections::HashSet::new();
        for _ in 0..5 {
            let mut new = 0;
            for pid in self.find() {
                // A process killed in an earlier sweep may not have died yet.
                if signalled.contains(&pid) {
                    continue;
                }
                let Some(p) = rustix::process::Pid::from_raw(pid) else { continue };
                // ESRCH (gone meanwhile) is fine. A zombie's environment reads empty, so dead
                // processes nobody reaped are not found.
                if rustix::process::kill_process(p, rustix::process::Signal::KILL).is_ok() {
                    signalled.insert(pid);
                    new += 1;
                }
            }
            if new == 0 {
                break;
            }
        }
        signalled.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // A killed process nobody reaped yet (our pid 1 may not reap) is gone too.
            Ok(s) => s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    #[test]
    fn a_process_that_left_the_group_and_its_parent_is_found_and_killed() {
        let dir = std::env::temp_dir().join(format!("switchyard-proctag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("daemon.pid");
        let tag = ProcTag::new();
        // A double fork into a new session: the daemon's parent exits at once, so it is
        // reparented away from us, in no group we know. It writes its own pid (`setsid` may
        // fork, so `$!` can be a process that is gone).
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"(setsid sh -c 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 60' _ "$0" >/dev/null 2>&1 </dev/null &)"#)
            .arg(&pidfile)
            .stdin(Stdio::null());
        tag.apply(&mut cmd);
        assert!(cmd.status().unwrap().success());
        let until = Instant::now() + Duration::from_secs(5);
        while !pidfile.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        // The environment is readable once the exec happened.
        let until = Instant::now() + Duration::from_secs(5);
        while !tag.find().contains(&pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(tag.find(), vec![pid], "the daemon carries the tag");
        assert!(ProcTag::new().find().is_empty(), "another tag finds nothing");
        assert_eq!(tag.kill_all(), 1);
        let until = Instant::now() + Duration::from_secs(5);
        while !gone(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(pid), "the daemon {pid} survived");
        assert_eq!(tag.kill_all(), 0, "nothing left");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn children_get_the_limits_and_the_kernel_enforces_them() {
        let l = Limits { cpu_secs: 1, memory_mb: 128, extra_tasks: 7 };
        let mut cmd = Command::new("bash");
        cmd.args(["-c", "ulimit -t; ulimit -d; ulimit -u"]);
        limit_with(&mut cmd, l);
        let out = cmd.output().unwrap();
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
        assert_eq!(lines[0], "1", "{lines:?}");
        assert_eq!(lines[1], (128 * 1024).to_string(), "ulimit -d is in KiB: {lines:?}");
        let tasks: u64 = lines[2].parse().unwrap();
        assert!(tasks >= 7 && tasks <= tasks_now() + 7 + 64, "{lines:?}");

        // A busy loop is stopped by its CPU limit (SIGXCPU), long before the test's own limit.
        let t0 = Instant::now();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "while :; do :; done"]);
        limit_with(&mut cmd, l);
        let status = cmd.status().unwrap();
        assert!(!status.success(), "{status:?}");
        assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());

        // An allocation over the memory limit fails inside the child.
        if Command::new("python3").arg("--version").output().is_ok() {
            let mut cmd = Command::new("python3");
            cmd.args(["-c", "b = bytearray(512 * 1024 * 1024); print(len(b))"]);
            limit_with(&mut cmd, l);
            let out = cmd.output().unwrap();
            assert!(!out.status.success(), "512 MB under a 128 MB limit: {out:?}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("MemoryError"), "{out:?}");
        }
    }
}
