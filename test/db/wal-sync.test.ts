// Durable SQLite commits with the fsync off the event loop (db/wal-sync.ts): a write's caller is
// answered only after an fdatasync of the WAL that began after its commit; commits made while a
// sync runs share the next one; reads and writes that commit nothing wait for no sync.
import { mkdtempSync, rmSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { createWalSync, SyncedSqliteDialect } from '../../src/db/wal-sync.js';

function tempDir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-wal-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a commit is answered after a sync that began after it', async (t) => {
  const file = path.join(tempDir(t), 'db.sqlite');
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.exec('CREATE TABLE t (v TEXT)');
  const log: string[] = [];
  const held: { release: (() => void) | null } = { release: null };
  const wal = createWalSync(`${file}-wal`, async (h: FileHandle) => {
    log.push('sync begins');
    // The first sync is held open, so commits arrive while it runs.
    if (!held.release) await new Promise<void>((r) => (held.release = r));
    await h.datasync();
    log.push('sync ends');
  });
  const db = new Kysely<{ t: { v: string } }>({
    dialect: new SyncedSqliteDialect({ database: sqlite }, { wal, inTransaction: () => sqlite.inTransaction }),
  });
  t.teardown(() => db.destroy());

  const first = db
    .insertInto('t')
    .values({ v: 'a' })
    .execute()
    .then(() => log.push('a answered'));
  while (!held.release) await new Promise((r) => setImmediate(r));
  t.same(log, ['sync begins'], 'the autocommitted insert waits for its sync');
  t.equal((sqlite.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 1, 'it is committed meanwhile: readers see it');

  // Two transactions commit while the first sync runs: one more sync serves both.
  const second = db.transaction().execute(async (trx) => {
    await trx.insertInto('t').values({ v: 'b' }).execute();
  });
  const third = db.transaction().execute(async (trx) => {
    await trx.insertInto('t').values({ v: 'c' }).execute();
  });
  const both = Promise.all([second, third]).then(() => log.push('b and c answered'));
  // A read commits nothing and waits for nothing, even while syncs are pending.
  t.same(await db.selectFrom('t').select('v').orderBy('v').execute(), [{ v: 'a' }, { v: 'b' }, { v: 'c' }]);
  t.notOk(log.includes('b and c answered'), 'not answered before their own sync');
  held.release();
  await first;
  await both;
  t.same(
    log.filter((e) => e.startsWith('sync')),
    ['sync begins', 'sync ends', 'sync begins', 'sync ends'],
    'two syncs for three commits, one after the other',
  );
  t.ok(log.indexOf('a answered') > log.indexOf('sync ends'), 'a is answered after the first sync');
  t.ok(log.indexOf('b and c answered') > log.lastIndexOf('sync ends'), 'b and c after the second');

  // A rolled-back transaction has nothing to sync.
  const before = log.length;
  await db
    .transaction()
    .execute(async (trx) => {
      await trx.insertInto('t').values({ v: 'x' }).execute();
      throw new Error('no');
    })
    .catch(() => {});
  t.equal(log.length, before, 'no sync for a rollback');
  t.equal((sqlite.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 3);
});

t.test('the daemon database commits through it', async (t) => {
  const dir = tempDir(t);
  const handle = openDatabase({ dialect: 'sqlite', file: path.join(dir, 'db.sqlite') });
  t.teardown(() => handle.close());
  const mode = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(handle.db);
  t.equal(mode.rows[0].synchronous, 1, 'NORMAL: COMMIT itself does not fsync on the event loop');
  await sql`CREATE TABLE t (v TEXT)`.execute(handle.db);
  await Promise.all(Array.from({ length: 20 }, (_, i) => sql`INSERT INTO t VALUES (${String(i)})`.execute(handle.db)));
  const n = await sql<{ n: number }>`SELECT count(*) AS n FROM t`.execute(handle.db);
  t.equal(n.rows[0].n, 20);
});
