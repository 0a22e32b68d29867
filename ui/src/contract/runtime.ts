// Generated from crates/runtime (events, wire, session, driver, store, request) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --lib contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

/**
 * One event: the run it belongs to, when it happened, and what happened.
 */
export type Event = { run: string, 
/**
 * Milliseconds since the Unix epoch.
 */
ts_ms: number, } & ({ "event": "run_started", 
/**
 * The agent being run (sherma agent id or Loki agent name).
 */
agent: string, 
/**
 * The run's input (initial state / user message), as given.
 */
input: JsonValue, 
/**
 * The whole state before the first step (declared defaults and the input applied), so
 * a trace can be replayed into states without the agent file.
 */
state?: JsonValue, } | { "event": "node_enter", 
/**
 * 1-based step counter of the run.
 */
step: number, node: string, 
/**
 * The node's kind as in the IR (`call_llm`, `set_state`, `tool_node`, `script`, ...).
 */
kind: string, } | { "event": "node_exit", step: number, node: string, 
/**
 * The state delta the node produced (JSON; `null` when it produced none).
 */
update: JsonValue, duration_ms: number, } | { "event": "route", from: string, to: string, reason: RouteReason, } | { "event": "llm_request", node: string, messages: JsonValue, tools: JsonValue, 
/**
 * The model the document names (`openai:gpt-4o-mini`); absent when it names none.
 */
model?: string | null, } | { "event": "llm_delta", node: string, text: string, } | { "event": "llm_response", node: string, content: string | null, tool_calls: Array<ToolCall>, usage: TokenUsage, 
/**
 * Wall time of the call (latency), including streaming.
 */
duration_ms?: number | null, 
/**
 * The model that answered, as the provider reports it.
 */
model?: string | null, 
/**
 * What the call cost, when the model's price is known.
 */
cost_usd?: number | null, } | { "event": "replay_diverged", node: string, 
/**
 * Which call of the node (1-based).
 */
call: number, 
/**
 * Where the requests differ (`messages[1].content`), or why there is no recorded call.
 */
path: string, recorded: JsonValue, now: JsonValue, } | { "event": "llm_error", node: string, kind: ErrorKind, message: string, duration_ms: number, } | { "event": "tool_call", node: string, call: ToolCall, } | { "event": "tool_result", node: string, 
/**
 * The id of the `tool_call` this answers.
 */
id: string, name: string, result: JsonValue, 
/**
 * Set when the tool failed; `result` is then usually `null`.
 */
error?: string | null, } | { "event": "interrupt", id: string, node: string, kind: InterruptKind, prompt: string, options: Array<string>, 
/**
 * The structured value behind `prompt` (a sherma interrupt's CEL value); `null` when
 * the prompt is all there is.
 */
value?: JsonValue, 
/**
 * The answer an empty reply stands for (Loki input `default`).
 */
default?: string | null, 
/**
 * The rule an answer must pass (Loki input `validation`), shown as a hint.
 */
validation?: string | null, } | { "event": "state_edited", key: string, value: JsonValue, } | { "event": "rewound", step: number, } | { "event": "paused", reason: PauseReason, } | { "event": "nested_paused", 
/**
 * The top-level node the nested run runs inside.
 */
node: string, reason: PauseReason, 
/**
 * Steps the nested run has done.
 */
step: number, 
/**
 * The nested run's nodes about to run.
 */
due: Array<string>, 
/**
 * The nested agent and the file it comes from.
 */
agent: string, file?: string | null, 
/**
 * The nested run's whole state.
 */
state: JsonValue, 
/**
 * 1 for a child of the top-level run, 2 for a grandchild, ...
 */
depth: number, } | { "event": "nested_resumed", } | { "event": "error", 
/**
 * The node that failed; `None` for run-level errors.
 */
node: string | null, message: string, } | { "event": "run_finished", status: RunStatus, state: JsonValue, output: JsonValue, } | { "event": "log", source: string, text: string, } | { "event": "hook", 
/**
 * The node it ran for; `None` for run-level points (`before_graph_invoke`, ...).
 */
node?: string | null, 
/**
 * The hook point (`before_llm_call`, `node_exit`, ...).
 */
point: string, 
/**
 * Which executor: `python:<import_path>`, `url:<url>` or `mcp:<server>`.
 */
executor: string, outcome: HookOutcome, duration_ms: number, 
/**
 * What changed (`system_prompt`, `result`, ...) or, for a failure, why.
 */
detail?: string | null, });

/**
 * Why the run went from `from` to `to`.
 */
export type RouteReason = { "type": "static" } | { "type": "branch", index: number, condition: string, } | { "type": "default" } | { "type": "_next" } | { "type": "fallback" } | { "type": "on_other" } | { "type": "route_option", option: string, };

export type InterruptKind = "interrupt" | "approval" | "input";

export type PauseReason = "breakpoint" | "step" | "requested" | "error";

export type RunStatus = "completed" | "failed" | "stopped" | "interrupted";

/**
 * What a hook executor did with its context.
 */
export type HookOutcome = "pass" | "modified" | "consumed" | "failed";

/**
 * One tool call requested by the model.
 */
export type ToolCall = { id: string, name: string, args: JsonValue, };

export type TokenUsage = { input_tokens: number, output_tokens: number, };

/**
 * What kind of failure a provider error is. The transient kinds are retried as the node's
 * settings say (sherma `on_error.retry`, Loki `max_attempts`); the others fail at once.
 */
export type ErrorKind = "timeout" | "connection" | "rate_limited" | "server" | "malformed" | "auth" | "bad_request" | "cancelled" | "config" | "other";

/**
 * A human is needed before the step can finish.
 */
export type Pending = { 
/**
 * Unique within the run.
 */
id: string, node: string, kind: InterruptKind, 
/**
 * What to show the user (text).
 */
prompt: string, 
/**
 * Choices (approval options); empty for free answers.
 */
options: Array<string>, 
/**
 * The structured value behind the prompt (sherma interrupt values), `null` otherwise.
 */
value: JsonValue, 
/**
 * A default answer (Loki input `default`), used for an empty answer.
 */
default: string | null, 
/**
 * The rule an answer must pass (Loki input `validation`).
 */
validation: string | null, };

/**
 * A breakpoint on a node, optionally conditional.
 */
export type Breakpoint = { node: string, 
/**
 * CEL (sherma) or a `{{template}}` that renders truthy (Loki); `None` = always.
 */
condition: string | null, enabled: boolean, };

/**
 * What a debugger's buttons do.
 */
export type Control = "continue" | "step" | "pause" | "stop" | "restart" | "step_into" | "step_out";

/**
 * The session's status as the debugger shows it.
 */
export type StatusInfo = { 
/**
 * `running | ready | paused | interrupted | finished`.
 */
state: "running" | "ready" | "paused" | "interrupted" | "finished", 
/**
 * Steps completed.
 */
step: number, 
/**
 * Nodes due next.
 */
due: Array<string>, reason?: PauseReason | null, pending?: Pending | null, status?: RunStatus | null, output?: JsonValue, 
/**
 * The failure that ended the run, or that paused it under break-on-error.
 */
error?: FailureInfo | null, };

export type FailureInfo = { node: string | null, message: string, };

/**
 * Events (JSON, as in a trace) and, when it changed, the new status.
 */
export type Batch = { run: string, 
/**
 * Events as a trace holds them ([`Event`] as JSON).
 */
events: Array<Event>, status: StatusInfo | null, };

/**
 * One row of `runs`.
 */
export type RunRecord = { id: string, 
/**
 * The agent file (absolute).
 */
file: string, 
/**
 * The agent's name (sherma: the agent; Loki: the graph's directory).
 */
agent: string, 
/**
 * `sherma` or `loki`.
 */
dialect: string, 
/**
 * `ready`, `paused`, `interrupted` (waiting for an answer), `completed`, `failed`,
 * `stopped`.
 */
status: string, created_ms: number, updated_ms: number, 
/**
 * Steps completed.
 */
step: number, 
/**
 * The question an interrupted run waits for.
 */
pending: Pending | null, output: JsonValue, 
/**
 * Why a failed run failed.
 */
error: string | null, 
/**
 * The run's input as `run_started` showed it.
 */
input: JsonValue, 
/**
 * Where its LLM answers come from.
 */
llm: LlmChoice, 
/**
 * The agent, input and state it was started with.
 */
request: RunRequest, doc_hash: string, };

/**
 * What to run and with what.
 */
export type RunRequest = { 
/**
 * The agent of a multi-agent sherma file (default: the first).
 */
agent: string | null, 
/**
 * The user's input text (sherma: one human message; Loki: `initial_prompt`).
 */
input: string | null, 
/**
 * Initial state as a JSON object (sherma: fields; Loki: merged over `initial_state`).
 */
state: JsonValue | null, 
/**
 * Scripted LLM replies; default: `replies.yaml` beside the agent file, if present.
 */
llm_script: string | null, 
/**
 * Extra Python `sys.path` entries for sherma `import_path` tools.
 */
python_path: Array<string>, 
/**
 * Answer from this cassette instead (see [`crate::cassette`]).
 */
replay: string | null, 
/**
 * With `replay`: fail at the first request that differs from the recording.
 */
replay_strict: boolean, 
/**
 * Call the models the document names, over HTTP (keys from the environment and the
 * provider file).
 */
live: boolean, 
/**
 * Record every LLM and tool exchange into this cassette.
 */
record: string | null, 
/**
 * With `record`: keep secrets in the cassette as they are (an explicit opt-in; cassettes
 * are redacted otherwise).
 */
record_raw: boolean, 
/**
 * Let a scripted or replayed run use the network (remote hooks, skill and RAG URLs,
 * embeddings, A2A, MCP over HTTP); such runs are offline otherwise.
 */
allow_network: boolean, };

/**
 * Where a run's LLM answers come from, as a durable run saves it (JSON tagged by `mode`, the
 * same shape as the desktop's run configuration) so a resume in another process builds the
 * same provider. Paths are absolute.
 */
export type LlmChoice = { "mode": "none" } | { "mode": "scripted", script: string | null, } | { "mode": "replay", cassette: string | null, strict: boolean | null, } | { "mode": "live", 
/**
 * The model for nodes that name none (the desktop's per-run choice).
 */
model: string | null, };
