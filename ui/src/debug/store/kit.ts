// What the store's slices share: the backend, the app store, the store's own get/set, and the
// bookkeeping that is not state to render (queued batches, the dialog's memory, load counters).
import type { StoreApi } from 'zustand';
import type { Backend } from '../../backend';
import type { AppState } from '../../store';
import type { ModelFolder } from '../model';
import type { RunBatch, RunStatusInfo } from '../types';
import type { DebugState } from './state';

/** Per-folder trust, asked before a run (src/trust/store.ts implements it; absent: no checks
 *  here, the shell's refusals are shown as errors). */
export interface RunGate {
  /** False when the run must wait (the manifest dialog is shown; `retry` runs after Confirm). */
  beforeRun(retry: () => void): boolean;
  /** A run refused by the shell: true when handled (the manifest dialog is shown). */
  refused(e: unknown, retry: () => void): boolean;
  /** Why running is refused now (restricted mode), else null. */
  blocked(): string | null;
}

export interface Kit {
  backend: Backend;
  gate: RunGate | null;
  app: StoreApi<AppState>;
  get: () => DebugState;
  set: (patch: Partial<DebugState>) => void;
  /** An error toast in the app. */
  toast(message: string): void;
  /** `run-events` batches waiting to be folded. */
  queue: RunBatch[];
  /** Batches that arrived while `run_start` was in flight (run id not known yet). */
  early: RunBatch[];
  /** The run being replaced by a start: its late batches are dropped. */
  replaced: string | null;
  /** The next fold, when one is scheduled. */
  scheduled: { raf: number | null; timer: ReturnType<typeof setTimeout> } | null;
  /** The interrupt the user closed the dialog of. */
  cancelled: string | null;
  /** The interrupt the dialog was last opened for. */
  shown: string | null;
  /** Bumped by every state load, so a late answer to an earlier one is ignored. */
  viewSeq: number;
  /** Events folded but not shown yet (a backlog being worked through), with their status. */
  unshown: { folder: ModelFolder; status: RunStatusInfo | null } | null;
  /** When the model was last shown. */
  shownAt: number;
  /** The state shown is the refusal of a load made while paused inside a nested run: load it
   *  again once the run is back at the top level. */
  nestedRefused: boolean;
}

export function createKit(backend: Backend, app: StoreApi<AppState>, get: () => DebugState, set: (patch: Partial<DebugState>) => void, gate: RunGate | null = null): Kit {
  return {
    backend,
    gate,
    app,
    get,
    set,
    toast: (message) => app.getState().toast('error', message),
    queue: [],
    early: [],
    replaced: null,
    scheduled: null,
    cancelled: null,
    shown: null,
    viewSeq: 0,
    unshown: null,
    shownAt: 0,
    nestedRefused: false,
  };
}
