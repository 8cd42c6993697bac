// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Warm-up of (source address, sending domain) pairs (channels/email/warm-up.ts): each pair's place
// on the daily ramp and why it is paused; its outcomes per UTC hour, which decide a pause; and
// which pair sent each message while warming up, so a complaint or a later bounce about the
// message counts against that pair. Nodes add to the counts with upserts, so a cluster adds up.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('warm_up_schedules')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('sending_domain', 'text', (c) => c.notNull())
    .addColumn('step', 'integer', (c) => c.notNull())
    .addColumn('step_day', 'text', (c) => c.notNull())
    .addColumn('paused_reason', 'text')
    .addColumn('paused_at', 'text')
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('warm_up_schedules_pkey', ['source', 'sending_domain'])
    .execute();
  await db.schema
    .createTable('warm_up_counts')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('sending_domain', 'text', (c) => c.notNull())
    .addColumn('hour', 'text', (c) => c.notNull())
    .addColumn('sent', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('delivered', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('bounced', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('deferred', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('complained', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('warm_up_counts_pkey', ['source', 'sending_domain', 'hour'])
    .execute();
  await db.schema
    .createTable('warm_up_messages')
    .addColumn('message_id', 'text', (c) => c.primaryKey())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('sending_domain', 'text', (c) => c.notNull())
    .addColumn('hour', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('warm_up_messages_hour').on('warm_up_messages').column('hour').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('warm_up_messages').execute();
  await db.schema.dropTable('warm_up_counts').execute();
  await db.schema.dropTable('warm_up_schedules').execute();
}
