// Classifies an SMTP failure on its fields (nodemailer's responseCode, code, command); the bounce
// rules (bounce-rules.ts, through judge() below) may refine a reply by its text. On codes alone: 5xx is permanent, 4xx and every network/timeout/TLS problem is temporary. A permanent
// rejection of a recipient at RCPT or of the message at DATA counts as a hard bounce (suppress),
// except for the 5xx codes that mean "policy/content", where the address itself is fine.
// Exceptions, as Postfix has them:
//   - a 5xx to AUTH (535 wrong credentials, 534 mechanism too weak) is the relay's configuration,
//     not the message's fault: temporary, so mail waits for the operator's fix (Postfix defers on
//     "SASL authentication failed");
//   - a refused STARTTLS (a 5xx to it, or no STARTTLS where the TLS policy requires it) is
//     temporary too: Postfix defers when "TLS is required, but was not offered by host";
//   - a message larger than the SIZE the server advertised is refused by nodemailer before MAIL
//     FROM with code EMESSAGE and no reply code; the server would answer 552 5.3.4, and no retry
//     makes the message smaller: permanent.

import { enhancedStatusOf, type BounceCategory, type BounceRules } from './bounce-rules.js';

export type FailureClass = 'permanent' | 'temporary';

export interface SmtpErrorLike {
  responseCode?: number;
  response?: string;
  code?: string;
  command?: string;
  message?: string;
}

/** Permanent or temporary, from the reply code alone; no code means a connection-level problem. */
export function classifySmtpError(err: SmtpErrorLike): FailureClass {
  const rc = err.responseCode;
  if (err.command?.startsWith('AUTH') || err.command === 'STARTTLS' || err.code === 'ETLS') return 'temporary';
  if (typeof rc === 'number' && rc >= 500 && rc < 600) return 'permanent';
  if (rc === undefined && err.code === 'EMESSAGE' && err.command === 'MAIL FROM') return 'permanent';
  return 'temporary';
}

// Enhanced status codes (RFC 3463) that name the mailbox or the domain as the problem: every
// 5.1.x address status, 5.1.10 (a domain with a null MX, RFC 7505) included, and 5.2.1.
const HARD_ENHANCED = /^5\.(1\.\d{1,3}|2\.1)$/;

/** True when a permanent failure says the address is bad (worth suppressing). */
export function isHardBounce(err: SmtpErrorLike): boolean {
  if (classifySmtpError(err) !== 'permanent') return false;
  const enhanced = /\b(5\.\d{1,3}\.\d{1,3})\b/.exec(err.response ?? '')?.[1];
  if (enhanced) return HARD_ENHANCED.test(enhanced);
  // Without an enhanced code, a 550/551/553 at RCPT is the classic "no such user".
  return err.command === 'RCPT TO' && [550, 551, 553].includes(err.responseCode ?? 0);
}

/** The remote reply or the local error, for the message's `error` field. */
export function describeSmtpError(err: SmtpErrorLike, host?: string): string {
  let text = err.response ? err.response.replace(/\s+/g, ' ').trim() : `${err.code ?? 'ERROR'}: ${err.message ?? 'unknown error'}`;
  if (err.command === 'STARTTLS' || err.command?.startsWith('AUTH')) text = `${err.command} failed: ${text}`;
  return host ? `${host}: ${text}` : text;
}

/** How a failure is judged: whether it ends the message, whether the address is suppressed, and why. */
export interface Verdict {
  permanent: boolean;
  suppress: boolean;
  category: BounceCategory;
  /** The bounce rule that decided, or null when the codes alone did. */
  rule: string | null;
}

// The category of a failure no rule names, from its enhanced code or its kind.
function categoryOf(err: SmtpErrorLike, status: string | undefined): BounceCategory {
  if (err.command === 'STARTTLS' || err.code === 'ETLS' || err.code === 'EDANE') return 'tls';
  if (status) {
    if (/^[45]\.1\.(1|2|10)$/.test(status)) return status.endsWith('.1') ? 'unknown_user' : 'dns';
    if (/^[45]\.2\.2$/.test(status)) return 'mailbox_full';
    if (/^[45]\.4\./.test(status)) return 'dns';
    if (/^[45]\.7\./.test(status)) return 'policy';
  }
  if (err.responseCode === undefined && /^E(CONNECTION|TIMEDOUT|SOCKET|CONNREFUSED|DNS)|^ECONN/.test(err.code ?? '')) return 'connection';
  return 'other';
}

/**
 * Judges a failure with the bounce rules (bounce-rules.ts) when it is a reply, and on its codes
 * otherwise. A reply no rule names keeps today's judgement: 5xx permanent, a hard bounce suppressed.
 * Connection, AUTH and STARTTLS failures and an oversized message are never the rules' to decide.
 */
export function judge(err: SmtpErrorLike, rules: BounceRules | null): Verdict {
  const status = enhancedStatusOf(err.response ?? '');
  const codesAlone = (): Verdict => {
    const permanent = classifySmtpError(err) === 'permanent';
    return { permanent, suppress: permanent && isHardBounce(err), category: categoryOf(err, status), rule: null };
  };
  if (rules === null || typeof err.responseCode !== 'number' || err.command?.startsWith('AUTH') || err.command === 'STARTTLS')
    return codesAlone();
  const rule = rules.match({ code: err.responseCode, status, text: err.response ?? '' });
  if (!rule) return codesAlone();
  return { permanent: rule.action !== 'defer', suppress: rule.action === 'hard', category: rule.category, rule: rule.name };
}
