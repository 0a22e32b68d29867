// View (engine IR + layout) → React Flow nodes and edges.
// Objects are cached per id and reused while nothing they draw changed, so React Flow and the
// memoized node components skip untouched nodes when a new View arrives.
import { Position, type Edge, type Node } from '@xyflow/react';
import type { ViewEdge, ViewNode } from './types';

export interface SyNodeData extends Record<string, unknown> {
  id: string;
  kind: string;
  derived: boolean;
  marker: boolean;
  summary: string;
  errors: number;
  warnings: number;
  dynamicNext: boolean;
  subAgent: string | null;
}

export interface SyEdgeData extends Record<string, unknown> {
  kind: string;
  label: string | null;
  derived: boolean;
  dynamic: boolean;
  fanout: boolean;
  /** Position among edges joining the same two nodes, and how many there are (for offsets). */
  parallel: number;
  parallelCount: number;
  /** The layout's route of a long edge (View `points`): drawn through while its ends stay put. */
  points: [number, number][] | null;
}

export type SyNode = Node<SyNodeData, 'sy'>;
export type SyEdge = Edge<SyEdgeData, 'sy'>;

export const DEFAULT_W = 220;
export const DEFAULT_H = 64;

export function isMarker(kind: string): boolean {
  return kind === '__start__' || kind === '__end__';
}

interface KindStyle {
  icon: string;
  color: string;
  label: string;
}

const KIND_STYLES: Record<string, KindStyle> = {
  // sherma
  call_llm: { icon: '✦', color: '#4f7cff', label: 'LLM call' },
  tool_node: { icon: '⚒', color: '#e08a1e', label: 'tools' },
  call_agent: { icon: '⇲', color: '#8b5cf6', label: 'sub-agent' },
  data_transform: { icon: 'ƒ', color: '#0f9f8f', label: 'transform' },
  set_state: { icon: '≔', color: '#14a3b8', label: 'set state' },
  interrupt: { icon: '✋', color: '#d9a400', label: 'interrupt' },
  load_skills: { icon: '❖', color: '#c0568f', label: 'skills' },
  custom: { icon: '⚙', color: '#6b7280', label: 'custom' },
  // Loki
  llm: { icon: '✦', color: '#4f7cff', label: 'LLM' },
  agent: { icon: '⇲', color: '#8b5cf6', label: 'agent' },
  script: { icon: '›_', color: '#475569', label: 'script' },
  approval: { icon: '✓', color: '#16a34a', label: 'approval' },
  input: { icon: '✎', color: '#d9a400', label: 'input' },
  rag: { icon: '⌕', color: '#0891b2', label: 'RAG' },
  end: { icon: '■', color: '#dc2626', label: 'end' },
  map: { icon: '⇶', color: '#c2410c', label: 'map' },
  // LLLM configs (`agent` is Loki's above)
  global: { icon: '◎', color: '#0f9f8f', label: 'global' },
  base: { icon: '⤒', color: '#b7791f', label: 'base config' },
  // markers
  __start__: { icon: '▶', color: '#16a34a', label: 'start' },
  __end__: { icon: '■', color: '#dc2626', label: 'end' },
};

export function kindStyle(kind: string): KindStyle {
  return KIND_STYLES[kind] ?? { icon: '◆', color: '#64748b', label: kind };
}

function sameNode(a: ViewNode, b: ViewNode): boolean {
  return (
    a.kind === b.kind &&
    a.derived === b.derived &&
    (a.summary ?? '') === (b.summary ?? '') &&
    (a.errors ?? 0) === (b.errors ?? 0) &&
    (a.warnings ?? 0) === (b.warnings ?? 0) &&
    !!a.dynamic_next === !!b.dynamic_next &&
    (a.sub_agent ?? null) === (b.sub_agent ?? null) &&
    a.x === b.x &&
    a.y === b.y &&
    a.w === b.w &&
    a.h === b.h
  );
}

function sameEdge(a: ViewEdge, b: ViewEdge): boolean {
  return (
    a.from === b.from &&
    a.to === b.to &&
    a.kind === b.kind &&
    (a.label ?? null) === (b.label ?? null) &&
    !!a.derived === !!b.derived &&
    !!a.dynamic === !!b.dynamic &&
    !!a.fanout === !!b.fanout &&
    JSON.stringify(a.points ?? null) === JSON.stringify(b.points ?? null)
  );
}

/** Size of the node handles drawn by NodeCard (`.sy-handle` in styles.css). */
export const HANDLE_SIZE = 8;

/**
 * Where NodeCard's two handles sit (target top-centre, source bottom-centre), in node coordinates.
 * Declaring them lets React Flow draw edges and cull off-screen nodes before it has measured a
 * node; without them `onlyRenderVisibleElements` still mounts every unmeasured node once.
 */
export function nodeHandles(w: number, h: number): NonNullable<SyNode['handles']> {
  const x = w / 2 - HANDLE_SIZE / 2;
  return [
    { id: null, type: 'target', position: Position.Top, x, y: -HANDLE_SIZE / 2, width: HANDLE_SIZE, height: HANDLE_SIZE },
    { id: null, type: 'source', position: Position.Bottom, x, y: h - HANDLE_SIZE / 2, width: HANDLE_SIZE, height: HANDLE_SIZE },
  ];
}

export function toFlowNode(n: ViewNode, selected = false): SyNode {
  const marker = isMarker(n.kind);
  const w = n.w ?? (marker ? 120 : DEFAULT_W);
  const h = n.h ?? (marker ? 40 : DEFAULT_H);
  return {
    id: n.id,
    type: 'sy',
    position: { x: n.x ?? 0, y: n.y ?? 0 },
    width: w,
    height: h,
    handles: nodeHandles(w, h),
    selected,
    // Derived nodes are computed from other YAML; they can be looked at but not dragged around
    // into a position that means nothing to the file.
    draggable: true,
    connectable: !n.derived || marker,
    data: {
      id: n.id,
      kind: n.kind,
      derived: n.derived || marker,
      marker,
      summary: n.summary ?? '',
      errors: n.errors ?? 0,
      warnings: n.warnings ?? 0,
      dynamicNext: !!n.dynamic_next,
      subAgent: n.sub_agent ?? null,
    },
  };
}

/** The label drawn on an edge; `null` when the edge has none. */
export function edgeLabel(e: ViewEdge): string | null {
  if (e.dynamic) return e.label ? `dynamic · ${e.label}` : 'dynamic';
  if (e.label) return e.label;
  switch (e.kind) {
    case 'default':
      return 'default';
    case 'fallback':
      return 'fallback';
    case 'on_other':
      return 'other';
    default:
      return e.fanout ? 'fan-out' : null;
  }
}

export function edgeClass(e: ViewEdge): string {
  const c = ['sy-edge', `sy-edge-${e.kind}`];
  if (e.derived) c.push('sy-edge-derived');
  if (e.dynamic) c.push('sy-edge-dynamic');
  if (e.fanout) c.push('sy-edge-fanout');
  return c.join(' ');
}

export function edgeStroke(e: { kind: string; derived?: boolean; dynamic?: boolean; fanout?: boolean }): {
  stroke: string;
  dash?: string;
  width: number;
} {
  if (e.dynamic) return { stroke: 'var(--edge-dynamic)', dash: '2 4', width: 1.6 };
  let stroke = 'var(--edge)';
  if (e.kind === 'branch' || e.kind === 'route') stroke = 'var(--edge-branch)';
  else if (e.kind === 'fallback') stroke = 'var(--edge-fallback)';
  else if (e.kind === 'default' || e.kind === 'on_other') stroke = 'var(--edge-default)';
  return { stroke, dash: e.derived ? '6 4' : undefined, width: e.fanout ? 2.4 : 1.5 };
}

export function toFlowEdge(e: ViewEdge, selected = false, parallel = 0, parallelCount = 1): SyEdge {
  return {
    id: e.id,
    source: e.from,
    target: e.to,
    type: 'sy',
    selected,
    className: edgeClass(e),
    data: {
      kind: e.kind,
      label: edgeLabel(e),
      derived: !!e.derived,
      dynamic: !!e.dynamic,
      fanout: !!e.fanout,
      parallel,
      parallelCount,
      points: e.points && e.points.length ? e.points : null,
    },
  };
}

/** A mapper that keeps returning the same objects for nodes/edges that did not change. */
export function createFlowMapper() {
  let nodeCache = new Map<string, { src: ViewNode; sel: boolean; out: SyNode }>();
  let edgeCache = new Map<string, { src: ViewEdge; sel: boolean; out: SyEdge }>();

  function nodes(list: ViewNode[] | null | undefined, selectedId: string | null): SyNode[] {
    if (!list) {
      nodeCache = new Map();
      return [];
    }
    const next = new Map<string, { src: ViewNode; sel: boolean; out: SyNode }>();
    const out = list.map((n) => {
      const sel = n.id === selectedId;
      const prev = nodeCache.get(n.id);
      const entry = prev && prev.sel === sel && sameNode(prev.src, n) ? { ...prev, src: n } : { src: n, sel, out: toFlowNode(n, sel) };
      next.set(n.id, entry);
      return entry.out;
    });
    nodeCache = next;
    return out;
  }

  function edges(list: ViewEdge[] | null | undefined, selectedId: string | null): SyEdge[] {
    if (!list) {
      edgeCache = new Map();
      return [];
    }
    const next = new Map<string, { src: ViewEdge; sel: boolean; out: SyEdge }>();
    const pairCount = new Map<string, number>();
    for (const e of list) {
      const k = `${e.from}\u0000${e.to}`;
      pairCount.set(k, (pairCount.get(k) ?? 0) + 1);
    }
    const pairSeen = new Map<string, number>();
    const out = list.map((e) => {
      const sel = e.id === selectedId;
      const k = `${e.from}\u0000${e.to}`;
      const count = pairCount.get(k) ?? 1;
      const idx = pairSeen.get(k) ?? 0;
      pairSeen.set(k, idx + 1);
      const prev = edgeCache.get(e.id);
      const same = prev && prev.sel === sel && sameEdge(prev.src, e) && prev.out.data?.parallel === idx && prev.out.data?.parallelCount === count;
      const entry = same ? { ...prev, src: e } : { src: e, sel, out: toFlowEdge(e, sel, idx, count) };
      next.set(e.id, entry);
      return entry.out;
    });
    edgeCache = next;
    return out;
  }

  return { nodes, edges };
}
