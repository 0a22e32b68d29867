// Generated from crates/syntax (diag) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --lib contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.

export type Severity = "error" | "warning" | "info";

/**
 * One finding. Lines and columns are 1-based; columns count characters.
 * `end_line`/`end_column` are exclusive (the position just after the marked text).
 */
export type Diagnostic = { severity: Severity, code: string, message: string, file: string, line: number, column: number, end_line: number, end_column: number, hint: string | null, 
/**
 * The graph node the finding is about, when there is one.
 */
node?: string, 
/**
 * Byte range in `file` (for editors; not part of the stable JSON contract).
 */
span?: { start: number, end: number }, };
