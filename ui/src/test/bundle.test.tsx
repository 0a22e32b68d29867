import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { lokiView } from '../fake/demo';
import type { BundleView } from '../contract/shell';

function bundleView(): BundleView {
  return {
    root: '/b/coyote',
    name: 'coyote',
    manifest: null,
    version: null,
    description: null,
    homepage: null,
    agents: [
      { name: 'adversary', kind: 'graph', file: '/b/coyote/agents/adversary/graph.yaml', description: 'Attacks a plan', scripts: true, tools: null },
      { name: 'oracle', kind: 'config', file: '/b/coyote/agents/oracle/config.yaml', description: null, scripts: false, tools: '/b/coyote/agents/oracle/tools.sh' },
    ],
    diagnostics: [
      { severity: 'warning', code: 'bundle-agent-empty', message: 'agents/notes has no graph.yaml or config.yaml; it is not an agent', file: '/b/coyote/agents/notes', line: 0, column: 0, end_line: 0, end_column: 0, hint: null },
    ],
  };
}

async function renderEmpty() {
  const backend = createFakeBackend(null, []);
  backend.bundles['/b/coyote'] = bundleView();
  const store = createAppStore(backend);
  render(<App store={store} />);
  await waitFor(() => expect(store.getState().ready).toBe(true));
  return { backend, store };
}

describe('coyote bundles', () => {
  it('a dropped bundle folder lists its agents, and choosing one opens its file', async () => {
    const { backend, store } = await renderEmpty();
    act(() => backend.drop(['/b/coyote']));
    // open_path refuses a bundle with code `bundle`; the app opens it as a bundle instead (no error toast).
    const panel = await screen.findByTestId('bundle-panel');
    expect(backend.calls.filter((c) => c.cmd === 'open_path' || c.cmd === 'bundle_open').map((c) => c.cmd)).toEqual(['open_path', 'bundle_open']);
    expect(screen.queryByTestId('toast')).toBeNull();
    expect(within(panel).getByTestId('bundle-name').textContent).toBe('coyote');
    const agents = within(panel).getAllByTestId('bundle-agent');
    expect(agents.map((a) => [a.getAttribute('data-agent'), a.getAttribute('data-kind')])).toEqual([
      ['adversary', 'graph'],
      ['oracle', 'config'],
    ]);
    expect(agents[0].textContent).toContain('Attacks a plan');
    expect(agents[1].textContent).toContain('tools.sh');
    expect(within(panel).getByTestId('bundle-problems').textContent).toContain('agents/notes has no graph.yaml');

    backend.view = lokiView();
    fireEvent.click(agents[0]);
    await waitFor(() => expect(store.getState().view).not.toBeNull());
    expect(backend.calls.filter((c) => c.cmd === 'open_path').at(-1)).toEqual({ cmd: 'open_path', args: { path: '/b/coyote/agents/adversary/graph.yaml' } });
    // While an agent is open, the header switches between the bundle's agents.
    const sw = (await screen.findByTestId('bundle-switcher')) as HTMLSelectElement;
    expect(Array.from(sw.options).map((o) => o.value)).toEqual(['', '/b/coyote/agents/adversary/graph.yaml', '/b/coyote/agents/oracle/config.yaml']);
    fireEvent.change(sw, { target: { value: '/b/coyote/agents/oracle/config.yaml' } });
    await waitFor(() => expect(backend.calls.filter((c) => c.cmd === 'open_path').at(-1)).toEqual({ cmd: 'open_path', args: { path: '/b/coyote/agents/oracle/config.yaml' } }));
  });

  it('a bundle opened at start (command line) is listed; closing it returns to the start screen', async () => {
    const backend = createFakeBackend(null, []);
    backend.bundles['/b/coyote'] = bundleView();
    backend.bundle = '/b/coyote';
    const store = createAppStore(backend);
    render(<App store={store} />);
    await screen.findByTestId('bundle-panel');
    fireEvent.click(screen.getByTestId('bundle-close'));
    await waitFor(() => expect(screen.queryByTestId('bundle-panel')).toBeNull());
    expect(backend.calls.some((c) => c.cmd === 'bundle_close')).toBe(true);
    expect(screen.getByTestId('open-folder-button')).toBeTruthy();
  });

  it('a path that is neither is still an error toast', async () => {
    const { backend } = await renderEmpty();
    act(() => backend.drop(['/nowhere/x.yaml']));
    await waitFor(() => expect(screen.getByTestId('toast').textContent).toContain('Opening /nowhere/x.yaml failed'));
    expect(backend.calls.some((c) => c.cmd === 'bundle_open')).toBe(false);
  });
});
