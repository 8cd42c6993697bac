// Applies a verified provider status report (Twilio's status callback, the HTTP gateway's callback)
// to the message it is about, found by connection and providerMessageId. Only forward moves are
// applied: sent → delivered, sent|delivered → failed; a late or repeated report changes nothing.
// Like the dispatcher's commits, the status change, its timeline entry and its event are written
// in one transaction guarded by the status read (compare-and-swap), then announced on the bus.
import type { Db } from '../db/database.js';
import type { EventBus } from '../events/bus.js';
import { recordEvent } from '../events/record.js';
import type { Clock } from '../lib/clock.js';
import type { Ids } from '../lib/ids.js';
import { rowToMessage, type MessageRow, type TimelineEntry } from '../outbound/message.js';
import type { ProviderStatusSink } from './callbacks.js';

const FROM: Record<'sent' | 'delivered' | 'failed', string[]> = {
  sent: [],
  delivered: ['sent'],
  failed: ['sent', 'delivered'],
};

export function createProviderStatusSink(deps: { db: Db; clock: Clock; ids: Ids; bus: EventBus }): ProviderStatusSink {
  const { db, clock, bus } = deps;
  return {
    async apply(update) {
      const row = await db
        .selectFrom('messages')
        .selectAll()
        .where('provider_connection_id', '=', update.connectionId)
        .where('provider_message_id', '=', update.providerMessageId)
        .executeTakeFirst();
      if (!row || !FROM[update.status].includes(row.status)) return false;
      const now = clock.now().toISOString();
      const timeline: TimelineEntry[] = JSON.parse(row.timeline);
      timeline.push({ t: now, e: `${update.provider} callback: ${update.status}` });
      timeline.push({ t: now, e: update.status });
      const next: MessageRow = {
        ...row,
        status: update.status,
        timeline: JSON.stringify(timeline),
        error: update.error ?? row.error,
        updated_at: now,
      };
      const type = update.status === 'delivered' ? 'message.delivered' : 'message.failed';
      let applied = false;
      await db.transaction().execute(async (trx) => {
        const r = await trx
          .updateTable('messages')
          .set({ status: next.status, timeline: next.timeline, error: next.error, updated_at: now })
          .where('id', '=', row.id)
          .where('status', '=', row.status)
          .executeTakeFirst();
        applied = Number(r.numUpdatedRows) === 1;
        if (applied)
          await recordEvent(trx, deps, {
            workspaceId: row.workspace_id,
            livemode: Number(row.livemode) === 1,
            type,
            data: rowToMessage(next),
          });
      });
      if (!applied) return false;
      bus.publish('events.recorded', { type, workspaceId: row.workspace_id });
      bus.publish('message.changed', rowToMessage(next));
      return true;
    },
  };
}
