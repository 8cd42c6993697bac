// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// The dashboard overview counts a workspace's messages of the last 24 hours and 7 days by status.
// The list indexes are ordered by `seq`, not by time, so such a count would read every message
// of the workspace. `messages_created` (workspace, livemode, created_at, status) answers it from
// the index alone: a range on created_at, with the status in the index entry (covering), so a
// count reads only the window's entries and never a table row — on a workspace with 1 million
// messages the 7-day count reads that week's entries, not the million rows.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('messages_created').on('messages').columns(['workspace_id', 'livemode', 'created_at', 'status']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('messages_created').execute();
}
