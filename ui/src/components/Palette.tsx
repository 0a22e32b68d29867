import { kindStyle } from '../flow';
import { useApp, useAppStore } from '../store';

/** A node name not used yet: `<kind>`, `<kind>_2`, ... */
export function freshName(kind: string, taken: Set<string>): string {
  const base = kind.replace(/[^A-Za-z0-9_]/g, '_');
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

export function Palette() {
  const store = useAppStore();
  const kinds = useApp((s) => s.view?.node_kinds);
  const add = (kind: string) => {
    const st = store.getState();
    const taken = new Set((st.view?.nodes ?? []).map((n) => n.id));
    const sel = st.selection?.type === 'node' ? st.selection.id : undefined;
    const selNode = sel ? st.view?.nodes.find((n) => n.id === sel) : undefined;
    const op = { op: 'add_node' as const, name: freshName(kind, taken), kind, ...(selNode && !selNode.derived ? { after: selNode.id } : {}) };
    void st.edit(op);
  };
  return (
    <nav className="palette" data-testid="palette">
      <div className="pane-title">Nodes</div>
      {(kinds ?? []).map((k) => {
        const s = kindStyle(k);
        return (
          <button type="button" key={k} className="palette-item" data-testid={`palette-${k}`} onClick={() => add(k)} title={`Add a ${k} node`} style={{ '--kind': s.color } as React.CSSProperties}>
            <span className="sy-icon">{s.icon}</span>
            <span>{k}</span>
          </button>
        );
      })}
      <div className="palette-hint muted small">Click to add. Drag from a node's bottom handle to another node to connect.</div>
    </nav>
  );
}
