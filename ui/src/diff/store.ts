// The graph diff shown over the canvas: what the open document is compared with (a git
// revision, default HEAD, or another file), the engine's answer, and the agent it is for. One
// store per app window (the diff belongs to the open document; a new document clears it).
import { createStore, useStore, type StoreApi } from 'zustand';
import { errorMessage, type Backend } from '../backend';
import type { GraphDiff } from '../contract/diff';

export interface DiffState {
  /** The panel is open. */
  open: boolean;
  /** What the document is compared with: a revision (`HEAD`) or a file path. */
  against: string;
  /** The answer; null before one (or after `clear`). */
  diff: GraphDiff | null;
  /** The agent the diff is for (the canvas' agent when it was asked). */
  agent: string | null;
  /** What went wrong (not in git, another dialect, ...). */
  error: string | null;
  busy: boolean;
}

export interface DiffActions {
  setOpen(open: boolean): void;
  setAgainst(against: string): void;
  /** Ask the engine: `against` as a revision, or as a file when it looks like a path. */
  compare(backend: Backend, agent: string | null): Promise<void>;
  clear(): void;
}

export type DiffStore = StoreApi<DiffState & DiffActions>;

/** A path (compared as a file) rather than a revision. */
export function isFileTarget(against: string): boolean {
  return against.includes('/') && /\.(ya?ml)$/i.test(against.trim());
}

export function createDiffStore(): DiffStore {
  return createStore<DiffState & DiffActions>()((set, get) => ({
    open: false,
    against: 'HEAD',
    diff: null,
    agent: null,
    error: null,
    busy: false,
    setOpen: (open) => set({ open }),
    setAgainst: (against) => set({ against }),
    async compare(backend, agent) {
      const against = get().against.trim() || 'HEAD';
      set({ busy: true, error: null });
      try {
        const diff = isFileTarget(against) ? await backend.diffDocument(null, against) : await backend.diffDocument(against, null);
        set({ diff, agent, busy: false, open: true });
      } catch (e) {
        set({ diff: null, error: errorMessage(e), busy: false, open: true });
      }
    },
    clear: () => set({ diff: null, error: null }),
  }));
}

/** The window's diff store (components read it with `useDiff`). */
export const diffStore: DiffStore = createDiffStore();

export function useDiff<T>(selector: (s: DiffState & DiffActions) => T): T {
  return useStore(diffStore, selector);
}
