// Stepping into nested runs in the app: the toolbar's Step Into / Step Out (F11 / Shift+F11),
// the nested agent's graph over the canvas with its breadcrumb, and the nested run's state in the
// State tab, against the fake backend and real stores.
import { describe, expect, it } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { FakeBackend } from '../fake/backend';
import type { DebugEvent } from '../debug/types';
import { debugShortcutFor } from '../shortcuts';
import { statusText } from '../components/debug/DebugToolbar';
import { nestedCrumbs } from '../components/debug/NestedView';
import { emptyModel, foldEvents } from '../debug/model';
import { demoView, viewEdge, viewNode } from '../fake/demo';
import type { View } from '../types';
import { feed, nextTs, renderApp, type Ev } from './harness';


const FILE = '/agents/researcher.yaml';

/** The nested agent's graph as `nested_view` serves it. */
function researcherView(): View {
  const node = (id: string, kind: string, y: number) => viewNode({ id, kind, y });
  return {
    ...demoView(),
    path: FILE,
    file_name: 'researcher.yaml',
    agents: ['researcher'],
    agent: 'researcher',
    nodes: [node('plan', 'call_llm', 0), node('search', 'tool_node', 120), node('write', 'call_llm', 240)],
    edges: [
      viewEdge({ id: 'e0', from: 'plan', to: 'search', kind: 'static' }),
      viewEdge({ id: 'e1', from: 'search', to: 'write', kind: 'default', label: 'default', order: 1 }),
    ],
    diagnostics: [],
  };
}

function nestedPaused(over: Partial<Ev> = {}): Ev {
  return {
    event: 'nested_paused',
    run: '/research',
    reason: 'step',
    step: 1,
    due: ['search'],
    agent: 'researcher',
    file: FILE,
    state: { topic: 'tides', hits: 0 },
    depth: 1,
    node: 'research',
    ...over,
  };
}

/** The top level paused before `answer` (a sub-agent node in this story), after step 1. */
const beforeResearch: Ev[] = [
  { event: 'run_started', agent: 'support-triage', input: 'hi' },
  { event: 'node_enter', step: 1, node: 'start', kind: 'set_state' },
  { event: 'node_exit', step: 1, node: 'start', update: { turns: 0 }, duration_ms: 1 },
  { event: 'route', from: 'start', to: 'answer', reason: { type: 'static' } },
];

/** Step Into from there: `answer` starts the nested run `<run>/research`, which ran `plan`. */
const intoResearch: Ev[] = [
  { event: 'node_enter', step: 2, node: 'answer', kind: 'call_agent' },
  { event: 'run_started', run: '/research', agent: 'researcher', input: {} },
  { event: 'node_enter', run: '/research', step: 1, node: 'plan', kind: 'call_llm' },
  { event: 'node_exit', run: '/research', step: 1, node: 'plan', update: { topic: 'tides' }, duration_ms: 2 },
  nestedPaused(),
];

const button = (id: string) => screen.getByTestId(id) as HTMLButtonElement;
const controls = (b: FakeBackend) => b.calls.filter((c) => c.cmd === 'run_control').map((c) => (c.args as { action: string }).action);
const key = (k: string, extra: KeyboardEventInit = {}) => fireEvent.keyDown(window, { key: k, ...extra });
const status = () => screen.getByTestId('dbg-status');

describe('Step Into / Step Out: toolbar and keys', () => {
  it('F11 is step into, Shift+F11 step out', () => {
    const k = (key: string, mods: Partial<KeyboardEvent> = {}) => debugShortcutFor({ key, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods });
    expect(k('F11')).toBe('step-into');
    expect(k('F11', { shiftKey: true })).toBe('step-out');
    expect(k('F11', { ctrlKey: true })).toBeNull();
    expect(k('F11', { altKey: true })).toBeNull();
  });

  it('enables Step Into when paused or paused in a nested run, Step Out only in a nested run, and keeps Step and Continue there', async () => {
    const ctx = await renderApp();
    const { backend } = ctx;
    // Idle: neither.
    expect(button('dbg-step-into').disabled).toBe(true);
    expect(button('dbg-step-out').disabled).toBe(true);
    key('F11');
    key('F11', { shiftKey: true });
    expect(controls(backend)).toEqual([]);

    await feed(ctx, beforeResearch, { state: 'running', step: 1 });
    expect(button('dbg-step-into').disabled).toBe(true);
    expect(button('dbg-step-out').disabled).toBe(true);
    key('F11');
    expect(controls(backend)).toEqual([]);

    await feed(ctx, [], { state: 'paused', step: 1, due: ['answer'], reason: 'step' });
    expect(button('dbg-step-into').disabled).toBe(false);
    expect(button('dbg-step-out').disabled).toBe(true);
    fireEvent.click(button('dbg-step-into'));
    await waitFor(() => expect(controls(backend)).toEqual(['step_into']));
    key('F11', { shiftKey: true });
    key('F11');
    await waitFor(() => expect(controls(backend)).toEqual(['step_into', 'step_into']));

    // The engine paused inside the nested run; its status says running all along.
    await feed(ctx, [], { state: 'running', step: 1, due: [], reason: null });
    expect(button('dbg-step-into').disabled).toBe(true);
    await feed(ctx, intoResearch, null);
    expect(status().getAttribute('data-state')).toBe('running');
    expect(status().getAttribute('data-nested')).toBe(`${ctx.dbg.getState().info!.run}/research`);
    expect(status().textContent).toContain('Paused in nested researcher (in research) before search · nested step 1');
    expect(button('dbg-step-into').disabled).toBe(false);
    expect(button('dbg-step-out').disabled).toBe(false);
    expect(button('dbg-step').disabled).toBe(false);
    expect(button('dbg-continue').disabled).toBe(false);
    expect(button('dbg-continue').textContent).toContain('Continue');
    expect(button('dbg-pause').disabled).toBe(true);
    expect(button('dbg-stop').disabled).toBe(false);
    expect(window.__switchyard?.debug?.nested).toMatchObject({ node: 'research', agent: 'researcher', step: 1, due: ['search'], depth: 1 });

    for (const [id, action] of [
      ['dbg-step-out', 'step_out'],
      ['dbg-step-into', 'step_into'],
      ['dbg-step', 'step'],
      ['dbg-continue', 'continue'],
    ] as const) {
      fireEvent.click(button(id));
      await waitFor(() => expect(controls(backend).at(-1)).toBe(action));
    }
    const n = controls(backend).length;
    key('F11', { shiftKey: true });
    key('F11');
    key('F10');
    key('F5');
    await waitFor(() => expect(controls(backend).slice(n)).toEqual(['step_out', 'step_into', 'step', 'continue']));

    // Back at the top level (the nested run ended, the parent paused): Step Out goes off again.
    await feed(
      ctx,
      [
        { event: 'nested_resumed', run: '/research' },
        { event: 'run_finished', run: '/research', status: 'completed', state: {}, output: null },
        { event: 'node_exit', step: 2, node: 'answer', update: {}, duration_ms: 9 },
      ],
      { state: 'paused', step: 2, due: ['count'], reason: 'step' },
    );
    expect(status().getAttribute('data-nested')).toBe('');
    expect(button('dbg-step-out').disabled).toBe(true);
    expect(button('dbg-step-into').disabled).toBe(false);
    expect(window.__switchyard?.debug?.nested).toBeNull();
  });

  it('words the status line of a nested pause', () => {
    const base = { mode: 'live' as const, info: null, starting: false, viewing: null, history: [] };
    const nested = { run: 'r/a/b', node: 'a', agent: 'librarian', file: null, due: ['find'], step: 0, state: {}, prev: null, prevStep: null, depth: 2, reason: 'step' as const };
    expect(statusText({ ...base, status: { state: 'running', step: 3, due: [] }, nested })).toBe('Paused in nested librarian (in a, depth 2) before find · nested step 0 · Shift+F11 steps out');
    // Once the top level is paused, its status wins.
    expect(statusText({ ...base, status: { state: 'paused', step: 3, due: ['x'], reason: 'step' }, nested })).toBe('Paused after step 3 · next: x');
  });
});

describe('the nested run opens with its own graph and state', () => {
  it('shows the nested graph read-only with the breadcrumb, the current and visited nodes; the state tab shows and edits the nested state', async () => {
    const ctx = await renderApp();
    const { backend } = ctx;
    backend.nestedViews[FILE] = researcherView();
    backend.runStates = { 0: {}, 1: { turns: 0 } };
    await feed(ctx, beforeResearch, { state: 'paused', step: 1, due: ['answer'] });
    expect(screen.queryByTestId('nested-view')).toBeNull();
    await feed(ctx, intoResearch, { state: 'running', step: 1, due: [], reason: null });

    const view = await screen.findByTestId('nested-view');
    const crumb = screen.getByTestId('nested-breadcrumb');
    expect(screen.getByTestId('nested-path').textContent).toBe('support-triage › research › researcher');
    expect(crumb.textContent).toContain('Step Out (Shift+F11) returns to the parent');
    expect(crumb.textContent).toContain('paused before search · nested step 1');
    await waitFor(() => expect(view.querySelectorAll('[data-testid="nested-node"]')).toHaveLength(3));
    expect(backend.calls.filter((c) => c.cmd === 'nested_view')).toEqual([{ cmd: 'nested_view', args: { file: FILE, agent: 'researcher' } }]);
    const wrapper = (id: string) => view.querySelector(`.react-flow__node[data-id="${id}"]`) as HTMLElement;
    const card = (id: string) => view.querySelector(`[data-testid="nested-node"][data-node-id="${id}"]`) as HTMLElement;
    expect(wrapper('search').classList.contains('is-current')).toBe(true);
    expect(card('search').getAttribute('data-current')).toBe('true');
    expect(card('search').getAttribute('data-run')).toBe('current');
    expect(wrapper('plan').classList.contains('is-visited')).toBe(true);
    expect(card('plan').getAttribute('data-run')).toBe('visited');
    expect(card('plan').getAttribute('data-steps')).toBe('1');
    expect(card('write').getAttribute('data-run')).toBe('');
    expect(wrapper('write').classList.contains('is-current')).toBe(false);
    // Read-only: no breakpoint dots, no sub-agent buttons inside.
    expect(within(view).queryAllByTestId('bp-dot')).toHaveLength(0);
    // The main canvas stays underneath (its viewport is kept for the way back).
    expect(screen.getByTestId('canvas')).toBeTruthy();

    // The state tab shows the nested run's state, titled so.
    fireEvent.click(screen.getByTestId('nested-show-state'));
    const tree = await screen.findByTestId('state-tree');
    expect(tree.getAttribute('data-nested')).toBe(`${ctx.dbg.getState().info!.run}/research`);
    expect(screen.getByTestId('state-nested-title').textContent).toBe('Nested run researcher (in research): state after its step 1');
    // (The state tree is mounted anew when the nested pause ends: look it up each time.)
    const row = (p: string) => screen.getByTestId('state-tree').querySelector(`[data-testid="state-row"][data-path="${p}"]`) as HTMLElement;
    expect(row('topic').textContent).toContain('tides');
    expect(row('turns')).toBeNull();
    const stateAt = backend.calls.filter((c) => c.cmd === 'run_state_at').length;

    // Editing a value sends it to the engine (for the nested run); the fresh pause brings it back.
    fireEvent.click(within(row('topic')).getByTestId('state-edit'));
    fireEvent.change(screen.getByTestId('state-edit-input'), { target: { value: '"waves"' } });
    fireEvent.click(screen.getByTestId('state-edit-save'));
    await waitFor(() => expect(backend.calls.filter((c) => c.cmd === 'run_edit_state').map((c) => c.args)).toEqual([{ key: 'topic', value: 'waves' }]));
    await waitFor(() => expect(screen.queryByTestId('state-edit-input')).toBeNull());
    await feed(ctx, [nestedPaused({ state: { topic: 'waves', hits: 0 } })], null);
    expect(row('topic').textContent).toContain('waves');
    // The nested step after: its state diffs against the pause before.
    await feed(
      ctx,
      [
        { event: 'nested_resumed', run: '/research' },
        { event: 'node_enter', run: '/research', step: 2, node: 'search', kind: 'tool_node' },
        { event: 'node_exit', run: '/research', step: 2, node: 'search', update: { hits: 3 }, duration_ms: 1 },
        nestedPaused({ step: 2, due: ['write'], state: { topic: 'waves', hits: 3 } }),
      ],
      null,
    );
    expect(row('hits').getAttribute('data-diff')).toBe('changed');
    expect(screen.getByTestId('state-summary').textContent).toContain('changed since its step 1');
    await waitFor(() => expect(card('write').getAttribute('data-current')).toBe('true'));
    expect(card('search').getAttribute('data-run')).toBe('visited');
    // Same file and agent: the graph is not fetched again.
    expect(backend.calls.filter((c) => c.cmd === 'nested_view')).toHaveLength(1);
    // Nothing asked the engine for a top-level state meanwhile (it refuses while nested-paused).
    expect(backend.calls.filter((c) => c.cmd === 'run_state_at').length).toBe(stateAt);

    // The pause ends: the main canvas and the top-level state come back.
    backend.runStates[2] = { turns: 1 };
    await feed(
      ctx,
      [
        { event: 'nested_resumed', run: '/research' },
        { event: 'run_finished', run: '/research', status: 'completed', state: {}, output: null },
        { event: 'node_exit', step: 2, node: 'answer', update: { turns: 1 }, duration_ms: 9 },
      ],
      { state: 'paused', step: 2, due: ['count'], reason: 'step' },
    );
    expect(screen.queryByTestId('nested-view')).toBeNull();
    await waitFor(() => expect(screen.getByTestId('state-tree').getAttribute('data-nested')).toBe(''));
    await waitFor(() => expect(row('turns')?.textContent).toContain('1'));
    expect(screen.queryByTestId('state-nested-title')).toBeNull();
  });

  it('without a file, or when the graph cannot be read, shows the breadcrumb, why, and the state', async () => {
    const ctx = await renderApp();
    await feed(ctx, beforeResearch, { state: 'paused', step: 1, due: ['answer'] });
    await feed(ctx, intoResearch.slice(0, -1), { state: 'running', step: 1, due: [], reason: null });
    await feed(ctx, [nestedPaused({ file: null })], null);
    expect(screen.getByTestId('nested-path').textContent).toBe('support-triage › research › researcher');
    expect(screen.getByTestId('nested-view-error').textContent).toContain('has no file of its own');
    expect(screen.getByTestId('nested-view-state').textContent).toContain('tides');
    expect(ctx.backend.calls.filter((c) => c.cmd === 'nested_view')).toHaveLength(0);

    // A file the engine cannot read: its message.
    await feed(ctx, [nestedPaused({ file: '/agents/gone.yaml', step: 2 })], null);
    await waitFor(() => expect(screen.getByTestId('nested-view-error').textContent).toContain('cannot read /agents/gone.yaml: no such file or directory'));
    expect(screen.getByTestId('nested-breadcrumb')).toBeTruthy();
    expect(screen.getByTestId('nested-view-state').textContent).toContain('tides');
    // The state tab still shows (and edits) the nested state.
    fireEvent.click(screen.getByTestId('tab-state'));
    expect((await screen.findByTestId('state-nested-title')).textContent).toContain('Nested run researcher');
  });

  it('the breadcrumb names each node and agent down to the nested run', () => {
    const at = (list: Ev[]) => foldEvents(emptyModel(), list.map((e) => ({ ts_ms: nextTs(), ...e, run: e.run ? `r${e.run}` : 'r' }) as unknown as DebugEvent));
    const m = at([...beforeResearch, ...intoResearch]);
    expect(nestedCrumbs(m.nested!, m.agent, m.nestedRuns)).toEqual(['support-triage', 'research', 'researcher']);
    const deep = at([
      ...beforeResearch,
      ...intoResearch.slice(0, -1),
      { event: 'node_enter', run: '/research', step: 2, node: 'lookup', kind: 'call_agent' },
      { event: 'run_started', run: '/research/lookup', agent: 'librarian', input: {} },
      nestedPaused({ run: '/research/lookup', agent: 'librarian', depth: 2, step: 0, due: ['find'] }),
    ]);
    expect(nestedCrumbs(deep.nested!, deep.agent, deep.nestedRuns)).toEqual(['support-triage', 'research', 'researcher', 'lookup', 'librarian']);
    // Agents not seen (no run_started): the run id's parts alone.
    expect(nestedCrumbs({ ...deep.nested!, agent: '' }, null, {})).toEqual(['r', 'research', 'lookup']);
  });

  it('an earlier run viewed from the history shows that run, not the nested graph', async () => {
    const ctx = await renderApp();
    ctx.backend.nestedViews[FILE] = researcherView();
    await feed(ctx, beforeResearch, { state: 'paused', step: 1, due: ['answer'] });
    await feed(ctx, intoResearch, { state: 'running', step: 1, due: [], reason: null });
    await screen.findByTestId('nested-view');
    act(() => ctx.dbg.setState({ history: [{ label: 'run 0', model: ctx.dbg.getState().model }], viewing: 0 }));
    expect(screen.queryByTestId('nested-view')).toBeNull();
    // The controls still act on the live run, paused in the nested one.
    expect(button('dbg-step-out').disabled).toBe(false);
    act(() => ctx.dbg.getState().viewHistory(null));
    expect(screen.getByTestId('nested-view')).toBeTruthy();
  });
});
