// The durable runs list (docs/app-contract.md §5.3): the runs the run store keeps, deleting them,
// resuming one (its agent file opened first when another one is open).
import { errorMessage } from '../../backend';
import { beginLive } from './controls';
import { adoptEarly } from './events';
import type { Kit } from './kit';
import { isLive, type Actions } from './state';

export function runsActions(k: Kit): Actions<'openRuns' | 'loadRuns' | 'deleteRun' | 'resumeRun'> {
  const { get, set, backend, app } = k;
  return {
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
      // Per-folder trust of the run's file (now the open document): a manifest to confirm first.
      const retry = () => void get().resumeRun(id, force);
      if (k.gate && !k.gate.beforeRun(retry)) return false;
      const before = beginLive(k, { runsError: null, runsChanged: null });
      try {
        const cur = get();
        const info = await backend.runResume(id, force, cur.breakpoints, cur.breakOnError);
        set({ info, starting: false, runsOpen: false });
        adoptEarly(k, info.run);
        return true;
      } catch (e) {
        const msg = errorMessage(e);
        k.early = [];
        if (k.gate?.refused(e, retry)) {
          set({ ...before, starting: false, runsError: null, runsChanged: null });
          return false;
        }
        set({ ...before, starting: false, runsError: msg, runsChanged: /changed since the run started/.test(msg) ? id : null });
        return false;
      }
    },
  };
}
