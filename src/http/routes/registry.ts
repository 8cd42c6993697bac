// Every router the daemon serves, declared in one list the composition root reads (app.ts mounts
// them; it does not name them). The order is the mount order, and Express answers with the first
// route that matches: open routers come before the dashboard, /v1's streaming routers before its
// JSON parser, and the rest of /v1 after it. test/http/route-registry.test.ts checks that what the
// app serves is exactly what this list declares.
import type { Router } from 'express';
import type { Certificates } from '../../certificates/index.js';
import type { ConnectionStore, ProviderStatusSink } from '../../channels/index.js';
import { type Destinations, recordEngagement } from '../../channels/email/index.js';
import type { NodeRegistry } from '../../cluster/index.js';
import type { Deps } from '../../deps.js';
import type { Doctor, DomainStore, MtaStsPolicies } from '../../domains/index.js';
import type { Forwarding } from '../../forwarding/index.js';
import type { AddressStore, ReceivedReader } from '../../inbound/index.js';
import { type Ledger, scopedContentRow } from '../../messages/index.js';
import type { MessageCheckService, Outbound } from '../../outbound/index.js';
import type { Reports } from '../../reports/index.js';
import type { SmtpCredentialStore } from '../../submission/index.js';
import type { SuppressionStore } from '../../suppressions/index.js';
import type { TemplateStore } from '../../templates/index.js';
import type { EndpointStore } from '../../webhooks/index.js';
import type { VendorApi } from '../compat/compat.js';
import { mailgunApi } from '../compat/mailgun.js';
import { postmarkApi } from '../compat/postmark.js';
import { resendApi } from '../compat/resend.js';
import { sendgridApi } from '../compat/sendgrid.js';
import { acmeChallengeRoutes } from './acme-challenge.js';
import { callbackRoutes } from './callbacks.js';
import { connectionRoutes } from './connections.js';
import { contextRoutes } from './context.js';
import { destinationRoutes } from './destinations.js';
import { forwardingRoutes } from './forwarding.js';
import { inboundAddressRoutes } from './inbound-addresses.js';
import { inboundDomainRoutes } from './inbound-domains.js';
import { inboundMessageRoutes } from './inbound-messages.js';
import { messageCheckRoutes } from './message-checks.js';
import { messageRoutes } from './messages.js';
import { mtaStsRoutes } from './mta-sts.js';
import { nodeRoutes } from './nodes.js';
import { openApiRoutes } from './openapi.js';
import { reportRoutes } from './reports.js';
import { sendRoutes } from './send.js';
import { smtpCredentialRoutes } from './smtp-credentials.js';
import { suppressionImportRoutes, suppressionRoutes } from './suppressions.js';
import { templateRoutes } from './templates.js';
import { trackingRoutes } from './tracking.js';
import { webhookRoutes } from './webhooks.js';

/** What the routers are built from: the domain services the composition root made. */
export interface RouteServices extends Pick<Deps, 'config' | 'db' | 'clock' | 'ids' | 'log' | 'bus'> {
  outbound: Outbound;
  ledger: Ledger;
  messageChecks: MessageCheckService;
  templates: TemplateStore;
  suppressions: SuppressionStore;
  connections: ConnectionStore;
  domains: DomainStore;
  doctor: Doctor;
  addresses: AddressStore;
  received: ReceivedReader;
  forwarding: Forwarding;
  webhooks: EndpointStore;
  smtpCredentials: SmtpCredentialStore;
  reports: Reports;
  destinations: Destinations;
  nodes: NodeRegistry;
  mtaSts: MtaStsPolicies;
  certificates: Pick<Certificates, 'challenge'>;
  /** Signs and verifies the open, click and unsubscribe links of email. */
  emailTokens: Parameters<typeof trackingRoutes>[0]['tokens'];
  providerStatus: ProviderStatusSink;
  publicUrl(): string;
  /** Wakes the dispatcher (released mail is due now). */
  wakeDispatcher(): void;
}

/**
 * Where a router is mounted: `open` at the root without an API key (each checks its own tokens),
 * `v1-stream` under /v1 after authentication and before the JSON parser (it reads its body as a
 * stream), `v1` under /v1 after the JSON parser.
 */
export type Mount = 'open' | 'v1-stream' | 'v1';

export interface RouteSpec {
  name: string;
  mount: Mount;
  router(s: RouteServices): Router;
}

export const ROUTES: readonly RouteSpec[] = [
  { name: 'openapi', mount: 'open', router: () => openApiRoutes() },
  { name: 'mta-sts', mount: 'open', router: (s) => mtaStsRoutes({ policies: s.mtaSts }) },
  { name: 'acme-challenge', mount: 'open', router: (s) => acmeChallengeRoutes({ challenge: (token) => s.certificates.challenge(token) }) },
  {
    name: 'tracking',
    mount: 'open',
    router: (s) =>
      trackingRoutes({
        tokens: s.emailTokens,
        suppressions: s.suppressions,
        log: s.log,
        engage: (id, kind, link) => recordEngagement(s.ledger, id, kind, link),
      }),
  },
  {
    name: 'callbacks',
    mount: 'open',
    router: (s) => callbackRoutes({ connections: s.connections, clock: s.clock, publicUrl: () => s.publicUrl(), sink: s.providerStatus }),
  },
  { name: 'suppression-import', mount: 'v1-stream', router: (s) => suppressionImportRoutes(s) },
  { name: 'context', mount: 'v1', router: () => contextRoutes() },
  { name: 'send', mount: 'v1', router: (s) => sendRoutes(s.outbound) },
  { name: 'messages', mount: 'v1', router: (s) => messageRoutes(s.outbound, s.config, s.ledger, s.bus) },
  { name: 'message-checks', mount: 'v1', router: (s) => messageCheckRoutes(s.messageChecks) },
  { name: 'templates', mount: 'v1', router: (s) => templateRoutes(s.templates) },
  { name: 'suppressions', mount: 'v1', router: (s) => suppressionRoutes(s.suppressions, () => s.clock.now()) },
  { name: 'connections', mount: 'v1', router: (s) => connectionRoutes(s.connections, s.config) },
  { name: 'inbound-domains', mount: 'v1', router: (s) => inboundDomainRoutes({ domains: s.domains, doctor: s.doctor }) },
  { name: 'inbound-addresses', mount: 'v1', router: (s) => inboundAddressRoutes({ addresses: s.addresses }) },
  { name: 'inbound-messages', mount: 'v1', router: (s) => inboundMessageRoutes({ messages: s.received }) },
  { name: 'forwarding', mount: 'v1', router: (s) => forwardingRoutes(s.forwarding) },
  { name: 'webhooks', mount: 'v1', router: (s) => webhookRoutes(s.webhooks) },
  { name: 'smtp-credentials', mount: 'v1', router: (s) => smtpCredentialRoutes(s.smtpCredentials) },
  { name: 'reports', mount: 'v1', router: (s) => reportRoutes(s.reports, () => s.clock.now()) },
  {
    name: 'destinations',
    mount: 'v1',
    router: (s) =>
      destinationRoutes({ destinations: s.destinations, db: s.db, ledger: s.ledger, clock: s.clock, wake: () => s.wakeDispatcher() }),
  },
  { name: 'nodes', mount: 'v1', router: (s) => nodeRoutes(s.nodes, s.config) },
];

/** The hosted vendors' APIs, each under /compat/<vendor> (http/compat/). */
export const VENDOR_APIS: readonly { name: string; api(s: RouteServices): VendorApi }[] = [
  { name: 'resend', api: (s) => resendApi({ outbound: s.outbound, messageRow: (scope, id) => scopedContentRow(s.db, scope, id) }) },
  { name: 'postmark', api: (s) => postmarkApi({ outbound: s.outbound, clock: s.clock }) },
  { name: 'sendgrid', api: (s) => sendgridApi({ outbound: s.outbound }) },
  { name: 'mailgun', api: (s) => mailgunApi({ outbound: s.outbound }) },
];

/** A router as built and where it goes. */
export interface BuiltRouter {
  name: string;
  mount: Mount;
  router: Router;
}

/** Builds every declared router from the services, in mount order. */
export function buildRouters(s: RouteServices): BuiltRouter[] {
  return ROUTES.map((spec) => ({ name: spec.name, mount: spec.mount, router: spec.router(s) }));
}
