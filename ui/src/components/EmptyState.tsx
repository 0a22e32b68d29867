import { useApp, useAppStore } from '../store';

export function EmptyState() {
  const store = useAppStore();
  const recent = useApp((s) => s.recent);
  return (
    <div className="empty-state" data-testid="empty-state">
      <div className="empty-card">
        <div className="empty-logo">⇄</div>
        <h1>Switchyard</h1>
        <p className="muted">Author LLM agent graphs in sherma or Loki YAML.</p>
        <button type="button" className="btn primary big" data-testid="open-button" onClick={() => void store.getState().openDialog()}>
          Open agent…
        </button>
        <p className="drop-hint muted small">or drop a YAML file or a Loki agent folder onto this window · Ctrl+O</p>
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
