// Conversions between field values (JSON from the engine) and the text the inspector edits.
import type { JsonValue, SchemaType } from './types';

export const TEXT_KINDS = new Set(['string', 'path', 'node_ref', 'cel', 'cel_condition', 'template']);
export const STRUCT_KINDS = new Set(['list', 'map', 'object', 'any', 'one_of']);

type Scalar = string | number | boolean;
const isScalar = (x: unknown): x is Scalar => typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean';

/** A scalar as written in the YAML-ish form; strings are quoted when they would read back differently. */
function fmtScalar(x: Scalar): string {
  if (typeof x !== 'string') return String(x);
  let readsAsJson = false;
  try {
    JSON.parse(x);
    readsAsJson = true;
  } catch {
    /* plain text */
  }
  const quote = readsAsJson || x === '' || x.trim() !== x || /^['"[{#-]/.test(x) || x.includes('\n');
  return quote ? JSON.stringify(x) : x;
}

/**
 * Text shown for a structured value: flat lists as `- item` lines, flat mappings as `key: value`
 * lines (both read back by `parseStruct`), strings raw, anything nested as pretty JSON.
 */
export function structToText(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.length > 0 && v.every(isScalar)) return v.map((x) => `- ${fmtScalar(x)}`).join('\n');
  if (typeof v === 'object' && !Array.isArray(v)) {
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length > 0 && entries.every(([k, x]) => isScalar(x) && /^[^:\s#'"{[-][^:]*$/.test(k) && k.trim() === k)) {
      return entries.map(([k, x]) => `${k}: ${fmtScalar(x as Scalar)}`).join('\n');
    }
  }
  return JSON.stringify(v, null, 2);
}

function scalar(s: string): JsonValue {
  const t = s.trim();
  if (t === '') return '';
  try {
    return JSON.parse(t);
  } catch {
    // Unquoted YAML-ish scalar: keep as string, stripping matching single quotes.
    if (t.length >= 2 && t.startsWith("'") && t.endsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
    return t;
  }
}

/**
 * Parse inspector text for a structured field. Accepts JSON, and a YAML-ish form for lists
 * (`- item` per line) and mappings (`key: value` per line). Returns `{value}` or `{error}`.
 */
export function parseStruct(text: string, type: SchemaType): { value: JsonValue } | { error: string } {
  const t = text.trim();
  if (t === '') return { value: null };
  try {
    return { value: JSON.parse(t) };
  } catch {
    /* fall through to the YAML-ish forms */
  }
  const lines = t.split(/\r?\n/).filter((l) => l.trim() !== '');
  const kind = type.kind;
  const listish = kind === 'list' || (kind === 'one_of' && type.alternatives?.some((a) => a.kind === 'list'));
  if (listish && lines.every((l) => /^\s*-\s?/.test(l))) {
    return { value: lines.map((l) => scalar(l.replace(/^\s*-\s?/, ''))) };
  }
  const mapish = kind === 'map' || kind === 'object' || kind === 'any' || (kind === 'one_of' && type.alternatives?.some((a) => a.kind === 'map' || a.kind === 'object'));
  if (mapish && lines.every((l) => /^\s*[^:\s][^:]*:\s/.test(l) || /^\s*[^:\s][^:]*:$/.test(l))) {
    const out: { [key: string]: JsonValue } = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      out[l.slice(0, i).trim()] = scalar(l.slice(i + 1));
    }
    return { value: out };
  }
  // A bare string is fine where a string is allowed.
  if ((kind === 'any' || (kind === 'one_of' && type.alternatives?.some((a) => TEXT_KINDS.has(a.kind) || a.kind === 'enum'))) && lines.length === 1) {
    return { value: t };
  }
  return { error: kind === 'list' ? 'expected JSON (e.g. ["a", "b"]) or one "- item" per line' : 'expected JSON or "key: value" lines' };
}

export function parseNumber(text: string, type: SchemaType): { value: number | null } | { error: string } {
  const t = text.trim();
  if (t === '') return { value: null };
  const n = Number(t);
  if (!Number.isFinite(n)) return { error: 'not a number' };
  if (type.kind === 'int' && !Number.isInteger(n)) return { error: 'must be a whole number' };
  if (type.min != null && n < type.min) return { error: `must be at least ${type.min}` };
  return { value: n };
}

export function exprKind(kind: string): 'cel' | 'template' | null {
  if (kind === 'cel' || kind === 'cel_condition') return 'cel';
  if (kind === 'template') return 'template';
  return null;
}

export const BUILTIN_CONDITIONS = new Set(['has_tool_calls', 'has_error_fallback']);
