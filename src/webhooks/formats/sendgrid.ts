// SendGrid's Event Webhook (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event):
// a JSON array of events (one per delivery here), each with `email`, `timestamp` (Unix seconds),
// `event`, `sg_event_id`, `sg_message_id` and the message's custom arguments (Postern metadata) at
// the top level, as SendGrid flattens them. Signed as SendGrid's Signed Event Webhook is: ECDSA
// P-256 over SHA-256 of the timestamp header followed by the body, the DER signature base64 in
// `X-Twilio-Email-Event-Webhook-Signature`; receivers verify with the endpoint's public key
// (`verificationKey`, base64 DER), as they would with SendGrid's.
import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { enhancedStatus, messageOf, unixSeconds, type PayloadFormat } from './format.js';
import type { EventType } from '../../contract/webhooks.js';

const EVENTS: Partial<Record<EventType, string>> = {
  'message.sent': 'processed',
  'message.delivered': 'delivered',
  'message.failed': 'bounce',
  'message.suppressed': 'dropped',
  'message.blocked': 'dropped',
  'message.opted_out': 'dropped',
  'message.opened': 'open',
  'message.clicked': 'click',
};

// SendGrid's own reasons for a drop, for the holds Postern has.
const DROP_REASONS: Partial<Record<EventType, string>> = {
  'message.suppressed': 'Bounced Address',
  'message.blocked': 'Spam Content',
  'message.opted_out': 'Unsubscribed Address',
};

// The fields SendGrid sets; metadata keys of the same name are left out rather than overwrite them.
const RESERVED = new Set([
  'email',
  'timestamp',
  'event',
  'sg_event_id',
  'sg_message_id',
  'smtp-id',
  'type',
  'reason',
  'status',
  'url',
  'response',
]);

export const sendgrid: PayloadFormat = {
  types: Object.keys(EVENTS) as EventType[],
  body(ev) {
    const m = messageOf(ev);
    const event: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(m.metadata ?? {})) if (!RESERVED.has(k)) event[k] = v;
    Object.assign(event, {
      email: m.recipient,
      timestamp: unixSeconds(ev.createdAt),
      event: EVENTS[ev.type],
      sg_event_id: ev.id,
      sg_message_id: m.publicId,
      ...(m.providerMessageId ? { 'smtp-id': m.providerMessageId } : {}),
    });
    if (ev.type === 'message.failed')
      Object.assign(event, { type: 'bounce', reason: m.error ?? '', status: enhancedStatus(m.error) ?? '5.0.0' });
    else if (DROP_REASONS[ev.type]) event.reason = m.error ?? DROP_REASONS[ev.type];
    else if (ev.type === 'message.clicked') event.url = m.link ?? '';
    return JSON.stringify([event]);
  },
  sign(_ev, body, timestamp, keys) {
    if (!keys.ecdsaKey) throw new Error('a sendgrid endpoint without its signing key');
    const signature = sign('sha256', Buffer.from(`${timestamp}${body}`), keys.ecdsaKey).toString('base64');
    return {
      'x-twilio-email-event-webhook-signature': signature,
      'x-twilio-email-event-webhook-timestamp': String(timestamp),
    };
  },
};

/** A new P-256 key pair for a sendgrid endpoint: the private key (PKCS#8 PEM), kept to sign. */
export function newSigningKey(): string {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** The public key receivers verify with, as SendGrid shows it: base64 of the DER SubjectPublicKeyInfo. */
export function verificationKeyOf(privateKeyPem: string): string {
  return createPublicKey(privateKeyPem).export({ type: 'spki', format: 'der' }).toString('base64');
}
