// The debugger store: one zustand store per app instance, beside the app store (../store.ts).
// It drives runs through the backend (docs/app-contract.md §5), folds `run-events` batches into a
// `RunModel` (./model.ts) once per animation frame, and keeps what the debugger views show: the
// status, the selected step and its state (with the diff from the step before), the interrupt
// dialog, breakpoints, earlier runs to compare.
import { createContext, useContext } from 'react';
import { createStore, useStore, type StoreApi } from 'zustand';
import { errorMessage, type Backend, type RunAction } from '../backend';
import type { AppState } from '../store';
import {
  applyStatus,
  diffState,
  emptyModel,
  endNestedPause,
  foldEvents,
  guessDialect,
  lastDoneStep,
  lastStep,
  modelEvents,
  ModelFolder,
  reconstructState,
  type DiffEntry,
  type NestedPause,
  type RunModel,
} from './model';
import type { Breakpoint, DebugEvent, DurableRun, Pending, RunBatch, RunConfig, RunInfo, RunStatusInfo } from './types';
import type { View } from '../types';

export type DebugMode = 'idle' | 'live' | 'review';
export type PanelTab = 'timeline' | 'state' | 'calls';

export interface HistoryEntry {
  label: string;
  model: RunModel;
  /** The dialect of the run (for rebuilding its states from its events). */
  dialect?: 'sherma' | 'loki';
}

export interface StateView {
  /** The step whose state is shown (after `step` steps; 0 = initial). */
  step: number;
  state: Record<string, unknown> | null;
  /** The state after `step - 1` (null for step 0). */
  prev: Record<string, unknown> | null;
  diff: DiffEntry[];
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

  start(mode?: 'continue' | 'step'): Promise<void>;
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

const HISTORY_MAX = 10;
const STOPPED_STATES = new Set(['paused', 'interrupted', 'finished']);

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

let runLabelSeq = 1;

function runLabel(m: RunModel): string {
  const what = m.finished ? m.finished.status : `${m.steps.length} step${m.steps.length === 1 ? '' : 's'}`;
  return `run ${runLabelSeq++}: ${m.agent ?? 'agent'} (${what})`;
}

/** Share of one animation frame spent folding events (the rest is for React and painting). */
const FRAME_BUDGET_MS = 24;
/** Queued events beyond which a new status is shown before its events are folded. */
const BACKLOG_EVENTS = 2000;
/** Events folded between two looks at the clock. */
const FOLD_CHUNK = 400;
/**
 * While events arrive faster than the window shows them, it is updated at most this often;
 * folding goes on in every frame in between. Each update costs a render, a layout and a paint
 * however few events it brings, so a run streaming thousands of steps a second would otherwise
 * spend every frame on them and leave none for input.
 */
const SHOW_EVERY_MS = 100;
const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export function createDebugStore(backend: Backend, app: StoreApi<AppState>): StoreApi<DebugState> {
  return createStore<DebugState>()((set, get) => {
    let queue: RunBatch[] = [];
    /** Batches that arrived while `run_start` was in flight (run id not known yet). */
    let early: RunBatch[] = [];
    /** The run being replaced by a start: its late batches are dropped. */
    let replaced: string | null = null;
    let scheduled: { raf: number | null; timer: ReturnType<typeof setTimeout> } | null = null;
    /** The interrupt the user closed the dialog of. */
    let cancelled: string | null = null;
    /** The interrupt the dialog was last opened for. */
    let shown: string | null = null;
    /** Bumped by every state load, so a late answer to an earlier one is ignored. */
    let viewSeq = 0;
    /** Events folded but not shown yet (a backlog being worked through), with their status. */
    let unshown: { folder: ModelFolder; status: RunStatusInfo | null } | null = null;
    /** When the model was last shown. */
    let shownAt = 0;
    /** The state shown is the refusal of a load made while paused inside a nested run: load it
     *  again once the run is back at the top level. */
    let nestedRefused = false;

    const toast = (message: string) => app.getState().toast('error', message);

    function archive(label: string | null, model: RunModel, dialect?: 'sherma' | 'loki') {
      if (model.eventCount === 0) return;
      const st = get();
      const entry: HistoryEntry = { label: label ?? runLabel(model), model, dialect };
      const history = [entry, ...st.history].slice(0, HISTORY_MAX);
      const viewing = st.viewing == null ? null : st.viewing + 1 < history.length ? st.viewing + 1 : null;
      set({ history, viewing });
    }

    /**
     * A run is starting (or resuming): the shown run goes to the history and an empty live run
     * takes its place. Returns what to put back if the start fails.
     */
    function beginLive(extra: Partial<DebugState>) {
      const st = get();
      const before = { mode: st.mode, model: st.model, info: st.info, status: st.status, history: st.history, viewing: st.viewing };
      unschedule();
      if (queue.length || unshown) get().flush();
      archive(null, get().model, st.info?.dialect);
      replaced = st.info?.run ?? null;
      queue = [];
      early = [];
      cancelled = null;
      shown = null;
      viewSeq++;
      set({
        mode: 'live',
        starting: true,
        info: null,
        status: null,
        model: emptyModel(),
        viewing: null,
        selectedStep: null,
        stateView: null,
        dialogOpen: false,
        answerError: null,
        nestedViews: {},
        ...extra,
      });
      return before;
    }

    /** The run's id is known: fold the batches that arrived before it was. */
    function adoptEarly(run: string) {
      const mine = early.filter((b) => b.run === run);
      early = [];
      if (mine.length) {
        queue.push(...mine);
        schedule();
      }
    }

    function schedule() {
      if (scheduled) return;
      const run = () => foldFor(FRAME_BUDGET_MS);
      const raf = typeof requestAnimationFrame === 'function' ? requestAnimationFrame(run) : null;
      // A hidden window gets no animation frames: a timer makes sure batches are still folded.
      const timer = setTimeout(run, raf != null ? 100 : 16);
      scheduled = { raf, timer };
    }

    function unschedule() {
      if (!scheduled) return;
      if (scheduled.raf != null && typeof cancelAnimationFrame === 'function') cancelAnimationFrame(scheduled.raf);
      clearTimeout(scheduled.timer);
      scheduled = null;
    }

    /**
     * Fold queued batches for at most `budgetMs` (one animation frame's share), then yield and
     * go on in the next frame: a long run streaming thousands of events never blocks painting
     * or input for long. The status travels with its batch, so it is applied once the events
     * before it are folded.
     */
    function foldFor(budgetMs: number) {
      unschedule();
      if (!queue.length && !unshown) return;
      const t0 = now();
      const st = get();
      const folder = unshown?.folder ?? new ModelFolder(st.model);
      let status: RunStatusInfo | null = unshown?.status ?? null;
      unshown = null;
      while (queue.length) {
        const b = queue[0];
        const evs = Array.isArray(b.events) ? b.events : [];
        if (evs.length > FOLD_CHUNK && budgetMs !== Infinity) {
          // A big batch is folded in chunks, so the budget can be checked between them.
          folder.add(evs.slice(0, FOLD_CHUNK));
          queue[0] = { ...b, events: evs.slice(FOLD_CHUNK) };
        } else {
          folder.add(evs);
          if (b.status) {
            status = b.status;
            folder.status(b.status);
          }
          queue.shift();
        }
        if (now() - t0 >= budgetMs) break;
      }
      // A pause inside a nested run that is not shown yet.
      const nestedNew = folder.nested != null && folder.nested !== st.model.nested;
      // Still behind: keep what was folded for a later frame, unless it is time to show it or
      // the run stopped (a pause, an interrupt, the end, a pause in a nested run show at once).
      if (queue.length && budgetMs !== Infinity && t0 - shownAt < SHOW_EVERY_MS && (!status || status.state === 'running') && !nestedNew) {
        unshown = { folder, status };
        schedule();
        return;
      }
      shownAt = now();
      let model = folder.result();
      model = applyStatus(model, status ?? st.status);
      const patch: Partial<DebugState> = { model };
      if (status) {
        patch.status = status;
        if (status.state === 'interrupted') {
          const p = status.pending ?? model.pending;
          if (p && p.id !== shown) {
            shown = p.id;
            patch.answerError = null;
            patch.dialogOpen = p.id !== cancelled;
          }
        } else {
          shown = null;
          patch.dialogOpen = false;
          patch.answerError = null;
        }
      }
      set(patch);
      if (queue.length) {
        schedule();
        return;
      }
      const cur = get();
      // Back from a nested pause, the state at the selected step can be asked for again.
      const back = nestedRefused && !nestedPause(cur);
      if (cur.viewing == null && ((status && STOPPED_STATES.has(status.state) && cur.selectedStep == null) || back)) {
        void loadState(cur.selectedStep ?? latestStep(cur));
      }
    }

    async function control(action: RunAction, what: string) {
      try {
        await backend.runControl(action);
      } catch (e) {
        toast(`${what} failed: ${errorMessage(e)}`);
      }
    }

    /** Send the breakpoints to a live run; returns the refusal message or null. */
    async function pushBreakpoints(bps: Breakpoint[], breakOnError: boolean): Promise<string | null> {
      if (!isLive(get())) return null;
      try {
        await backend.runBreakpoints(bps, breakOnError);
        return null;
      } catch (e) {
        return errorMessage(e);
      }
    }

    function dialectOf(s: DebugState): 'sherma' | 'loki' | undefined {
      if (s.viewing != null) return s.history[s.viewing]?.dialect;
      return s.info?.dialect;
    }

    async function loadState(step: number) {
      const seq = ++viewSeq;
      const st = get();
      if (st.mode === 'idle' && st.viewing == null && st.model.eventCount === 0) {
        set({ stateView: null });
        return;
      }
      const old = st.stateView;
      set({
        stateView: {
          step,
          state: old?.step === step ? old.state : null,
          prev: old?.step === step ? old.prev : null,
          diff: old?.step === step ? old.diff : [],
          loading: true,
          error: null,
        },
      });
      const m = shownModel(st);
      const inNested = st.viewing == null ? nestedPause(st) : null;
      nestedRefused = inNested != null;
      if (inNested) {
        // The engine answers no state-at-step while paused inside a nested run.
        set({ stateView: { step, state: null, prev: null, diff: [], loading: false, error: `the run is paused inside the nested run ${inNested.run}: step out (Shift+F11) or continue to look at the top-level steps` } });
        return;
      }
      try {
        let state: Record<string, unknown>;
        let prev: Record<string, unknown> | null;
        if (st.mode === 'live' && st.viewing == null) {
          const fin = m.finished;
          const finalStep = st.status?.step ?? lastStep(m);
          const exact = fin && isObj(fin.state) && step >= finalStep ? (fin.state as Record<string, unknown>) : null;
          [state, prev] = await Promise.all([
            exact ? Promise.resolve(exact) : backend.runStateAt(step),
            step > 0 ? backend.runStateAt(step - 1) : Promise.resolve(null),
          ]);
        } else {
          const events = modelEvents(m);
          const dialect = dialectOf(st) ?? guessDialect(events);
          state = reconstructState(events, step, dialect);
          prev = step > 0 ? reconstructState(events, step - 1, dialect) : null;
        }
        if (seq !== viewSeq) return;
        set({ stateView: { step, state, prev, diff: prev ? diffState(prev, state) : [], loading: false, error: null } });
      } catch (e) {
        if (seq !== viewSeq) return;
        set({ stateView: { step, state: null, prev: null, diff: [], loading: false, error: errorMessage(e) } });
      }
    }

    /** The step to show when following the latest one. */
    function followStep(): number {
      return latestStep(get());
    }

    async function flushSourceText() {
      const a = app.getState();
      const p = a.pendingText;
      if (p != null && p !== a.view?.text) await a.setText(p);
    }

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

      async openRuns(open) {
        set({ runsOpen: open, runsError: null, runsChanged: null });
        if (open) await get().loadRuns();
      },

      async loadRuns() {
        set({ runsLoading: true });
        try {
          const list = await backend.runsList();
          set({ runs: list.runs, runsDb: list.db, runsLoading: false, runsError: null });
        } catch (e) {
          set({ runsLoading: false, runsError: errorMessage(e) });
        }
      },

      async deleteRun(id) {
        try {
          await backend.runsDelete([id]);
          set({ runs: get().runs.filter((r) => r.id !== id), runsError: null, runsChanged: null });
          return true;
        } catch (e) {
          set({ runsError: errorMessage(e) });
          return false;
        }
      },

      async resumeRun(id, force = false) {
        const st = get();
        if (st.starting) return false;
        if (isLive(st) && st.info?.run === id && st.status?.state !== 'finished') {
          set({ runsError: `run ${id} is the run in progress in the debugger` });
          return false;
        }
        const rec = st.runs.find((r) => r.id === id);
        // The canvas shows the run's own agent: open its file first.
        const open = app.getState().view?.path;
        if (rec && open !== rec.file) {
          await app.getState().openPath(rec.file);
          if (app.getState().view?.path !== rec.file) {
            set({ runsError: `cannot open ${rec.file} to resume run ${id}` });
            return false;
          }
        }
        const before = beginLive({ runsError: null, runsChanged: null });
        try {
          const cur = get();
          const info = await backend.runResume(id, force, cur.breakpoints, cur.breakOnError);
          set({ info, starting: false, runsOpen: false });
          adoptEarly(info.run);
          return true;
        } catch (e) {
          const msg = errorMessage(e);
          early = [];
          set({ ...before, starting: false, runsError: msg, runsChanged: /changed since the run started/.test(msg) ? id : null });
          return false;
        }
      },

      async start(mode) {
        const st = get();
        if (st.starting) return;
        const startMode = mode ?? st.config.start ?? 'continue';
        const before = beginLive({ configError: null });
        const cur = get();
        const agent = cur.config.agent || app.getState().view?.agent || null;
        const config: RunConfig = {
          ...cur.config,
          agent,
          start: startMode,
          breakpoints: cur.breakpoints,
          break_on_error: cur.breakOnError,
        };
        try {
          await flushSourceText();
          const info = await backend.runStart(config);
          set({ info, starting: false });
          adoptEarly(info.run);
        } catch (e) {
          const msg = errorMessage(e);
          early = [];
          set({ ...before, starting: false, configError: msg });
          toast(`Starting the run failed: ${msg}`);
        }
      },

      async continue() {
        const st = get();
        if (st.starting) return;
        if (st.mode !== 'live' || !st.info || st.status?.state === 'finished') return get().start('continue');
        await control('continue', 'Continue');
      },

      async step() {
        const st = get();
        if (st.starting) return;
        if (st.mode !== 'live' || !st.info || st.status?.state === 'finished') return get().start('step');
        await control('step', 'Step');
      },

      async stepInto() {
        const st = get();
        if (st.starting || !isLive(st)) return;
        const state = st.status?.state;
        if (!nestedPause(st) && state !== 'paused' && state !== 'ready') return;
        await control('step_into', 'Step into');
      },

      async stepOut() {
        if (get().starting || !nestedPause(get())) return;
        await control('step_out', 'Step out');
      },

      async loadNestedView(file, agent) {
        const key = nestedViewKey(file, agent);
        if (get().nestedViews[key]) return;
        const put = (e: NestedViewEntry) => set({ nestedViews: { ...get().nestedViews, [key]: e } });
        put({ loading: true, view: null, error: null });
        try {
          const view = await backend.nestedView(file, agent);
          put({ loading: false, view, error: null });
        } catch (e) {
          put({ loading: false, view: null, error: errorMessage(e) });
        }
      },

      async pause() {
        if (!isLive(get())) return;
        await control('pause', 'Pause');
      },

      async stop() {
        if (!isLive(get())) return;
        await control('stop', 'Stop');
      },

      async restart() {
        const st = get();
        if (st.starting) return;
        if (st.mode !== 'live' || !st.info) return get().start();
        get().flush();
        archive('before restart', get().model, st.info.dialect);
        await control('restart', 'Restart');
      },

      async toggleBreakpoint(node) {
        const st = get();
        const prev = st.breakpoints;
        const next = prev.some((b) => b.node === node)
          ? prev.filter((b) => b.node !== node)
          : [...prev, { node, condition: null, enabled: true }];
        set({ breakpoints: next });
        const err = await pushBreakpoints(next, get().breakOnError);
        if (err) {
          if (get().breakpoints === next) set({ breakpoints: prev });
          toast(`Setting breakpoints failed: ${err}`);
        }
      },

      async setBreakpointCondition(node, condition) {
        const cond = condition?.trim() ? condition.trim() : null;
        const st = get();
        const prev = st.breakpoints;
        const next = prev.some((b) => b.node === node)
          ? prev.map((b) => (b.node === node ? { ...b, condition: cond } : b))
          : [...prev, { node, condition: cond, enabled: true }];
        if (cond && !isLive(st)) {
          // No run to ask: check the syntax with the editor's expression checker.
          const dialect = app.getState().view?.dialect;
          if (dialect) {
            try {
              const errs = await backend.checkExpr(dialect === 'loki' ? 'template' : 'cel', cond);
              if (errs.length) return `breakpoint on \`${node}\`: condition \`${cond}\`: ${errs[0].message}`;
            } catch {
              // The checker is unavailable: accept; a run will check it when it starts.
            }
          }
        }
        set({ breakpoints: next });
        const err = await pushBreakpoints(next, get().breakOnError);
        if (err) {
          if (get().breakpoints === next) set({ breakpoints: prev });
          return err;
        }
        return null;
      },

      async setBreakpointEnabled(node, enabled) {
        const prev = get().breakpoints;
        if (!prev.some((b) => b.node === node)) return;
        const next = prev.map((b) => (b.node === node ? { ...b, enabled } : b));
        set({ breakpoints: next });
        const err = await pushBreakpoints(next, get().breakOnError);
        if (err) {
          if (get().breakpoints === next) set({ breakpoints: prev });
          toast(`Setting breakpoints failed: ${err}`);
        }
      },

      async setBreakOnError(on) {
        const prev = get().breakOnError;
        set({ breakOnError: on, config: { ...get().config, break_on_error: on } });
        const err = await pushBreakpoints(get().breakpoints, on);
        if (err) {
          if (get().breakOnError === on) set({ breakOnError: prev, config: { ...get().config, break_on_error: prev } });
          toast(`Setting break on error failed: ${err}`);
        }
      },

      setConfig(partial) {
        set({ config: { ...get().config, ...partial }, configError: null });
      },

      openConfig(open) {
        set({ configOpen: open });
      },

      async answer(value) {
        const p = currentPending(get());
        if (!p) {
          set({ answerError: 'the run is not waiting for an answer' });
          return false;
        }
        try {
          await backend.runAnswer(p.id, value);
          cancelled = null;
          // The engine runs on as soon as it has the answer: its next question may already be
          // shown (its events can arrive before this call returns). Close only this one.
          const now = currentPending(get());
          if (!now || now.id === p.id) set({ dialogOpen: false, answerError: null });
          return true;
        } catch (e) {
          set({ dialogOpen: true, answerError: errorMessage(e) });
          return false;
        }
      },

      cancelDialog() {
        cancelled = currentPending(get())?.id ?? null;
        set({ dialogOpen: false, answerError: null });
      },

      reopenDialog() {
        if (!currentPending(get())) return;
        cancelled = null;
        set({ dialogOpen: true });
      },

      async editState(key, jsonText) {
        let value: unknown;
        try {
          value = JSON.parse(jsonText);
        } catch (e) {
          return `not valid JSON: ${e instanceof Error ? e.message : String(e)}`;
        }
        if (!isLive(get())) return 'no run is paused: start a run to edit its state';
        // Paused inside a nested run, the edit goes to the nested run's state, and a fresh
        // `nested_paused` brings it back.
        const nested = nestedPause(get()) != null;
        try {
          await backend.runEditState(key, value);
        } catch (e) {
          return errorMessage(e);
        }
        if (!nested) await get().refreshState();
        return null;
      },

      async selectStep(step) {
        set({ selectedStep: step });
        await loadState(step ?? followStep());
      },

      async rewind(step) {
        const st = get();
        if (st.mode !== 'live' || !st.info) {
          app.getState().toast('info', 'Rewinding needs a live run: start one first');
          return;
        }
        const nested = nestedPause(st);
        if (nested) {
          app.getState().toast('info', `The run is paused inside the nested run ${nested.run}: step out (Shift+F11) or continue before rewinding`);
          return;
        }
        get().flush();
        const model = get().model;
        archive(`before rewind to step ${step}`, model, st.info.dialect);
        const entry = get().history[0];
        try {
          await backend.runRewind(step);
          set({ selectedStep: null });
        } catch (e) {
          if (entry?.model === model) {
            const cur = get();
            set({ history: cur.history.filter((h) => h !== entry), viewing: cur.viewing == null ? null : Math.max(0, cur.viewing - 1) });
          }
          toast(`Rewinding to step ${step} failed: ${errorMessage(e)}`);
        }
      },

      async openTrace(path) {
        let trace;
        try {
          trace = await backend.openTrace(path ?? null);
        } catch (e) {
          toast(`Opening the trace failed: ${errorMessage(e)}`);
          return;
        }
        if (!trace) return;
        const st = get();
        get().flush();
        archive(null, get().model, st.info?.dialect);
        unschedule();
        queue = [];
        early = [];
        const events: DebugEvent[] = Array.isArray(trace.events) ? trace.events : [];
        const dialect = guessDialect(events);
        const model = foldEvents(emptyModel(), events);
        const fin = model.finished;
        const lastErr = model.errors.length ? model.errors[model.errors.length - 1] : null;
        const status: RunStatusInfo = {
          state: fin ? 'finished' : 'paused',
          step: lastDoneStep(model),
          due: [],
          reason: null,
          pending: null,
          status: fin?.status ?? null,
          output: fin?.output ?? null,
          error: lastErr ? { node: lastErr.node, message: lastErr.message } : null,
        };
        const info: RunInfo = { run: model.run ?? '', trace: trace.path, agent: model.agent ?? '', dialect, llm: 'trace' };
        viewSeq++;
        set({
          mode: 'review',
          info,
          status,
          model: applyStatus(endNestedPause(model, status), status),
          viewing: null,
          selectedStep: null,
          stateView: null,
          dialogOpen: false,
          answerError: null,
        });
        await loadState(status.step);
      },

      viewHistory(index) {
        const st = get();
        const viewing = index != null && index >= 0 && index < st.history.length ? index : null;
        viewSeq++;
        set({ viewing, selectedStep: null, stateView: null });
        const m = shownModel(get());
        if (m.eventCount) void loadState(viewing == null ? followStep() : lastDoneStep(m));
      },

      setPanelTab(tab) {
        set({ panelTab: tab });
      },

      receive(batch) {
        const st = get();
        if (st.mode !== 'live' || !batch || typeof batch !== 'object') return;
        if (!st.info) {
          // `run_start` has not answered yet: keep the new run's batches until its id is known.
          if (st.starting && batch.run !== replaced) early.push(batch);
          return;
        }
        if (batch.run !== st.info.run) return;
        queue.push(batch);
        // Behind a backlog (a fast run outpacing the UI), the status line tells the truth at once
        // (a pause shows as soon as the engine paused) while the timeline catches up; otherwise
        // the status arrives with its events on the next frame.
        if (batch.status && batch.status.state !== 'interrupted') {
          let backlog = 0;
          for (const b of queue) backlog += Array.isArray(b.events) ? b.events.length : 0;
          if (backlog > BACKLOG_EVENTS) set({ status: batch.status });
        }
        schedule();
      },

      flush() {
        foldFor(Infinity);
      },

      async refreshState() {
        const st = get();
        await loadState(st.selectedStep ?? followStep());
      },
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
