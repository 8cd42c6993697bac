// One delivery attempt of an email message, the part direct and relay delivery share: its start
// (the prepared bytes and the recipients still to try), its end (recipient rows saved, hard bounces
// suppressed) and its outcome. The message's outcome follows its `to` recipient; every recipient
// attempted in this call gets a timeline note. cc/bcc recipients still deferred when `to` reaches a
// final state are not retried (the dispatcher retries messages, not recipients); their last answer
// stays on the timeline.
import type { Delivery, DeliveryOutcome } from '../../channel.js';
import type { BounceCategory } from './bounce-rules.js';
import { describeSmtpError, judge, type Verdict } from './classify.js';
import { prepareEmail, type EmailDeps, type Prepared } from './prepare.js';
import { saveRecipients, type RecipientState } from './recipients.js';
import type { SmtpError } from './smtp-pool.js';

export interface AttemptSummary {
  provider: string;
  providerConnectionId: string;
  messageId: string | null;
  recipients: RecipientState[];
  notes: string[];
  /** Recipient addresses to add to the suppression list (hard bounces). */
  hardBounces: Set<string>;
  /** Earliest time a deferred recipient may be retried (rate limit). */
  retryAt?: Date;
  /** Judges a failure with the bounce rules (classify.ts judge). */
  judge(err: SmtpError): Verdict;
}

/** The timeline note of a recipient's answer; a failure names its category (metrics read it). */
export function recipientNote(r: RecipientState, category?: BounceCategory): string {
  const what = r.status === 'accepted' ? 'delivered' : r.status;
  return `${r.kind} ${r.address}: ${what} (${r.response})${category ? ` [${category}]` : ''}`;
}

function outcomeOf(s: AttemptSummary, final: 'delivered' | 'sent'): DeliveryOutcome {
  const to = s.recipients.find((r) => r.kind === 'to')!;
  const common = { provider: s.provider, providerConnectionId: s.providerConnectionId, notes: s.notes };
  switch (to.status) {
    case 'accepted':
      return { kind: final, ...common, providerMessageId: s.messageId };
    case 'failed':
      return { kind: 'failed', ...common, error: to.response ?? 'rejected', suppress: s.hardBounces.has(to.address) };
    case 'suppressed':
      return { kind: 'suppressed', ...common, error: to.response ?? 'the recipient domain accepts no mail' };
    default:
      return { kind: 'deferred', ...common, error: to.response ?? 'temporary failure', ...(s.retryAt ? { retryAt: s.retryAt } : {}) };
  }
}

/** What one attempt sends: the bytes, and the recipients still to try (pending or deferred). */
export type Send = (prepared: Prepared, summary: AttemptSummary, todo: RecipientState[]) => Promise<void>;

/**
 * One attempt, the frame direct and relay delivery share: prepare the bytes and the recipients
 * still to try, let `send` record each one's answer, save them, suppress hard bounces, and say how
 * the message's `to` fared (`final` is what a 250 means for this transport).
 */
export async function attempt(
  deps: EmailDeps & { connectionId: string },
  delivery: Delivery,
  provider: string,
  final: 'delivered' | 'sent',
  send: Send,
): Promise<DeliveryOutcome> {
  const prepared = await prepareEmail(deps, delivery);
  if ('gone' in prepared) return { kind: 'failed', provider, providerConnectionId: deps.connectionId, error: prepared.gone };
  const summary: AttemptSummary = {
    provider,
    providerConnectionId: deps.connectionId,
    messageId: prepared.messageId,
    recipients: prepared.recipients,
    notes: [...prepared.notes],
    hardBounces: new Set(),
    judge: (err) => judge(err, deps.rules ?? null),
  };
  const todo = prepared.recipients.filter((r) => r.status === 'pending' || r.status === 'deferred');
  await send(prepared, summary, todo);
  await finishAttempt(deps, delivery, summary, todo, prepared.suppressedSome);
  return outcomeOf(summary, final);
}

/** Records a recipient's rejection by `host`, as the bounce rules judge it; returns the verdict. */
export function recordRejection(r: RecipientState, err: SmtpError, host: string, summary: AttemptSummary): Verdict {
  const verdict = summary.judge({ ...err, command: err.command ?? 'RCPT TO' });
  r.status = verdict.permanent ? 'failed' : 'deferred';
  r.response = describeSmtpError(err, host);
  if (verdict.suppress) summary.hardBounces.add(r.address);
  summary.notes.push(recipientNote(r, verdict.category));
  return verdict;
}

/** The end of every attempt: saves the attempted recipients and suppresses hard-bounced addresses. */
async function finishAttempt(
  deps: EmailDeps,
  delivery: Delivery,
  summary: AttemptSummary,
  attempted: RecipientState[],
  suppressedSome: boolean,
): Promise<void> {
  const changed = suppressedSome ? summary.recipients.filter((r) => r.status !== 'pending') : attempted;
  // A lone recipient with a final answer needs no row: the message's own status says it all, and
  // a retry never happens. Rows matter for retries and for messages with several recipients.
  const lone = summary.recipients.length === 1 && !['pending', 'deferred'].includes(summary.recipients[0].status);
  if (!lone) await saveRecipients(deps.db, delivery.message.id, changed, deps.clock.now().toISOString());
  for (const address of summary.hardBounces) {
    const r = summary.recipients.find((x) => x.address === address);
    await deps.suppressions.add(delivery.message, {
      address,
      reason: 'bounce',
      detail: r?.response ?? null,
      messageId: delivery.message.publicId,
    });
  }
}
