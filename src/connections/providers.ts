// The providers a connection may name, as data: for each channel and provider, its settings, which
// of them are secret (encrypted at rest, never shown), which are required, and their defaults. The
// CLI derives its --flags from this table, the store validates against it, and the transports read
// the settings it describes. Every base URL is a setting, so a site can point a provider at a
// gateway it runs (or a test at a loopback fake).
import type { Channel } from '../templates/render.js';
import type { Issue } from '../lib/errors.js';

export interface SettingSpec {
  /** camelCase key in the stored settings; the CLI flag is its kebab-case form. */
  name: string;
  secret?: boolean;
  required?: boolean;
  default?: string;
  /** May be given as --<flag>-file PATH (PEM keys and certificates). */
  file?: boolean;
  kind?: 'url' | 'int' | 'e164-or-sender';
  describe: string;
}

export interface ProviderSpec {
  channel: Channel;
  provider: string;
  describe: string;
  settings: SettingSpec[];
  /** Rules across settings. */
  check?(values: Record<string, string>): Issue[];
}

export const PROVIDERS: ProviderSpec[] = [
  {
    channel: 'sms',
    provider: 'twilio',
    describe: 'Twilio Messages API (or any gateway that speaks it)',
    settings: [
      { name: 'accountSid', required: true, describe: 'Account SID (AC…)' },
      { name: 'authToken', required: true, secret: true, describe: 'auth token; also validates status callbacks' },
      { name: 'from', kind: 'e164-or-sender', describe: 'sender: E.164 number, short code or alphanumeric sender id' },
      { name: 'messagingServiceSid', describe: 'Messaging Service SID (MG…), instead of from' },
      { name: 'baseUrl', kind: 'url', default: 'https://api.twilio.com', describe: 'API base URL' },
    ],
    check: (v) => (v.from || v.messagingServiceSid ? [] : [{ path: 'from', message: 'twilio needs from or messagingServiceSid' }]),
  },
  {
    channel: 'sms',
    provider: 'http',
    describe: 'generic HTTP gateway: JSON POST signed with HMAC-SHA256',
    settings: [
      { name: 'url', kind: 'url', required: true, describe: 'URL the JSON request is POSTed to' },
      { name: 'secret', required: true, secret: true, describe: 'HMAC-SHA256 key for X-Postern-Signature' },
      { name: 'from', kind: 'e164-or-sender', describe: 'sender passed to the gateway' },
    ],
  },
  {
    channel: 'push',
    provider: 'apns',
    describe: 'Apple Push Notification service, HTTP/2 with token (.p8) auth',
    settings: [
      { name: 'teamId', required: true, describe: 'Apple developer team id (JWT iss)' },
      { name: 'keyId', required: true, describe: 'id of the .p8 signing key (JWT kid)' },
      { name: 'key', required: true, secret: true, file: true, describe: 'the .p8 private key (PEM)' },
      { name: 'topic', required: true, describe: 'apns-topic: the app bundle id' },
      { name: 'pushType', default: 'alert', describe: 'apns-push-type when the message has a title or body' },
      {
        name: 'baseUrl',
        kind: 'url',
        default: 'https://api.push.apple.com',
        describe: 'https://api.sandbox.push.apple.com for development',
      },
      { name: 'ca', file: true, describe: 'extra trusted CA certificate (PEM) for a private gateway' },
    ],
    check: (v) =>
      v.baseUrl && !v.baseUrl.startsWith('https:') && !v.baseUrl.startsWith('http:')
        ? [{ path: 'baseUrl', message: 'must be an http(s) URL' }]
        : [],
  },
  {
    channel: 'push',
    provider: 'fcm',
    describe: 'Firebase Cloud Messaging HTTP v1 with a service account',
    settings: [
      { name: 'projectId', required: true, describe: 'Firebase project id' },
      { name: 'clientEmail', required: true, describe: 'service account e-mail (JWT iss)' },
      { name: 'privateKey', required: true, secret: true, file: true, describe: 'service account private key (PEM)' },
      { name: 'privateKeyId', describe: 'service account key id (JWT kid)' },
      { name: 'tokenUrl', kind: 'url', default: 'https://oauth2.googleapis.com/token', describe: 'OAuth token endpoint' },
      { name: 'baseUrl', kind: 'url', default: 'https://fcm.googleapis.com', describe: 'FCM API base URL' },
    ],
  },
  {
    channel: 'web-push',
    provider: 'vapid',
    describe: 'Web Push (RFC 8030) with VAPID (RFC 8292) and aes128gcm (RFC 8291)',
    settings: [
      { name: 'publicKey', required: true, describe: 'VAPID public key (base64url, as given to PushManager.subscribe)' },
      { name: 'privateKey', required: true, secret: true, describe: 'VAPID private key (base64url)' },
      { name: 'subject', required: true, describe: 'mailto: or https: contact for the push service' },
      { name: 'ttl', kind: 'int', default: '86400', describe: 'seconds the push service keeps an undelivered message' },
      { name: 'urgency', default: 'normal', describe: 'very-low, low, normal or high' },
    ],
    check: (v) => {
      const issues: Issue[] = [];
      if (v.urgency && !['very-low', 'low', 'normal', 'high'].includes(v.urgency))
        issues.push({ path: 'urgency', message: 'urgency must be very-low, low, normal or high' });
      if (v.subject && !/^(mailto:|https:)/.test(v.subject))
        issues.push({ path: 'subject', message: 'subject must start with mailto: or https:' });
      return issues;
    },
  },
];

export function providerSpec(channel: string, provider: string): ProviderSpec | undefined {
  return PROVIDERS.find((p) => p.channel === channel && p.provider === provider);
}

export const kebab = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();

/** E.164: a plus, a non-zero country digit, at most 15 digits in all. */
export function isE164(value: string): boolean {
  return /^\+[1-9]\d{6,14}$/.test(value);
}

/** Applies defaults and checks values against the spec; returns the issues found. */
export function checkSettings(spec: ProviderSpec, input: Record<string, string>): { values: Record<string, string>; issues: Issue[] } {
  const issues: Issue[] = [];
  const values: Record<string, string> = {};
  const known = new Set(spec.settings.map((s) => s.name));
  for (const k of Object.keys(input)) {
    if (!known.has(k))
      issues.push({
        path: k,
        message: `${spec.provider} has no setting ${kebab(k)}; settings: ${spec.settings.map((s) => kebab(s.name)).join(', ')}`,
      });
  }
  for (const s of spec.settings) {
    const v = input[s.name] ?? s.default;
    if (v === undefined || v === '') {
      if (s.required) issues.push({ path: s.name, message: `${kebab(s.name)} is required for ${spec.provider}` });
      continue;
    }
    if (s.kind === 'url' && !/^https?:\/\/[^\s/]+/.test(v))
      issues.push({ path: s.name, message: `${kebab(s.name)} must be an http(s) URL` });
    if (s.kind === 'int' && !/^\d{1,9}$/.test(v)) issues.push({ path: s.name, message: `${kebab(s.name)} must be a whole number` });
    if (s.kind === 'e164-or-sender' && !isE164(v) && !/^\d{4,8}$/.test(v) && !/^(?=.*[A-Za-z])[A-Za-z0-9 ]{1,11}$/.test(v)) {
      issues.push({
        path: s.name,
        message: `${kebab(s.name)} must be an E.164 number, a short code or an alphanumeric sender id (at most 11 characters, at least one letter)`,
      });
    }
    values[s.name] = v;
  }
  if (issues.length === 0 && spec.check) issues.push(...spec.check(values));
  return { values, issues };
}
