// The send routes' bodies (POST /v1/send, /v1/send-raw, /v1/send/batch; field names per DESIGN.md)
// and what they answer (202), as zod schemas. outbound/send-input.ts and batch-input.ts read the
// bodies with them (and check what depends on the channel).
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';
import { isEmailAddress } from './addresses.js';
import { CHANNELS } from './channels.js';

const CONTROL = /[\u0000-\u001f\u007f]/;
const BASE64 = /^[A-Za-z0-9+/\r\n]*={0,2}\s*$/;

const address = z.string().refine(isEmailAddress, 'must be a bare email address such as someone@example.com');
const metadataKey = /^[^\u0000-\u001f\u007f]{1,40}$/;

const attachment = z.strictObject({
  filename: z
    .string()
    .min(1)
    .max(255)
    .refine((s) => !CONTROL.test(s) && !/[\\/]/.test(s), 'must not contain control characters or slashes'),
  contentType: z.string().regex(/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i, 'must be a MIME type such as application/pdf'),
  content: z
    .string()
    .min(1)
    .refine((s) => BASE64.test(s), 'must be base64'),
});

const recipients = z.union([address, z.array(address).max(50)]).transform((v) => (Array.isArray(v) ? v : [v]));

export const sendBody = z.object({
  template: z.string().min(1).max(100).optional(),
  content: z.record(z.string(), z.unknown()).optional(),
  to: z.string().min(1, 'required').max(8192),
  channel: z.enum(CHANNELS).optional(),
  vars: z.record(z.string(), z.unknown()).default({}),
  metadata: z
    .record(
      z.string(),
      z.union([z.string().max(500), z.number().refine(Number.isFinite, 'must be finite'), z.boolean()], {
        error: 'metadata values must be string, number or boolean',
      }),
    )
    .default({})
    .refine((m) => Object.keys(m).length <= 50, 'at most 50 metadata keys')
    .refine((m) => Object.keys(m).every((k) => metadataKey.test(k)), 'metadata keys are 1-40 characters without control characters'),
  scheduledAt: z.iso
    .datetime({ offset: true, error: 'must be an ISO 8601 date-time with a time zone, such as 2030-01-01T09:00:00Z' })
    .optional(),
  from: address.optional(),
  fromName: z
    .string()
    .max(128, 'at most 128 characters')
    .refine((s) => !CONTROL.test(s) && !/[<>]/.test(s), 'must not contain control characters or angle brackets')
    .optional(),
  version: z.number().int().min(1, 'must be at least 1').optional(),
  cc: recipients.optional(),
  bcc: recipients.optional(),
  replyTo: address.optional(),
  attachments: z.array(attachment).max(20).optional(),
  interpolate: z.boolean().optional(),
});
export type SendBody = z.infer<typeof sendBody>;

/** How a batch is accepted: all or nothing, or each message on its own. */
export const BATCH_MODES = ['atomic', 'partial'] as const;
export type BatchMode = (typeof BATCH_MODES)[number];
export const MAX_BATCH = 500;

/** The batch body (`messages`, each a send body with its own optional `idempotencyKey`, and `mode`). */
export const batchBody = z.strictObject({
  mode: z.enum(BATCH_MODES).default('atomic'),
  messages: z
    .array(sendBody.extend({ idempotencyKey: z.string().min(1).max(255).optional() }))
    .min(1)
    .max(MAX_BATCH),
});

/** What POST /v1/send and /v1/send-raw answer (202), as a zod schema for the API description. */
export const acceptResponseSchema = z.object({ id: z.string(), status: z.enum(['queued', 'scheduled']), livemode: z.boolean() });

/** What POST /v1/send/batch answers (202): one result per message, in order. */
export const batchResponseSchema = z.object({
  data: z.array(
    z.union([
      acceptResponseSchema,
      z.object({
        error: z.object({
          code: z.string(),
          message: z.string(),
          issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
        }),
      }),
    ]),
  ),
});
