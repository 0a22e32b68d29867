import { useApp, useAppStore } from '../store';
import type { Diagnostic } from '../types';

export function Problems() {
  const store = useAppStore();
  const diags = useApp((s) => s.view?.diagnostics);
  const list = diags ?? [];
  const errors = list.filter((d) => d.severity === 'error').length;
  const warnings = list.filter((d) => d.severity === 'warning').length;
  const jump = (d: Diagnostic) => {
    const st = store.getState();
    if (d.node && st.view?.nodes.some((n) => n.id === d.node)) st.select({ type: 'node', id: d.node }, { reveal: false, focus: true });
    st.revealLine(d.line, d.end_line, d.column);
  };
  return (
    <section className="problems" data-testid="problems">
      <div className="pane-title">
        Problems
        <span className="counts">
          <span className="sev-error">{errors} errors</span> · <span className="sev-warning">{warnings} warnings</span>
        </span>
      </div>
      {list.length === 0 ? <div className="muted small pad">No problems.</div> : null}
      <ul>
        {list.map((d, i) => (
          <li key={i}>
            <button type="button" data-testid="problem" className={`problem sev-${d.severity}`} onClick={() => jump(d)} title={d.hint ?? d.message}>
              <span className="sev-icon">{d.severity === 'error' ? '●' : d.severity === 'warning' ? '▲' : 'ℹ'}</span>
              <span className="msg">{d.message}</span>
              <span className="loc">
                {d.node ? `${d.node} · ` : ''}
                {d.line}:{d.column}
              </span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
