// Fan-out: turns each new row of `events` into one delivery row per endpoint that should get it.
// message.received bound to an endpoint (events.endpoint_id) goes to that endpoint only; every
// other event goes to each enabled endpoint of the event's workspace and environment subscribed to
// its type. An endpoint of a vendor's format gets only the types that format has a shape for
// (webhooks/formats/), bound or not. The delivery rows and the `fanned_out` mark commit together, and (event, endpoint) is
// unique, so two nodes fanning out the same event at once still produce one delivery each.
import type { Insertable, Kysely, Transaction } from 'kysely';
import { type Database, type Db, type Dialect, flag, type Flag, inList, isSet, type WebhookDeliveriesTable } from '../db/index.js';
import type { Clock } from '../lib/clock.js';
import type { Ids } from '../lib/ids.js';
import { markFannedOut } from '../events/index.js';
import { carries } from './formats/index.js';
import type { EventType, WebhookFormat } from '../contract/webhooks.js';

interface EndpointRow {
  id: string;
  public_id: string;
  workspace_id: string;
  livemode: Flag;
  events: string;
  format: WebhookFormat;
}

// `*` is every type the endpoint's format has an event for.
const subscribed = (ep: EndpointRow, type: EventType): boolean => {
  const events = JSON.parse(ep.events) as string[];
  return (events.includes('*') && carries(ep.format, type)) || events.includes(type);
};

/**
 * The workspaces among `workspaceIds` with at least one enabled endpoint. An event of any other
 * workspace (and not bound to an endpoint) can be recorded already fanned out: there is no one to
 * deliver it to, and fanning it out later would cost a transaction for nothing. An endpoint
 * created after such an event does not receive it, as with every event older than the endpoint.
 */
export async function workspacesWithEndpoints(db: Kysely<Database> | Transaction<Database>, workspaceIds: string[]): Promise<Set<string>> {
  if (workspaceIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select('workspace_id')
    .distinct()
    .where('workspace_id', 'in', workspaceIds)
    .where('enabled', '=', flag(true))
    .where('deleted_at', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.workspace_id));
}

/** Fans out up to `batch` events; returns how many events it handled. */
export async function fanOut(db: Db, deps: { dialect: Dialect; clock: Clock; ids: Ids }, batch = 200): Promise<number> {
  const events = await db
    .selectFrom('events')
    .select(['seq', 'id', 'workspace_id', 'livemode', 'type', 'endpoint_id'])
    .where('fanned_out', '=', flag(false))
    .orderBy('seq')
    .limit(batch)
    .execute();
  if (events.length === 0) return 0;

  const workspaceIds = [...new Set(events.map((e) => e.workspace_id))];
  const endpoints: EndpointRow[] = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'public_id', 'workspace_id', 'livemode', 'events', 'format'])
    .where(inList(deps.dialect, 'workspace_id', workspaceIds))
    .where('enabled', '=', flag(true))
    .where('deleted_at', 'is', null)
    .execute();

  const now = deps.clock.now().toISOString();
  const rows: Insertable<WebhookDeliveriesTable>[] = [];
  for (const ev of events) {
    const targets = ev.endpoint_id
      ? endpoints.filter(
          (ep) =>
            (ep.id === ev.endpoint_id || ep.public_id === ev.endpoint_id) &&
            ep.workspace_id === ev.workspace_id &&
            carries(ep.format, ev.type),
        )
      : endpoints.filter(
          (ep) => ep.workspace_id === ev.workspace_id && isSet(ep.livemode) === isSet(ev.livemode) && subscribed(ep, ev.type),
        );
    for (const ep of targets) {
      rows.push({
        id: deps.ids.uuid(),
        public_id: deps.ids.publicId('dlv'),
        endpoint_id: ep.id,
        event_id: ev.id,
        event_type: ev.type,
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        locked_until: null,
        lock_token: null,
        last_status_code: null,
        last_error: null,
        created_at: now,
        updated_at: now,
        delivered_at: null,
      });
    }
  }

  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < rows.length; i += 100) {
      await trx
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + 100))
        .onConflict((oc) => oc.columns(['event_id', 'endpoint_id']).doNothing())
        .execute();
    }
    await markFannedOut(
      trx,
      deps.dialect,
      events.map((e) => e.seq),
    );
  });
  return events.length;
}
