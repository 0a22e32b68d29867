//! A run on its own thread, for front ends that must stay responsive (the desktop debugger).
//!
//! A [`Driver`] owns one [`RunSession`] on a worker thread. Front ends send it control commands
//! (continue, step, pause, stop, restart) and requests (answer, edit state, breakpoints, state at a
//! step, rewind); requests are served between steps, even while the run is going, because the
//! worker runs in short slices ([`RunSession::run_for`]). Events go out in batches through a
//! [`Sink`] — at most one batch per `flush_every`, and one at once whenever the status changes — and
//! into an optional JSONL trace (the same format as `switchyard run --trace`).
//!
//! Pause and stop do not wait for the worker: they set the session's flags, which the session
//! checks before every step (and a stop also inside long steps: scripts, LLM calls).
//!
//! Flow control ([`DriverOptions::window`]): a window that folds events slower than the run makes
//! them tells the driver what it has folded ([`Driver::ack`]); while more than `window` events are
//! sent and not folded, or waiting to be sent, the worker waits between slices instead of running
//! ahead. So a fast run of 100,000 steps never piles its events up in the webview faster than the
//! page takes them (a backlog the page held as parsed batches, and WebKit's allocators kept long
//! after). A window that stops acknowledging (closed, reloaded) does not stop the run: after
//! [`DriverOptions::stall`] (default [`STALL`]) without an acknowledgement the worker goes on unthrottled until the next one.

use crate::events::{Event, PauseReason, RunStatus};
use crate::session::{Breakpoint, CheckpointInfo, Pending, RunOptions, RunSession, Status};
use crate::nested::{NestedControl, NestedGate, NestedPause};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a debugger's buttons do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// Run until the end, a breakpoint, an interrupt, a pause or a stop.
    Continue,
    /// Run one step, then pause.
    Step,
    /// Pause before the next step.
    Pause,
    /// End the run (status `stopped`).
    Stop,
    /// Go back to step 0 and continue.
    Restart,
    /// Run one step, pausing inside a nested run (sub-agent, Loki agent node) if the step
    /// starts one; inside a nested run, one step that may pause in a deeper one.
    StepInto,
    /// Inside a nested run: run the rest of it, pause at its parent's next step. At the top
    /// level: continue.
    StepOut,
}

/// The session's status as the debugger shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct StatusInfo {
    /// `running | ready | paused | interrupted | finished`.
    #[ts(type = r#""running" | "ready" | "paused" | "interrupted" | "finished""#)]
    pub state: String,
    /// Steps completed.
    pub step: u64,
    /// Nodes due next.
    pub due: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PauseReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub output: Value,
    /// The failure that ended the run, or that paused it under break-on-error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<FailureInfo>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct FailureInfo {
    pub node: Option<String>,
    pub message: String,
}

/// Events (JSON, as in a trace) and, when it changed, the new status.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct Batch {
    pub run: String,
    /// Events as a trace holds them ([`Event`] as JSON).
    #[ts(as = "Vec<Event>")]
    pub events: Vec<Value>,
    pub status: Option<StatusInfo>,
}

/// Where batches go (the desktop shell emits them to the webview).
pub type Sink = Arc<dyn Fn(Batch) + Send + Sync>;

/// How to drive a run.
#[derive(Clone, Debug)]
pub struct DriverOptions {
    /// Write every event to this JSONL file.
    pub trace: Option<PathBuf>,
    /// What to do right after the start: `Continue`, `Step`, or nothing (`None`: wait).
    pub start: Option<Control>,
    /// The longest a batch of events waits before it is sent.
    pub flush_every: Duration,
    /// How long the worker runs steps before it looks at its requests again.
    pub slice: Duration,
    /// How long a request waits for the worker (a long step, such as an LLM call, holds it).
    pub request_timeout: Duration,
    /// Flow control: at most this many events sent and not yet acknowledged ([`Driver::ack`]),
    /// plus waiting to be sent, before the worker waits between slices. `None`: no flow control.
    pub window: Option<u64>,
    /// With a window: how long the worker waits for an acknowledgement before it runs on
    /// unthrottled (until the next one comes).
    pub stall: Duration,
}

impl Default for DriverOptions {
    fn default() -> Self {
        DriverOptions {
            trace: None,
            start: Some(Control::Continue),
            flush_every: Duration::from_millis(33),
            slice: Duration::from_millis(15),
            request_timeout: Duration::from_secs(5),
            window: None,
            stall: STALL,
        }
    }
}

type Reply<T> = Sender<Result<T, String>>;

enum Msg {
    Control(Control),
    Answer(String, Value, Reply<()>),
    EditState(String, Value, Reply<()>),
    Breakpoints(Vec<Breakpoint>, bool, Reply<()>),
    StateAt(u64, Reply<Value>),
    Rewind(u64, Reply<()>),
    Checkpoints(Reply<Vec<CheckpointInfo>>),
    Status(Reply<StatusInfo>),
}

/// How long the worker waits, by default, for a window that acknowledges nothing before it runs
/// on anyway.
pub const STALL: Duration = Duration::from_secs(2);

/// Events sent to the window and acknowledged by it (flow control).
#[derive(Default)]
struct Flow {
    counts: Mutex<FlowCounts>,
    acked: std::sync::Condvar,
}

#[derive(Default, Clone, Copy)]
struct FlowCounts {
    sent: u64,
    acked: u64,
}

/// Events waiting to be sent, and the trace file. One lock, so batches leave in order.
struct Outbox {
    run: String,
    events: Vec<Value>,
    flow: Arc<Flow>,
    trace: Option<std::io::BufWriter<std::fs::File>>,
    trace_error: Option<String>,
    sink: Sink,
}

impl Outbox {
    fn push(&mut self, ev: &Event) {
        let v = ev.to_value();
        if let Some(t) = &mut self.trace {
            let line = serde_json::to_string(&v).unwrap_or_default();
            // A file on disk: secret-shaped strings go too, as in cassettes.
            let line = crate::secrets::scrub_shapes(&line);
            if let Err(e) = writeln!(t, "{line}") {
                self.trace_error = Some(format!("writing the trace failed: {e}"));
                self.trace = None;
            }
        }
        self.events.push(v);
    }
    fn send(&mut self, status: Option<StatusInfo>) {
        if self.events.is_empty() && status.is_none() {
            return;
        }
        if status.is_some() {
            if let Some(t) = &mut self.trace {
                let _ = t.flush();
            }
        }
        let events = std::mem::take(&mut self.events);
        lock(&self.flow.counts).sent += events.len() as u64;
        (self.sink)(Batch { run: self.run.clone(), events, status });
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A run on a worker thread (see the module docs). Dropping the driver stops the run.
pub struct Driver {
    run: String,
    tx: Sender<Msg>,
    pause: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    running: Arc<AtomicBool>,
    alive: Arc<AtomicBool>,
    timeout: Duration,
    worker: Option<JoinHandle<()>>,
    flusher: Option<JoinHandle<()>>,
    trace: Option<PathBuf>,
    /// A durable run stops writing to its store once set (see [`Driver::keep_resumable`]).
    persist_off: Arc<AtomicBool>,
    durable: bool,
    /// Where a nested run waits while the user is stepped into it (`run::nested`).
    gate: Arc<NestedGate>,
    flow: Arc<Flow>,
}

impl Driver {
    /// Build the session with `build` (given options carrying this driver's listener and run id)
    /// and start driving it. `options` are completed with the listener; its `breakpoints`,
    /// `answers` and `break_on_error` are kept.
    pub fn start(
        build: impl FnOnce(RunOptions) -> Result<RunSession, String>,
        mut options: RunOptions,
        driver: DriverOptions,
        sink: Sink,
    ) -> Result<Driver, String> {
        let run = options.run_id.clone().unwrap_or_else(crate::session::new_run_id);
        options.run_id = Some(run.clone());
        options.keep_events = false;
        options.checkpoints = true;
        let trace = match &driver.trace {
            Some(p) => {
                if let Some(dir) = p.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                Some(std::io::BufWriter::new(
                    {
                        // Readable by the user only: a trace holds the run's states.
                        use std::os::unix::fs::OpenOptionsExt;
                        std::fs::OpenOptions::new()
                            .write(true)
                            .create(true)
                            .truncate(true)
                            .mode(0o600)
                            .open(p)
                            .map_err(|e| format!("cannot write the trace {}: {e}", p.display()))?
                    },
                ))
            }
            None => None,
        };
        let flow = Arc::new(Flow::default());
        let outbox = Arc::new(Mutex::new(Outbox { run: run.clone(), events: Vec::new(), flow: flow.clone(), trace, trace_error: None, sink }));
        let ob = outbox.clone();
        options.listener = Some(Arc::new(move |ev: &Event| lock(&ob).push(ev)));
        let gate = Arc::new(NestedGate::new());
        options.gate = Some(gate.clone());
        let session = build(options)?;
        let pause = session.pause_handle();
        let stop = session.stop_handle();
        let persist_off = session.persist_off_handle();
        let durable = session.is_durable();
        let running = Arc::new(AtomicBool::new(false));
        let alive = Arc::new(AtomicBool::new(true));
        let (tx, rx) = mpsc::channel();

        let flusher = {
            let outbox = outbox.clone();
            let alive = alive.clone();
            let every = driver.flush_every;
            std::thread::Builder::new()
                .name(format!("run-flush-{run}"))
                .spawn(move || {
                    while alive.load(Ordering::Relaxed) {
                        std::thread::sleep(every);
                        lock(&outbox).send(None);
                    }
                })
                .map_err(|e| format!("cannot start the run's event thread: {e}"))?
        };
        let worker = {
            let running = running.clone();
            let slice = driver.slice;
            let start = driver.start;
            let outbox = outbox.clone();
            let alive = alive.clone();
            let gate = gate.clone();
            let window = driver.window.map(|w| (flow.clone(), w, driver.stall));
            std::thread::Builder::new()
                .name(format!("run-{run}"))
                .spawn(move || {
                    Worker { session, rx, outbox, running, slice, last: None, go: false, stepping: false, gate, window, stalled: None }.serve(start);
                    alive.store(false, Ordering::Relaxed);
                })
                .map_err(|e| format!("cannot start the run's thread: {e}"))?
        };
        Ok(Driver {
            run,
            tx,
            pause,
            stop,
            running,
            alive,
            timeout: driver.request_timeout,
            worker: Some(worker),
            flusher: Some(flusher),
            trace: driver.trace,
            persist_off,
            durable,
            gate,
            flow,
        })
    }

    /// The window has folded `events` more of this run's events (flow control).
    pub fn ack(&self, events: u64) {
        let mut c = lock(&self.flow.counts);
        c.acked = (c.acked + events).min(c.sent);
        drop(c);
        self.flow.acked.notify_all();
    }

    pub fn run_id(&self) -> &str {
        &self.run
    }
    pub fn trace(&self) -> Option<&PathBuf> {
        self.trace.as_ref()
    }
    /// True while steps are being run.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }
    /// Whether the run writes its progress to a run store (a durable run).
    pub fn is_durable(&self) -> bool {
        self.durable
    }
    /// A durable run stops writing now, so the stop that ends this driver (the app closing,
    /// another run starting) is not saved: the store keeps the run as it was (paused,
    /// interrupted, or at its last step) and it can be resumed later. No effect otherwise.
    pub fn keep_resumable(&self) {
        self.persist_off.store(true, Ordering::Relaxed);
    }

    /// Where a nested run is paused for the user, if one is (its commands go to the gate).
    pub fn nested_pause(&self) -> Option<NestedPause> {
        self.gate.waiting()
    }

    pub fn control(&self, c: Control) {
        if self.gate.waiting().is_some() {
            // The worker is inside the parent's step, waiting in the nested run: the command
            // goes there. Stepping pauses the top level after that step; continuing does not.
            let nested = match c {
                Control::Continue => {
                    self.pause.store(false, Ordering::Relaxed);
                    NestedControl::Continue
                }
                Control::Step | Control::StepInto | Control::StepOut => {
                    self.pause.store(true, Ordering::Relaxed);
                    match c {
                        Control::Step => NestedControl::Step,
                        Control::StepInto => NestedControl::StepInto,
                        _ => NestedControl::StepOut,
                    }
                }
                // Already paused.
                Control::Pause => return,
                Control::Stop | Control::Restart => {
                    self.stop.store(true, Ordering::Relaxed);
                    NestedControl::Stop
                }
            };
            if self.gate.command(nested) {
                // A restart happens once the stopped step has ended.
                if c == Control::Restart {
                    let _ = self.tx.send(Msg::Control(c));
                }
                return;
            }
        }
        match c {
            // Flags first: they act between steps without waiting for the worker.
            Control::Pause => {
                if self.is_running() {
                    self.pause.store(true, Ordering::Relaxed);
                    // Inside a nested run, pause at its next step.
                    self.gate.set_pause_at(u32::MAX);
                }
            }
            Control::Stop => self.stop.store(true, Ordering::Relaxed),
            _ => {}
        }
        let _ = self.tx.send(Msg::Control(c));
    }

    fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Msg) -> Result<T, String> {
        if let Some(p) = self.gate.waiting() {
            return Err(format!(
                "the run is paused inside the nested run `{}`; step out (Shift+F11) or continue first",
                p.run
            ));
        }
        let (tx, rx) = mpsc::channel();
        self.tx.send(make(tx)).map_err(|_| "the run has ended; start it again".to_string())?;
        match rx.recv_timeout(self.timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "the run is busy in a long step (waited {} s); pause it or try again when the step ends",
                self.timeout.as_secs()
            )),
            Err(RecvTimeoutError::Disconnected) => Err("the run has ended; start it again".into()),
        }
    }

    /// Answer the pending interrupt; on success the run continues.
    pub fn answer(&self, id: &str, value: Value) -> Result<(), String> {
        self.ask(|r| Msg::Answer(id.to_string(), value, r))
    }
    /// Change a top-level state value (only while not running).
    /// Inside a nested pause, the nested run's value changes.
    pub fn edit_state(&self, key: &str, value: Value) -> Result<(), String> {
        if self.gate.waiting().is_some() {
            if let Some(r) = self.gate.edit(key, value.clone(), self.timeout) {
                return r;
            }
        }
        self.ask(|r| Msg::EditState(key.to_string(), value, r))
    }
    /// Replace the breakpoints (takes effect at once, also while running).
    pub fn set_breakpoints(&self, breakpoints: Vec<Breakpoint>, break_on_error: bool) -> Result<(), String> {
        self.ask(|r| Msg::Breakpoints(breakpoints, break_on_error, r))
    }
    /// The state after `step` steps.
    pub fn state_at(&self, step: u64) -> Result<Value, String> {
        self.ask(|r| Msg::StateAt(step, r))
    }
    /// Go back to the checkpoint after `step` and pause there.
    pub fn rewind(&self, step: u64) -> Result<(), String> {
        self.ask(|r| Msg::Rewind(step, r))
    }
    pub fn checkpoints(&self) -> Result<Vec<CheckpointInfo>, String> {
        self.ask(Msg::Checkpoints)
    }
    pub fn status(&self) -> Result<StatusInfo, String> {
        self.ask(Msg::Status)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Closing the channel ends the worker once its current step gives up.
        let (tx, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.tx, tx));
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        self.alive.store(false, Ordering::Relaxed);
        if let Some(f) = self.flusher.take() {
            let _ = f.join();
        }
    }
}

struct Worker {
    session: RunSession,
    rx: Receiver<Msg>,
    outbox: Arc<Mutex<Outbox>>,
    running: Arc<AtomicBool>,
    slice: Duration,
    /// The last status sent.
    last: Option<StatusInfo>,
    /// Keep running steps.
    go: bool,
    /// Inside a single step that may pause in a nested run (step into): shown as running.
    stepping: bool,
    gate: Arc<NestedGate>,
    /// Flow control: the counts and the most events unacknowledged (`DriverOptions::window`).
    window: Option<(Arc<Flow>, u64, Duration)>,
    /// The acknowledged count when the window stalled (no acknowledgement for `STALL`): no
    /// waiting until it changes.
    stalled: Option<u64>,
}

impl Worker {
    fn info(&self) -> StatusInfo {
        let s = &self.session;
        let error = s.last_failure().map(|(node, message)| FailureInfo { node: node.clone(), message: message.clone() });
        let mut info = StatusInfo {
            state: String::new(),
            step: s.steps(),
            due: s.due(),
            reason: None,
            pending: None,
            status: None,
            output: Value::Null,
            error: None,
        };
        if self.go || self.stepping {
            info.state = "running".into();
            return info;
        }
        match s.status() {
            Status::Ready => info.state = "ready".into(),
            Status::Paused { reason } => {
                info.state = "paused".into();
                info.reason = Some(*reason);
                if *reason == PauseReason::Error {
                    info.error = error;
                }
            }
            Status::Interrupted { pending } => {
                info.state = "interrupted".into();
                info.pending = Some(pending.clone());
            }
            Status::Finished { status, output } => {
                info.state = "finished".into();
                info.status = Some(*status);
                info.output = output.clone();
                if *status == RunStatus::Failed {
                    info.error = error;
                }
            }
        }
        // The output, the question and the error show no secret's value (src/secrets.rs).
        crate::secrets::global().serde(&info).unwrap_or(info)
    }

    /// Send pending events, with the status when it changed.
    fn publish(&mut self) {
        let info = self.info();
        let changed = self.last.as_ref() != Some(&info);
        let mut ob = lock(&self.outbox);
        if let Some(e) = ob.trace_error.take() {
            tracing::warn!("{e}");
        }
        ob.send(changed.then(|| info.clone()));
        drop(ob);
        self.last = Some(info);
    }

    fn set_go(&mut self, go: bool) {
        self.go = go;
        self.running.store(go, Ordering::Relaxed);
    }

    fn serve(mut self, start: Option<Control>) {
        self.publish();
        if let Some(c) = start {
            self.control(c);
        }
        loop {
            if self.go {
                // Serve what came in, then run the next slice.
                loop {
                    match self.rx.try_recv() {
                        Ok(m) => self.handle(m),
                        Err(mpsc::TryRecvError::Empty) => break,
                        Err(mpsc::TryRecvError::Disconnected) => return self.shut_down(),
                    }
                }
                if !self.go {
                    continue;
                }
                if !self.wait_for_window() {
                    continue;
                }
                let st = self.session.run_for(self.slice).clone();
                if !matches!(st, Status::Ready) {
                    self.gate.reset();
                    self.set_go(false);
                    self.publish();
                }
            } else {
                match self.rx.recv() {
                    Ok(m) => self.handle(m),
                    Err(_) => return self.shut_down(),
                }
            }
        }
    }

    /// Flow control: wait while the window is more than `window` events behind, serving
    /// requests meanwhile. False when a request stopped the run (`go` is off).
    fn wait_for_window(&mut self) -> bool {
        let Some((flow, window, stall)) = self.window.clone() else { return true };
        let pause = self.session.pause_handle();
        let stop = self.session.stop_handle();
        let mut since = Instant::now();
        let mut seen = lock(&flow.counts).acked;
        loop {
            let pending = lock(&self.outbox).events.len() as u64;
            let c = *lock(&flow.counts);
            if self.stalled.is_some_and(|a| a != c.acked) {
                self.stalled = None;
            }
            // A pause or stop acts now (the session sees its flag before the next step).
            if c.sent - c.acked + pending <= window || self.stalled.is_some() || pause.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                return true;
            }
            if c.acked != seen {
                seen = c.acked;
                since = Instant::now();
            } else if since.elapsed() >= stall {
                tracing::debug!("the window acknowledged no events for {} ms: running on", stall.as_millis());
                self.stalled = Some(c.acked);
                return true;
            }
            match self.rx.try_recv() {
                Ok(m) => {
                    self.handle(m);
                    if !self.go {
                        return false;
                    }
                    continue;
                }
                Err(mpsc::TryRecvError::Empty) => {}
                // The driver is gone: run_for sees the stop flag Drop set.
                Err(mpsc::TryRecvError::Disconnected) => return true,
            }
            let g = lock(&flow.counts);
            let _ = flow.acked.wait_timeout(g, Duration::from_millis(10));
        }
    }

    fn shut_down(mut self) {
        self.session.stop();
        self.set_go(false);
        self.publish();
    }

    fn control(&mut self, c: Control) {
        match c {
            Control::Continue => {
                if !self.session.status().is_finished() && !matches!(self.session.status(), Status::Interrupted { .. }) {
                    self.set_go(true);
                    self.publish();
                }
            }
            Control::Step | Control::StepInto => {
                if !self.go {
                    if c == Control::StepInto {
                        // The step may stop inside a nested run for as long as the user likes:
                        // the window is told the run is running until it does.
                        self.gate.set_pause_at(u32::MAX);
                        self.stepping = true;
                        self.publish();
                    }
                    self.session.step();
                    self.stepping = false;
                    self.after_step();
                }
            }
            // At the top level there is nothing to step out of.
            Control::StepOut => self.control(Control::Continue),
            Control::Pause => {
                // While running the flag does it; a leftover flag must not pause a later run.
                if !self.go {
                    self.session.pause_handle().store(false, Ordering::Relaxed);
                }
            }
            Control::Stop => {
                self.set_go(false);
                self.session.stop();
                self.publish();
            }
            Control::Restart => {
                self.session.pause_handle().store(false, Ordering::Relaxed);
                match self.session.rewind(0) {
                    Ok(()) => {
                        self.set_go(true);
                        self.publish();
                    }
                    Err(e) => tracing::warn!("restart failed: {e}"),
                }
            }
        }
    }

    /// After a single step: pauses asked from inside a nested run are over with it; a
    /// "continue" chosen there keeps the run going.
    fn after_step(&mut self) {
        self.session.pause_handle().store(false, Ordering::Relaxed);
        if self.gate.reset() && !self.session.status().is_finished() && matches!(self.session.status(), Status::Paused { .. }) {
            self.set_go(true);
        }
        self.publish();
    }

    fn not_running(&self, what: &str) -> Result<(), String> {
        if self.go { Err(format!("pause the run before you {what}")) } else { Ok(()) }
    }

    fn handle(&mut self, m: Msg) {
        match m {
            Msg::Control(c) => self.control(c),
            Msg::Answer(id, value, r) => {
                let res = self.not_running("answer").and_then(|_| self.session.answer(&id, value));
                if res.is_ok() {
                    self.set_go(true);
                }
                // The new status is out before the caller hears back.
                self.publish();
                let _ = r.send(res);
            }
            Msg::EditState(key, value, r) => {
                let res = self.not_running("change the state").and_then(|_| self.session.edit_state(&key, value));
                self.publish();
                let _ = r.send(res);
            }
            Msg::Breakpoints(bps, on_error, r) => {
                let res = self.session.set_breakpoints(bps);
                if res.is_ok() {
                    self.session.set_break_on_error(on_error);
                }
                let _ = r.send(res);
            }
            Msg::StateAt(step, r) => {
                // The state panel shows no secret's value (src/secrets.rs).
                let res = self
                    .session
                    .state_at(step)
                    .map(|mut v| {
                        crate::secrets::redact_value(&mut v);
                        v
                    })
                    .ok_or_else(|| format!("no state is kept for step {step} (the run has {} steps)", self.session.steps()));
                let _ = r.send(res);
            }
            Msg::Rewind(step, r) => {
                let res = self.not_running("rewind").and_then(|_| self.session.rewind(step));
                self.publish();
                let _ = r.send(res);
            }
            Msg::Checkpoints(r) => {
                let _ = r.send(Ok(self.session.checkpoints()));
            }
            Msg::Status(r) => {
                let _ = r.send(Ok(self.info()));
            }
        }
    }
}

/// Read a JSONL trace written by a run (`switchyard run --trace` or the app). Blank lines are
/// skipped; a bad line is an error naming the file and line.
pub fn read_trace(path: &std::path::Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the trace {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            format!("{}:{}:{}: not a trace event: {e}", path.display(), i + 1, e.column())
        })?;
        if v.get("event").and_then(Value::as_str).is_none() {
            return Err(format!(
                "{}:{}:1: not a trace event (no \"event\" key); traces come from `switchyard run --trace` or the app's runs folder",
                path.display(),
                i + 1
            ));
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(format!("{} holds no events", path.display()));
    }
    Ok(out)
}

/// Wait (polling) until `f` is true or `timeout` passes; for tests and benches.
pub fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    f()
}
