// What keeps one client from holding the listener: per-address admission (client-limits.ts), a
// budget of junk commands per message and a command timeout, on every connection smtp-server
// accepts (internals.ts). Also where the enhanced status codes of our own replies (replies.ts,
// which carry theirs) are kept from being prefixed a second time by smtp-server.
//
// - A connection over its address's limits is answered 421 4.7.0 instead of the greeting, at
//   once, so it never holds a slot.
// - NOOP, RSET, VRFY and HELP do nothing for a message; after `smtp.maxNoops` of them since the
//   last accepted message (Postfix: smtpd_junk_command_limit, 100) the client gets 421 4.7.0.
// - After each reply, the client has `smtp.commandTimeout` to send a complete command line (bytes
//   trickled slower than that do not extend it, as they do the socket's idle timeout). While a
//   message is being sent it is the longest silence allowed between two pieces of it (Postfix's
//   smtpd_timeout: a large message on a slow link is not cut, a stalled one is; trickling is
//   bounded by the header bounds, the size limit and smtp.maxConnectionTime). While Postern is
//   still deciding on a reply, it does not run.
import type { Socket } from 'node:net';
import type { SMTPServer } from 'smtp-server';
import type { Logger } from '../lib/logger.js';
import type { ClientLimits } from './client-limits.js';
import { onConnection, type Connection } from './internals.js';
import { replyFor, type Verdict } from './replies.js';

export interface SessionGuardOptions {
  hostname: string;
  limits: ClientLimits;
  /** The configured rate, as written, for the refusal text. */
  rateText: string;
  maxConnectionsPerAddress: number;
  /** NOOP/RSET/VRFY/HELP allowed between accepted messages; 0 = unlimited. */
  maxNoops: number;
  commandTimeoutMs: number;
  log: Logger;
  /** Told the reason of each disconnecting refusal (metrics). */
  refused?: (reason: string) => void;
}

const JUNK = new Set(['NOOP', 'RSET', 'VRFY', 'HELP']);
/** A reply text that starts with its own enhanced status code (replies.ts). */
const ENHANCED = /^[245]\.\d{1,3}\.\d{1,3} /;

function disconnect(conn: Connection, v: Extract<Verdict, { kind: 'disconnect' }>, refused?: (reason: string) => void): void {
  refused?.(v.reason);
  const r = replyFor(v);
  conn.send(r.code, r.message);
}

export function guardSessions(server: SMTPServer, opts: SessionGuardOptions): void {
  const { hostname: host, log } = opts;
  onConnection(server, (conn) => {
    // Our replies carry their enhanced code; smtp-server would add its own in front.
    const send = conn.send.bind(conn);
    let afterReply = (_code: number, _context: string | false | undefined) => {};
    // Replies made in one turn of the event loop leave in one write: a pipelining client's MAIL,
    // RCPT and DATA replies become one TLS record and one system call instead of three. A 220
    // (the greeting, STARTTLS's go-ahead: the socket is about to be wrapped) or a closing reply
    // leaves at once.
    let corked: Socket | null = null;
    const flush = () => {
      const socket = corked;
      corked = null;
      socket?.uncork();
    };
    conn.send = (code, data, context) => {
      if (corked === null && !conn._closing && !conn._closed) {
        corked = conn._socket;
        corked.cork();
        setImmediate(flush);
      }
      send(code, data, typeof data === 'string' && ENHANCED.test(data) ? false : context);
      if (code === 220 || code === 221 || code === 421 || conn._closing) flush();
      afterReply(code, context);
    };

    const ip = conn.remoteAddress;
    const admission = opts.limits.admit(ip);
    if (!admission.ok) {
      log.info({ ip, reason: admission.reason, key: admission.key }, 'smtp connection refused by the per-address limits');
      return admission.reason === 'too-many-connections'
        ? disconnect(
            conn,
            { kind: 'disconnect', reason: 'too-many-connections', host, ip, max: opts.maxConnectionsPerAddress },
            opts.refused,
          )
        : disconnect(conn, { kind: 'disconnect', reason: 'connection-rate', host, ip, rate: opts.rateText }, opts.refused);
    }
    let junk = 0;
    let timer: NodeJS.Timeout | null = null;
    // When the message being received last had a piece (performance.now()); read when the timer fires.
    let lastData = 0;
    const disarm = () => {
      if (timer) clearTimeout(timer);
      timer = null;
    };
    const arm = (ms: number) => {
      timer = setTimeout(expire, ms);
      timer.unref();
    };
    // The slot is free as soon as the connection is closing (after QUIT's 221, a 421), not only
    // once the socket is gone.
    const close = conn.close.bind(conn);
    conn.close = () => {
      admission.release();
      close();
    };
    conn._socket.once('close', () => {
      admission.release();
      disarm();
    });
    const seconds = opts.commandTimeoutMs / 1000;
    function expire() {
      timer = null;
      if (conn._closing || conn._closed || conn._handlerPending) return;
      if (conn._dataStream) {
        // The message is in and Postern is deciding: its reply arms the timer again.
        if (!conn._parser || !conn._parser._dataMode) return;
        const quiet = performance.now() - lastData;
        if (quiet < opts.commandTimeoutMs) return arm(opts.commandTimeoutMs - quiet);
        log.debug({ ip, session: conn.id }, 'smtp data timeout');
        return disconnect(conn, { kind: 'disconnect', reason: 'data-timeout', host, seconds }, opts.refused);
      }
      log.debug({ ip, session: conn.id }, 'smtp command timeout');
      disconnect(conn, { kind: 'disconnect', reason: 'command-timeout', host, seconds }, opts.refused);
    }
    afterReply = (code, context) => {
      if (code === 250 && context === 'DATA_OK') junk = 0;
      disarm();
      if (conn._closing || conn._closed) return;
      if (conn._dataStream) {
        // 354: the message starts. A listener beside the onData handler's notes each piece's time
        // (a timer per piece would cost more than the piece).
        if (code !== 354) return;
        lastData = performance.now();
        conn._dataStream.on('data', () => {
          lastData = performance.now();
        });
      }
      arm(opts.commandTimeoutMs);
    };

    const onCommand = conn._onCommand.bind(conn);
    conn._onCommand = (command, callback) => {
      disarm();
      const name = String(command).slice(0, 5).trim().toUpperCase();
      if (opts.maxNoops && conn._ready && !conn._upgrading && JUNK.has(name) && ++junk > opts.maxNoops) {
        log.info({ ip, session: conn.id, command: name }, 'smtp junk command budget spent');
        return disconnect(conn, { kind: 'disconnect', reason: 'too-many-junk-commands', host, max: opts.maxNoops }, opts.refused);
      }
      onCommand(command, callback);
    };
  });
}
