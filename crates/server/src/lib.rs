//! `switchyard serve`: the agents of a folder as assistants behind the LangGraph Platform API
//! ([`api`]), runs executed by an [`engine::Engine`] (the embedded one: durable in the SQLite
//! run store), threads, history, answers and tokens in the server's tables ([`db`]).
//!
//! Trust: the agents under `--agents` are the operator's choice, so serving them trusts them;
//! the API runs only those (it has no way to send an agent file). Without a token the server
//! listens on loopback addresses only.

pub mod api;
pub mod assistants;
pub mod client;
pub mod db;
pub mod engine;
pub mod inbox;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The OpenAPI document of [`api`] (served at `/openapi.json`).
pub const OPENAPI: &str = include_str!("../openapi.json");

/// How a server is started.
pub struct Config {
    /// The folder whose agents are served.
    pub agents: PathBuf,
    pub listen: SocketAddr,
    /// The run store (also holding the server's tables).
    pub db: PathBuf,
    pub llm: engine::LlmMode,
}

/// A server that is listening.
pub struct Ready {
    pub addr: SocketAddr,
    pub assistants: Vec<assistants::Assistant>,
    /// Unfinished runs it went on with.
    pub recovered: usize,
    /// Whether requests need a token.
    pub tokens: bool,
}

/// The default store of `switchyard serve`: `server.sqlite` beside the default run store.
pub fn default_db_path() -> PathBuf {
    runtime::store::default_db_path().with_file_name("server.sqlite")
}

/// Serve until SIGINT or SIGTERM. `on_ready` is called once the server listens. Runs in flight
/// when the server stops are not stopped: they go on from their last step when a server starts
/// again on the same store.
pub fn serve(config: Config, on_ready: impl FnOnce(&Ready)) -> Result<(), String> {
    serve_with(config, None, on_ready)
}

/// Builds an engine other than the embedded one (e.g. `switchyard-restate`'s): given the
/// config, the assistants and the server's runtime. Such an engine has nothing to recover: its
/// runs go on where they execute.
pub type MakeEngine = Box<
    dyn FnOnce(&Config, Arc<assistants::Assistants>, tokio::runtime::Handle) -> Result<Arc<dyn engine::Engine>, String>
        + Send,
>;

/// [`serve`] with the engine `make` builds (`None`: the embedded engine).
pub fn serve_with(config: Config, make: Option<MakeEngine>, on_ready: impl FnOnce(&Ready)) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("switchyard-serve")
        .max_blocking_threads(256)
        .build()
        .map_err(|e| format!("cannot start the server's runtime: {e}"))?;
    let result = rt.block_on(async move {
        let assistants = Arc::new(assistants::Assistants::discover(&config.agents)?);
        let (engine, embedded): (Arc<dyn engine::Engine>, _) = match make {
            None => {
                let e = engine::Embedded::open(config.db.clone(), config.llm, tokio::runtime::Handle::current())?;
                (e.clone(), Some(e))
            }
            Some(make) => (make(&config, assistants.clone(), tokio::runtime::Handle::current())?, None),
        };
        let tokens = engine.db().has_live_tokens()?;
        if !tokens && !config.listen.ip().is_loopback() {
            return Err(format!(
                "refusing to listen on {} without a token: anyone who can reach it could run the agents. \
                 Create one with `switchyard token create NAME --db {}`, or listen on 127.0.0.1",
                config.listen,
                config.db.display()
            ));
        }
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let recovered = match embedded {
            Some(e2) => tokio::task::spawn_blocking(move || e2.recover()).await.map_err(|e| e.to_string())??,
            None => 0,
        };
        on_ready(&Ready { addr, assistants: assistants.list.clone(), recovered, tokens });
        let state = api::AppState { engine, assistants };
        let app = api::router(state);
        tokio::select! {
            r = axum::serve(listener, app) => r.map_err(|e| format!("the server stopped: {e}")),
            _ = shutdown() => Ok(()),
        }
    });
    // Runs still stepping are left where they are (durable): do not wait for them.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    result
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
