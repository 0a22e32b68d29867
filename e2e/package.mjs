// The release .deb as a user gets it (issue 31): installed with apt, its CLI and its desktop
// files checked, the installed /usr/bin/switchyard-app opened in a real window (Xvfb,
// tauri-driver + WebKitWebDriver) on the example agents and their nodes found in the DOM, then the
// package purged and every file it installed checked gone. Needs root (or sudo) and a display:
//
//   xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" node e2e/package.mjs target/packages/switchyard_*.deb
//
// `./dev package-test` builds the .deb and runs this; `./dev test` runs it last.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const APP = '/usr/bin/switchyard-app';
const CLI = '/usr/bin/switchyard';
const PKG = 'switchyard';
const DESKTOP = '/usr/share/applications/dev.switchyard.studio.desktop';
const ICON_SIZES = [16, 22, 24, 32, 48, 64, 128, 256, 512];
// The harness (e2e/lib.mjs) reads which app and CLI to drive when it is loaded.
process.env.SWITCHYARD_APP = APP;
process.env.SWITCHYARD_CLI = CLI;
const lib = await import('./lib.mjs');
const { ROOT, T, fixture, launch, preflight, screenshot, startDriver, waitForView } = lib;

let passed = 0;
let failed = 0;
function ok(what) {
  passed++;
  console.log(`ok   ${what}`);
}
async function step(what, fn) {
  const t0 = Date.now();
  try {
    await fn();
    ok(`${what} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    return true;
  } catch (e) {
    failed++;
    console.log(`FAIL ${what}\n     ${String(e && e.stack ? e.message : e).split('\n').join('\n     ')}`);
    return false;
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(`assertion failed: ${msg}`);
}

const root = process.getuid && process.getuid() === 0;
/** Runs a command (as root: through sudo unless we are root); returns {status, stdout, stderr}. */
function run(cmd, args, { asRoot = false, env = {}, input } = {}) {
  const [c, a] = asRoot && !root ? ['sudo', ['env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), cmd, ...args]] : [cmd, args];
  const r = spawnSync(c, a, { encoding: 'utf8', env: { ...process.env, ...env }, input, maxBuffer: 64 << 20 });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  return r;
}
function must(cmd, args, opts) {
  const r = run(cmd, args, opts);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}
const installed = () => run('dpkg-query', ['-W', '-f=${Status}', PKG]).stdout.includes('install ok installed');
const known = () => run('dpkg-query', ['-W', '-f=${Status}', PKG]).status === 0 &&
  !run('dpkg-query', ['-W', '-f=${Status}', PKG]).stdout.includes('not-installed');
const apt = (...args) => must('apt-get', args, { asRoot: true, env: { DEBIAN_FRONTEND: 'noninteractive' } });
/** The package that owns `p` (dpkg -S), trying the merged-/usr twin of the path; null if none. */
function owner(p) {
  const twins = [p, fs.existsSync(p) ? fs.realpathSync(p) : p];
  for (const t of [...twins]) twins.push(t.startsWith('/usr/') ? t.slice(4) : `/usr${t}`);
  for (const t of twins) {
    const r = run('dpkg-query', ['-S', t]);
    if (r.status === 0) return r.stdout.split('\n')[0].split(':')[0].split(',').map((s) => s.trim());
  }
  return null;
}
/** Width and height of a PNG file (its IHDR). */
function pngSize(f) {
  const b = fs.readFileSync(f);
  assert(b.subarray(1, 4).toString() === 'PNG', `${f} is a PNG`);
  return [b.readUInt32BE(16), b.readUInt32BE(20)];
}

async function main() {
  const deb = path.resolve(process.argv[2] || '');
  if (!process.argv[2] || !fs.existsSync(deb)) {
    console.error('usage: node e2e/package.mjs path/to/switchyard_VERSION_ARCH.deb (./dev package builds it)');
    process.exit(2);
  }
  if (!root && run('sudo', ['-n', 'true']).status !== 0) {
    console.error('e2e/package.mjs installs and purges a package: run it as root or with password-less sudo');
    process.exit(2);
  }
  const t0 = Date.now();
  const field = (f) => must('dpkg-deb', ['-f', deb, f]).trim();
  const version = field('Version');
  const depends = field('Depends').split(',').map((d) => d.trim().split(/[\s(]/)[0]);
  console.log(`package: ${path.basename(deb)} (${(fs.statSync(deb).size / 1048576).toFixed(1)} MB), Depends: ${field('Depends')}`);
  // Paths the package ships (dpkg-deb -c: "./usr/bin/switchyard" ...).
  const shipped = must('dpkg-deb', ['-c', deb]).split('\n').filter(Boolean).map((l) => {
    const name = l.slice(l.indexOf(' ./') + 2).replace(/ -> .*$/, '');
    return { path: name.replace(/\/$/, '') || '/', dir: l.startsWith('d') };
  }).filter((e) => e.path !== '/');
  const shippedFiles = shipped.filter((e) => !e.dir).map((e) => e.path);

  if (known()) {
    console.log(`note: ${PKG} is on this machine already (${run('dpkg-query', ['-W', '-f=${Status} ${Version}', PKG]).stdout}); purging it first`);
    apt('purge', '-y', PKG);
  }
  await step('nothing the package ships is on disk before it is installed', () => {
    const there = shippedFiles.filter((f) => fs.existsSync(f));
    assert(there.length === 0, `already on disk: ${there.join(', ')}`);
  });

  await step('the Depends field names every library the binaries link (WebKitGTK, GTK, ...)', () => {
    for (const need of ['libwebkit2gtk-4.1-0', 'libgtk-3-0', 'libc6']) assert(depends.includes(need), `Depends has ${need}: ${depends}`);
    // What installing it pulls in: Depends, and what those depend on (libc6 brings libgcc-s1).
    const pulled = new Set(depends);
    for (const d of depends) {
      const r = run('dpkg-query', ['-W', '-f=${Depends}, ${Pre-Depends}', d]);
      if (r.status === 0) for (const x of r.stdout.split(/[,|]/)) if (x.trim()) pulled.add(x.trim().split(/[\s(:]/)[0]);
    }
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-deb-'));
    try {
      must('dpkg-deb', ['-x', deb, tmp]);
      for (const bin of ['usr/bin/switchyard-app', 'usr/bin/switchyard']) {
        const needed = [...must('readelf', ['-d', path.join(tmp, bin)]).matchAll(/\(NEEDED\).*\[(.+)\]/g)].map((m) => m[1]);
        assert(needed.length > 0, `${bin} links shared libraries`);
        const cache = must('/sbin/ldconfig', ['-p']);
        for (const lib of needed) {
          const m = cache.match(new RegExp(`^\\s+${lib.replace(/[.+]/g, '\\$&')} \\(libc6,x86-64[^)]*\\) => (\\S+)$`, 'm')) ||
            cache.match(new RegExp(`^\\s+${lib.replace(/[.+]/g, '\\$&')} \\([^)]*\\) => (\\S+)$`, 'm'));
          assert(m, `${bin} needs ${lib}, which is not on this machine`);
          const pkgs = owner(m[1]);
          assert(pkgs, `no package owns ${m[1]} (${lib})`);
          assert(pkgs.some((p) => pulled.has(p)), `${bin} needs ${lib} from ${pkgs.join('/')}, which Depends does not name (nor what it names)`);
        }
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  let files = [];
  let dirs = [];
  try {
    const up = await step(`apt-get install -y ${path.basename(deb)}`, () => {
      apt('install', '-y', '--no-install-recommends', deb);
      assert(installed(), `${PKG} is installed`);
      assert(run('dpkg-query', ['-W', '-f=${Version}', PKG]).stdout === version, 'the installed version is the .deb\'s');
    });
    if (!up) throw new Error('the package did not install');
    // Everything dpkg says it installed, captured before it is removed.
    const listed = must('dpkg', ['-L', PKG]).split('\n').filter((l) => l && l !== '/.');
    files = listed.filter((p) => !fs.lstatSync(p).isDirectory());
    dirs = listed.filter((p) => fs.lstatSync(p).isDirectory());
    await step('dpkg -L lists exactly what the .deb ships', () => {
      assert(JSON.stringify([...files].sort()) === JSON.stringify([...shippedFiles].sort()), `dpkg -L files ${files} vs .deb ${shippedFiles}`);
    });

    await step('the app and the CLI are /usr/bin/switchyard-app and /usr/bin/switchyard (executable ELF)', () => {
      for (const f of [APP, CLI]) {
        const st = fs.statSync(f);
        assert(st.mode & 0o111, `${f} is executable`);
        assert(fs.readFileSync(f).subarray(0, 4).toString('latin1') === '\x7fELF', `${f} is an ELF binary`);
        assert(owner(f)?.includes(PKG), `${f} belongs to ${PKG}`);
      }
    });

    await step('switchyard --version names the version and the commit', () => {
      const out = must(CLI, ['--version']).trim();
      const m = out.match(/^switchyard (\S+) \((unknown|([0-9a-f]{12}) (\d{4}-\d\d-\d\d))\)$/);
      assert(m, `--version: ${out}`);
      assert(version.startsWith(`${m[1]}-`) || version === m[1], `CLI version ${m[1]} is the package's ${version}`);
      const head = run('git', ['-C', ROOT, 'rev-parse', '--short=12', 'HEAD']);
      if (head.status === 0) assert(m[3] === head.stdout.trim(), `commit ${m[3]} is the clone's HEAD ${head.stdout.trim()} (package built from this tree)`);
      console.log(`     ${out}`);
    });

    await step('switchyard validate on the example agents', () => {
      for (const a of ['agents/support-triage/agent.yaml', 'agents/release-gate']) {
        const r = run(CLI, ['validate', path.join(ROOT, a)]);
        assert(r.status === 0, `validate ${a}: exit ${r.status}\n${r.stdout}${r.stderr}`);
      }
      // And a broken file is refused (exit 1), so 0 above means something.
      const bad = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bad-')), 'agent.yaml');
      fs.writeFileSync(bad, fs.readFileSync(path.join(ROOT, 'agents/support-triage/agent.yaml'), 'utf8').replace(/manifest_version: 1/, 'manifest_version: 1\nbogus_key: [1'));
      const r = run(CLI, ['validate', bad]);
      fs.rmSync(path.dirname(bad), { recursive: true, force: true });
      assert(r.status === 1, `validate of a broken file exits 1, got ${r.status}`);
    });

    await step('the desktop entry: valid, opens YAML files and folders, its icon at every size', () => {
      must('desktop-file-validate', [DESKTOP]);
      const entry = fs.readFileSync(DESKTOP, 'utf8');
      const key = (k) => (entry.match(new RegExp(`^${k}=(.*)$`, 'm')) || [])[1];
      assert(/^switchyard-app %[fFuU]$/.test(key('Exec')), `Exec=${key('Exec')}`);
      const mimes = key('MimeType').split(';').filter(Boolean);
      for (const m of ['application/x-yaml', 'text/yaml', 'inode/directory']) assert(mimes.includes(m), `MimeType has ${m}`);
      for (const n of ICON_SIZES) {
        const f = `/usr/share/icons/hicolor/${n}x${n}/apps/${key('Icon')}.png`;
        assert(fs.existsSync(f), `icon ${f}`);
        assert(JSON.stringify(pngSize(f)) === JSON.stringify([n, n]), `${f} is ${n}x${n}, got ${pngSize(f)}`);
      }
      // "Open with Switchyard": the desktop database (desktop-file-utils' trigger) lists it.
      const cache = '/usr/share/applications/mimeinfo.cache';
      assert(fs.existsSync(cache), `${cache} (desktop-file-utils) exists`);
      const text = fs.readFileSync(cache, 'utf8');
      for (const m of ['application/x-yaml', 'inode/directory']) {
        assert(new RegExp(`^${m}=.*dev\\.switchyard\\.studio\\.desktop`, 'm').test(text), `mimeinfo.cache offers Switchyard for ${m}`);
      }
    });

    await step('bash completion completes subcommands and flags; man pages are there', () => {
      const script = `source /usr/share/bash-completion/completions/switchyard
        fn=$(complete -p switchyard | sed -E 's/.*-F ([^ ]+) .*/\\1/')
        COMP_WORDS=(switchyard val); COMP_CWORD=1; COMP_LINE="switchyard val"; COMP_POINT=\${#COMP_LINE}
        "$fn" switchyard val switchyard; printf '%s\\n' "\${COMPREPLY[@]}"
        COMP_WORDS=(switchyard validate --fo); COMP_CWORD=2; COMP_LINE="switchyard validate --fo"; COMP_POINT=\${#COMP_LINE}
        "$fn" switchyard --fo validate; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const out = must('bash', ['-c', script]).split('\n').map((s) => s.trim());
      assert(out.includes('validate'), `"switchyard val<TAB>" offers validate: ${out}`);
      assert(out.includes('--format'), `"switchyard validate --fo<TAB>" offers --format: ${out}`);
      for (const f of ['/usr/share/zsh/vendor-completions/_switchyard', '/usr/share/fish/vendor_completions.d/switchyard.fish']) {
        assert(fs.readFileSync(f, 'utf8').includes('validate'), `${f} knows validate`);
      }
      for (const page of ['switchyard', 'switchyard-validate', 'switchyard-run', 'switchyard-serve']) {
        const f = `/usr/share/man/man1/${page}.1.gz`;
        const text = must('zcat', [f]);
        assert(/^\.TH /m.test(text) && text.includes(page.replace('switchyard-', '')), `${f} is a man page of ${page}`);
      }
    });

    await step('the installed app opens the example agents: every node of `switchyard graph` is in the window', async () => {
      preflight();
      const driver = await startDriver({ rendering: 'app-default' });
      let b = null;
      try {
        const cases = [
          { what: 'a sherma file', arg: path.join(fixture('support-triage'), 'agent.yaml'), dialect: 'sherma' },
          { what: 'a Loki agent folder', arg: fixture('release-gate'), dialect: 'loki' },
        ];
        for (const c of cases) {
          b = await launch([c.arg]);
          // The window is the installed binary's.
          const procs = driver.appProcesses().filter((p) => p.comm === 'switchyard-app');
          assert(procs.length === 1, `one switchyard-app process, got ${JSON.stringify(procs)}`);
          const exe = fs.readlinkSync(`/proc/${procs[0].pid}/exe`);
          assert(exe === APP, `the app runs ${exe}, not ${APP}`);
          const view = await waitForView(b, (v) => v.nodes.length > 0, c.what);
          assert(view.dialect === c.dialect, `dialect ${c.dialect}, got ${view.dialect}`);
          const ids = () => b.execute(() => [...document.querySelectorAll('[data-testid="node"]')].map((e) => e.getAttribute('data-node-id')));
          await b.waitUntil(async () => (await ids()).length === view.nodes.length, { timeout: T.ui, timeoutMsg: 'not every node was rendered' });
          const graph = JSON.parse(must(CLI, ['graph', c.arg, '--format', 'json']));
          const dom = (await ids()).sort();
          const want = graph.nodes.map((n) => n.id).sort();
          assert(JSON.stringify(dom) === JSON.stringify(want), `DOM nodes ${dom} = switchyard graph nodes ${want}`);
          await screenshot(b, `package-${c.dialect}`);
          console.log(`     ${c.what}: ${dom.length} nodes (${dom.join(', ')})`);
          await b.deleteSession();
          b = null;
        }
      } finally {
        if (b) await b.deleteSession().catch(() => {});
        await driver.stop();
      }
    });
  } finally {
    if (known()) {
      await step(`apt-get purge -y ${PKG}`, () => {
        apt('purge', '-y', PKG);
        assert(!known(), `${PKG} is gone from dpkg's database`);
      });
    }
  }

  if (files.length) {
    await step(`nothing of the package is left on disk (${files.length} files, ${dirs.length} folders listed by dpkg -L)`, () => {
      const left = files.filter((f) => fs.existsSync(f) || (() => { try { fs.lstatSync(f); return true; } catch { return false; } })());
      assert(left.length === 0, `files left after purge: ${left.join(', ')}`);
      // A folder may stay only while another package owns it.
      const leftDirs = dirs.filter((d) => fs.existsSync(d) && !owner(d));
      assert(leftDirs.length === 0, `folders of the package left after purge: ${leftDirs.join(', ')}`);
      const cache = '/usr/share/applications/mimeinfo.cache';
      if (fs.existsSync(cache)) assert(!fs.readFileSync(cache, 'utf8').includes('dev.switchyard.studio'), 'mimeinfo.cache no longer offers Switchyard');
    });
  }
  console.log(`\n${passed} passed, ${failed} failed (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
