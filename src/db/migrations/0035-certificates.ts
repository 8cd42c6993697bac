// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Certificates obtained by ACME, kept where every node of a cluster reads them: the certificate
// (PEM chain) and its key sealed under `secrets.key`, one row per name, with the lease a node
// holds while it renews the name and the back-off after a failure. The ACME account key, one per
// directory. The HTTP-01 key authorizations under way, answered by whichever node the CA reaches.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('certificates')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('cert', 'text')
    .addColumn('key', 'text')
    .addColumn('not_after', 'text')
    .addColumn('issued_at', 'text')
    .addColumn('renewing_node', 'text')
    .addColumn('renewing_until', 'text')
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('next_attempt_at', 'text')
    .execute();
  await db.schema
    .createTable('acme_accounts')
    .addColumn('directory_url', 'text', (c) => c.primaryKey())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('acme_challenges')
    .addColumn('token', 'text', (c) => c.primaryKey())
    .addColumn('key_authorization', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('acme_challenges').execute();
  await db.schema.dropTable('acme_accounts').execute();
  await db.schema.dropTable('certificates').execute();
}
