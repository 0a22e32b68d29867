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

/** How often the server's runs are asked for while the list is open. */
export const REMOTE_POLL_MS = 1500;

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

  const connected = useDebug((s) => !!s.remote?.connected);
  useEffect(() => {
    if (!connected) return;
    void dbg.getState().loadRemote();
    const t = setInterval(() => void dbg.getState().loadRemote(), REMOTE_POLL_MS);
    return () => clearInterval(t);
  }, [dbg, connected]);

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
        <h2>Runs</h2>
        <h3 className="runs-section">On this computer (durable runs)</h3>
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
        <RemoteRuns current={current} />
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

/** The server's runs (live: asked again every REMOTE_POLL_MS while shown) and its assistants. */
function RemoteRuns({ current }: { current: string | null }) {
  const dbg = useDebugStore();
  const remote = useDebug((s) => s.remote);
  const runs = useDebug((s) => s.remoteRuns);
  const assistants = useDebug((s) => s.remoteAssistants);
  const error = useDebug((s) => s.remoteRunsError);
  const starting = useDebug((s) => s.starting);
  if (!remote?.connected) {
    return (
      <div className="runs-remote" data-testid="remote-runs">
        <h3 className="runs-section">On a server</h3>
        <div className="muted small">
          Not connected.{' '}
          <button type="button" className="btn" data-testid="runs-connect" onClick={() => void dbg.getState().openConnect(true)}>
            Connect to server…
          </button>
        </div>
      </div>
    );
  }
  return (
    <div className="runs-remote" data-testid="remote-runs" data-url={remote.url ?? ''}>
      <h3 className="runs-section">
        On the server <span className="mono">{remote.url}</span>
      </h3>
      {runs.length === 0 ? (
        <div className="muted small" data-testid="remote-runs-empty">
          No runs on the server yet.
        </div>
      ) : (
        <table className="runs-table">
          <thead>
            <tr>
              <th>Status</th>
              <th>Assistant</th>
              <th>Updated</th>
              <th>Step</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.run_id} data-testid="remote-run-row" data-id={r.run_id} data-status={r.status} title={r.run_id}>
                <td>
                  <span className={`runs-status runs-${r.status}`}>{r.status}</span>
                  {r.question ? <div className="muted small runs-question">{r.question.prompt}</div> : null}
                  {r.error ? <div className="small rc-error runs-failure">{r.error}</div> : null}
                </td>
                <td>{r.assistant}</td>
                <td className="small">{r.updated_at ? formatUpdated(Date.parse(r.updated_at)) : ''}</td>
                <td>{r.step ?? ''}</td>
                <td className="runs-actions">
                  <button
                    type="button"
                    className="btn primary"
                    data-testid="remote-run-open"
                    disabled={starting || r.run_id === current}
                    title={r.run_id === current ? 'This run is shown in the debugger' : 'Show this run in the debugger (live)'}
                    onClick={() => void dbg.getState().openRemoteRun(r.run_id)}
                  >
                    Open
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {assistants.length ? (
        <div className="runs-assistants small" data-testid="remote-assistants">
          <span className="muted">New run of: </span>
          {assistants.map((a) => (
            <button
              type="button"
              key={a.assistant_id}
              className="btn"
              data-testid="remote-assistant-open"
              data-id={a.graph_id}
              title={`Open ${a.graph_id}'s agent (read-only), set breakpoints, then Run (F5) starts it on the server`}
              onClick={() => void dbg.getState().openRemoteAssistant(a.assistant_id)}
            >
              {a.graph_id}
            </button>
          ))}
        </div>
      ) : null}
      {error ? (
        <div className="rc-error" data-testid="remote-runs-error" role="alert">
          {error}
        </div>
      ) : null}
      <div className="small">
        <button type="button" className="btn" data-testid="runs-connect" onClick={() => void dbg.getState().openConnect(true)}>
          Server…
        </button>
      </div>
    </div>
  );
}
