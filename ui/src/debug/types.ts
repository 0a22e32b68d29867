// Types of the debugger contract (docs/app-contract.md §5). The engine's own types (events, the
// driver's status and batches, interrupts, breakpoints, a durable run's record) are generated from
// the Rust types into ../contract/runtime.ts, the shell's command types (src-tauri/src/debug.rs)
// into ../contract/shell.ts; both are re-exported here under the names the UI uses. What is
// written here by hand are the UI's own derived types.

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

export type { LlmMode, RecordCheck, RunConfig, RunInfo, RunsList, TraceFile, TraceStateAt } from '../contract/shell';
export type { RemoteAssistant, RemoteOpened, RemoteRunInfo, RemoteStart, RemoteStatus } from '../contract/shell';

/** Where remote documents are (src-tauri/src/remote.rs `REMOTE_ROOT`): a server's agent file
 *  shown read-only, never on disk. */
export const REMOTE_ROOT = '/switchyard-remote/';

export function isRemotePath(path: string | null | undefined): boolean {
  return !!path && path.startsWith(REMOTE_ROOT);
}
