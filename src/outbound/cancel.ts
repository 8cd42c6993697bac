// Cancel: an atomic conditional update (status still scheduled or queued). If the dispatcher
// advances the message between our read and our write, the write matches nothing and we answer
// 409 not_cancelable with the status observed afresh. A claimed-but-not-yet-dispatched message can
// still be canceled: the dispatcher's own compare-and-swap then fails and it lets go.
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { AppError } from '../lib/errors.js';
import { rowToMessage, type Message, type TimelineEntry } from './message.js';
import { scopedMessageRow, type Scope } from './read.js';

export async function cancelMessage(db: Db, clock: Clock, scope: Scope, publicId: string): Promise<Message> {
  for (let i = 0; i < 5; i++) {
    const row = await scopedMessageRow(db, scope, publicId);
    if (row.status !== 'queued' && row.status !== 'scheduled') {
      throw new AppError('not_cancelable', `message ${publicId} is ${row.status} and can no longer be canceled`, { status: row.status });
    }
    const now = clock.now().toISOString();
    const timeline: TimelineEntry[] = [...JSON.parse(row.timeline), { t: now, e: 'canceled' }];
    const patch = {
      status: 'canceled',
      timeline: JSON.stringify(timeline),
      due_at: null,
      locked_until: null,
      locked_by: null,
      updated_at: now,
    };
    const r = await db.updateTable('messages').set(patch).where('id', '=', row.id).where('status', '=', row.status).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 1) return rowToMessage({ ...row, ...patch });
    // Lost the race: look again (the loop reports the status the winner left).
  }
  throw new AppError('conflict', 'the message kept changing; try again');
}
