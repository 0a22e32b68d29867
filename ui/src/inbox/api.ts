// The approvals inbox's only door to the server: Switchyard's `/switchyard/` endpoints of
// `switchyard serve` (crates/server/src/api.rs, openapi.json) on the page's own origin, with the
// API token (sessionStorage, sent as `Authorization: Bearer`; the event stream, which cannot send
// headers, gets `?token=`). The page's files need no token; every call does once the server has one.
import type { InterruptKind, JsonValue } from '../contract/runtime';

/** The question a run waits on (the engine's `Pending`, as `/switchyard/runs` returns it). */
export type Question = {
  id: string;
  node: string;
  kind: InterruptKind;
  prompt: string;
  options: string[];
  value?: JsonValue;
  default?: string | null;
  validation?: string | null;
};

/** A run as `GET /switchyard/runs` lists it. */
export type WaitingRun = {
  run_id: string;
  assistant: string;
  status: string;
  waiting_since?: string | null;
  step?: number | null;
  question?: Question | null;
  /** The run's state the question refers to (after its last saved step). */
  state?: JsonValue;
  started_by?: string | null;
  created_at?: string;
};

/** One entry of the answers' audit log (`GET /switchyard/answers`). */
export type AuditEntry = { run_id: string; interrupt_id: string; answer: JsonValue; who: string; at_ms: number };

export type AnswerBody = { answer: unknown; interrupt_id?: string; by?: string };
export type Answered = { ok: boolean; run_id: string; by: string };

/** A refused call: the HTTP status and the server's `detail`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type FeedHandlers = {
  /** The stream is (again) connected: re-read the list (changes may have been missed). */
  onReady(): void;
  /** A run started waiting, was answered or ended (`run_id`); `resync` comes here too. */
  onChange(runId: string | null): void;
  /** The stream broke; it is retried. */
  onDown(): void;
};

export interface InboxApi {
  waiting(): Promise<WaitingRun[]>;
  answer(runId: string, body: AnswerBody): Promise<Answered>;
  answers(runId: string): Promise<AuditEntry[]>;
  /** Listen to the inbox's change feed; returns the function that stops listening. */
  feed(h: FeedHandlers): () => void;
  token(): string | null;
  setToken(token: string | null): void;
}

export const TOKEN_KEY = 'switchyard.inbox.token';
export const NAME_KEY = 'switchyard.inbox.name';

function read(storage: Storage | undefined, key: string): string | null {
  try {
    return storage?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

function write(storage: Storage | undefined, key: string, value: string | null): void {
  try {
    if (value === null) storage?.removeItem(key);
    else storage?.setItem(key, value);
  } catch {
    // private mode and friends: kept in memory only
  }
}

export type ApiDeps = {
  /** The server's root URL (the page lives at `<root>/inbox/`). */
  root?: string;
  fetch?: typeof fetch;
  storage?: Storage;
  EventSource?: typeof EventSource;
};

/** The page's own server: `/inbox/` → `/`. */
export function serverRoot(): string {
  return new URL('..', window.location.href).href;
}

export function createApi(deps: ApiDeps = {}): InboxApi {
  const root = deps.root ?? serverRoot();
  const doFetch = deps.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => window.fetch(input, init));
  const storage = deps.storage ?? (typeof sessionStorage === 'undefined' ? undefined : sessionStorage);
  const ES = deps.EventSource ?? (typeof EventSource === 'undefined' ? undefined : EventSource);
  let token = read(storage, TOKEN_KEY);

  const url = (path: string) => new URL(path, root).href;

  async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let resp: Response;
    try {
      resp = await doFetch(url(path), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch (e) {
      throw new ApiError(0, `The server cannot be reached (${e instanceof Error ? e.message : String(e)}).`);
    }
    const text = await resp.text();
    let data: unknown;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!resp.ok) {
      const detail = data && typeof data === 'object' && 'detail' in data ? String((data as { detail: unknown }).detail) : text.trim();
      throw new ApiError(resp.status, detail || `${resp.status} ${resp.statusText}`);
    }
    return data as T;
  }

  return {
    waiting: () => call<WaitingRun[]>('GET', 'switchyard/runs?status=interrupted'),
    answer: (runId, body) => call<Answered>('POST', `switchyard/runs/${encodeURIComponent(runId)}/answer`, body),
    answers: (runId) => call<AuditEntry[]>('GET', `switchyard/answers?run_id=${encodeURIComponent(runId)}`),
    token: () => token,
    setToken(t) {
      token = t && t.trim() ? t.trim() : null;
      write(storage, TOKEN_KEY, token);
    },
    feed(h) {
      if (!ES) {
        h.onDown();
        return () => {};
      }
      let es: EventSource | null = null;
      let timer: ReturnType<typeof setTimeout> | null = null;
      let stopped = false;
      let delay = 500;
      const open = () => {
        if (stopped) return;
        const u = new URL('switchyard/inbox/events', root);
        if (token) u.searchParams.set('token', token);
        es = new ES(u.href);
        es.addEventListener('ready', () => {
          delay = 500;
          h.onReady();
        });
        es.addEventListener('change', (e) => {
          let id: string | null = null;
          try {
            const v: unknown = JSON.parse((e as MessageEvent<string>).data);
            if (v && typeof v === 'object' && typeof (v as { run_id?: unknown }).run_id === 'string') id = (v as { run_id: string }).run_id;
          } catch {
            // a change all the same
          }
          h.onChange(id);
        });
        es.addEventListener('resync', () => h.onChange(null));
        es.onerror = () => {
          h.onDown();
          // The browser retries a dropped stream by itself; one refused (401, a restart) is
          // closed, and opened again here, later each time.
          if (es && es.readyState === 2 && !stopped) {
            es.close();
            timer = setTimeout(open, delay);
            delay = Math.min(delay * 2, 10_000);
          }
        };
      };
      open();
      return () => {
        stopped = true;
        if (timer) clearTimeout(timer);
        es?.close();
      };
    },
  };
}
