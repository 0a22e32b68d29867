// Window test of an LLLM agent run in the debugger (issue 32 item 3): a copy of
// tests/lllm_runs/parse_retry (an agent whose prompt wants <answer> tags, scripted replies that
// fail to parse twice, then parse) opens; the run configuration picks the agent, which draws its
// call loop below it; a breakpoint on `exception` stops the run there, a step shows the forked
// dialog in the state panel, and continuing stops again on the second failure, then completes.
// Registered by run.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, T, click, nodeSel, press, testid, tmpDir, waitForView } from './lib.mjs';

function parseRetryFixture() {
  const dir = path.join(tmpDir(), 'lllm-parse-retry');
  fs.cpSync(path.join(ROOT, 'tests', 'lllm_runs', 'parse_retry'), dir, { recursive: true });
  return path.join(dir, 'config.yaml');
}

async function dbg(b) {
  return b.execute(() => (window.__switchyard && window.__switchyard.debug) || null);
}

async function waitDbg(b, pred, what) {
  let last = null;
  await b.waitUntil(async () => {
    last = await dbg(b);
    return last !== null && pred(last);
  }, { timeout: T.ui, interval: 50, timeoutMsg: `timed out waiting for the debugger: ${what}` }).catch((e) => {
    throw new Error(`${e.message}\n  last debugger state: ${JSON.stringify(last)}`);
  });
  return last;
}

async function attr(b, sel, name) {
  const el = await b.$(sel);
  return (await el.isExisting()) ? el.getAttribute(name) : null;
}

/** The text of every state row at or below `key` (a list's items are rows of their own). */
async function stateTree(b, key) {
  return b.execute((k) => [...document.querySelectorAll('[data-testid="state-row"]')]
    .filter((r) => { const p = r.getAttribute('data-path') || ''; return p === k || p.startsWith(`${k}.`) || p.startsWith(`${k}[`); })
    .map((r) => `${r.getAttribute('data-path')}: ${r.textContent}`).join('\n'), key);
}

async function stateText(b, key) {
  return b.execute((k) => {
    const r = document.querySelector(`[data-testid="state-row"][data-path="${k}"]`);
    return r ? r.textContent : null;
  }, key);
}

export function registerLllmDebugTests(test, { assert, assertEq }) {
  const setup = { setup: () => { const f = parseRetryFixture(); return { args: [f], file: f }; } };

  test('LLLM run: the agent picked shows its call loop; a breakpoint on exception stops there, a step shows the forked dialog, continue completes', async ({ b }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'answerer'), 'the LLLM config');
    // The run configuration: the user message and the agent (drawn with its call loop).
    await click(b, testid('dbg-config'));
    const input = await b.$(testid('run-input'));
    await input.waitForDisplayed({ timeout: T.ui });
    await input.setValue('Capital of France?');
    await (await b.$(testid('run-agent'))).selectByAttribute('value', 'answerer');
    await waitForView(b, (v) => v.agent === 'answerer' && v.nodes.some((n) => n.id === 'exception'), 'the call loop of answerer');
    await click(b, testid('run-config-close'));
    // A breakpoint on the exception state.
    const dot = await b.$(`${nodeSel('exception')} ${testid('bp-dot')}`);
    await dot.waitForExist({ timeout: T.ui });
    await dot.click();
    await b.waitUntil(async () => (await dot.getAttribute('data-active')) === 'true', { timeout: T.ui, timeoutMsg: 'the breakpoint dot is not active' });
    await press(b, 'F5');
    let d = await waitDbg(b, (x) => x.state === 'paused', 'paused at the exception state');
    assertEq(await attr(b, testid('dbg-status'), 'data-reason'), 'breakpoint', 'pause reason');
    assertEq(d.step, 1, 'one invoke ran before it');
    await b.waitUntil(async () => (await attr(b, nodeSel('exception'), 'data-run')) === 'current', { timeout: T.ui, timeoutMsg: 'exception is not current' });
    // One step: the dialog is forked; the state panel shows the fork and that it is active.
    await press(b, 'F10');
    d = await waitDbg(b, (x) => x.state === 'paused' && x.step === 2, 'paused after the exception step');
    await click(b, testid('tab-state'));
    await b.waitUntil(async () => ((await stateText(b, 'active_dialog')) || '').includes('main.exception1'), {
      timeout: T.ui,
      timeoutMsg: `the active dialog is not the fork: ${await stateText(b, 'active_dialog')}`,
    });
    // Open the fork (the second dialog): its id and parent.
    await click(b, '[data-testid="state-row"][data-path="dialogs.1"] .jv-toggle');
    await b.waitUntil(async () => ((await stateTree(b, 'dialogs.1')) || '').includes('main.exception1'), { timeout: T.ui, timeoutMsg: `the fork's rows: ${await stateTree(b, 'dialogs.1')}` });
    const dialogs = (await stateTree(b, 'dialogs')) || '';
    assert(dialogs.includes('main.exception1') && dialogs.includes('"main"'), `the forked dialog and its parent in the state panel:\n${dialogs.slice(0, 2000)}`);
    // Continue: the second parse failure stops at the breakpoint again, then the run completes.
    await press(b, 'F5');
    d = await waitDbg(b, (x) => x.state === 'paused' && x.step === 3, 'paused at the second exception');
    await press(b, 'F5');
    await waitDbg(b, (x) => x.state === 'finished', 'finished');
    assertEq(await attr(b, testid('dbg-status'), 'data-finished'), 'completed', 'completed');
    const end = await attr(b, nodeSel('success'), 'data-run');
    assert(end === 'current' || end === 'visited', `success ran: ${end}`);
  }, setup);
}
