import { memo } from 'react';
import { BaseEdge, EdgeLabelRenderer, getBezierPath, type EdgeProps } from '@xyflow/react';
import { edgeStroke, type SyEdge } from '../flow';

function EdgeLineImpl(props: EdgeProps<SyEdge>) {
  const { id, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, data, selected, markerEnd } = props;
  const count = data?.parallelCount ?? 1;
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
  return (
    <>
      <BaseEdge
        id={id}
        path={path}
        markerEnd={markerEnd}
        interactionWidth={14}
        style={{
          stroke: selected ? 'var(--accent)' : s.stroke,
          strokeWidth: selected ? s.width + 1 : s.width,
          strokeDasharray: s.dash,
        }}
      />
      {label ? (
        <EdgeLabelRenderer>
          <div
            data-testid="edge-label"
            data-edge-id={id}
            className={cls.join(' ')}
            style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }}
            title={label}
          >
            {label.length > 34 ? `${label.slice(0, 32)}…` : label}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
}

export const EdgeLine = memo(EdgeLineImpl);
