// A flame graph of V8 CPU profiles (`node --cpu-prof`), as one SVG a browser or a Markdown page
// shows without a script: `node --import tsx bench/flamegraph.ts OUT.svg PROFILE.cpuprofile…
// [--title TEXT]`. Every profile given (the daemon's main thread and its worker threads) is merged
// under one root, time is what V8 sampled on each thread (waiting for I/O, `(idle)`, is left out),
// and frames narrower than 0.2 % of the whole are dropped. A frame's width is its share of
// the sampled time with everything it called; hover shows the share and the milliseconds.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringHash } from '../src/lib/string-hash.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A frame of the merged tree: its label, its own sampled time and its callees (µs). */
export interface Frame {
  label: string;
  self: number;
  total: number;
  children: Map<string, Frame>;
}

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

/** `fn file:line`, the file relative to the project (a package's files by the package's name). */
function frameLabel(cf: CallFrame): string {
  const name = cf.functionName || '(anonymous)';
  if (!cf.url) return name;
  let file = cf.url.replace(/^file:\/\//, '');
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0) file = file.slice(nm + '/node_modules/'.length);
  else if (file.startsWith(ROOT + '/')) file = file.slice(ROOT.length + 1);
  return `${name} ${file}:${cf.lineNumber + 1}`;
}

const MAX_DEPTH = 40;

const newFrame = (label: string): Frame => ({ label, self: 0, total: 0, children: new Map() });

/** Merges `profiles` into one tree under `root`, each node's self time from its samples. */
export function mergeProfiles(profiles: CpuProfile[], root = 'all'): Frame {
  const top = newFrame(root);
  for (const p of profiles) {
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const self = new Map<number, number>();
    p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
    // A function calling itself is one frame (a parser's recursion would stack hundreds), and
    // below MAX_DEPTH a frame's callees count as its own time.
    const walk = (node: ProfileNode, into: Frame, depth: number) => {
      if (node.callFrame.functionName === '(idle)') return;
      const label = frameLabel(node.callFrame);
      let frame = into;
      if (label !== into.label && depth < MAX_DEPTH) {
        frame = into.children.get(label) ?? newFrame(label);
        into.children.set(label, frame);
        depth++;
      }
      frame.self += Math.max(0, self.get(node.id) ?? 0);
      for (const c of node.children ?? []) walk(byId.get(c)!, frame, depth);
    };
    // V8's root frame `(root)` is every profile's; its children are the threads' entry points.
    const rootNode = p.nodes[0];
    for (const c of rootNode.children ?? []) walk(byId.get(c)!, top, 1);
  }
  const sum = (f: Frame): number => (f.total = f.self + [...f.children.values()].reduce((s, c) => s + sum(c), 0));
  sum(top);
  return top;
}

const WIDTH = 1200;
const ROW = 17;
const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

// Warm colours for Postern's own code, yellow for packages, grey for Node's internals, red for
// what V8 does besides running JavaScript (GC, compiling); the hue varies a little by name.
function colour(label: string): string {
  const v = stringHash(label) % 30;
  if (/^\((garbage collector|program)\)/.test(label)) return `rgb(${200 + (v % 20)},${60 + v},${50})`;
  if (/ (src|dist|bench)\//.test(label)) return `rgb(${230 + (v % 20)},${120 + v * 2},${40})`;
  if (/ node:/.test(label) || !label.includes(' ')) return `rgb(${170 + v},${170 + v},${170 + v})`;
  return `rgb(${220 + (v % 30)},${190 + v},${60 + v})`;
}

/** The SVG of `top`: root at the bottom, callees above their callers, widths by total time. */
export function renderSvg(top: Frame, title: string): string {
  const minUs = top.total / 500;
  const placed: { f: Frame; x: number; level: number; w: number }[] = [];
  const place = (f: Frame, x: number, level: number) => {
    if (f.total < minUs) return;
    placed.push({ f, x, level, w: (f.total / top.total) * WIDTH });
    let cx = x;
    for (const k of [...f.children.values()].sort((a, b) => a.label.localeCompare(b.label))) {
      place(k, cx, level + 1);
      cx += (k.total / top.total) * WIDTH;
    }
  };
  place(top, 0, 0);
  const depth = Math.max(...placed.map((p) => p.level)) + 1;
  const height = (depth + 1) * ROW + 4;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="monospace" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fafafa"/>`,
    `<text x="6" y="13" font-size="13">${escape(title)} — ${(top.total / 1000).toFixed(0)} ms sampled</text>`,
    // The root at the bottom, callees above their callers.
    ...placed.map((p) => frameRect(p.f, p.x, height - (p.level + 1) * ROW, p.w, top.total)),
    '</svg>',
    '',
  ].join('\n');
}

function frameRect(f: Frame, x: number, y: number, w: number, whole: number): string {
  const share = ((100 * f.total) / whole).toFixed(1);
  const tip = `${f.label} — ${share} % (${(f.total / 1000).toFixed(1)} ms, self ${(f.self / 1000).toFixed(1)} ms)`;
  const chars = Math.floor((w - 4) / 6.7);
  const text = chars >= 3 ? (f.label.length > chars ? `${f.label.slice(0, chars - 1)}…` : f.label) : '';
  return (
    `<g transform="translate(0,${y})"><title>${escape(tip)}</title>` +
    `<rect x="${x.toFixed(2)}" width="${Math.max(w - 0.5, 0.1).toFixed(2)}" height="${ROW - 1}" fill="${colour(f.label)}"/>` +
    (text ? `<text x="${(x + 3).toFixed(2)}" y="12">${escape(text)}</text>` : '') +
    '</g>'
  );
}

/** The frames with the most time of their own (µs), largest first: what a page names as the costs. */
export function heaviest(top: Frame, n: number): { label: string; self: number }[] {
  const all = new Map<string, number>();
  const visit = (f: Frame) => {
    if (f !== top) all.set(f.label, (all.get(f.label) ?? 0) + f.self);
    for (const c of f.children.values()) visit(c);
  };
  visit(top);
  return [...all]
    .map(([label, self]) => ({ label, self }))
    .sort((a, b) => b.self - a.self)
    .slice(0, n);
}

function main(argv: string[]): void {
  const t = argv.indexOf('--title');
  const title = t >= 0 ? argv[t + 1] : 'CPU profile';
  const files = argv.filter((_, i) => i !== t && i !== t + 1);
  const [out, ...inputs] = files;
  if (!out || inputs.length === 0) {
    console.error('usage: bench/flamegraph.ts OUT.svg PROFILE.cpuprofile… [--title TEXT]');
    process.exit(2);
  }
  const top = mergeProfiles(inputs.map((f) => JSON.parse(readFileSync(f, 'utf8')) as CpuProfile));
  writeFileSync(out, renderSvg(top, title));
  console.log(`${out}: ${(top.total / 1000).toFixed(0)} ms sampled; most time of their own:`);
  for (const h of heaviest(top, 12)) console.log(`  ${((100 * h.self) / top.total).toFixed(1).padStart(5)} %  ${h.label}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) main(process.argv.slice(2));
