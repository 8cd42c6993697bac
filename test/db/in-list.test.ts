// inList (db/database.ts): the rows `IN (…)` selects, on both dialects; on PostgreSQL one statement
// text whatever the list's length (so one prepared statement, not one per length).
import t from 'tap';
import { inList } from '../../src/db/database.js';
import { testDatabases } from '../helpers/databases.js';
import { openMigrated } from '../helpers/migrated-database.js';

for (const name of testDatabases()) {
  t.test(`inList on ${name}`, async (t) => {
    const { db, dialect } = await openMigrated(t, name);
    const names = ['a', 'b', 'c', 'd', 'e'];
    await db
      .insertInto('forwarding_keys')
      .values(names.map((n) => ({ name: n, value: 'v', created_at: 'now' })))
      .execute();
    const texts = new Set<string>();
    for (const wanted of [['a'], ['b', 'd'], ['a', 'c', 'e', 'x'], ['x'], names]) {
      const q = db
        .selectFrom('forwarding_keys')
        .select('name')
        .where(inList(dialect, 'name', wanted))
        .orderBy('name');
      texts.add(q.compile().sql);
      t.same(
        (await q.execute()).map((r) => r.name),
        names.filter((n) => wanted.includes(n)),
        `the rows of ${wanted.join(',')}`,
      );
    }
    if (dialect === 'postgres') t.equal(texts.size, 1, 'one statement text for lists of every length');
  });
}
