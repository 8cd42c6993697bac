// The email channel's composition: builds the transport `delivery.mode` selects (smtp-direct or
// smtp-relay) with its connection pool, rate limiter and the shared tracking-token signer.
import { createHash } from 'node:crypto';
import type { Config } from '../../../config.js';
import type { Db } from '../../../db/database.js';
import type { Clock } from '../../../lib/clock.js';
import type { DnsResolver } from '../../../lib/dns.js';
import type { Logger } from '../../../lib/logger.js';
import type { SuppressionStore } from '../../../suppressions/store.js';
import { createTokenSigner, loadSecret, type TokenSigner } from '../../../tracking/tokens.js';
import type { Renderer } from '../../render-threads.js';
import type { ChannelTransport } from '../channel.js';
import { createDirectTransport } from './direct.js';
import { createDomainRateLimiter } from './rates.js';
import { createRelayTransport } from './relay.js';
import { createSmtpPool, type PoolOptions } from './smtp-pool.js';

export interface EmailChannelDeps {
  config: Config;
  db: Db;
  clock: Clock;
  dns: DnsResolver;
  log: Logger;
  suppressions: SuppressionStore;
  publicUrl(): string;
  /** The dispatcher's render threads: they build and sign the MIME message and hold the SMTP connections (else the event loop). */
  renderer?: Pick<Renderer, 'compose' | 'smtpPool'>;
}

/** A stable UUID-shaped id of the configured connection (providerConnectionId). */
export function connectionIdOf(config: Config): string {
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
export function createTokenSource(deps: { config: Config; db: Db; clock: Clock }): () => Promise<TokenSigner> {
  let signer: Promise<TokenSigner> | null = null;
  return () => {
    signer ??= (
      deps.config.tracking.secret ? Promise.resolve(deps.config.tracking.secret) : loadSecret(deps.db, deps.clock, 'tracking')
    ).then(createTokenSigner);
    signer.catch(() => (signer = null));
    return signer;
  };
}

/** The direct-delivery connection pool the `delivery.*` settings describe. */
export function createDeliveryPool(config: Config, log: Logger) {
  return createSmtpPool(deliveryPoolOptions(config, log));
}

/** The settings of the direct-delivery connection pool (`delivery.*`). */
export function deliveryPoolOptions(config: Config, log: Logger): PoolOptions {
  const d = config.delivery;
  return {
    name: config.hostname,
    port: d.port,
    tls: d.tls,
    maxConnections: d.maxConnections,
    maxConnectionsPerHost: d.maxConnectionsPerHost,
    messagesPerConnection: d.messagesPerConnection,
    idleTimeoutMs: d.idleTimeoutMs,
    timeoutMs: d.timeoutMs,
    log,
  };
}

/** The live email transport for `delivery.mode`. */
export function createEmailTransport(deps: EmailChannelDeps, tokens: () => Promise<TokenSigner>): ChannelTransport {
  const { config } = deps;
  const base = { ...deps, tokens, connectionId: connectionIdOf(config) };
  if (config.delivery.mode === 'relay') return createRelayTransport(base);
  // On a render thread when the dispatcher has one: SMTP then costs the event loop nothing.
  const pool = deps.renderer ? deps.renderer.smtpPool(deliveryPoolOptions(config, deps.log)) : createDeliveryPool(config, deps.log);
  return createDirectTransport({ ...base, pool, rates: createDomainRateLimiter(config.delivery.domainRates, deps.clock) });
}
