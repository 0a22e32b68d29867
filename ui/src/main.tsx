import { peekEarlyView, reportWhenInteractive, startupMark } from './startup';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import './styles.css';
import { App } from './App';
import { getBackend, isTauri } from './backend';
import { createAppStore } from './store';
import type { View } from './types';

async function start(): Promise<void> {
  // Outside Tauri (plain `npm run dev` in a browser) run against the in-memory fake with a demo
  // document (URL switches: src/fake/dev.ts). `import.meta.env.DEV` is the constant `false` in
  // `vite build`, so the branch and the fake go from the production bundle, which always uses
  // Tauri's backend.
  const dev = import.meta.env.DEV && !isTauri() ? await import('./fake/dev') : null;
  const params = new URLSearchParams(location.search);
  const store = createAppStore(dev ? dev.devBackend(params) : getBackend());
  if (dev) dev.devSetup(store, params);
  startupMark('main');
  if (isTauri()) reportWhenInteractive(store, async (page) => (await import('@tauri-apps/api/core')).invoke('startup_done', { page }));
  // The view asked for at start (startup.ts): drawn by the first render instead of the start
  // screen and then the document (up to 1.5 s; a slower document arrives through `init`).
  const early = peekEarlyView<View | null>();
  if (early) {
    await Promise.race([early.then((v) => v && store.getState().setView(v), () => {}), new Promise((r) => setTimeout(r, 1500))]);
    startupMark('early_view');
  }

  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <App store={store} />
    </StrictMode>,
  );
}

void start();
