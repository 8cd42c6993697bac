// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// On PostgreSQL a message row is rewritten several times while queued (the claim's lease, its
// renewals, the dispatch, the outcome). An update that changes no indexed column can stay on its
// page without touching the table's nine indexes (a HOT update), but only when the page has room:
// at the default fillfactor of 100 the inserts fill every page and each lease update writes a new
// entry into every index. Pages are left 30 % free for those updates. SQLite has no such setting.
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './portable.js';

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`ALTER TABLE messages SET (fillfactor = 70)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`ALTER TABLE messages RESET (fillfactor)`.execute(db);
}
