// Scraping a daemon's metrics listener and reading the Prometheus text format back, for the tests
// that check counters moved by exact amounts.
import { spawn } from 'node:child_process';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a text-format exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The sum of the samples named `name` whose labels include `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** GET /metrics on the metrics port; throws unless it answers 200. */
export async function scrape(port: number, token?: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`scrape answered ${res.status}: ${text}`);
  return { text, samples: parseMetrics(text) };
}

/** `promtool check metrics` with `text` on stdin: its exit code and output (throws when promtool is missing). */
export function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += String(c)));
    child.stderr.on('data', (c: Buffer) => (output += String(c)));
    child.once('error', (err) => reject(new Error(`promtool could not run (install Debian's prometheus package): ${err.message}`)));
    child.once('close', (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}
