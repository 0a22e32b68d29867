//! The engine's async runtime. The engine itself is synchronous (a run is a state machine
//! stepped by its caller's thread); the parts that talk to the network (LLM providers, MCP
//! servers, A2A agents) are async and run on one shared tokio runtime. Callers wait for them
//! with [`block_on`] / [`block_on_until`], which work from any thread, including a thread that
//! is itself inside another tokio runtime (the desktop shell's commands), because the future is
//! spawned on this runtime and the caller only waits on a channel.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// The shared runtime (two worker threads: the work is I/O bound).
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("switchyard-io")
            .enable_all()
            .build()
            .expect("cannot start the I/O runtime (out of threads or file descriptors?)")
    })
}

/// Why [`block_on_until`] gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupted {
    /// The stop flag was raised; the future was dropped (its connections closed).
    Stopped,
    /// The deadline passed; the future was dropped.
    TimedOut,
}

/// Run `fut` on the shared runtime and wait for its output.
pub fn block_on<F>(fut: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match block_on_until(fut, None, None) {
        Ok(v) => v,
        Err(_) => unreachable!("no stop flag and no deadline"),
    }
}

/// Run `fut` on the shared runtime and wait for it, giving up as soon as `stop` is raised or
/// `deadline` passes. Giving up aborts the task, which drops the future at its next await
/// point: an HTTP request in flight is cancelled and its connection closed.
pub fn block_on_until<F>(fut: F, stop: Option<&AtomicBool>, deadline: Option<Instant>) -> Result<F::Output, Interrupted>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let task = runtime().spawn(async move {
        let out = fut.await;
        let _ = tx.send(out);
    });
    // Poll the flag every few milliseconds: cheap, and a stop is seen well within a frame.
    const TICK: Duration = Duration::from_millis(5);
    loop {
        let wait = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    task.abort();
                    return Err(Interrupted::TimedOut);
                }
                TICK.min(d - now)
            }
            None => TICK,
        };
        match rx.recv_timeout(wait) {
            Ok(v) => return Ok(v),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                    task.abort();
                    return Err(Interrupted::Stopped);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                // The task ended without sending: it panicked. Say so instead of hanging.
                panic!("an I/O task of the engine panicked (see the message above)");
            }
        }
    }
}

/// Like [`block_on_until`], for a future that also sends messages while it runs (streamed
/// text): `make` gets the sending half, and every message is handed to `on_msg` on the calling
/// thread as it arrives, in order. Messages still queued when the future ends are delivered
/// before its output is returned.
pub fn pump<T, F, Fut>(
    make: F,
    mut on_msg: impl FnMut(T),
    stop: Option<&AtomicBool>,
    deadline: Option<Instant>,
) -> Result<Fut::Output, Interrupted>
where
    T: Send + 'static,
    F: FnOnce(std::sync::mpsc::Sender<T>) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let (msg_tx, msg_rx) = std::sync::mpsc::channel::<T>();
    let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
    // The only sender of messages lives in the future: when the future ends it is dropped,
    // which wakes the wait below at once (no tick lost per call).
    let fut = make(msg_tx);
    let task = runtime().spawn(async move {
        let out = fut.await;
        let _ = done_tx.send(out);
    });
    const TICK: Duration = Duration::from_millis(5);
    let mut messages_over = false;
    loop {
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            task.abort();
            return Err(Interrupted::Stopped);
        }
        let mut wait = TICK;
        if let Some(d) = deadline {
            let now = Instant::now();
            if now >= d {
                task.abort();
                return Err(Interrupted::TimedOut);
            }
            wait = wait.min(d - now);
        }
        if messages_over {
            match done_rx.recv_timeout(wait) {
                Ok(v) => return Ok(v),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("an I/O task of the engine panicked (see the message above)");
                }
            }
        }
        match msg_rx.recv_timeout(wait) {
            Ok(m) => on_msg(m),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => messages_over = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn block_on_returns_the_output() {
        assert_eq!(block_on(async { 6 * 7 }), 42);
    }

    #[test]
    fn works_from_inside_another_runtime() {
        let other = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let v = other.block_on(async { block_on(async { "ok" }) });
        assert_eq!(v, "ok");
    }

    #[test]
    fn a_stop_drops_the_future_at_once() {
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicBool::new(false));
        struct Guard(Arc<AtomicBool>);
        impl Drop for Guard {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let g = Guard(dropped.clone());
        let s2 = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            s2.store(true, Ordering::Relaxed);
        });
        let t0 = Instant::now();
        let r = block_on_until(
            async move {
                let _g = g;
                tokio::time::sleep(Duration::from_secs(30)).await;
            },
            Some(&stop),
            None,
        );
        assert_eq!(r, Err(Interrupted::Stopped));
        assert!(t0.elapsed() < Duration::from_secs(2));
        // The abort is asynchronous: give the runtime a moment to drop the task.
        let d = Instant::now() + Duration::from_secs(2);
        while !dropped.load(Ordering::SeqCst) && Instant::now() < d {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(dropped.load(Ordering::SeqCst), "the future was dropped");
    }

    #[test]
    fn pump_delivers_messages_in_order_then_the_output() {
        let mut got = Vec::new();
        let out = pump(
            |tx| async move {
                for i in 0..5 {
                    tx.send(i).unwrap();
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                "done"
            },
            |m| got.push(m),
            None,
            None,
        );
        assert_eq!(out, Ok("done"));
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_deadline_times_out() {
        let r = block_on_until(
            async { tokio::time::sleep(Duration::from_secs(30)).await },
            None,
            Some(Instant::now() + Duration::from_millis(20)),
        );
        assert_eq!(r, Err(Interrupted::TimedOut));
    }
}
