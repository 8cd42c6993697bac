// Retry now (POST /v1/messages/{id}/retry, outbound/retry-now.ts) over HTTP with an API key: a
// deferred message waiting for its next attempt becomes due at once with a "retry requested" note,
// and the next dispatcher pass delivers it without the clock moving; every other state is 409
// conflict with the row left alone; the route needs the send scope and stays in its workspace.
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

const dispatcher = (d: TestDaemon) => d.app.workers.find((w) => w.name === 'dispatcher')!;

for (const db of testDatabases()) {
  t.test(`retry now (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const send = async (to: string, extra: Record<string, unknown> = {}) => {
      const r = await d.request('POST', '/v1/send', {
        key: ws.test,
        body: { to, channel: 'email', content: { subject: 'Hi', text: 'x' }, ...extra },
      });
      t.equal(r.status, 202);
      return r.body.id as string;
    };
    const row = (id: string) => d.app.db.selectFrom('messages').selectAll().where('public_id', '=', id).executeTakeFirstOrThrow();
    const retry = (id: string, key = ws.test) => d.request('POST', `/v1/messages/${id}/retry`, { key });

    t.test('a deferred message becomes due now and is delivered on the next pass', async (t) => {
      const id = await send('deferred@example.com');
      await dispatcher(d).tick();
      const deferred = await row(id);
      t.equal(deferred.status, 'dispatched');
      t.ok(deferred.due_at! > d.clock.now().toISOString(), 'next attempt in the future');
      // Without a retry, a pass at the same time does nothing.
      await dispatcher(d).tick();
      t.equal((await row(id)).status, 'dispatched');

      const r = await retry(id);
      t.equal(r.status, 200);
      t.match(r.body, { publicId: id, status: 'dispatched' });
      t.equal(r.body.timeline.at(-1).e, 'retry requested');
      t.equal((await row(id)).due_at, d.clock.now().toISOString());

      await dispatcher(d).tick();
      const m = (await d.request('GET', `/v1/messages/${id}`, { key: ws.test })).body;
      t.equal(m.status, 'delivered');
      t.same(m.timeline.map((e: { e: string }) => e.e).slice(-3), ['deferred', 'retry requested', 'delivered']);
    });

    t.test('anything else is 409 and left alone', async (t) => {
      const scheduled = await send('ann@example.com', { scheduledAt: new Date(d.clock.now().getTime() + 3600_000).toISOString() });
      const later = { scheduledAt: new Date(d.clock.now().getTime() + 3600_000).toISOString() };
      // Rows set by hand, so the running dispatcher does not move them while the test looks.
      const queued = await send('bob@example.com', later);
      await d.app.db.updateTable('messages').set({ status: 'queued' }).where('public_id', '=', queued).execute();
      const delivered = await send('cy@example.com', later);
      await d.app.db.updateTable('messages').set({ due_at: null, status: 'delivered' }).where('public_id', '=', delivered).execute();
      // In flight: dispatched under a live lease.
      const inFlight = await send('deferred+2@example.com');
      await dispatcher(d).tick();
      const until = new Date(d.clock.now().getTime() + 60_000).toISOString();
      await d.app.db.updateTable('messages').set({ locked_by: 'node-a', locked_until: until }).where('public_id', '=', inFlight).execute();
      for (const [id, status, why] of [
        [scheduled, 'scheduled', 'is scheduled; only a deferred message waiting for its next attempt can be retried'],
        [queued, 'queued', 'is queued; only a deferred message waiting for its next attempt can be retried'],
        [delivered, 'delivered', 'is delivered; only a deferred message waiting for its next attempt can be retried'],
        [inFlight, 'dispatched', 'is being delivered right now'],
      ]) {
        const before = await row(id);
        const r = await retry(id);
        t.equal(r.status, 409, status);
        t.same(r.body.error, { code: 'conflict', message: `message ${id} ${why}`, status });
        t.same(await row(id), before, `${status}: unchanged`);
      }
    });

    t.test('send scope, own workspace and environment only', async (t) => {
      const id = await send('deferred+3@example.com');
      await dispatcher(d).tick();
      const other = await d.workspace('other');
      for (const key of [other.test, ws.live]) t.equal((await retry(id, key)).status, 404);
      const readOnly = await d.workspace('ro', { scopes: 'read' });
      const r = await retry(id, readOnly.test);
      t.equal(r.status, 403);
      t.equal(r.body.error.code, 'insufficient_scope');
      t.equal((await row(id)).due_at! > d.clock.now().toISOString(), true, 'still waiting');
    });
  });
}
