// The state shown at a step, with its diff from the step before: asked from the engine, never
// computed here. A live run's states are its checkpoints (`run_state_at`); a recorded run's (a
// trace opened for review, an earlier run kept to compare) are rebuilt by the engine from its
// trace with the dialect's reducers (`trace_state_at`).
import { errorMessage } from '../../backend';
import { diffState, lastStep } from '../model';
import type { Kit } from './kit';
import { isObj, latestStep, nestedPause, shownModel, shownTrace, type Actions } from './state';

/** Load `stateView` for `step` of the run shown. */
export async function loadState(k: Kit, step: number): Promise<void> {
  const seq = ++k.viewSeq;
  const st = k.get();
  if (st.mode === 'idle' && st.viewing == null && st.model.eventCount === 0) {
    k.set({ stateView: null });
    return;
  }
  const old = st.stateView;
  const same = old?.step === step;
  k.set({
    stateView: {
      step,
      state: same ? old.state : null,
      prev: same ? old.prev : null,
      diff: same ? old.diff : [],
      warning: same ? (old.warning ?? null) : null,
      loading: true,
      error: null,
    },
  });
  const m = shownModel(st);
  const inNested = st.viewing == null ? nestedPause(st) : null;
  k.nestedRefused = inNested != null;
  if (inNested) {
    // The engine answers no state-at-step while paused inside a nested run.
    k.set({ stateView: { step, state: null, prev: null, diff: [], warning: null, loading: false, error: `the run is paused inside the nested run ${inNested.run}: step out (Shift+F11) or continue to look at the top-level steps` } });
    return;
  }
  try {
    let state: Record<string, unknown>;
    let prev: Record<string, unknown> | null;
    let warning: string | null = null;
    if (st.mode === 'live' && st.viewing == null) {
      const fin = m.finished;
      const finalStep = st.status?.step ?? lastStep(m);
      const exact = fin && isObj(fin.state) && step >= finalStep ? (fin.state as Record<string, unknown>) : null;
      [state, prev] = await Promise.all([
        exact ? Promise.resolve(exact) : k.backend.runStateAt(step),
        step > 0 ? k.backend.runStateAt(step - 1) : Promise.resolve(null),
      ]);
    } else {
      // A recorded run: the engine reads its trace (as far as this model folded it, so an
      // earlier fork of a run shows its own states) and rebuilds the states with its reducers.
      const trace = shownTrace(st);
      if (!trace) throw new Error('no trace of this run was written, so its states can no longer be asked for');
      const answer = await k.backend.traceStateAt(trace, step, m.eventCount);
      state = answer.state;
      prev = answer.prev ?? null;
      warning = answer.warning ?? null;
    }
    if (seq !== k.viewSeq) return;
    k.set({ stateView: { step, state, prev, diff: prev ? diffState(prev, state) : [], warning, loading: false, error: null } });
  } catch (e) {
    if (seq !== k.viewSeq) return;
    k.set({ stateView: { step, state: null, prev: null, diff: [], warning: null, loading: false, error: errorMessage(e) } });
  }
}

/** The step to show when following the latest one. */
export function followStep(k: Kit): number {
  return latestStep(k.get());
}

export function stateActions(k: Kit): Actions<'selectStep' | 'refreshState'> {
  return {
    async selectStep(step) {
      k.set({ selectedStep: step });
      await loadState(k, step ?? followStep(k));
    },

    async refreshState() {
      const st = k.get();
      await loadState(k, st.selectedStep ?? followStep(k));
    },
  };
}
