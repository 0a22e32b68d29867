import { describe, expect, it, vi } from 'vitest';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { demoView, lokiView } from '../fake/demo';

function setup(view = demoView(), recent: string[] = []) {
  const backend = createFakeBackend(view, recent);
  const store = createAppStore(backend);
  return { backend, store };
}

describe('store', () => {
  it('init loads the view and the recent files and becomes ready', async () => {
    const { store, backend } = setup(demoView(), ['/a.yaml']);
    expect(store.getState().ready).toBe(false);
    await store.getState().init();
    expect(store.getState().ready).toBe(true);
    expect(store.getState().view?.file_name).toBe('agent.yaml');
    expect(store.getState().recent).toEqual(['/a.yaml']);
    // The bundle beside the view; the recent files and the recovery offer once the view is there.
    expect(backend.calls.map((c) => c.cmd)).toEqual(['bundle_current', 'get_view', 'recent_files', 'recovery_offer']);
  });

  it('add_node goes through apply_edit and selects the new node', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    const ok = await store.getState().edit({ op: 'add_node', name: 'extra', kind: 'call_llm' });
    expect(ok).toBe(true);
    expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'add_node', name: 'extra', kind: 'call_llm' } } });
    expect(store.getState().view?.nodes.some((n) => n.id === 'extra')).toBe(true);
    expect(store.getState().selection).toEqual({ type: 'node', id: 'extra' });
    expect(store.getState().view?.dirty).toBe(true);
  });

  it('every failed command becomes an error toast', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    backend.failNext('apply_edit', { message: 'node `x` does not exist' });
    const ok = await store.getState().edit({ op: 'delete_node', name: 'x' });
    expect(ok).toBe(false);
    const toasts = store.getState().toasts;
    expect(toasts).toHaveLength(1);
    expect(toasts[0].kind).toBe('error');
    expect(toasts[0].message).toContain('node `x` does not exist');

    backend.failNext('undo', 'plain string error');
    await store.getState().undo();
    expect(store.getState().toasts.at(-1)?.message).toContain('plain string error');

    backend.failNext('open_dialog', { message: 'no display' });
    await store.getState().openDialog();
    expect(store.getState().toasts.at(-1)?.message).toContain('no display');
  });

  it('renaming selects the renamed node; deleting a node clears the selection', async () => {
    const { store } = setup();
    await store.getState().init();
    store.getState().select({ type: 'node', id: 'count' });
    await store.getState().renameNode('count', 'counter');
    expect(store.getState().selection).toEqual({ type: 'node', id: 'counter' });
    await store.getState().deleteSelection();
    expect(store.getState().view?.nodes.some((n) => n.id === 'counter')).toBe(false);
    expect(store.getState().selection).toBeNull();
  });

  it('deleting a selected edge sends remove_edge with kind and index', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    store.getState().select({ type: 'edge', id: 'e6' });
    await store.getState().deleteSelection();
    expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'remove_edge', from: 'confirm', to: '__end__', kind: 'branch', index: 1 } } });
  });

  it('derived nodes are not deleted; the user is told why', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    store.getState().select({ type: 'node', id: 'answer_tools' });
    const before = backend.calls.length;
    await store.getState().deleteSelection();
    expect(backend.calls.length).toBe(before);
    expect(store.getState().toasts.at(-1)?.message).toMatch(/derived/);
  });

  it('a conflicting save opens the conflict state; keep mine then saves with force', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    backend.failNext('save', { message: 'the file changed on disk since it was loaded (conflict)' });
    await store.getState().save();
    expect(store.getState().conflict).toEqual({ source: 'save', diskText: null, showDiff: false });
    expect(store.getState().toasts).toHaveLength(0);
    await store.getState().keepMine();
    expect(store.getState().conflict).toBeNull();
    expect(backend.calls.slice(-2)).toEqual([{ cmd: 'keep_mine' }, { cmd: 'save', args: { force: true } }]);
  });

  it('a View flagged conflict by the engine opens the dialog', async () => {
    const { store } = setup();
    const v = demoView();
    v.conflict = true;
    store.getState().setView(v);
    expect(store.getState().conflict?.source).toBe('event');
  });

  it('a non-conflict save error is a toast, not a dialog', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    backend.failNext('save', { message: 'permission denied' });
    await store.getState().save();
    expect(store.getState().conflict).toBeNull();
    expect(store.getState().toasts[0].message).toContain('permission denied');
  });

  it('document-changed events: conflict opens the dialog, reloaded toasts, show diff reads disk_text', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    const v = lokiView();
    store.getState().documentChanged({ kind: 'reloaded', view: v });
    expect(store.getState().view?.file_name).toBe('graph.yaml');
    expect(store.getState().toasts.at(-1)?.kind).toBe('info');
    store.getState().documentChanged({ kind: 'conflict', view: v });
    expect(store.getState().conflict?.source).toBe('event');
    backend.disk = 'version: "1.1"\n';
    await store.getState().showDiff();
    expect(store.getState().conflict).toMatchObject({ showDiff: true, diskText: 'version: "1.1"\n' });
    await store.getState().reload();
    expect(store.getState().conflict).toBeNull();
    expect(backend.calls.at(-1)).toEqual({ cmd: 'reload' });
  });

  it('undo flushes text typed in the source view before undoing', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    store.getState().setPendingText('manifest_version: 1\n');
    await store.getState().undo();
    expect(backend.calls.slice(-2).map((c) => c.cmd)).toEqual(['set_text', 'undo']);
    expect(store.getState().pendingText).toBeNull();
  });

  it('an edit first sends pending source text, so the op applies to what the user sees', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    store.getState().setPendingText('manifest_version: 1\n# typed\n');
    await store.getState().edit({ op: 'delete_node', name: 'count' });
    expect(backend.calls.slice(-2).map((c) => c.cmd)).toEqual(['set_text', 'apply_edit']);
  });

  it('searchNode selects by exact, prefix or substring match and asks the canvas to focus', async () => {
    const { store } = setup();
    await store.getState().init();
    expect(store.getState().searchNode('conf')).toBe(true);
    expect(store.getState().selection).toEqual({ type: 'node', id: 'confirm' });
    expect(store.getState().focus?.id).toBe('confirm');
    expect(store.getState().reveal).toMatchObject({ line: 66, endLine: 69 });
    expect(store.getState().searchNode('nothing-like-this')).toBe(false);
  });

  it('setPositions sends positions and mirrors them into the view', async () => {
    const { store, backend } = setup();
    await store.getState().init();
    await store.getState().setPositions({ count: { x: 10, y: 20 } });
    expect(backend.calls.at(-1)).toEqual({ cmd: 'set_positions', args: { positions: { count: { x: 10, y: 20 } } } });
    const n = store.getState().view!.nodes.find((x) => x.id === 'count')!;
    expect([n.x, n.y]).toEqual([10, 20]);
  });

  it('toasts expire', async () => {
    vi.useFakeTimers();
    try {
      const { store } = setup();
      store.getState().toast('info', 'hello');
      expect(store.getState().toasts).toHaveLength(1);
      vi.advanceTimersByTime(5000);
      expect(store.getState().toasts).toHaveLength(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
