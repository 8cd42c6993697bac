import type { Test } from 'tap';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { emit, sampleMessage, tick } from '../helpers/webhooks.js';
import { startReceiver, verify, type Receiver } from '../helpers/webhook-receiver.js';

const PRIVATE_OK = { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' };

async function endpoint(d: TestDaemon, key: string, url: string, body: Record<string, unknown> = {}) {
  const r = await d.request('POST', '/v1/webhooks', { key, body: { url, ...body } });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body as { id: string; secret: string };
}

async function receiver(t: Test, behaviour?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(behaviour);
  t.teardown(() => r.close());
  return r;
}

for (const db of testDatabases()) {
  t.test(`signed delivery and routing on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: PRIVATE_OK });
    const acme = await d.workspace('acme');
    const other = await d.workspace('other');
    const rx = await receiver(t);
    const ep = await endpoint(d, acme.live, rx.url);

    const evt = await emit(d, acme.id, 'message.delivered', sampleMessage(1));
    await tick(d);
    t.equal(rx.requests.length, 1);
    const got = rx.requests[0];
    t.equal(got.id, evt, 'webhook-id is the event id');
    t.match(got.id, /^evt_/);
    t.equal(got.timestamp, String(Math.floor(d.clock.now().getTime() / 1000)));
    t.match(got.signature, /^v1,[A-Za-z0-9+/]+=*$/);
    t.ok(verify(ep.secret, got), 'the signature verifies with an independent implementation');
    t.notOk(verify(ep.secret, { ...got, body: got.body + ' ' }), 'and fails for another body');
    t.equal(got.headers['content-type'], 'application/json');
    t.same(got.json, { id: evt, type: 'message.delivered', createdAt: d.clock.now().toISOString(), data: sampleMessage(1) });

    t.test('another workspace, another environment, or an unsubscribed type is not delivered', async (t) => {
      await emit(d, other.id, 'message.delivered', sampleMessage(2));
      await emit(d, acme.id, 'message.delivered', sampleMessage(3), { livemode: false });
      const opensOnly = await receiver(t);
      await endpoint(d, acme.live, opensOnly.url, { events: ['message.opened'] });
      await emit(d, acme.id, 'message.sent', sampleMessage(4));
      await emit(d, acme.id, 'message.opened', sampleMessage(5));
      await tick(d);
      // Deliveries run concurrently, so arrival order is not guaranteed (receivers must not rely on it).
      t.same(rx.requests.map((r) => r.json.type).sort(), ['message.delivered', 'message.opened', 'message.sent']);
      t.same(
        opensOnly.requests.map((r) => r.json.type),
        ['message.opened'],
      );
    });

    t.test('message.received goes to the bound endpoint only, else to every subscriber', async (t) => {
      const a = await receiver(t);
      const b = await receiver(t);
      const ws = await d.workspace('inboxes');
      const epA = await endpoint(d, ws.live, a.url, { events: ['message.received'] });
      await endpoint(d, ws.live, b.url, { events: ['message.received', 'message.opened'] });
      const bound = await emit(d, ws.id, 'message.received', { id: 'rcv_1' }, { endpointId: epA.id });
      const unbound = await emit(d, ws.id, 'message.received', { id: 'rcv_2' });
      await tick(d);
      t.same(a.requests.map((r) => r.id).sort(), [bound, unbound].sort());
      t.same(
        b.requests.map((r) => r.id),
        [unbound],
      );
    });

    t.test('a disabled endpoint gets nothing', async (t) => {
      const ws = await d.workspace('quiet');
      const q = await receiver(t);
      await endpoint(d, ws.live, q.url, { enabled: false });
      await emit(d, ws.id, 'message.sent', sampleMessage(6));
      await tick(d);
      t.equal(q.requests.length, 0);
    });
  });

  t.test(`retries after 500s with the backoff schedule, then success; listing shows attempts on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: PRIVATE_OK });
    const acme = await d.workspace('acme');
    const rx = await receiver(t, (_r, n) => (n <= 2 ? 500 : 204));
    const ep = await endpoint(d, acme.live, rx.url);
    const evt = await emit(d, acme.id, 'message.failed', sampleMessage(1));

    await tick(d);
    t.equal(rx.requests.length, 1);
    let list = (await d.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: acme.live })).body.data;
    t.match(list[0], {
      id: /^dlv_/,
      eventId: evt,
      eventType: 'message.failed',
      status: 'pending',
      attemptCount: 1,
      lastStatusCode: 500,
      lastError: 'HTTP 500',
    });
    t.equal(list[0].nextAttemptAt, new Date(d.clock.now().getTime() + 5_000).toISOString(), 'first retry after 5 s');

    await tick(d);
    t.equal(rx.requests.length, 1, 'nothing before the retry is due');
    d.clock.advance(5_000);
    await tick(d);
    t.equal(rx.requests.length, 2);
    list = (await d.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: acme.live })).body.data;
    t.equal(list[0].nextAttemptAt, new Date(d.clock.now().getTime() + 5 * 60_000).toISOString(), 'second retry after 5 min');

    d.clock.advance(5 * 60_000);
    await tick(d);
    t.equal(rx.requests.length, 3);
    t.same(new Set(rx.requests.map((r) => r.id)), new Set([evt]), 'webhook-id is stable across retries');
    t.same(new Set(rx.requests.map((r) => r.body)).size, 1, 'the body is byte-identical across retries');
    list = (await d.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: acme.live })).body.data;
    t.match(list[0], {
      status: 'succeeded',
      attemptCount: 3,
      lastStatusCode: 204,
      lastError: null,
      nextAttemptAt: null,
      deliveredAt: d.clock.now().toISOString(),
    });
    t.same(
      list[0].attempts.map((a: { statusCode: number }) => a.statusCode),
      [500, 500, 204],
    );
    const succeeded = await d.request('GET', `/v1/webhooks/${ep.id}/deliveries?status=succeeded&limit=10`, { key: acme.live });
    t.equal(succeeded.body.data.length, 1);
  });

  t.test(`a timeout is retried and the receiver deduplicates by webhook-id on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: { ...PRIVATE_OK, POSTERN_WEBHOOKS_TIMEOUT: '300ms' } });
    const acme = await d.workspace('acme');
    // The receiver processes the first request but answers too late; the retry is a duplicate.
    const seen = new Set<string>();
    let effects = 0;
    const rx = await receiver(t, (r, n) => {
      if (!seen.has(r.id)) {
        seen.add(r.id);
        effects += 1;
      }
      return n === 1 ? 'hang' : 200;
    });
    const ep = await endpoint(d, acme.live, rx.url);
    await emit(d, acme.id, 'message.clicked', { ...sampleMessage(1), link: 'https://example.com/a' });
    await tick(d);
    const first = (await d.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: acme.live })).body.data[0];
    t.match(first, { status: 'pending', attemptCount: 1, lastStatusCode: null, lastError: 'timeout after 300 ms' });
    d.clock.advance(5_000);
    await tick(d);
    t.equal(rx.requests.length, 2);
    t.equal(rx.requests[0].id, rx.requests[1].id);
    t.equal(effects, 1, 'the receiver acted once');
    const done = (await d.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: acme.live })).body.data[0];
    t.equal(done.status, 'succeeded');
  });

  t.test(`redirects are not followed; retries give up after the schedule; manual retry on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: { ...PRIVATE_OK, POSTERN_WEBHOOKS_RETRY_SCHEDULE: '5s,1m' } });
    const acme = await d.workspace('acme');
    let status = 302;
    const rx = await receiver(t, () => status);
    const ep = await endpoint(d, acme.live, rx.url);
    await emit(d, acme.id, 'message.sent', sampleMessage(1));
    await tick(d);
    d.clock.advance(5_000);
    await tick(d);
    d.clock.advance(60_000);
    await tick(d);
    d.clock.advance(3_600_000);
    await tick(d);
    t.equal(rx.requests.length, 3, 'one attempt and two retries, then no more');
    const [failed] = (await d.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: acme.live })).body.data;
    t.match(failed, {
      status: 'failed',
      attemptCount: 3,
      lastStatusCode: 302,
      lastError: 'redirect not followed (HTTP 302)',
      nextAttemptAt: null,
    });

    status = 200;
    const retried = await d.request('POST', `/v1/webhooks/${ep.id}/deliveries/${failed.id}/retry`, { key: acme.live });
    t.equal(retried.status, 200);
    t.match(retried.body, { id: failed.id, status: 'pending', nextAttemptAt: d.clock.now().toISOString() });
    await tick(d);
    t.equal(rx.requests.length, 4);
    const [ok] = (await d.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: acme.live })).body.data;
    t.match(ok, { status: 'succeeded', attemptCount: 4, lastStatusCode: 200 });
  });

  t.test(`rotation: both signatures for 24 h, then only the new one on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: PRIVATE_OK });
    const acme = await d.workspace('acme');
    const rx = await receiver(t);
    const ep = await endpoint(d, acme.live, rx.url);
    const rotated = (await d.request('POST', `/v1/webhooks/${ep.id}/rotate-secret`, { key: acme.live })).body;
    await emit(d, acme.id, 'message.sent', sampleMessage(1));
    await tick(d);
    const during = rx.requests[0];
    const parts = during.signature.split(' ');
    t.equal(parts.length, 2, 'two signatures during the overlap');
    t.ok(verify(rotated.secret, { ...during, signature: parts[0] }), 'the first is the new secret');
    t.ok(verify(ep.secret, { ...during, signature: parts[1] }), 'the second is the old secret');
    d.clock.advance(24 * 3600 * 1000 + 1000);
    await emit(d, acme.id, 'message.sent', sampleMessage(2));
    await tick(d);
    const after = rx.requests[1];
    t.equal(after.signature.split(' ').length, 1);
    t.ok(verify(rotated.secret, after));
    t.notOk(verify(ep.secret, after), 'the old secret no longer verifies');
    t.equal((await d.request('GET', `/v1/webhooks/${ep.id}`, { key: acme.live })).body.previousSecretExpiresAt, null);
  });
}

t.test('an endpoint failing for 5 days is disabled, and that is logged', async (t) => {
  const d = await bootDaemon(t, { env: PRIVATE_OK });
  const acme = await d.workspace('acme');
  const rx = await receiver(t, () => 503);
  const ep = await endpoint(d, acme.live, rx.url);
  const start = d.clock.now().getTime();
  for (let i = 0; i < 30; i++) {
    await emit(d, acme.id, 'message.sent', sampleMessage(i));
    await tick(d);
    const cur = (await d.request('GET', `/v1/webhooks/${ep.id}`, { key: acme.live })).body;
    if (!cur.enabled) break;
    d.clock.advance(6 * 3600 * 1000);
  }
  const final = (await d.request('GET', `/v1/webhooks/${ep.id}`, { key: acme.live })).body;
  t.equal(final.enabled, false);
  t.match(final.disabledReason, /failed since/);
  t.equal(final.failingSince, new Date(start).toISOString());
  t.ok(d.clock.now().getTime() - start >= 5 * 86400_000, 'not before 5 days');
  t.ok(d.clock.now().getTime() - start < 5 * 86400_000 + 7 * 3600_000, 'soon after 5 days');
  t.ok(
    d.logs.some((l) => /webhook endpoint disabled/.test(l) && l.includes(ep.id)),
    'logged with the endpoint id',
  );
  const count = rx.requests.length;
  await emit(d, acme.id, 'message.sent', sampleMessage(99));
  d.clock.advance(86400_000);
  await tick(d);
  t.equal(rx.requests.length, count, 'nothing more is sent to it');

  // Re-enabling resumes the deliveries that were still pending, and a success clears the record.
  rx.behaviour = () => 200;
  const re = await d.request('PATCH', `/v1/webhooks/${ep.id}`, { key: acme.live, body: { enabled: true } });
  t.match(re.body, { enabled: true, disabledReason: null, failingSince: null });
  await tick(d);
  t.ok(rx.requests.length > count);
});

t.test('per-endpoint concurrency cap: a slow receiver cannot starve another', async (t) => {
  const d = await bootDaemon(t, { env: { ...PRIVATE_OK, POSTERN_WEBHOOKS_CONCURRENCY_PER_ENDPOINT: '2' } });
  const acme = await d.workspace('acme');
  const slow = await receiver(t, () => 'hang');
  const fast = await receiver(t, () => 200);
  await endpoint(d, acme.live, slow.url);
  await endpoint(d, acme.live, fast.url);
  for (let i = 0; i < 6; i++) await emit(d, acme.id, 'message.sent', sampleMessage(i));
  const ticking = tick(d);
  await fast.waitFor(6);
  t.equal(new Set(fast.requests.map((r) => r.id)).size, 6, 'the fast receiver got everything while the slow one hangs');
  t.equal(slow.maxHanging, 2, 'at most two attempts at once on the slow endpoint');
  slow.behaviour = () => 200;
  slow.release(200);
  await ticking;
  await tick(d);
  t.equal(new Set(slow.requests.map((r) => r.id)).size, 6);
  t.equal(slow.processed.size, 4, 'the four not held were answered 200; the two held got a late 200');
  t.equal(slow.maxHanging, 2);
});

for (const db of testDatabases()) {
  t.test(`deleting an endpoint abandons its pending deliveries on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: PRIVATE_OK });
    const acme = await d.workspace('acme');
    const rx = await receiver(t, () => 500);
    const keep = await receiver(t, () => 500);
    const ep = await endpoint(d, acme.live, rx.url);
    const other = await endpoint(d, acme.live, keep.url);
    const evt = await emit(d, acme.id, 'message.failed', sampleMessage(1));
    await tick(d);
    t.equal(rx.requests.length, 1, 'first attempt made');
    t.equal(keep.requests.length, 1);
    const pending = (await d.request('GET', `/v1/webhooks/${ep.id}/deliveries`, { key: acme.live })).body.data;
    t.match(pending, [{ eventId: evt, status: 'pending', attemptCount: 1, nextAttemptAt: String }], 'a retry is due in 5 s');

    t.same((await d.request('DELETE', `/v1/webhooks/${ep.id}`, { key: acme.live })).body, { id: ep.id, deleted: true });
    const rows = await d.app.db
      .selectFrom('webhook_deliveries as w')
      .innerJoin('webhook_endpoints as e', 'e.id', 'w.endpoint_id')
      .select(['e.public_id as endpoint', 'w.status', 'w.last_error', 'w.next_attempt_at'])
      .where('w.event_id', '=', evt)
      .execute();
    const byEndpoint = Object.fromEntries(rows.map(({ endpoint, ...rest }) => [endpoint, rest]));
    t.same(
      byEndpoint[ep.id],
      { status: 'failed', last_error: 'endpoint deleted', next_attempt_at: null },
      'the deleted endpoint’s delivery is failed with "endpoint deleted", nothing due',
    );
    t.match(byEndpoint[other.id], { status: 'pending', next_attempt_at: String }, 'the other endpoint’s delivery is untouched');

    // Past every retry of the schedule, and after a new event: nothing more reaches the deleted endpoint.
    for (const step of [5_000, 5 * 60_000, 30 * 60_000, 2 * 3600_000]) {
      d.clock.advance(step);
      await tick(d);
    }
    await emit(d, acme.id, 'message.failed', sampleMessage(2));
    await tick(d);
    t.equal(rx.requests.length, 1, 'no attempt after the delete');
    t.ok(keep.requests.length >= 3, `the other endpoint's delivery kept being retried (${keep.requests.length} attempts)`);
  });
}
