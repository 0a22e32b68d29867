// The start-up report (ui/src/startup.ts): sent once, when the canvas is interactive by its rule
// (the store ready, the document's node elements in the DOM, a frame and a task after it).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createFakeBackend } from '../fake/backend';
import { demoView } from '../fake/demo';
import { createAppStore } from '../store';
import { reportWhenInteractive, takeEarlyView } from '../startup';

const settle = () => new Promise((r) => setTimeout(r, 60));

afterEach(() => {
  document.body.innerHTML = '';
});

describe('start-up report', () => {
  it('waits for ready and for node elements, then reports once with the page marks in epoch ms', async () => {
    const store = createAppStore(createFakeBackend(demoView(), []));
    const send = vi.fn<(page: Array<[string, number]>) => Promise<void>>(() => Promise.resolve());
    reportWhenInteractive(store, send);
    await settle();
    expect(send).not.toHaveBeenCalled();
    await store.getState().init(); // ready, with a view of several nodes
    await settle();
    expect(send).not.toHaveBeenCalled(); // no node element drawn yet
    const node = document.createElement('div');
    node.dataset.testid = 'node';
    document.body.append(node);
    await vi.waitFor(() => expect(send).toHaveBeenCalledTimes(1));
    const page = new Map(send.mock.calls[0][0]);
    for (const name of ['nav_start', 'init', 'view_received', 'ready', 'nodes_in_dom', 'interactive']) expect(page.has(name), name).toBe(true);
    const t = (n: string) => page.get(n)!;
    expect(t('nav_start')).toBeGreaterThan(1.5e12); // ms since the Unix epoch, like the shell's marks
    expect(t('init')).toBeLessThanOrEqual(t('view_received'));
    expect(t('view_received')).toBeLessThanOrEqual(t('ready'));
    expect(t('ready')).toBeLessThanOrEqual(t('interactive'));
    expect(t('nodes_in_dom')).toBeLessThanOrEqual(t('interactive'));
    await settle();
    expect(send).toHaveBeenCalledTimes(1);
  });

  it('outside the app no view is asked for early: the store asks the backend', async () => {
    expect(takeEarlyView()).toBeNull();
    const backend = createFakeBackend(demoView(), []);
    const store = createAppStore(backend);
    await store.getState().init();
    expect(backend.calls.filter((c) => c.cmd === 'get_view')).toHaveLength(1);
    expect(store.getState().view?.nodes.length).toBeGreaterThan(0);
  });
});
