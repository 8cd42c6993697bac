// The composition root: the only place that builds the object graph. Phases in order:
// storage → domain modules → channels → adapters (HTTP, SMTP) → background workers. Nothing
// listens or runs until start(); the CLI builds the same graph and never starts it. What is
// mounted and run is declared, not listed here: the routers in http/routes/registry.ts, the
// workers and daily jobs in jobs.ts; what is checked before the start in start-up-checks.ts.
import http from 'node:http';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { createConnectionTransports, type ConnectionTransports } from './channels/connection-transport.js';
import { createConnectionStore, type ConnectionStore } from './channels/connections.js';
import { createBounceHandler, type BounceHandler } from './channels/email/bounces.js';
import { createEmailSource, createEmailTransport, createTokenSource, policyFetch } from './channels/email/index.js';
import { createDeliveryThreads } from './channels/email/delivery-threads.js';
import { createCustomDomainPlanCheck, createSenderCapsCheck } from './channels/email/sender-caps.js';
import { channelSsrfPolicy } from './channels/provider-http.js';
import { createProviderStatusSink } from './channels/provider-status.js';
import { CONNECTION_CHANNELS } from './channels/registry.js';
import { derivePublicUrl } from './public-url.js';
import { databaseTarget, type Config } from './config.js';
import { openDatabase, type DatabaseHandle } from './db/database.js';
import { createBatchCommitter, createWriteBatcher } from './db/group-commit.js';
import { migrateToLatest, pendingMigrations } from './db/migrate.js';
import type { Deps } from './deps.js';
import { createDoctor, type Doctor } from './domains/doctor.js';
import { createMtaStsPolicies, type MtaStsPolicies } from './domains/mta-sts-policy.js';
import { createDomainStore, type DomainStore } from './domains/domains.js';
import { bounceDomainOf } from './domains/names.js';
import { sealPlaintextDkimKeys } from './domains/dkim-keys.js';
import { createReports, type Reports } from './reports/reports.js';
import { createScanner } from './inbound/scan.js';
import { createEventBus } from './events/bus.js';
import { createForwarding, type Forwarding } from './forwarding/forwarding.js';
import { MTA_STS_PATH } from './http/routes/mta-sts.js';
import { ACME_CHALLENGE_PATH } from './http/routes/acme-challenge.js';
import { buildRouters, VENDOR_APIS, type Mount, type RouteServices } from './http/routes/registry.js';
import { createHttpsListener } from './http/https.js';
import { createCertificateStore } from './certificates/store.js';
import { createServedCertificates } from './certificates/serving.js';
import { createCertificates, type Certificates } from './certificates/certificates.js';
import { dashboardRoutes } from './http/dashboard/routes.js';
import { sessionPrincipal } from './http/dashboard/session.js';
import { createHttpApp, listRoutes, type Readiness, type RouteEntry } from './http/server.js';
import { createAddressStore, type AddressStore } from './inbound/addresses.js';
import { createAnalyzer } from './inbound/analysis-pool.js';
import { createReceivedReader, type ReceivedReader } from './inbound/received.js';
import { createPassedClients } from './inbound/passed-clients.js';
import { createReceiver, type Receiver } from './inbound/receive.js';
import { createRouter as createInboundRouter } from './inbound/routing.js';
import { storeMessages } from './inbound/store.js';
import { systemClock, type Clock } from './lib/clock.js';
import { scheduleCron } from './lib/cron.js';
import { createResolver, type DnsResolver } from './lib/dns.js';
import { createChangeFeed, type ChangeFeed } from './cluster/change-feed.js';
import { loadBounceRules, type BounceRules } from './channels/email/bounce-rules.js';
import { createDestinations, type Destinations } from './channels/email/destinations.js';
import { createAdaptiveBackoff } from './channels/email/adaptive-backoff.js';
import { createWarmUp, type WarmUp } from './channels/email/warm-up.js';
import { createClusterJobs } from './cluster/jobs.js';
import { createBudgets, type Budgets } from './cluster/budgets.js';
import { createNodeRegistry, type NodeRegistry } from './cluster/nodes.js';
import { claimsByNode, releaseNodeLeases } from './outbound/queue.js';
import { createIds, type Ids } from './lib/ids.js';
import { createLogger, type Logger } from './lib/logger.js';
import { createSecretBox, loadSecretsKey } from './lib/secret-box.js';
import { createWorker, type Worker } from './lib/worker.js';
import { DAILY_JOBS, WORKERS, type JobServices } from './jobs.js';
import { listening, purgeSchedule } from './start-up-checks.js';
import { createMessageChecks } from './outbound/checks/checks.js';
import { createLedger, type Ledger } from './messages/ledger.js';
import { createMetrics } from './metrics/metrics.js';
import { createMetricsServer } from './metrics/server.js';
import { createOutbound, DISPATCHER_WORKER, type Outbound } from './outbound/outbound.js';
import { createSmtpListener, type SmtpListener } from './smtp/listener.js';
import { createSubmissionListener, type SubmissionListener } from './smtp/submission.js';
import { createCredentials } from './submission/credentials.js';
import { createSmtpCredentialStore, type SmtpCredentialStore } from './submission/smtp-credentials.js';
import { createSubmission } from './submission/submission.js';
import { createAuthThrottle } from './submission/throttle.js';
import { currentCertificate, loadTls } from './smtp/self-signed.js';
import { createSuppressionStore, type SuppressionStore } from './suppressions/store.js';
import { createSuppressHook, createSuppressionCheck } from './outbound/suppression-hooks.js';
import { createTemplateStore, type TemplateStore } from './templates/store.js';
import { createWebhooks, type Webhooks } from './webhooks/webhooks.js';
import { createAuditLog, type AuditLog } from './workspaces/audit.js';
import { createKeyStore, type KeyStore } from './workspaces/keys.js';
import { createOperatorStore, type OperatorStore } from './workspaces/operators.js';
import { createPasskeys } from './workspaces/passkeys.js';
import { createSecondFactors, type SecondFactors } from './workspaces/second-factor.js';
import { createSessionStore, type SessionStore } from './workspaces/sessions.js';
import { createSingleSignOn } from './workspaces/sso.js';
import { createWorkspaceStore, type WorkspaceStore } from './workspaces/workspaces.js';

export interface AppOptions {
  config: Config;
  clock?: Clock;
  ids?: Ids;
  log?: Logger;
  dns?: DnsResolver;
  /** Database to use instead of the one the config names (tests share a prepared handle). */
  database?: DatabaseHandle;
}

export interface App extends Deps {
  workspaces: WorkspaceStore;
  keys: KeyStore;
  /** SMTP credentials: user names and secrets for AUTH on the submission ports. */
  smtpCredentials: SmtpCredentialStore;
  /** The dashboard's people, their sessions and the audit log of what they did. */
  operators: OperatorStore;
  sessions: SessionStore;
  /** Operators' authenticator apps and recovery codes, and the box's rule requiring them. */
  factors: SecondFactors;
  audit: AuditLog;
  /** The only writer of a message's status, timeline and lifecycle events. */
  ledger: Ledger;
  outbound: Outbound;
  suppressions: SuppressionStore;
  /** DSNs and complaints arriving for the bounce domain (the SMTP listener calls it). */
  bounces: BounceHandler;
  /** DMARC and TLS reports mailed to the report address, and their summaries. */
  reports: Reports;
  templates: TemplateStore;
  connections: ConnectionStore;
  /** Live transports for sms, push and web-push, routed through each workspace's connection. */
  channelTransports: ConnectionTransports;
  domains: DomainStore;
  /** The MTA-STS policies served for custom domains, and their modes. */
  mtaSts: MtaStsPolicies;
  /** `postern doctor` and the domain checks of the API. */
  doctor: Doctor;
  inbound: { addresses: AddressStore; messages: ReceivedReader; receiver: Receiver };
  webhooks: Webhooks;
  forwarding: Forwarding;
  /** This process among the nodes sharing the database. */
  nodes: NodeRegistry;
  /** The daily jobs scheduled for `at`, each unless another node ran it; returns those this node ran. */
  runDailyJobs(at: Date): Promise<string[]>;
  /** How SMTP replies and DSNs are judged (bounce rules). */
  bounceRules: BounceRules;
  /** Holds, back-offs and counts per destination domain of email. */
  destinations: Destinations;
  /** Rate budgets per key (cluster/budgets.ts). */
  budgets: Budgets;
  /** Warm-up of source addresses; null when delivery.warmUp.enabled is off. */
  warmUp: WarmUp | null;
  workers: Worker[];
  /** The URL clients and recipients reach the HTTP listener on (config, or derived after listen). */
  publicUrl(): string;
  /** Every HTTP route (method and path pattern). */
  routes(): RouteEntry[];
  /** The declared routers as mounted (http/routes/registry.ts), each with its routes relative to its mount. */
  routers(): { name: string; mount: Mount; routes: RouteEntry[] }[];
  /**
   * The ports listened on; `metrics` is null when `metrics.enabled` is false, `submission` when
   * `submission.enabled` is false (its `tlsPort` when `submission.tlsPort` is 0).
   */
  /** Certificates from ACME: what is kept, what is due, renewing and revoking (certificates/). */
  certificates: Certificates;
  start(): Promise<{
    http: number;
    https: number | null;
    smtp: number;
    metrics: number | null;
    submission: { port: number; tlsPort: number | null } | null;
  }>;
  stop(): Promise<void>;
}

export async function createApp(options: AppOptions): Promise<App> {
  const { config } = options;
  // Checked before anything opens: a bad expression is a setting to fix, not a crash later.
  const purgeFields = purgeSchedule(config.inbound.purgeCron);

  // Storage and infrastructure.
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? createIds(() => clock.now().getTime());
  const log = options.log ?? createLogger(config.log.level);
  const dns = options.dns ?? createResolver(config.dns.servers, config.dns.timeout);
  const handle =
    options.database ??
    openDatabase(databaseTarget(config), {
      checkpointThread: true,
      onCheckpointLost: (err) => log.error({ err }, 'the WAL checkpoint thread stopped: SQLite checkpoints in its commits again'),
    });
  await migrateToLatest(handle.db);
  const box = createSecretBox(loadSecretsKey(config));
  // DKIM keys stored before they were sealed at rest are sealed now (idempotent: none are left).
  await sealPlaintextDkimKeys(handle.db, box);
  const bus = createEventBus();
  // Metrics (metrics/): built only when enabled; the modules below get plain observe callbacks.
  // The node gauges read the node registry's list (late-bound: the registry is made below).
  const metrics = config.metrics.enabled
    ? createMetrics({
        db: handle.db,
        config,
        now: () => clock.now(),
        nodes: () => nodes.list(),
        ...(config.acme.enabled ? { certificates: () => certificates.list() } : {}),
      })
    : null;
  const writes = createWriteBatcher(handle.db, handle.dialect, {
    windowMs: config.dispatcher.commitWindow,
    observe: metrics ? (s) => metrics.commit('writes', s) : undefined,
  });
  const budgets = createBudgets({ databaseUrl: handle.url, redisUrl: config.redisUrl || undefined, clock, log });
  const deps: Deps = { config, db: handle.db, dialect: handle.dialect, writes, clock, ids, log, dns, bus, budgets, box };
  // Late-bound: the derived public URL needs the port known only after listen().
  const publicUrl = () => app.publicUrl();

  // Domain modules.
  const workspaces = createWorkspaceStore(deps);
  const keys = createKeyStore({ ...deps, cacheTtlMs: config.auth.cacheTtl });
  const smtpCredentials = createSmtpCredentialStore(deps);
  const templates = createTemplateStore(deps);
  // On PostgreSQL, what this node changes reaches the other nodes' tails (cluster/change-feed.ts),
  // once the daemon started it.
  let feed: ChangeFeed | null = null;
  const ledger = createLedger({
    ...deps,
    observe: metrics ? (o) => metrics.message(o) : undefined,
    share: handle.dialect === 'postgres' ? (ref) => feed?.changed(ref) : undefined,
  });
  const suppressions = createSuppressionStore(deps);
  const domains = createDomainStore(deps);
  const doctor = createDoctor({
    ...deps,
    // The certificate STARTTLS presents: ACME's for `hostname` once there is one, else the files or the self-signed one.
    certificate: () =>
      config.acme.enabled && served.has(config.hostname)
        ? { pem: String(served.defaultPair().cert), configured: true }
        : currentCertificate({ dataDir: config.dataDir, certFile: config.smtp.tlsCert, keyFile: config.smtp.tlsKey }),
    // The policies Postern serves, fetched as delivery fetches any domain's (delivery.mtaSts.*).
    fetchPolicy: policyFetch(deps),
  });
  const mtaSts = createMtaStsPolicies(deps);
  const addresses = createAddressStore({ ...deps, domains });
  const receivedMessages = createReceivedReader({ ...deps, publicUrl });
  // message.received events name the stored message; their payload is its detail (inbound).
  const webhooks = createWebhooks({
    ...deps,
    eventPayload: async (type, data) => (type === 'message.received' ? receivedMessages.eventPayload(data) : data),
    observe: metrics ? (outcome, s) => metrics.webhook(outcome, s) : undefined,
  });
  const threads = createDeliveryThreads({ threads: config.dispatcher.renderThreads, log });
  // This process in the cluster: its id prefixes the dispatcher's leases (cluster/nodes.ts).
  const nodes = createNodeRegistry({
    ...deps,
    id: ids.uuid(),
    releaseClaims: (node) => releaseNodeLeases(handle.db, node),
    countClaims: () => claimsByNode(handle.db, handle.dialect),
    // Late-bound: the dispatcher is made with `outbound` below; no beat runs before start().
    inFlight: () => outbound.inFlight(),
  });
  // Certificates from ACME (certificates/): kept in the database, served by every listener with TLS.
  const certificateStore = createCertificateStore(deps);
  const served = createServedCertificates({
    store: certificateStore,
    hostname: config.hostname,
    fallback: () =>
      loadTls({
        dataDir: config.dataDir,
        hostname: config.hostname,
        certFile: config.smtp.tlsCert,
        keyFile: config.smtp.tlsKey,
        now: clock.now(),
      }),
    reloadMs: config.acme.reloadInterval,
    log,
  });
  const certificates = createCertificates({
    ...deps,
    store: certificateStore,
    served,
    nodeId: nodes.id,
    policyHosts: () => mtaSts.servedHosts(),
  });
  const outbound = createOutbound({ ...deps, ledger, threads, templates, nodeId: nodes.id });
  const forwarding = createForwarding(deps, outbound);

  // Channels: email as the config says; sms, push and web-push through provider connections.
  const emailTokens = createTokenSource(deps);
  // How SMTP replies and DSNs are judged, and what each destination domain came to.
  const bounceRules = loadBounceRules(config.delivery.bounceRules, log, clock);
  const destinations = createDestinations({
    ...deps,
    backoff: { minMs: config.delivery.backoff.min, maxMs: config.delivery.backoff.max },
    adaptive: createAdaptiveBackoff({
      ...deps,
      settings: config.delivery.adaptiveBackoff,
      domainRates: config.delivery.domainRates,
      maxConnectionsPerHost: config.delivery.maxConnectionsPerHost,
    }),
  });
  const warmUp = config.delivery.warmUp.enabled
    ? createWarmUp({ ...deps, settings: config.delivery.warmUp, sources: Object.keys(config.delivery.sources) })
    : null;
  outbound.registerTransport(
    'email',
    createEmailTransport({
      ...deps,
      suppressions,
      publicUrl,
      tokens: emailTokens,
      offload: threads,
      source: forwarding.source,
      rules: bounceRules,
      destinations,
      ...(warmUp ? { warmUp } : {}),
      hostShare: (cap) => nodes.shareOf(cap),
    }),
  );
  // Provider URLs and web-push endpoints pass the SSRF guard with the channels' own policy.
  const channelSsrf = channelSsrfPolicy(config.channels);
  const connections = createConnectionStore({ ...deps, ssrf: channelSsrf });
  const channelTransports = createConnectionTransports(connections, {
    clock,
    log,
    publicUrl,
    timeoutMs: config.channels.timeout,
    dns,
    ssrf: channelSsrf,
  });
  for (const channel of CONNECTION_CHANNELS) outbound.registerTransport(channel, channelTransports.router(channel));
  outbound.addHoldCheck(createSuppressionCheck(suppressions, { together: handle.dialect === 'postgres' }));
  outbound.addSuppressHook(createSuppressHook(suppressions));
  outbound.addAcceptCheck(createSenderCapsCheck(deps));
  outbound.addAcceptCheck(createCustomDomainPlanCheck(deps));
  const bounces = createBounceHandler({
    ...deps,
    ledger,
    suppressions,
    bounceDomain: bounceDomainOf(config),
    forwards: forwarding.bounces,
    rules: bounceRules,
    ...(warmUp ? { reported: (id: string, what: 'complained' | 'bounced') => warmUp.report(id, what) } : {}),
  });
  // DMARC and TLS reports mailed to the report address; "own" sources are the box's public addresses.
  const reports = createReports({
    ...deps,
    ownAddresses: () => config.doctor.publicIps,
    maxRows: config.reports.maxRows,
    hostname: config.hostname,
    inboundTlsFlushMs: config.reports.inboundTlsFlush,
  });
  // Provider status callbacks (Twilio, HTTP gateway) move messages through this sink.
  const providerStatus = createProviderStatusSink(ledger);

  // Receiving: verification and parsing on `inbound.analysisThreads` threads (an injected resolver
  // cannot cross into a thread, so then they run on the event loop), stored a batch at a time.
  const analyzer = createAnalyzer({
    threads: config.inbound.analysisThreads,
    dns,
    thread: options.dns ? null : { dnsServers: config.dns.servers, dnsTimeoutMs: config.dns.timeout },
    youngGenerationMb: config.memory.analysisYoungGenerationMb,
  });
  // Lingering for a batch pays only while commits hold up verification on the same loop.
  const committer = createBatchCommitter(handle.db, handle.dialect, {
    storeBatch: storeMessages,
    enabled: config.inbound.groupCommit,
    maxBatch: 64,
    maxLingerMs: analyzer.threaded ? 0 : 10,
    observe: metrics ? (s) => metrics.commit('inbound', s) : undefined,
  });
  const receiver = createReceiver({
    ...deps,
    committer,
    analyzer,
    scanner: createScanner(deps),
    observe: metrics ? (v) => metrics.verification(v) : undefined,
  });

  // The checks of a message (HTML, links, spam score, headers): test-key email automatically, any on demand.
  const emailSource = createEmailSource({ ...deps, publicUrl, tokens: emailTokens });
  const messageChecks = createMessageChecks({ ...deps, emailSource, publicUrl });

  const passedClients = config.smtp.greetingPassTtl > 0 ? createPassedClients({ ...deps, ttlMs: config.smtp.greetingPassTtl }) : null;

  // Background workers and daily jobs, as jobs.ts declares them.
  const jobServices: JobServices = {
    ...deps,
    outbound,
    webhooks,
    forwarding,
    messageChecks,
    received: receivedMessages,
    domains,
    passedClients,
  };
  const workers = WORKERS.map((entry) => {
    const worker = createWorker(entry.spec(jobServices), log);
    entry.attach?.(jobServices, worker);
    return worker;
  });

  // Adapters: the routers http/routes/registry.ts declares, built from the services above.
  const routeServices: RouteServices = {
    ...deps,
    outbound,
    ledger,
    messageChecks,
    templates,
    suppressions,
    connections,
    domains,
    doctor,
    addresses,
    received: receivedMessages,
    forwarding,
    webhooks: webhooks.endpoints,
    smtpCredentials,
    reports,
    destinations,
    nodes,
    mtaSts,
    certificates,
    emailTokens,
    providerStatus,
    publicUrl,
    wakeDispatcher: () => workers.find((w) => w.name === DISPATCHER_WORKER)?.wake(),
  };
  const routers = buildRouters(routeServices);
  const mounted = (mount: Mount) => routers.filter((r) => r.mount === mount).map((r) => r.router);
  // The dashboard: operators, their sessions and the audit log, and the adapter over the same modules.
  const operators = createOperatorStore(deps);
  const factors = createSecondFactors(deps);
  const passkeys = createPasskeys(deps);
  const sso = createSingleSignOn({ ...deps, operators });
  const sessions = createSessionStore({ ...deps, operators, factors });
  const audit = createAuditLog(deps);
  const dashboard = dashboardRoutes({
    config,
    clock,
    log,
    db: handle.db,
    operators,
    sessions,
    factors,
    passkeys,
    sso,
    audit,
    workspaces,
    keys,
    smtpCredentials,
    connections,
    outbound,
    received: receivedMessages,
    templates,
    suppressions,
    webhooks: webhooks.endpoints,
    nodes,
    publicUrl,
    submissionPorts: () => submissionPorts,
    emailSource,
    warmUp,
    ...(config.acme.enabled ? { certificateProblems: () => certificates.problems() } : {}),
  });
  const sessionAuth = sessionPrincipal({ sessions, workspaces, audit });
  const httpApp = createHttpApp({
    config,
    clock,
    log,
    keys,
    budgets,
    v1: mounted('v1'),
    v1Streams: mounted('v1-stream'),
    open: mounted('open'),
    dashboard,
    sessionAuth,
    vendors: VENDOR_APIS.map((v) => v.api(routeServices)),
    readiness: () => readiness(),
    httpsRedirect:
      config.https.enabled && config.https.redirectHttp
        ? { port: () => httpsPort, except: [ACME_CHALLENGE_PATH, MTA_STS_PATH] }
        : undefined,
    observe: metrics ? (method, route, status, s) => metrics.http(method, route, status, s) : undefined,
  });
  const httpServer = http.createServer(httpApp);
  httpServer.keepAliveTimeout = 65_000;
  // HTTPS (https.*): the same app with the ACME certificate, or the fallback until there is one.
  const httpsListener = config.https.enabled
    ? createHttpsListener({
        app: httpApp,
        served,
        log,
        challenge: config.acme.enabled && config.acme.challenge === 'tls-alpn-01' ? (token) => certificates.challenge(token) : undefined,
      })
    : null;
  // The listeners with TLS present the ACME certificates once ACME is on.
  const tlsCertificates = config.acme.enabled ? served : undefined;
  const smtp: SmtpListener = createSmtpListener({
    config,
    log,
    clock,
    dns,
    passedClients,
    certificates: tlsCertificates,
    router: createInboundRouter(deps),
    receiver,
    bounces,
    reports: reports.inbox,
    tlsSessions: (outcome) => reports.inboundTls.count(outcome),
    observe: metrics
      ? { session: () => metrics.smtpSession(), accepted: () => metrics.inboundAccepted(), rejected: (r) => metrics.inboundRejected(r) }
      : undefined,
  });
  // SMTP submission (off by default): applications send through the same accept path as the API.
  const submissionListener: SubmissionListener | null = config.submission.enabled
    ? createSubmissionListener({
        config,
        log,
        clock,
        certificates: tlsCertificates,
        observe: metrics
          ? {
              session: (port) => metrics.submissionSession(port),
              auth: (outcome) => metrics.submissionAuth(outcome),
              accepted: (recipients) => metrics.submissionAccepted(recipients),
              rejected: (reason) => metrics.submissionRejected(reason),
            }
          : undefined,
        submission: createSubmission({
          ...deps,
          outbound,
          suppressions,
          credentials: createCredentials({
            keys,
            smtpCredentials,
            audit,
            throttle: createAuthThrottle(deps, {
              windowMs: config.submission.authFailureWindow,
              freePerUser: config.submission.authFailuresPerUser,
              freePerAddress: config.submission.authFailuresPerAddress,
            }),
          }),
        }),
      })
    : null;
  const metricsServer = metrics
    ? createMetricsServer(metrics.registry, { token: config.metrics.token }, (err) => log.error({ err }, 'collecting metrics failed'))
    : null;
  // Daily jobs (node-cron's expression, lib/cron.ts's timer), each run by one node of a cluster
  // (cluster/jobs.ts); tests call runDailyJobs() with a test clock's time.
  const jobs = createClusterJobs({ ...deps, nodeId: nodes.id });
  const runDailyJobs = async (at: Date): Promise<string[]> => {
    const ran: string[] = [];
    for (const job of DAILY_JOBS) {
      try {
        if (await jobs.once(job.name, at, () => job.run(jobServices))) ran.push(job.name);
      } catch (err) {
        log.error({ err, job: job.name }, 'daily job failed');
      }
    }
    return ran;
  };
  let purgeTask: { stop(): unknown } | null = null;

  let httpPort = config.http.port;
  // The HTTPS port as listened on, null while HTTPS is off or not yet listening.
  let httpsPort: number | null = null;
  // The submission ports as listened on (config until then; a test's port 0 becomes the real one).
  let submissionPorts: { port: number; tlsPort: number | null } | null = config.submission.enabled
    ? { port: config.submission.port, tlsPort: config.submission.tlsPort || null }
    : null;
  let stopping: Promise<void> | null = null;

  // GET /readyz: the database answers (within 2 s), the listeners accept (metrics too when enabled), this build's migrations
  // are all applied, and the node is not stopping (so a load balancer drains it first).
  const readiness = async (): Promise<Readiness> => {
    const reasons: string[] = [];
    let database = 'ok';
    try {
      await Promise.race([
        sql`SELECT 1`.execute(handle.db),
        new Promise((_resolve, reject) => setTimeout(() => reject(new Error('no answer within 2 s')), 2_000).unref()),
      ]);
    } catch (err) {
      database = (err as Error).message;
      reasons.push(`the database does not answer: ${database}`);
    }
    let pending: string[] = [];
    if (database === 'ok') {
      pending = await pendingMigrations(handle.db).catch(() => []);
      if (pending.length) reasons.push(`migrations not applied: ${pending.join(', ')}`);
    }
    const listening = {
      http: httpServer.listening,
      smtp: smtp.listening(),
      ...(submissionListener ? { submission: submissionListener.listening() } : {}),
      ...(metricsServer ? { metrics: metricsServer.listening } : {}),
    };
    if (!listening.http) reasons.push('the HTTP listener is not up');
    if (!listening.smtp) reasons.push('the SMTP listener is not up');
    if (submissionListener && !submissionListener.listening()) reasons.push('the submission listener is not up');
    if (metricsServer && !metricsServer.listening) reasons.push('the metrics listener is not up');
    if (httpsListener && !httpsListener.server.listening) reasons.push('the HTTPS listener is not up');
    if (stopping) reasons.push('stopping');
    // Certificates failing to renew are detail, not unreadiness: the one served meanwhile still works.
    const certificateProblems = config.acme.enabled && database === 'ok' ? await certificates.problems().catch(() => []) : [];
    return {
      ready: reasons.length === 0,
      reasons,
      checks: {
        database,
        migrationsPending: pending,
        ...listening,
        ...(httpsListener ? { https: httpsListener.server.listening } : {}),
        ...(config.acme.enabled ? { certificates: certificateProblems } : {}),
        stopping: stopping !== null,
      },
    };
  };

  const app: App = {
    ...deps,
    workspaces,
    keys,
    smtpCredentials,
    operators,
    sessions,
    factors,
    audit,
    ledger,
    outbound,
    suppressions,
    bounces,
    reports,
    templates,
    connections,
    channelTransports,
    domains,
    mtaSts,
    doctor,
    inbound: { addresses, messages: receivedMessages, receiver },
    webhooks,
    forwarding,
    nodes,
    runDailyJobs,
    bounceRules,
    destinations,
    budgets,
    warmUp,
    workers,
    routes: () => listRoutes(httpApp),
    routers: () => routers.map(({ name, mount, router }) => ({ name, mount, routes: listRoutes(router) })),
    certificates,
    publicUrl: () => derivePublicUrl(config, httpPort, httpsPort),
    async start() {
      // Budgets shared in Redis from the first request (cluster/budgets.ts).
      await budgets.ready();
      // The listeners first: a port in use stops the start before any worker runs.
      await listening(
        'http',
        config.http,
        () =>
          new Promise<void>((resolve, reject) => {
            httpServer.once('error', reject);
            httpServer.listen(config.http.port, config.http.host, () => {
              httpServer.off('error', reject);
              resolve();
            });
          }),
      );
      httpPort = (httpServer.address() as AddressInfo).port;
      httpsPort = httpsListener ? await listening('https', config.https, () => listen(httpsListener.server, config.https)) : null;
      const smtpPort = await listening('smtp', config.smtp, () => smtp.listen());
      submissionPorts = submissionListener
        ? await listening('submission', config.submission, () => submissionListener.listen(), ['submission.port', 'submission.tlsPort'])
        : null;
      const metricsPort = metricsServer ? await listening('metrics', config.metrics, () => listen(metricsServer, config.metrics)) : null;
      metrics?.collectProcessMetrics();
      const otherForm = await domains.sharedDomainsOfOtherForm();
      if (otherForm.length > 0) {
        log.info(
          { domains: otherForm.slice(0, 10), count: otherForm.length, form: `{slug}.in.${config.sharedInboundDomain}` },
          'shared domains created under another form keep receiving; new workspaces receive on the form shown (see CHANGELOG 0.2.0)',
        );
      }
      await nodes.start();
      const target = databaseTarget(config);
      if (handle.dialect === 'postgres' && target.dialect === 'postgres') {
        // A routing change from another node is published here as if it were local; `echo` keeps
        // it from being sent back out.
        let echo = false;
        feed = await createChangeFeed({
          url: target.url,
          nodeId: nodes.id,
          log,
          now: () => clock.now().getTime(),
          onChanges: (refs) =>
            void ledger.remote(refs).catch((err: unknown) => log.warn({ err }, 'change feed: reading changes back failed')),
          onResumed: (since) =>
            void ledger
              .resync(new Date(since).toISOString())
              .catch((err: unknown) => log.warn({ err }, 'change feed: reading back what was missed failed')),
          onRouting: () => {
            echo = true;
            try {
              bus.publish('domains.changed', null);
            } finally {
              echo = false;
            }
          },
        });
        bus.subscribe('domains.changed', () => {
          if (!echo) feed?.routingChanged();
        });
      }
      for (const w of workers) w.start();
      certificates.start();
      purgeTask = scheduleCron(purgeFields, () => void runDailyJobs(new Date()));
      return { http: httpPort, https: httpsPort, smtp: smtpPort, metrics: metricsPort, submission: submissionPorts };
    },
    stop() {
      // Stop accepting → let long-lived responses end → drain workers → close the database.
      stopping ??= (async () => {
        // No new work is claimed from the moment the stop begins; what is under way drains below,
        // within shutdown.drainSeconds of this moment (closing the listeners counts against it).
        outbound.stopClaiming();
        const drainUntil = Date.now() + config.shutdown.drainSeconds * 1000;
        await nodes.stopping();
        bus.publish('app.stopping', null);
        purgeTask?.stop();
        const httpClosed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        httpServer.closeIdleConnections();
        const grace = setTimeout(() => {
          httpServer.closeAllConnections();
          httpsListener?.https.closeAllConnections();
        }, 5_000);
        const httpsClosed = httpsListener?.server.listening
          ? new Promise<void>((resolve) => httpsListener.server.close(() => resolve()))
          : null;
        httpsListener?.https.closeIdleConnections();
        const metricsClosed = metricsServer?.listening ? new Promise<void>((resolve) => metricsServer.close(() => resolve())) : null;
        metricsServer?.closeAllConnections();
        await Promise.all([
          httpServer.listening ? httpClosed : Promise.resolve(),
          httpsClosed,
          smtp.close(),
          submissionListener?.close(),
          metricsClosed,
        ]);
        await analyzer.close();
        clearTimeout(grace);
        await certificates.stop();
        for (const w of workers) await w.stop();
        await outbound.stop(Math.max(0, drainUntil - Date.now()));
        await threads.close();
        await channelTransports.close();
        await messageChecks.close();
        await webhooks.close();
        await destinations.close();
        // After the SMTP listener closed: its last sessions are counted.
        await reports.inboundTls.close();
        await nodes.stop().catch((err: unknown) => log.warn({ err }, 'could not remove this node from the node list'));
        await feed?.close();
        await budgets.close();
        if (!options.database) await handle.close();
      })();
      return stopping;
    },
  };
  return app;
}

/** Listens on host:port; resolves with the port bound (0 picks one). */
function listen(server: net.Server, at: { host: string; port: number }): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
