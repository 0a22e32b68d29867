// Routing coverage on the canvas: the count the last suite run gives a node or an edge of the
// agent shown ('' when there is none to show: no run, another agent, coverage hidden). Strings,
// so the canvas' per-node selectors re-render only the nodes whose count changed.
import type { Coverage } from '../contract/suite';

function forAgent(cov: Coverage | null, agent: string | null): Coverage | null {
  return cov && (agent === null || cov.agent === agent) ? cov : null;
}

export function nodeCoverage(cov: Coverage | null, agent: string | null, id: string): string {
  const n = forAgent(cov, agent)?.nodes.find((x) => x.id === id);
  return n ? String(n.count) : '';
}

export function edgeCoverage(cov: Coverage | null, agent: string | null, e: { from: string; to: string; kind: string; label: string | null }): string {
  const hit = forAgent(cov, agent)?.edges.find((x) => x.from === e.from && x.to === e.to && x.kind === e.kind && (x.label ?? null) === (e.label ?? null));
  return hit ? String(hit.count) : '';
}
