// View models of a run, folded from the engine's debugger events (crates/runtime/src/events.rs),
// one module per concern:
//
//   fold.ts      the `RunModel`, the fold (`foldEvents`, `ModelFolder`), rewinds, the trace's dialect
//   timeline.ts  timeline rows: steps, nodes, routes, edits, hooks
//   overlay.ts   the canvas overlay: running / visited nodes, taken edges, failed nodes
//   calls.ts     LLM and tool calls: streamed text, model, tokens, latency, cost; replay divergence
//   outcome.ts   the pending interrupt, failures, the end of the run
//   nested.ts    nested runs and the pause inside one
//   diff.ts      state diffs
//   skills.ts    the skills loaded in a sherma state
//   draft.ts     the copy-on-write draft a batch is folded into (internal)
//
// The states themselves are the engine's: `run_state_at` (live) and `trace_state_at` (a recorded
// run) answer them; the UI only diffs and shows them.
export { applyStatus, edgeKey, emptyOverlay, rebuildOverlay, type CanvasOverlay, type EdgeMark } from './overlay';
export { normUsage, type CallRecord, type Divergence } from './calls';
export { diffIndex, diffState, jsonEqual, pathKey, type DiffEntry, type DiffKind } from './diff';
export { emptyModel, foldEvents, guessDialect, ModelFolder, type FoldInternal, type RunModel } from './fold';
export { endNestedPause, nestedDiff, type NestedPause, type NestedRunInfo } from './nested';
export type { Finished, RunError } from './outcome';
export { loadedSkills, type LoadedSkill } from './skills';
export {
  findRow,
  lastDoneStep,
  lastStep,
  LIVE_ROWS,
  PackedRow,
  routeLabel,
  rowAt,
  type HookRecord,
  type RouteTaken,
  type StateEdit,
  type StepRow,
  type StepStatus,
} from './timeline';
