import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

const email = {
  content: { subject: 'Hi {{name}} & co', preheader: 'Hello {{name}}', html: '<body><p>Hi {{name}}</p><p>{{{raw}}}</p></body>' },
  variables: [{ name: 'name', type: 'string', description: 'first name', required: true }, { name: 'raw' }],
};

// tap's rejects() types want an Error shape; AppError's extra.issues is what matters here.
const rejects = (p: Promise<unknown>, wanted: object, msg = 'rejects') => t.rejects(p, wanted as Error, msg);

for (const db of testDatabases()) {
  t.test(`templates API on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const acme = await d.workspace('acme', { plan: 'starter' });
    const other = await d.workspace('other');
    const req = (method: string, path: string, body?: unknown, key = acme.live) => d.request(method, path, { key, body });

    t.test('draft → publish → render cycle with version numbering', async (t) => {
      const created = await req('POST', '/v1/templates', { slug: 'Welcome', channel: 'email', description: 'hello' });
      t.equal(created.status, 201);
      t.match(created.body, {
        slug: 'welcome',
        channel: 'email',
        description: 'hello',
        status: 'active',
        currentVersion: null,
        draft: null,
        updatedAt: String,
      });

      const never = await req('POST', '/v1/templates/welcome/render', { vars: {} });
      t.equal(never.status, 422, 'never published: nothing to render');
      t.match(never.body.error.issues[0], { path: 'template', message: /never been published/ });
      t.equal((await req('POST', '/v1/templates/welcome/publish')).status, 409, 'publish without draft is 409');
      t.equal((await req('POST', '/v1/templates/welcome/publish')).body.error.code, 'conflict');

      const v1 = await req('PUT', '/v1/templates/welcome/draft', email);
      t.equal(v1.status, 200);
      t.match(v1.body, { versionNumber: 1, status: 'draft', publishedAt: null, content: email.content });
      t.same(v1.body.variables[1], { name: 'raw', type: 'string', description: '', required: false }, 'variable defaults');

      const again = await req('PUT', '/v1/templates/welcome/draft', { ...email, content: { ...email.content, subject: 'Hey {{name}}' } });
      t.equal(again.body.versionNumber, 1, 'saving again updates the one draft');

      const draftRender = await req('POST', '/v1/templates/welcome/render', { vars: { name: 'Ann' }, version: 1 });
      t.equal(draftRender.status, 200, 'a draft renders when its version is named');
      t.equal(draftRender.body.output.subject, 'Hey Ann');

      const pub = await req('POST', '/v1/templates/welcome/publish');
      t.match(pub.body, { versionNumber: 1, status: 'published', publishedAt: String });

      const detail = await req('GET', '/v1/templates/WELCOME', undefined, acme.test);
      t.equal(detail.status, 200, 'uppercase slug in the path is lowercased; the test env sees the same template');
      t.match(detail.body, {
        slug: 'welcome',
        currentVersion: { versionNumber: 1, publishedAt: pub.body.publishedAt, variables: v1.body.variables },
        draft: null,
      });

      const r = await req('POST', '/v1/templates/welcome/render', { vars: { name: '<Ann>', raw: '<b>x</b>' } });
      t.equal(r.status, 200);
      t.equal(r.body.channel, 'email');
      t.equal(r.body.output.subject, 'Hey <Ann>', 'subject never escaped');
      t.equal(r.body.output.preheader, 'Hello <Ann>');
      t.match(
        r.body.output.html,
        /^<body><div style="display:none[^"]*" aria-hidden="true">Hello &#60;Ann&#62;<\/div><p>Hi &lt;Ann&gt;<\/p><p><b>x<\/b><\/p><\/body>$/,
        'escaped in html; preheader hidden first in body',
      );
      t.match(r.body.output.text, /Hi <Ann>/, 'text derived from html, unescaped');
      t.notMatch(r.body.output.text, /Hello/, 'preheader is not part of the derived text');
      t.same(r.body.missing, []);

      const v2 = await req('PUT', '/v1/templates/welcome/draft', { content: { subject: 'v2 {{name}}', text: 'plain {{name}}' } });
      t.equal(v2.body.versionNumber, 2);
      const still = await req('POST', '/v1/templates/welcome/render', { vars: { name: 'A' } });
      t.equal(still.body.output.subject, 'Hey A', 'render uses the published version while a draft exists');
      const withDraft = await req('GET', '/v1/templates/welcome');
      t.match(withDraft.body, { currentVersion: { versionNumber: 1 }, draft: { versionNumber: 2 } });

      t.equal((await req('DELETE', '/v1/templates/welcome/draft')).status, 200);
      t.equal((await req('DELETE', '/v1/templates/welcome/draft')).status, 404, 'no draft left to discard');
      const v2b = await req('PUT', '/v1/templates/welcome/draft', { content: { subject: 'v2b', text: 'plain' } });
      t.equal(v2b.body.versionNumber, 2, 'a discarded draft number is free again');
      await req('POST', '/v1/templates/welcome/publish');
      const v3 = await req('PUT', '/v1/templates/welcome/draft', { content: { subject: 'v3', text: 'x' } });
      t.equal(v3.body.versionNumber, 3);

      const versions = await req('GET', '/v1/templates/welcome/versions');
      t.equal(versions.status, 200);
      t.same(
        versions.body.data.map((v: any) => [v.versionNumber, v.status]),
        [
          [3, 'draft'],
          [2, 'published'],
          [1, 'published'],
        ],
      );
      t.equal(versions.body.data[2].content.subject, 'Hey {{name}}', 'published v1 unchanged by later drafts');

      const old = await req('POST', '/v1/templates/welcome/render', { vars: { name: 'B' }, version: 1 });
      t.equal(old.body.output.subject, 'Hey B', 'an old version renders when pinned');
      const none = await req('POST', '/v1/templates/welcome/render', { vars: {}, version: 9 });
      t.equal(none.status, 422);
      t.match(none.body.error.issues, [{ path: 'version' }]);
    });

    t.test('resolveForSend: live uses published, test uses latest, pins checked', async (t) => {
      const s = d.app.templates;
      t.match(await s.resolveForSend(acme.id, 'welcome', { livemode: true }), { slug: 'welcome', channel: 'email', versionNumber: 2 });
      t.match(await s.resolveForSend(acme.id, 'WELCOME', { livemode: false }), { versionNumber: 3, contentJson: /"subject":"v3"/ });
      t.match(await s.resolveForSend(acme.id, 'welcome', { livemode: true, version: 1 }), { versionNumber: 1 });
      await rejects(s.resolveForSend(acme.id, 'welcome', { livemode: true, version: 7 }), {
        code: 'invalid_body',
        extra: { issues: [{ path: 'version' }] },
      });
      await rejects(s.resolveForSend(acme.id, 'welcome', { livemode: true, version: 3 }), {
        extra: { issues: [{ path: 'version', message: /draft/ }] },
      });
      await rejects(s.resolveForSend(acme.id, 'nope', { livemode: false }), {
        extra: { issues: [{ path: 'template', message: /no template nope/ }] },
      });
      await req('POST', '/v1/templates', { slug: 'fresh', channel: 'sms' });
      await req('PUT', '/v1/templates/fresh/draft', { content: { body: 'x' } });
      await rejects(s.resolveForSend(acme.id, 'fresh', { livemode: true }), {
        extra: { issues: [{ path: 'template', message: /never been published/ }] },
      });
      t.match(await s.resolveForSend(acme.id, 'fresh', { livemode: false }), { versionNumber: 1, channel: 'sms' });
      await rejects(
        s.resolveForSend(other.id, 'welcome', { livemode: false }),
        { extra: { issues: [{ path: 'template' }] } },
        'another workspace cannot send it',
      );
    });

    t.test('missing: nested, section and inverted-section paths, in order, no duplicates', async (t) => {
      await req('POST', '/v1/templates', { slug: 'order', channel: 'sms' });
      await req('PUT', '/v1/templates/order/draft', {
        content: {
          body: '{{customer.name}} {{#order}}{{id}} {{#items}}{{sku}}{{/items}}{{/order}}{{^vip}}{{promo}}{{/vip}} {{customer.name}} {{total}}',
        },
      });
      await req('POST', '/v1/templates/order/publish');
      const none = await req('POST', '/v1/templates/order/render', { vars: {} });
      t.same(none.body.missing, ['customer.name', 'order', 'order.id', 'order.items', 'order.items.sku', 'vip', 'promo', 'total']);
      const some = await req('POST', '/v1/templates/order/render', {
        vars: { customer: {}, order: { id: 7, items: [{ sku: 'a' }, {}] }, vip: true, total: 0 },
      });
      t.same(some.body.missing, ['customer.name', 'order.items.sku']);
      t.equal(some.body.output.body, ' 7 a  0');
      const all = await req('POST', '/v1/templates/order/render', {
        vars: { customer: { name: 'C' }, order: { id: 7, items: [] }, vip: false, promo: 'P', total: 3 },
      });
      t.same(all.body.missing, []);
      t.equal(all.body.output.body, 'C 7 P C 3');
    });

    t.test('escaping per field: sms, push, web-push never escape', async (t) => {
      const v = { x: '<a&"b">' };
      await req('POST', '/v1/templates', { slug: 'p', channel: 'push' });
      await req('PUT', '/v1/templates/p/draft', {
        content: { title: 'T {{x}}', body: 'B {{x}}', data: { deep: ['{{x}}'], n: 1 }, badge: 3, sound: 'ding' },
      });
      await req('POST', '/v1/templates/p/publish');
      const p = await req('POST', '/v1/templates/p/render', { vars: v });
      t.same(p.body, {
        channel: 'push',
        output: { title: 'T <a&"b">', body: 'B <a&"b">', data: { deep: ['<a&"b">'], n: 1 }, badge: 3, sound: 'ding' },
        missing: [],
      });
      await req('POST', '/v1/templates', { slug: 'w', channel: 'web-push' });
      await req('PUT', '/v1/templates/w/draft', { content: { title: '{{x}}', clickUrl: 'https://e.test/?q={{x}}' } });
      await req('POST', '/v1/templates/w/publish');
      const w = await req('POST', '/v1/templates/w/render', { vars: v });
      t.same(w.body.output, { title: '<a&"b">', body: '', icon: null, clickUrl: 'https://e.test/?q=<a&"b">', data: {}, badge: null });
      const s = await req('POST', '/v1/templates/fresh/render', { vars: v, version: 1 });
      t.same(s.body.output, { body: 'x' });
    });

    t.test('validation errors', async (t) => {
      const cases: [string, string, unknown, number, RegExp | string][] = [
        ['POST', '/v1/templates', { slug: 'bad slug!', channel: 'email' }, 422, 'slug'],
        ['POST', '/v1/templates', { slug: 'x'.repeat(65), channel: 'email' }, 422, 'slug'],
        ['POST', '/v1/templates', { slug: '', channel: 'email' }, 422, 'slug'],
        ['POST', '/v1/templates', { slug: 'ok', channel: 'fax' }, 422, 'channel'],
        ['POST', '/v1/templates', { slug: 'ok' }, 422, 'channel'],
        ['POST', '/v1/templates', { slug: 'ok', channel: 'sms', extra: 1 }, 422, ''],
        ['POST', '/v1/templates', { slug: 'ok', channel: 'sms', description: 5 }, 422, 'description'],
        ['PUT', '/v1/templates/welcome/draft', {}, 422, 'content'],
        ['PUT', '/v1/templates/welcome/draft', { content: { html: '<p>x</p>' } }, 422, 'content.subject'],
        ['PUT', '/v1/templates/welcome/draft', { content: { subject: 's' } }, 422, 'content.html'],
        ['PUT', '/v1/templates/welcome/draft', { content: { subject: 's', text: 't', body: 'x' } }, 422, 'content'],
        ['PUT', '/v1/templates/fresh/draft', { content: { body: '' } }, 422, 'content.body'],
        ['PUT', '/v1/templates/p/draft', { content: { body: 'b', badge: -1 } }, 422, 'content.badge'],
        ['PUT', '/v1/templates/p/draft', { content: { body: 'b', data: 'x' } }, 422, 'content.data'],
        ['PUT', '/v1/templates/w/draft', { content: { body: 'b' } }, 422, 'content.title'],
        ['PUT', '/v1/templates/fresh/draft', { content: { body: 'x' }, variables: [{ name: 'a', type: 'date' }] }, 422, 'variables.0.type'],
        ['PUT', '/v1/templates/fresh/draft', { content: { body: 'x' }, variables: [{ name: 'a b' }] }, 422, 'variables.0.name'],
        [
          'PUT',
          '/v1/templates/fresh/draft',
          { content: { body: 'x' }, variables: [{ name: 'a' }, { name: 'a' }] },
          422,
          'variables.1.name',
        ],
        ['PUT', '/v1/templates/fresh/draft', { content: { body: 'x' }, variables: { name: 'a' } }, 422, 'variables'],
        ['PUT', '/v1/templates/fresh/draft', { content: { body: 'x {{> header}}' } }, 422, 'content.body'],
        ['PUT', '/v1/templates/nope/draft', { content: { body: 'x' } }, 404, ''],
        ['POST', '/v1/templates/welcome/render', { vars: [] }, 422, 'vars'],
        ['POST', '/v1/templates/welcome/render', { vars: {}, version: 0 }, 422, 'version'],
        ['POST', '/v1/templates/welcome/render', { vars: {}, version: 'latest' }, 422, 'version'],
        ['GET', '/v1/templates/nope', undefined, 404, ''],
        ['GET', '/v1/templates/bad%20slug', undefined, 404, ''],
        ['POST', '/v1/templates/nope/publish', undefined, 404, ''],
        ['GET', '/v1/templates/nope/versions', undefined, 404, ''],
      ];
      for (const [method, path, body, status, issuePath] of cases) {
        const r = await req(method, path, body);
        t.equal(r.status, status, `${method} ${path} ${JSON.stringify(body)}`);
        if (status === 422) {
          t.equal(r.body.error.code, 'invalid_body');
          if (issuePath)
            t.ok(
              r.body.error.issues.some((i: any) => i.path === issuePath),
              `issue at ${issuePath}: ${JSON.stringify(r.body.error.issues)}`,
            );
        } else {
          t.equal(r.body.error.code, 'not_found');
        }
      }
      const dup = await req('POST', '/v1/templates', { slug: 'WELCOME', channel: 'email' });
      t.equal(dup.status, 409);
      t.equal(dup.body.error.code, 'already_exists');

      const parse = await req('PUT', '/v1/templates/welcome/draft', { content: { subject: 'ok {{name', html: '<p>\n{{#a}}x</p>' } });
      t.equal(parse.status, 422, 'a template that does not parse is rejected at save');
      t.match(parse.body.error.issues, [
        { path: 'content.subject', message: /Unclosed tag at 9/, position: 9, line: 1, column: 10 },
        { path: 'content.html', message: /Unclosed section "a" at 15/, position: 15, line: 2, column: 12 },
      ]);
      const bad = await req('PUT', '/v1/templates/welcome/draft', { content: { subject: '{{/x}}', text: 't' } });
      t.match(bad.body.error.issues, [{ path: 'content.subject', message: /Unopened section "x" at 0/, position: 0 }]);
      const versions = await req('GET', '/v1/templates/welcome/versions');
      t.equal(versions.body.data[0].content.subject, 'v3', 'rejected saves changed nothing');
    });

    t.test('concurrent draft saves open exactly one draft', async (t) => {
      await req('POST', '/v1/templates', { slug: 'race', channel: 'sms' });
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => req('PUT', '/v1/templates/race/draft', { content: { body: `b${i}` } })),
      );
      t.same(
        results.map((r) => r.status),
        [200, 200, 200, 200, 200, 200],
      );
      const versions = await req('GET', '/v1/templates/race/versions');
      t.same(
        versions.body.data.map((v: any) => [v.versionNumber, v.status]),
        [[1, 'draft']],
      );
    });

    t.test('archive through PATCH; archived templates cannot be sent', async (t) => {
      const r = await req('PATCH', '/v1/templates/fresh', { description: 'otp', status: 'archived' });
      t.match(r.body, { description: 'otp', status: 'archived' });
      await rejects(d.app.templates.resolveForSend(acme.id, 'fresh', { livemode: false }), {
        extra: { issues: [{ path: 'template', message: /archived/ }] },
      });
      t.equal((await req('PATCH', '/v1/templates/fresh', { status: 'gone' })).status, 422);
      await req('PATCH', '/v1/templates/fresh', { status: 'active' });
    });

    t.test('list: summaries of the workspace only', async (t) => {
      const list = await req('GET', '/v1/templates', undefined, acme.test);
      t.equal(list.status, 200);
      t.same(
        list.body.data.map((s: any) => s.slug),
        ['fresh', 'order', 'p', 'race', 'w', 'welcome'],
      );
      t.same(Object.keys(list.body.data[0]).sort(), ['channel', 'description', 'slug', 'status', 'updatedAt']);
      const o = await req('GET', '/v1/templates', undefined, other.live);
      t.same(o.body, { data: [] }, 'another workspace sees none of them');
      t.equal((await req('GET', '/v1/templates/welcome', undefined, other.live)).status, 404);
      t.equal((await req('POST', '/v1/templates/welcome/render', { vars: {} }, other.live)).status, 404);
      t.equal((await req('PUT', '/v1/templates/welcome/draft', { content: { subject: 'x', text: 'y' } }, other.live)).status, 404);
      const mine = await req('POST', '/v1/templates', { slug: 'welcome', channel: 'sms' }, other.live);
      t.equal(mine.status, 201, 'slugs are per workspace');
    });

    t.test('scopes: read for reads and render, send for draft operations', async (t) => {
      const readKey = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read')).json.secret;
      const sendKey = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'send')).json.secret;
      const reads: [string, string, unknown?][] = [
        ['GET', '/v1/templates'],
        ['GET', '/v1/templates/welcome'],
        ['POST', '/v1/templates/welcome/render', { vars: {} }],
      ];
      const writes: [string, string, unknown?][] = [
        ['POST', '/v1/templates', { slug: 'scoped', channel: 'sms' }],
        ['PUT', '/v1/templates/scoped/draft', { content: { body: 'x' } }],
        ['GET', '/v1/templates/scoped/versions'],
        ['POST', '/v1/templates/scoped/publish'],
        ['PATCH', '/v1/templates/scoped', { description: 'd' }],
        ['PUT', '/v1/templates/scoped/draft', { content: { body: 'y' } }],
        ['DELETE', '/v1/templates/scoped/draft'],
      ];
      for (const [m, p, b] of reads) {
        t.equal((await req(m, p, b, readKey)).status, 200, `read key: ${m} ${p}`);
        const denied = await req(m, p, b, sendKey);
        t.equal(denied.status, 403, `send key: ${m} ${p}`);
        t.equal(denied.body.error.code, 'insufficient_scope');
      }
      for (const [m, p, b] of writes) {
        const denied = await req(m, p, b, readKey);
        t.equal(denied.status, 403, `read key: ${m} ${p}`);
        t.equal(denied.body.error.code, 'insufficient_scope');
        t.ok([200, 201].includes((await req(m, p, b, sendKey)).status), `send key: ${m} ${p}`);
      }
    });

    t.test('free plan: at most 10 templates', async (t) => {
      for (let i = 0; i < 9; i++) t.equal((await req('POST', '/v1/templates', { slug: `t${i}`, channel: 'sms' }, other.live)).status, 201);
      const over = await req('POST', '/v1/templates', { slug: 'eleventh', channel: 'sms' }, other.test);
      t.equal(over.status, 403);
      t.equal(over.body.error.code, 'plan_limit');
      t.equal((await req('GET', '/v1/templates', undefined, other.live)).body.data.length, 10);
    });
  });
}
