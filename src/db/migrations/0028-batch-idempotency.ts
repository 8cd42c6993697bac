// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Idempotency keys of POST /v1/send/batch: the batch's whole answer, kept 24 hours like a single
// send's (message_idempotency). A table of its own: a batch's key names many messages, or none
// when every item was refused, and a key used for a single send does not answer a batch.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('batch_idempotency')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('response', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('batch_idempotency_pk', ['workspace_id', 'livemode', 'key'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('batch_idempotency').execute();
}
