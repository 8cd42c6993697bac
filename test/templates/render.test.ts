// Pure rendering decisions, table-driven: which paths are missing, and what each field escapes.
import fc from 'fast-check';
import t from 'tap';
import { textFromHtml } from '../../src/channels/email/render.js';
import { contentAsOutput, renderOutput } from '../../src/channels/render.js';
import { CHANNELS, type Channel, type ChannelContent } from '../../src/contract/channels.js';
import { missingVariables } from '../../src/lib/mustache.js';
import { checkTemplates, renderContent } from '../../src/templates/render.js';
import { htmlArb, textArb } from '../helpers/content-shapes.js';

t.test('missing paths', async (t) => {
  const cases: [string, Record<string, unknown>, string[]][] = [
    ['{{a}} {{b}} {{a}}', {}, ['a', 'b']],
    ['{{a}}', { a: null }, []],
    ['{{a.b.c}}', { a: { b: {} } }, ['a.b.c']],
    ['{{a.b}}', { a: 'str' }, ['a.b']],
    ['{{#a}}{{b}}{{/a}}', {}, ['a', 'a.b']],
    ['{{#a}}{{b}}{{/a}}', { b: 1 }, ['a']],
    ['{{#a}}{{b}}{{/a}}', { a: true }, ['b']],
    ['{{#a}}{{b}}{{/a}}', { a: false }, []],
    ['{{#a}}{{b}}{{/a}}', { a: [] }, []],
    ['{{#a}}{{b}}{{/a}}', { a: [{ b: 1 }, { c: 1 }] }, ['a.b']],
    ['{{#a}}{{.}}{{/a}}', { a: ['x'] }, []],
    ['{{^a}}{{b}}{{/a}}', {}, ['a', 'b']],
    ['{{^a}}{{b}}{{/a}}', { a: true }, []],
    ['{{#a}}{{#b}}{{c.d}}{{/b}}{{/a}}', { a: {} }, ['a.b', 'a.b.c.d']],
    ['{{{raw}}} {{&amp}}', {}, ['raw', 'amp']],
    ['{{=<% %>=}}<% x %>', {}, ['x']],
  ];
  for (const [tpl, vars, want] of cases) t.same(missingVariables([tpl], vars), want, `${tpl} with ${JSON.stringify(vars)}`);
  t.same(missingVariables(['{{b}}', '{{a}} {{b}}'], {}), ['b', 'a'], 'order of first use across fields');
});

t.test('escaping only in html', async (t) => {
  const v = { x: `<&>"'` };
  const e = renderContent('email', { subject: '{{x}}', preheader: '{{x}}', html: '<p>{{x}}</p>', text: '{{x}}' }, v).output as any;
  t.equal(e.subject, `<&>"'`);
  t.equal(e.text, `<&>"'`);
  t.equal(e.preheader, `<&>"'`);
  t.match(e.html, /<p>&lt;&amp;&gt;&quot;&#39;<\/p>$/);
  t.match(e.html, /aria-hidden="true">&#60;&#38;&#62;&#34;&#39;<\/div>/, 'preheader escaped once inside html');
  t.equal((renderContent('sms', { body: '{{x}}' }, v).output as any).body, `<&>"'`);
});

t.test('text from html and inline content', async (t) => {
  t.equal(textFromHtml('<p>Hello <b>you</b></p><img src="x.png">'), 'Hello you');
  t.same(contentAsOutput('email', { subject: '{{x}}', html: '<p>{{x}}</p>' }), {
    subject: '{{x}}',
    preheader: '',
    html: '<p>{{x}}</p>',
    text: '{{x}}',
  });
  t.same(renderContent('email', { subject: 's', text: 'only text' }).output, { subject: 's', preheader: '', html: '', text: 'only text' });
});

t.test('checkTemplates: positions and partials', async (t) => {
  t.same(checkTemplates('sms', { body: 'ok {{x}}' }), []);
  t.match(checkTemplates('sms', { body: 'a\nb {{x' }), [{ path: 'content.body', position: 7, line: 2, column: 6 }]);
  t.match(checkTemplates('push', { body: 'x', data: { a: ['{{#b}}'] } }), [{ path: 'content.data.a.0', message: /Unclosed section/ }]);
  t.match(checkTemplates('sms', { body: '{{#a}}{{> p}}{{/a}}' }), [
    { path: 'content.body', message: /partials are not allowed/, position: 6 },
  ]);
});

// Delivery renders through channels/render.ts, which asks the channel's spec for the output and
// leaves out the variables a template misses (the render endpoint's question). Its output must be
// the render endpoint's, for every channel and any content and variables.
t.test("delivery's render equals the render endpoint's output", async () => {
  const word = fc.oneof(textArb, fc.constantFrom('{{name}}', '{{{raw}}}', '{{#list}}{{.}}, {{/list}}', '{{a.b}}', '<b>{{name}}</b>'));
  const vars = fc.record(
    {
      name: fc.oneof(fc.string(), fc.integer()),
      raw: fc.string(),
      list: fc.array(fc.string(), { maxLength: 3 }),
      a: fc.record({ b: fc.string() }),
    },
    { requiredKeys: [] },
  );
  const content: Record<Channel, fc.Arbitrary<ChannelContent>> = {
    email: fc.record({ subject: word, preheader: word, html: fc.oneof(htmlArb, word), text: word }, { requiredKeys: ['subject'] }),
    sms: fc.record({ body: word }),
    push: fc.record(
      { title: word, body: word, data: fc.dictionary(fc.constantFrom('k', 'deep'), word), badge: fc.nat(99), sound: word },
      { requiredKeys: ['body'] },
    ),
    'web-push': fc.record(
      { title: word, body: word, icon: word, clickUrl: word, data: fc.dictionary(fc.constantFrom('k'), word), badge: word },
      { requiredKeys: ['title'] },
    ),
  };
  const sample = fc.constantFrom(...CHANNELS).chain((channel) => fc.tuple(fc.constant(channel), content[channel], vars));
  fc.assert(
    fc.property(sample, ([channel, c, v]) => {
      // Content is rendered only once its templates passed the checks (at save, or at accept).
      fc.pre(checkTemplates(channel, c as unknown as Record<string, unknown>).length === 0);
      const req = { channel, content: JSON.stringify(c), vars: JSON.stringify(v) };
      t.same(renderOutput(req), renderContent(channel, JSON.parse(req.content), v).output);
    }),
    { numRuns: 300 },
  );
});
