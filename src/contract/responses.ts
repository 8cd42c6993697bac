// What every operation answers on success: one map from an operation key (`GET /v1/messages/:id`,
// the method and the path as Express mounts it) to the zod schema of its JSON answer. The API
// description (http/openapi/operations.ts) takes each operation's success schema from here, and
// the dashboard (ui/src/api.ts) infers the type of what a call answers from the same entry, so the
// two cannot tell different stories. Part of the contract (src/contract/): zod and other contract
// files only. The dashboard imports this file for types only, so zod stays out of its bundle.
import { z } from 'zod';
import { nodeListSchema } from './cluster-schemas.js';
import { connectionViewSchema } from './connection-schemas.js';
import { destinationSchema } from './destination-schemas.js';
import { domainChecksSchema, inboundDomainSchema } from './domain-schemas.js';
import { forwardViewSchema, inboundAddressSchema, receivedDetailSchema, receivedSummarySchema } from './inbound-schemas.js';
import { messageChecksSchema } from './message-checks.js';
import { messagePageSchema, messageSchema } from './message-schemas.js';
import { dmarcDaySchema, inboundTlsDaySchema, tlsDaySchema } from './report-schemas.js';
import { acceptResponseSchema, batchResponseSchema } from './sending-schemas.js';
import { smtpCredentialSchema, smtpCredentialWithSecretSchema } from './smtp-credential-schemas.js';
import { importResultSchema, suppressionSchema } from './suppression-schemas.js';
import { renderResultSchema, templateDetailSchema, templateSummarySchema, templateVersionSchema } from './template-schemas.js';
import { deliverySchema, endpointSchema, endpointWithSecretSchema } from './webhook-schemas.js';

const readiness = z.object({ ready: z.boolean(), reasons: z.array(z.string()), checks: z.record(z.string(), z.unknown()) });
const list = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item) });
const deleted = z.object({ deleted: z.literal(true) });

/** The JSON success answer of each operation that answers JSON (downloads and streams are described in operations.ts). */
export const RESPONSES = {
  'GET /healthz': z.object({ ok: z.literal(true) }),
  'GET /readyz': readiness,
  'GET /v1/openapi.json': z.looseObject({ openapi: z.string() }),
  'GET /v1/context': z.object({
    workspace: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    mode: z.enum(['live', 'test']),
  }),
  'POST /v1/send': acceptResponseSchema,
  'POST /v1/send-raw': acceptResponseSchema,
  'POST /v1/send/batch': batchResponseSchema,
  'GET /v1/messages': messagePageSchema,
  'GET /v1/messages/:id': messageSchema,
  'DELETE /v1/messages/:id': z.object({ id: z.string(), status: z.literal('canceled') }),
  'POST /v1/messages/:id/retry': messageSchema,
  'GET /v1/messages/:id/checks': messageChecksSchema,
  'POST /v1/messages/:id/checks': messageChecksSchema,
  'GET /v1/templates': list(templateSummarySchema),
  'POST /v1/templates': templateDetailSchema,
  'GET /v1/templates/:slug': templateDetailSchema,
  'PATCH /v1/templates/:slug': templateDetailSchema,
  'POST /v1/templates/:slug/render': renderResultSchema,
  'PUT /v1/templates/:slug/draft': templateVersionSchema,
  'DELETE /v1/templates/:slug/draft': deleted,
  'POST /v1/templates/:slug/publish': templateVersionSchema,
  'GET /v1/templates/:slug/versions': list(templateVersionSchema),
  'GET /v1/suppressions': z.object({
    data: z.array(suppressionSchema),
    nextCursor: z.string().nullable(),
    nextBefore: z.string().nullable(),
  }),
  'POST /v1/suppressions': suppressionSchema,
  'DELETE /v1/suppressions/:address': z.object({ address: z.string(), deleted: z.literal(true) }),
  'POST /v1/suppressions/import': importResultSchema,
  'GET /v1/connections': list(connectionViewSchema),
  'GET /v1/nodes': nodeListSchema,
  'POST /v1/inbound/domains': inboundDomainSchema,
  'GET /v1/inbound/domains': z.object({ domains: z.array(inboundDomainSchema) }),
  'GET /v1/inbound/domains/:id': inboundDomainSchema,
  'GET /v1/inbound/domains/:id/checks': domainChecksSchema,
  'POST /v1/inbound/domains/:id/dkim/rotate': inboundDomainSchema,
  'DELETE /v1/inbound/domains/:id/dkim/rotation': inboundDomainSchema,
  'DELETE /v1/inbound/domains/:id': deleted,
  'POST /v1/inbound/addresses': inboundAddressSchema,
  'GET /v1/inbound/addresses': z.object({ addresses: z.array(inboundAddressSchema) }),
  'POST /v1/inbound/addresses/:id/deactivate': inboundAddressSchema,
  'GET /v1/inbound/messages': z.object({ messages: z.array(receivedSummarySchema) }),
  'GET /v1/inbound/messages/:id': receivedDetailSchema,
  'GET /v1/inbound/messages/:id/forward': forwardViewSchema,
  'GET /v1/reports/dmarc': z.object({ from: z.string(), to: z.string(), data: z.array(dmarcDaySchema) }),
  'GET /v1/reports/tls': z.object({
    from: z.string(),
    to: z.string(),
    data: z.array(tlsDaySchema),
    inbound: z
      .array(inboundTlsDaySchema)
      .describe("the STARTTLS sessions senders opened to this box's MX listener, per MX host name and UTC day"),
  }),
  'GET /v1/destinations': z.object({ data: z.array(destinationSchema), next: z.string().nullable() }),
  'GET /v1/destinations/:domain': destinationSchema,
  'POST /v1/destinations/:domain/suspend': destinationSchema,
  'POST /v1/destinations/:domain/resume': destinationSchema,
  'POST /v1/destinations/:domain/purge': z.object({ canceled: z.number().int(), failed: z.number().int() }),
  'POST /v1/webhooks': endpointWithSecretSchema,
  'GET /v1/webhooks': list(endpointSchema),
  'GET /v1/webhooks/:id': endpointSchema,
  'PATCH /v1/webhooks/:id': endpointSchema,
  'DELETE /v1/webhooks/:id': z.object({ id: z.string(), deleted: z.literal(true) }),
  'POST /v1/webhooks/:id/rotate-secret': endpointWithSecretSchema,
  'GET /v1/webhooks/:id/deliveries': list(deliverySchema),
  'POST /v1/webhooks/:id/deliveries/:deliveryId/retry': deliverySchema,
  'POST /v1/smtp-credentials': smtpCredentialWithSecretSchema,
  'GET /v1/smtp-credentials': list(smtpCredentialSchema),
  'DELETE /v1/smtp-credentials/:id': smtpCredentialSchema,
} as const;

export type OperationKey = keyof typeof RESPONSES;

/** What the operation `K` answers on success, as the client reads it (JSON, after parsing). */
export type ResponseOf<K extends OperationKey> = z.output<(typeof RESPONSES)[K]>;
