import { memo, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { ReactFlowProvider } from '@xyflow/react';
import type { StoreApi } from 'zustand';
import { getBackend, type Backend } from './backend';
import { StoreContext, createAppStore, useApp, useAppStore, type AppState } from './store';
import { handleDebugShortcut, handleShortcut } from './shortcuts';
import { useDarkTheme } from './theme';
import { Canvas } from './components/Canvas';
import { ErrorBoundary } from './components/ErrorBoundary';
import { ConflictDialog } from './components/ConflictDialog';
import { RecoveryBanner } from './components/RecoveryBanner';
import { DiffPanel } from './diff/DiffPanel';
import { TestsPanel } from './tests-panel/TestsPanel';
import { EmptyState } from './components/EmptyState';
import { Header } from './components/Header';
import { Inspector } from './components/Inspector';
import { Palette } from './components/Palette';
import { Problems } from './components/Problems';
import { Toasts } from './components/Toasts';
import { DebugToolbar } from './components/debug/DebugToolbar';
import { InterruptDialog } from './components/debug/InterruptDialog';
import { ConnectDialog } from './components/debug/ConnectDialog';
import { RunsDialog } from './components/debug/RunsDialog';
import { RunConfigPanel } from './components/debug/RunConfigPanel';
import { DebugPanel } from './components/debug/DebugPanel';
import { NestedView } from './components/debug/NestedView';
import { SettingsDialog } from './components/settings/SettingsDialog';
import { TrustBanner, TrustQuestion } from './components/TrustBanner';
import { ManifestDialog } from './components/ManifestDialog';
import { ExternalLinkDialog } from './components/ExternalLink';
import { TrustContext, createTrustStore, useTrust, type TrustState } from './trust/store';
import { DebugContext, createDebugStore, nestedPause, useDebug, useDebugStore, type DebugMode, type DebugState } from './debug/store';
import type { View } from './types';
import { PANE_KEYS, clampDock, defaultDockHeight, defaultSideWidth, inspectorShown, inspectorToggleTitle, type PaneId } from './panes';
import { startupMark } from './startup';
import { lazyComponent } from './lazy';

/** The source view (CodeMirror, a third of the UI's code) is a chunk of its own: the pane starts closed. */
const SourceView = lazyComponent(() => import('./components/SourceView').then((m) => m.SourceView));

/** What end-to-end tests read of the debugger (docs/app-contract.md §5.2). */
export interface DebugHook {
  mode: DebugMode;
  state: string;
  step: number;
  steps: number;
  selectedStep: number | null;
  pending: string | null;
  /** Paused inside a nested run (the status says `running` meanwhile): which, and where. */
  nested: { run: string; node: string; agent: string; step: number; due: string[]; depth: number } | null;
}

/** What end-to-end tests read of the open document's trust (null until the shell answered). */
export interface TrustHook {
  root: string;
  trusted: boolean;
  confirmed: boolean;
  hash: string;
}

declare global {
  interface Window {
    __switchyard?: { ready: boolean; view: View | null; debug?: DebugHook; trust?: TrustHook | null };
    /** Actions for end-to-end tests that the UI reaches through native dialogs WebDriver cannot
     *  drive (Open trace…): the same store actions the buttons call. */
    __switchyardTest?: { openTrace(path: string): Promise<void>; openPath(path: string): Promise<void> };
  }
}

function Splitter({ onDrag, onDone }: { onDrag(dx: number): void; onDone(): void }) {
  const start = useRef<number | null>(null);
  return (
    <div
      className="splitter"
      role="separator"
      aria-orientation="vertical"
      aria-label="Resize the source view"
      onPointerDown={(e) => {
        start.current = e.clientX;
        (e.target as HTMLElement).setPointerCapture?.(e.pointerId);
      }}
      onPointerMove={(e) => {
        if (start.current == null) return;
        onDrag(e.clientX - start.current);
        start.current = e.clientX;
      }}
      onPointerUp={() => {
        if (start.current != null) onDone();
        start.current = null;
      }}
    />
  );
}

/** The debugger's bottom dock under the canvas: resizable (drag its top edge), collapsible. */
function DebugDock({ height, onResize, onDone }: { height: number; onResize(h: number): void; onDone(): void }) {
  const start = useRef<{ y: number; h: number } | null>(null);
  return (
    <div className="debug-dock" data-testid="debug-dock" style={{ height, flex: 'none', display: 'flex', flexDirection: 'column', minHeight: 0 }}>
      <div
        className="dock-splitter"
        role="separator"
        aria-orientation="horizontal"
        aria-label="Resize the debugger panel"
        style={{ height: 5, flex: 'none', cursor: 'row-resize', background: 'var(--border)', opacity: 0.6 }}
        onPointerDown={(e) => {
          start.current = { y: e.clientY, h: height };
          (e.target as HTMLElement).setPointerCapture?.(e.pointerId);
        }}
        onPointerMove={(e) => {
          if (!start.current) return;
          onResize(start.current.h - (e.clientY - start.current.y));
        }}
        onPointerUp={() => {
          if (start.current) onDone();
          start.current = null;
        }}
      />
      <div style={{ flex: 1, minHeight: 0, display: 'flex', flexDirection: 'column', overflow: 'hidden' }}>
        <ErrorBoundary label="debugger panel">
          <DebugPanel />
        </ErrorBoundary>
      </div>
    </div>
  );
}

const winW = () => (typeof window !== 'undefined' ? window.innerWidth : 1280);
const winH = () => (typeof window !== 'undefined' ? window.innerHeight : 800);

/** The source toggle's count: errors (else warnings) of the document, with the words for its tooltip. */
function problemCount(diags: View['diagnostics'] | undefined): { n: number; sev: 'error' | 'warning'; words: string } | null {
  let errors = 0;
  let warnings = 0;
  for (const d of diags ?? []) {
    if (d.severity === 'error') errors++;
    else if (d.severity === 'warning') warnings++;
  }
  if (errors + warnings === 0) return null;
  const words = [errors ? `${errors} error${errors === 1 ? '' : 's'}` : '', warnings ? `${warnings} warning${warnings === 1 ? '' : 's'}` : ''].filter(Boolean).join(', ');
  return errors ? { n: errors, sev: 'error', words } : { n: warnings, sev: 'warning', words };
}

/** The toggles drawn over the canvas's top-left corner: one per pane, with its key. */
function PaneToggles() {
  const store = useAppStore();
  const panes = useApp((s) => s.panes);
  const selected = useApp((s) => s.selection !== null);
  const diags = useApp((s) => s.view?.diagnostics);
  const count = useMemo(() => problemCount(diags), [diags]);
  const inspector = inspectorShown(panes.inspector, selected);
  const toggle = (id: PaneId) => store.getState().togglePane(id);
  const button = (id: PaneId, on: boolean, label: string, title: string, testid: string, extra?: React.ReactNode) => (
    <button type="button" className={`toggle${on ? ' on' : ''}`} onClick={() => toggle(id)} title={title} aria-pressed={on} data-testid={testid}>
      {label}
      {extra}
    </button>
  );
  return (
    <div className="pane-toggles" role="toolbar" aria-label="Panes">
      {button('palette', panes.palette, 'Palette', `${panes.palette ? 'Hide' : 'Show'} the node palette (${PANE_KEYS.palette})`, 'pane-toggle-palette')}
      {button(
        'source',
        panes.source,
        'Source',
        `${panes.source ? 'Hide' : 'Show'} the YAML source and its problems (${PANE_KEYS.source})${count ? ` · ${count.words}` : ''}`,
        'pane-toggle-source',
        count ? (
          <span className={`toggle-count sev-${count.sev}`} data-testid="pane-toggle-source-count">
            {count.n}
          </span>
        ) : null,
      )}
      {button('inspector', inspector, 'Inspector', inspectorToggleTitle(panes.inspector, selected), 'pane-toggle-inspector')}
      {button('debugger', panes.debugger, 'Debugger', `${panes.debugger ? 'Hide' : 'Show'} the debugger panel: timeline, state, calls (${PANE_KEYS.debugger})`, 'toggle-debug-panel')}
    </div>
  );
}

function Workspace() {
  startupMark('workspace_render');
  useLayoutEffect(() => startupMark('workspace_commit'), []);
  const store = useAppStore();
  const panes = useApp((s) => s.panes);
  const selected = useApp((s) => s.selection !== null);
  const [sideWidth, setSideWidth] = useState(() => panes.sideWidth ?? defaultSideWidth(winW()));
  const [dockHeight, setDockHeight] = useState(() => clampDock(panes.dockHeight ?? defaultDockHeight(winH()), winH()));
  const debugMode = useDebug((s) => s.mode);
  // A run (or a trace) brings the debugger panel back.
  useEffect(() => {
    if (debugMode !== 'idle' && !store.getState().panes.debugger) store.getState().setPanes({ debugger: true });
  }, [debugMode, store]);
  return (
    <div className="workspace">
      {panes.palette ? <Palette /> : null}
      <main className="center">
        <ErrorBoundary label="debugger toolbar">
          <DebugToolbar />
        </ErrorBoundary>
        <div className="canvas-area" style={{ position: 'relative', flex: 1, minHeight: 0, display: 'flex', flexDirection: 'column' }}>
          <PaneToggles />
          <ErrorBoundary label="canvas">
            <Canvas />
          </ErrorBoundary>
          <ErrorBoundary label="nested run">
            <NestedView />
          </ErrorBoundary>
        </div>
        {panes.debugger ? (
          <DebugDock height={dockHeight} onResize={(h) => setDockHeight(clampDock(h, winH()))} onDone={() => store.getState().setPanes({ dockHeight })} />
        ) : null}
      </main>
      {panes.source ? (
        <>
          <Splitter onDrag={(dx) => setSideWidth((w) => Math.min(1200, Math.max(240, w - dx)))} onDone={() => store.getState().setPanes({ sideWidth })} />
          <div className="side" style={{ width: sideWidth }} data-testid="side-pane">
            <ErrorBoundary label="source view">
              <SourceView />
            </ErrorBoundary>
            <Problems />
          </div>
        </>
      ) : null}
      {inspectorShown(panes.inspector, selected) ? (
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
  const mode = useDebug((s) => s.mode);
  const status = useDebug((s) => s.status);
  const steps = useDebug((s) => s.model.steps.length);
  const selectedStep = useDebug((s) => s.selectedStep);
  const pending = useDebug((s) => s.model.pending?.id ?? null);
  const nested = useDebug(nestedPause);
  const debugStore = useDebugStore();
  const store = useAppStore();
  const trust = useTrust((s) => s.status);
  useEffect(() => {
    window.__switchyardTest = {
      openTrace: (path) => debugStore.getState().openTrace(path),
      // What the Open… dialog does once a file is picked (the native dialog cannot be driven).
      openPath: (path) => store.getState().openPath(path),
    };
  }, [debugStore, store]);
  useEffect(() => {
    // `debug` is there once a document is open (the debugger lives in the workspace).
    window.__switchyard =
      view || mode !== 'idle'
        ? {
            ready,
            view,
            debug: {
              mode,
              state: status?.state ?? 'idle',
              step: status?.step ?? 0,
              steps,
              selectedStep,
              pending,
              nested: nested ? { run: nested.run, node: nested.node, agent: nested.agent, step: nested.step, due: nested.due.slice(), depth: nested.depth } : null,
            },
            trust: trust ? { root: trust.root, trusted: trust.trusted, confirmed: trust.confirmed, hash: trust.manifest.hash } : null,
          }
        : { ready, view };
  });
  return null;
}

const MemoWorkspace = memo(Workspace);
const MemoHeader = memo(Header);

function Shell() {
  const store = useAppStore();
  const debugStore = useDebugStore();
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
    keep(st.backend.onRunEvents((b) => debugStore.getState().receive(b)));
    void st.init();
    const onKey = (e: KeyboardEvent) => handleDebugShortcut(e, debugStore.getState(), store.getState()) || handleShortcut(e, store.getState());
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
  }, [store, debugStore]);

  return (
    <div className={`app ${dark ? 'theme-dark' : 'theme-light'}`} data-testid="app">
      <MemoHeader />
      <RecoveryBanner />
      <ErrorBoundary label="trust">
        <TrustBanner />
      </ErrorBoundary>
      {hasView ? <MemoWorkspace /> : <EmptyState />}
      <ConflictDialog />
      <ErrorBoundary label="diff">
        <DiffPanel />
      </ErrorBoundary>
      <ErrorBoundary label="tests">
        <TestsPanel />
      </ErrorBoundary>
      <ErrorBoundary label="run configuration">
        <RunConfigPanel />
      </ErrorBoundary>
      <ErrorBoundary label="interrupt dialog">
        <InterruptDialog />
        <RunsDialog />
        <ConnectDialog />
      </ErrorBoundary>
      <ErrorBoundary label="settings">
        <SettingsDialog />
      </ErrorBoundary>
      <ErrorBoundary label="run manifest">
        <TrustQuestion />
        <ManifestDialog />
      </ErrorBoundary>
      <ExternalLinkDialog open={(url) => store.getState().backend.openExternal(url)} />
      <Toasts />
      <TestHook />
    </div>
  );
}

export interface AppProps {
  backend?: Backend;
  store?: StoreApi<AppState>;
  /** A debugger store made by the caller (tests); by default one is made beside the app store. */
  debugStore?: StoreApi<DebugState>;
  /** A trust store made by the caller (tests); by default one is made beside the app store and
   *  is the debugger's run gate. */
  trustStore?: StoreApi<TrustState>;
}

export function App({ backend, store, debugStore, trustStore }: AppProps) {
  const s = useMemo(() => store ?? createAppStore(backend ?? getBackend()), [store, backend]);
  const t = useMemo(() => trustStore ?? createTrustStore(s.getState().backend, s), [trustStore, s]);
  const d = useMemo(() => debugStore ?? createDebugStore(s.getState().backend, s, t.getState().gate), [debugStore, s, t]);
  return (
    <StoreContext.Provider value={s}>
      <DebugContext.Provider value={d}>
        <TrustContext.Provider value={t}>
          <ReactFlowProvider>
            <Shell />
          </ReactFlowProvider>
        </TrustContext.Provider>
      </DebugContext.Provider>
    </StoreContext.Provider>
  );
}
