// The approvals inbox page (src/inbox/): each question kind's form and the payload it sends, the
// server's 401 / 409 / 422, live updates from the change feed, the name and token kept in the
// browser, and hostile text in questions, options and state staying text (the app's rules:
// components/Markdown.tsx, untrusted.ts; links open in a new tab instead of the app's dialog).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { InboxApp } from '../inbox/InboxApp';
import { ApiError, NAME_KEY, TOKEN_KEY, createApi, type AnswerBody, type AuditEntry, type FeedHandlers, type InboxApi, type WaitingRun } from '../inbox/api';
import { checkInputAnswer, parseValidation, validationError } from '../inbox/validation';
import { ago } from '../inbox/time';
import { MASK } from '../untrusted';
import { XSS_CORPUS } from './xss-corpus';

type W = Window & { __xss?: unknown };
const realm = (globalThis as unknown as { jsdom: { window: W } }).jsdom.window;
const canary = () => realm.__xss ?? (window as W).__xss;

const NOW = Date.parse('2026-11-27T12:00:00Z');

function approval(id: string, over: Partial<WaitingRun> = {}): WaitingRun {
  return {
    run_id: id,
    assistant: 'release-gate',
    status: 'interrupted',
    waiting_since: '2026-11-27T11:57:00Z',
    step: 4,
    question: { id: 'approve#1', node: 'approve', kind: 'approval', prompt: 'Checks pass. **Ship it?**', options: ['ship', 'hold'], value: null, default: null, validation: null },
    state: { summary: 'all green', api_key: 'abc123', notes: 'token sk-ant-api03-abcdefghijklmnopqrstuvwx' },
    started_by: 'alice',
    ...over,
  };
}

const input = (id: string): WaitingRun =>
  approval(id, {
    question: { id: 'note#2', node: 'note', kind: 'input', prompt: 'What should the release notes say?', options: [], value: null, default: 'No notes.', validation: 'len(input) >= 3' },
  });

const interrupt = (id: string, value: WaitingRun['state'] = 'Which region?'): WaitingRun =>
  approval(id, { assistant: 'support-triage', question: { id: 'ask#1', node: 'ask', kind: 'interrupt', prompt: typeof value === 'string' ? value : JSON.stringify(value), options: [], value, default: null, validation: null } });

/** A fake server: a list of waiting runs, answers recorded, a change feed the test drives. */
function fakeApi(initial: WaitingRun[]) {
  let runs = [...initial];
  const sent: { runId: string; body: AnswerBody }[] = [];
  const audit: AuditEntry[] = [];
  let feed: FeedHandlers | null = null;
  let answerError: ApiError | null = null;
  let waitingError: ApiError | null = null;
  let token: string | null = null;
  const api: InboxApi = {
    waiting: vi.fn(async () => {
      if (waitingError) throw waitingError;
      return runs;
    }),
    answer: vi.fn(async (runId: string, body: AnswerBody) => {
      sent.push({ runId, body });
      if (answerError) throw answerError;
      runs = runs.filter((r) => r.run_id !== runId);
      const by = body.by ? `${body.by} (token local)` : 'local';
      audit.push({ run_id: runId, interrupt_id: body.interrupt_id ?? '', answer: body.answer as never, who: by, at_ms: NOW });
      return { ok: true, run_id: runId, by };
    }),
    answers: vi.fn(async (runId: string) => audit.filter((a) => a.run_id === runId)),
    feed: (h) => {
      feed = h;
      h.onReady();
      return () => {
        feed = null;
      };
    },
    token: () => token,
    setToken: (t) => {
      token = t;
    },
  };
  return {
    api,
    sent,
    audit,
    setRuns(r: WaitingRun[]) {
      runs = r;
    },
    failAnswer(e: ApiError | null) {
      answerError = e;
    },
    failWaiting(e: ApiError | null) {
      waitingError = e;
    },
    change(runId: string | null) {
      act(() => feed?.onChange(runId));
    },
  };
}

const cards = () => screen.queryAllByTestId('inbox-card');
const card = (runId: string) => {
  const c = cards().find((x) => x.dataset.runId === runId);
  if (!c) throw new Error(`no card for ${runId}`);
  return c;
};

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'], now: NOW });
  localStorage.clear();
  sessionStorage.clear();
  delete realm.__xss;
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the inbox lists waiting runs', () => {
  it('shows agent, node, question, since when (relative and absolute) and the state, secrets masked', async () => {
    const f = fakeApi([approval('r1')]);
    render(<InboxApp api={f.api} />);
    await waitFor(() => expect(cards()).toHaveLength(1));
    const c = card('r1');
    expect(within(c).getByRole('heading').textContent).toContain('release-gate');
    expect(within(c).getByRole('heading').textContent).toContain('approve');
    expect(within(c).getByText('Approval needed')).toBeTruthy();
    expect(within(c).getByTestId('question').querySelector('strong')?.textContent).toBe('Ship it?');
    expect(within(c).getByTestId('waiting-ago').textContent).toBe('3 min ago');
    expect(within(c).getByTestId('waiting-since').getAttribute('datetime')).toBe('2026-11-27T11:57:00Z');
    const state = within(c).getByTestId('state');
    expect(state.tagName).toBe('DETAILS');
    expect(state.hasAttribute('open')).toBe(false);
    const json = state.querySelector('pre')!.textContent!;
    expect(json).toContain('all green');
    expect(json).not.toContain('abc123');
    expect(json).not.toContain('sk-ant-api03');
    expect(json).toContain(MASK);
    expect(within(c).getByText(/started by alice/)).toBeTruthy();
    expect(screen.getByTestId('inbox').dataset.count).toBe('1');
  });

  it('says when nothing waits', async () => {
    const f = fakeApi([]);
    render(<InboxApp api={f.api} />);
    await screen.findByTestId('inbox-empty');
  });

  it('every control has an accessible name', async () => {
    const f = fakeApi([approval('r1'), input('r2'), interrupt('r3')]);
    render(<InboxApp api={f.api} />);
    await waitFor(() => expect(cards()).toHaveLength(3));
    expect(screen.getByLabelText('Your name')).toBeTruthy();
    for (const el of document.querySelectorAll('input, textarea, button')) {
      const labelled =
        el.getAttribute('aria-label') || (el as HTMLInputElement).labels?.length || (el.tagName === 'BUTTON' && el.textContent?.trim());
      expect(labelled, el.outerHTML).toBeTruthy();
    }
  });
});

describe('answer forms and what they send', () => {
  it('approval: an option button sends the option with the question id and the name as `by`', async () => {
    const f = fakeApi([approval('r1')]);
    render(<InboxApp api={f.api} />);
    fireEvent.change(screen.getByLabelText('Your name'), { target: { value: 'Ada' } });
    expect(localStorage.getItem(NAME_KEY)).toBe('Ada');
    const c = await waitFor(() => card('r1'));
    fireEvent.click(within(c).getByRole('button', { name: 'ship' }));
    await waitFor(() => expect(f.sent).toEqual([{ runId: 'r1', body: { answer: 'ship', interrupt_id: 'approve#1', by: 'Ada' } }]));
    // The answered card stays, saying who answered, until dismissed.
    const done = await waitFor(() => {
      const x = card('r1');
      expect(x.dataset.state).toBe('answered');
      return x;
    });
    expect(within(done).getByTestId('answered-by').textContent).toBe('Ada (token local)');
    fireEvent.click(within(done).getByRole('button', { name: 'Dismiss' }));
    await waitFor(() => expect(cards()).toHaveLength(0));
  });

  it('approval: a free answer goes to on_other; empty is not sent', async () => {
    const f = fakeApi([approval('r1')]);
    render(<InboxApp api={f.api} />);
    const c = await waitFor(() => card('r1'));
    const send = within(c).getByRole('button', { name: 'Send other answer' }) as HTMLButtonElement;
    expect(send.disabled).toBe(true);
    const other = within(c).getByLabelText(/Other answer/);
    fireEvent.change(other, { target: { value: 'ship on Monday' } });
    fireEvent.submit(other.closest('form')!);
    await waitFor(() => expect(f.sent.map((s) => s.body)).toEqual([{ answer: 'ship on Monday', interrupt_id: 'approve#1', by: undefined }]));
  });

  it('input: starts with the default, an empty answer stands for it, validation is checked before sending', async () => {
    const f = fakeApi([input('r2')]);
    render(<InboxApp api={f.api} />);
    const c = await waitFor(() => card('r2'));
    const field = within(c).getByLabelText('Your answer') as HTMLInputElement;
    expect(field.value).toBe('No notes.');
    expect(within(c).getByTestId('answer-default').textContent).toContain('No notes.');
    expect(within(c).getByTestId('answer-validation').textContent).toContain('len(input) >= 3');
    fireEvent.change(field, { target: { value: 'ok' } });
    fireEvent.click(within(c).getByRole('button', { name: 'Answer' }));
    const alert = await within(c).findByRole('alert');
    expect(alert.textContent).toBe("Input failed validation 'len(input) >= 3' (got 2 chars)");
    expect(field.getAttribute('aria-invalid')).toBe('true');
    expect(f.sent).toHaveLength(0);
    // Empty: the default is judged (and passes), the empty text is sent.
    fireEvent.change(field, { target: { value: '' } });
    fireEvent.click(within(c).getByRole('button', { name: 'Answer' }));
    await waitFor(() => expect(f.sent.map((s) => s.body.answer)).toEqual(['']));
  });

  it("input: the server's 422 detail is shown and the card stays", async () => {
    const f = fakeApi([input('r2')]);
    f.failAnswer(new ApiError(422, "Input failed validation 'len(input) >= 3' (got 1 chars)"));
    render(<InboxApp api={f.api} />);
    const c = await waitFor(() => card('r2'));
    fireEvent.change(within(c).getByLabelText('Your answer'), { target: { value: 'a long enough text' } });
    fireEvent.click(within(c).getByRole('button', { name: 'Answer' }));
    expect((await within(c).findByRole('alert')).textContent).toContain('(got 1 chars)');
    expect(card('r2').dataset.state).toBe('waiting');
  });

  it('sherma interrupt: free text is sent as text, a JSON object or array as JSON', async () => {
    const f = fakeApi([interrupt('r3'), interrupt('r4', { draft: 'Dear customer', password: 'hunter2' })]);
    render(<InboxApp api={f.api} />);
    await waitFor(() => expect(cards()).toHaveLength(2));
    // A structured question is JSON text with secrets masked.
    const q4 = within(card('r4')).getByTestId('question');
    expect(q4.tagName).toBe('PRE');
    expect(q4.textContent).toContain('Dear customer');
    expect(q4.textContent).not.toContain('hunter2');
    const t3 = within(card('r3')).getByLabelText(/Your answer/);
    fireEvent.change(t3, { target: { value: 'eu-west' } });
    fireEvent.keyDown(t3, { key: 'Enter', ctrlKey: true });
    await waitFor(() => expect(f.sent).toHaveLength(1));
    const t4 = within(card('r4')).getByLabelText(/Your answer/);
    fireEvent.change(t4, { target: { value: '{"approved": true, "edits": [1, 2]}' } });
    expect(within(card('r4')).getByText('Sent as JSON.')).toBeTruthy();
    fireEvent.click(within(card('r4')).getByRole('button', { name: 'Answer' }));
    await waitFor(() => expect(f.sent).toHaveLength(2));
    expect(f.sent[0].body.answer).toBe('eu-west');
    expect(f.sent[1].body).toEqual({ answer: { approved: true, edits: [1, 2] }, interrupt_id: 'ask#1', by: undefined });
  });
});

describe('the server says no', () => {
  it('409: answered first elsewhere — the card says by whom', async () => {
    const f = fakeApi([approval('r1')]);
    render(<InboxApp api={f.api} />);
    const c = await waitFor(() => card('r1'));
    f.audit.push({ run_id: 'r1', interrupt_id: 'approve#1', answer: 'hold', who: 'Grace (token ops)', at_ms: NOW - 1000 });
    f.setRuns([]);
    f.failAnswer(new ApiError(409, 'this question was answered already'));
    fireEvent.click(within(c).getByRole('button', { name: 'ship' }));
    await waitFor(() => expect(card('r1').dataset.state).toBe('answered'));
    const out = within(card('r1')).getByTestId('card-outcome');
    expect(out.textContent).toContain('Answered elsewhere');
    expect(out.textContent).toContain('hold');
    expect(within(out).getByTestId('answered-by').textContent).toBe('Grace (token ops)');
  });

  it('409 with nothing in the log: the detail is shown', async () => {
    const f = fakeApi([approval('r1')]);
    f.failAnswer(new ApiError(409, 'the run is not waiting'));
    render(<InboxApp api={f.api} />);
    const c = await waitFor(() => card('r1'));
    fireEvent.click(within(c).getByRole('button', { name: 'hold' }));
    expect((await within(c).findByRole('alert')).textContent).toContain('the run is not waiting');
  });

  it('401: asks for a token, keeps it for the tab, reads again with it', async () => {
    const f = fakeApi([approval('r1')]);
    f.failWaiting(new ApiError(401, 'this server needs a token'));
    render(<InboxApp api={f.api} />);
    const prompt = await screen.findByTestId('token-prompt');
    expect(within(prompt).getByText(/needs an API token/)).toBeTruthy();
    f.failWaiting(null);
    fireEvent.change(within(prompt).getByLabelText('API token'), { target: { value: 'sy_secret' } });
    fireEvent.click(within(prompt).getByRole('button', { name: 'Use token' }));
    expect(f.api.token()).toBe('sy_secret');
    await waitFor(() => expect(cards()).toHaveLength(1));
    expect(screen.queryByTestId('token-prompt')).toBeNull();
  });

  it('401 on an answer: the token prompt comes up and the card stays', async () => {
    const f = fakeApi([approval('r1')]);
    render(<InboxApp api={f.api} />);
    const c = await waitFor(() => card('r1'));
    f.failAnswer(new ApiError(401, 'revoked'));
    fireEvent.click(within(c).getByRole('button', { name: 'ship' }));
    await screen.findByTestId('token-prompt');
    expect(card('r1').dataset.state).toBe('waiting');
  });
});

describe('live', () => {
  it('every change re-reads the list: a run answered elsewhere disappears, a new one appears', async () => {
    const f = fakeApi([approval('r1'), approval('r2')]);
    render(<InboxApp api={f.api} />);
    await waitFor(() => expect(cards()).toHaveLength(2));
    expect(screen.getByTestId('live').textContent).toBe('Live');
    f.setRuns([approval('r2')]);
    f.change('r1');
    await waitFor(() => expect(cards().map((c) => c.dataset.runId)).toEqual(['r2']));
    f.setRuns([approval('r2'), input('r3')]);
    f.change('r3');
    await waitFor(() => expect(cards()).toHaveLength(2));
    expect(card('r3').dataset.kind).toBe('input');
  });
});

describe('untrusted text stays text', () => {
  it('an XSS payload in the question, options, state and names creates nothing and runs nothing', async () => {
    for (const { name, payload } of XSS_CORPUS) {
      const run = approval(`x-${name}`, {
        assistant: payload,
        question: { id: payload, node: payload, kind: 'approval', prompt: payload, options: ['ship', payload], value: null, default: null, validation: null },
        state: { [payload]: payload },
        started_by: payload,
      });
      const f = fakeApi([run]);
      const view = render(<InboxApp api={f.api} />);
      const c = await waitFor(() => card(run.run_id));
      for (const tag of ['script', 'iframe', 'object', 'embed', 'img', 'svg', 'math', 'style', 'link', 'meta', 'base', 'video', 'audio', 'template', 'body']) {
        expect(c.querySelectorAll(tag).length, `${name}: <${tag}>`).toBe(0);
      }
      for (const el of c.querySelectorAll('*')) {
        for (const a of el.getAttributeNames()) expect(a.startsWith('on'), `${name}: ${a} on <${el.tagName}>`).toBe(false);
        const href = el.getAttribute('href');
        if (href !== null) expect(href, name).toMatch(/^(https?:\/\/|mailto:)/i);
      }
      // The text is still there.
      expect(within(c).getByTestId('question').textContent!.length, name).toBeGreaterThan(0);
      expect(canary(), name).toBeUndefined();
      view.unmount();
    }
  });

  it('the concrete payload: <img onerror>, <script> and a javascript: link are shown as text; safe links open in a new tab', async () => {
    const prompt = 'Ship <img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> [click me](javascript:window.__xss=3) and [docs](https://example.com/docs)';
    const f = fakeApi([approval('r1', { question: { ...approval('r1').question!, prompt } })]);
    render(<InboxApp api={f.api} />);
    const q = await waitFor(() => within(card('r1')).getByTestId('question'));
    expect(q.textContent).toContain('<img src=x onerror="window.__xss=1">');
    expect(q.textContent).toContain('<script>');
    expect(q.querySelector('img, script')).toBeNull();
    const links = q.querySelectorAll('a');
    expect(links).toHaveLength(1);
    expect(links[0].getAttribute('href')).toBe('https://example.com/docs');
    expect(links[0].getAttribute('target')).toBe('_blank');
    expect(links[0].getAttribute('rel')).toBe('noopener noreferrer');
    expect(within(q).getByText('click me').tagName).toBe('SPAN');
    expect(canary()).toBeUndefined();
    // Plain mode: the text as is.
    fireEvent.click(within(card('r1')).getByRole('radio', { name: 'Plain' }));
    expect(within(card('r1')).getByTestId('question').textContent).toContain('[click me](javascript:window.__xss=3)');
  });
});

describe('the API client', () => {
  function server(responses: { status: number; body: unknown }[]) {
    const calls: { url: string; init: RequestInit }[] = [];
    const f = vi.fn(async (url: RequestInfo | URL, init?: RequestInit) => {
      calls.push({ url: String(url), init: init ?? {} });
      const r = responses.shift() ?? { status: 200, body: [] };
      return new Response(JSON.stringify(r.body), { status: r.status, headers: { 'Content-Type': 'application/json' } });
    });
    return { calls, fetch: f as unknown as typeof fetch };
  }

  it('sends the answer as JSON with the token as Bearer, and reads the waiting runs', async () => {
    const s = server([
      { status: 200, body: [approval('r1')] },
      { status: 200, body: { ok: true, run_id: 'r/1', by: 'Ada (token ops)' } },
    ]);
    sessionStorage.setItem(TOKEN_KEY, 'sy_tok');
    const api = createApi({ root: 'http://127.0.0.1:9/', fetch: s.fetch, storage: sessionStorage });
    expect((await api.waiting())[0].run_id).toBe('r1');
    expect(s.calls[0].url).toBe('http://127.0.0.1:9/switchyard/runs?status=interrupted');
    expect((s.calls[0].init.headers as Record<string, string>).Authorization).toBe('Bearer sy_tok');
    await api.answer('r/1', { answer: { a: 1 }, interrupt_id: 'q#1', by: 'Ada' });
    expect(s.calls[1].url).toBe('http://127.0.0.1:9/switchyard/runs/r%2F1/answer');
    expect(s.calls[1].init.method).toBe('POST');
    expect(JSON.parse(String(s.calls[1].init.body))).toEqual({ answer: { a: 1 }, interrupt_id: 'q#1', by: 'Ada' });
  });

  it("turns 401 / 409 / 422 into ApiErrors with the server's detail; keeps the token in sessionStorage", async () => {
    const s = server([
      { status: 401, body: { detail: 'this server needs a token' } },
      { status: 409, body: { detail: 'answered already' } },
      { status: 422, body: { detail: "Input failed validation 'len(input) >= 3' (got 2 chars)" } },
    ]);
    const api = createApi({ root: 'http://h/', fetch: s.fetch, storage: sessionStorage });
    await expect(api.waiting()).rejects.toMatchObject({ status: 401, message: 'this server needs a token' });
    await expect(api.answer('r', { answer: 'x' })).rejects.toMatchObject({ status: 409, message: 'answered already' });
    await expect(api.answer('r', { answer: 'x' })).rejects.toMatchObject({ status: 422, message: expect.stringContaining('got 2 chars') });
    api.setToken('  sy_new ');
    expect(sessionStorage.getItem(TOKEN_KEY)).toBe('sy_new');
    expect(localStorage.getItem(TOKEN_KEY)).toBeNull();
  });

  it('listens to the change feed with ?token= and re-opens a refused stream', async () => {
    vi.useFakeTimers({ now: NOW });
    const made: FakeES[] = [];
    class FakeES {
      readyState = 0;
      onerror: (() => void) | null = null;
      listeners = new Map<string, (e: MessageEvent) => void>();
      constructor(readonly url: string) {
        made.push(this);
      }
      addEventListener(t: string, l: (e: MessageEvent) => void) {
        this.listeners.set(t, l);
      }
      close() {
        this.readyState = 2;
      }
      emit(t: string, data = '{}') {
        this.listeners.get(t)?.(new MessageEvent(t, { data }));
      }
    }
    const api = createApi({ root: 'http://h/', fetch: server([]).fetch, storage: sessionStorage, EventSource: FakeES as unknown as typeof EventSource });
    api.setToken('sy_t');
    const seen: string[] = [];
    const stop = api.feed({ onReady: () => seen.push('ready'), onChange: (id) => seen.push(`change ${id}`), onDown: () => seen.push('down') });
    expect(made[0].url).toBe('http://h/switchyard/inbox/events?token=sy_t');
    made[0].emit('ready');
    made[0].emit('change', '{"run_id":"r9"}');
    made[0].emit('resync');
    made[0].readyState = 2;
    made[0].onerror?.();
    expect(seen).toEqual(['ready', 'change r9', 'change null', 'down']);
    await vi.advanceTimersByTimeAsync(600);
    expect(made).toHaveLength(2);
    stop();
    expect(made[1].readyState).toBe(2);
  });
});

describe('helpers', () => {
  it('the validation grammar is the engine’s', () => {
    expect(parseValidation('len(input) >= 3')).toEqual({ op: '>=', n: 3 });
    expect(parseValidation(' len ( input ) <5 ')).toEqual({ op: '<', n: 5 });
    expect(parseValidation('len(input) != 3')).toMatch(/'!=' is not supported/);
    expect(parseValidation('len(x) > 1')).toMatch(/expected 'input'/);
    expect(parseValidation('len(input) > -1')).toMatch(/not a non-negative integer/);
    // Bytes are compared, characters reported (as upstream).
    expect(checkInputAnswer('len(input) >= 3', 'éé', null)).toBeNull();
    expect(checkInputAnswer('len(input) <= 3', 'éé', null)).toBe("Input failed validation 'len(input) <= 3' (got 2 chars)");
    expect(checkInputAnswer('len(input) >= 3', '', 'No notes.')).toBeNull();
    expect(checkInputAnswer('len(input) >= 30', '', 'No notes.')).toBe(validationError('len(input) >= 30', 'No notes.'));
    expect(checkInputAnswer('something else', 'x', null)).toBeNull();
  });

  it('relative times', () => {
    expect(ago('2026-11-27T11:59:58Z', NOW)).toBe('just now');
    expect(ago('2026-11-27T11:59:30Z', NOW)).toBe('30 s ago');
    expect(ago('2026-11-27T09:45:00Z', NOW)).toBe('2 h 15 min ago');
    expect(ago('2026-11-20T12:00:00Z', NOW)).toBe('7 days ago');
  });
});
