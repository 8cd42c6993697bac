import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { freshPostgres, testDatabases } from '../helpers/databases.js';

for (const kind of testDatabases()) {
  t.test(`all migrations apply to an empty ${kind} database, once`, async (t) => {
    let handle;
    if (kind === 'postgres') {
      const pg = await freshPostgres();
      t.teardown(pg.drop);
      handle = openDatabase({ dialect: 'postgres', url: pg.url });
    } else {
      const dir = mkdtempSync(path.join(tmpdir(), 'postern-mig-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      handle = openDatabase({ dialect: 'sqlite', file: path.join(dir, 'db.sqlite') });
    }
    const first = await migrateToLatest(handle.db);
    t.ok(first.length >= 1);
    t.equal(first[0], '0001-foundation');
    t.same(await migrateToLatest(handle.db), [], 'a second run applies nothing');
    const tables = (await handle.db.introspection.getTables()).map((x) => x.name);
    for (const name of ['workspaces', 'api_keys', 'events', 'domains']) t.ok(tables.includes(name), name);
    await handle.close();
  });
}
