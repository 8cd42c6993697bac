// The Received header Postern adds to every message it accepts (RFC 5321 4.4), above the original
// and below Authentication-Results, as Postfix does with its milters:
//
//   Received: from <helo> (<rdns> [<ip>])
//   	by <hostname> (Postern) with ESMTP id <session>-<n>
//   	for <rcpt>; Mon, 02 Jan 2026 10:00:00 +0000
//
// Without reverse DNS the TCP-info is the address literal alone (`([192.0.2.1])`); the protocol is
// RFC 3848's (SMTP, ESMTP, ESMTPS), or RFC 6531's for SMTPUTF8 (UTF8SMTP, UTF8SMTPS); the id is the SMTP session's and the transaction's number. The
// `for` clause names the recipient only when the transaction has one: the stored source is shared
// by every workspace a transaction reached, and a Bcc recipient must not show.
export interface TraceInput {
  /** The EHLO/HELO name the client gave. */
  helo: string;
  ip: string;
  /** The reverse DNS name of the client, when looked up and found. */
  rdns: string | null;
  /** With (RFC 3848): SMTP, ESMTP, ESMTPS, … */
  protocol: string;
  id: string;
  recipients: string[];
  hostname: string;
  date: Date;
}

const addressLiteral = (ip: string) => (ip.includes(':') ? `[IPv6:${ip}]` : `[${ip}]`);
/** A value that can stand in a header as it is: printable, no spaces, no angle brackets. */
const plain = (v: string) => /^[^\s<>()\\;\p{Cc}]+$/u.test(v);

/** The `with` protocol (RFC 3848): smtp-server's transmission type, as UTF8SMTP… when the transaction used SMTPUTF8 (RFC 6531 §3.7.3). */
export function protocolOf(transmissionType: string, smtpUtf8: boolean): string {
  return smtpUtf8 ? transmissionType.replace(/^ESMTP/, 'UTF8SMTP') : transmissionType;
}

export function receivedHeader(t: TraceInput): string {
  const literal = addressLiteral(t.ip);
  const from = plain(t.helo) ? t.helo : literal;
  const tcpInfo = t.rdns && plain(t.rdns) ? `${t.rdns} ${literal}` : literal;
  const rcpt = t.recipients.length === 1 && plain(t.recipients[0]) ? `\r\n\tfor <${t.recipients[0]}>` : '';
  const date = t.date.toUTCString().replace('GMT', '+0000');
  return `Received: from ${from} (${tcpInfo})\r\n\tby ${t.hostname} (Postern) with ${t.protocol} id ${t.id}${rcpt}; ${date}\r\n`;
}
