// A coyote bundle's agents (docs/app-contract.md §3, "Bundles"): shown on the empty screen once a
// bundle folder is opened, and as a switcher in the header while one of its agents is open.
import type { BundleAgentView } from '../contract/shell';
import { useApp, useAppStore } from '../store';

function fileName(p: string): string {
  return p.split('/').pop() ?? p;
}

export function BundlePanel() {
  const store = useAppStore();
  const bundle = useApp((s) => s.bundle);
  if (!bundle) return null;
  const errors = bundle.diagnostics.filter((d) => d.severity === 'error').length;
  const warnings = bundle.diagnostics.length - errors;
  const open = (a: BundleAgentView) => void store.getState().openPath(a.file);
  return (
    <section className="bundle-panel" data-testid="bundle-panel" aria-label={`Bundle ${bundle.name}`}>
      <header className="bundle-head">
        <div>
          <h2 data-testid="bundle-name">
            {bundle.name}
            {bundle.version ? <span className="muted small"> {bundle.version}</span> : null}
          </h2>
          <p className="muted small" title={bundle.root}>
            coyote bundle · {bundle.agents.length} agent{bundle.agents.length === 1 ? '' : 's'}
            {bundle.manifest ? ' · coyote-bundle.yaml' : ''}
          </p>
          {bundle.description ? <p className="small">{bundle.description}</p> : null}
        </div>
        <button type="button" className="btn" data-testid="bundle-close" onClick={() => void store.getState().closeBundle()} title="Close the bundle">
          ✕
        </button>
      </header>
      {bundle.diagnostics.length > 0 ? (
        <ul className="bundle-problems" data-testid="bundle-problems">
          {bundle.diagnostics.map((d, i) => (
            <li key={i} className={d.severity === 'error' ? 'err' : 'warn'} title={d.hint ?? undefined}>
              {fileName(d.file)}
              {d.line > 0 ? `:${d.line}:${d.column}` : ''} {d.message}
            </li>
          ))}
          <li className="muted small">
            {errors} error{errors === 1 ? '' : 's'}, {warnings} warning{warnings === 1 ? '' : 's'}
          </li>
        </ul>
      ) : null}
      <ul className="bundle-agents" data-testid="bundle-agents">
        {bundle.agents.map((a) => (
          <li key={a.name}>
            <button type="button" className="bundle-agent" data-testid="bundle-agent" data-agent={a.name} data-kind={a.kind} title={a.file} onClick={() => open(a)}>
              <span className={`bundle-kind ${a.kind}`}>{a.kind === 'graph' ? 'graph' : 'config'}</span>
              <span className="bundle-agent-name">{a.name}</span>
              {a.scripts ? <span className="muted small"> scripts/</span> : null}
              {a.tools ? <span className="muted small"> {fileName(a.tools)}</span> : null}
              {a.description ? <span className="bundle-agent-desc muted small">{a.description}</span> : null}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** In the header while a document is open and a bundle is: switch to another of its agents. */
export function BundleSwitcher() {
  const store = useAppStore();
  const bundle = useApp((s) => s.bundle);
  const path = useApp((s) => s.view?.path ?? null);
  if (!bundle || !path) return null;
  const current = bundle.agents.find((a) => a.file === path)?.file ?? '';
  return (
    <select
      className="bundle-switcher"
      data-testid="bundle-switcher"
      value={current}
      title={`Agents of the bundle ${bundle.name}`}
      onChange={(e) => {
        if (e.target.value) void store.getState().openPath(e.target.value);
      }}
    >
      <option value="">{bundle.name}: agents…</option>
      {bundle.agents.map((a) => (
        <option key={a.name} value={a.file}>
          {a.name} ({a.kind})
        </option>
      ))}
    </select>
  );
}
