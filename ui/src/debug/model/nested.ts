// Nested runs (sherma sub-agents, Loki `agent` nodes) as the parent's timeline sees them: their
// events counted and their calls filed under the parent's step, the runs in progress with their
// visited nodes, and the pause inside one (stepping into it) with the diff of its state.
import type { DebugEvent, PauseReason, RunStatusInfo } from '../types';
import { diverged, foldCall } from './calls';
import { diffState, type DiffEntry } from './diff';
import type { Draft } from './draft';
import type { RunModel } from './fold';
import { rowOfNode } from './timeline';
import { isObj } from './util';

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

/** The top-level node a nested run id (`<run>/<node>/...`) runs inside. */
function nestedNode(top: string, run: string): string {
  const rest = run.slice(top.length + 1);
  const slash = rest.indexOf('/');
  return slash < 0 ? rest : rest.slice(0, slash);
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

export function foldNested(d: Draft, ev: DebugEvent): void {
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

/** No nested run goes on past the end of the run or a rewind. */
export function endNested(d: Draft): void {
  const m = d.m;
  m.nested = null;
  m.internal.lastNested = null;
  if (Object.keys(m.nestedRuns).length) m.nestedRuns = d.own({});
}
