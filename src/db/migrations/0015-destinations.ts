// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Per destination domain of email: what each workspace's mail there came to (delivered, deferred,
// bounced, the last error and its category), the holds an operator or a workspace put on delivery
// there (suspend/resume), and the box-wide back-off a destination that throttles or blocks earns.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('destination_stats')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('delivered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('deferred', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('bounced', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('last_category', 'text')
    .addColumn('last_error_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('destination_stats_pk', ['workspace_id', 'domain'])
    .execute();
  await db.schema
    .createTable('destination_holds')
    .addColumn('domain', 'text', (c) => c.notNull())
    // '' holds the domain for every workspace (an operator's suspension).
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('destination_holds_pk', ['domain', 'workspace_id'])
    .execute();
  await db.schema
    .createTable('destination_backoff')
    .addColumn('domain', 'text', (c) => c.primaryKey())
    .addColumn('until', 'text', (c) => c.notNull())
    .addColumn('step_ms', 'integer', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['destination_backoff', 'destination_holds', 'destination_stats']) await db.schema.dropTable(table).execute();
}
