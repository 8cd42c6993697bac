// Cancel (DELETE /v1/messages/{id}): the message moves to canceled only while it is still scheduled
// or queued, decided and written in one transaction by the ledger with a compare-and-swap on the
// status read. If the dispatcher advances the message first, the answer is 409 not_cancelable with
// the status observed afresh. A claimed-but-not-yet-dispatched message can still be canceled: the
// dispatcher's own compare-and-swap then fails and it lets go.
import { AppError } from '../lib/errors.js';
import { type Ledger, rowToMessage, type Scope, scopedMessageRow } from '../messages/index.js';
import type { Message } from '../contract/message-schemas.js';

export async function cancelMessage(ledger: Ledger, scope: Scope, publicId: string): Promise<Message> {
  const done = await ledger.update(
    (trx) => scopedMessageRow(trx, scope, publicId),
    (row) => {
      const change = ledger.change(row);
      if (!change.can('canceled', 'cancel')) {
        throw new AppError('not_cancelable', `message ${publicId} is ${row.status} and can no longer be canceled`, { status: row.status });
      }
      change.step('canceled', 'cancel');
      return change.set({ due_at: null, locked_until: null, locked_by: null });
    },
  );
  return rowToMessage(done!.written!);
}
