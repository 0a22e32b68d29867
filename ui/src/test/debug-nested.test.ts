// Stepping into nested runs (issue 5, item 8): the nested pause folded from `nested_paused` /
// `nested_resumed` / the nested run's own events, and the store's controls and state around it.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { waitFor } from '@testing-library/react';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { createDebugStore, nestedPause, shownNestedPause } from '../debug/store';
import { emptyModel, endNestedPause, foldEvents, ModelFolder, nestedDiff, type RunModel } from '../debug/model';
import type { DebugEvent, RunStatusInfo } from '../debug/types';
import { demoView } from '../fake/demo';

type Ev = { [k: string]: unknown; event: string; run?: string };

let clock = 1_700_000_000_000;
const TOP = 'r1';
const SUB = 'r1/research';

function evs(list: Ev[]): DebugEvent[] {
  return list.map((e) => ({ run: TOP, ts_ms: (clock += 5), ...e }) as unknown as DebugEvent);
}

function nestedPaused(over: Partial<Ev> = {}): Ev {
  return {
    event: 'nested_paused',
    run: SUB,
    reason: 'step',
    step: 1,
    due: ['search'],
    agent: 'researcher',
    file: '/agents/researcher.yaml',
    state: { messages: [], topic: 'tides' },
    depth: 1,
    node: 'research',
    ...over,
  };
}

/** The top-level run entering `research` (a sub-agent node), its nested run starting and
 *  running `plan`. */
const intoResearch: Ev[] = [
  { event: 'run_started', agent: 'support-triage', input: 'hi' },
  { event: 'node_enter', step: 1, node: 'start', kind: 'set_state' },
  { event: 'node_exit', step: 1, node: 'start', update: { turns: 0 }, duration_ms: 1 },
  { event: 'route', from: 'start', to: 'research', reason: { type: 'static' } },
  { event: 'node_enter', step: 2, node: 'research', kind: 'call_agent' },
  { event: 'run_started', run: SUB, agent: 'researcher', input: { topic: 'tides' } },
  { event: 'node_enter', run: SUB, step: 1, node: 'plan', kind: 'call_llm' },
  { event: 'node_exit', run: SUB, step: 1, node: 'plan', update: { plan: 'x' }, duration_ms: 1 },
];

const running = (step: number): RunStatusInfo => ({ state: 'running', step, due: [], reason: null });
const pausedAt = (step: number, due: string[] = []): RunStatusInfo => ({ state: 'paused', step, due, reason: 'step' });

describe('nested pause: the model', () => {
  it('a nested_paused sets it, with the nested run visited nodes and agent', () => {
    const m = foldEvents(emptyModel(), evs([...intoResearch, nestedPaused()]));
    expect(m.nested).toMatchObject({
      run: SUB,
      node: 'research',
      agent: 'researcher',
      file: '/agents/researcher.yaml',
      due: ['search'],
      step: 1,
      state: { messages: [], topic: 'tides' },
      depth: 1,
      reason: 'step',
      prev: null,
      prevStep: null,
    });
    expect(m.nestedRuns[SUB]).toEqual({ agent: 'researcher', visited: { plan: [1] } });
    // The nested run's events are not top-level steps: the top level is inside step 2.
    expect(m.steps.map((r) => r.step)).toEqual([1, 2]);
    expect(m.steps[1].status).toBe('running');
    expect(m.overlay.visited.plan).toBeUndefined();
  });

  it('a second nested_paused replaces it and diffs against the pause before; a repeat at the same step (an edit) keeps that diff', () => {
    let m = foldEvents(emptyModel(), evs([...intoResearch, nestedPaused()]));
    const first = m.nested!;
    m = foldEvents(
      m,
      evs([
        { event: 'nested_resumed', run: SUB },
        { event: 'node_enter', run: SUB, step: 2, node: 'search', kind: 'tool_node' },
        { event: 'node_exit', run: SUB, step: 2, node: 'search', update: { hits: 3 }, duration_ms: 1 },
        nestedPaused({ step: 2, due: ['write'], state: { messages: [], topic: 'tides', hits: 3 } }),
      ]),
    );
    expect(m.nested).not.toBe(first);
    expect(m.nested).toMatchObject({ step: 2, due: ['write'], prev: first.state, prevStep: 1 });
    expect(nestedDiff(m.nested!)).toEqual([{ path: ['hits'], kind: 'added', after: 3 }]);
    expect(m.nestedRuns[SUB].visited).toEqual({ plan: [1], search: [2] });
    // The user edits `topic` while paused there: the same pause again with the new state.
    m = foldEvents(m, evs([nestedPaused({ step: 2, due: ['write'], state: { messages: [], topic: 'waves', hits: 3 } })]));
    expect(m.nested).toMatchObject({ step: 2, prevStep: 1, state: { topic: 'waves' } });
    expect(nestedDiff(m.nested!).map((d) => [d.path.join('.'), d.kind]).sort()).toEqual([
      ['hits', 'added'],
      ['topic', 'changed'],
    ]);
  });

  it('nested_resumed of that run clears it; of another run it does not', () => {
    const m = foldEvents(emptyModel(), evs([...intoResearch, nestedPaused()]));
    expect(foldEvents(m, evs([{ event: 'nested_resumed', run: 'r1/other' }])).nested?.run).toBe(SUB);
    expect(foldEvents(m, evs([{ event: 'nested_resumed', run: SUB }])).nested).toBeNull();
    // The nested run goes on: its marks stay until it finishes.
    expect(foldEvents(m, evs([{ event: 'nested_resumed', run: SUB }])).nestedRuns[SUB]).toBeDefined();
  });

  it("that run's run_finished clears it and forgets the run; another nested run's does not", () => {
    const m = foldEvents(emptyModel(), evs([...intoResearch, nestedPaused()]));
    const other = foldEvents(m, evs([{ event: 'run_finished', run: 'r1/other', status: 'completed', state: {}, output: null }]));
    expect(other.nested?.run).toBe(SUB);
    const done = foldEvents(m, evs([{ event: 'run_finished', run: SUB, status: 'completed', state: { hits: 3 }, output: 'ok' }]));
    expect(done.nested).toBeNull();
    expect(done.nestedRuns).toEqual({});
    // The top-level run is not finished by its nested run finishing.
    expect(done.finished).toBeNull();
    // The input model is not changed (copy on write).
    expect(m.nested?.run).toBe(SUB);
    expect(m.nestedRuns[SUB]).toBeDefined();
  });

  it('a top-level status other than running clears it (in the order the batches came); running keeps it', () => {
    const m = foldEvents(emptyModel(), evs([...intoResearch, nestedPaused()]));
    expect(endNestedPause(m, running(1))).toBe(m);
    expect(endNestedPause(m, null)).toBe(m);
    for (const st of [pausedAt(2), { ...pausedAt(2), state: 'interrupted' } as RunStatusInfo, { ...pausedAt(2), state: 'finished' } as RunStatusInfo]) {
      expect(endNestedPause(m, st).nested).toBeNull();
    }
    // Through a folder, batch by batch: pause → status paused → a later pause again.
    const f = new ModelFolder(emptyModel());
    f.add(evs([...intoResearch, nestedPaused()]));
    f.status(running(1));
    expect(f.nested?.run).toBe(SUB);
    f.status(pausedAt(2, ['confirm']));
    expect(f.nested).toBeNull();
    f.add(evs([nestedPaused({ step: 3 })]));
    f.status(running(2));
    expect(f.result().nested?.step).toBe(3);
  });

  it('the top-level run finishing or a rewind ends every nested run', () => {
    const m = foldEvents(emptyModel(), evs([...intoResearch, nestedPaused()]));
    const fin = foldEvents(m, evs([{ event: 'run_finished', status: 'stopped', state: {}, output: null }]));
    expect(fin.nested).toBeNull();
    expect(fin.nestedRuns).toEqual({});
    const rew = foldEvents(m, evs([{ event: 'rewound', step: 1 }]));
    expect(rew.nested).toBeNull();
    expect(rew.nestedRuns).toEqual({});
  });

  it('a new invocation of the nested run starts its marks afresh', () => {
    let m = foldEvents(emptyModel(), evs([...intoResearch, nestedPaused()]));
    m = foldEvents(
      m,
      evs([
        { event: 'nested_resumed', run: SUB },
        { event: 'run_finished', run: SUB, status: 'completed', state: {}, output: null },
        { event: 'node_exit', step: 2, node: 'research', update: {}, duration_ms: 3 },
        { event: 'node_enter', step: 3, node: 'research', kind: 'call_agent' },
        { event: 'run_started', run: SUB, agent: 'researcher', input: {} },
        nestedPaused({ step: 0, due: ['plan'], state: { topic: 'moon' } }),
      ]),
    );
    expect(m.nestedRuns[SUB].visited).toEqual({});
    expect(m.nested).toMatchObject({ step: 0, due: ['plan'], prev: null });
  });

  it('a grandchild: depth 2, under the top-level node, both nested runs known', () => {
    const deep = `${SUB}/lookup`;
    const m = foldEvents(
      emptyModel(),
      evs([
        ...intoResearch,
        { event: 'node_enter', run: SUB, step: 2, node: 'lookup', kind: 'call_agent' },
        { event: 'run_started', run: deep, agent: 'librarian', input: {} },
        nestedPaused({ run: deep, agent: 'librarian', depth: 2, step: 0, due: ['find'], file: null }),
      ]),
    );
    expect(m.nested).toMatchObject({ run: deep, node: 'research', depth: 2, file: null, agent: 'librarian', due: ['find'] });
    expect(m.nestedRuns[SUB]).toEqual({ agent: 'researcher', visited: { plan: [1], lookup: [2] } });
    expect(m.nestedRuns[deep]).toEqual({ agent: 'librarian', visited: {} });
    // The grandchild ending ends the pause; its parent goes on.
    const done = foldEvents(m, evs([{ event: 'run_finished', run: deep, status: 'completed', state: {}, output: null }]));
    expect(done.nested).toBeNull();
    expect(Object.keys(done.nestedRuns)).toEqual([SUB]);
  });
});

// ------------------------------------------------------------------------------------------------

async function setup() {
  const backend = createFakeBackend(demoView());
  const app = createAppStore(backend);
  await app.getState().init();
  const dbg = createDebugStore(backend, app);
  void backend.onRunEvents((b) => dbg.getState().receive(b));
  await dbg.getState().start('step');
  const run = dbg.getState().info!.run;
  const send = (list: Ev[], status: RunStatusInfo | null) => {
    backend.emitRun({ run, events: list.map((e) => ({ run, ts_ms: (clock += 5), ...e, ...(e.run ? { run: e.run.replace(TOP, run) } : {}) }) as unknown as DebugEvent), status });
    dbg.getState().flush();
  };
  return { backend, app, dbg, run, send, sub: `${run}/research` };
}

const controls = (backend: ReturnType<typeof createFakeBackend>) => backend.calls.filter((c) => c.cmd === 'run_control').map((c) => (c.args as { action: string }).action);

describe('nested pause: the store', () => {
  afterEach(() => vi.restoreAllMocks());

  it('is the pause while the status says running, and ends with a top-level pause', async () => {
    const { dbg, send, sub, backend } = await setup();
    backend.runStates = { 1: { turns: 0 }, 0: {} };
    send(intoResearch.slice(0, 4), pausedAt(1, ['research']));
    expect(nestedPause(dbg.getState())).toBeNull();
    send([{ event: 'node_enter', step: 2, node: 'research', kind: 'call_agent' }, ...intoResearch.slice(5)], running(1));
    expect(nestedPause(dbg.getState())).toBeNull();
    send([nestedPaused({ run: sub })], null);
    expect(nestedPause(dbg.getState())?.run).toBe(sub);
    expect(shownNestedPause(dbg.getState())?.run).toBe(sub);
    // Viewing an earlier run shows that run; the controls still know where the live run is.
    dbg.setState({ viewing: 0 });
    expect(shownNestedPause(dbg.getState())).toBeNull();
    expect(nestedPause(dbg.getState())?.run).toBe(sub);
    dbg.setState({ viewing: null });
    // Stepping out: the nested run ends, the top level pauses after step 2.
    send([{ event: 'nested_resumed', run: sub }, { event: 'run_finished', run: sub, status: 'completed', state: {}, output: null }, { event: 'node_exit', step: 2, node: 'research', update: { found: 1 }, duration_ms: 4 }], pausedAt(2, ['confirm']));
    expect(nestedPause(dbg.getState())).toBeNull();
    expect(dbg.getState().model.nested).toBeNull();
    // A paused status alone (no nested_resumed) also ends it.
    send([nestedPaused({ run: sub, step: 4 })], running(2));
    expect(nestedPause(dbg.getState())?.step).toBe(4);
    send([], pausedAt(3));
    expect(nestedPause(dbg.getState())).toBeNull();
    expect(dbg.getState().model.nested).toBeNull();
    // ...for good: running on from there is not paused in the nested run again.
    send([], running(3));
    expect(nestedPause(dbg.getState())).toBeNull();
    expect(controls(backend)).toEqual([]);
  });

  it('step into, step out, step and continue go to the engine only when they make sense', async () => {
    const { dbg, send, sub, backend } = await setup();
    send(intoResearch.slice(0, 4), running(0));
    // Running at the top level: neither step into nor step out.
    await dbg.getState().stepInto();
    await dbg.getState().stepOut();
    expect(controls(backend)).toEqual([]);
    send([], pausedAt(1, ['research']));
    await dbg.getState().stepOut();
    expect(controls(backend)).toEqual([]);
    await dbg.getState().stepInto();
    expect(controls(backend)).toEqual(['step_into']);
    send([{ event: 'node_enter', step: 2, node: 'research', kind: 'call_agent' }, nestedPaused({ run: sub, step: 0 })], running(1));
    await dbg.getState().stepInto();
    await dbg.getState().step();
    await dbg.getState().stepOut();
    await dbg.getState().continue();
    expect(controls(backend)).toEqual(['step_into', 'step_into', 'step', 'step_out', 'continue']);
    // A refused control is reported, not thrown.
    backend.failNext('run_control', { message: 'not paused in a nested run' });
    await dbg.getState().stepOut();
  });

  it('while nested-paused: edits go to the engine without asking for the top-level state; rewinding and state-at-step are not offered', async () => {
    const { dbg, app, send, sub, backend } = await setup();
    backend.runStates = { 0: {}, 1: { turns: 0 } };
    send(intoResearch.slice(0, 4), pausedAt(1, ['research']));
    await waitFor(() => expect(dbg.getState().stateView?.state).toEqual({ turns: 0 }));
    send([{ event: 'node_enter', step: 2, node: 'research', kind: 'call_agent' }, nestedPaused({ run: sub, step: 0 })], running(1));
    const before = backend.calls.length;
    expect(await dbg.getState().editState('topic', '"waves"')).toBeNull();
    expect(backend.calls.slice(before)).toEqual([{ cmd: 'run_edit_state', args: { key: 'topic', value: 'waves' } }]);
    // Picking a step in the timeline does not ask the engine (it would refuse).
    await dbg.getState().selectStep(1);
    expect(backend.calls.slice(before).filter((c) => c.cmd === 'run_state_at')).toEqual([]);
    expect(dbg.getState().stateView?.error).toMatch(/paused inside the nested run .*research/);
    await dbg.getState().rewind(1);
    expect(backend.calls.filter((c) => c.cmd === 'run_rewind')).toEqual([]);
    expect(app.getState().toasts.at(-1)?.message).toMatch(/paused inside the nested run/);
    // Back at the top level (running on: Continue), the selected step's state is loaded again.
    send([{ event: 'nested_resumed', run: sub }], running(1));
    await waitFor(() => expect(dbg.getState().stateView).toMatchObject({ step: 1, state: { turns: 0 }, error: null }));
    // Paused in it again, then at the top level.
    send([nestedPaused({ run: sub, step: 1 })], null);
    await dbg.getState().selectStep(0);
    expect(dbg.getState().stateView?.error).toMatch(/paused inside the nested run/);
    send([{ event: 'nested_resumed', run: sub }, { event: 'run_finished', run: sub, status: 'completed', state: {}, output: null }], pausedAt(1, ['research']));
    await waitFor(() => expect(dbg.getState().stateView).toMatchObject({ step: 0, state: {}, error: null }));
  });

  it('fetches a nested graph once per file and agent in a run, keeping the refusal', async () => {
    const { dbg, backend } = await setup();
    backend.nestedViews['/agents/researcher.yaml'] = { ...demoView(), path: '/agents/researcher.yaml', agent: 'researcher' };
    await dbg.getState().loadNestedView('/agents/researcher.yaml', 'researcher');
    await dbg.getState().loadNestedView('/agents/researcher.yaml', 'researcher');
    await dbg.getState().loadNestedView('/agents/missing.yaml', null);
    expect(backend.calls.filter((c) => c.cmd === 'nested_view').map((c) => c.args)).toEqual([
      { file: '/agents/researcher.yaml', agent: 'researcher' },
      { file: '/agents/missing.yaml', agent: null },
    ]);
    const views = Object.values(dbg.getState().nestedViews);
    expect(views[0]).toMatchObject({ loading: false, error: null, view: { agent: 'researcher' } });
    expect(views[1]).toMatchObject({ loading: false, view: null, error: 'cannot read /agents/missing.yaml: no such file or directory' });
    // A new run reads the files again (they may have changed).
    await dbg.getState().start('step');
    expect(dbg.getState().nestedViews).toEqual({});
  });

  it('behind a backlog a nested_paused is shown at once, like a pause', async () => {
    const { dbg, backend, run, sub } = await setup();
    // A clock that moves 30 ms at every look: a frame's budget (24 ms) runs out after each
    // batch, and when the next frame folds the window was shown less than 100 ms ago.
    let t = 1000;
    vi.spyOn(performance, 'now').mockImplementation(() => (t += 30));
    const batch = (list: Ev[]) =>
      backend.emitRun({ run, events: list.map((e) => ({ run, ts_ms: (clock += 5), ...e }) as unknown as DebugEvent), status: running(1) });
    const firstShown = async (send: () => void) => {
      const models: RunModel[] = [];
      const unsub = dbg.subscribe((s, prev) => {
        if (s.model !== prev.model) models.push(s.model);
      });
      const before = dbg.getState().model.eventCount;
      send();
      await waitFor(() => expect(models.length).toBeGreaterThan(0));
      unsub();
      return { model: models[0], events: models[0].eventCount - before };
    };
    await firstShown(() => batch(intoResearch.slice(0, 5)));
    // Two batches behind each other: the first one folded is kept until the second one is...
    const plain = await firstShown(() => {
      batch([{ event: 'log', source: 'mcp:x', text: 'one' }]);
      batch([{ event: 'log', source: 'mcp:x', text: 'two' }]);
    });
    expect(plain.events).toBe(2);
    // ...but a pause inside a nested run is shown by the frame that folds it.
    const nested = await firstShown(() => {
      batch([nestedPaused({ run: sub })]);
      batch([{ event: 'log', source: 'mcp:x', text: 'three' }]);
    });
    expect(nested.events).toBe(1);
    expect(nested.model.nested?.run).toBe(sub);
  });
});
