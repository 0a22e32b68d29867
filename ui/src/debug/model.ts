// View models of a run, folded from the engine's debugger events (src/run/events.rs). Pure
// functions, no React: the debugger store (./store.ts) keeps a `RunModel` and folds every batch of
// `run-events` into it; the canvas, timeline, state panel and call inspector read from it.
//
// Folding is incremental and copy-on-write: `foldEvents(model, events)` returns a new model that
// shares everything the batch did not touch (rows, calls, overlay entries), and copies each touched
// container once per batch, so a batch costs O(its events) plus one shallow copy of the step list.
import type {
  DebugEvent,
  FinishStatus,
  HookOutcome,
  LlmErrorKind,
  Pending,
  PauseReason,
  RouteReason,
  RunStatusInfo,
  TokenUsage,
  ToolCallInfo,
} from './types';

export type StepStatus = 'running' | 'done' | 'error' | 'interrupted';

/** An edge taken during a step, with the label shown on the canvas (`routeLabel`). */
export interface RouteTaken {
  from: string;
  to: string;
  reason: RouteReason;
  label: string;
}

/** One LLM or tool call made during a step (nested runs included, see `run`). */
export interface CallRecord {
  kind: 'llm' | 'tool';
  node: string;
  /** The top-level step the call belongs to. */
  step: number;
  /** Tool calls: the call id; LLM calls: a generated id unique within the model. */
  id: string;
  /** The run that made the call: the top-level run id, or `<run>/<node>` for a nested run. */
  run: string;
  request?: { messages: unknown; tools: unknown };
  response?: { content: string | null; tool_calls: ToolCallInfo[]; usage: TokenUsage | null };
  call?: ToolCallInfo;
  result?: unknown;
  error?: string | null;
  /** LLM calls that failed: the failure's kind (`error` holds the message). */
  errorKind?: LlmErrorKind | null;
  /** LLM calls: the text streamed so far (`llm_delta`), until the response replaces it. */
  stream?: string;
  /** LLM calls: the model asked for (`provider:name`), then the one that answered. */
  model?: string | null;
  /** LLM calls: the latency the engine measured (`duration_ms`). */
  durationMs?: number | null;
  /** LLM calls: what the call cost, when the model's price is known. */
  costUsd?: number | null;
  startMs: number;
  endMs: number | null;
}

/** The first request of a replay that differs from the recording (`replay_diverged`). */
export interface Divergence {
  node: string;
  /** Which call of the node (1-based). */
  call: number;
  /** Where the requests differ (`messages[1].content`), or why there is no recorded call. */
  path: string;
  recorded: unknown;
  now: unknown;
  /** The run that made the call (`<run>/<node>` for a nested run). */
  run: string;
  /** The top-level step it happened in (null: before any step). */
  step: number | null;
}

/** A hook executor's run at a hook point during a step (`hook` events). */
export interface HookRecord {
  point: string;
  executor: string;
  outcome: HookOutcome;
  /** The fields it changed, or why it failed. */
  detail: string | null;
  /** The node it ran for; null for run-level points. */
  node: string | null;
  durationMs: number;
}

export interface StateEdit {
  key: string;
  value: unknown;
}

/** One row of the timeline: a top-level step (a Loki super-step may run several nodes). */
export interface StepRow {
  step: number;
  nodes: string[];
  /** The kind of each node of `nodes` (same order). */
  kinds: string[];
  status: StepStatus;
  startMs: number;
  durationMs: number | null;
  /** Tokens of the LLM calls of the step (nested runs included); null when it made none. */
  tokens: TokenUsage | null;
  /** The `node_exit` updates of the step merged (`messages` lists concatenated). */
  update: Record<string, unknown> | null;
  routes: RouteTaken[];
  calls: CallRecord[];
  /** How many events of nested runs (sub-agents, Loki agent nodes) happened in the step. */
  nested: number;
  /** State edits made while paused after this step. */
  edits: StateEdit[];
  /** Nodes of the step that have exited. */
  exited: string[];
  /** Each node's own update (`node_exit.update`), by node. */
  updates: Record<string, unknown>;
  /** The failure of the step, if it failed. */
  error: string | null;
  /** LLM calls of the step that failed (`llm_error`; retried or not). */
  llmErrors: number;
  /** Hook executors that ran during the step, in order (sherma `hooks:`). */
  hooks: HookRecord[];
}

export interface EdgeMark {
  from: string;
  to: string;
  /** The reason of the latest time the edge was taken (`routeLabel`; "" for a static edge). */
  label: string;
  /** Steps in which the edge was taken. */
  steps: number[];
  /** Taken in the latest step that routed anywhere (animate it). */
  last: boolean;
}

export interface CanvasOverlay {
  /** Nodes entered and not exited; while paused/interrupted, the nodes due next (`applyStatus`). */
  current: string[];
  /** Step numbers in which each node ran. */
  visited: Record<string, number[]>;
  /** Edges taken, keyed `"from->to"` (see `edgeKey`). */
  edges: Record<string, EdgeMark>;
  /** The latest error message of each node that failed. */
  errors: Record<string, string>;
}

export interface RunError {
  node: string | null;
  message: string;
  /** The step the error belongs to (null: before any step). */
  step: number | null;
}

export interface Finished {
  status: FinishStatus;
  output: unknown;
  state: unknown;
}

/**
 * An append-only event list shared between model versions: a model sees `items[0..length)`.
 * Appending pushes in place when no newer model appended already, so keeping the log is O(1)
 * per event and older models (history, previous versions) stay valid.
 */
export interface EventLog {
  items: DebugEvent[];
  length: number;
}

/**
 * Where the run is paused inside a nested run (a sherma sub-agent, a Loki `agent` node): from its
 * `nested_paused` until its `nested_resumed`, that run's `run_finished`, or a top-level status
 * other than `running` (the driver's status stays `running` while the pause lasts).
 */
export interface NestedPause {
  /** The nested run's id (`<top>/<node>[/<node2>…]`). */
  run: string;
  /** The top-level node the nested run runs inside. */
  node: string;
  /** The nested agent's name. */
  agent: string;
  /** The nested agent's file (absolute), null when it has none. */
  file: string | null;
  /** The nested run's nodes about to run. */
  due: string[];
  /** Steps the nested run has done. */
  step: number;
  /** The nested run's whole state (`{}` when the event carried no object). */
  state: Record<string, unknown>;
  /** The state at the pause before this one in the same nested run (an earlier step), for the
   *  diff; null for its first pause. */
  prev: Record<string, unknown> | null;
  /** The step `prev` is after. */
  prevStep: number | null;
  /** 1 for a child of the top-level run, 2 for a grandchild… */
  depth: number;
  reason: PauseReason;
}

/** A nested run in progress (from its `run_started` to its `run_finished`). */
export interface NestedRunInfo {
  /** Its agent (`run_started.agent`), when seen. */
  agent: string | null;
  /** The nested steps in which each of its nodes ran (its `node_enter`s). */
  visited: Record<string, number[]>;
}

export interface RunModel {
  /** The top-level run id (null until the first event). */
  run: string | null;
  agent: string | null;
  input: unknown;
  steps: StepRow[];
  overlay: CanvasOverlay;
  /** The question waiting for an answer (latest `interrupt`), cleared when its node exits. */
  pending: Pending | null;
  finished: Finished | null;
  errors: RunError[];
  /** Events folded so far (nested runs included). */
  eventCount: number;
  /** Every state edit, with the step it was made after (0 = before the first step). */
  edits: (StateEdit & { step: number })[];
  /** Why the run paused last (cleared when a node starts). */
  paused: PauseReason | null;
  /** Where a replay first sent a request that differs from the recording. */
  diverged: Divergence | null;
  /** The pause inside a nested run, while it lasts. */
  nested: NestedPause | null;
  /** Nested runs in progress, by run id (an entry goes at the run's `run_finished`, so this
   *  holds at most the runs nested in the current step). */
  nestedRuns: Record<string, NestedRunInfo>;
  /** The top-level run's events that states are rebuilt from (`keepInLog`; for
   *  `reconstructState` when no live run can be asked). */
  log: EventLog;
  /** Internal bookkeeping of the fold (in-flight calls, last routed step). Do not render. */
  internal: FoldInternal;
}

export interface FoldInternal {
  /** In-flight LLM requests by `run \0 node` → [step, call id]. */
  llm: Record<string, [number, string]>;
  /** In-flight tool calls by `run \0 call id` → step. */
  tool: Record<string, number>;
  /** The step of the latest `route` (edges with `last` belong to it). */
  lastRouteStep: number;
  /** Keys of the edges marked `last`. */
  lastEdges: string[];
  /** The latest step a top-level node entered. */
  curStep: number;
  /** Counter for LLM call ids. */
  seq: number;
  /** Hooks that ran before the next step's first node (`before_graph_invoke`). */
  hooksAhead?: HookRecord[];
  /** A `node_enter` telling the dialect is in the log (later ones are not kept). */
  dialectLogged?: boolean;
  /** The latest nested pause, kept after it ended: the next pause of the same nested run
   *  diffs its state against it. */
  lastNested?: NestedPause | null;
}

export function emptyOverlay(): CanvasOverlay {
  return { current: [], visited: {}, edges: {}, errors: {} };
}

export function emptyModel(): RunModel {
  return {
    run: null,
    agent: null,
    input: null,
    steps: [],
    overlay: emptyOverlay(),
    pending: null,
    finished: null,
    errors: [],
    eventCount: 0,
    edits: [],
    paused: null,
    diverged: null,
    nested: null,
    nestedRuns: {},
    log: { items: [], length: 0 },
    internal: { llm: {}, tool: {}, lastRouteStep: 0, lastEdges: [], curStep: 0, seq: 0 },
  };
}

export function edgeKey(from: string, to: string): string {
  return `${from}->${to}`;
}

/** The label of a route reason on the canvas: "" for an unconditional edge. */
export function routeLabel(reason: RouteReason): string {
  switch (reason.type) {
    case 'static':
      return '';
    case 'branch':
      return `branch ${reason.index + 1}: ${reason.condition}`;
    case 'default':
      return 'default';
    case '_next':
      return '_next';
    case 'fallback':
      return 'fallback';
    case 'on_other':
      return 'on_other';
    case 'route_option':
      return `option: ${reason.option}`;
    default:
      return String((reason as { type?: unknown }).type ?? '');
  }
}

/** The events of the top-level run kept by the model (oldest first). */
export function modelEvents(model: RunModel): DebugEvent[] {
  const { items, length } = model.log;
  return items.length === length ? items.slice() : items.slice(0, length);
}

/** The row of `step`, or undefined. */
export function rowAt(model: RunModel, step: number): StepRow | undefined {
  const i = findRow(model.steps, step);
  return i >= 0 ? model.steps[i] : undefined;
}

/** The latest step number (0 before the first step). */
export function lastStep(model: RunModel): number {
  const n = model.steps.length;
  return n ? model.steps[n - 1].step : 0;
}

/** The latest step whose row completed (0 if none). */
export function lastDoneStep(model: RunModel): number {
  for (let i = model.steps.length - 1; i >= 0; i--) if (model.steps[i].status === 'done') return model.steps[i].step;
  return 0;
}

/** Normalise the engine's `{input_tokens, output_tokens}` (or `{input, output}`) usage. */
export function normUsage(u: unknown): TokenUsage | null {
  if (!u || typeof u !== 'object') return null;
  const o = u as Record<string, unknown>;
  const input = Number(o.input_tokens ?? o.input ?? 0) || 0;
  const output = Number(o.output_tokens ?? o.output ?? 0) || 0;
  return { input, output };
}

// ------------------------------------------------------------------------------------------------
// The fold

/** The index of the row of `step` in `steps` (ordered by step), or -1. */
export function findRow(steps: StepRow[], step: number): number {
  const n = steps.length;
  if (!n) return -1;
  if (steps[n - 1].step === step) return n - 1;
  if (steps[step - 1]?.step === step) return step - 1;
  let lo = 0;
  let hi = n - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const s = steps[mid].step;
    if (s === step) return mid;
    if (s < step) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function asList(v: unknown): unknown[] {
  return Array.isArray(v) ? v : v == null ? [] : [v];
}

/** A batch's mutable copy of a model: every container is copied once before its first change. */
class Draft {
  m: RunModel;
  private fresh = new WeakSet<object>();
  private stepsCopied = false;

  constructor(base: RunModel) {
    this.m = { ...base, internal: { ...base.internal } };
  }

  own<T extends object>(v: T): T {
    this.fresh.add(v);
    return v;
  }
  isOwn(v: object): boolean {
    return this.fresh.has(v);
  }

  /** Replace the step list with a new array owned by this draft. */
  setSteps(steps: StepRow[]): void {
    this.m.steps = steps;
    this.stepsCopied = true;
  }

  steps(): StepRow[] {
    if (!this.stepsCopied) {
      this.m.steps = this.m.steps.slice();
      this.stepsCopied = true;
    }
    return this.m.steps;
  }

  /** A writable copy of row `i`. */
  row(i: number): StepRow {
    const steps = this.steps();
    const r = steps[i];
    if (this.isOwn(r)) return r;
    const c = this.own({
      ...r,
      nodes: r.nodes.slice(),
      kinds: r.kinds.slice(),
      routes: r.routes.slice(),
      calls: r.calls.slice(),
      edits: r.edits.slice(),
      exited: r.exited.slice(),
      updates: { ...r.updates },
      update: r.update ? { ...r.update } : null,
      tokens: r.tokens ? { ...r.tokens } : null,
    });
    steps[i] = c;
    return c;
  }

  /** The index of the row of `step`, created (in order) when missing. */
  rowIndex(step: number, ts: number): number {
    const steps = this.steps();
    const i = findRow(steps, step);
    if (i >= 0) return i;
    const row = this.own(newRow(step, ts));
    let at = steps.length;
    while (at > 0 && steps[at - 1].step > step) at--;
    steps.splice(at, 0, row);
    return at;
  }

  overlay(): CanvasOverlay {
    if (!this.isOwn(this.m.overlay)) this.m.overlay = this.own({ ...this.m.overlay });
    return this.m.overlay;
  }
  current(): string[] {
    const o = this.overlay();
    if (!this.isOwn(o.current)) o.current = this.own(o.current.slice());
    return o.current;
  }
  visited(): Record<string, number[]> {
    const o = this.overlay();
    if (!this.isOwn(o.visited)) o.visited = this.own({ ...o.visited });
    return o.visited;
  }
  edges(): Record<string, EdgeMark> {
    const o = this.overlay();
    if (!this.isOwn(o.edges)) o.edges = this.own({ ...o.edges });
    return o.edges;
  }
  edge(key: string, from: string, to: string): EdgeMark {
    const edges = this.edges();
    const e = edges[key];
    if (e && this.isOwn(e)) return e;
    const c = this.own(e ? { ...e, steps: e.steps.slice() } : { from, to, label: '', steps: [], last: false });
    edges[key] = c;
    return c;
  }
  errorsMap(): Record<string, string> {
    const o = this.overlay();
    if (!this.isOwn(o.errors)) o.errors = this.own({ ...o.errors });
    return o.errors;
  }
  errors(): RunError[] {
    if (!this.isOwn(this.m.errors)) this.m.errors = this.own(this.m.errors.slice());
    return this.m.errors;
  }
  edits(): (StateEdit & { step: number })[] {
    if (!this.isOwn(this.m.edits)) this.m.edits = this.own(this.m.edits.slice());
    return this.m.edits;
  }
  nestedRuns(): Record<string, NestedRunInfo> {
    if (!this.isOwn(this.m.nestedRuns)) this.m.nestedRuns = this.own({ ...this.m.nestedRuns });
    return this.m.nestedRuns;
  }
  /** A writable copy of the nested run `run`'s entry (created when missing). */
  nestedRun(run: string): NestedRunInfo {
    const runs = this.nestedRuns();
    const r = runs[run];
    if (r && this.isOwn(r)) return r;
    const c = this.own(r ? { ...r, visited: this.own({ ...r.visited }) } : { agent: null, visited: this.own({}) });
    runs[run] = c;
    return c;
  }
  llmOpen(): Record<string, [number, string]> {
    const i = this.m.internal;
    if (!this.isOwn(i.llm)) i.llm = this.own({ ...i.llm });
    return i.llm;
  }
  toolOpen(): Record<string, number> {
    const i = this.m.internal;
    if (!this.isOwn(i.tool)) i.tool = this.own({ ...i.tool });
    return i.tool;
  }
  log(ev: DebugEvent): void {
    let log = this.m.log;
    if (!this.isOwn(log)) {
      // Share the array while nobody appended past our length; copy otherwise.
      const items = log.items.length === log.length ? log.items : log.items.slice(0, log.length);
      log = this.own({ items, length: log.length });
      this.m.log = log;
    }
    if (log.items.length !== log.length) log.items = log.items.slice(0, log.length);
    log.items.push(ev);
    log.length++;
  }
}

function newRow(step: number, ts: number): StepRow {
  return {
    step,
    nodes: [],
    kinds: [],
    status: 'running',
    startMs: ts,
    durationMs: null,
    tokens: null,
    update: null,
    routes: [],
    calls: [],
    nested: 0,
    edits: [],
    exited: [],
    updates: {},
    error: null,
    llmErrors: 0,
    hooks: [],
  };
}

function removeFrom(list: string[], v: string): void {
  const i = list.indexOf(v);
  if (i >= 0) list.splice(i, 1);
}

/** The row (index) an event of node `node` belongs to: the latest unfinished row that has the
 *  node, else the latest row with it, else the last row; -1 when there are no rows. */
function rowOfNode(steps: StepRow[], node: string | null | undefined): number {
  const n = steps.length;
  if (!n) return -1;
  if (node != null) {
    // Look back a bounded distance: events belong to the current step or the one before.
    const stop = Math.max(0, n - 64);
    let fallback = -1;
    for (let i = n - 1; i >= stop; i--) {
      const r = steps[i];
      if (r.nodes.includes(node)) {
        if (r.status === 'running' || r.status === 'interrupted') return i;
        if (fallback < 0) fallback = i;
      }
    }
    if (fallback >= 0) return fallback;
  }
  return n - 1;
}

/** The top-level node a nested run id (`<run>/<node>/...`) runs inside. */
function nestedNode(top: string, run: string): string {
  const rest = run.slice(top.length + 1);
  const slash = rest.indexOf('/');
  return slash < 0 ? rest : rest.slice(0, slash);
}

function mergeUpdate(into: Record<string, unknown>, update: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(update)) {
    if (k === 'messages' && k in into) into[k] = [...asList(into[k]), ...asList(v)];
    else into[k] = v;
  }
}

function addTokens(row: StepRow, u: TokenUsage | null): void {
  if (!u) return;
  row.tokens = row.tokens ? { input: row.tokens.input + u.input, output: row.tokens.output + u.output } : { ...u };
}

/**
 * Folds events into a model, batch after batch, copying each shared container at most once: the
 * store folds a frame's worth of events in chunks (checking the clock between them) through one
 * folder, so a 100,000-step run copies its step list once per frame, not once per chunk.
 * `result()` hands the model over; the folder must not be used after that.
 */
export class ModelFolder {
  private draft: Draft | null = null;
  constructor(private readonly base: RunModel) {}

  add(events: DebugEvent[]): void {
    if (!events.length) return;
    if (!this.draft) this.draft = new Draft(this.base);
    const d = this.draft;
    const m = d.m;
    for (const ev of events) {
      m.eventCount++;
      // The top-level run: the first event's run id up to any nested part (`<run>/<node>`).
      if (m.run == null) m.run = String(ev.run ?? '').split('/')[0];
      if (ev.run === m.run) foldTop(d, ev);
      else if (typeof ev.run === 'string' && ev.run.startsWith(`${m.run}/`)) foldNested(d, ev);
      // Events of other runs are not ours: counted, otherwise ignored.
    }
  }

  /**
   * The top-level status that came with the events added so far: one other than `running` ends
   * a nested pause (the run is paused, interrupted or finished at the top level now).
   */
  status(status: RunStatusInfo | null): void {
    if (!status || status.state === 'running' || !(this.draft?.m ?? this.base).nested) return;
    if (!this.draft) this.draft = new Draft(this.base);
    this.draft.m.nested = null;
  }

  /** The nested pause as of the events added so far. */
  get nested(): NestedPause | null {
    return (this.draft?.m ?? this.base).nested;
  }

  result(): RunModel {
    return this.draft ? this.draft.m : this.base;
  }
}

/** `model` without its nested pause when `status` is a top-level status other than `running`. */
export function endNestedPause(model: RunModel, status: RunStatusInfo | null): RunModel {
  if (!status || status.state === 'running' || !model.nested) return model;
  return { ...model, nested: null };
}

const nestedDiffs = new WeakMap<NestedPause, DiffEntry[]>();

/** What changed in the nested run's state since its pause before (`prev`); computed once per
 *  pause. */
export function nestedDiff(p: NestedPause): DiffEntry[] {
  let d = nestedDiffs.get(p);
  if (!d) {
    d = p.prev ? diffState(p.prev, p.state) : [];
    nestedDiffs.set(p, d);
  }
  return d;
}

/** Fold `events` into `model`; returns a new model (the input is not changed). */
export function foldEvents(model: RunModel, events: DebugEvent[]): RunModel {
  const f = new ModelFolder(model);
  f.add(events);
  return f.result();
}

function foldNested(d: Draft, ev: DebugEvent): void {
  const m = d.m;
  foldNestedRun(d, ev);
  const top = nestedNode(m.run ?? '', ev.run);
  if (ev.event === 'replay_diverged') diverged(d, ev, m.steps.length ? m.steps[rowOfNode(m.steps, top)].step : null);
  if (!m.steps.length) return;
  const i = rowOfNode(m.steps, top);
  const row = d.row(i);
  row.nested++;
  foldCall(d, row, ev);
}

/** `run` is `within` or a run nested in it. */
function inRun(run: string, within: string): boolean {
  return run === within || run.startsWith(`${within}/`);
}

/** What a nested run's events tell of the run itself: its agent and visited nodes, its pauses. */
function foldNestedRun(d: Draft, ev: DebugEvent): void {
  const m = d.m;
  switch (ev.event) {
    case 'run_started': {
      // A new invocation: the marks of an earlier one under the same id (and of runs nested in
      // it) go.
      const runs = d.nestedRuns();
      for (const k of Object.keys(runs)) if (k.startsWith(`${ev.run}/`)) delete runs[k];
      runs[ev.run] = d.own({ agent: typeof ev.agent === 'string' ? ev.agent : null, visited: d.own({}) });
      const last = m.internal.lastNested;
      if (last && inRun(last.run, ev.run)) m.internal.lastNested = null;
      break;
    }
    case 'node_enter': {
      const info = d.nestedRun(ev.run);
      const visited = info.visited;
      const steps = visited[ev.node];
      if (!steps) visited[ev.node] = d.own([ev.step]);
      else if (steps[steps.length - 1] !== ev.step) {
        if (d.isOwn(steps)) steps.push(ev.step);
        else visited[ev.node] = d.own([...steps, ev.step]);
      }
      break;
    }
    case 'nested_paused': {
      const step = typeof ev.step === 'number' ? ev.step : Number(ev.step) || 0;
      const last = m.internal.lastNested;
      let prev: Record<string, unknown> | null = null;
      let prevStep: number | null = null;
      if (last && last.run === ev.run) {
        if (last.step < step) {
          prev = last.state;
          prevStep = last.step;
        } else if (last.step === step) {
          // The same pause again (after a state edit): keep diffing against the step before.
          prev = last.prev;
          prevStep = last.prevStep;
        }
      }
      const p: NestedPause = {
        run: ev.run,
        node: typeof ev.node === 'string' && ev.node ? ev.node : nestedNode(m.run ?? '', ev.run),
        agent: typeof ev.agent === 'string' ? ev.agent : (m.nestedRuns[ev.run]?.agent ?? ''),
        file: typeof ev.file === 'string' && ev.file ? ev.file : null,
        due: Array.isArray(ev.due) ? ev.due.map(String) : [],
        step,
        state: isObj(ev.state) ? ev.state : {},
        prev,
        prevStep,
        depth: typeof ev.depth === 'number' ? ev.depth : ev.run.split('/').length - 1,
        reason: ev.reason ?? 'step',
      };
      m.nested = p;
      m.internal.lastNested = p;
      break;
    }
    case 'nested_resumed':
      if (m.nested && m.nested.run === ev.run) m.nested = null;
      break;
    case 'run_finished': {
      if (m.nested && inRun(m.nested.run, ev.run)) m.nested = null;
      const runs = m.nestedRuns;
      let gone = false;
      for (const k in runs) {
        if (inRun(k, ev.run)) {
          gone = true;
          break;
        }
      }
      if (gone) {
        const own = d.nestedRuns();
        for (const k of Object.keys(own)) if (inRun(k, ev.run)) delete own[k];
      }
      break;
    }
    default:
      break;
  }
}

/** LLM/tool call events (top-level and nested) into `row.calls`. */
function foldCall(d: Draft, row: StepRow, ev: DebugEvent): void {
  const m = d.m;
  switch (ev.event) {
    case 'llm_request': {
      const id = `llm-${++m.internal.seq}`;
      row.calls.push({
        kind: 'llm',
        node: ev.node,
        step: row.step,
        id,
        run: ev.run,
        request: { messages: ev.messages, tools: ev.tools },
        model: ev.model ?? null,
        startMs: ev.ts_ms,
        endMs: null,
      });
      d.llmOpen()[`${ev.run}\u0000${ev.node}`] = [row.step, id];
      break;
    }
    case 'llm_delta': {
      // Text of the answer in flight: appended to its call; no new row, no new call.
      const open = m.internal.llm[`${ev.run}\u0000${ev.node}`];
      if (!open || typeof ev.text !== 'string') break;
      const ri = findRow(m.steps, open[0]);
      if (ri < 0) break;
      const target = d.row(ri);
      const ci = lastIndexOf(target.calls, (c) => c.id === open[1]);
      if (ci < 0) break;
      const c = target.calls[ci];
      if (d.isOwn(c)) c.stream = (c.stream ?? '') + ev.text;
      else target.calls[ci] = d.own({ ...c, stream: (c.stream ?? '') + ev.text });
      break;
    }
    case 'llm_response': {
      const usage = normUsage(ev.usage);
      const response = { content: ev.content ?? null, tool_calls: ev.tool_calls ?? [], usage };
      const extra = { durationMs: ev.duration_ms ?? null, costUsd: ev.cost_usd ?? null };
      const [target, ci] = closeLlmCall(d, row, ev.run, ev.node);
      if (ci >= 0) {
        const c = target.calls[ci];
        // The final response replaces the streamed text.
        target.calls[ci] = { ...c, response, ...extra, model: ev.model ?? c.model ?? null, stream: undefined, endMs: ev.ts_ms };
        addTokens(target, usage);
        break;
      }
      target.calls.push({ kind: 'llm', node: ev.node, step: target.step, id: `llm-${++m.internal.seq}`, run: ev.run, response, ...extra, model: ev.model ?? null, startMs: ev.ts_ms, endMs: ev.ts_ms });
      addTokens(target, usage);
      break;
    }
    case 'llm_error': {
      const patch = { error: ev.message, errorKind: ev.kind ?? 'other', durationMs: ev.duration_ms ?? null, endMs: ev.ts_ms };
      const [target, ci] = closeLlmCall(d, row, ev.run, ev.node);
      if (ci >= 0) {
        target.calls[ci] = { ...target.calls[ci], ...patch };
        target.llmErrors++;
        break;
      }
      target.calls.push({ kind: 'llm', node: ev.node, step: target.step, id: `llm-${++m.internal.seq}`, run: ev.run, ...patch, startMs: ev.ts_ms - (ev.duration_ms ?? 0) });
      target.llmErrors++;
      break;
    }
    case 'tool_call': {
      const call = ev.call;
      row.calls.push({ kind: 'tool', node: ev.node, step: row.step, id: call?.id ?? '', run: ev.run, call, startMs: ev.ts_ms, endMs: null });
      d.toolOpen()[`${ev.run}\u0000${call?.id ?? ''}`] = row.step;
      break;
    }
    case 'tool_result': {
      const key = `${ev.run}\u0000${ev.id}`;
      const step = m.internal.tool[key];
      const patch = { result: ev.result ?? null, error: ev.error ?? null, endMs: ev.ts_ms };
      if (step !== undefined) {
        delete d.toolOpen()[key];
        const ri = findRow(m.steps, step);
        if (ri >= 0) {
          const target = d.row(ri);
          const ci = lastIndexOf(target.calls, (c) => c.kind === 'tool' && c.id === ev.id && c.run === ev.run);
          if (ci >= 0) {
            target.calls[ci] = { ...target.calls[ci], ...patch };
            break;
          }
        }
      }
      row.calls.push({ kind: 'tool', node: ev.node, step: row.step, id: ev.id, run: ev.run, call: { id: ev.id, name: ev.name, args: null }, ...patch, startMs: ev.ts_ms });
      break;
    }
    default:
      break;
  }
}

/** Keep the first divergence of the run (the engine reports only the first). */
function diverged(d: Draft, ev: Extract<DebugEvent, { event: 'replay_diverged' }>, step: number | null): void {
  if (d.m.diverged) return;
  d.m.diverged = { node: ev.node, call: ev.call, path: ev.path, recorded: ev.recorded, now: ev.now, run: ev.run, step };
}

/** Closes the LLM call still open for (run, node): its row and its index there. Without an open
 * call (or when it is gone from its row) the row to add a call to, and -1. */
function closeLlmCall(d: Draft, row: StepRow, run: string, node: string): [StepRow, number] {
  const key = `${run}\u0000${node}`;
  const open = d.m.internal.llm[key];
  if (!open) return [row, -1];
  delete d.llmOpen()[key];
  const ri = findRow(d.m.steps, open[0]);
  if (ri < 0) return [row, -1];
  const target = d.row(ri);
  return [target, lastIndexOf(target.calls, (c) => c.id === open[1])];
}

function lastIndexOf<T>(list: T[], pred: (x: T) => boolean): number {
  for (let i = list.length - 1; i >= 0; i--) if (pred(list[i])) return i;
  return -1;
}

/**
 * Whether the event log keeps `ev`: the events `reconstructState` rebuilds states from, and
 * `node_enter`s until one tells the dialect (`guessDialect`). Routes, streamed text, calls and
 * the rest are folded into rows and not kept twice: a 100,000-step run keeps 100,000 events in
 * its log, not 300,000.
 */
function keepInLog(m: RunModel, ev: DebugEvent): boolean {
  switch (ev.event) {
    case 'run_started':
    case 'node_exit':
    case 'state_edited':
    case 'rewound':
    case 'run_finished':
      return true;
    case 'node_enter':
      if (m.internal.dialectLogged) return false;
      if (SHERMA_KINDS.has(ev.kind) || LOKI_KINDS.has(ev.kind)) m.internal.dialectLogged = true;
      return true;
    default:
      return false;
  }
}

function foldTop(d: Draft, ev: DebugEvent): void {
  const m = d.m;
  if (keepInLog(m, ev)) d.log(ev);
  switch (ev.event) {
    case 'run_started':
      m.agent = ev.agent;
      m.input = ev.input;
      break;
    case 'node_enter': {
      if (ev.step > m.internal.curStep) {
        // A new step began: what was "current" (the nodes due) is now running.
        d.overlay().current = d.own([]);
        m.internal.curStep = ev.step;
      }
      const row = d.row(d.rowIndex(ev.step, ev.ts_ms));
      const ahead = m.internal.hooksAhead;
      if (ahead && ahead.length) {
        row.hooks = [...(row.hooks ?? []), ...ahead];
        m.internal.hooksAhead = [];
      }
      if (!row.nodes.includes(ev.node)) {
        row.nodes.push(ev.node);
        row.kinds.push(ev.kind);
      } else {
        const k = row.nodes.indexOf(ev.node);
        row.kinds[k] = ev.kind;
        removeFrom(row.exited, ev.node);
      }
      if (row.status !== 'error') row.status = 'running';
      const visited = d.visited();
      const steps = visited[ev.node];
      if (!steps) visited[ev.node] = d.own([ev.step]);
      else if (steps[steps.length - 1] !== ev.step) {
        if (d.isOwn(steps)) steps.push(ev.step);
        else visited[ev.node] = d.own([...steps, ev.step]);
      }
      const cur = d.current();
      if (!cur.includes(ev.node)) cur.push(ev.node);
      m.paused = null;
      break;
    }
    case 'node_exit': {
      const row = d.row(d.rowIndex(ev.step, ev.ts_ms));
      if (!row.nodes.includes(ev.node)) {
        row.nodes.push(ev.node);
        row.kinds.push('');
      }
      if (!row.exited.includes(ev.node)) row.exited.push(ev.node);
      row.updates[ev.node] = ev.update;
      if (isObj(ev.update)) {
        if (!row.update) row.update = {};
        mergeUpdate(row.update, ev.update);
      }
      const dur = typeof ev.duration_ms === 'number' ? ev.duration_ms : Math.max(0, ev.ts_ms - row.startMs);
      row.durationMs = row.durationMs == null ? dur : Math.max(row.durationMs, dur);
      if (row.status !== 'error' && row.nodes.every((n) => row.exited.includes(n))) row.status = 'done';
      if (m.overlay.current.includes(ev.node)) removeFrom(d.current(), ev.node);
      if (m.pending && m.pending.node === ev.node) m.pending = null;
      break;
    }
    case 'route': {
      const i = rowOfNode(m.steps, ev.from);
      let step = 0;
      const label = routeLabel(ev.reason);
      if (i >= 0) {
        const row = d.row(i);
        row.routes.push({ from: ev.from, to: ev.to, reason: ev.reason, label });
        step = row.step;
      }
      const key = edgeKey(ev.from, ev.to);
      const int = m.internal;
      if (step !== int.lastRouteStep) {
        for (const k of int.lastEdges) if (k !== key && m.overlay.edges[k]) d.edge(k, '', '').last = false;
        int.lastEdges = [];
        int.lastRouteStep = step;
      }
      const e = d.edge(key, ev.from, ev.to);
      e.label = label;
      if (e.steps[e.steps.length - 1] !== step) e.steps.push(step);
      e.last = true;
      if (!int.lastEdges.includes(key)) int.lastEdges = [...int.lastEdges, key];
      break;
    }
    case 'llm_delta': {
      // Deltas touch only their call's row (found through the open call, not by search).
      const open = m.internal.llm[`${ev.run}\u0000${ev.node}`];
      if (!open) break;
      const i = findRow(m.steps, open[0]);
      if (i >= 0) foldCall(d, m.steps[i], ev);
      break;
    }
    case 'replay_diverged': {
      const i = rowOfNode(m.steps, ev.node);
      diverged(d, ev, i >= 0 ? m.steps[i].step : null);
      break;
    }
    case 'llm_request':
    case 'llm_response':
    case 'llm_error':
    case 'tool_call':
    case 'tool_result': {
      const i = rowOfNode(m.steps, ev.node);
      if (i < 0) break;
      foldCall(d, d.row(i), ev);
      break;
    }
    case 'interrupt': {
      m.pending = {
        id: ev.id,
        node: ev.node,
        kind: ev.kind,
        prompt: ev.prompt,
        options: ev.options ?? [],
        value: ev.value ?? null,
        default: ev.default ?? null,
        validation: ev.validation ?? null,
      };
      // sherma enters the node before asking (the row is running); Loki asks before any node of
      // the super-step runs (no row yet: the next step's row is created here).
      const steps = m.steps;
      const last = steps.length ? steps[steps.length - 1] : undefined;
      let i: number;
      if (last && (last.status === 'running' || last.status === 'interrupted')) i = steps.length - 1;
      else i = d.rowIndex((last?.step ?? 0) + 1, ev.ts_ms);
      const row = d.row(i);
      if (!row.nodes.includes(ev.node)) {
        row.nodes.push(ev.node);
        row.kinds.push(ev.kind);
      }
      row.status = 'interrupted';
      const cur = d.current();
      if (!cur.includes(ev.node)) cur.push(ev.node);
      break;
    }
    case 'state_edited': {
      const step = lastDoneStep(m);
      d.edits().push({ step, key: ev.key, value: ev.value });
      const i = findRow(m.steps, step);
      if (i >= 0) d.row(i).edits.push({ key: ev.key, value: ev.value });
      break;
    }
    case 'rewound':
      rewind(d, ev.step);
      break;
    case 'paused':
      m.paused = ev.reason;
      break;
    case 'error': {
      const node = ev.node ?? null;
      const steps = m.steps;
      let step: number | null = null;
      if (node != null) {
        const i = rowOfNode(steps, node);
        if (i >= 0 && steps[i].nodes.includes(node)) {
          const row = d.row(i);
          row.status = 'error';
          row.error = ev.message;
          step = row.step;
        } else if (i >= 0) step = steps[i].step;
        d.errorsMap()[node] = ev.message;
        if (m.overlay.current.includes(node)) removeFrom(d.current(), node);
      } else if (steps.length) {
        const i = steps.length - 1;
        if (steps[i].status === 'running') {
          const row = d.row(i);
          row.status = 'error';
          row.error = ev.message;
        }
        step = steps[i].step;
      }
      d.errors().push({ node, message: ev.message, step });
      break;
    }
    case 'hook': {
      const rec: HookRecord = {
        point: ev.point,
        executor: ev.executor,
        outcome: ev.outcome,
        detail: ev.detail ?? null,
        node: ev.node ?? null,
        durationMs: ev.duration_ms ?? 0,
      };
      // `before_graph_invoke` opens an invocation: it belongs to the step about to start.
      const i = ev.point === 'before_graph_invoke' ? -1 : ev.node ? rowOfNode(m.steps, ev.node) : m.steps.length - 1;
      if (i < 0) {
        m.internal.hooksAhead = [...(m.internal.hooksAhead ?? []), rec];
      } else {
        const row = d.row(i);
        row.hooks = [...(row.hooks ?? []), rec];
      }
      break;
    }
    case 'run_finished': {
      m.finished = { status: ev.status, output: ev.output, state: ev.state };
      m.pending = null;
      endNested(d);
      if (m.overlay.current.length) d.overlay().current = d.own([]);
      // Rows still running were cut short (stopped) or failed.
      for (let i = m.steps.length - 1; i >= 0 && i >= m.steps.length - 64; i--) {
        const r = m.steps[i];
        if (r.status === 'running') d.row(i).status = ev.status === 'failed' ? 'error' : 'interrupted';
      }
      break;
    }
    default:
      break;
  }
}

/** No nested run goes on past the end of the run or a rewind. */
function endNested(d: Draft): void {
  const m = d.m;
  m.nested = null;
  m.internal.lastNested = null;
  if (Object.keys(m.nestedRuns).length) m.nestedRuns = d.own({});
}

/** `rewound {step}`: drop the rows after `step` and rebuild the overlay from the rows left. */
function rewind(d: Draft, step: number): void {
  const m = d.m;
  const keep = m.steps.filter((r) => r.step <= step);
  d.setSteps(keep);
  m.pending = null;
  m.finished = null;
  m.paused = 'requested';
  endNested(d);
  m.errors = d.own(m.errors.filter((e) => e.step != null && e.step <= step));
  m.edits = d.own(m.edits.filter((e) => e.step <= step));
  if (m.diverged && (m.diverged.step ?? 0) > step) m.diverged = null;
  m.internal.llm = d.own({});
  m.internal.tool = d.own({});
  m.internal.curStep = step;
  const ov = d.own(rebuildOverlay(keep, m.errors));
  for (const o of [ov.current, ov.visited, ov.edges, ov.errors, ...Object.values(ov.edges)]) d.own(o);
  m.overlay = ov;
  let lastRoute = 0;
  for (const r of keep) if (r.routes.length) lastRoute = r.step;
  m.internal.lastRouteStep = lastRoute;
  m.internal.lastEdges = Object.keys(ov.edges).filter((k) => ov.edges[k].last);
}

/** The canvas overlay of `rows` (used after a rewind). */
export function rebuildOverlay(rows: StepRow[], errors: RunError[] = []): CanvasOverlay {
  const ov = emptyOverlay();
  let lastRoute = -1;
  for (const r of rows) if (r.routes.length) lastRoute = r.step;
  for (const r of rows) {
    // (Rows left after a rewind are completed steps: every node of them ran.)
    r.nodes.forEach((n) => {
      const v = ov.visited[n] ?? (ov.visited[n] = []);
      if (v[v.length - 1] !== r.step) v.push(r.step);
    });
    for (const rt of r.routes) {
      const key = edgeKey(rt.from, rt.to);
      const e = ov.edges[key] ?? (ov.edges[key] = { from: rt.from, to: rt.to, label: '', steps: [], last: false });
      e.label = rt.label;
      if (e.steps[e.steps.length - 1] !== r.step) e.steps.push(r.step);
      if (r.step === lastRoute) e.last = true;
    }
  }
  for (const e of errors) if (e.node != null) ov.errors[e.node] = e.message;
  return ov;
}

/**
 * The overlay's `current` follows the driver's status: while paused, interrupted or ready it
 * shows the nodes due next; once finished, nothing. Returns the same model when nothing changes.
 */
export function applyStatus(model: RunModel, status: RunStatusInfo | null): RunModel {
  if (!status || status.state === 'running') return model;
  const want = status.state === 'finished' ? [] : status.due ?? [];
  const cur = model.overlay.current;
  if (cur.length === want.length && cur.every((n, i) => n === want[i])) return model;
  return { ...model, overlay: { ...model.overlay, current: want.slice() } };
}

// ------------------------------------------------------------------------------------------------
// State diffs

export type DiffKind = 'added' | 'changed' | 'removed';

export interface DiffEntry {
  path: (string | number)[];
  kind: DiffKind;
  before?: unknown;
  after?: unknown;
}

function isMessage(v: unknown): boolean {
  return isObj(v) && (typeof v.type === 'string' || typeof v.role === 'string');
}

function isMessageList(v: unknown[]): boolean {
  return v.length > 0 && v.every(isMessage);
}

function hasId(v: unknown): boolean {
  return isObj(v) && v.id != null && v.id !== '';
}

/** Deep equality of JSON values. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ka = Object.keys(ao);
  if (ka.length !== Object.keys(bo).length) return false;
  for (const k of ka) if (!(k in bo) || !jsonEqual(ao[k], bo[k])) return false;
  return true;
}

/**
 * What changed from `prev` to `next`, as leaf-most entries. Objects are compared key by key,
 * recursively; arrays element by element (index paths), except message lists whose messages all
 * carry an `id`: those are matched by id, so a message appended, replaced or removed shows as
 * exactly that. `prev == null` with an object `next` (the initial state) lists every key as added.
 */
export function diffState(prev: unknown, next: unknown): DiffEntry[] {
  const out: DiffEntry[] = [];
  if (prev == null && isObj(next)) {
    for (const [k, v] of Object.entries(next)) out.push({ path: [k], kind: 'added', after: v });
    return out;
  }
  walk(prev, next, [], out);
  return out;
}

function walk(a: unknown, b: unknown, path: (string | number)[], out: DiffEntry[]): void {
  if (a === b) return;
  if (isObj(a) && isObj(b)) {
    for (const k of Object.keys(a)) {
      if (!(k in b)) out.push({ path: [...path, k], kind: 'removed', before: a[k] });
      else walk(a[k], b[k], [...path, k], out);
    }
    for (const k of Object.keys(b)) if (!(k in a)) out.push({ path: [...path, k], kind: 'added', after: b[k] });
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (isMessageList(a) && isMessageList(b) && a.every(hasId) && b.every(hasId)) {
      const prevAt = new Map<unknown, number>();
      a.forEach((m, i) => prevAt.set((m as Record<string, unknown>).id, i));
      const seen = new Set<unknown>();
      b.forEach((m, j) => {
        const id = (m as Record<string, unknown>).id;
        const i = prevAt.get(id);
        if (i === undefined) out.push({ path: [...path, j], kind: 'added', after: m });
        else {
          seen.add(id);
          walk(a[i], m, [...path, j], out);
        }
      });
      a.forEach((m, i) => {
        if (!seen.has((m as Record<string, unknown>).id)) out.push({ path: [...path, i], kind: 'removed', before: m });
      });
      return;
    }
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) walk(a[i], b[i], [...path, i], out);
    for (let i = n; i < b.length; i++) out.push({ path: [...path, i], kind: 'added', after: b[i] });
    for (let i = n; i < a.length; i++) out.push({ path: [...path, i], kind: 'removed', before: a[i] });
    return;
  }
  if (jsonEqual(a, b)) return;
  if (a === undefined) out.push({ path, kind: 'added', after: b });
  else if (b === undefined) out.push({ path, kind: 'removed', before: a });
  else out.push({ path, kind: 'changed', before: a, after: b });
}

/** The path of a state tree row as in `data-path`: keys joined by ".". */
export function pathKey(path: (string | number)[]): string {
  return path.join('.');
}

/**
 * Diff marks by row path (`pathKey`): each entry's own kind, and `changed` for every ancestor of
 * an entry (so collapsed parents show that something inside changed).
 */
export function diffIndex(entries: DiffEntry[]): Map<string, DiffKind> {
  const index = new Map<string, DiffKind>();
  for (const e of entries) if (e.path.length) index.set(pathKey(e.path), e.kind);
  for (const e of entries) {
    for (let n = e.path.length - 1; n >= 1; n--) {
      const k = pathKey(e.path.slice(0, n));
      if (!index.has(k)) index.set(k, 'changed');
    }
  }
  return index;
}

// ------------------------------------------------------------------------------------------------
// Skills loaded at a step (sherma's `__sherma__` bookkeeping)

/** A skill loaded in the state: a sherma skill (`loaded_skills`) or an activated Agent Skill. */
export interface LoadedSkill {
  id: string;
  kind: 'skill' | 'agent-skill';
  /** The version as recorded (`1.0.0`, `==1.0.0`, `*`); null for Agent Skills. */
  version: string | null;
  /** Tool ids the skill bound (sherma skills). */
  tools: string[];
  /** Where an Agent Skill came from: project, user or url. */
  scope: string | null;
  /** Loaded by the step shown (its entry is new in the diff against the step before). */
  added: boolean;
}

function objectAt(v: unknown, key: string): Record<string, unknown> | null {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const x = (v as Record<string, unknown>)[key];
  return x && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : null;
}

/**
 * The skills loaded in a sherma state: `__sherma__.loaded_skills` (id → `{version, tools}`) then
 * `__sherma__.activated_skills` (name → `{scope, location}`), in the engine's order. `null` when
 * the state has no skill bookkeeping at all (a Loki run, a sherma file without skills). `diff`
 * (against the step before) marks the ones this step loaded.
 */
export function loadedSkills(state: unknown, diff: DiffEntry[] = []): LoadedSkill[] | null {
  const internal = objectAt(state, '__sherma__');
  if (!internal) return null;
  const loaded = objectAt(internal, 'loaded_skills');
  const activated = objectAt(internal, 'activated_skills');
  if (!loaded && !activated) return null;
  const index = diffIndex(diff);
  const isNew = (group: string, id: string) =>
    index.get(pathKey(['__sherma__', group, id])) === 'added' ||
    index.get(pathKey(['__sherma__', group])) === 'added' ||
    index.get('__sherma__') === 'added';
  const out: LoadedSkill[] = [];
  for (const [id, entry] of Object.entries(loaded ?? {})) {
    const e = entry && typeof entry === 'object' ? (entry as Record<string, unknown>) : {};
    const tools = Array.isArray(e.tools) ? e.tools.map((t) => (typeof t === 'string' ? t : JSON.stringify(t))) : [];
    out.push({
      id,
      kind: 'skill',
      version: typeof e.version === 'string' ? e.version : e.version == null ? null : JSON.stringify(e.version),
      tools,
      scope: null,
      added: isNew('loaded_skills', id),
    });
  }
  for (const [id, entry] of Object.entries(activated ?? {})) {
    const e = entry && typeof entry === 'object' ? (entry as Record<string, unknown>) : {};
    out.push({
      id,
      kind: 'agent-skill',
      version: null,
      tools: [],
      scope: typeof e.scope === 'string' ? e.scope : null,
      added: isNew('activated_skills', id),
    });
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// State reconstruction from a trace (reviewing a run without a live session)

const LOKI_KINDS = new Set(['script', 'llm', 'approval', 'input', 'end', 'agent', 'router', 'tool', 'map', 'transform']);
const SHERMA_KINDS = new Set(['call_llm', 'tool_node', 'set_state', 'data_transform', 'interrupt', 'call_agent', 'custom', 'load_skills']);

/** The dialect a trace came from, guessed from its node kinds (sherma when unsure). */
export function guessDialect(events: DebugEvent[]): 'sherma' | 'loki' {
  for (const ev of events) {
    if (ev.event !== 'node_enter' || ev.run.includes('/')) continue;
    if (SHERMA_KINDS.has(ev.kind)) return 'sherma';
    if (LOKI_KINDS.has(ev.kind)) return 'loki';
  }
  for (const ev of events) {
    if (ev.event === 'run_finished' && !ev.run.includes('/') && isObj(ev.state)) {
      return 'initial_prompt' in ev.state ? 'loki' : 'sherma';
    }
  }
  return 'sherma';
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/** A sherma message in its stored shape (mirrors `sherma_state::normalize_message`). */
function normalizeMessage(m: unknown): Record<string, unknown> {
  const src: Record<string, unknown> = isObj(m) ? { ...m } : { type: 'human', content: m == null ? '' : String(m) };
  const raw = typeof src.type === 'string' ? src.type : typeof src.role === 'string' ? src.role : 'human';
  const map: Record<string, string> = { user: 'human', assistant: 'ai', AIMessage: 'ai', HumanMessage: 'human', developer: 'system' };
  const kind = map[raw] ?? raw;
  delete src.role;
  src.type = kind;
  if (!('content' in src)) src.content = '';
  if (!('additional_kwargs' in src)) src.additional_kwargs = {};
  if (kind === 'ai' && !('tool_calls' in src)) src.tool_calls = [];
  return src;
}

function messagesOf(v: unknown): Record<string, unknown>[] {
  if (typeof v === 'string') return [normalizeMessage({ type: 'human', content: v })];
  return asList(v).map(normalizeMessage);
}

function initialState(input: unknown, dialect: 'sherma' | 'loki'): Record<string, unknown> {
  // launch::start sends a string (text only), the state object (state only) or
  // `{input, state}` (both).
  let text: string | null = null;
  let state: Record<string, unknown> = {};
  if (typeof input === 'string') text = input;
  else if (isObj(input)) {
    const keys = Object.keys(input);
    if (typeof input.input === 'string' && keys.every((k) => k === 'input' || k === 'state') && (input.state === undefined || isObj(input.state))) {
      text = input.input;
      state = isObj(input.state) ? clone(input.state) : {};
    } else state = clone(input);
  }
  if (dialect === 'loki') {
    state.initial_prompt = text ?? '';
    return state;
  }
  if ('messages' in state) state.messages = messagesOf(state.messages);
  if (text != null) state.messages = [...((state.messages as unknown[]) ?? []), normalizeMessage({ type: 'human', content: text })];
  return state;
}

function applyUpdate(state: Record<string, unknown>, update: unknown): void {
  if (!isObj(update)) return;
  for (const [k, v] of Object.entries(update)) {
    if (k === 'messages') {
      const list = Array.isArray(state.messages) ? (state.messages as Record<string, unknown>[]).slice() : [];
      for (const msg of messagesOf(v)) {
        const id = msg.id;
        const at = id != null ? list.findIndex((x) => isObj(x) && x.id === id) : -1;
        if (at >= 0) list[at] = msg;
        else list.push(msg);
      }
      state.messages = list;
    } else state[k] = clone(v);
  }
}

type Effect = { step: number; update: unknown } | { step: number; key: string; value: unknown };

/**
 * The state after `step` steps of the top-level run in `events` (0 = the initial state), rebuilt
 * from the trace alone: the run's input, then every `node_exit` update of steps ≤ `step` in event
 * order (`messages` appends, replacing a message with the same `id`; other keys overwrite), and
 * `state_edited` values at the step they were made after. A `rewound` drops what came after its
 * step. For the run's last step the `run_finished` state is returned, which is exact.
 *
 * Approximations (the trace does not carry everything): the graph's own `initial_state` and
 * declared defaults are unknown; Loki reducers (e.g. append-to-list keys written by several
 * branches of a fan-out super-step) are not applied, so a key written by parallel branches holds
 * the last branch's value instead of the merged one; sherma custom reducers likewise.
 */
export function reconstructState(events: DebugEvent[], step: number, dialect?: 'sherma' | 'loki'): Record<string, unknown> {
  let top: string | null = null;
  for (const ev of events) {
    if (ev.event === 'run_started' && !ev.run.includes('/')) {
      top = ev.run;
      break;
    }
  }
  if (top == null && events.length) top = events[0].run.split('/')[0];
  const dia = dialect ?? guessDialect(events);
  let input: unknown = null;
  let initial: Record<string, unknown> | null = null;
  let effects: Effect[] = [];
  let completed = 0;
  let finished: { state: unknown; at: number } | null = null;
  for (const ev of events) {
    if (ev.run !== top) continue;
    switch (ev.event) {
      case 'run_started':
        input = ev.input;
        // Traces carry the exact state before step 1 (defaults applied); older ones only the input.
        initial = isObj(ev.state) ? (ev.state as Record<string, unknown>) : null;
        break;
      case 'node_exit':
        effects.push({ step: ev.step, update: ev.update });
        if (ev.step > completed) completed = ev.step;
        break;
      case 'state_edited':
        effects.push({ step: completed, key: ev.key, value: ev.value });
        break;
      case 'rewound':
        effects = effects.filter((e) => e.step <= ev.step);
        completed = ev.step;
        finished = null;
        break;
      case 'run_finished':
        finished = { state: ev.state, at: completed };
        break;
      default:
        break;
    }
  }
  if (finished && step >= finished.at && isObj(finished.state)) return clone(finished.state);
  const state = initial ? clone(initial) : initialState(input, dia);
  for (const e of effects) {
    if (e.step > step) continue;
    if ('key' in e) {
      state[e.key] = e.key === 'messages' && dia === 'sherma' ? messagesOf(e.value) : clone(e.value);
    } else applyUpdate(state, e.update);
  }
  return state;
}
