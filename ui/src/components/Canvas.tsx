import { useCallback, useContext, useEffect, useMemo, useRef, useState } from 'react';
import {
  Background,
  BackgroundVariant,
  ControlButton,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  applyNodeChanges,
  getViewportForBounds,
  useReactFlow,
  useStore as useFlowStore,
  useStoreApi,
  type Connection,
  type EdgeMouseHandler,
  type NodeChange,
  type NodeMouseHandler,
  type OnNodeDrag,
} from '@xyflow/react';
import { createFlowMapper, kindStyle, type SyEdge, type SyNode } from '../flow';
import { useApp, useAppStore, selectEdges, selectNodes } from '../store';
import { NodeCard } from './NodeCard';
import { EdgeLine } from './EdgeLine';
import { useDarkTheme } from '../theme';
import { whenIdle } from '../idle';
import { LaneLayer } from './LaneLayer';
import { DiffGhosts } from '../diff/Ghosts';
import { EdgePlanContext, type EdgePlan } from './canvasContext';
import { edgeSegments, freeCorner, laneBoxes, laneTitleRect, placeLabels, samplePath, sourcePoint, targetPoint, type LabelInput, type Rect } from './canvasLayout';
import { parallelOffset, usableRoute } from './EdgeLine';

// Defined once, outside components (React Flow re-creates every node if these change identity).
const nodeTypes = { sy: NodeCard };
const edgeTypes = { sy: EdgeLine };
export const defaultEdgeOptions = { markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 } };
/** React Flow's own delete and selection keys, off: the app binds its keys itself. */
export const flowKeysOff = { deleteKeyCode: null, selectionKeyCode: null, multiSelectionKeyCode: null } as const;
const proOptions = { hideAttribution: true };
const minimapColor = (n: SyNode) => kindStyle(n.data.kind).color;

export function viewBounds(nodes: { x: number; y: number; w?: number; h?: number }[]) {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const n of nodes) {
    x0 = Math.min(x0, n.x);
    y0 = Math.min(y0, n.y);
    x1 = Math.max(x1, n.x + (n.w ?? 220));
    y1 = Math.max(y1, n.y + (n.h ?? 64));
  }
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** Above this many nodes only what is on screen is rendered. */
const VISIBLE_ONLY_THRESHOLD = 300;

/** The minimap's width and its margins: kept free on the right when a document is fitted. */
const MINI_STRIP = 140 + 30;

/** Fitting a document of READABLE_MIN_NODES nodes or more never zooms out below this while its
 *  width still fits (nodes stay readable; the rest is a pan or the minimap away). A smaller
 *  document always fits whole. */
export const READABLE_ZOOM = 0.75;
export const READABLE_MIN_NODES = 12;

/**
 * The viewport showing a document: all of it when that keeps nodes readable (or it is small);
 * else its top at READABLE_ZOOM (or the zoom fitting its width, when that is larger than the
 * fit), centred.
 */
export function fitViewport(nodes: { x: number; y: number; w?: number; h?: number }[], paneWidth: number, height: number) {
  const b = viewBounds(nodes);
  // The minimap's column on the right stays clear where the pane is wide enough to spare it.
  const width = paneWidth > 3 * MINI_STRIP ? paneWidth - MINI_STRIP : paneWidth;
  const fit = getViewportForBounds(b, width, height, 0.05, 1.2, { top: '40px', bottom: 0.12, x: 0.12 });
  const widthZoom = Math.min(1.2, (width * 0.88) / Math.max(1, b.width));
  if (nodes.length < READABLE_MIN_NODES) return fit;
  const zoom = Math.max(fit.zoom, Math.min(READABLE_ZOOM, widthZoom));
  if (zoom <= fit.zoom + 1e-3) return fit;
  const x = b.width * zoom <= width ? (width - b.width * zoom) / 2 - b.x * zoom : 24 - b.x * zoom;
  return { x, y: 40 - b.y * zoom, zoom };
}

/**
 * How far to pan sideways so that a box from `left` to `right` (screen px) shows in a pane
 * `width` wide, `margin` clear of its edges (its left edge first when it is wider than the pane);
 * 0 when it shows already.
 */
export function panToShow(left: number, right: number, width: number, margin = 24): number {
  let dx = 0;
  if (right > width - margin) dx = width - margin - right;
  if (left + dx < margin) dx = margin - left;
  return Math.round(dx);
}

/** Where an edge is drawn, for placing labels: the same geometry EdgeLine draws. */
function labelInputs(edges: SyEdge[], rects: Map<string, Rect>, moved: Set<string>, selEdge: string | null): LabelInput[] {
  const out: LabelInput[] = [];
  for (const e of edges) {
    const text = e.data?.label;
    const a = rects.get(e.source);
    const b = rects.get(e.target);
    if (!text || !a || !b) continue;
    const route = usableRoute(e.data?.points, e.source, e.target, moved);
    const offset = parallelOffset(e.data?.parallel ?? 0, e.data?.parallelCount ?? 1);
    const segs = edgeSegments(sourcePoint(a), targetPoint(b), route, offset);
    out.push({ id: e.id, text, samples: samplePath(segs), priority: e.id === selEdge, side: offset < 0 ? -1 : offset > 0 ? 1 : undefined });
  }
  return out;
}

const MINI_W = 140;
const MINI_H = 96;

/**
 * The minimap in the first corner of the pane where it covers no node (bottom right, then top
 * right); none while every corner would cover one, or while the user turned it off.
 */
function PlacedMiniMap({ off }: { off: boolean }) {
  // Edge labels count as much as nodes: the minimap covers neither.
  const plan = useContext(EdgePlanContext);
  const corner = useFlowStore((s) => {
    const { transform, width, height, nodes } = s;
    if (!width || !height) return 'bottom-right';
    const [tx, ty, k] = transform;
    const rects: Rect[] = [];
    const add = (x: number, y: number, w: number, h: number) => {
      if (x + w < 0 || y + h < 0 || x > width || y > height) return;
      rects.push({ x, y, w, h });
    };
    for (const n of nodes) add(n.position.x * k + tx, n.position.y * k + ty, (n.width ?? 220) * k, (n.height ?? 64) * k);
    for (const l of plan?.labels.values() ?? []) if (l) add((l.x - l.w / 2) * k + tx, (l.y - l.h / 2) * k + ty, l.w * k, l.h * k);
    return freeCorner({ width, height }, rects, MINI_W, MINI_H, ['bottom-right', 'top-right']) ?? 'none';
  });
  if (off || corner === 'none') return null;
  return (
    <MiniMap<SyNode>
      pannable
      zoomable
      position={corner as 'bottom-right' | 'top-right'}
      nodeColor={minimapColor}
      nodeStrokeWidth={0}
      style={{ width: MINI_W, height: MINI_H }}
    />
  );
}

export function Canvas() {
  const store = useAppStore();
  const viewNodes = useApp(selectNodes);
  const viewEdges = useApp(selectEdges);
  const selection = useApp((s) => s.selection);
  const focus = useApp((s) => s.focus);
  const dark = useDarkTheme();
  const flow = useReactFlow<SyNode, SyEdge>();

  const mapper = useMemo(() => createFlowMapper(), []);
  const lastMapped = useRef(new Map<string, SyNode>());
  const selNode = selection?.type === 'node' ? selection.id : null;
  // The first render already has the document's nodes (one render and frame sooner on screen).
  const [nodes, setNodes] = useState<SyNode[]>(() => mapper.nodes(viewNodes, selNode));

  const selEdge = selection?.type === 'edge' ? selection.id : null;

  // Rebuild nodes when the view or the selection changes, keeping the local object (which may
  // carry measurements) for every node the mapper reports as unchanged.
  useEffect(() => {
    const mapped = mapper.nodes(viewNodes, selNode);
    const prev = lastMapped.current;
    setNodes((local) => {
      const byId = new Map(local.map((n) => [n.id, n]));
      const next = mapped.map((m) => {
        const l = byId.get(m.id);
        return prev.get(m.id) === m && l ? l : m;
      });
      return next.length === local.length && next.every((n, i) => n === local[i]) ? local : next;
    });
    lastMapped.current = new Map(mapped.map((m) => [m.id, m]));
  }, [viewNodes, selNode, mapper]);

  const edges = useMemo(() => mapper.edges(viewEdges, selEdge), [viewEdges, selEdge, mapper]);

  // Map lanes and edge labels are placed from the boxes on screen: the local ones (a node being
  // dragged included), or on big documents the View's (placing them on every drag frame costs).
  const lanes = useApp((s) => s.view?.lanes);
  const bigView = (viewNodes?.length ?? 0) > VISIBLE_ONLY_THRESHOLD;
  const rects = useMemo(() => {
    const m = new Map<string, Rect>();
    if (bigView) for (const n of viewNodes ?? []) m.set(n.id, { x: n.x, y: n.y, w: n.w ?? 220, h: n.h ?? 64 });
    else for (const n of nodes) m.set(n.id, { x: n.position.x, y: n.position.y, w: n.width ?? 220, h: n.height ?? 64 });
    return m;
  }, [bigView, viewNodes, nodes]);
  const moved = useMemo(() => {
    const out = new Set<string>();
    if (bigView) return out;
    const byId = new Map((viewNodes ?? []).map((v) => [v.id, v]));
    for (const n of nodes) {
      const v = byId.get(n.id);
      if (v && (v.x !== n.position.x || v.y !== n.position.y)) out.add(n.id);
    }
    return out;
  }, [bigView, viewNodes, nodes]);
  const boxes = useMemo(() => laneBoxes(rects, lanes ?? []), [rects, lanes]);
  const plan: EdgePlan = useMemo(() => {
    const obstacles = [...rects.values(), ...boxes.map(laneTitleRect)];
    return { labels: placeLabels(labelInputs(edges, rects, moved, selEdge), obstacles), moved };
  }, [edges, rects, moved, boxes, selEdge]);
  // The minimap's button under the zoom controls; remembered with the panes.
  const miniOff = useApp((s) => !s.panes.minimap);
  const setMiniOff = useCallback((off: boolean) => store.getState().setPanes({ minimap: !off }), [store]);

  const onNodesChange = useCallback((changes: NodeChange<SyNode>[]) => {
    // Selection and removal go through the store and the engine, not React Flow.
    const keep = changes.filter((c) => c.type !== 'select' && c.type !== 'remove');
    if (keep.length) setNodes((ns) => applyNodeChanges(keep, ns));
  }, []);

  const onNodeClick: NodeMouseHandler<SyNode> = useCallback(
    (_ev, node) => store.getState().select({ type: 'node', id: node.id }),
    [store],
  );
  const onEdgeClick: EdgeMouseHandler<SyEdge> = useCallback(
    (_ev, edge) => store.getState().select({ type: 'edge', id: edge.id }),
    [store],
  );
  const onPaneClick = useCallback(() => store.getState().select(null), [store]);
  const onConnect = useCallback(
    (c: Connection) => {
      if (c.source && c.target) void store.getState().edit({ op: 'add_edge', from: c.source, to: c.target });
    },
    [store],
  );
  const onNodeDragStop: OnNodeDrag<SyNode> = useCallback(
    (_ev, _node, dragged) => {
      const view = store.getState().view;
      if (!view) return;
      const positions: Record<string, { x: number; y: number }> = {};
      for (const n of dragged) {
        const orig = view.nodes.find((v) => v.id === n.id);
        if (!orig || orig.x !== n.position.x || orig.y !== n.position.y) {
          positions[n.id] = { x: Math.round(n.position.x), y: Math.round(n.position.y) };
        }
      }
      if (Object.keys(positions).length) void store.getState().setPositions(positions);
    },
    [store],
  );

  // Centre on a node asked for by search or the problems list.
  useEffect(() => {
    if (!focus) return;
    const n = store.getState().view?.nodes.find((x) => x.id === focus.id);
    if (!n) return;
    const w = n.w ?? 220;
    const h = n.h ?? 64;
    void flow.setCenter(n.x + w / 2, n.y + h / 2, { zoom: Math.max(flow.getZoom(), 0.9), duration: 250 });
  }, [focus, flow, store]);

  // When the canvas changes width (a pane opening or closing beside it, the window resized),
  // what was in its middle stays in its middle; the selected node stays in view (the inspector
  // opening beside it, or a node selected half off-screen): the view pans sideways just enough.
  const paneWidth = useFlowStore((s) => s.width);
  const flowStore = useStoreApi<SyNode, SyEdge>();
  const lastWidth = useRef(0);
  useEffect(() => {
    const before = lastWidth.current;
    lastWidth.current = paneWidth;
    if (!paneWidth) return;
    const { x: tx, y: ty, zoom } = flow.getViewport();
    const all = store.getState().view?.nodes ?? [];
    // A graph that showed whole (as fitted) is fitted again to the new width, unless the user is
    // on a node (the inspector opening beside it must not zoom the view under them).
    if (before && before !== paneWidth && !selNode && all.length > 0 && all.length <= VISIBLE_ONLY_THRESHOLD) {
      const b = viewBounds(all);
      const { height } = flowStore.getState();
      if (height && b.x * zoom + tx >= -1 && (b.x + b.width) * zoom + tx <= before + 1 && b.y * zoom + ty >= -1 && (b.y + b.height) * zoom + ty <= height + 1) {
        void flow.setViewport(fitViewport(all, paneWidth, height));
        return;
      }
    }
    let dx = before ? Math.round((paneWidth - before) / 2) : 0;
    const n = selNode ? store.getState().view?.nodes.find((x) => x.id === selNode) : undefined;
    if (n) dx += panToShow(n.x * zoom + tx + dx, (n.x + (n.w ?? 220)) * zoom + tx + dx, paneWidth);
    if (dx !== 0) void flow.setViewport({ x: tx + dx, y: ty, zoom }, { duration: before && before !== paneWidth ? 0 : 150 });
  }, [selNode, paneWidth, flow, store, flowStore]);

  // Fit the graph when another document or agent is shown. The bounds come from the engine's
  // layout (React Flow's own fitView only sees nodes it has rendered and measured, which with
  // `onlyRenderVisibleElements` is not all of them). Big graphs open on their first nodes.
  const docKey = useApp((s) => (s.view ? `${s.view.path}#${s.view.agent ?? ''}` : ''));
  useEffect(() => {
    if (!docKey) return;
    const t = window.setTimeout(() => {
      const all = store.getState().view?.nodes ?? [];
      if (all.length === 0) return;
      const { width, height } = flowStore.getState();
      if (!width || !height) return;
      let vp;
      if (all.length > VISIBLE_ONLY_THRESHOLD) {
        // Start at the entry: the first node in file order, top-centre, at a readable zoom.
        const first = [...all].sort((a, b) => (a.order ?? 0) - (b.order ?? 0) || a.y - b.y || a.x - b.x)[0];
        const zoom = 0.8;
        vp = { x: width / 2 - (first.x + (first.w ?? 220) / 2) * zoom, y: 40 - first.y * zoom, zoom };
      } else {
        // 40 px at the top keep the first row clear of the pane toggles drawn over the canvas.
        vp = fitViewport(all, width, height);
      }
      void flow.setViewport(vp);
    }, 30);
    return () => window.clearTimeout(t);
  }, [docKey, flow, flowStore, store]);

  // The fit button: the same readable fit as on opening (React Flow's own fit zooms out until
  // everything shows, however small).
  const onFitView = useCallback(() => {
    const all = store.getState().view?.nodes ?? [];
    const { width, height } = flowStore.getState();
    if (all.length === 0 || !width || !height) return;
    if (all.length > VISIBLE_ONLY_THRESHOLD) void flow.fitView({ duration: 200 });
    else void flow.setViewport(fitViewport(all, width, height), { duration: 200 });
  }, [flow, flowStore, store]);

  const big = nodes.length > VISIBLE_ONLY_THRESHOLD;

  // The minimap draws every node: on a big document it joins once the canvas has been painted.
  const bigDoc = (viewNodes?.length ?? 0) > VISIBLE_ONLY_THRESHOLD;
  const [miniMapFor, setMiniMapFor] = useState('');
  useEffect(() => {
    if (!bigDoc) return;
    return whenIdle(() => setMiniMapFor(docKey));
  }, [bigDoc, docKey]);
  const showMiniMap = !bigDoc || miniMapFor === docKey;

  return (
    <div className="canvas" data-testid="canvas">
      <EdgePlanContext.Provider value={plan}>
      <ReactFlow<SyNode, SyEdge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        defaultEdgeOptions={defaultEdgeOptions}
        onNodesChange={onNodesChange}
        onNodeClick={onNodeClick}
        onEdgeClick={onEdgeClick}
        onPaneClick={onPaneClick}
        onConnect={onConnect}
        onNodeDragStop={onNodeDragStop}
        {...flowKeysOff}
        onlyRenderVisibleElements={big}
        minZoom={0.05}
        maxZoom={2.5}
        colorMode={dark ? 'dark' : 'light'}
        proOptions={proOptions}
        elevateEdgesOnSelect
      >
        <Background variant={BackgroundVariant.Dots} gap={18} size={1} />
        <LaneLayer boxes={boxes} />
        <DiffGhosts rects={rects} />
        {showMiniMap ? <PlacedMiniMap off={miniOff} /> : null}
        <Controls showInteractive={false} showFitView={false}>
          <ControlButton onClick={onFitView} className="react-flow__controls-fitview" title="Fit view" aria-label="Fit view" data-testid="fit-view">
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 30" aria-hidden>
              <path d="M3.692 4.63c0-.53.4-.938.939-.938h5.215V0H4.708C2.13 0 0 2.054 0 4.63v5.216h3.692V4.631zM27.354 0h-5.2v3.692h5.17c.53 0 .984.4.984.939v5.215H32V4.631A4.624 4.624 0 0027.354 0zm.954 24.83c0 .532-.4.94-.939.94h-5.215v3.768h5.215c2.577 0 4.631-2.13 4.631-4.707v-5.139h-3.692v5.139zm-23.677.94c-.531 0-.939-.4-.939-.94v-5.138H0v5.139c0 2.577 2.13 4.707 4.708 4.707h5.138V25.77H4.631z" />
            </svg>
          </ControlButton>
          <ControlButton
            onClick={() => setMiniOff(!miniOff)}
            title={miniOff ? 'Show the minimap' : 'Hide the minimap'}
            aria-label={miniOff ? 'Show the minimap' : 'Hide the minimap'}
            data-testid="minimap-toggle"
            className={miniOff ? undefined : 'on'}
          >
            ▦
          </ControlButton>
        </Controls>
      </ReactFlow>
      </EdgePlanContext.Provider>
    </div>
  );
}
