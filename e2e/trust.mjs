// Window test of per-folder trust (issue 27): an untrusted folder opens in restricted mode (the
// banner; F5 refused with the reason; nothing runs), "Trust folder…" trusts it, the first run
// shows the run manifest (the script and the host) and runs after Confirm, and a changed script
// path shows the manifest again. The agent (e2e/fixtures/trust) writes ran.marker when it runs.
// Registered by run.mjs with `untrusted: true`: the trust list ($SWITCHYARD_TRUST, a scratch
// file) starts empty.
import fs from 'node:fs';
import path from 'node:path';
import { E2E, T, click, eventually, screenshot, press, testid, tmpDir, waitForView } from './lib.mjs';

function trustFixture() {
  const dir = path.join(tmpDir(), 'trust');
  fs.cpSync(path.join(E2E, 'fixtures', 'trust'), dir, { recursive: true });
  for (const f of fs.readdirSync(path.join(dir, 'scripts'))) fs.chmodSync(path.join(dir, 'scripts', f), 0o755);
  return dir;
}

/** `window.__switchyard.trust` and the debugger's state, in one round trip. */
async function seen(b) {
  return b.execute(() => {
    const h = window.__switchyard || {};
    return {
      trust: h.trust ?? null,
      debug: h.debug ? { mode: h.debug.mode, state: h.debug.state } : null,
      toasts: [...document.querySelectorAll('[data-testid="toast"]')].map((t) => t.textContent),
      banner: !!document.querySelector('[data-testid="trust-banner"]'),
      dialog: (() => {
        const d = document.querySelector('[data-testid="manifest-dialog"]');
        if (!d) return null;
        return {
          readOnly: d.getAttribute('data-readonly') === 'true',
          hash: d.getAttribute('data-hash'),
          items: [...d.querySelectorAll('[data-testid="manifest-item"]')].map((i) => ({ kind: i.getAttribute('data-kind'), what: i.getAttribute('data-what'), text: i.textContent })),
          sections: [...d.querySelectorAll('[data-testid="manifest-section"] h3')].map((h) => h.textContent.replace(/\s*\(\d+\)$/, '')),
        };
      })(),
    };
  });
}

async function waitSeen(b, pred, what) {
  let last = null;
  await b.waitUntil(async () => pred((last = await seen(b))), { timeout: T.ui, interval: 100, timeoutMsg: `timed out waiting for ${what}` }).catch((e) => {
    throw new Error(`${e.message}\n  last seen: ${JSON.stringify(last).slice(0, 1500)}`);
  });
  return last;
}

export function registerTrustTests(test, { assert, assertEq }) {
  test('trust: an untrusted folder is restricted (banner, F5 refused, nothing runs); trusted, the manifest is confirmed and the run works; a changed script asks again', async ({ b, file, trustFile }) => {
    const dir = path.dirname(file);
    const root = fs.realpathSync(dir);
    const marker = path.join(dir, 'ran.marker');
    await waitForView(b, (v) => v.dialect === 'loki' && v.nodes.some((n) => n.id === 'mark'), 'the trust probe agent');

    // Restricted mode: the banner names the folder and says running is blocked.
    const banner = await b.$(testid('trust-banner'));
    await banner.waitForDisplayed({ timeout: T.ui });
    const text = await banner.getText();
    assert(text.includes(root) && /not trusted/.test(text) && /blocked/.test(text), `the banner: ${text}`);
    assertEq(await banner.getAttribute('data-root'), root, 'the banner names the project root');

    // F5 is refused with the reason; nothing runs.
    await press(b, 'F5');
    const refused = await waitSeen(b, (s) => s.toasts.some((t) => /not trusted/.test(t)), 'the refusal of F5');
    const reason = refused.toasts.find((t) => /not trusted/.test(t));
    assert(reason.includes(root) && /restricted mode/.test(reason), `the refusal says why: ${reason}`);
    assertEq(refused.debug?.mode ?? 'idle', 'idle', 'no run started');
    assert(!fs.existsSync(marker), 'the script did not run (no marker file)');

    // "What would run?" shows the manifest, read-only.
    await click(b, testid('trust-what'));
    const ro = await waitSeen(b, (s) => s.dialog && s.dialog.items.length > 0, 'the read-only manifest');
    assert(ro.dialog.readOnly, 'read-only while untrusted');
    assertEq(ro.dialog.sections, ['Executes', 'Contacts', 'Reads outside the project', 'Environment variables'], 'the sections');
    assert(!(await (await b.$(testid('manifest-confirm'))).isExisting()), 'no Confirm in restricted mode');
    await click(b, testid('manifest-cancel'));
    await waitSeen(b, (s) => !s.dialog, 'the manifest dialog closed');

    // Trust folder…: the question names the folder and what would run.
    await click(b, testid('trust-folder'));
    const ask = await b.$(testid('trust-ask'));
    await ask.waitForDisplayed({ timeout: T.ui });
    const askText = await ask.getText();
    assert(askText.includes(root) && askText.includes('mark.sh') && askText.includes('api.openai.com'), `the question names the folder and what runs: ${askText}`);
    await click(b, testid('trust-ask-confirm'));
    await waitSeen(b, (s) => !s.banner && s.trust?.trusted, 'the banner gone after trusting');
    const list = JSON.parse(fs.readFileSync(trustFile, 'utf8'));
    assertEq(list.folders, [root], 'the folder is in the trust list');
    assert(!fs.existsSync(marker), 'trusting ran nothing');

    // The first run shows the manifest: the script and the host, with their places.
    await press(b, 'F5');
    const first = await waitSeen(b, (s) => s.dialog && !s.dialog.readOnly && s.dialog.items.length > 0, 'the manifest dialog before the first run');
    const script = first.dialog.items.find((i) => i.kind === 'script');
    assert(script && script.what.endsWith(path.join('scripts', 'mark.sh')) && /graph\.yaml:1[0-9]/.test(script.text), `the script with its place: ${JSON.stringify(first.dialog.items)}`);
    assert(first.dialog.items.some((i) => i.what.includes('api.openai.com')), `the host: ${JSON.stringify(first.dialog.items)}`);
    assert(!fs.existsSync(marker), 'nothing ran before Confirm');
    await screenshot(b, 'trust-manifest');
    await click(b, testid('manifest-confirm'));
    await waitSeen(b, (s) => s.debug?.state === 'finished', 'the confirmed run to finish');
    await eventually(() => fs.existsSync(marker), (x) => x, 'the marker file written by the script');
    const confirmed = JSON.parse(fs.readFileSync(trustFile, 'utf8')).confirmed;
    assertEq(confirmed[fs.realpathSync(file)], first.dialog.hash, 'the confirmed hash is remembered for the file');

    // The script path changes on disk (an atomic save, as editors do): the manifest is shown again.
    fs.rmSync(marker);
    const changed = fs.readFileSync(file, 'utf8').replace('scripts/mark.sh', 'scripts/other.sh');
    fs.writeFileSync(`${file}.tmp`, changed);
    fs.renameSync(`${file}.tmp`, file);
    await waitForView(b, (v) => v.text === changed, 'the reloaded file with the new script path');
    await press(b, 'F5');
    const again = await waitSeen(b, (s) => s.dialog && !s.dialog.readOnly && s.dialog.items.some((i) => i.what.endsWith('other.sh')), 'the manifest dialog again after the script changed');
    assert(again.dialog.hash !== first.dialog.hash, 'a new manifest hash');
    // Cancel: nothing runs.
    await click(b, testid('manifest-cancel'));
    await waitSeen(b, (s) => !s.dialog, 'the dialog closed');
    assert(!fs.existsSync(marker), 'Cancel ran nothing');
  }, { untrusted: true, setup: () => { const d = trustFixture(); return { args: [d], file: path.join(d, 'graph.yaml') }; } });
}
