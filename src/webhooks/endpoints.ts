// Webhook endpoints: where a workspace's events go, per environment (live or test). The signing
// secret is shown once, at creation or rotation; a rotation keeps the previous secret signing for
// `webhooks.rotationOverlap` (24 h) so receivers can roll over without losing deliveries.
import type { Selectable } from 'kysely';
import { flag, isSet, type WebhookAttemptsTable, type WebhookDeliveriesTable, type WebhookEndpointsTable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { invalidBody, invalidRequest, notFound } from '../lib/errors.js';
import type { CreateEndpointInput, ListDeliveriesInput, UpdateEndpointInput } from '../contract/webhook-schemas.js';
import { FORMATS, newSigningKey, verificationKeyOf } from './formats/index.js';
import { generateSecret } from './signing.js';
import { urlProblem } from '../lib/ssrf.js';
import { webhookSsrfPolicy } from './ssrf.js';
import type { DeliveryStatus, EventType, WebhookFormat } from '../contract/webhooks.js';

/** Who is asking: endpoints belong to one workspace and one environment. */
export interface Owner {
  workspaceId: string;
  livemode: boolean;
}

export interface Endpoint {
  id: string;
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  livemode: boolean;
  format: WebhookFormat;
  /** sendgrid: the public key its deliveries' signatures verify with (base64 DER); null otherwise. */
  verificationKey: string | null;
  /** Start of the current run of failed attempts, or null. */
  failingSince: string | null;
  /** Why the endpoint was disabled automatically, or null. */
  disabledReason: string | null;
  /** Until when the previous secret still signs, during a rotation. */
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Attempt {
  at: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface Delivery {
  id: string;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  attemptCount: number;
  lastStatusCode: number | null;
  lastError: string | null;
  /** When the next attempt is due; null once the delivery succeeded or gave up. */
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
  attempts: Attempt[];
}

function toEndpoint(row: Selectable<WebhookEndpointsTable>, now: Date): Endpoint {
  const previousLive = row.previous_secret_expires_at && row.previous_secret_expires_at > now.toISOString();
  return {
    id: row.public_id,
    url: row.url,
    description: row.description,
    events: JSON.parse(row.events) as string[],
    enabled: isSet(row.enabled),
    livemode: isSet(row.livemode),
    format: row.format,
    verificationKey: row.signing_key ? verificationKeyOf(row.signing_key) : null,
    failingSince: row.failing_since,
    disabledReason: row.disabled_reason,
    previousSecretExpiresAt: previousLive ? row.previous_secret_expires_at : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toDelivery(row: Selectable<WebhookDeliveriesTable>, attempts: Selectable<WebhookAttemptsTable>[]): Delivery {
  return {
    id: row.public_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attemptCount: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    nextAttemptAt: row.status === 'pending' ? row.next_attempt_at : null,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
    attempts: attempts.map((a) => ({ at: a.attempted_at, statusCode: a.status_code, error: a.error, durationMs: a.duration_ms })),
  };
}

export interface EndpointStore {
  create(owner: Owner, input: CreateEndpointInput): Promise<{ endpoint: Endpoint; secret: string }>;
  list(owner: Owner): Promise<Endpoint[]>;
  get(owner: Owner, id: string): Promise<Endpoint>;
  update(owner: Owner, id: string, input: UpdateEndpointInput): Promise<Endpoint>;
  remove(owner: Owner, id: string): Promise<{ id: string; deleted: true }>;
  rotateSecret(owner: Owner, id: string): Promise<{ endpoint: Endpoint; secret: string }>;
  deliveries(owner: Owner, id: string, query: ListDeliveriesInput): Promise<Delivery[]>;
  /** Makes a delivery due now again (whatever its status); the worker picks it up. */
  retry(owner: Owner, id: string, deliveryId: string): Promise<Delivery>;
  /** The request a delivery POSTs (the signature headers, which change per attempt, left out). */
  request(owner: Owner, id: string, deliveryId: string): Promise<DeliveryRequest>;
}

export interface DeliveryRequest {
  method: 'POST';
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface EndpointDeps extends Pick<Deps, 'config' | 'db' | 'clock' | 'ids' | 'dns' | 'log'> {
  /** Called after a change that may make work due (a retry, a re-enabled endpoint). */
  onWork?: () => void;
  /** The event data as delivered (a received message's payload is built on delivery). */
  eventPayload?: (type: string, data: string) => Promise<string>;
}

export function createEndpointStore(deps: EndpointDeps): EndpointStore {
  const { db, clock, ids } = deps;
  const policy = deps.config.webhooks;
  const overlapMs = policy.rotationOverlap;

  // A vendor format has events for some types only: subscribing its endpoint to another is refused.
  const checkEvents = (format: WebhookFormat, events: string[] | undefined): void => {
    const types = FORMATS[format].types;
    const foreign = types ? (events ?? []).filter((e) => e !== '*' && !types.includes(e as EventType)) : [];
    if (foreign.length)
      throw invalidBody([
        { path: 'events', message: `the ${format} format has no event for ${foreign.join(', ')}; it carries ${types!.join(', ')}` },
      ]);
  };

  // Credentials in a webhook URL are basic authentication (Postmark's way, which listmonk checks):
  // the deliverer sends them as an Authorization header. The rest of the URL is judged as any.
  const checkUrl = async (url: string): Promise<void> => {
    const bare = new URL(url);
    bare.username = bare.password = '';
    const problem = await urlProblem(webhookSsrfPolicy(policy), deps.dns, bare);
    if (problem) throw invalidBody([{ path: 'url', message: problem }]);
  };

  const row = async (owner: Owner, id: string) => {
    const r = await db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('public_id', '=', id)
      .where('workspace_id', '=', owner.workspaceId)
      .where('livemode', '=', flag(owner.livemode))
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!r) throw notFound('webhook endpoint');
    return r;
  };

  const deliveryView = async (d: Selectable<WebhookDeliveriesTable>): Promise<Delivery> => {
    const attempts = await db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('delivery_id', '=', d.id)
      .orderBy('attempted_at')
      .orderBy('id')
      .execute();
    return toDelivery(d, attempts);
  };

  return {
    async create(owner, input) {
      const format = input.format ?? 'postern';
      checkEvents(format, input.events);
      await checkUrl(input.url);
      const now = clock.now().toISOString();
      const secret = generateSecret();
      const r = {
        id: ids.uuid(),
        public_id: ids.publicId('whk'),
        workspace_id: owner.workspaceId,
        livemode: flag(owner.livemode),
        url: input.url,
        description: input.description ?? '',
        events: JSON.stringify(input.events ?? ['*']),
        enabled: flag(input.enabled !== false),
        format,
        signing_key: format === 'sendgrid' ? newSigningKey() : null,
        secret,
        previous_secret: null,
        previous_secret_expires_at: null,
        failing_since: null,
        disabled_reason: null,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      };
      await db.insertInto('webhook_endpoints').values(r).execute();
      return { endpoint: toEndpoint(r, clock.now()), secret };
    },

    async list(owner) {
      const rows = await db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('workspace_id', '=', owner.workspaceId)
        .where('livemode', '=', flag(owner.livemode))
        .where('deleted_at', 'is', null)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map((r) => toEndpoint(r, clock.now()));
    },

    async get(owner, id) {
      return toEndpoint(await row(owner, id), clock.now());
    },

    async update(owner, id, input) {
      const current = await row(owner, id);
      checkEvents(current.format, input.events);
      if (input.url !== undefined) await checkUrl(input.url);
      const changes: Partial<Selectable<WebhookEndpointsTable>> = { updated_at: clock.now().toISOString() };
      if (input.url !== undefined) changes.url = input.url;
      if (input.description !== undefined) changes.description = input.description;
      if (input.events !== undefined) changes.events = JSON.stringify(input.events);
      if (input.enabled !== undefined) {
        changes.enabled = flag(input.enabled);
        // Re-enabling starts a fresh health record; the failure history stays in the attempts.
        if (input.enabled) Object.assign(changes, { disabled_reason: null, failing_since: null });
      }
      await db.updateTable('webhook_endpoints').set(changes).where('id', '=', current.id).execute();
      if (input.enabled) deps.onWork?.();
      return toEndpoint(await row(owner, id), clock.now());
    },

    async remove(owner, id) {
      const current = await row(owner, id);
      const now = clock.now().toISOString();
      await db.transaction().execute(async (trx) => {
        await trx
          .updateTable('webhook_endpoints')
          .set({ deleted_at: now, enabled: flag(false), updated_at: now })
          .where('id', '=', current.id)
          .execute();
        // Nothing more will be attempted for a deleted endpoint.
        await trx
          .updateTable('webhook_deliveries')
          .set({ status: 'failed', last_error: 'endpoint deleted', next_attempt_at: null, updated_at: now })
          .where('endpoint_id', '=', current.id)
          .where('status', '=', 'pending')
          .execute();
      });
      return { id, deleted: true };
    },

    async rotateSecret(owner, id) {
      const current = await row(owner, id);
      const now = clock.now();
      const secret = generateSecret();
      await db
        .updateTable('webhook_endpoints')
        .set({
          secret,
          previous_secret: current.secret,
          previous_secret_expires_at: new Date(now.getTime() + overlapMs).toISOString(),
          updated_at: now.toISOString(),
        })
        .where('id', '=', current.id)
        .execute();
      return { endpoint: toEndpoint(await row(owner, id), clock.now()), secret };
    },

    async deliveries(owner, id, query) {
      const ep = await row(owner, id);
      let q = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', ep.id);
      if (query.status) q = q.where('status', '=', query.status);
      if (query.before !== undefined) {
        const d = new Date(query.before);
        if (Number.isNaN(d.getTime()) || !/^\d{4}-\d\d-\d\dT/.test(query.before))
          throw invalidRequest('before must be an ISO 8601 timestamp');
        q = q.where('created_at', '<', d.toISOString());
      }
      const rows = await q
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(query.limit ?? 50)
        .execute();
      const attempts = rows.length
        ? await db
            .selectFrom('webhook_attempts')
            .selectAll()
            .where(
              'delivery_id',
              'in',
              rows.map((r) => r.id),
            )
            .orderBy('attempted_at')
            .orderBy('id')
            .execute()
        : [];
      return rows.map((r) =>
        toDelivery(
          r,
          attempts.filter((a) => a.delivery_id === r.id),
        ),
      );
    },

    async request(owner, id, deliveryId) {
      const ep = await row(owner, id);
      const d = await db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('events as ev', 'ev.id', 'd.event_id')
        .select(['ev.id', 'ev.type', 'ev.data', 'ev.created_at'])
        .where('d.public_id', '=', deliveryId)
        .where('d.endpoint_id', '=', ep.id)
        .executeTakeFirst();
      if (!d) throw notFound('delivery');
      const data = deps.eventPayload ? await deps.eventPayload(d.type, d.data) : d.data;
      return {
        method: 'POST',
        url: ep.url,
        headers: { 'content-type': 'application/json', 'user-agent': 'Postern-Webhooks/1', 'webhook-id': d.id },
        body: FORMATS[ep.format].body({ id: d.id, type: d.type, createdAt: d.created_at, data }),
      };
    },

    async retry(owner, id, deliveryId) {
      const ep = await row(owner, id);
      const d = await db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('public_id', '=', deliveryId)
        .where('endpoint_id', '=', ep.id)
        .executeTakeFirst();
      if (!d) throw notFound('delivery');
      const now = clock.now().toISOString();
      // A manual retry is a fresh attempt now; a lease already held (attempt in flight) is left alone.
      await db
        .updateTable('webhook_deliveries')
        .set({ status: 'pending', next_attempt_at: now, updated_at: now })
        .where('id', '=', d.id)
        .execute();
      deps.onWork?.();
      return deliveryView(await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', d.id).executeTakeFirstOrThrow());
    },
  };
}
