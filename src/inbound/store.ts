// The storing step of one received SMTP transaction, as plain data in and out: the raw source, one
// message row per (workspace, address) group, the quota check, the usage counter and the
// message.received event, all inside the caller's transaction. Every id and timestamp is decided
// by the caller beforehand, so the same request can run on the main thread (PostgreSQL, or SQLite
// without the store worker) or in the store worker thread (store-worker.ts) with identical rows.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { recordEvent } from '../events/record.js';
import type { Ids } from '../lib/ids.js';
import type { MessageRow } from './messages.js';

export interface StoreGroup {
  /** The row as routed: status `received` (may become `quota_exceeded` here) or `dropped`. */
  row: MessageRow;
  /** Monthly quota of the workspace's plan; 0 = unlimited. */
  quota: number;
  eventId: string;
  endpointId: string | null;
  /** The address forwards: leave the event for the forwarder. */
  forwards: boolean;
}

export interface StoreRequest {
  rawId: string;
  source: Uint8Array;
  receivedAt: string;
  groups: StoreGroup[];
}

export interface StoredMessage {
  id: string;
  workspaceId: string;
  status: 'received' | 'dropped' | 'quota_exceeded';
}

export interface StoreResult {
  out: StoredMessage[];
  /** evt_ ids recorded (publish `events.recorded` after commit). */
  events: string[];
}

export async function storeMessage(trx: Kysely<Database> | Transaction<Database>, req: StoreRequest): Promise<StoreResult> {
  const source = Buffer.isBuffer(req.source) ? req.source : Buffer.from(req.source.buffer, req.source.byteOffset, req.source.byteLength);
  const month = req.receivedAt.slice(0, 7);
  await trx.insertInto('inbound_raw').values({ id: req.rawId, source, received_at: req.receivedAt, purged_at: null }).execute();
  const out: StoredMessage[] = [];
  const events: string[] = [];
  for (const g of req.groups) {
    const row: MessageRow = { ...g.row };
    if (row.status === 'received' && g.quota > 0) {
      const usage = await trx.selectFrom('inbound_usage').select('received').where('workspace_id', '=', row.workspace_id).where('month', '=', month).executeTakeFirst();
      if (Number(usage?.received ?? 0) >= g.quota) row.status = 'quota_exceeded';
    }
    if (row.status === 'received') {
      await trx
        .insertInto('inbound_usage')
        .values({ workspace_id: row.workspace_id, month, received: 1 })
        .onConflict((oc) => oc.columns(['workspace_id', 'month']).doUpdateSet((eb) => ({ received: eb('inbound_usage.received', '+', 1) })))
        .execute();
    }
    await trx.insertInto('received_messages').values(row).execute();
    if (row.status === 'received') {
      const ids = { uuid: () => g.eventId, publicId: () => g.eventId } as Ids;
      // The event names the message; the webhook payload is its detail, rendered when delivered
      // from the one stored copy (messages.ts eventPayload), so the body is not written twice.
      // An address that forwards nowhere has nothing for the forwarder: marked checked here, so
      // the forwarder spends no transaction (one fsync) per received message on it.
      const eventId = await recordEvent(trx, { clock: { now: () => new Date(req.receivedAt) }, ids }, {
        workspaceId: row.workspace_id,
        livemode: row.livemode === 1,
        type: 'message.received',
        data: { id: row.public_id },
        endpointId: g.endpointId,
        forwardChecked: !g.forwards,
      });
      events.push(eventId);
    }
    out.push({ id: row.public_id, workspaceId: row.workspace_id, status: row.status as StoredMessage['status'] });
  }
  return { out, events };
}
