// Types of the debugger contract (docs/app-contract.md §5). The engine's own types (events, the
// driver's status and batches, interrupts, breakpoints, a durable run's record) are generated from
// the Rust types into ../contract/runtime.ts and re-exported here under the names the UI uses; what
// is written here by hand are the shell's command types (src-tauri/src/debug.rs) and the UI's own
// derived types.

import type {
  Batch,
  Breakpoint,
  ErrorKind,
  Event,
  HookOutcome,
  InterruptKind,
  PauseReason,
  Pending,
  RouteReason,
  RunRecord,
  RunStatus,
  StatusInfo,
  TokenUsage as EngineTokenUsage,
  ToolCall,
} from '../contract/runtime';

export type { Breakpoint, HookOutcome, InterruptKind, PauseReason, Pending, RouteReason };
export type { JsonValue } from '../contract/runtime';

/** An engine event exactly as a JSONL trace holds it (engine `Event`). */
export type DebugEvent = Event;
/** The driver's status, sent with batches whenever it changes (engine `StatusInfo`). */
export type RunStatusInfo = StatusInfo;
/** Event `run-events` (engine `Batch`). */
export type RunBatch = Batch;
/** A durable run as the run store keeps it (`runs_list`; engine `RunRecord`). */
export type DurableRun = RunRecord;
export type FinishStatus = RunStatus;
/** `ErrorKind` of a failed LLM call. */
export type LlmErrorKind = ErrorKind;
export type ToolCallInfo = ToolCall;
/** Token usage as the engine serialises it in `llm_response`. The view models normalise it to
 *  `TokenUsage` (`normUsage` in ./model/calls.ts). */
export type WireTokenUsage = EngineTokenUsage;

/** Token usage as the view models keep it. */
export interface TokenUsage {
  input: number;
  output: number;
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

export interface RunsList {
  /** The run store's file. */
  db: string;
  runs: DurableRun[];
}

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
