// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// MTA-STS policies (RFC 8461) of recipient domains, cached for their max_age in the database so
// every node of a cluster shares one fetch and a restart does not forget a policy in force (a
// policy that vanished from DNS still binds until it expires: that is what defeats a downgrade).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mta_sts_policies')
    .addColumn('domain', 'text', (c) => c.primaryKey())
    // The `id=` of the _mta-sts TXT record the policy was fetched for.
    .addColumn('policy_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    // The mx patterns (JSON array).
    .addColumn('mx', 'text', (c) => c.notNull())
    .addColumn('max_age', 'integer', (c) => c.notNull())
    .addColumn('fetched_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mta_sts_policies').execute();
}
