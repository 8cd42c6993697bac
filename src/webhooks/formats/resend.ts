// Resend's webhooks (https://resend.com/docs/dashboard/webhooks/event-types): `{type, created_at,
// data}` with `email.*` types, signed by Svix as Resend's are: the Standard Webhooks scheme under
// `svix-id`, `svix-timestamp` and `svix-signature`, keyed with the endpoint's `whsec_` secret, so
// the `svix` package (or Resend's `webhooks.verify`) checks them.
import { metadataStrings } from '../../messages/index.js';
import { signatures } from '../signing.js';
import { messageOf, type EventMessage, type PayloadFormat } from './format.js';
import type { EventType } from '../../contract/webhooks.js';

const TYPES: Partial<Record<EventType, string>> = {
  'message.sent': 'email.sent',
  'message.delivered': 'email.delivered',
  'message.failed': 'email.bounced',
  'message.opened': 'email.opened',
  'message.clicked': 'email.clicked',
};

function dataOf(type: EventType, m: EventMessage, at: string): Record<string, unknown> {
  const data: Record<string, unknown> = {
    email_id: m.publicId,
    created_at: m.createdAt,
    to: [m.recipient],
    ...(m.fromOverride ? { from: m.fromOverride } : {}),
    tags: metadataStrings(m.metadata ?? {}),
  };
  if (type === 'message.failed') data.bounce = { message: m.error ?? '', type: 'Permanent', subType: 'General' };
  if (type === 'message.clicked') data.click = { link: m.link ?? '', timestamp: m.clickedAt ?? at };
  return data;
}

export const resend: PayloadFormat = {
  types: Object.keys(TYPES) as EventType[],
  body(ev) {
    const m = messageOf(ev);
    return JSON.stringify({ type: TYPES[ev.type], created_at: ev.createdAt, data: dataOf(ev.type, m, ev.createdAt) });
  },
  sign: (ev, body, timestamp, keys) => ({
    'svix-id': ev.id,
    'svix-timestamp': String(timestamp),
    'svix-signature': signatures(keys.secrets, ev.id, timestamp, body),
  }),
};
