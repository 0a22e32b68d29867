// The studio attached to a server (docs/app-contract.md §5.4) against the fake backend: Connect
// to server… (errors for an unreachable server and a refused token, nothing kept in the page's
// storage), the server's runs beside the local ones (live), opening a remote run into the
// debugger (its agent read-only, labelled remote, features the server lacks off), starting a
// run of an assistant on the server with the canvas's breakpoints.
import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend, type FakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { createDebugStore } from '../debug/store';
import type { RemoteRunInfo } from '../debug/types';
import { isRemotePath } from '../debug/types';
import { demoView, lokiView } from '../fake/demo';

const URL = 'http://127.0.0.1:8123';

function remoteRun(id: string, status: string, extra: Partial<RemoteRunInfo> = {}): RemoteRunInfo {
  return { run_id: id, assistant: 'release-gate', assistant_id: 'a-1', status, step: 5, question: null, waiting_since: null, updated_at: '2026-01-02T03:04:05Z', error: null, active: false, ...extra };
}

function server(backend: FakeBackend) {
  const remoteView = { ...lokiView(), path: '/switchyard-remote/127.0.0.1:8123/release-gate/graph.yaml', dirty: false };
  backend.remoteServer = URL;
  backend.remoteAssistantList = [{ assistant_id: 'a-1', graph_id: 'release-gate', dialect: 'loki' }];
  backend.remoteViews = { 'a-1': remoteView };
  backend.remoteRunList = [
    remoteRun('r1', 'interrupted', { question: { id: 'approve#1', node: 'approve', kind: 'approval', prompt: 'Ship release 1.2?', options: ['yes', 'no'], value: null, default: null, validation: null } }),
    remoteRun('r2', 'completed'),
  ];
  return remoteView;
}

async function setup() {
  const backend = createFakeBackend(demoView());
  const remoteView = server(backend);
  const app = createAppStore(backend);
  await app.getState().init();
  const dbg = createDebugStore(backend, app);
  void backend.onRunEvents((b) => dbg.getState().receive(b));
  return { backend, app, dbg, remoteView };
}

const cmds = (b: FakeBackend, cmd: string) => b.calls.filter((c) => c.cmd === cmd);

describe('remote: store', () => {
  it('says why a connection failed: unreachable, refused token', async () => {
    const { backend, dbg } = await setup();
    expect(await dbg.getState().connectRemote('http://127.0.0.1:1', null)).toBe(false);
    expect(dbg.getState().connectError).toMatch(/cannot reach the server/);
    backend.remoteToken = 'sy_secret';
    expect(await dbg.getState().connectRemote(URL, 'wrong')).toBe(false);
    expect(dbg.getState().connectError).toMatch(/refused the token/);
    expect(await dbg.getState().connectRemote(URL, ' sy_secret ')).toBe(true);
    expect(cmds(backend, 'remote_connect').at(-1)?.args).toEqual({ url: URL, token: 'sy_secret' });
    expect(dbg.getState().remote).toMatchObject({ url: URL, connected: true, token: true });
    // Connected: the server's runs and assistants are listed.
    expect(dbg.getState().remoteRuns.map((r) => r.run_id)).toEqual(['r1', 'r2']);
    expect(dbg.getState().remoteAssistants.map((a) => a.graph_id)).toEqual(['release-gate']);
    // The token is the keyring's business: nothing of it in the page's storage.
    const stored = JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage });
    expect(stored).not.toContain('sy_secret');
  });

  it('opens a remote run into the debugger: the agent read-only, events live, answers through the same path', async () => {
    const { backend, app, dbg, remoteView } = await setup();
    await dbg.getState().connectRemote(URL, null);
    expect(await dbg.getState().openRemoteRun('r1')).toBe(true);
    expect(app.getState().view?.path).toBe(remoteView.path);
    expect(isRemotePath(app.getState().view?.path)).toBe(true);
    expect(dbg.getState().remoteDoc).toEqual({ url: URL, assistant_id: 'a-1', assistant: 'release-gate' });
    expect(dbg.getState().remoteRun).toBe(URL);
    expect(dbg.getState().info?.run).toBe('r1');
    backend.emitRun({
      run: 'r1',
      events: [
        { event: 'run_started', run: 'r1', ts_ms: 1, agent: 'release-gate', input: 'ship', state: { findings: [] } },
        { event: 'node_enter', run: 'r1', ts_ms: 2, step: 1, node: 'plan', kind: 'script' },
        { event: 'node_exit', run: 'r1', ts_ms: 3, step: 1, node: 'plan', update: { planned: 'yes' }, duration_ms: 1 },
      ],
      status: { state: 'interrupted', step: 1, due: [], pending: { id: 'approve#1', node: 'approve', kind: 'approval', prompt: 'Ship?', options: ['yes', 'no'], value: null, default: null, validation: null } },
    });
    dbg.getState().flush();
    expect(dbg.getState().model.eventCount).toBe(3);
    expect(await dbg.getState().answer('yes')).toBe(true);
    expect(cmds(backend, 'run_answer').at(-1)?.args).toEqual({ id: 'approve#1', value: 'yes' });
    // What the server has no endpoint for is refused here, before the backend.
    expect(await dbg.getState().editState('findings', '[]')).toMatch(/not available for a run on a server/);
    await dbg.getState().rewind(1);
    expect(cmds(backend, 'run_rewind')).toHaveLength(0);
    // Opening a local document closes the remote one.
    backend.view = demoView();
    await app.getState().openPath('/demo/agent.yaml');
    expect(dbg.getState().remoteDoc).toBeNull();
  });

  it('F5 on a remote assistant starts it on the server with the canvas breakpoints and the input', async () => {
    const { backend, app, dbg, remoteView } = await setup();
    await dbg.getState().connectRemote(URL, null);
    expect(await dbg.getState().openRemoteAssistant('a-1')).toBe(true);
    expect(app.getState().view?.path).toBe(remoteView.path);
    await dbg.getState().toggleBreakpoint('summarise');
    dbg.getState().setConfig({ input: 'ship 1.2', state: { attempts: 1 } });
    await dbg.getState().start('step');
    expect(cmds(backend, 'run_start')).toHaveLength(0);
    expect(backend.remoteStarts).toEqual([
      { assistant_id: 'a-1', input: 'ship 1.2', state: { attempts: 1 }, breakpoints: [expect.objectContaining({ node: 'summarise' })], start: 'step' },
    ]);
    expect(dbg.getState().info?.run).toMatch(/^remote-run-/);
    expect(dbg.getState().remoteRun).toBe(URL);
  });
});

describe('remote: dialogs', () => {
  it('Connect to server… then the Runs list shows the server runs live, and Open shows one', async () => {
    const backend = createFakeBackend(demoView());
    server(backend);
    const store = createAppStore(backend);
    const dbg = createDebugStore(backend, store);
    render(<App store={store} debugStore={dbg} />);
    await waitFor(() => expect(store.getState().ready).toBe(true));
    fireEvent.click(await screen.findByTestId('dbg-connect'));
    const dialog = await screen.findByTestId('connect-dialog');
    fireEvent.change(within(dialog).getByTestId('connect-url'), { target: { value: 'http://127.0.0.1:9' } });
    await act(async () => {
      fireEvent.click(within(dialog).getByTestId('connect-submit'));
    });
    expect((await screen.findByTestId('connect-error')).textContent).toMatch(/cannot reach/);
    fireEvent.change(within(dialog).getByTestId('connect-url'), { target: { value: URL } });
    await act(async () => {
      fireEvent.click(within(dialog).getByTestId('connect-submit'));
    });
    await waitFor(() => expect(screen.queryByTestId('connect-dialog')).toBeNull());
    fireEvent.click(screen.getByTestId('dbg-runs'));
    const list = await screen.findByTestId('runs-list');
    const rows = await within(list).findAllByTestId('remote-run-row');
    expect(rows.map((r) => [r.getAttribute('data-id'), r.getAttribute('data-status')])).toEqual([
      ['r1', 'interrupted'],
      ['r2', 'completed'],
    ]);
    expect(rows[0].textContent).toContain('Ship release 1.2?');
    // Live: a run that starts on the server appears without a click.
    backend.remoteRunList = [remoteRun('r3', 'running'), ...backend.remoteRunList];
    await waitFor(() => expect(within(list).getAllByTestId('remote-run-row')[0].getAttribute('data-id')).toBe('r3'), { timeout: 4000 });
    await act(async () => {
      fireEvent.click(within(within(list).getAllByTestId('remote-run-row')[1]).getByTestId('remote-run-open'));
    });
    await waitFor(() => expect(screen.queryByTestId('runs-list')).toBeNull());
    expect(screen.getByTestId('dbg-remote').textContent).toContain('release-gate');
    expect(screen.getByTestId('dbg-remote').textContent).toContain('read-only');
    const restart = screen.getByTestId('dbg-restart') as HTMLButtonElement;
    expect(restart.disabled).toBe(true);
    expect(restart.title).toMatch(/not available for a run on a server/);
    expect((screen.getByTestId('dbg-step-into') as HTMLButtonElement).title).toMatch(/not available for a run on a server/);
  });
});
