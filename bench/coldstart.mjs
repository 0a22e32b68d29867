// Cold-start benchmark: the release app launched as a new process on a file, N times each, until
// the canvas is interactive, with no WebDriver in the way.
//
//   xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" node bench/coldstart.mjs [RUNS]
//   SWITCHYARD_APP=…/release/switchyard-app (else $CARGO_TARGET_DIR/release, else …/debug)
//   COLDSTART_COMPARE=another/switchyard-app: measured too, the two launched in turns
//
// Each run spawns the app with the file as its argument and SWITCHYARD_STARTUP_TRACE=exit: the
// page reports when its canvas is interactive (ui/src/startup.ts: the store ready with the
// document, its node elements in the DOM and shown, a frame painted and a task run after it),
// the shell prints that with its own marks (src-tauri/src/startup.rs) and quits. Time zero is the bench's
// clock just before spawn(); every mark is in ms since the Unix epoch, so the phases of one run
// line up across the bench, the shell and the page. One launch per file runs first and is not
// counted (the binary and WebKit's libraries into the page cache, as for any second launch).
// Prints the median with its ratio target/median (above 1: faster than the target) and the
// median of each phase.
//
// Targets (issue 31): the example agent (agents/support-triage) interactive in under 1.0 s, a
// generated 2,000-node sherma graph in under 1.5 s.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { shermaChain } from '../e2e/gen.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TARGET_DIR = process.env.CARGO_TARGET_DIR || path.join(os.homedir(), '.cache', 'switchyard-target');
const APP = process.env.SWITCHYARD_APP || [path.join(TARGET_DIR, 'release', 'switchyard-app'), path.join(TARGET_DIR, 'debug', 'switchyard-app')].find((p) => fs.existsSync(p));
const RUNS = Number(process.argv[2] || process.env.BENCH_RUNS || 7);
/** Another build of the app to measure in the same run, launches alternating (before/after). */
const COMPARE = process.env.COLDSTART_COMPARE || null;
const TIMEOUT = 60_000;

const now = () => performance.timeOrigin + performance.now();
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
  return { n: s.length, median: q(0.5), p95: q(0.95), min: s[0], max: s[s.length - 1] };
};
const ms = (x) => `${Math.round(x)} ms`;
const line = (what, s, target) =>
  `${what}: median ${ms(s.median)}, p95 ${ms(s.p95)} [n=${s.n}, min ${ms(s.min)}, max ${ms(s.max)}] ` +
  `(target ${ms(target)}, ratio target/median = ${(target / s.median).toFixed(2)}, target/p95 = ${(target / s.p95).toFixed(2)})`;

/** What each mark means, in the order they are usually reached (rust: the shell, page: the webview). */
const MARKS = {
  'rust:main': 'main() runs (exec, dynamic linking, Rust start)',
  'rust:context': 'Tauri context (configuration, embedded UI)',
  'rust:document_prepared': 'the document read, validated and laid out (own thread, from main())',
  'rust:built': 'app built (GTK initialised, event loop)',
  'rust:setup': 'window and webview created, setup hook',
  'rust:document_installed': 'the document is the session (recovery, recent files, file watch)',
  'rust:setup_done': 'setup hook done',
  'page:nav_start': 'navigation starts (WebKit web process up)',
  'rust:page_load_started': 'page load started (shell side)',
  'page:response_end': 'HTML loaded',
  'page:dom_interactive': 'HTML parsed',
  'page:bundle_eval': 'the JS bundle loaded and parsed, evaluation begins (get_view asked)',
  'rust:get_view': 'get_view answered by the shell',
  'page:main': 'bundle evaluated, main.tsx runs',
  'page:early_view': 'the view is in the store (main.tsx waited for it)',
  'page:dom_content_loaded': 'DOMContentLoaded done',
  'rust:page_load_finished': 'page load finished (shell side)',
  'page:workspace_render': 'first render of the workspace (canvas, panes) begins',
  'page:workspace_commit': 'the workspace is in the DOM',
  'page:init': 'the store asks the shell for the rest (first effects)',
  'page:view_received': 'the store has the view',
  'page:nodes_in_dom': 'node elements shown (in the DOM, measured by React Flow)',
  'page:ready': 'ready (recovery offer, bundle, recent files)',
  'page:interactive': 'a frame with the nodes painted, main thread free: interactive',
  'rust:startup_done': 'the shell got the report',
};

function launchOnce(app, file, env) {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const child = spawn(app, [file], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let report = null;
    let seen = null;
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`no start-up report within ${TIMEOUT} ms; stderr:\n${err.slice(-2000)}`));
    }, TIMEOUT);
    const kill = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    };
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^switchyard-startup (.*)$/m);
      if (m && !report) {
        seen = now();
        report = JSON.parse(m[1]);
      }
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      // The app quits by itself after the report; its WebKit helpers follow it. Anything of its
      // process group still there is ours to end.
      kill();
      if (!report) return reject(new Error(`the app exited (${code ?? sig}) without a start-up report; stderr:\n${err.slice(-2000)}`));
      const at = {};
      for (const [n, t] of report.rust) at[`rust:${n}`] ??= t;
      for (const [n, t] of report.page) at[`page:${n}`] ??= t;
      resolve({ at, t0, total: at['page:interactive'] - t0, seen: seen - t0 });
    });
  });
}

async function bench(label, file, target, env) {
  // With COMPARE, the two binaries take turns (the machine's load falls on both alike).
  const apps = COMPARE ? [APP, COMPARE] : [APP];
  const runs = apps.map(() => []);
  for (const app of apps) await launchOnce(app, file, env); // not counted
  for (let i = 0; i < RUNS; i++) for (const [k, app] of apps.entries()) runs[k].push(await launchOnce(app, file, env));
  if (COMPARE) {
    console.log(`\n${label}, ${RUNS} launches each, taking turns`);
    console.log(line(`cold start → interactive, ${label}, compared binary ${COMPARE}`, stats(runs[1].map((r) => r.total)), target));
    timeline(runs[1]);
  }
  console.log(`\n${label}, ${RUNS} launches`);
  return timeline(runs[0], label, target);
}

function timeline(runs, label, target) {
  if (label) console.log(line(`cold start → interactive, ${label}`, stats(runs.map((r) => r.total)), target));
  // The timeline: each mark's median time after spawn (marks a run lacks are left out).
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.at)))].filter((n) => n !== 't0');
  const rows = names.map((n) => {
    const xs = runs.map((r) => r.at[n] - r.t0).filter((x) => Number.isFinite(x));
    return { n, t: stats(xs).median };
  }).sort((a, b) => a.t - b.t);
  let prev = 0;
  for (const { n, t } of rows) {
    console.log(`  ${String(Math.round(t)).padStart(5)} ms (+${String(Math.round(t - prev)).padStart(4)})  ${n.padEnd(24)} ${MARKS[n] ?? ''}`);
    prev = t;
  }
  console.log(`  (report read by the bench: median ${ms(stats(runs.map((r) => r.seen)).median)} after spawn)`);
  return stats(runs.map((r) => r.total));
}

async function main() {
  if (!APP || !fs.existsSync(APP)) {
    console.error('coldstart: no app binary; build it (./dev bench-app) or set SWITCHYARD_APP');
    process.exit(2);
  }
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) {
    console.error('coldstart: no display: run under `xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp"`');
    process.exit(2);
  }
  console.log(`app: ${APP}${APP.includes('/release/') ? '' : ' (not a release build: set SWITCHYARD_APP to one for release numbers)'}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-coldstart-'));
  const scratch = (name) => {
    fs.mkdirSync(path.join(dir, name));
    return path.join(dir, name);
  };
  // A new user's folders (recent files, panes, WebKit's data), kept across the launches.
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: scratch('config'), XDG_DATA_HOME: scratch('data'), XDG_CACHE_HOME: scratch('cache'),
    SWITCHYARD_RUNS_DIR: scratch('runs'), SWITCHYARD_RECOVERY_DIR: scratch('recovery'), SWITCHYARD_TRUST: path.join(dir, 'trust.json'),
    NO_AT_BRIDGE: '1', SWITCHYARD_STARTUP_TRACE: 'exit',
  };
  delete env.SWITCHYARD_OPEN;
  try {
    const example = path.join(dir, 'support-triage');
    fs.cpSync(path.join(ROOT, 'agents', 'support-triage'), example, { recursive: true });
    const big = path.join(dir, 'chain-2000.yaml');
    fs.writeFileSync(big, shermaChain(2000));
    const a = await bench('the example agent (agents/support-triage, 7 nodes)', path.join(example, 'agent.yaml'), 1000, env);
    const b = await bench('a generated 2,000-node sherma graph', big, 1500, env);
    console.log(`\ncold start: example agent ${ms(a.median)} (target 1000 ms, ratio ${(1000 / a.median).toFixed(2)}), ` +
      `2,000-node graph ${ms(b.median)} (target 1500 ms, ratio ${(1500 / b.median).toFixed(2)})`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
