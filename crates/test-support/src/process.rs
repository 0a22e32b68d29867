//! Processes the tests start and talk to over HTTP (`switchyard serve`, workers, a Restate
//! server): [`Proc`] is killed with SIGKILL when dropped and keeps its stderr in a file;
//! [`spawn_until`] starts one and waits for the stdout line that says where it listens;
//! [`call`] is one JSON request to it.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A child process, killed (SIGKILL) and reaped when dropped; its stderr is in `log`.
pub struct Proc {
    pub child: Child,
    pub log: PathBuf,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// What it wrote on stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Start `cmd` (stderr into `log`, no OS keyring) and wait up to `within` for a stdout line
/// starting with `prefix`: the process and the rest of that line. Later stdout is drained.
/// When no such line comes, the process is killed and the error holds its stderr.
pub fn spawn_until(mut cmd: Command, log: PathBuf, prefix: &'static str, within: Duration) -> Result<(Proc, String), String> {
    let stderr = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = cmd
        .env("SWITCHYARD_KEYRING", "off")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix(prefix) {
                let _ = tx.send(rest.to_string());
            }
        }
    });
    let mut p = Proc { child, log };
    match rx.recv_timeout(within) {
        Ok(rest) => Ok((p, rest)),
        Err(_) => {
            let _ = p.child.kill();
            let status = p.child.wait().ok();
            Err(format!("no `{prefix}` line from {:?} ({status:?}):\n{}", cmd.get_program(), p.log()))
        }
    }
}

/// One HTTP request with an optional JSON body and bearer token: the status and the JSON body
/// (or the text as a JSON string); `Err` when no answer came.
pub fn call(method: &str, url: &str, body: Option<Value>, token: Option<&str>, timeout: Duration) -> Result<(u16, Value), String> {
    let (method, url, token) = (method.to_string(), url.to_string(), token.map(str::to_string));
    connect::rt::block_on(async move {
        let c = reqwest::Client::new();
        let mut r = c.request(method.parse().map_err(|e| format!("{method}: {e}"))?, &url).timeout(timeout);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.map_err(|e| format!("{url}: {e}"))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::String(text))))
    })
}
