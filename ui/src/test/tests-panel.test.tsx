// The Tests panel: it lists the agent test suites beside the open document (`suite_list`),
// runs one case or a whole suite (`suite_run`), shows each case's last result with its first
// failing expectation and line, the suite's problems, and its routing coverage (what never ran).
import { afterEach, describe, expect, it } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { renderApp, cmds } from './harness';
import type { SuiteInfo, SuiteResult } from '../contract/suite';
import { testsStore } from '../tests-panel/store';

const FILE = '/demo/agent.tests.yaml';

const info: SuiteInfo = {
  file: FILE,
  agent: '/demo/agent.yaml',
  cases: [
    { name: 'refund', line: 3, live: false },
    { name: 'bug', line: 12, live: false },
  ],
  diagnostics: [],
};

const result: SuiteResult = {
  file: FILE,
  agent: '/demo/agent.yaml',
  diagnostics: [],
  cases: [
    { name: 'refund', line: 3, column: 11, outcome: 'passed', runs: 1, passed_runs: 1, pass_rate: 1, duration_ms: 12 },
    {
      name: 'bug',
      line: 12,
      column: 11,
      outcome: 'failed',
      runs: 1,
      passed_runs: 0,
      pass_rate: 1,
      duration_ms: 9,
      run: {
        status: 'completed',
        steps: 2,
        tokens: 10,
        cost_usd: 0,
        nodes: ['classify', 'refund'],
        output: null,
        duration_ms: 9,
        failures: [{ expectation: 'nodes', message: 'node 2 of the run is `refund`, expected `bug`', file: FILE, line: 17, column: 25, end_line: 17, end_column: 28, step: 2 }],
        trace: '/fake/runs/tests/agent--bug.jsonl',
      },
    },
  ],
  coverage: {
    agent: 'router',
    runs: 2,
    nodes: [
      { id: 'classify', kind: 'call_llm', derived: false, count: 2 },
      { id: 'other', kind: 'set_state', derived: false, count: 0 },
    ],
    edges: [
      { index: 0, from: 'classify', to: 'refund', kind: 'branch', label: 'state.kind == "refund"', derived: false, count: 2 },
      { index: 1, from: 'classify', to: 'other', kind: 'default', label: 'default', derived: false, count: 0 },
    ],
    other_routes: [],
    nodes_covered: 1,
    edges_covered: 1,
  },
};

afterEach(() => {
  testsStore.setState({ open: false, suites: [], results: {}, coverage: {}, problems: {}, running: null, error: null, shown: null, onCanvas: true });
});

describe('Tests panel', () => {
  it('lists the suites, runs them and shows results, failures and coverage', async () => {
    const ctx = await renderApp();
    ctx.backend.suites = [info];
    ctx.backend.suiteResults = { [FILE]: result };
    await act(async () => {
      fireEvent.click(screen.getByTestId('tests-toggle'));
    });
    await screen.findByTestId('tests-suite');
    expect(cmds(ctx.backend, 'suite_list')).toHaveLength(1);
    const cases = () => screen.getAllByTestId('tests-case');
    expect(cases().map((c) => c.getAttribute('data-outcome'))).toEqual(['none', 'none']);
    await act(async () => {
      fireEvent.click(screen.getByTestId('tests-run-all'));
    });
    await waitFor(() => expect(cases().map((c) => c.getAttribute('data-outcome'))).toEqual(['passed', 'failed']));
    expect(cmds(ctx.backend, 'suite_run')[0].args).toEqual({ file: FILE, case: null });
    expect(within(cases()[1]).getByTestId('tests-failure').textContent).toBe('line 17: node 2 of the run is `refund`, expected `bug` (step 2)open at step 2');
    const cov = screen.getByTestId('tests-coverage');
    expect(cov.textContent).toContain('1/2 nodes ran, 1/2 edges taken');
    expect(within(cov).getByTestId('tests-never-ran').textContent).toBe('never ran: other');
    expect(within(cov).getByTestId('tests-never-taken').textContent).toContain('classify → other (default)');
    // The failing run's trace opens in the debugger at the failing step.
    await act(async () => {
      fireEvent.click(within(cases()[1]).getByTestId('tests-open-trace'));
    });
    expect(within(cases()[1]).getByTestId('tests-open-trace').textContent).toBe('open at step 2');
    await waitFor(() => expect(cmds(ctx.backend, 'open_trace').map((c) => c.args)).toEqual([{ path: '/fake/runs/tests/agent--bug.jsonl' }]));
    // One case: the other keeps its last result.
    await act(async () => {
      fireEvent.click(within(cases()[0]).getByTestId('tests-run-one'));
    });
    expect(cmds(ctx.backend, 'suite_run')[1].args).toEqual({ file: FILE, case: 'refund' });
    expect(cases().map((c) => c.getAttribute('data-outcome'))).toEqual(['passed', 'failed']);
  });

  it('says when there is no suite, and why a suite could not run', async () => {
    const ctx = await renderApp();
    await act(async () => {
      fireEvent.click(screen.getByTestId('tests-toggle'));
    });
    await screen.findByTestId('tests-empty');
    ctx.backend.suites = [info];
    ctx.backend.failNext('suite_run', { message: 'refusing to run: the folder is not trusted', code: 'untrusted' });
    await act(async () => {
      testsStore.getState().setOpen(false);
    });
    await act(async () => {
      fireEvent.click(screen.getByTestId('tests-toggle'));
    });
    await screen.findByTestId('tests-suite');
    await act(async () => {
      fireEvent.click(screen.getByTestId('tests-run-all'));
    });
    expect((await screen.findByTestId('tests-error')).textContent).toContain('not trusted');
  });

  it('draws the last run coverage on the canvas: counts on nodes, never-taken edges marked', async () => {
    const ctx = await renderApp();
    const v = ctx.store.getState().view!;
    const [first, ...rest] = v.nodes.filter((n) => !n.kind.startsWith('__')).map((n) => n.id);
    const e0 = v.edges[0];
    const cov: SuiteResult['coverage'] = {
      agent: v.agent ?? '',
      runs: 1,
      nodes: [{ id: first, kind: 'x', derived: false, count: 2 }, ...rest.map((id) => ({ id, kind: 'x', derived: false, count: 0 }))],
      edges: [{ index: 0, from: e0.from, to: e0.to, kind: e0.kind, label: e0.label ?? undefined, derived: false, count: 0 }],
      other_routes: [],
      nodes_covered: 1,
      edges_covered: 0,
    };
    ctx.backend.suites = [info];
    ctx.backend.suiteResults = { [FILE]: { ...result, coverage: cov } };
    await act(async () => {
      fireEvent.click(screen.getByTestId('tests-toggle'));
    });
    await screen.findByTestId('tests-suite');
    await act(async () => {
      fireEvent.click(screen.getByTestId('tests-run-all'));
    });
    const node = (id: string) => screen.getAllByTestId('node').find((n) => n.getAttribute('data-node-id') === id)!;
    await waitFor(() => expect(within(node(first)).getByTestId('node-coverage').textContent).toBe('2×'));
    expect(node(first).className).not.toContain('sy-node-cov-never');
    expect(node(rest[0]).className).toContain('sy-node-cov-never');
    expect(document.querySelectorAll('.sy-edge-cov-never').length).toBeGreaterThanOrEqual(1);
    // Hidden on request.
    await act(async () => {
      fireEvent.click(screen.getByTestId('tests-on-canvas'));
    });
    await waitFor(() => expect(within(node(first)).queryByTestId('node-coverage')).toBeNull());
    expect(document.querySelectorAll('.sy-edge-cov-never')).toHaveLength(0);
  });
});
