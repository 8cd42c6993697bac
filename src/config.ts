// Configuration: config/default.json holds every setting with its safe default; a `--config FILE`
// is merged over it, and POSTERN_* environment variables over that. The variable for a setting is
// derived from its key path (`delivery.mode` → POSTERN_DELIVERY_MODE), so adding a key to
// default.json and to the schema below is all it takes to make it configurable everywhere.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { deprecatedEnvNames, renamedFromEnv, renameRetrySchedule, renameSettings } from './config-renames.js';
import { parseDuration } from './lib/duration.js';

const hostPort = /^(\[[0-9a-fA-F:]+\]|[0-9.]+|[0-9a-fA-F:]+)(:\d{1,5})?$/;
const port = z.number().int().min(0).max(65535);
const DURATION = /^\d+(ms|s|m|h|d)$/;
const SOURCE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const RATE = /^\d+\/(s|sec|min|h|hour|d|day)$/;

/** An IPv4 or IPv6 address, or a CIDR range of one. */
function isAddressOrRange(v: string): boolean {
  const [address, prefix, ...rest] = v.split('/');
  const family = isIP(address);
  if (!family || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

// Which proxies' X-Forwarded-For the HTTP listener believes (Express's `trust proxy`, docs/install.md):
// none (false), the number of proxies in front, or their addresses, CIDR ranges and proxy-addr's
// names for ranges. Never `true`: Express would then take the left-most address, which the client
// writes itself, and the login throttle and the audit log would see whatever it claims.
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];
const TRUST_PROXY_FORMS =
  'give the number of proxies in front of Postern (1 for one Caddy or nginx), or their addresses and CIDR ranges (["127.0.0.1"], ["10.0.0.0/8"], "loopback"); false trusts none';
const trustProxy = z.unknown().transform((v, ctx): false | number | string[] => {
  if (v === false || v === 0) return false;
  if (v === true) {
    ctx.addIssue({
      code: 'custom',
      message: `true believes every X-Forwarded-For address a client writes and is refused: ${TRUST_PROXY_FORMS}`,
    });
    return z.NEVER;
  }
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 32) return v;
  const list = typeof v === 'string' ? v.split(',').map((s) => s.trim()) : v;
  if (Array.isArray(list) && list.length === 0) return false;
  if (Array.isArray(list)) {
    const bad = list.filter((a) => typeof a !== 'string' || !(isAddressOrRange(a) || PROXY_RANGE_NAMES.includes(a)));
    if (bad.length === 0) return list as string[];
    ctx.addIssue({
      code: 'custom',
      message: `${bad.map((b) => JSON.stringify(b)).join(', ')} is not an address, a CIDR range or ${PROXY_RANGE_NAMES.join('/')}`,
    });
    return z.NEVER;
  }
  ctx.addIssue({ code: 'custom', message: TRUST_PROXY_FORMS });
  return z.NEVER;
});

// A duration setting: a string such as 500ms, 5s, 5m, 2h, 5d, read as milliseconds.
const duration = (bounds: { min?: string; max?: string } = {}) => {
  const min = bounds.min === undefined ? 0 : parseDuration(bounds.min);
  const max = bounds.max === undefined ? Infinity : parseDuration(bounds.max);
  const range = `${bounds.min ?? '0ms'}${bounds.max ? ` to ${bounds.max}` : ' or more'}`;
  return z
    .string()
    .regex(DURATION, 'must be a duration such as 500ms, 5s, 5m, 2h or 5d')
    .transform(parseDuration)
    .refine((ms) => ms >= min && ms <= max, `must be ${range}`);
};

const cap = z.strictObject({ day: z.number().int().min(-1), month: z.number().int().min(-1) });
const plan = z.strictObject({
  messagesPerMonth: z.number().int().min(0),
  templates: z.number().int().min(0),
  customSendingDomain: z.boolean(),
  inboundPerMonth: z.number().int().min(0),
  senderCaps: z.strictObject({ shared: cap, domain: cap }),
});

const settings = z.strictObject({
  dataDir: z.string().min(1),
  databaseUrl: z.string().refine((v) => v === '' || /^(postgres|postgresql|sqlite):/.test(v) || v.startsWith('/') || v.startsWith('.'), {
    message: 'must be empty (SQLite in the data dir), postgres://…, sqlite:PATH or a file path',
  }),
  hostname: z.string().regex(/^[a-zA-Z0-9.-]+$/, 'must be a host name'),
  publicUrl: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]),
  // Where a cluster keeps its shared budgets when not in PostgreSQL (cluster/budgets.ts).
  redisUrl: z.union([z.literal(''), z.url({ protocol: /^rediss?$/ })]),
  sharedInboundDomain: z.string().regex(/^[a-z0-9.-]+\.[a-z0-9-]+$|^[a-z0-9-]+$/, 'must be a lowercase domain name'),
  bounceDomain: z.union([z.literal(''), z.string().regex(/^[a-z0-9.-]+\.[a-z0-9-]+$/, 'must be a lowercase domain name')]),
  http: z.strictObject({
    host: z.string().min(1),
    port,
    bodyLimit: z.string().regex(/^\d+(b|kb|mb)$/, 'must look like 40mb'),
    trustProxy,
  }),
  // Prometheus metrics on a listener of their own (docs/monitoring.md), never beside the API.
  metrics: z.strictObject({
    enabled: z.boolean(),
    host: z.string().min(1),
    port,
    token: z.string(),
    topDomains: z.number().int().min(0).max(200),
  }),
  smtp: z.strictObject({
    host: z.string().min(1),
    port,
    maxSizeBytes: z.number().int().min(1024),
    // The header block of received mail (smtp/header-bounds.ts): Postfix's header_size_limit.
    maxHeaderBytes: z.number().int().min(1024),
    maxHeaderLines: z.number().int().min(10),
    maxClients: z.number().int().min(1),
    maxRecipients: z.number().int().min(1),
    socketTimeout: duration({ min: '1s' }),
    maxConnectionTime: duration({ min: '1s' }),
    proxyProtocol: z.boolean(),
    reverseLookup: z.boolean(),
    tlsCert: z.string(),
    tlsKey: z.string(),
    greetingDelay: duration({ max: '60s' }),
    greetingPassTtl: duration({ max: '30d' }),
    maxConnectionsPerAddress: z.number().int().min(0),
    connectionRatePerAddress: z.string().regex(RATE, 'must look like 300/min'),
    limitExceptions: z.array(z.string().refine(isAddressOrRange, 'must be an IP address or a CIDR range such as 10.0.0.0/8')),
    maxNoops: z.number().int().min(0),
    commandTimeout: duration({ min: '100ms', max: '1h' }),
    postmasterAddress: z.union([z.literal(''), z.email()]),
  }),
  // SMTP submission for applications (docs/submission.md): 587 with STARTTLS before AUTH, 465 with
  // implicit TLS (0: off), AUTH with an SMTP credential or an API key holding the send scope. Off
  // by default. Failed AUTH is counted per user name and per client address over
  // authFailureWindow; past the free failures, each further one doubles the wait before the next
  // attempt is even looked at.
  submission: z.strictObject({
    enabled: z.boolean(),
    host: z.string().min(1),
    port,
    tlsPort: port,
    authFailureWindow: duration({ min: '1s', max: '1d' }),
    authFailuresPerUser: z.number().int().min(1).max(1000),
    authFailuresPerAddress: z.number().int().min(1).max(100000),
  }),
  // HTTPS for the API and the dashboard with the ACME certificate (docs/install.md#https). While it
  // is on, the HTTP listener answers health probes, ACME HTTP-01 and MTA-STS and redirects the rest.
  https: z.strictObject({
    enabled: z.boolean(),
    host: z.string().min(1),
    port,
    redirectHttp: z.boolean(),
  }),
  // Certificates from an ACME CA for `hostname` and each served mta-sts.<domain> (certificates/).
  acme: z.strictObject({
    enabled: z.boolean(),
    directoryUrl: z.url({ protocol: /^https?$/ }),
    email: z.union([z.literal(''), z.email()]),
    challenge: z.enum(['http-01', 'tls-alpn-01']),
    // A CA to trust for the ACME server itself (a private or test CA such as Pebble); empty: the system's.
    caFile: z.string(),
    renewBefore: duration({ min: '1m', max: '3650d' }),
    checkInterval: duration({ min: '1s', max: '1d' }),
    reloadInterval: duration({ min: '1s', max: '1h' }),
  }),
  dns: z.strictObject({
    servers: z.array(z.string().regex(hostPort, 'must be ip or ip:port')),
    timeout: duration({ min: '100ms', max: '60s' }),
    // The resolvers validate DNSSEC and the path to them is trusted: their AD bit is believed (DANE).
    dnssec: z.boolean(),
  }),
  auth: z.strictObject({
    cacheTtl: duration({ max: '60s' }),
  }),
  dashboard: z.strictObject({
    sessionIdle: duration({ min: '1m', max: '30d' }),
    sessionMaxAge: duration({ min: '1m', max: '365d' }),
    setupLinkTtl: duration({ min: '1m', max: '7d' }),
    loginFailureWindow: duration({ min: '1s', max: '1d' }),
    loginFailuresPerAccount: z.number().int().min(1).max(1000),
    loginFailuresPerAddress: z.number().int().min(1).max(100000),
    // Single sign-on through an OpenID provider; off while issuer is empty.
    sso: z.strictObject({
      issuer: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]),
      clientId: z.string().max(500),
      clientSecret: z.string().max(2000),
      name: z.string().min(1).max(40),
      scopes: z.string().regex(/(^|\s)openid(\s|$)/, 'must include openid'),
      roleClaim: z.string().min(1).max(100),
      ownerGroups: z.array(z.string().max(200)),
      memberGroups: z.array(z.string().max(200)),
    }),
  }),
  rateLimit: z.strictObject({
    send: z.number().min(0),
    read: z.number().min(0),
  }),
  dkim: z.strictObject({
    selector: z.string().regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'must be a DNS label'),
    // Key rotation (domains/dkim-rotation.ts, docs/deliverability.md): a new key every `every`
    // (0: only on demand), the old record kept published `overlap` after signing switched.
    rotation: z.strictObject({
      every: duration({ max: '3650d' }),
      overlap: duration({ min: '1d', max: '365d' }),
      ed25519: z.boolean(),
    }),
  }),
  inbound: z.strictObject({
    maxBodyBytes: z.number().int().min(1024),
    retention: duration({ min: '1d' }),
    // A message sent again within this window (same workspace, address, envelope sender,
    // Message-ID and bytes) is not stored again (inbound/store.ts); 0 = every copy is stored.
    retryWindow: duration({ max: '30d' }),
    // Read by node-cron, an adapter's package, so checked where the daemon is put together
    // (purgeSchedule in start-up-checks.ts), before anything opens.
    purgeCron: z.string().min(1),
    groupCommit: z.boolean(),
    analysisThreads: z.number().int().min(0).max(64),
    maxParts: z.number().int().min(10).max(100_000),
    // Spam and virus verdicts (inbound/scan.ts): rspamd's HTTP URL and ClamAV's clamd address
    // (host:port or a socket path); empty: not checked. rejectScore 0: never refuse for spam.
    rspamd: z.strictObject({
      url: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]),
      timeout: duration({ min: '100ms', max: '60s' }),
      rejectScore: z.number().min(0),
    }),
    clamd: z.strictObject({
      address: z.string(),
      timeout: duration({ min: '100ms', max: '60s' }),
      reject: z.boolean(),
    }),
  }),
  // DMARC aggregate reports mailed to the report address (reports/inbox.ts): a report with more
  // records than maxRows is refused (552 5.3.4); the largest real reports hold a few thousand.
  // The inbound STARTTLS counts (reports/inbound-tls.ts) are added to the database every
  // inboundTlsFlush, at shutdown, and before the TLS summary is read.
  reports: z.strictObject({
    maxRows: z.number().int().min(1).max(10_000_000),
    inboundTlsFlush: duration({ min: '1s', max: '1h' }),
  }),
  log: z.strictObject({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  }),
  // Webhook delivery. The default retry schedule adds up to about 28 hours after the first attempt.
  webhooks: z
    .strictObject({
      allowPrivate: z.boolean(),
      allowList: z.array(z.string().min(1)),
      timeout: duration({ min: '100ms', max: '120s' }),
      retrySchedule: z.array(duration()),
      disableAfter: duration(),
      concurrencyPerEndpoint: z.number().int().min(1).max(1000),
      maxInFlight: z.number().int().min(1).max(10000),
      lease: duration({ min: '200ms' }),
      pollInterval: duration({ min: '10ms' }),
      rotationOverlap: duration(),
      fanoutDelay: duration({ max: '1s' }),
    })
    .refine((w) => w.lease > w.timeout, { message: 'lease must exceed timeout', path: ['lease'] }),
  // Forwarding of received mail: the ARC seal's signing domain (empty: `hostname`) and selector,
  // and how many Received headers a message may carry before forwarding it is refused as a loop.
  forwarding: z.strictObject({
    arcDomain: z.union([z.literal(''), z.string().regex(/^[a-z0-9.-]+$/, 'must be a lowercase domain name')]),
    arcSelector: z.string().regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'must be a DNS label'),
    maxHops: z.number().int().min(1).max(200),
    pollInterval: duration({ min: '10ms' }),
  }),
  dispatcher: z.strictObject({
    concurrency: z.number().int().min(1).max(256),
    batchSize: z.number().int().min(1).max(1000),
    lease: duration({ min: '5s', max: '1d' }),
    interval: duration({ min: '10ms', max: '10m' }),
    commitWindow: duration({ max: '100ms' }),
    renderThreads: z.number().int().min(0).max(64),
  }),
  // When a deferred message is tried again: the schedule's entries in turn (the last repeats) until
  // the message is maxAge old. The default adds up to about 28 attempts over 5 days.
  retry: z.strictObject({
    schedule: z.array(duration({ min: '1s' })).min(1),
    maxAge: duration(),
  }),
  plans: z.strictObject({ free: plan, starter: plan, pro: plan, custom: plan }),
  tail: z.strictObject({
    ping: duration({ min: '10ms', max: '1h' }),
    maxDuration: duration({ min: '10ms', max: '1d' }),
  }),
  scanner: z.strictObject({
    blockedPhrases: z.array(z.string().min(1)),
    blockedPatterns: z.array(
      z
        .string()
        .min(1)
        .refine((p) => {
          try {
            new RegExp(p, 'i');
            return true;
          } catch {
            return false;
          }
        }, 'must be a valid regular expression'),
    ),
    blockedDomains: z.array(z.string().min(1)),
  }),
  // Key that encrypts provider credentials at rest: 32 bytes as base64 or hex; empty means
  // generated into {dataDir}/secrets.key on first start.
  secrets: z.strictObject({
    key: z.string().refine((v) => v === '' || /^[0-9a-fA-F]{64}$/.test(v) || Buffer.from(v, 'base64').length === 32, {
      message: 'must be empty or 32 bytes as base64 or 64 hex characters',
    }),
  }),
  channels: z.strictObject({
    timeout: duration({ min: '100ms', max: '5m' }),
    // The SSRF guard of provider URLs and web-push endpoints (like webhooks.allowPrivate/allowList).
    allowPrivate: z.boolean(),
    allowList: z.array(z.string().min(1)),
  }),
  // --- email delivery (docs/email-delivery.md) ---
  delivery: z.strictObject({
    mode: z.enum(['direct', 'relay']),
    relayUrl: z.union([z.literal(''), z.string().regex(/^smtps?:\/\//, 'must be smtp://… or smtps://…')]),
    // Extra certificate authorities (a PEM file) the relay's certificate may chain to, beside the system's.
    relayCaFile: z.string(),
    port,
    tls: z.enum(['opportunistic', 'verify', 'require', 'none']),
    // Extra certificate authorities (a PEM file) MX hosts and MTA-STS policy hosts may chain to.
    tlsCaFile: z.string(),
    mtaSts: z.strictObject({
      enabled: z.boolean(),
      // The HTTPS port of mta-sts.<domain>: 443 except in tests.
      port: port.min(1),
      timeout: duration({ min: '100ms', max: '60s' }),
      // The SSRF guard of policy fetches (like webhooks.allowPrivate/allowList): a recipient's
      // domain names the policy host, so private addresses need the operator's leave.
      allowPrivate: z.boolean(),
      allowList: z.array(z.string().min(1)),
    }),
    dane: z.boolean(),
    // The bounce rules file (config/bounces.json when empty; docs/email-delivery.md, "Bounce rules").
    bounceRules: z.string(),
    // A destination that rate-limits or blocks is left alone this long, doubling per refusal.
    backoff: z
      .strictObject({ min: duration({ min: '1s', max: '1d' }), max: duration({ min: '1s', max: '7d' }) })
      .refine((b) => b.max >= b.min, { message: 'max must be at least min', path: ['max'] }),
    // A destination that throttles is sent to slower and over fewer connections, climbing back
    // after successes (channels/email/adaptive-backoff.ts, docs/deliverability.md).
    adaptiveBackoff: z.strictObject({
      enabled: z.boolean(),
      // The rate and connections are multiplied by this on a throttling answer.
      decrease: z.number().min(0.1).max(0.9),
      // Deliveries accepted in a row before each step up.
      increaseAfter: z.number().int().min(1).max(10000),
      // Each step up adds this share of the rate it climbs back to (and one connection).
      increaseStep: z.number().min(0.01).max(1),
    }),
    maxConnections: z.number().int().min(1).max(10000),
    maxConnectionsPerHost: z.number().int().min(1).max(1000),
    messagesPerConnection: z.number().int().min(1).max(100000),
    idleTimeout: duration({ min: '100ms', max: '10m' }),
    timeout: duration({ min: '100ms', max: '10m' }),
    domainRates: z.record(z.string(), z.string().regex(/^\d+\/(s|sec|min|h|hour|d|day)$/, 'must look like 60/min')),
    from: z.strictObject({ address: z.union([z.literal(''), z.email()]), name: z.string().max(128) }),
    // Named local addresses mail leaves from, with their EHLO names, grouped into pools; which pool
    // a workspace or sending domain uses; which address family a destination gets
    // (docs/deliverability.md, "Source addresses and pools").
    sources: z.record(
      z.string().regex(SOURCE_NAME, 'a source name is letters, digits, - and _'),
      z.strictObject({
        address: z.string().refine((v) => isIP(v) !== 0, 'must be an IPv4 or IPv6 address'),
        ehlo: z.string().regex(/^[a-zA-Z0-9.-]+$/, 'must be a host name'),
      }),
    ),
    pools: z.record(z.string().regex(SOURCE_NAME, 'a pool name is letters, digits, - and _'), z.array(z.string()).min(1)),
    poolAssignment: z.strictObject({
      default: z.string(),
      workspaces: z.record(z.string(), z.string()),
      domains: z.record(z.string(), z.string()),
    }),
    addressFamily: z.record(z.string().regex(/^(\*\.)?[a-zA-Z0-9.-]+$/, 'must be a domain or *.domain'), z.enum(['ipv4', 'ipv6'])),
    // The daily ramp of a new (source, sending domain) (docs/deliverability.md, "Warm-up").
    warmUp: z.strictObject({
      enabled: z.boolean(),
      sources: z.array(z.string()),
      curve: z.array(z.coerce.number().int().min(1)).min(1),
      window: duration({ min: '1h', max: '7d' }),
      minSample: z.number().int().min(1),
      maxBounceRate: z.number().min(0).max(1),
      maxComplaintRate: z.number().min(0).max(1),
      maxDeferralRate: z.number().min(0).max(1),
      stepBack: z.number().int().min(0),
      spreadOver: duration({ max: '1d' }),
    }),
  }),
  tracking: z.strictObject({
    enabledByDefault: z.boolean(),
    secret: z.string(),
  }),
  // The built-in sender caps of direct delivery (their numbers are per plan, in `plans`).
  senderCaps: z.strictObject({
    enabled: z.boolean(),
  }),
  // Several nodes on one database (docs/cluster.md): how often each says it is alive, and how long
  // a silence means it is dead (its claimed messages are then released to the others).
  cluster: z
    .strictObject({
      heartbeat: duration({ min: '100ms', max: '1m' }),
      nodeTimeout: duration({ min: '300ms', max: '10m' }),
    })
    .refine((c) => c.nodeTimeout >= 3 * c.heartbeat, { message: 'nodeTimeout must be at least three heartbeats', path: ['nodeTimeout'] }),
  // A graceful stop (SIGTERM): how long deliveries in flight may take to finish before the node
  // exits anyway. Below Docker's default stop timeout (10 s); the systemd unit allows 30 s.
  shutdown: z.strictObject({
    drainSeconds: z.number().int().min(0).max(3600),
  }),
  // How far V8 lets each heap grow past what its last full collection kept before it collects
  // again (main.ts): 100 doubles it; 0 leaves V8's own factor, which lets a busy heap grow up to
  // fourfold. The analysis threads' young generation in MB (analysis-pool.ts); 0 leaves V8's own
  // size. docs/performance.md has what each costs in speed and saves in memory.
  memory: z.strictObject({
    heapGrowthPercent: z.number().int().min(0).max(1000),
    analysisYoungGenerationMb: z
      .number()
      .int()
      .min(0)
      .max(1024)
      .refine((v) => v === 0 || v >= 3, { message: "must be 0 (V8's own) or at least 3" }),
  }),
  // `postern doctor` (docs/doctor.md): the public addresses mail leaves from, which SPF must
  // authorise and whose reverse DNS must name `hostname`. Empty: those checks only warn.
  doctor: z.strictObject({
    publicIps: z.array(z.string().refine((v) => isIP(v) !== 0, 'must be an IPv4 or IPv6 address')),
  }),
  // The checks of a message (messages/checks/, docs/deliverability.md): test-key email messages
  // are checked after accept when `automatic`, `concurrency` at a time per node, off the send
  // path. Links: at most `links.max` per message, `links.concurrency` at a time, each answer
  // bounded in time and bytes, through the SSRF guard (`links.allowPrivate`/`links.allowList`).
  // A message counts as bulk (List-Unsubscribe required) when it is a template send or its
  // workspace sent `bulkDailyVolume` email messages in the 24 hours before it (Gmail's and
  // Yahoo's bulk-sender line is 5,000 a day). The spam score uses `inbound.rspamd.url` when set.
  checks: z.strictObject({
    automatic: z.boolean(),
    concurrency: z.number().int().min(1).max(16),
    spam: z.boolean(),
    bulkDailyVolume: z.number().int().min(1),
    links: z.strictObject({
      max: z.number().int().min(0).max(500),
      concurrency: z.number().int().min(1).max(32),
      timeout: duration({ min: '100ms', max: '60s' }),
      maxBytes: z.number().int().min(0).max(10_000_000),
      maxRedirects: z.number().int().min(0).max(10),
      allowPrivate: z.boolean(),
      allowList: z.array(z.string().min(1)),
    }),
  }),
});

/** The configuration; every duration in it is a number of milliseconds. */
// What one setting cannot check alone: the names sources, pools and their assignment give each other.
const schema = settings.superRefine((c, ctx) => {
  const d = c.delivery;
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path: ['delivery', ...path], message });
  const sources = new Set(Object.keys(d.sources));
  for (const [pool, members] of Object.entries(d.pools))
    for (const m of members) if (!sources.has(m)) issue(['pools', pool], `names ${m}, which is not in delivery.sources`);
  const pools = new Set(Object.keys(d.pools));
  const assigned: [string[], string][] = [
    [['poolAssignment', 'default'], d.poolAssignment.default],
    ...Object.entries(d.poolAssignment.workspaces).map(([k, v]): [string[], string] => [['poolAssignment', 'workspaces', k], v]),
    ...Object.entries(d.poolAssignment.domains).map(([k, v]): [string[], string] => [['poolAssignment', 'domains', k], v]),
  ];
  for (const [path, pool] of assigned) if (pool !== '' && !pools.has(pool)) issue(path, `names ${pool}, which is not in delivery.pools`);
  for (const name of d.warmUp.sources)
    if (!sources.has(name)) issue(['warmUp', 'sources'], `names ${name}, which is not in delivery.sources`);
});

export type Config = z.infer<typeof schema>;

/** A setting that cannot be used; `postern serve` exits with code 2 on it. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const defaultsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'config', 'default.json');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The environment variable that overrides a key path. */
export function envName(keyPath: string[]): string {
  return 'POSTERN_' + keyPath.map((k) => k.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function merge(base: JsonObject, over: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = isObject(b) && isObject(v) ? merge(b, v) : v;
  }
  return out;
}

// Variables whose setting takes more than one type, read in a form of their own: http.trustProxy
// is a number of hops (`1`), `false`, or a comma list of addresses and ranges.
const ENV_FORMS: Record<string, (raw: string) => Json> = {
  POSTERN_HTTP_TRUST_PROXY: (raw) => {
    const v = raw.trim();
    if (/^\d+$/.test(v)) return Number(v);
    if (/^(false|no|off)$/i.test(v)) return false;
    if (/^(true|yes|on)$/i.test(v)) return true;
    return v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  },
};

// An environment value takes the type of the default it overrides: numbers and booleans are parsed,
// arrays are comma lists, objects (maps such as per-domain limits) are JSON.
function parseEnvValue(name: string, raw: string, like: Json): Json {
  const form = ENV_FORMS[name];
  if (form) return form(raw);
  if (typeof like === 'number') {
    const n = Number(raw);
    if (raw.trim() === '' || Number.isNaN(n)) throw new ConfigError(`invalid setting ${name}=${JSON.stringify(raw)}: must be a number`);
    return n;
  }
  if (typeof like === 'boolean') {
    if (/^(true|1|yes|on)$/i.test(raw)) return true;
    if (/^(false|0|no|off)$/i.test(raw)) return false;
    throw new ConfigError(`invalid setting ${name}=${JSON.stringify(raw)}: must be true or false`);
  }
  if (Array.isArray(like)) {
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
  if (isObject(like)) {
    try {
      const v = JSON.parse(raw) as Json;
      if (!isObject(v)) throw new Error('not an object');
      return v;
    } catch {
      throw new ConfigError(`invalid setting ${name}: must be a JSON object`);
    }
  }
  return raw;
}

function applyEnv(defaults: JsonObject, target: JsonObject, env: NodeJS.ProcessEnv, prefix: string[] = []): JsonObject {
  const out: JsonObject = { ...target };
  for (const [k, like] of Object.entries(defaults)) {
    const keyPath = [...prefix, k];
    const name = envName(keyPath);
    const raw = env[name];
    if (raw !== undefined) {
      out[k] = parseEnvValue(name, raw, like);
    } else if (isObject(like) && Object.keys(like).length > 0 && isObject(out[k])) {
      out[k] = applyEnv(like, out[k], env, keyPath);
    }
  }
  return out;
}

const FILE_REASONS: Record<string, string> = {
  ENOENT: 'it does not exist',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'part of the path is not a directory',
};

/** A JSON object from a file; `source` says who named it (--config, POSTERN_CONFIG). */
function readJson(file: string, source?: string): JsonObject {
  const named = source ? `${file} (${source})` : file;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    throw new ConfigError(`cannot read config file ${named}: ${FILE_REASONS[code] ?? (err as Error).message}`);
  }
  try {
    const v = JSON.parse(text) as Json;
    if (!isObject(v)) throw new Error('the top level must be an object');
    return v;
  } catch (err) {
    throw new ConfigError(`config file ${named} is not valid JSON: ${(err as Error).message}`);
  }
}

// Variables Postern reads that are not settings. POSTERN_TEST_DATABASE_URL is the test suite's
// PostgreSQL server (test/helpers/databases.ts, .ci/run): Postern never reads it, but a shell that
// runs the tests exports it to every daemon they spawn, and the closest setting it would suggest,
// POSTERN_DATABASE_URL, would be the wrong advice.
// Read by one command, not settings: the passphrase of an encrypted backup (cli/backup.ts).
const NOT_SETTINGS = ['POSTERN_CONFIG', 'POSTERN_TEST_DATABASE_URL', 'POSTERN_BACKUP_PASSPHRASE'];

/** Every key path of the defaults, objects included (a variable may set a whole object as JSON). */
function settingNames(defaults: JsonObject, prefix: string[] = []): string[] {
  return Object.entries(defaults).flatMap(([k, v]) => {
    const keyPath = [...prefix, k];
    return [envName(keyPath), ...(isObject(v) ? settingNames(v, keyPath) : [])];
  });
}

// Optimal string alignment distance: edits, with a swap of two neighbours counted as one.
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** One warning per POSTERN_* variable that names no setting, with the closest setting if one is near. */
function warnUnknownVariables(env: NodeJS.ProcessEnv, defaults: JsonObject, warn: (message: string) => void): void {
  const settings = settingNames(defaults);
  const known = new Set([...settings, ...deprecatedEnvNames(envName), ...NOT_SETTINGS]);
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('POSTERN_') || known.has(name)) continue;
    const tail = name.slice('POSTERN_'.length);
    let best: { name: string; d: number } | null = null;
    for (const s of settings) {
      const d = distance(tail, s.slice('POSTERN_'.length));
      if (!best || d < best.d) best = { name: s, d };
    }
    // Near enough to be a typo: at most 2 edits, or a quarter of the name for long names.
    const near = best && best.d <= Math.max(2, Math.floor(tail.length / 4)) ? `; did you mean ${best.name}?` : '';
    warn(`${name} names no setting and is ignored${near}`);
  }
}

export interface LoadConfigOptions {
  env?: NodeJS.ProcessEnv;
  file?: string;
  /** Values merged last, for tests that build a config in code. */
  overrides?: Record<string, unknown>;
  /** Where warnings about deprecated settings go (default: stderr). */
  warn?: (message: string) => void;
}

const warnOnStderr = (message: string) => void process.stderr.write(`postern: warning: ${message}\n`);

/**
 * Builds the one typed Config: default.json, then an optional file, then the environment, then
 * overrides; settings under a name deprecated in 0.2.0 still work, with a warning (config-renames.ts).
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const warn = options.warn ?? warnOnStderr;
  const env = options.env ?? {};
  const defaults = readJson(defaultsPath);
  let merged = defaults;
  warnUnknownVariables(env, defaults, warn);
  if (options.file === undefined && env.POSTERN_CONFIG === '') {
    throw new ConfigError('POSTERN_CONFIG is set but empty: name a config file, or unset it');
  }
  const [file, source] = options.file !== undefined ? [options.file, '--config'] : [env.POSTERN_CONFIG, 'POSTERN_CONFIG'];
  if (file) merged = merge(merged, renameSettings(readJson(file, source), envName, warn));
  merged = merge(merged, renamedFromEnv(env, envName, parseEnvValue, warn));
  merged = applyEnv(defaults, merged, env);
  if (options.overrides) merged = merge(merged, renameSettings(options.overrides as JsonObject, envName, warn));
  renameRetrySchedule(merged, warn);
  const result = schema.safeParse(merged);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((issue) => invalidSetting(issue.path.map(String), issue.message)).join('; '));
  }
  return result.data;
}

/**
 * What is said of a setting that cannot be used, naming it and its variable: `invalid setting
 * inbound.purgeCron (POSTERN_INBOUND_PURGE_CRON): …`. Array indexes name no variable of their own.
 */
export function invalidSetting(keyPath: string[], message: string): string {
  const where = keyPath.length ? `${keyPath.join('.')} (${envName(keyPath.filter((p) => !/^\d+$/.test(p)))})` : 'config';
  return `invalid setting ${where}: ${message}`;
}

/** The SQLite file or PostgreSQL URL the config selects. */
export function databaseTarget(config: Config): { dialect: 'sqlite'; file: string } | { dialect: 'postgres'; url: string } {
  const url = config.databaseUrl;
  if (/^postgres(ql)?:/.test(url)) return { dialect: 'postgres', url };
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', file: path.resolve(url.slice('sqlite:'.length)) };
  if (url !== '') return { dialect: 'sqlite', file: path.resolve(url) };
  return { dialect: 'sqlite', file: path.resolve(config.dataDir, 'postern.sqlite') };
}
