// The inspector of an LLLM config's nodes (engine: crates/editor/src/studio/lllm_view.rs). An
// agent shows its *effective* config — after `global` and the `base` chain — with where each value
// came from (the agent itself, `global`, a base config, LLLM's default); every edit goes to the
// engine as an op on the agent's own entry (crates/editor/src/edit/lllm.rs), so a value set here
// overrides what it inherited, and clearing it inherits again. `global` shows its values after the
// chain and the file's `base`; a base shows its file.
import { useMemo, useState } from 'react';
import { kindStyle } from '../flow';
import { parseNumber, parseStruct, structToText } from '../fieldValue';
import { useApp, useAppStore } from '../store';
import type { EditOp, JsonValue, PathSeg, SchemaField, SchemaType, ViewNode } from '../types';
import { NameInput } from './Inspector';
import './lllm.css';

/** Where a value was written (`model::doc::lllm::Origin`). */
export interface Origin {
  section: 'global' | 'agent' | 'default';
  config: string;
  file: string;
  line: number;
  column: number;
}

/** A value with its origin (`model::doc::lllm::PVal`): mappings keep one per key. */
export type PVal = { kind: 'value'; value: JsonValue; from: Origin } | { kind: 'map'; entries: Record<string, PVal>; from: Origin };

interface AgentData {
  config: Record<string, JsonValue> | null;
  file: string;
  from: Origin;
  effective: { config: Record<string, PVal>; model_args: Record<string, PVal> };
  moved_to_model_args: string[];
  replaced_lists: string[];
  prompt: { path: string; resolved: string | null } | null;
  skills: { entry: string; kind: string }[];
}

interface GlobalData {
  config: Record<string, JsonValue> | null;
  effective: Record<string, PVal>;
  file: string;
  base: string | null;
  agents_from: string | null;
  shape: string;
}

/** What kind of layer a value came from, seen from the node being inspected. */
export type OriginKind = 'own' | 'global' | 'base' | 'default';

/** A short label and kind of a value's origin, for the agent (or `global`) in `file`. */
export function describeOrigin(o: Origin, file: string, forGlobal = false): { kind: OriginKind; label: string; where: string } {
  const name = o.file.split(/[\\/]/).pop() ?? o.file;
  const where = o.section === 'default' ? 'not written anywhere: LLLM uses this by default' : `${name}:${o.line}`;
  if (o.section === 'default') return { kind: 'default', label: 'LLLM default', where };
  const here = o.file === file;
  if (o.section === 'agent') return here ? { kind: 'own', label: 'this agent', where } : { kind: 'base', label: `agent in ${o.config}`, where };
  if (here) return forGlobal ? { kind: 'own', label: 'this config', where } : { kind: 'global', label: 'global', where };
  return { kind: 'base', label: `global of ${o.config}`, where };
}

const plain = (p: PVal): JsonValue =>
  p.kind === 'value' ? p.value : Object.fromEntries(Object.entries(p.entries).map(([k, v]) => [k, plain(v)]));

/** The type a value is edited as: the schema's for agent keys, else from the value itself. */
function typeOf(key: string, value: JsonValue, fields: SchemaField[]): SchemaType {
  const f = fields.find((x) => x.name === key);
  if (f) return f.type;
  if (typeof value === 'number') return { kind: 'number' } as SchemaType;
  if (typeof value === 'string') return { kind: 'string' } as SchemaType;
  if (typeof value === 'boolean') return { kind: 'bool' } as SchemaType;
  return { kind: 'any' } as SchemaType;
}

/** Text typed for a value of `type` → the JSON to send, or an error to show. */
function parseValue(text: string, type: SchemaType): { value: JsonValue } | { error: string } {
  const t = text.trim();
  if (t === '') return { value: null };
  switch (type.kind) {
    case 'int':
    case 'number':
      return parseNumber(t, type);
    case 'bool':
      return t === 'true' || t === 'false' ? { value: t === 'true' } : { error: 'true or false' };
    case 'string':
    case 'enum':
    case 'path':
      return { value: t };
    case 'one_of':
      // `skills`: "*" or a list (one per line, or comma-separated).
      if (t === '*') return { value: '*' };
      if (!/^[[{-]/.test(t) && !t.includes('\n')) return { value: t.split(',').map((s) => s.trim()).filter(Boolean) };
      return parseStruct(t, type);
    case 'list':
      if (!/^[[{-]/.test(t) && !t.includes('\n')) return { value: t.split(',').map((s) => s.trim()).filter(Boolean) };
      return parseStruct(t, type);
    default: {
      const n = Number(t);
      if (/^-?\d/.test(t) && Number.isFinite(n)) return { value: n };
      if (t === 'true' || t === 'false') return { value: t === 'true' };
      return parseStruct(t, type);
    }
  }
}

function valueText(v: JsonValue, type: SchemaType): string {
  if (v == null) return '';
  if (Array.isArray(v) && (type.kind === 'list' || type.kind === 'one_of') && v.every((x) => typeof x === 'string')) return v.join(', ');
  if (typeof v === 'object') return structToText(v);
  return String(v);
}

interface RowProps {
  /** The key as shown and in test ids (`temperature`, `model_name`). */
  name: string;
  pval: PVal;
  type: SchemaType;
  file: string;
  forGlobal?: boolean;
  readOnly: boolean;
  /** Send the new value (null clears the node's own value). */
  onCommit(v: JsonValue): void;
}

/** One effective value: its key, where it came from, and an input that writes the node's own value. */
function ValueRow({ name, pval, type, file, forGlobal, readOnly, onCommit }: RowProps) {
  const store = useAppStore();
  const value = plain(pval);
  const initial = valueText(value, type);
  const [text, setText] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const o = describeOrigin(pval.from, file, forGlobal);
  const commit = () => {
    if (text === initial) return;
    const r = parseValue(text, type);
    if ('error' in r) return setError(r.error);
    setError(null);
    onCommit(r.value);
  };
  // Mappings and long or multi-line text (a system prompt) get a text area.
  const multiline = (typeof value === 'object' && value !== null && !Array.isArray(value)) || (typeof value === 'string' && (value.length > 36 || value.includes('\n')));
  const inputProps = {
    'data-testid': `lllm-value-${name}`,
    className: `input mono${error ? ' invalid' : ''}`,
    value: text,
    disabled: readOnly,
    spellCheck: false,
    onBlur: commit,
    'aria-label': `${name} (${o.label})`,
  };
  return (
    <div className={`lllm-row origin-${o.kind}`} data-testid={`lllm-row-${name}`} data-origin={o.kind}>
      <div className="lllm-row-head">
        <span className="lllm-key mono" title={name}>
          {name}
        </span>
        <button
          type="button"
          className={`lllm-origin origin-${o.kind}`}
          data-testid={`lllm-origin-${name}`}
          title={o.where}
          disabled={pval.from.file !== file || pval.from.line === 0}
          onClick={() => store.getState().revealLine(pval.from.line, pval.from.line, pval.from.column)}
        >
          {o.label}
        </button>
      </div>
      <div className="lllm-row-input">
        {type.kind === 'enum' ? (
          <select
            data-testid={`lllm-value-${name}`}
            className="input mono"
            value={text}
            disabled={readOnly}
            aria-label={`${name} (${o.label})`}
            onChange={(e) => {
              setText(e.target.value);
              if (e.target.value !== initial) onCommit(e.target.value === '' ? null : e.target.value);
            }}
          >
            {!(type.values ?? []).includes(text) ? <option value={text}>{text === '' ? '(unset)' : `${text} (unknown)`}</option> : null}
            {(type.values ?? []).map((x) => (
              <option key={x} value={x}>
                {x}
              </option>
            ))}
          </select>
        ) : multiline ? (
          <textarea {...inputProps} rows={Math.min(6, Math.max(2, text.split('\n').length))} onChange={(e) => setText(e.target.value)} />
        ) : (
          <input {...inputProps} onChange={(e) => setText(e.target.value)} onKeyDown={(e) => e.key === 'Enter' && commit()} />
        )}
        {o.kind === 'own' && !readOnly ? (
          <button type="button" className="btn icon lllm-clear" data-testid={`lllm-clear-${name}`} title={forGlobal ? 'Remove from this config' : 'Remove from this agent (inherit again)'} onClick={() => onCommit(null)}>
            ×
          </button>
        ) : null}
      </div>
      {error ? (
        <div className="field-error" data-testid={`lllm-error-${name}`} role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}

/** Suggestions for a key to set that is not in the effective config yet. */
const SAMPLING = ['temperature', 'max_tokens', 'top_p', 'seed', 'stop'];

function AddSetting({ fields, present, onAdd }: { fields: SchemaField[]; present: Set<string>; onAdd(key: string, value: JsonValue, isArg: boolean): void }) {
  const [key, setKey] = useState('');
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const keys = [...fields.map((f) => f.name).filter((k) => k !== 'name' && k !== 'model_args'), ...SAMPLING].filter((k) => !present.has(k));
  const add = () => {
    const k = key.trim();
    if (!k) return setError('type a key');
    const f = fields.find((x) => x.name === k);
    const r = parseValue(text, f ? f.type : ({ kind: 'any' } as SchemaType));
    if ('error' in r) return setError(r.error);
    if (r.value === null) return setError('type a value');
    setError(null);
    onAdd(k, r.value, !f);
    setKey('');
    setText('');
  };
  return (
    <div className="lllm-add">
      <div className="lllm-add-row">
        <input className="input mono" data-testid="lllm-add-key" list="lllm-add-keys" placeholder="key" value={key} spellCheck={false} onChange={(e) => setKey(e.target.value)} aria-label="Key to set" />
        <datalist id="lllm-add-keys">
          {keys.map((k) => (
            <option key={k} value={k} />
          ))}
        </datalist>
        <input className="input mono" data-testid="lllm-add-value" placeholder="value" value={text} spellCheck={false} onChange={(e) => setText(e.target.value)} onKeyDown={(e) => e.key === 'Enter' && add()} aria-label="Value" />
        <button type="button" className="btn" data-testid="lllm-add" onClick={add}>
          Set
        </button>
      </div>
      <div className="field-doc">an agent key (model_name, max_llm_recall, …) or a model argument (temperature, …)</div>
      {error ? (
        <div className="field-error" data-testid="lllm-add-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}

function Diagnostics({ node }: { node: ViewNode }) {
  const diags = useApp((s) => s.view?.diagnostics);
  const mine = useMemo(() => (diags ?? []).filter((d) => d.node === node.id), [diags, node.id]);
  if (mine.length === 0) return null;
  return (
    <ul className="insp-diags">
      {mine.map((d, i) => (
        <li key={i} className={`sev-${d.severity}`}>
          {d.message}
          {d.hint ? <div className="muted small">{d.hint}</div> : null}
        </li>
      ))}
    </ul>
  );
}

function Head({ node, rename }: { node: ViewNode; rename: boolean }) {
  const store = useAppStore();
  const style = kindStyle(node.kind);
  return (
    <>
      <div className="insp-head" style={{ '--kind': style.color } as React.CSSProperties}>
        <span className="sy-icon">{style.icon}</span>
        {rename ? <NameInput key={node.id} node={node} /> : <input data-testid="inspector-name" className="input name-input" value={node.id} disabled aria-label="Node name" />}
      </div>
      <div className="insp-meta">
        <span className="kind-pill">{node.kind}</span>
        {node.derived ? <span className="kind-pill derived">not written</span> : null}
        {node.line != null ? (
          <button type="button" className="link" onClick={() => store.getState().revealLine(node.line!, node.end_line ?? node.line!)}>
            lines {node.line}–{node.end_line ?? node.line}
          </button>
        ) : null}
        {node.sub_agent ? (
          <button type="button" className="link" data-testid="inspector-open-sub-agent" onClick={() => void store.getState().openPath(node.sub_agent!)}>
            open config ↗
          </button>
        ) : null}
      </div>
    </>
  );
}

function AgentInspector({ node, data }: { node: ViewNode; data: AgentData }) {
  const store = useAppStore();
  const fields = useApp((s) => s.view?.schema?.agent?.fields) ?? [];
  const edit = (op: EditOp) => void store.getState().edit(op);
  const here = data.config != null;
  const raw = data.config ?? {};
  const set = (path: PathSeg[], value: JsonValue) => edit({ op: 'set_field', node: node.id, path, value });
  const cfg = Object.entries(data.effective.config).filter(([k]) => k !== 'name');
  const args = Object.entries(data.effective.model_args);
  const present = new Set([...cfg.map(([k]) => k), ...args.map(([k]) => k)]);
  const baseFile = data.from.file.split(/[\\/]/).pop();
  const skills = (Array.isArray(data.skills) ? data.skills : []).filter((s) => s && typeof s === 'object' && typeof s.entry === 'string');
  return (
    <div className="inspector-body lllm-inspector" data-testid="lllm-inspector">
      <Head node={node} rename={here} />
      {!here ? (
        <p className="lllm-note" data-testid="lllm-from-base">
          Written in the base config <b>{data.from.config}</b> ({baseFile}); this config uses its agents.{' '}
          <button type="button" className="link" onClick={() => void store.getState().openPath(data.from.file)}>
            open {baseFile} ↗
          </button>
        </p>
      ) : null}
      <Diagnostics node={node} />
      <div className="lllm-legend">
        effective config · <span className="origin-own">this agent</span> <span className="origin-global">global</span> <span className="origin-base">base config</span>{' '}
        <span className="origin-default">LLLM default</span>
      </div>
      <section className="fields">
        <h3>Agent</h3>
        {cfg.map(([k, v]) => (
          <ValueRow key={`${k}:${JSON.stringify(plain(v))}`} name={k} pval={v} type={typeOf(k, plain(v), fields)} file={data.file} readOnly={!here} onCommit={(x) => set([k], x)} />
        ))}
      </section>
      <section className="fields">
        <h3>Model arguments</h3>
        {args.length === 0 ? <div className="muted small">none</div> : null}
        {args.map(([k, v]) => (
          <ValueRow
            key={`${k}:${JSON.stringify(plain(v))}`}
            name={k}
            pval={v}
            type={typeOf(k, plain(v), [])}
            file={data.file}
            readOnly={!here}
            // A key written outside model_args (here or in global) is sent on top of model_args:
            // only the agent's own key of that name overrides it.
            onCommit={(x) => set(data.moved_to_model_args.includes(k) || (k in raw && k !== 'model_args') ? [k] : ['model_args', k], x)}
          />
        ))}
        {data.moved_to_model_args.length > 0 ? (
          <div className="field-doc" data-testid="lllm-moved">
            not agent keys, sent as model arguments: {data.moved_to_model_args.join(', ')}
          </div>
        ) : null}
      </section>
      {here ? (
        <section className="fields">
          <h3>Set a value on this agent</h3>
          <AddSetting fields={fields} present={present} onAdd={(k, v, isArg) => set(isArg ? ['model_args', k] : [k], v)} />
        </section>
      ) : null}
      <section className="fields">
        <h3>Prompt</h3>
        {data.prompt ? (
          <div className="lllm-prompt" data-testid="lllm-prompt">
            <span className="mono">{data.prompt.path}</span>
            {data.prompt.resolved ? (
              <div className="field-doc mono">→ {data.prompt.resolved}</div>
            ) : (
              <div className="field-doc lllm-warn">not found in the package's prompt folders</div>
            )}
          </div>
        ) : typeof data.effective.config.system_prompt !== 'undefined' ? (
          <div className="field-doc">inline (system_prompt)</div>
        ) : (
          <div className="field-doc lllm-warn">no system prompt</div>
        )}
      </section>
      <section className="fields">
        <h3>Skills</h3>
        {skills.length === 0 ? <div className="muted small">none</div> : null}
        <ul className="lllm-skills" data-testid="lllm-skills">
          {skills.map((s) => (
            <li key={s.entry}>
              <span className="mono">{s.entry}</span> <span className="kind-pill">{String(s.kind).replace('_', ' ')}</span>
            </li>
          ))}
        </ul>
        {data.replaced_lists.length > 0 ? (
          <div className="field-doc" data-testid="lllm-replaced">
            {data.replaced_lists.join(', ')}: this agent's list replaces global's (lists never merge)
          </div>
        ) : null}
      </section>
      {here ? (
        <div className="insp-actions">
          <button type="button" className="btn danger" data-testid="delete-node" onClick={() => void store.getState().deleteSelection()}>
            Delete agent
          </button>
        </div>
      ) : null}
    </div>
  );
}

function GlobalInspector({ node, data }: { node: ViewNode; data: GlobalData }) {
  const store = useAppStore();
  const fields = useApp((s) => s.view?.schema?.global?.fields) ?? [];
  const edit = (op: EditOp) => void store.getState().edit(op);
  const set = (path: PathSeg[], value: JsonValue) => edit({ op: 'set_field', node: 'global', path, value });
  const entries = Object.entries(data.effective).filter(([k]) => k !== 'model_args');
  const args = data.effective.model_args?.kind === 'map' ? Object.entries(data.effective.model_args.entries) : [];
  const present = new Set([...entries.map(([k]) => k), ...args.map(([k]) => k)]);
  const [base, setBase] = useState(data.base ?? '');
  const commitBase = () => {
    const b = base.trim();
    if (b === (data.base ?? '')) return;
    edit({ op: 'set_doc_field', path: ['base'], value: b === '' ? null : b });
  };
  return (
    <div className="inspector-body lllm-inspector" data-testid="lllm-inspector">
      <Head node={node} rename={false} />
      <Diagnostics node={node} />
      <p className="field-doc">Defaults deep-merged into every agent (an agent's own value wins; lists replace).</p>
      <section className="fields">
        <h3>Config</h3>
        <label className="field">
          <span className="field-label">
            <span className="field-name">base</span>
            <span className="field-type">config</span>
          </span>
          <input
            className="input mono"
            data-testid="lllm-base"
            value={base}
            placeholder="(none)"
            spellCheck={false}
            onChange={(e) => setBase(e.target.value)}
            onBlur={commitBase}
            onKeyDown={(e) => e.key === 'Enter' && commitBase()}
          />
          <span className="field-doc">
            the config this one inherits from: <span className="mono">name</span> or <span className="mono">package:name</span>
          </span>
        </label>
        {data.agents_from && data.agents_from !== (data.file.split(/[\\/]/).pop() ?? '').replace(/\.ya?ml$/, '') ? (
          <div className="field-doc">agents from {data.agents_from}</div>
        ) : null}
      </section>
      <section className="fields">
        <h3>Defaults</h3>
        {entries.length === 0 && args.length === 0 ? <div className="muted small">none</div> : null}
        {entries.map(([k, v]) => (
          <ValueRow key={`${k}:${JSON.stringify(plain(v))}`} name={k} pval={v} type={typeOf(k, plain(v), fields)} file={data.file} forGlobal readOnly={false} onCommit={(x) => set([k], x)} />
        ))}
      </section>
      <section className="fields">
        <h3>Model arguments</h3>
        {args.map(([k, v]) => (
          <ValueRow key={`${k}:${JSON.stringify(plain(v))}`} name={k} pval={v} type={typeOf(k, plain(v), [])} file={data.file} forGlobal readOnly={false} onCommit={(x) => set(['model_args', k], x)} />
        ))}
      </section>
      <section className="fields">
        <h3>Set a default</h3>
        <AddSetting fields={fields} present={present} onAdd={(k, v, isArg) => set(isArg ? ['model_args', k] : [k], v)} />
      </section>
    </div>
  );
}

function BaseInspector({ node, data }: { node: ViewNode; data: { config: string; file: string } }) {
  const store = useAppStore();
  const nearest = useApp((s) => (s.view?.nodes.find((n) => n.id === 'global')?.data as GlobalData | null)?.base ?? null);
  return (
    <div className="inspector-body lllm-inspector" data-testid="lllm-inspector">
      <Head node={node} rename={false} />
      <p className="field-doc">
        A config of the <span className="mono">base</span> chain: its <span className="mono">global</span> and agents are inherited. File:
      </p>
      <div className="mono small lllm-file" data-testid="lllm-base-file">
        {data.file}
      </div>
      {nearest === data.config ? (
        <div className="insp-actions">
          <button type="button" className="btn" data-testid="lllm-unbase" onClick={() => void store.getState().edit({ op: 'delete_node', name: node.id })}>
            Stop inheriting
          </button>
        </div>
      ) : null}
    </div>
  );
}

/** The inspector of a node of an LLLM config. */
export function LllmInspector({ node }: { node: ViewNode }) {
  const data = node.data as unknown;
  if (node.kind === 'agent' && data && typeof data === 'object' && 'effective' in data) return <AgentInspector node={node} data={data as AgentData} />;
  if (node.kind === 'global' && data && typeof data === 'object' && 'effective' in data) return <GlobalInspector node={node} data={data as GlobalData} />;
  if (node.kind === 'base' && data && typeof data === 'object' && 'file' in data) return <BaseInspector node={node} data={data as { config: string; file: string }} />;
  return (
    <div className="inspector-body">
      <Head node={node} rename={false} />
      <p className="muted small">Nothing to edit here; edit it in the source view.</p>
    </div>
  );
}
