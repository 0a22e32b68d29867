// Types of the engine/shell contract (docs/app-contract.md). Keys are snake_case as serialised.

export type Dialect = 'sherma' | 'loki' | null;

export interface ViewNode {
  id: string;
  kind: string;
  derived: boolean;
  summary?: string | null;
  dynamic_next?: boolean;
  order?: number;
  line?: number | null;
  end_line?: number | null;
  x: number;
  y: number;
  w?: number;
  h?: number;
  data?: unknown;
  errors?: number;
  warnings?: number;
  sub_agent?: string | null;
  /** Position comes from the user's drag (sidecar), not the automatic layout. */
  pinned?: boolean;
}

export interface ViewEdge {
  id: string;
  from: string;
  to: string;
  kind: string;
  label?: string | null;
  derived?: boolean;
  dynamic?: boolean;
  fanout?: boolean;
  order?: number;
  index?: number | null;
}

export interface Diagnostic {
  severity: 'error' | 'warning' | 'info' | 'note' | string;
  code: string;
  message: string;
  file: string;
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  hint?: string | null;
  node?: string | null;
  span?: { start: number; end: number } | null;
}

export interface SchemaType {
  kind: string; // any string path bool int number enum cel cel_condition template node_ref list map object one_of
  values?: string[];
  items?: SchemaType;
  object?: SchemaObj;
  alternatives?: SchemaType[];
  min?: number;
}

export interface SchemaField {
  name: string;
  type: SchemaType;
  required: boolean;
  doc: string;
}

export interface SchemaObj {
  name: string;
  fields: SchemaField[];
  open: boolean;
}

export interface View {
  path: string;
  file_name: string;
  dialect: Dialect;
  text: string;
  dirty: boolean;
  /** The file changed on disk while there were unsaved edits (engine session state). */
  conflict?: boolean;
  can_undo: boolean;
  can_redo: boolean;
  revision: number;
  agents: string[];
  agent: string | null;
  nodes: ViewNode[];
  edges: ViewEdge[];
  diagnostics: Diagnostic[];
  node_kinds: string[];
  schema: Record<string, SchemaObj>;
  /** Size of the engine layout. */
  width?: number;
  height?: number;
}

export type PathSeg = string | number;

export type EditOp =
  | { op: 'add_node'; name: string; kind: string; after?: string }
  | { op: 'delete_node'; name: string }
  | { op: 'rename_node'; from: string; to: string }
  | { op: 'set_field'; node: string; path: PathSeg[]; value: unknown }
  | { op: 'set_doc_field'; path: PathSeg[]; value: unknown }
  | { op: 'add_edge'; from: string; to: string }
  | { op: 'remove_edge'; from: string; to: string; kind: string; index?: number }
  | { op: 'add_branch'; from: string; condition: string; to: string; index?: number }
  | { op: 'set_branch'; from: string; index: number; condition?: string; to?: string }
  | { op: 'move_branch'; from: string; index: number; to_index: number }
  | { op: 'remove_branch'; from: string; index: number }
  | { op: 'set_default'; from: string; to: string | null };

export interface ExprError {
  message: string;
  start: number;
  end: number;
}

/** Unsaved text kept in a recovery file for the open document (`recovery_offer`). */
export interface RecoveryOffer {
  path: string;
  text: string;
  /** When the text was written (ms since the Unix epoch). */
  saved_at_ms: number;
  /** The file on disk changed since (or is not provably) the version the edits were made on. */
  disk_changed: boolean;
  warning: string | null;
}

export type DocumentChangedKind = 'reloaded' | 'conflict' | 'deleted';

export interface DocumentChanged {
  kind: DocumentChangedKind;
  view: View;
}

export interface Pos {
  x: number;
  y: number;
}

export interface CommandError {
  message: string;
}

/** Kinds that mark the graph's entry/exit (derived markers in both dialects). */
export const MARKER_KINDS = new Set(['__start__', '__end__']);
