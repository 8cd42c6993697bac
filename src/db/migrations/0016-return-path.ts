// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// A custom sending domain's own return path, `bounces.<domain>`: when its MX points at Postern and
// its SPF authorises the box, the envelope sender moves there from the shared bounce domain and
// SPF aligns with the From domain. Confirmed like the domain's other records; drift is recorded in
// `records_drift` as `returnPath`.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').addColumn('return_path_verified_at', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').dropColumn('return_path_verified_at').execute();
}
