// Generated from crates/editor (studio, edit) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --lib contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.
import type { Diagnostic, Severity } from './syntax';
import type { SchemaObj } from './model';

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

/**
 * What the UI draws for one document (docs/app-contract.md §2).
 */
export type View = { path: string, file_name: string, dialect: "sherma" | "loki" | "lllm" | null, text: string, dirty: boolean, conflict: boolean, can_undo: boolean, can_redo: boolean, revision: number, agents: Array<string>, agent: string | null, nodes: Array<ViewNode>, edges: Array<ViewEdge>, diagnostics: Array<Diagnostic>, node_kinds: Array<string>, 
/**
 * The inspector's schema of each node kind (sherma: its `args`; Loki: the node mapping).
 */
schema: { [key in string]: SchemaObj }, width: number, height: number, 
/**
 * Loki map lanes (coyote 0.10.3 branch chains), maps in declaration order; absent when
 * there are none. A node may be in several lanes.
 */
lanes?: Array<ViewLane>, };

export type ViewNode = { id: string, 
/**
 * The node type as written (`call_llm`, `script`, ...; an unknown or misspelt type too, which
 * the diagnostics report), or the markers `__start__` / `__end__`: an open set.
 */
kind: string, derived: boolean, summary: string, dynamic_next: boolean, order: number, line: number | null, end_line: number | null, x: number, y: number, w: number, h: number, 
/**
 * The user dragged it (position from the sidecar, not the automatic layout).
 */
pinned: boolean, data: JsonValue, errors: number, warnings: number, sub_agent?: string, };

export type ViewEdge = { id: string, from: string, to: string, 
/**
 * `model::graph::EdgeKind` (`as_str`): a closed set.
 */
kind: "entry" | "static" | "branch" | "default" | "next" | "route" | "on_other" | "fallback" | "map_branch" | "dynamic" | "inherits", label: string | null, derived: boolean, dynamic: boolean, fanout: boolean, order: number, 
/**
 * Position of the branch / route inside its source, for branch ops.
 */
index: number | null, 
/**
 * Points (x, y) a long edge passes through from its source to its target, one per layer it
 * crosses, from the layout; absent when there are none, or when one of its ends has a
 * position the user dragged (the route would be stale).
 */
points?: Array<[number, number]>, };

/**
 * One map's lane: the map and the nodes of its per-item chain (the branch entry first).
 */
export type ViewLane = { map: string, nodes: Array<string>, };

/**
 * A canvas position (top-left corner of the node box).
 */
export type Pos = { x: number, y: number, };

/**
 * An edit op as the UI sends it (JSON tagged by `op`). Fields with a default may be left out;
 * a `value` of null removes the key.
 */
export type EditOp = { "op": "add_node", name: string, kind: string, after?: string, } | { "op": "delete_node", name: string, } | { "op": "rename_node", from: string, to: string, } | { "op": "set_field", node: string, path: Array<PathSeg>, value: JsonValue | null, } | { "op": "set_doc_field", path: Array<PathSeg>, value: JsonValue | null, } | { "op": "add_edge", from: string, to: string, } | { "op": "remove_edge", from: string, to: string, kind: string, index?: number, } | { "op": "add_branch", from: string, condition: string, to: string, index?: number, } | { "op": "set_branch", from: string, index: number, condition?: string, to?: string, } | { "op": "move_branch", from: string, index: number, to_index: number, } | { "op": "remove_branch", from: string, index: number, } | { "op": "set_default", from: string, to: string | null, };

/**
 * One element of a field path: a mapping key or a sequence index.
 */
export type PathSeg = number | string;

/**
 * A replacement of the byte range `start..end` of the OLD text by `text`.
 */
export type TextEdit = { start: number, end: number, text: string, };

/**
 * The result of an op.
 */
export type Applied = { text: string, edit: TextEdit, inverse: TextEdit, select: string | null, };

/**
 * What went wrong and what to do.
 */
export type EditError = { message: string, };

/**
 * A problem in an expression typed in the inspector, with a byte range inside the expression.
 */
export type ExprProblem = { message: string, start: number, end: number, severity: Severity, };

/**
 * Unsaved text found for a document.
 */
export type Recovered = { 
/**
 * The document the text belongs to.
 */
path: string, text: string, 
/**
 * When the text was written (milliseconds since the Unix epoch).
 */
saved_at_ms: number, 
/**
 * The file on disk is not (or not provably) the version the edits were made on: restoring
 * replaces changes made since by someone else. The UI shows `warning`.
 */
disk_changed: boolean, warning: string | null, };

/**
 * What a look at the disk found.
 */
export type DiskEvent = "unchanged" | "reloaded" | "conflict" | "deleted";
