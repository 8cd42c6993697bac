// The ledger's write rules (messages/ledger.ts) beyond the table walk of ledger.test.ts: the
// read-decide-write of update() and its retries when the row moves on, the dispatcher's lease and
// the empty-column guard of a first open, engagement events with their data, and who hears of a
// change (watchers) and when.
import t from 'tap';
import { AppError } from '../../src/lib/errors.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import type { Message } from '../../src/contract/message-schemas.js';

for (const which of testDatabases()) {
  t.test(`ledger rules (${which})`, async (t) => {
    const d = await bootDaemon(t, { db: which });
    const ws = await d.workspace('acme');
    const { ledger, db } = d.app;
    // A message made up for a rule: its row rewritten with an empty timeline, which no real message
    // has (a timeline only grows). The watchers forget what they were told of it at the accept,
    // else they would take every change after the rewrite for an older one (ledger.ts, `told`).
    const fresh = async (status: string) => {
      stop();
      const at = new Date(d.clock.now().getTime() + 86_400_000).toISOString();
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to: 'ann@example.com', channel: 'email', content: { subject: 'hi', text: 'x' }, scheduledAt: at },
      });
      await db
        .updateTable('messages')
        .set({ status: status as never, timeline: '[]' })
        .where('public_id', '=', r.body.id)
        .execute();
      stop = ledger.watch((m) => heard.push(m));
      return r.body.id as string;
    };
    const read = (id: string) => db.selectFrom('messages').selectAll().where('public_id', '=', id).executeTakeFirstOrThrow();
    const events = async () =>
      (await db.selectFrom('events').select(['type', 'data']).orderBy('seq').execute()).map((e) => ({
        type: e.type,
        data: JSON.parse(e.data),
      }));
    const heard: Message[] = [];
    let stop = ledger.watch((m) => heard.push(m));

    t.test('update: read, decide and write in one go', async (t) => {
      const id = await fresh('queued');
      const find = (trx: any) => trx.selectFrom('messages').selectAll().where('public_id', '=', id).executeTakeFirst();
      t.equal(
        await ledger.update(
          () => Promise.resolve(undefined),
          () => t.fail('no decision without a row') as never,
        ),
        null,
        'no row: null',
      );

      const none = await ledger.update(find, () => null);
      t.equal(none?.written, null, 'a decision to change nothing writes nothing');
      t.equal(none?.read.public_id, id);

      const refused = await ledger.update(find, (row) => {
        const c = ledger.change(row);
        c.step('delivered', 'outcome');
        return c.set({ error: 'not written' });
      });
      t.equal(refused?.written, null, 'a refused step writes nothing');
      t.match(await read(id), { status: 'queued', error: null, timeline: '[]' });

      await t.rejects(
        ledger.update(find, () => {
          throw new AppError('not_cancelable', 'no');
        }),
        { code: 'not_cancelable' },
        'a decision may refuse by throwing',
      );

      heard.length = 0;
      d.clock.advance(5_000);
      const done = await ledger.update(find, (row) => {
        const c = ledger.change(row);
        t.ok(c.can('rendered', 'render'), 'can() reads the table from where the message is');
        t.notOk(c.can('delivered', 'outcome'));
        c.step('rendered', 'render');
        return c.set({ error: 'kept' });
      });
      t.equal(done?.read.status, 'queued', 'the row as read');
      t.match(done?.written, { status: 'rendered', error: 'kept' }, 'the row as written');
      t.match(
        await read(id),
        { status: 'rendered', error: 'kept', updated_at: d.clock.now().toISOString() },
        'updated_at is the time of the change',
      );
      t.same(
        JSON.parse((await read(id)).timeline),
        [{ t: d.clock.now().toISOString(), e: 'rendered' }],
        'the step on the timeline, stamped',
      );
      t.same(
        heard.map((m) => `${m.publicId}:${m.status}`),
        [`${id}:rendered`],
        'watchers hear of it after the commit',
      );
    });

    t.test('update reads again when the row moved on, and gives up after five tries', async (t) => {
      const id = await fresh('queued');
      let reads = 0;
      // Each read returns the row, then moves it on before the write (what another writer does on PostgreSQL).
      const stale = async (trx: any) => {
        reads++;
        const row = await trx.selectFrom('messages').selectAll().where('public_id', '=', id).executeTakeFirst();
        await trx
          .updateTable('messages')
          .set({ status: row.status === 'queued' ? 'scheduled' : 'queued' })
          .where('public_id', '=', id)
          .execute();
        return row;
      };
      const decide = (row: any) => {
        const c = ledger.change(row);
        c.note('touched');
        return c;
      };
      await t.rejects(ledger.update(stale, decide), { code: 'conflict', message: 'the message kept changing; try again' });
      t.equal(reads, 5, 'five tries');

      let second = 0;
      const once = async (trx: any) =>
        second++ === 0 ? stale(trx) : trx.selectFrom('messages').selectAll().where('public_id', '=', id).executeTakeFirst();
      const r = await ledger.update(once, decide);
      t.equal(second, 2, 'a second read after one race');
      t.ok(r?.written, 'and the write');
    });

    t.test("commit: the dispatcher's lease, a first open, and events with their data", async (t) => {
      const id = await fresh('dispatched');
      await db.updateTable('messages').set({ locked_by: 'node-a' }).where('public_id', '=', id).execute();
      const wrong = ledger.change(await read(id));
      wrong.step('delivered', 'outcome');
      t.equal(await ledger.commit(wrong, { lease: 'node-b' }), null, 'another lease: not written');
      t.equal((await read(id)).status, 'dispatched');
      const right = ledger.change(await read(id));
      right.step('delivered', 'outcome');
      t.equal((await ledger.commit(right, { lease: 'node-a' }))?.status, 'delivered', 'its own lease: written');
      t.equal(right.row.status, 'delivered', 'the change continues from the written row');
      t.same(right.events, []);

      const before = (await events()).length;
      heard.length = 0;
      const open = ledger.change(await read(id));
      open.unsetColumn = 'opened_at';
      open.set({ opened_at: d.clock.now().toISOString() }).event('message.opened', { userAgent: 'UA/1' });
      t.ok(await ledger.commit(open), 'the first open is written');
      const added = (await events()).slice(before);
      t.same(
        added.map((e) => e.type),
        ['message.opened'],
        'with its event and no lifecycle event (the status did not change)',
      );
      t.match(added[0].data, { publicId: id, status: 'delivered', userAgent: 'UA/1' }, 'the message plus what the event adds');
      t.same(
        heard.map((m) => m.publicId),
        [id],
        'an engagement is heard too',
      );
      t.equal(open.unsetColumn, null, 'the guard is spent');

      const again = ledger.change(await read(id));
      again.unsetColumn = 'opened_at';
      again.set({ opened_at: d.clock.now().toISOString() }).event('message.opened');
      t.equal(await ledger.commit(again), null, 'a second open is not written');
      t.equal((await events()).length, before + 1, 'nor recorded');

      heard.length = 0;
      const quiet = ledger.change(await read(id));
      quiet.note('looked at');
      t.ok(await ledger.commit(quiet));
      t.same(heard, [], 'a note alone is not announced');
      t.same(
        JSON.parse((await read(id)).timeline).map((e: { e: string }) => e.e),
        ['delivered', 'looked at'],
      );

      const failed = ledger.change(await read(id));
      failed.step('failed', 'dsn');
      await ledger.commit(failed);
      const last = (await events()).at(-1)!;
      t.equal(last.type, 'message.failed');
      t.match(last.data, { publicId: id, status: 'failed' }, 'a lifecycle event carries the message as it now is');
    });

    t.test('a step without a timeline entry, and the wake-up of the webhook deliverer', async (t) => {
      const id = await fresh('dispatched');
      const recorded: unknown[] = [];
      const off = d.app.bus.subscribe('events.recorded', (e) => void recorded.push(e));
      t.teardown(off);
      const c = ledger.change(await read(id));
      t.ok(c.step('dispatched', 'retry', null));
      t.ok(await ledger.commit(c));
      t.same(JSON.parse((await read(id)).timeline), [], 'null: no timeline entry');
      t.same(recorded, [], 'no event, no wake-up');
      const out = ledger.change(await read(id));
      out.step('sent', 'outcome');
      await ledger.commit(out);
      t.same(recorded, [{ type: 'message.sent' }], 'each recorded event wakes the deliverer after the commit');
    });

    t.test('watchers hear of new messages', async (t) => {
      heard.length = 0;
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: {
          to: 'bo@example.com',
          channel: 'email',
          content: { subject: 'hi', text: 'x' },
          scheduledAt: new Date(d.clock.now().getTime() + 60_000).toISOString(),
        },
      });
      t.same(
        heard.map((m) => `${m.publicId}:${m.status}`),
        [`${r.body.id}:scheduled`],
      );
    });

    t.test('watchers stop when asked', async (t) => {
      const id = await fresh('queued');
      stop();
      heard.length = 0;
      const c = ledger.change(await read(id));
      c.step('canceled', 'cancel');
      await ledger.commit(c);
      t.same(heard, []);
    });

    t.test('a message is born queued or scheduled', async (t) => {
      t.same(ledger.open('2030-01-01T00:00:00.000Z', false), {
        status: 'queued',
        timeline: [{ t: '2030-01-01T00:00:00.000Z', e: 'accepted' }],
      });
      t.same(ledger.open('2030-01-01T00:00:00.000Z', true), {
        status: 'scheduled',
        timeline: [
          { t: '2030-01-01T00:00:00.000Z', e: 'accepted' },
          { t: '2030-01-01T00:00:00.000Z', e: 'scheduled' },
        ],
      });
    });
  });
}
