// The graph diff as the canvas and the inspector read it (pure functions over the engine's
// `GraphDiff`, ui/src/contract/diff.ts): which nodes and edges of the open agent were added,
// changed or renamed, which were removed (drawn as ghosts), and a node's changed fields.
import type { AgentDiff, EdgeChange, FieldChange, GraphDiff, NodeChange } from '../contract/diff';

export type NodeMark = '' | 'added' | 'changed' | 'renamed';
export type EdgeMark = '' | 'added' | 'changed';

/** The agent's entry: by name, else the only one. */
export function agentDiff(diff: GraphDiff | null, agent: string | null): AgentDiff | null {
  if (!diff) return null;
  return diff.agents.find((a) => a.agent === agent) ?? (diff.agents.length === 1 ? diff.agents[0] : null);
}

/** How the node `id` (of the new version) differs. */
export function nodeMark(diff: GraphDiff | null, agent: string | null, id: string): NodeMark {
  const n = agentDiff(diff, agent)?.nodes.find((x) => x.id === id && x.change !== 'removed');
  return n ? (n.change as NodeMark) : '';
}

/** The nodes that are gone (the canvas draws them as ghosts). */
export function removedNodes(diff: GraphDiff | null, agent: string | null): NodeChange[] {
  return agentDiff(diff, agent)?.nodes.filter((n) => n.change === 'removed') ?? [];
}

/** The edges that are gone. */
export function removedEdges(diff: GraphDiff | null, agent: string | null): EdgeChange[] {
  return agentDiff(diff, agent)?.edges.filter((e) => e.change === 'removed') ?? [];
}

/** How the edge `from → to` of `kind` with `label` differs. */
export function edgeMark(diff: GraphDiff | null, agent: string | null, e: { from: string; to: string; kind: string; label: string | null }): EdgeMark {
  const hit = agentDiff(diff, agent)?.edges.find(
    (x) => x.change !== 'removed' && x.from === e.from && x.to === e.to && x.kind === e.kind && (x.label ?? null) === (e.label ?? null),
  );
  return hit ? (hit.change as EdgeMark) : '';
}

/** The node's change (renamed: its old id), when it has one. */
export function nodeChange(diff: GraphDiff | null, agent: string | null, id: string): NodeChange | null {
  return agentDiff(diff, agent)?.nodes.find((x) => x.id === id && x.change !== 'removed') ?? null;
}

/** A node's changed fields, old and new. */
export function fieldChanges(diff: GraphDiff | null, agent: string | null, id: string): FieldChange[] {
  return nodeChange(diff, agent, id)?.fields ?? [];
}

/** A value as one short line (`(none)` when not written on that side). */
export function showValue(v: unknown, max = 120): string {
  if (v === null || v === undefined) return '(none)';
  const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** `2 added, 1 removed, 3 changed, 1 renamed, 1 reorder` for the agent, plus document fields. */
export function summary(diff: GraphDiff | null, agent: string | null): string {
  if (!diff) return '';
  if (diff.same) return 'no graph change';
  const a = agentDiff(diff, agent);
  const parts: string[] = [];
  const count = (what: string, n: number) => {
    if (n > 0) parts.push(`${n} ${what}`);
  };
  if (a) {
    for (const c of ['added', 'removed', 'changed', 'renamed'] as const) {
      count(`node${a.nodes.filter((n) => n.change === c).length === 1 ? '' : 's'} ${c}`, a.nodes.filter((n) => n.change === c).length);
    }
    count(`edge change${a.edges.length === 1 ? '' : 's'}`, a.edges.length);
    count(`reorder${a.reorders.length === 1 ? '' : 's'}`, a.reorders.length);
  }
  count(`document field${diff.fields.length === 1 ? '' : 's'}`, diff.fields.length);
  return parts.length ? parts.join(', ') : 'other agents changed';
}
