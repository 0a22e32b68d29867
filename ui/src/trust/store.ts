// Per-folder trust in the UI (README "Trust and safety"): the open document's trust status
// (restricted mode when its folder is not trusted), the run manifest dialog, and the gate the
// debugger asks before a run. The shell is the authority: it refuses every run of an untrusted
// folder (`code: 'untrusted'`) or with an unconfirmed manifest (`code: 'manifest'`); this store
// shows why, and asks the user.
import { createContext, useContext } from 'react';
import { createStore, useStore, type StoreApi } from 'zustand';
import { errorCode, errorMessage, type Backend } from '../backend';
import type { ManifestItem, RunManifest, TrustStatus } from '../contract/trust';
import type { AppState } from '../store';

export type { ManifestItem, RunManifest, TrustStatus };

/** What the debugger asks before and after starting a run (`RunGate` of src/debug/store/kit.ts):
 *  `beforeRun(retry)` is false when the run must wait for the manifest dialog's Confirm (then
 *  `retry` runs); an untrusted folder passes, so that the shell refuses the run with its reason,
 *  shown where run errors are shown. `refused(e, retry)` is true when a refusal of the shell was
 *  handled here (the manifest dialog). `blocked()` says why running is refused now, or null. */
export interface RunGate {
  beforeRun(retry: () => void): boolean;
  refused(e: unknown, retry: () => void): boolean;
  blocked(): string | null;
}

export interface ManifestDialog {
  /** Only looking (“What would run?”): no Confirm. */
  readOnly: boolean;
}

export interface TrustState {
  status: TrustStatus | null;
  /** `trust_status` failed. */
  error: string | null;
  /** The manifest dialog, when shown. */
  manifest: ManifestDialog | null;
  /** The “Trust folder…” confirmation is shown. */
  asking: boolean;
  busy: boolean;
  /** A failed confirm / trust, shown in the dialog. */
  dialogError: string | null;
  /** Ask the shell again (after the document or the trust changed). */
  refresh(): Promise<void>;
  askTrust(open: boolean): void;
  /** Trust the open document's project root (after the user confirmed it). */
  trustFolder(): Promise<boolean>;
  /** Stop trusting it. */
  forget(): Promise<void>;
  showManifest(readOnly: boolean): void;
  /** Confirm the shown manifest; the run that waited for it starts. */
  confirmManifest(): Promise<boolean>;
  /** Close the manifest dialog; the run that waited for it does not start. */
  closeManifest(): void;
  gate: RunGate;
}

/** The sections of the manifest dialog, in order. */
export function manifestSections(m: RunManifest): Array<{ key: string; title: string; empty: string; items: ManifestItem[] }> {
  return [
    { key: 'executes', title: 'Executes', empty: 'Nothing: no script, tool, command or Python import.', items: m.executes },
    { key: 'hosts', title: 'Contacts', empty: 'No host.', items: m.hosts },
    { key: 'outside', title: 'Reads outside the project', empty: 'No file outside the project.', items: m.outside_files },
    { key: 'env', title: 'Environment variables', empty: 'None referenced.', items: m.env_vars },
  ];
}

/** `file:line` of an item, the file relative to the project root when it is inside it. */
export function itemPlace(i: ManifestItem, root: string): string {
  const r = root.endsWith('/') ? root : `${root}/`;
  const file = i.file.startsWith(r) ? i.file.slice(r.length) : i.file;
  return i.line > 0 ? `${file}:${i.line}` : file;
}

/** One line per section that has items, for the “Trust folder…” question (at most `max` items each). */
export function manifestSummary(m: RunManifest, max = 3): string[] {
  const out: string[] = [];
  for (const s of manifestSections(m)) {
    if (s.items.length === 0) continue;
    const shown = s.items.slice(0, max).map((i) => i.what);
    const more = s.items.length > max ? ` and ${s.items.length - max} more` : '';
    out.push(`${s.title}: ${shown.join(', ')}${more}`);
  }
  return out;
}

/**
 * The trust store of one window. It follows the open document of `app`: a new document or an
 * edit (which may change the manifest) asks the shell again, `delayMs` after the last change.
 */
export function createTrustStore(backend: Backend, app: StoreApi<AppState>, { delayMs = 250 }: { delayMs?: number } = {}): StoreApi<TrustState> {
  let seq = 0;
  /** The run waiting for the manifest dialog's Confirm. */
  let pending: (() => void) | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;

  const store = createStore<TrustState>()((set, get) => {
    const adopt = (status: TrustStatus) => {
      seq++;
      set({ status, error: null });
    };
    /** The document's problems depend on trust (files outside the project are refused while it
     *  is not trusted): draw it again after trust changed. */
    const redraw = async () => {
      try {
        const view = await backend.getView();
        if (view) app.getState().setView(view);
      } catch {
        // The next edit or open draws it again.
      }
    };
    const waitForConfirm = (retry: () => void) => {
      pending = retry;
      set({ manifest: { readOnly: false }, dialogError: null });
    };
    return {
      status: null,
      error: null,
      manifest: null,
      asking: false,
      busy: false,
      dialogError: null,

      async refresh() {
        if (!app.getState().view) {
          seq++;
          set({ status: null, error: null });
          return;
        }
        const mine = ++seq;
        try {
          const status = await backend.trustStatus();
          if (mine === seq) set({ status, error: null });
        } catch (e) {
          if (mine === seq) set({ error: errorMessage(e) });
        }
      },

      askTrust(open) {
        set({ asking: open, dialogError: null });
      },

      async trustFolder() {
        set({ busy: true, dialogError: null });
        try {
          adopt(await backend.trustFolder());
          set({ busy: false, asking: false });
          await redraw();
          return true;
        } catch (e) {
          set({ busy: false, dialogError: errorMessage(e) });
          return false;
        }
      },

      async forget() {
        set({ busy: true, dialogError: null });
        try {
          adopt(await backend.trustForget());
          set({ busy: false, manifest: null });
          pending = null;
          await redraw();
        } catch (e) {
          set({ busy: false, dialogError: errorMessage(e) });
        }
      },

      showManifest(readOnly) {
        if (readOnly) pending = null;
        set({ manifest: { readOnly }, dialogError: null });
        void get().refresh();
      },

      async confirmManifest() {
        const st = get().status;
        if (!st) return false;
        set({ busy: true, dialogError: null });
        try {
          adopt(await backend.trustConfirmManifest(st.manifest.hash));
        } catch (e) {
          set({ busy: false, dialogError: errorMessage(e) });
          // The manifest changed while it was shown: show the new one.
          if (errorCode(e) === 'manifest') await get().refresh();
          return false;
        }
        const run = pending;
        pending = null;
        set({ busy: false, manifest: null });
        run?.();
        return true;
      },

      closeManifest() {
        pending = null;
        set({ manifest: null, dialogError: null });
      },

      gate: {
        beforeRun(retry) {
          const st = get().status;
          // Known to need a confirmation: ask first. Otherwise the shell decides.
          if (st && st.trusted && !st.confirmed && st.path === app.getState().view?.path) {
            waitForConfirm(retry);
            return false;
          }
          return true;
        },
        refused(e, retry) {
          const code = errorCode(e);
          if (code === 'manifest') {
            void get().refresh().then(() => waitForConfirm(retry));
            return true;
          }
          if (code === 'untrusted') void get().refresh();
          return false;
        },
        blocked() {
          const st = get().status;
          if (!st || st.trusted || st.path !== app.getState().view?.path) return null;
          return `the folder ${st.root} is not trusted (restricted mode); trust it with “Trust folder…” in the banner`;
        },
      },
    };
  });

  // Follow the document: another file, or an edit of this one.
  let last: { path: string | null; revision: number | null } = { path: null, revision: null };
  app.subscribe((s) => {
    const path = s.view?.path ?? null;
    const revision = s.view?.revision ?? null;
    if (path === last.path && revision === last.revision) return;
    const other = path !== last.path;
    last = { path, revision };
    if (timer) clearTimeout(timer);
    timer = null;
    if (other) {
      // Never show one file's trust for another.
      seq++;
      store.setState({ status: null, error: null, manifest: null, asking: false });
      pending = null;
    }
    if (path === null) return;
    if (other || delayMs <= 0) void store.getState().refresh();
    else timer = setTimeout(() => void store.getState().refresh(), delayMs);
  });
  if (app.getState().view) {
    last = { path: app.getState().view!.path, revision: app.getState().view!.revision };
    void store.getState().refresh();
  }
  return store;
}

export const TrustContext = createContext<StoreApi<TrustState> | null>(null);

export function useTrustStore(): StoreApi<TrustState> {
  const s = useContext(TrustContext);
  if (!s) throw new Error('TrustContext missing');
  return s;
}

export function useTrust<T>(selector: (s: TrustState) => T): T {
  return useStore(useTrustStore(), selector);
}
