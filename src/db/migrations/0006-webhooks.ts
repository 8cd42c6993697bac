// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Webhooks: endpoints, one delivery row per (event, endpoint) — the durable outbox — and the log
// of every attempt. `events.fanned_out` marks events already turned into delivery rows.
// Forwarding of received mail: `events.forward_checked` marks message.received events the
// forwarder has looked at; `forwards` links a received message to the outbound message that
// forwards it (or says why none was made); `forwarding_keys` holds the SRS secret and ARC key.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('events')
    .addColumn('fanned_out', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('events_fanout').on('events').columns(['fanned_out', 'seq']).execute();
  await db.schema
    .alterTable('events')
    .addColumn('forward_checked', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('events_forward').on('events').columns(['forward_checked', 'type', 'seq']).execute();

  await db.schema
    .createTable('forwards')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('received_id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('forward_to', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('forwarding_keys')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', 'text')
    .addColumn('failing_since', 'text')
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('webhook_endpoints_workspace')
    .on('webhook_endpoints')
    .columns(['workspace_id', 'livemode', 'created_at'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id'))
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'text')
    .addColumn('locked_until', 'text')
    .addColumn('lock_token', 'text')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'text')
    .addUniqueConstraint('webhook_deliveries_event_endpoint', ['event_id', 'endpoint_id'])
    .execute();
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  // Leases held (per-endpoint concurrency across nodes) and one endpoint's due work.
  await db.schema.createIndex('webhook_deliveries_lease').on('webhook_deliveries').column('locked_until').execute();
  await db.schema
    .createIndex('webhook_deliveries_endpoint_due')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'status', 'next_attempt_at'])
    .execute();
  await db.schema.createIndex('webhook_deliveries_endpoint').on('webhook_deliveries').columns(['endpoint_id', 'created_at']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id'))
    .addColumn('attempted_at', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'attempted_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['forwarding_keys', 'forwards', 'webhook_attempts', 'webhook_deliveries', 'webhook_endpoints'])
    await db.schema.dropTable(t).execute();
  await db.schema.dropIndex('events_forward').execute();
  await db.schema.dropIndex('events_fanout').execute();
  await db.schema.alterTable('events').dropColumn('forward_checked').execute();
  await db.schema.alterTable('events').dropColumn('fanned_out').execute();
}
