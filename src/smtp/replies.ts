// Every reply the SMTP listener gives of its own, from one table: the listener decides a verdict
// (after Haraka's OK / DENY / DENYSOFT / DENYSOFTDISCONNECT) and its reason, and this turns it into
// the reply code, the enhanced status code (RFC 3463; ENHANCEDSTATUSCODES is advertised) and the
// text. DENY is permanent (5xx: the sender gives up and bounces), DENYSOFT temporary (4xx: the
// sender retries later), DISCONNECT a 421 after which the connection is closed.
import { isAppError, type Issue } from '../lib/errors.js';
import { SubmissionRefused } from '../submission/index.js';

export type Verdict =
  | { kind: 'ok'; ids: string[] }
  | { kind: 'deny'; reason: 'relay-denied'; rcpt: string }
  | { kind: 'deny'; reason: 'local-part-too-long' }
  | { kind: 'deny'; reason: 'too-large'; maxBytes: number }
  | { kind: 'deny'; reason: 'header-too-large'; maxBytes: number }
  | { kind: 'deny'; reason: 'header-too-many-lines'; maxLines: number }
  | { kind: 'deny'; reason: 'bare-line-ending' }
  | { kind: 'deny'; reason: 'report-too-large'; detail: string }
  | { kind: 'deny'; reason: 'spam'; score: number }
  | { kind: 'deny'; reason: 'virus'; signature: string }
  | { kind: 'deny'; reason: 'auth-failed'; detail: string }
  | { kind: 'deny'; reason: 'sender-not-allowed'; address: string; detail: string }
  | { kind: 'deny'; reason: 'recipient-invalid'; address: string }
  | { kind: 'deny'; reason: 'recipient-suppressed'; address: string; why: string }
  | { kind: 'deny'; reason: 'message-invalid'; detail: string }
  | { kind: 'deny'; reason: 'plan-limit'; detail: string }
  | { kind: 'denysoft'; reason: 'auth-throttled'; seconds: number }
  | { kind: 'denysoft'; reason: 'rate-limited'; seconds: number }
  | { kind: 'denysoft'; reason: 'quota-exceeded'; detail: string }
  | { kind: 'denysoft'; reason: 'lookup-failed' }
  | { kind: 'denysoft'; reason: 'read-failed'; detail: string }
  | { kind: 'denysoft'; reason: 'storage-failed' }
  | { kind: 'denysoft'; reason: 'postmaster-full' }
  | { kind: 'denysoft'; reason: 'report-in-progress' }
  | { kind: 'disconnect'; reason: 'too-many-connections'; host: string; ip: string; max: number }
  | { kind: 'disconnect'; reason: 'connection-rate'; host: string; ip: string; rate: string }
  | { kind: 'disconnect'; reason: 'too-many-junk-commands'; host: string; max: number }
  | { kind: 'disconnect'; reason: 'command-timeout'; host: string; seconds: number }
  | { kind: 'disconnect'; reason: 'data-timeout'; host: string; seconds: number }
  | { kind: 'disconnect'; reason: 'database-unavailable'; host: string };

export interface Reply {
  code: number;
  message: string;
}

/** Text from outside (a domain's message, an address) made safe for a reply line, and bounded. */
const printable = (s: string, max = 400) => s.replace(/[^\x20-\x7e]/g, '?').slice(0, max);

export function replyFor(v: Verdict): Reply {
  switch (v.kind) {
    case 'ok':
      return { code: 250, message: `2.0.0 Ok: stored${v.ids.length ? ' as ' + v.ids.join(' ') : ''}` };
    case 'deny':
      switch (v.reason) {
        case 'auth-failed':
          return { code: 535, message: `5.7.8 authentication failed: ${printable(v.detail)}` };
        case 'sender-not-allowed':
          return { code: 550, message: `5.7.1 <${printable(v.address, 320)}>: ${printable(v.detail)}` };
        case 'recipient-invalid':
          return { code: 550, message: `5.1.3 <${printable(v.address, 320)}>: not an email address Postern can send to` };
        case 'recipient-suppressed':
          return {
            code: 550,
            message: `5.7.1 <${printable(v.address, 320)}>: on the workspace's suppression list (${printable(v.why, 40)})`,
          };
        case 'message-invalid':
          return { code: 554, message: `5.6.0 message refused: ${printable(v.detail)}` };
        case 'plan-limit':
          return { code: 554, message: `5.7.1 ${printable(v.detail)}` };
        case 'relay-denied':
          return { code: 550, message: `5.7.1 <${v.rcpt}>: relay access denied` };
        case 'local-part-too-long':
          return { code: 501, message: '5.1.3 the recipient local part is longer than 64 octets (RFC 5321 4.5.3.1.1)' };
        case 'too-large':
          return { code: 552, message: `5.3.4 message exceeds fixed maximum message size ${v.maxBytes}` };
        case 'header-too-large':
          return { code: 552, message: `5.3.4 message header exceeds fixed maximum header size ${v.maxBytes}` };
        case 'header-too-many-lines':
          return { code: 552, message: `5.3.4 message header has more than ${v.maxLines} lines` };
        case 'report-too-large':
          return { code: 552, message: `5.3.4 report too large to read: ${v.detail.replace(/[^\x20-\x7e]/g, '?').slice(0, 200)}` };
        case 'bare-line-ending':
          return { code: 554, message: '5.6.0 message contains a bare LF or CR; lines must end with CRLF (RFC 5321 2.3.8)' };
        case 'spam':
          return { code: 550, message: `5.7.1 message refused as spam (score ${v.score})` };
        case 'virus':
          return {
            code: 554,
            message: `5.7.1 message refused: it contains a virus (${v.signature.replace(/[^\x20-\x7e]/g, '?').slice(0, 100)})`,
          };
      }
      break;
    case 'denysoft':
      switch (v.reason) {
        case 'auth-throttled':
          return { code: 454, message: `4.7.0 too many failed authentications, try again in ${v.seconds} s` };
        case 'rate-limited':
          return { code: 451, message: `4.7.0 the key's send rate limit is exceeded, try again in ${v.seconds} s` };
        case 'quota-exceeded':
          return { code: 451, message: `4.7.0 ${printable(v.detail)}` };
        case 'lookup-failed':
          return { code: 451, message: '4.3.0 temporary failure looking up the recipient, try again later' };
        case 'read-failed':
          return { code: 451, message: `4.3.0 ${v.detail}` };
        case 'storage-failed':
          return { code: 451, message: '4.3.0 temporary failure storing the message, try again later' };
        case 'postmaster-full':
          return { code: 452, message: '4.2.2 the postmaster mailbox is full, try again later' };
        case 'report-in-progress':
          return { code: 451, message: '4.3.0 this report is being stored from another copy, try again later' };
      }
      break;
    case 'disconnect':
      switch (v.reason) {
        case 'too-many-connections':
          return { code: 421, message: `4.7.0 ${v.host} too many connections from ${v.ip} (at most ${v.max} at once), try again later` };
        case 'connection-rate':
          return { code: 421, message: `4.7.0 ${v.host} too many new connections from ${v.ip} (at most ${v.rate}), try again later` };
        case 'too-many-junk-commands':
          return {
            code: 421,
            message: `4.7.0 ${v.host} too many NOOP, RSET, VRFY or HELP commands (at most ${v.max} between messages), closing connection`,
          };
        case 'command-timeout':
          return { code: 421, message: `4.4.2 ${v.host} timeout: no command within ${v.seconds} s, closing connection` };
        case 'data-timeout':
          return { code: 421, message: `4.4.2 ${v.host} timeout: no data of the message within ${v.seconds} s, closing connection` };
        case 'database-unavailable':
          return { code: 421, message: `4.3.0 ${v.host} mail store temporarily unavailable, try again later` };
      }
  }
}

/** A refusal as smtp-server takes it: an Error carrying the reply code. */
export function refusal(v: Exclude<Verdict, { kind: 'ok' }>): Error & { responseCode: number } {
  const r = replyFor(v);
  return Object.assign(new Error(r.message), { responseCode: r.code });
}

/** The 250 of a submitted message: committed as these outbound messages, one per recipient. */
export function queuedReply(ids: string[]): Reply {
  return { code: 250, message: `2.0.0 Ok: queued as ${ids.join(' ')}` };
}

/**
 * The verdict on an error of SMTP submission: its own refusals (submission/refusals.ts) and the
 * accept path's AppErrors (invalid content, quota, plan limits), each once; null for anything else
 * (the caller answers 451 4.3.0 and logs it).
 */
export function submissionVerdict(err: unknown): Exclude<Verdict, { kind: 'ok' }> | null {
  if (err instanceof SubmissionRefused) {
    const r = err.refusal;
    switch (r.reason) {
      case 'auth-throttled':
      case 'rate-limited':
        return { kind: 'denysoft', ...r };
      default:
        return { kind: 'deny', ...r };
    }
  }
  if (!isAppError(err)) return null;
  switch (err.code) {
    case 'invalid_body': {
      const issues = (err.extra.issues as Issue[] | undefined) ?? [];
      const detail = issues.length ? issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ') : err.message;
      return { kind: 'deny', reason: 'message-invalid', detail };
    }
    case 'not_found':
    case 'invalid_request':
      return { kind: 'deny', reason: 'message-invalid', detail: err.message };
    case 'plan_limit':
    case 'forbidden':
      return { kind: 'deny', reason: 'plan-limit', detail: err.message };
    case 'quota_exceeded':
      return { kind: 'denysoft', reason: 'quota-exceeded', detail: err.message };
    case 'rate_limited':
      return { kind: 'denysoft', reason: 'rate-limited', seconds: err.retryAfter ?? 1 };
    default:
      return null;
  }
}
