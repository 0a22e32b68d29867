// Global keyboard shortcuts → store actions.
import type { AppState } from './store';

export type ShortcutAction = 'undo' | 'redo' | 'save' | 'open' | 'search' | 'delete' | 'deselect' | null;

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
    return null;
  }
  if ((key === 'Delete' || key === 'Backspace') && !mod && !e.altKey && !isTextTarget(e.target)) return 'delete';
  if (key === 'Escape' && !mod && !isTextTarget(e.target)) return 'deselect';
  return null;
}

/** Handle a keydown; returns true when it was a shortcut (and prevents the default). */
export function handleShortcut(e: KeyboardEvent, state: AppState): boolean {
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
