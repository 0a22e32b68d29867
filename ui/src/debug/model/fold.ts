// The run's view model and the fold of the engine's debugger events into it
// (crates/runtime/src/events.rs). Pure functions, no React: the debugger store (../store/) keeps a
// `RunModel` and folds every batch of `run-events` into it; the canvas, timeline, state panel and
// call inspector read from it. What a state was at a step is not folded here: the engine answers
// that (`run_state_at` for the live run, `trace_state_at` for a recorded one).
//
// Folding is incremental and copy-on-write: `foldEvents(model, events)` returns a new model that
// shares everything the batch did not touch (rows, calls, overlay entries), and copies each touched
// container once per batch, so a batch costs O(its events) plus one shallow copy of the step list.
// Each concern folds its own events: rows (./timeline.ts), calls (./calls.ts), questions and
// failures (./outcome.ts), nested runs (./nested.ts); this module routes them and rewinds.
import type { DebugEvent, Pending, PauseReason, RunStatusInfo } from '../types';
import { foldTopCall, type Divergence } from './calls';
import { Draft } from './draft';
import { isObj } from './util';
import { endNested, foldNested, type NestedPause, type NestedRunInfo } from './nested';
import { askQuestion, finishRun, recordError, type Finished, type RunError } from './outcome';
import { emptyOverlay, rebuildOverlay, type CanvasOverlay } from './overlay';
import { addHook, enterNode, exitNode, recordEdit, takeRoute, type HookRecord, type StateEdit, type StepRow } from './timeline';

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
  /** The latest nested pause, kept after it ended: the next pause of the same nested run
   *  diffs its state against it. */
  lastNested?: NestedPause | null;
  /** Rows before this index were offered for packing (`Draft.pack`). */
  packed?: number;
  /** Node names, kinds and routes shared by the run's packed rows (`packRow`). */
  pool?: Map<string, unknown>;
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
    internal: { llm: {}, tool: {}, lastRouteStep: 0, lastEdges: [], curStep: 0, seq: 0 },
  };
}

/**
 * Folds events into a model, batch after batch, copying each shared container at most once: the
 * store folds a frame's worth of events in chunks (checking the clock between them) through one
 * folder, so a 100,000-step run copies its step list once per frame, not once per chunk.
 * `result()` hands the model over; the folder must not be used after that.
 */
export class ModelFolder {
  private draft: Draft | null = null;
  /** `pack: false` keeps every row a plain object (to compare with the packed rows). */
  constructor(
    private readonly base: RunModel,
    private readonly opts: { pack?: boolean } = {},
  ) {}

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
    if (!this.draft) return this.base;
    if (this.opts.pack !== false) this.draft.pack();
    return this.draft.m;
  }
}

/** Fold `events` into `model`; returns a new model (the input is not changed). Rows further
 *  back than the newest `LIVE_ROWS` are packed unless `opts.pack` is false. */
export function foldEvents(model: RunModel, events: DebugEvent[], opts: { pack?: boolean } = {}): RunModel {
  const f = new ModelFolder(model, opts);
  f.add(events);
  return f.result();
}

function foldTop(d: Draft, ev: DebugEvent): void {
  const m = d.m;
  switch (ev.event) {
    case 'run_started':
      m.agent = ev.agent;
      m.input = ev.input;
      break;
    case 'node_enter':
      enterNode(d, ev);
      break;
    case 'node_exit':
      exitNode(d, ev);
      break;
    case 'route':
      takeRoute(d, ev);
      break;
    case 'llm_delta':
    case 'replay_diverged':
    case 'llm_request':
    case 'llm_response':
    case 'llm_error':
    case 'tool_call':
    case 'tool_result':
      foldTopCall(d, ev);
      break;
    case 'interrupt':
      askQuestion(d, ev);
      break;
    case 'state_edited':
      recordEdit(d, ev);
      break;
    case 'rewound':
      rewind(d, ev.step);
      break;
    case 'paused':
      m.paused = ev.reason;
      break;
    case 'error':
      recordError(d, ev);
      break;
    case 'hook':
      addHook(d, ev);
      break;
    case 'run_finished':
      finishRun(d, ev);
      break;
    default:
      break;
  }
}

/** `rewound {step}`: drop the rows after `step` and rebuild the overlay from the rows left. */
function rewind(d: Draft, step: number): void {
  const m = d.m;
  const keep = m.steps.filter((r) => r.step <= step);
  d.setSteps(keep);
  m.internal.packed = Math.min(m.internal.packed ?? 0, keep.length);
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

// Node kinds of each dialect (what `node_enter.kind` says), to label a trace opened from disk.
const LOKI_KINDS = new Set(['script', 'llm', 'approval', 'input', 'end', 'agent', 'rag', 'map']);
const SHERMA_KINDS = new Set(['call_llm', 'tool_node', 'set_state', 'data_transform', 'interrupt', 'call_agent', 'custom', 'load_skills']);

/** The dialect a trace came from, guessed from its node kinds (sherma when unsure): a label for
 *  the run's info; its states come from the engine, which knows the dialect itself. */
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
