// Every table's row type, in one file. Conventions that keep one set of queries portable between
// SQLite and PostgreSQL: timestamps are ISO 8601 UTC text (they sort as text), booleans are
// integers 0/1, JSON is text, internal ids are UUID text, counts come back as number | string.
import type { Generated } from 'kysely';

// --- foundation: workspaces and keys ---------------------------------------------------------

export interface WorkspacesTable {
  id: string;
  slug: string;
  name: string;
  plan: string;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  workspace_id: string;
  name: string;
  env: string; // 'live' | 'test'
  /** Hex SHA-256 of the whole secret; the secret itself is never stored. */
  key_hash: string;
  /** The first characters of the secret, for recognising a key in a listing. */
  prefix: string;
  /** Comma-separated scopes, or null for an unscoped key (full access). */
  scopes: string | null;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

// --- events: the durable record of what happened, consumed by webhook delivery -----------------

export interface EventsTable {
  seq: Generated<number>;
  /** evt_ public id; stays the same across webhook retries (webhook-id). */
  id: string;
  workspace_id: string;
  livemode: number;
  type: string;
  /** JSON of the event's `data` (a Message or a Received message as the API shows it). */
  data: string;
  /** Routing hint for message.received: the bound endpoint of the address, when there is one. */
  endpoint_id: string | null;
  created_at: string;
}

// --- domains: inbound and sending domains, with their DKIM keys --------------------------------

export interface DomainsTable {
  id: string;
  workspace_id: string;
  domain: string;
  kind: string; // 'shared' | 'custom'
  status: string; // 'pending' | 'verified' | 'failed'
  dkim_selector: string | null;
  dkim_private_key: string | null;
  dkim_public_key: string | null;
  verified_at: string | null;
  created_at: string;
  deleted_at: string | null;
}

// --- inbound: addresses, raw sources, received messages -----------------------------------------

export interface InboundAddressesTable {
  id: string;
  /** inb_ public id. */
  public_id: string;
  workspace_id: string;
  domain_id: string;
  /** Lowercased local part, or `*` for the catch-all. */
  local_part: string;
  address: string;
  description: string;
  forward_to: string | null;
  webhook_endpoint_id: string | null;
  active: number;
  livemode: number;
  created_at: string;
  deleted_at: string | null;
}

export interface InboundRawTable {
  id: string;
  /** The source as stored (Authentication-Results prepended); null once purged after retention. */
  source: Buffer | null;
  received_at: string;
  purged_at: string | null;
}

export interface ReceivedMessagesTable {
  id: string;
  /** rcv_ public id. */
  public_id: string;
  workspace_id: string;
  livemode: number;
  status: string; // 'received' | 'dropped' | 'quota_exceeded'
  /** The matched address row (exact or catch-all); null when dropped. */
  address_id: string | null;
  /** Canonical address for an exact match; null for catch-all or unmatched mail. */
  address: string | null;
  plus_tag: string;
  raw_id: string;
  /** JSON {from, to}. */
  envelope: string;
  from_email: string;
  /** JSON of the parsed fields (from, to, cc, messageId, inReplyTo, text, html, strippedReply, truncated, headers, attachments, verdicts). */
  parsed: string;
  subject: string;
  size_bytes: number;
  received_at: string;
}

export interface InboundUsageTable {
  workspace_id: string;
  /** YYYY-MM (UTC). */
  month: string;
  received: number;
}

export interface Database {
  workspaces: WorkspacesTable;
  api_keys: ApiKeysTable;
  events: EventsTable;
  domains: DomainsTable;
  inbound_addresses: InboundAddressesTable;
  inbound_raw: InboundRawTable;
  received_messages: ReceivedMessagesTable;
  inbound_usage: InboundUsageTable;
}
