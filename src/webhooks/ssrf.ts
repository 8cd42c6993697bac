// The webhooks' SSRF policy: a webhook URL is chosen by a workspace, so the guard (lib/ssrf.ts)
// refuses private and loopback destinations unless `webhooks.allowPrivate` or `webhooks.allowList`
// lets them through.
import type { Config } from '../config.js';
import type { SsrfPolicy } from '../lib/ssrf.js';

export function webhookSsrfPolicy(webhooks: Config['webhooks']): SsrfPolicy {
  return { allowPrivate: webhooks.allowPrivate, allowList: webhooks.allowList, settings: 'webhooks.allowPrivate or webhooks.allowList' };
}
