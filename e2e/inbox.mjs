// The approvals inbox in a real browser (issue 29, "Prove it"): Debian's Chromium, headless,
// driven through WebDriver (`chromedriver` from the chromium-driver package, WebdriverIO).
//
// `switchyard serve` runs on a scratch copy of agents/ plus a generated agent whose approval
// question carries an XSS payload. Two release-gate runs and the payload run wait at approvals.
// Two inbox pages are open: A (desktop, dark) and B (a 375px phone, light). The test answers one
// approval in A and checks that it leaves B live (no reload), that the run completes, and that the
// audit log holds the answer with the name typed into A; that the payload is text in both pages
// (no element made, no alert, its handlers never ran); then that a token created while the pages
// are open makes B ask for it, and that with it B sends a free answer (`on_other`) whose Loki
// input question appears live, refuses a too-short answer with the engine's words, and takes a
// good one. Screenshots go to
// e2e/artifacts/ (inbox-phone*.png, inbox-desktop-dark*.png).
//
//   node e2e/inbox.mjs            (after `npm --prefix ui run build:inbox` and a cargo build)
//
// Environment: SWITCHYARD_CLI (default ~/.cache/switchyard-target/debug/switchyard),
// CHROMIUM (/usr/bin/chromium), CHROMEDRIVER (chromedriver on PATH), E2E_INBOX_KEEP=1 keeps
// the scratch folder. Every wait polls a condition under a deadline (ready.mjs's `T`).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { remote } from 'webdriverio';
import { T, poll } from './ready.mjs';

const E2E = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(E2E, '..');
const ARTIFACTS = path.join(E2E, 'artifacts');
const TARGET = process.env.CARGO_TARGET_DIR || path.join(os.homedir(), '.cache', 'switchyard-target');
const CLI = process.env.SWITCHYARD_CLI || path.join(TARGET, 'debug', 'switchyard');

function which(cmd) {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir, cmd);
    if (dir && fs.existsSync(p)) return p;
  }
  return null;
}
const CHROMIUM = process.env.CHROMIUM || which('chromium') || '/usr/bin/chromium';
const CHROMEDRIVER = process.env.CHROMEDRIVER || which('chromedriver') || '/usr/bin/chromedriver';

const PAYLOAD_IMG = '<img src=x onerror="window.__xss=1">';
const PAYLOAD_SCRIPT = '<script>window.__xss=2</script>';
const PAYLOAD_LINK = '[click me](javascript:window.__xss=3)';

function preflight() {
  const problems = [];
  if (!fs.existsSync(CLI)) problems.push(`the CLI is not built at ${CLI}: cargo build (./dev does), or set SWITCHYARD_CLI`);
  if (!fs.existsSync(CHROMIUM)) problems.push(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM)`);
  if (!fs.existsSync(CHROMEDRIVER)) problems.push(`no chromedriver at ${CHROMEDRIVER}: apt-get install chromium-driver (or set CHROMEDRIVER)`);
  if (problems.length) {
    for (const p of problems) console.error(`inbox e2e: ${p}`);
    process.exit(2);
  }
}

const children = [];
function cleanup() {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      try {
        c.kill('SIGKILL');
      } catch {
        // gone
      }
    }
  }
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A scratch copy of agents/ plus `xss-gate`, whose approval question holds the payload. */
function makeAgents(dir) {
  const agents = path.join(dir, 'agents');
  fs.cpSync(path.join(ROOT, 'agents'), agents, { recursive: true });
  const xss = path.join(agents, 'xss-gate');
  fs.mkdirSync(xss);
  const question = `Release **notes** say: ${PAYLOAD_IMG} ${PAYLOAD_SCRIPT} ${PAYLOAD_LINK} and [the docs](https://example.com/docs). Ship it?`;
  fs.writeFileSync(
    path.join(xss, 'graph.yaml'),
    [
      'name: xss-gate',
      'version: "1.0"',
      'start: ask',
      'initial_state:',
      '  api_key: "sk-proj-abcdefghijklmnopqrstuvwxyz0123"',
      `  comment: ${JSON.stringify(PAYLOAD_IMG)}`,
      'nodes:',
      '  ask:',
      '    type: approval',
      `    question: ${JSON.stringify(question)}`,
      '    options: ["ship", "hold"]',
      '    routes:',
      '      ship: done',
      '      hold: done',
      '    on_other: done',
      '    state_updates:',
      '      choice: "{{choice}}"',
      '  done:',
      '    type: end',
      '    output: "{{choice}}"',
      '',
    ].join('\n'),
  );
  return agents;
}

/** `switchyard serve` on 127.0.0.1:0; resolves with its URL once it says where it listens. */
async function startServer(agents, db, log) {
  const out = fs.openSync(log, 'a');
  const child = spawn(CLI, ['serve', '--agents', agents, '--listen', '127.0.0.1:0', '--db', db], {
    stdio: ['ignore', 'pipe', out],
    env: { ...process.env, SWITCHYARD_KEYRING: 'off', SWITCHYARD_PROVIDERS: path.join(path.dirname(db), 'no-providers.yaml') },
  });
  children.push(child);
  let url = null;
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const m = /^listening on (\S+)/.exec(line);
    if (m) url = m[1];
  });
  await poll(() => url || (child.exitCode !== null ? Promise.reject(new Error(`the server exited (${child.exitCode})`)) : null), {
    what: 'switchyard serve to say where it listens',
    timeout: T.request,
    describe: () => fs.readFileSync(log, 'utf8').slice(-2000),
  });
  return url;
}

async function api(base, method, p, body, token) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = `Bearer ${token}`;
  const r = await fetch(new URL(p, base), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(T.request) });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: r.status, json, headers: r.headers };
}

async function startDriver(port, log) {
  const out = fs.openSync(log, 'a');
  const child = spawn(CHROMEDRIVER, [`--port=${port}`, '--allowed-ips=127.0.0.1'], { stdio: ['ignore', out, out] });
  children.push(child);
  await poll(
    async () => {
      if (child.exitCode !== null) throw new Error(`chromedriver exited (${child.exitCode})`);
      const r = await fetch(`http://127.0.0.1:${port}/status`, { signal: AbortSignal.timeout(5000) });
      return r.ok && (await r.json()).value?.ready;
    },
    { what: 'chromedriver to answer /status', timeout: T.driver, describe: () => fs.readFileSync(log, 'utf8').slice(-2000) },
  );
  return child;
}

/** A headless Chromium session: `phone` = a 375px-wide touch screen; `dark` = prefers-color-scheme: dark. */
async function session(port, profile, { phone = false, dark = false } = {}) {
  const args = ['--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--no-default-browser-check', `--user-data-dir=${profile}`, '--lang=en-GB'];
  if (dark) args.push('--force-dark-mode', '--blink-settings=preferredColorScheme=0');
  else args.push('--blink-settings=preferredColorScheme=1');
  if (!phone) args.push('--window-size=1280,900');
  const chromeOptions = { binary: CHROMIUM, args };
  if (phone) chromeOptions.mobileEmulation = { deviceMetrics: { width: 375, height: 812, pixelRatio: 2, touch: true } };
  return remote({
    hostname: '127.0.0.1',
    port,
    path: '/',
    logLevel: process.env.E2E_LOG || 'warn',
    connectionRetryTimeout: T.request,
    connectionRetryCount: 2,
    capabilities: { browserName: 'chrome', unhandledPromptBehavior: 'ignore', 'goog:chromeOptions': chromeOptions },
  });
}

/** What a page shows: its cards, their state, whether it is live. */
const readPage = (b) =>
  b.execute(() => {
    const root = document.querySelector('[data-testid="inbox"]');
    return {
      live: root?.getAttribute('data-live') ?? null,
      marker: window.__inboxMarker ?? null,
      cards: [...document.querySelectorAll('[data-testid="inbox-card"]')].map((c) => ({ run: c.getAttribute('data-run-id'), kind: c.getAttribute('data-kind'), state: c.getAttribute('data-state') })),
      token: !!document.querySelector('[data-testid="token-prompt"]'),
    };
  });

async function waitPage(b, pred, what, timeout = T.ui) {
  let last = null;
  return poll(
    async () => {
      last = await readPage(b);
      return pred(last) ? last : null;
    },
    { what, timeout, describe: () => JSON.stringify(last) },
  );
}

async function shot(b, name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await b.saveScreenshot(file);
  console.log(`  screenshot ${path.relative(ROOT, file)}`);
  return file;
}

/** The payload is text in this page: nothing made of it, no handler run, no alert. */
async function checkPayloadIsText(b, xssRun, label) {
  const r = await b.execute((run) => {
    const card = document.querySelector(`[data-testid="inbox-card"][data-run-id="${run}"]`);
    const q = card?.querySelector('[data-testid="question"]');
    return {
      found: !!q,
      text: q?.textContent ?? '',
      imgs: document.querySelectorAll('img').length,
      scripts: [...document.querySelectorAll('script')].map((s) => s.getAttribute('src') || `inline:${s.textContent.slice(0, 40)}`),
      jsLinks: [...document.querySelectorAll('a[href]')].filter((a) => !/^(https?:|mailto:)/i.test(a.getAttribute('href'))).length,
      links: [...(q?.querySelectorAll('a') ?? [])].map((a) => ({ href: a.getAttribute('href'), target: a.getAttribute('target'), rel: a.getAttribute('rel') })),
      handlers: [...document.querySelectorAll('*')].flatMap((el) => el.getAttributeNames().filter((n) => n.startsWith('on'))).length,
      flag: window.__xss ?? null,
    };
  }, xssRun);
  const fail = (m) => {
    throw new Error(`${label}: ${m}: ${JSON.stringify(r)}`);
  };
  if (!r.found) fail('the payload card is missing');
  if (!r.text.includes(PAYLOAD_IMG)) fail('the <img onerror> payload is not shown as text');
  if (!r.text.includes(PAYLOAD_SCRIPT)) fail('the <script> payload is not shown as text');
  if (!r.text.includes('click me')) fail('the javascript: link text is gone');
  if (r.imgs !== 0) fail('an <img> element exists');
  if (r.scripts.some((s) => s.startsWith('inline:'))) fail('an inline <script> element exists');
  if (r.jsLinks !== 0) fail('a link with a non-http(s) URL exists');
  if (r.handlers !== 0) fail('an inline event handler attribute exists');
  if (r.flag !== null) fail('the payload ran (window.__xss is set)');
  if (r.links.length !== 1 || r.links[0].href !== 'https://example.com/docs' || r.links[0].target !== '_blank' || r.links[0].rel !== 'noopener noreferrer') {
    fail('the safe link is not a new-tab link without opener and referrer');
  }
  // An open alert makes every script call fail ('unexpected alert open': the session ignores
  // prompts rather than closing them), so one more call shows there is none.
  try {
    await b.execute(() => 1);
  } catch (e) {
    fail(`an alert is open: ${String(e?.message || e).slice(0, 200)}`);
  }
}

async function main() {
  preflight();
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-inbox-e2e-'));
  const log = (n) => path.join(dir, n);
  const agents = makeAgents(dir);
  const db = path.join(dir, 'server.sqlite');
  let a = null;
  let b = null;
  let ok = false;
  try {
    const base = await startServer(agents, db, log('server.log'));
    console.log(`inbox e2e: server at ${base}`);

    // The page and its headers.
    const page = await api(base, 'GET', 'inbox/');
    if (page.status !== 200 || !String(page.json).includes('<div id="root">')) {
      throw new Error(`GET /inbox/ is not the built page (${page.status}): ${String(page.json).slice(0, 300)} — run \`npm --prefix ui run build:inbox\`, then rebuild switchyard`);
    }
    const csp = page.headers.get('content-security-policy') || '';
    if (!/script-src 'self'/.test(csp) || /script-src[^;]*unsafe-inline/.test(csp)) throw new Error(`unexpected CSP: ${csp}`);

    // Three runs waiting at approvals: two release gates, one payload.
    const start = async (assistant, input) => {
      const r = await api(base, 'POST', 'runs', { assistant_id: assistant, input });
      if (r.status >= 300) throw new Error(`POST /runs ${assistant}: ${r.status} ${JSON.stringify(r.json)}`);
      return r.json.run_id;
    };
    const run1 = await start('release-gate', 'release 2.0');
    const run2 = await start('release-gate', 'release 2.1');
    const xssRun = await start('xss-gate', 'go');
    const all = [run1, run2, xssRun];
    let waiting = null;
    await poll(
      async () => {
        waiting = (await api(base, 'GET', 'switchyard/runs?status=interrupted')).json;
        return Array.isArray(waiting) && all.every((id) => waiting.some((w) => w.run_id === id));
      },
      { what: 'the three runs to wait at their approvals', timeout: T.request, describe: () => JSON.stringify(waiting)?.slice(0, 1500) },
    );

    // Two browsers on /inbox/.
    const port = await freePort();
    await startDriver(port, log('chromedriver.log'));
    [a, b] = await Promise.all([
      session(port, log('profile-a'), { dark: true }),
      session(port, log('profile-b'), { phone: true }),
    ]);
    const inbox = new URL('inbox/', base).href;
    await Promise.all([a.url(inbox), b.url(inbox)]);
    for (const [br, name] of [[a, 'A'], [b, 'B']]) {
      await waitPage(br, (p) => p.live === 'live' && all.every((id) => p.cards.some((c) => c.run === id && c.state === 'waiting')), `page ${name} to list the three runs, live`);
    }
    // A mark that only survives if page B is never reloaded.
    await b.execute(() => {
      window.__inboxMarker = 'no reload';
    });

    // The payload stays text, in both pages.
    await checkPayloadIsText(a, xssRun, 'page A');
    await checkPayloadIsText(b, xssRun, 'page B');

    // The phone layout: nothing wider than the screen.
    const widths = await b.execute(() => ({ inner: window.innerWidth, scroll: document.documentElement.scrollWidth }));
    if (widths.inner !== 375 || widths.scroll > widths.inner) throw new Error(`page B is not a 375px page without sideways scrolling: ${JSON.stringify(widths)}`);
    await shot(b, 'inbox-phone');
    await b.execute((run) => document.querySelector(`[data-testid="inbox-card"][data-run-id="${run}"] details`)?.setAttribute('open', ''), xssRun);
    await b.execute((run) => document.querySelector(`[data-testid="inbox-card"][data-run-id="${run}"]`)?.scrollIntoView(), xssRun);
    await shot(b, 'inbox-phone-state');
    await shot(a, 'inbox-desktop-dark');

    // Page A: a name, then "ship" on run 1.
    const name = 'Ada Lovelace';
    const nameField = await a.$('input[aria-label="Your name"], [data-testid="your-name"]');
    await nameField.setValue(name);
    const ship = await a.$(`[data-testid="inbox-card"][data-run-id="${run1}"] button[data-option="ship"]`);
    await ship.click();
    const tAnswered = Date.now();

    // Page A says who answered; page B drops the card without a reload; run 2 stays in both.
    await poll(
      async () => {
        const by = await a.execute((run) => document.querySelector(`[data-testid="inbox-card"][data-run-id="${run}"] [data-testid="answered-by"]`)?.textContent ?? null, run1);
        return by && by.startsWith(name) ? by : null;
      },
      { what: 'page A to show the answered card with the name', timeout: T.ui },
    );
    const pb = await waitPage(b, (p) => !p.cards.some((c) => c.run === run1), 'run 1 to disappear from page B');
    const liveMs = Date.now() - tAnswered;
    if (pb.marker !== 'no reload') throw new Error(`page B was reloaded: ${JSON.stringify(pb)}`);
    if (!pb.cards.some((c) => c.run === run2 && c.state === 'waiting')) throw new Error(`run 2 left page B too: ${JSON.stringify(pb)}`);
    console.log(`  answered in A → gone from B in ${liveMs} ms (no reload)`);

    // The run finishes; the audit log has the answer and the name.
    let r1 = null;
    await poll(
      async () => {
        r1 = (await api(base, 'GET', `switchyard/runs/${run1}`)).json;
        return r1?.status === 'completed';
      },
      { what: 'run 1 to complete', timeout: T.request, describe: () => JSON.stringify(r1)?.slice(0, 800) },
    );
    const audit = (await api(base, 'GET', `switchyard/answers?run_id=${encodeURIComponent(run1)}`)).json;
    if (!Array.isArray(audit) || audit.length !== 1 || audit[0].answer !== 'ship' || !String(audit[0].who).startsWith(name)) {
      throw new Error(`the audit log does not hold the answer with the name: ${JSON.stringify(audit)}`);
    }
    console.log(`  run 1 completed (${JSON.stringify(r1.output).slice(0, 60)}…); audit: ${audit[0].who} answered ${JSON.stringify(audit[0].answer)}`);
    await b.execute(() => window.scrollTo(0, 0));
    await shot(b, 'inbox-phone-after');
    await shot(a, 'inbox-desktop-dark-answered');

    // A token now exists: page B's next call is refused, it asks for the token, and the answer
    // goes through with it (kept in the tab's sessionStorage). The answer is a free one: run 2
    // goes to `on_other`, a Loki input with a default and `len(input) >= 3`, which appears live;
    // a too-short answer is refused in the page with the engine's words, a good one is taken.
    const made = spawnSync(CLI, ['token', 'create', 'inbox-e2e', '--db', db], { encoding: 'utf8', timeout: T.request });
    const token = (made.stdout || '').trim();
    if (made.status !== 0 || !token) throw new Error(`switchyard token create failed (${made.status}): ${made.stderr}`);
    if ((await api(base, 'GET', 'switchyard/runs')).status !== 401) throw new Error('the API still answers without a token');
    const hold = await b.$(`[data-testid="inbox-card"][data-run-id="${run2}"] button[data-option="hold"]`);
    await hold.click();
    await waitPage(b, (p) => p.token, 'page B to ask for the token');
    await (await b.$('[data-testid="token-input"]')).setValue(token);
    await (await b.$('[data-testid="token-prompt"] button[type="submit"]')).click();
    await waitPage(b, (p) => !p.token && p.cards.some((c) => c.run === run2 && c.state === 'waiting'), 'page B to list again with the token');
    const card2 = (kind) => `[data-testid="inbox-card"][data-run-id="${run2}"][data-kind="${kind}"]`;
    await (await b.$(`${card2('approval')} input[data-testid="answer-text"]`)).setValue('write notes first');
    await (await b.$(`${card2('approval')} button[data-testid="answer-submit"]`)).click();
    await waitPage(b, (p) => p.cards.some((c) => c.run === run2 && c.kind === 'approval' && c.state === 'answered'), 'run 2 answered from page B with the token');
    await waitPage(b, (p) => p.cards.some((c) => c.run === run2 && c.kind === 'input' && c.state === 'waiting'), "run 2's input question to appear in page B", T.request);
    const stored = await b.execute(() => sessionStorage.getItem('switchyard.inbox.token'));
    if (stored !== token) throw new Error('the token is not kept in sessionStorage');
    const field = await b.$(`${card2('input')} input[data-testid="answer-text"]`);
    if ((await field.getValue()) !== 'No notes.') throw new Error(`the input does not start with its default: ${await field.getValue()}`);
    await field.setValue('ok');
    await (await b.$(`${card2('input')} button[data-testid="answer-submit"]`)).click();
    const refusal = await poll(() => b.execute((sel) => document.querySelector(`${sel} [data-testid="answer-error"]`)?.textContent ?? null, card2('input')), {
      what: 'the too-short input answer to be refused in the page',
      timeout: T.ui,
    });
    if (refusal !== "Input failed validation 'len(input) >= 3' (got 2 chars)") throw new Error(`unexpected refusal: ${refusal}`);
    await shot(b, 'inbox-phone-input');
    await field.setValue('Notes for 2.1');
    await (await b.$(`${card2('input')} button[data-testid="answer-submit"]`)).click();
    await waitPage(b, (p) => p.cards.some((c) => c.run === run2 && c.kind === 'input' && c.state === 'answered'), "run 2's input answered");
    let r2 = null;
    await poll(
      async () => {
        r2 = (await api(base, 'GET', `switchyard/runs/${run2}`, undefined, token)).json;
        return r2?.status === 'completed';
      },
      { what: 'run 2 to complete', timeout: T.request, describe: () => JSON.stringify(r2)?.slice(0, 800) },
    );
    const audit2 = (await api(base, 'GET', `switchyard/answers?run_id=${encodeURIComponent(run2)}`, undefined, token)).json;
    if (audit2?.map((x) => x.answer).join('|') !== 'write notes first|Notes for 2.1' || !audit2.every((x) => String(x.who).includes('inbox-e2e'))) {
      throw new Error(`run 2's audit entries: ${JSON.stringify(audit2)}`);
    }
    console.log(`  run 2: on_other, then its input refused in the page and answered with the token (${audit2[1].who})`);
    await checkPayloadIsText(a, xssRun, 'page A at the end');
    await checkPayloadIsText(b, xssRun, 'page B at the end');
    ok = true;
    console.log(`inbox e2e: ok (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (e) {
    for (const [br, n] of [[a, 'a'], [b, 'b']]) {
      if (br) await shot(br, `inbox-failure-${n}`).catch(() => {});
    }
    for (const f of ['server.log', 'chromedriver.log']) {
      try {
        fs.copyFileSync(log(f), path.join(ARTIFACTS, `inbox-${f}`));
      } catch {
        // none
      }
    }
    console.error(`inbox e2e: FAILED: ${e?.stack || e}`);
    process.exitCode = 1;
  } finally {
    await Promise.allSettled([a?.deleteSession(), b?.deleteSession()]);
    cleanup();
    if (ok && !process.env.E2E_INBOX_KEEP) fs.rmSync(dir, { recursive: true, force: true });
    else console.error(`inbox e2e: scratch folder kept: ${dir}`);
  }
}

await main();
