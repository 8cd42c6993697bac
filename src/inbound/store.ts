// The storing step of received SMTP transactions, as plain data in and out: per transaction the
// raw source, one message row per (workspace, address) group, the quota check, the usage counter
// and the message.received event, all inside the caller's transaction, a batch at a time (the group
// commit of db/group-commit.ts hands it the transactions that arrived together). Every id and
// timestamp is decided by the caller beforehand, so a batch decides exactly as one transaction per
// request would.
import type { Insertable, Kysely, Transaction } from 'kysely';
import { type Database, type EventsTable, isSet, type ReceivedStatus } from '../db/index.js';
import { eventRow, insertEventRows } from '../events/index.js';
import { workspacesWithEndpoints } from '../webhooks/index.js';
import type { ReceivedRow } from './received.js';

export interface StoreGroup {
  /** The row as routed: status `received` (may become `quota_exceeded` here) or `dropped`. */
  row: ReceivedRow;
  /** Monthly quota of the workspace's plan; 0 = unlimited. */
  quota: number;
  eventId: string;
  endpointId: string | null;
  /** The address forwards: leave the event for the forwarder. */
  forwards: boolean;
  /** What names a retry of this message to this group (receive.ts), or null: never taken for one. */
  seenKey: string | null;
}

export interface StoreRequest {
  rawId: string;
  source: Buffer;
  receivedAt: string;
  groups: StoreGroup[];
  /** A message seen before this moment is not a retry of it any more (`inbound.retryWindow`). */
  seenSince: string;
}

export interface StoredMessage {
  id: string;
  workspaceId: string;
  status: ReceivedStatus;
  /** Sent again within the retry window: `id` is the message stored the first time; nothing was stored. */
  retry?: true;
}

export interface StoreResult {
  out: StoredMessage[];
  /** evt_ ids recorded that still have a consumer (publish `events.recorded` after commit). */
  events: string[];
}

/**
 * Stores a batch of received transactions in the caller's transaction with a handful of
 * statements whatever the batch size (one multi-row insert per table, one usage upsert per
 * workspace and month, one per message where a quota applies): per-statement overhead is most of
 * what storing costs the event loop. The quota is applied in order, so the batch decides exactly
 * as one transaction per request would.
 */
export async function storeMessages(trx: Kysely<Database> | Transaction<Database>, reqs: StoreRequest[]): Promise<StoreResult[]> {
  if (reqs.length === 0) return [];
  const retries = await retriesOf(trx, reqs);
  const fresh = reqs.filter((req) => req.groups.some((g) => !retries.has(g)));
  if (fresh.length > 0)
    await trx
      .insertInto('inbound_raw')
      .values(fresh.map((req) => ({ id: req.rawId, source: req.source, received_at: req.receivedAt, purged_at: null })))
      .execute();

  // A workspace with a quota counts each message with one conditional upsert that increments only
  // below the quota: atomic on both dialects (PostgreSQL's ON CONFLICT locks the row, so concurrent
  // transactions on separate connections cannot all read the same count), and in order within the
  // batch. Unlimited workspaces are counted once per batch.
  const unlimited = new Map<string, { workspaceId: string; month: string; added: number }>();
  const countWithin = async (workspaceId: string, month: string, quota: number): Promise<boolean> => {
    const r = await trx
      .insertInto('inbound_usage')
      .values({ workspace_id: workspaceId, month, received: 1 })
      .onConflict((oc) =>
        oc
          .columns(['workspace_id', 'month'])
          .doUpdateSet((eb) => ({ received: eb('inbound_usage.received', '+', 1) }))
          .where('inbound_usage.received', '<', quota),
      )
      .returning('received')
      .executeTakeFirst();
    return r !== undefined;
  };

  const rows: ReceivedRow[] = [];
  const events: Insertable<EventsTable>[] = [];
  const results: StoreResult[] = [];
  const withEndpoints = await workspacesWithEndpoints(trx, [...new Set(reqs.flatMap((req) => req.groups.map((g) => g.row.workspace_id)))]);
  for (const req of reqs) {
    const month = req.receivedAt.slice(0, 7);
    const result: StoreResult = { out: [], events: [] };
    for (const g of req.groups) {
      const first = retries.get(g);
      if (first !== undefined) {
        result.out.push({ id: first, workspaceId: g.row.workspace_id, status: g.row.status, retry: true });
        continue;
      }
      const row: ReceivedRow = { ...g.row };
      if (row.status === 'received') {
        if (g.quota > 0) {
          if (!(await countWithin(row.workspace_id, month, g.quota))) row.status = 'quota_exceeded';
        } else {
          const key = `${row.workspace_id}:${month}`;
          const u = unlimited.get(key) ?? { workspaceId: row.workspace_id, month, added: 0 };
          u.added++;
          unlimited.set(key, u);
        }
      }
      rows.push(row);
      if (row.status === 'received') {
        // The event names the message; the webhook payload is its detail, rendered when delivered
        // from the one stored copy (received.ts eventPayload), so the body is not written twice.
        // What the event needs no one for is marked done here, in this commit: the forwarder when
        // the address forwards nowhere, the fan-out when no endpoint can receive it. Each would
        // otherwise spend a transaction (an fsync on the event loop) per batch on nothing.
        const fannedOut = !g.endpointId && !withEndpoints.has(row.workspace_id);
        events.push(
          eventRow(
            { clock: { now: () => new Date(req.receivedAt) }, ids: { publicId: () => g.eventId } },
            {
              workspaceId: row.workspace_id,
              livemode: isSet(row.livemode),
              type: 'message.received',
              data: { id: row.public_id },
              endpointId: g.endpointId,
              forwardChecked: !g.forwards,
              fannedOut,
            },
          ),
        );
        if (!fannedOut || g.forwards) result.events.push(g.eventId);
      }
      result.out.push({ id: row.public_id, workspaceId: row.workspace_id, status: row.status });
    }
    results.push(result);
  }

  for (const u of unlimited.values()) {
    await trx
      .insertInto('inbound_usage')
      .values({ workspace_id: u.workspaceId, month: u.month, received: u.added })
      .onConflict((oc) =>
        oc.columns(['workspace_id', 'month']).doUpdateSet((eb) => ({ received: eb('inbound_usage.received', '+', u.added) })),
      )
      .execute();
  }
  if (rows.length > 0) await trx.insertInto('received_messages').values(rows).execute();
  await insertEventRows(trx, events);
  return results;
}

/**
 * The groups of a batch that are retries of a message stored within the retry window, with the
 * first one's rcv_ id. The first copy claims its key in `inbound_seen`, in the transaction that
 * stores it: a copy on another node waits for that commit and then finds the key taken (a key
 * older than the window is taken over). Within a batch the first copy wins.
 */
async function retriesOf(trx: Kysely<Database> | Transaction<Database>, reqs: StoreRequest[]): Promise<Map<StoreGroup, string>> {
  const retries = new Map<StoreGroup, string>();
  const firsts = new Map<string, StoreGroup>();
  let since = '';
  for (const req of reqs) {
    for (const g of req.groups) {
      if (g.seenKey === null) continue;
      const first = firsts.get(g.seenKey);
      if (first) retries.set(g, first.row.public_id);
      else firsts.set(g.seenKey, g);
    }
    if (since === '' || req.seenSince < since) since = req.seenSince;
  }
  if (firsts.size === 0) return retries;
  const claimed = await trx
    .insertInto('inbound_seen')
    .values([...firsts].map(([key, g]) => ({ key, received_id: g.row.public_id, seen_at: g.row.received_at })))
    .onConflict((oc) =>
      oc
        .column('key')
        .doUpdateSet((eb) => ({ received_id: eb.ref('excluded.received_id'), seen_at: eb.ref('excluded.seen_at') }))
        .where('inbound_seen.seen_at', '<', since),
    )
    .returning('key')
    .execute();
  if (claimed.length === firsts.size) return retries;
  const taken = new Set(claimed.map((r) => r.key));
  const seen = await trx
    .selectFrom('inbound_seen')
    .select(['key', 'received_id'])
    .where(
      'key',
      'in',
      [...firsts.keys()].filter((k) => !taken.has(k)),
    )
    .execute();
  for (const r of seen) retries.set(firsts.get(r.key)!, r.received_id);
  // A later copy in this batch of a retried message names the first stored, not the batch's first.
  for (const g of retries.keys()) {
    const first = firsts.get(g.seenKey!)!;
    if (first !== g && retries.has(first)) retries.set(g, retries.get(first)!);
  }
  return retries;
}

/** Forgets the messages seen before `before` (the daily purge): a copy sent after the window is stored. */
export async function forgetSeen(db: Kysely<Database>, before: string): Promise<number> {
  const r = await db.deleteFrom('inbound_seen').where('seen_at', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}
