// End-to-end tests of the real Switchyard window: tauri-driver + WebKitWebDriver + WebdriverIO.
// Every test starts a fresh app process on a scratch copy of an example agent, drives the UI
// through the DOM hooks of docs/app-contract.md §4, and checks the DOM and the files on disk.
//
//   xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" node run.mjs [name-filter...]
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import {
  ROOT, T, cliGraph, eventually, fixture, hasRenderNode, hook, killApp, windowTitles, launch, nodeSel, preflight, screenshot, scratchRoot, startDriver, testid, waitForView, writeTrust,
} from './lib.mjs';
import { registerDebugTests, registerLiveTests } from './debug.mjs';
import { registerBundleTests } from './bundle.mjs';
import { registerCanvasTests } from './canvas.mjs';
import { registerRemoteTests } from './remote.mjs';
import { registerLaptopTests } from './laptop.mjs';
import { registerLllmTests } from './lllm.mjs';
import { registerLllmDebugTests } from './lllm-debug.mjs';
import { registerTrustTests } from './trust.mjs';
import { registerDiffTests } from './diff.mjs';
import { registerTestsPanelTests } from './tests-panel.mjs';
import { registerSaveCaseTests } from './save-case.mjs';
import { registerWebviewTests } from './webview.mjs';

const tests = [];
const test = (name, fn, opts = {}) => tests.push({ name, fn, ...opts });
function assert(cond, msg) {
  if (!cond) throw new Error(`assertion failed: ${msg}`);
}
function assertEq(a, b, msg) {
  if (JSON.stringify(a) !== JSON.stringify(b)) {
    throw new Error(`assertion failed: ${msg}\n  actual:   ${JSON.stringify(a)}\n  expected: ${JSON.stringify(b)}`);
  }
}
const read = (f) => fs.readFileSync(f, 'utf8');
const sherma = () => {
  const dir = fixture('support-triage');
  return { dir, file: path.join(dir, 'agent.yaml') };
};

async function selectNode(b, id) {
  const n = await b.$(nodeSel(id));
  await n.waitForDisplayed({ timeout: T.ui });
  await n.click();
  await b.waitUntil(async () => (await (await b.$(testid('inspector-name'))).isExisting()) &&
    (await (await b.$(testid('inspector-name'))).getValue()) === id, {
    timeout: T.ui, timeoutMsg: `the inspector did not show node ${id}`,
  });
}

async function typeAndEnter(b, sel, text) {
  const el = await b.$(sel);
  await el.waitForEnabled({ timeout: T.ui });
  await el.click();
  await el.clearValue();
  await el.setValue(text);
  await b.keys('Enter');
}

async function domNodeIds(b) {
  return b.execute(() => [...document.querySelectorAll('[data-testid="node"]')].map((e) => e.getAttribute('data-node-id')));
}

/** The OS window title (set by the shell after every command). Skipped without xwininfo. */
async function expectTitle(title) {
  if (windowTitles() === null) return;
  await eventually(() => windowTitles(), (t) => t.includes(title), `window title "${title}"`, T.ui);
}

async function clickSave(b) {
  await (await b.$(testid('save-button'))).click();
}

// ---------------------------------------------------------------------------------------------

test('smoke: the window opens without a document and shows the empty state', async ({ b }) => {
  await (await b.$(testid('app'))).waitForExist({ timeout: T.ui });
  await (await b.$(testid('empty-state'))).waitForExist({ timeout: T.ui });
  const h = await hook(b);
  assert(h && h.view === null, 'no view without a document');
}, { args: [] });

test('a command-line path that cannot be opened: the window says why, and shows the start screen', async ({ b }) => {
  await (await b.$(testid('empty-state'))).waitForExist({ timeout: T.ui });
  await b.waitUntil(async () => b.execute(() => [...document.querySelectorAll('[data-testid="toast"]')].some((t) => /Loading the document failed/.test(t.textContent) && /without graph\.yaml or config\.yaml/.test(t.textContent))),
    { timeout: T.ui, timeoutMsg: 'no error toast naming the folder' });
}, { setup: () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-e2e-notagent-'));
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not an agent');
  return { args: [dir], file: dir };
}, untrusted: true });

test('Open… shows the native file dialog (rfd / GTK) without blocking the window', async ({ b }) => {
  await (await b.$(testid('open-button'))).waitForExist({ timeout: T.ui });
  await (await b.$(testid('open-button'))).click();
  if (windowTitles() === null) return;
  await eventually(() => windowTitles(), (t) => t.includes('Open an agent'), 'the file dialog window', T.ui);
  // The webview keeps answering while the dialog is up (the command is async).
  assert((await hook(b)) !== null, 'the page still answers');
}, { args: [] });

test('open the sherma example: every node of `switchyard graph` is on the canvas', async ({ b, file }) => {
  const view = await waitForView(b, (v) => v.nodes.length > 0, 'the example agent');
  await b.waitUntil(async () => (await domNodeIds(b)).length === view.nodes.length, {
    timeout: T.ui, timeoutMsg: 'not every node of the view was rendered',
  });
  const dom = (await domNodeIds(b)).sort();
  assertEq(dom, view.nodes.map((n) => n.id).sort(), 'DOM nodes = view nodes');
  const g = cliGraph(file);
  if (g) assertEq(dom, g.nodes.map((n) => n.id).sort(), 'DOM nodes = `switchyard graph --format json` nodes');
  assert(view.file_name === 'agent.yaml' && view.dialect === 'sherma' && !view.dirty, 'view header');
  const err = await b.$$(testid('edge-label'));
  assert(err.length > 0, 'edge labels are drawn');
});

test('open a Loki agent folder: every node of `switchyard graph` is on the canvas', async ({ b, loki }) => {
  const view = await waitForView(b, (v) => v.nodes.length > 0, 'the Loki agent');
  assert(view.dialect === 'loki', `dialect loki, got ${view.dialect}`);
  await b.waitUntil(async () => (await domNodeIds(b)).length === view.nodes.length, {
    timeout: T.ui, timeoutMsg: 'not every node of the view was rendered',
  });
  const g = cliGraph(loki);
  if (g) assertEq((await domNodeIds(b)).sort(), g.nodes.map((n) => n.id).sort(), 'DOM nodes = CLI graph nodes');
  // The fitted graph starts below the pane toggles drawn over the canvas, and fits in it.
  await b.waitUntil(async () => {
    const r = await b.execute(() => {
      const toggles = document.querySelector('.pane-toggles').getBoundingClientRect();
      const canvas = document.querySelector('[data-testid="canvas"]').getBoundingClientRect();
      const tops = [...document.querySelectorAll('.react-flow__node')].map((n) => n.getBoundingClientRect());
      return { toggles: toggles.bottom, canvas: canvas.bottom, top: Math.min(...tops.map((t) => t.top)), bottom: Math.max(...tops.map((t) => t.bottom)) };
    });
    return r.top >= r.toggles && r.bottom <= r.canvas;
  }, { timeout: T.ui, timeoutMsg: 'the fitted graph is hidden under the pane toggles or runs off the canvas' });
}, { loki: true });

test('rename a node in the inspector and save: references renamed, comments kept', async ({ b, file }) => {
  const before = read(file);
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'count'));
  await selectNode(b, 'count');
  await typeAndEnter(b, testid('inspector-name'), 'tally');
  const v = await waitForView(b, (v) => v.nodes.some((n) => n.id === 'tally'), 'the renamed node');
  assert(v.dirty, 'dirty after rename');
  await (await b.$(nodeSel('tally'))).waitForExist({ timeout: T.ui });
  await expectTitle('agent.yaml • — Switchyard');
  await clickSave(b);
  const after = await eventually(() => read(file), (t) => t.includes('name: tally'), 'the rename on disk');
  assert(after.includes('target: tally') && after.includes('source: tally'), 'edges renamed');
  assert(!/\b(source|target|name): count\b/.test(after), 'no reference to the old name left');
  for (const line of before.split('\n').filter((l) => l.trim().startsWith('#'))) {
    assert(after.includes(line), `comment kept: ${line}`);
  }
  assertEq(after.replaceAll('tally', 'count'), before, 'only the name changed');
  await waitForView(b, (v) => !v.dirty, 'a clean document after save');
  await expectTitle('agent.yaml — Switchyard');
});

test('add a branch with a condition and save', async ({ b, file }) => {
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'count'));
  await selectNode(b, 'count');
  await (await b.$(testid('add-branch'))).click();
  await waitForView(b, (v) => v.edges.some((e) => e.from === 'count' && e.kind === 'branch'), 'the new branch');
  await typeAndEnter(b, testid('branch-condition-0'), 'state.turns > 5');
  await waitForView(b, (v) => v.edges.some((e) => e.from === 'count' && e.kind === 'branch' && e.label === 'state.turns > 5'),
    'the branch condition in the view');
  await clickSave(b);
  const after = await eventually(() => read(file), (t) => t.includes('state.turns > 5'), 'the branch on disk');
  const block = after.slice(after.indexOf('- source: count'), after.indexOf('- source: confirm'));
  assert(/branches:/.test(block) && /condition: .?state\.turns > 5/.test(block), `branch written under count:\n${block}`);
  assert(/default: confirm/.test(block), `routing kept through default:\n${block}`);
  // Labels are shortened on the canvas; the full condition is in the tooltip.
  const labels = await b.execute(() =>
    [...document.querySelectorAll('[data-testid="edge-label"]')].map((e) => `${e.getAttribute('title')}|${e.textContent}`));
  assert(labels.some((l) => l.includes('state.turns > 5')), `the condition is drawn as an edge label: ${labels}`);
});

test('a broken CEL condition shows an error badge on the node', async ({ b }) => {
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'confirm'));
  assertEq(await (await b.$(nodeSel('confirm'))).getAttribute('data-errors'), '0', 'no errors before');
  await selectNode(b, 'confirm');
  const input = await b.$(testid('branch-condition-1'));
  await input.click();
  await input.clearValue();
  await input.setValue('state.turns >= ');
  // Checked as you type (check_expr), before it is committed.
  await (await b.$(testid('branch-error-1'))).waitForExist({ timeout: T.ui });
  await b.keys('Enter');
  await waitForView(b, (v) => v.nodes.find((n) => n.id === 'confirm')?.errors > 0, 'a validation error on confirm');
  const node = await b.$(nodeSel('confirm'));
  await b.waitUntil(async () => Number(await node.getAttribute('data-errors')) > 0, { timeout: T.ui, timeoutMsg: 'data-errors' });
  await (await node.$(testid('node-badge'))).waitForExist({ timeout: T.ui });
  // The problems list is beside the source view, which opens when wanted: its toggle counts them.
  await (await b.$(testid('pane-toggle-source-count'))).waitForExist({ timeout: T.ui });
  await (await b.$(testid('pane-toggle-source'))).click();
  await (await b.$(testid('problems'))).waitForExist({ timeout: T.ui });
  await b.waitUntil(async () => (await b.$$(testid('problem'))).length > 0, { timeout: T.ui, timeoutMsg: 'the problems listed' }).catch(() => {});
  const problems = await b.$$(testid('problem'));
  assert(problems.length > 0, 'the problems list shows the error');
});

test('outside change on a clean document reloads it', async ({ b, file }) => {
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'answer'));
  const changed = read(file).replace('model_name: gpt-4o-mini', 'model_name: gpt-4.1-nano');
  fs.writeFileSync(file + '.tmp', changed);
  fs.renameSync(file + '.tmp', file); // an atomic save, as editors do
  const v = await waitForView(b, (v) => v.text === changed, 'the reloaded text', T.ui);
  assert(!v.dirty, 'clean after reload');
  const summary = () => b.execute((sel) => document.querySelector(sel)?.textContent ?? '', nodeSel('answer'));
  await b.waitUntil(async () => (await summary()).includes('gpt-4.1-nano'), {
    timeout: T.ui, timeoutMsg: 'the node summary follows the file',
  });
  assert(!(await (await b.$(testid('conflict-dialog'))).isExisting()), 'no conflict dialog for a clean document');
});

test('outside change on a dirty document shows the conflict dialog; Keep mine then save overwrites', async ({ b, file }) => {
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'count'));
  await selectNode(b, 'count');
  await typeAndEnter(b, testid('inspector-name'), 'tally');
  await waitForView(b, (v) => v.dirty && v.nodes.some((n) => n.id === 'tally'));
  const theirs = read(file).replace('# Support triage', '# Changed elsewhere. Support triage');
  fs.writeFileSync(file, theirs);
  await (await b.$(testid('conflict-dialog'))).waitForExist({ timeout: T.ui });
  await (await b.$(testid('conflict-keep'))).click();
  await (await b.$(testid('conflict-dialog'))).waitForExist({ timeout: T.ui, reverse: true });
  await clickSave(b);
  const after = await eventually(() => read(file), (t) => t.includes('name: tally'), 'our version on disk');
  assert(!after.includes('Changed elsewhere'), 'their change was overwritten by choice');
});

test('opening another file with unsaved changes is refused with a message; nothing is lost', async ({ b, file }) => {
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'count'));
  await selectNode(b, 'count');
  await typeAndEnter(b, testid('inspector-name'), 'tally');
  await waitForView(b, (v) => v.dirty && v.nodes.some((n) => n.id === 'tally'));
  const err = await b.executeAsync((p, done) => {
    window.__TAURI_INTERNALS__.invoke('open_path', { path: p }).then(() => done('opened'), (e) => done(e?.message ?? String(e)));
  }, file);
  assert(/unsaved changes/.test(err), `refused with a message, got: ${err}`);
  const v = await waitForView(b, (v) => v.dirty && v.nodes.some((n) => n.id === 'tally'), 'the edited document stays open');
  assert(v.file_name === 'agent.yaml', 'still the same document');
});

test('conflict dialog: Reload takes the disk version', async ({ b, file }) => {
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'count'));
  await selectNode(b, 'count');
  await typeAndEnter(b, testid('inspector-name'), 'tally');
  await waitForView(b, (v) => v.dirty);
  const theirs = read(file).replace('# Support triage', '# Changed elsewhere. Support triage');
  fs.writeFileSync(file, theirs);
  await (await b.$(testid('conflict-dialog'))).waitForExist({ timeout: T.ui });
  await (await b.$(testid('conflict-reload'))).click();
  const v = await waitForView(b, (v) => v.text === theirs, 'the disk version');
  assert(!v.dirty && v.nodes.some((n) => n.id === 'count'), 'clean, old name back');
  assertEq(read(file), theirs, 'nothing written');
});

test('undo back to the original bytes and save: the file is identical to the original', async ({ b, file }) => {
  const original = read(file);
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'count'));
  await selectNode(b, 'count');
  await typeAndEnter(b, testid('inspector-name'), 'tally');
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'tally'));
  await selectNode(b, 'tally');
  await (await b.$(testid('add-branch'))).click();
  await waitForView(b, (v) => v.edges.some((e) => e.from === 'tally' && e.kind === 'branch'));
  await clickSave(b);
  await eventually(() => read(file), (t) => t.includes('name: tally') && t.includes('branches'), 'the edits on disk');
  const undo = await b.$(testid('undo-button'));
  for (let i = 0; i < 20; i++) {
    const h = await hook(b);
    if (!h.view.can_undo) break;
    await undo.click();
    await b.waitUntil(async () => (await hook(b)).view.revision !== h.view.revision, { timeout: T.ui });
  }
  const v = await waitForView(b, (v) => !v.can_undo, 'the start of the undo history');
  assertEq(v.text, original, 'undo restores the text exactly');
  await clickSave(b);
  await eventually(() => read(file), (t) => t === original, 'the original bytes on disk');
  assert(Buffer.compare(fs.readFileSync(file), Buffer.from(original)) === 0, 'byte-identical');
});

/** The pid of the app process started on `file` (its command line names the scratch file). */
function appPid(file) {
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    let cmd = '';
    try {
      cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const argv = cmd.split('\0');
    if (path.basename(argv[0] || '') === 'switchyard-app' && argv.includes(file)) return Number(p);
  }
  return null;
}

test('kill -9 with unsaved changes: the next launch offers them; Restore brings them back, undoably', async ({ b, file, recoveryDir }) => {
  const original = read(file);
  await waitForView(b, (v) => v.nodes.some((n) => n.id === 'count'));
  await selectNode(b, 'count');
  await typeAndEnter(b, testid('inspector-name'), 'tally');
  await waitForView(b, (v) => v.dirty && v.nodes.some((n) => n.id === 'tally'));
  const recovered = () => fs.readdirSync(recoveryDir).filter((f) => f.endsWith('.yaml')).map((f) => read(path.join(recoveryDir, f))).join('');
  await eventually(recovered, (t) => t.includes('name: tally'), 'the recovery file (written ~1.5 s after the edit)', T.disk);
  const pid = appPid(file);
  assert(pid, 'found the app process');
  // SIGKILL, then wait until the app and its WebKit helper processes are really gone.
  await killApp(pid, 'SIGKILL');
  assertEq(read(file), original, 'the file on disk is untouched');
  await b.deleteSession().catch(() => {});

  // launch() waits until WebKitWebDriver holds no session and no process of the killed app is
  // left, retries a session creation that fails on a busy machine, and waits for the UI's ready.
  const b2 = await launch([file]);
  try {
    await waitForView(b2, (v) => v.path === file && v.nodes.some((n) => n.id === 'count'), 'the disk version');
    const banner = await b2.$(testid('recovery-banner'));
    await banner.waitForDisplayed({ timeout: T.ui });
    assert(!(await (await b2.$(testid('recovery-warning'))).isExisting()), 'no warning: the disk is the version the edits were made on');
    await (await b2.$(testid('recovery-restore'))).click();
    const v = await waitForView(b2, (v) => v.dirty && v.nodes.some((n) => n.id === 'tally'), 'the restored edits');
    assert(v.can_undo, 'restoring is undoable');
    await (await b2.$(testid('recovery-banner'))).waitForExist({ timeout: T.ui, reverse: true });
    await clickSave(b2);
    await eventually(() => read(file), (t) => t.includes('name: tally'), 'the restored edits saved');
    await eventually(recovered, (t) => t === '', 'the recovery file removed after the save', T.disk);
  } finally {
    await b2.deleteSession().catch(() => {});
  }
});

test('recent files: a file opened before is listed on the empty screen', async ({ b, file, relaunch }) => {
  await waitForView(b, (v) => v.nodes.length > 0);
  const b2 = await relaunch([]);
  // The list is fetched after the empty screen mounts: wait for its content, not just the element.
  const list = await b2.$(testid('recent-list'));
  await list.waitForExist({ timeout: T.ui });
  let text = '';
  await b2
    .waitUntil(async () => (text = await b2.execute((el) => el.textContent || '', list)).includes('agent.yaml'), { timeout: T.ui, interval: 100 })
    .catch(() => {});
  assert(text.includes('agent.yaml'), `recent list names the file: ${text}`);
  const items = await b2.$$(testid('recent-item'));
  await items[0].click();
  await waitForView(b2, (v) => v.path === file, 'the recent file opened');
});

test('bad input: hostile files open with positioned problems and the window stays responsive', async ({ b, dir }) => {
  await waitForView(b, (v) => v.nodes.length > 0);
  // The problems are listed beside the source view: open it (collapsed by default).
  await (await b.$(testid('pane-toggle-source'))).click();
  await (await b.$(testid('source-view'))).waitForExist({ timeout: T.ui });
  // The window may only open files inside the open project (README "Trust and safety"): the
  // corpus is copied into a project (a scratch folder with `.git`) around the open agent.
  const project = path.dirname(dir);
  fs.mkdirSync(path.join(project, '.git'));
  fs.cpSync(path.join(ROOT, 'tests', 'bad'), path.join(project, 'bad'), { recursive: true });
  // A spread of the committed corpus (every k-th file, both dialects, YAML and byte oddities)...
  const bad = path.join(project, 'bad');
  const all = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((x, y) => x.name.localeCompare(y.name))) {
      if (e.name.startsWith('_')) continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(e.name)) all.push(p);
    }
  };
  walk(bad);
  const step = Math.max(1, Math.floor(all.length / 24));
  const files = all.filter((_, i) => i % step === 0);
  // ... plus generated ones too big to commit: an alias bomb, 10,000-deep nesting, a 5 MB line.
  const gen = (name, text) => { const f = path.join(project, name); fs.writeFileSync(f, text); files.push(f); };
  let bomb = 'manifest_version: 1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
  for (let i = 1; i < 12; i++) bomb += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`;
  gen('alias-bomb.yaml', bomb + 'agents: {}\n');
  gen('deep.yaml', 'manifest_version: 1\nagents: ' + '['.repeat(10000) + ']'.repeat(10000) + '\n');
  gen('huge-line.yaml', `manifest_version: 1\nprompts:\n  - id: p\n    instructions: "${'x'.repeat(5_000_000)}"\nagents: {}\n`);
  const slow = [];
  for (const f of files) {
    const t0 = Date.now();
    // As the Open… dialog does once a file is picked.
    // The in-page wait ends before WebKitWebDriver's 30 s script timeout, with the page's toasts.
    const r = await b.executeAsync((p, deadline, done) => {
      const name = p.split('/').pop();
      const t0 = performance.now();
      window.__switchyardTest.openPath(p).then(() => {
        // The hook is refreshed after the next committed render.
        const check = () => {
          const v = window.__switchyard.view;
          if (v && v.path.endsWith(name)) return done({ ok: true, path: v.path, n: v.diagnostics.length });
          // Refused outright: the error toast says so at once (read it now: toasts fade away).
          const toasts = [...document.querySelectorAll('[data-testid="toast"]')].map((t) => t.textContent);
          const refusal = toasts.find((t) => t.includes(name));
          if (refusal) return done({ ok: false, err: refusal });
          if (performance.now() - t0 > deadline) {
            return done({ ok: false, err: [...document.querySelectorAll('[data-testid="toast"]')].map((t) => t.textContent).join(' | ') });
          }
          requestAnimationFrame(check);
        };
        check();
      }, (e) => done({ ok: false, err: e?.message ?? String(e) }));
    }, f, 20000);
    const took = Date.now() - t0;
    const label = path.relative(project, f);
    if (!r.ok) {
      // Refused outright (an I/O problem): the message must name the file.
      assert(r.err.includes(path.basename(f)), `${label}: the error names the file: ${r.err}`);
      continue;
    }
    assert(r.n > 0, `${label}: at least one problem`);
    let locs = null;
    await b.waitUntil(async () => {
      locs = await b.execute((p) => window.__switchyard.view?.path === p &&
        [...document.querySelectorAll('[data-testid="problem"] .loc')].map((e) => e.textContent), r.path);
      return Array.isArray(locs) && locs.length > 0;
    }, { timeout: T.ui, interval: 50, timeoutMsg: `${label}: the problems were never listed` }).catch(async (e) => {
      const seen = await b.execute(() => ({ path: window.__switchyard.view?.path, locs: [...document.querySelectorAll('[data-testid="problem"] .loc')].map((x) => x.textContent) }));
      throw new Error(`${e.message}; the window shows ${JSON.stringify(seen).slice(0, 500)}, expected ${r.path}`);
    });
    for (const l of locs) assert(/(^|· )[1-9]\d*:[1-9]\d*$/.test(l), `${label}: every problem has a line:column, got "${l}"`);
    // Still responsive: a round trip through the page is quick.
    const p0 = Date.now();
    await b.execute(() => document.title);
    assert(Date.now() - p0 < 1000, `${label}: the page answered in ${Date.now() - p0} ms`);
    if (took > 2000) slow.push(`${label} ${took} ms`);
  }
  // 2 s per file as the issue asks, measured around WebDriver (which adds its own latency).
  assert(slow.length === 0, `opening took over 2 s: ${slow.join(', ')}`);
});

// ---------------------------------------------------------------------------------------------

registerDebugTests(test, { assert, assertEq });
registerLiveTests(test, { assert, assertEq });
registerTrustTests(test, { assert, assertEq });
registerWebviewTests(test, { assert, assertEq });
registerBundleTests(test, { assert, assertEq });
registerCanvasTests(test, { assert, assertEq });
registerRemoteTests(test, { assert, assertEq });
registerLaptopTests(test, { assert, assertEq });
registerLllmTests(test, { assert, assertEq });
registerLllmDebugTests(test, { assert, assertEq });
registerTestsPanelTests(test, { assert, assertEq });
registerSaveCaseTests(test, { assert, assertEq });
registerDiffTests(test, { assert, assertEq });

// The app as it runs on a machine without a GPU render node (this one, under Xvfb): it turns
// WebKit's compositing off (src-tauri/src/startup.rs). Every test above runs composited (their
// screenshots need it, see startDriver); these run debugger tests again in the app's own mode,
// after checking that the web process really runs without GL compositing.
async function nonComposited({ appProcesses }) {
  if (hasRenderNode()) return; // a GPU: the app composites, as it should
  const web = appProcesses().filter((p) => p.comm.startsWith('WebKitWebProces'));
  assert(web.length === 1, `one web process of the app, got ${JSON.stringify(web)}`);
  const environ = fs.readFileSync(`/proc/${web[0].pid}/environ`, 'utf8').split('\0');
  assert(environ.includes('WEBKIT_DISABLE_COMPOSITING_MODE=1'), 'the web process runs with WEBKIT_DISABLE_COMPOSITING_MODE=1');
}
for (const name of ['debugger: a breakpoint (click and F9) and F5 runs to it', 'debugger: rewind to step 2 and run a fork; the earlier run is kept', 'debugger: editing state while paused changes the route; a sherma interrupt is answered']) {
  const t = tests.find((x) => x.name === name);
  assert(t, `the test "${name}" exists`);
  const { name: _name, fn, ...opts } = t;
  test(`no GPU: ${name}`, async (ctx) => {
    await nonComposited(ctx);
    await fn(ctx);
  }, { ...opts, rendering: 'app-default' });
}

async function main() {
  preflight();
  const filters = process.argv.slice(2);
  const chosen = tests.filter((t) => filters.length === 0 || filters.some((f) => t.name.includes(f)));
  // One driver at a time, started again when a test wants the other rendering (startDriver).
  let driver = null;
  let rendering = null;
  let failed = 0;
  const t0 = Date.now();
  try {
    for (const t of chosen) {
      const want = t.rendering || 'composited';
      if (!driver || rendering !== want) {
        if (driver) await driver.stop();
        driver = null;
        driver = await startDriver({ rendering: want });
        rendering = want;
      }
      const started = Date.now();
      let b = null, extra = null;
      const ctx = {};
      try {
        const { file, dir } = sherma();
        ctx.file = file;
        ctx.dir = dir;
        let args = [file];
        if (t.loki) {
          const d = fixture('release-gate');
          ctx.loki = d;
          args = [d];
        }
        if (t.args) args = t.args;
        if (t.setup) {
          const s = t.setup();
          args = s.args;
          ctx.file = s.file;
        }
        // Running needs a trusted folder and a confirmed run manifest (README "Trust and
        // safety"): every test but the trust tests trusts the scratch folders of the agents it
        // opens, their manifests confirmed, as a user would have done before. Nothing is left
        // from the test before.
        ctx.trustFile = driver.trustFile;
        ctx.browserLog = driver.browserLog;
        fs.rmSync(driver.browserLog, { force: true });
        const agents = args.filter((a) => fs.existsSync(a));
        if (t.untrusted) writeTrust(driver.trustFile);
        else writeTrust(driver.trustFile, { folders: agents.map(scratchRoot).filter(Boolean), agents });
        ctx.runsDir = driver.runsDir;
        ctx.recoveryDir = driver.recoveryDir;
        for (const f of fs.readdirSync(driver.recoveryDir)) fs.rmSync(path.join(driver.recoveryDir, f), { force: true });
        ctx.configDir = driver.config;
        ctx.appProcesses = () => driver.appProcesses();
        ctx.dataDir = driver.dataDir;
        for (const f of fs.readdirSync(driver.runsDir)) fs.rmSync(path.join(driver.runsDir, f), { recursive: true, force: true });
        // What the webview remembers (the panes, in localStorage): each test starts as a new user.
        for (const f of fs.readdirSync(driver.dataDir)) fs.rmSync(path.join(driver.dataDir, f), { recursive: true, force: true });
        b = await launch(args);
        ctx.b = b;
        ctx.relaunch = async (a) => {
          await b.deleteSession();
          b = null;
          extra = await launch(a);
          return extra;
        };
        await t.fn(ctx);
        console.log(`ok   ${t.name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      } catch (e) {
        failed++;
        console.log(`FAIL ${t.name} (${((Date.now() - started) / 1000).toFixed(1)} s)\n     ${String(e && e.stack ? e.message : e).split('\n').join('\n     ')}`);
        const slug = t.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60);
        if (b) await screenshot(b, slug);
        if (extra) await screenshot(extra, slug + '-2');
      } finally {
        // The next launch() waits until these apps are gone (no session, no process left).
        for (const x of [b, extra]) if (x) await x.deleteSession().catch(() => {});
      }
    }
  } finally {
    if (driver) await driver.stop();
  }
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(`\n${chosen.length - failed} passed, ${failed} failed (${secs} s)`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
