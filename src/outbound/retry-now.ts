// Retry now (POST /v1/messages/{id}/retry, the dashboard's "retry now"): a deferred message — one
// the dispatcher left `dispatched` with a next attempt scheduled (`due_at` set, no lease held) —
// becomes due at once, with a "retry requested" timeline note. Decided and written in one
// transaction by the ledger with a compare-and-swap on the status read, like cancel. Anything else
// (queued, in flight under a lease, delivered, failed, …) is 409 conflict with the status observed:
// the dispatcher already has it, or there is nothing left to try.
import type { Clock } from '../lib/clock.js';
import { AppError } from '../lib/errors.js';
import { type Ledger, type MessageRow, rowToMessage, type Scope, scopedMessageRow } from '../messages/index.js';
import type { Message } from '../contract/message-schemas.js';

/** Whether a row waits for its next attempt after a deferral (and no worker holds it now). */
function isAwaitingRetry(row: Pick<MessageRow, 'status' | 'due_at' | 'locked_until'>, now: string): boolean {
  return row.status === 'dispatched' && row.due_at !== null && (row.locked_until === null || row.locked_until <= now);
}

export async function retryMessageNow(ledger: Ledger, clock: Clock, scope: Scope, publicId: string): Promise<Message> {
  const done = await ledger.update(
    (trx) => scopedMessageRow(trx, scope, publicId),
    (row) => {
      const now = clock.now().toISOString();
      if (!isAwaitingRetry(row, now)) {
        const why =
          row.status === 'dispatched'
            ? 'is being delivered right now'
            : `is ${row.status}; only a deferred message waiting for its next attempt can be retried`;
        throw new AppError('conflict', `message ${publicId} ${why}`, { status: row.status });
      }
      return ledger.change(row).note('retry requested', now).set({ due_at: now });
    },
  );
  return rowToMessage(done!.written!);
}
