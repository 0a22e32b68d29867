import { memo } from 'react';
import { BaseEdge, EdgeLabelRenderer, getBezierPath, type EdgeProps } from '@xyflow/react';
import { edgeStroke, type SyEdge } from '../flow';

function EdgeLineImpl(props: EdgeProps<SyEdge>) {
  const { id, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, data, selected, markerEnd } = props;
  const [path, labelX, labelY] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
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
            {label.length > 42 ? `${label.slice(0, 40)}…` : label}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
}

export const EdgeLine = memo(EdgeLineImpl);
