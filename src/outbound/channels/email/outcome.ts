// The message's outcome follows its `to` recipient; every recipient attempted in this call gets
// a timeline note. cc/bcc recipients still deferred when `to` reaches a final state are not retried
// (the dispatcher retries messages, not recipients); their last answer stays on the timeline.
import type { DeliveryOutcome } from '../channel.js';
import type { RecipientState } from './recipients.js';
import type { Delivery } from '../channel.js';
import { prepareEmail, type EmailDeps, type Prepared } from './prepare.js';

export interface AttemptSummary {
  provider: string;
  providerConnectionId: string;
  messageId: string;
  recipients: RecipientState[];
  notes: string[];
  /** Recipient addresses to add to the suppression list (hard bounces). */
  hardBounces: Set<string>;
  /** Earliest time a deferred recipient may be retried (rate limit). */
  retryAt?: Date;
}

export function outcomeOf(s: AttemptSummary, final: 'delivered' | 'sent'): DeliveryOutcome {
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

/** The start of every attempt (direct or relay): the prepared message, its summary, and the recipients still to try. */
export async function startAttempt(
  deps: EmailDeps & { connectionId: string },
  delivery: Delivery,
  provider: string,
): Promise<{ prepared: Prepared; summary: AttemptSummary; todo: RecipientState[] }> {
  const prepared = await prepareEmail(deps, delivery);
  const summary: AttemptSummary = {
    provider,
    providerConnectionId: deps.connectionId,
    messageId: prepared.messageId,
    recipients: prepared.recipients,
    notes: [...prepared.notes],
    hardBounces: new Set(),
  };
  const todo = prepared.recipients.filter((r) => r.status === 'pending' || r.status === 'deferred');
  return { prepared, summary, todo };
}
