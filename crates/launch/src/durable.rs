//! Durable runs: the run store itself is [`runtime::store`] (SQL only, no dialect, re-exported
//! here); starting a durable session and resuming one need the dialects' machines and the
//! provider decision, so they live in this crate.

pub use runtime::store::*;

use crate::{LlmChoice, RunRequest};
use model::doc::{Dialect, Document};
use runtime::provider::BoxProvider;
use runtime::session::{ResumePoint, RunOptions, RunSession, Status};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn now_ms() -> i64 {
    runtime::events::now_ms() as i64
}

/// How a durable run is started or resumed.
pub struct Durable {
    /// The database file.
    pub db: PathBuf,
    /// Resume even though the agent file changed since the run started.
    pub force: bool,
}

/// Start a durable run of `doc`: a new row in the store at `db`, then a session that writes
/// every step there. `provider` is built from `llm` unless given (the desktop builds its own,
/// e.g. live with its keyring's keys); `options.run_id` names the run (default: a fresh id).
pub fn start(
    db: &Path,
    doc: Arc<Document>,
    req: &RunRequest,
    llm: LlmChoice,
    provider: Option<BoxProvider>,
    mut options: RunOptions,
) -> Result<RunSession, String> {
    let store = RunStore::open(db)?;
    let (machine, rec) = prepare(doc, req, llm, provider, &mut options)?;
    store.insert(&rec)?;
    options.persist = Some(Box::new(with_events(StorePersist::new(store, rec.id.clone()), &mut options)));
    Ok(RunSession::new(machine, rec.input, options))
}

/// What a new durable run needs wherever it is kept: its machine, and the record a store holds
/// for it (status `ready`, step 0; paths absolute); `options` get its id and provider.
fn prepare(
    doc: Arc<Document>,
    req: &RunRequest,
    llm: LlmChoice,
    provider: Option<BoxProvider>,
    options: &mut RunOptions,
) -> Result<(Box<dyn runtime::session::Machine>, RunRecord), String> {
    let dialect = match doc.dialect() {
        Some(Dialect::Sherma) => "sherma",
        Some(Dialect::Loki) => "loki",
        Some(Dialect::Lllm) => "lllm",
        None => {
            return Err(format!(
                "{} is neither a sherma agent nor a Loki graph; `switchyard validate` says why",
                doc.path.display()
            ));
        }
    };
    let provider = match provider {
        Some(p) => p,
        None => crate::provider::online_if(crate::provider_from_choice(&doc, &llm)?, req.allow_network),
    };
    let machine = crate::machine_with(doc.clone(), req, crate::sherma_options(&*provider), Some(&*provider))?;
    if machine.snapshot().is_null() {
        return Err("this run cannot be made durable".into());
    }
    let id = options.run_id.clone().unwrap_or_else(runtime::session::new_run_id);
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut saved = req.clone();
    saved.record = None;
    saved.python_path = saved.python_path.iter().map(|p| abs(p)).collect();
    let now = now_ms();
    let rec = RunRecord {
        id: id.clone(),
        file: abs(&doc.path).display().to_string(),
        agent: machine.agent().to_string(),
        dialect: dialect.into(),
        status: "ready".into(),
        created_ms: now,
        updated_ms: now,
        step: 0,
        pending: None,
        output: Value::Null,
        error: None,
        input: crate::input_of(req),
        llm,
        request: saved,
        doc_hash: content_hash(&doc),
    };
    options.run_id = Some(id);
    options.provider = provider;
    Ok((machine, rec))
}

/// The store also keeps the run's events when the options carry an event buffer.
fn with_events(p: StorePersist, options: &mut RunOptions) -> StorePersist {
    match options.event_log.take() {
        Some(buffer) => p.with_events(buffer),
        None => p,
    }
}

/// Rebuild run `id` from the store at `d.db` (see the module docs). `provider` is built from
/// the saved [`LlmChoice`] unless given (`make_provider` gets the document and the choice).
/// `options.answers` are queued after any answers the run had left.
pub fn resume(
    d: &Durable,
    id: &str,
    make_provider: Option<&dyn Fn(&Document, &LlmChoice) -> Result<BoxProvider, String>>,
    mut options: RunOptions,
) -> Result<(RunSession, RunRecord), String> {
    if !d.db.exists() {
        return Err(format!("no run store at {} (no durable run was started with it)", d.db.display()));
    }
    let store = RunStore::open(&d.db)?;
    let Some(rec) = store.get(id)? else {
        let known: Vec<String> = store.list()?.into_iter().take(5).map(|r| r.id).collect();
        let hint =
            if known.is_empty() { "it has no runs".to_string() } else { format!("recent runs: {}", known.join(", ")) };
        return Err(format!(
            "no run `{id}` in the run store {} ({hint}; `switchyard runs` lists them)",
            d.db.display()
        ));
    };
    if !rec.resumable() {
        return Err(format!(
            "run {id} has ended ({}); only ready, paused or interrupted runs can be resumed",
            rec.status
        ));
    }
    let Some((_, snap)) = store.latest_checkpoint(id)? else {
        return Err(format!("run {id} has no checkpoint in {} yet", d.db.display()));
    };
    let doc = model::doc::load_path(Path::new(&rec.file));
    if doc.io_error {
        let why = doc.diagnostics.first().map(|x| x.message.clone()).unwrap_or_default();
        return Err(format!("run {id}: cannot read its agent file {}: {why}", rec.file));
    }
    let hash = content_hash(&doc);
    if hash != rec.doc_hash && !d.force {
        return Err(format!(
            "run {id}: {} changed since the run started; resuming could put the saved state into a different graph. \
             Resume anyway with --force (the app asks), or start a new run",
            rec.file
        ));
    }
    let doc = Arc::new(doc);
    let status = match (rec.status.as_str(), &rec.pending) {
        ("interrupted", Some(p)) => Status::Interrupted { pending: p.clone() },
        ("interrupted", None) => return Err(format!("run {id} is interrupted but its question was not saved")),
        ("paused", _) => Status::Paused { reason: runtime::events::PauseReason::Requested },
        _ => Status::Ready,
    };
    // Checked before the provider is built (an unreadable checkpoint says so first).
    ResumePoint::parse(&snap, status.clone()).map_err(|e| format!("run {id}: {e}"))?;
    let provider = match make_provider {
        Some(f) => f(&doc, &rec.llm)?,
        None => crate::provider_from_choice(&doc, &rec.llm)?,
    };
    options.run_id = Some(id.to_string());
    options.persist = Some(Box::new(with_events(StorePersist::new(store, id), &mut options)));
    let input = rec.input.clone();
    let session = rebuild(doc, &rec.request, input, &snap, status, provider, options).map_err(|e| format!("run {id}: {e}"))?;
    Ok((session, rec))
}

/// Rebuild a run from a checkpoint held in memory (a [`RunSession::durable_snapshot`]) instead
/// of the store: the machine for `doc` and `req` restored from `snapshot`, `provider` moved to
/// its saved position, the session at the saved step with `status`. [`resume`] does this with
/// the store's latest checkpoint; an engine that keeps checkpoints elsewhere (Restate's journal)
/// calls it directly. `options` are taken as they are (run id, listener, persist).
pub fn rebuild(
    doc: Arc<Document>,
    req: &RunRequest,
    input: Value,
    snapshot: &Value,
    status: Status,
    provider: BoxProvider,
    mut options: RunOptions,
) -> Result<RunSession, String> {
    let (at, machine_snap, position) = ResumePoint::parse(snapshot, status)?;
    // The network stays as the run started: allowed for this run, or not.
    let provider = crate::provider::online_if(provider, req.allow_network);
    let mut machine = crate::machine_with(doc, req, crate::sherma_options(&*provider), Some(&*provider))?;
    machine.restore(&machine_snap)?;
    provider.restore_position(&position)?;
    options.provider = provider;
    Ok(RunSession::resume(machine, input, at, options))
}

/// A new run of `doc` that is durable somewhere other than the run store: the session (no
/// persist unless `options` has one) and the record a store would hold for it (status
/// `ready`, step 0). `provider` is built from `llm` unless given.
pub fn start_elsewhere(
    doc: Arc<Document>,
    req: &RunRequest,
    llm: LlmChoice,
    provider: Option<BoxProvider>,
    mut options: RunOptions,
) -> Result<(RunSession, RunRecord), String> {
    let (machine, rec) = prepare(doc, req, llm, provider, &mut options)?;
    Ok((RunSession::new(machine, rec.input.clone(), options), rec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime::events::RunStatus;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sy-durable-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_failed_write_ends_the_run_with_the_stores_message() {
        let dir = tmp("failwrite");
        let db = dir.join("runs.sqlite");
        let yaml = "manifest_version: 1\nagents:\n  a:\n    state:\n      fields:\n        - name: n\n          type: int\n    graph:\n      entry_point: bump\n      nodes:\n        - name: bump\n          type: set_state\n          args:\n            values:\n              n: 'state.n + 1'\n      edges:\n        - source: bump\n          branches:\n            - condition: 'state.n >= 5'\n              target: __end__\n          default: bump\n";
        let doc = Arc::new(model::doc::load_str(&dir.join("a.yaml"), yaml));
        let opts = RunOptions::new(Box::new(runtime::provider::NoProvider));
        let mut s = start(
            &db,
            doc,
            &RunRequest::default(),
            LlmChoice::None,
            Some(Box::new(runtime::provider::NoProvider)),
            opts,
        )
        .unwrap();
        assert!(s.is_durable());
        s.step();
        let store = RunStore::open(&db).unwrap();
        let rec = store.get(s.id()).unwrap().unwrap();
        assert_eq!((rec.status.as_str(), rec.step), ("paused", 1));
        assert_eq!(store.latest_checkpoint(s.id()).unwrap().unwrap().1["machine"]["state"]["n"], 1);
        // Another process deletes the run while it goes on: the next write fails, the run ends.
        let mut other = RunStore::open(&db).unwrap();
        other.delete(&[s.id().to_string()]).unwrap();
        let st = s.run().clone();
        assert!(matches!(st, Status::Finished { status: RunStatus::Failed, .. }), "{st:?}");
        let (_, msg) = s.failure().unwrap();
        assert!(msg.contains("no longer there") && msg.contains(&db.display().to_string()), "{msg}");
    }

}
