// Types of the debugger contract (docs/app-contract.md §5). Keys are snake_case as serialised by
// the engine (src/run/events.rs, src/run/driver.rs).

export interface Breakpoint {
  node: string;
  /** CEL (sherma) or a `{{template}}` (Loki); null/absent = always. */
  condition?: string | null;
  enabled: boolean;
}

export type LlmMode =
  | { mode: 'scripted'; script?: string | null }
  | { mode: 'none' }
  /** `cassette`: relative to the agent; empty = `<agent stem>.cassette.json` (or `cassette.json`)
   *  beside it. `strict`: a request that differs from the recording fails the call. */
  | { mode: 'replay'; cassette?: string | null; strict?: boolean }
  /** `model`: the model for agents and nodes that name none, this run only (empty = the
   *  configured default). */
  | { mode: 'live'; model?: string | null };

export interface RunConfig {
  agent?: string | null;
  input?: string | null;
  /** Initial state as a JSON object (parsed by the UI before sending). */
  state?: unknown;
  llm: LlmMode;
  /** Answers for interrupts to come, in order. */
  answers?: unknown[];
  breakpoints: Breakpoint[];
  break_on_error: boolean;
  /** `continue` (F5) runs to the first stop; `step` (F10) runs one step and pauses. */
  start: 'continue' | 'step';
  /** Record every LLM and tool exchange into this cassette (relative to the agent); null = no. */
  record?: string | null;
  /** A durable run: every step is written to the run store, to resume it after the app closed. */
  durable?: boolean;
}

export interface RunInfo {
  run: string;
  /** Where the JSONL trace is written (null when it could not be created). */
  trace: string | null;
  agent: string;
  dialect: 'sherma' | 'loki';
  /** What answers LLM calls, for the status line: "scripted: replies.yaml (3 replies)". */
  llm: string;
  /** A durable run: the run store it writes to. */
  durable?: string;
}

/** A durable run as the run store keeps it (`runs_list`; engine `run::store::RunRecord`). */
export interface DurableRun {
  id: string;
  /** The agent file (absolute). */
  file: string;
  agent: string;
  dialect: 'sherma' | 'loki' | string;
  /** `ready | paused | interrupted` (resumable), `completed | failed | stopped | abandoned`. */
  status: string;
  created_ms: number;
  updated_ms: number;
  /** Steps completed. */
  step: number;
  pending: Pending | null;
  output: unknown;
  error: string | null;
}

export interface RunsList {
  /** The run store's file. */
  db: string;
  runs: DurableRun[];
}

export type PauseReason = 'breakpoint' | 'step' | 'requested' | 'error';
export type FinishStatus = 'completed' | 'failed' | 'stopped' | 'interrupted';
export type InterruptKind = 'interrupt' | 'approval' | 'input';

export interface Pending {
  id: string;
  node: string;
  kind: InterruptKind;
  prompt: string;
  options: string[];
  value: unknown;
  default?: string | null;
  /** Loki input `validation` rule text, shown as a hint. */
  validation?: string | null;
}

/** The driver's status, sent with batches whenever it changes. */
export interface RunStatusInfo {
  state: 'running' | 'ready' | 'paused' | 'interrupted' | 'finished';
  /** Steps completed so far. */
  step: number;
  /** Nodes due next. */
  due: string[];
  reason?: PauseReason | null;
  pending?: Pending | null;
  status?: FinishStatus | null;
  output?: unknown;
  /** The failure that ended (or, with break-on-error, paused) the run. */
  error?: { node: string | null; message: string } | null;
}

export interface RunBatch {
  run: string;
  events: DebugEvent[];
  status: RunStatusInfo | null;
}

export type RouteReason =
  | { type: 'static' }
  | { type: 'branch'; index: number; condition: string }
  | { type: 'default' }
  | { type: '_next' }
  | { type: 'fallback' }
  | { type: 'on_other' }
  | { type: 'route_option'; option: string };

export interface ToolCallInfo {
  id: string;
  name: string;
  args: unknown;
}

/** `ErrorKind` of src/run/provider.rs. */
export type LlmErrorKind =
  | 'timeout'
  | 'connection'
  | 'rate_limited'
  | 'server'
  | 'malformed'
  | 'auth'
  | 'bad_request'
  | 'cancelled'
  | 'config'
  | 'other';

export interface TokenUsage {
  input: number;
  output: number;
}

/** Token usage as the engine serialises it in `llm_response` (src/run/provider.rs). The view
 *  models normalise it to `TokenUsage` (`normUsage` in ./model/calls.ts). */
export interface WireTokenUsage {
  input_tokens: number;
  output_tokens: number;
}

interface EventBase {
  run: string;
  ts_ms: number;
}

export type DebugEvent = EventBase &
  (
    | { event: 'run_started'; agent: string; input: unknown; /** The state before step 1 (engine ≥ issue 5). */ state?: unknown }
    | { event: 'node_enter'; step: number; node: string; kind: string }
    | { event: 'node_exit'; step: number; node: string; update: unknown; duration_ms: number }
    | { event: 'route'; from: string; to: string; reason: RouteReason }
    | { event: 'llm_request'; node: string; messages: unknown; tools: unknown; /** `provider:name` as the document names it. */ model?: string | null }
    /** Streamed text of the answer in flight (coalesced, ~40 ms). */
    | { event: 'llm_delta'; node: string; text: string }
    | {
        event: 'llm_response';
        node: string;
        content?: string | null;
        tool_calls?: ToolCallInfo[];
        usage?: WireTokenUsage | TokenUsage;
        /** Latency of the call, streaming included. */
        duration_ms?: number | null;
        /** The model that answered, as the provider reports it. */
        model?: string | null;
        cost_usd?: number | null;
      }
    /** A model call failed (it may be retried: a new `llm_request` follows). */
    | { event: 'llm_error'; node: string; kind: LlmErrorKind; message: string; duration_ms: number }
    /** A replayed run sent a request that differs from the recording (the first difference). */
    | { event: 'replay_diverged'; node: string; call: number; path: string; recorded: unknown; now: unknown }
    /** A line of a tool server's stderr (MCP), or another run log line. */
    | { event: 'log'; node?: string | null; source?: string | null; level?: string | null; message?: string; text?: string }
    | { event: 'tool_call'; node: string; call: ToolCallInfo }
    | { event: 'tool_result'; node: string; id: string; name: string; result?: unknown; error?: string | null }
    | { event: 'interrupt'; id: string; node: string; kind: InterruptKind; prompt: string; options?: string[]; value?: unknown; default?: string | null; validation?: string | null }
    | { event: 'state_edited'; key: string; value: unknown }
    | { event: 'rewound'; step: number }
    | { event: 'paused'; reason: PauseReason }
    /** The run paused before a step of a nested run (`run` = `<top>/<node>[/<node2>…]`): Step
     *  Into, a step inside it, or a pause while it ran. Sent again with the new `state` after an
     *  edit made while paused there. The top-level status stays `running` meanwhile. */
    | {
        event: 'nested_paused';
        reason: PauseReason;
        /** Steps the nested run has done. */
        step: number;
        /** The nested run's nodes about to run. */
        due: string[];
        /** The nested agent's name. */
        agent: string;
        /** The nested agent's file (absolute); null/absent when it has none (e.g. inline). */
        file?: string | null;
        /** The nested run's whole state. */
        state: unknown;
        /** 1 for a child of the top-level run, 2 for a grandchild… */
        depth: number;
        /** The top-level node the nested run runs inside. */
        node: string;
      }
    /** The pause inside the nested run `run` ended (continue, step, step out, stop). */
    | { event: 'nested_resumed' }
    | { event: 'error'; node?: string | null; message: string }
    | { event: 'run_finished'; status: FinishStatus; state: unknown; output: unknown }
    /** A helper process's own output (an MCP server's stderr, `source` = `mcp:<server>`); kept in the event log only. */
    | { event: 'log'; source: string; text: string }
    /** A sherma hook executor ran at a hook point (`before_llm_call`, `node_exit`, ...). */
    | {
        event: 'hook';
        node?: string | null;
        point: string;
        /** `python:<import_path>`, `url:<url>` or `mcp:<server>`. */
        executor: string;
        outcome: HookOutcome;
        duration_ms: number;
        /** The fields it changed, or why it failed. */
        detail?: string | null;
      }
  );

/** What a hook executor did with its context (`failed`: skipped with a warning, or the node failed). */
export type HookOutcome = 'pass' | 'modified' | 'consumed' | 'failed';

export interface TraceFile {
  path: string;
  events: DebugEvent[];
}

/** `trace_state_at`: a recorded run's state after a step and after the step before, as the
 *  engine rebuilds them from the trace with the dialect's reducers. */
export interface TraceStateAt {
  state: Record<string, unknown>;
  /** The state after the step before; null for step 0. */
  prev: Record<string, unknown> | null;
  /** Why the states may differ from what the engine held (e.g. a Loki graph's reducers unknown:
   *  no agent file fits the trace); null when they are exact. */
  warning: string | null;
}
