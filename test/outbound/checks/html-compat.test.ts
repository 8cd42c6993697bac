// The HTML compatibility report against the vendored caniemail data: what is looked for (properties
// with their caniemail values, at-rules and media features, elements, typed inputs, attributes),
// what is left out (features every client supports, comments), and the clients named.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { htmlCompatibility } from '../../../src/outbound/checks/html-compat.js';

const data = JSON.parse(readFileSync(new URL('../../../config/caniemail/caniemail.json', import.meta.url), 'utf8')) as {
  features: { slug: string; support: Record<string, string> }[];
};
const latest = (slug: string, client: string) => data.features.find((f) => f.slug === slug)!.support[client];

t.test('what a message uses is found and judged by the data', async (t) => {
  const r = htmlCompatibility(
    `<html><head><style>/* display:grid */ @media (prefers-color-scheme: dark) { .a { color: red } } .b { display: flex !important; border-top: 1px solid }</style></head>` +
      `<body><!-- <form> --><div style="margin:0; DISPLAY:grid">x</div><video src="a.mp4" controls></video>` +
      `<input type="checkbox"><p align="center">t</p><span style="color:#000">s</span></body></html>`,
  );
  const by = new Map(r.findings.map((f) => [f.feature, f]));
  t.same(by.get('css-display-flex')?.found, ['display:flex'], 'a <style> declaration, !important aside');
  t.same(by.get('css-display-grid')?.found, ['display:grid'], 'a style attribute, any case');
  t.ok(by.get('css-at-media-prefers-color-scheme'));
  t.ok(by.get('css-at-media'));
  t.same(by.get('css-border')?.found, ['border-top'], 'a longhand counts for its feature');
  t.same(by.get('html-input-checkbox')?.found, ['<input type="checkbox">']);
  t.ok(by.get('html-video'));
  t.notOk(by.get('html-form'), 'nothing inside a comment');
  t.notOk(by.get('css-color'), 'supported everywhere: not listed');

  // Each client named is one the data marks n or a in its latest result, and every such client is named.
  const video = by.get('html-video')!;
  const marked = Object.keys(data.features.find((f) => f.slug === 'html-video')!.support).filter((c) =>
    /^[na]/.test(latest('html-video', c)),
  );
  t.equal(video.clients.length, marked.length);
  t.equal(latest('html-video', 'gmail/desktop-webmail')[0], 'n');
  t.ok(video.clients.some((c) => c.client === 'Gmail Desktop Webmail' && c.support === 'unsupported'));
  t.match(r.dataUpdated, /^\d{4}-\d\d-\d\d/);
});

t.test('plain HTML has nothing to report', async (t) => {
  t.same(htmlCompatibility('<span style="color:#333">Hello</span>').findings, []);
});
