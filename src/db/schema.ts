// Every table's row type, in one file, with the vocabulary its columns hold. Conventions that keep
// one set of queries portable between SQLite and PostgreSQL: timestamps are ISO 8601 UTC text (they
// sort as text), booleans are integers 0/1 (`Flag`, converted by flag()/isSet() only), JSON is text,
// internal ids are UUID text, counts come back as number | string. A column that holds one of a
// closed set of values has that union as its type, so a query cannot store a misspelt status.
import type { Generated } from 'kysely';
import type { DkimKeyState, DomainKind, DomainStatus, MtaStsMode } from '../contract/domains.js';
import type { Channel } from '../contract/channels.js';
import type { MessageStatus } from '../contract/messages.js';
import type { DeliveryStatus, EventType, WebhookFormat } from '../contract/webhooks.js';
import type { Env, Plan, SuppressionReason, TemplateStatus } from '../contract/vocabulary.js';

// The stored vocabulary is the API's: its unions come from src/contract/.

// --- the stored vocabulary -----------------------------------------------------------------

/** A boolean column: SQLite has no boolean type, so both dialects store 0 or 1. */
export type Flag = 0 | 1;

/** The one conversion of a boolean into a stored flag. */
export const flag = (b: boolean): Flag => (b ? 1 : 0);

/** The one reading of a stored flag (drivers may hand back 0/1 as number or string). */
export const isSet = (v: number | string | null | undefined): boolean => Number(v) === 1;

export type RecipientKind = 'to' | 'cc' | 'bcc';
export type RecipientStatus = 'pending' | 'accepted' | 'deferred' | 'failed' | 'suppressed';

export type ReceivedStatus = 'received' | 'dropped' | 'quota_exceeded';

export type ForwardStatus = 'queued' | 'skipped' | 'refused';

// --- foundation: workspaces and keys ---------------------------------------------------------

export interface WorkspacesTable {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  workspace_id: string;
  name: string;
  env: Env;
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

/** SMTP credentials (submission/smtp-credentials.ts): a user name and a secret for AUTH, nothing else. */
export interface SmtpCredentialsTable {
  /** Public id, `smc_…`. */
  id: string;
  workspace_id: string;
  env: Env;
  /** Generated, `smtp_` + 20 lowercase letters and digits; unique. */
  username: string;
  /** Hex SHA-256 of the whole secret (lib/bearer-secret.ts); the secret itself is never stored. */
  secret_hash: string;
  description: string;
  created_at: string;
  /** When an AUTH last succeeded with it, to the minute; null if never. */
  last_used_at: string | null;
  revoked_at: string | null;
}

// --- events: the durable record of what happened, consumed by webhook delivery -----------------

export interface EventsTable {
  seq: Generated<number>;
  /** evt_ public id; stays the same across webhook retries (webhook-id). */
  id: string;
  workspace_id: string;
  livemode: Flag;
  type: EventType;
  /** JSON of the event's `data` (a Message or a Received message as the API shows it). */
  data: string;
  /** Routing hint for message.received: the bound endpoint of the address, when there is one. */
  endpoint_id: string | null;
  created_at: string;
  /** 0 until the webhook worker has turned the event into delivery rows (migration 0006). */
  fanned_out: Generated<Flag>;
  /** 0 until the forwarder has looked at a message.received event (migration 0006). */
  forward_checked: Generated<Flag>;
}

// --- domains: inbound and sending domains, with their DKIM keys --------------------------------

export interface DomainsTable {
  id: string;
  workspace_id: string;
  domain: string;
  kind: DomainKind;
  status: DomainStatus;
  dkim_selector: string | null;
  dkim_private_key: string | null;
  dkim_public_key: string | null;
  /** When both capabilities below were confirmed (status `verified`). */
  verified_at: string | null;
  /** Sending: when the DKIM record was found published (the domain signs and may be `from`). */
  dkim_verified_at: string | null;
  /** Receiving: when the MX was found pointing at Postern (mail for it is accepted). */
  mx_verified_at: string | null;
  /** Return path: when `bounces.<domain>` was found with its MX at Postern and SPF authorising the box. */
  return_path_verified_at: string | null;
  /** Comma-separated checks (`inboundMx`, `dkim`, `returnPath`) whose confirmed record is no longer published; null: none. */
  records_drift: string | null;
  /** When records_drift last changed. */
  records_drift_since: string | null;
  /** The mode of the MTA-STS policy served at mta-sts.<domain> (custom domains; `testing` by default). */
  mta_sts_mode: Generated<MtaStsMode>;
  /** The Ed25519 key that signs beside the RSA one (RFC 8463), once a rotation brought one in; private key sealed. */
  dkim_ed25519_selector: string | null;
  dkim_ed25519_private_key: string | null;
  dkim_ed25519_public_key: string | null;
  /** When signing last switched to a rotation's keys; null: still the claim's key. The schedule counts from it. */
  dkim_rotated_at: string | null;
  created_at: string;
  deleted_at: string | null;
}

export type DkimAlgorithm = 'rsa' | 'ed25519';
/** pending → verified → active → retiring → retired (domains/dkim-rotation.ts). */

/** A key a DKIM rotation brought in or retired (domains/dkim-rotation.ts). */
export interface DkimKeysTable {
  id: string;
  domain_id: string;
  selector: string;
  algorithm: DkimAlgorithm;
  /** The p= value of its record: base64 SPKI DER (RSA) or the raw 32-byte key (Ed25519). */
  public_key: string;
  /** Sealed (lib/secret-box.ts) while the key may sign; null once it is retiring. */
  private_key: string | null;
  state: DkimKeyState;
  created_at: string;
  verified_at: string | null;
  activated_at: string | null;
  /** Retiring: when the overlap ends and the key is retired. */
  retire_at: string | null;
  retired_at: string | null;
  /** Retired: when its record was found removed from DNS (it is then no longer listed). */
  removed_at: string | null;
}

// --- templates: stored templates and their numbered versions -----------------------------------

export interface TemplatesTable {
  id: string;
  workspace_id: string;
  /** Lowercase, unique per workspace; both environments of the workspace share it. */
  slug: string;
  channel: Channel;
  description: string;
  status: TemplateStatus;
  /** versionNumber of the current published version; null until the first publish. */
  current_version: number | null;
  created_at: string;
  updated_at: string;
}

export interface TemplateVersionsTable {
  id: string;
  template_id: string;
  version_number: number;
  /** JSON of the channel's content fields. */
  content: string;
  /** JSON array of {name, type, description, required}. */
  variables: string;
  created_at: string;
  updated_at: string;
  /** null: the draft (mutable); set: published (immutable). */
  published_at: string | null;
}

// --- outbound: messages (row = queue entry), idempotency keys, monthly usage --------------------

export interface MessagesTable {
  seq: Generated<number>;
  id: string;
  public_id: string;
  workspace_id: string;
  livemode: Flag;
  channel: Channel;
  status: MessageStatus;
  recipient: string;
  template_slug: string | null;
  /** The template version resolved at accept time (template sends). */
  template_version: number | null;
  pinned_version: number | null;
  interpolate: Flag;
  vars: string;
  metadata: string;
  /** JSON of metadata with every value as a string, for `metadata[key]` matching. */
  metadata_text: string;
  /** Public id, recipient, slug, metadata keys and values, for `q`. */
  search_text: string;
  from_override: string | null;
  from_name_override: string | null;
  cc: string;
  bcc: string;
  reply_to: string | null;
  provider: string | null;
  provider_connection_id: string | null;
  provider_message_id: string | null;
  latency_ms: number | null;
  opened_at: string | null;
  clicked_at: string | null;
  error: string | null;
  /** JSON array of {t, e}. */
  timeline: string;
  created_at: string;
  scheduled_at: string | null;
  idempotency_key: string | null;
  attempts: number;
  /** When the dispatcher should next look at it; null once nothing is left to do. */
  due_at: string | null;
  locked_until: string | null;
  locked_by: string | null;
  updated_at: string;
}

/**
 * What a message says, apart from its queue row: written once at accept and read to render it.
 * The row changes on every step of the queue; this one never does (0042-message-contents).
 */
export interface MessageContentsTable {
  message_id: string;
  /** JSON of the channel content to render: the inline content or the resolved template version's. */
  content: string;
  /** JSON array of the email's attachments ({filename, content (base64), contentType}). */
  attachments: string;
}

export interface MessageIdempotencyTable {
  workspace_id: string;
  livemode: Flag;
  key: string;
  message_id: string;
  /** JSON of the original 202 body. */
  response: string;
  expires_at: string;
}

/** Idempotency keys of POST /v1/send/batch (outbound/accept.ts): the batch's whole answer. */
export interface BatchIdempotencyTable {
  workspace_id: string;
  livemode: Flag;
  key: string;
  /** JSON of the original 202 body. */
  response: string;
  expires_at: string;
}

export interface MessageUsageTable {
  workspace_id: string;
  /** YYYY-MM (UTC). */
  month: string;
  /** The month's count is the sum of its shards' (outbound/accept.ts, countUsage). */
  shard: Generated<number>;
  count: number;
}

// --- connections: provider connections per workspace, environment and channel ----------------

export interface ProviderConnectionsTable {
  id: string;
  workspace_id: string;
  livemode: Flag;
  channel: Channel;
  provider: string;
  name: string;
  /** JSON of the settings that are not secret (URLs, sender, topic, …). */
  settings: string;
  /** AES-256-GCM ciphertext of the JSON of the secret settings (`secrets.key`). */
  secrets: string;
  created_at: string;
  deleted_at: string | null;
}

// --- email: per-recipient delivery state, suppressions, settings, sender caps -------------------

export interface EmailRecipientsTable {
  /** Internal id of the outbound message. */
  message_id: string;
  address: string;
  kind: RecipientKind;
  domain: string;
  status: RecipientStatus;
  attempts: number;
  /** The remote server's last reply (or the local reason). */
  response: string | null;
  updated_at: string;
}

export interface SuppressionsTable {
  id: string;
  workspace_id: string;
  /** The environment the entry holds mail of (1 live, 0 test). */
  livemode: Flag;
  /** Lowercased address. */
  address: string;
  reason: SuppressionReason;
  detail: string | null;
  message_public_id: string | null;
  created_at: string;
  /** When the entry stops holding mail; null: until removed. */
  expires_at: string | null;
}

export interface EmailSettingsTable {
  workspace_id: string;
  tracking: Flag;
  updated_at: string;
}

export interface SenderCountersTable {
  workspace_id: string;
  /** 'shared:d:2025-01-31', 'domain:m:2025-01', … */
  period: string;
  count: number;
}

export interface EmailSecretsTable {
  name: string;
  value: string;
  created_at: string;
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
  active: Flag;
  livemode: Flag;
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

/** Received mail seen within `inbound.retryWindow`, by what names a retry of it (inbound/store.ts). */
export interface InboundSeenTable {
  /** SHA-256 of the workspace, address, envelope sender, Message-ID and the bytes sent. */
  key: string;
  /** rcv_ public id of the message stored the first time. */
  received_id: string;
  seen_at: string;
}

export interface ReceivedMessagesTable {
  id: string;
  /** rcv_ public id. */
  public_id: string;
  workspace_id: string;
  livemode: Flag;
  status: ReceivedStatus;
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

// --- webhooks: endpoints, the delivery outbox and its attempts (migration 0006) -----------------

export interface WebhookEndpointsTable {
  id: string;
  /** whk_ public id. */
  public_id: string;
  workspace_id: string;
  livemode: Flag;
  url: string;
  description: string;
  /** JSON array of event types, or ["*"] for every type. */
  events: string;
  enabled: Flag;
  /** whsec_… signing secret (must be kept: HMAC needs it). */
  secret: string;
  /** The payload shape (migration 0030): Postern's own, or a hosted vendor's. */
  format: Generated<WebhookFormat>;
  /** sendgrid: PKCS#8 PEM of the P-256 key that signs its deliveries; null for the other formats. */
  signing_key: Generated<string | null>;
  /** The secret before the last rotation, still signed with until previous_secret_expires_at. */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  /** When the current unbroken run of failed attempts began; null while healthy. */
  failing_since: string | null;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface WebhookDeliveriesTable {
  id: string;
  /** dlv_ public id. */
  public_id: string;
  endpoint_id: string;
  /** evt_ id of the event: the webhook-id header, stable across retries. */
  event_id: string;
  event_type: EventType;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  /** Lease: a worker owns the row until then; an expired lease is claimable again. */
  locked_until: string | null;
  lock_token: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

// --- forwarding of received mail (migration 0006) ---------------------------------------------

export interface ForwardsTable {
  id: string;
  /** rcv_ id of the received message; one forward per received message. */
  received_id: string;
  workspace_id: string;
  forward_to: string;
  /** msg_ id of the outbound message carrying the forward; null when none was made. */
  message_id: string | null;
  status: ForwardStatus;
  reason: string | null;
  created_at: string;
}

export interface ForwardingKeysTable {
  name: string;
  value: string;
  created_at: string;
}

// --- operators: the dashboard's people, their sessions and the audit log ----------------------

export type OperatorRole = 'owner' | 'member';

/** How a dashboard session was signed in to: the password alone, or with a second factor. */
export type SignInMethod = 'password' | 'password+totp' | 'password+recovery-code' | 'passkey' | 'sso';

export interface OperatorsTable {
  id: string;
  /** Lowercased; the login name. */
  email: string;
  /** `scrypt$N$r$p$salt$hash` (base64 parts). */
  password_hash: string;
  role: OperatorRole;
  created_at: string;
  password_changed_at: string;
}

export interface OperatorWorkspacesTable {
  operator_id: string;
  workspace_id: string;
}

export interface OperatorSessionsTable {
  /** Hex SHA-256 of the cookie's token; the token itself is never stored. */
  token_hash: string;
  operator_id: string;
  csrf_token: string;
  /** The workspace and environment the dashboard acts on; null until one is chosen. */
  workspace_id: string | null;
  env: Env;
  created_at: string;
  last_seen_at: string;
  /** The absolute expiry; the idle expiry is last_seen_at + dashboard.sessionIdle. */
  expires_at: string;
  ip: string;
  user_agent: string;
  /** How the operator proved itself when the session opened (migration 0031). */
  method: SignInMethod;
}

export interface SetupTokensTable {
  token_hash: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** An operator's authenticator app (migration 0031); `confirmed_at` null while being set up. */
export interface OperatorTotpTable {
  operator_id: string;
  /** The shared secret, sealed under `secrets.key`. */
  secret: string;
  created_at: string;
  confirmed_at: string | null;
  /** The last 30-second step a code was accepted for: a code is good once. */
  last_step: number | null;
}

/** An operator's recovery codes: SHA-256 of each, spent when used. */
export interface OperatorRecoveryCodesTable {
  operator_id: string;
  code_hash: string;
  used_at: string | null;
}

/** An operator's passkey (migration 0033): a WebAuthn credential as its authenticator made it. */
export interface OperatorPasskeysTable {
  /** The credential id, base64url. */
  id: string;
  operator_id: string;
  /** The COSE public key, base64url. */
  public_key: string;
  /** The authenticator's signature counter (0 for those that keep none, as most passkeys). */
  counter: number | string;
  /** JSON array of the transports the browser reported (`internal`, `hybrid`, `usb`, …). */
  transports: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

/** A WebAuthn challenge waiting for its signed answer: `register` (for an operator) or `sign-in`. */
export interface WebauthnChallengesTable {
  challenge: string;
  purpose: 'register' | 'sign-in';
  operator_id: string | null;
  expires_at: string;
}

/** A sign-in at the OpenID provider under way (migration 0034), by its state. */
export interface SsoLoginsTable {
  state: string;
  nonce: string;
  /** The PKCE code verifier. */
  verifier: string;
  expires_at: string;
}

/** A certificate obtained by ACME for one name (migration 0035); `cert` is null until the first issue. */
export interface CertificatesTable {
  name: string;
  /** The PEM chain, leaf first. */
  cert: string | null;
  /** The private key (PEM), sealed under `secrets.key`. */
  key: string | null;
  not_after: string | null;
  issued_at: string | null;
  /** The node renewing the name, and until when its lease holds. */
  renewing_node: string | null;
  renewing_until: string | null;
  /** Failed attempts in a row, the last one's reason, and when the next may start. */
  failures: number;
  last_error: string | null;
  next_attempt_at: string | null;
}

/** The ACME account key for one directory, sealed under `secrets.key`. */
export interface AcmeAccountsTable {
  directory_url: string;
  key: string;
  created_at: string;
}

/** An HTTP-01 key authorization the CA may ask any node for. */
export interface AcmeChallengesTable {
  token: string;
  key_authorization: string;
  expires_at: string;
}

/** Settings of the box, not of a workspace: `require_second_factor` (`true`/`false`). */
export interface BoxSettingsTable {
  name: string;
  value: string;
  updated_at: string;
}

export interface LoginFailuresTable {
  id: Generated<number>;
  /** `account:<email>` or `address:<ip>`. */
  subject: string;
  at: string;
}

export interface AuditLogTable {
  id: Generated<number>;
  at: string;
  operator_id: string | null;
  operator_email: string;
  /** What was done, e.g. `key.create`, `POST /v1/send`. */
  action: string;
  /** What it was done to (an id, a path), '' when nothing in particular. */
  target: string;
  workspace_id: string | null;
  env: Env | null;
  ip: string;
  /** `ok`, or the error code the action ended with. */
  outcome: string;
}

// --- reports: DMARC aggregate and SMTP TLS reports mailed back (reports/) ----------------------

export interface ReportsTable {
  id: string;
  org: string;
  report_id: string;
  email: string | null;
  begin_at: string;
  end_at: string;
  /** dmarc: the published policy and schema (JSON); tls: null. */
  policy: string | null;
  partial: Flag;
  /** When the report began to be written. */
  received_at: string;
  /** When its last record was written; null while it is being written (the summaries skip it). */
  stored_at: string | null;
}

// --- per destination domain of email (channels/email/destinations.ts) -------------------------

export interface DestinationStatsTable {
  workspace_id: string;
  domain: string;
  delivered: number;
  deferred: number;
  bounced: number;
  last_error: string | null;
  last_category: string | null;
  last_error_at: string | null;
  updated_at: string;
}

export interface DestinationHoldsTable {
  domain: string;
  /** '' holds the domain for every workspace. */
  workspace_id: string;
  reason: string;
  created_at: string;
}

export interface DestinationBackoffTable {
  domain: string;
  until: string;
  step_ms: number;
  reason: string;
  updated_at: string;
}

/** A destination's adaptive back-off (migration 0038): its lowered rate per minute and connections per host. */
export interface DestinationPaceTable {
  domain: string;
  rate: number;
  connections: number;
  target_rate: number;
  step: number;
  since: string;
  decreased_at: string;
  last_answer: string;
  last_answer_at: string;
  throttles: number;
  version: number;
  updated_at: string;
}

// --- SMTP clients greeted without the pause (smtp/passed-clients.ts) ---------------------------

export interface SmtpPassedClientsTable {
  address: string;
  passed_until: string;
}

// --- STARTTLS sessions of the MX listener (reports/inbound-tls.ts) ------------------------------

/** Sessions per UTC day, MX host name and result (`successful` or a failure's result type). */
export interface InboundTlsSessionsTable {
  day: string;
  hostname: string;
  result: string;
  sessions: number;
}

// --- checks of a message (messages/checks/) ---------------------------------------------------

/** A message's last checks: `result` JSON (null while a node is checking it), who asked. */
export interface MessageChecksTable {
  message_id: string;
  trigger: 'automatic' | 'on_demand';
  result: string | null;
  started_at: string;
  checked_at: string | null;
}

// --- warm-up of (source, sending domain) pairs (channels/email/warm-up.ts) ----------------------

export interface WarmUpSchedulesTable {
  source: string;
  sending_domain: string;
  /** The index in delivery.warmUp.curve of today's allowance. */
  step: number;
  /** The UTC day (YYYY-MM-DD) the step was reached or last confirmed. */
  step_day: string;
  paused_reason: string | null;
  paused_at: string | null;
  started_at: string;
  updated_at: string;
}

/** Outcomes per UTC hour (YYYY-MM-DDTHH). */
export interface WarmUpCountsTable {
  source: string;
  sending_domain: string;
  hour: string;
  sent: Generated<number>;
  delivered: Generated<number>;
  bounced: Generated<number>;
  deferred: Generated<number>;
  complained: Generated<number>;
}

export interface WarmUpMessagesTable {
  message_id: string;
  source: string;
  sending_domain: string;
  hour: string;
}

// --- scheduled jobs run once per cluster (cluster/jobs.ts) -------------------------------------

export interface JobRunsTable {
  job: string;
  period: string;
  node: string;
  started_at: string;
}

// --- the nodes of a cluster on one database (cluster/nodes.ts) ---------------------------------

export interface NodesTable {
  id: string;
  host: string;
  pid: number;
  version: string;
  started_at: string;
  heartbeat_at: string;
  stopping: Flag;
  /** Deliveries under way on the node, as of its last beat (only the node itself knows them). */
  in_flight: Generated<number>;
}

// --- MTA-STS policies of recipient domains, cached for their max_age (channels/email/mta-sts.ts) --

export interface MtaStsPoliciesTable {
  domain: string;
  policy_id: string;
  mode: 'enforce' | 'testing' | 'none';
  /** The mx patterns (JSON array). */
  mx: string;
  max_age: number;
  fetched_at: string;
  expires_at: string;
}

export interface DmarcReportRowsTable {
  id: Generated<number>;
  report: string;
  /** The header From domain the row counts mail of. */
  domain: string;
  /** The UTC day (YYYY-MM-DD) the count falls on. */
  day: string;
  source_ip: string;
  count: number;
  disposition: string;
  /** The DMARC evaluation of each: pass or fail. */
  dkim: 'pass' | 'fail';
  spf: 'pass' | 'fail';
  envelope_from: string | null;
  /** JSON: { dkim: [...], spf: [...], reasons: [...] } as reported. */
  detail: string;
}

export interface TlsReportRowsTable {
  id: Generated<number>;
  report: string;
  /** The policy domain the sessions were to. */
  domain: string;
  day: string;
  policy_type: string;
  /** JSON array of MX host patterns. */
  mx_hosts: string;
  successful: number;
  failed: number;
  /** JSON array of { resultType, sendingMtaIp, receivingMx, count }. */
  failures: string;
}

export interface Database {
  workspaces: WorkspacesTable;
  api_keys: ApiKeysTable;
  smtp_credentials: SmtpCredentialsTable;
  events: EventsTable;
  domains: DomainsTable;
  dkim_keys: DkimKeysTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  forwards: ForwardsTable;
  forwarding_keys: ForwardingKeysTable;
  templates: TemplatesTable;
  template_versions: TemplateVersionsTable;
  messages: MessagesTable;
  message_contents: MessageContentsTable;
  message_idempotency: MessageIdempotencyTable;
  batch_idempotency: BatchIdempotencyTable;
  message_usage: MessageUsageTable;
  provider_connections: ProviderConnectionsTable;
  email_recipients: EmailRecipientsTable;
  suppressions: SuppressionsTable;
  email_settings: EmailSettingsTable;
  sender_counters: SenderCountersTable;
  email_secrets: EmailSecretsTable;
  inbound_addresses: InboundAddressesTable;
  inbound_raw: InboundRawTable;
  inbound_seen: InboundSeenTable;
  received_messages: ReceivedMessagesTable;
  inbound_usage: InboundUsageTable;
  operators: OperatorsTable;
  operator_workspaces: OperatorWorkspacesTable;
  operator_sessions: OperatorSessionsTable;
  setup_tokens: SetupTokensTable;
  login_failures: LoginFailuresTable;
  operator_totp: OperatorTotpTable;
  operator_recovery_codes: OperatorRecoveryCodesTable;
  box_settings: BoxSettingsTable;
  operator_passkeys: OperatorPasskeysTable;
  webauthn_challenges: WebauthnChallengesTable;
  sso_logins: SsoLoginsTable;
  certificates: CertificatesTable;
  acme_accounts: AcmeAccountsTable;
  acme_challenges: AcmeChallengesTable;
  audit_log: AuditLogTable;
  dmarc_reports: ReportsTable;
  dmarc_report_rows: DmarcReportRowsTable;
  tls_reports: ReportsTable;
  tls_report_rows: TlsReportRowsTable;
  mta_sts_policies: MtaStsPoliciesTable;
  nodes: NodesTable;
  job_runs: JobRunsTable;
  destination_stats: DestinationStatsTable;
  destination_holds: DestinationHoldsTable;
  destination_backoff: DestinationBackoffTable;
  destination_pace: DestinationPaceTable;
  smtp_passed_clients: SmtpPassedClientsTable;
  inbound_tls_sessions: InboundTlsSessionsTable;
  message_checks: MessageChecksTable;
  warm_up_schedules: WarmUpSchedulesTable;
  warm_up_counts: WarmUpCountsTable;
  warm_up_messages: WarmUpMessagesTable;
}
