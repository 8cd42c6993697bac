// The SMTP listener: a thin adapter from smtp-server to the inbound modules. Policy at RCPT TO
// (only domains Postern serves, 550 5.7.1 for anything else: never an open relay); DATA is read
// bounded by the SIZE limit, refused when it holds a bare LF or CR (SMTP smuggling: one message
// must never be read as two), then handed to the receiver, and 250 is sent only once it is stored.
// Reverse DNS of clients is off by default: nothing downstream uses it and it costs a lookup per
// connection. The early-talker pause before the greeting is `smtp.greetingDelayMs` (greeting-delay.ts).
import type { Socket } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../config.js';
import type { BounceHandler } from '../inbound/bounces.js';
import type { MailboxRoute, Receiver } from '../inbound/receive.js';
import type { Route, Router } from '../inbound/routing.js';
import type { Clock } from '../lib/clock.js';
import type { DnsResolver } from '../lib/dns.js';
import type { Logger } from '../lib/logger.js';
import { setGreetingDelay } from './greeting-delay.js';
import { loadTls } from './self-signed.js';

export interface SmtpListener {
  listen(): Promise<number>;
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
}

type SmtpError = Error & { responseCode: number };
const reply = (code: number, message: string): SmtpError => Object.assign(new Error(message), { responseCode: code });

/** Index of the first LF not preceded by CR or CR not followed by LF, or -1. */
export function findBareLineEnding(buf: Buffer): number {
  for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, i + 1)) {
    if (i === 0 || buf[i - 1] !== 0x0d) return i;
  }
  for (let i = buf.indexOf(0x0d); i !== -1; i = buf.indexOf(0x0d, i + 1)) {
    if (i === buf.length - 1 || buf[i + 1] !== 0x0a) return i;
  }
  return -1;
}

export function createSmtpListener(deps: SmtpListenerDeps): SmtpListener {
  const { config, log } = deps;
  const opts = config.smtp;
  // Routes decided at RCPT TO, per transaction (smtp-server replaces the envelope on RSET/MAIL).
  const routes = new WeakMap<object, Route[]>();
  let server: SMTPServer | null = null;
  const sockets = new Set<Socket>();

  const onRcptTo = (address: { address: string }, session: SMTPServerSession, callback: (err?: Error | null) => void) => {
    const rcpt = address.address;
    if (!deps.router) return callback(reply(550, `5.7.1 <${rcpt}>: relay access denied`));
    deps.router.resolve(rcpt).then(
      (route) => {
        if (!route) return callback(reply(550, `5.7.1 <${rcpt}>: relay access denied`));
        const list = routes.get(session.envelope) ?? [];
        if (list.some((r) => r.rcpt.toLowerCase() === rcpt.toLowerCase())) return callback();
        list.push(route);
        routes.set(session.envelope, list);
        callback();
      },
      (err) => {
        log.warn({ err, rcpt }, 'recipient lookup failed');
        callback(reply(451, '4.3.0 temporary failure looking up the recipient, try again later'));
      },
    );
  };

  const onData = (stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null, message?: string) => void) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= opts.maxSizeBytes) chunks.push(chunk);
    });
    stream.once('error', (err) => callback(reply(451, `4.3.0 ${err.message}`)));
    stream.once('end', () => {
      if (stream.sizeExceeded || size > opts.maxSizeBytes) {
        return callback(reply(552, `5.3.4 message exceeds fixed maximum message size ${opts.maxSizeBytes}`));
      }
      const raw = Buffer.concat(chunks, size);
      if (findBareLineEnding(raw) !== -1) {
        return callback(reply(554, '5.6.0 message contains a bare LF or CR; lines must end with CRLF (RFC 5321 2.3.8)'));
      }
      const list = routes.get(session.envelope) ?? [];
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      const bounceRcpts = list.filter((r) => r.kind === 'bounce').map((r) => r.rcpt);
      const mailbox = list.filter((r): r is MailboxRoute => r.kind === 'mailbox');
      void (async () => {
        if (bounceRcpts.length > 0 && deps.bounces) await deps.bounces.handle({ raw, mailFrom, recipients: bounceRcpts });
        let ids: string[] = [];
        if (mailbox.length > 0 && deps.receiver) {
          const stored = await deps.receiver.receive({
            raw,
            mailFrom,
            routes: mailbox,
            ip: session.remoteAddress,
            helo: session.hostNameAppearsAs ?? '',
          });
          ids = stored.map((s) => s.id);
        }
        return ids;
      })().then(
        (ids) => callback(null, `2.0.0 Ok: stored${ids.length ? ' as ' + ids.join(' ') : ''}`),
        (err) => {
          log.error({ err }, 'storing inbound message failed');
          callback(reply(451, '4.3.0 temporary failure storing the message, try again later'));
        },
      );
    });
  };

  return {
    listen() {
      const tls = loadTls({
        dataDir: config.dataDir,
        hostname: config.hostname,
        certFile: opts.tlsCert,
        keyFile: opts.tlsKey,
        now: (deps.clock ?? { now: () => new Date() }).now(),
      });
      server = new SMTPServer({
        name: config.hostname,
        banner: 'Postern ESMTP',
        disabledCommands: ['AUTH'],
        authOptional: true,
        logger: false,
        key: tls.key,
        cert: tls.cert,
        size: opts.maxSizeBytes,
        rejectOversized: true,
        maxClients: opts.maxClients,
        maxRecipients: opts.maxRecipients,
        socketTimeout: opts.socketTimeoutMs,
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
      } as ConstructorParameters<typeof SMTPServer>[0]);
      setGreetingDelay(server, opts.greetingDelayMs);
      server.on('error', (err) => log.warn({ err }, 'smtp error'));
      // A hard cap on a connection's lifetime, whatever it is doing.
      server.server.on('connection', (socket: Socket) => {
        deps.receiver?.warm();
        sockets.add(socket);
        const timer = setTimeout(() => socket.destroy(), opts.maxConnectionMs);
        timer.unref();
        socket.once('close', () => {
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
    close: () =>
      new Promise((resolve) => {
        if (!server || !server.server.listening) return resolve();
        // smtp-server waits for sessions to end by themselves; cut them after a short grace.
        const grace = setTimeout(() => {
          for (const s of sockets) s.destroy();
        }, 2_000);
        grace.unref();
        server.close(() => {
          clearTimeout(grace);
          resolve();
        });
      }),
  };
}
