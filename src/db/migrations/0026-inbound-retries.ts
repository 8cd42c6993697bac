// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Received mail seen lately, by what names a retry of it (inbound/store.ts): a client that sends a
// message again, to this node or another of the cluster, within `inbound.retryWindow` of the
// first, gets the first one's id and nothing is stored twice. Rows older than the window are
// purged daily.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('inbound_seen')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('received_id', 'text', (c) => c.notNull())
    .addColumn('seen_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('inbound_seen_at').on('inbound_seen').column('seen_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('inbound_seen').execute();
}
