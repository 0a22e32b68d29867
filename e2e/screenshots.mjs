// Screenshots of the debugger for docs/screenshots/ (not part of the test run):
//
//   xvfb-run -a -s "-screen 0 1600x1200x24 -nolisten tcp" node e2e/screenshots.mjs
//
// 1. debugger-paused.png: the support-triage example paused at a breakpoint on `confirm`, the
//    state panel showing the diff of the `count` step and the conversation so far.
// 2. debugger-approval.png: the release-gate example waiting at its approval node.
// 3. settings.png: the Settings dialog (providers, where each key comes from).
// 4. run-live.png: the run configuration in live mode, the document's models checked.
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, fixture, launch, nodeSel, preflight, sleep, startDriver, testid } from './lib.mjs';

const OUT = path.join(ROOT, 'docs', 'screenshots');

async function until(b, fn, what) {
  await b.waitUntil(fn, { timeout: 20000, interval: 100, timeoutMsg: `timed out: ${what}` });
}

async function dbgState(b) {
  return b.execute(() => window.__switchyard?.debug?.state ?? null);
}

async function main() {
  preflight();
  fs.mkdirSync(OUT, { recursive: true });
  const driver = await startDriver();
  try {
    let b = await launch([path.join(fixture('support-triage'), 'agent.yaml')]);
    await b.setWindowSize(1600, 1200);
    await until(b, async () => (await b.$(nodeSel('confirm'))).isExisting(), 'the example');
    await (await b.$(testid('pane-toggle-source'))).click().catch(() => {});
    await (await b.$(`${nodeSel('confirm')} ${testid('bp-dot')}`)).click();
    await (await b.$(testid('dbg-config'))).click();
    await (await b.$(testid('run-input'))).setValue('Hi, where is my order 1001?');
    await (await b.$(testid('run-config-close'))).click();
    await (await b.$(testid('dbg-continue'))).click();
    await until(b, async () => (await dbgState(b)) === 'paused', 'paused at confirm');
    await (await b.$(testid('tab-state'))).click();
    await sleep(500);
    // Show the conversation and the changed `turns` row together: drag the panel taller.
    const handle = await b.$('.dock-splitter');
    if (await handle.isExisting()) {
      await handle.dragAndDrop({ x: 0, y: -120 });
    }
    const fit = await b.$('.react-flow__controls-fitview');
    if (await fit.isExisting()) await fit.click();
    await sleep(800);
    await b.saveScreenshot(path.join(OUT, 'debugger-paused.png'));
    await b.deleteSession();

    b = await launch([fixture('release-gate')]);
    await b.setWindowSize(1600, 1000);
    await until(b, async () => (await b.$(nodeSel('approve'))).isExisting(), 'the Loki example');
    await (await b.$(testid('dbg-continue'))).click();
    await (await b.$(testid('interrupt-dialog'))).waitForDisplayed({ timeout: 20000 });
    await sleep(800);
    await b.saveScreenshot(path.join(OUT, 'debugger-approval.png'));
    await b.deleteSession();

    b = await launch([path.join(fixture('support-triage'), 'agent.yaml')]);
    await b.setWindowSize(1400, 900);
    await until(b, async () => (await b.$(nodeSel('confirm'))).isExisting(), 'the example');
    await (await b.$(testid('settings-button'))).click();
    await (await b.$(testid('settings-dialog'))).waitForDisplayed({ timeout: 10000 });
    await sleep(800);
    await b.saveScreenshot(path.join(OUT, 'settings.png'));
    await (await b.$(testid('settings-close'))).click();
    await (await b.$(testid('dbg-config'))).click();
    await (await b.$(testid('run-llm-mode'))).selectByAttribute('value', 'live');
    await sleep(800);
    await b.saveScreenshot(path.join(OUT, 'run-live.png'));
    await b.deleteSession();
  } finally {
    await driver.stop();
  }
  console.log(`screenshots written to ${OUT}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
