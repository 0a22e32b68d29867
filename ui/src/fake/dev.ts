// `npm run dev` in a plain browser (outside Tauri): the in-memory fake backend with a demo document
// and the URL switches of ui/README.md. Loaded by `src/main.tsx` only when `import.meta.env.DEV`,
// so none of it is in the production bundle (`npm run check:bundle`).
import type { StoreApi } from 'zustand';
import type { Backend } from '../backend';
import type { AppState } from '../store';
import { createFakeBackend } from './backend';
import { bigView, demoView, lokiView } from './demo';

/** The fake backend with the document the URL asks for: `?empty` shows the empty state,
 *  `?big=2000` a large synthetic graph (`&chain`: one long column), `?loki` a Loki graph. */
export function devBackend(params: URLSearchParams): Backend {
  const big = Number(params.get('big') ?? 0);
  const view = params.has('empty') ? null : big > 0 ? bigView(big, params.has('chain')) : params.has('loki') ? lokiView() : demoView();
  return createFakeBackend(view, ['/demo/agent.yaml', '/demo/release-gate/graph.yaml']);
}

/** `?theme=dark|light` and `?select=<node>` preset the UI; `?perf` prints rough timings. */
export function devSetup(store: StoreApi<AppState>, params: URLSearchParams): void {
  const theme = params.get('theme');
  if (theme === 'dark' || theme === 'light') store.getState().setTheme(theme);
  const sel = params.get('select');
  if (sel) store.subscribe((s, prev) => {
    if (s.ready && !prev.ready) s.select({ type: 'node', id: sel }, { focus: true });
  });
  if (params.has('perf')) perfOverlay(store);
}

/** `?big=N&perf`: print rough timings (first render, selection, a changed View) in a corner. */
function perfOverlay(store: StoreApi<AppState>): void {
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
