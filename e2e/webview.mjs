// Window tests of what the webview may do (issue 27 items 5 and 8): a path outside the open
// project is refused whatever the page asks for; a link asks "Open in your browser?" with the
// whole URL, Cancel opens nothing and Open hands the URL to the browser ($SWITCHYARD_BROWSER, a
// script of the harness writing what it got to `browserLog`); recording into a git work tree
// warns and "Add to .gitignore" writes the line to the .gitignore on disk.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { E2E, T, click, eventually, press, screenshot, testid, tmpDir, waitForView } from './lib.mjs';

/** `invoke(cmd, args)` from the page: `{ok, value}` or `{ok: false, code, message}`. */
async function invoke(b, cmd, args) {
  return b.executeAsync((cmd, args, done) => {
    window.__TAURI_INTERNALS__.invoke(cmd, args).then(
      (v) => done({ ok: true, value: v === null || v === undefined ? null : typeof v === 'object' ? Object.keys(v) : v }),
      (e) => done({ ok: false, code: e?.code ?? null, message: e?.message ?? String(e) }),
    );
  }, cmd, args);
}

function linkFixture() {
  const dir = path.join(tmpDir(), 'link');
  fs.cpSync(path.join(E2E, 'fixtures', 'link'), dir, { recursive: true });
  return dir;
}

/** The loop fixture inside a fresh git repository (`git init`); returns the agent file. */
function repoFixture() {
  const dir = path.join(tmpDir(), 'repo');
  fs.cpSync(path.join(E2E, 'fixtures', 'loop'), dir, { recursive: true });
  const r = spawnSync('git', ['init', '-q'], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git init failed: ${r.stderr || r.error}`);
  fs.writeFileSync(path.join(dir, '.gitignore'), 'node_modules/');
  return path.join(dir, 'loop.yaml');
}

const readOr = (f, d = '') => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : d);

export function registerWebviewTests(test, { assert, assertEq }) {
  test('webview: paths outside the open project are refused (/etc/passwd, a file in another temp dir); inside, they work', async ({ b, file, dir }) => {
    await waitForView(b, (v) => v.path === file);
    const elsewhere = tmpDir('switchyard-e2e-elsewhere-');
    const outside = path.join(elsewhere, 'agent.yaml');
    fs.copyFileSync(file, outside);
    const trace = path.join(elsewhere, 'run.jsonl');
    fs.writeFileSync(trace, '{"event":"run_started","run":"r","ts_ms":1,"agent":"a","input":null,"state":{}}\n');
    try {
      for (const [cmd, args, target] of [
        ['open_path', { path: '/etc/passwd' }, '/etc/passwd'],
        ['open_path', { path: outside }, outside],
        ['open_path', { path: `${path.dirname(file)}/../../${path.basename(elsewhere)}/agent.yaml` }, outside],
        ['nested_view', { file: outside, agent: null }, outside],
        ['open_trace', { path: trace }, trace],
        ['trace_state_at', { path: trace, step: 0, events: null }, trace],
        ['record_check', { record: path.join(elsewhere, 'x.cassette.json') }, 'x.cassette.json'],
        ['run_start', { config: { llm: { mode: 'scripted' }, record: path.join(elsewhere, 'x.cassette.json') } }, 'x.cassette.json'],
        ['run_start', { config: { llm: { mode: 'replay', cassette: '/etc/passwd' } } }, '/etc/passwd'],
      ]) {
        const r = await invoke(b, cmd, args);
        assert(!r.ok, `${cmd} ${JSON.stringify(args)} must be refused, got ${JSON.stringify(r)}`);
        assertEq(r.code, 'path_not_allowed', `${cmd}: the code (${r.message})`);
        assert(r.message.includes(target) && /open project/.test(r.message), `${cmd}: the message names the path and the rule: ${r.message}`);
      }
      assert(!fs.existsSync(path.join(elsewhere, 'x.cassette.json')), 'nothing was written outside');
      const v = await waitForView(b, (v) => v.path === file, 'the same document still open');
      assertEq(v.path, file, 'the open document did not change');
      // Inside the project the same commands work.
      const inside = path.join(dir, 'copy.yaml');
      fs.copyFileSync(file, inside);
      const ok = await invoke(b, 'nested_view', { file: inside, agent: null });
      assert(ok.ok, `a file inside the project is drawn: ${JSON.stringify(ok)}`);
      // As the Open… dialog does once a file is picked: the view follows.
      await b.execute((p) => window.__switchyardTest.openPath(p), inside);
      await waitForView(b, (v) => v.path === inside, 'the file inside the project');
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  test('webview: a link asks "Open in your browser?" with the whole URL; Cancel opens nothing, Open hands it to the browser', async ({ b, browserLog }) => {
    const url = 'https://example.com/guide/release?step=2#checks';
    await waitForView(b, (v) => v.dialect === 'loki' && v.nodes.some((n) => n.id === 'ask'), 'the link probe agent');
    await press(b, 'F5');
    const link = await b.$('[data-testid="interrupt-prompt"] [data-testid="external-link"]');
    await link.waitForDisplayed({ timeout: T.ui });
    assertEq(await link.getAttribute('data-url'), url, 'the link in the question');
    assertEq(await b.execute((el) => el.hasAttribute('target'), link), false, 'no target: the webview does not follow it');
    await link.click();
    const dialog = await b.$(testid('link-dialog'));
    await dialog.waitForDisplayed({ timeout: T.ui });
    assertEq(await (await b.$(testid('link-url'))).getText(), url, 'the whole URL is shown');
    assert(/Open in your browser\?/.test(await dialog.getText()), 'the question');
    await screenshot(b, 'link-dialog');
    await click(b, testid('link-cancel'));
    await dialog.waitForExist({ timeout: T.ui, reverse: true });
    // The page is still the app (no navigation) and nothing was handed to the browser.
    assert(await b.execute(() => !!document.querySelector('[data-testid="app"]')), 'still the app');
    assertEq(readOr(browserLog), '', 'Cancel opened nothing');

    await link.click();
    await dialog.waitForDisplayed({ timeout: T.ui });
    await click(b, testid('link-open'));
    await dialog.waitForExist({ timeout: T.ui, reverse: true });
    const opened = await eventually(() => readOr(browserLog), (t) => t.trim().length > 0, 'the browser given the URL');
    assertEq(opened, `1:${url}\n`, 'the browser got the URL as its one argument, once');
  }, { setup: () => { const d = linkFixture(); return { args: [d], file: path.join(d, 'graph.yaml') }; } });

  test('webview: recording into a git work tree warns; Add to .gitignore adds the line on disk', async ({ b, file }) => {
    const dir = path.dirname(file);
    const gitignore = path.join(dir, '.gitignore');
    await waitForView(b, (v) => v.path === file && v.nodes.some((n) => n.id === 'inc'));
    await click(b, testid('dbg-config'));
    await (await b.$(testid('run-config'))).waitForDisplayed({ timeout: T.ui });
    await click(b, testid('run-record'));
    const warning = await b.$(testid('record-warning'));
    await warning.waitForDisplayed({ timeout: T.ui });
    const text = await warning.getText();
    assert(text.includes(fs.realpathSync(dir)) && /git does not ignore it/.test(text), `the warning names the work tree: ${text}`);
    await screenshot(b, 'record-warning');
    assertEq(readOr(gitignore), 'node_modules/', 'nothing written before the click');
    await click(b, testid('record-gitignore'));
    await eventually(() => readOr(gitignore), (t) => t === 'node_modules/\n/loop.cassette.json\n', 'the .gitignore with the line added (existing bytes kept)');
    const done = await b.$(testid('record-gitignored'));
    await done.waitForDisplayed({ timeout: T.ui });
    assert((await done.getText()).includes('/loop.cassette.json'), 'the line is named');
    const r = spawnSync('git', ['check-ignore', '-q', 'loop.cassette.json'], { cwd: dir });
    assertEq(r.status, 0, 'git ignores the cassette now');
  }, { setup: () => { const f = repoFixture(); return { args: [f], file: f }; } });
}
