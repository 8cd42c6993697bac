// The certificates this node presents: the ACME ones from the database, by name, read again every
// `acme.reloadInterval` and right after this node obtains one, so a certificate renewed by another
// node is served here within that interval. A client naming a host (SNI) gets that host's
// certificate; one naming none, or a name without one, gets `hostname`'s, or the fallback (the
// configured files or the self-signed certificate) until ACME has obtained it.
import tls from 'node:tls';
import type { Logger } from '../lib/logger.js';
import type { CertificateStore } from './store.js';

export interface KeyPair {
  key: string | Buffer;
  cert: string | Buffer;
}

export interface ServedCertificates {
  /** What a client naming no host, or a host without a certificate of its own, is shown. */
  defaultPair(): KeyPair;
  /** For tls.createServer and smtp-server: the context for the name the client asked for. */
  sniCallback: (servername: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void) => void;
  /** Whether an ACME certificate for `name` is being served. */
  has(name: string): boolean;
  /** Calls `listener` after the served set changed (a listener swaps its default context). */
  onChange(listener: () => void): void;
  /** Reads the database again. */
  reload(): Promise<void>;
  start(): void;
  stop(): void;
}

export function createServedCertificates(deps: {
  store: CertificateStore;
  hostname: string;
  /** The configured files or the self-signed pair, read when first needed (smtp/self-signed.ts). */
  fallback: () => KeyPair;
  reloadMs: number;
  log: Logger;
}): ServedCertificates {
  const { store, log } = deps;
  const hostname = deps.hostname.toLowerCase();
  let pairs = new Map<string, { key: string; cert: string; issuedAt: string }>();
  const contexts = new Map<string, tls.SecureContext>();
  const listeners: (() => void)[] = [];
  let fallback: KeyPair | null = null;
  let timer: NodeJS.Timeout | null = null;

  const contextOf = (name: string): tls.SecureContext | undefined => {
    let ctx = contexts.get(name);
    const pair = pairs.get(name);
    if (!ctx && pair) {
      ctx = tls.createSecureContext({ key: pair.key, cert: pair.cert, minVersion: 'TLSv1.2' });
      contexts.set(name, ctx);
    }
    return ctx;
  };

  const self: ServedCertificates = {
    defaultPair: () => pairs.get(hostname) ?? (fallback ??= deps.fallback()),
    sniCallback(servername, cb) {
      // Undefined: the listener's default context (hostname's, kept current by onChange).
      cb(null, contextOf(servername.toLowerCase()));
    },
    has: (name) => pairs.has(name.toLowerCase()),
    onChange(listener) {
      listeners.push(listener);
    },
    async reload() {
      const rows = await store.issued();
      const changed =
        rows.length !== pairs.size || rows.some((r) => pairs.get(r.name)?.issuedAt !== r.issuedAt || pairs.get(r.name)?.cert !== r.cert);
      if (!changed) return;
      pairs = new Map(rows.map((r) => [r.name, { key: r.key, cert: r.cert, issuedAt: r.issuedAt }]));
      contexts.clear();
      for (const l of listeners) {
        try {
          l();
        } catch (err) {
          log.error({ err }, 'a listener could not take the new certificates');
        }
      }
      log.info({ names: [...pairs.keys()] }, 'certificates loaded');
    },
    start() {
      const tick = () =>
        void self
          .reload()
          .catch((err: unknown) => log.warn({ err }, 'reading the certificates failed; serving the ones loaded before'))
          .finally(() => {
            if (timer) timer = setTimeout(tick, deps.reloadMs).unref();
          });
      timer = setTimeout(tick, deps.reloadMs).unref();
    },
    stop() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
  return self;
}
