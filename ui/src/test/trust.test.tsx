// Per-folder trust in the UI: restricted mode (banner, runs refused with the reason), trusting a
// folder, the run manifest dialog before the first run and after the manifest changed, the
// read-only "What would run?", resume refused, and the store following the document.
import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend, type FakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { createDebugStore } from '../debug/store';
import { createTrustStore, itemPlace, manifestSections, manifestSummary } from '../trust/store';
import { demoView } from '../fake/demo';
import type { DurableRun } from '../debug/types';

const key = (k: string, extra: KeyboardEventInit = {}) => fireEvent.keyDown(window, { key: k, ...extra });
const runStarts = (b: FakeBackend) => b.calls.filter((c) => c.cmd === 'run_start');
const trustCmds = (b: FakeBackend, cmd: string) => b.trustCalls.filter((c) => c.cmd === cmd);

async function renderApp(setup: (b: FakeBackend) => void = () => {}) {
  const backend = createFakeBackend(demoView());
  setup(backend);
  const store = createAppStore(backend);
  const trust = createTrustStore(backend, store, { delayMs: 0 });
  const dbg = createDebugStore(backend, store, trust.getState().gate);
  render(<App store={store} debugStore={dbg} trustStore={trust} />);
  await waitFor(() => expect(store.getState().ready).toBe(true));
  await screen.findAllByTestId('node');
  await waitFor(() => expect(trust.getState().status).not.toBeNull());
  return { backend, store, trust, dbg };
}

describe('restricted mode', () => {
  it('shows a banner naming the folder, what works and that running is blocked', async () => {
    await renderApp((b) => (b.trusted = false));
    const banner = await screen.findByTestId('trust-banner');
    expect(banner.getAttribute('data-root')).toBe('/demo');
    const text = banner.textContent!;
    expect(text).toContain('/demo');
    expect(text).toMatch(/not trusted/);
    for (const w of ['open', 'validate', 'edit', 'save', 'view', 'export', 'open a trace']) expect(text).toContain(w);
    expect(text).toMatch(/running \(Run, Step, Restart, Resume\) is blocked/);
    expect(screen.getByTestId('trust-folder').textContent).toBe('Trust folder…');
  });

  it('F5 (run) and F10 (step) are refused with the reason; nothing runs', async () => {
    const { backend, dbg } = await renderApp((b) => (b.trusted = false));
    key('F5');
    await waitFor(() => expect(runStarts(backend)).toHaveLength(1));
    await waitFor(() => expect(screen.getAllByTestId('toast').some((t) => /not trusted/.test(t.textContent!))).toBe(true));
    expect(dbg.getState().configError).toMatch(/not trusted \(restricted mode\)/);
    expect(dbg.getState().mode).toBe('idle');
    expect(backend.lastRun).toBeNull();
    key('F10');
    await waitFor(() => expect(runStarts(backend)).toHaveLength(2));
    expect(backend.lastRun).toBeNull();
    expect(screen.queryByTestId('manifest-dialog')).toBeNull();
  });

  it('"What would run?" shows the manifest read-only: four sections, items with kind, what, detail and place', async () => {
    await renderApp((b) => (b.trusted = false));
    fireEvent.click(await screen.findByTestId('trust-what'));
    const d = await screen.findByTestId('manifest-dialog');
    expect(d.getAttribute('data-readonly')).toBe('true');
    const titles = within(d).getAllByTestId('manifest-section').map((s) => s.querySelector('h3')!.textContent);
    expect(titles.map((t) => t!.replace(/\s*\(\d+\)$/, ''))).toEqual(['Executes', 'Contacts', 'Reads outside the project', 'Environment variables']);
    const items = within(d).getAllByTestId('manifest-item');
    const script = items.find((i) => i.getAttribute('data-what') === 'scripts/lint.sh')!;
    expect(script.getAttribute('data-kind')).toBe('script');
    expect(script.textContent).toContain('bash');
    expect(script.textContent).toContain('agent.yaml:12');
    expect(items.some((i) => i.getAttribute('data-what') === 'api.openai.com')).toBe(true);
    expect(within(d).getByText('No file outside the project.')).toBeTruthy();
    expect(within(d).getByTestId('manifest-env-note').textContent).toMatch(/see only the environment variables listed.*SWITCHYARD_CHILD_ENV/s);
    expect(within(d).queryByTestId('manifest-confirm')).toBeNull();
    fireEvent.click(within(d).getByTestId('manifest-cancel'));
    await waitFor(() => expect(screen.queryByTestId('manifest-dialog')).toBeNull());
  });

  it('"Trust folder…" asks first, naming the folder and what would run; Cancel trusts nothing', async () => {
    const { backend } = await renderApp((b) => (b.trusted = false));
    fireEvent.click(await screen.findByTestId('trust-folder'));
    const ask = await screen.findByTestId('trust-ask');
    expect(ask.textContent).toContain('Trust the folder /demo?');
    const summary = within(ask).getByTestId('trust-ask-summary').textContent!;
    expect(summary).toContain('Executes: scripts/lint.sh');
    expect(summary).toContain('Contacts: api.openai.com');
    fireEvent.click(within(ask).getByTestId('trust-ask-cancel'));
    await waitFor(() => expect(screen.queryByTestId('trust-ask')).toBeNull());
    expect(trustCmds(backend, 'trust_folder')).toHaveLength(0);
    expect(screen.getByTestId('trust-banner')).toBeTruthy();
  });
});

describe('trusting and the manifest dialog', () => {
  it('trust, then the first run shows the manifest; Cancel runs nothing; Confirm confirms and runs', async () => {
    const { backend, dbg } = await renderApp((b) => {
      b.trusted = false;
      b.confirmedHash = null;
    });
    fireEvent.click(await screen.findByTestId('trust-folder'));
    fireEvent.click(within(await screen.findByTestId('trust-ask')).getByTestId('trust-ask-confirm'));
    await waitFor(() => expect(screen.queryByTestId('trust-banner')).toBeNull());
    expect(screen.queryByTestId('trust-ask')).toBeNull();
    expect(backend.trusted).toBe(true);

    // The status says the manifest is not confirmed: F5 asks before calling the shell.
    key('F5');
    let d = await screen.findByTestId('manifest-dialog');
    expect(d.getAttribute('data-readonly')).toBe('false');
    expect(within(d).getAllByTestId('manifest-item').map((i) => i.getAttribute('data-what'))).toContain('scripts/lint.sh');
    expect(runStarts(backend)).toHaveLength(0);
    fireEvent.click(within(d).getByTestId('manifest-cancel'));
    await waitFor(() => expect(screen.queryByTestId('manifest-dialog')).toBeNull());
    expect(runStarts(backend)).toHaveLength(0);
    expect(dbg.getState().mode).toBe('idle');

    key('F5');
    d = await screen.findByTestId('manifest-dialog');
    fireEvent.click(within(d).getByTestId('manifest-confirm'));
    await waitFor(() => expect(backend.lastRun).toBe('fake-run-1'));
    expect(trustCmds(backend, 'trust_confirm_manifest')).toEqual([{ cmd: 'trust_confirm_manifest', args: { hash: 'demo-hash-1' } }]);
    expect(screen.queryByTestId('manifest-dialog')).toBeNull();
    expect((runStarts(backend)[0].args as { config: { start: string } }).config.start).toBe('continue');
    expect(dbg.getState().mode).toBe('live');

    // Confirmed: the next run starts at once.
    key('F5');
    await waitFor(() => expect(runStarts(backend).length).toBeGreaterThanOrEqual(1));
    expect(screen.queryByTestId('manifest-dialog')).toBeNull();
  });

  it('a changed manifest asks again: the shell refuses with code manifest and the dialog shows the new one', async () => {
    const { backend, trust, dbg } = await renderApp();
    key('F10');
    await waitFor(() => expect(backend.lastRun).toBe('fake-run-1'));
    // What the agent runs changed behind the UI's back (its status still says confirmed).
    backend.manifest = { ...backend.manifest, executes: [{ ...backend.manifest.executes[0], what: 'scripts/other.sh' }], hash: 'demo-hash-2' };
    expect(trust.getState().status!.confirmed).toBe(true);
    await act(async () => {
      await dbg.getState().start('step');
    });
    const d = await screen.findByTestId('manifest-dialog');
    await waitFor(() => expect(d.getAttribute('data-hash')).toBe('demo-hash-2'));
    expect(within(d).getAllByTestId('manifest-item').map((i) => i.getAttribute('data-what'))).toContain('scripts/other.sh');
    expect(screen.queryAllByTestId('toast').some((t) => /Confirm the run manifest/.test(t.textContent!))).toBe(false);
    fireEvent.click(within(d).getByTestId('manifest-confirm'));
    await waitFor(() => expect(backend.lastRun).toBe('fake-run-2'));
    expect((runStarts(backend).at(-1)!.args as { config: { start: string } }).config.start).toBe('step');
  });

  it('an edit of the document asks for the status again', async () => {
    const { backend, store, trust } = await renderApp();
    const before = trustCmds(backend, 'trust_status').length;
    backend.manifest = { ...backend.manifest, hash: 'demo-hash-3' };
    await act(async () => {
      await store.getState().setText(store.getState().view!.text + '\n# edited\n');
    });
    await waitFor(() => expect(trustCmds(backend, 'trust_status').length).toBeGreaterThan(before));
    await waitFor(() => expect(trust.getState().status!.confirmed).toBe(false));
    expect(trust.getState().status!.manifest.hash).toBe('demo-hash-3');
  });

  it('a manifest that changed while the dialog was shown is not confirmed: the new one is shown', async () => {
    const { backend } = await renderApp((b) => (b.confirmedHash = null));
    key('F5');
    const d = await screen.findByTestId('manifest-dialog');
    backend.manifest = { ...backend.manifest, hash: 'demo-hash-4' };
    fireEvent.click(within(d).getByTestId('manifest-confirm'));
    await waitFor(() => expect(screen.getByTestId('manifest-error').textContent).toMatch(/changed while it was shown/));
    await waitFor(() => expect(screen.getByTestId('manifest-dialog').getAttribute('data-hash')).toBe('demo-hash-4'));
    expect(backend.lastRun).toBeNull();
    expect(backend.confirmedHash).toBeNull();
  });

  it('Stop trusting folder in the dialog puts the window back in restricted mode', async () => {
    const { backend, trust } = await renderApp((b) => (b.confirmedHash = null));
    key('F5');
    fireEvent.click(within(await screen.findByTestId('manifest-dialog')).getByTestId('trust-forget'));
    await waitFor(() => expect(screen.getByTestId('trust-banner')).toBeTruthy());
    expect(backend.trusted).toBe(false);
    expect(screen.queryByTestId('manifest-dialog')).toBeNull();
    expect(trust.getState().gate.blocked()).toMatch(/not trusted/);
  });
});

describe('resume and restart', () => {
  const rec: DurableRun = {
    id: 'r1',
    file: '/demo/agent.yaml',
    agent: 'triage',
    dialect: 'sherma',
    status: 'paused',
    created_ms: 1,
    updated_ms: 2,
    step: 1,
    pending: null,
    output: null,
    error: null,
    input: null,
    llm: { mode: 'scripted', script: null },
    request: { agent: null, input: null, state: null, llm_script: null, python_path: [], replay: null, replay_strict: false, live: false, record: null },
    doc_hash: '0',
  } as unknown as DurableRun;

  it('resume in restricted mode is refused with the reason in the runs list', async () => {
    const { backend, dbg } = await renderApp((b) => {
      b.trusted = false;
      b.durableRuns = [rec];
    });
    await act(async () => {
      await dbg.getState().openRuns(true);
    });
    await act(async () => {
      expect(await dbg.getState().resumeRun('r1')).toBe(false);
    });
    expect(dbg.getState().runsError).toMatch(/not trusted/);
    expect(backend.lastRun).toBeNull();
  });

  it('resume with an unconfirmed manifest shows the dialog, and Confirm resumes', async () => {
    const { backend, dbg } = await renderApp((b) => {
      b.confirmedHash = null;
      b.durableRuns = [rec];
    });
    await act(async () => {
      await dbg.getState().openRuns(true);
      await dbg.getState().resumeRun('r1');
    });
    const d = await screen.findByTestId('manifest-dialog');
    expect(backend.lastRun).toBeNull();
    fireEvent.click(within(d).getByTestId('manifest-confirm'));
    await waitFor(() => expect(backend.lastRun).toBe('r1'));
  });

  it('restart of a live run is refused in restricted mode', async () => {
    const { backend, dbg, trust } = await renderApp();
    key('F10');
    await waitFor(() => expect(backend.lastRun).toBe('fake-run-1'));
    await act(async () => {
      await trust.getState().forget();
    });
    await act(async () => {
      await dbg.getState().restart();
    });
    expect(backend.calls.filter((c) => c.cmd === 'run_control' && (c.args as { action: string }).action === 'restart')).toHaveLength(0);
    await waitFor(() => expect(screen.getAllByTestId('toast').some((t) => /Restart refused: the folder \/demo is not trusted/.test(t.textContent!))).toBe(true));
  });
});

describe('trust store helpers', () => {
  it('sections, places and the summary', () => {
    const b = createFakeBackend(demoView());
    const m = b.manifest;
    expect(manifestSections(m).map((s) => s.items.length)).toEqual([1, 1, 0, 1]);
    expect(itemPlace(m.executes[0], '/demo')).toBe('agent.yaml:12');
    expect(itemPlace({ ...m.executes[0], file: '/elsewhere/x.yaml', line: 0 }, '/demo')).toBe('/elsewhere/x.yaml');
    expect(manifestSummary(m)).toEqual(['Executes: scripts/lint.sh', 'Contacts: api.openai.com', 'Environment variables: OPENAI_API_KEY']);
    const many = { ...m, hosts: ['a', 'b', 'c', 'd', 'e'].map((h) => ({ ...m.hosts[0], what: h })) };
    expect(manifestSummary(many)[1]).toBe('Contacts: a, b, c and 2 more');
  });

  it('another document drops the old status at once, then asks for its own', async () => {
    const { backend, store, trust } = await renderApp();
    expect(trust.getState().status!.path).toBe('/demo/agent.yaml');
    const other = { ...demoView(), path: '/other/agent.yaml', revision: 1 };
    backend.view = other;
    act(() => store.getState().documentChanged({ kind: 'reloaded', view: other }));
    expect(trust.getState().status).toBeNull();
    await waitFor(() => expect(trust.getState().status?.path).toBe('/other/agent.yaml'));
  });
});
