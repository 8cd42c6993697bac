// A line diff for template versions: the longest common subsequence of lines (dynamic programming,
// O(n·m) — templates are small; past LIMIT cells the middle is shown as all removed, all added),
// with the common prefix and suffix trimmed first so the usual one-line edit costs almost nothing.

export interface DiffLine {
  kind: 'same' | 'add' | 'del';
  text: string;
}

const LIMIT = 4_000_000;

/** The lines of `a` turned into the lines of `b`: kept, removed and added, in order. */
export function diffLines(a: string, b: string): DiffLine[] {
  const x = a.split('\n');
  const y = b.split('\n');
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let endX = x.length;
  let endY = y.length;
  while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) {
    endX--;
    endY--;
  }
  const head: DiffLine[] = x.slice(0, start).map((text) => ({ kind: 'same', text }));
  const tail: DiffLine[] = x.slice(endX).map((text) => ({ kind: 'same', text }));
  const mx = x.slice(start, endX);
  const my = y.slice(start, endY);
  return [...head, ...lcsDiff(mx, my), ...tail];
}

function lcsDiff(x: string[], y: string[]): DiffLine[] {
  const n = x.length;
  const m = y.length;
  if (n * m > LIMIT) {
    return [...x.map((text): DiffLine => ({ kind: 'del', text })), ...y.map((text): DiffLine => ({ kind: 'add', text }))];
  }
  // len[i][j]: the LCS length of x[i..] and y[j..], in one flat array.
  const w = m + 1;
  const len = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      len[i * w + j] = x[i] === y[j] ? len[(i + 1) * w + j + 1] + 1 : Math.max(len[(i + 1) * w + j], len[i * w + j + 1]);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) {
      out.push({ kind: 'same', text: x[i] });
      i++;
      j++;
    } else if (len[(i + 1) * w + j] >= len[i * w + j + 1]) {
      out.push({ kind: 'del', text: x[i++] });
    } else {
      out.push({ kind: 'add', text: y[j++] });
    }
  }
  while (i < n) out.push({ kind: 'del', text: x[i++] });
  while (j < m) out.push({ kind: 'add', text: y[j++] });
  return out;
}
