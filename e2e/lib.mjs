// Harness for the end-to-end tests and the benchmark: finds the built app and tauri-driver,
// starts tauri-driver (which starts WebKitWebDriver), opens WebDriver sessions on fresh app
// processes, and offers small helpers over the DOM hooks of docs/app-contract.md §4.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { remote } from 'webdriverio';

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

export function tmpDir(prefix = 'switchyard-e2e-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Starts tauri-driver; resolves once it answers /status. Recent files etc. go to a scratch config dir. */
export async function startDriver() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const log = fs.openSync(path.join(ARTIFACTS, 'tauri-driver.log'), 'w');
  const config = tmpDir('switchyard-e2e-config-');
  // Run traces of the debugger go here (the app reads SWITCHYARD_RUNS_DIR).
  const runsDir = tmpDir('switchyard-e2e-runs-');
  // Recovery files of dirty documents (never the user's own ~/.local/state).
  const recoveryDir = tmpDir('switchyard-e2e-recovery-');
  // The provider file (Settings) goes to the scratch config dir too: $XDG_CONFIG_HOME/switchyard/.
  const env = { ...process.env, XDG_CONFIG_HOME: config, NO_AT_BRIDGE: '1', SWITCHYARD_RUNS_DIR: runsDir, SWITCHYARD_RECOVERY_DIR: recoveryDir };
  delete env.SWITCHYARD_PROVIDERS;
  const child = spawn(findDriver(), ['--port', String(PORT), '--native-port', String(NATIVE_PORT)], {
    stdio: ['ignore', log, log],
    env,
  });
  let exited = null;
  child.on('exit', (code) => (exited = code));
  const deadline = Date.now() + 20000;
  for (;;) {
    if (exited !== null) throw new Error(`tauri-driver exited with ${exited}; see ${ARTIFACTS}/tauri-driver.log`);
    try {
      const r = await fetch(`http://127.0.0.1:${PORT}/status`);
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`tauri-driver did not answer on port ${PORT} within 20 s; see ${ARTIFACTS}/tauri-driver.log`);
    }
    await sleep(100);
  }
  return {
    config,
    runsDir,
    recoveryDir,
    async stop() {
      if (exited === null) {
        child.kill('SIGTERM');
        await new Promise((r) => (exited !== null ? r() : child.once('exit', r)));
      }
      fs.rmSync(config, { recursive: true, force: true });
      fs.rmSync(runsDir, { recursive: true, force: true });
      fs.rmSync(recoveryDir, { recursive: true, force: true });
    },
  };
}

/** A fresh app process (one WebDriver session), started with `args`. */
export async function launch(args = []) {
  const browser = await remote({
    hostname: '127.0.0.1',
    port: PORT,
    logLevel: process.env.E2E_LOG || 'error',
    connectionRetryCount: 0,
    connectionRetryTimeout: 60000,
    waitforTimeout: 10000,
    capabilities: {
      'tauri:options': { application: APP, args },
      'wdio:enforceWebDriverClassic': true,
    },
  });
  return browser;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `window.__switchyard` (the UI's test hook): `{ready, view}` or null before the first render. */
export async function hook(browser) {
  return browser.execute(() => window.__switchyard ?? null);
}

/** Waits until the UI is ready and (optionally) shows a document satisfying `pred(view)`. */
export async function waitForView(browser, pred = () => true, what = 'the document', timeout = 15000) {
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
    { timeout, interval: 100, timeoutMsg: `timed out waiting for ${what}` },
  );
  return last;
}

export function testid(id) {
  return `[data-testid="${id}"]`;
}

export function nodeSel(id) {
  return `[data-testid="node"][data-node-id="${id}"]`;
}

/** Waits until `read()` passes `pred`; returns the last value. For files on disk. */
export async function eventually(read, pred, what, timeout = 8000) {
  const deadline = Date.now() + timeout;
  let v;
  for (;;) {
    v = read();
    if (pred(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value:\n${String(v).slice(0, 2000)}`);
    await sleep(100);
  }
}

/** `switchyard graph FILE --format json` (the CLI the engine build produces). */
export function cliGraph(file) {
  if (!fs.existsSync(CLI)) return null;
  const r = spawnSync(CLI, ['graph', file, '--format', 'json'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`switchyard graph failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Copies `agents/<name>` into a scratch folder; returns its path. */
export function fixture(name) {
  const dir = tmpDir();
  fs.cpSync(path.join(ROOT, 'agents', name), path.join(dir, name), { recursive: true });
  return path.join(dir, name);
}

export async function screenshot(browser, name) {
  try {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await browser.saveScreenshot(path.join(ARTIFACTS, `${name}.png`));
  } catch {
    /* best effort */
  }
}

/** Names of the X windows on the display (xwininfo, from x11-utils); null when unavailable. */
export function windowTitles() {
  const r = spawnSync('xwininfo', ['-root', '-tree'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return null;
  return [...r.stdout.matchAll(/0x[0-9a-f]+ "([^"]*)"/g)].map((m) => m[1]);
}
