// First open and first click of an email message. The timestamp is set with a compare-and-swap
// (`opened_at IS NULL`), in the same transaction as the timeline entry and the message.opened /
// message.clicked event row, so concurrent hits (or two nodes) record exactly one. Later opens and
// clicks change nothing and add no timeline entry (a busy newsletter would grow it without bound).
// Engagement never changes status.
import type { Db } from '../db/database.js';
import type { EventBus } from '../events/bus.js';
import { recordEvent } from '../events/record.js';
import type { Clock } from '../lib/clock.js';
import type { Ids } from '../lib/ids.js';
import { rowToMessage, type TimelineEntry } from '../outbound/message.js';

export type Engagement = 'opened' | 'clicked';

/** Records the first open/click; returns true when this call was the first. */
export async function recordEngagement(
  deps: { db: Db; clock: Clock; ids: Ids; bus: EventBus },
  publicId: string,
  kind: Engagement,
  link?: string,
): Promise<boolean> {
  const column = kind === 'opened' ? 'opened_at' : 'clicked_at';
  const now = deps.clock.now().toISOString();
  let published: { type: 'message.opened' | 'message.clicked'; data: unknown; message: unknown; workspaceId: string } | null = null;
  await deps.db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('messages').selectAll().where('public_id', '=', publicId).executeTakeFirst();
    if (!row || row[column] !== null) return;
    const timeline = JSON.parse(row.timeline) as TimelineEntry[];
    timeline.push({ t: now, e: kind === 'opened' ? 'opened' : `clicked ${link ?? ''}`.trim() });
    const r = await trx
      .updateTable('messages')
      .set({ [column]: now, timeline: JSON.stringify(timeline), updated_at: now })
      .where('id', '=', row.id)
      .where(column, 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return;
    const message = rowToMessage({ ...row, [column]: now, timeline: JSON.stringify(timeline), updated_at: now });
    const type = kind === 'opened' ? 'message.opened' : 'message.clicked';
    const data = kind === 'clicked' ? { ...message, link } : message;
    await recordEvent(trx, deps, { workspaceId: row.workspace_id, livemode: Number(row.livemode) === 1, type, data });
    published = { type, data, message, workspaceId: row.workspace_id };
  });
  if (!published) return false;
  const p = published as { type: string; data: unknown; message: unknown; workspaceId: string };
  deps.bus.publish(p.type, p.data);
  deps.bus.publish('events.recorded', { type: p.type, workspaceId: p.workspaceId });
  deps.bus.publish('message.changed', p.message);
  return true;
}
