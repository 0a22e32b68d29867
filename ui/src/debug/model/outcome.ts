// How a run waits and ends: the pending interrupt (the question waiting for an answer), the
// failures (per node and per step), and the end of the run with its status, output and state.
import type { DebugEvent, FinishStatus, JsonValue } from '../types';
import type { Draft } from './draft';
import { endNested } from './nested';
import { rowOfNode } from './timeline';
import { removeFrom } from './util';

export interface RunError {
  node: string | null;
  message: string;
  /** The step the error belongs to (null: before any step). */
  step: number | null;
}

export interface Finished {
  status: FinishStatus;
  output: JsonValue;
  state: JsonValue;
}

/** `interrupt`: the question waits for an answer; its node's row is interrupted. */
export function askQuestion(d: Draft, ev: Extract<DebugEvent, { event: 'interrupt' }>): void {
  const m = d.m;
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
}

/** `error`: the failing node's row fails, the canvas shows the message on the node; a run-level
 *  error fails the step in progress. */
export function recordError(d: Draft, ev: Extract<DebugEvent, { event: 'error' }>): void {
  const m = d.m;
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
}

/** `run_finished`: the status, output and final state; no question waits any more, no node runs. */
export function finishRun(d: Draft, ev: Extract<DebugEvent, { event: 'run_finished' }>): void {
  const m = d.m;
  m.finished = { status: ev.status, output: ev.output, state: ev.state };
  m.pending = null;
  endNested(d);
  if (m.overlay.current.length) d.overlay().current = d.own([]);
  // Rows still running were cut short (stopped) or failed.
  for (let i = m.steps.length - 1; i >= 0 && i >= m.steps.length - 64; i--) {
    const r = m.steps[i];
    if (r.status === 'running') d.row(i).status = ev.status === 'failed' ? 'error' : 'interrupted';
  }
}
