// What the debugger store holds (`DebugState`) and the selectors the views read it with.
import { lastDoneStep, type DiffEntry, type NestedPause, type RunModel } from '../model';
import type { Breakpoint, DurableRun, Pending, RemoteAssistant, RemoteRunInfo, RemoteStatus, RunBatch, RunConfig, RunInfo, RunStatusInfo } from '../types';
import type { View } from '../../types';

export type DebugMode = 'idle' | 'live' | 'review';
export type PanelTab = 'timeline' | 'state' | 'calls';

export interface HistoryEntry {
  label: string;
  model: RunModel;
  /** The run's JSONL trace, which the engine rebuilds the run's states from (`trace_state_at`);
   *  null when none was written. */
  trace?: string | null;
}

export interface StateView {
  /** The step whose state is shown (after `step` steps; 0 = initial). */
  step: number;
  state: Record<string, unknown> | null;
  /** The state after `step - 1` (null for step 0). */
  prev: Record<string, unknown> | null;
  diff: DiffEntry[];
  /** A recorded run's states rebuilt on a best-effort basis: why they may differ from what the
   *  engine held (the engine says so, `trace_state_at`). */
  warning?: string | null;
  loading: boolean;
  error: string | null;
}

/** A nested agent's graph (`nestedView`), as fetched for the nested view. */
export interface NestedViewEntry {
  loading: boolean;
  view: View | null;
  error: string | null;
}

export interface DebugState {
  mode: DebugMode;
  /** The run configuration (kept across runs). `breakpoints`/`break_on_error`/`start` are
   *  filled from the store when a run starts. */
  config: RunConfig;
  info: RunInfo | null;
  status: RunStatusInfo | null;
  model: RunModel;
  /** Earlier runs and runs before a rewind, newest first (max 10). */
  history: HistoryEntry[];
  /** Index into `history` being viewed; null = the current run. */
  viewing: number | null;
  breakpoints: Breakpoint[];
  breakOnError: boolean;
  /** The step selected in the timeline; null = follow the latest. */
  selectedStep: number | null;
  stateView: StateView | null;
  dialogOpen: boolean;
  configOpen: boolean;
  panelTab: PanelTab;
  answerError: string | null;
  configError: string | null;
  /** A `run_start` is in flight. */
  starting: boolean;
  /** The Runs list (durable runs kept in the run store) is shown. */
  runsOpen: boolean;
  runs: DurableRun[];
  /** The run store's file, once listed. */
  runsDb: string | null;
  runsLoading: boolean;
  runsError: string | null;
  /** A resume refused because the agent file changed since: that run's id ("Resume anyway"). */
  runsChanged: string | null;
  /** Nested agents' graphs by `nestedViewKey(file, agent)`, fetched once per run. */
  nestedViews: Record<string, NestedViewEntry>;

  // A `switchyard serve` server (./remote.ts).
  /** The connection (or the URL remembered from last time); null until asked. */
  remote: RemoteStatus | null;
  connectOpen: boolean;
  connecting: boolean;
  connectError: string | null;
  remoteRuns: RemoteRunInfo[];
  remoteAssistants: RemoteAssistant[];
  remoteRunsError: string | null;
  /** The open document is a server's assistant (read-only): F5 starts it on the server. */
  remoteDoc: { url: string; assistant_id: string; assistant: string } | null;
  /** The live run is on this server: what it has no endpoint for is disabled. */
  remoteRun: string | null;

  start(mode?: 'continue' | 'step'): Promise<void>;
  openConnect(open: boolean): Promise<void>;
  /** Connect to a server; false (with `connectError`) when unreachable or refused. */
  connectRemote(url: string, token: string | null): Promise<boolean>;
  disconnectRemote(): Promise<void>;
  /** Reload the server's runs and assistants. */
  loadRemote(): Promise<void>;
  /** Show a server's run in the debugger. */
  openRemoteRun(id: string): Promise<boolean>;
  /** Open a server's assistant (read-only) to set breakpoints on and run there. */
  openRemoteAssistant(id: string): Promise<boolean>;
  openRuns(open: boolean): Promise<void>;
  /** Reload the Runs list from the run store. */
  loadRuns(): Promise<void>;
  /** Resume a durable run (its agent file is opened first when another one is open); false
   *  when refused (`runsError`, and `runsChanged` when forcing would do). */
  resumeRun(id: string, force?: boolean): Promise<boolean>;
  deleteRun(id: string): Promise<boolean>;
  continue(): Promise<void>;
  step(): Promise<void>;
  /** Step, pausing inside a nested run the step starts (F11); while paused in a nested run,
   *  one step of it, pausing in a deeper one. */
  stepInto(): Promise<void>;
  /** Run the rest of the nested run paused in, then pause in its parent (Shift+F11). */
  stepOut(): Promise<void>;
  /** Fetch the graph of a nested run's agent into `nestedViews` (once per run). */
  loadNestedView(file: string, agent: string | null): Promise<void>;
  pause(): Promise<void>;
  stop(): Promise<void>;
  restart(): Promise<void>;
  toggleBreakpoint(node: string): Promise<void>;
  /** Set (or clear, with null/"") a breakpoint's condition, adding the breakpoint if needed.
   *  Returns the refusal message, or null when saved. */
  setBreakpointCondition(node: string, condition: string | null): Promise<string | null>;
  setBreakpointEnabled(node: string, enabled: boolean): Promise<void>;
  setBreakOnError(on: boolean): Promise<void>;
  setConfig(partial: Partial<RunConfig>): void;
  openConfig(open: boolean): void;
  /** Answer the pending interrupt; false (dialog kept open, `answerError` set) when refused. */
  answer(value: unknown): Promise<boolean>;
  cancelDialog(): void;
  reopenDialog(): void;
  /** Validate `jsonText`, send it as the new value of `key`; returns an error message or null. */
  editState(key: string, jsonText: string): Promise<string | null>;
  selectStep(step: number | null): Promise<void>;
  rewind(step: number): Promise<void>;
  openTrace(path?: string | null): Promise<void>;
  viewHistory(index: number | null): void;
  setPanelTab(tab: PanelTab): void;
  /** Queue a `run-events` batch (folded on the next animation frame, or by `flush`). */
  receive(batch: RunBatch): void;
  /** Fold every queued batch now. */
  flush(): void;
  /** Reload `stateView` for the selected (or latest) step. */
  refreshState(): Promise<void>;
}

/** Actions of the store, by the slice that implements them. */
export type Actions<K extends keyof DebugState> = Pick<DebugState, K>;

export const defaultRunConfig = (): RunConfig => ({
  agent: null,
  input: null,
  llm: { mode: 'scripted' },
  answers: [],
  breakpoints: [],
  break_on_error: false,
  start: 'continue',
});

/** The model shown: the history entry being viewed, or the current run. */
export function shownModel(s: DebugState): RunModel {
  return s.viewing != null ? (s.history[s.viewing]?.model ?? s.model) : s.model;
}

/** The trace of the run shown (the engine rebuilds a recorded run's states from it): the history
 *  entry's, else the current run's. */
export function shownTrace(s: DebugState): string | null {
  if (s.viewing != null) {
    const h = s.history[s.viewing];
    if (h) return h.trace ?? null;
  }
  return s.info?.trace ?? null;
}

/** The question the run waits for (null when it does not). */
export function currentPending(s: DebugState): Pending | null {
  if (s.status?.state === 'interrupted' && s.status.pending) return s.status.pending;
  return s.model.pending;
}

/**
 * The latest step of the run shown whose state can be looked at: the last completed step. (The
 * driver's `status.step` also counts a step that failed, which has no checkpoint.)
 */
export function latestStep(s: DebugState): number {
  const done = lastDoneStep(shownModel(s));
  if (s.viewing == null && s.mode === 'live' && s.status) return Math.min(s.status.step, done);
  return done;
}

/** Why a debugger feature is off for a run on a server (it has no endpoint for it), else null. */
export function remoteOnly(s: DebugState, what: string): string | null {
  return s.mode === 'live' && s.viewing == null && s.remoteRun ? `${what} is not available for a run on a server (${s.remoteRun})` : null;
}

/** A live run that has not finished (controls and breakpoint changes go to the engine). */
export function isLive(s: DebugState): boolean {
  return s.mode === 'live' && s.info != null && s.status?.state !== 'finished';
}

/**
 * Where the live run is paused inside a nested run, or null. The driver's status stays
 * `running` meanwhile (its thread is inside the parent's step), so this is the model's nested
 * pause while that status lasts.
 */
export function nestedPause(s: DebugState): NestedPause | null {
  const n = s.model.nested;
  return n && s.mode === 'live' && s.info != null && s.status?.state === 'running' ? n : null;
}

/** The nested pause the canvas and the state panel show: none while an earlier run is viewed. */
export function shownNestedPause(s: DebugState): NestedPause | null {
  return s.viewing == null ? nestedPause(s) : null;
}

export function nestedViewKey(file: string, agent: string | null): string {
  return `${file}\u0000${agent ?? ''}`;
}

export function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
