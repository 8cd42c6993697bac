import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'templates');

for (const db of testDatabases()) {
  t.test(`template push on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const acme = await d.workspace('acme');
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-tpl-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    cpSync(FIXTURES, dir, { recursive: true });

    const first = await d.cli('template', 'push', '--workspace', 'acme', '--publish', dir);
    t.equal(first.code, 0, first.stderr);
    t.equal(first.json.changed, 4);
    t.same(
      first.json.templates.map((c: any) => [c.slug, c.actions, c.versionNumber, c.status]),
      [
        ['alert', ['created', 'draft v1 saved', 'v1 published'], 1, 'published'],
        ['order-shipped', ['created', 'draft v1 saved', 'v1 published'], 1, 'published'],
        ['otp', ['created', 'draft v1 saved', 'v1 published'], 1, 'published'],
        ['welcome', ['created', 'draft v1 saved', 'v1 published'], 1, 'published'],
      ],
    );

    const second = await d.cli('template', 'push', '--workspace', 'acme', '--publish', dir);
    t.equal(second.code, 0);
    t.equal(second.json.changed, 0, 'pushing the same files twice changes nothing');
    t.ok(second.json.templates.every((c: any) => c.actions.length === 0 && c.versionNumber === 1));
    const versions = await d.request('GET', '/v1/templates/welcome/versions', { key: acme.live });
    t.equal(versions.body.data.length, 1, 'no new version');

    // The html sibling became content.html; text is derived from it when rendering.
    const r = await d.request('POST', '/v1/templates/welcome/render', {
      key: acme.live,
      body: { vars: { name: 'Ann', company: { name: 'Acme' } } },
    });
    t.equal(r.body.output.subject, 'Welcome to Acme, Ann');
    t.match(r.body.output.html, /Your account is ready<\/div><h1>Hello Ann<\/h1>/);
    t.match(r.body.output.text, /HELLO ANN/);
    const o = await d.request('POST', '/v1/templates/order-shipped/render', {
      key: acme.live,
      body: { vars: { order: { id: 5 }, items: [{ name: 'a' }, { name: 'b' }] } },
    });
    t.equal(o.body.output.text, 'Order 5:\n- a\n- b\n', 'the .txt sibling is the text part');
    const detail = await d.request('GET', '/v1/templates/welcome', { key: acme.live });
    t.match(detail.body, {
      description: 'Sent once an account is created',
      currentVersion: {
        variables: [
          { name: 'name', required: true },
          { name: 'company.name', type: 'string', required: false },
        ],
      },
    });

    // A changed file without --publish: a draft; published when pushed again with --publish.
    writeFileSync(
      path.join(dir, 'otp.json'),
      JSON.stringify({ slug: 'otp', channel: 'sms', description: 'Login code', content: { body: 'Code: {{code}}' } }),
    );
    const third = await d.cli('template', 'push', '--workspace', 'acme', path.join(dir, 'otp.json'));
    t.same(third.json.templates, [
      {
        file: path.join(dir, 'otp.json'),
        slug: 'otp',
        actions: ['description updated', 'draft v2 saved'],
        changed: true,
        versionNumber: 2,
        status: 'draft',
      },
    ]);
    const again = await d.cli('template', 'push', '--workspace', 'acme', path.join(dir, 'otp.json'));
    t.equal(again.json.changed, 0, 'the same draft is not saved twice');
    const pub = await d.cli('template', 'push', '--workspace', 'acme', '--publish', path.join(dir, 'otp.json'));
    t.same(pub.json.templates[0].actions, ['v2 published']);

    const list = await d.cli('template', 'list', '--workspace', 'acme');
    t.same(
      list.json.map((x: any) => [x.slug, x.currentVersion, x.draftVersion]),
      [
        ['alert', 1, null],
        ['order-shipped', 1, null],
        ['otp', 2, null],
        ['welcome', 1, null],
      ],
    );

    // Bad files: everything is validated first, nothing is written.
    writeFileSync(path.join(dir, 'broken.json'), JSON.stringify({ slug: 'broken', channel: 'sms', content: { body: 'x {{#a}}' } }));
    const bad = await d.cli('template', 'push', '--workspace', 'acme', dir);
    t.equal(bad.code, 1);
    const err = JSON.parse(bad.stderr).error;
    t.equal(err.code, 'invalid_body');
    t.match(err.issues, [{ path: /broken\.json:content\.body$/, message: /Unclosed section/ }]);
    t.equal((await d.request('GET', '/v1/templates/broken', { key: acme.live })).status, 404);
    rmSync(path.join(dir, 'broken.json'));

    writeFileSync(path.join(dir, 'otp.json'), JSON.stringify({ slug: 'otp', channel: 'email', content: { subject: 's', text: 't' } }));
    const channel = await d.cli('template', 'push', '--workspace', 'acme', path.join(dir, 'otp.json'));
    t.equal(channel.code, 1);
    t.match(JSON.parse(channel.stderr).error.issues, [{ message: /channel cannot change/ }]);

    writeFileSync(
      path.join(dir, 'both.json'),
      JSON.stringify({ slug: 'both', channel: 'email', content: { subject: 's', html: '<p>x</p>' } }),
    );
    writeFileSync(path.join(dir, 'both.html'), '<p>y</p>');
    const both = await d.cli('template', 'push', '--workspace', 'acme', path.join(dir, 'both.json'));
    t.match(JSON.parse(both.stderr).error.issues, [{ message: /both in the JSON and in/ }]);

    const usage = await d.cli('template', 'push', '--workspace', 'acme');
    t.equal(usage.code, 2);
    const nofile = await d.cli('template', 'push', '--workspace', 'acme', path.join(dir, 'missing.json'));
    t.equal(nofile.code, 2);
  });
}
