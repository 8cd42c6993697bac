// The email channel as the composition root sees it: the live transport `delivery.mode` selects
// (smtp-direct with its connection pool and per-domain rate limits, or smtp-relay), the tracking
// token signer the transport and the tracking routes share, the composer the dashboard's source
// view shares with delivery, and the read-only connection the config describes. Forwarding hands its ready-made bytes to the same transport (`source`).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type { ChannelTransport, OutboundMessage } from '../../channel.js';
import type { Config } from '../../config.js';
import type { Deps } from '../../deps.js';
import { ConfigError } from '../../config.js';
import { createWireDns } from '../../lib/dns-wire.js';
import type { Logger } from '../../lib/logger.js';
import type { SuppressionStore } from '../../suppressions/index.js';
import type { BounceRules } from './bounce-rules.js';
import type { ComposeRequest } from './compose.js';
import type { Destinations } from './destinations.js';
import { createDirectTransport } from './direct.js';
import { createMtaSts, createStsFetch, type StsFetch, type StsFetchDeps } from './mta-sts.js';
import { composeEmail, type RawSource } from './prepare.js';
import { trackingSettings } from './tracking/settings.js';
import { createDomainRateLimiter } from './rates.js';
import { createRelayTransport } from './relay.js';
import { createSmtpPool, type PoolOptions, type SmtpPool } from './smtp-pool.js';
import { createSigningKeys } from './signing-keys.js';
import { createSourcePicker } from './sources.js';
import { createTokenSigner, loadSecret, type TokenSigner } from './tracking/tokens.js';
import { createTransportSecurity, type TransportSecurity } from './transport-security.js';
import type { WarmUp } from './warm-up.js';
import type { EmailOutput } from '../../contract/channels.js';

/** Where CPU and connection work can run off the event loop (the delivery threads). */
export interface EmailOffload {
  compose(req: ComposeRequest): Promise<Buffer>;
  smtpPool(opts: PoolOptions): SmtpPool;
}

export interface EmailChannelDeps
  extends Pick<Deps, 'config' | 'db' | 'dialect' | 'clock' | 'dns' | 'log' | 'budgets' | 'box'>, Partial<Pick<Deps, 'bus'>> {
  suppressions: SuppressionStore;
  publicUrl(): string;
  tokens(): Promise<TokenSigner>;
  /** This node's share of a per-host cap the cluster's nodes split (cluster/nodes.ts). */
  hostShare?: (cap: number) => number;
  /** The delivery threads: they build and sign the MIME message and hold the SMTP connections (else the event loop). */
  offload?: EmailOffload;
  /** Ready-made bytes for some messages (forwarding). */
  source?: RawSource;
  /** How failures are judged (config/bounces.json or delivery.bounceRules). */
  rules: BounceRules;
  /** Holds, back-offs and counts per destination domain. */
  destinations: Destinations;
  /** Warm-up of source addresses (delivery.warmUp.enabled). */
  warmUp?: WarmUp;
}

/** A workspace's slug by id, remembered for a minute (pools may be assigned by slug). */
function slugCache(deps: Pick<EmailChannelDeps, 'db' | 'clock'>): (workspaceId: string) => Promise<string | null> {
  const known = new Map<string, { slug: string | null; at: number }>();
  return async (id) => {
    const now = deps.clock.now().getTime();
    const hit = known.get(id);
    if (hit && now - hit.at < 60_000) return hit.slug;
    const row = await deps.db.selectFrom('workspaces').select('slug').where('id', '=', id).executeTakeFirst();
    if (known.size > 10_000) known.clear();
    known.set(id, { slug: row?.slug ?? null, at: now });
    return row?.slug ?? null;
  };
}

/** A stable UUID-shaped id of the configured connection (providerConnectionId). */
function connectionIdOf(config: Config): string {
  const what = config.delivery.mode === 'relay' ? `relay:${safeHost(config.delivery.relayUrl)}` : `direct:${config.hostname}`;
  const h = createHash('sha256').update(what).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The email connection the config describes (delivery.mode and its settings), listed beside the
 * stored provider connections so that every message's providerConnectionId names a connection.
 * It is read-only: change it in the config. Credentials in a relay URL are never shown.
 */
export function emailConnectionView(config: Config, env: 'live' | 'test') {
  const relay = config.delivery.mode === 'relay';
  let hasPassword = false;
  try {
    hasPassword = relay && new URL(config.delivery.relayUrl).password !== '';
  } catch {
    hasPassword = false;
  }
  return {
    id: connectionIdOf(config),
    env,
    channel: 'email',
    provider: relay ? 'smtp-relay' : 'smtp-direct',
    name: relay ? 'relay (delivery.relayUrl)' : 'direct to MX',
    settings: relay
      ? { relayHost: safeHost(config.delivery.relayUrl), tls: config.delivery.tls }
      : { hostname: config.hostname, port: config.delivery.port, tls: config.delivery.tls },
    credentials: hasPassword ? [{ name: 'password', set: true }] : [],
    source: 'config',
  };
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** The signer of tracking and unsubscribe tokens (`tracking.secret`, else one kept in the database). */
export function createTokenSource(deps: Pick<Deps, 'config' | 'db' | 'clock'>): () => Promise<TokenSigner> {
  let signer: Promise<TokenSigner> | null = null;
  return () => {
    signer ??= (
      deps.config.tracking.secret ? Promise.resolve(deps.config.tracking.secret) : loadSecret(deps.db, deps.clock, 'tracking')
    ).then(createTokenSigner);
    signer.catch(() => (signer = null));
    return signer;
  };
}

/** A message as the email channel would put it on the wire (without its envelope), for the dashboard's source view. */
export type EmailSource = (message: OutboundMessage, content: EmailOutput, date: Date) => Promise<Buffer>;

/** The email channel's composer, outside delivery: the same From, tracking, headers and signature as a delivery. */
export function createEmailSource(
  deps: Pick<EmailChannelDeps, 'config' | 'db' | 'dialect' | 'clock' | 'bus' | 'box' | 'publicUrl' | 'tokens'>,
): EmailSource {
  const signingKeys = createSigningKeys(deps);
  const tracking = trackingSettings(deps.db, deps.dialect, deps.config.tracking.enabledByDefault);
  return async (message, content, date) => (await composeEmail({ ...deps, signingKeys, tracking }, message, content, date)).raw;
}

/** The PEM of `delivery.tlsCaFile`, or undefined; a file that cannot be read stops the start. */
function extraCa(config: Config): string | undefined {
  if (!config.delivery.tlsCaFile) return undefined;
  try {
    return readFileSync(config.delivery.tlsCaFile, 'utf8');
  } catch (err) {
    throw new ConfigError(`invalid setting delivery.tlsCaFile (POSTERN_DELIVERY_TLS_CA_FILE): ${(err as Error).message}`);
  }
}

/** How a policy is fetched, from `delivery.mtaSts.*` and `delivery.tlsCaFile`. */
function stsFetchSettings(config: Config, ca: string | undefined): Omit<StsFetchDeps, 'dns'> {
  const sts = config.delivery.mtaSts;
  return {
    port: sts.port,
    timeoutMs: sts.timeout,
    ca: ca ? [...rootCertificates, ca] : undefined,
    ssrf: {
      allowPrivate: sts.allowPrivate,
      allowList: sts.allowList,
      settings: 'delivery.mtaSts.allowPrivate or delivery.mtaSts.allowList',
    },
  };
}

/** An MTA-STS policy fetch as delivery makes one (the doctor fetches the policies Postern serves with it). */
export function policyFetch(deps: Pick<EmailChannelDeps, 'config' | 'dns'>): StsFetch {
  return createStsFetch({ dns: deps.dns, ...stsFetchSettings(deps.config, extraCa(deps.config)), keepAlive: false });
}

/** What recipient domains demand of TLS: MTA-STS and DANE as `delivery.*` and `dns.dnssec` allow. */
function transportSecurity(deps: EmailChannelDeps, ca: string | undefined): TransportSecurity {
  const { config } = deps;
  return createTransportSecurity({
    now: () => deps.clock.now().getTime(),
    mtaSts: config.delivery.mtaSts.enabled ? createMtaSts({ ...deps, ...stsFetchSettings(config, ca) }) : undefined,
    wire: config.delivery.dane && config.dns.dnssec ? createWireDns(config.dns.servers, config.dns.timeout, true) : undefined,
  });
}

/** The settings of the direct-delivery connection pool (`delivery.*`). */
function deliveryPoolOptions(config: Config, log: Logger, ca: string | undefined): PoolOptions {
  const d = config.delivery;
  return {
    name: config.hostname,
    port: d.port,
    tls: d.tls,
    ...(ca ? { ca } : {}),
    maxConnections: d.maxConnections,
    maxConnectionsPerHost: d.maxConnectionsPerHost,
    messagesPerConnection: d.messagesPerConnection,
    idleTimeoutMs: d.idleTimeout,
    timeoutMs: d.timeout,
    log,
  };
}

/** The live email transport for `delivery.mode`. */
export function createEmailTransport(deps: EmailChannelDeps): ChannelTransport {
  const { config } = deps;
  if (config.delivery.mode === 'relay' && !config.delivery.relayUrl)
    throw new ConfigError('invalid setting delivery.relayUrl (POSTERN_DELIVERY_RELAY_URL): required when delivery.mode is relay');
  const base = {
    ...deps,
    composer: deps.offload,
    connectionId: connectionIdOf(config),
    signingKeys: createSigningKeys(deps),
    tracking: trackingSettings(deps.db, deps.dialect, config.tracking.enabledByDefault),
  };
  if (config.delivery.mode === 'relay') return createRelayTransport(base);
  // On a delivery thread when there is one: SMTP then costs the event loop nothing.
  const ca = extraCa(config);
  const options = deliveryPoolOptions(config, deps.log, ca);
  const pool = deps.offload ? deps.offload.smtpPool(options) : createSmtpPool(options);
  return createDirectTransport({
    ...base,
    pool,
    rates: createDomainRateLimiter(config.delivery.domainRates, deps.budgets),
    ...(deps.hostShare ? { hostCap: () => deps.hostShare!(config.delivery.maxConnectionsPerHost), hostShare: deps.hostShare } : {}),
    security: transportSecurity(deps, ca),
    ...(Object.keys(config.delivery.pools).length ? { sources: createSourcePicker(config.delivery), slugOf: slugCache(deps) } : {}),
  });
}

export type { BounceHandler, ForwardedBounces } from './bounces.js';
export { crlfLineEndings } from './compose.js';
export type { Destinations } from './destinations.js';
export type { RawSource, WireMessage } from './prepare.js';
export { parseRate } from './rates.js';
export { type Engagement, recordEngagement } from './tracking/engagement.js';
export { isTrackingEnabled, setTracking } from './tracking/settings.js';
export type { TokenSigner } from './tracking/tokens.js';
export type { WarmUp } from './warm-up.js';
