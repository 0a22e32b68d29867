// Generated from crates/model (diff) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --lib contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.
import type { JsonValue } from './editor';

/**
 * Two versions of one document compared (`switchyard diff --json`, the canvas' diff overlay).
 */
export type GraphDiff = { 
/**
 * `sherma`, `loki` or `lllm`.
 */
dialect: string, 
/**
 * No graph change: no agent, node, edge, order or document field differs.
 */
same: boolean, 
/**
 * One entry per agent of either side (sherma: agents matched by name); an agent without
 * changes is listed with empty lists.
 */
agents: Array<AgentDiff>, 
/**
 * Changes outside the nodes and edges (sherma agents' `state`, Loki `settings`, `model`, ...).
 */
fields: Array<FieldChange>, };

/**
 * One agent's graph compared.
 */
export type AgentDiff = { 
/**
 * The agent's name in the new version (the old one's when it was removed).
 */
agent: string, 
/**
 * `None` when the agent is in both versions under the same name.
 */
change: DiffChange | null, 
/**
 * The old name of a renamed agent.
 */
old_agent: string | null, 
/**
 * Nodes added, removed, changed or renamed, new graph order, then the removed ones.
 */
nodes: Array<NodeChange>, 
/**
 * Edges added, removed or changed; ids as in the new version (a removed node's old id).
 */
edges: Array<EdgeChange>, reorders: Array<Reorder>, };

/**
 * A node that differs.
 */
export type NodeChange = { change: DiffChange, 
/**
 * The id in the new version (the old one for a removed node).
 */
id: string, 
/**
 * The old id of a renamed node.
 */
old_id: string | null, kind: string, 
/**
 * The old kind when it changed.
 */
old_kind: string | null, 
/**
 * Made explicit by lowering (sherma's `<node>_tools`, `__start__`, `__end__`).
 */
derived: boolean, 
/**
 * How alike a renamed node's two versions are (0..1).
 */
similarity: number | null, 
/**
 * Changed fields of a changed or renamed node.
 */
fields: Array<FieldChange>, };

/**
 * One field with its old and new values (`None`: not written on that side).
 */
export type FieldChange = { 
/**
 * `args.prompt[1].content`, `routes["yes"]`.
 */
path: string, old: JsonValue | null, new: JsonValue | null, 
/**
 * The list holds the same items in another order.
 */
reordered: boolean, };

/**
 * An edge that differs.
 */
export type EdgeChange = { change: DiffChange, from: string, to: string, 
/**
 * `model::graph::EdgeKind` as text (`branch`, `route`, `next`, ...).
 */
kind: "entry" | "static" | "branch" | "default" | "next" | "route" | "on_other" | "fallback" | "map_branch" | "dynamic" | "inherits", label: string | null, 
/**
 * A changed edge's old target (when the target changed).
 */
old_to: string | null, 
/**
 * A changed edge's old label (when the condition or option changed).
 */
old_label: string | null, derived: boolean, };

/**
 * The edges out of a node in another order.
 */
export type Reorder = { node: string, 
/**
 * `branch` (sherma: evaluated in order, the first true wins) or `route` (Loki approval:
 * the order the options are offered in).
 */
kind: string, 
/**
 * `label → target`, old order (edges both versions have).
 */
old: Array<string>, 
/**
 * The same edges in the new order.
 */
new: Array<string>, };

/**
 * What happened to a node, an edge or an agent.
 */
export type DiffChange = "added" | "removed" | "changed" | "renamed";
