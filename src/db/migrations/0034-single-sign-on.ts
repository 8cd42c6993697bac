// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Single sign-on: the sign-ins at the OpenID provider under way, by their state (with the nonce
// and the PKCE verifier the callback needs), taken once when the provider sends the browser back.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sso_logins')
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('verifier', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sso_logins').execute();
}
