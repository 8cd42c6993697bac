// The registry of HTTP operations the API description (document.ts) is built from: one row per
// route, naming the scope it needs, the zod schema its route validates the body with (imported
// from where the route takes it, never copied), its query parameters, the zod schema of each
// success answer (the contract's RESPONSES entry, which the dashboard reads its types from too),
// and the error codes it can answer with (their statuses come from http/errors.ts).
// A test compares this table with the routes the app mounts (listRoutes), both ways, so a route
// without a row, or a row without a route, fails the build. Query strings some routes still read by
// hand (messages, inbound messages) are described by contract schemas that accept the same values.
import { z } from 'zod';
import { destinationsQuery, purgeBody, suspendBody } from '../../contract/destination-schemas.js';
import { claimDomainBody, rotateDkimBody } from '../../contract/domain-schemas.js';
import { addressesQuery, createAddressBody, inboundMessagesQuery } from '../../contract/inbound-schemas.js';
import { messageSchema, messagesQuery } from '../../contract/message-schemas.js';
import { reportQuery } from '../../contract/report-schemas.js';
import { RESPONSES } from '../../contract/responses.js';
import { batchBody, sendBody } from '../../contract/sending-schemas.js';
import { createSmtpCredentialBody } from '../../contract/smtp-credential-schemas.js';
import { addSuppressionBody, listSuppressionsQuery } from '../../contract/suppression-schemas.js';
import { createTemplateBody, draftBody, renderBody, updateTemplateBody } from '../../contract/template-schemas.js';
import { SUPPRESSION_REASONS, type ErrorCode, type Scope } from '../../contract/vocabulary.js';
import { createEndpointSchema, listDeliveriesSchema, updateEndpointSchema } from '../../contract/webhook-schemas.js';

/** A success answer: JSON with a schema, a Server-Sent Events stream, or bytes of a media type. */
export type Success =
  | { status: number; description: string; json: z.ZodType }
  | { status: number; description: string; stream: 'text/event-stream'; event: z.ZodType; json?: z.ZodType }
  | { status: number; description: string; bytes: string };

export interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path as Express mounts it, e.g. `/v1/messages/:id`. */
  path: string;
  id: string;
  tag: string;
  summary: string;
  /** null: no API key (the open routes). */
  scope: Scope | null;
  body?: z.ZodType;
  /** A body that is not JSON: the media types it may be sent as. */
  bodyMedia?: string[];
  query?: z.ZodObject;
  /** Path parameters described beyond "a string" (all are strings). */
  params?: Record<string, string>;
  idempotencyKey?: boolean;
  success: Success[];
  /** Error codes this operation can answer with, beyond the ones every /v1 operation can. */
  errors: ErrorCode[];
}

/** What every authenticated /v1 operation can answer: the chain in server.ts runs before any route. */
// forbidden: the dashboard's session on /v1 (a cross-site request, a missing CSRF token, no workspace chosen).
export const COMMON_ERRORS: ErrorCode[] = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'unavailable',
  'internal',
];

const SSE = [
  'A Server-Sent Events stream: first a `: tail` comment, then the 50 most recent matching messages',
  '(oldest first) and every new or changed matching message, each as `event: message`,',
  '`id: <msg_ id>`, `data: <Message JSON>`. A `: ping` comment every `tail.ping`; the server ends',
  'the stream after `tail.maxDuration` and when the daemon stops.',
].join(' ');

const messageId = { id: 'the public id of the message (`msg_…`)' };
const slug = { slug: 'the template slug' };
const destinationDomain = { domain: 'a destination domain, such as gmail.com' };
const webhookId = { id: 'the endpoint id (`we_…`)' };
const smtpCredentialId = { id: 'the credential id (`smc_…`)' };
const receivedId = { id: 'the public id of the received message (`rcv_…`)' };

export const OPERATIONS: Operation[] = [
  // Open routes.
  {
    method: 'GET',
    path: '/healthz',
    id: 'health',
    tag: 'meta',
    summary: 'Liveness: the process answers',
    scope: null,
    success: [{ status: 200, description: 'alive', json: RESPONSES['GET /healthz'] }],
    errors: [],
  },
  {
    method: 'GET',
    path: '/readyz',
    id: 'ready',
    tag: 'meta',
    summary: 'Readiness: the database answers, the listeners are up, the migrations are applied',
    scope: null,
    success: [
      {
        status: 200,
        description: 'ready',
        json: RESPONSES['GET /readyz'],
      },
      { status: 503, description: 'not ready: `ready` is false and `reasons` says why, one line each', json: RESPONSES['GET /readyz'] },
    ],
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/openapi.json',
    id: 'getOpenApi',
    tag: 'meta',
    summary: 'This API description (OpenAPI 3.1), without authentication',
    scope: null,
    success: [{ status: 200, description: 'the OpenAPI document', json: RESPONSES['GET /v1/openapi.json'] }],
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/context',
    id: 'getContext',
    tag: 'meta',
    summary: "The key's workspace and mode",
    scope: 'read',
    success: [
      {
        status: 200,
        description: 'the workspace the key belongs to and its environment',
        json: RESPONSES['GET /v1/context'],
      },
    ],
    errors: [],
  },
  // Sending.
  ...(['/v1/send', '/v1/send-raw'] as const).map((path): Operation => ({
    method: 'POST',
    path,
    id: path === '/v1/send' ? 'send' : 'sendRaw',
    tag: 'sending',
    summary: path === '/v1/send' ? 'Send a message from a template or inline content' : 'Send inline content without a template',
    scope: 'send',
    body: sendBody,
    idempotencyKey: true,
    success: [
      { status: 202, description: 'accepted: the message is committed and queued (or scheduled)', json: RESPONSES[`POST ${path}`] },
    ],
    errors: ['invalid_body', 'plan_limit', 'quota_exceeded'],
  })),
  {
    method: 'POST',
    path: '/v1/send/batch',
    id: 'sendBatch',
    tag: 'sending',
    summary:
      'Send up to 500 messages in one request: `atomic` refuses them all if one is refused, `partial` answers each refused message in its place; what is accepted commits together',
    scope: 'send',
    body: batchBody,
    idempotencyKey: true,
    success: [
      {
        status: 202,
        description: 'accepted: one result per message, in order (an accepted message, or its error)',
        json: RESPONSES['POST /v1/send/batch'],
      },
    ],
    errors: ['invalid_body', 'plan_limit', 'quota_exceeded'],
  },
  // Messages.
  {
    method: 'GET',
    path: '/v1/messages',
    id: 'listMessages',
    tag: 'messages',
    summary: 'List messages newest first, or tail them as Server-Sent Events (`tail=1`)',
    scope: 'read',
    query: messagesQuery,
    success: [
      {
        status: 200,
        description: `a page of messages; with tail=1: ${SSE}`,
        json: RESPONSES['GET /v1/messages'],
        stream: 'text/event-stream',
        event: messageSchema,
      },
    ],
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/messages/:id',
    id: 'getMessage',
    tag: 'messages',
    summary: 'One message with its timeline',
    scope: 'read',
    params: messageId,
    success: [{ status: 200, description: 'the message', json: RESPONSES['GET /v1/messages/:id'] }],
    errors: ['not_found'],
  },
  {
    method: 'DELETE',
    path: '/v1/messages/:id',
    id: 'cancelMessage',
    tag: 'messages',
    summary: 'Cancel a queued or scheduled message',
    scope: 'cancel',
    params: messageId,
    success: [{ status: 200, description: 'canceled', json: RESPONSES['DELETE /v1/messages/:id'] }],
    errors: ['not_found', 'not_cancelable', 'conflict'],
  },
  {
    method: 'POST',
    path: '/v1/messages/:id/retry',
    id: 'retryMessage',
    tag: 'messages',
    summary: 'Make a deferred message due now',
    scope: 'send',
    params: messageId,
    success: [{ status: 200, description: 'the message, due now', json: RESPONSES['POST /v1/messages/:id/retry'] }],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'GET',
    path: '/v1/messages/:id/checks',
    id: 'getMessageChecks',
    tag: 'messages',
    summary: 'The checks of an email message (HTML compatibility, links, spam score, headers); run now when none are stored',
    scope: 'read',
    params: messageId,
    success: [{ status: 200, description: 'the last checks of the message', json: RESPONSES['GET /v1/messages/:id/checks'] }],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'POST',
    path: '/v1/messages/:id/checks',
    id: 'runMessageChecks',
    tag: 'messages',
    summary: 'Run the checks of an email message again',
    scope: 'read',
    params: messageId,
    success: [{ status: 200, description: 'the fresh checks of the message', json: RESPONSES['POST /v1/messages/:id/checks'] }],
    errors: ['not_found', 'conflict'],
  },
  // Templates.
  {
    method: 'GET',
    path: '/v1/templates',
    id: 'listTemplates',
    tag: 'templates',
    summary: 'List templates',
    scope: 'read',
    success: [{ status: 200, description: 'every template of the workspace', json: RESPONSES['GET /v1/templates'] }],
    errors: [],
  },
  {
    method: 'POST',
    path: '/v1/templates',
    id: 'createTemplate',
    tag: 'templates',
    summary: 'Create a template (no versions yet)',
    scope: 'send',
    body: createTemplateBody,
    success: [{ status: 201, description: 'created', json: RESPONSES['POST /v1/templates'] }],
    errors: ['invalid_body', 'already_exists', 'plan_limit'],
  },
  {
    method: 'GET',
    path: '/v1/templates/:slug',
    id: 'getTemplate',
    tag: 'templates',
    summary: 'One template with its current version and draft',
    scope: 'read',
    params: slug,
    success: [{ status: 200, description: 'the template', json: RESPONSES['GET /v1/templates/:slug'] }],
    errors: ['not_found'],
  },
  {
    method: 'PATCH',
    path: '/v1/templates/:slug',
    id: 'updateTemplate',
    tag: 'templates',
    summary: 'Change the description, or archive and restore',
    scope: 'send',
    params: slug,
    body: updateTemplateBody,
    success: [{ status: 200, description: 'the template', json: RESPONSES['PATCH /v1/templates/:slug'] }],
    errors: ['not_found', 'invalid_body'],
  },
  {
    method: 'POST',
    path: '/v1/templates/:slug/render',
    id: 'renderTemplate',
    tag: 'templates',
    summary: 'Render a version without sending',
    scope: 'read',
    params: slug,
    body: renderBody,
    success: [{ status: 200, description: 'the rendered output', json: RESPONSES['POST /v1/templates/:slug/render'] }],
    errors: ['not_found', 'invalid_body'],
  },
  {
    method: 'PUT',
    path: '/v1/templates/:slug/draft',
    id: 'saveTemplateDraft',
    tag: 'templates',
    summary: 'Save the draft',
    scope: 'send',
    params: slug,
    body: draftBody,
    success: [{ status: 200, description: 'the draft version', json: RESPONSES['PUT /v1/templates/:slug/draft'] }],
    errors: ['not_found', 'invalid_body'],
  },
  {
    method: 'DELETE',
    path: '/v1/templates/:slug/draft',
    id: 'discardTemplateDraft',
    tag: 'templates',
    summary: 'Discard the draft',
    scope: 'send',
    params: slug,
    success: [{ status: 200, description: 'discarded', json: RESPONSES['DELETE /v1/templates/:slug/draft'] }],
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/v1/templates/:slug/publish',
    id: 'publishTemplate',
    tag: 'templates',
    summary: 'Publish the draft',
    scope: 'send',
    params: slug,
    success: [{ status: 200, description: 'the published version', json: RESPONSES['POST /v1/templates/:slug/publish'] }],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'GET',
    path: '/v1/templates/:slug/versions',
    id: 'listTemplateVersions',
    tag: 'templates',
    summary: 'Every version, newest first',
    scope: 'send',
    params: slug,
    success: [{ status: 200, description: 'the versions', json: RESPONSES['GET /v1/templates/:slug/versions'] }],
    errors: ['not_found'],
  },
  // Suppressions.
  {
    method: 'GET',
    path: '/v1/suppressions',
    id: 'listSuppressions',
    tag: 'suppressions',
    summary: "List the key's environment's suppressed addresses, newest first",
    scope: 'read',
    query: listSuppressionsQuery,
    success: [
      {
        status: 200,
        description: 'a page of entries',
        json: RESPONSES['GET /v1/suppressions'],
      },
    ],
    errors: [],
  },
  {
    method: 'POST',
    path: '/v1/suppressions',
    id: 'addSuppression',
    tag: 'suppressions',
    summary: "Suppress an address for the key's environment",
    scope: 'send',
    body: addSuppressionBody,
    success: [{ status: 201, description: 'the entry', json: RESPONSES['POST /v1/suppressions'] }],
    errors: ['invalid_body'],
  },
  {
    method: 'DELETE',
    path: '/v1/suppressions/:address',
    id: 'removeSuppression',
    tag: 'suppressions',
    summary: "Remove an address from the key's environment's list",
    scope: 'send',
    params: { address: 'the suppressed address' },
    success: [{ status: 200, description: 'removed', json: RESPONSES['DELETE /v1/suppressions/:address'] }],
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/v1/suppressions/import',
    id: 'importSuppressions',
    tag: 'suppressions',
    summary:
      "Import entries into the key's environment's list from CSV (a header row; SendGrid's and Postmark's export columns recognised), NDJSON or a JSON array; streamed, idempotent",
    scope: 'send',
    bodyMedia: ['text/csv', 'application/x-ndjson', 'application/json'],
    query: z.object({
      reason: z.enum(SUPPRESSION_REASONS).default('manual').describe('the reason of lines that name none (or one not recognised)'),
    }),
    success: [
      { status: 200, description: 'what the import did, with the first refused lines', json: RESPONSES['POST /v1/suppressions/import'] },
    ],
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/suppressions/export',
    id: 'exportSuppressions',
    tag: 'suppressions',
    summary: "The key's environment's whole list as CSV or NDJSON (the forms import reads)",
    scope: 'read',
    query: z.object({ format: z.enum(['csv', 'ndjson']).default('csv') }),
    success: [
      { status: 200, description: 'the list, CSV with a header row', bytes: 'text/csv' },
      { status: 200, description: 'the list, one JSON entry per line', bytes: 'application/x-ndjson' },
    ],
    errors: [],
  },
  // Connections.
  {
    method: 'GET',
    path: '/v1/connections',
    id: 'listConnections',
    tag: 'connections',
    summary: "The configured email connection and the workspace's provider connections (never secrets)",
    scope: 'read',
    success: [{ status: 200, description: 'the connections of the key’s environment', json: RESPONSES['GET /v1/connections'] }],
    errors: [],
  },
  // The cluster: the box's nodes, for a key granted `cluster` by an owner.
  {
    method: 'GET',
    path: '/v1/nodes',
    id: 'listNodes',
    tag: 'cluster',
    summary: 'The nodes sharing the database: health, deliveries in flight, messages claimed',
    scope: 'cluster',
    success: [
      {
        status: 200,
        description: 'every node, oldest first, with the heartbeat and node timeout its health is judged by',
        json: RESPONSES['GET /v1/nodes'],
      },
    ],
    errors: [],
  },
  // Inbound.
  {
    method: 'POST',
    path: '/v1/inbound/domains',
    id: 'claimDomain',
    tag: 'inbound',
    summary: 'Claim a domain for receiving (and sending)',
    scope: 'inbound',
    body: claimDomainBody,
    success: [{ status: 201, description: 'claimed, with the DNS records to publish', json: RESPONSES['POST /v1/inbound/domains'] }],
    errors: ['invalid_body', 'invalid_domain', 'already_exists', 'domain_claimed', 'existing_mx'],
  },
  {
    method: 'GET',
    path: '/v1/inbound/domains',
    id: 'listDomains',
    tag: 'inbound',
    summary: "The workspace's domains",
    scope: 'inbound',
    success: [{ status: 200, description: 'the domains', json: RESPONSES['GET /v1/inbound/domains'] }],
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/inbound/domains/:id',
    id: 'getDomain',
    tag: 'inbound',
    summary: 'One domain and its records',
    scope: 'inbound',
    success: [{ status: 200, description: 'the domain', json: RESPONSES['GET /v1/inbound/domains/:id'] }],
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/inbound/domains/:id/checks',
    id: 'checkDomain',
    tag: 'inbound',
    summary: "The doctor's checks of one domain (and the host's), read-only",
    scope: 'inbound',
    success: [
      {
        status: 200,
        description: 'the checks, each pass, warn or fail, with the record to publish',
        json: RESPONSES['GET /v1/inbound/domains/:id/checks'],
      },
    ],
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/v1/inbound/domains/:id/dkim/rotate',
    id: 'rotateDomainDkim',
    tag: 'inbound',
    summary: 'Start a DKIM key rotation: new keys under new selectors, to publish',
    scope: 'inbound',
    body: rotateDkimBody,
    success: [
      {
        status: 200,
        description: 'the domain, with the new records to publish in dkim.keys',
        json: RESPONSES['POST /v1/inbound/domains/:id/dkim/rotate'],
      },
    ],
    errors: ['invalid_body', 'not_found', 'conflict', 'shared_domain'],
  },
  {
    method: 'DELETE',
    path: '/v1/inbound/domains/:id/dkim/rotation',
    id: 'cancelDomainDkimRotation',
    tag: 'inbound',
    summary: 'Abandon a DKIM key rotation that waits for its records; the current keys keep signing',
    scope: 'inbound',
    success: [
      {
        status: 200,
        description: 'the domain, without the abandoned keys',
        json: RESPONSES['DELETE /v1/inbound/domains/:id/dkim/rotation'],
      },
    ],
    errors: ['not_found'],
  },
  {
    method: 'DELETE',
    path: '/v1/inbound/domains/:id',
    id: 'removeDomain',
    tag: 'inbound',
    summary: 'Remove a custom domain and its addresses',
    scope: 'inbound',
    success: [{ status: 200, description: 'removed', json: RESPONSES['DELETE /v1/inbound/domains/:id'] }],
    errors: ['not_found', 'shared_domain'],
  },
  {
    method: 'POST',
    path: '/v1/inbound/addresses',
    id: 'createAddress',
    tag: 'inbound',
    summary: 'Create a receiving address',
    scope: 'inbound',
    body: createAddressBody,
    success: [{ status: 201, description: 'the address', json: RESPONSES['POST /v1/inbound/addresses'] }],
    errors: ['invalid_body', 'already_exists'],
  },
  {
    method: 'GET',
    path: '/v1/inbound/addresses',
    id: 'listAddresses',
    tag: 'inbound',
    summary: "The workspace's addresses",
    scope: 'inbound',
    query: addressesQuery,
    success: [{ status: 200, description: 'the addresses', json: RESPONSES['GET /v1/inbound/addresses'] }],
    errors: [],
  },
  {
    method: 'POST',
    path: '/v1/inbound/addresses/:id/deactivate',
    id: 'deactivateAddress',
    tag: 'inbound',
    summary: 'Stop receiving at an address',
    scope: 'inbound',
    success: [{ status: 200, description: 'the address, inactive', json: RESPONSES['POST /v1/inbound/addresses/:id/deactivate'] }],
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/inbound/messages',
    id: 'listReceived',
    tag: 'inbound',
    summary: 'Received messages, newest first',
    scope: 'inbound',
    query: inboundMessagesQuery,
    success: [{ status: 200, description: 'a page', json: RESPONSES['GET /v1/inbound/messages'] }],
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/inbound/messages/:id',
    id: 'getReceived',
    tag: 'inbound',
    summary: 'One received message, parsed, with its verdicts',
    scope: 'inbound',
    params: receivedId,
    success: [{ status: 200, description: 'the message', json: RESPONSES['GET /v1/inbound/messages/:id'] }],
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/inbound/messages/:id/raw',
    id: 'getReceivedRaw',
    tag: 'inbound',
    summary: 'The raw source as received (a download)',
    scope: 'inbound',
    params: receivedId,
    success: [{ status: 200, description: 'the message as received (Content-Disposition: attachment)', bytes: 'message/rfc822' }],
    errors: ['not_found', 'gone'],
  },
  {
    method: 'GET',
    path: '/v1/inbound/messages/:id/attachments/:index',
    id: 'getReceivedAttachment',
    tag: 'inbound',
    summary: 'One attachment of a received message (a download)',
    scope: 'inbound',
    params: { ...receivedId, index: 'the attachment index (0, 1, …)' },
    success: [{ status: 200, description: 'the attachment, with its own Content-Type', bytes: '*/*' }],
    errors: ['not_found', 'gone'],
  },
  {
    method: 'GET',
    path: '/v1/inbound/messages/:id/forward',
    id: 'getReceivedForward',
    tag: 'inbound',
    summary: 'Where a received message was forwarded',
    scope: 'inbound',
    params: receivedId,
    success: [
      { status: 200, description: 'the forward and its outbound message', json: RESPONSES['GET /v1/inbound/messages/:id/forward'] },
    ],
    errors: ['not_found'],
  },
  // Reports.
  ...(['dmarc', 'tls'] as const).map((kind): Operation => ({
    method: 'GET',
    path: `/v1/reports/${kind}`,
    id: kind === 'dmarc' ? 'dmarcReports' : 'tlsReports',
    tag: 'reports',
    summary:
      kind === 'dmarc'
        ? "DMARC aggregate reports about the workspace's domains, per domain per UTC day"
        : "SMTP TLS reports about the workspace's domains, per domain per UTC day, and the inbound STARTTLS sessions of this box's MX",
    scope: 'read',
    query: reportQuery,
    success: [
      {
        status: 200,
        description: 'the days asked (default the last 30), at most 366',
        json: RESPONSES[`GET /v1/reports/${kind}`],
      },
    ],
    errors: ['not_found'],
  })),
  // Destinations.
  {
    method: 'GET',
    path: '/v1/destinations',
    id: 'listDestinations',
    tag: 'destinations',
    summary: "What the workspace's email to each destination domain came to, its hold and back-off",
    scope: 'read',
    query: destinationsQuery,
    success: [
      {
        status: 200,
        description: 'a page of destinations, by domain; `next` is the `after` of the next page',
        json: RESPONSES['GET /v1/destinations'],
      },
    ],
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/destinations/:domain',
    id: 'getDestination',
    tag: 'destinations',
    summary: 'One destination domain (zero counts when nothing was sent there)',
    scope: 'read',
    params: destinationDomain,
    success: [{ status: 200, description: 'the destination', json: RESPONSES['GET /v1/destinations/:domain'] }],
    errors: [],
  },
  {
    method: 'POST',
    path: '/v1/destinations/:domain/suspend',
    id: 'suspendDestination',
    tag: 'destinations',
    summary: "Hold the workspace's email to the domain (deferred without a connection until resumed)",
    scope: 'send',
    params: destinationDomain,
    body: suspendBody,
    success: [{ status: 200, description: 'the destination, suspended', json: RESPONSES['POST /v1/destinations/:domain/suspend'] }],
    errors: ['invalid_body'],
  },
  {
    method: 'POST',
    path: '/v1/destinations/:domain/resume',
    id: 'resumeDestination',
    tag: 'destinations',
    summary: 'Lift the hold: the mail it deferred is due at once',
    scope: 'send',
    params: destinationDomain,
    success: [{ status: 200, description: 'the destination', json: RESPONSES['POST /v1/destinations/:domain/resume'] }],
    errors: [],
  },
  {
    method: 'POST',
    path: '/v1/destinations/:domain/purge',
    id: 'purgeDestination',
    tag: 'destinations',
    summary: 'Drop the email still waiting for the domain: queued is canceled, deferred fails',
    scope: 'cancel',
    params: destinationDomain,
    body: purgeBody,
    success: [
      {
        status: 200,
        description: 'how many messages were canceled and failed',
        json: RESPONSES['POST /v1/destinations/:domain/purge'],
      },
    ],
    errors: ['invalid_body'],
  },
  // Webhooks.
  {
    method: 'POST',
    path: '/v1/webhooks',
    id: 'createWebhook',
    tag: 'webhooks',
    summary: 'Create an endpoint (the answer carries its signing secret, once)',
    scope: 'webhooks',
    body: createEndpointSchema,
    success: [{ status: 201, description: 'the endpoint and its secret', json: RESPONSES['POST /v1/webhooks'] }],
    errors: ['invalid_body'],
  },
  {
    method: 'GET',
    path: '/v1/webhooks',
    id: 'listWebhooks',
    tag: 'webhooks',
    summary: 'List endpoints',
    scope: 'webhooks',
    success: [{ status: 200, description: 'the endpoints', json: RESPONSES['GET /v1/webhooks'] }],
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/webhooks/:id',
    id: 'getWebhook',
    tag: 'webhooks',
    summary: 'One endpoint',
    scope: 'webhooks',
    params: webhookId,
    success: [{ status: 200, description: 'the endpoint', json: RESPONSES['GET /v1/webhooks/:id'] }],
    errors: ['not_found'],
  },
  {
    method: 'PATCH',
    path: '/v1/webhooks/:id',
    id: 'updateWebhook',
    tag: 'webhooks',
    summary: 'Change an endpoint',
    scope: 'webhooks',
    params: webhookId,
    body: updateEndpointSchema,
    success: [{ status: 200, description: 'the endpoint', json: RESPONSES['PATCH /v1/webhooks/:id'] }],
    errors: ['not_found', 'invalid_body'],
  },
  {
    method: 'DELETE',
    path: '/v1/webhooks/:id',
    id: 'deleteWebhook',
    tag: 'webhooks',
    summary: 'Delete an endpoint',
    scope: 'webhooks',
    params: webhookId,
    success: [{ status: 200, description: 'deleted', json: RESPONSES['DELETE /v1/webhooks/:id'] }],
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/rotate-secret',
    id: 'rotateWebhookSecret',
    tag: 'webhooks',
    summary: 'Rotate the signing secret (the previous one signs for a while longer)',
    scope: 'webhooks',
    params: webhookId,
    success: [{ status: 200, description: 'the endpoint and its new secret', json: RESPONSES['POST /v1/webhooks/:id/rotate-secret'] }],
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/webhooks/:id/deliveries',
    id: 'listWebhookDeliveries',
    tag: 'webhooks',
    summary: "An endpoint's delivery log, newest first",
    scope: 'webhooks',
    params: webhookId,
    query: listDeliveriesSchema,
    success: [{ status: 200, description: 'the deliveries', json: RESPONSES['GET /v1/webhooks/:id/deliveries'] }],
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/deliveries/:deliveryId/retry',
    id: 'retryWebhookDelivery',
    tag: 'webhooks',
    summary: 'Make a delivery due again now',
    scope: 'webhooks',
    params: { ...webhookId, deliveryId: 'the delivery id' },
    success: [{ status: 200, description: 'the delivery', json: RESPONSES['POST /v1/webhooks/:id/deliveries/:deliveryId/retry'] }],
    errors: ['not_found'],
  },
  // SMTP credentials.
  {
    method: 'POST',
    path: '/v1/smtp-credentials',
    id: 'createSmtpCredential',
    tag: 'submission',
    summary: "Create an SMTP credential in the key's environment (the answer carries its secret, once)",
    scope: 'send',
    body: createSmtpCredentialBody,
    success: [{ status: 201, description: 'the credential and its secret', json: RESPONSES['POST /v1/smtp-credentials'] }],
    errors: ['invalid_body'],
  },
  {
    method: 'GET',
    path: '/v1/smtp-credentials',
    id: 'listSmtpCredentials',
    tag: 'submission',
    summary: "List the SMTP credentials of the key's environment, newest first (never their secrets)",
    scope: 'send',
    success: [{ status: 200, description: 'the credentials', json: RESPONSES['GET /v1/smtp-credentials'] }],
    errors: [],
  },
  {
    method: 'DELETE',
    path: '/v1/smtp-credentials/:id',
    id: 'revokeSmtpCredential',
    tag: 'submission',
    summary: 'Revoke an SMTP credential: AUTH with it fails from then on',
    scope: 'send',
    params: smtpCredentialId,
    success: [{ status: 200, description: 'the credential, revoked', json: RESPONSES['DELETE /v1/smtp-credentials/:id'] }],
    errors: ['not_found'],
  },
];
