// The channel registry: the one explicit list of what delivers each channel. Email goes out the
// way the config says (direct to MX or through a relay: channels/email); sms, push and web-push go
// through the provider connection a workspace chose, and these are the providers a connection may
// name. Test-mode messages of every channel go to the test channel (channels/test), which never
// contacts anything. Adding a provider is adding its file and one line here.
import type { Channel } from '../channel.js';
import type { Provider } from './provider.js';
import { apns } from './push/apns.js';
import { fcm } from './push/fcm.js';
import { httpGateway } from './sms/http-gateway.js';
import { twilio } from './sms/twilio.js';
import { vapid } from './web-push/vapid.js';

export const PROVIDERS: readonly Provider[] = [twilio, httpGateway, apns, fcm, vapid];

/** The channels whose live messages go through a workspace's provider connection. */
export const CONNECTION_CHANNELS: readonly Channel[] = ['sms', 'push', 'web-push'];

export function providerFor(channel: string, name: string): Provider | undefined {
  return PROVIDERS.find((p) => p.channel === channel && p.name === name);
}
