// Window tests of the debugger (issue 5): breakpoints, stepping, state diffs, state edits,
// interrupts of both dialects, rewind, conditional breakpoints, traces on disk. Registered by
// run.mjs; each test gets a fresh app on a scratch copy of its agent.
import fs from 'node:fs';
import path from 'node:path';
import { E2E, T, click, eventually, fixture, nodeSel, screenshot, press, testid, tmpDir, waitForView } from './lib.mjs';

function loopFixture() {
  const dir = path.join(tmpDir(), 'loop');
  fs.cpSync(path.join(E2E, 'fixtures', 'loop'), dir, { recursive: true });
  return path.join(dir, 'loop.yaml');
}

/** `window.__switchyard.debug`: {mode, state, step, steps, selectedStep, pending}. */
async function dbg(b) {
  return b.execute(() => (window.__switchyard && window.__switchyard.debug) || null);
}

async function waitDbg(b, pred, what, timeout = T.ui) {
  let last = null;
  await b.waitUntil(async () => {
    last = await dbg(b);
    return last !== null && pred(last);
  }, { timeout, interval: 50, timeoutMsg: `timed out waiting for the debugger: ${what}` }).catch((e) => {
    throw new Error(`${e.message}\n  last debugger state: ${JSON.stringify(last)}`);
  });
  return last;
}

async function attr(b, sel, name) {
  const el = await b.$(sel);
  if (!(await el.isExisting())) return null;
  return el.getAttribute(name);
}

async function bpDot(b, node) {
  return b.$(`${nodeSel(node)} ${testid('bp-dot')}`);
}

async function timelineNodes(b) {
  return b.execute(() => [...document.querySelectorAll('[data-testid="timeline-row"]')]
    .map((r) => [Number(r.getAttribute('data-step')), r.getAttribute('data-node'), r.getAttribute('data-status')]));
}

async function stateRow(b, p) {
  return b.execute((p) => {
    const r = document.querySelector(`[data-testid="state-row"][data-path="${p}"]`);
    return r ? { diff: r.getAttribute('data-diff') || '', text: r.textContent } : null;
  }, p);
}

async function showTab(b, tab) {
  await click(b, testid(`tab-${tab}`));
}

async function editState(b, key, json, assert) {
  await showTab(b, 'state');
  const row = await b.$(`[data-testid="state-row"][data-path="${key}"]`);
  await row.waitForExist({ timeout: T.ui });
  await row.moveTo();
  const btn = await row.$(testid('state-edit'));
  await btn.waitForClickable({ timeout: T.ui });
  await btn.click();
  const input = await b.$(testid('state-edit-input'));
  await input.waitForDisplayed({ timeout: T.ui });
  await input.clearValue();
  await input.setValue(json);
  await click(b, testid('state-edit-save'));
  await b.waitUntil(async () => !(await (await b.$(testid('state-edit-input'))).isExisting()), {
    timeout: T.ui, timeoutMsg: 'the state editor did not close after saving',
  });
  const err = await b.$(testid('state-edit-error'));
  assert(!(await err.isExisting()), 'no state edit error');
}

/**
 * Wait for the interrupt dialog of `kind`. Each poll queries the DOM afresh: a handle taken while
 * the previous dialog (same test id) was still mounted goes stale when it unmounts, and waiting on
 * it never succeeds (a CI flake on approval → input).
 */
async function answerDialog(b, kind) {
  let seen = null;
  await b.waitUntil(async () => {
    seen = await b.execute(() => {
      const d = document.querySelector('[data-testid="interrupt-dialog"]');
      return d && d.getClientRects().length > 0 ? d.getAttribute('data-kind') : null;
    });
    return seen === kind;
  }, { timeout: T.ui, interval: 100, timeoutMsg: `no ${kind} dialog after ${T.ui / 1000} s` }).catch(async (e) => {
    throw new Error(`${e.message} (showing: ${seen ?? 'no dialog'}; debugger: ${JSON.stringify(await dbg(b))})`);
  });
  return b.$(`[data-testid="interrupt-dialog"][data-kind="${kind}"]`);
}

async function typeAnswer(b, text) {
  const input = await b.$(testid('interrupt-answer'));
  await input.waitForDisplayed({ timeout: T.ui });
  await input.clearValue();
  if (text) await input.setValue(text);
  await click(b, testid('interrupt-submit'));
}

/** A Loki parent whose `delegate` node runs the agent `child` (e2e/fixtures/nested). */
function nestedFixture() {
  const dir = path.join(tmpDir(), 'nested');
  fs.cpSync(path.join(E2E, 'fixtures', 'nested'), dir, { recursive: true });
  for (const f of ['lint.sh', 'tests.sh']) fs.chmodSync(path.join(dir, 'agents', 'child', f), 0o755);
  return path.join(dir, 'agents', 'parent');
}

export function registerDebugTests(test, { assert, assertEq }) {
  const loop = { setup: () => { const f = loopFixture(); return { args: [f], file: f }; } };
  const nested = { setup: () => { const d = nestedFixture(); return { args: [d], file: path.join(d, 'graph.yaml') }; } };

  test('debugger: F11 steps into a Loki agent node: its graph and state, a step and an edit inside, Shift+F11 back out', async ({ b }) => {
    await waitForView(b, (v) => v.dialect === 'loki' && v.nodes.some((n) => n.id === 'delegate'));
    // Stop before the agent node, then step into it.
    await (await bpDot(b, 'delegate')).click();
    await press(b, 'F5');
    await waitDbg(b, (d) => d.state === 'paused', 'paused at the breakpoint on delegate');
    await press(b, 'F11');
    await waitDbg(b, (d) => d.nested && d.nested.due && d.nested.due[0] === 'lint', 'paused inside the nested run before lint');
    const view = await b.$(testid('nested-view'));
    await view.waitForDisplayed({ timeout: T.ui });
    assertEq(await view.getAttribute('data-agent'), 'child', 'the nested agent');
    assert((await view.getAttribute('data-file')).endsWith(path.join('child', 'graph.yaml')), 'the nested agent file');
    const crumbs = await (await b.$(testid('nested-path'))).getText();
    assertEq(crumbs.replace(/\s+/g, ' ').trim(), 'parent › delegate › child', 'the breadcrumb');
    // The nested agent's graph, with the node about to run marked current.
    const current = await b.$('[data-testid="nested-view"] [data-testid="nested-node"][data-current="true"]');
    await current.waitForExist({ timeout: T.ui });
    assertEq(await current.getAttribute('data-node-id'), 'lint', 'lint is current in the nested graph');
    const ids = await b.execute(() => [...document.querySelectorAll('[data-testid="nested-view"] [data-testid="nested-node"]')].map((n) => n.getAttribute('data-node-id')).sort());
    assertEq(ids, ['done', 'lint', 'tests'], 'every node of the nested agent is drawn');
    // F10 steps inside the nested run: lint runs, tests is next, and the nested state shows lint's output.
    await press(b, 'F10');
    await waitDbg(b, (d) => d.nested && d.nested.due && d.nested.due[0] === 'tests', 'paused inside the nested run before tests');
    await b.waitUntil(async () => (await attr(b, '[data-testid="nested-view"] [data-testid="nested-node"][data-node-id="lint"]', 'data-run')) === 'visited',
      { timeout: T.ui, timeoutMsg: 'lint is not marked visited in the nested graph' });
    await showTab(b, 'state');
    await (await b.$(testid('state-nested-title'))).waitForDisplayed({ timeout: T.ui });
    await b.waitUntil(async () => ((await stateRow(b, 'lint')) || { text: '' }).text.includes('clean'),
      { timeout: T.ui, timeoutMsg: 'the nested state does not show lint = clean' });
    // An edit of the nested state goes into the nested run.
    await editState(b, 'lint', '"patched in the debugger"', assert);
    await b.waitUntil(async () => ((await stateRow(b, 'lint')) || { text: '' }).text.includes('patched in the debugger'),
      { timeout: T.ui, timeoutMsg: 'the nested state does not show the edit' });
    await screenshot(b, 'debugger-nested');
    // Shift+F11: the nested run ends and the parent pauses before its next node.
    await press(b, 'Shift', 'F11');
    const d = await waitDbg(b, (d) => d.state === 'paused' && !d.nested, 'paused in the parent after stepping out');
    assertEq(d.step, 1, 'the agent node was the parent\'s first step');
    assert(!(await (await b.$(testid('nested-view'))).isExisting()), 'the nested view is gone');
    await b.waitUntil(async () => (await attr(b, nodeSel('wrap_up'), 'data-run')) === 'current', { timeout: T.ui, timeoutMsg: 'wrap_up is not current' });
    await press(b, 'F5');
    await waitDbg(b, (d) => d.state === 'finished', 'finished');
    assertEq(await attr(b, testid('dbg-status'), 'data-finished'), 'completed', 'completed');
    // The parent got the nested run's output, the edit made inside it included.
    await showTab(b, 'state');
    await b.waitUntil(async () => ((await stateRow(b, 'report')) || { text: '' }).text.includes('lint=patched in the debugger tests=green'),
      { timeout: T.ui, timeoutMsg: `the parent's state lacks the nested output: ${JSON.stringify(await stateRow(b, 'report'))}` });
  }, nested);

  test('debugger: a breakpoint (click and F9) and F5 runs to it', async ({ b }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'check'));
    const dot = await bpDot(b, 'check');
    await dot.waitForExist({ timeout: T.ui });
    await dot.click();
    await b.waitUntil(async () => (await dot.getAttribute('data-active')) === 'true', { timeout: T.ui, timeoutMsg: 'breakpoint dot not active' });
    // F9 on the selected node toggles a breakpoint too (here: on, then off again).
    await (await b.$(nodeSel('done'))).click();
    await press(b, 'F9');
    await b.waitUntil(async () => (await (await bpDot(b, 'done')).getAttribute('data-active')) === 'true', { timeout: T.ui, timeoutMsg: 'F9 did not set a breakpoint' });
    await press(b, 'F9');
    await b.waitUntil(async () => (await (await bpDot(b, 'done')).getAttribute('data-active')) !== 'true', { timeout: T.ui, timeoutMsg: 'F9 did not clear the breakpoint' });
    await press(b, 'F5');
    const d = await waitDbg(b, (d) => d.state === 'paused', 'paused at the breakpoint');
    assertEq(await attr(b, testid('dbg-status'), 'data-reason'), 'breakpoint', 'pause reason');
    assertEq(d.step, 2, 'setup and inc ran before check');
    await b.waitUntil(async () => (await attr(b, nodeSel('check'), 'data-run')) === 'current', { timeout: T.ui, timeoutMsg: 'check is not highlighted as current' });
    assertEq(await attr(b, nodeSel('inc'), 'data-run'), 'visited', 'inc visited');
    assertEq(await attr(b, nodeSel('inc'), 'data-steps'), '2', 'inc ran at step 2');
    const rows = await timelineNodes(b);
    assertEq(rows.map((r) => r[1]), ['setup', 'inc'], 'timeline rows');
  }, loop);

  test('debugger: F10 three times steps, moves the highlight and fills the timeline', async ({ b }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'check'));
    for (let i = 1; i <= 3; i++) {
      await press(b, 'F10');
      await waitDbg(b, (d) => d.state === 'paused' && d.step === i, `paused after step ${i}`);
      const rows = await timelineNodes(b);
      assertEq(rows.length, i, `${i} timeline rows`);
    }
    assertEq((await timelineNodes(b)).map((r) => r[1]), ['setup', 'inc', 'check'], 'the steps in order');
    // After check (count 1 < 5) the loop goes back to inc: inc is current, check visited.
    await b.waitUntil(async () => (await attr(b, nodeSel('inc'), 'data-run')) === 'current', { timeout: T.ui, timeoutMsg: 'inc is not current' });
    assertEq(await attr(b, nodeSel('check'), 'data-run'), 'visited', 'check visited');
    const reasons = await b.execute(() => [...document.querySelectorAll('[data-testid="edge-reason"][data-taken="true"]')].map((e) => e.textContent));
    assert(reasons.some((r) => r.includes('branch 2') && r.includes('state.count < 5')), `the taken branch is labelled: ${JSON.stringify(reasons)}`);
  }, loop);

  test('debugger: the state panel shows the diff of a set_state step', async ({ b }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'inc'));
    await press(b, 'F10');
    await waitDbg(b, (d) => d.state === 'paused' && d.step === 1, 'step 1');
    await press(b, 'F10');
    await waitDbg(b, (d) => d.state === 'paused' && d.step === 2, 'step 2');
    await showTab(b, 'state');
    await b.waitUntil(async () => (await stateRow(b, 'count'))?.diff === 'changed', { timeout: T.ui, timeoutMsg: 'count is not marked changed after inc' });
    const note = await stateRow(b, 'note');
    assert(note && note.diff === '', `note unchanged at step 2: ${JSON.stringify(note)}`);
    assert((await stateRow(b, 'count')).text.includes('1'), 'count is 1');
    // Selecting step 1 shows that step's diff: setup changed note.
    await showTab(b, 'timeline');
    await click(b, '[data-testid="timeline-row"][data-step="1"]');
    await showTab(b, 'state');
    await b.waitUntil(async () => (await stateRow(b, 'note'))?.diff === 'changed', { timeout: T.ui, timeoutMsg: 'note not marked changed at step 1' });
    await screenshot(b, 'debugger-state-diff');
  }, loop);

  test('debugger: editing state while paused changes the route; a sherma interrupt is answered', async ({ b }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'check'));
    await (await bpDot(b, 'check')).click();
    await press(b, 'F5');
    await waitDbg(b, (d) => d.state === 'paused', 'paused at check');
    await editState(b, 'mode', '"ask"', assert);
    await b.waitUntil(async () => ((await stateRow(b, 'mode'))?.text || '').includes('ask'), { timeout: T.ui, timeoutMsg: 'the edited value is not shown' });
    await click(b, testid('dbg-continue'));
    await answerDialog(b, 'interrupt');
    const prompt = await (await b.$(testid('interrupt-prompt'))).getText();
    assert(prompt.includes('Count is 1'), `the interrupt shows its value: ${prompt}`);
    assertEq(await attr(b, nodeSel('ask'), 'data-run'), 'current', 'ask is current while waiting');
    await typeAnswer(b, 'yes please');
    await waitDbg(b, (d) => d.state === 'finished', 'finished');
    assertEq(await attr(b, testid('dbg-status'), 'data-finished'), 'completed', 'completed');
    await showTab(b, 'timeline');
    const rows = (await timelineNodes(b)).map((r) => r[1]);
    assertEq(rows, ['setup', 'inc', 'check', 'ask', 'done'], 'the edited state routed to ask');
    await showTab(b, 'state');
    await b.waitUntil(async () => b.execute(() => [...document.querySelectorAll('[data-testid="message"]')].some((m) => m.textContent.includes('yes please'))),
      { timeout: T.ui, timeoutMsg: 'the answer is not in the conversation' });
  }, loop);

  test('debugger: rewind to step 2 and run a fork; the earlier run is kept', async ({ b }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'check'));
    await press(b, 'F5');
    const first = await waitDbg(b, (d) => d.state === 'finished', 'the first run finished');
    assertEq(first.step, 12, 'setup + 5 × (inc, check) + done');
    await showTab(b, 'timeline');
    await click(b, '[data-testid="timeline-row"][data-step="2"]');
    await click(b, testid('timeline-rewind'));
    await waitDbg(b, (d) => d.state === 'paused' && d.step === 2, 'paused after the rewind');
    assertEq((await timelineNodes(b)).length, 2, 'the timeline is cut back to step 2');
    await editState(b, 'count', '4', assert);
    await press(b, 'F5');
    const fork = await waitDbg(b, (d) => d.state === 'finished', 'the fork finished');
    assertEq(fork.step, 6, 'the fork: setup, inc, check(4), inc, check(5), done');
    const options = await b.execute(() => [...document.querySelectorAll('[data-testid="history-select"] option')].map((o) => o.textContent));
    assert(options.length >= 2, `the earlier run is kept to compare: ${JSON.stringify(options)}`);
    // Its states come from the engine, rebuilt from the run's trace as far as the run had gone
    // before the rewind (the trace goes on with the fork, where step 4 has count 5).
    await (await b.$(testid('history-select'))).selectByAttribute('value', '0');
    await showTab(b, 'timeline');
    await b.waitUntil(async () => (await timelineNodes(b)).length === 12, { timeout: T.ui, timeoutMsg: 'the earlier run is not shown' });
    await showTab(b, 'state');
    await b.waitUntil(async () => /"finished"/.test((await stateRow(b, 'note'))?.text || ''), { timeout: T.ui, timeoutMsg: "the earlier run's last state is not shown" });
    await showTab(b, 'timeline');
    await click(b, '[data-testid="timeline-row"][data-step="4"]');
    await showTab(b, 'state');
    await b.waitUntil(async () => {
      const r = await stateRow(b, 'count');
      return r?.diff === 'changed' && /\b2\b/.test(r.text) && !/\b5\b/.test(r.text);
    }, { timeout: T.ui, timeoutMsg: "step 4 of the earlier run does not show its own state (count 1 → 2)" });
  }, loop);

  test('debugger: a conditional breakpoint stops only on the third iteration', async ({ b }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'inc'));
    const dot = await bpDot(b, 'inc');
    await dot.waitForExist({ timeout: T.ui });
    await dot.doubleClick();
    const input = await b.$(testid('bp-condition'));
    await input.waitForDisplayed({ timeout: T.ui });
    await input.setValue('state.count ==');
    await b.keys('Enter');
    await (await b.$(testid('bp-error'))).waitForDisplayed({ timeout: T.ui });
    await input.clearValue();
    await input.setValue('state.count == 2');
    await b.keys('Enter');
    await b.waitUntil(async () => (await (await bpDot(b, 'inc')).getAttribute('data-conditional')) === 'true', { timeout: T.ui, timeoutMsg: 'the dot does not show a condition' });
    await press(b, 'F5');
    const d = await waitDbg(b, (d) => d.state === 'paused', 'paused at the conditional breakpoint');
    assertEq(d.step, 5, 'setup + 2 × (inc, check) ran first');
    assertEq(await attr(b, nodeSel('inc'), 'data-run'), 'current', 'inc is current');
    await showTab(b, 'state');
    await b.waitUntil(async () => /\b2\b/.test((await stateRow(b, 'count'))?.text || ''), { timeout: T.ui, timeoutMsg: 'count is not 2' });
    await press(b, 'F5');
    await waitDbg(b, (d) => d.state === 'finished', 'finished after continuing');
  }, loop);

  test('debugger: a past trace opens for review without running anything', async ({ b, runsDir }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'check'));
    await press(b, 'F5');
    await waitDbg(b, (d) => d.state === 'finished', 'the run finished');
    const [name] = await eventually(() => fs.readdirSync(runsDir).filter((f) => f.endsWith('.jsonl')), (l) => l.length === 1, 'the trace file');
    const file = path.join(runsDir, name);
    await eventually(() => fs.readFileSync(file, 'utf8'), (t) => t.includes('"run_finished"'), 'the complete trace');
    // A trace from the CLI's format with one line changed proves the UI shows the file, not the run.
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').filter((l) => !l.includes('"node":"done"'));
    const review = path.join(runsDir, 'review.jsonl');
    fs.writeFileSync(review, lines.join('\n') + '\n');
    await b.execute((p) => window.__switchyardTest.openTrace(p), review);
    const d = await waitDbg(b, (d) => d.mode === 'review', 'review mode');
    assertEq(d.steps, 11, 'the timeline of the trace (the `done` step was cut from the file)');
    await showTab(b, 'timeline');
    const rows = await timelineNodes(b);
    assertEq(rows.map((r) => r[1]).slice(0, 3), ['setup', 'inc', 'check'], 'rows from the trace');
    await click(b, '[data-testid="timeline-row"][data-step="2"]');
    await showTab(b, 'state');
    await b.waitUntil(async () => (await stateRow(b, 'count'))?.diff === 'changed', { timeout: T.ui, timeoutMsg: 'the state of a trace step is not shown' });
    const bad = path.join(runsDir, 'bad.jsonl');
    fs.writeFileSync(bad, '{"event":"run_started","run":"r","ts_ms":1}\nnot json\n');
    await b.execute((p) => window.__switchyardTest.openTrace(p), bad);
    await b.waitUntil(async () => b.execute(() => [...document.querySelectorAll('[data-testid="toast"]')].some((t) => /bad\.jsonl:2/.test(t.textContent))),
      { timeout: T.ui, timeoutMsg: 'a broken trace does not give a positioned error' });
  }, loop);

  test('debugger: Loki approval answered with an option; the trace is written', async ({ b, runsDir }) => {
    await waitForView(b, (v) => v.dialect === 'loki' && v.nodes.some((n) => n.id === 'approve'));
    await press(b, 'F5');
    await answerDialog(b, 'approval');
    const options = await b.execute(() => [...document.querySelectorAll('[data-testid="interrupt-option"]')].map((e) => e.getAttribute('data-option')));
    assertEq(options, ['ship', 'hold'], 'the options as buttons');
    const prompt = await (await b.$(testid('interrupt-prompt'))).getText();
    assert(prompt.includes('Lint is clean'), `the question is interpolated: ${prompt}`);
    await screenshot(b, 'debugger-approval');
    await click(b, '[data-testid="interrupt-option"][data-option="ship"]');
    await waitDbg(b, (d) => d.state === 'finished', 'finished');
    assertEq(await attr(b, testid('dbg-status'), 'data-finished'), 'completed', 'completed');
    assertEq(await attr(b, nodeSel('shipped'), 'data-run'), 'visited', 'shipped visited');
    assertEq([await attr(b, nodeSel('lint'), 'data-steps'), await attr(b, nodeSel('tests'), 'data-steps')], ['2', '2'],
      'the fan-out branches ran in the same (super-)step');
    const reasons = await b.execute(() => [...document.querySelectorAll('[data-testid="edge-reason"][data-taken="true"]')].map((e) => e.textContent));
    assert(reasons.some((r) => r.includes('ship')), `the route option is labelled: ${JSON.stringify(reasons)}`);
    const trace = await eventually(() => fs.readdirSync(runsDir).filter((f) => f.endsWith('.jsonl')), (l) => l.length === 1, 'one trace file');
    const lines = await eventually(() => fs.readFileSync(path.join(runsDir, trace[0]), 'utf8').trim().split('\n'),
      (l) => l.length > 0 && JSON.parse(l[l.length - 1]).event === 'run_finished', 'the trace to end with run_finished');
    assertEq(JSON.parse(lines[0]).event, 'run_started', 'the trace starts with run_started');
  }, { loki: true });

  test('debugger: Loki approval with free text goes to on_other; input validation fails, then passes', async ({ b }) => {
    await waitForView(b, (v) => v.dialect === 'loki' && v.nodes.some((n) => n.id === 'note'));
    await press(b, 'F5');
    await answerDialog(b, 'approval');
    await typeAnswer(b, 'later');
    await answerDialog(b, 'input');
    const input = await b.$(testid('interrupt-answer'));
    assertEq(await input.getValue(), 'No notes.', 'the default is pre-filled');
    await typeAnswer(b, 'no');
    await (await b.$(testid('interrupt-error'))).waitForDisplayed({ timeout: T.ui });
    const err = await (await b.$(testid('interrupt-error'))).getText();
    assert(/validation/i.test(err), `the refusal says why: ${err}`);
    assert(await (await b.$(testid('interrupt-dialog'))).isDisplayed(), 'the dialog stays open');
    await typeAnswer(b, 'Ship with a known-issues note.');
    await waitDbg(b, (d) => d.state === 'finished', 'finished');
    const reasons = await b.execute(() => [...document.querySelectorAll('[data-testid="edge-reason"][data-taken="true"]')].map((e) => e.textContent));
    assert(reasons.some((r) => r.includes('on_other')), `on_other is labelled: ${JSON.stringify(reasons)}`);
    assertEq(await attr(b, nodeSel('note'), 'data-run'), 'visited', 'note visited');
  }, { loki: true });
}

// ---------------------------------------------------------------------------------------------
// Issue 6 in the app: Settings (providers and keys), live runs without a key, record and replay.

/**
 * Set the values of React-controlled inputs, textareas and selects in one round trip (`{testid:
 * value}`): the native value setter, then the `input`/`change` event React listens to. Typing
 * character by character over WebDriver costs ~0.3 s per field.
 */
async function fill(b, values) {
  const missing = await b.execute((values) => {
    const out = [];
    for (const [id, value] of Object.entries(values)) {
      const el = document.querySelector(`[data-testid="${id}"]`);
      if (!el) {
        out.push(id);
        continue;
      }
      const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
      Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, value);
      el.dispatchEvent(new Event(el instanceof HTMLSelectElement ? 'change' : 'input', { bubbles: true }));
    }
    return out;
  }, values);
  if (missing.length) throw new Error(`fill: no element for ${missing.join(', ')}`);
}

async function providerRow(b, name) {
  const sel = `[data-testid="settings-provider"][data-name="${name}"]`;
  const row = await b.$(sel);
  await row.waitForExist({ timeout: T.ui });
  return row;
}

export function registerLiveTests(test, { assert, assertEq }) {
  test('settings: add a provider with a key; listed masked after reopening; the provider file is private', async ({ b, configDir }) => {
    const file = path.join(configDir, 'switchyard', 'providers.yaml');
    fs.rmSync(file, { force: true });
    await waitForView(b);
    await click(b, testid('settings-button'));
    await (await b.$(testid('settings-dialog'))).waitForDisplayed({ timeout: T.ui });
    await providerRow(b, 'openai');
    await click(b, testid('settings-add'));
    await (await b.$(testid('settings-form'))).waitForDisplayed({ timeout: T.ui });
    await fill(b, { 'settings-name': 'e2ebox', 'settings-base-url': 'http://127.0.0.1:9/v1', 'settings-key': 'sk-e2e-secret-key-5678', 'settings-models': 'qwen' });
    await click(b, testid('settings-save'));
    const msg = await b.$(testid('settings-message'));
    await msg.waitForDisplayed({ timeout: T.ui });
    const text = await msg.getText();
    const row = await providerRow(b, 'e2ebox');
    const source = await row.getAttribute('data-key-source');
    assert(source === 'file' || source === 'keyring', `the key is stored somewhere: ${source}`);
    // The file is written either way (the provider itself); only the user may read it.
    const mode = await eventually(() => (fs.existsSync(file) ? fs.statSync(file).mode & 0o777 : -1), (m) => m !== -1, 'the provider file');
    assertEq(mode.toString(8), '600', 'the provider file is readable by the user only');
    const yaml = fs.readFileSync(file, 'utf8');
    assert(yaml.includes('e2ebox') && yaml.includes('http://127.0.0.1:9/v1'), `the provider is in the file:\n${yaml}`);
    if (source === 'file') {
      // No secret service under Xvfb: the key went to the file, and the user was told where.
      assert(/not available/.test(text) && text.includes(file), `the message says where the key went: ${text}`);
      assert(yaml.includes('sk-e2e-secret-key-5678'), 'the key is in the private file');
      assertEq(await attr(b, testid('settings-keyring'), 'data-available'), 'false', 'the keyring is reported unavailable');
    } else {
      assert(!yaml.includes('sk-e2e-secret-key-5678'), 'a keyring key is not in the file');
    }
    // Closed, opened again with Ctrl+,: listed with the masked key, never the key itself.
    await click(b, testid('settings-close'));
    await (await b.$(testid('settings-dialog'))).waitForExist({ timeout: T.ui, reverse: true });
    await press(b, 'Control', ',');
    await (await b.$(testid('settings-dialog'))).waitForDisplayed({ timeout: T.ui });
    const again = await providerRow(b, 'e2ebox');
    const masked = await (await again.$(testid('settings-provider-key'))).getText();
    assertEq(masked, 'sk-…5678', 'the masked key');
    const html = await b.execute(() => document.body.innerHTML);
    assert(!html.includes('sk-e2e-secret-key-5678'), 'the key is nowhere in the page');
  });

  test('live mode without a key: the run refuses with the variable to set and opens Settings', async ({ b }) => {
    if (process.env.OPENAI_API_KEY) return; // a real key in the environment would make a real call
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'answer'));
    await click(b, testid('dbg-config'));
    await (await b.$(testid('run-config'))).waitForDisplayed({ timeout: T.ui });
    await fill(b, { 'run-llm-mode': 'live' });
    const model = await b.$(`[data-testid="run-llm-model"][data-model="openai:gpt-4o-mini"]`);
    await model.waitForExist({ timeout: T.ui });
    assertEq(await model.getAttribute('data-ready'), 'false', 'no key: not ready');
    await click(b, testid('run-config-run'));
    const err = await b.$(testid('run-config-error'));
    await err.waitForDisplayed({ timeout: T.ui });
    const text = await err.getText();
    assert(text.includes('OPENAI_API_KEY'), `the error names the variable: ${text}`);
    await click(b, testid('run-open-settings'));
    await (await b.$(testid('settings-dialog'))).waitForDisplayed({ timeout: T.ui });
  });

  test('record a scripted run to a cassette, then replay it with a different input: the divergence is shown', async ({ b, dir }) => {
    await waitForView(b, (v) => v.nodes.some((n) => n.id === 'answer'));
    const cassette = path.join(dir, 'agent.cassette.json');
    await click(b, testid('dbg-config'));
    await (await b.$(testid('run-config'))).waitForDisplayed({ timeout: T.ui });
    await fill(b, { 'run-input': 'Where is my order 1001?' });
    await click(b, testid('run-record'));
    assertEq(await (await b.$(testid('run-record-path'))).getValue(), 'agent.cassette.json', 'the default cassette path');
    await click(b, testid('run-config-run'));
    await waitDbg(b, (d) => d.state === 'interrupted', 'the recorded run waits at confirm');
    const recorded = await eventually(() => (fs.existsSync(cassette) ? JSON.parse(fs.readFileSync(cassette, 'utf8')) : null),
      (c) => c && c.exchanges && c.exchanges.length >= 3, 'the cassette with the LLM and tool exchanges');
    assert(recorded.exchanges.some((e) => e.kind === 'tool') && recorded.exchanges.some((e) => e.kind === 'llm'), 'LLM and tool exchanges are recorded');
    // Leave the question unanswered; the next start replaces this run.
    await answerDialog(b, 'interrupt');
    await click(b, testid('interrupt-cancel'));

    await click(b, testid('dbg-config'));
    await (await b.$(testid('run-config'))).waitForDisplayed({ timeout: T.ui });
    await fill(b, { 'run-llm-mode': 'replay', 'run-input': 'Where is my order 1002?' });
    await click(b, testid('run-record'));
    await click(b, testid('run-config-run'));
    await waitDbg(b, (d) => d.state === 'interrupted', 'the replayed run reaches confirm');
    await answerDialog(b, 'interrupt');
    await click(b, testid('interrupt-cancel'));
    const banner = await b.$(testid('replay-diverged'));
    await banner.waitForDisplayed({ timeout: T.ui });
    assertEq(await banner.getAttribute('data-node'), 'answer', 'diverged at answer');
    const bt = await banner.getText();
    assert(bt.includes('1002') && bt.includes('1001'), `was … now …: ${bt}`);
    await click(b, testid('replay-diverged-select'));
    await b.waitUntil(async () => (await (await b.$(testid('inspector-name'))).isExisting()) && (await (await b.$(testid('inspector-name'))).getValue()) === 'answer',
      { timeout: T.ui, timeoutMsg: 'the node was not selected' });
  });
}
