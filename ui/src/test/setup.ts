// jsdom shims for React Flow and CodeMirror (see the xyflow "Testing" docs).
import { afterEach, beforeAll } from 'vitest';
import { cleanup } from '@testing-library/react';
import { preloadLazy } from '../lazy';
import '../App';
import '../components/Markdown';

// The chunks the app loads after its first window (ui/src/lazy.ts), loaded before any test.
beforeAll(() => preloadLazy());

afterEach(() => {
  cleanup();
  // The panes the app remembers (ui/src/panes.ts): every test starts as a new user.
  localStorage.clear();
});

class ResizeObserverShim {
  private cb: ResizeObserverCallback;
  constructor(cb: ResizeObserverCallback) {
    this.cb = cb;
  }
  observe(target: Element) {
    this.cb([{ target, contentRect: { width: 800, height: 600 } } as unknown as ResizeObserverEntry], this as unknown as ResizeObserver);
  }
  unobserve() {}
  disconnect() {}
}
globalThis.ResizeObserver = ResizeObserverShim as unknown as typeof ResizeObserver;

class DOMMatrixReadOnlyShim {
  m22: number;
  constructor(transform?: string) {
    const scale = transform?.match(/scale\(([0-9.]+)\)/)?.[1];
    this.m22 = scale !== undefined ? +scale : 1;
  }
}
(globalThis as unknown as { DOMMatrixReadOnly: unknown }).DOMMatrixReadOnly = DOMMatrixReadOnlyShim;

Object.defineProperties(globalThis.HTMLElement.prototype, {
  // Elements sized in px report that size; everything else acts like a 1000×800 pane.
  offsetHeight: { get() { return /px$/.test(this.style.height) ? parseFloat(this.style.height) : 800; } },
  offsetWidth: { get() { return /px$/.test(this.style.width) ? parseFloat(this.style.width) : 1000; } },
});
(globalThis.SVGElement.prototype as unknown as { getBBox: () => DOMRect }).getBBox = () =>
  ({ x: 0, y: 0, width: 0, height: 0 }) as DOMRect;

// CodeMirror measures text through ranges.
const emptyRects = () => ({ length: 0, item: () => null, [Symbol.iterator]: function* () {} }) as unknown as DOMRectList;
const zeroRect = () => ({ x: 0, y: 0, width: 0, height: 0, top: 0, left: 0, right: 0, bottom: 0, toJSON() {} }) as DOMRect;
Range.prototype.getClientRects = emptyRects;
Range.prototype.getBoundingClientRect = zeroRect;

if (!window.matchMedia) {
  window.matchMedia = ((query: string) => ({
    matches: false,
    media: query,
    onchange: null,
    addEventListener() {},
    removeEventListener() {},
    addListener() {},
    removeListener() {},
    dispatchEvent: () => false,
  })) as unknown as typeof window.matchMedia;
}
