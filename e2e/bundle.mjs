// Window test of coyote bundles (issue 28 item 5): a copy of coyote 0.10.3's bundled assets
// (agents/<name>/{graph.yaml|config.yaml, scripts/, tools.sh}, plus a coyote-bundle.yaml the test
// writes) given on the command line opens as a bundle: the start screen lists every agent with
// its kind, choosing one opens it (the bundle folder is granted, so its agents may be named by the
// webview), the header switches to another, and a path outside the bundle is still refused.
// Registered by run.mjs with `untrusted: true` (the harness confirms manifests of agent files,
// not of bundle folders; opening and drawing need no trust).
import fs from 'node:fs';
import path from 'node:path';
import { T, click, conformanceDir, screenshot, testid, tmpDir, waitForView } from './lib.mjs';

function bundleFixture() {
  const src = path.join(conformanceDir(), 'loki', 'coyote-0.10.3', 'assets');
  if (!fs.existsSync(src)) throw new Error(`the coyote corpus is missing: ${src} (set SWITCHYARD_CONFORMANCE)`);
  const dir = path.join(tmpDir(), 'coyote');
  fs.cpSync(src, dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'coyote-bundle.yaml'), 'name: coyote-builtins\nversion: "0.10.3"\ndescription: The agents coyote 0.10.3 ships\n');
  return dir;
}

/** `invoke(cmd, args)` from the page: `{ok}` or `{ok: false, code, message}`. */
async function invoke(b, cmd, args) {
  return b.executeAsync((cmd, args, done) => {
    window.__TAURI_INTERNALS__.invoke(cmd, args).then(
      () => done({ ok: true }),
      (e) => done({ ok: false, code: e?.code ?? null, message: e?.message ?? String(e) }),
    );
  }, cmd, args);
}

export function registerBundleTests(test, { assert, assertEq }) {
  test('bundle: a coyote bundle folder lists its agents; one opens, the header switches to another; outside paths stay refused', async ({ b, file }) => {
    const dir = file;
    const expected = fs
      .readdirSync(path.join(dir, 'agents'))
      .filter((n) => ['graph.yaml', 'config.yaml'].some((f) => fs.existsSync(path.join(dir, 'agents', n, f))))
      .sort();
    const panel = await b.$(testid('bundle-panel'));
    await panel.waitForDisplayed({ timeout: T.ui });
    const listed = await b.execute(() =>
      [...document.querySelectorAll('[data-testid="bundle-agent"]')].map((a) => ({ name: a.getAttribute('data-agent'), kind: a.getAttribute('data-kind') })),
    );
    assertEq(listed.map((a) => a.name), expected, 'every agent of the bundle, in name order');
    assertEq(listed.find((a) => a.name === 'finding-verifier')?.kind, 'graph', 'finding-verifier is a graph agent');
    assertEq(listed.find((a) => a.name === 'oracle')?.kind, 'config', 'oracle is a config agent');
    assertEq(await (await b.$(testid('bundle-name'))).getText(), 'coyote-builtins 0.10.3', 'the manifest names the bundle');
    await screenshot(b, 'bundle-list');

    // Choose an agent: its graph opens.
    await click(b, '[data-testid="bundle-agent"][data-agent="finding-verifier"]');
    const want = fs.realpathSync(path.join(dir, 'agents', 'finding-verifier', 'graph.yaml'));
    const v = await waitForView(b, (v) => v.dialect === 'loki' && fs.realpathSync(v.path) === want && v.nodes.length > 3, 'finding-verifier drawn');
    assert(v.nodes.some((n) => n.id.length > 0), 'nodes drawn');
    await screenshot(b, 'bundle-agent');

    // The header switches to another agent of the bundle.
    const sw = await b.$(testid('bundle-switcher'));
    await sw.waitForDisplayed({ timeout: T.ui });
    const adversary = path.join(fs.realpathSync(dir), 'agents', 'adversary', 'graph.yaml');
    await sw.selectByAttribute('value', adversary);
    await waitForView(b, (v) => fs.realpathSync(v.path) === adversary, 'adversary opened from the switcher');

    // Confinement: a path inside the bundle is allowed, one outside still refused.
    assert((await invoke(b, 'bundle_current', {})).ok, 'bundle_current answers');
    const outside = await invoke(b, 'bundle_open', { path: '/etc' });
    assertEq(outside.code, 'path_not_allowed', `a folder outside the bundle is refused: ${outside.message}`);
    const inside = await invoke(b, 'open_path', { path: path.join(dir, 'agents', 'deep-research') });
    assert(inside.ok, `an agent folder of the bundle opens: ${inside.message}`);
  }, { untrusted: true, setup: () => { const d = bundleFixture(); return { args: [d], file: d }; } });
}
