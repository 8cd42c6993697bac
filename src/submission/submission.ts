// SMTP submission's one entry, built by the composition root: the checks the SMTP adapter asks for
// at each command (AUTH, MAIL FROM, RCPT TO) and the submission of a message at the end of DATA.
// A message becomes what POST /v1/send-raw (or /v1/send with X-Postern-Template) would make of the
// same fields: one send per envelope recipient, all accepted in one transaction
// (outbound.acceptMany), so a 250 means every copy is committed and a refusal means none is.
// Idempotency: a message's Message-ID and recipient make each send's key, so a client that
// submits the same message again within 24 hours (a retry after a lost reply) gets the same ids.
import type { Deps } from '../deps.js';
import { domainOf, isVerifiedDomain } from '../domains/index.js';
import type { Outbound } from '../outbound/index.js';
import { isEmailAddress } from '../contract/addresses.js';
import type { SuppressionStore } from '../suppressions/index.js';
import type { Principal } from '../workspaces/index.js';
import type { Credentials } from './credentials.js';
import { readSubmitted, type SubmittedMessage } from './message.js';
import { refused } from './refusals.js';

export interface Submission {
  /** The principal of AUTH's user name and password (credentials.ts). */
  authenticate(user: string, password: string, client: { ip: string }): Promise<Principal>;
  /** Checks MAIL FROM: the address is on a verified sending domain of the workspace, and the key's send budget has room. */
  mailFrom(principal: Principal, address: string): Promise<void>;
  /** Checks RCPT TO: an address Postern can send to, not on the workspace's suppression list. */
  rcptTo(principal: Principal, address: string): Promise<void>;
  /** Accepts the message for every recipient; resolves with the message ids once committed. */
  submit(principal: Principal, envelope: { mailFrom: string; rcptTo: string[] }, raw: Buffer): Promise<string[]>;
}

export interface SubmissionDeps extends Pick<Deps, 'config' | 'db' | 'budgets'> {
  credentials: Credentials;
  outbound: Pick<Outbound, 'acceptMany'>;
  suppressions: Pick<SuppressionStore, 'getMany'>;
}

const CONTROL = /[\u0000-\u001f\u007f]/g;

export function createSubmission(deps: SubmissionDeps): Submission {
  const { config, db } = deps;
  const rate = config.rateLimit.send;
  // The API's send budget of the key: a key has one budget whichever way it sends.
  const budget = rate > 0 ? deps.budgets.budget('api-send', { count: rate, perMs: 1000 }) : null;

  async function checkSender(principal: Principal, address: string, what: string): Promise<void> {
    if (!address) {
      throw refused({ reason: 'sender-not-allowed', address, detail: `${what} is empty; use an address on a verified sending domain` });
    }
    const domain = domainOf(address);
    if (!(await isVerifiedDomain(db, principal.workspace.id, domain))) {
      throw refused({
        reason: 'sender-not-allowed',
        address,
        detail: `${what} ${domain} is not a verified sending domain of workspace ${principal.workspace.slug}`,
      });
    }
  }

  /** The send body of one recipient, as the API takes it. */
  function bodyFor(m: SubmittedMessage, to: string): { body: Record<string, unknown>; raw: boolean } {
    const common: Record<string, unknown> = {
      to,
      from: m.from!.address,
      ...(m.from!.name ? { fromName: m.from!.name.replace(CONTROL, ' ').replace(/[<>]/g, '').slice(0, 128) } : {}),
      ...(m.replyTo ? { replyTo: m.replyTo } : {}),
      ...(m.attachments.length ? { attachments: m.attachments } : {}),
      ...(m.fields.metadata ? { metadata: m.fields.metadata } : {}),
      ...(m.fields.scheduledAt ? { scheduledAt: m.fields.scheduledAt } : {}),
    };
    if (m.fields.template !== undefined) {
      return { body: { ...common, template: m.fields.template, vars: m.fields.vars ?? {} }, raw: false };
    }
    const content: Record<string, string> = { subject: m.subject };
    if (m.text !== null) content.text = m.text;
    if (m.html !== null) content.html = m.html;
    return { body: { ...common, channel: 'email', content }, raw: true };
  }

  return {
    authenticate: (user, password, client) => deps.credentials.authenticate(user, password, client),
    async mailFrom(principal, address) {
      await checkSender(principal, address, 'the envelope sender');
      if (budget) {
        const wait = await budget.take(principal.keyId);
        if (wait > 0) throw refused({ reason: 'rate-limited', seconds: Math.max(1, Math.ceil(wait / 1000)) });
      }
    },
    async rcptTo(principal, address) {
      if (!isEmailAddress(address)) throw refused({ reason: 'recipient-invalid', address });
      const found = await deps.suppressions.getMany({ workspaceId: principal.workspace.id, livemode: principal.livemode }, [address]);
      const s = found.get(address.toLowerCase());
      // An unsubscribe holds template sends only (the dispatcher decides it); anything else holds every send.
      if (s && s.reason !== 'unsubscribe') throw refused({ reason: 'recipient-suppressed', address, why: s.reason });
    },
    async submit(principal, envelope, raw) {
      const m = await readSubmitted(raw);
      if (m.issues.length) throw refused({ reason: 'message-invalid', detail: m.issues.map((i) => `${i.path} ${i.message}`).join('; ') });
      if (!m.from || m.fromCount !== 1) {
        throw refused({ reason: 'message-invalid', detail: 'the message needs a From header with exactly one address' });
      }
      // A From on the envelope sender's domain was checked at MAIL FROM, moments ago in this session.
      if (domainOf(m.from.address) !== domainOf(envelope.mailFrom)) await checkSender(principal, m.from.address, 'the From address');
      const items = envelope.rcptTo.map((to) => ({
        ...bodyFor(m, to),
        idempotencyKey: m.messageId ? `smtp:${m.messageId}:${to.toLowerCase()}`.slice(0, 255) : null,
      }));
      const accepted = await deps.outbound.acceptMany(principal, items);
      return accepted.map((a) => a.id);
    },
  };
}
