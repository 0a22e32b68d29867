import { describe, expect, it } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import {
  BESIDE_GAP,
  LABEL_H,
  LABEL_MAX_W,
  LANE_PAD,
  labelSpots,
  edgeSegments,
  freeCorner,
  intersects,
  labelWidth,
  laneBoxes,
  placeLabels,
  pointAlong,
  samplePath,
  sourcePoint,
  targetPoint,
  type LabelInput,
  type Rect,
} from '../components/canvasLayout';
import { fitViewport, READABLE_MIN_NODES, READABLE_ZOOM } from '../components/Canvas';
import { lokiView, viewEdge, viewNode } from '../fake/demo';
import { renderApp } from './harness';
import type { View } from '../types';

const box = (p: { x: number; y: number; w: number; h: number }): Rect => ({ x: p.x - p.w / 2, y: p.y - p.h / 2, w: p.w, h: p.h });

function edge(id: string, text: string, from: Rect, to: Rect, points: [number, number][] = [], offset = 0): LabelInput {
  return { id, text, samples: samplePath(edgeSegments(sourcePoint(from), targetPoint(to), points, offset)) };
}

function noOverlaps(placed: Map<string, { x: number; y: number; w: number; h: number } | null>, nodes: Rect[]) {
  const rs = [...placed.values()].filter((p): p is NonNullable<typeof p> => !!p).map(box);
  for (let i = 0; i < rs.length; i++) {
    for (const n of nodes) expect(intersects(rs[i], n), `label ${i} on a node`).toBe(false);
    for (let j = i + 1; j < rs.length; j++) expect(intersects(rs[i], rs[j]), `labels ${i} and ${j}`).toBe(false);
  }
  return rs.length;
}

describe('edge labels', () => {
  it('a label with room sits in the middle of its edge, at its full text', () => {
    const a = { x: 0, y: 0, w: 200, h: 64 };
    const b = { x: 0, y: 200, w: 200, h: 64 };
    const e = edge('e', 'fallback', a, b);
    const p = placeLabels([e], [a, b]).get('e')!;
    const [mx, my] = pointAlong(e.samples, 0.5);
    expect([p.x, p.y, p.text, p.w, p.h]).toEqual([mx, my, 'fallback', labelWidth('fallback'), LABEL_H]);
  });

  it('labels of neighbouring branches never overlap each other or a node', () => {
    // support-triage's `confirm`: two long conditions and a default into the same two nodes, and
    // a fan-out of four labelled edges from one node into a row (their middles crowd together).
    const confirm = { x: 300, y: 0, w: 220, h: 64 };
    const end = { x: 300, y: 160, w: 112, h: 40 };
    const answer = { x: 560, y: 160, w: 220, h: 64 };
    const row = [0, 1, 2, 3].map((i) => ({ x: i * 250, y: 400, w: 200, h: 64 }));
    const src = { x: 360, y: 260, w: 200, h: 64 };
    const cond = 'state.messages[size(state.messages) - 1].content.lowerAscii().contains("done")';
    const labels = [
      edge('c1', cond, confirm, end, [], -35),
      edge('c2', 'state.messages[size(state.messages) - 2].content != ""', confirm, end, [], 35),
      edge('d', 'default', confirm, answer),
      ...row.map((r, i) => edge(`f${i}`, `fallback of lane ${i}`, src, r)),
    ];
    const nodes = [confirm, end, answer, src, ...row];
    const placed = placeLabels(labels, nodes);
    expect(placed.size).toBe(labels.length);
    const shown = noOverlaps(placed, nodes);
    expect(shown).toBeGreaterThanOrEqual(5);
    // A shortened label ends with an ellipsis; its full text stays the edge's (the tooltip).
    for (const [id, p] of placed) {
      const full = labels.find((l) => l.id === id)!.text;
      if (p && p.text !== full) expect(p.text.endsWith('…') && full.startsWith(p.text.slice(0, -1))).toBe(true);
    }
  });

  it("two branches into the same node: each label beside its own edge, on the side it bends to, at the same height", () => {
    // support-triage's confirm → end at 1280×800: the node gap is short, so on-edge labels of
    // the two bent edges would stack over both edges (issue 31 item 3).
    const confirm = { x: 200, y: 0, w: 220, h: 64 };
    const end = { x: 254, y: 110, w: 112, h: 40 };
    const long = 'state.messages[size(state.messages) - 1].content == "done"';
    const left = { ...edge('l', long, confirm, end, [], -35), side: -1 as const };
    const right = { ...edge('r', 'state.turns >= 3', confirm, end, [], 35), side: 1 as const };
    const placed = placeLabels([left, right], [confirm, end]);
    noOverlaps(placed, [confirm, end]);
    const l = placed.get('l')!;
    const r = placed.get('r')!;
    const [lx] = pointAlong(left.samples, 0.5);
    const [rx] = pointAlong(right.samples, 0.5);
    // Beside its edge: the left label ends just left of its edge, the right one starts just right.
    expect(l.x + l.w / 2).toBeCloseTo(lx - BESIDE_GAP, 5);
    expect(r.x - r.w / 2).toBeCloseTo(rx + BESIDE_GAP, 5);
    expect(l.y).toBeCloseTo(r.y, 5);
    // The long condition takes the widest label (the stylesheet ends it with an ellipsis; the
    // whole text is the tooltip's).
    expect([l.w, l.text]).toEqual([LABEL_MAX_W, long]);
    expect(labelWidth(long)).toBe(LABEL_MAX_W);
    expect(r.text).toBe('state.turns >= 3');
  });

  it('spots: on the edge first, beside it after (the bent side first)', () => {
    expect(labelSpots(100, 50, 40)).toEqual([[100, 50], [100 + BESIDE_GAP + 20, 50], [100 - BESIDE_GAP - 20, 50]]);
    expect(labelSpots(100, 50, 40, -1)[0]).toEqual([100 - BESIDE_GAP - 20, 50]);
    expect(labelSpots(100, 50, 40, 1)[0]).toEqual([100 + BESIDE_GAP + 20, 50]);
  });

  it('a label that fits nowhere is left out, unless its edge is selected', () => {
    const a = { x: 0, y: 0, w: 200, h: 64 };
    const b = { x: 0, y: 90, w: 200, h: 64 };
    // A wall over the whole gap between the two nodes.
    const wall = { x: -400, y: 60, w: 1000, h: 40 };
    const e = edge('e', 'each', a, b);
    expect(placeLabels([e], [a, b, wall]).get('e')).toBeNull();
    const sel = placeLabels([{ ...e, priority: true }], [a, b, wall]).get('e');
    expect(sel?.text).toBe('each');
  });

  it('a long edge is drawn through its route', () => {
    const segs = edgeSegments([0, 0], [0, 400], [
      [300, 130],
      [300, 270],
    ]);
    expect(segs).toHaveLength(3);
    expect(segs[1][0]).toEqual([300, 130]);
    expect(segs[2][0]).toEqual([300, 270]);
    // Nowhere near the straight line the edge would take without it.
    expect(samplePath(segs).filter(([, py]) => py > 120 && py < 280).every(([px]) => px > 250)).toBe(true);
  });
});

describe('map lanes', () => {
  const r = (x: number, y: number, w = 200, h = 64): Rect => ({ x, y, w, h });
  it('one box per lane around its own nodes, one around the nodes lanes share', () => {
    const nodes = new Map<string, Rect>([
      ['map_a', r(0, 0)],
      ['map_b', r(300, 0)],
      ['run_a', r(0, 150)],
      ['check_a', r(0, 300)],
      ['run_b', r(300, 150)],
      ['fault', r(150, 450)],
    ]);
    const boxes = laneBoxes(nodes, [
      { map: 'map_a', nodes: ['run_a', 'check_a', 'fault'] },
      { map: 'map_b', nodes: ['run_b', 'fault'] },
    ]);
    expect(boxes.map((b) => [b.maps.join(','), b.nodes.join(','), b.shared])).toEqual([
      ['map_a', 'run_a,check_a', false],
      ['map_b', 'run_b', false],
      ['map_a,map_b', 'fault', true],
    ]);
    expect(boxes[0]).toMatchObject({ x: -LANE_PAD, y: 150 - LANE_PAD, w: 200 + 2 * LANE_PAD, h: 214 + 2 * LANE_PAD });
    for (const b of boxes) {
      for (const id of b.nodes) {
        const n = nodes.get(id)!;
        expect(n.x >= b.x && n.y >= b.y && n.x + n.w <= b.x + b.w && n.y + n.h <= b.y + b.h).toBe(true);
      }
      // The map itself is never inside its lane's box.
      expect(intersects(b, nodes.get('map_a')!)).toBe(false);
    }
  });
});

describe('minimap and fitting', () => {
  it('the minimap takes the first corner it covers no node in, or none', () => {
    const pane = { width: 1000, height: 700 };
    expect(freeCorner(pane, [], 140, 96, ['bottom-right', 'top-right'])).toBe('bottom-right');
    const br = { x: 900, y: 620, w: 50, h: 40 };
    expect(freeCorner(pane, [br], 140, 96, ['bottom-right', 'top-right'])).toBe('top-right');
    const tr = { x: 880, y: 20, w: 50, h: 40 };
    expect(freeCorner(pane, [br, tr], 140, 96, ['bottom-right', 'top-right'])).toBeNull();
  });

  it('a tall graph opens at its top at a readable zoom; a small one fits whole', () => {
    const tall = Array.from({ length: 12 }, (_, i) => ({ x: 0, y: i * 150, w: 220, h: 64 }));
    const vp = fitViewport(tall, 1100, 650);
    expect(vp.zoom).toBeCloseTo(READABLE_ZOOM);
    expect(vp.y).toBeCloseTo(40);
    const small = tall.slice(0, 3);
    expect(fitViewport(small, 1100, 650).zoom).toBeGreaterThan(READABLE_ZOOM);
    // A small graph always fits whole, however small its nodes get.
    const few = tall.slice(0, READABLE_MIN_NODES - 1);
    const fit = fitViewport(few, 1100, 650);
    expect(fit.zoom).toBeLessThan(READABLE_ZOOM);
    expect(fit.y + (few[few.length - 1].y + 64) * fit.zoom).toBeLessThanOrEqual(650);
  });
});

/** A view laid out as the engine lays out coyote's review-gauntlet around its lanes. */
function lanesView(): View {
  const v = lokiView();
  const n = (id: string, kind: string, x: number, y: number) => viewNode({ id, kind, x, y, w: 200, h: 64, line: 1, end_line: 2, data: { type: kind } });
  return {
    ...v,
    nodes: [
      n('build_items', 'script', 300, 0),
      n('map_a', 'map', 0, 150),
      n('map_b', 'map', 300, 150),
      n('map_c', 'map', 600, 150),
      n('run_a', 'agent', 0, 300),
      n('run_b', 'agent', 300, 300),
      n('run_c', 'agent', 600, 300),
      n('fault', 'script', 300, 450),
      n('retry', 'script', 300, 600),
    ],
    edges: [
      ...['a', 'b', 'c'].map((k, i) => viewEdge({ id: `f${i}`, from: 'build_items', to: `map_${k}`, kind: 'next', fanout: true })),
      ...['a', 'b', 'c'].map((k, i) => viewEdge({ id: `m${i}`, from: `map_${k}`, to: `run_${k}`, kind: 'map_branch', label: 'each' })),
      ...['a', 'b', 'c'].map((k, i) => viewEdge({ id: `x${i}`, from: `run_${k}`, to: 'fault', kind: 'fallback' })),
      ...['a', 'b', 'c'].map((k, i) => {
        const x = [-60, 250, 850][i];
        return viewEdge({ id: `n${i}`, from: `map_${k}`, to: 'retry', kind: 'next', points: [[x, 332], [x, 482]] });
      }),
    ],
    lanes: [
      { map: 'map_a', nodes: ['run_a', 'fault'] },
      { map: 'map_b', nodes: ['run_b', 'fault'] },
      { map: 'map_c', nodes: ['run_c', 'fault'] },
    ],
  };
}

const translate = (el: HTMLElement) => {
  const m = /translate\(([-\d.]+)px, ([-\d.]+)px\)(?: translate\(([-\d.]+)px, ([-\d.]+)px\))?/.exec(el.style.transform)!;
  return m[3] !== undefined ? [Number(m[3]), Number(m[4])] : [Number(m[1]), Number(m[2])];
};

describe('the canvas', () => {
  it('draws one box per lane with its nodes inside, and the shared node in a box of its own', async () => {
    const view = lanesView();
    await renderApp(view);
    const lanes = await screen.findAllByTestId('lane');
    expect(lanes.map((l) => l.dataset.lane)).toEqual(['map_a', 'map_b', 'map_c']);
    const shared = screen.getByTestId('lane-shared');
    expect(shared.dataset.lane).toBe('map_a map_b map_c');
    for (const el of [...lanes, shared]) {
      const [x, y] = translate(el);
      const w = parseFloat(el.style.width);
      const h = parseFloat(el.style.height);
      const ids = el.dataset.laneNodes!.split(' ');
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) {
        const n = view.nodes.find((v) => v.id === id)!;
        expect(n.x >= x && n.y >= y && n.x + n.w <= x + w && n.y + n.h <= y + h, `${id} in ${el.dataset.lane}`).toBe(true);
      }
      for (const n of view.nodes.filter((v) => !ids.includes(v.id))) {
        expect(intersects({ x, y, w, h }, n), `${n.id} outside ${el.dataset.lane}`).toBe(false);
      }
    }
  });

  it('edge labels do not overlap each other or any node', async () => {
    const view = lanesView();
    await renderApp(view);
    await waitFor(() => expect(screen.getAllByTestId('edge-label').length).toBeGreaterThanOrEqual(6));
    const rects = screen.getAllByTestId('edge-label').map((el) => {
      const [cx, cy] = translate(el);
      const w = parseFloat(el.style.width);
      const h = parseFloat(el.style.height);
      expect(w).toBeGreaterThan(0);
      return { x: cx - w / 2, y: cy - h / 2, w, h };
    });
    for (let i = 0; i < rects.length; i++) {
      for (const n of view.nodes) expect(intersects(rects[i], n)).toBe(false);
      for (let j = i + 1; j < rects.length; j++) expect(intersects(rects[i], rects[j])).toBe(false);
    }
  });
});
