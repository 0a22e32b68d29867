// In-memory fake backend for the tests and for running the UI in a plain browser (`npm run dev`).
// It does not edit YAML; it records every call and applies simple structural changes to the view
// so the UI can be exercised end to end. Dev/test only: production code must not import this
// folder (eslint.config.js), and `npm run check:bundle` fails if it reaches the production bundle.
import type { Backend } from '../backend';
import type { DocumentChanged, EditOp, ExprError, JsonValue, RecoveryOffer, View } from '../types';
import type { DebugEvent, DurableRun, RecordCheck, RemoteAssistant, RemoteOpened, RemoteRunInfo, RemoteStatus, RunBatch, RunInfo, TraceFile, TraceStateAt } from '../debug/types';
import type { KeySource, ModelsInfo, ProbeResult, ProviderInfo, SaveResult, Settings, SettingsChange } from '../settings/types';
import type { RunManifest, TrustStatus } from '../contract/trust';
import type { BundleView } from '../contract/shell';
import type { GraphDiff } from '../contract/diff';
import type { TraceDiff } from '../contract/tracediff';
import type { SavedRun, SuiteInfo, SuiteResult } from '../contract/suite';
import { viewEdge, viewNode } from './demo';

export interface FakeCall {
  cmd: string;
  args?: unknown;
}

export interface FakeBackend extends Backend {
  calls: FakeCall[];
  /** `runEventsAck`: the events acknowledged so far, by run. */
  acked: Record<string, number>;
  view: View | null;
  /** Bundle folders `bundleOpen` knows, by path; `openPath` of one refuses with code `bundle`. */
  bundles: Record<string, BundleView>;
  /** The open bundle's folder. */
  bundle: string | null;
  /** Make the next call of `cmd` reject with `error`. */
  failNext(cmd: string, error: unknown): void;
  /** Emit a `document-changed` event. */
  emit(e: DocumentChanged): void;
  /** Emit an OS file drop. */
  drop(paths: string[]): void;
  disk: string | null;
  /** What `recovery_offer` answers (restore and discard clear it). */
  recovery: RecoveryOffer | null;
  exprErrors: (kind: string, text: string) => ExprError[];

  // Scripted debugger runs (tests drive a run by pushing batches).
  /** Push a `run-events` batch to the subscribers. */
  emitRun(batch: RunBatch): void;
  /** States served by `runStateAt(step)`; a missing step is refused like the engine does. */
  runStates: Record<number, Record<string, unknown>>;
  /** What `openTrace` returns (null = the dialog was cancelled). */
  trace: TraceFile | null;
  /** Traces `traceStateAt` reads, by path, besides the opened `trace` and the fake's own runs
   *  (each run started or resumed writes `/fake/runs/<run>.jsonl`: the events emitted for it). */
  traces: Record<string, DebugEvent[]>;
  /** The `warning` `traceStateAt` answers with. */
  traceWarning: string | null;
  /** What `diffDocument` answers (null: refused as the shell does for a file git does not know). */
  graphDiff: GraphDiff | null;
  /** What `traceDiff` answers (null: refused). */
  runDiff: TraceDiff | null;
  /** What `suiteList` answers. */
  suites: SuiteInfo[];
  /** What `suiteRun(file, …)` answers, by suite file (its cases kept to the one named). */
  suiteResults: Record<string, SuiteResult>;
  /** What `suiteSaveRun` saved (the case is also added to the first of `suites`, or to a new one). */
  savedRuns: (SavedRun & { trace: string })[];
  /** Fields laid over the `RunInfo` returned by `runStart` (the run id is `fake-run-<n>`). */
  runInfo: Partial<RunInfo>;
  /** The id of the latest run started. */
  lastRun: string | null;
  /** The durable runs `runsList` serves (`runsDelete` removes from it). */
  durableRuns: DurableRun[];
  /** Agent files whose durable runs `runResume` refuses as changed (unless forced). */
  changedFiles: string[];
  /** What `nestedView(file, agent)` serves: keyed `<file>#<agent>`, else by file; a file missing
   *  here is refused like an unreadable one. */
  nestedViews: Record<string, View>;
  /** What `recordCheck` answers for a recording path (by path; else outside any work tree);
   *  `recordGitignore` marks it ignored. */
  recordChecks: Record<string, RecordCheck>;
  /** URLs `openExternal` was asked to open, in order. */
  opened: string[];

  // A fake `switchyard serve`.
  /** The one URL that answers (`remoteConnect` to any other is unreachable); null: none. */
  remoteServer: string | null;
  /** The token it wants (null: none). */
  remoteToken: string | null;
  /** The connection made (`remoteStatus`). */
  remote: RemoteStatus;
  remoteRunList: RemoteRunInfo[];
  remoteAssistantList: RemoteAssistant[];
  /** The views of the assistants' agent files, by assistant id. */
  remoteViews: Record<string, View>;
  /** The `remoteStart` configurations, in order. */
  remoteStarts: unknown[];

  // Settings: an in-memory provider file and key store.
  settings: Settings;
  /** Keys by provider (never returned; masked in `settings`). */
  keys: Record<string, { key: string; source: KeySource }>;
  /** Whether the fake OS keyring answers (false: keys go to the "file"). */
  keyringAvailable: boolean;
  /** What `settingsTestProvider` answers. */
  probe: ProbeResult;
  /** What `llmModels` answers. */
  models: ModelsInfo;

  // Per-folder trust: by default the folder is trusted and the manifest confirmed, so runs start.
  /** Whether the open document's folder is trusted (false: restricted mode, runs refused). */
  trusted: boolean;
  /** The manifest hash confirmed for the open document (null: never). */
  confirmedHash: string | null;
  /** The open document's run manifest (set `hash` to something new to "change" it). */
  manifest: RunManifest;
  /** The trust commands called, kept apart from `calls`: the status is asked again after every
   *  edit, and those calls would interleave with the commands other tests look at. */
  trustCalls: FakeCall[];
}

/** The fake's default run manifest: one script and one host. */
export function demoManifest(root = '/demo'): RunManifest {
  const at = (line: number) => ({ file: `${root}/agent.yaml`, line, column: 5 });
  return {
    document: `${root}/agent.yaml`,
    root,
    executes: [{ kind: 'script', what: 'scripts/lint.sh', detail: 'bash', ...at(12) }],
    hosts: [{ kind: 'LLM provider', what: 'api.openai.com', detail: 'live runs of openai:gpt-4o-mini', ...at(4) }],
    outside_files: [],
    env_vars: [{ kind: 'variable', what: 'OPENAI_API_KEY', detail: null, ...at(5) }],
    hash: 'demo-hash-1',
    inert: false,
  };
}

/** The masked form of a key the shell sends (mirrors `settings::mask_key`). */
export function maskKey(key: string): string {
  const c = Array.from(key.trim());
  const n = c.length;
  if (n < 8) return '…';
  if (n < 16) return `…${c.slice(n - 2).join('')}`;
  const dash = c.slice(0, 5).indexOf('-');
  const prefix = dash >= 0 ? c.slice(0, dash + 1).join('') : '';
  return `${prefix}…${c.slice(n - 4).join('')}`;
}

const FAKE_BUILTINS: [string, 'openai' | 'anthropic', string, string, boolean][] = [
  ['anthropic', 'anthropic', 'https://api.anthropic.com', 'ANTHROPIC_API_KEY', false],
  ['ollama', 'openai', 'http://localhost:11434/v1', 'OLLAMA_API_KEY', true],
  ['openai', 'openai', 'https://api.openai.com/v1', 'OPENAI_API_KEY', false],
];

function fakeSettings(): Settings {
  return {
    path: '/home/user/.config/switchyard/providers.yaml',
    file_error: null,
    default_model: null,
    default_model_env: null,
    keyring: { available: true, message: null },
    providers: FAKE_BUILTINS.map(([name, wire, base_url, key_var, key_optional]) => ({
      name,
      builtin: true,
      configured: false,
      wire,
      base_url,
      base_url_env: null,
      key_var,
      key_source: null,
      key_masked: null,
      key_optional,
      models: [],
      timeout_s: null,
      error: null,
    })),
  };
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * A recorded run's state after `step` steps, for `npm run dev` and the tests. The app asks the
 * engine (`trace_state_at`), which rebuilds it with the dialect's own reducers
 * (crates/launch/src/trace.rs); this plain fold only stands in for it: the recorded initial
 * state (else a string input as the first message), node updates (`messages` appended, a message
 * with a known `id` replaced, other keys overwritten), edits at the step they were made after,
 * rewinds, and the recorded final state from the last step on.
 */
function foldTrace(events: DebugEvent[], step: number): Record<string, unknown> {
  const top = events.length ? events[0].run.split('/')[0] : null;
  let state: Record<string, unknown> = {};
  let effects: { step: number; update?: unknown; key?: string; value?: unknown }[] = [];
  let at = 0;
  let finished: { state: unknown; at: number } | null = null;
  for (const ev of events) {
    if (ev.run !== top) continue;
    if (ev.event === 'run_started') {
      if (isObj(ev.state)) state = clone(ev.state);
      else if (typeof ev.input === 'string') state = { messages: [{ type: 'human', content: ev.input }] };
      else if (isObj(ev.input)) state = clone(ev.input);
    } else if (ev.event === 'node_exit') {
      effects.push({ step: ev.step, update: ev.update });
      at = Math.max(at, ev.step);
    } else if (ev.event === 'state_edited') effects.push({ step: at, key: ev.key, value: ev.value });
    else if (ev.event === 'rewound') {
      effects = effects.filter((e) => e.step <= ev.step);
      at = ev.step;
      finished = null;
    } else if (ev.event === 'run_finished') finished = { state: ev.state, at };
  }
  if (finished && step >= finished.at && isObj(finished.state)) return clone(finished.state);
  for (const e of effects) {
    if (e.step > step) continue;
    if (e.key !== undefined) state[e.key] = clone(e.value);
    else if (isObj(e.update)) {
      for (const [k, v] of Object.entries(e.update)) {
        if (k !== 'messages' || !Array.isArray(state.messages)) {
          state[k] = clone(v);
          continue;
        }
        const list = (state.messages as unknown[]).slice();
        for (const m of Array.isArray(v) ? v : [v]) {
          const at = isObj(m) && m.id != null ? list.findIndex((x) => isObj(x) && x.id === m.id) : -1;
          if (at >= 0) list[at] = clone(m);
          else list.push(clone(m));
        }
        state.messages = list;
      }
    }
  }
  return state;
}

export function createFakeBackend(initial: View | null = null, recent: string[] = []): FakeBackend {
  const listeners = new Set<(e: DocumentChanged) => void>();
  const dropListeners = new Set<(p: string[]) => void>();
  const runListeners = new Set<(b: RunBatch) => void>();
  /** Events emitted for each run (what its trace would hold). */
  const runEvents: Record<string, DebugEvent[]> = {};
  let runSeq = 0;
  const remoteOpened = (assistantId: string, runId: string | null): RemoteOpened => {
    const view = fake.remoteViews[assistantId];
    const a = fake.remoteAssistantList.find((x) => x.assistant_id === assistantId || x.graph_id === assistantId);
    if (!view || !a) throw { message: `404 no assistant ${assistantId}` };
    fake.view = view;
    const url = fake.remote.url ?? '';
    const out: RemoteOpened = { view, url, assistant_id: a.assistant_id, assistant: a.graph_id };
    if (runId) out.run = { run: runId, trace: `/fake/runs/${runId}.jsonl`, agent: a.graph_id, dialect: view.dialect === 'loki' ? 'loki' : 'sherma', llm: `on the server ${url}` };
    return out;
  };
  const failures = new Map<string, unknown>();
  const undoStack: View[] = [];
  const redoStack: View[] = [];

  const fake: FakeBackend = {
    calls: [],
    acked: {},
    bundles: {},
    bundle: null,
    view: initial ? clone(initial) : null,
    disk: null,
    recovery: null,
    exprErrors: (_kind, text) => {
      // A tiny syntax check so the inspector's inline errors can be exercised.
      let depth = 0;
      for (const ch of text) {
        if (ch === '(' || ch === '[' || ch === '{') depth++;
        if (ch === ')' || ch === ']' || ch === '}') depth--;
        if (depth < 0) return [{ message: 'unbalanced bracket', start: 0, end: text.length, severity: 'error' }];
      }
      return depth === 0 ? [] : [{ message: 'unclosed bracket', start: 0, end: text.length, severity: 'error' }];
    },
    failNext(cmd, error) {
      failures.set(cmd, error);
    },
    emit(e) {
      fake.view = clone(e.view);
      listeners.forEach((l) => l(e));
    },
    drop(paths) {
      dropListeners.forEach((l) => l(paths));
    },
    runStates: {},
    trace: null,
    traces: {},
    traceWarning: null,
    graphDiff: null,
    runDiff: null,
    suites: [],
    suiteResults: {},
    savedRuns: [],
    runInfo: {},
    lastRun: null,
    durableRuns: [],
    changedFiles: [],
    nestedViews: {},
    recordChecks: {},
    opened: [],
    remoteServer: null,
    remoteToken: null,
    remote: { url: null, connected: false, token: false },
    remoteRunList: [],
    remoteAssistantList: [],
    remoteViews: {},
    remoteStarts: [],
    remoteStatus: () => run('remote_status', undefined, () => fake.remote),
    remoteConnect: (url, token) =>
      run('remote_connect', { url, token }, () => {
        const u = url.trim().replace(/\/+$/, '');
        if (!fake.remoteServer || u !== fake.remoteServer) throw { message: `cannot reach the server at ${u}: Connection refused (is \`switchyard serve\` running there?)` };
        if (fake.remoteToken && token !== fake.remoteToken) throw { message: `the server at ${u} refused the token (401 missing or unknown token)` };
        fake.remote = { url: u, connected: true, token: !!token, note: token ? 'The token was saved in the OS keyring.' : undefined };
        return fake.remote;
      }),
    remoteDisconnect: (forgetToken) =>
      run('remote_disconnect', { forgetToken }, () => {
        fake.remote = { url: fake.remote.url, connected: false, token: false };
        return fake.remote;
      }),
    remoteRuns: () =>
      run('remote_runs', undefined, () => {
        if (!fake.remote.connected) throw { message: 'not connected to a server: Connect to server… first' };
        return fake.remoteRunList;
      }),
    remoteAssistants: () => run('remote_assistants', undefined, () => fake.remoteAssistantList),
    remoteOpenAssistant: (assistantId) =>
      run('remote_open_assistant', { assistantId }, () => remoteOpened(assistantId, null)),
    remoteOpenRun: (runId) =>
      run('remote_open_run', { runId }, () => {
        const r = fake.remoteRunList.find((x) => x.run_id === runId);
        if (!r) throw { message: `404 no run ${runId}` };
        fake.lastRun = runId;
        return remoteOpened(r.assistant_id, runId);
      }),
    remoteStart: (config) =>
      run('remote_start', { config }, () => {
        fake.remoteStarts.push(config);
        runSeq += 1;
        const id = `remote-run-${runSeq}`;
        fake.lastRun = id;
        return remoteOpened(config.assistant_id, id);
      }),
    recordCheck: (record) =>
      run('record_check', { record }, () => fake.recordChecks[record] ?? { path: `/fake/${record}`, work_tree: null, ignored: false, pattern: null, warn: false }),
    recordGitignore: (record) =>
      run('record_gitignore', { record }, () => {
        const c = fake.recordChecks[record];
        if (!c?.work_tree) throw { message: `/fake/${record} is not inside a git work tree: there is no .gitignore to add it to` };
        fake.recordChecks[record] = { ...c, ignored: true, warn: false };
        return fake.recordChecks[record];
      }),
    openExternal: (url) =>
      run('open_external', { url }, () => {
        fake.opened.push(url);
        return null;
      }),
    trusted: true,
    confirmedHash: 'demo-hash-1',
    manifest: demoManifest(),
    trustCalls: [],
    trustStatus: () => trustCall('trust_status', undefined, trustStatus),
    trustFolder: () =>
      trustCall('trust_folder', undefined, () => {
        fake.trusted = true;
        return trustStatus();
      }),
    trustForget: () =>
      trustCall('trust_forget', undefined, () => {
        fake.trusted = false;
        return trustStatus();
      }),
    trustConfirmManifest: (hash: string) =>
      trustCall('trust_confirm_manifest', { hash }, () => {
        if (hash !== fake.manifest.hash) {
          throw { code: 'manifest', message: 'the run manifest changed while it was shown (the file was edited): look at it again before confirming' };
        }
        fake.confirmedHash = hash;
        return trustStatus();
      }),
    emitRun(batch) {
      const b = clone(batch);
      if (Array.isArray(b.events)) (runEvents[b.run] ??= []).push(...clone(b.events));
      runListeners.forEach((l) => l(b));
    },
    openPath: (path) =>
      run('open_path', { path }, () => {
        if (fake.bundles[path]) throw { code: 'bundle', message: `${path} is a coyote bundle (agents/<name>/…): open it as a bundle and choose one of its agents` };
        return requireView();
      }),
    openFolderDialog: () => run('open_folder_dialog', undefined, () => null),
    bundleOpen: (path) =>
      run('bundle_open', { path }, () => {
        const b = fake.bundles[path];
        if (!b) throw { message: `${path} is not a coyote bundle` };
        fake.bundle = path;
        return clone(b);
      }),
    bundleCurrent: () => run('bundle_current', undefined, () => (fake.bundle && fake.bundles[fake.bundle] ? clone(fake.bundles[fake.bundle]) : null)),
    bundleClose: () =>
      run('bundle_close', undefined, () => {
        fake.bundle = null;
        return null;
      }),
    openDialog: () => run('open_dialog', undefined, () => fake.view),
    recentFiles: () => run('recent_files', undefined, () => recent.slice()),
    getView: () => run('get_view', undefined, () => fake.view),
    selectAgent: (name) =>
      run('select_agent', { name }, () => {
        const v = requireView();
        v.agent = name;
        return v;
      }),
    // Like the engine: select the node an op adds, renames or sets a field of.
    applyEdit: (op) =>
      run('apply_edit', { op }, () => ({
        ...edit(op),
        select: op.op === 'add_node' ? op.name : op.op === 'rename_node' ? op.to : op.op === 'set_field' ? op.node : null,
      })),
    setText: (text) =>
      run('set_text', { text }, () => {
        const v = mutate();
        v.text = text;
        return v;
      }),
    undo: () =>
      run('undo', undefined, () => {
        const prev = undoStack.pop();
        if (prev && fake.view) {
          redoStack.push(clone(fake.view));
          fake.view = prev;
        }
        return finish(requireView());
      }),
    redo: () =>
      run('redo', undefined, () => {
        const next = redoStack.pop();
        if (next && fake.view) {
          undoStack.push(clone(fake.view));
          fake.view = next;
        }
        return finish(requireView());
      }),
    save: (force) =>
      run('save', { force }, () => {
        const v = requireView();
        v.dirty = false;
        return v;
      }),
    reload: () => run('reload', undefined, () => requireView()),
    keepMine: () => run('keep_mine', undefined, () => requireView()),
    diskText: () => run('disk_text', undefined, () => fake.disk),
    setPositions: (positions) =>
      run('set_positions', { positions }, () => {
        if (fake.view) {
          for (const n of fake.view.nodes) {
            const p = positions[n.id];
            if (p) {
              n.x = p.x;
              n.y = p.y;
            }
          }
        }
        return null;
      }),
    checkExpr: (kind, text) => run('check_expr', { kind, text }, () => fake.exprErrors(kind, text)),
    exportDiagram: (format, data) => run('export_diagram', { format, data }, () => `/tmp/diagram.${format}`),
    relayout: () => run('relayout', undefined, () => requireView()),
    diffDocument: (rev, file) =>
      run('diff_document', { rev, file }, () => {
        if (!fake.graphDiff) throw { message: `git show ${rev ?? 'HEAD'}: the file is not committed` };
        return clone(fake.graphDiff);
      }),
    traceDiff: (a, aEvents, b, bEvents) =>
      run('trace_diff', { a, aEvents, b, bEvents }, () => {
        if (!fake.runDiff) throw { message: `${a}: no such trace` };
        return clone(fake.runDiff);
      }),
    suiteList: () => run('suite_list', undefined, () => clone(fake.suites)),
    suiteRun: (file, caseName) =>
      run('suite_run', { file, case: caseName }, () => {
        const r = fake.suiteResults[file];
        if (!r) throw { message: `no suite ${file}` };
        const out = clone(r);
        if (caseName !== null) out.cases = out.cases.filter((c) => c.name === caseName);
        return out;
      }),
    suiteSaveRun: (name, trace) =>
      run('suite_save_run', { name, trace }, () => {
        const agent = fake.view?.path;
        if (!agent) throw { message: 'no document is open' };
        if (!name.trim()) throw { message: 'give the case a name' };
        let suite = fake.suites.find((x) => x.agent === agent);
        const created = !suite;
        if (!suite) {
          suite = { file: agent.replace(/(\.[^./]*)?$/, '.tests.yaml'), agent, cases: [], diagnostics: [] };
          fake.suites.push(suite);
        }
        if (suite.cases.some((c) => c.name === name)) throw { message: `${suite.file} has a case named \`${name}\` already; choose another name` };
        suite.cases.push({ name, line: 3 + 9 * suite.cases.length, live: false });
        const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'case';
        const saved: SavedRun = { file: suite.file, case: name, cassette: `${suite.file.replace(/[^/]*$/, '')}cassettes/${slug}.json`, created };
        fake.savedRuns.push({ ...saved, trace });
        return clone(saved);
      }),
    recoveryOffer: () => run('recovery_offer', undefined, () => fake.recovery),
    recoveryRestore: () =>
      run('recovery_restore', undefined, () => {
        const r = fake.recovery;
        if (!r) throw { message: 'there are no recovered changes to restore' };
        fake.recovery = null;
        const v = mutate();
        v.text = r.text;
        return v;
      }),
    recoveryDiscard: () =>
      run('recovery_discard', undefined, () => {
        fake.recovery = null;
        return null;
      }),
    async onDocumentChanged(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    async onFileDrop(cb) {
      dropListeners.add(cb);
      return () => dropListeners.delete(cb);
    },
    runStart: (config) =>
      run('run_start', { config }, () => {
        gate();
        runSeq += 1;
        const info: RunInfo = {
          run: `fake-run-${runSeq}`,
          trace: `/fake/runs/fake-run-${runSeq}.jsonl`,
          agent: config.agent ?? fake.view?.agent ?? 'agent',
          dialect: fake.view?.dialect === 'loki' ? 'loki' : 'sherma',
          llm: 'scripted: replies.yaml',
          ...fake.runInfo,
        };
        fake.lastRun = info.run;
        return info;
      }),
    runControl: (action) => run('run_control', { action }, () => null),
    runEventsAck: (run, events) => {
      // Kept apart from `calls`: one comes after every fold.
      fake.acked[run] = (fake.acked[run] ?? 0) + events;
    },
    runsList: () => run('runs_list', undefined, () => ({ db: '/fake/runs.sqlite', runs: fake.durableRuns })),
    runsDelete: (ids) =>
      run('runs_delete', { ids }, () => {
        const missing = ids.filter((id) => !fake.durableRuns.some((r) => r.id === id));
        if (missing.length) throw { message: `no such run in /fake/runs.sqlite: ${missing.join(', ')}` };
        fake.durableRuns = fake.durableRuns.filter((r) => !ids.includes(r.id));
        return null;
      }),
    runResume: (id, force, breakpoints, breakOnError) =>
      run('run_resume', { id, force, breakpoints, breakOnError }, () => {
        const r = fake.durableRuns.find((x) => x.id === id);
        if (!r) throw { message: `no run \`${id}\` in the run store /fake/runs.sqlite` };
        gate();
        if (!['ready', 'paused', 'interrupted'].includes(r.status)) {
          throw { message: `run ${id} has ended (${r.status}); only ready, paused or interrupted runs can be resumed` };
        }
        if (!force && fake.changedFiles.includes(r.file)) {
          throw { message: `run ${id}: ${r.file} changed since the run started; resuming could put the saved state into a different graph. Resume anyway with --force (the app asks), or start a new run` };
        }
        const info: RunInfo = { run: id, trace: `/fake/runs/${id}.jsonl`, agent: r.agent, dialect: r.dialect === 'loki' ? 'loki' : 'sherma', llm: 'scripted', durable: '/fake/runs.sqlite' };
        fake.lastRun = id;
        return info;
      }),
    nestedView: (file, agent) =>
      run('nested_view', { file, agent }, () => {
        const v = fake.nestedViews[`${file}#${agent ?? ''}`] ?? fake.nestedViews[file];
        if (!v) throw { message: `cannot read ${file}: no such file or directory` };
        return v;
      }),
    runBreakpoints: (breakpoints, breakOnError) => run('run_breakpoints', { breakpoints, breakOnError }, () => null),
    runAnswer: (id, value) => run('run_answer', { id, value }, () => null),
    runEditState: (key, value) => run('run_edit_state', { key, value }, () => null),
    runStateAt: (step) =>
      run('run_state_at', { step }, () => {
        const st = fake.runStates[step];
        if (!st) throw { message: `no checkpoint after step ${step}` };
        return st;
      }),
    runRewind: (step) => run('run_rewind', { step }, () => null),
    openTrace: (path) => run('open_trace', { path }, () => fake.trace),
    traceStateAt: (path, step, events) =>
      run('trace_state_at', { path, step, events }, () => {
        const own = /^\/fake\/runs\/(.+)\.jsonl$/.exec(path);
        const all = fake.traces[path] ?? (fake.trace?.path === path ? fake.trace.events : null) ?? (own ? runEvents[own[1]] : null);
        if (!all) throw { message: `cannot read the trace ${path}: No such file or directory (os error 2)` };
        const evs = events == null ? all : all.slice(0, events);
        // The fake folds plain objects; the engine's states are JSON objects.
        type State = TraceStateAt['state'];
        return { state: foldTrace(evs, step) as State, prev: step > 0 ? (foldTrace(evs, step - 1) as State) : null, warning: fake.traceWarning };
      }),
    async onRunEvents(cb) {
      runListeners.add(cb);
      return () => runListeners.delete(cb);
    },
    settings: fakeSettings(),
    keys: {},
    keyringAvailable: true,
    probe: { status: 'reachable', message: 'http://localhost/v1/models answered 200', models: [] },
    models: { models: [], default_model: null, choices: [] },
    settingsGet: () => run('settings_get', undefined, () => refreshSettings()),
    settingsSave: (change) => run('settings_save', { change }, () => saveSettings(change)),
    settingsTestProvider: (provider) => run('settings_test_provider', { provider }, () => fake.probe),
    llmModels: () => run('llm_models', undefined, () => fake.models),
  };

  function refreshSettings(): Settings {
    const s = fake.settings;
    s.keyring = fake.keyringAvailable ? { available: true, message: null } : { available: false, message: 'no secret service' };
    for (const p of s.providers) {
      const k = fake.keys[p.name];
      p.key_source = k ? k.source : null;
      p.key_masked = k ? maskKey(k.key) : null;
    }
    return s;
  }

  function saveSettings(change: SettingsChange): SaveResult {
    const s = fake.settings;
    let keyStored: KeySource | null = null;
    let message: string | null = null;
    const p = change.provider;
    if (p) {
      if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(p.name)) throw { message: `provider name \`${p.name}\`: use letters, digits, \`-\`, \`_\` or \`.\`` };
      let info: ProviderInfo | undefined = s.providers.find((x) => x.name === p.name);
      if (!info) {
        if (!p.base_url) throw { message: `provider \`${p.name}\` needs a base URL (it is not built in)` };
        info = { name: p.name, builtin: false, configured: true, wire: p.wire, base_url: null, base_url_env: null, key_var: `${p.name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY`, key_source: null, key_masked: null, key_optional: true, models: [], timeout_s: null, error: null };
        s.providers.push(info);
        s.providers.sort((a, b) => a.name.localeCompare(b.name));
      }
      info.configured = true;
      info.wire = p.wire;
      if (p.base_url) info.base_url = p.base_url.replace(/\/+$/, '');
      info.models = p.models.slice();
      info.timeout_s = p.timeout_s;
      if (p.api_key) {
        keyStored = fake.keyringAvailable ? 'keyring' : 'file';
        fake.keys[p.name] = { key: p.api_key, source: keyStored };
        message = fake.keyringAvailable
          ? `The key of \`${p.name}\` was saved in the OS keyring.`
          : `The OS keyring is not available (no secret service); the key of \`${p.name}\` was saved in ${s.path}, readable by you only.`;
      } else if (p.clear_key) delete fake.keys[p.name];
    }
    for (const name of change.remove ?? []) {
      delete fake.keys[name];
      const i = s.providers.findIndex((x) => x.name === name);
      if (i >= 0) {
        if (s.providers[i].builtin) {
          const b = FAKE_BUILTINS.find((x) => x[0] === name)!;
          Object.assign(s.providers[i], { configured: false, wire: b[1], base_url: b[2], models: [], timeout_s: null });
        } else s.providers.splice(i, 1);
      }
    }
    if (change.default_model !== undefined) s.default_model = change.default_model.trim() || null;
    return { settings: refreshSettings(), key_stored: keyStored, message };
  }

  function requireView(): View {
    if (!fake.view) throw { message: 'no document is open' };
    return fake.view;
  }

  function finish(v: View): View {
    v.can_undo = undoStack.length > 0;
    v.can_redo = redoStack.length > 0;
    return v;
  }

  /** Snapshot for undo, then return the view to change. */
  function mutate(): View {
    const v = requireView();
    undoStack.push(clone(v));
    redoStack.length = 0;
    v.dirty = true;
    v.revision += 1;
    return finish(v);
  }

  function edit(op: EditOp): View {
    const v = mutate();
    switch (op.op) {
      case 'add_node': {
        if (v.nodes.some((n) => n.id === op.name)) throw { message: `a node named \`${op.name}\` already exists` };
        const maxY = v.nodes.reduce((m, n) => Math.max(m, n.y), 0);
        v.nodes.push(viewNode({ id: op.name, kind: op.kind, y: maxY + 100, data: { name: op.name, type: op.kind } }));
        break;
      }
      case 'delete_node':
        v.nodes = v.nodes.filter((n) => n.id !== op.name);
        v.edges = v.edges.filter((e) => e.from !== op.name && e.to !== op.name);
        break;
      case 'rename_node':
        for (const n of v.nodes) if (n.id === op.from) n.id = op.to;
        for (const e of v.edges) {
          if (e.from === op.from) e.from = op.to;
          if (e.to === op.from) e.to = op.to;
        }
        break;
      case 'add_edge':
        v.edges.push(viewEdge({ id: `e${v.revision}_${v.edges.length}`, from: op.from, to: op.to, kind: 'static', order: v.edges.length }));
        break;
      case 'remove_edge':
        v.edges = v.edges.filter((e) => !(e.from === op.from && e.to === op.to && e.kind === op.kind && (op.index === undefined || e.index === op.index)));
        break;
      case 'set_field': {
        const n = v.nodes.find((x) => x.id === op.node);
        if (n) {
          type Obj = { [key: string]: JsonValue };
          const data = (n.data && typeof n.data === 'object' ? n.data : {}) as Obj;
          let cur: Obj = data;
          op.path.slice(0, -1).forEach((k) => {
            const key = String(k);
            if (typeof cur[key] !== 'object' || cur[key] === null) cur[key] = {};
            cur = cur[key] as Obj;
          });
          const last = String(op.path[op.path.length - 1]);
          if (op.value === null) delete cur[last];
          else cur[last] = op.value;
          n.data = data;
        }
        break;
      }
      default:
        break; // branch ops and doc fields are only recorded
    }
    return v;
  }

  /** The shell's trust gate (src-tauri/src/trust.rs `require_trust`). */
  function gate() {
    const m = fake.manifest;
    if (!fake.trusted) {
      throw { code: 'untrusted', message: `Running is blocked: the folder ${m.root} is not trusted (restricted mode).` };
    }
    if (fake.confirmedHash !== m.hash) {
      throw { code: 'manifest', message: `Confirm the run manifest first: what running ${m.document} would execute and contact has not been confirmed yet.` };
    }
  }

  function trustStatus(): TrustStatus {
    const m = fake.manifest;
    const path = fake.view?.path ?? m.document;
    return {
      path,
      root: m.root,
      trusted: fake.trusted,
      trusted_by: fake.trusted ? m.root : null,
      manifest: clone(m),
      confirmed: fake.confirmedHash === m.hash,
      error: null,
    };
  }

  async function trustCall(cmd: string, args: unknown, body: () => TrustStatus): Promise<TrustStatus> {
    fake.trustCalls.push(args === undefined ? { cmd } : { cmd, args: clone(args) });
    await Promise.resolve();
    if (failures.has(cmd)) {
      const err = failures.get(cmd);
      failures.delete(cmd);
      throw err;
    }
    if (!fake.view) throw { message: 'no document is open' };
    return body();
  }

  async function run<T>(cmd: string, args: unknown, body: () => T): Promise<T> {
    fake.calls.push(args === undefined ? { cmd } : { cmd, args: clone(args) });
    await Promise.resolve();
    if (failures.has(cmd)) {
      const err = failures.get(cmd);
      failures.delete(cmd);
      throw err;
    }
    const out = body();
    return (out && typeof out === 'object' ? clone(out) : out) as T;
  }

  return fake;
}
