// Every webhook-worthy event is a row in `events`, written by the code that caused it, inside the
// same transaction, so a crash can never commit the change and lose the announcement. This module
// is the only writer of the table (eslint.config.js): callers hand it their transaction.
//
// An event of a workspace without an enabled endpoint (and not bound to one) is recorded already
// fanned out, decided by the insert itself: nobody can be sent it, and fanning it out later cost an
// update of the row (and its indexes) and the fan-out's reads, for every message sent. An endpoint
// created after the event does not receive it, as with every event older than the endpoint (the
// rule received mail follows too, inbound/store.ts). test/events/record.test.ts holds this to the
// plain path (every event recorded unfanned, then fanned out) over generated endpoints and events.
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import { type Database, type Dialect, type EventsTable, flag, type Flag, inList } from '../db/index.js';
import type { Clock } from '../lib/clock.js';
import type { Ids } from '../lib/ids.js';
import type { EventType } from '../contract/webhooks.js';

export interface NewEvent {
  workspaceId: string;
  livemode: boolean;
  type: EventType;
  data: unknown;
  /** For message.received on an address bound to one endpoint. */
  endpointId?: string | null;
  /** message.received on an address that forwards nowhere: nothing for the forwarder to check. */
  forwardChecked?: boolean;
  /** No endpoint can receive it (webhooks/fanout.ts workspacesWithEndpoints): nothing to fan out. */
  fannedOut?: boolean;
}

/** The `events` row of a new event (its evt_ id from `deps.ids`), for callers that insert many at once. */
export function eventRow(deps: { clock: Pick<Clock, 'now'>; ids: Pick<Ids, 'publicId'> }, event: NewEvent): Insertable<EventsTable> {
  return {
    id: deps.ids.publicId('evt'),
    workspace_id: event.workspaceId,
    livemode: flag(event.livemode),
    type: event.type,
    data: JSON.stringify(event.data),
    endpoint_id: event.endpointId ?? null,
    created_at: deps.clock.now().toISOString(),
    ...(event.forwardChecked ? { forward_checked: 1 as const } : {}),
    ...(event.fannedOut ? { fanned_out: 1 as const } : {}),
  };
}

/** Inserts the event; returns its evt_ id. Publish `events.recorded` on the bus after commit. */
export async function recordEvent(
  db: Kysely<Database> | Transaction<Database>,
  deps: { clock: Clock; ids: Ids },
  event: NewEvent,
): Promise<string> {
  const row = eventRow(deps, event);
  if (event.endpointId || event.fannedOut) {
    await db.insertInto('events').values(row).execute();
    return row.id;
  }
  const listening = db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('workspace_id', '=', event.workspaceId)
    .where('enabled', '=', flag(true))
    .where('deleted_at', 'is', null);
  await db
    .insertInto('events')
    .values({ ...row, fanned_out: sql<Flag>`case when exists ${listening} then 0 else 1 end` })
    .execute();
  return row.id;
}

/**
 * Inserts `events` in order, as `recordEvent` on each would, with one statement on PostgreSQL (the
 * ledger's events of a batch, messages/ledger.ts); publish `events.recorded` after commit.
 */
export async function recordEvents(
  trx: Transaction<Database>,
  deps: { clock: Clock; ids: Ids; dialect: Dialect },
  events: NewEvent[],
): Promise<void> {
  if (deps.dialect !== 'postgres' || events.length < 2) {
    for (const e of events) await recordEvent(trx, deps, e);
    return;
  }
  const rows = events.map((e) => eventRow(deps, e));
  // WITH ORDINALITY and its ORDER BY keep the events' sequence in the order given.
  await sql`
    insert into events (id, workspace_id, livemode, type, data, endpoint_id, created_at, forward_checked, fanned_out)
    select e.id, e.workspace_id, e.livemode, e.type, e.data, e.endpoint_id, e.created_at, coalesce(e.forward_checked, 0),
      case
        when e.fanned_out = 1 then 1
        when e.endpoint_id is not null then 0
        when exists (
          select 1 from webhook_endpoints w
          where w.workspace_id = e.workspace_id and w.enabled = ${flag(true)} and w.deleted_at is null
        ) then 0
        else 1
      end
    from json_populate_recordset(null::events, ${JSON.stringify(rows)}::json) with ordinality as e
    order by e.ordinality`.execute(trx);
}

/** Inserts rows made by `eventRow`, as they are (a batch of received mail, inbound/store.ts). */
export async function insertEventRows(trx: Kysely<Database> | Transaction<Database>, rows: Insertable<EventsTable>[]): Promise<void> {
  if (rows.length > 0) await trx.insertInto('events').values(rows).execute();
}

/** Marks events fanned out: their webhook deliveries are written (webhooks/fanout.ts). */
export async function markFannedOut(trx: Transaction<Database>, dialect: Dialect, seqs: number[]): Promise<void> {
  await trx
    .updateTable('events')
    .set({ fanned_out: flag(true) })
    .where(inList(dialect, 'seq', seqs))
    .execute();
}

/** Marks a message.received event checked by the forwarder (forwarding/forwarder.ts). */
export async function markForwardChecked(trx: Transaction<Database>, seq: number): Promise<void> {
  await trx.updateTable('events').set({ forward_checked: 1 }).where('seq', '=', seq).execute();
}
