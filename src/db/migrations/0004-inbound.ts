// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Inbound mail: addresses on domains, the raw source of each SMTP transaction (shared by the
// messages it produced, purged after retention) and the received messages with their parsed fields.
import type { Kysely } from 'kysely';
import { isPostgres } from './portable.js';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('inbound_addresses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('domain_id', 'text', (c) => c.notNull().references('domains.id'))
    .addColumn('local_part', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('forward_to', 'text')
    .addColumn('webhook_endpoint_id', 'text')
    .addColumn('active', 'integer', (c) => c.notNull())
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('inbound_addresses_domain_local')
    .on('inbound_addresses')
    .columns(['domain_id', 'local_part'])
    .unique()
    .execute();
  await db.schema.createIndex('inbound_addresses_workspace').on('inbound_addresses').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .createTable('inbound_raw')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('source', isPostgres(db) ? 'bytea' : 'blob')
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addColumn('purged_at', 'text')
    .execute();
  await db.schema.createIndex('inbound_raw_received').on('inbound_raw').column('received_at').execute();

  await db.schema
    .createTable('received_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('address_id', 'text')
    .addColumn('address', 'text')
    .addColumn('plus_tag', 'text', (c) => c.notNull())
    .addColumn('raw_id', 'text', (c) => c.notNull().references('inbound_raw.id'))
    .addColumn('envelope', 'text', (c) => c.notNull())
    .addColumn('from_email', 'text', (c) => c.notNull())
    .addColumn('parsed', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'integer', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('received_messages_list')
    .on('received_messages')
    .columns(['workspace_id', 'livemode', 'received_at'])
    .execute();
  // Per-workspace monthly count of `received` messages, kept in the storing transaction, so the
  // quota check reads one row instead of counting a month of mail.
  await db.schema
    .createTable('inbound_usage')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('received', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('inbound_usage_pk', ['workspace_id', 'month'])
    .execute();
  await db.schema.createIndex('received_messages_address').on('received_messages').columns(['address_id', 'received_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['inbound_usage', 'received_messages', 'inbound_raw', 'inbound_addresses']) await db.schema.dropTable(t).execute();
}
