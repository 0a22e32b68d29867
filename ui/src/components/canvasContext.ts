import { createContext } from 'react';
import type { PlacedLabel } from './canvasLayout';

/** What the canvas decided for all edges at once (Canvas.tsx), read by each EdgeLine. */
export interface EdgePlan {
  /** Per edge id: where its label goes, or null when it fits nowhere (shown while selected). */
  labels: Map<string, PlacedLabel | null>;
  /** Nodes away from their place in the View (being dragged): routes through them are stale. */
  moved: Set<string>;
}

export const EdgePlanContext = createContext<EdgePlan | null>(null);
