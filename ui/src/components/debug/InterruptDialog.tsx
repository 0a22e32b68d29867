// The interrupt dialog: the question a run waits on (sherma `interrupt`, Loki `approval` / `input`)
// and its answer. Cancelling closes the dialog; the run stays interrupted (the toolbar's "Answer…"
// brings it back). A question in text is shown as Markdown (switchable to plain text; raw HTML stays
// text, links and images inert: see `Markdown.tsx`), a structured value as JSON text.
import { useEffect, useRef, useState } from 'react';
import '../../debug/debug.css';
import { FormatToggle, Markdown, PlainText, type TextFormat } from '../Markdown';
import { redact } from '../../untrusted';
import { currentPending, useDebug, useDebugStore } from '../../debug/store';
import type { Pending } from '../../debug/types';
import { interruptAnswerValue } from '../../answers';

export { interruptAnswerValue };

const TITLES: Record<Pending['kind'], string> = {
  interrupt: 'The run is waiting for you',
  approval: 'Approval needed',
  input: 'Input needed',
};

export function InterruptDialog() {
  const open = useDebug((s) => s.dialogOpen);
  const pending = useDebug(currentPending);
  if (!open || !pending) return null;
  // Keyed by the interrupt, so a new question starts with a fresh answer.
  return <Dialog key={pending.id} pending={pending} />;
}

function Dialog({ pending }: { pending: Pending }) {
  const dbg = useDebugStore();
  const error = useDebug((s) => s.answerError);
  const kind = pending.kind;
  const [text, setText] = useState(() => (kind === 'input' ? (pending.default ?? '') : ''));
  const [busy, setBusy] = useState(false);
  const [format, setFormat] = useState<TextFormat>('markdown');
  const field = useRef<HTMLTextAreaElement & HTMLInputElement>(null);
  const firstOption = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (kind === 'approval' && firstOption.current) firstOption.current.focus();
    else {
      field.current?.focus();
      if (kind === 'input') field.current?.select();
    }
  }, [kind]);

  const send = async (value: unknown) => {
    if (busy) return;
    setBusy(true);
    try {
      await dbg.getState().answer(value);
    } finally {
      setBusy(false);
    }
  };
  const submitText = () => {
    if (kind === 'interrupt') return send(interruptAnswerValue(text));
    if (kind === 'approval' && !text.trim()) return;
    return send(text);
  };
  const cancel = () => dbg.getState().cancelDialog();

  const options = pending.options ?? [];
  const value = pending.value;
  const structured = kind === 'interrupt' && value !== undefined && value !== null && typeof value !== 'string';
  const question = kind === 'interrupt' && typeof value === 'string' ? value : pending.prompt || '';

  return (
    <div className="modal-backdrop">
      <div
        className="modal interrupt-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="interrupt-title"
        data-testid="interrupt-dialog"
        data-kind={kind}
        onKeyDown={(e) => {
          // A modal: editor keys (Delete, Ctrl+Z, …) must not reach the canvas behind it; the
          // debugger's function keys still work.
          if (!/^F\d+$/.test(e.key)) e.stopPropagation();
          if (e.key === 'Escape') {
            e.preventDefault();
            cancel();
          }
        }}
      >
        <h2 id="interrupt-title">{TITLES[kind] ?? 'The run is waiting for you'}</h2>
        <div className="muted small id-node">
          at <b>{pending.node}</b> · {kind}
          {!structured && question ? <FormatToggle value={format} onChange={setFormat} testid="interrupt-format" /> : null}
        </div>

        {structured ? (
          // A structured value (sherma `interrupt`): formatted JSON, secrets masked.
          <pre className="id-prompt id-json" data-testid="interrupt-prompt">
            {JSON.stringify(redact(value), null, 2)}
          </pre>
        ) : !question ? (
          <div className="id-prompt" data-testid="interrupt-prompt">
            <span className="muted">(no question text)</span>
          </div>
        ) : format === 'markdown' ? (
          <Markdown className="id-prompt" testid="interrupt-prompt" text={question} />
        ) : (
          <PlainText className="id-prompt" testid="interrupt-prompt" text={question} />
        )}

        {kind === 'approval' && options.length ? (
          <div className="id-options" role="group" aria-label="Options">
            {options.map((o, i) => (
              <button
                key={o}
                ref={i === 0 ? firstOption : undefined}
                type="button"
                className="btn id-option"
                data-testid="interrupt-option"
                data-option={o}
                disabled={busy}
                onClick={() => void send(o)}
              >
                {o}
              </button>
            ))}
          </div>
        ) : null}

        <label className="id-answer">
          <span className="rc-label">
            {kind === 'approval' ? 'Other answer' : kind === 'input' ? 'Your answer' : 'Your answer'}
            {kind === 'approval' ? <span className="muted"> (goes to on_other)</span> : null}
            {kind === 'interrupt' ? <span className="muted"> (text, or a JSON object/array)</span> : null}
          </span>
          {kind === 'interrupt' ? (
            <textarea
              ref={field}
              className="input"
              data-testid="interrupt-answer"
              rows={4}
              value={text}
              disabled={busy}
              onChange={(e) => setText(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
                  e.preventDefault();
                  void submitText();
                }
              }}
            />
          ) : (
            <input
              ref={field}
              className={`input${error ? ' invalid' : ''}`}
              data-testid="interrupt-answer"
              value={text}
              disabled={busy}
              placeholder={kind === 'approval' ? 'Something else…' : (pending.default ?? '')}
              onChange={(e) => setText(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter') {
                  e.preventDefault();
                  void submitText();
                }
              }}
            />
          )}
        </label>
        {kind === 'input' && pending.validation ? (
          <div className="muted small id-hint" data-testid="interrupt-validation">
            Must match: <span className="mono">{pending.validation}</span>
          </div>
        ) : null}

        {error ? (
          <div className="rc-error" data-testid="interrupt-error" role="alert">
            {error}
          </div>
        ) : null}

        <div className="modal-actions">
          <span className="muted small">{kind === 'interrupt' ? 'Ctrl+Enter answers' : 'Enter answers'} · Esc leaves the run waiting</span>
          <div className="spacer" />
          <button type="button" className="btn" data-testid="interrupt-cancel" onClick={cancel}>
            Cancel
          </button>
          <button
            type="button"
            className="btn primary"
            data-testid="interrupt-submit"
            disabled={busy || (kind === 'approval' && !text.trim())}
            onClick={() => void submitText()}
          >
            {kind === 'approval' ? 'Send other answer' : 'Answer'}
          </button>
        </div>
      </div>
    </div>
  );
}
