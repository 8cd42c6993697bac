// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Scheduled jobs of a cluster run once: every node's schedule fires, and the node whose insert of
// (job, period) wins runs it; the others see the row and skip.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('job_runs')
    .addColumn('job', 'text', (c) => c.notNull())
    // The period the run is for (the scheduled minute, UTC).
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('job_runs_pk', ['job', 'period'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('job_runs').execute();
}
