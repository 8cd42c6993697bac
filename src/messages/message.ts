// The row → Message mappings (the one place a message row's flags and JSON columns are read); the
// Message itself is the contract's (contract/message-schemas.ts). Internal queue columns (due_at, lease, attempts, stored
// content, search text) never leave through these.
import type { Selectable } from 'kysely';
import type { Attachment, OutboundMessage } from '../channel.js';
import type { Message, MetadataValue } from '../contract/message-schemas.js';
import { isSet, type MessageContentsTable, type MessagesTable } from '../db/index.js';

/** The customer-visible timeline entry of a scanner block; the real reason goes to the operator log. */
export const BLOCKED_NOTICE = 'blocked: automated content safety checks blocked this message';

export type MessageRow = Selectable<MessagesTable>;

/** What a message says: its message_contents row without the key. */
export type MessageContent = Omit<Selectable<MessageContentsTable>, 'message_id'>;

/** A message's row with what it says: what accept writes, and what rendering and delivery read. */
export type ContentRow = MessageRow & MessageContent;

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
export function rowToOutbound(row: MessageRow & Pick<MessageContent, 'attachments'>): OutboundMessage {
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
