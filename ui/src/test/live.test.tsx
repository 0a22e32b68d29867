// Live providers in the app (issue 6): the Settings dialog (keys masked, validation, the save
// payload, the keyring fallback), the run configuration's replay / live / record options, and
// streamed text, failed calls and replay divergence in the debugger.
import { describe, expect, it } from 'vitest';
import { act, configure, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { maskKey } from '../fake/backend';
import type { RunStatusInfo } from '../debug/types';
import { baseUrlProblem, emptyForm, formFromProvider, parseModels, toInput, validateForm } from '../settings/form';
import { defaultCassette, needsSettings } from '../components/debug/RunConfigPanel';
import { divergenceText } from '../components/debug/DebugPanel';
import { fmtCost } from '../components/debug/CallInspector';
import { shortcutFor } from '../shortcuts';
import { cmds, feed as feedRun, renderApp, type Ctx, type Ev } from './harness';

/** For `waitFor`: the element, or a throw so waitFor keeps polling (the Settings dialog fetches
 *  its providers after it opens; a bare querySelector would resolve at once with null). */
function present(el: Element | null): HTMLElement {
  if (!el) throw new Error('not rendered yet');
  return el as HTMLElement;
}

// These tests walk through several dialogs: on a loaded 2-core machine (the whole suite in
// parallel) a step can take longer than the default 1 s of `waitFor`/`findBy*`.
configure({ asyncUtilTimeout: 5000 });

/** A live run: started with Continue, its status running unless a test says otherwise. */
const feed = (ctx: Ctx, events: Ev[], status: Partial<RunStatusInfo> | null = null) =>
  feedRun(ctx, events, status, { start: 'continue', base: { state: 'running', step: 1, due: [], reason: null } });
const byId = (id: string) => screen.getByTestId(id);

// ------------------------------------------------------------------------------------------------

describe('the provider form (pure)', () => {
  it('validates names, base URLs, timeouts and keys', () => {
    const f = { ...emptyForm(), name: 'local', baseUrl: 'http://127.0.0.1:8080/v1' };
    expect(validateForm(f, ['openai'])).toEqual({});
    expect(validateForm({ ...f, name: '' }, []).name).toContain('needed');
    expect(validateForm({ ...f, name: 'my box:1' }, []).name).toContain('letters');
    expect(validateForm({ ...f, name: 'openai' }, ['openai']).name).toContain('already exists');
    expect(validateForm({ ...f, baseUrl: '' }, []).baseUrl).toContain('needed');
    expect(validateForm({ ...f, baseUrl: '127.0.0.1:8080' }, []).baseUrl).toContain('http://');
    expect(validateForm({ ...f, baseUrl: 'ftp://x' }, []).baseUrl).toBeTruthy();
    expect(validateForm({ ...f, timeout: '0' }, []).timeout).toBeTruthy();
    expect(validateForm({ ...f, timeout: 'abc' }, []).timeout).toBeTruthy();
    expect(validateForm({ ...f, timeout: '30' }, [])).toEqual({});
    expect(validateForm({ ...f, key: 'sk one' }, []).key).toBeTruthy();
    // Built-in providers need no base URL (theirs applies).
    expect(validateForm({ ...f, builtin: true, isNew: false, name: 'openai', baseUrl: '' }, ['openai'])).toEqual({});
    expect(baseUrlProblem('https://api.example.com/v1')).toBeNull();
    expect(baseUrlProblem('http://')).toBeTruthy();
  });

  it('builds the save payload: trimmed, models split and deduplicated, key only when typed', () => {
    const f = { ...emptyForm(), name: ' local ', baseUrl: 'http://127.0.0.1:8080/v1/', key: ' sk-abc ', models: 'qwen, llama\nqwen\n\n', timeout: '30' };
    expect(toInput(f)).toEqual({ name: 'local', wire: 'openai', base_url: 'http://127.0.0.1:8080/v1', models: ['qwen', 'llama'], timeout_s: 30, api_key: 'sk-abc', clear_key: false });
    expect(toInput({ ...f, key: '', clearKey: true })).toMatchObject({ api_key: null, clear_key: true });
    expect(toInput({ ...f, key: '', timeout: '', baseUrl: '' })).toMatchObject({ api_key: null, timeout_s: null, base_url: null });
    expect(parseModels('a,b\n a ')).toEqual(['a', 'b']);
    // An existing provider: the key is never prefilled.
    const edit = formFromProvider({ name: 'openai', builtin: true, configured: true, wire: 'openai', base_url: 'https://api.openai.com/v1', base_url_env: null, key_var: 'OPENAI_API_KEY', key_source: 'keyring', key_masked: 'sk-…9f3a', key_optional: false, models: ['gpt-4o'], timeout_s: null, error: null });
    expect(edit).toMatchObject({ isNew: false, key: '', models: 'gpt-4o', timeout: '' });
  });

  it('masks keys like the shell does', () => {
    expect(maskKey('sk-proj-abcdefghijklmnop9f3a')).toBe('sk-…9f3a');
    expect(maskKey('abcdefghij')).toBe('…ij');
    expect(maskKey('abc')).toBe('…');
  });

  it('Ctrl+, opens Settings', () => {
    expect(shortcutFor({ key: ',', ctrlKey: true, metaKey: false, shiftKey: false, altKey: false, target: null })).toBe('settings');
  });
});

describe('the Settings dialog', () => {
  it('lists providers, adds one with a key (masked afterwards), validates the base URL and sends the payload', async () => {
    const { backend, store } = await renderApp();
    fireEvent.click(byId('settings-button'));
    const dialog = await screen.findByTestId('settings-dialog');
    await waitFor(() => expect(within(dialog).getAllByTestId('settings-provider').length).toBe(3));
    expect(byId('settings-keyring').getAttribute('data-available')).toBe('true');
    const openai = dialog.querySelector('[data-testid="settings-provider"][data-name="openai"]')!;
    expect(openai.textContent).toContain('no key');

    fireEvent.click(byId('settings-add'));
    fireEvent.change(byId('settings-name'), { target: { value: 'local' } });
    fireEvent.change(byId('settings-base-url'), { target: { value: '127.0.0.1:8080/v1' } });
    expect(byId('settings-error-base-url').textContent).toContain('http://');
    fireEvent.click(byId('settings-save'));
    expect(cmds(backend, 'settings_save')).toHaveLength(0);
    expect((byId('settings-save') as HTMLButtonElement).disabled).toBe(true);
    fireEvent.change(byId('settings-base-url'), { target: { value: 'http://127.0.0.1:8080/v1' } });
    expect(screen.queryByTestId('settings-error-base-url')).toBeNull();
    expect((byId('settings-key') as HTMLInputElement).type).toBe('password');
    fireEvent.change(byId('settings-key'), { target: { value: 'sk-local-secret-key-5678' } });
    fireEvent.change(byId('settings-models'), { target: { value: 'qwen\nllama' } });
    fireEvent.change(byId('settings-timeout'), { target: { value: '30' } });
    fireEvent.click(byId('settings-save'));
    await waitFor(() => expect(cmds(backend, 'settings_save')).toHaveLength(1));
    expect(cmds(backend, 'settings_save')[0].args).toEqual({
      change: { provider: { name: 'local', wire: 'openai', base_url: 'http://127.0.0.1:8080/v1', models: ['qwen', 'llama'], timeout_s: 30, api_key: 'sk-local-secret-key-5678', clear_key: false } },
    });
    expect((await screen.findByTestId('settings-message')).textContent).toContain('OS keyring');
    expect(screen.queryByTestId('settings-form')).toBeNull();
    const row = await waitFor(() => present(dialog.querySelector('[data-testid="settings-provider"][data-name="local"]')));
    expect(row.getAttribute('data-key-source')).toBe('keyring');
    expect(within(row).getByTestId('settings-provider-key').textContent).toBe('sk-…5678');
    expect(store.getState().settingsRevision).toBe(1);
    // The key itself is nowhere on the page.
    expect(document.body.innerHTML).not.toContain('sk-local-secret-key-5678');

    // Closed and opened again (Ctrl+,): still listed, masked.
    fireEvent.click(byId('settings-close'));
    await waitFor(() => expect(screen.queryByTestId('settings-dialog')).toBeNull());
    fireEvent.keyDown(window, { key: ',', ctrlKey: true });
    const again = await screen.findByTestId('settings-dialog');
    const row2 = await waitFor(() => present(again.querySelector('[data-testid="settings-provider"][data-name="local"]')));
    expect(within(row2).getByTestId('settings-provider-key').textContent).toBe('sk-…5678');

    // Editing keeps the name and never shows the key; an empty key field keeps it.
    fireEvent.click(within(row2).getByTestId('settings-edit'));
    expect((byId('settings-name') as HTMLInputElement).readOnly).toBe(true);
    expect((byId('settings-key') as HTMLInputElement).value).toBe('');
    expect((byId('settings-key') as HTMLInputElement).placeholder).toContain('sk-…5678');
    fireEvent.click(byId('settings-save'));
    await waitFor(() => expect(cmds(backend, 'settings_save')).toHaveLength(2));
    expect((cmds(backend, 'settings_save')[1].args as { change: { provider: { api_key: unknown } } }).change.provider.api_key).toBeNull();

    // The default model.
    fireEvent.change(byId('settings-default-model'), { target: { value: 'local:qwen' } });
    fireEvent.click(byId('settings-default-save'));
    await waitFor(() => expect(cmds(backend, 'settings_save')).toHaveLength(3));
    expect(cmds(backend, 'settings_save')[2].args).toEqual({ change: { default_model: 'local:qwen' } });

    // Removing takes a second click.
    const rm = within(again.querySelector('[data-testid="settings-provider"][data-name="local"]') as HTMLElement).getByTestId('settings-remove');
    fireEvent.click(rm);
    expect(rm.textContent).toContain('Click again');
    expect(cmds(backend, 'settings_save')).toHaveLength(3);
    fireEvent.click(rm);
    await waitFor(() => expect(cmds(backend, 'settings_save')).toHaveLength(4));
    expect(cmds(backend, 'settings_save')[3].args).toEqual({ change: { remove: ['local'] } });
    await waitFor(() => expect(again.querySelector('[data-testid="settings-provider"][data-name="local"]')).toBeNull());

    // Esc closes the form, then the dialog.
    fireEvent.click(byId('settings-add'));
    expect(byId('settings-form')).toBeTruthy();
    fireEvent.keyDown(byId('settings-name'), { key: 'Escape' });
    expect(screen.queryByTestId('settings-form')).toBeNull();
    fireEvent.keyDown(document.body, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByTestId('settings-dialog')).toBeNull());
  });

  it('without a keyring says the key went to the private file', async () => {
    const { backend } = await renderApp();
    backend.keyringAvailable = false;
    fireEvent.click(byId('settings-button'));
    await screen.findByTestId('settings-dialog');
    await waitFor(() => expect(byId('settings-keyring').getAttribute('data-available')).toBe('false'));
    expect(byId('settings-keyring').textContent).toContain('readable by you only');
    const openai = await waitFor(() => present(document.querySelector('[data-testid="settings-provider"][data-name="openai"]')));
    fireEvent.click(within(openai).getByTestId('settings-edit'));
    fireEvent.change(byId('settings-key'), { target: { value: 'sk-proj-abcdefghijklmnop9f3a' } });
    fireEvent.click(byId('settings-save'));
    const msg = await screen.findByTestId('settings-message');
    expect(msg.textContent).toContain('not available');
    expect(msg.textContent).toContain('providers.yaml');
    expect(msg.className).toContain('warn');
    await waitFor(() => expect(openai.getAttribute('data-key-source')).toBe('file'));
    expect(within(openai).getByTestId('settings-provider-key').textContent).toBe('sk-…9f3a');
  });

  it('tests a connection and shows a refused save inline', async () => {
    const { backend } = await renderApp();
    backend.probe = { status: 'auth_error', message: 'http://x/v1/models refused the key (401)', models: [] };
    fireEvent.click(byId('settings-button'));
    await screen.findByTestId('settings-dialog');
    await waitFor(() => screen.getByTestId('settings-add'));
    fireEvent.click(byId('settings-add'));
    fireEvent.change(byId('settings-name'), { target: { value: 'box' } });
    fireEvent.change(byId('settings-base-url'), { target: { value: 'http://x/v1' } });
    fireEvent.click(byId('settings-test'));
    expect((await screen.findByTestId('settings-test-result')).getAttribute('data-status')).toBe('auth_error');
    expect(cmds(backend, 'settings_test_provider')[0].args).toMatchObject({ provider: { name: 'box', base_url: 'http://x/v1' } });
    backend.failNext('settings_save', { message: 'providers.yaml: invalid type\nFix or remove the file first' });
    fireEvent.click(byId('settings-save'));
    expect((await screen.findByTestId('settings-form-error')).textContent).toContain('Fix or remove the file first');
    expect(screen.getByTestId('settings-form')).toBeTruthy();
  });
});

describe('run configuration: replay, live, record', () => {
  it('replay sends the cassette and strict; record defaults to the cassette beside the agent', async () => {
    const { backend } = await renderApp();
    fireEvent.click(byId('dbg-config'));
    await screen.findByTestId('run-config');
    fireEvent.change(byId('run-llm-mode'), { target: { value: 'replay' } });
    expect((byId('run-llm-cassette') as HTMLInputElement).placeholder).toContain('agent.cassette.json');
    fireEvent.click(byId('run-llm-strict'));
    expect((byId('run-record-path') as HTMLInputElement).disabled).toBe(true);
    fireEvent.click(byId('run-record'));
    expect((byId('run-record-path') as HTMLInputElement).value).toBe('agent.cassette.json');
    // Recording over the cassette being replayed is pointed out.
    expect(byId('run-record-warning')).toBeTruthy();
    fireEvent.change(byId('run-record-path'), { target: { value: 'runs/again.cassette.json' } });
    expect(screen.queryByTestId('run-record-warning')).toBeNull();
    fireEvent.click(byId('run-config-run'));
    await waitFor(() => expect(cmds(backend, 'run_start')).toHaveLength(1));
    expect((cmds(backend, 'run_start')[0].args as { config: unknown }).config).toMatchObject({
      llm: { mode: 'replay', cassette: null, strict: true },
      record: 'runs/again.cassette.json',
    });
  });

  it('a scripted run may be allowed the network; a live run needs no such choice', async () => {
    const { backend } = await renderApp();
    fireEvent.click(byId('dbg-config'));
    await screen.findByTestId('run-config');
    const allow = byId('run-allow-network') as HTMLInputElement;
    expect(allow.checked).toBe(false);
    fireEvent.click(allow);
    fireEvent.click(byId('run-config-run'));
    await waitFor(() => expect(cmds(backend, 'run_start')).toHaveLength(1));
    expect((cmds(backend, 'run_start')[0].args as { config: unknown }).config).toMatchObject({ allow_network: true });
    fireEvent.click(byId('dbg-config'));
    await screen.findByTestId('run-config');
    fireEvent.change(byId('run-llm-mode'), { target: { value: 'live' } });
    expect(screen.queryByTestId('run-allow-network')).toBeNull();
  });

  it('live lists the document models, picks a run model, and a missing key offers Settings', async () => {
    const { backend, store } = await renderApp();
    backend.models = {
      models: [
        { model: 'openai:gpt-4o-mini', origin: 'agent.yaml: llm `assistant`', ready: false, problem: 'model `openai:gpt-4o-mini` needs an API key: set OPENAI_API_KEY' },
        { model: 'ollama:llama3', origin: 'agent.yaml: llm `local`', ready: true, problem: null },
      ],
      default_model: 'openai:gpt-4o-mini',
      choices: ['openai:gpt-4o-mini', 'ollama:llama3', 'local:qwen'],
    };
    fireEvent.click(byId('dbg-config'));
    await screen.findByTestId('run-config');
    fireEvent.change(byId('run-llm-mode'), { target: { value: 'live' } });
    const items = await screen.findAllByTestId('run-llm-model');
    expect(items.map((i) => [i.getAttribute('data-model'), i.getAttribute('data-ready')])).toEqual([
      ['openai:gpt-4o-mini', 'false'],
      ['ollama:llama3', 'true'],
    ]);
    expect(items[0].textContent).toContain('OPENAI_API_KEY');
    const pick = byId('run-live-model') as HTMLSelectElement;
    expect(Array.from(pick.options).map((o) => o.value)).toEqual(['', 'ollama:llama3', 'local:qwen']);
    expect(pick.options[0].textContent).toContain('default: openai:gpt-4o-mini');
    fireEvent.change(pick, { target: { value: 'local:qwen' } });

    backend.failNext('run_start', { message: 'cannot run live:\nagent.yaml: llm `assistant`: model `openai:gpt-4o-mini` needs an API key: set OPENAI_API_KEY\nAdd the key in Settings (⚙ in the toolbar), or set the variable before starting the app.' });
    fireEvent.click(byId('run-config-run'));
    await waitFor(() => expect(cmds(backend, 'run_start')).toHaveLength(1));
    expect((cmds(backend, 'run_start')[0].args as { config: unknown }).config).toMatchObject({ llm: { mode: 'live', model: 'local:qwen' } });
    expect((await screen.findByTestId('run-config-error')).textContent).toContain('OPENAI_API_KEY');
    fireEvent.click(byId('run-open-settings'));
    expect(store.getState().settingsOpen).toBe(true);
    expect(await screen.findByTestId('settings-dialog')).toBeTruthy();
    // A saved setting refreshes the model list.
    const before = cmds(backend, 'llm_models').length;
    act(() => store.getState().settingsSaved());
    await waitFor(() => expect(cmds(backend, 'llm_models').length).toBeGreaterThan(before));
  });

  it('helpers: the default cassette name and which errors Settings can fix', () => {
    expect(defaultCassette('agent.yaml')).toBe('agent.cassette.json');
    expect(defaultCassette('graph.yaml')).toBe('graph.cassette.json');
    expect(needsSettings('model `x` needs an API key: set OPENAI_API_KEY')).toBe(true);
    expect(needsSettings('no replies.yaml beside the agent')).toBe(false);
  });
});

describe('streaming, failed calls and replay divergence in the debugger', () => {
  const req: Ev = { event: 'llm_request', node: 'answer', messages: [{ role: 'user', content: 'hi' }], tools: [], model: 'openai:gpt-4o-mini' };

  it('the call inspector shows the reply growing, then the final response with model, latency, tokens and cost', async () => {
    const ctx = await renderApp();
    await feed(ctx, [{ event: 'run_started', agent: 'support-triage', input: 'hi' }, { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm' }, req]);
    fireEvent.click(byId('tab-calls'));
    const call = await screen.findByTestId('call');
    expect(call.getAttribute('data-state')).toBe('waiting');
    await feed(ctx, [{ event: 'llm_delta', node: 'answer', text: 'Order 1001 ' }]);
    expect(byId('call-streaming').textContent).toContain('streaming');
    expect(byId('call-response-text').textContent).toBe('Order 1001 ');
    await feed(ctx, [{ event: 'llm_delta', node: 'answer', text: 'shipped' }]);
    expect(byId('call-response-text').textContent).toBe('Order 1001 shipped');
    expect(ctx.dbg.getState().model.steps).toHaveLength(1);
    await feed(ctx, [
      { event: 'llm_response', node: 'answer', content: 'Order 1001 shipped on Monday.', tool_calls: [], usage: { input_tokens: 12, output_tokens: 7 }, duration_ms: 812, model: 'gpt-4o-mini-2024-07-18', cost_usd: 0.0000063 },
    ]);
    expect(screen.queryByTestId('call-streaming')).toBeNull();
    expect(byId('call').getAttribute('data-state')).toBe('done');
    expect(byId('call-response-text').textContent).toBe('Order 1001 shipped on Monday.');
    expect(byId('call-model').textContent).toBe('gpt-4o-mini-2024-07-18');
    expect(byId('call-latency').textContent).toBe('812 ms');
    expect(byId('call-tokens').textContent).toBe('12 in / 7 out');
    expect(byId('call-cost').textContent).toBe('$0.0000063');
    expect(fmtCost(0.5)).toBe('$0.5000');
  });

  it('a failed call shows its kind and message in the call list and on the timeline row', async () => {
    const ctx = await renderApp();
    await feed(ctx, [
      { event: 'run_started', agent: 'support-triage', input: 'hi' },
      { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm' },
      req,
      { event: 'llm_error', node: 'answer', kind: 'rate_limited', message: 'answer (openai:gpt-4o-mini): 429 Too Many Requests', duration_ms: 120 },
    ]);
    const row = await screen.findByTestId('timeline-row');
    expect(within(row).getByTestId('timeline-llm-errors').textContent).toContain('1 failed');
    fireEvent.click(byId('tab-calls'));
    const call = await screen.findByTestId('call');
    expect(call.getAttribute('data-state')).toBe('error');
    expect(byId('call-error-kind').getAttribute('data-kind')).toBe('rate_limited');
    expect(byId('call-error').textContent).toContain('429 Too Many Requests');
  });

  it('a replay divergence shows a banner whose button selects the node and its step', async () => {
    const ctx = await renderApp();
    await feed(ctx, [
      { event: 'run_started', agent: 'support-triage', input: 'hi' },
      { event: 'node_enter', step: 1, node: 'start', kind: 'set_state' },
      { event: 'node_exit', step: 1, node: 'start', update: {}, duration_ms: 1 },
      { event: 'node_enter', step: 2, node: 'answer', kind: 'call_llm' },
      req,
      { event: 'replay_diverged', node: 'answer', call: 1, path: 'messages[0].content', recorded: 'Where is order 42?', now: 'hi' },
    ]);
    const banner = await screen.findByTestId('replay-diverged');
    expect(banner.textContent).toContain('Replay diverged');
    expect(banner.textContent).toContain('at call 1 of node answer');
    expect(banner.textContent).toContain('messages[0].content');
    expect(banner.textContent).toContain('"Where is order 42?"');
    expect(banner.getAttribute('data-node')).toBe('answer');
    expect(divergenceText(ctx.dbg.getState().model.diverged!)).toBe('Replay diverged at call 1 of node answer: `messages[0].content` was "Where is order 42?" now "hi"');
    fireEvent.click(byId('replay-diverged-select'));
    await waitFor(() => expect(ctx.store.getState().selection).toEqual({ type: 'node', id: 'answer' }));
    expect(ctx.dbg.getState().selectedStep).toBe(2);
  });
});
