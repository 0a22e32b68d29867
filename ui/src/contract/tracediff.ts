// Generated from crates/launch (trace::diff) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --lib contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.
import type { JsonValue } from './editor';

/**
 * Two runs compared.
 */
export type TraceDiff = { 
/**
 * The earliest difference; `None` when the runs are the same.
 */
first_divergence: RunDivergence | null, 
/**
 * Step 0 (the input and initial state) and every step either run took, aligned by number.
 */
steps: Array<AlignedStep>, 
/**
 * How each run ended (`completed`, `failed`, ...; `None`: the trace has no end).
 */
end_a: string | null, end_b: string | null, output_a: JsonValue, output_b: JsonValue, };

/**
 * Where two runs first differ.
 */
export type RunDivergence = { step: number, 
/**
 * `input`, `node`, `llm_request`, `llm_response`, `interrupt`, `state`, `route`, `error`,
 * `end` or `output`.
 */
kind: string, 
/**
 * The node it happened at, when there is one.
 */
node: string | null, 
/**
 * Where inside the compared values (`messages[1].content`, a state key).
 */
path: string | null, message: string, 
/**
 * The two values at `path` (`None`: nothing there on that side).
 */
a: JsonValue | null, b: JsonValue | null, };

/**
 * One step of both runs.
 */
export type AlignedStep = { step: number, same: boolean, a: StepView | null, b: StepView | null, };

/**
 * What one run did in one step.
 */
export type StepView = { 
/**
 * The nodes that ran (a Loki super-step may run several), with their kinds.
 */
nodes: Array<[string, string]>, llm: Array<LlmCall>, 
/**
 * The question a node asked.
 */
interrupt: string | null, error: string | null, 
/**
 * The state keys the step changed, with their new values (step 0: the initial state).
 */
changed: { [key in string]: JsonValue }, routes: Array<RouteTaken>, };

export type LlmCall = { node: string, model: string | null, messages: JsonValue, tools: JsonValue, 
/**
 * The reply's text and tool calls (`None`: no reply recorded).
 */
content: string | null, tool_calls: JsonValue, };

export type RouteTaken = { from: string, to: string, 
/**
 * `static`, `branch 1: state.x > 2`, `option ship`, `default`, ...
 */
reason: string, };
