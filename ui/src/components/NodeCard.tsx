import { memo, useCallback } from 'react';
import { Handle, Position, useStore as useFlowStore, type NodeProps } from '@xyflow/react';
import { kindStyle, type SyNode } from '../flow';
import { useApp, useAppStore } from '../store';
import { BreakpointDot } from './debug/BreakpointDot';
import { nodeError, nodeInSelectedStep, nodeRunMark, nodeSteps, stepChip, stepsTitle, useDebugSafe } from './debug/canvasOverlay';
import { nodeMark } from '../diff/model';
import { useDiff } from '../diff/store';
import { nodeCoverage } from '../tests-panel/coverage';
import { useTests } from '../tests-panel/store';

/** Render counter, for tests that check memoization (compiled out of production builds). */
export const nodeRenders = { count: 0 };

/** Below this zoom level nodes are drawn as simple blocks (cheaper to paint, unreadable anyway). */
const FAR_ZOOM = 0.4;
const selectFar = (s: { transform: [number, number, number] }) => s.transform[2] < FAR_ZOOM;

function NodeCardImpl({ data, selected }: NodeProps<SyNode>) {
  if (import.meta.env.MODE === 'test') nodeRenders.count++;
  const store = useAppStore();
  const far = useFlowStore(selectFar);
  const style = kindStyle(data.kind);
  const openSub = useCallback(
    (ev: React.MouseEvent) => {
      ev.stopPropagation();
      if (data.subAgent) void store.getState().openPath(data.subAgent);
    },
    [store, data.subAgent],
  );

  // The debugger's overlay: narrow per-node selectors returning strings, so a batch of run events
  // re-renders only the nodes whose marks changed.
  const id = data.id;
  const run = useDebugSafe((s) => nodeRunMark(s, id), '');
  const steps = useDebugSafe((s) => nodeSteps(s, id), '');
  const runError = useDebugSafe((s) => nodeError(s, id), '');
  const inSelectedStep = useDebugSafe((s) => nodeInSelectedStep(s, id), false);
  // The graph diff's mark (added / changed / renamed since the compared version).
  const diffMark = useDiff((s) => nodeMark(s.diff, s.agent, id));
  // Routing coverage of the last test suite run (the Tests panel): how often the node ran.
  const viewAgent = useApp((s) => s.view?.agent ?? null);
  const covered = useTests((s) => nodeCoverage(s.onCanvas ? s.shown : null, viewAgent, id));

  const cls = ['sy-node'];
  if (!data.marker) cls.push('sy-node-bp-gutter');
  if (run) cls.push(`sy-run-${run}`);
  if (inSelectedStep) cls.push('sy-run-selected');
  if (data.derived) cls.push('sy-node-derived');
  if (data.marker) cls.push('sy-node-marker');
  if (selected) cls.push('sy-node-selected');
  if (diffMark) cls.push(`sy-node-diff-${diffMark}`);
  if (covered === '0') cls.push('sy-node-cov-never');
  if (data.errors > 0) cls.push('sy-node-error');
  else if (data.warnings > 0) cls.push('sy-node-warning');

  const badge =
    data.errors > 0 ? (
      <span data-testid="node-badge" className="sy-badge sy-badge-error" title={`${data.errors} error(s)${data.warnings ? `, ${data.warnings} warning(s)` : ''}`}>
        {data.errors}
      </span>
    ) : data.warnings > 0 ? (
      <span data-testid="node-badge" className="sy-badge sy-badge-warning" title={`${data.warnings} warning(s)`}>
        {data.warnings}
      </span>
    ) : null;

  const cov = covered ? (
    <span className="sy-cov" data-testid="node-coverage" title={covered === '0' ? 'no test case ran this node' : `ran ${covered} time(s) in the test suite`}>
      {covered}×
    </span>
  ) : null;

  const chip = steps ? (
    <span className="sy-steps" data-testid="node-steps">
      {stepChip(steps)}
    </span>
  ) : null;

  return (
    <div
      data-testid="node"
      data-node-id={data.id}
      data-kind={data.kind}
      data-derived={String(data.derived)}
      data-errors={String(data.errors)}
      data-run={run}
      data-diff={diffMark}
      data-steps={steps}
      className={cls.join(' ')}
      style={{ '--kind': style.color } as React.CSSProperties}
      title={`${data.id} (${data.kind})${data.summary ? `\n${data.summary}` : ''}${steps ? `\nran in ${stepsTitle(steps)}` : ''}${runError ? `\nerror: ${runError}` : ''}`}
    >
      <Handle type="target" position={Position.Top} className="sy-handle" />
      {data.marker ? null : <BreakpointDot node={id} />}
      {far ? (
        <div className="sy-far">
          <span className="sy-name">{data.marker ? (data.kind === '__start__' ? 'start' : 'end') : data.id}</span>
          {badge}
        </div>
      ) : data.marker ? (
        <div className="sy-marker">
          <span className="sy-icon">{style.icon}</span>
          <span className="sy-name">{data.kind === '__start__' ? 'start' : 'end'}</span>
          {chip}
          {cov}
          {badge}
        </div>
      ) : (
        <>
          <div className="sy-node-head">
            <span className="sy-icon" aria-hidden>
              {style.icon}
            </span>
            <span className="sy-name">{data.id}</span>
            {chip}
            {cov}
            {badge}
          </div>
          <div className="sy-node-sub">
            <span className="sy-kind">{data.derived ? `${style.label} · derived` : style.label}</span>
            {data.summary ? <span className="sy-summary">{data.summary}</span> : null}
            {data.dynamicNext ? <span className="sy-chip" title="routes at run time (_next)">dyn</span> : null}
            {data.subAgent ? (
              <button type="button" className="sy-open nodrag" data-testid="open-sub-agent" onClick={openSub} title={`Open ${data.subAgent}`}>
                open ↗
              </button>
            ) : null}
          </div>
        </>
      )}
      <Handle type="source" position={Position.Bottom} className="sy-handle" />
    </div>
  );
}

export const NodeCard = memo(NodeCardImpl);
