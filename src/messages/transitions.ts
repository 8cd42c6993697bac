import type { MessageStatus } from '../contract/messages.js'; // The allowed changes of a message's status, as one table: from → to, and the trigger that makes
// the change. It is DESIGN.md's state diagram, read step by step as the dispatcher takes it:
//
//   queued ─► rendered ─► dispatched ─► delivered        (direct: remote MX said 250)
//   scheduled ─(due)─► queued            ├─► sent        (relay or API provider accepted)
//                                        ├─► failed      (5xx, DSN bounce, or retries expired)
//            rendered ─► blocked (scanner)   suppressed  (suppression list, invalid/null-MX address)
//                                            opted_out   (recipient unsubscribed)
//   queued | scheduled ─(DELETE)─► canceled
//
// Where the diagram is drawn loosely the table is exact: the hold (suppression list, unsubscribe)
// and a live channel with no transport are decided once the message is rendered, before dispatch;
// content that cannot be rendered fails the message where it stands; a deferred attempt and each
// retry keep it dispatched; a DSN or a provider's callback may still fail a message that was sent
// or delivered, and a callback may confirm a sent one as delivered. The dispatcher commits several
// steps at once (a scheduled message goes scheduled → queued → rendered → dispatched in one write),
// and each step is checked here and written to the timeline.

export type Trigger =
  /** POST /v1/send accepted the message (the only way in). */
  | 'accept'
  /** A scheduled message's time came. */
  | 'due'
  /** DELETE /v1/messages/{id}. */
  | 'cancel'
  | 'render'
  /** The stored content could not be rendered. */
  | 'render-failed'
  /** The outbound content scanner blocked it. */
  | 'scan'
  /** The recipient is on the suppression list, or unsubscribed. */
  | 'hold'
  /** A live channel without a transport. */
  | 'no-transport'
  /** Handed to the channel's transport (the first attempt). */
  | 'dispatch'
  /** Handed to the transport again after a deferral. */
  | 'retry'
  /** The transport answered with a temporary failure; the next attempt is scheduled. */
  | 'defer'
  /** The transport's final answer. */
  | 'outcome'
  /** Deferred too long: past `retry.maxAge`. */
  | 'retries-expired'
  /** A delivery status notification (bounce) came back to the VERP return path. */
  | 'dsn'
  /** The provider reported on the message later (a status callback). */
  | 'provider-callback'
  /** An operator or the workspace purged the queue of a destination (a deferred message fails). */
  | 'purge';

/** `null` as `from` is a message that does not exist yet. */
export type From = MessageStatus | null;

export interface Transition {
  from: From;
  to: MessageStatus;
  trigger: Trigger;
}

export const TRANSITIONS: readonly Transition[] = [
  { from: null, to: 'queued', trigger: 'accept' },
  { from: null, to: 'scheduled', trigger: 'accept' },
  { from: 'scheduled', to: 'queued', trigger: 'due' },
  { from: 'scheduled', to: 'canceled', trigger: 'cancel' },
  { from: 'queued', to: 'canceled', trigger: 'cancel' },
  { from: 'queued', to: 'rendered', trigger: 'render' },
  { from: 'queued', to: 'failed', trigger: 'render-failed' },
  { from: 'rendered', to: 'blocked', trigger: 'scan' },
  { from: 'rendered', to: 'suppressed', trigger: 'hold' },
  { from: 'rendered', to: 'opted_out', trigger: 'hold' },
  { from: 'rendered', to: 'failed', trigger: 'no-transport' },
  { from: 'rendered', to: 'dispatched', trigger: 'dispatch' },
  { from: 'dispatched', to: 'dispatched', trigger: 'retry' },
  { from: 'dispatched', to: 'dispatched', trigger: 'defer' },
  { from: 'dispatched', to: 'failed', trigger: 'render-failed' },
  { from: 'dispatched', to: 'failed', trigger: 'no-transport' },
  { from: 'dispatched', to: 'delivered', trigger: 'outcome' },
  { from: 'dispatched', to: 'sent', trigger: 'outcome' },
  { from: 'dispatched', to: 'failed', trigger: 'outcome' },
  { from: 'dispatched', to: 'suppressed', trigger: 'outcome' },
  { from: 'dispatched', to: 'failed', trigger: 'retries-expired' },
  { from: 'dispatched', to: 'failed', trigger: 'purge' },
  { from: 'dispatched', to: 'failed', trigger: 'dsn' },
  { from: 'sent', to: 'failed', trigger: 'dsn' },
  { from: 'delivered', to: 'failed', trigger: 'dsn' },
  { from: 'sent', to: 'delivered', trigger: 'provider-callback' },
  { from: 'sent', to: 'failed', trigger: 'provider-callback' },
  { from: 'delivered', to: 'failed', trigger: 'provider-callback' },
];

const allowed = new Set(TRANSITIONS.map((t) => `${t.from}>${t.to}>${t.trigger}`));

/** Whether the table lets `trigger` move a message from `from` to `to`. */
export function canMove(from: From, to: MessageStatus, trigger: Trigger): boolean {
  return allowed.has(`${from}>${to}>${trigger}`);
}
