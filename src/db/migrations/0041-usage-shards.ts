// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// The monthly usage count is kept in shards: a row per workspace, month and shard, the count the
// sum of the month's rows. Every accept of a workspace added to one row, so with several nodes on
// one PostgreSQL each accept transaction waited for the others' commits on that row's lock; a node
// now counts in a shard of its own (shard 0 on SQLite, and the shard a quota is checked on). The
// primary key changes, which SQLite cannot alter in place, so the table is rebuilt on both.
import { sql, type CreateTableBuilder, type Kysely } from 'kysely';

async function createTable(db: Kysely<any>, name: string, sharded: boolean): Promise<void> {
  let t: CreateTableBuilder<string, any> = db.schema
    .createTable(name)
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull());
  if (sharded) t = t.addColumn('shard', 'integer', (c) => c.notNull().defaultTo(0));
  await t
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint(`${name}_pk`, sharded ? ['workspace_id', 'month', 'shard'] : ['workspace_id', 'month'])
    .execute();
}

export async function up(db: Kysely<any>): Promise<void> {
  await createTable(db, 'message_usage_sharded', true);
  await sql`INSERT INTO message_usage_sharded (workspace_id, month, shard, count) SELECT workspace_id, month, 0, count FROM message_usage`.execute(
    db,
  );
  await db.schema.dropTable('message_usage').execute();
  await db.schema.alterTable('message_usage_sharded').renameTo('message_usage').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await createTable(db, 'message_usage_one_row', false);
  await sql`INSERT INTO message_usage_one_row (workspace_id, month, count)
    SELECT workspace_id, month, sum(count) FROM message_usage GROUP BY workspace_id, month`.execute(db);
  await db.schema.dropTable('message_usage').execute();
  await db.schema.alterTable('message_usage_one_row').renameTo('message_usage').execute();
}
