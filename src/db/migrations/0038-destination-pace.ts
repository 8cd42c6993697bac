// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// The adaptive back-off of each destination domain that throttled (channels/email/adaptive-backoff.ts):
// the rate (messages per minute) and connections per host it is sent at for now, the whole
// cluster's, and the rate it climbs back to. `version` grows with every change, so a node changes
// the row only from the state it read (two nodes seeing one throttle lower the rate once).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('destination_pace')
    .addColumn('domain', 'text', (c) => c.primaryKey())
    .addColumn('rate', 'integer', (c) => c.notNull())
    .addColumn('connections', 'integer', (c) => c.notNull())
    .addColumn('target_rate', 'integer', (c) => c.notNull())
    .addColumn('step', 'integer', (c) => c.notNull())
    .addColumn('since', 'text', (c) => c.notNull())
    .addColumn('decreased_at', 'text', (c) => c.notNull())
    .addColumn('last_answer', 'text', (c) => c.notNull())
    .addColumn('last_answer_at', 'text', (c) => c.notNull())
    .addColumn('throttles', 'integer', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('destination_pace').execute();
}
