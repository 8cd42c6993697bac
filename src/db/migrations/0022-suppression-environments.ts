// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Suppressions belong to an environment, as messages do: a test key's simulated bounce of
// failed@example.com must not hold live mail to that address. The unique key becomes
// (workspace, livemode, address), which SQLite cannot alter in place, so the table is rebuilt on
// both databases. Existing entries are live, except those a test message caused (their
// message_public_id names a test-mode message): those were the simulations that leaked.
import { sql, type CreateTableBuilder, type Kysely } from 'kysely';

async function createTable(db: Kysely<any>, name: string, withEnv: boolean): Promise<void> {
  let t: CreateTableBuilder<string, any> = db.schema
    .createTable(name)
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'));
  if (withEnv) t = t.addColumn('livemode', 'integer', (c) => c.notNull());
  await t
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('message_public_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint(
      withEnv ? 'suppressions_workspace_env_address' : 'suppressions_workspace_address',
      withEnv ? ['workspace_id', 'livemode', 'address'] : ['workspace_id', 'address'],
    )
    .execute();
}

export async function up(db: Kysely<any>): Promise<void> {
  await createTable(db, 'suppressions_by_env', true);
  await sql`
    INSERT INTO suppressions_by_env (id, workspace_id, livemode, address, reason, detail, message_public_id, created_at)
    SELECT s.id, s.workspace_id,
           CASE WHEN EXISTS (SELECT 1 FROM messages m WHERE m.public_id = s.message_public_id AND m.livemode = 0) THEN 0 ELSE 1 END,
           s.address, s.reason, s.detail, s.message_public_id, s.created_at
    FROM suppressions s`.execute(db);
  await db.schema.dropTable('suppressions').execute();
  await db.schema.alterTable('suppressions_by_env').renameTo('suppressions').execute();
  await db.schema
    .createIndex('suppressions_workspace_env_created')
    .on('suppressions')
    .columns(['workspace_id', 'livemode', 'created_at'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await createTable(db, 'suppressions_one_list', false);
  // One list again: an address listed in both environments keeps its live entry.
  await sql`
    INSERT INTO suppressions_one_list (id, workspace_id, address, reason, detail, message_public_id, created_at)
    SELECT s.id, s.workspace_id, s.address, s.reason, s.detail, s.message_public_id, s.created_at
    FROM suppressions s
    WHERE s.livemode = 1
       OR NOT EXISTS (SELECT 1 FROM suppressions l WHERE l.workspace_id = s.workspace_id AND l.address = s.address AND l.livemode = 1)`.execute(
    db,
  );
  await db.schema.dropTable('suppressions').execute();
  await db.schema.alterTable('suppressions_one_list').renameTo('suppressions').execute();
  await db.schema.createIndex('suppressions_workspace_created').on('suppressions').columns(['workspace_id', 'created_at']).execute();
}
