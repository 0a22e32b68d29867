// The approvals inbox page (`inbox.html` → `dist-inbox/`), a second build beside the app's
// (vite.config.ts) with the same toolchain. `switchyard serve` embeds `dist-inbox/` at compile
// time (crates/server/build.rs) and serves it under `/inbox/`, so paths are relative and the
// entry is renamed `index.html`. Its CSP (crates/server/src/inbox.rs) allows scripts and styles
// from the page's origin only: no inline script.
import fs from 'node:fs';
import path from 'node:path';
import { defineConfig, type Plugin } from 'vite';

const OUT = 'dist-inbox';

/** `dist-inbox/inbox.html` → `dist-inbox/index.html` (what `/inbox/` serves). */
function indexHtml(): Plugin {
  return {
    name: 'inbox-index-html',
    apply: 'build',
    closeBundle() {
      const dir = path.resolve(import.meta.dirname, OUT);
      const from = path.join(dir, 'inbox.html');
      if (fs.existsSync(from)) fs.renameSync(from, path.join(dir, 'index.html'));
    },
  };
}

export default defineConfig({
  base: './',
  oxc: { jsx: { runtime: 'automatic' } },
  clearScreen: false,
  plugins: [indexHtml()],
  server: { port: 5174, strictPort: true },
  build: {
    outDir: OUT,
    emptyOutDir: true,
    // Phones (Safari 15+, Chrome) and desktops.
    target: ['safari15', 'es2021'],
    cssTarget: ['safari15'],
    sourcemap: false,
    modulePreload: { polyfill: false },
    rolldownOptions: {
      input: path.resolve(import.meta.dirname, 'inbox.html'),
    },
  },
});
