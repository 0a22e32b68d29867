// Work that can wait until the browser has painted (panes that are not the canvas, on big documents).

/**
 * Runs `fn` once the browser is idle after the next frame has been painted (requestIdleCallback,
 * at most `timeout` ms later; a timer where there is none). Returns a function that cancels it.
 */
export function whenIdle(fn: () => void, timeout = 300): () => void {
  let cancelled = false;
  let idle: number | undefined;
  let timer: number | undefined;
  const run = () => {
    if (!cancelled) fn();
  };
  const afterPaint = () => {
    if (cancelled) return;
    if (typeof window.requestIdleCallback === 'function') idle = window.requestIdleCallback(run, { timeout });
    else timer = window.setTimeout(run, 50);
  };
  // requestAnimationFrame runs before the paint; the timer after it lands once that frame is out.
  const raf = typeof window.requestAnimationFrame === 'function' ? window.requestAnimationFrame(() => (timer = window.setTimeout(afterPaint, 0))) : undefined;
  if (raf === undefined) timer = window.setTimeout(afterPaint, 0);
  return () => {
    cancelled = true;
    if (raf !== undefined) window.cancelAnimationFrame(raf);
    if (timer !== undefined) window.clearTimeout(timer);
    if (idle !== undefined) window.cancelIdleCallback?.(idle);
  };
}
