// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Outbound messages: one row per message, which is also its queue entry (due_at + lease), plus the
// idempotency keys of sends and a per-workspace monthly usage counter for plan quotas.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { serialPrimaryKey } from './portable.js';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('messages')
    // seq orders the list (newest first) and is its cursor; id is the public internal UUID.
    .addColumn('seq', ...serialPrimaryKey(db))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('template_slug', 'text')
    .addColumn('template_version', 'integer')
    .addColumn('pinned_version', 'integer')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('interpolate', 'integer', (c) => c.notNull())
    .addColumn('vars', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('metadata_text', 'text', (c) => c.notNull())
    .addColumn('search_text', 'text', (c) => c.notNull())
    .addColumn('from_override', 'text')
    .addColumn('from_name_override', 'text')
    .addColumn('cc', 'text', (c) => c.notNull())
    .addColumn('bcc', 'text', (c) => c.notNull())
    .addColumn('reply_to', 'text')
    .addColumn('attachments', 'text', (c) => c.notNull())
    .addColumn('provider', 'text')
    .addColumn('provider_connection_id', 'text')
    .addColumn('provider_message_id', 'text')
    .addColumn('latency_ms', 'integer')
    .addColumn('opened_at', 'text')
    .addColumn('clicked_at', 'text')
    .addColumn('error', 'text')
    .addColumn('timeline', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('scheduled_at', 'text')
    .addColumn('idempotency_key', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('due_at', 'text')
    .addColumn('locked_until', 'text')
    .addColumn('locked_by', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // The list: newest first within a workspace and environment, optionally narrowed by one column.
  await db.schema.createIndex('messages_list').on('messages').columns(['workspace_id', 'livemode', 'seq']).execute();
  await db.schema.createIndex('messages_list_status').on('messages').columns(['workspace_id', 'livemode', 'status', 'seq']).execute();
  await db.schema
    .createIndex('messages_list_template')
    .on('messages')
    .columns(['workspace_id', 'livemode', 'template_slug', 'seq'])
    .execute();
  await db.schema.createIndex('messages_list_channel').on('messages').columns(['workspace_id', 'livemode', 'channel', 'seq']).execute();
  // The queue: only rows with work left have due_at, so this index stays small however many rows exist.
  await db.schema.createIndex('messages_due').on('messages').column('due_at').where(sql.ref('due_at'), 'is not', null).execute();

  await db.schema
    .createTable('message_idempotency')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('response', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_idempotency_pk', ['workspace_id', 'livemode', 'key'])
    .execute();
  await db.schema.createIndex('message_idempotency_expiry').on('message_idempotency').column('expires_at').execute();

  await db.schema
    .createTable('message_usage')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_usage_pk', ['workspace_id', 'month'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['message_usage', 'message_idempotency', 'messages']) await db.schema.dropTable(t).execute();
}
