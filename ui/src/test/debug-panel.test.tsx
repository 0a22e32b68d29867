import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createFakeBackend, type FakeBackend } from '../fake/backend';
import { StoreContext, createAppStore } from '../store';
import { DebugContext, createDebugStore } from '../debug/store';
import { emptyModel, foldEvents } from '../debug/model';
import type { DebugEvent, RunStatusInfo } from '../debug/types';
import { DebugPanel } from '../components/debug/DebugPanel';
import { demoView } from '../fake/demo';

type Ev = { [k: string]: unknown; event: string };

async function setup() {
  const backend = createFakeBackend(demoView());
  const app = createAppStore(backend);
  await app.getState().init();
  const dbg = createDebugStore(backend, app);
  render(
    <StoreContext.Provider value={app}>
      <DebugContext.Provider value={dbg}>
        <DebugPanel />
      </DebugContext.Provider>
    </StoreContext.Provider>,
  );
  return { backend, app, dbg };
}

let ts = 1_700_000_000_000;

/** Start a run and feed it one batch of events (with a status), folded at once. */
async function runWith(backend: FakeBackend, dbg: ReturnType<typeof createDebugStore>, events: Ev[], status: Partial<RunStatusInfo>) {
  await act(async () => {
    await dbg.getState().start('step');
  });
  const run = backend.lastRun!;
  await act(async () => {
    dbg.getState().receive({
      run,
      events: events.map((e) => ({ run, ts_ms: typeof e.ts_ms === 'number' ? e.ts_ms : (ts += 10), ...e }) as unknown as DebugEvent),
      status: { state: 'paused', step: 0, due: [], reason: 'step', ...status } as RunStatusInfo,
    });
    dbg.getState().flush();
  });
  return run;
}

/** A step of one node: enter, (extra events), exit, route. */
function step(n: number, node: string, kind: string, update: unknown, extra: Ev[] = [], to?: string): Ev[] {
  const out: Ev[] = [{ event: 'node_enter', step: n, node, kind }, ...extra, { event: 'node_exit', step: n, node, update, duration_ms: 12 }];
  if (to) out.push({ event: 'route', from: node, to, reason: { type: 'default' } });
  return out;
}

function rows() {
  return screen.queryAllByTestId('timeline-row');
}

function stateRow(path: string) {
  return screen.getAllByTestId('state-row').find((r) => r.getAttribute('data-path') === path);
}

describe('debug panel', () => {
  it('shows a hint and the tabs before any run', async () => {
    await setup();
    expect(screen.getByTestId('debug-panel')).toBeTruthy();
    expect(screen.getByTestId('debug-hint').textContent).toContain('Press F5 to run, F10 to step');
    for (const t of ['timeline', 'state', 'calls']) expect(screen.getByTestId(`tab-${t}`)).toBeTruthy();
  });

  it('timeline: one row per step; click selects the step and the node; rewind sends run_rewind', async () => {
    const { backend, app, dbg } = await setup();
    backend.runStates = { 0: {}, 1: { turns: 0 }, 2: { turns: 0, messages: [] }, 3: { turns: 1 } };
    await runWith(
      backend,
      dbg,
      [
        { event: 'run_started', agent: 'triage', input: 'hi' },
        ...step(1, 'start', 'set_state', { turns: 0 }, [], 'answer'),
        ...step(2, 'answer', 'call_llm', { messages: [] }, [], 'count'),
        ...step(3, 'count', 'data_transform', { turns: 1 }),
      ],
      { step: 3, due: ['confirm'] },
    );
    const r = rows();
    expect(r.map((x) => x.getAttribute('data-step'))).toEqual(['1', '2', '3']);
    expect(r.map((x) => x.getAttribute('data-node'))).toEqual(['start', 'answer', 'count']);
    expect(r.every((x) => x.getAttribute('data-status') === 'done')).toBe(true);
    expect(r[0].textContent).toContain('set_state');
    expect(r[0].textContent).toContain('12 ms');
    expect(r[1].textContent).toContain('default');
    expect(r.every((x) => x.getAttribute('data-selected') === 'false')).toBe(true);
    expect((screen.getByTestId('timeline-rewind') as HTMLButtonElement).disabled).toBe(true);

    fireEvent.click(r[1]);
    await waitFor(() => expect(rows()[1].getAttribute('data-selected')).toBe('true'));
    expect(dbg.getState().selectedStep).toBe(2);
    expect(app.getState().selection).toEqual({ type: 'node', id: 'answer' });
    expect((screen.getByTestId('timeline-follow') as HTMLInputElement).checked).toBe(false);

    const rewind = screen.getByTestId('timeline-rewind') as HTMLButtonElement;
    expect(rewind.disabled).toBe(false);
    expect(rewind.textContent).toContain('Rewind to step 2');
    await act(async () => {
      fireEvent.click(rewind);
    });
    expect(backend.calls.some((c) => c.cmd === 'run_rewind' && (c.args as { step: number }).step === 2)).toBe(true);

    // The run before the rewind is kept: pick it in history-select to compare.
    const hist = screen.getByTestId('history-select') as HTMLSelectElement;
    expect(hist.options.length).toBe(2);
    expect(hist.options[1].textContent).toContain('before rewind to step 2');
    await act(async () => {
      fireEvent.change(hist, { target: { value: '0' } });
    });
    expect(dbg.getState().viewing).toBe(0);
    expect(screen.getByTestId('history-banner')).toBeTruthy();
    expect(rows()).toHaveLength(3);
    expect((screen.getByTestId('timeline-rewind') as HTMLButtonElement).disabled).toBe(true);
  });

  it('timeline: a step that ran hooks shows how many, with failures flagged and each hook in the tooltip', async () => {
    const { backend, dbg } = await setup();
    const hook = (point: string, outcome: string, detail: string | null = null): Ev => ({
      event: 'hook', node: 'answer', point, executor: 'url:http://127.0.0.1:8000/hooks', outcome, duration_ms: 4, detail,
    });
    await runWith(
      backend,
      dbg,
      [
        { event: 'run_started', agent: 'triage', input: 'hi' },
        ...step(1, 'start', 'set_state', { turns: 0 }, [], 'answer'),
        ...step(2, 'answer', 'call_llm', { messages: [] }, [hook('before_llm_call', 'modified', 'system_prompt'), hook('after_llm_call', 'failed', 'HTTP 500: oops; passing through')]),
      ],
      { step: 2, due: [] },
    );
    const r = rows();
    expect(r[0].querySelector('[data-testid="timeline-hooks"]')).toBeNull();
    const chip = r[1].querySelector('[data-testid="timeline-hooks"]') as HTMLElement;
    expect(chip.getAttribute('data-count')).toBe('2');
    expect(chip.getAttribute('data-failed')).toBe('1');
    expect(chip.textContent).toContain('⚓ 2');
    expect(chip.title).toContain('before_llm_call (answer) · url:http://127.0.0.1:8000/hooks · changed: system_prompt · 4 ms');
    expect(chip.title).toContain('after_llm_call (answer) · url:http://127.0.0.1:8000/hooks · failed: HTTP 500: oops; passing through');
  });

  it('state tree marks added, changed and removed rows after a set_state step', async () => {
    const { backend, dbg } = await setup();
    backend.runStates = {
      0: {},
      1: { status: 'open', turns: 0, draft: 'x', plan: { a: 1 } },
      2: { status: 'closed', turns: 0, reply: 'done', plan: { a: 1, b: 2 } },
    };
    await runWith(
      backend,
      dbg,
      [...step(1, 'start', 'set_state', { status: 'open' }), ...step(2, 'start', 'set_state', { status: 'closed' })],
      { step: 2 },
    );
    fireEvent.click(screen.getByTestId('tab-state'));
    await waitFor(() => expect(stateRow('status')?.getAttribute('data-diff')).toBe('changed'));
    expect(stateRow('reply')?.getAttribute('data-diff')).toBe('added');
    expect(stateRow('draft')?.getAttribute('data-diff')).toBe('removed');
    expect(stateRow('turns')?.getAttribute('data-diff')).toBe('');
    expect(stateRow('plan.b')?.getAttribute('data-diff')).toBe('added');
    expect(stateRow('plan')?.getAttribute('data-diff')).toBe('changed');
    // old → new on the changed row
    expect(stateRow('status')!.textContent).toContain('"open"');
    expect(stateRow('status')!.textContent).toContain('"closed"');
    expect(screen.getByTestId('state-summary').textContent).toContain('4 changed since step 1');
    // The changed top-level keys are listed; a click filters the tree to one of them.
    const chips = screen.getAllByTestId('state-changed-key').map((c) => c.textContent);
    expect([...chips].sort()).toEqual(['draft', 'plan', 'reply', 'status']);
    fireEvent.click(screen.getAllByTestId('state-changed-key').find((c) => c.textContent === 'status')!);
    await waitFor(() => expect(stateRow('turns')).toBeUndefined());
    expect(stateRow('status')).toBeDefined();
  });

  it("state tab: a recorded run's state shows the engine's warning when it is a best effort", async () => {
    const { backend, dbg } = await setup();
    const run = 'rec';
    const events = [
      { event: 'run_started', agent: 'fan', input: 'go', state: { items: [], initial_prompt: 'go' } },
      ...step(1, 'a', 'script', { items: 'A' }),
    ].map((e) => ({ run, ts_ms: (ts += 10), ...e }) as unknown as DebugEvent);
    backend.trace = { path: '/runs/fan-rec.jsonl', events };
    backend.traceWarning = "The graph's `reducers` are unknown (no agent file was given for this trace)";
    await act(async () => {
      await dbg.getState().openTrace('/runs/fan-rec.jsonl');
    });
    fireEvent.click(screen.getByTestId('tab-state'));
    await waitFor(() => expect(stateRow('items')?.getAttribute('data-diff')).toBe('changed'));
    expect(screen.getByTestId('state-warning').textContent).toBe(backend.traceWarning);
    // An exact answer has no warning.
    backend.traceWarning = null;
    await act(async () => {
      await dbg.getState().selectStep(0);
    });
    expect(screen.queryByTestId('state-warning')).toBeNull();
  });

  it('state tab shows the skills loaded at the selected step', async () => {
    const { backend, dbg } = await setup();
    const loaded = { weather: { version: '1.0.0', tools: ['get_weather'] } };
    backend.runStates = {
      0: { messages: [], __sherma__: { loaded_tools_from_skills: [], loaded_skills: {} } },
      1: { messages: [], __sherma__: { loaded_tools_from_skills: ['get_weather'], loaded_skills: loaded } },
      2: { messages: [], __sherma__: { loaded_tools_from_skills: [], loaded_skills: {} } },
    };
    await runWith(
      backend,
      dbg,
      [
        ...step(1, 'load', 'load_skills', { __sherma__: { loaded_skills: loaded } }, [], 'execute'),
        ...step(2, 'execute_tools', 'tool_node', { __sherma__: { loaded_skills: {} } }),
      ],
      { step: 2 },
    );
    fireEvent.click(screen.getByTestId('tab-state'));
    // The latest step: the skill was unloaded.
    await waitFor(() => expect(screen.getByTestId('state-tree').getAttribute('data-step')).toBe('2'));
    await waitFor(() => expect(screen.queryByTestId('state-skills-none')).toBeTruthy());
    expect(screen.queryAllByTestId('state-skill')).toHaveLength(0);
    // Step 1: loaded by that step, with its version and tools.
    fireEvent.click(screen.getByTestId('tab-timeline'));
    fireEvent.click(rows()[0]);
    fireEvent.click(screen.getByTestId('tab-state'));
    await waitFor(() => expect(screen.queryAllByTestId('state-skill')).toHaveLength(1));
    const chip = screen.getByTestId('state-skill');
    expect(chip.getAttribute('data-skill')).toBe('weather');
    expect(chip.getAttribute('data-added')).toBe('true');
    expect(chip.textContent).toContain('1.0.0');
    expect(chip.textContent).toContain('get_weather');
    expect(chip.getAttribute('title')).toBe('skill weather 1.0.0: tools: get_weather');
  });

  it('renders a messages list as a conversation (roles, tool calls, tool results) with a raw toggle', async () => {
    const { backend, dbg } = await setup();
    backend.runStates = {
      0: { messages: [] },
      1: {
        messages: [
          { type: 'system', content: 'Be brief.' },
          { type: 'human', content: 'Where is order 42?' },
          { type: 'ai', content: '', tool_calls: [{ id: 'c1', name: 'lookup_order', args: { id: 42 } }] },
          { type: 'tool', content: 'shipped', tool_call_id: 'c1', name: 'lookup_order' },
          { role: 'assistant', content: 'It shipped.' },
        ],
      },
    };
    await runWith(backend, dbg, step(1, 'answer', 'call_llm', {}), { step: 1 });
    fireEvent.click(screen.getByTestId('tab-state'));
    const conv = await screen.findByTestId('conversation');
    const msgs = within(conv).getAllByTestId('message');
    expect(msgs.map((m) => m.getAttribute('data-role'))).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
    expect(msgs[1].textContent).toContain('Where is order 42?');
    expect(msgs[2].textContent).toContain('lookup_order');
    expect(msgs[2].textContent).toContain('42');
    expect(msgs[3].textContent).toContain('shipped');
    // every message of step 1 is new (the state before step 1 had none)
    expect(msgs[0].getAttribute('data-diff')).toBe('added');

    fireEvent.click(screen.getByTestId('state-raw-toggle'));
    expect(screen.queryByTestId('conversation')).toBeNull();
    expect(stateRow('messages.1')).toBeTruthy();
  });

  it('search filters rows by key or value and expands the matches', async () => {
    const { backend, dbg } = await setup();
    backend.runStates = {
      0: {},
      1: { customer: { name: 'Ada', address: { city: 'Paris' } }, order: { id: 42, status: 'shipped' }, note: 'hello' },
    };
    await runWith(backend, dbg, step(1, 'start', 'set_state', {}), { step: 1 });
    fireEvent.click(screen.getByTestId('tab-state'));
    await waitFor(() => expect(stateRow('note')).toBeTruthy());
    // customer.address starts collapsed
    expect(stateRow('customer.address.city')).toBeUndefined();

    fireEvent.change(screen.getByTestId('state-search'), { target: { value: 'paris' } });
    await waitFor(() => expect(stateRow('customer.address.city')).toBeTruthy());
    const paths = screen.getAllByTestId('state-row').map((r) => r.getAttribute('data-path'));
    expect(paths).toEqual(['customer', 'customer.address', 'customer.address.city']);

    fireEvent.change(screen.getByTestId('state-search'), { target: { value: 'order' } });
    await waitFor(() => expect(screen.getAllByTestId('state-row').map((r) => r.getAttribute('data-path'))).toEqual(['order', 'order.id', 'order.status']));

    fireEvent.change(screen.getByTestId('state-search'), { target: { value: '' } });
    await waitFor(() => expect(stateRow('note')).toBeTruthy());
  });

  it('edits a top-level value while paused: invalid JSON shows the error, valid JSON is sent', async () => {
    const { backend, dbg } = await setup();
    backend.runStates = { 0: {}, 1: { turns: 2, status: 'open' } };
    await runWith(backend, dbg, step(1, 'count', 'data_transform', { turns: 2 }), { step: 1, due: ['confirm'] });
    fireEvent.click(screen.getByTestId('tab-state'));
    await waitFor(() => expect(stateRow('turns')).toBeTruthy());
    fireEvent.click(within(stateRow('turns')!).getByTestId('state-edit'));
    const input = screen.getByTestId('state-edit-input') as HTMLTextAreaElement;
    expect(input.value).toBe('2');

    fireEvent.change(input, { target: { value: '{"oops": ' } });
    await act(async () => {
      fireEvent.click(screen.getByTestId('state-edit-save'));
    });
    expect((await screen.findByTestId('state-edit-error')).textContent).toContain('not valid JSON');
    expect(screen.getByTestId('state-edit-input')).toBeTruthy();
    expect(backend.calls.some((c) => c.cmd === 'run_edit_state')).toBe(false);

    // A refusal by the engine keeps the editor open too.
    backend.failNext('run_edit_state', { message: 'the run is not paused' });
    fireEvent.change(screen.getByTestId('state-edit-input'), { target: { value: '7' } });
    await act(async () => {
      fireEvent.click(screen.getByTestId('state-edit-save'));
    });
    expect((await screen.findByTestId('state-edit-error')).textContent).toContain('the run is not paused');

    backend.runStates[1] = { turns: 5, status: 'open' };
    fireEvent.change(screen.getByTestId('state-edit-input'), { target: { value: '5' } });
    await act(async () => {
      fireEvent.keyDown(screen.getByTestId('state-edit-input'), { key: 'Enter', ctrlKey: true });
    });
    await waitFor(() => expect(screen.queryByTestId('state-edit-input')).toBeNull());
    expect(backend.calls.filter((c) => c.cmd === 'run_edit_state').at(-1)).toEqual({ cmd: 'run_edit_state', args: { key: 'turns', value: 5 } });
    await waitFor(() => expect(stateRow('turns')!.textContent).toContain('5'));

    // Escape cancels.
    fireEvent.click(within(stateRow('status')!).getByTestId('state-edit'));
    expect((screen.getByTestId('state-edit-input') as HTMLTextAreaElement).value).toBe('"open"');
    fireEvent.keyDown(screen.getByTestId('state-edit-input'), { key: 'Escape' });
    expect(screen.queryByTestId('state-edit-input')).toBeNull();
  });

  it('hides state-edit while the run is running', async () => {
    const { backend, dbg } = await setup();
    backend.runStates = { 0: {}, 1: { turns: 2 } };
    await runWith(backend, dbg, step(1, 'count', 'data_transform', { turns: 2 }), { step: 1 });
    fireEvent.click(screen.getByTestId('tab-state'));
    await waitFor(() => expect(stateRow('turns')).toBeTruthy());
    expect(screen.getAllByTestId('state-edit').length).toBe(1);
    await act(async () => {
      dbg.getState().receive({ run: backend.lastRun!, events: [], status: { state: 'running', step: 1, due: [] } });
      dbg.getState().flush();
    });
    expect(screen.queryAllByTestId('state-edit')).toHaveLength(0);
  });

  it('call inspector: messages sent, tools bound, response, tokens and latency; tool calls with result', async () => {
    const { backend, dbg } = await setup();
    backend.runStates = { 0: {}, 1: {}, 2: {} };
    const t0 = 1_800_000_000_000;
    await runWith(
      backend,
      dbg,
      [
        { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm', ts_ms: t0 },
        {
          event: 'llm_request',
          node: 'answer',
          ts_ms: t0 + 5,
          messages: [
            { role: 'system', content: 'You triage orders.' },
            { role: 'user', content: 'Where is order 42?' },
          ],
          tools: [{ name: 'lookup_order', description: 'Look an order up', parameters: { type: 'object', properties: { id: { type: 'integer' } } } }],
        },
        {
          event: 'llm_response',
          node: 'answer',
          ts_ms: t0 + 255,
          content: 'Let me check.',
          tool_calls: [{ id: 'c1', name: 'lookup_order', args: { id: 42 } }],
          usage: { input_tokens: 120, output_tokens: 15 },
        },
        { event: 'node_exit', step: 1, node: 'answer', update: {}, duration_ms: 260, ts_ms: t0 + 260 },
        { event: 'node_enter', step: 2, node: 'answer_tools', kind: 'tool_node', ts_ms: t0 + 300 },
        { event: 'tool_call', node: 'answer_tools', call: { id: 'c1', name: 'lookup_order', args: { id: 42 } }, ts_ms: t0 + 301 },
        { event: 'tool_result', node: 'answer_tools', id: 'c1', name: 'lookup_order', result: { status: 'shipped' }, ts_ms: t0 + 341 },
        { event: 'node_exit', step: 2, node: 'answer_tools', update: {}, duration_ms: 41, ts_ms: t0 + 342 },
      ],
      { step: 2 },
    );
    expect(rows()[0].textContent).toContain('120 → 15');
    expect(rows()[0].textContent).toContain('1 LLM');

    fireEvent.click(screen.getByTestId('tab-calls'));
    // Following the latest step: the tool call.
    let calls = screen.getAllByTestId('call');
    expect(calls).toHaveLength(1);
    expect(calls[0].getAttribute('data-kind')).toBe('tool');
    expect(calls[0].getAttribute('data-node')).toBe('answer_tools');
    expect(calls[0].textContent).toContain('lookup_order');
    expect(calls[0].textContent).toContain('shipped');
    expect(within(calls[0]).getByTestId('call-latency').textContent).toBe('40 ms');

    await act(async () => {
      await dbg.getState().selectStep(1);
    });
    calls = screen.getAllByTestId('call');
    expect(calls).toHaveLength(1);
    const llm = calls[0];
    expect(llm.getAttribute('data-kind')).toBe('llm');
    expect(llm.getAttribute('data-node')).toBe('answer');
    const msgs = within(llm).getAllByTestId('message');
    expect(msgs.map((m) => m.getAttribute('data-role'))).toEqual(['system', 'user']);
    expect(msgs[0].textContent).toContain('You triage orders.');
    expect(msgs[1].textContent).toContain('Where is order 42?');
    expect(within(llm).getByTestId('call-tokens').textContent).toBe('120 in / 15 out');
    expect(within(llm).getByTestId('call-latency').textContent).toBe('250 ms');
    const tool = within(llm).getByTestId('call-tool');
    expect(tool.textContent).toContain('lookup_order');
    expect(tool.textContent).not.toContain('integer');
    fireEvent.click(within(tool).getByRole('button'));
    expect(tool.textContent).toContain('integer');
    expect(within(llm).getByTestId('call-response-text').textContent).toBe('Let me check.');
    expect(within(llm).getByTestId('call-tool-call').textContent).toContain('lookup_order');

    // Messages fold (a one-line preview stays).
    fireEvent.click(within(msgs[0]).getByRole('button'));
    const folded = within(llm).getAllByTestId('message')[0];
    expect(folded.querySelector('.msg-content')).toBeNull();
    expect(within(folded).getByRole('button').getAttribute('aria-expanded')).toBe('false');
  });

  it('windows the timeline: a 10,000-step run renders a few dozen rows', async () => {
    const { dbg } = await setup();
    const events: DebugEvent[] = [];
    let t = 1_700_000_000_000;
    for (let i = 1; i <= 10_000; i++) {
      events.push({ run: 'big', ts_ms: t++, event: 'node_enter', step: i, node: i % 2 ? 'answer' : 'count', kind: 'set_state' } as DebugEvent);
      events.push({ run: 'big', ts_ms: t++, event: 'node_exit', step: i, node: i % 2 ? 'answer' : 'count', update: { i }, duration_ms: 1 } as DebugEvent);
    }
    const model = foldEvents(emptyModel(), events);
    expect(model.steps).toHaveLength(10_000);
    await act(async () => {
      dbg.setState({
        mode: 'live',
        info: { run: 'big', trace: null, agent: 'a', dialect: 'sherma', llm: 'scripted' },
        status: { state: 'paused', step: 10_000, due: [] },
        model,
      });
    });
    const shown = rows();
    expect(shown.length).toBeGreaterThan(5);
    expect(shown.length).toBeLessThan(100);
    // Following the latest: the last step is in view.
    expect(shown.some((r) => r.getAttribute('data-step') === '10000')).toBe(true);

    const scroller = screen.getByTestId('timeline');
    await act(async () => {
      scroller.scrollTop = 5000 * 24;
      fireEvent.scroll(scroller);
    });
    const mid = rows().map((r) => Number(r.getAttribute('data-step')));
    expect(mid.length).toBeLessThan(100);
    expect(mid).toContain(5001);

    // Selecting far away scrolls it into view.
    await act(async () => {
      await dbg.getState().selectStep(42);
    });
    await waitFor(() => expect(rows().some((r) => r.getAttribute('data-step') === '42' && r.getAttribute('data-selected') === 'true')).toBe(true));
  });
});
