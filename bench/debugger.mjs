// Window benchmark of the debugger (issue 5): a 10,000-step run streamed to the real app.
//
//   xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" node bench/debugger.mjs
//
// Prints, each with its ratio target/measured (above 1 = better than the target):
//  - a 10,000-step run (the loop fixture counting to 5,000) from F5 until the status line says
//    finished and the timeline holds every step; the longest gap between animation frames while
//    events streamed in (the window stays responsive: target one frame at 10 fps, 100 ms);
//  - pause latency: on a run that would go on for millions of steps, the time from the Pause
//    click (inside the page) until the status line shows `paused` (target 100 ms), 5 times;
//  - memory: resident set of the app process plus its WebKit web process after the 10,000-step
//    run (target 500 MB), summed RSS and PSS (shared pages counted once), 1 s after the run and
//    again after the window was left alone for BENCH_SETTLE_S seconds (default 30).
import fs from 'node:fs';
import path from 'node:path';
import { APP, E2E, launch, preflight, sleep, startDriver, tmpDir, writeTrust } from '../e2e/lib.mjs';

// BENCH_STEPS=100000 for the 100,000-step run of issue 8 (default 10,001 steps).
const STEPS = Number(process.env.BENCH_STEPS || 10001);
const LIMIT = Math.max(1, Math.floor((STEPS - 1) / 2));
const PAUSE_TARGET = 100;
const FRAME_TARGET = 100;
const MEMORY_TARGET = 500;
/** Seconds the window is left alone after the run before memory is read again. */
const SETTLE_S = Number(process.env.BENCH_SETTLE_S || 30);

function loopFile(dir, limit) {
  const text = fs.readFileSync(path.join(E2E, 'fixtures', 'loop', 'loop.yaml'), 'utf8')
    .replace('"state.count < 5"', `"state.count < ${limit}"`)
    .replace('  loop:\n', '  loop:\n    langgraph_config:\n      recursion_limit: 100000000\n');
  const f = path.join(dir, `loop-${limit}.yaml`);
  fs.writeFileSync(f, text);
  return f;
}

/**
 * Memory in MB of this bench's own app: the `switchyard-app` process and its WebKit web process,
 * found through the driver (`appProcesses`: the processes carrying its tag), so that other apps,
 * web processes or builds on the machine are never counted. `rss` sums VmRSS (shared libraries
 * counted in both processes); `pss` sums PSS from /proc/<pid>/smaps_rollup (pages shared between
 * them, such as the WebKit and GTK libraries both map, counted once).
 */
function memoryOf(driver) {
  const read = (pid, file, re) => {
    try {
      const m = re.exec(fs.readFileSync(`/proc/${pid}/${file}`, 'utf8'));
      return m ? Number(m[1]) / 1024 : 0;
    } catch {
      return 0; // gone
    }
  };
  const out = { rss: 0, pss: 0, appPss: 0, webPss: 0 };
  for (const p of driver.appProcesses()) {
    const web = p.comm.startsWith('WebKitWebProces');
    if (!web && p.comm !== 'switchyard-app') continue;
    const pss = read(p.pid, 'smaps_rollup', /^Pss:\s+(\d+)/m);
    out.rss += read(p.pid, 'status', /VmRSS:\s+(\d+)/);
    out.pss += pss;
    if (web) out.webPss += pss;
    else out.appPss += pss;
  }
  if (!out.appPss || !out.webPss) throw new Error(`the app's processes were not found (${driver.appProcesses().map((p) => p.comm).join(', ') || 'none'})`);
  return out;
}

async function ready(b) {
  await b.waitUntil(async () => b.execute(() => !!(window.__switchyard && window.__switchyard.ready && window.__switchyard.view &&
    document.querySelector('[data-testid="dbg-continue"]'))), { timeout: 30000, interval: 100, timeoutMsg: 'the app did not get ready' });
}

async function main() {
  preflight();
  console.log(`app: ${APP}${APP.includes('/release/') ? '' : ' (debug build; set SWITCHYARD_APP to a release build for release numbers)'}`);
  const dir = tmpDir('switchyard-bench-dbg-');
  const driver = await startDriver({ rendering: 'app-default' });
  const out = {};
  try {
    // 1. 10,001 steps (or BENCH_STEPS) streamed to the window.
    const small = loopFile(dir, LIMIT);
    // Runs need the folder trusted and the run manifest confirmed, as a user would have it.
    writeTrust(driver.trustFile, { folders: [dir], agents: [small] });
    let b = await launch([small]);
    await b.setTimeout({ script: Math.max(300000, LIMIT * 60 + 20000) });
    await ready(b);
    await sleep(1000);
    out.memoryIdle = memoryOf(driver);
    out.run = await b.executeAsync((steps, timeout, done) => {
      const t0 = performance.now();
      let last = t0, maxGap = 0, frames = 0;
      const tick = () => {
        const now = performance.now();
        maxGap = Math.max(maxGap, now - last);
        last = now;
        frames++;
        const d = window.__switchyard.debug;
        if (d && d.state === 'finished' && d.steps >= steps) return done({ total: now - t0, maxGap, frames, steps: d.steps, step: d.step });
        if (now - t0 > timeout) return done(null);
        requestAnimationFrame(tick);
      };
      document.querySelector('[data-testid="dbg-continue"]').click();
      requestAnimationFrame(tick);
    }, 2 * LIMIT + 1, Math.max(280000, LIMIT * 60));
    if (!out.run) throw new Error(`the ${2 * LIMIT + 1}-step run did not finish in the window`);
    await sleep(1000);
    out.memory = memoryOf(driver);
    // The same window left alone for a while: WebKit's allocators give back the pages the
    // streaming left behind (what stays is what the run keeps: its rows and checkpoints).
    await sleep(SETTLE_S * 1000);
    out.memorySettled = memoryOf(driver);
    await b.deleteSession();
    await sleep(500);

    // 2. Pause latency on a run that goes on and on.
    const big = loopFile(dir, 100000000);
    writeTrust(driver.trustFile, { folders: [dir], agents: [small, big] });
    b = await launch([big]);
    await b.setTimeout({ script: 60000 });
    await ready(b);
    out.pauses = [];
    for (let i = 0; i < 5; i++) {
      const r = await b.executeAsync((first, done) => {
        const btn = (id) => document.querySelector(`[data-testid="${id}"]`);
        btn('dbg-continue').click();
        const t0 = performance.now();
        const waitRunning = () => {
          const d = window.__switchyard.debug;
          if (d && d.state === 'running' && d.steps > (first ? 2000 : 0) && performance.now() - t0 > 700) {
            const c0 = performance.now();
            btn('dbg-pause').click();
            const check = () => {
              const s = btn('dbg-status');
              if (s && s.getAttribute('data-state') === 'paused') return done({ ms: performance.now() - c0, step: window.__switchyard.debug.step, rows: window.__switchyard.debug.steps });
              if (performance.now() - c0 > 10000) return done(null);
              setTimeout(check, 1);
            };
            return check();
          }
          if (performance.now() - t0 > 30000) return done(null);
          setTimeout(waitRunning, 5);
        };
        waitRunning();
      }, i === 0);
      if (!r) throw new Error('the run did not pause');
      out.pauses.push(r.ms);
      out.pausedAt = r.step;
    }
    out.memoryLong = memoryOf(driver);
    await b.deleteSession();
  } finally {
    await driver.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const ms = (x) => `${x.toFixed(1)} ms`;
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const r = out.run;
  console.log(`\n${(2 * LIMIT + 1).toLocaleString('en')}-step run in the window: ${r.steps} timeline rows, F5 → finished shown in ${ms(r.total)} ` +
    `(${((r.total * 1000) / r.steps).toFixed(0)} µs per step incl. streaming and rendering), ${r.frames} frames painted`);
  console.log(`  longest gap between frames while streaming: ${ms(r.maxGap)} (target ${FRAME_TARGET} ms, ratio target/actual = ${(FRAME_TARGET / r.maxGap).toFixed(2)})`);
  const pm = med(out.pauses);
  console.log(`pause click → paused shown: median ${ms(pm)}, max ${ms(Math.max(...out.pauses))} over ${out.pauses.length} pauses ` +
    `(target ${PAUSE_TARGET} ms, ratio target/median = ${(PAUSE_TARGET / pm).toFixed(2)}); last pause at step ${out.pausedAt}`);
  for (const k of ['rss', 'pss']) {
    const what = k === 'rss' ? 'RSS, summed (shared libraries counted in both processes)' : 'PSS (shared pages counted once)';
    console.log(`memory (app + web process ${what}) after the ${(2 * LIMIT + 1).toLocaleString('en')}-step run: ${out.memory[k].toFixed(0)} MB ` +
      `(target ${MEMORY_TARGET} MB, ratio target/actual = ${(MEMORY_TARGET / out.memory[k]).toFixed(2)}; the same window before the run: ${out.memoryIdle[k].toFixed(0)} MB); ` +
      `after the long run (step ${out.pausedAt}): ${out.memoryLong[k].toFixed(0)} MB (ratio ${(MEMORY_TARGET / out.memoryLong[k]).toFixed(2)})`);
  }
  console.log(`  PSS ${SETTLE_S} s later, the window left alone: ${out.memorySettled.pss.toFixed(0)} MB (ratio target/actual = ${(MEMORY_TARGET / out.memorySettled.pss).toFixed(2)})`);
  const split = (m) => `app ${m.appPss.toFixed(0)} MB + web ${m.webPss.toFixed(0)} MB`;
  console.log(`  PSS by process: before the run ${split(out.memoryIdle)}; after it ${split(out.memory)}; settled ${split(out.memorySettled)}; after the long run ${split(out.memoryLong)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
