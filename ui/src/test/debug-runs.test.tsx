// Durable runs in the UI: the Runs list's store logic (list, resume, delete, a changed file
// needing "Resume anyway") against the fake backend, and the dialog's DOM hooks.
import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend, type FakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { createDebugStore } from '../debug/store';
import type { DurableRun } from '../debug/types';
import { demoView } from '../fake/demo';
import { formatUpdated, isResumable, shortFile } from '../components/debug/RunsDialog';

function durable(id: string, status: string, file: string, extra: Partial<DurableRun> = {}): DurableRun {
  return {
    id,
    file,
    agent: 'triage',
    dialect: 'sherma',
    status,
    created_ms: 1_700_000_000_000,
    updated_ms: 1_700_000_100_000,
    step: 3,
    pending: null,
    output: null,
    error: null,
    input: null,
    llm: { mode: 'scripted', script: null },
    request: { agent: null, input: null, state: null, llm_script: null, python_path: [], replay: null, replay_strict: false, live: false, record: null, record_raw: false, allow_network: false },
    doc_hash: '0',
    ...extra,
  };
}

async function setup() {
  const view = demoView();
  const backend = createFakeBackend(view);
  const app = createAppStore(backend);
  await app.getState().init();
  const dbg = createDebugStore(backend, app);
  void backend.onRunEvents((b) => dbg.getState().receive(b));
  return { backend, app, dbg, file: view.path };
}

const cmds = (b: FakeBackend, cmd: string) => b.calls.filter((c) => c.cmd === cmd);

describe('runs list: store', () => {
  it('opening loads the runs and the store path; an error is kept for the dialog', async () => {
    const { backend, dbg, file } = await setup();
    backend.durableRuns = [durable('r1', 'interrupted', file), durable('r2', 'completed', file)];
    await dbg.getState().openRuns(true);
    expect(dbg.getState().runsOpen).toBe(true);
    expect(dbg.getState().runs.map((r) => r.id)).toEqual(['r1', 'r2']);
    expect(dbg.getState().runsDb).toBe('/fake/runs.sqlite');
    backend.failNext('runs_list', { message: 'run store /x/runs.sqlite: the database is locked by another process' });
    await dbg.getState().loadRuns();
    expect(dbg.getState().runsError).toMatch(/locked/);
    // The list shown stays what it was.
    expect(dbg.getState().runs).toHaveLength(2);
  });

  it('resume asks the engine with the breakpoints and becomes the live run', async () => {
    const { backend, dbg, file } = await setup();
    backend.durableRuns = [durable('r1', 'interrupted', file)];
    await dbg.getState().toggleBreakpoint('classify');
    await dbg.getState().openRuns(true);
    expect(await dbg.getState().resumeRun('r1')).toBe(true);
    const call = cmds(backend, 'run_resume')[0];
    expect(call.args).toEqual({ id: 'r1', force: false, breakpoints: [{ node: 'classify', condition: null, enabled: true }], breakOnError: false });
    const st = dbg.getState();
    expect(st.mode).toBe('live');
    expect(st.info?.run).toBe('r1');
    expect(st.info?.durable).toBe('/fake/runs.sqlite');
    expect(st.runsOpen).toBe(false);
    // The resumed run's events (its question asked again) fold like any run's.
    backend.emitRun({
      run: 'r1',
      events: [
        { run: 'r1', ts_ms: 1, event: 'run_started', agent: 'triage', input: 'hi' },
        { run: 'r1', ts_ms: 2, event: 'interrupt', id: 'confirm#1', node: 'confirm', kind: 'interrupt', prompt: 'ok?', options: [], value: 'ok?' },
      ],
      status: { state: 'interrupted', step: 3, due: ['confirm'], pending: { id: 'confirm#1', node: 'confirm', kind: 'interrupt', prompt: 'ok?', options: [], value: 'ok?', default: null, validation: null } },
    });
    dbg.getState().flush();
    expect(dbg.getState().status?.state).toBe('interrupted');
    expect(dbg.getState().dialogOpen).toBe(true);
  });

  it('a changed agent file is refused until the user resumes anyway', async () => {
    const { backend, dbg, file } = await setup();
    backend.durableRuns = [durable('r1', 'paused', file)];
    backend.changedFiles = [file];
    await dbg.getState().openRuns(true);
    expect(await dbg.getState().resumeRun('r1')).toBe(false);
    expect(dbg.getState().runsError).toMatch(/changed since the run started/);
    expect(dbg.getState().runsChanged).toBe('r1');
    expect(dbg.getState().mode).toBe('idle');
    expect(await dbg.getState().resumeRun('r1', true)).toBe(true);
    expect(cmds(backend, 'run_resume').map((c) => (c.args as { force: boolean }).force)).toEqual([false, true]);
    expect(dbg.getState().runsChanged).toBeNull();
  });

  it('a run of another file opens that file first', async () => {
    const { backend, dbg } = await setup();
    backend.durableRuns = [durable('r9', 'interrupted', '/elsewhere/agent.yaml')];
    await dbg.getState().openRuns(true);
    await dbg.getState().resumeRun('r9');
    expect(cmds(backend, 'open_path').map((c) => c.args)).toEqual([{ path: '/elsewhere/agent.yaml' }]);
  });

  it('an ended run is refused by the engine and the message shown; delete removes it', async () => {
    const { backend, dbg, file } = await setup();
    backend.durableRuns = [durable('r1', 'completed', file), durable('r2', 'paused', file)];
    await dbg.getState().openRuns(true);
    expect(await dbg.getState().resumeRun('r1')).toBe(false);
    expect(dbg.getState().runsError).toMatch(/has ended \(completed\)/);
    expect(await dbg.getState().deleteRun('r1')).toBe(true);
    expect(dbg.getState().runs.map((r) => r.id)).toEqual(['r2']);
    expect(backend.durableRuns.map((r) => r.id)).toEqual(['r2']);
    expect(await dbg.getState().deleteRun('nope')).toBe(false);
    expect(dbg.getState().runsError).toMatch(/no such run/);
  });

  it('the run in progress cannot be resumed over itself', async () => {
    const { backend, dbg, file } = await setup();
    backend.durableRuns = [durable('r1', 'paused', file)];
    await dbg.getState().openRuns(true);
    await dbg.getState().resumeRun('r1');
    backend.emitRun({ run: 'r1', events: [], status: { state: 'paused', step: 3, due: ['a'], reason: 'requested' } });
    dbg.getState().flush();
    expect(await dbg.getState().resumeRun('r1')).toBe(false);
    expect(dbg.getState().runsError).toMatch(/in progress/);
    expect(cmds(backend, 'run_resume')).toHaveLength(1);
  });

  it('a durable start sends `durable: true`', async () => {
    const { backend, dbg } = await setup();
    dbg.getState().setConfig({ durable: true });
    await dbg.getState().start('continue');
    const cfg = (cmds(backend, 'run_start')[0].args as { config: { durable?: boolean } }).config;
    expect(cfg.durable).toBe(true);
  });

  it('helpers: resumable statuses, short file names, times', () => {
    expect(['ready', 'paused', 'interrupted'].map((s) => isResumable(durable('x', s, '/a')))).toEqual([true, true, true]);
    expect(['completed', 'failed', 'stopped', 'abandoned'].some((s) => isResumable(durable('x', s, '/a')))).toBe(false);
    expect(shortFile('/home/me/agents/triage/agent.yaml')).toBe('triage/agent.yaml');
    expect(formatUpdated(new Date(2026, 0, 2, 3, 4).getTime())).toBe('2026-01-02 03:04');
  });
});

describe('runs list: dialog', () => {
  it('lists runs with their status and resumes or deletes from the buttons', async () => {
    const view = demoView();
    const backend = createFakeBackend(view);
    backend.durableRuns = [
      durable('r1', 'interrupted', view.path, { pending: { id: 'c#1', node: 'confirm', kind: 'interrupt', prompt: 'Close it?', options: [], value: null, default: null, validation: null } }),
      durable('r2', 'failed', view.path, { error: 'node `x`: boom' }),
    ];
    const store = createAppStore(backend);
    const dbg = createDebugStore(backend, store);
    render(<App store={store} debugStore={dbg} />);
    await waitFor(() => expect(store.getState().ready).toBe(true));
    fireEvent.click(await screen.findByTestId('dbg-runs'));
    const list = await screen.findByTestId('runs-list');
    const rows = await within(list).findAllByTestId('runs-row');
    expect(rows.map((r) => [r.getAttribute('data-id'), r.getAttribute('data-status')])).toEqual([
      ['r1', 'interrupted'],
      ['r2', 'failed'],
    ]);
    expect(rows[0].textContent).toContain('Close it?');
    expect(rows[1].textContent).toContain('boom');
    expect((within(rows[1]).getByTestId('runs-resume') as HTMLButtonElement).disabled).toBe(true);
    await act(async () => {
      fireEvent.click(within(rows[1]).getByTestId('runs-delete'));
    });
    await waitFor(() => expect(screen.getAllByTestId('runs-row')).toHaveLength(1));
    await act(async () => {
      fireEvent.click(within(screen.getByTestId('runs-row')).getByTestId('runs-resume'));
    });
    await waitFor(() => expect(screen.queryByTestId('runs-list')).toBeNull());
    expect(dbg.getState().info?.run).toBe('r1');
  });
});
