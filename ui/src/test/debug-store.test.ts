import { describe, expect, it } from 'vitest';
import { waitFor } from '@testing-library/react';
import { createFakeBackend, type FakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { createDebugStore, currentPending, shownModel } from '../debug/store';
import type { DebugEvent, RunBatch, RunStatusInfo } from '../debug/types';
import { demoView } from '../fake/demo';

type Body = DebugEvent extends infer E ? (E extends DebugEvent ? Omit<E, 'run' | 'ts_ms'> : never) : never;

let clock = 1_700_000_000_000;
function evs(run: string, bodies: Body[]): DebugEvent[] {
  return bodies.map((b) => ({ run, ts_ms: (clock += 5), ...b }) as DebugEvent);
}

async function setup() {
  const backend = createFakeBackend(demoView());
  const app = createAppStore(backend);
  await app.getState().init();
  const dbg = createDebugStore(backend, app);
  void backend.onRunEvents((b) => dbg.getState().receive(b));
  return { backend, app, dbg };
}

type Ctx = Awaited<ReturnType<typeof setup>>;

function calls(backend: FakeBackend, cmd: string) {
  return backend.calls.filter((c) => c.cmd === cmd);
}

/** Steps 1..n of a simple loop `a` → `b` → `a`…, as one batch's events. */
function steps(run: string, from: number, to: number): DebugEvent[] {
  const out: Body[] = [];
  for (let s = from; s <= to; s++) {
    const node = s % 2 ? 'a' : 'b';
    out.push({ event: 'node_enter', step: s, node, kind: 'set_state' });
    out.push({ event: 'node_exit', step: s, node, update: { n: s }, duration_ms: 1 });
    out.push({ event: 'route', from: node, to: s % 2 ? 'b' : 'a', reason: { type: 'static' } });
  }
  return evs(run, out);
}

const paused = (step: number, due: string[] = ['a']): RunStatusInfo => ({ state: 'paused', step, due, reason: 'step' });

/** Start a run and feed it `n` steps, paused after them. */
async function runTo(ctx: Ctx, n: number) {
  await ctx.dbg.getState().start('continue');
  const run = ctx.dbg.getState().info!.run;
  ctx.backend.emitRun({ run, events: [...evs(run, [{ event: 'run_started', agent: 'demo', input: 'hi' }]), ...steps(run, 1, n)], status: paused(n) });
  ctx.dbg.getState().flush();
  return run;
}

describe('debug store: starting and receiving', () => {
  it('acknowledges every event it folds, so the engine can hold a fast run back (flow control)', async () => {
    const ctx = await setup();
    const run = await runTo(ctx, 3);
    // run_started + 3 steps of three events each.
    expect(ctx.backend.acked[run]).toBe(10);
    // A batch bigger than a fold's chunk is acknowledged as far as it was folded, then in full.
    ctx.backend.emitRun({ run, events: steps(run, 4, 503), status: paused(503) });
    ctx.dbg.getState().flush();
    expect(ctx.backend.acked[run]).toBe(10 + 1500);
    // A batch of another run is not folded, so not acknowledged either.
    ctx.backend.emitRun({ run: 'other', events: steps('other', 1, 2), status: null });
    ctx.dbg.getState().flush();
    expect(ctx.backend.acked.other).toBeUndefined();
  });

  it('start sends the config with the breakpoints and break-on-error, in the mode asked', async () => {
    const { backend, dbg } = await setup();
    await dbg.getState().toggleBreakpoint('classify');
    await dbg.getState().setBreakOnError(true);
    dbg.getState().setConfig({ input: 'Where is my order?', answers: ['yes'] });
    // Nothing is sent to the engine while no run is live.
    expect(calls(backend, 'run_breakpoints')).toHaveLength(0);
    await dbg.getState().start('step');
    const [call] = calls(backend, 'run_start');
    expect(call.args).toEqual({
      config: {
        agent: demoView().agent,
        input: 'Where is my order?',
        llm: { mode: 'scripted' },
        answers: ['yes'],
        breakpoints: [{ node: 'classify', condition: null, enabled: true }],
        break_on_error: true,
        start: 'step',
      },
    });
    const st = dbg.getState();
    expect(st.mode).toBe('live');
    expect(st.info?.run).toBe(backend.lastRun);
    // The config is kept for the next run.
    expect(st.config.input).toBe('Where is my order?');
    expect(st.config.start).toBe('continue');
  });

  it('folds batches once per frame: nothing changes before the flush; other runs are ignored', async () => {
    const { backend, dbg } = await setup();
    await dbg.getState().start();
    const run = dbg.getState().info!.run;
    backend.emitRun({ run, events: [...evs(run, [{ event: 'run_started', agent: 'demo', input: 'hi' }]), ...steps(run, 1, 2)], status: null });
    backend.emitRun({ run, events: steps(run, 3, 3), status: paused(3, ['b']) });
    backend.emitRun({ run: 'someone-else', events: steps('someone-else', 4, 9), status: paused(9) });
    expect(dbg.getState().model.steps).toHaveLength(0);
    expect(dbg.getState().status).toBeNull();
    dbg.getState().flush();
    const st = dbg.getState();
    expect(st.model.steps.map((r) => r.step)).toEqual([1, 2, 3]);
    expect(st.model.agent).toBe('demo');
    expect(st.status).toMatchObject({ state: 'paused', step: 3 });
    // While paused, the canvas shows the nodes due.
    expect(st.model.overlay.current).toEqual(['b']);
    expect(st.model.overlay.visited).toEqual({ a: [1, 3], b: [2] });
  });

  it('folds by itself on the next frame', async () => {
    const { backend, dbg } = await setup();
    await dbg.getState().start();
    const run = dbg.getState().info!.run;
    backend.emitRun({ run, events: steps(run, 1, 1), status: null });
    await waitFor(() => expect(dbg.getState().model.steps).toHaveLength(1));
  });

  it('a huge backlog is folded over several frames (a frame budget); behind it, the status shows at once', async () => {
    const { backend, dbg } = await setup();
    await dbg.getState().start();
    const run = dbg.getState().info!.run;
    backend.emitRun({ run, events: steps(run, 1, 30_000), status: paused(30_000) });
    // The first frame folds part of it and leaves the rest (and the status) for later frames.
    await waitFor(() => expect(dbg.getState().model.steps.length).toBeGreaterThan(0));
    const first = dbg.getState().model.steps.length;
    expect(first).toBeLessThan(30_000);
    expect(dbg.getState().status?.state).toBe('paused');
    await waitFor(() => expect(dbg.getState().model.steps).toHaveLength(30_000), { timeout: 20_000 });
    expect(dbg.getState().status?.state).toBe('paused');
  });

  it('behind a backlog, the window is updated at most every 100 ms while folding goes on; a pause shows at once', async () => {
    const { backend, dbg } = await setup();
    await dbg.getState().start();
    const run = dbg.getState().info!.run;
    const running = (step: number): RunStatusInfo => ({ state: 'running', step, due: [], reason: null });
    for (let i = 0; i < 30; i++) backend.emitRun({ run, events: steps(run, i * 1000 + 1, (i + 1) * 1000), status: running((i + 1) * 1000) });
    backend.emitRun({ run, events: steps(run, 30_001, 30_001), status: paused(30_001) });
    const shown: { at: number; steps: number }[] = [];
    const unsub = dbg.subscribe((s, prev) => {
      if (s.model !== prev.model) shown.push({ at: performance.now(), steps: s.model.steps.length });
    });
    await waitFor(() => expect(dbg.getState().model.steps).toHaveLength(30_001), { timeout: 30_000 });
    unsub();
    expect(dbg.getState().status?.state).toBe('paused');
    // Several updates (the timeline grows as the run streams), each showing more steps...
    expect(shown.length).toBeGreaterThan(1);
    for (let i = 1; i < shown.length; i++) expect(shown[i].steps).toBeGreaterThan(shown[i - 1].steps);
    // ...at least 100 ms apart while the backlog lasts (the last one shows the pause at once).
    for (let i = 1; i < shown.length - 1; i++) expect(shown[i].at - shown[i - 1].at).toBeGreaterThanOrEqual(99);
  });

  it('keeps batches that arrive before run_start answers, drops those of the replaced run', async () => {
    const ctx = await setup();
    const old = await runTo(ctx, 2);
    const { backend, dbg } = ctx;
    const starting = dbg.getState().start();
    expect(dbg.getState().starting).toBe(true);
    const next = `fake-run-${Number(old.split('-').pop()) + 1}`;
    backend.emitRun({ run: old, events: steps(old, 3, 3), status: paused(3) });
    backend.emitRun({ run: next, events: steps(next, 1, 1), status: null });
    await starting;
    dbg.getState().flush();
    expect(dbg.getState().info?.run).toBe(next);
    expect(dbg.getState().model.steps.map((r) => r.step)).toEqual([1]);
    // The earlier run is kept to compare.
    expect(dbg.getState().history[0].model.steps).toHaveLength(2);
    expect(dbg.getState().history[0].label).toMatch(/demo/);
  });

  it('a refused start restores the previous run and reports why', async () => {
    const ctx = await setup();
    await runTo(ctx, 2);
    ctx.backend.failNext('run_start', { message: 'cannot use the scripted replies in replies.yaml' });
    await ctx.dbg.getState().start();
    const st = ctx.dbg.getState();
    expect(st.configError).toBe('cannot use the scripted replies in replies.yaml');
    expect(st.mode).toBe('live');
    expect(st.model.steps).toHaveLength(2);
    expect(st.history).toHaveLength(0);
    expect(ctx.app.getState().toasts.map((t) => t.message)).toEqual(['Starting the run failed: cannot use the scripted replies in replies.yaml']);
  });

  it('continue and step control a live run, and start a new one once it finished', async () => {
    const ctx = await setup();
    const { backend, dbg } = ctx;
    await dbg.getState().continue();
    expect(calls(backend, 'run_start')).toHaveLength(1);
    const run = dbg.getState().info!.run;
    await dbg.getState().step();
    await dbg.getState().pause();
    await dbg.getState().continue();
    await dbg.getState().stop();
    expect(calls(backend, 'run_control').map((c) => (c.args as { action: string }).action)).toEqual(['step', 'pause', 'continue', 'stop']);
    backend.emitRun({ run, events: evs(run, [{ event: 'run_finished', status: 'stopped', state: {}, output: null }]), status: { state: 'finished', step: 0, due: [], status: 'stopped' } });
    dbg.getState().flush();
    await dbg.getState().step();
    expect(calls(backend, 'run_start').map((c) => (c.args as { config: { start: string } }).config.start)).toEqual(['continue', 'step']);
    expect(calls(backend, 'run_control')).toHaveLength(4);
    backend.failNext('run_control', { message: 'no run' });
    await dbg.getState().pause();
    expect(ctx.app.getState().toasts.map((t) => t.message)).toContain('Pause failed: no run');
  });
});

describe('debug store: interrupts', () => {
  async function interrupted(ctx: Ctx) {
    const run = await runTo(ctx, 2);
    const pending = { id: 'approve#1', node: 'approve', kind: 'approval' as const, prompt: 'Ship it?', options: ['ship', 'hold'], value: null, default: null, validation: null };
    ctx.backend.emitRun({
      run,
      events: evs(run, [{ event: 'interrupt', id: 'approve#1', node: 'approve', kind: 'approval', prompt: 'Ship it?', options: ['ship', 'hold'] }]),
      status: { state: 'interrupted', step: 2, due: ['approve'], pending },
    });
    ctx.dbg.getState().flush();
    return run;
  }

  it('opens the dialog on an interrupt; cancel keeps it closed for that interrupt; reopen shows it again', async () => {
    const ctx = await setup();
    const run = await interrupted(ctx);
    const { dbg, backend } = ctx;
    expect(dbg.getState().dialogOpen).toBe(true);
    expect(currentPending(dbg.getState())?.id).toBe('approve#1');
    expect(dbg.getState().model.pending?.options).toEqual(['ship', 'hold']);
    dbg.getState().cancelDialog();
    expect(dbg.getState().dialogOpen).toBe(false);
    // More news about the same question does not pop the dialog up again.
    backend.emitRun({ run, events: [], status: { state: 'interrupted', step: 2, due: ['approve'], pending: currentPending(dbg.getState())! } });
    dbg.getState().flush();
    expect(dbg.getState().dialogOpen).toBe(false);
    expect(calls(backend, 'run_answer')).toHaveLength(0);
    dbg.getState().reopenDialog();
    expect(dbg.getState().dialogOpen).toBe(true);
  });

  it('a refused answer keeps the dialog open with the reason; an accepted one closes it', async () => {
    const ctx = await setup();
    await interrupted(ctx);
    const { dbg, backend } = ctx;
    backend.failNext('run_answer', { message: 'the answer must match ^v\\d+' });
    expect(await dbg.getState().answer('nope')).toBe(false);
    expect(dbg.getState().dialogOpen).toBe(true);
    expect(dbg.getState().answerError).toBe('the answer must match ^v\\d+');
    expect(await dbg.getState().answer('ship')).toBe(true);
    expect(dbg.getState().dialogOpen).toBe(false);
    expect(dbg.getState().answerError).toBeNull();
    expect(calls(backend, 'run_answer').map((c) => c.args)).toEqual([
      { id: 'approve#1', value: 'nope' },
      { id: 'approve#1', value: 'ship' },
    ]);
  });

  it('a new interrupt opens the dialog even after an earlier one was cancelled', async () => {
    const ctx = await setup();
    const run = await interrupted(ctx);
    ctx.dbg.getState().cancelDialog();
    const pending = { id: 'note#2', node: 'note', kind: 'input' as const, prompt: 'Notes?', options: [], value: null, default: 'No notes.', validation: null };
    ctx.backend.emitRun({ run, events: evs(run, [{ event: 'interrupt', ...pending }]), status: { state: 'interrupted', step: 3, due: ['note'], pending } });
    ctx.dbg.getState().flush();
    expect(ctx.dbg.getState().dialogOpen).toBe(true);
    expect(currentPending(ctx.dbg.getState())?.default).toBe('No notes.');
  });
});

describe('debug store: state', () => {
  it('selectStep loads the state at the step and the one before and diffs them', async () => {
    const ctx = await setup();
    const { backend, dbg } = ctx;
    backend.runStates = { 1: { n: 1, messages: [{ type: 'human', content: 'hi' }] }, 2: { n: 2, messages: [{ type: 'human', content: 'hi' }, { type: 'ai', content: 'yo' }], extra: true } };
    await runTo(ctx, 2);
    await dbg.getState().selectStep(2);
    const sv = dbg.getState().stateView!;
    expect(sv).toMatchObject({ step: 2, loading: false, error: null, state: backend.runStates[2], prev: backend.runStates[1] });
    expect(sv.diff).toEqual([
      { path: ['n'], kind: 'changed', before: 1, after: 2 },
      { path: ['messages', 1], kind: 'added', after: { type: 'ai', content: 'yo' } },
      { path: ['extra'], kind: 'added', after: true },
    ]);
    expect(dbg.getState().selectedStep).toBe(2);
    // A step without a checkpoint shows the engine's refusal.
    await dbg.getState().selectStep(7);
    expect(dbg.getState().stateView).toMatchObject({ step: 7, loading: false, error: 'no checkpoint after step 7', state: null });
  });

  it('ignores a late answer for a step no longer selected', async () => {
    const ctx = await setup();
    const { backend, dbg } = ctx;
    backend.runStates = { 0: { n: 0 }, 1: { n: 1 }, 2: { n: 2 } };
    await runTo(ctx, 2);
    const plain = backend.runStateAt;
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    backend.runStateAt = async (step) => {
      if (step === 1) await gate;
      return plain(step);
    };
    const slow = dbg.getState().selectStep(1);
    await dbg.getState().selectStep(0);
    release();
    await slow;
    expect(dbg.getState().stateView).toMatchObject({ step: 0, state: { n: 0 }, prev: null, diff: [] });
  });

  it('loads the latest state when the run pauses and no step is selected', async () => {
    const ctx = await setup();
    ctx.backend.runStates = { 2: { n: 2 }, 3: { n: 3 } };
    await runTo(ctx, 3);
    await waitFor(() => expect(ctx.dbg.getState().stateView).toMatchObject({ step: 3, loading: false, diff: [{ path: ['n'], kind: 'changed', before: 2, after: 3 }] }));
  });

  it('editState refuses bad JSON without calling the engine; good JSON is sent and the state reloaded', async () => {
    const ctx = await setup();
    const { backend, dbg } = ctx;
    backend.runStates = { 1: { n: 1 }, 2: { n: 2 } };
    await runTo(ctx, 2);
    const err = await dbg.getState().editState('n', '{oops');
    expect(err).toMatch(/^not valid JSON: /);
    expect(calls(backend, 'run_edit_state')).toHaveLength(0);
    backend.runStates[2] = { n: 42 };
    const before = calls(backend, 'run_state_at').length;
    expect(await dbg.getState().editState('n', ' 42 ')).toBeNull();
    expect(calls(backend, 'run_edit_state').map((c) => c.args)).toEqual([{ key: 'n', value: 42 }]);
    expect(calls(backend, 'run_state_at').length).toBeGreaterThan(before);
    expect(dbg.getState().stateView).toMatchObject({ step: 2, state: { n: 42 }, diff: [{ path: ['n'], kind: 'changed', before: 1, after: 42 }] });
    backend.failNext('run_edit_state', { message: 'only while paused' });
    expect(await dbg.getState().editState('n', '1')).toBe('only while paused');
  });
});

describe('debug store: rewind and history', () => {
  it('rewind archives the run, asks the engine, and folds the rewound event', async () => {
    const ctx = await setup();
    const run = await runTo(ctx, 5);
    const { backend, dbg } = ctx;
    await dbg.getState().selectStep(4);
    await dbg.getState().rewind(2);
    expect(calls(backend, 'run_rewind').map((c) => c.args)).toEqual([{ step: 2 }]);
    const st = dbg.getState();
    expect(st.history[0].label).toBe('before rewind to step 2');
    expect(st.history[0].model.steps).toHaveLength(5);
    expect(st.selectedStep).toBeNull();
    backend.emitRun({ run, events: evs(run, [{ event: 'rewound', step: 2 }]), status: { state: 'paused', step: 2, due: ['a'], reason: 'requested' } });
    dbg.getState().flush();
    expect(dbg.getState().model.steps.map((r) => r.step)).toEqual([1, 2]);
    expect(dbg.getState().history[0].model.steps).toHaveLength(5);
    // Viewing the earlier run shows its model; the engine rebuilds its states from its trace.
    dbg.getState().viewHistory(0);
    expect(shownModel(dbg.getState()).steps).toHaveLength(5);
    await waitFor(() => expect(dbg.getState().stateView).toMatchObject({ step: 5, state: { n: 5, messages: expect.any(Array) }, loading: false }));
    expect(calls(backend, 'trace_state_at').at(-1)?.args).toEqual({ path: dbg.getState().info!.trace, step: 5, events: st.history[0].model.eventCount });
    dbg.getState().viewHistory(null);
    expect(shownModel(dbg.getState()).steps).toHaveLength(2);
  });

  it('a refused rewind drops the archive again and says why', async () => {
    const ctx = await setup();
    await runTo(ctx, 3);
    ctx.backend.failNext('run_rewind', { message: 'no checkpoint after step 9' });
    await ctx.dbg.getState().rewind(9);
    expect(ctx.dbg.getState().history).toHaveLength(0);
    expect(ctx.app.getState().toasts.map((t) => t.message)).toEqual(['Rewinding to step 9 failed: no checkpoint after step 9']);
  });

  it('keeps at most 10 earlier runs, newest first', async () => {
    const ctx = await setup();
    for (let i = 1; i <= 12; i++) await runTo(ctx, i);
    const h = ctx.dbg.getState().history;
    expect(h).toHaveLength(10);
    expect(h.map((x) => x.model.steps.length)).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
  });
});

describe('debug store: breakpoints', () => {
  it('toggling while live sends the breakpoints; a refusal rolls back', async () => {
    const ctx = await setup();
    await runTo(ctx, 1);
    const { backend, dbg } = ctx;
    await dbg.getState().toggleBreakpoint('a');
    await dbg.getState().toggleBreakpoint('b');
    await dbg.getState().toggleBreakpoint('a');
    expect(calls(backend, 'run_breakpoints').map((c) => c.args)).toEqual([
      { breakpoints: [{ node: 'a', condition: null, enabled: true }], breakOnError: false },
      { breakpoints: [{ node: 'a', condition: null, enabled: true }, { node: 'b', condition: null, enabled: true }], breakOnError: false },
      { breakpoints: [{ node: 'b', condition: null, enabled: true }], breakOnError: false },
    ]);
    backend.failNext('run_breakpoints', { message: 'breakpoint on `b`: condition `(`: syntax error' });
    const err = await dbg.getState().setBreakpointCondition('b', '(');
    expect(err).toBe('breakpoint on `b`: condition `(`: syntax error');
    expect(dbg.getState().breakpoints).toEqual([{ node: 'b', condition: null, enabled: true }]);
    expect(await dbg.getState().setBreakpointCondition('b', ' state.n > 3 ')).toBeNull();
    expect(dbg.getState().breakpoints).toEqual([{ node: 'b', condition: 'state.n > 3', enabled: true }]);
    expect(calls(backend, 'run_breakpoints').at(-1)?.args).toEqual({ breakpoints: [{ node: 'b', condition: 'state.n > 3', enabled: true }], breakOnError: false });
    backend.failNext('run_breakpoints', { message: 'down' });
    await dbg.getState().setBreakOnError(true);
    expect(dbg.getState().breakOnError).toBe(false);
    expect(ctx.app.getState().toasts.map((t) => t.message)).toContain('Setting break on error failed: down');
  });

  it('without a run, a condition is checked with the expression checker', async () => {
    const { backend, dbg } = await setup();
    const err = await dbg.getState().setBreakpointCondition('a', 'size(state.x');
    expect(err).toMatch(/unclosed bracket/);
    expect(dbg.getState().breakpoints).toEqual([]);
    expect(await dbg.getState().setBreakpointCondition('a', 'size(state.x) > 2')).toBeNull();
    expect(dbg.getState().breakpoints).toEqual([{ node: 'a', condition: 'size(state.x) > 2', enabled: true }]);
    expect(calls(backend, 'check_expr').map((c) => c.args)).toEqual([
      { kind: 'cel', text: 'size(state.x' },
      { kind: 'cel', text: 'size(state.x) > 2' },
    ]);
    expect(calls(backend, 'run_breakpoints')).toHaveLength(0);
  });
});

describe('debug store: traces', () => {
  it('openTrace reviews a past run: model, finished status and states rebuilt from the events', async () => {
    const { backend, dbg } = await setup();
    const run = 'run-old';
    const events = [
      ...evs(run, [{ event: 'run_started', agent: 'support-triage', input: 'hi' }]),
      ...steps(run, 1, 3),
      ...evs(run, [{ event: 'run_finished', status: 'completed', state: { n: 3, final: true }, output: 'bye' }]),
    ];
    backend.trace = { path: '/runs/support-triage-run-old.jsonl', events };
    await dbg.getState().openTrace('/runs/support-triage-run-old.jsonl');
    expect(calls(backend, 'open_trace').map((c) => c.args)).toEqual([{ path: '/runs/support-triage-run-old.jsonl' }]);
    const st = dbg.getState();
    expect(st.mode).toBe('review');
    expect(st.status).toMatchObject({ state: 'finished', step: 3, status: 'completed', output: 'bye' });
    expect(st.info).toMatchObject({ run, trace: '/runs/support-triage-run-old.jsonl', agent: 'support-triage' });
    expect(st.model.steps).toHaveLength(3);
    expect(st.stateView).toMatchObject({ step: 3, state: { n: 3, final: true } });
    await dbg.getState().selectStep(2);
    expect(dbg.getState().stateView).toMatchObject({ step: 2, diff: [{ path: ['n'], kind: 'changed', before: 1, after: 2 }] });
    expect(calls(backend, 'run_state_at')).toHaveLength(0);
    // The states are the engine's: asked for with the trace, the step and the events folded.
    expect(calls(backend, 'trace_state_at').map((c) => c.args)).toEqual([
      { path: '/runs/support-triage-run-old.jsonl', step: 3, events: events.length },
      { path: '/runs/support-triage-run-old.jsonl', step: 2, events: events.length },
    ]);
    // Live batches do not leak into a review.
    backend.emitRun({ run, events: steps(run, 4, 4), status: null });
    dbg.getState().flush();
    expect(dbg.getState().model.steps).toHaveLength(3);
    // A cancelled dialog changes nothing; a failure is a toast.
    backend.trace = null;
    await dbg.getState().openTrace();
    expect(dbg.getState().model.steps).toHaveLength(3);
    backend.failNext('open_trace', { message: 'not a trace' });
    await dbg.getState().openTrace('/x');
    expect(dbg.getState().mode).toBe('review');
  });
});

describe('debug store: batch shape', () => {
  it('accepts the engine batch shape exactly (RunBatch)', async () => {
    const { backend, dbg } = await setup();
    await dbg.getState().start();
    const run = dbg.getState().info!.run;
    const batch: RunBatch = JSON.parse(
      JSON.stringify({
        run,
        events: [
          { event: 'run_started', run, ts_ms: 1, agent: 'x', input: 'q' },
          { event: 'node_enter', run, ts_ms: 2, step: 1, node: 'llm', kind: 'call_llm' },
          { event: 'llm_request', run, ts_ms: 3, node: 'llm', messages: [], tools: [] },
          { event: 'llm_response', run, ts_ms: 9, node: 'llm', content: 'hi', tool_calls: [], usage: { input_tokens: 12, output_tokens: 3 } },
          { event: 'node_exit', run, ts_ms: 10, step: 1, node: 'llm', update: null, duration_ms: 8 },
        ],
        status: { state: 'paused', step: 1, due: ['llm'], reason: 'step', pending: null, status: null, output: null, error: null },
      }),
    );
    backend.emitRun(batch);
    dbg.getState().flush();
    const row = dbg.getState().model.steps[0];
    expect(row).toMatchObject({ step: 1, status: 'done', durationMs: 8, tokens: { input: 12, output: 3 }, update: null });
    expect(row.calls[0]).toMatchObject({ startMs: 3, endMs: 9, response: { content: 'hi', usage: { input: 12, output: 3 } } });
  });
});

describe('debug store: failures', () => {
  it('paused on an error, the state shown is the last completed step (the failed one has no checkpoint)', async () => {
    const ctx = await setup();
    ctx.backend.runStates = { 1: { n: 1 }, 2: { n: 2 } };
    await ctx.dbg.getState().start();
    const run = ctx.dbg.getState().info!.run;
    ctx.backend.emitRun({
      run,
      events: [
        ...evs(run, [{ event: 'run_started', agent: 'demo', input: 'hi' }]),
        ...steps(run, 1, 2),
        ...evs(run, [
          { event: 'node_enter', step: 3, node: 'a', kind: 'tool_node' },
          { event: 'error', node: 'a', message: 'tool failed' },
          { event: 'paused', reason: 'error' },
        ]),
      ],
      status: { state: 'paused', step: 3, due: ['a'], reason: 'error', error: { node: 'a', message: 'tool failed' } },
    });
    ctx.dbg.getState().flush();
    expect(ctx.dbg.getState().model.steps[2]).toMatchObject({ step: 3, status: 'error', error: 'tool failed' });
    expect(ctx.dbg.getState().model.overlay.errors).toEqual({ a: 'tool failed' });
    await waitFor(() => expect(ctx.dbg.getState().stateView).toMatchObject({ step: 2, state: { n: 2 }, loading: false, error: null }));
  });
});

describe('debug store: live providers', () => {
  it('folds streamed deltas on frames into the one call in flight; the response replaces them; errors and divergence are kept', async () => {
    const ctx = await setup();
    const { backend, dbg } = ctx;
    dbg.getState().setConfig({ llm: { mode: 'replay', cassette: null, strict: false }, record: 'agent.cassette.json' });
    await dbg.getState().start('continue');
    expect(calls(backend, 'run_start')[0].args).toMatchObject({ config: { llm: { mode: 'replay', cassette: null, strict: false }, record: 'agent.cassette.json' } });
    const run = dbg.getState().info!.run;
    backend.emitRun({
      run,
      events: evs(run, [
        { event: 'run_started', agent: 'demo', input: 'hi' },
        { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm' },
        { event: 'llm_request', node: 'answer', messages: [], tools: [], model: 'openai:gpt-4o-mini' },
      ]),
      status: { state: 'running', step: 0, due: [], reason: null },
    });
    // Many small batches of deltas (the engine sends ~30 a second), folded on the next frame.
    const words = ['The ', 'order ', 'shipped ', 'on ', 'Monday.'];
    for (const w of words) backend.emitRun({ run, events: evs(run, [{ event: 'llm_delta', node: 'answer', text: w }]), status: null });
    await waitFor(() => expect(shownModel(dbg.getState()).steps[0]?.calls[0]?.stream).toBe(words.join('')));
    const m = dbg.getState().model;
    expect(m.steps).toHaveLength(1);
    expect(m.steps[0].calls).toHaveLength(1);
    backend.emitRun({
      run,
      events: evs(run, [
        { event: 'replay_diverged', node: 'answer', call: 1, path: 'messages[0].content', recorded: 'a', now: 'b' },
        { event: 'llm_error', node: 'answer', kind: 'timeout', message: 'answer: no complete answer within 120 s', duration_ms: 120000 },
        { event: 'llm_request', node: 'answer', messages: [], tools: [], model: 'openai:gpt-4o-mini' },
        { event: 'llm_delta', node: 'answer', text: 'again' },
        { event: 'llm_response', node: 'answer', content: 'The order shipped on Monday.', tool_calls: [], usage: { input_tokens: 3, output_tokens: 6 }, duration_ms: 40 } as unknown as Body,
      ]),
      status: null,
    });
    dbg.getState().flush();
    const row = dbg.getState().model.steps[0];
    expect(row.llmErrors).toBe(1);
    expect(row.calls.map((c) => [c.errorKind ?? null, c.stream ?? null, c.response?.content ?? null])).toEqual([
      ['timeout', 'The order shipped on Monday.', null],
      [null, null, 'The order shipped on Monday.'],
    ]);
    expect(dbg.getState().model.diverged).toMatchObject({ node: 'answer', call: 1, step: 1 });
    // A new run starts without the old divergence.
    await dbg.getState().start('continue');
    expect(dbg.getState().model.diverged).toBeNull();
  });
  it('shows what the engine answers for a recorded run: state, the one before, their diff and its warning', async () => {
    const { backend, dbg } = await setup();
    const run = 'run-r';
    const events = evs(run, [
      { event: 'run_started', agent: 'a', input: 'hello' },
      { event: 'node_enter', step: 1, node: 's', kind: 'set_state' },
      { event: 'node_exit', step: 1, node: 's', update: { n: 1, messages: [{ id: 'm1', type: 'ai', content: 'draft' }] }, duration_ms: 1 },
      { event: 'node_enter', step: 2, node: 'llm', kind: 'call_llm' },
      { event: 'node_exit', step: 2, node: 'llm', update: { n: 2, messages: [{ id: 'm1', type: 'ai', content: 'final' }, { type: 'ai', content: 'more' }] }, duration_ms: 1 },
      { event: 'state_edited', key: 'n', value: 7 },
      { event: 'node_enter', step: 3, node: 'x', kind: 'set_state' },
      { event: 'node_exit', step: 3, node: 'x', update: { done: true }, duration_ms: 1 },
      { event: 'run_finished', status: 'completed', state: { exact: true }, output: null },
    ]);
    backend.trace = { path: '/runs/a-run-r.jsonl', events };
    backend.traceWarning = "The graph's `reducers` are unknown (no agent file was given for this trace)";
    await dbg.getState().openTrace('/runs/a-run-r.jsonl');
    // The last step: the recorded final state, as the engine answers it.
    expect(dbg.getState().stateView).toMatchObject({ step: 3, state: { exact: true }, loading: false, error: null });
    expect(dbg.getState().stateView?.warning).toBe(backend.traceWarning);
    await dbg.getState().selectStep(2);
    const sv = dbg.getState().stateView!;
    expect(sv.state?.n).toBe(7);
    expect((sv.state?.messages as { content: string }[]).map((m) => m.content)).toEqual(['hello', 'final', 'more']);
    expect(sv.prev?.n).toBe(1);
    expect(sv.diff).toContainEqual({ path: ['n'], kind: 'changed', before: 1, after: 7 });
    expect(calls(backend, 'trace_state_at').at(-1)?.args).toEqual({ path: '/runs/a-run-r.jsonl', step: 2, events: events.length });
    // A refusal of the engine (a trace gone from disk) is the state panel's error.
    backend.failNext('trace_state_at', { message: 'cannot read the trace /runs/a-run-r.jsonl: No such file or directory (os error 2)' });
    await dbg.getState().selectStep(1);
    expect(dbg.getState().stateView).toMatchObject({ step: 1, state: null, warning: null, loading: false, error: 'cannot read the trace /runs/a-run-r.jsonl: No such file or directory (os error 2)' });
  });

  it('diffs the states the engine gives from the exact initial state on (a key changed, not added)', async () => {
    const { backend, dbg } = await setup();
    const run = 'run-l';
    const events = evs(run, [
      { event: 'run_started', agent: 'loop', input: null, state: { count: 0, mode: 'count', note: '', messages: [] } },
      { event: 'node_enter', step: 1, node: 'setup', kind: 'set_state' },
      { event: 'node_exit', step: 1, node: 'setup', update: { note: 'started' }, duration_ms: 1 },
      { event: 'node_enter', step: 2, node: 'inc', kind: 'set_state' },
      { event: 'node_exit', step: 2, node: 'inc', update: { count: 1 }, duration_ms: 1 },
    ]);
    backend.trace = { path: '/runs/loop-run-l.jsonl', events };
    await dbg.getState().openTrace('/runs/loop-run-l.jsonl');
    expect(dbg.getState().stateView).toMatchObject({ step: 2, state: { count: 1, mode: 'count', note: 'started', messages: [] }, warning: null });
    expect(dbg.getState().stateView?.diff).toEqual([{ path: ['count'], kind: 'changed', before: 0, after: 1 }]);
    await dbg.getState().selectStep(0);
    expect(dbg.getState().stateView).toMatchObject({ step: 0, state: { count: 0, mode: 'count', note: '', messages: [] }, prev: null, diff: [] });
  });

  it('an earlier fork is read from its own part of the trace; a run that wrote no trace says its states are gone', async () => {
    const ctx = await setup();
    const { backend, dbg } = ctx;
    const run = await runTo(ctx, 4);
    await dbg.getState().rewind(1);
    const forkEvents = dbg.getState().history[0].model.eventCount;
    backend.emitRun({ run, events: [...evs(run, [{ event: 'rewound', step: 1 }]), ...steps(run, 2, 3)], status: paused(3) });
    dbg.getState().flush();
    expect(dbg.getState().model.eventCount).toBeGreaterThan(forkEvents);
    dbg.getState().viewHistory(0);
    await waitFor(() => expect(dbg.getState().stateView).toMatchObject({ step: 4, state: { n: 4 }, loading: false }));
    expect(calls(backend, 'trace_state_at').at(-1)?.args).toEqual({ path: `/fake/runs/${run}.jsonl`, step: 4, events: forkEvents });
    dbg.getState().viewHistory(null);
    // A run without a trace (its runs folder could not be written) keeps its timeline only.
    backend.runInfo = { trace: null };
    await runTo(ctx, 2);
    await runTo(ctx, 1);
    expect(dbg.getState().history[0].trace).toBeNull();
    const before = calls(backend, 'trace_state_at').length;
    dbg.getState().viewHistory(0);
    await waitFor(() => expect(dbg.getState().stateView).toMatchObject({ step: 2, state: null, loading: false, error: 'no trace of this run was written, so its states can no longer be asked for' }));
    expect(calls(backend, 'trace_state_at')).toHaveLength(before);
  });
});
