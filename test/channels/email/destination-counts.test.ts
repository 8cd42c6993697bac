// A destination's counts are kept in memory and added to the database every couple of seconds
// (channels/email/destinations.ts). A read made while such a write was under way missed what it
// carried: taken out of memory, not yet in the database. On a busy machine that window was long
// enough for `destinations.test.ts` to see `deferred: 0` after a deferral. Here the write is held
// on a row lock the test takes, so the window is as long as the test wants it.
import { sql, type Kysely } from 'kysely';
import t from 'tap';
import { createAdaptiveBackoff } from '../../../src/channels/email/adaptive-backoff.js';
import { createDestinations } from '../../../src/channels/email/destinations.js';
import { createBudgets } from '../../../src/cluster/budgets.js';
import type { Database } from '../../../src/db/schema.js';
import { createLogger } from '../../../src/lib/logger.js';
import { testDatabases } from '../../helpers/databases.js';
import { openMigrated } from '../../helpers/migrated-database.js';
import { until } from '../../helpers/until.js';

const AT = '2026-11-28T00:00:00.000Z';

/** The destinations' snapshot on `db`, on a clock stopped at AT, as the daemon makes it. */
function destinationsOn(db: Kysely<Database>) {
  const clock = { now: () => new Date(AT) };
  const log = createLogger('silent');
  return createDestinations({
    db,
    clock,
    log,
    backoff: { minMs: 60_000, maxMs: 3_600_000 },
    adaptive: createAdaptiveBackoff({
      db,
      clock,
      log,
      budgets: createBudgets({ clock, log }),
      settings: { enabled: true, decrease: 0.5, increaseAfter: 20, increaseStep: 0.1 },
      domainRates: {},
      maxConnectionsPerHost: 5,
    }),
  });
}

for (const dbName of testDatabases()) {
  t.test(`a read of the counts sees what a write under way carries (${dbName})`, async (t) => {
    if (dbName === 'sqlite') {
      // SQLite's driver runs one statement at a time on its one connection: a read cannot
      // overtake the write, and the window this test holds open does not exist there.
      t.pass('SQLite: statements run one after the other on one connection; the window does not exist');
      return;
    }
    const { db: plain } = await openMigrated(t, dbName);
    // Counts the reads of the back-offs that came back: every read of the counts loads them first.
    let loads = 0;
    const backoffReads = new WeakSet<object>();
    const db = plain.withPlugin({
      transformQuery(args) {
        if (args.node.kind === 'SelectQueryNode' && JSON.stringify(args.node.from).includes('destination_backoff'))
          backoffReads.add(args.queryId);
        return args.node;
      },
      transformResult: async (args) => {
        if (backoffReads.has(args.queryId)) loads++;
        return args.result;
      },
    });
    await db
      .insertInto('destination_stats')
      .values({ workspace_id: 'ws', domain: 'slow.example', delivered: 0, deferred: 0, bounced: 0, updated_at: AT })
      .execute();
    const destinations = destinationsOn(db);
    t.teardown(() => destinations.close());

    // The row locked by a transaction of the test's, until it lets go.
    let letGo!: () => void;
    const held = new Promise<void>((r) => (letGo = r));
    let locked!: () => void;
    const lockTaken = new Promise<void>((r) => (locked = r));
    const lock = db.transaction().execute(async (trx) => {
      await trx.selectFrom('destination_stats').select('domain').where('domain', '=', 'slow.example').forUpdate().execute();
      locked();
      await held;
    });
    await lockTaken;

    destinations.record('ws', 'slow.example', 'deferred', { text: '451 4.7.1 slow down', category: 'rate_limited' });
    const writing = destinations.flush();
    // A positive signal first: the write is waiting for the lock.
    await until('the count write waiting on the row lock', async () => {
      const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and query like '%destination_stats%'`.execute(db);
      return r.rows[0].n > 0;
    });
    await until('the first load of holds and back-offs', () => loads >= 1);
    const reading = destinations.get('ws', 'slow.example');
    let settled = false;
    void reading.finally(() => (settled = true));
    // The lock is let go once the read has read the counts (it settled), or has loaded the holds
    // and back-offs it reads first and a few turns of the event loop passed: by then a read that
    // does not wait for the write has sent its query, which the held write cannot be part of.
    await until('the read to settle or to pass its first step', () => settled || loads >= 2);
    for (let i = 0; i < 3 && !settled; i++) await new Promise((r) => setImmediate(r));
    letGo();
    await lock;
    await writing;
    t.match(await reading, { deferred: 1, lastCategory: 'rate_limited' }, 'the deferral is counted');
  });
}

// Closing waits for a read of the holds and back-offs under way: the daemon closes the database
// right after, and a read that outlived it failed with "driver has already been destroyed", logged
// as a warning at every stop that fell inside one (seen at the end of `npm run bench cluster`).
for (const dbName of testDatabases()) {
  t.test(`close waits for the read of holds and back-offs under way (${dbName})`, async (t) => {
    const { db: plain } = await openMigrated(t, dbName);
    let entered!: () => void;
    const reading = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let readDone = false;
    const holdReads = new WeakSet<object>();
    const db = plain.withPlugin({
      transformQuery(args) {
        if (args.node.kind === 'SelectQueryNode' && JSON.stringify(args.node.from).includes('destination_holds'))
          holdReads.add(args.queryId);
        return args.node;
      },
      transformResult: async (args) => {
        if (!holdReads.has(args.queryId)) return args.result;
        entered();
        await gate;
        readDone = true;
        return args.result;
      },
    });
    const destinations = destinationsOn(db);
    await reading; // the first read, made at creation, is under way
    // The gate opens on a later turn of the event loop: a close that does not wait for the read
    // has resolved by then (it has nothing of its own to write).
    const closed = destinations.close().then(() => readDone);
    setImmediate(release);
    t.equal(await closed, true, 'the read came back before close resolved');
  });
}
