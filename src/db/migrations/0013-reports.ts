// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// DMARC aggregate and SMTP TLS reports mailed back to the report address. A report is stored once
// per (reporting organisation, report id); its counts are stored per UTC day and per domain (the
// header From domain of a DMARC record, the policy domain of a TLS result), which is what the
// summaries read by (domain, day). Reports belong to no workspace: a workspace reads those of its
// own domains.
import type { Kysely } from 'kysely';
import { serialPrimaryKey } from './portable.js';

export async function up(db: Kysely<any>): Promise<void> {
  for (const kind of ['dmarc', 'tls'] as const) {
    await db.schema
      .createTable(`${kind}_reports`)
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org', 'text', (c) => c.notNull())
      .addColumn('report_id', 'text', (c) => c.notNull())
      .addColumn('email', 'text')
      .addColumn('begin_at', 'text', (c) => c.notNull())
      .addColumn('end_at', 'text', (c) => c.notNull())
      // dmarc: the policy published (JSON) and the schema; tls: null.
      .addColumn('policy', 'text')
      .addColumn('partial', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('received_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex(`${kind}_reports_unique`).on(`${kind}_reports`).columns(['org', 'report_id']).unique().execute();
  }
  await db.schema
    .createTable('dmarc_report_rows')
    .addColumn('id', ...serialPrimaryKey(db))
    .addColumn('report', 'text', (c) => c.notNull().references('dmarc_reports.id'))
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('source_ip', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('disposition', 'text', (c) => c.notNull())
    .addColumn('dkim', 'text', (c) => c.notNull())
    .addColumn('spf', 'text', (c) => c.notNull())
    .addColumn('envelope_from', 'text')
    // The raw DKIM and SPF results and the override reasons (JSON).
    .addColumn('detail', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dmarc_report_rows_domain_day').on('dmarc_report_rows').columns(['domain', 'day']).execute();
  await db.schema
    .createTable('tls_report_rows')
    .addColumn('id', ...serialPrimaryKey(db))
    .addColumn('report', 'text', (c) => c.notNull().references('tls_reports.id'))
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('policy_type', 'text', (c) => c.notNull())
    .addColumn('mx_hosts', 'text', (c) => c.notNull())
    .addColumn('successful', 'integer', (c) => c.notNull())
    .addColumn('failed', 'integer', (c) => c.notNull())
    // The failure details (JSON): result type, sending address, receiving MX, count.
    .addColumn('failures', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tls_report_rows_domain_day').on('tls_report_rows').columns(['domain', 'day']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('tls_report_rows').execute();
  await db.schema.dropTable('dmarc_report_rows').execute();
  await db.schema.dropTable('tls_reports').execute();
  await db.schema.dropTable('dmarc_reports').execute();
}
