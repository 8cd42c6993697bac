// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// A DMARC report is written in batches (reports/store.ts): its row exists from the first batch, and
// `stored_at` is set once its last record is written. Until then the summaries do not read it, and
// a report left half-written (a crash, a lost thread) is cleared and written again when it arrives
// again. TLS reports are written at once and get it at once. The rows of a report are found by
// their report, to be cleared in batches.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['dmarc_reports', 'tls_reports']) {
    await db.schema.alterTable(table).addColumn('stored_at', 'text').execute();
    await db
      .updateTable(table)
      .set({ stored_at: sql`received_at` })
      .execute();
  }
  await db.schema.createIndex('dmarc_report_rows_report').on('dmarc_report_rows').column('report').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('dmarc_report_rows_report').execute();
  for (const table of ['dmarc_reports', 'tls_reports']) await db.schema.alterTable(table).dropColumn('stored_at').execute();
}
