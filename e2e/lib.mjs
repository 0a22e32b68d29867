// Harness for the end-to-end tests and the benchmark: finds the built app and tauri-driver,
// starts tauri-driver (which starts WebKitWebDriver), opens WebDriver sessions on fresh app
// processes, and offers small helpers over the DOM hooks of docs/app-contract.md §4.
// Every wait polls a condition under a deadline of ready.mjs's `T` (README: "Readiness rules").
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { remote } from 'webdriverio';
import {
  Fatal, SESSION_ATTEMPTS, T, WaitTimeout, describeProcs, descendants, oneLine, poll, retry, signal, tagged, waitGone, waitGoneOrKill, waitPortFree,
} from './ready.mjs';

export { T, poll } from './ready.mjs';

export const E2E = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(E2E, '..');
const TARGET = process.env.CARGO_TARGET_DIR || path.join(os.homedir(), '.cache', 'switchyard-target');
export const APP = process.env.SWITCHYARD_APP || path.join(TARGET, 'debug', 'switchyard-app');
export const CLI = process.env.SWITCHYARD_CLI || path.join(TARGET, 'debug', 'switchyard');
const PORT = Number(process.env.E2E_PORT || 4444);
const NATIVE_PORT = PORT + 1;

export const ARTIFACTS = path.join(E2E, 'artifacts');

function which(cmd) {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir, cmd);
    if (dir && fs.existsSync(p)) return p;
  }
  return null;
}

export function findDriver() {
  const candidates = [
    process.env.TAURI_DRIVER,
    which('tauri-driver'),
    path.join(os.homedir(), '.cache', 'switchyard-tools', 'bin', 'tauri-driver'),
    path.join(os.homedir(), '.cargo', 'bin', 'tauri-driver'),
  ];
  return candidates.find((p) => p && fs.existsSync(p)) || null;
}

export function preflight() {
  const problems = [];
  if (!fs.existsSync(APP)) {
    problems.push(
      `the app is not built at ${APP}: run \`cargo build -p switchyard-app --features custom-protocol\` (or ./dev app), or set SWITCHYARD_APP`,
    );
  }
  if (!findDriver()) {
    problems.push(
      'tauri-driver is missing: `cargo install --locked tauri-driver --version 2.1.0 --root ~/.cache/switchyard-tools` (./dev test does this), or set TAURI_DRIVER',
    );
  }
  if (!which('WebKitWebDriver')) problems.push('WebKitWebDriver is missing: apt-get install webkit2gtk-driver');
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) {
    problems.push('no display: run under `xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" node run.mjs`');
  }
  if (problems.length) {
    for (const p of problems) console.error(`e2e: ${p}`);
    process.exit(2);
  }
}

/**
 * The shared conformance corpus, found as the Rust tests find it (`model::testdata`):
 * `$SWITCHYARD_CONFORMANCE`, else `shared/conformance` beside the repository or any folder above
 * it, else `/work/shared/conformance`. The first that exists wins; else the first candidate.
 */
export function conformanceDir() {
  const candidates = [];
  if (process.env.SWITCHYARD_CONFORMANCE) candidates.push(process.env.SWITCHYARD_CONFORMANCE);
  for (let dir = path.dirname(ROOT); ; dir = path.dirname(dir)) {
    candidates.push(path.join(dir, 'shared', 'conformance'));
    if (path.dirname(dir) === dir) break;
  }
  candidates.push('/work/shared/conformance');
  return candidates.find((c) => fs.existsSync(c)) ?? candidates[0];
}

export function tmpDir(prefix = 'switchyard-e2e-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** GET /status of tauri-driver (forwarded to WebKitWebDriver): `{up, ready, message}`; `ready` is
 * false while WebKitWebDriver holds a session (it serves one session at a time). */
async function driverStatus(timeout = 10000) {
  try {
    const r = await fetch(`http://127.0.0.1:${PORT}/status`, { signal: AbortSignal.timeout(timeout) });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) return { up: false, error: `HTTP ${r.status}` };
    const v = (body && body.value) || {};
    return { up: true, ready: v.ready !== false, message: v.message || '' };
  } catch (e) {
    return { up: false, error: (e.cause && e.cause.code) || e.name || oneLine(e) };
  }
}

const describeStatus = (s) =>
  !s ? 'no answer yet' : s.up ? `WebKitWebDriver ${s.ready ? 'has no session' : `still has a session (${s.message})`}` : `GET /status failed (${s.error})`;

/** The running driver (startDriver), which `launch` uses. */
let active = null;

/**
 * Starts tauri-driver (which starts WebKitWebDriver); resolves once GET /status answers with no
 * session. Recent files etc. go to a scratch config dir. Every process it starts, apps included,
 * carries SWITCHYARD_E2E_TAG in its environment: the harness knows which processes are its own
 * even after a kill -9 re-parents them.
 *
 * `rendering`: `'composited'` (the default) starts the apps with `SWITCHYARD_COMPOSITING=on`;
 * `'app-default'` leaves the choice to the app, which on a machine without a GPU render node
 * (this one, under Xvfb) turns WebKit's compositing off (src-tauri/src/startup.rs). WebKitWebDriver's
 * screenshots never answer in WebKit's non-composited mode (the request times out after 120 s),
 * so tests that take screenshots run composited, and `screenshot()` skips (with a line) when the
 * app is not.
 */
export async function startDriver({ rendering = 'composited' } = {}) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const logPath = path.join(ARTIFACTS, 'tauri-driver.log');
  fs.writeFileSync(logPath, '');
  const config = tmpDir('switchyard-e2e-config-');
  // Run traces of the debugger go here (the app reads SWITCHYARD_RUNS_DIR).
  const runsDir = tmpDir('switchyard-e2e-runs-');
  // Recovery files of dirty documents (never the user's own ~/.local/state).
  const recoveryDir = tmpDir('switchyard-e2e-recovery-');
  // The webview's own data (localStorage: the panes the window remembers, ui/src/panes.ts) goes
  // to a scratch $XDG_DATA_HOME; run.mjs empties it before each test, so every test starts as a
  // new user and a relaunch inside a test finds what the test left.
  const dataDir = tmpDir('switchyard-e2e-data-');
  const tag = `${process.pid}-${Date.now()}`;
  // The trust list (trusted folders, confirmed run manifests) of every app: a scratch file the
  // tests write before each launch (`writeTrust`), never the developer's own list.
  const trustFile = path.join(config, 'trust.json');
  // The "system browser" of external links (the app runs $SWITCHYARD_BROWSER with the URL as its
  // one argument): a script that appends each URL it gets to a file the tests read.
  const browserLog = path.join(config, 'browser-opened.txt');
  const browser = path.join(config, 'browser.sh');
  fs.writeFileSync(browser, `#!/bin/sh\nprintf '%s\\n' "$#:$1" >> '${browserLog}'\n`, { mode: 0o755 });
  // The provider file (Settings) goes to the scratch config dir too: $XDG_CONFIG_HOME/switchyard/.
  const env = {
    ...process.env, XDG_CONFIG_HOME: config, XDG_DATA_HOME: dataDir, NO_AT_BRIDGE: '1', SWITCHYARD_RUNS_DIR: runsDir, SWITCHYARD_RECOVERY_DIR: recoveryDir, SWITCHYARD_E2E_TAG: tag,
    SWITCHYARD_TRUST: trustFile, SWITCHYARD_BROWSER: browser,
  };
  delete env.SWITCHYARD_PROVIDERS;
  if (rendering === 'composited') {
    env.SWITCHYARD_COMPOSITING = 'on';
  } else {
    delete env.SWITCHYARD_COMPOSITING;
    delete env.WEBKIT_DISABLE_COMPOSITING_MODE;
  }
  screenshotsAnswer = rendering === 'composited' || hasRenderNode();

  let child = null;
  let exited = null;
  let restarts = 0;
  const ours = () => tagged('SWITCHYARD_E2E_TAG', tag);
  // Processes of apps (the app, its WebKit helpers, what it ran): everything of ours but the drivers.
  const appSide = () => ours().filter((p) => p.pid !== child?.pid && p.comm !== 'tauri-driver' && p.comm !== 'WebKitWebDriver');

  async function spawnDriver() {
    for (const port of [PORT, NATIVE_PORT]) {
      await waitPortFree(port, { what: `port ${port} to be free for tauri-driver (another tauri-driver running? set E2E_PORT)` });
    }
    const log = fs.openSync(logPath, 'a');
    const me = spawn(findDriver(), ['--port', String(PORT), '--native-port', String(NATIVE_PORT)], { stdio: ['ignore', log, log], env });
    fs.closeSync(log);
    child = me;
    exited = null;
    me.on('exit', (code, sig) => {
      if (child === me) exited = code ?? sig;
    });
    let last = null;
    await poll(async () => {
      if (exited !== null) throw new Fatal(`tauri-driver exited with ${exited} while starting; see ${logPath}`);
      last = await driverStatus();
      return last.up && last.ready;
    }, { what: `tauri-driver to answer GET /status on port ${PORT} (with WebKitWebDriver on ${NATIVE_PORT}) with no session`, timeout: T.driver, describe: () => `${describeStatus(last)}; see ${logPath}` });
  }

  /** Stops tauri-driver; no process of ours (WebKitWebDriver, apps) outlives it; both ports free. */
  async function shutdown() {
    if (child && exited === null) {
      child.kill('SIGTERM'); // tauri-driver kills WebKitWebDriver and exits
      try {
        await poll(() => exited !== null, { what: 'tauri-driver to exit after SIGTERM', timeout: T.exit });
      } catch (e) {
        if (!(e instanceof WaitTimeout)) throw e;
        child.kill('SIGKILL');
        await poll(() => exited !== null, { what: 'tauri-driver to exit after SIGKILL', timeout: T.exit });
      }
    }
    const left = ours();
    signal(left.map((p) => p.pid), 'SIGKILL');
    await waitGone(left, { what: 'the processes tauri-driver started (WebKitWebDriver, apps) to exit' });
    for (const port of [PORT, NATIVE_PORT]) await waitPortFree(port, { what: `port ${port} to be free after tauri-driver stopped` });
  }

  async function restart(why) {
    if (++restarts > 3) throw new Fatal(`tauri-driver needed a restart more than 3 times (now: ${why}); see ${logPath}`);
    console.error(`e2e: restarting tauri-driver: ${why}`);
    fs.appendFileSync(logPath, `\n--- e2e: restarting tauri-driver: ${why}\n`);
    try {
      await shutdown();
      await spawnDriver();
    } catch (e) {
      throw e instanceof Fatal ? e : new Fatal(`restarting tauri-driver failed: ${oneLine(e)}`);
    }
  }

  /**
   * Waits until the driver can take a new session: GET /status says WebKitWebDriver has no session,
   * and no process of an earlier app is left (after a session ends or the app is killed, the app's
   * WebKit helpers exit by themselves). Recovers what cannot clear by itself: app processes still
   * there after T.grace (at once with `abandon`, after a failed session attempt) are SIGKILLed; a
   * session whose app is gone (a POST /session the client gave up on) makes it restart the driver.
   */
  async function settle(what = 'the driver to be free for a new session', { abandon = false } = {}) {
    const t0 = Date.now();
    let killed = false;
    let staleSince = null;
    let last = { status: null, procs: [] };
    await poll(async () => {
      if (exited !== null) await restart(`tauri-driver exited with ${exited}`);
      const status = await driverStatus();
      const procs = appSide();
      last = { status, procs };
      if (status.up && status.ready && procs.length === 0) return true;
      if (procs.length && !killed && (abandon || Date.now() - t0 >= T.grace)) {
        killed = true;
        console.error(`e2e: SIGKILL to processes left by an earlier app: ${describeProcs(procs)}`);
        signal(procs.map((p) => p.pid), 'SIGKILL');
      }
      if (status.up && !status.ready && procs.length === 0) {
        staleSince ??= Date.now();
        if (Date.now() - staleSince >= T.stale) {
          await restart(`WebKitWebDriver keeps a session whose app is gone (${status.message})`);
          staleSince = null;
        }
      } else {
        staleSince = null;
      }
      return false;
    }, {
      what,
      timeout: T.settle,
      describe: () => `${describeStatus(last.status)}; app processes left: ${last.procs.length ? describeProcs(last.procs) : 'none'}`,
    });
  }

  await spawnDriver();
  const driver = {
    config,
    trustFile,
    browserLog,
    runsDir,
    recoveryDir,
    dataDir,
    settle,
    /** Live processes of apps started through this driver. */
    appProcesses: appSide,
    async stop() {
      if (active === driver) active = null;
      try {
        await shutdown();
      } finally {
        fs.rmSync(config, { recursive: true, force: true });
        fs.rmSync(runsDir, { recursive: true, force: true });
        fs.rmSync(recoveryDir, { recursive: true, force: true });
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
  active = driver;
  return driver;
}

/** Session-creation failures worth another attempt (the machine busy, the driver between sessions). */
const TRANSIENT_SESSION_ERROR = /timed out|timeout|ECONNREFUSED|ECONNRESET|EPIPE|UND_ERR|socket|fetch failed|Unable to connect|Failed to create session|session not created|Failed to connect to browser|Maximum number of active sessions|Request failed with error code|other side closed|Response has empty body|Could not parse response body/i;
/** …unless the app cannot start at all. */
const PERMANENT_SESSION_ERROR = /No such file or directory|Permission denied|Exec format error|Failed to match capabilities|Invalid capabilities|invalid argument/i;

export function transientSessionError(e) {
  if (e instanceof WaitTimeout || e instanceof Fatal) return false;
  const m = oneLine(e);
  return TRANSIENT_SESSION_ERROR.test(m) && !PERMANENT_SESSION_ERROR.test(m);
}

/**
 * A fresh app process (one WebDriver session), started with `args`, ready for a test:
 * 1. waits until the driver is free (no session, no process of the previous app left: `settle`);
 * 2. creates the session (POST /session starts the app) with a T.request timeout, retrying a
 *    transient failure (timeout, connection refused/reset, "Failed to connect to browser", …) after
 *    cleaning up what the failed attempt left, up to SESSION_ATTEMPTS attempts within T.session;
 * 3. unless `{ready: false}`, waits for the app's readiness marker (`waitForReady`).
 */
export async function launch(args = [], { ready = true } = {}) {
  const driver = active;
  if (!driver) throw new Error('launch(): start the driver first (startDriver)');
  const browser = await retry(async (n) => {
    if (n === 1) await driver.settle('no WebDriver session and no process of the previous app left, before creating a session');
    return remote({
      hostname: '127.0.0.1',
      port: PORT,
      logLevel: process.env.E2E_LOG || 'error',
      // Retries are ours (above): a retried POST /session must not leave a second app behind.
      connectionRetryCount: 0,
      connectionRetryTimeout: T.request,
      waitforTimeout: T.ui,
      capabilities: {
        'tauri:options': { application: APP, args },
        'wdio:enforceWebDriverClassic': true,
      },
    });
  }, {
    what: `creating a WebDriver session (starting ${path.basename(APP)}${args.length ? ` ${args.join(' ')}` : ''})`,
    attempts: SESSION_ATTEMPTS,
    deadline: T.session,
    transient: transientSessionError,
    between: () => driver.settle('the failed session attempt cleaned up (its app gone, no session left)', { abandon: true }),
    log: (m) => console.error(`e2e: ${m}`),
  });
  if (ready) {
    try {
      await waitForReady(browser);
    } catch (e) {
      await screenshot(browser, 'launch-not-ready');
      await browser.deleteSession().catch(() => {});
      throw e;
    }
  }
  return browser;
}

/**
 * The app's DOM readiness marker: `window.__switchyard.ready` (docs/app-contract.md §4), set once the
 * UI has its first view from the engine, asked for a recovery offer and loaded the recent files.
 */
export async function waitForReady(browser, timeout = T.ready) {
  let last = null;
  await poll(async () => {
    last = await browser.execute(() => ({
      readyState: document.readyState,
      app: !!document.querySelector('[data-testid="app"]'),
      hook: window.__switchyard ? { ready: window.__switchyard.ready, view: !!window.__switchyard.view } : null,
    }));
    return last.app && last.hook !== null && last.hook.ready === true;
  }, {
    what: 'the app to be ready ([data-testid="app"] rendered and window.__switchyard.ready)',
    timeout,
    describe: () => `last seen: ${JSON.stringify(last)}`,
  });
}

/**
 * Sends `sig` (SIGKILL) to the app process `pid` and waits until it is dead, then until its WebKit
 * helper processes (web and network processes, which notice the dead peer by themselves) have
 * exited too; any still there after T.grace are SIGKILLed.
 */
export async function killApp(pid, sig = 'SIGKILL') {
  const helpers = descendants(pid);
  process.kill(pid, sig);
  await waitGone([{ pid, comm: 'switchyard-app' }], { what: `the app (pid ${pid}) to die after ${sig}` });
  const killed = await waitGoneOrKill(helpers, { what: `the helper processes of the killed app (pid ${pid}) to exit` });
  if (killed.length) console.error(`e2e: SIGKILL to helpers of the killed app still running after ${T.grace / 1000} s: ${describeProcs(killed)}`);
}

/** Only for benchmarks and screenshots (letting a gesture or animation play); tests wait for conditions. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `window.__switchyard` (the UI's test hook): `{ready, view}` or null before the first render. */
export async function hook(browser) {
  return browser.execute(() => window.__switchyard ?? null);
}

/** Waits until the UI is ready and (optionally) shows a document satisfying `pred(view)`. */
export async function waitForView(browser, pred = () => true, what = 'the document', timeout = T.ui) {
  let last = null;
  await browser.waitUntil(
    async () => {
      last = await browser.execute(() => {
        const h = window.__switchyard;
        if (!h || !h.ready || !h.view) return null;
        return h.view;
      });
      return last !== null && pred(last);
    },
    { timeout, interval: 100, timeoutMsg: `timed out after ${timeout / 1000} s waiting for ${what}` },
  );
  return last;
}

export function testid(id) {
  return `[data-testid="${id}"]`;
}

/** Keys go to the document: take focus off any input first. */
export async function press(b, ...keys) {
  await b.execute(() => {
    const a = document.activeElement;
    if (a && a !== document.body && typeof a.blur === 'function') a.blur();
  });
  await b.keys(keys);
}

/** Click `sel` once it is clickable (readiness, not a fixed wait). */
export async function click(b, sel) {
  const el = await b.$(sel);
  await el.waitForClickable({ timeout: T.ui });
  await el.click();
}

/**
 * Clicks a debugger toolbar action that moves into its More ▾ menu when the toolbar is narrow
 * (`runs`, `connect`, `open-trace`): the button when it shows, else the menu's item.
 */
export async function toolbarAction(b, name) {
  const inline = await b.$(testid(`dbg-${name}`));
  await inline.waitForExist({ timeout: T.ui });
  if (await inline.isDisplayed()) return click(b, testid(`dbg-${name}`));
  await click(b, testid('dbg-more'));
  await click(b, testid(`dbg-more-${name === 'open-trace' ? 'trace' : name}`));
}

export function nodeSel(id) {
  return `[data-testid="node"][data-node-id="${id}"]`;
}

/** Waits until `read()` passes `pred`; returns the last value. For files on disk. */
export async function eventually(read, pred, what, timeout = T.disk) {
  let v;
  return poll(() => {
    v = read();
    return pred(v) ? { v } : false;
  }, { what, timeout, describe: () => `last value:\n${String(v).slice(0, 2000)}` }).then((r) => r.v);
}

/** `switchyard graph FILE --format json` (the CLI the engine build produces). */
export function cliGraph(file) {
  if (!fs.existsSync(CLI)) return null;
  const r = spawnSync(CLI, ['graph', file, '--format', 'json'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`switchyard graph failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** The run manifest of the agent at `p` (a file or an agent folder): `switchyard run P --manifest
 *  --format json` (`document`, `root`, `executes`, `hosts`, ..., `hash`); nothing runs. */
export function manifestOf(p) {
  if (!fs.existsSync(CLI)) {
    throw new Error(`the CLI is not built at ${CLI} (the tests trust their agents with the hashes of their run manifests); build it, or set SWITCHYARD_CLI`);
  }
  const r = spawnSync(CLI, ['run', path.resolve(p), '--manifest', '--format', 'json'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`switchyard run ${p} --manifest failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * Writes the trust list the app reads (`$SWITCHYARD_TRUST`, the driver's `trustFile`), replacing
 * what an earlier test left: `folders` trusted, and the current run manifest of each agent of
 * `agents` (files or agent folders) confirmed, as a user who trusted the folder and confirmed
 * what the agent runs would have it. No arguments: nothing is trusted (restricted mode).
 */
export function writeTrust(file, { folders = [], agents = [] } = {}) {
  const confirmed = {};
  for (const a of agents) {
    const m = manifestOf(a);
    confirmed[fs.realpathSync(m.document)] = m.hash;
  }
  const list = { folders: [...new Set(folders.map((f) => fs.realpathSync(f)))].sort(), confirmed };
  fs.writeFileSync(file, JSON.stringify(list, null, 2), { mode: 0o600 });
}

/** The scratch folder (a direct child of the system temp dir) that holds `p`, or null. */
export function scratchRoot(p) {
  const tmp = fs.realpathSync(os.tmpdir());
  const abs = fs.existsSync(p) ? fs.realpathSync(p) : path.resolve(p);
  const rel = path.relative(tmp, abs);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return null;
  return path.join(tmp, rel.split(path.sep)[0]);
}

/** Copies `agents/<name>` into a scratch folder; returns its path. */
export function fixture(name) {
  const dir = tmpDir();
  fs.cpSync(path.join(ROOT, 'agents', name), path.join(dir, name), { recursive: true });
  return path.join(dir, name);
}

/** Whether this machine has a GPU render node (the app composites with GL only then). */
export function hasRenderNode() {
  try {
    return fs.readdirSync('/dev/dri').some((f) => f.startsWith('renderD'));
  } catch {
    return false;
  }
}

/** False while the driver's apps run non-composited: WebKitWebDriver's screenshots hang then. */
let screenshotsAnswer = true;

export async function screenshot(browser, name) {
  if (!screenshotsAnswer) {
    console.log(`     (no screenshot ${name}: the app runs non-composited, where WebKitWebDriver's screenshots never answer)`);
    return;
  }
  try {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await browser.saveScreenshot(path.join(ARTIFACTS, `${name}.png`));
  } catch {
    /* best effort */
  }
}

/** Names of the X windows on the display (xwininfo, from x11-utils); null when unavailable. */
export function windowTitles() {
  // A UTF-8 locale, whatever the caller's: titles hold "•", which xwininfo cannot show in C/POSIX.
  const env = { ...process.env, LC_ALL: 'C.UTF-8' };
  const r = spawnSync('xwininfo', ['-root', '-tree'], { encoding: 'utf8', env });
  if (r.error || r.status !== 0) return null;
  return [...r.stdout.matchAll(/0x[0-9a-f]+ "([^"]*)"/g)].map((m) => m[1]);
}
