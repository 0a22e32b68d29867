// Earlier runs kept to compare (runs replaced by a new one, runs before a rewind or a restart) and
// recorded runs opened for review from their JSONL trace. Their states come from the engine,
// rebuilt from the run's trace (./states.ts).
import { errorMessage } from '../../backend';
import { applyStatus, emptyModel, endNestedPause, foldEvents, guessDialect, lastDoneStep, type RunModel } from '../model';
import type { DebugEvent, RunInfo, RunStatusInfo } from '../types';
import { unschedule } from './events';
import type { Kit } from './kit';
import { shownModel, type Actions, type HistoryEntry } from './state';
import { followStep, loadState } from './states';

const HISTORY_MAX = 10;

let runLabelSeq = 1;

function runLabel(m: RunModel): string {
  const what = m.finished ? m.finished.status : `${m.steps.length} step${m.steps.length === 1 ? '' : 's'}`;
  return `run ${runLabelSeq++}: ${m.agent ?? 'agent'} (${what})`;
}

/** Keep `model` (with the trace its states are rebuilt from) in the history, newest first. */
export function archive(k: Kit, label: string | null, model: RunModel, trace: string | null | undefined): void {
  if (model.eventCount === 0) return;
  const st = k.get();
  const entry: HistoryEntry = { label: label ?? runLabel(model), model, trace: trace ?? null };
  const history = [entry, ...st.history].slice(0, HISTORY_MAX);
  const viewing = st.viewing == null ? null : st.viewing + 1 < history.length ? st.viewing + 1 : null;
  k.set({ history, viewing });
}

export function historyActions(k: Kit): Actions<'openTrace' | 'viewHistory'> {
  return {
    async openTrace(path) {
      let trace;
      try {
        trace = await k.backend.openTrace(path ?? null);
      } catch (e) {
        k.toast(`Opening the trace failed: ${errorMessage(e)}`);
        return;
      }
      if (!trace) return;
      const st = k.get();
      st.flush();
      archive(k, null, k.get().model, st.info?.trace);
      unschedule(k);
      k.queue = [];
      k.early = [];
      const events: DebugEvent[] = Array.isArray(trace.events) ? trace.events : [];
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
      const info: RunInfo = { run: model.run ?? '', trace: trace.path, agent: model.agent ?? '', dialect: guessDialect(events), llm: 'trace' };
      k.viewSeq++;
      k.set({
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
      await loadState(k, status.step);
    },

    viewHistory(index) {
      const st = k.get();
      const viewing = index != null && index >= 0 && index < st.history.length ? index : null;
      k.viewSeq++;
      k.set({ viewing, selectedStep: null, stateView: null });
      const m = shownModel(k.get());
      if (m.eventCount) void loadState(k, viewing == null ? followStep(k) : lastDoneStep(m));
    },
  };
}
