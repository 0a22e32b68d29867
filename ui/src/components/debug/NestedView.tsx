// The graph of a nested run (a sherma sub-agent, a Loki `agent` node) while the run is paused
// inside it (Step Into, F11): laid over the canvas, read-only, with the nested node about to run
// marked as current and the nested nodes that ran marked as visited. Its state is in the State
// tab (StateTree shows the nested run's state while the pause lasts). The graph comes from the
// engine (`nested_view`), fetched once per file and agent for the run.
import { createContext, memo, useContext, useEffect, useMemo } from 'react';
import {
  Background,
  BackgroundVariant,
  BaseEdge,
  Controls,
  EdgeLabelRenderer,
  Handle,
  Position,
  ReactFlow,
  ReactFlowProvider,
  getBezierPath,
  type EdgeProps,
  type NodeProps,
} from '@xyflow/react';
import '../../debug/debug.css';
import { createFlowMapper, edgeStroke, kindStyle, type SyEdge, type SyNode } from '../../flow';
import { nestedViewKey, shownNestedPause, useDebug, useDebugStore } from '../../debug/store';
import type { NestedPause } from '../../debug/model';
import type { ViewEdge, ViewNode } from '../../types';
import { useDarkTheme } from '../../theme';
import { defaultEdgeOptions, flowKeysOff } from '../Canvas';
import { JsonView } from './JsonView';
import { stepChip, stepsSummary, stepsTitle } from './canvasOverlay';

interface Marks {
  current: string[];
  visited: Record<string, number[]>;
}

const MarksContext = createContext<Marks>({ current: [], visited: {} });

/** A nested node: the canvas card's look, no editing, no breakpoint dot, no overlay of the
 *  top-level run. */
const NestedNodeCard = memo(function NestedNodeCard({ data }: NodeProps<SyNode>) {
  const marks = useContext(MarksContext);
  const style = kindStyle(data.kind);
  const current = marks.current.includes(data.id);
  const steps = marks.visited[data.id];
  const summary = steps?.length ? stepsSummary(steps) : '';
  const run = current ? 'current' : summary ? 'visited' : '';
  const cls = ['sy-node', 'sy-node-nested'];
  if (run) cls.push(`sy-run-${run}`);
  if (data.derived) cls.push('sy-node-derived');
  if (data.marker) cls.push('sy-node-marker');
  const name = data.marker ? (data.kind === '__start__' ? 'start' : 'end') : data.id;
  return (
    <div
      data-testid="nested-node"
      data-node-id={data.id}
      data-kind={data.kind}
      data-run={run}
      data-current={current ? 'true' : 'false'}
      data-steps={summary}
      className={cls.join(' ')}
      style={{ '--kind': style.color } as React.CSSProperties}
      title={`${data.id} (${data.kind})${data.summary ? `\n${data.summary}` : ''}${current ? '\nruns next' : ''}${summary ? `\nran in nested ${stepsTitle(summary)}` : ''}`}
    >
      <Handle type="target" position={Position.Top} className="sy-handle" isConnectable={false} />
      {data.marker ? (
        <div className="sy-marker">
          <span className="sy-icon">{style.icon}</span>
          <span className="sy-name">{name}</span>
        </div>
      ) : (
        <>
          <div className="sy-node-head">
            <span className="sy-icon" aria-hidden>
              {style.icon}
            </span>
            <span className="sy-name">{name}</span>
            {summary ? <span className="sy-steps">{stepChip(summary)}</span> : null}
          </div>
          <div className="sy-node-sub">
            <span className="sy-kind">{data.derived ? `${style.label} · derived` : style.label}</span>
            {data.summary ? <span className="sy-summary">{data.summary}</span> : null}
          </div>
        </>
      )}
      <Handle type="source" position={Position.Bottom} className="sy-handle" isConnectable={false} />
    </div>
  );
});

const NestedEdge = memo(function NestedEdge(props: EdgeProps<SyEdge>) {
  const { id, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, data, markerEnd } = props;
  const [path, labelX, labelY] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  const s = edgeStroke(data ?? { kind: 'static' });
  const label = data?.label ?? null;
  return (
    <>
      <BaseEdge id={id} path={path} markerEnd={markerEnd} style={{ stroke: s.stroke, strokeWidth: s.width, strokeDasharray: s.dash }} />
      {label ? (
        <EdgeLabelRenderer>
          <div
            className={`sy-edge-label${data?.kind ? ` k-${data.kind}` : ''}`}
            style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }}
            title={label}
          >
            {label.length > 34 ? `${label.slice(0, 32)}…` : label}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
});

// Defined once, outside components (React Flow re-creates every node if these change identity).
const nodeTypes = { sy: NestedNodeCard };
const edgeTypes = { sy: NestedEdge };
const proOptions = { hideAttribution: true };

/** The breadcrumb of a nested pause: the top-level agent, then each node and agent down to the
 *  nested run (`support › research › researcher`). */
export function nestedCrumbs(p: NestedPause, topAgent: string | null, agents: Record<string, { agent: string | null }>): string[] {
  const parts = p.run.split('/');
  const out: string[] = [topAgent || parts[0]];
  for (let i = 1; i < parts.length; i++) {
    out.push(parts[i]);
    const run = parts.slice(0, i + 1).join('/');
    const agent = i === parts.length - 1 ? p.agent || agents[run]?.agent : agents[run]?.agent;
    if (agent) out.push(agent);
  }
  return out;
}

function NestedGraph({ pause, nodes: viewNodes, edges: viewEdges }: { pause: NestedPause; nodes: ViewNode[]; edges: ViewEdge[] }) {
  const dark = useDarkTheme();
  const visited = useDebug((s) => s.model.nestedRuns[pause.run]?.visited);
  const mapper = useMemo(() => createFlowMapper(), []);
  const marks = useMemo<Marks>(() => ({ current: pause.due, visited: visited ?? {} }), [pause.due, visited]);
  const mapped = useMemo(() => mapper.nodes(viewNodes, null), [mapper, viewNodes]);
  // The wrapper React Flow draws (`.react-flow__node[data-id]`) carries the marks as classes too.
  const nodes = useMemo(
    () =>
      mapped.map((n) => {
        const cls = marks.current.includes(n.id) ? 'is-current' : marks.visited[n.id]?.length ? 'is-visited' : undefined;
        return { ...n, draggable: false, connectable: false, selectable: false, className: cls };
      }),
    [mapped, marks],
  );
  const edges = useMemo(() => mapper.edges(viewEdges, null), [mapper, viewEdges]);
  return (
    <MarksContext.Provider value={marks}>
      <ReactFlow<SyNode, SyEdge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        defaultEdgeOptions={defaultEdgeOptions}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        {...flowKeysOff}
        fitView
        fitViewOptions={{ padding: 0.12, maxZoom: 1.2 }}
        minZoom={0.05}
        maxZoom={2.5}
        colorMode={dark ? 'dark' : 'light'}
        proOptions={proOptions}
      >
        <Background variant={BackgroundVariant.Dots} gap={18} size={1} />
        <Controls showInteractive={false} />
      </ReactFlow>
    </MarksContext.Provider>
  );
}

export function NestedView() {
  const dbg = useDebugStore();
  const pause = useDebug(shownNestedPause);
  const topAgent = useDebug((s) => s.model.agent ?? s.info?.agent ?? null);
  const runs = useDebug((s) => s.model.nestedRuns);
  const file = pause?.file ?? null;
  const agent = pause?.agent || null;
  const entry = useDebug((s) => (file ? s.nestedViews[nestedViewKey(file, agent)] : undefined));

  useEffect(() => {
    if (file) void dbg.getState().loadNestedView(file, agent);
  }, [dbg, file, agent]);

  if (!pause) return null;
  const crumbs = nestedCrumbs(pause, topAgent, runs);
  const due = pause.due.join(', ');
  const view = entry?.view ?? null;
  const problem = !file
    ? `${pause.agent || 'This nested agent'} has no file of its own, so its graph cannot be drawn.`
    : entry?.error
      ? `The graph of ${pause.agent || 'the nested agent'} could not be read: ${entry.error}`
      : view && view.nodes.length === 0
        ? `${pause.agent || 'The nested agent'} has no nodes to draw.`
        : null;

  return (
    <div className="nested-view" data-testid="nested-view" data-run={pause.run} data-agent={pause.agent} data-depth={pause.depth} data-file={file ?? ''}>
      <div className="nested-breadcrumb" data-testid="nested-breadcrumb" role="status">
        <span className="nested-path" data-testid="nested-path" title={`nested run ${pause.run}${file ? `\n${file}` : ''}`}>
          {crumbs.map((c, i) => (
            <span key={i} className={i === crumbs.length - 1 ? 'nested-crumb last' : 'nested-crumb'}>
              {i > 0 ? <span className="nested-sep"> › </span> : null}
              {c}
            </span>
          ))}
        </span>
        <span className="nested-where">
          {due ? `paused before ${due}` : 'paused'} · nested step {pause.step}
        </span>
        <span className="nested-hint muted">Step Out (Shift+F11) returns to the parent</span>
        <span className="spacer" />
        <button type="button" className="link" data-testid="nested-show-state" onClick={() => dbg.getState().setPanelTab('state')} title="Show the nested run's state in the debugger panel">
          State
        </button>
      </div>
      <div className="nested-body">
        {problem ? (
          <div className="nested-problem">
            <div className="nested-error" data-testid="nested-view-error" role="alert">
              {problem}
            </div>
            <div className="nested-state" data-testid="nested-view-state">
              <div className="muted small">State of the nested run (editable in the State tab):</div>
              <JsonView value={pause.state} open={1} />
            </div>
          </div>
        ) : view ? (
          <ReactFlowProvider key={`${file}#${agent ?? ''}`}>
            <NestedGraph pause={pause} nodes={view.nodes} edges={view.edges} />
          </ReactFlowProvider>
        ) : (
          <div className="nested-problem muted" data-testid="nested-view-loading">
            Loading the graph of {pause.agent || 'the nested agent'}…
          </div>
        )}
      </div>
    </div>
  );
}
