// Group commit on both dialects (db/group-commit.ts): writes that arrive together share one
// transaction, a failing write fails alone and leaves nothing behind, and on PostgreSQL the
// statements the daemon repeats are prepared once per connection.
import { sql } from 'kysely';
import t from 'tap';
import type { DatabaseHandle } from '../../src/db/database.js';
import { createWriteBatcher } from '../../src/db/group-commit.js';
import { testDatabases } from '../helpers/databases.js';
import { openMigrated } from '../helpers/migrated-database.js';

const keys = async (h: DatabaseHandle) =>
  (await h.db.selectFrom('forwarding_keys').select('name').orderBy('name').execute()).map((r) => r.name);

for (const db of testDatabases()) {
  t.test(`group commit on ${db}`, async (t) => {
    const h = await openMigrated(t, db);
    let commits = 0;
    const writes = createWriteBatcher(h.db, h.dialect, { observe: () => commits++ });
    const insert = (key: string) => (trx: Parameters<Parameters<typeof writes.run>[0]>[0]) =>
      trx.insertInto('forwarding_keys').values({ name: key, value: 'v', created_at: 'now' }).execute();

    // Forty writes issued in one turn: fewer commits than writes (on PostgreSQL this was one
    // transaction per write).
    await Promise.all(Array.from({ length: 40 }, (_, i) => writes.run(insert(`k${String(i).padStart(2, '0')}`))));
    t.equal((await keys(h)).length, 40, 'every write committed');
    t.ok(commits < 40, `forty writes in ${commits} commits`);

    // A write that throws after writing, and one the database refuses (a duplicate key), among
    // others in the same batch: each fails alone, to its own caller, and leaves nothing behind.
    await h.db.deleteFrom('forwarding_keys').execute();
    const results = await Promise.allSettled([
      writes.run(insert('a')),
      writes.run(async (trx) => {
        await insert('thrown')(trx);
        throw new Error('refused after writing');
      }),
      writes.run(insert('b')),
      writes.run(insert('a')),
      writes.run(insert('c')),
    ]);
    t.same(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
    );
    t.match((results[1] as PromiseRejectedResult).reason, { message: 'refused after writing' });
    t.same(await keys(h), ['a', 'b', 'c'], 'the failed writes left nothing; the others committed');

    // A write asked to run alone commits on its own.
    commits = 0;
    await Promise.all([writes.run(insert('d'), { alone: true }), writes.run(insert('e'))]);
    t.same(await keys(h), ['a', 'b', 'c', 'd', 'e']);
    // On SQLite every write shares the one writer's batch; on PostgreSQL the lone one is apart.
    t.equal(commits, db === 'postgres' ? 2 : 1, 'the lone write kept apart on PostgreSQL');
  });
}

if (testDatabases().includes('postgres')) {
  t.test('repeated statements are prepared once per connection on PostgreSQL', async (t) => {
    const h = await openMigrated(t, 'postgres');
    const names = await h.db.transaction().execute(async (trx) => {
      // One connection for all three: a transaction holds its client.
      for (let i = 0; i < 3; i++) await trx.selectFrom('forwarding_keys').select('name').where('name', '=', `x${i}`).execute();
      const { rows } = await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements`.execute(trx);
      return rows;
    });
    t.ok(
      names.some((r) => r.name.startsWith('postern_') && r.statement.includes('"forwarding_keys"')),
      'the repeated select runs as a named statement',
    );
  });
}
