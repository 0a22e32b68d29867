import { useApp, useAppStore } from '../store';
import { BundlePanel } from './BundlePanel';

export function EmptyState() {
  const store = useAppStore();
  const recent = useApp((s) => s.recent);
  const bundle = useApp((s) => s.bundle);
  if (bundle) {
    return (
      <div className="empty-state" data-testid="empty-state">
        <div className="empty-card bundle-card">
          <BundlePanel />
        </div>
      </div>
    );
  }
  return (
    <div className="empty-state" data-testid="empty-state">
      <div className="empty-card">
        <div className="empty-logo">⇄</div>
        <h1>Switchyard</h1>
        <p className="muted">Author, run and debug LLM agents written in sherma, Loki (coyote) or LLLM YAML.</p>
        <button type="button" className="btn primary big" data-testid="open-button" onClick={() => void store.getState().openDialog()}>
          Open agent…
        </button>{' '}
        <button type="button" className="btn big" data-testid="open-folder-button" onClick={() => void store.getState().openFolderDialog()}>
          Open folder…
        </button>
        <p className="drop-hint muted small">or drop a YAML file, a Loki agent folder or a coyote bundle folder onto this window · Ctrl+O</p>
        <h2>Recent</h2>
        <ul className="recent" data-testid="recent-list">
          {recent.length === 0 ? <li className="muted small">No recent files.</li> : null}
          {recent.map((p) => (
            <li key={p}>
              <button type="button" className="link" data-testid="recent-item" title={p} onClick={() => void store.getState().openPath(p)}>
                {p}
              </button>
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}
