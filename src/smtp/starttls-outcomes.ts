// What became of each STARTTLS a client asked the MX listener for: the handshake succeeded, or why
// it failed, told once per session when the session ends (reports/inbound-tls.ts counts them).
// smtp-server has no event for a STARTTLS that failed, and it keeps quiet about a client that
// reset the connection, so the session's state is read where it ends (its `onClose`): STARTTLS
// was asked for when `_upgrading` was set, and succeeded when the connection is `secure`. The
// reason of a failure is the error smtp-server reported for the connection, classified on its
// OpenSSL code (never its text); a 421 sent in the middle of the handshake is our timeout (the
// command timeout of session-guard.ts, or smtp-server's idle timeout).
import type { SMTPServer, SMTPServerSession } from 'smtp-server';
import type { InboundTlsFailure } from '../contract/report-schemas.js';
import type { InboundTlsOutcome } from '../reports/index.js';
import { onConnection } from './internals.js';

// OpenSSL 3 reason codes as Node names them (ERR_SSL_ + the reason); alerts the client sent carry
// the alert's name (SSLV3_ALERT_*, TLSV1_ALERT_*).
const BY_CODE: Record<string, InboundTlsFailure> = {
  ERR_SSL_UNSUPPORTED_PROTOCOL: 'protocol-version',
  ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION: 'protocol-version',
  ERR_SSL_VERSION_TOO_LOW: 'protocol-version',
  ERR_SSL_NO_SHARED_CIPHER: 'no-shared-cipher',
  ERR_SSL_NO_SHARED_GROUPS: 'no-shared-cipher',
  ERR_SSL_NO_SUITABLE_KEY_SHARE: 'no-shared-cipher',
  ERR_SSL_NO_SUITABLE_SIGNATURE_ALGORITHM: 'no-shared-cipher',
  ERR_SSL_NO_SHARED_SIGNATURE_ALGORITHMS: 'no-shared-cipher',
  ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE: 'no-shared-cipher',
  ERR_SSL_TLSV1_ALERT_INSUFFICIENT_SECURITY: 'no-shared-cipher',
  ERR_SSL_TLSV1_ALERT_UNKNOWN_CA: 'certificate-not-trusted',
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE: 'certificate-not-trusted',
  ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN: 'certificate-not-trusted',
  ERR_SSL_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE: 'certificate-not-trusted',
  ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED: 'certificate-not-trusted',
  ERR_SSL_TLSV1_ALERT_ACCESS_DENIED: 'certificate-not-trusted',
  ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED: 'certificate-expired',
  ERR_TLS_HANDSHAKE_TIMEOUT: 'handshake-timeout',
  // The socket went away: smtp-server's "Socket closed while initiating TLS", or a reset.
  SocketError: 'handshake-aborted',
  ECONNRESET: 'handshake-aborted',
  EPIPE: 'handshake-aborted',
};

/** Why a STARTTLS handshake failed, from the error reported for it (none: the client just left) and whether we timed it out. */
export function starttlsFailure(err: { code?: string } | null, timedOut: boolean): InboundTlsFailure {
  if (timedOut) return 'handshake-timeout';
  if (!err) return 'handshake-aborted';
  return (err.code && BY_CODE[err.code]) || 'starttls-handshake-failure';
}

/** Tells `outcome` what became of each STARTTLS on `server`, once per session that asked for it, when it ends. */
export function observeStartTls(server: SMTPServer, outcome: (o: InboundTlsOutcome) => void): void {
  const sessions = new WeakMap<SMTPServerSession, () => InboundTlsOutcome | null>();
  onConnection(server, (conn) => {
    let error: { code?: string } | null = null;
    let timedOut = false;
    conn.on('error', (err) => {
      // The first error is the handshake's; tearing the socket down may add others.
      if (conn._upgrading) error ??= err;
    });
    const send = conn.send.bind(conn);
    conn.send = (code, data, context) => {
      if (code === 421 && conn._upgrading) timedOut = true;
      send(code, data, context);
    };
    sessions.set(conn.session, () => {
      // A plaintext listener: its connections become secure only by STARTTLS.
      if (conn.secure) return 'successful';
      return conn._upgrading ? starttlsFailure(error, timedOut) : null;
    });
  });
  // smtp-server calls onClose once per connection it made, whatever ended it.
  const onClose = server.onClose.bind(server);
  server.onClose = (session, callback) => {
    const result = sessions.get(session)?.();
    sessions.delete(session);
    if (result) outcome(result);
    onClose(session, callback);
  };
}
