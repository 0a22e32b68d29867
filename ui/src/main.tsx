import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import './styles.css';
import { App } from './App';
import { createFakeBackend, getBackend, isTauri, setBackend } from './backend';
import { createAppStore } from './store';
import { bigView, demoView, lokiView } from './demo';

const params = new URLSearchParams(location.search);
// Outside Tauri (plain `npm run dev` in a browser) run against the in-memory fake with a demo
// document; `?empty` shows the empty state, `?big=2000` a large synthetic graph, `?loki` a Loki graph, `?select=<node>` and `?theme=dark` preset the UI.
if (!isTauri()) {
  const big = Number(params.get('big') ?? 0);
  setBackend(createFakeBackend(params.has('empty') ? null : big > 0 ? bigView(big, params.has('chain')) : params.has('loki') ? lokiView() : demoView(), ['/demo/agent.yaml', '/demo/release-gate/graph.yaml']));
}

const store = createAppStore(getBackend());
if (!isTauri()) {
  const theme = params.get('theme');
  if (theme === 'dark' || theme === 'light') store.getState().setTheme(theme);
  const sel = params.get('select');
  if (sel) store.subscribe((s, prev) => {
    if (s.ready && !prev.ready) s.select({ type: 'node', id: sel }, { focus: true });
  });
}

// `?big=N&perf`: print rough timings (first render, selection, a changed View) in a corner.
if (!isTauri() && params.has('perf')) {
  (window as unknown as { __perfStore: typeof store }).__perfStore = store;
  const t0 = performance.now();
  const out = document.createElement('pre');
  out.style.cssText = 'position:fixed;left:170px;bottom:8px;z-index:99;background:#000;color:#0f0;padding:6px;font:12px monospace';
  document.body.appendChild(out);
  const frames = () => new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())));
  const lines: string[] = [];
  const log = (s: string) => {
    lines.push(s);
    out.textContent = lines.join('\n');
  };
  const wait = async () => {
    while (!document.querySelector('.react-flow__node')) await frames();
    log(`first render: ${Math.round(performance.now() - t0)} ms, ${document.querySelectorAll('.react-flow__node').length} nodes in DOM`);
    await new Promise((r) => setTimeout(r, 3000));
    log(`after fit: ${document.querySelectorAll('.react-flow__node').length} nodes in DOM`);
    let t = performance.now();
    store.getState().select({ type: 'node', id: 'n5' });
    await frames();
    log(`select: ${Math.round(performance.now() - t)} ms`);
    await new Promise((r) => setTimeout(r, 1000));
    const v = structuredClone(store.getState().view!);
    v.nodes[1].summary = 'changed';
    t = performance.now();
    store.getState().setView(v);
    await frames();
    log(`new View (1 node changed): ${Math.round(performance.now() - t)} ms`);
  };
  void wait();
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App store={store} />
  </StrictMode>,
);
