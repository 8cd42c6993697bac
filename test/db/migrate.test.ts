import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { freshPostgres, testDatabases, type TestDb } from '../helpers/databases.js';

/** An empty database of `kind`, not migrated, dropped or removed when the test ends. */
async function openEmpty(t: { teardown(fn: () => unknown): void }, kind: TestDb): Promise<DatabaseHandle> {
  if (kind === 'postgres') {
    const pg = await freshPostgres();
    t.teardown(pg.drop);
    return openDatabase({ dialect: 'postgres', url: pg.url });
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-mig-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return openDatabase({ dialect: 'sqlite', file: path.join(dir, 'db.sqlite') });
}

/** A database migrated to the latest and taken back down through `m`, holding workspace w. */
async function downThrough(t: { teardown(fn: () => unknown): void }, kind: TestDb, m: { down(db: any): Promise<void> }): Promise<any> {
  const handle = await openEmpty(t, kind);
  t.teardown(() => handle.close());
  await migrateToLatest(handle.db);
  const db = handle.db as any;
  await m.down(db);
  await db.insertInto('workspaces').values({ id: 'w', slug: 'acme', name: 'Acme', plan: 'pro', created_at: 'now' }).execute();
  return db;
}

/** A message row of workspace w with the columns every schema since 0003 requires. */
function messageRow(id: string, extra: Record<string, unknown>) {
  return {
    id,
    public_id: `msg_${id}`,
    workspace_id: 'w',
    livemode: 1,
    channel: 'email',
    status: 'failed',
    recipient: 'x@example.com',
    interpolate: 0,
    vars: '{}',
    metadata: '{}',
    metadata_text: '{}',
    search_text: '',
    cc: '[]',
    bcc: '[]',
    timeline: '[]',
    created_at: 'then',
    updated_at: 'then',
    ...extra,
  };
}

for (const kind of testDatabases()) {
  t.test(`all migrations apply to an empty ${kind} database, once`, async (t) => {
    const handle = await openEmpty(t, kind);
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

for (const kind of testDatabases()) {
  t.test(`0022 gives suppressions an environment: live, unless a test message caused them (${kind})`, async (t) => {
    const m0022 = await import('../../src/db/migrations/0022-suppression-environments.js');
    // Back to the one list of before, with rows as it held them.
    const db = await downThrough(t, kind, m0022);
    await db
      .insertInto('messages')
      .values([
        messageRow('id-msg_live', { public_id: 'msg_live', livemode: 1 }),
        messageRow('id-msg_test', { public_id: 'msg_test', livemode: 0 }),
      ])
      .execute();
    const entry = (address: string, messageId: string | null) => ({
      id: `sup-${address}`,
      workspace_id: 'w',
      address,
      reason: 'bounce',
      detail: null,
      message_public_id: messageId,
      created_at: 'then',
    });
    await db
      .insertInto('suppressions')
      .values([entry('bounced@example.com', 'msg_live'), entry('failed@example.com', 'msg_test'), entry('manual@example.com', null)])
      .execute();
    await m0022.up(db);
    const rows = await db.selectFrom('suppressions').select(['address', 'livemode']).orderBy('address').execute();
    t.same(
      rows.map((r: any) => [r.address, Number(r.livemode)]),
      [
        ['bounced@example.com', 1],
        ['failed@example.com', 0],
        ['manual@example.com', 1],
      ],
    );
    // The same address may now be listed in both environments.
    await db
      .insertInto('suppressions')
      .values({ ...entry('failed@example.com', null), id: 'sup-live', livemode: 1 })
      .execute();
    t.equal((await db.selectFrom('suppressions').select('id').where('address', '=', 'failed@example.com').execute()).length, 2);
  });
}

for (const kind of testDatabases()) {
  t.test(`0041 keeps each month's usage count, in shard 0, and down sums the shards (${kind})`, async (t) => {
    const handle = await openEmpty(t, kind);
    t.teardown(() => handle.close());
    const m0041 = await import('../../src/db/migrations/0041-usage-shards.js');
    await migrateToLatest(handle.db);
    const db = handle.db as any;
    const rows = () => db.selectFrom('message_usage').selectAll().orderBy('workspace_id').orderBy('month').execute();
    await m0041.down(db);
    await db
      .insertInto('message_usage')
      .values([
        { workspace_id: 'w1', month: '2026-10', count: 4 },
        { workspace_id: 'w1', month: '2026-11', count: 9 },
        { workspace_id: 'w2', month: '2026-11', count: 1 },
      ])
      .execute();
    await m0041.up(db);
    t.same(await rows(), [
      { workspace_id: 'w1', month: '2026-10', shard: 0, count: 4 },
      { workspace_id: 'w1', month: '2026-11', shard: 0, count: 9 },
      { workspace_id: 'w2', month: '2026-11', shard: 0, count: 1 },
    ]);
    await db.insertInto('message_usage').values({ workspace_id: 'w1', month: '2026-11', shard: 3, count: 2 }).execute();
    await m0041.down(db);
    t.same(await rows(), [
      { workspace_id: 'w1', month: '2026-10', count: 4 },
      { workspace_id: 'w1', month: '2026-11', count: 11 },
      { workspace_id: 'w2', month: '2026-11', count: 1 },
    ]);
    await m0041.up(db);
  });
}

for (const kind of testDatabases()) {
  t.test(`0042 moves each message's content and attachments to message_contents, and down moves them back (${kind})`, async (t) => {
    const m0042 = await import('../../src/db/migrations/0042-message-contents.js');
    const db = await downThrough(t, kind, m0042);
    const message = (id: string, content: string, attachments: string) => messageRow(id, { status: 'queued', content, attachments });
    const pdf = JSON.stringify([{ filename: 'a.pdf', contentType: 'application/pdf', content: 'JVBERi0=' }]);
    await db
      .insertInto('messages')
      .values([message('m1', '{"subject":"one","text":"1"}', '[]'), message('m2', '{"subject":"two","html":"<p>2</p>"}', pdf)])
      .execute();
    await m0042.up(db);
    t.same(await db.selectFrom('message_contents').selectAll().orderBy('message_id').execute(), [
      { message_id: 'm1', content: '{"subject":"one","text":"1"}', attachments: '[]' },
      { message_id: 'm2', content: '{"subject":"two","html":"<p>2</p>"}', attachments: pdf },
    ]);
    const row = await db.selectFrom('messages').selectAll().where('id', '=', 'm2').executeTakeFirstOrThrow();
    t.notOk('content' in row || 'attachments' in row, 'the queue row no longer carries them');
    await m0042.down(db);
    t.same(await db.selectFrom('messages').select(['id', 'content', 'attachments']).orderBy('id').execute(), [
      { id: 'm1', content: '{"subject":"one","text":"1"}', attachments: '[]' },
      { id: 'm2', content: '{"subject":"two","html":"<p>2</p>"}', attachments: pdf },
    ]);
    await m0042.up(db);
  });
}
