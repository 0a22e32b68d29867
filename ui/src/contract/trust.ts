// Generated from src-tauri (trust) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --bin switchyard-app contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.

/**
 * `trust_status`: the open document's trust.
 */
export type TrustStatus = { 
/**
 * The open document.
 */
path: string, 
/**
 * Its project root: the nearest folder holding `.git`, else the agent's folder.
 */
root: string, 
/**
 * A trusted folder covers the root; false = restricted mode.
 */
trusted: boolean, 
/**
 * The trusted folder that covers it (the root or a folder above it).
 */
trusted_by: string | null, manifest: RunManifest, 
/**
 * The user confirmed this manifest (its hash) for this file.
 */
confirmed: boolean, 
/**
 * The trust list could not be read (damaged or unreadable): nothing is trusted meanwhile.
 */
error: string | null, };

/**
 * What running the open document would do (`launch::manifest`).
 */
export type RunManifest = { 
/**
 * The agent file.
 */
document: string, 
/**
 * Its project root (the folder trust is about).
 */
root: string, executes: Array<ManifestItem>, 
/**
 * Hosts it would contact.
 */
hosts: Array<ManifestItem>, 
/**
 * Files it reads outside the project root.
 */
outside_files: Array<ManifestItem>, 
/**
 * Environment variables it references.
 */
env_vars: Array<ManifestItem>, 
/**
 * Of what executes, the hosts, the outside files and the variable names (not positions).
 */
hash: string, 
/**
 * Nothing executes, is contacted or is read outside the project root.
 */
inert: boolean, };

/**
 * One thing the run manifest lists.
 */
export type ManifestItem = { 
/**
 * What kind of thing (`script`, `python import`, `MCP command`, `LLM provider`, ...).
 */
kind: string, 
/**
 * The thing itself: a command line, a host, a path, a variable name.
 */
what: string, 
/**
 * More about it (the interpreter, the working folder, the URL a host comes from).
 */
detail: string | null, 
/**
 * The agent file that names it (a sub-agent's file for what a sub-agent runs).
 */
file: string, 
/**
 * 1-based; 0 when unknown.
 */
line: number, column: number, };
