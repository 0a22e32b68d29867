// Types of the engine/shell contract (docs/app-contract.md). The engine's are generated from the
// Rust types into ./contract/ (syntax.ts, model.ts, editor.ts) and re-exported here under the
// names the UI uses; what is written here by hand are the shell's own small types
// (src-tauri/src/commands.rs, main.rs: not generated yet) and the UI's constants.

import type { DiskEvent, View } from './contract/editor';

export type { Diagnostic, Severity } from './contract/syntax';
export type { SchemaField, SchemaObj, SchemaType } from './contract/model';
export type { EditOp, JsonValue, PathSeg, Pos, View, ViewEdge, ViewNode } from './contract/editor';
/** Unsaved text kept in a recovery file for the open document (`recovery_offer`; engine
 *  `Recovered`). */
export type { Recovered as RecoveryOffer } from './contract/editor';

export type Dialect = View['dialect'];

/** `check_expr`'s answer (src-tauri's `ExprIssue`: start/end are JavaScript string indices). */
export interface ExprError {
  message: string;
  start: number;
  end: number;
}

/** What the shell's file watcher found (`document-changed`). */
export type DocumentChangedKind = Exclude<DiskEvent, 'unchanged'>;

export interface DocumentChanged {
  kind: DocumentChangedKind;
  view: View;
}

export interface CommandError {
  message: string;
}

/** Kinds that mark the graph's entry/exit (derived markers in both dialects). */
export const MARKER_KINDS = new Set(['__start__', '__end__']);
