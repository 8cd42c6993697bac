// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Webhook payload formats: an endpoint's deliveries in Postern's own shape or a hosted vendor's
// (`postern`, `sendgrid`, `postmark`, `resend`), and for `sendgrid` the ECDSA key that signs them.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('webhook_endpoints')
    .addColumn('format', 'text', (c) => c.notNull().defaultTo('postern'))
    .execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('signing_key', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').dropColumn('signing_key').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('format').execute();
}
