// Run comparison from the run history: the earlier run being viewed (the run before a rewind)
// against the current run, through `trace_diff` with each run's own event count, the first
// divergence highlighted and the steps side by side.
import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { createFakeBackend } from '../fake/backend';
import { StoreContext, createAppStore } from '../store';
import { DebugContext, createDebugStore } from '../debug/store';
import { emptyModel } from '../debug/model';
import { demoView } from '../fake/demo';
import { CompareRuns, stepText } from '../diff/RunCompare';
import type { StepView, TraceDiff } from '../contract/tracediff';

const view = (nodes: string[], to: string[], llm = 0): StepView => ({
  nodes: nodes.map((n) => [n, 'set_state']),
  llm: Array.from({ length: llm }, () => ({ node: nodes[0], model: null, messages: [], tools: [], content: 'x', tool_calls: [] })),
  interrupt: null,
  error: null,
  changed: {},
  routes: to.map((t) => ({ from: nodes[0], to: t, reason: 'static' })),
});

const sample: TraceDiff = {
  first_divergence: { step: 2, kind: 'llm_response', node: 'answer', path: 'content', message: "answer's LLM reply differs at content", a: 'ship', b: 'hold' },
  steps: [
    { step: 0, same: true, a: view([], []), b: view([], []) },
    { step: 1, same: true, a: view(['start'], ['answer']), b: view(['start'], ['answer']) },
    { step: 2, same: false, a: view(['answer'], ['count'], 1), b: view(['answer'], ['confirm'], 1) },
    { step: 3, same: false, a: view(['count'], []), b: null },
  ],
  end_a: 'completed',
  end_b: 'completed',
  output_a: 'ship',
  output_b: 'hold',
};

async function setup() {
  const backend = createFakeBackend(demoView());
  const app = createAppStore(backend);
  await app.getState().init();
  const dbg = createDebugStore(backend, app);
  dbg.setState({
    info: { run: 'fake-run-2', trace: '/fake/runs/fake-run-1.jsonl', agent: 'support-triage', dialect: 'sherma', llm: 'scripted' },
    model: { ...emptyModel(), eventCount: 14 },
    history: [{ label: 'run 1 before rewind to step 1', model: { ...emptyModel(), eventCount: 9 }, trace: '/fake/runs/fake-run-1.jsonl' }],
    viewing: 0,
  });
  render(
    <StoreContext.Provider value={app}>
      <DebugContext.Provider value={dbg}>
        <CompareRuns />
      </DebugContext.Provider>
    </StoreContext.Provider>,
  );
  return { backend, app, dbg };
}

describe('run comparison', () => {
  it('compares the earlier run with its fork and shows the first divergence', async () => {
    const { backend } = await setup();
    backend.runDiff = sample;
    await act(async () => {
      fireEvent.click(screen.getByTestId('compare-runs'));
    });
    const call = backend.calls.find((c) => c.cmd === 'trace_diff');
    expect(call?.args).toEqual({ a: '/fake/runs/fake-run-1.jsonl', aEvents: 9, b: '/fake/runs/fake-run-1.jsonl', bEvents: 14 });
    const d = await screen.findByTestId('run-compare-divergence');
    expect(d.getAttribute('data-kind')).toBe('llm_response');
    expect(d.textContent).toContain('First divergence at step 2');
    expect(d.textContent).toContain('"ship"');
    const rows = screen.getAllByTestId('rc-step');
    expect(rows.map((r) => r.getAttribute('data-same'))).toEqual(['true', 'true', 'false', 'false']);
    expect(rows[2].className).toBe('sy-rc-first');
    expect(within(rows[2]).getByText('answer [llm×1] → count')).toBeTruthy();
    expect(within(rows[3]).getByText('—')).toBeTruthy();
    fireEvent.click(screen.getByTestId('run-compare-close'));
    expect(screen.queryByTestId('run-compare')).toBeNull();
  });

  it('says why when the engine cannot compare', async () => {
    await setup();
    await act(async () => {
      fireEvent.click(screen.getByTestId('compare-runs'));
    });
    expect(screen.getByTestId('compare-runs-error').textContent).toContain('no such trace');
  });

  it('one step on a line', () => {
    expect(stepText(null)).toBe('—');
    expect(stepText(view([], []))).toBe('(start)');
    expect(stepText({ ...view(['a', 'b'], ['c', 'c']), interrupt: 'ok?' })).toBe('a, b [asks] → c');
  });
});
