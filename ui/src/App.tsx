import { memo, useEffect, useMemo, useRef, useState } from 'react';
import { ReactFlowProvider } from '@xyflow/react';
import type { StoreApi } from 'zustand';
import { getBackend, type Backend } from './backend';
import { StoreContext, createAppStore, useApp, useAppStore, type AppState } from './store';
import { handleShortcut } from './shortcuts';
import { useDarkTheme } from './theme';
import { Canvas } from './components/Canvas';
import { ErrorBoundary } from './components/ErrorBoundary';
import { ConflictDialog } from './components/ConflictDialog';
import { EmptyState } from './components/EmptyState';
import { Header } from './components/Header';
import { Inspector } from './components/Inspector';
import { Palette } from './components/Palette';
import { Problems } from './components/Problems';
import { SourceView } from './components/SourceView';
import { Toasts } from './components/Toasts';
import type { View } from './types';

declare global {
  interface Window {
    __switchyard?: { ready: boolean; view: View | null };
  }
}

function Splitter({ onDrag }: { onDrag(dx: number): void }) {
  const start = useRef<number | null>(null);
  return (
    <div
      className="splitter"
      role="separator"
      aria-orientation="vertical"
      onPointerDown={(e) => {
        start.current = e.clientX;
        (e.target as HTMLElement).setPointerCapture?.(e.pointerId);
      }}
      onPointerMove={(e) => {
        if (start.current == null) return;
        onDrag(e.clientX - start.current);
        start.current = e.clientX;
      }}
      onPointerUp={() => (start.current = null)}
    />
  );
}

function Workspace() {
  const [sideWidth, setSideWidth] = useState(() => Math.round(Math.min(420, Math.max(260, (typeof window !== "undefined" ? window.innerWidth : 1280) * 0.26))));
  const [showPalette, setShowPalette] = useState(true);
  const [showSource, setShowSource] = useState(true);
  const [showInspector, setShowInspector] = useState(true);
  return (
    <div className="workspace">
      {showPalette ? <Palette /> : null}
      <main className="center">
        <div className="pane-toggles">
          <button type="button" className={`toggle${showPalette ? ' on' : ''}`} onClick={() => setShowPalette(!showPalette)} title="Toggle palette">
            Palette
          </button>
          <button type="button" className={`toggle${showSource ? ' on' : ''}`} onClick={() => setShowSource(!showSource)} title="Toggle source view">
            Source
          </button>
          <button type="button" className={`toggle${showInspector ? ' on' : ''}`} onClick={() => setShowInspector(!showInspector)} title="Toggle inspector">
            Inspector
          </button>
        </div>
        <ErrorBoundary label="canvas">
          <Canvas />
        </ErrorBoundary>
      </main>
      {showSource ? (
        <>
          <Splitter onDrag={(dx) => setSideWidth((w) => Math.min(1200, Math.max(240, w - dx)))} />
          <div className="side" style={{ width: sideWidth }}>
            <ErrorBoundary label="source view">
              <SourceView />
            </ErrorBoundary>
            <Problems />
          </div>
        </>
      ) : null}
      {showInspector ? (
        <ErrorBoundary label="inspector">
          <Inspector />
        </ErrorBoundary>
      ) : null}
    </div>
  );
}

/** Hook for end-to-end tests: `window.__switchyard` is refreshed after every committed render. */
function TestHook() {
  const ready = useApp((s) => s.ready);
  const view = useApp((s) => s.view);
  useEffect(() => {
    window.__switchyard = { ready, view };
  });
  return null;
}

const MemoWorkspace = memo(Workspace);
const MemoHeader = memo(Header);

function Shell() {
  const store = useAppStore();
  const hasView = useApp((s) => s.view !== null);
  const dark = useDarkTheme();

  useEffect(() => {
    const st = store.getState();
    let unsubs: Array<() => void> = [];
    let alive = true;
    const keep = (p: Promise<() => void>) =>
      p.then(
        (u) => (alive ? unsubs.push(u) : u()),
        (e) => st.toast('error', `Listening for events failed: ${e instanceof Error ? e.message : String(e)}`),
      );
    keep(st.backend.onDocumentChanged((e) => store.getState().documentChanged(e)));
    keep(st.backend.onFileDrop((paths) => void store.getState().openPath(paths[0])));
    void st.init();
    const onKey = (e: KeyboardEvent) => handleShortcut(e, store.getState());
    window.addEventListener('keydown', onKey);
    // Never fail silently: anything that slipped through becomes a toast.
    const onRejection = (e: PromiseRejectionEvent) => {
      const r = e.reason;
      store.getState().toast('error', `Unexpected error: ${r && typeof r === 'object' && 'message' in r ? String((r as { message: unknown }).message) : String(r)}`);
    };
    window.addEventListener('unhandledrejection', onRejection);
    return () => {
      alive = false;
      unsubs.forEach((u) => u());
      unsubs = [];
      window.removeEventListener('keydown', onKey);
      window.removeEventListener('unhandledrejection', onRejection);
    };
  }, [store]);

  return (
    <div className={`app ${dark ? 'theme-dark' : 'theme-light'}`} data-testid="app">
      <MemoHeader />
      {hasView ? <MemoWorkspace /> : <EmptyState />}
      <ConflictDialog />
      <Toasts />
      <TestHook />
    </div>
  );
}

export interface AppProps {
  backend?: Backend;
  store?: StoreApi<AppState>;
}

export function App({ backend, store }: AppProps) {
  const s = useMemo(() => store ?? createAppStore(backend ?? getBackend()), [store, backend]);
  return (
    <StoreContext.Provider value={s}>
      <ReactFlowProvider>
        <Shell />
      </ReactFlowProvider>
    </StoreContext.Provider>
  );
}
