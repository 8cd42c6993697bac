// Who hears of a committed change, beyond the writes themselves (messages/ledger.ts): the watchers
// (the tails) are told each change a tail shows once and never an older view after a newer one;
// the other nodes are handed a reference to each such change (`share`); the observer (metrics)
// gets each commit with the timeline entries it added; and the changes other nodes made are read
// back by id, each as of its change (`remote`), or all since a time (`resync`), only while someone
// watches. A ledger of the test's own runs beside the daemon's, on its database.
import t from 'tap';
import { createLedger, type LedgerObservation } from '../../src/messages/ledger.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import type { Message } from '../../src/contract/message-schemas.js';

type Ref = { id: string; status: string; entries: number };

for (const db of testDatabases()) {
  t.test(`what the tails, the other nodes and the metrics hear of a change (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const shared: Ref[] = [];
    const observed: LedgerObservation[] = [];
    const ledger = createLedger({ ...d.app, share: (ref) => shared.push(ref), observe: (o) => observed.push(o) });
    // Scheduled a day ahead on the daemon's manual clock: its dispatcher never touches them.
    const scheduled = async (to: string) => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: {
          to,
          channel: 'email',
          content: { subject: 'hi', text: 'x' },
          scheduledAt: new Date(d.clock.now().getTime() + 86_400_000).toISOString(),
        },
      });
      t.equal(r.status, 202);
      return r.body.id as string;
    };
    const read = (publicId: string) =>
      d.app.db.selectFrom('messages').selectAll().where('public_id', '=', publicId).executeTakeFirstOrThrow();

    t.test('a commit: the observer gets the entries it added, the other nodes a reference, the watchers the message', async (t) => {
      const id = await scheduled('ann@example.com');
      const heard: Message[] = [];
      const stop = ledger.watch((m) => heard.push(m));
      t.teardown(stop);
      const row = await read(id);
      const c = ledger.change(row);
      c.step('queued', 'due');
      c.note('a note of its own');
      const written = await ledger.commit(c);
      t.equal(written?.status, 'queued');
      t.same(
        observed.map((o) => [o.from, o.to, o.entries]),
        [['scheduled', 'queued', ['queued', 'a note of its own']]],
        'the entries this commit added, not the whole timeline',
      );
      t.same(shared, [{ id: row.id, status: 'queued', entries: 4 }], 'the other nodes hear of it');
      t.same(
        heard.map((m) => `${m.publicId}:${m.status}:${m.timeline.length}`),
        [`${id}:queued:4`],
      );

      // A change the tails do not show (no status, no error): nobody but the observer hears of it.
      const quiet = ledger.change(written!);
      quiet.note('only a note');
      const again = await ledger.commit(quiet);
      t.same(
        observed.slice(1).map((o) => [o.from, o.to, o.entries]),
        [['queued', 'queued', ['only a note']]],
      );
      t.equal(shared.length, 1, 'no reference for a change a tail does not show');
      t.equal(heard.length, 1, 'no watcher is told');

      // An error while the status stays is what a tail shows (a deferral): everyone hears.
      const errored = ledger.change(again!);
      errored.set({ error: 'greylisted' });
      await ledger.commit(errored);
      t.same(shared.at(-1), { id: row.id, status: 'queued', entries: 5 });
      t.match(heard.at(-1), { publicId: id, status: 'queued', error: 'greylisted' });
      t.equal(heard.length, 2);
      // The same error again changes nothing a tail shows.
      const same = ledger.change(await read(id));
      same.set({ error: 'greylisted' });
      await ledger.commit(same);
      t.equal(shared.length, 2, 'the same error again: no reference');
      t.equal(heard.length, 2, 'and no watcher told');
      t.same(
        observed.map((o) => o.to),
        ['queued', 'queued', 'queued', 'queued'],
        'the observer gets every commit',
      );
    });

    t.test("another node's changes: read back by id, each as of its change, once, and only while watched", async (t) => {
      d.clock.advance(60_000); // the first test's message changed before `since` below
      const a = await read(await scheduled('bo@example.com'));
      const b = await read(await scheduled('cy@example.com'));
      // Nobody watches: nothing is read.
      await ledger.remote([{ id: a.id, status: 'scheduled', entries: 2 }]);

      const heard: Message[] = [];
      const stop = ledger.watch((m) => heard.push(m));
      // As another node would: the daemon's own ledger moves both, this one is told by reference.
      for (const row of [a, b]) {
        const c = d.app.ledger.change(row);
        c.step('canceled', 'cancel');
        await d.app.ledger.commit(c);
      }
      await ledger.remote([
        { id: a.id, status: 'scheduled', entries: 2 },
        { id: 'no-such-message', status: 'queued', entries: 1 },
        { id: a.id, status: 'canceled', entries: 3 },
        { id: b.id, status: 'canceled', entries: 3 },
        { id: b.id, status: 'canceled', entries: 3 },
        { id: a.id, status: 'scheduled', entries: 2 },
      ]);
      t.same(
        heard.map((m) => `${m.publicId}:${m.status}:${m.timeline.length}`),
        [`${a.public_id}:scheduled:2`, `${a.public_id}:canceled:3`, `${b.public_id}:canceled:3`],
        'each as of its change; a repeat and an older view after a newer one are not told; an unknown id is skipped',
      );

      // After the change feed reconnects: every message changed since then, as it is now, told
      // unless already told as it is.
      heard.length = 0;
      const since = new Date(d.clock.now().getTime() - 1000).toISOString();
      const c = await read(await scheduled('di@example.com'));
      await ledger.resync(since);
      t.same(
        heard.map((m) => `${m.publicId}:${m.status}`),
        [`${c.public_id}:scheduled`],
        'what was not told yet',
      );
      stop();
      heard.length = 0;
      // No watcher: the memory of what was told is dropped, and nothing is read.
      const again = ledger.watch((m) => heard.push(m));
      await ledger.resync(since);
      t.same(heard.map((m) => m.publicId).sort(), [a.public_id, b.public_id, c.public_id].sort(), 'a new watcher is told everything again');
      again();
      heard.length = 0;
      await ledger.resync(since);
      await ledger.remote([{ id: a.id, status: 'canceled', entries: 3 }]);
      t.same(heard, [], 'nobody watches: nothing told');
    });
  });
}
