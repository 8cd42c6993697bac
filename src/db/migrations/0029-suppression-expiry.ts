// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Suppressions that end (an import's `expiresAt`, a manual entry for a while): the time after
// which an entry no longer holds mail, or null for one that holds until removed. A wildcard entry
// needs no column: its address is `*@domain`.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('suppressions').addColumn('expires_at', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('suppressions').dropColumn('expires_at').execute();
}
