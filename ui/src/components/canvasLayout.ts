// What keeps the canvas readable on big graphs, as pure functions (tested in
// ui/src/test/canvas-layout.test.ts): the path of an edge (through the layout's points for long
// edges), where each edge label goes so that no two labels and no label and node overlap, the
// boxes of map lanes, and which corner of the pane the minimap can take without covering a node.

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}
export type Pt = [number, number];

export function intersects(a: Rect, b: Rect, margin = 0): boolean {
  return a.x < b.x + b.w + margin && b.x < a.x + a.w + margin && a.y < b.y + b.h + margin && b.y < a.y + a.h + margin;
}

/** Where NodeCard's handles put an edge's ends (flow.ts `nodeHandles`, 8 px handles). */
export function sourcePoint(n: Rect): Pt {
  return [n.x + n.w / 2, n.y + n.h + 4];
}
export function targetPoint(n: Rect): Pt {
  return [n.x + n.w / 2, n.y - 4];
}

/** One cubic segment: start, two control points, end. */
type Seg = [Pt, Pt, Pt, Pt];

/**
 * The segments of an edge from `s` (leaving downwards) to `t` (entering from above), through
 * `points` (a long edge's route from the layout; its direction at each point is the direction of
 * travel, so a back edge leaves its source, turns and climbs). `offset` bends the curve sideways
 * (edges joining the same two nodes are drawn apart).
 */
export function edgeSegments(s: Pt, t: Pt, points: Pt[] = [], offset = 0): Seg[] {
  const pts: Pt[] = [s, ...points, t];
  const dir = (i: number): number => {
    if (i === 0 || i === pts.length - 1) return 1;
    return pts[i + 1][1] >= pts[i - 1][1] ? 1 : -1;
  };
  const segs: Seg[] = [];
  for (let i = 0; i + 1 < pts.length; i++) {
    const a = pts[i];
    const b = pts[i + 1];
    const dy = b[1] - a[1];
    const k = Math.max(dy >= 0 ? Math.abs(dy) / 2 : 20 + Math.sqrt(-dy) * 4, 24);
    const oa = i === 0 ? offset : 0;
    const ob = i + 1 === pts.length - 1 ? offset : 0;
    segs.push([a, [a[0] + oa, a[1] + dir(i) * k], [b[0] + ob, b[1] - dir(i + 1) * k], b]);
  }
  return segs;
}

export function segmentsPath(segs: Seg[]): string {
  if (segs.length === 0) return '';
  const f = (p: Pt) => `${round(p[0])},${round(p[1])}`;
  return `M${f(segs[0][0])}` + segs.map((s) => ` C${f(s[1])} ${f(s[2])} ${f(s[3])}`).join('');
}

const round = (v: number) => Math.round(v * 10) / 10;

function bez(s: Seg, t: number): Pt {
  const u = 1 - t;
  const a = u * u * u;
  const b = 3 * u * u * t;
  const c = 3 * u * t * t;
  const d = t * t * t;
  return [a * s[0][0] + b * s[1][0] + c * s[2][0] + d * s[3][0], a * s[0][1] + b * s[1][1] + c * s[2][1] + d * s[3][1]];
}

/** Points along the path, about evenly spaced in parameter (12 per segment). */
export function samplePath(segs: Seg[], perSeg = 12): Pt[] {
  const out: Pt[] = [];
  segs.forEach((s, i) => {
    for (let j = i === 0 ? 0 : 1; j <= perSeg; j++) out.push(bez(s, j / perSeg));
  });
  return out;
}

/** The point at fraction `f` (0..1) of the path's length. */
export function pointAlong(samples: Pt[], f: number): Pt {
  if (samples.length === 0) return [0, 0];
  let total = 0;
  const cum = [0];
  for (let i = 1; i < samples.length; i++) {
    total += Math.hypot(samples[i][0] - samples[i - 1][0], samples[i][1] - samples[i - 1][1]);
    cum.push(total);
  }
  const want = total * Math.min(1, Math.max(0, f));
  for (let i = 1; i < samples.length; i++) {
    if (cum[i] >= want) {
      const seg = cum[i] - cum[i - 1] || 1;
      const r = (want - cum[i - 1]) / seg;
      return [samples[i - 1][0] + (samples[i][0] - samples[i - 1][0]) * r, samples[i - 1][1] + (samples[i][1] - samples[i - 1][1]) * r];
    }
  }
  return samples[samples.length - 1];
}

/** Label metrics (`.sy-edge-label`: 10.5 px monospace, 6 px padding, 1 px border). */
export const LABEL_H = 18;
export const LABEL_MAX_W = 190;
const CHAR_W = 7;
export function labelWidth(text: string): number {
  return Math.min(LABEL_MAX_W, Math.ceil([...text].length * CHAR_W + 16));
}

/** How many characters fit in a label `w` wide (an ellipsis included). */
export function fitText(text: string, w: number): string {
  const chars = [...text];
  const n = Math.floor((w - 16) / CHAR_W);
  return chars.length <= n ? text : `${chars.slice(0, Math.max(1, n - 1)).join('')}…`;
}

export interface LabelInput {
  id: string;
  text: string;
  /** Samples of the edge's path (samplePath). */
  samples: Pt[];
  /** Placed first and always shown (the selected edge). */
  priority?: boolean;
  /** The side the edge bends to among edges joining the same two nodes (-1 left, 1 right): its
   *  label goes beside it on that side first, so the labels of such edges sit apart, each next
   *  to its own edge, instead of on top of each other. */
  side?: -1 | 1;
}

/** A placed label: centre, size and the text shown (shortened with an ellipsis when it had to). */
export interface PlacedLabel {
  x: number;
  y: number;
  w: number;
  h: number;
  text: string;
}

/** Where along its edge a label is tried, in order: the middle first, then outwards. */
const FRACTIONS = [0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82, 0.12, 0.88];
/** Between a label put beside its edge and the edge. */
export const BESIDE_GAP = 4;

/** The centres tried for a label `w` wide at point (x, y) of its edge, in order: on the edge, then
 *  beside it (on `side` first, when it has one). */
export function labelSpots(x: number, y: number, w: number, side?: -1 | 1): Pt[] {
  const centre: Pt = [x, y];
  const left: Pt = [x - BESIDE_GAP - w / 2, y];
  const right: Pt = [x + BESIDE_GAP + w / 2, y];
  if (side === -1) return [left, centre, right];
  if (side === 1) return [right, centre, left];
  return [centre, right, left];
}

/** Shorter widths tried when the full label fits nowhere. */
const SHORT_W = [112, 72];
const CELL = 160;

/** A uniform grid of rectangles for overlap queries. */
class Grid {
  private cells = new Map<string, Rect[]>();
  add(r: Rect) {
    for (const k of this.keys(r)) {
      const c = this.cells.get(k);
      if (c) c.push(r);
      else this.cells.set(k, [r]);
    }
  }
  hits(r: Rect, margin: number): boolean {
    for (const k of this.keys(r)) {
      for (const o of this.cells.get(k) ?? []) if (intersects(r, o, margin)) return true;
    }
    return false;
  }
  private keys(r: Rect): string[] {
    const out: string[] = [];
    for (let i = Math.floor((r.x - 8) / CELL); i <= Math.floor((r.x + r.w + 8) / CELL); i++) {
      for (let j = Math.floor((r.y - 8) / CELL); j <= Math.floor((r.y + r.h + 8) / CELL); j++) out.push(`${i},${j}`);
    }
    return out;
  }
}

/**
 * Places edge labels so that none overlaps another label or any obstacle (node boxes, lane
 * headers): each label is tried at points along its own edge from the middle outwards, on the
 * edge or just beside it (`labelSpots`), then shortened (the full text stays in its tooltip); a
 * label that fits nowhere is left out (`null`: the canvas shows it while its edge is selected).
 * A priority label is always placed, at its best spot.
 */
export function placeLabels(labels: LabelInput[], obstacles: Rect[], margin = 2): Map<string, PlacedLabel | null> {
  const grid = new Grid();
  for (const o of obstacles) grid.add(o);
  const out = new Map<string, PlacedLabel | null>();
  const ordered = [...labels.filter((l) => l.priority), ...labels.filter((l) => !l.priority)];
  for (const l of ordered) {
    const full = labelWidth(l.text);
    const widths = [full, ...SHORT_W.filter((w) => w < full)];
    let placed: PlacedLabel | null = null;
    for (const w of widths) {
      for (const f of FRACTIONS) {
        const [px, py] = pointAlong(l.samples, f);
        for (const [x, y] of labelSpots(px, py, w, l.side)) {
          const r = { x: x - w / 2, y: y - LABEL_H / 2, w, h: LABEL_H };
          if (!grid.hits(r, margin)) {
            placed = { x, y, w, h: LABEL_H, text: w === full ? l.text : fitText(l.text, w) };
            break;
          }
        }
        if (placed) break;
      }
      if (placed) break;
    }
    if (!placed && l.priority) {
      const [x, y] = pointAlong(l.samples, 0.5);
      placed = { x, y, w: full, h: LABEL_H, text: l.text };
    }
    if (placed) grid.add({ x: placed.x - placed.w / 2, y: placed.y - placed.h / 2, w: placed.w, h: placed.h });
    out.set(l.id, placed);
  }
  return out;
}

/** Padding of a lane box around its nodes (crates/model/src/layout.rs `LANE_PAD`), and the
 *  height of its title, drawn inside the top padding and above it. */
export const LANE_PAD = 14;
export const LANE_TITLE_H = 16;

export interface LaneBox extends Rect {
  /** The maps whose lanes this box holds: one, or several for nodes their lanes share. */
  maps: string[];
  nodes: string[];
  shared: boolean;
}

/**
 * The boxes to draw for map lanes: one per lane around the nodes that are in that lane only
 * (around all its nodes when it has none of its own), and one per set of lanes around the nodes
 * they share. Nodes the canvas does not know are skipped; a box without nodes is not drawn.
 */
export function laneBoxes(nodes: Map<string, Rect>, lanes: { map: string; nodes: string[] }[]): LaneBox[] {
  const count = new Map<string, string[]>();
  for (const l of lanes) {
    for (const id of new Set(l.nodes)) {
      if (id === l.map) continue;
      count.set(id, [...(count.get(id) ?? []), l.map]);
    }
  }
  const box = (maps: string[], ids: string[], shared: boolean): LaneBox | null => {
    const rs = ids.map((id) => nodes.get(id)).filter((r): r is Rect => !!r);
    if (rs.length === 0) return null;
    const x0 = Math.min(...rs.map((r) => r.x)) - LANE_PAD;
    const y0 = Math.min(...rs.map((r) => r.y)) - LANE_PAD;
    const x1 = Math.max(...rs.map((r) => r.x + r.w)) + LANE_PAD;
    const y1 = Math.max(...rs.map((r) => r.y + r.h)) + LANE_PAD;
    return { x: x0, y: y0, w: x1 - x0, h: y1 - y0, maps, nodes: ids.filter((id) => nodes.has(id)), shared };
  };
  const out: LaneBox[] = [];
  for (const l of lanes) {
    const members = [...new Set(l.nodes)].filter((id) => id !== l.map);
    const own = members.filter((id) => (count.get(id) ?? []).length === 1);
    const b = box([l.map], own.length ? own : members, false);
    if (b) out.push(b);
  }
  const sharedSets = new Map<string, string[]>();
  for (const [id, maps] of count) {
    if (maps.length < 2) continue;
    const k = maps.join('\u0000');
    sharedSets.set(k, [...(sharedSets.get(k) ?? []), id]);
  }
  for (const [k, ids] of sharedSets) {
    const b = box(k.split('\u0000'), ids, true);
    if (b) out.push(b);
  }
  return out;
}

/** The strip above a lane box its title takes (an obstacle for edge labels). */
export function laneTitleRect(b: LaneBox): Rect {
  return { x: b.x + 10, y: b.y - LANE_TITLE_H / 2, w: Math.min(b.w - 10, 10 + laneTitle(b).length * 6.2), h: LANE_TITLE_H };
}

export function laneTitle(b: LaneBox): string {
  return b.shared ? `shared by ${b.maps.length} lanes` : `${b.maps[0]} · per item`;
}

export type Corner = 'bottom-right' | 'top-right' | 'bottom-left' | 'top-left';

/**
 * The first corner of `corners` where a minimap `w`×`h` (at `margin` from the pane's edges)
 * covers none of the node boxes (given in screen coordinates of the pane), or null when every
 * corner would cover one.
 */
export function freeCorner(pane: { width: number; height: number }, nodes: Rect[], w: number, h: number, corners: Corner[], margin = 15): Corner | null {
  for (const c of corners) {
    const x = c.endsWith('right') ? pane.width - margin - w : margin;
    const y = c.startsWith('bottom') ? pane.height - margin - h : margin;
    const r = { x, y, w, h };
    if (!nodes.some((n) => intersects(n, r, 4))) return c;
  }
  return null;
}
