// One run waiting for a person: agent, node, question, since when, the state the question refers
// to, and the answer form of its kind, the desktop dialog's forms
// (components/debug/InterruptDialog.tsx): Loki approval options plus a free answer for
// `on_other`, Loki `input` with its default and validation, sherma free text or JSON. Untrusted
// text (question, options, state, names) is React text or `Markdown` (the app's rules).
import { useState, type ReactNode } from 'react';
import { FormatToggle, Markdown, PlainText, type TextFormat } from '../components/Markdown';
import { redact } from '../untrusted';
import { interruptAnswerValue } from '../answers';
import type { Question, WaitingRun } from './api';
import { checkInputAnswer } from './validation';
import { absolute, ago } from './time';

const TITLES: Record<Question['kind'], string> = {
  interrupt: 'Waiting for an answer',
  approval: 'Approval needed',
  input: 'Input needed',
};

/** How a card ended here: answered from this page, or found answered by someone else. */
export type Outcome = { answer: unknown; by: string; at: number; elsewhere: boolean };

export type SendResult = { ok: true } | { ok: false; error: string };

function shown(answer: unknown): string {
  return typeof answer === 'string' ? answer : JSON.stringify(redact(answer));
}

export function RunCard({
  run,
  now,
  outcome,
  onSend,
  onDismiss,
}: {
  run: WaitingRun;
  now: number;
  outcome?: Outcome;
  onSend(answer: unknown): Promise<SendResult>;
  onDismiss?(): void;
}) {
  const q = run.question!;
  const [format, setFormat] = useState<TextFormat>('markdown');
  const value = q.value;
  const structured = q.kind === 'interrupt' && value !== undefined && value !== null && typeof value !== 'string';
  const question = q.kind === 'interrupt' && typeof value === 'string' ? value : q.prompt || '';
  const titleId = `card-${run.run_id}-${q.id}`.replace(/[^A-Za-z0-9_-]/g, '_');
  const since = run.waiting_since ?? null;

  return (
    <article
      className={`card${outcome ? ' answered' : ''}`}
      aria-labelledby={titleId}
      data-testid="inbox-card"
      data-run-id={run.run_id}
      data-kind={q.kind}
      data-state={outcome ? 'answered' : 'waiting'}
    >
      <header className="card-head">
        <h2 id={titleId} className="card-title">
          <span className="agent">{run.assistant}</span>
          <span className="sep" aria-hidden="true">
            ›
          </span>
          <span className="node">{q.node}</span>
        </h2>
        <span className={`badge kind-${q.kind}`}>{outcome ? 'Answered' : (TITLES[q.kind] ?? q.kind)}</span>
      </header>
      {since ? (
        <div className="since muted small">
          waiting since{' '}
          <time dateTime={since} title={since} data-testid="waiting-since">
            {absolute(since)}
          </time>{' '}
          · <span data-testid="waiting-ago">{ago(since, now)}</span>
        </div>
      ) : null}

      <section className="question" aria-label="Question">
        {!structured && question ? (
          <div className="q-tools">
            <FormatToggle value={format} onChange={setFormat} testid="question-format" />
          </div>
        ) : null}
        {structured ? (
          <pre className="q-json" data-testid="question">
            {JSON.stringify(redact(value), null, 2)}
          </pre>
        ) : !question ? (
          <div className="q-text" data-testid="question">
            <span className="muted">(no question text)</span>
          </div>
        ) : format === 'markdown' ? (
          <Markdown className="q-text" testid="question" text={question} />
        ) : (
          <PlainText className="q-text plain" testid="question" text={question} />
        )}
      </section>

      <StateView state={run.state} step={run.step} />

      {outcome ? (
        <div className="outcome" role="status" data-testid="card-outcome">
          <span className="tick" aria-hidden="true">
            ✓
          </span>{' '}
          {outcome.elsewhere ? 'Answered elsewhere' : 'Answered'} <b className="mono">{shown(outcome.answer)}</b> by{' '}
          <b data-testid="answered-by">{outcome.by}</b>
          {outcome.at ? (
            <>
              {' '}
              · <time dateTime={new Date(outcome.at).toISOString()}>{absolute(new Date(outcome.at).toISOString())}</time>
            </>
          ) : null}
          {onDismiss ? (
            <button type="button" className="btn small dismiss" onClick={onDismiss} aria-label="Dismiss">
              Dismiss
            </button>
          ) : null}
        </div>
      ) : (
        <AnswerForm q={q} onSend={onSend} />
      )}
      <footer className="card-foot muted small">
        run <span className="mono">{run.run_id}</span>
        {run.started_by ? <> · started by {run.started_by}</> : null}
      </footer>
    </article>
  );
}

function StateView({ state, step }: { state: WaitingRun['state']; step?: number | null }) {
  if (state === undefined || state === null) return null;
  return (
    <details className="state" data-testid="state">
      <summary>
        State the question refers to{typeof step === 'number' ? <span className="muted"> (after step {step})</span> : null}
      </summary>
      <pre className="state-json">{JSON.stringify(redact(state), null, 2)}</pre>
    </details>
  );
}

function Field({ label, hint, children }: { label: ReactNode; hint?: ReactNode; children: ReactNode }) {
  return (
    <label className="field">
      <span className="field-label">
        {label}
        {hint ? <span className="muted"> {hint}</span> : null}
      </span>
      {children}
    </label>
  );
}

export function AnswerForm({ q, onSend }: { q: Question; onSend(answer: unknown): Promise<SendResult> }) {
  const kind = q.kind;
  const [text, setText] = useState(() => (kind === 'input' ? (q.default ?? '') : ''));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const send = async (answer: unknown) => {
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      const r = await onSend(answer);
      if (!r.ok) setError(r.error);
    } finally {
      setBusy(false);
    }
  };
  const submitText = () => {
    if (kind === 'interrupt') return send(interruptAnswerValue(text));
    if (kind === 'approval') {
      if (!text.trim()) return;
      return send(text);
    }
    const refused = checkInputAnswer(q.validation, text, q.default);
    if (refused) {
      setError(refused);
      return;
    }
    return send(text);
  };

  const options = q.options ?? [];
  const asJson = kind === 'interrupt' && typeof interruptAnswerValue(text) === 'object';
  const errorId = `err-${q.id}`.replace(/[^A-Za-z0-9_-]/g, '_');

  return (
    <form
      className="answer"
      aria-label="Answer"
      onSubmit={(e) => {
        e.preventDefault();
        void submitText();
      }}
    >
      {kind === 'approval' && options.length ? (
        <div className="options" role="group" aria-label="Options">
          {options.map((o) => (
            <button key={o} type="button" className="btn option" data-testid="answer-option" data-option={o} disabled={busy} onClick={() => void send(o)}>
              {o}
            </button>
          ))}
        </div>
      ) : null}

      {kind === 'interrupt' ? (
        <Field label="Your answer" hint="(text, or a JSON object/array)">
          <textarea
            className="input"
            data-testid="answer-text"
            rows={3}
            value={text}
            disabled={busy}
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? errorId : undefined}
            onChange={(e) => setText(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
                e.preventDefault();
                void submitText();
              }
            }}
          />
        </Field>
      ) : (
        <Field label={kind === 'approval' ? 'Other answer' : 'Your answer'} hint={kind === 'approval' ? '(goes to on_other)' : undefined}>
          <input
            className="input"
            data-testid="answer-text"
            value={text}
            disabled={busy}
            placeholder={kind === 'approval' ? 'Something else…' : (q.default ?? '')}
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? errorId : undefined}
            onChange={(e) => {
              setText(e.target.value);
              if (error) setError(null);
            }}
          />
        </Field>
      )}
      {kind === 'input' && (q.default || q.validation) ? (
        <div className="hints muted small">
          {q.default ? (
            <div data-testid="answer-default">
              An empty answer means the default: <span className="mono">{q.default}</span>
            </div>
          ) : null}
          {q.validation ? (
            <div data-testid="answer-validation">
              Must match: <span className="mono">{q.validation}</span>
            </div>
          ) : null}
        </div>
      ) : null}
      {asJson ? <div className="hints muted small">Sent as JSON.</div> : null}

      {error ? (
        <div className="error" role="alert" id={errorId} data-testid="answer-error">
          {error}
        </div>
      ) : null}

      <div className="actions">
        <span className="muted small">{kind === 'interrupt' ? 'Ctrl+Enter answers' : 'Enter answers'}</span>
        <button type="submit" className="btn primary" data-testid="answer-submit" disabled={busy || (kind === 'approval' && !text.trim())}>
          {kind === 'approval' ? 'Send other answer' : 'Answer'}
        </button>
      </div>
    </form>
  );
}
