// The Message as the API shows it, and the row → Message mappings (the one place a message row's
// flags and JSON columns are read). Internal queue columns (due_at, lease, attempts, stored
// content, search text) never leave through these.
import type { Selectable } from 'kysely';
import { z } from 'zod';
import { CHANNELS, type Attachment, type Channel, type OutboundMessage } from '../channel.js';
import { isSet, MESSAGE_STATUSES, type MessagesTable, type MessageStatus } from '../db/schema.js';

export { MESSAGE_STATUSES, type MessageStatus };

export type MetadataValue = string | number | boolean;

export interface TimelineEntry {
  t: string;
  e: string;
}

/** The customer-visible timeline entry of a scanner block; the real reason goes to the operator log. */
export const BLOCKED_NOTICE = 'blocked: automated content safety checks blocked this message';

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

export type MessageRow = Selectable<MessagesTable>;

export function rowToMessage(row: MessageRow): Message {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    publicId: row.public_id,
    templateSlug: row.template_slug,
    channel: row.channel,
    status: row.status,
    livemode: isSet(row.livemode),
    recipient: row.recipient,
    vars: JSON.parse(row.vars),
    metadata: JSON.parse(row.metadata),
    fromOverride: row.from_override,
    fromNameOverride: row.from_name_override,
    interpolate: isSet(row.interpolate),
    pinnedVersion: row.pinned_version === null ? null : Number(row.pinned_version),
    provider: row.provider,
    providerConnectionId: row.provider_connection_id,
    providerMessageId: row.provider_message_id,
    latencyMs: row.latency_ms === null ? null : Number(row.latency_ms),
    openedAt: row.opened_at,
    clickedAt: row.clicked_at,
    error: row.error,
    timeline: JSON.parse(row.timeline),
    createdAt: row.created_at,
    scheduledAt: row.scheduled_at,
    idempotencyKey: row.idempotency_key,
  };
}

/** The message as a transport sees it. */
export function rowToOutbound(row: MessageRow): OutboundMessage {
  return {
    id: row.id,
    publicId: row.public_id,
    workspaceId: row.workspace_id,
    livemode: isSet(row.livemode),
    channel: row.channel,
    recipient: row.recipient,
    templateSlug: row.template_slug,
    metadata: JSON.parse(row.metadata),
    fromOverride: row.from_override,
    fromNameOverride: row.from_name_override,
    cc: JSON.parse(row.cc),
    bcc: JSON.parse(row.bcc),
    replyTo: row.reply_to,
    attachments: JSON.parse(row.attachments) as Attachment[],
    attempt: Number(row.attempts),
    createdAt: row.created_at,
  };
}

/** Metadata with every value in its string form (what vendors' payloads carry). */
export function metadataStrings(metadata: Record<string, MetadataValue>): Record<string, string> {
  return Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, String(v)]));
}

/** Metadata with every value in its string form: what `metadata[key]` compares against. */
export function metadataText(metadata: Record<string, MetadataValue>): string {
  return JSON.stringify(metadataStrings(metadata));
}

/** The text `q` searches: public id, recipient, template slug, metadata keys and values. */
export function searchText(publicId: string, recipient: string, slug: string | null, metadata: Record<string, MetadataValue>): string {
  const parts = [publicId, recipient, slug ?? ''];
  for (const [k, v] of Object.entries(metadata)) parts.push(k, String(v));
  // A separator no search can contain (q rejects control characters), so a match never spans fields.
  return parts.join('\u0001');
}
