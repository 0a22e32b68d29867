//! [`Restate`]: the server's [`Engine`] when runs execute on Restate (`switchyard serve
//! --engine restate --restate URL`). Starting a run submits its workflow through Restate's
//! ingress; answers, stops, pauses and breakpoints go to the workflow's shared handlers; the
//! record, checkpoints and events are read from the workflow's state (no second store that
//! could disagree) through Restate's SQL introspection API on its admin port ([`StateSql`]),
//! so reading a run needs no live worker. Watchers read a run's new events (each action's
//! followed by the state it led to) every [`POLL`] while anyone watches.
//!
//! The server's own tables (`ServerDb`) keep what is not a run: threads, which runs a thread
//! has (and who started them), the answers' audit log and the API tokens.

use crate::worker::{AnswerReq, Batch, Go, Hist, StartReq, SERVICE};
use launch::durable::RunRecord;
use runtime::provider::NoProvider;
use runtime::session::{Breakpoint, RunOptions};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use server::assistants::Assistants;
use server::db::{HistoryRow, RunRow, ServerDb};
use server::engine::{ApiError, Drive, Engine, InboxChange, LlmMode, Notice, RunSummary, StartParts, StartSpec, check_nodes, log_answer, start_parts};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::broadcast;

/// How often a watched run is polled.
pub const POLL: Duration = Duration::from_millis(40);
/// How often the inbox looks for runs that changed.
const INBOX_POLL: Duration = Duration::from_millis(300);
const CHANNEL: usize = 512;

/// The engine on Restate (see the module docs).
pub struct Restate {
    me: Weak<Restate>,
    ingress: String,
    sql: StateSql,
    http: reqwest::Client,
    rt: tokio::runtime::Handle,
    sdb: ServerDb,
    assistants: Arc<Assistants>,
    llm: LlmMode,
    channels: Mutex<HashMap<String, broadcast::Sender<Notice>>>,
    inbox: broadcast::Sender<InboxChange>,
}

impl Restate {
    /// An engine submitting runs to Restate's ingress at `ingress` and reading them through
    /// its admin API at `admin`, with the server's tables in `db`. Starts the inbox's watcher
    /// on `rt`.
    pub fn open(
        ingress: &str,
        admin: &str,
        db: &std::path::Path,
        assistants: Arc<Assistants>,
        llm: LlmMode,
        rt: tokio::runtime::Handle,
    ) -> Result<Arc<Restate>, String> {
        let sdb = ServerDb::open(db)?;
        let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().map_err(|e| e.to_string())?;
        let engine = Arc::new_cyclic(|me| Restate {
            me: me.clone(),
            ingress: ingress.trim_end_matches('/').to_string(),
            sql: StateSql { admin: admin.trim_end_matches('/').to_string(), http: http.clone() },
            http,
            rt: rt.clone(),
            sdb,
            assistants,
            llm,
            channels: Mutex::new(HashMap::new()),
            inbox: broadcast::channel(1024).0,
        });
        let weak = Arc::downgrade(&engine);
        rt.spawn(inbox_watch(weak));
        Ok(engine)
    }

    fn block<F: std::future::Future>(&self, f: F) -> F::Output {
        tokio::task::block_in_place(|| self.rt.block_on(f))
    }

    /// Call handler `handler` of run `run`'s workflow.
    async fn call_async<T: DeserializeOwned>(&self, run: &str, handler: &str, body: Option<Value>) -> Result<T, ApiError> {
        call(&self.http, &self.ingress, run, handler, body).await
    }

    fn call<T: DeserializeOwned>(&self, run: &str, handler: &str, body: Option<Value>) -> Result<T, ApiError> {
        self.block(self.call_async(run, handler, body))
    }

    fn channel(&self, run_id: &str) -> broadcast::Sender<Notice> {
        let mut ch = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = ch.get(run_id) {
            return tx.clone();
        }
        let tx = broadcast::channel(CHANNEL).0;
        ch.insert(run_id.to_string(), tx.clone());
        tx
    }

    fn changed(&self, run_id: &str) {
        let _ = self.inbox.send(InboxChange { run_id: run_id.to_string() });
    }

    fn must_record(&self, run_id: &str) -> Result<RunRecord, ApiError> {
        self.record(run_id)?.ok_or_else(|| ApiError::not_found(format!("no run {run_id}")))
    }
}

/// One call of a workflow handler through the ingress. A refusal keeps its status (the
/// workflow's terminal errors carry 404, 409, 422).
async fn call<T: DeserializeOwned>(http: &reqwest::Client, ingress: &str, run: &str, handler: &str, body: Option<Value>) -> Result<T, ApiError> {
    let url = format!("{ingress}/{SERVICE}/{run}/{handler}");
    let mut req = http.post(&url);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.map_err(|e| ApiError::new(502, format!("Restate at {ingress}: {e}")))?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| ApiError::new(502, format!("Restate at {ingress}: {e}")))?;
    if !status.is_success() {
        let msg = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or(text);
        let code = if status.is_client_error() { status.as_u16() } else { 502 };
        return Err(ApiError::new(code, msg));
    }
    let text = if text.trim().is_empty() { "null" } else { &text };
    serde_json::from_str(text).map_err(|e| ApiError::new(502, format!("Restate's answer to {handler} of {run}: {e}")))
}

/// Reads of the workflows' K/V state through Restate's SQL introspection API (`POST
/// <admin>/query` on the table `state`, one partition-key lookup per run): a run's record,
/// checkpoints and events, whether or not any worker is up.
struct StateSql {
    admin: String,
    http: reqwest::Client,
}

/// A SQL string literal.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[derive(serde::Deserialize)]
struct SqlRows<R> {
    rows: Vec<R>,
}

#[derive(serde::Deserialize)]
struct KeyedRow {
    service_key: String,
    key: String,
    value_utf8: Option<String>,
}

#[derive(serde::Deserialize)]
struct SqlRow {
    key: String,
    value_utf8: Option<String>,
}

impl StateSql {
    /// The values of `keys` in run `run`'s workflow state, by key (absent keys are absent).
    async fn get(&self, run: &str, keys: &[String]) -> Result<HashMap<String, String>, ApiError> {
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        let list = keys.iter().map(|k| quote(k)).collect::<Vec<_>>().join(", ");
        let query = format!(
            "SELECT key, value_utf8 FROM state WHERE service_name = {} AND service_key = {} AND key IN ({list})",
            quote(SERVICE),
            quote(run)
        );
        let rows: Vec<SqlRow> = self.query(&query).await?;
        Ok(rows.into_iter().filter_map(|r| Some((r.key, r.value_utf8?))).collect())
    }

    /// The rows `query` selects.
    async fn query<R: DeserializeOwned>(&self, query: &str) -> Result<Vec<R>, ApiError> {
        let url = format!("{}/query", self.admin);
        let unreachable = |e: String| ApiError::new(502, format!("Restate's admin API at {}: {e}", self.admin));
        // Right after Restate (re)started, a partition that is still being opened answers 500
        // ("… doesn't exist on this node, this is benign …"): asked again for a while.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let text = loop {
            let resp = self
                .http
                .post(&url)
                .header(reqwest::header::ACCEPT, "application/json")
                .json(&json!({ "query": query }))
                .send()
                .await
                .map_err(|e| unreachable(e.to_string()))?;
            let status = resp.status();
            let text = resp.text().await.map_err(|e| unreachable(e.to_string()))?;
            if status.is_success() {
                break text;
            }
            if !status.is_server_error() || tokio::time::Instant::now() >= deadline {
                return Err(unreachable(format!("{status}: {text}")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let rows: SqlRows<R> = serde_json::from_str(&text).map_err(|e| unreachable(format!("an answer that is not the expected rows: {e}")))?;
        Ok(rows.rows)
    }

    /// Records and breakpoints of many runs, a query per 500.
    async fn summaries(&self, runs: &[String]) -> Result<HashMap<String, RunSummary>, ApiError> {
        let mut out: HashMap<String, RunSummary> = HashMap::new();
        for chunk in runs.chunks(500) {
            let list = chunk.iter().map(|k| quote(k)).collect::<Vec<_>>().join(", ");
            let query = format!(
                "SELECT service_key, key, value_utf8 FROM state WHERE service_name = {} AND key IN ('record', 'breakpoints') AND service_key IN ({list})",
                quote(SERVICE)
            );
            for row in self.query::<KeyedRow>(&query).await? {
                let Some(v) = row.value_utf8 else { continue };
                let e = out.entry(row.service_key.clone()).or_default();
                match row.key.as_str() {
                    "record" => {
                        let rec: RunRecord = decode(&row.service_key, "record", &v)?;
                        e.active = rec.status == "ready";
                        e.record = Some(rec);
                    }
                    _ => e.breakpoints = decode(&row.service_key, "breakpoints", &v)?,
                }
            }
        }
        Ok(out)
    }

    /// The value of `key` in run `run`'s workflow state, decoded.
    async fn one<T: DeserializeOwned>(&self, run: &str, key: &str) -> Result<Option<T>, ApiError> {
        let mut m = self.get(run, &[key.to_string()]).await?;
        m.remove(key).map(|v| decode(run, key, &v)).transpose()
    }

    /// Events of run `run` after number `after` (at most about `limit`, whole actions), each
    /// action's followed by the state it led to; the record; the run's last event number.
    async fn poll(&self, run: &str, after: u64, limit: usize) -> Result<Poll, ApiError> {
        let mut m = self.get(run, &["batches".into(), "record".into()]).await?;
        let batches: Vec<u64> = m.remove("batches").map(|v| decode(run, "batches", &v)).transpose()?.unwrap_or_default();
        let record: Option<RunRecord> = m.remove("record").map(|v| decode(run, "record", &v)).transpose()?;
        let last = batches.last().copied().unwrap_or(0);
        // The actions holding events after `after`, whole, until `limit` events are taken.
        let mut wanted = Vec::new();
        let mut count = 0usize;
        for (i, end) in batches.iter().enumerate() {
            if *end <= after {
                continue;
            }
            if count >= limit {
                break;
            }
            let first = if i == 0 { 1 } else { batches[i - 1] + 1 };
            count += (end - first.max(after + 1) + 1) as usize;
            wanted.push(format!("ev/{i}"));
        }
        let mut evs = self.get(run, &wanted).await?;
        let mut list: Vec<Batch> = Vec::new();
        for k in &wanted {
            if let Some(v) = evs.remove(k) {
                list.push(decode(run, k, &v)?);
            }
        }
        let hist_keys: Vec<String> = list.iter().map(|b| format!("h/{}", b.step)).collect();
        let hists = self.get(run, &hist_keys).await?;
        let mut items = Vec::new();
        for b in list {
            for (k, line) in b.lines.into_iter().enumerate() {
                let seq = b.first + k as u64;
                if seq > after {
                    items.push(PollItem::Event { seq, line });
                }
            }
            if let Some(h) = hists.get(&format!("h/{}", b.step)) {
                let h: Hist = decode(run, "h", h)?;
                items.push(PollItem::Values { step: b.step, state: h.state });
            }
        }
        Ok(Poll { items, record, last })
    }

    /// The run's checkpoints, newest first.
    async fn history(&self, run: &str) -> Result<Vec<Hist>, ApiError> {
        let steps: Vec<u64> = self.one(run, "hist").await?.unwrap_or_default();
        let keys: Vec<String> = steps.iter().rev().map(|s| format!("h/{s}")).collect();
        let mut m = self.get(run, &keys).await?;
        keys.iter().filter_map(|k| m.remove(k)).map(|v| decode(run, "h", &v)).collect()
    }
}

fn decode<T: DeserializeOwned>(run: &str, key: &str, v: &str) -> Result<T, ApiError> {
    serde_json::from_str(v).map_err(|e| ApiError::internal(format!("run {run}: its workflow's `{key}` cannot be read: {e}")))
}

/// What a watcher gets: numbered events, each action's followed by the state it led to.
#[derive(Default)]
struct Poll {
    items: Vec<PollItem>,
    record: Option<RunRecord>,
    /// The last event number of the run.
    last: u64,
}

enum PollItem {
    Event { seq: u64, line: String },
    Values { step: u64, state: Value },
}

impl Engine for Restate {
    fn start(&self, spec: StartSpec) -> Result<(), ApiError> {
        let a = &spec.assistant;
        let rel = a
            .file
            .strip_prefix(&self.assistants.root)
            .map_err(|_| ApiError::internal(format!("{} is not under the agents folder", a.file.display())))?
            .to_string_lossy()
            .into_owned();
        // Checked here first (the same checks the embedded engine makes, so the same refusals):
        // the document, its provider, the breakpoints.
        let StartParts { doc, req, llm, provider } = start_parts(&spec, self.llm)?;
        let mut probe = launch::durable::start_elsewhere(doc, &req, llm, Some(provider), RunOptions::new(Box::new(NoProvider)))
            .map_err(|e| ApiError::bad(runtime::secrets::scrub_text(&e)))?
            .0;
        probe.set_breakpoints(spec.breakpoints.clone()).map_err(|e| ApiError::new(422, e))?;
        drop(probe);
        self.sdb.add_run(&RunRow {
            run_id: spec.run_id.clone(),
            thread_id: spec.thread_id.clone(),
            assistant_id: a.assistant_id.clone(),
            created_ms: runtime::events::now_ms() as i64,
            metadata: spec.metadata.clone(),
            started_by: spec.who.clone(),
        })?;
        let body = StartReq {
            file: rel,
            agent: a.agent.clone(),
            input: spec.input.clone(),
            state: spec.state.clone(),
            live: self.llm == LlmMode::Live,
            breakpoints: spec.breakpoints.clone(),
            paused: spec.paused,
        };
        let id = spec.run_id.clone();
        self.block(async {
            let _: Value = self.call_async(&id, "run/send", Some(serde_json::to_value(&body).unwrap_or_default())).await?;
            // The run exists for the API once its workflow has its record (the first action).
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let rec: Option<RunRecord> = self.sql.one(&id, "record").await?;
                if rec.is_some() {
                    return Ok(());
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(ApiError::new(504, format!("run {id}: no worker took it up within 60 s (are workers registered with Restate?)")));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })?;
        self.changed(&id);
        Ok(())
    }

    fn answer(&self, run_id: &str, interrupt_id: Option<&str>, value: Value, who: &str) -> Result<(), ApiError> {
        let rec = self.must_record(run_id)?;
        let pending = log_answer(&self.sdb, &rec, false, interrupt_id, &value, who)?;
        let body = serde_json::to_value(AnswerReq { id: pending.id.clone(), value }).unwrap_or_default();
        if let Err(e) = self.call::<Value>(run_id, "answer", Some(body)) {
            self.sdb.forget_answer(run_id, &pending.id)?;
            return Err(e);
        }
        // The run is going on once its record says so (a watcher then sees it running).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            let r = self.must_record(run_id)?;
            if r.pending.as_ref().map(|p| &p.id) != Some(&pending.id) || r.status != "interrupted" {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.changed(run_id);
        Ok(())
    }

    fn cancel(&self, run_id: &str) -> Result<(), ApiError> {
        let rec = self.must_record(run_id)?;
        if !rec.resumable() {
            return Err(ApiError::conflict(format!("run {run_id} has ended ({})", rec.status)));
        }
        self.call::<Value>(run_id, "stop", None)?;
        self.changed(run_id);
        Ok(())
    }

    fn pause(&self, run_id: &str) -> Result<(), ApiError> {
        let rec = self.must_record(run_id)?;
        if rec.status != "ready" {
            return Err(ApiError::conflict(format!("run {run_id} is not running (it is {})", rec.status)));
        }
        self.call::<Value>(run_id, "pause", None)?;
        Ok(())
    }

    fn resume(&self, run_id: &str, how: Drive) -> Result<(), ApiError> {
        let rec = self.must_record(run_id)?;
        match rec.status.as_str() {
            "paused" => {}
            "ready" => return Err(ApiError::conflict(format!("run {run_id} is running; pause it first"))),
            "interrupted" => return Err(ApiError::conflict(format!("run {run_id} waits for an answer; answer it to go on"))),
            other => return Err(ApiError::conflict(format!("run {run_id} has ended ({other})"))),
        }
        let go = match how {
            Drive::Step => Go::Step,
            Drive::Continue => Go::Continue,
        };
        let before: u64 = self.block(self.sql.one(run_id, "hold"))?.unwrap_or(0);
        self.call::<Value>(run_id, "resume", Some(serde_json::to_value(go).unwrap_or_default()))?;
        // Returns once the workflow took it (its record says running): a client that looks
        // right after never sees the run still held where it was.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if self.block(self.sql.one::<u64>(run_id, "hold"))?.unwrap_or(0) > before {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    fn set_breakpoints(&self, run_id: &str, breakpoints: Vec<Breakpoint>) -> Result<(), ApiError> {
        let Some(row) = self.sdb.run(run_id)? else {
            return Err(ApiError::not_found(format!("no run {run_id}")));
        };
        let rec = self.must_record(run_id)?;
        if let Some(a) = self.assistants.find(&row.assistant_id) {
            let doc = model::doc::load_path(&a.file);
            check_nodes(&doc, rec.request.agent.as_deref(), &breakpoints)
                .map_err(|e| ApiError::new(422, format!("run {run_id} ({}): {}", row.assistant_id, e.message)))?;
        }
        self.call::<Value>(run_id, "set_breakpoints", Some(serde_json::to_value(&breakpoints).unwrap_or_default()))?;
        Ok(())
    }

    fn breakpoints(&self, run_id: &str) -> Result<Vec<Breakpoint>, ApiError> {
        Ok(self.block(self.sql.one(run_id, "breakpoints"))?.unwrap_or_default())
    }

    fn record(&self, run_id: &str) -> Result<Option<RunRecord>, ApiError> {
        self.block(self.sql.one(run_id, "record"))
    }

    fn summaries(&self, run_ids: &[String]) -> Result<HashMap<String, RunSummary>, ApiError> {
        self.block(self.sql.summaries(run_ids))
    }

    fn is_active(&self, run_id: &str) -> bool {
        self.record(run_id).ok().flatten().is_some_and(|r| r.status == "ready")
    }

    fn history(&self, run_id: &str) -> Result<Vec<HistoryRow>, ApiError> {
        let list: Vec<Hist> = self.block(self.sql.history(run_id))?;
        Ok(list
            .into_iter()
            .map(|h| HistoryRow { run_id: run_id.to_string(), step: h.step, state: h.state, next: h.next, created_ms: h.created_ms })
            .collect())
    }

    fn latest_history(&self, run_id: &str) -> Result<Option<HistoryRow>, ApiError> {
        Ok(self.history(run_id)?.into_iter().next())
    }

    fn events_after(&self, run_id: &str, after: u64, limit: usize) -> Result<Vec<(u64, String)>, ApiError> {
        let p = self.block(self.sql.poll(run_id, after, limit))?;
        Ok(p.items
            .into_iter()
            .filter_map(|i| match i {
                PollItem::Event { seq, line } => Some((seq, line)),
                PollItem::Values { .. } => None,
            })
            .take(limit)
            .collect())
    }

    fn watch(&self, run_id: &str) -> broadcast::Receiver<Notice> {
        let fresh = !self.channels.lock().unwrap_or_else(|p| p.into_inner()).contains_key(run_id);
        let tx = self.channel(run_id);
        let rx = tx.subscribe();
        if fresh {
            // From the run's last event now: what happens after the subscription is told.
            let after = self.block(self.sql.poll(run_id, u64::MAX, 0)).map(|p| p.last).unwrap_or(0);
            if let Some(me) = self.me.upgrade() {
                self.rt.spawn(watch_run(me, run_id.to_string(), tx, after));
            }
        }
        rx
    }

    fn watch_inbox(&self) -> broadcast::Receiver<InboxChange> {
        self.inbox.subscribe()
    }

    fn db(&self) -> &ServerDb {
        &self.sdb
    }
}

/// Tell one run's watchers what happens to it, until nobody watches.
async fn watch_run(engine: Arc<Restate>, run_id: String, tx: broadcast::Sender<Notice>, mut after: u64) {
    let mut was_settled: Option<bool> = None;
    loop {
        if tx.receiver_count() == 0 {
            let mut ch = engine.channels.lock().unwrap_or_else(|p| p.into_inner());
            if tx.receiver_count() == 0 {
                ch.remove(&run_id);
                return;
            }
        }
        let polled = engine.sql.poll(&run_id, after, 500).await;
        let Ok(p) = polled else {
            tokio::time::sleep(POLL).await;
            continue;
        };
        let more = p.last > after + p.items.iter().filter(|i| matches!(i, PollItem::Event { .. })).count() as u64;
        for item in p.items {
            match item {
                PollItem::Event { seq, line } => {
                    after = after.max(seq);
                    if let Ok(event) = serde_json::from_str::<runtime::events::Event>(&line) {
                        let _ = tx.send(Notice::Event { seq, event: Arc::new(event) });
                    }
                }
                PollItem::Values { step, state } => {
                    let _ = tx.send(Notice::Values { step, state: Arc::new(state) });
                }
            }
        }
        if more {
            continue;
        }
        let settled = p.record.as_ref().map(|r| r.status != "ready");
        if let Some(s) = settled {
            if s && was_settled != Some(true) {
                let _ = tx.send(Notice::Settled);
            }
            was_settled = Some(s);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Tell the inbox about runs whose status changed (looked at every [`INBOX_POLL`] for runs
/// that have not ended).
async fn inbox_watch(engine: Weak<Restate>) {
    let mut seen: HashMap<String, String> = HashMap::new();
    loop {
        tokio::time::sleep(INBOX_POLL).await;
        let Some(e) = engine.upgrade() else { return };
        if e.inbox.receiver_count() == 0 {
            continue;
        }
        let rows = match e.sdb.all_runs() {
            Ok(r) => r,
            Err(_) => continue,
        };
        for row in rows {
            if seen.get(&row.run_id).is_some_and(|s| matches!(s.as_str(), "completed" | "failed" | "stopped" | "abandoned")) {
                continue;
            }
            let rec: Result<Option<RunRecord>, ApiError> = e.sql.one(&row.run_id, "record").await;
            let Ok(Some(rec)) = rec else { continue };
            let key = format!("{}:{}", rec.status, rec.pending.as_ref().map(|p| p.id.as_str()).unwrap_or(""));
            if seen.get(&row.run_id) != Some(&key) {
                let first = !seen.contains_key(&row.run_id);
                seen.insert(row.run_id.clone(), if rec.resumable() { key } else { rec.status.clone() });
                if !first {
                    let _ = e.inbox.send(InboxChange { run_id: row.run_id.clone() });
                }
            }
        }
    }
}
