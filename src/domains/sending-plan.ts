// Custom sending domains require a paid plan (spec, Limits: Free has "no custom sending domain").
// On the free plan a `from` on the workspace's verified custom domain is refused at accept time
// with 403 plan_limit, rather than silently sent from the shared identity the caller did not ask for.
import type { Db } from '../db/database.js';
import { AppError } from '../lib/errors.js';
import type { OutboundMessage } from '../outbound/channels/channel.js';
import { isVerifiedDomain } from '../outbound/channels/email/dkim.js';
import { domainOf } from '../outbound/channels/email/recipients.js';

const PLANS_WITHOUT_CUSTOM_SENDING = new Set(['free']);

export function createCustomDomainPlanCheck(db: Db) {
  return async ({ message, plan }: { message: OutboundMessage; plan: string }): Promise<void> => {
    if (message.channel !== 'email' || message.fromOverride === null || !PLANS_WITHOUT_CUSTOM_SENDING.has(plan)) return;
    const domain = domainOf(message.fromOverride);
    if (await isVerifiedDomain(db, message.workspaceId, domain)) {
      throw new AppError(
        'plan_limit',
        `custom sending domains require a paid plan: ${domain} is verified, but the ${plan} plan sends from the shared sender only`,
      );
    }
  };
}
