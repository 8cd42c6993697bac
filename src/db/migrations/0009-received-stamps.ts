// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Received mail is stamped with nine fractional digits (strictly increasing per node), so paging by
// `before` never splits a millisecond. Rows stamped before with three digits get the same form, so
// that every stamp has one length and text order stays time order.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['received_messages', 'inbound_raw']) {
    await sql`UPDATE ${sql.table(table)} SET received_at = substr(received_at, 1, 23) || '000000Z' WHERE length(received_at) = 24`.execute(
      db,
    );
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['received_messages', 'inbound_raw']) {
    await sql`UPDATE ${sql.table(table)} SET received_at = substr(received_at, 1, 23) || 'Z' WHERE length(received_at) = 30`.execute(db);
  }
}
