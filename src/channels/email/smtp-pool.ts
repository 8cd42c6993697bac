// Outgoing SMTP connections for direct delivery, reused per destination host. One pool holds every
// open connection keyed by `address:port`, and by the MX name too when `delivery.tls` verifies
// certificates (verify, require): a connection's TLS session was verified for the name it was
// opened for, so mail for another name at the same address must not ride on it. A delivery
// borrows an idle connection of its host or opens one when both caps allow
// (`delivery.maxConnectionsPerHost`, `delivery.maxConnections`), else it waits in line. A
// connection is closed after `messagesPerConnection` messages, after `delivery.idleTimeout`
// unused, or on any error; after a rejected transaction it is RSET and reused.
// STARTTLS is used whenever offered; `delivery.tls` decides what happens around it:
//   opportunistic: certificate not verified, plain text if the upgrade fails (RFC 7435);
//   verify: certificate verified when STARTTLS is offered, plain text when it is not;
//   require: STARTTLS with a verified certificate or no delivery; none: never STARTTLS.
// A destination's own policy can raise that floor for its hosts, never lower it (a target's
// `security`, decided by transport-security.ts): MTA-STS enforce needs STARTTLS and a certificate
// valid for the MX name; DANE needs STARTTLS and a chain matching the host's TLSA records, which is
// checked here, where the socket is, before any mail is sent. A connection is keyed by its demand
// too, so one opened under a weaker demand never carries mail that needs a stronger one, and by its
// source address (sources.ts), so one source's connection never carries another source's mail.
import { isAscii } from 'node:buffer';
import { rootCertificates, type TLSSocket } from 'node:tls';
import type SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';
import { lazyRequire } from '../../lib/lazy.js';
import type { Logger } from '../../lib/logger.js';
import { checkDane, peerChain, type Tlsa } from './dane.js';
import { fastDotStuffing } from './dot-stuffing.js';

// Loaded where the pools live: on a delivery thread, not the event loop (lib/lazy.ts).
const smtpConnection = lazyRequire<typeof SMTPConnection>('nodemailer/lib/smtp-connection/index.js');

export type TlsPolicy = 'opportunistic' | 'verify' | 'require' | 'none';

export interface PoolOptions {
  /** Our name in EHLO (config.hostname). */
  name: string;
  port: number;
  tls: TlsPolicy;
  maxConnections: number;
  maxConnectionsPerHost: number;
  messagesPerConnection: number;
  idleTimeoutMs: number;
  timeoutMs: number;
  /** Extra certificate authorities (PEM, `delivery.tlsCaFile`) beside the system's. */
  ca?: string;
  log: Logger;
}

/**
 * What a destination demands of TLS beyond `delivery.tls`:
 *   pkix: STARTTLS and a certificate that verifies for the host name (MTA-STS enforce);
 *   dane: STARTTLS and a chain matching `tlsa` (usable records of the host; names for DANE-TA);
 *   encrypt: STARTTLS, no authentication (DANE with only unusable TLSA records, RFC 7672 §2.2).
 * `floor` alone is delivery.tls; `observe` is the floor, never ignoring an offered STARTTLS, with
 * the certificate's verification reported (MTA-STS testing).
 */
export type TlsDemand =
  { kind: 'floor' } | { kind: 'observe' } | { kind: 'pkix' } | { kind: 'dane'; tlsa: Tlsa[]; names: string[] } | { kind: 'encrypt' };

export interface Target {
  /** The exchange name (TLS servername). */
  host: string;
  address: string;
  security?: TlsDemand;
  /**
   * This node's share of `maxConnectionsPerHost` when nodes of a cluster split the cap between
   * them (cluster/nodes.ts); the cap itself when absent.
   */
  cap?: number;
  /**
   * The local address to connect from and the name to give in EHLO (sources.ts); the system's
   * choice and `name` when absent. A connection is keyed by its source: it never carries another
   * source's mail.
   */
  source?: { address: string; ehlo: string };
}

/** How a connection's TLS went: the protocol, the cipher, and whether the certificate verified. */
export interface TlsOutcome {
  protocol: string;
  cipher: string;
  /** The certificate chain verified for the host name against the trusted CAs. */
  verified: boolean;
  /** Why it did not (an OpenSSL code or a name mismatch). */
  verifyError?: string;
  /** The TLSA record that authenticated the peer (DANE). */
  dane?: string;
}

export interface SendResult {
  accepted: string[];
  rejected: { address: string; error: SmtpError }[];
  response: string;
  secure: boolean;
  tls: TlsOutcome | null;
}

export type SmtpError = Error & { responseCode?: number; response?: string; code?: string; command?: string; rejectedErrors?: SmtpError[] };

interface Conn {
  key: string;
  /** The per-host cap in force when it was last used. */
  cap: number;
  smtp: SMTPConnection;
  sent: number;
  busy: boolean;
  dead: boolean;
  idleTimer: NodeJS.Timeout | null;
  tls: TlsOutcome | null;
}

export interface SmtpPool {
  /** One transaction to one host; throws an SmtpError for connection, MAIL FROM or DATA failures. */
  send(target: Target, envelope: { from: string; to: string[] }, raw: Buffer): Promise<SendResult>;
  stats(): { open: number; waiting: number };
  close(): Promise<void>;
}

/**
 * Why 8-bit mail cannot go to this peer, or null. Postern's own messages are 7-bit (the composer
 * encodes); a forwarded message keeps the bytes it arrived with, which may be 8-bit (RFC 6152) or
 * hold UTF-8 header fields (RFC 6532). Such mail is announced with BODY=8BITMIME, needs the peer to
 * offer 8BITMIME, and with UTF-8 in its header block or envelope needs SMTPUTF8 too; a peer
 * without them gets nothing, and the failure is permanent (no retry makes the peer change), as
 * Postfix has it ("SMTPUTF8 is required, but was not offered by host").
 */
function eightBitRefusal(smtp: SMTPConnection, raw: Buffer, envelope: { from: string; to: string[] }, host: string): SmtpError | null {
  // nodemailer keeps the EHLO reply's extensions on the connection and does not expose them.
  const offered = (smtp as unknown as { _supportedExtensions?: string[] })._supportedExtensions ?? [];
  const end = raw.indexOf('\r\n\r\n');
  const utf8Header = !isAscii(raw.subarray(0, end === -1 ? raw.length : end));
  const utf8Envelope = [envelope.from, ...envelope.to].some((a) => /[^\x00-\x7f]/.test(a));
  let why: string | null = null;
  if ((utf8Header || utf8Envelope) && !offered.includes('SMTPUTF8')) why = `SMTPUTF8 is required, but was not offered by ${host}`;
  else if (!offered.includes('8BITMIME')) why = `the message holds 8-bit data and ${host} does not offer 8BITMIME`;
  if (!why) return null;
  // Refused before MAIL FROM like an oversized message (classify.ts: permanent, not the address's fault).
  return Object.assign(new Error(why), { code: 'EMESSAGE', command: 'MAIL FROM' });
}

export function createSmtpPool(opts: PoolOptions): SmtpPool {
  const byKey = new Map<string, Set<Conn>>();
  let open = 0;
  const waiters: { key: string; cap: number; wake: () => void }[] = [];
  let closed = false;

  const countFor = (key: string) => byKey.get(key)?.size ?? 0;
  const capOf = (target: Target) => Math.max(1, Math.min(opts.maxConnectionsPerHost, target.cap ?? opts.maxConnectionsPerHost));

  const discard = (c: Conn) => {
    if (c.dead) return;
    c.dead = true;
    if (c.idleTimer) clearTimeout(c.idleTimer);
    byKey.get(c.key)?.delete(c);
    if (byKey.get(c.key)?.size === 0) byKey.delete(c.key);
    open--;
    try {
      c.smtp.quit();
    } catch {
      // already closed
    }
    c.smtp.close();
    wakeNext();
  };

  // Gives a freed slot (or a now-idle connection) to the first waiter that can use it.
  const wakeNext = () => {
    for (let i = 0; i < waiters.length; i++) {
      const w = waiters[i];
      const idle = [...(byKey.get(w.key) ?? [])].some((c) => !c.busy && !c.dead);
      if (idle || (open < opts.maxConnections && countFor(w.key) < w.cap)) {
        waiters.splice(i, 1);
        w.wake();
        return;
      }
    }
  };

  const ca = opts.ca ? [...rootCertificates, opts.ca] : undefined;
  const connect = (target: Target, key: string, cap: number): Promise<Conn> => {
    const demand = target.security ?? { kind: 'floor' };
    const floorVerifies = opts.tls === 'verify' || opts.tls === 'require';
    const mustEncrypt = opts.tls === 'require' || (demand.kind !== 'floor' && demand.kind !== 'observe');
    fastDotStuffing();
    const smtp = new (smtpConnection())({
      host: target.address,
      port: opts.port,
      name: target.source?.ehlo ?? opts.name,
      ...(target.source ? { localAddress: target.source.address } : {}),
      servername: target.host,
      ignoreTLS: opts.tls === 'none' && demand.kind === 'floor',
      requireTLS: mustEncrypt,
      opportunisticTLS: !mustEncrypt,
      // DANE authenticates the peer itself (below), in place of PKIX, which would refuse a DANE-EE
      // certificate no CA signed; every other demand verifies when it or the floor says so.
      tls: {
        rejectUnauthorized: demand.kind === 'pkix' || (floorVerifies && demand.kind !== 'dane'),
        servername: target.host,
        ...(ca ? { ca } : {}),
      },
      connectionTimeout: opts.timeoutMs,
      greetingTimeout: opts.timeoutMs,
      socketTimeout: opts.timeoutMs,
    } as SMTPConnection.Options);
    const c: Conn = { key, cap, smtp, sent: 0, busy: true, dead: false, idleTimer: null, tls: null };
    if (!byKey.has(key)) byKey.set(key, new Set());
    byKey.get(key)!.add(c);
    open++;
    return new Promise((resolve, reject) => {
      let settled = false;
      smtp.on('error', (err: SmtpError) => {
        opts.log.debug({ err: err.message, host: target.host, address: target.address }, 'smtp connection error');
        if (!settled) {
          settled = true;
          discard(c);
          reject(err);
        } else if (!c.busy) discard(c);
      });
      smtp.on('end', () => {
        if (!settled) {
          settled = true;
          discard(c);
          const e: SmtpError = new Error('connection closed before greeting');
          e.code = 'ECONNECTION';
          reject(e);
        } else if (!c.busy) discard(c);
      });
      smtp.connect(() => {
        if (settled) return;
        settled = true;
        const socket = (smtp as unknown as { _socket?: TLSSocket })._socket;
        if (smtp.secure && socket?.getProtocol) {
          c.tls = {
            protocol: socket.getProtocol() ?? 'TLS',
            cipher: socket.getCipher()?.standardName ?? socket.getCipher()?.name ?? '',
            verified: socket.authorized,
            ...(socket.authorized ? {} : { verifyError: String(socket.authorizationError ?? 'unverified') }),
          };
          if (demand.kind === 'dane') {
            const verdict = checkDane(peerChain(socket.getPeerCertificate(true)), demand.tlsa, demand.names, new Date());
            if (!verdict.ok) {
              discard(c);
              return reject(Object.assign(new Error(verdict.reason), { code: 'EDANE', response: verdict.reason }));
            }
            c.tls.dane = verdict.matched;
          }
        }
        // nodemailer leaves Nagle's algorithm on. A message goes out as several writes (the data
        // stream's chunks, then the final dot) and the peer answers only after the last, so the
        // tail waited for the peer's delayed ACK: ~40 ms per message per connection, which made
        // delivery latency-bound (about 20 messages/s per connection on loopback).
        (smtp as unknown as { _socket?: { setNoDelay?(on: boolean): void } })._socket?.setNoDelay?.(true);
        resolve(c);
      });
    });
  };

  const verifies = opts.tls === 'verify' || opts.tls === 'require';
  const demandKey = (d: TlsDemand | undefined): string => {
    if (!d || d.kind === 'floor') return '';
    if (d.kind !== 'dane') return ` ${d.kind}`;
    return ` dane:${d.names.join(',')}:${d.tlsa.map((r) => `${r.usage}.${r.selector}.${r.matchingType}.${Buffer.from(r.data).toString('hex')}`).join('/')}`;
  };
  const keyOf = (target: Target) =>
    `${target.source ? `${target.source.address}>` : ''}${target.address}:${opts.port}${verifies || (target.security && target.security.kind !== 'floor') ? ` ${target.host.toLowerCase()}` : ''}${demandKey(target.security)}`;

  const acquire = async (target: Target): Promise<Conn> => {
    const key = keyOf(target);
    const cap = capOf(target);
    for (let i = 0; i < 1_000_000; i++) {
      if (closed) throw Object.assign(new Error('delivery pool is closed'), { code: 'ECONNECTION' });
      const idle = [...(byKey.get(key) ?? [])].find((c) => !c.busy && !c.dead);
      if (idle) {
        if (idle.idleTimer) clearTimeout(idle.idleTimer);
        idle.idleTimer = null;
        idle.busy = true;
        idle.cap = cap;
        return idle;
      }
      if (open < opts.maxConnections && countFor(key) < cap) return connect(target, key, cap);
      await new Promise<void>((wake) => waiters.push({ key, cap, wake }));
    }
    throw new Error('unreachable');
  };

  const release = (c: Conn) => {
    c.busy = false;
    if (c.dead) return;
    // Over a share that shrank (another node joined): the surplus closes as it frees.
    if (c.sent >= opts.messagesPerConnection || closed || countFor(c.key) > c.cap) return discard(c);
    c.idleTimer = setTimeout(() => discard(c), opts.idleTimeoutMs);
    c.idleTimer.unref();
    wakeNext();
  };

  const reset = (c: Conn) =>
    new Promise<void>((resolve) => {
      if (c.dead) return resolve();
      c.smtp.reset((err) => {
        if (err) discard(c);
        resolve();
      });
    });

  return {
    async send(target, envelope, raw) {
      const c = await acquire(target);
      const use8BitMime = !isAscii(raw);
      const refused = use8BitMime ? eightBitRefusal(c.smtp, raw, envelope, target.host) : null;
      if (refused) {
        release(c);
        throw refused;
      }
      try {
        const info = await new Promise<SMTPConnection.SentMessageInfo>((resolve, reject) => {
          c.smtp.send({ from: envelope.from, to: envelope.to, size: raw.length, use8BitMime }, raw, (err, info) =>
            err ? reject(err) : resolve(info),
          );
        });
        c.sent++;
        const rejectedErrors = ((info as { rejectedErrors?: SmtpError[] }).rejectedErrors ?? []) as (SmtpError & { recipient?: string })[];
        return {
          accepted: info.accepted.map(String),
          rejected: rejectedErrors.map((e) => ({ address: e.recipient ?? '', error: e })),
          response: info.response,
          secure: c.smtp.secure,
          tls: c.tls,
        };
      } catch (err) {
        const e = err as SmtpError;
        // A reply-level failure leaves the connection usable after RSET; anything else ends it.
        if (typeof e.responseCode === 'number' && e.responseCode !== 421 && !c.dead) await reset(c);
        else discard(c);
        throw e;
      } finally {
        release(c);
      }
    },
    stats: () => ({ open, waiting: waiters.length }),
    close() {
      closed = true;
      for (const set of [...byKey.values()]) for (const c of [...set]) if (!c.busy) discard(c);
      for (const w of waiters.splice(0)) w.wake();
      return Promise.resolve();
    },
  };
}
