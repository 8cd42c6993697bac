// The payload formats a webhook endpoint can take (its `format`): Postern's own (Standard
// Webhooks) and the hosted vendors' shapes, so a consumer written for SendGrid's, Postmark's or
// Resend's webhooks reads Postern's unchanged (docs/api/webhooks.md, "Payload formats").
import { signatureHeaders } from '../signing.js';
import type { PayloadFormat, StoredEvent } from './format.js';
import { postmark } from './postmark.js';
import { resend } from './resend.js';
import { sendgrid } from './sendgrid.js';
import type { EventType, WebhookFormat } from '../../contract/webhooks.js';

export type { PayloadFormat, SigningKeys, StoredEvent } from './format.js';
export { newSigningKey, verificationKeyOf } from './sendgrid.js';

/** The exact body of Postern's own format: stable across retries, built from the stored event. */
function payloadOf(ev: { id: string; type: string; created_at: string; data: string }): string {
  return `{"id":${JSON.stringify(ev.id)},"type":${JSON.stringify(ev.type)},"createdAt":${JSON.stringify(ev.created_at)},"data":${ev.data}}`;
}

const postern: PayloadFormat = {
  types: null,
  body: (ev: StoredEvent) => payloadOf({ id: ev.id, type: ev.type, created_at: ev.createdAt, data: ev.data }),
  sign: (ev, body, timestamp, keys) => signatureHeaders(keys.secrets, ev.id, timestamp, body),
};

export const FORMATS: Record<WebhookFormat, PayloadFormat> = { postern, sendgrid, postmark, resend };

/** Whether endpoints of `format` are sent events of `type`. */
export const carries = (format: WebhookFormat, type: EventType): boolean => FORMATS[format].types?.includes(type) ?? true;
