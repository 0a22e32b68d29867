// A recording (cassette) written inside a git work tree that git does not ignore could be
// committed with its prompts, replies and tool results. Shown in the run configuration while
// recording is on and in the debugger's run header when a run records; "Add to .gitignore" adds
// the one line that ignores the file (`record_gitignore`).
import { useState } from 'react';
import { errorMessage } from '../../backend';
import type { RecordCheck } from '../../debug/types';
import { useAppStore } from '../../store';

export function recordWarningText(c: RecordCheck): string {
  return `The recording ${c.path} is inside the git work tree ${c.work_tree ?? ''} and git does not ignore it: a commit could include its prompts, replies and tool results.`;
}

/** Callers key it by the check's path: another path starts afresh. */
export function RecordWarning({ check, compact = false, onChange }: { check: RecordCheck; compact?: boolean; onChange?(c: RecordCheck): void }) {
  const backend = useAppStore().getState().backend;
  const [now, setNow] = useState<RecordCheck>(check);
  const [added, setAdded] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  if (!now.warn && !added) return null;

  const add = async () => {
    setBusy(true);
    setError(null);
    try {
      const c = await backend.recordGitignore(now.path);
      setNow(c);
      setAdded(c.pattern);
      onChange?.(c);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };

  if (added) {
    return (
      <div className={`rc-ok small record-warning${compact ? ' compact' : ''}`} data-testid="record-gitignored">
        Added <code className="mono">{added}</code> to {now.work_tree}/.gitignore
      </div>
    );
  }
  return (
    <div className={`rc-warn small record-warning${compact ? ' compact' : ''}`} data-testid="record-warning" data-path={now.path} title={recordWarningText(now)}>
      <span>
        {compact ? '⚠ The recording is not ignored by git' : `⚠ ${recordWarningText(now)}`}
      </span>{' '}
      <button type="button" className="btn small" data-testid="record-gitignore" disabled={busy} onClick={() => void add()} title={`Add ${now.pattern ?? 'its path'} to ${now.work_tree}/.gitignore`}>
        Add to .gitignore
      </button>
      {error ? (
        <div className="rc-error" role="alert" data-testid="record-gitignore-error">
          {error}
        </div>
      ) : null}
    </div>
  );
}
