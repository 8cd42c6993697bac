// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Templates and their numbered versions. A version with published_at NULL is the draft; at most one
// per template (enforced by the store inside a transaction and by the unique version number).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('templates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('current_version', 'integer')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('templates_workspace_slug', ['workspace_id', 'slug'])
    .execute();

  await db.schema
    .createTable('template_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id'))
    .addColumn('version_number', 'integer', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('variables', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('published_at', 'text')
    .addUniqueConstraint('template_versions_number', ['template_id', 'version_number'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['template_versions', 'templates']) await db.schema.dropTable(t).execute();
}
