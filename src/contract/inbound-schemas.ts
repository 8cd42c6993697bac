// Receiving as the API shows it: addresses (and the body that creates one), received messages
// (summary and detail) and where one was forwarded, as zod schemas.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';
import { messageSchema } from './message-schemas.js';

/** The InboundAddress JSON as a zod schema, for the API description. */
export const inboundAddressSchema = z
  .object({
    id: z.string(),
    address: z.string(),
    description: z.string(),
    forwardTo: z.string().nullable(),
    webhookEndpointId: z.string().nullable(),
    domainId: z.string(),
    active: z.boolean(),
    livemode: z.boolean(),
    createdAt: z.string(),
  })
  .meta({ id: 'InboundAddress' });

/** The body of POST /v1/inbound/addresses. */
export const createAddressBody = z.strictObject({
  localPart: z.string().min(1).max(64).optional(),
  description: z.string().max(200).optional(),
  forwardTo: z.string().max(320).nullable().optional(),
  webhookEndpointId: z.string().min(1).max(100).nullable().optional(),
  domainId: z.string().min(1).max(100).optional(),
  livemode: z.boolean().optional(),
});

// The JSON shapes of a received message (summary and detail).
const receivedStatus = z.enum(['received', 'dropped', 'quota_exceeded']);

const verdict = z.looseObject({ result: z.string() });

const mailbox = z.object({ email: z.string(), name: z.string() });

// Rows stored before the scanners (inbound/scan.ts) existed have no spam or virus verdict.
const spam = z.looseObject({ result: z.enum(['ham', 'spam', 'temperror', 'none']) });

const virus = z.looseObject({ result: z.enum(['clean', 'infected', 'temperror', 'none']) });

export const receivedSummarySchema = z
  .object({
    id: z.string(),
    status: receivedStatus,
    from: z.string(),
    subject: z.string(),
    plusTag: z.string(),
    sizeBytes: z.number().int(),
    receivedAt: z.string(),
  })
  .meta({ id: 'ReceivedMessageSummary' });

export const receivedDetailSchema = z
  .object({
    id: z.string(),
    status: receivedStatus,
    channel: z.literal('email'),
    // The address it was received at; null when a catch-all or no address matched.
    address: z.string().nullable(),
    plusTag: z.string(),
    from: mailbox,
    to: z.array(mailbox),
    cc: z.array(mailbox),
    envelope: z.object({ from: z.string(), to: z.array(z.string()) }),
    subject: z.string(),
    messageId: z.string().nullable().optional(),
    inReplyTo: z.string().nullable().optional(),
    text: z.string().nullable().optional(),
    html: z.string().nullable().optional(),
    strippedReply: z.string().nullable().optional(),
    truncated: z.boolean().optional(),
    headers: z.unknown(),
    attachments: z.array(
      z.object({ index: z.number().int(), filename: z.string(), contentType: z.string(), size: z.number().int(), url: z.string() }),
    ),
    verdicts: z.object({ spf: verdict, dkim: verdict, dmarc: verdict, arc: verdict, spam: spam.optional(), virus: virus.optional() }),
    sizeBytes: z.number().int(),
    rawUrl: z.string(),
    receivedAt: z.string(),
  })
  .meta({ id: 'ReceivedMessage' });

/** The ForwardView JSON as a zod schema, for the API description. */
export const forwardViewSchema = z.object({
  receivedId: z.string(),
  forwardTo: z.string(),
  status: z.enum(['queued', 'skipped', 'refused']),
  reason: z.string().nullable(),
  message: messageSchema.nullable(),
});

/** The query of GET /v1/inbound/messages. */
export const inboundMessagesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  before: z.string().optional().describe('the `receivedAt` of the last message of the previous page'),
  address: z.string().optional().describe('only mail received at this address'),
});

/** The query of GET /v1/inbound/addresses. */
export const addressesQuery = z.object({ domainId: z.string().optional() });
