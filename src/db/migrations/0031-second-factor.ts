// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// Operators' second factors: an authenticator app's secret (sealed under secrets.key) with the last
// step a code was used for, the recovery codes (hashed, each once), and the box's own settings,
// the first of which is whether every operator must have a second factor; and how each session was
// signed in to (`password`, `password+totp`, `password+recovery-code`).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('operator_totp')
    .addColumn('operator_id', 'text', (c) => c.primaryKey().references('operators.id').onDelete('cascade'))
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('confirmed_at', 'text')
    .addColumn('last_step', 'integer')
    .execute();
  await db.schema
    .createTable('operator_recovery_codes')
    .addColumn('operator_id', 'text', (c) => c.notNull().references('operators.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addPrimaryKeyConstraint('operator_recovery_codes_pk', ['operator_id', 'code_hash'])
    .execute();
  await db.schema
    .createTable('box_settings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .alterTable('operator_sessions')
    .addColumn('method', 'text', (c) => c.notNull().defaultTo('password'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('operator_sessions').dropColumn('method').execute();
  for (const table of ['box_settings', 'operator_recovery_codes', 'operator_totp']) await db.schema.dropTable(table).execute();
}
