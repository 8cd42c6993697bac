// `smtp-relay`: every message goes to one smarthost (`delivery.relayUrl`, smtp:// or smtps://,
// credentials in the URL) over a nodemailer connection pool. The relay's 250 means "accepted for
// delivery", so the outcome is `sent`; final delivery is only known if a DSN comes back later.
//
// nodemailer reads a `url` option alone and drops every other option given with it (the pool, the
// EHLO name, the TLS settings), so the URL is taken apart here and the pool gets explicit options:
// EHLO with `hostname`, `delivery.maxConnections` and `delivery.messagesPerConnection`, and the
// TLS policy (`delivery.tls`, as for direct delivery; smtps:// is TLS from the first byte):
//   opportunistic: STARTTLS when offered, certificate not verified, plain text if the upgrade fails;
//   verify: STARTTLS when offered with a verified certificate, plain text when not offered;
//   require: STARTTLS with a verified certificate, or the message is deferred (never plain text);
//   none: never STARTTLS (smtps:// is still TLS, unverified).
// A certificate verifies against the system's CAs plus those of `delivery.relayCaFile`.
// The relay's name is looked up through `dns.servers` like every other name (relayAddress):
// nodemailer would ask the system's resolvers and then getaddrinfo, which reads /etc/hosts. The
// pool is handed a connected socket; TLS, SNI and the certificate check still use the name.
import { isAscii } from 'node:buffer';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { rootCertificates } from 'node:tls';
import type Nodemailer from 'nodemailer';
import { lazyRequire } from '../../lib/lazy.js';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type { ChannelTransport, Delivery, DeliveryOutcome } from '../../channel.js';
import { ConfigError, type Config } from '../../config.js';
import type { Deps } from '../../deps.js';
import { isNoData, type DnsResolver } from '../../lib/dns.js';
import { attempt, recordRejection } from './attempt.js';
import type { EmailDeps } from './prepare.js';
import type { SmtpError } from './smtp-pool.js';
import { fastDotStuffing } from './dot-stuffing.js';

// Loaded when a relay is configured (lib/lazy.ts).
const nodemailer = lazyRequire<typeof Nodemailer>('nodemailer');

export interface RelayDeps extends EmailDeps, Pick<Deps, 'dns'> {
  connectionId: string;
}

const PROVIDER = 'smtp-relay';

/** The pool options `delivery.*` describes for the relay; throws a ConfigError for a bad URL or CA file. */
function relayPoolOptions(config: Config): SMTPPool.Options {
  const d = config.delivery;
  let url: URL;
  try {
    url = new URL(d.relayUrl);
  } catch {
    throw new ConfigError('invalid setting delivery.relayUrl (POSTERN_DELIVERY_RELAY_URL): not a URL');
  }
  const implicitTls = url.protocol === 'smtps:';
  let ca: string[] | undefined;
  if (d.relayCaFile) {
    try {
      ca = [...rootCertificates, readFileSync(d.relayCaFile, 'utf8')];
    } catch (err) {
      throw new ConfigError(`invalid setting delivery.relayCaFile (POSTERN_DELIVERY_RELAY_CA_FILE): ${(err as Error).message}`);
    }
  }
  const verify = d.tls === 'verify' || d.tls === 'require';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return {
    pool: true,
    host,
    port: url.port ? Number(url.port) : implicitTls ? 465 : 587,
    secure: implicitTls,
    ...(url.username ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
    name: config.hostname,
    maxConnections: d.maxConnections,
    maxMessages: d.messagesPerConnection,
    ignoreTLS: d.tls === 'none',
    requireTLS: d.tls === 'require',
    opportunisticTLS: d.tls === 'opportunistic',
    tls: { rejectUnauthorized: verify, ...(ca ? { ca } : {}) },
    connectionTimeout: d.timeout,
    greetingTimeout: d.timeout,
    socketTimeout: d.timeout,
  };
}

/** The relay's address from dns.servers: an IP literal as is, else its A record, else its AAAA. */
async function relayAddress(dns: Pick<DnsResolver, 'resolve4' | 'resolve6'>, host: string): Promise<string> {
  if (net.isIP(host)) return host;
  const none = (err: unknown) => {
    if (isNoData(err)) return [];
    throw err;
  };
  const found = (await dns.resolve4(host).catch(none))[0] ?? (await dns.resolve6(host).catch(none))[0];
  if (found === undefined) throw Object.assign(new Error(`the relay ${host} has no A or AAAA record`), { code: 'EDNS' });
  return found;
}

/** A TCP connection to the relay at its address from dns.servers, for the pool (its getSocket). */
function relaySocket(dns: DnsResolver, host: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return relayAddress(dns, host).then(
    (address) =>
      new Promise((resolve, reject) => {
        const socket = net.connect({ host: address, port });
        const fail = (err: Error) => {
          socket.destroy();
          reject(err);
        };
        socket.setTimeout(timeoutMs, () => fail(Object.assign(new Error(`connection to ${host} timed out`), { code: 'ETIMEDOUT' })));
        socket.once('error', fail);
        socket.once('connect', () => {
          socket.setTimeout(0);
          socket.off('error', fail);
          resolve(socket);
        });
      }),
  );
}

export function createRelayTransport(deps: RelayDeps): ChannelTransport {
  const base = relayPoolOptions(deps.config);
  const options: SMTPPool.Options = {
    ...base,
    getSocket: (_opts, callback) => {
      relaySocket(deps.dns, base.host!, base.port!, deps.config.delivery.timeout).then(
        (connection) => callback(null, { connection }),
        (err: Error) => callback(err, null),
      );
    },
  };
  fastDotStuffing();
  const transport = nodemailer().createTransport(options);
  // As the URL names it (host, and port when given), for timeline notes and errors.
  const relayHost = new URL(deps.config.delivery.relayUrl).host;

  return {
    name: PROVIDER,
    deliver: (delivery: Delivery): Promise<DeliveryOutcome> =>
      attempt(deps, delivery, PROVIDER, 'sent', async (prepared, summary, todo) => {
        if (todo.length === 0) return;
        const reject = (r: (typeof todo)[number], err: SmtpError) => recordRejection(r, err, relayHost, summary);
        try {
          const info = (await transport.sendMail({
            // 8-bit bytes (a forwarded message's own) are announced with BODY=8BITMIME (RFC 6152).
            // (nodemailer passes the envelope's extra fields to its connection; its types do not say so.)
            envelope: { from: prepared.envelopeFrom, to: todo.map((r) => r.address), use8BitMime: !isAscii(prepared.raw) } as {
              from: string;
              to: string[];
            },
            raw: prepared.raw,
          })) as {
            accepted: string[];
            rejected: string[];
            rejectedErrors?: (SmtpError & { recipient?: string })[];
            response: string;
          };
          const rejected = new Map((info.rejectedErrors ?? []).map((e) => [String(e.recipient ?? '').toLowerCase(), e]));
          for (const r of todo) {
            r.attempts++;
            const err = rejected.get(r.address);
            if (err) reject(r, err);
            else {
              r.status = 'accepted';
              r.response = `${relayHost}: ${info.response}`;
              summary.notes.push(`${r.kind} ${r.address}: sent (${r.response})`);
            }
          }
        } catch (err) {
          const e = err as SmtpError;
          const byAddr = new Map(
            (e.rejectedErrors ?? []).map((x) => [String((x as { recipient?: string }).recipient ?? '').toLowerCase(), x]),
          );
          for (const r of todo) {
            r.attempts++;
            reject(r, byAddr.get(r.address) ?? e);
          }
        }
      }),
    close() {
      transport.close();
      return Promise.resolve();
    },
  };
}
