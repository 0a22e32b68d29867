// The approvals inbox: every run of this server waiting for a person, answered from the browser.
// The list is read from `GET /switchyard/runs?status=interrupted` and read again on every change
// the server announces (`/switchyard/inbox/events`), so a run answered elsewhere disappears and a
// new question appears without a reload. A card answered here stays, saying who answered, until
// dismissed. Links in questions open in a new tab (`LinkMode`), with the app's URL rules.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { LinkMode } from '../components/ExternalLink';
import { ApiError, NAME_KEY, type InboxApi, type WaitingRun } from './api';
import { RunCard, type Outcome, type SendResult } from './RunCard';

type Live = 'connecting' | 'live' | 'down';

/** A card's identity: the run and the question (a run may ask again). */
const keyOf = (r: WaitingRun) => `${r.run_id}\u0000${r.question?.id ?? ''}`;

function loadName(): string {
  try {
    return localStorage.getItem(NAME_KEY) ?? '';
  } catch {
    return '';
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function InboxApp({ api }: { api: InboxApi }) {
  const [runs, setRuns] = useState<WaitingRun[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [needToken, setNeedToken] = useState(false);
  const [tokenEpoch, setTokenEpoch] = useState(0);
  const [live, setLive] = useState<Live>('connecting');
  const [name, setName] = useState(loadName);
  const [now, setNow] = useState(() => Date.now());
  /** Cards that ended on this page (answered here, or found answered when answering). */
  const [ended, setEnded] = useState<Map<string, { run: WaitingRun; outcome: Outcome }>>(() => new Map());

  // One read at a time; a change during a read reads again after it.
  const reading = useRef({ running: false, again: false });
  const refresh = useCallback(async () => {
    const r = reading.current;
    if (r.running) {
      r.again = true;
      return;
    }
    r.running = true;
    try {
      do {
        r.again = false;
        try {
          const list = await api.waiting();
          setRuns(Array.isArray(list) ? list.filter((x) => x.question) : []);
          setLoadError(null);
          setNeedToken(false);
        } catch (e) {
          if (e instanceof ApiError && e.status === 401) setNeedToken(true);
          else setLoadError(message(e));
        }
      } while (r.again);
    } finally {
      r.running = false;
    }
  }, [api]);

  useEffect(() => {
    void refresh();
    return api.feed({
      onReady: () => {
        setLive('live');
        void refresh();
      },
      onChange: () => void refresh(),
      onDown: () => setLive('down'),
    });
  }, [api, refresh, tokenEpoch]);

  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 15_000);
    return () => clearInterval(t);
  }, []);

  const changeName = (v: string) => {
    setName(v);
    try {
      if (v.trim()) localStorage.setItem(NAME_KEY, v);
      else localStorage.removeItem(NAME_KEY);
    } catch {
      // not remembered
    }
  };

  const end = (run: WaitingRun, outcome: Outcome) => setEnded((m) => new Map(m).set(keyOf(run), { run, outcome }));

  const send = async (run: WaitingRun, answer: unknown): Promise<SendResult> => {
    const by = name.trim() || undefined;
    try {
      const r = await api.answer(run.run_id, { answer, interrupt_id: run.question?.id, by });
      end(run, { answer, by: r.by ?? by ?? 'you', at: Date.now(), elsewhere: false });
      void refresh();
      return { ok: true };
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        setNeedToken(true);
        return { ok: false, error: 'This server needs a token: enter it above, then answer again.' };
      }
      if (e instanceof ApiError && e.status === 409) {
        // Answered first by someone else (or the run ended): say who, from the audit log.
        try {
          const log = await api.answers(run.run_id);
          const mine = log.filter((a) => a.interrupt_id === run.question?.id);
          const last = mine[mine.length - 1];
          if (last) {
            end(run, { answer: last.answer, by: last.who, at: last.at_ms, elsewhere: true });
            void refresh();
            return { ok: true };
          }
        } catch {
          // fall through to the server's words
        }
        void refresh();
        return { ok: false, error: `Not taken: ${e.message}` };
      }
      if (e instanceof ApiError && e.status === 422) return { ok: false, error: e.message };
      return { ok: false, error: message(e) };
    }
  };

  const dismiss = (run: WaitingRun) =>
    setEnded((m) => {
      const n = new Map(m);
      n.delete(keyOf(run));
      return n;
    });

  // Waiting runs and the cards that ended here, newest first; a card that ended is never shown as
  // waiting again, even by a read that raced the answer.
  const cards = useMemo(() => {
    const out: { run: WaitingRun; outcome?: Outcome }[] = [];
    for (const r of runs ?? []) if (!ended.has(keyOf(r))) out.push({ run: r });
    for (const e of ended.values()) out.push(e);
    const t = (r: WaitingRun) => Date.parse(r.waiting_since ?? r.created_at ?? '') || 0;
    return out.sort((a, b) => t(b.run) - t(a.run) || a.run.run_id.localeCompare(b.run.run_id));
  }, [runs, ended]);
  const waitingCount = cards.filter((c) => !c.outcome).length;

  return (
    <LinkMode.Provider value="tab">
      <div className="inbox" data-testid="inbox" data-live={live} data-count={waitingCount}>
        <header className="top">
          <div className="brand">
            <h1>Approvals inbox</h1>
            <span className={`live live-${live}`} role="status" aria-live="polite" data-testid="live">
              {live === 'live' ? 'Live' : live === 'connecting' ? 'Connecting…' : 'Reconnecting…'}
            </span>
          </div>
          <label className="field name">
            <span className="field-label">Your name</span>
            <input
              className="input"
              data-testid="your-name"
              value={name}
              maxLength={100}
              autoComplete="name"
              placeholder="recorded with your answers"
              onChange={(e) => changeName(e.target.value)}
            />
          </label>
        </header>

        {needToken ? (
          <TokenPrompt
            hadToken={!!api.token()}
            onToken={(t) => {
              api.setToken(t);
              setNeedToken(false);
              setTokenEpoch((n) => n + 1);
            }}
          />
        ) : null}
        {loadError ? (
          <div className="error banner" role="alert" data-testid="load-error">
            {loadError}
          </div>
        ) : null}

        <main className="list" aria-label="Runs waiting for a person">
          {runs === null && !needToken && !loadError ? <p className="muted empty">Loading…</p> : null}
          {runs !== null && cards.length === 0 ? (
            <p className="muted empty" data-testid="inbox-empty">
              Nothing is waiting for an answer.
            </p>
          ) : null}
          {cards.map(({ run, outcome }) => (
            <RunCard
              key={keyOf(run)}
              run={run}
              now={now}
              outcome={outcome}
              onSend={(a) => send(run, a)}
              onDismiss={outcome ? () => dismiss(run) : undefined}
            />
          ))}
        </main>
      </div>
    </LinkMode.Provider>
  );
}

function TokenPrompt({ hadToken, onToken }: { hadToken: boolean; onToken(t: string): void }) {
  const [text, setText] = useState('');
  return (
    <form
      className="token banner"
      aria-label="API token"
      data-testid="token-prompt"
      onSubmit={(e) => {
        e.preventDefault();
        if (text.trim()) onToken(text.trim());
      }}
    >
      <p>
        {hadToken ? 'The server refused this token.' : 'This server needs an API token.'} Ask its operator for one (
        <code>switchyard token create NAME</code>). It is kept for this browser tab only.
      </p>
      <div className="row">
        <label className="field grow">
          <span className="field-label">API token</span>
          <input className="input" type="password" autoComplete="off" data-testid="token-input" value={text} onChange={(e) => setText(e.target.value)} />
        </label>
        <button type="submit" className="btn primary" disabled={!text.trim()}>
          Use token
        </button>
      </div>
    </form>
  );
}
