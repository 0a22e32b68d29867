//! Durable runs: a SQLite run store (`rusqlite`, bundled SQLite, WAL).
//!
//! A durable run writes one transaction after every step and at every status change (pause,
//! interrupt, answer, edit, rewind, end): the run's row in `runs` (status, step, the pending
//! interrupt, the output, the failure) and the checkpoint of that step in `checkpoints` (the
//! session's snapshot: machine, provider position, queued answers; see
//! [`crate::session::SavePoint`]). A process killed at any point leaves the last
//! committed step; [`resume`] rebuilds the run from it in a new process: the document is
//! loaded again from its path (a changed file is refused unless forced), the machine restored,
//! the provider moved to its saved position, the status (interrupted with its question,
//! paused, ready) restored.
//!
//! A run may also keep its event log here (`events`: one JSON line per event, numbered from 1
//! per run): [`StorePersist::with_events`] writes the events emitted since the last save in the
//! same transaction as the step, so the log and the checkpoint never disagree after a crash;
//! [`RunStore::events_after`] reads them back (the server's resumable event streams).
//!
//! Two processes may share one database: SQLite's locking serialises the writes and every
//! connection waits up to [`BUSY_TIMEOUT`] for a lock. Every error names the database file.

use model::doc::Document;
use crate::events::RunStatus;
use crate::request::{LlmChoice, RunRequest};
use crate::session::{Pending, Persist, SavePoint, Status};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use ts_rs::TS;

/// How long a statement waits for another process's lock before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema version (`PRAGMA user_version`); a newer one is refused.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id          TEXT PRIMARY KEY,
    file        TEXT NOT NULL,
    agent       TEXT NOT NULL,
    dialect     TEXT NOT NULL,
    request     TEXT NOT NULL,
    input       TEXT NOT NULL,
    llm         TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL,
    step        INTEGER NOT NULL DEFAULT 0,
    pending     TEXT,
    output      TEXT,
    error       TEXT,
    doc_hash    TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS runs_updated ON runs(updated_ms);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id      TEXT NOT NULL,
    step        INTEGER NOT NULL,
    snapshot    TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    PRIMARY KEY (run_id, step)
) STRICT;
CREATE TABLE IF NOT EXISTS events (
    run_id      TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    line        TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;
";

pub use crate::session::EventBuffer;

/// The default database: `$SWITCHYARD_RUNS_DB`, else `$XDG_DATA_HOME/switchyard/runs.sqlite`,
/// else `~/.local/share/switchyard/runs.sqlite`.
pub fn default_db_path() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = var("SWITCHYARD_RUNS_DB") {
        return p;
    }
    let data = var("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| var("HOME").unwrap_or_else(|| PathBuf::from(".")).join(".local").join("share"));
    data.join("switchyard").join("runs.sqlite")
}

/// The database a sherma file selects with `checkpointer: {type: sqlite, path: ...}` (relative
/// to the file; the default database when `path` is absent); `None` for `memory` or none.
pub fn yaml_checkpointer(doc: &Document) -> Option<PathBuf> {
    let sd = doc.sherma()?;
    let cp = sd.checkpointer.as_ref()?;
    if cp.get_str("type") != Some("sqlite") {
        return None;
    }
    Some(match cp.get_str("path").map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_absolute() { p } else { doc.base_dir.join(p) }
        }
        None => default_db_path(),
    })
}

/// A hash of the document's text and the files it read (FNV-1a, 64 bits, hex): a resume
/// compares it to tell whether the agent changed since the run started.
pub fn content_hash(doc: &Document) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100000001b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x100000001b3);
    };
    if let Some(f) = &doc.file {
        feed(f.text().as_bytes());
    }
    for f in &doc.extra_files {
        feed(f.path().to_string_lossy().as_bytes());
        feed(f.text().as_bytes());
    }
    format!("{h:016x}")
}

/// One row of `runs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct RunRecord {
    pub id: String,
    /// The agent file (absolute).
    pub file: String,
    /// The agent's name (sherma: the agent; Loki: the graph's directory).
    pub agent: String,
    /// `sherma` or `loki`.
    pub dialect: String,
    /// `ready`, `paused`, `interrupted` (waiting for an answer), `completed`, `failed`,
    /// `stopped`.
    pub status: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// Steps completed.
    pub step: u64,
    /// The question an interrupted run waits for.
    pub pending: Option<Pending>,
    pub output: Value,
    /// Why a failed run failed.
    pub error: Option<String>,
    /// The run's input as `run_started` showed it.
    pub input: Value,
    /// Where its LLM answers come from.
    pub llm: LlmChoice,
    /// The agent, input and state it was started with.
    pub request: RunRequest,
    pub doc_hash: String,
}

impl RunRecord {
    /// Whether [`resume`] can take it up (it has not ended).
    pub fn resumable(&self) -> bool {
        matches!(self.status.as_str(), "ready" | "paused" | "interrupted")
    }
}

/// The status word stored for a session status.
pub fn status_word(s: &Status) -> &'static str {
    match s {
        Status::Ready => "ready",
        Status::Paused { .. } => "paused",
        Status::Interrupted { .. } => "interrupted",
        Status::Finished { status, .. } => match status {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Stopped => "stopped",
            // A run given up at a question (the CLI without a terminal) is still resumable
            // from its checkpoint only if it was kept interrupted; this one ended.
            RunStatus::Interrupted => "abandoned",
        },
    }
}

/// A SQLite run store (see the module docs).
pub struct RunStore {
    path: PathBuf,
    /// Always `Some` until the store is dropped (then it goes back to [`IDLE`]).
    conn: Option<Connection>,
    /// The database file's identity (device, inode) when it was opened.
    file_id: Option<(u64, u64)>,
}

/// Connections of stores dropped in this process, by path and file identity: opening the same
/// store again (a server rebuilds a run from the store on every answer) takes one instead of
/// opening the file, reading its schema and setting its pragmas again, and keeps its prepared
/// statements. A file replaced since (another inode) never gets an old connection.
static IDLE: std::sync::OnceLock<std::sync::Mutex<Vec<(PathBuf, (u64, u64), Connection)>>> = std::sync::OnceLock::new();

/// Idle connections kept per process.
const IDLE_MAX: usize = 32;

fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Drop for RunStore {
    fn drop(&mut self) {
        let (Some(conn), Some(id)) = (self.conn.take(), self.file_id) else { return };
        if !conn.is_autocommit() {
            return;
        }
        let mut idle = IDLE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_MAX {
            idle.push((self.path.clone(), id, conn));
        }
    }
}

fn now_ms() -> i64 {
    crate::events::now_ms() as i64
}

impl RunStore {
    /// Open (creating it and its folder when missing) the database at `path`.
    pub fn open(path: &Path) -> Result<RunStore, String> {
        if let Some(id) = file_id(path) {
            let mut idle = IDLE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = idle.iter().position(|(p, fid, _)| p == path && *fid == id) {
                let (_, _, conn) = idle.swap_remove(i);
                return Ok(RunStore { path: path.to_path_buf(), conn: Some(conn), file_id: Some(id) });
            }
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create the folder of the run store {}: {e}", path.display()))?;
        }
        // A new store is readable by the user only (it holds whole run states); SQLite gives its
        // WAL and shared-memory files the database file's mode.
        {
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| format!("cannot open the run store {}: {}", path.display(), explain(&e)))?;
        let store = RunStore { path: path.to_path_buf(), conn: Some(conn), file_id: None };
        store.c().busy_timeout(BUSY_TIMEOUT).map_err(|e| store.err("setting its lock timeout", e))?;
        let mode: String = store
            .c()
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(|e| store.err("switching it to WAL", e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!("run store {}: journal mode {mode}, not WAL", path.display());
        }
        store.c().pragma_update(None, "synchronous", "NORMAL").map_err(|e| store.err("setting synchronous", e))?;
        // Pages read through a memory map instead of a read call each (a server reads runs back
        // on every answer). Best effort: a system without it reads as before.
        let _ = store.c().pragma_update(None, "mmap_size", 256i64 * 1024 * 1024);
        let version: i64 =
            store.c().query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| store.err("reading it", e))?;
        if version > SCHEMA_VERSION {
            return Err(format!(
                "the run store {} was made by a newer Switchyard (schema {version}, this one knows {SCHEMA_VERSION})",
                path.display()
            ));
        }
        if version < SCHEMA_VERSION {
            store
                .c()
                .execute_batch(&format!("BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"))
                .map_err(|e| {
                    let _ = store.c().execute_batch("ROLLBACK");
                    store.err("creating its tables", e)
                })?;
        }
        let mut store = store;
        store.file_id = file_id(path);
        Ok(store)
    }

    fn c(&self) -> &Connection {
        self.conn.as_ref().expect("a run store has its connection until it is dropped")
    }

    fn c_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("a run store has its connection until it is dropped")
    }

    /// Open the default database ([`default_db_path`]).
    pub fn open_default() -> Result<RunStore, String> {
        RunStore::open(&default_db_path())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, doing: &str, e: rusqlite::Error) -> String {
        format!("run store {}: {doing}: {}", self.path.display(), explain(&e))
    }

    /// Add a new run (status `ready`, step 0).
    pub fn insert(&self, r: &RunRecord) -> Result<(), String> {
        let json = |v: &dyn erased::Ser| v.json();
        self.c()
            .execute(
                "INSERT INTO runs (id, file, agent, dialect, request, input, llm, status, created_ms, updated_ms, step, pending, output, error, doc_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    r.id,
                    r.file,
                    r.agent,
                    r.dialect,
                    json(&r.request),
                    json(&r.input),
                    json(&r.llm),
                    r.status,
                    r.created_ms,
                    r.updated_ms,
                    r.step as i64,
                    r.pending.as_ref().map(|p| json(p)),
                    json(&r.output),
                    r.error,
                    r.doc_hash,
                ],
            )
            .map_err(|e| self.err(&format!("adding run {}", r.id), e))?;
        Ok(())
    }

    /// Write one step or status change of run `id`, in one transaction: the run's row and the
    /// checkpoint of `point.step`, which replaces the run's earlier ones. Only the latest is
    /// kept: a resume needs nothing else, and keeping every step's snapshot would grow the store
    /// with the square of the run's length (27 MB for 1,000 steps of a 60 KB state).
    pub fn save(&mut self, id: &str, point: &SavePoint<'_>, error: Option<&str>) -> Result<(), String> {
        self.save_with_events(id, point, error, &[])
    }

    /// [`RunStore::save`], and append `events` (`(seq, line)`) to the run's event log in the
    /// same transaction (an event already there is kept: a re-run step numbers its events as
    /// the first run did).
    pub fn save_with_events(
        &mut self,
        id: &str,
        point: &SavePoint<'_>,
        error: Option<&str>,
        events: &[(u64, String)],
    ) -> Result<(), String> {
        let path = self.path.clone();
        let err = |doing: &str, e: rusqlite::Error| format!("run store {}: {doing}: {}", path.display(), explain(&e));
        let now = now_ms();
        let (pending, output) = match point.status {
            Status::Interrupted { pending } => (Some(serde_json::to_string(pending).unwrap_or_default()), None),
            Status::Finished { output, .. } => (None, Some(output.to_string())),
            _ => (None, None),
        };
        let snapshot = point.snapshot.to_string();
        let tx = self
            .c_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err(&format!("saving run {id}"), e))?;
        {
            let mut up = tx
                .prepare_cached(
                    "UPDATE runs SET status = ?2, updated_ms = ?3, step = ?4, pending = ?5, output = ?6, error = ?7 WHERE id = ?1",
                )
                .map_err(|e| err(&format!("saving run {id}"), e))?;
            let n = up
                .execute(params![id, status_word(point.status), now, point.step as i64, pending, output, error])
                .map_err(|e| err(&format!("saving run {id}"), e))?;
            if n == 0 {
                return Err(format!("run store {}: run {id} is no longer there (deleted?)", path.display()));
            }
            let mut drop_later = tx
                .prepare_cached("DELETE FROM checkpoints WHERE run_id = ?1 AND step <> ?2")
                .map_err(|e| err(&format!("saving run {id}"), e))?;
            drop_later.execute(params![id, point.step as i64]).map_err(|e| err(&format!("saving run {id}"), e))?;
            let mut put = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO checkpoints (run_id, step, snapshot, created_ms) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|e| err(&format!("saving run {id}"), e))?;
            put.execute(params![id, point.step as i64, snapshot, now])
                .map_err(|e| err(&format!("saving the checkpoint of run {id}"), e))?;
            if !events.is_empty() {
                let mut ev = tx
                    .prepare_cached("INSERT OR IGNORE INTO events (run_id, seq, line) VALUES (?1, ?2, ?3)")
                    .map_err(|e| err(&format!("saving the events of run {id}"), e))?;
                for (seq, line) in events {
                    ev.execute(params![id, *seq as i64, line])
                        .map_err(|e| err(&format!("saving the events of run {id}"), e))?;
                }
            }
        }
        tx.commit().map_err(|e| err(&format!("saving run {id}"), e))
    }

    /// Every run, most recently updated first.
    pub fn list(&self) -> Result<Vec<RunRecord>, String> {
        let mut st = self
            .c()
            .prepare(&format!("SELECT {COLUMNS} FROM runs ORDER BY updated_ms DESC, id DESC"))
            .map_err(|e| self.err("listing runs", e))?;
        let rows = st.query_map([], row_to_record).map_err(|e| self.err("listing runs", e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err("listing runs", e))
    }

    /// One run, or `None` when the store has no such id.
    pub fn get(&self, id: &str) -> Result<Option<RunRecord>, String> {
        self.c()
            .prepare_cached(&format!("SELECT {COLUMNS} FROM runs WHERE id = ?1"))
            .and_then(|mut st| st.query_row([id], row_to_record))
            .optional()
            .map_err(|e| self.err(&format!("reading run {id}"), e))
    }

    /// The newest checkpoint of run `id`: (step, snapshot).
    pub fn latest_checkpoint(&self, id: &str) -> Result<Option<(u64, Value)>, String> {
        let row: Option<(i64, String)> = self
            .c()
            .prepare_cached("SELECT step, snapshot FROM checkpoints WHERE run_id = ?1 ORDER BY step DESC LIMIT 1")
            .and_then(|mut st| st.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))))
            .optional()
            .map_err(|e| self.err(&format!("reading the checkpoint of run {id}"), e))?;
        match row {
            None => Ok(None),
            Some((step, text)) => serde_json::from_str(&text).map(|v| Some((step as u64, v))).map_err(|e| {
                format!("run store {}: the checkpoint of run {id} at step {step} is damaged: {e}", self.path.display())
            }),
        }
    }

    /// The events of run `id` numbered above `after`, oldest first, at most `limit`.
    pub fn events_after(&self, id: &str, after: u64, limit: usize) -> Result<Vec<(u64, String)>, String> {
        let mut st = self
            .c()
            .prepare_cached("SELECT seq, line FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")
            .map_err(|e| self.err(&format!("reading the events of run {id}"), e))?;
        let rows = st
            .query_map(params![id, after as i64, limit as i64], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))
            .map_err(|e| self.err(&format!("reading the events of run {id}"), e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(&format!("reading the events of run {id}"), e))
    }

    /// The number of the last event of run `id` in its log (0: none).
    pub fn last_event_seq(&self, id: &str) -> Result<u64, String> {
        self.c()
            .prepare_cached("SELECT coalesce(max(seq), 0) FROM events WHERE run_id = ?1")
            .and_then(|mut st| st.query_row([id], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
            .map_err(|e| self.err(&format!("reading the events of run {id}"), e))
    }

    /// How many checkpoints run `id` has.
    pub fn checkpoint_count(&self, id: &str) -> Result<u64, String> {
        self.c()
            .query_row("SELECT count(*) FROM checkpoints WHERE run_id = ?1", [id], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.err("counting checkpoints", e))
    }

    /// Delete runs (and their checkpoints); returns the ids that were not there.
    pub fn delete(&mut self, ids: &[String]) -> Result<Vec<String>, String> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| format!("run store {}: deleting runs: {}", path.display(), explain(&e));
        let tx = self.c_mut().transaction_with_behavior(TransactionBehavior::Immediate).map_err(err)?;
        let mut missing = Vec::new();
        for id in ids {
            tx.execute("DELETE FROM checkpoints WHERE run_id = ?1", [id]).map_err(err)?;
            tx.execute("DELETE FROM events WHERE run_id = ?1", [id]).map_err(err)?;
            if tx.execute("DELETE FROM runs WHERE id = ?1", [id]).map_err(err)? == 0 {
                missing.push(id.clone());
            }
        }
        tx.commit().map_err(err)?;
        Ok(missing)
    }

    /// Delete runs not updated for `age` (any status); returns their ids.
    pub fn prune(&mut self, age: Duration) -> Result<Vec<String>, String> {
        let cutoff = now_ms() - age.as_millis() as i64;
        let ids: Vec<String> = {
            let mut st = self
                .c()
                .prepare("SELECT id FROM runs WHERE updated_ms < ?1")
                .map_err(|e| self.err("pruning runs", e))?;
            let rows = st.query_map([cutoff], |r| r.get(0)).map_err(|e| self.err("pruning runs", e))?;
            rows.collect::<Result<Vec<String>, _>>().map_err(|e| self.err("pruning runs", e))?
        };
        self.delete(&ids)?;
        Ok(ids)
    }

    /// Set a run's `updated_ms` (tests of pruning).
    pub fn touch(&self, id: &str, updated_ms: i64) -> Result<(), String> {
        self.c()
            .execute("UPDATE runs SET updated_ms = ?2 WHERE id = ?1", params![id, updated_ms])
            .map(|_| ())
            .map_err(|e| self.err("updating a run", e))
    }
}

const COLUMNS: &str = "id, file, agent, dialect, status, created_ms, updated_ms, step, pending, output, error, input, llm, request, doc_hash";

fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
    fn parse<T: serde::de::DeserializeOwned>(text: Option<String>, col: usize) -> rusqlite::Result<Option<T>> {
        match text {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, Box::new(e))),
        }
    }
    Ok(RunRecord {
        id: r.get(0)?,
        file: r.get(1)?,
        agent: r.get(2)?,
        dialect: r.get(3)?,
        status: r.get(4)?,
        created_ms: r.get(5)?,
        updated_ms: r.get(6)?,
        step: r.get::<_, i64>(7)? as u64,
        pending: parse(r.get(8)?, 8)?,
        output: parse(r.get(9)?, 9)?.unwrap_or(Value::Null),
        error: r.get(10)?,
        input: parse(r.get(11)?, 11)?.unwrap_or(Value::Null),
        llm: parse(r.get(12)?, 12)?.unwrap_or(LlmChoice::None),
        request: parse(r.get(13)?, 13)?.unwrap_or_default(),
        doc_hash: r.get(14)?,
    })
}

/// An SQLite error in words a user can act on.
fn explain(e: &rusqlite::Error) -> String {
    if let rusqlite::Error::SqliteFailure(f, msg) = e {
        let detail = msg.clone().unwrap_or_else(|| f.to_string());
        return match f.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                format!("the database is locked by another process (waited {} s): {detail}", BUSY_TIMEOUT.as_secs())
            }
            ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => {
                format!("the file is not a Switchyard run store or is damaged: {detail}")
            }
            ErrorCode::CannotOpen => format!("it cannot be opened (does its folder exist, is it writable?): {detail}"),
            ErrorCode::ReadOnly | ErrorCode::PermissionDenied => {
                format!("it cannot be written (read-only file or folder?): {detail}")
            }
            ErrorCode::DiskFull => format!("the disk is full: {detail}"),
            _ => detail,
        };
    }
    e.to_string()
}

/// JSON text of any serialisable value (for the columns holding JSON).
mod erased {
    pub trait Ser {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_else(|_| "null".into())
        }
    }
}

/// The [`Persist`] of a durable run: writes to its row in a [`RunStore`].
pub struct StorePersist {
    store: RunStore,
    run: String,
    error: Option<String>,
    events: Option<EventBuffer>,
}

impl StorePersist {
    pub fn new(store: RunStore, run: impl Into<String>) -> StorePersist {
        StorePersist { store, run: run.into(), error: None, events: None }
    }

    /// Also write the run's events (see the module docs): each save takes what `buffer` holds.
    pub fn with_events(mut self, buffer: EventBuffer) -> StorePersist {
        self.events = Some(buffer);
        self
    }
}

impl Persist for StorePersist {
    fn save(&mut self, point: &SavePoint<'_>) -> Result<(), String> {
        if let Status::Finished { status: RunStatus::Failed, .. } = point.status {
            self.error = point.failure.map(str::to_string).or(self.error.take());
        }
        let Some(buffer) = &self.events else {
            return self.store.save(&self.run, point, self.error.as_deref());
        };
        let events = std::mem::take(&mut *buffer.lock().unwrap_or_else(|p| p.into_inner()));
        let saved = self.store.save_with_events(&self.run, point, self.error.as_deref(), &events);
        if saved.is_err() {
            // Not written: keep them for the next save.
            let mut b = buffer.lock().unwrap_or_else(|p| p.into_inner());
            let later = std::mem::take(&mut *b);
            *b = events;
            b.extend(later);
        }
        saved
    }
}

/// Parse an age such as `7d`, `12h`, `30m`, `90s` (a bare number is days).
pub fn parse_age(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, "d"),
    };
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not an age; write e.g. 7d, 12h, 30m or 90s"))?;
    let secs = match unit {
        "d" | "day" | "days" => n * 86_400,
        "h" | "hour" | "hours" => n * 3_600,
        "m" | "min" | "minutes" => n * 60,
        "s" | "sec" | "seconds" => n,
        "w" | "week" | "weeks" => n * 7 * 86_400,
        _ => return Err(format!("`{s}`: unknown unit `{unit}`; use d, h, m, s or w")),
    };
    Ok(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sy-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn record(id: &str) -> RunRecord {
        RunRecord {
            id: id.into(),
            file: "/x/agent.yaml".into(),
            agent: "a".into(),
            dialect: "sherma".into(),
            status: "ready".into(),
            created_ms: now_ms(),
            updated_ms: now_ms(),
            step: 0,
            pending: None,
            output: Value::Null,
            error: None,
            input: json!("hi"),
            llm: LlmChoice::Scripted { script: Some("/x/replies.yaml".into()) },
            request: RunRequest { input: Some("hi".into()), ..Default::default() },
            doc_hash: "00".into(),
        }
    }

    fn point(step: u64, status: &Status) -> SavePoint<'_> {
        SavePoint { step, status, snapshot: json!({"format": 1, "step": step, "big": "x".repeat(100)}), failure: None }
    }

    #[test]
    fn a_store_opened_again_reuses_its_connection_but_never_one_of_a_replaced_file() {
        let dir = tmp("pool");
        let db = dir.join("runs.sqlite");
        let s = RunStore::open(&db).unwrap();
        s.insert(&record("r1")).unwrap();
        drop(s);
        // The same file: its data (through a reused connection or not).
        assert!(RunStore::open(&db).unwrap().get("r1").unwrap().is_some());
        // The file replaced by another (a new inode): a fresh connection sees the new one.
        std::fs::remove_file(&db).unwrap();
        let _ = std::fs::remove_file(db.with_file_name("runs.sqlite-wal"));
        let _ = std::fs::remove_file(db.with_file_name("runs.sqlite-shm"));
        let fresh = RunStore::open(&db).unwrap();
        assert!(fresh.get("r1").unwrap().is_none(), "an old connection would still see r1");
        assert!(fresh.list().unwrap().is_empty());
    }

    #[test]
    fn events_are_written_with_their_step_and_read_back_after_a_number() {
        let dir = tmp("events");
        let db = dir.join("runs.sqlite");
        // A store made before the event log (schema 1) gains it when opened.
        {
            let c = Connection::open(&db).unwrap();
            c.execute_batch(&format!("{} PRAGMA user_version = 1;", SCHEMA.split("CREATE TABLE IF NOT EXISTS events").next().unwrap()))
                .unwrap();
        }
        let mut s = RunStore::open(&db).unwrap();
        s.insert(&record("r1")).unwrap();
        let buffer: EventBuffer = Default::default();
        let mut p = StorePersist::new(RunStore::open(&db).unwrap(), "r1").with_events(buffer.clone());
        buffer.lock().unwrap().extend([(1, "{\"event\":\"run_started\"}".to_string()), (2, "two".to_string())]);
        p.save(&point(1, &Status::Ready)).unwrap();
        assert!(buffer.lock().unwrap().is_empty(), "written, so taken");
        // A re-run step numbers its events as before: the first line of a number stays.
        buffer.lock().unwrap().extend([(2, "two again".to_string()), (3, "three".to_string())]);
        p.save(&point(2, &Status::Ready)).unwrap();
        let all = s.events_after("r1", 0, 100).unwrap();
        assert_eq!(all.iter().map(|(n, l)| (*n, l.as_str())).collect::<Vec<_>>(), [(1, "{\"event\":\"run_started\"}"), (2, "two"), (3, "three")]);
        assert_eq!(s.events_after("r1", 2, 100).unwrap(), vec![(3, "three".to_string())]);
        assert_eq!(s.events_after("r1", 0, 1).unwrap().len(), 1);
        assert_eq!(s.last_event_seq("r1").unwrap(), 3);
        assert_eq!(s.last_event_seq("nope").unwrap(), 0);
        // A save that fails keeps its events for the next one.
        let mut gone = StorePersist::new(RunStore::open(&db).unwrap(), "missing").with_events(buffer.clone());
        buffer.lock().unwrap().push((1, "kept".into()));
        assert!(gone.save(&point(1, &Status::Ready)).is_err());
        assert_eq!(buffer.lock().unwrap().len(), 1);
        s.delete(&["r1".into()]).unwrap();
        assert!(s.events_after("r1", 0, 100).unwrap().is_empty(), "deleted with the run");
    }

    #[test]
    fn insert_save_list_get_latest_delete() {
        let dir = tmp("basic");
        let db = dir.join("sub").join("runs.sqlite");
        let mut s = RunStore::open(&db).unwrap();
        s.insert(&record("r1")).unwrap();
        s.insert(&record("r2")).unwrap();
        assert!(s.insert(&record("r1")).unwrap_err().contains(&db.display().to_string()));
        s.save("r1", &point(1, &Status::Ready), None).unwrap();
        s.save("r1", &point(2, &Status::Ready), None).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&db), 0o600, "the store holds run states: the user's only");
            let wal = db.with_file_name("runs.sqlite-wal");
            if wal.exists() {
                assert_eq!(mode(&wal), 0o600);
            }
        }
        let pending = Pending {
            id: "ask#1".into(),
            node: "ask".into(),
            kind: crate::events::InterruptKind::Interrupt,
            prompt: "ok?".into(),
            options: vec![],
            value: json!("ok?"),
            default: None,
            validation: None,
        };
        s.save("r1", &point(2, &Status::Interrupted { pending: pending.clone() }), None).unwrap();
        let r = s.get("r1").unwrap().unwrap();
        assert_eq!(r.status, "interrupted");
        assert_eq!(r.step, 2);
        assert_eq!(r.pending, Some(pending));
        assert!(r.resumable());
        assert_eq!(r.llm, record("r1").llm);
        assert_eq!(r.request.input.as_deref(), Some("hi"));
        assert_eq!(s.latest_checkpoint("r1").unwrap().unwrap().0, 2);
        // Only the latest checkpoint is kept.
        assert_eq!(s.checkpoint_count("r1").unwrap(), 1);
        // A rewind to step 1 drops the later checkpoints.
        s.save("r1", &point(1, &Status::Paused { reason: crate::events::PauseReason::Requested }), None).unwrap();
        assert_eq!(s.latest_checkpoint("r1").unwrap().unwrap().0, 1);
        assert_eq!(s.checkpoint_count("r1").unwrap(), 1);
        let fin = Status::Finished { status: RunStatus::Completed, output: json!("done") };
        s.save("r2", &point(3, &fin), None).unwrap();
        let list = s.list().unwrap();
        assert_eq!(list.len(), 2);
        let r2 = list.iter().find(|r| r.id == "r2").unwrap();
        assert_eq!((r2.status.as_str(), &r2.output, r2.resumable()), ("completed", &json!("done"), false));
        // Another connection sees the same data (WAL, committed).
        let other = RunStore::open(&db).unwrap();
        assert_eq!(other.list().unwrap().len(), 2);
        assert_eq!(s.delete(&["r2".into(), "nope".into()]).unwrap(), vec!["nope".to_string()]);
        assert!(s.get("r2").unwrap().is_none());
        assert_eq!(s.checkpoint_count("r2").unwrap(), 0);
        assert!(s.save("r2", &point(4, &Status::Ready), None).unwrap_err().contains("no longer there"));
    }

    #[test]
    fn prune_removes_only_old_runs() {
        let dir = tmp("prune");
        let mut s = RunStore::open(&dir.join("runs.sqlite")).unwrap();
        s.insert(&record("old")).unwrap();
        s.insert(&record("new")).unwrap();
        s.save("old", &point(1, &Status::Ready), None).unwrap();
        s.touch("old", now_ms() - 8 * 86_400_000).unwrap();
        assert_eq!(s.prune(parse_age("7d").unwrap()).unwrap(), vec!["old".to_string()]);
        let ids: Vec<String> = s.list().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, vec!["new".to_string()]);
        assert_eq!(s.checkpoint_count("old").unwrap(), 0);
    }

    #[test]
    fn ages() {
        assert_eq!(parse_age("7d").unwrap(), Duration::from_secs(7 * 86_400));
        assert_eq!(parse_age("12h").unwrap(), Duration::from_secs(12 * 3_600));
        assert_eq!(parse_age("3").unwrap(), Duration::from_secs(3 * 86_400));
        assert_eq!(parse_age("90s").unwrap(), Duration::from_secs(90));
        assert!(parse_age("soon").is_err());
        assert!(parse_age("5y").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn bad_paths_and_files_are_clear_errors() {
        let dir = tmp("bad");
        // Not a database.
        let junk = dir.join("junk.sqlite");
        std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
        let e = RunStore::open(&junk).err().unwrap();
        assert!(e.contains(&junk.display().to_string()) && e.contains("not a Switchyard run store"), "{e}");
        // A folder that cannot be made (a file stands in the way).
        let blocker = dir.join("file");
        std::fs::write(&blocker, "x").unwrap();
        let e = RunStore::open(&blocker.join("runs.sqlite")).err().unwrap();
        assert!(e.contains("cannot create the folder") && e.contains("runs.sqlite"), "{e}");
    }

    #[test]
    fn concurrent_writers_do_not_corrupt_the_store() {
        let dir = tmp("concurrent");
        let db = dir.join("runs.sqlite");
        RunStore::open(&db).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut s = RunStore::open(&db).unwrap();
                    let id = format!("t{t}");
                    s.insert(&record(&id)).unwrap();
                    for step in 1..=50 {
                        s.save(&id, &point(step, &Status::Ready), None).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = RunStore::open(&db).unwrap();
        let ok: String = s.c().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
        for t in 0..4 {
            let r = s.get(&format!("t{t}")).unwrap().unwrap();
            assert_eq!(r.step, 50);
            assert_eq!(s.checkpoint_count(&r.id).unwrap(), 1);
            assert_eq!(s.latest_checkpoint(&r.id).unwrap().unwrap().0, 50);
        }
    }

    /// The cost of one durable step (one transaction: run row + checkpoint), with a state of
    /// about 10 KB. Printed for the report; bounded loosely so a regression shows.
    #[test]
    fn per_step_write_cost() {
        let dir = tmp("cost");
        let mut s = RunStore::open(&dir.join("runs.sqlite")).unwrap();
        s.insert(&record("c")).unwrap();
        let msgs: Vec<Value> = (0..40).map(|i| json!({"type": "ai", "content": "y".repeat(250), "id": i})).collect();
        let snap = json!({"format": 1, "machine": {"state": {"messages": msgs}}});
        let n = 300u64;
        let t0 = std::time::Instant::now();
        for step in 1..=n {
            let p = SavePoint { step, status: &Status::Ready, snapshot: snap.clone(), failure: None };
            s.save("c", &p, None).unwrap();
        }
        let per = t0.elapsed() / n as u32;
        eprintln!("durable write per step (~{} KB snapshot): {per:?}", snap.to_string().len() / 1024);
        assert!(per < Duration::from_millis(50), "{per:?}");
    }

    #[test]
    fn default_path_follows_the_environment_rules() {
        // Only the pure parts: SWITCHYARD_RUNS_DB is not touched here (tests run in parallel).
        let p = default_db_path();
        assert!(p.ends_with("runs.sqlite"), "{}", p.display());
    }
}
