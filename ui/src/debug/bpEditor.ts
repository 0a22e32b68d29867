// The in-place breakpoint condition editor: which node's editor is open (one at a time). A plain
// store, so both the canvas (components/debug/BreakpointDot) and the keyboard shortcuts
// (src/shortcuts.ts, Shift+F9) can open it.
import { createStore, type StoreApi } from 'zustand';

export interface BpEditorState {
  node: string | null;
  /** The text the editor starts with (null: the breakpoint's current condition). */
  initial: string | null;
  open(node: string, initial?: string | null): void;
  close(): void;
}

export const bpEditor: StoreApi<BpEditorState> = createStore<BpEditorState>()((set) => ({
  node: null,
  initial: null,
  open: (node, initial = null) => set({ node, initial }),
  close: () => set({ node: null, initial: null }),
}));
