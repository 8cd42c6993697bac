// Prometheus metrics: the only module that imports prom-client. The domain modules know nothing of
// it; each exposes a small `observe` callback (the ledger's commits, the HTTP app's responses, the
// group commit's transactions, the SMTP listener's verdicts, the receiver's verification results,
// the webhook deliverer's attempts) and app.ts wires those callbacks to the functions here.
//
// Per-node series carry no node label: Prometheus adds `instance` when it scrapes each node. The
// queue gauges are read from the database at scrape time, so every node reports the same cluster
// wide numbers: they carry `scope="cluster"` to say so (take max(), never sum(), across nodes).
// So do the node gauges (`postern_node_*{node}`, `postern_nodes{health}`): every node reports every
// node, as the nodes table has them; when the database cannot be read they keep their last values
// and the scrape still answers.
//
// Cardinality stays bounded: HTTP requests are labelled by route pattern (never the raw path),
// destination domains by the first `metrics.topDomains` domains this node sends to (the rest are
// `other`), and every other label takes values from a closed list.
import { sql } from 'kysely';
import client from 'prom-client';
import { specOf } from '../channels/index.js';
import type { NodeView } from '../cluster/index.js';
import { NODE_HEALTHS } from '../contract/cluster-schemas.js';
import type { Config } from '../config.js';
import { type Db, isDatabaseUnavailable, isSet } from '../db/index.js';
import type { LedgerObservation } from '../messages/index.js';
import type { Channel } from '../contract/channels.js';

/** The message outcomes counted by postern_messages_total{event}. */
type MessageEvent =
  'accepted' | 'delivered' | 'sent' | 'deferred' | 'failed' | 'bounced' | 'complained' | 'suppressed' | 'opted_out' | 'blocked';

const FINAL: Record<string, MessageEvent | undefined> = {
  delivered: 'delivered',
  sent: 'sent',
  failed: 'failed',
  suppressed: 'suppressed',
  opted_out: 'opted_out',
  blocked: 'blocked',
};
const ATTEMPT_RESULTS = new Set(['delivered', 'sent', 'failed', 'suppressed']);
const QUEUE_STATUSES = ['scheduled', 'queued', 'rendered', 'dispatched'] as const;
const VERIFICATION_CHECKS = ['spf', 'dkim', 'dmarc', 'arc', 'spam', 'virus'] as const;
// Results outside this list (mailauth may grow some) are counted as `other`.
const VERIFICATION_RESULTS = new Set([
  'pass',
  'fail',
  'softfail',
  'neutral',
  'none',
  'temperror',
  'permerror',
  'policy',
  'ham',
  'spam',
  'clean',
  'infected',
]);
// Seconds: 5 ms to 2 minutes covers a loopback SMTP hand-over and a slow remote MX alike.
// The policy that governed a delivery's TLS, from the TLS part of its timeline note
// (transport-security.ts describeTls): `TLS TLSv1.3 …, DANE-EE 3 1 1` → dane.
function policyOf(how: string): 'dane' | 'mta-sts' | 'opportunistic' | 'none' {
  if (how === 'no TLS') return 'none';
  if (how.includes('DANE')) return 'dane';
  if (how.includes('MTA-STS')) return 'mta-sts';
  return 'opportunistic';
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export interface Metrics {
  readonly registry: client.Registry;
  /**
   * Adds Node's default process metrics (event-loop lag, heap, GC). Called when the daemon starts
   * serving: their GC observer and event-loop monitor are not for the CLI, which builds the same graph.
   */
  collectProcessMetrics(): void;
  /** The ledger's observer: message outcomes, attempt latency, TLS of delivered email. */
  message(o: LedgerObservation): void;
  /** One HTTP response: the route pattern (`unmatched` when no route answered). */
  http(method: string, route: string, status: number, seconds: number): void;
  /** One committed transaction of the group commit (`writes`) or the inbound store (`inbound`). */
  commit(batcher: 'writes' | 'inbound', seconds: number): void;
  /** An SMTP connection opened. */
  smtpSession(): void;
  /** An inbound transaction accepted (250 after DATA). */
  inboundAccepted(): void;
  /** An inbound command refused, by the reason of its verdict (smtp/replies.ts). */
  inboundRejected(reason: string): void;
  /** A connection opened to a submission listener (`submission`: 587, `submissions`: 465). */
  submissionSession(port: 'submission' | 'submissions'): void;
  /** One AUTH on a submission listener: accepted, failed (wrong or revoked secret), or throttled. */
  submissionAuth(outcome: 'ok' | 'failed' | 'throttled'): void;
  /** A submitted message accepted for every recipient (250 after DATA). */
  submissionAccepted(recipients: number): void;
  /** A submission command refused, by the reason of its verdict (smtp/replies.ts). */
  submissionRejected(reason: string): void;
  /** The SPF/DKIM/DMARC/ARC results of one received message. */
  verification(verdicts: Partial<Record<(typeof VERIFICATION_CHECKS)[number], { result: string }>>): void;
  /** One webhook attempt: succeeded, retrying (failed, will be retried) or failed (gave up). */
  webhook(outcome: 'succeeded' | 'retrying' | 'failed', seconds: number): void;
}

/**
 * The registry with every series; `db` is read at scrape time for the queue gauges, `nodes` (the
 * node registry's list) for the node gauges.
 */
export function createMetrics(deps: {
  db: Db;
  config: Pick<Config, 'metrics'>;
  now?: () => Date;
  nodes?: () => Promise<NodeView[]>;
  /** The ACME certificates kept (cluster wide), read at scrape time; absent while ACME is off. */
  certificates?: () => Promise<{ name: string; notAfter: string | null; failures: number }[]>;
  /** Wall-clock now in ms, for heartbeat ages (node liveness is wall-clock time, not the application clock). */
  wallNow?: () => number;
}): Metrics {
  const registry = new client.Registry();
  const now = deps.now ?? (() => new Date());
  let processMetrics = false;

  const messages = new client.Counter({
    name: 'postern_messages_total',
    help: 'Outbound message events on this node, by event, channel, environment and destination domain (top N, else other)',
    labelNames: ['event', 'channel', 'environment', 'domain'] as const,
    registers: [registry],
  });
  const attempts = new client.Histogram({
    name: 'postern_delivery_attempt_duration_seconds',
    help: 'Time a transport took for one delivery attempt, by channel and result',
    labelNames: ['channel', 'result'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const tls = new client.Counter({
    name: 'postern_email_tls_total',
    help: 'Email recipients accepted by a remote server, by whether the session used TLS (tls) or not (plaintext) and the policy that governed it',
    labelNames: ['result', 'policy'] as const,
    registers: [registry],
  });
  const failures = new client.Counter({
    name: 'postern_delivery_failures_total',
    help: 'Email recipients a remote server refused, by the bounce rules category and whether the refusal failed or deferred them',
    labelNames: ['category', 'outcome'] as const,
    registers: [registry],
  });
  const httpRequests = new client.Counter({
    name: 'postern_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new client.Histogram({
    name: 'postern_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const commits = new client.Histogram({
    name: 'postern_db_commit_duration_seconds',
    help: 'Time of one committed database transaction of the group commit (writes) or the inbound store (inbound)',
    labelNames: ['batcher'] as const,
    buckets: COMMIT_BUCKETS,
    registers: [registry],
  });
  const smtpSessions = new client.Counter({
    name: 'postern_smtp_sessions_total',
    help: 'SMTP connections opened to the inbound listener',
    registers: [registry],
  });
  const inboundAccepted = new client.Counter({
    name: 'postern_inbound_accepted_total',
    help: 'Inbound SMTP transactions accepted (250 after DATA)',
    registers: [registry],
  });
  const inboundRejected = new client.Counter({
    name: 'postern_inbound_rejected_total',
    help: 'Inbound SMTP commands refused, by reason',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const submissionSessions = new client.Counter({
    name: 'postern_submission_sessions_total',
    help: 'Connections opened to the SMTP submission listeners, by port (submission 587, submissions 465)',
    labelNames: ['port'] as const,
    registers: [registry],
  });
  const submissionAuth = new client.Counter({
    name: 'postern_submission_auth_total',
    help: 'AUTH attempts on the submission listeners, by outcome (ok, failed, throttled)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const submissionAccepted = new client.Counter({
    name: 'postern_submission_accepted_total',
    help: 'Submitted messages accepted (250 after DATA, every recipient committed)',
    registers: [registry],
  });
  const submissionRecipients = new client.Counter({
    name: 'postern_submission_recipients_total',
    help: 'Recipients of the accepted submitted messages (one send each)',
    registers: [registry],
  });
  const submissionRejected = new client.Counter({
    name: 'postern_submission_rejected_total',
    help: 'Submission commands refused, by reason',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const verification = new client.Counter({
    name: 'postern_inbound_verification_total',
    help: 'Verification results of received messages, by check (spf, dkim, dmarc, arc) and result',
    labelNames: ['check', 'result'] as const,
    registers: [registry],
  });
  const webhooks = new client.Counter({
    name: 'postern_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome (succeeded, retrying, failed)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const webhookDuration = new client.Histogram({
    name: 'postern_webhook_delivery_duration_seconds',
    help: 'Time of one webhook delivery attempt, by outcome',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });

  // Queue gauges: one query per scrape, cluster-wide (every node sees the same table).
  const queueDepth = new client.Gauge({
    name: 'postern_queue_messages',
    help: 'Messages waiting in the outbound queue, by status; cluster wide (read from the database), so never sum across nodes',
    labelNames: ['status', 'scope'] as const,
    registers: [registry],
  });
  const oldestReady = new client.Gauge({
    name: 'postern_queue_oldest_ready_age_seconds',
    help: 'Age of the oldest message due for an attempt now (0 when none); cluster wide (read from the database)',
    labelNames: ['scope'] as const,
    registers: [registry],
  });
  let queueRead: Promise<void> | null = null;
  const readQueue = async () => {
    const at = now().toISOString();
    const [rows, oldest] = await Promise.all([
      deps.db
        .selectFrom('messages')
        .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
        .where('status', 'in', [...QUEUE_STATUSES])
        .groupBy('status')
        .execute(),
      deps.db
        .selectFrom('messages')
        .select(sql<string | null>`min(due_at)`.as('due'))
        .where('due_at', '<=', at)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', at)]))
        .executeTakeFirst(),
    ]);
    for (const s of QUEUE_STATUSES) queueDepth.set({ status: s, scope: 'cluster' }, Number(rows.find((r) => r.status === s)?.n ?? 0));
    const due = oldest?.due ? new Date(oldest.due).getTime() : null;
    oldestReady.set({ scope: 'cluster' }, due === null ? 0 : Math.max(0, (now().getTime() - due) / 1000));
  };
  // Both gauges' collect() share one read; a second scrape meanwhile waits for the same one.
  // While the database is away the gauges keep their last values and the scrape still answers,
  // so the node's own figures (process, event loop, SMTP) stay visible through the outage.
  const collectQueue = async () => {
    queueRead ??= readQueue()
      .catch((err: unknown) => {
        if (!isDatabaseUnavailable(err)) throw err;
      })
      .finally(() => (queueRead = null));
    await queueRead;
  };
  Object.assign(queueDepth, { collect: collectQueue });
  Object.assign(oldestReady, { collect: collectQueue });

  // Node gauges: one read of the node list per scrape, shared by the four.
  const nodeGauge = (name: string, help: string, labelNames: string[]) =>
    new client.Gauge({ name, help, labelNames: [...labelNames, 'scope'], registers: deps.nodes ? [registry] : [] });
  const nodeAge = nodeGauge(
    'postern_node_heartbeat_age_seconds',
    'Seconds since each node last beat; cluster wide (read from the database), so never sum across nodes',
    ['node'],
  );
  const nodeClaimed = nodeGauge(
    'postern_node_claimed',
    'Queue messages each node holds a lease on (claimed, waiting or in flight); cluster wide (read from the database)',
    ['node'],
  );
  const nodeInFlight = nodeGauge(
    'postern_node_in_flight',
    'Deliveries each node has under way, as of its last beat; cluster wide (read from the database)',
    ['node'],
  );
  const nodeCount = nodeGauge(
    'postern_nodes',
    'Nodes by health (ok: beat within two heartbeats, late: within the node timeout, gone: past it); cluster wide',
    ['health'],
  );
  // Every health is always there, 0 until the first read.
  for (const health of NODE_HEALTHS) nodeCount.set({ health, scope: 'cluster' }, 0);
  const wallNow = deps.wallNow ?? Date.now;
  let nodesRead: Promise<void> | null = null;
  const readNodes = async () => {
    let list: NodeView[];
    try {
      list = await deps.nodes!();
    } catch {
      return; // the database is away: the gauges keep their last values, the scrape answers
    }
    // Reset first: a node removed from the table leaves the series.
    for (const g of [nodeAge, nodeClaimed, nodeInFlight, nodeCount]) g.reset();
    const at = wallNow();
    for (const n of list) {
      const labels = { node: n.id, scope: 'cluster' };
      nodeAge.set(labels, Math.max(0, (at - Date.parse(n.heartbeatAt)) / 1000));
      nodeClaimed.set(labels, n.claimed);
      nodeInFlight.set(labels, n.inFlight);
    }
    for (const health of NODE_HEALTHS) nodeCount.set({ health, scope: 'cluster' }, list.filter((n) => n.health === health).length);
  };
  const collectNodes = async () => {
    nodesRead ??= readNodes().finally(() => (nodesRead = null));
    await nodesRead;
  };
  for (const g of [nodeAge, nodeClaimed, nodeInFlight, nodeCount]) Object.assign(g, { collect: collectNodes });

  // Certificates (ACME): when each expires and how many attempts in a row failed; cluster wide.
  const certificateGauge = (name: string, help: string) =>
    new client.Gauge({ name, help, labelNames: ['name', 'scope'], registers: deps.certificates ? [registry] : [] });
  const certificateExpiry = certificateGauge(
    'postern_certificate_expiry_timestamp_seconds',
    'When the certificate Postern keeps for each name expires (Unix time; absent before the first issue); cluster wide',
  );
  const certificateFailures = certificateGauge(
    'postern_certificate_renewal_failures',
    'Failed attempts in a row to obtain or renew the certificate for each name (0 once one succeeds); cluster wide',
  );
  let certificatesRead: Promise<void> | null = null;
  const readCertificates = async () => {
    let list;
    try {
      list = await deps.certificates!();
    } catch {
      return; // the database is away: the gauges keep their last values
    }
    certificateExpiry.reset();
    certificateFailures.reset();
    for (const c of list) {
      const labels = { name: c.name, scope: 'cluster' };
      if (c.notAfter) certificateExpiry.set(labels, Date.parse(c.notAfter) / 1000);
      certificateFailures.set(labels, c.failures);
    }
  };
  const collectCertificates = async () => {
    certificatesRead ??= readCertificates().finally(() => (certificatesRead = null));
    await certificatesRead;
  };
  for (const g of [certificateExpiry, certificateFailures]) Object.assign(g, { collect: collectCertificates });

  // Destinations that throttled (channels/email/adaptive-backoff.ts): the rate and connections they
  // are sent at now, cluster wide; the `metrics.topDomains` slowest only, so the labels stay bounded.
  const paceGauge = (name: string, help: string) =>
    new client.Gauge({ name, help, labelNames: ['domain', 'scope'], registers: [registry] });
  const paceRate = paceGauge(
    'postern_destination_backoff_rate',
    'Messages a minute a destination that throttled is sent at now (adaptive back-off; the slowest metrics.topDomains); cluster wide',
  );
  const paceConnections = paceGauge(
    'postern_destination_backoff_connections',
    'Connections per host a destination that throttled is sent over now (adaptive back-off); cluster wide',
  );
  let paceRead: Promise<void> | null = null;
  const readPace = async () => {
    let rows;
    try {
      rows = await deps.db
        .selectFrom('destination_pace')
        .select(['domain', 'rate', 'connections'])
        .orderBy('rate')
        .orderBy('domain')
        .limit(deps.config.metrics.topDomains)
        .execute();
    } catch {
      return; // the database is away: the gauges keep their last values
    }
    paceRate.reset();
    paceConnections.reset();
    for (const r of rows) {
      const labels = { domain: r.domain, scope: 'cluster' };
      paceRate.set(labels, Number(r.rate));
      paceConnections.set(labels, Number(r.connections));
    }
  };
  const collectPace = async () => {
    paceRead ??= readPace().finally(() => (paceRead = null));
    await paceRead;
  };
  for (const g of [paceRate, paceConnections]) Object.assign(g, { collect: collectPace });

  // Destination domains: the first N this node sends to keep their name, the rest read `other`.
  const topDomains = deps.config.metrics.topDomains;
  const named = new Set<string>();
  const domainLabel = (channel: Channel, recipient: string): string => {
    const domain = specOf(channel).destination(recipient);
    if (domain === null) return 'none';
    if (named.has(domain)) return domain;
    if (named.size < topDomains) {
      named.add(domain);
      return domain;
    }
    return 'other';
  };

  return {
    registry,
    collectProcessMetrics() {
      if (processMetrics) return;
      processMetrics = true;
      client.collectDefaultMetrics({ register: registry });
      // prom-client names these gauges `_total`, which promtool's lint refuses (a counter's suffix);
      // the same numbers are there by type (nodejs_active_handles{type}, …): sum() those instead.
      for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
        registry.removeSingleMetric(name);
      }
    },
    message({ row, from, to, entries }) {
      const labels = {
        channel: row.channel,
        environment: isSet(row.livemode) ? 'live' : 'test',
        domain: domainLabel(row.channel, row.recipient),
      };
      if (from === null) messages.inc({ ...labels, event: 'accepted' });
      const final = from !== to ? FINAL[to] : undefined;
      if (final) messages.inc({ ...labels, event: final });
      let deferred = false;
      for (const e of entries) {
        if (e === 'deferred') deferred = true;
        else if (e.startsWith('bounced: ')) messages.inc({ ...labels, event: 'bounced' });
        else if (e.startsWith('complaint: ')) messages.inc({ ...labels, event: 'complained' });
        else if (row.channel === 'email' && / \[[a-z_]+\]$/.test(e)) {
          // A refusal's note ends with its category (channels/email/attempt.ts recipientNote).
          const refused = /^(?:to|cc|bcc) \S+: (failed|deferred) \(.*\) \[([a-z_]+)\]$/.exec(e);
          if (refused) failures.inc({ category: refused[2], outcome: refused[1] });
        } else if (row.channel === 'email' && /^(to|cc|bcc) \S+: delivered \(/.test(e)) {
          const how = / \((TLS [^()]*|no TLS)\)\)$/.exec(e)?.[1] ?? 'no TLS';
          tls.inc({ result: how === 'no TLS' ? 'plaintext' : 'tls', policy: policyOf(how) });
        }
      }
      if (deferred) messages.inc({ ...labels, event: 'deferred' });
      // An attempt ended: the dispatcher wrote its latency with the outcome (or the deferral).
      if (from === 'dispatched' && row.latency_ms !== null && (deferred || ATTEMPT_RESULTS.has(to))) {
        attempts.observe(
          { channel: row.channel, result: deferred && to === 'dispatched' ? 'deferred' : to },
          Number(row.latency_ms) / 1000,
        );
      }
    },
    http(method, route, status, seconds) {
      httpRequests.inc({ method, route, status: String(status) });
      httpDuration.observe({ method, route }, seconds);
    },
    commit(batcher, seconds) {
      commits.observe({ batcher }, seconds);
    },
    smtpSession: () => smtpSessions.inc(),
    inboundAccepted: () => inboundAccepted.inc(),
    inboundRejected: (reason) => inboundRejected.inc({ reason }),
    submissionSession: (port) => submissionSessions.inc({ port }),
    submissionAuth: (outcome) => submissionAuth.inc({ outcome }),
    submissionAccepted(recipients) {
      submissionAccepted.inc();
      submissionRecipients.inc(recipients);
    },
    submissionRejected: (reason) => submissionRejected.inc({ reason }),
    verification(verdicts) {
      for (const check of VERIFICATION_CHECKS) {
        const result = verdicts[check]?.result ?? 'none';
        verification.inc({ check, result: VERIFICATION_RESULTS.has(result) ? result : 'other' });
      }
    },
    webhook(outcome, seconds) {
      webhooks.inc({ outcome });
      webhookDuration.observe({ outcome }, seconds);
    },
  };
}
