// Web Push (RFC 8030) with VAPID (RFC 8292) and aes128gcm payload encryption (RFC 8291). The
// `web-push` package builds the encrypted request (headers and body); we send it ourselves with
// fetch, so the transport shares the timeout and the answer classification of the other providers
// and works against http:// gateways too. The recipient is the browser's PushSubscription as JSON.
// Answers: 201/202/200 → sent (the Location header is the providerMessageId); 404/410 → the
// subscription is gone: failed and suppressed; 429/5xx → deferred; other 4xx → failed.
import type * as WebPush from 'web-push';
import { lazyRequire } from '../../lib/lazy.js';
import type { ChannelTransport, DeliveryOutcome } from '../../channel.js';
import type { Issue } from '../../lib/errors.js';
import { isTemporary, networkReason, providerHttp, refusedReason, retryAfter } from '../provider-http.js';
import type { Provider, ResolvedConnection, TransportDeps } from '../provider.js';
import type { WebPushOutput } from '../../contract/channels.js';

// Loaded at the first web push (lib/lazy.ts).
const webpush = lazyRequire<typeof WebPush>('web-push');

export interface PushSubscriptionJson {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

/** The subscription in a recipient string, or null when it is not one. */
function parseSubscription(recipient: string): PushSubscriptionJson | null {
  let v: { endpoint?: unknown; keys?: { p256dh?: unknown; auth?: unknown } } | null;
  try {
    v = JSON.parse(recipient) as typeof v;
  } catch {
    return null;
  }
  const b64url = /^[A-Za-z0-9_-]+={0,2}$/;
  if (!v || typeof v.endpoint !== 'string' || !/^https?:\/\/[^\s]+$/.test(v.endpoint)) return null;
  if (typeof v.keys?.p256dh !== 'string' || typeof v.keys?.auth !== 'string' || !b64url.test(v.keys.p256dh) || !b64url.test(v.keys.auth))
    return null;
  return { endpoint: v.endpoint, keys: { p256dh: v.keys.p256dh, auth: v.keys.auth } };
}

/** The JSON the service worker receives in its push event. */
function webPushPayload(content: WebPushOutput): string {
  return JSON.stringify({
    title: content.title,
    body: content.body,
    icon: content.icon,
    badge: content.badge,
    clickUrl: content.clickUrl,
    data: content.data ?? {},
  });
}

export function createWebPushTransport(conn: ResolvedConnection, deps: TransportDeps): ChannelTransport {
  const vapidDetails = { subject: conn.settings.subject, publicKey: conn.settings.publicKey, privateKey: conn.credentials.privateKey };
  const ttl = Number(conn.settings.ttl ?? 86400);
  const urgency = (conn.settings.urgency ?? 'normal') as WebPush.Urgency;
  const base = { provider: 'web-push', providerConnectionId: conn.id };
  const http = providerHttp(deps, { ca: conn.settings.ca });

  return {
    name: 'web-push',
    async deliver({ message, content }): Promise<DeliveryOutcome> {
      const sub = parseSubscription(message.recipient);
      if (!sub)
        return { kind: 'suppressed', ...base, error: 'recipient is not a JSON web-push subscription {endpoint, keys: {p256dh, auth}}' };
      let details;
      try {
        details = webpush().generateRequestDetails(sub, webPushPayload(content as WebPushOutput), {
          vapidDetails,
          TTL: ttl,
          urgency,
          contentEncoding: 'aes128gcm',
        });
      } catch (err) {
        // Bad subscription keys (not a P-256 point, wrong auth length): it can never be delivered.
        return { kind: 'failed', ...base, error: `web-push: ${(err as Error).message.slice(0, 200)}`, suppress: true };
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(details.headers)) headers[k] = String(v);
      let res;
      try {
        res = await http.post(details.endpoint, { headers, body: details.body, timeoutMs: deps.timeoutMs });
      } catch (err) {
        // A subscription on a private address: no retry reaches it (the SSRF guard).
        const refused = refusedReason(err);
        if (refused) return { kind: 'failed', ...base, error: `web-push: ${refused}` };
        return { kind: 'deferred', ...base, error: `web-push: ${networkReason(err)}` };
      }
      if (res.status >= 200 && res.status < 300) return { kind: 'sent', ...base, providerMessageId: res.headers.get('location') };
      const error = `web-push: HTTP ${res.status}`;
      if (res.status === 404 || res.status === 410)
        return { kind: 'failed', ...base, error: `${error} (subscription gone)`, suppress: true };
      if (isTemporary(res.status)) return { kind: 'deferred', ...base, error, retryAt: retryAfter(res.headers, deps.clock) };
      return { kind: 'failed', ...base, error };
    },
    close: () => http.close(),
  };
}

export const vapid: Provider = {
  channel: 'web-push',
  name: 'vapid',
  describe: 'Web Push (RFC 8030) with VAPID (RFC 8292) and aes128gcm (RFC 8291)',
  settings: [
    { name: 'publicKey', required: true, describe: 'VAPID public key (base64url, as given to PushManager.subscribe)' },
    { name: 'privateKey', required: true, secret: true, describe: 'VAPID private key (base64url)' },
    { name: 'subject', required: true, describe: 'mailto: or https: contact for the push service' },
    { name: 'ttl', kind: 'int', default: '86400', describe: 'seconds the push service keeps an undelivered message' },
    { name: 'urgency', default: 'normal', describe: 'very-low, low, normal or high' },
    { name: 'ca', file: true, describe: 'extra trusted CA certificate (PEM) for a private push gateway' },
  ],
  check: (v) => {
    const issues: Issue[] = [];
    if (v.urgency && !['very-low', 'low', 'normal', 'high'].includes(v.urgency))
      issues.push({ path: 'urgency', message: 'urgency must be very-low, low, normal or high' });
    if (v.subject && !/^(mailto:|https:)/.test(v.subject))
      issues.push({ path: 'subject', message: 'subject must start with mailto: or https:' });
    return issues;
  },
  transport: createWebPushTransport,
};
