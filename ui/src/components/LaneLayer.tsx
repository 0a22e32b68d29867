import { memo } from 'react';
import { ViewportPortal } from '@xyflow/react';
import { laneTitle, type LaneBox } from './canvasLayout';

/**
 * Map lanes drawn behind the nodes and edges: a labelled box around each lane's nodes (and one
 * around nodes several lanes share), in canvas coordinates (they pan and zoom with the graph).
 */
function LaneLayerImpl({ boxes }: { boxes: LaneBox[] }) {
  if (boxes.length === 0) return null;
  return (
    <ViewportPortal>
      <div className="sy-lanes" data-testid="lanes">
        {boxes.map((b) => (
          <div
            key={`${b.shared ? 'shared:' : ''}${b.maps.join(',')}`}
            data-testid={b.shared ? 'lane-shared' : 'lane'}
            data-lane={b.maps.join(' ')}
            data-lane-nodes={b.nodes.join(' ')}
            className={`sy-lane${b.shared ? ' shared' : ''}`}
            style={{ transform: `translate(${b.x}px, ${b.y}px)`, width: b.w, height: b.h }}
            title={b.shared ? `in the lanes of ${b.maps.join(', ')}` : `${b.maps[0]}: runs once per item`}
          >
            <span className="sy-lane-title">{laneTitle(b)}</span>
          </div>
        ))}
      </div>
    </ViewportPortal>
  );
}

export const LaneLayer = memo(LaneLayerImpl);
