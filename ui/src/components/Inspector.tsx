import { useMemo, useState } from 'react';
import { kindStyle } from '../flow';
import { removeEdgeOp, selectSelectedEdge, selectSelectedNode, useApp, useAppStore } from '../store';
import type { JsonValue, PathSeg, SchemaField, ViewNode } from '../types';
import { BranchEditor } from './BranchEditor';
import { FieldEditor } from './FieldEditor';
import { LllmInspector } from './LllmInspector';
import { DiffFields } from '../diff/DiffFields';

/** Loki fields that are not edited as plain fields (the key is the id; the type is fixed). */
const HIDDEN_FIELDS = new Set(['id', 'type']);

export function NameInput({ node }: { node: ViewNode }) {
  const store = useAppStore();
  const [text, setText] = useState(node.id);
  return (
    <input
      data-testid="inspector-name"
      className="input name-input"
      value={text}
      disabled={node.derived}
      spellCheck={false}
      onChange={(e) => setText(e.target.value)}
      onKeyDown={(e) => {
        if (e.key === 'Enter') void store.getState().renameNode(node.id, text);
        if (e.key === 'Escape') setText(node.id);
      }}
      onBlur={() => setText(node.id)}
      aria-label="Node name (Enter renames)"
    />
  );
}

function getIn(obj: unknown, path: PathSeg[]): unknown {
  let cur = obj;
  for (const p of path) {
    if (cur == null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[p as string];
  }
  return cur;
}

function NodeInspector({ node }: { node: ViewNode }) {
  const store = useAppStore();
  const dialect = useApp((s) => s.view?.dialect ?? null);
  const schema = useApp((s) => s.view?.schema?.[node.kind]);
  const nodes = useApp((s) => s.view?.nodes);
  const diags = useApp((s) => s.view?.diagnostics);
  const nodeIds = useMemo(() => {
    const ids = (nodes ?? []).filter((n) => !n.derived && n.kind !== '__start__').map((n) => n.id);
    if (dialect === 'sherma' && !ids.includes('__end__')) ids.push('__end__');
    return ids;
  }, [nodes, dialect]);
  const mine = useMemo(() => (diags ?? []).filter((d) => d.node === node.id), [diags, node.id]);
  const base: PathSeg[] = dialect === 'sherma' ? ['args'] : [];
  const style = kindStyle(node.kind);

  const commit = (field: SchemaField) => (value: JsonValue) =>
    void store.getState().edit({ op: 'set_field', node: node.id, path: [...base, field.name], value });

  const fields = (schema?.fields ?? []).filter((f) => !(dialect !== 'sherma' && HIDDEN_FIELDS.has(f.name)));
  const known = new Set((schema?.fields ?? []).map((f) => f.name));
  const values = getIn(node.data, base);
  const extra =
    values && typeof values === 'object' && !Array.isArray(values)
      ? Object.keys(values as object).filter((k) => !known.has(k) && !(dialect !== 'sherma' && HIDDEN_FIELDS.has(k)))
      : [];

  return (
    <div className="inspector-body">
      <div className="insp-head" style={{ '--kind': style.color } as React.CSSProperties}>
        <span className="sy-icon">{style.icon}</span>
        <NameInput key={node.id} node={node} />
      </div>
      <div className="insp-meta">
        <span className="kind-pill">{node.kind}</span>
        {node.derived ? <span className="kind-pill derived">derived</span> : null}
        {node.line != null ? (
          <button type="button" className="link" onClick={() => store.getState().revealLine(node.line!, node.end_line ?? node.line!)}>
            lines {node.line}–{node.end_line ?? node.line}
          </button>
        ) : null}
        {node.sub_agent ? (
          <button type="button" className="link" data-testid="inspector-open-sub-agent" onClick={() => void store.getState().openPath(node.sub_agent!)}>
            open sub-agent ↗
          </button>
        ) : null}
      </div>
      {node.summary ? <div className="insp-summary">{node.summary}</div> : null}
      <DiffFields id={node.id} />
      {mine.length > 0 ? (
        <ul className="insp-diags">
          {mine.map((d, i) => (
            <li key={i} className={`sev-${d.severity}`}>
              {d.message}
              {d.hint ? <div className="muted small">{d.hint}</div> : null}
            </li>
          ))}
        </ul>
      ) : null}
      {node.derived ? (
        <p className="muted small">This node is derived from other parts of the file (auto-injected or implicit). Edit its source instead.</p>
      ) : (
        <>
          <section className="fields">
            <h3>{dialect === 'sherma' ? 'Arguments' : 'Fields'}</h3>
            {!schema ? <div className="muted small">No schema for kind “{node.kind}”. Edit it in the source view.</div> : null}
            {fields.map((f) => {
              const v = getIn(values, [f.name]);
              return <FieldEditor key={`${node.id}:${f.name}:${JSON.stringify(v) ?? ''}`} field={f} value={v} nodeIds={nodeIds} onCommit={commit(f)} />;
            })}
            {extra.map((k) => {
              const v = getIn(values, [k]);
              const f: SchemaField = { name: k, type: { kind: 'any' }, required: false, doc: 'not in the schema' };
              return <FieldEditor key={`${node.id}:${k}:${JSON.stringify(v) ?? ''}`} field={f} value={v} nodeIds={nodeIds} onCommit={commit(f)} />;
            })}
          </section>
          {dialect === 'sherma' ? (
            <section className="fields">
              <h3>On error</h3>
              <label className="field">
                <span className="field-label">
                  <span className="field-name">fallback</span>
                  <span className="field-type">node_ref</span>
                </span>
                <select
                  data-testid="field-fallback"
                  className="input"
                  value={String(getIn(node.data, ['on_error', 'fallback']) ?? '')}
                  onChange={(e) =>
                    void store.getState().edit({ op: 'set_field', node: node.id, path: ['on_error', 'fallback'], value: e.target.value === '' ? null : e.target.value })
                  }
                >
                  <option value="">(none)</option>
                  {nodeIds.map((id) => (
                    <option key={id} value={id}>
                      {id}
                    </option>
                  ))}
                </select>
                <span className="field-doc">node to route to when this node fails</span>
              </label>
            </section>
          ) : null}
          <BranchEditor node={node} />
          <div className="insp-actions">
            <button type="button" className="btn danger" data-testid="delete-node" onClick={() => void store.getState().deleteSelection()}>
              Delete node
            </button>
          </div>
        </>
      )}
    </div>
  );
}

export function Inspector() {
  const node = useApp(selectSelectedNode);
  const edge = useApp(selectSelectedEdge);
  const dialect = useApp((s) => s.view?.dialect ?? null);
  const store = useAppStore();
  return (
    <aside className="inspector" data-testid="inspector">
      <div className="pane-title">Inspector</div>
      {node && dialect === 'lllm' ? (
        <LllmInspector key={node.id} node={node} />
      ) : node ? (
        <NodeInspector key={node.id} node={node} />
      ) : edge ? (
        <div className="inspector-body">
          <div className="insp-head">
            <span className="mono">
              {edge.from} → {edge.to}
            </span>
          </div>
          <div className="insp-meta">
            <span className="kind-pill">{edge.kind}</span>
            {edge.derived ? <span className="kind-pill derived">derived</span> : null}
            {edge.dynamic ? <span className="kind-pill dynamic">dynamic</span> : null}
            {edge.fanout ? <span className="kind-pill">fan-out</span> : null}
          </div>
          {edge.label ? <div className="insp-summary mono">{edge.label}</div> : null}
          <div className="insp-actions">
            <button type="button" className="btn danger" data-testid="delete-edge" onClick={() => void store.getState().edit(removeEdgeOp(edge))}>
              Delete edge
            </button>
          </div>
        </div>
      ) : (
        <div className="inspector-body muted small">Select a node or an edge to edit it.</div>
      )}
    </aside>
  );
}
