// Pure rendering decisions, table-driven: which paths are missing, and what each field escapes.
import t from 'tap';
import { textFromHtml } from '../../src/channels/email/render.js';
import { contentAsOutput, renderContent } from '../../src/channels/render.js';
import { missingVariables } from '../../src/lib/mustache.js';
import { checkTemplates } from '../../src/templates/render.js';

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
