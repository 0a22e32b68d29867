// The run manifest dialog (README "Trust and safety"): what running the open document would
// execute, contact, read outside the project and take from the environment. Shown before the
// first run of a trusted folder and whenever the manifest changed (Confirm starts the run,
// Cancel runs nothing), and read-only from the restricted-mode banner's “What would run?”.
import { useEffect } from 'react';
import { itemPlace, manifestSections, useTrust, useTrustStore } from '../trust/store';

export function ManifestDialog() {
  const trust = useTrustStore();
  const dialog = useTrust((s) => s.manifest);
  const status = useTrust((s) => s.status);
  const busy = useTrust((s) => s.busy);
  const error = useTrust((s) => s.dialogError);

  useEffect(() => {
    if (!dialog) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') trust.getState().closeManifest();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [dialog, trust]);

  if (!dialog) return null;
  const m = status?.manifest ?? null;
  const readOnly = dialog.readOnly || !status?.trusted;
  return (
    <div className="modal-backdrop">
      <div
        className="modal manifest-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="manifest-title"
        data-testid="manifest-dialog"
        data-readonly={readOnly ? 'true' : 'false'}
        data-hash={m?.hash ?? ''}
      >
        <h2 id="manifest-title">{readOnly ? 'What running this agent would do' : 'Confirm what this run will do'}</h2>
        {!m ? (
          <div className="muted">Loading…</div>
        ) : (
          <>
            <div className="muted small">
              {status!.path} · project {m.root}
              {status!.trusted ? '' : ' (not trusted: running is blocked)'}
            </div>
            {!readOnly ? (
              <p className="small">
                {status!.confirmed
                  ? 'You confirmed this before.'
                  : 'This is the first run of this file, or what it runs changed since you last confirmed it.'}{' '}
                It runs as you, with your files.
              </p>
            ) : null}
            <p className="muted small" data-testid="manifest-env-note">
              The processes it starts (scripts, tools, Python, MCP servers) see only the environment variables listed under
              Environment variables, plus PATH, HOME, LANG, LC_*, TZ, TERM, TMPDIR, USER, LOGNAME, SHELL, Python&apos;s settings
              and the names in SWITCHYARD_CHILD_ENV.
            </p>
            <div className="manifest-sections">
              {manifestSections(m).map((s) => (
                <section key={s.key} className="manifest-section" data-testid="manifest-section" data-section={s.key}>
                  <h3>
                    {s.title} <span className="muted small">({s.items.length})</span>
                  </h3>
                  {s.items.length === 0 ? (
                    <div className="muted small">{s.empty}</div>
                  ) : (
                    <ul>
                      {s.items.map((i, n) => (
                        <li key={n} data-testid="manifest-item" data-kind={i.kind} data-what={i.what}>
                          <span className="manifest-kind">{i.kind}</span> <code className="mono manifest-what">{i.what}</code>
                          {i.detail ? <span className="muted small"> — {i.detail}</span> : null}
                          <span className="muted small manifest-at" title={i.file}>
                            {' '}
                            {itemPlace(i, m.root)}
                          </span>
                        </li>
                      ))}
                    </ul>
                  )}
                </section>
              ))}
            </div>
          </>
        )}
        {error ? (
          <div className="rc-error" role="alert" data-testid="manifest-error">
            {error}
          </div>
        ) : null}
        <div className="modal-actions">
          {status?.trusted ? (
            <button type="button" className="btn" data-testid="trust-forget" disabled={busy} onClick={() => void trust.getState().forget()} title={`Stop trusting ${status.trusted_by ?? status.root}`}>
              Stop trusting folder
            </button>
          ) : null}
          <div className="spacer" />
          <button type="button" className="btn" data-testid="manifest-cancel" onClick={() => trust.getState().closeManifest()}>
            {readOnly ? 'Close' : 'Cancel'}
          </button>
          {!readOnly ? (
            <button type="button" className="btn primary" data-testid="manifest-confirm" disabled={busy || !m} onClick={() => void trust.getState().confirmManifest()}>
              Confirm and run
            </button>
          ) : null}
        </div>
      </div>
    </div>
  );
}
