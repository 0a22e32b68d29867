import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createFakeBackend } from '../fake/backend';
import { StoreContext, createAppStore } from '../store';
import { BranchEditor } from '../components/BranchEditor';
import { demoView, lokiView } from '../fake/demo';
import type { View } from '../types';

async function renderBranches(view: View, nodeId: string) {
  const backend = createFakeBackend(view);
  const store = createAppStore(backend);
  await store.getState().init();
  const node = store.getState().view!.nodes.find((n) => n.id === nodeId)!;
  render(
    <StoreContext.Provider value={store}>
      <BranchEditor node={node} />
    </StoreContext.Provider>,
  );
  const lastOp = () => (backend.calls.at(-1)?.args as { op: unknown }).op;
  return { backend, store, lastOp };
}

describe('branch editor', () => {
  it('lists branches in order with condition and target', async () => {
    await renderBranches(demoView(), 'confirm');
    expect((screen.getByTestId('branch-condition-0') as HTMLInputElement).value).toContain('contains("done")');
    expect((screen.getByTestId('branch-condition-1') as HTMLInputElement).value).toBe('state.turns >= 3');
    expect((screen.getByTestId('branch-target-1') as HTMLSelectElement).value).toBe('__end__');
    expect((screen.getByTestId('branch-default') as HTMLSelectElement).value).toBe('answer');
  });

  it('emits set_branch, move_branch, remove_branch, add_branch and set_default', async () => {
    const { lastOp } = await renderBranches(demoView(), 'confirm');
    const cond = screen.getByTestId('branch-condition-1');
    fireEvent.change(cond, { target: { value: 'state.turns >= 5' } });
    fireEvent.keyDown(cond, { key: 'Enter' });
    await waitFor(() => expect(lastOp()).toEqual({ op: 'set_branch', from: 'confirm', index: 1, condition: 'state.turns >= 5' }));

    fireEvent.change(screen.getByTestId('branch-target-0'), { target: { value: 'count' } });
    await waitFor(() => expect(lastOp()).toEqual({ op: 'set_branch', from: 'confirm', index: 0, to: 'count' }));

    fireEvent.click(screen.getByTestId('branch-up-1'));
    await waitFor(() => expect(lastOp()).toEqual({ op: 'move_branch', from: 'confirm', index: 1, to_index: 0 }));
    fireEvent.click(screen.getByTestId('branch-down-0'));
    await waitFor(() => expect(lastOp()).toEqual({ op: 'move_branch', from: 'confirm', index: 0, to_index: 1 }));
    expect((screen.getByTestId('branch-up-0') as HTMLButtonElement).disabled).toBe(true);
    expect((screen.getByTestId('branch-down-1') as HTMLButtonElement).disabled).toBe(true);

    fireEvent.click(screen.getByTestId('branch-remove-0'));
    await waitFor(() => expect(lastOp()).toEqual({ op: 'remove_branch', from: 'confirm', index: 0 }));

    fireEvent.click(screen.getByTestId('add-branch'));
    await waitFor(() => expect(lastOp()).toEqual({ op: 'add_branch', from: 'confirm', condition: 'false', to: '__end__' }));

    fireEvent.change(screen.getByTestId('branch-default'), { target: { value: '' } });
    await waitFor(() => expect(lastOp()).toEqual({ op: 'set_default', from: 'confirm', to: null }));
  });

  it('checks sherma conditions as CEL while typing', async () => {
    await renderBranches(demoView(), 'confirm');
    fireEvent.change(screen.getByTestId('branch-condition-1'), { target: { value: 'size(state.x' } });
    expect((await screen.findByTestId('branch-error-1')).textContent).toContain('unclosed');
  });

  it('derived (auto-injected) branches are shown read-only', async () => {
    await renderBranches(demoView(), 'answer');
    expect((screen.getByTestId('branch-condition-0') as HTMLInputElement).disabled).toBe(true);
    expect((screen.getByTestId('branch-remove-0') as HTMLButtonElement).disabled).toBe(true);
  });

  it('Loki approval routes are editable and have no default', async () => {
    const { lastOp } = await renderBranches(lokiView(), 'approve');
    expect((screen.getByTestId('branch-condition-0') as HTMLInputElement).value).toBe('ship');
    expect(screen.queryByTestId('branch-default')).toBeNull();
    fireEvent.click(screen.getByTestId('add-branch'));
    await waitFor(() => expect(lastOp()).toEqual({ op: 'add_branch', from: 'approve', condition: 'option3', to: 'plan' }));
  });

  it('Loki nodes other than approval have no branch editor', async () => {
    await renderBranches(lokiView(), 'plan');
    expect(screen.queryByTestId('add-branch')).toBeNull();
  });
});
