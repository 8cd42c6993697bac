// The submission listeners (RFC 6409 on `submission.port`, 587, with STARTTLS; RFC 8314 implicit
// TLS on `submission.tlsPort`, 465): a thin adapter from smtp-server to submission/. AUTH PLAIN or
// LOGIN only once the connection is encrypted (smtp-server answers `538 5.7.0` before STARTTLS),
// and nothing but AUTH, EHLO, STARTTLS, NOOP, RSET and QUIT before it (`530 5.7.0`): never a relay
// without AUTH. MAIL FROM, RCPT TO and the message are checked by submission/ and every refusal is
// answered from replies.ts; 250 comes once every recipient's copy is committed. The inbound MX
// listener (listener.ts) is a separate server and knows nothing of this one; they share the
// certificate, the oldest TLS version (TLS 1.2), the size and recipient limits and the
// per-connection guards (session-guard.ts).
import type { Socket } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { parseRate } from '../channels/email/index.js';
import type { Config } from '../config.js';
import { isDatabaseUnavailable } from '../db/index.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Submission } from '../submission/index.js';
import type { Principal } from '../workspaces/index.js';
import { createClientLimits } from './client-limits.js';
import { closeServer, MIN_TLS_VERSION } from './listener.js';
import { queuedReply, refusal, submissionVerdict } from './replies.js';
import { onSocketClose } from './internals.js';
import { loadTls } from './self-signed.js';
import type { KeyPair, ServedCertificates } from '../certificates/index.js';
import { installDataStream } from './data-stream.js';
import { guardSessions } from './session-guard.js';

export interface SubmissionListener {
  /** Listens on both ports; `tlsPort` is null when `submission.tlsPort` is 0. */
  listen(): Promise<{ port: number; tlsPort: number | null }>;
  listening(): boolean;
  close(): Promise<void>;
}

/** What the submission listeners tell metrics/ (through app.ts): sessions, AUTH outcomes, accepts and refusals. */
export interface SubmissionObserver {
  session(port: 'submission' | 'submissions'): void;
  auth(outcome: 'ok' | 'failed' | 'throttled'): void;
  accepted(recipients: number): void;
  rejected(reason: string): void;
}

export interface SubmissionListenerDeps {
  config: Config;
  log: Logger;
  clock?: Clock;
  submission: Submission;
  observe?: SubmissionObserver;
  /** The ACME certificates (certificates/serving.ts); absent: the configured files or the self-signed pair. */
  certificates?: ServedCertificates;
}

type Callback = (err?: Error | null) => void;

export function createSubmissionListener(deps: SubmissionListenerDeps): SubmissionListener {
  const { config, log, submission, observe } = deps;
  const smtp = config.smtp;
  const now = () => (deps.clock ? deps.clock.now() : new Date());
  const servers: SMTPServer[] = [];
  const sockets = new Set<Socket>();

  /** Answers a handler's callback with the reply for `err`, or 451 for what has none. */
  const fail = (cb: Callback, err: unknown, session: SMTPServerSession, what: string) => {
    const verdict = submissionVerdict(err);
    if (verdict) {
      observe?.rejected(verdict.reason);
      if (verdict.reason === 'auth-failed') observe?.auth('failed');
      if (verdict.reason === 'auth-throttled') observe?.auth('throttled');
      return cb(refusal(verdict));
    }
    if (isDatabaseUnavailable(err)) {
      observe?.rejected('database-unavailable');
      return cb(refusal({ kind: 'disconnect', reason: 'database-unavailable', host: config.hostname }));
    }
    log.error({ err, session: session.id }, `submission: ${what} failed`);
    observe?.rejected('storage-failed');
    cb(refusal({ kind: 'denysoft', reason: 'storage-failed' }));
  };
  const principalOf = (session: SMTPServerSession) => session.user as unknown as Principal;

  const onData = (stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null, message?: string) => void) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= smtp.maxSizeBytes) chunks.push(chunk);
    });
    stream.once('error', (err) => {
      observe?.rejected('read-failed');
      callback(refusal({ kind: 'denysoft', reason: 'read-failed', detail: err.message }));
    });
    // A client that goes away before its final dot never reaches 'end': nothing is submitted.
    stream.once('end', () => {
      if (stream.sizeExceeded || size > smtp.maxSizeBytes) {
        observe?.rejected('too-large');
        return callback(refusal({ kind: 'deny', reason: 'too-large', maxBytes: smtp.maxSizeBytes }));
      }
      const raw = Buffer.concat(chunks);
      chunks.length = 0;
      const envelope = {
        mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
        rcptTo: session.envelope.rcptTo.map((a) => a.address),
      };
      submission.submit(principalOf(session), envelope, raw).then(
        (ids) => {
          observe?.accepted(ids.length);
          callback(null, queuedReply(ids).message);
        },
        (err) => fail(callback, err, session, 'submitting a message'),
      );
    });
  };

  const make = (secure: boolean, tls: KeyPair) => {
    const certificates = deps.certificates;
    installDataStream();
    const server = new SMTPServer({
      name: config.hostname,
      banner: 'Postern',
      secure,
      key: tls.key,
      cert: tls.cert,
      ...(certificates ? { SNICallback: certificates.sniCallback } : {}),
      minVersion: MIN_TLS_VERSION,
      hideENHANCEDSTATUSCODES: false,
      hideDSN: true,
      authMethods: ['PLAIN', 'LOGIN'],
      allowInsecureAuth: false,
      authOptional: false,
      authRequiredMessage: 'authentication required: AUTH PLAIN or LOGIN with an API key (after STARTTLS on this port)',
      logger: false,
      size: smtp.maxSizeBytes,
      rejectOversized: true,
      maxClients: smtp.maxClients,
      maxRecipients: smtp.maxRecipients,
      socketTimeout: smtp.socketTimeout,
      disableReverseLookup: true,
      onAuth(auth, session, cb) {
        submission.authenticate(auth.username ?? '', auth.password ?? '', { ip: session.remoteAddress }).then(
          (principal) => {
            observe?.auth('ok');
            cb(null, { user: principal });
          },
          (err) => fail(cb, err, session, 'AUTH'),
        );
      },
      onMailFrom(address, session, cb) {
        submission.mailFrom(principalOf(session), address.address).then(
          () => cb(),
          (err) => fail(cb, err, session, 'MAIL FROM'),
        );
      },
      onRcptTo(address, session, cb) {
        submission.rcptTo(principalOf(session), address.address).then(
          () => cb(),
          (err) => fail(cb, err, session, 'RCPT TO'),
        );
      },
      onData,
    });
    guardSessions(server, {
      hostname: config.hostname,
      limits: createClientLimits({
        maxConnections: smtp.maxConnectionsPerAddress,
        rate: parseRate(smtp.connectionRatePerAddress),
        exceptions: smtp.limitExceptions,
        now: () => now().getTime(),
      }),
      rateText: smtp.connectionRatePerAddress,
      maxConnectionsPerAddress: smtp.maxConnectionsPerAddress,
      maxNoops: smtp.maxNoops,
      commandTimeoutMs: smtp.commandTimeout,
      log,
      refused: (reason) => observe?.rejected(reason),
    });
    certificates?.onChange(() => server.updateSecureContext(certificates.defaultPair()));
    server.on('error', (err) => log.warn({ err }, 'submission smtp error'));
    // The same hard cap on a connection's lifetime as the MX listener's.
    server.server.on('connection', (socket: Socket) => {
      observe?.session(secure ? 'submissions' : 'submission');
      sockets.add(socket);
      const timer = setTimeout(() => socket.destroy(), smtp.maxConnectionTime);
      timer.unref();
      onSocketClose(socket, () => {
        clearTimeout(timer);
        sockets.delete(socket);
      });
    });
    servers.push(server);
    return server;
  };

  const listenOn = (server: SMTPServer, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(port, config.submission.host, () => {
        server.server.off('error', reject);
        resolve((server.server.address() as { port: number }).port);
      });
    });

  return {
    async listen() {
      const tls =
        deps.certificates?.defaultPair() ??
        loadTls({ dataDir: config.dataDir, hostname: config.hostname, certFile: smtp.tlsCert, keyFile: smtp.tlsKey, now: now() });
      const port = await listenOn(make(false, tls), config.submission.port);
      const tlsPort = config.submission.tlsPort === 0 ? null : await listenOn(make(true, tls), config.submission.tlsPort);
      return { port, tlsPort };
    },
    listening: () => servers.length > 0 && servers.every((s) => s.server.listening),
    close: () => Promise.all(servers.map((server) => closeServer(server, sockets))).then(() => undefined),
  };
}
