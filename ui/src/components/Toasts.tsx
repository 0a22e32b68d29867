import { useApp, useAppStore } from '../store';

export function Toasts() {
  const store = useAppStore();
  const toasts = useApp((s) => s.toasts);
  return (
    <div className="toasts" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} data-testid="toast" data-kind={t.kind} className={`toast ${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'}>
          <span className="toast-msg">{t.message}</span>
          <button type="button" className="icon-btn" aria-label="Dismiss" onClick={() => store.getState().dismissToast(t.id)}>
            ✕
          </button>
        </div>
      ))}
    </div>
  );
}
