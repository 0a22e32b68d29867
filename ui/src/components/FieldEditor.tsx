import { useEffect, useRef, useState } from 'react';
import { useAppStore } from '../store';
import { BUILTIN_CONDITIONS, STRUCT_KINDS, exprKind, parseNumber, parseStruct, structToText } from '../fieldValue';
import type { ExprError, JsonValue, SchemaField } from '../types';

export interface FieldEditorProps {
  field: SchemaField;
  value: unknown;
  nodeIds: string[];
  /** Commit a new value (null removes the key). */
  onCommit(value: JsonValue): void;
}

const CHECK_DELAY_MS = 300;

/** An expression (CEL / template) editor with as-you-type syntax checking through the engine. */
function ExprInput({ field, value, onCommit }: FieldEditorProps) {
  const store = useAppStore();
  const initial = typeof value === 'string' ? value : value == null ? '' : JSON.stringify(value);
  const [text, setText] = useState(initial);
  const [errors, setErrors] = useState<ExprError[]>([]);
  const seq = useRef(0);
  const kind = exprKind(field.type.kind)!;

  useEffect(() => {
    const t = text.trim();
    if (t === '' || (field.type.kind === 'cel_condition' && BUILTIN_CONDITIONS.has(t))) {
      setErrors([]);
      return;
    }
    const my = ++seq.current;
    const timer = window.setTimeout(async () => {
      const errs = await store.getState().checkExpr(kind, text);
      if (my === seq.current) setErrors(Array.isArray(errs) ? errs : []);
    }, CHECK_DELAY_MS);
    return () => window.clearTimeout(timer);
  }, [text, kind, field.type.kind, store]);

  const commit = () => {
    if (text === initial) return;
    onCommit(text === '' && !field.required ? null : text);
  };

  return (
    <>
      <textarea
        data-testid={`field-${field.name}`}
        className={`input mono${errors.length ? ' invalid' : ''}`}
        value={text}
        rows={Math.min(6, Math.max(1, text.split('\n').length))}
        spellCheck={false}
        onChange={(e) => setText(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            commit();
          }
        }}
        placeholder={kind === 'cel' ? 'CEL expression' : '{{template}}'}
      />
      {errors.length > 0 ? (
        <div className="field-error" data-testid={`field-error-${field.name}`} role="alert">
          {errors.map((e, i) => (
            <div key={i}>
              {e.message}
              {e.end > e.start ? <span className="muted"> (at {e.start + 1}–{e.end})</span> : null}
            </div>
          ))}
        </div>
      ) : null}
    </>
  );
}

function StructInput({ field, value, onCommit }: FieldEditorProps) {
  const initial = structToText(value);
  const [text, setText] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const commit = () => {
    if (text === initial) return;
    const r = parseStruct(text, field.type);
    if ('error' in r) {
      setError(r.error);
      return;
    }
    setError(null);
    onCommit(r.value);
  };
  return (
    <>
      <textarea
        data-testid={`field-${field.name}`}
        className={`input mono${error ? ' invalid' : ''}`}
        value={text}
        rows={Math.min(10, Math.max(2, text.split('\n').length))}
        spellCheck={false}
        onChange={(e) => setText(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            commit();
          }
        }}
        placeholder={field.type.kind === 'list' ? '- item   or   ["a", "b"]' : 'key: value   or   {"key": "value"}'}
      />
      <FieldError name={field.name} error={error} />
    </>
  );
}

function NumberInput({ field, value, onCommit }: FieldEditorProps) {
  const initial = value == null ? '' : String(value);
  const [text, setText] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const commit = () => {
    if (text === initial) return;
    const r = parseNumber(text, field.type);
    if ('error' in r) return setError(r.error);
    setError(null);
    onCommit(r.value);
  };
  return (
    <>
      <input
        data-testid={`field-${field.name}`}
        className={`input${error ? ' invalid' : ''}`}
        inputMode="decimal"
        value={text}
        onChange={(e) => setText(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => e.key === 'Enter' && commit()}
      />
      <FieldError name={field.name} error={error} />
    </>
  );
}

function TextInput({ field, value, onCommit }: FieldEditorProps) {
  const initial = value == null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  const [text, setText] = useState(initial);
  const commit = () => {
    if (text === initial) return;
    onCommit(text === '' && !field.required ? null : text);
  };
  return (
    <input
      data-testid={`field-${field.name}`}
      className="input"
      value={text}
      spellCheck={false}
      onChange={(e) => setText(e.target.value)}
      onBlur={commit}
      onKeyDown={(e) => e.key === 'Enter' && commit()}
    />
  );
}

export function FieldEditor(props: FieldEditorProps) {
  const { field, value, nodeIds, onCommit } = props;
  const k = field.type.kind;
  let input: React.ReactNode;
  if (k === 'bool') {
    input = (
      <input
        type="checkbox"
        data-testid={`field-${field.name}`}
        checked={value === true}
        onChange={(e) => onCommit(e.target.checked ? true : field.required ? false : null)}
      />
    );
  } else if (k === 'enum') {
    const values = field.type.values ?? [];
    const cur = value == null ? '' : String(value);
    input = (
      <select data-testid={`field-${field.name}`} className="input" value={cur} onChange={(e) => onCommit(e.target.value === '' ? null : e.target.value)}>
        {!field.required || cur === '' ? <option value="">(unset)</option> : null}
        {cur !== '' && !values.includes(cur) ? <option value={cur}>{cur} (unknown)</option> : null}
        {values.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    );
  } else if (k === 'node_ref') {
    const cur = value == null ? '' : String(value);
    input = (
      <select data-testid={`field-${field.name}`} className="input" value={cur} onChange={(e) => onCommit(e.target.value === '' ? null : e.target.value)}>
        <option value="">(none)</option>
        {cur !== '' && !nodeIds.includes(cur) ? <option value={cur}>{cur} (missing)</option> : null}
        {nodeIds.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    );
  } else if (k === 'int' || k === 'number') {
    input = <NumberInput {...props} />;
  } else if (exprKind(k)) {
    input = <ExprInput {...props} />;
  } else if (STRUCT_KINDS.has(k)) {
    input = <StructInput {...props} />;
  } else {
    input = <TextInput {...props} />;
  }
  return (
    <div className={`field field-kind-${k}`}>
      <label className="field-label" title={field.doc}>
        <span className="field-name">{field.name}</span>
        {field.required ? <span className="req" title="required">*</span> : null}
        <span className="field-type">{k === 'cel_condition' ? 'cel' : k}</span>
      </label>
      {input}
      {field.doc ? <div className="field-doc">{field.doc}</div> : null}
    </div>
  );
}

/** A field's parse or validation error under its input, announced to screen readers. */
function FieldError({ name, error }: { name: string; error: string | null }) {
  return error ? (
    <div className="field-error" data-testid={`field-error-${name}`} role="alert">
      {error}
    </div>
  ) : null;
}
