// The transport registry: which ChannelTransport delivers a live message of each channel. Live
// transports are registered by the channel areas (email, sms, push, web-push); test-mode messages
// always go to the test transport, so a test key can never reach a real provider.
import type { Channel, ChannelTransport } from './channels/channel.js';
import { createTestTransport } from './channels/test.js';

export interface TransportRegistry {
  /** Registers (or replaces) the live transport of a channel. */
  register(channel: Channel, transport: ChannelTransport): void;
  /** The transport for a message: the test transport in test mode; null when no live one is registered. */
  forMessage(channel: Channel, livemode: boolean): ChannelTransport | null;
  closeAll(): Promise<void>;
}

export function createTransportRegistry(test: ChannelTransport = createTestTransport()): TransportRegistry {
  const live = new Map<Channel, ChannelTransport>();
  return {
    register: (channel, transport) => void live.set(channel, transport),
    forMessage: (channel, livemode) => (livemode ? (live.get(channel) ?? null) : test),
    async closeAll() {
      for (const t of new Set(live.values())) await t.close?.();
    },
  };
}
