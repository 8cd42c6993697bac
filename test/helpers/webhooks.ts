// Shared by the webhook tests: record an event the way every producer does (recordEvent, then
// `events.recorded` on the bus after commit), and run the deliverer worker.
import type { Insertable } from 'kysely';
import type { WebhookEndpointsTable } from '../../src/db/schema.js';
import { recordEvent } from '../../src/events/record.js';
import type { TestDaemon } from './daemon.js';
import type { EventType } from '../../src/contract/webhooks.js';

export async function emit(
  d: TestDaemon,
  workspaceId: string,
  type: EventType,
  data: unknown,
  opts: { livemode?: boolean; endpointId?: string | null } = {},
): Promise<string> {
  const id = await recordEvent(d.app.db, d.app, {
    workspaceId,
    livemode: opts.livemode ?? true,
    type,
    data,
    endpointId: opts.endpointId ?? null,
  });
  d.app.bus.publish('events.recorded', { type });
  return id;
}

export function tick(d: TestDaemon): Promise<void> {
  const w = d.app.workers.find((x) => x.name === 'webhooks');
  if (!w) throw new Error('no webhooks worker');
  return w.tick();
}

export const sampleMessage = (n = 1) => ({
  id: `0190c8a0-0000-7000-8000-00000000000${n}`,
  publicId: `msg_${'x'.repeat(21)}${n}`,
  channel: 'email',
  status: 'delivered',
  recipient: 'someone@example.com',
  metadata: { n },
});

/** A webhook endpoint's row as the API would store it, enabled, for every event; `over` changes it. */
export function endpointRow(
  over: Partial<Insertable<WebhookEndpointsTable>> & Pick<Insertable<WebhookEndpointsTable>, 'id' | 'workspace_id'>,
): Insertable<WebhookEndpointsTable> {
  const at = '2026-11-28T00:00:00.000Z';
  return {
    public_id: `we_${over.id}`,
    livemode: 1,
    url: 'https://hooks.example/a',
    description: '',
    events: '["*"]',
    enabled: 1,
    secret: 'whsec_x',
    previous_secret: null,
    previous_secret_expires_at: null,
    failing_since: null,
    disabled_reason: null,
    created_at: at,
    updated_at: at,
    deleted_at: null,
    ...over,
  };
}
