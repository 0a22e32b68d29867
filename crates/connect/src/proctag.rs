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

use std::sync::atomic::{AtomicU64, Ordering};

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
}
