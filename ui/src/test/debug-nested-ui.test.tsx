// Stepping into nested runs in the app: the toolbar's Step Into / Step Out (F11 / Shift+F11),
// against the fake backend and real stores.
import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend, type FakeBackend } from '../backend';
import { createAppStore } from '../store';
import { createDebugStore } from '../debug/store';
import type { DebugEvent, RunStatusInfo } from '../debug/types';
import { debugShortcutFor } from '../shortcuts';
import { statusText } from '../components/debug/DebugToolbar';
import { demoView } from '../demo';

type Ev = { [k: string]: unknown; event: string; run?: string };
let ts = 1_700_000_000_000;

async function renderApp() {
  const backend = createFakeBackend(demoView());
  const store = createAppStore(backend);
  const dbg = createDebugStore(backend, store);
  render(<App store={store} debugStore={dbg} />);
  await waitFor(() => expect(store.getState().ready).toBe(true));
  await screen.findAllByTestId('node');
  return { backend, store, dbg };
}

type Ctx = Awaited<ReturnType<typeof renderApp>>;

/** Start a run (unless one is live) and feed it one batch, folded at once. Events name their
 *  run relative to the top-level one: `run: '/research'` is `<run>/research`. */
async function feed(ctx: Ctx, events: Ev[], status: Partial<RunStatusInfo> | null) {
  if (!ctx.dbg.getState().info) {
    await act(async () => {
      await ctx.dbg.getState().start('step');
    });
  }
  const run = ctx.dbg.getState().info!.run;
  await act(async () => {
    ctx.backend.emitRun({
      run,
      events: events.map((e) => ({ ts_ms: (ts += 10), ...e, run: e.run ? `${run}${e.run}` : run }) as unknown as DebugEvent),
      status: status ? ({ state: 'paused', step: 0, due: [], reason: 'step', ...status } as RunStatusInfo) : null,
    });
    ctx.dbg.getState().flush();
  });
  return run;
}

const FILE = '/agents/researcher.yaml';

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
