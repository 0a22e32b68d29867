//! The server's own tables, in the same SQLite file as the run store (`runtime::store`): the
//! run store keeps each run (row, latest checkpoint, event log); these keep what only the
//! server knows.
//!
//! - `sy_threads`: LangGraph threads (id, metadata, times);
//! - `sy_runs`: which thread and assistant each server run belongs to, its metadata, who
//!   started it, its breakpoints, and whether it is held paused (by a breakpoint, a step or a
//!   pause: a restarted server leaves it paused);
//! - `sy_history`: the state after every committed step of a run (a thread's history, one
//!   checkpoint per step, as LangGraph keeps them);
//! - `sy_answers`: the audit log of answers: who answered which question of which run, when,
//!   with what. Its key (run, question) makes a second answer to one question impossible, and
//!   an answer written here is applied even if the server dies before the run took it (see
//!   `engine`);
//! - `sy_tokens`: API tokens, stored as SHA-256 hashes (a token is 256 random bits, so a plain
//!   hash is enough), revocable.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sy_threads (
    thread_id   TEXT PRIMARY KEY,
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL,
    metadata    TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS sy_runs (
    run_id       TEXT PRIMARY KEY,
    thread_id    TEXT,
    assistant_id TEXT NOT NULL,
    created_ms   INTEGER NOT NULL,
    metadata     TEXT NOT NULL,
    started_by   TEXT NOT NULL,
    hold         INTEGER NOT NULL DEFAULT 0,
    breakpoints  TEXT NOT NULL DEFAULT '[]'
) STRICT;
CREATE INDEX IF NOT EXISTS sy_runs_thread ON sy_runs(thread_id, created_ms);
CREATE TABLE IF NOT EXISTS sy_history (
    run_id      TEXT NOT NULL,
    step        INTEGER NOT NULL,
    state       TEXT NOT NULL,
    next        TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    PRIMARY KEY (run_id, step)
) STRICT;
CREATE TABLE IF NOT EXISTS sy_answers (
    run_id       TEXT NOT NULL,
    interrupt_id TEXT NOT NULL,
    answer       TEXT NOT NULL,
    who          TEXT NOT NULL,
    at_ms        INTEGER NOT NULL,
    PRIMARY KEY (run_id, interrupt_id)
) STRICT;
CREATE TABLE IF NOT EXISTS sy_tokens (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    created_ms  INTEGER NOT NULL,
    revoked_ms  INTEGER
) STRICT;
";

/// A LangGraph thread.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadRow {
    pub thread_id: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub metadata: Value,
}

/// What the server knows of one of its runs.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub thread_id: Option<String>,
    pub assistant_id: String,
    pub created_ms: i64,
    pub metadata: Value,
    pub started_by: String,
}

/// The state after one step.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryRow {
    pub run_id: String,
    pub step: u64,
    pub state: Value,
    pub next: Vec<String>,
    pub created_ms: i64,
}

/// One answer of the audit log.
#[derive(Clone, Debug, Serialize)]
pub struct AnswerRow {
    pub run_id: String,
    pub interrupt_id: String,
    pub answer: Value,
    pub who: String,
    pub at_ms: i64,
}

/// An API token as listed (never the token itself).
#[derive(Clone, Debug, Serialize)]
pub struct TokenRow {
    pub id: String,
    pub name: String,
    pub created_ms: i64,
    pub revoked_ms: Option<i64>,
}

/// The server's tables (one connection, shared).
pub struct ServerDb {
    path: PathBuf,
    conn: Mutex<Connection>,
}

fn now_ms() -> i64 {
    runtime::events::now_ms() as i64
}

fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn parse_json(t: String) -> Value {
    serde_json::from_str(&t).unwrap_or(Value::Null)
}

/// The SHA-256 of a token, as stored.
pub fn token_hash(token: &str) -> String {
    let d = Sha256::digest(token.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

impl ServerDb {
    /// Open the tables in the run store at `path` (creating the store first, so that it gets
    /// the run store's schema, mode and WAL journal).
    pub fn open(path: &Path) -> Result<ServerDb, String> {
        runtime::store::RunStore::open(path)?;
        let conn = Connection::open(path).map_err(|e| format!("cannot open the server tables in {}: {e}", path.display()))?;
        conn.busy_timeout(runtime::store::BUSY_TIMEOUT).map_err(|e| format!("{}: {e}", path.display()))?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| format!("{}: {e}", path.display()))?;
        let _ = conn.pragma_update(None, "mmap_size", 256i64 * 1024 * 1024);
        conn.execute_batch(SCHEMA).map_err(|e| format!("cannot create the server tables in {}: {e}", path.display()))?;
        Ok(ServerDb { path: path.to_path_buf(), conn: Mutex::new(conn) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(&self, doing: &str, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, String> {
        let c = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&c).map_err(|e| format!("server store {}: {doing}: {e}", self.path.display()))
    }

    // Threads.

    pub fn create_thread(&self, thread_id: &str, metadata: &Value) -> Result<ThreadRow, String> {
        let now = now_ms();
        self.with("creating a thread", |c| {
            c.prepare_cached("INSERT INTO sy_threads (thread_id, created_ms, updated_ms, metadata) VALUES (?1, ?2, ?2, ?3)")?.execute(params![thread_id, now, json_text(metadata)],
            )
        })?;
        Ok(ThreadRow { thread_id: thread_id.into(), created_ms: now, updated_ms: now, metadata: metadata.clone() })
    }

    pub fn thread(&self, thread_id: &str) -> Result<Option<ThreadRow>, String> {
        self.with("reading a thread", |c| {
            c.prepare_cached("SELECT thread_id, created_ms, updated_ms, metadata FROM sy_threads WHERE thread_id = ?1")?.query_row([thread_id],
                |r| Ok(ThreadRow { thread_id: r.get(0)?, created_ms: r.get(1)?, updated_ms: r.get(2)?, metadata: parse_json(r.get(3)?) }),
            )
            .optional()
        })
    }

    /// Threads, newest first.
    pub fn threads(&self, limit: usize, offset: usize) -> Result<Vec<ThreadRow>, String> {
        self.with("listing threads", |c| {
            let mut st = c.prepare(
                "SELECT thread_id, created_ms, updated_ms, metadata FROM sy_threads ORDER BY created_ms DESC, thread_id LIMIT ?1 OFFSET ?2",
            )?;
            let rows = st.query_map(params![limit as i64, offset as i64], |r| {
                Ok(ThreadRow { thread_id: r.get(0)?, created_ms: r.get(1)?, updated_ms: r.get(2)?, metadata: parse_json(r.get(3)?) })
            })?;
            rows.collect()
        })
    }

    pub fn touch_thread(&self, thread_id: &str) -> Result<(), String> {
        self.with("updating a thread", |c| {
            c.prepare_cached("UPDATE sy_threads SET updated_ms = ?2 WHERE thread_id = ?1")?.execute(params![thread_id, now_ms()]).map(|_| ())
        })
    }

    /// Delete a thread and what the server keeps of its runs; returns the runs' ids (the caller
    /// deletes them from the run store).
    pub fn delete_thread(&self, thread_id: &str) -> Result<Vec<String>, String> {
        let runs: Vec<String> = self.runs_of(thread_id)?.into_iter().map(|r| r.run_id).collect();
        self.with("deleting a thread", |c| {
            for r in &runs {
                c.prepare_cached("DELETE FROM sy_history WHERE run_id = ?1")?.execute([r])?;
                c.prepare_cached("DELETE FROM sy_runs WHERE run_id = ?1")?.execute([r])?;
            }
            c.prepare_cached("DELETE FROM sy_threads WHERE thread_id = ?1")?.execute([thread_id]).map(|_| ())
        })?;
        Ok(runs)
    }

    // Runs.

    pub fn add_run(&self, row: &RunRow) -> Result<(), String> {
        self.with("adding a run", |c| {
            c.prepare_cached("INSERT INTO sy_runs (run_id, thread_id, assistant_id, created_ms, metadata, started_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?.execute(params![row.run_id, row.thread_id, row.assistant_id, row.created_ms, json_text(&row.metadata), row.started_by],
            )
            .map(|_| ())
        })
    }

    /// Forget a run that never started (its row and any history).
    pub fn remove_run(&self, run_id: &str) -> Result<(), String> {
        self.with("removing a run that did not start", |c| {
            c.prepare_cached("DELETE FROM sy_history WHERE run_id = ?1")?.execute([run_id])?;
            c.prepare_cached("DELETE FROM sy_runs WHERE run_id = ?1")?.execute([run_id]).map(|_| ())
        })
    }

    fn run_rows(&self, doing: &str, sql: &str, arg: &str) -> Result<Vec<RunRow>, String> {
        self.with(doing, |c| {
            let mut st = c.prepare_cached(sql)?;
            let rows = st.query_map([arg], |r| {
                Ok(RunRow {
                    run_id: r.get(0)?,
                    thread_id: r.get(1)?,
                    assistant_id: r.get(2)?,
                    created_ms: r.get(3)?,
                    metadata: parse_json(r.get(4)?),
                    started_by: r.get(5)?,
                })
            })?;
            rows.collect()
        })
    }

    pub fn run(&self, run_id: &str) -> Result<Option<RunRow>, String> {
        Ok(self
            .run_rows(
                "reading a run",
                "SELECT run_id, thread_id, assistant_id, created_ms, metadata, started_by FROM sy_runs WHERE run_id = ?1",
                run_id,
            )?
            .pop())
    }

    /// The runs of a thread, oldest first.
    pub fn runs_of(&self, thread_id: &str) -> Result<Vec<RunRow>, String> {
        self.run_rows(
            "listing a thread's runs",
            "SELECT run_id, thread_id, assistant_id, created_ms, metadata, started_by FROM sy_runs WHERE thread_id = ?1 ORDER BY created_ms, run_id",
            thread_id,
        )
    }

    /// Every server run, oldest first.
    pub fn all_runs(&self) -> Result<Vec<RunRow>, String> {
        self.run_rows(
            "listing runs",
            "SELECT run_id, thread_id, assistant_id, created_ms, metadata, started_by FROM sy_runs WHERE ?1 = ?1 ORDER BY created_ms, run_id",
            "",
        )
    }

    /// Hold a run paused (or let it go on after a restart).
    pub fn set_hold(&self, run_id: &str, hold: bool) -> Result<(), String> {
        self.with("updating a run", |c| {
            c.prepare_cached("UPDATE sy_runs SET hold = ?2 WHERE run_id = ?1")?.execute(params![run_id, hold as i64]).map(|_| ())
        })
    }

    pub fn held(&self, run_id: &str) -> Result<bool, String> {
        self.with("reading a run", |c| {
            c.prepare_cached("SELECT hold FROM sy_runs WHERE run_id = ?1")?.query_row([run_id], |r| r.get::<_, i64>(0)).optional().map(|h| h == Some(1))
        })
    }

    pub fn set_breakpoints(&self, run_id: &str, breakpoints: &Value) -> Result<(), String> {
        self.with("updating a run", |c| {
            c.prepare_cached("UPDATE sy_runs SET breakpoints = ?2 WHERE run_id = ?1")?.execute(params![run_id, json_text(breakpoints)]).map(|_| ())
        })
    }

    pub fn breakpoints(&self, run_id: &str) -> Result<Value, String> {
        self.with("reading a run", |c| {
            c.prepare_cached("SELECT breakpoints FROM sy_runs WHERE run_id = ?1")?.query_row([run_id], |r| r.get::<_, String>(0))
                .optional()
                .map(|t| t.map(parse_json).unwrap_or(Value::Array(Vec::new())))
        })
    }

    // History.

    pub fn put_history(&self, run_id: &str, step: u64, state: &Value, next: &[String]) -> Result<(), String> {
        self.with("saving a checkpoint", |c| {
            c.prepare_cached("INSERT OR REPLACE INTO sy_history (run_id, step, state, next, created_ms) VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(params![run_id, step as i64, json_text(state), json_text(&Value::from(next.to_vec())), now_ms()],
            )
            .map(|_| ())
        })
    }

    /// A run's checkpoints, newest first.
    pub fn history(&self, run_id: &str) -> Result<Vec<HistoryRow>, String> {
        self.history_rows(run_id, i64::MAX)
    }

    fn history_rows(&self, run_id: &str, limit: i64) -> Result<Vec<HistoryRow>, String> {
        self.with("reading checkpoints", |c| {
            let mut st = c.prepare_cached(
                "SELECT run_id, step, state, next, created_ms FROM sy_history WHERE run_id = ?1 ORDER BY step DESC LIMIT ?2",
            )?;
            let rows = st.query_map(params![run_id, limit], |r| {
                Ok(HistoryRow {
                    run_id: r.get(0)?,
                    step: r.get::<_, i64>(1)? as u64,
                    state: parse_json(r.get(2)?),
                    next: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
                    created_ms: r.get(4)?,
                })
            })?;
            rows.collect()
        })
    }

    pub fn latest_history(&self, run_id: &str) -> Result<Option<HistoryRow>, String> {
        Ok(self.history_rows(run_id, 1)?.into_iter().next())
    }

    // Answers.

    /// Write an answer to the audit log. `false`: that question of that run was answered
    /// already (nothing written).
    pub fn record_answer(&self, run_id: &str, interrupt_id: &str, answer: &Value, who: &str) -> Result<bool, String> {
        self.with("recording an answer", |c| {
            c.prepare_cached("INSERT OR IGNORE INTO sy_answers (run_id, interrupt_id, answer, who, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(params![run_id, interrupt_id, json_text(answer), who, now_ms()],
            )
            .map(|n| n == 1)
        })
    }

    /// Take back an answer the run refused (it failed validation).
    pub fn forget_answer(&self, run_id: &str, interrupt_id: &str) -> Result<(), String> {
        self.with("recording an answer", |c| {
            c.prepare_cached("DELETE FROM sy_answers WHERE run_id = ?1 AND interrupt_id = ?2")?.execute(params![run_id, interrupt_id]).map(|_| ())
        })
    }

    pub fn answer(&self, run_id: &str, interrupt_id: &str) -> Result<Option<AnswerRow>, String> {
        Ok(self.answers(Some(run_id))?.into_iter().find(|a| a.interrupt_id == interrupt_id))
    }

    /// The audit log (of one run, or of all), oldest first.
    pub fn answers(&self, run_id: Option<&str>) -> Result<Vec<AnswerRow>, String> {
        self.with("reading the answers", |c| {
            let mut st = c.prepare_cached(
                "SELECT run_id, interrupt_id, answer, who, at_ms FROM sy_answers WHERE (?1 IS NULL OR run_id = ?1) ORDER BY at_ms, run_id, interrupt_id",
            )?;
            let rows = st.query_map([run_id], |r| {
                Ok(AnswerRow {
                    run_id: r.get(0)?,
                    interrupt_id: r.get(1)?,
                    answer: parse_json(r.get(2)?),
                    who: r.get(3)?,
                    at_ms: r.get(4)?,
                })
            })?;
            rows.collect()
        })
    }

    // Tokens.

    /// A new token named `name`: `(id, token)`. The token is shown once; only its hash is kept.
    pub fn create_token(&self, name: &str) -> Result<(String, String), String> {
        let name = name.trim();
        if name.is_empty() || name.len() > 100 || name.chars().any(char::is_control) {
            return Err("a token's name must be 1 to 100 printable characters (who uses it: `alice`, `ci`)".into());
        }
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
        let token = format!("sy_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        self.with("creating a token", |c| {
            c.prepare_cached("INSERT INTO sy_tokens (id, name, hash, created_ms) VALUES (?1, ?2, ?3, ?4)")?.execute(params![id, name, token_hash(&token), now_ms()],
            )
            .map(|_| ())
        })?;
        Ok((id, token))
    }

    pub fn tokens(&self) -> Result<Vec<TokenRow>, String> {
        self.with("listing tokens", |c| {
            let mut st = c.prepare("SELECT id, name, created_ms, revoked_ms FROM sy_tokens ORDER BY created_ms, id")?;
            let rows = st.query_map([], |r| Ok(TokenRow { id: r.get(0)?, name: r.get(1)?, created_ms: r.get(2)?, revoked_ms: r.get(3)? }))?;
            rows.collect()
        })
    }

    /// Revoke the tokens with this id or name; returns how many.
    pub fn revoke_token(&self, id_or_name: &str) -> Result<usize, String> {
        self.with("revoking a token", |c| {
            c.prepare_cached("UPDATE sy_tokens SET revoked_ms = ?2 WHERE (id = ?1 OR name = ?1) AND revoked_ms IS NULL")?.execute(params![id_or_name, now_ms()],
            )
        })
    }

    /// Whether any token can be used (then every request needs one).
    pub fn has_live_tokens(&self) -> Result<bool, String> {
        self.with("reading tokens", |c| {
            c.prepare_cached("SELECT count(*) FROM sy_tokens WHERE revoked_ms IS NULL")?.query_row([], |r| r.get::<_, i64>(0)).map(|n| n > 0)
        })
    }

    /// The name of the live token `token`, if it is one.
    pub fn token_name(&self, token: &str) -> Result<Option<String>, String> {
        let hash = token_hash(token);
        self.with("checking a token", |c| {
            c.prepare_cached("SELECT name FROM sy_tokens WHERE hash = ?1 AND revoked_ms IS NULL")?.query_row([hash], |r| r.get(0)).optional()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn db(name: &str) -> (PathBuf, ServerDb) {
        let d = std::env::temp_dir().join(format!("sy-serverdb-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("server.sqlite");
        let db = ServerDb::open(&p).unwrap();
        (d, db)
    }

    #[test]
    fn threads_runs_history_and_answers() {
        let (d, db) = db("basic");
        db.create_thread("t1", &json!({"who": "me"})).unwrap();
        assert!(db.create_thread("t1", &json!({})).is_err(), "ids are unique");
        assert_eq!(db.thread("t1").unwrap().unwrap().metadata, json!({"who": "me"}));
        assert!(db.thread("t2").unwrap().is_none());
        for (i, id) in ["r1", "r2"].iter().enumerate() {
            db.add_run(&RunRow {
                run_id: id.to_string(),
                thread_id: Some("t1".into()),
                assistant_id: "a".into(),
                created_ms: i as i64,
                metadata: json!({}),
                started_by: "local".into(),
            })
            .unwrap();
        }
        assert_eq!(db.runs_of("t1").unwrap().iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(), ["r1", "r2"]);
        assert_eq!(db.all_runs().unwrap().len(), 2);
        db.put_history("r1", 1, &json!({"n": 1}), &["b".into()]).unwrap();
        db.put_history("r1", 2, &json!({"n": 2}), &[]).unwrap();
        let h = db.history("r1").unwrap();
        assert_eq!((h[0].step, &h[0].state, h[1].next.clone()), (2, &json!({"n": 2}), vec!["b".to_string()]));
        assert!(db.record_answer("r1", "ask#1", &json!("yes"), "alice").unwrap());
        assert!(!db.record_answer("r1", "ask#1", &json!("no"), "bob").unwrap(), "a question is answered once");
        let a = db.answer("r1", "ask#1").unwrap().unwrap();
        assert_eq!((a.answer, a.who.as_str()), (json!("yes"), "alice"));
        db.forget_answer("r1", "ask#1").unwrap();
        assert!(db.answer("r1", "ask#1").unwrap().is_none());
        assert_eq!(db.delete_thread("t1").unwrap(), ["r1", "r2"]);
        assert!(db.thread("t1").unwrap().is_none() && db.all_runs().unwrap().is_empty() && db.history("r1").unwrap().is_empty());
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn tokens_are_kept_hashed_and_can_be_revoked() {
        let (d, db) = db("tokens");
        assert!(!db.has_live_tokens().unwrap());
        let (id, token) = db.create_token("alice").unwrap();
        assert!(token.starts_with("sy_") && token.len() == 67, "{token}");
        assert!(db.has_live_tokens().unwrap());
        assert_eq!(db.token_name(&token).unwrap().as_deref(), Some("alice"));
        assert_eq!(db.token_name("sy_wrong").unwrap(), None);
        let text = std::fs::read(db.path()).unwrap();
        let wal = std::fs::read(db.path().with_file_name("server.sqlite-wal")).unwrap_or_default();
        for bytes in [&text, &wal] {
            assert!(!bytes.windows(token.len()).any(|w| w == token.as_bytes()), "the token itself is never stored");
        }
        assert!(db.create_token("  ").is_err());
        assert_eq!(db.revoke_token(&id).unwrap(), 1);
        assert_eq!(db.revoke_token("alice").unwrap(), 0, "already revoked");
        assert_eq!(db.token_name(&token).unwrap(), None);
        assert!(!db.has_live_tokens().unwrap());
        assert_eq!(db.tokens().unwrap()[0].name, "alice");
        let _ = std::fs::remove_dir_all(d);
    }
}
