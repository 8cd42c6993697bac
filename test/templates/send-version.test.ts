// Which version a template send takes, read with the template in one statement
// (templates/store.ts resolveForSend): live keys send the current published version, test keys the
// newest (a draft included), a named version is that one (live: only if published), and every way
// a template cannot be sent is its own 422 issue.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`the version a template send takes, on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const req = (method: string, path: string, key: string, body?: unknown) => d.request(method, path, { key, body });
    const draft = (subject: string) =>
      req('PUT', '/v1/templates/promo/draft', ws.live, { content: { subject, text: 'Hi {{name}}' }, variables: [{ name: 'name' }] });
    // The version stored with the message (the API does not show it; the dispatcher renders it),
    // and the content the row keeps: that version's, as it was saved.
    const subjects = ['', 'one', 'two', 'three'];
    const versionOf = async (publicId: string) => {
      const row = await d.app.db
        .selectFrom('messages')
        .innerJoin('message_contents', 'message_contents.message_id', 'messages.id')
        .select(['template_version', 'content'])
        .where('public_id', '=', publicId)
        .executeTakeFirstOrThrow();
      const version = Number(row.template_version);
      t.same(JSON.parse(row.content), { subject: subjects[version], text: 'Hi {{name}}' }, `the row keeps version ${version}'s content`);
      return version;
    };
    const send = async (key: string, extra: object = {}) => {
      const res = await req('POST', '/v1/send', key, { template: 'PROMO', to: 'ann@example.com', vars: { name: 'Ann' }, ...extra });
      return res.status === 202
        ? { version: await versionOf(res.body.id as string) }
        : { status: res.status, issue: res.body.error.issues[0] };
    };

    t.same(await send(ws.live), { status: 422, issue: { path: 'template', message: 'no template promo in this workspace' } });
    t.same(await send(ws.live, { template: 'not a slug!' }), {
      status: 422,
      issue: { path: 'template', message: 'no template not a slug! in this workspace' },
    });
    t.equal((await req('POST', '/v1/templates', ws.live, { slug: 'promo', channel: 'email' })).status, 201);
    t.match(await send(ws.test), { status: 422, issue: { path: 'template', message: /has no versions yet/ } }, 'test: no version at all');
    t.match(await send(ws.live), { status: 422, issue: { path: 'template', message: /never been published/ } });

    t.equal((await draft('one')).body.versionNumber, 1);
    t.same(await send(ws.test), { version: 1 }, 'test: the newest version, a draft');
    t.match(await send(ws.live), { status: 422, issue: { message: /never been published/ } }, 'live: drafts are never sent');
    t.match(await send(ws.live, { version: 1 }), { status: 422, issue: { path: 'version', message: /unpublished draft/ } });
    t.same(await send(ws.test, { version: 1 }), { version: 1 });

    t.equal((await req('POST', '/v1/templates/promo/publish', ws.live)).status, 200);
    t.equal((await draft('two')).body.versionNumber, 2);
    t.same(await send(ws.live), { version: 1 }, 'live: the current published version, not the newer draft');
    t.same(await send(ws.test), { version: 2 }, 'test: the newer draft');
    t.same(await send(ws.live, { version: 1 }), { version: 1 });
    t.match(await send(ws.live, { version: 2 }), {
      status: 422,
      issue: { path: 'version', message: /version 2 of template promo is an unpublished draft/ },
    });
    t.match(await send(ws.test, { version: 3 }), { status: 422, issue: { path: 'version', message: 'template promo has no version 3' } });

    t.equal((await req('POST', '/v1/templates/promo/publish', ws.live)).status, 200);
    t.same(await send(ws.live), { version: 2 }, 'published: live takes version 2');
    t.equal((await draft('three')).body.versionNumber, 3);
    t.same(await send(ws.test), { version: 3 });

    t.equal((await req('PATCH', '/v1/templates/promo', ws.live, { status: 'archived' })).status, 200);
    for (const key of [ws.live, ws.test]) {
      t.match(await send(key), { status: 422, issue: { path: 'template', message: 'template promo is archived' } });
    }
    t.equal((await req('PATCH', '/v1/templates/promo', ws.live, { status: 'active' })).status, 200);
    t.same(await send(ws.live), { version: 2 }, 'restored');

    // Another workspace's template of the same slug is not this one's.
    const other = await d.workspace('other');
    t.match(await send(other.live), { status: 422, issue: { message: 'no template promo in this workspace' } });
  });
}
