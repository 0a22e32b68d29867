// Driving the live run: start (the open document's current text), continue / step / step into /
// step out / pause / stop / restart, answers to its questions, state edits, rewinds; the run
// configuration; the nested agents' graphs shown while paused inside one.
import { errorMessage, type RunAction } from '../../backend';
import { emptyModel } from '../model';
import type { RunConfig } from '../types';
import { adoptEarly, flushEvents, unschedule } from './events';
import { adoptRemote } from './remote';
import { archive } from './history';
import type { Kit } from './kit';
import { currentPending, isLive, nestedPause, nestedViewKey, type Actions, type DebugState, type NestedViewEntry } from './state';

/**
 * A run is starting (or resuming): the shown run goes to the history and an empty live run
 * takes its place. Returns what to put back if the start fails.
 */
export function beginLive(k: Kit, extra: Partial<DebugState>) {
  const st = k.get();
  const before = { mode: st.mode, model: st.model, info: st.info, status: st.status, history: st.history, viewing: st.viewing, remoteRun: st.remoteRun };
  unschedule(k);
  if (k.queue.length || k.unshown) flushEvents(k);
  archive(k, null, k.get().model, st.info?.trace);
  k.replaced = st.info?.run ?? null;
  k.queue = [];
  k.early = [];
  k.cancelled = null;
  k.shown = null;
  k.viewSeq++;
  k.set({
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
    remoteRun: null,
    ...extra,
  });
  return before;
}

async function control(k: Kit, action: RunAction, what: string): Promise<void> {
  try {
    await k.backend.runControl(action);
  } catch (e) {
    k.toast(`${what} failed: ${errorMessage(e)}`);
  }
}

/** Unsaved text in the editor goes to the session first: a run runs the current text. */
async function flushSourceText(k: Kit): Promise<void> {
  const a = k.app.getState();
  const p = a.pendingText;
  if (p != null && p !== a.view?.text) await a.setText(p);
}

/** Start a run of the open remote document's assistant on its server, with the canvas's
 *  breakpoints and the configuration's input and initial state. */
async function startRemote(k: Kit, mode: RunAction): Promise<void> {
  const st = k.get();
  const doc = st.remoteDoc;
  if (!doc) return;
  const before = beginLive(k, { configError: null, remoteRun: doc.url });
  const cur = k.get();
  try {
    const o = await k.backend.remoteStart({
      assistant_id: doc.assistant_id,
      input: cur.config.input ?? null,
      state: cur.config.state ?? null,
      breakpoints: cur.breakpoints,
      start: mode,
    });
    adoptRemote(k, o);
    k.set({ info: o.run ?? null, starting: false });
    if (o.run) adoptEarly(k, o.run.run);
  } catch (e) {
    const msg = errorMessage(e);
    k.early = [];
    k.set({ ...before, starting: false, configError: msg });
    k.toast(`Starting the run on ${doc.url} failed: ${msg}`);
  }
}

type ControlAction =
  | 'start'
  | 'continue'
  | 'step'
  | 'stepInto'
  | 'stepOut'
  | 'loadNestedView'
  | 'pause'
  | 'stop'
  | 'restart'
  | 'setConfig'
  | 'openConfig'
  | 'answer'
  | 'cancelDialog'
  | 'reopenDialog'
  | 'editState'
  | 'rewind'
  | 'setPanelTab';

export function controlActions(k: Kit): Actions<ControlAction> {
  const { get, set, backend, app } = k;
  return {
    async start(mode) {
      const st = get();
      if (st.starting) return;
      if (st.remoteDoc) return startRemote(k, mode ?? st.config.start ?? 'continue');
      // Per-folder trust: a manifest to confirm first waits for the dialog's Confirm.
      const retry = () => void get().start(mode);
      if (k.gate && !k.gate.beforeRun(retry)) return;
      const startMode = mode ?? st.config.start ?? 'continue';
      const before = beginLive(k, { configError: null });
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
        await flushSourceText(k);
        const info = await backend.runStart(config);
        set({ info, starting: false });
        adoptEarly(k, info.run);
      } catch (e) {
        const msg = errorMessage(e);
        k.early = [];
        if (k.gate?.refused(e, retry)) {
          set({ ...before, starting: false });
          return;
        }
        set({ ...before, starting: false, configError: msg });
        k.toast(`Starting the run failed: ${msg}`);
      }
    },

    async continue() {
      const st = get();
      if (st.starting) return;
      if (st.mode !== 'live' || !st.info || st.status?.state === 'finished') return get().start('continue');
      await control(k, 'continue', 'Continue');
    },

    async step() {
      const st = get();
      if (st.starting) return;
      if (st.mode !== 'live' || !st.info || st.status?.state === 'finished') return get().start('step');
      await control(k, 'step', 'Step');
    },

    async stepInto() {
      const st = get();
      if (st.starting || !isLive(st) || st.remoteRun) return;
      const state = st.status?.state;
      if (!nestedPause(st) && state !== 'paused' && state !== 'ready') return;
      await control(k, 'step_into', 'Step into');
    },

    async stepOut() {
      if (get().starting || !nestedPause(get())) return;
      await control(k, 'step_out', 'Step out');
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
      await control(k, 'pause', 'Pause');
    },

    async stop() {
      if (!isLive(get())) return;
      await control(k, 'stop', 'Stop');
    },

    async restart() {
      const st = get();
      if (st.starting) return;
      if (st.mode !== 'live' || !st.info) return get().start();
      if (st.remoteRun) {
        k.toast(`Restarting is not available for a run on a server (${st.remoteRun}): start a new run`);
        return;
      }
      // Restarting runs everything again: not in restricted mode.
      const blocked = k.gate?.blocked() ?? null;
      if (blocked) {
        k.toast(`Restart refused: ${blocked}`);
        return;
      }
      get().flush();
      archive(k, 'before restart', get().model, st.info.trace);
      await control(k, 'restart', 'Restart');
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
        k.cancelled = null;
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
      k.cancelled = currentPending(get())?.id ?? null;
      set({ dialogOpen: false, answerError: null });
    },

    reopenDialog() {
      if (!currentPending(get())) return;
      k.cancelled = null;
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
      if (get().remoteRun) return `editing the state is not available for a run on a server (${get().remoteRun})`;
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

    async rewind(step) {
      const st = get();
      if (st.mode !== 'live' || !st.info) {
        app.getState().toast('info', 'Rewinding needs a live run: start one first');
        return;
      }
      if (st.remoteRun) {
        app.getState().toast('info', `Rewinding is not available for a run on a server (${st.remoteRun})`);
        return;
      }
      const nested = nestedPause(st);
      if (nested) {
        app.getState().toast('info', `The run is paused inside the nested run ${nested.run}: step out (Shift+F11) or continue before rewinding`);
        return;
      }
      get().flush();
      const model = get().model;
      archive(k, `before rewind to step ${step}`, model, st.info.trace);
      const entry = get().history[0];
      try {
        await backend.runRewind(step);
        set({ selectedStep: null });
      } catch (e) {
        if (entry?.model === model) {
          const cur = get();
          set({ history: cur.history.filter((h) => h !== entry), viewing: cur.viewing == null ? null : Math.max(0, cur.viewing - 1) });
        }
        k.toast(`Rewinding to step ${step} failed: ${errorMessage(e)}`);
      }
    },

    setPanelTab(tab) {
      set({ panelTab: tab });
    },
  };
}
