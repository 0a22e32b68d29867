import { memo, useContext } from 'react';
import { BaseEdge, EdgeLabelRenderer, type EdgeProps } from '@xyflow/react';
import { edgeStroke, type SyEdge } from '../flow';
import { edgeTakenKey, parseEdgeTaken, stepsTitle, useDebugSafe } from './debug/canvasOverlay';
import { edgeSegments, pointAlong, samplePath, segmentsPath, type Pt } from './canvasLayout';
import { EdgePlanContext } from './canvasContext';
import { StoreContext } from '../store';
import { edgeMark } from '../diff/model';
import { useDiff } from '../diff/store';
import { edgeCoverage } from '../tests-panel/coverage';
import { useTests } from '../tests-panel/store';

/** Sideways offset of an edge among `count` joining the same two nodes. */
export function parallelOffset(parallel: number, count: number): number {
  return count > 1 ? (parallel - (count - 1) / 2) * 70 : 0;
}

/** The layout's route, when the edge's ends are still where the layout put them. */
export function usableRoute(points: Pt[] | null | undefined, source: string, target: string, moved: Set<string> | undefined): Pt[] {
  if (!points || points.length === 0) return [];
  if (moved && (moved.has(source) || moved.has(target))) return [];
  return points;
}

function EdgeLineImpl(props: EdgeProps<SyEdge>) {
  const { id, source, target, sourceX, sourceY, targetX, targetY, data, selected, markerEnd } = props;
  const plan = useContext(EdgePlanContext);
  const app = useContext(StoreContext);
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
  const diffMark = useDiff((s) => edgeMark(s.diff, s.agent, { from: source, to: target, kind, label: rawLabel }));
  // Routing coverage of the last test suite run: an edge no case took is marked.
  const viewAgent = app?.getState().view?.agent ?? null;
  const covered = useTests((s) => edgeCoverage(s.onCanvas ? s.shown : null, viewAgent, { from: source, to: target, kind, label: rawLabel }));
  // Several edges between the same two nodes are bent apart so each stays visible and clickable;
  // a long edge follows the layout's route around the boxes it would cross.
  const route = usableRoute(data?.points, source, target, plan?.moved);
  const segs = edgeSegments([sourceX, sourceY], [targetX, targetY], route, parallelOffset(data?.parallel ?? 0, count));
  const path = segmentsPath(segs);
  // The label where the canvas placed it (clear of other labels and of nodes), else mid-edge.
  const placed = plan?.labels.get(id);
  const [labelX, labelY] = placed ? [placed.x, placed.y] : pointAlong(samplePath(segs), 0.5);
  const s = edgeStroke(data ?? { kind: 'static' });
  const label = data?.label ?? null;
  const cls = ['sy-edge-label'];
  if (data?.dynamic) cls.push('dynamic');
  if (data?.derived) cls.push('derived');
  if (data?.kind) cls.push(`k-${data.kind}`);
  if (selected) cls.push('selected');
  if (taken) cls.push('taken');
  if (diffMark) cls.push(`diff-${diffMark}`);
  const stepsText = taken?.steps ? stepsTitle(taken.steps) : '';
  return (
    <>
      <BaseEdge
        id={id}
        path={path}
        markerEnd={markerEnd}
        interactionWidth={14}
        className={[taken ? `sy-edge-taken${taken.last ? ' sy-edge-last' : ''}` : '', diffMark ? `sy-edge-diff-${diffMark}` : '', covered === '0' ? 'sy-edge-cov-never' : ''].filter(Boolean).join(' ') || undefined}
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
      ) : label && placed !== null ? (
        // `placed === null`: no room anywhere along the edge; the label shows when it is selected.
        <EdgeLabelRenderer>
          <div
            data-testid="edge-label"
            data-edge-id={id}
            className={cls.join(' ')}
            style={{
              transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)`,
              ...(placed ? { width: placed.w, height: placed.h } : {}),
            }}
            title={taken?.steps ? `${label}\ntaken: ${stepsText}` : label}
            // Hovering shows the whole label (a shortened one too); a click selects the edge.
            onClick={(e) => {
              e.stopPropagation();
              app?.getState().select({ type: 'edge', id });
            }}
          >
            {placed ? placed.text : label.length > 34 ? `${label.slice(0, 32)}…` : label}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
}

export const EdgeLine = memo(EdgeLineImpl);
