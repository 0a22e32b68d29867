import { memo } from 'react';
import { BaseEdge, EdgeLabelRenderer, getBezierPath, type EdgeProps } from '@xyflow/react';
import { edgeStroke, type SyEdge } from '../flow';
import { edgeTakenKey, parseEdgeTaken, stepsTitle, useDebugSafe } from './debug/canvasOverlay';

function EdgeLineImpl(props: EdgeProps<SyEdge>) {
  const { id, source, target, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, data, selected, markerEnd } = props;
  const count = data?.parallelCount ?? 1;
  // The debugger's overlay: whether (and why) the run took this edge; one string per edge.
  const kind = data?.kind ?? 'static';
  const rawLabel = data?.label ?? null;
  const dynamic = !!data?.dynamic;
  const takenKey = useDebugSafe(
    (s) => edgeTakenKey(s, { source, target, kind, label: rawLabel, dynamic, parallelCount: count }),
    '',
  );
  const taken = parseEdgeTaken(takenKey);
  let path: string;
  let labelX: number;
  let labelY: number;
  if (count > 1) {
    // Several edges between the same two nodes: fan them out so each stays visible and clickable.
    const off = ((data?.parallel ?? 0) - (count - 1) / 2) * 70;
    const dy = Math.max(40, Math.abs(targetY - sourceY) / 2);
    path = `M${sourceX},${sourceY} C${sourceX + off},${sourceY + dy} ${targetX + off},${targetY - dy} ${targetX},${targetY}`;
    labelX = (sourceX + targetX) / 2 + off * 0.75;
    labelY = (sourceY + targetY) / 2 + ((data?.parallel ?? 0) - (count - 1) / 2) * 20;
  } else {
    [path, labelX, labelY] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  }
  const s = edgeStroke(data ?? { kind: 'static' });
  const label = data?.label ?? null;
  const cls = ['sy-edge-label'];
  if (data?.dynamic) cls.push('dynamic');
  if (data?.derived) cls.push('derived');
  if (data?.kind) cls.push(`k-${data.kind}`);
  if (selected) cls.push('selected');
  if (taken) cls.push('taken');
  const stepsText = taken?.steps ? stepsTitle(taken.steps) : '';
  return (
    <>
      <BaseEdge
        id={id}
        path={path}
        markerEnd={markerEnd}
        interactionWidth={14}
        className={taken ? `sy-edge-taken${taken.last ? ' sy-edge-last' : ''}` : undefined}
        style={{
          stroke: selected ? 'var(--accent)' : taken ? (taken.last ? 'var(--run-current)' : 'var(--run-taken)') : s.stroke,
          strokeWidth: selected ? s.width + 1 : taken ? s.width + 1.2 : s.width,
          strokeDasharray: taken?.last ? '7 5' : taken ? undefined : s.dash,
        }}
      />
      {taken?.reason ? (
        // Taken with a reason: the reason (which says more than the edge's own label) takes the
        // label's place while the run is shown.
        <EdgeLabelRenderer>
          <div
            data-testid="edge-reason"
            data-edge-id={id}
            data-taken="true"
            className={`sy-edge-reason${taken.last ? ' last' : ''}`}
            style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }}
            title={`${label && label !== taken.reason ? `${label}\n` : ''}taken: ${taken.reason}${stepsText ? ` (${stepsText})` : ''}`}
          >
            {taken.reason}
          </div>
        </EdgeLabelRenderer>
      ) : label ? (
        <EdgeLabelRenderer>
          <div
            data-testid="edge-label"
            data-edge-id={id}
            className={cls.join(' ')}
            style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }}
            title={taken?.steps ? `${label}\ntaken: ${stepsText}` : label}
          >
            {label.length > 34 ? `${label.slice(0, 32)}…` : label}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
}

export const EdgeLine = memo(EdgeLineImpl);
