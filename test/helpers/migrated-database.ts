// A migrated database of either dialect, opened without a daemon, for tests of the storage layer
// itself (group commit, statements, event rows): a fresh PostgreSQL database or a SQLite file in a
// temporary directory, closed and removed when the test ends.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { KyselyPlugin } from 'kysely';
import { openDatabase, type DatabaseHandle, type Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { freshPostgres, type TestDb } from './databases.js';

export async function openMigrated(t: { teardown(fn: () => unknown): void }, db: TestDb): Promise<DatabaseHandle> {
  let handle: DatabaseHandle;
  if (db === 'postgres') {
    const fresh = await freshPostgres();
    handle = openDatabase({ dialect: 'postgres', url: fresh.url });
    t.teardown(async () => {
      await handle.close();
      await fresh.drop();
    });
  } else {
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-db-'));
    handle = openDatabase({ dialect: 'sqlite', file: path.join(dir, 'db.sqlite') });
    t.teardown(async () => {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    });
  }
  await migrateToLatest(handle.db);
  return handle;
}

/**
 * The database with a count of the raw statements whose text contains `text` (the multi-row
 * statements of a fast path), so a property test knows it reached them.
 */
export function countingStatements(db: Db, text: string): { db: Db; count(): number } {
  let n = 0;
  const plugin: KyselyPlugin = {
    transformQuery(args) {
      if (args.node.kind === 'RawNode' && args.node.sqlFragments.join('?').includes(text)) n++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  return { db: db.withPlugin(plugin), count: () => n };
}
