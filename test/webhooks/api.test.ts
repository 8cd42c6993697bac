import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`webhook endpoints API on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    const acme = await d.workspace('acme');
    const other = await d.workspace('other');

    t.test('create shows the secret once; list and get never do', async (t) => {
      const r = await d.request('POST', '/v1/webhooks', {
        key: acme.live,
        body: { url: 'http://127.0.0.1:9/hook', events: ['message.received'], description: 'inbox' },
      });
      t.equal(r.status, 201);
      t.match(r.body, {
        id: /^whk_[0-9A-Za-z]{22}$/,
        url: 'http://127.0.0.1:9/hook',
        events: ['message.received'],
        description: 'inbox',
        enabled: true,
        livemode: true,
        secret: /^whsec_[A-Za-z0-9+/=]{40,}$/,
      });
      t.equal(Buffer.from(r.body.secret.slice(6), 'base64').length, 32);
      const got = await d.request('GET', `/v1/webhooks/${r.body.id}`, { key: acme.live });
      t.equal(got.status, 200);
      t.notOk('secret' in got.body);
      const list = await d.request('GET', '/v1/webhooks', { key: acme.live });
      t.same(
        list.body.data.map((e: { id: string }) => e.id),
        [r.body.id],
      );
      t.notMatch(JSON.stringify(list.body), /whsec_/);
    });

    t.test('defaults: every event, enabled, empty description', async (t) => {
      const r = await d.request('POST', '/v1/webhooks', { key: acme.test, body: { url: 'http://127.0.0.1:9/all' } });
      t.equal(r.status, 201);
      t.match(r.body, { events: ['*'], enabled: true, description: '', livemode: false });
    });

    t.test('endpoints belong to a workspace and an environment', async (t) => {
      const live = (await d.request('GET', '/v1/webhooks', { key: acme.live })).body.data;
      const test = (await d.request('GET', '/v1/webhooks', { key: acme.test })).body.data;
      t.equal(live.length, 1);
      t.equal(test.length, 1);
      t.not(live[0].id, test[0].id);
      t.equal((await d.request('GET', `/v1/webhooks/${live[0].id}`, { key: acme.test })).status, 404);
      t.equal((await d.request('GET', `/v1/webhooks/${live[0].id}`, { key: other.live })).status, 404);
      t.same((await d.request('GET', '/v1/webhooks', { key: other.live })).body.data, []);
    });

    t.test('validation lists every issue', async (t) => {
      const r = await d.request('POST', '/v1/webhooks', {
        key: acme.live,
        body: { url: 'not a url', events: ['message.nope'], enabled: 'yes' },
      });
      t.equal(r.status, 422);
      t.equal(r.body.error.code, 'invalid_body');
      t.same(r.body.error.issues.map((i: { path: string }) => i.path).sort(), ['enabled', 'events.0', 'url']);
      const ftp = await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: 'ftp://example.com/x' } });
      t.equal(ftp.status, 422);
      t.equal(ftp.body.error.issues[0].path, 'url');
    });

    t.test('patch and delete', async (t) => {
      const c = await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: 'http://127.0.0.1:9/p' } });
      const p = await d.request('PATCH', `/v1/webhooks/${c.body.id}`, {
        key: acme.live,
        body: { enabled: false, events: ['message.opened', 'message.clicked'], description: 'x' },
      });
      t.equal(p.status, 200);
      t.match(p.body, { enabled: false, events: ['message.opened', 'message.clicked'], description: 'x', url: 'http://127.0.0.1:9/p' });
      const del = await d.request('DELETE', `/v1/webhooks/${c.body.id}`, { key: acme.live });
      t.same(del.body, { id: c.body.id, deleted: true });
      t.equal((await d.request('GET', `/v1/webhooks/${c.body.id}`, { key: acme.live })).status, 404);
      t.equal((await d.request('DELETE', `/v1/webhooks/${c.body.id}`, { key: acme.live })).status, 404);
    });

    t.test('scope webhooks; unscoped keys have it', async (t) => {
      const read = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read,send,inbound');
      const r = await d.request('GET', '/v1/webhooks', { key: read.json.secret });
      t.equal(r.status, 403);
      t.equal(r.body.error.code, 'insufficient_scope');
      const wh = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'webhooks');
      t.equal((await d.request('GET', '/v1/webhooks', { key: wh.json.secret })).status, 200);
    });

    t.test('rotate-secret returns a new secret and when the old one stops signing', async (t) => {
      const c = await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: 'http://127.0.0.1:9/r' } });
      const r = await d.request('POST', `/v1/webhooks/${c.body.id}/rotate-secret`, { key: acme.live });
      t.equal(r.status, 200);
      t.match(r.body.secret, /^whsec_/);
      t.not(r.body.secret, c.body.secret);
      t.equal(new Date(r.body.previousSecretExpiresAt).getTime() - d.clock.now().getTime(), 24 * 3600 * 1000);
    });

    t.test('deliveries of an unknown endpoint or delivery are 404; bad query is 400', async (t) => {
      t.equal((await d.request('GET', '/v1/webhooks/whk_nope/deliveries', { key: acme.live })).status, 404);
      const c = (await d.request('GET', '/v1/webhooks', { key: acme.live })).body.data[0];
      t.equal((await d.request('POST', `/v1/webhooks/${c.id}/deliveries/dlv_nope/retry`, { key: acme.live })).status, 404);
      const bad = await d.request('GET', `/v1/webhooks/${c.id}/deliveries?limit=0`, { key: acme.live });
      t.equal(bad.status, 400);
      t.equal(bad.body.error.code, 'invalid_request');
      const ok = await d.request('GET', `/v1/webhooks/${c.id}/deliveries`, { key: acme.live });
      t.same(ok.body, { data: [] });
    });
  });
}
