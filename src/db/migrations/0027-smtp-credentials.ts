// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// SMTP credentials (submission/smtp-credentials.ts): a generated user name and a secret, kept as
// its SHA-256 only, that AUTH on the submission ports accepts as a send-only key of one workspace
// and environment. Text columns only, so SQLite and PostgreSQL read the same table; the two unique
// indexes are the two lookups (AUTH by user name, and no secret hash twice).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('smtp_credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('username', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('smtp_credentials_workspace').on('smtp_credentials').column('workspace_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('smtp_credentials').execute();
}
