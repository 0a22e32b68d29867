import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { demoView, lokiView, viewNode } from '../fake/demo';

async function renderApp(view = demoView() as ReturnType<typeof demoView> | null, recent: string[] = []) {
  const backend = createFakeBackend(view, recent);
  const store = createAppStore(backend);
  render(<App store={store} />);
  await waitFor(() => expect(store.getState().ready).toBe(true));
  return { backend, store };
}

describe('<App>', () => {
  it('shows the empty state with open button and recent files when nothing is open', async () => {
    const { backend } = await renderApp(null, ['/x/one.yaml', '/x/two/graph.yaml']);
    expect(screen.getByTestId('empty-state')).toBeTruthy();
    expect(screen.queryByTestId('canvas')).toBeNull();
    const recent = screen.getByTestId('recent-list');
    expect(within(recent).getAllByRole('button').map((b) => b.textContent)).toEqual(['/x/one.yaml', '/x/two/graph.yaml']);
    fireEvent.click(screen.getByTestId('open-button'));
    await waitFor(() => expect(backend.calls.some((c) => c.cmd === 'open_dialog')).toBe(true));
    expect(window.__switchyard).toEqual({ ready: true, view: null });
  });

  it('opening a recent file calls open_path (and toasts when it fails)', async () => {
    const { backend } = await renderApp(null, ['/x/one.yaml']);
    fireEvent.click(screen.getByText('/x/one.yaml'));
    await waitFor(() => expect(backend.calls.find((c) => c.cmd === 'open_path')).toEqual({ cmd: 'open_path', args: { path: '/x/one.yaml' } }));
    // The fake has no document, so open_path fails: the user sees why.
    await waitFor(() => expect(screen.getByTestId('toast').textContent).toContain('no document is open'));
  });

  it('renders every node of the view with its data attributes', async () => {
    const view = demoView();
    await renderApp(view);
    const nodes = await screen.findAllByTestId('node');
    expect(nodes.map((n) => n.getAttribute('data-node-id')).sort()).toEqual(view.nodes.map((n) => n.id).sort());
    const tools = nodes.find((n) => n.getAttribute('data-node-id') === 'answer_tools')!;
    expect(tools.getAttribute('data-derived')).toBe('true');
    expect(tools.getAttribute('data-kind')).toBe('tool_node');
    const confirm = nodes.find((n) => n.getAttribute('data-node-id') === 'confirm')!;
    expect(confirm.getAttribute('data-errors')).toBe('1');
    expect(within(confirm).getByTestId('node-badge').textContent).toBe('1');
    expect(screen.getByTestId('file-name').textContent).toBe('agent.yaml');
    // The source view and its problems open with their toggle (collapsed by default).
    expect(screen.queryByTestId('source-view')).toBeNull();
    expect(screen.getByTestId('pane-toggle-source-count').textContent).toBe('1');
    fireEvent.click(screen.getByTestId('pane-toggle-source'));
    expect(screen.getByTestId('source-view').textContent).toContain('manifest_version: 1');
    expect(screen.getAllByTestId('problem')).toHaveLength(2);
    expect(screen.getAllByTestId('palette-call_llm')).toHaveLength(1);
    expect(window.__switchyard?.ready).toBe(true);
    expect(window.__switchyard?.view?.file_name).toBe('agent.yaml');
  });

  it('draws edge labels, including dynamic and fan-out edges', async () => {
    await renderApp(lokiView());
    await screen.findAllByTestId('node');
    await waitFor(() => expect(screen.getAllByTestId('edge-label').length).toBeGreaterThan(0));
    const labels = screen.getAllByTestId('edge-label');
    expect(labels.map((l) => l.textContent).sort()).toEqual(['dynamic', 'fan-out', 'fan-out', 'hold', 'other', 'ship']);
    expect(labels.find((l) => l.textContent === 'dynamic')!.className).toContain('dynamic');
    expect(labels.find((l) => l.textContent === 'ship')!.className).toContain('derived');
    expect(document.querySelectorAll('.react-flow__edge')).toHaveLength(lokiView().edges.length);
  });

  it('clicking a node selects it and shows it in the inspector; Enter in the name renames', async () => {
    const { backend } = await renderApp();
    const nodes = await screen.findAllByTestId('node');
    fireEvent.click(nodes.find((n) => n.getAttribute('data-node-id') === 'count')!);
    const name = (await screen.findByTestId('inspector-name')) as HTMLInputElement;
    expect(name.value).toBe('count');
    fireEvent.change(name, { target: { value: 'increment' } });
    fireEvent.keyDown(name, { key: 'Enter' });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'rename_node', from: 'count', to: 'increment' } } }));
    await waitFor(() => expect((screen.getByTestId('inspector-name') as HTMLInputElement).value).toBe('increment'));
  });

  it('palette adds a node with a fresh name', async () => {
    const { backend } = await renderApp();
    fireEvent.click(screen.getByTestId('palette-interrupt'));
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'add_node', name: 'interrupt', kind: 'interrupt' } } }));
    await waitFor(() => expect(screen.getAllByTestId('node').some((n) => n.getAttribute('data-node-id') === 'interrupt')).toBe(true));
  });

  it('problems jump to the node', async () => {
    const { store } = await renderApp();
    fireEvent.click(screen.getByTestId('pane-toggle-source'));
    const problems = screen.getAllByTestId('problem');
    fireEvent.click(problems[1]);
    expect(store.getState().selection).toEqual({ type: 'node', id: 'confirm' });
    expect(store.getState().reveal).toMatchObject({ line: 69, column: 20 });
  });

  it('agent select appears only with several agents and switches agents', async () => {
    const v = demoView();
    v.agents = ['main', 'helper'];
    v.agent = 'main';
    const { backend } = await renderApp(v);
    const sel = screen.getByTestId('agent-select') as HTMLSelectElement;
    fireEvent.change(sel, { target: { value: 'helper' } });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'select_agent', args: { name: 'helper' } }));
  });

  it('has no agent select with one agent; buttons reflect undo/redo state', async () => {
    await renderApp(lokiView());
    expect(screen.queryByTestId('agent-select')).toBeNull();
    expect((screen.getByTestId('undo-button') as HTMLButtonElement).disabled).toBe(false);
    expect((screen.getByTestId('redo-button') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('dirty-dot')).toBeTruthy();
    expect(document.title).toBe('graph.yaml • — Switchyard');
  });

  it('save conflict: dialog with diff, reload and keep mine', async () => {
    const { backend, store } = await renderApp();
    backend.failNext('save', { message: 'conflict: the file changed on disk' });
    fireEvent.click(screen.getByTestId('save-button'));
    const dialog = await screen.findByTestId('conflict-dialog');
    backend.disk = demoView().text.replace('gpt-4o-mini', 'gpt-4.1');
    fireEvent.click(within(dialog).getByTestId('conflict-diff'));
    const diff = await screen.findByTestId('conflict-diff-view');
    expect(diff.querySelector('.del')?.textContent).toContain('gpt-4o-mini');
    expect(diff.querySelector('.add')?.textContent).toContain('gpt-4.1');
    fireEvent.click(screen.getByTestId('conflict-reload'));
    await waitFor(() => expect(screen.queryByTestId('conflict-dialog')).toBeNull());
    expect(backend.calls.at(-1)).toEqual({ cmd: 'reload' });
    expect(screen.getByTestId('toast').textContent).toMatch(/Reloaded/);

    act(() => backend.emit({ kind: 'conflict', view: store.getState().view! }));
    fireEvent.click(await screen.findByTestId('conflict-keep'));
    await waitFor(() => expect(screen.queryByTestId('conflict-dialog')).toBeNull());
    expect(backend.calls.at(-1)).toEqual({ cmd: 'keep_mine' });
  });

  it('a dropped file is opened', async () => {
    const { backend } = await renderApp();
    await waitFor(() => expect(backend.calls.some((c) => c.cmd === 'recent_files')).toBe(true));
    act(() => backend.drop(['/dropped/agent.yaml']));
    await waitFor(() => expect(backend.calls.some((c) => c.cmd === 'open_path' && (c.args as { path: string }).path === '/dropped/agent.yaml')).toBe(true));
  });

  it('the sub-agent open action calls open_path', async () => {
    const v = demoView();
    v.nodes.push(viewNode({ id: 'helper', kind: 'call_agent', summary: 'helper', x: 300, y: 340, sub_agent: '/demo/helper.yaml', data: { name: 'helper', type: 'call_agent', args: {} } }));
    const { backend } = await renderApp(v);
    fireEvent.click(await screen.findByTestId('open-sub-agent'));
    await waitFor(() => expect(backend.calls.some((c) => c.cmd === 'open_path' && (c.args as { path: string }).path === '/demo/helper.yaml')).toBe(true));
  });

  it('export builds an SVG and calls export_diagram', async () => {
    const { backend } = await renderApp();
    fireEvent.click(screen.getByTestId('export-button'));
    fireEvent.click(screen.getByTestId('export-svg'));
    await waitFor(() => expect(backend.calls.some((c) => c.cmd === 'export_diagram')).toBe(true));
    const call = backend.calls.find((c) => c.cmd === 'export_diagram')!.args as { format: string; data: string };
    expect(call.format).toBe('svg');
    expect(call.data).toMatch(/^<svg/);
    expect(call.data).toContain('data-id="confirm"');
  });
});

describe('<App> rendering cost', () => {
  it('selecting a node re-renders only the nodes whose selection changed', async () => {
    const { bigView } = await import('../fake/demo');
    const { nodeRenders } = await import('../components/NodeCard');
    const { store } = await renderApp(bigView(120));
    await waitFor(() => expect(screen.getAllByTestId('node')).toHaveLength(120));
    await new Promise((r) => setTimeout(r, 50));
    const before = nodeRenders.count;
    act(() => store.getState().select({ type: 'node', id: 'n7' }));
    await screen.findByTestId('inspector-name');
    const afterSelect = nodeRenders.count - before;
    expect(afterSelect).toBeGreaterThan(0);
    expect(afterSelect).toBeLessThanOrEqual(2);

    // A new View from the engine where one node changed re-renders that node only.
    const next = structuredClone(store.getState().view!);
    next.nodes[3].errors = 5;
    next.revision += 1;
    const b2 = nodeRenders.count;
    act(() => store.getState().setView(next));
    await waitFor(() => expect(document.querySelector('[data-node-id="n3"]')?.getAttribute('data-errors')).toBe('5'));
    expect(nodeRenders.count - b2).toBeLessThanOrEqual(2);
  });
});
