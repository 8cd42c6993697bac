// GET /dashboard/api/overview over HTTP with a dashboard session: known rows seeded in the
// messages, suppressions, webhook endpoints and domains tables give known figures — the 24 h and
// 7-day windows, the daily series, the queue and its oldest ready message, the failing endpoint,
// the plan quota and the warnings; rows of another environment, another workspace or older than
// 7 days are not counted.
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { dashboardLogin } from '../../helpers/dashboard.js';
import { testDatabases } from '../../helpers/databases.js';
import { startRemoteMx } from '../../helpers/smtp-sink.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/** Logs an owner in and selects a workspace; returns its request function. */
async function dashboardSession(d: TestDaemon, workspaceId: string, env: 'live' | 'test') {
  const dash = await dashboardLogin(d);
  await dash.select(workspaceId, env);
  return dash.request;
}

t.test('overview figures', async (t) => {
  // No dispatcher pass while the rows are seeded by hand (the queued one is due): an accept wakes
  // the dispatcher, so it is stopped.
  const d = await bootDaemon(t);
  await d.app.workers.find((w) => w.name === 'dispatcher')!.stop();
  const ws = await d.workspace('acme');
  const other = await d.workspace('other');
  const now = d.clock.now().getTime();
  const iso = (ms: number) => new Date(ms).toISOString();

  // A message accepted `age` ago and then set to `status`.
  const seed = async (status: string, age: number, set: Record<string, unknown> = {}, key = ws.test) => {
    const r = await d.request('POST', '/v1/send', {
      key,
      body: { to: 'ann@example.com', channel: 'email', content: { subject: 'Hi', text: 'x' }, scheduledAt: iso(now + 30 * DAY) },
    });
    t.equal(r.status, 202);
    await d.app.db
      .updateTable('messages')
      .set({ status: status as never, created_at: iso(now - age), due_at: null, ...set })
      .where('public_id', '=', r.body.id)
      .execute();
  };
  for (let i = 0; i < 3; i++) await seed('delivered', HOUR);
  await seed('failed', 2 * HOUR);
  await seed('opted_out', 3 * HOUR);
  await seed('delivered', 3 * DAY);
  await seed('delivered', 3 * DAY);
  await seed('failed', 3 * DAY);
  await seed('sent', 2 * DAY);
  await seed('delivered', 10 * DAY); // outside both windows
  await seed('delivered', HOUR, {}, ws.live); // the other environment
  await seed('delivered', HOUR, {}, other.test); // another workspace
  // The queue: scheduled (in the future), queued ready for 2 minutes, deferred, in flight.
  await seed('scheduled', 5 * HOUR, { due_at: iso(now + DAY) });
  await seed('queued', 4 * HOUR, { due_at: iso(now - 120_000) });
  await seed('dispatched', 4 * HOUR, { due_at: iso(now + HOUR) });
  await seed('dispatched', 4 * HOUR, { due_at: iso(now - 600_000), locked_by: 'node-a', locked_until: iso(now + 60_000) });

  // The live bounce is another environment's: the test overview does not count it.
  for (const [reason, age, livemode] of [
    ['bounce', HOUR, 0],
    ['complaint', HOUR, 0],
    ['bounce', 2 * DAY, 0],
    ['bounce', HOUR, 1],
  ] as const) {
    await d.app.db
      .insertInto('suppressions')
      .values({
        id: `sup-${reason}-${age}-${livemode}`,
        workspace_id: ws.id,
        livemode,
        address: `${reason}${age}@example.com`,
        reason,
        detail: null,
        message_public_id: null,
        created_at: iso(now - age),
      })
      .execute();
  }
  const hook = await d.request('POST', '/v1/webhooks', { key: ws.test, body: { url: 'https://hooks.example/x', events: ['*'] } });
  t.equal(hook.status, 201);
  await d.app.db
    .updateTable('webhook_endpoints')
    .set({ failing_since: iso(now - HOUR) })
    .where('public_id', '=', hook.body.id)
    .execute();
  await d.app.db
    .insertInto('domains')
    .values({
      id: 'dom-1',
      workspace_id: ws.id,
      domain: 'mail.acme.test',
      kind: 'custom',
      status: 'pending',
      dkim_selector: null,
      dkim_private_key: null,
      dkim_public_key: null,
      verified_at: null,
      dkim_verified_at: iso(now - HOUR),
      mx_verified_at: null,
      created_at: iso(now - DAY),
      deleted_at: null,
    })
    .execute();

  const call = await dashboardSession(d, ws.id, 'test');
  const r = await call('GET', '/dashboard/api/overview');
  t.equal(r.status, 200);
  const o = r.body;
  t.match(o, { generatedAt: iso(now), workspace: { id: ws.id, slug: 'acme' }, env: 'test' });
  t.same(o.windows['24h'], {
    accepted: 9,
    sent: 0,
    delivered: 3,
    deferred: 2,
    failed: 1,
    bounced: 1,
    complained: 1,
    optedOut: 1,
    suppressed: 0,
    blocked: 0,
    canceled: 0,
    bounceRate: 0.25,
  });
  t.match(o.windows['7d'], { accepted: 13, sent: 1, delivered: 5, failed: 2, bounced: 2, complained: 1, bounceRate: 2 / 8 });
  t.equal(o.daily.length, 7);
  t.equal(o.daily[6].day, iso(now).slice(0, 10));
  const total = (k: 'delivered' | 'failed' | 'sent') => o.daily.reduce((a: number, x: Record<string, number>) => a + x[k], 0);
  t.same([total('delivered'), total('failed'), total('sent')], [5, 2, 1]);
  t.same(o.queue, {
    scheduled: 1,
    queued: 1,
    rendered: 0,
    deferred: 1,
    inFlight: 1,
    oldestReadyAt: iso(now - 120_000),
    oldestReadyAgeSeconds: 120,
  });
  t.same(o.inbound, { '24h': 0, '7d': 0 });
  t.same(o.webhooks.failing, [
    { id: hook.body.id, url: 'https://hooks.example/x', failingSince: iso(now - HOUR), disabled: false, disabledReason: null },
  ]);
  t.match(o.quota, { messages: { used: 1, limit: 500 }, inbound: { used: 0 }, senderCaps: [] });
  t.same(o.warnings, [{ kind: 'unverified_domain', message: 'mail.acme.test is not verified yet: the MX record not found' }]);

  // The live environment sees only its own message.
  await call('PUT', '/dashboard/api/selection', { workspaceId: ws.id, env: 'live' });
  const live = (await call('GET', '/dashboard/api/overview')).body;
  t.match(live.windows['24h'], { accepted: 1, delivered: 1 });
});

for (const db of testDatabases()) {
  t.test(`test simulations are not live bounces, and live usage is counted on an unlimited plan (${db})`, async (t) => {
    const { env } = await startRemoteMx(t);
    const d = await bootDaemon(t, { db, env });
    const ws = await d.workspace('acme', { plan: 'custom' });
    const tick = () => d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const send = async (key: string, to: string) => {
      const r = await d.request('POST', '/v1/send-raw', { key, body: { to, channel: 'email', content: { subject: 'Hi', text: 'x' } } });
      t.equal(r.status, 202);
      await tick();
      return (await d.request('GET', `/v1/messages/${r.body.id}`, { key })).body;
    };
    t.match(await send(ws.test, 'failed@example.com'), { status: 'failed' });
    t.match(await send(ws.test, 'bounce@example.com'), { status: 'failed' });
    for (let i = 0; i < 3; i++) t.match(await send(ws.live, `reader${i}@example.net`), { status: 'delivered' });

    const live = (await (await dashboardSession(d, ws.id, 'live'))('GET', '/dashboard/api/overview')).body;
    t.match(live.windows['24h'], { accepted: 3, delivered: 3, failed: 0, bounced: 0, bounceRate: 0 }, 'no simulated bounce on live');
    t.same(live.quota.messages, { used: 3, limit: null }, 'live messages this month: 3 / ∞');

    const test = (await (await dashboardSession(d, ws.id, 'test'))('GET', '/dashboard/api/overview')).body;
    t.match(test.windows['24h'], { accepted: 2, failed: 2, bounced: 2 }, 'the simulations count in test');
    t.same(test.quota.messages, { used: 3, limit: null }, 'test sends are not usage');
  });
}

t.test('without a session: 401', async (t) => {
  const d = await bootDaemon(t);
  const res = await fetch(`${d.url}/dashboard/api/overview`);
  t.equal(res.status, 401);
});
