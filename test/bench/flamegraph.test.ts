// The flame graphs of docs/performance.md (bench/flamegraph.ts): V8 profiles merged under one
// root, each frame's time its own samples plus its callees', `(idle)` left out, a function calling
// itself one frame, and the SVG's frames as wide as their share.
import t from 'tap';
import { type CpuProfile, heaviest, mergeProfiles, renderSvg } from '../../bench/flamegraph.js';

const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

// (root) → main → parse → parse (itself) → token; main → write; (root) → (idle)
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 6] },
    { id: 2, callFrame: frame('main', 'file:///srv/app/node_modules/pkg/index.js', 9), children: [3, 5] },
    { id: 3, callFrame: frame('parse', 'node:internal/x', 4), children: [4] },
    { id: 4, callFrame: frame('parse', 'node:internal/x', 4), children: [7] },
    { id: 5, callFrame: frame('write'), children: [] },
    { id: 6, callFrame: frame('(idle)'), children: [] },
    { id: 7, callFrame: frame('token'), children: [] },
  ],
  // main 10 µs, parse 20 + 30 (both levels), token 15, write 25, idle 1000
  samples: [2, 3, 4, 7, 5, 6],
  timeDeltas: [10, 20, 30, 15, 25, 1000],
};

t.test('two profiles merged: totals, recursion folded, idle left out', async (t) => {
  const top = mergeProfiles([profile, profile], 'both threads');
  t.equal(top.total, 2 * (10 + 20 + 30 + 15 + 25));
  const main = top.children.get('main pkg/index.js:10')!;
  t.ok(main, 'a package file named by its package');
  t.same([...top.children.keys()], ['main pkg/index.js:10'], '(idle) is not a frame');
  const parse = main.children.get('parse node:internal/x:5')!;
  t.equal(parse.self, 2 * 50, 'the recursive call is the same frame');
  t.same([...parse.children.keys()], ['token']);
  t.equal(parse.total, 2 * 65);
  t.same(
    heaviest(top, 2).map((h) => [h.label, h.self]),
    [
      ['parse node:internal/x:5', 100],
      ['write', 50],
    ],
  );
});

t.test('the SVG: one frame per call path, widths by share, the share on hover', async (t) => {
  const svg = renderSvg(mergeProfiles([profile]), 'a <test>');
  t.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  t.match(svg, /a &lt;test&gt; — 0 ms sampled/, 'the title, escaped');
  t.equal(svg.match(/<g /g)?.length, 5, 'all, main, parse, token, write');
  const width = (label: string) => Number(new RegExp(`<title>${label} — [^<]*</title><rect x="[\\d.]+" width="([\\d.]+)"`).exec(svg)?.[1]);
  t.equal(width('all'), 1200 - 0.5);
  t.equal(width('write'), (25 / 100) * 1200 - 0.5);
  t.match(svg, /<title>token — 15\.0 % \(0\.0 ms, self 0\.0 ms\)<\/title>/);
});
