// The web-push channel as the layers serving every channel see it (../spec.ts): a recipient is a
// browser's push subscription (JSON: the push service's endpoint and the keys to encrypt for);
// live messages go through a workspace's VAPID connection.
import { renderData, renderText } from '../../lib/mustache.js';
import { simulationWord } from '../simulation.js';
import { channelSpec } from '../spec.js';
import { vapid } from './vapid.js';
import type { WebPushContent, WebPushOutput } from '../../contract/channels.js';

function subscriptionIssue(to: string): string | null {
  let sub: { endpoint?: unknown; keys?: { p256dh?: unknown; auth?: unknown } };
  try {
    sub = JSON.parse(to);
  } catch {
    return 'must be a JSON-encoded web push subscription';
  }
  if (!sub || typeof sub !== 'object') return 'must be a JSON-encoded web push subscription';
  try {
    if (typeof sub.endpoint !== 'string' || new URL(sub.endpoint).protocol !== 'https:')
      return 'subscription endpoint must be an https URL';
  } catch {
    return 'subscription endpoint must be an https URL';
  }
  if (typeof sub.keys?.p256dh !== 'string' || !sub.keys.p256dh || typeof sub.keys?.auth !== 'string' || !sub.keys.auth) {
    return 'subscription needs keys.p256dh and keys.auth';
  }
  return null;
}

/** The subscription's push service endpoint: its keys may rotate, the endpoint not. */
function endpointOf(recipient: string): string {
  try {
    const endpoint = (JSON.parse(recipient) as { endpoint?: unknown }).endpoint;
    return typeof endpoint === 'string' ? endpoint : recipient;
  } catch {
    return recipient;
  }
}

export const webPush = channelSpec<WebPushContent, WebPushOutput>({
  channel: 'web-push',
  recipientIssue: subscriptionIssue,
  envelope: false,
  render: (c, vars) => ({
    title: renderText(c.title, vars),
    body: renderText(c.body, vars),
    icon: c.icon ? renderText(c.icon, vars) : null,
    clickUrl: c.clickUrl ? renderText(c.clickUrl, vars) : null,
    data: renderData(c.data, vars),
    badge: c.badge ? renderText(c.badge, vars) : null,
  }),
  verbatim: (c) => ({
    title: c.title ?? '',
    body: c.body ?? '',
    icon: c.icon ?? null,
    clickUrl: c.clickUrl ?? null,
    data: c.data ?? {},
    badge: c.badge ?? null,
  }),
  // A subscription whose endpoint's last path segment is one of the words (https://push.example/failed).
  simulation(recipient) {
    try {
      const endpoint = new URL((JSON.parse(recipient) as { endpoint: string }).endpoint);
      return simulationWord(endpoint.pathname.split('/').filter(Boolean).pop() ?? '');
    } catch {
      return null;
    }
  },
  suppression: { key: endpointOf, reason: 'unregistered' },
  destination: () => null,
  live: { kind: 'connection', providers: [vapid] },
});
