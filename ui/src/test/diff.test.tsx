// The graph diff in the window: the Diff panel asks the shell (`diff_document`) for the open
// document against HEAD, lists the changes, marks the canvas' nodes and edges, shows removed
// nodes as ghosts and the selected node's changed fields in the inspector; the model's pure
// functions on their own.
import { afterEach, describe, expect, it } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { renderApp, cmds } from './harness';
import type { GraphDiff } from '../contract/diff';
import { diffStore } from '../diff/store';
import { edgeMark, nodeMark, removedNodes, showValue, summary } from '../diff/model';
import { ghostBoxes } from '../diff/Ghosts';
import { isFileTarget } from '../diff/store';

function sample(agent: string): GraphDiff {
  return {
    dialect: 'sherma',
    same: false,
    agents: [
      {
        agent,
        change: null,
        old_agent: null,
        nodes: [
          { change: 'changed', id: 'count', old_id: null, kind: 'data_transform', old_kind: null, derived: false, similarity: null, fields: [{ path: 'args.expression', old: '{"turns": state.turns}', new: '{"turns": state.turns + 1}', reordered: false }] },
          { change: 'renamed', id: 'confirm', old_id: 'ask', kind: 'interrupt', old_kind: null, derived: false, similarity: 1, fields: [] },
          { change: 'removed', id: 'escalate', old_id: null, kind: 'set_state', old_kind: null, derived: false, similarity: null, fields: [] },
        ],
        edges: [
          { change: 'added', from: 'start', to: 'answer', kind: 'static', label: null, old_to: null, old_label: null, derived: false },
          { change: 'removed', from: 'count', to: 'escalate', kind: 'static', label: null, old_to: null, old_label: null, derived: false },
        ],
        reorders: [{ node: 'confirm', kind: 'branch', old: ['a → x', 'b → y'], new: ['b → y', 'a → x'] }],
      },
    ],
    fields: [],
  };
}

afterEach(() => {
  diffStore.setState({ open: false, against: 'HEAD', diff: null, agent: null, error: null, busy: false });
});

describe('graph diff model', () => {
  it('marks nodes and edges of the agent and lists the removed ones', () => {
    const d = sample('a');
    expect(nodeMark(d, 'a', 'count')).toBe('changed');
    expect(nodeMark(d, 'a', 'confirm')).toBe('renamed');
    expect(nodeMark(d, 'a', 'escalate')).toBe('');
    expect(nodeMark(d, 'a', 'start')).toBe('');
    expect(removedNodes(d, 'a').map((n) => n.id)).toEqual(['escalate']);
    expect(edgeMark(d, 'a', { from: 'start', to: 'answer', kind: 'static', label: null })).toBe('added');
    expect(edgeMark(d, 'a', { from: 'count', to: 'escalate', kind: 'static', label: null })).toBe('');
    expect(summary(d, 'a')).toBe('1 node removed, 1 node changed, 1 node renamed, 2 edge changes, 1 reorder');
    expect(summary({ ...d, same: true }, 'a')).toBe('no graph change');
    expect(showValue(null)).toBe('(none)');
    expect(showValue('x'.repeat(300)).length).toBeLessThanOrEqual(120);
    expect(isFileTarget('HEAD~1')).toBe(false);
    expect(isFileTarget('../old/agent.yaml')).toBe(true);
    const g = ghostBoxes(new Map([['a', { x: 0, y: 10, w: 220, h: 64 }], ['b', { x: 300, y: 200, w: 100, h: 64 }]]), ['x', 'y']);
    expect(g.get('x')).toEqual({ x: 480, y: 10, w: 200, h: 48 });
    expect(g.get('y')!.y).toBe(82);
    expect(ghostBoxes(new Map(), ['x']).get('x')!.y).toBe(0);
  });
});

describe('Diff panel', () => {
  it('compares with HEAD, colours the canvas and shows old and new values', async () => {
    const ctx = await renderApp();
    const agent = ctx.store.getState().view!.agent;
    ctx.backend.graphDiff = sample(agent ?? '');
    fireEvent.click(screen.getByTestId('diff-toggle'));
    await act(async () => {
      fireEvent.click(screen.getByTestId('diff-compare'));
    });
    await screen.findByTestId('diff-summary');
    expect(cmds(ctx.backend, 'diff_document')[0].args).toEqual({ rev: 'HEAD', file: null });
    expect(screen.getByTestId('diff-summary').textContent).toContain('1 node renamed');
    // Canvas marks.
    const node = (id: string) => screen.getAllByTestId('node').find((n) => n.getAttribute('data-node-id') === id)!;
    await waitFor(() => expect(node('count').getAttribute('data-diff')).toBe('changed'));
    expect(node('count').className).toContain('sy-node-diff-changed');
    expect(node('confirm').getAttribute('data-diff')).toBe('renamed');
    expect(node('answer').getAttribute('data-diff')).toBe('');
    // The removed node is a ghost in the panel and on the canvas, right of the graph, with its
    // removed edge drawn from the node still there.
    expect(screen.getAllByTestId('diff-ghost').map((g) => g.getAttribute('data-node-id'))).toEqual(['escalate']);
    const ghost = await screen.findByTestId('diff-canvas-ghost');
    expect(ghost.getAttribute('data-node-id')).toBe('escalate');
    const right = Math.max(...ctx.store.getState().view!.nodes.map((n) => n.x + (n.w ?? 220)));
    expect(ghost.style.transform).toContain(`translate(${right + 80}px`);
    const line = screen.getByTestId('diff-ghost-edge');
    expect([line.getAttribute('data-from'), line.getAttribute('data-to')]).toEqual(['count', 'escalate']);
    expect(screen.getAllByTestId('diff-reorder')).toHaveLength(1);
    // Clicking a changed node selects it: the inspector shows its old and new values.
    const row = screen.getAllByTestId('diff-node').find((r) => r.getAttribute('data-node-id') === 'count')!;
    fireEvent.click(within(row).getByRole('button'));
    const insp = await screen.findByTestId('inspector-diff');
    expect(within(insp).getByTestId('diff-old').textContent).toBe('"{\\"turns\\": state.turns}"');
    expect(within(insp).getByTestId('diff-new').textContent).toBe('"{\\"turns\\": state.turns + 1}"');
    // Clear removes the marks.
    fireEvent.click(screen.getByTestId('diff-clear'));
    await waitFor(() => expect(node('count').getAttribute('data-diff')).toBe(''));
    expect(screen.queryByTestId('diff-canvas-ghost')).toBeNull();
  });

  it('compares with a revision or a file typed in, and says why it cannot', async () => {
    const ctx = await renderApp();
    fireEvent.click(screen.getByTestId('diff-toggle'));
    fireEvent.change(screen.getByTestId('diff-against'), { target: { value: 'HEAD~2' } });
    await act(async () => {
      fireEvent.click(screen.getByTestId('diff-compare'));
    });
    const err = await screen.findByTestId('diff-error');
    expect(err.textContent).toContain('not committed');
    expect(cmds(ctx.backend, 'diff_document')[0].args).toEqual({ rev: 'HEAD~2', file: null });
    ctx.backend.graphDiff = { ...sample('x'), same: true, agents: [] };
    await act(async () => {
      fireEvent.change(screen.getByTestId('diff-against'), { target: { value: '/demo/old/agent.yaml' } });
    });
    await act(async () => {
      fireEvent.click(screen.getByTestId('diff-compare'));
    });
    await waitFor(() => expect(screen.getByTestId('diff-summary').textContent).toBe('no graph change'));
    expect(cmds(ctx.backend, 'diff_document')[1].args).toEqual({ rev: null, file: '/demo/old/agent.yaml' });
  });
});
