// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// STARTTLS sessions senders opened to the MX listener (reports/inbound-tls.ts), counted per UTC
// day, MX host name and result (`successful`, or why the handshake failed). Each node adds its
// counts to the row with an upsert, so the nodes of a cluster add up.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('inbound_tls_sessions')
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('hostname', 'text', (c) => c.notNull())
    .addColumn('result', 'text', (c) => c.notNull())
    .addColumn('sessions', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('inbound_tls_sessions_pkey', ['day', 'hostname', 'result'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('inbound_tls_sessions').execute();
}
