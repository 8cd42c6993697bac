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

// --- connections: provider connections per workspace, environment and channel ----------------

export interface ProviderConnectionsTable {
  id: string;
  workspace_id: string;
  livemode: number;
  channel: string;
  provider: string;
  name: string;
  /** JSON of the settings that are not secret (URLs, sender, topic, …). */
  settings: string;
  /** AES-256-GCM ciphertext of the JSON of the secret settings (`secrets.key`). */
  secrets: string;
  created_at: string;
  deleted_at: string | null;
}

export interface Database {
  workspaces: WorkspacesTable;
  api_keys: ApiKeysTable;
  events: EventsTable;
  domains: DomainsTable;
  provider_connections: ProviderConnectionsTable;
}
