// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// DKIM key rotation (domains/dkim-rotation.ts). `dkim_keys` holds each key a rotation brought in
// and each key it retired, with its state (pending → verified → active → retiring → retired) and
// the times it moved; the private key is kept (sealed) only while the key may still sign. The
// domain row keeps what signs, read on every message sent: the RSA key in its `dkim_*` columns as
// before, and now an Ed25519 key beside it (dual signing, RFC 8463), plus when signing last
// switched keys, from which the schedule counts.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dkim_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('domain_id', 'text', (c) => c.notNull())
    .addColumn('selector', 'text', (c) => c.notNull())
    .addColumn('algorithm', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('private_key', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('verified_at', 'text')
    .addColumn('activated_at', 'text')
    .addColumn('retire_at', 'text')
    .addColumn('retired_at', 'text')
    .addColumn('removed_at', 'text')
    .addUniqueConstraint('dkim_keys_domain_selector', ['domain_id', 'selector'])
    .execute();
  await db.schema.createIndex('dkim_keys_state').on('dkim_keys').columns(['state']).execute();
  await db.schema.alterTable('domains').addColumn('dkim_ed25519_selector', 'text').execute();
  await db.schema.alterTable('domains').addColumn('dkim_ed25519_private_key', 'text').execute();
  await db.schema.alterTable('domains').addColumn('dkim_ed25519_public_key', 'text').execute();
  await db.schema.alterTable('domains').addColumn('dkim_rotated_at', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['dkim_rotated_at', 'dkim_ed25519_public_key', 'dkim_ed25519_private_key', 'dkim_ed25519_selector'])
    await db.schema.alterTable('domains').dropColumn(column).execute();
  await db.schema.dropTable('dkim_keys').execute();
}
