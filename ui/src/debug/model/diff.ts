// Differences between two states (the state panel marks what a step changed).
import { isObj } from './util';

export type DiffKind = 'added' | 'changed' | 'removed';

export interface DiffEntry {
  path: (string | number)[];
  kind: DiffKind;
  before?: unknown;
  after?: unknown;
}

function isMessage(v: unknown): boolean {
  return isObj(v) && (typeof v.type === 'string' || typeof v.role === 'string');
}

function isMessageList(v: unknown[]): boolean {
  return v.length > 0 && v.every(isMessage);
}

function hasId(v: unknown): boolean {
  return isObj(v) && v.id != null && v.id !== '';
}

/** Deep equality of JSON values. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ka = Object.keys(ao);
  if (ka.length !== Object.keys(bo).length) return false;
  for (const k of ka) if (!(k in bo) || !jsonEqual(ao[k], bo[k])) return false;
  return true;
}

/**
 * What changed from `prev` to `next`, as leaf-most entries. Objects are compared key by key,
 * recursively; arrays element by element (index paths), except message lists whose messages all
 * carry an `id`: those are matched by id, so a message appended, replaced or removed shows as
 * exactly that. `prev == null` with an object `next` (the initial state) lists every key as added.
 */
export function diffState(prev: unknown, next: unknown): DiffEntry[] {
  const out: DiffEntry[] = [];
  if (prev == null && isObj(next)) {
    for (const [k, v] of Object.entries(next)) out.push({ path: [k], kind: 'added', after: v });
    return out;
  }
  walk(prev, next, [], out);
  return out;
}

function walk(a: unknown, b: unknown, path: (string | number)[], out: DiffEntry[]): void {
  if (a === b) return;
  if (isObj(a) && isObj(b)) {
    for (const k of Object.keys(a)) {
      if (!(k in b)) out.push({ path: [...path, k], kind: 'removed', before: a[k] });
      else walk(a[k], b[k], [...path, k], out);
    }
    for (const k of Object.keys(b)) if (!(k in a)) out.push({ path: [...path, k], kind: 'added', after: b[k] });
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (isMessageList(a) && isMessageList(b) && a.every(hasId) && b.every(hasId)) {
      const prevAt = new Map<unknown, number>();
      a.forEach((m, i) => prevAt.set((m as Record<string, unknown>).id, i));
      const seen = new Set<unknown>();
      b.forEach((m, j) => {
        const id = (m as Record<string, unknown>).id;
        const i = prevAt.get(id);
        if (i === undefined) out.push({ path: [...path, j], kind: 'added', after: m });
        else {
          seen.add(id);
          walk(a[i], m, [...path, j], out);
        }
      });
      a.forEach((m, i) => {
        if (!seen.has((m as Record<string, unknown>).id)) out.push({ path: [...path, i], kind: 'removed', before: m });
      });
      return;
    }
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) walk(a[i], b[i], [...path, i], out);
    for (let i = n; i < b.length; i++) out.push({ path: [...path, i], kind: 'added', after: b[i] });
    for (let i = n; i < a.length; i++) out.push({ path: [...path, i], kind: 'removed', before: a[i] });
    return;
  }
  if (jsonEqual(a, b)) return;
  if (a === undefined) out.push({ path, kind: 'added', after: b });
  else if (b === undefined) out.push({ path, kind: 'removed', before: a });
  else out.push({ path, kind: 'changed', before: a, after: b });
}

/** The path of a state tree row as in `data-path`: keys joined by ".". */
export function pathKey(path: (string | number)[]): string {
  return path.join('.');
}

/**
 * Diff marks by row path (`pathKey`): each entry's own kind, and `changed` for every ancestor of
 * an entry (so collapsed parents show that something inside changed).
 */
export function diffIndex(entries: DiffEntry[]): Map<string, DiffKind> {
  const index = new Map<string, DiffKind>();
  for (const e of entries) if (e.path.length) index.set(pathKey(e.path), e.kind);
  for (const e of entries) {
    for (let n = e.path.length - 1; n >= 1; n--) {
      const k = pathKey(e.path.slice(0, n));
      if (!index.has(k)) index.set(k, 'changed');
    }
  }
  return index;
}
