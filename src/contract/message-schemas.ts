// The Message as the API shows it: its type and its zod schema (what /v1/openapi.json says a
// Message is). Part of the contract (src/contract/): the daemon maps rows to it (messages/message.ts),
// the dashboard reads it.
import { z } from 'zod';
import { CHANNELS, type Channel } from './channels.js';
import { MESSAGE_STATUSES, STATUS_FILTERS, type MessageStatus } from './messages.js';

export type MetadataValue = string | number | boolean;

export interface TimelineEntry {
  t: string;
  e: string;
}

export interface Message {
  id: string;
  workspaceId: string;
  publicId: string;
  templateSlug: string | null;
  channel: Channel;
  status: MessageStatus;
  livemode: boolean;
  recipient: string;
  vars: Record<string, unknown>;
  metadata: Record<string, MetadataValue>;
  fromOverride: string | null;
  fromNameOverride: string | null;
  interpolate: boolean;
  pinnedVersion: number | null;
  provider: string | null;
  providerConnectionId: string | null;
  providerMessageId: string | null;
  latencyMs: number | null;
  openedAt: string | null;
  clickedAt: string | null;
  error: string | null;
  timeline: TimelineEntry[];
  createdAt: string;
  scheduledAt: string | null;
  idempotencyKey: string | null;
}

/** The Message JSON as a zod schema: what the API description says a Message is (http/openapi/). */
export const messageSchema = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    publicId: z.string(),
    templateSlug: z.string().nullable(),
    channel: z.enum(CHANNELS),
    status: z.enum(MESSAGE_STATUSES),
    livemode: z.boolean(),
    recipient: z.string(),
    vars: z.record(z.string(), z.unknown()),
    metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    fromOverride: z.string().nullable(),
    fromNameOverride: z.string().nullable(),
    interpolate: z.boolean(),
    pinnedVersion: z.number().int().nullable(),
    provider: z.string().nullable(),
    providerConnectionId: z.string().nullable(),
    providerMessageId: z.string().nullable(),
    latencyMs: z.number().nullable(),
    openedAt: z.string().nullable(),
    clickedAt: z.string().nullable(),
    error: z.string().nullable(),
    timeline: z.array(z.object({ t: z.string(), e: z.string() })),
    createdAt: z.string(),
    scheduledAt: z.string().nullable(),
    idempotencyKey: z.string().nullable(),
  })
  .meta({ id: 'Message' });

/** One page of a message list: newest first, `nextCursor` null on the last page. */
export const messagePageSchema = z.object({ data: z.array(messageSchema), nextCursor: z.string().nullable() });

// The query GET /v1/messages reads (routes/messages.ts parseFilters checks the same rules).
export const messagesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().optional().describe('the `nextCursor` of the previous page'),
  status: z
    .enum(STATUS_FILTERS)
    .optional()
    .describe('a status, or `deferred`: `dispatched` after a temporary failure, waiting for (or in) its next attempt'),
  template: z.string().optional().describe('template slug'),
  channel: z.enum(CHANNELS).optional(),
  q: z.string().max(512).optional().describe('a part of the public id, recipient, template slug or a metadata key or value'),
  metadata: z
    .record(z.string(), z.string())
    .optional()
    .describe('metadata filters, given as `metadata[key]=value` (deepObject); every one must match'),
  tail: z.enum(['0', '1']).optional().describe('1: answer with a Server-Sent Events stream instead of a page'),
});
