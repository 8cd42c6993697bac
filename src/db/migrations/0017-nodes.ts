// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// The nodes of a cluster (several Postern processes on one database): each registers itself at
// start and beats every few seconds. A node whose beat stopped is presumed dead: another node
// releases the leases it held at once, rather than after the lease runs out, and removes it.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('nodes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('heartbeat_at', 'text', (c) => c.notNull())
    // 1 once the node began a graceful stop (it claims nothing more).
    .addColumn('stopping', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('nodes').execute();
}
