// Cancel (outbound/cancel.ts): what a cancel writes, and what it refuses. A scheduled or queued
// message — claimed by the dispatcher or not — becomes canceled with no due time and no lease; any
// other status answers 409 not_cancelable naming it, and the row is left as it was. The race with
// the dispatcher is staged in test/outbound/cancel-race.test.ts.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`cancel (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const at = () => new Date(d.clock.now().getTime() + 3600_000).toISOString();
    const send = async (extra: Record<string, unknown> = {}) => {
      const r = await d.request('POST', '/v1/send', {
        key: ws.test,
        body: { to: 'ann@example.com', channel: 'email', content: { subject: 'Hi', text: 'x' }, ...extra },
      });
      t.equal(r.status, 202);
      return r.body.id as string;
    };
    const row = (id: string) => d.app.db.selectFrom('messages').selectAll().where('public_id', '=', id).executeTakeFirstOrThrow();
    const cancel = (id: string, key = ws.test) => d.request('DELETE', `/v1/messages/${id}`, { key });
    const events = async () => (await d.app.db.selectFrom('events').select('type').execute()).length;

    t.test('scheduled, queued and claimed messages are canceled', async (t) => {
      const scheduled = await send({ scheduledAt: at() });
      const r = await cancel(scheduled);
      t.equal(r.status, 200);
      t.same(r.body, { id: scheduled, status: 'canceled' });
      const s = await row(scheduled);
      t.match(s, { status: 'canceled', due_at: null, locked_until: null, locked_by: null });
      t.same(
        JSON.parse(s.timeline).map((e: { e: string }) => e.e),
        ['accepted', 'scheduled', 'canceled'],
      );
      t.equal(JSON.parse(s.timeline)[2].t, d.clock.now().toISOString());

      // Queued and held by a dispatcher's lease (claimed, not yet dispatched): still cancelable.
      const queued = await send();
      await d.app.db.updateTable('messages').set({ locked_by: 'node-a', locked_until: at() }).where('public_id', '=', queued).execute();
      t.same((await cancel(queued)).body, { id: queued, status: 'canceled' });
      t.match(await row(queued), { status: 'canceled', due_at: null, locked_until: null, locked_by: null });
    });

    t.test('any other status is refused with 409 and the row is left alone', async (t) => {
      for (const status of ['rendered', 'dispatched', 'sent', 'delivered', 'failed', 'canceled'] as const) {
        const id = await send({ scheduledAt: at() });
        await d.app.db.updateTable('messages').set({ status, timeline: '[]' }).where('public_id', '=', id).execute();
        const before = await row(id);
        const n = await events();
        const r = await cancel(id);
        t.equal(r.status, 409, status);
        t.same(r.body.error, {
          code: 'not_cancelable',
          message: `message ${id} is ${status} and can no longer be canceled`,
          status,
        });
        t.same(await row(id), before, `${status}: unchanged`);
        t.equal(await events(), n, `${status}: no event`);
      }
    });

    t.test('only its own workspace and environment can cancel it', async (t) => {
      const other = await d.workspace('other');
      const id = await send({ scheduledAt: at() });
      for (const key of [other.test, ws.live]) {
        const r = await cancel(id, key);
        t.equal(r.status, 404);
        t.equal(r.body.error.code, 'not_found');
      }
      t.equal((await row(id)).status, 'scheduled');
      t.equal((await cancel('msg_doesnotexist')).status, 404);
    });
  });
}
