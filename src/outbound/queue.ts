// The queue is the messages table itself: a row with `due_at` set has work left. A worker claims
// due rows by setting a lease (`locked_until`, `locked_by`); a crashed worker's lease simply runs
// out and the row is claimed again. On PostgreSQL the claim uses FOR UPDATE SKIP LOCKED so several
// nodes share one database; SQLite has a single writer, so the same UPDATE … RETURNING is atomic.
// Every later write goes through the message ledger with a compare-and-swap on (status, locked_by):
// a cancel or a retaken lease makes a stale writer's update match nothing, and the stale writer stops.
import { sql, type Transaction } from 'kysely';
import type { Database, Db, Dialect } from '../db/index.js';
import type { MessageRow } from '../messages/index.js';

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

/** When the next queued message falls due after `now` (the queue's partial index on due_at). */
export async function nextDueAfter(db: Db | Transaction<Database>, now: string): Promise<string | null> {
  const row = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.min('due_at').as('next'))
    .where('due_at', '>', now)
    .executeTakeFirst();
  return row?.next ?? null;
}

/**
 * Releases leases of this node's claims (`token` is the node's; each claim's lease is
 * `<token>.<n>`) at a graceful stop, so another worker need not wait for expiry: all of them, or
 * only those of `ids` (claimed, never handed over).
 */
export async function releaseLeases(db: Db | Transaction<Database>, token: string, ids?: string[]): Promise<void> {
  if (ids?.length === 0) return;
  let q = db.updateTable('messages').set({ locked_until: null, locked_by: null }).where('locked_by', 'like', `${token}.%`);
  if (ids) q = q.where('id', 'in', ids);
  await q.execute();
}

/** Gives back one message's lease, if `lease` still holds it (a later claim's is left alone). */
export async function releaseLease(db: Db | Transaction<Database>, id: string, lease: string): Promise<void> {
  await db
    .updateTable('messages')
    .set({ locked_until: null, locked_by: null })
    .where('id', '=', id)
    .where('locked_by', '=', lease)
    .execute();
}

/**
 * Extends the leases `lease` still holds on `ids` (the heartbeat of work in flight). A lease that
 * ran out is not revived: another node may already have taken the message. On PostgreSQL a row
 * another transaction is writing (a delivery's result, in a group-commit batch) is skipped, not
 * waited for: waiting, the renewal held rows that batch would wait for next, a deadlock PostgreSQL
 * broke after a second by failing one of them. The skipped row's write is settling it anyway, and
 * the next beat renews it if it is still held.
 */
export async function renewLeases(
  db: Db | Transaction<Database>,
  dialect: Dialect,
  lease: string,
  ids: string[],
  now: Date,
  until: Date,
): Promise<void> {
  const held = (q: Db | Transaction<Database>) =>
    q
      .selectFrom('messages')
      .select('id')
      .where('id', 'in', ids)
      .where('locked_by', '=', lease)
      .where('locked_until', '>', now.toISOString());
  const update = db.updateTable('messages').set({ locked_until: until.toISOString() });
  if (dialect === 'postgres') {
    await update.where('id', 'in', held(db).forUpdate().skipLocked()).execute();
    return;
  }
  await update.where('id', 'in', ids).where('locked_by', '=', lease).where('locked_until', '>', now.toISOString()).execute();
}

/**
 * Releases every lease a node held (its id is the prefix of its leases), when it stopped beating:
 * leased queue rows only (the partial index on due_at). Returns how many were released.
 */
export async function releaseNodeLeases(db: Db | Transaction<Database>, nodeId: string): Promise<number> {
  const res = await db
    .updateTable('messages')
    .set({ locked_until: null, locked_by: null })
    .where('due_at', 'is not', null)
    .where('locked_by', 'like', `${nodeId}.%`)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/**
 * Makes the deferred email of a destination domain due now (a hold on it was lifted): messages
 * waiting for a retry, not leased, of one workspace or of all (null). Returns how many.
 */
export async function releaseDeferredTo(db: Db, domain: string, workspaceId: string | null, now: string): Promise<number> {
  let q = db
    .updateTable('messages')
    .set({ due_at: now })
    .where('due_at', '>', now)
    .where('status', '=', 'dispatched')
    .where('channel', '=', 'email')
    .where('recipient', 'like', `%@${domain}`)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]));
  if (workspaceId !== null) q = q.where('workspace_id', '=', workspaceId);
  return Number((await q.executeTakeFirst()).numUpdatedRows);
}

/**
 * How many queue rows each node holds a lease on, by node id (the part of `locked_by` before its
 * first dot): one grouped pass over the leased rows of the queue's partial index on due_at. There
 * is no index on locked_by on purpose: a lease update that changes no indexed column stays a HOT
 * update on PostgreSQL (0020-queue-fillfactor).
 */
export async function claimsByNode(db: Db, dialect: Dialect): Promise<Map<string, number>> {
  const owner =
    dialect === 'postgres' ? sql<string>`split_part(locked_by, '.', 1)` : sql<string>`substr(locked_by, 1, instr(locked_by, '.') - 1)`;
  const rows = await db
    .selectFrom('messages')
    .select([owner.as('node'), (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('due_at', 'is not', null)
    .where('locked_by', 'is not', null)
    .groupBy(owner)
    .execute();
  return new Map(rows.map((r) => [r.node, Number(r.n)]));
}
