// The queue is the messages table itself: a row with `due_at` set has work left. A worker claims
// due rows by setting a lease (`locked_until`, `locked_by`); a crashed worker's lease simply runs
// out and the row is claimed again. On PostgreSQL the claim uses FOR UPDATE SKIP LOCKED so several
// nodes share one database; SQLite has a single writer, so the same UPDATE … RETURNING is atomic.
// Every later write is a compare-and-swap on (status, locked_by): a cancel or a retaken lease
// makes a stale writer's update match nothing, and the stale writer stops.
import { sql, type Transaction } from 'kysely';
import type { Db, Dialect } from '../db/database.js';
import type { Updateable } from 'kysely';
import type { Database, MessagesTable } from '../db/schema.js';
import type { QueryCache } from './compiled-queries.js';
import type { MessageRow } from './message.js';

export type RowPatch = Omit<Updateable<MessagesTable>, 'seq' | 'id'>;

/** Claims up to `limit` due rows with a lease; returns them as they are after the claim. */
export async function claimDue(
  db: Db | Transaction<Database>,
  dialect: Dialect,
  opts: { now: string; leaseUntil: string; token: string; limit: number },
): Promise<MessageRow[]> {
  let due = db
    .selectFrom('messages')
    .select('id')
    .where('due_at', '<=', opts.now)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', opts.now)]))
    .orderBy('due_at')
    .limit(opts.limit);
  if (dialect === 'postgres') due = due.forUpdate().skipLocked();
  return db
    .updateTable('messages')
    .set({ locked_until: opts.leaseUntil, locked_by: opts.token })
    .where('id', 'in', due)
    .returningAll()
    .execute();
}

/** Writes a patch if the row is still in `status` under lease `token`; false when it was not. */
export async function updateIfHeld(
  db: Db | Transaction<Database>,
  id: string,
  expect: { status: string; token: string },
  patch: RowPatch,
  queries?: QueryCache,
): Promise<boolean> {
  const build = () =>
    db.updateTable('messages').set(patch).where('id', '=', id).where('status', '=', expect.status).where('locked_by', '=', expect.token);
  if (!queries) return Number((await build().executeTakeFirst()).numUpdatedRows) === 1;
  // One shape per set of patched columns (a handful: the dispatcher's steps).
  const columns = (Object.keys(patch) as (keyof RowPatch)[]).filter((k) => patch[k] !== undefined);
  const params = [...columns.map((k) => patch[k]), id, expect.status, expect.token];
  const r = await db.executeQuery(queries.compiled(`messages.updateIfHeld:${columns.join(',')}`, params, build));
  return Number(r.numAffectedRows) === 1;
}

/** Releases leases held by `token` (graceful stop), so another worker need not wait for expiry. */
export async function releaseLeases(db: Db, token: string): Promise<void> {
  await db.updateTable('messages').set({ locked_until: null, locked_by: null }).where('locked_by', '=', token).execute();
}

export { sql };
