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

t.test('0008 keeps domains verified before it signing and receiving', async (t) => {
  const { Migrator } = await import('kysely');
  const all = await Promise.all(
    [
      '0001-foundation',
      '0002-templates',
      '0003-messages',
      '0004-inbound',
      '0005-email',
      '0006-webhooks',
      '0007-connections',
      '0008-domain-capabilities',
    ].map(async (name) => [name, await import(`../../src/db/migrations/${name}.js`)] as const),
  );
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-mig-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const handle = openDatabase({ dialect: 'sqlite', file: path.join(dir, 'db.sqlite') });
  t.teardown(() => handle.close());
  const migrator = new Migrator({ db: handle.db, provider: { getMigrations: () => Promise.resolve(Object.fromEntries(all)) } });
  await migrator.migrateTo('0007-connections');
  const db = handle.db as any;
  await db.insertInto('workspaces').values({ id: 'w', slug: 'acme', name: 'Acme', plan: 'pro', created_at: 'now' }).execute();
  const domain = (id: string, kind: string, status: string, verifiedAt: string | null) => ({
    id,
    workspace_id: 'w',
    domain: `${id}.example`,
    kind,
    status,
    dkim_selector: null,
    dkim_private_key: null,
    dkim_public_key: null,
    verified_at: verifiedAt,
    created_at: 'then',
    deleted_at: null,
  });
  await db
    .insertInto('domains')
    .values([
      domain('custom', 'custom', 'verified', 'T1'),
      domain('shared', 'shared', 'verified', 'T2'),
      domain('pending', 'custom', 'pending', null),
    ])
    .execute();
  await migrateToLatest(handle.db);
  const rows = await db.selectFrom('domains').select(['id', 'dkim_verified_at', 'mx_verified_at']).orderBy('id').execute();
  t.same(rows, [
    { id: 'custom', dkim_verified_at: 'T1', mx_verified_at: 'T1' },
    { id: 'pending', dkim_verified_at: null, mx_verified_at: null },
    { id: 'shared', dkim_verified_at: null, mx_verified_at: 'T2' },
  ]);
});
