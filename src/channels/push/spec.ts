// The push channel as the layers serving every channel see it (../spec.ts): live messages go through
// a workspace's connection to APNs or FCM; a recipient is a device token.
import { renderData, renderText } from '../../lib/mustache.js';
import { simulationWord } from '../simulation.js';
import { asIs, channelSpec } from '../spec.js';
import { apns } from './apns.js';
import { fcm } from './fcm.js';
import type { PushContent, PushOutput } from '../../contract/channels.js';

export const push = channelSpec<PushContent, PushOutput>({
  channel: 'push',
  recipientIssue: (to) => (to.trim() === '' || /\s/.test(to) ? 'must be a push device token' : null),
  envelope: false,
  render: (c, vars) => ({
    title: renderText(c.title, vars),
    body: renderText(c.body, vars),
    data: renderData(c.data, vars),
    badge: typeof c.badge === 'number' ? c.badge : null,
    sound: c.sound ? renderText(c.sound, vars) : null,
  }),
  verbatim: (c) => ({ title: c.title ?? '', body: c.body ?? '', data: c.data ?? {}, badge: c.badge ?? null, sound: c.sound ?? null }),
  // Tokens test-failed, test-suppressed, … test-sent.
  simulation: (recipient) => (recipient.startsWith('test-') ? simulationWord(recipient.slice(5)) : null),
  suppression: { key: asIs, reason: 'unregistered' },
  destination: () => null,
  live: { kind: 'connection', providers: [apns, fcm] },
});
