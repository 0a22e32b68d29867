// Generated from crates/suite (results, coverage) by ts-rs (`cargo test --workspace --features switchyard-app/custom-protocol --lib contract`); do not edit.
// UPDATE_TS=1 with that command rewrites it after a change to the Rust types.
import type { Diagnostic } from './syntax';
import type { JsonValue, RunStatus } from './runtime';

/**
 * A suite as the app lists it before running it: its file, agent, cases and problems.
 */
export type SuiteInfo = { file: string, agent: string, cases: Array<CaseInfo>, diagnostics: Array<Diagnostic>, };

/**
 * A case of a [`SuiteInfo`]: its name and where it is written.
 */
export type CaseInfo = { name: string, line: number, 
/**
 * Calls a live model (skipped unless live cases are asked for).
 */
live: boolean, };

/**
 * One suite's results.
 */
export type SuiteResult = { 
/**
 * The suite file, as found.
 */
file: string, 
/**
 * The agent it tests.
 */
agent: string, cases: Array<CaseResult>, 
/**
 * The agent's routing coverage over every run of the suite (none when nothing ran).
 */
coverage?: Coverage, 
/**
 * Problems of the suite file (a suite with errors runs nothing) or why it could not run.
 */
diagnostics: Array<Diagnostic>, };

/**
 * Totals over suites.
 */
export type Totals = { suites: number, cases: number, passed: number, failed: number, errors: number, skipped: number, 
/**
 * Suites that could not run (bad suite file, untrusted agent).
 */
broken_suites: number, };

/**
 * A case's result over its runs.
 */
export type CaseResult = { name: string, 
/**
 * Where the case's name is written.
 */
line: number, column: number, outcome: Outcome, runs: number, passed_runs: number, pass_rate: number, 
/**
 * Why it was skipped or could not run.
 */
message?: string, 
/**
 * The first failing run (else the last run).
 */
run?: RunSummary, duration_ms: number, };

/**
 * How a case ended.
 */
export type Outcome = "passed" | "failed" | "error" | "skipped";

/**
 * One run of a case.
 */
export type RunSummary = { status?: RunStatus, steps: number, 
/**
 * Prompt and completion tokens of every LLM call (nested runs included).
 */
tokens: number, cost_usd: number, 
/**
 * The nodes the run entered, in order (a Loki super-step's nodes in declaration order).
 */
nodes: Array<string>, output: JsonValue, 
/**
 * The run's failure (or why it could not start).
 */
error?: string, duration_ms: number, 
/**
 * The expectations that did not hold, in the order they are written.
 */
failures: Array<Failure>, 
/**
 * The run's JSONL trace, written when it failed and a trace folder was given.
 */
trace?: string, };

/**
 * An expectation that did not hold, where it is written.
 */
export type Failure = { 
/**
 * The expectation's key (`status`, `nodes`, `state.verdict`, ...).
 */
expectation: string, message: string, file: string, line: number, column: number, end_line: number, end_column: number, hint?: string, 
/**
 * The step of the run where it went wrong, when there is one (the first node that
 * differs from the expected sequence, the step past the budget).
 */
step?: number, };

/**
 * Routing coverage of one agent over the runs of a suite.
 */
export type Coverage = { 
/**
 * The agent (sherma agent id, Loki graph name).
 */
agent: string, 
/**
 * The runs counted.
 */
runs: number, 
/**
 * Every node of the graph, in the graph's order.
 */
nodes: Array<NodeCount>, 
/**
 * Every edge of the graph, in the graph's order.
 */
edges: Array<EdgeCount>, other_routes: Array<OtherRoute>, nodes_covered: number, edges_covered: number, };

/**
 * How often one node ran.
 */
export type NodeCount = { id: string, kind: string, 
/**
 * Made explicit by lowering (sherma's `<node>_tools`, start and end markers).
 */
derived: boolean, count: number, };

/**
 * How often one edge was taken; `index` is its position in the graph's edge list (the order
 * of `switchyard graph --format json` and the canvas).
 */
export type EdgeCount = { index: number, from: string, to: string, 
/**
 * `entry`, `static`, `branch`, `default`, `next`, `route`, `on_other`, `fallback`,
 * `map_branch`, `dynamic`.
 */
kind: string, label?: string, derived: boolean, count: number, };

/**
 * A route a run took that no edge of the graph stands for (a Loki script's `_next` to a node
 * it does not declare, say).
 */
export type OtherRoute = { from: string, to: string, reason: string, count: number, };

/**
 * Where a saved case went.
 */
export type SavedRun = { 
/**
 * The suite file (created when the agent had none).
 */
file: string, case: string, 
/**
 * The cassette written beside the suite.
 */
cassette: string, 
/**
 * The suite was created.
 */
created: boolean, };
