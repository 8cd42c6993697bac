// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Email delivery state that is not the message itself: per-recipient outcomes (so a retry never
// resends to a recipient that already accepted), the suppression list, per-workspace email
// settings (tracking), sender-cap counters, and secrets shared by every node (tracking tokens).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('email_recipients')
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('response', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('email_recipients_pk', ['message_id', 'address'])
    .execute();

  await db.schema
    .createTable('suppressions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('message_public_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('suppressions_workspace_address', ['workspace_id', 'address'])
    .execute();
  await db.schema.createIndex('suppressions_workspace_created').on('suppressions').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .createTable('email_settings')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id'))
    .addColumn('tracking', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sender_counters')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('sender_counters_pk', ['workspace_id', 'period'])
    .execute();

  await db.schema
    .createTable('email_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['email_secrets', 'sender_counters', 'email_settings', 'suppressions', 'email_recipients'])
    await db.schema.dropTable(t).execute();
}
