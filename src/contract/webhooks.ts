// The words of webhooks: the event types an endpoint may subscribe to, the payload formats and a
// delivery's statuses. Part of the contract (src/contract/); no zod, so the dashboard's bundle
// takes these lists without it.

export const EVENT_TYPES = [
  'message.received',
  'message.sent',
  'message.delivered',
  'message.failed',
  'message.suppressed',
  'message.blocked',
  'message.opted_out',
  'message.opened',
  'message.clicked',
  'report.dmarc',
  'report.tls',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The payload shape of a webhook endpoint's deliveries (webhooks/formats/). */
export const WEBHOOK_FORMATS = ['postern', 'sendgrid', 'postmark', 'resend'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
