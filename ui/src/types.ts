// Types of the engine/shell contract (docs/app-contract.md). They are generated from the Rust
// types into ./contract/ (syntax.ts, model.ts, editor.ts; the shell's commands and events in
// shell.ts) and re-exported here under the names the UI uses; what is written here by hand are
// the UI's constants.

import type { View } from './contract/editor';

export type { Diagnostic, Severity } from './contract/syntax';
export type { SchemaField, SchemaObj, SchemaType } from './contract/model';
export type { EditOp, JsonValue, PathSeg, Pos, View, ViewEdge, ViewLane, ViewNode } from './contract/editor';
/** Unsaved text kept in a recovery file for the open document (`recovery_offer`; engine
 *  `Recovered`). */
export type { Recovered as RecoveryOffer } from './contract/editor';
/** `apply_edit`'s answer: the view after the edit plus `select`, the node to select (new or
 *  renamed), else null. */
export type { EditedView } from './contract/shell';
/** What the shell's file watcher found (`document-changed`): the kind and the view after it. */
export type { ChangeKind as DocumentChangedKind, DocumentChanged } from './contract/shell';
/** `check_expr`'s answer (src-tauri's `ExprIssue`: start/end are JavaScript string indices). */
export type { ExprIssue as ExprError } from './contract/shell';
/** What every failing command rejects with (src-tauri's `CmdError`; `code` marks the refusals
 *  the UI tells apart). */
export type { CmdError as CommandError, ExportFormat } from './contract/shell';

export type Dialect = View['dialect'];

/** Kinds that mark the graph's entry/exit (derived markers in both dialects). */
export const MARKER_KINDS = new Set(['__start__', '__end__']);
