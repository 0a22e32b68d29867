// A simple line diff (LCS) for the "show diff" view of a save conflict.
export interface DiffLine {
  op: ' ' | '-' | '+';
  text: string;
}

/** Lines of `a` (mine) and `b` (disk): ' ' same, '-' only mine, '+' only on disk. */
export function lineDiff(a: string, b: string): DiffLine[] {
  const x = a.split('\n');
  const y = b.split('\n');
  // Trim the common head and tail so the quadratic part stays small.
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head && x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const xs = x.slice(head, x.length - tail);
  const ys = y.slice(head, y.length - tail);
  const out: DiffLine[] = x.slice(0, head).map((t) => ({ op: ' ', text: t }));
  const n = xs.length;
  const m = ys.length;
  if (n * m > 4_000_000) {
    // Too large for LCS: show the whole middle as removed + added.
    xs.forEach((t) => out.push({ op: '-', text: t }));
    ys.forEach((t) => out.push({ op: '+', text: t }));
  } else {
    const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i][j] = xs[i] === ys[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (xs[i] === ys[j]) {
        out.push({ op: ' ', text: xs[i] });
        i++;
        j++;
      } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
        out.push({ op: '-', text: xs[i++] });
      } else {
        out.push({ op: '+', text: ys[j++] });
      }
    }
    while (i < n) out.push({ op: '-', text: xs[i++] });
    while (j < m) out.push({ op: '+', text: ys[j++] });
  }
  x.slice(x.length - tail).forEach((t) => out.push({ op: ' ', text: t }));
  return out;
}
