#!/usr/bin/env node
// Fails when the fake backend or the demo documents (src/fake/, dev and tests only) reached the
// production bundle. Run after `vite build` (`npm run check` does both): it reads ui/dist.
//
//   node scripts/check-bundle.mjs [dist-dir]
//
// Each marker is a string literal of src/fake/ that nothing else in src/ has; the script first
// checks that every marker is still in its source file, so renaming one cannot make this pass
// without looking.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ui = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = process.argv[2] ?? join(ui, 'dist');

/** [source file, a string of it that must not be in the bundle] */
const MARKERS = [
  ['src/fake/backend.ts', 'fake-run-'],
  ['src/fake/backend.ts', '/fake/runs.sqlite'],
  ['src/fake/backend.ts', 'unbalanced bracket'],
  ['src/fake/demo.ts', 'Support triage: a sherma agent'],
  ['src/fake/demo.ts', 'release-gate'],
  ['src/fake/dev.ts', '__perfStore'],
  ['src/fake/dev.ts', '/demo/agent.yaml'],
];

let failed = false;
const fail = (msg) => {
  console.error(`check-bundle: ${msg}`);
  failed = true;
};

for (const [file, marker] of MARKERS) {
  const path = join(ui, file);
  if (!existsSync(path)) fail(`${file} is gone: update the markers in ${relative(ui, fileURLToPath(import.meta.url))}`);
  else if (!readFileSync(path, 'utf8').includes(marker)) fail(`${file} no longer contains ${JSON.stringify(marker)}: pick another marker`);
}

const assets = join(dist, 'assets');
const bundle = existsSync(assets) ? readdirSync(assets).filter((f) => f.endsWith('.js')) : [];
if (bundle.length === 0) {
  fail(`no JavaScript in ${relative(process.cwd(), assets) || assets}: run \`npm run build\` first`);
} else {
  for (const f of bundle) {
    const text = readFileSync(join(assets, f), 'utf8');
    for (const [file, marker] of MARKERS) {
      if (text.includes(marker)) fail(`${relative(process.cwd(), join(assets, f))} contains ${JSON.stringify(marker)} from ${file}: the fake backend is in the production bundle`);
    }
  }
}

if (failed) process.exit(1);
console.log(`check-bundle: ok, none of ${MARKERS.length} fake-backend markers in ${bundle.length} JavaScript files of ${relative(process.cwd(), dist) || dist}`);
