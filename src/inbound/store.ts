// The storing step of received SMTP transactions, as plain data in and out: per transaction the
// raw source, one message row per (workspace, address) group, the quota check, the usage counter
// and the message.received event, all inside the caller's transaction, a batch at a time (the group
// commit of db/group-commit.ts hands it the transactions that arrived together). Every id and
// timestamp is decided by the caller beforehand, so a batch decides exactly as one transaction per
// request would.
import type { Insertable, Kysely, Transaction } from 'kysely';
import { isSet, type Database, type EventsTable, type ReceivedStatus } from '../db/schema.js';
import { eventRow } from '../events/record.js';
import { workspacesWithEndpoints } from '../webhooks/fanout.js';
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
}

export interface StoreRequest {
  rawId: string;
  source: Buffer;
  receivedAt: string;
  groups: StoreGroup[];
}

export interface StoredMessage {
  id: string;
  workspaceId: string;
  status: ReceivedStatus;
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
  await trx
    .insertInto('inbound_raw')
    .values(reqs.map((req) => ({ id: req.rawId, source: req.source, received_at: req.receivedAt, purged_at: null })))
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
  if (events.length > 0) await trx.insertInto('events').values(events).execute();
  return results;
}
