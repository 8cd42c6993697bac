// Figures of a workspace's messages for the dashboard overview: counts by status over the last
// 24 hours and 7 days, a daily series, the queue and its oldest ready message, plus the other
// tables the overview reads (suppressions, received mail, webhook endpoints, domains, usage
// counters). Read-only: anyone may read messages; only the ledger writes them.
//
// Cost on a workspace with 1 million messages: every messages query is an index range, never a
// table scan. The windows and the daily series use `messages_created` (workspace, livemode, created_at,
// status; migration 0011) as a covering index, in one scan of the window's index entries; the queue
// uses `messages_list_status` (workspace, livemode, status, seq) for the in-flight statuses only
// (queued, scheduled, rendered, dispatched), which are few next to the delivered million;
// inbound uses `received_messages_list`, suppressions `suppressions_workspace_env_created`. The
// usage tables are one row per month or period.
import { sql, type ExpressionBuilder } from 'kysely';
import { type Database, type Db, flag } from '../db/index.js';
import type { DayFigures, QueueFigures, WindowFigures } from '../contract/overview.js';
import type { MessageStatus } from '../contract/messages.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

export type StatusCounts = Partial<Record<MessageStatus, number>>;

interface Scope {
  workspaceId: string;
  livemode: boolean;
}

function windowFigures(byStatus: StatusCounts, reasons: Record<string, number>): WindowFigures {
  const n = (s: MessageStatus) => Number(byStatus[s] ?? 0);
  const finished = n('delivered') + n('sent') + n('failed');
  return {
    accepted: Object.values(byStatus).reduce<number>((a, b) => a + Number(b ?? 0), 0),
    sent: n('sent'),
    delivered: n('delivered'),
    deferred: n('dispatched'),
    failed: n('failed'),
    bounced: reasons.bounce ?? 0,
    complained: reasons.complaint ?? 0,
    optedOut: n('opted_out'),
    suppressed: n('suppressed'),
    blocked: n('blocked'),
    canceled: n('canceled'),
    bounceRate: finished === 0 ? null : n('failed') / finished,
  };
}

/** Overview reads over one workspace and environment, at `now`. */
export function createMessageStats(db: Db) {
  async function suppressionReasons(scope: Scope, since: string): Promise<Record<string, number>> {
    const rows = await db
      .selectFrom('suppressions')
      .select(['reason', (eb) => eb.fn.countAll<number>().as('n')])
      .where('workspace_id', '=', scope.workspaceId)
      .where('livemode', '=', flag(scope.livemode))
      .where('created_at', '>=', since)
      .groupBy('reason')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.reason, Number(r.n)]));
  }

  return {
    /**
     * Counts for the last 24 hours and 7 days, and the seven UTC days ending today (oldest first),
     * from ONE range scan of the window's index entries: grouped by (day, status), with the
     * 24-hour share as a conditional sum. (Grouping by status alone let SQLite prefer
     * messages_list_status for its order and read every row of the workspace.)
     */
    async outbound(scope: Scope, now: Date): Promise<{ windows: { '24h': WindowFigures; '7d': WindowFigures }; daily: DayFigures[] }> {
      const dayAgo = new Date(now.getTime() - DAY).toISOString();
      const weekAgo = new Date(now.getTime() - 7 * DAY).toISOString();
      const days: string[] = [];
      for (let i = 6; i >= 0; i--) days.push(new Date(now.getTime() - i * DAY).toISOString().slice(0, 10));
      const day = sql<string>`substr(created_at, 1, 10)`;
      const since = (at: string) => sql<number>`sum(case when created_at >= ${at} then 1 else 0 end)`;
      const [rows, rd, rw] = await Promise.all([
        db
          .selectFrom('messages')
          .select([day.as('day'), 'status', (eb) => eb.fn.countAll<number>().as('n'), since(dayAgo).as('d')])
          .where('workspace_id', '=', scope.workspaceId)
          .where('livemode', '=', flag(scope.livemode))
          // The week's start is before the first day's midnight (6 days ago), so one range covers both.
          .where('created_at', '>=', weekAgo)
          .groupBy([day, 'status'])
          .execute(),
        suppressionReasons(scope, dayAgo),
        suppressionReasons(scope, weekAgo),
      ]);
      const d: StatusCounts = {};
      const w: StatusCounts = {};
      const out = new Map(days.map((x) => [x, { day: x, delivered: 0, sent: 0, failed: 0, other: 0 }]));
      for (const r of rows) {
        d[r.status] = (d[r.status] ?? 0) + Number(r.d ?? 0);
        w[r.status] = (w[r.status] ?? 0) + Number(r.n);
        const f = out.get(r.day);
        if (!f) continue;
        const key = r.status === 'delivered' || r.status === 'sent' || r.status === 'failed' ? r.status : 'other';
        f[key] += Number(r.n);
      }
      return { windows: { '24h': windowFigures(d, rd), '7d': windowFigures(w, rw) }, daily: [...out.values()] };
    },

    /** The queue: messages with work left, and how long the oldest ready one has waited. */
    async queue(scope: Scope, now: Date): Promise<QueueFigures> {
      const at = now.toISOString();
      const held = (eb: ExpressionBuilder<Database, 'messages'>) =>
        eb.and([eb('locked_until', 'is not', null), eb('locked_until', '>', at)]);
      const rows = await db
        .selectFrom('messages')
        .select([
          'status',
          (eb) => eb.fn.countAll<number>().as('n'),
          (eb) => eb.fn.sum<number>(eb.case().when(held(eb)).then(1).else(0).end()).as('held'),
          (eb) =>
            eb.fn
              .min<string>(
                eb
                  .case()
                  .when(eb.and([eb('due_at', '<=', at), eb.not(held(eb))]))
                  .then(eb.ref('due_at'))
                  .else(null)
                  .end(),
              )
              .as('oldest'),
        ])
        .where('workspace_id', '=', scope.workspaceId)
        .where('livemode', '=', flag(scope.livemode))
        .where('status', 'in', ['scheduled', 'queued', 'rendered', 'dispatched'])
        .groupBy('status')
        .execute();
      const q: QueueFigures = {
        scheduled: 0,
        queued: 0,
        rendered: 0,
        deferred: 0,
        inFlight: 0,
        oldestReadyAt: null,
        oldestReadyAgeSeconds: null,
      };
      for (const r of rows) {
        const n = Number(r.n);
        const heldN = Number(r.held ?? 0);
        if (r.status === 'dispatched') {
          q.inFlight += heldN;
          q.deferred += n - heldN;
        } else {
          q[r.status as 'scheduled' | 'queued' | 'rendered'] += n;
        }
        if (r.oldest && (q.oldestReadyAt === null || r.oldest < q.oldestReadyAt)) q.oldestReadyAt = r.oldest;
      }
      if (q.oldestReadyAt) q.oldestReadyAgeSeconds = Math.max(0, Math.round((now.getTime() - Date.parse(q.oldestReadyAt)) / 1000));
      return q;
    },

    /** Received messages in the last 24 hours and 7 days. */
    async inbound(scope: Scope, now: Date): Promise<{ '24h': number; '7d': number }> {
      const count = async (since: string) =>
        Number(
          (
            await db
              .selectFrom('received_messages')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('workspace_id', '=', scope.workspaceId)
              .where('livemode', '=', flag(scope.livemode))
              .where('received_at', '>=', since)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const [d, w] = await Promise.all([
        count(new Date(now.getTime() - DAY).toISOString()),
        count(new Date(now.getTime() - 7 * DAY).toISOString()),
      ]);
      return { '24h': d, '7d': w };
    },
  };
}
