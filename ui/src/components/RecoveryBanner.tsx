import { useMemo } from 'react';
import { lineDiff } from '../diff';
import { useApp, useAppStore } from '../store';

/** "just now", "5 minutes ago", "3 hours ago", "2 days ago" (for `then` ≤ `now`, in ms). */
export function describeAge(then: number, now: number): string {
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} minute${m === 1 ? '' : 's'} ago`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} hour${h === 1 ? '' : 's'} ago`;
  const d = Math.round(h / 24);
  return `${d} day${d === 1 ? '' : 's'} ago`;
}

/** Offers the unsaved changes a recovery file kept for the open document (after a crash). */
export function RecoveryBanner() {
  const store = useAppStore();
  const offer = useApp((s) => s.recovery);
  const showDiff = useApp((s) => s.recoveryDiff);
  const text = useApp((s) => s.view?.text ?? '');
  const fileName = useApp((s) => s.view?.file_name ?? 'this file');
  const diff = useMemo(() => (offer && showDiff ? lineDiff(text, offer.text).filter((l) => l.op !== ' ') : null), [offer, showDiff, text]);
  if (!offer) return null;
  const when = new Date(offer.saved_at_ms);
  return (
    <div className={`recovery-banner${offer.disk_changed ? ' warn' : ''}`} role="alert" data-testid="recovery-banner">
      <div className="recovery-row">
        <span>
          <strong>Unsaved changes to {fileName} were recovered</strong> — made{' '}
          <time dateTime={when.toISOString()} title={when.toLocaleString()} data-testid="recovery-time">
            {describeAge(offer.saved_at_ms, Date.now())} ({when.toLocaleString()})
          </time>
          , before the app or the engine stopped without saving them.
        </span>
        <div className="spacer" />
        <button type="button" className="btn" data-testid="recovery-diff" onClick={() => store.getState().toggleRecoveryDiff()}>
          {showDiff ? 'Hide changes' : 'Show changes'}
        </button>
        <button type="button" className="btn" data-testid="recovery-discard" onClick={() => void store.getState().discardRecovery()}>
          Discard
        </button>
        <button type="button" className="btn primary" data-testid="recovery-restore" onClick={() => void store.getState().restoreRecovery()}>
          Restore unsaved changes
        </button>
      </div>
      {offer.warning ? (
        <div className="recovery-warning" data-testid="recovery-warning">
          ⚠ {offer.warning}
        </div>
      ) : null}
      {diff ? (
        <pre className="diff" data-testid="recovery-diff-view">
          {diff.length === 0 ? <div className="same">(no differences)</div> : null}
          {diff.map((l, i) => (
            <div key={i} className={l.op === '-' ? 'del' : 'add'}>
              {l.op} {l.text}
            </div>
          ))}
        </pre>
      ) : null}
      {diff ? <div className="muted small">− on disk · + recovered</div> : null}
    </div>
  );
}
