// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Budgets every node of a cluster on PostgreSQL shares (cluster/budgets.ts): one token bucket per
// key, refilled on the application clock. On SQLite the budgets stay in process and the table is
// unused.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('budgets')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('tokens', 'double precision', (c) => c.notNull())
    // When the bucket was last refilled, in ms since the epoch.
    .addColumn('at', 'bigint', (c) => c.notNull())
    // Whether the last take was granted (what the upsert that takes reports back).
    .addColumn('granted', 'boolean', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('budgets').execute();
}
