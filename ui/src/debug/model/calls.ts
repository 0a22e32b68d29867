// LLM and tool calls of a run (top-level and nested): requests, streamed text, responses with
// their model, tokens, latency and cost, failed attempts, tool results; and the first replay
// divergence.
import type { DebugEvent, LlmErrorKind, TokenUsage, ToolCallInfo } from '../types';
import type { Draft } from './draft';
import { findRow, rowOfNode, type StepRow } from './timeline';
import { lastIndexOf } from './util';

/** One LLM or tool call made during a step (nested runs included, see `run`). */
export interface CallRecord {
  kind: 'llm' | 'tool';
  node: string;
  /** The top-level step the call belongs to. */
  step: number;
  /** Tool calls: the call id; LLM calls: a generated id unique within the model. */
  id: string;
  /** The run that made the call: the top-level run id, or `<run>/<node>` for a nested run. */
  run: string;
  request?: { messages: unknown; tools: unknown };
  response?: { content: string | null; tool_calls: ToolCallInfo[]; usage: TokenUsage | null };
  call?: ToolCallInfo;
  result?: unknown;
  error?: string | null;
  /** LLM calls that failed: the failure's kind (`error` holds the message). */
  errorKind?: LlmErrorKind | null;
  /** LLM calls: the text streamed so far (`llm_delta`), until the response replaces it. */
  stream?: string;
  /** LLM calls: the model asked for (`provider:name`), then the one that answered. */
  model?: string | null;
  /** LLM calls: the latency the engine measured (`duration_ms`). */
  durationMs?: number | null;
  /** LLM calls: what the call cost, when the model's price is known. */
  costUsd?: number | null;
  startMs: number;
  endMs: number | null;
}

/** The first request of a replay that differs from the recording (`replay_diverged`). */
export interface Divergence {
  node: string;
  /** Which call of the node (1-based). */
  call: number;
  /** Where the requests differ (`messages[1].content`), or why there is no recorded call. */
  path: string;
  recorded: unknown;
  now: unknown;
  /** The run that made the call (`<run>/<node>` for a nested run). */
  run: string;
  /** The top-level step it happened in (null: before any step). */
  step: number | null;
}

/** Normalise the engine's `{input_tokens, output_tokens}` (or `{input, output}`) usage. */
export function normUsage(u: unknown): TokenUsage | null {
  if (!u || typeof u !== 'object') return null;
  const o = u as Record<string, unknown>;
  const input = Number(o.input_tokens ?? o.input ?? 0) || 0;
  const output = Number(o.output_tokens ?? o.output ?? 0) || 0;
  return { input, output };
}

function addTokens(row: StepRow, u: TokenUsage | null): void {
  if (!u) return;
  row.tokens = row.tokens ? { input: row.tokens.input + u.input, output: row.tokens.output + u.output } : { ...u };
}

/** LLM/tool call events (top-level and nested) into `row.calls`. */
export function foldCall(d: Draft, row: StepRow, ev: DebugEvent): void {
  const m = d.m;
  switch (ev.event) {
    case 'llm_request': {
      const id = `llm-${++m.internal.seq}`;
      row.calls.push({
        kind: 'llm',
        node: ev.node,
        step: row.step,
        id,
        run: ev.run,
        request: { messages: ev.messages, tools: ev.tools },
        model: ev.model ?? null,
        startMs: ev.ts_ms,
        endMs: null,
      });
      d.llmOpen()[`${ev.run}\u0000${ev.node}`] = [row.step, id];
      break;
    }
    case 'llm_delta': {
      // Text of the answer in flight: appended to its call; no new row, no new call.
      const open = m.internal.llm[`${ev.run}\u0000${ev.node}`];
      if (!open || typeof ev.text !== 'string') break;
      const ri = findRow(m.steps, open[0]);
      if (ri < 0) break;
      const target = d.row(ri);
      const ci = lastIndexOf(target.calls, (c) => c.id === open[1]);
      if (ci < 0) break;
      const c = target.calls[ci];
      if (d.isOwn(c)) c.stream = (c.stream ?? '') + ev.text;
      else target.calls[ci] = d.own({ ...c, stream: (c.stream ?? '') + ev.text });
      break;
    }
    case 'llm_response': {
      const usage = normUsage(ev.usage);
      const response = { content: ev.content ?? null, tool_calls: ev.tool_calls ?? [], usage };
      const extra = { durationMs: ev.duration_ms ?? null, costUsd: ev.cost_usd ?? null };
      const [target, ci] = closeLlmCall(d, row, ev.run, ev.node);
      if (ci >= 0) {
        const c = target.calls[ci];
        // The final response replaces the streamed text.
        target.calls[ci] = { ...c, response, ...extra, model: ev.model ?? c.model ?? null, stream: undefined, endMs: ev.ts_ms };
        addTokens(target, usage);
        break;
      }
      target.calls.push({ kind: 'llm', node: ev.node, step: target.step, id: `llm-${++m.internal.seq}`, run: ev.run, response, ...extra, model: ev.model ?? null, startMs: ev.ts_ms, endMs: ev.ts_ms });
      addTokens(target, usage);
      break;
    }
    case 'llm_error': {
      const patch = { error: ev.message, errorKind: ev.kind ?? 'other', durationMs: ev.duration_ms ?? null, endMs: ev.ts_ms };
      const [target, ci] = closeLlmCall(d, row, ev.run, ev.node);
      if (ci >= 0) {
        target.calls[ci] = { ...target.calls[ci], ...patch };
        target.llmErrors++;
        break;
      }
      target.calls.push({ kind: 'llm', node: ev.node, step: target.step, id: `llm-${++m.internal.seq}`, run: ev.run, ...patch, startMs: ev.ts_ms - (ev.duration_ms ?? 0) });
      target.llmErrors++;
      break;
    }
    case 'tool_call': {
      const call = ev.call;
      row.calls.push({ kind: 'tool', node: ev.node, step: row.step, id: call?.id ?? '', run: ev.run, call, startMs: ev.ts_ms, endMs: null });
      d.toolOpen()[`${ev.run}\u0000${call?.id ?? ''}`] = row.step;
      break;
    }
    case 'tool_result': {
      const key = `${ev.run}\u0000${ev.id}`;
      const step = m.internal.tool[key];
      const patch = { result: ev.result ?? null, error: ev.error ?? null, endMs: ev.ts_ms };
      if (step !== undefined) {
        delete d.toolOpen()[key];
        const ri = findRow(m.steps, step);
        if (ri >= 0) {
          const target = d.row(ri);
          const ci = lastIndexOf(target.calls, (c) => c.kind === 'tool' && c.id === ev.id && c.run === ev.run);
          if (ci >= 0) {
            target.calls[ci] = { ...target.calls[ci], ...patch };
            break;
          }
        }
      }
      row.calls.push({ kind: 'tool', node: ev.node, step: row.step, id: ev.id, run: ev.run, call: { id: ev.id, name: ev.name, args: null }, ...patch, startMs: ev.ts_ms });
      break;
    }
    default:
      break;
  }
}

/** Keep the first divergence of the run (the engine reports only the first). */
export function diverged(d: Draft, ev: Extract<DebugEvent, { event: 'replay_diverged' }>, step: number | null): void {
  if (d.m.diverged) return;
  d.m.diverged = { node: ev.node, call: ev.call, path: ev.path, recorded: ev.recorded, now: ev.now, run: ev.run, step };
}

/** Closes the LLM call still open for (run, node): its row and its index there. Without an open
 * call (or when it is gone from its row) the row to add a call to, and -1. */
function closeLlmCall(d: Draft, row: StepRow, run: string, node: string): [StepRow, number] {
  const key = `${run}\u0000${node}`;
  const open = d.m.internal.llm[key];
  if (!open) return [row, -1];
  delete d.llmOpen()[key];
  const ri = findRow(d.m.steps, open[0]);
  if (ri < 0) return [row, -1];
  const target = d.row(ri);
  return [target, lastIndexOf(target.calls, (c) => c.id === open[1])];
}

/** A call event of the top-level run: into the row of its node (a streamed delta into the row of
 *  the call it belongs to). */
export function foldTopCall(d: Draft, ev: DebugEvent): void {
  const m = d.m;
  switch (ev.event) {
    case 'llm_delta': {
      // Deltas touch only their call's row (found through the open call, not by search).
      const open = m.internal.llm[`${ev.run}\u0000${ev.node}`];
      if (!open) break;
      const i = findRow(m.steps, open[0]);
      if (i >= 0) foldCall(d, m.steps[i], ev);
      break;
    }
    case 'replay_diverged': {
      const i = rowOfNode(m.steps, ev.node);
      diverged(d, ev, i >= 0 ? m.steps[i].step : null);
      break;
    }
    case 'llm_request':
    case 'llm_response':
    case 'llm_error':
    case 'tool_call':
    case 'tool_result': {
      const i = rowOfNode(m.steps, ev.node);
      if (i < 0) break;
      foldCall(d, d.row(i), ev);
      break;
    }
    default:
      break;
  }
}
