// The copy-on-write draft a batch of events is folded into (see ./fold.ts).
import type { RunModel } from './fold';
import type { NestedRunInfo } from './nested';
import type { RunError } from './outcome';
import type { CanvasOverlay, EdgeMark } from './overlay';
import { findRow, LIVE_ROWS, newRow, PackedRow, packRow, type StateEdit, type StepRow } from './timeline';

/** A batch's mutable copy of a model: every container is copied once before its first change. */
export class Draft {
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
    const old = steps[i];
    if (this.isOwn(old)) return old;
    const r = old instanceof PackedRow ? old.unpack() : old;
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

  /**
   * Pack the rows this batch left behind (all but the newest `LIVE_ROWS`) that fit a
   * `PackedRow`. Only the draft's own copy of the step list changes; a row unpacked later to be
   * changed stays plain.
   */
  pack(): void {
    if (!this.stepsCopied) return;
    const steps = this.m.steps;
    const int = this.m.internal;
    const to = steps.length - LIVE_ROWS;
    const from = Math.min(int.packed ?? 0, Math.max(0, to));
    if (to <= from) return;
    const pool = int.pool ?? (int.pool = new Map());
    for (let i = from; i < to; i++) {
      const r = steps[i];
      if (r instanceof PackedRow) continue;
      const p = packRow(r, pool);
      if (p) steps[i] = p;
    }
    int.packed = to;
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
}
