// Generated from crates/model (doc::schema) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --lib contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.

/**
 * An object of a schema (JSON: `{name, fields, open}`), what the inspector builds a form from.
 */
export type SchemaObj = { name: string, fields: Array<SchemaField>, 
/**
 * Unknown keys are accepted silently (free-form objects).
 */
open: boolean, };

/**
 * One field of an object (JSON: `{name, type, required, doc}`).
 */
export type SchemaField = { name: string, type: SchemaType, required: boolean, doc: string, };

/**
 * A [`Ty`] as JSON for the editor: `kind` (its [`Ty::kind_name`]) and what that kind needs
 * (`min`, `values`, `items`, `object`, `alternatives`).
 */
export type SchemaType = { kind: "any" | "string" | "path" | "bool" | "int" | "number" | "enum" | "cel" | "cel_condition" | "template" | "node_ref" | "list" | "map" | "object" | "one_of", 
/**
 * `int` and `number`: the smallest value allowed.
 */
min?: number, 
/**
 * `enum`: the strings allowed.
 */
values?: Array<string>, 
/**
 * `list` and `map`: the type of the items (values).
 */
items?: SchemaType, 
/**
 * `object`: its fields.
 */
object?: SchemaObj, 
/**
 * `one_of`: the alternatives, the first whose outer shape matches is used.
 */
alternatives?: Array<SchemaType>, };
