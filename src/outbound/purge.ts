// Purging a destination's queue (POST /v1/destinations/{domain}/purge, `postern queue purge`): an
// operator facing a blocklisting, or a workspace giving up on a domain, drops the email still
// waiting for it. A queued or scheduled message is canceled; a deferred one (waiting for its next
// attempt) fails with `purged: <why>` on its timeline. A message being delivered right now (leased)
// is left to finish. Each change goes through the ledger's compare-and-swap, so a message that
// moved on meanwhile is skipped, not overwritten.
import type { Db } from '../db/index.js';
import type { Ledger } from '../messages/index.js';

export type PurgeStatus = 'queued' | 'deferred';

export interface PurgeResult {
  canceled: number;
  failed: number;
}

const BATCH = 500;

export async function purgeDestination(
  db: Db,
  ledger: Ledger,
  opts: { domain: string; workspaceId: string | null; statuses: PurgeStatus[]; now: string; why: string },
): Promise<PurgeResult> {
  const result: PurgeResult = { canceled: 0, failed: 0 };
  const seen = new Set<string>();
  for (let round = 0; round < 10_000; round++) {
    let q = db
      .selectFrom('messages')
      .select(['id', 'status'])
      .where('channel', '=', 'email')
      .where('recipient', 'like', `%@${opts.domain}`)
      .where((eb) => {
        const either = [];
        if (opts.statuses.includes('queued')) either.push(eb('status', 'in', ['queued', 'scheduled']));
        if (opts.statuses.includes('deferred'))
          either.push(
            eb.and([
              eb('status', '=', 'dispatched'),
              eb('due_at', 'is not', null),
              eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', opts.now)]),
            ]),
          );
        return eb.or(either);
      })
      .orderBy('id')
      .limit(BATCH);
    if (opts.workspaceId !== null) q = q.where('workspace_id', '=', opts.workspaceId);
    const rows = (await q.execute()).filter((r) => !seen.has(r.id));
    if (rows.length === 0) break;
    for (const { id } of rows) {
      seen.add(id);
      const done = await ledger.update(
        (trx) => trx.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst(),
        (row) => {
          const change = ledger.change(row);
          if (change.can('canceled', 'cancel')) {
            change.note(`purged: ${opts.why}`).step('canceled', 'cancel');
            return change.set({ due_at: null, locked_until: null, locked_by: null });
          }
          const waiting = row.status === 'dispatched' && row.due_at !== null && (row.locked_until === null || row.locked_until <= opts.now);
          if (waiting && change.can('failed', 'purge')) {
            change.note(`purged: ${opts.why}`).step('failed', 'purge');
            return change.set({ error: `purged: ${opts.why}`, due_at: null, locked_until: null, locked_by: null });
          }
          return null;
        },
      );
      if (done?.written?.status === 'canceled') result.canceled++;
      else if (done?.written?.status === 'failed') result.failed++;
    }
  }
  return result;
}
