// The SMTP listener: a thin adapter from smtp-server to the inbound modules. Policy at RCPT TO
// (only domains Postern serves, 550 5.7.1 for anything else: never an open relay; local parts over
// 64 octets 501 5.1.3; the bare `postmaster` of RFC 5321 4.5.1 always accepted, postmaster.ts);
// DATA is read bounded by the SIZE limit and its header block by smtp.maxHeaderBytes and
// smtp.maxHeaderLines (header-bounds.ts), refused when it holds a bare LF or CR (SMTP smuggling:
// one message must never be read as two), given a Received header (trace.ts), then handed to the
// receiver, and 250 is sent only once it is stored. Every reply comes from one table of verdicts
// (replies.ts), with enhanced status codes (RFC 2034, advertised). Per-address connection limits,
// the junk-command budget and the command timeout are session-guard.ts; the early-talker pause
// before the greeting is `smtp.greetingDelay` (greeting-delay.ts).
// STARTTLS speaks TLS 1.2 or later (`MIN_TLS_VERSION`, shared with submission.ts); what became of
// each STARTTLS is told to `tlsSessions` (starttls-outcomes.ts) for the inbound TLS summary.
// Reverse DNS of clients is off by default: only the Received header uses it and it costs a lookup
// per connection.
import type { Socket } from 'node:net';
import path from 'node:path';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { type BounceHandler, parseRate } from '../channels/email/index.js';
import type { InboundTlsOutcome, IngestOutcome, ReportInbox } from '../reports/index.js';
import type { Config } from '../config.js';
import {
  type MailboxRoute,
  MessageRefused,
  type PassedClients,
  type Receiver,
  type Route,
  type Router,
  SOURCE_HEADROOM,
} from '../inbound/index.js';
import type { Clock } from '../lib/clock.js';
import type { DnsResolver } from '../lib/dns.js';
import { isDatabaseUnavailable } from '../db/index.js';
import { findBareLineEnding } from '../lib/line-endings.js';
import type { Logger } from '../lib/logger.js';
import { createClientLimits } from './client-limits.js';
import { headerBounds, type HeaderExcess } from './header-bounds.js';
import { setGreetingDelay } from './greeting-delay.js';
import { createPostmasterMailbox } from './postmaster.js';
import { refusal, replyFor, type Verdict } from './replies.js';
import { onSocketClose } from './internals.js';
import { loadTls } from './self-signed.js';
import type { ServedCertificates } from '../certificates/index.js';
import { installDataStream } from './data-stream.js';
import { guardSessions } from './session-guard.js';
import { observeStartTls } from './starttls-outcomes.js';
import { protocolOf, receivedHeader } from './trace.js';

export interface SmtpListener {
  listen(): Promise<number>;
  /** Whether the listener accepts connections now. */
  listening(): boolean;
  close(): Promise<void>;
}

export interface SmtpListenerDeps {
  config: Config;
  log: Logger;
  clock?: Clock;
  dns?: DnsResolver;
  router?: Router;
  receiver?: Receiver;
  bounces?: BounceHandler;
  reports?: ReportInbox;
  /** Told of sessions, accepted transactions and refusals by reason (metrics). */
  observe?: SmtpObserver;
  /** Clients greeted without the pause (inbound/passed-clients.ts); absent: every client waits it. */
  passedClients?: PassedClients | null;
  /** The ACME certificates (certificates/serving.ts); absent: the configured files or the self-signed pair. */
  certificates?: ServedCertificates;
  /** Told what became of each STARTTLS, when its session ends (reports/inbound-tls.ts counts them). */
  tlsSessions?: (outcome: InboundTlsOutcome) => void;
}

export interface SmtpObserver {
  session(): void;
  accepted(): void;
  rejected(reason: string): void;
}

/**
 * The oldest TLS version STARTTLS (and submission's implicit TLS) negotiates. TLS 1.0 and 1.1 are
 * deprecated (RFC 8996); a sender that has nothing newer gets a protocol_version alert and, as
 * opportunistic TLS does, may deliver in plaintext instead. smtp-server's own default is TLSv1.
 */
export const MIN_TLS_VERSION = 'TLSv1.2';

/** Longest local part (RFC 5321 4.5.3.1.1), in octets. */
const MAX_LOCAL_PART_OCTETS = 64;

/**
 * The reply to a mail to the report address, when it is not 250: a report too large to read is
 * refused as a message over the size limit is (the reporter learns it was not taken), and a copy of
 * a report being stored from another copy is told to come back.
 */
function reportVerdict(outcomes: IngestOutcome[]): Exclude<Verdict, { kind: 'ok' }> | null {
  if (outcomes.some((o) => o.kind === 'busy')) return { kind: 'denysoft', reason: 'report-in-progress' };
  const large = outcomes.find((o) => o.kind === 'refused' && (o.reason === 'too-large' || o.reason === 'too-many-rows'));
  return large?.kind === 'refused' ? { kind: 'deny', reason: 'report-too-large', detail: large.detail } : null;
}

/** Where one accepted recipient goes: a route of the inbound router, or the operator's mailbox. */
type Destination = Route | { kind: 'postmaster'; rcpt: string };

export function createSmtpListener(deps: SmtpListenerDeps): SmtpListener {
  const { config, log } = deps;
  const opts = config.smtp;
  const now = () => (deps.clock ? deps.clock.now() : new Date());
  // Routes decided at RCPT TO, per transaction (smtp-server replaces the envelope on RSET/MAIL).
  const routes = new WeakMap<object, Destination[]>();
  let server: SMTPServer | null = null;
  const sockets = new Set<Socket>();
  // Every refusal of a command goes through here, so the observer sees each reason.
  const refuse = (v: Parameters<typeof refusal>[0]) => {
    deps.observe?.rejected(v.reason);
    return refusal(v);
  };
  // The database is away (restart, failover): nothing can be looked up or committed, so the client
  // is told to come back (421 closes the connection, as Postfix does when its queue is not writable)
  // rather than get a 451 per recipient or, worse, a 250 for mail that is not stored.
  const storeAway = (err: unknown) => {
    log.warn({ err: { code: (err as { code?: string }).code, message: (err as Error).message } }, 'smtp: database unavailable');
    return refuse({ kind: 'disconnect', reason: 'database-unavailable', host: config.hostname });
  };
  const postmaster = createPostmasterMailbox({ dir: path.join(config.dataDir, 'postmaster'), hostname: config.hostname });

  /** Where a recipient goes: the router's answer, or for the bare postmaster, ours. */
  const destination = async (rcpt: string): Promise<Destination | null | 'postmaster-full'> => {
    if (rcpt.toLowerCase() !== 'postmaster') return deps.router ? deps.router.resolve(rcpt) : null;
    if (opts.postmasterAddress && deps.router) {
      const route = await deps.router.resolve(opts.postmasterAddress);
      if (route) return { ...route, rcpt };
      log.warn(
        { postmasterAddress: opts.postmasterAddress },
        'smtp.postmasterAddress is not an address Postern serves; postmaster mail goes to the postmaster mailbox',
      );
    }
    return (await postmaster.full()) ? 'postmaster-full' : { kind: 'postmaster', rcpt };
  };

  const onRcptTo = (address: { address: string }, session: SMTPServerSession, callback: (err?: Error | null) => void) => {
    const rcpt = address.address;
    const at = rcpt.lastIndexOf('@');
    if (Buffer.byteLength(at === -1 ? rcpt : rcpt.slice(0, at)) > MAX_LOCAL_PART_OCTETS) {
      return callback(refuse({ kind: 'deny', reason: 'local-part-too-long' }));
    }
    destination(rcpt).then(
      (route) => {
        if (route === 'postmaster-full') return callback(refuse({ kind: 'denysoft', reason: 'postmaster-full' }));
        if (!route) return callback(refuse({ kind: 'deny', reason: 'relay-denied', rcpt }));
        const list = routes.get(session.envelope) ?? [];
        if (list.some((r) => r.rcpt.toLowerCase() === rcpt.toLowerCase())) return callback();
        list.push(route);
        routes.set(session.envelope, list);
        callback();
      },
      (err) => {
        if (isDatabaseUnavailable(err)) return callback(storeAway(err));
        log.warn({ err, rcpt }, 'recipient lookup failed');
        callback(refuse({ kind: 'denysoft', reason: 'lookup-failed' }));
      },
    );
  };

  /** The Received header of a transaction (trace.ts). */
  const trace = (session: SMTPServerSession, recipients: string[]) =>
    receivedHeader({
      helo: session.hostNameAppearsAs || '',
      ip: session.remoteAddress,
      rdns: session.clientHostname && !session.clientHostname.startsWith('[') ? session.clientHostname : null,
      protocol: protocolOf(session.transmissionType || 'ESMTP', (session.envelope as { smtpUtf8?: boolean }).smtpUtf8 === true),
      id: `${session.id}-${(session as { transaction?: number }).transaction ?? 1}`,
      recipients,
      hostname: config.hostname,
      date: now(),
    });

  const onData = (stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null, message?: string) => void) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // The header block is bounded as it arrives; past a bound nothing more is kept.
    const header = headerBounds(opts.maxHeaderBytes, opts.maxHeaderLines);
    let excess: HeaderExcess | null = null;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (excess) return;
      if (!header.done) {
        excess = header.feed(chunk);
        if (excess) {
          chunks.length = 0;
          return;
        }
      }
      if (size <= opts.maxSizeBytes) chunks.push(chunk);
    });
    stream.once('error', (err) => callback(refuse({ kind: 'denysoft', reason: 'read-failed', detail: err.message })));
    stream.once('end', () => {
      if (stream.sizeExceeded || size > opts.maxSizeBytes) {
        return callback(refuse({ kind: 'deny', reason: 'too-large', maxBytes: opts.maxSizeBytes }));
      }
      if (excess) {
        return callback(
          refuse(
            excess.bound === 'bytes'
              ? { kind: 'deny', reason: 'header-too-large', maxBytes: excess.max }
              : { kind: 'deny', reason: 'header-too-many-lines', maxLines: excess.max },
          ),
        );
      }
      // Room before the message for the lines stored above it, which the analysis writes there
      // rather than copying the message behind them (analyze.ts).
      const whole = Buffer.allocUnsafeSlow(SOURCE_HEADROOM + size);
      let at = SOURCE_HEADROOM;
      for (const chunk of chunks) at += chunk.copy(whole, at);
      const raw = whole.subarray(SOURCE_HEADROOM);
      // Storing outlives this handler and keeps its scope alive: drop the socket's buffers (64 KiB
      // each) now, or they stay until the reply and then wait for a full collection.
      chunks.length = 0;
      if (findBareLineEnding(raw) !== -1) {
        return callback(refuse({ kind: 'deny', reason: 'bare-line-ending' }));
      }
      const list = routes.get(session.envelope) ?? [];
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      const bounceRcpts = list.filter((r) => r.kind === 'bounce').map((r) => r.rcpt);
      const mailbox = list.filter((r): r is MailboxRoute => r.kind === 'mailbox');
      const received = trace(
        session,
        list.map((r) => r.rcpt),
      );
      void (async (): Promise<string[] | Exclude<Verdict, { kind: 'ok' }>> => {
        if (bounceRcpts.length > 0 && deps.bounces) await deps.bounces.handle({ raw, mailFrom, recipients: bounceRcpts });
        if (list.some((r) => r.kind === 'report') && deps.reports) {
          const refused = reportVerdict(await deps.reports.ingest({ raw, mailFrom }));
          if (refused) return refused;
        }
        if (list.some((r) => r.kind === 'postmaster')) {
          const file = await postmaster.deliver(Buffer.concat([Buffer.from(received), raw]), now());
          log.info({ file, dir: postmaster.dir, from: mailFrom }, 'postmaster mail delivered to the postmaster mailbox');
        }
        let ids: string[] = [];
        if (mailbox.length > 0 && deps.receiver) {
          const stored = await deps.receiver.receive({
            raw,
            mailFrom,
            routes: mailbox,
            ip: session.remoteAddress,
            helo: session.hostNameAppearsAs ?? '',
            trace: received,
            headroom: SOURCE_HEADROOM,
          });
          ids = stored.map((s) => s.id);
        }
        return ids;
      })().then(
        (ids) => {
          if (!Array.isArray(ids)) return callback(refuse(ids));
          deps.observe?.accepted();
          callback(null, replyFor({ kind: 'ok', ids }).message);
        },
        (err) => {
          if (err instanceof MessageRefused) {
            const r = err.refusal;
            return callback(
              refuse(
                r.reason === 'spam'
                  ? { kind: 'deny', reason: 'spam', score: r.score }
                  : { kind: 'deny', reason: 'virus', signature: r.signature },
              ),
            );
          }
          if (isDatabaseUnavailable(err)) return callback(storeAway(err));
          log.error({ err, session: session.id }, 'storing inbound message failed');
          callback(refuse({ kind: 'denysoft', reason: 'storage-failed' }));
        },
      );
    });
  };

  return {
    listen() {
      const certificates = deps.certificates;
      const tls =
        certificates?.defaultPair() ??
        loadTls({
          dataDir: config.dataDir,
          hostname: config.hostname,
          certFile: opts.tlsCert,
          keyFile: opts.tlsKey,
          now: now(),
        });
      installDataStream();
      server = new SMTPServer({
        name: config.hostname,
        // smtp-server writes "<name> ESMTP <banner>": "220 mx.example.com ESMTP Postern".
        banner: 'Postern',
        hideENHANCEDSTATUSCODES: false,
        disabledCommands: ['AUTH'],
        authOptional: true,
        logger: false,
        key: tls.key,
        cert: tls.cert,
        // The ACME certificate of the name a client asks for; a client naming none gets `hostname`'s.
        ...(certificates ? { SNICallback: certificates.sniCallback } : {}),
        minVersion: MIN_TLS_VERSION,
        size: opts.maxSizeBytes,
        rejectOversized: true,
        maxClients: opts.maxClients,
        maxRecipients: opts.maxRecipients,
        socketTimeout: opts.socketTimeout,
        useProxy: opts.proxyProtocol,
        disableReverseLookup: !opts.reverseLookup,
        ...(opts.reverseLookup && deps.dns
          ? {
              resolver: {
                reverse: (ip: string, cb: (err: Error | null, names?: string[]) => void) =>
                  void deps.dns!.reverse(ip).then(
                    (n) => cb(null, n),
                    (e) => cb(e),
                  ),
              },
            }
          : {}),
        onRcptTo,
        onData,
        onMailFrom(_address, session, callback) {
          // Too many recipients are refused by smtp-server's own maxRecipients check at RCPT.
          routes.delete(session.envelope);
          callback();
        },
      });
      const smtpServer = server;
      certificates?.onChange(() => smtpServer.updateSecureContext(certificates.defaultPair()));
      // Admission and the per-session guards first: a refused connection gets no greeting.
      guardSessions(server, {
        hostname: config.hostname,
        limits: createClientLimits({
          maxConnections: opts.maxConnectionsPerAddress,
          rate: parseRate(opts.connectionRatePerAddress),
          exceptions: opts.limitExceptions,
          now: () => now().getTime(),
        }),
        rateText: opts.connectionRatePerAddress,
        maxConnectionsPerAddress: opts.maxConnectionsPerAddress,
        maxNoops: opts.maxNoops,
        commandTimeoutMs: opts.commandTimeout,
        log,
        refused: (reason) => deps.observe?.rejected(reason),
      });
      setGreetingDelay(server, opts.greetingDelay, deps.passedClients);
      if (deps.tlsSessions) observeStartTls(server, deps.tlsSessions);
      server.on('error', (err) => log.warn({ err }, 'smtp error'));
      // A hard cap on a connection's lifetime, whatever it is doing.
      server.server.on('connection', (socket: Socket) => {
        deps.receiver?.warm();
        deps.observe?.session();
        sockets.add(socket);
        const timer = setTimeout(() => socket.destroy(), opts.maxConnectionTime);
        timer.unref();
        onSocketClose(socket, () => {
          clearTimeout(timer);
          sockets.delete(socket);
        });
      });
      const s = server;
      return new Promise((resolve, reject) => {
        s.server.once('error', reject);
        s.listen(opts.port, opts.host, () => {
          s.server.off('error', reject);
          resolve((s.server.address() as { port: number }).port);
        });
      });
    },
    listening: () => server?.server.listening === true,
    close: () => (server ? closeServer(server, sockets) : Promise.resolve()),
  };
}

/** Stops an smtp-server listening; its sessions are cut after a short grace (it would wait for them to end by themselves). */
export function closeServer(server: SMTPServer, sockets: Iterable<Socket>): Promise<void> {
  return new Promise((resolve) => {
    if (!server.server.listening) return resolve();
    const grace = setTimeout(() => {
      for (const s of sockets) s.destroy();
    }, 2_000);
    grace.unref();
    server.close(() => {
      clearTimeout(grace);
      resolve();
    });
  });
}
