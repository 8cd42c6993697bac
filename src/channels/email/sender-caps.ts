// The accept-time rules of email sending that depend on the workspace's plan (docs/email-delivery.md):
//
// Sender caps: the built-in caps of the interface (per plan, daily and monthly, counted per
// workspace at accept time, so an over-cap send is refused with 429 quota_exceeded before it is
// queued). Tiers: `domain` when `from` is on a verified domain of the workspace and the plan has a
// domain tier, else `shared` (Postern's own sender identity). The numbers are
// `plans.<plan>.senderCaps` (-1 = unlimited, 0 = none); `senderCaps.enabled` switches them off.
// They apply to live email in direct mode only: test mode never sends, and relay mode is the
// operator's own provider ("a connected own email provider bypasses them"). Counters are UTC day
// and month rows in `sender_counters`, incremented in one transaction that rolls back when either
// is over the cap.
//
// Custom sending domains require a paid plan (`plans.<plan>.customSendingDomain`): on a plan
// without them a `from` on the workspace's verified custom domain is refused with 403 plan_limit,
// rather than silently sent from the shared identity the caller did not ask for.
import type { OutboundMessage } from '../../channel.js';
import type { Deps } from '../../deps.js';
import { domainOf, isVerifiedDomain } from '../../domains/index.js';
import { AppError } from '../../lib/errors.js';
import { planLimits } from '../../workspaces/index.js';

type Check = (ctx: { message: OutboundMessage; plan: string }) => Promise<void>;

export function createSenderCapsCheck(deps: Pick<Deps, 'config' | 'db' | 'clock'>): Check {
  return async ({ message, plan }) => {
    const { config, db } = deps;
    if (!config.senderCaps.enabled || message.channel !== 'email' || !message.livemode || config.delivery.mode === 'relay') return;
    const caps = planLimits(config, plan)?.senderCaps;
    if (!caps) return;
    const onDomain =
      message.fromOverride !== null &&
      caps.domain.month !== 0 &&
      (await isVerifiedDomain(db, message.workspaceId, domainOf(message.fromOverride)));
    const tier = onDomain ? 'domain' : 'shared';
    const limits = caps[tier];
    const now = deps.clock.now().toISOString();
    const periods = [
      { period: `${tier}:d:${now.slice(0, 10)}`, limit: limits.day, what: 'daily' },
      { period: `${tier}:m:${now.slice(0, 7)}`, limit: limits.month, what: 'monthly' },
    ].filter((p) => p.limit >= 0);
    if (periods.length === 0) return;
    await db.transaction().execute(async (trx) => {
      for (const p of periods) {
        await trx
          .insertInto('sender_counters')
          .values({ workspace_id: message.workspaceId, period: p.period, count: 1 })
          .onConflict((oc) => oc.columns(['workspace_id', 'period']).doUpdateSet((eb) => ({ count: eb('sender_counters.count', '+', 1) })))
          .execute();
        const row = await trx
          .selectFrom('sender_counters')
          .select('count')
          .where('workspace_id', '=', message.workspaceId)
          .where('period', '=', p.period)
          .executeTakeFirstOrThrow();
        if (Number(row.count) > p.limit) {
          throw new AppError(
            'quota_exceeded',
            `the ${tier === 'domain' ? 'verified-domain' : 'shared'} sender ${p.what} cap of the ${plan} plan (${p.limit}) is reached`,
            { limit: p.limit },
          );
        }
      }
    });
  };
}

export function createCustomDomainPlanCheck(deps: Pick<Deps, 'config' | 'db'>): Check {
  return async ({ message, plan }) => {
    if (message.channel !== 'email' || message.fromOverride === null || planLimits(deps.config, plan)?.customSendingDomain !== false)
      return;
    const domain = domainOf(message.fromOverride);
    if (await isVerifiedDomain(deps.db, message.workspaceId, domain)) {
      throw new AppError(
        'plan_limit',
        `custom sending domains require a paid plan: ${domain} is verified, but the ${plan} plan sends from the shared sender only`,
      );
    }
  };
}
