import { describe, expect, it } from 'vitest';
import {
  applyStatus,
  diffIndex,
  diffState,
  emptyModel,
  foldEvents,
  loadedSkills,
  lastDoneStep,
  ModelFolder,
  PackedRow,
  routeLabel,
  rowAt,
  type RunModel,
} from '../debug/model';
import type { DebugEvent } from '../debug/types';

type Body = DebugEvent extends infer E ? (E extends DebugEvent ? Omit<E, 'run' | 'ts_ms'> : never) : never;

/** Events of run `run`, stamped 10 ms apart. */
function events(run: string, bodies: Body[], t0 = 1_700_000_000_000): DebugEvent[] {
  return bodies.map((b, i) => ({ run, ts_ms: t0 + i * 10, ...b }) as DebugEvent);
}

const R = 'run-1';

/** support-triage (sherma) up to its first interrupt, in the order the engine emits. */
function shermaRun(): DebugEvent[] {
  return events(R, [
    { event: 'run_started', agent: 'support-triage', input: 'Where is my order 1001?' },
    { event: 'node_enter', step: 1, node: 'start', kind: 'set_state' },
    { event: 'node_exit', step: 1, node: 'start', update: { turns: 0, status: 'open' }, duration_ms: 1 },
    { event: 'route', from: 'start', to: 'answer', reason: { type: 'static' } },
    { event: 'node_enter', step: 2, node: 'answer', kind: 'call_llm' },
    { event: 'llm_request', node: 'answer', messages: [{ role: 'user', content: 'Where is my order 1001?' }], tools: [{ name: 'lookup_order' }] },
    { event: 'llm_response', node: 'answer', content: null, tool_calls: [{ id: 'call_1', name: 'lookup_order', args: { order_id: '1001' } }], usage: { input_tokens: 99, output_tokens: 8 } } as unknown as Body,
    { event: 'node_exit', step: 2, node: 'answer', update: { messages: [{ type: 'ai', content: '', tool_calls: [{ id: 'call_1', name: 'lookup_order', args: { order_id: '1001' } }] }] }, duration_ms: 30 },
    { event: 'route', from: 'answer', to: 'answer_tools', reason: { type: 'branch', index: 0, condition: 'has_tool_calls' } },
    { event: 'node_enter', step: 3, node: 'answer_tools', kind: 'tool_node' },
    { event: 'tool_call', node: 'answer_tools', call: { id: 'call_1', name: 'lookup_order', args: { order_id: '1001' } } },
    { event: 'tool_result', node: 'answer_tools', id: 'call_1', name: 'lookup_order', result: 'shipped on Monday' },
    { event: 'node_exit', step: 3, node: 'answer_tools', update: { messages: [{ type: 'tool', content: 'shipped on Monday', tool_call_id: 'call_1' }] }, duration_ms: 5 },
    { event: 'route', from: 'answer_tools', to: 'answer', reason: { type: 'static' } },
    { event: 'node_enter', step: 4, node: 'answer', kind: 'call_llm' },
    { event: 'llm_request', node: 'answer', messages: [], tools: [] },
    { event: 'llm_response', node: 'answer', content: 'Order 1001 shipped on Monday.', tool_calls: [], usage: { input_tokens: 150, output_tokens: 26 } } as unknown as Body,
    { event: 'node_exit', step: 4, node: 'answer', update: { messages: [{ type: 'ai', content: 'Order 1001 shipped on Monday.' }] }, duration_ms: 20 },
    { event: 'route', from: 'answer', to: 'count', reason: { type: 'default' } },
    { event: 'node_enter', step: 5, node: 'count', kind: 'data_transform' },
    { event: 'node_exit', step: 5, node: 'count', update: { turns: 1 }, duration_ms: 1 },
    { event: 'route', from: 'count', to: 'confirm', reason: { type: 'static' } },
    { event: 'node_enter', step: 6, node: 'confirm', kind: 'interrupt' },
    { event: 'interrupt', id: 'confirm#1', node: 'confirm', kind: 'interrupt', prompt: 'Order 1001 shipped on Monday.', options: [], value: 'Order 1001 shipped on Monday.' },
  ]);
}

/** The answer: sherma re-enters the interrupted node with the same step number. */
function shermaResume(): DebugEvent[] {
  return events(
    R,
    [
      { event: 'node_enter', step: 6, node: 'confirm', kind: 'interrupt' },
      { event: 'node_exit', step: 6, node: 'confirm', update: { messages: [{ type: 'human', content: 'done' }] }, duration_ms: 2 },
      { event: 'route', from: 'confirm', to: '__end__', reason: { type: 'branch', index: 0, condition: 'done' } },
    ],
    1_700_000_100_000,
  );
}

/** release-gate (Loki): plan fans out to lint + tests (one super-step), then an approval. */
function lokiRun(): DebugEvent[] {
  return events(R, [
    { event: 'run_started', agent: 'release-gate', input: 'v1.2' },
    { event: 'node_enter', step: 1, node: 'plan', kind: 'script' },
    { event: 'node_exit', step: 1, node: 'plan', update: { checks: ['lint', 'tests'], planned: 'yes' }, duration_ms: 3 },
    { event: 'route', from: 'plan', to: 'lint', reason: { type: 'static' } },
    { event: 'route', from: 'plan', to: 'tests', reason: { type: 'static' } },
    { event: 'node_enter', step: 2, node: 'lint', kind: 'script' },
    { event: 'node_enter', step: 2, node: 'tests', kind: 'script' },
    { event: 'node_exit', step: 2, node: 'lint', update: { findings: 'lint: 0 problems', lint_done: 'yes' }, duration_ms: 40 },
    { event: 'route', from: 'lint', to: 'summarise', reason: { type: 'static' } },
    { event: 'node_exit', step: 2, node: 'tests', update: { findings: 'tests: 42 passed', tests_done: 'yes' }, duration_ms: 70 },
    { event: 'route', from: 'tests', to: 'summarise', reason: { type: 'static' } },
    { event: 'node_enter', step: 3, node: 'summarise', kind: 'llm' },
    { event: 'node_exit', step: 3, node: 'summarise', update: { verdict: 'ship' }, duration_ms: 9 },
    { event: 'route', from: 'summarise', to: 'approve', reason: { type: 'static' } },
    { event: 'interrupt', id: 'approve#1', node: 'approve', kind: 'approval', prompt: 'Ship it?', options: ['ship', 'hold'] },
  ]);
}

describe('routeLabel', () => {
  it('labels every reason the engine reports', () => {
    expect(routeLabel({ type: 'static' })).toBe('');
    expect(routeLabel({ type: 'branch', index: 0, condition: 'state.n > 2' })).toBe('branch 1: state.n > 2');
    expect(routeLabel({ type: 'branch', index: 2, condition: 'x' })).toBe('branch 3: x');
    expect(routeLabel({ type: 'default' })).toBe('default');
    expect(routeLabel({ type: '_next' })).toBe('_next');
    expect(routeLabel({ type: 'fallback' })).toBe('fallback');
    expect(routeLabel({ type: 'on_other' })).toBe('on_other');
    expect(routeLabel({ type: 'route_option', option: 'ship' })).toBe('option: ship');
  });
});

describe('foldEvents: a sherma run', () => {
  it('builds one row per step with status, kinds, updates, tokens and routes', () => {
    const m = foldEvents(emptyModel(), shermaRun());
    expect(m.run).toBe(R);
    expect(m.agent).toBe('support-triage');
    expect(m.input).toBe('Where is my order 1001?');
    expect(m.eventCount).toBe(shermaRun().length);
    expect(m.steps.map((r) => [r.step, r.nodes.join(','), r.status])).toEqual([
      [1, 'start', 'done'],
      [2, 'answer', 'done'],
      [3, 'answer_tools', 'done'],
      [4, 'answer', 'done'],
      [5, 'count', 'done'],
      [6, 'confirm', 'interrupted'],
    ]);
    const [s1, s2] = m.steps;
    expect(s1.kinds).toEqual(['set_state']);
    expect(s1.update).toEqual({ turns: 0, status: 'open' });
    expect(s1.tokens).toBeNull();
    expect(s2.tokens).toEqual({ input: 99, output: 8 });
    expect(s2.durationMs).toBe(30);
    expect(s2.routes).toEqual([
      { from: 'answer', to: 'answer_tools', reason: { type: 'branch', index: 0, condition: 'has_tool_calls' }, label: 'branch 1: has_tool_calls' },
    ]);
    expect(m.steps[3].routes[0].label).toBe('default');
  });

  it('marks the canvas: visited steps, taken edges with labels, the latest edge, the current node', () => {
    const m = foldEvents(emptyModel(), shermaRun());
    expect(m.overlay.visited).toEqual({ start: [1], answer: [2, 4], answer_tools: [3], count: [5], confirm: [6] });
    expect(m.overlay.edges['answer->answer_tools']).toMatchObject({ label: 'branch 1: has_tool_calls', steps: [2], last: false });
    expect(m.overlay.edges['start->answer']).toMatchObject({ label: '', steps: [1] });
    expect(m.overlay.edges['answer->count']).toMatchObject({ label: 'default', steps: [4] });
    const last = Object.entries(m.overlay.edges).filter(([, e]) => e.last).map(([k]) => k);
    expect(last).toEqual(['count->confirm']);
    expect(m.overlay.current).toEqual(['confirm']);
    expect(m.pending).toMatchObject({ id: 'confirm#1', node: 'confirm', kind: 'interrupt', options: [], value: 'Order 1001 shipped on Monday.' });
  });

  it('pairs each llm_request with its llm_response and each tool_call with its tool_result', () => {
    const m = foldEvents(emptyModel(), shermaRun());
    const [llm] = m.steps[1].calls;
    expect(llm.kind).toBe('llm');
    expect(llm.request?.tools).toEqual([{ name: 'lookup_order' }]);
    expect(llm.response).toEqual({ content: null, tool_calls: [{ id: 'call_1', name: 'lookup_order', args: { order_id: '1001' } }], usage: { input: 99, output: 8 } });
    expect(llm.endMs! - llm.startMs).toBe(10);
    expect(m.steps[1].calls).toHaveLength(1);
    const [tool] = m.steps[2].calls;
    expect(tool).toMatchObject({ kind: 'tool', id: 'call_1', node: 'answer_tools', step: 3, result: 'shipped on Monday', error: null });
    expect(tool.call?.args).toEqual({ order_id: '1001' });
    expect(m.steps[3].calls[0].response?.content).toBe('Order 1001 shipped on Monday.');
  });

  it('resumes the interrupted step when the node runs again, without a second visit', () => {
    const m1 = foldEvents(emptyModel(), shermaRun());
    const m2 = foldEvents(m1, shermaResume());
    expect(m2.steps).toHaveLength(6);
    expect(m2.steps[5]).toMatchObject({ step: 6, nodes: ['confirm'], status: 'done' });
    expect(m2.pending).toBeNull();
    expect(m2.overlay.visited.confirm).toEqual([6]);
    expect(m2.overlay.current).toEqual([]);
    expect(m2.overlay.edges['confirm->__end__']).toMatchObject({ label: 'branch 1: done', last: true });
    expect(m2.overlay.edges['count->confirm'].last).toBe(false);
  });

  it('is incremental: batches give the same result as one fold, the old model is untouched and untouched rows are shared', () => {
    const all = [...shermaRun(), ...shermaResume()];
    const strip = (m: RunModel) => ({ ...m, internal: null });
    const whole = foldEvents(emptyModel(), all);
    const a = foldEvents(emptyModel(), all.slice(0, 10));
    const snapshot = JSON.stringify(strip(a));
    const b = foldEvents(a, all.slice(10, 20));
    const c = foldEvents(b, all.slice(20));
    expect(JSON.stringify(strip(a))).toBe(snapshot);
    expect(strip(c)).toEqual(strip(whole));
    expect(c.steps[0]).toBe(b.steps[0]);
    expect(c.steps).not.toBe(b.steps);
  });

  it('records state edits on the step they were made after, and errors on the failing node', () => {
    let m = foldEvents(emptyModel(), shermaRun().slice(0, 8));
    m = foldEvents(m, events(R, [{ event: 'paused', reason: 'step' }, { event: 'state_edited', key: 'turns', value: 5 }]));
    expect(m.paused).toBe('step');
    expect(m.steps[1].edits).toEqual([{ key: 'turns', value: 5 }]);
    expect(m.edits).toEqual([{ step: 2, key: 'turns', value: 5 }]);
    m = foldEvents(
      m,
      events(R, [
        { event: 'node_enter', step: 3, node: 'answer_tools', kind: 'tool_node' },
        { event: 'error', node: 'answer_tools', message: 'tool exploded' },
      ]),
    );
    expect(m.steps[2]).toMatchObject({ status: 'error', error: 'tool exploded' });
    expect(m.overlay.errors).toEqual({ answer_tools: 'tool exploded' });
    expect(m.errors).toEqual([{ node: 'answer_tools', message: 'tool exploded', step: 3 }]);
    m = foldEvents(m, events(R, [{ event: 'run_finished', status: 'failed', state: { turns: 5 }, output: null }]));
    expect(m.finished).toEqual({ status: 'failed', state: { turns: 5 }, output: null });
    expect(m.overlay.current).toEqual([]);
  });
});

describe('foldEvents: a Loki fan-out super-step', () => {
  it('puts the parallel nodes in one row that is done when all of them exited', () => {
    const evs = lokiRun();
    const before = foldEvents(emptyModel(), evs.slice(0, 8)); // lint exited, tests still running
    expect(before.steps[1]).toMatchObject({ step: 2, nodes: ['lint', 'tests'], kinds: ['script', 'script'], status: 'running' });
    expect(before.overlay.current).toEqual(['tests']);
    const m = foldEvents(before, evs.slice(8));
    const row = m.steps[1];
    expect(row.status).toBe('done');
    expect(row.durationMs).toBe(70);
    expect(row.update).toEqual({ findings: 'tests: 42 passed', lint_done: 'yes', tests_done: 'yes' });
    expect(row.updates).toEqual({ lint: { findings: 'lint: 0 problems', lint_done: 'yes' }, tests: { findings: 'tests: 42 passed', tests_done: 'yes' } });
    expect(row.routes.map((r) => `${r.from}->${r.to}`)).toEqual(['lint->summarise', 'tests->summarise']);
    expect(m.steps[0].routes.map((r) => r.to)).toEqual(['lint', 'tests']);
    expect(m.overlay.visited).toMatchObject({ plan: [1], lint: [2], tests: [2], summarise: [3] });
  });

  it('opens the next row for an approval asked before its super-step runs, and routes by option', () => {
    let m = foldEvents(emptyModel(), lokiRun());
    expect(m.steps).toHaveLength(4);
    expect(m.steps[3]).toMatchObject({ step: 4, nodes: ['approve'], kinds: ['approval'], status: 'interrupted' });
    expect(m.pending).toMatchObject({ id: 'approve#1', kind: 'approval', options: ['ship', 'hold'], prompt: 'Ship it?' });
    expect(m.overlay.visited.approve).toBeUndefined();
    expect(m.overlay.current).toContain('approve');
    m = foldEvents(
      m,
      events(R, [
        { event: 'node_enter', step: 4, node: 'approve', kind: 'approval' },
        { event: 'node_exit', step: 4, node: 'approve', update: { decision: 'ship' }, duration_ms: 0 },
        { event: 'route', from: 'approve', to: 'shipped', reason: { type: 'route_option', option: 'ship' } },
      ]),
    );
    expect(m.steps).toHaveLength(4);
    expect(m.steps[3].status).toBe('done');
    expect(m.pending).toBeNull();
    expect(m.overlay.visited.approve).toEqual([4]);
    expect(m.overlay.edges['approve->shipped']).toMatchObject({ label: 'option: ship', steps: [4], last: true });
  });

  it('pairs interleaved LLM calls of parallel nodes by node, and tool results by id', () => {
    const m = foldEvents(
      emptyModel(),
      events(R, [
        { event: 'run_started', agent: 'g', input: '' },
        { event: 'node_enter', step: 1, node: 'a', kind: 'llm' },
        { event: 'node_enter', step: 1, node: 'b', kind: 'llm' },
        { event: 'llm_request', node: 'a', messages: ['A'], tools: [] },
        { event: 'llm_request', node: 'b', messages: ['B'], tools: [] },
        { event: 'llm_response', node: 'b', content: 'from b', usage: { input_tokens: 1, output_tokens: 2 } } as unknown as Body,
        { event: 'tool_call', node: 'a', call: { id: 't1', name: 'x', args: {} } },
        { event: 'tool_call', node: 'b', call: { id: 't2', name: 'y', args: {} } },
        { event: 'tool_result', node: 'b', id: 't2', name: 'y', result: 2 },
        { event: 'tool_result', node: 'a', id: 't1', name: 'x', result: null, error: 'boom' },
        { event: 'llm_response', node: 'a', content: 'from a', usage: { input_tokens: 10, output_tokens: 20 } } as unknown as Body,
      ]),
    );
    const calls = m.steps[0].calls;
    const llm = calls.filter((c) => c.kind === 'llm');
    expect(llm.map((c) => [(c.request?.messages as string[])[0], c.response?.content])).toEqual([
      ['A', 'from a'],
      ['B', 'from b'],
    ]);
    const tools = calls.filter((c) => c.kind === 'tool');
    expect(tools.map((c) => [c.id, c.result, c.error])).toEqual([
      ['t1', null, 'boom'],
      ['t2', 2, null],
    ]);
    expect(m.steps[0].tokens).toEqual({ input: 11, output: 22 });
  });
});

describe('foldEvents: nested runs', () => {
  it('counts a sub-agent run in the parent step and keeps its calls there, not on the canvas', () => {
    const sub = `${R}/delegate`;
    const m = foldEvents(emptyModel(), [
      ...events(R, [
        { event: 'run_started', agent: 'parent', input: {} },
        { event: 'node_enter', step: 1, node: 'delegate', kind: 'call_agent' },
      ]),
      ...events(sub, [
        { event: 'run_started', agent: 'child', input: 'hi' },
        { event: 'node_enter', step: 1, node: 'think', kind: 'call_llm' },
        { event: 'llm_request', node: 'think', messages: [], tools: [] },
        { event: 'llm_response', node: 'think', content: 'ok', usage: { input_tokens: 3, output_tokens: 4 } } as unknown as Body,
        { event: 'node_exit', step: 1, node: 'think', update: {}, duration_ms: 1 },
        { event: 'route', from: 'think', to: '__end__', reason: { type: 'static' } },
        { event: 'run_finished', status: 'completed', state: {}, output: 'ok' },
      ]),
      ...events(R, [{ event: 'node_exit', step: 1, node: 'delegate', update: { answer: 'ok' }, duration_ms: 50 }]),
    ]);
    expect(m.steps).toHaveLength(1);
    const row = m.steps[0];
    expect(row.nested).toBe(7);
    expect(row.status).toBe('done');
    expect(row.calls).toHaveLength(1);
    expect(row.calls[0]).toMatchObject({ kind: 'llm', node: 'think', run: sub, step: 1, response: { content: 'ok' } });
    expect(row.tokens).toEqual({ input: 3, output: 4 });
    expect(m.overlay.visited).toEqual({ delegate: [1] });
    expect(m.overlay.edges).toEqual({});
    expect(m.finished).toBeNull();
    expect(m.eventCount).toBe(10);
  });
});

describe('foldEvents: rewind', () => {
  it('drops the rows after the step, rebuilds the overlay and leaves the earlier model intact', () => {
    const full = foldEvents(emptyModel(), [...shermaRun(), ...shermaResume()]);
    const back = foldEvents(full, events(R, [{ event: 'rewound', step: 2 }]));
    expect(back.steps.map((r) => r.step)).toEqual([1, 2]);
    expect(back.overlay.visited).toEqual({ start: [1], answer: [2] });
    expect(Object.keys(back.overlay.edges).sort()).toEqual(['answer->answer_tools', 'start->answer']);
    expect(back.overlay.edges['answer->answer_tools'].last).toBe(true);
    expect(back.overlay.edges['start->answer'].last).toBe(false);
    expect(back.pending).toBeNull();
    expect(back.finished).toBeNull();
    expect(back.overlay.current).toEqual([]);
    // The run before the rewind is what the store keeps to compare.
    expect(full.steps).toHaveLength(6);
    expect(full.overlay.visited.confirm).toEqual([6]);
    // The fork goes on from step 3.
    const fork = foldEvents(
      back,
      events(R, [
        { event: 'node_enter', step: 3, node: 'answer_tools', kind: 'tool_node' },
        { event: 'node_exit', step: 3, node: 'answer_tools', update: {}, duration_ms: 1 },
        { event: 'route', from: 'answer_tools', to: 'answer', reason: { type: 'static' } },
      ]),
    );
    expect(fork.steps.map((r) => [r.step, r.status])).toEqual([
      [1, 'done'],
      [2, 'done'],
      [3, 'done'],
    ]);
    expect(fork.overlay.visited.answer_tools).toEqual([3]);
    expect(fork.overlay.edges['answer_tools->answer']).toMatchObject({ steps: [3], last: true });
    expect(fork.overlay.edges['answer->answer_tools'].last).toBe(false);
  });

  it('applyStatus shows the nodes due while paused and nothing once finished', () => {
    const m = foldEvents(emptyModel(), shermaRun().slice(0, 4));
    const paused = applyStatus(m, { state: 'paused', step: 1, due: ['answer'], reason: 'step' });
    expect(paused.overlay.current).toEqual(['answer']);
    expect(applyStatus(paused, { state: 'paused', step: 1, due: ['answer'] })).toBe(paused);
    expect(applyStatus(paused, { state: 'running', step: 1, due: [] })).toBe(paused);
    expect(applyStatus(paused, { state: 'finished', step: 1, due: ['x'] }).overlay.current).toEqual([]);
    // The next step's node replaces the due list.
    const next = foldEvents(paused, events(R, [{ event: 'node_enter', step: 2, node: 'answer', kind: 'call_llm' }]));
    expect(next.overlay.current).toEqual(['answer']);
  });
});

describe('diffState', () => {
  it('reports added, changed and removed keys at any depth', () => {
    const d = diffState(
      { a: 1, b: { c: 2, d: 3, deep: { x: 1 } }, gone: true, same: [1, 2] },
      { a: 2, b: { c: 2, e: 4, deep: { x: 1, y: 2 } }, same: [1, 2], fresh: null },
    );
    expect(d).toEqual([
      { path: ['a'], kind: 'changed', before: 1, after: 2 },
      { path: ['b', 'd'], kind: 'removed', before: 3 },
      { path: ['b', 'deep', 'y'], kind: 'added', after: 2 },
      { path: ['b', 'e'], kind: 'added', after: 4 },
      { path: ['gone'], kind: 'removed', before: true },
      { path: ['fresh'], kind: 'added', after: null },
    ]);
    expect(diffState({ a: { b: [1] } }, { a: { b: [1] } })).toEqual([]);
    expect(diffState({ a: [1, 2, 3] }, { a: [1, 5] })).toEqual([
      { path: ['a', 1], kind: 'changed', before: 2, after: 5 },
      { path: ['a', 2], kind: 'removed', before: 3 },
    ]);
    expect(diffState({ a: { x: 1 } }, { a: 'text' })).toEqual([{ path: ['a'], kind: 'changed', before: { x: 1 }, after: 'text' }]);
  });

  it('shows appended messages as added at their index', () => {
    const h = { type: 'human', content: 'hi' };
    const ai = { type: 'ai', content: 'hello', tool_calls: [] };
    const tool = { role: 'tool', content: 'ok' };
    expect(diffState({ messages: [h], turns: 0 }, { messages: [h, ai, tool], turns: 0 })).toEqual([
      { path: ['messages', 1], kind: 'added', after: ai },
      { path: ['messages', 2], kind: 'added', after: tool },
    ]);
  });

  it('matches messages with ids by id: replaced in place, removed from the middle', () => {
    const m1 = { id: '1', type: 'human', content: 'a' };
    const m2 = { id: '2', type: 'ai', content: 'b' };
    const m3 = { id: '3', type: 'ai', content: 'c' };
    expect(diffState({ messages: [m1, m2, m3] }, { messages: [m1, m3] })).toEqual([{ path: ['messages', 1], kind: 'removed', before: m2 }]);
    expect(diffState({ messages: [m1, m2] }, { messages: [m1, { ...m2, content: 'B' }] })).toEqual([
      { path: ['messages', 1, 'content'], kind: 'changed', before: 'b', after: 'B' },
    ]);
  });

  it('lists every key of the initial state as added when there is no previous state', () => {
    expect(diffState(null, { a: 1, b: [] })).toEqual([
      { path: ['a'], kind: 'added', after: 1 },
      { path: ['b'], kind: 'added', after: [] },
    ]);
  });

  it('diffIndex marks each entry and every ancestor of one as changed', () => {
    const idx = diffIndex(
      diffState({ a: { b: { c: 1 } }, messages: [{ type: 'human', content: 'x' }], keep: 1 }, { a: { b: { c: 2 } }, messages: [{ type: 'human', content: 'x' }, { type: 'ai', content: 'y' }], keep: 1, n: 1 }),
    );
    expect(Object.fromEntries(idx)).toEqual({
      'a.b.c': 'changed',
      'a.b': 'changed',
      a: 'changed',
      'messages.1': 'added',
      messages: 'changed',
      n: 'added',
    });
    expect(idx.get('keep')).toBeUndefined();
  });
});

describe('foldEvents: long runs', () => {
  it('folds a 10,000-step run streamed in small batches quickly, sharing finished rows', () => {
    const N = 10_000;
    const all: DebugEvent[] = [{ event: 'run_started', run: R, ts_ms: 0, agent: 'loop', input: {} }];
    for (let s = 1; s <= N; s++) {
      const node = s % 2 ? 'inc' : 'check';
      all.push({ event: 'node_enter', run: R, ts_ms: s, step: s, node, kind: 'set_state' });
      all.push({ event: 'node_exit', run: R, ts_ms: s, step: s, node, update: { n: s }, duration_ms: 0 });
      all.push({ event: 'route', run: R, ts_ms: s, from: node, to: s % 2 ? 'check' : 'inc', reason: { type: 'default' } });
    }
    const t0 = performance.now();
    let m = emptyModel();
    let prev = m;
    // ~30 batches a second for a fast run: batches of 60 events (20 steps).
    for (let i = 0; i < all.length; i += 60) {
      prev = m;
      m = foldEvents(m, all.slice(i, i + 60));
    }
    const ms = performance.now() - t0;
    expect(m.steps).toHaveLength(N);
    expect(m.steps[N - 1]).toMatchObject({ step: N, status: 'done', update: { n: N } });
    expect(m.overlay.visited.inc).toHaveLength(N / 2);
    expect(m.overlay.edges['inc->check'].steps).toHaveLength(N / 2);
    expect(m.steps[0]).toBe(prev.steps[0]);
    expect(ms).toBeLessThan(3000);
  });

  it('a folder folds chunk after chunk into one new model, leaving the model it started from as it was', () => {
    const evs: DebugEvent[] = [{ event: 'run_started', run: R, ts_ms: 0, agent: 'loop', input: {} }];
    for (let s = 1; s <= 300; s++) {
      const node = s % 2 ? 'inc' : 'check';
      evs.push({ event: 'node_enter', run: R, ts_ms: s, step: s, node, kind: 'set_state' });
      evs.push({ event: 'node_exit', run: R, ts_ms: s, step: s, node, update: { n: s }, duration_ms: 0 });
      evs.push({ event: 'route', run: R, ts_ms: s, from: node, to: s % 2 ? 'check' : 'inc', reason: { type: 'default' } });
    }
    const base = foldEvents(emptyModel(), evs.slice(0, 301));
    const snapshot = JSON.parse(JSON.stringify({ steps: base.steps, overlay: base.overlay, eventCount: base.eventCount }));
    const folder = new ModelFolder(base);
    for (let i = 301; i < evs.length; i += 40) folder.add(evs.slice(i, i + 40));
    const chunked = folder.result();
    const whole = foldEvents(base, evs.slice(301));
    expect(JSON.parse(JSON.stringify({ steps: chunked.steps, overlay: chunked.overlay }))).toEqual(
      JSON.parse(JSON.stringify({ steps: whole.steps, overlay: whole.overlay })),
    );
    expect(chunked.steps).toHaveLength(300);
    expect(chunked.overlay.visited.inc).toHaveLength(150);
    // The base model is untouched: still 100 steps, the same lists.
    expect(JSON.parse(JSON.stringify({ steps: base.steps, overlay: base.overlay, eventCount: base.eventCount }))).toEqual(snapshot);
    expect(base.steps).toHaveLength(100);
    // A folder given nothing hands back the model it was given.
    expect(new ModelFolder(base).result()).toBe(base);
  });
});

describe('foldEvents: live providers (streaming, failures, replay)', () => {
  const start = (): Body[] => [
    { event: 'run_started', agent: 'triage', input: 'hi' },
    { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm' },
    { event: 'llm_request', node: 'answer', messages: [{ role: 'user', content: 'hi' }], tools: [], model: 'openai:gpt-4o-mini' },
  ];

  it('accumulates llm_delta text on the call in flight, then the final response replaces it', () => {
    let m = foldEvents(emptyModel(), events(R, start()));
    const deltas = ['Order ', '1001 ', 'shipped', ' on Monday.'];
    const seen: string[] = [];
    for (let i = 0; i < deltas.length; i++) {
      // Each batch one delta (~40 ms apart): no new row, no new call, the text grows.
      m = foldEvents(m, events(R, [{ event: 'llm_delta', node: 'answer', text: deltas[i] }], 1_700_000_001_000 + i * 40));
      expect(m.steps).toHaveLength(1);
      expect(m.steps[0].calls).toHaveLength(1);
      seen.push(m.steps[0].calls[0].stream ?? '');
    }
    expect(seen).toEqual(['Order ', 'Order 1001 ', 'Order 1001 shipped', 'Order 1001 shipped on Monday.']);
    const call = m.steps[0].calls[0];
    expect(call).toMatchObject({ kind: 'llm', endMs: null, model: 'openai:gpt-4o-mini' });
    // Several deltas in one batch land on the same call too.
    const batch = foldEvents(emptyModel(), events(R, [...start(), { event: 'llm_delta', node: 'answer', text: 'a' }, { event: 'llm_delta', node: 'answer', text: 'b' }]));
    expect(batch.steps[0].calls[0].stream).toBe('ab');

    m = foldEvents(
      m,
      events(R, [
        {
          event: 'llm_response',
          node: 'answer',
          content: 'Order 1001 shipped on Monday.',
          tool_calls: [],
          usage: { input_tokens: 12, output_tokens: 7 },
          duration_ms: 812,
          model: 'gpt-4o-mini-2024-07-18',
          cost_usd: 0.0000063,
        } as unknown as Body,
        { event: 'node_exit', step: 1, node: 'answer', update: {}, duration_ms: 815 },
      ]),
    );
    const done = m.steps[0].calls[0];
    expect(done.stream).toBeUndefined();
    expect(done.response).toMatchObject({ content: 'Order 1001 shipped on Monday.', usage: { input: 12, output: 7 } });
    expect(done).toMatchObject({ durationMs: 812, costUsd: 0.0000063, model: 'gpt-4o-mini-2024-07-18' });
    expect(m.steps[0].tokens).toEqual({ input: 12, output: 7 });
  });

  it('a delta with no call in flight changes nothing', () => {
    const m = foldEvents(emptyModel(), events(R, [{ event: 'run_started', agent: 'a', input: null }, { event: 'node_enter', step: 1, node: 'x', kind: 'call_llm' }]));
    const m2 = foldEvents(m, events(R, [{ event: 'llm_delta', node: 'x', text: 'stray' }]));
    expect(m2.steps[0]).toBe(m.steps[0]);
  });

  it('records llm_error on the failed call and counts it on the row; a retry is a new call', () => {
    const m = foldEvents(
      emptyModel(),
      events(R, [
        ...start(),
        { event: 'llm_delta', node: 'answer', text: 'Ord' },
        { event: 'llm_error', node: 'answer', kind: 'rate_limited', message: 'answer (openai:gpt-4o-mini): 429 Too Many Requests', duration_ms: 120 },
        { event: 'llm_request', node: 'answer', messages: [], tools: [], model: 'openai:gpt-4o-mini' },
        { event: 'llm_response', node: 'answer', content: 'ok', tool_calls: [], usage: { input_tokens: 1, output_tokens: 1 } } as unknown as Body,
        { event: 'node_exit', step: 1, node: 'answer', update: {}, duration_ms: 300 },
      ]),
    );
    const row = m.steps[0];
    expect(row.llmErrors).toBe(1);
    expect(row.calls).toHaveLength(2);
    expect(row.calls[0]).toMatchObject({ errorKind: 'rate_limited', error: 'answer (openai:gpt-4o-mini): 429 Too Many Requests', durationMs: 120, stream: 'Ord' });
    expect(row.calls[0].endMs).not.toBeNull();
    expect(row.calls[1].response?.content).toBe('ok');
    expect(row.status).toBe('done');
  });

  it('keeps the first replay_diverged of the run with its step; a rewind before it clears it', () => {
    const diverge: Body = { event: 'replay_diverged', node: 'answer', call: 2, path: 'messages[1].content', recorded: 'Where is order 42?', now: 'Where is order 43?' };
    let m = foldEvents(emptyModel(), events(R, [...start(), diverge]));
    expect(m.diverged).toEqual({ node: 'answer', call: 2, path: 'messages[1].content', recorded: 'Where is order 42?', now: 'Where is order 43?', run: R, step: 1 });
    const again = foldEvents(m, events(R, [{ ...diverge, call: 3 } as Body]));
    expect(again.diverged?.call).toBe(2);
    // Nested runs report through the parent's step.
    const nested = foldEvents(emptyModel(), [
      ...events(R, [{ event: 'run_started', agent: 'a', input: null }, { event: 'node_enter', step: 1, node: 'helper', kind: 'call_agent' }]),
      ...events(`${R}/helper`, [diverge], 1_700_000_002_000),
    ]);
    expect(nested.diverged).toMatchObject({ node: 'answer', run: `${R}/helper`, step: 1 });
    m = foldEvents(m, events(R, [{ event: 'llm_response', node: 'answer', content: 'x', tool_calls: [] } as unknown as Body, { event: 'node_exit', step: 1, node: 'answer', update: {}, duration_ms: 1 }, { event: 'rewound', step: 0 }]));
    expect(m.diverged).toBeNull();
  });

  it('files hook runs under their step: before_graph_invoke under the step it opens, node hooks under their node', () => {
    const hook = (point: string, node: string | null, outcome: 'pass' | 'modified' | 'consumed' | 'failed', detail: string | null = null): Body =>
      ({ event: 'hook', node, point, executor: 'python:h.H', outcome, duration_ms: 2, detail }) as Body;
    const m = foldEvents(
      emptyModel(),
      events(R, [
        { event: 'run_started', agent: 'a', input: 'hi' },
        hook('before_graph_invoke', null, 'modified', 'config'),
        { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm' },
        hook('node_enter', 'answer', 'pass'),
        hook('before_llm_call', 'answer', 'modified', 'system_prompt'),
        { event: 'node_exit', step: 1, node: 'answer', update: {}, duration_ms: 3 },
        hook('after_graph_invoke', null, 'failed', 'no answer within 0.5s; passing through'),
        hook('before_graph_invoke', null, 'pass'),
        { event: 'node_enter', step: 2, node: 'ask', kind: 'interrupt' },
        hook('on_node_error', 'ask', 'consumed', 'error'),
      ]),
    );
    expect(m.steps[0].hooks.map((h) => h.point)).toEqual(['before_graph_invoke', 'node_enter', 'before_llm_call', 'after_graph_invoke']);
    expect(m.steps[0].hooks[2]).toEqual({ point: 'before_llm_call', executor: 'python:h.H', outcome: 'modified', detail: 'system_prompt', node: 'answer', durationMs: 2 });
    expect(m.steps[0].hooks[3].outcome).toBe('failed');
    expect(m.steps[1].hooks.map((h) => `${h.point}:${h.outcome}`)).toEqual(['before_graph_invoke:pass', 'on_node_error:consumed']);
    expect(m.internal.hooksAhead ?? []).toEqual([]);
  });
});

describe('loadedSkills', () => {
  it('lists sherma skills and activated Agent Skills, marking the ones the step loaded', () => {
    const before = { messages: [], __sherma__: { loaded_tools_from_skills: ['get_weather'], loaded_skills: { weather: { version: '==1.0.0', tools: ['get_weather'] } } } };
    const after = {
      messages: [],
      __sherma__: {
        loaded_tools_from_skills: ['get_weather', 'geo'],
        loaded_skills: { weather: { version: '==1.0.0', tools: ['get_weather'] }, maps: { version: '2.0.0', tools: ['geo'] } },
        activated_skills: { pdf: { scope: 'project', location: '/p/.agents/skills/pdf/SKILL.md' } },
      },
    };
    const skills = loadedSkills(after, diffState(before, after));
    expect(skills).toEqual([
      { id: 'weather', kind: 'skill', version: '==1.0.0', tools: ['get_weather'], scope: null, added: false },
      { id: 'maps', kind: 'skill', version: '2.0.0', tools: ['geo'], scope: null, added: true },
      { id: 'pdf', kind: 'agent-skill', version: null, tools: [], scope: 'project', added: true },
    ]);
    // Without a diff nothing is marked new.
    expect(loadedSkills(after)!.some((s) => s.added)).toBe(false);
  });

  it('is empty after an unload and null without skill bookkeeping', () => {
    expect(loadedSkills({ __sherma__: { loaded_tools_from_skills: [], loaded_skills: {} } })).toEqual([]);
    expect(loadedSkills({ __sherma__: { last_error: { message: 'x' } } })).toBeNull();
    expect(loadedSkills({ messages: [] })).toBeNull();
    expect(loadedSkills(null)).toBeNull();
    expect(loadedSkills({ __sherma__: { loaded_skills: { odd: 'x' } } })).toEqual([
      { id: 'odd', kind: 'skill', version: null, tools: [], scope: null, added: false },
    ]);
  });
});

describe('packed timeline rows', () => {
  const FIELDS = [
    'step', 'nodes', 'kinds', 'status', 'startMs', 'durationMs', 'tokens', 'update', 'routes', 'calls',
    'nested', 'edits', 'exited', 'updates', 'error', 'llmErrors', 'hooks',
  ] as const;

  /** `n` steps of a sherma loop (inc → check → inc ...), branch and default routes. */
  function loop(n: number, from = 1, nodes = ['inc', 'check']): Body[] {
    const out: Body[] = [];
    for (let s = from; s < from + n; s++) {
      const node = nodes[s % nodes.length];
      const to = nodes[(s + 1) % nodes.length];
      out.push({ event: 'node_enter', step: s, node, kind: s % 2 ? 'set_state' : 'data_transform' });
      out.push({ event: 'node_exit', step: s, node, update: s % 2 ? { count: s } : { note: `checked ${s}`, messages: [{ type: 'ai', content: String(s) }] }, duration_ms: s % 3 });
      out.push({ event: 'route', from: node, to, reason: s % 2 ? { type: 'static' } : { type: 'branch', index: 1, condition: `state.count < ${from + n}` } });
    }
    return out;
  }

  /** Steps that must stay plain rows: calls, tokens, hooks, errors, a Loki super-step of two
   *  nodes, a non-object update, two routes, a step that never exited. */
  function mixed(from: number): Body[] {
    const s = from;
    return [
      { event: 'node_enter', step: s, node: 'answer', kind: 'call_llm' },
      { event: 'llm_request', node: 'answer', messages: [{ role: 'user', content: 'hi' }], tools: [] },
      { event: 'llm_response', node: 'answer', content: 'hello', tool_calls: [], usage: { input_tokens: 5, output_tokens: 2 } } as unknown as Body,
      { event: 'node_exit', step: s, node: 'answer', update: { messages: [{ type: 'ai', content: 'hello' }] }, duration_ms: 7 },
      { event: 'route', from: 'answer', to: 'tools', reason: { type: 'default' } },
      { event: 'node_enter', step: s + 1, node: 'tools', kind: 'tool_node' },
      { event: 'tool_call', node: 'tools', call: { id: 't1', name: 'x', args: {} } },
      { event: 'tool_result', node: 'tools', id: 't1', name: 'x', result: 1 },
      { event: 'hook', node: 'tools', point: 'after_node', executor: 'python:h.H', outcome: 'ok', duration_ms: 1, detail: null } as unknown as Body,
      { event: 'node_exit', step: s + 1, node: 'tools', update: null, duration_ms: 1 },
      { event: 'route', from: 'tools', to: 'a', reason: { type: '_next' } },
      { event: 'route', from: 'tools', to: 'b', reason: { type: 'fallback' } },
      { event: 'node_enter', step: s + 2, node: 'a', kind: 'script' },
      { event: 'node_enter', step: s + 2, node: 'b', kind: 'script' },
      { event: 'node_exit', step: s + 2, node: 'a', update: { x: 1 }, duration_ms: 2 },
      { event: 'node_exit', step: s + 2, node: 'b', update: { y: 2, messages: ['m'] }, duration_ms: 3 },
      { event: 'node_enter', step: s + 3, node: 'fail', kind: 'script' },
      { event: 'error', node: 'fail', message: 'boom' },
      { event: 'node_enter', step: s + 4, node: 'str', kind: 'script' },
      { event: 'node_exit', step: s + 4, node: 'str', update: 'text', duration_ms: 0 },
      { event: 'route', from: 'str', to: 'inc', reason: { type: 'route_option', option: 'go' } as never },
    ];
  }

  type Case = { name: string; bodies: () => Body[]; chunk: number; packedAtLeast: number };
  const cases: Case[] = [
    { name: 'a 2,000-step loop in one batch', bodies: () => loop(2000), chunk: 1e9, packedAtLeast: 2000 - 64 },
    { name: 'a 2,000-step loop in batches of 37 events', bodies: () => loop(2000), chunk: 37, packedAtLeast: 2000 - 64 },
    { name: 'a loop, steps that stay plain, a loop', bodies: () => [...loop(300), ...mixed(301), ...loop(300, 306)], chunk: 50, packedAtLeast: 600 - 64 - 5 },
    {
      name: 'a loop, a pause with a state edit on an old step, rewound into the packed rows, then a fork',
      bodies: () => [
        ...loop(500),
        { event: 'paused', reason: 'requested' },
        { event: 'rewound', step: 200 },
        { event: 'state_edited', key: 'count', value: 7 },
        ...loop(300, 201, ['x', 'y', 'z']),
        { event: 'run_finished', status: 'completed', state: {}, output: null },
      ],
      chunk: 64,
      packedAtLeast: 500 - 64 - 1,
    },
    { name: 'a short run (nothing far enough back to pack)', bodies: () => [...loop(40), ...mixed(41)], chunk: 5, packedAtLeast: 0 },
  ];

  for (const c of cases) {
    it(`gives the same rows as plain ones: ${c.name}`, () => {
      const evs = events(R, [{ event: 'run_started', agent: 'loop', input: {} }, ...c.bodies()]);
      const plain = foldEvents(emptyModel(), evs, { pack: false });
      // As the store folds: chunk after chunk, a new model each time.
      let m = emptyModel();
      for (let i = 0; i < evs.length; i += c.chunk) m = foldEvents(m, evs.slice(i, i + c.chunk));
      expect(plain.steps.some((r) => r instanceof PackedRow)).toBe(false);
      const packed = m.steps.filter((r) => r instanceof PackedRow).length;
      expect(packed).toBeGreaterThanOrEqual(c.packedAtLeast);
      expect(m.steps).toHaveLength(plain.steps.length);
      // Every field read through the row, as the timeline and the inspector read them.
      for (let i = 0; i < plain.steps.length; i++) {
        for (const f of FIELDS) expect([i, f, m.steps[i][f]]).toEqual([i, f, plain.steps[i][f]]);
      }
      // The whole model as the window sees it (the fold's own bookkeeping aside).
      const shown = (x: RunModel) => JSON.parse(JSON.stringify({ ...x, internal: null }));
      expect(shown(m)).toEqual(shown(plain));
      for (const s of [1, 2, Math.floor(plain.steps.length / 2), plain.steps.length]) {
        expect(JSON.stringify(rowAt(m, s))).toBe(JSON.stringify(rowAt(plain, s)));
      }
      expect(lastDoneStep(m)).toBe(lastDoneStep(plain));
      expect(m.overlay).toEqual(plain.overlay);
    });
  }

  it('a packed row shares its node, kind and route with the other rows; a change unpacks it, the model it came from keeps it', () => {
    const evs = events(R, [{ event: 'run_started', agent: 'loop', input: {} }, ...loop(400)]);
    const m = foldEvents(emptyModel(), evs);
    const a = m.steps[10] as PackedRow;
    const b = m.steps[12] as PackedRow;
    expect(a).toBeInstanceOf(PackedRow);
    expect(a.routes[0]).toBe(b.routes[0]);
    expect(m.steps[399]).not.toBeInstanceOf(PackedRow);
    // An edit made after a packed step (paused there after a rewind) lands on a plain copy.
    const r = foldEvents(m, events(R, [{ event: 'rewound', step: 11 }, { event: 'state_edited', key: 'count', value: 1 }]));
    expect(r.steps).toHaveLength(11);
    expect(r.steps[10]).not.toBeInstanceOf(PackedRow);
    expect(r.steps[10].edits).toEqual([{ key: 'count', value: 1 }]);
    expect(m.steps[10]).toBe(a);
    expect(a.edits).toEqual([]);
  });
});
