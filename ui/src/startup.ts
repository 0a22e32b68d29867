// Start-up marks: when each phase of the window's start was reached, in ms since the Unix epoch
// (`performance.timeOrigin + performance.now()`, the clock of the shell's own marks). Once the
// canvas is interactive they go to the shell (`startup_done`), which prints them with its own when
// `SWITCHYARD_STARTUP_TRACE` is set (bench/coldstart.mjs) and otherwise ignores them.
//
// "Interactive": the store is ready (first view, recovery offer, recent files), the document's
// node elements are in the DOM and shown (React Flow has measured them), a frame with them has
// been painted, and a task queued after that frame has run (the main thread is free to handle
// input).
import type { StoreApi } from 'zustand';
import type { AppState } from './store';
import { whenIdle } from './idle';
import { preloadLazy } from './lazy';

const marks: Array<[string, number]> = [];
let sent = false;

const now = () => performance.timeOrigin + performance.now();

// The first module of the bundle to run (main.tsx imports it first): the bundle is loaded and
// parsed, its evaluation begins.
startupMark('bundle_eval');

// In the app, the document's view is asked for now, while the rest of the bundle evaluates, so
// the first render can draw it (main.tsx waits for it; the store's `init` takes the answer).
type Invoke = (cmd: string, args?: Record<string, unknown>) => Promise<unknown>;
const tauri = typeof window !== 'undefined' ? (window as unknown as { __TAURI_INTERNALS__?: { invoke?: Invoke } }).__TAURI_INTERNALS__ : undefined;
let early: Promise<unknown> | null = typeof tauri?.invoke === 'function' ? tauri.invoke('get_view') : null;
early?.catch(() => {}); // the store's `init` reports a failure

/** The answer of the `get_view` asked at start, once (null outside the app, or taken). */
export function takeEarlyView<T>(): Promise<T> | null {
  const p = early as Promise<T> | null;
  early = null;
  return p;
}

/** The same answer without taking it, for main.tsx to wait on (null outside the app). */
export function peekEarlyView<T>(): Promise<T> | null {
  return early as Promise<T> | null;
}

/** Records that the phase `name` was reached now (once per name; nothing after the report). */
export function startupMark(name: string): void {
  if (sent || marks.some(([n]) => n === name)) return;
  marks.push([name, now()]);
}

/** The page load's own milestones (Navigation Timing), as marks. */
function navigationMarks(): Array<[string, number]> {
  const nav = performance.getEntriesByType?.('navigation')[0] as PerformanceNavigationTiming | undefined;
  const out: Array<[string, number]> = [['nav_start', performance.timeOrigin]];
  if (!nav) return out;
  const at = (name: string, t: number) => {
    if (t > 0) out.push([name, performance.timeOrigin + t]);
  };
  at('response_end', nav.responseEnd);
  at('dom_interactive', nav.domInteractive);
  at('dom_content_loaded', nav.domContentLoadedEventEnd);
  return out;
}

/** Watches `store` until the canvas is interactive, then reports the marks to the shell. */
export function reportWhenInteractive(store: StoreApi<AppState>, send: (page: Array<[string, number]>) => Promise<unknown>): void {
  const deadline = performance.now() + 120_000;
  const check = () => {
    const s = store.getState();
    const hasNodes = (s.view?.nodes.length ?? 0) > 0;
    // A node element React Flow shows (it hides nodes until it has measured them).
    const inDom = hasNodes && [...document.querySelectorAll('[data-testid="node"]')].some((el) => (el.closest('.react-flow__node') as HTMLElement | null)?.style.visibility !== 'hidden');
    if (inDom) startupMark('nodes_in_dom');
    if (!s.ready || (hasNodes && !inDom)) {
      if (performance.now() < deadline) requestAnimationFrame(check);
      return;
    }
    if (!hasNodes) startupMark('empty_in_dom');
    // This frame is painted after the animation-frame callbacks; a task queued from one runs
    // after the paint, once the main thread is free again.
    setTimeout(() => {
      startupMark('interactive');
      const page = [...navigationMarks(), ...marks];
      sent = true;
      void send(page).catch(() => {});
      // What the first window did not need (the source view, Markdown), while the user looks.
      whenIdle(() => void preloadLazy(), 1000);
    }, 0);
  };
  requestAnimationFrame(check);
}
