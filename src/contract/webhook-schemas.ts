// Input shapes for endpoint create/update, shared by both edges (HTTP and CLI).
import { z } from 'zod';
import { DELIVERY_STATUSES, EVENT_TYPES, WEBHOOK_FORMATS } from './webhooks.js';

const eventName = z.union([z.enum(EVENT_TYPES), z.literal('*')]);

export const createEndpointSchema = z.strictObject({
  url: z.string().max(2048).url(),
  /** Event types to receive; `["*"]` (the default) means every type. */
  events: z
    .array(eventName)
    .min(1)
    .max(EVENT_TYPES.length + 1)
    .optional(),
  description: z.string().max(200).optional(),
  enabled: z.boolean().optional(),
  /** The payload shape, fixed for the endpoint's life: Postern's own (default) or a hosted vendor's. */
  format: z.enum(WEBHOOK_FORMATS).optional(),
});

export const updateEndpointSchema = z
  .strictObject({
    url: z.string().max(2048).url(),
    events: z
      .array(eventName)
      .min(1)
      .max(EVENT_TYPES.length + 1),
    description: z.string().max(200),
    enabled: z.boolean(),
  })
  .partial();

export const listDeliveriesSchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  status: z.enum(DELIVERY_STATUSES).optional(),
  before: z.string().optional(),
});

export type CreateEndpointInput = z.infer<typeof createEndpointSchema>;
export type UpdateEndpointInput = z.infer<typeof updateEndpointSchema>;
export type ListDeliveriesInput = z.infer<typeof listDeliveriesSchema>;

// Output shapes (the Endpoint and Delivery JSON of endpoints.ts), for the API description.
export const endpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string(),
    events: z.array(z.string()),
    enabled: z.boolean(),
    livemode: z.boolean(),
    format: z.enum(WEBHOOK_FORMATS),
    /** sendgrid: the public key its signatures verify with (base64 DER, as SendGrid shows it); null otherwise. */
    verificationKey: z.string().nullable(),
    failingSince: z.string().nullable(),
    disabledReason: z.string().nullable(),
    previousSecretExpiresAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'WebhookEndpoint' });

/** An endpoint with its signing secret: only the create and rotate-secret answers carry it. */
export const endpointWithSecretSchema = endpointSchema.extend({ secret: z.string() });

export const deliverySchema = z
  .object({
    id: z.string(),
    eventId: z.string(),
    eventType: z.enum(EVENT_TYPES),
    status: z.enum(DELIVERY_STATUSES),
    attemptCount: z.number().int(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    nextAttemptAt: z.string().nullable(),
    createdAt: z.string(),
    deliveredAt: z.string().nullable(),
    attempts: z.array(
      z.object({ at: z.string(), statusCode: z.number().int().nullable(), error: z.string().nullable(), durationMs: z.number() }),
    ),
  })
  .meta({ id: 'WebhookDelivery' });
