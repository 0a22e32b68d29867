// *Save run as test case*: the debugger's shown run becomes a case of the open agent's suite
// (`suite_save_run` with the run's trace), the name asked for (prefilled from the input), the
// place it went told in a toast, and the Tests panel listing it.
import { afterEach, describe, expect, it } from 'vitest';
import { act, fireEvent, screen, waitFor } from '@testing-library/react';
import { cmds, feed, renderApp } from './harness';
import { testsStore } from '../tests-panel/store';
import { defaultCaseName } from '../components/debug/SaveCaseButton';

afterEach(() => {
  testsStore.setState({ open: false, suites: [], results: {}, coverage: {}, problems: {}, running: null, error: null, shown: null, onCanvas: true });
});

describe('Save run as test case', () => {
  it('offers a name from the input, else the agent and outcome', () => {
    expect(defaultCaseName('  Where is\n my order?  ', 'desk', 'completed')).toBe('Where is my order?');
    expect(defaultCaseName('x'.repeat(80), null, null)).toHaveLength(58);
    expect(defaultCaseName('', 'desk', 'completed')).toBe('desk completed');
    expect(defaultCaseName(null, null, null)).toBe('agent run');
  });

  it('saves the finished run into the suite, says where, refreshes the Tests panel, refuses a duplicate', async () => {
    const ctx = await renderApp();
    const button = () => screen.getByTestId('dbg-save-case') as HTMLButtonElement;
    // No run yet: nothing to save.
    expect(button().disabled).toBe(true);
    await act(async () => {
      ctx.dbg.getState().setConfig({ input: 'Where is my order 1001?' });
    });
    const run = await feed(
      ctx,
      [
        { event: 'run_started', agent: 'router', input: 'Where is my order 1001?' },
        { event: 'node_enter', step: 1, node: 'classify', kind: 'call_llm' },
        { event: 'node_exit', step: 1, node: 'classify', update: null, duration_ms: 1 },
        { event: 'run_finished', status: 'completed', state: {}, output: 'done' },
      ],
      { state: 'finished', step: 1, status: 'completed' },
      { start: 'continue' },
    );
    const trace = ctx.dbg.getState().info!.trace!;
    expect(trace).toContain(run);
    await act(async () => {
      testsStore.getState().setOpen(true);
    });
    await screen.findByTestId('tests-empty');
    await waitFor(() => expect(button().disabled).toBe(false));
    await act(async () => {
      fireEvent.click(button());
    });
    const field = screen.getByTestId('dbg-save-case-name') as HTMLInputElement;
    expect(field.value).toBe('Where is my order 1001?');
    await act(async () => {
      fireEvent.change(field, { target: { value: 'order 1001' } });
      fireEvent.click(screen.getByTestId('dbg-save-case-ok'));
    });
    await waitFor(() => expect(cmds(ctx.backend, 'suite_save_run').map((c) => c.args)).toEqual([{ name: 'order 1001', trace }]));
    expect(screen.queryByTestId('dbg-save-case-form')).toBeNull();
    const toast = await screen.findByTestId('toast');
    expect(toast.textContent).toContain('Saved the run as case “order 1001” in /demo/agent.tests.yaml (new suite)');
    expect(toast.textContent).toContain('/demo/cassettes/order-1001.json');
    // The Tests panel lists the new case.
    await waitFor(() => expect(screen.getAllByTestId('tests-case').map((c) => c.textContent)).toEqual([expect.stringContaining('order 1001')]));
    // The same name again: the shell's refusal is shown in the form, which stays open.
    await act(async () => {
      fireEvent.click(button());
    });
    await act(async () => {
      fireEvent.change(screen.getByTestId('dbg-save-case-name'), { target: { value: 'order 1001' } });
      fireEvent.click(screen.getByTestId('dbg-save-case-ok'));
    });
    expect((await screen.findByTestId('dbg-save-case-error')).textContent).toContain('has a case named `order 1001` already');
    expect(screen.getByTestId('dbg-save-case-form')).toBeTruthy();
  });
});
