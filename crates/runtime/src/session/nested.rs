//! Pausing inside nested runs: a debugger's "step into" a sub-agent or a Loki agent node.
//!
//! A nested run (sherma `call_agent` / sub-agents as tools, a Loki `agent` node) runs to its end
//! inside one step of its parent ([`crate::session::run_nested`]). To stop between two of
//! its steps, the thread running it waits here: [`NestedGate::before_step`] is called before
//! every nested step and, when a pause is wanted at that depth, emits `nested_paused` (the nested
//! run's due nodes and whole state) and blocks until the user's next command arrives through
//! [`NestedGate::command`] (from the driver, on another thread). While it waits, the nested
//! run's state can be edited ([`NestedGate::edit`]); a fresh `nested_paused` follows.
//!
//! Depths: 1 is a child of the top-level run, 2 a grandchild. `pause_at` is the deepest depth a
//! pause is wanted at (0: none): "step into" wants any depth, "step" (over) the current depth,
//! "step out" the parent's depth. What happens at the top level (pausing after the parent's
//! step) is the driver's part: it raises the session's pause flag for step / step into / step
//! out and lowers it for continue (see `run::driver`).

use crate::events::{EventBody, PauseReason};
use super::{Cx, Machine};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::mpsc::Sender;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// What the user asks while a nested run is paused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NestedControl {
    /// Run on; no more pauses in nested runs (unless a pause is asked again).
    Continue,
    /// One step of this nested run (stepping over deeper ones), then pause again.
    Step,
    /// One step, pausing inside a deeper nested run if that step starts one.
    StepInto,
    /// Run the rest of this nested run; pause at the next step of its parent.
    StepOut,
    /// End the run (the session's stop flag is raised by the caller).
    Stop,
}

/// What [`NestedGate::before_step`] tells the nested run to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateDecision {
    Go,
    Stop,
}

/// Where a nested run is paused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NestedPause {
    /// The nested run's id (`<run>/<node>...`).
    pub run: String,
    pub depth: u32,
}

enum Command {
    Control(NestedControl),
    Edit { key: String, value: Value, reply: Sender<Result<(), String>> },
}

#[derive(Default)]
struct Inner {
    /// Pause before a nested step at this depth or shallower (0: never).
    pause_at: u32,
    waiting: Option<NestedPause>,
    commands: VecDeque<Command>,
    /// "Continue" was chosen inside a nested pause during this top-level step.
    continued: bool,
}

/// Shared by a session (through [`Cx`]), its nested runs and the driver. See the module docs.
#[derive(Default)]
pub struct NestedGate {
    inner: Mutex<Inner>,
    cv: Condvar,
    /// One nested pause at a time: parallel branches that both want to pause take turns.
    slot: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl NestedGate {
    pub fn new() -> NestedGate {
        NestedGate::default()
    }

    /// Pause before the next nested step at `depth` or shallower (`u32::MAX`: any; 0: none).
    pub fn set_pause_at(&self, depth: u32) {
        lock(&self.inner).pause_at = depth;
    }

    /// The top-level step is over: no pause is wanted any more. Returns whether the user chose
    /// "continue" inside a nested pause during that step (the driver then keeps running).
    pub fn reset(&self) -> bool {
        let mut g = lock(&self.inner);
        g.pause_at = 0;
        std::mem::take(&mut g.continued)
    }

    /// Where a nested run waits for the user, if one does.
    pub fn waiting(&self) -> Option<NestedPause> {
        lock(&self.inner).waiting.clone()
    }

    /// The user's command for the waiting nested run. `false` when none is waiting.
    pub fn command(&self, c: NestedControl) -> bool {
        let mut g = lock(&self.inner);
        if g.waiting.is_none() {
            return false;
        }
        g.commands.push_back(Command::Control(c));
        self.cv.notify_all();
        true
    }

    /// Change a value of the waiting nested run's state. `None` when none is waiting (the
    /// caller edits the top-level run instead).
    pub fn edit(&self, key: &str, value: Value, timeout: Duration) -> Option<Result<(), String>> {
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let mut g = lock(&self.inner);
            g.waiting.as_ref()?;
            g.commands.push_back(Command::Edit { key: key.to_string(), value, reply: tx });
            self.cv.notify_all();
        }
        Some(rx.recv_timeout(timeout).unwrap_or_else(|_| Err("the nested run did not take the edit in time".into())))
    }

    /// Called by a nested run before each of its steps (`cx` is the nested run's context,
    /// `top_node` the top-level node it runs inside). Returns at once unless a pause is wanted
    /// at this depth; otherwise waits for the user's command.
    pub fn before_step(&self, cx: &Cx<'_>, child: &mut dyn Machine, top_node: &str, steps_done: u64) -> GateDecision {
        let depth = cx.depth;
        {
            let g = lock(&self.inner);
            if g.pause_at == 0 || g.pause_at < depth {
                return GateDecision::Go;
            }
        }
        let _turn = lock(&self.slot);
        let reason = {
            let mut g = lock(&self.inner);
            // Another branch's pause may have been answered with "continue" meanwhile.
            if g.pause_at == 0 || g.pause_at < depth {
                return GateDecision::Go;
            }
            // Commands left from an earlier pause are not for this one.
            for c in g.commands.drain(..) {
                if let Command::Edit { reply, .. } = c {
                    let _ = reply.send(Err("the nested run moved on before the edit".into()));
                }
            }
            g.waiting = Some(NestedPause { run: cx.run.clone(), depth });
            if g.pause_at == u32::MAX { PauseReason::Requested } else { PauseReason::Step }
        };
        let paused = |child: &dyn Machine| EventBody::NestedPaused {
            node: top_node.to_string(),
            reason,
            step: steps_done,
            due: child.due(),
            agent: child.agent().to_string(),
            file: child.file(),
            state: child.state(),
            depth,
        };
        cx.emit(paused(child));
        let decision = loop {
            let cmd = {
                let mut g = lock(&self.inner);
                loop {
                    if cx.stopped() {
                        break None;
                    }
                    if let Some(c) = g.commands.pop_front() {
                        break Some(c);
                    }
                    g = self.cv.wait_timeout(g, Duration::from_millis(100)).unwrap_or_else(|p| p.into_inner()).0;
                }
            };
            match cmd {
                None => break GateDecision::Stop,
                Some(Command::Edit { key, value, reply }) => {
                    let r = child.edit_state(&key, value.clone());
                    if r.is_ok() {
                        cx.emit(EventBody::StateEdited { key, value });
                        cx.emit(paused(child));
                    }
                    let _ = reply.send(r);
                }
                Some(Command::Control(c)) => {
                    let mut g = lock(&self.inner);
                    match c {
                        NestedControl::Continue => {
                            g.pause_at = 0;
                            g.continued = true;
                        }
                        NestedControl::Step => g.pause_at = depth,
                        NestedControl::StepInto => g.pause_at = u32::MAX,
                        NestedControl::StepOut => g.pause_at = depth - 1,
                        NestedControl::Stop => {
                            g.pause_at = 0;
                            break GateDecision::Stop;
                        }
                    }
                    break GateDecision::Go;
                }
            }
        };
        lock(&self.inner).waiting = None;
        cx.emit(EventBody::NestedResumed {});
        decision
    }
}
