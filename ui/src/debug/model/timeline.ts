// The timeline of a run: one row per top-level step (a Loki super-step may run several nodes),
// with its nodes, status, duration, routes, calls, edits and hooks; and how the node, route, edit
// and hook events of the top-level run fold into the rows (and the canvas marks that go with them).
import type { DebugEvent, HookOutcome, RouteReason, TokenUsage } from '../types';
import type { CallRecord } from './calls';
import type { Draft } from './draft';
import type { RunModel } from './fold';
import { edgeKey } from './overlay';
import { asList, isObj, removeFrom } from './util';

export type StepStatus = 'running' | 'done' | 'error' | 'interrupted';

/** An edge taken during a step, with the label shown on the canvas (`routeLabel`). */
export interface RouteTaken {
  from: string;
  to: string;
  reason: RouteReason;
  label: string;
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

/**
 * Rows further back than this from the newest are packed (`packRows`) once a batch is folded:
 * events only ever reach back to the current step or the one before (`rowOfNode` looks back 64).
 */
export const LIVE_ROWS = 64;

/**
 * A finished row of one node with no calls, edits, hooks, error or nested events, and at most
 * one route: what nearly every row of a long loop is. It keeps seven fields (the node, kind and
 * route shared with the run's other rows, the `node_exit` update shared with the event) instead
 * of a dozen small arrays and objects; the arrays a `StepRow` has are built when read. Packed
 * rows are never changed: the draft unpacks one into a plain row before a change
 * (`Draft.row`). `JSON.stringify` and `unpack` give exactly the plain row it replaced.
 */
export class PackedRow implements StepRow {
  constructor(
    readonly step: number,
    private readonly n: string,
    private readonly k: string,
    readonly startMs: number,
    readonly durationMs: number | null,
    private readonly u: unknown,
    private readonly r: RouteTaken | null,
  ) {}
  get status(): StepStatus {
    return 'done';
  }
  get nodes(): string[] {
    return [this.n];
  }
  get kinds(): string[] {
    return [this.k];
  }
  get exited(): string[] {
    return [this.n];
  }
  get tokens(): TokenUsage | null {
    return null;
  }
  get update(): Record<string, unknown> | null {
    return isObj(this.u) ? { ...this.u } : null;
  }
  get updates(): Record<string, unknown> {
    return { [this.n]: this.u };
  }
  get routes(): RouteTaken[] {
    return this.r ? [this.r] : [];
  }
  get calls(): CallRecord[] {
    return [];
  }
  get nested(): number {
    return 0;
  }
  get edits(): StateEdit[] {
    return [];
  }
  get error(): string | null {
    return null;
  }
  get llmErrors(): number {
    return 0;
  }
  get hooks(): HookRecord[] {
    return [];
  }
  /** The plain row, every container its own. */
  unpack(): StepRow {
    return {
      step: this.step,
      nodes: this.nodes,
      kinds: this.kinds,
      status: 'done',
      startMs: this.startMs,
      durationMs: this.durationMs,
      tokens: null,
      update: this.update,
      routes: this.r ? [{ ...this.r }] : [],
      calls: [],
      nested: 0,
      edits: [],
      exited: this.exited,
      updates: this.updates,
      error: null,
      llmErrors: 0,
      hooks: [],
    };
  }
  toJSON(): StepRow {
    return this.unpack();
  }
}

/** The shared copy of a string, a route or anything else keyed by `key` (one per run). */
function interned<T>(pool: Map<string, unknown>, key: string, v: T): T {
  const have = pool.get(key);
  if (have !== undefined) return have as T;
  pool.set(key, v);
  return v;
}

/** `row` packed, or null when it holds more than a `PackedRow` keeps. */
export function packRow(row: StepRow, pool: Map<string, unknown>): PackedRow | null {
  if (row instanceof PackedRow) return row;
  if (row.status !== 'done' || row.nodes.length !== 1 || row.kinds.length !== 1 || row.exited.length !== 1) return null;
  const node = row.nodes[0];
  if (row.exited[0] !== node || row.tokens || row.calls.length || row.nested || row.edits.length || row.error != null) return null;
  if (row.llmErrors || (row.hooks && row.hooks.length) || row.routes.length > 1) return null;
  const keys = Object.keys(row.updates);
  if (keys.length !== 1 || keys[0] !== node) return null;
  const u = row.updates[node];
  // `update` must be what the one `node_exit` gave: the same fields, the same values.
  if (isObj(u)) {
    const m = row.update;
    if (!m) return null;
    const uk = Object.keys(u);
    const mk = Object.keys(m);
    if (uk.length !== mk.length || uk.some((k, i) => mk[i] !== k || m[k] !== u[k])) return null;
  } else if (row.update !== null) return null;
  let route: RouteTaken | null = null;
  if (row.routes.length) {
    const r = row.routes[0];
    if (Object.keys(r).length !== 4) return null;
    let reason: string;
    try {
      reason = JSON.stringify(r.reason);
    } catch {
      return null;
    }
    route = interned(pool, `r\0${r.from}\0${r.to}\0${r.label}\0${reason}`, r);
  }
  return new PackedRow(
    row.step,
    interned(pool, `s\0${node}`, node),
    interned(pool, `s\0${row.kinds[0]}`, row.kinds[0]),
    row.startMs,
    row.durationMs,
    u,
    route,
  );
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

export function newRow(step: number, ts: number): StepRow {
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

/** The row (index) an event of node `node` belongs to: the latest unfinished row that has the
 *  node, else the latest row with it, else the last row; -1 when there are no rows. */
export function rowOfNode(steps: StepRow[], node: string | null | undefined): number {
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

function mergeUpdate(into: Record<string, unknown>, update: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(update)) {
    if (k === 'messages' && k in into) into[k] = [...asList(into[k]), ...asList(v)];
    else into[k] = v;
  }
}

/** `node_enter`: the node joins its step's row (created when new) and the canvas marks it. */
export function enterNode(d: Draft, ev: Extract<DebugEvent, { event: 'node_enter' }>): void {
  const m = d.m;
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
}

/** `node_exit`: the node's update and duration go to its row; the row is done when every node of
 *  it exited. */
export function exitNode(d: Draft, ev: Extract<DebugEvent, { event: 'node_exit' }>): void {
  const m = d.m;
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
}

/** `route`: the edge taken goes to its step's row and to the canvas (the latest routing step's
 *  edges are marked `last`). */
export function takeRoute(d: Draft, ev: Extract<DebugEvent, { event: 'route' }>): void {
  const m = d.m;
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
}

/** `state_edited`: an edit made while paused belongs to the last completed step. */
export function recordEdit(d: Draft, ev: Extract<DebugEvent, { event: 'state_edited' }>): void {
  const m = d.m;
  const step = lastDoneStep(m);
  d.edits().push({ step, key: ev.key, value: ev.value });
  const i = findRow(m.steps, step);
  if (i >= 0) d.row(i).edits.push({ key: ev.key, value: ev.value });
}

/** `hook`: a hook executor's run goes to its step's row (`before_graph_invoke` to the step about
 *  to start). */
export function addHook(d: Draft, ev: Extract<DebugEvent, { event: 'hook' }>): void {
  const m = d.m;
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
}
