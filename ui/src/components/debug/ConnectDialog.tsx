// Connect to server…: a `switchyard serve` server's URL and token (docs/app-contract.md §5.4).
// The token goes to the OS keyring through the shell (`remote_connect`), never to a file or to
// the page's storage; the URL is remembered. Unreachable servers and refused tokens say so.
import { useEffect, useState } from 'react';
import '../../debug/debug.css';
import { useDebug, useDebugStore } from '../../debug/store';

export function ConnectDialog() {
  const open = useDebug((s) => s.connectOpen);
  if (!open) return null;
  return <Dialog />;
}

function Dialog() {
  const dbg = useDebugStore();
  const remote = useDebug((s) => s.remote);
  const connecting = useDebug((s) => s.connecting);
  const error = useDebug((s) => s.connectError);
  const [url, setUrl] = useState(remote?.url ?? '');
  const [token, setToken] = useState('');
  const [touched, setTouched] = useState(false);
  // The remembered URL arrives after the dialog opened.
  useEffect(() => {
    if (!touched && remote?.url) setUrl(remote.url);
  }, [remote?.url, touched]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') void dbg.getState().openConnect(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [dbg]);
  const submit = () => void dbg.getState().connectRemote(url, token || null);
  return (
    <div className="modal-backdrop">
      <form
        className="modal connect-dialog"
        role="dialog"
        aria-label="Connect to server"
        data-testid="connect-dialog"
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <h2>Connect to server</h2>
        <p className="muted small">
          A <code>switchyard serve</code> server: its runs appear in Runs… beside this computer’s, and open in the debugger.
        </p>
        <label className="rc-field">
          <span>URL</span>
          <input
            data-testid="connect-url"
            className="mono"
            placeholder="http://127.0.0.1:8123"
            value={url}
            autoFocus
            onChange={(e) => {
              setTouched(true);
              setUrl(e.target.value);
            }}
          />
        </label>
        <label className="rc-field">
          <span>Token</span>
          <input
            data-testid="connect-token"
            type="password"
            autoComplete="off"
            placeholder={remote?.connected && remote.token ? 'kept in the OS keyring' : 'none (loopback servers without tokens)'}
            value={token}
            onChange={(e) => setToken(e.target.value)}
          />
        </label>
        <div className="muted small">
          The token is kept in the OS keyring (like provider keys), never in a file. Leave it empty to use the one stored for this URL.
        </div>
        {error ? (
          <div className="rc-error" role="alert" data-testid="connect-error">
            {error}
          </div>
        ) : null}
        <div className="modal-actions">
          {remote?.connected ? (
            <button type="button" className="btn" data-testid="connect-disconnect" onClick={() => void dbg.getState().disconnectRemote()}>
              Disconnect
            </button>
          ) : null}
          <div className="spacer" />
          <button type="button" className="btn" data-testid="connect-cancel" onClick={() => void dbg.getState().openConnect(false)}>
            Cancel
          </button>
          <button type="submit" className="btn primary" data-testid="connect-submit" disabled={connecting || !url.trim()}>
            {connecting ? 'Connecting…' : 'Connect'}
          </button>
        </div>
      </form>
    </div>
  );
}
