// inList (db/database.ts): the rows `IN (…)` selects, on both dialects; on PostgreSQL one statement
// text whatever the list's length (so one prepared statement, not one per length).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { inList, openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { freshPostgres, testDatabases, type TestDb } from '../helpers/databases.js';

async function open(t: { teardown(fn: () => unknown): void }, db: TestDb): Promise<DatabaseHandle> {
  let handle: DatabaseHandle;
  if (db === 'postgres') {
    const fresh = await freshPostgres();
    handle = openDatabase({ dialect: 'postgres', url: fresh.url });
    t.teardown(async () => {
      await handle.close();
      await fresh.drop();
    });
  } else {
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-inlist-'));
    handle = openDatabase({ dialect: 'sqlite', file: path.join(dir, 'db.sqlite') });
    t.teardown(async () => {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    });
  }
  await migrateToLatest(handle.db);
  return handle;
}

for (const name of testDatabases()) {
  t.test(`inList on ${name}`, async (t) => {
    const { db, dialect } = await open(t, name);
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
