import { useEffect, useMemo, useRef, useState } from 'react';
import { BUILTIN_CONDITIONS } from '../fieldValue';
import type { ExprError } from '../types';
import { useApp, useAppStore } from '../store';
import type { ViewEdge, ViewNode } from '../types';

export interface BranchEditorProps {
  node: ViewNode;
}

function ConditionInput({ value, index, disabled, cel, onCommit }: { value: string; index: number; disabled: boolean; cel: boolean; onCommit(v: string): void }) {
  const store = useAppStore();
  const [text, setText] = useState(value);
  const [errors, setErrors] = useState<ExprError[]>([]);
  const seq = useRef(0);
  // sherma conditions are CEL: check them as the user types (Loki route options are plain text).
  useEffect(() => {
    if (!cel || disabled || text === value || BUILTIN_CONDITIONS.has(text.trim()) || text.trim() === '') {
      setErrors([]);
      return;
    }
    const my = ++seq.current;
    const t = window.setTimeout(async () => {
      const errs = await store.getState().checkExpr('cel', text);
      if (my === seq.current) setErrors(Array.isArray(errs) ? errs : []);
    }, 300);
    return () => window.clearTimeout(t);
  }, [text, value, cel, disabled, store]);
  const commit = () => {
    if (text.trim() !== '' && text !== value) onCommit(text);
  };
  return (
    <>
    <input
      data-testid={`branch-condition-${index}`}
      className="input mono"
      value={text}
      disabled={disabled}
      spellCheck={false}
      onChange={(e) => setText(e.target.value)}
      onBlur={commit}
      onKeyDown={(e) => e.key === 'Enter' && commit()}
    />
    {errors.length > 0 ? (
      <div className="field-error" data-testid={`branch-error-${index}`} role="alert">
        {errors.map((e) => e.message).join('; ')}
      </div>
    ) : null}
    </>
  );
}

/** Ordered branches (sherma conditional edges) or routes (Loki approval) of one node. */
export function BranchEditor({ node }: BranchEditorProps) {
  const store = useAppStore();
  const edges = useApp((s) => s.view?.edges);
  const nodes = useApp((s) => s.view?.nodes);
  const dialect = useApp((s) => s.view?.dialect ?? null);
  const loki = dialect === 'loki';

  const branches = useMemo(() => {
    const out = (edges ?? []).filter((e) => e.from === node.id && (e.kind === 'branch' || e.kind === 'route'));
    return out.sort((a, b) => (a.index ?? a.order ?? 0) - (b.index ?? b.order ?? 0));
  }, [edges, node.id]);
  const defaultEdge = useMemo(() => (edges ?? []).find((e) => e.from === node.id && e.kind === 'default'), [edges, node.id]);
  const targets = useMemo(() => {
    const ids = (nodes ?? []).filter((n) => !n.derived && n.kind !== '__start__').map((n) => n.id);
    if (!loki && !ids.includes('__end__')) ids.push('__end__');
    return ids;
  }, [nodes, loki]);

  // Loki: only approval nodes have routes. sherma: any authored node may branch.
  if (node.derived || (loki && node.kind !== 'approval')) return null;

  const edit = store.getState().edit;
  const editable = (e: ViewEdge) => e.kind === 'route' || !e.derived;
  const idx = (e: ViewEdge, i: number) => e.index ?? i;

  const add = () => {
    const to = loki ? targets.find((t) => t !== node.id) ?? node.id : '__end__';
    const condition = loki ? `option${branches.length + 1}` : 'false';
    void edit({ op: 'add_branch', from: node.id, condition, to });
  };

  return (
    <section className="branches" data-testid="branch-editor">
      <h3>{loki ? 'Routes' : 'Branches'}</h3>
      {branches.length === 0 ? <div className="muted small">No {loki ? 'routes' : 'branches'} yet.</div> : null}
      <ol className="branch-list">
        {branches.map((e, i) => {
          const index = idx(e, i);
          const ro = !editable(e);
          return (
            <li key={e.id} className={`branch${ro ? ' derived' : ''}`} data-testid="branch">
              <ConditionInput
                key={`${e.id}:${e.label ?? ''}`}
                value={e.label ?? ''}
                index={index}
                disabled={ro}
                cel={!loki}
                onCommit={(condition) => void edit({ op: 'set_branch', from: node.id, index, condition })}
              />
              <div className="branch-row">
                <span className="arrow">→</span>
                <select
                  data-testid={`branch-target-${index}`}
                  className="input"
                  value={e.to}
                  disabled={ro}
                  onChange={(ev) => void edit({ op: 'set_branch', from: node.id, index, to: ev.target.value })}
                >
                  {!targets.includes(e.to) ? <option value={e.to}>{e.to}</option> : null}
                  {targets.map((t) => (
                    <option key={t} value={t}>
                      {t}
                    </option>
                  ))}
                </select>
                <button type="button" className="icon-btn" title="Move up" data-testid={`branch-up-${index}`} disabled={ro || i === 0} onClick={() => void edit({ op: 'move_branch', from: node.id, index, to_index: index - 1 })}>
                  ↑
                </button>
                <button type="button" className="icon-btn" title="Move down" data-testid={`branch-down-${index}`} disabled={ro || i === branches.length - 1} onClick={() => void edit({ op: 'move_branch', from: node.id, index, to_index: index + 1 })}>
                  ↓
                </button>
                <button type="button" className="icon-btn danger" title="Remove" data-testid={`branch-remove-${index}`} disabled={ro} onClick={() => void edit({ op: 'remove_branch', from: node.id, index })}>
                  ✕
                </button>
              </div>
              {ro ? <div className="muted small">derived (auto-injected); not editable here</div> : null}
            </li>
          );
        })}
      </ol>
      <button type="button" className="btn" data-testid="add-branch" onClick={add}>
        + Add {loki ? 'route' : 'branch'}
      </button>
      {!loki ? (
        <label className="field default-row">
          <span className="field-label">
            <span className="field-name">default</span>
          </span>
          <select
            data-testid="branch-default"
            className="input"
            value={defaultEdge?.to ?? ''}
            onChange={(ev) => void edit({ op: 'set_default', from: node.id, to: ev.target.value === '' ? null : ev.target.value })}
          >
            <option value="">(none)</option>
            {defaultEdge && !targets.includes(defaultEdge.to) ? <option value={defaultEdge.to}>{defaultEdge.to}</option> : null}
            {targets.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
      ) : null}
    </section>
  );
}
