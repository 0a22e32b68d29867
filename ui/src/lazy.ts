// Components whose code is not needed for the first window (the source view's CodeMirror,
// Markdown's parser): their modules are separate chunks, loaded the first time one is drawn or
// when the window has become interactive (`preloadLazy`), whichever comes first. Once loaded they
// render synchronously; until then the `fallback` (default: nothing) is drawn in their place.
// The tests preload every chunk first (src/test/setup.ts), so they see what users see once loaded.
import { createElement, useEffect, useState, type ComponentType, type ReactNode } from 'react';

const preloads: Array<() => Promise<unknown>> = [];

export function lazyComponent<P extends object>(load: () => Promise<ComponentType<P>>, fallback?: (props: P) => ReactNode): ComponentType<P> & { preload(): Promise<unknown> } {
  let loaded: ComponentType<P> | null = null;
  let pending: Promise<unknown> | null = null;
  const preload = (): Promise<unknown> =>
    (pending ??= load().then(
      (c) => {
        loaded = c;
      },
      (e: unknown) => {
        pending = null; // asked again next time
        console.error('switchyard: loading a part of the window failed', e);
      },
    ));
  preloads.push(preload);
  function Lazy(props: P) {
    const [, setTick] = useState(0);
    const ready = loaded !== null;
    useEffect(() => {
      if (ready) return;
      let alive = true;
      void preload().then(() => alive && setTick((t) => t + 1));
      return () => {
        alive = false;
      };
    }, [ready]);
    if (loaded) return createElement(loaded, props);
    return fallback ? fallback(props) : null;
  }
  return Object.assign(Lazy, { preload });
}

/** Loads every lazy component's chunk (after the window is interactive; before the tests). */
export function preloadLazy(): Promise<unknown> {
  return Promise.all(preloads.map((p) => p()));
}
