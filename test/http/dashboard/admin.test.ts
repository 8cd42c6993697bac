// The dashboard's own routes over plain HTTP: owner-only refusals for a member, keys and
// connections of another workspace are not found, the suppression search and the CSV export.
import t from 'tap';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { dashboardLogin } from '../../helpers/dashboard.js';
import { startReceiver } from '../../helpers/webhook-receiver.js';
import { emit, sampleMessage, tick } from '../../helpers/webhooks.js';

const OWNER = { email: 'owner@postern.test', password: 'owner password 123' };
const MEMBER = { email: 'member@postern.test', password: 'member password 123' };

for (const db of testDatabases()) {
  t.test(`owner-only routes refuse a member (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    const acme = await daemon.workspace('acme');
    await daemon.app.operators.create({ ...OWNER, role: 'owner' });
    await daemon.app.operators.create({ ...MEMBER, role: 'member', workspaces: [acme.id] });
    const member = await dashboardLogin(daemon, MEMBER);
    t.equal((await member.request('GET', '/dashboard/api/operators')).status, 403, 'operators');
    t.equal((await member.request('GET', '/dashboard/api/audit')).status, 403, 'audit');
    t.equal((await member.request('GET', '/dashboard/api/nodes')).status, 403, 'the cluster nodes');
    t.equal((await member.request('GET', '/dashboard/api/warm-up')).status, 403, 'the sources and warm-up');
    t.equal((await member.request('POST', '/dashboard/api/workspaces', { slug: 'evil', name: 'Evil' })).status, 403, 'create a workspace');
    t.equal((await member.request('PUT', `/dashboard/api/workspaces/${acme.id}/plan`, { plan: 'pro' })).status, 403, 'change a plan');
    t.equal((await member.request('POST', '/dashboard/api/operators', { ...OWNER, email: 'x@postern.test' })).status, 403, 'invite');
    t.equal((await member.request('GET', '/dashboard/api/keys')).status, 200, 'but keys of its workspace are fine');

    const owner = await dashboardLogin(daemon, OWNER);
    t.equal((await owner.request('GET', '/dashboard/api/operators')).status, 200, 'an owner lists operators');
    const nodes = await owner.request('GET', '/dashboard/api/nodes');
    t.equal(nodes.status, 200, 'an owner lists the nodes');
    t.match(nodes.body.data, [{ pid: process.pid, self: true, stopping: false, version: String }], 'this node, beating');
    t.equal(nodes.body.data.length, 1, 'alone on its SQLite file');
    t.match(
      (await owner.request('GET', '/dashboard/api/warm-up')).body,
      { enabled: false, sources: [], data: [] },
      'no sources, warm-up off',
    );
    const audit = await owner.request('GET', '/dashboard/api/audit');
    t.ok(
      audit.body.data.some((a: any) => a.operator.email === MEMBER.email && a.outcome === 'forbidden'),
      'the refusals are audited',
    );
    t.equal((await owner.request('GET', '/dashboard/api/audit?before=abc')).status, 400, 'a bad cursor is refused');
  });

  t.test(`keys and connections of another workspace are not found (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db, env: { POSTERN_CHANNELS_ALLOW_PRIVATE: 'true' } });
    const acme = await daemon.workspace('acme');
    const globex = await daemon.workspace('globex');
    await daemon.app.operators.create({ ...OWNER, role: 'owner' });
    const owner = await dashboardLogin(daemon, OWNER);
    t.equal((await owner.request('PUT', '/dashboard/api/selection', { workspaceId: acme.id, env: 'live' })).status, 200);

    const globexKeys = await daemon.app.keys.list(globex.id);
    const revoke = await owner.request('POST', `/dashboard/api/keys/${globexKeys[0].id}/revoke`);
    t.equal(revoke.status, 404, "revoking another workspace's key is 404");
    t.equal((await daemon.request('GET', '/v1/context', { key: globex.live })).status, 200, 'and the key still works');

    const theirs = await daemon.app.connections.add({
      workspaceId: globex.id,
      env: 'live',
      channel: 'sms',
      provider: 'http',
      values: { url: 'http://127.0.0.1:9/sms', secret: 'their-secret-value' },
    });
    t.equal(
      (await owner.request('DELETE', `/dashboard/api/connections/${theirs.id}`)).status,
      404,
      "removing another workspace's connection is 404",
    );
    t.ok(await daemon.app.connections.active(globex.id, true, 'sms'), 'and it is still there');

    const added = await owner.request('POST', '/dashboard/api/connections', {
      channel: 'sms',
      provider: 'http',
      values: { url: 'http://127.0.0.1:9/sms', secret: 'our-secret-value', from: '' },
    });
    t.equal(added.status, 201, 'an owner adds a connection to the chosen workspace');
    t.notOk(added.text.includes('our-secret-value'), 'the answer holds no secret');
    t.same(added.body.credentials, [{ name: 'secret', set: true }]);
    const bad = await owner.request('POST', '/dashboard/api/connections', { channel: 'sms', provider: 'nope', values: {} });
    t.equal(bad.status, 422, 'an unknown provider is refused by the store');
    const providers = await owner.request('GET', '/dashboard/api/connections/providers');
    t.ok(
      providers.body.data.some((p: any) => p.name === 'http' && p.settings.some((s: any) => s.name === 'secret' && s.secret)),
      'provider specs',
    );
    t.equal((await owner.request('DELETE', `/dashboard/api/connections/${added.body.id}`)).status, 200, 'and removes it');
  });

  t.test(`suppression search and CSV export (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    const acme = await daemon.workspace('acme');
    const globex = await daemon.workspace('globex');
    await daemon.app.operators.create({ ...OWNER, role: 'owner' });
    const owner = await dashboardLogin(daemon, OWNER);
    t.equal((await owner.request('PUT', '/dashboard/api/selection', { workspaceId: acme.id, env: 'test' })).status, 200);
    const testList = { workspaceId: acme.id, livemode: false };
    // 2,500 entries, many sharing a timestamp: the export pages by (time, address) and skips none.
    for (let i = 0; i < 2500; i++) {
      if (i % 500 === 0) daemon.clock.advance(1000);
      await daemon.app.suppressions.add(testList, {
        address: `user${i}@example.com`,
        reason: 'manual',
        detail: i === 7 ? '=HYPERLINK("x")' : null,
      });
    }
    await daemon.app.suppressions.add({ workspaceId: globex.id, livemode: false }, { address: 'other@example.com', reason: 'bounce' });
    await daemon.app.suppressions.add({ workspaceId: acme.id, livemode: true }, { address: 'live-only@example.com', reason: 'bounce' });

    const csv = await owner.request('GET', '/dashboard/api/suppressions.csv');
    t.equal(csv.status, 200);
    t.match(csv.headers.get('content-type'), /^text\/csv/);
    t.equal(csv.headers.get('content-disposition'), 'attachment; filename="suppressions-acme-test.csv"');
    const lines = csv.text.trim().split('\r\n');
    t.equal(lines.length, 2501, 'a header and every entry');
    t.equal(new Set(lines.slice(1).map((l) => l.split(',')[0])).size, 2500, 'each once');
    t.notOk(csv.text.includes('other@example.com'), "no other workspace's entry");
    t.notOk(csv.text.includes('live-only@example.com'), "no entry of the other environment's list");
    t.ok(
      lines.some((l) => l.startsWith(`user7@example.com,manual,"'=HYPERLINK(""x"")"`)),
      'a formula is defused and quoted',
    );

    // The page searches through /v1 with the session.
    const found = await owner.request('GET', '/v1/suppressions?q=user24');
    t.equal(found.body.data.length, 50, 'a page of matches');
    t.ok(
      found.body.data.every((s: any) => s.address.includes('user24')),
      'every one matches',
    );
    t.ok(found.body.nextCursor, 'with a cursor for the next');
    const literal = await owner.request('GET', '/v1/suppressions?q=user_');
    t.same(literal.body.data, [], '_ is matched literally');
  });

  t.test(`a delivery's request is shown only in its own workspace and environment (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db, env: { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    const acme = await daemon.workspace('acme');
    const globex = await daemon.workspace('globex');
    const receiver = await startReceiver(() => 500);
    t.teardown(() => receiver.close());
    const ep = (await daemon.request('POST', '/v1/webhooks', { key: globex.live, body: { url: receiver.url } })).body;
    await emit(daemon, globex.id, 'message.delivered', sampleMessage(2));
    await tick(daemon);
    await receiver.waitFor(1);
    const [delivery] = (await daemon.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: globex.live })).body.data;
    await daemon.app.operators.create({ ...OWNER, role: 'owner' });
    const owner = await dashboardLogin(daemon, OWNER);
    const path = `/dashboard/api/webhooks/${ep.id}/deliveries/${delivery.id}/request`;

    await owner.request('PUT', '/dashboard/api/selection', { workspaceId: acme.id, env: 'live' });
    t.equal((await owner.request('GET', path)).status, 404, 'another workspace: not found');
    await owner.request('PUT', '/dashboard/api/selection', { workspaceId: globex.id, env: 'test' });
    t.equal((await owner.request('GET', path)).status, 404, 'the other environment: not found');
    await owner.request('PUT', '/dashboard/api/selection', { workspaceId: globex.id, env: 'live' });
    const shown = await owner.request('GET', path);
    t.equal(shown.status, 200);
    t.equal(shown.body.body, receiver.requests[0].body, 'the exact body the receiver got');
    t.equal(shown.body.headers['webhook-id'], receiver.requests[0].id, 'and its webhook-id');
  });
}
