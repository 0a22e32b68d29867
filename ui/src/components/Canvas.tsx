import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import {
  Background,
  BackgroundVariant,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  applyNodeChanges,
  getViewportForBounds,
  useReactFlow,
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
  const [nodes, setNodes] = useState<SyNode[]>([]);

  const selNode = selection?.type === 'node' ? selection.id : null;
  const selEdge = selection?.type === 'edge' ? selection.id : null;

  // Rebuild nodes when the view or the selection changes, keeping the local object (which may
  // carry measurements) for every node the mapper reports as unchanged.
  useEffect(() => {
    const mapped = mapper.nodes(viewNodes, selNode);
    const prev = lastMapped.current;
    setNodes((local) => {
      const byId = new Map(local.map((n) => [n.id, n]));
      return mapped.map((m) => {
        const l = byId.get(m.id);
        return prev.get(m.id) === m && l ? l : m;
      });
    });
    lastMapped.current = new Map(mapped.map((m) => [m.id, m]));
  }, [viewNodes, selNode, mapper]);

  const edges = useMemo(() => mapper.edges(viewEdges, selEdge), [viewEdges, selEdge, mapper]);

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

  // Fit the graph when another document or agent is shown. The bounds come from the engine's
  // layout (React Flow's own fitView only sees nodes it has rendered and measured, which with
  // `onlyRenderVisibleElements` is not all of them). Big graphs open on their first nodes.
  const docKey = useApp((s) => (s.view ? `${s.view.path}#${s.view.agent ?? ''}` : ''));
  const flowStore = useStoreApi<SyNode, SyEdge>();
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
        vp = getViewportForBounds(viewBounds(all), width, height, 0.05, 1.2, { top: '40px', bottom: 0.12, x: 0.12 });
      }
      void flow.setViewport(vp);
    }, 30);
    return () => window.clearTimeout(t);
  }, [docKey, flow, flowStore, store]);

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
        {showMiniMap ? <MiniMap<SyNode> pannable zoomable nodeColor={minimapColor} nodeStrokeWidth={0} style={{ width: 140, height: 96 }} /> : null}
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
