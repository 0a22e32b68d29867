// Restricted mode (README "Trust and safety"): the banner under the toolbar while the open
// document's folder is not trusted, and the “Trust folder…” question.
import { manifestSummary, useTrust, useTrustStore } from '../trust/store';
import { useApp } from '../store';
import { isRemotePath } from '../debug/types';

/** Shown while the open document's folder is not trusted: what works, that running is blocked,
 *  “Trust folder…” and “What would run?”. */
export function TrustBanner() {
  const trust = useTrustStore();
  const status = useTrust((s) => s.status);
  const error = useTrust((s) => s.error);
  // A server's agent file (read-only) runs on the server, under the server's trust.
  const remote = useApp((s) => isRemotePath(s.view?.path));
  if (remote) return null;
  if (!status || status.trusted) {
    return error ? (
      <div className="trust-banner warn" role="alert" data-testid="trust-error">
        Cannot tell whether this folder is trusted: {error}
      </div>
    ) : null;
  }
  return (
    <div className="trust-banner" role="alert" data-testid="trust-banner" data-root={status.root}>
      {/* One line on a laptop: what matters first; the rest is cut (the tooltip holds it all). */}
      <span
        className="trust-text"
        title={`Restricted mode: the folder ${status.root} is not trusted. Running (Run, Step, Restart, Resume) is blocked until you trust the folder. You can open, validate, edit, save, view and export its agents and open a trace.`}
      >
        <strong>Restricted mode:</strong> the folder <code className="mono">{status.root}</code> is not trusted; running (Run, Step,
        Restart, Resume) is blocked until you trust the folder. You can open, validate, edit, save, view and export its agents and
        open a trace.
      </span>
      <button type="button" className="link" data-testid="trust-what" onClick={() => trust.getState().showManifest(true)}>
        What would run?
      </button>
      {status.error ? <span className="trust-warn"> The trust list cannot be read: {status.error}</span> : null}
      <div className="spacer" />
      <button type="button" className="btn primary" data-testid="trust-folder" onClick={() => trust.getState().askTrust(true)}>
        Trust folder…
      </button>
    </div>
  );
}

/** “Trust folder…”: names the folder and sums up what its agent would run before trusting it. */
export function TrustQuestion() {
  const trust = useTrustStore();
  const asking = useTrust((s) => s.asking);
  const status = useTrust((s) => s.status);
  const busy = useTrust((s) => s.busy);
  const error = useTrust((s) => s.dialogError);
  if (!asking || !status) return null;
  const summary = manifestSummary(status.manifest);
  return (
    <div className="modal-backdrop">
      <div className="modal trust-dialog" role="dialog" aria-modal="true" aria-labelledby="trust-ask-title" data-testid="trust-ask">
        <h2 id="trust-ask-title">Trust the folder {status.root}?</h2>
        <p>
          Trusting it lets Switchyard run what the agent files in it (and in every folder under it) name — scripts, tools,
          MCP servers, Python imports, hooks — as you, with your files and your environment, and contact the hosts they name.
          Only trust folders whose contents you know.
        </p>
        <div className="muted small">Running {status.path.split('/').pop()} would:</div>
        {summary.length ? (
          <ul className="trust-summary" data-testid="trust-ask-summary">
            {summary.map((l) => (
              <li key={l}>{l}</li>
            ))}
          </ul>
        ) : (
          <div className="trust-summary" data-testid="trust-ask-summary">
            execute nothing, contact nobody and read nothing outside the project.
          </div>
        )}
        <div className="muted small">Before the first run you will see the full run manifest and confirm it.</div>
        {error ? (
          <div className="rc-error" role="alert" data-testid="trust-ask-error">
            {error}
          </div>
        ) : null}
        <div className="modal-actions">
          <button type="button" className="btn" data-testid="trust-ask-manifest" onClick={() => trust.getState().showManifest(true)}>
            What would run?
          </button>
          <div className="spacer" />
          <button type="button" className="btn" data-testid="trust-ask-cancel" onClick={() => trust.getState().askTrust(false)}>
            Cancel
          </button>
          <button type="button" className="btn primary" data-testid="trust-ask-confirm" disabled={busy} onClick={() => void trust.getState().trustFolder()}>
            Trust folder
          </button>
        </div>
      </div>
    </div>
  );
}
