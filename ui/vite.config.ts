/// <reference types="vitest/config" />
import { defineConfig } from 'vite';

// The Tauri webview on Linux is WebKitGTK (Safari-class engine), and the bundle is loaded from
// the app's own protocol, so paths are relative and nothing is fetched from the network.
export default defineConfig({
  base: './',
  oxc: { jsx: { runtime: 'automatic' } },
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: ['safari15', 'es2021'],
    cssTarget: ['safari15'],
    sourcemap: false,
    chunkSizeWarningLimit: 1500,
    rolldownOptions: {
      onwarn(warning, warn) {
        // React Flow's "use client" marker is meaningless in a client-only bundle.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
  test: {
    environment: 'jsdom',
    globals: true,
    setupFiles: ['./src/test/setup.ts'],
    css: false,
    // The app-level walk-throughs render the whole window in jsdom; with the test files run in
    // parallel on 2 cores one can take longer than vitest's default 5 s (its steps wait up to
    // 5 s each), which failed a correct test once.
    testTimeout: 20000,
  },
});
