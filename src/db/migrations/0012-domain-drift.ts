// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// A confirmed record stays confirmed (the domain keeps signing and receiving), but it may be
// changed or removed later. `records_drift` lists the checks (`inboundMx`, `dkim`) whose confirmed
// record the last re-check found no longer published, null when all still are; `records_drift_since`
// is when that list last changed. The Overview warns about them.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').addColumn('records_drift', 'text').execute();
  await db.schema.alterTable('domains').addColumn('records_drift_since', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').dropColumn('records_drift_since').execute();
  await db.schema.alterTable('domains').dropColumn('records_drift').execute();
}
