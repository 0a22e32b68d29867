// Removed nodes and edges drawn on the canvas as ghosts (dashed, faded): the removed nodes in a
// column right of the graph (the current layout has no place for them), the removed edges as
// dashed lines between the boxes they joined (a node still there, or a ghost). Rendered inside
// the canvas' ReactFlow, in canvas coordinates, so they pan and zoom with the graph.
import { ViewportPortal } from '@xyflow/react';
import { removedEdges, removedNodes } from './model';
import { useDiff } from './store';

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

const GHOST_W = 200;
const GHOST_H = 48;
const GAP = 24;

/** Where each ghost goes: a column 80 px right of the graph, from its top. */
export function ghostBoxes(rects: Map<string, Box>, ids: string[]): Map<string, Box> {
  let right = 0;
  let top = Infinity;
  for (const r of rects.values()) {
    right = Math.max(right, r.x + r.w);
    top = Math.min(top, r.y);
  }
  if (!Number.isFinite(top)) top = 0;
  const out = new Map<string, Box>();
  ids.forEach((id, i) => out.set(id, { x: right + 80, y: top + i * (GHOST_H + GAP), w: GHOST_W, h: GHOST_H }));
  return out;
}

export function DiffGhosts({ rects }: { rects: Map<string, Box> }) {
  const diff = useDiff((s) => s.diff);
  const agent = useDiff((s) => s.agent);
  const nodes = removedNodes(diff, agent);
  const edges = removedEdges(diff, agent);
  if (nodes.length === 0 && edges.length === 0) return null;
  const ghosts = ghostBoxes(
    rects,
    nodes.map((n) => n.id),
  );
  const box = (id: string) => ghosts.get(id) ?? rects.get(id) ?? null;
  const lines = edges
    .map((e, i) => {
      const a = box(e.from);
      const b = box(e.to);
      if (!a || !b) return null;
      return { key: `${i}`, e, x1: a.x + a.w / 2, y1: a.y + a.h, x2: b.x + b.w / 2, y2: b.y };
    })
    .filter((l) => l !== null);
  return (
    <ViewportPortal>
      <div className="sy-diff-ghost-layer" data-testid="diff-ghost-layer">
        <svg className="sy-diff-ghost-lines" width={1} height={1} aria-hidden>
          {lines.map((l) => (
            <line key={l.key} x1={l.x1} y1={l.y1} x2={l.x2} y2={l.y2} data-testid="diff-ghost-edge" data-from={l.e.from} data-to={l.e.to} />
          ))}
        </svg>
        {nodes.map((n) => {
          const g = ghosts.get(n.id)!;
          return (
            <div
              key={n.id}
              className="sy-diff-canvas-ghost"
              data-testid="diff-canvas-ghost"
              data-node-id={n.id}
              style={{ transform: `translate(${g.x}px, ${g.y}px)`, width: g.w, height: g.h }}
              title={`${n.id} (${n.kind}) was removed`}
            >
              <span className="sy-name">{n.id}</span>
              <span className="sy-kind">{n.kind} · removed</span>
            </div>
          );
        })}
      </div>
    </ViewportPortal>
  );
}
