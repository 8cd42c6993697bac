// What a workspace's plan allows, read from the one `plans` tree of the config: the monthly message
// quota, how many templates it may hold, whether it may send from its own verified domain, the
// monthly inbound quota, and the built-in sender caps of the shared sender and of a verified custom
// domain. Every rule that depends on the plan asks here.
import type { Config } from '../config.js';
import type { Plan } from '../contract/vocabulary.js';

export interface Cap {
  /** -1: unlimited; 0: none. */
  day: number;
  month: number;
}

export interface PlanLimits {
  /** Live messages per month; 0: unlimited. */
  messagesPerMonth: number;
  /** Templates the workspace may hold; 0: unlimited. */
  templates: number;
  /** May send from the workspace's verified custom domain (a paid plan). */
  customSendingDomain: boolean;
  /** Received messages per month before `quota_exceeded`; 0: unlimited. */
  inboundPerMonth: number;
  /** Sender caps of direct email delivery: the shared sender, and a verified custom domain. */
  senderCaps: { shared: Cap; domain: Cap };
}

/** The limits of a plan; undefined for a plan the config does not name (the rules then apply none). */
export function planLimits(config: Config, plan: string): PlanLimits | undefined {
  return (config.plans as Record<string, PlanLimits | undefined>)[plan as Plan];
}
