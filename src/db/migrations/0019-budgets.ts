// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Budgets every node of a cluster shares (cluster/budgets.ts): one row per key and window, in the
// shape rate-limiter-flexible's PostgreSQL store reads and writes. Created here rather than by
// the library at start, so nodes starting together do not race to create it. On SQLite the
// budgets stay in process and the table is unused.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('budgets')
    .addColumn('key', 'varchar(255)', (c) => c.primaryKey())
    .addColumn('points', 'integer', (c) => c.notNull().defaultTo(0))
    // When the window ends, in ms since the epoch.
    .addColumn('expire', 'bigint')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('budgets').execute();
}
