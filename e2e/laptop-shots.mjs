// Screenshots of the first window as a new user sees it (issue 31 item 3), not part of the test
// run: the example agents and coyote 0.10.3's largest agent (`step-runner`, 25 nodes and 59
// edges), at 1280×800 and 1920×1080, light and dark, with the default panes; each shot's
// geometry (canvas width, toolbar rows, labels on labels or nodes, the minimap on nodes) printed.
//
//   xvfb-run -a -s "-screen 0 1920x1080x24 -nolisten tcp" node e2e/laptop-shots.mjs
//
// Shots go to e2e/artifacts/laptop/ (or $SHOTS_DIR).
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS, conformanceDir, fixture, launch, preflight, sleep, startDriver, testid, tmpDir } from './lib.mjs';
import { layoutReport, setTheme, settle } from './laptop.mjs';

const OUT = process.env.SHOTS_DIR || path.join(ARTIFACTS, 'laptop');
const ASSETS = process.env.COYOTE_ASSETS || path.join(conformanceDir(), 'loki', 'coyote-0.10.3', 'assets');
const SIZES = [
  [1280, 800],
  [1920, 1080],
];

async function main() {
  preflight();
  fs.mkdirSync(OUT, { recursive: true });
  const scratch = tmpDir('switchyard-laptop-shots-');
  fs.cpSync(ASSETS, path.join(scratch, 'assets'), { recursive: true });
  const agents = [
    ['support-triage', path.join(fixture('support-triage'), 'agent.yaml')],
    ['release-gate', fixture('release-gate')],
    ['step-runner', path.join(scratch, 'assets', 'agents', 'step-runner', 'graph.yaml')],
    ['code-reviewer', path.join(scratch, 'assets', 'agents', 'code-reviewer', 'graph.yaml')],
  ];
  const only = process.argv.slice(2);
  const driver = await startDriver();
  try {
    for (const [name, file] of agents) {
      if (only.length && !only.some((o) => name.includes(o))) continue;
      for (const theme of ['light', 'dark']) {
        for (const [w, h] of SIZES) {
          // A fresh window each time, as it opens (the first fit is the one a user sees).
          const b = await launch([file]);
          try {
            await b.setWindowSize(w, h);
            await b.waitUntil(async () => (await b.execute(() => window.innerWidth)) === w, { timeout: 20000, timeoutMsg: `window ${w} wide` });
            await setTheme(b, theme);
            await b.waitUntil(async () => (await b.$$('[data-testid="node"]')).length > 2, { timeout: 30000, timeoutMsg: `${name} drawn` });
            await (await b.$(testid('fit-view'))).click();
            await settle(b);
            await sleep(300);
            const shot = path.join(OUT, `${name}-${w}-${theme}.png`);
            await b.saveScreenshot(shot);
            const r = await layoutReport(b);
            console.log(`${shot}\n  canvas ${r.canvasWidth}/${r.windowWidth} px (${Math.round((100 * r.canvasWidth) / r.windowWidth)}%), toolbar ${r.toolbarRows} row(s) ${r.toolbarHeight} px, ${r.labels} labels: ${r.problems.length ? r.problems.join('; ') : 'no overlap'}`);
            // A node selected: the inspector beside the canvas, the node still in view.
            const ids = await b.execute(() => [...document.querySelectorAll('[data-testid="node"]')].map((e) => e.getAttribute('data-node-id')));
            const pick = ids[Math.min(ids.length - 1, 3)];
            await (await b.$(`[data-testid="node"][data-node-id="${pick}"]`)).click();
            await (await b.$(testid('inspector'))).waitForDisplayed({ timeout: 20000 });
            await settle(b);
            await sleep(300);
            const sel = shot.replace('.png', '-selected.png');
            await b.saveScreenshot(sel);
            const s = await layoutReport(b);
            console.log(`${sel}\n  ${pick} selected: canvas ${s.canvasWidth}/${s.windowWidth} px, toolbar ${s.toolbarRows} row(s), ${s.problems.length ? s.problems.join('; ') : 'no overlap'}`);
          } finally {
            await b.deleteSession().catch(() => {});
          }
        }
      }
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
