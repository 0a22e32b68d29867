// Screenshots of the canvas on the largest real agents, coyote 0.10.3's `review-gauntlet` and
// `code-reviewer` (issue 28 item 6). Not part of the test run:
//
//   Xvfb :78 -screen 0 1920x1080x24 -nolisten tcp &
//   DISPLAY=:78 node e2e/coyote-shots.mjs            # every size and theme into /tmp/w/shots/
//   DISPLAY=:78 node e2e/coyote-shots.mjs --docs     # the light ones into docs/screenshots/
//
// Each agent opens at 1280×800 and 1920×1080, light and dark, with the source view, the
// inspector and the debugger panel hidden, fitted with the canvas's own fit button; a second
// shot (`-lower`) after dragging the canvas up by half the pane shows the lower half. The bundle's
// `assets` folder is copied to a scratch folder first (opening needs no trust).
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, conformanceDir, launch, preflight, sleep, startDriver, testid, tmpDir } from './lib.mjs';

const ASSETS = process.env.COYOTE_ASSETS || path.join(conformanceDir(), 'loki', 'coyote-0.10.3', 'assets');
const DOCS = process.argv.includes('--docs');
const OUT = DOCS ? path.join(ROOT, 'docs', 'screenshots') : process.env.SHOTS_DIR || '/tmp/w/shots';
const AGENTS = ['review-gauntlet', 'code-reviewer'];
const SIZES = [
  [1280, 800],
  [1920, 1080],
];
const THEMES = DOCS ? ['light'] : ['light', 'dark'];

async function until(b, fn, what) {
  await b.waitUntil(fn, { timeout: 30000, interval: 100, timeoutMsg: `timed out: ${what}` });
}

/** Clicks the theme toggle until the theme is `want` (it cycles system → light → dark). */
async function setTheme(b, want) {
  for (let i = 0; i < 4; i++) {
    const t = await (await b.$(testid('theme-toggle'))).getAttribute('title');
    if (t.startsWith(`Theme: ${want} `)) return;
    await (await b.$(testid('theme-toggle'))).click();
  }
  throw new Error(`could not set the theme to ${want}`);
}

/** Turns a pane toggle off (its button has class `on` while the pane shows). */
async function hidePane(b, sel) {
  const el = await b.$(sel);
  if (!(await el.isExisting())) return;
  if ((await el.getAttribute('class')).split(/\s+/).includes('on')) await el.click();
}

async function main() {
  preflight();
  fs.mkdirSync(OUT, { recursive: true });
  const scratch = tmpDir('switchyard-coyote-shots-');
  fs.cpSync(ASSETS, path.join(scratch, 'assets'), { recursive: true });
  const driver = await startDriver();
  try {
    for (const agent of AGENTS) {
      const file = path.join(scratch, 'assets', 'agents', agent, 'graph.yaml');
      const b = await launch([file]);
      await until(b, async () => (await b.$$('[data-testid="node"]')).length > 5, `${agent} drawn`);
      await hidePane(b, testid('pane-toggle-source'));
      await hidePane(b, testid('pane-toggle-inspector'));
      await hidePane(b, testid('toggle-debug-panel'));
      for (const theme of THEMES) {
        await setTheme(b, theme);
        for (const [w, h] of SIZES) {
          await b.setWindowSize(w, h);
          await sleep(600);
          const fit = await b.$('.react-flow__controls-fitview');
          if (await fit.isExisting()) await fit.click();
          await sleep(900);
          const name = DOCS ? `coyote-${agent}-${w}.png` : `coyote-${agent}-${w}-${theme}.png`;
          await b.saveScreenshot(path.join(OUT, name));
          console.log(path.join(OUT, name));
          // The lower half (the lanes): drag the pane up by half its height.
          const pane = await b.$('.react-flow__pane');
          const { height } = await pane.getSize();
          await b
            .action('pointer')
            .move({ origin: pane, x: 0, y: Math.round(height / 4) })
            .down()
            .move({ origin: pane, x: 0, y: -Math.round(height / 4), duration: 300 })
            .up()
            .perform();
          await sleep(700);
          const lower = name.replace('.png', '-lower.png');
          await b.saveScreenshot(path.join(OUT, lower));
          console.log(path.join(OUT, lower));
        }
      }
      await b.deleteSession();
    }
  } finally {
    await driver.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
