// The channel registry: the one explicit list of channels (one spec per channel folder, spec.ts
// says what a spec holds). Adding a channel is adding its folder, its line here and its words in
// the contract (src/contract/channels.ts); a test holds the list to the contract's CHANNELS. Email
// goes out the way the config says (channels/email); the others through the provider connection a
// workspace chose, and their specs name the providers a connection may use. Test-mode messages of
// every channel go to the test channel (channels/test), which never contacts anything.
import type { ChannelTransport } from '../channel.js';
import { email } from './email/spec.js';
import type { Provider } from './provider.js';
import { push } from './push/spec.js';
import type { Simulation } from './simulation.js';
import { sms } from './sms/spec.js';
import type { ChannelSpec } from './spec.js';
import { createTestTransport } from './test/transport.js';
import { webPush } from './web-push/spec.js';
import type { Channel } from '../contract/channels.js';

export const SPECS: readonly ChannelSpec[] = [email, sms, push, webPush];

const byChannel = new Map<string, ChannelSpec>(SPECS.map((s) => [s.channel, s]));

/** The spec of a channel (a Map lookup: the delivery path asks it per message). */
export function specOf(channel: Channel): ChannelSpec {
  const spec = byChannel.get(channel);
  if (!spec) throw new Error(`no channel spec for ${channel} (channels/registry.ts lists ${SPECS.map((s) => s.channel).join(', ')})`);
  return spec;
}

export const PROVIDERS: readonly Provider[] = SPECS.flatMap((s) => (s.live.kind === 'connection' ? s.live.providers : []));

/** The channels whose live messages go through a workspace's provider connection. */
export const CONNECTION_CHANNELS: readonly Channel[] = SPECS.filter((s) => s.live.kind === 'connection').map((s) => s.channel);

export function providerFor(channel: string, name: string): Provider | undefined {
  return PROVIDERS.find((p) => p.channel === channel && p.name === name);
}

/** The outcome a test-mode recipient asks for, or null for a plain delivery. */
export function simulationFor(channel: Channel, recipient: string): Simulation | null {
  return specOf(channel).simulation(recipient);
}

/** The transport every test-mode message goes to, whatever its channel. */
export const createTestChannel = (): ChannelTransport => createTestTransport(simulationFor);
