// Window benchmark: a generated 2,000-node sherma graph in the real app (release or debug build).
//
//   xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" node bench/app.mjs [N]
//
// Prints, with the ratio target/actual (above 1 = faster than the target):
//  - launch → interactive: from asking for a new app process (WebDriver session) with the file
//    as argument until the UI is ready, the view holds all N nodes and node elements are on the
//    canvas (one more animation frame painted);
//  - open → interactive: clicking the file in the recent list of an already running window
//    until the same condition (measured inside the page with performance.now());
//  - backend share: `get_view` round trip (engine view + JSON + IPC) for the open document;
//  - frame times while panning (pointer drag) and zooming (wheel) the React Flow viewport:
//    intervals between requestAnimationFrame callbacks, one input event per frame.
import fs from 'node:fs';
import path from 'node:path';
import { shermaChain } from '../e2e/gen.mjs';
import { APP, ROOT, launch, preflight, sleep, startDriver, testid, tmpDir } from '../e2e/lib.mjs';

const N = Number(process.argv[2] || 2000);
const RUNS = Number(process.env.BENCH_RUNS || 3);
const OPEN_TARGET = 1500;
const FRAME_TARGET = 1000 / 60;

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
  return { n: s.length, median: q(0.5), p95: q(0.95), min: s[0], max: s[s.length - 1] };
};
const ms = (x) => `${x.toFixed(1)} ms`;
const line = (what, s, target) =>
  `${what}: median ${ms(s.median)}, p95 ${ms(s.p95)} [n=${s.n}, min ${ms(s.min)}, max ${ms(s.max)}] ` +
  `(target ${ms(target)}, ratio target/median = ${(target / s.median).toFixed(2)}, target/p95 = ${(target / s.p95).toFixed(2)})`;

/** Resolves when the page shows `file` with all `n` nodes and node elements rendered; page time. */
function interactive(browser, file, n, timeout = 60000) {
  return browser.executeAsync(
    (file, n, timeout, done) => {
      const start = performance.now();
      const check = () => {
        const h = window.__switchyard;
        const ok = h && h.ready && h.view && h.view.path === file && h.view.nodes.length === n &&
          document.querySelectorAll('[data-testid="node"]').length > 0 &&
          document.querySelector('.react-flow__viewport');
        if (ok) return requestAnimationFrame(() => done({ at: performance.now(), rendered: document.querySelectorAll('[data-testid="node"]').length }));
        if (performance.now() - start > timeout) return done(null);
        requestAnimationFrame(check);
      };
      check();
    },
    file, n, timeout,
  );
}

async function main() {
  preflight();
  console.log(`app: ${APP}${APP.includes('/release/') ? '' : ' (debug build; set SWITCHYARD_APP to a release build for release numbers)'}`);
  const dir = tmpDir('switchyard-bench-');
  const file = path.join(dir, `chain-${N}.yaml`);
  fs.writeFileSync(file, shermaChain(N));
  const driver = await startDriver({ rendering: 'app-default' });
  const launches = [], inPage = [], opens = [], commits = [], views = [];
  let frames = null, baseline = {};
  try {
    // 1. Launch with the file as argument.
    for (let r = 0; r < RUNS; r++) {
      const t0 = performance.now();
      const b = await launch([file]);
      await b.setTimeout({ script: 70000 });
      const first = await b.execute(() => 1); // the session (and the window) exists
      void first;
      const v = await interactive(b, file, N + 2 /* __start__, __end__ */);
      const t1 = performance.now();
      if (!v) throw new Error('the big graph never became interactive after launch');
      launches.push(t1 - t0);
      inPage.push(v.at); // page load (navigation start) → interactive
      await b.deleteSession();
      await sleep(300);
    }
    // 2. Open from the recent list in a running window; 3. backend share; 4. frames.
    for (let r = 0; r < RUNS; r++) {
      const b = await launch([]);
      await b.setTimeout({ script: 70000 });
      await (await b.$(testid('recent-item'))).waitForExist({ timeout: 15000 });
      await sleep(300);
      const dt = await b.executeAsync(
        (file, n, done) => {
          const item = [...document.querySelectorAll('[data-testid="recent-item"]')].find((e) => (e.getAttribute('title') || e.textContent).includes(file.split('/').pop()));
          if (!item) return done(null);
          const t0 = performance.now();
          let committed = null;
          item.click();
          const check = () => {
            const h = window.__switchyard;
            if (committed === null && h && h.view && h.view.path === file) committed = performance.now() - t0;
            if (h && h.ready && h.view && h.view.path === file && h.view.nodes.length === n && document.querySelectorAll('[data-testid="node"]').length > 0) {
              return requestAnimationFrame(() => done({ total: performance.now() - t0, committed }));
            }
            if (performance.now() - t0 > 60000) return done(null);
            requestAnimationFrame(check);
          };
          check();
        },
        file, N + 2,
      );
      if (dt == null) throw new Error('opening the big graph from the recent list did not finish');
      opens.push(dt.total);
      commits.push(dt.committed ?? dt.total);
      await sleep(500);
      for (let i = 0; i < 3; i++) {
        views.push(await b.executeAsync((done) => {
          const t0 = performance.now();
          window.__TAURI_INTERNALS__.invoke('get_view').then(() => done(performance.now() - t0), () => done(-1));
        }));
      }
      if (r === RUNS - 1) frames = await measureFrames(b);
      await b.deleteSession();
      await sleep(300);
    }
    // 5. The same gestures on the 7-node example: what this display (Xvfb, software
    //    rendering) costs per frame whatever the graph.
    const small = fixtureFile();
    const b = await launch([small]);
    await b.setTimeout({ script: 70000 });
    await interactive(b, small, (await waitNodes(b)));
    await sleep(500);
    const f = await measureFrames(b);
    baseline = { 'baseline 7-node example, pan': f.pan, 'baseline 7-node example, zoom': f.zoom };
    await b.deleteSession();
  } finally {
    await driver.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\n${N}-node sherma graph (${N + 2} nodes with the start/end markers), ${RUNS} runs`);
  console.log(line('launch → interactive (new process, file as argument)', stats(launches), OPEN_TARGET));
  console.log(line('  of which page load → interactive (inside the webview)', stats(inPage), OPEN_TARGET));
  console.log(line('open → interactive (click in the recent list, running window)', stats(opens), OPEN_TARGET));
  console.log(`  of which: click → first React commit of the new view median ${ms(stats(commits).median)}; ` +
    `get_view round trip (engine view + JSON + IPC) median ${ms(stats(views).median)}`);
  for (const [what, f] of Object.entries({ ...frames, ...baseline })) {
    const s = stats(f.intervals);
    const slow = f.intervals.filter((x) => x > FRAME_TARGET * 1.5).length;
    console.log(line(`${what} frame time (rAF interval)`, s, FRAME_TARGET) +
      `; ${slow}/${f.intervals.length} frames over 25 ms; input handling median ${ms(stats(f.work).median)}, ` +
      `${f.renderedMin}–${f.renderedMax} node elements on screen, zoom ${f.zoom}`);
  }
}

function fixtureFile() {
  const d = tmpDir('switchyard-bench-small-');
  fs.cpSync(path.join(ROOT, 'agents', 'support-triage'), d, { recursive: true });
  return path.join(d, 'agent.yaml');
}

async function waitNodes(b) {
  let n = 0;
  await b.waitUntil(async () => {
    n = await b.execute(() => window.__switchyard?.view?.nodes?.length ?? 0);
    return n > 0;
  }, { timeout: 15000 });
  return n;
}

/** Pans with a synthetic pointer drag and zooms with wheel events, one event per frame. */
async function measureFrames(b) {
  const run = (kind, count) =>
    b.executeAsync(
      (kind, count, done) => {
        const pane = document.querySelector('.react-flow__pane');
        const vpEl = document.querySelector('.react-flow__viewport');
        if (!pane || !vpEl) return done(null);
        const r = pane.getBoundingClientRect();
        const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
        const intervals = [], work = [];
        let renderedMin = Infinity, renderedMax = 0, i = 0, last = 0;
        const zoomOf = () => (vpEl.style.transform.match(/scale\(([^)]+)\)/) || [])[1];
        const z0 = zoomOf();
        const mouse = (type, x, y, target) =>
          target.dispatchEvent(new MouseEvent(type, { clientX: x, clientY: y, screenX: x, screenY: y, button: 0, buttons: type === 'mouseup' ? 0 : 1, bubbles: true, cancelable: true, view: window }));
        if (kind === 'pan') mouse('mousedown', cx, cy, pane);
        const step = () => {
          const now = performance.now();
          if (last) intervals.push(now - last);
          last = now;
          const count_ = document.querySelectorAll('[data-testid="node"]').length;
          renderedMin = Math.min(renderedMin, count_);
          renderedMax = Math.max(renderedMax, count_);
          if (i >= count) {
            if (kind === 'pan') mouse('mouseup', cx, cy, window);
            return done({ intervals: intervals.slice(2), work, renderedMin, renderedMax, zoom: `${z0} → ${zoomOf()}` });
          }
          const t0 = performance.now();
          if (kind === 'pan') {
            // A slow circle-ish sweep: right/down then back, 6 px per frame.
            const phase = Math.floor(i / (count / 4));
            const dx = [6, 0, -6, 0][phase] ?? 0, dy = [0, 6, 0, -6][phase] ?? 0;
            const k = i % (count / 4);
            const x = cx + (phase === 0 ? dx * k : phase === 1 ? 6 * (count / 4) : phase === 2 ? 6 * (count / 4) + dx * k : 0);
            const y = cy + (phase === 1 ? dy * k : phase === 2 ? 6 * (count / 4) : phase === 3 ? 6 * (count / 4) + dy * k : 0);
            mouse('mousemove', x, y, window);
          } else {
            const out = i < count / 2;
            pane.dispatchEvent(new WheelEvent('wheel', { deltaY: out ? 40 : -40, deltaMode: 0, clientX: cx, clientY: cy, bubbles: true, cancelable: true, view: window }));
          }
          work.push(performance.now() - t0);
          i++;
          requestAnimationFrame(step);
        };
        requestAnimationFrame(step);
      },
      kind, count,
    );
  const out = {};
  out.pan = await run('pan', 240);
  await sleep(500);
  out.zoom = await run('zoom', 160);
  await sleep(500);
  out['pan (zoomed out)'] = await (async () => {
    // zoom far out first (most nodes on screen), then pan there
    await b.execute(() => {
      const pane = document.querySelector('.react-flow__pane');
      const r = pane.getBoundingClientRect();
      for (let i = 0; i < 40; i++) pane.dispatchEvent(new WheelEvent('wheel', { deltaY: 40, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true, cancelable: true, view: window }));
    });
    await sleep(800);
    return run('pan', 240);
  })();
  for (const [k, v] of Object.entries(out)) if (!v) throw new Error(`no canvas to ${k}`);
  return out;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
