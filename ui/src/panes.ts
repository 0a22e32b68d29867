// Which panes the workspace shows around the canvas, remembered across launches (localStorage,
// which the app's webview keeps in its data folder). The canvas comes first: a new user sees the
// palette and the canvas; the source view opens with its toggle (Ctrl+U), the inspector while a
// node or edge is selected (or always, once pinned open with its toggle, Ctrl+I), the debugger
// panel when a run starts (or with Ctrl+J). What the user chose is what the next launch shows.
// Pure functions (tested in ui/src/test/panes.test.ts) plus the storage round trip.

/** `auto`: shown while a node or edge is selected; `open`: always; `closed`: never. */
export type InspectorMode = 'auto' | 'open' | 'closed';

export interface Panes {
  palette: boolean;
  source: boolean;
  inspector: InspectorMode;
  debugger: boolean;
  minimap: boolean;
  /** Width of the source view (px) once the user dragged its splitter; null: from the window. */
  sideWidth: number | null;
  /** Height of the debugger panel (px) once the user dragged it; null: from the window. */
  dockHeight: number | null;
}

export type PaneId = 'palette' | 'source' | 'inspector' | 'debugger';

export const DEFAULT_PANES: Readonly<Panes> = Object.freeze({
  palette: true,
  source: false,
  inspector: 'auto',
  debugger: false,
  minimap: true,
  sideWidth: null,
  dockHeight: null,
});

export const PANES_KEY = 'switchyard.panes.v1';

/** The keys that toggle each pane (shown in the toggles' tooltips). */
export const PANE_KEYS: Readonly<Record<PaneId, string>> = Object.freeze({
  palette: 'Ctrl+B',
  source: 'Ctrl+U',
  inspector: 'Ctrl+I',
  debugger: 'Ctrl+J',
});

const num = (v: unknown, lo: number, hi: number): number | null =>
  typeof v === 'number' && Number.isFinite(v) && v >= lo && v <= hi ? Math.round(v) : null;

/** What was stored, field by field: anything missing or not understood is the default. */
export function parsePanes(text: string | null | undefined): Panes {
  const out: Panes = { ...DEFAULT_PANES };
  if (!text) return out;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return out;
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return out;
  const r = raw as Record<string, unknown>;
  for (const k of ['palette', 'source', 'debugger', 'minimap'] as const) if (typeof r[k] === 'boolean') out[k] = r[k];
  if (r.inspector === 'auto' || r.inspector === 'open' || r.inspector === 'closed') out.inspector = r.inspector;
  out.sideWidth = num(r.sideWidth, 200, 4000);
  out.dockHeight = num(r.dockHeight, 80, 4000);
  return out;
}

type Store = Pick<Storage, 'getItem' | 'setItem'>;

function defaultStorage(): Store | null {
  try {
    return typeof localStorage !== 'undefined' ? localStorage : null;
  } catch {
    // Storage refused (a sandboxed page): nothing is remembered.
    return null;
  }
}

export function loadPanes(storage: Store | null = defaultStorage()): Panes {
  try {
    return parsePanes(storage?.getItem(PANES_KEY));
  } catch {
    return { ...DEFAULT_PANES };
  }
}

export function savePanes(p: Panes, storage: Store | null = defaultStorage()): void {
  try {
    storage?.setItem(PANES_KEY, JSON.stringify(p));
  } catch {
    // A full or refused storage: the choice lasts for this session only.
  }
}

/** Whether the inspector is on screen. */
export function inspectorShown(mode: InspectorMode, selected: boolean): boolean {
  return mode === 'open' || (mode === 'auto' && selected);
}

/** The inspector's toggle: hides it when it shows (for good), shows it when it does not (pinned). */
export function toggledInspector(mode: InspectorMode, selected: boolean): InspectorMode {
  return inspectorShown(mode, selected) ? 'closed' : 'open';
}

/** The inspector toggle's tooltip: what it does now, and its key. */
export function inspectorToggleTitle(mode: InspectorMode, selected: boolean): string {
  const key = PANE_KEYS.inspector;
  if (inspectorShown(mode, selected)) return `Hide the inspector (${key})`;
  return mode === 'closed' ? `Show the inspector (${key}); it is hidden even when a node is selected` : `Show the inspector (${key}); it also opens when you select a node or edge`;
}

/** The pane a key event toggles (Ctrl+B / U / I / J), or null. */
export function paneForKey(e: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'shiftKey' | 'altKey'>): PaneId | null {
  if (!(e.ctrlKey || e.metaKey) || e.shiftKey || e.altKey) return null;
  switch (e.key.toLowerCase()) {
    case 'b':
      return 'palette';
    case 'u':
      return 'source';
    case 'i':
      return 'inspector';
    case 'j':
      return 'debugger';
    default:
      return null;
  }
}

/** The source view's width before the user drags it: a quarter of the window, 280–420 px. */
export function defaultSideWidth(windowWidth: number): number {
  return Math.round(Math.min(420, Math.max(280, windowWidth * 0.26)));
}

/** The debugger panel's height before the user drags it: 30% of the window, at least 120 px. */
export function defaultDockHeight(windowHeight: number): number {
  return clampDock(windowHeight * 0.3, windowHeight);
}

export function clampDock(h: number, windowHeight: number): number {
  const max = Math.max(160, windowHeight - 200);
  return Math.round(Math.min(max, Math.max(120, h)));
}

/** Widths of the panes beside the canvas (styles.css: palette, splitter, inspector). */
export const PALETTE_W = 156;
export const INSPECTOR_W = 300;
export const SPLITTER_W = 5;

/** The canvas's width in a window `windowWidth` wide with these panes (selected: something is). */
export function canvasWidth(p: Panes, windowWidth: number, selected: boolean): number {
  let w = windowWidth;
  if (p.palette) w -= PALETTE_W;
  if (p.source) w -= (p.sideWidth ?? defaultSideWidth(windowWidth)) + SPLITTER_W;
  if (inspectorShown(p.inspector, selected)) w -= INSPECTOR_W;
  return w;
}
