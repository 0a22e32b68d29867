import { useMemo } from 'react';
import { lineDiff } from '../diff';
import { useApp, useAppStore } from '../store';

export function ConflictDialog() {
  const store = useAppStore();
  const conflict = useApp((s) => s.conflict);
  const text = useApp((s) => s.view?.text ?? '');
  const fileName = useApp((s) => s.view?.file_name ?? 'The file');
  const diff = useMemo(() => (conflict?.showDiff && conflict.diskText != null ? lineDiff(text, conflict.diskText) : null), [conflict, text]);
  if (!conflict) return null;
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby="conflict-title" data-testid="conflict-dialog">
        <h2 id="conflict-title">{fileName} changed on disk</h2>
        <p>
          {conflict.source === 'save'
            ? 'The file was changed by another program since you opened it, so it was not saved.'
            : 'Another program changed the file while you have unsaved edits.'}{' '}
          Reload the disk version (your edits can be brought back with Undo), or keep your version and overwrite the file on the next save.
        </p>
        {conflict.showDiff ? (
          conflict.diskText == null ? (
            <div className="muted">The file no longer exists on disk.</div>
          ) : (
            <pre className="diff" data-testid="conflict-diff-view">
              {diff!.map((l, i) => (
                <div key={i} className={l.op === '-' ? 'del' : l.op === '+' ? 'add' : 'same'}>
                  {l.op} {l.text}
                </div>
              ))}
            </pre>
          )
        ) : null}
        {conflict.showDiff ? <div className="muted small">− yours · + on disk</div> : null}
        <div className="modal-actions">
          <button type="button" className="btn" data-testid="conflict-diff" onClick={() => void store.getState().showDiff()}>
            Show diff
          </button>
          <div className="spacer" />
          <button type="button" className="btn" data-testid="conflict-keep" onClick={() => void store.getState().keepMine()}>
            Keep mine
          </button>
          <button type="button" className="btn primary" data-testid="conflict-reload" onClick={() => void store.getState().reload()}>
            Reload
          </button>
        </div>
      </div>
    </div>
  );
}
