// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// The dashboard's people: operator accounts (apart from API keys) and the workspaces a member may
// act on, their sessions (in the database, so any node of a cluster serves them), the one-time
// setup link of a first start, failed logins (the throttle counts them, per account and per
// client address) and the audit log of every dashboard action.
import type { Kysely } from 'kysely';
import { serialPrimaryKey } from './portable.js';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('operators')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('password_changed_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('operator_workspaces')
    .addColumn('operator_id', 'text', (c) => c.notNull().references('operators.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addPrimaryKeyConstraint('operator_workspaces_pk', ['operator_id', 'workspace_id'])
    .execute();

  await db.schema
    .createTable('operator_sessions')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('operator_id', 'text', (c) => c.notNull().references('operators.id').onDelete('cascade'))
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text')
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_seen_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('ip', 'text', (c) => c.notNull())
    .addColumn('user_agent', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('operator_sessions_operator').on('operator_sessions').column('operator_id').execute();

  await db.schema
    .createTable('setup_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .execute();

  await db.schema
    .createTable('login_failures')
    .addColumn('id', ...serialPrimaryKey(db))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('login_failures_subject').on('login_failures').columns(['subject', 'at']).execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', ...serialPrimaryKey(db))
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('operator_id', 'text')
    .addColumn('operator_email', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text')
    .addColumn('env', 'text')
    .addColumn('ip', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['audit_log', 'login_failures', 'setup_tokens', 'operator_sessions', 'operator_workspaces', 'operators']) {
    await db.schema.dropTable(table).execute();
  }
}
