// The debugger's components in the app: toolbar, keys, canvas overlay (run marks, breakpoints,
// taken edges), interrupt dialog and run configuration, against the fake backend and real stores.
import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend, type FakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { createDebugStore } from '../debug/store';
import type { DebugEvent, Pending, RunStatusInfo } from '../debug/types';
import { debugShortcutFor } from '../shortcuts';
import { demoView, lokiView } from '../fake/demo';
import { labelMatchesEdge, parseSteps, stepChip, stepsSummary, stepsTitle } from '../components/debug/canvasOverlay';
import { statusText } from '../components/debug/DebugToolbar';
import { answersText, parseAnswers, parseStateText } from '../components/debug/RunConfigPanel';
import { interruptAnswerValue } from '../components/debug/InterruptDialog';
import type { View } from '../types';
import { cmds, feed, nextTs, renderApp, type Ev } from './harness';


function step(n: number, node: string, kind: string, route?: { to: string; reason: Record<string, unknown> }): Ev[] {
  const out: Ev[] = [
    { event: 'node_enter', step: n, node, kind },
    { event: 'node_exit', step: n, node, update: { n }, duration_ms: 3 },
  ];
  if (route) out.push({ event: 'route', from: node, to: route.to, reason: route.reason });
  return out;
}

const nodeEl = (id: string) => document.querySelector(`[data-testid="node"][data-node-id="${id}"]`) as HTMLElement;
const status = () => screen.getByTestId('dbg-status');
const button = (id: string) => screen.getByTestId(id) as HTMLButtonElement;

describe('debugger toolbar', () => {
  it('shows the state, enables the controls that make sense and calls the store', async () => {
    const ctx = await renderApp();
    const { backend, dbg } = ctx;
    expect(status().getAttribute('data-state')).toBe('idle');
    expect(button('dbg-continue').disabled).toBe(false);
    expect(button('dbg-continue').textContent).toContain('Run');
    expect(button('dbg-step').disabled).toBe(false);
    expect(button('dbg-pause').disabled).toBe(true);
    expect(button('dbg-stop').disabled).toBe(true);
    expect(button('dbg-restart').disabled).toBe(true);

    fireEvent.click(button('dbg-continue'));
    await waitFor(() => expect(cmds(backend, 'run_start')).toHaveLength(1));
    expect((cmds(backend, 'run_start')[0].args as { config: { start: string } }).config.start).toBe('continue');
    await waitFor(() => expect(screen.getByTestId('dbg-llm').textContent).toBe('scripted: replies.yaml'));

    await feed(ctx, [{ event: 'run_started', agent: 'support-triage', input: 'hi' }, ...step(1, 'start', 'set_state')], { state: 'running', step: 1, due: [], reason: null });
    expect(status().getAttribute('data-state')).toBe('running');
    expect(status().textContent).toContain('Running');
    expect(button('dbg-pause').disabled).toBe(false);
    expect(button('dbg-continue').disabled).toBe(true);
    expect(button('dbg-step').disabled).toBe(true);
    expect(button('dbg-stop').disabled).toBe(false);
    fireEvent.click(button('dbg-pause'));
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'run_control', args: { action: 'pause' } }));

    await feed(ctx, [], { state: 'paused', step: 4, due: ['confirm'], reason: 'breakpoint' });
    expect(status().textContent).toContain('Paused at breakpoint before confirm · step 4');
    expect(status().getAttribute('data-step')).toBe('4');
    expect(status().getAttribute('data-reason')).toBe('breakpoint');
    expect(status().getAttribute('data-finished')).toBe('');
    expect(button('dbg-pause').disabled).toBe(true);
    expect(button('dbg-continue').textContent).toContain('Continue');

    for (const [id, action] of [
      ['dbg-continue', 'continue'],
      ['dbg-step', 'step'],
      ['dbg-stop', 'stop'],
      ['dbg-restart', 'restart'],
    ] as const) {
      fireEvent.click(button(id));
      await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'run_control', args: { action } }));
    }

    await feed(ctx, [], { state: 'finished', step: 7, due: [], reason: null, status: 'completed' });
    expect(status().textContent).toContain('Completed in 7 steps');
    expect(status().getAttribute('data-finished')).toBe('completed');
    expect(button('dbg-stop').disabled).toBe(true);
    expect(button('dbg-continue').disabled).toBe(false);
    expect(button('dbg-continue').textContent).toContain('Run');

    // Break on error goes to the store; Open trace asks the backend.
    fireEvent.click(screen.getByTestId('dbg-break-on-error'));
    expect(dbg.getState().breakOnError).toBe(true);
    fireEvent.click(button('dbg-open-trace'));
    await waitFor(() => expect(cmds(backend, 'open_trace')).toEqual([{ cmd: 'open_trace', args: { path: null } }]));
  });

  it('words the status of each state', () => {
    const base = { mode: 'live' as const, info: null, starting: false, viewing: null, history: [] };
    const st = (s: Partial<RunStatusInfo>) => ({ ...base, status: { state: 'paused', step: 0, due: [], ...s } as RunStatusInfo });
    expect(statusText({ ...base, mode: 'idle', status: null })).toContain('Not running');
    expect(statusText(st({ state: 'interrupted', step: 2, pending: { node: 'approve' } as Pending }))).toBe('Waiting for your answer at approve · step 2');
    expect(statusText(st({ state: 'finished', step: 3, status: 'failed', error: { node: 'x', message: 'boom' } }))).toBe('Failed at node x: boom');
    expect(statusText(st({ state: 'finished', step: 1, status: 'completed' }))).toBe('Completed in 1 step');
    expect(statusText(st({ state: 'paused', step: 2, due: ['b'], reason: 'step' }))).toBe('Paused after step 2 · next: b');
    expect(statusText(st({ state: 'paused', step: 2, due: ['b'], reason: 'error', error: { node: 'b', message: 'bad' } }))).toBe('Paused on error at b: bad · step 2');
  });

  it('shows the trace file with its full path as the tooltip', async () => {
    const ctx = await renderApp();
    ctx.backend.runInfo = { trace: '/runs/support-triage-r1.jsonl', llm: 'scripted: replies.yaml (3 replies)' };
    fireEvent.click(button('dbg-continue'));
    const trace = await screen.findByTestId('dbg-trace');
    expect(trace.textContent).toBe('support-triage-r1.jsonl');
    expect(trace.getAttribute('title')).toContain('/runs/support-triage-r1.jsonl');
    expect(screen.getByTestId('dbg-llm').textContent).toBe('scripted: replies.yaml (3 replies)');
  });
});

describe('debugger keys', () => {
  const k = (key: string, m: Partial<{ ctrlKey: boolean; shiftKey: boolean; metaKey: boolean; altKey: boolean }> = {}) => ({
    key,
    ctrlKey: false,
    shiftKey: false,
    metaKey: false,
    altKey: false,
    ...m,
  });

  it('maps the usual debugger keys', () => {
    expect(debugShortcutFor(k('F5'))).toBe('continue');
    expect(debugShortcutFor(k('F5', { shiftKey: true }))).toBe('stop');
    expect(debugShortcutFor(k('F5', { ctrlKey: true, shiftKey: true }))).toBe('restart');
    expect(debugShortcutFor(k('F10'))).toBe('step');
    expect(debugShortcutFor(k('F9'))).toBe('toggle-breakpoint');
    expect(debugShortcutFor(k('F9', { shiftKey: true }))).toBe('edit-breakpoint');
    expect(debugShortcutFor(k('F5', { altKey: true }))).toBeNull();
    expect(debugShortcutFor(k('F6'))).toBeNull();
    expect(debugShortcutFor(k('z', { ctrlKey: true }))).toBeNull();
  });

  it('F5 runs, F10 steps, Shift+F5 stops, Ctrl+Shift+F5 restarts, F9 / Shift+F9 set breakpoints', async () => {
    const ctx = await renderApp();
    const { backend, store, dbg } = ctx;
    const e5 = fireEvent.keyDown(window, { key: 'F5' });
    expect(e5).toBe(false); // default prevented (no webview reload)
    await waitFor(() => expect(cmds(backend, 'run_start')).toHaveLength(1));
    await feed(ctx, [], { state: 'paused', step: 1, due: ['answer'], reason: 'step' });
    fireEvent.keyDown(window, { key: 'F10' });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'run_control', args: { action: 'step' } }));
    fireEvent.keyDown(window, { key: 'F5' });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'run_control', args: { action: 'continue' } }));
    fireEvent.keyDown(window, { key: 'F5', shiftKey: true });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'run_control', args: { action: 'stop' } }));
    fireEvent.keyDown(window, { key: 'F5', ctrlKey: true, shiftKey: true });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'run_control', args: { action: 'restart' } }));

    // F9 without a selected node explains; with one it toggles its breakpoint.
    fireEvent.keyDown(window, { key: 'F9' });
    await waitFor(() => expect(screen.getByTestId('toast').textContent).toContain('Select a node'));
    act(() => store.getState().select({ type: 'node', id: 'count' }));
    fireEvent.keyDown(window, { key: 'F9' });
    await waitFor(() => expect(within(nodeEl('count')).getByTestId('bp-dot').getAttribute('data-active')).toBe('true'));
    expect(dbg.getState().breakpoints).toEqual([{ node: 'count', condition: null, enabled: true }]);
    // The live run gets the breakpoints.
    await waitFor(() => expect(cmds(backend, 'run_breakpoints').at(-1)?.args).toEqual({ breakpoints: [{ node: 'count', condition: null, enabled: true }], breakOnError: false }));
    fireEvent.keyDown(window, { key: 'F9', shiftKey: true });
    expect(await screen.findByTestId('bp-editor')).toBeTruthy();
    fireEvent.keyDown(screen.getByTestId('bp-condition'), { key: 'Escape' });
    await waitFor(() => expect(screen.queryByTestId('bp-editor')).toBeNull());
    fireEvent.keyDown(window, { key: 'F9' });
    await waitFor(() => expect(within(nodeEl('count')).getByTestId('bp-dot').getAttribute('data-active')).toBe('false'));
  });
});

describe('breakpoints on the canvas', () => {
  it('the gutter dot toggles without selecting the node; the condition editor saves, refuses and cancels', async () => {
    const { store, dbg } = await renderApp();
    const dot = () => within(nodeEl('count')).getByTestId('bp-dot');
    expect(dot().getAttribute('data-active')).toBe('false');
    expect(dot().className).toContain('nodrag');
    // Markers have no dot.
    expect(within(nodeEl('__start__')).queryByTestId('bp-dot')).toBeNull();

    fireEvent.click(dot());
    await waitFor(() => expect(dot().getAttribute('data-active')).toBe('true'));
    expect(dot().getAttribute('data-conditional')).toBe('false');
    expect(store.getState().selection).toBeNull();
    fireEvent.click(dot());
    await waitFor(() => expect(dot().getAttribute('data-active')).toBe('false'));

    // Double-click opens the editor (sherma: CEL).
    fireEvent.doubleClick(dot());
    const input = (await screen.findByTestId('bp-condition')) as HTMLInputElement;
    expect(input.placeholder).toContain('CEL');
    // A condition the checker refuses shows why and keeps the editor open.
    fireEvent.change(input, { target: { value: 'state.turns >= (3' } });
    fireEvent.keyDown(input, { key: 'Enter' });
    expect((await screen.findByTestId('bp-error')).textContent).toContain('unclosed bracket');
    expect(screen.getByTestId('bp-editor')).toBeTruthy();
    fireEvent.change(screen.getByTestId('bp-condition'), { target: { value: 'state.turns >= 3' } });
    expect(screen.queryByTestId('bp-error')).toBeNull();
    fireEvent.keyDown(screen.getByTestId('bp-condition'), { key: 'Enter' });
    await waitFor(() => expect(screen.queryByTestId('bp-editor')).toBeNull());
    expect(dot().getAttribute('data-active')).toBe('true');
    expect(dot().getAttribute('data-conditional')).toBe('true');
    expect(dbg.getState().breakpoints).toEqual([{ node: 'count', condition: 'state.turns >= 3', enabled: true }]);

    // Double-clicking a conditional breakpoint keeps it and its condition; Escape cancels edits.
    fireEvent.click(dot(), { detail: 1 });
    fireEvent.click(dot(), { detail: 2 });
    fireEvent.doubleClick(dot());
    const again = (await screen.findByTestId('bp-condition')) as HTMLInputElement;
    expect(again.value).toBe('state.turns >= 3');
    fireEvent.change(again, { target: { value: 'state.turns > 99' } });
    fireEvent.keyDown(again, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByTestId('bp-editor')).toBeNull());
    await waitFor(() => expect(dbg.getState().breakpoints).toEqual([{ node: 'count', condition: 'state.turns >= 3', enabled: true }]));
  });

  it('a live run refusing a condition shows its message', async () => {
    const ctx = await renderApp();
    await feed(ctx, [], { state: 'paused', step: 0, due: ['start'], reason: 'step' });
    fireEvent.doubleClick(within(nodeEl('answer')).getByTestId('bp-dot'));
    const input = await screen.findByTestId('bp-condition');
    fireEvent.change(input, { target: { value: 'state.nope ==' } });
    ctx.backend.failNext('run_breakpoints', { message: 'breakpoint on `answer`: condition `state.nope ==`: unexpected end' });
    fireEvent.keyDown(input, { key: 'Enter' });
    expect((await screen.findByTestId('bp-error')).textContent).toContain('unexpected end');
    expect(ctx.dbg.getState().breakpoints.some((b) => b.node === 'answer' && b.condition)).toBe(false);
  });

  it('Loki conditions are templates', async () => {
    await renderApp(lokiView());
    fireEvent.doubleClick(within(nodeEl('summarise')).getByTestId('bp-dot'));
    expect(((await screen.findByTestId('bp-condition')) as HTMLInputElement).placeholder).toContain('template');
  });
});

describe('run overlay on the canvas', () => {
  it('marks current, visited and failed nodes with their steps, and the edges taken with their reason', async () => {
    const ctx = await renderApp();
    await feed(
      ctx,
      [
        { event: 'run_started', agent: 'support-triage', input: 'hi' },
        ...step(1, 'start', 'set_state', { to: 'answer', reason: { type: 'static' } }),
        ...step(2, 'answer', 'call_llm', { to: 'count', reason: { type: 'default' } }),
        ...step(3, 'count', 'data_transform', { to: 'confirm', reason: { type: 'static' } }),
        ...step(4, 'confirm', 'interrupt', { to: 'answer', reason: { type: 'default' } }),
        ...step(5, 'answer', 'call_llm', { to: 'count', reason: { type: 'default' } }),
      ],
      { state: 'paused', step: 5, due: ['count'], reason: 'step' },
    );
    expect(nodeEl('start').getAttribute('data-run')).toBe('visited');
    expect(nodeEl('start').getAttribute('data-steps')).toBe('1');
    expect(nodeEl('answer').getAttribute('data-run')).toBe('visited');
    expect(nodeEl('answer').getAttribute('data-steps')).toBe('2,5');
    expect(within(nodeEl('answer')).getByTestId('node-steps').textContent).toBe('#2 #5');
    expect(nodeEl('count').getAttribute('data-run')).toBe('current');
    expect(nodeEl('count').className).toContain('sy-run-current');
    expect(nodeEl('answer_tools').getAttribute('data-run')).toBe('');
    expect(nodeEl('answer_tools').getAttribute('data-steps')).toBe('');
    expect(nodeEl('__start__').getAttribute('data-run')).toBe('visited');
    expect(nodeEl('__end__').getAttribute('data-run')).toBe('');

    await waitFor(() => expect(screen.getAllByTestId('edge-reason').length).toBeGreaterThan(0));
    const reasons = screen.getAllByTestId('edge-reason');
    // answer→count (default, last taken) and confirm→answer (default); static edges carry no reason.
    expect(reasons.map((r) => [r.getAttribute('data-edge-id'), r.textContent, r.getAttribute('data-taken')]).sort()).toEqual([
      ['e3', 'default', 'true'],
      ['e7', 'default', 'true'],
    ]);
    expect(reasons.find((r) => r.getAttribute('data-edge-id') === 'e3')!.className).toContain('last');
    const path = (id: string) => document.querySelector(`[data-id="${id}"] .react-flow__edge-path`);
    expect(path('e3')?.getAttribute('class')).toContain('sy-edge-last');
    expect(path('e1')?.getAttribute('class')).toContain('sy-edge-taken'); // static, taken in step 1
    expect(path('e0')?.getAttribute('class')).toContain('sy-edge-taken'); // the entry
    expect(path('e2')?.getAttribute('class') ?? '').not.toContain('sy-edge-taken');

    // The run ends through the second branch of `confirm`: only that edge to __end__ is marked.
    await feed(
      ctx,
      [
        ...step(6, 'count', 'data_transform', { to: 'confirm', reason: { type: 'static' } }),
        ...step(7, 'confirm', 'interrupt', { to: '__end__', reason: { type: 'branch', index: 1, condition: 'state.turns >= 3' } }),
        { event: 'run_finished', status: 'completed', state: {}, output: null },
      ],
      { state: 'finished', step: 7, due: [], reason: null, status: 'completed' },
    );
    await waitFor(() => expect(screen.getAllByTestId('edge-reason').some((r) => r.getAttribute('data-edge-id') === 'e6')).toBe(true));
    const e6 = screen.getAllByTestId('edge-reason').find((r) => r.getAttribute('data-edge-id') === 'e6')!;
    expect(e6.textContent).toBe('branch 2: state.turns >= 3');
    expect(screen.getAllByTestId('edge-reason').some((r) => r.getAttribute('data-edge-id') === 'e5')).toBe(false);
    expect(nodeEl('__end__').getAttribute('data-run')).toBe('visited');
    expect(nodeEl('__end__').getAttribute('data-steps')).toBe('7');
    expect(nodeEl('count').getAttribute('data-run')).toBe('visited');
    expect(nodeEl('count').getAttribute('data-steps')).toBe('3,6');
  });

  it('fan-out branches are all current; a failed node is marked as an error', async () => {
    const ctx = await renderApp(lokiView());
    await feed(
      ctx,
      [
        { event: 'run_started', agent: 'release-gate', input: 'go' },
        ...step(1, 'plan', 'script'),
        { event: 'route', from: 'plan', to: 'lint', reason: { type: 'static' } },
        { event: 'route', from: 'plan', to: 'tests', reason: { type: 'static' } },
        { event: 'node_enter', step: 2, node: 'lint', kind: 'script' },
        { event: 'node_enter', step: 2, node: 'tests', kind: 'script' },
      ],
      { state: 'running', step: 1, due: [], reason: null },
    );
    expect(nodeEl('lint').getAttribute('data-run')).toBe('current');
    expect(nodeEl('tests').getAttribute('data-run')).toBe('current');
    expect(nodeEl('plan').getAttribute('data-run')).toBe('visited');
    await feed(
      ctx,
      [
        { event: 'node_exit', step: 2, node: 'lint', update: {}, duration_ms: 1 },
        { event: 'error', node: 'tests', message: 'exit code 1' },
        { event: 'run_finished', status: 'failed', state: {}, output: null },
      ],
      { state: 'finished', step: 2, due: [], reason: null, status: 'failed', error: { node: 'tests', message: 'exit code 1' } },
    );
    expect(nodeEl('tests').getAttribute('data-run')).toBe('error');
    expect(nodeEl('tests').getAttribute('title')).toContain('exit code 1');
    expect(nodeEl('lint').getAttribute('data-run')).toBe('visited');
    expect(status().textContent).toContain('Failed at node tests: exit code 1');
    expect(status().getAttribute('data-finished')).toBe('failed');
  });

  it('a batch re-renders only the nodes whose marks changed', { timeout: 20000 }, async () => {
    const { bigView } = await import('../fake/demo');
    const { nodeRenders } = await import('../components/NodeCard');
    const backend = createFakeBackend(bigView(120));
    const store = createAppStore(backend);
    const dbg = createDebugStore(backend, store);
    render(<App store={store} debugStore={dbg} />);
    await waitFor(() => expect(screen.getAllByTestId('node')).toHaveLength(120), { timeout: 8000 });
    const ctx = { backend, store, dbg };
    await feed(ctx, [{ event: 'run_started', agent: 'chain', input: null }, ...step(1, 'n0', 'set_state', { to: 'n20', reason: { type: 'static' } })], {
      state: 'running',
      step: 1,
      due: [],
      reason: null,
    });
    await new Promise((r) => setTimeout(r, 30));
    const before = nodeRenders.count;
    await feed(ctx, step(2, 'n20', 'set_state', { to: 'n40', reason: { type: 'static' } }), { state: 'running', step: 2, due: [], reason: null });
    expect(nodeEl('n20').getAttribute('data-run')).toBe('visited');
    expect(nodeRenders.count - before).toBeLessThanOrEqual(2);
  });

  it('collapses long step lists', () => {
    expect(stepChip('')).toBe('');
    expect(stepChip('1,4')).toBe('#1 #4');
    expect(stepChip('1,4,7')).toBe('#1 #4 #7');
    expect(stepChip('1,3,5,7,9')).toBe('#1 … #9 ×5');
    // A long list is summarised at a constant size: head, last step, count.
    const many = Array.from({ length: 50000 }, (_, i) => 2 * i + 1);
    const summary = stepsSummary(many);
    expect(summary).toBe('1,3,5,7,9,…,99999×50000');
    expect(parseSteps(summary)).toEqual({ listed: ['1', '3', '5', '7', '9'], last: '99999', count: 50000 });
    expect(stepChip(summary)).toBe('#1 … #99999 ×50000');
    expect(stepsTitle(summary)).toBe('steps 1, 3, 5, 7, 9, … 99999 (50000 times)');
    expect(stepsSummary(many.slice(0, 12))).toBe(many.slice(0, 12).join(','));
    expect(stepsTitle('4')).toBe('step 4');
    expect(stepsTitle('1,4,9')).toBe('steps 1, 4, 9');
    // Lists short enough to show whole are shown whole.
    expect(stepsTitle(stepsSummary(many.slice(40000, 40012)))).toBe(`steps ${many.slice(40000, 40012).join(', ')}`);
    expect(labelMatchesEdge('branch 2: x > 1', 'branch', 'x > 1', false)).toBe(true);
    expect(labelMatchesEdge('branch 2: x > 1', 'branch', 'x > 2', false)).toBe(false);
    expect(labelMatchesEdge('option: ship', 'route', 'ship', false)).toBe(true);
    expect(labelMatchesEdge('on_other', 'on_other', 'other', false)).toBe(true);
    expect(labelMatchesEdge('_next', 'next', 'dynamic', true)).toBe(true);
    expect(labelMatchesEdge('', 'static', null, false)).toBe(true);
    expect(labelMatchesEdge('', 'default', 'default', false)).toBe(false);
  });
});

describe('interrupt dialog', () => {
  const pending = (p: Partial<Pending>): Pending => ({ id: 'i1', node: 'confirm', kind: 'interrupt', prompt: '', options: [], value: null, default: null, validation: null, ...p });

  async function interrupted(view: View, p: Pending) {
    const ctx = await renderApp(view);
    await feed(ctx, [{ event: 'interrupt', ...p }], { state: 'interrupted', step: 3, due: [p.node], reason: null, pending: p });
    return ctx;
  }
  const answers = (b: FakeBackend) => cmds(b, 'run_answer').map((c) => c.args);

  it('sherma interrupt: shows a structured value as JSON; free text is sent as text, a JSON object parsed', async () => {
    const p = pending({ prompt: '{"draft":"Hello <b>there</b>"}', value: { draft: 'Hello <b>there</b>' } });
    const { backend } = await interrupted(demoView(), p);
    const dlg = await screen.findByTestId('interrupt-dialog');
    expect(dlg.getAttribute('data-kind')).toBe('interrupt');
    const prompt = screen.getByTestId('interrupt-prompt');
    expect(prompt.textContent).toContain('"draft": "Hello <b>there</b>"');
    expect(prompt.querySelector('b')).toBeNull(); // plain text, never HTML
    const answer = screen.getByTestId('interrupt-answer');
    expect(answer.tagName).toBe('TEXTAREA');
    fireEvent.change(answer, { target: { value: '{"approved": true}' } });
    fireEvent.keyDown(answer, { key: 'Enter', ctrlKey: true });
    await waitFor(() => expect(answers(backend)).toEqual([{ id: 'i1', value: { approved: true } }]));
    await waitFor(() => expect(screen.queryByTestId('interrupt-dialog')).toBeNull());
  });

  it('sherma interrupt: a string value is shown as text; plain text answers are strings', async () => {
    const { backend } = await interrupted(demoView(), pending({ prompt: 'Is this done?', value: 'Is this done?' }));
    expect(screen.getByTestId('interrupt-prompt').textContent).toBe('Is this done?');
    fireEvent.change(screen.getByTestId('interrupt-answer'), { target: { value: 'yes, done' } });
    fireEvent.click(screen.getByTestId('interrupt-submit'));
    await waitFor(() => expect(answers(backend)).toEqual([{ id: 'i1', value: 'yes, done' }]));
    expect(interruptAnswerValue('[1, 2]')).toEqual([1, 2]);
    expect(interruptAnswerValue('42')).toBe('42');
    expect(interruptAnswerValue('{not json')).toBe('{not json');
  });

  it('Loki approval: one button per option answers with it; free text goes as the other answer', async () => {
    const p = pending({ id: 'a1', node: 'approve', kind: 'approval', prompt: 'Ship release 1.2?', options: ['ship', 'hold'] });
    const { backend } = await interrupted(lokiView(), p);
    expect(screen.getByTestId('interrupt-dialog').getAttribute('data-kind')).toBe('approval');
    expect(screen.getByTestId('interrupt-prompt').textContent).toBe('Ship release 1.2?');
    const opts = screen.getAllByTestId('interrupt-option');
    expect(opts.map((o) => o.getAttribute('data-option'))).toEqual(['ship', 'hold']);
    fireEvent.click(opts[0]);
    await waitFor(() => expect(answers(backend)).toEqual([{ id: 'a1', value: 'ship' }]));
    await waitFor(() => expect(screen.queryByTestId('interrupt-dialog')).toBeNull());
  });

  it('Loki approval: the free-text answer', async () => {
    const p = pending({ id: 'a2', node: 'approve', kind: 'approval', prompt: 'Ship?', options: ['ship', 'hold'] });
    const { backend } = await interrupted(lokiView(), p);
    const other = screen.getByTestId('interrupt-answer');
    expect((screen.getByTestId('interrupt-submit') as HTMLButtonElement).disabled).toBe(true);
    fireEvent.change(other, { target: { value: 'ship it on Monday' } });
    fireEvent.keyDown(other, { key: 'Enter' });
    await waitFor(() => expect(answers(backend)).toEqual([{ id: 'a2', value: 'ship it on Monday' }]));
  });

  it('Loki input: the default is pre-filled, the rule is a hint; a refused answer keeps the dialog with the error', async () => {
    const p = pending({ id: 'n1', node: 'note', kind: 'input', prompt: 'Version?', default: '1.0.0', validation: '^\\d+\\.\\d+\\.\\d+$' });
    const { backend } = await interrupted(lokiView(), p);
    const input = screen.getByTestId('interrupt-answer') as HTMLInputElement;
    expect(input.value).toBe('1.0.0');
    expect(screen.getByTestId('interrupt-validation').textContent).toContain('^\\d+\\.\\d+\\.\\d+$');
    fireEvent.change(input, { target: { value: 'one' } });
    backend.failNext('run_answer', { message: 'the answer does not match ^\\d+\\.\\d+\\.\\d+$' });
    fireEvent.keyDown(input, { key: 'Enter' });
    expect((await screen.findByTestId('interrupt-error')).textContent).toContain('does not match');
    expect(screen.getByTestId('interrupt-dialog')).toBeTruthy();
    fireEvent.change(screen.getByTestId('interrupt-answer'), { target: { value: '1.2.3' } });
    fireEvent.click(screen.getByTestId('interrupt-submit'));
    await waitFor(() => expect(answers(backend).at(-1)).toEqual({ id: 'n1', value: '1.2.3' }));
    await waitFor(() => expect(screen.queryByTestId('interrupt-dialog')).toBeNull());
  });

  it('the next question arriving before the answer call returns is shown, not closed by it', async () => {
    // The engine runs on as soon as it has the answer; under load its next interrupt can reach the
    // UI before `run_answer` itself returns (a CI flake: approval → input, and no dialog).
    const p = pending({ id: 'a4', node: 'approve', kind: 'approval', prompt: 'Ship?', options: ['ship', 'hold'] });
    const ctx = await interrupted(lokiView(), p);
    const next = pending({ id: 'n4', node: 'note', kind: 'input', prompt: 'Notes?', default: 'No notes.' });
    const answer = ctx.backend.runAnswer;
    ctx.backend.runAnswer = async (id, value) => {
      await answer(id, value);
      const run = ctx.dbg.getState().info!.run;
      ctx.backend.emitRun({
        run,
        events: [{ run, ts_ms: nextTs(), event: 'interrupt', ...next } as unknown as DebugEvent],
        status: { state: 'interrupted', step: 5, due: ['note'], reason: null, pending: next } as RunStatusInfo,
      });
      ctx.dbg.getState().flush();
      return null;
    };
    fireEvent.change(screen.getByTestId('interrupt-answer'), { target: { value: 'later' } });
    fireEvent.click(screen.getByTestId('interrupt-submit'));
    await waitFor(() => expect(answers(ctx.backend)).toEqual([{ id: 'a4', value: 'later' }]));
    await waitFor(() => expect(screen.getByTestId('interrupt-dialog').getAttribute('data-kind')).toBe('input'));
    expect((screen.getByTestId('interrupt-answer') as HTMLInputElement).value).toBe('No notes.');
    expect(ctx.dbg.getState().dialogOpen).toBe(true);
  });

  it('cancel (button or Escape) closes the dialog; the run stays interrupted and the toolbar brings it back', async () => {
    const p = pending({ id: 'a3', node: 'approve', kind: 'approval', prompt: 'Ship?', options: ['ship', 'hold'] });
    const { backend, dbg } = await interrupted(lokiView(), p);
    expect(screen.queryByTestId('interrupt-reopen')).toBeNull();
    fireEvent.click(screen.getByTestId('interrupt-cancel'));
    await waitFor(() => expect(screen.queryByTestId('interrupt-dialog')).toBeNull());
    expect(dbg.getState().status?.state).toBe('interrupted');
    expect(status().getAttribute('data-state')).toBe('interrupted');
    expect(status().textContent).toContain('Waiting for your answer at approve');
    expect(cmds(backend, 'run_answer')).toHaveLength(0);
    expect(cmds(backend, 'run_control')).toHaveLength(0);
    fireEvent.click(screen.getByTestId('interrupt-reopen'));
    const dlg = await screen.findByTestId('interrupt-dialog');
    fireEvent.keyDown(dlg, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByTestId('interrupt-dialog')).toBeNull());
    // F5 while waiting brings the question back rather than continuing.
    fireEvent.keyDown(window, { key: 'F5' });
    expect(await screen.findByTestId('interrupt-dialog')).toBeTruthy();
    expect(cmds(backend, 'run_control')).toHaveLength(0);
  });
});

describe('run configuration', () => {
  it('validates the initial state live, sends it parsed with the answers and the LLM mode', async () => {
    const { backend, dbg } = await renderApp();
    fireEvent.click(button('dbg-config'));
    const panel = await screen.findByTestId('run-config');
    expect(within(panel).queryByTestId('run-agent')).toBeNull(); // one agent only
    const mode = screen.getByTestId('run-llm-mode') as HTMLSelectElement;
    const opt = (v: string) => Array.from(mode.options).find((o) => o.value === v)!;
    for (const m of ['scripted', 'replay', 'live', 'none']) expect(opt(m).disabled).toBe(false);

    fireEvent.change(screen.getByTestId('run-input'), { target: { value: 'Where is order 42?' } });
    fireEvent.change(screen.getByTestId('run-state'), { target: { value: '{"turns": ' } });
    expect(screen.getByTestId('run-config-error').textContent).toContain('not valid JSON');
    expect((screen.getByTestId('run-config-run') as HTMLButtonElement).disabled).toBe(true);
    fireEvent.change(screen.getByTestId('run-state'), { target: { value: '[1]' } });
    expect(screen.getByTestId('run-config-error').textContent).toContain('JSON object');
    fireEvent.change(screen.getByTestId('run-state'), { target: { value: '{"turns": 2}' } });
    expect(screen.queryByTestId('run-config-error')).toBeNull();
    fireEvent.change(screen.getByTestId('run-llm-script'), { target: { value: 'other-replies.yaml' } });
    fireEvent.change(screen.getByTestId('run-answers'), { target: { value: 'ship\n{"approved": true}\n\n42' } });
    fireEvent.click(screen.getByTestId('run-config-step'));
    await waitFor(() => expect(cmds(backend, 'run_start')).toHaveLength(1));
    expect((cmds(backend, 'run_start')[0].args as { config: unknown }).config).toMatchObject({
      input: 'Where is order 42?',
      state: { turns: 2 },
      llm: { mode: 'scripted', script: 'other-replies.yaml' },
      answers: ['ship', { approved: true }, 42],
      start: 'step',
    });
    await waitFor(() => expect(screen.queryByTestId('run-config')).toBeNull());

    // Reopened, it shows what was sent; "none" drops the script.
    fireEvent.click(button('dbg-config'));
    expect(((await screen.findByTestId('run-state')) as HTMLTextAreaElement).value).toContain('"turns": 2');
    expect((screen.getByTestId('run-answers') as HTMLTextAreaElement).value).toBe('ship\n{"approved":true}\n42');
    fireEvent.change(screen.getByTestId('run-llm-mode'), { target: { value: 'none' } });
    expect(dbg.getState().config.llm).toEqual({ mode: 'none' });
    expect(screen.queryByTestId('run-llm-script')).toBeNull();
    fireEvent.click(screen.getByTestId('run-config-close'));
    await waitFor(() => expect(screen.queryByTestId('run-config')).toBeNull());
  });

  it('a refused start shows the engine error in the panel', async () => {
    const { backend } = await renderApp();
    fireEvent.click(button('dbg-config'));
    await screen.findByTestId('run-config');
    backend.failNext('run_start', { message: 'no replies.yaml beside the agent' });
    fireEvent.click(screen.getByTestId('run-config-run'));
    expect((await screen.findByTestId('run-config-error')).textContent).toContain('no replies.yaml');
    expect(screen.getByTestId('run-config')).toBeTruthy();
  });

  it('offers the agents of a multi-agent file', async () => {
    const v = demoView();
    v.agents = ['support-triage', 'helper'];
    const { dbg } = await renderApp(v);
    fireEvent.click(button('dbg-config'));
    const sel = (await screen.findByTestId('run-agent')) as HTMLSelectElement;
    expect(Array.from(sel.options).map((o) => o.value)).toEqual(['support-triage', 'helper']);
    fireEvent.change(sel, { target: { value: 'helper' } });
    expect(dbg.getState().config.agent).toBe('helper');
  });

  it('parses answers and state text', () => {
    expect(parseAnswers('yes\n"42"\n42\n  \n[1,2]')).toEqual(['yes', '42', 42, [1, 2]]);
    expect(parseAnswers(answersText(['yes', '42', 42, { a: 1 }]))).toEqual(['yes', '42', 42, { a: 1 }]);
    expect(parseStateText('')).toEqual({ value: undefined, error: null });
    expect(parseStateText('{"a":1}').value).toEqual({ a: 1 });
    expect(parseStateText('nope').error).toContain('not valid JSON');
  });
});
