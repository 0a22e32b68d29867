// The live run's `run-events`: batches queued as they arrive and folded into the model once per
// animation frame, within a share of the frame, shown at most every 100 ms while a backlog lasts
// (a pause, an interrupt or the end at once), the status applied with the events before it.
import { applyStatus, ModelFolder } from '../model';
import type { RunStatusInfo } from '../types';
import type { Kit } from './kit';
import { latestStep, nestedPause, type Actions, type DebugState } from './state';
import { loadState } from './states';

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
const STOPPED_STATES = new Set(['paused', 'interrupted', 'finished']);
const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export function schedule(k: Kit): void {
  if (k.scheduled) return;
  const run = () => foldFor(k, FRAME_BUDGET_MS);
  const raf = typeof requestAnimationFrame === 'function' ? requestAnimationFrame(run) : null;
  // A hidden window gets no animation frames: a timer makes sure batches are still folded.
  const timer = setTimeout(run, raf != null ? 100 : 16);
  k.scheduled = { raf, timer };
}

export function unschedule(k: Kit): void {
  const s = k.scheduled;
  if (!s) return;
  if (s.raf != null && typeof cancelAnimationFrame === 'function') cancelAnimationFrame(s.raf);
  clearTimeout(s.timer);
  k.scheduled = null;
}

/** The run's id is known: fold the batches that arrived before it was. */
export function adoptEarly(k: Kit, run: string): void {
  const mine = k.early.filter((b) => b.run === run);
  k.early = [];
  if (mine.length) {
    k.queue.push(...mine);
    schedule(k);
  }
}

/**
 * Fold queued batches for at most `budgetMs` (one animation frame's share), then yield and
 * go on in the next frame: a long run streaming thousands of events never blocks painting
 * or input for long. The status travels with its batch, so it is applied once the events
 * before it are folded.
 */
function foldFor(k: Kit, budgetMs: number): void {
  unschedule(k);
  const queue = k.queue;
  if (!queue.length && !k.unshown) return;
  const t0 = now();
  const st = k.get();
  const folder = k.unshown?.folder ?? new ModelFolder(st.model);
  let status: RunStatusInfo | null = k.unshown?.status ?? null;
  k.unshown = null;
  // Events folded now, by run: the engine holds a fast run back while the window is far behind
  // (flow control, `runEventsAck`), so each fold says how far it got.
  const folded = new Map<string, number>();
  const count = (run: string, n: number) => {
    if (n) folded.set(run, (folded.get(run) ?? 0) + n);
  };
  while (queue.length) {
    const b = queue[0];
    const evs = Array.isArray(b.events) ? b.events : [];
    if (evs.length > FOLD_CHUNK && budgetMs !== Infinity) {
      // A big batch is folded in chunks, so the budget can be checked between them.
      folder.add(evs.slice(0, FOLD_CHUNK));
      count(b.run, FOLD_CHUNK);
      queue[0] = { ...b, events: evs.slice(FOLD_CHUNK) };
    } else {
      folder.add(evs);
      count(b.run, evs.length);
      if (b.status) {
        status = b.status;
        folder.status(b.status);
      }
      queue.shift();
    }
    if (now() - t0 >= budgetMs) break;
  }
  for (const [run, n] of folded) k.backend.runEventsAck(run, n);
  // A pause inside a nested run that is not shown yet.
  const nestedNew = folder.nested != null && folder.nested !== st.model.nested;
  // Still behind: keep what was folded for a later frame, unless it is time to show it or
  // the run stopped (a pause, an interrupt, the end, a pause in a nested run show at once).
  if (queue.length && budgetMs !== Infinity && t0 - k.shownAt < SHOW_EVERY_MS && (!status || status.state === 'running') && !nestedNew) {
    k.unshown = { folder, status };
    schedule(k);
    return;
  }
  k.shownAt = now();
  let model = folder.result();
  model = applyStatus(model, status ?? st.status);
  const patch: Partial<DebugState> = { model };
  if (status) {
    patch.status = status;
    if (status.state === 'interrupted') {
      const p = status.pending ?? model.pending;
      if (p && p.id !== k.shown) {
        k.shown = p.id;
        patch.answerError = null;
        patch.dialogOpen = p.id !== k.cancelled;
      }
    } else {
      k.shown = null;
      patch.dialogOpen = false;
      patch.answerError = null;
    }
  }
  k.set(patch);
  if (queue.length) {
    schedule(k);
    return;
  }
  const cur = k.get();
  // Back from a nested pause, the state at the selected step can be asked for again.
  const back = k.nestedRefused && !nestedPause(cur);
  if (cur.viewing == null && ((status && STOPPED_STATES.has(status.state) && cur.selectedStep == null) || back)) {
    void loadState(k, cur.selectedStep ?? latestStep(cur));
  }
}

/** Fold every queued batch now. */
export function flushEvents(k: Kit): void {
  foldFor(k, Infinity);
}

export function eventActions(k: Kit): Actions<'receive' | 'flush'> {
  return {
    receive(batch) {
      const st = k.get();
      if (st.mode !== 'live' || !batch || typeof batch !== 'object') return;
      if (!st.info) {
        // `run_start` has not answered yet: keep the new run's batches until its id is known.
        if (st.starting && batch.run !== k.replaced) k.early.push(batch);
        return;
      }
      if (batch.run !== st.info.run) return;
      k.queue.push(batch);
      // Behind a backlog (a fast run outpacing the UI), the status line tells the truth at once
      // (a pause shows as soon as the engine paused) while the timeline catches up; otherwise
      // the status arrives with its events on the next frame.
      if (batch.status && batch.status.state !== 'interrupted') {
        let backlog = 0;
        for (const b of k.queue) backlog += Array.isArray(b.events) ? b.events.length : 0;
        if (backlog > BACKLOG_EVENTS) k.set({ status: batch.status });
      }
      schedule(k);
    },

    flush() {
      flushEvents(k);
    },
  };
}
