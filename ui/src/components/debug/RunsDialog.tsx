// The Runs list: durable runs kept in the run store (docs/app-contract.md §5.3). A paused or
// interrupted run can be resumed after the app was closed; any run can be deleted. Everything
// shown comes from the engine's store (`runs_list`); resuming asks the engine (`run_resume`).
import { useEffect } from 'react';
import '../../debug/debug.css';
import { useDebug, useDebugStore } from '../../debug/store';
import type { DurableRun } from '../../debug/types';

/** Runs that `run_resume` takes (mirrors `RunRecord::resumable` in the engine). */
export function isResumable(r: DurableRun): boolean {
  return r.status === 'ready' || r.status === 'paused' || r.status === 'interrupted';
}

/** `YYYY-MM-DD HH:MM` in local time. */
export function formatUpdated(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** The file's name and its folder, for a narrow column (the full path is the title). */
export function shortFile(path: string): string {
  const parts = path.split(/[\\/]/).filter(Boolean);
  return parts.slice(-2).join('/');
}

export function RunsDialog() {
  const open = useDebug((s) => s.runsOpen);
  if (!open) return null;
  return <Dialog />;
}

function Dialog() {
  const dbg = useDebugStore();
  const runs = useDebug((s) => s.runs);
  const db = useDebug((s) => s.runsDb);
  const loading = useDebug((s) => s.runsLoading);
  const error = useDebug((s) => s.runsError);
  const changed = useDebug((s) => s.runsChanged);
  const starting = useDebug((s) => s.starting);
  const current = useDebug((s) => (s.mode === 'live' && s.status?.state !== 'finished' ? (s.info?.run ?? null) : null));

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') void dbg.getState().openRuns(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [dbg]);

  return (
    <div className="modal-backdrop">
      <div className="modal runs-dialog" role="dialog" aria-label="Durable runs" data-testid="runs-list">
        <h2>Durable runs</h2>
        <div className="muted small" data-testid="runs-db">
          {db ? `Run store: ${db}` : loading ? 'Loading…' : ''}
        </div>
        {runs.length === 0 && !loading ? (
          <div className="muted" data-testid="runs-empty">
            No durable runs yet. Tick “Durable run” in the run configuration to keep a run you can resume after closing the app.
          </div>
        ) : (
          <table className="runs-table">
            <thead>
              <tr>
                <th>Status</th>
                <th>Agent</th>
                <th>File</th>
                <th>Updated</th>
                <th>Step</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr key={r.id} data-testid="runs-row" data-id={r.id} data-status={r.status} title={r.id}>
                  <td>
                    <span className={`runs-status runs-${r.status}`}>{r.status}</span>
                    {r.pending ? <div className="muted small runs-question">{r.pending.prompt}</div> : null}
                    {r.error ? <div className="small rc-error runs-failure">{r.error}</div> : null}
                  </td>
                  <td>{r.agent}</td>
                  <td className="mono small" title={r.file}>
                    {shortFile(r.file)}
                  </td>
                  <td className="small">{formatUpdated(r.updated_ms)}</td>
                  <td>{r.step}</td>
                  <td className="runs-actions">
                    <button
                      type="button"
                      className="btn primary"
                      data-testid="runs-resume"
                      disabled={!isResumable(r) || starting || r.id === current}
                      title={r.id === current ? 'This run is in progress' : isResumable(r) ? 'Go on from the last checkpoint' : 'This run has ended'}
                      onClick={() => void dbg.getState().resumeRun(r.id)}
                    >
                      Resume
                    </button>
                    <button
                      type="button"
                      className="btn"
                      data-testid="runs-delete"
                      disabled={r.id === current}
                      onClick={() => void dbg.getState().deleteRun(r.id)}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {error ? (
          <div className="rc-error" data-testid="runs-error" role="alert">
            {error}
            {changed ? (
              <div>
                <button type="button" className="btn" data-testid="runs-force" onClick={() => void dbg.getState().resumeRun(changed, true)}>
                  Resume anyway
                </button>
              </div>
            ) : null}
          </div>
        ) : null}
        <div className="modal-actions">
          <button type="button" className="btn" data-testid="runs-refresh" onClick={() => void dbg.getState().loadRuns()}>
            Refresh
          </button>
          <div className="spacer" />
          <button type="button" className="btn" data-testid="runs-close" onClick={() => void dbg.getState().openRuns(false)}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
