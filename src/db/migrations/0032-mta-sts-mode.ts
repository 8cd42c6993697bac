// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// The MTA-STS mode a custom domain's served policy announces (RFC 8461): `testing` until the
// operator chooses `enforce`, or `none` to withdraw a policy senders still hold.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('domains')
    .addColumn('mta_sts_mode', 'text', (c) => c.notNull().defaultTo('testing'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').dropColumn('mta_sts_mode').execute();
}
