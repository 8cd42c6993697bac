// First open and first click of an email message. The timestamp is set through the message ledger
// with a compare-and-swap on the column still being empty (`opened_at IS NULL`), in the same
// transaction as the timeline entry and the message.opened / message.clicked event row, so
// concurrent hits (or two nodes) record exactly one. Later opens and clicks change nothing and add
// no timeline entry (a busy newsletter would grow it without bound). Engagement never changes status.
import type { Ledger } from '../../../messages/index.js';

export type Engagement = 'opened' | 'clicked';

/** Records the first open/click; returns true when this call was the first. */
export async function recordEngagement(ledger: Ledger, publicId: string, kind: Engagement, link?: string): Promise<boolean> {
  const column = kind === 'opened' ? 'opened_at' : 'clicked_at';
  const done = await ledger.update(
    (trx) => trx.selectFrom('messages').selectAll().where('public_id', '=', publicId).executeTakeFirst(),
    (row) => {
      if (row[column] !== null) return null;
      const change = ledger.change(row);
      const at = change.note(kind === 'opened' ? 'opened' : `clicked ${link ?? ''}`.trim()).timeline.at(-1)!.t;
      change.unsetColumn = column;
      return change
        .set({ [column]: at })
        .event(kind === 'opened' ? 'message.opened' : 'message.clicked', kind === 'clicked' ? { link } : undefined);
    },
  );
  return done?.written != null;
}
