// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// A custom domain's two capabilities are confirmed separately: sending when its DKIM record is
// published (it may sign and be `from`), receiving when its MX points at Postern. `status` and
// `verified_at` keep their meaning (verified once both are). Domains verified before this
// migration had both records confirmed; the shared domain receives and never signs.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').addColumn('dkim_verified_at', 'text').execute();
  await db.schema.alterTable('domains').addColumn('mx_verified_at', 'text').execute();
  await db
    .updateTable('domains')
    .set({ mx_verified_at: sql.ref('verified_at'), dkim_verified_at: sql`case when kind = 'custom' then verified_at end` })
    .where('status', '=', 'verified')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').dropColumn('mx_verified_at').execute();
  await db.schema.alterTable('domains').dropColumn('dkim_verified_at').execute();
}
