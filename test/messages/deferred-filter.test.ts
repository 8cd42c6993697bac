// `deferred` as a filter of GET /v1/messages (and of its tail): the messages list shows a
// dispatched message that a temporary failure deferred as "deferred", and the filter returns
// exactly those: stored status `dispatched` with the deferring error, not a first attempt, not a
// delivered one. The Message itself keeps its status, `dispatched`. On both databases.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startRemoteMx } from '../helpers/smtp-sink.js';
import { openTail } from '../helpers/tail.js';

for (const db of testDatabases()) {
  t.test(`GET /v1/messages?status=deferred lists the deferred messages on ${db}`, async (t) => {
    let greylist = true;
    const { env } = await startRemoteMx(t, {
      rcpt: (a) => (a === 'busy@example.net' && greylist ? { code: 451, message: '4.7.1 greylisted' } : undefined),
    });
    const d = await bootDaemon(t, { db, env });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const tick = () => d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const send = async (to: string, extra: Record<string, unknown> = {}) => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to, channel: 'email', content: { subject: 'Hi', text: 'x' }, ...extra },
      });
      t.equal(r.status, 202);
      return r.body.id as string;
    };
    const ids = async (query: string) => {
      const r = await d.request('GET', `/v1/messages?${query}`, { key: ws.live });
      t.equal(r.status, 200, query);
      return r.body.data.map((m: any) => m.publicId);
    };

    const busy = await send('busy@example.net');
    const fine = await send('fine@example.net');
    await tick();
    const later = await send('later@example.net', { scheduledAt: new Date(d.clock.now().getTime() + 3600_000).toISOString() });
    const deferred = (await d.request('GET', `/v1/messages/${busy}`, { key: ws.live })).body;
    t.match(deferred, { status: 'dispatched', error: /451 4\.7\.1 greylisted/ }, 'the message keeps its stored status');

    t.same(await ids('status=deferred'), [busy], 'deferred: only the deferred message');
    t.same(await ids('status=dispatched'), [busy], 'dispatched still lists it (it is its status)');
    t.same(await ids('status=delivered'), [fine]);
    t.same(await ids('status=scheduled'), [later]);
    t.same(await ids('status=deferred&channel=email&q=busy'), [busy], 'composes with other filters');
    t.same(await ids('status=deferred&channel=sms'), []);

    // The tail's backfill and its live part apply the same rule.
    const tail = openTail(`${d.url}/v1/messages?tail=1&status=deferred`, ws.live);
    t.teardown(() => tail.close());
    t.ok(await tail.until(() => tail.events.some((e) => e.id === busy)), 'the tail backfills the deferred message');
    const second = await send('busy@example.net');
    await tick();
    t.ok(await tail.until(() => tail.events.some((e) => e.id === second)), 'and pushes one deferred later');
    t.notOk(
      tail.events.some((e) => e.id === fine || e.id === later),
      'nothing else',
    );
    tail.close();

    // Retried and delivered: no longer deferred.
    greylist = false;
    d.clock.advance(61_000);
    await tick();
    t.match((await d.request('GET', `/v1/messages/${busy}`, { key: ws.live })).body, { status: 'delivered', error: null });
    t.same(await ids('status=deferred'), [], 'nothing deferred once both are delivered');

    const bad = await d.request('GET', '/v1/messages?status=waiting', { key: ws.live });
    t.equal(bad.status, 400);
    t.match(bad.body.error, { code: 'invalid_request', message: /deferred/ });
  });
}
