// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// The checks of a message (HTML compatibility, links, spam score, headers), one row per message:
// its last result as JSON, what started it (`automatic` for a test-key message after accept,
// `on_demand` for the API or the dashboard) and when it finished. A row with a null result is a
// claim: a node is checking the message now, so another node's automatic pass leaves it alone.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('message_checks')
    .addColumn('message_id', 'text', (c) => c.primaryKey().references('messages.id').onDelete('cascade'))
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('checked_at', 'text')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('message_checks').execute();
}
