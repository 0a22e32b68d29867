// The canvas overlay of a run: the nodes running or due, the steps each node ran in, the edges
// taken (with the label of the latest reason) and each failed node's message.
import type { RunStatusInfo } from '../types';
import type { RunModel } from './fold';
import type { RunError } from './outcome';
import type { StepRow } from './timeline';

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

export function emptyOverlay(): CanvasOverlay {
  return { current: [], visited: {}, edges: {}, errors: {} };
}

export function edgeKey(from: string, to: string): string {
  return `${from}->${to}`;
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
