// Window tests of the studio attached to a server (issue 29 item 5): a loopback `switchyard
// serve` on a scratch copy of agents/ (the CLI at $SWITCHYARD_CLI), the app connected to it,
// a remote run opened in the debugger (its timeline and state from the server's event stream),
// answered from the app and finished; a run started from the app on the server, held at a
// canvas breakpoint and continued through the API. Registered by run.mjs.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { spawn } from 'node:child_process';
import { CLI, ROOT, T, click, poll, screenshot, testid, tmpDir, toolbarAction, waitForView } from './lib.mjs';

/** Polls the async `read` until `pred` holds (a deadline, no fixed sleeps). */
async function eventually(read, pred, what, timeout = T.ui) {
  let v;
  await poll(async () => pred((v = await read())), { what, timeout, describe: () => `last value: ${JSON.stringify(v).slice(0, 1500)}` });
  return v;
}

/** A `switchyard serve` on a copy of agents/; `stop()` ends it. */
async function startServer() {
  const dir = tmpDir('switchyard-remote-');
  const agents = path.join(dir, 'agents');
  fs.cpSync(path.join(ROOT, 'agents'), agents, { recursive: true });
  const log = path.join(dir, 'server.log');
  const out = fs.openSync(log, 'a');
  const child = spawn(CLI, ['serve', '--agents', agents, '--listen', '127.0.0.1:0', '--db', path.join(dir, 'server.sqlite')], {
    stdio: ['ignore', 'pipe', out],
    env: { ...process.env, SWITCHYARD_KEYRING: 'off', SWITCHYARD_PROVIDERS: path.join(dir, 'no-providers.yaml') },
  });
  let url = null;
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const m = /^listening on (\S+)/.exec(line);
    if (m) url = m[1].replace(/\/$/, '');
  });
  await poll(() => url || (child.exitCode !== null ? Promise.reject(new Error(`the server exited (${child.exitCode})`)) : null), {
    what: 'switchyard serve to say where it listens',
    timeout: T.request,
    describe: () => fs.readFileSync(log, 'utf8').slice(-2000),
  });
  const api = async (method, p, body) => {
    const r = await fetch(`${url}/${p}`, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(T.request),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} /${p}: ${r.status} ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : null;
  };
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await poll(() => child.exitCode !== null || child.signalCode !== null, { what: 'the server to exit', timeout: T.exit }).catch(() => child.kill('SIGKILL'));
    }
  };
  return { url, api, stop, log };
}

/** `window.__switchyard.debug` and the open document's path. */
async function dbg(b) {
  return b.execute(() => ({ ...(window.__switchyard?.debug ?? {}), path: window.__switchyard?.view?.path ?? null }));
}

async function waitDbg(b, pred, what, timeout = T.ui) {
  let last = null;
  await b.waitUntil(async () => pred((last = await dbg(b))), { timeout, interval: 100, timeoutMsg: `timed out waiting for the debugger: ${what}` }).catch((e) => {
    throw new Error(`${e.message}\n  last debugger state: ${JSON.stringify(last).slice(0, 800)}`);
  });
  return last;
}

async function connect(b, url) {
  await toolbarAction(b, 'connect');
  const input = await b.$(testid('connect-url'));
  await input.waitForDisplayed({ timeout: T.ui });
  await input.clearValue();
  await input.setValue(url);
  await click(b, testid('connect-submit'));
  await b.waitUntil(async () => !(await (await b.$(testid('connect-dialog'))).isExisting()), {
    timeout: T.ui,
    timeoutMsg: 'the connect dialog did not close (connection refused?)',
  }).catch(async (e) => {
    const err = await b.execute(() => document.querySelector('[data-testid="connect-error"]')?.textContent ?? null);
    throw new Error(`${e.message}: ${err}`);
  });
}

/** The nodes of the timeline's rows (a super-step's row names each of its nodes). */
async function timelineNodes(b) {
  const rows = await b.execute(() => [...document.querySelectorAll('[data-testid="timeline-row"]')].map((r) => r.getAttribute('data-node') ?? ''));
  return rows.flatMap((r) => r.split(/[\s,]+/).filter(Boolean));
}

export function registerRemoteTests(test, { assert }) {
  test('remote: a run on a loopback server opens in the debugger live, is answered from the app, and finishes', async ({ b }) => {
    const srv = await startServer();
    try {
      await waitForView(b);
      // A connection refused is said so.
      await toolbarAction(b, 'connect');
      const input = await b.$(testid('connect-url'));
      await input.waitForDisplayed({ timeout: T.ui });
      await input.setValue('http://127.0.0.1:9');
      await click(b, testid('connect-submit'));
      const err = await b.$(testid('connect-error'));
      await err.waitForDisplayed({ timeout: T.ui });
      assert(/cannot reach the server/.test(await err.getText()), `unreachable is said: ${await err.getText()}`);
      await click(b, testid('connect-cancel'));

      const { run_id: rid } = await srv.api('POST', 'runs', { assistant_id: 'release-gate', input: 'release 3.0' });
      await eventually(() => srv.api('GET', `switchyard/runs/${rid}`), (r) => r.status === 'interrupted', `run ${rid} waiting at its approval on the server`, T.ui);

      await connect(b, srv.url);
      await toolbarAction(b, 'runs');
      const row = `[data-testid="remote-run-row"][data-id="${rid}"]`;
      await (await b.$(row)).waitForDisplayed({ timeout: T.ui });
      assert((await (await b.$(row)).getAttribute('data-status')) === 'interrupted', 'the run is listed as waiting');
      const rowText = await b.execute((sel) => document.querySelector(sel)?.textContent ?? '', row);
      assert(rowText.includes('Ship it?'), `its question is shown: ${rowText}`);
      await click(b, `${row} [data-testid="remote-run-open"]`);

      // The canvas shows the assistant's graph, read-only and labelled remote; the timeline and
      // the state come from the server's event stream.
      const d = await waitDbg(b, (d) => d.state === 'interrupted' && d.pending != null && (d.steps ?? 0) >= 4, 'the remote run shown, waiting at its approval');
      assert(d.path?.startsWith('/switchyard-remote/'), `the remote document is open: ${d.path}`);
      const badge = await (await b.$(testid('dbg-remote'))).getText();
      assert(badge.includes('release-gate'), `the remote badge names the assistant: "${badge}"`);
      // Its scripts are on the server, not missing: no node carries an error badge.
      const badged = await b.execute(() => [...document.querySelectorAll('[data-errors]')].filter((n) => n.getAttribute('data-errors') !== '0').length);
      assert(badged === 0, `no node shows errors for the server's side files (${badged} do)`);
      await b.waitUntil(async () => {
        const n = await timelineNodes(b);
        return ['plan', 'lint', 'tests', 'summarise'].every((x) => n.includes(x));
      }, { timeout: T.ui, timeoutMsg: 'the timeline shows the remote run steps' });
      // The question is asked at once (the dialog); closed, the state panel is looked at first.
      await (await b.$(testid('interrupt-dialog'))).waitForDisplayed({ timeout: T.ui });
      await screenshot(b, 'remote-run-question');
      await click(b, testid('interrupt-cancel'));
      await click(b, testid('tab-state'));
      await (await b.$('[data-testid="state-row"][data-path="summary"]')).waitForExist({ timeout: T.ui });
      const restart = await b.$(testid('dbg-restart'));
      assert(!(await restart.isEnabled()), 'restart is off for a remote run');
      await screenshot(b, 'remote-run-waiting');

      // Answered from the app: the server's run goes on and completes.
      await click(b, testid('interrupt-reopen'));
      await click(b, '[data-testid="interrupt-option"][data-option="ship"]');
      await waitDbg(b, (d) => d.state === 'finished', 'the remote run finished');
      await eventually(() => srv.api('GET', `switchyard/runs/${rid}`), (r) => r.status === 'completed', `run ${rid} completed on the server`, T.ui);
      await click(b, testid('tab-timeline'));
      await b.waitUntil(async () => (await timelineNodes(b)).includes('shipped'), { timeout: T.ui, timeoutMsg: 'the timeline shows the step after the answer' });
      const status = await (await b.$(testid('dbg-status'))).getAttribute('data-finished');
      assert(status === 'completed', `the status says completed: ${status}`);
      const answers = (await srv.api('GET', `switchyard/runs/${rid}`)).answers ?? [];
      assert(answers.length === 1, `the server recorded one answer: ${JSON.stringify(answers)}`);
      await screenshot(b, 'remote-run-finished');
    } finally {
      await srv.stop();
    }
  });

  test('remote: a run started from the app on the server stops at a canvas breakpoint and continues through the API', async ({ b }) => {
    const srv = await startServer();
    try {
      await waitForView(b);
      await connect(b, srv.url);
      await toolbarAction(b, 'runs');
      await click(b, '[data-testid="remote-assistant-open"][data-id="release-gate"]');
      await waitForView(b, (v) => v.path.startsWith('/switchyard-remote/') && v.nodes.some((n) => n.id === 'summarise'), 'the remote assistant');
      const dot = await b.$('[data-testid="node"][data-node-id="summarise"] [data-testid="bp-dot"]');
      await dot.click();
      await b.waitUntil(async () => (await dot.getAttribute('data-active')) === 'true', { timeout: T.ui, timeoutMsg: 'the breakpoint was not set' });
      await click(b, testid('dbg-continue'));
      const d = await waitDbg(b, (d) => d.state === 'paused', 'the server run paused at the breakpoint');
      const runs = await srv.api('GET', 'switchyard/runs');
      assert(runs.length === 1, `one run on the server: ${runs.length}`);
      const rid = runs[0].run_id;
      assert(runs[0].status === 'paused', `paused on the server: ${runs[0].status}`);
      assert(runs[0].breakpoints.some((x) => x.node === 'summarise'), `the breakpoint went with the start: ${JSON.stringify(runs[0].breakpoints)}`);
      assert(!(await timelineNodes(b)).includes('summarise'), `paused before summarise (step ${d.step})`);
      await screenshot(b, 'remote-run-breakpoint');
      await click(b, testid('dbg-continue'));
      await waitDbg(b, (d) => d.state === 'interrupted', 'continued to the approval');
      await eventually(() => srv.api('GET', `switchyard/runs/${rid}`), (r) => r.status === 'interrupted', `run ${rid} waiting on the server`, T.ui);
      // The question is asked in the window too; closed, the run is stopped from the toolbar.
      await click(b, testid('interrupt-cancel'));
      await click(b, testid('dbg-stop'));
      await waitDbg(b, (d) => d.state === 'finished', 'the stopped run shown finished');
      await eventually(() => srv.api('GET', `switchyard/runs/${rid}`), (r) => r.status === 'stopped', `run ${rid} stopped on the server`, T.ui);
    } finally {
      await srv.stop();
    }
  });
}
