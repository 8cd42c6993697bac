// The message ledger walks its whole transition table: every allowed change is written with its
// timeline entry and, where the new status has one, its lifecycle event; every change outside the
// table is refused, logged, and leaves the row as it was.
import t from 'tap';
import { canMove, TRANSITIONS, type Trigger } from '../../src/messages/transitions.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { MESSAGE_STATUSES, type MessageStatus } from '../../src/contract/messages.js';

const TRIGGERS: Trigger[] = [...new Set(TRANSITIONS.map((tr) => tr.trigger))];
const EVENTFUL: MessageStatus[] = ['sent', 'delivered', 'failed', 'suppressed', 'blocked', 'opted_out'];

t.test('the table is the state diagram', async (t) => {
  t.ok(canMove(null, 'queued', 'accept') && canMove(null, 'scheduled', 'accept'), 'a message is born queued or scheduled');
  for (const s of MESSAGE_STATUSES) t.notOk(canMove(null, s, 'accept') && s !== 'queued' && s !== 'scheduled', `never born ${s}`);
  for (const terminal of ['canceled', 'blocked', 'opted_out', 'suppressed', 'failed'] as const) {
    t.notOk(
      TRANSITIONS.some((tr) => tr.from === terminal),
      `${terminal} is terminal`,
    );
  }
  t.same(
    TRANSITIONS.filter((tr) => tr.to === 'canceled')
      .map((tr) => tr.from)
      .sort(),
    ['queued', 'scheduled'],
    'only scheduled or queued can be canceled',
  );
  t.same(
    TRANSITIONS.filter((tr) => tr.trigger === 'provider-callback')
      .map((tr) => `${tr.from}>${tr.to}`)
      .sort(),
    ['delivered>failed', 'sent>delivered', 'sent>failed'],
    'a callback only moves forward',
  );
  let outside = 0;
  for (const from of [null, ...MESSAGE_STATUSES]) {
    for (const to of MESSAGE_STATUSES) {
      for (const trigger of TRIGGERS) {
        const listed = TRANSITIONS.some((tr) => tr.from === from && tr.to === to && tr.trigger === trigger);
        if (canMove(from, to, trigger) !== listed) t.fail(`${from} → ${to} (${trigger})`);
        if (!listed) outside++;
      }
    }
  }
  t.ok(outside > 1500, `every other combination is refused (${outside})`);
});

for (const db of testDatabases()) {
  t.test(`the ledger writes every transition of the table and refuses the rest (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    // Scheduled a day ahead with the ManualClock: the dispatcher never touches it.
    const at = new Date(d.clock.now().getTime() + 86_400_000).toISOString();
    const sent = await d.request('POST', '/v1/send-raw', {
      key: ws.test,
      body: { to: 'ann@example.com', channel: 'email', content: { subject: 'hi', text: 'x' }, scheduledAt: at },
    });
    t.equal(sent.status, 202);
    const readRow = () => d.app.db.selectFrom('messages').selectAll().where('public_id', '=', sent.body.id).executeTakeFirstOrThrow();
    const events = async () => (await d.app.db.selectFrom('events').select('type').orderBy('seq').execute()).map((e) => e.type);
    t.same((await readRow()).timeline && JSON.parse((await readRow()).timeline).map((e: { e: string }) => e.e), ['accepted', 'scheduled']);

    for (const tr of TRANSITIONS.filter((x) => x.from !== null)) {
      await d.app.db.updateTable('messages').set({ status: tr.from!, timeline: '[]' }).where('public_id', '=', sent.body.id).execute();
      const before = await events();
      const change = d.app.ledger.change(await readRow());
      t.ok(change.step(tr.to, tr.trigger), `${tr.from} → ${tr.to} (${tr.trigger}) is allowed`);
      const written = await d.app.ledger.commit(change);
      t.equal(written?.status, tr.to, `${tr.from} → ${tr.to} (${tr.trigger}) is written`);
      const row = await readRow();
      t.equal(row.status, tr.to);
      t.same(
        JSON.parse(row.timeline).map((e: { e: string }) => e.e),
        [tr.to],
        'with its timeline entry',
      );
      const added = (await events()).slice(before.length);
      t.same(
        added,
        tr.from !== tr.to && EVENTFUL.includes(tr.to) ? [`message.${tr.to}`] : [],
        'and its lifecycle event where the status has one',
      );
    }

    // Outside the table: refused, logged, nothing written.
    for (const [from, to, trigger] of [
      ['delivered', 'queued', 'due'],
      ['canceled', 'dispatched', 'dispatch'],
      ['sent', 'sent', 'provider-callback'],
      ['queued', 'delivered', 'outcome'],
    ] as const) {
      await d.app.db
        .updateTable('messages')
        .set({ status: from, timeline: '[]', error: null })
        .where('public_id', '=', sent.body.id)
        .execute();
      const before = await events();
      const change = d.app.ledger.change(await readRow());
      t.notOk(change.step(to, trigger), `${from} → ${to} (${trigger}) is refused`);
      change.set({ error: 'must not be written' });
      t.equal(await d.app.ledger.commit(change), null);
      const row = await readRow();
      t.match(row, { status: from, timeline: '[]', error: null }, 'the row is unchanged');
      t.same(await events(), before, 'no event');
      t.ok(
        d.logs.some((l) => l.includes('message transition refused') && l.includes(`"from":"${from}"`) && l.includes(`"to":"${to}"`)),
        'the refusal is logged',
      );
    }

    // A row that moved on after it was read: the compare-and-swap writes nothing, and records no
    // event (a DSN racing another change once recorded message.failed without failing the message).
    await d.app.db.updateTable('messages').set({ status: 'sent', timeline: '[]' }).where('public_id', '=', sent.body.id).execute();
    const stale = d.app.ledger.change(await readRow());
    await d.app.db.updateTable('messages').set({ status: 'delivered' }).where('public_id', '=', sent.body.id).execute();
    const before = await events();
    t.ok(stale.step('failed', 'dsn'));
    t.equal(await d.app.ledger.commit(stale), null, 'a stale change is not written');
    t.equal((await readRow()).status, 'delivered');
    t.same(await events(), before, 'and its event is not recorded');
  });
}

// A tail is told each message's changes in the order they happened, each once: a view older than
// one already told (an accept announced after the dispatcher's first commit, another node's change
// read back late) is dropped, and after the change feed reconnects every message changed since is
// told as it is now.
for (const db of testDatabases()) {
  t.test(`the watchers see each message's changes in order, once (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const at = new Date(d.clock.now().getTime() + 86_400_000).toISOString();
    const sent = await d.request('POST', '/v1/send-raw', {
      key: ws.test,
      body: { to: 'ann@example.com', channel: 'email', content: { subject: 'hi', text: 'x' }, scheduledAt: at },
    });
    t.equal(sent.status, 202);
    const readRow = () => d.app.db.selectFrom('messages').selectAll().where('public_id', '=', sent.body.id).executeTakeFirstOrThrow();
    const seen: string[] = [];
    const stop = d.app.ledger.watch((m) => {
      if (m.publicId === sent.body.id) seen.push(`${m.status}/${m.timeline.length}`);
    });
    t.teardown(stop);

    const scheduled = await readRow();
    await d.app.ledger.resync(scheduled.updated_at);
    t.same(seen, ['scheduled/2'], 'a resync tells a message changed since, as it is now');
    await d.app.ledger.resync(scheduled.updated_at);
    t.same(seen, ['scheduled/2'], 'the same view is not told twice');

    const change = d.app.ledger.change(scheduled);
    t.ok(change.step('queued', 'due'));
    t.ok(await d.app.ledger.commit(change));
    t.same(seen, ['scheduled/2', 'queued/3'], 'a change is told after its commit');

    d.app.ledger.inserted(scheduled);
    await d.app.ledger.remote([{ id: scheduled.id, status: 'scheduled', entries: 2 }]);
    t.same(seen, ['scheduled/2', 'queued/3'], 'an older view, local or from another node, is not told after a newer one');
    await d.app.ledger.remote([{ id: scheduled.id, status: 'queued', entries: 3 }]);
    t.same(seen, ['scheduled/2', 'queued/3'], 'nor the same view again');
  });
}
