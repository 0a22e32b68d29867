// The debugger store: one zustand store per app instance, beside the app store (../../store.ts).
// It drives runs through the backend (docs/app-contract.md §5), folds `run-events` batches into a
// `RunModel` (../model/) once per animation frame, and keeps what the debugger views show: the
// status, the selected step and its state (with the diff from the step before), the interrupt
// dialog, breakpoints, earlier runs to compare. One module per concern:
//
//   state.ts        what the store holds, and the selectors the views read it with
//   events.ts       the live run's event batches, folded frame by frame
//   controls.ts     start, stepping, pause / stop / restart, answers, state edits, rewinds
//   breakpoints.ts  breakpoints and break on error
//   states.ts       the state at a step: the engine's checkpoints, or a recorded run's states
//                   rebuilt by the engine from its trace
//   history.ts      earlier runs kept to compare, traces opened for review
//   runs.ts         the durable runs list: resume, delete
//   kit.ts          what the slices share (internal)
import { createContext, useContext } from 'react';
import { createStore, useStore, type StoreApi } from 'zustand';
import type { Backend } from '../../backend';
import type { AppState } from '../../store';
import { emptyModel } from '../model';
import { breakpointActions } from './breakpoints';
import { controlActions } from './controls';
import { eventActions } from './events';
import { historyActions } from './history';
import { createKit, type RunGate } from './kit';
import { remoteActions } from './remote';
import { runsActions } from './runs';
import { isRemotePath } from '../types';
import { defaultRunConfig, type DebugState } from './state';

export type { RunGate } from './kit';
import { stateActions } from './states';

export {
  currentPending,
  defaultRunConfig,
  isLive,
  latestStep,
  nestedPause,
  nestedViewKey,
  remoteOnly,
  shownModel,
  shownNestedPause,
  shownTrace,
  type DebugMode,
  type DebugState,
  type HistoryEntry,
  type NestedViewEntry,
  type PanelTab,
  type StateView,
} from './state';

/** `gate`: per-folder trust asked before every run (the app passes the trust store's). */
export function createDebugStore(backend: Backend, app: StoreApi<AppState>, gate: RunGate | null = null): StoreApi<DebugState> {
  return createStore<DebugState>()((set, get) => {
    const k = createKit(backend, app, get, set, gate);
    // Another document opened: the remote one is closed.
    app.subscribe((a) => {
      if (get().remoteDoc && !isRemotePath(a.view?.path)) set({ remoteDoc: null });
    });
    return {
      mode: 'idle',
      config: defaultRunConfig(),
      info: null,
      status: null,
      model: emptyModel(),
      history: [],
      viewing: null,
      breakpoints: [],
      breakOnError: false,
      selectedStep: null,
      stateView: null,
      dialogOpen: false,
      configOpen: false,
      panelTab: 'timeline',
      answerError: null,
      configError: null,
      starting: false,
      runsOpen: false,
      runs: [],
      runsDb: null,
      runsLoading: false,
      runsError: null,
      runsChanged: null,
      nestedViews: {},
      remote: null,
      connectOpen: false,
      connecting: false,
      connectError: null,
      remoteRuns: [],
      remoteAssistants: [],
      remoteRunsError: null,
      remoteDoc: null,
      remoteRun: null,
      ...remoteActions(k),
      ...runsActions(k),
      ...controlActions(k),
      ...breakpointActions(k),
      ...stateActions(k),
      ...historyActions(k),
      ...eventActions(k),
    };
  });
}

// ------------------------------------------------------------------------------------------------
// React glue

export const DebugContext = createContext<StoreApi<DebugState> | null>(null);

export function useDebugStore(): StoreApi<DebugState> {
  const s = useContext(DebugContext);
  if (!s) throw new Error('DebugContext missing');
  return s;
}

export function useDebug<T>(selector: (s: DebugState) => T): T {
  return useStore(useDebugStore(), selector);
}
