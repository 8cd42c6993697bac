// The sms channel as the layers serving every channel see it (../spec.ts): live messages go through
// a workspace's connection to Twilio or an HTTP gateway.
import { renderText } from '../../lib/mustache.js';
import type { Simulation } from '../simulation.js';
import { asIs, channelSpec } from '../spec.js';
import { httpGateway } from './http-gateway.js';
import { twilio } from './twilio.js';
import type { SmsContent, SmsOutput } from '../../contract/channels.js';

// A send's `to`: a plus, a non-zero country digit, at most 15 digits.
const E164 = /^\+[1-9]\d{1,14}$/;

// The test numbers that simulate outcomes (Twilio's magic-number range): +15005550001 … 0006.
const PHONES: Record<string, Simulation> = {
  '+15005550001': 'failed',
  '+15005550002': 'suppressed',
  '+15005550003': 'blocked',
  '+15005550004': 'deferred',
  '+15005550005': 'opted_out',
  '+15005550006': 'sent',
};

export const sms = channelSpec<SmsContent, SmsOutput>({
  channel: 'sms',
  recipientIssue: (to) => (E164.test(to) ? null : 'must be an E.164 phone number such as +14155550100'),
  envelope: false,
  render: (c, vars) => ({ body: renderText(c.body, vars) }),
  verbatim: (c) => ({ body: c.body ?? '' }),
  simulation: (recipient) => (Object.hasOwn(PHONES, recipient) ? PHONES[recipient] : null),
  suppression: { key: asIs, reason: 'unregistered' },
  destination: () => null,
  live: { kind: 'connection', providers: [twilio, httpGateway] },
});
