// The composition root: the only place that builds the object graph. Phases in order:
// storage → domain modules → adapters (HTTP, SMTP) → background workers. Nothing listens or runs
// until start(); the CLI builds the same graph and never starts it.
import http from 'node:http';
import cron from 'node-cron';
import type { AddressInfo } from 'node:net';
import type { Router } from 'express';
import { callbackRoutes, type ProviderStatusSink } from './connections/callbacks.js';
import { connectionRoutes } from './connections/routes.js';
import { createProviderStatusSink } from './connections/provider-status.js';
import { createSecretBox, loadSecretsKey } from './connections/secrets.js';
import { createConnectionStore, type ConnectionStore } from './connections/store.js';
import { createConnectionTransports, type ConnectionTransports } from './connections/transports.js';
import { ConfigError, databaseTarget, type Config } from './config.js';
import { openDatabase, type DatabaseHandle, type Db, type Dialect } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { createEventBus, type EventBus } from './events/bus.js';
import { contextRoutes } from './http/routes/context.js';
import { messageRoutes } from './http/routes/messages.js';
import { sendRoutes } from './http/routes/send.js';
import { templateRoutes } from './http/routes/templates.js';
import { createHttpApp } from './http/server.js';
import { systemClock, type Clock } from './lib/clock.js';
import { createResolver, type DnsResolver } from './lib/dns.js';
import { createIds, type Ids } from './lib/ids.js';
import { createLogger, type Logger } from './lib/logger.js';
import { createWorker, type Worker, type WorkerSpec } from './lib/worker.js';
import { createOutbound, DISPATCHER_WORKER, type Outbound } from './outbound/outbound.js';
import { createBounceHandler, type BounceHandler } from './outbound/bounces.js';
import { createEmailTransport, createTokenSource } from './outbound/channels/email/index.js';
import { bounceDomainOf } from './outbound/channels/email/prepare.js';
import { createSenderCapsCheck } from './outbound/channels/email/sender-caps.js';
import { suppressionRoutes } from './suppressions/routes.js';
import { createSuppressHook, createSuppressionCheck, createSuppressionStore, type SuppressionStore } from './suppressions/store.js';
import { recordEngagement } from './tracking/engagement.js';
import { trackingRoutes } from './tracking/routes.js';
import { createSmtpListener, type SmtpListener } from './smtp/listener.js';
import { createTemplateStore, type TemplateStore } from './templates/store.js';
import { createDomainStore, type DomainStore } from './domains/domains.js';
import { createCustomDomainPlanCheck } from './domains/sending-plan.js';
import { createAddressStore, type AddressStore } from './inbound/addresses.js';
import { createAnalyzer } from './inbound/analysis-pool.js';
import { createCommitter, type Committer } from './inbound/group-commit.js';
import { createMessageReader, type MessageReader } from './inbound/messages.js';
import { createReceiver, type Receiver } from './inbound/receive.js';
import { createRouter as createInboundRouter } from './inbound/routing.js';
import { inboundAddressRoutes } from './http/routes/inbound-addresses.js';
import { inboundDomainRoutes } from './http/routes/inbound-domains.js';
import { inboundMessageRoutes } from './http/routes/inbound-messages.js';
import { createKeyStore, type KeyStore } from './workspaces/keys.js';
import { createWorkspaceStore, type WorkspaceStore } from './workspaces/workspaces.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { createWebhooks, type Webhooks } from './webhooks/webhooks.js';
import { createForwarding, type Forwarding } from './forwarding/forwarding.js';
import { forwardingRoutes } from './http/routes/forwarding.js';

export interface AppOptions {
  config: Config;
  clock?: Clock;
  ids?: Ids;
  log?: Logger;
  dns?: DnsResolver;
  /** Database to use instead of the one the config names (tests share a prepared handle). */
  database?: DatabaseHandle;
}

/** What every domain module may depend on. */
export interface Deps {
  config: Config;
  db: Db;
  dialect: Dialect;
  clock: Clock;
  ids: Ids;
  log: Logger;
  dns: DnsResolver;
  bus: EventBus;
}

export interface App extends Deps {
  workspaces: WorkspaceStore;
  keys: KeyStore;
  outbound: Outbound;
  suppressions: SuppressionStore;
  /** DSNs and complaints arriving for the bounce domain (the SMTP listener calls it). */
  bounces: BounceHandler;
  templates: TemplateStore;
  connections: ConnectionStore;
  /** Live transports for sms, push and web-push, routed through each workspace's connection. */
  channelTransports: ConnectionTransports;
  domains: DomainStore;
  inbound: { addresses: AddressStore; messages: MessageReader; receiver: Receiver; bounces: BounceHandler; committer: Committer };
  webhooks: Webhooks;
  forwarding: Forwarding;
  workers: Worker[];
  /** The URL clients and recipients reach the HTTP listener on (config, or derived after listen). */
  publicUrl(): string;
  start(): Promise<{ http: number; smtp: number }>;
  stop(): Promise<void>;
}

export async function createApp(options: AppOptions): Promise<App> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? createIds(() => clock.now().getTime());
  const log = options.log ?? createLogger(config.log.level);
  const dns = options.dns ?? createResolver(config.dns.servers, config.dns.timeoutMs);
  const handle = options.database ?? openDatabase(databaseTarget(config));
  await migrateToLatest(handle.db);

  const bus = createEventBus();
  const deps: Deps = { config, db: handle.db, dialect: handle.dialect, clock, ids, log, dns, bus };

  // Domain modules.
  const workspaces = createWorkspaceStore(deps);
  const keys = createKeyStore({ ...deps, cacheTtlMs: config.auth.cacheTtlMs });
  const templates = createTemplateStore(deps);
  // message.received events name the stored message; their payload is its detail (inbound).
  const webhooks = createWebhooks({
    ...deps,
    eventPayload: async (type, data) => (type === 'message.received' ? inboundMessages.eventPayload(data) : data),
  });
  const outbound = createOutbound({ ...deps, templates: () => templates });
  const connections = createConnectionStore({ ...deps, box: createSecretBox(loadSecretsKey(config)) });
  // Late-bound: the derived public URL needs the port known only after listen().
  const publicUrl = () => app.publicUrl();
  const channelTransports = createConnectionTransports(connections, { clock, log, publicUrl, timeoutMs: config.channels.timeoutMs });
  for (const channel of ['sms', 'push', 'web-push'] as const) outbound.registerTransport(channel, channelTransports.router(channel));
  // Provider status callbacks (Twilio, HTTP gateway) move messages through this sink.
  const providerStatus: ProviderStatusSink = createProviderStatusSink(deps);
  // Email: live transport (direct MX or relay), suppression hold, sender caps, bounces, tracking.
  const suppressions = createSuppressionStore(deps);
  const emailTokens = createTokenSource(deps);
  if (config.delivery.mode === 'relay' && !config.delivery.relayUrl)
    throw new ConfigError('invalid setting delivery.relayUrl (POSTERN_DELIVERY_RELAY_URL): required when delivery.mode is relay');
  // Forwarding wraps the live email transport (messages tagged forwardOf send the original source).
  const forwarding = createForwarding(deps, outbound);
  outbound.registerTransport(
    'email',
    forwarding.wrap(createEmailTransport({ ...deps, suppressions, publicUrl, renderer: outbound.renderer }, emailTokens)),
  );
  outbound.addHoldCheck(createSuppressionCheck(suppressions));
  outbound.addSuppressHook(createSuppressHook(suppressions));
  outbound.addAcceptCheck(createSenderCapsCheck(deps));
  outbound.addAcceptCheck(createCustomDomainPlanCheck(deps.db));
  const bounces = createBounceHandler({ ...deps, suppressions, bounceDomain: bounceDomainOf(config) });
  const domains = createDomainStore(deps);
  const addresses = createAddressStore({ ...deps, domains });
  const inboundMessages = createMessageReader({ ...deps, publicUrl });
  // Verification and parsing on `inbound.analysisThreads` worker threads; an injected resolver
  // (tests) cannot cross into a thread, so then they run on the event loop.
  const analyzer = createAnalyzer({
    threads: config.inbound.analysisThreads,
    dns,
    thread: options.dns ? null : { dnsServers: config.dns.servers, dnsTimeoutMs: config.dns.timeoutMs },
  });
  // Lingering for a batch pays only while commits hold up verification on the same loop.
  const committer = createCommitter(handle.db, handle.dialect, {
    enabled: config.inbound.groupCommit,
    maxLingerMs: analyzer.threaded ? 0 : 10,
  });
  const receiver = createReceiver({ ...deps, committer, analyzer });
  // inbound.storeWorker (off by default): received mail committed by a worker thread on its own connection.
  if (!options.database && handle.dialect === 'sqlite' && config.inbound.storeWorker)
    committer.attachWorker((databaseTarget(config) as { file: string }).file, (err) =>
      log.error({ err }, 'inbound store worker failed; storing on the event loop'),
    );

  // Background workers: an explicit registry.
  const workerSpecs: WorkerSpec[] = [outbound.workerSpec, webhooks.deliverer.spec, forwarding.workerSpec];
  const workers = workerSpecs.map((spec) => createWorker(spec, log));
  webhooks.attach(workers.find((w) => w.name === webhooks.deliverer.spec.name));
  forwarding.attach(workers.find((w) => w.name === forwarding.workerSpec.name));
  outbound.attachWorker(workers.find((w) => w.name === DISPATCHER_WORKER));

  // Adapters.
  const v1: Router[] = [
    contextRoutes(),
    sendRoutes(outbound),
    messageRoutes(outbound, config, bus),
    templateRoutes(templates),
    suppressionRoutes(suppressions),
    connectionRoutes(connections, config),
    inboundDomainRoutes({ domains }),
    inboundAddressRoutes({ addresses }),
    inboundMessageRoutes({ messages: inboundMessages }),
    forwardingRoutes(forwarding),
    webhookRoutes(webhooks.endpoints),
  ];
  const open: Router[] = [
    trackingRoutes({ tokens: emailTokens, suppressions, log, engage: (id, kind, link) => recordEngagement(deps, id, kind, link) }),
    callbackRoutes({ connections, clock, publicUrl, sink: providerStatus }),
  ];
  const httpApp = createHttpApp({ config, clock, log, keys, v1, open });
  const httpServer = http.createServer(httpApp);
  httpServer.keepAliveTimeout = 65_000;
  const smtp: SmtpListener = createSmtpListener({ config, log, clock, dns, router: createInboundRouter(deps), receiver, bounces });
  // Daily scheduled jobs (node-cron); tests call the job functions directly with a ManualClock.
  const dailyJobs: (() => Promise<unknown>)[] = [() => inboundMessages.purge(), () => domains.expireClaims()];
  let purgeTask: { stop(): unknown } | null = null;

  let httpPort = config.http.port;
  let stopping: Promise<void> | null = null;

  const app: App = {
    ...deps,
    workspaces,
    keys,
    outbound,
    suppressions,
    bounces,
    templates,
    connections,
    channelTransports,
    domains,
    inbound: { addresses, messages: inboundMessages, receiver, bounces, committer },
    webhooks,
    forwarding,
    workers,
    publicUrl: () =>
      config.publicUrl.replace(/\/$/, '') ||
      `http://${config.http.host.includes(':') ? `[${config.http.host}]` : config.http.host}:${httpPort}`,
    async start() {
      await new Promise<void>((resolve, reject) => {
        httpServer.once('error', reject);
        httpServer.listen(config.http.port, config.http.host, () => {
          httpServer.off('error', reject);
          resolve();
        });
      });
      httpPort = (httpServer.address() as AddressInfo).port;
      const smtpPort = await smtp.listen();
      for (const w of workers) w.start();
      purgeTask = cron.schedule(config.inbound.purgeCron, () => {
        for (const job of dailyJobs) job().catch((err: unknown) => log.error({ err }, 'daily job failed'));
      });
      return { http: httpPort, smtp: smtpPort };
    },
    stop() {
      // Stop accepting → let long-lived responses end → drain workers → close the database.
      stopping ??= (async () => {
        bus.publish('app.stopping', null);
        purgeTask?.stop();
        const httpClosed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        httpServer.closeIdleConnections();
        const grace = setTimeout(() => httpServer.closeAllConnections(), 5_000);
        await Promise.all([httpServer.listening ? httpClosed : Promise.resolve(), smtp.close()]);
        await Promise.all([committer.close(), analyzer.close()]);
        clearTimeout(grace);
        for (const w of workers) await w.stop();
        await outbound.stop();
        await channelTransports.close();
        await webhooks.close();
        if (!options.database) await handle.close();
      })();
      return stopping;
    },
  };
  return app;
}
