// The studio attached to a `switchyard serve` server (docs/app-contract.md §5.4): Connect to
// server…, the server's runs beside the local durable ones, opening one in the debugger (its
// agent file shown read-only as a remote document, its events from the server's stream through
// the same `run-events` batches as a local run), opening an assistant to set breakpoints on and
// start runs of on the server (`start` in controls.ts sends them there while a remote document
// is open).
import { errorMessage } from '../../backend';
import type { RemoteOpened } from '../types';
import { beginLive } from './controls';
import { adoptEarly } from './events';
import type { Kit } from './kit';
import type { Actions } from './state';

/** A remote run or assistant was opened: its view becomes the canvas's document. */
export function adoptRemote(k: Kit, o: RemoteOpened): void {
  const a = k.app.getState();
  a.setView(o.view);
  k.app.setState({ selection: null, pendingText: null });
  k.set({ remoteDoc: { url: o.url, assistant_id: o.assistant_id, assistant: o.assistant } });
}

export function remoteActions(
  k: Kit,
): Actions<'openConnect' | 'connectRemote' | 'disconnectRemote' | 'loadRemote' | 'openRemoteRun' | 'openRemoteAssistant'> {
  const { get, set, backend } = k;
  return {
    async openConnect(open) {
      set({ connectOpen: open, connectError: null });
      if (!open) return;
      try {
        const remote = await backend.remoteStatus();
        set({ remote });
      } catch (e) {
        set({ connectError: errorMessage(e) });
      }
    },

    async connectRemote(url, token) {
      set({ connecting: true, connectError: null });
      try {
        const remote = await backend.remoteConnect(url, token && token.trim() ? token.trim() : null);
        set({ remote, connecting: false, connectOpen: false });
        if (remote.note) k.app.getState().toast('info', remote.note);
        await get().loadRemote();
        return true;
      } catch (e) {
        set({ connecting: false, connectError: errorMessage(e) });
        return false;
      }
    },

    async disconnectRemote() {
      try {
        const remote = await backend.remoteDisconnect(false);
        set({ remote, remoteRuns: [], remoteAssistants: [], remoteRunsError: null });
      } catch (e) {
        k.toast(errorMessage(e));
      }
    },

    async loadRemote() {
      if (!get().remote?.connected) return;
      try {
        const [runs, assistants] = await Promise.all([backend.remoteRuns(), backend.remoteAssistants()]);
        set({ remoteRuns: runs, remoteAssistants: assistants, remoteRunsError: null });
      } catch (e) {
        set({ remoteRunsError: errorMessage(e) });
      }
    },

    async openRemoteRun(id) {
      if (get().starting) return false;
      const before = beginLive(k, { runsError: null, remoteRun: get().remote?.url ?? null });
      try {
        const o = await backend.remoteOpenRun(id);
        adoptRemote(k, o);
        set({ info: o.run ?? null, starting: false, runsOpen: false });
        if (o.run) adoptEarly(k, o.run.run);
        return true;
      } catch (e) {
        k.early = [];
        set({ ...before, starting: false, remoteRun: null, remoteRunsError: errorMessage(e) });
        return false;
      }
    },

    async openRemoteAssistant(id) {
      try {
        const o = await backend.remoteOpenAssistant(id);
        adoptRemote(k, o);
        set({ runsOpen: false, configError: null });
        return true;
      } catch (e) {
        set({ remoteRunsError: errorMessage(e), configError: errorMessage(e) });
        return false;
      }
    },
  };
}
