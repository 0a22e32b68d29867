// Application state: one zustand store per app instance (tests make their own).
import { createContext, useContext } from 'react';
import { createStore, useStore, type StoreApi } from 'zustand';
import { errorCode, errorMessage, isConflictError, type Backend } from './backend';
import type { BundleView } from './contract/shell';
import type { DocumentChanged, EditOp, ExportFormat, ExprError, Pos, RecoveryOffer, View, ViewEdge, ViewNode } from './types';
import { loadPanes, savePanes, toggledInspector, type PaneId, type Panes } from './panes';
import { startupMark, takeEarlyView } from './startup';

export type Selection = { type: 'node'; id: string } | { type: 'edge'; id: string } | null;
export type ThemePref = 'system' | 'light' | 'dark';

export interface Toast {
  id: number;
  kind: 'error' | 'info';
  message: string;
}

export interface ConflictState {
  /** Why the dialog is open ("save" = a save was refused, "event" = file changed on disk). */
  source: 'save' | 'event';
  diskText: string | null;
  showDiff: boolean;
}

/** A request to the source view to reveal (select) a line range. `nonce` makes repeats distinct. */
export interface RevealRequest {
  line: number;
  endLine: number;
  column?: number;
  nonce: number;
}

export interface FocusRequest {
  id: string;
  nonce: number;
}

export interface AppState {
  backend: Backend;
  view: View | null;
  /** The open coyote bundle (its agents are listed), or null. */
  bundle: BundleView | null;
  ready: boolean;
  recent: string[];
  selection: Selection;
  search: string;
  theme: ThemePref;
  toasts: Toast[];
  conflict: ConflictState | null;
  /** Unsaved changes of the open document recovered after a crash, waiting for an answer. */
  recovery: RecoveryOffer | null;
  /** The recovery banner shows the recovered changes against the current text. */
  recoveryDiff: boolean;
  reveal: RevealRequest | null;
  focus: FocusRequest | null;
  /** Bumped to ask the header's search box to take focus (Ctrl+F). */
  searchFocus: number;
  /** Text typed in the source view and not yet sent to the engine. */
  pendingText: string | null;
  /** The Settings dialog is open (⚙ in the header, Ctrl+,). */
  settingsOpen: boolean;
  /** Bumped after every saved settings change (views that show provider state reload). */
  settingsRevision: number;
  /** Which panes show around the canvas (remembered across launches: panes.ts). */
  panes: Panes;

  init(): Promise<void>;
  setView(view: View | null): void;
  openPath(path: string): Promise<void>;
  openDialog(): Promise<void>;
  /** Open… on a folder: a bundle lists its agents, an agent folder opens. */
  openFolderDialog(): Promise<void>;
  openBundle(path: string): Promise<void>;
  closeBundle(): Promise<void>;
  loadRecent(): Promise<void>;
  selectAgent(name: string): Promise<void>;
  edit(op: EditOp): Promise<boolean>;
  setText(text: string): Promise<void>;
  setPendingText(text: string | null): void;
  undo(): Promise<void>;
  redo(): Promise<void>;
  save(force?: boolean): Promise<void>;
  reload(): Promise<void>;
  keepMine(): Promise<void>;
  showDiff(): Promise<void>;
  closeConflict(): void;
  checkRecovery(): Promise<void>;
  restoreRecovery(): Promise<void>;
  discardRecovery(): Promise<void>;
  toggleRecoveryDiff(): void;
  documentChanged(e: DocumentChanged): void;
  setPositions(p: Record<string, Pos>): Promise<void>;
  relayout(): Promise<void>;
  checkExpr(kind: 'cel' | 'template', text: string): Promise<ExprError[]>;
  exportDiagram(format: ExportFormat, data: string): Promise<void>;
  select(sel: Selection, opts?: { reveal?: boolean; focus?: boolean }): void;
  deleteSelection(): Promise<void>;
  renameNode(from: string, to: string): Promise<void>;
  setSearch(s: string): void;
  searchNode(query: string): boolean;
  requestSearchFocus(): void;
  revealLine(line: number, endLine?: number, column?: number): void;
  setTheme(t: ThemePref): void;
  toast(kind: Toast['kind'], message: string): void;
  dismissToast(id: number): void;
  openSettings(open: boolean): void;
  settingsSaved(): void;
  /** Changes what the workspace shows and remembers it. */
  setPanes(patch: Partial<Panes>): void;
  /** A pane's toggle (its button or key): the inspector by what is on screen now. */
  togglePane(id: PaneId): void;
}

let toastSeq = 1;
let nonceSeq = 1;

export function createAppStore(backend: Backend): StoreApi<AppState> {
  return createStore<AppState>()((set, get) => {
    /** Run a backend command; failures become an error toast. Returns undefined on failure. */
    async function attempt<T>(what: string, fn: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
      try {
        return { ok: true, value: await fn() };
      } catch (error) {
        get().toast('error', `${what} failed: ${errorMessage(error)}`);
        return { ok: false, error };
      }
    }

    async function viewCmd(what: string, fn: () => Promise<View | null>): Promise<boolean> {
      const r = await attempt(what, fn);
      if (r.ok) {
        if (r.value) get().setView(r.value);
        return true;
      }
      return false;
    }

    return {
      backend,
      view: null,
      bundle: null,
      ready: false,
      recent: [],
      selection: null,
      search: '',
      theme: 'system',
      toasts: [],
      conflict: null,
      recovery: null,
      recoveryDiff: false,
      reveal: null,
      focus: null,
      searchFocus: 0,
      pendingText: null,
      settingsOpen: false,
      settingsRevision: 0,
      panes: loadPanes(),

      setPanes(patch) {
        const panes = { ...get().panes, ...patch };
        set({ panes });
        savePanes(panes);
      },

      togglePane(id) {
        const p = get().panes;
        if (id === 'inspector') get().setPanes({ inspector: toggledInspector(p.inspector, get().selection !== null) });
        else get().setPanes({ [id]: !p[id] });
      },

      openSettings(open) {
        set({ settingsOpen: open });
      },

      settingsSaved() {
        set({ settingsRevision: get().settingsRevision + 1 });
      },

      async init() {
        startupMark('init');
        // A bundle given on the command line (its agents are listed): asked beside the view. The
        // recovery offer and the recent files are asked once the view is there (the document of
        // the command line is among them), while the canvas renders.
        const bundle = attempt('Reading the open bundle', () => backend.bundleCurrent());
        const early = takeEarlyView<View | null>();
        const r = await attempt('Loading the document', () => early ?? backend.getView());
        startupMark('view_received');
        const recent = get().loadRecent();
        if (r.ok && r.value) {
          get().setView(r.value);
          await get().checkRecovery();
        }
        const b = await bundle;
        if (b.ok && b.value) set({ bundle: b.value });
        await recent;
        startupMark('ready');
        set({ ready: true });
      },

      setView(view) {
        const sel = get().selection;
        let selection = sel;
        if (!view) selection = null;
        else if (sel?.type === 'node' && !view.nodes.some((n) => n.id === sel.id)) selection = null;
        else if (sel?.type === 'edge' && !view.edges.some((e) => e.id === sel.id)) selection = null;
        set({ view, selection });
        // The engine's session knows about an unresolved disk conflict: make sure it is shown.
        if (view?.conflict && !get().conflict) set({ conflict: { source: 'event', diskText: null, showDiff: false } });
      },

      async openPath(path) {
        let r: { ok: true; value: View } | { ok: false; error: unknown };
        try {
          r = { ok: true, value: await backend.openPath(path) };
        } catch (error) {
          // A bundle folder (dropped, recent): list its agents instead.
          if (errorCode(error) === 'bundle') return get().openBundle(path);
          get().toast('error', `Opening ${path} failed: ${errorMessage(error)}`);
          r = { ok: false, error };
        }
        if (r.ok) {
          set({ selection: null, pendingText: null });
          get().setView(r.value);
          await get().checkRecovery();
          void get().loadRecent();
        }
      },

      async openDialog() {
        const r = await attempt('Opening a file', () => backend.openDialog());
        if (r.ok && r.value) {
          set({ selection: null, pendingText: null });
          get().setView(r.value);
          await get().checkRecovery();
          void get().loadRecent();
        }
      },

      async openFolderDialog() {
        const r = await attempt('Opening a folder', () => backend.openFolderDialog());
        if (!r.ok || !r.value) return;
        if (r.value.bundle) {
          set({ bundle: r.value.bundle });
          void get().loadRecent();
        } else if (r.value.view) {
          set({ selection: null, pendingText: null });
          get().setView(r.value.view);
          await get().checkRecovery();
          void get().loadRecent();
        }
      },

      async openBundle(path) {
        const r = await attempt(`Opening the bundle ${path}`, () => backend.bundleOpen(path));
        if (r.ok) {
          set({ bundle: r.value });
          void get().loadRecent();
        }
      },

      async closeBundle() {
        const r = await attempt('Closing the bundle', () => backend.bundleClose());
        if (r.ok) set({ bundle: null });
      },

      async loadRecent() {
        try {
          const recent = await backend.recentFiles();
          set({ recent: Array.isArray(recent) ? recent : [] });
        } catch (e) {
          get().toast('error', `Reading recent files failed: ${errorMessage(e)}`);
        }
      },

      async selectAgent(name) {
        const ok = await viewCmd(`Switching to agent ${name}`, () => backend.selectAgent(name));
        if (ok) set({ selection: null });
      },

      async edit(op) {
        // Text typed in the source view goes to the engine first, so the op applies to it.
        await flushPending();
        const r = await attempt(describeOp(op), () => backend.applyEdit(op));
        if (!r.ok) return false;
        get().setView(r.value);
        // Select what the op created or renamed.
        const target = op.op === 'add_node' ? op.name : op.op === 'rename_node' ? op.to : null;
        if (target && r.value.nodes.some((n) => n.id === target)) get().select({ type: 'node', id: target }, { reveal: true });
        return true;
      },

      async setText(text) {
        const r = await attempt('Updating the document', () => backend.setText(text));
        if (get().pendingText === text) set({ pendingText: null });
        if (r.ok) get().setView(r.value);
      },

      setPendingText(text) {
        set({ pendingText: text });
      },

      async undo() {
        await flushPending();
        await viewCmd('Undo', () => backend.undo());
      },

      async redo() {
        await flushPending();
        await viewCmd('Redo', () => backend.redo());
      },

      async save(force = false) {
        await flushPending();
        try {
          const v = await backend.save(force);
          get().setView(v);
          set({ conflict: null });
        } catch (e) {
          if (!force && isConflictError(e)) {
            set({ conflict: { source: 'save', diskText: null, showDiff: false } });
          } else {
            get().toast('error', `Saving failed: ${errorMessage(e)}`);
          }
        }
      },

      async reload() {
        const ok = await viewCmd('Reloading from disk', () => backend.reload());
        if (ok) {
          set({ conflict: null });
          get().toast('info', 'Reloaded the version on disk');
        }
      },

      async keepMine() {
        const ok = await viewCmd('Keeping your version', () => backend.keepMine());
        if (ok) {
          const from = get().conflict?.source;
          set({ conflict: null });
          // A refused save is retried: the user chose to overwrite the disk version.
          if (from === 'save') await get().save(true);
        }
      },

      async showDiff() {
        const r = await attempt('Reading the disk version', () => backend.diskText());
        if (r.ok) {
          const c = get().conflict ?? { source: 'event' as const, diskText: null, showDiff: false };
          set({ conflict: { ...c, diskText: r.value, showDiff: true } });
        }
      },

      closeConflict() {
        set({ conflict: null });
      },

      async checkRecovery() {
        try {
          const offer = await backend.recoveryOffer();
          set({ recovery: offer && offer.path === get().view?.path ? offer : null, recoveryDiff: false });
        } catch (e) {
          set({ recovery: null });
          get().toast('error', `Looking for unsaved changes from an earlier session failed: ${errorMessage(e)}`);
        }
      },

      async restoreRecovery() {
        await flushPending();
        const ok = await viewCmd('Restoring unsaved changes', () => backend.recoveryRestore());
        if (ok) {
          set({ recovery: null, recoveryDiff: false });
          get().toast('info', 'Restored your unsaved changes (Undo goes back to the version on disk); save to keep them');
        }
      },

      async discardRecovery() {
        const r = await attempt('Discarding the recovered changes', () => backend.recoveryDiscard());
        if (r.ok) set({ recovery: null, recoveryDiff: false });
      },

      toggleRecoveryDiff() {
        set({ recoveryDiff: !get().recoveryDiff });
      },

      documentChanged(e) {
        if (e.view) get().setView(e.view);
        if (e.kind === 'conflict') set({ conflict: { source: 'event', diskText: null, showDiff: false } });
        else if (e.kind === 'reloaded') get().toast('info', `${e.view?.file_name ?? 'The file'} changed on disk and was reloaded`);
        else if (e.kind === 'deleted') get().toast('error', `${e.view?.file_name ?? 'The file'} was deleted on disk; save to write it again`);
      },

      async setPositions(p) {
        await attempt('Saving node positions', () => backend.setPositions(p));
        const v = get().view;
        if (v) {
          // Mirror the new positions locally so a later redraw does not snap back.
          const nodes = v.nodes.map((n) => (p[n.id] ? { ...n, x: p[n.id].x, y: p[n.id].y } : n));
          set({ view: { ...v, nodes } });
        }
      },

      async relayout() {
        await viewCmd('Re-laying out', () => backend.relayout());
      },

      async checkExpr(kind, text) {
        try {
          return await backend.checkExpr(kind, text);
        } catch (e) {
          return [{ message: `could not check: ${errorMessage(e)}`, start: 0, end: text.length, severity: 'error' }];
        }
      },

      async exportDiagram(format, data) {
        const r = await attempt('Exporting the diagram', () => backend.exportDiagram(format, data));
        if (r.ok && r.value) get().toast('info', `Exported ${r.value}`);
      },

      select(sel, opts) {
        set({ selection: sel });
        if (sel?.type === 'node') {
          const n = get().view?.nodes.find((x) => x.id === sel.id);
          if (n && opts?.reveal !== false && n.line != null) {
            set({ reveal: { line: n.line, endLine: n.end_line ?? n.line, nonce: nonceSeq++ } });
          }
          if (opts?.focus) set({ focus: { id: sel.id, nonce: nonceSeq++ } });
        }
      },

      async deleteSelection() {
        const { selection, view } = get();
        if (!selection || !view) return;
        if (selection.type === 'node') {
          const n = view.nodes.find((x) => x.id === selection.id);
          if (!n) return;
          if (n.derived || n.kind === '__start__' || n.kind === '__end__') {
            get().toast('info', `\`${n.id}\` is derived from other nodes and cannot be deleted on its own`);
            return;
          }
          await get().edit({ op: 'delete_node', name: n.id });
        } else {
          const e = view.edges.find((x) => x.id === selection.id);
          if (!e) return;
          await get().edit(removeEdgeOp(e));
        }
      },

      async renameNode(from, to) {
        const name = to.trim();
        if (!name || name === from) return;
        await get().edit({ op: 'rename_node', from, to: name });
      },

      setSearch(s) {
        set({ search: s });
      },

      searchNode(query) {
        const q = query.trim().toLowerCase();
        const v = get().view;
        if (!q || !v) return false;
        const n =
          v.nodes.find((x) => x.id.toLowerCase() === q) ??
          v.nodes.find((x) => x.id.toLowerCase().startsWith(q)) ??
          v.nodes.find((x) => x.id.toLowerCase().includes(q));
        if (!n) {
          get().toast('info', `No node matches “${query.trim()}”`);
          return false;
        }
        get().select({ type: 'node', id: n.id }, { focus: true });
        return true;
      },

      requestSearchFocus() {
        set({ searchFocus: get().searchFocus + 1 });
      },

      revealLine(line, endLine, column) {
        set({ reveal: { line, endLine: endLine ?? line, column, nonce: nonceSeq++ } });
      },

      setTheme(t) {
        set({ theme: t });
      },

      toast(kind, message) {
        const id = toastSeq++;
        set({ toasts: [...get().toasts, { id, kind, message }].slice(-6) });
        if (typeof window !== 'undefined') {
          window.setTimeout(() => get().dismissToast(id), kind === 'error' ? 10000 : 4000);
        }
      },

      dismissToast(id) {
        set({ toasts: get().toasts.filter((t) => t.id !== id) });
      },
    };

    async function flushPending() {
      const p = get().pendingText;
      if (p != null && p !== get().view?.text) await get().setText(p);
      else if (p != null) set({ pendingText: null });
    }
  });
}

export function removeEdgeOp(e: ViewEdge): EditOp {
  const op: EditOp = { op: 'remove_edge', from: e.from, to: e.to, kind: e.kind };
  if (e.index != null) op.index = e.index;
  return op;
}

function describeOp(op: EditOp): string {
  switch (op.op) {
    case 'add_node':
      return `Adding ${op.kind} node “${op.name}”`;
    case 'delete_node':
      return `Deleting “${op.name}”`;
    case 'rename_node':
      return `Renaming “${op.from}” to “${op.to}”`;
    case 'set_field':
      return `Setting ${op.path.join('.')} of “${op.node}”`;
    case 'set_doc_field':
      return `Setting ${op.path.join('.')}`;
    case 'add_edge':
      return `Connecting ${op.from} → ${op.to}`;
    case 'remove_edge':
      return `Removing the edge ${op.from} → ${op.to}`;
    default:
      return op.op.replace(/_/g, ' ');
  }
}

// ------------------------------------------------------------------------------------------------
// React glue

export const StoreContext = createContext<StoreApi<AppState> | null>(null);

export function useAppStore(): StoreApi<AppState> {
  const s = useContext(StoreContext);
  if (!s) throw new Error('StoreContext missing');
  return s;
}

export function useApp<T>(selector: (s: AppState) => T): T {
  return useStore(useAppStore(), selector);
}

// Narrow selectors, shared so components subscribe to exactly what they draw.
export const selectView = (s: AppState) => s.view;
export const selectNodes = (s: AppState) => s.view?.nodes;
export const selectEdges = (s: AppState) => s.view?.edges;
export const selectSelectedNode = (s: AppState): ViewNode | undefined => {
  const sel = s.selection;
  if (sel?.type !== 'node') return undefined;
  return s.view?.nodes.find((n) => n.id === sel.id);
};
export const selectSelectedEdge = (s: AppState): ViewEdge | undefined => {
  const sel = s.selection;
  if (sel?.type !== 'edge') return undefined;
  return s.view?.edges.find((e) => e.id === sel.id);
};
