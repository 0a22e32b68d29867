// What the canvas draws of a run: per-node and per-edge selectors over the debugger store, each
// returning a primitive (string/boolean), so a batch of run events re-renders only the nodes and
// edges whose look changed (a 10,000-step run must not repaint every node on every batch).
import { useContext } from 'react';
import { createStore, useStore, type StoreApi } from 'zustand';
import { DebugContext, shownModel, type DebugState } from '../../debug/store';
import { rowAt, type CanvasOverlay, type EdgeMark } from '../../debug/model';
import { bpEditor } from '../../debug/bpEditor';

const NO_STORE = createStore<DebugState | null>(() => null) as unknown as StoreApi<DebugState>;

/**
 * `useDebug(selector)` that tolerates a missing `DebugContext` (the canvas rendered on its own):
 * it then returns `fallback`.
 */
export function useDebugSafe<T>(selector: (s: DebugState) => T, fallback: T): T {
  const store = useContext(DebugContext);
  return useStore(store ?? NO_STORE, (s: DebugState) => (store && s ? selector(s) : fallback));
}

/** The sherma markers (view node id = kind). */
export const START = '__start__';
export const END = '__end__';

export type RunMark = 'current' | 'visited' | 'error' | '';

/** The state of the run being shown ("finished" for an earlier run kept in the history). */
function shownState(s: DebugState): string {
  if (s.viewing != null) return 'finished';
  return s.status?.state ?? (s.mode === 'live' ? 'running' : 'idle');
}

function overlayOf(s: DebugState): CanvasOverlay {
  return shownModel(s).overlay;
}

/** `data-run` of a node. A node running right now shows as current even if it failed earlier;
 *  once stopped, an error wins (break-on-error pauses before the failed node again). */
export function nodeRunMark(s: DebugState, id: string): RunMark {
  const m = shownModel(s);
  const ov = m.overlay;
  if (id === START) return m.steps.length ? 'visited' : '';
  if (id === END) return endSteps(ov).length ? 'visited' : '';
  const current = ov.current.includes(id);
  if (current && shownState(s) === 'running') return 'current';
  if (ov.errors[id] != null) return 'error';
  if (current) return 'current';
  return ov.visited[id]?.length ? 'visited' : '';
}

/** Step lists up to this long are shown whole; longer ones as their head, last step and count. */
const SHOW_ALL = 12;
/** Steps of the head of a long list kept in its summary. */
const HEAD = 5;

/**
 * The steps a node ran in (an edge was taken in), as the canvas shows them: `"1,4,9"` while the
 * list is short, else `"1,3,5,7,9,…,9999×5000"` (the first few, the last, the count). Constant
 * size however long the run: a 100,000-step run must not rebuild, compare and write
 * 300 KB strings into the DOM on every frame.
 */
export function stepsSummary(steps: readonly number[]): string {
  const n = steps.length;
  if (n <= SHOW_ALL) return steps.join(',');
  return `${steps.slice(0, HEAD).join(',')},…,${steps[n - 1]}×${n}`;
}

/** A `stepsSummary` read back: the steps it lists (the head only, for a long list), the last
 *  step and how many steps there are. */
export function parseSteps(summary: string): { listed: string[]; last: string; count: number } {
  if (!summary) return { listed: [], last: '', count: 0 };
  const times = summary.lastIndexOf('×');
  if (times < 0) {
    const listed = summary.split(',');
    return { listed, last: listed[listed.length - 1], count: listed.length };
  }
  const parts = summary.slice(0, times).split(',');
  const last = parts[parts.length - 1];
  return { listed: parts.slice(0, -2), last, count: Number(summary.slice(times + 1)) };
}

const endCache = new WeakMap<Record<string, EdgeMark>, number[]>();
/** Steps in which a route ended the run (sherma routes to `__end__`). */
function endSteps(ov: CanvasOverlay): number[] {
  let out = endCache.get(ov.edges);
  if (!out) {
    const set = new Set<number>();
    for (const e of Object.values(ov.edges)) if (e.to === END) e.steps.forEach((n) => set.add(n));
    out = [...set].sort((a, b) => a - b);
    endCache.set(ov.edges, out);
  }
  return out;
}

/** `data-steps` of a node: the steps it ran in (`stepsSummary`). */
export function nodeSteps(s: DebugState, id: string): string {
  const ov = overlayOf(s);
  if (id === START) return '';
  if (id === END) return stepsSummary(endSteps(ov));
  const v = ov.visited[id];
  return v?.length ? stepsSummary(v) : '';
}

/** The error message of a node ("" when none). */
export function nodeError(s: DebugState, id: string): string {
  return overlayOf(s).errors[id] ?? '';
}

/** True when the step selected in the timeline ran this node. */
export function nodeInSelectedStep(s: DebugState, id: string): boolean {
  if (s.selectedStep == null) return false;
  return !!rowAt(shownModel(s), s.selectedStep)?.nodes.includes(id);
}

/** The step-number chip of a `stepsSummary`: "#1 #4 #7", or "#1 … #9 ×5" when there are many. */
export function stepChip(steps: string): string {
  if (!steps) return '';
  const { listed, last, count } = parseSteps(steps);
  if (count <= 3) return listed.map((n) => `#${n}`).join(' ');
  return `#${listed[0]} … #${last} ×${count}`;
}

/** Steps of a `stepsSummary` for a tooltip: "step 4", "steps 1, 4, 9", or
 *  "steps 1, 3, 5, 7, 9, … 9999 (5000 times)". */
export function stepsTitle(steps: string): string {
  if (!steps) return '';
  const { listed, last, count } = parseSteps(steps);
  if (count === listed.length && steps.length < 80) return `step${count > 1 ? 's' : ''} ${listed.join(', ')}`;
  return `steps ${listed.slice(0, HEAD).join(', ')}, … ${last} (${count} times)`;
}

export type BpMark = '' | 'active' | 'conditional' | 'disabled';

export function breakpointMark(s: DebugState, id: string): BpMark {
  const bp = s.breakpoints.find((b) => b.node === id);
  if (!bp) return '';
  if (!bp.enabled) return 'disabled';
  return bp.condition ? 'conditional' : 'active';
}

export function breakpointCondition(s: DebugState, id: string): string {
  return s.breakpoints.find((b) => b.node === id)?.condition ?? '';
}

// ------------------------------------------------------------------------------------------------
// Edges

/** Does the route taken (`mark.label`, see `routeLabel`) go through this view edge? Only asked
 *  when several view edges join the same two nodes (e.g. two branches to `__end__`). */
export function labelMatchesEdge(markLabel: string, kind: string, label: string | null, dynamic: boolean): boolean {
  if (markLabel.startsWith('branch ')) {
    const colon = markLabel.indexOf(': ');
    return kind === 'branch' && colon >= 0 && markLabel.slice(colon + 2) === (label ?? '');
  }
  if (markLabel.startsWith('option: ')) return (kind === 'route' || kind === 'branch') && markLabel.slice(8) === (label ?? '');
  switch (markLabel) {
    case 'default':
      return kind === 'default';
    case 'fallback':
      return kind === 'fallback';
    case 'on_other':
      return kind === 'on_other';
    case '_next':
      return dynamic;
    case '':
      return kind !== 'branch' && kind !== 'default' && kind !== 'fallback' && kind !== 'on_other' && kind !== 'route' && !dynamic;
    default:
      return false;
  }
}

export interface EdgeQuery {
  source: string;
  target: string;
  kind: string;
  /** The view edge's own label (the branch condition / route option), without decoration. */
  label: string | null;
  dynamic: boolean;
  parallelCount: number;
}

const SEP = '\u0001';

/**
 * How an edge was taken, encoded as one string so the selector result compares by value:
 * "" = not taken, else `last SEP reason SEP steps`.
 */
export function edgeTakenKey(s: DebugState, q: EdgeQuery): string {
  const m = shownModel(s);
  if (q.source === START) {
    // The engine starts at the entry without a `route` event: the entry edge was taken in step 1.
    const first = m.steps[0];
    return first && first.nodes.includes(q.target) ? `0${SEP}${SEP}${first.step}` : '';
  }
  const mark = m.overlay.edges[`${q.source}->${q.target}`];
  if (!mark) return '';
  if (q.parallelCount > 1 && !labelMatchesEdge(mark.label, q.kind, q.label, q.dynamic)) return '';
  return `${mark.last ? 1 : 0}${SEP}${mark.label}${SEP}${stepsSummary(mark.steps)}`;
}

export function parseEdgeTaken(key: string): { last: boolean; reason: string; steps: string } | null {
  if (!key) return null;
  const [last, reason, steps] = key.split(SEP);
  return { last: last === '1', reason: reason ?? '', steps: steps ?? '' };
}

// ------------------------------------------------------------------------------------------------
// The in-place breakpoint condition editor (its store is `src/debug/bpEditor.ts`).

export function useBpEditorOpen(id: string): boolean {
  return useStore(bpEditor, (s) => s.node === id);
}
