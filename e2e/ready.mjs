// Readiness helpers of the window tests: wait for a condition, never for a time. A deadline only
// bounds a wait; when it passes, the error says what was waited for and what was last seen.
// No side effects on import (node builtins only), so `ready.test.mjs` can test it without a display.
import fs from 'node:fs';
import net from 'node:net';

/** Deadlines (ms) of the waits. Generous: CI runs the window tests on a loaded 2-core machine. */
export const T = Object.freeze({
  driver: 120_000, // tauri-driver (and the WebKitWebDriver behind it) answers GET /status
  request: 120_000, // one WebDriver HTTP request, POST /session (starting the app) included
  session: 180_000, // no new attempt to create a session starts after this
  ready: 90_000, // after the session exists: window.__switchyard.ready
  settle: 120_000, // the driver free for the next session: no session, no process of an app left
  grace: 20_000, // processes of a closed or killed app may take this long to exit by themselves
  stale: 10_000, // WebKitWebDriver keeps a session whose app is gone this long: restart the driver
  exit: 30_000, // a process to die after a signal; a port to be free
  ui: 30_000, // a condition in the window (element shown, view or debugger state changed)
  disk: 30_000, // a file on disk
});

/** At most this many attempts to create one WebDriver session. */
export const SESSION_ATTEMPTS = 4;

/** A poll's deadline passed. */
export class WaitTimeout extends Error {}

/** An error a `poll` check throws to stop polling at once (others count as "not yet"). */
export class Fatal extends Error {}

const tick = (ms) => new Promise((r) => setTimeout(r, ms));
const secs = (ms) => (ms / 1000).toFixed(1);
export const oneLine = (e) => String((e && e.message) || e).split('\n').map((l) => l.trim()).filter(Boolean).join(' | ');

/**
 * Calls `check()` every `interval` ms until it returns a value other than undefined, null or false,
 * and returns that value. A `check` that throws counts as "not yet" (the error is reported if the
 * deadline passes), except `Fatal`, which is rethrown at once. After `timeout` ms: `WaitTimeout`
 * "timed out after N s waiting for <what>; <describe()>".
 */
export async function poll(check, { what, timeout, interval = 100, describe } = {}) {
  if (!what) throw new Error('poll: say what is waited for');
  if (!(timeout > 0)) throw new Error(`poll(${what}): a timeout is required`);
  const t0 = Date.now();
  let lastErr = null;
  for (;;) {
    try {
      const v = await check();
      lastErr = null;
      if (v !== undefined && v !== null && v !== false) return v;
    } catch (e) {
      if (e instanceof Fatal) throw e;
      lastErr = e;
    }
    const waited = Date.now() - t0;
    if (waited >= timeout) {
      let seen = '';
      try {
        seen = describe ? String(describe()) : '';
      } catch (e) {
        seen = `(describe failed: ${oneLine(e)})`;
      }
      if (lastErr) seen = `${seen ? `${seen}; ` : ''}last error: ${oneLine(lastErr)}`;
      throw new WaitTimeout(`timed out after ${secs(waited)} s waiting for ${what}${seen ? `; ${seen}` : ''}`);
    }
    await tick(Math.min(interval, Math.max(1, timeout - waited)));
  }
}

/**
 * Runs `attempt(n)` (n = 1, 2, …) until it resolves, and returns its value. A rejection is retried
 * when `transient(err)` is true, at most `attempts` attempts in all, and no attempt starts once
 * `deadline` ms have passed since the first; `between(err, n)` runs before each retry (clean-up that
 * waits for its own readiness condition). The final error lists every failed attempt.
 */
export async function retry(attempt, { what, attempts, deadline, transient = () => true, between = async () => {}, log = () => {} }) {
  const t0 = Date.now();
  const failures = [];
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (e) {
      const m = oneLine(e);
      failures.push(`attempt ${n} (after ${secs(Date.now() - t0)} s): ${m}`);
      const history = failures.length > 1 ? `\n  ${failures.join('\n  ')}` : '';
      if (!transient(e)) throw new Error(`${what} failed, not retried (not a transient failure): ${m}${history}`, { cause: e });
      if (n >= attempts || Date.now() - t0 >= deadline) {
        throw new Error(`${what} failed ${n} time(s) in ${secs(Date.now() - t0)} s (at most ${attempts} attempts, none started after ${secs(deadline)} s):\n  ${failures.join('\n  ')}`, { cause: e });
      }
      log(`${what}: attempt ${n} failed (${m}); retrying`);
      try {
        await between(e, n);
      } catch (e2) {
        throw new Error(`${what}: the clean-up after attempt ${n} failed: ${oneLine(e2)}\n  ${failures.join('\n  ')}`, { cause: e2 });
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Processes (Linux /proc) and ports.

/** `{pid, ppid, comm, state}` of a process, or null when there is none. */
export function procInfo(pid) {
  let s;
  try {
    s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const close = s.lastIndexOf(')');
  const rest = s.slice(close + 2).split(' ');
  return { pid: Number(pid), comm: s.slice(s.indexOf('(') + 1, close), state: rest[0], ppid: Number(rest[1]) };
}

/** Every process visible in /proc. */
export function processes() {
  const out = [];
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    const info = procInfo(p);
    if (info) out.push(info);
  }
  return out;
}

/** Dead: no such process, or a zombie (it has exited; only its parent's wait() is left). */
export function isGone(pid) {
  const info = procInfo(pid);
  return !info || info.state === 'Z' || info.state === 'X';
}

/** Live processes whose environment has `key=value` (a marker the harness gives what it starts). */
export function tagged(key, value) {
  const want = `${key}=${value}`;
  return processes().filter((p) => {
    if (p.state === 'Z' || p.state === 'X') return false;
    try {
      return fs.readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0').includes(want);
    } catch {
      return false;
    }
  });
}

/** The live descendants of `pid` (children, their children, …). */
export function descendants(pid) {
  const all = processes();
  const out = [];
  let frontier = [Number(pid)];
  while (frontier.length) {
    const next = all.filter((p) => frontier.includes(p.ppid) && p.state !== 'Z' && p.state !== 'X');
    out.push(...next);
    frontier = next.map((p) => p.pid);
  }
  return out;
}

export const describeProcs = (ps) => ps.map((p) => `${p.pid} ${p.comm}${p.state ? ` (${p.state})` : ''}`).join(', ');

export function signal(pids, sig = 'SIGKILL') {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  }
}

/** Waits until every one of `procs` (`{pid, comm}`) has exited. */
export async function waitGone(procs, { what, timeout = T.exit } = {}) {
  if (!procs.length) return;
  await poll(() => procs.every((p) => isGone(p.pid)), {
    what,
    timeout,
    describe: () => `still running: ${describeProcs(procs.filter((p) => !isGone(p.pid)).map((p) => procInfo(p.pid) || p))}`,
  });
}

/**
 * Waits up to `grace` ms for `procs` to exit by themselves, then SIGKILLs the ones left and waits
 * for them to be gone. Returns the processes that had to be killed.
 */
export async function waitGoneOrKill(procs, { what, grace = T.grace, timeout = T.exit } = {}) {
  try {
    await waitGone(procs, { what, timeout: grace });
    return [];
  } catch (e) {
    if (!(e instanceof WaitTimeout)) throw e;
  }
  const left = procs.filter((p) => !isGone(p.pid));
  signal(left.map((p) => p.pid), 'SIGKILL');
  await waitGone(left, { what: `${what} (after SIGKILL)`, timeout });
  return left;
}

/** True when nothing listens on `host:port` (a listener can be bound there now). */
export function portFree(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

export async function waitPortFree(port, { what, timeout = T.exit } = {}) {
  await poll(() => portFree(port), { what: what || `port ${port} to be free`, timeout });
}
