// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// SMTP clients that passed the greeting pause (smtp/passed-clients.ts): until when each address
// is greeted at once, shared by a cluster's nodes.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('smtp_passed_clients')
    .addColumn('address', 'text', (c) => c.primaryKey())
    .addColumn('passed_until', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('smtp_passed_clients_until').on('smtp_passed_clients').column('passed_until').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('smtp_passed_clients').execute();
}
