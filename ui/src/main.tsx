import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import './styles.css';
import { App } from './App';
import { getBackend, isTauri } from './backend';
import { createAppStore } from './store';

async function start(): Promise<void> {
  // Outside Tauri (plain `npm run dev` in a browser) run against the in-memory fake with a demo
  // document (URL switches: src/fake/dev.ts). `import.meta.env.DEV` is the constant `false` in
  // `vite build`, so the branch and the fake go from the production bundle, which always uses
  // Tauri's backend; the Tauri path renders synchronously, as it did before.
  const dev = import.meta.env.DEV && !isTauri() ? await import('./fake/dev') : null;
  const params = new URLSearchParams(location.search);
  const store = createAppStore(dev ? dev.devBackend(params) : getBackend());
  if (dev) dev.devSetup(store, params);

  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <App store={store} />
    </StrictMode>,
  );
}

void start();
