// A small JSON renderer shared by the debugger views: collapsible objects and arrays, long strings
// and big collections cut short with "show all". Plain text only (React escapes everything).
// Secrets are masked (`untrusted.ts`): values under secret-looking names and API-key-shaped strings
// show as `••••••` with a "hidden" tooltip, and cannot be revealed.
import { useState, type ReactNode } from 'react';
import { MASK, SECRET_TITLE, hidesScalar, isSecretName, maskSecrets } from '../../untrusted';

/** Strings longer than this are cut (with "show all"). */
export const LONG_STRING = 200;
/** Arrays/objects with more entries than this show only the first ones (with "show all"). */
export const MANY_ENTRIES = 50;

export function isContainer(v: unknown): v is Record<string, unknown> | unknown[] {
  return v !== null && typeof v === 'object';
}

/** Entries of an object or array as [key, value] pairs (array keys are indices as strings). */
export function entriesOf(v: Record<string, unknown> | unknown[]): [string, unknown][] {
  return Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
}

/** A one-line preview of a value: `{3 keys}`, `[5 items]`, or the scalar as JSON (cut). */
export function preview(v: unknown, max = 80): string {
  if (Array.isArray(v)) return `[${v.length} item${v.length === 1 ? '' : 's'}]`;
  if (isContainer(v)) {
    const n = Object.keys(v).length;
    return `{${n} key${n === 1 ? '' : 's'}}`;
  }
  const s = scalarText(v);
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** A scalar as JSON text (`undefined` shows as nothing). */
export function scalarText(v: unknown): string {
  if (v === undefined) return '';
  if (typeof v === 'string') return JSON.stringify(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** Pretty JSON for editors and tooltips. */
export function pretty(v: unknown): string {
  if (v === undefined) return '';
  try {
    return JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    return String(v);
  }
}

function scalarClass(v: unknown): string {
  if (v === null) return 'jv-null';
  switch (typeof v) {
    case 'string':
      return 'jv-str';
    case 'number':
    case 'bigint':
      return 'jv-num';
    case 'boolean':
      return 'jv-bool';
    default:
      return 'jv-null';
  }
}

/** A scalar as it may be shown: the mask under a secret name, API-key shapes masked in strings. */
export function visibleScalar(value: unknown, secret = false): { value: unknown; hidden: boolean } {
  if (secret && hidesScalar(value)) return { value: MASK, hidden: true };
  if (typeof value === 'string') {
    const m = maskSecrets(value);
    if (m !== value) return { value: m, hidden: true };
  }
  return { value, hidden: false };
}

/** A scalar, with long strings collapsed behind "show all"; `secret`: it is under a secret name. */
export function Scalar({ value: raw, limit = LONG_STRING, secret = false }: { value: unknown; limit?: number; secret?: boolean }) {
  const [all, setAll] = useState(false);
  const { value, hidden } = visibleScalar(raw, secret);
  if (hidden && value === MASK) {
    return (
      <span className="jv-secret" title={SECRET_TITLE} data-testid="secret">
        {MASK}
      </span>
    );
  }
  const text = scalarText(value);
  const hiddenTitle = hidden ? SECRET_TITLE : undefined;
  if (typeof value === 'string' && value.length > limit && !all) {
    return (
      <span className={scalarClass(value)} title={hiddenTitle} data-secret={hidden ? 'partly' : undefined}>
        {JSON.stringify(value.slice(0, limit)).slice(0, -1)}…"{' '}
        <button type="button" className="link jv-more" onClick={() => setAll(true)} title={`${value.length} characters`}>
          show all ({value.length} chars)
        </button>
      </span>
    );
  }
  return (
    <span className={scalarClass(value)} title={hiddenTitle} data-secret={hidden ? 'partly' : undefined}>
      {text}
    </span>
  );
}

interface NodeProps {
  name?: string;
  value: unknown;
  depth: number;
  open: number;
  /** Under a secret name (its scalars are hidden). */
  secret: boolean;
  /** Judge names (false: only API-key shapes are masked). */
  maskNames: boolean;
}

function JsonNode({ name, value, depth, open, secret: above, maskNames }: NodeProps) {
  const secret = above || (maskNames && name !== undefined && isSecretName(name));
  const [expanded, setExpanded] = useState(depth < open);
  const [all, setAll] = useState(false);
  const label =
    name !== undefined ? (
      <span className="jv-key">
        {name}
        <span className="jv-colon">: </span>
      </span>
    ) : null;
  if (!isContainer(value)) {
    return (
      <div className="jv-line">
        <span className="jv-toggle-space" />
        {label}
        <Scalar value={value} secret={secret} />
      </div>
    );
  }
  const entries = entriesOf(value);
  const shown = all ? entries : entries.slice(0, MANY_ENTRIES);
  let children: ReactNode = null;
  if (expanded) {
    children = (
      <div className="jv-children">
        {shown.map(([k, v]) => (
          <JsonNode key={k} name={k} value={v} depth={depth + 1} open={open} secret={secret} maskNames={maskNames} />
        ))}
        {entries.length > shown.length ? (
          <button type="button" className="link jv-more" onClick={() => setAll(true)}>
            show all ({entries.length - shown.length} more)
          </button>
        ) : null}
        {entries.length === 0 ? <div className="jv-line muted">{Array.isArray(value) ? '(empty list)' : '(empty)'}</div> : null}
      </div>
    );
  }
  return (
    <div className="jv-node">
      <div className="jv-line">
        <button type="button" className="jv-toggle" aria-expanded={expanded} onClick={() => setExpanded(!expanded)} title={expanded ? 'Collapse' : 'Expand'}>
          {expanded ? '▾' : '▸'}
        </button>
        {label}
        <span className="jv-preview muted">{preview(value)}</span>
      </div>
      {children}
    </div>
  );
}

export interface JsonViewProps {
  value: unknown;
  /** A label for the root. */
  name?: string;
  /** How many levels start expanded (default 1). */
  open?: number;
  className?: string;
  /** The value is under a secret name (all its scalars are hidden). */
  secret?: boolean;
  /** Hide values under secret-looking names (default true; false for schemas, whose names hold no values). */
  maskNames?: boolean;
}

/** A collapsible view of a JSON value. */
export function JsonView({ value, name, open = 1, className, secret = false, maskNames = true }: JsonViewProps) {
  return (
    <div className={`json-view mono${className ? ` ${className}` : ''}`}>
      <JsonNode name={name} value={value} depth={0} open={open} secret={secret} maskNames={maskNames} />
    </div>
  );
}
