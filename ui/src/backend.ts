// The only module that talks to Tauri. Everything else uses the `Backend` interface, so the tests
// and `npm run dev` can run the UI against the in-memory fake (`src/fake/backend.ts`, which is
// kept out of the production bundle).
import type { CommandError, DocumentChanged, EditedView, EditOp, ExportFormat, ExprError, Pos, RecoveryOffer, View } from './types';
import type { Control } from './contract/runtime';
import type { Breakpoint, RecordCheck, RemoteAssistant, RemoteOpened, RemoteRunInfo, RemoteStart, RemoteStatus, RunBatch, RunConfig, RunInfo, RunsList, TraceFile, TraceStateAt } from './debug/types';
import type { ModelsInfo, ProbeResult, ProviderInput, SaveResult, Settings, SettingsChange } from './settings/types';
import type { TrustStatus } from './contract/trust';
import type { BundleView, FolderOpened } from './contract/shell';
import type { GraphDiff } from './contract/diff';
import type { TraceDiff } from './contract/tracediff';
import type { SavedRun, SuiteInfo, SuiteResult } from './contract/suite';

/** `run_control` actions (docs/app-contract.md §5.1; engine `Control`). `step_into` steps and
 *  pauses inside a nested run the step starts; `step_out` runs the rest of the nested run paused in. */
export type RunAction = Control;

export interface Backend {
  openPath(path: string): Promise<View>;
  openDialog(): Promise<View | null>;
  /** Choose a folder natively: a coyote bundle opens as a bundle, an agent folder as that agent;
   *  null when cancelled. */
  openFolderDialog(): Promise<FolderOpened | null>;
  /** Open a coyote bundle folder (`open_path` refuses one with code `bundle`). */
  bundleOpen(path: string): Promise<BundleView>;
  /** The window's open bundle (read again), or null. */
  bundleCurrent(): Promise<BundleView | null>;
  /** Forget the open bundle. */
  bundleClose(): Promise<null>;
  recentFiles(): Promise<string[]>;
  getView(): Promise<View | null>;
  selectAgent(name: string): Promise<View>;
  /** The view after the edit, plus `select`: the node to select afterwards (new or renamed). */
  applyEdit(op: EditOp): Promise<EditedView>;
  setText(text: string): Promise<View>;
  undo(): Promise<View>;
  redo(): Promise<View>;
  save(force: boolean): Promise<View>;
  reload(): Promise<View>;
  keepMine(): Promise<View>;
  diskText(): Promise<string | null>;
  setPositions(positions: Record<string, Pos>): Promise<null>;
  checkExpr(kind: 'cel' | 'template', text: string): Promise<ExprError[]>;
  exportDiagram(format: ExportFormat, data: string): Promise<string | null>;
  relayout(): Promise<View>;
  /** Unsaved text a recovery file kept for the open document (after a crash), or null. */
  recoveryOffer(): Promise<RecoveryOffer | null>;
  /** Load the offered text as one undoable edit over the text on disk. */
  recoveryRestore(): Promise<View>;
  /** Throw the offered text away (its recovery files are removed). */
  recoveryDiscard(): Promise<null>;
  /** Subscribe to `document-changed`; returns an unsubscribe function. */
  onDocumentChanged(cb: (e: DocumentChanged) => void): Promise<() => void>;
  /** Subscribe to OS file drops on the webview; returns an unsubscribe function. */
  onFileDrop(cb: (paths: string[]) => void): Promise<() => void>;

  // The debugger (docs/app-contract.md §5).
  /** Start a run of the open document's current text (stops any earlier run). */
  runStart(config: RunConfig): Promise<RunInfo>;
  runControl(action: RunAction): Promise<null>;
  /** The window folded `events` more `run-events` events of `run` (flow control: a local run
   *  waits while the window is far behind). Fire and forget. */
  runEventsAck(run: string, events: number): void;
  /** Replace the breakpoints; a bad condition is refused (works while running). */
  runBreakpoints(bps: Breakpoint[], breakOnError: boolean): Promise<null>;
  /** Answer the pending interrupt `id`; refused answers leave it pending. */
  runAnswer(id: string, value: unknown): Promise<null>;
  /** Change one top-level state value (paused / interrupted only). */
  runEditState(key: string, value: unknown): Promise<null>;
  /** The state after `step` steps (0 = initial). */
  runStateAt(step: number): Promise<Record<string, unknown>>;
  /** Go back to the checkpoint after `step` (a fork); the run is paused there. */
  runRewind(step: number): Promise<null>;
  /** Read a JSONL trace (`null` path = file dialog); null when the dialog was cancelled. */
  openTrace(path: string | null): Promise<TraceFile | null>;
  /** The state of the recorded run in the trace at `path` after `step` steps and after the step
   *  before, rebuilt by the engine; `events`: only the trace's first `events` events count (the
   *  events the run's model folded), null = all. */
  traceStateAt(path: string, step: number, events: number | null): Promise<TraceStateAt>;
  /** Subscribe to `run-events` batches; returns an unsubscribe function. */
  onRunEvents(cb: (b: RunBatch) => void): Promise<() => void>;
  /** The durable runs in the run store, most recently updated first. */
  runsList(): Promise<RunsList>;
  /** Delete durable runs (not the one in progress). */
  runsDelete(ids: string[]): Promise<null>;
  /** Resume a durable run from its last checkpoint (stops any run in progress); `force`
   *  resumes even though the agent file changed since. */
  runResume(id: string, force: boolean, breakpoints: Breakpoint[], breakOnError: boolean): Promise<RunInfo>;
  /** The graph of another agent file (a nested run's), laid out like `getView`, read-only: the
   *  open document is not changed. `agent` picks the agent of a multi-agent file. */
  nestedView(file: string, agent: string | null): Promise<View>;
  /** Where a recording to `record` (relative to the agent, as `RunConfig.record`) goes, and
   *  whether it is inside a git work tree that does not ignore it (`warn`). */
  recordCheck(record: string): Promise<RecordCheck>;
  /** Add the line that ignores the recording `record` to its work tree's `.gitignore`; the check after. */
  recordGitignore(record: string): Promise<RecordCheck>;

  // A `switchyard serve` server (docs/app-contract.md §5.4). While a remote run is the current
  // one, runControl / runAnswer / runBreakpoints / runStateAt go to the server.
  /** The connection, or the URL remembered from last time (not connected). */
  remoteStatus(): Promise<RemoteStatus>;
  /** Connect (the token, when given, goes to the OS keyring; without one the keyring's is used). */
  remoteConnect(url: string, token: string | null): Promise<RemoteStatus>;
  remoteDisconnect(forgetToken: boolean): Promise<RemoteStatus>;
  /** The server's runs, newest first. */
  remoteRuns(): Promise<RemoteRunInfo[]>;
  remoteAssistants(): Promise<RemoteAssistant[]>;
  /** Open an assistant's agent file read-only as the document (nothing written to disk). */
  remoteOpenAssistant(assistantId: string): Promise<RemoteOpened>;
  /** Show a server's run in the debugger (its agent file opened read-only, its events live). */
  remoteOpenRun(runId: string): Promise<RemoteOpened>;
  /** Start a run of an assistant on the server and show it. */
  remoteStart(config: RemoteStart): Promise<RemoteOpened>;

  /** The graph diff of the open document (its text, saved or not) against the file at git
   *  revision `rev` (default HEAD) or against `file`, for the agent shown. */
  diffDocument(rev: string | null, file: string | null): Promise<GraphDiff>;
  /** Two recorded runs compared step by step; `aEvents` / `bEvents`: how many of each trace's
   *  events count (an earlier run shares its trace with the fork that went on), null = all. */
  traceDiff(a: string, aEvents: number | null, b: string, bEvents: number | null): Promise<TraceDiff>;
  /** The agent test suites beside the open document (`*.tests.yaml` whose agent it is). */
  suiteList(): Promise<SuiteInfo[]>;
  /** Run a suite's cases, all or the one named (its agent's folder must be trusted). */
  suiteRun(file: string, caseName: string | null): Promise<SuiteResult>;
  /** Save the run whose trace is `trace` as the case `name` of the open agent's suite (created
   *  beside it when there is none): input, answers, its replies as a cassette, its route. */
  suiteSaveRun(name: string, trace: string): Promise<SavedRun>;

  /** Open an http, https or mailto link in the system browser (the UI asks the user first:
   *  `ExternalLink`). */
  openExternal(url: string): Promise<null>;

  // Settings (docs/app-contract.md §6). No command returns an API key, only a masked form.
  /** Providers, where their keys come from, the default model, the keyring's state. */
  settingsGet(): Promise<Settings>;
  /** Apply one change and write the provider file; a new key goes to the OS keyring, else to the file. */
  settingsSave(change: SettingsChange): Promise<SaveResult>;
  /** A cheap request to the provider's model list (5 s timeout). */
  settingsTestProvider(provider: ProviderInput): Promise<ProbeResult>;
  /** The models the open document names and whether each can be called. */
  llmModels(): Promise<ModelsInfo>;

  // Per-folder trust (README "Trust and safety"). Runs are refused by the shell with
  // `{code: 'untrusted'}` or `{code: 'manifest'}` (see `errorCode`) until these say yes.
  /** The open document's project root, whether it is trusted, its run manifest, confirmed or not. */
  trustStatus(): Promise<TrustStatus>;
  /** Trust the open document's project root. */
  trustFolder(): Promise<TrustStatus>;
  /** Stop trusting the open document's folder. */
  trustForget(): Promise<TrustStatus>;
  /** Confirm the run manifest with `hash` (refused when the document's manifest is another one). */
  trustConfirmManifest(hash: string): Promise<TrustStatus>;
}

/** Normalise whatever a command rejected with (`CommandError`, or anything else) into its message. */
export function errorMessage(e: unknown): string {
  if (e == null) return 'unknown error';
  if (typeof e === 'string') return e;
  if (typeof e === 'object' && 'message' in e && typeof (e as { message: unknown }).message === 'string') {
    return (e as { message: string }).message;
  }
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}

/** The `code` of a refusal the shell tells apart (`untrusted`, `manifest`, `path_not_allowed`, `bundle`), else null. */
export function errorCode(e: unknown): NonNullable<CommandError['code']> | null {
  if (e && typeof e === 'object' && typeof (e as { code?: unknown }).code === 'string') return (e as Required<CommandError>).code;
  return null;
}

/** True when a `save` error is a disk conflict (the shell reports `{kind:"conflict"}` or says so). */
export function isConflictError(e: unknown): boolean {
  if (e && typeof e === 'object' && (e as { kind?: unknown }).kind === 'conflict') return true;
  return /conflict|changed on disk|modified on disk/i.test(errorMessage(e));
}

export function isTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

export function createTauriBackend(): Backend {
  const core = () => import('@tauri-apps/api/core');
  const call = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    const { invoke } = await core();
    return invoke<T>(cmd, args);
  };
  return {
    openPath: (path) => call('open_path', { path }),
    openDialog: () => call('open_dialog'),
    openFolderDialog: () => call('open_folder_dialog'),
    bundleOpen: (path) => call('bundle_open', { path }),
    bundleCurrent: () => call('bundle_current'),
    bundleClose: () => call('bundle_close'),
    recentFiles: () => call('recent_files'),
    getView: () => call('get_view'),
    selectAgent: (name) => call('select_agent', { name }),
    applyEdit: (op) => call('apply_edit', { op }),
    setText: (text) => call('set_text', { text }),
    undo: () => call('undo'),
    redo: () => call('redo'),
    save: (force) => call('save', { force }),
    reload: () => call('reload'),
    keepMine: () => call('keep_mine'),
    diskText: () => call('disk_text'),
    setPositions: (positions) => call('set_positions', { positions }),
    checkExpr: (kind, text) => call('check_expr', { kind, text }),
    exportDiagram: (format, data) => call('export_diagram', { format, data }),
    relayout: () => call('relayout'),
    diffDocument: (rev, file) => call('diff_document', { rev, file }),
    traceDiff: (a, aEvents, b, bEvents) => call('trace_diff', { a, aEvents, b, bEvents }),
    suiteList: () => call('suite_list'),
    suiteRun: (file, caseName) => call('suite_run', { file, case: caseName }),
    suiteSaveRun: (name, trace) => call('suite_save_run', { name, trace }),
    recoveryOffer: () => call('recovery_offer'),
    recoveryRestore: () => call('recovery_restore'),
    recoveryDiscard: () => call('recovery_discard'),
    async onDocumentChanged(cb) {
      const { listen } = await import('@tauri-apps/api/event');
      return listen<DocumentChanged>('document-changed', (ev) => cb(ev.payload));
    },
    async onFileDrop(cb) {
      const { getCurrentWebview } = await import('@tauri-apps/api/webview');
      return getCurrentWebview().onDragDropEvent((ev) => {
        if (ev.payload.type === 'drop' && ev.payload.paths.length > 0) cb(ev.payload.paths);
      });
    },
    runStart: (config) => call('run_start', { config }),
    runControl: (action) => call('run_control', { action }),
    runEventsAck: (run, events) => {
      call('run_events_ack', { run, events }).catch(() => {});
    },
    runBreakpoints: (breakpoints, breakOnError) => call('run_breakpoints', { breakpoints, breakOnError }),
    runAnswer: (id, value) => call('run_answer', { id, value }),
    runEditState: (key, value) => call('run_edit_state', { key, value }),
    runStateAt: (step) => call('run_state_at', { step }),
    runRewind: (step) => call('run_rewind', { step }),
    openTrace: (path) => call('open_trace', { path }),
    traceStateAt: (path, step, events) => call('trace_state_at', { path, step, events }),
    async onRunEvents(cb) {
      const { listen } = await import('@tauri-apps/api/event');
      // The app queues the batches and sends only a `run-events-ready` notice; the page takes
      // them with `run_events_take`, whose answer is a response body rather than a script
      // (src-tauri/src/debug.rs `EventQueue`). One take at a time, in order; a notice during a
      // take, or an answer with `more`, asks for another once it is done.
      let taking = false;
      let again = false;
      let stopped = false;
      const take = async (): Promise<void> => {
        if (taking) {
          again = true;
          return;
        }
        taking = true;
        try {
          do {
            again = false;
            // Taken batches are handed over even after unsubscribing: they are gone from the queue.
            const got = await call<{ batches: RunBatch[]; more: boolean }>('run_events_take');
            for (const b of got.batches) cb(b);
            // The app answers about 1 MB at a time; `more` says to take the rest.
            if (got.more) again = true;
          } while (again);
        } catch (e) {
          console.error('switchyard: could not take run events', e);
        } finally {
          taking = false;
        }
      };
      const unlisten = await listen('run-events-ready', () => {
        if (!stopped) void take();
      });
      // Batches queued before the page listened (a run started while it loaded).
      void take();
      return () => {
        stopped = true;
        unlisten();
      };
    },
    runsList: () => call('runs_list'),
    runsDelete: (ids) => call('runs_delete', { ids }),
    runResume: (id, force, breakpoints, breakOnError) => call('run_resume', { id, force, breakpoints, breakOnError }),
    nestedView: (file, agent) => call('nested_view', { file, agent }),
    recordCheck: (record) => call('record_check', { record }),
    recordGitignore: (record) => call('record_gitignore', { record }),
    remoteStatus: () => call('remote_status'),
    remoteConnect: (url, token) => call('remote_connect', { url, token }),
    remoteDisconnect: (forgetToken) => call('remote_disconnect', { forgetToken }),
    remoteRuns: () => call('remote_runs'),
    remoteAssistants: () => call('remote_assistants'),
    remoteOpenAssistant: (assistantId) => call('remote_open_assistant', { assistantId }),
    remoteOpenRun: (runId) => call('remote_open_run', { runId }),
    remoteStart: (config) => call('remote_start', { config }),
    openExternal: (url) => call('open_external', { url }),
    settingsGet: () => call('settings_get'),
    settingsSave: (change) => call('settings_save', { change }),
    settingsTestProvider: (provider) => call('settings_test_provider', { provider }),
    llmModels: () => call('llm_models'),
    trustStatus: () => call('trust_status'),
    trustFolder: () => call('trust_folder'),
    trustForget: () => call('trust_forget'),
    trustConfirmManifest: (hash) => call('trust_confirm_manifest', { hash }),
  };
}

let current: Backend | null = null;

/** Tauri's backend, made once: the default of `<App>` without a store. (`npm run dev` in a plain
 *  browser passes the fake one instead, see `src/main.tsx`.) */
export function getBackend(): Backend {
  if (!current) current = createTauriBackend();
  return current;
}
