// Generated from src-tauri (commands, main, debug, settings, bundle, remote) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --bin switchyard-app contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.
import type { Diagnostic, Severity } from './syntax';
import type { View } from './editor';
import type { Breakpoint, Control, Event, JsonValue, Pending, RunRecord } from './runtime';

/**
 * `run_start`'s configuration.
 */
export type RunConfig = { agent?: string | null, input?: string | null, 
/**
 * Initial state as a JSON object.
 */
state?: JsonValue | null, llm: LlmMode, 
/**
 * Answers for interrupts to come, in order.
 */
answers?: Array<JsonValue>, breakpoints: Array<Breakpoint>, break_on_error: boolean, 
/**
 * `continue` runs to the first stop; `step` runs one step and pauses.
 */
start?: Control | null, 
/**
 * Record every LLM and tool exchange into this cassette (relative to the agent).
 */
record?: string | null, 
/**
 * A durable run: every step is written to the run store, so the run can be resumed after
 * the app was closed (`runs_list`, `run_resume`).
 */
durable?: boolean, 
/**
 * Let a scripted or replayed run use the network (remote hooks, skill and RAG URLs,
 * embeddings, A2A, MCP over HTTP); such runs are offline otherwise. Live runs are online.
 */
allow_network?: boolean, };

/**
 * Where a run's LLM answers come from (`RunConfig.llm`, tagged by `mode`).
 */
export type LlmMode = { "mode": "scripted", 
/**
 * A `replies:` file relative to the agent; empty = `replies.yaml` beside it.
 */
script?: string | null, } | { "mode": "none" } | { "mode": "replay", 
/**
 * Relative to the agent; empty = `<agent stem>.cassette.json` (or `cassette.json`) beside it.
 */
cassette?: string | null, 
/**
 * A request that differs from the recording fails the call.
 */
strict?: boolean | null, } | { "mode": "live", 
/**
 * The model for agents and nodes that name none (this run only); absent = the
 * configured default.
 */
model?: string | null, };

/**
 * What `run_start` and `run_resume` answer.
 */
export type RunInfo = { run: string, 
/**
 * Where the JSONL trace is written (null when it could not be created).
 */
trace: string | null, agent: string, dialect: "sherma" | "loki" | "lllm", 
/**
 * What answers LLM calls, for the status line: "scripted: replies.yaml (3 replies)".
 */
llm: string, 
/**
 * Set for a durable run: the run store it writes to.
 */
durable?: string, 
/**
 * Set when the run records to a cassette: where, and whether git would commit it.
 */
record?: RecordCheck, };

/**
 * Where a recording goes and whether it is inside a git work tree that does not ignore it
 * (`launch::worktree`): what `record_check`, `record_gitignore` and `run_start` answer.
 */
export type RecordCheck = { 
/**
 * The file the recording is written to.
 */
path: string, 
/**
 * The git work tree it is in; null outside one.
 */
work_tree: string | null, 
/**
 * Git ignores the file (always false outside a work tree).
 */
ignored: boolean, 
/**
 * The `.gitignore` line that would ignore it; null outside a work tree.
 */
pattern: string | null, 
/**
 * In a work tree and not ignored: the recording (prompts, replies, tool results) could be committed.
 */
warn: boolean, };

/**
 * What `runs_list` answers.
 */
export type RunsList = { 
/**
 * The run store's file.
 */
db: string, runs: Array<RunRecord>, };

/**
 * What `open_trace` answers.
 */
export type TraceFile = { path: string, 
/**
 * Events as the trace holds them (the engine's `Event`s as JSON).
 */
events: Array<Event>, };

/**
 * What `trace_state_at` answers: a recorded run's state after a step and after the step
 * before, and why they may not be what the engine held.
 */
export type TraceStateAt = { 
/**
 * The state after the step (a JSON object).
 */
state: { [key in string]?: JsonValue }, 
/**
 * The state after the step before; null for step 0.
 */
prev: { [key in string]?: JsonValue } | null, 
/**
 * Why the states may differ from what the engine held; null when they are exact.
 */
warning: string | null, };

/**
 * What `settings_get` answers.
 */
export type Settings = { 
/**
 * The provider file (written by `settings_save`).
 */
path: string | null, 
/**
 * The file exists but cannot be read or parsed (saving is then refused).
 */
file_error: string | null, 
/**
 * The file's `default_model`.
 */
default_model: string | null, 
/**
 * `SWITCHYARD_MODEL` when set: it wins over `default_model`.
 */
default_model_env: string | null, keyring: KeyringInfo, providers: Array<ProviderInfo>, };

export type KeyringInfo = { available: boolean, 
/**
 * Why it is not (null when it is).
 */
message: string | null, };

export type ProviderInfo = { name: string, 
/**
 * Known to the engine without configuration.
 */
builtin: boolean, 
/**
 * Has an entry in the provider file.
 */
configured: boolean, wire: "openai" | "anthropic" | null, base_url: string | null, 
/**
 * The variable whose value overrides the base URL, when it is set.
 */
base_url_env: string | null, 
/**
 * The environment variable the key is read from (`OPENAI_API_KEY`).
 */
key_var: string, key_source: KeySource | null, 
/**
 * The key with all but its first and last characters hidden (`sk-…9f3a`).
 */
key_masked: string | null, 
/**
 * A local server that works without a key.
 */
key_optional: boolean, models: Array<string>, timeout_s: number | null, 
/**
 * Why calls to it cannot go anywhere (unknown wire format / base URL).
 */
error: string | null, };

/**
 * Where a key comes from, as the page says it.
 */
export type KeySource = "env" | "keyring" | "file";

/**
 * What `settings_save` changes; absent parts are left as they are.
 */
export type SettingsChange = { 
/**
 * Add or update one provider.
 */
provider?: ProviderInput, 
/**
 * Remove these providers from the file and their keys from the keyring (a built-in one
 * goes back to its defaults).
 */
remove?: Array<string>, 
/**
 * The default model (`provider:name`); `""` clears it; absent leaves it.
 */
default_model?: string, };

/**
 * One provider as the form sends it.
 */
export type ProviderInput = { name: string, wire: "openai" | "anthropic" | null, base_url: string | null, models: Array<string>, timeout_s: number | null, 
/**
 * A new key; absent or null keeps the stored one.
 */
api_key: string | null, 
/**
 * Forget the stored key (keyring and file).
 */
clear_key: boolean, };

/**
 * What `settings_save` answers.
 */
export type SaveResult = { settings: Settings, 
/**
 * Where a new key went.
 */
key_stored: KeySource | null, 
/**
 * What to tell the user (e.g. the keyring was unavailable and the key went to the file).
 */
message: string | null, };

/**
 * What `settings_test_provider` answers.
 */
export type ProbeResult = { status: ProbeStatus, message: string, 
/**
 * Models the server lists (when it does).
 */
models: Array<string>, };

export type ProbeStatus = "reachable" | "auth_error" | "unreachable" | "error";

/**
 * What `llm_models` answers.
 */
export type ModelsInfo = { models: Array<DocModel>, 
/**
 * The configured default model (`SWITCHYARD_MODEL`, else the file's), for nodes that
 * name none.
 */
default_model: string | null, 
/**
 * Models to offer as a run's default: the default, the document's, and every provider's
 * `models` list, each once.
 */
choices: Array<string>, };

export type DocModel = { 
/**
 * `provider:name`.
 */
model: string, 
/**
 * Where the document names it (`agent.yaml: llm \`gpt\``).
 */
origin: string, 
/**
 * The provider is known and has a key (or needs none).
 */
ready: boolean, 
/**
 * Why it cannot be called (the run would refuse to start with this message).
 */
problem: string | null, };

/**
 * What every failing command rejects with: what went wrong and what to do.
 */
export type CmdError = { message: string, 
/**
 * What kind of refusal, for the UI to recognise (`untrusted`, `manifest`: see trust.rs;
 * `path_not_allowed`: see paths.rs; `bundle`: see bundle.rs); absent for other failures.
 */
code?: "untrusted" | "manifest" | "path_not_allowed" | "bundle", };

/**
 * `apply_edit`'s answer: the `View` after the edit and `select`, the node the UI should select
 * afterwards (a new or renamed node), else null.
 */
export type EditedView = View & { select: string | null };

/**
 * One problem `check_expr` found in an expression.
 */
export type ExprIssue = { message: string, 
/**
 * Offsets in UTF-16 code units (JavaScript string indices), end exclusive.
 */
start: number, end: number, severity: Severity, };

/**
 * `export_diagram`'s format.
 */
export type ExportFormat = "svg" | "png";

/**
 * Payload of the `document-changed` event: the open document changed on disk (or a save met
 * a change there), and the view after it.
 */
export type DocumentChanged = { kind: ChangeKind, view: View, };

/**
 * What happened to the open document on disk.
 */
export type ChangeKind = "reloaded" | "conflict" | "deleted";

/**
 * A bundle as the UI lists it.
 */
export type BundleView = { 
/**
 * The bundle's folder (absolute).
 */
root: string, 
/**
 * The manifest's `name`, else the folder's name.
 */
name: string, 
/**
 * `coyote-bundle.yaml`'s path when the bundle has one.
 */
manifest: string | null, version: string | null, description: string | null, homepage: string | null, 
/**
 * Its agents, in name order.
 */
agents: Array<BundleAgentView>, 
/**
 * What is wrong with the manifest or the layout (agent folders that are not agents).
 */
diagnostics: Array<Diagnostic>, };

/**
 * One agent of a bundle.
 */
export type BundleAgentView = { 
/**
 * Its folder's name under `agents/`.
 */
name: string, 
/**
 * `graph` (a graph agent, drawn) or `config` (an LLM-loop agent that agent nodes spawn).
 */
kind: "graph" | "config", 
/**
 * Its agent file (absolute): what `open_path` opens.
 */
file: string, 
/**
 * The file's top-level `description`.
 */
description: string | null, 
/**
 * It has a `scripts/` folder.
 */
scripts: boolean, 
/**
 * Its agent-local tool file, if any.
 */
tools: string | null, };

/**
 * What `open_folder_dialog` opened: a bundle (listed) or an agent folder (its view).
 */
export type FolderOpened = { bundle: BundleView | null, view: View | null, };

/**
 * What `remote_connect` and `remote_status` answer.
 */
export type RemoteStatus = { 
/**
 * The server connected to, or the one remembered from last time (not connected yet).
 */
url: string | null, connected: boolean, 
/**
 * A token is used (from the keyring, or given this session).
 */
token: boolean, 
/**
 * Where the token went when it could not go to the keyring, and the like.
 */
note?: string, };

/**
 * A run on the server as the Runs list shows it (`GET /switchyard/runs`).
 */
export type RemoteRunInfo = { run_id: string, assistant: string, assistant_id: string, 
/**
 * `pending | running | ready | paused | interrupted | completed | failed | stopped`.
 */
status: string, step: number | null, 
/**
 * The question it waits for.
 */
question: Pending | null, waiting_since: string | null, updated_at: string | null, error: string | null, active: boolean, };

/**
 * An assistant of the server (`POST /assistants/search`).
 */
export type RemoteAssistant = { assistant_id: string, 
/**
 * Its name.
 */
graph_id: string, dialect: "sherma" | "loki" | "lllm" | null, };

/**
 * What opening a remote assistant or run answers: the view of its agent file (read-only) and
 * where it is.
 */
export type RemoteOpened = { view: View, url: string, assistant_id: string, 
/**
 * The assistant's name.
 */
assistant: string, 
/**
 * Set when a run was opened (or started): what `run_start` answers for a local one.
 */
run?: RunInfo, };

/**
 * `remote_start`'s configuration: what a local run's configuration has that a server run takes.
 */
export type RemoteStart = { assistant_id: string, input?: string | null, 
/**
 * Initial state as a JSON object.
 */
state?: JsonValue | null, breakpoints: Array<Breakpoint>, 
/**
 * `continue` (default) runs to the first stop; `step` runs one step and pauses; `pause`
 * starts held before the first step.
 */
start?: Control | null, };
