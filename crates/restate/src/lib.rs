//! Switchyard runs on Restate, a distributed durable-execution engine.
//!
//! - [`worker`]: `switchyard worker`, a Restate service deployment whose workflow executes one
//!   run per workflow (each step one journaled action, questions on durable promises, the
//!   run's record, checkpoints and events in the workflow's state);
//! - [`engine`]: [`engine::Restate`], the server's `Engine` when runs execute there
//!   (`switchyard serve --engine restate`).
//!
//! docs/restate.md says how the pieces fit, what was verified and the operational details.

pub mod engine;
pub mod worker;

use std::net::SocketAddr;
use std::path::PathBuf;

/// How a worker is started.
pub struct WorkerConfig {
    /// The agents it runs (deployed with the worker, like code).
    pub agents: PathBuf,
    /// Where the SDK's endpoint listens (shared with other workers on this machine).
    pub listen: SocketAddr,
    /// Restate's admin API, where the worker registers itself (`None`: do not register).
    pub admin: Option<String>,
    /// The URL Restate reaches this worker at (default: `http://<listen>`).
    pub advertise: Option<String>,
}

/// Restate's admin URL for an ingress URL: the same host, port 9070.
pub fn admin_of(ingress: &str) -> String {
    match reqwest::Url::parse(ingress) {
        Ok(mut u) => {
            let _ = u.set_port(Some(9070));
            u.set_path("");
            u.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => "http://127.0.0.1:9070".into(),
    }
}

/// Run a worker until SIGINT / SIGTERM. `on_ready` gets the address it listens on once it is
/// registered.
pub fn run_worker(c: WorkerConfig, on_ready: impl FnOnce(SocketAddr)) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("switchyard-worker")
        .max_blocking_threads(256)
        .build()
        .map_err(|e| format!("cannot start the worker's runtime: {e}"))?;
    let agents = std::path::absolute(&c.agents).map_err(|e| format!("{}: {e}", c.agents.display()))?;
    if !agents.is_dir() {
        return Err(format!("the agents folder {} is not a folder", agents.display()));
    }
    rt.block_on(async move {
        let listener = worker::shared_listener(c.listen).map_err(|e| format!("cannot listen on {}: {e}", c.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let serving = tokio::spawn(worker::serve(agents, listener));
        if let Some(admin) = &c.admin {
            let uri = c.advertise.clone().unwrap_or_else(|| format!("http://{addr}"));
            worker::register(admin, &uri).await?;
        }
        on_ready(addr);
        tokio::select! {
            r = serving => r.map_err(|e| format!("the worker stopped: {e}")),
            _ = shutdown() => Ok(()),
        }
    })
}

async fn shutdown() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
