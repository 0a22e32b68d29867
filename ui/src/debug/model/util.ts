// Small helpers shared by the fold's modules.

export function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function asList(v: unknown): unknown[] {
  return Array.isArray(v) ? v : v == null ? [] : [v];
}

export function removeFrom(list: string[], v: string): void {
  const i = list.indexOf(v);
  if (i >= 0) list.splice(i, 1);
}

export function lastIndexOf<T>(list: T[], pred: (x: T) => boolean): number {
  for (let i = list.length - 1; i >= 0; i--) if (pred(list[i])) return i;
  return -1;
}
