// The dashboard overview of one workspace and environment, in one read: message figures
// (messages/stats.ts), inbound volume, failing webhook endpoints, the plan's quotas and sender caps
// against the same usage rows the accept-time checks count (outbound/accept.ts `message_usage`,
// inbound/store.ts `inbound_usage`, channels/email/sender-caps.ts `sender_counters`), and warnings
// from what the stores record — never a live DNS lookup, so the page stays fast and quiet.
//
// A rising bounce rate: the last 24 hours' rate (failed / finished) is above 5% and above 1.5×
// the 7-day rate, with at least 20 messages finished in the 24 hours (fewer make a noisy rate).
import type { Config } from '../config.js';
import { type Db, flag } from '../db/index.js';
import type { Meter, Overview, Warning, WindowFigures } from '../contract/overview.js';
import { createMessageStats } from '../messages/index.js';
import { planLimits } from './plans.js';
import type { Workspace } from './workspaces.js';
import type { Env } from '../contract/vocabulary.js';

const BOUNCE_RATE = { floor: 0.05, factor: 1.5, minFinished: 20 };

function bounceWarning(day: WindowFigures, week: WindowFigures): Warning | null {
  const finished = day.delivered + day.sent + day.failed;
  if (day.bounceRate === null || finished < BOUNCE_RATE.minFinished || day.bounceRate <= BOUNCE_RATE.floor) return null;
  if (week.bounceRate !== null && day.bounceRate <= week.bounceRate * BOUNCE_RATE.factor) return null;
  const pct = (r: number | null) => `${((r ?? 0) * 100).toFixed(1)}%`;
  return {
    kind: 'bounce_rate',
    message: `bounce rate is rising: ${pct(day.bounceRate)} in the last 24 h against ${pct(week.bounceRate)} over 7 days`,
  };
}

export function createOverview(deps: { db: Db; config: Config }) {
  const { db, config } = deps;
  const stats = createMessageStats(db);
  const meter = (used: number | undefined, limit: number): Meter => ({ used: Number(used ?? 0), limit: limit < 0 ? null : limit });

  async function quota(workspace: Workspace, livemode: boolean, now: Date): Promise<Overview['quota']> {
    const limits = planLimits(config, workspace.plan);
    const month = now.toISOString().slice(0, 7);
    const [usage, inbound, counters] = await Promise.all([
      // The month's count is the sum of its shards (outbound/accept.ts, countUsage).
      db
        .selectFrom('message_usage')
        .select((eb) => eb.fn.sum<number>('count').as('count'))
        .where('workspace_id', '=', workspace.id)
        .where('month', '=', month)
        .executeTakeFirst(),
      db
        .selectFrom('inbound_usage')
        .select('received')
        .where('workspace_id', '=', workspace.id)
        .where('month', '=', month)
        .executeTakeFirst(),
      db.selectFrom('sender_counters').select(['period', 'count']).where('workspace_id', '=', workspace.id).execute(),
    ]);
    const counted = new Map(counters.map((c) => [c.period, Number(c.count)]));
    const senderCaps: Overview['quota']['senderCaps'] = [];
    if (limits && livemode && config.senderCaps.enabled && config.delivery.mode !== 'relay') {
      for (const tier of ['shared', 'domain'] as const) {
        const cap = limits.senderCaps[tier];
        if (tier === 'domain' && cap.month === 0) continue;
        senderCaps.push({ tier, period: 'day', ...meter(counted.get(`${tier}:d:${now.toISOString().slice(0, 10)}`), cap.day) });
        senderCaps.push({ tier, period: 'month', ...meter(counted.get(`${tier}:m:${month}`), cap.month) });
      }
    }
    return {
      // Plan quotas count live messages only (0 in the plan: unlimited).
      messages: limits ? { used: Number(usage?.count ?? 0), limit: limits.messagesPerMonth || null } : null,
      inbound: limits ? { used: Number(inbound?.received ?? 0), limit: limits.inboundPerMonth || null } : null,
      senderCaps,
    };
  }

  async function domainWarnings(workspaceId: string): Promise<Warning[]> {
    const rows = await db
      .selectFrom('domains')
      .select(['domain', 'status', 'dkim_verified_at', 'mx_verified_at', 'records_drift', 'records_drift_since'])
      .where('workspace_id', '=', workspaceId)
      .where('kind', '=', 'custom')
      .where('deleted_at', 'is', null)
      .where((eb) => eb.or([eb('status', '!=', 'verified'), eb('records_drift', 'is not', null)]))
      .orderBy('created_at')
      .execute();
    return rows.flatMap((d): Warning[] => {
      const out: Warning[] = [];
      if (d.status === 'failed') {
        out.push({ kind: 'failed_domain', message: `${d.domain}: no record was found within 7 days of the claim; claim it again` });
      } else if (d.status !== 'verified') {
        const missing = [d.dkim_verified_at ? null : 'the DKIM record', d.mx_verified_at ? null : 'the MX record'].filter(Boolean);
        out.push({ kind: 'unverified_domain', message: `${d.domain} is not verified yet: ${missing.join(' and ')} not found` });
      }
      // A confirmed record changed or removed since: recorded by the domain's re-check (the daily
      // job, or opening the domain), never looked up here.
      if (d.records_drift) {
        const names = d.records_drift
          .split(',')
          .map((c) => (c === 'dkim' ? 'the DKIM record' : 'the MX record'))
          .join(' and ');
        out.push({
          kind: 'dns_mismatch',
          message: `${d.domain}: ${names} no longer ${d.records_drift.includes(',') ? 'match' : 'matches'} what Postern published (since ${d.records_drift_since}); publish it again`,
        });
      }
      return out;
    });
  }

  // A DKIM rotation waits for the operator (domains/dkim-rotation.ts): new records to publish (a
  // scheduled rotation starts unasked), and retired ones to remove.
  async function rotationWarnings(workspaceId: string): Promise<Warning[]> {
    const rows = await db
      .selectFrom('dkim_keys')
      .innerJoin('domains', 'domains.id', 'dkim_keys.domain_id')
      .select(['domains.domain', 'dkim_keys.state', 'dkim_keys.selector'])
      .where('domains.workspace_id', '=', workspaceId)
      .where('domains.deleted_at', 'is', null)
      .where('dkim_keys.removed_at', 'is', null)
      .where('dkim_keys.state', 'in', ['pending', 'retired'])
      .orderBy('domains.domain')
      .orderBy('dkim_keys.selector')
      .execute();
    const out: Warning[] = [];
    for (const domain of [...new Set(rows.map((r) => r.domain))]) {
      const of = (state: string) => rows.filter((r) => r.domain === domain && r.state === state).map((r) => r.selector);
      const publish = of('pending');
      const remove = of('retired');
      if (publish.length)
        out.push({
          kind: 'dkim_rotation',
          message: `${domain}: publish the new DKIM records (${publish.join(', ')}); signing switches to them once they are found`,
        });
      if (remove.length) out.push({ kind: 'dkim_rotation', message: `${domain}: remove the retired DKIM records (${remove.join(', ')})` });
    }
    return out;
  }

  return {
    async read(workspace: Workspace, env: Env, now: Date): Promise<Overview> {
      const scope = { workspaceId: workspace.id, livemode: env === 'live' };
      const [{ windows, daily }, queue, inbound, endpoints, q, domains] = await Promise.all([
        stats.outbound(scope, now),
        stats.queue(scope, now),
        stats.inbound(scope, now),
        db
          .selectFrom('webhook_endpoints')
          .select(['public_id', 'url', 'failing_since', 'enabled', 'disabled_reason'])
          .where('workspace_id', '=', workspace.id)
          .where('livemode', '=', flag(scope.livemode))
          .where('deleted_at', 'is', null)
          .where((eb) => eb.or([eb('failing_since', 'is not', null), eb('enabled', '=', flag(false))]))
          .orderBy('created_at')
          .execute(),
        quota(workspace, scope.livemode, now),
        domainWarnings(workspace.id).then(async (w) => [...w, ...(await rotationWarnings(workspace.id))]),
      ]);
      const bounce = bounceWarning(windows['24h'], windows['7d']);
      return {
        generatedAt: now.toISOString(),
        workspace: { id: workspace.id, slug: workspace.slug, name: workspace.name, plan: workspace.plan },
        env,
        windows,
        daily,
        queue,
        inbound,
        webhooks: {
          failing: endpoints.map((e) => ({
            id: e.public_id,
            url: e.url,
            failingSince: e.failing_since,
            disabled: Number(e.enabled) !== 1,
            disabledReason: e.disabled_reason,
          })),
        },
        quota: q,
        warnings: [...domains, ...(bounce ? [bounce] : [])],
      };
    },
  };
}
