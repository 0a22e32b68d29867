// Global keyboard shortcuts → store actions.
import type { AppState } from './store';
import { nestedPause, type DebugState } from './debug/store';
import { bpEditor } from './debug/bpEditor';
import { paneForKey } from './panes';

export type ShortcutAction = 'undo' | 'redo' | 'save' | 'open' | 'search' | 'delete' | 'deselect' | 'settings' | null;

function isTextTarget(t: EventTarget | null): boolean {
  if (!t || !(t instanceof HTMLElement)) return false;
  const tag = t.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || t.isContentEditable || !!t.closest?.('.cm-editor');
}

/** Which action a key event means (pure, for tests). */
export function shortcutFor(e: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'shiftKey' | 'altKey' | 'target'>): ShortcutAction {
  const mod = e.ctrlKey || e.metaKey;
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (mod && !e.altKey) {
    if (key === 'z') return e.shiftKey ? 'redo' : 'undo';
    if (key === 'y') return 'redo';
    if (key === 's') return 'save';
    if (key === 'o') return 'open';
    if (key === 'f') return 'search';
    if (key === ',' && !e.shiftKey) return 'settings';
    return null;
  }
  if ((key === 'Delete' || key === 'Backspace') && !mod && !e.altKey && !isTextTarget(e.target)) return 'delete';
  if (key === 'Escape' && !mod && !isTextTarget(e.target)) return 'deselect';
  return null;
}

/** Handle a keydown; returns true when it was a shortcut (and prevents the default). */
export function handleShortcut(e: KeyboardEvent, state: AppState): boolean {
  // Ctrl+B / U / I / J: the palette, source view, inspector, debugger panel (not over a key the
  // source view's editor took for itself).
  const pane = state.view && !e.defaultPrevented ? paneForKey(e) : null;
  if (pane) {
    e.preventDefault();
    state.togglePane(pane);
    return true;
  }
  const action = shortcutFor(e);
  if (!action) return false;
  // Inside the source view, Ctrl+F is CodeMirror's own search.
  if (action === 'search' && (e.target as HTMLElement | null)?.closest?.('.cm-editor')) return false;
  // Undo/redo inside a plain input stays native; the source view has no own history.
  if ((action === 'undo' || action === 'redo') && isTextTarget(e.target) && !(e.target as HTMLElement).closest?.('.cm-editor')) return false;
  e.preventDefault();
  switch (action) {
    case 'undo':
      void state.undo();
      break;
    case 'redo':
      void state.redo();
      break;
    case 'save':
      void state.save();
      break;
    case 'open':
      void state.openDialog();
      break;
    case 'search':
      state.requestSearchFocus();
      break;
    case 'settings':
      state.openSettings(true);
      break;
    case 'delete':
      void state.deleteSelection();
      break;
    case 'deselect':
      if (state.conflict) return false;
      state.select(null);
      break;
  }
  return true;
}

// ------------------------------------------------------------------------------------------------
// Debugger keys (docs/app-contract.md §5.2): F5 run/continue, F10 step, F11 step into,
// Shift+F11 step out, Shift+F5 stop, Ctrl+Shift+F5 restart, F9 toggle the selected node's
// breakpoint, Shift+F9 edit its condition.

export type DebugAction = 'continue' | 'step' | 'step-into' | 'step-out' | 'stop' | 'restart' | 'toggle-breakpoint' | 'edit-breakpoint' | null;

/** The key of each debugger action, as the toolbar's tooltips name it (debugShortcutFor maps it
 *  back: ui/src/test/toolbar.test.tsx checks both ways). */
export const DEBUG_KEYS = Object.freeze({
  continue: 'F5',
  step: 'F10',
  'step-into': 'F11',
  'step-out': 'Shift+F11',
  stop: 'Shift+F5',
  restart: 'Ctrl+Shift+F5',
  'toggle-breakpoint': 'F9',
  'edit-breakpoint': 'Shift+F9',
} satisfies Record<Exclude<DebugAction, null>, string>);

/** Which debugger action a key event means (pure, for tests). */
export function debugShortcutFor(e: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'shiftKey' | 'altKey'>): DebugAction {
  if (e.altKey) return null;
  const mod = e.ctrlKey || e.metaKey;
  switch (e.key) {
    case 'F5':
      if (mod) return e.shiftKey ? 'restart' : null;
      return e.shiftKey ? 'stop' : 'continue';
    case 'F10':
      return mod || e.shiftKey ? null : 'step';
    case 'F11':
      if (mod) return null;
      return e.shiftKey ? 'step-out' : 'step-into';
    case 'F9':
      if (mod) return null;
      return e.shiftKey ? 'edit-breakpoint' : 'toggle-breakpoint';
    default:
      return null;
  }
}

/**
 * Handle a debugger key; returns true when it was one (and prevents the default, e.g. the
 * webview's reload on F5). Needs a document to be open.
 */
export function handleDebugShortcut(e: KeyboardEvent, debug: DebugState, app: AppState): boolean {
  const action = debugShortcutFor(e);
  if (!action) return false;
  // F5 reloads the webview: never let it through while a document is open.
  e.preventDefault();
  if (!app.view) return true;
  const state = debug.status?.state ?? 'idle';
  // Paused inside a nested run, the driver says `running` but the user is paused.
  const nested = nestedPause(debug) != null;
  const running = debug.mode === 'live' && (debug.starting || (state === 'running' && !nested));
  switch (action) {
    case 'continue':
      if (running) break;
      // An interrupt waits for an answer: F5 brings its dialog back instead of continuing.
      if (debug.mode === 'live' && state === 'interrupted') debug.reopenDialog();
      else void debug.continue();
      break;
    case 'step':
      if (running) break;
      if (debug.mode === 'live' && state === 'interrupted') debug.reopenDialog();
      else void debug.step();
      break;
    case 'step-into':
      if (running) break;
      if (debug.mode === 'live' && state === 'interrupted') debug.reopenDialog();
      else void debug.stepInto();
      break;
    case 'step-out':
      void debug.stepOut();
      break;
    case 'stop':
      void debug.stop();
      break;
    case 'restart':
      void debug.restart();
      break;
    case 'toggle-breakpoint':
    case 'edit-breakpoint': {
      const node = breakpointTarget(app);
      if (!node) {
        app.toast('info', 'Select a node first: breakpoints are set on nodes (F9)');
        break;
      }
      if (action === 'toggle-breakpoint') void debug.toggleBreakpoint(node);
      else bpEditor.getState().open(node);
      break;
    }
  }
  return true;
}

/** The selected node, when a breakpoint can be set on it (not a start/end marker). */
function breakpointTarget(app: AppState): string | null {
  const sel = app.selection;
  if (sel?.type !== 'node') return null;
  const n = app.view?.nodes.find((x) => x.id === sel.id);
  if (!n || n.kind === '__start__' || n.kind === '__end__') return null;
  return n.id;
}
